/* ---- the decoder's memory ---------------------------------------------------------------------- */

static void *qc__dalloc(qc_decoder *d, size_t n) {
    void *p;
    if (d->alloc_limit && (n > d->alloc_limit || d->bytes > d->alloc_limit - n)) return NULL;
    p = d->al.alloc(d->al.ud, n ? n : 1);
    if (p != NULL) d->bytes += n;
    return p;
}

static void qc__dfree(qc_decoder *d, void *p, size_t n) {
    if (p == NULL) return;
    d->al.free(d->al.ud, p, n ? n : 1);
    d->bytes -= n;
}

#define QC__SNAP_HEAD ((sizeof(qc_snapshot) + 15) / 16 * 16)

size_t qc_snapshot_bytes(const qc_schema *s, size_t n) {
    return QC__SNAP_HEAD + n * 8 * (1 + (size_t)s->nslots);
}

uint64_t qc_snapshot_cost(const qc_schema *s, uint64_t n) {
    return 256 + n * (8 + 8 * (uint64_t)s->nslots);
}

uint64_t qc_decoder_cost(const qc_decoder *d) {
    return d->held_cost + 256 * (uint64_t)d->max_datagram;
}

static qc_snapshot *qc__snap_new(qc_decoder *d, size_t n) {
    size_t bytes = qc_snapshot_bytes(d->schema, n);
    qc_snapshot *s = (qc_snapshot *)qc__dalloc(d, bytes);
    if (s == NULL) return NULL;
    s->seq = 0;
    s->n = n;
    s->ids = (uint64_t *)((char *)s + QC__SNAP_HEAD);
    s->rows = s->ids + n;
    s->bytes = bytes;
    return s;
}

static void qc__snap_free(qc_decoder *d, qc_snapshot *s) {
    if (s != NULL) qc__dfree(d, s, s->bytes);
}

/* scratch: `words` size_t's (the entity lists) then `extra` bytes */
static void *qc__scratch(qc_decoder *d, size_t bytes) {
    if (bytes <= d->scratch_size) return d->scratch;
    qc__dfree(d, d->scratch, d->scratch_size);
    d->scratch = NULL;
    d->scratch_size = 0;
    bytes = bytes < 4096 ? 4096 : bytes + bytes / 4;
    d->scratch = qc__dalloc(d, bytes);
    if (d->scratch != NULL) d->scratch_size = bytes;
    return d->scratch;
}

/* ---- the held snapshots (wire-format section 10) ------------------------------------------------ */

#define QC__M 0xFFFF

static int qc__newer(int a, int b) { int x = (a - b) & QC__M; return x > 0 && x < 0x8000; }

static int qc__find(const qc_decoder *d, int seq) {
    int i;
    for (i = 0; i < d->nheld; i++) if (d->held_seq[i] == seq) return i;
    return -1;
}

static void qc__drop_at(qc_decoder *d, int i) {
    d->held_cost -= qc_snapshot_cost(d->schema, d->held[i]->n);
    qc__snap_free(d, d->held[i]);
    d->nheld--;
    d->held[i] = d->held[d->nheld];
    d->held_seq[i] = d->held_seq[d->nheld];
}

static int qc__amb(const qc_decoder *d, int s) { return (int)((d->ambiguous[s >> 6] >> (s & 63)) & 1); }
static void qc__amb_set(qc_decoder *d, int s) {
    if (!qc__amb(d, s)) { d->ambiguous[s >> 6] |= ((uint64_t)1) << (s & 63); d->nambiguous++; }
}
static void qc__amb_clear(qc_decoder *d, int s) {
    if (qc__amb(d, s)) { d->ambiguous[s >> 6] &= ~(((uint64_t)1) << (s & 63)); d->nambiguous--; }
}

const qc_snapshot *qc_decoder_get(const qc_decoder *d, int seq) {
    int i;
    seq &= QC__M;
    if (d->latest < 0 || ((d->latest - seq) & QC__M) >= d->history) return NULL;
    i = qc__find(d, seq);
    return i < 0 ? NULL : d->held[i];
}

int qc_decoder_latest(const qc_decoder *d) { return d->latest; }

static const qc_snapshot *qc__held_ref(qc_decoder *d, int s, int seq, int baseline, qc_result *res) {
    int i = qc__find(d, s);
    if (i >= 0 && (!baseline || ((d->latest - s) & QC__M) < d->history)) return d->held[i];
    if (d->nambiguous && qc__amb(d, s))
        snprintf(res->message, sizeof res->message, "snapshot packet %d: the snapshot %d it is coded against is ambiguous "
                 "(two different snapshots were decoded under that number)", seq, s);
    else if (baseline)
        snprintf(res->message, sizeof res->message, "snapshot packet %d: its baseline %d is not held", seq, s);
    else
        snprintf(res->message, sizeof res->message, "snapshot packet %d: the snapshot %d it extrapolates from is not held", seq, s);
    return NULL;
}

/* ---- one packet (wire-format sections 6-7) ------------------------------------------------------ */

static int qc__bad(qc_result *res, const char *what, size_t pos) {
    snprintf(res->message, sizeof res->message, "snapshot packet: %s at bit %lu", what, (unsigned long)pos);
    return QC_E_MALFORMED;
}

/* ---- the changed entities' fast path ----------------------------------------------------------
   One changed entity decoded as the slot-by-slot loop decodes it, for the common case only,
   driven by per-packet tables (qc__dcomp a component, qc__dfield a field): fields of the common
   shapes (ordered slots, a NearlyZero of ordered slots, a smallest-three Quat of at most 12 bits
   a component), every code of at most 57 bits (or an escape), every code valid, every field
   marked changed changed. Reads are bounds-free: the caller has made sure that the bytes from
   the entity's start to its most bits and 16 more can be loaded (the packet itself far from its
   end, else a zero-padded copy of its tail). An entity that is not that case is decoded again
   from its start by the slot-by-slot loop, which rewrites the slots written here and makes the
   error, if any. */
