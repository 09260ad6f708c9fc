// Snapshot interpolation (Runtime/Interpolator.cs, docs/interpolation.md): the kit's
// interpolation/pose.json replayed bit for bit, and the buffer's cases one by one.
using System;
using System.Collections.Generic;
using System.IO;
using QuantCodec;

static partial class Tests
{
    static void InterpKit()
    {
        var kit = Load("conformance/interpolation/pose.json");
        var schema = Schema.Load(Path.Combine(root, "conformance", kit.Get("schema").Text));
        int cap = int.Parse(kit.Get("capacity").Text);
        var ip = new Interpolator(schema, capacity: cap, maxExtrapolation: KitFloat(kit.Get("max_extrapolation")));
        var ipr = new Interpolator(schema, capacity: cap, maxExtrapolation: KitFloat(kit.Get("max_extrapolation")));
        Sample reused = null;       // the same pushes, sampled into one reused Sample
        int nslots = schema.Slots.Length, op = 0, powExact = 0, powNear = 0, pushes = 0, resets = 0;
        bool afterReset = false;
        foreach (var o in kit.Get("ops").Items)
        {
            op++;
            var reset = o.Get("reset");
            if (reset != null)
            {
                // a new stream: every view and the latest render time forgotten, the stats kept
                var before = ip.Stats;
                ip.Reset();
                ipr.Reset();
                resets++;
                afterReset = true;
                Check(reset.Type == JsonType.Bool && reset.BoolValue, "interpolation op " + op + ": reset is true");
                Check(ip.Count == 0 && ip.Newest == null && ip.Oldest == null && ip.Stats.Equals(before) && ipr.Count == 0,
                      "interpolation op " + op + ": reset empties the buffer and keeps the stats (" + ip.Stats + ")");
                Check(Throws<InvalidOperationException>(() => ip.Sample(0.0)), "interpolation op " + op + ": no sample after a reset before a push");
                continue;
            }
            var push = o.Get("push");
            if (push != null)
            {
                var ids = push.Get("ids").Items;
                var rows = push.Get("codes").Items;
                var view = new Snapshot(schema, ids.Count) { Seq = int.Parse(push.Get("seq").Text), Count = ids.Count };
                bool ok = rows.Count == ids.Count;
                for (int r = 0; ok && r < ids.Count; r++)
                {
                    ulong id; ok = Carrier(BigCode(ids[r]), out id);
                    view.Ids[r] = id;
                    var row = rows[r].Items;
                    ok = ok && row.Count == nslots;
                    for (int s = 0; ok && s < nslots; s++) { ulong c; ok = Carrier(BigCode(row[s]), out c); view.Codes[r * nslots + s] = c; }
                }
                Check(ok, "interpolation op " + op + ": the push's codes read");
                bool kept = ip.Push(view);
                pushes++;
                Check(ipr.Push(view) == kept, "interpolation op " + op + ": the same answer twice");
                Check(kept == o.Get("kept").BoolValue, "interpolation op " + op + ": push seq " + view.Seq + " kept " + kept);
                if (afterReset)     // the first push after a reset: a new timeline, its tick its seq
                    Check(kept && ip.Newest == view.Seq && ip.Count == 1, "interpolation op " + op + ": the first push after a reset starts a new timeline at its seq " + view.Seq + " (newest " + ip.Newest + ")");
                afterReset = false;
                continue;
            }
            double t = KitFloat(o.Get("sample"));
            var smp = ip.Sample(t);
            string at = "interpolation op " + op + " (t " + t.ToString("R") + "): ";
            var prev = reused;
            reused = ipr.Sample(t, reused);
            bool sameR = (prev == null || ReferenceEquals(prev, reused)) && reused.A == smp.A && reused.B == smp.B
                         && Bits(reused.Alpha) == Bits(smp.Alpha) && reused.Count == smp.Count && reused.Stats.Equals(smp.Stats);
            for (int i = 0; sameR && i < smp.Count; i++) sameR = reused.Ids[i] == smp.Ids[i];
            for (int f = 0; sameR && f < schema.Fields.Length; f++)
                for (int k = 0; sameR && k < smp.Count * smp.Width(f); k++) sameR = Bits(reused.Values[f][k]) == Bits(smp.Values[f][k]);
            Check(sameR, at + "a reused Sample holds what a new one does");
            Check(smp.A == long.Parse(o.Get("a").Text), at + "a " + smp.A);
            var wb = o.Get("b");
            Check(wb.Type == JsonType.Null ? smp.B == null : smp.B == long.Parse(wb.Text), at + "b " + smp.B);
            Check(Bits(smp.Alpha) == Bits(KitFloat(o.Get("alpha"))), at + "alpha " + Hex(Bits(smp.Alpha)));
            var wids = o.Get("ids").Items;
            bool idsEq = wids.Count == smp.Count && smp.Ids.Length == smp.Count;
            for (int i = 0; idsEq && i < wids.Count; i++) idsEq = smp.Ids[i] == ulong.Parse(wids[i].Text);
            Check(idsEq, at + "ids");
            var st = o.Get("stats");
            Check(smp.Stats.Pushed == long.Parse(st.Get("pushed").Text) && smp.Stats.Dropped == long.Parse(st.Get("dropped").Text)
                  && smp.Stats.Late == long.Parse(st.Get("late").Text) && smp.Stats.Extrapolated == long.Parse(st.Get("extrapolated").Text)
                  && smp.Stats.Early == long.Parse(st.Get("early").Text), at + "stats " + smp.Stats);
            var vals = o.Get("values");
            Check(vals.Members.Count == schema.Fields.Length, at + "every field given");
            foreach (var m in vals.Members)
            {
                int f = schema.FieldIndex(m.Key);
                var fld = schema.Fields[f];
                var got = smp.Values[f];
                int w = smp.Width(f);
                var wrows = m.Value.Items;
                bool eq = wrows.Count == smp.Count && got.Length == smp.Count * w;
                for (int r = 0; eq && r < wrows.Count; r++)
                {
                    var wr = wrows[r].Items;
                    eq = wr.Count == w;
                    for (int k = 0; eq && k < w; k++)
                    {
                        double want = KitFloat(wr[k]), g = got[r * w + k];
                        if (IsPowerCurve(fld.Codec, k))
                        {
                            eq = Bits(g) == Bits(want) || Math.Abs(g - want) <= 1e-12 * Math.Abs(want);
                            if (Bits(g) == Bits(want)) powExact++; else powNear++;
                        }
                        else
                            eq = Bits(g) == Bits(want);
                        if (!eq) Console.WriteLine("  " + m.Key + "[" + r + "][" + k + "] " + Hex(Bits(g)) + " want " + wr[k].Text);
                    }
                }
                Check(eq, at + m.Key + " values");
            }
        }
        Check(powNear == 0 || powExact > 0, "PowerCurve values: " + powExact + " bit for bit, " + powNear + " within 1e-12");
        if (powNear > 0) Console.WriteLine("  (interpolation kit: " + powNear + " PowerCurve values within 1e-12, not bit for bit)");
        var end = ip.Stats;
        Check(end.Pushed + end.Dropped == pushes && end.Dropped >= 1 && end.Late >= 1 && end.Extrapolated >= 1 && end.Early >= 1,
            "interpolation kit reaches drops, late views, extrapolation and early samples: " + end);
        Check(resets >= 1, "interpolation kit: a reset, then a new timeline (" + resets + " resets)");
    }

