"""The fixtures the tests, benches and fuzz targets share: the SPEC section 4 example schema
(``PlayerState``) and random columns for it, written once.

Part of the command's tools (``quantcodec.tools``), not of the library: no library module imports
it. It is installed with the package so that the tests, the benches and the fuzz targets run
against an installed wheel as they do against a checkout."""

from .._codecs import Angle, Bool, Bounded, Enum, NearlyZero, PowerCurve, Quat, UInt, Vector
from ..schema import Schema

PLAYER_STATE_LABELS = ("idle", "walk", "run", "jump")


def player_state_fields():
    """The PlayerState fields, a new list of ``(name, codec)`` pairs (append to it freely)."""
    return [
        ("position", Vector(Bounded(-2048, 2048, 18), Bounded(-64, 192, 14), Bounded(-2048, 2048, 18))),
        ("rotation", Quat(9)),
        ("velocity", NearlyZero(Vector(*[PowerCurve(50, 2, 10)] * 3), 0.01)),
        ("yaw", Angle(16)),
        ("health", UInt(8)),
        ("state", Enum(list(PLAYER_STATE_LABELS))),
        ("grounded", Bool()),
    ]


def player_state(extra=(), **kw):
    """``Schema("PlayerState", fields, version=3)``, with ``extra`` fields appended and the other
    keywords (``strict``) passed on."""
    return Schema("PlayerState", player_state_fields() + list(extra), version=3, **kw)


def player_state_columns(n, seed=0, shift=0.0):
    """Random PlayerState columns for n entities (positions offset by ``shift``; every third
    velocity zero), as ``quantize_many`` and ``snapshot`` take them."""
    import numpy as np

    r = np.random.default_rng(seed)
    vel = r.uniform(-20, 20, (n, 3))
    vel[::3] = 0.0
    return {
        "position": r.uniform(-1000, 1000, (n, 3)) + shift,
        "rotation": r.normal(size=(n, 4)),
        "velocity": vel,
        "yaw": r.uniform(0, 6.28, n),
        "health": r.integers(0, 256, n),
        "state": r.integers(0, 4, n).astype(np.uint32),
        "grounded": r.random(n) < 0.5,
    }
