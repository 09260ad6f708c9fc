using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Numerics;
using System.Text.RegularExpressions;
using QuantCodec;

static partial class Tests
{
    static void Lockstep()
    {
        // two schemas share fields: a full record of one and a delta stream of the other decode the
        // shared fields onto the same values (Tests~/make_lockstep.py writes the data)
        var full = Schema.Load(Path.Combine(here, "Tests~/data/lockstep_full.json"));
        var delta = Schema.Load(Path.Combine(here, "Tests~/data/lockstep_delta.json"));
        Schema.CheckLockstep(full, delta);
        passed++;
        var other = Schema.FromJson(File.ReadAllText(Path.Combine(here, "Tests~/data/lockstep_delta.json")).Replace("\"bits\": 11", "\"bits\": 12"));
        Check(Throws<SchemaException>(() => Schema.CheckLockstep(full, other)), "schemas of another grid are not in lockstep");
        var records = Json.ParseUtf8(File.ReadAllBytes(Path.Combine(here, "Tests~/data/lockstep_records.json"))).Get("records").Items;
        var byTick = new Dictionary<int, JsonValue>();
        foreach (var r in records) byTick[int.Parse(r.Get("tick").Text)] = r;
        var dec = new SnapshotDecoder(delta);
        int compared = 0;
        var fv = new double[full.ValueCount];
        var dv = new double[delta.ValueCount];
        foreach (var d in ReadDatagrams(Path.Combine(here, "Tests~/data/lockstep_stream.bin")))
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
                int T = dec.CheckLength;
                if (!dec.HasStream || src.Length < T + 1) goto case 0;
                var body = new byte[src.Length - T];
                Buffer.BlockCopy(src, 0, body, 0, body.Length);
                int how = rng.Int(3);
                if (how == 0) for (int k = 1 + rng.Int(4); k > 0 && body.Length > 0; k--) body[rng.Int(body.Length)] ^= (byte)(1 << rng.Int(8));
                else if (how == 1 && body.Length > 1) Array.Resize(ref body, 1 + rng.Int(body.Length - 1));
                else { Array.Resize(ref body, body.Length + 1 + rng.Int(6)); for (int i = src.Length - T; i < body.Length; i++) body[i] = (byte)rng.Next(); }
                bool asFragment = rng.Int(4) == 0;
                if (dec.Keyed) return SealT(body, 0, asFragment ? dec.FragmentKey : dec.PacketKey);
                return Seal(body, asFragment ? dec.FragmentSeed : dec.PacketSeed);
        }
    }

    /// <summary>A runner line without its "reply" (the last key, when there is one) and the "idle" after it.</summary>
    static string StripReply(string line)
    {
        int i = line.LastIndexOf(",\"reply\":", StringComparison.Ordinal);
        return i < 0 ? line : line.Substring(0, i) + "}";
    }

    static bool IsFragmentOf(SnapshotDecoder dec, byte[] j)
    {
        int T = dec.CheckLength;
        if (!dec.HasStream || j.Length < 9 + T) return false;
        if (dec.Keyed) return dec.FragmentKey.Tag(j, 0, j.Length - 8) == BitConverter.ToUInt64(j, j.Length - 8);
        return Crc32C.Compute(j, 0, j.Length - 4, dec.FragmentSeed) == BitConverter.ToUInt32(j, j.Length - 4);
    }

    /// <summary>A kit stream made keyed, with the lines a client must give it: each hello and whole
    /// packet re-sealed with its SipHash tag (under the stream the datagrams so far adopted), junk left
    /// as it is (refused alike), and a packet that came in fragments sent again, at the datagram that
    /// completed it, as the keyed fragments of chunk max_datagram - 16 (pending, then the plain line).
    /// A fragment that completes nothing, or is refused before reassembly, is left out. null when a
    /// hello would not fit its max_datagram with an 8-byte tag.</summary>
    static List<byte[]> Keyed(Schema schema, List<byte[]> datagrams, byte[] key, out List<string> want)
    {
        var ks = new KeySchedule(key);
        var plain = new SnapshotDecoder(schema);
        var o = new List<byte[]>();
        want = new List<string>();
        var chunks = new Dictionary<string, byte[][]>();
        foreach (var d in datagrams)
        {
            int n = d.Length;
            var h = plain.Stream;
            if (plain.HasStream && n >= 5 && Crc32C.Compute(d, 0, n - 4, plain.PacketSeed) == BitConverter.ToUInt32(d, n - 4))
            {
                var kP = ks.Sub(StreamKey(schema, h.History, h.Predict, h.MaxDatagram, h.StreamId, 'P'));
                o.Add(SealT(Sub(d, n - 4), 0, kP));
                want.Add(Line(plain, plain.Receive(d)));
            }
            else if (IsFragmentOf(plain, d))
            {
                int count = d[3] + 1, index = d[2];
                string id = (d[0] | d[1] << 8) + "/" + count + "/" + BitConverter.ToUInt32(d, 4);
                byte[][] have;
                if (!chunks.TryGetValue(id, out have)) chunks[id] = have = new byte[count][];
                if (index < count && have[index] == null) have[index] = Sub(d, n - 4);
                var r = plain.Receive(d);
                bool complete = index < count;
                foreach (var c in have) complete &= c != null;
                if (r == Received.Pending || !complete) continue;
                chunks.Remove(id);
                var P = new List<byte>();
                foreach (var c in have) for (int i = 8; i < c.Length; i++) P.Add(c[i]);
                var kF = ks.Sub(StreamKey(schema, h.History, h.Predict, h.MaxDatagram, h.StreamId, 'F'));
                var frags = Fragments(P.ToArray(), h.MaxDatagram - 16, BitConverter.ToUInt32(d, 4), 0, kF);
                if (frags.Count > 256 || frags.Count < 2) { plain.Reset(); return null; }
                // (the plain fragments named seq in their header; P begins with it unless the kit made it not)
                for (int i = 0; i < frags.Count; i++) { frags[i][0] = d[0]; frags[i][1] = d[1]; }
                frags = ResealFragments(frags, kF);
                for (int i = 0; i < frags.Count - 1; i++) { o.Add(frags[i]); want.Add("{\"pending\":true}"); }
                o.Add(frags[frags.Count - 1]);
                want.Add(Line(plain, r));
            }
            else if (n >= 55 && d[0] == 'Q' && d[1] == 'C' && d[2] == 'H' && d[3] == 'L' && Crc32C.Compute(d, 0, n - 4, SeedHello) == BitConverter.ToUInt32(d, n - 4))
            {
                if (n - 4 + 8 > (d[8] | d[9] << 8) && n <= (d[8] | d[9] << 8)) return null;
                o.Add(SealT(Sub(d, n - 4), 0, ks.Hello));
                want.Add(Line(plain, plain.Receive(d)));
            }
            else
            {
                o.Add(d);
                want.Add(Line(plain, plain.Receive(d)));
            }
        }
        return o;
    }

    static List<byte[]> ResealFragments(List<byte[]> frags, TagKey kF)
    {
        var o = new List<byte[]>();
        foreach (var f in frags) o.Add(SealT(Sub(f, f.Length - 8), 0, kF));
        return o;
    }

    static void Fuzz()
    {
        var manifest = Load("conformance/manifest.json");
        var sw = Stopwatch.StartNew();
        int refusedJunk = 0, acceptedJunk = 0, unchanged = 0, rounds = 0, keyedStreams = 0, fastSame = 0, keepAlives = 0;
        // an error in an entity's fields or record names the entity, the field or slot, and the bit
        var entityError = new Regex(@"^snapshot packet: entity \d+: (field '\w+'(\[\d+\]| \(NearlyZero flag\))?: .+|marked changed, but none of its fields is) at bit \d+$");
        int entityErrors = 0;
        var fuzzKey = Seq(16);
        var cases = new List<Tuple<string, Schema, List<byte[]>, string[], byte[], long>>();
        var seen = new HashSet<string>();
        foreach (var st in manifest.Get("streams").Items)
        {
            string name = st.Get("name").Text;
            var schema = Schema.Load(Path.Combine(root, "conformance", st.Get("schema").Text));
            var datagrams = ReadDatagrams(Path.Combine(root, "conformance", st.Get("datagrams").Text));
            var expected = File.ReadAllLines(Path.Combine(root, "conformance", st.Get("expected").Text));
            byte[] kitKey; long kitMax; uint? kitNonce; int kitIdle; string kitErr;
            if (!KitArgs(st, out kitKey, out kitMax, out kitNonce, out kitIdle, out kitErr)) continue;
            // a stream run with --replies: its lines without the reply (the fuzz makes its own); once per datagram file
            if (!seen.Add(st.Get("datagrams").Text)) continue;
            for (int i = 0; i < expected.Length; i++) expected[i] = StripReply(expected[i]);
            cases.Add(Tuple.Create(name, schema, datagrams, expected, kitKey, kitMax));
            if (kitKey != null || kitMax != SnapshotDecoder.DefaultMaxBytes) continue;      // (made keyed: only the plain default streams)
            // the same stream keyed: it must decode as its plain counterpart does
            List<string> want;
            var keyed = Keyed(schema, datagrams, fuzzKey, out want);
            if (keyed == null) { Console.WriteLine("  fuzz: " + name + " not made keyed (a hello too large for an 8-byte tag, or a packet of more than 256 keyed fragments)"); continue; }
            var kd = new SnapshotDecoder(schema, fuzzKey);
            int differ = 0;
            for (int i = 0; i < keyed.Count; i++) if (Line(kd, kd.Receive(keyed[i])) != want[i]) differ++;
            Check(differ == 0, name + " keyed: decodes as the plain stream (" + differ + " of " + keyed.Count + " lines differ)");
            int views = 0;
            foreach (var w in want) if (w.StartsWith("{\"seq\"", StringComparison.Ordinal)) views++;
            int expViews = 0;
            foreach (var w in expected) if (w.StartsWith("{\"seq\"", StringComparison.Ordinal)) expViews++;
            Check(views == expViews, name + " keyed: every view of the plain stream is in the keyed one (" + views + " of " + expViews + ")");
            keyedStreams++;
            cases.Add(Tuple.Create(name + " keyed", schema, keyed, want.ToArray(), fuzzKey, SnapshotDecoder.DefaultMaxBytes));
        }
        Check(keyedStreams >= 4, "fuzz: " + keyedStreams + " kit streams made keyed");
        // seeds a stream: 3 in run-tests; QC_FUZZ_SEEDS=N for a longer campaign (as the JS client's QC_FUZZ_ROUNDS)
        int seeds = 3;
        string seedsEnv = Environment.GetEnvironmentVariable("QC_FUZZ_SEEDS");
        if (!string.IsNullOrEmpty(seedsEnv) && (!int.TryParse(seedsEnv, out seeds) || seeds < 1))
            throw new ArgumentException("QC_FUZZ_SEEDS must be a positive integer, got " + seedsEnv);
        foreach (var cs in cases)
        {
            string name = cs.Item1;
            var schema = cs.Item2;
            var datagrams = cs.Item3;
            var expected = cs.Item4;
            var key = cs.Item5;
            long maxBytes = cs.Item6;
            for (int seed = 1; seed <= seeds; seed++)
            {
                // (a) junk that fails the check, interleaved: every datagram of the stream still decodes
                // exactly as expected, and every refused one leaves the state as it was
                var rng = new Rng((ulong)(seed * 1000 + name.Length));
                var dec = new SnapshotDecoder(schema, key, maxBytes);
                int bad = 0;
                // (a copy of a valid datagram taken early moves what follows: a copied fragment completes
                // its packet a datagram sooner; the lines are then compared no more, the states still are)
                bool copied = false;
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
                        else if (j.Length >= 5) { acceptedJunk++; copied = true; Check(IsCopyOfValid(j, datagrams), name + ": junk accepted: " + r); }
                    }
                    var line = Line(dec, dec.Receive(datagrams[i]));
                    if (!copied && line != expected[i]) bad++;
                }
                Check(bad == 0, name + " seed " + seed + ": the stream decodes as expected with junk mixed in (" + bad + " lines differ)");
                rounds++;
                // (b) sealed malformed packets and fragments at random points: never a crash, a refusal
                // changes nothing, and the stream goes on as expected after a refusal
                rng = new Rng((ulong)(seed * 7919 + name.Length));
                dec.Dispose();      // (b)'s decoders then decode into (a)'s buffers, stale contents and all
                dec = new SnapshotDecoder(schema, key, maxBytes);
                // and a twin without the fast path of changed entities: the same answers, errors and state
                var slow = new SnapshotDecoder(schema, key, maxBytes);
                slow.FastPath = false;
                bad = 0;
                bool diverged = false;
                for (int i = 0; i < datagrams.Count; i++)
                {
                    for (int k = rng.Int(3); k > 0; k--)
                    {
                        var j = Junk(rng, datagrams, dec, true);
                        string before = dec.StateDigest(), beforeState = dec.StateDigest(false);
                        bool fragment = IsFragmentOf(dec, j);
                        var r = dec.Receive(j);
                        var rs = slow.Receive(j);
                        if (rs == r && slow.LastError == dec.LastError && slow.StateDigest() == dec.StateDigest()) fastSame++;
                        else Check(false, name + ": the fast path and the slot-by-slot loop differ on a sealed datagram: "
                            + r + " " + dec.LastError + " / " + rs + " " + slow.LastError);
                        if (r == Received.Refused)
                        {
                            refusedJunk++;
                            if (dec.LastError.Contains("marked changed") || dec.LastError.Contains("is not valid") || dec.LastError.Contains("remap to"))
                            {
                                entityErrors++;
                                Check(entityError.IsMatch(dec.LastError), name + ": an entity's error names it, its field and the bit: " + dec.LastError);
                            }
                            // (a fragment that completes its packet forgets the partial packet even when
                            // the packet is then refused, as Python's Reassembly does; everything else stays)
                            if (dec.StateDigest() == before) unchanged++;
                            else if (fragment && dec.StateDigest(false) == beforeState) { unchanged++; diverged = true; }     // (the stream's own partial packet gone: its lines move)
                            else Check(false, name + ": state changed by a refused sealed datagram (" + dec.LastErrorKind + ": " + dec.LastError + ")");
                        }
                        else { acceptedJunk++; diverged = true; }   // (a mutation that still decodes: other state)
                    }
                    var line = Line(dec, dec.Receive(datagrams[i]));
                    if (Line(slow, slow.Receive(datagrams[i])) == line && slow.StateDigest() == dec.StateDigest()) fastSame++;
                    else Check(false, name + ": the fast path and the slot-by-slot loop differ on datagram " + i);
                    if (!diverged && line != expected[i]) bad++;
                }
                Check(bad == 0, name + " seed " + seed + ": sealed junk refused without a trace (" + bad + " lines differ)");
                rounds++;
                // (c) the session client, Reply() after every datagram: junk makes no reply due unless it is
                // refused as no-hello (before a hello), every reply is an ack or hello request whose check
                // holds, and the stream's own datagrams still decode as expected; Reply() returns one
                // exactly when one is due or the 31 calls before it returned none (a keep-alive)
                rng = new Rng((ulong)(seed * 104729 + name.Length));
                dec.Dispose();
                slow.Dispose();
                var client = new StreamClient(schema, key, maxBytes, (uint)seed);
                bad = 0;
                int badReplies = 0, idle = 0;
                for (int i = 0; i < datagrams.Count; i++)
                {
                    for (int k = rng.Int(3); k > 0; k--)
                    {
                        var j = Junk(rng, datagrams, client.Decoder, seed == 3);
                        string before = client.Decoder.StateDigest(), beforeState = client.Decoder.StateDigest(false);
                        bool fragment = IsFragmentOf(client.Decoder, j);
                        string kind = null;
                        try { client.Receive(j); } catch (DecodeException e) { kind = e.Kind; }
                        bool due = client.ReplyDue;
                        var rep = client.Reply();
                        if ((rep != null) != (due || idle == StreamClient.KeepAliveCalls - 1)) badReplies++;
                        if (rep != null && !due) keepAlives++;
                        idle = rep != null ? 0 : idle + 1;
                        if (kind != null)
                        {
                            refusedJunk++;
                            if (client.Decoder.StateDigest() == before || (fragment && client.Decoder.StateDigest(false) == beforeState)) unchanged++;
                            else Check(false, name + ": state changed by junk refused by the client (" + kind + ")");
                            bool mayReply = kind == "no-hello" || kind == "baseline";
                            if (due && !mayReply) { Check(false, name + ": a refusal of kind " + kind + " made a reply due"); }
                            if (!due && mayReply) { Check(false, name + ": a refusal of kind " + kind + " made no reply due"); }
                        }
                        else if (seed != 3) { acceptedJunk++; Check(IsCopyOfValid(j, datagrams), name + ": client: junk accepted"); }
                        if (rep != null && !ReplyHolds(client, rep)) badReplies++;
                    }
                    string line;
                    string kd = null;
                    Snapshot v = null;
                    bool dueBefore = client.ReplyDue;     // (a new client's hello request, when no junk came first)
                    try { v = client.Receive(datagrams[i]); } catch (DecodeException e) { kd = e.Kind; }
                    line = kd != null ? "{\"error\":\"" + kd + "\"}" : v == null ? "{\"pending\":true}" : Line(client.Decoder, Received.Snapshot);
                    bool due2 = client.ReplyDue;
                    var r2 = client.Reply();
                    if (r2 != null && !ReplyHolds(client, r2)) badReplies++;
                    if (due2 != (dueBefore || v != null || kd == "no-hello" || kd == "baseline" || (kd == null && v == null && client.Decoder.LastAdopted))) badReplies++;
                    if ((r2 != null) != (due2 || idle == StreamClient.KeepAliveCalls - 1)) badReplies++;
                    if (r2 != null && !due2) keepAlives++;
                    idle = r2 != null ? 0 : idle + 1;
                    if (seed != 3 && line != expected[i]) bad++;
                }
                Check(bad == 0, name + " seed " + seed + ": the session client decodes the stream as expected with junk mixed in (" + bad + " lines differ)");
                Check(badReplies == 0, name + " seed " + seed + ": every reply well formed and due exactly when section 18 says (" + badReplies + " not)");
                client.Dispose();   // (the next round's decoders take its buffers)
                rounds++;
            }
        }
        Console.WriteLine("  fuzz: " + refusedJunk + " junk datagrams refused (state unchanged after each: " + unchanged + "), " + acceptedJunk + " accepted (copies of valid ones, or sealed mutations that still decode)");
        Check(unchanged == refusedJunk && refusedJunk > 1000, "fuzz: " + refusedJunk + " refused, each leaving the state as it was; " + acceptedJunk + " accepted");
        Console.WriteLine("  fuzz: " + rounds + " rounds over " + cases.Count + " streams (" + keyedStreams + " of them keyed) in " + sw.Elapsed.TotalSeconds.ToString("F1") + " s");
        Console.WriteLine("  fuzz: " + fastSame + " datagrams decoded alike with and without the fast path of changed entities");
        Console.WriteLine("  fuzz: " + keepAlives + " keep-alives made by the session client (a reply while none was due, after 31 calls that returned none)");
        Check(keepAlives > 0, "fuzz: the session client's keep-alives were reached");
        Check(fastSame > 0, "the fast path was compared");
        Console.WriteLine("  fuzz: " + entityErrors + " errors in an entity's fields or record, each naming the entity, the field and the bit");
        Check(entityErrors > 0, "errors in entities were met");
    }

    /// <summary>Whether a reply is an ack of the client's stream or a hello request, its length, type,
    /// nonce and check right.</summary>
    static bool ReplyHolds(StreamClient c, byte[] rep)
    {
        var dec = c.Decoder;
        int T = dec.CheckLength;
        if (rep.Length < 10 || BitConverter.ToUInt32(rep, 2) != c.Nonce) return false;
        if (rep[0] == 0x41 && rep.Length == 16 + T && dec.HasStream)
        {
            if (dec.Keyed) return dec.ReplyKey.Tag(rep, 0, 16) == BitConverter.ToUInt64(rep, 16);
            return Crc32C.Compute(rep, 0, 16, dec.ReplySeed) == BitConverter.ToUInt32(rep, 16);
        }
        if (rep[0] == 0x48 && rep.Length == 26 + T && !dec.HasStream)
        {
            if (dec.Keyed) return dec.Keys.HelloRequest.Tag(rep, 0, 26) == BitConverter.ToUInt64(rep, 26);
            return Crc32C.Compute(rep, 0, 26, SeedHelloRequest) == BitConverter.ToUInt32(rep, 26);
        }
        return false;
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
