using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Numerics;
using System.Text;
using QuantCodec;

static partial class Tests
{
    static void FloatAndJson()
    {
        // decimal text to the nearest double, ties to even, as Python's float()
        var dec = new KeyValuePair<string, ulong>[]
        {
            new KeyValuePair<string, ulong>("0.1", 0x3fb999999999999aUL),
            new KeyValuePair<string, ulong>("2.2250738585072011e-308", 0x000fffffffffffffUL),
            new KeyValuePair<string, ulong>("1e23", 0x44b52d02c7e14af6UL),
            new KeyValuePair<string, ulong>("5e-324", 0x0000000000000001UL),
            new KeyValuePair<string, ulong>("2.4703282292062328e-324", 0x0000000000000001UL),
            new KeyValuePair<string, ulong>("2.4703282292062327e-324", 0x0000000000000000UL),
            new KeyValuePair<string, ulong>("1.7976931348623157e308", 0x7fefffffffffffffUL),
            new KeyValuePair<string, ulong>("1.7976931348623158e308", 0x7fefffffffffffffUL),
            new KeyValuePair<string, ulong>("1.7976931348623159e308", 0x7ff0000000000000UL),
            new KeyValuePair<string, ulong>("9007199254740993", 0x4340000000000000UL),
            new KeyValuePair<string, ulong>("123456789012345678901234567890", 0x45f8ee90ff6c373eUL),
            new KeyValuePair<string, ulong>("-0.0", 0x8000000000000000UL),
            new KeyValuePair<string, ulong>("0.30000000000000004", 0x3fd3333333333334UL),
            new KeyValuePair<string, ulong>("2.225073858507201e-308", 0x000fffffffffffffUL),
            new KeyValuePair<string, ulong>("4.9406564584124654e-324", 0x0000000000000001UL),
            new KeyValuePair<string, ulong>("1e-400", 0x0000000000000000UL),
            new KeyValuePair<string, ulong>("1e400", 0x7ff0000000000000UL),
            new KeyValuePair<string, ulong>("6.02214076e23", 0x44dfe185ca57c517UL),
            new KeyValuePair<string, ulong>("0.001", 0x3f50624dd2f1a9fcUL),
            new KeyValuePair<string, ulong>("1e-07", 0x3e7ad7f29abcaf48UL),
            new KeyValuePair<string, ulong>("3.141592653589793", 0x400921fb54442d18UL),
            new KeyValuePair<string, ulong>("179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368", 0x7fefffffffffffffUL),
        };
        foreach (var kv in dec)
            Check(Bits(FloatBits.ParseDecimal(kv.Key)) == kv.Value, "ParseDecimal(" + kv.Key + ") = " + Hex(Bits(FloatBits.ParseDecimal(kv.Key))) + ", want " + Hex(kv.Value));
        // float.hex and back
        var hex = new KeyValuePair<string, ulong>[]
        {
            new KeyValuePair<string, ulong>("0x1.0000000000000p+11", 0x40a0000000000000UL),
            new KeyValuePair<string, ulong>("0x0.0p+0", 0UL),
            new KeyValuePair<string, ulong>("-0x0.0p+0", 0x8000000000000000UL),
            new KeyValuePair<string, ulong>("0x0.0000000000001p-1022", 1UL),
            new KeyValuePair<string, ulong>("0x0.fffffffffffffp-1022", 0x000fffffffffffffUL),
            new KeyValuePair<string, ulong>("0x1.fffffffffffffp+1023", 0x7fefffffffffffffUL),
            new KeyValuePair<string, ulong>("-0x1.47ae147ae147bp-7", 0xbf847ae147ae147bUL),
            new KeyValuePair<string, ulong>("0x1.6a09e667f3bcdp-1", 0x3fe6a09e667f3bcdUL),
        };
        foreach (var kv in hex)
        {
            Check(FloatBits.ToHex(FloatBits.FromBits(kv.Value)) == kv.Key, "ToHex " + Hex(kv.Value) + " = " + FloatBits.ToHex(FloatBits.FromBits(kv.Value)));
            Check(Bits(FloatBits.ParseHex(kv.Key)) == kv.Value, "ParseHex " + kv.Key);
        }
        Check(FloatBits.ToHex(double.PositiveInfinity) == "inf" && FloatBits.ToHex(double.NegativeInfinity) == "-inf" && FloatBits.ToHex(double.NaN) == "nan", "ToHex of inf / nan");
        // ulong <-> double on every runtime
        Check(Bits(FloatBits.U64ToDouble(0xFFFFFFFFFFFFFC01UL)) == 0x43f0000000000000UL, "U64ToDouble rounds up to 2**64");
        Check(Bits(FloatBits.U64ToDouble(0x8000000000000401UL)) == 0x43e0000000000001UL, "U64ToDouble rounds a tie above half up");
        Check(Bits(FloatBits.U64ToDouble(0x8000000000000400UL)) == 0x43e0000000000000UL, "U64ToDouble ties to even");
        Check(FloatBits.DoubleToU64(18446744073709549568.0) == 18446744073709549568UL, "DoubleToU64 above 2**63");
        // CRC-32C
        Check(Crc32C.Compute(Encoding.ASCII.GetBytes("123456789")) == 0xE3069283u, "crc32c(123456789)");
        var all = new byte[1000];
        for (int i = 0; i < all.Length; i++) all[i] = (byte)(i * 7 + 3);
        uint whole = Crc32C.Compute(all), part = Crc32C.Compute(all, 0, 333, 0);
        Check(Crc32C.Compute(all, 333, 667, part) == whole, "crc32c continues");
        Check(Crc32C.Compute(new byte[0]) == 0, "crc32c of nothing");
        // the second seed's check without a second pass (what the decoder does for fragments)
        var rng = new System.Random(37);
        bool shiftOk = true;
        for (int t = 0; t < 200; t++)
        {
            int n = rng.Next(0, 1300), o = rng.Next(0, 8);
            var d = new byte[n + o];
            rng.NextBytes(d);
            uint a = (uint)rng.Next() ^ ((uint)rng.Next() << 16), b = (uint)rng.Next() ^ ((uint)rng.Next() << 16);
            shiftOk &= (Crc32C.Compute(d, o, n, a) ^ Crc32C.Compute(d, o, n, b)) == Crc32C.ZeroShift(a ^ b, n);
        }
        Check(shiftOk, "crc32c under two seeds differs by ZeroShift of the seeds' difference");
        ulong[] scratch = null;
        bool wordsOk = true;
        for (int t = 0; t < 200; t++)
        {
            int n = rng.Next(0, 1300), o = rng.Next(0, 8);
            var d = new byte[n + o];
            rng.NextBytes(d);
            uint a = (uint)rng.Next();
            wordsOk &= Crc32C.Compute(d, o, n, a, ref scratch) == Crc32C.Compute(d, o, n, a);
        }
        Check(wordsOk, "crc32c read as words equals crc32c read as bytes");
        // strict JSON
        string[] bad = { "", "{", "{\"a\":1,}", "[1,]", "{\"a\":1,\"a\":2}", "01", "1.", ".5", "-", "\"a\u0001\"", "tru", "[1] 2", "NaN", "{'a':1}", "\"\\x\"" };
        foreach (var b in bad) Check(Throws<JsonException>(() => Json.Parse(b)), "JSON refused: " + b);
        var deep = new string('[', 70) + new string(']', 70);
        Check(Throws<JsonException>(() => Json.Parse(deep)), "JSON nested too deeply");
        var v = Json.Parse(" {\"b\": [1, -2.5e3, true, null, \"x\\u00e9\\n\"], \"a\": {}} ");
        Check(v.Members[0].Key == "b" && v.Members[1].Key == "a", "JSON keeps key order");
        Check(v.Get("b").Items[0].IsInteger && !v.Get("b").Items[1].IsInteger && v.Get("b").Items[1].AsDouble() == -2500.0, "JSON numbers");
        Check(v.Get("b").Items[4].Text == "x\u00e9\n", "JSON escapes");
        var sb = new StringBuilder();
        Json.WriteString(sb, "a\"\\\n\u00e9\u007f\ud83d\ude00/");
        Check(sb.ToString() == "\"a\\\"\\\\\\n\\u00e9\\u007f\\ud83d\\ude00/\"", "ensure_ascii string: " + sb);
    }

