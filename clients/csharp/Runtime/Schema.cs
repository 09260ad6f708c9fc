// A schema: name, version, fields; its slot table (wire-format section 2), its fingerprint
// (docs/schema-format.md), records (wire-format section 3).
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Numerics;
using System.Security.Cryptography;
using System.Text;

namespace QuantCodec
{
    /// <summary>How a slot's change is sent in a delta (wire-format section 2).</summary>
    public enum SlotClass { Flag, Ord, Smag, Quat, Uvec, Abs }

    public sealed class Slot
    {
        public SlotClass Class;
        public int Bits;
        public int Field;
        public int Span;        // Flag: how many slots it governs
        public int CBits;       // Quat / UnitVector: bits per component
        public bool Signed;     // carried sign-extended (Int, Fixed signed)
        public Codec Codec;     // the scalar / Quat / UnitVector codec (the NearlyZero for a flag)
        public int Component;   // index of the float within the field's value layout
        public int Governor = -1;  // the NearlyZero flag slot governing this one, or -1
        public bool Valid(ulong c) { return Class == SlotClass.Flag ? c <= 1 : Codec.Valid(c); }
    }

    public sealed class Field
    {
        public string Name;
        public Codec Codec;
        public int FirstSlot, SlotCount;
        public int FirstValue, ValueCount;   // in the flat value layout (see Schema.Quantize)
    }

    public sealed class Schema
    {
        public readonly string Name;
        public readonly BigInteger Version;
        public readonly Field[] Fields;
        public readonly Slot[] Slots;
        public readonly string Fingerprint;
        public readonly string CanonicalJson;
        public readonly int MaxBits;
        public readonly int ValueCount;

        public Schema(string name, IList<KeyValuePair<string, Codec>> fields, long version = 1)
            : this(name, fields, new BigInteger(version)) { }

        /// <summary>The largest schema version (2**63 - 1), and the most fields a schema has and
        /// components a Vector has (docs/schema-format.md, "One reading").</summary>
        public static readonly BigInteger MaxVersion = long.MaxValue;
        public const int MaxFields = 65535;

        public Schema(string name, IList<KeyValuePair<string, Codec>> fields, BigInteger version)
        {
            if (string.IsNullOrEmpty(name)) throw new SchemaException("schema name must be a non-empty string");
            if (version.Sign < 0 || version > MaxVersion) throw new SchemaException("schema version must be an integer from 0 to 2**63 - 1, got " + version);
            if (fields == null || fields.Count == 0) throw new SchemaException("a schema needs at least one field");
            CheckText("schema name", name);
            if (fields.Count > MaxFields) throw new SchemaException("a schema has at most " + MaxFields + " fields, got " + fields.Count);
            Name = name;
            Version = version;
            Fields = new Field[fields.Count];
            var slots = new List<Slot>();
            var seen = new HashSet<string>(StringComparer.Ordinal);
            int nv = 0, bits = 0;
            for (int f = 0; f < fields.Count; f++)
            {
                string fn = fields[f].Key;
                CheckName(fn);
                if (!seen.Add(fn)) throw new SchemaException("duplicate field name '" + fn + "'");
                Codec c = fields[f].Value;
                if (c == null) throw new SchemaException("field '" + fn + "': no codec");
                CheckStrings(fn, c);
                var fld = new Field { Name = fn, Codec = c, FirstSlot = slots.Count, FirstValue = nv };
                AddSlots(slots, c, f, ref nv, false);
                fld.SlotCount = slots.Count - fld.FirstSlot;
                fld.ValueCount = nv - fld.FirstValue;
                Fields[f] = fld;
                bits += c.Bits;
            }
            Slots = slots.ToArray();
            for (int s = 0; s < Slots.Length; s++)
                if (Slots[s].Class == SlotClass.Flag)
                    for (int t = s + 1; t <= s + Slots[s].Span; t++) Slots[t].Governor = s;
            ValueCount = nv;
            MaxBits = bits;
            var sb = new StringBuilder();
            sb.Append("{\"fields\":[");
            for (int f = 0; f < Fields.Length; f++)
            {
                if (f > 0) sb.Append(',');
                sb.Append("{\"codec\":");
                Fields[f].Codec.WriteCanonical(sb);
                sb.Append(",\"name\":");
                Json.WriteString(sb, Fields[f].Name);
                sb.Append('}');
            }
            sb.Append("],\"name\":");
            Json.WriteString(sb, Name);
            sb.Append(",\"version\":").Append(Version.ToString(CultureInfo.InvariantCulture)).Append('}');
            CanonicalJson = sb.ToString();
            Fingerprint = Sha256Hex(Encoding.ASCII.GetBytes(CanonicalJson)).Substring(0, 16);
        }

