// The caller's errors in the public API (.NET's conventions): a null argument is
// ArgumentNullException naming the parameter, a slice past its array or an index out of range
// ArgumentOutOfRangeException naming it, an output array too short ArgumentException naming it,
// an unknown field name KeyNotFoundException naming the field. Never a NullReference- or
// IndexOutOfRangeException from deep inside (a tester found those, probe-jscs finding 4).
using System;
using System.Collections.Generic;
using System.IO;
using System.Text;
using QuantCodec;

static partial class Tests
{
    /// <summary>Whether a throws exactly T (not a subclass, unless sub) whose ParamName is param.</summary>
    static bool ThrowsArg<T>(Action a, string param, bool sub = false) where T : ArgumentException
    {
        try { a(); return false; }
        catch (ArgumentException e)
        {
            bool type = sub ? e is T : e.GetType() == typeof(T);
            if (!type || e.ParamName != param)
                Console.WriteLine("  (got " + e.GetType().Name + " for parameter " + (e.ParamName ?? "null") + ": " + e.Message.Split('\n')[0] + ")");
            return type && e.ParamName == param;
        }
        catch (Exception e) { Console.WriteLine("  (got " + e.GetType().Name + ": " + e.Message + ")"); return false; }
    }

    static void BadArguments()
    {
        var s = Schema.Load(Path.Combine(root, "conformance", "schemas", "pose.json"));
        var ds = ReadDatagrams(Path.Combine(root, "conformance", "streams", "pose_clean.bin"));
        byte[] hello = ds[0];
        int S = s.Slots.Length;

        var c = new StreamClient(s, nonce: 1);
        var views = new List<Snapshot>();
        foreach (var d in ds) { try { var v = c.Receive(d); if (v != null) views.Add(v.Clone()); } catch (DecodeException) { } }
        var view = views[0];
        // what is documented rather than refused: Get's seq is taken mod 65536 (as Python's get);
        // HeldBytes is the held snapshots' model cost only, without the reassembly's allowance
        var g = c.Decoder.Get(c.Decoder.Latest);
        Check(g != null && ReferenceEquals(c.Decoder.Get(c.Decoder.Latest - 65536), g) && ReferenceEquals(c.Decoder.Get(c.Decoder.Latest + 65536), g),
              "Decoder.Get takes seq mod 65536");
        long model = 0;
        for (int sq = 0; sq < 65536; sq++) { var h = c.Decoder.Get(sq); if (h != null) model += c.Decoder.SnapshotCost(h.Count); }
        var fresh = new SnapshotDecoder(s);
        fresh.Receive(hello);
        Check(fresh.HasStream && fresh.HeldBytes == 0 && c.Decoder.HeldBytes >= model && model > 0,
              "HeldBytes: 0 after a hello (no reassembly allowance), at least the held baselines' model cost (" + c.Decoder.HeldBytes + " >= " + model + ")");

        // records: Schema.DecodeCodes and the rest of the record API
        var codes = new ulong[S];
        Array.Copy(view.Codes, codes, S);
        byte[] rec = s.EncodeCodes(codes);
        var padded = new byte[rec.Length + 7];
        Buffer.BlockCopy(rec, 0, padded, 3, rec.Length);
        var back = s.DecodeCodes(padded, 3, rec.Length, new ulong[S + 2]);
        bool same = true;
        for (int i = 0; i < S; i++) same &= back[i] == codes[i];
        Check(same, "DecodeCodes of a slice at an offset, into a longer array: the record");
        Check(ThrowsArg<ArgumentNullException>(() => s.DecodeCodes(null), "data"), "DecodeCodes(null): ArgumentNullException data");
        Check(ThrowsArg<ArgumentNullException>(() => s.DecodeCodes(null, 0, 0, new ulong[S]), "data"), "DecodeCodes(null, ...): ArgumentNullException data");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => s.DecodeCodes(new byte[10], 8, 10, new ulong[S]), "length"), "DecodeCodes slice past the array: ArgumentOutOfRangeException length");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => s.DecodeCodes(new byte[10], -1, 2, new ulong[S]), "offset"), "DecodeCodes offset -1: ArgumentOutOfRangeException offset");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => s.DecodeCodes(new byte[10], 11, 0, new ulong[S]), "offset"), "DecodeCodes offset past the array: ArgumentOutOfRangeException offset");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => s.DecodeCodes(new byte[10], 0, -1, new ulong[S]), "length"), "DecodeCodes length -1: ArgumentOutOfRangeException length");
        Check(ThrowsArg<ArgumentException>(() => s.DecodeCodes(padded, 3, rec.Length, new ulong[2]), "into"), "DecodeCodes into too short: ArgumentException into");
        Check(ThrowsArg<ArgumentNullException>(() => s.DecodeCodes(padded, 3, rec.Length, null), "into"), "DecodeCodes into null: ArgumentNullException into");
        Check(Throws<DecodeException>(() => s.DecodeCodes(padded, 3, rec.Length - 1, new ulong[S])), "DecodeCodes of a short record: still DecodeException");
        Check(ThrowsArg<ArgumentNullException>(() => s.EncodeCodes(null), "codes"), "EncodeCodes(null)");
        Check(ThrowsArg<ArgumentNullException>(() => s.ReadCodes(null, new ulong[S]), "r"), "ReadCodes(null reader)");
        Check(ThrowsArg<ArgumentException>(() => s.ReadCodes(new BitReader(rec), new ulong[S], 1), "codes"), "ReadCodes codes too short");
        Check(ThrowsArg<ArgumentNullException>(() => s.WriteCodes(null, codes), "w"), "WriteCodes(null writer)");
        Check(ThrowsArg<ArgumentException>(() => s.WriteCodes(new BitWriter(), new ulong[S - 1]), "codes"), "WriteCodes codes too short");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => s.WriteCodes(new BitWriter(), codes, -1), "offset"), "WriteCodes offset -1");
        Check(ThrowsArg<ArgumentNullException>(() => s.Quantize(null), "values"), "Quantize(null)");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => s.Quantize(s.Dequantize(codes), -1, new ulong[S], 0), "voff"), "Quantize voff -1");
        Check(ThrowsArg<ArgumentException>(() => s.Quantize(s.Dequantize(codes), 0, new ulong[S], 1), "codes"), "Quantize codes too short");
        Check(Throws<RangeException>(() => s.Quantize(new double[s.ValueCount - 1])), "Quantize of too few values: still RangeException");
        Check(ThrowsArg<ArgumentNullException>(() => s.Dequantize(null), "codes"), "Dequantize(null)");
        Check(ThrowsArg<ArgumentException>(() => s.Dequantize(new ulong[S - 1]), "codes"), "Dequantize codes too short");
        Check(ThrowsArg<ArgumentException>(() => s.Dequantize(codes, 0, new double[s.ValueCount], 1), "values"), "Dequantize values too short");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => s.Dequantize(codes, S + 1, new double[s.ValueCount], 0), "coff"), "Dequantize coff past the array");

        // schemas and codecs
        Check(ThrowsArg<ArgumentNullException>(() => Schema.FromJson((string)null), "text"), "Schema.FromJson((string)null)");
        Check(ThrowsArg<ArgumentNullException>(() => Schema.FromJson((JsonValue)null), "spec"), "Schema.FromJson((JsonValue)null)");
        Check(ThrowsArg<ArgumentNullException>(() => Schema.CodecFromSpec(null), "spec"), "Schema.CodecFromSpec(null)");
        Check(ThrowsArg<ArgumentNullException>(() => Schema.Load(null), "path"), "Schema.Load(null)");
        Check(ThrowsArg<ArgumentNullException>(() => Schema.CheckLockstep(null, s), "a") && ThrowsArg<ArgumentNullException>(() => Schema.CheckLockstep(s, null), "b"), "CheckLockstep(null)");
        Check(ThrowsArg<ArgumentNullException>(() => Json.Parse(null), "text") && ThrowsArg<ArgumentNullException>(() => Json.ParseUtf8(null), "data"), "Json.Parse / ParseUtf8 (null)");
        Check(ThrowsArg<ArgumentNullException>(() => Json.WriteString(null, "x"), "sb") && ThrowsArg<ArgumentNullException>(() => Json.WriteString(new StringBuilder(), null), "v"), "Json.WriteString(null)");
        Check(ThrowsArg<ArgumentNullException>(() => FloatBits.ParseDecimal(null), "s") && ThrowsArg<ArgumentNullException>(() => FloatBits.ParseHex(null), "s"), "FloatBits.ParseDecimal / ParseHex (null)");
        var q = Codec.Quat(9);
        Check(ThrowsArg<ArgumentException>(() => q.DequantizeQuat(0, new double[5], 2), "outv"), "DequantizeQuat into too short");
        Check(ThrowsArg<ArgumentNullException>(() => q.DequantizeQuat(0, null), "outv"), "DequantizeQuat into null");
        Check(ThrowsArg<ArgumentException>(() => Codec.UnitVector(9).DequantizeUnitVector(0, new double[2]), "outv"), "DequantizeUnitVector into too short");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => Codec.NearlyZero(Codec.Fixed(0.1, 8), 0.5).IsMoving(new double[1], 0, 2), "count"), "IsMoving past the array");
        Check(ThrowsArg<ArgumentNullException>(() => q.WriteCanonical(null), "sb"), "WriteCanonical(null)");
        Check(ThrowsArg<ArgumentNullException>(() => new BitReader(null), "data"), "new BitReader(null)");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => new BitReader(new byte[2], 1, 2), "length"), "BitReader slice past the array");

        // checks and keys
        Check(ThrowsArg<ArgumentNullException>(() => Crc32C.Compute(null), "data"), "Crc32C.Compute(null)");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => Crc32C.Compute(new byte[4], 2, 5), "count"), "Crc32C.Compute past the array");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => SipHash.Compute(new byte[16], new byte[4], 3, 2), "count"), "SipHash.Compute past the array");
        Check(ThrowsArg<ArgumentNullException>(() => SipHash.Compute(null, new byte[4]), "key16") && ThrowsArg<ArgumentNullException>(() => SipHash.Compute(new byte[16], null), "data"), "SipHash.Compute(null)");
        Check(ThrowsArg<ArgumentNullException>(() => new TagKey(null), "key16") && ThrowsArg<ArgumentException>(() => new TagKey(new byte[15]), "key16"), "TagKey: null / 15 bytes");
        var ks = new KeySchedule(new byte[16]);
        Check(ThrowsArg<ArgumentNullException>(() => ks.Sub(null), "label") && ThrowsArg<ArgumentOutOfRangeException>(() => ks.Sub(new byte[4], 0, 99), "count"), "KeySchedule.Sub: null / past the array");

        // the decoder
        Check(SnapshotDecoder.ParseHello(hello, 0, hello.Length).History > 0, "ParseHello of the kit's hello");
        var hx = new byte[hello.Length + 5];
        Buffer.BlockCopy(hello, 0, hx, 5, hello.Length);
        Check(SnapshotDecoder.ParseHello(hx, 5, hello.Length).StreamId == SnapshotDecoder.ParseHello(hello, 0, hello.Length).StreamId, "ParseHello of a slice at an offset");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => SnapshotDecoder.ParseHello(hello, 0, hello.Length + 10), "n"), "ParseHello length past the array: ArgumentOutOfRangeException n");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => SnapshotDecoder.ParseHello(hello, -1, 8), "off"), "ParseHello offset -1");
        Check(ThrowsArg<ArgumentNullException>(() => SnapshotDecoder.ParseHello(null, 0, 0), "d"), "ParseHello(null)");
        Check(Throws<DecodeException>(() => SnapshotDecoder.ParseHello(hello, 0, hello.Length - 1)), "ParseHello of a short hello: still DecodeException");
        var dec = new SnapshotDecoder(s);
        Check(ThrowsArg<ArgumentNullException>(() => dec.AdoptHello(null), "d"), "AdoptHello(null): ArgumentNullException d");
        Check(ThrowsArg<ArgumentNullException>(() => dec.Differences(null), "h"), "Differences(null)");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => dec.DecodePacket(new byte[4], 2, 5), "length") && ThrowsArg<ArgumentNullException>(() => dec.DecodePacket(null, 0, 0), "packet"), "DecodePacket: past the array / null");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => dec.Receive(new byte[4], 0, 5), "length") && ThrowsArg<ArgumentOutOfRangeException>(() => dec.Receive(new byte[4], -1, 1), "offset"), "Receive: the slice's parameter named");
        Check(ThrowsArg<ArgumentNullException>(() => new SnapshotDecoder(null), "schema") && ThrowsArg<ArgumentNullException>(() => new StreamClient(null), "schema"), "decoder and client of a null schema");
        Check(ThrowsArg<ArgumentNullException>(() => new Snapshot(null, 1), "schema"), "new Snapshot(null)");

        // a view and a sample
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => view.Value(9999, 0), "row") && ThrowsArg<ArgumentOutOfRangeException>(() => view.Value(-1, 0), "row"), "Snapshot.Value row out of range");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => view.Value(0, S), "slot") && ThrowsArg<ArgumentOutOfRangeException>(() => view.Code(0, -1), "slot"), "Snapshot.Value / Code slot out of range");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => view.Code(view.Count, 0), "row"), "Snapshot.Code row Count");
        Check(ThrowsArg<ArgumentException>(() => view.Values(0, new double[1]), "values") && ThrowsArg<ArgumentOutOfRangeException>(() => view.Values(view.Count, new double[s.ValueCount]), "row"), "Snapshot.Values: too short / row out of range");
        var b = new Interpolator(s);
        b.Push(views[0]);
        b.Push(views[1]);
        var sm = b.Sample(0);
        string msg = null;
        try { var x = sm["nope"]; } catch (KeyNotFoundException e) { msg = e.Message; }
        Check(msg != null && msg.Contains("'nope'"), "sample[\"nope\"]: KeyNotFoundException naming the field (" + msg + ")");
        Check(ThrowsArg<ArgumentNullException>(() => { var x = sm[null]; }, "field"), "sample[null]: ArgumentNullException");
        Check(sm[s.Fields[0].Name] == sm.Values[0], "sample[name] of a field of the schema");
        Check(ThrowsArg<ArgumentOutOfRangeException>(() => sm.Width(s.Fields.Length), "field"), "Sample.Width past the fields");
    }
}
