"""What a new user trips on (issue 35): NaN under bad="raise", schema-file typos, type errors that
name nothing, the live view's edges, docs that drifted from the tool, the commands' details, and
the client-to-server input example. Each test fails on the code before the fix."""

import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import quantcodec as qc
from quantcodec.tools.examples import player_state

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE_PARENT = str(pathlib.Path(qc.__file__).resolve().parent.parent)

BODY = qc.Schema("Body", [("position", qc.Vector(*[qc.Bounded(-100, 100, 16)] * 3)),
                          ("rotation", qc.Quat(9)), ("health", qc.UInt(7))])


def _columns(n=4):
    return {"position": np.zeros((n, 3)), "rotation": np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)),
            "health": np.full(n, 100)}


# --------------------------------------------------------------------------------------------
# item 2: a NaN in a float column under the default bad="raise"


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_snapshot_refuses_a_non_finite_value_naming_entity_field_and_component(value):
    schema = qc.Schema("Body", BODY.fields)
    cols = _columns()
    cols["position"][2, 1] = value
    with pytest.raises(qc.RangeError) as info:
        schema.snapshot([10, 20, 30, 40], cols)
    e = info.value
    assert e.id == 30 and e.row == 2
    assert str(e).startswith("snapshot: entity 30: field 'position'[1]: row 2: non-finite value"), str(e)
    assert schema.clamped["position"] == 0          # nothing counted: no snapshot was made


def test_snapshot_still_clamps_a_finite_value_out_of_range():
    schema = qc.Schema("Body", BODY.fields)
    cols = _columns()
    cols["position"][1, 0] = 250.0                  # past the edge of the map: a clamp, counted
    snap = schema.snapshot([10, 20, 30, 40], cols)
    assert snap.clamped["position"] == 1
    assert snap.columns["position"][1, 0] == 100.0


def test_snapshot_nan_in_a_nearly_zero_vector_and_float32_columns():
    schema = qc.Schema("S", [("velocity", qc.NearlyZero(qc.Vector(*[qc.PowerCurve(32, 2, 10)] * 3), 0.01))])
    v = np.zeros((3, 3), np.float32)
    v[1, 2] = np.nan
    with pytest.raises(qc.RangeError, match=r"entity 7: field 'velocity'\[2\]: row 1: non-finite value nan"):
        schema.snapshot([5, 7, 9], {"velocity": v})
    snap = schema.snapshot([5, 7, 9], {"velocity": v}, bad="drop")      # the other modes as before
    assert snap.dropped.tolist() == [7]


def test_roundtrip_keeps_the_codec_rule_and_strict_refuses():
    # schema.roundtrip has no bad=: it is the codecs' rule (NaN to code 0, counted as a clamp),
    # as docs/hostile-input.md says; a strict schema refuses it
    schema = qc.Schema("S", [("x", qc.Bounded(-1, 1, 8))])
    assert schema.roundtrip({"x": float("nan")})["x"] == -1.0
    assert schema.clamped["x"] == 1
    strict = qc.Schema("S", [("x", qc.Bounded(-1, 1, 8))], strict=True)
    with pytest.raises(qc.RangeError, match="'x'"):
        strict.roundtrip({"x": float("nan")})
    text = (DOCS / "hostile-input.md").read_text(encoding="utf-8")
    assert "**Which is which.**" in text and "`schema.roundtrip`" in text
