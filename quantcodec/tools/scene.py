"""A deterministic rigid-body scene: the embedded world of ``quantcodec demo`` and of the benches.

A few hundred 1 m bodies (spheres for contact, with a full orientation, like the cubes of Gaffer
On Games' snapshot demos) drop from up to 7.5 m onto a ground plane in a 20 m wide cluster, bounce,
knock into each other, slide and roll with friction, spin, lose energy and go to sleep. A couple of
larger *kinematic* bodies are driven around wobbling circles through the pile, waking the bodies they
touch, so the world never goes fully static (they play the part of the player's cube in Gaffer's
demo). Pure NumPy, vectorized over bodies and contacts; no Python loop over bodies or pairs.

Model (per tick of ``1 / hz`` seconds):

1. Kinematic bodies are placed on their path at the new time (velocity is the path's derivative;
   they roll without slipping, so their orientation changes every tick).
2. Awake dynamic bodies get gravity (9.81 m/s^2) and a little air damping.
3. Broad phase: sort and sweep along x (``searchsorted`` on the sorted x, pairs generated with
   ``repeat``), then an exact sphere-sphere test. Pairs of two sleeping bodies are skipped, except
   for sleeping bodies that are off the ground (their support is re-checked every tick).
4. Wake rule: a sleeping body touched by a kinematic body, or by an awake body moving faster than
   ``WAKE_SPEED``, wakes up; a sleeping body off the ground that nothing supports any more wakes up.
5. Velocity solve: ``SOLVER_ITERATIONS`` Jacobi iterations of accumulated, clamped normal impulses
   (restitution, none below ``BOUNCE_THRESHOLD``) and Coulomb friction impulses at sphere-sphere
   and ground contacts, with mass splitting (each body's inverse mass and inertia scaled by its
   contact count) so that Jacobi does not overshoot in piles. Friction acts at the contact point,
   so it spins bodies up and turns sliding into rolling. Sleeping bodies take part with infinite
   mass (they do not move); kinematic bodies push with infinite mass.
6. Rolling resistance on the ground, then integration: position by velocity, orientation by the
   exact rotation ``exp(omega * dt / 2)`` applied to the unit quaternion (x, y, z, w), renormalized.
7. Penetration is removed by projection (pairs split by inverse mass, ground and walls clamped:
   x and z in [-64, 64], y in [0, 32], body surfaces inside).
8. Sleep rule (Gaffer On Games, "Snapshot Compression": cubes at rest jittered by tiny amounts
   after quantization, so he forced a cube to rest after 16 frames without significant motion):
   an awake dynamic body whose speed stays below ``SLEEP_SPEED`` (about one 2 mm quantization step
   per tick) and angular speed below ``SLEEP_ANGULAR_SPEED`` for ``SLEEP_TICKS`` ticks snaps to rest:
   velocities become exactly zero and its position and orientation stop changing, bit for bit.

Everything is computed in float64 from a seeded ``numpy.random.Generator``; the same seed gives the
same arrays, bit for bit, on the same platform (NumPy's elementwise float64 arithmetic,
``bincount`` and stable sorts are deterministic). Outputs are float32.

With ``churn=True`` bodies also disappear and appear mid-run: every ``churn_every`` ticks one
dynamic body is removed and a new one, with a new id, drops in from 8-10 m in the same row.

``simulate()`` returns a :class:`Scene` of stacked arrays; ``iter_ticks()`` yields one
:class:`Tick` at a time. ``scene_schema_fields()`` is the default field list (as plain data) that
the demo and the benches quantize this scene with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, List, NamedTuple, Tuple

import numpy as np

__all__ = [
    "Scene",
    "Tick",
    "simulate",
    "iter_ticks",
    "scene_schema_fields",
    "WORLD_HALF_WIDTH",
    "WORLD_HEIGHT",
]

# World bounds: x, z in [-64, 64] m, y (up) in [0, 32] m; the ground is y = 0.
WORLD_HALF_WIDTH = 64.0
WORLD_HEIGHT = 32.0

GRAVITY = 9.81
BODY_RADIUS = 0.5            # dynamic bodies: 1 m across, like Gaffer's cubes
KINEMATIC_RADIUS = 1.0       # the "player" bodies pushed around in circles
KINEMATIC_SPEED = 3.0        # m/s along the path: 5 cm per tick at 60 Hz

RESTITUTION_GROUND = 0.35
RESTITUTION_BODY = 0.25
BOUNCE_THRESHOLD = 0.6       # m/s: slower impacts do not bounce
FRICTION_GROUND = 0.5
FRICTION_BODY = 0.3
ROLLING_DAMPING = 0.80       # angular velocity kept per tick while touching the ground
LINEAR_DAMPING = 0.999       # air, per tick
ANGULAR_DAMPING = 0.995      # air, per tick
SOLVER_ITERATIONS = 4
CONTACT_SLOP = 0.01          # m: contacts are detected this far before touching
PENETRATION_SLOP = 0.002     # m: penetration left alone
PENETRATION_FIX = 0.8        # share of the penetration removed per tick

SLEEP_SPEED = 0.12           # m/s: 2 mm per tick at 60 Hz, one quantization step of the schema
SLEEP_ANGULAR_SPEED = 0.25   # rad/s: 0.24 degrees per tick, below the 9-bit smallest-three error
SLEEP_TICKS = 16             # Gaffer's "16 frames without significant motion"
WAKE_SPEED = 0.5             # m/s: a slower awake body touching a sleeping one does not wake it

FIRST_ID = 1000              # ids are FIRST_ID, FIRST_ID + 1, ...; respawned bodies get new ones

_ID_DTYPE = np.uint32


class Tick(NamedTuple):
    """The state of the world at one tick (float32 arrays, one row per body)."""

    index: int
    time: float
    ids: np.ndarray           # (N,) uint32, unique
    positions: np.ndarray     # (N, 3) float32, metres, y up
    orientations: np.ndarray  # (N, 4) float32 unit quaternions (x, y, z, w)
    velocities: np.ndarray    # (N, 3) float32, m/s; exactly zero at rest
    at_rest: np.ndarray       # (N,) bool: asleep (its state is frozen bit for bit)


@dataclass(frozen=True, eq=False)
class Scene:
    """A whole run: arrays stacked over ticks (axis 0) and bodies (axis 1)."""

    hz: int
    seed: int
    ids: np.ndarray           # (T, N) uint32
    positions: np.ndarray     # (T, N, 3) float32
    orientations: np.ndarray  # (T, N, 4) float32
    velocities: np.ndarray    # (T, N, 3) float32
    at_rest: np.ndarray       # (T, N) bool
    kinematic: np.ndarray     # (N,) bool: rows driven along a path, never at rest
    radii: np.ndarray         # (N,) float32

    @property
    def n_ticks(self) -> int:
        return int(self.positions.shape[0])

    @property
    def n_bodies(self) -> int:
        return int(self.positions.shape[1])

    @property
    def dt(self) -> float:
        return 1.0 / self.hz

    @property
    def seconds(self) -> float:
        return self.n_ticks / self.hz

    def __len__(self) -> int:
        return self.n_ticks

    def tick(self, index: int) -> Tick:
        """One tick as a :class:`Tick` (views into the stacked arrays)."""
        k = range(self.n_ticks)[index]
        return Tick(k, k / self.hz, self.ids[k], self.positions[k], self.orientations[k],
                    self.velocities[k], self.at_rest[k])

    def __iter__(self) -> Iterator[Tick]:
        for k in range(self.n_ticks):
            yield self.tick(k)

    def columns(self, index: int) -> dict:
        """The columns of tick ``index`` keyed by the field names of :func:`scene_schema_fields`."""
        return {"position": self.positions[index], "rotation": self.orientations[index],
                "velocity": self.velocities[index]}

    def moving_fraction(self) -> np.ndarray:
        """(T,) share of bodies that are not at rest, per tick."""
        return 1.0 - self.at_rest.mean(axis=1)


# --------------------------------------------------------------------------------------------
# quaternion helpers (x, y, z, w), float64


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ax, ay, az, aw = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    bx, by, bz, bw = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    return np.stack([
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ], axis=1)


def _integrate_quat(q: np.ndarray, w: np.ndarray, dt: float) -> np.ndarray:
    """Rotate unit quaternions ``q`` by world angular velocities ``w`` over ``dt`` (exact)."""
    speed = np.sqrt((w * w).sum(axis=1))
    half = 0.5 * speed * dt
    safe = np.where(speed > 0.0, speed, 1.0)
    s = np.where(speed > 0.0, np.sin(half) / safe, 0.0)
    dq = np.empty_like(q)
    dq[:, :3] = w * s[:, None]
    dq[:, 3] = np.cos(half)
    out = _quat_mul(dq, q)
    out /= np.sqrt((out * out).sum(axis=1))[:, None]
    return out


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.stack([
        a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
        a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
        a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0],
    ], axis=1)


# --------------------------------------------------------------------------------------------
# the world


class _World:
    def __init__(self, n_bodies: int, hz: int, seed: int, n_kinematic: int,
                 churn: bool, churn_every: int):
        if n_bodies < 1:
            raise ValueError(f"n_bodies must be at least 1, got {n_bodies}")
        if not 0 <= n_kinematic <= n_bodies:
            raise ValueError(f"n_kinematic must be in 0..n_bodies, got {n_kinematic}")
        if hz < 1:
            raise ValueError(f"hz must be at least 1, got {hz}")
        if churn_every < 1:
            raise ValueError(f"churn_every must be at least 1, got {churn_every}")
        self.n = n = int(n_bodies)
        self.hz = int(hz)
        self.dt = 1.0 / hz
        self.tick_index = 0
        self.churn = bool(churn)
        self.churn_every = int(churn_every)
        init_seq, churn_seq = np.random.SeedSequence(seed).spawn(2)
        rng = np.random.default_rng(init_seq)
        self.churn_rng = np.random.default_rng(churn_seq)

        n_dyn = n - n_kinematic
        self.kinematic = np.zeros(n, dtype=bool)
        self.kinematic[n_dyn:] = True
        self.dynamic = ~self.kinematic
        self.radius = np.where(self.kinematic, KINEMATIC_RADIUS, BODY_RADIUS).astype(np.float64)
        self.mass = (self.radius / BODY_RADIUS) ** 3
        self.ids = (FIRST_ID + np.arange(n)).astype(_ID_DTYPE)
        self.next_id = FIRST_ID + n

        self.pos = np.zeros((n, 3))
        self.vel = np.zeros((n, 3))
        self.angvel = np.zeros((n, 3))
        self.quat = np.zeros((n, 4))
        self.quat[:, 3] = 1.0
        self.asleep = np.zeros(n, dtype=bool)
        self.still = np.zeros(n, dtype=np.int64)

        # dynamic bodies: a jittered lattice (1.6 m apart, so no overlap at spawn), 2-3 layers
        if n_dyn:
            side = max(2, math.ceil(math.sqrt(n_dyn / 2.0)))
            layers = -(-n_dyn // (side * side)) + 1
            slots = rng.permutation(side * side * layers)[:n_dyn]
            layer, cell = np.divmod(slots, side * side)
            gz, gx = np.divmod(cell, side)
            spacing = 1.6
            x = (gx - (side - 1) / 2.0) * spacing + rng.uniform(-0.25, 0.25, n_dyn)
            z = (gz - (side - 1) / 2.0) * spacing + rng.uniform(-0.25, 0.25, n_dyn)
            y = 2.8 + 2.2 * layer + rng.uniform(-0.25, 0.25, n_dyn)
            self.pos[:n_dyn] = np.stack([x, y, z], axis=1)
            self.vel[:n_dyn] = rng.uniform(-1.0, 1.0, (n_dyn, 3)) * np.array([1.0, 0.5, 1.0])
            self.angvel[:n_dyn] = rng.uniform(-4.0, 4.0, (n_dyn, 3))
            q = rng.normal(size=(n_dyn, 4))
            self.quat[:n_dyn] = q / np.sqrt((q * q).sum(axis=1))[:, None]
            self.pile_half = (side * spacing) / 2.0
        else:
            self.pile_half = 8.0

        # kinematic bodies: wobbling circles around the pile centre, alternate directions
        k = np.arange(n_kinematic)
        self.k_rows = np.arange(n_dyn, n)
        self.k_r0 = 0.35 * self.pile_half + (0.6 * self.pile_half) * (k + 1) / max(1, n_kinematic)
        self.k_amp = 0.25 * self.k_r0
        self.k_dir = np.where(k % 2 == 0, 1.0, -1.0)
        self.k_phase = rng.uniform(0.0, 2.0 * math.pi, n_kinematic)
        self.k_wobble = rng.uniform(0.0, 2.0 * math.pi, n_kinematic)
        self._place_kinematic(0.0)
        self.angvel[self.k_rows] = self._kinematic_spin()

    # -- kinematic paths ------------------------------------------------------------------------

    def _place_kinematic(self, t: float) -> None:
        if not len(self.k_rows):
            return
        (x, z), (vx, vz) = wobbling_circle(t, self.k_r0, self.k_amp, self.k_dir, self.k_phase,
                                           self.k_wobble, KINEMATIC_SPEED)
        rows = self.k_rows
        self.pos[rows, 0] = x
        self.pos[rows, 1] = self.radius[rows]
        self.pos[rows, 2] = z
        self.vel[rows, 0] = vx
        self.vel[rows, 1] = 0.0
        self.vel[rows, 2] = vz

    def _kinematic_spin(self) -> np.ndarray:
        # rolling without slipping on the ground: omega = up x v / r
        rows = self.k_rows
        v = self.vel[rows]
        up = np.zeros_like(v)
        up[:, 1] = 1.0
        return _cross(up, v) / self.radius[rows][:, None]

    # -- one tick ---------------------------------------------------------------------------------

    def _candidate_pairs(self, check: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Pairs (i, j) whose spheres are within CONTACT_SLOP, sort and sweep on x."""
        n = self.n
        x = self.pos[:, 0]
        order = np.argsort(x, kind="stable")
        xs = x[order]
        reach = 2.0 * float(self.radius.max()) + CONTACT_SLOP
        hi = np.searchsorted(xs, xs + reach, side="right")
        cnt = hi - np.arange(n) - 1
        total = int(cnt.sum())
        if total == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        a = np.repeat(np.arange(n), cnt)
        first = np.cumsum(cnt) - cnt
        b = a + 1 + (np.arange(total) - np.repeat(first, cnt))
        i, j = order[a], order[b]
        # skip pairs that cannot matter: two sleepers (unless one needs its support checked),
        # two kinematic bodies
        keep = ~(self.asleep[i] & self.asleep[j]) | check[i] | check[j]
        keep &= ~(self.kinematic[i] & self.kinematic[j])
        i, j = i[keep], j[keep]
        d = self.pos[j] - self.pos[i]
        reach_ij = self.radius[i] + self.radius[j] + CONTACT_SLOP
        close = (d * d).sum(axis=1) < reach_ij * reach_ij
        return i[close], j[close]

    def step(self) -> None:
        dt = self.dt
        self.tick_index += 1
        t = self.tick_index / self.hz
        n = self.n
        pos, vel, angvel, r = self.pos, self.vel, self.angvel, self.radius

        if self.churn and self.tick_index % self.churn_every == 0:
            self._respawn_one()

        self._place_kinematic(t)
        if len(self.k_rows):
            angvel[self.k_rows] = self._kinematic_spin()

        awake = self.dynamic & ~self.asleep
        vel[awake, 1] -= GRAVITY * dt
        vel[awake] *= LINEAR_DAMPING
        angvel[awake] *= ANGULAR_DAMPING

        # contacts ---------------------------------------------------------------------------
        elevated_sleepers = self.asleep & (pos[:, 1] - r > 0.05)
        i, j = self._candidate_pairs(elevated_sleepers)
        d = pos[j] - pos[i]
        dist = np.sqrt((d * d).sum(axis=1))
        ok = dist > 1e-9
        nrm = np.zeros_like(d)
        nrm[:, 1] = 1.0
        nrm[ok] = d[ok] / dist[ok][:, None]

        # support of elevated sleepers: a contact with a body whose centre is lower
        if elevated_sleepers.any():
            below_j = nrm[:, 1] > 0.2           # j sits above i: i supports j
            below_i = nrm[:, 1] < -0.2          # i sits above j
            supported = (np.bincount(j[below_j], minlength=n) + np.bincount(i[below_i], minlength=n)) > 0
            self._wake(elevated_sleepers & ~supported)

        # wake sleepers hit by kinematic bodies or by fast awake bodies
        if self.asleep.any() and len(i):
            speed = np.sqrt((vel * vel).sum(axis=1)) + np.sqrt((angvel * angvel).sum(axis=1)) * r
            pushy = self.kinematic | (~self.asleep & (speed > WAKE_SPEED))
            hit = np.zeros(n, dtype=bool)
            hit[j[self.asleep[j] & pushy[i]]] = True
            hit[i[self.asleep[i] & pushy[j]]] = True
            self._wake(hit)

        awake = self.dynamic & ~self.asleep
        inv_m = np.where(awake, 1.0 / self.mass, 0.0)
        inv_i = np.where(awake, 2.5 / (self.mass * r * r), 0.0)   # solid sphere: I = 2/5 m r^2

        live = (inv_m[i] + inv_m[j]) > 0.0
        i, j, nrm = i[live], j[live], nrm[live]
        g = np.flatnonzero(awake & (pos[:, 1] - r < CONTACT_SLOP))

        count = np.bincount(i, minlength=n) + np.bincount(j, minlength=n)
        count[g] += 1
        split = np.maximum(count, 1).astype(np.float64)
        ims, iis = inv_m * split, inv_i * split

        self._solve(i, j, nrm, g, inv_m, inv_i, ims, iis)

        # rolling resistance, integration --------------------------------------------------------
        angvel[g] *= ROLLING_DAMPING
        moving = awake | self.kinematic
        aw = np.flatnonzero(awake)
        pos[aw] += vel[aw] * dt
        mv = np.flatnonzero(moving)
        self.quat[mv] = _integrate_quat(self.quat[mv], angvel[mv], dt)

        # penetration ---------------------------------------------------------------------------
        if len(i):
            d = pos[j] - pos[i]
            dist = np.sqrt((d * d).sum(axis=1))
            pen = r[i] + r[j] - dist
            fix = np.maximum(pen - PENETRATION_SLOP, 0.0) * PENETRATION_FIX
            ok = (fix > 0.0) & (dist > 1e-9)
            if ok.any():
                ii, jj, dd, dist_ok, fix = i[ok], j[ok], d[ok], dist[ok], fix[ok]
                nn = dd / dist_ok[:, None]
                share_i = inv_m[ii] / (inv_m[ii] + inv_m[jj])
                shift = np.zeros((n, 3))
                corr_i = -nn * (fix * share_i)[:, None]
                corr_j = nn * (fix * (1.0 - share_i))[:, None]
                for axis in range(3):
                    shift[:, axis] = (np.bincount(ii, corr_i[:, axis], minlength=n)
                                      + np.bincount(jj, corr_j[:, axis], minlength=n))
                pos[aw] += shift[aw] / split[aw][:, None]

        # ground, walls, ceiling
        lo = r[aw]
        below = pos[aw, 1] < lo
        if below.any():
            rows = aw[below]
            pos[rows, 1] = lo[below]
            vel[rows, 1] = np.maximum(vel[rows, 1], 0.0)
        for axis, lo_b, hi_b in ((0, -WORLD_HALF_WIDTH, WORLD_HALF_WIDTH),
                                 (1, 0.0, WORLD_HEIGHT),
                                 (2, -WORLD_HALF_WIDTH, WORLD_HALF_WIDTH)):
            p = pos[aw, axis]
            lo_v, hi_v = lo_b + r[aw], hi_b - r[aw]
            out_lo, out_hi = p < lo_v, p > hi_v
            if out_lo.any() or out_hi.any():
                rows_lo, rows_hi = aw[out_lo], aw[out_hi]
                pos[rows_lo, axis] = lo_v[out_lo]
                pos[rows_hi, axis] = hi_v[out_hi]
                vel[rows_lo, axis] = np.abs(vel[rows_lo, axis]) * RESTITUTION_BODY
                vel[rows_hi, axis] = -np.abs(vel[rows_hi, axis]) * RESTITUTION_BODY

        # sleep ---------------------------------------------------------------------------------
        v2 = (vel * vel).sum(axis=1)
        w2 = (angvel * angvel).sum(axis=1)
        still = awake & (v2 < SLEEP_SPEED ** 2) & (w2 < SLEEP_ANGULAR_SPEED ** 2)
        self.still = np.where(still, self.still + 1, 0)
        fall = still & (self.still >= SLEEP_TICKS)
        if fall.any():
            self.asleep |= fall
            vel[fall] = 0.0
            angvel[fall] = 0.0

    def _wake(self, mask: np.ndarray) -> None:
        if mask.any():
            self.asleep &= ~mask
            self.still[mask] = 0

    def _solve(self, i, j, nrm, g, inv_m, inv_i, ims, iis) -> None:
        """Jacobi sequential-impulse solve with mass splitting; updates vel and angvel in place."""
        n = self.n
        vel, angvel, r = self.vel, self.angvel, self.radius
        npair, nground = len(i), len(g)
        if npair + nground == 0:
            return
        arm_i = nrm * r[i][:, None]           # centre of i -> contact
        arm_j = -nrm * r[j][:, None]          # centre of j -> contact
        kn = ims[i] + ims[j]
        kt = kn + iis[i] * r[i] ** 2 + iis[j] * r[j] ** 2
        # ground contacts: normal +y, arm (0, -r, 0), the ground is static
        gn = np.zeros((nground, 3))
        gn[:, 1] = 1.0
        garm = np.zeros((nground, 3))
        garm[:, 1] = -r[g]
        gkn = ims[g]
        gkt = gkn + iis[g] * r[g] ** 2

        def rel_pair():
            return (vel[j] + _cross(angvel[j], arm_j)) - (vel[i] + _cross(angvel[i], arm_i))

        def rel_ground():
            return vel[g] + _cross(angvel[g], garm)

        vn0 = (rel_pair() * nrm).sum(axis=1)
        target = np.where(vn0 < -BOUNCE_THRESHOLD, -RESTITUTION_BODY * vn0, 0.0)
        gvn0 = rel_ground()[:, 1]
        gtarget = np.where(gvn0 < -BOUNCE_THRESHOLD, -RESTITUTION_GROUND * gvn0, 0.0)

        pn = np.zeros(npair)
        pt = np.zeros((npair, 3))
        gpn = np.zeros(nground)
        gpt = np.zeros((nground, 3))
        idx = np.concatenate([i, j, g])
        arms = np.concatenate([arm_i, arm_j, garm])
        im_idx = inv_m[idx][:, None]
        ii_idx = inv_i[idx][:, None]

        for _ in range(SOLVER_ITERATIONS):
            vrel = rel_pair()
            vn = (vrel * nrm).sum(axis=1)
            new = np.maximum(pn + (target - vn) / kn, 0.0)
            dpn, pn = new - pn, new
            vt = vrel - vn[:, None] * nrm
            want = pt - vt / kt[:, None]
            cap = FRICTION_BODY * pn
            mag = np.sqrt((want * want).sum(axis=1))
            scale = np.where(mag > cap, cap / np.where(mag > 0.0, mag, 1.0), 1.0)
            want *= scale[:, None]
            dpt, pt = want - pt, want
            imp = dpn[:, None] * nrm + dpt             # impulse on j; -imp on i

            gv = rel_ground()
            gvn = gv[:, 1]
            gnew = np.maximum(gpn + (gtarget - gvn) / gkn, 0.0)
            dgpn, gpn = gnew - gpn, gnew
            gvt = gv - gvn[:, None] * gn
            gwant = gpt - gvt / gkt[:, None]
            gcap = FRICTION_GROUND * gpn
            gmag = np.sqrt((gwant * gwant).sum(axis=1))
            gscale = np.where(gmag > gcap, gcap / np.where(gmag > 0.0, gmag, 1.0), 1.0)
            gwant *= gscale[:, None]
            dgpt, gpt = gwant - gpt, gwant
            gimp = dgpn[:, None] * gn + dgpt

            imps = np.concatenate([-imp, imp, gimp])
            dv = imps * im_idx
            dw = _cross(arms, imps) * ii_idx
            for axis in range(3):
                vel[:, axis] += np.bincount(idx, dv[:, axis], minlength=n)
                angvel[:, axis] += np.bincount(idx, dw[:, axis], minlength=n)

    def _respawn_one(self) -> None:
        rng = self.churn_rng
        rows = np.flatnonzero(self.dynamic)
        if not len(rows):
            return
        row = int(rows[rng.integers(len(rows))])
        half = self.pile_half
        self.pos[row] = [rng.uniform(-half, half), rng.uniform(8.0, 10.0), rng.uniform(-half, half)]
        self.vel[row] = rng.uniform(-1.0, 1.0, 3) * np.array([1.0, 0.5, 1.0])
        self.angvel[row] = rng.uniform(-4.0, 4.0, 3)
        q = rng.normal(size=4)
        self.quat[row] = q / math.sqrt(float((q * q).sum()))
        self.asleep[row] = False
        self.still[row] = 0
        self.ids[row] = self.next_id
        self.next_id += 1

    def snapshot(self) -> Tick:
        k = self.tick_index
        return Tick(k, k / self.hz, self.ids.copy(), self.pos.astype(np.float32),
                    self.quat.astype(np.float32), self.vel.astype(np.float32), self.asleep.copy())


