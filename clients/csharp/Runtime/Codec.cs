// Every codec of quantcodec: its parameters, checked as Python checks them, and its properties. The
// rules are in CodecScalar.cs, CodecVector.cs and CodecSpec.cs (one partial class), with the exact
// operations, in the exact order, of quantcodec/_kernels.pxd, so that decoded doubles equal
// Python's bit for bit. (Only PowerCurve
// with a pow other than 1 and 2 calls Math.Pow, which is the C library's pow and may differ by an
// ulp between C libraries at exact rounding ties, as it may between Python builds.)
using System;
using System.Collections.Generic;

namespace QuantCodec
{
    public enum CodecKind
    {
        Bounded = 1, Fixed = 2, Angle = 3, PowerCurve = 4, Half = 5, UInt = 6, Int = 7, Bool = 8,
        Enum = 9, Quat = 10, UnitVector = 11, Vector = 12, Grid = 13, NearlyZero = 14, IntRange = 15
    }

    /// <summary>One codec: its parameters and its rules. Immutable. Scalars quantize one double to one
    /// code; Quat takes 4 doubles, UnitVector 3; Vector and NearlyZero are composites of scalars.</summary>
    public sealed partial class Codec
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
            return FloatBits.PositiveZero(v);     // -0.0 -> 0.0, as Python's _float_param
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

        Codec(long lo, long hi, ulong span) : this(CodecKind.IntRange, Entropy.BitLen(span), span)
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

        Codec(string[] labels, ulong n) : this(CodecKind.Enum, Entropy.BitLen(n - 1), n - 1)
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
            double reach;
            if (Reach(inner, out reach) && threshold >= reach)
                throw new SchemaException("NearlyZero: threshold " + Repr(threshold) + " covers the whole range of " + inner.Describe()
                    + " (no decoded value is farther than " + Repr(reach) + " from zero): every value would be sent as zero; the threshold must be below that");
            return new Codec(inner, threshold);
        }

        /// <summary>The largest magnitude a value of c decodes to (Python's _codecs.pyx _reach), in
        /// doubles; false where it is not simple to say (Angle, Half, Grid, Enum; a Vector with such a
        /// component): NearlyZero refuses a threshold at or above it.</summary>
        static bool Reach(Codec c, out double r)
        {
            r = 0.0;
            switch (c.Kind)
            {
                case CodecKind.Vector:
                    {
                        bool any = false;
                        foreach (var k in c.Components)
                        {
                            double x;
                            if (!Reach(k, out x)) return false;
                            if (!any || x > r) r = x;
                            any = true;
                        }
                        return any;
                    }
                case CodecKind.Bounded: r = Math.Max(Math.Abs(c.Min), Math.Abs(c.Max)); return true;
                case CodecKind.PowerCurve: r = c.PowMax; return true;
                case CodecKind.Fixed:
                    {
                        int b = c.Bits;
                        double lo, hi;      // the end codes as doubles (Python: int * float converts the int)
                        if (c.Signed) { lo = -P2(b - 1); hi = FloatBits.U64ToDouble((1UL << (b - 1)) - 1); }
                        else { lo = 0.0; hi = FloatBits.U64ToDouble(b >= 64 ? ulong.MaxValue : (1UL << b) - 1); }
                        r = Math.Max(Math.Abs(c.Offset + lo * c.StepSize), Math.Abs(c.Offset + hi * c.StepSize));
                        return true;
                    }
                case CodecKind.UInt: r = FloatBits.U64ToDouble(c.Bits >= 64 ? ulong.MaxValue : (1UL << c.Bits) - 1); return true;
                case CodecKind.Int: r = P2(c.Bits - 1); return true;
                case CodecKind.Bool: r = 1.0; return true;
                case CodecKind.IntRange:
                    {
                        ulong mlo = c.Lo < 0 ? (ulong)(-(c.Lo + 1)) + 1 : (ulong)c.Lo;
                        ulong mhi = c.Hi < 0 ? (ulong)(-(c.Hi + 1)) + 1 : (ulong)c.Hi;
                        r = FloatBits.U64ToDouble(Math.Max(mlo, mhi));
                        return true;
                    }
                default: return false;
            }
        }

        Codec(Codec inner, double threshold) : this(CodecKind.NearlyZero, 1 + inner.Bits) { Inner = inner; Threshold = threshold; }

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

    }
}
