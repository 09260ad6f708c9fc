// SipHash-2-4 and the key derivation of wire-format section 17: with a shared key, every check
// (whole datagram, fragment, hello, reply) is an 8-byte tag instead of a CRC-32C.
using System;
using System.Text;

namespace QuantCodec
{
    /// <summary>SipHash-2-4 (Aumasson and Bernstein, 2012): a 128-bit key, 2 compression rounds per
    /// 8-byte word, 4 finalization rounds, a 64-bit result. Key bytes 00..0f: the empty message gives
    /// 0x726fdb47dd0e0e31, the message 00..0e gives 0xa129ca6149be45e5.</summary>
    public static class SipHash
    {
        static readonly bool LittleEndian = BitConverter.IsLittleEndian;

        /// <summary>SipHash-2-4 of data[offset .. offset + count) under the key (k0, k1) (the key's
        /// bytes 0..7 and 8..15, little-endian).</summary>
        public static ulong Compute(ulong k0, ulong k1, byte[] data, int offset, int count)
        {
            Arg.Slice(data, offset, count, "data", "offset", "count", "SipHash.Compute");
            ulong v0 = k0 ^ 0x736f6d6570736575UL, v1 = k1 ^ 0x646f72616e646f6dUL;
            ulong v2 = k0 ^ 0x6c7967656e657261UL, v3 = k1 ^ 0x7465646279746573UL;
            int i = offset, end = offset + (count & ~7);
            for (; i < end; i += 8)
            {
                ulong m = LittleEndian ? BitConverter.ToUInt64(data, i)
                        : (ulong)data[i] | (ulong)data[i + 1] << 8 | (ulong)data[i + 2] << 16 | (ulong)data[i + 3] << 24
                          | (ulong)data[i + 4] << 32 | (ulong)data[i + 5] << 40 | (ulong)data[i + 6] << 48 | (ulong)data[i + 7] << 56;
                v3 ^= m;
                // two rounds (SipRound written out: the JIT does not inline a method taking four refs)
                v0 += v1; v1 = v1 << 13 | v1 >> 51; v1 ^= v0; v0 = v0 << 32 | v0 >> 32;
                v2 += v3; v3 = v3 << 16 | v3 >> 48; v3 ^= v2;
                v0 += v3; v3 = v3 << 21 | v3 >> 43; v3 ^= v0;
                v2 += v1; v1 = v1 << 17 | v1 >> 47; v1 ^= v2; v2 = v2 << 32 | v2 >> 32;
                v0 += v1; v1 = v1 << 13 | v1 >> 51; v1 ^= v0; v0 = v0 << 32 | v0 >> 32;
                v2 += v3; v3 = v3 << 16 | v3 >> 48; v3 ^= v2;
                v0 += v3; v3 = v3 << 21 | v3 >> 43; v3 ^= v0;
                v2 += v1; v1 = v1 << 17 | v1 >> 47; v1 ^= v2; v2 = v2 << 32 | v2 >> 32;
                v0 ^= m;
            }
            ulong b = (ulong)(count & 0xFF) << 56;
            for (int j = 0; j < (count & 7); j++) b |= (ulong)data[end + j] << (8 * j);
            v3 ^= b;
            for (int r = 0; r < 2; r++)
            {
                v0 += v1; v1 = v1 << 13 | v1 >> 51; v1 ^= v0; v0 = v0 << 32 | v0 >> 32;
                v2 += v3; v3 = v3 << 16 | v3 >> 48; v3 ^= v2;
                v0 += v3; v3 = v3 << 21 | v3 >> 43; v3 ^= v0;
                v2 += v1; v1 = v1 << 17 | v1 >> 47; v1 ^= v2; v2 = v2 << 32 | v2 >> 32;
            }
            v0 ^= b;
            v2 ^= 0xFF;
            for (int r = 0; r < 4; r++)
            {
                v0 += v1; v1 = v1 << 13 | v1 >> 51; v1 ^= v0; v0 = v0 << 32 | v0 >> 32;
                v2 += v3; v3 = v3 << 16 | v3 >> 48; v3 ^= v2;
                v0 += v3; v3 = v3 << 21 | v3 >> 43; v3 ^= v0;
                v2 += v1; v1 = v1 << 17 | v1 >> 47; v1 ^= v2; v2 = v2 << 32 | v2 >> 32;
            }
            return v0 ^ v1 ^ v2 ^ v3;
        }

