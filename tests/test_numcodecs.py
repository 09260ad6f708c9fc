"""quantcodec.numcodecs: a recorded scene trace stored in Zarr quantized and bit-packed, read back
through dask.array in parallel chunks; configs that rebuild the codec; damaged chunks refused.

Needs the optional extra ``quantcodec[zarr]`` (numcodecs, zarr, dask[array]); skipped without it.
"""

import json
import pickle
import warnings

import numpy as np
import pytest

import quantcodec as qc

numcodecs = pytest.importorskip(
    "numcodecs", reason="numcodecs is not installed: pip install 'quantcodec[zarr]' (the optional extra)")
qnc = pytest.importorskip("quantcodec.numcodecs")
from quantcodec.tools.scene import simulate  # noqa: E402

QuantCodec = qnc.QuantCodec


def _zarr():
    zarr = pytest.importorskip(
        "zarr", reason="zarr is not installed: pip install 'quantcodec[zarr]' (Zarr 3 needs Python >= 3.11)")
    if int(zarr.__version__.split(".")[0]) < 3:
        pytest.skip(f"zarr {zarr.__version__}: these tests use the Zarr 3 API (zarr.create_array)")
    return zarr


def _dask_array():
    return pytest.importorskip(
        "dask.array", reason="dask[array] is not installed: pip install 'quantcodec[zarr]'")


POSITION = qc.Vector(qc.Bounded(-64, 64, 16), qc.Bounded(0, 32, 14), qc.Bounded(-64, 64, 16))
ROTATION = qc.Quat(9)
VELOCITY = qc.NearlyZero(qc.Vector(*[qc.PowerCurve(32.0, 2.0, 10)] * 3), 0.01)
BODY = qc.Schema("Body", [("position", POSITION), ("rotation", ROTATION), ("velocity", VELOCITY),
                          ("at_rest", qc.Bool())])
TICKS, BODIES = 120, 50


@pytest.fixture(scope="module")
def scene():
    return simulate(n_bodies=BODIES, seconds=TICKS / 60, hz=60, seed=3)


def _records(scene, dtype):
    rec = np.zeros(scene.positions.shape[:2], dtype=dtype)
    for name, a in (("position", scene.positions), ("rotation", scene.orientations),
                    ("velocity", scene.velocities)):
        for i in range(a.shape[-1]):
            rec[f"{name}.{i}"] = a[..., i]
    rec["at_rest"] = scene.at_rest
    return rec


def _want(codec, values):
    """What the store must give back: the codec's roundtrip, in the array's dtype (float32)."""
    k = codec.ncomp
    flat = values.reshape(-1, k) if k > 1 else values.reshape(-1)
    return codec.roundtrip(flat).astype(np.float32).reshape(values.shape)


# --------------------------------------------------------------------------------------------
# the codec alone


@pytest.mark.parametrize("codec", [POSITION, ROTATION, VELOCITY, qc.Angle(12), qc.UnitVector(11)],
                         ids=lambda c: c.kind)
def test_encode_decode_equals_roundtrip(codec):
    rng = np.random.default_rng(1)
    k = codec.ncomp
    x = rng.uniform(-1, 1, (7, 5, k) if k > 1 else (7, 5)).astype(np.float32)
    if codec.kind == "Vector":
        x = x * 30 + np.float32([0, 16, 0])
    c = QuantCodec(codec)
    data = c.encode(x[:, ::-1])                              # non-contiguous input
    assert isinstance(data, bytes) and len(data) <= qnc.HEADER_SIZE + (x.size // k * codec.bits + 7) // 8
    back = c.decode(data)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back.reshape(x.shape), _want(codec, np.ascontiguousarray(x[:, ::-1])))
    out = np.empty(x.shape, np.float32)
    c.decode(data, out=out)
    np.testing.assert_array_equal(out, back.reshape(x.shape))


def _common():
    """numcodecs' own codec checks (numcodecs.tests.common: what numcodecs runs on its codecs)."""
    return pytest.importorskip("numcodecs.tests.common", reason="this numcodecs ships no tests.common")


def _unit_quats(n, seed):
    q = np.random.default_rng(seed).normal(size=(n, 4))
    # q and -q are one rotation, one code, decoded with the largest component positive: give
    # them that sign, so that the values come back close to themselves
    big = np.take_along_axis(q, np.abs(q).argmax(axis=1)[:, None], axis=1)
    q *= np.sign(big)
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