enum { QC__FS_NONE = 0, QC__FS_ORD = 1, QC__FS_NZ = 2, QC__FS_QUAT = 3 };
/* the most bits the fast path reads for one component (a code of at most 57 bits, or an escape
   of at most 33 + 1 + 32) plus one slot (a flag, or a smallest three's how and new index: 3) */
#define QC__FAST_MAXBITS 72

typedef struct qc__dcomp {  /* one component's decoding in one packet (both paths) */
    qc__cpar P;             /* its Exp-Golomb coding (and usep) */
    uint64_t numc;          /* the extrapolation's numerator, 0 when not extrapolated */
    uint64_t smt;           /* sign-magnitude: the magnitude bits at the top of the word, else 0 */
    uint64_t vmask;         /* ordered: ~0 for sign-extended carriers, else umax */
    uint64_t vlo, vspan;    /* ordered: the valid codes are vlo .. vlo + vspan (mod 2**64) */
    uint64_t vbad;          /* ordered: one more invalid code inside (PowerCurve's negative
                               zero), else 2**62 (no code of at most 32 bits) */
    int shift, sh, slot;    /* its place in its slot's carrier; 64 - b; its slot */
} qc__dcomp;

typedef struct qc__dfield { /* one field's shape in the fast path */
    int shape;              /* QC__FS_*; QC__FS_NONE: the slot-by-slot loop */
    int c0, c1;             /* its components */
    int slot;               /* NZ: the flag; QUAT: the smallest-three slot */
    int span;               /* NZ: the slots the flag governs */
    int cb, bits;           /* QUAT: bits per kept component, the slot's width */
    int plain;              /* ORD, NZ: every component unsigned, not sign-magnitude, every
                               code of its width valid (Bounded endpoints, UInt, ...) */
    uint64_t qtop;          /* QUAT: the mode's top component code */
    uint64_t maxcode;       /* QUAT: the slot's largest code */
    const uint32_t *qsq;    /* QUAT: qc_slot.qsq */
} qc__dfield;

/* n <= 57 bits at bit *pos (bounds-free, as qc__eg_read) */
QC__HOT uint64_t qc__fast_bits(const uint8_t *buf, size_t *pos, int n) {
    uint64_t v = (qc__load_le64(buf + (*pos >> 3)) >> (*pos & 7)) & ((((uint64_t)1) << n) - 1);
    *pos += (size_t)n;
    return v;
}

/* The reference at the top of the word (qc__ref's, for an extrapolated component; numc 0:
   the baseline's value); den1: the ratio is whole, a constant in each copy of qc__fast_run */
QC__HOT uint64_t qc__fast_ref(uint64_t xb, uint64_t xp, const qc__dcomp *d, int64_t num, int64_t den, int den1) {
    if (den1) return xb + (xb - xp) * d->numc;
    if (!d->numc) return xb;
    return xb + ((uint64_t)qc__round_div((int64_t)qc__asr(xb - xp, d->sh) * num, den) << d->sh);
}

#define QC__FAST_EG(d, u) do { if (QC__UNLIKELY(qc__eg_read(buf, &pos, &(d)->P, &(u), 0))) return (size_t)-1; } while (0)

/* One changed entity's fields (fr: its changed-field flags) from bit pos: the new position, or
   (size_t)-1 when it is not the fast path's case. pr: the extrapolation row, or the baseline
   row when there is none (a reference extrapolated from the baseline to itself is the
   baseline's). */
QC__HOT size_t qc__fast_entity(const uint8_t *buf, size_t pos, const uint8_t *fr, int F, const qc__dfield *FD,
                               const qc__dcomp *D, const uint64_t *br, const uint64_t *pr, uint64_t *orw,
                               int64_t num, int64_t den, int den1) {
    const qc__dfield *fd = FD, *fend = FD + F;
    int any = 0;
    for (; fd < fend; fd++, fr++) {
        uint64_t dacc = 0, u, xb, xp, v;
        const qc__dcomp *d, *dend;
        if (!*fr) continue;
        any = 1;
        d = D + fd->c0;
        dend = D + fd->c1;
        if (fd->shape == QC__FS_QUAT) {
            int s = fd->slot, qs = 3 * fd->cb, st;
            uint64_t bw = br[s], pw = pr[s], code, m;
            pw = (pw >> qs) == (bw >> qs) ? pw : bw;    /* no extrapolation across a change of
                                                           the largest component */
            code = (bw >> qs) << qs;
            st = qc__eg_read(buf, &pos, &d->P, &u, 1);
            if (QC__UNLIKELY(st)) {
                if (st < 0) return (size_t)-1;
                /* a new largest component: the absolute code, or the new index and the
                   differences from the baseline's values remapped to it */
                if (qc__fast_bits(buf, &pos, 1) == 0) {
                    code = qc__fast_bits(buf, &pos, fd->bits);
                } else {
                    int j = (int)qc__fast_bits(buf, &pos, 2), t;
                    if ((uint64_t)j == (bw >> qs)) return (size_t)-1;
                    code = (uint64_t)j << qs;
                    for (t = 0; t < 3; t++, d++) {
                        QC__FAST_EG(d, u);
                        code |= ((qc__remap_ref(bw, j, t, fd->cb, fd->qtop) + qc__unzz(u)) & d->P.umax) << d->shift;
                    }
                }
            } else {
                for (;;) {
                    if (den1) {
                        /* (the low b bits of sums and products depend on the operands' low b
                           bits only: the top-of-word arithmetic, unshifted, then masked) */
                        xb = bw >> d->shift;
                        xb += (xb - (pw >> d->shift)) * d->numc + qc__unzz(u);
                        code |= (xb & d->P.umax) << d->shift;
                    } else {
                        xb = qc__fast_ref((bw >> d->shift) << d->sh, (pw >> d->shift) << d->sh, d, num, den, den1) +
                             (qc__unzz(u) << d->sh);
                        code |= (xb >> d->sh) << d->shift;
                    }
                    if (++d == dend) break;
                    QC__FAST_EG(d, u);
                }
            }
            m = (((uint64_t)1) << fd->cb) - 1;
            if (!((code <= fd->maxcode) &
                  qc__quat_surely_valid(fd->qsq, (code >> (2 * fd->cb)) & m, (code >> fd->cb) & m, code & m)))
                return (size_t)-1;
            if (code == bw) return (size_t)-1;
            orw[s] = code;
            continue;
        }
        if (fd->shape == QC__FS_NZ) {
            int s = fd->slot, t;
            v = 1;
            if (br[s] != 0) v = qc__fast_bits(buf, &pos, 1);
            orw[s] = v;
            dacc = v ^ br[s];
            if (v == 0) {
                for (t = s + 1; t <= s + fd->span; t++) {
                    orw[t] = 0;
                    dacc |= br[t];
                }
                d = dend;
            }
        } else if (fd->shape != QC__FS_ORD) {
            return (size_t)-1;
        }
        if (fd->plain) {
            /* unsigned, linear, every code of the width valid: a masked sum, no test */
            for (; d < dend; d++) {
                int s = d->slot;
                QC__FAST_EG(d, u);
                if (den1) v = (br[s] + (br[s] - pr[s]) * d->numc + qc__unzz(u)) & d->P.umax;
                else v = (qc__fast_ref(br[s] << d->sh, pr[s] << d->sh, d, num, den, den1) + (qc__unzz(u) << d->sh)) >> d->sh;
                orw[s] = v;
                dacc |= v ^ br[s];
            }
        } else {
            for (; d < dend; d++) {
                int s = d->slot;
                uint64_t bad;
                QC__FAST_EG(d, u);
                xb = br[s] << d->sh;
                xp = pr[s] << d->sh;
                if (d->smt) {
                    xb ^= qc__sign_mask(xb) & d->smt;
                    xp ^= qc__sign_mask(xp) & d->smt;
                }
                xb = qc__fast_ref(xb, xp, d, num, den, den1) + (qc__unzz(u) << d->sh);
                if (d->smt) xb ^= qc__sign_mask(xb) & d->smt;
                v = (uint64_t)qc__asr(xb, d->sh) & d->vmask;
                bad = (uint64_t)((v - d->vlo) > d->vspan) | (uint64_t)(v == d->vbad);
                if (QC__UNLIKELY(bad)) return (size_t)-1;
                orw[s] = v;
                dacc |= v ^ br[s];
            }
        }
        if (dacc == 0) return (size_t)-1;
    }
    return any ? pos : (size_t)-1;
}

