// A small strict JSON reader (RFC 8259): objects keep their key order, numbers keep their text
// (integers are read exactly, floats by FloatBits.ParseDecimal, as Python reads them), duplicate
// keys and nesting deeper than 64 levels are refused. No dependency beyond the base library.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Numerics;
using System.Text;

namespace QuantCodec
{
    public enum JsonType { Null, Bool, Number, String, Array, Object }

    public sealed class JsonValue
    {
        public readonly JsonType Type;
        public readonly bool BoolValue;
        public readonly string Text;              // String: the value; Number: its source text
        public readonly List<JsonValue> Items;     // Array
        public readonly List<KeyValuePair<string, JsonValue>> Members;  // Object, in order

        JsonValue(JsonType t, bool b, string text, List<JsonValue> items, List<KeyValuePair<string, JsonValue>> members)
        {
            Type = t; BoolValue = b; Text = text; Items = items; Members = members;
        }

        public static readonly JsonValue Null = new JsonValue(JsonType.Null, false, null, null, null);
        public static readonly JsonValue True = new JsonValue(JsonType.Bool, true, null, null, null);
        public static readonly JsonValue False = new JsonValue(JsonType.Bool, false, null, null, null);
        public static JsonValue Str(string s) { return new JsonValue(JsonType.String, false, s, null, null); }
        public static JsonValue Num(string s) { return new JsonValue(JsonType.Number, false, s, null, null); }
        public static JsonValue Arr(List<JsonValue> a) { return new JsonValue(JsonType.Array, false, null, a, null); }
        public static JsonValue Obj(List<KeyValuePair<string, JsonValue>> m) { return new JsonValue(JsonType.Object, false, null, null, m); }

        /// <summary>A number written without fraction or exponent (what Python's json reads as an int).</summary>
        public bool IsInteger
        {
            get { return Type == JsonType.Number && Text.IndexOf('.') < 0 && Text.IndexOf('e') < 0 && Text.IndexOf('E') < 0; }
        }

        public BigInteger AsBigInteger() { return BigInteger.Parse(Text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture); }

        /// <summary>The number as a double, exactly as Python's float() of the JSON value (an int converts
        /// with correct rounding too).</summary>
        public double AsDouble() { return FloatBits.ParseDecimal(Text); }

        public JsonValue Get(string key)
        {
            if (Members == null) return null;
            for (int i = 0; i < Members.Count; i++) if (Members[i].Key == key) return Members[i].Value;
            return null;
        }

        public string TypeName
        {
            get
            {
                switch (Type)
                {
                    case JsonType.Null: return "null";
                    case JsonType.Bool: return "a boolean";
                    case JsonType.Number: return IsInteger ? "an integer" : "a float";
                    case JsonType.String: return "a string";
                    case JsonType.Array: return "an array";
                    default: return "an object";
                }
            }
        }
    }

    public sealed class JsonException : Exception
    {
        public JsonException(string m) : base(m) { }
    }

    public static class Json
    {
        public const int MaxDepth = 64;

        public static JsonValue Parse(string text)
        {
            Arg.NotNull(text, "text", "Json.Parse");
            var p = new Parser(text);
            p.Ws();
            JsonValue v = p.Value(0);
            p.Ws();
            if (p.Pos != text.Length) throw p.Err("extra data after the document");
            return v;
        }

        /// <summary>A document from its bytes: UTF-8, one leading byte order mark (EF BB BF) skipped;
        /// bytes that are not well-formed UTF-8 (RFC 3629: invalid or overlong bytes, truncated
        /// sequences, encoded surrogates ED A0..BF xx, above U+10FFFF) refused, so UTF-16 is too.</summary>
        public static JsonValue ParseUtf8(byte[] data)
        {
            Arg.NotNull(data, "data", "Json.ParseUtf8");
            int start = data.Length >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF ? 3 : 0;
            int bad = Utf8Error(data, start);
            if (bad >= 0) throw new JsonException("not valid UTF-8 (byte " + bad + ")");
            string s;
            try { s = new UTF8Encoding(false, true).GetString(data, start, data.Length - start); }
            catch (ArgumentException) { throw new JsonException("not valid UTF-8"); }
            return Parse(s);
        }

