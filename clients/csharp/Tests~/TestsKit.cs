using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Numerics;
using System.Text;
using QuantCodec;

static partial class Tests
{
    static void KitValues()
    {
        var manifest = Load("conformance/manifest.json");
        foreach (var f in manifest.Get("values").Items)
        {
            var v = Load(Path.Combine("conformance", f.Text));
            var codec = Schema.CodecFromSpec(v.Get("codec"));
            string name = v.Get("name").Text;
            Check(codec.Bits == int.Parse(v.Get("bits").Text) && codec.IsSigned == v.Get("signed").BoolValue, name + ": bits and signedness");
            foreach (var d in v.Get("dequantize").Items)
            {
                ulong c;
                Check(Carrier(BigCode(d.Get("code")), out c) && codec.Valid(c), name + ": code " + d.Get("code").Text + " is valid");
                var got = DequantizeAny(codec, new[] { c });
                var want = d.Get("value").Items;
                bool eq = got.Length == want.Count;
                for (int j = 0; eq && j < got.Length; j++) eq = Bits(got[j]) == Bits(KitFloat(want[j]));
                Check(eq, name + ": dequantize " + d.Get("code").Text + " = " + FmtD(got));
            }
            foreach (var q in v.Get("quantize").Items)
            {
                var inp = q.Get("input").Items;
                ulong got;
                switch (codec.Kind)
                {
                    case CodecKind.Quat: got = codec.QuantizeQuat(KitFloat(inp[0]), KitFloat(inp[1]), KitFloat(inp[2]), KitFloat(inp[3])); break;
                    case CodecKind.UnitVector: got = codec.QuantizeUnitVector(KitFloat(inp[0]), KitFloat(inp[1]), KitFloat(inp[2])); break;
                    default: got = codec.Quantize(KitFloat(inp[0])); break;
                }
                ulong want;
                Carrier(BigCode(q.Get("code")), out want);
                Check(got == want, name + ": quantize " + inp[0].Text + " -> " + (codec.IsSigned ? ((long)got).ToString() : got.ToString()) + ", want " + q.Get("code").Text);
            }
            foreach (var bad in v.Get("invalid").Items)
            {
                ulong c;
                var b = BigCode(bad);
                bool refused = !Carrier(b, out c) || (codec.IsSigned ? !codec.ValidSigned((long)c) || b.Sign >= 0 && b > long.MaxValue : (b.Sign < 0 || !codec.Valid(c)));
                Check(refused, name + ": code " + bad.Text + " is not valid");
            }
        }
    }

    static void KitRecords()
    {
        var manifest = Load("conformance/manifest.json");
        foreach (var f in manifest.Get("records").Items)
        {
            var rec = Load(Path.Combine("conformance", f.Text));
            var schema = Schema.Load(Path.Combine(root, "conformance", rec.Get("schema").Text));
            foreach (var r in rec.Get("valid").Items)
            {
                var bytes = FromHex(r.Get("hex").Text);
                ulong[] codes = null;
                try { codes = schema.DecodeCodes(bytes); }
                catch (DecodeException e) { Check(false, schema.Name + ": valid record " + r.Get("hex").Text + " refused: " + e.Message); continue; }
                var want = r.Get("codes").Items;
                bool eq = want.Count == codes.Length;
                for (int i = 0; eq && i < codes.Length; i++) { ulong c; eq = Carrier(BigCode(want[i]), out c) && c == codes[i]; }
                Check(eq, schema.Name + ": record " + r.Get("hex").Text + " codes");
                Check(ToHex(schema.EncodeCodes(codes)) == r.Get("hex").Text, schema.Name + ": record re-encodes");
                Check(schema.Valid(codes), schema.Name + ": record codes valid");
            }
            foreach (var r in rec.Get("invalid").Items)
            {
                var bytes = FromHex(r.Get("hex").Text);
                Check(Throws<DecodeException>(() => schema.DecodeCodes(bytes)), schema.Name + ": invalid record (" + r.Get("why").Text + ") " + r.Get("hex").Text + " refused");
            }
        }
    }

