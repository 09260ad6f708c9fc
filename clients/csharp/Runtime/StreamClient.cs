// The session client (SPEC section 8, wire-format sections 18-20): one decoder, its limits, and the
// replies it owes the server (acks, hello requests). One per connection; not thread-safe.
using System;
using System.Security.Cryptography;
using System.Text;

namespace QuantCodec
{
    public sealed class StreamClient : IDisposable
    {
        /// <summary>Reply types (wire-format section 18): an ack, a hello request.</summary>
        public const byte AckType = 0x41, HelloRequestType = 0x48;
        public const int AckBody = 16, HelloRequestBody = 26;
        /// <summary>Reply() returns a reply every KeepAliveCalls-th call while none is due: a keep-alive
        /// (wire-format section 18), when the KeepAliveCalls - 1 calls before it returned null.</summary>
        public const int KeepAliveCalls = 32;
        static readonly uint SeedQ = Crc32C.Compute(Encoding.ASCII.GetBytes("quantcodec hello request"));

        readonly SnapshotDecoder decoder;
        readonly byte[] fingerprint;
        bool due = true;    // a new client's first reply: a hello request (section 18)
        int idle;           // the calls of Reply() in a row that returned null
        uint rseq;

        /// <summary>A client of one stream of `schema`. key: the shared secret (1 to 255 bytes; every
        /// check both ways is then a SipHash-2-4 tag), or null for CRC-32C checks. maxBytes: the bound on
        /// what it holds (wire-format section 19). nonce: this incarnation's id in its replies (null:
        /// drawn at random, as every client that starts must).</summary>
        public StreamClient(Schema schema, byte[] key = null, long maxBytes = SnapshotDecoder.DefaultMaxBytes, uint? nonce = null)
        {
            decoder = new SnapshotDecoder(schema, key, maxBytes);
            fingerprint = Encoding.ASCII.GetBytes(schema.Fingerprint);
            if (fingerprint.Length != 16) throw new SchemaException("a schema fingerprint is 16 hex digits, not '" + schema.Fingerprint + "'");
            if (nonce.HasValue) Nonce = nonce.Value;
            else
            {
                var b = new byte[4];
                using (var rng = RandomNumberGenerator.Create()) rng.GetBytes(b);
                Nonce = (uint)(b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24);
            }
        }

        /// <summary>The decoder underneath (its stream, Latest, held snapshots, limits).</summary>
        public SnapshotDecoder Decoder { get { return decoder; } }
        public Schema Schema { get { return decoder.Schema; } }
        /// <summary>This incarnation's 32-bit id, in every reply.</summary>
        public uint Nonce { get; private set; }
        /// <summary>The number the next reply will carry (0 first, one more per reply made, mod 2**32).</summary>
        public uint NextRseq { get { return rseq; } }
        /// <summary>Whether a reply is due (Reply() will return one; while none is due, Reply() still
        /// returns a keep-alive every KeepAliveCalls-th call).</summary>
        public bool ReplyDue { get { return due; } }
        /// <summary>The id of the stream adopted (its hello's stream_id), or null before any hello is
        /// adopted. It changes when the client adopts a new stream (a restarted server's): then call
        /// Interpolator.Reset(), the new stream's ticks start over (docs/interpolation.md).</summary>
        public ulong? StreamId { get { return decoder.HasStream ? decoder.Stream.StreamId : (ulong?)null; } }

        /// <summary>Take one datagram from the server: the view it completed (a Snapshot), or null for a
        /// hello or a fragment that completes nothing. A refused datagram throws DecodeException (Kind:
        /// no-hello, check, hello, schema, fragment, baseline, malformed, limits) and changes nothing
        /// but, for kinds no-hello and baseline, makes a reply due.</summary>
        public Snapshot Receive(byte[] datagram) { return Receive(datagram, 0, datagram == null ? 0 : datagram.Length); }

        public Snapshot Receive(byte[] datagram, int offset, int length)
        {
            var r = decoder.Receive(datagram, offset, length);
            switch (r)
            {
                case Received.Snapshot:
                    due = true;
                    return decoder.LastSnapshot;
                case Received.Pending:
                    if (decoder.LastAdopted) due = true;
                    return null;
                default:
                    string kind = decoder.LastErrorKind;
                    if (kind == "no-hello" || kind == "baseline") due = true;
                    throw new DecodeException(kind, decoder.LastError);
            }
        }

        /// <summary>Done with this client (a reconnect makes a new one): its decoder's Dispose, whose
        /// buffers the next client's decoder takes; every view it returned is left empty (and
        /// Interpolator.Push refuses it): Clone() before Dispose what you keep.</summary>
        public void Dispose() { decoder.Dispose(); }

        /// <summary>The datagram to send the server now, or null (section 18): a hello request while no
        /// stream is adopted, an ack of the adopted stream otherwise, when a reply is due, and a
        /// keep-alive (the same reply) when the KeepAliveCalls - 1 calls before it in a row returned
        /// null. Call it once a tick (or a frame), and after each datagram if you like: at most one reply
        /// per datagram that made one due, and the keep-alives, by which a restarted server, which
        /// knows no client, hears of this one.</summary>
        public byte[] Reply()
        {
            if (!due && idle < KeepAliveCalls - 1)
            {
                idle++;
                return null;
            }
            idle = 0;
            due = false;
            byte[] o = decoder.HasStream ? Ack() : HelloRequest();
            rseq++;
            return o;
        }

        byte[] Ack()
        {
            int T = decoder.CheckLength;
            var o = new byte[AckBody + T];
            o[0] = AckType;
            PutU32(o, 2, Nonce);
            PutU32(o, 6, rseq);
            if (decoder.HasLatest)
            {
                int latest = decoder.Latest;
                int history = decoder.History;
                uint acks = 0;
                for (int i = 0; i < 32 && i + 1 < history; i++)
                    if (decoder.Get((latest - 1 - i) & 0xFFFF) != null) acks |= 1u << i;
                o[1] = 1;
                o[10] = (byte)latest; o[11] = (byte)(latest >> 8);
                PutU32(o, 12, acks);
            }
            if (decoder.Keyed) SipHash.Put64(o, AckBody, decoder.ReplyKey.Tag(o, 0, AckBody));
            else PutU32(o, AckBody, Crc32C.Compute(o, 0, AckBody, decoder.ReplySeed));
            return o;
        }

        byte[] HelloRequest()
        {
            int T = decoder.CheckLength;
            var o = new byte[HelloRequestBody + T];
            o[0] = HelloRequestType;
            PutU32(o, 2, Nonce);
            PutU32(o, 6, rseq);
            Buffer.BlockCopy(fingerprint, 0, o, 10, 16);
            if (decoder.Keyed) SipHash.Put64(o, HelloRequestBody, decoder.Keys.HelloRequest.Tag(o, 0, HelloRequestBody));
            else PutU32(o, HelloRequestBody, Crc32C.Compute(o, 0, HelloRequestBody, SeedQ));
            return o;
        }

        static void PutU32(byte[] d, int i, uint v)
        {
            d[i] = (byte)v; d[i + 1] = (byte)(v >> 8); d[i + 2] = (byte)(v >> 16); d[i + 3] = (byte)(v >> 24);
        }
    }
}