        /// <summary>The offset of the first byte that is not well-formed UTF-8 (the Unicode
        /// standard's table 3-7), or -1. Checked here, not left to the runtime's decoder.</summary>
        static int Utf8Error(byte[] d, int i)
        {
            int n = d.Length;
            while (i < n)
            {
                int b = d[i];
                if (b < 0x80) { i++; continue; }
                int need, lo = 0x80, hi = 0xBF;
                if (b >= 0xC2 && b <= 0xDF) need = 1;
                else if (b == 0xE0) { need = 2; lo = 0xA0; }
                else if (b == 0xED) { need = 2; hi = 0x9F; }      // no surrogates
                else if (b >= 0xE1 && b <= 0xEF) need = 2;
                else if (b == 0xF0) { need = 3; lo = 0x90; }
                else if (b >= 0xF1 && b <= 0xF3) need = 3;
                else if (b == 0xF4) { need = 3; hi = 0x8F; }      // at most U+10FFFF
                else return i;
                for (int k = 1; k <= need; k++)
                {
                    if (i + k >= n) return i;
                    int c = d[i + k];
                    if (k == 1 ? c < lo || c > hi : c < 0x80 || c > 0xBF) return i;
                }
                i += need + 1;
            }
            return -1;
        }

        sealed class Parser
        {
            readonly string s;
            public int Pos;
            public Parser(string s) { this.s = s; }

            public JsonException Err(string what)
            {
                int line = 1, col = 1;
                for (int i = 0; i < Pos && i < s.Length; i++) { if (s[i] == '\n') { line++; col = 1; } else col++; }
                return new JsonException(what + " (line " + line + " column " + col + ")");
            }

            public void Ws()
            {
                while (Pos < s.Length && (s[Pos] == ' ' || s[Pos] == '\t' || s[Pos] == '\n' || s[Pos] == '\r')) Pos++;
            }

            bool Lit(string w)
            {
                if (string.CompareOrdinal(s, Pos, w, 0, w.Length) == 0) { Pos += w.Length; return true; }
                return false;
            }

            public JsonValue Value(int depth)
            {
                if (Pos >= s.Length) throw Err("unexpected end of the document");
                char c = s[Pos];
                if (c == '{') return Object(depth + 1);
                if (c == '[') return Array(depth + 1);
                if (c == '"') return JsonValue.Str(String());
                if (c == '-' || (c >= '0' && c <= '9')) return Number();
                if (Lit("true")) return JsonValue.True;
                if (Lit("false")) return JsonValue.False;
                if (Lit("null")) return JsonValue.Null;
                throw Err("expected a value");
            }

            JsonValue Object(int depth)
            {
                if (depth > MaxDepth) throw Err("nested too deeply");
                Pos++;
                var m = new List<KeyValuePair<string, JsonValue>>();
                Ws();
                if (Pos < s.Length && s[Pos] == '}') { Pos++; return JsonValue.Obj(m); }
                for (;;)
                {
                    Ws();
                    if (Pos >= s.Length || s[Pos] != '"') throw Err("expected a key string");
                    string k = String();
                    for (int i = 0; i < m.Count; i++) if (m[i].Key == k) throw Err("duplicate key \"" + k + "\"");
                    Ws();
                    if (Pos >= s.Length || s[Pos] != ':') throw Err("expected ':'");
                    Pos++;
                    Ws();
                    JsonValue v = Value(depth);
                    m.Add(new KeyValuePair<string, JsonValue>(k, v));
                    Ws();
                    if (Pos < s.Length && s[Pos] == ',') { Pos++; continue; }
                    if (Pos < s.Length && s[Pos] == '}') { Pos++; return JsonValue.Obj(m); }
                    throw Err("expected ',' or '}'");
                }
            }

