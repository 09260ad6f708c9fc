/* ---- primitive codes (wire-format section 4) --------------------------------------------------- */

/* A component's Exp-Golomb coding in one packet (or a header code's, made on the spot): its
   parameter k, the width b, and the masks of the read: emask = 2**E - 1 (E = the escape's
   length, ((b - k + 1) >> 1) + 1 <= 33), kmask = 2**k - 1, umax = 2**b - 1 (its largest value). */
typedef struct qc__cpar { uint64_t emask, kmask, umax; int k, b, E, usep; } qc__cpar;

static void qc__cpar_set(qc__cpar *P, int k, int b) {
    P->k = k;
    P->b = b;
    P->E = ((b - k + 1) >> 1) + 1;
    P->emask = (((uint64_t)1) << P->E) - 1;
    P->kmask = qc__mask(k);
    P->umax = qc__mask(b);
}

/* a code's value from the bits w at its start, its first 1 at bit e (< E): the e bits after
   the 1 (x & o) and the k low bits after them */
QC__HOT uint64_t qc__eg_value(uint64_t w, uint64_t e, const qc__cpar *P) {
    uint64_t x = w >> (e + 1), hi = ~(uint64_t)0 << e;   /* o = ~hi (written so: andn) */
    return (((x & ~hi) + ~hi) << P->k) | ((x >> e) & P->kmask);
}

/* THE Exp-Golomb read EG(k, b) (every code of the checked paths goes through it; the fast paths'
   qc__bits_eg below, through a register, shares its value rule, qc__eg_value): at bit *pos of buf,
   where the caller has made sure that 16 bytes can be loaded (qc__eg_p: far from the end),
   and for b <= 32 when it may be an escape.
   The code's E-bit prefix: its first 1 at e < E, then e bits and k low bits; E zeros: the escape,
   (alt) one more bit, 1 meaning "something else follows", then the value raw in b bits.
   0: read (*u set, *pos advanced); 1 (alt only): that bit was 1 (*pos after it); -1: not read
   here (a code over 57 bits, or a value above umax: qc__eg_slow decides, bit by bit). */
QC__HOT int qc__eg_read(const uint8_t *buf, size_t *pos, const qc__cpar *P, uint64_t *u, int alt) {
    size_t p = *pos;
    uint64_t pk = qc__load_le64(buf + (p >> 3)) >> (p & 7), m, e, t;
    if (QC__UNLIKELY(!(pk & P->emask))) {
        p += (size_t)P->E;
        if (alt) {
            t = (qc__load_le64(buf + (p >> 3)) >> (p & 7)) & 1;
            p++;
            if (t) { *pos = p; return 1; }
        }
        *u = (qc__load_le64(buf + (p >> 3)) >> (p & 7)) & P->umax;
        *pos = p + (size_t)P->b;
        return 0;
    }
    e = (uint64_t)qc__ctz(pk);
    t = 2 * e + 1 + (uint64_t)P->k;
    if (QC__UNLIKELY(t > 57)) return -1;
    m = qc__eg_value(pk, e, P);
    if (QC__UNLIKELY(m > P->umax)) return -1;
    *u = m;
    *pos = p + (size_t)t;
    return 0;
}

/* The fast path's bit reader (Fabian Giesen's "Reading bits in far too many ways", part 2,
   variant 4): the next bits in a register, w (bit 0 the next one, the wire's order), n of them
   counted (n <= 63; the bits of w above n are zero or the stream's next ones), p the byte where
   the stream's bits after the counted ones begin: the bit position is 8 * (p - buf) - n. A
   code's reads take w's bits, shift them out, n down; the refill ORs the 8 bytes at p in above
   the counted bits (without a branch) and counts at least 56 after it. Its loads reach at most
   16 bytes past the bit position's byte: bounds-free as qc__eg_read, the caller making sure. */
typedef struct qc__bits { uint64_t w; const uint8_t *p; unsigned n; } qc__bits;

QC__HOT void qc__bits_at(qc__bits *r, const uint8_t *buf, size_t pos) {
    r->w = qc__load_le64(buf + (pos >> 3)) >> (pos & 7);
    r->p = buf + (pos >> 3) + 7;
    r->n = 56 - (unsigned)(pos & 7);
}
QC__HOT size_t qc__bits_pos(const qc__bits *r, const uint8_t *buf) { return (size_t)(r->p - buf) * 8 - r->n; }
QC__HOT void qc__bits_fill(qc__bits *r) {
    r->w |= qc__load_le64(r->p) << r->n;
    r->p += (63 - r->n) >> 3;
    r->n |= 56;
}
/* n <= the count bits */
QC__HOT uint64_t qc__bits_take(qc__bits *r, int n) {
    uint64_t v = r->w & ((((uint64_t)1) << n) - 1);
    r->w >>= n;
    r->n -= (unsigned)n;
    return v;
}

