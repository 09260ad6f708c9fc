using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Numerics;
using QuantCodec;

static partial class Tests
{
    static void Lockstep()
    {
        // two schemas share fields: a full record of one and a delta stream of the other decode the
        // shared fields onto the same values (tests/make_lockstep.py writes the data)
        var full = Schema.Load(Path.Combine(here, "tests/data/lockstep_full.json"));
        var delta = Schema.Load(Path.Combine(here, "tests/data/lockstep_delta.json"));
        Schema.CheckLockstep(full, delta);
        passed++;
        var other = Schema.FromJson(File.ReadAllText(Path.Combine(here, "tests/data/lockstep_delta.json")).Replace("\"bits\": 11", "\"bits\": 12"));
        Check(Throws<SchemaException>(() => Schema.CheckLockstep(full, other)), "schemas of another grid are not in lockstep");
        var records = Json.ParseUtf8(File.ReadAllBytes(Path.Combine(here, "tests/data/lockstep_records.json"))).Get("records").Items;
        var byTick = new Dictionary<int, JsonValue>();
        foreach (var r in records) byTick[int.Parse(r.Get("tick").Text)] = r;
        var dec = new SnapshotDecoder(delta);
        int compared = 0;
        var fv = new double[full.ValueCount];
        var dv = new double[delta.ValueCount];
        foreach (var d in ReadDatagrams(Path.Combine(here, "tests/data/lockstep_stream.bin")))
        {
            var res = dec.Receive(d);
            Check(res != Received.Refused, "lockstep stream: refused " + dec.LastErrorKind + " " + dec.LastError);
            if (res != Received.Snapshot) continue;
            JsonValue r;
            if (!byTick.TryGetValue(dec.LastSnapshot.Seq, out r)) continue;
            var codes = full.DecodeCodes(FromHex(r.Get("hex").Text));
            bool codesEq = true;
            var want = r.Get("codes").Items;
            for (int i = 0; i < codes.Length; i++) codesEq &= (ulong)BigCode(want[i]) == codes[i];
            Check(codesEq, "lockstep: the full record's codes at tick " + dec.LastSnapshot.Seq);
            full.Dequantize(codes, 0, fv, 0);
            var snap = dec.LastSnapshot;
            int row = snap.IndexOf((ulong)BigCode(r.Get("id")));
            Check(row >= 0, "lockstep: the entity is in the delta stream");
            if (row < 0) continue;
            snap.Values(row, dv);
            // every shared field: the delta schema's fields are the full one's first fields, same layout
            bool eq = true;
            foreach (var f in delta.Fields)
            {
                var ff = full.Fields[full.FieldIndex(f.Name)];
                for (int k = 0; k < f.ValueCount; k++) eq &= Bits(dv[f.FirstValue + k]) == Bits(fv[ff.FirstValue + k]);
                for (int k = 0; k < f.SlotCount; k++) eq &= snap.Code(row, f.FirstSlot + k) == codes[ff.FirstSlot + k];
            }
            Check(eq, "lockstep: shared fields equal bit for bit at tick " + snap.Seq);
            compared++;
        }
        Check(compared == records.Count, "lockstep: compared " + compared + " of " + records.Count + " ticks");
    }

    // ------------------------------------------------------------------------------- fuzz

    sealed class Rng
    {
        ulong s;
        public Rng(ulong seed) { s = seed * 0x9E3779B97F4A7C15UL + 1; }
        public ulong Next() { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }
        public int Int(int n) { return (int)(Next() % (ulong)n); }
    }

    static byte[] Seal(byte[] body, uint seed)
    {
        var d = new byte[body.Length + 4];
        Buffer.BlockCopy(body, 0, d, 0, body.Length);
        uint c = Crc32C.Compute(body, 0, body.Length, seed);
        d[body.Length] = (byte)c; d[body.Length + 1] = (byte)(c >> 8); d[body.Length + 2] = (byte)(c >> 16); d[body.Length + 3] = (byte)(c >> 24);
        return d;
    }

    static byte[] Junk(Rng rng, List<byte[]> valid, SnapshotDecoder dec, bool sealedToo)
    {
        byte[] src = valid[rng.Int(valid.Count)];
        byte[] d;
        switch (rng.Int(sealedToo ? 7 : 4))
        {
            case 0: // random bytes
                d = new byte[rng.Int(80)];
                for (int i = 0; i < d.Length; i++) d[i] = (byte)rng.Next();
                return d;
            case 1: // bit flips
                d = (byte[])src.Clone();
                for (int k = 1 + rng.Int(3); k > 0 && d.Length > 0; k--) d[rng.Int(d.Length)] ^= (byte)(1 << rng.Int(8));
                return d;
            case 2: // truncated
                d = new byte[rng.Int(Math.Max(1, src.Length))];
                Buffer.BlockCopy(src, 0, d, 0, d.Length);
                return d;
            case 3: // extended
                d = new byte[src.Length + 1 + rng.Int(8)];
                Buffer.BlockCopy(src, 0, d, 0, src.Length);
                for (int i = src.Length; i < d.Length; i++) d[i] = (byte)rng.Next();
                return d;
            default: // a packet sealed with the stream's key: malformed bodies reach the packet decoder
                if (!dec.HasStream || src.Length < 5) goto case 0;
                var body = new byte[src.Length - 4];
                Buffer.BlockCopy(src, 0, body, 0, body.Length);
                int how = rng.Int(3);
                if (how == 0) for (int k = 1 + rng.Int(4); k > 0 && body.Length > 0; k--) body[rng.Int(body.Length)] ^= (byte)(1 << rng.Int(8));
                else if (how == 1 && body.Length > 1) Array.Resize(ref body, 1 + rng.Int(body.Length - 1));
                else { Array.Resize(ref body, body.Length + 1 + rng.Int(6)); for (int i = src.Length - 4; i < body.Length; i++) body[i] = (byte)rng.Next(); }
                return Seal(body, rng.Int(4) == 0 ? dec.FragmentSeed : dec.PacketSeed);
        }
    }