        static void AddSlots(List<Slot> slots, Codec c, int field, ref int nv, bool governed)
        {
            switch (c.Kind)
            {
                case CodecKind.Vector:
                    foreach (var k in c.Components) AddSlots(slots, k, field, ref nv, governed);
                    return;
                case CodecKind.NearlyZero:
                    {
                        var flag = new Slot { Class = SlotClass.Flag, Bits = 1, Field = field, Codec = c, Component = nv };
                        slots.Add(flag);
                        int first = slots.Count;
                        AddSlots(slots, c.Inner, field, ref nv, true);
                        flag.Span = slots.Count - first;
                        return;
                    }
            }
            var s = new Slot { Bits = c.Bits, Field = field, Codec = c, Signed = c.IsSigned, Component = nv };
            switch (c.Kind)
            {
                case CodecKind.Bounded: case CodecKind.Fixed: case CodecKind.Angle: case CodecKind.UInt:
                case CodecKind.Int: case CodecKind.Grid: case CodecKind.IntRange:
                    s.Class = SlotClass.Ord; nv += 1; break;
                case CodecKind.PowerCurve: case CodecKind.Half:
                    s.Class = SlotClass.Smag; nv += 1; break;
                case CodecKind.Quat: s.Class = SlotClass.Quat; s.CBits = c.ComponentBits; nv += 4; break;
                case CodecKind.UnitVector: s.Class = SlotClass.Uvec; s.CBits = c.ComponentBits; nv += 3; break;
                default: s.Class = SlotClass.Abs; nv += 1; break;
            }
            slots.Add(s);
        }

        // Field names are ASCII identifiers, [A-Za-z_][A-Za-z0-9_]*: every client reads the same
        // names (a "Python identifier" was read differently by each language and Unicode version).
        static void CheckName(string n)
        {
            bool ok = !string.IsNullOrEmpty(n);
            for (int i = 0; ok && i < n.Length; i++)
            {
                char ch = n[i];
                bool letter = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
                ok = letter || (i > 0 && ch >= '0' && ch <= '9');
            }
            if (!ok) throw new SchemaException("field names must be ASCII identifiers (letters A-Z and a-z, digits and _, not starting with a digit), got " + Quote(n));
        }

        /// <summary>The schema's name and an Enum label are Unicode text without U+0000: no NUL, and no
        /// lone surrogate (a JSON \\u escape can write one; no UTF-8 text holds one), as Python's
        /// _check_text says; the position in characters (code points), as Python counts.</summary>
        static void CheckText(string what, string text)
        {
            if (text.IndexOf('\0') >= 0) throw new SchemaException(what + " must not contain U+0000, got " + Quote(text));
            int at = 0;
            for (int i = 0; i < text.Length; i++, at++)
            {
                char ch = text[i];
                if (char.IsHighSurrogate(ch) && i + 1 < text.Length && char.IsLowSurrogate(text[i + 1])) { i++; continue; }
                if (char.IsSurrogate(ch))
                    throw new SchemaException(what + " must be Unicode text: a lone surrogate U+" + ((int)ch).ToString("X4") +
                                              " at character " + at + ", got " + Quote(text));
            }
        }

        /// <summary>The document rules beyond each codec's own (Python's _check_strings): the name and
        /// Enum labels checked by CheckText, at most MaxFields components in a Vector.</summary>
        static void CheckStrings(string field, Codec c)
        {
            switch (c.Kind)
            {
                case CodecKind.Enum:
                    if (c.Labels != null)
                        foreach (var l in c.Labels)
                            CheckText("field '" + field + "': Enum labels", l);
                    break;
                case CodecKind.Vector:
                    if (c.Components.Length > MaxFields) throw new SchemaException("field '" + field + "': a Vector has at most " + MaxFields + " components, got " + c.Components.Length);
                    foreach (var k in c.Components) CheckStrings(field, k);
                    break;
                case CodecKind.NearlyZero: CheckStrings(field, c.Inner); break;
            }
        }