/* EG(k, b) for b <= 32 through the register (qc__eg_read's rule and results), with at least
   E + 1 + b bits counted (the caller refills): the code, at most b + 2 bits (its first 1 at
   e < E, e <= (b - k + 1) / 2: 2e + 1 + k <= b + 2), or an escape of at most E + 1 + b.
   0 read, 1 (alt) the escape's "something else follows", -1 a value above umax (the caller
   gives up the entity). */
QC__HOT int qc__bits_eg(qc__bits *r, const qc__cpar *P, uint64_t *u, int alt) {
    uint64_t w = r->w, m, e;
    unsigned t;
    if (QC__UNLIKELY(!(w & P->emask))) {
        t = (unsigned)P->E;
        if (alt) {
            if ((w >> t) & 1) {
                r->w = w >> (t + 1);
                r->n -= t + 1;
                return 1;
            }
            t++;
        }
        w >>= t;
        *u = w & P->umax;
        r->w = w >> P->b;
        r->n -= t + (unsigned)P->b;
        return 0;
    }
    e = (uint64_t)qc__ctz(w);
    t = 2 * (unsigned)e + 1 + (unsigned)P->k;
    m = qc__eg_value(w, e, P);
    if (QC__UNLIKELY(m > P->umax)) return -1;
    *u = m;
    r->w = w >> t;
    r->n -= t;
    return 0;
}

/* the rest of EG(k, b) from r->pos, bit by bit (wide codes, escapes of wide values, the end of
   the packet); same results as qc__eg_read where both read. 0 ok (*alt = 1: the escape's
   "something else follows"), -1 bad */
static int qc__eg_slow(qc__br *r, const qc__cpar *P, uint64_t *out, int *alt) {
    int E = P->E, k = P->k, b = P->b, n, e;
    size_t avail = qc__br_left(r);
    uint64_t peek, m, low;
    n = (size_t)E < avail ? E : (int)avail;
    if (n <= 0) return -1;
    peek = qc__peek_at(r, r->pos, n);
    if (peek == 0) {
        if (n < E) return -1;
        r->pos += (size_t)E;
        if (alt != NULL) {
            if (qc__get(r, 1, &m) < 0) return -1;
            if (m) { *alt = 1; return 0; }
        }
        return qc__get(r, b, out);
    }
    e = qc__ctz(peek);
    r->pos += (size_t)e + 1;
    if (qc__get(r, e, &m) < 0) return -1;
    m = (m | (((uint64_t)1) << e)) - 1;
    if (qc__get(r, k, &low) < 0) return -1;
    if (k >= 64) {
        if (m) return -1;
        *out = low;
        return 0;
    }
    if (k && (m >> (64 - k))) return -1;
    m = (m << k) | low;
    if (b < 64 && (m >> b)) return -1;
    *out = m;
    return 0;
}

/* EG(k, b) through a checked reader: qc__eg_read when 16 bytes can be loaded, else (or when it
   does not read the code) qc__eg_slow. With alt, *alt = 1 for the escape's "something else
   follows", else 0. 0 ok, -1 bad. */
QC__HOT int qc__eg_p(qc__br *r, const qc__cpar *P, uint64_t *out, int *alt) {
    size_t p = r->pos;
    if ((p >> 3) + 16 <= r->nbytes && (P->b <= 32 || (qc__load_le64(r->buf + (p >> 3)) >> (p & 7)) & P->emask)) {
        int st = qc__eg_read(r->buf, &p, P, out, alt != NULL);
        if (st >= 0) {
            r->pos = p;
            if (alt != NULL) *alt = st;
            return 0;
        }
    }
    if (alt != NULL) *alt = 0;
    return qc__eg_slow(r, P, out, alt);
}

/* EG(k, b) of the packet's head (distances, counts, ids): its masks made here */
static int qc__eg(qc__br *r, int k, int b, uint64_t *out) {
    qc__cpar P;
    qc__cpar_set(&P, k, b);
    return qc__eg_p(r, &P, out, NULL);
}

static int qc__rice(qc__br *r, int k, uint64_t limit, uint64_t *out) {
    uint64_t q = 0, qmax = limit >> k, low, peek;
    for (;;) {
        size_t avail = qc__br_left(r);
        int n;
        if (avail == 0) return -1;
        n = avail >= 64 ? 64 : (int)avail;
        peek = qc__peek_at(r, r->pos, n);
        if (peek) {
            int z = qc__ctz(peek);
            q += (uint64_t)z;
            r->pos += (size_t)z + 1;
            break;
        }
        q += (uint64_t)n;
        r->pos += (size_t)n;
        if (q > qmax) return -1;
    }
    if (q > qmax) return -1;
    if (qc__get(r, k, &low) < 0) return -1;
    q = (q << k) | low;
    if (q >= limit) return -1;
    *out = q;
    return 0;
}