    static void KitStreams()
    {
        var manifest = Load("conformance/manifest.json");
        foreach (var st in manifest.Get("streams").Items)
        {
            string name = st.Get("name").Text;
            var schema = Schema.Load(Path.Combine(root, "conformance", st.Get("schema").Text));
            var datagrams = ReadDatagrams(Path.Combine(root, "conformance", st.Get("datagrams").Text));
            var expected = File.ReadAllLines(Path.Combine(root, "conformance", st.Get("expected").Text));
            Check(datagrams.Count == expected.Length && datagrams.Count == int.Parse(st.Get("count").Text), name + ": counts");
            byte[] key; long maxBytes; uint? nonce; int idle; string err;
            if (!KitArgs(st, out key, out maxBytes, out nonce, out idle, out err)) { Check(false, name + ": " + err); continue; }
            var client = nonce.HasValue ? new StreamClient(schema, key, maxBytes, nonce.Value) : null;
            var dec = client != null ? client.Decoder : new SnapshotDecoder(schema, key, maxBytes);
            var outcomes = new Dictionary<string, int>();
            int bad = 0;
            for (int i = 0; i < datagrams.Count && i < expected.Length; i++)
            {
                Received r;
                string line;
                if (client == null) { r = dec.Receive(datagrams[i]); line = Line(dec, r); }
                else
                {
                    try { r = client.Receive(datagrams[i]) != null ? Received.Snapshot : Received.Pending; }
                    catch (DecodeException) { r = Received.Refused; }
                    line = Line(dec, r);
                    var reply = client.Reply();
                    line = line.Substring(0, line.Length - 1) + ",\"reply\":" + (reply == null ? "null" : "\"" + ToHex(reply) + "\"") + "}";
                    if (reply != null) { int nr; outcomes.TryGetValue("reply", out nr); outcomes["reply"] = nr + 1; }     // (the manifest counts the replies made)
                    if (idle > 0)
                    {
                        // --idle N: N more calls with nothing arriving, listed after the reply (keep-alives, section 18)
                        var calls = new List<string>();
                        for (int c = 0; c < idle; c++)
                        {
                            var ir = client.Reply();
                            calls.Add(ir == null ? "null" : "\"" + ToHex(ir) + "\"");
                            if (ir != null) { int ni; outcomes.TryGetValue("idle-reply", out ni); outcomes["idle-reply"] = ni + 1; }
                        }
                        line = line.Substring(0, line.Length - 1) + ",\"idle\":[" + string.Join(",", calls) + "]}";
                    }
                }
                if (line != expected[i]) { bad++; if (bad <= 3) Check(false, name + " datagram " + i + ": " + Trunc(line) + " want " + Trunc(expected[i])); }
                string k = r == Received.Snapshot ? "snapshot" : r == Received.Pending ? "pending" : dec.LastErrorKind;
                int n;
                outcomes.TryGetValue(k, out n);
                outcomes[k] = n + 1;
            }
            Check(bad == 0, name + ": every line as expected (" + bad + " differ)");
            bool same = true;
            foreach (var o in st.Get("outcomes").Members)
            {
                int n;
                outcomes.TryGetValue(o.Key, out n);
                same &= n == int.Parse(o.Value.Text);
            }
            Check(same && outcomes.Count == st.Get("outcomes").Members.Count, name + ": outcome counts");
            // the runner itself (the executable the Python suite runs), on one stream
        }
    }