        /// <summary>A string for an error message, control and non-ASCII characters as \u escapes.</summary>
        static string Quote(string v)
        {
            var sb = new StringBuilder();
            Json.WriteString(sb, v);
            return sb.ToString();
        }

        internal static string Sha256Hex(byte[] data)
        {
            byte[] h;
            using (var sha = SHA256.Create()) h = sha.ComputeHash(data);
            var sb = new StringBuilder(64);
            foreach (byte b in h) sb.Append(b.ToString("x2", CultureInfo.InvariantCulture));
            return sb.ToString();
        }

        internal static byte[] Sha256(byte[] data)
        {
            using (var sha = SHA256.Create()) return sha.ComputeHash(data);
        }

        public int FieldIndex(string name)
        {
            for (int i = 0; i < Fields.Length; i++) if (Fields[i].Name == name) return i;
            return -1;
        }

        /// <summary>Raise SchemaException unless the peer's fingerprint equals this schema's (case and
        /// surrounding whitespace do not matter).</summary>
        public void CheckFingerprint(string fp)
        {
            if (fp == null || fp.Trim().ToLowerInvariant() != Fingerprint)
                throw new SchemaException("schema fingerprint mismatch: this end has '" + Name + "' version " + Version +
                                          " with fingerprint " + Fingerprint + ", the peer sent '" + fp + "'");
        }

        // ------------------------------------------------------------------------------ loading

        public static Schema Load(string path)
        {
            Arg.NotNull(path, "path", "Schema.Load");
            byte[] data;
            try { data = File.ReadAllBytes(path); }
            catch (Exception e) { throw new SchemaException(path + ": cannot read: " + e.Message); }
            try { return FromJson(Json.ParseUtf8(data)); }
            catch (JsonException e) { throw new SchemaException(path + ": not valid JSON: " + e.Message); }
            catch (SchemaException e) { throw new SchemaException(path + ": " + e.Message); }
        }

        /// <summary>A schema from the bytes of its file, as Load reads them: UTF-8 (one leading byte
        /// order mark skipped; invalid bytes, encoded surrogates and so UTF-16 refused).
        /// SchemaException naming what is wrong, ArgumentNullException for null.</summary>
        public static Schema FromJson(byte[] utf8)
        {
            Arg.NotNull(utf8, "utf8", "Schema.FromJson");
            try { return FromJson(Json.ParseUtf8(utf8)); }
            catch (JsonException e) { throw new SchemaException("not a valid schema JSON document: " + e.Message); }
        }

        /// <summary>A schema from its JSON text (one leading U+FEFF skipped); SchemaException naming
        /// what is wrong, ArgumentNullException for null.</summary>
        public static Schema FromJson(string text)
        {
            Arg.NotNull(text, "text", "Schema.FromJson");
            if (text.Length > 0 && text[0] == '\uFEFF') text = text.Substring(1);
            try { return FromJson(Json.Parse(text)); }
            catch (JsonException e) { throw new SchemaException("not a valid schema JSON document: " + e.Message); }
        }

