"""The bit stream (SPEC section 3): BitWriter, BitReader, pack, unpack.

Bit order is LSB-first: the first bit written is bit 0 of byte 0 and a value is written least
significant bit first. Expected bytes come from hand computation or from two independent
references written here: a Python big-int writer and a NumPy bit-matrix packer.
"""

import sys
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import quantcodec as qc
from quantcodec import BitReader, BitWriter, pack, unpack

INT_DTYPES = ["u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8"]


# ------------------------------------------------------------------------------ references

class RefWriter:
    """The layout by definition: value v of n bits at bit position p adds v << p to one big int."""

    def __init__(self):
        self.acc = 0
        self.nbits = 0

    def write(self, value, bits):
        assert 0 <= value < 1 << bits
        self.acc |= value << self.nbits
        self.nbits += bits

    def align(self):
        self.nbits += -self.nbits % 8

    def getvalue(self):
        return self.acc.to_bytes((self.nbits + 7) // 8, "little")


def ref_pack(values, bits):
    """Plain-Python packer: the reference pack() is compared with."""
    w = RefWriter()
    for v in values:
        w.write(int(v), bits)
    return w.getvalue()


def ref_pack_bitmatrix(codes, bits):
    """A second, vectorized reference: expand every value to its bits, then np.packbits."""
    c = np.asarray(codes).astype(np.uint64).ravel()
    if bits == 0 or c.size == 0:
        return b""
    shifts = np.arange(bits, dtype=np.uint64)
    matrix = ((c[:, None] >> shifts) & np.uint64(1)).astype(np.uint8)
    return np.packbits(matrix.ravel(), bitorder="little").tobytes()


def random_codes(rng, n, bits, dtype=np.uint64):
    if bits == 0:
        return np.zeros(n, dtype=dtype)
    hi = np.uint64(2**64 - 1) if bits == 64 else np.uint64((1 << bits) - 1)
    return (rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False) & hi).astype(dtype)


# ----------------------------------------------------------------------- exact bytes, order

def test_spec_example_gives_0x8d():
    w = BitWriter()
    w.write(5, 3)
    w.write(17, 5)
    assert w.getvalue() == b"\x8d"
    assert w.bit_length == 8
    r = BitReader(b"\x8d")
    assert r.read(3) == 5
    assert r.read(5) == 17
    r.finish()


def test_hand_computed_bytes():
    w = BitWriter()
    w.write(1, 1)
    assert w.getvalue() == b"\x01"            # first bit is bit 0 of byte 0
    w = BitWriter()
    w.write(0x1234, 16)
    assert w.getvalue() == b"\x34\x12"        # least significant byte first
    w = BitWriter()
    w.write(0xABC, 12)
    w.write(0xD, 4)
    assert w.getvalue() == b"\xbc\xda"
    w = BitWriter()
    for flag in (True, True, True, False, True):
        w.write_bool(flag)
    assert w.getvalue() == b"\x17"            # 0b10111
    w = BitWriter()
    w.write_signed(-1, 4)
    w.write_signed(-8, 4)
    assert w.getvalue() == b"\x8f"
    w = BitWriter()
    w.write(1, 1)
    w.align()
    w.write(1, 1)
    assert w.getvalue() == b"\x01\x01"
    assert w.bit_length == 9
    # 5, 17, 3 in 5 bits: 00101 | 10001 | 00011 -> 0x25 0x0e
    assert pack(np.array([5, 17, 3]), 5) == b"\x25\x0e"
    assert pack([1, 0, 1, 1, 0, 0, 0, 1, 1], 1) == b"\x8d\x01"
    assert pack(np.array([0x0102030405060708], np.uint64), 64) == bytes([8, 7, 6, 5, 4, 3, 2, 1])


def test_last_byte_is_zero_padded():
    w = BitWriter()
    w.write(0b101, 3)
    assert w.getvalue() == b"\x05"
    assert w.bit_length == 3
    w.align()
    assert w.bit_length == 8
    w.align()                                  # already aligned: nothing
    assert w.bit_length == 8
    assert w.getvalue() == b"\x05"