    static void SchemasAndFingerprints()
    {
        var manifest = Load("conformance/manifest.json");
        foreach (var m in manifest.Get("schemas").Members)
        {
            var s = Schema.Load(Path.Combine(root, "conformance", m.Value.Get("file").Text));
            Check(s.Fingerprint == m.Value.Get("fingerprint").Text, "fingerprint of " + m.Key + ": " + s.Fingerprint);
        }
        var ps = Load("tests/golden/schema/player_state.json");
        var player = Schema.FromJson(ps.Get("spec"));
        Check(player.Fingerprint == ps.Get("fingerprint").Text && player.Fingerprint == "6835f5f0e12ff134", "PlayerState fingerprint " + player.Fingerprint);
        // the records of the golden schema file
        foreach (var r in ps.Get("records").Items)
        {
            var bytes = FromHex(r.Get("hex").Text);
            var codes = player.DecodeCodes(bytes);
            Check(ToHex(player.EncodeCodes(codes)) == r.Get("hex").Text, "PlayerState record re-encodes");
            var flat = new List<BigInteger>();
            Flatten(r.Get("codes"), flat);
            bool same = flat.Count == codes.Length;
            for (int i = 0; same && i < codes.Length; i++) same = (ulong)flat[i] == codes[i];
            Check(same, "PlayerState record codes " + r.Get("hex").Text);
        }
        Check(Schema.Load(Path.Combine(root, "tests/golden/snapshot/schema.json")).Fingerprint == Load("tests/golden/snapshot/packets.json").Get("fingerprint").Text, "golden snapshot schema fingerprint");
        // the same schema written in other forms: the same fingerprint
        string dictForm = "{\"name\":\"PlayerState\",\"version\":3,\"fields\":{\"position\":{\"kind\":\"Vector\",\"codecs\":[{\"kind\":\"Bounded\",\"min\":-2048,\"max\":2048,\"bits\":18},{\"kind\":\"Bounded\",\"min\":-64,\"max\":192,\"bits\":14},{\"kind\":\"Bounded\",\"min\":-2048,\"max\":2048,\"bits\":18}]},"
            + "\"rotation\":{\"kind\":\"Quat\"},\"velocity\":{\"kind\":\"NearlyZero\",\"threshold\":0.01,\"inner\":{\"kind\":\"Vector\",\"codecs\":[{\"kind\":\"PowerCurve\",\"max\":50,\"pow\":2,\"bits\":10},{\"kind\":\"PowerCurve\",\"max\":50,\"pow\":2,\"bits\":10},{\"kind\":\"PowerCurve\",\"max\":50,\"pow\":2,\"bits\":10}]}},"
            + "\"yaw\":[\"ignored\"],\"health\":{\"kind\":\"UInt\",\"bits\":8},\"state\":{\"kind\":\"Enum\",\"labels\":[\"idle\",\"walk\",\"run\",\"jump\"]},\"grounded\":{\"kind\":\"Bool\"}}}";
        dictForm = dictForm.Replace("[\"ignored\"]", "{\"kind\":\"Angle\",\"bits\":16}");
        Check(Schema.FromJson(dictForm).Fingerprint == "6835f5f0e12ff134", "dict form, ints for floats, defaults: the same fingerprint");
        string pairs = "{\"name\":\"T\",\"fields\":[[\"a\",{\"kind\":\"UInt\",\"bits\":3}],[\"b\",{\"kind\":\"UInt\",\"bits\":5}]]}";
        var t = Schema.FromJson(pairs);
        Check(ToHex(t.EncodeCodes(new ulong[] { 5, 17 })) == "8d", "UInt(3), UInt(5) of (5, 17) is 0x8d");
        Check(t.Version == 1, "version defaults to 1");
        // refused schemas, each a SchemaException
        string[] bad =
        {
            "[]", "{\"name\":\"T\"}", "{\"fields\":[]}", "{\"name\":\"\",\"fields\":{\"a\":{\"kind\":\"Bool\"}}}",
            "{\"name\":\"T\",\"fields\":{}}", "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Bool\"}},\"extra\":1}",
            "{\"name\":\"T\",\"version\":-1,\"fields\":{\"a\":{\"kind\":\"Bool\"}}}",
            "{\"name\":\"T\",\"version\":1.0,\"fields\":{\"a\":{\"kind\":\"Bool\"}}}",
            "{\"name\":\"T\",\"fields\":{\"1a\":{\"kind\":\"Bool\"}}}",
            "{\"name\":\"T\",\"fields\":[[\"a\",{\"kind\":\"Bool\"}],[\"a\",{\"kind\":\"Bool\"}]]}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Nope\"}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Bool\",\"bits\":1}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"UInt\",\"bits\":8.0}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"UInt\",\"bits\":true}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"UInt\",\"bits\":65}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"UInt\"}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Bounded\",\"min\":1,\"max\":1,\"bits\":8}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Bounded\",\"min\":0,\"max\":1e400,\"bits\":8}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Bounded\",\"min\":-1e300,\"max\":1e300,\"bits\":32}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Bounded\",\"min\":0,\"max\":1,\"bits\":8,\"mode\":\"middle\"}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Bounded\",\"min\":\"0\",\"max\":1,\"bits\":8}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Fixed\",\"step\":0,\"bits\":8}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Fixed\",\"step\":1e300,\"bits\":64}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Fixed\",\"step\":1,\"bits\":8,\"signed\":1}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Angle\",\"bits\":8,\"unit\":\"grad\"}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"PowerCurve\",\"max\":1,\"pow\":0.5,\"bits\":8}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"PowerCurve\",\"max\":1,\"pow\":2,\"bits\":1}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Grid\",\"cell_size\":1,\"cell_bits\":40,\"offset_bits\":30}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Grid\",\"cell_size\":1e300,\"cell_bits\":63,\"offset_bits\":1}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Enum\",\"labels\":[]}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Enum\",\"labels\":[\"x\",\"x\"]}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Enum\",\"count\":0}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Enum\",\"count\":4294967297}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Enum\",\"labels\":[\"x\"],\"count\":1}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Quat\",\"bits\":21}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"UnitVector\",\"bits\":1}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Vector\",\"codecs\":[]}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Vector\",\"codecs\":[{\"kind\":\"Vector\",\"codecs\":[{\"kind\":\"Bool\"}]}]}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Vector\",\"codecs\":[{\"kind\":\"Quat\"}]}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"Vector\",\"codecs\":[{\"kind\":\"Int\",\"bits\":8},{\"kind\":\"UInt\",\"bits\":64}]}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"NearlyZero\",\"inner\":{\"kind\":\"Quat\"},\"threshold\":0}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"NearlyZero\",\"inner\":{\"kind\":\"Bool\"},\"threshold\":-1}}}",
            "{\"name\":\"T\",\"fields\":{\"a\":{\"kind\":\"NearlyZero\",\"inner\":{\"kind\":\"Bool\"}}}}",
        };
        foreach (var b in bad) Check(Throws<SchemaException>(() => Schema.FromJson(b)), "schema refused: " + b);
        Check(Throws<SchemaException>(() => player.CheckFingerprint("0000000000000000")), "CheckFingerprint refuses another");
        player.CheckFingerprint(" 6835F5F0E12FF134 ");
        passed++;
        // the slot table of wire-format section 2, against the golden packets' table
        var golden = Load("tests/golden/snapshot/packets.json");
        var gs = Schema.Load(Path.Combine(root, "tests/golden/snapshot/schema.json"));
        var rows = golden.Get("slots").Items;
        bool ok = rows.Count == gs.Slots.Length;
        for (int i = 0; ok && i < rows.Count; i++)
        {
            var r = rows[i].Items;
            var sl = gs.Slots[i];
            ok = r[0].Text == sl.Class.ToString().ToLowerInvariant() && int.Parse(r[1].Text) == sl.Bits && int.Parse(r[2].Text) == sl.Field
                 && int.Parse(r[3].Text) == sl.Span && int.Parse(r[4].Text) == sl.CBits && r[5].BoolValue == sl.Signed;
        }
        Check(ok, "slot table of the golden snapshot schema");
    }

