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

/* size_t sums and products that stop at SIZE_MAX instead of wrapping (the sizes' upper bounds) */
static size_t qc__sat_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
static size_t qc__sat_mul(size_t a, size_t b) { return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b; }

size_t qc_snapshot_bytes(const qc_schema *s, size_t n) {
    /* SIZE_MAX past a size_t (which no allocator gives): an upper bound never wraps */
    return qc__sat_add(QC__SNAP_HEAD, qc__sat_mul(n, 8 * (1 + (size_t)s->nslots)));
}

uint64_t qc_snapshot_cost(const qc_schema *s, uint64_t n) {
    uint64_t per = 8 + 8 * (uint64_t)s->nslots;
    /* UINT64_MAX past a uint64_t (more than any max_bytes) */
    return n > (UINT64_MAX - 256) / per ? UINT64_MAX : 256 + n * per;
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
    uint64_t smtb;          /* the same in the low b bits (qc_comp.smt) */
    uint64_t vmask;         /* ordered: ~0 for sign-extended carriers, else umax */
    uint64_t vlo, vspan;    /* ordered: the valid codes are vlo .. vlo + vspan (mod 2**64) */
    uint64_t vbad;          /* ordered: one more invalid code inside (PowerCurve's negative
                               zero), else 2**62 (no code of at most 32 bits) */
    int shift, sh, slot;    /* its place in its slot's carrier; 64 - b; its slot */
    int sb;                 /* b - 1 (its code's top bit) */
    int fill;               /* the fast path refills its bits before this component's code
                               (the field's codes before it, at their longest, may leave
                               fewer than this one's longest: qc__fast_tables) */
    const uint16_t *egt;    /* the fast path's look-up table for its (k, b) (qc__egt_for) */
} qc__dcomp;

/* ---- the fast path's Exp-Golomb look-up tables ------------------------------------------------
   Most codes are short (of the bench stream's fast path, 89% at most 8 bits, 94% at most 10):
   for one (k, b), a table on the next QC__EGT_BITS bits of the stream gives the code's length
   (1 to QC__EGT_BITS) and its value already zig-zag decoded (plus 2048, in the top 12 bits:
   the value is below 2**11), or 0 (length 0) where the
   code is longer, an escape, or above umax: then the read through qc__bits_eg, which decides.
   An entry depends only on the code's own bits, so whatever lies above them (the stream's next
   bits, or zeros past those counted) leaves it right. A decoder keeps up to QC_EG_TABLES of
   them (QC_EG_TABLE_BYTES each, allocated as the decoder's memory, counted against its
   alloc_limit and in qc_decoder_worst_case_bytes), built the first time a packet uses its
   (k, b) and kept across packets; past QC_EG_TABLES, one no packet component uses now is
   rebuilt for the new (k, b). A table that cannot be had (k + 1 > QC__EGT_BITS, b > 32, all
   taken by the packet, or memory refused) is qc__egt_none: every code read the long way. */
#define QC__EGT_BITS QC_EG_TABLE_BITS
static const uint16_t qc__egt_none[1 << QC__EGT_BITS] = {0};

static void qc__egt_build(uint16_t *t, const qc__cpar *P) {
    uint64_t e, x, h, len, m;
    memset(t, 0, QC_EG_TABLE_BYTES);
    /* each code of at most QC__EGT_BITS bits (its first 1 at e < E: bit e, then e + k bits x),
       at every index that starts with it */
    for (e = 0; e < (uint64_t)P->E && (len = 2 * e + 1 + (uint64_t)P->k) <= QC__EGT_BITS; e++)
        for (x = 0; x < ((uint64_t)1 << (e + (uint64_t)P->k)); x++) {
            h = (((uint64_t)1) << e) | (x << (e + 1));
            m = qc__eg_value(h, e, P);
            if (m > P->umax) continue;
            for (; h < ((uint64_t)1 << QC__EGT_BITS); h += (uint64_t)1 << len)
                t[h] = (uint16_t)(((qc__unzz(m) + 2048) << 4) | len);
        }
}

static void qc__egt_free(qc_decoder *d) {
    int i;
    for (i = 0; i < d->negt; i++) qc__dfree(d, d->egt[i], QC_EG_TABLE_BYTES);
    d->negt = 0;
    d->egt_next = 0;
    d->egt_used = 0;
}

/* the table of P's (k, b) for the current packet (d->egt_used: the tables it uses so far). Its
   entries depend on k, on E only up to (W + 1) / 2 (a code of at most W = QC__EGT_BITS bits
   has its first 1 at e <= (W - 1) / 2) and on b only up to W (its value is below 2**W): those
   the key, so that widths share tables. */
static const uint16_t *qc__egt_for(qc_decoder *d, const qc__cpar *P) {
    const int ecap = (QC__EGT_BITS + 1) / 2, bcap = QC__EGT_BITS;
    uint16_t key = (uint16_t)(P->k | (P->E < ecap ? P->E : ecap) << 5 | (P->b < bcap ? P->b : bcap) << 8);
    int i, j;
    if (P->k + 1 > QC__EGT_BITS || P->b > 32) return qc__egt_none;
    for (i = 0; i < d->negt; i++)
        if (d->egt_key[i] == key) {
            d->egt_used |= (uint32_t)1 << i;
            return d->egt[i];
        }
    if (d->negt < QC_EG_TABLES) {
        uint16_t *t = (uint16_t *)qc__dalloc(d, QC_EG_TABLE_BYTES);
        if (t == NULL) return qc__egt_none;
        i = d->negt++;
        d->egt[i] = t;
    } else {
        for (j = 0; j < QC_EG_TABLES; j++) {
            i = (d->egt_next + j) % QC_EG_TABLES;
            if (!((d->egt_used >> i) & 1)) break;
        }
        if (j == QC_EG_TABLES) return qc__egt_none;
        d->egt_next = (i + 1) % QC_EG_TABLES;
    }
    d->egt_key[i] = key;
    d->egt_used |= (uint32_t)1 << i;
    qc__egt_build(d->egt[i], P);
    return d->egt[i];
}

enum { QC__OP_GEN = 0, QC__OP_PLAIN = 1, QC__OP_SMAG = 2, QC__OP_PLAIN3 = 3, QC__OP_SMAG3 = 4 };

typedef struct qc__dfield { /* one field's shape in the fast path */
    int shape;              /* QC__FS_*; QC__FS_NONE: the slot-by-slot loop */
    int op;                 /* ORD, NZ: its components' loop (QC__OP_*, from plain and smag; the
                               ...3 ones: three components, unrolled) */
    const qc__dcomp *d0, *d1;   /* its components (in the packet's qc__dcomp table) */
    int slot;               /* NZ: the flag; QUAT: the smallest-three slot */
    int span;               /* NZ: the slots the flag governs */
    int cb, bits;           /* QUAT: bits per kept component, the slot's width */
    int plain;              /* ORD, NZ: every component unsigned, not sign-magnitude, every
                               code of its width valid (Bounded endpoints, UInt, ...) */
    int smag;               /* ORD, NZ, not plain: every component unsigned (maybe
                               sign-magnitude), every code of its width valid but vbad (a
                               PowerCurve's negative zero) */
    uint64_t qtop;          /* QUAT: the mode's top component code */
    uint64_t maxcode;       /* QUAT: the slot's largest code */
    const uint32_t *qsq;    /* QUAT: qc_slot.qsq */
} qc__dfield;

/* The reference at the top of the word (qc__ref's, for an extrapolated component; numc 0:
   the baseline's value); den1: the ratio is whole, a constant in each copy of qc__fast_run */
