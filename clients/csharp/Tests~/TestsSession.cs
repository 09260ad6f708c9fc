// The session layer's tests: SipHash-2-4 and the key derivation (wire-format section 17), keyed
// streams, the replies and when they are due (section 18), the limits (section 19), StreamClient.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Text;
using QuantCodec;

static partial class Tests
{
    // SipHash-2-4 of the messages 00, 00 01, ..., 00..3e (lengths 0 to 63) under the key 00..0f: the
    // 64 vectors of the reference implementation (vectors.h), read as little-endian u64
    static readonly ulong[] SipVectors =
    {
            0x726fdb47dd0e0e31UL, 0x74f839c593dc67fdUL, 0x0d6c8009d9a94f5aUL, 0x85676696d7fb7e2dUL,
            0xcf2794e0277187b7UL, 0x18765564cd99a68dUL, 0xcbc9466e58fee3ceUL, 0xab0200f58b01d137UL,
            0x93f5f5799a932462UL, 0x9e0082df0ba9e4b0UL, 0x7a5dbbc594ddb9f3UL, 0xf4b32f46226bada7UL,
            0x751e8fbc860ee5fbUL, 0x14ea5627c0843d90UL, 0xf723ca908e7af2eeUL, 0xa129ca6149be45e5UL,
            0x3f2acc7f57c29bdbUL, 0x699ae9f52cbe4794UL, 0x4bc1b3f0968dd39cUL, 0xbb6dc91da77961bdUL,
            0xbed65cf21aa2ee98UL, 0xd0f2cbb02e3b67c7UL, 0x93536795e3a33e88UL, 0xa80c038ccd5ccec8UL,
            0xb8ad50c6f649af94UL, 0xbce192de8a85b8eaUL, 0x17d835b85bbb15f3UL, 0x2f2e6163076bcfadUL,
            0xde4daaaca71dc9a5UL, 0xa6a2506687956571UL, 0xad87a3535c49ef28UL, 0x32d892fad841c342UL,
            0x7127512f72f27cceUL, 0xa7f32346f95978e3UL, 0x12e0b01abb051238UL, 0x15e034d40fa197aeUL,
            0x314dffbe0815a3b4UL, 0x027990f029623981UL, 0xcadcd4e59ef40c4dUL, 0x9abfd8766a33735cUL,
            0x0e3ea96b5304a7d0UL, 0xad0c42d6fc585992UL, 0x187306c89bc215a9UL, 0xd4a60abcf3792b95UL,
            0xf935451de4f21df2UL, 0xa9538f0419755787UL, 0xdb9acddff56ca510UL, 0xd06c98cd5c0975ebUL,
            0xe612a3cb9ecba951UL, 0xc766e62cfcadaf96UL, 0xee64435a9752fe72UL, 0xa192d576b245165aUL,
            0x0a8787bf8ecb74b2UL, 0x81b3e73d20b49b6fUL, 0x7fa8220ba3b2eceaUL, 0x245731c13ca42499UL,
            0xb78dbfaf3a8d83bdUL, 0xea1ad565322a1a0bUL, 0x60e61c23a3795013UL, 0x6606d7e446282b93UL,
            0x6ca4ecb15c5f91e1UL, 0x9f626da15c9625f3UL, 0xe51b38608ef25f57UL, 0x958a324ceb064572UL,
    };

    static byte[] Seq(int n) { var b = new byte[n]; for (int i = 0; i < n; i++) b[i] = (byte)i; return b; }

    static void SipHashAndKeys()
    {
        var key = Seq(16);
        Check(SipHash.Compute(key, new byte[0]) == 0x726fdb47dd0e0e31UL, "SipHash-2-4 of the empty message (section 17)");
        Check(SipHash.Compute(key, Seq(15)) == 0xa129ca6149be45e5UL, "SipHash-2-4 of 00..0e (section 17)");
        int bad = 0;
        for (int n = 0; n < 64; n++)
            if (SipHash.Compute(key, Seq(n)) != SipVectors[n]) { bad++; Check(false, "SipHash-2-4 vector of length " + n + ": " + Hex(SipHash.Compute(key, Seq(n)))); }
        Check(bad == 0, "the 64 SipHash-2-4 reference vectors");
        // an offset slice hashes as the same bytes copied
        var big = new byte[80];
        for (int i = 0; i < 40; i++) big[7 + i] = (byte)i;
        Check(SipHash.Compute(Hex16(key).K0, Hex16(key).K1, big, 7, 40) == SipVectors[40], "SipHash of a slice at an odd offset");
        // one flipped message bit or key bit changes the tag
        var m = Seq(33);
        ulong t0 = SipHash.Compute(key, m);
        m[20] ^= 4;
        Check(SipHash.Compute(key, m) != t0, "a flipped message bit changes the tag");
        var k2 = Seq(16); k2[15] ^= 0x80;
        Check(SipHash.Compute(k2, Seq(33)) != t0, "a flipped key bit changes the tag");
        Check(Throws<ArgumentException>(() => SipHash.Compute(new byte[15], m)), "SipHash refuses a key that is not 16 bytes");

        // the derivation (vectors from a separate Python transcription of section 17)
        var ks = new KeySchedule(key);
        Check(ToHex(ks.Master.Bytes()) == "13314e21ed015d7b7d9a9980d89475dc", "mk of key 00..0f: " + ToHex(ks.Master.Bytes()));
        Check(ToHex(ks.Hello.Bytes()) == "3f6cf6f197a49aa0709e58ad2e97abba", "kH = sub(\"quantcodec hello\"): " + ToHex(ks.Hello.Bytes()));
        Check(ToHex(ks.HelloRequest.Bytes()) == "1d0b63e49683f4265e248f95d1c6ac1f", "kQ = sub(\"quantcodec hello request\"): " + ToHex(ks.HelloRequest.Bytes()));
        Check(ToHex(new KeySchedule(new byte[] { 7 }).Master.Bytes()) == "8e0c71fbd9b1b022d287348821a1f76a", "mk of a 1-byte key");
        var K = FromHex("7175616e74636f6465630166353231643134313531633237613336400001b004efcdab8967452301");
        var want = new[] { "2c7434d5ce764d211eb308971125cd87", "ab664b064b8c74722367b1af963b3d5e", "f3740c91927b2ce1a149ea9079b7a50f" };
        string labels = "PFR";
        for (int i = 0; i < 3; i++)
        {
            var l = new byte[41];
            Buffer.BlockCopy(K, 0, l, 0, 40);
            l[40] = (byte)labels[i];
            Check(ToHex(ks.Sub(l).Bytes()) == want[i], "k" + labels[i] + " = sub(K || \"" + labels[i] + "\"): " + ToHex(ks.Sub(l).Bytes()));
        }
        Check(Throws<ArgumentException>(() => new KeySchedule(new byte[0])), "an empty key is refused");
        Check(Throws<ArgumentException>(() => new KeySchedule(new byte[256])), "a key of 256 bytes is refused");
        Check(!Throws<ArgumentException>(() => new KeySchedule(new byte[255])), "a key of 255 bytes is taken");
    }

    static TagKey Hex16(byte[] k) { return new TagKey(k); }

    // ------------------------------------------------------------------------------- datagrams built here

    static readonly uint SeedHello = Crc32C.Compute(Encoding.ASCII.GetBytes("quantcodec hello"));
    static readonly uint SeedHelloRequest = Crc32C.Compute(Encoding.ASCII.GetBytes("quantcodec hello request"));

    static void PutLe(List<byte> b, ulong v, int n) { for (int i = 0; i < n; i++) b.Add((byte)(v >> (8 * i))); }

    /// <summary>body || its check: a CRC-32C under seed, or with a tag key the 8-byte SipHash tag.</summary>
    static byte[] SealT(byte[] body, uint seed, TagKey k)
    {
        var b = new List<byte>(body);
        if (k != null) PutLe(b, k.Tag(body, 0, body.Length), 8);
        else PutLe(b, Crc32C.Compute(body, 0, body.Length, seed), 4);
        return b.ToArray();
    }

    /// <summary>A hello of section 13 with no field summaries (ns = 0), the check under keys (null: CRC).</summary>
    static byte[] MakeHello(Schema schema, int history, int maxDatagram, ulong streamId, ulong started, KeySchedule keys, bool predict = false)
    {
        var b = new List<byte>(Encoding.ASCII.GetBytes("QCHL"));
        b.Add(1); b.Add((byte)(predict ? 1 : 0));
        PutLe(b, (ulong)history, 2); PutLe(b, (ulong)maxDatagram, 2); PutLe(b, streamId, 8); PutLe(b, started, 8);
        b.AddRange(Encoding.ASCII.GetBytes(schema.Fingerprint));
        PutLe(b, (ulong)schema.Version, 4);
        b.Add(0);
        PutLe(b, (ulong)schema.Fields.Length, 2); PutLe(b, 0, 2);
        return SealT(b.ToArray(), SeedHello, keys != null ? keys.Hello : null);
    }

    /// <summary>The stream key K of section 11 (40 bytes) and a label after it.</summary>
    static byte[] StreamKey(Schema schema, int history, bool predict, int maxDatagram, ulong streamId, char label)
    {
        var b = new List<byte>(Encoding.ASCII.GetBytes("quantcodec"));
        b.Add(1);
        b.AddRange(Encoding.ASCII.GetBytes(schema.Fingerprint));
        PutLe(b, (ulong)history, 2); b.Add((byte)(predict ? 1 : 0)); PutLe(b, (ulong)maxDatagram, 2); PutLe(b, streamId, 8);
        b.Add((byte)label);
        return b.ToArray();
    }