static int qc__list(qc__br *r, size_t *pos, size_t cnt, size_t M) {
    uint64_t v;
    size_t i;
    long long prev = -1;
    int k;
    if (qc__get(r, 5, &v) < 0) return -1;
    k = (int)v;
    for (i = 0; i < cnt; i++) {
        if (qc__rice(r, k, (uint64_t)((long long)M - prev - 1), &v) < 0) return -1;
        prev = prev + 1 + (long long)v;
        pos[i] = (size_t)prev;
    }
    return 0;
}

/* SET(M) into pos (room for M): *n members ascending. */
static int qc__set(qc__br *r, size_t *pos, size_t *n, size_t M) {
    uint64_t v, mode, word;
    size_t i, j, cnt, ws;
    int cb = qc__bitlen((uint64_t)(M - 1));
    *n = 0;
    if (qc__get(r, 2, &mode) < 0) return -1;
    if (mode == 0) return 0;
    if (mode == 1 || mode == 2) {
        if (qc__get(r, cb, &v) < 0) return -1;
        if (v > (uint64_t)M) return -1;
        cnt = (size_t)v + (mode == 1 ? 1 : 0);
        if (cnt > M || (mode == 2 && cnt == M)) return -1;
        if (mode == 1) {
            if (qc__list(r, pos, cnt, M) < 0) return -1;
            *n = cnt;
            return 0;
        }
        if (cnt && qc__list(r, pos + (M - cnt), cnt, M) < 0) return -1;
        /* the members: the runs between the absent ones, written from the front (behind the
           absent ones' list, at the back: each is read before a member reaches its place) */
        j = M - cnt;
        i = 0;
        cnt = 0;
        for (; j < M; j++) {
            size_t x = pos[j];
            while (i < x) pos[cnt++] = i++;
            i++;
        }
        while (i < M) pos[cnt++] = i++;
        *n = cnt;
        return 0;
    }
    cnt = 0;
    for (ws = 0; ws < M; ws += 64) {
        int bits = (int)(M - ws < 64 ? M - ws : 64);
        if (qc__get(r, bits, &word) < 0) return -1;
        while (word) {
            pos[cnt++] = ws + (size_t)qc__ctz(word);
            word &= word - 1;
        }
    }
    if (cnt == 0) return -1;
    *n = cnt;
    return 0;
}

/* ---- the delta rules (wire-format sections 7-8): each once, for both paths of the packet decoder ---- */

QC__HOT uint64_t qc__lin(uint64_t carrier, const qc_comp *cp) {
    uint64_t x = (carrier >> cp->shift) & cp->mask;
    if ((x >> (cp->b - 1)) & 1) x ^= cp->smt;
    return x;
}

static int64_t qc__round_div(int64_t x, int64_t den) {
    if (x >= 0) return (2 * x + den) / (2 * den);
    return -((2 * (-x) + den) / (2 * den));
}

/* A component's reference: its baseline value, or extrapolated through pred. */
QC__HOT uint64_t qc__ref(uint64_t bc, const uint64_t *pc, const qc_comp *cp, int64_t num, int64_t den) {
    uint64_t xb = qc__lin(bc, cp), mask = cp->mask, xp, dd;
    int64_t s, t;
    if (pc == NULL) return xb;
    xp = qc__lin(*pc, cp);
    dd = (xb - xp) & mask;
    s = (int64_t)qc__sext(dd, cp->b);
    t = den == 1 ? s * num : qc__round_div(s * num, den);
    return (xb + (uint64_t)t) & mask;
}

QC__HOT uint64_t qc__unzz(uint64_t u) { return (u >> 1) ^ (~(u & 1) + 1); }
QC__HOT uint64_t qc__sign_mask(uint64_t x) { return 0 - (x >> 63); }     /* ~0 when the top bit is set */
QC__HOT uint64_t qc__asr(uint64_t x, int n) {                            /* x >> n, shifting the top bit in */
    uint64_t s = qc__sign_mask(x);
    return s ^ ((s ^ x) >> n);
}

QC__HOT uint64_t qc__apply(uint64_t ref, uint64_t u, const qc_comp *cp) {
    uint64_t x = (ref + qc__unzz(u)) & cp->mask;
    if ((x >> (cp->b - 1)) & 1) x ^= cp->smt;
    return x;
}

/* top: the mode's top component code (2**cb - 1 for endpoints and bins; midpoint 2**cb - 2), the code of a negated value
   being top - c (docs/wire-format.md 7.3) */
static uint64_t qc__remap_ref(uint64_t bcode, int j, int t, int cb, uint64_t top) {
    uint64_t M = qc__mask(cb), aj, ak;
    int i = (int)((bcode >> (3 * cb)) & 3);
    int k = t + (t >= j ? 1 : 0);
    int pj = j - (j > i ? 1 : 0), pk;
    aj = (bcode >> ((2 - pj) * cb)) & M;
    if (k == i) return aj;
    pk = k - (k > i ? 1 : 0);
    ak = (bcode >> ((2 - pk) * cb)) & M;
    return (aj >> (cb - 1)) ? ak : ((top - ak) & M);
}