    /// <summary>SnapshotDecoder.Dispose: every kit stream decoded by a decoder, which is disposed, then by a
    /// new one taking the buffers it gave back (of this stream's schema or of an earlier stream's: other
    /// slot counts and sizes, stale contents): every line as expected both times; the views the
    /// disposed decoder returned left empty, their clones intact; the pool bounded by the giver's
    /// MaxBytes; ClearPool.</summary>
    static void DecoderPool()
    {
        SnapshotDecoder.ClearPool();
        Check(SnapshotDecoder.PooledBytes == 0, "pool: empty after ClearPool");
        var manifest = Load("conformance/manifest.json");
        int streams = 0, reused = 0;
        foreach (var st in manifest.Get("streams").Items)
        {
            string name = st.Get("name").Text;
            var schema = Schema.Load(Path.Combine(root, "conformance", st.Get("schema").Text));
            var datagrams = ReadDatagrams(Path.Combine(root, "conformance", st.Get("datagrams").Text));
            var expected = File.ReadAllLines(Path.Combine(root, "conformance", st.Get("expected").Text));
            byte[] key; long maxBytes; uint? nonce; int idle; string err;
            if (!KitArgs(st, out key, out maxBytes, out nonce, out idle, out err)) { Check(false, name + ": " + err); continue; }
            streams++;
            for (int pass = 0; pass < 2; pass++)
            {
                long before = SnapshotDecoder.PooledBytes;
                var dec = new SnapshotDecoder(schema, key, maxBytes);
                int bad = 0;
                Snapshot view = null;
                for (int i = 0; i < datagrams.Count && i < expected.Length; i++)
                {
                    var r = dec.Receive(datagrams[i]);
                    string line = Line(dec, r);
                    string want = expected[i];
                    if (nonce.HasValue) want = want.Substring(0, want.LastIndexOf(",\"reply\":", StringComparison.Ordinal)) + "}";
                    if (line != want) { bad++; if (bad <= 3) Check(false, name + " pass " + pass + " datagram " + i + ": " + Trunc(line) + " want " + Trunc(want)); }
                    if (r == Received.Snapshot && dec.Get(dec.LastSnapshot.Seq) == dec.LastSnapshot) view = dec.LastSnapshot;
                }
                Check(bad == 0, name + " pass " + pass + ": every line as expected (" + bad + " differ)");
                if (pass == 1 && before > 0 && SnapshotDecoder.PooledBytes < before) reused++;
                Snapshot copy = view != null && view.Count > 0 ? view.Clone() : null;
                dec.Dispose();
                Check(SnapshotDecoder.PooledBytes <= Math.Max(maxBytes, SnapshotDecoder.DefaultMaxBytes), name + ": the pool within the givers' MaxBytes");
                if (view != null)
                    Check(view.Count == 0 && view.Ids.Length == 0 && view.Codes.Length == 0, name + ": a held view is empty once its decoder is disposed");
                if (copy != null)
                    Check(copy.Count > 0 && copy.Ids.Length >= copy.Count, name + ": its clone is not");
                Check(dec.LastSnapshot == null && dec.HeldBaselines().Count == 0 && dec.HeldBytes == 0 && !dec.HasLatest, name + ": nothing held after Dispose");
            }
        }
        Check(reused > streams / 2, "pool: the second decoder took buffers the first gave back (" + reused + " of " + streams + " streams)");
        // a disposed decoder is usable again, as after Reset; and a StreamClient disposes its decoder
        {
            var st = manifest.Get("streams").Items[0];
            var schema = Schema.Load(Path.Combine(root, "conformance", st.Get("schema").Text));
            var datagrams = ReadDatagrams(Path.Combine(root, "conformance", st.Get("datagrams").Text));
            var client = new StreamClient(schema, nonce: 7);
            var dec = client.Decoder;
            foreach (var d in datagrams) { try { client.Receive(d); } catch (DecodeException) { } }
            client.Dispose();
            Check(!dec.HasLatest && dec.HeldBytes == 0, "StreamClient.Dispose disposes its decoder");
            foreach (var d in datagrams) { try { client.Receive(d); } catch (DecodeException) { } }
            Check(dec.HasStream && dec.HasLatest, "a disposed decoder decodes again");
        }
        // the bound: a decoder gives back only what fits its MaxBytes
        {
            SnapshotDecoder.ClearPool();
            var st = manifest.Get("streams").Items[0];
            var schema = Schema.Load(Path.Combine(root, "conformance", st.Get("schema").Text));
            var datagrams = ReadDatagrams(Path.Combine(root, "conformance", st.Get("datagrams").Text));
            var dec = new SnapshotDecoder(schema);
            foreach (var d in datagrams) dec.Receive(d);
            long cost = dec.HeldBytes;
            dec.MaxBytes = cost / 2;
            dec.Dispose();
            Check(cost > 0 && SnapshotDecoder.PooledBytes > 0 && SnapshotDecoder.PooledBytes <= cost / 2,
                "pool: at most the giver's MaxBytes (" + SnapshotDecoder.PooledBytes + " of a limit of " + cost / 2 + ")");
            var dec2 = new SnapshotDecoder(schema);
            foreach (var d in datagrams) dec2.Receive(d);
            long p0 = SnapshotDecoder.PooledBytes;
            dec2.MaxBytes = 1;
            dec2.Dispose();
            Check(SnapshotDecoder.PooledBytes == p0, "pool: a decoder of MaxBytes 1 gives nothing back");
            SnapshotDecoder.ClearPool();
            Check(SnapshotDecoder.PooledBytes == 0, "pool: ClearPool empties it");
        }
    }

