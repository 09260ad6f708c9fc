// One snapshot packet (wire-format sections 4-7), decoded against the snapshots its header names
// into a new snapshot. Scratch buffers are kept between packets: no allocation per entity.
using System;
using System.Runtime.CompilerServices;

[assembly: InternalsVisibleTo("tests")]

namespace QuantCodec
{
    internal sealed class PacketDecoder
    {
        readonly Schema schema;
        readonly int S, F, C;
        // slots
        readonly SlotClass[] sClass;
        readonly int[] sBits, sSpan, sCb, sComp;
        readonly bool[] sSigned, sAllValid;
        readonly Codec[] sCodec;
        readonly double[][] sQtab;
        // components
        readonly int[] cSlot, cShift, cB;
        readonly bool[] cSmag;
        readonly ulong[] cMask, cHalf;      // mask(b); sign-magnitude: mask(b - 1), else 0
        readonly int[] sVK;                 // how a slot's codes are checked: VK_*
        readonly ulong[] sMax;              // the slot's largest code
        readonly ulong[] sQlo, sQspan;      // Quat: the component codes whose shrunk value is at most 0.5 are
                                            // sQlo .. sQlo + sQspan (sQlo = 2**64 - 1: not one interval)
        const int VK_ALL = 0, VK_POWER = 1, VK_MAX = 2, VK_QTAB = 3, VK_CODEC = 4;
        // fields
        readonly int[] fFirst, fEnd, fC0, fC1;
        readonly bool[] fImpliedFlag, fImpliedFlip;

        // the fast path of a changed entity (FastEntity): one descriptor per component and per field
        sealed class FastComp
        {
            public int Slot, B, Shift, K, E, VK;
            public bool Plain;              // unsigned, not sign-magnitude, every code of the width valid
            public int Mode;                // this packet: PLAIN (the baseline's code), PLAIN_PRED (den 1), GENERAL
            public ulong Mask, Half, Max, PowHalf, KMask, EMask;
            public bool Signed, Pred;       // Pred: this packet extrapolates the component
            public int[] Tab;               // this packet: EgTab[K], or EgNone
        }
        sealed class FastField
        {
            public int Shape;               // FS_*
            public int C0, C1, Slot, Span, Cb, Qs, Bits;
            public ulong QMax, QLo, QSpan, BitsMask, QTop;
            public double[] QTab;           // the shrunk value of each kept component code
            public uint[] QSq;              // an upper bound of its square, in units of 2**-32
        }
        const int FS_NONE = 0, FS_ORD = 1, FS_NZORD = 2, FS_QUAT = 3;
        const int FM_PLAIN = 0, FM_PLAIN_PRED = 1, FM_GENERAL = 2;
        readonly FastComp[] fc;
        readonly FastField[] ff;
        readonly bool allFast;              // every field has a fast shape
        readonly int padWords;              // zero words after a packet: a fast entity's reads stay inside words
        internal bool FastPath = true;      // false: every changed entity slot by slot (the tests compare both)

        // the reader
        long pos, nbits;
        ulong[] words = new ulong[64];      // the packet as little-endian 64-bit words (one zero word after)

        // scratch
        int[] removed = new int[16], keptBase = new int[16], keptPred = new int[16], cls1 = new int[16], cls0 = new int[16];
        int[] set1 = new int[16], set0 = new int[16], chg = new int[16], tmp = new int[16];
        byte[] ctx = new byte[16];
        ulong[] newIds = new ulong[16], newRows = new ulong[16];
        byte[] fch = new byte[16];
        readonly int[] kk, pp;

        public PacketDecoder(Schema schema)
        {
            this.schema = schema;
            var slots = schema.Slots;
            S = slots.Length;
            F = schema.Fields.Length;
            sClass = new SlotClass[S]; sBits = new int[S]; sSpan = new int[S]; sCb = new int[S]; sComp = new int[S];
            sSigned = new bool[S]; sAllValid = new bool[S]; sCodec = new Codec[S]; sQtab = new double[S][];
            int nc = 0;
            foreach (var sl in slots)
                nc += sl.Class == SlotClass.Ord || sl.Class == SlotClass.Smag ? 1 : sl.Class == SlotClass.Quat ? 3 : sl.Class == SlotClass.Uvec ? 2 : 0;
            C = nc;
            cSlot = new int[C]; cShift = new int[C]; cB = new int[C]; cSmag = new bool[C];
            cMask = new ulong[C]; cHalf = new ulong[C];
            sVK = new int[S]; sMax = new ulong[S]; sQlo = new ulong[S]; sQspan = new ulong[S];
            kk = new int[C + 1]; pp = new int[C + 1];
            int c = 0;
            for (int s = 0; s < S; s++)
            {
                var sl = slots[s];
                sClass[s] = sl.Class; sBits[s] = sl.Bits; sSpan[s] = sl.Span; sCb[s] = sl.CBits; sSigned[s] = sl.Signed; sCodec[s] = sl.Codec;
                sComp[s] = c;
                sAllValid[s] = sl.Class == SlotClass.Flag || AllValid(sl);
                if (sl.Class == SlotClass.Quat && sl.CBits <= 12) sQtab[s] = sl.Codec.QuatTable();
                sMax[s] = sl.Class == SlotClass.Flag ? 1 : sl.Codec.maxcode;
                sQlo[s] = ulong.MaxValue;
                if (sQtab[s] != null) QuatHalf(sQtab[s], out sQlo[s], out sQspan[s]);
                sVK[s] = sAllValid[s] ? VK_ALL : sQtab[s] != null ? VK_QTAB : sl.Codec.Kind == CodecKind.PowerCurve ? VK_POWER
                         : sl.Codec.Kind == CodecKind.Enum || sl.Codec.Kind == CodecKind.IntRange || sl.Codec.Kind == CodecKind.Bounded ? VK_MAX : VK_CODEC;
                switch (sl.Class)
                {
                    case SlotClass.Ord: case SlotClass.Smag:
                        cSlot[c] = s; cShift[c] = 0; cB[c] = sl.Bits; cSmag[c] = sl.Class == SlotClass.Smag; c++; break;
                    case SlotClass.Quat:
                        for (int t = 0; t < 3; t++) { cSlot[c] = s; cShift[c] = (2 - t) * sl.CBits; cB[c] = sl.CBits; c++; }
                        break;
                    case SlotClass.Uvec:
                        for (int t = 0; t < 2; t++) { cSlot[c] = s; cShift[c] = (1 - t) * sl.CBits; cB[c] = sl.CBits; c++; }
                        break;
                }
            }
            for (int k = 0; k < C; k++) { cMask[k] = Mask(cB[k]); cHalf[k] = cSmag[k] ? Mask(cB[k] - 1) : 0; }
            fFirst = new int[F]; fEnd = new int[F]; fC0 = new int[F]; fC1 = new int[F];
            fImpliedFlag = new bool[F]; fImpliedFlip = new bool[F];
            for (int f = 0; f < F; f++)
            {
                var fl = schema.Fields[f];
                fFirst[f] = fl.FirstSlot; fEnd[f] = fl.FirstSlot + fl.SlotCount;
                fC0[f] = fl.SlotCount > 0 ? sComp[fl.FirstSlot] : c;
                fC1[f] = fEnd[f] < S ? sComp[fEnd[f]] : C;
                fImpliedFlag[f] = fl.SlotCount > 0 && slots[fl.FirstSlot].Class == SlotClass.Flag && fl.FirstSlot + 1 + slots[fl.FirstSlot].Span == fEnd[f];
                fImpliedFlip[f] = fl.SlotCount == 1 && slots[fl.FirstSlot].Class == SlotClass.Abs && slots[fl.FirstSlot].Bits == 1;
            }
            fc = new FastComp[C];
            for (int k = 0; k < C; k++)
            {
                int s = cSlot[k];
                fc[k] = new FastComp
                {
                    Slot = s, B = cB[k], Shift = cShift[k], Mask = cMask[k], Half = cHalf[k], VK = sVK[s], Max = sMax[s],
                    PowHalf = sMax[s] >> 1, Signed = sSigned[s] && (sClass[s] == SlotClass.Ord || sClass[s] == SlotClass.Smag),
                };
                fc[k].Plain = sClass[s] == SlotClass.Ord && !fc[k].Signed && fc[k].Half == 0 && fc[k].VK == VK_ALL;
            }
            ff = new FastField[F];
            allFast = true;
            for (int f = 0; f < F; f++)
            {
                var d = new FastField { Shape = FS_NONE, C0 = fC0[f], C1 = fC1[f], Slot = fFirst[f] };
                int a = fFirst[f], z = fEnd[f];
                bool ords = true;
                for (int t = a; t < z; t++)
                    if (t > a || sClass[t] != SlotClass.Flag) ords &= (sClass[t] == SlotClass.Ord || sClass[t] == SlotClass.Smag) && sBits[t] <= 57;
                if (z - a == 1 && sClass[a] == SlotClass.Quat && sQtab[a] != null && sCodec[a].mode != Codec.M_MIDPOINT)
                {
                    d.Shape = FS_QUAT; d.Cb = sCb[a]; d.Qs = 3 * sCb[a]; d.QMax = sMax[a]; d.QLo = sQlo[a]; d.QSpan = sQspan[a];
                    d.Bits = sBits[a]; d.BitsMask = Mask(sBits[a]);
                    d.QTop = sCodec[a].mode == Codec.M_MIDPOINT ? Mask(sCb[a]) - 1 : Mask(sCb[a]);
                    d.QTab = sQtab[a];
                    d.QSq = new uint[d.QTab.Length];
                    for (int j = 0; j < d.QTab.Length; j++)
                    {
                        double t = d.QTab[j];
                        // ceil(t * t * 2**32) + 1 (a bound above the square), or "never" beyond 1
                        d.QSq[j] = !(Math.Abs(t) <= 1.0) ? uint.MaxValue : (uint)Math.Min(Math.Ceiling(t * t * 4294967296.0) + 1.0, 4294967295.0);
                    }
                }
                else if (z > a && sClass[a] == SlotClass.Flag && fImpliedFlag[f] && z - a > 1 && ords) { d.Shape = FS_NZORD; d.Span = sSpan[a]; }
                else if (z > a && sClass[a] != SlotClass.Flag && ords) d.Shape = FS_ORD;
                if (d.Shape == FS_NONE) allFast = false;
                ff[f] = d;
            }
            // a fast entity reads at most 57 bits a component (an escape: 33 + 1 + 57, and a smallest
            // three's new code: 2 + 38) and one a slot before it is checked
            padWords = (int)((91L * C + 40L * S) / 64) + 3;
        }

