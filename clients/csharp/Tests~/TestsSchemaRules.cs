// One reading of a schema document in every language (docs/schema-format.md, "One reading";
// rules R1-R9): each rule's cases, from the cross-language probe's repros, read as Schema.Load reads
// a file. Fingerprints given as literals are Python's.
using System;
using System.Collections.Generic;
using System.IO;
using System.Text;
using QuantCodec;

static partial class Tests
{
    static void SchemaRules()
    {
        SchemaRuleNegZero();
        SchemaRuleNearlyZeroReach();
        SchemaRuleNames();
        SchemaRuleVersionAndLimits();
        SchemaRuleEncoding();
        SchemaRuleNumbersAndKinds();
    }

    /// <summary>The schema of the bytes doc, as Schema.Load reads its file.</summary>
    static Schema LoadDoc(byte[] doc)
    {
        string p = Path.Combine(Path.GetTempPath(), "qc-schema-case-" + System.Diagnostics.Process.GetCurrentProcess().Id + ".json");
        File.WriteAllBytes(p, doc);
        try { return Schema.Load(p); }
        finally { File.Delete(p); }
    }

    static byte[] U8(string s) { return new UTF8Encoding(false, true).GetBytes(s); }

    /// <summary>A one-field schema document "S" version 1 of the codec spec.</summary>
    static string Doc(string codec, string field = "f") { return "{\"name\":\"S\",\"version\":1,\"fields\":[{\"name\":\"" + field + "\",\"codec\":" + codec + "}]}"; }

    /// <summary>The fingerprint of the document, or "refused: ..." (a SchemaException).</summary>
    static string DocFp(byte[] doc)
    {
        try { return LoadDoc(doc).Fingerprint; }
        catch (SchemaException e) { return "refused: " + e.Message; }
    }

    static string DocFp(string doc) { return DocFp(U8(doc)); }

    static void Refused(string what, byte[] doc)
    {
        string fp = DocFp(doc);
        Check(fp.StartsWith("refused: ", StringComparison.Ordinal), what + ": refused, got fingerprint " + fp);
    }

    static void Refused(string what, string doc) { Refused(what, U8(doc)); }

    static void Accepted(string what, byte[] doc, string want)
    {
        string fp = DocFp(doc);
        Check(fp == want, what + ": fingerprint " + want + ", got " + (fp.Length > 200 ? fp.Substring(0, 200) : fp));
    }

    static void Accepted(string what, string doc, string want) { Accepted(what, U8(doc), want); }

    // R4: a float parameter that reads as -0.0 is 0.0 in the canonical text; a version -0 is 0
    static void SchemaRuleNegZero()
    {
        Accepted("R4: Fixed offset -0.0 (Python's fingerprint)", Doc("{\"kind\":\"Fixed\",\"step\":1,\"bits\":8,\"offset\":-0.0}"), "0a6d77017f4e8389");
        Accepted("R4: version -0 is 0 (Python's fingerprint)", "{\"name\":\"S\",\"version\":-0,\"fields\":[{\"name\":\"f\",\"codec\":{\"kind\":\"Bool\"}}]}", "3f000f10504ba146");
        string[] negZeros = { "-0.0", "-0", "-0e5", "-0.000E+3", "-1e-400", "-2.4703282292062327e-324", "-0." + new string('0', 500) + "1e-10" };
        var forms = new[]
        {
            new[] { "Fixed offset", "{\"kind\":\"Fixed\",\"step\":0.5,\"bits\":8,\"offset\":@Z@}" },
            new[] { "Bounded min", "{\"kind\":\"Bounded\",\"min\":@Z@,\"max\":1,\"bits\":8}" },
            new[] { "Bounded max", "{\"kind\":\"Bounded\",\"min\":-1,\"max\":@Z@,\"bits\":8}" },
            new[] { "NearlyZero threshold", "{\"kind\":\"NearlyZero\",\"inner\":{\"kind\":\"Bounded\",\"min\":-1,\"max\":1,\"bits\":8},\"threshold\":@Z@}" },
            new[] { "in a Vector", "{\"kind\":\"Vector\",\"codecs\":[{\"kind\":\"Bool\"},{\"kind\":\"Fixed\",\"step\":1,\"bits\":4,\"offset\":@Z@}]}" },
        };
        foreach (var f in forms)
        {
            string want = DocFp(Doc(f[1].Replace("@Z@", "0.0")));
            Check(want.Length == 16, "R4: " + f[0] + " 0.0 is accepted: " + want);
            foreach (var z in negZeros)
                Accepted("R4: " + f[0] + " " + (z.Length > 30 ? z.Substring(0, 30) + "..." : z) + " is 0.0", Doc(f[1].Replace("@Z@", z)), want);
        }
        // built in code too: the parameter and the canonical text
        var fx = Codec.Fixed(1.0, 8, true, -0.0);
        Check(Bits(fx.Offset) == 0 && fx.CanonicalJson().IndexOf("-0x", StringComparison.Ordinal) < 0, "R4: Codec.Fixed(offset -0.0) holds 0.0: " + fx.CanonicalJson());
        var nz = Codec.NearlyZero(Codec.Bounded(-1, 1, 8), -0.0);
        Check(Bits(nz.Threshold) == 0 && nz.CanonicalJson().EndsWith("\"threshold\":\"0x0.0p+0\"}", StringComparison.Ordinal), "R4: Codec.NearlyZero(threshold -0.0) holds 0.0: " + nz.CanonicalJson());
        var b = Codec.Bounded(-0.0, 1, 8);
        Check(Bits(b.Min) == 0 && b.Equals(Codec.Bounded(0.0, 1, 8)), "R4: Codec.Bounded(min -0.0) equals Bounded(0.0, ...)");
    }

