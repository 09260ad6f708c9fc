// The client side of a snapshot stream: the datagram layer (wire-format sections 11-15) and the
// client state (section 10). One per connection; not thread-safe (call it from one thread).
using System;
using System.Collections.Generic;
using System.Text;

namespace QuantCodec
{
    public enum Received { Snapshot, Pending, Refused }

    /// <summary>What a hello announced (wire-format section 13).</summary>
    public sealed class HelloInfo
    {
        public int Version;
        public bool Predict;
        public int History;
        public int MaxDatagram;
        public ulong StreamId;
        public ulong Started;
        public string Fingerprint;
        public uint SchemaVersion;
        public string SchemaName;
        public int NFields;
        public string[] FieldNames;
        public int[] FieldKinds;
        public int[] FieldBits;
        public uint[] FieldHashes;
        internal byte[] Raw;      // the hello's bytes (two hellos are equal when their bytes are)
    }

    public sealed class SnapshotDecoder : IDisposable
    {
        public const int FormatVersion = 1;
        public const int MinDatagram = 64, MaxDatagramLimit = 65507, MaxFragments = 256;
        const int FragmentHeader = 8, HelloFixed = 51;   // the smallest hello without its check: no name, no summary
        /// <summary>The default bound on what a client holds (wire-format section 19): 256 MiB.</summary>
        public const long DefaultMaxBytes = 268435456;
        /// <summary>The cost model's fixed overhead of one held snapshot, and of the reassembly per byte of max_datagram.</summary>
        public const long SnapshotOverhead = 256, ReassemblyFactor = 256;
        static readonly uint SeedH = Crc32C.Compute(Encoding.ASCII.GetBytes("quantcodec hello"));
        static readonly string[] KindNames = { null, "Bounded", "Fixed", "Angle", "PowerCurve", "Half", "UInt", "Int", "Bool", "Enum", "Quat", "UnitVector", "Vector", "Grid", "NearlyZero", "IntRange" };

        public readonly Schema Schema;
        readonly PacketDecoder coder;
        readonly uint[] myHashes;

        HelloInfo hello;
        uint seedP, seedF, seedR;
        // keyed checks (section 17): null without a key; T is the check's length (4 or 8)
        readonly KeySchedule keys;
        readonly int T;
        TagKey kP, kF, kR;
        long maxBytes = DefaultMaxBytes;
        long heldCost;          // section 19's cost of the snapshots held (the whole window; H leaves out
                                // those a newer packet pushes out, KeptCost)
        int history = 64, keep = 127;
        int latest = -1;
        readonly Dictionary<int, Snapshot> held = new Dictionary<int, Snapshot>();
        readonly HashSet<int> ambiguous = new HashSet<int>();
        readonly List<int> scratchKeys = new List<int>();
        readonly Stack<Snapshot> pool = new Stack<Snapshot>();

        /// <summary>Recycle the buffers of snapshots that leave the window (default true). Set false to keep
        /// every returned snapshot valid forever (then each packet allocates its snapshot).</summary>
        public bool RecycleSnapshots = true;

        // reassembly (section 12): the partial packets in the order they were begun
        // (Sums, without a key: each chunk's crc32c(seed_P, header + chunk) and crc32c(seed_P, header))
        sealed class Partial { public int Seq, Count; public uint PCheck; public byte[][] Chunks; public uint[] Sums; public int Have; public long Bytes; }
        readonly List<Partial> partials = new List<Partial>();
        long heldBytes;
        byte[] joined = new byte[0];

        public Snapshot LastSnapshot { get; private set; }
        public string LastErrorKind { get; private set; }
        public string LastError { get; private set; }

        public SnapshotDecoder(Schema schema) : this(schema, null, DefaultMaxBytes) { }

        /// <summary>A decoder with a shared key (every check is then a SipHash-2-4 tag, wire-format
        /// section 17; null: CRC-32C) and a bound on what it holds (section 19).</summary>
        public SnapshotDecoder(Schema schema, byte[] key, long maxBytes = DefaultMaxBytes)
        {
            if (schema == null) throw new ArgumentNullException("schema");
            Schema = schema;
            keys = key != null ? new KeySchedule(key) : null;
            T = key != null ? 8 : 4;
            MaxBytes = maxBytes;
            coder = new PacketDecoder(schema);
            myHashes = new uint[schema.Fields.Length];
            for (int f = 0; f < myHashes.Length; f++)
            {
                byte[] h = Schema.Sha256(Encoding.ASCII.GetBytes(schema.Fields[f].Codec.CanonicalJson()));
                myHashes[f] = (uint)(h[0] | h[1] << 8 | h[2] << 16 | h[3] << 24);
            }
        }