QC__HOT uint64_t qc__fast_ref(uint64_t xb, uint64_t xp, const qc__dcomp *d, int64_t num, int64_t den, int den1) {
    if (den1) return xb + (xb - xp) * d->numc;
    if (!d->numc) return xb;
    return xb + ((uint64_t)qc__round_div((int64_t)qc__asr(xb - xp, d->sh) * num, den) << d->sh);
}

/* a component's code, zig-zag decoded, into z (its bits refilled first when d->fill): through
   its look-up table, else the long way; or give up the entity */
#define QC__FAST_EG(d, z) QC__FAST_EGF(d, z, 1)
/* (fl 0: the caller knows that d->fill is 0) */
#define QC__FAST_EGF(d, z, fl) do {                                             \
        unsigned en_, l_;                                                       \
        if ((fl) && (d)->fill) qc__bits_fill(r);                                \
        en_ = (d)->egt[r->w & ((1u << QC__EGT_BITS) - 1)];                      \
        l_ = en_ & 15;                                                          \
        if (QC__LIKELY(l_ != 0)) {                                              \
            r->w >>= l_;                                                        \
            r->n -= l_;                                                         \
            (z) = (uint64_t)(en_ >> 4) - 2048;                                  \
        } else {                                                                \
            uint64_t u_;                                                        \
            if (QC__UNLIKELY(qc__bits_eg(r, &(d)->P, &u_, 0))) return 0;       \
            (z) = qc__unzz(u_);                                                 \
        }                                                                       \
    } while (0)

/* sign-magnitude to the linear order and back (the same map) at the top of the word (smt 0:
   no change); qc__fast_smtb: the same for a code in the low b bits */
QC__HOT uint64_t qc__fast_smt(uint64_t x, uint64_t smt) { return x ^ (qc__sign_mask(x) & smt); }
QC__HOT uint64_t qc__fast_smtb(uint64_t x, const qc__dcomp *d) { return x ^ ((0 - (x >> d->sb)) & d->smtb); }

/* One changed entity's fields (fr: its changed-field flags) from r's bits: 1 read (r after
   them), or 0 when it is not the fast path's case (r then anywhere). pr: the extrapolation
   row, or the baseline row when there is none (a reference extrapolated from the baseline to
   itself is the baseline's). Each field refills r first, then its components where
   qc__fast_tables says (d->fill). */
QC__HOT int qc__fast_entity(qc__bits *r, const uint8_t *fr, const qc__dfield *fd, const qc__dfield *fend,
                            const uint64_t *br, const uint64_t *pr, uint64_t *orw,
                            int64_t num, int64_t den, int den1) {
    int any = 0;
    for (; fd < fend; fd++, fr++) {
        uint64_t dacc = 0, u, z, xb, xp, v;
        const qc__dcomp *d, *dend;
        if (!*fr) continue;
        any = 1;
        d = fd->d0;
        dend = fd->d1;
        qc__bits_fill(r);
        if (fd->shape == QC__FS_QUAT) {
            int s = fd->slot, qs = 3 * fd->cb, st;
            uint64_t bw = br[s], pw = pr[s], code, m;
            pw = (pw >> qs) == (bw >> qs) ? pw : bw;    /* no extrapolation across a change of
                                                           the largest component */
            code = (bw >> qs) << qs;
            {   /* (the first kept component's code through its table, else the long way, where
                   an escape may say "a new largest component") */
                unsigned en = d->egt[r->w & ((1u << QC__EGT_BITS) - 1)];
                if (QC__LIKELY(en & 15)) {
                    r->w >>= en & 15;
                    r->n -= en & 15;
                    z = (uint64_t)(en >> 4) - 2048;
                    st = 0;
                } else {
                    z = 0;
                    st = qc__bits_eg(r, &d->P, &u, 1);
                    if (!st) z = qc__unzz(u);
                }
            }
            if (QC__UNLIKELY(st)) {
                if (st < 0) return 0;
                /* a new largest component: the absolute code (at most 38 bits), or the new
                   index and the differences from the baseline's values remapped to it */
                qc__bits_fill(r);
                if (qc__bits_take(r, 1) == 0) {
                    code = qc__bits_take(r, fd->bits);
                } else {
                    int j = (int)qc__bits_take(r, 2), t;
                    if ((uint64_t)j == (bw >> qs)) return 0;
                    code = (uint64_t)j << qs;
                    for (t = 0; t < 3; t++, d++) {
                        qc__bits_fill(r);
                        if (qc__bits_eg(r, &d->P, &u, 0)) return 0;
                        code |= ((qc__remap_ref(bw, j, t, fd->cb, fd->qtop) + qc__unzz(u)) & d->P.umax) << d->shift;
                    }
                }
            } else {
                /* the three kept components (unrolled), the first's code read above */
#define QC__FAST_QC(dd) do {                                                                             \
                    const qc__dcomp *d_ = (dd);                                                           \
                    if (den1) {                                                                           \
                        /* (the low b bits of sums and products depend on the operands' low b bits     \
                           only: the top-of-word arithmetic, unshifted, then masked) */                   \
                        xb = bw >> d_->shift;                                                             \
                        xb += (xb - (pw >> d_->shift)) * d_->numc + z;                                    \
                        code |= (xb & d_->P.umax) << d_->shift;                                           \
                    } else {                                                                              \
                        xb = qc__fast_ref((bw >> d_->shift) << d_->sh, (pw >> d_->shift) << d_->sh, d_,   \
                                          num, den, den1) + (z << d_->sh);                                \
                        code |= (xb >> d_->sh) << d_->shift;                                              \
                    }                                                                                     \
                } while (0)
                QC__FAST_QC(d);
                QC__FAST_EG(d + 1, z);
                QC__FAST_QC(d + 1);
                QC__FAST_EG(d + 2, z);
                QC__FAST_QC(d + 2);
#undef QC__FAST_QC
            }
            m = (((uint64_t)1) << fd->cb) - 1;
            if (!((code <= fd->maxcode) &
                  qc__quat_surely_valid(fd->qsq, (code >> (2 * fd->cb)) & m, (code >> fd->cb) & m, code & m)))
                return 0;
            if (code == bw) return 0;
            orw[s] = code;
            continue;
        }
        if (fd->shape == QC__FS_NZ) {
            int s = fd->slot, t;
            v = 1;
            if (br[s] != 0) v = qc__bits_take(r, 1);
            orw[s] = v;
            dacc = v ^ br[s];
            if (v == 0) {
                for (t = s + 1; t <= s + fd->span; t++) {
                    orw[t] = 0;
                    dacc |= br[t];
                }
                if (dacc == 0) return 0;
                continue;
            }
        } else if (fd->shape != QC__FS_ORD) {
            return 0;
        }
        /* plain: unsigned, linear, every code of the width valid: a masked sum, no test */
#define QC__FAST_PLAIN(dd, fl, sl) do {                                                                  \
            const qc__dcomp *d_ = (dd);                                                                   \
            int s = (sl);                                                                                 \
            QC__FAST_EGF(d_, z, fl);                                                                      \
            if (den1) v = (br[s] + (br[s] - pr[s]) * d_->numc + z) & d_->P.umax;                          \
            else v = (qc__fast_ref(br[s] << d_->sh, pr[s] << d_->sh, d_, num, den, den1) +                \
                      (z << d_->sh)) >> d_->sh;                                                           \
            orw[s] = v;                                                                                   \
            dacc |= v ^ br[s];                                                                            \
        } while (0)
        /* smag: unsigned, maybe sign-magnitude (a PowerCurve), every code valid but vbad */