    // R6: NearlyZero refuses a threshold at or above the largest magnitude inner decodes to
    static void SchemaRuleNearlyZeroReach()
    {
        // inner, the reach (the smallest refused threshold), a threshold just under it
        string[][] cases =
        {
            new[] { "{\"kind\":\"Bounded\",\"min\":0,\"max\":1,\"bits\":8}", "1", "0.999" },
            new[] { "{\"kind\":\"Bounded\",\"min\":-3,\"max\":1,\"bits\":8}", "3", "2.999" },
            new[] { "{\"kind\":\"PowerCurve\",\"max\":50,\"pow\":2,\"bits\":10}", "50", "49.9" },
            new[] { "{\"kind\":\"Fixed\",\"step\":0.5,\"bits\":4}", "4", "3.99" },                              // -8*0.5, 7*0.5
            new[] { "{\"kind\":\"Fixed\",\"step\":0.5,\"bits\":4,\"offset\":10}", "13.5", "13.49" },           // 10 + 7*0.5
            new[] { "{\"kind\":\"Fixed\",\"step\":1,\"bits\":8,\"signed\":false,\"offset\":-300}", "300", "299.9" },
            new[] { "{\"kind\":\"Fixed\",\"step\":1,\"bits\":64,\"signed\":false}", "18446744073709551616", "18446744073709549568" },
            new[] { "{\"kind\":\"Fixed\",\"step\":1,\"bits\":64}", "9223372036854775808", "9223372036854774784" },
            new[] { "{\"kind\":\"UInt\",\"bits\":4}", "15", "14.9" },
            new[] { "{\"kind\":\"UInt\",\"bits\":64}", "18446744073709551615", "18446744073709549568" },   // 2**64 - 1 is 2**64 as a double
            new[] { "{\"kind\":\"Int\",\"bits\":8}", "128", "127.9" },
            new[] { "{\"kind\":\"Int\",\"bits\":64}", "9223372036854775808", "9223372036854774784" },
            new[] { "{\"kind\":\"Bool\"}", "1", "0.5" },
            new[] { "{\"kind\":\"IntRange\",\"lo\":-5,\"hi\":3}", "5", "4.9" },
            new[] { "{\"kind\":\"IntRange\",\"lo\":-9223372036854775808,\"hi\":-9223372036854775800}", "9223372036854775808", "9223372036854774784" },
            new[] { "{\"kind\":\"Vector\",\"codecs\":[{\"kind\":\"Bounded\",\"min\":-2,\"max\":1,\"bits\":8},{\"kind\":\"UInt\",\"bits\":2}]}", "3", "2.5" },
        };
        foreach (var c in cases)
        {
            Refused("R6: NearlyZero(" + c[0] + ", " + c[1] + ")", Doc("{\"kind\":\"NearlyZero\",\"inner\":" + c[0] + ",\"threshold\":" + c[1] + "}"));
            Refused("R6: NearlyZero(" + c[0] + ", 1e300)", Doc("{\"kind\":\"NearlyZero\",\"inner\":" + c[0] + ",\"threshold\":1e300}"));
            string fp = DocFp(Doc("{\"kind\":\"NearlyZero\",\"inner\":" + c[0] + ",\"threshold\":" + c[2] + "}"));
            Check(fp.Length == 16, "R6: NearlyZero(" + c[0] + ", " + c[2] + ") is accepted: " + fp);
        }
        // no reach, no check: Angle, Half, Grid, Enum, and a Vector holding one of them
        string[] noReach =
        {
            "{\"kind\":\"Angle\",\"bits\":8}", "{\"kind\":\"Half\"}", "{\"kind\":\"Grid\",\"cell_size\":1,\"cell_bits\":4,\"offset_bits\":4}",
            "{\"kind\":\"Enum\",\"count\":4}", "{\"kind\":\"Enum\",\"labels\":[\"a\",\"b\"]}",
            "{\"kind\":\"Vector\",\"codecs\":[{\"kind\":\"Bool\"},{\"kind\":\"Angle\",\"bits\":8}]}",
        };
        foreach (var inner in noReach)
        {
            string fp = DocFp(Doc("{\"kind\":\"NearlyZero\",\"inner\":" + inner + ",\"threshold\":1e300}"));
            Check(fp.Length == 16, "R6: NearlyZero(" + inner + ", 1e300) has no reach to check: " + fp);
        }
        Check(Throws<SchemaException>(() => Codec.NearlyZero(Codec.UInt(3), 7.0)) && Codec.NearlyZero(Codec.UInt(3), 6.5).Threshold == 6.5,
              "R6: Codec.NearlyZero(UInt(3), 7) refused, 6.5 taken");
        Check(Throws<SchemaException>(() => Codec.NearlyZero(Codec.Bool(), -0.5)), "R6: a negative threshold is refused");
    }

