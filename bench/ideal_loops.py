"""How fast the snapshot coders' inner loops could be at all, with everything moving (a floor, in C).

SPEC 5's issue asks for encode and decode of one client's delta of 1000 entities each at least
9x faster than ``struct.pack`` of the same snapshot's raw floats. bench_snapshot.py meets that
from 29% changed down to rest, not with everything moving. This script asks what the best
scalar loops could reach on that packet, on this machine, in the same run as the baseline:
it compiles a small C program (``cc -O3``, the baseline x86-64 that wheels target) that does
only the inner work on the real differences of the bench scene's tick (pose schema, 1000
bodies, acks 6 ticks late, the encoder's references and Exp-Golomb parameters):

- ``encode``: for each entity the six components' zigzagged differences from the baseline and
  from the extrapolation (``base + (base - pred) * 3``), the bit-length histograms of every 4th
  entity, then each chosen difference's Exp-Golomb code appended to one bit writer;
- ``decode, one stream``: the packet as it is, one code after the other: six reads an entity,
  the codes rebuilt from the references and stored into the rows;
- ``decode, split``: the same with each component's codes in a stream of its own, three read
  side by side (a layout the wire format does not have; the experiment branch
  ``experiment/split-streams`` tried it in the library);
- ``encode`` / ``decode, fixed widths``: layout_study.py's other layout, which the format does
  not have either: each component's values in a width of their own (the cheapest with at most
  30% exceptions), component after component, the exceptions' excess Exp-Golomb coded in a
  list after them; the decoder reads every value at a known place and only the exceptions
  in a chain.

No checks (no escapes, no short packets, no validity, no smallest-three index changes: those
entities are left out), no Python call, no snapshot allocation: a floor, not an implementation.
What the library adds to it is measured at rest (bench_snapshot.py, 6% changed: the call, the
snapshot, the sets and the row copies).

    python bench/ideal_loops.py [--bodies 1000] [--tick 60] [--cc cc]
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import timeit

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
try:
    import quantcodec  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(here))

from quantcodec import SnapshotDecoder, SnapshotEncoder  # noqa: E402
from quantcodec._testing import pred_target_of  # noqa: E402
from quantcodec.tools.scene import simulate  # noqa: E402
from quantcodec.tools.link import default_schema  # noqa: E402

from layout_study import eg_bits, zigzag_differences as zigzag  # noqa: E402

C_SOURCE = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
static uint64_t ld64(const uint8_t* p) { uint64_t v; memcpy(&v, p, 8); return v; }
static void st64(uint8_t* p, uint64_t v) { memcpy(p, &v, 8); }
static int ctz64(uint64_t x) { return __builtin_ctzll(x); }
static int bitlen(uint64_t x) { return x ? 64 - __builtin_clzll(x) : 0; }

/* the pose: slots 0..2 ordered (widths B[0..2]), slot 3 a smallest three of 3 x B[3] bits */
enum { S = 4, C = 6 };
static int64_t n, B[C], K[C], P[C], SHIFT[C], SH[C], SLOT[C];
static uint64_t *cur, *base, *pred, *out, *U;
static uint8_t *buf, *sbuf[C];
static int64_t sstart[C];

static uint64_t top(uint64_t carrier, int c) { return (carrier >> SHIFT[c]) << SH[c]; }

/* the encoder: differences and sampled histograms, then codes and appends */
static void encode_diffs(void) {
    static uint32_t hist[2 * C][65];
    int64_t i;
    int c;
    memset(hist, 0, sizeof hist);
    for (i = 0; i < n; i++) {
        const uint64_t *cr = cur + i * S, *br = base + i * S, *pr = pred + i * S;
        uint64_t* u = U + i * 2 * C;
        int h = (i & 3) == 0;
        for (c = 0; c < C; c++) {
            uint64_t xc = top(cr[SLOT[c]], c), xb = top(br[SLOT[c]], c), xp = top(pr[SLOT[c]], c);
            uint64_t d0 = xc - xb, d1 = xc - (xb + (xb - xp) * 3);
            uint64_t u0 = ((d0 << 1) ^ (uint64_t)((int64_t)d0 >> 63)) >> SH[c];
            uint64_t u1 = ((d1 << 1) ^ (uint64_t)((int64_t)d1 >> 63)) >> SH[c];
            u[2 * c] = u0;
            u[2 * c + 1] = u1;
            if (h) {
                hist[2 * c][bitlen(u0)]++;
                hist[2 * c + 1][bitlen(u1)]++;
            }
        }
    }
}
static int64_t encode(uint8_t* dst) {
    int64_t i, nb = 0;
    int c;
    uint64_t acc = 0;
    encode_diffs();
    for (i = 0; i < n; i++) {
        const uint64_t* u = U + i * 2 * C;
        for (c = 0; c < C; c++) {
            uint64_t v = u[2 * c + P[c]], x = (v >> K[c]) + 1, code;
            int e = bitlen(x) - 1, len = 2 * e + 1 + (int)K[c], used = (int)(nb & 63);
            code = ((uint64_t)1 << e) | ((x ^ ((uint64_t)1 << e)) << (e + 1))
                   | ((v & (((uint64_t)1 << K[c]) - 1)) << (2 * e + 1));
            acc |= code << used;
            if (used + len >= 64) {
                st64(dst + ((nb >> 6) << 3), acc);
                acc = (code >> 1) >> (63 - used);
            }
            nb += len;
        }
    }
    st64(dst + ((nb >> 6) << 3), acc);
    return nb;
}

static uint64_t get_eg(const uint8_t* b, int64_t* pos, int c) {
    int64_t p = *pos;
    uint64_t peek = ld64(b + (p >> 3)) >> (p & 7), x, m;
    int e = ctz64(peek);
    x = peek >> (e + 1);
    m = (x & (((uint64_t)1 << e) - 1)) + (((uint64_t)1 << e) - 1);
    *pos = p + 2 * e + 1 + K[c];
    return (m << K[c]) | ((x >> e) & (((uint64_t)1 << K[c]) - 1));
}
static uint64_t rebuild(uint64_t bw, uint64_t pw, int c, uint64_t u) {
    uint64_t x = top(bw, c);
    if (P[c]) x += (x - top(pw, c)) * 3;
    return (x + (((u >> 1) ^ (0 - (u & 1))) << SH[c])) >> SH[c];
}
static void decode_one(void) {
    int64_t i, p = 0;
    for (i = 0; i < n; i++) {
        const uint64_t *br = base + i * S, *pr = pred + i * S;
        uint64_t* o = out + i * S;
        uint64_t u0 = get_eg(buf, &p, 0), u1 = get_eg(buf, &p, 1), u2 = get_eg(buf, &p, 2);
        o[0] = rebuild(br[0], pr[0], 0, u0);
        o[1] = rebuild(br[1], pr[1], 1, u1);
        o[2] = rebuild(br[2], pr[2], 2, u2);
        u0 = get_eg(buf, &p, 3); u1 = get_eg(buf, &p, 4); u2 = get_eg(buf, &p, 5);
        o[3] = ((br[3] >> (3 * B[3])) << (3 * B[3])) | (rebuild(br[3], pr[3], 3, u0) << SHIFT[3])
               | (rebuild(br[3], pr[3], 4, u1) << SHIFT[4]) | (rebuild(br[3], pr[3], 5, u2) << SHIFT[5]);
    }
}
static void decode_split(void) {
    int64_t i, p0 = 0, p1 = 0, p2 = 0;
    for (i = 0; i < n; i++) {
        const uint64_t *br = base + i * S, *pr = pred + i * S;
        uint64_t* o = out + i * S;
        uint64_t u0 = get_eg(sbuf[0], &p0, 0), u1 = get_eg(sbuf[1], &p1, 1), u2 = get_eg(sbuf[2], &p2, 2);
        o[0] = rebuild(br[0], pr[0], 0, u0);
        o[1] = rebuild(br[1], pr[1], 1, u1);
        o[2] = rebuild(br[2], pr[2], 2, u2);
    }
    p0 = p1 = p2 = 0;
    for (i = 0; i < n; i++) {
        const uint64_t *br = base + i * S, *pr = pred + i * S;
        uint64_t* o = out + i * S;
        uint64_t u0 = get_eg(sbuf[3], &p0, 3), u1 = get_eg(sbuf[4], &p1, 4), u2 = get_eg(sbuf[5], &p2, 5);
        o[3] = ((br[3] >> (3 * B[3])) << (3 * B[3])) | (rebuild(br[3], pr[3], 3, u0) << SHIFT[3])
               | (rebuild(br[3], pr[3], 4, u1) << SHIFT[4]) | (rebuild(br[3], pr[3], 5, u2) << SHIFT[5]);
    }
}


/* fixed widths (layout_study.py's "fixed"): component c's values in W[c] bits each, the
   all-ones value marking an exception whose excess follows, Exp-Golomb K[c], in one list after
   every component's fixed fields */
static int64_t W[C], fstart[C], xstart;
static uint8_t *fbuf, *xbuf;
static void put_bits(uint8_t* dst, int64_t* nb, uint64_t* acc, uint64_t code, int len) {
    int used = (int)(*nb & 63);
    *acc |= code << used;
    if (used + len >= 64) {
        st64(dst + ((*nb >> 6) << 3), *acc);
        *acc = (code >> 1) >> (63 - used);
    }
    *nb += len;
}
static int64_t encode_fixed(uint8_t* dst) {
    int64_t i, nb = 0, xb = 0, j;
    int c;
    uint64_t acc = 0, xacc = 0;
    encode_diffs();
    for (c = 0; c < C; c++) {
        const uint64_t lim = ((uint64_t)1 << W[c]) - 1;
        fstart[c] = nb;
        for (i = 0; i < n; i++) {
            uint64_t u = U[i * 2 * C + 2 * c + P[c]];
            put_bits(dst, &nb, &acc, u < lim ? u : lim, (int)W[c]);
            if (u >= lim) {
                uint64_t v = u - lim, x = (v >> K[c]) + 1;
                int e = bitlen(x) - 1;
                put_bits(xbuf, &xb, &xacc, ((uint64_t)1 << e) | ((x ^ ((uint64_t)1 << e)) << (e + 1))
                         | ((v & (((uint64_t)1 << K[c]) - 1)) << (2 * e + 1)), 2 * e + 1 + (int)K[c]);
            }
        }
    }
    st64(xbuf + ((xb >> 6) << 3), xacc);
    xstart = nb;
    for (j = 0; j < xb; j += 32) {
        int len = xb - j < 32 ? (int)(xb - j) : 32;
        put_bits(dst, &nb, &acc, (ld64(xbuf + (j >> 3)) >> (j & 7)) & ((((uint64_t)1) << len) - 1), len);
    }
    st64(dst + ((nb >> 6) << 3), acc);
    return nb;
}
static void decode_fixed(void) {
    int64_t i, xp = xstart;
    int c;
    for (c = 0; c < C; c++) {
        const uint64_t lim = ((uint64_t)1 << W[c]) - 1;
        int64_t off = fstart[c];
        for (i = 0; i < n; i++, off += W[c]) {
            const uint64_t *br = base + i * S, *pr = pred + i * S;
            uint64_t* o = out + i * S;
            uint64_t u = (ld64(fbuf + (off >> 3)) >> (off & 7)) & lim;
            if (u == lim)
                u += get_eg(fbuf, &xp, c);
            if (c < 3)
                o[c] = rebuild(br[c], pr[c], c, u);
            else if (c == 3)
                o[3] = ((br[3] >> (3 * B[3])) << (3 * B[3])) | (rebuild(br[3], pr[3], 3, u) << SHIFT[3]);
            else
                o[3] |= rebuild(br[3], pr[3], c, u) << SHIFT[c];
        }
    }
}

int main(int argc, char** argv) {
    FILE* f = fopen(argv[1], "rb");
    int64_t reps = argc > 2 ? atoll(argv[2]) : 2000, i, c, nbits, fbits, bad = 0;
    double t0, best[5] = {1e9, 1e9, 1e9, 1e9, 1e9};
    if (!f || fread(&n, 8, 1, f) != 1 || fread(B, 8, C, f) != C || fread(K, 8, C, f) != C
            || fread(P, 8, C, f) != C)
        return 2;
    cur = malloc(8 * n * S); base = malloc(8 * n * S); pred = malloc(8 * n * S);
    out = malloc(8 * n * S); U = malloc(8 * n * 2 * C);
    buf = calloc(1, 16 * n * C + 64);
    fbuf = calloc(1, 16 * n * C + 64);
    xbuf = calloc(1, 16 * n * C + 64);
    for (c = 0; c < C; c++)
        W[c] = argc > 3 + c ? atoll(argv[3 + c]) : 8;
    if ((int64_t)fread(cur, 8, n * S, f) != n * S || (int64_t)fread(base, 8, n * S, f) != n * S
            || (int64_t)fread(pred, 8, n * S, f) != n * S)
        return 2;
    for (c = 0; c < C; c++) {
        SLOT[c] = c < 3 ? c : 3;
        SHIFT[c] = c < 3 ? 0 : (5 - c) * B[3];
        SH[c] = 64 - B[c];
        sbuf[c] = calloc(1, 16 * n + 64);
    }
    nbits = encode(buf);
    for (c = 0; c < C; c++) {           /* the split layout: each component's codes alone */
        int64_t p = 0, q = 0;
        for (i = 0; i < n * C; i++) {
            int64_t cc = i % C, p0 = p;
            (void)get_eg(buf, &p, (int)cc);
            if (cc == c) {
                int64_t len = p - p0, j;
                for (j = 0; j < len; j++) {
                    uint64_t bit = (buf[(p0 + j) >> 3] >> ((p0 + j) & 7)) & 1;
                    sbuf[c][(q + j) >> 3] |= (uint8_t)(bit << ((q + j) & 7));
                }
                q += len;
            }
        }
        sstart[c] = q;
    }
    decode_one();
    if (memcmp(out, cur, 8 * n * S)) bad |= 1;
    memset(out, 0, 8 * n * S);
    decode_split();
    if (memcmp(out, cur, 8 * n * S)) bad |= 2;
    fbits = encode_fixed(fbuf);
    memset(out, 0, 8 * n * S);
    decode_fixed();
    if (memcmp(out, cur, 8 * n * S)) bad |= 4;
    for (i = 0; i < reps; i++) {
        double t;
        t0 = now(); encode(buf); t = now() - t0; if (t < best[0]) best[0] = t;
        t0 = now(); decode_one(); t = now() - t0; if (t < best[1]) best[1] = t;
        t0 = now(); decode_split(); t = now() - t0; if (t < best[2]) best[2] = t;
        t0 = now(); encode_fixed(fbuf); t = now() - t0; if (t < best[3]) best[3] = t;
        t0 = now(); decode_fixed(); t = now() - t0; if (t < best[4]) best[4] = t;
    }
    printf("%lld %lld %lld %d %.3f %.3f %.3f %.3f %.3f\n", (long long)n, (long long)nbits,
           (long long)fbits, (int)bad, best[0] * 1e6, best[1] * 1e6, best[2] * 1e6,
           best[3] * 1e6, best[4] * 1e6);
    return 0;
}
"""


