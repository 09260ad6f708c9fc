using System;
using System.Collections.Generic;
using System.IO;
using QuantCodec;
using QuantCodec.Generated;

static partial class Tests
{
    // One adapter per generated struct: what the generic checks below need of it.
    sealed class Gen
    {
        public string Kit;          // the kit's schema name
        public string Name;
        public int SlotCount;
        public string Fingerprint;
        public Schema Schema;
        public Func<ulong[], ulong[]> Requantize;       // codes -> typed -> codes
        public Func<byte[], byte[]> Reencode;           // bytes -> Decode -> Encode
        public Func<ulong[], bool> InRange;
        public Func<Snapshot, int, ulong[]> ReadRow;    // Read(snapshot, row) -> codes
        public Func<byte[], double[]> Values;           // Decode -> its doubles, in the flat layout
        public List<KeyValuePair<double, double>> Steps;
    }

    static List<Gen> Generators()
    {
        var o = new List<Gen>();
        o.Add(new Gen
        {
            Kit = "pose", Name = "Pose", SlotCount = Pose.SlotCount, Fingerprint = Pose.Fingerprint, Schema = Pose.Schema,
            Requantize = c => { var v = Pose.Dequantize(c); var r = new ulong[Pose.SlotCount]; v.Quantize(r); return r; },
            Reencode = b => Pose.Decode(b).Encode(),
            InRange = c => Pose.AreCodesInRange(c),
            ReadRow = (s, i) => { var r = new ulong[Pose.SlotCount]; Pose.Read(s, i).Quantize(r); return r; },
            Values = b =>
            {
                var v = Pose.Decode(b);
                return new[] { v.Position.X, v.Position.Y, v.Position.Z, v.Rotation.X, v.Rotation.Y, v.Rotation.Z, v.Rotation.W,
                               v.Velocity.X, v.Velocity.Y, v.Velocity.Z, v.Yaw, v.Health, (double)(uint)v.State, v.Grounded ? 1 : 0 };
            },
            Steps = new List<KeyValuePair<double, double>>
            {
                P(Pose.PositionStepX, Pose.Schema.Fields[0].Codec.Components[0].Step), P(Pose.PositionStepY, Pose.Schema.Fields[0].Codec.Components[1].Step),
                P(Pose.PositionStepZ, Pose.Schema.Fields[0].Codec.Components[2].Step), P(Pose.RotationStep, Pose.Schema.Fields[1].Codec.Step),
                P(Pose.VelocityStepX, Pose.Schema.Fields[2].Codec.Inner.Components[0].Step), P(Pose.VelocityThreshold, Pose.Schema.Fields[2].Codec.Threshold),
                P(Pose.YawStep, Pose.Schema.Fields[3].Codec.Step), P(Pose.HealthStep, 1.0),
            },
        });
        o.Add(new Gen
        {
            Kit = "all_kinds", Name = "AllKinds", SlotCount = AllKinds.SlotCount, Fingerprint = AllKinds.Fingerprint, Schema = AllKinds.Schema,
            Requantize = c => { var v = AllKinds.Dequantize(c); var r = new ulong[AllKinds.SlotCount]; v.Quantize(r); return r; },
            Reencode = b => AllKinds.Decode(b).Encode(),
            InRange = c => AllKinds.AreCodesInRange(c),
            ReadRow = (s, i) => { var r = new ulong[AllKinds.SlotCount]; AllKinds.Read(s, i).Quantize(r); return r; },
            Values = b =>
            {
                var v = AllKinds.Decode(b);
                return new[] { v.BEnd, v.BBins, v.BOne, v.B32, v.FxS, v.FxU, v.Fx64, v.Ang, v.AngSd, v.Pc, v.Pc3, v.Half,
                               FloatBits.U64ToDouble(v.U64), v.U5, v.I8, (double)v.I64, v.Flag ? 1 : 0, (double)(uint)v.Mode, v.Count, (double)(uint)v.Single,
                               v.QSmall.X, v.QSmall.Y, v.QSmall.Z, v.QSmall.W, v.QBig.X, v.QBig.Y, v.QBig.Z, v.QBig.W,
                               v.Normal.X, v.Normal.Y, v.Normal.Z, v.Dir32.X, v.Dir32.Y, v.Dir32.Z, v.Grid, v.Nz, v.Nzv.X, v.Nzv.Y, v.Nzv.Z,
                               v.Vec.X, v.Vec.Y, v.Vec.Z, (double)v.Hp, (double)v.Temp, (double)v.Wide, v.BMid, v.QMid.X, v.QMid.Y, v.QMid.Z, v.QMid.W };
            },
            Steps = new List<KeyValuePair<double, double>>
            {
                P(AllKinds.BEndStep, F(AllKinds.Schema, "b_end").Step), P(AllKinds.BBinsStep, F(AllKinds.Schema, "b_bins").Step),
                P(AllKinds.B32Step, F(AllKinds.Schema, "b_32").Step), P(AllKinds.FxSStep, F(AllKinds.Schema, "fx_s").Step),
                P(AllKinds.FxUStep, F(AllKinds.Schema, "fx_u").Step), P(AllKinds.Fx64Step, F(AllKinds.Schema, "fx_64").Step),
                P(AllKinds.AngStep, F(AllKinds.Schema, "ang").Step), P(AllKinds.AngSdStep, F(AllKinds.Schema, "ang_sd").Step),
                P(AllKinds.PcStep, F(AllKinds.Schema, "pc").Step), P(AllKinds.Pc3Step, F(AllKinds.Schema, "pc3").Step),
                P(AllKinds.HalfStep, F(AllKinds.Schema, "half").Step), P(AllKinds.QSmallStep, F(AllKinds.Schema, "q_small").Step),
                P(AllKinds.QBigStep, F(AllKinds.Schema, "q_big").Step), P(AllKinds.NormalStep, F(AllKinds.Schema, "normal").Step),
                P(AllKinds.Dir32Step, F(AllKinds.Schema, "dir32").Step), P(AllKinds.GridStep, F(AllKinds.Schema, "grid").Step),
                P(AllKinds.NzStep, F(AllKinds.Schema, "nz").Step), P(AllKinds.NzThreshold, F(AllKinds.Schema, "nz").Threshold),
                P(AllKinds.NzvStepX, F(AllKinds.Schema, "nzv").Inner.Components[0].Step), P(AllKinds.NzvStepY, F(AllKinds.Schema, "nzv").Inner.Components[1].Step),
                P(AllKinds.NzvStepZ, F(AllKinds.Schema, "nzv").Inner.Components[2].Step), P(AllKinds.NzvThreshold, F(AllKinds.Schema, "nzv").Threshold),
                P(AllKinds.VecStepX, F(AllKinds.Schema, "vec").Components[0].Step), P(AllKinds.VecStepY, F(AllKinds.Schema, "vec").Components[1].Step),
                P(AllKinds.HpStep, F(AllKinds.Schema, "hp").Step), P(AllKinds.TempStep, F(AllKinds.Schema, "temp").Step), P(AllKinds.WideStep, F(AllKinds.Schema, "wide").Step),
                P(AllKinds.BMidStep, F(AllKinds.Schema, "b_mid").Step), P(AllKinds.QMidStep, F(AllKinds.Schema, "q_mid").Step),
            },
        });
        o.Add(new Gen
        {
            Kit = "one_bit", Name = "OneBit", SlotCount = OneBit.SlotCount, Fingerprint = OneBit.Fingerprint, Schema = OneBit.Schema,
            Requantize = c => { var v = OneBit.Dequantize(c); var r = new ulong[OneBit.SlotCount]; v.Quantize(r); return r; },
            Reencode = b => OneBit.Decode(b).Encode(),
            InRange = c => OneBit.AreCodesInRange(c),
            ReadRow = (s, i) => { var r = new ulong[OneBit.SlotCount]; OneBit.Read(s, i).Quantize(r); return r; },
            Values = b => new[] { OneBit.Decode(b).On ? 1.0 : 0.0 },
            Steps = new List<KeyValuePair<double, double>> { P(OneBit.OnStep, 1.0) },
        });
        return o;
    }