typedef struct qc__fastrun {    /* what qc__fast_run reads, for one packet */
    const uint8_t *buf;         /* the packet, or the zero-padded copy of its tail */
    size_t lastfast;            /* an entity starting before this byte of buf can be read */
    size_t nbits;               /* the packet's end in buf's bits: an entity read past it is not taken */
    const uint8_t *fch;         /* the changed fields, F a changed entity */
    int F, S;
    const qc__dfield *FD;
    const qc__dcomp *D;
    const int *gen;             /* the fields of no fast shape changed in the packet */
    int ngen;
    const uint64_t *brow, *prow;    /* prow NULL: no extrapolation */
    uint64_t *orow;
    const size_t *chg, *kept_base, *kept_out, *kept_pred;  /* kept_base, kept_out NULL: the identity */
    int64_t num, den;
} qc__fastrun;

QC__HOT size_t qc__fast_run_(const qc__fastrun *a, size_t e, size_t n, size_t *ppos, int den1) {
    const uint8_t *buf = a->buf;
    size_t pos = *ppos, S = (size_t)a->S, F = (size_t)a->F, t;
    int g;
    for (; e < n; e++) {
        size_t c = a->chg[e], kb = a->kept_base ? a->kept_base[c] : c;
        const uint64_t *br = a->brow + kb * S, *pr = br;
        const uint8_t *fr = a->fch + e * F;
        if ((pos >> 3) >= a->lastfast) break;
        if (a->prow != NULL && a->kept_pred[c] != (size_t)-1) pr = a->prow + a->kept_pred[c] * S;
        for (g = 0; g < a->ngen; g++)
            if (fr[a->gen[g]]) break;
        if (g < a->ngen) break;
        t = qc__fast_entity(buf, pos, fr, a->F, a->FD, a->D, br, pr, a->orow + (a->kept_out ? a->kept_out[c] : c) * S,
                            a->num, a->den, den1);
        if (t == (size_t)-1 || t > a->nbits) break;
        pos = t;
    }
    *ppos = pos;
    return e;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(QUANTCODEC_NO_BMI2)
#define QC__FAST_BMI2 1
/* qc__fast_run with BMI1 / BMI2 (shifts by a register without the cl dance, tzcnt): its reads
   are mostly variable shifts. Chosen at run time when the CPU has them (the portable copy is
   the other; -DQUANTCODEC_NO_BMI2 leaves it alone). */
__attribute__((target("bmi,bmi2"))) static size_t qc__fast_run_bmi2(const qc__fastrun *a, size_t e, size_t n, size_t *ppos) {
    if (a->den == 1) return qc__fast_run_(a, e, n, ppos, 1);
    return qc__fast_run_(a, e, n, ppos, 0);
}
#endif

/* The changed entities e, e + 1, ... (< n) that qc__fast_entity decodes, one after the other
   from bit *ppos: returns the first one it does not (n if none), *ppos at its start. */
static size_t qc__fast_run(const qc__fastrun *a, size_t e, size_t n, size_t *ppos) {
#ifdef QC__FAST_BMI2
    if (__builtin_cpu_supports("bmi2")) return qc__fast_run_bmi2(a, e, n, ppos);
#endif
    if (a->den == 1) return qc__fast_run_(a, e, n, ppos, 1);
    return qc__fast_run_(a, e, n, ppos, 0);
}

/* whether two rows of S codes differ (0 or 1), without a branch a code: two codes a compare
   with SSE2 where the compiler has it */
QC__HOT int qc__rows_differ(const uint64_t *a, const uint64_t *b, int S) {
    uint64_t x = 0;
    int s = 0;
#if defined(__SSE2__) || defined(_M_X64)
    __m128i acc = _mm_setzero_si128();
    for (; s + 2 <= S; s += 2)
        acc = _mm_or_si128(acc, _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(a + s)),
                                              _mm_loadu_si128((const __m128i *)(const void *)(b + s))));
    x = (uint64_t)(_mm_movemask_epi8(_mm_cmpeq_epi8(acc, _mm_setzero_si128())) != 0xFFFF);
