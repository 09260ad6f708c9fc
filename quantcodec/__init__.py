"""quantcodec: quantize, bit-pack and delta-compress state for latency-critical servers.

    import quantcodec as qc
    pose = qc.Schema("Pose", [("position", qc.Vector(*[qc.Bounded(-64, 64, 16)] * 3)),
                              ("rotation", qc.Quat(9))])
    data = pose.encode({"position": (1.0, 2.0, 3.0), "rotation": (0, 0, 0, 1)})
"""

__version__ = "0.1.0"

from .errors import CodecError, DecodeError, RangeError, SchemaError

try:
    from ._codecs import (
        Angle, Bool, Bounded, Codec, Enum, Fixed, Grid, Half, Int, IntRange, NearlyZero, PowerCurve, Quat,
        UInt, UnitVector, Vector, bits_for, codec_from_spec,
    )
    from ._bitstream import BitReader, BitWriter, pack, unpack
    from .schema import Schema, check_lockstep
    from .snapshot import PacketCache, Snapshot, SnapshotDecoder, SnapshotEncoder
    from .session import LinkStats, StreamClient, StreamServer
except ImportError as e:  # pragma: no cover - only in an unbuilt source tree
    raise ImportError(
        "quantcodec's compiled core is not built: install it with `pip install .` "
        "(or `pip install -e .` in a source checkout). Original error: " + str(e)
    ) from e

__all__ = [
    "__version__",
    # errors
    "CodecError", "SchemaError", "RangeError", "DecodeError",
    # codecs
    "Codec", "Bounded", "Fixed", "Angle", "PowerCurve", "Half", "UInt", "Int", "IntRange", "Bool", "Enum",
    "Quat", "UnitVector", "Vector", "Grid", "NearlyZero", "codec_from_spec", "bits_for",
    # bit stream
    "BitWriter", "BitReader", "pack", "unpack",
    # schema
    "Schema", "check_lockstep",
    # snapshots
    "Snapshot", "SnapshotEncoder", "SnapshotDecoder", "PacketCache",
    # sessions
    "StreamServer", "StreamClient", "LinkStats",
]
