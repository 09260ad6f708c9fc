"""The exceptions of quantcodec.

Every error of the library is also a ``ValueError``, so ``except ValueError`` written against
plain NumPy code keeps working. ``UserError`` is not one of them: it belongs to the ``quantcodec``
command and its tools (``quantcodec.tools``).
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Tuple

__all__ = ["CodecError", "SchemaError", "RangeError", "DecodeError", "UserError"]


class CodecError(ValueError):
    """Base class of every error quantcodec raises on purpose."""


class SchemaError(CodecError):
    """Bad construction parameters, a missing field, a fingerprint or lockstep mismatch."""


class RangeError(CodecError):
    """A value that cannot be encoded: exact data out of range, a zero quaternion, strict clamping.

    The error of a snapshot's entity (``schema.snapshot(...)`` with ``bad="raise"``) has ``id``
    (the entity's id) and ``row`` (its row in the input); other RangeErrors have neither."""

    id: int
    row: int


class DecodeError(CodecError):
    """Bytes or codes that are not a valid message: short, long, corrupt or out of range.

    ``kind`` says which refusal it is, in the words of docs/wire-format.md section 14 (the same
    words every client's runner prints): ``"no-hello"``, ``"check"``, ``"hello"``, ``"schema"``,
    ``"fragment"``, ``"baseline"``, ``"malformed"`` (the default: bytes that break the format),
    ``"limits"`` (what would make a client hold more than its ``max_bytes``, section 19) or
    ``"stale"`` (a reply to the server that is not newer than one it took, section 18).
    """

    KINDS: ClassVar[Tuple[str, ...]] = ("no-hello", "check", "hello", "schema", "fragment", "baseline", "malformed", "limits", "stale")

    kind: str

    def __init__(self, *args: object, kind: str = "malformed") -> None:
        super().__init__(*args)
        if kind not in DecodeError.KINDS:
            raise ValueError(f"DecodeError: unknown kind {kind!r}")
        self.kind = kind

    def __reduce__(self) -> Tuple[Callable[..., DecodeError], Tuple[Any, ...]]:
        return (_decode_error, (self.args, self.kind))


def _decode_error(args: Tuple[object, ...], kind: str) -> DecodeError:
    return DecodeError(*args, kind=kind)


class UserError(Exception):
    """The error of the ``quantcodec`` command's tools: a mistake in the input (a bad argument or
    option value, a missing or unreadable file, a schema or trace that does not load, a missing
    optional dependency). The command prints it as one line, ``quantcodec <command>: error:
    <what>``, without a traceback, and exits with status 1. Not a ``CodecError``: the library
    never raises it."""
