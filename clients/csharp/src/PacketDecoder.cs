// One snapshot packet (wire-format sections 4-7), decoded against the snapshots its header names
// into a new snapshot. Scratch buffers are kept between packets: no allocation per entity.
using System;

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
            int nw = (length >> 3) + 2;
            if (words.Length < nw) words = new ulong[Math.Max(nw, words.Length * 2)];
            ulong[] wd = words;
            int full = length >> 3;
            for (int i = 0, b = offset; i < full; i++, b += 8)
                wd[i] = (ulong)data[b] | ((ulong)data[b + 1] << 8) | ((ulong)data[b + 2] << 16) | ((ulong)data[b + 3] << 24)
                        | ((ulong)data[b + 4] << 32) | ((ulong)data[b + 5] << 40) | ((ulong)data[b + 6] << 48) | ((ulong)data[b + 7] << 56);
            ulong tail = 0;
            for (int i = 0; i < (length & 7); i++) tail |= (ulong)data[offset + 8 * full + i] << (8 * i);
            wd[full] = tail;
            wd[full + 1] = 0;
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
            Grow(ref keptBase, kept + 1);
            int[] kOut = tmpOut(kept + 1);
            // merge kept baseline rows and new rows in id order
            if (nrem == 0 && nnew == 0 && m > 0)
            {
                // the common case: the baseline's entities, row for row
                Array.Copy(bs.Ids, o.Ids, m);
                if (S > 0) Array.Copy(bs.Codes, o.Codes, m * S);
                for (int e = 0; e < m; e++) { keptBase[e] = e; kOut[e] = e; }
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
            if (pdist != 0)
            {
                if (ctx.Length < kept + 1) ctx = new byte[Math.Max(kept + 1, ctx.Length * 2)];
                int n1 = 0, n0 = 0;
                Grow(ref cls1, kept + 1); Grow(ref cls0, kept + 1);
                int pj = 0, p = pr.Count;
                ulong[] bid = bs.Ids, brow = bs.Codes, pid = pr.Ids, prow = pr.Codes;
                for (int e = 0; e < kept; e++)
                {
                    int kb = keptBase[e];
                    ulong id = bid[kb];
                    while (pj < p && pid[pj] < id) pj++;
                    bool c1 = true;
                    keptPred[e] = -1;
                    if (pj < p && pid[pj] == id)
                    {
                        keptPred[e] = pj;
                        c1 = false;
                        int a = kb * S, b = pj * S;
                        for (int s = 0; s < S; s++) if (brow[a + s] != prow[b + s]) { c1 = true; break; }
                    }
                    if (c1) cls1[n1++] = e; else cls0[n0++] = e;
                }
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
            if (nchg == 0) { Finish(); return; }
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
            ChangedEntities(bdist, pdist, bs, pr, o, kOut, nchg);
            Finish();
        }

        int[] kOutBuf = new int[16];
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

        void ChangedEntities(int bdist, int pdist, Snapshot bs, Snapshot pr, Snapshot o, int[] kOut, int nchg)
        {
            ulong[] brow = bs.Codes, orow = o.Codes;
            ulong[] prow = pdist != 0 ? pr.Codes : null;
            for (int e = 0; e < nchg; e++)
            {
                int ke = chg[e];
                int bi = keptBase[ke] * S, oi = kOut[ke] * S;
                int pi = pdist != 0 && keptPred[ke] >= 0 ? keptPred[ke] * S : -1;
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
                        if (sVK[s] != VK_ALL && !SlotValid(s, v)) throw Bad("entity " + bs.Ids[keptBase[ke]] + ": " + SlotName(s) + ": code " + CodeText(s, v) + " is not valid");
                        orow[oi + s] = v;
                        dacc |= v ^ bw;
                        s++;
                    }
                    if (dacc == 0) throw Bad("a field marked changed is unchanged (entity " + bs.Ids[keptBase[ke]] + ")");
                }
                if (!any) throw Bad("an entity marked changed has no changed field (entity " + bs.Ids[keptBase[ke]] + ")");
            }
        }
    }
}
