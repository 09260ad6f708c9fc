// One snapshot packet (wire-format sections 4-7), decoded against the snapshots its header names
// into a new snapshot. Scratch buffers are kept between packets: no allocation per entity.
using System;
using System.Runtime.CompilerServices;

[assembly: InternalsVisibleTo("tests")]

namespace QuantCodec
{
    internal sealed partial class PacketDecoder
    {
        // scratch
        int[] removed = new int[16], keptBase = new int[16], keptPred = new int[16], cls1 = new int[16], cls0 = new int[16];
        int[] set1 = new int[16], set0 = new int[16], chg = new int[16], tmp = new int[16];
        byte[] ctx = new byte[16];
        ulong[] newIds = new ulong[16], newRows = new ulong[16];
        byte[] fch = new byte[16];
        readonly int[] kk, pp;

        // ------------------------------------------------------------------------ the header

        /// <summary>seq, bdist, pdist (0: none) of a packet; DecodeException (malformed).</summary>
        public long Header(byte[] data, int offset, int length, out int seq, out int bdist, out int pdist)
        {
            Load(data, offset, length, padWords);
            bdist = 0; pdist = 0;
            seq = (int)Read(16);
            if (Read(1) == 0) return pos;
            ulong v = ReadEG(egDist);
            if (v >= 0x7FFF) throw Bad("sequence distance outside 1..32767");
            bdist = (int)v + 1;
            if (Read(1) == 0) return pos;
            v = ReadEG(egDist);
            if (v + 1 + (ulong)bdist > 0x7FFF) throw Bad("sequence distance outside 1..32767");
            pdist = (int)v + 1;
            return pos;
        }

        /// <summary>Decode the packet whose header Header() read (the reader continues after it) against
        /// base / pred, into o, which make(n) gives for n entities once the count of new entities has
        /// passed the limits check: the steps of wire-format section 7 in order. DecodeException
        /// (malformed) on anything wrong; o is then garbage (null when it was not made yet). room:
        /// what the new snapshot's entities may cost in section 19's model (8 + 8 * S bytes each); a
        /// packet of more is refused, kind limits (maxBytes for the message), before o is made.</summary>
        public void Body(int seq, int bdist, int pdist, Snapshot bs, Snapshot pr, ref Snapshot o, Func<int, Snapshot> make, long room = long.MaxValue, long maxBytes = 0)
        {
            int m = bdist != 0 ? bs.Count : 0;
            int nrem = 0;
            if (bdist != 0 && m > 0) nrem = ReadSet(ref removed, m);
            int nnew = NewEntities(seq, m - nrem, room, maxBytes);
            o = make(m - nrem + nnew);      // (SPEC 8: a packet refused for limits allocates nothing)
            int[] kOut = Merge(seq, bdist, bs, o, m, nrem, nnew);
            if (bdist == 0) { Finish(); return; }
            int kept = m - nrem;
            int nchg = ChangedSet(pdist, bs, pr, o, m, kept, nrem == 0);
            if (nchg == 0) { Finish(); Remember(bs, o, m, nrem, nnew, 0); return; }
            FieldSets(nchg, bdist, pdist);
            ChangedEntities(bdist, pdist, bs, pr, o, kOut, nchg);
            Finish();
            Remember(bs, o, m, nrem, nnew, nchg);
        }

