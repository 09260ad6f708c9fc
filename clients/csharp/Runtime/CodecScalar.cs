// The scalar codecs' rules: quantize, dequantize and validity of one code (Bounded, Fixed, Angle,
// PowerCurve, Half, Grid, the integers), in quantcodec/_kernels.pxd's operations and order.
using System;
using System.Globalization;

namespace QuantCodec
{
    public sealed partial class Codec
    {
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
    }
}