#endif
    for (; s < S; s++) x |= a[s] ^ b[s];
    return x != 0;
}

/* The fast path's tables for one packet: each component's extrapolation (numc: the ratio's
   numerator when the packet extrapolates it) and validity, each field's shape. The fields of no
   fast shape changed in this packet go to gen (their entities take the slot loop): how many. */
static int qc__fast_tables(const qc_schema *sc, const uint8_t *fmode, int pdist, int64_t num, qc__dcomp *dc,
                           qc__dfield *dfd, int *gen) {
    const int F = sc->nfields, C = sc->ncomps;
    int ngen = 0, c, i;
    for (c = 0; c < C; c++) {
        const qc_comp *cp = &sc->comps[c];
        const qc_slot *sl = &sc->slots[cp->slot];
        qc__dcomp *dd = &dc[c];
        dd->numc = pdist && dd->P.usep ? (uint64_t)num : 0;
        dd->sh = 64 - cp->b;
        dd->smt = cp->smt << dd->sh;
        dd->shift = cp->shift;
        dd->slot = cp->slot;
        dd->vmask = sl->sign ? ~(uint64_t)0 : cp->mask;
        dd->vbad = ((uint64_t)1) << 62;
        if (sl->sign) {
            dd->vlo = (uint64_t)sl->codec->smin;
            dd->vspan = (uint64_t)sl->codec->smax - (uint64_t)sl->codec->smin;
        } else {
            dd->vlo = 0;
            dd->vspan = sl->codec->maxcode;
            if (sl->codec->kind == QC_POWERCURVE) dd->vbad = ((uint64_t)1) << (sl->bits - 1);
        }
    }
    for (i = 0; i < F; i++) {
        const qc_field *fd = &sc->fields[i];
        const qc_slot *s0 = &sc->slots[fd->first_slot];
        qc__dfield *df = &dfd[i];
        df->c0 = fd->first_comp;
        df->c1 = fd->first_comp + fd->ncomps;
        df->shape = QC__FS_NONE;
        if (fd->nslots == 1 && s0->role == QC_ROLE_QUAT && s0->qsq != NULL) {
            df->shape = QC__FS_QUAT;
            df->slot = fd->first_slot;
            df->cb = s0->codec->cbits;
            df->bits = s0->bits;
            df->maxcode = s0->codec->maxcode;
            df->qtop = qc__mask(df->cb) - (s0->codec->mode == 2 ? 1 : 0);
            df->qsq = s0->qsq;
        } else if (fd->ncomps > 0 && (fd->implied_flag ? s0->role == QC_ROLE_FLAG && s0->span == fd->nslots - 1 : 1)) {
            int s;
            df->shape = fd->implied_flag ? QC__FS_NZ : QC__FS_ORD;
            df->slot = fd->first_slot;
            df->span = fd->implied_flag ? s0->span : 0;
            df->plain = 1;
            for (s = fd->first_slot + (fd->implied_flag ? 1 : 0); s < fd->first_slot + fd->nslots; s++) {
                const qc_slot *sl = &sc->slots[s];
                const qc_comp *cp;
                if (sl->role != QC_ROLE_ORD) { df->shape = QC__FS_NONE; break; }
                cp = &sc->comps[sl->comp];
                if (cp->b > 32 || cp->shift || (sl->codec->kind == QC_POWERCURVE && sl->codec->maxcode != qc__mask(sl->bits))) {
                    df->shape = QC__FS_NONE;
                    break;
                }
                if (cp->smt || sl->sign || sl->vclass != 0) df->plain = 0;
            }
        }
        if (fmode[i] && df->shape == QC__FS_NONE) gen[ngen++] = i;
    }
    return ngen;
}

/* the bytes an entity of the fast path may load from its start (QC__FAST_MAXBITS a component
   and a slot, and 16 bytes of loads); the padded copy of a packet's tail takes twice that */
static size_t qc__fast_tail(const qc_schema *sc) {
    return ((size_t)QC__FAST_MAXBITS * (size_t)(sc->ncomps + sc->nslots) + 7) / 8 + 16;
}

/* the packet decoder's per-packet tables and tail copy in its scratch, in bytes */
static size_t qc__tables_bytes(const qc_schema *sc) {
    return ((size_t)sc->ncomps + 1) * sizeof(qc__dcomp) + ((size_t)sc->nfields + 1) * (sizeof(qc__dfield) + sizeof(int)) +
           (2 * qc__fast_tail(sc) + 7) / 8 * 8;
}

/* the scratch's parts (qc__decode_packet's locals), made again when it grows */
#define QC__LAYOUT() do {                                                                      \
        removed = (size_t *)d->scratch;                                                         \
        kept_base = removed + (m + 1);                                                          \
        kept_out = kept_base + (kept + 1);                                                      \
        kept_pred = kept_out + (kept + 1);                                                      \
        cls1 = kept_pred + (kept + 1);                                                          \
        cls0 = cls1 + (kept + 1);                                                               \
        set1 = cls0 + (kept + 1);                                                               \
        set0 = set1 + (kept + 1);                                                               \
        chg = set0 + (kept + 1);                                                                \
        nid = (uint64_t *)(removed + words);                                                    \
        nrow = nid + nnew;                                                                      \
        dc = (qc__dcomp *)(nrow + nnew * (size_t)S);                                            \
        dfd = (qc__dfield *)(dc + C + 1);                                                       \
        gen = (int *)(dfd + F + 1);                                                             \
        tail = (uint8_t *)(gen + F + 1);                                                        \
        fmode = tail + (2 * tb + 7) / 8 * 8;                                                    \
    } while (0)

