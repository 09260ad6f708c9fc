// The kit's schema documents (conformance/schema_cases.json, docs/schema-format.md "One reading"):
// each read as Schema.Load reads a file and as Schema.FromJson(byte[]) reads bytes; ok: the
// fingerprint given, not ok: a SchemaException.
using System;
using System.IO;
using QuantCodec;

static partial class Tests
{
    static void SchemaKit()
    {
        var entry = Load("conformance/manifest.json").Get("schema_cases");
        Check(entry != null && entry.Type == JsonType.String, "manifest.json lists schema_cases");
        if (entry == null) return;
        var kit = Load(Path.Combine("conformance", entry.Text));
        Check(kit.Get("format").Text == "1", "schema_cases format 1");
        int n = 0;
        foreach (var c in kit.Get("cases").Items)
        {
            string name = c.Get("name").Text;
            var bytes = FromHex(c.Get("hex").Text);
            bool ok = c.Get("ok").BoolValue;
            string want = ok ? c.Get("fingerprint").Text : null;
            string file = DocFp(bytes), mem;
            try { mem = Schema.FromJson(bytes).Fingerprint; }
            catch (SchemaException e) { mem = "refused: " + e.Message; }
            if (ok)
            {
                Check(file == want, "schema case " + name + ": Schema.Load gives " + want + ", got " + file);
                Check(mem == want, "schema case " + name + ": Schema.FromJson(bytes) gives " + want + ", got " + mem);
            }
            else
            {
                Check(file.StartsWith("refused: ", StringComparison.Ordinal), "schema case " + name + ": Schema.Load refuses it, got " + file);
                Check(mem.StartsWith("refused: ", StringComparison.Ordinal), "schema case " + name + ": Schema.FromJson(bytes) refuses it, got " + mem);
            }
            n++;
        }
        Check(n > 0, "schema_cases has cases");
    }
}
