"""bench/record_scene.py: the axis and quaternion mapping between MuJoCo and quantcodec (pure
NumPy), and, where MuJoCo is installed, a short recording streamed through bench_bandwidth."""

import argparse

import numpy as np
import pytest
from benchscripts import load as _load


def rotate(q, v):
    """Rotate v by the unit quaternion q = (x, y, z, w)."""
    u, w = q[:3], q[3]
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def test_axis_mapping_is_a_proper_rotation_of_both_positions_and_orientations():
    rs = _load("record_scene")
    rng = np.random.default_rng(0)
    v = rng.normal(size=(50, 3))
    assert np.allclose(rs.mj_from_qc_vec(rs.qc_from_mj_vec(v)), v)
    up_mj = np.array([0.0, 0.0, 1.0])
    assert np.allclose(rs.qc_from_mj_vec(up_mj), [0.0, 1.0, 0.0])          # z up -> y up
    for _ in range(20):
        q_mj = rng.normal(size=4)
        q_mj /= np.linalg.norm(q_mj)                                           # (w, x, y, z)
        q_qc = rs.qc_from_mj_quat(q_mj)                                        # (x, y, z, w)
        assert np.allclose(rs.mj_from_qc_quat(q_qc), q_mj)
        p = rng.normal(size=3)
        # rotating in MuJoCo's frame then mapping == mapping then rotating in quantcodec's
        rotated_mj = rotate(np.concatenate([q_mj[1:], q_mj[:1]]), p)
        assert np.allclose(rs.qc_from_mj_vec(rotated_mj), rotate(q_qc, rs.qc_from_mj_vec(p)))


def test_short_recording_streams_exactly(tmp_path):
    pytest.importorskip("mujoco")
    rs = _load("record_scene")
    bb = _load("bench_bandwidth")
    args = argparse.Namespace(bodies=20, seconds=1.0, hz=60, substeps=4, seed=1, pushers=1,
                              rest="sleep", sleep_tolerance=1e-3, friction=0.5, progress=False)
    rec, _ = rs.record(args, log=lambda *a, **k: None)
    assert rec["positions"].shape == (60, 20, 3) and rec["orientations"].shape == (60, 20, 4)
    assert np.allclose(np.linalg.norm(rec["orientations"], axis=2), 1.0, atol=1e-5)
    path = tmp_path / "rec.npz"
    np.savez_compressed(path, **rec)
    lines = []
    args = argparse.Namespace(bodies=20, seconds=1.0, hz=60, seed=0, ack_delay=0.1, loss=0.1, dup=0.0,
                              jitter=0.0, scene=str(path))
    results = bb.run(args, out=lines.append)        # (it stops on any decoded state != the server's)
    assert len(results) == 2 and any("yardstick" in line for line in lines)