        /// <summary>The codes of a kept component whose shrunk value is at most 0.5, when they are one
        /// interval: three such components are valid without the arithmetic (their sum of squares is
        /// at most 0.75, rounded too, so sqrt(1 - s) >= 0.5 >= the largest).</summary>
        static void QuatHalf(double[] t, out ulong lo, out ulong span)
        {
            lo = ulong.MaxValue; span = 0;
            int first = -1, last = -1;
            for (int j = 0; j < t.Length; j++) if (t[j] <= 0.5) { if (first < 0) first = j; last = j; }
            if (first < 0) return;
            for (int j = first; j <= last; j++) if (!(t[j] <= 0.5)) return;
            lo = (ulong)first;
            span = (ulong)(last - first);
        }

        static bool AllValid(Slot sl)
        {
            var c = sl.Codec;
            switch (c.Kind)
            {
                // (Bounded: 2**bits codes; Fixed and Int: the whole two's complement / unsigned range of
                // their width; a Vector's UnitVector: 2**(2b) codes)
                case CodecKind.Bounded: return c.mode != Codec.M_MIDPOINT;     // midpoint: 2**bits - 1 is no code
                case CodecKind.Angle: case CodecKind.UInt: case CodecKind.Grid: case CodecKind.Half:
                case CodecKind.Int: case CodecKind.Bool: case CodecKind.UnitVector: case CodecKind.Fixed:
                    return true;
                default: return false;      // PowerCurve (negative zero), Enum, Quat
            }
        }

        static ulong Mask(int b) { return b >= 64 ? ulong.MaxValue : (1UL << b) - 1; }

        DecodeException Bad(string what) { return new DecodeException("malformed", "snapshot packet: " + what + " at bit " + pos); }

        // ------------------------------------------------------------------------ bit reads

        ulong Raw(int n)        // n <= 56, inside the data
        {
            long p = pos;
            int wi = (int)(p >> 6), sh = (int)(p & 63);
            ulong w = words[wi] >> sh;
            if (sh > 7) w |= words[wi + 1] << (64 - sh);
            pos = p + n;
            return w & ((1UL << n) - 1);
        }

        ulong Read(int n)
        {
            if (n == 0) return 0;
            if (pos + n > nbits) throw Bad("truncated, a read of " + n + " bits runs past the end");
            if (n > 56) { ulong lo = Raw(32); return lo | (Raw(n - 32) << 32); }
            return Raw(n);
        }

        ulong Peek(int n)
        {
            long left = nbits - pos;
            if (left < n) n = (int)left;
            if (n <= 0) return 0;
            long save = pos;
            ulong v = Raw(n);
            pos = save;
            return v;
        }

        static readonly byte[] CtzTable = MakeCtz();
        // Exp-Golomb codes EG(k) of at most EgTabBits bits, by their bits: (length << 16) | value, or 0
        // (longer, or no 1 in the window). One load instead of the prefix length, shifts and masks; the
        // caller has seen a 1 within the escape's E bits.
        const int EgTabBits = 10;
        const ulong EgTabMask = (1UL << EgTabBits) - 1;
        static readonly int[][] EgTab = MakeEgTab();
        static readonly int[] EgNone = new int[1 << EgTabBits];
        static int[][] MakeEgTab()
        {
            var t = new int[EgTabBits][];
            for (int k = 0; k < EgTabBits; k++)
            {
                t[k] = new int[1 << EgTabBits];
                for (int w = 1; w < (1 << EgTabBits); w++)
                {
                    int e = 0;
                    while (((w >> e) & 1) == 0) e++;
                    int total = 2 * e + 1 + k;
                    if (total > EgTabBits) continue;
                    int v = ((((w >> (e + 1)) & ((1 << e) - 1)) + (1 << e) - 1) << k) | ((w >> (2 * e + 1)) & ((1 << k) - 1));
                    t[k][w] = (total << 16) | v;
                }
            }
            return t;
        }
        // trailing zeros of a nonzero byte (an Exp-Golomb prefix is mostly shorter than 8 bits: one load,
        // where the de Bruijn multiply is a chain of four operations)
        static readonly byte[] Ctz8Table = MakeCtz8();
        static byte[] MakeCtz8()
        {
            var t = new byte[256];
            for (int i = 1; i < 256; i++) { int z = 0; while (((i >> z) & 1) == 0) z++; t[i] = (byte)z; }
            return t;
        }
        static byte[] MakeCtz()
        {
            var t = new byte[64];
            for (int i = 0; i < 64; i++) t[((1UL << i) * 0x03F79D71B4CB0A89UL) >> 58] = (byte)i;
            return t;
        }

        /// <summary>Trailing zeros of v != 0 (de Bruijn).</summary>
        static int Ctz(ulong v) { return CtzTable[((v & (0UL - v)) * 0x03F79D71B4CB0A89UL) >> 58]; }