        public bool HasStream { get { return hello != null; } }
        /// <summary>Whether checks are keyed tags (a key was given).</summary>
        public bool Keyed { get { return keys != null; } }
        /// <summary>The length of every check: 4 (CRC-32C) or 8 (a SipHash tag, with a key).</summary>
        public int CheckLength { get { return T; } }
        /// <summary>The bound on what the client holds, in section 19's cost model (default 256 MiB): a
        /// hello or packet that would pass it is refused, kind "limits", before anything is allocated.</summary>
        public long MaxBytes
        {
            get { return maxBytes; }
            set { if (value < 1) throw new ArgumentOutOfRangeException("MaxBytes", "MaxBytes must be positive (bytes), not " + value + ", as in every client"); maxBytes = value; }
        }
        /// <summary>What the held snapshots cost in section 19's model: 256 + n * (8 + 8 * S) for each
        /// snapshot of the window held (n its entities, S the schema's slots), and nothing else. It
        /// does not count the reassembly's allowance 256 * max_datagram, which section 19's checks add
        /// to it (a packet is refused when H + its snapshot's cost + 256 * max_datagram would pass
        /// MaxBytes, H being HeldBytes less the held snapshots a packet newer than Latest pushes out
        /// of the window, (seq - s) mod 65536 >= 2 * history - 1), nor the partial packets' bytes
        /// (PartialBytes): JavaScript's heldBytes includes the allowance, this does not. A model, not the process's memory (README.md,
        /// Limits: about 2.2 times it for snapshots of 0 or 1 entity, under Mono).</summary>
        public long HeldBytes { get { return heldCost; } }
        /// <summary>Section 19's cost of a held snapshot of n entities under this schema.</summary>
        public long SnapshotCost(long n) { return SnapshotOverhead + n * EntityCost; }
        long EntityCost { get { return 8 + 8L * Schema.Slots.Length; } }
        /// <summary>Whether the last datagram was a hello that was adopted (a new stream).</summary>
        public bool LastAdopted { get; private set; }
        /// <summary>The adopted stream's seeds (wire-format section 11): the check is keyed, not secret.</summary>
        public uint PacketSeed { get { return seedP; } }
        public uint FragmentSeed { get { return seedF; } }
        /// <summary>seed_R = crc32c(K || "R"): the check of the client's acks (section 18).</summary>
        public uint ReplySeed { get { return seedR; } }
        /// <summary>With a key, the adopted stream's tag keys kP, kF, kR (section 17); null otherwise.</summary>
        public TagKey PacketKey { get { return kP; } }
        public TagKey FragmentKey { get { return kF; } }
        public TagKey ReplyKey { get { return kR; } }
        /// <summary>With a key, its derived keys (kH, kQ, sub(L)); null otherwise.</summary>
        public KeySchedule Keys { get { return keys; } }
        public HelloInfo Stream { get { return hello; } }
        public int History { get { return history; } }
        /// <summary>The newest sequence number decoded (-1 before the first): what the client acknowledges.</summary>
        public int Latest { get { return latest; } }
        public bool HasLatest { get { return latest >= 0; } }

        /// <summary>The held snapshot `seq` among the possible baselines, or null. seq is a 16-bit
        /// sequence number taken mod 65536, as Python's SnapshotDecoder.get masks it (seq &amp; 0xFFFF):
        /// Get(-1) is Get(65535) and Get(65536) is Get(0), never an error.</summary>
        public Snapshot Get(int seq)
        {
            Snapshot s;
            if (latest >= 0 && Recent(seq & 0xFFFF) && held.TryGetValue(seq & 0xFFFF, out s)) return s;
            return null;
        }

        /// <summary>Take one datagram. Snapshot: LastSnapshot is what it completed (acknowledge Latest);
        /// Pending: a fragment or hello that completes nothing; Refused: LastErrorKind says why and
        /// nothing changed. Never throws for any bytes.</summary>
        public Received Receive(byte[] data, int offset, int length)
        {
            LastSnapshot = null;
            LastErrorKind = null;
            LastError = null;
            LastAdopted = false;
            try
            {
                Snapshot s = Take(data, offset, length);
                if (s == null) return Received.Pending;
                LastSnapshot = s;
                return Received.Snapshot;
            }
            catch (DecodeException e)
            {
                LastErrorKind = e.Kind ?? "malformed";
                LastError = e.Message;
                return Received.Refused;
            }
        }

        public Received Receive(byte[] data) { return Receive(data, 0, data == null ? 0 : data.Length); }

        /// <summary>As Receive, but a refusal throws DecodeException (Kind set); null for a datagram that
        /// completes nothing.</summary>
        public Snapshot Decode(byte[] data, int offset, int length)
        {
            if (Receive(data, offset, length) == Received.Refused) throw new DecodeException(LastErrorKind, LastError);
            return LastSnapshot;
        }

        public Snapshot Decode(byte[] data) { return Decode(data, 0, data == null ? 0 : data.Length); }

        /// <summary>Decode a bare packet (sections 6-7, no check) under this decoder's state: for packets whose
        /// integrity another layer guarantees, and for the unframed golden packets. DecodeException
        /// (kind baseline or malformed) leaves the state as it was.</summary>
        public Snapshot DecodePacket(byte[] packet, int offset, int length)
        {
            Arg.Slice(packet, offset, length, "packet", "offset", "length", "SnapshotDecoder.DecodePacket");
            return Packet(packet, offset, length);
        }