    static void WriteEG(BitWriter w, ulong u, int k)
    {
        ulong v = (u >> k) + 1;
        int e = 63;
        while ((v >> e) == 0) e--;
        w.Write(1UL << e, e + 1);
        w.Write(v & ((1UL << e) - 1), e);
        if (k > 0) w.Write(u & ((1UL << k) - 1), k);
    }

    /// <summary>A full packet (no baseline) of a schema of one 1-bit slot (one_bit): ids first, first+1, ...</summary>
    static byte[] FullPacket(int seq, int n, ulong first = 1, int bit = 1)
    {
        var w = new BitWriter();
        w.Write((ulong)seq, 16);
        w.Write(0, 1);
        WriteEG(w, (ulong)n, 0);
        if (n > 0)
        {
            w.Write(0, 6);
            WriteEG(w, first, 0);
            for (int i = 1; i < n; i++) WriteEG(w, 0, 0);
            for (int i = 0; i < n; i++) w.Write((ulong)bit, 1);
        }
        return w.ToArray();
    }

    /// <summary>A delta where nothing changed, against seq - bdist (whose entities number m).</summary>
    static byte[] UnchangedDelta(int seq, int bdist, int m)
    {
        var w = new BitWriter();
        w.Write((ulong)seq, 16);
        w.Write(1, 1);
        WriteEG(w, (ulong)(bdist - 1), 2);
        w.Write(0, 1);
        if (m > 0) w.Write(0, 2);       // nothing removed
        WriteEG(w, 0, 0);               // nothing new
        if (m > 0) w.Write(0, 2);       // nothing changed
        return w.ToArray();
    }

    /// <summary>A packet as section 12's fragments of chunk size C, each ending in its check.</summary>
    static List<byte[]> Fragments(byte[] P, int C, uint pcheck, uint seedF, TagKey kF)
    {
        var o = new List<byte[]>();
        int count = (P.Length + C - 1) / C;
        for (int i = 0; i < count; i++)
        {
            var b = new List<byte> { P[0], P[1], (byte)i, (byte)(count - 1) };
            PutLe(b, pcheck, 4);
            for (int j = i * C; j < Math.Min(P.Length, (i + 1) * C); j++) b.Add(P[j]);
            o.Add(SealT(b.ToArray(), seedF, kF));
        }
        return o;
    }

    static byte[] Cat(byte[] a, string s) { var b = new List<byte>(a); b.AddRange(Encoding.ASCII.GetBytes(s)); return b.ToArray(); }

    static string Kind(SnapshotDecoder dec, Received r) { return r == Received.Refused ? dec.LastErrorKind : r.ToString(); }

    // ------------------------------------------------------------------------------- keyed streams

    static void KeyedChecks()
    {
        var schema = Schema.Load(Path.Combine(root, "conformance/schemas/one_bit.json"));
        var key = Seq(16);
        var ks = new KeySchedule(key);
        var dec = new SnapshotDecoder(schema, key);
        Check(dec.Keyed && dec.CheckLength == 8 && !new SnapshotDecoder(schema).Keyed && new SnapshotDecoder(schema).CheckLength == 4, "keyed: T = 8 with a key, 4 without");
        const int H = 8, MD = 64;
        const ulong SID = 0x1122334455667788UL;
        var hello = MakeHello(schema, H, MD, SID, 1000, ks);
        Check(hello.Length == 51 + 8, "keyed: the smallest hello is 51 + T bytes");
        var r = dec.Receive(MakeHello(schema, H, MD, SID, 1000, null));
        Check(r == Received.Refused && dec.LastErrorKind == "no-hello" && !dec.HasStream, "keyed: a hello with a CRC check is no hello to a keyed client: " + Kind(dec, r));
        r = dec.Receive(MakeHello(schema, H, MD, SID, 1000, new KeySchedule(Seq(17))));
        Check(r == Received.Refused && dec.LastErrorKind == "no-hello", "keyed: a hello tagged under another key is refused: " + Kind(dec, r));
        var trunc = new byte[hello.Length - 1];
        Buffer.BlockCopy(hello, 0, trunc, 0, trunc.Length);
        Check(dec.Receive(trunc) == Received.Refused && dec.LastErrorKind == "no-hello", "keyed: a hello cut short is refused");
        r = dec.Receive(hello);
        Check(r == Received.Pending && dec.HasStream && dec.LastAdopted, "keyed: the keyed hello is adopted: " + Kind(dec, r) + " " + dec.LastError);
        var kP = ks.Sub(StreamKey(schema, H, false, MD, SID, 'P'));
        var kF = ks.Sub(StreamKey(schema, H, false, MD, SID, 'F'));
        var kR = ks.Sub(StreamKey(schema, H, false, MD, SID, 'R'));
        uint seedP = Crc32C.Compute(StreamKey(schema, H, false, MD, SID, 'P'));
        uint seedF = Crc32C.Compute(StreamKey(schema, H, false, MD, SID, 'F'));
        Check(dec.PacketKey.K0 == kP.K0 && dec.PacketKey.K1 == kP.K1 && dec.FragmentKey.K0 == kF.K0 && dec.ReplyKey.K1 == kR.K1, "keyed: kP, kF, kR = sub(K || label)");
        Check(dec.PacketSeed == seedP, "keyed: seed_P is still crc32c(K || \"P\") (for pcheck)");
        var P = FullPacket(5, 10);
        string before = dec.StateDigest();
        r = dec.Receive(SealT(P, seedP, null));
        Check(r == Received.Refused && dec.LastErrorKind == "check" && dec.StateDigest() == before, "keyed: a packet with a CRC check is refused, kind check: " + Kind(dec, r));
        var good = SealT(P, 0, kP);
        Check(good.Length == P.Length + 8, "keyed: a whole datagram is P and an 8-byte tag");
        for (int bit = 0; bit < good.Length * 8; bit += 7)
        {
            var bad = (byte[])good.Clone();
            bad[bit / 8] ^= (byte)(1 << (bit % 8));
            r = dec.Receive(bad);
            if (!(r == Received.Refused && dec.LastErrorKind == "check" && dec.StateDigest() == before)) { Check(false, "keyed: a datagram with bit " + bit + " flipped is refused: " + Kind(dec, r)); break; }
        }
        Check(dec.Receive(SealT(P, 0, kF)) == Received.Refused && dec.LastErrorKind == "check", "keyed: a packet tagged with the fragment key is no packet");
        r = dec.Receive(good);
        Check(r == Received.Snapshot && dec.LastSnapshot.Count == 10 && dec.Latest == 5, "keyed: the tagged packet decodes: " + Kind(dec, r) + " " + dec.LastError);
        // minimal lengths: a tagged 1-byte body reaches the packet decoder (malformed), an 8-byte datagram does not
        r = dec.Receive(SealT(new byte[] { 5 }, 0, kP));
        Check(r == Received.Refused && dec.LastErrorKind == "malformed", "keyed: a whole datagram of 1 + T bytes is a packet (malformed here): " + Kind(dec, r));
        r = dec.Receive(SealT(new byte[0], 0, kP));
        Check(r == Received.Refused && dec.LastErrorKind == "check", "keyed: a datagram of T bytes is no packet (check): " + Kind(dec, r));
        // fragments: chunk C = max_datagram - 8 - T = 48; pcheck stays crc32c(P, seed_P)
        var big = FullPacket(6, 600, 100);
        uint pcheck = Crc32C.Compute(big, 0, big.Length, seedP);
        var frags = Fragments(big, MD - 16, pcheck, 0, kF);
        Check(frags.Count >= 3 && frags[0].Length == MD, "keyed: a fragment of a full chunk is max_datagram bytes (" + frags[0].Length + ")");
        var d2 = new SnapshotDecoder(schema, key);
        d2.Receive(hello);
        d2.Receive(good);
        for (int i = 0; i < frags.Count; i++)
        {
            r = d2.Receive(frags[i]);
            bool last = i == frags.Count - 1;
            Check(last ? r == Received.Snapshot && d2.LastSnapshot.Count == 600 && d2.LastSnapshot.Seq == 6 : r == Received.Pending,
                  "keyed: fragment " + i + " of " + frags.Count + ": " + Kind(d2, r) + " " + d2.LastError);
        }
        var d3 = new SnapshotDecoder(schema, key);
        d3.Receive(hello);
        var wrongC = Fragments(big, MD - 12, pcheck, 0, kF);
        r = d3.Receive(wrongC[0]);
        Check(r == Received.Refused && d3.LastErrorKind == "fragment", "keyed: a chunk of the unkeyed size (max_datagram - 12) is refused, kind fragment: " + Kind(d3, r));
        var crcFrags = Fragments(big, MD - 12, pcheck, seedF, null);
        r = d3.Receive(crcFrags[0]);
        Check(r == Received.Refused && d3.LastErrorKind == "check", "keyed: a fragment with a CRC check is refused, kind check: " + Kind(d3, r));
        var tagPcheck = Fragments(big, MD - 16, (uint)kP.Tag(big, 0, big.Length), 0, kF);
        for (int i = 0; i < tagPcheck.Count; i++) r = d3.Receive(tagPcheck[i]);
        Check(r == Received.Refused && d3.LastErrorKind == "fragment", "keyed: a pcheck that is not crc32c(P, seed_P) fails reassembly: " + Kind(d3, r));
        // a fragment's minimal length: 9 + T
        var tiny = new List<byte> { 7, 0, 1, 1 };
        PutLe(tiny, 0, 4);
        r = d3.Receive(SealT(tiny.ToArray(), 0, kF));
        Check(r == Received.Refused && d3.LastErrorKind == "check", "keyed: a fragment without a chunk (8 + T bytes) is no fragment: " + Kind(d3, r));
        // unkeyed decoders refuse keyed datagrams
        var plain = new SnapshotDecoder(schema);
        r = plain.Receive(hello);
        Check(r == Received.Refused && plain.LastErrorKind == "no-hello", "an unkeyed client refuses a keyed hello: " + Kind(plain, r));
    }

