// The entropy codes of a snapshot packet (wire-format sections 4 and 7.4): the one Exp-Golomb reader
// and the one smallest-three remap of this client, used by both the slot-by-slot decoder and its
// fast path. They read a packet held as little-endian 64-bit words followed by zero words
// (PacketDecoder.Header lays it out so), and never check a bound themselves: a reader that ran past
// the packet's end only read zeros, and the caller compares the position with the packet's length
// after each code (EG leaves a position past any packet for a value beyond its bits, too).
using System.Runtime.CompilerServices;

namespace QuantCodec
{
    /// <summary>The parameters of one EG(k, b) code: for a component, set once a packet.</summary>
    internal class EgCode
    {
        public int K, B, E;                 // E: the escape's run of zeros, (b - k + 1) / 2 + 1
        public ulong KMask, EMask, Mask;    // mask(k), mask(E), mask(b)
        public int[] Tab;                   // Entropy.Table(k, b)

        public EgCode() { }
        public EgCode(int k, int b) { Set(k, b); }

        public void Set(int k, int b)
        {
            K = k; B = b; E = (b - k + 1) / 2 + 1;
            KMask = Entropy.Mask(k); EMask = Entropy.Mask(E); Mask = Entropy.Mask(b);
            Tab = Entropy.Table(k, b);
        }
    }

    internal static class Entropy
    {
        /// <summary>The position a reader leaves when the value is beyond its b bits (or 64): past any
        /// packet, so the caller's one comparison with the packet's length catches it.</summary>
        internal const long Beyond = long.MaxValue;
        /// <summary>The position Remap leaves when the new largest component is the baseline's.</summary>
        internal const long SameIndex = long.MaxValue - 1;
        /// <summary>The zero words a packet needs after it for one code: at most 2 * 32 + 1 + 64 bits
        /// (a 64-bit field's code at k = 64 is 65, an escape 33 + 1 + 64), read a window at a time.</summary>
        internal const int CodeWords = 3;

        internal static ulong Mask(int b) { return b >= 64 ? ulong.MaxValue : (1UL << b) - 1; }

        internal static int BitLen(ulong x) { int n = 0; while (x != 0) { n++; x >>= 1; } return n; }

        /// <summary>The 64 bits at bit p, from bit 0 up.</summary>
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        internal static ulong Window(ulong[] wd, long p)
        {
            // (64 bits, without a branch on where p falls in its word: a read of EG codes lands there
            // at random, and a branch taken one time in eight is mispredicted often; the word after
            // always exists, the packet being followed by zero words. Shifted twice: by 64 - sh,
            // 64 at sh = 0, would be by 0.)
            int wi = (int)(p >> 6), sh = (int)(p & 63);
            return (wd[wi] >> sh) | ((wd[wi + 1] << (63 - sh)) << 1);
        }

        /// <summary>n bits (0 to 64) at p; p moves past them.</summary>
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        internal static ulong Bits(ulong[] wd, ref long p, int n)
        {
            if (n > 57) return Wide(wd, ref p, n);
            ulong w = Window(wd, p);
            p += n;
            return w & ((1UL << n) - 1);        // (n = 0: 1 << 0 - 1 = 0)
        }

        static ulong Wide(ulong[] wd, ref long p, int n)
        {
            ulong lo = Window(wd, p) & 0xFFFFFFFFUL;
            ulong hi = Window(wd, p + 32) & Mask(n - 32);
            p += n;
            return lo | (hi << 32);
        }

        /// <summary>Trailing zeros of v != 0: a table load for the low byte (an Exp-Golomb prefix is
        /// mostly shorter than 8 bits), else de Bruijn.</summary>
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        internal static int Ctz(ulong v)
        {
            return (v & 0xFF) != 0 ? Ctz8[(int)(v & 0xFF)] : CtzDb[((v & (0UL - v)) * 0x03F79D71B4CB0A89UL) >> 58];
        }

        static readonly byte[] CtzDb = MakeCtzDb(), Ctz8 = MakeCtz8();
        static byte[] MakeCtzDb()
        {
            var t = new byte[64];
            for (int i = 0; i < 64; i++) t[((1UL << i) * 0x03F79D71B4CB0A89UL) >> 58] = (byte)i;
            return t;
        }
        static byte[] MakeCtz8()
        {
            var t = new byte[256];
            for (int i = 1; i < 256; i++) { int z = 0; while (((i >> z) & 1) == 0) z++; t[i] = (byte)z; }
            return t;
        }

        // EG(k, b) codes of at most TabBits bits, by their bits: (length << 16) | value, or 0 (longer,
        // no 1 in the window, an escape, or a value beyond b bits: EG's other branches, which decide
        // those): one load instead of the prefix length, shifts and masks, the escape's and the width's
        // tests. Made when a code first needs it, one a (k, b).
        const int TabBits = 10;
        const int TabMask = (1 << TabBits) - 1;
        static readonly int[][][] Tabs = new int[TabBits][][];
        static readonly int[] NoTab = new int[1 << TabBits];
        static int[] MakeTab(int k, int b)
        {
            var t = new int[1 << TabBits];
            int E = (b - k + 1) / 2 + 1;
            for (int w = 1; w < (1 << TabBits); w++)
            {
                int e = 0;
                while (((w >> e) & 1) == 0) e++;
                int total = 2 * e + 1 + k;
                if (e >= E || total > TabBits) continue;
                int v = ((((w >> (e + 1)) & ((1 << e) - 1)) + (1 << e) - 1) << k) | ((w >> (2 * e + 1)) & ((1 << k) - 1));
                if ((ulong)v > Mask(b)) continue;
                t[w] = (total << 16) | v;
            }
            return t;
        }

