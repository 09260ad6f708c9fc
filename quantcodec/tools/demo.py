"""``quantcodec demo``: the embedded scene streamed raw, quantized and delta-compressed.

The scene is ``quantcodec.tools.scene`` (a deterministic rigid-body world: bodies drop, bounce,
roll and go to sleep while two driven bodies keep pushing through the pile), quantized with the
scene's default schema (``scene.scene_schema_fields``). The streaming over a lossy link with
delayed acks is ``quantcodec.tools.link`` (shared with the bandwidth bench); this module runs it
with a progress bar and presents the result as text, JSON or a figure.
"""

import textwrap
import time

import numpy as np

from .. import __version__
from ..errors import UserError

__all__ = ["run", "format_text", "to_json", "plot", "require_matplotlib", "scene_schema", "STREAMS"]

N_DRIVEN = 2            # the scene's kinematic "player" bodies (fewer when there are fewer bodies)

STREAMS = ("raw", "quantized", "delta")
_LABELS = {
    "raw": "raw float32",
    "quantized": "quantized, full",
    "delta": "snapshot delta",
}


def scene_schema():
    """The scene's default schema (position, rotation, velocity): the one the demo streams."""
    from .link import default_schema
    return default_schema(velocity=True)


def require_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UserError("--plot needs matplotlib: pip install 'quantcodec[plot]'") from None


# --------------------------------------------------------------------------------------------
# the run


def _simulate(n_entities, seconds, hz, seed, bar):
    """The scene, tick by tick (for the progress bar), stacked like ``scene.simulate``."""
    from .scene import iter_ticks
    driven = min(N_DRIVEN, n_entities)
    ticks = iter_ticks(n_entities, seconds, hz, seed, n_kinematic=driven)
    ids, pos, rot, vel, rest = [], [], [], [], []
    for tick in ticks:
        ids.append(tick.ids)
        pos.append(tick.positions)
        rot.append(tick.orientations)
        vel.append(tick.velocities)
        rest.append(tick.at_rest)
        bar.update(1)
    return (np.stack(ids), np.stack(pos), np.stack(rot), np.stack(vel), np.stack(rest), driven)


def _changed_since_previous(ids, values):
    """Per tick, the share of entities whose `values` rows differ from the previous tick's
    (matched by id; tick 0 and new entities count as changed). values: (T, N, ...)."""
    from .report import changed_rows
    T, N = ids.shape
    shares = np.empty(T)
    shares[0] = 1.0
    flat = values.reshape(T, N, -1)
    for k in range(1, T):
        shares[k] = changed_rows(ids[k], flat[k], ids[k - 1], flat[k - 1]).mean()
    return shares


