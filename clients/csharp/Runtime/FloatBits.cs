// Exact conversions between doubles and text, by bit manipulation only (no "R" formatting, no
// double.Parse): Python's float.hex() and its inverse, decimal text to the nearest double (round
// half to even, as Python's float()), and ulong <-> double conversions that round correctly on
// every runtime.
using System;
using System.Numerics;
using System.Text;

namespace QuantCodec
{
    public static class FloatBits
    {
        const string Hex = "0123456789abcdef";

        public static double FromBits(ulong bits) { return BitConverter.Int64BitsToDouble(unchecked((long)bits)); }
        public static ulong ToBits(double x) { return unchecked((ulong)BitConverter.DoubleToInt64Bits(x)); }

        /// <summary>x with -0.0 made 0.0 (every other value as it is), as Python's schema parameters
        /// and canonical text have it. By the bits: Mono folds "x + 0.0" to x, which keeps -0.0.</summary>
        public static double PositiveZero(double x) { return ToBits(x) == 0x8000000000000000UL ? 0.0 : x; }

        /// <summary>Python's float.hex(): "0x1.0000000000000p+11", "-0x0.0p+0", "inf", "nan".</summary>
        public static string ToHex(double x)
        {
            ulong b = ToBits(x);
            bool neg = (b >> 63) != 0;
            int e = (int)((b >> 52) & 0x7FF);
            ulong m = b & 0xFFFFFFFFFFFFFUL;
            if (e == 0x7FF)
                return m != 0 ? "nan" : (neg ? "-inf" : "inf");
            var sb = new StringBuilder(24);
            if (neg) sb.Append('-');
            if (e == 0 && m == 0) { sb.Append("0x0.0p+0"); return sb.ToString(); }
            sb.Append(e == 0 ? "0x0." : "0x1.");
            for (int i = 12; i >= 0; i--) sb.Append(Hex[(int)((m >> (4 * i)) & 0xF)]);
            int exp = e == 0 ? -1022 : e - 1023;
            sb.Append('p');
            sb.Append(exp >= 0 ? '+' : '-');
            sb.Append(Math.Abs(exp).ToString(System.Globalization.CultureInfo.InvariantCulture));
            return sb.ToString();
        }

        /// <summary>The double whose float.hex() (or any hex float text) is s; also "inf", "-inf", "nan".</summary>
        public static double ParseHex(string s)
        {
            Arg.NotNull(s, "s", "FloatBits.ParseHex");
            string t = s.Trim();
            bool neg = false;
            int i = 0;
            if (i < t.Length && (t[i] == '-' || t[i] == '+')) { neg = t[i] == '-'; i++; }
            string rest = t.Substring(i).ToLowerInvariant();
            if (rest == "inf" || rest == "infinity") return neg ? double.NegativeInfinity : double.PositiveInfinity;
            if (rest == "nan") return FromBits(neg ? 0xFFF8000000000000UL : 0x7FF8000000000000UL);
            if (!rest.StartsWith("0x")) throw new FormatException("not a hex float: " + s);
            int j = 2;
            BigInteger mant = BigInteger.Zero;
            int frac = 0, digits = 0;
            bool dot = false;
            for (; j < rest.Length; j++)
            {
                char c = rest[j];
                if (c == '.') { if (dot) throw new FormatException("not a hex float: " + s); dot = true; continue; }
                int v = Hex.IndexOf(c);
                if (v < 0) break;
                mant = mant * 16 + v;
                digits++;
                if (dot) frac++;
            }
            if (digits == 0) throw new FormatException("not a hex float: " + s);
            long exp = 0;
            if (j < rest.Length)
            {
                if (rest[j] != 'p') throw new FormatException("not a hex float: " + s);
                j++;
                bool eneg = false;
                if (j < rest.Length && (rest[j] == '+' || rest[j] == '-')) { eneg = rest[j] == '-'; j++; }
                if (j >= rest.Length) throw new FormatException("not a hex float: " + s);
                for (; j < rest.Length; j++)
                {
                    char c = rest[j];
                    if (c < '0' || c > '9') throw new FormatException("not a hex float: " + s);
                    if (exp < 100000) exp = exp * 10 + (c - '0');
                }
                if (eneg) exp = -exp;
            }
            exp -= 4L * frac;
            double r;
            if (mant.IsZero) r = 0.0;
            else if (exp >= 0) r = exp > 5000 ? double.PositiveInfinity : RoundRatio(mant << (int)exp, BigInteger.One);
            else r = exp < -5000 ? 0.0 : RoundRatio(mant, BigInteger.One << (int)(-exp));
            return neg ? -r : r;
        }