    // ------------------------------------------------------------------------------- replies

    static uint Le32(byte[] d, int i) { return (uint)(d[i] | d[i + 1] << 8 | d[i + 2] << 16 | d[i + 3] << 24); }

    static void Replies()
    {
        var schema = Schema.Load(Path.Combine(root, "conformance/schemas/one_bit.json"));
        const int H = 4, MD = 200;
        const ulong SID = 77;
        foreach (bool keyed in new[] { false, true })
        {
            string tag = keyed ? "keyed: " : "";
            byte[] key = keyed ? Seq(16) : null;
            var ks = keyed ? new KeySchedule(key) : null;
            var c = new StreamClient(schema, key: key, nonce: 0xA1B2C3D4u);
            Check(c.Nonce == 0xA1B2C3D4u && c.ReplyDue, tag + "a new client is due a reply");
            var q0 = c.Reply();
            Check(q0 != null && q0[0] == 0x48 && Le32(q0, 6) == 0 && c.Reply() == null && !c.ReplyDue,
                  tag + "a new client's first reply is a hello request (rseq 0), and only one");
            // before a hello: a packet is refused (no-hello), and a hello request is due
            var P0 = FullPacket(10, 3);
            uint seedP = Crc32C.Compute(StreamKey(schema, H, false, MD, SID, 'P'));
            uint seedR = Crc32C.Compute(StreamKey(schema, H, false, MD, SID, 'R'));
            TagKey kP = keyed ? ks.Sub(StreamKey(schema, H, false, MD, SID, 'P')) : null;
            TagKey kR = keyed ? ks.Sub(StreamKey(schema, H, false, MD, SID, 'R')) : null;
            Func<byte[], byte[]> seal = p => SealT(p, seedP, kP);
            string kind = null;
            // what is no datagram is the caller's error, named: no reply due, nothing changed
            var d0 = new SnapshotDecoder(schema);
            Check(Throws<ArgumentNullException>(() => c.Receive(null)) && !c.ReplyDue
                  && Throws<ArgumentNullException>(() => d0.Decode(null))
                  && Throws<ArgumentNullException>(() => d0.Receive(null)), tag + "a null datagram: ArgumentNullException");
            byte[] four = new byte[4];
            foreach (var bad in new[] { new[] { -1, 1 }, new[] { 0, 5 }, new[] { 3, 2 }, new[] { int.MaxValue, 1 }, new[] { 1, int.MaxValue }, new[] { 0, -1 } })
            {
                string msg = null;
                try { c.Receive(four, bad[0], bad[1]); } catch (ArgumentException e) { msg = e.Message; }
                Check(msg != null && msg.Contains("offset " + bad[0] + ", length " + bad[1] + " of 4 bytes") && !c.ReplyDue,
                      tag + "a slice out of range (" + bad[0] + ", " + bad[1] + "): ArgumentException naming it");
            }
            try { c.Receive(seal(P0)); } catch (DecodeException e) { kind = e.Kind; }
            Check(kind == "no-hello" && c.ReplyDue, tag + "a packet before the hello: DecodeException no-hello, a reply due");
            var q = c.Reply();
            int T = keyed ? 8 : 4;
            Check(q != null && q.Length == 26 + T, tag + "a hello request is 26 + T bytes");
            if (q != null && q.Length == 26 + T)
            {
                Check(q[0] == 0x48 && q[1] == 0 && Le32(q, 2) == 0xA1B2C3D4u && Le32(q, 6) == 1, tag + "hello request: type H, flags 0, nonce, rseq 1");
                Check(Encoding.ASCII.GetString(q, 10, 16) == schema.Fingerprint, tag + "hello request: the schema fingerprint");
                var body = new byte[26];
                Buffer.BlockCopy(q, 0, body, 0, 26);
                Check(ToHex(q) == ToHex(SealT(body, SeedHelloRequest, keyed ? ks.HelloRequest : null)), tag + "hello request: its check (" + (keyed ? "SipHash under kQ" : "crc32c, seed_Q") + ")");
            }
            Check(c.Reply() == null, tag + "one reply per datagram that made one due");
            // junk: nothing due
            kind = null;
            try { c.Receive(new byte[] { 1, 2, 3 }); } catch (DecodeException e) { kind = e.Kind; }
            Check(kind == "no-hello" && c.ReplyDue, tag + "junk before a hello is no-hello, and makes a hello request due");
            Check(c.Reply()[0] == 0x48 && c.NextRseq == 3, tag + "the third reply is a hello request with rseq 2");
            // the hello: adopted, an ack due (has_latest 0)
            var hello = MakeHello(schema, H, MD, SID, 1000, ks);
            Check(c.Receive(hello) == null && c.ReplyDue, tag + "an adopted hello makes a reply due");
            var a = c.Reply();
            Check(a != null && a.Length == 16 + T, tag + "an ack is 16 + T bytes");
            if (a == null || a.Length != 16 + T) continue;
            var ab = new byte[16];
            Buffer.BlockCopy(a, 0, ab, 0, 16);
            Check(ToHex(ab) == "4100d4c3b2a1" + "03000000" + "0000" + "00000000", tag + "ack without latest: " + ToHex(ab));
            Check(ToHex(a) == ToHex(SealT(ab, seedR, kR)), tag + "the ack's check (" + (keyed ? "SipHash under kR" : "crc32c, seed_R = crc32c(K || \"R\")") + ")");
            Check(c.Receive(hello) == null && !c.ReplyDue, tag + "a hello seen before makes no reply due");
            // views
            Check(c.Receive(seal(P0)) != null && c.ReplyDue, tag + "a view makes a reply due");
            a = c.Reply();
            Check(ToHex(a).Substring(0, 32) == "4101d4c3b2a1" + "04000000" + "0a00" + "00000000", tag + "ack of latest 10, no older baseline: " + ToHex(a));
            c.Receive(seal(UnchangedDelta(11, 1, 3)));
            c.Receive(seal(UnchangedDelta(12, 1, 3)));
            // 13 lost; 14 against 12
            c.Receive(seal(UnchangedDelta(14, 2, 3)));
            a = c.Reply();
            // history 4: possible baselines are less than 4 older than 14: 13 (not held), 12, 11 (10 is 4 older)
            Check(ToHex(a).Substring(0, 32) == "4101d4c3b2a1" + "05000000" + "0e00" + "06000000", tag + "ack of 14 with 12 and 11 (bits 1, 2): " + ToHex(a));
            Check(ToHex(a) == ToHex(SealT(Sub(a, 16), seedR, kR)), tag + "the ack's check holds");
            Check(c.Reply() == null, tag + "three views, one Reply(): one ack, then nothing");
            // refusals: check / malformed make nothing due; baseline does
            kind = null;
            try { c.Receive(new byte[40]); } catch (DecodeException e) { kind = e.Kind; }
            Check(kind == "check" && !c.ReplyDue, tag + "a refused check makes no reply due");
            kind = null;
            try { c.Receive(seal(new byte[] { 1 })); } catch (DecodeException e) { kind = e.Kind; }
            Check(kind == "malformed" && !c.ReplyDue, tag + "a malformed packet makes no reply due: " + kind);
            kind = null;
            try { c.Receive(MakeHello(schema, H, MD, SID + 1, 999, ks)); } catch (DecodeException e) { kind = e.Kind; }
            Check(kind == "hello" && !c.ReplyDue, tag + "an older stream's hello (hello) makes no reply due: " + kind);
            kind = null;
            try { c.Receive(seal(UnchangedDelta(20, 7, 3))); } catch (DecodeException e) { kind = e.Kind; }
            Check(kind == "baseline" && c.ReplyDue, tag + "a packet whose baseline is not held makes a reply due: " + kind);
            a = c.Reply();
            Check(a[0] == 0x41 && Le32(a, 6) == 6 && a[10] == 14, tag + "the ack after a baseline refusal says latest 14 again, rseq 6");
            // a fragment that completes nothing: not due
            var frag = Fragments(FullPacket(15, 2000), MD - 8 - T, Crc32C.Compute(FullPacket(15, 2000), 0, FullPacket(15, 2000).Length, seedP), 0, null);
            if (!keyed) { Check(frag.Count >= 2 && c.Receive(SealT(Sub(frag[0], frag[0].Length - 4), Crc32C.Compute(StreamKey(schema, H, false, MD, SID, 'F')), null)) == null && !c.ReplyDue, "a fragment that completes nothing makes no reply due"); }
            // a newer stream: adopted, an ack without latest
            Check(c.Receive(MakeHello(schema, H, MD, SID + 2, 2000, ks)) == null && c.ReplyDue, tag + "a newer stream's hello is adopted: a reply due");
            a = c.Reply();
            Check(a != null && a.Length == 16 + T && a[1] == 0 && Le32(a, 6) == 7, tag + "the new stream's first ack has no latest, rseq 7");
            // limits: a refusal of kind limits makes nothing due
            var small = new StreamClient(schema, key: key, maxBytes: 1000, nonce: 1);
            small.Reply();      // (its first reply, the hello request of a new client)
            kind = null;
            try { small.Receive(hello); } catch (DecodeException e) { kind = e.Kind; }
            Check(kind == "limits" && !small.ReplyDue && !small.Decoder.HasStream, tag + "a hello past max_bytes: limits, not adopted, nothing due: " + kind);
        }
        // maxBytes must be positive, as in Python and JS (0 is not "no bound" nor "the default")
        foreach (long bad in new long[] { 0, -1 })
        {
            string msg = null;
            try { new StreamClient(schema, maxBytes: bad); } catch (ArgumentOutOfRangeException e) { msg = e.Message; }
            Check(msg != null && msg.Contains("MaxBytes must be positive (bytes), not " + bad), "maxBytes " + bad + " refused: " + msg);
        }
        // a nonce drawn at random (two clients: equal with probability 2**-32)
        Check(new StreamClient(schema).Nonce != new StreamClient(schema).Nonce || new StreamClient(schema).Nonce != new StreamClient(schema).Nonce, "a random nonce per client");
    }