def test_64_bit_values_at_every_offset():
    for offset in range(9):
        w = BitWriter()
        ref = RefWriter()
        w.write((1 << offset) - 1, offset)
        ref.write((1 << offset) - 1, offset)
        for v in (2**64 - 1, 0x8000000000000001, 0, 0x0123456789ABCDEF):
            w.write(v, 64)
            ref.write(v, 64)
        assert w.getvalue() == ref.getvalue()
        r = BitReader(w.getvalue())
        assert r.read(offset) == (1 << offset) - 1
        assert [r.read(64) for _ in range(4)] == [2**64 - 1, 0x8000000000000001, 0, 0x0123456789ABCDEF]
        r.finish()


def test_one_bit_then_all_ones_64():
    w = BitWriter()
    w.write(1, 1)
    w.write(2**64 - 1, 64)
    assert w.getvalue() == b"\xff" * 8 + b"\x01"


def test_zero_bit_writes_and_reads():
    w = BitWriter()
    w.write(0, 0)
    w.write_signed(0, 0)
    w.write_array(np.zeros(5, np.uint8), 0)
    assert w.bit_length == 0
    assert w.getvalue() == b""
    r = BitReader(b"")
    assert r.read(0) == 0
    assert r.read_signed(0) == 0
    assert r.read_array(3, 0).tolist() == [0, 0, 0]
    r.finish()
    with pytest.raises(qc.RangeError, match=r"value 1 does not fit in 0 bits"):
        w.write(1, 0)


@pytest.mark.parametrize("bits", range(1, 65))
def test_signed_extremes_round_trip(bits):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    values = sorted({lo, hi, 0, -1 if bits > 1 else 0, lo + 1 if bits > 1 else lo})
    w = BitWriter()
    for v in values:
        w.write_signed(v, bits)
    ref = RefWriter()
    for v in values:
        ref.write(v & ((1 << bits) - 1), bits)    # two's complement in `bits` bits
    assert w.getvalue() == ref.getvalue()
    r = BitReader(w.getvalue())
    assert [r.read_signed(bits) for _ in values] == values
    with pytest.raises(qc.RangeError, match=rf"value {hi + 1} does not fit in {bits} signed bits"):
        w.write_signed(hi + 1, bits)
    with pytest.raises(qc.RangeError, match=rf"value {lo - 1} does not fit in {bits} signed bits"):
        w.write_signed(lo - 1, bits)


# ------------------------------------------------------------------------- writer errors

@pytest.mark.parametrize("value, bits", [(8, 3), (-1, 3), (2**64, 64), (-1, 64), (256, 8), (2**100, 10)])
def test_write_value_that_does_not_fit_raises(value, bits):
    w = BitWriter()
    with pytest.raises(ValueError, match=rf"value {value} does not fit in {bits} bits") as e:
        w.write(value, bits)
    assert isinstance(e.value, qc.RangeError)
    assert w.bit_length == 0                    # nothing written, nothing masked


def test_write_negative_suggests_write_signed():
    with pytest.raises(qc.RangeError, match="write_signed"):
        BitWriter().write(-5, 8)


def test_write_accepts_integers_of_every_kind():
    w = BitWriter()
    w.write(2**64 - 1, 64)
    w.write(np.uint64(2**64 - 1), 64)
    w.write(np.int8(3), 2)
    w.write(np.uint16(7), 3)
    w.write(True, 1)
    w.write_signed(np.int64(-(2**63)), 64)
    w.write(5, np.int32(3))
    r = BitReader(w.getvalue())
    assert [r.read(64), r.read(64), r.read(2), r.read(3), r.read(1), r.read_signed(64), r.read(3)] == [
        2**64 - 1, 2**64 - 1, 3, 7, 1, -(2**63), 5]


@pytest.mark.parametrize("bad", [1.0, np.float64(2.0), "3", None, [1]])
def test_write_non_integer_value_is_type_error(bad):
    with pytest.raises(TypeError, match="value must be an integer"):
        BitWriter().write(bad, 8)
    with pytest.raises(TypeError, match="value must be an integer"):
        BitWriter().write_signed(bad, 8)