        /// <summary>Whether the packet decoder accepts `code` in `slot` (its own tables and shortcuts; the
        /// tests compare it with Codec.Valid).</summary>
        public bool SlotAccepts(int slot, ulong code) { return coder.SlotValid(slot, code); }

        /// <summary>Whether changed entities take the packet decoder's fast path (the default) or are all
        /// decoded slot by slot: the same results either way (the tests compare them).</summary>
        internal bool FastPath { get { return coder.FastPath; } set { coder.FastPath = value; } }

        /// <summary>A text that changes whenever the client's state does (latest, held snapshots and their
        /// contents, numbers held as ambiguous, partial packets, the stream): for tests.</summary>
        public string StateDigest() { return StateDigest(true); }

        /// <summary>StateDigest, with or without the partial packets of the reassembly.</summary>
        public string StateDigest(bool partialsToo)
        {
            var sb = new StringBuilder();
            sb.Append(hello == null ? "-" : hello.StreamId.ToString("x16")).Append('|').Append(latest).Append('|');
            var keys = new List<int>(held.Keys);
            keys.Sort();
            foreach (var k in keys)
            {
                var s = held[k];
                ulong h = 1469598103934665603UL;
                for (int i = 0; i < s.Count; i++) h = (h ^ s.Ids[i]) * 1099511628211UL;
                for (int i = 0; i < s.Count * s.SlotCount; i++) h = (h ^ s.Codes[i]) * 1099511628211UL;
                sb.Append(k).Append(':').Append(s.Seq).Append(':').Append(s.Count).Append(':').Append(h.ToString("x")).Append(',');
            }
            var amb = new List<int>(ambiguous);
            amb.Sort();
            sb.Append('|').Append(string.Join(",", amb)).Append('|');
            if (!partialsToo) return sb.ToString();
            foreach (var p in partials) sb.Append(p.Seq).Append('/').Append(p.Count).Append('/').Append(p.PCheck).Append('/').Append(p.Have).Append(';');
            sb.Append('|').Append(heldBytes);
            return sb.ToString();
        }

        static uint U32(byte[] d, int i) { return (uint)(d[i] | d[i + 1] << 8 | d[i + 2] << 16 | d[i + 3] << 24); }
        static int U16(byte[] d, int i) { return d[i] | d[i + 1] << 8; }
        static ulong U64(byte[] d, int i) { return U32(d, i) | ((ulong)U32(d, i + 4) << 32); }

        Snapshot Take(byte[] d, int off, int n)
        {
            if (d == null) throw new ArgumentNullException("data", "SnapshotDecoder: no datagram (null)");
            Arg.Slice(d, off, n, "datagram", "offset", "length", "SnapshotDecoder");
            if (hello != null && n >= 1 + T)
            {
                if (keys == null)
                {
                    uint c = U32(d, off + n - 4);
                    uint cp = Crc32C.Compute(d, off, n - 4, seedP, ref crcScratch);
                    if (cp == c) return Packet(d, off, n - 4);
                    // the fragment check from the packet check: the same bytes under another seed
                    if (n >= FragmentHeader + 1 + 4 && (cp ^ SeedShift(n - 4)) == c) return Fragment(d, off, n - 4, cp);
                }
                else
                {
                    ulong c = U64(d, off + n - 8);
                    if (kP.Tag(d, off, n - 8) == c) return Packet(d, off, n - 8);
                    if (n >= FragmentHeader + 1 + 8 && kF.Tag(d, off, n - 8) == c) return Fragment(d, off, n - 8, 0);
                }
            }
            if (IsHello(d, off, n, keys)) { TakeHello(d, off, n); return null; }
            if (hello == null) throw new DecodeException("no-hello", "snapshot stream: no hello adopted yet, so no datagram can be checked (a datagram of " + n + " bytes refused)");
            throw new DecodeException("check", "snapshot stream: a datagram of " + n + " bytes fails the check of stream " + hello.StreamId.ToString("x16") + " (damaged, stray, of an earlier stream, or of another schema or parameters)");
        }

        // Crc32C.ZeroShift(seedP ^ seedF, shiftLen), for the length of the last fragment checked (all
        // but a packet's last fragment have one length)
        ulong[] crcScratch;                 // Crc32C.Compute's words
        int shiftLen = -1;
        uint shiftSeeds, shiftVal;

        uint SeedShift(int len)
        {
            uint k = seedP ^ seedF;
            if (len != shiftLen || k != shiftSeeds)
            {
                shiftVal = Crc32C.ZeroShift(k, len);
                shiftLen = len;
                shiftSeeds = k;
            }
            return shiftVal;
        }

        static bool IsHello(byte[] d, int off, int n, KeySchedule keys)
        {
            int t = keys == null ? 4 : 8;
            if (n < HelloFixed + t || d[off] != (byte)'Q' || d[off + 1] != (byte)'C' || d[off + 2] != (byte)'H' || d[off + 3] != (byte)'L') return false;
            if (keys == null) return Crc32C.Compute(d, off, n - 4, SeedH) == U32(d, off + n - 4);
            return keys.Hello.Tag(d, off, n - 8) == U64(d, off + n - 8);
        }