static int qc__decode_packet(qc_decoder *d, const uint8_t *buf, size_t nbytes, qc_snapshot **out, qc_result *res) {
    const qc_schema *sc = d->schema;
    const int S = sc->nslots, F = sc->nfields, C = sc->ncomps;
    qc__br r;
    uint64_t v;
    int seq, bdist = 0, pdist = 0, i;
    const qc_snapshot *base = NULL, *pred = NULL;
    size_t m = 0, nrem = 0, nnew = 0, kept, nout, e, nchg = 0, x, o, j;
    size_t *removed, *kept_base, *kept_out, *kept_pred, *cls1, *cls0, *set1, *set0, *chg;
    uint64_t *nid, *nrow;
    uint8_t *fch, *fmode, *tail;
    qc__dcomp *dc;
    qc__dfield *dfd;
    int *gen;
    size_t words, need, tb = qc__fast_tail(sc);
    qc_snapshot *snap;
    int64_t num = 1, den = 1;
    qc__fastrun run;
    size_t st = 0, lastfast = nbytes > tb ? nbytes - tb : 0;
    int tail_made = 0;
    qc__br_init(&r, buf, nbytes);
    /* header */
    if (qc__get(&r, 16, &v) < 0) return qc__bad(res, "truncated header", r.pos);
    seq = (int)v;
    if (qc__get(&r, 1, &v) < 0) return qc__bad(res, "truncated header", r.pos);
    if (v) {
        if (qc__eg(&r, 2, 16, &v) < 0) return qc__bad(res, "bad baseline distance", r.pos);
        if (v >= 0x7FFF) return qc__bad(res, "sequence distance outside 1..32767", r.pos);
        bdist = (int)v + 1;
        if (qc__get(&r, 1, &v) < 0) return qc__bad(res, "truncated header", r.pos);
        if (v) {
            if (qc__eg(&r, 2, 16, &v) < 0) return qc__bad(res, "bad pred distance", r.pos);
            if (v + 1 + (uint64_t)bdist > 0x7FFF) return qc__bad(res, "sequence distance outside 1..32767", r.pos);
            pdist = (int)v + 1;
        }
    }
    if (bdist) {
        int bseq = (seq - bdist) & QC__M;
        base = qc__held_ref(d, bseq, seq, 1, res);
        if (base == NULL) return QC_E_BASELINE;
        m = base->n;
        if (pdist) {
            pred = qc__held_ref(d, (bseq - pdist) & QC__M, seq, 0, res);
            if (pred == NULL) return QC_E_BASELINE;
        }
    }
    /* removed entities */
    words = m + 1;
    if (qc__scratch(d, words * sizeof(size_t)) == NULL) goto nomem;
    removed = (size_t *)d->scratch;
    if (bdist && m) {
        if (qc__set(&r, removed, &nrem, m) < 0) return qc__bad(res, "bad set of removed entities", r.pos);
    }
    kept = m - nrem;
    /* new entities */
    if (qc__eg(&r, 0, 32, &v) < 0) return qc__bad(res, "bad count of new entities", r.pos);
    if (v > (uint64_t)qc__br_left(&r) || v > 0xFFFFFFFFull - (uint64_t)kept)
        return qc__bad(res, "count of new entities larger than the packet can hold", r.pos);
    nnew = (size_t)v;
    nout = kept + nnew;
    {
        /* wire-format 19, check 2: what is held, the new snapshot and reassembly's bound */
        uint64_t per = 8 + 8 * (uint64_t)S, fixed = 256 + 256 * (uint64_t)d->max_datagram;
        if (d->held_cost > d->max_bytes || fixed > d->max_bytes - d->held_cost ||
                (uint64_t)nout > (d->max_bytes - d->held_cost - fixed) / per) {
            snprintf(res->message, sizeof res->message, "snapshot packet %d: a snapshot of %lu entities would make the client "
                     "hold %llu bytes (held %llu, this one %llu, reassembly %llu), above max_bytes %llu", seq, (unsigned long)nout,
                     (unsigned long long)(d->held_cost + fixed + (uint64_t)nout * per), (unsigned long long)d->held_cost,
                     (unsigned long long)(256 + (uint64_t)nout * per), (unsigned long long)(256 * (uint64_t)d->max_datagram),
                     (unsigned long long)d->max_bytes);
            return QC_E_LIMITS;
        }
    }
    if (nout > d->max_entities) {
        snprintf(res->message, sizeof res->message, "snapshot packet %d: %lu entities, above the configured max_entities %lu",
                 seq, (unsigned long)nout, (unsigned long)d->max_entities);
        return QC_E_MEMORY;
    }
    /* scratch: removed (m+1), kept_base, kept_out, kept_pred, cls1, cls0, set1, set0, chg (kept+1
       each) as size_t; new ids (nnew) and rows (nnew * S) as uint64; the tables (qc__dcomp a
       component, qc__dfield and an int a field); the tail's padded copy; then bytes */
    words = (m + 1) + 8 * (kept + 1);
    need = words * sizeof(size_t) + nnew * (1 + (size_t)S) * 8 + qc__tables_bytes(sc) + ((size_t)F + 1);
    {
        /* keep the removed positions across the growth */
        size_t *old = NULL;
        if (need > d->scratch_size && nrem) {
            old = (size_t *)qc__dalloc(d, nrem * sizeof(size_t));
            if (old == NULL) goto nomem;
            memcpy(old, d->scratch, nrem * sizeof(size_t));
        }
        if (qc__scratch(d, need) == NULL) { if (old) qc__dfree(d, old, nrem * sizeof(size_t)); goto nomem; }
        if (old != NULL) {
            memcpy(d->scratch, old, nrem * sizeof(size_t));
            qc__dfree(d, old, nrem * sizeof(size_t));
        }
    }
    QC__LAYOUT();
    /* the new snapshot; with no kept entity the new ones are read straight into it */
    snap = qc__snap_new(d, nout);
    if (snap == NULL) goto nomem;
    snap->seq = (uint16_t)seq;
    if (kept == 0) {
        nid = snap->ids;
        nrow = snap->rows;
    }
    if (nnew) {
        uint64_t prev = 0;
        qc__cpar idp;
        const char *msg = NULL;
        if (qc__get(&r, 6, &v) < 0) { msg = "truncated id parameter"; goto new_bad; }
        qc__cpar_set(&idp, (int)v, 64);
        for (e = 0; e < nnew; e++) {
            if (qc__eg_p(&r, &idp, &v, NULL) < 0) { msg = "bad id of a new entity"; goto new_bad; }
            if (e) {
                if (v >= 0xFFFFFFFFFFFFFFFFull - prev) { msg = "new entity id beyond 2**64 - 1"; goto new_bad; }
                v = prev + 1 + v;
            }
            nid[e] = v;
            prev = v;
        }
        for (e = 0; e < nnew; e++) {
            uint64_t *row = nrow + e * (size_t)S;
            int s;
            for (s = 0; s < S; s++) {
                const qc_slot *sl = &sc->slots[s];
                if (qc__get(&r, sl->bits, &v) < 0) { msg = "truncated record of a new entity"; goto new_bad; }
                if (sl->role == QC_ROLE_FLAG) {
                    int t;
                    row[s] = v;
                    if (v == 0) {
                        for (t = s + 1; t <= s + sl->span; t++) row[t] = 0;
                        s += sl->span;
                    }
                    continue;
                }
                if (sl->sign) v = qc__sext(v, sl->bits);
                row[s] = v;
                if (!qc__slot_ok(sl, v)) {
                    char nm[160];
                    snprintf(res->message, sizeof res->message, "snapshot packet: entity %llu: %s: code %llu is not valid (at bit %lu)",
                             (unsigned long long)nid[e], qc__slot_name(sc, s, nm, sizeof nm), (unsigned long long)v,
                             (unsigned long)(r.pos - (size_t)sl->bits));
                    qc__snap_free(d, snap);
                    return QC_E_MALFORMED;
                }
            }
        }
        if (0) {
new_bad:
            qc__snap_free(d, snap);
            return qc__bad(res, msg, r.pos);
        }
    }
    /* merged by id: the kept baseline rows (runs of them copied at once) and the new rows */
    i = 0;
    if (kept == m && nnew == 0) {
        /* the baseline's entities, row for row */
        if (m) {
            memcpy(snap->ids, base->ids, m * 8);
            if (S) memcpy(snap->rows, base->rows, m * (size_t)S * 8);
        }
        for (e = 0; e < m; e++) { kept_base[e] = e; kept_out[e] = e; }
    } else if (kept) {
        size_t bi = 0, xi = 0, ni = 0, run_b = 0, run_o = 0, run_n = 0;
        o = 0; e = 0;
        while (bi < m || ni < nnew) {
            if (bi < m && xi < nrem && removed[xi] == bi) { xi++; bi++; goto flush; }
            if (bi < m && (ni >= nnew || base->ids[bi] < nid[ni])) {
                if (run_n == 0) { run_b = bi; run_o = o; }
                run_n++;
                kept_base[e] = bi;
                kept_out[e] = o;
                e++;
                bi++; o++;
                continue;
            }
            if (bi < m && base->ids[bi] == nid[ni]) {
                qc__snap_free(d, snap);
                return qc__bad(res, "a new entity has the id of a kept one", r.pos);
            }
            snap->ids[o] = nid[ni];
            if (S) memcpy(snap->rows + o * (size_t)S, nrow + ni * (size_t)S, (size_t)S * 8);
            ni++; o++;
flush:
            if (run_n) {
                memcpy(snap->ids + run_o, base->ids + run_b, run_n * 8);
                if (S) memcpy(snap->rows + run_o * (size_t)S, base->rows + run_b * (size_t)S, run_n * (size_t)S * 8);
                run_n = 0;
            }
        }
        if (run_n) {
            memcpy(snap->ids + run_o, base->ids + run_b, run_n * 8);
            if (S) memcpy(snap->rows + run_o * (size_t)S, base->rows + run_b * (size_t)S, run_n * (size_t)S * 8);
        }
    }
    if (!bdist) goto finish;
    /* changed entities */
    if (pdist) {
        size_t n1 = 0, n0 = 0, m1 = 0, m0 = 0, a1 = 0, a0 = 0, pj = 0;
        if (nrem == 0 && pred->n == m && (m == 0 || memcmp(pred->ids, base->ids, m * 8) == 0)) {
            /* the common case: the baseline's entities kept, the same in the extrapolation
               snapshot, row for row */
            for (e = 0; e < kept; e++) {
                int ctx = qc__rows_differ(base->rows + e * (size_t)S, pred->rows + e * (size_t)S, S);
                kept_pred[e] = e;
                cls1[n1] = e;
                cls0[n0] = e;
                n1 += (size_t)ctx;
                n0 += (size_t)!ctx;
            }
        } else for (e = 0; e < kept; e++) {
            size_t kb = kept_base[e];
            int ctx = 1;
            kept_pred[e] = (size_t)-1;
            while (pj < pred->n && pred->ids[pj] < base->ids[kb]) pj++;
            if (pj < pred->n && pred->ids[pj] == base->ids[kb]) {
                kept_pred[e] = pj;
                ctx = qc__rows_differ(base->rows + kb * (size_t)S, pred->rows + pj * (size_t)S, S);
            }
            if (ctx) cls1[n1++] = e; else cls0[n0++] = e;
        }
        if (n1 && qc__set(&r, set1, &m1, n1) < 0) { qc__snap_free(d, snap); return qc__bad(res, "bad set of changed entities", r.pos); }
        if (n0 && qc__set(&r, set0, &m0, n0) < 0) { qc__snap_free(d, snap); return qc__bad(res, "bad set of changed entities", r.pos); }
        while (a1 < m1 || a0 < m0) {
            if (a0 >= m0 || (a1 < m1 && cls1[set1[a1]] < cls0[set0[a0]])) chg[nchg++] = cls1[set1[a1++]];
            else chg[nchg++] = cls0[set0[a0++]];
        }
    } else if (kept) {
        if (qc__set(&r, chg, &nchg, kept) < 0) { qc__snap_free(d, snap); return qc__bad(res, "bad set of changed entities", r.pos); }
    }
    if (nchg == 0) goto finish;
    /* which fields: a byte per changed entity and field */
    {
        size_t fneed = nchg * (size_t)F;
        size_t used = (size_t)((fmode + F + 1) - (uint8_t *)d->scratch);
        if (used + fneed > d->scratch_size) {
            /* grow, keeping what is in use */
            size_t nsz = used + fneed;
            void *ns = qc__dalloc(d, nsz);
            if (ns == NULL) { qc__snap_free(d, snap); goto nomem; }
            memcpy(ns, d->scratch, used);
            qc__dfree(d, d->scratch, d->scratch_size);
            d->scratch = ns;
            d->scratch_size = nsz;
            QC__LAYOUT();
        }
        fch = fmode + F + 1;
        memset(fch, 0, fneed);
    }
    for (i = 0; i < F; i++) {
        size_t mm;
        if (qc__set(&r, set1, &mm, nchg) < 0) { qc__snap_free(d, snap); return qc__bad(res, "bad set of changed fields", r.pos); }
        fmode[i] = mm > 0;
        for (x = 0; x < mm; x++) fch[set1[x] * (size_t)F + (size_t)i] = 1;
    }
    for (i = 0; i < F; i++) {
        int c;
        const qc_field *fd = &sc->fields[i];
        for (c = fd->first_comp; c < fd->first_comp + fd->ncomps; c++) {
            int b = sc->comps[c].b;
            qc__cpar *P = &dc[c].P;
            P->usep = 0;
            qc__cpar_set(P, 0, b);
            if (!fmode[i]) continue;
            if (pdist && b <= 32) {
                if (qc__get(&r, 1, &v) < 0) { qc__snap_free(d, snap); return qc__bad(res, "truncated parameters", r.pos); }
                P->usep = (int)v;
            }
            if (qc__get(&r, qc__bitlen((uint64_t)b), &v) < 0) { qc__snap_free(d, snap); return qc__bad(res, "truncated parameters", r.pos); }
            if ((int)v > b) { qc__snap_free(d, snap); return qc__bad(res, "Exp-Golomb parameter above the code width", r.pos); }
            qc__cpar_set(P, (int)v, b);
        }
    }
    if (pdist) {
        int64_t a = bdist, b2 = pdist, t;
        while (b2) { t = a % b2; a = b2; b2 = t; }
        num = bdist / a;
        den = pdist / a;
    }
    /* the fast path's tables, and what its runs read */
    {
        run.ngen = qc__fast_tables(sc, fmode, pdist, num, dc, dfd, gen);
        run.fch = fch;
        run.F = F;
        run.S = S;
        run.FD = dfd;
        run.D = dc;
        run.gen = gen;
        run.brow = base->rows;
        run.prow = pdist ? pred->rows : NULL;
        run.orow = snap->rows;
        run.chg = chg;
        run.kept_base = kept_base;
        run.kept_out = kept_out;
        run.kept_pred = kept_pred;
        run.num = num;
        run.den = den;
    }
    for (x = 0; x < nchg; x++) {
        size_t ke;
        const uint64_t *br, *pr = NULL;
        uint64_t *orw;
        int any = 0;
        const char *msg = NULL;
        /* the entities the fast path takes, from the packet while far from its end, then from
           a zero-padded copy of its tail; the slot-by-slot loop below takes the next */
        if ((r.pos >> 3) < lastfast) {
            run.buf = buf;
            run.lastfast = lastfast;
            run.nbits = 8 * nbytes;
            x = qc__fast_run(&run, x, nchg, &r.pos);
        }
        if (x < nchg && (r.pos >> 3) >= lastfast) {
            if (!tail_made) {
                tail_made = 1;
                st = r.pos >> 3;
                memcpy(tail, buf + st, nbytes - st);
                memset(tail + (nbytes - st), 0, tb);
            }
            run.buf = tail;
            run.lastfast = nbytes - st;
            run.nbits = 8 * (nbytes - st);
            r.pos -= 8 * st;
            x = qc__fast_run(&run, x, nchg, &r.pos);
            r.pos += 8 * st;
        }
        if (x == nchg) break;
        ke = chg[x];
        br = base->rows + kept_base[ke] * (size_t)S;
        orw = snap->rows + kept_out[ke] * (size_t)S;
        if (pdist && kept_pred[ke] != (size_t)-1) pr = pred->rows + kept_pred[ke] * (size_t)S;
        for (i = 0; i < F && msg == NULL; i++) {
            const qc_field *fd = &sc->fields[i];
            int s = fd->first_slot, end = fd->first_slot + fd->nslots;
            uint64_t dacc = 0;
            if (!fch[x * (size_t)F + (size_t)i]) continue;
            any = 1;
            while (s < end && msg == NULL) {
                const qc_slot *sl = &sc->slots[s];
                if (sl->role == QC_ROLE_FLAG) {
                    int t;
                    if (fd->implied_flag && br[s] == 0) v = 1;
                    else if (qc__get(&r, 1, &v) < 0) { msg = "truncated flag"; break; }
                    orw[s] = v;
                    dacc |= v ^ br[s];
                    if (v == 0) {
                        for (t = s + 1; t <= s + sl->span; t++) { orw[t] = 0; dacc |= br[t]; }
                        s += sl->span;
                    }
                    s++;
                    continue;
                }
                if (sl->role == QC_ROLE_ORD) {
                    const qc_comp *cp = &sc->comps[sl->comp];
                    uint64_t ref;
                    if (qc__eg_p(&r, &dc[sl->comp].P, &v, NULL) < 0) { msg = "bad difference"; break; }
                    ref = qc__ref(br[s], pr != NULL && dc[sl->comp].P.usep ? &pr[s] : NULL, cp, num, den);
                    v = qc__apply(ref, v, cp);
                    if (sl->sign) v = qc__sext(v, sl->bits);
                } else if (sl->role == QC_ROLE_QUAT || sl->role == QC_ROLE_UVEC) {
                    int nco = sl->role == QC_ROLE_QUAT ? 3 : 2, alt = 0, qpred, q, cb = sl->codec->cbits;
                    uint64_t code;
                    if (sl->role == QC_ROLE_QUAT) {
                        int qs = 3 * cb;
                        qpred = pr != NULL && (pr[s] >> qs) == (br[s] >> qs);
                        code = (br[s] >> qs) << qs;
                    } else {
                        qpred = pr != NULL;
                        code = 0;
                    }
                    for (q = 0; q < nco; q++) {
                        int c = sl->comp + q;
                        const qc_comp *cp = &sc->comps[c];
                        uint64_t ref;
                        if (qc__eg_p(&r, &dc[c].P, &v, q == 0 && sl->role == QC_ROLE_QUAT ? &alt : NULL) < 0) { msg = "bad difference"; break; }
                        if (alt) break;
                        ref = qc__ref(br[s], qpred && dc[c].P.usep ? &pr[s] : NULL, cp, num, den);
                        code |= qc__apply(ref, v, cp) << cp->shift;
                    }
                    if (msg != NULL) break;
                    if (alt) {
                        uint64_t how;
                        if (qc__get(&r, 1, &how) < 0) { msg = "truncated smallest-three code"; break; }
                        if (how == 0) {
                            if (qc__get(&r, sl->bits, &code) < 0) { msg = "truncated smallest-three code"; break; }
                        } else {
                            uint64_t jn;
                            int t;
                            if (qc__get(&r, 2, &jn) < 0) { msg = "truncated smallest-three code"; break; }
                            if (jn == (br[s] >> (3 * cb))) { msg = "a smallest-three remap to the baseline's own index"; break; }
                            code = jn << (3 * cb);
                            for (t = 0; t < 3; t++) {
                                const qc_comp *cp = &sc->comps[sl->comp + t];
                                if (qc__eg_p(&r, &dc[sl->comp + t].P, &v, NULL) < 0) { msg = "bad difference"; break; }
                                code |= ((qc__remap_ref(br[s], (int)jn, t, cb, qc__mask(cb) - (sl->codec->mode == 2 ? 1 : 0)) + qc__unzz(v)) & qc__mask(cb)) << cp->shift;
                            }
                            if (msg != NULL) break;
                        }
                    }
                    v = code;
                } else {        /* abs */
                    if (fd->implied_flip) v = br[s] ^ 1;
                    else if (qc__get(&r, sl->bits, &v) < 0) { msg = "truncated code"; break; }
                }
                if (!qc__slot_ok(sl, v)) {
                    char nm[160];
                    snprintf(res->message, sizeof res->message, "snapshot packet: entity %llu: %s: code %llu is not valid (at bit %lu)",
                             (unsigned long long)base->ids[kept_base[ke]], qc__slot_name(sc, s, nm, sizeof nm),
                             (unsigned long long)v, (unsigned long)r.pos);
                    qc__snap_free(d, snap);
                    return QC_E_MALFORMED;
                }
                orw[s] = v;
                dacc |= v ^ br[s];
                s++;
            }
            if (msg == NULL && dacc == 0) msg = "a field marked changed is unchanged";
        }
        if (msg == NULL && !any) msg = "an entity marked changed has no changed field";
        if (msg != NULL) {
            qc__snap_free(d, snap);
            return qc__bad(res, msg, r.pos);
        }
    }
finish:
    {
        size_t left = qc__br_left(&r);
        if (left >= 8 || (qc__get(&r, (int)left, &v) == 0 && v != 0)) {
            qc__snap_free(d, snap);
            return qc__bad(res, "unexpected data after the end of the packet", r.pos);
        }
    }
    (void)j;
    *out = snap;
    return QC_SNAPSHOT;
nomem:
    snprintf(res->message, sizeof res->message, "snapshot packet %d: out of memory (allocator or alloc_limit %lu)",
             seq, (unsigned long)d->alloc_limit);
    return QC_E_MEMORY;
}

