// The C# client's tests: codec goldens, the conformance kit (values, records, streams), schema
// loading and fingerprints, the golden snapshot packets, the generated typed records, a lockstep
// test and a fuzz test. Run by ./run-tests; the last line is "N passed, M failed".
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Numerics;
using System.Text;
using QuantCodec;
using QuantCodec.Generated;

static partial class Tests
{
    static int passed, failed;
    static string root;         // the repository
    static string here;         // clients/csharp

    static void Check(bool ok, string what)
    {
        if (ok) passed++;
        else { failed++; if (failed <= 60) Console.WriteLine("FAIL: " + what); }
    }

    static int Main(string[] args)
    {
        here = args.Length > 0 ? args[0] : ".";
        root = Path.GetFullPath(Path.Combine(here, "..", ".."));
        if (args.Length > 2 && args[1] == "--kit-command") { Console.WriteLine(KitCommand(args[2])); return 0; }
        var groups = new List<KeyValuePair<string, Action>>
        {
            new KeyValuePair<string, Action>("float bits and JSON", FloatAndJson),
            new KeyValuePair<string, Action>("schemas and fingerprints", SchemasAndFingerprints),
            new KeyValuePair<string, Action>("schema reading rules", SchemaRules),
            new KeyValuePair<string, Action>("kit schema cases", SchemaKit),
            new KeyValuePair<string, Action>("codec goldens", CodecGoldens),
            new KeyValuePair<string, Action>("kit values", KitValues),
            new KeyValuePair<string, Action>("kit records", KitRecords),
            new KeyValuePair<string, Action>("kit streams", KitStreams),
            new KeyValuePair<string, Action>("disposed decoders' pool", DecoderPool),
            new KeyValuePair<string, Action>("golden snapshot packets", GoldenPackets),
            new KeyValuePair<string, Action>("generated records", Generated),
            new KeyValuePair<string, Action>("lockstep", Lockstep),
            new KeyValuePair<string, Action>("siphash and keys", SipHashAndKeys),
            new KeyValuePair<string, Action>("keyed checks", KeyedChecks),
            new KeyValuePair<string, Action>("replies", Replies),
            new KeyValuePair<string, Action>("keep-alives", KeepAlives),
            new KeyValuePair<string, Action>("limits", Limits),
            new KeyValuePair<string, Action>("hello adoption", HelloAdoption),
            new KeyValuePair<string, Action>("reassembly bound", ReassemblyBound),
            new KeyValuePair<string, Action>("runner options", RunnerOptions),
            new KeyValuePair<string, Action>("hostile limits", HostileLimits),
            new KeyValuePair<string, Action>("fuzz", Fuzz),
            new KeyValuePair<string, Action>("interpolation kit", InterpKit),
            new KeyValuePair<string, Action>("interpolation cases", InterpUnits),
            new KeyValuePair<string, Action>("interpolation reset", InterpReset),
            new KeyValuePair<string, Action>("interpolation vs Python", InterpPython),
            new KeyValuePair<string, Action>("bad arguments", BadArguments),
            new KeyValuePair<string, Action>("package layout", Package),
        };
        string only = args.Length > 1 ? args[1] : null;
        foreach (var g in groups)
        {
            if (only != null && !g.Key.Contains(only)) continue;
            int p0 = passed, f0 = failed;
            var t0 = DateTime.UtcNow;
            try { g.Value(); }
            catch (Exception e) { failed++; Console.WriteLine("FAIL: " + g.Key + " threw " + e); }
            Console.WriteLine(string.Format(CultureInfo.InvariantCulture, "{0,-26} {1,6} passed {2,4} failed  {3,6:F2} s",
                g.Key, passed - p0, failed - f0, (DateTime.UtcNow - t0).TotalSeconds));
        }
        Console.WriteLine(passed + " passed, " + failed + " failed");
        return failed == 0 ? 0 : 1;
    }

    // ------------------------------------------------------------------------------- helpers

    static JsonValue Load(string rel) { return Json.ParseUtf8(File.ReadAllBytes(Path.Combine(root, rel))); }

    static ulong Bits(double x) { return FloatBits.ToBits(x); }

    static string Hex(ulong b) { return b.ToString("x16"); }

    /// <summary>A kit float: 16 hex digits of its binary64 bits.</summary>
    static double KitFloat(JsonValue v) { return FloatBits.FromBits(ulong.Parse(v.Text, NumberStyles.HexNumber, CultureInfo.InvariantCulture)); }

    /// <summary>A code given as a decimal (string or number), as a BigInteger.</summary>
    static BigInteger BigCode(JsonValue v) { return BigInteger.Parse(v.Text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture); }

    /// <summary>A code as the uint64 carrier (negative: two's complement), or false when it has no carrier.</summary>
    static bool Carrier(BigInteger b, out ulong c)
    {
        c = 0;
        if (b.Sign < 0) { if (b < long.MinValue) return false; c = unchecked((ulong)(long)b); return true; }
        if (b > ulong.MaxValue) return false;
        c = (ulong)b;
        return true;
    }

    static byte[] FromHex(string h)
    {
        var b = new byte[h.Length / 2];
        for (int i = 0; i < b.Length; i++) b[i] = byte.Parse(h.Substring(2 * i, 2), NumberStyles.HexNumber, CultureInfo.InvariantCulture);
        return b;
    }

    static string ToHex(byte[] b)
    {
        var sb = new StringBuilder();
        foreach (var x in b) sb.Append(x.ToString("x2"));
        return sb.ToString();
    }

    static List<byte[]> ReadDatagrams(string path)
    {
        var data = File.ReadAllBytes(path);
        var o = new List<byte[]>();
        int pos = 0;
        while (pos < data.Length)
        {
            int n = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16 | data[pos + 3] << 24;
            pos += 4;
            var d = new byte[n];
            Buffer.BlockCopy(data, pos, d, 0, n);
            o.Add(d);
            pos += n;
        }
        return o;
    }

    /// <summary>The runner's line for one Receive (the qc-decode format).</summary>
    static string Line(SnapshotDecoder dec, Received r)
    {
        if (r == Received.Pending) return "{\"pending\":true}";
        if (r == Received.Refused) return "{\"error\":\"" + dec.LastErrorKind + "\"}";
        var s = dec.LastSnapshot;
        var slots = s.Schema.Slots;
        var sb = new StringBuilder();
        sb.Append("{\"seq\":").Append(s.Seq).Append(",\"ids\":[");
        for (int i = 0; i < s.Count; i++) { if (i > 0) sb.Append(','); sb.Append(s.Ids[i]); }
        sb.Append("],\"codes\":[");
        for (int i = 0; i < s.Count; i++)
        {
            if (i > 0) sb.Append(',');
            sb.Append('[');
            for (int t = 0; t < slots.Length; t++)
            {
                if (t > 0) sb.Append(',');
                ulong c = s.Codes[i * slots.Length + t];
                if (slots[t].Signed) sb.Append((long)c); else sb.Append(c);
            }
            sb.Append(']');
        }
        return sb.Append("]}").ToString();
    }

    static bool Throws<T>(Action a) where T : Exception
    {
        try { a(); return false; }
        catch (T) { return true; }
    }
}
