"""bench/bench_snapshot.py runs and reports what it says (a smoke test: no time is asserted)."""

from benchscripts import load


def _load():
    return load("bench_snapshot")


def test_bench_snapshot_runs_small():
    mod = _load()
    lines = []
    rows = mod.main(["--bodies", "30", "--number", "2", "--clients", "0", "--stream", "0",
                     "--full", "0"], out=lines.append)
    assert [r[0] for r in rows] == [60, 150, 280]
    for _, changed, nbytes, us in rows:
        assert 0.0 <= changed <= 1.0 and nbytes > 0
        assert set(us) == {"pack_list", "pack_body", "pack_numpy", "pack_star", "encode",
                           "decode", "snapshot", "columns"}
        assert all(v > 0 for v in us.values())
    assert "x body" in lines[1] and len(lines) == 2 + len(rows) + 1


def test_bench_snapshot_many_clients_rows():
    # the shared-packet rows: 7 clients over 5 ack lags need 5 distinct packets a tick (the
    # lags are spread evenly and the stream is steady), and each side timed
    mod = _load()
    lines = []
    mod.main(["--bodies", "30", "--number", "2", "--clients", "7", "--stream", "0", "--full", "0"],
             out=lines.append)
    i = next(j for j, line in enumerate(lines) if "clients whose acks lag" in line)
    table = lines[i + 2:]
    assert [int(r.split()[0]) for r in table] == [60, 150, 280]
    for r in table:
        f = r.replace("|", " ").split()
        assert int(f[1]) == 5 and float(f[2]) > 0 and float(f[4]) > 0 and f[-1].endswith("x")


def test_bench_snapshot_stream_rows():
    # the in-a-stream rows: the scene streamed tick by tick (each decoded view checked against
    # the server's snapshot inside), one row per window of ticks, every call timed
    mod = _load()
    lines = []
    mod.main(["--bodies", "30", "--number", "2", "--clients", "0", "--stream", "2", "--full", "0"],
             out=lines.append)
    i = next(j for j, line in enumerate(lines) if "In a stream" in line)
    table = lines[i + 2:]
    assert [r.split()[0] for r in table] == ["50-69", "140-159", "270-289"]
    for r in table:
        f = r.replace("|", " ").split()
        assert f[1].endswith("%") and all(float(x) > 0 for x in f[2:])
    from quantcodec.tools.scene import simulate
    from quantcodec.tools.link import default_schema
    out = mod.stream(simulate(20, 2.0, 60, 1), default_schema(velocity=True), centers=(30, 100),
                     half=5, repeats=2)
    assert [c for c, _, _ in out] == [30, 100]
    for _, changed, t in out:
        assert 0.0 <= changed <= 1.0
        assert set(t) == {"snapshot", "encode", "decode", "pack_body"} and min(t.values()) > 0


def test_bench_snapshot_full_rows():
    # the full-snapshot rows: a packet with no baseline each, encoded and decoded (the decoded
    # view checked against the snapshot inside), one row per tick
    mod = _load()
    lines = []
    mod.main(["--bodies", "30", "--number", "2", "--clients", "0", "--stream", "0"], out=lines.append)
    i = next(j for j, line in enumerate(lines) if "Full snapshots" in line)
    table = lines[i + 2:]
    assert [int(r.split()[0]) for r in table] == [60, 150, 280]
    for r in table:
        f = r.replace("|", " ").split()
        assert int(f[1]) > 30 * 10 and all(float(x) > 0 for x in f[2:])


def test_bench_snapshot_pose_rows():
    # --pose: the schema without its velocity, and struct.pack of 7 floats a body
    mod = _load()
    lines = []
    rows = mod.main(["--bodies", "30", "--number", "2", "--clients", "0", "--stream", "0", "--pose",
                     "--full", "0"], out=lines.append)
    assert "pose schema" in lines[0] and "7 floats raw" in lines[0]
    assert [r[0] for r in rows] == [60, 150, 280] and all(r[2] > 0 for r in rows)
    from quantcodec.tools.scene import simulate
    scene = mod.PoseOnly(simulate(20, 1.0, 60, 1))
    assert mod.raw_floats(scene, 3).shape == (20, 7) and set(scene.columns(3)) == {"position", "rotation"}
    assert mod.raw_floats(scene.scene, 3).shape == (20, 10)