    // R2: field names are ASCII identifiers; R3: no U+0000 nor a lone surrogate in the schema name or a label
    static void SchemaRuleNames()
    {
        foreach (var n in new[] { "a", "_", "A9", "_0_", "position_x", "Zz" })
        {
            string fp = DocFp(Doc("{\"kind\":\"Bool\"}", n));
            Check(fp.Length == 16, "R2: field name '" + n + "' is taken: " + fp);
        }
        // the probe's repros (each accepted by some client, refused by another) and plain ASCII misses
        string[] bad =
        {
            "", "1a", "a-b", "a b", "a.b", "$a", "a\\u0000",
            "\\ud840\\udc00", "\\ud835\\udc00", "x\\ud83d\\ude00", "\\u037f", "\\u037a", "\\u2e2f", "\\u2118", "a\\u00b7", "A\\u0387",
            "a\\u00a0", "a\\u0080", "\\ud838\\udc30", "\\u00e9t\\u00e9", "a\\u200d", "\\u0663a", "a\\ufeff", "a\\ud800", "\\uff21",
        };
        foreach (var n in bad) Refused("R2: field name \"" + n + "\"", Doc("{\"kind\":\"Bool\"}", n));
        Refused("R2: a raw UTF-8 name", U8(Doc("{\"kind\":\"Bool\"}", "caf\u00e9")));
        Refused("R2: a name in the dict form", "{\"name\":\"S\",\"fields\":{\"\\u00e9\":{\"kind\":\"Bool\"}}}");
        Refused("R2: a name in the pair form", "{\"name\":\"S\",\"fields\":[[\"\\u00e9\",{\"kind\":\"Bool\"}]]}");
        Check(Throws<SchemaException>(() => new Schema("S", new[] { new KeyValuePair<string, Codec>("\u00e9", Codec.Bool()) })), "R2: the constructor refuses a non-ASCII name");
        // R3
        Refused("R3: U+0000 in the schema name", "{\"name\":\"S\\u0000\",\"fields\":[{\"name\":\"f\",\"codec\":{\"kind\":\"Bool\"}}]}");
        Refused("R3: U+0000 in an Enum label", Doc("{\"kind\":\"Enum\",\"labels\":[\"a\\u0000b\",\"a\"]}"));
        Refused("R3: U+0000 in a label in a Vector", Doc("{\"kind\":\"Vector\",\"codecs\":[{\"kind\":\"Enum\",\"labels\":[\"x\",\"\\u0000\"]}]}"));
        Refused("R3: U+0000 in a label under NearlyZero", Doc("{\"kind\":\"NearlyZero\",\"inner\":{\"kind\":\"Enum\",\"labels\":[\"x\",\"y\\u0000\"]},\"threshold\":0}"));
        Check(Throws<SchemaException>(() => new Schema("a\0", new[] { new KeyValuePair<string, Codec>("f", Codec.Bool()) })), "R3: the constructor refuses U+0000 in the name");
        // a lone surrogate (a \\u escape can write one; no UTF-8 text holds one) is not text; a pair is its character
        foreach (var t in new[] { new[] { "\\ud800", "D800", "0" }, new[] { "a\\udc00b", "DC00", "1" }, new[] { "\\ude00\\ud83d", "DE00", "0" },
                                  new[] { "\\ud83dx", "D83D", "0" }, new[] { "\\ud83d\\ude00\\ud800", "D800", "1" } })
        {
            string fp = DocFp("{\"name\":\"" + t[0] + "\",\"fields\":[{\"name\":\"f\",\"codec\":{\"kind\":\"Bool\"}}]}");
            Check(fp.StartsWith("refused: ", StringComparison.Ordinal) && fp.Contains(": schema name must be Unicode text: a lone surrogate U+" + t[1] + " at character " + t[2] + ", got"),
                  "R3: the name \"" + t[0] + "\" is refused as a lone surrogate: " + fp);
        }
        string lfp = DocFp(Doc("{\"kind\":\"Enum\",\"labels\":[\"a\",\"\\udfff\"]}"));
        Check(lfp.StartsWith("refused: ", StringComparison.Ordinal) && lfp.Contains(": field 'f': Enum labels must be Unicode text: a lone surrogate U+DFFF at character 0"),
              "R3: a lone surrogate in a label is refused: " + lfp);
        Check(Throws<SchemaException>(() => new Schema("S\ud800", new[] { new KeyValuePair<string, Codec>("f", Codec.Bool()) })), "R3: the constructor refuses a lone surrogate in the name");
        foreach (var text in new[] { "S\\u0001", "\\u00e9\\ud83d\\ude00 \\\"x\\\"", "\\uD83D\\uDE01", "\\u2028" })
        {
            string fp = DocFp("{\"name\":\"" + text + "\",\"fields\":[{\"name\":\"f\",\"codec\":{\"kind\":\"Enum\",\"labels\":[\"" + text + "\",\"b\"]}}]}");
            Check(fp.Length == 16, "R3: name and label \"" + text + "\" are taken: " + fp);
        }
    }

