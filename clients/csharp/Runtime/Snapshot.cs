using System;

namespace QuantCodec
{
    /// <summary>A decoded snapshot: entity ids ascending and one row of slot codes per entity
    /// (wire-format section 2). Codes of signed slots are sign-extended two's complement (cast to long).
    /// A snapshot the decoder returned stays valid while the decoder holds it (2 * history - 1 sequence
    /// numbers); the decoder then reuses its buffers: copy what you keep longer.</summary>
    public sealed class Snapshot
    {
        public readonly Schema Schema;
        public int Seq;
        public int Count;
        public ulong[] Ids;
        public ulong[] Codes;       // Count * SlotCount, row major
        public readonly int SlotCount;
        internal bool Pooled;
        // What the decoder remembers of how it made this snapshot, when it kept its baseline's entities
        // row for row (Base, as that object was at generation BaseGen): the rows that differ from it
        // (Changed), and, when it had an extrapolation snapshot of the same entities (PredOf, at
        // PredGen), the rows in which those two differed (Ctx). A later packet coded against this one
        // and a snapshot made from PredOf then knows most of its classes without comparing rows.
        internal long Gen;                  // a new number each time the decoder fills this object
        internal Snapshot Base, PredOf;
        internal long BaseGen, PredGen;
        internal byte[] Changed, Ctx;       // one a row: 1 differs
        internal bool HasCtx;

        public Snapshot(Schema schema, int capacity)
        {
            Schema = schema;
            SlotCount = schema.Slots.Length;
            Ids = new ulong[Math.Max(capacity, 1)];
            Codes = new ulong[Math.Max(capacity, 1) * Math.Max(SlotCount, 1)];
        }

        internal void Reserve(int n)
        {
            if (Ids.Length < n)
            {
                int cap = Math.Max(n, Ids.Length * 3 / 2);
                Ids = new ulong[cap];
                Codes = new ulong[cap * Math.Max(SlotCount, 1)];
            }
        }

        public ulong Code(int row, int slot) { return Codes[row * SlotCount + slot]; }

        /// <summary>The row of an entity id (binary search), or -1.</summary>
        public int IndexOf(ulong id)
        {
            int lo = 0, hi = Count - 1;
            while (lo <= hi)
            {
                int mid = (lo + hi) >> 1;
                ulong v = Ids[mid];
                if (v == id) return mid;
                if (v < id) lo = mid + 1; else hi = mid - 1;
            }
            return -1;
        }

        /// <summary>One scalar slot's value: 0.0 for the slots of a resting NearlyZero, the flag itself
        /// (0.0 / 1.0) for a flag slot. (Quat and UnitVector slots: use Values or the codec.)</summary>
        public double Value(int row, int slot)
        {
            var sl = Schema.Slots[slot];
            ulong c = Codes[row * SlotCount + slot];
            if (sl.Class == SlotClass.Flag) return c;
            if (sl.Governor >= 0 && Codes[row * SlotCount + sl.Governor] == 0) return 0.0;
            return sl.Codec.Dequantize(c);
        }

        /// <summary>The flat values of one entity (Schema.Quantize's layout) into values[offset..].</summary>
        public void Values(int row, double[] values, int offset = 0) { Schema.Dequantize(Codes, row * SlotCount, values, offset); }

        internal bool SameAs(Snapshot o)
        {
            if (o.Count != Count) return false;
            for (int i = 0; i < Count; i++) if (Ids[i] != o.Ids[i]) return false;
            int n = Count * SlotCount;
            for (int i = 0; i < n; i++) if (Codes[i] != o.Codes[i]) return false;
            return true;
        }

        /// <summary>A copy that the decoder never reuses.</summary>
        public Snapshot Clone()
        {
            var s = new Snapshot(Schema, Count) { Seq = Seq, Count = Count };
            Array.Copy(Ids, s.Ids, Count);
            Array.Copy(Codes, s.Codes, Count * SlotCount);
            return s;
        }
    }
}
