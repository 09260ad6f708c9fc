"""Core microbenchmarks: codecs and bit packing side by side with NumPy, bitstruct and struct.

    python bench/bench_core.py [--quick] [--json] [--simd baseline|avx2|avx512]

A thin driver: the benchmarks live in quantcodec/tools/bench.py, installed with the package, so that
`quantcodec bench` runs the same table from a wheel. See bench/README.md for the rows, the
targets and how to read the numbers.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")    # no idle BLAS threads in the process CPU time

try:
    from quantcodec.tools import bench
except ImportError:     # run from a source checkout: python bench/bench_core.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from quantcodec.tools import bench


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (5 instead of 15 a row)")
    ap.add_argument("--json", action="store_true", help="print the environment and the rows as JSON instead of a table")
    ap.add_argument("--simd", choices=("baseline", "avx2", "avx512"),
                    help="run with these array loops (default: the best this CPU runs)")
    args = ap.parse_args(argv)
    rows = bench.run(quick=args.quick, out=None if args.json else print, simd=args.simd)
    if args.json:
        print(json.dumps(bench.to_json(rows), indent=2, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
