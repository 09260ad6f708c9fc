// Snapshot interpolation (docs/interpolation.md; the reference is quantcodec/interpolation.py).
// Every operation below is a correctly rounded double +, -, *, /, Math.Sqrt or Math.Floor, in the
// order the document writes them, so the results are the same bits as Python's and the other
// clients' (the conformance kit's interpolation/pose.json pins them). Keep it that way: no
// Math.FusedMultiplyAdd, no reassociation, no float.
using System;
using System.Collections.Generic;

namespace QuantCodec
{
    /// <summary>An Interpolator's counters: views pushed and dropped (duplicates, or older than every
    /// view of a full buffer), views pushed late (their tick at or before a render time already
    /// sampled), samples extrapolated past the newest view, and samples before the oldest.</summary>
    public struct InterpolationStats
    {
        public long Pushed, Dropped, Late, Extrapolated, Early;

        public override string ToString()
        {
            return "pushed " + Pushed + ", dropped " + Dropped + ", late " + Late + ", extrapolated " + Extrapolated + ", early " + Early;
        }
    }

    /// <summary>What Interpolator.Sample gives: the entities of view A (Ids ascending), every field's
    /// values (Values[field], Count rows of Width(field) doubles, row major, the layout of
    /// Schema.Dequantize: a Vector k doubles, a Quat 4 (x, y, z, w), a UnitVector 3, integers, enum
    /// indices and bools (1.0 / 0.0) as their double), the ticks A and B (B null: held or
    /// extrapolated), Alpha (the fraction of the way from A to B; extrapolating, the ticks past A
    /// divided by A - P; 0 when held) and the interpolator's Stats after this sample.</summary>
    public sealed class Sample
    {
        public Schema Schema { get; private set; }
        public int Count { get; private set; }
        /// <summary>The entities' ids, ascending (the first Count: a reused sample's array may be longer).</summary>
        public ulong[] Ids { get; private set; }
        /// <summary>Per field, Count rows of Width(field) doubles (a reused sample's arrays may be longer).</summary>
        public double[][] Values { get; private set; }
        public long A { get; private set; }
        public long? B { get; private set; }
        public double Alpha { get; private set; }
        public InterpolationStats Stats { get; private set; }

        internal Sample(Schema schema)
        {
            Schema = schema;
            Ids = new ulong[0];
            Values = new double[schema.Fields.Length][];
            for (int f = 0; f < Values.Length; f++) Values[f] = new double[0];
        }

        /// <summary>Room for n entities (arrays grown, never shrunk), and the header.</summary>
        internal void Set(int n, long a, long? b, double alpha, InterpolationStats stats)
        {
            if (Ids.Length < n) Ids = new ulong[n];
            for (int f = 0; f < Values.Length; f++)
            {
                int need = n * Schema.Fields[f].ValueCount;
                if (Values[f].Length < need) Values[f] = new double[need];
            }
            Count = n; A = a; B = b; Alpha = alpha; Stats = stats;
        }

        /// <summary>The values of the field named (Count rows of Width doubles). KeyNotFoundException
        /// naming it when the schema has no such field (as a Dictionary's indexer), ArgumentNullException
        /// for null.</summary>
        public double[] this[string field]
        {
            get
            {
                Arg.NotNull(field, "field", "Sample[field]");
                int f = Schema.FieldIndex(field);
                if (f < 0)
                {
                    var names = new string[Schema.Fields.Length];
                    for (int i = 0; i < names.Length; i++) names[i] = Schema.Fields[i].Name;
                    throw new KeyNotFoundException("Sample[field]: schema '" + Schema.Name + "' has no field '" + field + "' (its fields: " + string.Join(", ", names) + ")");
                }
                return Values[f];
            }
        }

        /// <summary>How many doubles a row of a field has (field 0..Schema.Fields.Length-1).</summary>
        public int Width(int field)
        {
            Arg.Index(field, Schema.Fields.Length, "field", "Sample.Width");
            return Schema.Fields[field].ValueCount;
        }

        /// <summary>The row of an entity id (binary search), or -1.</summary>
        public int IndexOf(ulong id)
        {
            int i = Array.BinarySearch(Ids, 0, Count, id);
            return i >= 0 ? i : -1;
        }
    }

