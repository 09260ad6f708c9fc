using System;

namespace QuantCodec
{
    /// <summary>CRC-32C (Castagnoli) with zlib's continuation convention (wire-format section 11):
    /// Compute(b, 0, n, Compute(a)) == Compute(a + b); Compute("123456789") == 0xE3069283.</summary>
    public static class Crc32C
    {
        static readonly uint[] T = Make();

        static uint[] Make()
        {
            var t = new uint[8 * 256];
            for (uint n = 0; n < 256; n++)
            {
                uint c = n;
                for (int k = 0; k < 8; k++) c = (c & 1) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
                t[n] = c;
            }
            for (int n = 0; n < 256; n++)
                for (int s = 1; s < 8; s++) t[s * 256 + n] = (t[(s - 1) * 256 + n] >> 8) ^ t[t[(s - 1) * 256 + n] & 0xFF];
            return t;
        }

        public static uint Compute(byte[] data, int offset, int count, uint seed = 0)
        {
            Arg.Slice(data, offset, count, "data", "offset", "count", "Crc32C.Compute");
            uint crc = ~seed;
            int i = offset, end = offset + count;
            uint[] t = T;
            // slicing by 8
            while (end - i >= 8)
            {
                uint a = crc ^ (uint)(data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24);
                uint b = (uint)(data[i + 4] | data[i + 5] << 8 | data[i + 6] << 16 | data[i + 7] << 24);
                crc = t[7 * 256 + (a & 0xFF)] ^ t[6 * 256 + ((a >> 8) & 0xFF)] ^ t[5 * 256 + ((a >> 16) & 0xFF)] ^ t[4 * 256 + (a >> 24)]
                    ^ t[3 * 256 + (b & 0xFF)] ^ t[2 * 256 + ((b >> 8) & 0xFF)] ^ t[256 + ((b >> 16) & 0xFF)] ^ t[b >> 24];
                i += 8;
            }
            for (; i < end; i++) crc = t[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
            return ~crc;
        }

        public static uint Compute(byte[] data) { Arg.NotNull(data, "data", "Crc32C.Compute"); return Compute(data, 0, data.Length, 0); }

        /// <summary>Compute, reading the bytes as 64-bit words copied into scratch (grown as needed; the
        /// caller's, one a thread): one load per 8 bytes instead of eight, a third less time under Mono.</summary>
        internal static uint Compute(byte[] data, int offset, int count, uint seed, ref ulong[] scratch)
        {
            if (!BitConverter.IsLittleEndian || count < 64) return Compute(data, offset, count, seed);
            int n8 = count >> 3;
            if (scratch == null || scratch.Length < n8) scratch = new ulong[Math.Max(n8, 256)];
            ulong[] s = scratch;
            Buffer.BlockCopy(data, offset, s, 0, n8 << 3);
            uint crc = ~seed;
            uint[] t = T;
            for (int j = 0; j < n8; j++)
            {
                ulong w = s[j];
                uint a = crc ^ (uint)w, b = (uint)(w >> 32);
                crc = t[7 * 256 + (a & 0xFF)] ^ t[6 * 256 + ((a >> 8) & 0xFF)] ^ t[5 * 256 + ((a >> 16) & 0xFF)] ^ t[4 * 256 + (a >> 24)]
                    ^ t[3 * 256 + (b & 0xFF)] ^ t[2 * 256 + ((b >> 8) & 0xFF)] ^ t[256 + ((b >> 16) & 0xFF)] ^ t[b >> 24];
            }
            for (int i = offset + (n8 << 3), end = offset + count; i < end; i++) crc = t[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
            return ~crc;
        }

        /// <summary>The register x after count zero bytes (no inversion): Compute(d, o, n, a) ^
        /// Compute(d, o, n, b) == ZeroShift(a ^ b, n) for all data (CRC-32C is affine in its start), so
        /// the check of one datagram under a second seed needs no second pass over its bytes.</summary>
        internal static uint ZeroShift(uint x, int count)
        {
            uint crc = x;
            uint[] t = T;
            int i = 0;
            for (; i + 8 <= count; i += 8)
                crc = t[7 * 256 + (crc & 0xFF)] ^ t[6 * 256 + ((crc >> 8) & 0xFF)] ^ t[5 * 256 + ((crc >> 16) & 0xFF)] ^ t[4 * 256 + (crc >> 24)];
            for (; i < count; i++) crc = t[crc & 0xFF] ^ (crc >> 8);
            return crc;
        }

        /// <summary>ZeroShift(x, count) for every x as four tables of 256 (x's bytes): the map is linear
        /// in x, so each entry is the XOR of the shifts of its bits. Shift(table, x) == ZeroShift(x, count).</summary>
        internal static uint[] ShiftTable(int count)
        {
            var z = new uint[32];
            for (int j = 0; j < 32; j++) z[j] = ZeroShift(1u << j, count);
            var m = new uint[4 * 256];
            for (int k = 0; k < 4; k++)
                for (int b = 1; b < 256; b++)
                {
                    int low = b & -b, bit = 0;
                    while ((1 << bit) != low) bit++;
                    m[k * 256 + b] = m[k * 256 + (b & (b - 1))] ^ z[8 * k + bit];
                }
            return m;
        }

        internal static uint Shift(uint[] m, uint x)
        {
            return m[x & 0xFF] ^ m[256 + ((x >> 8) & 0xFF)] ^ m[512 + ((x >> 16) & 0xFF)] ^ m[768 + (x >> 24)];
        }
    }
}