@pytest.mark.parametrize("bits", [-1, 65, 1000, -(2**70)])
def test_bits_out_of_range_is_value_error(bits):
    msg = rf"bits must be between 0 and 64, got {bits}"
    with pytest.raises(ValueError, match=msg):
        BitWriter().write(0, bits)
    with pytest.raises(ValueError, match=msg):
        BitWriter().write_signed(0, bits)
    with pytest.raises(ValueError, match=msg):
        BitWriter().write_array([0], bits)
    with pytest.raises(ValueError, match=msg):
        BitReader(b"\0" * 16).read(bits)
    with pytest.raises(ValueError, match=msg):
        BitReader(b"\0" * 16).read_signed(bits)
    with pytest.raises(ValueError, match=msg):
        BitReader(b"\0" * 16).read_array(1, bits)
    with pytest.raises(ValueError, match=msg):
        pack([0], bits)
    with pytest.raises(ValueError, match=msg):
        unpack(b"\0" * 16, 1, bits)


@pytest.mark.parametrize("bits", [3.0, "3", None])
def test_bits_not_an_integer_is_type_error(bits):
    with pytest.raises(TypeError, match="bits must be an integer"):
        BitWriter().write(0, bits)
    with pytest.raises(TypeError, match="bits must be an integer"):
        BitReader(b"\0").read(bits)
    with pytest.raises(TypeError, match="bits must be an integer"):
        pack([0], bits)


def test_write_bool_uses_truthiness():
    w = BitWriter()
    for flag in (True, False, 1, 0, np.bool_(True), "", [0]):
        w.write_bool(flag)
    r = BitReader(w.getvalue())
    assert [r.read_bool() for _ in range(7)] == [True, False, True, False, True, False, True]
    assert type(BitReader(b"\1").read_bool()) is bool


# --------------------------------------------------------------------------- write_array

@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_write_array_matches_single_writes_for_every_dtype(dtype):
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    bits = min(info.bits - (info.min < 0), 13)
    codes = rng.integers(0, 1 << bits, 50).astype(dtype)
    for offset in (0, 3, 8):
        w = BitWriter()
        ref = RefWriter()
        w.write(0, offset)
        ref.write(0, offset)
        w.write_array(codes, bits)
        for c in codes:
            ref.write(int(c), bits)
        assert w.getvalue() == ref.getvalue()


def test_write_array_negative_names_the_index():
    w = BitWriter()
    w.write(3, 2)
    with pytest.raises(qc.RangeError, match=r"codes\[2\] = -3 is negative") as e:
        w.write_array(np.array([1, 2, -3, 4], np.int16), 8)
    assert isinstance(e.value, ValueError)
    assert w.bit_length == 2 and w.getvalue() == b"\x03"     # unchanged
    with pytest.raises(qc.RangeError, match=r"codes\[0\] = -1 is negative"):
        w.write_array(np.array([-1], np.int64), 64)
    with pytest.raises(qc.RangeError, match=r"codes\[1, 0\] = 256 does not fit in 8 bits \(0 <= code <= 255\)"):
        w.write_array(np.array([[1, 2], [256, 3]]), 8)
    w.write(1, 1)
    assert w.getvalue() == b"\x07"


def test_pack_misfit_names_the_first_bad_index():
    codes = np.arange(100, dtype=np.uint32)
    codes[70] = 1 << 20
    codes[80] = 1 << 21
    with pytest.raises(qc.RangeError, match=r"codes\[70\] = 1048576 does not fit in 20 bits"):
        pack(codes, 20)
    with pytest.raises(qc.RangeError, match=r"codes\[3\] = 2 does not fit in 1 bits"):
        pack([0, 1, 1, 2], 1)
    with pytest.raises(qc.RangeError, match=r"codes\[0\] = 18446744073709551615 does not fit in 63 bits"):
        pack(np.array([2**64 - 1], np.uint64), 63)
    with pytest.raises(qc.RangeError, match=r"codes\[1\] = 1 does not fit in 0 bits"):
        pack([0, 1], 0)


