// qc-decode [--key HEX] [--max-bytes N] [--replies NONCE [--idle N]] SCHEMA.json DATAGRAMS.bin: the
// runner of SPEC section 7 / conformance/README.md. --key: keyed checks (wire-format section 17);
// --max-bytes: the client's bound (section 19); --replies: a StreamClient with that nonce, whose Reply()
// after each datagram ends the line as "reply": its lowercase hex, or null (section 18); --idle N (0 to
// 1000, only with --replies): N more Reply() calls after it with nothing arriving, their results after
// it as "idle": [hex or null, ...] (the keep-alives of section 18; no "idle" key when N is 0).
using System;
using System.IO;
using System.Text;
using QuantCodec;

static class QcDecode
{
    static int Main(string[] args)
    {
        try { return Run(args); }
        catch (IOException) { return 1; }      // the reader left (qc-decode ... | head): stop quietly
    }

    static int Run(string[] args)
    {
        const string usage = "usage: qc-decode [--key HEX] [--max-bytes N] [--replies NONCE [--idle N]] SCHEMA.json DATAGRAMS.bin";
        byte[] key = null;
        long maxBytes = SnapshotDecoder.DefaultMaxBytes;
        uint? nonce = null;
        int? idle = null;
        var rest = new System.Collections.Generic.List<string>();
        for (int i = 0; i < args.Length; i++)
        {
            string a = args[i], v = null;
            int eq = a.StartsWith("--", StringComparison.Ordinal) ? a.IndexOf('=') : -1;
            if (eq > 0) { v = a.Substring(eq + 1); a = a.Substring(0, eq); }     // --opt=VALUE is --opt VALUE
            if (a == "--key" || a == "--max-bytes" || a == "--replies" || a == "--idle")
            {
                if (v == null && i + 1 >= args.Length) { Console.Error.WriteLine("qc-decode: " + a + " needs a value\n" + usage); return 2; }
                if (v == null) v = args[++i];
                if (a == "--key")
                {
                    key = ParseHex(v);
                    if (key == null || key.Length < 1 || key.Length > 255)
                    {
                        Console.Error.WriteLine("qc-decode: --key " + v + ": a key is 1 to 255 bytes written as an even number of hex digits");
                        return 2;
                    }
                }
                else if (a == "--max-bytes")
                {
                    long m;
                    if (!long.TryParse(v, System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out m) || m < 1)
                    {
                        Console.Error.WriteLine("qc-decode: --max-bytes " + v + ": a number of bytes, a decimal integer from 1 to " + long.MaxValue);
                        return 2;
                    }
                    maxBytes = m;
                }
                else if (a == "--idle")
                {
                    int n;
                    if (!int.TryParse(v, System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out n) || n > 1000)
                    {
                        Console.Error.WriteLine("qc-decode: --idle " + v + ": a number of calls of Reply(), a decimal integer from 0 to 1000");
                        return 2;
                    }
                    idle = n;
                }
                else
                {
                    uint n;
                    if (!uint.TryParse(v, System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out n))
                    {
                        Console.Error.WriteLine("qc-decode: --replies " + v + ": the client's nonce, a decimal 32-bit unsigned integer");
                        return 2;
                    }
                    nonce = n;
                }
            }
            else if (a.StartsWith("--", StringComparison.Ordinal)) { Console.Error.WriteLine("qc-decode: unknown option " + a + "\n" + usage); return 2; }
            else rest.Add(a);
        }
        if (idle.HasValue && !nonce.HasValue)
        {
            Console.Error.WriteLine("qc-decode: --idle counts calls of the client's Reply(): give --replies NONCE too\n" + usage);
            return 2;
        }
        if (rest.Count != 2)
        {
            Console.Error.WriteLine(usage);
            return 2;
        }
        Schema schema;
        try { schema = Schema.Load(rest[0]); }
        catch (SchemaException e) { Console.Error.WriteLine("qc-decode: " + e.Message); return 2; }
        byte[] data;
        try { data = File.ReadAllBytes(rest[1]); }
        catch (Exception e) { Console.Error.WriteLine("qc-decode: " + rest[1] + ": " + e.Message); return 2; }
        StreamClient client = nonce.HasValue ? new StreamClient(schema, key, maxBytes, nonce.Value) : null;
        var dec = client != null ? client.Decoder : new SnapshotDecoder(schema, key, maxBytes);
        var stdout = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(false));
        stdout.NewLine = "\n";
        var sb = new StringBuilder(1 << 16);
        int pos = 0, index = 0;
        while (pos < data.Length)
        {
            if (data.Length - pos < 4)
            {
                stdout.Flush();
                Console.Error.WriteLine("qc-decode: " + rest[1] + ": " + (data.Length - pos) + " bytes left at byte " + pos + ", too few for a length (datagram " + index + ")");
                return 2;
            }
            long len = (uint)(data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16 | data[pos + 3] << 24);
            pos += 4;
            if (len > data.Length - pos)
            {
                stdout.Flush();
                Console.Error.WriteLine("qc-decode: " + rest[1] + ": datagram " + index + " of " + len + " bytes runs past the end of the file");
                return 2;
            }
            Received r;
            if (client == null) r = dec.Receive(data, pos, (int)len);
            else
            {
                // the session client: its Receive throws on a refusal (the decoder keeps the kind)
                try { r = client.Receive(data, pos, (int)len) != null ? Received.Snapshot : Received.Pending; }
                catch (DecodeException) { r = Received.Refused; }
            }
            pos += (int)len;
            index++;
            sb.Clear();
            if (r == Received.Pending) sb.Append("{\"pending\":true}");
            else if (r == Received.Refused) sb.Append("{\"error\":\"").Append(dec.LastErrorKind).Append("\"}");
            else Format(sb, dec.LastSnapshot);
            if (client != null)
            {
                sb.Length--;        // the closing brace: "reply" (then "idle") is the line's last key
                sb.Append(",\"reply\":");
                AppendReply(sb, client.Reply());
                if (idle > 0)
                {
                    // the calls with nothing arriving between them: keep-alives every 32nd (section 18)
                    sb.Append(",\"idle\":[");
                    for (int k = 0; k < idle.Value; k++)
                    {
                        if (k > 0) sb.Append(',');
                        AppendReply(sb, client.Reply());
                    }
                    sb.Append(']');
                }
                sb.Append('}');
            }
            stdout.WriteLine(sb.ToString());
        }
        stdout.Flush();
        return 0;
    }

    const string HexDigits = "0123456789abcdef";

    /// <summary>A reply as the line prints it: its lowercase hex in quotes, or null.</summary>
    static void AppendReply(StringBuilder sb, byte[] reply)
    {
        if (reply == null) { sb.Append("null"); return; }
        sb.Append('"');
        foreach (byte b in reply) sb.Append(HexDigits[b >> 4]).Append(HexDigits[b & 15]);
        sb.Append('"');
    }

    static byte[] ParseHex(string h)
    {
        if (h.Length % 2 != 0) return null;
        var b = new byte[h.Length / 2];
        for (int i = 0; i < h.Length; i++)
        {
            int v = HexDigits.IndexOf(char.ToLowerInvariant(h[i]));
            if (v < 0) return null;
            b[i / 2] = (byte)(b[i / 2] << 4 | v);
        }
        return b;
    }

    static void Format(StringBuilder sb, Snapshot s)
    {
        var slots = s.Schema.Slots;
        int S = slots.Length;
        sb.Append("{\"seq\":").Append(s.Seq).Append(",\"ids\":[");
        for (int i = 0; i < s.Count; i++) { if (i > 0) sb.Append(','); sb.Append(s.Ids[i]); }
        sb.Append("],\"codes\":[");
        for (int i = 0; i < s.Count; i++)
        {
            if (i > 0) sb.Append(',');
            sb.Append('[');
            for (int t = 0; t < S; t++)
            {
                if (t > 0) sb.Append(',');
                ulong c = s.Codes[i * S + t];
                if (slots[t].Signed) sb.Append((long)c); else sb.Append(c);
            }
            sb.Append(']');
        }
        sb.Append("]}");
    }
}