    /// <summary>Whether value k of a field is a PowerCurve's (the kit's relative tolerance: a C pow).</summary>
    static bool IsPowerCurve(Codec c, int k)
    {
        if (c.Kind == CodecKind.NearlyZero) c = c.Inner;
        if (c.Kind == CodecKind.Vector) c = c.Components[k];
        return c.Kind == CodecKind.PowerCurve;
    }

    // ------------------------------------------------------------------------------ unit cases

    static Schema InterpSchema()
    {
        return new Schema("Body", new List<KeyValuePair<string, Codec>>
        {
            new KeyValuePair<string, Codec>("x", Codec.Bounded(-64, 64, 16)),
            new KeyValuePair<string, Codec>("yaw", Codec.Angle(12)),
            new KeyValuePair<string, Codec>("heading", Codec.Angle(10, true, "deg")),
            new KeyValuePair<string, Codec>("rot", Codec.Quat(9)),
            new KeyValuePair<string, Codec>("dir", Codec.UnitVector(10)),
            new KeyValuePair<string, Codec>("hp", Codec.UInt(8)),
            new KeyValuePair<string, Codec>("on", Codec.Bool()),
        });
    }

    /// <summary>A view at seq with one entity a row: (id, x, yaw, heading, rot xyzw, dir xyz, hp, on).</summary>
    static Snapshot InterpView(Schema s, int seq, params double[][] rows)
    {
        var v = new Snapshot(s, rows.Length) { Seq = seq & 0xFFFF, Count = rows.Length };
        for (int r = 0; r < rows.Length; r++)
        {
            v.Ids[r] = (ulong)rows[r][0];
            var vals = new double[s.ValueCount];
            Array.Copy(rows[r], 1, vals, 0, s.ValueCount);
            var codes = s.Quantize(vals);
            Array.Copy(codes, 0, v.Codes, r * s.Slots.Length, codes.Length);
        }
        return v;
    }

    static double[] Ent(double id, double x, double yaw = 0, double heading = 0, double qx = 0, double qy = 0, double qz = 0, double qw = 1,
                        double hp = 100, double on = 1)
    {
        return new[] { id, x, yaw, heading, qx, qy, qz, qw, 0, 0, 1, hp, on };
    }

    /// <summary>A value as the view holds it (quantized and back).</summary>
    static double Q(Schema s, string field, double x) { return s.Fields[s.FieldIndex(field)].Codec.Dequantize(s.Fields[s.FieldIndex(field)].Codec.Quantize(x)); }