        /// <summary>EG(k, b) without the escape's extra bit: the common case (the whole code within one
        /// 8-byte load, no escape) inline, the rest through EG.</summary>
        ulong EGf(int k, int b, ulong umax)
        {
            long p = pos;
            if (p + 57 <= nbits)
            {
                int wi = (int)(p >> 6), sh = (int)(p & 63);
                ulong w = words[wi] >> sh;
                if (sh > 7) w |= words[wi + 1] << (64 - sh);      // (at least 57 bits of the window)
                int E = (b - k + 1) / 2 + 1;
                if ((w & ((1UL << E) - 1)) != 0)
                {
                    int e = CtzTable[((w & (0UL - w)) * 0x03F79D71B4CB0A89UL) >> 58];
                    int total = 2 * e + 1 + k;
                    if (total <= 57)
                    {
                        ulong u = ((((w >> (e + 1)) & ((1UL << e) - 1)) | (1UL << e)) - 1) << k | ((w >> (2 * e + 1)) & ((1UL << k) - 1));
                        if (u > umax) throw Bad("Exp-Golomb value beyond its " + b + " bits");
                        pos = p + total;
                        return u;
                    }
                }
            }
            bool alt;
            return EG(k, b, false, out alt);
        }

        /// <summary>EGf, and for the smallest-three's first component the escape's extra bit.</summary>
        ulong EGx(int k, int b, ulong umax, bool altOk, out bool alt)
        {
            alt = false;
            long p = pos;
            if (p + 57 <= nbits)
            {
                int wi = (int)(p >> 6), sh = (int)(p & 63);
                ulong w = words[wi] >> sh;
                if (sh > 7) w |= words[wi + 1] << (64 - sh);
                int E = (b - k + 1) / 2 + 1;
                if ((w & ((1UL << E) - 1)) != 0)
                {
                    int e = CtzTable[((w & (0UL - w)) * 0x03F79D71B4CB0A89UL) >> 58];
                    int total = 2 * e + 1 + k;
                    if (total <= 57)
                    {
                        ulong u = ((((w >> (e + 1)) & ((1UL << e) - 1)) | (1UL << e)) - 1) << k | ((w >> (2 * e + 1)) & ((1UL << k) - 1));
                        if (u > umax) throw Bad("Exp-Golomb value beyond its " + b + " bits");
                        pos = p + total;
                        return u;
                    }
                }
            }
            return EG(k, b, altOk, out alt);
        }

        internal static int BitLen(ulong x) { return Codec.BitLen(x); }

        /// <summary>EG(k, b) (section 4). With alt, an escape carries one more bit: 1 sets isAlt
        /// (nothing more read).</summary>
        ulong EG(int k, int b, bool alt, out bool isAlt)
        {
            isAlt = false;
            int E = (b - k + 1) / 2 + 1;
            long avail = nbits - pos;
            if (avail <= 0) throw Bad("truncated in an Exp-Golomb code");
            int n = E < avail ? E : (int)avail;
            ulong peek = Peek(n);
            if (peek == 0)
            {
                if (n < E) throw Bad("truncated in an Exp-Golomb code");
                pos += E;
                if (alt && Read(1) != 0) { isAlt = true; return 0; }
                return Read(b);
            }
            int e = Ctz(peek);
            pos += e + 1;
            ulong m = Read(e);
            ulong v = (m | (1UL << e)) - 1;
            ulong low = Read(k);
            if (k >= 64)
            {
                if (v != 0) throw Bad("Exp-Golomb value beyond 64 bits");
                return low;
            }
            if (k > 0 && (v >> (64 - k)) != 0) throw Bad("Exp-Golomb value beyond 64 bits");
            ulong u = (v << k) | low;
            if (b < 64 && (u >> b) != 0) throw Bad("Exp-Golomb value beyond its " + b + " bits");
            return u;
        }

        ulong EG(int k, int b) { bool a; return EG(k, b, false, out a); }

        ulong Rice(int k, ulong limit)
        {
            ulong q = 0, qmax = limit >> k;
            for (;;)
            {
                long avail = nbits - pos;
                if (avail <= 0) throw Bad("truncated in a Rice code");
                int n = avail >= 56 ? 56 : (int)avail;
                ulong peek = Peek(n);
                if (peek != 0)
                {
                    int z = Ctz(peek);
                    q += (ulong)z;
                    pos += z + 1;
                    break;
                }
                q += (ulong)n;
                pos += n;
                if (q > qmax) throw Bad("Rice code beyond its set");
            }
            if (q > qmax) throw Bad("Rice code beyond its set");
            ulong low = Read(k);
            q = (q << k) | low;
            if (q >= limit) throw Bad("Rice code beyond its set");
            return q;
        }

        static void Grow(ref int[] a, int n) { if (a.Length < n) a = new int[Math.Max(n, a.Length * 2)]; }

        /// <summary>SET(M) into pos (room for M): the members ascending; returns their number.</summary>
        int ReadSet(ref int[] outp, int M)
        {
            Grow(ref outp, M + 1);
            int[] o = outp;
            int mode = (int)Read(2);
            if (mode == 0) return 0;
            int cbits = BitLen((ulong)(M - 1));
            if (mode == 1 || mode == 2)
            {
                long cnt = (long)Read(cbits) + (mode == 1 ? 1 : 0);
                if (cnt > M || (mode == 2 && cnt == M)) throw Bad("bad set count");
                if (mode == 1) { ReadList(o, 0, (int)cnt, M); return (int)cnt; }
                int nc = (int)cnt;
                if (nc > 0)
                {
                    Grow(ref tmp, nc);
                    ReadList(tmp, 0, nc, M);
                }
                int j = 0, n = 0;
                for (int i = 0; i < M; i++)
                {
                    if (j < nc && tmp[j] == i) { j++; continue; }
                    o[n++] = i;
                }
                return n;
            }
            int count = 0;
            for (int ws = 0; ws < M; ws += 56)
            {
                int nb = M - ws < 56 ? M - ws : 56;
                ulong w = Read(nb);
                while (w != 0)
                {
                    o[count++] = ws + Ctz(w);
                    w &= w - 1;
                }
            }
            if (count == 0) throw Bad("an empty bit-mask set");
            return count;
        }

        void ReadList(int[] o, int at, int cnt, int M)
        {
            int k = (int)Read(5);
            long prev = -1;
            for (int i = 0; i < cnt; i++)
            {
                ulong g = Rice(k, (ulong)(M - prev - 1));
                prev = prev + 1 + (long)g;
                o[at + i] = (int)prev;
            }
        }

        // ------------------------------------------------------------------------ the header

        /// <summary>seq, bdist, pdist (0: none) of a packet; DecodeException (malformed).</summary>
        public long Header(byte[] data, int offset, int length, out int seq, out int bdist, out int pdist)
        {
            pos = 0; nbits = 8L * length;
            bdist = 0; pdist = 0;
            int nw = (length >> 3) + 2 + padWords;
            if (words.Length < nw) words = new ulong[Math.Max(nw, words.Length * 2)];
            ulong[] wd = words;
            int full = length >> 3;
            if (BitConverter.IsLittleEndian) Buffer.BlockCopy(data, offset, wd, 0, full << 3);     // (a memmove)
            else
                for (int i = 0, b = offset; i < full; i++, b += 8)
                    wd[i] = (ulong)data[b] | ((ulong)data[b + 1] << 8) | ((ulong)data[b + 2] << 16) | ((ulong)data[b + 3] << 24)
                            | ((ulong)data[b + 4] << 32) | ((ulong)data[b + 5] << 40) | ((ulong)data[b + 6] << 48) | ((ulong)data[b + 7] << 56);
            ulong tail = 0;
            for (int i = 0; i < (length & 7); i++) tail |= (ulong)data[offset + 8 * full + i] << (8 * i);
            wd[full] = tail;
            for (int i = full + 1; i < nw; i++) wd[i] = 0;
            seq = (int)Read(16);
            if (Read(1) == 0) return pos;
            ulong v = EG(2, 16);
            if (v >= 0x7FFF) throw Bad("sequence distance outside 1..32767");
            bdist = (int)v + 1;
            if (Read(1) == 0) return pos;
            v = EG(2, 16);
            if (v + 1 + (ulong)bdist > 0x7FFF) throw Bad("sequence distance outside 1..32767");
            pdist = (int)v + 1;
            return pos;
        }