        /// <summary>The new entities (section 7.1): their count, checked against the room, ids and
        /// records, into newIds and newRows; returns the count.</summary>
        int NewEntities(int seq, int kept, long room, long maxBytes)
        {
            ulong nv = ReadEG(egCount);
            if ((long)nv > nbits - pos || nv > 0xFFFFFFFFUL - (ulong)kept) throw Bad("count of new entities larger than the packet can hold");
            int nnew = (int)nv;
            long total = (long)kept + nnew, per = 8 + 8L * S;
            if (room < 0 || total > room / per)
                throw new DecodeException("limits", "snapshot packet " + seq + ": a snapshot of " + total + " entities (" + kept + " kept, " + nnew
                    + " new) would cost " + (256 + total * per) + " bytes (256 + N * (8 + 8 * " + S + ")), and with the held snapshots it leaves in the window and the reassembly's bound pass max_bytes " + maxBytes);
            if (nnew > 0)
            {
                if (newIds.Length < nnew) newIds = new ulong[Math.Max(nnew, newIds.Length * 2)];
                if (newRows.Length < nnew * S) newRows = new ulong[Math.Max(nnew * S, newRows.Length * 2)];
                egId.Set((int)Read(6), 64);
                ulong prev = 0;
                for (int i = 0; i < nnew; i++)
                {
                    ulong v = ReadEG(egId);
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
            return nnew;
        }

        /// <summary>The new snapshot's entities: the baseline's kept rows and the new rows in id order;
        /// returns kept entity -> output row (kBase: kept entity -> baseline row).</summary>
        int[] Merge(int seq, int bdist, Snapshot bs, Snapshot o, int m, int nrem, int nnew)
        {
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
                Buffer.BlockCopy(bs.Ids, 0, o.Ids, 0, m << 3);
                Buffer.BlockCopy(bs.Codes, 0, o.Codes, 0, (m * S) << 3);
                // (kept entity e is baseline row e and output row e: an identity table, filled once)
                kBase = Ident(m);
                kOut = kBase;
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
            return kOut;
        }

        /// <summary>The changed kept entities into chg, ascending (section 7.2): one set, or with an
        /// extrapolation snapshot a set in each class; returns their number.</summary>
        int ChangedSet(int pdist, Snapshot bs, Snapshot pr, Snapshot o, int m, int kept, bool keptIdent)
        {
            int nchg = 0;
            Grow(ref chg, kept + 1);
            Grow(ref keptPred, kept + 1);
            kPred = keptPred;
            if (pdist != 0)
            {
                if (ctx.Length < kept + 1) ctx = new byte[Math.Max(kept + 1, ctx.Length * 2)];
                int n1, n0;
                Grow(ref cls1, kept + 1); Grow(ref cls0, kept + 1);
                Classes(bs, pr, o, m, kept, keptIdent, out n1, out n0);
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
            return nchg;
        }

        /// <summary>The changed fields of each changed entity into fch (a set a field), then each
        /// component's EG parameter k and extrapolation bit (section 7.3), into its descriptor.</summary>
        void FieldSets(int nchg, int bdist, int pdist)
        {
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
                    int kv = (int)Read(Entropy.BitLen((ulong)cB[c]));
                    if (kv > cB[c]) throw Bad("Exp-Golomb parameter above the code width");
                    kk[c] = kv;
                }
            }
            if (pdist != 0) SetRatio(bdist, pdist);
            for (int c = 0; c < C; c++)
            {
                var d = fc[c];
                int k = kk[c];
                d.Set(k, d.B);
                d.Pred = pdist != 0 && pp[c] != 0;
                d.Mode = !d.Plain ? FM_GENERAL : !d.Pred ? FM_PLAIN : den == 1 ? FM_PLAIN_PRED : FM_GENERAL;
            }
        }

        /// <summary>ident[e] == e for e &lt; m, filled once.</summary>
        int[] Ident(int m)
        {
            if (identN < m)
            {
                if (ident.Length < m + 1) Array.Resize(ref ident, Math.Max(m + 1, ident.Length * 2));
                for (int e = identN; e < ident.Length; e++) ident[e] = e;
                identN = ident.Length;
            }
            return ident;
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

        /// <summary>Slot s as the messages of every client name it: field 'p', field 'v'[1] (a
        /// component), field 'v' (NearlyZero flag).</summary>
        string SlotName(int s)
        {
            var sl = schema.Slots[s];
            var fl = schema.Fields[sl.Field];
            string name = "field '" + fl.Name + "'";
            if (sl.Class == SlotClass.Flag) return name + " (NearlyZero flag)";
            int flags = schema.Slots[fl.FirstSlot].Class == SlotClass.Flag ? 1 : 0;
            return fl.SlotCount - flags == 1 ? name : name + "[" + (s - fl.FirstSlot - flags) + "]";
        }

        string CodeText(int s, ulong v) { return sSigned[s] ? ((long)v).ToString() : v.ToString(); }

    }
}