@pytest.mark.parametrize("bad", [np.array([1.5]), np.array(["a"]), np.array([1 + 2j]), np.array([None])])
def test_non_integer_arrays_are_type_errors(bad):
    with pytest.raises(TypeError, match="codes must be an array of integers"):
        pack(bad, 8)
    with pytest.raises(TypeError, match="codes must be an array of integers"):
        BitWriter().write_array(bad, 8)


def test_array_inputs_of_every_layout_are_read_not_modified():
    rng = np.random.default_rng(7)
    base = random_codes(rng, 301, 20, np.uint32)
    expected = ref_pack(base, 20)
    readonly = base.copy()
    readonly.flags.writeable = False
    strided = np.repeat(base, 3)[::3]
    reversed_ = base[::-1].copy()[::-1]
    variants = [base, base.tolist(), readonly, strided, reversed_, base.astype(">u4"),
                base.astype("<u8"), base.astype(">i8"), base.astype(np.int32)]
    for v in variants:
        before = np.array(v, copy=True)
        assert pack(v, 20) == expected
        w = BitWriter()
        w.write_array(v, 20)
        assert w.getvalue() == expected
        assert np.array_equal(np.asarray(v), before)
    matrix = base[:300].reshape(20, 15)
    assert pack(np.asfortranarray(matrix), 20) == ref_pack(matrix.ravel(), 20)   # C order
    assert pack(np.array(5), 3) == b"\x05"                                        # 0-d
    assert pack(np.array([True, False, True]), 1) == b"\x05"                      # bools are 0/1
    assert pack([], 7) == b""
    assert pack(np.array([], np.int8), 64) == b""


# --------------------------------------------------------------------------- pack/unpack

@pytest.mark.parametrize("bits", range(65))
def test_pack_matches_reference_for_every_width(bits):
    rng = np.random.default_rng(bits)
    for n in (0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 200, 1001):
        codes = random_codes(rng, n, bits)
        if n and bits:
            codes[0] = (1 << bits) - 1          # all ones: every bit lands somewhere
        data = pack(codes, bits)
        assert len(data) == (n * bits + 7) // 8
        assert data == ref_pack_bitmatrix(codes, bits)
        if n <= 65:
            assert data == ref_pack(codes, bits)
        out = unpack(data, n, bits)
        assert out.dtype == (np.uint32 if bits <= 32 else np.uint64)
        assert out.shape == (n,)
        assert np.array_equal(out, codes)
        for dtype in ("u4", "u8", "i4", "i8"):      # the unrolled input paths, any dtype
            info = np.iinfo(dtype)
            if info.bits - (info.min < 0) >= bits:
                assert pack(codes.astype(dtype), bits) == data


def test_pack_large_arrays_match_reference():
    rng = np.random.default_rng(3)
    for bits in (1, 3, 5, 8, 10, 12, 13, 16, 18, 20, 24, 28, 31, 32, 33, 40, 57, 58, 63, 64):
        dtype = np.uint32 if bits <= 32 else np.uint64
        codes = random_codes(rng, 20_011, bits, dtype)
        data = pack(codes, bits)
        assert data == ref_pack_bitmatrix(codes, bits)
        assert np.array_equal(unpack(data, codes.size, bits), codes)
        r = BitReader(data)
        assert np.array_equal(r.read_array(codes.size, bits), codes)
        r.finish()


def test_unpack_too_short_is_decode_error():
    with pytest.raises(qc.DecodeError, match=r"unpack of 3 values of 8 bits needs 24 bits \(3 bytes\) "
                                              r"but the data has 2 bytes"):
        unpack(b"ab", 3, 8)
    with pytest.raises(qc.DecodeError):
        unpack(pack(np.arange(10), 20)[:-1], 10, 20)
    with pytest.raises(qc.DecodeError, match="values of 8 bits"):
        unpack(b"abc", 2**40, 8)                 # checked before allocating
    with pytest.raises(qc.DecodeError):
        unpack(b"abc", 2**62, 64)