        // ------------------------------------------------------------------------ the body

        internal bool SlotValid(int s, ulong v)
        {
            switch (sVK[s])
            {
                case VK_ALL: return true;
                case VK_POWER:
                    {
                        ulong half = sMax[s] >> 1;
                        return v <= sMax[s] && !(v > half && (v & half) == 0);
                    }
                case VK_MAX: return v <= sMax[s];
            }
            if (sAllValid[s]) return true;      // every value of the slot's width is a valid code
            double[] t = sQtab[s];
            if (t != null)
            {
                int cb = sCb[s];
                if (v > sMax[s]) return false;
                ulong m = (1UL << cb) - 1;
                ulong qa = (v >> (2 * cb)) & m, qb = (v >> cb) & m, qc = v & m, lo = sQlo[s], span = sQspan[s];
                if (qa - lo <= span && qb - lo <= span && qc - lo <= span) return true;
                return Codec.QuatValidShrunk(t[qa], t[qb], t[qc]);
            }
            return sCodec[s].Valid(v);
        }

        /// <summary>Decode the packet whose header Header() read (the reader continues after it) against
        /// base / pred, into o. DecodeException (malformed) on anything wrong; o is then garbage.</summary>
        /// <summary>room: what the new snapshot's entities may cost in wire-format section 19's model
        /// (8 + 8 * S bytes each); a packet of more is refused, kind limits (maxBytes for the message).</summary>
        public void Body(int seq, int bdist, int pdist, Snapshot bs, Snapshot pr, Snapshot o, long room = long.MaxValue, long maxBytes = 0)
        {
            int m = bdist != 0 ? bs.Count : 0;
            int nrem = 0;
            if (bdist != 0 && m > 0) nrem = ReadSet(ref removed, m);
            ulong nv = EG(0, 32);
            if ((long)nv > nbits - pos || nv > 0xFFFFFFFFUL - (ulong)(m - nrem)) throw Bad("count of new entities larger than the packet can hold");
            int nnew = (int)nv;
            long total = (long)(m - nrem) + nnew, per = 8 + 8L * S;
            if (room < 0 || total > room / per)
                throw new DecodeException("limits", "snapshot packet " + seq + ": a snapshot of " + total + " entities (" + (m - nrem) + " kept, " + nnew
                    + " new) would cost " + (256 + total * per) + " bytes (256 + N * (8 + 8 * " + S + ")), and with what is held and the reassembly's bound pass max_bytes " + maxBytes);
            if (nnew > 0)
            {
                if (newIds.Length < nnew) newIds = new ulong[Math.Max(nnew, newIds.Length * 2)];
                if (newRows.Length < nnew * S) newRows = new ulong[Math.Max(nnew * S, newRows.Length * 2)];
                int kid = (int)Read(6);
                ulong prev = 0;
                for (int i = 0; i < nnew; i++)
                {
                    ulong v = EG(kid, 64);
                    if (i > 0)
                    {
                        if (v >= ulong.MaxValue - prev) throw Bad("new entity id beyond 2**64 - 1");
                        v = prev + 1 + v;
                    }
                    newIds[i] = v;
                    prev = v;
                }
                for (int i = 0; i < nnew; i++) ReadRecord(newRows, i * S, newIds[i]);
            }
            int kept = m - nrem;
            int nout = kept + nnew;
            o.Reserve(nout);
            o.Seq = seq;
            o.Count = nout;
            o.Gen = ++gen;
            o.Base = null; o.PredOf = null; o.HasCtx = false;
            Grow(ref keptBase, kept + 1);
            int[] kOut = tmpOut(kept + 1);
            kBase = keptBase;
            // merge kept baseline rows and new rows in id order
            if (nrem == 0 && nnew == 0 && m > 0)
            {
                // the common case: the baseline's entities, row for row
                Array.Copy(bs.Ids, o.Ids, m);
                if (S > 0) Array.Copy(bs.Codes, o.Codes, m * S);
                // (kept entity e is baseline row e and output row e: an identity table, filled once)
                if (identN < m)
                {
                    if (ident.Length < m + 1) Array.Resize(ref ident, Math.Max(m + 1, ident.Length * 2));
                    for (int e = identN; e < ident.Length; e++) ident[e] = e;
                    identN = ident.Length;
                }
                kBase = ident;
                kOut = ident;
            }
            else
            {
                int i = 0, x = 0, j = 0, w = 0, e = 0;
                ulong[] oid = o.Ids, orow = o.Codes;
                ulong[] bid = bdist != 0 ? bs.Ids : null, brow = bdist != 0 ? bs.Codes : null;
                while (i < m || j < nnew)
                {
                    if (i < m && x < nrem && removed[x] == i) { x++; i++; continue; }
                    if (i < m && (j >= nnew || bid[i] < newIds[j]))
                    {
                        oid[w] = bid[i];
                        if (S > 0) Array.Copy(brow, i * S, orow, w * S, S);
                        keptBase[e] = i; kOut[e] = w; e++;
                        i++; w++;
                    }
                    else
                    {
                        if (i < m && bid[i] == newIds[j]) throw Bad("a new entity has the id of a kept one (" + newIds[j] + ")");
                        oid[w] = newIds[j];
                        if (S > 0) Array.Copy(newRows, j * S, orow, w * S, S);
                        j++; w++;
                    }
                }
            }
            if (bdist == 0) { Finish(); return; }
            int nchg = 0;
            Grow(ref chg, kept + 1);
            Grow(ref keptPred, kept + 1);
            kPred = keptPred;
            if (pdist != 0)
            {
                if (ctx.Length < kept + 1) ctx = new byte[Math.Max(kept + 1, ctx.Length * 2)];
                int n1, n0;
                Grow(ref cls1, kept + 1); Grow(ref cls0, kept + 1);
                Classes(bs, pr, o, m, kept, nrem == 0, out n1, out n0);
                int m1 = n1 > 0 ? ReadSet(ref set1, n1) : 0;
                int m0 = n0 > 0 ? ReadSet(ref set0, n0) : 0;
                int a1 = 0, a0 = 0;
                while (a1 < m1 || a0 < m0)
                {
                    if (a0 >= m0 || (a1 < m1 && cls1[set1[a1]] < cls0[set0[a0]])) chg[nchg++] = cls1[set1[a1++]];
                    else chg[nchg++] = cls0[set0[a0++]];
                }
            }
            else if (kept > 0) nchg = ReadSet(ref chg, kept);
            if (nchg == 0) { Finish(); Remember(bs, o, m, nrem, nnew, 0); return; }
            if (fch.Length < nchg * F + 1) fch = new byte[Math.Max(nchg * F + 1, fch.Length * 2)];
            Array.Clear(fch, 0, nchg * F);
            bool[] fany = FieldAny();
            for (int f = 0; f < F; f++)
            {
                int mf = ReadSet(ref set1, nchg);
                fany[f] = mf > 0;
                for (int a = 0; a < mf; a++) fch[set1[a] * F + f] = 1;
            }
            for (int f = 0; f < F; f++)
            {
                for (int c = fC0[f]; c < fC1[f]; c++)
                {
                    pp[c] = 0; kk[c] = 0;
                    if (!fany[f]) continue;
                    if (pdist != 0 && cB[c] <= 32) pp[c] = (int)Read(1);
                    int kv = (int)Read(BitLen((ulong)cB[c]));
                    if (kv > cB[c]) throw Bad("Exp-Golomb parameter above the code width");
                    kk[c] = kv;
                }
            }
            if (pdist != 0) SetRatio(bdist, pdist);
            for (int c = 0; c < C; c++)
            {
                var d = fc[c];
                int k = kk[c];
                d.K = k; d.E = (d.B - k + 1) / 2 + 1;
                d.KMask = Mask(k); d.EMask = Mask(d.E);
                d.Tab = k < EgTab.Length ? EgTab[k] : EgNone;
                d.Pred = pdist != 0 && pp[c] != 0;
                d.Mode = !d.Plain ? FM_GENERAL : !d.Pred ? FM_PLAIN : den == 1 ? FM_PLAIN_PRED : FM_GENERAL;
            }
            ChangedEntities(bdist, pdist, bs, pr, o, kOut, nchg);
            Finish();
            Remember(bs, o, m, nrem, nnew, nchg);
        }