    static KeyValuePair<double, double> P(double a, double b) { return new KeyValuePair<double, double>(a, b); }
    static Codec F(Schema s, string name) { return s.Fields[s.FieldIndex(name)].Codec; }

    static void Generated()
    {
        var manifest = Load("conformance/manifest.json");
        foreach (var g in Generators())
        {
            var kit = manifest.Get("schemas").Get(g.Kit);
            var schema = Schema.Load(Path.Combine(root, "conformance", kit.Get("file").Text));
            Check(g.Fingerprint == schema.Fingerprint && g.Schema.Fingerprint == schema.Fingerprint, g.Name + ": the fingerprint constant");
            Check(g.SlotCount == schema.Slots.Length, g.Name + ": SlotCount");
            for (int i = 0; i < g.Steps.Count; i++)
                Check(Bits(g.Steps[i].Key) == Bits(g.Steps[i].Value), g.Name + ": step constant " + i + " " + FloatBits.ToHex(g.Steps[i].Key) + " vs the runtime's " + FloatBits.ToHex(g.Steps[i].Value));
            // the kit's records: Decode -> values equal the runtime's, Quantize -> the same codes, Encode -> the same bytes
            var rec = Load("conformance/records/" + g.Kit + ".json");
            int quatTwoCycle = 0;
            foreach (var r in rec.Get("valid").Items)
            {
                var bytes = FromHex(r.Get("hex").Text);
                var codes = schema.DecodeCodes(bytes);
                Check(g.InRange(codes), g.Name + ": AreCodesInRange of a valid record");
                var flat = schema.Dequantize(codes);
                var typed = g.Values(bytes);
                bool eq = typed.Length == flat.Length;
                for (int i = 0; eq && i < flat.Length; i++) eq = Bits(typed[i]) == Bits(flat[i]);
                Check(eq, g.Name + ": typed values of " + r.Get("hex").Text + " equal the runtime's bit for bit");
                var back = g.Requantize(codes);
                bool same = true, cycle = true;
                for (int s = 0; s < codes.Length; s++)
                {
                    if (back[s] == codes[s]) continue;
                    same = false;
                    // a quaternion code need not be its own value's code: valid() allows a step of
                    // slack, and near a tie of the two largest components the value may requantize
                    // to the tie's other code (docs/codecs.md); Python gives the same codes (the
                    // kit's values pin quantize), and the requantized code is stable
                    var sl = schema.Slots[s];
                    if (sl.Class == SlotClass.Uvec)
                    {
                        // an octahedral code may move once on the way back (docs/codecs.md: 0.0002%
                        // of random directions), then it is stable
                        double ux, uy, uz;
                        sl.Codec.DequantizeUnitVector(back[s], out ux, out uy, out uz);
                        cycle &= sl.Codec.QuantizeUnitVector(ux, uy, uz) == back[s];
                        continue;
                    }
                    if (sl.Class != SlotClass.Quat) { cycle = false; continue; }
                    double x, y, z, w;
                    sl.Codec.DequantizeQuat(back[s], out x, out y, out z, out w);
                    ulong again = sl.Codec.QuantizeQuat(x, y, z, w);
                    cycle &= again == back[s] || again == codes[s];
                }
                if (!same && cycle) quatTwoCycle++;
                Check(same || cycle, g.Name + ": Quantize(Dequantize(codes)) of " + r.Get("hex").Text);
                if (same) Check(ToHex(g.Reencode(bytes)) == r.Get("hex").Text, g.Name + ": Decode then Encode gives the bytes back");
            }
            Check(quatTwoCycle * 4 <= rec.Get("valid").Items.Count, g.Name + ": records whose quaternion requantizes to another code: " + quatTwoCycle);
            foreach (var r in rec.Get("invalid").Items)
            {
                var bytes = FromHex(r.Get("hex").Text);
                Check(Throws<DecodeException>(() => g.Reencode(bytes)), g.Name + ": Decode refuses " + r.Get("why").Text);
            }
            // out of range codes
            var zero = new ulong[g.SlotCount];
            bool anyBad = false;
            for (int s = 0; s < g.SlotCount; s++)
            {
                var c = (ulong[])zero.Clone();
                c[s] = ulong.MaxValue - 1;
                bool valid = schema.Valid(c);
                Check(g.InRange(c) == valid, g.Name + ": AreCodesInRange agrees with the schema, slot " + s);
                anyBad |= !valid;
            }
            Check(anyBad || g.SlotCount == 1, g.Name + ": some code refused");
            Check(!g.InRange(new ulong[0]), g.Name + ": AreCodesInRange of too few codes");
            // Read from the kit's streams of this schema
            int rows = 0;
            bool readOk = true;
            foreach (var st in manifest.Get("streams").Items)
            {
                if (st.Get("schema").Text != kit.Get("file").Text) continue;
                var dec = new SnapshotDecoder(g.Schema);
                foreach (var d in ReadDatagrams(Path.Combine(root, "conformance", st.Get("datagrams").Text)))
                {
                    if (dec.Receive(d) != Received.Snapshot) continue;
                    var snap = dec.LastSnapshot;
                    for (int i = 0; i < snap.Count; i += 7)
                    {
                        var want = new ulong[g.SlotCount];
                        Array.Copy(snap.Codes, i * g.SlotCount, want, 0, g.SlotCount);
                        var got = g.ReadRow(snap, i);
                        for (int s = 0; s < g.SlotCount; s++)
                            if (got[s] != want[s] && schema.Slots[s].Class != SlotClass.Quat) readOk = false;
                        rows++;
                    }
                }
            }
            Check(readOk && rows > 0, g.Name + ": Read of " + rows + " decoded rows");
        }
        // the generated golden of the SPEC section 4 schema (tests/golden/schema/player_state.json)
        var ps = Load("tests/golden/schema/player_state.json");
        Check(PlayerState.Fingerprint == ps.Get("fingerprint").Text, "PlayerState: the fingerprint constant");
        foreach (var r in ps.Get("records").Items)
        {
            var v = PlayerState.Decode(FromHex(r.Get("hex").Text));
            Check(ToHex(v.Encode()) == r.Get("hex").Text, "PlayerState: Decode then Encode " + r.Get("hex").Text);
        }
        var p = new PlayerState
        {
            Position = new Vec3(100.5, 20.25, -300.0), Rotation = new Quat4(0.0, 0.0, 0.3826834, 0.9238795),
            Velocity = new Vec3(1.5, 0.0, -2.0), Yaw = 1.25, Health = 100, State = PlayerState.StateLabel.Run, Grounded = true,
        };
        Check(ToHex(p.Encode()) == ps.Get("records").Items[0].Get("hex").Text, "PlayerState: a typed record encodes as Python's");
        p.Velocity = new Vec3(0.0, 0.004, -0.01);
        p.Health = 0; p.State = PlayerState.StateLabel.Idle; p.Grounded = false;
        Check(ToHex(p.Encode()) == ps.Get("records").Items[1].Get("hex").Text, "PlayerState: a resting NearlyZero costs one bit, as Python's");
        var rest = PlayerState.Decode(p.Encode());
        Check(rest.Velocity.X == 0.0 && rest.Velocity.Y == 0.0 && rest.Velocity.Z == 0.0, "PlayerState: a resting velocity decodes to zero");
        p.Health = 256;
        Check(Throws<RangeException>(() => p.Encode()), "PlayerState: health 256 does not fit 8 bits");
        p.Health = 1; p.State = (PlayerState.StateLabel)7;
        Check(Throws<RangeException>(() => p.Encode()), "PlayerState: an enum value beyond the labels");
        Check(Throws<SchemaException>(() => PlayerState.CheckFingerprint("f521d14151c27a36")), "PlayerState: CheckFingerprint refuses another schema's");
        // a decoder made from a generated struct refuses a hello of another schema
        var pose = ReadDatagrams(Path.Combine(root, "conformance/streams/pose_clean.bin"));
        var pdec = PlayerState.CreateDecoder();
        Check(pdec.Receive(pose[0]) == Received.Refused && pdec.LastErrorKind == "schema", "PlayerState decoder: a Pose hello is another schema");
    }
}
