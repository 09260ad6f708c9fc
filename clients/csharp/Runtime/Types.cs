// Small value types for decoded records (no UnityEngine dependency: convert with
// new UnityEngine.Vector3((float)v.X, (float)v.Y, (float)v.Z) and the like).
namespace QuantCodec
{
    /// <summary>Two doubles (a Vector of two float codecs).</summary>
    public struct Vec2
    {
        public double X, Y;
        public Vec2(double x, double y) { X = x; Y = y; }
        public override string ToString() { return "(" + X + ", " + Y + ")"; }
    }

    /// <summary>Three doubles (a Vector of three float codecs, a UnitVector).</summary>
    public struct Vec3
    {
        public double X, Y, Z;
        public Vec3(double x, double y, double z) { X = x; Y = y; Z = z; }
        public override string ToString() { return "(" + X + ", " + Y + ", " + Z + ")"; }
    }

    /// <summary>Four doubles (a Vector of four float codecs).</summary>
    public struct Vec4
    {
        public double X, Y, Z, W;
        public Vec4(double x, double y, double z, double w) { X = x; Y = y; Z = z; W = w; }
        public override string ToString() { return "(" + X + ", " + Y + ", " + Z + ", " + W + ")"; }
    }

    /// <summary>A quaternion (x, y, z, w), as Unity and Godot order it.</summary>
    public struct Quat4
    {
        public double X, Y, Z, W;
        public Quat4(double x, double y, double z, double w) { X = x; Y = y; Z = z; W = w; }
        public static readonly Quat4 Identity = new Quat4(0, 0, 0, 1);
        public override string ToString() { return "(" + X + ", " + Y + ", " + Z + ", " + W + ")"; }
    }
}