    static string Fields(int n, string codec)
    {
        var sb = new StringBuilder("{\"name\":\"S\",\"fields\":[");
        for (int i = 0; i < n; i++) sb.Append(i > 0 ? "," : "").Append("[\"f").Append(i).Append("\",").Append(codec).Append(']');
        return sb.Append("]}").ToString();
    }

    static string Bools(int n)
    {
        var sb = new StringBuilder("{\"kind\":\"Vector\",\"codecs\":[");
        for (int i = 0; i < n; i++) sb.Append(i > 0 ? "," : "").Append("{\"kind\":\"Bool\"}");
        return sb.Append("]}").ToString();
    }

    // R5: 0 <= version <= 2**63 - 1; R7: at most 65,535 fields and 65,535 components a Vector
    static void SchemaRuleVersionAndLimits()
    {
        Func<string, string> ver = v => "{\"name\":\"S\",\"version\":" + v + ",\"fields\":[{\"name\":\"f\",\"codec\":{\"kind\":\"Bool\"}}]}";
        foreach (var v in new[] { "0", "1", "4294967296", "9223372036854775807" })
        {
            Schema s = null;
            try { s = LoadDoc(U8(ver(v))); } catch (SchemaException) { }
            Check(s != null && s.Version.ToString() == v && s.CanonicalJson.EndsWith("\"version\":" + v + "}", StringComparison.Ordinal), "R5: version " + v + " is taken");
        }
        foreach (var v in new[] { "9223372036854775808", "18446744073709551616", "1" + new string('0', 400), "1" + new string('0', 5000), "-1", "1.0", "1e3", "\"1\"", "true", "null" })
            Refused("R5: version " + (v.Length > 30 ? v.Substring(0, 10) + "... (" + v.Length + " digits)" : v), ver(v));
        Check(Throws<SchemaException>(() => new Schema("S", new[] { new KeyValuePair<string, Codec>("f", Codec.Bool()) }, System.Numerics.BigInteger.One << 63)),
              "R5: the constructor refuses version 2**63");
        // R7
        string fp = DocFp(Doc(Bools(65535)));
        Check(fp.Length == 16, "R7: a Vector of 65,535 components is taken: " + fp);
        Refused("R7: a Vector of 65,536 components", Doc(Bools(65536)));
        Refused("R7: a Vector of 65,536 components under NearlyZero", Doc("{\"kind\":\"NearlyZero\",\"inner\":" + Bools(65536) + ",\"threshold\":0}"));
        fp = DocFp(Fields(65535, "{\"kind\":\"Bool\"}"));
        Check(fp.Length == 16, "R7: 65,535 fields are taken: " + fp);
        Refused("R7: 65,536 fields", Fields(65536, "{\"kind\":\"Bool\"}"));
    }

