// Just enough of UnityEngine for run-tests to compile README.md's example (not part of the library).
namespace UnityEngine
{
    public class MonoBehaviour { }
    public struct Vector3 { public Vector3(float x, float y, float z) { } }
    public struct Quaternion { public Quaternion(float x, float y, float z, float w) { } }
    public class Transform { public Vector3 localPosition; public Quaternion localRotation; }
    public static class Debug { public static void LogError(object o) { } }
    public static class Time { public static float deltaTime; }
}
