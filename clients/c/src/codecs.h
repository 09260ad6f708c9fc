/* ---- the codecs' rules (quantcodec/_kernels.pxd, operation for operation) --------------------- */

#define QC__SQRT1_2 0.70710678118654752440

static uint64_t qc__dbits(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
static double qc__bitsd(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }

/* Bounded modes: 0 endpoints (L = 2**b - 1), 1 bins (L = 2**b), 2 midpoint (the endpoints rule with
   L = 2**b - 2: the middle code L / 2 decodes to exactly the centre; 2**b - 1 is not a code). */
static double qc__bounded_qt(double t, double L, int mode) {
    QC__NOFMA
    if (mode != 1) {
        t = t > 0.0 ? t : 0.0;
        t = t < 1.0 ? t : 1.0;
        return t * L + 0.5;
    }
    t = t * L;
    t = t > 0.0 ? t : 0.0;
    return t < L ? t : L - 1.0;
}

static double qc__bounded_dqd(double cd, double lo, double hi, double R, double L, int mode) {
    QC__NOFMA
    double v;
    if (mode != 1) {
        v = lo + (cd * R) / L;
        if (mode == 2 && cd + cd == L) v = (lo + hi) * 0.5;
        v = cd == L ? hi : v;
        return cd == 0.0 ? lo : v;
    }
    return lo + ((cd + 0.5) * R) / L;
}

static uint64_t qc__fixed_q(const qc_codec *d, double x, int *nc) {
    QC__NOFMA
    double v = (x - d->lo) / d->hi, r;
    if (v != v) { (*nc)++; return 0; }
    r = round(v);
    if (r < d->fmin) { (*nc)++; return (uint64_t)d->smin; }
    if (r >= d->fmax) { (*nc)++; return d->mode ? (uint64_t)d->smax : d->maxcode; }
    if (d->mode) return (uint64_t)(int64_t)r;
    return (uint64_t)r;
}

static double qc__fixed_dq(const qc_codec *d, uint64_t c) {
    QC__NOFMA
    if (d->mode) return d->lo + ((double)(int64_t)c) * d->hi;
    return d->lo + ((double)c) * d->hi;
}

static int qc__isfinite(double x) { return x - x == 0.0; }

static uint64_t qc__angle_q(const qc_codec *d, double x, int *nc) {
    QC__NOFMA
    double w;
    if (!qc__isfinite(x)) { (*nc)++; return 0; }
    w = fabs(x) < d->lo ? x : fmod(x, d->lo);
    if (w < 0.0) w = w + d->lo;
    return ((uint64_t)(w / d->lo * d->L + 0.5)) & d->maxcode;
}

static double qc__angle_dq(const qc_codec *d, uint64_t c) {
    QC__NOFMA
    int64_t sc = (int64_t)c;
    if (d->mode && c > (d->maxcode >> 1)) sc = sc - (int64_t)d->maxcode - 1;
    return ((double)sc * d->lo) / d->L;
}

static double qc__power_root(double t, double p, double inv_p) {
    QC__NOFMA
    if (p == 1.0) return t;
    if (p == 2.0) return sqrt(t);
    return pow(t, inv_p);
}

static double qc__power_raise(double r, double p) {
    QC__NOFMA
    if (p == 1.0) return r;
    if (p == 2.0) return r * r;
    return pow(r, p);
}

static uint64_t qc__power_q(const qc_codec *d, double x, int *nc) {
    QC__NOFMA
    double a = fabs(x);
    uint64_t m;
    if (a != a) { (*nc)++; return 0; }
    if (a > d->lo) { (*nc)++; a = d->lo; }
    m = (uint64_t)(qc__power_root(a / d->lo, d->hi, d->R) * d->L + 0.5);
    if (m == 0) return 0;
    if (x < 0.0) return (((uint64_t)1) << (d->bits - 1)) | m;
    return m;
}

static double qc__power_dq(const qc_codec *d, uint64_t c) {
    QC__NOFMA
    uint64_t m = c & (d->maxcode >> 1);
    double v;
    if (m == 0) return 0.0;
    v = d->lo * qc__power_raise((double)m / d->L, d->hi);
    if (c >> (d->bits - 1)) return -v;
    return v;
}

static uint64_t qc__half_q(double x) {
    uint64_t d = qc__dbits(x);
    uint64_t h_sgn = (d & 0x8000000000000000ull) >> 48;
    uint64_t d_exp = d & 0x7ff0000000000000ull;
    uint64_t d_sig, ret, h_exp;
    if (d_exp >= 0x40f0000000000000ull) {
        if (d_exp == 0x7ff0000000000000ull) {
            d_sig = d & 0x000fffffffffffffull;
            if (d_sig != 0) {
                ret = 0x7c00 + (d_sig >> 42);
                if (ret == 0x7c00) ret += 1;
                return h_sgn + ret;
            }
        }
        return h_sgn + 0x7c00;
    }
    if (d_exp <= 0x3f00000000000000ull) {
        if (d_exp < 0x3e60000000000000ull) return h_sgn;
        d_exp >>= 52;
        d_sig = 0x0010000000000000ull + (d & 0x000fffffffffffffull);
        d_sig <<= (d_exp - 998);
        if ((d_sig & 0x003fffffffffffffull) != 0x0010000000000000ull) d_sig += 0x0010000000000000ull;
        return h_sgn + (d_sig >> 53);
    }
    h_exp = (d_exp - 0x3f00000000000000ull) >> 42;
    d_sig = d & 0x000fffffffffffffull;
    if ((d_sig & 0x000007ffffffffffull) != 0x0000020000000000ull) d_sig += 0x0000020000000000ull;
    return h_sgn + h_exp + (d_sig >> 42);
}

static double qc__half_dq(uint64_t h) {
    uint64_t h_exp = h & 0x7c00, d_sgn = (h & 0x8000) << 48, h_sig;
    int e;
    if (h_exp == 0) {
        h_sig = h & 0x03ff;
        if (h_sig == 0) return qc__bitsd(d_sgn);
        h_sig <<= 1;
        e = 0;
        while ((h_sig & 0x0400) == 0) { h_sig <<= 1; e++; }
        return qc__bitsd(d_sgn + (((uint64_t)(1023 - 15 - e)) << 52) + ((h_sig & 0x03ff) << 42));
    }
    if (h_exp == 0x7c00) return qc__bitsd(d_sgn + 0x7ff0000000000000ull + ((h & 0x03ff) << 42));
    return qc__bitsd(d_sgn + (((h & 0x7fff) + 0xfc000) << 42));
}

static uint64_t qc__grid_q(const qc_codec *d, double x, int *nc) {
    QC__NOFMA
    double u = x / d->lo, cell, t, v;
    uint64_t off, cmask;
    if (u != u) { (*nc)++; return 0; }
    cmask = d->maxcode >> d->cbits;
    if (u < d->fmin) { (*nc)++; return (((uint64_t)d->smin) & cmask) << d->cbits; }
    cell = floor(u);
    if (cell >= d->fmax) { (*nc)++; return ((((uint64_t)d->smax) & cmask) << d->cbits) | ((((uint64_t)1) << d->cbits) - 1); }
    t = u - cell;
    v = t * d->L;
    if (v >= d->L) off = (((uint64_t)1) << d->cbits) - 1;
    else off = (uint64_t)v;
    return ((((uint64_t)(int64_t)cell) & cmask) << d->cbits) | off;
}

static double qc__grid_dq(const qc_codec *d, uint64_t c) {
    QC__NOFMA
    int up = 64 - d->bits;
    int64_t cell = (int64_t)(c << up);
    uint64_t off = c & ((((uint64_t)1) << d->cbits) - 1);
    /* an arithmetic shift, written portably */
    cell = cell >= 0 ? cell >> (up + d->cbits) : -(int64_t)((~(uint64_t)cell) >> (up + d->cbits)) - 1;
    return ((double)cell + ((double)off + 0.5) / d->L) * d->lo;
}

static int qc__scalar_valid(const qc_codec *d, uint64_t c) {
    int64_t s;
    if (d->kind == QC_INT || (d->kind == QC_FIXED && d->mode)) {
        s = (int64_t)c;
        return s >= d->smin && s <= d->smax;
    }
    if (c > d->maxcode) return 0;
    if (d->kind == QC_POWERCURVE) return !((c >> (d->bits - 1)) && (c & (d->maxcode >> 1)) == 0);
    return 1;
}

/* Quat */
static double qc__quat_kept(const qc_codec *d, uint64_t c, int k) {
    QC__NOFMA
    uint64_t mask = (((uint64_t)1) << d->cbits) - 1;
    return qc__bounded_dqd((double)(int32_t)((c >> ((2 - k) * d->cbits)) & mask), d->lo, d->hi, d->R, d->L, d->mode);
}

static void qc__quat_rebuild(int idx, double a, double b, double c, double *out) {
    QC__NOFMA
    double s = (a * a + b * b) + c * c;
    double w = sqrt(1.0 - s > 0.0 ? 1.0 - s : 0.0);
    double q0 = a, q1 = b, q2 = c, q3 = w, n;
    int u = idx <= 2;
    q3 = u ? c : q3;
    q2 = u ? w : q2;
    u = idx <= 1;
    q2 = u ? b : q2;
    q1 = u ? w : q1;
    u = idx == 0;
    q1 = u ? a : q1;
    q0 = u ? w : q0;
    n = sqrt(((q0 * q0 + q1 * q1) + q2 * q2) + q3 * q3);
    out[0] = q0 / n; out[1] = q1 / n; out[2] = q2 / n; out[3] = q3 / n;
}

static double qc__quat_shrunk(double x, double st) {
    QC__NOFMA
    x = fabs(x) - st;
    return x < 0.0 ? 0.0 : x;
}

static int qc__quat_valid(const qc_codec *d, uint64_t code) {
    QC__NOFMA
    double st, a, b, c, s, big;
    if (code > d->maxcode) return 0;
    st = d->R / d->L;
    if (qc__quat_kept(d, code, 0) > d->hi || qc__quat_kept(d, code, 1) > d->hi || qc__quat_kept(d, code, 2) > d->hi)
        return 0;           /* midpoint: a component code 2**cbits - 1 is no level (the only one above hi) */
    a = qc__quat_shrunk(qc__quat_kept(d, code, 0), st);
    b = qc__quat_shrunk(qc__quat_kept(d, code, 1), st);
    c = qc__quat_shrunk(qc__quat_kept(d, code, 2), st);
    s = (a * a + b * b) + c * c;
    big = c > 0.0 ? c : 0.0;
    big = b > big ? b : big;
    big = a > big ? a : big;
    return (!(s > 1.0)) & (sqrt(1.0 - s) >= big);
}

static int qc__quat_q(const qc_codec *d, const double *q, uint64_t *code) {
    QC__NOFMA
    double x0 = q[0], x1 = q[1], x2 = q[2], x3 = q[3], m, n, best, big, a, b, c;
    int idx, u;
    uint64_t ka, kb, kc;
    if (!(qc__isfinite(x0) && qc__isfinite(x1) && qc__isfinite(x2) && qc__isfinite(x3))) return QC_Q_NONFINITE;
    if (x0 == 0.0 && x1 == 0.0 && x2 == 0.0 && x3 == 0.0) return QC_Q_ZERO;
    m = fabs(x0) > 0.0 ? fabs(x0) : 0.0;
    m = fabs(x1) > m ? fabs(x1) : m;
    m = fabs(x2) > m ? fabs(x2) : m;
    m = fabs(x3) > m ? fabs(x3) : m;
    x0 = x0 / m; x1 = x1 / m; x2 = x2 / m; x3 = x3 / m;
    n = sqrt(((x0 * x0 + x1 * x1) + x2 * x2) + x3 * x3);
    x0 = x0 / n; x1 = x1 / n; x2 = x2 / n; x3 = x3 / n;
    best = fabs(x0); big = x0; a = x1; b = x2; c = x3; idx = 0;
    u = fabs(x1) > best;
    best = u ? fabs(x1) : best; big = u ? x1 : big; a = u ? x0 : a; idx = u ? 1 : idx;
    u = fabs(x2) > best;
    best = u ? fabs(x2) : best; big = u ? x2 : big; a = u ? x0 : a; b = u ? x1 : b; idx = u ? 2 : idx;
    u = fabs(x3) > best;
    big = u ? x3 : big; a = u ? x0 : a; b = u ? x1 : b; c = u ? x2 : c; idx = u ? 3 : idx;
    u = big < 0.0;
    a = u ? -a : a; b = u ? -b : b; c = u ? -c : c;
    ka = (uint64_t)(int32_t)qc__bounded_qt((a - d->lo) / d->R, d->L, d->mode);
    kb = (uint64_t)(int32_t)qc__bounded_qt((b - d->lo) / d->R, d->L, d->mode);
    kc = (uint64_t)(int32_t)qc__bounded_qt((c - d->lo) / d->R, d->L, d->mode);
    *code = ((((((((uint64_t)idx) << d->cbits) | ka) << d->cbits) | kb) << d->cbits) | kc);
    return QC_Q_OK;
}

/* UnitVector */
static double qc__sgn_nn(double t) { return t >= 0.0 ? 1.0 : -1.0; }

static int qc__uvec_q(const qc_codec *d, const double *v, uint64_t *code) {
    QC__NOFMA
    double x = v[0], y = v[1], z = v[2], m, s, p, q, p2, q2;
    int u;
    if (!(qc__isfinite(x) && qc__isfinite(y) && qc__isfinite(z))) return QC_Q_NONFINITE;
    if (x == 0.0 && y == 0.0 && z == 0.0) return QC_Q_ZERO;
    m = fabs(x);
    m = fabs(y) > m ? fabs(y) : m;
    m = fabs(z) > m ? fabs(z) : m;
    x = x / m; y = y / m; z = z / m;
    s = (fabs(x) + fabs(y)) + fabs(z);
    p = x / s;
    q = y / s;
    u = z < 0.0;
    p2 = (1.0 - fabs(q)) * qc__sgn_nn(p);
    q2 = (1.0 - fabs(p)) * qc__sgn_nn(q);
    p = u ? p2 : p;
    q = u ? q2 : q;
    *code = (((uint64_t)qc__bounded_qt((p - d->lo) / d->R, d->L, 0)) << d->cbits) |
            (uint64_t)qc__bounded_qt((q - d->lo) / d->R, d->L, 0);
    return QC_Q_OK;
}

static void qc__uvec_dq(const qc_codec *d, uint64_t c, double *out) {
    QC__NOFMA
    uint64_t mask = d->cbits < 64 ? (((uint64_t)1) << d->cbits) - 1 : ~(uint64_t)0;
    double p = qc__bounded_dqd((double)((c >> d->cbits) & mask), d->lo, d->hi, d->R, d->L, 0);
    double q = qc__bounded_dqd((double)(c & mask), d->lo, d->hi, d->R, d->L, 0);
    double z = (1.0 - fabs(p)) - fabs(q), p2, q2, n;
    int u = z < 0.0;
    p2 = (1.0 - fabs(q)) * qc__sgn_nn(p);
    q2 = (1.0 - fabs(p)) * qc__sgn_nn(q);
    p = u ? p2 : p;
    q = u ? q2 : q;
    n = sqrt((p * p + q * q) + z * z);
    out[0] = p / n; out[1] = q / n; out[2] = z / n;
}

/* ---- the public codec calls ------------------------------------------------------------------ */

int qc_valid(const qc_codec *c, uint64_t code) {
    switch (c->kind) {
    case QC_QUAT: return qc__quat_valid(c, code);
    case QC_UNITVECTOR: return code <= c->maxcode;
    case QC_VECTOR: case QC_NEARLYZERO: return 0;
    default: return qc__scalar_valid(c, code);
    }
}

int qc_ncodes(const qc_codec *c) {
    if (c->kind == QC_VECTOR) return c->ninner;
    if (c->kind == QC_NEARLYZERO) return 1 + qc_ncodes(c->inner);
    return 1;
}

int qc_nvalues(const qc_codec *c) {
    if (c->kind == QC_VECTOR) return c->ninner;
    if (c->kind == QC_NEARLYZERO) return qc_nvalues(c->inner);
    if (c->kind == QC_QUAT) return 4;
    if (c->kind == QC_UNITVECTOR) return 3;
    return 1;
}

int qc_valid_codes(const qc_codec *c, const uint64_t *codes) {
    int i, k;
    if (c->kind == QC_VECTOR) {
        for (i = 0; i < c->ninner; i++) if (!qc_valid(&c->inner[i], codes[i])) return 0;
        return 1;
    }
    if (c->kind == QC_NEARLYZERO) {
        k = qc_ncodes(c->inner);
        if (codes[0] == 0) {
            for (i = 0; i < k; i++) if (codes[1 + i] != 0) return 0;
            return 1;
        }
        return codes[0] == 1 && qc_valid_codes(c->inner, codes + 1);
    }
    return qc_valid(c, codes[0]);
}

/* the value of a code known to be valid */
static void qc__dq1(const qc_codec *c, uint64_t code, double *out) {
    switch (c->kind) {
    case QC_BOUNDED: out[0] = qc__bounded_dqd((double)code, c->lo, c->hi, c->R, c->L, c->mode); break;
    case QC_FIXED: out[0] = qc__fixed_dq(c, code); break;
    case QC_ANGLE: out[0] = qc__angle_dq(c, code); break;
    case QC_POWERCURVE: out[0] = qc__power_dq(c, code); break;
    case QC_HALF: out[0] = qc__half_dq(code); break;
    case QC_GRID: out[0] = qc__grid_dq(c, code); break;
    case QC_INT: out[0] = (double)(int64_t)code; break;
    case QC_INTRANGE: out[0] = (double)(int64_t)((uint64_t)c->smin + code); break;
    case QC_QUAT:
        qc__quat_rebuild((int)((code >> (3 * c->cbits)) & 3), qc__quat_kept(c, code, 0), qc__quat_kept(c, code, 1),
                         qc__quat_kept(c, code, 2), out);
        break;
    case QC_UNITVECTOR: qc__uvec_dq(c, code, out); break;
    default: out[0] = (double)code; break;
    }
}

int qc_dequantize(const qc_codec *c, uint64_t code, double *out) {
    if (!qc_valid(c, code)) return -1;
    qc__dq1(c, code, out);
    return 0;
}

/* a code tuple known to be valid (a decoded snapshot's) */
static void qc__dq_codes(const qc_codec *c, const uint64_t *codes, double *out) {
    int i;
    if (c->kind == QC_VECTOR) {
        for (i = 0; i < c->ninner; i++) qc__dq1(&c->inner[i], codes[i], out + i);
    } else if (c->kind == QC_NEARLYZERO) {
        if (codes[0] == 0) {
            int k = qc_nvalues(c->inner);
            for (i = 0; i < k; i++) out[i] = 0.0;
        } else {
            qc__dq_codes(c->inner, codes + 1, out);
        }
    } else {
        qc__dq1(c, codes[0], out);
    }
}

int qc_dequantize_codes(const qc_codec *c, const uint64_t *codes, double *out) {
    int i, k;
    if (!qc_valid_codes(c, codes)) return -1;
    if (c->kind == QC_VECTOR) {
        for (i = 0; i < c->ninner; i++) qc_dequantize(&c->inner[i], codes[i], out + i);
        return 0;
    }
    if (c->kind == QC_NEARLYZERO) {
        if (codes[0] == 0) {
            k = qc_nvalues(c->inner);
            for (i = 0; i < k; i++) out[i] = 0.0;
            return 0;
        }
        return qc_dequantize_codes(c->inner, codes + 1, out);
    }
    return qc_dequantize(c, codes[0], out);
}

uint64_t qc_quantize(const qc_codec *c, double x, int *clamped) {
    QC__NOFMA
    int nc = 0;
    uint64_t r = 0;
    switch (c->kind) {
    case QC_BOUNDED:
        if ((x < c->lo) | (x > c->hi) | (x != x)) nc++;
        r = (uint64_t)qc__bounded_qt((x - c->lo) / c->R, c->L, c->mode);
        break;
    case QC_FIXED: r = qc__fixed_q(c, x, &nc); break;
    case QC_ANGLE: r = qc__angle_q(c, x, &nc); break;
    case QC_POWERCURVE: r = qc__power_q(c, x, &nc); break;
    case QC_HALF: r = qc__half_q(x); break;
    case QC_GRID: r = qc__grid_q(c, x, &nc); break;
    default: nc++; break;
    }
    if (clamped != NULL) *clamped = nc;
    return r;
}

int qc_quantize_int(const qc_codec *c, int64_t v, uint64_t *code) {
    if (c->kind == QC_INTRANGE) {
        if (v < c->smin || v > c->smax) return QC_Q_RANGE;
        *code = (uint64_t)v - (uint64_t)c->smin;      /* the true difference, below 2**63 */
        return QC_Q_OK;
    }
    if (v < 0) {
        if (c->kind != QC_INT || v < c->smin) return QC_Q_RANGE;
        *code = (uint64_t)v;
        return QC_Q_OK;
    }
    return qc_quantize_uint(c, (uint64_t)v, code);
}

int qc_quantize_uint(const qc_codec *c, uint64_t v, uint64_t *code) {
    switch (c->kind) {
    case QC_INT: if (v > (uint64_t)c->smax) return QC_Q_RANGE; break;
    case QC_UINT: case QC_BOOL: case QC_ENUM: if (v > c->maxcode) return QC_Q_RANGE; break;
    case QC_INTRANGE:
        if (v > (uint64_t)INT64_MAX) return QC_Q_RANGE;
        return qc_quantize_int(c, (int64_t)v, code);
    default: return QC_Q_RANGE;
    }
    *code = v;
    return QC_Q_OK;
}

int qc_quantize_quat(const qc_codec *c, const double *q, uint64_t *code) { return qc__quat_q(c, q, code); }
int qc_quantize_uvec(const qc_codec *c, const double *v, uint64_t *code) { return qc__uvec_q(c, v, code); }

static int qc__quantize_exact(const qc_codec *c, double x, uint64_t *code) {
    if (!(x == floor(x)) || !qc__isfinite(x)) return QC_Q_RANGE;
    if (x < 0) {
        if (x < -9223372036854775808.0) return QC_Q_RANGE;
        return qc_quantize_int(c, (int64_t)x, code);
    }
    if (x >= 18446744073709551616.0) return QC_Q_RANGE;
    return qc_quantize_uint(c, (uint64_t)x, code);
}

int qc_quantize_values(const qc_codec *c, const double *x, uint64_t *codes, int *nclamped) {
    int i, k, st, cl, n = 0;
    switch (c->kind) {
    case QC_QUAT: st = qc__quat_q(c, x, codes); break;
    case QC_UNITVECTOR: st = qc__uvec_q(c, x, codes); break;
    case QC_VECTOR:
        st = QC_Q_OK;
        for (i = 0; i < c->ninner && st == QC_Q_OK; i++) st = qc_quantize_values(&c->inner[i], x + i, codes + i, &n);
        break;
    case QC_NEARLYZERO: {
        int small = 1;
        k = qc_nvalues(c->inner);
        for (i = 0; i < k; i++) small &= fabs(x[i]) <= c->p1;
        if (small) {
            codes[0] = 0;
            for (i = 0; i < qc_ncodes(c->inner); i++) codes[1 + i] = 0;
            st = QC_Q_OK;
        } else {
            codes[0] = 1;
            st = qc_quantize_values(c->inner, x, codes + 1, &n);
        }
        break;
    }
    case QC_UINT: case QC_INT: case QC_BOOL: case QC_ENUM: case QC_INTRANGE: st = qc__quantize_exact(c, x[0], codes); break;
    default:
        codes[0] = qc_quantize(c, x[0], &cl);
        n += cl;
        st = QC_Q_OK;
        break;
    }
    if (nclamped != NULL) *nclamped += n;
    return st;
}

