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
}