    /// <summary>A buffer of views keyed by tick, sampled at a render time in ticks (docs/interpolation.md).
    /// Push every view StreamClient.Receive returns (it is dequantized and copied: the decoder may
    /// reuse the Snapshot); each frame, Sample(t) at t = Newest - delay (+ the time since, in ticks).
    /// Linear fields are interpolated, angles along the shortest arc, rotations and unit vectors by
    /// nlerp, exact data held; past the newest view, linear fields and angles are extrapolated for at
    /// most maxExtrapolation ticks; before the oldest view, the oldest is held.</summary>
    public sealed class Interpolator
    {
        enum Rule : byte { Linear, Angle, Quat, Unit, Step }

        sealed class View
        {
            public long Tick;
            public int Count;
            public ulong[] Ids;
            public double[] Values;     // Count * schema.ValueCount, Schema.Dequantize's layout
        }

        readonly Schema schema;
        readonly int capacity;
        readonly double maxExtrapolation;
        readonly Rule[] rules;          // by value index within a row (Quat / Unit: at the field's first)
        readonly double[] full, lo;     // Angle: the turn and the low end, by value index
        readonly List<View> views = new List<View>();
        readonly double[] qm = new double[4];
        long newest;
        bool any;
        double lastT;
        bool sampled;
        InterpolationStats stats = new InterpolationStats();

        public Interpolator(Schema schema, int capacity = 32, double maxExtrapolation = 2.0)
        {
            if (schema == null) throw new ArgumentNullException("schema");
            if (capacity < 2) throw new ArgumentException("Interpolator: capacity must be an integer of at least 2, got " + capacity, "capacity");
            if (!(maxExtrapolation >= 0.0 && maxExtrapolation < double.PositiveInfinity))
                throw new ArgumentException("Interpolator: maxExtrapolation must be finite and >= 0, got " + maxExtrapolation, "maxExtrapolation");
            this.schema = schema;
            this.capacity = capacity;
            this.maxExtrapolation = maxExtrapolation;
            int nv = schema.ValueCount;
            rules = new Rule[nv];
            full = new double[nv];
            lo = new double[nv];
            foreach (var f in schema.Fields)
            {
                var c = f.Codec;
                if (c.Kind == CodecKind.NearlyZero) c = c.Inner;
                int v = f.FirstValue;
                if (c.Kind == CodecKind.Vector)
                    for (int k = 0; k < c.Components.Length; k++) SetRule(v + k, c.Components[k]);
                else if (c.Kind == CodecKind.Quat)
                    for (int k = 0; k < 4; k++) rules[v + k] = Rule.Quat;
                else if (c.Kind == CodecKind.UnitVector)
                    for (int k = 0; k < 3; k++) rules[v + k] = Rule.Unit;
                else SetRule(v, c);
            }
        }

        void SetRule(int v, Codec c)
        {
            switch (c.Kind)
            {
                case CodecKind.Bounded: case CodecKind.Fixed: case CodecKind.PowerCurve: case CodecKind.Half: case CodecKind.Grid:
                    rules[v] = Rule.Linear; break;
                case CodecKind.UInt: case CodecKind.Int: case CodecKind.IntRange: case CodecKind.Enum: case CodecKind.Bool:
                    rules[v] = Rule.Step; break;
                case CodecKind.Angle:
                    rules[v] = Rule.Angle;
                    full[v] = c.Unit == "deg" ? 360.0 : Codec.TwoPi;
                    lo[v] = c.Signed ? -full[v] / 2.0 : 0.0;
                    break;
                default: throw new ArgumentException("Interpolator: no interpolation rule for " + c.Kind);
            }
        }

        public Schema Schema { get { return schema; } }
        public int Capacity { get { return capacity; } }
        public double MaxExtrapolation { get { return maxExtrapolation; } }
        public InterpolationStats Stats { get { return stats; } }
        /// <summary>How many views the buffer holds.</summary>
        public int Count { get { return views.Count; } }
        /// <summary>The newest tick pushed (unwrapped), or null before the first view.</summary>
        public long? Newest { get { return any ? newest : (long?)null; } }
        /// <summary>The oldest tick held, or null when empty.</summary>
        public long? Oldest { get { return views.Count > 0 ? views[0].Tick : (long?)null; } }