/* Keep a decoded snapshot as section 10 says; returns it (held, or loose until the next call). */
static void qc__keep(qc_decoder *d, qc_snapshot *snap) {
    int seq = snap->seq, i;
    if (d->latest < 0 || qc__newer(seq, d->latest)) {
        if (d->latest >= 0) {
            for (i = d->nheld - 1; i >= 0; i--)
                if (((seq - d->held_seq[i]) & QC__M) >= d->keep) qc__drop_at(d, i);
        }
        i = qc__find(d, seq);
        if (i >= 0) qc__drop_at(d, i);
        d->held[d->nheld] = snap;
        d->held_seq[d->nheld] = (uint16_t)seq;
        d->nheld++;
        d->held_cost += qc_snapshot_cost(d->schema, snap->n);
        d->latest = seq;
        if (d->nambiguous) {
            int k;
            for (k = 0; k < 65536; k++)
                if (qc__amb(d, k) && ((seq - k) & QC__M) >= d->keep) qc__amb_clear(d, k);
        }
        return;
    }
    i = qc__find(d, seq);
    if (i >= 0) {
        const qc_snapshot *prev = d->held[i];
        int same = prev->n == snap->n && (prev->n == 0 ||
            (memcmp(prev->ids, snap->ids, prev->n * 8) == 0 &&
             memcmp(prev->rows, snap->rows, prev->n * (size_t)d->schema->nslots * 8) == 0));
        if (!same) {
            qc__drop_at(d, i);
            qc__amb_set(d, seq);
        }
        d->loose = snap;
        return;
    }
    if (!(d->nambiguous && qc__amb(d, seq)) && ((d->latest - seq) & QC__M) < d->keep) {
        d->held[d->nheld] = snap;
        d->held_seq[d->nheld] = (uint16_t)seq;
        d->nheld++;
        d->held_cost += qc_snapshot_cost(d->schema, snap->n);
        return;
    }
    d->loose = snap;
}

