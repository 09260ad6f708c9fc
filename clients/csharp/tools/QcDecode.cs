// qc-decode SCHEMA.json DATAGRAMS.bin: the runner of SPEC section 7 / conformance/README.md.
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
        if (args.Length != 2)
        {
            Console.Error.WriteLine("usage: qc-decode SCHEMA.json DATAGRAMS.bin");
            return 2;
        }
        Schema schema;
        try { schema = Schema.Load(args[0]); }
        catch (SchemaException e) { Console.Error.WriteLine("qc-decode: " + e.Message); return 2; }
        byte[] data;
        try { data = File.ReadAllBytes(args[1]); }
        catch (Exception e) { Console.Error.WriteLine("qc-decode: " + args[1] + ": " + e.Message); return 2; }
        var dec = new SnapshotDecoder(schema);
        var stdout = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(false));
        stdout.NewLine = "\n";
        var sb = new StringBuilder(1 << 16);
        int pos = 0, index = 0;
        while (pos < data.Length)
        {
            if (data.Length - pos < 4)
            {
                stdout.Flush();
                Console.Error.WriteLine("qc-decode: " + args[1] + ": " + (data.Length - pos) + " bytes left at byte " + pos + ", too few for a length (datagram " + index + ")");
                return 2;
            }
            long len = (uint)(data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16 | data[pos + 3] << 24);
            pos += 4;
            if (len > data.Length - pos)
            {
                stdout.Flush();
                Console.Error.WriteLine("qc-decode: " + args[1] + ": datagram " + index + " of " + len + " bytes runs past the end of the file");
                return 2;
            }
            var r = dec.Receive(data, pos, (int)len);
            pos += (int)len;
            index++;
            sb.Clear();
            if (r == Received.Pending) sb.Append("{\"pending\":true}");
            else if (r == Received.Refused) sb.Append("{\"error\":\"").Append(dec.LastErrorKind).Append("\"}");
            else Format(sb, dec.LastSnapshot);
            stdout.WriteLine(sb.ToString());
        }
        stdout.Flush();
        return 0;
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
