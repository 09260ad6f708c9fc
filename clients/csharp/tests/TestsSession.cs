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
}
