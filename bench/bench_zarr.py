"""A recorded scene trace in Zarr: bytes on disk and write / read speed, quantcodec against float32.

    python bench/bench_zarr.py [--bodies 300] [--seconds 10] [--chunk 60] [--repeat 3] [--json]

Needs `pip install 'quantcodec[zarr]'` (numcodecs, Zarr 3, Dask). The trace is the demo's scene
(quantcodec.tools.scene.simulate: positions, quaternions and velocities as float32, ticks x bodies x k),
stored as three Zarr arrays chunked by `--chunk` ticks, in a temporary directory, each way:

- float32, Zarr's default compressor (zarr_format=3: ZstdCodec(level=0), i.e. zstd's level 3)
- float32, Zstd level 9 (numcodecs.Zstd)
- float32, Blosc (zstd 5, byte shuffle): the usual choice for floats
- quantcodec alone: QuantCodec (the scene's schema fields) as the filter, no compressor
- quantcodec + Zstd level 3: the bit-packed codes, then zstd
- quantcodec records + Zstd level 3: one array of whole records (QuantCodec(schema=...))

For each: bytes on disk (chunk files and metadata), the worst error per quantity against the
float32 trace (0 for the lossless rows), the best of `--repeat` times to write the three arrays
(`z[:] = values`), to read them (`z[:]`), and to read them through dask.array (`da.from_zarr`,
threads, one task per chunk). Reported, never asserted: no test times this.
"""

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np

try:
    import quantcodec as qc
except ImportError:     # run from a source checkout: python bench/bench_zarr.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import quantcodec as qc

from quantcodec.tools.scene import simulate
from quantcodec.tools.link import default_schema

try:
    import dask
    import dask.array as da
    import numcodecs
    import zarr
    from quantcodec.numcodecs import QuantCodec, record_dtype
except ImportError as e:  # pragma: no cover
    sys.exit(f"bench_zarr.py needs the zarr extra: pip install 'quantcodec[zarr]' ({e})")


def disk_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def variants(schema):
    """name -> (how the arrays are created: kwargs for zarr.create_array per field, or 'records')."""
    zstd3 = numcodecs.Zstd(level=3)
    return {
        "float32, Zarr default (Zstd 0)": lambda f: dict(zarr_format=3),
        "float32, Zstd 9": lambda f: dict(zarr_format=2, compressors=numcodecs.Zstd(level=9)),
        "float32, Blosc zstd5 shuffle": lambda f: dict(zarr_format=2, compressors=numcodecs.Blosc(
            cname="zstd", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)),
        "quantcodec": lambda f: dict(zarr_format=2, filters=[QuantCodec(schema[f])], compressors=None),
        "quantcodec + Zstd 3": lambda f: dict(zarr_format=2, filters=[QuantCodec(schema[f])],
                                              compressors=zstd3),
        "quantcodec records + Zstd 3": "records",
    }