    static byte[] Sub(byte[] a, int n) { var b = new byte[n]; Buffer.BlockCopy(a, 0, b, 0, n); return b; }

    /// <summary>Keep-alives (wire-format section 18; Python's test_session.py
    /// test_reply_makes_a_keep_alive_every_32nd_call_while_none_is_due): a call of Reply() that would
    /// return nothing returns the reply all the same when the 31 calls before it, in a row, returned
    /// nothing: a hello request while no stream is adopted, an ack after; rseq counted as any reply;
    /// any reply returned starts the count again; ReplyDue is not changed by it.</summary>
    static void KeepAlives()
    {
        var schema = Schema.Load(Path.Combine(root, "conformance/schemas/one_bit.json"));
        const int H = 4, MD = 200;
        const ulong SID = 0x5EED;
        Check(StreamClient.KeepAliveCalls == 32, "KeepAliveCalls is 32, as Python's KEEPALIVE_CALLS");
        foreach (bool keyed in new[] { false, true })
        {
            string tag = keyed ? "keyed: " : "";
            byte[] key = keyed ? Seq(16) : null;
            var ks = keyed ? new KeySchedule(key) : null;
            int T = keyed ? 8 : 4;
            var c = new StreamClient(schema, key: key, nonce: 7);
            Check(c.StreamId == null, tag + "no stream adopted: StreamId null");
            // 65 calls, nothing received: the first is due (a hello request), then every 32nd
            var got = new byte[65][];
            bool dueSeen = false;
            for (int i = 0; i < got.Length; i++)
            {
                got[i] = c.Reply();
                if (i > 0) dueSeen |= c.ReplyDue;
            }
            var made = new List<int>();
            for (int i = 0; i < got.Length; i++) if (got[i] != null) made.Add(i);
            Check(string.Join(",", made) == "0,32,64", tag + "65 calls with nothing received: replies at calls 0, 32, 64: " + string.Join(",", made));
            bool requests = made.Count == 3;
            for (int k = 0; requests && k < made.Count; k++)
            {
                var q = got[made[k]];
                requests = q.Length == 26 + T && q[0] == 0x48 && Le32(q, 2) == 7 && Le32(q, 6) == (uint)k
                           && Encoding.ASCII.GetString(q, 10, 16) == schema.Fingerprint && ReplyHolds(c, q);
            }
            Check(requests, tag + "the keep-alives before a stream are hello requests, rseq 0, 1, 2, their checks right");
            Check(c.NextRseq == 3 && !c.ReplyDue && !dueSeen, tag + "rseq counted as any reply's (next 3); ReplyDue stays false (a keep-alive is no due reply)");
            // a stream adopted and a view: then 40 calls with nothing received: one keep-alive ack, at the 32nd
            uint seedP = Crc32C.Compute(StreamKey(schema, H, false, MD, SID, 'P'));
            TagKey kP = keyed ? ks.Sub(StreamKey(schema, H, false, MD, SID, 'P')) : null;
            Check(c.Receive(MakeHello(schema, H, MD, SID, 1000, ks)) == null && c.ReplyDue && c.StreamId == SID,
                  tag + "a hello adopted: a reply due, StreamId its stream_id");
            var a = c.Reply();
            Check(a != null && a[0] == 0x41 && Le32(a, 6) == 3, tag + "the adopted hello's ack (rseq 3)");
            Check(c.Receive(SealT(FullPacket(10, 3), seedP, kP)) != null && c.ReplyDue, tag + "a view: a reply due");
            a = c.Reply();
            Check(a != null && a[0] == 0x41 && a[1] == 1 && a[10] == 10 && Le32(a, 6) == 4, tag + "its ack (latest 10, rseq 4)");
            got = new byte[40][];
            for (int i = 0; i < got.Length; i++)
            {
                if (i % 5 == 2)     // junk now and then: refused (check), no reply due; the count goes on
                {
                    string kind = null;
                    try { c.Receive(new byte[40]); } catch (DecodeException e) { kind = e.Kind; }
                    if (kind != "check" || c.ReplyDue) Check(false, tag + "junk: refused (check), no reply due: " + kind);
                }
                got[i] = c.Reply();
            }
            made.Clear();
            for (int i = 0; i < got.Length; i++) if (got[i] != null) made.Add(i);
            Check(string.Join(",", made) == "31", tag + "after a stream is adopted, 31 calls return nothing, the 32nd a keep-alive: " + string.Join(",", made));
            a = made.Count == 1 ? got[made[0]] : null;
            Check(a != null && a.Length == 16 + T && a[0] == 0x41 && a[1] == 1 && a[10] == 10 && a[11] == 0 && Le32(a, 2) == 7 && Le32(a, 6) == 5
                  && ReplyHolds(c, a), tag + "the keep-alive is the ack due replies make (latest 10, rseq 5), its check right");
            // a due reply starts the count again, wherever it was
            Check(c.Receive(SealT(UnchangedDelta(11, 1, 3), seedP, kP)) != null && c.Reply() != null, tag + "a view: a reply (due)");
            int nulls = 0;
            while (nulls < 40 && c.Reply() == null) nulls++;
            Check(nulls == 31, tag + "after it, 31 calls return nothing, then a keep-alive: " + nulls);
            for (int i = 0; i < 10; i++) c.Reply();                   // 10 into the next count ...
            Check(c.Receive(SealT(UnchangedDelta(12, 1, 3), seedP, kP)) != null, tag + "a view");
            a = c.Reply();                                            // ... a due reply: the count restarts
            Check(a != null && a[10] == 12, tag + "the due ack (latest 12)");
            nulls = 0;
            while (nulls < 40 && c.Reply() == null) nulls++;
            Check(nulls == 31 && c.NextRseq == 10, tag + "a due reply restarts the count: 31 nothing, then a keep-alive (" + nulls + ", next rseq " + c.NextRseq + ")");
            // a newer stream adopted: StreamId changes (the moment to reset an Interpolator)
            Check(c.Receive(MakeHello(schema, H, MD, SID + 1, 2000, ks)) == null && c.StreamId == SID + 1 && c.Reply() != null,
                  tag + "a newer stream's hello adopted: StreamId its stream_id, an ack due");
        }
    }

    // ------------------------------------------------------------------------------- limits