#define QC__FAST_SMAG(dd, fl, sl) do {                                                                   \
            const qc__dcomp *d_ = (dd);                                                                   \
            int s = (sl);                                                                                 \
            QC__FAST_EGF(d_, z, fl);                                                                      \
            if (den1) {                                                                                   \
                /* (in the low b bits, as the plain loop's; the map's top bit is the code's) */           \
                xb = qc__fast_smtb(br[s], d_);                                                            \
                v = qc__fast_smtb((xb + (xb - qc__fast_smtb(pr[s], d_)) * d_->numc + z) &                 \
                                  d_->P.umax, d_);                                                        \
            } else {                                                                                      \
                xb = qc__fast_smt(br[s] << d_->sh, d_->smt);                                              \
                xp = qc__fast_smt(pr[s] << d_->sh, d_->smt);                                              \
                v = qc__fast_smt(qc__fast_ref(xb, xp, d_, num, den, den1) + (z << d_->sh),                \
                                 d_->smt) >> d_->sh;                                                      \
            }                                                                                             \
            if (QC__UNLIKELY(v == d_->vbad)) return 0;                                                    \
            orw[s] = v;                                                                                   \
            dacc |= v ^ br[s];                                                                            \
        } while (0)
        switch (fd->op) {
        case QC__OP_PLAIN3: {   /* (a Vector of 3 unrolled, in three slots in a row) */
            const int s0 = d->slot;
            QC__FAST_PLAIN(d, 0, s0);    /* (the first never refilled: at most 1 + 17 + 1 + 32 bits) */
            QC__FAST_PLAIN(d + 1, 1, s0 + 1);
            QC__FAST_PLAIN(d + 2, 1, s0 + 2);
            break;
        }
        case QC__OP_SMAG3: {
            const int s0 = d->slot;
            QC__FAST_SMAG(d, 0, s0);
            QC__FAST_SMAG(d + 1, 1, s0 + 1);
            QC__FAST_SMAG(d + 2, 1, s0 + 2);
            break;
        }
        case QC__OP_PLAIN:
            for (; d < dend; d++) QC__FAST_PLAIN(d, 1, d->slot);
            break;
        case QC__OP_SMAG:
            for (; d < dend; d++) QC__FAST_SMAG(d, 1, d->slot);
            break;
        default:
            for (; d < dend; d++) {
                int s = d->slot;
                uint64_t bad;
                QC__FAST_EG(d, z);
                xb = qc__fast_smt(br[s] << d->sh, d->smt);   /* sign-magnitude to ordered */
                xp = qc__fast_smt(pr[s] << d->sh, d->smt);
                xb = qc__fast_smt(qc__fast_ref(xb, xp, d, num, den, den1) + (z << d->sh), d->smt);
                v = (uint64_t)qc__asr(xb, d->sh) & d->vmask;
                bad = (uint64_t)((v - d->vlo) > d->vspan) | (uint64_t)(v == d->vbad);
                if (QC__UNLIKELY(bad)) return 0;
                orw[s] = v;
                dacc |= v ^ br[s];
            }
        }
#undef QC__FAST_PLAIN
#undef QC__FAST_SMAG
        if (dacc == 0) return 0;
    }
    return any;
}

typedef struct qc__fastrun {    /* what qc__fast_run reads, for one packet */
    const uint8_t *buf;         /* the packet, or the zero-padded copy of its tail */
    size_t lastfast;            /* an entity starting before this byte of buf can be read */
    size_t nbits;               /* the packet's end in buf's bits: an entity read past it is not taken */
    const uint8_t *fch;         /* the changed fields, F a changed entity */
    int F, S;
    const qc__dfield *FD;
    const int *gen;             /* the fields of no fast shape changed in the packet */
    int ngen;
    const uint64_t *brow, *prow;    /* prow NULL: no extrapolation */
    uint64_t *orow;
    const size_t *chg, *kept_base, *kept_out, *kept_pred;  /* kept_base, kept_out NULL: the identity */
    int64_t num, den;
} qc__fastrun;

