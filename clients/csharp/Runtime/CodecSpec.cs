// A codec's spec as canonical JSON (what fingerprints hash), its description and its equality.
using System;
using System.Globalization;
using System.Text;

namespace QuantCodec
{
    public sealed partial class Codec
    {
        /// <summary>The spec as canonical JSON (keys sorted, floats as float.hex strings, compact):
        /// what the fingerprint and the hello's per-field hash are computed over.</summary>
        public void WriteCanonical(StringBuilder sb)
        {
            Arg.NotNull(sb, "sb", "Codec.WriteCanonical");
            sb.Append('{');
            switch (Kind)
            {
                case CodecKind.Bounded:
                    sb.Append("\"bits\":").Append(Bits).Append(",\"kind\":\"Bounded\",\"max\":");
                    Hex(sb, Max); sb.Append(",\"min\":"); Hex(sb, Min);
                    sb.Append(",\"mode\":"); Json.WriteString(sb, Mode);
                    break;
                case CodecKind.Fixed:
                    sb.Append("\"bits\":").Append(Bits).Append(",\"kind\":\"Fixed\",\"offset\":");
                    Hex(sb, Offset); sb.Append(",\"signed\":").Append(Signed ? "true" : "false").Append(",\"step\":"); Hex(sb, StepSize);
                    break;
                case CodecKind.Angle:
                    sb.Append("\"bits\":").Append(Bits).Append(",\"kind\":\"Angle\",\"signed\":").Append(Signed ? "true" : "false").Append(",\"unit\":");
                    Json.WriteString(sb, Unit);
                    break;
                case CodecKind.PowerCurve:
                    sb.Append("\"bits\":").Append(Bits).Append(",\"kind\":\"PowerCurve\",\"max\":");
                    Hex(sb, PowMax); sb.Append(",\"pow\":"); Hex(sb, Pow);
                    break;
                case CodecKind.Half: sb.Append("\"kind\":\"Half\""); break;
                case CodecKind.UInt: sb.Append("\"bits\":").Append(Bits).Append(",\"kind\":\"UInt\""); break;
                case CodecKind.Int: sb.Append("\"bits\":").Append(Bits).Append(",\"kind\":\"Int\""); break;
                case CodecKind.Bool: sb.Append("\"kind\":\"Bool\""); break;
                case CodecKind.IntRange:
                    sb.Append("\"hi\":").Append(Hi.ToString(CultureInfo.InvariantCulture)).Append(",\"kind\":\"IntRange\",\"lo\":").Append(Lo.ToString(CultureInfo.InvariantCulture));
                    break;
                case CodecKind.Enum:
                    if (Labels == null) sb.Append("\"count\":").Append(Count.ToString(CultureInfo.InvariantCulture)).Append(",\"kind\":\"Enum\"");
                    else
                    {
                        sb.Append("\"kind\":\"Enum\",\"labels\":[");
                        for (int i = 0; i < Labels.Length; i++) { if (i > 0) sb.Append(','); Json.WriteString(sb, Labels[i]); }
                        sb.Append(']');
                    }
                    break;
                case CodecKind.Quat:
                    sb.Append("\"bits\":").Append(ComponentBits).Append(",\"kind\":\"Quat\",\"mode\":"); Json.WriteString(sb, Mode);
                    break;
                case CodecKind.UnitVector: sb.Append("\"bits\":").Append(ComponentBits).Append(",\"kind\":\"UnitVector\""); break;
                case CodecKind.Grid:
                    sb.Append("\"cell_bits\":").Append(CellBits).Append(",\"cell_size\":"); Hex(sb, CellSize);
                    sb.Append(",\"kind\":\"Grid\",\"offset_bits\":").Append(OffsetBits);
                    break;
                case CodecKind.Vector:
                    sb.Append("\"codecs\":[");
                    for (int i = 0; i < Components.Length; i++) { if (i > 0) sb.Append(','); Components[i].WriteCanonical(sb); }
                    sb.Append("],\"kind\":\"Vector\"");
                    break;
                case CodecKind.NearlyZero:
                    sb.Append("\"inner\":"); Inner.WriteCanonical(sb);
                    sb.Append(",\"kind\":\"NearlyZero\",\"threshold\":"); Hex(sb, Threshold);
                    break;
            }
            sb.Append('}');
        }

        // -0.0 is written as 0.0 (docs/schema-format.md: the fingerprint is over spec(), which has 0.0)
        static void Hex(StringBuilder sb, double v) { sb.Append('"').Append(FloatBits.ToHex(FloatBits.PositiveZero(v))).Append('"'); }

        public string CanonicalJson() { var sb = new StringBuilder(); WriteCanonical(sb); return sb.ToString(); }

        /// <summary>A readable name of the codec and its parameters.</summary>
        public string Describe()
        {
            switch (Kind)
            {
                case CodecKind.Vector:
                    {
                        var sb = new StringBuilder("Vector(");
                        for (int i = 0; i < Components.Length; i++) { if (i > 0) sb.Append(", "); sb.Append(Components[i].Describe()); }
                        return sb.Append(')').ToString();
                    }
                case CodecKind.NearlyZero: return "NearlyZero(" + Inner.Describe() + ", threshold=" + Repr(Threshold) + ")";
                default: return Kind + CanonicalJson();
            }
        }

        public override string ToString() { return Describe(); }

        public override bool Equals(object o)
        {
            var c = o as Codec;
            return c != null && c.CanonicalJson() == CanonicalJson();
        }

        public override int GetHashCode() { return CanonicalJson().GetHashCode(); }
    }
}
