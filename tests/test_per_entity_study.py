"""bench/per_entity_study.py: its simulation of per-entity baselines keeps its invariants (a small
scene; nothing is timed)."""

import numpy as np
import pytest

from benchscripts import load


@pytest.fixture(scope="module")
def study():
    return load("per_entity_study")


@pytest.fixture(scope="module")
def scene(study):
    return study.Scene(24, 2.0, 3)          # 24 bodies falling, 120 ticks


def test_exp_golomb_lengths_are_the_wire_formats(study):
    # EG(k, b), docs/wire-format.md section 4: E = (b - k + 1) // 2 + 1 zeros then b bits escape
    bits, esc = study.eg_len(np.array([0, 1, 2, 6, 7, 254, 255, 65535]), 0, 16)
    assert bits.tolist() == [1, 3, 3, 5, 7, 15, 17, 9 + 16]     # E = 9: v >= 511 escapes
    assert esc.tolist() == [False] * 7 + [True]
    bits, esc = study.eg_len(np.array([0, 3, 4, 511]), 2, 9)
    assert bits.tolist() == [3, 3, 5, 5 + 9] and esc.tolist() == [False, False, False, True]
    assert study.zigzag(np.array([5, 3, 0]), np.array([3, 5, 65535]), 16).tolist() == [4, 3, 2]


@pytest.mark.parametrize("budget", [60, 120, 400])
@pytest.mark.parametrize("weights,pred", [("equal", False), ("speed", False), ("speed", True)])
def test_lossy_link_never_over_budget_and_shows_only_earlier_world_states(study, scene, budget,
                                                                          weights, pred):
    seen = []

    def trace(t, shown_seq, shown_codes):
        ok = shown_seq >= 0
        # a state shown is the world's codes at the tick of the packet that carried it, which
        # left the server at least the link's delay ago
        assert np.all(shown_seq[ok] <= t - 3)
        rows = np.flatnonzero(ok)
        assert np.array_equal(shown_codes[rows], scene.codes[shown_seq[rows], rows])
        seen.append(int(ok.sum()))

    # check=True: each baseline (and pred) a packet names is a state the client holds, the one
    # the server recorded as acknowledged, code for code (through loss of packets and acks)
    r = study.run_per_entity(scene, budget, weights, ref_bits=5, loss=0.2, seed=1, start=30,
                             check=True, trace=trace, pred=pred)
    assert max(r["bytes"]) <= budget and sum(r["bytes"]) > 0
    assert len(seen) == scene.T and seen[-1] == scene.N       # every body arrives in the end
    assert r["delta"] > 0                                      # deltas are used, not only records


def test_tiny_reference_sends_whole_records(study, scene):
    # 2 bits name baselines 1..3 ticks back: never an acked state on a 6-tick round trip
    r = study.run_per_entity(scene, 400, "equal", ref_bits=2, check=True, start=30)
    assert r["delta"] == 0 and r["whole"] > 0


def test_lossless_link_with_room_shows_every_change_after_the_delay(study, scene):
    def trace(t, shown_seq, shown_codes):
        if t >= 3:
            assert np.array_equal(shown_codes, scene.codes[t - 3])

    r = study.run_per_entity(scene, 100_000, "equal", ref_bits=5, loss=0.0, check=True,
                             start=30, trace=trace)
    # then the error is the floor's: every state exactly 3 ticks late
    floor = study.floor_errors(scene, start=30)
    assert r["mm_p99"] == floor["mm_p99"] and r["mm_max"] == floor["mm_max"]


def test_quick_main_prints_the_table(study):
    lines = []
    res = study.main(["--quick", "--no-part2", "--budgets", "200", "800", "--ref-bits", "5"],
                     out=lines.append)
    assert len(res["runs"]) == 4 and len(res["pred"]) == 4
    text = "\n".join(lines)
    assert "per-entity, R=5, speed weights" in text and "floor" in text
    for (_, budget, _), r in res["runs"].items():
        assert max(r["bytes"]) <= budget