    static void Flatten(JsonValue v, List<BigInteger> o)
    {
        if (v.Type == JsonType.Array) { foreach (var x in v.Items) Flatten(x, o); return; }
        o.Add(BigCode(v));
    }

    // ------------------------------------------------------------------------------ codecs

    static void CodecGoldens()
    {
        var cases = Load("tests/golden/codecs/codecs.json").Get("cases").Items;
        foreach (var cs in cases)
        {
            var codec = Schema.CodecFromSpec(cs.Get("spec"));
            string name = codec.Describe();
            var inputs = cs.Get("inputs").Items;
            var codes = cs.Get("codes").Items;
            var values = cs.Get("values");
            for (int i = 0; i < inputs.Count; i++)
            {
                var flat = new List<BigInteger>();
                Flatten(codes[i], flat);
                var want = new ulong[flat.Count];
                for (int j = 0; j < flat.Count; j++) { ulong c; Carrier(flat[j], out c); want[j] = c; }
                // quantize
                var got = QuantizeAny(codec, inputs[i]);
                bool same = got.Length == want.Length;
                for (int j = 0; same && j < got.Length; j++) same = got[j] == want[j];
                Check(same, name + ": quantize " + inputs[i].Text + " -> " + string.Join(",", got) + ", want " + string.Join(",", want));
                for (int j = 0; j < want.Length; j++) Check(ValidAny(codec, want, j), name + ": golden code valid");
                // dequantize
                if (values != null)
                {
                    var gv = DequantizeAny(codec, want);
                    var wv = new List<double>();
                    FlattenHex(values.Items[i], wv);
                    bool eq = gv.Length == wv.Count;
                    for (int j = 0; eq && j < gv.Length; j++) eq = Bits(gv[j]) == Bits(wv[j]);
                    Check(eq, name + ": dequantize " + string.Join(",", want) + " = " + FmtD(gv) + ", want " + FmtD(wv.ToArray()));
                }
            }
            // packed: the codes written back to back in `bits` bits, LSB first
            var packed = cs.Get("packed");
            if (packed != null && (codec.IsScalar || codec.Kind == CodecKind.Quat || codec.Kind == CodecKind.UnitVector))
            {
                var w = new BitWriter();
                foreach (var c in codes) { ulong cc; Carrier(BigCode(c), out cc); w.Write(codec.ToWire(cc), codec.Bits); }
                Check(ToHex(w.ToArray()) == packed.Text, name + ": packed");
                var r = new BitReader(FromHex(packed.Text));
                bool back = true;
                foreach (var c in codes) { ulong cc; Carrier(BigCode(c), out cc); back &= codec.FromWire(r.Read(codec.Bits)) == cc; }
                Check(back, name + ": unpacked");
            }
        }
        // valid() never throws and refuses what quantize cannot produce
        Check(!Codec.PowerCurve(8, 2, 8).Valid(1UL << 7), "PowerCurve negative zero is not valid");
        Check(!Codec.Bounded(0, 1, 4).Valid(16) && Codec.Bounded(0, 1, 4).Valid(15), "Bounded valid range");
        Check(!Codec.UInt(8).ValidSigned(-1) && !Codec.Enum(3).Valid(3) && Codec.Enum(3).Valid(2), "UInt / Enum valid");
        Check(Codec.Int(8).ValidSigned(-128) && !Codec.Int(8).ValidSigned(-129) && !Codec.Int(8).ValidSigned(128), "Int valid");
        Check(Throws<RangeException>(() => Codec.Quat(9).QuantizeQuat(0, 0, 0, 0)) && Throws<RangeException>(() => Codec.Quat(9).QuantizeQuat(double.NaN, 0, 0, 1)), "Quat zero / NaN");
        Check(Throws<RangeException>(() => Codec.UnitVector(9).QuantizeUnitVector(0, 0, 0)), "UnitVector zero");
        Check(Throws<RangeException>(() => Codec.UInt(8).Quantize(256)) && Throws<RangeException>(() => Codec.UInt(8).Quantize(1.5)), "UInt out of range");
        // every code of a small Quat: the decoder's table agrees with Valid
        var q = Codec.Quat(5, "bins");
        var tab = q.QuatTable();
        bool agree = true;
        for (ulong c = 0; c < (1UL << 17); c++)
        {
            ulong m = 31;
            bool t = Codec.QuatValidShrunk(tab[(c >> 10) & m], tab[(c >> 5) & m], tab[c & m]);
            agree &= t == q.Valid(c);
        }
        Check(agree, "Quat(5, bins): table validity equals Valid for every code");
        // the packet decoder's own check (tables, the all-at-most-0.5 shortcut) against Valid: every
        // code of small Quats, a million random codes of larger ones, and the other kinds' edges
        var qs = Schema.FromJson("{\"name\":\"Q\",\"fields\":{\"a\":{\"kind\":\"Quat\",\"bits\":4},\"b\":{\"kind\":\"Quat\",\"bits\":6,\"mode\":\"bins\"},"
            + "\"c\":{\"kind\":\"Quat\",\"bits\":9},\"d\":{\"kind\":\"Quat\",\"bits\":12,\"mode\":\"bins\"},\"e\":{\"kind\":\"Quat\",\"bits\":16},"
            + "\"p\":{\"kind\":\"PowerCurve\",\"max\":3,\"pow\":1.5,\"bits\":6},\"n\":{\"kind\":\"Enum\",\"count\":5},\"i\":{\"kind\":\"Int\",\"bits\":7}}}");
        var qd = new SnapshotDecoder(qs);
        bool dec = true;
        for (ulong c = 0; c < (1UL << 14) + 5; c++) dec &= qd.SlotAccepts(0, c) == qs.Slots[0].Codec.Valid(c);
        for (ulong c = 0; c < (1UL << 20) + 5; c++) dec &= qd.SlotAccepts(1, c) == qs.Slots[1].Codec.Valid(c);
        ulong st = 12345;
        for (int i = 0; i < 1000000; i++)
        {
            st ^= st << 13; st ^= st >> 7; st ^= st << 17;
            for (int sl = 2; sl <= 4; sl++)
            {
                ulong c = st & ((1UL << qs.Slots[sl].Bits) - 1);
                dec &= qd.SlotAccepts(sl, c) == qs.Slots[sl].Codec.Valid(c);
            }
        }
        for (ulong c = 0; c < 70; c++) dec &= qd.SlotAccepts(5, c) == qs.Slots[5].Codec.Valid(c) && qd.SlotAccepts(6, c) == qs.Slots[6].Codec.Valid(c);
        Check(dec, "the packet decoder's validity equals Valid (Quat 4, 6 bins: every code; 9, 12 bins, 16: random; PowerCurve, Enum)");
    }