        public static Schema FromJson(JsonValue spec)
        {
            Arg.NotNull(spec, "spec", "Schema.FromJson");
            if (spec.Type != JsonType.Object) throw new SchemaException("schema spec must be an object, got " + spec.TypeName);
            foreach (var m in spec.Members)
                if (m.Key != "name" && m.Key != "version" && m.Key != "fields")
                    throw new SchemaException("schema spec has unknown key '" + m.Key + "' (expected name, version, fields)");
            JsonValue name = spec.Get("name"), fields = spec.Get("fields"), version = spec.Get("version");
            if (name == null) throw new SchemaException("schema spec is missing 'name'");
            if (fields == null) throw new SchemaException("schema spec is missing 'fields'");
            if (name.Type != JsonType.String || name.Text.Length == 0) throw new SchemaException("schema name must be a non-empty string, got " + name.TypeName);
            BigInteger ver = BigInteger.One;
            if (version != null)
            {
                if (!version.IsInteger || version.AsBigInteger().Sign < 0 || version.AsBigInteger() > MaxVersion)
                    throw new SchemaException("schema version must be an integer from 0 to 2**63 - 1, got " + version.TypeName + (version.Type == JsonType.Number ? " " + Trunc(version.Text) : ""));
                ver = version.AsBigInteger();
            }
            var pairs = new List<KeyValuePair<string, JsonValue>>();
            if (fields.Type == JsonType.Object) pairs.AddRange(fields.Members);
            else if (fields.Type == JsonType.Array)
            {
                for (int i = 0; i < fields.Items.Count; i++)
                {
                    var it = fields.Items[i];
                    if (it.Type == JsonType.Object)
                    {
                        bool ok = it.Members.Count == 2 && it.Get("name") != null && it.Get("codec") != null;
                        if (!ok)
                        {
                            var keys = new List<string>();
                            foreach (var m in it.Members) keys.Add(m.Key);
                            keys.Sort(StringComparer.Ordinal);
                            throw new SchemaException("field " + i + ": expected keys 'name' and 'codec', got [" + string.Join(", ", keys) + "]");
                        }
                        var nm = it.Get("name");
                        if (nm.Type != JsonType.String) throw new SchemaException("field " + i + ": the name must be a string, got " + nm.TypeName);
                        pairs.Add(new KeyValuePair<string, JsonValue>(nm.Text, it.Get("codec")));
                    }
                    else if (it.Type == JsonType.Array && it.Items.Count == 2)
                    {
                        if (it.Items[0].Type != JsonType.String) throw new SchemaException("field " + i + ": the name must be a string, got " + it.Items[0].TypeName);
                        pairs.Add(new KeyValuePair<string, JsonValue>(it.Items[0].Text, it.Items[1]));
                    }
                    else throw new SchemaException("field " + i + ": expected a (name, codec) pair, got " + it.TypeName);
                }
            }
            else throw new SchemaException("fields must be an object or an array of fields, got " + fields.TypeName);
            if (pairs.Count == 0) throw new SchemaException("a schema needs at least one field");
            var built = new List<KeyValuePair<string, Codec>>();
            foreach (var p in pairs)
            {
                CheckName(p.Key);
                Codec c;
                try { c = CodecFromSpec(p.Value); }
                catch (SchemaException e) { throw new SchemaException("field '" + p.Key + "': " + e.Message); }
                built.Add(new KeyValuePair<string, Codec>(p.Key, c));
            }
            return new Schema(name.Text, built, ver);
        }

        static string Trunc(string t) { return t.Length <= 40 ? t : t.Substring(0, 20) + "..." + t.Substring(t.Length - 10) + " (" + t.Length + " characters)"; }

        static readonly string[] Kinds = { "Bounded", "Fixed", "Angle", "PowerCurve", "Half", "UInt", "Int", "Bool", "Enum", "Quat", "UnitVector", "Vector", "Grid", "NearlyZero", "IntRange" };

        static string KindOf(JsonValue v)
        {
            if (v == null || v.Type != JsonType.Object) return null;
            var k = v.Get("kind");
            return k != null && k.Type == JsonType.String ? k.Text : null;
        }

        static bool NotScalar(string k) { return k == "Vector" || k == "NearlyZero" || k == "Quat" || k == "UnitVector"; }

