"""The wire format of every codec, pinned: codes, decoded values and packed bytes on fixed
inputs, as written once by tests/golden/codecs/regenerate.py. Any change fails here."""

import json
import os

import numpy as np
import pytest

import quantcodec as qc

with open(os.path.join(os.path.dirname(__file__), "golden", "codecs", "codecs.json")) as f:
    CASES = json.load(f)["cases"]


def _unhex(v):
    if isinstance(v, list):
        return [_unhex(x) for x in v]
    return float.fromhex(v)


def _mask(codes, bits):
    a = np.asarray(codes, dtype=object)
    return np.array([int(v) & ((1 << bits) - 1) for v in a.ravel()], dtype=np.uint64)


@pytest.mark.parametrize("case", CASES, ids=[repr(qc.codec_from_spec(c["spec"])) for c in CASES])
def test_golden(case):
    codec = qc.codec_from_spec(case["spec"])
    inputs = case["inputs"]
    x = np.array(inputs, dtype=codec.code_dtype) if isinstance(inputs[0], int) else np.array(_unhex(inputs))
    codes = codec.quantize(x)
    assert np.asarray(codes).tolist() == case["codes"]
    # the per-value path gives the same codes
    for i in (0, 1, len(x) // 2, len(x) - 1):
        one = x[i].tolist()
        c1 = codec.quantize(tuple(one) if isinstance(one, list) else one)
        if isinstance(codec, qc.NearlyZero):
            c1 = [c1[0], *(c1[1] if isinstance(c1[1], tuple) else [c1[1]])]
        assert np.asarray(c1, dtype=object).tolist() == case["codes"][i]
    if "values" in case:
        got = codec.dequantize(codes)
        want = np.array(_unhex(case["values"]))
        assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
    if "packed" in case:
        packed = qc.pack(_mask(case["codes"], codec.bits), codec.bits)
        assert packed.hex() == case["packed"]
        back = qc.unpack(packed, len(case["codes"]), codec.bits)
        assert back.tolist() == _mask(case["codes"], codec.bits).tolist()