        int[] kOutBuf = new int[16];
        int[] kBase;                        // kept entity -> baseline row, this packet (keptBase or ident)
        int[] kPred;                        // kept entity -> extrapolation row or -1, this packet (keptPred or ident)
        int[] ident = new int[16];          // ident[e] == e for e < identN
        int identN;
        int[] tmpOut(int n) { if (kOutBuf.Length < n) kOutBuf = new int[Math.Max(n, kOutBuf.Length * 2)]; return kOutBuf; }
        bool[] fanyBuf;
        bool[] FieldAny() { if (fanyBuf == null) fanyBuf = new bool[F + 1]; return fanyBuf; }

        void ReadRecord(ulong[] rows, int at, ulong id)
        {
            for (int s = 0; s < S; s++)
            {
                ulong v = Read(sBits[s]);
                if (sClass[s] == SlotClass.Flag)
                {
                    rows[at + s] = v;
                    if (v == 0)
                    {
                        for (int t = s + 1; t <= s + sSpan[s]; t++) rows[at + t] = 0;
                        s += sSpan[s];
                    }
                    continue;
                }
                if (sSigned[s]) v = sCodec[s].FromWire(v);
                if (!SlotValid(s, v)) { pos -= sBits[s]; throw Bad("entity " + id + ": " + SlotName(s) + ": code " + CodeText(s, v) + " is not valid"); }
                rows[at + s] = v;
            }
        }

        string SlotName(int s)
        {
            var fl = schema.Fields[schema.Slots[s].Field];
            return fl.SlotCount == 1 ? fl.Name : fl.Name + "[" + (s - fl.FirstSlot) + "]";
        }

        string CodeText(int s, ulong v) { return sSigned[s] ? ((long)v).ToString() : v.ToString(); }

        void Finish()
        {
            long left = nbits - pos;
            if (left >= 8) throw Bad("unexpected data after the end of the packet");
            if (Read((int)left) != 0) throw Bad("padding bits set after the end of the packet");
        }

        /// <summary>A component's linear value (the order map for sign-magnitude codes).</summary>
        ulong Lin(ulong carrier, int c)
        {
            int b = cB[c];
            ulong v = (carrier >> cShift[c]) & Mask(b);
            if (cSmag[c] && ((v >> (b - 1)) & 1) != 0) v ^= Mask(b - 1);
            return v;
        }

        static ulong Unzz(ulong u) { return (u >> 1) ^ (0UL - (u & 1)); }

        // the extrapolation's ratio bdist / pdist in lowest terms (the same rational, so the same
        // rounded products): a whole ratio is a multiply
        long num = 1, den = 1;
        long gen;                           // the last Snapshot.Gen given

        void SetRatio(int bdist, int pdist)
        {
            long a = bdist, b = pdist;
            while (b != 0) { long t = a % b; a = b; b = t; }
            num = bdist / a;
            den = pdist / a;
        }

        /// <summary>The reference of section 7.3: base + round_half_away((base - pred) * bdist / pdist), mod 2**b.</summary>
        ulong Ref(int c, ulong bl, ulong pl, bool usePred, int bdist, int pdist)
        {
            if (!usePred) return bl;
            int b = cB[c];          // <= 32
            ulong mask = cMask[c];
            long s = (long)((bl - pl) & mask);
            if (((ulong)s >> (b - 1)) != 0) s -= 1L << b;
            long t;
            if (den == 1) t = s * num;
            else if (s >= 0) t = (2 * s * num + den) / (2 * den);
            else t = -((2 * (-s) * num + den) / (2 * den));
            return (bl + (ulong)t) & mask;
        }

        ulong Comp(int c, ulong bcar, ulong pcar, bool usePred, int bdist, int pdist, ulong u)
        {
            ulong r = Ref(c, Lin(bcar, c), usePred ? Lin(pcar, c) : 0, usePred, bdist, pdist);
            int b = cB[c];
            ulong v = (r + Unzz(u)) & Mask(b);
            if (cSmag[c] && ((v >> (b - 1)) & 1) != 0) v ^= Mask(b - 1);
            return v;
        }

        /// <summary>A component's new code bits (at its shift) from the baseline's and pred's carriers.</summary>
        ulong CompF(int c, ulong bw, ulong pw, bool usePred, int bdist, int pdist, ulong u)
        {
            int sh = cShift[c];
            ulong mask = cMask[c], half = cHalf[c];
            ulong bl = (bw >> sh) & mask;
            if (half != 0 && bl > half) bl ^= half;
            ulong r = bl;
            if (usePred)
            {
                ulong pl = (pw >> sh) & mask;
                if (half != 0 && pl > half) pl ^= half;
                r = Ref(c, bl, pl, true, bdist, pdist);
            }
            ulong v = (r + ((u >> 1) ^ (0UL - (u & 1)))) & mask;
            if (half != 0 && v > half) v ^= half;
            return v << sh;
        }