    static void Limits()
    {
        var schema = Schema.Load(Path.Combine(root, "conformance/schemas/one_bit.json"));
        Check(SnapshotDecoder.DefaultMaxBytes == 268435456 && new SnapshotDecoder(schema).MaxBytes == 268435456, "the default max_bytes is 256 MiB");
        const int H = 4, MD = 64;
        long need = (2 * H - 1) * 256 + 256 * MD;
        var dec = new SnapshotDecoder(schema, null, need - 1);
        var hello = MakeHello(schema, H, MD, 5, 1, null);
        var r = dec.Receive(hello);
        Check(r == Received.Refused && dec.LastErrorKind == "limits" && !dec.HasStream && dec.StateDigest() == new SnapshotDecoder(schema).StateDigest(),
              "check 1: a hello needing (2h - 1) * 256 + 256 * max_datagram = " + need + " bytes is refused at max_bytes " + (need - 1) + ": " + Kind(dec, r));
        Check(dec.LastError != null && dec.LastError.Contains("max_bytes"), "a limits refusal says what passed what: " + dec.LastError);
        dec.MaxBytes = need;
        Check(dec.Receive(hello) == Received.Pending && dec.HasStream, "check 1: the same hello is adopted at max_bytes " + need);
        // a newer stream's hello is checked too; the one adopted stays
        dec.MaxBytes = need - 1;
        r = dec.Receive(MakeHello(schema, H, MD, 6, 2, null));
        Check(r == Received.Refused && dec.LastErrorKind == "limits" && dec.Stream.StreamId == 5, "check 1: a newer stream's hello past the bound is refused, the stream kept: " + Kind(dec, r));
        // check 2: S = 1, an entity costs 16 bytes, a snapshot 256 + 16 n; the reassembly 256 * 64
        uint seedP = Crc32C.Compute(StreamKey(schema, H, false, MD, 5, 'P'));
        long reass = 256L * MD;
        Check(dec.SnapshotCost(10) == 256 + 160, "the cost of a snapshot of 10 one-slot entities: 416");
        dec.MaxBytes = reass + 256 + 16 * 10 - 1;
        string before = dec.StateDigest();
        r = dec.Receive(SealT(FullPacket(1, 10), seedP, null));
        Check(r == Received.Refused && dec.LastErrorKind == "limits" && dec.StateDigest() == before && dec.Latest == -1,
              "check 2: a full packet of 10 entities refused one byte short, the state unchanged: " + Kind(dec, r) + " " + dec.LastError);
        Check(dec.PooledSnapshots == 0, "check 2: the refused packet made no snapshot (SPEC 8: refused before anything is allocated; one went to the decoder's pool before): " + dec.PooledSnapshots);
        dec.MaxBytes += 1;
        r = dec.Receive(SealT(FullPacket(1, 10), seedP, null));
        Check(r == Received.Snapshot && dec.HeldBytes == 416, "check 2: the same packet at the bound decodes; 416 bytes held: " + Kind(dec, r) + " " + dec.HeldBytes);
        // the next snapshot counts what is held (H = 416)
        before = dec.StateDigest();
        r = dec.Receive(SealT(UnchangedDelta(2, 1, 10), seedP, null));
        Check(r == Received.Refused && dec.LastErrorKind == "limits" && dec.StateDigest() == before, "check 2: a delta of 10 entities with 416 held is refused: " + Kind(dec, r));
        dec.MaxBytes = reass + 2 * 416;
        r = dec.Receive(SealT(UnchangedDelta(2, 1, 10), seedP, null));
        Check(r == Received.Snapshot && dec.HeldBytes == 832, "check 2: with room for two, it decodes: " + Kind(dec, r));
        // a packet whose count is broken is malformed first, whatever the bound
        var w = new BitWriter();
        w.Write(3, 16); w.Write(0, 1); WriteEG(w, 100000, 0);
        dec.MaxBytes = 1;
        r = dec.Receive(SealT(w.ToArray(), seedP, null));
        Check(r == Received.Refused && dec.LastErrorKind == "malformed", "a count larger than the packet can hold is malformed before limits: " + Kind(dec, r));
        // a broken header is malformed before anything
        r = dec.Receive(SealT(new byte[] { 1 }, seedP, null));
        Check(r == Received.Refused && dec.LastErrorKind == "malformed", "a short header is malformed before limits: " + Kind(dec, r));
        // the window drops old snapshots, and H with them: history 4 keeps 7; a stream of 30 unchanged
        // deltas holds 7 snapshots' worth at most
        var d2 = new SnapshotDecoder(schema, null, need + 7 * 416 + 16 * 416);
        d2.Receive(hello);
        d2.Receive(SealT(FullPacket(1, 10), seedP, null));
        long most = 0;
        for (int s = 2; s < 32; s++)
        {
            r = d2.Receive(SealT(UnchangedDelta(s, 1, 10), seedP, null));
            if (r != Received.Snapshot) { Check(false, "the window of unchanged deltas: " + Kind(d2, r) + " at " + s); break; }
            most = Math.Max(most, d2.HeldBytes);
        }
        Check(most == 7 * 416, "the window: at most 2 * history - 1 = 7 snapshots counted (" + most + " bytes)");
        // a bound that the window fits exactly: every delta decodes, since H leaves out the snapshot a
        // newer packet pushes out of the window (section 19; before, this client refused the 8th
        // packet and, with nothing else moving the window, every packet after it)
        var d3 = new SnapshotDecoder(schema, null, reass + 7 * 416);
        d3.Receive(hello);
        int ok = d3.Receive(SealT(FullPacket(1, 10), seedP, null)) == Received.Snapshot ? 1 : 0;
        for (int s = 2; s < 32; s++) if (d3.Receive(SealT(UnchangedDelta(s, 1, 10), seedP, null)) == Received.Snapshot) ok++;
        Check(ok == 31 && d3.HeldBytes == 7 * 416, "a bound of the reassembly and the window's 7 snapshots: every packet decodes (" + ok + " of 31 decoded, " + d3.HeldBytes + " bytes held)");
        var d4 = new SnapshotDecoder(schema, null, reass + 7 * 416 - 1);
        d4.Receive(hello);
        ok = d4.Receive(SealT(FullPacket(1, 10), seedP, null)) == Received.Snapshot ? 1 : 0;
        int lim = 0;
        for (int s = 2; s < 32; s++) { r = d4.Receive(SealT(UnchangedDelta(s, 1, 10), seedP, null)); if (r == Received.Snapshot) ok++; else if (d4.LastErrorKind == "limits") lim++; }
        Check(ok == 6 && lim == 1, "one byte less: 6 snapshots, then limits for the 7th, which pushes none out (the next delta's baseline is then out of reach: baseline): " + ok + " decoded, " + lim + " limits");
        // a late packet does not move the window: H counts every held snapshot then
        var d5 = new SnapshotDecoder(schema, null, reass + 7 * 416);
        d5.Receive(hello);
        d5.Receive(SealT(FullPacket(1, 10), seedP, null));
        for (int s = 2; s <= 7; s++) if (s != 5) d5.Receive(SealT(UnchangedDelta(s, s == 6 ? 2 : 1, 10), seedP, null));
        Check(d5.Latest == 7 && d5.HeldBytes == 6 * 416, "6 held, 5 missing: " + d5.Latest + " " + d5.HeldBytes);
        before = d5.StateDigest();
        r = d5.Receive(SealT(FullPacket(5, 11), seedP, null));
        Check(r == Received.Refused && d5.LastErrorKind == "limits" && d5.StateDigest() == before,
              "a late packet of 11 entities beside 6 held snapshots is refused: it pushes none out (" + Kind(d5, r) + ")");
        r = d5.Receive(SealT(FullPacket(5, 10), seedP, null));
        Check(r == Received.Snapshot && d5.HeldBytes == 7 * 416, "the late packet of 10 fits, the window full: " + Kind(d5, r));
        r = d5.Receive(SealT(FullPacket(8, 10), seedP, null));
        Check(r == Received.Snapshot && d5.HeldBytes == 7 * 416 && d5.Latest == 8, "a newer packet then pushes out snapshot 1 and fits: " + Kind(d5, r));
        WindowSizedClient();
    }

    /// <summary>Section 19: H counts the held snapshots the packet leaves in the window. A client whose
    /// max_bytes holds exactly 2 * history - 1 snapshots and reassembly (the sizing docs/views.md gives)
    /// refused every packet once its window was full, and for good: only a packet that decodes moves the
    /// window. (Python's test_a_client_sized_for_its_window_decodes_every_packet; the kit's limits_window.)</summary>
    static void WindowSizedClient()
    {
        var schema = Schema.Load(Path.Combine(root, "conformance/schemas/one_bit.json"));
        const int N = 50, H = 16, MD = 1200;
        const ulong SID = 0x5151;
        var sd = new SnapshotDecoder(schema);
        long one = sd.SnapshotCost(N);
        Check(one == 256 + N * (8 + 8 * 1), "a snapshot of 50 one-slot entities costs " + one);
        long sized = (2 * H - 1) * one + 256L * MD;
        var hello = MakeHello(schema, H, MD, SID, 1, null);
        uint seedP = Crc32C.Compute(StreamKey(schema, H, false, MD, SID, 'P'));
        // each delta against the client's latest (what its acks tell the server), from a full packet
        Func<int, StreamClient, byte[]> packet = (t, c) => SealT(c.Decoder.Latest < 0 ? FullPacket(t & 0xFFFF, N)
            : UnchangedDelta(t & 0xFFFF, (t - c.Decoder.Latest) & 0xFFFF, N), seedP, null);
        var client = new StreamClient(schema, null, sized, 1);
        Check(client.Receive(hello) == null && client.Decoder.HasStream, "window-sized: the hello is adopted");
        int views = 0, over = 0;
        string firstError = null;
        for (int t = 65536 - 50; t < 65536 + 150; t++)            // (across the wrap: it happened anywhere)
        {
            try { if (client.Receive(packet(t, client)) != null) views++; }
            catch (DecodeException e) { if (firstError == null) firstError = t + ": " + e.Kind + " " + e.Message; }
            client.Reply();
            if (client.Decoder.HeldBytes + 256L * MD > sized) over++;
        }
        Check(views == 200 && firstError == null && over == 0, "window-sized: every one of 200 packets decodes (" + views + "; " + firstError + ")");
        Check(client.Decoder.HeldBytes + 256L * MD == sized && client.Decoder.HeldBaselines().Count == H && client.Decoder.Latest == 149,
              "window-sized: the window full, exactly (" + client.Decoder.HeldBytes + " + reassembly of " + sized + "), latest 149: " + client.Decoder.Latest);
        // one byte less: the packet that would make the window's 31st snapshot is refused, changing
        // nothing; the next, which pushes the oldest out, fits again
        var small = new StreamClient(schema, null, sized - 1, 2);
        small.Receive(hello);
        var kinds = new List<string>();
        bool unchanged = true;
        for (int t = 0; t < 40; t++)
        {
            string before = small.Decoder.StateDigest();
            try { small.Receive(packet(t, small)); }
            catch (DecodeException e) { kinds.Add(t + ":" + e.Kind); if (small.Decoder.StateDigest() != before) unchanged = false; }
            small.Reply();
        }
        Check(kinds.Count >= 1 && kinds[0] == (2 * H - 2) + ":limits" && kinds.TrueForAll(k => k.EndsWith(":limits")) && unchanged && small.Decoder.Latest == 39,
              "one byte less: the 31st snapshot refused as limits, the state unchanged, then decoding again: " + string.Join(", ", kinds) + "; latest " + small.Decoder.Latest);
    }

    // ------------------------------------------------------------------------------- hello adoption, reassembly bound