        /// <summary>A codec from its spec (the JSON of codec.spec()); SchemaException naming what is wrong.</summary>
        public static Codec CodecFromSpec(JsonValue spec)
        {
            Arg.NotNull(spec, "spec", "Schema.CodecFromSpec");
            if (spec.Type != JsonType.Object) throw new SchemaException("codec spec must be an object, got " + spec.TypeName);
            var kv = spec.Get("kind");
            string kind = kv != null && kv.Type == JsonType.String ? kv.Text : null;
            if (kind == null || Array.IndexOf(Kinds, kind) < 0)
                throw new SchemaException("unknown codec kind " + (kv == null ? "None" : kv.Type == JsonType.String ? "'" + kv.Text + "'" : kv.TypeName) + "; expected one of " + string.Join(", ", Kinds));
            var p = new Params(kind, spec);
            Codec c;
            switch (kind)
            {
                case "Bounded": c = Codec.Bounded(p.Float("min"), p.Float("max"), p.Int("bits", 1, 32), p.Str("mode", "endpoints")); break;
                case "Fixed":
                    {
                        double st = p.Float("step");
                        int b = p.Int("bits", 1, 64);
                        bool sg = p.Bool("signed", true);
                        double off = p.Float("offset", 0.0);
                        c = Codec.Fixed(st, b, sg, off);
                        break;
                    }
                case "Angle":
                    {
                        int b = p.Int("bits", 1, 32);
                        bool sg = p.Bool("signed", false);
                        c = Codec.Angle(b, sg, p.Str("unit", "rad"));
                        break;
                    }
                case "PowerCurve": c = Codec.PowerCurve(p.Float("max"), p.Float("pow"), p.Int("bits", 2, 32)); break;
                case "Half": c = Codec.Half(); break;
                case "UInt": c = Codec.UInt(p.Int("bits", 1, 64)); break;
                case "Int": c = Codec.Int(p.Int("bits", 1, 64)); break;
                case "Bool": c = Codec.Bool(); break;
                case "IntRange": { long l = p.Long("lo"), h = p.Long("hi"); c = Codec.IntRange(l, h); break; }
                case "Quat": c = Codec.Quat(p.Int("bits", 2, 20, 9), p.Str("mode", "endpoints")); break;
                case "UnitVector": c = Codec.UnitVector(p.Int("bits", 2, 32)); break;
                case "Grid": c = Codec.Grid(p.Float("cell_size"), p.Int("cell_bits", 1, 63), p.Int("offset_bits", 1, 63)); break;
                case "Enum":
                    {
                        JsonValue v = p.Take("labels") ?? p.Take("count");
                        if (v == null) throw new SchemaException("Enum spec is missing 'count'");
                        if (v.Type == JsonType.Array)
                        {
                            var labels = new string[v.Items.Count];
                            for (int i = 0; i < labels.Length; i++)
                            {
                                if (v.Items[i].Type != JsonType.String) throw new SchemaException("Enum: labels must be strings, got " + v.Items[i].TypeName);
                                labels[i] = v.Items[i].Text;
                            }
                            p.Done();
                            c = Codec.Enum(labels);
                        }
                        else if (v.IsInteger)
                        {
                            BigInteger n = v.AsBigInteger();
                            if (n < 1 || n > (BigInteger.One << 32)) throw new SchemaException("Enum: count must be in 1..4294967296, got " + n);
                            p.Done();
                            c = Codec.Enum((ulong)n);
                        }
                        else throw new SchemaException("Enum: expected a list of labels or a count, got " + v.TypeName);
                        break;
                    }
                case "Vector":
                    {
                        JsonValue v = p.Take("codecs");
                        if (v == null) throw new SchemaException("Vector spec is missing 'codecs'");
                        p.Done();
                        if (v.Type != JsonType.Array) throw new SchemaException("Vector: codecs must be a list of codec specs, got " + v.TypeName);
                        for (int i = 0; i < v.Items.Count; i++)
                        {
                            string k = KindOf(v.Items[i]);
                            if (NotScalar(k)) throw new SchemaException("Vector: component " + i + " must be a scalar codec, got a " + k + " spec");
                        }
                        var comps = new Codec[v.Items.Count];
                        for (int i = 0; i < comps.Length; i++) comps[i] = CodecFromSpec(v.Items[i]);
                        c = Codec.Vector(comps);
                        break;
                    }
                case "NearlyZero":
                    {
                        JsonValue inner = p.Peek("inner");
                        string k = KindOf(inner);
                        if (NotScalar(k) && k != "Vector") throw new SchemaException("NearlyZero: inner must be a scalar codec or a Vector, got a " + k + " spec");
                        inner = p.Take("inner");
                        if (inner == null) throw new SchemaException("NearlyZero spec is missing 'inner'");
                        Codec ic = CodecFromSpec(inner);
                        double t = p.Float("threshold");
                        c = Codec.NearlyZero(ic, t);
                        break;
                    }
                default: throw new SchemaException("unknown codec kind '" + kind + "'");
            }
            p.Done();
            return c;
        }