        /// <summary>The unwrapped tick of a 16-bit seq, relative to the newest view pushed.</summary>
        public long Tick(int seq)
        {
            seq &= 0xFFFF;
            if (!any) return seq;
            long d = (seq - newest) & 0xFFFF;
            return newest + (d >= 0x8000 ? d - 0x10000 : d);
        }

        /// <summary>Forgets every view and the latest render time (Stats go on counting): the next view
        /// pushed starts a new timeline, its tick its Seq. Call it when the client adopts a new stream
        /// (StreamClient.StreamId changes): a restarted server counts its ticks from its own start, and
        /// its views, unwrapped against the old stream's newest, would be older than every view of a
        /// full buffer and dropped (docs/interpolation.md, reset()).</summary>
        public void Reset()
        {
            views.Clear();
            newest = 0;
            any = false;
            lastT = 0.0;
            sampled = false;
        }

        /// <summary>Adds a view (as StreamClient.Receive returns it; its values are copied). False
        /// when it is dropped: its tick is held already, or the buffer is full and it is older than
        /// every view held. A view does not outlive its decoder: SnapshotDecoder.Dispose (and
        /// StreamClient.Dispose) leaves every view it returned empty, so such a view (or a Clone made
        /// of it after Dispose) is refused with ArgumentException (ParamName "view") and nothing
        /// changes; Clone() before Dispose what is to be pushed after it.</summary>
        public bool Push(Snapshot view)
        {
            if (view == null) throw new ArgumentNullException("view");
            if (view.Released)
                throw new ArgumentException("Interpolator.Push: the view's decoder was disposed, which left it empty (seq " + view.Seq
                    + "): push views before Dispose, or Clone() them before it", "view");
            if (!ReferenceEquals(view.Schema, schema) && view.Schema.Fingerprint != schema.Fingerprint)
                throw new ArgumentException("Interpolator.Push: the view is of another schema", "view");
            long t = Tick(view.Seq);
            int i = 0;
            while (i < views.Count && views[i].Tick < t) i++;
            if ((i < views.Count && views[i].Tick == t) || (views.Count >= capacity && i == 0))
            {
                stats.Dropped++;
                return false;
            }
            if (sampled && t <= lastT) stats.Late++;
            int n = view.Count, nv = schema.ValueCount;
            var e = new View { Tick = t, Count = n, Ids = new ulong[n], Values = new double[n * nv] };
            Array.Copy(view.Ids, e.Ids, n);
            for (int r = 0; r < n; r++) schema.Dequantize(view.Codes, r * view.SlotCount, e.Values, r * nv);
            views.Insert(i, e);
            if (views.Count > capacity) views.RemoveAt(0);
            if (!any || t > newest) { newest = t; any = true; }
            stats.Pushed++;
            return true;
        }

        /// <summary>Every entity's values at render time t (ticks). InvalidOperationException before
        /// the first view.</summary>
        public Sample Sample(double t) { return Sample(t, null); }

        /// <summary>Sample(t) into a sample this interpolator returned before (its arrays reused, grown
        /// when too small: no allocation once they fit; read the first Count rows), or a new one when
        /// reuse is null. The values of reuse are overwritten.</summary>
        public Sample Sample(double t, Sample reuse)
        {
            if (reuse != null && !ReferenceEquals(reuse.Schema, schema))
                throw new ArgumentException("Interpolator.Sample: the sample to reuse is of another interpolator's schema", "reuse");
            if (views.Count == 0) throw new InvalidOperationException("Interpolator.Sample: no view pushed yet");
            if (!double.IsNaN(t))           // (a NaN is no render time: it leaves the latest one)
            {
                lastT = !sampled || t > lastT ? t : lastT;
                sampled = true;
            }
            int ia = -1;
            for (int i = 0; i < views.Count; i++) if (views[i].Tick <= t) ia = i;
            if (ia < 0)
            {
                stats.Early++;
                return Make(views[0], null, null, 0.0, Mode.Hold, reuse);
            }
            var a = views[ia];
            if (ia + 1 < views.Count)
            {
                var b = views[ia + 1];
                double alpha = (t - a.Tick) / (double)(b.Tick - a.Tick);
                return Make(a, b, b.Tick, alpha, Mode.Between, reuse);
            }
            if (ia == 0 || t == a.Tick) return Make(a, null, null, 0.0, Mode.Hold, reuse);
            stats.Extrapolated++;
            var p = views[ia - 1];
            double e = Math.Min(t - a.Tick, maxExtrapolation);
            double x = e / (double)(a.Tick - p.Tick);
            return Make(a, p, null, x, Mode.Extrapolate, reuse);
        }

