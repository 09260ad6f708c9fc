"""A player-movement trace: a scene of another character than the falling bodies of the bench.

Players on a flat arena, driven by inputs that change every 0.25-2 s, as a shooter's or a
brawler's would: stand, walk (1.6 m/s), run (5.5 m/s) or strafe, turn (a mouse: the yaw and aim
pitch rates jump to new values at each input change, often to 0), and jump (5 m/s up,
gravity down, landing on the ground). Horizontal velocity follows the input with a ground
acceleration of 30 m/s**2 (3 in the air), so a change of input is a short ramp, not a step; a
player reaching the arena's wall turns back. Integrated at 120 Hz, sampled at 60 Hz.

Unlike the bench scene (bodies that fall and come to rest), most players move most of the time,
their motion changes direction at input changes the receiver cannot foresee, and their
orientation is a yaw (and a small pitch) that turns at a steady rate between changes.

The output is a recording as ``bench/bench_bandwidth.py --scene`` reads it: positions (T,N,3),
orientations (T,N,4) x,y,z,w, velocities (T,N,3), ids, at_rest (standing still, not turning),
hz. Positions are the capsule's centre, 0.9 m above the feet.

    python bench/player_scene.py --players 64 --seconds 20 --out /tmp/players.npz
    python bench/bench_bandwidth.py --scene /tmp/players.npz
"""

from __future__ import annotations

import argparse

import numpy as np


def simulate(players=64, seconds=20.0, hz=60, seed=0, arena=40.0, substeps=2):
    """The trace as a dict of arrays (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    n, T = int(players), int(round(seconds * hz))
    dt = 1.0 / (hz * substeps)
    g, centre = 9.81, 0.9
    pos = np.zeros((n, 3))
    pos[:, 0] = rng.uniform(-arena * 0.8, arena * 0.8, n)
    pos[:, 2] = rng.uniform(-arena * 0.8, arena * 0.8, n)
    pos[:, 1] = centre
    vel = np.zeros((n, 3))
    yaw = rng.uniform(-np.pi, np.pi, n)
    pitch = np.zeros(n)
    yaw_rate = np.zeros(n)
    pitch_rate = np.zeros(n)
    speed = np.zeros(n)         # wanted speed
    strafe = np.zeros(n)        # wanted direction relative to the facing (radians)
    next_input = rng.uniform(0.0, 1.0, n)
    t = 0.0
    out_pos = np.zeros((T, n, 3))
    out_quat = np.zeros((T, n, 4))
    out_vel = np.zeros((T, n, 3))
    for k in range(T):
        for _ in range(substeps):
            grounded = pos[:, 1] <= centre + 1e-9
            due = next_input <= t
            if due.any():
                m = int(due.sum())
                mode = rng.choice(4, m, p=[0.2, 0.35, 0.35, 0.1])        # stand, walk, run, strafe
                speed[due] = np.choose(mode, [0.0, 1.6, 5.5, 3.0])
                strafe[due] = np.where(mode == 3, rng.choice([-np.pi / 2, np.pi / 2], m),
                                       np.where(rng.random(m) < 0.1, np.pi, 0.0))
                turning = rng.random(m) < 0.6
                yaw_rate[due] = np.where(turning, rng.normal(0.0, np.radians(120.0), m), 0.0)
                pitch_rate[due] = np.where(rng.random(m) < 0.4, rng.normal(0.0, np.radians(30.0), m), 0.0)
                jump = due.copy()
                jump[due] = rng.random(m) < 0.2
                jump &= grounded
                vel[jump, 1] = 5.0
                next_input[due] = t + rng.uniform(0.25, 2.0, m)
            # walls: turn back towards the centre
            out = (np.abs(pos[:, 0]) > arena) | (np.abs(pos[:, 2]) > arena)
            if out.any():
                yaw[out] = np.arctan2(-pos[out, 0], -pos[out, 2])
                yaw_rate[out] = 0.0
                strafe[out] = 0.0
            yaw = (yaw + yaw_rate * dt + np.pi) % (2 * np.pi) - np.pi
            pitch = np.clip(pitch + pitch_rate * dt, -1.2, 1.2)
            heading = yaw + strafe
            want = np.stack([np.sin(heading) * speed, np.cos(heading) * speed], axis=1)
            cur = vel[:, [0, 2]]
            acc = np.where(grounded, 30.0, 3.0)[:, None] * dt
            d = want - cur
            norm = np.linalg.norm(d, axis=1, keepdims=True)
            step = np.where(norm > acc, d * (acc / np.maximum(norm, 1e-12)), d)
            vel[:, 0] += step[:, 0]
            vel[:, 2] += step[:, 1]
            airborne = (pos[:, 1] > centre + 1e-9) | (vel[:, 1] > 0)
            vel[airborne, 1] -= g * dt
            pos += vel * dt
            landed = pos[:, 1] < centre
            pos[landed, 1] = centre
            vel[landed, 1] = 0.0
            t += dt
        out_pos[k] = pos
        out_vel[k] = vel
        # yaw about y, then the aim pitch about the player's x: q = q_yaw * q_pitch (x, y, z, w)
        cy, sy = np.cos(yaw / 2), np.sin(yaw / 2)
        cp, sp = np.cos(pitch / 2), np.sin(pitch / 2)
        out_quat[k] = np.stack([cy * sp, sy * cp, -sy * sp, cy * cp], axis=1)
    still = np.zeros((T, n), dtype=bool)
    still[1:] = (np.linalg.norm(out_vel[1:], axis=2) < 1e-3) & np.all(
        np.abs(out_quat[1:] - out_quat[:-1]) < 1e-4, axis=2)
    return {"positions": out_pos.astype(np.float32), "orientations": out_quat.astype(np.float32),
            "velocities": out_vel.astype(np.float32), "ids": np.arange(n, dtype=np.uint64),
            "at_rest": still, "hz": np.int64(hz)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--players", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--hz", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    np.savez_compressed(a.out, **simulate(a.players, a.seconds, a.hz, a.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