        // ------------------------------------------------------------------------ the hello

        static DecodeException HelloErr(string m) { return new DecodeException("hello", "hello: " + m); }

        /// <summary>Parse a hello, d[off .. off + n) (its check must hold); DecodeException kind "check"
        /// when it is no hello or its check fails, "hello" when malformed. A slice past d is the caller's
        /// error: ArgumentOutOfRangeException (ArgumentNullException for null).</summary>
        public static HelloInfo ParseHello(byte[] d, int off, int n) { return ParseHello(d, off, n, null); }

        /// <summary>Parse a hello whose check is the tag under keys (null: CRC-32C).</summary>
        public static HelloInfo ParseHello(byte[] d, int off, int n, KeySchedule keys)
        {
            Arg.Slice(d, off, n, "d", "off", "n", "SnapshotDecoder.ParseHello");
            if (!IsHello(d, off, n, keys)) throw new DecodeException("check", "hello: not a hello (too short, no QCHL magic, or its " + (keys == null ? "check" : "keyed tag") + " fails)");
            var h = new HelloInfo();
            h.Version = d[off + 4];
            int flags = d[off + 5];
            h.History = U16(d, off + 6);
            h.MaxDatagram = U16(d, off + 8);
            h.StreamId = U64(d, off + 10);
            h.Started = U64(d, off + 18);
            if (h.Version != FormatVersion) throw HelloErr("format version " + h.Version + ", this library reads version " + FormatVersion);
            if ((flags & ~1) != 0) throw HelloErr("unknown flags 0x" + flags.ToString("x2"));
            h.Predict = (flags & 1) != 0;
            if (h.History < 1 || h.History > 0x7FFF) throw HelloErr("history " + h.History + " outside 1..32767");
            if (h.MaxDatagram < MinDatagram || h.MaxDatagram > MaxDatagramLimit || n > h.MaxDatagram)
                throw HelloErr("max_datagram " + h.MaxDatagram + " outside 64..65507 or smaller than the hello (" + n + " bytes)");
            var fp = new StringBuilder(16);
            for (int i = 0; i < 16; i++)
            {
                byte b = d[off + 26 + i];
                if (b >= 0x80) throw HelloErr("the fingerprint is not hex");
                fp.Append((char)b);
            }
            h.Fingerprint = fp.ToString();
            if (!LowerHex16(h.Fingerprint)) throw HelloErr("the fingerprint '" + h.Fingerprint + "' is not 16 lowercase hex digits");
            h.SchemaVersion = U32(d, off + 42);
            int end = off + n - (keys == null ? 4 : 8);
            int pos = off + 46;
            h.SchemaName = Text(d, ref pos, end, "the schema name");
            if (pos + 4 > end) throw HelloErr("truncated in the field counts at byte " + (pos - off));
            h.NFields = U16(d, pos);
            int ns = U16(d, pos + 2);
            pos += 4;
            if (ns > h.NFields) throw HelloErr(ns + " field summaries for " + h.NFields + " fields");
            h.FieldNames = new string[ns]; h.FieldKinds = new int[ns]; h.FieldBits = new int[ns]; h.FieldHashes = new uint[ns];
            for (int i = 0; i < ns; i++)
            {
                h.FieldNames[i] = Text(d, ref pos, end, "field " + i + "'s name");
                if (pos + 7 > end) throw HelloErr("truncated in field " + i + " at byte " + (pos - off));
                h.FieldKinds[i] = d[pos];
                h.FieldBits[i] = U16(d, pos + 1);
                h.FieldHashes[i] = U32(d, pos + 3);
                pos += 7;
            }
            if (pos != end) throw HelloErr((end - pos) + " bytes after the last field summary");
            h.Raw = new byte[n];
            Buffer.BlockCopy(d, off, h.Raw, 0, n);
            return h;
        }

        static string Text(byte[] d, ref int pos, int end, string what)
        {
            if (pos + 1 > end) throw HelloErr("truncated in " + what + " at byte " + pos);
            int len = d[pos];
            pos++;
            if (pos + len > end) throw HelloErr("truncated in " + what + " at byte " + pos);
            string s;
            try { s = new UTF8Encoding(false, true).GetString(d, pos, len); }
            catch (ArgumentException) { throw HelloErr(what + " is not UTF-8"); }
            pos += len;
            return s;
        }

        /// <summary>Whether Python's int(s, 16) accepts s (whitespace around, a sign, a 0x prefix,
        /// underscores between digits).</summary>
        /// <summary>A fingerprint is 16 lowercase hex digits (docs/wire-format.md section 13).</summary>
        static bool LowerHex16(string s)
        {
            if (s.Length != 16) return false;
            foreach (char c in s)
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
            return true;
        }