    static string FmtD(double[] v) { var s = new string[v.Length]; for (int i = 0; i < v.Length; i++) s[i] = FloatBits.ToHex(v[i]); return string.Join(",", s); }

    static void FlattenHex(JsonValue v, List<double> o)
    {
        if (v.Type == JsonType.Array) { foreach (var x in v.Items) FlattenHex(x, o); return; }
        o.Add(v.Type == JsonType.String ? FloatBits.ParseHex(v.Text) : v.AsDouble());
    }

    static double In(JsonValue v) { return v.Type == JsonType.String ? FloatBits.ParseHex(v.Text) : v.AsDouble(); }

    /// <summary>The codes of an input for any codec (NearlyZero: flag then inner codes).</summary>
    static ulong[] QuantizeAny(Codec c, JsonValue x)
    {
        switch (c.Kind)
        {
            case CodecKind.Quat: return new[] { c.QuantizeQuat(In(x.Items[0]), In(x.Items[1]), In(x.Items[2]), In(x.Items[3])) };
            case CodecKind.UnitVector: return new[] { c.QuantizeUnitVector(In(x.Items[0]), In(x.Items[1]), In(x.Items[2])) };
            case CodecKind.Vector:
                {
                    var o = new ulong[c.Components.Length];
                    for (int i = 0; i < o.Length; i++) o[i] = ScalarQ(c.Components[i], x.Items[i]);
                    return o;
                }
            case CodecKind.NearlyZero:
                {
                    int n = c.Inner.Kind == CodecKind.Vector ? c.Inner.Components.Length : 1;
                    var vals = new double[n];
                    for (int i = 0; i < n; i++) vals[i] = In(n == 1 && x.Type != JsonType.Array ? x : x.Items[i]);
                    var o = new ulong[1 + n];
                    if (!c.IsMoving(vals, 0, n)) return o;
                    o[0] = 1;
                    for (int i = 0; i < n; i++) o[1 + i] = (c.Inner.Kind == CodecKind.Vector ? c.Inner.Components[i] : c.Inner).Quantize(vals[i]);
                    return o;
                }
            default: return new[] { ScalarQ(c, x) };
        }
    }

