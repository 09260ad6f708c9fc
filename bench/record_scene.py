"""Record a rigid-body scene from a real physics engine (MuJoCo) for ``bench_bandwidth.py --scene``.

Bench-only: quantcodec does not depend on MuJoCo. The scene is in the style of Gaffer On Games'
cube demo: ``--bodies`` 1 m cubes spawn in a loose cloud (a jittered lattice, 1.6 m apart, 2-3
layers from 2.8 m up, random orientations, small random linear and angular velocities), fall
onto a ground plane, collide, tumble, slide and come to rest; ``--pushers`` heavy 2 m cubes
(8 times the mass of a small one) are driven around wobbling circles through the pile by a
horizontal force servo, so the world never goes fully static (they play the part of Gaffer's
player cube). The pushers are ordinary dynamic bodies (they slide, tip, and are slowed by what
they hit); they are the last rows and are never at rest.

Engine: MuJoCo (``pip install mujoco``), box-box contacts, physics timestep ``1 / (hz *
substeps)`` (default 60 Hz x 4 = 240 Hz), the state sampled once per ``1 / hz`` tick. Everything
is deterministic for a given seed on a given machine and MuJoCo version (single thread, the seed
feeds only the spawn).

Axes and quaternions. quantcodec's scene is y-up with quaternions stored (x, y, z, w) (see
``quantcodec.tools.scene``; ``quantcodec.tools.link.run_stream`` and ``bench/gaffer.py`` read them so). MuJoCo is
z-up and stores quaternions (w, x, y, z). The recording maps MuJoCo (x, y, z) to quantcodec
(x, z, -y), a proper rotation C (x stays, up becomes y, MuJoCo's y becomes -z), so a position p
becomes C p and a body orientation R becomes C R C^T, i.e. the quaternion (w, v) becomes
(C v, w) written (x, y, z, w). The ground plane is y = 0; a resting small cube has y = 0.5.
Bounds of the schema: x, z in [-64, 64] m, y in [0, 32] m; the recorder reports if any body
leaves them (the quantizer would clamp it).

``at_rest`` (T, N) bool, ``--rest``:
  ``sleep`` (default): MuJoCo's own island sleeping (``option/flag sleep="enable"``,
      ``sleep_tolerance`` = ``--sleep-tolerance`` m/s): at_rest is ``mjData.body_awake ==
      mjS_ASLEEP``. An island (bodies joined by contacts) falls asleep when every velocity in it
      (angular ones scaled by the body size) stays below the tolerance for mjMINAWAKE (10)
      physics steps; MuJoCo then sets its velocities to zero, so a sleeping body's state is
      frozen bit for bit, like Gaffer's forced rest. Contact with an awake body wakes the island.
  ``speed``: the engine does not sleep (sleeping disabled); a body is at rest on a tick when its
      linear speed is below 0.01 m/s and its angular speed below 0.01 rad/s. Resting bodies keep
      the engine's micro-motion (contact solver creep), which is the case to look at for jitter.
  The pushers are never at rest.

``velocities``: linear velocity of each body's centre (world frame, m/s), mapped like positions.

Output .npz (float32 arrays, like ``quantcodec.tools.scene``): ``positions`` (T, N, 3),
``orientations`` (T, N, 4) unit quaternions (x, y, z, w), ``velocities`` (T, N, 3), ``ids``
(N,) uint32, ``at_rest`` (T, N) bool, ``hz``; and, ignored by the bench, ``pusher`` (N,) bool,
``angular_speed`` (T, N) rad/s and ``meta`` (a JSON string: engine, version, options).

    python bench/record_scene.py --bodies 300 --seconds 10 --out /tmp/mj300.npz
    python bench/record_scene.py --bodies 900 --out /tmp/mj900.npz
    python bench/record_scene.py --rest speed --out /tmp/mj300_nosleep.npz   # engine never sleeps
    python bench/bench_bandwidth.py --scene /tmp/mj300.npz [--loss 0.1]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

HALF_WIDTH = 64.0            # schema bounds: x, z in [-64, 64], y (up) in [0, 32]
HEIGHT = 32.0
CUBE_HALF = 0.5              # small cubes: 1 m across, like Gaffer's
PUSHER_HALF = 1.0            # pushers: 2 m across, 8x the mass at the same density
PUSHER_SPEED = 3.0           # m/s along the path (5 cm per 60 Hz tick)
REST_SPEED = 0.01            # --rest speed: m/s
REST_ANGULAR_SPEED = 0.01    # --rest speed: rad/s


# --------------------------------------------------------------------------------------------
# the spawn (same layout rule as quantcodec.tools.scene, so the two scenes are comparable)


def spawn(n_cubes, seed):
    """Initial state of the small cubes, in quantcodec axes (y up): positions, quaternions (x, y,
    z, w), linear and angular velocities, and the half width of the pile."""
    rng = np.random.default_rng(seed)
    side = max(2, math.ceil(math.sqrt(n_cubes / 2.0)))
    layers = -(-n_cubes // (side * side)) + 1
    slots = rng.permutation(side * side * layers)[:n_cubes]
    layer, cell = np.divmod(slots, side * side)
    gz, gx = np.divmod(cell, side)
    spacing = 1.6            # a cube's corners span sqrt(3) = 1.73 m, so two neighbours can
                             # touch at spawn; rare, and the engine pushes them apart
    x = (gx - (side - 1) / 2.0) * spacing + rng.uniform(-0.2, 0.2, n_cubes)
    z = (gz - (side - 1) / 2.0) * spacing + rng.uniform(-0.2, 0.2, n_cubes)
    y = 2.8 + 2.2 * layer + rng.uniform(-0.2, 0.2, n_cubes)
    pos = np.stack([x, y, z], axis=1)
    vel = rng.uniform(-1.0, 1.0, (n_cubes, 3)) * np.array([1.0, 0.5, 1.0])
    angvel = rng.uniform(-4.0, 4.0, (n_cubes, 3))
    q = rng.normal(size=(n_cubes, 4))
    q /= np.sqrt((q * q).sum(axis=1))[:, None]
    return pos, q, vel, angvel, (side * spacing) / 2.0, rng


# --------------------------------------------------------------------------------------------
# axis conventions: quantcodec (x, y up, z) <-> MuJoCo (x, y, z up); C maps MuJoCo to quantcodec


def qc_from_mj_vec(v):
    """MuJoCo (x, y, z) -> quantcodec (x, z, -y), along the last axis."""
    v = np.asarray(v)
    return np.stack([v[..., 0], v[..., 2], -v[..., 1]], axis=-1)


def mj_from_qc_vec(v):
    """quantcodec (x, y, z) -> MuJoCo (x, -z, y), the inverse of :func:`qc_from_mj_vec`."""
    v = np.asarray(v)
    return np.stack([v[..., 0], -v[..., 2], v[..., 1]], axis=-1)


def qc_from_mj_quat(q):
    """MuJoCo (w, x, y, z) -> quantcodec (x, y, z, w) with the axes mapped: (C v, w)."""
    q = np.asarray(q)
    v = qc_from_mj_vec(q[..., 1:4])
    return np.concatenate([v, q[..., :1]], axis=-1)


def mj_from_qc_quat(q):
    """quantcodec (x, y, z, w) -> MuJoCo (w, x, y, z), the inverse of :func:`qc_from_mj_quat`."""
    q = np.asarray(q)
    v = mj_from_qc_vec(q[..., :3])
    return np.concatenate([q[..., 3:4], v], axis=-1)


# --------------------------------------------------------------------------------------------
# MuJoCo


def build_model_xml(n_cubes, n_pushers, args):
    sleep = "enable" if args.rest == "sleep" else "disable"
    dt = 1.0 / (args.hz * args.substeps)
    bodies = []
    for i in range(n_cubes):
        bodies.append(f'<body name="c{i}"><freejoint/><geom class="cube"/></body>')
    for k in range(n_pushers):
        bodies.append(f'<body name="p{k}" sleep="never"><freejoint/><geom class="pusher"/></body>')
    # Walls just outside the schema's x/z bounds keep bodies inside them (they are never reached
    # in the default scenes; the recorder reports it if any body gets within 1 m of a bound).
    w = HALF_WIDTH + 0.5
    walls = "".join(
        f'<geom type="box" pos="{x} {y} {HEIGHT / 2}" size="{sx} {sy} {HEIGHT / 2}" rgba="0 0 0 0"/>'
        for x, y, sx, sy in ((w, 0, 0.5, w), (-w, 0, 0.5, w), (0, w, w, 0.5), (0, -w, w, 0.5)))
    return f"""