        /// <summary>What differs between this schema and the one a hello describes (empty when the
        /// fingerprints are equal).</summary>
        public List<string> Differences(HelloInfo h)
        {
            Arg.NotNull(h, "h", "SnapshotDecoder.Differences");
            var o = new List<string>();
            if (h.Fingerprint == Schema.Fingerprint) return o;
            o.Add("fingerprint " + Schema.Fingerprint + " here, " + h.Fingerprint + " in the hello");
            if (h.SchemaName != Schema.Name) o.Add("schema name '" + Schema.Name + "' here, '" + h.SchemaName + "' in the hello");
            if (h.SchemaVersion != (uint)(Schema.Version & uint.MaxValue)) o.Add("schema version " + Schema.Version + " here, " + h.SchemaVersion + " in the hello");
            bool complete = h.FieldNames.Length == h.NFields;
            var theirs = new Dictionary<string, int>();
            for (int i = 0; i < h.FieldNames.Length; i++) theirs[h.FieldNames[i]] = i;
            for (int f = 0; f < Schema.Fields.Length; f++)
            {
                var fl = Schema.Fields[f];
                int t;
                if (!theirs.TryGetValue(fl.Name, out t)) { if (complete) o.Add("field '" + fl.Name + "' is not in the server's schema"); continue; }
                string kt = h.FieldKinds[t] >= 1 && h.FieldKinds[t] < KindNames.Length ? KindNames[h.FieldKinds[t]] : "kind " + h.FieldKinds[t];
                string km = fl.Codec.Kind.ToString();
                if (kt != km) o.Add("field '" + fl.Name + "': " + km + " here, " + kt + " on the server");
                else if (h.FieldBits[t] != Math.Min(fl.Codec.Bits, 0xFFFF)) o.Add("field '" + fl.Name + "': " + fl.Codec.Bits + " bits here, " + h.FieldBits[t] + " on the server");
                else if (h.FieldHashes[t] != myHashes[f]) o.Add("field '" + fl.Name + "': same kind (" + km + ") and bits, other parameters (range, step, labels...)");
            }
            foreach (var name in h.FieldNames) if (Schema.FieldIndex(name) < 0) o.Add("field '" + name + "' of the server's schema is missing here");
            if (!complete) o.Add("(the hello summarizes " + h.FieldNames.Length + " of the server's " + h.NFields + " fields)");
            return o;
        }

        void TakeHello(byte[] d, int off, int n)
        {
            HelloInfo h = ParseHello(d, off, n, keys);
            var diffs = Differences(h);
            if (diffs.Count > 0) throw new DecodeException("schema", "snapshot stream: a hello of another schema: " + string.Join("; ", diffs));
            if (hello != null)
            {
                if (h.StreamId == hello.StreamId)
                {
                    if (!SameBytes(h.Raw, hello.Raw)) throw new DecodeException("hello", "snapshot stream: a hello of stream " + h.StreamId.ToString("x16") + " with other parameters than the one adopted");
                    return;
                }
                // (a stream that has decoded no packet yet holds nothing: it does not refuse another, so
                // that a stray hello adopted cannot keep the client from its server, section 13)
                if (h.Started <= hello.Started && latest >= 0)
                    throw new DecodeException("hello", "snapshot stream: a hello of an older stream " + h.StreamId.ToString("x16") + " (started " + h.Started + ", the current one " + hello.Started + ", which has decoded packets)");
            }
            CheckHelloLimits(h);
            Adopt(h);
            LastAdopted = true;
        }

        static bool SameBytes(byte[] a, byte[] b)
        {
            if (a.Length != b.Length) return false;
            for (int i = 0; i < a.Length; i++) if (a[i] != b[i]) return false;
            return true;
        }

        /// <summary>Adopt a stream from its hello (what decoding a hello does when it is accepted): checks
        /// the schema (SchemaException saying what differs), starts the client over. DecodeException
        /// for what is no hello (kind check) or a malformed one (hello) or one past MaxBytes (limits);
        /// ArgumentNullException for null.</summary>
        public void AdoptHello(byte[] d)
        {
            Arg.NotNull(d, "d", "SnapshotDecoder.AdoptHello");
            HelloInfo h = ParseHello(d, 0, d.Length, keys);
            var diffs = Differences(h);
            if (diffs.Count > 0) throw new SchemaException("the server's schema is not this one: " + string.Join("; ", diffs));
            CheckHelloLimits(h);
            Adopt(h);
        }

        /// <summary>Section 19, check 1: a window of empty snapshots and full reassembly must fit max_bytes.</summary>
        void CheckHelloLimits(HelloInfo h)
        {
            long need = (2L * h.History - 1) * SnapshotOverhead + ReassemblyFactor * h.MaxDatagram;
            if (need > maxBytes)
                throw new DecodeException("limits", "snapshot stream: a hello of history " + h.History + " and max_datagram " + h.MaxDatagram
                    + " needs " + need + " bytes ((2 * history - 1) * 256 + 256 * max_datagram) before any entity, more than max_bytes " + maxBytes);
        }