    static byte[] Cat(params byte[][] parts)
    {
        var o = new List<byte>();
        foreach (var p in parts) o.AddRange(p);
        return o.ToArray();
    }

    // R1: UTF-8, one leading byte order mark skipped, ill-formed bytes (and so UTF-16) refused
    static void SchemaRuleEncoding()
    {
        string doc = Doc("{\"kind\":\"Bool\"}");
        string want = DocFp(doc);
        var bom = new byte[] { 0xEF, 0xBB, 0xBF };
        Accepted("R1: a UTF-8 byte order mark is skipped", Cat(bom, U8(doc)), want);
        Refused("R1: two byte order marks", Cat(bom, bom, U8(doc)));
        Refused("R1: a byte order mark after white space", Cat(U8(" "), bom, U8(doc)));
        string text;
        try { text = Schema.FromJson("\uFEFF" + doc).Fingerprint; }
        catch (SchemaException e) { text = "refused: " + e.Message; }
        Check(text == want, "R1: FromJson(string) skips one leading U+FEFF, got " + text);
        Check(Throws<SchemaException>(() => Schema.FromJson("\uFEFF\uFEFF" + doc)), "R1: FromJson(string) refuses a second U+FEFF");
        Refused("R1: UTF-16LE with its byte order mark", Cat(new byte[] { 0xFF, 0xFE }, Encoding.Unicode.GetBytes(doc)));
        Refused("R1: UTF-16BE with its byte order mark", Cat(new byte[] { 0xFE, 0xFF }, Encoding.BigEndianUnicode.GetBytes(doc)));
        Refused("R1: UTF-16LE", Encoding.Unicode.GetBytes(doc));
        Refused("R1: UTF-32LE", Encoding.UTF32.GetBytes(doc));
        // ill-formed UTF-8 inside the schema's name (a string, where a lenient reader would take it)
        var ill = new[]
        {
            new byte[] { 0xFF }, new byte[] { 0xFE }, new byte[] { 0x80 }, new byte[] { 0xBF }, new byte[] { 0xC0, 0x80 }, new byte[] { 0xC1, 0xBF },
            new byte[] { 0xE0, 0x80, 0xAF }, new byte[] { 0xE0, 0x9F, 0xBF }, new byte[] { 0xF0, 0x80, 0x80, 0x80 }, new byte[] { 0xF0, 0x8F, 0xBF, 0xBF },
            new byte[] { 0xF4, 0x90, 0x80, 0x80 }, new byte[] { 0xF5, 0x80, 0x80, 0x80 }, new byte[] { 0xF8, 0x88, 0x80, 0x80, 0x80 },
            new byte[] { 0xED, 0xA0, 0x80 }, new byte[] { 0xED, 0xBF, 0xBF }, new byte[] { 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80 },
            new byte[] { 0xC3 }, new byte[] { 0xE2, 0x82 }, new byte[] { 0xF0, 0x9F, 0x98 }, new byte[] { 0xC3, 0x41 },
        };
        foreach (var b in ill)
        {
            Refused("R1: bytes " + ToHex(b) + " in a string", Cat(U8("{\"name\":\"S"), b, U8("\",\"fields\":[{\"name\":\"f\",\"codec\":{\"kind\":\"Bool\"}}]}")));
        }
        Refused("R1: a truncated sequence at the end", Cat(U8(doc), new byte[] { 0xE2, 0x82 }));
        // well-formed: the edges of each range, taken with the fingerprint of the same text escaped
        var good = new[] { "\u0080", "\u07FF", "\u0800", "\uD7FF", "\uE000", "\uFFFD", "\uFFFF", "\U00010000", "\U0010FFFF" };
        foreach (var g in good)
        {
            var esc = new StringBuilder();
            foreach (char ch in g) esc.Append("\\u").Append(((int)ch).ToString("x4"));
            Accepted("R1: U+" + char.ConvertToUtf32(g, 0).ToString("X4") + " raw in the name", U8("{\"name\":\"S" + g + "\",\"fields\":[{\"name\":\"f\",\"codec\":{\"kind\":\"Bool\"}}]}"),
                DocFp("{\"name\":\"S" + esc + "\",\"fields\":[{\"name\":\"f\",\"codec\":{\"kind\":\"Bool\"}}]}"));
        }
    }

