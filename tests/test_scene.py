"""The deterministic bench scene (quantcodec.tools.scene)."""

import numpy as np
import pytest

from quantcodec.tools.scene import (
    FIRST_ID,
    SLEEP_TICKS,
    WORLD_HALF_WIDTH,
    WORLD_HEIGHT,
    Scene,
    Tick,
    iter_ticks,
    scene_schema_fields,
    simulate,
)


@pytest.fixture(scope="module")
def scene():
    return simulate(60, 4.0, seed=0)


@pytest.fixture(scope="module")
def quiet():
    """No kinematic bodies: everything falls asleep."""
    return simulate(60, 4.0, seed=1, n_kinematic=0)


def test_shapes_and_dtypes(scene):
    assert isinstance(scene, Scene)
    assert scene.n_ticks == 240 and scene.n_bodies == 60 and len(scene) == 240
    assert scene.hz == 60 and scene.dt == 1 / 60 and scene.seconds == 4.0
    assert scene.positions.shape == (240, 60, 3) and scene.positions.dtype == np.float32
    assert scene.orientations.shape == (240, 60, 4) and scene.orientations.dtype == np.float32
    assert scene.velocities.shape == (240, 60, 3) and scene.velocities.dtype == np.float32
    assert scene.ids.shape == (240, 60) and scene.ids.dtype == np.uint32
    assert scene.at_rest.shape == (240, 60) and scene.at_rest.dtype == bool
    assert scene.kinematic.tolist() == [False] * 58 + [True] * 2


def test_same_seed_same_bits_other_seed_other_world(scene):
    again = simulate(60, 4.0, seed=0)
    for name in ("ids", "positions", "orientations", "velocities", "at_rest", "kinematic", "radii"):
        assert np.array_equal(getattr(scene, name), getattr(again, name)), name
    other = simulate(60, 1.0, seed=2)
    assert not np.array_equal(other.positions, scene.positions[:60])


def test_iter_ticks_matches_simulate(scene):
    ticks = list(iter_ticks(60, 1.0, seed=0))
    assert len(ticks) == 60
    for k, tick in enumerate(ticks):
        assert isinstance(tick, Tick) and tick.index == k and tick.time == k / 60
        assert np.array_equal(tick.positions, scene.positions[k])
        assert np.array_equal(tick.orientations, scene.orientations[k])
        assert np.array_equal(tick.velocities, scene.velocities[k])
        assert np.array_equal(tick.ids, scene.ids[k])
        assert np.array_equal(tick.at_rest, scene.at_rest[k])
    last = scene.tick(-1)
    assert last.index == 239 and np.array_equal(last.positions, scene.positions[239])
    assert sorted(scene.columns(3)) == ["position", "rotation", "velocity"]


def test_unit_quaternions(scene):
    norm = np.sqrt((scene.orientations.astype(np.float64) ** 2).sum(axis=2))
    assert np.abs(norm - 1.0).max() < 1e-6


def test_bodies_stay_in_bounds_and_above_ground(scene):
    p = scene.positions
    assert p[..., 0].min() >= -WORLD_HALF_WIDTH and p[..., 0].max() <= WORLD_HALF_WIDTH
    assert p[..., 2].min() >= -WORLD_HALF_WIDTH and p[..., 2].max() <= WORLD_HALF_WIDTH
    assert p[..., 1].min() >= 0.0 and p[..., 1].max() <= WORLD_HEIGHT
    # centres never sink more than a few mm below one radius
    assert (p[..., 1] - scene.radii).min() > -0.01


def test_bodies_fall_from_the_air_and_land(scene):
    dyn = ~scene.kinematic
    assert scene.positions[0, dyn, 1].min() > 2.0          # all spawned in the air
    assert np.median(scene.positions[-1, dyn, 1]) < 0.6    # most end on the ground (radius 0.5)


def test_moving_bodies_move_centimetres_per_tick(scene):
    step = np.sqrt(((scene.positions[1:61] - scene.positions[:60]) ** 2).sum(axis=2))
    moving = step[step > 0]
    assert 0.01 < np.median(moving) < 0.3                  # metres per tick in the first second


def test_ids_are_stable_and_unique(scene):
    assert (scene.ids == scene.ids[0]).all()
    assert scene.ids[0].tolist() == list(range(FIRST_ID, FIRST_ID + 60))


