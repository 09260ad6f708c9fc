"""bench/layout_study.py runs and its model is consistent (a smoke test: nothing is timed)."""

from benchscripts import load


def test_layout_study_small():
    mod = load("layout_study")
    lines = []
    total, per_tick = mod.main(["--bodies", "30", "--seconds", "5", "--exceptions", "0.05", "0.3", "1"],
                               out=lines.append)
    assert [int(line.split()[0]) for line in lines[2:5]] == [60, 150, 280]
    assert lines[-1].startswith("over the stream") and "fixed(0.3)" in lines[-1]
    assert per_tick
    for _, bits in per_tick:
        # the model leaves out what both layouts share, so today's codes come under the real
        # packet; allowing more exceptions never costs more
        assert bits["eg"] <= bits["packet"]
        assert bits[0.05] >= bits[0.3] >= bits[1.0]
    assert total["eg"] < total[0.3] < total["max"]