    // R8: number literals of any length are read, correctly rounded; R9: an unknown kind is named
    static void SchemaRuleNumbersAndKinds()
    {
        Func<string, string> max = m => Doc("{\"kind\":\"Bounded\",\"min\":0,\"max\":" + m + ",\"bits\":8}");
        string one = DocFp(max("1"));
        Accepted("R8: 0.(400 zeros)1e401 is 1.0", max("0." + new string('0', 400) + "1e401"), one);
        Accepted("R8: 1 and 400 zeros, e-400, is 1.0", max("1" + new string('0', 400) + "e-400"), one);
        // an exponent of 8 digits offset by as many fraction digits (a reader that stops reading
        // the exponent's digits at a million reads 1e-5), and a million digits read in linear time
        Accepted("R8: 0.(10,000,004 zeros)1e10000005 is 1.0", max("0." + new string('0', 10000004) + "1e10000005"), one);
        Accepted("R8: 1(1,000,000 zeros)e-1000000 is 1.0", max("1" + new string('0', 1000000) + "e-1000000"), one);
        Accepted("R8: 1.(1,000,000 digits 3)e0 is 1.3333333333333333", max("1." + new string('3', 1000000)), DocFp(max("1.3333333333333333")));
        Accepted("R8: an exponent of 25 digits on 0 is 0", Doc("{\"kind\":\"Bounded\",\"min\":0e1000000000000000000000000,\"max\":1,\"bits\":8}"), DocFp(Doc("{\"kind\":\"Bounded\",\"min\":0,\"max\":1,\"bits\":8}")));
        Refused("R8: 1e1000000000000000000000000 is not finite", max("1e1000000000000000000000000"));
        Refused("R8: 1e400 is not finite", max("1e400"));
        // the tie between 1 and 1 + 2**-52, just above it, just below it (a long literal each)
        string tie = "1.00000000000000011102230246251565404236316680908203125";
        Accepted("R8: a tie rounds to even", max(tie), one);
        Accepted("R8: a tie's exact decimal with trailing zeros rounds to even", max(tie + new string('0', 600)), one);
        Accepted("R8: just above a tie rounds up", max(tie + new string('0', 600) + "1"), DocFp(max("1.0000000000000002")));
        Accepted("R8: just below a tie rounds down", max("1.00000000000000011102230246251565404236316680908203124" + new string('9', 600)), one);
        // R9
        foreach (var k in new[] { "constructor", "toString", "__proto__", "hasOwnProperty", "valueOf", "bounded", "" })
        {
            string r = DocFp(Doc("{\"kind\":\"" + k + "\"}"));
            Check(r.StartsWith("refused: ", StringComparison.Ordinal) && r.Contains("unknown codec kind '" + k + "'"), "R9: kind '" + k + "' is an unknown kind: " + r);
        }
    }
}