def iter_ticks(n_bodies: int = 300, seconds: float = 10.0, hz: int = 60, seed: int = 0, *,
               n_kinematic: int = 2, churn: bool = False, churn_every: int = 30) -> Iterator[Tick]:
    """Yield ``round(seconds * hz)`` ticks of the scene; tick 0 is the spawn state.

    ``n_bodies`` counts every body, the ``n_kinematic`` driven ones included (they are the last
    rows). With ``churn=True`` one dynamic body is replaced by a new one (new id, same row) every
    ``churn_every`` ticks.
    """
    n_ticks = int(round(seconds * hz))
    if n_ticks < 1:
        raise ValueError(f"seconds * hz must give at least one tick, got {seconds} * {hz}")
    world = _World(n_bodies, hz, seed, n_kinematic, churn, churn_every)
    for k in range(n_ticks):
        if k:
            world.step()
        yield world.snapshot()


def simulate(n_bodies: int = 300, seconds: float = 10.0, hz: int = 60, seed: int = 0, *,
             n_kinematic: int = 2, churn: bool = False, churn_every: int = 30) -> Scene:
    """Run the scene and return every tick stacked in a :class:`Scene` (see :func:`iter_ticks`)."""
    n_ticks = int(round(seconds * hz))
    if n_ticks < 1:
        raise ValueError(f"seconds * hz must give at least one tick, got {seconds} * {hz}")
    world = _World(n_bodies, hz, seed, n_kinematic, churn, churn_every)
    n = world.n
    ids = np.empty((n_ticks, n), dtype=_ID_DTYPE)
    positions = np.empty((n_ticks, n, 3), dtype=np.float32)
    orientations = np.empty((n_ticks, n, 4), dtype=np.float32)
    velocities = np.empty((n_ticks, n, 3), dtype=np.float32)
    at_rest = np.empty((n_ticks, n), dtype=bool)
    for k in range(n_ticks):
        if k:
            world.step()
        ids[k] = world.ids
        positions[k] = world.pos
        orientations[k] = world.quat
        velocities[k] = world.vel
        at_rest[k] = world.asleep
    return Scene(hz=int(hz), seed=int(seed), ids=ids, positions=positions,
                 orientations=orientations, velocities=velocities, at_rest=at_rest,
                 kinematic=world.kinematic.copy(), radii=world.radius.astype(np.float32))