    /// <summary>Section 13: another stream's hello whose started is not later is adopted while the adopted
    /// stream has decoded no packet (latest none), refused (kind hello) once it has.</summary>
    static void HelloAdoption()
    {
        var schema = Schema.Load(Path.Combine(root, "conformance/schemas/one_bit.json"));
        const int H = 4, MD = 200;
        const ulong A = 0xA0, B = 0xB0, C = 0xC0;
        var helloA = MakeHello(schema, H, MD, A, 2000, null);
        var helloB = MakeHello(schema, H, MD, B, 1000, null);      // an older stream (a stray, a replay)
        var helloC = MakeHello(schema, H, MD, C, 2000, null);      // another stream started at the same time
        Func<ulong, uint> seedP = sid => Crc32C.Compute(StreamKey(schema, H, false, MD, sid, 'P'));
        var dec = new SnapshotDecoder(schema);
        Check(dec.Receive(helloA) == Received.Pending && dec.LastAdopted && dec.Stream.StreamId == A, "hello adoption: the first hello is adopted");
        // a packet refused (its baseline not held) decodes nothing: latest stays none
        var r = dec.Receive(SealT(UnchangedDelta(5, 1, 3), seedP(A), null));
        Check(r == Received.Refused && dec.LastErrorKind == "baseline" && !dec.HasLatest, "hello adoption: a delta without its baseline is refused, latest none: " + Kind(dec, r));
        r = dec.Receive(helloB);
        Check(r == Received.Pending && dec.LastAdopted && dec.Stream.StreamId == B && dec.Stream.Started == 1000,
              "hello adoption: an older stream's hello is adopted while the adopted stream has decoded no packet: " + Kind(dec, r) + " " + dec.LastError);
        r = dec.Receive(helloB);
        Check(r == Received.Pending && !dec.LastAdopted && dec.Stream.StreamId == B, "hello adoption: the adopted hello again is ignored");
        r = dec.Receive(helloA);
        Check(r == Received.Pending && dec.LastAdopted && dec.Stream.StreamId == A, "hello adoption: the newer stream's hello takes the client back: " + Kind(dec, r));
        r = dec.Receive(helloC);
        Check(r == Received.Pending && dec.LastAdopted && dec.Stream.StreamId == C, "hello adoption: a hello started at the same time is adopted before any packet: " + Kind(dec, r));
        r = dec.Receive(helloA);
        Check(r == Received.Pending && dec.LastAdopted && dec.Stream.StreamId == A, "hello adoption: and back again before any packet: " + Kind(dec, r));
        // a packet of A decoded: the older (and the equally old) stream's hello is refused, nothing changed
        r = dec.Receive(SealT(FullPacket(10, 3), seedP(A), null));
        Check(r == Received.Snapshot && dec.Latest == 10, "hello adoption: a packet of the adopted stream decodes: " + Kind(dec, r));
        string before = dec.StateDigest();
        foreach (var h in new[] { helloB, helloC })
        {
            r = dec.Receive(h);
            Check(r == Received.Refused && dec.LastErrorKind == "hello" && dec.Stream.StreamId == A && dec.Latest == 10 && dec.StateDigest() == before
                  && dec.LastError.Contains("older stream") && dec.LastError.Contains("has decoded packets"),
                  "hello adoption: another stream's hello not started later is refused once a packet is decoded: " + Kind(dec, r) + " " + dec.LastError);
        }
        // a newer stream is adopted still, and starts the client over: then an older one is taken again
        r = dec.Receive(MakeHello(schema, H, MD, 0xD0, 3000, null));
        Check(r == Received.Pending && dec.LastAdopted && dec.Stream.StreamId == 0xD0 && !dec.HasLatest, "hello adoption: a newer stream's hello is adopted after packets: " + Kind(dec, r));
        r = dec.Receive(helloA);
        Check(r == Received.Pending && dec.LastAdopted && dec.Stream.StreamId == A, "hello adoption: the new stream has decoded nothing: an older hello is taken: " + Kind(dec, r));
        // the session client: an older hello adopted before any packet makes an ack due, refused after makes nothing due
        var c = new StreamClient(schema, nonce: 1);
        c.Reply();
        c.Receive(helloA);
        c.Reply();
        string kind = "(none)";
        try { kind = c.Receive(helloB) == null ? null : "a view"; } catch (DecodeException e) { kind = e.Kind; }
        Check(kind == null && c.ReplyDue && c.Decoder.Stream.StreamId == B, "hello adoption: the client adopts the older hello before any packet, a reply due: " + kind);
        c.Reply();
        c.Receive(helloA);
        c.Receive(SealT(FullPacket(10, 3), seedP(A), null));
        c.Reply();
        kind = null;
        try { c.Receive(helloB); } catch (DecodeException e) { kind = e.Kind; }
        Check(kind == "hello" && !c.ReplyDue && c.Decoder.Stream.StreamId == A, "hello adoption: the client refuses it once a packet is decoded (hello), nothing due: " + kind);
        // keyed alike
        var key = Seq(16);
        var ks = new KeySchedule(key);
        var kd = new SnapshotDecoder(schema, key);
        kd.Receive(MakeHello(schema, H, MD, A, 2000, ks));
        r = kd.Receive(MakeHello(schema, H, MD, B, 1000, ks));
        Check(r == Received.Pending && kd.LastAdopted && kd.Stream.StreamId == B, "hello adoption, keyed: an older hello is adopted before any packet: " + Kind(kd, r));
        kd.Receive(MakeHello(schema, H, MD, A, 2000, ks));
        r = kd.Receive(SealT(FullPacket(10, 3), 0, ks.Sub(StreamKey(schema, H, false, MD, A, 'P'))));
        Check(r == Received.Snapshot, "hello adoption, keyed: a packet decodes: " + Kind(kd, r));
        r = kd.Receive(MakeHello(schema, H, MD, B, 1000, ks));
        Check(r == Received.Refused && kd.LastErrorKind == "hello" && kd.Stream.StreamId == A, "hello adoption, keyed: refused after: " + Kind(kd, r));
    }

