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
}