QC__HOT size_t qc__fast_run_(const qc__fastrun *a, size_t e, size_t n, size_t *ppos, int den1) {
    /* (a's fields in locals: the rows' stores could otherwise alias them) */
    const uint8_t *const buf = a->buf, *const fch = a->fch;
    const size_t S = (size_t)a->S, F = (size_t)a->F, lastfast = a->lastfast, nbits = a->nbits;
    const size_t *const chg = a->chg, *const kept_base = a->kept_base, *const kept_out = a->kept_out,
                 *const kept_pred = a->kept_pred;
    const uint64_t *const brow = a->brow, *const prow = a->prow;
    uint64_t *const orow = a->orow;
    const qc__dfield *const FD = a->FD, *const fend = a->FD + a->F;
    const int *const gen = a->gen;
    const int ngen = a->ngen;
    const int64_t num = a->num, den = a->den;
    size_t pos = *ppos, t;
    qc__bits r;
    int g;
    qc__bits_at(&r, buf, pos);
    for (; e < n; e++) {
        size_t c = chg[e], kb = kept_base ? kept_base[c] : c;
        const uint64_t *br = brow + kb * S, *pr = br;
        const uint8_t *fr = fch + e * F;
        if ((pos >> 3) >= lastfast) break;
        if (prow != NULL && kept_pred[c] != (size_t)-1) pr = prow + kept_pred[c] * S;
        for (g = 0; g < ngen; g++)
            if (fr[gen[g]]) break;
        if (g < ngen) break;
        if (!qc__fast_entity(&r, fr, FD, fend, br, pr, orow + (kept_out ? kept_out[c] : c) * S, num, den, den1)) break;
        t = qc__bits_pos(&r, buf);
        if (t > nbits) break;
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
   with SSE2 where the compiler has it; copy not NULL: row a copied there on the way (the one
   pass over the baseline's rows that the new snapshot's rows need) */
QC__HOT int qc__rows_differ(const uint64_t *a, const uint64_t *b, int S, uint64_t *copy) {
    uint64_t x = 0;
    int s = 0;
#if defined(__SSE2__) || defined(_M_X64)
    __m128i acc = _mm_setzero_si128();
    for (; s + 2 <= S; s += 2) {
        __m128i va = _mm_loadu_si128((const __m128i *)(const void *)(a + s));
        if (copy != NULL) _mm_storeu_si128((__m128i *)(void *)(copy + s), va);
        acc = _mm_or_si128(acc, _mm_xor_si128(va, _mm_loadu_si128((const __m128i *)(const void *)(b + s))));
    }
    x = (uint64_t)(_mm_movemask_epi8(_mm_cmpeq_epi8(acc, _mm_setzero_si128())) != 0xFFFF);
#endif
    for (; s < S; s++) {
        if (copy != NULL) copy[s] = a[s];
        x |= a[s] ^ b[s];
    }
    return x != 0;
}

/* The common case's contexts (section 7.3): row e of a (the baseline) against row e of b (pred)
   for e < kept, kept_pred the identity, each e into cls1 (the rows differ) or cls0; copy not
   NULL: a's rows copied there on the way. Returns how many went to cls1. */
QC__HOT size_t qc__ctx_rows_(const uint64_t *a, const uint64_t *b, uint64_t *copy, size_t kept, size_t S,
                             size_t *kept_pred, size_t *cls1, size_t *cls0) {
    size_t e, n1 = 0, n0 = 0;
    for (e = 0; e < kept; e++) {
        int ctx = qc__rows_differ(a + e * S, b + e * S, (int)S, copy != NULL ? copy + e * S : NULL);
        kept_pred[e] = e;
        cls1[n1] = e;
        cls0[n0] = e;
        n1 += (size_t)ctx;
        n0 += (size_t)!ctx;
    }
    return n1;
}

#ifdef QC__FAST_BMI2
/* the same with AVX2, four codes a compare (chosen at run time, as the fast path's BMI2 copy);
   cp: copy is not NULL, a constant in each of its two loops */
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) size_t
qc__ctx_rows_avx2_(const uint64_t *a, const uint64_t *b, uint64_t *copy, size_t kept, size_t S, size_t *kept_pred,
                   size_t *cls1, size_t *cls0, int cp) {
    size_t e, n1 = 0, n0 = 0, s;
    if (S == 8) {
        /* rows of eight codes (a cache line each): two compares a row, no inner loop */
        for (e = 0; e < kept; e++, a += 8, b += 8) {
            __m256i va = _mm256_loadu_si256((const __m256i *)(const void *)a);
            __m256i vb = _mm256_loadu_si256((const __m256i *)(const void *)(a + 4));
            __m256i x8;
            int ctx;
            if (cp) {
                /* (copy moves only here: it is NULL without cp, and NULL + 0 is undefined in C) */
                _mm256_storeu_si256((__m256i *)(void *)copy, va);
                _mm256_storeu_si256((__m256i *)(void *)(copy + 4), vb);
                copy += 8;
            }
            x8 = _mm256_or_si256(_mm256_xor_si256(va, _mm256_loadu_si256((const __m256i *)(const void *)b)),
                                 _mm256_xor_si256(vb, _mm256_loadu_si256((const __m256i *)(const void *)(b + 4))));
            ctx = !_mm256_testz_si256(x8, x8);
            kept_pred[e] = e;
            cls1[n1] = e;
            cls0[n0] = e;
            n1 += (size_t)ctx;
            n0 += (size_t)!ctx;
        }
        return n1;
    }
    for (e = 0; e < kept; e++, a += S, b += S) {
        __m256i acc = _mm256_setzero_si256();
        uint64_t x = 0;
        int ctx;
        for (s = 0; s + 4 <= S; s += 4) {
            __m256i va = _mm256_loadu_si256((const __m256i *)(const void *)(a + s));
            if (cp) _mm256_storeu_si256((__m256i *)(void *)(copy + s), va);
            acc = _mm256_or_si256(acc, _mm256_xor_si256(va, _mm256_loadu_si256((const __m256i *)(const void *)(b + s))));
        }
        for (; s < S; s++) {
            if (cp) copy[s] = a[s];
            x |= a[s] ^ b[s];
        }
        ctx = !_mm256_testz_si256(acc, acc) || x != 0;
        kept_pred[e] = e;
        cls1[n1] = e;
        cls0[n0] = e;
        n1 += (size_t)ctx;
        n0 += (size_t)!ctx;
        if (cp) copy += S;      /* (as above: copy is NULL without cp) */
    }
    return n1;
}
__attribute__((target("avx2"))) static size_t qc__ctx_rows_avx2(const uint64_t *a, const uint64_t *b, uint64_t *copy,
                                                               size_t kept, size_t S, size_t *kept_pred,
                                                               size_t *cls1, size_t *cls0) {
    if (copy != NULL) return qc__ctx_rows_avx2_(a, b, copy, kept, S, kept_pred, cls1, cls0, 1);
    return qc__ctx_rows_avx2_(a, b, copy, kept, S, kept_pred, cls1, cls0, 0);
}
#endif

static size_t qc__ctx_rows(const uint64_t *a, const uint64_t *b, uint64_t *copy, size_t kept, size_t S,
                           size_t *kept_pred, size_t *cls1, size_t *cls0) {
#ifdef QC__FAST_BMI2
    if (__builtin_cpu_supports("avx2")) return qc__ctx_rows_avx2(a, b, copy, kept, S, kept_pred, cls1, cls0);
#endif
    return qc__ctx_rows_(a, b, copy, kept, S, kept_pred, cls1, cls0);
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
        dd->smtb = cp->smt;
        dd->sb = cp->b - 1;
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
        df->d0 = dc + fd->first_comp;
        df->d1 = dc + fd->first_comp + fd->ncomps;
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
            df->smag = 1;
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
                if (sl->sign || (sl->vclass != 0 && sl->vclass != 2)) df->smag = 0;
            }
        }
        /* the refills: each field's bits refilled at its start (at least 56 counted), then
           before a component whose longest code (an escape, E + 1 + b bits) may not fit in
           what the field's codes before it leave */
        {
            int acc = df->shape == QC__FS_NZ ? 1 : 0, c2;
            for (c2 = fd->first_comp; c2 < fd->first_comp + fd->ncomps; c2++) {
                qc__dcomp *dd = &dc[c2];
                int len = dd->P.E + 1 + dd->P.b;
                dd->fill = acc + len > 56;
                acc = dd->fill ? len : acc + len;
            }
            df->op = QC__OP_GEN;
            if (df->shape == QC__FS_ORD || df->shape == QC__FS_NZ) {
                df->op = df->plain ? QC__OP_PLAIN : df->smag ? QC__OP_SMAG : QC__OP_GEN;
                if (df->op != QC__OP_GEN && fd->ncomps == 3 && dc[fd->first_comp + 1].slot == dc[fd->first_comp].slot + 1 &&
                    dc[fd->first_comp + 2].slot == dc[fd->first_comp].slot + 2)
                    df->op += QC__OP_PLAIN3 - QC__OP_PLAIN;
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

/* ---- one packet as a pipeline of its steps (wire-format sections 6-7) -------------------------
   qc__decode_packet runs the steps in the order the packet is written, each over the packet's
   context (qc__pk): the head, the removed entities, the count of new ones (and the limits), the
   memory, the new entities' ids and records, the merge by id, which entities changed, which of
   their fields, the fields' parameters, the changed entities (the fast path's runs, the
   slot-by-slot loop for the others) and the end. A step returns 0, or the status of the refusal
   with res's message made; the new snapshot, once made, is freed by qc__decode_packet. */

typedef struct qc__pk {         /* one packet being decoded: what its steps share */
    qc_decoder *d;
    const qc_schema *sc;
    qc_result *res;
    const uint8_t *buf;         /* the packet, nbytes long */
    size_t nbytes;
    qc__br r;                   /* its bits */
    int S, F, C;                /* the schema's slots, fields, components */
    int seq, bdist, pdist;      /* the head (section 6); bdist, pdist 0 when absent */
    const qc_snapshot *base, *pred;
    size_t m, nrem, nnew, kept, nout, nchg;  /* the baseline's entities, removed, new, kept, out, changed */
    size_t words, tb;           /* the scratch's size_t's (the entity lists); the fast path's tail bytes */
    /* the scratch's parts (qc__pk_layout) */
    size_t *removed, *kept_base, *kept_out, *kept_pred, *cls1, *cls0, *set1, *set0, *chg;
    uint64_t *nid, *nrow;       /* the new entities' ids and rows (in the snapshot itself when none is kept) */
    uint8_t *fch, *fmode, *tail;    /* the changed fields (F a changed entity), each field's use, the tail copy */
    qc__dcomp *dc;
    qc__dfield *dfd;
    int *gen;
    int64_t num, den;           /* the extrapolation's ratio bdist / pdist, reduced */
    int same;                   /* the baseline's entities, all kept, nothing new, and pred holds
                                   the same: row e of each is row e of the new snapshot, whose rows
                                   qc__pk_read_changed copies as it compares base and pred */
    qc_snapshot *snap;          /* the new snapshot */
} qc__pk;

static int qc__pk_bad(qc__pk *k, const char *what) { return qc__bad(k->res, what, k->r.pos); }

static int qc__pk_nomem(qc__pk *k) {
    snprintf(k->res->message, sizeof k->res->message, "snapshot packet %d: out of memory (allocator or alloc_limit %lu)",
             k->seq, (unsigned long)k->d->alloc_limit);
    return QC_E_MEMORY;
}

/* a code that is not valid for its slot: the message naming the entity and the slot */
static int qc__pk_invalid(qc__pk *k, uint64_t id, int s, uint64_t v, size_t pos) {
    char nm[160];
    snprintf(k->res->message, sizeof k->res->message, "snapshot packet: entity %llu: %s: code %llu is not valid (at bit %lu)",
             (unsigned long long)id, qc__slot_name(k->sc, s, nm, sizeof nm), (unsigned long long)v, (unsigned long)pos);
    return QC_E_MALFORMED;
}

/* the scratch's parts: removed (m+1), kept_base, kept_out, kept_pred, cls1, cls0, set1, set0,
   chg (kept+1 each) as size_t; new ids (nnew) and rows (nnew * S) as uint64; the tables
   (qc__dcomp a component, qc__dfield and an int a field); the tail's padded copy; then bytes
   (fmode, F + 1, then fch). Made again when the scratch grows. */
static void qc__pk_layout(qc__pk *k) {
    const size_t m = k->m, kept = k->kept, nnew = k->nnew;
    k->removed = (size_t *)k->d->scratch;
    k->kept_base = k->removed + (m + 1);
    k->kept_out = k->kept_base + (kept + 1);
    k->kept_pred = k->kept_out + (kept + 1);
    k->cls1 = k->kept_pred + (kept + 1);
    k->cls0 = k->cls1 + (kept + 1);
    k->set1 = k->cls0 + (kept + 1);
    k->set0 = k->set1 + (kept + 1);
    k->chg = k->set0 + (kept + 1);
    k->nid = (uint64_t *)(k->removed + k->words);
    k->nrow = k->nid + nnew;
    k->dc = (qc__dcomp *)(k->nrow + nnew * (size_t)k->S);
    k->dfd = (qc__dfield *)(k->dc + k->C + 1);
    k->gen = (int *)(k->dfd + k->F + 1);
    k->tail = (uint8_t *)(k->gen + k->F + 1);
    k->fmode = k->tail + (2 * k->tb + 7) / 8 * 8;
}

/* section 6: seq, the distances, then the baseline and pred looked up */
static int qc__pk_read_head(qc__pk *k) {
    uint64_t v;
    if (qc__get(&k->r, 16, &v) < 0) return qc__pk_bad(k, "truncated header");
    k->seq = (int)v;
    if (qc__get(&k->r, 1, &v) < 0) return qc__pk_bad(k, "truncated header");
    if (v) {
        if (qc__eg(&k->r, 2, 16, &v) < 0) return qc__pk_bad(k, "bad baseline distance");
        if (v >= 0x7FFF) return qc__pk_bad(k, "sequence distance outside 1..32767");
        k->bdist = (int)v + 1;
        if (qc__get(&k->r, 1, &v) < 0) return qc__pk_bad(k, "truncated header");
        if (v) {
            if (qc__eg(&k->r, 2, 16, &v) < 0) return qc__pk_bad(k, "bad pred distance");
            if (v + 1 + (uint64_t)k->bdist > 0x7FFF) return qc__pk_bad(k, "sequence distance outside 1..32767");
            k->pdist = (int)v + 1;
        }
    }
    if (k->bdist) {
        int bseq = (k->seq - k->bdist) & QC__M;
        k->base = qc__held_ref(k->d, bseq, k->seq, 1, k->res);
        if (k->base == NULL) return QC_E_BASELINE;
        k->m = k->base->n;
        if (k->pdist) {
            k->pred = qc__held_ref(k->d, (bseq - k->pdist) & QC__M, k->seq, 0, k->res);
            if (k->pred == NULL) return QC_E_BASELINE;
        }
    }
    return 0;
}

/* section 7.1: the set of removed entities, into the scratch */
static int qc__pk_read_removed(qc__pk *k) {
    k->words = k->m + 1;
    if (qc__scratch(k->d, k->words * sizeof(size_t)) == NULL) return qc__pk_nomem(k);
    k->removed = (size_t *)k->d->scratch;
    if (k->bdist && k->m && qc__set(&k->r, k->removed, &k->nrem, k->m) < 0)
        return qc__pk_bad(k, "bad set of removed entities");
    k->kept = k->m - k->nrem;
    return 0;
}

/* wire-format 19's H for packet `seq`: the cost of the held snapshots it leaves in section 10's
   window, all of them, but when seq is newer than latest (it moves the window) not those it
   pushes out ((seq - s) mod 65536 >= 2 * history - 1). (Counting those too, a client whose
   max_bytes holds exactly its window refused every packet once the window was full, for good:
   only a packet that decodes moves the window.) */
static uint64_t qc__kept_cost(const qc_decoder *d, int seq) {
    uint64_t total = 0;
    int i;
    if (!(d->latest < 0 || qc__newer(seq, d->latest))) return d->held_cost;
    for (i = 0; i < d->nheld; i++)
        if (((seq - d->held_seq[i]) & QC__M) < d->keep) total += qc_snapshot_cost(d->schema, d->held[i]->n);
    return total;
}

/* section 7.2: the count of new entities, and the limits it is checked against (section 19) */
static int qc__pk_read_count(qc__pk *k) {
    const qc_decoder *d = k->d;
    uint64_t v, per = 8 + 8 * (uint64_t)k->S, fixed = 256 + 256 * (uint64_t)d->max_datagram, H;
    if (qc__eg(&k->r, 0, 32, &v) < 0) return qc__pk_bad(k, "bad count of new entities");
    if (v > (uint64_t)qc__br_left(&k->r) || v > 0xFFFFFFFFull - (uint64_t)k->kept)
        return qc__pk_bad(k, "count of new entities larger than the packet can hold");
    k->nnew = (size_t)v;
    k->nout = k->kept + k->nnew;
    /* wire-format 19, check 2: what stays held, the new snapshot and reassembly's bound */
    H = qc__kept_cost(d, k->seq);
    if (H > d->max_bytes || fixed > d->max_bytes - H || (uint64_t)k->nout > (d->max_bytes - H - fixed) / per) {
        snprintf(k->res->message, sizeof k->res->message, "snapshot packet %d: a snapshot of %lu entities would make the client "
                 "hold %llu bytes (held %llu, this one %llu, reassembly %llu), above max_bytes %llu", k->seq, (unsigned long)k->nout,
                 (unsigned long long)(H + fixed + (uint64_t)k->nout * per), (unsigned long long)H,
                 (unsigned long long)(256 + (uint64_t)k->nout * per), (unsigned long long)(256 * (uint64_t)d->max_datagram),
                 (unsigned long long)d->max_bytes);
        return QC_E_LIMITS;
    }
    if (k->nout > d->max_entities) {
        snprintf(k->res->message, sizeof k->res->message, "snapshot packet %d: %lu entities, above the configured max_entities %lu",
                 k->seq, (unsigned long)k->nout, (unsigned long)d->max_entities);
        return QC_E_MEMORY;
    }
    return 0;
}

/* the scratch at its size for this packet (keeping the removed positions), laid out, and the
   new snapshot; with no kept entity the new ones are read straight into it */
static int qc__pk_memory(qc__pk *k) {
    qc_decoder *d = k->d;
    size_t need, nrem = k->nrem, *old = NULL;
    k->words = (k->m + 1) + 8 * (k->kept + 1);
    need = k->words * sizeof(size_t) + k->nnew * (1 + (size_t)k->S) * 8 + qc__tables_bytes(k->sc) + ((size_t)k->F + 1);
    if (need > d->scratch_size && nrem) {
        old = (size_t *)qc__dalloc(d, nrem * sizeof(size_t));
        if (old == NULL) return qc__pk_nomem(k);
        memcpy(old, d->scratch, nrem * sizeof(size_t));
    }
    if (qc__scratch(d, need) == NULL) {
        if (old) qc__dfree(d, old, nrem * sizeof(size_t));
        return qc__pk_nomem(k);
    }
    if (old != NULL) {
        memcpy(d->scratch, old, nrem * sizeof(size_t));
        qc__dfree(d, old, nrem * sizeof(size_t));
    }
    qc__pk_layout(k);
    k->snap = qc__snap_new(d, k->nout);
    if (k->snap == NULL) return qc__pk_nomem(k);
    k->snap->seq = (uint16_t)k->seq;
    if (k->kept == 0) {
        k->nid = k->snap->ids;
        k->nrow = k->snap->rows;
    }
    return 0;
}

/* section 7.2: the new entities' ids (the id parameter, the first id, then the gaps) */
static int qc__pk_read_new_ids(qc__pk *k) {
    uint64_t prev = 0, v, *nid = k->nid;
    qc__cpar idp;
    size_t e;
    if (qc__get(&k->r, 6, &v) < 0) return qc__pk_bad(k, "truncated id parameter");
    qc__cpar_set(&idp, (int)v, 64);
    for (e = 0; e < k->nnew; e++) {
        if (qc__eg_p(&k->r, &idp, &v, NULL) < 0) return qc__pk_bad(k, "bad id of a new entity");
        if (e) {
            if (v >= 0xFFFFFFFFFFFFFFFFull - prev) return qc__pk_bad(k, "new entity id beyond 2**64 - 1");
            v = prev + 1 + v;
        }
        nid[e] = v;
        prev = v;
    }
    return 0;
}

/* One record as qc__record_read reads it (the same results), bounds-free: from bit *pos of buf,
   whose bytes from there to the record's most bits and 16 more the caller has made sure can be
   loaded; the bits through a register (qc__bits), refilled a slot (a slot over 56 bits: its
   low 32 bits, then the rest). 0 read (*pos after it), 1 an invalid code (*slot, *code). */
static int qc__record_fast(const uint8_t *buf, size_t *pos, const qc_schema *s, uint64_t *row, int *slot, uint64_t *code) {
    const qc_slot *const slots = s->slots;
    const int ns = s->nslots;
    qc__bits r;
    uint64_t v;
    int i;
    qc__bits_at(&r, buf, *pos);
    for (i = 0; i < ns; i++) {
        const qc_slot *sl = &slots[i];
        const int bits = sl->bits;
        qc__bits_fill(&r);
        if (bits <= 56) {
            v = qc__bits_take(&r, bits);
        } else {
            v = qc__bits_take(&r, 32);
            qc__bits_fill(&r);
            v |= qc__bits_take(&r, bits - 32) << 32;
        }
        if (sl->role == QC_ROLE_FLAG) {
            row[i] = v;
            if (v == 0) {
                int t;
                for (t = i + 1; t <= i + sl->span; t++) row[t] = 0;
                i += sl->span;
            }
            continue;
        }
        if (sl->sign) v = qc__sext(v, bits);
        row[i] = v;
        if (sl->vclass != 0 && !qc__slot_ok(sl, v)) {
            *slot = i;
            *code = v;
            *pos = qc__bits_pos(&r, buf);
            return 1;
        }
    }
    *pos = qc__bits_pos(&r, buf);
    return 0;
}

/* section 7.2: the new entities' records (section 3), every code valid (far from the packet's
   end through qc__record_fast, else the checked reader) */
static int qc__pk_read_records(qc__pk *k) {
    size_t e, fast = ((size_t)k->sc->max_bits + 7) / 8 + 16;
    size_t lastfast = k->nbytes > fast ? k->nbytes - fast : 0;
    int s = 0, st;
    uint64_t v = 0;
    for (e = 0; e < k->nnew; e++) {
        if ((k->r.pos >> 3) < lastfast) st = qc__record_fast(k->buf, &k->r.pos, k->sc, k->nrow + e * (size_t)k->S, &s, &v);
        else st = qc__record_read(&k->r, k->sc, k->nrow + e * (size_t)k->S, &s, &v);
        if (st < 0) return qc__pk_bad(k, "truncated record of a new entity");
        if (st > 0) return qc__pk_invalid(k, k->nid[e], s, v, k->r.pos - (size_t)k->sc->slots[s].bits);
    }
    return 0;
}

/* the new snapshot's ids and rows: the kept baseline rows (runs of them copied at once) and the
   new rows merged by id; kept_base, kept_out: each kept entity's row in the baseline and in it */
static int qc__pk_merge(qc__pk *k) {
    const qc_snapshot *base = k->base;
    qc_snapshot *snap = k->snap;
    const size_t m = k->m, nrem = k->nrem, nnew = k->nnew, kept = k->kept, S = (size_t)k->S;
    const size_t *removed = k->removed;
    const uint64_t *nid = k->nid, *nrow = k->nrow;
    size_t *kept_base = k->kept_base, *kept_out = k->kept_out;
    size_t bi = 0, xi = 0, ni = 0, o = 0, e = 0, run_b = 0, run_o = 0, run_n = 0;
    if (kept == m && nnew == 0) {
        /* the baseline's entities, row for row (the rows later when the same in pred) */
        k->same = k->pdist && k->pred->n == m && (m == 0 || memcmp(k->pred->ids, base->ids, m * 8) == 0);
        if (m) {
            memcpy(snap->ids, base->ids, m * 8);
            if (S && !k->same) memcpy(snap->rows, base->rows, m * S * 8);
        }
        for (e = 0; e < m; e++) { kept_base[e] = e; kept_out[e] = e; }
        return 0;
    }
    if (!kept) return 0;
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
        if (bi < m && base->ids[bi] == nid[ni]) return qc__pk_bad(k, "a new entity has the id of a kept one");
        snap->ids[o] = nid[ni];
        if (S) memcpy(snap->rows + o * S, nrow + ni * S, S * 8);
        ni++; o++;
flush:
        if (run_n) {
            memcpy(snap->ids + run_o, base->ids + run_b, run_n * 8);
            if (S) memcpy(snap->rows + run_o * S, base->rows + run_b * S, run_n * S * 8);
            run_n = 0;
        }
    }
    if (run_n) {
        memcpy(snap->ids + run_o, base->ids + run_b, run_n * 8);
        if (S) memcpy(snap->rows + run_o * S, base->rows + run_b * S, run_n * S * 8);
    }
    return 0;
}

/* section 7.3, which: the changed entities (chg, nchg), by context with pred (kept_pred: each
   kept entity's row in pred, or -1) */
static int qc__pk_read_changed(qc__pk *k) {
    const qc_snapshot *base = k->base, *pred = k->pred;
    const size_t m = k->m, kept = k->kept, S = (size_t)k->S;
    const size_t *kept_base = k->kept_base;
    size_t *kept_pred = k->kept_pred, *cls1 = k->cls1, *cls0 = k->cls0, *set1 = k->set1, *set0 = k->set0, *chg = k->chg;
    size_t n1 = 0, n0 = 0, m1 = 0, m0 = 0, a1 = 0, a0 = 0, pj = 0, e, nchg = 0;
    if (!k->pdist) {
        if (kept && qc__set(&k->r, chg, &k->nchg, kept) < 0) return qc__pk_bad(k, "bad set of changed entities");
        return 0;
    }
    if (k->same || (k->nrem == 0 && pred->n == m && (m == 0 || memcmp(pred->ids, base->ids, m * 8) == 0))) {
        /* the common case: the baseline's entities kept, the same in the extrapolation
           snapshot, row for row (and, k->same, in the new snapshot: copied here) */
        n1 = qc__ctx_rows(base->rows, pred->rows, k->same ? k->snap->rows : NULL, kept, S, kept_pred, cls1, cls0);
        n0 = kept - n1;
    } else for (e = 0; e < kept; e++) {
        size_t kb = kept_base[e];
        int ctx = 1;
        kept_pred[e] = (size_t)-1;
        while (pj < pred->n && pred->ids[pj] < base->ids[kb]) pj++;
        if (pj < pred->n && pred->ids[pj] == base->ids[kb]) {
            kept_pred[e] = pj;
            ctx = qc__rows_differ(base->rows + kb * S, pred->rows + pj * S, (int)S, NULL);
        }
        if (ctx) cls1[n1++] = e; else cls0[n0++] = e;
    }
    if (n1 && qc__set(&k->r, set1, &m1, n1) < 0) return qc__pk_bad(k, "bad set of changed entities");
    if (n0 && qc__set(&k->r, set0, &m0, n0) < 0) return qc__pk_bad(k, "bad set of changed entities");
    while (a1 < m1 || a0 < m0) {
        if (a0 >= m0 || (a1 < m1 && cls1[set1[a1]] < cls0[set0[a0]])) chg[nchg++] = cls1[set1[a1++]];
        else chg[nchg++] = cls0[set0[a0++]];
    }
    k->nchg = nchg;
    return 0;
}

/* section 7.3, which fields: a byte per changed entity and field (fch, the scratch grown to
   hold it), and whether any entity changed each field (fmode) */
static int qc__pk_read_fields(qc__pk *k) {
    qc_decoder *d = k->d;
    const size_t nchg = k->nchg, F = (size_t)k->F, fneed = nchg * F;
    size_t used = (size_t)((k->fmode + F + 1) - (uint8_t *)d->scratch), i, x, mm;
    uint8_t *fch;
    if (used + fneed > d->scratch_size) {
        /* grow, keeping what is in use */
        size_t nsz = used + fneed;
        void *ns = qc__dalloc(d, nsz);
        if (ns == NULL) return qc__pk_nomem(k);
        memcpy(ns, d->scratch, used);
        qc__dfree(d, d->scratch, d->scratch_size);
        d->scratch = ns;
        d->scratch_size = nsz;
        qc__pk_layout(k);
    }
    fch = k->fch = k->fmode + F + 1;
    memset(fch, 0, fneed);
    for (i = 0; i < F; i++) {
        if (qc__set(&k->r, k->set1, &mm, nchg) < 0) return qc__pk_bad(k, "bad set of changed fields");
        k->fmode[i] = mm > 0;
        for (x = 0; x < mm; x++) fch[k->set1[x] * F + i] = 1;
    }
    return 0;
}

/* section 7.3, parameters: each component's use_pred and Exp-Golomb parameter (dc's P), and
   the extrapolation's ratio */
static int qc__pk_read_params(qc__pk *k) {
    const qc_schema *sc = k->sc;
    int i, c;
    uint64_t v;
    for (i = 0; i < k->F; i++) {
        const qc_field *fd = &sc->fields[i];
        for (c = fd->first_comp; c < fd->first_comp + fd->ncomps; c++) {
            int b = sc->comps[c].b;
            qc__cpar *P = &k->dc[c].P;
            P->usep = 0;
            qc__cpar_set(P, 0, b);
            if (!k->fmode[i]) continue;
            if (k->pdist && b <= 32) {
                if (qc__get(&k->r, 1, &v) < 0) return qc__pk_bad(k, "truncated parameters");
                P->usep = (int)v;
            }
            if (qc__get(&k->r, qc__bitlen((uint64_t)b), &v) < 0) return qc__pk_bad(k, "truncated parameters");
            if ((int)v > b) return qc__pk_bad(k, "Exp-Golomb parameter above the code width");
            qc__cpar_set(P, (int)v, b);
        }
    }
    if (k->pdist) {
        int64_t a = k->bdist, b2 = k->pdist, t;
        while (b2) { t = a % b2; a = b2; b2 = t; }
        k->num = k->bdist / a;
        k->den = k->pdist / a;
    }
    return 0;
}

/* section 7.3, a quat or uvec slot of a changed entity (the slot-by-slot loop): its new code,
   or NULL and what is wrong */
static const char *qc__pk_read_rotation(qc__pk *k, const qc_slot *sl, int s, const uint64_t *br, const uint64_t *pr,
                                        uint64_t *out) {
    const qc_schema *sc = k->sc;
    int nco = sl->role == QC_ROLE_QUAT ? 3 : 2, alt = 0, qpred, q, t, cb = sl->codec->cbits;
    uint64_t code, v, how, jn;
    if (sl->role == QC_ROLE_QUAT) {
        qpred = pr != NULL && (pr[s] >> (3 * cb)) == (br[s] >> (3 * cb));
        code = (br[s] >> (3 * cb)) << (3 * cb);
    } else {
        qpred = pr != NULL;
        code = 0;
    }
    for (q = 0; q < nco; q++) {
        int c = sl->comp + q;
        const qc_comp *cp = &sc->comps[c];
        if (qc__eg_p(&k->r, &k->dc[c].P, &v, q == 0 && sl->role == QC_ROLE_QUAT ? &alt : NULL) < 0) return "bad difference";
        if (alt) break;
        code |= qc__apply(qc__ref(br[s], qpred && k->dc[c].P.usep ? &pr[s] : NULL, cp, k->num, k->den), v, cp) << cp->shift;
    }
    if (alt) {
        /* a new largest component: the absolute code, or the new index and the remapped differences */
        if (qc__get(&k->r, 1, &how) < 0) return "truncated smallest-three code";
        if (how == 0) {
            if (qc__get(&k->r, sl->bits, &code) < 0) return "truncated smallest-three code";
        } else {
            if (qc__get(&k->r, 2, &jn) < 0) return "truncated smallest-three code";
            if (jn == (br[s] >> (3 * cb))) return "a smallest-three remap to the baseline's own index";
            code = jn << (3 * cb);
            for (t = 0; t < 3; t++) {
                const qc_comp *cp = &sc->comps[sl->comp + t];
                if (qc__eg_p(&k->r, &k->dc[sl->comp + t].P, &v, NULL) < 0) return "bad difference";
                code |= ((qc__remap_ref(br[s], (int)jn, t, cb, qc__mask(cb) - (sl->codec->mode == 2 ? 1 : 0)) + qc__unzz(v)) &
                         qc__mask(cb)) << cp->shift;
            }
        }
    }
    *out = code;
    return NULL;
}

/* section 7.3, one slot other than a flag of a changed entity: its new code, or NULL and what
   is wrong */
static const char *qc__pk_read_slot(qc__pk *k, const qc_field *fd, const qc_slot *sl, int s, const uint64_t *br,
                                    const uint64_t *pr, uint64_t *out) {
    if (sl->role == QC_ROLE_ORD) {
        const qc_comp *cp = &k->sc->comps[sl->comp];
        const qc__cpar *P = &k->dc[sl->comp].P;
        uint64_t v;
        if (qc__eg_p(&k->r, P, &v, NULL) < 0) return "bad difference";
        v = qc__apply(qc__ref(br[s], pr != NULL && P->usep ? &pr[s] : NULL, cp, k->num, k->den), v, cp);
        *out = sl->sign ? qc__sext(v, sl->bits) : v;
        return NULL;
    }
    if (sl->role == QC_ROLE_QUAT || sl->role == QC_ROLE_UVEC) return qc__pk_read_rotation(k, sl, s, br, pr, out);
    /* abs */
    if (fd->implied_flip) *out = br[s] ^ 1;
    else if (qc__get(&k->r, sl->bits, out) < 0) return "truncated code";
    return NULL;
}

/* section 7.3, entities: changed entity x by the slot-by-slot loop (any case, every check) */
static int qc__pk_read_entity(qc__pk *k, size_t x) {
    const qc_schema *sc = k->sc;
    const size_t ke = k->chg[x], S = (size_t)k->S;
    const uint64_t *br = k->base->rows + k->kept_base[ke] * S, *pr = NULL;
    uint64_t *orw = k->snap->rows + k->kept_out[ke] * S, v = 0;
    const char *msg = NULL, *field = NULL;
    int any = 0, i, t;
    if (k->pdist && k->kept_pred[ke] != (size_t)-1) pr = k->pred->rows + k->kept_pred[ke] * S;
    for (i = 0; i < k->F && msg == NULL; i++) {
        const qc_field *fd = &sc->fields[i];
        int s = fd->first_slot, end = fd->first_slot + fd->nslots;
        uint64_t dacc = 0;
        if (!k->fch[x * (size_t)k->F + (size_t)i]) continue;
        any = 1;
        field = fd->name;
        while (s < end) {
            const qc_slot *sl = &sc->slots[s];
            if (sl->role == QC_ROLE_FLAG) {
                if (fd->implied_flag && br[s] == 0) v = 1;
                else if (qc__get(&k->r, 1, &v) < 0) { msg = "truncated flag"; break; }
                orw[s] = v;
                dacc |= v ^ br[s];
                if (v == 0) {
                    for (t = s + 1; t <= s + sl->span; t++) { orw[t] = 0; dacc |= br[t]; }
                    s += sl->span;
                }
                s++;
                continue;
            }
            msg = qc__pk_read_slot(k, fd, sl, s, br, pr, &v);
            if (msg != NULL) break;
            if (!qc__slot_ok(sl, v)) return qc__pk_invalid(k, k->base->ids[k->kept_base[ke]], s, v, k->r.pos);
            orw[s] = v;
            dacc |= v ^ br[s];
            s++;
        }
        if (msg == NULL && dacc == 0) msg = "marked changed but unchanged";
    }
    if (msg == NULL && !any) msg = "marked changed, but none of its fields is";
    if (msg == NULL) return 0;
    /* the entity, the field being read (none: the entity's own fault) and the bit */
    snprintf(k->res->message, sizeof k->res->message, "snapshot packet: entity %llu: %s%s%s%s (at bit %lu)",
             (unsigned long long)k->base->ids[k->kept_base[ke]], field != NULL ? "field '" : "",
             field != NULL ? field : "", field != NULL ? "': " : "", msg, (unsigned long)k->r.pos);
    return QC_E_MALFORMED;
}

/* section 7.3, entities: every changed entity, the fast path's runs taking those it can (from
   the packet while far from its end, then from a zero-padded copy of its tail), the
   slot-by-slot loop the next one each time */
static int qc__pk_read_entities(qc__pk *k) {
    const size_t nbytes = k->nbytes, tb = k->tb, lastfast = nbytes > tb ? nbytes - tb : 0, nchg = k->nchg;
    size_t st = 0, x;
    int tail_made = 0, status;
    qc__fastrun run;
    run.ngen = qc__fast_tables(k->sc, k->fmode, k->pdist, k->num, k->dc, k->dfd, k->gen);
    {   /* each changed component's look-up table (the others are never read) */
        int i, c;
        k->d->egt_used = 0;
        for (i = 0; i < k->F; i++) {
            const qc_field *fd = &k->sc->fields[i];
            for (c = fd->first_comp; c < fd->first_comp + fd->ncomps; c++)
                k->dc[c].egt = k->fmode[i] ? qc__egt_for(k->d, &k->dc[c].P) : qc__egt_none;
        }
    }
    run.fch = k->fch;
    run.F = k->F;
    run.S = k->S;
    run.FD = k->dfd;
    run.gen = k->gen;
    run.brow = k->base->rows;
    run.prow = k->pdist ? k->pred->rows : NULL;
    run.orow = k->snap->rows;
    run.chg = k->chg;
    run.kept_base = k->kept_base;
    run.kept_out = k->kept_out;
    run.kept_pred = k->kept_pred;
    run.num = k->num;
    run.den = k->den;
    for (x = 0; x < nchg; x++) {
        if ((k->r.pos >> 3) < lastfast) {
            run.buf = k->buf;
            run.lastfast = lastfast;
            run.nbits = 8 * nbytes;
            x = qc__fast_run(&run, x, nchg, &k->r.pos);
        }
        if (x < nchg && (k->r.pos >> 3) >= lastfast) {
            if (!tail_made) {
                tail_made = 1;
                st = k->r.pos >> 3;
                memcpy(k->tail, k->buf + st, nbytes - st);
                memset(k->tail + (nbytes - st), 0, tb);
            }
            run.buf = k->tail;
            run.lastfast = nbytes - st;
            run.nbits = 8 * (nbytes - st);
            k->r.pos -= 8 * st;
            x = qc__fast_run(&run, x, nchg, &k->r.pos);
            k->r.pos += 8 * st;
        }
        if (x == nchg) break;
        status = qc__pk_read_entity(k, x);
        if (status) return status;
    }
    return 0;
}

/* section 1: the padding, fewer than 8 bits, all zero */
static int qc__pk_read_end(qc__pk *k) {
    size_t left = qc__br_left(&k->r);
    uint64_t v;
    if (left >= 8 || (qc__get(&k->r, (int)left, &v) == 0 && v != 0))
        return qc__pk_bad(k, "unexpected data after the end of the packet");
    return 0;
}

/* One packet: the new snapshot in *out (QC_SNAPSHOT), or the refusal's status with res's
   message, the decoder unchanged */
static int qc__decode_packet(qc_decoder *d, const uint8_t *buf, size_t nbytes, qc_snapshot **out, qc_result *res) {
    qc__pk k;
    int st;
    memset(&k, 0, sizeof k);
    k.d = d;
    k.sc = d->schema;
    k.res = res;
    k.buf = buf;
    k.nbytes = nbytes;
    k.S = k.sc->nslots;
    k.F = k.sc->nfields;
    k.C = k.sc->ncomps;
    k.tb = qc__fast_tail(k.sc);
    k.num = 1;
    k.den = 1;
    qc__br_init(&k.r, buf, nbytes);
    if ((st = qc__pk_read_head(&k)) != 0 || (st = qc__pk_read_removed(&k)) != 0 || (st = qc__pk_read_count(&k)) != 0 ||
            (st = qc__pk_memory(&k)) != 0)
        goto refused;
    if (k.nnew && ((st = qc__pk_read_new_ids(&k)) != 0 || (st = qc__pk_read_records(&k)) != 0)) goto refused;
    if ((st = qc__pk_merge(&k)) != 0) goto refused;
    if (k.bdist) {
        if ((st = qc__pk_read_changed(&k)) != 0) goto refused;
        if (k.nchg && ((st = qc__pk_read_fields(&k)) != 0 || (st = qc__pk_read_params(&k)) != 0 ||
                       (st = qc__pk_read_entities(&k)) != 0))
            goto refused;
    }
    if ((st = qc__pk_read_end(&k)) != 0) goto refused;
    *out = k.snap;
    return QC_SNAPSHOT;
refused:
    qc__snap_free(d, k.snap);
    return st;
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

