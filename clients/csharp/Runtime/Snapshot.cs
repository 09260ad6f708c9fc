using System;
using System.Collections.Generic;

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
        // emptied by its decoder's Dispose (Release), or a Clone of such a view: no view any more
        internal bool Released;
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
            Arg.NotNull(schema, "schema", "Snapshot");
            Schema = schema;
            SlotCount = schema.Slots.Length;
            Ids = new ulong[Math.Max(capacity, 1)];
            Codes = new ulong[Math.Max(capacity, 1) * Math.Max(SlotCount, 1)];
        }

        // a snapshot of the decoder's, its buffers from SnapshotPool when it has some that fit
        internal Snapshot(Schema schema, int capacity, bool pooled)
        {
            Schema = schema;
            SlotCount = schema.Slots.Length;
            int cap = Math.Max(capacity, 1);
            Ids = SnapshotPool.Words(cap);
            Codes = SnapshotPool.Words(cap * Math.Max(SlotCount, 1));
        }

        // (the decoder's snapshots only: their buffers may come from SnapshotPool, longer than asked)
        internal void Reserve(int n)
        {
            if (Ids.Length < n || Codes.Length < (long)n * Math.Max(SlotCount, 1))
            {
                int cap = Math.Max(n, Ids.Length * 3 / 2);
                Ids = SnapshotPool.Words(cap);
                Codes = SnapshotPool.Words(cap * Math.Max(SlotCount, 1));
            }
        }

        static readonly ulong[] NoWords = new ulong[0];

        /// <summary>Give this snapshot's buffers to SnapshotPool (bounded by limit) and leave it empty: Count
        /// 0, Ids and Codes of length 0 (a stale view then reads nothing rather than another decoder's
        /// entities). Only for a snapshot the decoder owns, or the user gave back.</summary>
        internal void Release(long limit)
        {
            SnapshotPool.Give(Ids, Codes, Changed, Ctx, limit);
            Ids = NoWords;
            Codes = NoWords;
            Changed = null;
            Ctx = null;
            Count = 0;
            Released = true;
            Base = null;
            PredOf = null;
            HasCtx = false;
        }

        /// <summary>The code of one slot of one entity: row 0..Count-1, slot 0..SlotCount-1
        /// (ArgumentOutOfRangeException otherwise).</summary>
        public ulong Code(int row, int slot)
        {
            Arg.Index(row, Count, "row", "Snapshot.Code");
            Arg.Index(slot, SlotCount, "slot", "Snapshot.Code");
            return Codes[row * SlotCount + slot];
        }

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
        /// (0.0 / 1.0) for a flag slot. (Quat and UnitVector slots: use Values or the codec.) Row
        /// 0..Count-1, slot 0..SlotCount-1 (ArgumentOutOfRangeException otherwise).</summary>
        public double Value(int row, int slot)
        {
            Arg.Index(row, Count, "row", "Snapshot.Value");
            Arg.Index(slot, SlotCount, "slot", "Snapshot.Value");
            var sl = Schema.Slots[slot];
            ulong c = Codes[row * SlotCount + slot];
            if (sl.Class == SlotClass.Flag) return c;
            if (sl.Governor >= 0 && Codes[row * SlotCount + sl.Governor] == 0) return 0.0;
            return sl.Codec.Dequantize(c);
        }

        /// <summary>The flat values of one entity (Schema.Quantize's layout) into values[offset..]
        /// (Schema.ValueCount of them): row 0..Count-1.</summary>
        public void Values(int row, double[] values, int offset = 0)
        {
            Arg.Index(row, Count, "row", "Snapshot.Values");
            Schema.Dequantize(Codes, row * SlotCount, values, offset);
        }

        internal bool SameAs(Snapshot o)
        {
            if (o.Count != Count) return false;
            for (int i = 0; i < Count; i++) if (Ids[i] != o.Ids[i]) return false;
            int n = Count * SlotCount;
            for (int i = 0; i < n; i++) if (Codes[i] != o.Codes[i]) return false;
            return true;
        }

        /// <summary>A copy that the decoder never reuses. (Clone before the decoder's Dispose: a clone of
        /// a view it emptied is as empty, and Interpolator.Push refuses both.)</summary>
        public Snapshot Clone()
        {
            var s = new Snapshot(Schema, Count) { Seq = Seq, Count = Count, Released = Released };
            Array.Copy(Ids, s.Ids, Count);
            Array.Copy(Codes, s.Codes, Count * SlotCount);
            return s;
        }
    }

    /// <summary>The buffers of disposed decoders' snapshots (SnapshotDecoder.Dispose), for the decoders
    /// made after them: what a C allocator does for Python's decoder. A client that reconnects then
    /// fills its new window in memory it already has (under Mono, a large array freed by the GC goes
    /// back to the system, and a new one is fresh pages: page faults, and GC work). Bounded: it keeps
    /// a buffer only while it holds at most the MaxBytes of the decoder that gives it (so never more than
    /// the largest MaxBytes of the decoders that gave memory back; SnapshotDecoder.PooledBytes says how
    /// much, SnapshotDecoder.ClearPool empties it). Thread-safe: decoders of several threads share it.</summary>
    static class SnapshotPool
    {
        static readonly object gate = new object();
        static readonly List<ulong[]> words = new List<ulong[]>();
        static readonly List<byte[]> bytes = new List<byte[]>();
        static long held;           // bytes of the arrays held
        static volatile bool any;   // whether it holds something (no lock taken when empty)

        internal static long Bytes { get { lock (gate) return held; } }

        internal static void Clear()
        {
            lock (gate) { words.Clear(); bytes.Clear(); held = 0; any = false; }
        }

        // the smallest held array of at least n elements and at most 2n + 1024 (else a new one)
        static int Fit<T>(List<T[]> list, int n)
        {
            int best = -1;
            long limit = 2L * n + 1024;
            for (int i = 0; i < list.Count; i++)
            {
                int len = list[i].Length;
                if (len >= n && len <= limit && (best < 0 || len < list[best].Length))
                {
                    best = i;
                    if (len == n) break;
                }
            }
            return best;
        }

        static T[] Take<T>(List<T[]> list, int i, int size)
        {
            T[] a = list[i];
            list[i] = list[list.Count - 1];
            list.RemoveAt(list.Count - 1);
            held -= (long)a.Length * size;
            any = held > 0;
            return a;
        }

        /// <summary>A ulong array of at least n elements, its contents unspecified.</summary>
        internal static ulong[] Words(int n)
        {
            if (any)
            {
                lock (gate)
                {
                    int i = Fit(words, n);
                    if (i >= 0) return Take(words, i, 8);
                }
            }
            return new ulong[n];
        }

        /// <summary>A byte array of at least n elements, its contents unspecified.</summary>
        internal static byte[] Bytes8(int n)
        {
            if (any)
            {
                lock (gate)
                {
                    int i = Fit(bytes, n);
                    if (i >= 0) return Take(bytes, i, 1);
                }
            }
            return new byte[n];
        }

        internal static void Give(ulong[] ids, ulong[] codes, byte[] changed, byte[] ctx, long limit)
        {
            lock (gate)
            {
                Add(words, ids, 8, limit);
                Add(words, codes, 8, limit);
                Add(bytes, changed, 1, limit);
                Add(bytes, ctx, 1, limit);
                any = held > 0;
            }
        }

        static void Add<T>(List<T[]> list, T[] a, int size, long limit)
        {
            if (a == null || a.Length == 0) return;
            long b = (long)a.Length * size;
            if (held + b > limit) return;
            list.Add(a);
            held += b;
        }
    }
}