    static void Fuzz()
    {
        var manifest = Load("conformance/manifest.json");
        var sw = Stopwatch.StartNew();
        int refusedJunk = 0, acceptedJunk = 0, unchanged = 0, rounds = 0;
        foreach (var st in manifest.Get("streams").Items)
        {
            string name = st.Get("name").Text;
            var schema = Schema.Load(Path.Combine(root, "conformance", st.Get("schema").Text));
            var datagrams = ReadDatagrams(Path.Combine(root, "conformance", st.Get("datagrams").Text));
            var expected = File.ReadAllLines(Path.Combine(root, "conformance", st.Get("expected").Text));
            for (int seed = 1; seed <= 3; seed++)
            {
                // (a) junk that fails the check, interleaved: every datagram of the stream still decodes
                // exactly as expected, and every refused one leaves the state as it was
                var rng = new Rng((ulong)(seed * 1000 + name.Length));
                var dec = new SnapshotDecoder(schema);
                int bad = 0;
                for (int i = 0; i < datagrams.Count; i++)
                {
                    for (int k = rng.Int(3); k > 0; k--)
                    {
                        var j = Junk(rng, datagrams, dec, false);
                        string before = dec.StateDigest();
                        var r = dec.Receive(j);
                        if (r == Received.Refused)
                        {
                            refusedJunk++;
                            if (dec.StateDigest() == before) unchanged++;
                            else Check(false, name + ": state changed by a refused datagram (" + dec.LastErrorKind + ")");
                        }
                        else if (j.Length >= 5) { acceptedJunk++; Check(IsCopyOfValid(j, datagrams), name + ": junk accepted: " + r); }
                    }
                    var line = Line(dec, dec.Receive(datagrams[i]));
                    if (line != expected[i]) bad++;
                }
                Check(bad == 0, name + " seed " + seed + ": the stream decodes as expected with junk mixed in (" + bad + " lines differ)");
                rounds++;
                // (b) sealed malformed packets and fragments at random points: never a crash, a refusal
                // changes nothing, and the stream goes on as expected after a refusal
                rng = new Rng((ulong)(seed * 7919 + name.Length));
                dec = new SnapshotDecoder(schema);
                bad = 0;
                bool diverged = false;
                for (int i = 0; i < datagrams.Count; i++)
                {
                    for (int k = rng.Int(3); k > 0; k--)
                    {
                        var j = Junk(rng, datagrams, dec, true);
                        string before = dec.StateDigest(), beforeState = dec.StateDigest(false);
                        bool fragment = dec.HasStream && j.Length >= 13 && Crc32C.Compute(j, 0, j.Length - 4, dec.FragmentSeed) == BitConverter.ToUInt32(j, j.Length - 4);
                        var r = dec.Receive(j);
                        if (r == Received.Refused)
                        {
                            refusedJunk++;
                            // (a fragment that completes its packet forgets the partial packet even when
                            // the packet is then refused, as Python's Reassembly does; everything else stays)
                            if (dec.StateDigest() == before || (fragment && dec.StateDigest(false) == beforeState)) unchanged++;
                            else Check(false, name + ": state changed by a refused sealed datagram (" + dec.LastErrorKind + ": " + dec.LastError + ")");
                        }
                        else { acceptedJunk++; diverged = true; }   // (a mutation that still decodes: other state)
                    }
                    var line = Line(dec, dec.Receive(datagrams[i]));
                    if (!diverged && line != expected[i]) bad++;
                }
                Check(bad == 0, name + " seed " + seed + ": sealed junk refused without a trace (" + bad + " lines differ)");
                rounds++;
            }
        }
        Console.WriteLine("  fuzz: " + refusedJunk + " junk datagrams refused (state unchanged after each: " + unchanged + "), " + acceptedJunk + " accepted (copies of valid ones, or sealed mutations that still decode)");
        Check(unchanged == refusedJunk && refusedJunk > 1000, "fuzz: " + refusedJunk + " refused, each leaving the state as it was; " + acceptedJunk + " accepted");
        Check(sw.Elapsed.TotalSeconds < 30, "fuzz: no hang (" + sw.Elapsed.TotalSeconds.ToString("F1") + " s for " + rounds + " rounds)");
    }

    static bool IsCopyOfValid(byte[] j, List<byte[]> valid)
    {
        foreach (var v in valid)
        {
            if (v.Length != j.Length) continue;
            bool eq = true;
            for (int i = 0; eq && i < v.Length; i++) eq = v[i] == j[i];
            if (eq) return true;
        }
        return false;
    }
}