            JsonValue Array(int depth)
            {
                if (depth > MaxDepth) throw Err("nested too deeply");
                Pos++;
                var a = new List<JsonValue>();
                Ws();
                if (Pos < s.Length && s[Pos] == ']') { Pos++; return JsonValue.Arr(a); }
                for (;;)
                {
                    Ws();
                    a.Add(Value(depth));
                    Ws();
                    if (Pos < s.Length && s[Pos] == ',') { Pos++; continue; }
                    if (Pos < s.Length && s[Pos] == ']') { Pos++; return JsonValue.Arr(a); }
                    throw Err("expected ',' or ']'");
                }
            }

            string String()
            {
                Pos++;
                var sb = new StringBuilder();
                for (;;)
                {
                    if (Pos >= s.Length) throw Err("unterminated string");
                    char c = s[Pos++];
                    if (c == '"') return sb.ToString();
                    if (c < 0x20) { Pos--; throw Err("control character in a string"); }
                    if (c != '\\') { sb.Append(c); continue; }
                    if (Pos >= s.Length) throw Err("unterminated string");
                    char e = s[Pos++];
                    switch (e)
                    {
                        case '"': sb.Append('"'); break;
                        case '\\': sb.Append('\\'); break;
                        case '/': sb.Append('/'); break;
                        case 'b': sb.Append('\b'); break;
                        case 'f': sb.Append('\f'); break;
                        case 'n': sb.Append('\n'); break;
                        case 'r': sb.Append('\r'); break;
                        case 't': sb.Append('\t'); break;
                        case 'u':
                            if (Pos + 4 > s.Length) throw Err("bad \\u escape");
                            int v = 0;
                            for (int i = 0; i < 4; i++)
                            {
                                char h = s[Pos++];
                                int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                                if (d < 0) throw Err("bad \\u escape");
                                v = v * 16 + d;
                            }
                            sb.Append((char)v);
                            break;
                        default: Pos--; throw Err("bad escape");
                    }
                }
            }

            JsonValue Number()
            {
                int start = Pos;
                if (s[Pos] == '-') Pos++;
                if (Pos >= s.Length) throw Err("bad number");
                if (s[Pos] == '0') Pos++;
                else if (s[Pos] >= '1' && s[Pos] <= '9') { while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++; }
                else throw Err("bad number");
                if (Pos < s.Length && s[Pos] == '.')
                {
                    Pos++;
                    int d = Pos;
                    while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                    if (Pos == d) throw Err("bad number");
                }
                if (Pos < s.Length && (s[Pos] == 'e' || s[Pos] == 'E'))
                {
                    Pos++;
                    if (Pos < s.Length && (s[Pos] == '+' || s[Pos] == '-')) Pos++;
                    int d = Pos;
                    while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                    if (Pos == d) throw Err("bad number");
                }
                return JsonValue.Num(s.Substring(start, Pos - start));
            }
        }

        /// <summary>A string as Python's json.dumps(..., ensure_ascii=True) writes it.</summary>
        public static void WriteString(StringBuilder sb, string v)
        {
            Arg.NotNull(sb, "sb", "Json.WriteString");
            Arg.NotNull(v, "v", "Json.WriteString");
            sb.Append('"');
            foreach (char c in v)
            {
                switch (c)
                {
                    case '"': sb.Append("\\\""); break;
                    case '\\': sb.Append("\\\\"); break;
                    case '\n': sb.Append("\\n"); break;
                    case '\r': sb.Append("\\r"); break;
                    case '\t': sb.Append("\\t"); break;
                    case '\b': sb.Append("\\b"); break;
                    case '\f': sb.Append("\\f"); break;
                    default:
                        if (c < 0x20 || c > 0x7E) sb.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                        else sb.Append(c);
                        break;
                }
            }
            sb.Append('"');
        }
    }
}
