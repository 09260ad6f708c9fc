"""Helpers shared by several test modules (a test module never imports another: pytest would
collect its tests twice, and one module's edits would break another's import)."""

import importlib.util
import pathlib
import sys

import numpy as np

import quantcodec as qc

ROOT = pathlib.Path(__file__).resolve().parent.parent


def repo_tool(name):
    """A script of the repository's tools/ folder (outside the package) as a module, e.g. the
    worst-case search tools/search.py."""
    spec = importlib.util.spec_from_file_location(f"qc_tools_{name}", ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    path = list(sys.path)
    try:
        spec.loader.exec_module(module)
    finally:
        # a script may extend sys.path for its imports: never for the rest of the session (a
        # checkout root on it would shadow the installed package in spawned processes)
        sys.path[:] = path
    return module


def ref_slots(schema):
    """A schema's slot table in the form of tests/refdecoder.py (the decoder written from the
    docs): (kind, bits, field, span, component bits, signed, Quat top code) per slot. Used by the
    conformance tests and by bench/context_study.py."""
    from quantcodec import conformance
    from quantcodec._schemabase import plan_of
    kinds = {"Quat": "quat", "UnitVector": "uvec", "Bool": "abs", "Enum": "abs",
             "PowerCurve": "smag", "Half": "smag"}
    signed = conformance.signed_slots(schema)
    out = []
    for entry, sg in zip(plan_of(schema).slot_table(), signed):
        spec = schema.codecs[entry["field"]].spec()
        if spec["kind"] == "Vector":
            spec = spec["codecs"][entry["comp"]]
        elif spec["kind"] == "NearlyZero":
            inner = spec["inner"]
            spec = inner["codecs"][entry["comp"]] if inner["kind"] == "Vector" else inner
        kind = "flag" if entry["kind"] == "flag" else kinds.get(spec["kind"], "ord")
        cbits = spec.get("bits", 0) if kind in ("quat", "uvec") else 0
        top = ((1 << cbits) - (2 if spec.get("mode") == "midpoint" else 1)) if kind == "quat" else 0
        out.append((kind, entry["bits"], entry["field"], entry["span"], cbits, sg, top))
    return out


def stream(schema, history=64, **kw):
    """An encoder and a decoder that adopted its hello (docs/wire-format.md 13)."""
    enc = qc.SnapshotEncoder(schema, history, **kw)
    return enc, qc.SnapshotDecoder.from_hello(schema, enc.hello())


def all_kinds():
    """One field of every codec kind and option (incl. 64-bit, signed, 0-bit and mixed vectors)."""
    return qc.Schema("AllKinds", [
        ("b_end", qc.Bounded(-10, 10, 12)),
        ("b_bins", qc.Bounded(0, 1, 5, mode="bins")),
        ("b_one", qc.Bounded(0, 1, 1)),
        ("fx", qc.Fixed(0.5, 8, offset=10.0)),
        ("fx_u", qc.Fixed(0.01, 12, signed=False)),
        ("fx64", qc.Fixed(1e-7, 64)),
        ("ang", qc.Angle(12)),
        ("ang_sd", qc.Angle(10, signed=True, unit="deg")),
        ("pc", qc.PowerCurve(50, 2, 10)),
        ("half", qc.Half()),
        ("u64", qc.UInt(64)),
        ("i64", qc.Int(64)),
        ("i7", qc.Int(7)),
        ("flag", qc.Bool()),
        ("enum", qc.Enum(["a", "b", "c"])),
        ("enum_n", qc.Enum(5)),
        ("enum_1", qc.Enum(["only"])),
        ("quat", qc.Quat(9)),
        ("quat_bins", qc.Quat(11, mode="bins")),
        ("uvec", qc.UnitVector(12)),
        ("vec", qc.Vector(qc.Bounded(-1, 1, 8), qc.UInt(4), qc.Int(5), qc.Angle(8))),
        ("grid", qc.Grid(16.0, 40, 24)),
        ("nz", qc.NearlyZero(qc.Bounded(-5, 5, 9), 0.25)),
        ("nzv", qc.NearlyZero(qc.Vector(qc.PowerCurve(10, 1.5, 8), qc.Fixed(0.1, 9)), 0.05)),
        ("hp", qc.IntRange(0, 100)),
        ("wide", qc.IntRange(-2 ** 40, 2 ** 40)),
        ("nzir", qc.NearlyZero(qc.IntRange(-5, 5), 0)),
    ], version=7)


def remap_packet(j, d=(0, 0, 0)):
    """A packet (seq 1 against seq 0) for a one-entity Quat(9) schema whose code changes to
    dropped index j, as the remap form of docs/wire-format.md 7.3 with differences d, k = 0."""
    def eg0(w, u):                              # EG(0, 9) for u < 2**5 - 1
        e = (u + 1).bit_length() - 1
        w.write(0, e)
        w.write(1, 1)
        w.write((u + 1) ^ (1 << e), e)
    w = qc.BitWriter()
    w.write(1, 16)                              # seq
    w.write(1, 1)                               # has_base
    w.write(0b001, 3)                           # EG(2, 16) of bdist - 1 = 0
    w.write(0, 1)                               # no pred
    w.write(0, 2)                               # removed: SET(1) empty
    w.write(1, 1)                               # no new entities: EG(0, 32) of 0
    w.write(3, 2)                               # changed: SET(1) as a mask
    w.write(1, 1)
    w.write(3, 2)                               # field 'rotation' changed: SET(1) as a mask
    w.write(1, 1)
    for _ in range(3):
        w.write(0, 4)                           # k = 0 for a, b_, c
    w.write(0, 6)                               # EG(0, 9)'s escape: E = 6 zeros
    w.write(1, 1)                               # extra bit 1: a new largest component
    w.write(1, 1)                               # the remap form
    w.write(j, 2)
    for di in d:
        eg0(w, 2 * di if di >= 0 else -2 * di - 1)
    return w.getvalue()


def pose_schema():
    """The views tests' schema: a 2-D position on a 512 m square, a yaw, a health."""
    return qc.Schema("Pose", [
        ("position", qc.Vector(qc.Bounded(-256, 256, 18), qc.Bounded(-256, 256, 18))),
        ("yaw", qc.Angle(10)),
        ("hp", qc.UInt(7)),
    ])


class World:
    """The views tests' world: entities on a 512 m square: a share of them move every tick, a few appear and leave."""

    def __init__(self, n, seed, moving=0.3, churn=0):
        self.rng = np.random.default_rng(seed)
        self.ids = np.arange(1, n + 1, dtype=np.uint64)
        self.pos = self.rng.uniform(-250, 250, size=(n, 2))
        self.vel = self.rng.normal(0, 3.0, size=(n, 2)) * (self.rng.random(n) < moving)[:, None]
        self.yaw = self.rng.uniform(0, 6.28, size=n)
        self.hp = self.rng.integers(0, 100, size=n)
        self.churn = churn
        self.next_id = n + 1

    def step(self, schema):
        self.pos = np.clip(self.pos + self.vel / 60.0, -255, 255)
        self.yaw = (self.yaw + 0.01 * (self.vel[:, 0] != 0)) % 6.28
        for _ in range(self.churn):
            i = int(self.rng.integers(0, len(self.ids)))
            self.ids[i] = self.next_id
            self.next_id += 1
            self.pos[i] = self.rng.uniform(-250, 250, size=2)
        order = np.argsort(self.ids)
        self.ids, self.pos, self.vel = self.ids[order], self.pos[order], self.vel[order]
        self.yaw, self.hp = self.yaw[order], self.hp[order]
        return schema.snapshot(self.ids, {"position": self.pos, "yaw": self.yaw, "hp": self.hp})


def wait_child(pid, what, seconds=60.0):
    """The wait status of forked child ``pid``, polled for ``seconds``; past that the child is
    killed and the test fails naming ``what`` (a hang fails instead of holding the run)."""
    import os
    import signal
    import time

    import pytest

    for _ in range(int(seconds * 10)):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"{what} hung in a forked child")


def deliver_exact(server, clients, out):
    """One tick of a perfect link: every datagram of ``out`` (StreamServer.send's) to its client,
    each view it decodes asserted to be the one the server recorded under its number, and each
    client's reply back to the server."""
    for c, dgs in out.items():
        for d in dgs:
            v = clients[c].receive(d)
            if v is not None:
                assert v == server.encoder(c)._state.sent[v.seq]
        r = clients[c].reply()
        if r is not None:
            server.receive(c, r)