        /// <summary>The kept entities in two classes (section 7): their rows in the baseline and the
        /// extrapolation snapshot differ (cls1), or not (cls0), in kept order; keptPred: the row of each
        /// in the extrapolation snapshot, or -1.</summary>
        void Classes(Snapshot bs, Snapshot pr, Snapshot o, int m, int kept, bool keptIdent, out int n1, out int n0)
        {
            n1 = 0; n0 = 0;
            int pj = 0, p = pr.Count;
            ulong[] bid = bs.Ids, brow = bs.Codes, pid = pr.Ids, prow = pr.Codes;
            int[] kB = kBase, kP = keptPred, k1 = cls1, k0 = cls0;
            // bs was made from B keeping its rows, with the classes of B against P (same entities), and
            // pr from P keeping its rows: a row neither changed is equal in bs and pr iff it was in B and P
            bool chain = FastPath && keptIdent && bs.HasCtx && bs.Base != null && bs.Count == m && pr.Base != null
                         && pr.Base == bs.PredOf && pr.BaseGen == bs.PredGen && pr.Count == m
                         && bs.Changed.Length >= m && bs.Ctx.Length >= m && pr.Changed.Length >= m;
            bool sameIds = p == m;
            if (!chain) for (int i = 0; i < m && sameIds; i++) sameIds = bid[i] == pid[i];
            if (sameIds)
            {
                // (what this packet's snapshot remembers: the classes of its baseline against pr, a row each)
                byte[] oc = null;
                if (FastPath && keptIdent)
                {
                    if (o.Ctx == null || o.Ctx.Length < m) o.Ctx = new byte[Math.Max(m, 16)];
                    oc = o.Ctx;
                }
                byte[] bc = chain ? bs.Changed : null, pc = chain ? pr.Changed : null, bx = chain ? bs.Ctx : null;
                // the common case: the same entities in both references, row for row (kept entity e
                // is baseline row kB[e] and extrapolation row kB[e]); the classes without a branch
                if (chain && oc != null)
                {
                    // and the steady state: kept entity e is row e everywhere (the extrapolation rows
                    // are the identity table), most classes known
                    if (identN < m)
                    {
                        if (ident.Length < m + 1) Array.Resize(ref ident, Math.Max(m + 1, ident.Length * 2));
                        for (int e = identN; e < ident.Length; e++) ident[e] = e;
                        identN = ident.Length;
                    }
                    kPred = ident;
                    for (int e = 0; e < m; e++)
                    {
                        int d;
                        if ((bc[e] | pc[e]) == 0) d = bx[e];
                        else
                        {
                            int a = e * S, end = a + S;
                            ulong x = 0;
                            for (; a + 4 <= end; a += 4)
                                x |= (brow[a] ^ prow[a]) | (brow[a + 1] ^ prow[a + 1]) | (brow[a + 2] ^ prow[a + 2]) | (brow[a + 3] ^ prow[a + 3]);
                            for (; a < end; a++) x |= brow[a] ^ prow[a];
                            d = (int)((x | (0UL - x)) >> 63);
                        }
                        oc[e] = (byte)d;
                        k1[n1] = e;
                        k0[n0] = e;
                        n1 += d;
                        n0 += 1 - d;
                    }
                }
                else for (int e = 0; e < kept; e++)
                {
                    int kb = kB[e];
                    kP[e] = kb;
                    int d;
                    if (chain && (bc[kb] | pc[kb]) == 0) d = bx[kb];
                    else
                    {
                        int a = kb * S, end = a + S;
                        ulong x = 0;
                        for (; a + 4 <= end; a += 4)
                            x |= (brow[a] ^ prow[a]) | (brow[a + 1] ^ prow[a + 1]) | (brow[a + 2] ^ prow[a + 2]) | (brow[a + 3] ^ prow[a + 3]);
                        for (; a < end; a++) x |= brow[a] ^ prow[a];
                        d = (int)((x | (0UL - x)) >> 63);      // 1: the rows differ
                    }
                    if (oc != null) oc[kb] = (byte)d;
                    k1[n1] = e;
                    k0[n0] = e;
                    n1 += d;
                    n0 += 1 - d;
                }
                if (oc != null) { o.HasCtx = true; o.PredOf = pr; o.PredGen = pr.Gen; }
            }
            else for (int e = 0; e < kept; e++)
            {
                int kb = kB[e];
                ulong id = bid[kb];
                while (pj < p && pid[pj] < id) pj++;
                if (pj < p && pid[pj] == id)
                {
                    kP[e] = pj;
                    // the rows differ anywhere: the codes xor-ed together, four at a time, no branch per slot
                    int a = kb * S, b = pj * S, end = a + S;
                    ulong x = 0;
                    for (; a + 4 <= end; a += 4, b += 4)
                        x |= (brow[a] ^ prow[b]) | (brow[a + 1] ^ prow[b + 1]) | (brow[a + 2] ^ prow[b + 2]) | (brow[a + 3] ^ prow[b + 3]);
                    for (; a < end; a++, b++) x |= brow[a] ^ prow[b];
                    if (x != 0) k1[n1++] = e; else k0[n0++] = e;
                }
                else { kP[e] = -1; k1[n1++] = e; }
            }
        }

        /// <summary>The fast path's smallest three whose largest component changed, remapped (the new
        /// index in 2 bits, then the three differences from the baseline's components in the new
        /// order, as ChangedEntities decodes them): the reader after it, or -1 (an index equal to the
        /// baseline's, or a code the fast path does not take: the loop decides).</summary>
        long FastRemap(long p, FastField fd, int c0, ulong bw, out ulong v)
        {
            ulong[] wd = words;
            int cb = fd.Cb, qs = fd.Qs;
            v = 0;
            int wi = (int)(p >> 6), sh = (int)(p & 63);
            ulong w = wd[wi] >> sh;
            if (sh > 7) w |= wd[wi + 1] << (64 - sh);
            int i = (int)((bw >> qs) & 3), jn = (int)(w & 3);
            if (jn == i) return -1;
            p += 2;
            ulong M = (1UL << cb) - 1, top = fd.QTop;
            ulong aj = 0;
            for (int q = 0, t = 0; q < 4; q++) { if (q == i) continue; if (q == jn) aj = (bw >> ((2 - t) * cb)) & M; t++; }
            ulong o = (ulong)jn << qs;
            for (int q = 0, t = 0; q < 4; q++)
            {
                if (q == jn) continue;
                ulong rf;
                if (q == i) rf = aj;
                else
                {
                    int tq = q < i ? q : q - 1;
                    ulong aq = (bw >> ((2 - tq) * cb)) & M;
                    rf = (aj >> (cb - 1)) != 0 ? aq : (top - aq) & M;
                }
                FastComp d = fc[c0 + t];
                wi = (int)(p >> 6); sh = (int)(p & 63);
                w = wd[wi] >> sh;
                if (sh > 7) w |= wd[wi + 1] << (64 - sh);
                ulong u;
                if ((w & d.EMask) == 0)
                {
                    w >>= d.E;
                    u = w & d.Mask;
                    p += d.E + d.B;
                }
                else
                {
                    int ez = CtzTable[((w & (0UL - w)) * 0x03F79D71B4CB0A89UL) >> 58];
                    int total = 2 * ez + 1 + d.K;
                    if (total > 57) return -1;
                    ulong ezm = (1UL << ez) - 1;
                    u = (((w >> (ez + 1)) & ezm) + ezm) << d.K | ((w >> (2 * ez + 1)) & d.KMask);
                    if (u > d.Mask) return -1;
                    p += total;
                }
                o |= ((rf + ((u >> 1) ^ (0UL - (u & 1)))) & M) << ((2 - t) * cb);
                t++;
            }
            v = o;
            return p;
        }

        /// <summary>After a packet decoded against bs: o remembers bs and its changed rows, when it kept bs's
        /// entities row for row (Snapshot.Base).</summary>
        void Remember(Snapshot bs, Snapshot o, int m, int nrem, int nnew, int nchg)
        {
            if (!FastPath || bs == null || nrem != 0 || nnew != 0) { o.HasCtx = false; return; }
            if (o.Changed == null || o.Changed.Length < m) o.Changed = new byte[Math.Max(m, 16)];
            byte[] c = o.Changed;
            Array.Clear(c, 0, m);
            int[] ch = chg;
            for (int e = 0; e < nchg; e++) c[ch[e]] = 1;
            o.Base = bs;
            o.BaseGen = bs.Gen;
        }