def test_unpack_ignores_trailing_bytes_and_takes_any_buffer():
    data = pack(np.array([1, 2, 3]), 20) + b"\xff\xff"
    for buf in (data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
        assert unpack(buf, 3, 20).tolist() == [1, 2, 3]
    assert unpack(data, 0, 20).tolist() == []
    assert unpack(b"", 4, 0).tolist() == [0, 0, 0, 0]


def test_unpack_count_errors():
    with pytest.raises(ValueError, match="count must be >= 0, got -1"):
        unpack(b"abc", -1, 8)
    with pytest.raises(TypeError, match="count must be an integer"):
        unpack(b"abc", 1.0, 8)
    with pytest.raises(ValueError, match="count must be >= 0"):
        BitReader(b"abc").read_array(-5, 1)


def test_unpack_into_out():
    codes = np.array([1, 200, 3, 77, 0], np.uint32)
    data = pack(codes, 9)
    for dtype in ("u2", "u4", "u8", "i2", "i4", "i8"):
        out = np.full(5, 99, dtype)
        assert unpack(data, 5, 9, out=out) is out
        assert out.tolist() == codes.tolist()
    strided = np.zeros(10, np.int64)[::2]
    unpack(data, 5, 9, out=strided)
    assert strided.tolist() == codes.tolist()
    with pytest.raises(TypeError, match="cannot hold 9-bit codes"):
        unpack(data, 5, 9, out=np.zeros(5, np.uint8))
    with pytest.raises(TypeError, match="cannot hold 8-bit codes"):
        unpack(data, 5, 8, out=np.zeros(5, np.int8))
    with pytest.raises(ValueError, match=r"out has shape \(4,\), expected \(5,\)"):
        unpack(data, 5, 9, out=np.zeros(4, np.uint32))
    with pytest.raises(TypeError, match="native byte order"):
        unpack(data, 5, 9, out=np.zeros(5, ">u4" if sys.byteorder == "little" else "<u4"))
    with pytest.raises(TypeError, match="integer array"):
        unpack(data, 5, 9, out=np.zeros(5, np.float64))
    with pytest.raises(TypeError, match="out must be a NumPy array"):
        unpack(data, 5, 9, out=[0] * 5)
    readonly = np.zeros(5, np.uint32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        unpack(data, 5, 9, out=readonly)
    r = BitReader(data)
    out = np.zeros(2, np.uint16)
    assert r.read_array(2, 9, out=out) is out and out.tolist() == [1, 200]


# ------------------------------------------------------------------------------- reader

def test_reader_over_every_buffer_kind():
    data = bytes([0x8D, 0x34, 0x12])
    arr16 = np.array([0x348D, 0x0012], dtype="<u2")            # raw bytes 8d 34 12 00
    for buf in (data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8), arr16,
                np.frombuffer(data + b"\0", dtype="<u4"), memoryview(bytearray(data)).toreadonly()):
        r = BitReader(buf)
        assert (r.read(3), r.read(5), r.read(16)) == (5, 17, 0x1234)
    assert BitReader(arr16).bits_remaining == 32


def test_reader_does_not_copy():
    buf = bytearray(b"\x00\x00")
    r = BitReader(buf)
    buf[0] = 0xAB
    assert r.read(8) == 0xAB
    arr = np.zeros(4, np.uint8)
    r = BitReader(arr)
    arr[0] = 7
    assert r.read(3) == 7


def test_reader_holds_its_source():
    buf = bytearray(b"\x01\x02")
    r = BitReader(buf)
    with pytest.raises(BufferError):
        buf.extend(b"\x03")                      # the reader's view pins the memory
    del buf
    assert r.read(16) == 0x0201
    del r


def test_reader_rejects_non_contiguous_and_non_buffers():
    with pytest.raises(ValueError, match="C-contiguous"):
        BitReader(memoryview(b"abcdef")[::2])
    with pytest.raises(ValueError, match="C-contiguous"):
        BitReader(np.zeros((4, 4), np.uint8)[:, 1])
    with pytest.raises(ValueError, match="C-contiguous"):
        unpack(np.zeros((4, 4), np.uint8).T, 1, 8)
    with pytest.raises(TypeError):
        BitReader("abc")
    with pytest.raises(TypeError):
        BitReader(12)


def test_read_past_end_says_where_and_keeps_position():
    r = BitReader(b"\xff\xff\xff")
    r.read(17)
    with pytest.raises(qc.DecodeError, match=r"^read of 9 bits at bit 17 runs past the end of the data \(24 bits\)$"):
        r.read(9)
    assert r.bit_position == 17 and r.bits_remaining == 7
    with pytest.raises(qc.DecodeError, match="at bit 17"):
        r.read_signed(8)
    with pytest.raises(qc.DecodeError, match=r"read_array of 2 values of 4 bits \(8 bits\) at bit 17"):
        r.read_array(2, 4)
    with pytest.raises(qc.DecodeError, match="at bit 17"):
        r.read_array(2**40, 8)
    assert r.bit_position == 17
    assert r.read(7) == 0x7F
    with pytest.raises(qc.DecodeError, match="read of 1 bit at bit 24"):
        r.read_bool()
    assert isinstance(qc.DecodeError("x"), ValueError)


def test_read_signed_sign_extends():
    r = BitReader(bytes([0b11111110, 0x80]))
    assert r.read_signed(1) == 0
    assert r.read_signed(7) == -1
    assert r.read_signed(8) == -128


def test_align_and_positions():
    r = BitReader(b"\xff\x02\x00")
    assert (r.bit_position, r.bits_remaining) == (0, 24)
    r.align()
    assert r.bit_position == 0
    r.read(3)
    r.align()                                    # skips bits 3..7 unchecked
    assert r.bit_position == 8
    assert r.read(8) == 2
    r.align()
    assert (r.bit_position, r.bits_remaining) == (16, 8)


def test_finish():
    BitReader(b"").finish()
    r = BitReader(b"\x05")
    r.read(3)
    r.finish()                                   # 5 zero bits of padding
    assert r.bit_position == 8 and r.bits_remaining == 0
    r = BitReader(b"\x05\x00")
    r.read(3)
    with pytest.raises(qc.DecodeError, match="13 bits left unread at bit 3"):
        r.finish()                               # a whole zero byte is not padding
    assert r.bit_position == 3
    r = BitReader(b"\x0d")
    r.read(3)
    with pytest.raises(qc.DecodeError, match="padding bits at bit 3 are not all zero"):
        r.finish()
    assert r.bit_position == 3
    r = BitReader(b"\x80")
    r.read(7)
    with pytest.raises(qc.DecodeError, match="not all zero"):
        r.finish()
    with pytest.raises(qc.DecodeError, match="8 bits left unread at bit 0"):
        BitReader(b"\x00").finish()


def test_reader_over_a_writer():
    w = BitWriter()
    w.write(5, 3)
    w.write(17, 5)
    r = BitReader(w)
    assert (r.read(3), r.read(5)) == (5, 17)
    with pytest.raises(BufferError):
        w.write(1, 1)                            # the reader holds a view of the writer
    del r
    w.write(1, 1)
    assert w.getvalue() == b"\x8d\x01"


# ------------------------------------------------------------------ writer state, buffer

def test_getvalue_does_not_disturb_writing():
    w = BitWriter()
    ref = RefWriter()
    for i in range(200):
        bits = (i * 7) % 65
        v = (i * 0x9E3779B97F4A7C15) & ((1 << bits) - 1)
        w.write(v, bits)
        ref.write(v, bits)
        if i % 3 == 0:
            assert w.getvalue() == ref.getvalue()
    assert w.getvalue() == ref.getvalue()
    assert w.bit_length == ref.nbits


def test_reset_empties_and_keeps_working():
    w = BitWriter()
    w.write_array(np.arange(1000), 20)
    w.reset()
    assert w.bit_length == 0
    assert w.getvalue() == b""
    w.write(5, 3)
    w.write(17, 5)
    assert w.getvalue() == b"\x8d"


def test_buffer_protocol_and_exports():
    w = BitWriter()
    w.write(5, 3)
    w.write(17, 5)
    w.write(1, 2)
    m = memoryview(w)
    assert m.readonly
    assert bytes(m) == w.getvalue() == b"\x8d\x01"
    assert bytes(w) == b"\x8d\x01"
    with pytest.raises(BufferError, match="buffer view"):
        w.write_array(np.arange(10_000), 20)     # growing while exported
    with pytest.raises(BufferError):
        w.write(1, 1)
    with pytest.raises(BufferError):
        w.reset()
    with pytest.raises(BufferError):
        w.align()
    assert bytes(m) == b"\x8d\x01"
    assert w.getvalue() == b"\x8d\x01"           # reading is fine
    m2 = memoryview(w)
    m.release()
    with pytest.raises(BufferError):
        w.write(1, 1)                            # still one view
    m2.release()
    w.write(1, 1)
    assert w.bit_length == 11
    with memoryview(w) as m3:
        with pytest.raises(TypeError, match="read-only"):
            m3[0:1] = b"x"
    w.write(0, 1)
    assert w.getvalue() == b"\x8d\x05"


def test_repr():
    w = BitWriter()
    w.write(1, 5)
    assert repr(w) == "<BitWriter bit_length=5>"
    r = BitReader(b"ab")
    r.read(3)
    assert repr(r) == "<BitReader bit_position=3 of 16>"


# --------------------------------------------------------------------------- properties

_ops = st.one_of(
    st.integers(0, 64).flatmap(lambda b: st.tuples(st.just("u"), st.integers(0, (1 << b) - 1), st.just(b))),
    st.integers(0, 64).flatmap(lambda b: st.tuples(
        st.just("s"), st.integers(-(1 << (b - 1)) if b else 0, (1 << (b - 1)) - 1 if b else 0), st.just(b))),
    st.tuples(st.just("b"), st.booleans(), st.just(1)),
    st.tuples(st.just("a"), st.none(), st.just(0)),
    st.integers(0, 64).flatmap(lambda b: st.tuples(
        st.just("arr"), st.lists(st.integers(0, (1 << b) - 1), max_size=40), st.just(b))),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ops, max_size=40))