        sealed class Params
        {
            readonly string kind;
            readonly List<KeyValuePair<string, JsonValue>> left;
            public Params(string kind, JsonValue spec)
            {
                this.kind = kind;
                left = new List<KeyValuePair<string, JsonValue>>();
                foreach (var m in spec.Members) if (m.Key != "kind") left.Add(m);
            }
            public JsonValue Peek(string key)
            {
                foreach (var m in left) if (m.Key == key) return m.Value;
                return null;
            }
            public JsonValue Take(string key)
            {
                for (int i = 0; i < left.Count; i++)
                    if (left[i].Key == key) { var v = left[i].Value; left.RemoveAt(i); return v; }
                return null;
            }
            JsonValue Need(string key)
            {
                var v = Take(key);
                if (v == null) throw new SchemaException(kind + " spec is missing '" + key + "'");
                return v;
            }
            public double Float(string key) { return AsFloat(key, Need(key)); }
            public double Float(string key, double dflt) { var v = Take(key); return v == null ? dflt : AsFloat(key, v); }
            double AsFloat(string key, JsonValue v)
            {
                if (v.Type != JsonType.Number) throw new SchemaException(kind + ": " + key + " must be a number, got " + v.TypeName);
                return v.AsDouble();     // non-finite: the constructor says so
            }
            public int Int(string key, int lo, int hi) { return AsInt(key, Need(key), lo, hi); }
            public long Long(string key)
            {
                var v = Need(key);
                if (!v.IsInteger) throw new SchemaException(kind + ": " + key + " must be an integer, got " + v.TypeName + (v.Type == JsonType.Number ? " " + v.Text : ""));
                BigInteger b = v.AsBigInteger();
                if (b < long.MinValue || b > long.MaxValue) throw new SchemaException(kind + ": " + key + " must be within int64, got " + b);
                return (long)b;
            }
            public int Int(string key, int lo, int hi, int dflt) { var v = Take(key); return v == null ? dflt : AsInt(key, v, lo, hi); }
            int AsInt(string key, JsonValue v, int lo, int hi)
            {
                if (!v.IsInteger) throw new SchemaException(kind + ": " + key + " must be an integer, got " + v.TypeName + (v.Type == JsonType.Number ? " " + v.Text : ""));
                BigInteger b = v.AsBigInteger();
                if (b < lo || b > hi) throw new SchemaException(kind + ": " + key + " must be in " + lo + ".." + hi + ", got " + b);
                return (int)b;
            }
            public bool Bool(string key, bool dflt)
            {
                var v = Take(key);
                if (v == null) return dflt;
                if (v.Type != JsonType.Bool) throw new SchemaException(kind + ": " + key + " must be True or False, got " + v.TypeName);
                return v.BoolValue;
            }
            public string Str(string key, string dflt)
            {
                var v = Take(key);
                if (v == null) return dflt;
                if (v.Type != JsonType.String) throw new SchemaException(kind + ": " + key + " must be a string, got " + v.TypeName);
                return v.Text;
            }
            public void Done()
            {
                if (left.Count == 0) return;
                var keys = new List<string>();
                foreach (var m in left) keys.Add("'" + m.Key + "'");
                keys.Sort(StringComparer.Ordinal);
                throw new SchemaException(kind + " spec has unknown keys [" + string.Join(", ", keys) + "]");
            }
        }

        // ------------------------------------------------------------------------------ records

        /// <summary>Whether every slot code is valid (flags 0/1; governed slots 0 when their flag is 0).</summary>
        public bool Valid(ulong[] codes)
        {
            if (codes == null || codes.Length != Slots.Length) return false;
            for (int s = 0; s < Slots.Length; s++)
            {
                var sl = Slots[s];
                if (!sl.Valid(codes[s])) return false;
                if (sl.Class == SlotClass.Flag && codes[s] == 0)
                {
                    for (int t = s + 1; t <= s + sl.Span; t++) if (codes[t] != 0) return false;
                    s += sl.Span;
                }
            }
            return true;
        }

        /// <summary>Write one record's slot codes (no padding) into w; RangeException for an invalid code.</summary>
        public void WriteCodes(BitWriter w, ulong[] codes, int offset = 0)
        {
            Arg.NotNull(w, "w", "Schema.WriteCodes");
            Arg.Room(codes, offset, Slots.Length, "codes", "offset", "Schema.WriteCodes");
            for (int s = 0; s < Slots.Length; s++)
            {
                var sl = Slots[s];
                ulong c = codes[offset + s];
                if (!sl.Valid(c)) throw new RangeException("field '" + Fields[sl.Field].Name + "': code " + (sl.Signed ? ((long)c).ToString() : c.ToString()) + " is not valid for " + sl.Codec.Describe());
                w.Write(sl.Class == SlotClass.Flag ? c : sl.Codec.ToWire(c), sl.Bits);
                if (sl.Class == SlotClass.Flag && c == 0) s += sl.Span;
            }
        }