        void Adopt(HelloInfo h)
        {
            var key = new byte[41];
            Encoding.ASCII.GetBytes("quantcodec").CopyTo(key, 0);
            key[10] = FormatVersion;
            Encoding.ASCII.GetBytes(h.Fingerprint).CopyTo(key, 11);
            key[27] = (byte)h.History; key[28] = (byte)(h.History >> 8);
            key[29] = (byte)(h.Predict ? 1 : 0);
            key[30] = (byte)h.MaxDatagram; key[31] = (byte)(h.MaxDatagram >> 8);
            for (int i = 0; i < 8; i++) key[32 + i] = (byte)(h.StreamId >> (8 * i));
            key[40] = (byte)'P';
            seedP = Crc32C.Compute(key, 0, 41, 0);
            key[40] = (byte)'F';
            seedF = Crc32C.Compute(key, 0, 41, 0);
            key[40] = (byte)'R';
            seedR = Crc32C.Compute(key, 0, 41, 0);
            if (keys != null)
            {
                key[40] = (byte)'P'; kP = keys.Sub(key);
                key[40] = (byte)'F'; kF = keys.Sub(key);
                key[40] = (byte)'R'; kR = keys.Sub(key);
            }
            hello = h;
            history = h.History;
            keep = 2 * history - 1 <= 0x8000 ? 2 * history - 1 : 0x8000;
            Reset();
        }

        /// <summary>Forget everything decoded (Latest back to -1) and the partial packets; the stream stays.</summary>
        public void Reset()
        {
            foreach (var kv in held) Recycle(kv.Value);
            Forget();
        }

        void Forget()
        {
            held.Clear();
            heldCost = 0;
            ambiguous.Clear();
            latest = -1;
            partials.Clear();
            heldBytes = 0;
        }

        /// <summary>Done with this decoder and every snapshot it returned: the buffers of the snapshots it
        /// holds go to a pool that the decoders made after it take them from (a client that reconnects
        /// then decodes into memory it already has: no fresh pages, no GC work for them). Those snapshots
        /// are left empty (Count 0, Ids and Codes of length 0; Interpolator.Push refuses them): Clone()
        /// what you keep beyond Dispose, before it.
        /// The pool keeps a buffer only while it holds at most this decoder's MaxBytes (PooledBytes,
        /// ClearPool). The decoder is then as after Reset (its stream kept, nothing held) and may be
        /// used again; a decoder never disposed is collected as before, its buffers with it.</summary>
        public void Dispose()
        {
            foreach (var kv in held) kv.Value.Release(maxBytes);
            while (pool.Count > 0) pool.Pop().Release(maxBytes);
            Forget();
            LastSnapshot = null;
        }

        /// <summary>The bytes of snapshot buffers that disposed decoders gave back and no decoder has taken
        /// yet (shared by every decoder of the process; at most the largest MaxBytes among the givers).</summary>
        public static long PooledBytes { get { return SnapshotPool.Bytes; } }

        /// <summary>Let the GC have the pooled buffers (PooledBytes back to 0).</summary>
        public static void ClearPool() { SnapshotPool.Clear(); }

        // ------------------------------------------------------------------------ fragments

        Snapshot Fragment(byte[] d, int off, int n, uint cp)
        {
            // n: the body (without the check), > 8; cp, without a key: crc32c(seed_P, the body)
            int seq = U16(d, off);
            int index = d[off + 2];
            int count1 = d[off + 3];
            int count = count1 + 1;
            uint pcheck = U32(d, off + 4);
            int clen = n - FragmentHeader;
            int size = hello.MaxDatagram - FragmentHeader - T;
            if (count1 == 0) throw new DecodeException("fragment", "fragment of packet " + seq + ": a count of 1 (a packet that fits is sent whole)");
            if (index >= count) throw new DecodeException("fragment", "fragment of packet " + seq + ": index " + index + " of " + count);
            bool last = index == count - 1;
            if (last ? !(clen >= 1 && clen <= size) : clen != size)
                throw new DecodeException("fragment", "fragment " + index + " of " + count + " of packet " + seq + ": a chunk of " + clen + " bytes (" + (last ? "at most " : "") + size + " expected)");
            if (latest >= 0)
            {
                for (int i = partials.Count - 1; i >= 0; i--)
                {
                    int age = (latest - partials[i].Seq) & 0xFFFF;
                    if (age >= history && age < 0x8000) DropPartial(i);
                }
                int a = (latest - seq) & 0xFFFF;
                if (a >= history && a < 0x8000) return null;      // given up: too old to be waited for
            }
            int pi = FindPartial(seq, count, pcheck);
            if (pi >= 0 && partials[pi].Chunks[index] != null) return null;     // a duplicate
            long limit = (long)MaxFragments * hello.MaxDatagram;
            int csize = size;    // every chunk counts as a full one (section 12, rule 4)
            if (heldBytes + csize > limit && !MakeRoom(ref pi, seq, csize, limit)) return null;    // (its packet the oldest: not kept)
            Partial p;
            if (pi < 0)
            {
                p = new Partial { Seq = seq, Count = count, PCheck = pcheck, Chunks = new byte[count][],
                                  Sums = keys == null ? new uint[2 * count] : null };
                partials.Add(p);
                pi = partials.Count - 1;
            }
            else p = partials[pi];
            var chunk = new byte[clen];
            Buffer.BlockCopy(d, off + FragmentHeader, chunk, 0, clen);
            p.Chunks[index] = chunk;
            if (p.Sums != null) { p.Sums[2 * index] = cp; p.Sums[2 * index + 1] = Crc32C.Compute(d, off, FragmentHeader, seedP); }
            p.Have++;
            p.Bytes += csize;
            heldBytes += csize;
            if (p.Have < count) return null;
            DropPartial(pi);
            int total = 0;
            foreach (var ch in p.Chunks) total += ch.Length;
            if (joined.Length < total) joined = new byte[Math.Max(total, joined.Length * 2)];
            int at = 0;
            foreach (var ch in p.Chunks) { Buffer.BlockCopy(ch, 0, joined, at, ch.Length); at += ch.Length; }
            if (JoinedCheck(p, size, total) != pcheck || U16(joined, 0) != seq)
                throw new DecodeException("fragment", "fragments of packet " + seq + ": the reassembled packet fails its check");
            return Packet(joined, 0, total);
        }