    static void InterpUnits()
    {
        var s = InterpSchema();
        double x0 = Q(s, "x", 1.0), x1 = Q(s, "x", 3.0), x2 = Q(s, "x", 5.0);

        // between two views: x0 + (x1 - x0) * alpha; hp and on held from A
        var ip = new Interpolator(s, capacity: 4, maxExtrapolation: 2.0);
        Check(Throws<InvalidOperationException>(() => ip.Sample(0)), "sample before any view throws");
        Check(ip.Newest == null && ip.Count == 0, "an empty buffer has no newest tick");
        Check(ip.Push(InterpView(s, 10, Ent(1, 1.0, hp: 100, on: 1))), "first view kept");
        Check(ip.Push(InterpView(s, 11, Ent(1, 3.0, hp: 50, on: 0))), "second view kept");
        var m = ip.Sample(10.25);
        Check(m.A == 10 && m.B == 11 && m.Alpha == 0.25, "between: a 10, b 11, alpha 0.25");
        Check(Bits(m["x"][0]) == Bits(x0 + (x1 - x0) * 0.25), "between: x lerped");
        Check(m["hp"][0] == 100 && m["on"][0] == 1.0, "between: integers and bools held from A");
        var h = ip.Sample(11);
        Check(h.A == 11 && h.B == null && h.Alpha == 0 && Bits(h["x"][0]) == Bits(x1) && h["hp"][0] == 50, "at the newest tick: held");

        // late: a view whose tick is at or before a render time already sampled is kept, counted late
        Check(ip.Push(InterpView(s, 12, Ent(1, 5.0))), "a view after the render time kept");
        Check(ip.Stats.Late == 0, "not late");
        var ip2 = new Interpolator(s, capacity: 4);
        ip2.Push(InterpView(s, 10, Ent(1, 1.0)));
        ip2.Push(InterpView(s, 13, Ent(1, 5.0)));
        ip2.Sample(11.5);
        Check(ip2.Push(InterpView(s, 11, Ent(1, 3.0))) && ip2.Stats.Late == 1, "a view at a tick already passed: kept, late");
        Check(ip2.Push(InterpView(s, 12, Ent(1, 4.0))) && ip2.Stats.Late == 1, "a view after the latest render time: not late");
        var l = ip2.Sample(11.5);
        Check(l.A == 11 && l.B == 12 && l.Alpha == 0.5, "the late view serves later samples as A");

        // missing: a lost tick is bridged by the views around it
        var ip3 = new Interpolator(s);
        ip3.Push(InterpView(s, 20, Ent(1, 1.0)));
        ip3.Push(InterpView(s, 23, Ent(1, 5.0)));
        var g = ip3.Sample(21.5);
        Check(g.A == 20 && g.B == 23 && g.Alpha == 0.5 && Bits(g["x"][0]) == Bits(x0 + (x2 - x0) * 0.5), "missing views: bridged, alpha over the gap");
        Check(ip3.Stats.Extrapolated == 0, "a gap is not extrapolation");

        // reordered: views pushed out of order are sorted by tick
        var ip4 = new Interpolator(s);
        ip4.Push(InterpView(s, 32, Ent(1, 5.0)));
        ip4.Push(InterpView(s, 30, Ent(1, 1.0)));
        ip4.Push(InterpView(s, 31, Ent(1, 3.0)));
        Check(ip4.Newest == 32 && ip4.Oldest == 30 && ip4.Count == 3, "reordered: sorted, newest 32");
        var r1 = ip4.Sample(30.5);
        Check(r1.A == 30 && r1.B == 31 && Bits(r1["x"][0]) == Bits(x0 + (x1 - x0) * 0.5), "reordered: bracketing views found");

        // duplicated: dropped, counted
        Check(!ip4.Push(InterpView(s, 31, Ent(1, 9.0))) && ip4.Stats.Dropped == 1 && ip4.Stats.Pushed == 3, "a duplicate tick dropped");
        Check(Bits(ip4.Sample(30.5)["x"][0]) == Bits(r1["x"][0]), "a duplicate does not replace the view held");

        // capacity: the oldest dropped when over; older than every view of a full buffer: dropped
        var ip5 = new Interpolator(s, capacity: 2);
        ip5.Push(InterpView(s, 1, Ent(1, 1.0)));
        ip5.Push(InterpView(s, 2, Ent(1, 3.0)));
        Check(!ip5.Push(InterpView(s, 0, Ent(1, 0.0))) && ip5.Stats.Dropped == 1, "older than every view of a full buffer: dropped");
        Check(ip5.Push(InterpView(s, 3, Ent(1, 5.0))) && ip5.Oldest == 2 && ip5.Count == 2, "over capacity: the oldest goes");
        Check(Throws<ArgumentException>(() => new Interpolator(s, capacity: 1)), "capacity 1 refused");
        Check(Throws<ArgumentException>(() => new Interpolator(s, maxExtrapolation: -1)), "negative extrapolation refused");
        Check(Throws<ArgumentException>(() => new Interpolator(s, maxExtrapolation: double.PositiveInfinity)), "infinite extrapolation refused");
        Check(Throws<ArgumentException>(() => new Interpolator(s, maxExtrapolation: double.NaN)), "NaN extrapolation refused");

        // seq wrap: 65535 -> 0 unwraps to 65536; an older seq across the wrap unwraps below
        var ip6 = new Interpolator(s);
        ip6.Push(InterpView(s, 65535, Ent(1, 1.0)));
        ip6.Push(InterpView(s, 0, Ent(1, 3.0)));
        Check(ip6.Newest == 65536 && ip6.Tick(65534) == 65534 && ip6.Tick(5) == 65541, "ticks unwrap across 65535 -> 0");
        var w = ip6.Sample(65535.5);
        Check(w.A == 65535 && w.B == 65536 && w.Alpha == 0.5, "sampled across the wrap");

        // angle wrap: 350 deg -> 10 deg goes through 0, not back through 180
        double hA = Q(s, "heading", 170.0), hB = Q(s, "heading", -170.0);
        var ip7 = new Interpolator(s);
        ip7.Push(InterpView(s, 1, Ent(1, 0, yaw: 6.2, heading: 170.0)));
        ip7.Push(InterpView(s, 2, Ent(1, 0, yaw: 0.1, heading: -170.0)));
        var an = ip7.Sample(1.5);
        double yA = Q(s, "yaw", 6.2), yB = Q(s, "yaw", 0.1), tp = 2 * Math.PI;
        double dy = yB - yA; dy = dy - tp * Math.Floor(dy / tp + 0.5);
        double ym = yA + dy * 0.5; ym = ym - tp * Math.Floor(ym / tp);
        Check(Bits(an["yaw"][0]) == Bits(ym) && (an["yaw"][0] > 6.0 || an["yaw"][0] < 0.3), "yaw (rad, unsigned) along the short arc through 0: " + an["yaw"][0]);
        double dh = hB - hA; dh = dh - 360.0 * Math.Floor(dh / 360.0 + 0.5);
        double hm = hA + dh * 0.5; hm = hm - 360.0 * Math.Floor((hm + 180.0) / 360.0);
        Check(Bits(an["heading"][0]) == Bits(hm) && Math.Abs(Math.Abs(hm) - 180.0) < 1.0, "heading (deg, signed) through 180: " + an["heading"][0]);
        var ae = ip7.Sample(2.5);
        Check(ae.B == null && ae.Alpha == 0.5 && an["yaw"][0] >= 0 && ae["yaw"][0] >= 0 && ae["yaw"][0] < tp, "an extrapolated angle stays wrapped: " + ae["yaw"][0]);

        // a rotation near q / -q: two views' rotations 2 degrees apart as rotations, decoded (each with
        // its largest component positive) as q and nearly -q; nlerp negates B and takes the short way
        double d44 = 44.0 * Math.PI / 180.0, d134 = 134.0 * Math.PI / 180.0;
        var ip8 = new Interpolator(s);
        ip8.Push(InterpView(s, 1, Ent(1, 0, qx: Math.Cos(d44), qy: 0, qz: 0, qw: -Math.Sin(d44))));
        ip8.Push(InterpView(s, 2, Ent(1, 0, qx: Math.Cos(d134), qy: 0, qz: 0, qw: Math.Sin(d134))));
        var qa = ip8.Sample(1)["rot"]; var qb = ip8.Sample(2)["rot"];
        Check(qa[0] * qb[0] + qa[1] * qb[1] + qa[2] * qb[2] + qa[3] * qb[3] < -0.99, "the two views' rotations are near q and -q (dot < 0)");
        var qv = ip8.Sample(1.5)["rot"];
        double n2 = qv[0] * qv[0] + qv[1] * qv[1] + qv[2] * qv[2] + qv[3] * qv[3];
        Check(Math.Abs(n2 - 1.0) < 1e-12, "near q / -q: a unit quaternion");
        Check(Math.Abs(qv[0] - Math.Sqrt(0.5)) < 0.01 && Math.Abs(qv[3] + Math.Sqrt(0.5)) < 0.01,
            "near q / -q: halfway between -44 and -46 degrees, not a half turn away: " + qv[0] + " " + qv[1] + " " + qv[2] + " " + qv[3]);
        double[] nb = { -qb[0], -qb[1], -qb[2], -qb[3] }, want = new double[4];
        double nn = 0.0;
        for (int k = 0; k < 4; k++) { want[k] = qa[k] + (nb[k] - qa[k]) * 0.5; nn = nn + want[k] * want[k]; }
        nn = Math.Sqrt(nn);
        bool same = true;
        for (int k = 0; k < 4; k++) same &= Bits(qv[k]) == Bits(want[k] / nn);
        Check(same, "near q / -q: nlerp's bits, B negated");
        Check(Bits(ip8.Sample(2.5)["rot"][3]) == Bits(ip8.Sample(2)["rot"][3]), "rotations held when extrapolating");
        var dv = ip8.Sample(1.5)["dir"];
        Check(Math.Abs(dv[0] * dv[0] + dv[1] * dv[1] + dv[2] * dv[2] - 1.0) < 1e-12, "unit vectors nlerped to unit length");

        // extrapolation capped at maxExtrapolation ticks, then held
        var ip9 = new Interpolator(s, capacity: 8, maxExtrapolation: 2.0);
        ip9.Push(InterpView(s, 40, Ent(1, 1.0, hp: 7)));
        ip9.Push(InterpView(s, 41, Ent(1, 3.0, hp: 8)));
        var e1 = ip9.Sample(42.0);
        Check(e1.A == 41 && e1.B == null && e1.Alpha == 1.0 && Bits(e1["x"][0]) == Bits(x1 + (x1 - x0) * 1.0) && e1["hp"][0] == 8,
            "extrapolated one tick: x1 + (x1 - x0)");
        var e2 = ip9.Sample(50.0);
        Check(e2.Alpha == 2.0 && Bits(e2["x"][0]) == Bits(x1 + (x1 - x0) * 2.0), "extrapolation capped at 2 ticks");
        Check(ip9.Stats.Extrapolated == 2, "extrapolated counted: " + ip9.Stats);
        var one = new Interpolator(s);
        one.Push(InterpView(s, 5, Ent(1, 1.0)));
        var h1 = one.Sample(9.0);
        Check(h1.A == 5 && h1.B == null && h1.Alpha == 0 && one.Stats.Extrapolated == 0, "one view alone: held, not extrapolated");

        // before the oldest: the oldest held, counted early
        var b0 = ip9.Sample(30.0);
        Check(b0.A == 40 && b0.B == null && b0.Alpha == 0 && Bits(b0["x"][0]) == Bits(x0) && ip9.Stats.Early == 1, "before the oldest: the oldest held, early");

        // entities: one that left after A holds A's values; one only in B appears when B is A
        var ip10 = new Interpolator(s);
        ip10.Push(InterpView(s, 1, Ent(1, 1.0), Ent(2, 1.0)));
        ip10.Push(InterpView(s, 2, Ent(2, 3.0), Ent(3, 5.0)));
        var en = ip10.Sample(1.5);
        Check(en.Count == 2 && en.Ids[0] == 1 && en.Ids[1] == 2 && Bits(en["x"][0]) == Bits(x0)
              && Bits(en["x"][1]) == Bits(x0 + (x1 - x0) * 0.5) && en.IndexOf(3) == -1 && en.IndexOf(2) == 1,
            "a leaving entity held, a staying one blended, an arriving one not yet shown");
        var en2 = ip10.Sample(2.0);
        Check(en2.Count == 2 && en2.Ids[0] == 2 && en2.Ids[1] == 3, "the arriving entity shown once its view is A");

        // a reused Sample: the same object, its arrays kept once they fit
        var rs = ip10.Sample(1.5, null);
        var idsArr = rs.Ids; var xArr = rs.Values[0];
        Check(ReferenceEquals(ip10.Sample(2.0, rs), rs) && ReferenceEquals(rs.Ids, idsArr) && ReferenceEquals(rs.Values[0], xArr)
              && rs.Count == 2 && rs.Ids[0] == 2 && rs.A == 2, "Sample(t, reuse) fills the sample given, without new arrays");
        var otherIp = new Interpolator(InterpSchema());
        otherIp.Push(InterpView(otherIp.Schema, 1, Ent(1, 1.0)));
        var otherSample = otherIp.Sample(1.0);
        Check(Throws<ArgumentException>(() => ip10.Sample(1.5, otherSample)), "a sample of another interpolator's schema is not reused");

        // the view is copied: the decoder may reuse the Snapshot
        var ip11 = new Interpolator(s);
        var reused = InterpView(s, 1, Ent(1, 1.0));
        ip11.Push(reused);
        var other = InterpView(s, 2, Ent(1, 5.0));
        Array.Copy(other.Codes, reused.Codes, other.Codes.Length);
        reused.Seq = 2;
        ip11.Push(reused);
        Check(Bits(ip11.Sample(1)["x"][0]) == Bits(x0), "a pushed view is copied, not referenced");
        Check(Throws<ArgumentException>(() => ip11.Push(new Snapshot(new Schema("Other", new List<KeyValuePair<string, Codec>>
            { new KeyValuePair<string, Codec>("x", Codec.Bool()) }), 1))), "a view of another schema refused");
        InterpDisposedViews();
    }

