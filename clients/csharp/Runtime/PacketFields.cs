// The changed fields of the changed entities (wire-format section 7.4): the reference of each
// component (the baseline's code, or its extrapolation), its EG-coded difference, the new code checked.
// FastRun takes runs of entities of the common shapes; ChangedEntities, slot by slot, the rest.
using System;

namespace QuantCodec
{
    internal sealed partial class PacketDecoder
    {
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
            ulong mask = cMask[c];
            // a whole ratio: base + (base - pred) * num, wrapping at the width (the difference read as
            // a b-bit two's complement: the same mod 2**b)
            if (den == 1) return (bl + (bl - pl) * (ulong)num) & mask;
            int b = cB[c];          // <= 32
            long s = (long)((bl - pl) & mask);
            if (((ulong)s >> (b - 1)) != 0) s -= 1L << b;
            long t = s >= 0 ? (2 * s * num + den) / (2 * den) : -((2 * (-s) * num + den) / (2 * den));
            return (bl + (ulong)t) & mask;
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

        /// <summary>The changed entities e0, e0 + 1, ... (below nchg) that the fast path decodes, one after
        /// the other: returns the first it does not take (nchg if none), the reader at its start. An
        /// entity is taken when it is the common case: fields of the fast shapes (ordered slots, a
        /// NearlyZero's flag and ordered slots, a smallest three with a table), every code valid and
        /// inside the packet, every field marked changed changed. Else nothing is read (the loop decodes
        /// it again from the same bit and makes the error, if any, rewriting every slot written here).
        /// Every code is read by Entropy.EG and checked against the packet's end before the next.
        /// (One method: split into a method per shape, the whole stream decoded 5 to 8% slower under
        /// Mono 6.8, measured; so was EG inlined into it, by 20%.)</summary>
        int FastRun(int e0, int nchg, int[] kOut, int pdist, ulong[] brow, ulong[] prow, ulong[] orow)
        {
            ulong[] wd = words;
            byte[] fr = fch;
            FastComp[] fcs = fc;
            FastField[] ffs = ff;
            int[] chgA = chg, kB = kBase, kP = kPred;
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
                        // (the first: an escape carries one more bit, 1: a new largest component)
                        ulong u;
                        p = Entropy.EG(wd, p, d, c == c0, out u);
                        if (p > nb) return e;
                        if (c == c0 && u == ulong.MaxValue)
                        {
                            // the absolute code, or a remap
                            long q = p + 1;
                            v = (Entropy.Window(wd, p) & 1) != 0 ? Entropy.Remap(wd, ref q, bw, fd.Cb, fd.QTop, fcs, c0, nb) : Entropy.Bits(wd, ref q, fd.Bits);
                            if (q > nb) return e;
                            p = q;
                            break;
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
                    ulong u;
                    p = Entropy.EG(wd, p, d, false, out u);
                    if (p > nb) return e;
                    ulong mask = d.Mask, half = d.Half;
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
                    // (sign-magnitude to ordered and back without a branch: a sign is a coin toss the
                    // branch predictor loses half the time; (half - x) >> 63 is x > half, codes being
                    // below 2**63, and half = 0 leaves x as it is)
                    ulong bl = bw & mask;
                    bl ^= half & (0UL - ((half - bl) >> 63));
                    ulong r = bl;
                    if (pi >= 0 && d.Pred)
                    {
                        ulong pl = prow[pi + s] & mask;
                        pl ^= half & (0UL - ((half - pl) >> 63));
                        r = den1 ? (bl + (bl - pl) * numu) & mask : Ref(c, bl, pl, true, 0, 0);
                    }
                    ulong v = (r + ((u >> 1) ^ (0UL - (u & 1)))) & mask;
                    v ^= half & (0UL - ((half - v) >> 63));
                    if (d.Signed && ((v >> (d.B - 1)) & 1) != 0) v |= ~mask;
                    switch (d.VK)
                    {
                        case VK_ALL: break;
                        case VK_POWER:
                            {
                                // beyond the largest code, or a negative zero (the sign bit PowHalf set
                                // and no magnitude): one branch, not one on the sign (a PowerCurve code is
                                // unsigned, below 2**57)
                                ulong ph = d.PowHalf;
                                if ((((d.Max - v) >> 63) | (((ph - v) >> 63) & (((v & ph) - 1) >> 63))) != 0) return e;
                                break;
                            }
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
                                    ulong u = ReadEG(fc[c]);
                                    ulong bl = bw & mask;
                                    if (half != 0 && bl > half) bl ^= half;
                                    ulong r = bl;
                                    if (pi >= 0 && pp[c] != 0)
                                    {
                                        ulong pl = prow[pi + s] & mask;
                                        if (half != 0 && pl > half) pl ^= half;
                                        r = Ref(c, bl, pl, true, bdist, pdist);
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
                                        ulong u = ReadEG(fc[c + j]);
                                        v |= CompF(c + j, bw, pw, pi >= 0 && pp[c + j] != 0, bdist, pdist, u);
                                    }
                                    break;
                                }
                            case SlotClass.Quat:
                                {
                                    int c = sComp[s], cb = sCb[s], qs = 3 * cb;
                                    ulong pw = pi >= 0 ? prow[pi + s] : 0;
                                    bool qpred = pi >= 0 && (pw >> qs) == (bw >> qs);
                                    ulong u = ReadEG(fc[c], true);
                                    if (u != ulong.MaxValue)
                                    {
                                        v = ((bw >> qs) << qs) | CompF(c, bw, pw, qpred && pp[c] != 0, bdist, pdist, u);
                                        u = ReadEG(fc[c + 1]);
                                        v |= CompF(c + 1, bw, pw, qpred && pp[c + 1] != 0, bdist, pdist, u);
                                        u = ReadEG(fc[c + 2]);
                                        v |= CompF(c + 2, bw, pw, qpred && pp[c + 2] != 0, bdist, pdist, u);
                                    }
                                    else if (Read(1) == 0) v = Read(sBits[s]);
                                    else
                                    {
                                        long p0 = pos;
                                        ulong top = sCodec[s].mode == Codec.M_MIDPOINT ? cMask[c] - 1 : cMask[c];
                                        v = Entropy.Remap(words, ref pos, bw, cb, top, fc, c, nbits);
                                        if (pos > nbits)
                                        {
                                            long at = pos;
                                            pos = p0;
                                            throw Bad("entity " + bs.Ids[kBase[ke]] + ": " + SlotName(s) + ": "
                                                      + (at == Entropy.SameIndex ? "a smallest-three remap to the baseline's own index"
                                                         : at == Entropy.Beyond ? "Exp-Golomb value beyond its " + cb + " bits" : "truncated in an Exp-Golomb code"));
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
                    if (dacc == 0) throw Bad("entity " + bs.Ids[kBase[ke]] + ": field '" + schema.Fields[f].Name + "': marked changed but unchanged");
                }
                if (!any) throw Bad("entity " + bs.Ids[kBase[ke]] + ": marked changed, but none of its fields is");
            }
        }
    }
}