def run(n_entities=300, seconds=10.0, hz=60, loss=0.05, ack_delay_ms=100.0, seed=0, progress=True,
        series=False):
    """Simulate the scene and stream it raw, quantized and delta-compressed over a lossy link.

    Returns the result as a dict (the JSON document of ``--json``); with ``series=True`` it also
    holds ``_series``: per-tick bits and every decoded error, for :func:`plot`.
    """
    from .progress import progress_bar
    from .report import quat_angle_deg
    from .link import run_stream

    started = time.perf_counter()
    n_ticks = int(round(seconds * hz))
    if n_ticks < 1:
        raise UserError(f"--seconds {seconds:g} at --hz {hz} gives no tick; ask for at least {1 / hz:.3g} s")
    schema = scene_schema()
    # one bar of n_ticks ticks a phase (simulating, then streaming the same ticks): it counts
    # each tick once, never 2 * n_ticks "ticks"
    bar = progress_bar(n_ticks, "simulating", enabled=progress)
    try:
        ids, pos, rot, vel, rest, driven = _simulate(n_entities, seconds, hz, seed, bar)
        bar.reset(total=n_ticks)
        bar.set_description("streaming")
        done = [0]

        def step(k, total):
            bar.update(k - done[0])
            done[0] = k

        res = run_stream(pos, rot, vel, ids=ids, schema=schema, hz=hz, loss=loss,
                         ack_delay=ack_delay_ms / 1000.0, seed=seed, progress=step)
    finally:
        bar.close()
    if res["mismatches"]:
        raise RuntimeError(f"{res['mismatches']} decoded snapshots differ from what the server quantized")

    # what every full (and delta) packet carries: the schema's roundtrip of the server's floats
    flat = {"position": pos.reshape(-1, 3), "rotation": rot.reshape(-1, 4), "velocity": vel.reshape(-1, 3)}
    codes = schema.quantize_many(flat)
    decoded = schema.dequantize_many(codes)
    pos_err = np.abs(decoded["position"] - flat["position"])                 # per axis, metres
    rot_err = quat_angle_deg(flat["rotation"], decoded["rotation"])
    code_rows = np.concatenate([codes[name].reshape(n_ticks * ids.shape[1], -1).astype(np.uint64)
                                for name in schema.names], axis=1).reshape(n_ticks, ids.shape[1], -1)
    raw_rows = np.concatenate([pos, rot, vel], axis=2)

    n_mean = res["entities"]
    streams = {}
    for name, bits, changed, worst_pos, worst_rot in (
            ("raw", res["raw_bits"], _changed_since_previous(ids, raw_rows).mean(), 0.0, 0.0),
            ("quantized", res["full_bits"], _changed_since_previous(ids, code_rows).mean(),
             float(pos_err.max()), float(rot_err.max())),
            ("delta", res["delta_bits"], res["changed"], res["max_position_error"], res["max_rotation_error"])):
        streams[name] = {
            "bytes_per_entity": bits / 8.0,
            "kbit_per_s": bits * n_mean * hz / 1000.0,
            "changed_share": float(changed),
            "worst_position_error_m": float(worst_pos),
            "worst_rotation_error_deg": float(worst_rot),
        }
    position_bound = max(schema["position"].max_error)
    result = {
        "quantcodec": __version__,
        "scene": {"entities": int(n_entities), "driven": int(driven), "seconds": float(seconds), "hz": int(hz),
                  "ticks": int(n_ticks), "seed": int(seed), "moving_share": float(1.0 - rest.mean())},
        "link": {"loss": float(loss), "ack_delay_ms": float(ack_delay_ms),
                 "ack_delay_ticks": int(max(0, round(ack_delay_ms / 1000.0 * hz))),
                 "lost_packets": int(res["lost"]), "undecodable_packets": int(res["undecodable"]),
                 "full_packets": int(res["full_packets"])},
        "schema": {"name": schema.name, "fingerprint": schema.fingerprint, "bits": int(schema.bits),
                   "position_max_error_m": float(position_bound),
                   "rotation_max_error_deg": float(schema["rotation"].max_error),
                   "summary": _schema_summary(schema, res["raw_bits"]), "spec": schema.spec()},
        "streams": streams,
        "wall_seconds": time.perf_counter() - started,
    }
    if series:
        result["_series"] = _series(schema, ids, pos, rot, vel, res, pos_err, rot_err, hz)
    return result


def _schema_summary(schema, raw_bits):
    p, q, v = schema["position"], schema["rotation"], schema["velocity"]
    return (f"position {p.bits} bits ({max(p.step) * 1000:.2f} mm step), rotation {q.bits} bits "
            f"(smallest three, {q.max_error:.2f} deg worst), velocity 1..{v.bits} bits "
            f"(1 at rest): at most {schema.bits} bits a body against {raw_bits:g} raw")


def _series(schema, ids, pos, rot, vel, res, pos_err, rot_err, hz):
    """Per-tick bits of the three streams and the decoded errors, for the figure."""
    from ..snapshot import SnapshotEncoder
    n_ticks, n = ids.shape
    full = np.empty(n_ticks)
    enc = SnapshotEncoder(schema)                 # never acknowledged: every packet is full
    for k in range(n_ticks):
        enc.encode(k & 0xFFFF, schema.snapshot(ids[k], {"position": pos[k], "rotation": rot[k], "velocity": vel[k]}))
        full[k] = enc.last_bits
    raw = np.full(n_ticks, res["raw_bits"] * n)
    return {"raw": raw, "quantized": full, "delta": np.asarray(res["packet_bits"], dtype=np.float64),
            "position_errors": pos_err.reshape(-1), "rotation_errors": rot_err.reshape(-1)}


# --------------------------------------------------------------------------------------------
# presentation


def to_json(r):
    """The JSON document of ``quantcodec demo --json`` (plain numbers, no arrays)."""
    return {k: v for k, v in r.items() if not k.startswith("_")}


def _mm(v):
    return f"{v * 1000:.2f} mm"


def _count(n, one, many=None):
    return f"{n} {one if n == 1 else (many or one + 's')}"