        /// <summary>SipHash-2-4 under a 16-byte key.</summary>
        public static ulong Compute(byte[] key16, byte[] data, int offset, int count)
        {
            Arg.NotNull(key16, "key16", "SipHash.Compute");
            if (key16.Length != 16) throw new ArgumentException("SipHash needs a 16-byte key, not " + key16.Length, "key16");
            return Compute(Le64(key16, 0), Le64(key16, 8), data, offset, count);
        }

        public static ulong Compute(byte[] key16, byte[] data) { Arg.NotNull(data, "data", "SipHash.Compute"); return Compute(key16, data, 0, data.Length); }

        internal static ulong Le64(byte[] d, int i)
        {
            ulong v = 0;
            for (int j = 7; j >= 0; j--) v = v << 8 | d[i + j];
            return v;
        }

        internal static void Put64(byte[] d, int i, ulong v)
        {
            for (int j = 0; j < 8; j++) d[i + j] = (byte)(v >> (8 * j));
        }
    }

    /// <summary>A 128-bit SipHash key (two little-endian u64 halves): the tag key of one kind of
    /// datagram (wire-format section 17).</summary>
    public sealed class TagKey
    {
        public readonly ulong K0, K1;
        public TagKey(ulong k0, ulong k1) { K0 = k0; K1 = k1; }
        public TagKey(byte[] key16)
        {
            Arg.NotNull(key16, "key16", "TagKey");
            if (key16.Length != 16) throw new ArgumentException("a tag key is 16 bytes, not " + key16.Length, "key16");
            K0 = SipHash.Le64(key16, 0); K1 = SipHash.Le64(key16, 8);
        }

        public ulong Tag(byte[] data, int offset, int count) { return SipHash.Compute(K0, K1, data, offset, count); }

        public byte[] Bytes()
        {
            var b = new byte[16];
            SipHash.Put64(b, 0, K0); SipHash.Put64(b, 8, K1);
            return b;
        }
    }

    /// <summary>The key derivation of wire-format section 17: the master key mk from the shared key,
    /// and sub(L) for each label L.</summary>
    public sealed class KeySchedule
    {
        public const int MinKey = 1, MaxKey = 255;
        static readonly byte[] Z = Encoding.ASCII.GetBytes("quantcodec mac k");

        /// <summary>mk = u64le(SipHash(Z, 0x01 || key)) || u64le(SipHash(Z, 0x02 || key)).</summary>
        public readonly TagKey Master;
        /// <summary>kH = sub("quantcodec hello") and kQ = sub("quantcodec hello request"): no stream needed.</summary>
        public readonly TagKey Hello, HelloRequest;

        public KeySchedule(byte[] key)
        {
            if (key == null) throw new ArgumentNullException("key");
            if (key.Length < MinKey || key.Length > MaxKey)
                throw new ArgumentException("a shared key is 1 to 255 bytes (16 or more random bytes), not " + key.Length, "key");
            var m = new byte[key.Length + 1];
            Buffer.BlockCopy(key, 0, m, 1, key.Length);
            var z = new TagKey(Z);
            m[0] = 1;
            ulong a = z.Tag(m, 0, m.Length);
            m[0] = 2;
            ulong b = z.Tag(m, 0, m.Length);
            Master = new TagKey(a, b);
            Hello = Sub(Encoding.ASCII.GetBytes("quantcodec hello"));
            HelloRequest = Sub(Encoding.ASCII.GetBytes("quantcodec hello request"));
        }

        /// <summary>sub(L) = u64le(SipHash(mk, L || 0x00)) || u64le(SipHash(mk, L || 0x01)).</summary>
        public TagKey Sub(byte[] label) { Arg.NotNull(label, "label", "KeySchedule.Sub"); return Sub(label, 0, label.Length); }

        public TagKey Sub(byte[] label, int offset, int count)
        {
            Arg.Slice(label, offset, count, "label", "offset", "count", "KeySchedule.Sub");
            var m = new byte[count + 1];
            Buffer.BlockCopy(label, offset, m, 0, count);
            m[count] = 0;
            ulong a = Master.Tag(m, 0, m.Length);
            m[count] = 1;
            ulong b = Master.Tag(m, 0, m.Length);
            return new TagKey(a, b);
        }
    }
}