        /// <summary>One record, padded to a byte (schema.encode_codes).</summary>
        public byte[] EncodeCodes(ulong[] codes)
        {
            Arg.NotNull(codes, "codes", "Schema.EncodeCodes");
            if (codes.Length != Slots.Length) throw new RangeException("expected " + Slots.Length + " slot codes");
            var w = new BitWriter();
            WriteCodes(w, codes);
            return w.ToArray();
        }

        /// <summary>Read one record's slot codes (no padding) from r into codes[offset..]; DecodeException
        /// naming the field and the bit for a short read or an invalid code.</summary>
        public void ReadCodes(BitReader r, ulong[] codes, int offset = 0)
        {
            Arg.NotNull(r, "r", "Schema.ReadCodes");
            Arg.Room(codes, offset, Slots.Length, "codes", "offset", "Schema.ReadCodes");
            int S = Slots.Length;
            for (int s = 0; s < S; s++)
            {
                var sl = Slots[s];
                if (r.Remaining < sl.Bits)
                    throw new DecodeException("malformed", "field '" + Fields[sl.Field].Name + "': message too short: the code needs " + sl.Bits + " bits at bit " + r.Pos + ", the message has " + r.NBits + " bits");
                ulong v = r.Read(sl.Bits);
                if (sl.Class == SlotClass.Flag)
                {
                    codes[offset + s] = v;
                    if (v == 0)
                    {
                        for (int t = s + 1; t <= s + sl.Span; t++) codes[offset + t] = 0;
                        s += sl.Span;
                    }
                    continue;
                }
                if (sl.Signed) v = sl.Codec.FromWire(v);
                if (!sl.Codec.Valid(v))
                    throw new DecodeException("malformed", "field '" + Fields[sl.Field].Name + "': code " + (sl.Signed ? ((long)v).ToString() : v.ToString()) + " is not valid for " + sl.Codec.Describe() + " at bit " + (r.Pos - sl.Bits));
                codes[offset + s] = v;
            }
        }

        /// <summary>schema.decode_codes: exactly one canonical record (padding zero, no extra byte);
        /// DecodeException for a short, long or invalid record, ArgumentNullException for null.</summary>
        public ulong[] DecodeCodes(byte[] data)
        {
            Arg.NotNull(data, "data", "Schema.DecodeCodes");
            return DecodeCodes(data, 0, data.Length, new ulong[Slots.Length]);
        }

        /// <summary>DecodeCodes of data[offset .. offset + length) into into[0 .. Slots.Length), returned.
        /// A slice past data is ArgumentOutOfRangeException, an into shorter than Slots.Length
        /// ArgumentException (the caller's errors, not the record's).</summary>
        public ulong[] DecodeCodes(byte[] data, int offset, int length, ulong[] into)
        {
            Arg.Slice(data, offset, length, "data", "offset", "length", "Schema.DecodeCodes");
            Arg.Room(into, 0, Slots.Length, "into", "offset", "Schema.DecodeCodes");
            var r = new BitReader(data, offset, length);
            ReadCodes(r, into);
            long left = r.Remaining;
            if (left >= 8) throw new DecodeException("malformed", "message too long: " + length + " bytes, but the record ends at bit " + r.Pos);
            if (r.Read((int)left) != 0) throw new DecodeException("malformed", "padding bits set after the record");
            return into;
        }

        // ------------------------------------------------------------------------------ values

        /// <summary>The slot codes of one record given as a flat array of doubles in field order (a
        /// scalar 1, Vector k, Quat 4 (x, y, z, w), UnitVector 3, NearlyZero its inner's count; enums as
        /// indices, bools as 0/1). Floats clamp; exact values must fit (RangeException).</summary>
        public ulong[] Quantize(double[] values)
        {
            Arg.NotNull(values, "values", "Schema.Quantize");
            var codes = new ulong[Slots.Length];
            Quantize(values, 0, codes, 0);
            return codes;
        }