def format_text(r):
    sc, link, streams = r["scene"], r["link"], r["streams"]
    out = [
        f"quantcodec demo: {_count(sc['entities'], 'body', 'bodies')} ({sc['driven']} driven), "
        f"{sc['seconds']:g} s at {sc['hz']} Hz = {_count(sc['ticks'], 'tick')}, seed {sc['seed']}; "
        f"{sc['moving_share'] * 100:.0f}% of body-updates in motion",
        f"link: {link['loss'] * 100:g}% packet loss ({link['lost_packets']} of {sc['ticks']} lost), "
        f"acks {link['ack_delay_ms']:g} ms ({link['ack_delay_ticks']} ticks) late",
        f"schema: {r['schema']['summary']}",
    ]
    out = [textwrap.fill(line, width=100, subsequent_indent="  ") for line in out] + [""]
    head = ("stream", "bytes/entity/update", "kbit/s", "changed", "worst position", "worst rotation")
    rows = []
    for name in STREAMS:
        s = streams[name]
        exact = s["worst_position_error_m"] == 0 and s["worst_rotation_error_deg"] == 0
        rows.append((name, f"{s['bytes_per_entity']:.2f}", f"{s['kbit_per_s']:.1f}",
                     f"{s['changed_share'] * 100:.1f}%",
                     "0 (exact)" if exact else _mm(s["worst_position_error_m"]),
                     "0 (exact)" if exact else f"{s['worst_rotation_error_deg']:.3f} deg"))
    widths = [max(len(head[i]), *(len(row[i]) for row in rows)) for i in range(len(head))]

    def line(row):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    out += [line(head), line(tuple("-" * w for w in widths))] + [line(row) for row in rows]
    raw, full, delta = (streams[n]["bytes_per_entity"] for n in STREAMS)
    out.append("")
    if 0 < delta < full:
        out.append(f"delta is {raw / delta:.1f}x smaller than raw floats and {full / delta:.1f}x smaller "
                   f"than full quantized snapshots")
    out += [
        "bytes and kbit/s: the datagrams (each packet and its 32-bit check; for delta, the hello too\n"
        "  when a packet goes without a baseline), without UDP/IP headers.",
        "changed: entities whose floats (raw) or codes (quantized) differ from the previous tick's, or",
        "  (delta) whose codes differ from the packet's baseline: the only ones that cost more than a bit.",
        "errors: what the client decoded against the server's floats; positions per axis.",
    ]
    return "\n".join(out)


def plot(r, path):
    """kbit/s over time for the three streams and the distribution of decoded errors, as a PNG."""
    require_matplotlib()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = r["_series"]
    hz = r["scene"]["hz"]
    t = np.arange(r["scene"]["ticks"]) / hz
    fig, (ax_rate, ax_pos, ax_rot) = plt.subplots(1, 3, figsize=(15, 4.4), constrained_layout=True)
    window = max(1, int(round(hz / 4)))         # a quarter-second moving average
    kernel = np.ones(window)
    for name in STREAMS:
        kbits = series[name] * hz / 1000.0
        smooth = np.convolve(kbits, kernel, mode="same") / np.convolve(np.ones_like(kbits), kernel, mode="same")
        ax_rate.plot(t, smooth, label=f"{_LABELS[name]} ({r['streams'][name]['kbit_per_s']:.0f} kbit/s)")
    ax_rate.set_yscale("log")
    ax_rate.set_xlabel("time (s)")
    ax_rate.set_ylabel(f"kbit/s ({window}-tick moving average)")
    ax_rate.set_title(f"{r['scene']['entities']} bodies at {hz} Hz, {r['link']['loss'] * 100:g}% loss, "
                      f"acks {r['link']['ack_delay_ms']:g} ms late", fontsize=10)
    ax_rate.grid(True, which="both", alpha=0.3)
    ax_rate.legend(fontsize=8)

    for ax, key, scale, unit, bound in (
            (ax_pos, "position_errors", 1000.0, "mm", r["schema"]["position_max_error_m"] * 1000.0),
            (ax_rot, "rotation_errors", 1.0, "degrees", r["schema"]["rotation_max_error_deg"])):
        e = series[key] * scale
        ax.hist(e, bins=60, color="tab:green", alpha=0.8,
                label="decoded, quantized and delta\n(the same values, code for code)")
        ax.axvline(bound, color="black", linestyle=":", label=f"codec bound {bound:.3g} {unit}")
        ax.set_xlabel(f"error ({unit})")
        ax.set_ylabel("values")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    ax_pos.set_title("position error per axis (raw floats: 0)", fontsize=10)
    ax_rot.set_title("rotation error (raw floats: 0)", fontsize=10)
    try:
        fig.savefig(path, dpi=100)
    except (OSError, ValueError) as e:
        raise UserError(f"cannot write {path}: {e}") from None
    finally:
        plt.close(fig)