def test_random_writes_read_back(ops):
    w = BitWriter()
    ref = RefWriter()
    for kind, value, bits in ops:
        if kind == "u":
            w.write(value, bits)
            ref.write(value, bits)
        elif kind == "s":
            w.write_signed(value, bits)
            ref.write(value & ((1 << bits) - 1), bits)
        elif kind == "b":
            w.write_bool(value)
            ref.write(int(value), 1)
        elif kind == "a":
            w.align()
            ref.align()
        else:
            dtype = np.uint32 if bits <= 32 else np.uint64
            w.write_array(np.array(value, dtype=dtype), bits)
            for v in value:
                ref.write(v, bits)
    data = w.getvalue()
    assert data == ref.getvalue()
    assert w.bit_length == ref.nbits
    r = BitReader(data)
    for kind, value, bits in ops:
        if kind == "u":
            assert r.read(bits) == value
        elif kind == "s":
            assert r.read_signed(bits) == value
        elif kind == "b":
            assert r.read_bool() is value
        elif kind == "a":
            r.align()
        else:
            assert r.read_array(len(value), bits).tolist() == value
    assert r.bit_position == w.bit_length
    r.finish()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 64), st.integers(0, 300), st.integers(0, 2**32 - 1), st.sampled_from(INT_DTYPES),
       st.integers(0, 9))
def test_pack_unpack_round_trip(bits, n, seed, dtype, offset):
    info = np.iinfo(dtype)
    bits = min(bits, info.bits - (info.min < 0))
    codes = random_codes(np.random.default_rng(seed), n, bits).astype(dtype)
    data = pack(codes, bits)
    assert data == ref_pack(codes, bits)
    assert np.array_equal(unpack(data, n, bits), codes)
    # the same codes behind `offset` bits, through a writer and a reader
    w = BitWriter()
    w.write(0, offset)
    w.write_array(codes, bits)
    r = BitReader(w.getvalue())
    assert r.read(offset) == 0
    assert np.array_equal(r.read_array(n, bits), codes)
    r.finish()


def test_independent_writers_in_threads():
    codes = np.arange(50_000, dtype=np.uint32) % (1 << 20)
    expected = pack(codes, 20)
    results = []

    def work():
        w = BitWriter()
        for _ in range(5):
            w.reset()
            w.write_array(codes, 20)
        results.append(w.getvalue() == expected and unpack(expected, codes.size, 20).tolist() == codes.tolist())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 4
