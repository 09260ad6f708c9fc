"""bench/bench_bandwidth.py on recordings: fitted bounds, z-up and (w, x, y, z) recordings read
back to the same numbers (a smoke test: bits are compared, no time is asserted)."""

import argparse

import numpy as np
from benchscripts import load as _load


def _run(bb, path, **kw):
    args = argparse.Namespace(bodies=0, seconds=0.0, hz=60, seed=0, ack_delay=0.1, loss=0.0, dup=0.0,
                              jitter=0.0, scene=str(path), bounds="auto", up="y", quat_order="xyzw")
    for k, v in kw.items():
        setattr(args, k, v)
    lines = []
    results = bb.run(args, out=lines.append)
    return results, lines


def test_fitted_bounds_cover_the_recording_at_gaffers_resolution():
    bb = _load("bench_bandwidth")
    pos = np.array([[[-3.2, 0.4, 10.1], [250.0, 7.9, -0.5]]])
    bounds, bits = bb.fitted_bounds(pos)
    assert bounds == ((-250.0, 250.0), (0.0, 8.0), (-11.0, 11.0))
    assert bits == (18, 12, 14)                     # 2**bits >= 512 a metre over the span
    (lo, hi), b = bounds[0], bits[0]
    assert (hi - lo) / (2 ** b - 1) < 1.0 / 511     # about Gaffer's 1.95 mm step
    below = bb.fitted_bounds(np.array([[[0.0, -2.5, 0.0]]]))[0]
    assert below[1] == (-3.0, -2.0)                 # y from the lowest sample when below 0


def test_recording_axes_and_quaternion_order_read_back(tmp_path):
    from quantcodec.tools.scene import simulate

    bb = _load("bench_bandwidth")
    sc = simulate(24, 1.5, 60, 3)
    rec = {"positions": sc.positions, "orientations": sc.orientations, "velocities": sc.velocities,
           "at_rest": sc.at_rest, "hz": 60}
    yup = tmp_path / "yup.npz"
    np.savez(yup, **rec)

    def z_up(v):                                    # y-up (x, y, z) -> z-up (x, -z, y)
        return np.stack([v[..., 0], -v[..., 2], v[..., 1]], axis=-1)

    q = sc.orientations
    zup = tmp_path / "zup.npz"
    np.savez(zup, **dict(rec, positions=z_up(sc.positions), velocities=z_up(sc.velocities),
                         orientations=np.concatenate([q[..., 3:], z_up(q[..., :3])], axis=-1)))
    a, lines_a = _run(bb, yup)
    b, lines_b = _run(bb, zup, up="z", quat_order="wxyz")
    pick = [line for line in lines_a if "bits/entity/update" in line or "fitted" in line]
    assert pick and pick == [line for line in lines_b if "bits/entity/update" in line or "fitted" in line]
    for (_, ra), (_, rb) in zip(a["Gaffer payload: position + rotation + rest bit"],
                                b["Gaffer payload: position + rotation + rest bit"]):
        assert ra["delta_bits"] == rb["delta_bits"] and ra["mismatches"] == rb["mismatches"] == 0