# (codec, dtype of the array, the values, decimal places they come back within: the codec's
# max_error below 1.5 * 10**-decimal, as numpy.testing.assert_array_almost_equal checks; None: exact)
_COMMON_CASES = [
    (qc.Bounded(-10, 10, 16), None, np.linspace(-10, 10, 1000, dtype=np.float32), 3),
    (qc.Bounded(-10, 10, 16), "<f8", np.linspace(-10, 10, 1000), 3),
    (POSITION, None, np.random.default_rng(5).uniform([-60, 0, -60], [60, 30, 60], (300, 3)).astype(np.float32), 2),
    (ROTATION, None, _unit_quats(200, 6), 2),
    (qc.Angle(14), None, np.linspace(0, 6.2, 500, dtype=np.float32), 3),
    (qc.Int(16), None, np.arange(-500, 500, dtype=np.int32), None),
    (qc.UInt(12), None, np.arange(0, 4096, 7, dtype=np.uint32), None),
]


@pytest.mark.parametrize("codec, dtype, values, decimal", _COMMON_CASES,
                         ids=[f"{c.kind}-{d or 'default'}" for c, d, _, _ in _COMMON_CASES])
def test_numcodecs_check_encode_decode(codec, dtype, values, decimal):
    # any buffer (bytes, bytearray, array.array, an array) encodes, viewed as the codec's dtype,
    # and decodes into any buffer, within the codec's precision (issue 35, item 8)
    c = QuantCodec(codec) if dtype is None else QuantCodec(codec, dtype=dtype)
    assert values.dtype == c.dtype
    _common().check_encode_decode(values, c, precision=decimal)


@pytest.mark.parametrize("codec", [qc.Bounded(0, 16, 12), qc.PowerCurve(16, 2, 12), qc.UInt(8), qc.Int(8)],
                         ids=lambda c: c.kind)
def test_numcodecs_check_err_decode_object_buffer(codec):
    # decoding into an out= array of Python objects is a TypeError, as every numcodecs codec has it
    _common().check_err_decode_object_buffer(QuantCodec(codec))


def test_a_buffer_that_does_not_hold_whole_values():
    with pytest.raises(ValueError, match="whole values"):
        QuantCodec(qc.Bounded(0, 1, 8)).encode(b"\x00" * 7)           # float32: 4 bytes a value
    with pytest.raises(ValueError, match="whole values of 4 components"):
        QuantCodec(ROTATION).encode(np.zeros(6, np.float32).tobytes())