def wobbling_circle(t, r0, amp, direction, phase, wobble, speed):
    """Where the kinematic bodies' paths are at time t: circles of radius r0 around the origin
    of the ground plane, run at ``speed`` (m/s) in ``direction`` (+-1), whose radius wobbles by
    ``amp`` at 0.17 rad/s. Arrays (one entry a body) -> ((x, z), (vx, vz)). Also drives the
    pushers of bench/record_scene.py, so that the two scenes are alike."""
    wob_rate = 0.17
    omega = direction * speed / r0
    theta = phase + omega * t
    r = r0 + amp * np.sin(wobble + wob_rate * t)
    dr = amp * wob_rate * np.cos(wobble + wob_rate * t)
    c, s = np.cos(theta), np.sin(theta)
    return (r * c, r * s), (dr * c - r * omega * s, dr * s + r * omega * c)


def scene_schema_fields(rotation_bits: int = 9, position=None) -> List[Tuple[str, tuple]]:
    """The default fields the demo and the benches quantize this scene with, as plain data.

    Each entry is ``(field_name, (codec_kind, kwargs))``, where a nested codec appears as another
    ``(codec_kind, kwargs)`` pair and ``Vector`` takes ``{"codecs": [...]}``. The kinds and keyword
    names are those of the codec classes in SPEC.md, so ``getattr(qc, kind)(**kwargs)`` (building
    the nested ones first) makes the codecs.

    - position: x and z in [-64, 64] with 16 bits, y in [0, 32] with 14 bits, both a 1.95 mm step:
      Gaffer On Games' 512 values per metre, on this world's bounds (46 bits).
    - rotation: smallest three, ``rotation_bits`` per component (9, Gaffer's choice: 29 bits,
      0.55 degree worst error; 10 gives 32 bits and 0.275 degree).
    - velocity: a NearlyZero flag (bodies at rest send exactly zero in one bit) over three
      PowerCurve(32 m/s, pow 2, 10 bits): 32 m/s is Gaffer's bound; 2 cm/s resolution at 1 m/s.

    ``position``, three ``(min, max, bits)``, replaces this world's position bounds (a recorded
    scene's, bench/bench_bandwidth.py).
    """
    if position is None:
        position = ((-WORLD_HALF_WIDTH, WORLD_HALF_WIDTH, 16), (0.0, WORLD_HEIGHT, 14),
                    (-WORLD_HALF_WIDTH, WORLD_HALF_WIDTH, 16))
    curve = ("PowerCurve", {"max": 32.0, "pow": 2.0, "bits": 10})
    return [
        ("position", ("Vector", {"codecs": [("Bounded", {"min": lo, "max": hi, "bits": b})
                                            for lo, hi, b in position]})),
        ("rotation", ("Quat", {"bits": int(rotation_bits)})),
        ("velocity", ("NearlyZero", {"inner": ("Vector", {"codecs": [curve, curve, curve]}),
                                     "threshold": 0.01})),
    ]