    /// <summary>Reset (docs/interpolation.md, reset(); Python's test_interpolation.py
    /// test_reset_starts_a_new_timeline_for_a_new_stream): a restarted server's ticks start again
    /// from its own start; unwrapped against the old stream's newest they are older than every view
    /// of a full buffer, and dropped; after Reset() they are the timeline, and the stats go on.</summary>
    static void InterpReset()
    {
        var s = new Schema("S", new List<KeyValuePair<string, Codec>> { new KeyValuePair<string, Codec>("x", Codec.Bounded(0, 100, 16)) });
        Func<int, double, Snapshot> view = (seq, x) =>
        {
            var v = new Snapshot(s, 1) { Seq = seq & 0xFFFF, Count = 1 };
            v.Ids[0] = 1;
            var codes = s.Quantize(new[] { x });
            Array.Copy(codes, v.Codes, codes.Length);
            return v;
        };
        var ip = new Interpolator(s, capacity: 4);
        bool all = true;
        for (int k = 3596; k < 3600; k++) all &= ip.Push(view(k, k % 100));
        Check(all && ip.Count == 4 && ip.Newest == 3599 && ip.Oldest == 3596, "reset: a full buffer at ticks 3596..3599");
        ip.Sample(3598.5);
        Check(!ip.Push(view(0, 10.0)) && ip.Count == 4 && ip.Newest == 3599, "reset: the new stream's first view (seq 0) is dropped: older than every view held");
        var before = ip.Stats;
        ip.Reset();
        Check(ip.Count == 0 && ip.Newest == null && ip.Oldest == null && ip.Stats.Equals(before), "reset: every view forgotten, the stats kept (" + ip.Stats + ")");
        Check(Throws<InvalidOperationException>(() => ip.Sample(0.0)) && ip.Stats.Equals(before), "reset: Sample before a new push throws InvalidOperationException");
        Check(ip.Tick(5) == 5, "reset: Tick(seq) is seq again (no newest)");
        Check(ip.Push(view(0, 10.0)) && ip.Newest == 0 && ip.Push(view(1, 20.0)) && ip.Newest == 1 && ip.Count == 2,
              "reset: the new stream's views kept, a new timeline at their seqs (newest " + ip.Newest + ")");
        var got = ip.Sample(0.5);
        Check(got.A == 0 && got.B == 1 && got.Alpha == 0.5 && got.Count == 1 && Math.Abs(got["x"][0] - 15.0) < 0.01,
              "reset: the new timeline samples between its views: a " + got.A + ", b " + got.B + ", alpha " + got.Alpha + ", x " + got["x"][0]);
        var st = ip.Stats;
        Check(st.Pushed == 6 && st.Dropped == 1 && st.Late == 0 && st.Extrapolated == 0 && st.Early == 0,
              "reset: the stats go on counting (the latest render time forgotten: no view late): " + st);
        // Reset of an empty buffer, and twice: nothing to forget, nothing breaks
        var e = new Interpolator(s);
        e.Reset();
        e.Reset();
        Check(e.Count == 0 && e.Newest == null && e.Push(view(7, 1.0)) && e.Newest == 7, "reset: of an empty buffer, twice, then a push");
    }