def test_records_both_layouts():
    rng = np.random.default_rng(2)
    q = rng.normal(size=(9, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    for flat in (True, False):
        dt = qnc.record_dtype(BODY, flat=flat)
        c = QuantCodec(BODY, dtype=dt)
        rec = np.zeros(9, dt)
        if flat:
            for i in range(4):
                rec[f"rotation.{i}"] = q[:, i]
        else:
            rec["rotation"] = q
        rec["at_rest"] = [True, False, True, True, False, False, True, False, True]
        back = c.decode(c.encode(rec))
        assert back.dtype == dt
        rot = np.stack([back[f"rotation.{i}"] for i in range(4)], 1) if flat else back["rotation"]
        np.testing.assert_array_equal(rot, ROTATION.roundtrip(q.astype(np.float32)).astype(np.float32))
        np.testing.assert_array_equal(back["at_rest"], rec["at_rest"])


def test_config_round_trip():
    for c in (QuantCodec(POSITION), QuantCodec(ROTATION, zero_rows="identity"),
              QuantCodec(qc.UInt(12)), QuantCodec(schema=BODY),
              QuantCodec(BODY, dtype=qnc.record_dtype(BODY, "<f8", flat=False))):
        config = c.get_config()
        assert config["id"] == "quantcodec"
        assert ("codec" in config) != ("schema" in config)
        text = json.dumps(config)                        # what Zarr writes into .zarray
        again = numcodecs.get_codec(json.loads(text))     # through numcodecs' registry
        assert type(again) is QuantCodec and again == c and hash(again) == hash(c)
        assert again.get_config() == config
        assert again.schema.fingerprint == c.schema.fingerprint
        assert pickle.loads(pickle.dumps(c)) == c        # ships to Dask workers
    assert QuantCodec(POSITION).get_config()["codec"] == POSITION.spec()
    assert qc.codec_from_spec(QuantCodec(POSITION).get_config()["codec"]) == POSITION
    assert qc.Schema.from_spec(QuantCodec(schema=BODY).get_config()["schema"]) == BODY
    assert QuantCodec(qc.UInt(12)).dtype == np.uint32
    assert QuantCodec(POSITION) != QuantCodec(POSITION, dtype="<f8")
    assert "Quat(bits=9" in repr(QuantCodec(ROTATION))


def test_bad_construction_and_input():
    with pytest.raises(TypeError, match="codec .* or a schema"):
        QuantCodec()
    with pytest.raises(TypeError, match="not both"):
        QuantCodec(BODY, schema=BODY)
    with pytest.raises(TypeError, match="no field 'rotation'"):
        QuantCodec(BODY, dtype=[("position", "<f4", (3,))])
    with pytest.raises(TypeError, match="shape"):
        QuantCodec(BODY, dtype=[("position", "<f4", (2,)), ("rotation", "<f4", (4,)),
                                ("velocity", "<f4", (3,)), ("at_rest", "?")])
    with pytest.raises(ValueError, match="zero_rows"):
        QuantCodec(ROTATION, zero_rows="zero")
    with pytest.raises(ValueError, match="last axis must hold the 4 components"):
        QuantCodec(ROTATION).encode(np.zeros((3, 3), np.float32))
    with pytest.raises(qc.RangeError, match="zero quaternion"):
        QuantCodec(ROTATION).encode(np.zeros((3, 4), np.float32))
    ident = QuantCodec(ROTATION, zero_rows="identity")
    z = np.zeros((3, 4), np.float32)
    back = ident.decode(ident.encode(z)).reshape(3, 4)
    assert (z == 0).all()                                        # the input is never written to
    np.testing.assert_array_equal(back, np.tile(ROTATION.roundtrip((0.0, 0.0, 0.0, 1.0)), (3, 1)).astype(np.float32))


def test_damaged_chunks_raise_never_garbage():
    rng = np.random.default_rng(4)
    x = rng.uniform(-60, 60, (40, 3)).astype(np.float32)
    x[:, 1] = np.abs(x[:, 1]) % 32
    c = QuantCodec(POSITION)
    data = c.encode(x)
    good = c.decode(data)
    # every single-bit flip anywhere (header and payload) is refused
    for pos in range(len(data)):
        for bit in (0, 3, 7):
            bad = bytearray(data)
            bad[pos] ^= 1 << bit
            with pytest.raises(qc.DecodeError):
                c.decode(bytes(bad))
    for cut in (0, 5, qnc.HEADER_SIZE - 1, qnc.HEADER_SIZE, len(data) - 1):
        with pytest.raises(qc.DecodeError):
            c.decode(data[:cut])
    with pytest.raises(qc.DecodeError):
        c.decode(data + b"\0")
    with pytest.raises(qc.DecodeError, match="not a quantcodec chunk"):
        c.decode(b"\x28\xb5\x2f\xfd" + data[4:])                    # a zstd frame, say
    with pytest.raises(qc.DecodeError, match="fingerprint"):
        QuantCodec(qc.Vector(*[qc.Bounded(-64, 64, 16)] * 3)).decode(data)   # another codec's chunk
    with pytest.raises(qc.DecodeError, match="version"):
        c.decode(data[:3] + b"\x02" + data[4:])
    assert issubclass(qc.DecodeError, ValueError)
    np.testing.assert_array_equal(c.decode(data), good)


# --------------------------------------------------------------------------------------------
# Zarr and Dask


def _write_trace(zarr, store, scene, compressor):
    """The scene's trace as four Zarr arrays: positions, quaternions, velocities, and the records."""
    arrays = {}
    for name, codec, values in (("positions", POSITION, scene.positions),
                                ("orientations", ROTATION, scene.orientations),
                                ("velocities", VELOCITY, scene.velocities)):
        z = zarr.create_array(store, name=name, shape=values.shape, chunks=(30, BODIES, values.shape[-1]),
                              dtype="f4", filters=[QuantCodec(codec)], compressors=compressor,
                              zarr_format=2)
        z[:] = values
        arrays[name] = z
    dt = qnc.record_dtype(BODY)
    z = zarr.create_array(store, name="records", shape=(TICKS, BODIES), chunks=(30, 25), dtype=dt,
                          filters=[QuantCodec(BODY)], compressors=compressor, zarr_format=2)
    z[:] = _records(scene, dt)
    arrays["records"] = z
    return arrays


@pytest.mark.parametrize("compressor", ["none", "zstd"])
def test_scene_trace_through_zarr_and_dask(scene, tmp_path, compressor):
    zarr = _zarr()
    da = _dask_array()
    comp = None if compressor == "none" else numcodecs.Zstd(level=3)
    store = zarr.storage.LocalStore(tmp_path / "trace.zarr")
    _write_trace(zarr, store, scene, comp)

    root = zarr.open_group(store, mode="r")            # reopened: the codec comes from the config
    for name, codec, values in (("positions", POSITION, scene.positions),
                                ("orientations", ROTATION, scene.orientations),
                                ("velocities", VELOCITY, scene.velocities)):
        z = root[name]
        assert z.filters == (QuantCodec(codec),)
        x = da.from_zarr(z)
        assert x.numblocks[0] == TICKS // 30             # four blocks, read in parallel
        back = x.compute(scheduler="threads", num_workers=2)
        np.testing.assert_array_equal(back, _want(codec, values))
    rec = da.from_zarr(root["records"]).compute(scheduler="threads", num_workers=2)
    assert rec.dtype == qnc.record_dtype(BODY)
    np.testing.assert_array_equal(np.stack([rec[f"rotation.{i}"] for i in range(4)], -1),
                                  _want(ROTATION, scene.orientations))
    np.testing.assert_array_equal(np.stack([rec[f"velocity.{i}"] for i in range(3)], -1),
                                  _want(VELOCITY, scene.velocities))
    np.testing.assert_array_equal(rec["at_rest"], scene.at_rest)

    # a map over the blocks on Dask's side: the worst error per block stays within the codec's
    pos = da.from_zarr(root["positions"])
    err = abs(pos - da.from_array(scene.positions, chunks=pos.chunks)).max(axis=(1, 2)).compute()
    assert err.max() <= max(POSITION.max_error) * (1 + 1e-6) + 1e-5


def test_a_corrupted_chunk_on_disk_raises(scene, tmp_path):
    zarr = _zarr()
    da = _dask_array()
    for compressor in (None, numcodecs.Zstd(level=3)):
        path = tmp_path / f"trace-{compressor is None}.zarr"
        store = zarr.storage.LocalStore(path)
        _write_trace(zarr, store, scene, compressor)
        chunk = path / "orientations" / "1.0.0"
        data = bytearray(chunk.read_bytes())
        data[len(data) // 2] ^= 0x10
        chunk.write_bytes(bytes(data))
        z = zarr.open_array(store, path="orientations", mode="r")
        np.testing.assert_array_equal(z[:30], _want(ROTATION, scene.orientations[:30]))   # others fine
        # refused with the codec's DecodeError (or, under Zstd, whichever layer notices first)
        errors = (qc.DecodeError,) if compressor is None else (qc.DecodeError, RuntimeError, ValueError)
        with pytest.raises(errors):
            z[30:60]
        with pytest.raises(errors):
            da.from_zarr(z).compute(scheduler="threads", num_workers=2)


def test_edge_chunks_and_zarr_format_3(scene, tmp_path):
    zarr = _zarr()
    da = _dask_array()
    store = zarr.storage.LocalStore(tmp_path / "edge.zarr")
    q = scene.orientations[:100]                          # 100 ticks in chunks of 30: Zarr pads the last
    z = zarr.create_array(store, name="q2", shape=q.shape, chunks=(30, BODIES, 4), dtype="f4",
                          filters=[QuantCodec(ROTATION, zero_rows="identity")], compressors=None,
                          zarr_format=2)
    z[:] = q
    np.testing.assert_array_equal(da.from_zarr(z).compute(), _want(ROTATION, q))

    # zarr_format=3: the codec as the array-to-bytes serializer, followed by Zstd
    if qnc.ZarrQuantCodec is None:
        pytest.skip("this Zarr has no zarr.codecs.numcodecs (Zarr >= 3.1.3) for zarr_format=3 arrays")
    with warnings.catch_warnings():
        # Zarr warns that numcodecs codecs are outside the Zarr 3 specification
        warnings.simplefilter("ignore", category=UserWarning)
        ser = qnc.ZarrQuantCodec(**QuantCodec(ROTATION, zero_rows="identity").get_config())
        z3 = zarr.create_array(store, name="q3", shape=q.shape, chunks=(30, BODIES, 4), dtype="f4",
                               serializer=ser, compressors=zarr.codecs.ZstdCodec(level=3), zarr_format=3)
        z3[:] = q
        again = zarr.open_array(store, path="q3", mode="r")
        back = da.from_zarr(again).compute(scheduler="threads", num_workers=2)
    np.testing.assert_array_equal(back, _want(ROTATION, q))


def test_the_entry_point_finds_the_codec_in_a_fresh_process(tmp_path):
    """A process that only opens a store must find the codec by its id: numcodecs looks it up
    through the numcodecs.codecs entry point of the installed distribution."""
    import importlib.metadata as md
    import subprocess
    import sys
    try:
        eps = md.distribution("quantcodec").entry_points
    except md.PackageNotFoundError:
        pytest.skip("quantcodec is not installed (a source tree on sys.path): no entry points")
    if not any(ep.group == "numcodecs.codecs" and ep.name == "quantcodec" for ep in eps):
        pytest.skip("this installation of quantcodec predates the numcodecs.codecs entry point")
    config = json.dumps(QuantCodec(schema=BODY).get_config())
    code = ("import json, sys, numcodecs\n"
            "c = numcodecs.get_codec(json.loads(sys.argv[1]))\n"
            "print(type(c).__module__, type(c).__name__, c.schema.fingerprint)\n")
    proc = subprocess.run([sys.executable, "-c", code, config], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["quantcodec.numcodecs", "QuantCodec", BODY.fingerprint]