<mujoco model="quantcodec cube scene">
  <option timestep="{dt!r}" gravity="0 0 -9.81" solver="Newton" cone="pyramidal"
          sleep_tolerance="{args.sleep_tolerance!r}">
    <flag sleep="{sleep}"/>
  </option>
  <default>
    <geom friction="{args.friction} 0.005 0.0001" density="1000"/>
    <default class="cube"><geom type="box" size="{CUBE_HALF} {CUBE_HALF} {CUBE_HALF}"/></default>
    <default class="pusher"><geom type="box" size="{PUSHER_HALF} {PUSHER_HALF} {PUSHER_HALF}"/></default>
  </default>
  <worldbody>
    <geom name="ground" type="plane" size="0 0 1"/>
    {walls}
    {''.join(bodies)}
  </worldbody>
</mujoco>
"""


class PusherPaths:
    """Wobbling circles around the pile centre (alternate directions), as in quantcodec.tools.scene."""

    def __init__(self, n, pile_half, rng):
        k = np.arange(n)
        self.r0 = 0.35 * pile_half + (0.6 * pile_half) * (k + 1) / max(1, n)
        self.amp = 0.25 * self.r0
        self.dir = np.where(k % 2 == 0, 1.0, -1.0)
        self.phase = rng.uniform(0.0, 2.0 * math.pi, n)
        self.wobble = rng.uniform(0.0, 2.0 * math.pi, n)

    def at(self, t):
        """Ground-plane (quantcodec x, z) positions and velocities of the path at time t."""
        from quantcodec.tools.scene import wobbling_circle

        (x, z), (vx, vz) = wobbling_circle(t, self.r0, self.amp, self.dir, self.phase, self.wobble,
                                           PUSHER_SPEED)
        return np.stack([x, z], axis=1), np.stack([vx, vz], axis=1)


def record(args, log=print):
    import mujoco

    n_pushers = args.pushers
    n_cubes = args.bodies - n_pushers
    if n_cubes < 1:
        raise SystemExit("--bodies must exceed --pushers")
    pos0, quat0, vel0, angvel0, pile_half, rng = spawn(n_cubes, args.seed)
    paths = PusherPaths(n_pushers, pile_half, rng)

    model = mujoco.MjModel.from_xml_string(build_model_xml(n_cubes, n_pushers, args))
    data = mujoco.MjData(model)
    N = n_cubes + n_pushers
    body = np.arange(1, N + 1)                       # body 0 is the world
    qadr = model.jnt_qposadr[model.body_jntadr[body]]  # free joints: qpos 7 (pos, quat w x y z)
    vadr = model.jnt_dofadr[model.body_jntadr[body]]   # qvel 6 (linear world, angular local)
    qpos_idx = qadr[:, None] + np.arange(7)
    qvel_idx = vadr[:, None] + np.arange(6)

    # initial state, written in MuJoCo axes
    ppos, _ = paths.at(0.0)
    init_pos = np.concatenate([pos0, np.column_stack([ppos[:, 0], np.full(n_pushers, PUSHER_HALF + 0.01),
                                                      ppos[:, 1]])])
    init_quat = np.concatenate([quat0, np.tile([0.0, 0.0, 0.0, 1.0], (n_pushers, 1))])
    qpos = np.array(data.qpos)
    qpos[qpos_idx[:, :3]] = mj_from_qc_vec(init_pos)
    qpos[qpos_idx[:, 3:]] = mj_from_qc_quat(init_quat)
    data.qpos[:] = qpos
    qvel = np.zeros(model.nv)
    qvel[qvel_idx[:n_cubes, :3]] = mj_from_qc_vec(vel0)
    # free-joint angular velocity is in the body frame: rotate the world spin into it
    R = np.empty((n_cubes, 9))
    for i in range(n_cubes):
        mujoco.mju_quat2Mat(R[i], qpos[qpos_idx[i, 3:]])
    w_world = mj_from_qc_vec(angvel0)
    qvel[qvel_idx[:n_cubes, 3:]] = np.einsum("nji,nj->ni", R.reshape(-1, 3, 3), w_world)
    data.qvel[:] = qvel
    mujoco.mj_forward(model, data)

    pusher_bodies = body[n_cubes:]
    pusher_mass = model.body_mass[pusher_bodies]
    gain = 8.0                                          # 1/s: velocity servo of the pushers
    pos_gain = 1.5                                      # 1/s: pull back onto the path

    T = int(round(args.seconds * args.hz))
    positions = np.empty((T, N, 3), dtype=np.float32)
    orientations = np.empty((T, N, 4), dtype=np.float32)
    velocities = np.empty((T, N, 3), dtype=np.float32)
    ang_speed = np.empty((T, N), dtype=np.float32)
    at_rest = np.zeros((T, N), dtype=bool)
    asleep_code = int(mujoco.mjtSleepState.mjS_ASLEEP)
    t0 = time.perf_counter()
    for k in range(T):
        if k:
            for _ in range(args.substeps):
                if n_pushers:
                    # horizontal force servo toward the path's velocity (plus a pull onto it)
                    p_path, v_path = paths.at(data.time)
                    ppos = qc_from_mj_vec(data.xpos[pusher_bodies])
                    pvel = qc_from_mj_vec(data.qvel[qvel_idx[n_cubes:, :3]])
                    v_cmd = v_path + pos_gain * (p_path - ppos[:, [0, 2]])
                    f = np.zeros((n_pushers, 3))
                    f[:, [0, 2]] = (gain * pusher_mass)[:, None] * (v_cmd - pvel[:, [0, 2]])
                    data.xfrc_applied[pusher_bodies, :3] = mj_from_qc_vec(f)
                mujoco.mj_step(model, data)
        q = np.asarray(data.qpos)[qpos_idx]
        v = np.asarray(data.qvel)[qvel_idx]
        positions[k] = qc_from_mj_vec(q[:, :3])
        orientations[k] = qc_from_mj_quat(q[:, 3:])
        velocities[k] = qc_from_mj_vec(v[:, :3])
        ang_speed[k] = np.sqrt((v[:, 3:] ** 2).sum(axis=1))
        if args.rest == "sleep":
            at_rest[k] = np.asarray(data.body_awake)[body] == asleep_code
        else:
            speed = np.sqrt((v[:, :3] ** 2).sum(axis=1))
            at_rest[k] = (speed < REST_SPEED) & (ang_speed[k] < REST_ANGULAR_SPEED)
        at_rest[k, n_cubes:] = False
        if args.progress and (k + 1) % args.hz == 0:
            log(f"  t={(k + 1) / args.hz:5.1f} s  at rest {at_rest[k].mean():6.1%}  "
                f"({time.perf_counter() - t0:.1f} s wall)", file=sys.stderr)
    meta = {"engine": "mujoco", "version": mujoco.__version__, "bodies": N, "pushers": n_pushers,
            "seconds": args.seconds, "hz": args.hz, "substeps": args.substeps, "seed": args.seed,
            "rest": args.rest, "sleep_tolerance": args.sleep_tolerance, "friction": args.friction,
            "axes": "quantcodec (x, y up, z) = MuJoCo (x, z, -y); quaternions (x, y, z, w)"}
    pusher = np.zeros(N, dtype=bool)
    pusher[n_cubes:] = True
    return dict(positions=positions, orientations=orientations, velocities=velocities,
                ids=np.arange(N, dtype=np.uint32), at_rest=at_rest, hz=np.int64(args.hz),
                pusher=pusher, angular_speed=ang_speed, meta=np.array(json.dumps(meta))), \
        time.perf_counter() - t0


# --------------------------------------------------------------------------------------------
# a summary: bounds, rest, and how often resting bodies' quantized codes change (jitter)


def summarize(rec, hz, log=print):
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.append(here)           # gaffer.py, beside this file
    try:
        import quantcodec  # noqa: F401
    except ImportError:                 # a built source checkout (appended: never shadows an install)
        sys.path.append(os.path.dirname(here))
    import gaffer

    pos, quat, rest = rec["positions"], rec["orientations"], rec["at_rest"]
    T, N = rest.shape
    lo, hi = pos.reshape(-1, 3).min(axis=0), pos.reshape(-1, 3).max(axis=0)
    log(f"extent: x {lo[0]:.2f}..{hi[0]:.2f}  y {lo[1]:.3f}..{hi[1]:.2f}  z {lo[2]:.2f}..{hi[2]:.2f} m"
        f"  (bounds x, z +-{HALF_WIDTH:g}, y 0..{HEIGHT:g})")
    out = (np.abs(pos[..., 0]) > HALF_WIDTH) | (np.abs(pos[..., 2]) > HALF_WIDTH) \
        | (pos[..., 1] < 0.0) | (pos[..., 1] > HEIGHT)
    log(f"samples outside the bounds (clamped by the quantizer): {int(out.sum())}")
    norm = np.sqrt((quat.astype(np.float64) ** 2).sum(axis=-1))
    log(f"quaternion norms: {norm.min():.6f}..{norm.max():.6f}")
    settle = min(4 * hz, T - 1)
    log(f"at rest: whole run {rest.mean():.1%}, from 4 s {rest[settle:].mean():.1%}, "
        f"last tick {rest[-1].mean():.1%}")
    bounds, bits, qbits = gaffer._scene_bounds_bits()
    pc = gaffer.quantize_positions(pos.reshape(-1, 3), bounds, bits).reshape(T, N, 3)
    qc = gaffer.quantize_orientations(quat.reshape(-1, 4), qbits).reshape(T, N, 4)
    dpos = np.any(pc[1:] != pc[:-1], axis=2)
    dquat = np.any(qc[1:] != qc[:-1], axis=2)
    changed = dpos | dquat
    both = rest[1:] & rest[:-1]                      # at rest on this tick and the one before
    log(f"bodies whose quantized state changed from the previous tick: {changed.mean():.1%} per tick "
        f"(from 4 s: {changed[settle - 1:].mean():.1%})")
    if both.any():
        log(f"  of bodies at rest on both ticks: {changed[both].mean():.2%} changed "
            f"(position {dpos[both].mean():.2%}, orientation {dquat[both].mean():.2%}); "
            f"mean {changed[both].sum() / max(1, both.shape[0]):.1f} bodies a tick")
        step = np.abs(pc[1:] - pc[:-1]).max(axis=2)[both]
        log(f"  largest position code step among them: {int(step.max())}")
    moving = ~rest[1:]
    log(f"  of bodies not at rest: {changed[moving].mean():.1%} changed" if moving.any() else "")
    # bodies that are physically still over 1 s (moved < 1 mm) but keep changing codes
    if T > hz:
        still = np.abs(pos[hz:] - pos[:-hz]).max(axis=2) < 0.001
        log(f"bodies that moved < 1 mm over the last second: {still[-1].mean():.1%} at the end; "
            f"among those ticks, codes changed on {changed[hz - 1:][still].mean():.2%}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bodies", type=int, default=300, help="all bodies, pushers included")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--hz", type=int, default=60, help="sampling rate (ticks per second)")
    ap.add_argument("--substeps", type=int, default=4, help="physics steps per tick (4: 240 Hz)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pushers", type=int, default=2, help="heavy 2 m cubes driven through the pile")
    ap.add_argument("--rest", choices=("sleep", "speed"), default="sleep",
                    help="at_rest from MuJoCo's sleeping (default) or, with sleeping off, a speed rule")
    ap.add_argument("--sleep-tolerance", type=float, default=1e-3,
                    help="MuJoCo sleep_tolerance, m/s (its default 1e-3)")
    ap.add_argument("--friction", type=float, default=0.5, help="sliding friction coefficient")
    ap.add_argument("--engine", choices=("mujoco",), default="mujoco",
                    help="only MuJoCo is implemented")
    ap.add_argument("--out", default="scene.npz")
    ap.add_argument("--progress", action="store_true", help="print a line per simulated second")
    ap.add_argument("--no-summary", action="store_true")
    args = ap.parse_args(argv)
    rec, wall = record(args)
    np.savez_compressed(args.out, **rec)
    T, N = rec["at_rest"].shape
    print(f"wrote {args.out}: {N} bodies ({args.pushers} pushers) x {T} ticks at {args.hz} Hz, "
          f"{args.engine}, physics {args.hz * args.substeps} Hz, rest={args.rest}; {wall:.1f} s")
    if not args.no_summary:
        summarize(rec, args.hz)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