def pose(scene, k):
    """Tick k's columns of the pose schema (position, rotation)."""
    return {"position": scene.positions[k], "rotation": scene.orientations[k]}


def fixed_width(u, b, k, share=0.3):
    """The width of the cheapest fixed-width layout of u with at most ``share`` exceptions
    (their excess Exp-Golomb k, as the C loops write it; layout_study.py's model)."""
    best = None
    for w in range(1, b + 2):
        lim = (1 << w) - 1
        exc = u[u >= lim] - lim
        if len(exc) > share * len(u) or (len(exc) and eg_bits(exc, k).max() > 57):
            continue
        cost = len(u) * w + int(eg_bits(exc, k).sum())
        if best is None or cost < best[0]:
            best = (cost, w)
    return best[1]


def tick_input(scene, schema, k, lag):
    """The entities of tick k that changed every field and kept their smallest three's index,
    their rows (current, baseline, extrapolation snapshot), and per component the widths, the
    encoder's choice of reference (the cheaper under the best Exp-Golomb parameter) and that
    parameter (codes of at most 57 bits, as the real reader's fast path), and the width of its
    fixed-width layout."""
    pdist = pred_target_of(lag)
    if pdist != 2 or lag != 6:
        raise SystemExit("the C loops extrapolate by 3 (acks 6 ticks late)")
    cur, base, pred = (schema.snapshot(scene.ids[j], pose(scene, j)).matrix.astype(np.int64)
                       for j in (k, k - lag, k - lag - pdist))
    table = schema._plan.slot_table()
    cb = (table[3]["bits"] - 2) // 3
    widths = [table[0]["bits"], table[1]["bits"], table[2]["bits"], cb, cb, cb]
    keep = np.any(cur[:, :3] != base[:, :3], axis=1) & (cur[:, 3] != base[:, 3])
    keep &= (cur[:, 3] >> (3 * cb)) == (base[:, 3] >> (3 * cb))
    cur, base, pred = cur[keep], base[keep], pred[keep]
    comps = []
    for c, b in enumerate(widths):
        if c < 3:
            vals = [a[:, c] & ((1 << b) - 1) for a in (cur, base, pred)]
        else:
            sh = (5 - c) * cb
            vals = [(a[:, 3] >> sh) & ((1 << b) - 1) for a in (cur, base, pred)]
        vc, vb, vp = vals
        refs = [zigzag(vc, vb, b), zigzag(vc, (vb + (vb - vp) * 3) % (1 << b), b)]
        best = None
        for p, u in enumerate(refs):
            for kk in range(b + 1):
                lens = eg_bits(u, kk)
                if lens.max() > 57:
                    continue
                cost = int(lens.sum())
                if best is None or cost < best[0]:
                    best = (cost, kk, p)
        u = refs[best[2]]
        comps.append((b, best[1], best[2], fixed_width(u, b, best[1])))
    # ordered slots as their unsigned codes (a signed slot would be carried sign-extended)
    rows = [np.stack([a[:, 0] & 0xFFFF, a[:, 1] & 0xFFFF, a[:, 2] & 0xFFFF, a[:, 3]], axis=1)
            for a in (cur, base, pred)]
    return len(cur), comps, rows