    // A view does not outlive its decoder: Dispose leaves it empty, and Push refuses it (it took it
    // as a real view of no entity, an empty tick, until a tester found it: probe-jscs finding 4).
    static void InterpDisposedViews()
    {
        var s = Schema.Load(Path.Combine(root, "conformance", "schemas", "pose.json"));
        var client = new StreamClient(s, nonce: 1);
        Snapshot last = null, kept = null;
        foreach (var d in ReadDatagrams(Path.Combine(root, "conformance", "streams", "pose_clean.bin")))
        {
            try { var v = client.Receive(d); if (v != null) last = v; } catch (DecodeException) { }
        }
        int n = last.Count;
        kept = last.Clone();
        client.Dispose();
        var ip = new Interpolator(s);
        string param = null;
        try { ip.Push(last); } catch (ArgumentException e) { param = e.ParamName; }
        Check(param == "view" && ip.Count == 0 && ip.Stats.Pushed == 0 && ip.Newest == null,
              "Push of a view whose client was disposed: ArgumentException (view), nothing changed");
        Check(Throws<ArgumentException>(() => ip.Push(last.Clone())) && ip.Count == 0, "Push of a Clone made after Dispose: refused too");
        Check(n > 0 && ip.Push(kept) && ip.Sample(kept.Seq).Count == n, "a Clone made before Dispose pushes, with its entities");
        Check(ip.Push(new Snapshot(s, 0) { Seq = kept.Seq + 1 }) && ip.Sample(kept.Seq + 1).Count == 0, "an empty view of the user's own is still a view");
    }
}

