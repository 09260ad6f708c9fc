"""The exceptions of quantcodec.

Every one is also a ``ValueError``, so ``except ValueError`` written against plain NumPy code
keeps working.
"""

__all__ = ["CodecError", "SchemaError", "RangeError", "DecodeError"]


class CodecError(ValueError):
    """Base class of every error quantcodec raises on purpose."""


class SchemaError(CodecError):
    """Bad construction parameters, a missing field, a fingerprint or lockstep mismatch."""


class RangeError(CodecError):
    """A value that cannot be encoded: exact data out of range, a zero quaternion, strict clamping."""


class DecodeError(CodecError):
    """Bytes or codes that are not a valid message: short, long, corrupt or out of range."""