    /// <summary>Section 12, rule 4: past 256 * max_datagram, partial packets are dropped oldest first (by how
    /// far their seq is behind latest, then in the order begun); a fragment whose own packet comes up
    /// first is not kept. A duplicated older packet's fragments never push out a newer packet.</summary>
    static void ReassemblyBound()
    {
        var schema = Schema.Load(Path.Combine(root, "conformance/schemas/one_bit.json"));
        const int H = 8, MD = 64, C = MD - 8 - 4;      // chunks of 52 bytes: 315 of them fit 256 * 64 bytes
        const ulong SID = 0x5151;
        const int Fit = 256 * MD / C;
        uint seedP = Crc32C.Compute(StreamKey(schema, H, false, MD, SID, 'P'));
        uint seedF = Crc32C.Compute(StreamKey(schema, H, false, MD, SID, 'F'));
        var hello = MakeHello(schema, H, MD, SID, 1, null);
        Func<int, List<byte[]>> frags = seq =>
        {
            var P = FullPacket(seq, 40000, (ulong)(1000 * seq));
            return Fragments(P, C, Crc32C.Compute(P, 0, P.Length, seedP), seedF, null);
        };
        var f2 = frags(2);
        var f3 = frags(3);
        int n = f3.Count;
        Check(f2.Count == n && n <= 256 && 2 * n > Fit && n < Fit, "reassembly bound: packets of " + n + " chunks, two of them more than the " + Fit + " that fit");
        Func<SnapshotDecoder> fresh = () =>
        {
            var d = new SnapshotDecoder(schema);
            d.Receive(hello);
            d.Receive(SealT(FullPacket(1, 3), seedP, null));    // latest 1: packets 2 and 3 are newer, 3 the newest
            return d;
        };
        // (a) packet 3 begun, then packet 2 again in full (a duplicated older packet): 2's chunks give way,
        // 3's stay, and 3 completes; 2 never does
        var dec = fresh();
        int k = n - 10, snaps2 = 0, pending = 0;
        for (int i = 0; i < k; i++) pending += dec.Receive(f3[i]) == Received.Pending ? 1 : 0;
        long held3 = dec.PartialBytes;
        Check(pending == k && held3 == (long)k * C, "reassembly bound: " + k + " chunks of packet 3 held (" + held3 + " bytes)");
        bool kept3 = true;
        long most = 0;
        foreach (var f in f2)
        {
            var r = dec.Receive(f);
            if (r == Received.Snapshot) snaps2++;
            else if (r != Received.Pending) Check(false, "reassembly bound: packet 2's fragment refused: " + Kind(dec, r) + " " + dec.LastError);
            most = Math.Max(most, dec.PartialBytes);
            kept3 &= dec.StateDigest().Contains("3/" + n + "/");
        }
        Check(snaps2 == 0 && kept3 && most <= 256L * MD, "reassembly bound: an older packet's fragments never push out the newer packet (" + snaps2
              + " of packet 2 completed, packet 3 kept: " + kept3 + ", at most " + most + " bytes held)");
        int left = n - (Fit - k);     // packet 2 dropped itself when its chunk came up, then began again
        Check(dec.PartialCount == 2 && dec.PartialBytes == (long)(k + left - 1) * C,
              "reassembly bound: packet 2's own partial dropped, its chunk not kept, then begun again: " + dec.PartialCount + " partials, " + dec.PartialBytes + " bytes");
        Received last = Received.Pending;
        for (int i = k; i < n; i++) last = dec.Receive(f3[i]);
        Check(last == Received.Snapshot && dec.Latest == 3 && dec.LastSnapshot.Count == 40000, "reassembly bound: packet 3 completes: " + Kind(dec, last) + " " + dec.LastError);
        // (b) packet 3 begun with a few chunks, then all but one of packet 2's: 3's later chunks push
        // out packet 2 (begun later, but older), and 3 completes
        dec = fresh();
        for (int i = 0; i < 10; i++) dec.Receive(f3[i]);
        for (int i = 0; i < n - 1; i++) dec.Receive(f2[i]);
        Check(dec.PartialCount == 2 && dec.PartialBytes == (long)(10 + n - 1) * C, "reassembly bound: 3 begun first, then 2 all but one: two partials");
        last = Received.Pending;
        int p = 0;
        for (int i = 10; i < n; i++) { last = dec.Receive(f3[i]); if (dec.PartialBytes > 256L * MD) p++; }
        Check(last == Received.Snapshot && dec.Latest == 3 && dec.PartialCount == 0 && p == 0,
              "reassembly bound: a newer packet's chunks push out the older partial packet, and it completes: " + Kind(dec, last) + " " + dec.LastError + ", " + dec.PartialCount + " partials");
        // its last fragment of 2 now: a new partial packet, nothing completed
        Check(dec.Receive(f2[n - 1]) == Received.Pending && dec.PartialCount == 1, "reassembly bound: packet 2's chunks were dropped with it");
        // (c) with latest none, all rank equal: the partial packets begun earliest go first, a new one last
        dec = new SnapshotDecoder(schema);
        dec.Receive(hello);
        for (int i = 0; i < n - 1; i++) dec.Receive(f3[i]);
        for (int i = 0; i < Fit - (n - 1); i++) dec.Receive(f2[i]);
        Check(dec.PartialCount == 2 && dec.PartialBytes == (long)Fit * C, "reassembly bound, latest none: the bound reached with 3 then 2");
        var r2 = dec.Receive(f2[Fit - (n - 1)]);
        Check(r2 == Received.Pending && dec.PartialCount == 1 && dec.PartialBytes == (long)(Fit - (n - 1) + 1) * C && !dec.StateDigest().Contains("3/" + n + "/"),
              "reassembly bound, latest none: all rank equal, the one begun earliest (3) goes first: " + dec.PartialCount + " partials");
        // a new packet ranks last among its equals: with 2 then 3 held, 7's new partial drops 2 and is kept
        Func<SnapshotDecoder> full = () =>
        {
            var d = new SnapshotDecoder(schema);
            d.Receive(hello);
            for (int i = 0; i < n - 1; i++) d.Receive(f2[i]);
            for (int i = 0; i < Fit - (n - 1); i++) d.Receive(f3[i]);
            return d;
        };
        dec = full();
        Check(dec.PartialBytes == (long)Fit * C && dec.PartialCount == 2, "reassembly bound, latest none: 2 then 3 fill the bound");
        r2 = dec.Receive(frags(7)[0]);
        string parts = dec.StateDigest().Split('|')[4];
        Check(r2 == Received.Pending && dec.PartialCount == 2 && !parts.Contains("2/" + n + "/") && parts.Contains("3/" + n + "/") && parts.Contains("7/" + n + "/"),
              "reassembly bound, latest none: a new packet's chunk drops the one begun earliest, and is kept: " + parts);
        // its own packet first among equals: 2's last chunk drops 2 and is not kept (it does not complete); 3 stays
        dec = full();
        r2 = dec.Receive(f2[n - 1]);
        parts = dec.StateDigest().Split('|')[4];
        Check(r2 == Received.Pending && dec.PartialCount == 1 && parts.Contains("3/" + n + "/") && dec.PartialBytes == (long)(Fit - (n - 1)) * C,
              "reassembly bound, latest none: a chunk whose own packet comes up first drops it and is not kept; the later packet stays: " + Kind(dec, r2) + " " + parts);
    }

    // ------------------------------------------------------------------------------- the runner's options

    /// <summary>The lines a StreamClient (nonce given) or a plain decoder gives a datagram file, as qc-decode prints them
    /// (idle: --idle, the calls of Reply() after each datagram's reply).</summary>
    static List<string> SessionLines(Schema schema, List<byte[]> datagrams, byte[] key, long maxBytes, uint? nonce, int idle = 0)
    {
        var o = new List<string>();
        var client = nonce.HasValue ? new StreamClient(schema, key, maxBytes, nonce.Value) : null;
        var dec = client != null ? client.Decoder : new SnapshotDecoder(schema, key, maxBytes);
        foreach (var d in datagrams)
        {
            if (client == null) { o.Add(Line(dec, dec.Receive(d))); continue; }
            Received r;
            try { r = client.Receive(d) != null ? Received.Snapshot : Received.Pending; }
            catch (DecodeException) { r = Received.Refused; }
            string line = Line(dec, r);
            var reply = client.Reply();
            line = line.Substring(0, line.Length - 1) + ",\"reply\":" + (reply == null ? "null" : "\"" + ToHex(reply) + "\"") + "}";
            if (idle > 0)
            {
                var calls = new List<string>();
                for (int k = 0; k < idle; k++) { var ir = client.Reply(); calls.Add(ir == null ? "null" : "\"" + ToHex(ir) + "\""); }
                line = line.Substring(0, line.Length - 1) + ",\"idle\":[" + string.Join(",", calls) + "]}";
            }
            o.Add(line);
        }
        return o;
    }

    static List<string> RunRunner(params string[] args)
    {
        var psi = new ProcessStartInfo("mono", "\"" + Path.Combine(here, "build~", "qc-decode.exe") + "\" " + string.Join(" ", args))
        { UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true };
        using (var p = Process.Start(psi))
        {
            var o = new List<string>();
            string l;
            while ((l = p.StandardOutput.ReadLine()) != null) o.Add(l);
            string err = p.StandardError.ReadToEnd();
            p.WaitForExit();
            if (p.ExitCode != 0) { o.Add("exit " + p.ExitCode); o.Add(err); }     // (then what it said)
            return o;
        }
    }

    /// <summary>Whether qc-decode given args is a usage error (exit status 2, nothing printed) whose message names needle.</summary>
    static bool UsageError(string needle, params string[] args)
    {
        var r = RunRunner(args);
        bool ok = r.Count == 2 && r[0] == "exit 2" && r[1].Contains(needle);
        if (!ok) Console.WriteLine("  (qc-decode " + string.Join(" ", args) + ": " + Trunc(string.Join(" | ", r)) + ")");
        return ok;
    }