    /// <summary>A kit stream's "args" (the runner's options before SCHEMA and DATAGRAMS): --key HEX,
    /// --max-bytes N, --replies NONCE, --idle N (0 to 1000, with --replies: N more Reply() calls after
    /// each datagram's reply; 0 when not given). False (and why) for anything else.</summary>
    internal static bool KitArgs(JsonValue st, out byte[] key, out long maxBytes, out uint? nonce, out int idle, out string err)
    {
        key = null; maxBytes = SnapshotDecoder.DefaultMaxBytes; nonce = null; idle = 0; err = null;
        bool idleGiven = false;
        var a = st.Get("args");
        if (a == null) return true;
        if (a.Type != JsonType.Array) { err = "\"args\" is not a list"; return false; }
        for (int i = 0; i < a.Items.Count; i += 2)
        {
            string o = a.Items[i].Text, v = i + 1 < a.Items.Count ? a.Items[i + 1].Text : null;
            if (v == null) { err = "args: " + o + " without a value"; return false; }
            if (o == "--key") key = FromHex(v);
            else if (o == "--max-bytes") maxBytes = long.Parse(v, CultureInfo.InvariantCulture);
            else if (o == "--replies") nonce = uint.Parse(v, CultureInfo.InvariantCulture);
            else if (o == "--idle")
            {
                if (!int.TryParse(v, NumberStyles.None, CultureInfo.InvariantCulture, out idle) || idle > 1000) { err = "args: --idle " + v + " is not 0 to 1000"; return false; }
                idleGiven = true;
            }
            else { err = "args: unknown option " + o; return false; }
        }
        if (idleGiven && !nonce.HasValue) { err = "args: --idle without --replies"; return false; }
        return true;
    }

    /// <summary>qc-decode's arguments for the kit stream `name`, one a line: its "args", then the
    /// schema and datagram paths (run-tests runs the runner with them); nothing for an unknown name.</summary>
    static string KitCommand(string name)
    {
        foreach (var st in Load("conformance/manifest.json").Get("streams").Items)
        {
            if (st.Get("name").Text != name) continue;
            var o = new List<string>();
            var a = st.Get("args");
            if (a != null) foreach (var x in a.Items) o.Add(x.Text);
            o.Add(Path.Combine(root, "conformance", st.Get("schema").Text));
            o.Add(Path.Combine(root, "conformance", st.Get("datagrams").Text));
            return string.Join("\n", o);
        }
        return "";
    }

    static string Trunc(string s) { return s.Length > 160 ? s.Substring(0, 160) + "..." : s; }

    static void GoldenPackets()
    {
        // the golden stream of tests/golden/snapshot (sections 4-13): its hello, then its datagrams in order
        var g = Load("tests/golden/snapshot/packets.json");
        var schema = Schema.Load(Path.Combine(root, "tests/golden/snapshot/schema.json"));
        var dec = new SnapshotDecoder(schema);
        var hello = File.ReadAllBytes(Path.Combine(root, "tests/golden/snapshot", g.Get("hello").Text));
        Check(dec.Receive(hello) == Received.Pending && dec.HasStream, "golden hello adopted");
        Check(dec.Stream.StreamId == (ulong)BigCode(g.Get("stream_id")) && dec.Stream.Started == (ulong)BigCode(g.Get("started")), "golden hello: stream id and start");
        foreach (var p in g.Get("packets").Items)
        {
            var bytes = File.ReadAllBytes(Path.Combine(root, "tests/golden/snapshot", p.Get("file").Text));
            var r = dec.Receive(bytes);
            Check(r == Received.Snapshot, p.Get("file").Text + ": " + dec.LastErrorKind + " " + dec.LastError);
            if (r != Received.Snapshot) continue;
            var s = dec.LastSnapshot;
            Check(s.Seq == int.Parse(p.Get("seq").Text), p.Get("file").Text + ": seq");
            var ids = p.Get("ids").Items;
            var m = p.Get("matrix").Items;
            bool eq = ids.Count == s.Count;
            for (int i = 0; eq && i < s.Count; i++)
            {
                eq = (ulong)BigCode(ids[i]) == s.Ids[i];
                for (int t = 0; eq && t < s.SlotCount; t++) { ulong c; eq = Carrier(BigCode(m[i].Items[t]), out c) && c == s.Codes[i * s.SlotCount + t]; }
            }
            Check(eq, p.Get("file").Text + ": ids and codes");
            // the bare packet (the datagram without its check) decodes to the same under DecodePacket
            Check(bytes.Length == int.Parse(p.Get("packet_bytes").Text) + 4, p.Get("file").Text + ": a whole datagram is the packet and 4 bytes of check");
        }
        Check(dec.Latest == 3, "latest after the golden packets is 3, got " + dec.Latest);
        // the first (full) packet bare, through DecodePacket
        var first = File.ReadAllBytes(Path.Combine(root, "tests/golden/snapshot/packet_00.bin"));
        var d2 = new SnapshotDecoder(schema);
        var s0 = d2.DecodePacket(first, 0, first.Length - 4);
        Check(s0.Seq == 65534 && s0.Count == g.Get("packets").Items[0].Get("ids").Items.Count, "a bare full packet through DecodePacket");
        Check(Throws<DecodeException>(() => d2.DecodePacket(first, 0, first.Length)), "the check is trailing data to the packet decoder");
    }
}
