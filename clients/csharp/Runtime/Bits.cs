// LSB-first bit streams (wire-format section 1): the first bit is bit 0 of byte 0.
using System;

namespace QuantCodec
{
    /// <summary>Reads an LSB-first bit stream from a byte array slice. No allocation; reuse with Reset.</summary>
    public sealed class BitReader
    {
        byte[] buf;
        int start;      // byte offset of the slice
        int nbytes;
        public long Pos;        // bit position from the start of the slice
        public long NBits;

        public BitReader() { }
        public BitReader(byte[] data) { Arg.NotNull(data, "data", "BitReader"); Reset(data, 0, data.Length); }
        public BitReader(byte[] data, int offset, int length) { Reset(data, offset, length); }

        public void Reset(byte[] data, int offset, int length)
        {
            Arg.Slice(data, offset, length, "data", "offset", "length", "BitReader");
            buf = data; start = offset; nbytes = length; Pos = 0; NBits = 8L * length;
        }

        public long Remaining { get { return NBits - Pos; } }

        /// <summary>n bits (0..64) as an unsigned value; DecodeException past the end.</summary>
        public ulong Read(int n)
        {
            if (n == 0) return 0;
            if (Pos + n > NBits) throw new DecodeException("malformed", "truncated: " + n + " bits needed at bit " + Pos + ", " + (NBits - Pos) + " left");
            if (n > 56)
            {
                ulong lo = ReadRaw(32);
                ulong hi = ReadRaw(n - 32);
                return lo | (hi << 32);
            }
            return ReadRaw(n);
        }

        // n (at most 56) bits known to be inside the slice
        ulong ReadRaw(int n)
        {
            long p = Pos;
            int byteIx = (int)(p >> 3);
            int sh = (int)(p & 7);
            ulong w;
            if (byteIx + 8 <= nbytes)
            {
                int b = start + byteIx;
                w = (ulong)buf[b] | ((ulong)buf[b + 1] << 8) | ((ulong)buf[b + 2] << 16) | ((ulong)buf[b + 3] << 24)
                    | ((ulong)buf[b + 4] << 32) | ((ulong)buf[b + 5] << 40) | ((ulong)buf[b + 6] << 48) | ((ulong)buf[b + 7] << 56);
            }
            else
            {
                w = 0;
                for (int i = 0; byteIx + i < nbytes && i < 8; i++) w |= (ulong)buf[start + byteIx + i] << (8 * i);
            }
            Pos = p + n;
            return (w >> sh) & ((1UL << n) - 1);
        }

        /// <summary>Up to 56 bits ahead without moving (zeros past the end); n = how many.</summary>
        public ulong Peek(int n)
        {
            long left = NBits - Pos;
            if (left < n) n = (int)left;
            if (n <= 0) return 0;
            long save = Pos;
            ulong v = ReadRaw(n);
            Pos = save;
            return v;
        }

        public bool ReadBool() { return Read(1) != 0; }
    }

    /// <summary>Writes an LSB-first bit stream into a growing buffer (kept between records: Reset).</summary>
    public sealed class BitWriter
    {
        byte[] buf = new byte[64];
        long pos;

        public long BitLength { get { return pos; } }
        public void Reset() { Array.Clear(buf, 0, (int)((pos + 7) >> 3)); pos = 0; }

        public void Write(ulong v, int n)
        {
            if (n == 0) return;
            if (n < 64 && (v >> n) != 0) throw new RangeException("value " + v + " does not fit " + n + " bits");
            int need = (int)((pos + n + 7) >> 3) + 8;
            if (need > buf.Length)
            {
                var nb = new byte[Math.Max(need, buf.Length * 2)];
                Buffer.BlockCopy(buf, 0, nb, 0, buf.Length);
                buf = nb;
            }
            for (int i = 0; i < n;)
            {
                int byteIx = (int)(pos >> 3), sh = (int)(pos & 7);
                int take = Math.Min(8 - sh, n - i);
                buf[byteIx] |= (byte)(((v >> i) & ((1UL << take) - 1)) << sh);
                pos += take;
                i += take;
            }
        }

        public byte[] ToArray()
        {
            var r = new byte[(pos + 7) >> 3];
            Buffer.BlockCopy(buf, 0, r, 0, r.Length);
            return r;
        }
    }
}