        // crc32c(seed_P, the joined chunks). Without a key, from the fragments' own checks rather than a
        // second pass over the bytes: chunk i's check over header H + chunk C under seed_P is
        // crc(x, C) with x = crc(seed_P, H), and crc(s, C) ^ crc(x, C) == ZeroShift(s ^ x, |C|) (affine in
        // the start), so crc(s, C) follows for the running s of the chunks before it. Every chunk but
        // the last has one length (size): its shift is four table loads (chunkShift, made once a stream).
        uint[] chunkShift;
        int chunkShiftLen = -1;

        uint JoinedCheck(Partial p, int size, int total)
        {
            if (p.Sums == null) return Crc32C.Compute(joined, 0, total, seedP, ref crcScratch);
            if (chunkShiftLen != size) { chunkShift = Crc32C.ShiftTable(size); chunkShiftLen = size; }
            uint s = seedP;
            uint[] sums = p.Sums;
            for (int i = 0; i < p.Count; i++)
            {
                int len = p.Chunks[i].Length;
                uint v = s ^ sums[2 * i + 1];
                s = sums[2 * i] ^ (len == size ? Crc32C.Shift(chunkShift, v) : Crc32C.ZeroShift(v, len));
            }
            return s;
        }

        /// <summary>How far packet `seq` is behind latest (section 12, rule 4): (latest - seq) mod 65536, less
        /// 65536 from 32768 on (a packet newer than latest is behind by a negative number); 0 for every
        /// packet before any is decoded.</summary>
        int Behind(int seq)
        {
            if (latest < 0) return 0;
            int d = (latest - seq) & 0xFFFF;
            return d >= 0x8000 ? d - 0x10000 : d;
        }

        /// <summary>Room for one more chunk (of csize bytes) of the packet `seq`, partials[pi] (pi &lt; 0: a new
        /// one, begun now) (section 12, rule 4): partial packets dropped oldest first, the furthest behind
        /// latest, equals in the order begun (the order of `partials`; a new one last among its equals),
        /// until the chunk fits. False, its own packet dropped when it existed, when that one comes up
        /// first: the chunk is not kept, and the packets ranked after it stay. pi follows its packet.
        /// (Picked one at a time, the largest each time: no list sorted, nothing allocated.)</summary>
        bool MakeRoom(ref int pi, int seq, int csize, long limit)
        {
            int own = Behind(seq);
            while (heldBytes + csize > limit)
            {
                int first = -1, fd = 0;
                for (int i = 0; i < partials.Count; i++)
                {
                    int d = Behind(partials[i].Seq);
                    if (first < 0 || d > fd) { first = i; fd = d; }
                }
                // a new packet of its own ranks after every partial as far behind as it
                if (first < 0 || (pi < 0 && fd < own)) return false;
                if (first == pi) { DropPartial(pi); pi = -1; return false; }
                DropPartial(first);
                if (first < pi) pi--;
            }
            return true;
        }

        int FindPartial(int seq, int count, uint pcheck)
        {
            for (int i = 0; i < partials.Count; i++)
            {
                var p = partials[i];
                if (p.Seq == seq && p.Count == count && p.PCheck == pcheck) return i;
            }
            return -1;
        }

        void DropPartial(int i)
        {
            heldBytes -= partials[i].Bytes;
            partials.RemoveAt(i);
        }

        /// <summary>Partial packets held (for tests and monitoring).</summary>
        public int PartialCount { get { return partials.Count; } }
        public long PartialBytes { get { return heldBytes; } }

        // ------------------------------------------------------------------------ packets and state

        bool Recent(int s) { return ((latest - s) & 0xFFFF) < history; }

        static bool Newer(int a, int b) { int d = (a - b) & 0xFFFF; return d > 0 && d < 0x8000; }

        Snapshot HeldRef(int s, int seq, bool baseline)
        {
            Snapshot snap;
            if (held.TryGetValue(s, out snap) && (!baseline || Recent(s))) return snap;
            if (ambiguous.Contains(s))
                throw new DecodeException("baseline", "snapshot packet " + seq + ": the snapshot " + s + " it is coded against is ambiguous (two different snapshots were decoded under that number)");
            if (baseline) throw new DecodeException("baseline", "snapshot packet " + seq + ": its baseline " + s + " is not held");
            throw new DecodeException("baseline", "snapshot packet " + seq + ": the snapshot " + s + " it extrapolates from is not held");
        }