static partial class Tests
{
    // A schema with every interpolation rule the kit's pose schema lacks: Fixed, Half and Grid
    // (linear), angles in degrees and radians, signed and not, a UnitVector, a scalar NearlyZero.
    const string InterpMixedSchema = @"{""name"":""Mix"",""version"":1,""fields"":[
{""name"":""p"",""codec"":{""kind"":""Vector"",""codecs"":[{""kind"":""Fixed"",""step"":0.01,""bits"":16,""signed"":true},{""kind"":""Half""},{""kind"":""Grid"",""cell_size"":8.0,""cell_bits"":6,""offset_bits"":10}]}},
{""name"":""a1"",""codec"":{""kind"":""Angle"",""bits"":12,""signed"":true,""unit"":""deg""}},
{""name"":""a2"",""codec"":{""kind"":""Angle"",""bits"":10,""signed"":true,""unit"":""rad""}},
{""name"":""a3"",""codec"":{""kind"":""Angle"",""bits"":9,""signed"":false,""unit"":""deg""}},
{""name"":""q"",""codec"":{""kind"":""Quat"",""bits"":9}},
{""name"":""u"",""codec"":{""kind"":""UnitVector"",""bits"":9}},
{""name"":""nz"",""codec"":{""kind"":""NearlyZero"",""inner"":{""kind"":""Bounded"",""min"":-20,""max"":20,""bits"":12},""threshold"":0.5}},
{""name"":""n"",""codec"":{""kind"":""UInt"",""bits"":3}},
{""name"":""e"",""codec"":{""kind"":""Enum"",""labels"":[""x"",""y""]}},
{""name"":""b"",""codec"":{""kind"":""Bool""}}]}";

    /// <summary>A Python with numpy for Tests~/interp_reference.py (QC_TEST_PYTHON, else python3), or null.</summary>
    static string NumpyPython()
    {
        foreach (var py in new[] { Environment.GetEnvironmentVariable("QC_TEST_PYTHON"), "python3" })
        {
            if (string.IsNullOrEmpty(py)) continue;
            try
            {
                var psi = new System.Diagnostics.ProcessStartInfo(py, "-c \"import numpy\"")
                { UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true };
                using (var p = System.Diagnostics.Process.Start(psi))
                {
                    p.StandardOutput.ReadToEnd(); p.StandardError.ReadToEnd(); p.WaitForExit();
                    if (p.ExitCode == 0) return py;
                }
            }
            catch (Exception) { }
        }
        return null;
    }

    /// <summary>Random scenarios (views pushed late, reordered, duplicated, missing; entities coming
    /// and going; render times before, between and past the views) replayed by this Interpolator and
    /// by Python's quantcodec/interpolation.py: the same kept flags, ticks, alphas, ids, stats and
    /// value bits.</summary>
    static void InterpPython()
    {
        string py = NumpyPython();
        if (py == null) { Console.WriteLine("  skipped: interpolation against Python: no Python with numpy (QC_PYTHON names one)"); return; }
        var specs = new[] { InterpMixedSchema, File.ReadAllText(Path.Combine(root, "conformance/schemas/pose.json")) };
        var sb = new System.Text.StringBuilder("[");
        var mine = new List<List<string>>();     // per scenario, per op: this client's answer as JSON
        int nsc = 0, resets = 0;
        for (int si = 0; si < specs.Length; si++)
            for (int seed = 1; seed <= 60; seed++)
            {
                var s = Schema.FromJson(specs[si]);
                var rnd = new Random(seed * 7919 + si);
                var ip = new Interpolator(s, capacity: 2 + rnd.Next(7), maxExtrapolation: rnd.Next(4) * 0.75);
                if (nsc++ > 0) sb.Append(',');
                sb.Append("{\"schema\":").Append(specs[si]).Append(",\"capacity\":").Append(ip.Capacity)
                  .Append(",\"max_extrapolation\":\"").Append(Hex(Bits(ip.MaxExtrapolation))).Append("\",\"ops\":[");
                var answers = new List<string>();
                int seq = rnd.Next(65536);
                double t = seq - 3;
                bool fresh = true;      // the next op pushes: the first, and the first after a reset
                for (int op = 0; op < 150; op++)
                {
                    if (op > 0) sb.Append(',');
                    if (!fresh && rnd.Next(50) == 0)
                    {
                        // a new stream: reset, then a new timeline at another seq (a restarted server's)
                        ip.Reset();
                        resets++;
                        seq = rnd.Next(65536);
                        fresh = true;
                        sb.Append("{\"reset\":true}");
                        answers.Add("{\"reset\":true}");
                        continue;
                    }
                    if (fresh || rnd.Next(3) == 0)
                    {
                        fresh = false;
                        int sq = (seq + rnd.Next(-4, 3)) & 0xFFFF;
                        seq = (seq + 1) & 0xFFFF;
                        var ids = new List<ulong>();
                        for (ulong id = 1; id < 8; id++) if (rnd.Next(3) > 0) ids.Add(id);
                        var v = new Snapshot(s, ids.Count) { Seq = sq, Count = ids.Count };
                        sb.Append("{\"push\":").Append(sq).Append(",\"ids\":[").Append(string.Join(",", ids)).Append("],\"rows\":[");
                        for (int r = 0; r < ids.Count; r++)
                        {
                            var vals = RandomValues(s, rnd);
                            var codes = s.Quantize(vals);
                            Array.Copy(codes, 0, v.Codes, r * s.Slots.Length, codes.Length);
                            v.Ids[r] = ids[r];
                            var dq = s.Dequantize(codes);
                            if (r > 0) sb.Append(',');
                            sb.Append('[');
                            for (int k = 0; k < dq.Length; k++) { if (k > 0) sb.Append(','); sb.Append('"').Append(Hex(Bits(dq[k]))).Append('"'); }
                            sb.Append(']');
                        }
                        sb.Append("]}");
                        answers.Add("{\"kept\":" + (ip.Push(v) ? "true" : "false") + "}");
                        continue;
                    }
                    t = ip.Newest.Value - 3 + rnd.NextDouble() * 5.5;
                    if (rnd.Next(15) == 0) t -= 8;
                    if (rnd.Next(10) == 0) t = Math.Floor(t);
                    sb.Append("{\"sample\":\"").Append(Hex(Bits(t))).Append("\"}");
                    var m = ip.Sample(t);
                    var a = new System.Text.StringBuilder();
                    a.Append("{\"a\":").Append(m.A).Append(",\"b\":").Append(m.B == null ? "null" : m.B.ToString())
                     .Append(",\"alpha\":\"").Append(Hex(Bits(m.Alpha))).Append("\",\"ids\":[").Append(string.Join(",", m.Ids)).Append("],\"values\":[");
                    for (int f = 0; f < s.Fields.Length; f++)
                    {
                        if (f > 0) a.Append(',');
                        a.Append('[');
                        for (int k = 0; k < m.Values[f].Length; k++) { if (k > 0) a.Append(','); a.Append('"').Append(Hex(Bits(m.Values[f][k]))).Append('"'); }
                        a.Append(']');
                    }
                    var st = m.Stats;
                    a.Append("],\"stats\":[").Append(st.Pushed).Append(',').Append(st.Dropped).Append(',').Append(st.Late)
                     .Append(',').Append(st.Extrapolated).Append(',').Append(st.Early).Append("]}");
                    answers.Add(a.ToString());
                }
                sb.Append("]}");
                mine.Add(answers);
            }
        sb.Append(']');
        string dir = Path.Combine(here, "build~");
        string src = Path.Combine(dir, "interp_scenarios.json"), dst = Path.Combine(dir, "interp_reference.json");
        File.WriteAllText(src, sb.ToString());
        File.Delete(dst);
        var psi = new System.Diagnostics.ProcessStartInfo(py, "\"" + Path.Combine(here, "Tests~", "interp_reference.py") + "\" \"" + root + "\" \"" + src + "\" \"" + dst + "\"")
        { UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true };
        string err;
        using (var p = System.Diagnostics.Process.Start(psi))
        {
            p.StandardOutput.ReadToEnd(); err = p.StandardError.ReadToEnd(); p.WaitForExit();
            if (p.ExitCode != 0) { Check(false, "interp_reference.py failed: " + err); return; }
        }
        var reference = Json.ParseUtf8(File.ReadAllBytes(dst)).Items;
        Check(reference.Count == mine.Count, "Python answered every scenario");
        int ops = 0, samples = 0, extrap = 0, between = 0;
        for (int i = 0; i < mine.Count && i < reference.Count; i++)
        {
            var want = reference[i].Items;
            bool same = want.Count == mine[i].Count;
            for (int k = 0; same && k < want.Count; k++)
            {
                // Python's json writes ", " and ": ": compare the parsed values re-written compactly
                string w = Compact(want[k]);
                same = w == mine[i][k];
                if (!same) Console.WriteLine("  scenario " + i + " op " + k + ": " + mine[i][k] + "\n    Python: " + w);
                ops++;
                var b = want[k].Get("b");
                if (b != null) { samples++; if (b.Type != JsonType.Null) between++; }
            }
            Check(same, "scenario " + i + ": every op as Python's reference answers it");
            for (int k = want.Count - 1; k >= 0; k--) if (want[k].Get("stats") != null) { extrap += int.Parse(want[k].Get("stats").Items[3].Text); break; }
        }
        Check(samples > 1000 && between > 300 && extrap > 300, "the scenarios reach blends and extrapolation: " + samples + " samples, " + between + " between, " + extrap + " extrapolated");
        Check(resets >= 20, "the scenarios reset the buffer (a new stream) now and then: " + resets + " resets");
        Console.WriteLine("  " + mine.Count + " scenarios, " + ops + " ops (" + resets + " resets) compared with Python's reference");
    }

    static double[] RandomValues(Schema s, Random rnd)
    {
        var vals = new double[s.ValueCount];
        for (int k = 0; k < vals.Length; k++) vals[k] = rnd.NextDouble() * 40 - 20;
        foreach (var f in s.Fields)
        {
            var c = f.Codec;
            if (c.Kind == CodecKind.NearlyZero && rnd.Next(2) == 0) for (int k = 0; k < f.ValueCount; k++) vals[f.FirstValue + k] = 0;
            if (c.Kind == CodecKind.Quat || c.Kind == CodecKind.UnitVector)
            {
                double n = 0;
                for (int k = 0; k < f.ValueCount; k++) n += vals[f.FirstValue + k] * vals[f.FirstValue + k];
                for (int k = 0; k < f.ValueCount; k++) vals[f.FirstValue + k] /= Math.Sqrt(n);
            }
            if (c.Kind == CodecKind.UInt || c.Kind == CodecKind.Bool || c.Kind == CodecKind.Enum) vals[f.FirstValue] = rnd.Next(2);
        }
        return vals;
    }

    static string Compact(JsonValue v)
    {
        switch (v.Type)
        {
            case JsonType.Null: return "null";
            case JsonType.Bool: return v.BoolValue ? "true" : "false";
            case JsonType.Number: return v.Text;
            case JsonType.String: return "\"" + v.Text + "\"";
            case JsonType.Array:
                {
                    var parts = new List<string>();
                    foreach (var x in v.Items) parts.Add(Compact(x));
                    return "[" + string.Join(",", parts) + "]";
                }
            default:
                {
                    var parts = new List<string>();
                    foreach (var m in v.Members) parts.Add("\"" + m.Key + "\":" + Compact(m.Value));
                    return "{" + string.Join(",", parts) + "}";
                }
        }
    }
}