    static void RunnerOptions()
    {
        byte[] key; long mb; uint? nonce; int idle; string err;
        var st = Json.Parse("{\"name\": \"x\", \"args\": [\"--key\", \"00ff10\", \"--replies\", \"7\", \"--max-bytes\", \"100000\"]}");
        Check(KitArgs(st, out key, out mb, out nonce, out idle, out err) && ToHex(key) == "00ff10" && mb == 100000 && nonce == 7 && idle == 0, "a kit stream's args: --key, --replies, --max-bytes");
        Check(KitArgs(Json.Parse("{\"name\": \"x\"}"), out key, out mb, out nonce, out idle, out err) && key == null && mb == SnapshotDecoder.DefaultMaxBytes && nonce == null && idle == 0, "no args: no key, the default bound, no replies, no idle calls");
        Check(!KitArgs(Json.Parse("{\"args\": [\"--bogus\", \"1\"]}"), out key, out mb, out nonce, out idle, out err), "an unknown kit option is refused");
        Check(KitArgs(Json.Parse("{\"args\": [\"--idle\", \"40\", \"--replies\", \"7\"]}"), out key, out mb, out nonce, out idle, out err) && nonce == 7 && idle == 40
              && KitArgs(Json.Parse("{\"args\": [\"--replies\", \"7\", \"--idle\", \"1000\"]}"), out key, out mb, out nonce, out idle, out err) && idle == 1000,
              "a kit stream's args: --idle, before or after --replies");
        Check(!KitArgs(Json.Parse("{\"args\": [\"--idle\", \"3\"]}"), out key, out mb, out nonce, out idle, out err)
              && !KitArgs(Json.Parse("{\"args\": [\"--replies\", \"7\", \"--idle\", \"1001\"]}"), out key, out mb, out nonce, out idle, out err)
              && !KitArgs(Json.Parse("{\"args\": [\"--replies\", \"7\", \"--idle\", \"-1\"]}"), out key, out mb, out nonce, out idle, out err),
              "a kit stream's --idle without --replies, or past 0..1000, is refused");
        string schemaPath = Path.Combine(root, "conformance/schemas/pose.json");
        string bin = Path.Combine(root, "conformance/streams/pose_lossy.bin");
        var schema = Schema.Load(schemaPath);
        var dgs = ReadDatagrams(bin);
        var got = RunRunner("--replies", "1234", "\"" + schemaPath + "\"", "\"" + bin + "\"");
        var want = SessionLines(schema, dgs, null, SnapshotDecoder.DefaultMaxBytes, 1234);
        Check(got.Count == want.Count && string.Join("\n", got) == string.Join("\n", want), "qc-decode --replies 1234: the StreamClient's lines with their replies (" + got.Count + " lines)");
        int replies = 0;
        foreach (var l in got) if (!l.EndsWith(",\"reply\":null}", StringComparison.Ordinal)) replies++;
        Check(replies > 5 && got[0].StartsWith("{\"error\":\"no-hello\",\"reply\":\"48", StringComparison.Ordinal), "qc-decode --replies: hello requests and acks appear (" + replies + " replies)");
        var plain = RunRunner("\"" + schemaPath + "\"", "\"" + bin + "\"");
        var exp = File.ReadAllLines(Path.Combine(root, "conformance/streams/pose_lossy.jsonl"));
        Check(string.Join("\n", plain) == string.Join("\n", exp), "qc-decode without options: the kit's lines unchanged");
        var lim = RunRunner("--max-bytes", "100000", "\"" + schemaPath + "\"", "\"" + bin + "\"");
        int nlim = 0;
        foreach (var l in lim) if (l == "{\"error\":\"limits\"}") nlim++;
        Check(nlim > 0 && string.Join("\n", lim) == string.Join("\n", SessionLines(schema, dgs, null, 100000, null)), "qc-decode --max-bytes 100000: limits refusals (" + nlim + "), as the decoder gives them");
        var keyed = RunRunner("--key", "000102030405060708090a0b0c0d0e0f", "\"" + schemaPath + "\"", "\"" + bin + "\"");
        bool allRefused = keyed.Count == dgs.Count;
        foreach (var l in keyed) allRefused &= l == "{\"error\":\"no-hello\"}";
        Check(allRefused, "qc-decode --key: an unkeyed stream is refused whole (no-hello)");
        Check(RunRunner("--key", "0g", "a", "b")[0] == "exit 2" && RunRunner("--replies", "-1", "a", "b")[0] == "exit 2" && RunRunner("--max-bytes", "x", "a", "b")[0] == "exit 2",
              "qc-decode: a bad --key, --replies or --max-bytes is a usage error");
        var zero = RunRunner("--max-bytes", "0", "a", "b");
        Check(zero[0] == "exit 2" && RunRunner("--max-bytes=0", "a", "b")[0] == "exit 2",
              "qc-decode --max-bytes 0: a usage error (the decoder refuses a bound below 1), not an unhandled exception: " + zero[0]);
        var joinedLim = RunRunner("--max-bytes=100000", "\"" + schemaPath + "\"", "\"" + bin + "\"");
        Check(string.Join("\n", joinedLim) == string.Join("\n", lim), "qc-decode --max-bytes=100000 is --max-bytes 100000");
        // --idle N: after each datagram's reply, N more calls of Reply() with nothing arriving ("idle": [...], the last key)
        var idled = RunRunner("--replies", "1234", "--idle", "40", "\"" + schemaPath + "\"", "\"" + bin + "\"");
        var idleWant = SessionLines(schema, dgs, null, SnapshotDecoder.DefaultMaxBytes, 1234, 40);
        Check(idled.Count == dgs.Count && string.Join("\n", idled) == string.Join("\n", idleWant), "qc-decode --replies 1234 --idle 40: the StreamClient's lines with their replies and idle calls (" + idled.Count + " lines)");
        int idleReplies = 0, idleLines = 0;
        foreach (var l in idled)
        {
            var j = Json.Parse(l);
            var members = j.Members;
            var calls = j.Get("idle");
            if (members.Count > 0 && members[members.Count - 1].Key == "idle" && calls.Type == JsonType.Array && calls.Items.Count == 40) idleLines++;
            if (calls != null) foreach (var c in calls.Items) if (c.Type == JsonType.String) idleReplies++;
        }
        Check(idleLines == dgs.Count && idleReplies > 0 && idled[0].StartsWith("{\"error\":\"no-hello\",\"reply\":\"48", StringComparison.Ordinal),
              "qc-decode --idle 40: \"idle\", 40 calls, ends every line; keep-alives among them (" + idleReplies + ")");
        Check(string.Join("\n", RunRunner("--idle", "40", "--replies", "1234", "\"" + schemaPath + "\"", "\"" + bin + "\"")) == string.Join("\n", idled),
              "qc-decode: --idle before --replies is the same");
        Check(string.Join("\n", RunRunner("--replies", "1234", "--idle", "0", "\"" + schemaPath + "\"", "\"" + bin + "\"")) == string.Join("\n", got),
              "qc-decode --idle 0: the lines of --replies alone (no \"idle\" key)");
        Check(UsageError("--idle", "--idle", "3", "\"" + schemaPath + "\"", "\"" + bin + "\"") && UsageError("--idle", "--idle", "0", "\"" + schemaPath + "\"", "\"" + bin + "\"")
              && UsageError("--idle", "--key", "00ff", "--idle", "3", "\"" + schemaPath + "\"", "\"" + bin + "\""),
              "qc-decode: --idle without --replies is a usage error naming --idle");
        Check(UsageError("--idle", "--replies", "1", "--idle", "-1", "a", "b") && UsageError("--idle", "--replies", "1", "--idle", "1001", "a", "b")
              && UsageError("--idle", "--replies", "1", "--idle", "x", "a", "b") && UsageError("--idle", "--idle", "+5", "--replies", "1", "a", "b")
              && UsageError("--idle", "--replies", "1", "--idle", "99999999999", "a", "b") && UsageError("--idle", "--replies", "1", "--idle"),
              "qc-decode: an --idle value not a decimal 0 to 1000 (or none) is a usage error naming --idle");
    }

    // ------------------------------------------------------------------------------- the hostile stream

    /// <summary>Run Tests~/make_hostile.py with the Python run-tests found (QC_TEST_PYTHON); false (and
    /// why) when there is none.</summary>
    static bool MakeHostile(string outPath, out string why)
    {
        why = null;
        string py = Environment.GetEnvironmentVariable("QC_TEST_PYTHON");
        if (string.IsNullOrEmpty(py)) { why = "quantcodec is not importable here (run-tests found no Python with it; QC_PYTHON names one)"; return false; }
        var psi = new ProcessStartInfo(py, "\"" + Path.Combine(here, "Tests~", "make_hostile.py") + "\" \"" + Path.Combine(root, "conformance/schemas/pose.json") + "\" \"" + outPath + "\"")
        { UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true };
        string pp = Environment.GetEnvironmentVariable("QC_TEST_PYTHONPATH");
        if (!string.IsNullOrEmpty(pp)) psi.EnvironmentVariables["PYTHONPATH"] = pp;
        using (var p = Process.Start(psi))
        {
            p.StandardOutput.ReadToEnd();
            string err = p.StandardError.ReadToEnd();
            p.WaitForExit();
            if (p.ExitCode != 0) { why = "make_hostile.py failed: " + err; return false; }
        }
        return true;
    }

    static void HostileLimits()
    {
        string path = Path.Combine(here, "build~", "hostile_limits.bin");
        string why;
        if (!MakeHostile(path, out why))
        {
            if (why.StartsWith("make_hostile.py failed", StringComparison.Ordinal)) Check(false, why);
            else Console.WriteLine("  skipped: the hostile limits stream: " + why);
            return;
        }
        var schema = Schema.Load(Path.Combine(root, "conformance/schemas/pose.json"));
        var dgs = ReadDatagrams(path);
        var client = new StreamClient(schema, nonce: 33);
        var dec = client.Decoder;
        long bound = dec.MaxBytes;
        int views = 0, limits = 0, baseline = 0, other = 0, over = 0, acks = 0, keepAlives = 0, idle = 0;
        string firstRefusal = null;
        long most = 0;
        foreach (var d in dgs)
        {
            string before = dec.StateDigest(false);
            string kind = null;
            Snapshot v = null;
            try { v = client.Receive(d); } catch (DecodeException e) { kind = e.Kind; }
            if (v != null) views++;
            else if (kind == "limits") { limits++; if (dec.StateDigest(false) != before) Check(false, "hostile: a limits refusal changed the state"); }
            else if (kind == "baseline") baseline++;
            else if (kind != null) other++;
            if (kind != null && firstRefusal == null) firstRefusal = kind;
            bool due = client.ReplyDue;
            var rep = client.Reply();
            if (rep != null && due) acks++;
            if (rep != null && !due) keepAlives++;      // (a keep-alive: the 31 calls before returned nothing)
            if ((rep != null) != (due || idle == StreamClient.KeepAliveCalls - 1)) Check(false, "hostile: a reply exactly when due or a keep-alive's turn");
            idle = rep != null ? 0 : idle + 1;
            if (kind == "limits" && due) Check(false, "hostile: a limits refusal made a reply due");
            long held = dec.HeldBytes + 256L * dec.Stream.MaxDatagram;
            most = Math.Max(most, held);
            if (held > bound) over++;
        }
        // the cost model: the reassembly and as many 20,000-entity snapshots as fit, the new one included
        long cost = dec.SnapshotCost(20000);
        long fit = (bound - 256L * 1200) / cost;
        Check(cost == 256 + 20000L * (8 + 8 * 12), "hostile: a snapshot of 20,000 Pose entities costs " + cost);
        Check(over == 0 && most <= bound, "hostile: what the client holds never passes the default bound (" + most + " of " + bound + " bytes at most)");
        Check(views == fit && firstRefusal == "limits", "hostile: " + views + " views (" + fit + " fit), then the first refusal is limits: " + firstRefusal);
        Check(limits >= 1 && views + limits + baseline == 201 && other == 0,
              "hostile: the 201 packets: " + views + " views, " + limits + " limits, " + baseline + " baseline (their baseline refused), " + other + " other");
        Check(acks == views + baseline + 1, "hostile: a reply due after each view, each baseline refusal and the hello, none after limits (" + acks + ", and " + keepAlives + " keep-alives)");
        Console.WriteLine("  hostile: " + views + " views of 20,000 entities held, then " + limits + " limits and " + baseline + " baseline refusals; at most " + most + " bytes in the model; GC heap " + (GC.GetTotalMemory(false) >> 20) + " MiB");
    }
}
