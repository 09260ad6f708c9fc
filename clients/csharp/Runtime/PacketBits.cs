// The packet decoder's reader: the packet as 64-bit words with zero words after it, fixed-width
// reads, Exp-Golomb codes (Entropy.EG, the one reader) and sets (wire-format sections 4 and 5).
// Every read here checks the packet's end; the fast path reads the words itself.
using System;

namespace QuantCodec
{
    internal sealed partial class PacketDecoder
    {
        long pos, nbits;
        ulong[] words = new ulong[64];      // the packet as little-endian 64-bit words, zero words after
        // the header's codes, and the new ids' (k set a packet)
        readonly EgCode egDist = new EgCode(2, 16), egCount = new EgCode(0, 32), egId = new EgCode(0, 64);

        DecodeException Bad(string what) { return new DecodeException("malformed", "snapshot packet: " + what + " at bit " + pos); }

        /// <summary>The packet as words: the data's bytes, little-endian, then at least pad zero words.</summary>
        void Load(byte[] data, int offset, int length, int pad)
        {
            pos = 0; nbits = 8L * length;
            int nw = (length >> 3) + 2 + pad;
            if (words.Length < nw) words = new ulong[Math.Max(nw, words.Length * 2)];
            ulong[] wd = words;
            int full = length >> 3;
            if (BitConverter.IsLittleEndian) Buffer.BlockCopy(data, offset, wd, 0, full << 3);     // (a memmove)
            else
                for (int i = 0, b = offset; i < full; i++, b += 8)
                    wd[i] = (ulong)data[b] | ((ulong)data[b + 1] << 8) | ((ulong)data[b + 2] << 16) | ((ulong)data[b + 3] << 24)
                            | ((ulong)data[b + 4] << 32) | ((ulong)data[b + 5] << 40) | ((ulong)data[b + 6] << 48) | ((ulong)data[b + 7] << 56);
            ulong tail = 0;
            for (int i = 0; i < (length & 7); i++) tail |= (ulong)data[offset + 8 * full + i] << (8 * i);
            wd[full] = tail;
            for (int i = full + 1; i < nw; i++) wd[i] = 0;
        }

        /// <summary>n bits (0 to 64); DecodeException past the packet's end.</summary>
        ulong Read(int n)
        {
            if (pos + n > nbits) throw Bad("truncated, a read of " + n + " bits runs past the end");
            return Entropy.Bits(words, ref pos, n);
        }

        /// <summary>An EG code of the parameters d (section 4); alt: see Entropy.EG. DecodeException for a
        /// code past the packet's end or a value beyond its bits.</summary>
        ulong ReadEG(EgCode d, bool alt = false)
        {
            ulong u;
            long p = Entropy.EG(words, pos, d, alt, out u);
            if (p > nbits) throw Bad(p == Entropy.Beyond ? "Exp-Golomb value beyond its " + d.B + " bits" : "truncated in an Exp-Golomb code");
            pos = p;
            return u;
        }

        ulong Rice(int k, ulong limit)
        {
            ulong q = 0, qmax = limit >> k;
            for (;;)
            {
                if (pos >= nbits) throw Bad("truncated in a Rice code");
                ulong w = Entropy.Window(words, pos) & ((1UL << 56) - 1);     // (zeros past the end)
                if (w != 0)
                {
                    int z = Entropy.Ctz(w);
                    q += (ulong)z;
                    pos += z + 1;
                    if (pos > nbits) throw Bad("truncated in a Rice code");
                    break;
                }
                long n = Math.Min(56, nbits - pos);
                q += (ulong)n;
                pos += n;
                if (q > qmax) throw Bad("Rice code beyond its set");
            }
            if (q > qmax) throw Bad("Rice code beyond its set");
            ulong low = Read(k);
            q = (q << k) | low;
            if (q >= limit) throw Bad("Rice code beyond its set");
            return q;
        }

        static void Grow(ref int[] a, int n) { if (a.Length < n) a = new int[Math.Max(n, a.Length * 2)]; }

        /// <summary>SET(M) into outp (room for M): the members ascending; returns their number.</summary>
        int ReadSet(ref int[] outp, int M)
        {
            Grow(ref outp, M + 1);
            int[] o = outp;
            int mode = (int)Read(2);
            if (mode == 0) return 0;
            int cbits = Entropy.BitLen((ulong)(M - 1));
            if (mode == 1 || mode == 2)
            {
                long cnt = (long)Read(cbits) + (mode == 1 ? 1 : 0);
                if (cnt > M || (mode == 2 && cnt == M)) throw Bad("bad set count");
                if (mode == 1) { ReadList(o, 0, (int)cnt, M); return (int)cnt; }
                int nc = (int)cnt;
                if (nc > 0)
                {
                    Grow(ref tmp, nc);
                    ReadList(tmp, 0, nc, M);
                }
                int j = 0, n = 0;
                for (int i = 0; i < M; i++)
                {
                    if (j < nc && tmp[j] == i) { j++; continue; }
                    o[n++] = i;
                }
                return n;
            }
            int count = 0;
            for (int ws = 0; ws < M; ws += 56)
            {
                int nb = M - ws < 56 ? M - ws : 56;
                ulong w = Read(nb);
                while (w != 0)
                {
                    o[count++] = ws + Entropy.Ctz(w);
                    w &= w - 1;
                }
            }
            if (count == 0) throw Bad("an empty bit-mask set");
            return count;
        }

        void ReadList(int[] o, int at, int cnt, int M)
        {
            int k = (int)Read(5);
            long prev = -1;
            for (int i = 0; i < cnt; i++)
            {
                ulong g = Rice(k, (ulong)(M - prev - 1));
                prev = prev + 1 + (long)g;
                o[at + i] = (int)prev;
            }
        }

        void Finish()
        {
            long left = nbits - pos;
            if (left >= 8) throw Bad("unexpected data after the end of the packet");
            if (Read((int)left) != 0) throw Bad("padding bits set after the end of the packet");
        }
    }
}