        internal static int[] Table(int k, int b)
        {
            if (k >= TabBits || b < k || b > 64) return NoTab;
            // (a width of TabBits or more bounds no value of the table, and an escape of more zeros
            // than a code of the table holds excludes none: such codes share the table of b = 64)
            if (b >= TabBits && (b - k + 1) / 2 + 1 > (TabBits - 1 - k) / 2) b = 64;
            // (a race makes two equal tables: either will do)
            int[][] byB = Tabs[k] ?? (Tabs[k] = new int[65][]);
            return byB[b] ?? (byB[b] = MakeTab(k, b));
        }

        /// <summary>EG(k, b) at p (section 4): u, its value, and the position after the code. With alt (a
        /// smallest three's first component), an escape carries one more bit, and a 1 there gives u =
        /// ulong.MaxValue (no value of its b &lt; 64 bits), the position after that bit. A value beyond
        /// its b bits (or beyond 64) gives Beyond; a code that runs past the packet, a position past
        /// the packet's length. (Not inlined: under Mono 6.8, AggressiveInlining here made the whole
        /// stream's decode 20% slower, the fast path's loops grown and their locals spilled; a call
        /// costs nothing measurable.)</summary>
        internal static long EG(ulong[] wd, long p, EgCode d, bool alt, out ulong u)
        {
            ulong w = Window(wd, p);
            int tv = d.Tab[(int)w & TabMask];
            if (tv != 0)
            {
                // (a valid code of at most TabBits bits: the common case)
                u = (ulong)(tv & 0xFFFF);
                return p + (tv >> 16);
            }
            if ((w & d.EMask) == 0) { u = Escape(wd, ref p, d, alt); return p; }
            int e = Ctz(w), total = 2 * e + 1 + d.K;
            if (total > 57) { u = Long(wd, ref p, d, e); return p; }
            ulong em = (1UL << e) - 1;
            u = (((w >> (e + 1)) & em) + em) << d.K | ((w >> (2 * e + 1)) & d.KMask);
            p += total;
            if (u > d.Mask) p = Beyond;
            return p;
        }

        /// <summary>The escape: E zero bits, (with alt) one bit, then the value in b bits.</summary>
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        static ulong Escape(ulong[] wd, ref long p, EgCode d, bool alt)
        {
            p += d.E;
            if (alt)
            {
                ulong a = Window(wd, p) & 1;
                p++;
                if (a != 0) return ulong.MaxValue;
            }
            return Bits(wd, ref p, d.B);
        }

        /// <summary>A code of more than 57 bits (a prefix of e zeros and its 1 seen).</summary>
        static ulong Long(ulong[] wd, ref long p, EgCode d, int e)
        {
            int k = d.K;
            p += e + 1;
            ulong v = (Bits(wd, ref p, e) | (1UL << e)) - 1;
            ulong low = Bits(wd, ref p, k);
            if (k >= 64)
            {
                if (v != 0) p = Beyond;
                return low;
            }
            if (k > 0 && (v >> (64 - k)) != 0) { p = Beyond; return 0; }
            ulong u = (v << k) | low;
            if (u > d.Mask) p = Beyond;
            return u;
        }

        static ulong Unzz(ulong u) { return (u >> 1) ^ (0UL - (u & 1)); }

        /// <summary>A smallest three whose largest component changed (section 7.4), at p after the
        /// escape and its two 1 bits: the new index in 2 bits, then the differences of the three new
        /// kept components (EG codes of cs[c0], cs[c0 + 1], cs[c0 + 2]) from the baseline's value of each,
        /// negated where the baseline's own largest (now kept) is negative. bw: the baseline's code
        /// (index in bits qs, qs + 1; components of cb bits); top: the mode's top code (the code of the
        /// negated value is top - code); end: the packet's length in bits. Returns the new code, p past
        /// it; or p = SameIndex, or past end (what EG leaves: Beyond, or a code past the packet).</summary>
        internal static ulong Remap(ulong[] wd, ref long p, ulong bw, int cb, ulong top, EgCode[] cs, int c0, long end)
        {
            int qs = 3 * cb;
            int i = (int)((bw >> qs) & 3), jn = (int)(Window(wd, p) & 3);
            if (jn == i) { p = SameIndex; return 0; }
            p += 2;
            ulong M = (1UL << cb) - 1;
            // aj: the baseline's code of the new largest component (kept in the baseline: jn != i)
            int tj = jn < i ? jn : jn - 1;
            ulong aj = (bw >> ((2 - tj) * cb)) & M;
            bool neg = (aj >> (cb - 1)) == 0;
            ulong v = (ulong)jn << qs;
            for (int q = 0, t = 0; q < 4; q++)
            {
                if (q == jn) continue;
                ulong rf;
                if (q == i) rf = aj;
                else
                {
                    int tq = q < i ? q : q - 1;     // q's position among the baseline's kept components
                    ulong aq = (bw >> ((2 - tq) * cb)) & M;
                    rf = neg ? (top - aq) & M : aq;
                }
                ulong u;
                p = EG(wd, p, cs[c0 + t], false, out u);
                if (p > end) return 0;      // (past the packet: read no further)
                v |= ((rf + Unzz(u)) & M) << ((2 - t) * cb);
                t++;
            }
            return v;
        }
    }
}
