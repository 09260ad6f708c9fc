// Section 7's classes of the kept entities (their rows in the baseline and the extrapolation
// snapshot differ, or not), and what a snapshot remembers to find the next packet's classes fast.
using System;

namespace QuantCodec
{
    internal sealed partial class PacketDecoder
    {
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
                    if (o.Ctx == null || o.Ctx.Length < m) o.Ctx = SnapshotPool.Bytes8(Math.Max(m, 16));
                    oc = o.Ctx;
                }
                byte[] bc = chain ? bs.Changed : null, pc = chain ? pr.Changed : null, bx = chain ? bs.Ctx : null;
                // the common case: the same entities in both references, row for row (kept entity e
                // is baseline row kB[e] and extrapolation row kB[e]); the classes without a branch
                if (chain && oc != null)
                {
                    // and the steady state: kept entity e is row e everywhere (the extrapolation rows
                    // are the identity table), most classes known
                    kPred = Ident(m);
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


        /// <summary>After a packet decoded against bs: o remembers bs and its changed rows, when it kept bs's
        /// entities row for row (Snapshot.Base).</summary>
        void Remember(Snapshot bs, Snapshot o, int m, int nrem, int nnew, int nchg)
        {
            if (!FastPath || bs == null || nrem != 0 || nnew != 0) { o.HasCtx = false; return; }
            if (o.Changed == null || o.Changed.Length < m) o.Changed = SnapshotPool.Bytes8(Math.Max(m, 16));
            byte[] c = o.Changed;
            Array.Clear(c, 0, m);
            int[] ch = chg;
            for (int e = 0; e < nchg; e++) c[ch[e]] = 1;
            o.Base = bs;
            o.BaseGen = bs.Gen;
        }
    }
}