        public void Quantize(double[] values, int voff, ulong[] codes, int coff)
        {
            Arg.NotNull(values, "values", "Schema.Quantize");
            if (voff < 0 || voff > values.Length)
                throw new ArgumentOutOfRangeException("voff", "Schema.Quantize: voff " + voff + " is outside values (" + values.Length + " elements)");
            if (values.Length - voff < ValueCount) throw new RangeException("expected " + ValueCount + " values");
            Arg.Room(codes, coff, Slots.Length, "codes", "coff", "Schema.Quantize");
            for (int s = 0; s < Slots.Length; s++)
            {
                var sl = Slots[s];
                int vi = voff + sl.Component;
                switch (sl.Class)
                {
                    case SlotClass.Flag:
                        {
                            var nz = sl.Codec;
                            int n = nz.Inner.Kind == CodecKind.Vector ? nz.Inner.Components.Length : 1;
                            bool moving = nz.IsMoving(values, vi, n);
                            codes[coff + s] = moving ? 1UL : 0UL;
                            if (!moving) { for (int t = s + 1; t <= s + sl.Span; t++) codes[coff + t] = 0; s += sl.Span; }
                            break;
                        }
                    case SlotClass.Quat:
                        codes[coff + s] = sl.Codec.QuantizeQuat(values[vi], values[vi + 1], values[vi + 2], values[vi + 3]);
                        break;
                    case SlotClass.Uvec:
                        codes[coff + s] = sl.Codec.QuantizeUnitVector(values[vi], values[vi + 1], values[vi + 2]);
                        break;
                    default:
                        codes[coff + s] = sl.Codec.Quantize(values[vi]);
                        break;
                }
            }
        }

        /// <summary>The flat values of one record's slot codes (the layout of Quantize); governed values
        /// of a resting NearlyZero are 0.0. Codes are not checked: decoders check them.</summary>
        public void Dequantize(ulong[] codes, int coff, double[] values, int voff)
        {
            Arg.Room(codes, coff, Slots.Length, "codes", "coff", "Schema.Dequantize");
            Arg.Room(values, voff, ValueCount, "values", "voff", "Schema.Dequantize");
            for (int s = 0; s < Slots.Length; s++)
            {
                var sl = Slots[s];
                int vi = voff + sl.Component;
                switch (sl.Class)
                {
                    case SlotClass.Flag:
                        if (codes[coff + s] == 0)
                        {
                            var nz = sl.Codec;
                            int n = nz.Inner.Kind == CodecKind.Vector ? nz.Inner.Components.Length : 1;
                            for (int i = 0; i < n; i++) values[vi + i] = 0.0;
                            s += sl.Span;
                        }
                        break;
                    case SlotClass.Quat: sl.Codec.DequantizeQuat(codes[coff + s], values, vi); break;
                    case SlotClass.Uvec: sl.Codec.DequantizeUnitVector(codes[coff + s], values, vi); break;
                    default: values[vi] = sl.Codec.Dequantize(codes[coff + s]); break;
                }
            }
        }

        public double[] Dequantize(ulong[] codes)
        {
            Arg.NotNull(codes, "codes", "Schema.Dequantize");
            var v = new double[ValueCount];
            Dequantize(codes, 0, v, 0);
            return v;
        }

        /// <summary>Check that two schemas decode their shared fields onto the same grid (Python's
        /// check_lockstep): SchemaException listing every shared field whose codecs differ.</summary>
        public static void CheckLockstep(Schema a, Schema b)
        {
            Arg.NotNull(a, "a", "Schema.CheckLockstep");
            Arg.NotNull(b, "b", "Schema.CheckLockstep");
            var diffs = new List<string>();
            foreach (var f in a.Fields)
            {
                int j = b.FieldIndex(f.Name);
                if (j < 0) continue;
                if (!f.Codec.Equals(b.Fields[j].Codec)) diffs.Add(f.Name + ": " + f.Codec.Describe() + " vs " + b.Fields[j].Codec.Describe());
            }
            if (diffs.Count > 0)
                throw new SchemaException("schemas '" + a.Name + "' (version " + a.Version + ") and '" + b.Name + "' (version " + b.Version + ") are not in lockstep: " + string.Join("; ", diffs));
        }
    }
}
