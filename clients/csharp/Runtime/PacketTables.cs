// The packet decoder's tables of one schema, made once: per slot, per component (the EG code's
// width and shift in its slot's code) and per field, and the fast path's descriptors.
using System;

namespace QuantCodec
{
    internal sealed partial class PacketDecoder
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
        sealed class FastComp : EgCode       // (its EG code's k: set a packet)
        {
            public int Slot, Shift, VK;
            public bool Plain;              // unsigned, not sign-magnitude, every code of the width valid
            public int Mode;                // this packet: PLAIN (the baseline's code), PLAIN_PRED (den 1), GENERAL
            public ulong Half, Max, PowHalf;
            public bool Signed, Pred;       // Pred: this packet extrapolates the component
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
        readonly int padWords;              // zero words after a packet: a read of one code from inside it stays in words
        internal bool FastPath = true;      // false: every changed entity slot by slot (the tests compare both)

        static ulong Mask(int b) { return Entropy.Mask(b); }

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
            // (every code is checked against the packet's end: one code, and a bit or two before it)
            padWords = Entropy.CodeWords + 1;
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
    }
}