        /// <summary>The changed entities e0, e0 + 1, ... (below nchg) that the fast path decodes, one after the
        /// other: returns the first it does not take (nchg if none), the reader at its start. One changed entity's fields decoded as the slot-by-slot loop of ChangedEntities decodes
        /// them, when they are the common case: fields of the fast shapes (ordered slots, a NearlyZero's
        /// flag and ordered slots, a smallest three with a table), codes within one 57-bit window (or
        /// an escape), every code valid, every field marked changed changed. Else the entity is not
        /// taken, nothing read (the loop decodes it again from the same bit and makes the error, if
        /// any, rewriting every slot written here). Reads go past
        /// the packet's end into zero padding words at most; an entity that ends past it is not taken.</summary>
        int FastRun(int e0, int nchg, int[] kOut, int pdist, ulong[] brow, ulong[] prow, ulong[] orow)
        {
            ulong[] wd = words;
            byte[] fr = fch, ctz = CtzTable, ctz8 = Ctz8Table;
            FastComp[] fcs = fc;
            FastField[] ffs = ff;
            int[] chgA = chg, kB = kBase, kP = kPred;
            ulong ezm;
            bool den1 = den == 1;
            ulong numu = (ulong)num;
            int F = this.F, S = this.S;
            long nb = nbits;
            for (int e = e0; e < nchg; e++)
            {
            int ke = chgA[e];
            int bi = kB[ke] * S, oi = kOut[ke] * S;
            int pi = pdist != 0 && kP[ke] >= 0 ? kP[ke] * S : -1;
            long p = pos;
            int fb = e * F;
            bool any = false;
            if (!allFast)
                for (int f = 0; f < F; f++) if (fr[fb + f] != 0 && ffs[f].Shape == FS_NONE) return e;
            for (int f = 0; f < F; f++)
            {
                if (fr[fb + f] == 0) continue;
                any = true;
                FastField fd = ffs[f];
                ulong dacc = 0;
                int c0 = fd.C0, c1 = fd.C1;
                if (fd.Shape == FS_QUAT)
                {
                    int s = fd.Slot, qs = fd.Qs;
                    ulong bw = brow[bi + s];
                    ulong pw = pi >= 0 ? prow[pi + s] : 0;
                    bool qpred = pi >= 0 && (pw >> qs) == (bw >> qs);
                    ulong v = (bw >> qs) << qs;
                    for (int c = c0; c < c1; c++)
                    {
                        FastComp d = fcs[c];
                        // EG(k, b) (EGx for the first: an escape carries one more bit)
                        int wi = (int)(p >> 6), sh = (int)(p & 63);
                        ulong w = wd[wi] >> sh;
                        if (sh > 7) w |= wd[wi + 1] << (64 - sh);
                        ulong u;
                        if ((w & d.EMask) == 0)
                        {
                            // the escape: E zero bits, (the first) one bit, then the value in b bits
                            w >>= d.E;
                            if (c == c0)
                            {
                                if ((w & 1) != 0)
                                {
                                    // a new largest component: the absolute code, or a remap
                                    if ((w & 2) != 0)
                                    {
                                        p = FastRemap(p + d.E + 2, fd, c0, bw, out v);
                                        if (p < 0) return e;
                                        break;
                                    }
                                    p += d.E + 2;
                                    wi = (int)(p >> 6); sh = (int)(p & 63);
                                    w = wd[wi] >> sh;
                                    if (sh > 7) w |= wd[wi + 1] << (64 - sh);
                                    v = w & fd.BitsMask;
                                    p += fd.Bits;
                                    break;
                                }
                                w >>= 1;
                                p++;
                            }
                            u = w & d.Mask;
                            p += d.E + d.B;
                        }
                        else
                        {
                            int tv = d.Tab[(int)(w & EgTabMask)];
                            if (tv != 0)
                            {
                                u = (ulong)(tv & 0xFFFF);
                                p += tv >> 16;
                            }
                            else
                            {
                                int ez = (w & 0xFF) != 0 ? ctz8[(int)(w & 0xFF)] : ctz[((w & (0UL - w)) * 0x03F79D71B4CB0A89UL) >> 58];
                                int total = 2 * ez + 1 + d.K;
                                if (total > 57) return e;
                                u = (((w >> (ez + 1)) & (ezm = (1UL << ez) - 1)) + ezm) << d.K | ((w >> (2 * ez + 1)) & d.KMask);
                                p += total;
                            }
                            if (u > d.Mask) return e;
                        }
                        int csh = d.Shift;
                        ulong mask = d.Mask;
                        ulong bl = (bw >> csh) & mask, r = bl;
                        if (qpred && d.Pred)
                        {
                            ulong pl = (pw >> csh) & mask;
                            r = den1 ? (bl + (bl - pl) * numu) & mask : Ref(c, bl, pl, true, 0, 0);
                        }
                        v |= ((r + ((u >> 1) ^ (0UL - (u & 1)))) & mask) << csh;
                    }
                    if (v == bw || v > fd.QMax) return e;
                    int cb = fd.Cb;
                    ulong m = (1UL << cb) - 1;
                    ulong qa = (v >> (2 * cb)) & m, qb = (v >> cb) & m, qc = v & m, lo = fd.QLo, span = fd.QSpan;
                    if (!(qa - lo <= span && qb - lo <= span && qc - lo <= span))
                    {
                        uint[] q = fd.QSq;
                        ulong x = q[qa], y = q[qb], z = q[qc], big = x > y ? x : y;
                        if (z > big) big = z;
                        // (an integer test: a sum of squares and the largest square at most 1 - 2**-24
                        // is valid by far more than the doubles' rounding; else the exact test)
                        if (x + y + z + big > 4294967040UL)
                        {
                            double[] t = fd.QTab;
                            if (!Codec.QuatValidShrunk(t[qa], t[qb], t[qc])) return e;
                        }
                    }
                    orow[oi + s] = v;
                    continue;
                }
                if (fd.Shape == FS_NZORD)
                {
                    int s = fd.Slot;
                    ulong bf = brow[bi + s], v = 1;
                    if (bf != 0)
                    {
                        v = (wd[(int)(p >> 6)] >> (int)(p & 63)) & 1;
                        p++;
                    }
                    orow[oi + s] = v;
                    dacc = v ^ bf;
                    if (v == 0)
                    {
                        for (int t = s + 1; t <= s + fd.Span; t++) { orow[oi + t] = 0; dacc |= brow[bi + t]; }
                        c1 = c0;        // nothing more to read
                    }
                }
                for (int c = c0; c < c1; c++)
                {
                    FastComp d = fcs[c];
                    int wi = (int)(p >> 6), sh = (int)(p & 63);
                    ulong w = wd[wi] >> sh;
                    if (sh > 7) w |= wd[wi + 1] << (64 - sh);
                    ulong mask = d.Mask, half = d.Half, u;
                    if ((w & d.EMask) == 0)
                    {
                        // the escape: E zero bits, then the value in b bits (b + E <= 57 + 33: a second load)
                        p += d.E;
                        wi = (int)(p >> 6); sh = (int)(p & 63);
                        w = wd[wi] >> sh;
                        if (sh > 7) w |= wd[wi + 1] << (64 - sh);
                        u = w & mask;
                        p += d.B;
                    }
                    else
                    {
                        int tv = d.Tab[(int)(w & EgTabMask)];
                        if (tv != 0)
                        {
                            u = (ulong)(tv & 0xFFFF);
                            p += tv >> 16;
                        }
                        else
                        {
                            int ez = (w & 0xFF) != 0 ? ctz8[(int)(w & 0xFF)] : ctz[((w & (0UL - w)) * 0x03F79D71B4CB0A89UL) >> 58];
                            int total = 2 * ez + 1 + d.K;
                            if (total > 57) return e;
                            u = (((w >> (ez + 1)) & (ezm = (1UL << ez) - 1)) + ezm) << d.K | ((w >> (2 * ez + 1)) & d.KMask);
                            p += total;
                        }
                        if (u > mask) return e;
                    }
                    int s = d.Slot;
                    ulong bw = brow[bi + s];
                    if (d.Mode != FM_GENERAL)
                    {
                        // unsigned codes below 2**b: the sums wrap at the width alike
                        ulong vp = d.Mode == FM_PLAIN || pi < 0 ? bw : bw + (bw - prow[pi + s]) * numu;
                        vp = (vp + ((u >> 1) ^ (0UL - (u & 1)))) & mask;
                        orow[oi + s] = vp;
                        dacc |= vp ^ bw;
                        continue;
                    }
                    ulong bl = bw & mask;
                    if (half != 0 && bl > half) bl ^= half;
                    ulong r = bl;
                    if (pi >= 0 && d.Pred)
                    {
                        ulong pl = prow[pi + s] & mask;
                        if (half != 0 && pl > half) pl ^= half;
                        r = den1 ? (bl + (bl - pl) * numu) & mask : Ref(c, bl, pl, true, 0, 0);
                    }
                    ulong v = (r + ((u >> 1) ^ (0UL - (u & 1)))) & mask;
                    if (half != 0 && v > half) v ^= half;
                    if (d.Signed && ((v >> (d.B - 1)) & 1) != 0) v |= ~mask;
                    switch (d.VK)
                    {
                        case VK_ALL: break;
                        case VK_POWER: if (v > d.Max || (v > d.PowHalf && (v & d.PowHalf) == 0)) return e; break;
                        case VK_MAX: if (v > d.Max) return e; break;
                        default: if (!SlotValid(s, v)) return e; break;
                    }
                    orow[oi + s] = v;
                    dacc |= v ^ bw;
                }
                if (dacc == 0) return e;
            }
            if (!any || p > nb) return e;
            pos = p;
            }
            return nchg;
        }

