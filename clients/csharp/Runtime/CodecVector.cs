// The multi-component codecs' rules: Quat (smallest three), UnitVector (octahedral), NearlyZero's
// flag, in quantcodec/_kernels.pxd's operations and order.
using System;

namespace QuantCodec
{
    public sealed partial class Codec
    {
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
            Arg.Room(outv, offset, 4, "outv", "offset", "Codec.DequantizeQuat");
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
            Arg.Room(outv, offset, 3, "outv", "offset", "Codec.DequantizeUnitVector");
            DequantizeUnitVector(c, out x, out y, out z);
            outv[offset] = x; outv[offset + 1] = y; outv[offset + 2] = z;
        }

        // ---------------------------------------------------------------------------- NearlyZero

        /// <summary>NearlyZero's flag for a value (every component of a vector): 0 when each magnitude
        /// is at most the threshold (NaN is moving).</summary>
        public bool IsMoving(double[] values, int offset, int count)
        {
            Arg.Slice(values, offset, count, "values", "offset", "count", "Codec.IsMoving");
            for (int i = 0; i < count; i++) if (!(Math.Abs(values[offset + i]) <= Threshold)) return true;
            return false;
        }
    }
}
