// Every codec of quantcodec, with the exact operations, in the exact order, of
// quantcodec/_kernels.pxd, so that decoded doubles equal Python's bit for bit. (Only PowerCurve
// with a pow other than 1 and 2 calls Math.Pow, which is the C library's pow and may differ by an
// ulp between C libraries at exact rounding ties, as it may between Python builds.)
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace QuantCodec
{
    public enum CodecKind
    {
        Bounded = 1, Fixed = 2, Angle = 3, PowerCurve = 4, Half = 5, UInt = 6, Int = 7, Bool = 8,
        Enum = 9, Quat = 10, UnitVector = 11, Vector = 12, Grid = 13, NearlyZero = 14, IntRange = 15
    }

    /// <summary>One codec: its parameters and its rules. Immutable. Scalars quantize one double to one
    /// code; Quat takes 4 doubles, UnitVector 3; Vector and NearlyZero are composites of scalars.</summary>
    public sealed class Codec
    {
        public static readonly double Sqrt1_2 = FloatBits.FromBits(0x3FE6A09E667F3BCDUL);   // C's 0.70710678118654752440
        public static readonly double TwoPi = FloatBits.FromBits(0x401921FB54442D18UL);     // 2.0 * math.pi

        public readonly CodecKind Kind;
        public readonly int Bits;               // wire bits (NearlyZero: the most; Quat 2 + 3b; UnitVector 2b)
        // the parameters, as the spec has them
        public readonly double Min, Max;        // Bounded
        public readonly string Mode;            // Bounded, Quat: "endpoints" / "bins" / "midpoint"
        public readonly double StepSize, Offset;// Fixed
        public readonly bool Signed;            // Fixed, Angle
        public readonly string Unit;            // Angle
        public readonly double PowMax, Pow;     // PowerCurve
        public readonly double CellSize;        // Grid
        public readonly int CellBits, OffsetBits; // Grid
        public readonly string[] Labels;        // Enum (null for a count)
        public readonly ulong Count;            // Enum
        public readonly long Lo, Hi;            // IntRange
        public readonly int ComponentBits;      // Quat, UnitVector
        public readonly Codec[] Components;     // Vector
        public readonly Codec Inner;            // NearlyZero
        public readonly double Threshold;       // NearlyZero
        // the kernel descriptor (qdesc)
        internal readonly int mode;             // Bounded, Quat: M_ENDPOINTS, M_BINS or M_MIDPOINT
        // The Bounded modes: endpoints (L = 2**b - 1), bins (L = 2**b), midpoint (the endpoints rule
        // with L = 2**b - 2: the middle code L / 2 decodes to exactly the centre; 2**b - 1 is no code).
        internal const int M_ENDPOINTS = 0, M_BINS = 1, M_MIDPOINT = 2;
        static int ModeOf(string m) { return m == "bins" ? M_BINS : m == "midpoint" ? M_MIDPOINT : M_ENDPOINTS; }
        static double ModeL(int m, int b) { return m == M_BINS ? P2(b) : m == M_MIDPOINT ? P2(b) - 2.0 : P2(b) - 1.0; }
        internal readonly double lo, hi, R, L;
        internal readonly ulong maxcode;
        internal readonly long smin, smax;
        internal readonly double fmin, fmax;
        internal readonly int cbits;

        Codec(CodecKind kind, int bits)
        {
            Kind = kind;
            Bits = bits;
            maxcode = bits >= 64 ? ulong.MaxValue : (1UL << bits) - 1;
        }

        Codec(CodecKind kind, int bits, ulong maxc) : this(kind, bits) { maxcode = maxc; }

        static double P2(int b) { return FloatBits.FromBits((ulong)(1023 + b) << 52); }  // 2.0 ** b, exactly

        static void CheckBits(string owner, string name, int v, int lo, int hi)
        {
            if (v < lo || v > hi) throw new SchemaException(owner + ": " + name + " must be in " + lo + ".." + hi + ", got " + v);
        }

        static double Finite(string owner, string name, double v)
        {
            if (double.IsNaN(v) || double.IsInfinity(v))
                throw new SchemaException(owner + ": " + name + " must be finite, got " + Repr(v));
            return v + 0.0;     // -0.0 -> 0.0, as Python's _float_param
        }

        internal static string Repr(double v) { return FloatBits.ToHex(v); }

        // ---------------------------------------------------------------------------- constructors

        public static Codec Bounded(double min, double max, int bits, string mode = "endpoints")
        {
            min = Finite("Bounded", "min", min);
            max = Finite("Bounded", "max", max);
            CheckBits("Bounded", "bits", bits, 1, 32);
            if (!(min < max)) throw new SchemaException("Bounded: min must be less than max, got min=" + Repr(min) + ", max=" + Repr(max));
            double r = max - min;
            if (double.IsInfinity(r)) throw new SchemaException("Bounded: the range max - min overflows, got min=" + Repr(min) + ", max=" + Repr(max));
            if (mode != "endpoints" && mode != "bins" && mode != "midpoint") throw new SchemaException("Bounded: mode must be 'endpoints', 'bins' or 'midpoint', got '" + mode + "'");
            if (mode == "midpoint" && bits < 2) throw new SchemaException("Bounded: mode='midpoint' needs bits >= 2 (2**bits - 2 intervals), got bits=" + bits);
            if (double.IsInfinity(r * P2(bits))) throw new SchemaException("Bounded: the range max - min times 2**bits overflows, got min=" + Repr(min) + ", max=" + Repr(max) + ", bits=" + bits);
            return new Codec(CodecKind.Bounded, bits, min, max, mode);
        }

        Codec(CodecKind k, int bits, double min, double max, string mode) : this(k, bits)
        {
            Min = min; Max = max; Mode = mode;
            this.mode = ModeOf(mode);
            lo = min; hi = max; R = max - min;
            L = ModeL(this.mode, bits);
            if (this.mode == M_MIDPOINT) maxcode = (1UL << bits) - 2;     // 2**bits - 1 is no code
        }

        public static Codec Fixed(double step, int bits, bool signed = true, double offset = 0.0)
        {
            step = Finite("Fixed", "step", step);
            if (step <= 0) throw new SchemaException("Fixed: step must be positive, got " + Repr(step));
            CheckBits("Fixed", "bits", bits, 1, 64);
            offset = Finite("Fixed", "offset", offset);
            double e0, e1;
            if (signed) { e0 = -P2(bits - 1); e1 = FloatBits.U64ToDouble((1UL << (bits - 1)) - 1); }
            else { e0 = 0.0; e1 = FloatBits.U64ToDouble(bits >= 64 ? ulong.MaxValue : (1UL << bits) - 1); }
            if (double.IsInfinity(offset + e0 * step) || double.IsInfinity(offset + e1 * step))
                throw new SchemaException("Fixed: an end code would decode to a non-finite value (offset + code * step overflows), got step=" + Repr(step) + ", bits=" + bits + ", offset=" + Repr(offset));
            return new Codec(bits, step, signed, offset);
        }

        Codec(int bits, double step, bool signed, double offset) : this(CodecKind.Fixed, bits)
        {
            StepSize = step; Signed = signed; Offset = offset;
            lo = offset; hi = step;
            if (signed)
            {
                smin = bits >= 64 ? long.MinValue : -(1L << (bits - 1));
                smax = bits >= 64 ? long.MaxValue : (1L << (bits - 1)) - 1;
                fmin = -P2(bits - 1); fmax = P2(bits - 1);
            }
            else
            {
                smin = 0; smax = bits >= 64 ? long.MaxValue : (long)((1UL << bits) - 1);
                fmin = 0.0; fmax = P2(bits);
            }
        }

        public static Codec Angle(int bits, bool signed = false, string unit = "rad")
        {
            CheckBits("Angle", "bits", bits, 1, 32);
            if (unit != "rad" && unit != "deg") throw new SchemaException("Angle: unit must be 'rad' or 'deg', got '" + unit + "'");
            return new Codec(bits, signed, unit);
        }

        Codec(int bits, bool signed, string unit) : this(CodecKind.Angle, bits)
        {
            Signed = signed; Unit = unit;
            lo = unit == "rad" ? TwoPi : 360.0;
            hi = lo / 2.0;
            L = P2(bits);
        }

        public static Codec PowerCurve(double max, double pow, int bits)
        {
            max = Finite("PowerCurve", "max", max);
            pow = Finite("PowerCurve", "pow", pow);
            CheckBits("PowerCurve", "bits", bits, 2, 32);
            if (max <= 0) throw new SchemaException("PowerCurve: max must be positive, got " + Repr(max));
            if (pow < 1) throw new SchemaException("PowerCurve: pow must be at least 1, got " + Repr(pow));
            return new Codec(max, pow, bits);
        }

        Codec(double max, double pow, int bits) : this(CodecKind.PowerCurve, bits)
        {
            PowMax = max; Pow = pow;
            lo = max; hi = pow; R = 1.0 / pow; L = P2(bits - 1) - 1.0;
        }

        public static Codec Half() { return new Codec(CodecKind.Half, 16); }

        public static Codec Grid(double cellSize, int cellBits, int offsetBits)
        {
            cellSize = Finite("Grid", "cell_size", cellSize);
            if (cellSize <= 0) throw new SchemaException("Grid: cell_size must be positive, got " + Repr(cellSize));
            CheckBits("Grid", "cell_bits", cellBits, 1, 63);
            CheckBits("Grid", "offset_bits", offsetBits, 1, 63);
            if (cellBits + offsetBits > 64) throw new SchemaException("Grid: cell_bits + offset_bits must be at most 64, got " + cellBits + " + " + offsetBits + " = " + (cellBits + offsetBits));
            double ob = P2(offsetBits);
            double lowEnd = (-P2(cellBits - 1) + (0.0 + 0.5) / ob) * cellSize;
            double highEnd = (FloatBits.U64ToDouble((1UL << (cellBits - 1)) - 1) + (FloatBits.U64ToDouble((1UL << offsetBits) - 1) + 0.5) / ob) * cellSize;
            if (double.IsInfinity(lowEnd) || double.IsInfinity(highEnd))
                throw new SchemaException("Grid: cell_size * 2**(cell_bits - 1) overflows, got cell_size=" + Repr(cellSize) + ", cell_bits=" + cellBits + ", offset_bits=" + offsetBits);
            return new Codec(cellSize, cellBits, offsetBits);
        }

        Codec(double cs, int cb, int ob) : this(CodecKind.Grid, cb + ob)
        {
            CellSize = cs; CellBits = cb; OffsetBits = ob;
            cbits = ob; lo = cs; L = P2(ob);
            smin = -(1L << (cb - 1)); smax = (1L << (cb - 1)) - 1;
            fmin = -P2(cb - 1); fmax = P2(cb - 1);
        }

        public static Codec UInt(int bits) { CheckBits("UInt", "bits", bits, 1, 64); return new Codec(CodecKind.UInt, bits); }

        public static Codec Int(int bits)
        {
            CheckBits("Int", "bits", bits, 1, 64);
            return new Codec(bits);
        }

        Codec(int bits) : this(CodecKind.Int, bits)
        {
            smin = bits >= 64 ? long.MinValue : -(1L << (bits - 1));
            smax = bits >= 64 ? long.MaxValue : (1L << (bits - 1)) - 1;
        }

        /// <summary>An exact integer in [lo, hi]: (hi - lo).bit_length() bits, code = value - lo.</summary>
        public static Codec IntRange(long lo, long hi)
        {
            if (lo >= hi) throw new SchemaException("IntRange: lo must be less than hi, got lo=" + lo + ", hi=" + hi);
            ulong span = unchecked((ulong)hi - (ulong)lo);
            if (span >= 1UL << 63) throw new SchemaException("IntRange: hi - lo must be below 2**63, got " + span + " (lo=" + lo + ", hi=" + hi + ")");
            return new Codec(lo, hi, span);
        }

        Codec(long lo, long hi, ulong span) : this(CodecKind.IntRange, BitLen(span), span)
        {
            Lo = lo; Hi = hi; smin = lo; smax = hi;
        }

        /// <summary>IntRange: the value of a (valid) code, lo + code.</summary>
        public long DequantizeLong(ulong c)
        {
            if (Kind == CodecKind.IntRange) return unchecked((long)((ulong)smin + c));
            if (IsSigned) return unchecked((long)c);
            return unchecked((long)c);
        }

        public static Codec Bool() { return new Codec(CodecKind.Bool, 1); }

        public static Codec Enum(ulong count)
        {
            if (count < 1 || count > (1UL << 32)) throw new SchemaException("Enum: count must be in 1..4294967296, got " + count);
            return new Codec(null, count);
        }

        public static Codec Enum(string[] labels)
        {
            if (labels == null || labels.Length == 0) throw new SchemaException("Enum: labels must not be empty");
            var seen = new HashSet<string>(StringComparer.Ordinal);
            foreach (var l in labels)
            {
                if (l == null) throw new SchemaException("Enum: labels must be strings");
                if (!seen.Add(l)) throw new SchemaException("Enum: duplicate label '" + l + "'");
            }
            return new Codec((string[])labels.Clone(), (ulong)labels.Length);
        }

        Codec(string[] labels, ulong n) : this(CodecKind.Enum, BitLen(n - 1), n - 1)
        {
            Labels = labels; Count = n;
        }

        public static Codec Quat(int bits = 9, string mode = "endpoints")
        {
            CheckBits("Quat", "bits", bits, 2, 20);
            if (mode != "endpoints" && mode != "bins" && mode != "midpoint") throw new SchemaException("Quat: mode must be 'endpoints', 'bins' or 'midpoint', got '" + mode + "'");
            return new Codec(bits, mode);
        }

        Codec(int b, string mode) : this(CodecKind.Quat, 2 + 3 * b)
        {
            ComponentBits = b; Mode = mode; cbits = b;
            this.mode = ModeOf(mode);
            lo = -Sqrt1_2; hi = Sqrt1_2; R = Sqrt1_2 - (-Sqrt1_2);
            L = ModeL(this.mode, b);
        }

        public static Codec UnitVector(int bits)
        {
            CheckBits("UnitVector", "bits", bits, 2, 32);
            return new Codec(CodecKind.UnitVector, bits, true);
        }

        Codec(CodecKind k, int b, bool uvec) : this(k, 2 * b)
        {
            ComponentBits = b; cbits = b; mode = M_ENDPOINTS;
            lo = -1.0; hi = 1.0; R = 2.0; L = P2(b) - 1.0;
        }

        public static Codec Vector(params Codec[] codecs)
        {
            if (codecs == null || codecs.Length == 0) throw new SchemaException("Vector: needs at least one component codec");
            int bits = 0;
            bool signed = false, u64 = false;
            for (int i = 0; i < codecs.Length; i++)
            {
                if (codecs[i] == null || !codecs[i].IsScalar) throw new SchemaException("Vector: component " + i + " must be a scalar codec, got a " + (codecs[i] == null ? "null" : codecs[i].Kind.ToString()) + " spec");
                bits += codecs[i].Bits;
                if (codecs[i].IsSigned) signed = true;
                if (!codecs[i].IsSigned && codecs[i].Bits == 64 && (codecs[i].Kind == CodecKind.UInt || codecs[i].Kind == CodecKind.Fixed || codecs[i].Kind == CodecKind.Grid)) u64 = true;
            }
            if (signed && u64) throw new SchemaException("Vector: a 64-bit unsigned component cannot share one code array with signed components; use separate fields");
            return new Codec((Codec[])codecs.Clone(), bits);
        }

        Codec(Codec[] comps, int bits) : this(CodecKind.Vector, bits) { Components = comps; }

        public static Codec NearlyZero(Codec inner, double threshold)
        {
            if (inner == null || !(inner.IsScalar || inner.Kind == CodecKind.Vector))
                throw new SchemaException("NearlyZero: inner must be a scalar codec or a Vector, got a " + (inner == null ? "null" : inner.Kind.ToString()) + " spec");
            threshold = Finite("NearlyZero", "threshold", threshold);
            if (threshold < 0) throw new SchemaException("NearlyZero: threshold must be non-negative, got " + Repr(threshold));
            return new Codec(inner, threshold);
        }

        Codec(Codec inner, double threshold) : this(CodecKind.NearlyZero, 1 + inner.Bits) { Inner = inner; Threshold = threshold; }

        internal static int BitLen(ulong x) { int n = 0; while (x != 0) { n++; x >>= 1; } return n; }

        // ---------------------------------------------------------------------------- properties

        public bool IsScalar
        {
            get { return Kind != CodecKind.Quat && Kind != CodecKind.UnitVector && Kind != CodecKind.Vector && Kind != CodecKind.NearlyZero; }
        }

        /// <summary>Codes carried as sign-extended two's complement (Int, Fixed with signed=true).</summary>
        public bool IsSigned { get { return Kind == CodecKind.Int || (Kind == CodecKind.Fixed && Signed); } }

        public bool IsExact { get { return Kind == CodecKind.UInt || Kind == CodecKind.Int || Kind == CodecKind.Bool || Kind == CodecKind.Enum || Kind == CodecKind.IntRange; } }

        /// <summary>c.step of Python: the coarsest distance between neighbouring decoded values
        /// (Vector: the largest component step is not defined; use Components[i].Step; NearlyZero: the inner's).</summary>
        public double Step
        {
            get
            {
                switch (Kind)
                {
                    case CodecKind.Bounded: return R / L;
                    case CodecKind.Fixed: return StepSize;
                    case CodecKind.Angle: return lo / L;
                    case CodecKind.PowerCurve: return PowMax * (1.0 - Math.Pow((L - 1.0) / L, Pow));
                    case CodecKind.Half: return 32.0;
                    case CodecKind.Grid: return CellSize / L;
                    case CodecKind.Quat: return R / L;
                    case CodecKind.UnitVector: return 2.0 / L;
                    case CodecKind.NearlyZero: return Inner.Kind == CodecKind.Vector ? double.NaN : Inner.Step;
                    case CodecKind.Vector: return double.NaN;
                    default: return 1.0;
                }
            }
        }

        // ---------------------------------------------------------------------------- scalar rules

        static double BoundedQt(double t, double L, int mode)
        {
            if (mode != M_BINS)
            {
                t = t > 0.0 ? t : 0.0;
                t = t < 1.0 ? t : 1.0;
                return t * L + 0.5;
            }
            t = t * L;
            t = t > 0.0 ? t : 0.0;
            return t < L ? t : L - 1.0;
        }

        static double BoundedDqd(double cd, double lo, double hi, double R, double L, int mode)
        {
            if (mode != M_BINS)
            {
                double v = lo + (cd * R) / L;
                if (mode == M_MIDPOINT && cd + cd == L) v = (lo + hi) * 0.5;
                v = cd == L ? hi : v;
                return cd == 0.0 ? lo : v;
            }
            return lo + ((cd + 0.5) * R) / L;
        }

        static double RoundHalfAway(double v)
        {
            double t = Math.Truncate(v);
            double f = v - t;
            if (f >= 0.5) return t + 1.0;
            if (f <= -0.5) return t - 1.0;
            return t;
        }

        /// <summary>The code of one value (scalar codecs). Out-of-range floats clamp, NaN gives code 0
        /// (Half keeps it); exact codecs take integral values in range, else RangeException.
        /// Signed codes come back as the two's complement carrier (cast to long).</summary>
        public ulong Quantize(double x)
        {
            switch (Kind)
            {
                case CodecKind.Bounded:
                    return (ulong)BoundedQt((x - lo) / R, L, mode);
                case CodecKind.Fixed:
                    {
                        double v = (x - lo) / hi;
                        if (double.IsNaN(v)) return 0;
                        double r = RoundHalfAway(v);
                        if (r < fmin) return unchecked((ulong)smin);
                        if (r >= fmax) return Signed ? unchecked((ulong)smax) : maxcode;
                        if (Signed) return unchecked((ulong)(long)r);
                        return FloatBits.DoubleToU64(r);
                    }
                case CodecKind.Angle:
                    {
                        if (double.IsNaN(x) || double.IsInfinity(x)) return 0;
                        double w = Math.Abs(x) < lo ? x : x % lo;
                        if (w < 0.0) w = w + lo;
                        return ((ulong)(w / lo * L + 0.5)) & maxcode;
                    }
                case CodecKind.PowerCurve:
                    {
                        double a = Math.Abs(x);
                        if (double.IsNaN(a)) return 0;
                        if (a > lo) a = lo;
                        ulong m = (ulong)(PowerRoot(a / lo, hi, R) * L + 0.5);
                        if (m == 0) return 0;
                        if (x < 0.0) return (1UL << (Bits - 1)) | m;
                        return m;
                    }
                case CodecKind.Half: return HalfQ(x);
                case CodecKind.Grid:
                    {
                        double u = x / lo;
                        if (double.IsNaN(u)) return 0;
                        ulong cmask = maxcode >> cbits;
                        if (u < fmin) return (unchecked((ulong)smin) & cmask) << cbits;
                        double cell = Math.Floor(u);
                        if (cell >= fmax) return ((unchecked((ulong)smax) & cmask) << cbits) | ((1UL << cbits) - 1);
                        double t = u - cell;
                        double v = t * L;
                        ulong off = v >= L ? (1UL << cbits) - 1 : (ulong)v;
                        return ((unchecked((ulong)(long)cell) & cmask) << cbits) | off;
                    }
                case CodecKind.UInt:
                case CodecKind.Bool:
                case CodecKind.Enum:
                    {
                        if (!(x >= 0) || Math.Floor(x) != x || x >= 18446744073709551616.0) throw new RangeException(Describe() + ": value " + x.ToString("R", CultureInfo.InvariantCulture) + " is not a code");
                        ulong c = FloatBits.DoubleToU64(x);
                        if (!Valid(c)) throw new RangeException(Describe() + ": value " + c + " outside 0.." + maxcode);
                        return c;
                    }
                case CodecKind.IntRange:
                    {
                        if (double.IsNaN(x) || Math.Floor(x) != x || x < -9223372036854775808.0 || x >= 9223372036854775808.0) throw new RangeException(Describe() + ": " + x.ToString("R", CultureInfo.InvariantCulture) + " is not an integer");
                        return QuantizeInt((long)x);
                    }
                case CodecKind.Int:
                    {
                        if (double.IsNaN(x) || Math.Floor(x) != x || x < -9223372036854775808.0 || x >= 9223372036854775808.0) throw new RangeException(Describe() + ": value " + x.ToString("R", CultureInfo.InvariantCulture) + " is not a code");
                        long s = (long)x;
                        if (s < smin || s > smax) throw new RangeException(Describe() + ": value " + s + " outside " + smin + ".." + smax);
                        return unchecked((ulong)s);
                    }
                default:
                    throw new InvalidOperationException(Kind + " is not a scalar codec");
            }
        }

        /// <summary>An exact integer code for UInt/Int/Bool/Enum (RangeException unless valid).</summary>
        public ulong QuantizeInt(long v)
        {
            ulong c = unchecked((ulong)v);
            if (Kind == CodecKind.IntRange)
            {
                if (v < smin || v > smax) throw new RangeException(Describe() + ": value " + v + " outside " + smin + ".." + smax);
                return unchecked(c - (ulong)smin);
            }
            if (Kind == CodecKind.Int) { if (v < smin || v > smax) throw new RangeException(Describe() + ": value " + v + " outside " + smin + ".." + smax); return c; }
            if (v < 0 || !Valid(c)) throw new RangeException(Describe() + ": value " + v + " outside 0.." + maxcode);
            return c;
        }

        /// <summary>An exact unsigned code for UInt/Bool/Enum (RangeException unless valid).</summary>
        public ulong QuantizeUInt(ulong v)
        {
            if (Kind == CodecKind.IntRange)
            {
                if (v > (ulong)long.MaxValue) throw new RangeException(Describe() + ": value " + v + " outside " + smin + ".." + smax);
                return QuantizeInt((long)v);
            }
            if (Kind == CodecKind.Int || !IsExact || !Valid(v)) throw new RangeException(Describe() + ": value " + v + " outside 0.." + maxcode);
            return v;
        }

        static double PowerRoot(double t, double p, double invp)
        {
            if (p == 1.0) return t;
            if (p == 2.0) return Math.Sqrt(t);
            return Math.Pow(t, invp);
        }

        static double PowerRaise(double r, double p)
        {
            if (p == 1.0) return r;
            if (p == 2.0) return r * r;
            return Math.Pow(r, p);
        }

        /// <summary>The value of one code (scalar codecs; exact codecs give the code as a double).
        /// The code is not checked: call Valid first for untrusted codes (decoders do).</summary>
        public double Dequantize(ulong c)
        {
            switch (Kind)
            {
                case CodecKind.Bounded: return BoundedDqd(FloatBits.U64ToDouble(c), lo, hi, R, L, mode);
                case CodecKind.Fixed:
                    if (Signed) return lo + ((double)unchecked((long)c)) * hi;
                    return lo + FloatBits.U64ToDouble(c) * hi;
                case CodecKind.Angle:
                    {
                        long sc = unchecked((long)c);
                        if (Signed && c > (maxcode >> 1)) sc = sc - unchecked((long)maxcode) - 1;
                        return ((double)sc * lo) / L;
                    }
                case CodecKind.PowerCurve:
                    {
                        ulong m = c & (maxcode >> 1);
                        if (m == 0) return 0.0;
                        double v = lo * PowerRaise(FloatBits.U64ToDouble(m) / L, hi);
                        if ((c >> (Bits - 1)) != 0) return -v;
                        return v;
                    }
                case CodecKind.Half: return HalfDq(c);
                case CodecKind.Grid:
                    {
                        int up = 64 - Bits;
                        long cell = unchecked((long)(c << up)) >> (up + cbits);
                        ulong off = c & ((1UL << cbits) - 1);
                        return ((double)cell + (FloatBits.U64ToDouble(off) + 0.5) / L) * lo;
                    }
                case CodecKind.Int: return (double)unchecked((long)c);
                case CodecKind.IntRange: return (double)DequantizeLong(c);
                case CodecKind.UInt:
                case CodecKind.Bool:
                case CodecKind.Enum:
                    return FloatBits.U64ToDouble(c);
                default:
                    throw new InvalidOperationException(Kind + " is not a scalar codec");
            }
        }

        /// <summary>Whether the carrier c is a code quantize can produce (signed kinds: the sign-extended
        /// two's complement). Never throws. Vector and NearlyZero: use their components.</summary>
        public bool Valid(ulong c)
        {
            switch (Kind)
            {
                case CodecKind.Quat: return QuatValid(c);
                case CodecKind.UnitVector: return c <= maxcode;
                case CodecKind.Vector:
                case CodecKind.NearlyZero: return false;
            }
            if (IsSigned)
            {
                long s = unchecked((long)c);
                return s >= smin && s <= smax;
            }
            if (c > maxcode) return false;
            if (Kind == CodecKind.PowerCurve) return !((c >> (Bits - 1)) != 0 && (c & (maxcode >> 1)) == 0);
            return true;
        }

        /// <summary>Valid for a signed integer code (Python's valid(-3)).</summary>
        public bool ValidSigned(long v)
        {
            if (IsSigned) return v >= smin && v <= smax;
            return v >= 0 && Valid((ulong)v);
        }

        /// <summary>The code from its `Bits` wire bits (sign-extends the signed kinds).</summary>
        public ulong FromWire(ulong w)
        {
            if (IsSigned && Bits < 64 && ((w >> (Bits - 1)) & 1) != 0) return w | (ulong.MaxValue << Bits);
            return w;
        }

        /// <summary>The low `Bits` bits of a code, as the bit stream carries it.</summary>
        public ulong ToWire(ulong c) { return Bits >= 64 ? c : c & ((1UL << Bits) - 1); }

        // ---------------------------------------------------------------------------- Half

        static ulong HalfQ(double x)
        {
            ulong d = FloatBits.ToBits(x);
            ulong h_sgn = (d & 0x8000000000000000UL) >> 48;
            ulong d_exp = d & 0x7ff0000000000000UL;
            ulong d_sig, ret, h_exp;
            if (d_exp >= 0x40f0000000000000UL)
            {
                if (d_exp == 0x7ff0000000000000UL)
                {
                    d_sig = d & 0x000fffffffffffffUL;
                    if (d_sig != 0)
                    {
                        ret = 0x7c00 + (d_sig >> 42);
                        if (ret == 0x7c00) ret += 1;
                        return h_sgn + ret;
                    }
                }
                return h_sgn + 0x7c00;
            }
            if (d_exp <= 0x3f00000000000000UL)
            {
                if (d_exp < 0x3e60000000000000UL) return h_sgn;
                d_exp >>= 52;
                d_sig = 0x0010000000000000UL + (d & 0x000fffffffffffffUL);
                d_sig <<= (int)(d_exp - 998);
                if ((d_sig & 0x003fffffffffffffUL) != 0x0010000000000000UL) d_sig += 0x0010000000000000UL;
                return h_sgn + (d_sig >> 53);
            }
            h_exp = (d_exp - 0x3f00000000000000UL) >> 42;
            d_sig = d & 0x000fffffffffffffUL;
            if ((d_sig & 0x000007ffffffffffUL) != 0x0000020000000000UL) d_sig += 0x0000020000000000UL;
            return h_sgn + h_exp + (d_sig >> 42);
        }

        static double HalfDq(ulong h)
        {
            ulong h_exp = h & 0x7c00;
            ulong d_sgn = (h & 0x8000) << 48;
            ulong h_sig;
            int e;
            if (h_exp == 0)
            {
                h_sig = h & 0x03ff;
                if (h_sig == 0) return FloatBits.FromBits(d_sgn);
                h_sig <<= 1;
                e = 0;
                while ((h_sig & 0x0400) == 0) { h_sig <<= 1; e += 1; }
                return FloatBits.FromBits(d_sgn + ((ulong)(1023 - 15 - e) << 52) + ((h_sig & 0x03ff) << 42));
            }
            if (h_exp == 0x7c00) return FloatBits.FromBits(d_sgn + 0x7ff0000000000000UL + ((h & 0x03ff) << 42));
            return FloatBits.FromBits(d_sgn + (((h & 0x7fff) + 0xfc000) << 42));
        }

        // ---------------------------------------------------------------------------- Quat

        /// <summary>The smallest-three code of a quaternion (x, y, z, w); RangeException for a zero or
        /// non-finite one.</summary>
        public ulong QuantizeQuat(double x0, double x1, double x2, double x3)
        {
            if (Kind != CodecKind.Quat) throw new InvalidOperationException("not a Quat");
            if (!(IsFinite(x0) && IsFinite(x1) && IsFinite(x2) && IsFinite(x3))) throw new RangeException("Quat: non-finite quaternion");
            if (x0 == 0.0 && x1 == 0.0 && x2 == 0.0 && x3 == 0.0) throw new RangeException("Quat: zero quaternion");
            double m, n, best, big, a, b, c;
            int idx;
            bool u;
            m = Math.Abs(x0) > 0.0 ? Math.Abs(x0) : 0.0;
            m = Math.Abs(x1) > m ? Math.Abs(x1) : m;
            m = Math.Abs(x2) > m ? Math.Abs(x2) : m;
            m = Math.Abs(x3) > m ? Math.Abs(x3) : m;
            x0 = x0 / m; x1 = x1 / m; x2 = x2 / m; x3 = x3 / m;
            n = Math.Sqrt(((x0 * x0 + x1 * x1) + x2 * x2) + x3 * x3);
            x0 = x0 / n; x1 = x1 / n; x2 = x2 / n; x3 = x3 / n;
            best = Math.Abs(x0); big = x0; a = x1; b = x2; c = x3; idx = 0;
            u = Math.Abs(x1) > best;
            best = u ? Math.Abs(x1) : best; big = u ? x1 : big; a = u ? x0 : a; idx = u ? 1 : idx;
            u = Math.Abs(x2) > best;
            best = u ? Math.Abs(x2) : best; big = u ? x2 : big; a = u ? x0 : a; b = u ? x1 : b; idx = u ? 2 : idx;
            u = Math.Abs(x3) > best;
            big = u ? x3 : big; a = u ? x0 : a; b = u ? x1 : b; c = u ? x2 : c; idx = u ? 3 : idx;
            u = big < 0.0;
            a = u ? -a : a; b = u ? -b : b; c = u ? -c : c;
            ulong ka = (ulong)(int)BoundedQt((a - lo) / R, L, mode);
            ulong kb = (ulong)(int)BoundedQt((b - lo) / R, L, mode);
            ulong kc = (ulong)(int)BoundedQt((c - lo) / R, L, mode);
            return (((((((ulong)idx << cbits) | ka) << cbits) | kb) << cbits) | kc);
        }

        static bool IsFinite(double x) { return !double.IsNaN(x) && !double.IsInfinity(x); }

        internal double QuatKept(ulong c, int k)
        {
            ulong mask = (1UL << cbits) - 1;
            return BoundedDqd((double)(int)((c >> ((2 - k) * cbits)) & mask), lo, hi, R, L, mode);
        }

        /// <summary>The unit quaternion (x, y, z, w) of a code, into out[offset..offset+3].</summary>
        public void DequantizeQuat(ulong c, double[] outv, int offset = 0)
        {
            double x, y, z, w;
            DequantizeQuat(c, out x, out y, out z, out w);
            outv[offset] = x; outv[offset + 1] = y; outv[offset + 2] = z; outv[offset + 3] = w;
        }

        public void DequantizeQuat(ulong c, out double x, out double y, out double z, out double w)
        {
            int idx = (int)((c >> (3 * cbits)) & 3);
            double a = QuatKept(c, 0), b = QuatKept(c, 1), cc = QuatKept(c, 2);
            double s = (a * a + b * b) + cc * cc;
            double ww = Math.Sqrt(1.0 - s > 0.0 ? 1.0 - s : 0.0);
            double q0 = a, q1 = b, q2 = cc, q3 = ww, n;
            bool u = idx <= 2;
            q3 = u ? cc : q3; q2 = u ? ww : q2;
            u = idx <= 1;
            q2 = u ? b : q2; q1 = u ? ww : q1;
            u = idx == 0;
            q1 = u ? a : q1; q0 = u ? ww : q0;
            n = Math.Sqrt(((q0 * q0 + q1 * q1) + q2 * q2) + q3 * q3);
            x = q0 / n; y = q1 / n; z = q2 / n; w = q3 / n;
        }

        internal static double QuatShrunk(double x, double st)
        {
            x = Math.Abs(x) - st;
            return x < 0.0 ? 0.0 : x;
        }

        public static bool QuatValidShrunk(double a, double b, double c)
        {
            double s = (a * a + b * b) + c * c;
            double big = c > 0.0 ? c : 0.0;
            big = b > big ? b : big;
            big = a > big ? a : big;
            return !(s > 1.0) && Math.Sqrt(1.0 - s) >= big;
        }

        bool QuatValid(ulong c)
        {
            if (c > maxcode) return false;
            ulong m = (1UL << cbits) - 1;
            // midpoint: a component code 2**cbits - 1 is no level
            if ((double)((c >> (2 * cbits)) & m) > L || (double)((c >> cbits) & m) > L || (double)(c & m) > L) return false;
            double st = R / L;
            return QuatValidShrunk(QuatShrunk(QuatKept(c, 0), st), QuatShrunk(QuatKept(c, 1), st), QuatShrunk(QuatKept(c, 2), st));
        }

        /// <summary>For each code of one kept component, its value shrunk by one step (the decoder's table).</summary>
        public double[] QuatTable()
        {
            int n = 1 << cbits;
            var t = new double[n];
            double st = R / L;
            // a code above the mode's top (midpoint: 2**cbits - 1) is no level: 2.0 fails every test
            for (int j = 0; j < n; j++) t[j] = j > L ? 2.0 : QuatShrunk(QuatKept((ulong)j, 2), st);
            return t;
        }

        // ---------------------------------------------------------------------------- UnitVector

        static double SgnNn(double t) { return t >= 0.0 ? 1.0 : -1.0; }

        public ulong QuantizeUnitVector(double x, double y, double z)
        {
            if (Kind != CodecKind.UnitVector) throw new InvalidOperationException("not a UnitVector");
            if (!(IsFinite(x) && IsFinite(y) && IsFinite(z))) throw new RangeException("UnitVector: non-finite vector");
            if (x == 0.0 && y == 0.0 && z == 0.0) throw new RangeException("UnitVector: zero vector");
            double m, s, p, q, p2, q2;
            m = Math.Abs(x);
            m = Math.Abs(y) > m ? Math.Abs(y) : m;
            m = Math.Abs(z) > m ? Math.Abs(z) : m;
            x = x / m; y = y / m; z = z / m;
            s = (Math.Abs(x) + Math.Abs(y)) + Math.Abs(z);
            p = x / s;
            q = y / s;
            bool u = z < 0.0;
            p2 = (1.0 - Math.Abs(q)) * SgnNn(p);
            q2 = (1.0 - Math.Abs(p)) * SgnNn(q);
            p = u ? p2 : p;
            q = u ? q2 : q;
            ulong kp = FloatBits.DoubleToU64(BoundedQt((p - lo) / R, L, M_ENDPOINTS));
            ulong kq = FloatBits.DoubleToU64(BoundedQt((q - lo) / R, L, M_ENDPOINTS));
            return (kp << cbits) | kq;
        }

        public void DequantizeUnitVector(ulong c, out double x, out double y, out double z)
        {
            ulong mask = (1UL << cbits) - 1;   // cbits <= 32
            double p = BoundedDqd(FloatBits.U64ToDouble((c >> cbits) & mask), lo, hi, R, L, M_ENDPOINTS);
            double q = BoundedDqd(FloatBits.U64ToDouble(c & mask), lo, hi, R, L, M_ENDPOINTS);
            double zz = (1.0 - Math.Abs(p)) - Math.Abs(q);
            bool u = zz < 0.0;
            double p2 = (1.0 - Math.Abs(q)) * SgnNn(p);
            double q2 = (1.0 - Math.Abs(p)) * SgnNn(q);
            p = u ? p2 : p;
            q = u ? q2 : q;
            double n = Math.Sqrt((p * p + q * q) + zz * zz);
            x = p / n; y = q / n; z = zz / n;
        }

        public void DequantizeUnitVector(ulong c, double[] outv, int offset = 0)
        {
            double x, y, z;
            DequantizeUnitVector(c, out x, out y, out z);
            outv[offset] = x; outv[offset + 1] = y; outv[offset + 2] = z;
        }

        // ---------------------------------------------------------------------------- NearlyZero

        /// <summary>NearlyZero's flag for a value (every component of a vector): 0 when each magnitude
        /// is at most the threshold (NaN is moving).</summary>
        public bool IsMoving(double[] values, int offset, int count)
        {
            for (int i = 0; i < count; i++) if (!(Math.Abs(values[offset + i]) <= Threshold)) return true;
            return false;
        }

        // ---------------------------------------------------------------------------- spec

        /// <summary>The spec as canonical JSON (keys sorted, floats as float.hex strings, compact):
        /// what the fingerprint and the hello's per-field hash are computed over.</summary>
        public void WriteCanonical(StringBuilder sb)
        {
            sb.Append('{');
            switch (Kind)
            {
                case CodecKind.Bounded:
                    sb.Append("\"bits\":").Append(Bits).Append(",\"kind\":\"Bounded\",\"max\":");
                    Hex(sb, Max); sb.Append(",\"min\":"); Hex(sb, Min);
                    sb.Append(",\"mode\":"); Json.WriteString(sb, Mode);
                    break;
                case CodecKind.Fixed:
                    sb.Append("\"bits\":").Append(Bits).Append(",\"kind\":\"Fixed\",\"offset\":");
                    Hex(sb, Offset); sb.Append(",\"signed\":").Append(Signed ? "true" : "false").Append(",\"step\":"); Hex(sb, StepSize);
                    break;
                case CodecKind.Angle:
                    sb.Append("\"bits\":").Append(Bits).Append(",\"kind\":\"Angle\",\"signed\":").Append(Signed ? "true" : "false").Append(",\"unit\":");
                    Json.WriteString(sb, Unit);
                    break;
                case CodecKind.PowerCurve:
                    sb.Append("\"bits\":").Append(Bits).Append(",\"kind\":\"PowerCurve\",\"max\":");
                    Hex(sb, PowMax); sb.Append(",\"pow\":"); Hex(sb, Pow);
                    break;
                case CodecKind.Half: sb.Append("\"kind\":\"Half\""); break;
                case CodecKind.UInt: sb.Append("\"bits\":").Append(Bits).Append(",\"kind\":\"UInt\""); break;
                case CodecKind.Int: sb.Append("\"bits\":").Append(Bits).Append(",\"kind\":\"Int\""); break;
                case CodecKind.Bool: sb.Append("\"kind\":\"Bool\""); break;
                case CodecKind.IntRange:
                    sb.Append("\"hi\":").Append(Hi.ToString(CultureInfo.InvariantCulture)).Append(",\"kind\":\"IntRange\",\"lo\":").Append(Lo.ToString(CultureInfo.InvariantCulture));
                    break;
                case CodecKind.Enum:
                    if (Labels == null) sb.Append("\"count\":").Append(Count.ToString(CultureInfo.InvariantCulture)).Append(",\"kind\":\"Enum\"");
                    else
                    {
                        sb.Append("\"kind\":\"Enum\",\"labels\":[");
                        for (int i = 0; i < Labels.Length; i++) { if (i > 0) sb.Append(','); Json.WriteString(sb, Labels[i]); }
                        sb.Append(']');
                    }
                    break;
                case CodecKind.Quat:
                    sb.Append("\"bits\":").Append(ComponentBits).Append(",\"kind\":\"Quat\",\"mode\":"); Json.WriteString(sb, Mode);
                    break;
                case CodecKind.UnitVector: sb.Append("\"bits\":").Append(ComponentBits).Append(",\"kind\":\"UnitVector\""); break;
                case CodecKind.Grid:
                    sb.Append("\"cell_bits\":").Append(CellBits).Append(",\"cell_size\":"); Hex(sb, CellSize);
                    sb.Append(",\"kind\":\"Grid\",\"offset_bits\":").Append(OffsetBits);
                    break;
                case CodecKind.Vector:
                    sb.Append("\"codecs\":[");
                    for (int i = 0; i < Components.Length; i++) { if (i > 0) sb.Append(','); Components[i].WriteCanonical(sb); }
                    sb.Append("],\"kind\":\"Vector\"");
                    break;
                case CodecKind.NearlyZero:
                    sb.Append("\"inner\":"); Inner.WriteCanonical(sb);
                    sb.Append(",\"kind\":\"NearlyZero\",\"threshold\":"); Hex(sb, Threshold);
                    break;
            }
            sb.Append('}');
        }

        static void Hex(StringBuilder sb, double v) { sb.Append('"').Append(FloatBits.ToHex(v)).Append('"'); }

        public string CanonicalJson() { var sb = new StringBuilder(); WriteCanonical(sb); return sb.ToString(); }

        /// <summary>A readable name of the codec and its parameters.</summary>
        public string Describe()
        {
            switch (Kind)
            {
                case CodecKind.Vector:
                    {
                        var sb = new StringBuilder("Vector(");
                        for (int i = 0; i < Components.Length; i++) { if (i > 0) sb.Append(", "); sb.Append(Components[i].Describe()); }
                        return sb.Append(')').ToString();
                    }
                case CodecKind.NearlyZero: return "NearlyZero(" + Inner.Describe() + ", threshold=" + Repr(Threshold) + ")";
                default: return Kind + CanonicalJson();
            }
        }

        public override string ToString() { return Describe(); }

        public override bool Equals(object o)
        {
            var c = o as Codec;
            return c != null && c.CanonicalJson() == CanonicalJson();
        }

        public override int GetHashCode() { return CanonicalJson().GetHashCode(); }
    }
}