def main(argv=None, out=print):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bodies", type=int, default=1000)
    ap.add_argument("--tick", type=int, default=60)
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    args = ap.parse_args(argv)
    if shutil.which(args.cc) is None:
        raise SystemExit(f"no C compiler {args.cc!r}")
    lag = 6
    scene = simulate(args.bodies, max(5.0, (args.tick + 2) / 60), 60, 0)
    schema = default_schema(velocity=False)
    n, comps, rows = tick_input(scene, schema, args.tick, lag)
    with tempfile.TemporaryDirectory() as tmp:
        src, exe, data = (os.path.join(tmp, name) for name in ("ideal.c", "ideal", "input.bin"))
        with open(src, "w") as f:
            f.write(C_SOURCE)
        subprocess.run([args.cc, "-O3", "-o", exe, src], check=True)
        with open(data, "wb") as f:
            f.write(np.array([n] + [c[0] for c in comps] + [c[1] for c in comps]
                             + [c[2] for c in comps], dtype="<i8").tobytes())
            for r in rows:
                f.write(np.ascontiguousarray(r, dtype="<u8").tobytes())
        res = subprocess.run([exe, data, str(args.reps)] + [str(c[3]) for c in comps], check=True,
                             capture_output=True, text=True)
    got_n, nbits, fbits, bad, t_enc, t_one, t_split, t_fenc, t_fdec = res.stdout.split()
    if int(bad):
        raise SystemExit(f"the C loops decoded wrong rows ({bad})")
    # the same run: struct.pack of the raw floats (the baseline) and the library itself
    raw = np.concatenate([scene.positions[args.tick], scene.orientations[args.tick]], axis=1)
    st = struct.Struct(f"<{raw.size}f")
    pack = min(timeit.repeat(lambda: st.pack(*raw.ravel()), number=20, repeat=7)) / 20 * 1e6
    enc = SnapshotEncoder(schema)
    dec = SnapshotDecoder.from_hello(schema, enc.hello())
    snaps = {}
    for j in range(args.tick - 20, args.tick + 1):
        snaps[j] = schema.snapshot(scene.ids[j], pose(scene, j))
        if j - lag in snaps:
            enc.ack(j - lag)
        packet = enc.encode(j, snaps[j])
        if j < args.tick:
            dec.decode(packet)
    lib_enc = min(timeit.repeat(lambda: enc.encode(args.tick, snaps[args.tick]), number=100, repeat=7)) / 100 * 1e6
    lib_dec = min(timeit.repeat(lambda: dec.decode(packet), number=100, repeat=7)) / 100 * 1e6
    scale = args.bodies / int(got_n)
    out(f"tick {args.tick}: {got_n} of {args.bodies} bodies changed every field with the same "
        f"smallest-three index ({int(nbits) / int(got_n):.1f} bits of codes each, k = "
        f"{[c[1] for c in comps]}, extrapolated {[c[2] for c in comps]}; fixed widths "
        f"{[c[3] for c in comps]}: {int(fbits) / int(got_n):.1f} bits, "
        f"{int(fbits) / int(nbits) - 1:+.1%}); times in us, best of {args.reps}, the C loops "
        f"scaled to {args.bodies} bodies")
    out(f"{'':28s} {'us':>7s} {'x pack(*np)':>12s}")
    out(f"{'struct.pack(*np), raw floats':28s} {pack:7.1f} {1.0:12.1f}")
    for name, t in (("C encode (floor)", float(t_enc) * scale),
                    ("C decode, one stream (floor)", float(t_one) * scale),
                    ("C decode, split (floor)", float(t_split) * scale),
                    ("C encode, fixed widths", float(t_fenc) * scale),
                    ("C decode, fixed widths", float(t_fdec) * scale),
                    ("quantcodec encode", lib_enc), ("quantcodec decode", lib_dec)):
        out(f"{name:28s} {t:7.1f} {pack / t:12.1f}")
    return {"n": int(got_n), "pack": pack, "encode": float(t_enc) * scale,
            "decode_one": float(t_one) * scale, "decode_split": float(t_split) * scale,
            "encode_fixed": float(t_fenc) * scale, "decode_fixed": float(t_fdec) * scale,
            "bits": int(nbits), "bits_fixed": int(fbits),
            "lib_encode": lib_enc, "lib_decode": lib_dec}


if __name__ == "__main__":
    main()