        enum Mode { Hold, Between, Extrapolate }

        Sample Make(View a, View o, long? b, double x, Mode how, Sample into)
        {
            int n = a.Count, nv = schema.ValueCount;
            var fields = schema.Fields;
            var smp = into ?? new Sample(schema);
            smp.Set(n, a.Tick, b, x, stats);
            var values = smp.Values;
            Array.Copy(a.Ids, smp.Ids, n);
            int j = 0;      // both id lists ascend: a merge walk finds each entity's row in o
            for (int r = 0; r < n; r++)
            {
                ulong id = a.Ids[r];
                int ro = -1;
                if (o != null && how != Mode.Hold)
                {
                    while (j < o.Count && o.Ids[j] < id) j++;
                    if (j < o.Count && o.Ids[j] == id) ro = j;
                }
                int ba = r * nv;
                for (int f = 0; f < fields.Length; f++)
                {
                    var fld = fields[f];
                    int w = fld.ValueCount, v0 = fld.FirstValue;
                    var dst = values[f];
                    int d0 = r * w;
                    if (ro < 0)
                    {
                        Array.Copy(a.Values, ba + v0, dst, d0, w);
                        continue;
                    }
                    Mix(a.Values, ba + v0, o.Values, ro * nv + v0, v0, w, x, how, dst, d0);
                }
            }
            return smp;
        }

        void Mix(double[] va, int ia, double[] vo, int io, int v0, int w, double x, Mode how, double[] dst, int d0)
        {
            var rule = rules[v0];
            if (rule == Rule.Quat || rule == Rule.Unit)
            {
                if (how == Mode.Extrapolate) { Array.Copy(va, ia, dst, d0, w); return; }
                Nlerp(va, ia, vo, io, w, x, rule == Rule.Quat, dst, d0);
                return;
            }
            for (int k = 0; k < w; k++)
            {
                double xa = va[ia + k], xo = vo[io + k];
                int v = v0 + k;
                switch (rules[v])
                {
                    case Rule.Step:
                        dst[d0 + k] = xa;
                        break;
                    case Rule.Linear:
                        if (how == Mode.Between) { double dd = xo - xa; double m = dd * x; dst[d0 + k] = xa + m; }
                        else { double dd = xa - xo; double m = dd * x; dst[d0 + k] = xa + m; }
                        break;
                    default:    // Angle
                        {
                            double dd = how == Mode.Between ? xo - xa : xa - xo;
                            double m = Shortest(dd, full[v]) * x;
                            dst[d0 + k] = Wrap(xa + m, full[v], lo[v]);
                            break;
                        }
                }
            }
        }

        /// <summary>d wrapped into [-full/2, full/2).</summary>
        static double Shortest(double d, double full)
        {
            double k = Math.Floor(d / full + 0.5);
            double m = full * k;
            return d - m;
        }

        /// <summary>v wrapped into [lo, lo + full).</summary>
        static double Wrap(double v, double full, double lo)
        {
            double k = Math.Floor((v - lo) / full);
            double m = full * k;
            return v - m;
        }

        void Nlerp(double[] va, int ia, double[] vo, int io, int w, double x, bool hemisphere, double[] dst, int d0)
        {
            double sign = 1.0;
            if (hemisphere)
            {
                double dot = 0.0;
                for (int k = 0; k < w; k++) { double m = va[ia + k] * vo[io + k]; dot = dot + m; }
                if (dot < 0.0) sign = -1.0;
            }
            double n = 0.0;
            for (int k = 0; k < w; k++)
            {
                double a = va[ia + k], b = sign < 0.0 ? -vo[io + k] : vo[io + k];
                double dd = b - a;
                double m = dd * x;
                double q = a + m;
                qm[k] = q;
                double qq = q * q;
                n = n + qq;
            }
            n = Math.Sqrt(n);
            if (n == 0.0) { Array.Copy(va, ia, dst, d0, w); return; }
            for (int k = 0; k < w; k++) dst[d0 + k] = qm[k] / n;
        }
    }
}