    static ulong ScalarQ(Codec c, JsonValue x)
    {
        if (c.IsExact && x.IsInteger)
        {
            var b = x.AsBigInteger();
            if (c.Kind == CodecKind.Int) return c.QuantizeInt((long)b);
            return c.QuantizeUInt((ulong)b);
        }
        if (x.Type == JsonType.Bool) return x.BoolValue ? 1UL : 0UL;
        return c.Quantize(In(x));
    }

    static bool ValidAny(Codec c, ulong[] codes, int j)
    {
        switch (c.Kind)
        {
            case CodecKind.Vector: return c.Components[j].Valid(codes[j]);
            case CodecKind.NearlyZero:
                if (j == 0) return codes[0] <= 1;
                return (c.Inner.Kind == CodecKind.Vector ? c.Inner.Components[j - 1] : c.Inner).Valid(codes[j]) || codes[0] == 0;
            default: return c.Valid(codes[j]);
        }
    }

    static double[] DequantizeAny(Codec c, ulong[] codes)
    {
        switch (c.Kind)
        {
            case CodecKind.Quat: { var o = new double[4]; c.DequantizeQuat(codes[0], o); return o; }
            case CodecKind.UnitVector: { var o = new double[3]; c.DequantizeUnitVector(codes[0], o); return o; }
            case CodecKind.Vector:
                {
                    var o = new double[codes.Length];
                    for (int i = 0; i < o.Length; i++) o[i] = c.Components[i].Dequantize(codes[i]);
                    return o;
                }
            case CodecKind.NearlyZero:
                {
                    int n = codes.Length - 1;
                    var o = new double[n];
                    if (codes[0] != 0) for (int i = 0; i < n; i++) o[i] = (c.Inner.Kind == CodecKind.Vector ? c.Inner.Components[i] : c.Inner).Dequantize(codes[1 + i]);
                    return o;
                }
            default: return new[] { c.Dequantize(codes[0]) };
        }
    }
}