        /// <summary>Decimal number text (JSON grammar, also "1e5", ".5" is refused) to the nearest double,
        /// ties to even: the double Python's float() gives.</summary>
        public static double ParseDecimal(string s)
        {
            Arg.NotNull(s, "s", "FloatBits.ParseDecimal");
            int i = 0;
            bool neg = false;
            if (i < s.Length && s[i] == '-') { neg = true; i++; }
            // The significant digits: leading zeros dropped, at most MaxDigits kept and, past them, one
            // more digit 1 when any dropped digit is not 0. A tie between two doubles has at most 767
            // significant digits, so this rounds as the whole literal does, in time linear in its
            // length (a literal may be as long as the document).
            const int MaxDigits = 800;
            var digits = new StringBuilder();
            long e10 = 0;
            bool any = false, sticky = false;
            for (; i < s.Length && s[i] >= '0' && s[i] <= '9'; i++)
            {
                any = true;
                if (digits.Length < MaxDigits) { if (digits.Length > 0 || s[i] != '0') digits.Append(s[i]); }
                else { e10++; sticky |= s[i] != '0'; }
            }
            if (i < s.Length && s[i] == '.')
            {
                i++;
                for (; i < s.Length && s[i] >= '0' && s[i] <= '9'; i++)
                {
                    any = true;
                    if (digits.Length < MaxDigits) { if (digits.Length > 0 || s[i] != '0') digits.Append(s[i]); e10--; }
                    else sticky |= s[i] != '0';
                }
            }
            if (!any) throw new FormatException("not a number: " + s);
            if (sticky) { digits.Append('1'); e10--; }
            BigInteger mant = digits.Length == 0 ? BigInteger.Zero : BigInteger.Parse(digits.ToString(), System.Globalization.CultureInfo.InvariantCulture);
            if (i < s.Length && (s[i] == 'e' || s[i] == 'E'))
            {
                i++;
                bool en = false;
                if (i < s.Length && (s[i] == '+' || s[i] == '-')) { en = s[i] == '-'; i++; }
                long ev = 0;
                bool ed = false;
                // (capped far beyond any digit count a string can hold: the value is then 0 or inf)
                for (; i < s.Length && s[i] >= '0' && s[i] <= '9'; i++) { if (ev < 100000000000000000L) ev = ev * 10 + (s[i] - '0'); ed = true; }
                if (!ed) throw new FormatException("not a number: " + s);
                e10 += en ? -ev : ev;
            }
            if (i != s.Length) throw new FormatException("not a number: " + s);
            double r;
            if (mant.IsZero) r = 0.0;
            else
            {
                // bound the work: beyond these the value is 0 or inf whatever the digits
                long mag = (long)BigInteger.Log10(mant) + e10;
                if (mag > 400) r = double.PositiveInfinity;
                else if (mag < -400) r = 0.0;
                else if (e10 >= 0) r = RoundRatio(mant * BigInteger.Pow(10, (int)e10), BigInteger.One);
                else r = RoundRatio(mant, BigInteger.Pow(10, (int)(-e10)));
            }
            return neg ? -r : r;
        }

        static int BitLen(BigInteger v)
        {
            // v > 0
            byte[] b = v.ToByteArray();
            int top = b.Length - 1;
            while (top > 0 && b[top] == 0) top--;
            int n = top * 8;
            int x = b[top];
            while (x != 0) { n++; x >>= 1; }
            return n;
        }

        /// <summary>The double nearest to num / den (both positive), ties to even; inf on overflow.</summary>
        static double RoundRatio(BigInteger num, BigInteger den)
        {
            // q = floor(num * 2**s / den) with 2**54 > q >= 2**53: value = q * 2**-s
            int s = 54 - (BitLen(num) - BitLen(den));
            BigInteger q, rem;
            for (;;)
            {
                q = s >= 0 ? BigInteger.DivRem(num << s, den, out rem) : BigInteger.DivRem(num, den << -s, out rem);
                int bl = BitLen(q);
                if (bl > 54) { s -= bl - 54; continue; }
                if (bl < 54) { s += 54 - bl; continue; }
                break;
            }
            long E = 53 - s;        // the value is in [2**E, 2**(E+1))
            if (E > 1023) return double.PositiveInfinity;
            if (E < -1022)
            {
                // subnormal: a multiple of 2**-1074, with one more bit to round on
                int s2 = 1075;
                q = BigInteger.DivRem(num << s2, den, out rem);
                ulong qq = (ulong)q;
                ulong m = qq >> 1;
                bool round = (qq & 1) != 0;
                if (round && (!rem.IsZero || (m & 1) != 0)) m++;
                return FromBits(m);       // m == 2**52 is the smallest normal, as the bits say
            }
            ulong qv = (ulong)q;
            ulong mant = qv >> 1;
            bool rb = (qv & 1) != 0;
            if (rb && (!rem.IsZero || (mant & 1) != 0)) mant++;
            if (mant == (1UL << 53)) { mant >>= 1; E++; }
            if (E > 1023) return double.PositiveInfinity;
            return FromBits(((ulong)(E + 1023) << 52) | (mant & 0xFFFFFFFFFFFFFUL));
        }

        /// <summary>ulong to double, correctly rounded (ties to even) on every runtime.</summary>
        public static double U64ToDouble(ulong x)
        {
            if (x < 0x8000000000000000UL) return (double)(long)x;
            // halve with a sticky bit: the rounding of the halved value is that of x
            return (double)(long)((x >> 1) | (x & 1)) * 2.0;
        }

        /// <summary>A non-negative double below 2**64 to ulong, truncating.</summary>
        public static ulong DoubleToU64(double x)
        {
            if (x < 9223372036854775808.0) return (ulong)(long)x;
            return (ulong)(long)(x - 9223372036854775808.0) + 0x8000000000000000UL;
        }
    }
}
