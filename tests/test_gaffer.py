"""The Gaffer On Games yardstick (bench/gaffer.py): it must decode what it writes, and count right."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchscripts import load

_gaffer = load("gaffer")
from quantcodec_bench_gaffer import (  # noqa: E402
    BitReader,
    BitWriter,
    GafferCodes,
    GafferDecodeError,
    GafferScheme,
    gaffer_packet_bits,
    quantize_orientations,
    quantize_positions,
    run,
    scene_codes,
    scene_scheme,
)
from quantcodec.tools.scene import simulate

N = 300
HEADER = 33


@pytest.fixture(scope="module")
def scene():
    return simulate(60, 4.0, seed=0)


@pytest.fixture(scope="module")
def codes(scene):
    return scene_codes(scene)


def still_world(n=N):
    """Every cube at rest on the ground: y code 256 (0.5 m), largest index w."""
    pos = np.zeros((n, 3), dtype=np.int64)
    pos[:, 0] = 1000 + 3 * np.arange(n)
    pos[:, 1] = 256
    pos[:, 2] = 30000
    quat = np.tile(np.array([3, 200, 300, 255]), (n, 1))
    return GafferCodes.make(pos, quat, np.ones(n, dtype=bool))


def changed(base, rows=(), dpos=None, quat=None, flag_rows=()):
    pos, q, flag = base.position.copy(), base.orientation.copy(), base.flag.copy()
    for r in rows:
        if dpos is not None:
            pos[r] += dpos
        if quat is not None:
            q[r] = quat
    for r in flag_rows:
        flag[r] = not flag[r]
    return GafferCodes(pos, q, flag)


def check(scheme, base, cur, prev=None):
    """Write, count, decode: all three must agree. Returns the bit count."""
    data, nbits = scheme.encode(base, cur, prev, seq=70000, base_seq=69994)
    assert len(data) == (nbits + 7) // 8
    assert scheme.packet_bits(base, cur, prev) == nbits
    got, seq, base_seq = scheme.decode(data, base, prev)
    assert got.equals(cur)
    if scheme.header:
        assert (seq, base_seq) == (70000 & 0xFFFF, 69994 & 0xFFFF)
    return nbits


# -- bit writer ----------------------------------------------------------------------------------

def test_bit_writer_is_lsb_first():
    w = BitWriter()
    w.write(5, 3)
    w.write(17, 5)
    assert w.getvalue() == b"\x8d" and w.bit_length == 8
    w.write(1, 1)
    assert w.getvalue() == b"\x8d\x01"
    r = BitReader(b"\x8d\x01")
    assert (r.read(3), r.read(5), r.read_bool()) == (5, 17, True)
    r.finish()


def test_bit_writer_rejects_values_that_do_not_fit():
    w = BitWriter()
    with pytest.raises(ValueError, match="8 does not fit in 3 bits"):
        w.write(8, 3)
    with pytest.raises(ValueError, match="does not fit"):
        w.write(-1, 4)


def test_bit_reader_errors():
    r = BitReader(b"\xff")
    with pytest.raises(GafferDecodeError, match="past the end"):
        r.read(9)
    r = BitReader(b"\x01\x00")
    r.read(1)
    with pytest.raises(GafferDecodeError, match="bits left"):
        r.finish()
    r = BitReader(b"\x03")
    r.read(1)
    with pytest.raises(GafferDecodeError, match="bits left"):
        r.finish()


# -- quantization ----------------------------------------------------------------------------------

def test_quantize_positions_endpoints_rule():
    got = quantize_positions([[-64.0, 0.0, 64.0], [0.0, 16.0, -100.0], [1 / 512, 0.5, np.nan]],
                             [(-64, 64), (0, 32), (-64, 64)], (16, 14, 16))
    assert got.tolist() == [[0, 0, 65535], [32768, 8192, 0], [32768, 256, 0]]


def test_quantize_orientations_smallest_three():
    q = [[0, 0, 0, 1], [0, 0, 0, -1], [0.1, 0.21, 0.31, -0.92], [1, -1, 0, 0]]
    got = quantize_orientations(q, 9)
    assert got[0].tolist() == [3, 256, 256, 256]
    assert got[1].tolist() == got[0].tolist()                  # q and -q
    assert got[2, 0] == 3 and got[2, 1] < 256                  # negated: x becomes -0.1
    assert got[3].tolist() == [0, 0, 256, 256]                  # tie: the first index wins
    with pytest.raises(ValueError, match="row 1: zero"):
        quantize_orientations([[0, 0, 0, 1], [0, 0, 0, 0]], 9)


# -- hand-checked bit counts: article variant ---------------------------------------------------------

def test_full_packet_is_80_bits_a_cube_at_gaffers_resolution():
    gaffer = GafferScheme(901, (18, 18, 14), 9, header=False)
    assert gaffer.cube_bits == 80                              # [A]: "just 10 bytes per-cube"
    assert gaffer.full_packet_bits == 901 * 80
    ours = GafferScheme(N)
    assert ours.cube_bits == 1 + 46 + 29 == 76
    base = still_world()
    assert check(ours, None, base) == HEADER + N * 76


def test_nothing_changed_costs_header_mode_and_count():
    base = still_world()
    s = GafferScheme(N)
    assert check(s, base, base) == HEADER + 1 + 9             # count 0 in [0, 300]
    assert gaffer_packet_bits(base, base) == HEADER + 1 + 9
    assert gaffer_packet_bits(base, base, header=False) == 1 + 9


def test_one_cube_small_position_delta():
    base = still_world()
    cur = changed(base, rows=[7], dpos=[1, 0, -1])
    # count 9 + first index 9; cube: flag, pos changed, relative, 3 x (1 + 5), quat changed
    assert check(GafferScheme(N), base, cur) == HEADER + 1 + 9 + 9 + (1 + 1 + 1 + 18 + 1)


def test_position_large_and_absolute():
    base = still_world()
    s = GafferScheme(N)
    cur = changed(base, rows=[0], dpos=[-200, 20, 0])          # large, large... 20 is large too
    assert check(s, base, cur) == HEADER + 1 + 18 + (3 + 10 + 10 + 6 + 1)
    cur = changed(base, rows=[0], dpos=[-256, -16, 15])        # edges of both ranges
    assert check(s, base, cur) == HEADER + 1 + 18 + (3 + 10 + 6 + 6 + 1)
    cur = changed(base, rows=[0], dpos=[300, 0, 0])            # beyond [-256, 255]: absolute
    assert check(s, base, cur) == HEADER + 1 + 18 + (3 + 46 + 1)
    cur = changed(base, rows=[0], dpos=[0, 0, -257])
    assert check(s, base, cur) == HEADER + 1 + 18 + (3 + 46 + 1)


def test_orientation_relative_and_absolute():
    base = still_world()
    s = GafferScheme(N)
    # base (3, 200, 300, 255): deltas 3, -16, 127 -> small, small, large
    cur = changed(base, rows=[4], quat=[3, 203, 284, 382])
    assert check(s, base, cur) == HEADER + 1 + 18 + (1 + 1 + 1 + 1 + 6 + 6 + 9)
    cur = changed(base, rows=[4], quat=[3, 200, 300, 383])     # +128: beyond [-128, 127]
    assert check(s, base, cur) == HEADER + 1 + 18 + (1 + 1 + 1 + 1 + 29)
    cur = changed(base, rows=[4], quat=[2, 200, 300, 255])     # another largest index
    assert check(s, base, cur) == HEADER + 1 + 18 + (1 + 1 + 1 + 1 + 29)


def test_relative_index_classes():
    base = still_world()
    s = GafferScheme(N)
    # flags only (cube: flag + 2 unchanged bits = 3); gaps 8 -> 4 bits, 32 -> 7, 40 -> 7, 41 -> 2 + 9
    rows = [5, 13, 45, 85, 126]
    cur = changed(base, flag_rows=rows)
    assert check(s, base, cur) == HEADER + 1 + 9 + 9 + (4 + 7 + 7 + 11) + 5 * 3
    cur = changed(base, flag_rows=[0, 1])                      # gap 1: [1, 8]
    assert check(s, base, cur) == HEADER + 1 + 9 + 9 + 4 + 2 * 3


def test_changed_bits_when_indices_cost_more():
    base = still_world()
    s = GafferScheme(N)
    everyone = changed(base, flag_rows=range(N))
    assert check(s, base, everyone) == HEADER + 1 + N + N * 3
    # crossover: 9 + 9 + (k - 1) * 4 <= 300 with gaps of 1 -> up to 71 cubes use indices
    cur = changed(base, flag_rows=range(71))
    assert check(s, base, cur) == HEADER + 1 + 18 + 70 * 4 + 71 * 3
    cur = changed(base, flag_rows=range(72))
    assert check(s, base, cur) == HEADER + 1 + N + 72 * 3


def test_golden_bytes_tiny_world():
    # 2 cubes, 4-bit positions, no header; cube 1 moves by (+1, 0, 0).
    # indices would take count(2) + first(1) = 3 bits > 2 cubes, so changed bits:
    # 1 | 0 | 1, flag 0, pos changed 1, relative 1, x: 1 + 17 (5 bits), y: 1 + 16, z: 1 + 16, quat 0
    s = GafferScheme(2, (4, 4, 4), 2, header=False)
    base = GafferCodes.make(np.zeros((2, 3)), [[3, 1, 1, 1]] * 2, [False, False])
    cur = changed(base, rows=[1], dpos=[1, 0, 0])
    data, nbits = s.encode(base, cur)
    assert (data, nbits) == (bytes([0xF5, 0x18, 0x86, 0x00]), 25)
    assert s.decode(data, base)[0].equals(cur)


# -- hand-checked bit counts: challenge variant --------------------------------------------------------

def test_challenge_index_classes_and_cube_cost():
    base = still_world()
    s = GafferScheme(N, variant="challenge")
    # flags only: flag, position unchanged, orientation relative + all small + 3 x 2 = 10 bits a cube
    cur = changed(base, flag_rows=[3])
    assert check(s, base, cur) == HEADER + 1 + 8 + 9 + 10
    # gaps 1 -> 1 bit, 5 -> 1 + 1 + 3, 7 -> 3 + 3, 127 -> 6 + bits_required(127, 299) = 6 + 8
    cur = changed(base, flag_rows=[3, 4, 9, 16, 143])
    assert check(s, base, cur) == HEADER + 1 + 8 + 9 + (1 + 5 + 6 + 14) + 5 * 10


def test_challenge_position_against_the_prediction():
    base = still_world()
    s = GafferScheme(N, variant="challenge")
    # no previous baseline: the estimate is the baseline, with gravity (3 units) off the up axis,
    # so +1 on x gives zigzag deltas (2, 6, 0): all small, 1 + 3 x 4 bits
    cur = changed(base, rows=[0], dpos=[1, 0, 0])
    assert check(s, base, cur) == HEADER + 1 + 8 + 9 + (1 + 1 + 13 + 8)
    # -40 on x -> zigzag 79: range 2 (1 + 1 + 6), y 6: range 1 (1 + 5), z 0: range 1
    cur = changed(base, rows=[0], dpos=[-40, 0, 0])
    assert check(s, base, cur) == HEADER + 1 + 8 + 9 + (1 + 1 + 1 + 1 + 8 + 6 + 6 + 8)
    # 200 on z -> zigzag 400 >= 224: too large, 3 x 11 bits
    cur = changed(base, rows=[0], dpos=[0, 0, 200])
    assert check(s, base, cur) == HEADER + 1 + 8 + 9 + (1 + 1 + 1 + 1 + 33 + 8)
    cur = changed(base, rows=[0], dpos=[0, 0, 1100])
    with pytest.raises(ValueError, match="cube 0: position delta beyond"):
        s.packet_bits(base, cur)
    with pytest.raises(ValueError, match="cube 0: position delta beyond"):
        s.encode(base, cur)


def test_challenge_prediction_uses_the_previous_baseline():
    s = GafferScheme(N, variant="challenge")
    prev = still_world()
    base = changed(prev, rows=range(N), dpos=[100, 0, 0])
    cur = changed(base, rows=range(N), dpos=[94, 0, 0])
    # estimate x = base + 100 - ceil(100 * 0.062) = base + 93: delta +1 -> zigzag 2 -> all small
    with_prev = check(s, base, cur, prev)
    assert with_prev == HEADER + 1 + N + N * (1 + 1 + 13 + 8)
    assert check(s, base, cur) > with_prev                      # without it: delta 94, not small


def test_challenge_nothing_changed_sends_a_bit_per_cube():
    base = still_world()
    assert check(GafferScheme(N, variant="challenge"), base, base) == HEADER + 1 + N


# -- round trips on the scene ----------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["article", "challenge"])
def test_round_trip_on_the_scene_with_random_baselines(codes, variant):
    s = scene_scheme(60, variant)
    rng = np.random.default_rng(7)
    done = 0
    for k in range(240):
        lag = int(rng.integers(0, 13))
        base = codes[k - lag] if 0 < lag <= k else None
        prev = codes[k - 2 * lag] if base is not None and k >= 2 * lag else None
        check(s, base, codes[k], prev)
        done += 1
    assert done == 240


def test_scene_codes_match_the_scene(scene, codes):
    assert len(codes) == scene.n_ticks
    p = codes[100].position
    assert p.dtype == np.int64 and p.shape == (60, 3)
    assert np.allclose(p[:, 0] * 128 / 65535 - 64, scene.positions[100, :, 0], atol=1 / 512)
    assert np.array_equal(codes[100].flag, scene.at_rest[100])


def test_run_reports_averages(scene, codes):
    res = run(scene, lag=6, codes=codes)
    assert res["packets"] == 234 and res["full_packet_bits"] == HEADER + 60 * 76
    assert res["bits_per_packet"] == res["bits"].mean()
    assert res["bits_per_entity"] == pytest.approx(res["bits_per_packet"] / 60)
    assert 0 < res["bits_per_entity"] < 76


# -- property: any codes, any baseline ---------------------------------------------------------------

@st.composite
def worlds(draw):
    n = draw(st.integers(1, 40))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    pos_bits = (16, 14, 16)
    base_pos = np.stack([rng.integers(2000, (1 << b) - 2000, n) for b in pos_bits], axis=1)
    base_q = np.concatenate([rng.integers(0, 4, (n, 1)), rng.integers(150, 362, (n, 3))], axis=1)
    scale = draw(st.sampled_from([0, 2, 20, 300, 1000]))
    dpos = rng.integers(-scale, scale + 1, (n, 3)) * (rng.random((n, 1)) < 0.5)
    dq = rng.integers(-scale // 4 - 1, scale // 4 + 2, (n, 3)) * (rng.random((n, 1)) < 0.5)
    cur_q = base_q.copy()
    cur_q[:, 1:] = np.clip(base_q[:, 1:] + dq, 0, 511)
    swap = rng.random(n) < 0.1
    cur_q[swap, 0] = (cur_q[swap, 0] + 1) % 4
    flag = rng.random(n) < 0.5
    base = GafferCodes.make(base_pos, base_q, flag)
    cur = GafferCodes.make(base_pos + dpos, cur_q, flag ^ (rng.random(n) < 0.1))
    prev = GafferCodes.make(base_pos - rng.integers(-scale, scale + 1, (n, 3)), base_q, flag)
    return n, base, cur, prev


@settings(max_examples=60, deadline=None)
@given(worlds(), st.sampled_from(["article", "challenge"]), st.booleans(), st.booleans())
def test_any_world_round_trips(world, variant, header, use_prev):
    n, base, cur, prev = world
    s = GafferScheme(n, variant=variant, header=header)
    prev = prev if use_prev else None
    try:
        check(s, base, cur, prev)
    except ValueError as exc:
        # only the challenge coder has a limit: +-1024 units around its prediction
        assert variant == "challenge" and "position delta beyond" in str(exc)
    check(s, None, cur)


def test_decode_rejects_truncated_and_padded_packets():
    base = still_world()
    s = GafferScheme(N)
    cur = changed(base, rows=[7, 90], dpos=[1, 2, 3])
    data, nbits = s.encode(base, cur)
    with pytest.raises(GafferDecodeError, match="past the end"):
        s.decode(data[:-2], base)
    with pytest.raises(GafferDecodeError, match="bits left"):
        s.decode(data + b"\x00", base)
    with pytest.raises(GafferDecodeError, match="initial bit 0 but baseline missing"):
        s.decode(data, None)


def test_scheme_parameters_are_checked():
    with pytest.raises(ValueError, match="variant"):
        GafferScheme(10, variant="zstd")
    with pytest.raises(ValueError, match="n_cubes"):
        GafferScheme(0)
    with pytest.raises(ValueError, match="pos_bits"):
        GafferScheme(10, (16, 14))
    with pytest.raises(ValueError, match="quat_bits"):
        GafferScheme(10, quat_bits=1)
    with pytest.raises(ValueError, match="contiguous"):
        GafferScheme(10, index_classes=((1, 3), (10, 5)))
    with pytest.raises(ValueError, match="current: 5 cubes, the scheme has 10"):
        GafferScheme(10).packet_bits(None, still_world(5))
