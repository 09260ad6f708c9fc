"""Plain-NumPy baselines for fixed-width bit packing, in quantcodec's layout.

``numpy_pack(codes, bits)`` / ``numpy_unpack(data, count, bits)`` produce and read exactly the
bytes of ``quantcodec.pack`` / ``quantcodec.unpack`` (LSB-first: value ``i`` occupies bits
``[i * bits, (i + 1) * bits)`` of the stream, bit 0 being the least significant bit of byte 0),
using vectorized shifts and ors on 64-bit words, the way one would write it by hand without a
compiled extension. The benchmarks compare quantcodec against these.

Also ``bitstruct_pack``/``bitstruct_unpack`` (bitstruct's C extension, ``pip install bitstruct``):
its layout is MSB-first, so only the speed is comparable, not the bytes; the timings include
the ``tolist()``/``np.array`` conversions that using it with NumPy arrays takes.

Run ``python bench/baselines_bitstream.py [N] [BITS]`` to print the comparison.
"""


import numpy as np

__all__ = ["numpy_pack", "numpy_unpack", "bitstruct_pack", "bitstruct_unpack"]


# The NumPy shift/or baseline lives in the installed package (quantcodec bench uses it too).
from quantcodec.tools.bench import numpy_pack, numpy_unpack  # noqa: E402


def _bitstruct_format(count, bits):
    import bitstruct.c

    return bitstruct.c.compile(f"u{bits}" * count)


def bitstruct_pack(codes, bits, _cache={}):
    """bitstruct.c packing of a 1-D array (MSB-first layout: speed comparison only)."""
    count = len(codes)
    key = (count, bits)
    if key not in _cache:
        _cache[key] = _bitstruct_format(count, bits)
    return _cache[key].pack(*codes.tolist())


def bitstruct_unpack(data, count, bits, _cache={}):
    """bitstruct.c unpacking into a NumPy array (speed comparison only)."""
    key = (count, bits)
    if key not in _cache:
        _cache[key] = _bitstruct_format(count, bits)
    return np.array(_cache[key].unpack(data), dtype=np.uint32 if bits <= 32 else np.uint64)


def _main():
    """``python bench/baselines_bitstream.py [N] [BITS]``: median ns/value of quantcodec against
    these baselines (timeit.repeat)."""
    import sys
    import timeit

    import quantcodec as qc

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    bits = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    codes = np.random.default_rng(0).integers(0, 1 << bits, n, dtype=np.uint64)
    codes = codes.astype(np.uint32 if bits <= 32 else np.uint64)
    data = qc.pack(codes, bits)
    assert numpy_pack(codes, bits) == data
    assert np.array_equal(numpy_unpack(data, n, bits), codes)

    def median(fn, number, repeat=9):
        times = sorted(timeit.repeat(fn, number=number, repeat=repeat))
        return times[repeat // 2] / number / n * 1e9

    rows = {
        "quantcodec.pack": median(lambda: qc.pack(codes, bits), 20),
        "quantcodec.unpack": median(lambda: qc.unpack(data, n, bits), 20),
        "numpy_pack": median(lambda: numpy_pack(codes, bits), 5),
        "numpy_unpack": median(lambda: numpy_unpack(data, n, bits), 5),
    }
    try:
        import bitstruct

        bs_data = bitstruct_pack(codes, bits)
        rows["bitstruct.c pack"] = median(lambda: bitstruct_pack(codes, bits), 1, 5)
        rows["bitstruct.c unpack"] = median(lambda: bitstruct_unpack(bs_data, n, bits), 1, 5)
        bs_version = bitstruct.__version__
    except ImportError:
        bs_version = "not installed"
    print(f"{n} codes of {bits} bits, median ns/value (numpy {np.__version__}, bitstruct {bs_version})")
    for name, ns in rows.items():
        print(f"  {name:20s} {ns:8.3f}")
    for op in ("pack", "unpack"):
        ours = rows[f"quantcodec.{op}"]
        line = f"{op}: {rows[f'numpy_{op}'] / ours:.1f}x numpy"
        if f"bitstruct.c {op}" in rows:
            line += f", {rows[f'bitstruct.c {op}'] / ours:.0f}x bitstruct"
        print(line)


if __name__ == "__main__":
    _main()
