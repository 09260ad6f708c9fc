using System;

namespace QuantCodec
{
    /// <summary>Base of the library's errors (Python's qc.CodecError).</summary>
    public class CodecException : Exception
    {
        public CodecException(string m) : base(m) { }
    }

    /// <summary>A bad schema or codec parameter, a schema file error, a fingerprint mismatch.</summary>
    public class SchemaException : CodecException
    {
        public SchemaException(string m) : base(m) { }
    }

    /// <summary>A value an exact codec cannot hold, a zero or non-finite quaternion / unit vector,
    /// a code an encoder is given that is not valid.</summary>
    public class RangeException : CodecException
    {
        public RangeException(string m) : base(m) { }
    }

    /// <summary>Bytes that cannot be decoded. <see cref="Kind"/> is one of the wire format's refusal
    /// kinds (no-hello, check, hello, schema, fragment, baseline, malformed, limits), or null for a record.</summary>
    public class DecodeException : CodecException
    {
        public readonly string Kind;
        public DecodeException(string m) : base(m) { }
        public DecodeException(string kind, string m) : base(m) { Kind = kind; }
    }

    /// <summary>The argument checks of the public API, as .NET's own methods make them: a null
    /// argument is ArgumentNullException naming the parameter; an (array, offset, count) slice past
    /// the array, or an index out of range, is ArgumentOutOfRangeException, and an array too short
    /// for what is written into it ArgumentException, each naming the parameter and the numbers.</summary>
    internal static class Arg
    {
        internal static void NotNull(object o, string name, string who)
        {
            if (o == null) throw new ArgumentNullException(name, who + ": " + name + " is null");
        }

        /// <summary>a[offset .. offset + count) must lie in a (a not null, offset and count not negative).</summary>
        internal static void Slice(Array a, int offset, int count, string name, string offsetName, string countName, string who)
        {
            if (a == null) throw new ArgumentNullException(name, who + ": " + name + " is null");
            if (offset < 0 || count < 0 || count > a.Length - offset)
                throw new ArgumentOutOfRangeException(offset < 0 || offset > a.Length ? offsetName : countName,
                    who + ": " + name + " slice out of range: offset " + offset + ", length " + count + " of " + a.Length + (a is byte[] ? " bytes" : " elements"));
        }

        /// <summary>a must have room for need elements from offset (a not null).</summary>
        internal static void Room(Array a, int offset, int need, string name, string offsetName, string who)
        {
            if (a == null) throw new ArgumentNullException(name, who + ": " + name + " is null");
            if (offset < 0 || offset > a.Length)
                throw new ArgumentOutOfRangeException(offsetName, who + ": " + offsetName + " " + offset + " is outside " + name + " (" + a.Length + " elements)");
            if (a.Length - offset < need)
                throw new ArgumentException(who + ": " + name + " is too short: " + need + " elements needed from offset " + offset + ", it has " + (a.Length - offset), name);
        }

        /// <summary>index must be in 0 .. count - 1.</summary>
        internal static void Index(int index, int count, string name, string who)
        {
            if ((uint)index >= (uint)count)
                throw new ArgumentOutOfRangeException(name, who + ": " + name + " " + index + " is outside 0.." + (count - 1) + (count == 0 ? " (there are none)" : ""));
        }
    }
}