        // (one delegate a decoder: PacketDecoder.Body takes the new snapshot after the limits check)
        Func<int, Snapshot> newSnapshot;
        internal int PooledSnapshots { get { return pool.Count; } }

        Snapshot NewSnapshot(int n)
        {
            if (pool.Count > 0) { var s = pool.Pop(); s.Pooled = false; return s; }
            return new Snapshot(Schema, Math.Max(n, 16), true);
        }

        void Recycle(Snapshot s)
        {
            if (!RecycleSnapshots || s.Pooled || pool.Count >= 8) return;
            s.Pooled = true;
            pool.Push(s);
        }

        Snapshot Packet(byte[] d, int off, int n)
        {
            int seq, bdist, pdist;
            coder.Header(d, off, n, out seq, out bdist, out pdist);
            Snapshot bs = null, pr = null;
            if (bdist != 0)
            {
                int bseq = (seq - bdist) & 0xFFFF;
                bs = HeldRef(bseq, seq, true);
                if (pdist != 0) pr = HeldRef((bseq - pdist) & 0xFFFF, seq, false);
            }
            // section 19, check 2: the room left for the new snapshot once H (the held snapshots the
            // packet leaves in the window, KeptCost) and the reassembly's bound are counted; the packet
            // decoder refuses a larger one (kind limits) right after its count of new entities, before
            // it allocates for them
            long room = maxBytes - KeptCost(seq) - (hello != null ? ReassemblyFactor * hello.MaxDatagram : 0) - SnapshotOverhead;
            Snapshot snap = null;
            if (newSnapshot == null) newSnapshot = NewSnapshot;
            try { coder.Body(seq, bdist, pdist, bs, pr, ref snap, newSnapshot, room, maxBytes); }
            catch (DecodeException) { if (snap != null) Recycle(snap); throw; }
            if (latest < 0 || Newer(seq, latest))
            {
                Store(seq, snap, true);
                latest = seq;
                if (ambiguous.Count > 0) ForgetAmbiguous(seq);
                return snap;
            }
            Snapshot prev;
            if (held.TryGetValue(seq, out prev))
            {
                if (!prev.SameAs(snap))
                {
                    Unhold(seq);
                    ambiguous.Add(seq);
                    return snap;        // (prev is not recycled: the application may still read it)
                }
                Recycle(snap);
                return prev;            // a duplicate: the held one, the same codes
            }
            if (!ambiguous.Contains(seq)) Store(seq, snap, false);
            return snap;
        }

        /// <summary>Section 19's H for packet seq: the cost of the held snapshots the packet leaves in
        /// section 10's window. All of them, but a packet newer than latest (or the first to decode)
        /// moves the window, and those it pushes out ((seq - s) mod 65536 >= 2 * history - 1) are not
        /// counted: counting them, a client whose MaxBytes holds exactly its window refused every
        /// packet once the window was full, and for good (only a packet that decodes moves it).</summary>
        long KeptCost(int seq)
        {
            if (latest >= 0 && !Newer(seq, latest)) return heldCost;
            long cost = heldCost;
            foreach (var e in held)
                if (((seq - e.Key) & 0xFFFF) >= keep) cost -= SnapshotCost(e.Value.Count);
            return cost;
        }

        void ForgetAmbiguous(int seq)
        {
            // (no lambda: a closure over seq would be allocated on every packet)
            scratchKeys.Clear();
            foreach (var k in ambiguous) if (((seq - k) & 0xFFFF) >= keep) scratchKeys.Add(k);
            foreach (var k in scratchKeys) ambiguous.Remove(k);
        }

        void Store(int seq, Snapshot snap, bool newer)
        {
            if (latest >= 0)
            {
                if (!newer)
                {
                    if (((latest - seq) & 0xFFFF) < keep) Hold(seq, snap);
                    return;
                }
                scratchKeys.Clear();
                foreach (var k in held.Keys) if (((seq - k) & 0xFFFF) >= keep) scratchKeys.Add(k);
                foreach (var k in scratchKeys) { Recycle(held[k]); Unhold(k); }
            }
            Hold(seq, snap);
        }

        void Hold(int seq, Snapshot snap)
        {
            Unhold(seq);
            held[seq] = snap;
            heldCost += SnapshotCost(snap.Count);
        }

        void Unhold(int seq)
        {
            Snapshot s;
            if (!held.TryGetValue(seq, out s)) return;
            heldCost -= SnapshotCost(s.Count);
            held.Remove(seq);
        }

        /// <summary>The sequence numbers held as possible baselines, newest first.</summary>
        public List<int> HeldBaselines()
        {
            var o = new List<int>();
            if (latest < 0) return o;
            foreach (var k in held.Keys) if (Recent(k)) o.Add(k);
            int l = latest;
            o.Sort((a, b) => ((l - a) & 0xFFFF).CompareTo((l - b) & 0xFFFF));
            return o;
        }
    }
}
