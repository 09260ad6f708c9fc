"""bench/context_study.py (issue 38) and its range coder, bench/context_coder.py: the coder
round-trips and comes within 1% of its ideal code length; the study's reading of the real
stream adds up to the encoder's bits and to bench_bandwidth's figure (nothing is timed)."""

import math
import random

import numpy as np
import pytest

from benchscripts import load


def _values(rng, n, cells=5):
    vals, cs = [], []
    for i in range(n):
        c = rng.randrange(cells)
        vals.append(int(rng.expovariate(1.0 / (1 + 12 * c))) if rng.random() > 0.02 else rng.randrange(1 << 16))
        cs.append(c)
    return vals, cs


@pytest.mark.parametrize("n", [0, 1, 2, 17, 400])
def test_range_coder_round_trips(n):
    cc = load("context_coder")
    rng = random.Random(n)
    vals, cs = _values(rng, n)
    data, model = cc.encode(vals, cs)
    assert cc.decode(data, cs) == vals
    # the flush costs at most about two bytes beyond the ideal
    assert 8 * len(data) <= model.ideal + 16


def test_range_coder_within_one_percent_of_ideal():
    cc = load("context_coder")
    rng = random.Random(7)
    vals, cs = _values(rng, 6000)
    data, model = cc.encode(vals, cs)
    assert cc.decode(data, cs) == vals
    assert abs(8 * len(data) - model.ideal) <= 0.01 * model.ideal
    # the bits follow the values: cells that fit them better code them in fewer bytes
    assert len(cc.encode(vals, [0] * len(vals))[0]) > len(data)


def test_closed_form_matches_the_sequential_model():
    """The study prices the adaptive model by its counts alone (kt_bits / beta_bits); the
    coder's model, bit by bit, gives the same ideal length."""
    cc = load("context_coder")
    st = load("context_study")
    rng = random.Random(3)
    bits = [int(rng.random() < 0.2) for _ in range(500)]
    m = cc.Model()
    for b in bits:
        m.update("x", b)
    n1 = sum(bits)
    assert math.isclose(float(st.kt_bits(len(bits) - n1, n1)), m.ideal, rel_tol=1e-9)
    assert math.isclose(float(st.beta_bits(len(bits) - n1, n1, 0, 0)), m.ideal, rel_tol=1e-9)
    # warm counts: coding the second half after the first equals the joint minus the first
    a0, a1 = 250 - sum(bits[:250]), sum(bits[:250])
    b0, b1 = 250 - sum(bits[250:]), sum(bits[250:])
    joint = float(st.kt_bits(a0 + b0, a1 + b1))
    assert math.isclose(float(st.beta_bits(b0, b1, a0, a1)), joint - float(st.kt_bits(a0, a1)), rel_tol=1e-9)


def test_study_reads_the_real_stream():
    """On a small bench scene: every packet read back to the server's snapshot, the parts and
    residuals checked (Run raises otherwise), today's row equal to bench_bandwidth's figure,
    and the models consistent with the real packets."""
    st = load("context_study")
    bb = load("bench_bandwidth")
    from quantcodec.tools.link import default_schema, run_stream

    class A:
        scene, bodies, seconds, hz, seed = None, 40, 2.5, 60, 1

    rec = bb.load(A())
    schema = default_schema(velocity=False, rest=True)
    lines = []
    run = st.Run("small", rec, schema, st.columns_of(rec, schema), 6, 0.2, 1, 120, None, out=lines.append)
    assert "check out" in lines[0]
    r = run_stream(rec.positions, rec.orientations, None, ids=rec.ids, extra={"rest": rec.at_rest},
                   schema=schema, hz=60, ack_delay=0.1, loss=0.2, seed=1, start=6)
    wire = np.array([p["wire"] for p in run.P])
    assert np.array_equal(wire[6:], r["packet_bits"])
    zero = np.zeros(len(run.P))
    today = st.summarize(run, np.array([p["res"] for p in run.P], float),
                         np.array([p["params"] - p["usebits"] for p in run.P], float))
    assert today[0] == pytest.approx(r["delta_bits"])
    # the best k per component never costs more than the encoder's (same side information)
    best = st.eg_cell_bits(run, run.u, np.zeros(len(run.u), dtype=np.int64))
    mine = np.array([p["res"] + p["params"] - p["usebits"] for p in run.P])
    assert np.all(best <= mine + 1e-9)
    # the real range coder on a few packets: the ideal length the study uses, within a byte or two
    real, ideal, n, _ = st.real_coder_check(run, limit=8)
    assert n == 8 and abs(real - ideal) <= 16 * n
    ctx = st.contexts(run)
    ac = st.ac_bits(run, run.u, ctx["step+fhist"])
    assert np.all(ac >= 0) and ac.sum() > 0
    assert st.summarize(run, zero, zero)[0] < today[0]
