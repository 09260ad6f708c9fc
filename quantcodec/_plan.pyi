"""Type stubs for quantcodec._plan: a schema compiled into a flat C array of slots.

A ``Plan`` is built by ``Schema`` (held by its compiled base ``_schemabase.SchemaBase``; other
modules reach it with ``_schemabase.plan_of(schema)``) and used by snapshots. Each field expands to
slots in wire order (scalar: 1; ``Vector`` of k: k; ``Quat`` / ``UnitVector``: 1 slot holding the
whole code; ``NearlyZero``: a 1-bit flag slot, then its inner's slots). A record's codes are one
row of uint64 carriers, one per slot, signed codes as two's complement; N records make the
*code matrix*, shape ``(N, nslot)``, dtype uint64. Slots governed by a NearlyZero flag of 0
hold 0 and are not on the wire.

Errors: ``SchemaError`` for a record or columns that do not fit the schema (missing / extra
field, wrong length or shape), ``TypeError`` for values of the wrong type, ``RangeError`` for
exact values out of range, zero / non-finite quaternions and unit vectors, strict-mode clamps
and encoding codes that are not valid, ``DecodeError`` for bytes or codes that are not a valid
message (naming the record, field and bit position).
"""

import sys
from collections.abc import Mapping, Sequence
from typing import Any, final


import numpy as np
import numpy.typing as npt

from ._codecs import Codec

if sys.version_info >= (3, 12):
    from collections.abc import Buffer
else:
    from typing_extensions import Buffer

__all__ = ["Plan"]

_Matrix = npt.NDArray[np.uint64]
_Columns = Mapping[str, npt.ArrayLike]
_Codes = tuple[Any, ...]

@final
class Plan:
    """A schema's fields compiled into a C array of slots."""

    max_bits: int
    """The most bits one record takes (every NearlyZero flag 1)."""
    min_bits: int
    """The fewest bits one record takes (every NearlyZero flag 0)."""
    codecs: tuple[Codec, ...]
    names: tuple[str, ...]
    strict: bool
    """Raise RangeError instead of clamping (and counting)."""

    def __init__(self, codecs: Sequence[Codec], names: Sequence[str], *, strict: bool = False) -> None: ...
    @property
    def nslot(self) -> int:
        """Slots per record: the width of the code matrix."""
    def slot_ranges(self) -> tuple[tuple[int, int], ...]:
        """Each field's (first, end) columns of the code matrix."""
    def slot_table(self) -> list[dict[str, Any]]:
        """One dict per slot: field, comp, kind ("flag" or the codec kind), bits, span, name."""

    # clamp counters (cumulative; every call that quantizes floats adds to them)
    def clamp_counts(self) -> tuple[int, ...]:
        """Clamped or substituted values per field since construction or the last reset."""
    def reset_clamps(self) -> tuple[int, ...]:
        """Zero the counters; returns what they held."""
    def uncount_clamps(self, counts: Sequence[int]) -> None:
        """Take back the counts of a call whose result was not used."""

    # one record: one Python -> C call each (METH_O: the argument is positional)
    def encode(self, record: object, /) -> bytes:
        """A mapping, an object with the field attributes, or a tuple/list in field order -> bytes
        (fields in order, LSB-first, padded with zero bits to a whole byte)."""
    def decode(self, data: Buffer, /) -> dict[str, Any]:
        """One record's bytes (any C-contiguous buffer) -> dict of values. DecodeError for a short,
        long or corrupt message."""
    def quantize(self, record: object, /) -> _Codes:
        """A record -> one code per field (tuples for vectors, (flag, inner) for NearlyZero)."""
    def roundtrip(self, record: object, /) -> dict[str, Any]:
        """A record -> the values the receiver will see."""
    def dequantize(self, codes: Sequence[Any], /) -> dict[str, Any]:
        """Codes -> dict of values; DecodeError for a code that is not valid."""
    def encode_codes(self, codes: Sequence[Any], /) -> bytes:
        """Codes -> bytes; RangeError for a code that is not valid."""
    def decode_codes(self, data: Buffer, /) -> _Codes:
        """One record's bytes -> codes (the same checks as decode)."""
    def valid(self, codes: object, /) -> bool:
        """Whether `codes` is a tuple of valid codes, one per field; never raises."""

    # batches: the code matrix
    def quantize_matrix(self, columns: _Columns, out: _Matrix | None = None,
                        owner: str = "quantize_matrix") -> tuple[_Matrix, tuple[int, ...]]:
        """Value columns ((N,) scalars, (N, k) Vector and NearlyZero-of-Vector, (N, 4) Quat,
        (N, 3) UnitVector; enum columns hold indices) -> (code matrix, clamp counts of this call per
        field). Quantizes in nogil loops; counts into the cumulative counters as well."""
    def matrix_to_codes(self, matrix: npt.ArrayLike) -> dict[str, npt.NDArray[Any]]:
        """Code matrix -> per-field code arrays in the codecs' array shapes and dtypes ((N,),
        (N, k) Vector, (N, 1 + k) NearlyZero with the flag in column 0)."""
    def codes_to_matrix(self, code_columns: _Columns, out: _Matrix | None = None) -> _Matrix:
        """Per-field code arrays -> code matrix; DecodeError for a code that is not valid."""
    def dequantize_matrix(self, matrix: npt.ArrayLike) -> dict[str, npt.NDArray[Any]]:
        """Code matrix -> value arrays (float64; exact fields in their codec's dtype, enum columns
        as indices, Bool as bool); DecodeError for a code that is not valid."""
    def matrix_records(self, matrix: npt.ArrayLike, *, codes: bool = False) -> list[Any]:
        """The records of a code matrix, one per row: value dicts (as dequantize), or with
        codes=True code tuples (as quantize); DecodeError for a code that is not valid."""
    def dequantize_valid(self, matrix: npt.ArrayLike) -> dict[str, npt.NDArray[Any]]:
        """dequantize_matrix without its validity pass, for a matrix known to be valid (a
        Snapshot's)."""
    def valid_matrix(self, matrix: npt.ArrayLike) -> tuple[int, int] | None:
        """The first (row, slot) whose code is not valid, or None."""
    def encode_matrix(self, matrix: npt.ArrayLike) -> bytes:
        """Code matrix -> the records back to back in one bit stream, padded at the end; RangeError
        for a code that is not valid."""
    def decode_matrix(self, data: Buffer, count: int, out: _Matrix | None = None) -> _Matrix:
        """`count` records back to back -> code matrix, every code checked; DecodeError naming the
        record, field and bit for a short, long or corrupt stream."""
    def encode_many(self, columns: _Columns) -> bytes:
        """quantize_matrix then encode (no second validity pass)."""
    def decode_many(self, data: Buffer, count: int) -> dict[str, npt.NDArray[Any]]:
        """decode_matrix then dequantize (no second validity pass)."""