        void ChangedEntities(int bdist, int pdist, Snapshot bs, Snapshot pr, Snapshot o, int[] kOut, int nchg)
        {
            ulong[] brow = bs.Codes, orow = o.Codes;
            ulong[] prow = pdist != 0 ? pr.Codes : null;
            for (int e = 0; e < nchg; e++)
            {
                if (FastPath)
                {
                    e = FastRun(e, nchg, kOut, pdist, brow, prow, orow);
                    if (e >= nchg) break;
                }
                int ke = chg[e];
                int bi = kBase[ke] * S, oi = kOut[ke] * S;
                int pi = pdist != 0 && kPred[ke] >= 0 ? kPred[ke] * S : -1;
                bool any = false;
                for (int f = 0; f < F; f++)
                {
                    if (fch[e * F + f] == 0) continue;
                    any = true;
                    ulong dacc = 0;
                    int s = fFirst[f], end = fEnd[f];
                    while (s < end)
                    {
                        ulong bw = brow[bi + s];
                        ulong v;
                        switch (sClass[s])
                        {
                            case SlotClass.Flag:
                                {
                                    v = fImpliedFlag[f] && bw == 0 ? 1UL : Read(1);
                                    orow[oi + s] = v;
                                    dacc |= v ^ bw;
                                    if (v == 0)
                                    {
                                        for (int t = s + 1; t <= s + sSpan[s]; t++) { orow[oi + t] = 0; dacc |= brow[bi + t]; }
                                        s += sSpan[s];
                                    }
                                    s++;
                                    continue;
                                }
                            case SlotClass.Ord:
                            case SlotClass.Smag:
                                {
                                    int c = sComp[s];
                                    ulong mask = cMask[c], half = cHalf[c];
                                    ulong u = EGf(kk[c], cB[c], mask);
                                    ulong bl = bw & mask;
                                    if (half != 0 && bl > half) bl ^= half;
                                    ulong r = bl;
                                    if (pi >= 0 && pp[c] != 0)
                                    {
                                        ulong pl = prow[pi + s] & mask;
                                        if (half != 0 && pl > half) pl ^= half;
                                        if (den == 1)
                                        {
                                            // a whole ratio: base + (base - pred) * num, wrapping at the width
                                            // (the difference read as a b-bit two's complement: the same mod 2**b)
                                            r = (bl + (bl - pl) * (ulong)num) & mask;
                                        }
                                        else r = Ref(c, bl, pl, true, bdist, pdist);
                                    }
                                    v = (r + ((u >> 1) ^ (0UL - (u & 1)))) & mask;
                                    if (half != 0 && v > half) v ^= half;
                                    if (sSigned[s]) v = sCodec[s].FromWire(v);
                                    break;
                                }
                            case SlotClass.Uvec:
                                {
                                    int c = sComp[s];
                                    ulong pw = pi >= 0 ? prow[pi + s] : 0;
                                    v = 0;
                                    for (int j = 0; j < 2; j++)
                                    {
                                        ulong u = EGf(kk[c + j], cB[c + j], cMask[c + j]);
                                        v |= CompF(c + j, bw, pw, pi >= 0 && pp[c + j] != 0, bdist, pdist, u);
                                    }
                                    break;
                                }
                            case SlotClass.Quat:
                                {
                                    int c = sComp[s], cb = sCb[s], qs = 3 * cb;
                                    ulong pw = pi >= 0 ? prow[pi + s] : 0;
                                    bool qpred = pi >= 0 && (pw >> qs) == (bw >> qs);
                                    bool alt;
                                    ulong u = EGx(kk[c], cb, cMask[c], true, out alt);
                                    if (!alt)
                                    {
                                        v = ((bw >> qs) << qs) | CompF(c, bw, pw, qpred && pp[c] != 0, bdist, pdist, u);
                                        u = EGf(kk[c + 1], cb, cMask[c + 1]);
                                        v |= CompF(c + 1, bw, pw, qpred && pp[c + 1] != 0, bdist, pdist, u);
                                        u = EGf(kk[c + 2], cb, cMask[c + 2]);
                                        v |= CompF(c + 2, bw, pw, qpred && pp[c + 2] != 0, bdist, pdist, u);
                                    }
                                    else if (Read(1) == 0) v = Read(sBits[s]);
                                    else
                                    {
                                        int i = (int)((bw >> qs) & 3);
                                        int jn = (int)Read(2);
                                        if (jn == i) throw Bad("a smallest-three remap to the baseline's own index");
                                        ulong M = (1UL << cb) - 1;
                                        // A_q: the baseline's code of quaternion component q (q != i)
                                        ulong aj = 0;
                                        for (int q = 0, t = 0; q < 4; q++) { if (q == i) continue; if (q == jn) aj = (bw >> ((2 - t) * cb)) & M; t++; }
                                        v = (ulong)jn << qs;
                                        for (int q = 0, t = 0; q < 4; q++)
                                        {
                                            if (q == jn) continue;
                                            ulong rf;
                                            if (q == i) rf = aj;
                                            else
                                            {
                                                int tq = q < i ? q : q - 1;     // q's position among the baseline's kept components
                                                ulong aq = (bw >> ((2 - tq) * cb)) & M;
                                                // the code of the negated value: the mode's top code L - aq
                                                rf = (aj >> (cb - 1)) != 0 ? aq : ((sCodec[s].mode == Codec.M_MIDPOINT ? M - 1 : M) - aq) & M;
                                            }
                                            ulong du = EGf(kk[c + t], cb, cMask[c + t]);
                                            v |= ((rf + Unzz(du)) & M) << ((2 - t) * cb);
                                            t++;
                                        }
                                    }
                                    break;
                                }
                            default:        // Abs
                                v = fImpliedFlip[f] ? bw ^ 1 : Read(sBits[s]);
                                break;
                        }
                        if (sVK[s] != VK_ALL && !SlotValid(s, v)) throw Bad("entity " + bs.Ids[kBase[ke]] + ": " + SlotName(s) + ": code " + CodeText(s, v) + " is not valid");
                        orow[oi + s] = v;
                        dacc |= v ^ bw;
                        s++;
                    }
                    if (dacc == 0) throw Bad("a field marked changed is unchanged (entity " + bs.Ids[kBase[ke]] + ")");
                }
                if (!any) throw Bad("an entity marked changed has no changed field (entity " + bs.Ids[kBase[ke]] + ")");
            }
        }
    }
}