def run(args):
    scene = simulate(n_bodies=args.bodies, seconds=args.seconds, seed=args.seed)
    schema = default_schema()          # the demo's: position, rotation, velocity
    data = {"position": scene.positions, "rotation": scene.orientations, "velocity": scene.velocities}
    raw = sum(v.nbytes for v in data.values())
    T, N = scene.positions.shape[:2]
    rows = []
    tmp = tempfile.mkdtemp(prefix="bench_zarr.")
    try:
        for vi, (name, make) in enumerate(variants(schema).items()):
            path = os.path.join(tmp, f"v{vi}.zarr")
            if make == "records":
                dt = record_dtype(schema)
                rec = np.zeros((T, N), dt)
                for f, v in data.items():
                    for i in range(v.shape[-1]):
                        rec[f"{f}.{i}"] = v[..., i]

                def create():
                    shutil.rmtree(path, ignore_errors=True)
                    store = zarr.storage.LocalStore(path)
                    z = zarr.create_array(store, name="records", shape=(T, N), chunks=(args.chunk, N), dtype=dt,
                                          filters=[QuantCodec(schema)], compressors=numcodecs.Zstd(level=3),
                                          zarr_format=2)
                    return {"records": z}

                def write():
                    create()["records"][:] = rec
            else:
                def create():
                    shutil.rmtree(path, ignore_errors=True)
                    store = zarr.storage.LocalStore(path)
                    return {f: zarr.create_array(store, name=f, shape=v.shape, chunks=(args.chunk, N, v.shape[-1]),
                                                 dtype="f4", **make(f)) for f, v in data.items()}

                def write():
                    for f, z in create().items():
                        z[:] = data[f]
            t_write = best(write, args.repeat)
            nbytes = disk_bytes(path)
            group = zarr.open_group(zarr.storage.LocalStore(path), mode="r")
            arrays = [group[k] for k in sorted(group.array_keys())]
            t_read = best(lambda: [z[:] for z in arrays], args.repeat)
            with dask.config.set(scheduler="threads", num_workers=args.workers):
                t_dask = best(lambda: dask.compute(*[da.from_zarr(z) for z in arrays]), args.repeat)
            back = {k: group[k][:] for k in group.array_keys()}
            if "records" in back:
                r = back["records"]
                back = {f: np.stack([r[f"{f}.{i}"] for i in range(v.shape[-1])], -1) for f, v in data.items()}
            err = {f: float(np.abs(back[f].astype(np.float64) - data[f]).max()) for f in data}
            # a rotation's error is its angle (q and -q are the same rotation), in degrees
            a = back["rotation"].astype(np.float64)
            b = data["rotation"].astype(np.float64)
            a /= np.linalg.norm(a, axis=-1, keepdims=True)
            b /= np.linalg.norm(b, axis=-1, keepdims=True)
            b *= np.where(np.sum(a * b, axis=-1) < 0, -1.0, 1.0)[..., None]
            angle = 2 * np.arctan2(np.linalg.norm(a - b, axis=-1), np.linalg.norm(a + b, axis=-1))
            err["rotation"] = float(np.degrees(angle).max())
            rows.append({"variant": name, "bytes": nbytes, "ratio": raw / nbytes,
                         "write_s": t_write, "read_s": t_read, "dask_read_s": t_dask,
                         "write_MBps": raw / t_write / 1e6, "read_MBps": raw / t_read / 1e6,
                         "dask_read_MBps": raw / t_dask / 1e6, "worst_error": err})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    env = {"python": platform.python_version(), "quantcodec": qc.__version__, "zarr": zarr.__version__,
           "numcodecs": numcodecs.__version__, "dask": dask.__version__, "numpy": np.__version__,
           "machine": platform.machine(), "cpus": os.cpu_count()}
    setup = {"bodies": N, "ticks": T, "chunk_ticks": args.chunk, "raw_float32_bytes": raw,
             "repeat": args.repeat, "dask_workers": args.workers, "seed": args.seed}
    return env, setup, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bodies", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chunk", type=int, default=60, help="ticks per chunk (default 60: one second)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2, help="Dask threads (default 2)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # Zarr's notes on numcodecs codecs in zarr_format=2
        env, setup, rows = run(args)
    if args.json:
        print(json.dumps({"environment": env, "setup": setup, "rows": rows}, indent=2))
        return
    print(f"scene: {setup['ticks']} ticks x {setup['bodies']} bodies (positions, quaternions, velocities), "
          f"{setup['raw_float32_bytes']:,} bytes of float32; chunks of {setup['chunk_ticks']} ticks; "
          f"best of {setup['repeat']}; Dask {setup['dask_workers']} threads")
    print(" ".join(f"{k} {v}" for k, v in env.items()))
    head = f"{'variant':<30} {'bytes on disk':>13} {'ratio':>6} {'write MB/s':>10} {'read MB/s':>9} {'dask MB/s':>9}  worst error (pos m, rot deg, vel m/s)"
    print(head)
    print("-" * len(head))
    for r in rows:
        e = r["worst_error"]
        print(f"{r['variant']:<30} {r['bytes']:>13,} {r['ratio']:>6.2f} {r['write_MBps']:>10.1f} "
              f"{r['read_MBps']:>9.1f} {r['dask_read_MBps']:>9.1f}  "
              f"{e['position']:.2g}, {e['rotation']:.2g}, {e['velocity']:.2g}")
    print("MB/s are of the raw float32 trace (MB = 10^6 bytes); errors are the largest per axis against the "
          "float32 trace (rotation: the angle in degrees).")


if __name__ == "__main__":
    main()