def test_most_bodies_come_to_rest_and_stop_changing(quiet):
    moving = quiet.moving_fraction()
    assert moving[0] == 1.0 and moving[60] > 0.9          # everything moves during the fall
    assert moving[-1] == 0.0                              # all asleep by 4 s without a kinematic body
    both = quiet.at_rest[1:] & quiet.at_rest[:-1]
    assert both.sum() > 1000
    # a body at rest changes by exactly nothing, and its velocity is exactly zero
    assert np.array_equal(quiet.positions[1:][both], quiet.positions[:-1][both])
    assert np.array_equal(quiet.orientations[1:][both], quiet.orientations[:-1][both])
    assert not quiet.velocities[quiet.at_rest].any()


def test_sleep_needs_sixteen_still_ticks(quiet):
    # nobody can be asleep before SLEEP_TICKS ticks have passed
    assert not quiet.at_rest[:SLEEP_TICKS].any()


def test_most_bodies_rest_with_kinematic_bodies_too():
    s = simulate(150, 3.5, seed=0)
    rest = s.at_rest[-1][~s.kinematic].mean()
    assert rest > 0.6


def test_kinematic_bodies_keep_moving(scene):
    kin = scene.kinematic
    assert not scene.at_rest[:, kin].any()
    step = np.sqrt(((scene.positions[1:, kin] - scene.positions[:-1, kin]) ** 2).sum(axis=2))
    assert step.min() > 0.02                                # about 5 cm per tick
    assert not np.array_equal(scene.orientations[-1, kin], scene.orientations[-2, kin])
    assert np.abs(scene.velocities[:, kin]).max() > 1.0


def test_kinematic_bodies_wake_sleepers(scene):
    # without kinematic bodies the small pile is fully asleep by 4 s; with them, some stay awake
    assert scene.moving_fraction()[-1] > scene.kinematic.mean()


def test_churn_replaces_bodies_with_new_ids():
    s = simulate(40, 2.0, seed=0, churn=True, churn_every=20)
    assert s.ids.shape == (120, 40)
    seen = set()
    appeared = 0
    for k in range(s.n_ticks):
        row = s.ids[k]
        assert len(set(row.tolist())) == 40                 # unique within a tick
        new = set(row.tolist()) - seen
        if k:
            appeared += len(new)
            assert all(i >= FIRST_ID + 40 for i in new)       # fresh ids, never reused
            gone = set(s.ids[k - 1].tolist()) - set(row.tolist())
            assert len(gone) == len(new) <= 1
        seen |= set(row.tolist())
    assert appeared == 119 // 20                            # ticks 20, 40, ..., 100
    assert (s.ids[:, s.kinematic] == s.ids[0, s.kinematic]).all()


def test_churn_off_is_the_default_world():
    a = simulate(30, 1.0, seed=5)
    b = simulate(30, 1.0, seed=5, churn=False, churn_every=7)
    assert np.array_equal(a.positions, b.positions)


@pytest.mark.parametrize("kwargs, message", [
    ({"n_bodies": 0}, "n_bodies"),
    ({"n_bodies": 5, "n_kinematic": 6}, "n_kinematic"),
    ({"hz": 0}, "hz"),
    ({"seconds": 0.0}, "at least one tick"),
    ({"churn_every": 0}, "churn_every"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        simulate(**kwargs)


def test_schema_fields_are_plain_data():
    fields = scene_schema_fields()
    assert [name for name, _ in fields] == ["position", "rotation", "velocity"]
    kinds = dict(fields)
    kind, params = kinds["position"]
    assert kind == "Vector"
    xs, ys, zs = params["codecs"]
    assert xs == zs == ("Bounded", {"min": -64.0, "max": 64.0, "bits": 16})
    assert ys == ("Bounded", {"min": 0.0, "max": 32.0, "bits": 14})
    assert kinds["rotation"] == ("Quat", {"bits": 9})
    assert scene_schema_fields(rotation_bits=10)[1] == ("rotation", ("Quat", {"bits": 10}))
    kind, params = kinds["velocity"]
    assert kind == "NearlyZero" and params["threshold"] == 0.01
    assert params["inner"][0] == "Vector" and len(params["inner"][1]["codecs"]) == 3


def test_scene_fits_the_schema_bounds(scene):
    # no clamping: every position lies inside the schema ranges, speeds under the 32 m/s curve max
    assert np.abs(scene.velocities).max() < 32.0
