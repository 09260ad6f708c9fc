/* ---- schemas --------------------------------------------------------------------------------- */

static const char *const qc__kind_names[16] = {
    "", "Bounded", "Fixed", "Angle", "PowerCurve", "Half", "UInt", "Int", "Bool", "Enum", "Quat",
    "UnitVector", "Vector", "Grid", "NearlyZero", "IntRange"
};

static int qc__kind_of(const char *name) {
    int k;
    for (k = 1; k <= 15; k++) if (strcmp(name, qc__kind_names[k]) == 0) return k;
    return 0;
}

static const char *qc__jtype_name(const qc_json *v) {
    switch (v->type) {
    case QC_JSON_NULL: return "null";
    case QC_JSON_FALSE: case QC_JSON_TRUE: return "a bool";
    case QC_JSON_NUMBER: return v->is_int ? "an integer" : "a float";
    case QC_JSON_STRING: return "a string";
    case QC_JSON_ARRAY: return "a list";
    default: return "an object";
    }
}

typedef struct qc__sb { qc__arena *a; qc_error *err; const char *where; } qc__sb;

static int qc__float_param(qc__sb *b, const char *owner, const char *name, const qc_json *v, double *out) {
    if (v->type != QC_JSON_NUMBER)
        return qc__fail(b->err, "%s%s: %s must be a number, got %s", b->where, owner, name, qc__jtype_name(v));
    if (!qc__isfinite(v->num))
        return qc__fail(b->err, "%s%s: %s must be finite, got %s", b->where, owner, name, v->text);
    *out = v->num + 0.0;
    return 0;
}

static int qc__int_param(qc__sb *b, const char *owner, const char *name, const qc_json *v, int64_t lo, int64_t hi, int64_t *out) {
    if (v->type != QC_JSON_NUMBER || !v->is_int)
        return qc__fail(b->err, "%s%s: %s must be an integer, got %s", b->where, owner, name,
                        v->type == QC_JSON_NUMBER ? v->text : qc__jtype_name(v));
    if (!v->int_ok || (v->neg ? -(double)v->u < (double)lo : v->u > (uint64_t)hi) || (!v->neg && v->u < (uint64_t)(lo > 0 ? lo : 0)))
        return qc__fail(b->err, "%s%s: %s must be in %lld..%lld, got %s", b->where, owner, name, (long long)lo, (long long)hi, v->text);
    if (v->neg) {
        int64_t s = v->u == ((uint64_t)1 << 63) ? INT64_MIN : -(int64_t)v->u;
        if (s < lo) return qc__fail(b->err, "%s%s: %s must be in %lld..%lld, got %s", b->where, owner, name, (long long)lo, (long long)hi, v->text);
        *out = s;
    } else {
        *out = (int64_t)v->u;
    }
    return 0;
}

static int qc__check_keys(qc__sb *b, const char *kind, const qc_json *spec, const char *const *allowed) {
    size_t k;
    for (k = 0; k < spec->nkids; k++) {
        const char *key = spec->kids[k].key;
        int i, ok = strcmp(key, "kind") == 0;
        for (i = 0; allowed[i] != NULL && !ok; i++) ok = strcmp(key, allowed[i]) == 0;
        if (!ok) return qc__fail(b->err, "%s%s spec has unknown key '%s'", b->where, kind, key);
    }
    return 0;
}

static const qc_json *qc__need(qc__sb *b, const char *kind, const qc_json *spec, const char *key) {
    const qc_json *v = qc_json_get(spec, key);
    if (v == NULL) qc__fail(b->err, "%s%s spec is missing '%s'", b->where, kind, key);
    return v;
}

static int qc__mode_param(qc__sb *b, const char *owner, const qc_json *spec, int *mode) {
    const qc_json *v = qc_json_get(spec, "mode");
    *mode = 0;
    if (v == NULL) return 0;
    if (v->type == QC_JSON_STRING && strcmp(v->text, "endpoints") == 0) return 0;
    if (v->type == QC_JSON_STRING && strcmp(v->text, "bins") == 0) { *mode = 1; return 0; }
    if (v->type == QC_JSON_STRING && strcmp(v->text, "midpoint") == 0) { *mode = 2; return 0; }
    return qc__fail(b->err, "%s%s: mode must be 'endpoints', 'bins' or 'midpoint', got %s%s%s", b->where, owner,
                    v->type == QC_JSON_STRING ? "'" : "", v->type == QC_JSON_STRING ? v->text : qc__jtype_name(v),
                    v->type == QC_JSON_STRING ? "'" : "");
}

static int qc__bool_param(qc__sb *b, const char *owner, const char *name, const qc_json *spec, int dflt, int *out) {
    const qc_json *v = qc_json_get(spec, name);
    *out = dflt;
    if (v == NULL) return 0;
    if (v->type == QC_JSON_TRUE) { *out = 1; return 0; }
    if (v->type == QC_JSON_FALSE) { *out = 0; return 0; }
    return qc__fail(b->err, "%s%s: %s must be True or False, got %s", b->where, owner, name, qc__jtype_name(v));
}

static double qc__pow2(int e) { return ldexp(1.0, e); }

static int qc__is_scalar_kind(int k) { return k != QC_VECTOR && k != QC_NEARLYZERO && k != QC_QUAT && k != QC_UNITVECTOR; }

static int qc__build_codec(qc__sb *b, const qc_json *spec, qc_codec *c, int depth);

/* whether text (n bytes, from the JSON reader) holds a lone surrogate: a \u escape of one, which
   the reader keeps as 3 bytes ED A0..BF xx (WTF-8); raw UTF-8 surrogates it refuses. *at: where,
   in characters (code points, as Python counts), *cp: the surrogate (docs/schema-format.md, R3) */
static int qc__lone_surrogate(const char *text, size_t n, size_t *at, unsigned *cp) {
    const unsigned char *p = (const unsigned char *)text;
    size_t i = 0, l;
    for (*at = 0; i < n; i += l, ++*at) {
        l = qc__utf8_get(p + i, n - i, cp);
        if (l == 0) {
            if (n - i >= 3 && p[i] == 0xED && p[i + 1] >= 0xA0) {
                *cp = ((unsigned)(p[i] & 0x0F) << 12) | ((unsigned)(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
                return 1;
            }
            l = 1;      /* (not from the reader: none such) */
        }
    }
    return 0;
}

/* The largest magnitude a value of c decodes to (Python's _codecs.pyx _reach), in doubles: 1 and
   *r, or 0 where there is none to say (Angle, Half, Grid, Enum, a Vector with one of those). */
static int qc__reach(const qc_codec *c, double *r) {
    QC__NOFMA
    double a, x;
    int i;
    uint64_t m;
    switch (c->kind) {
    case QC_VECTOR:
        for (i = 0; i < c->ninner; i++) {
            if (!qc__reach(&c->inner[i], &x)) return 0;
            if (i == 0 || x > *r) *r = x;
        }
        return c->ninner > 0;
    case QC_BOUNDED: a = fabs(c->p1); x = fabs(c->p2); *r = a > x ? a : x; return 1;
    case QC_POWERCURVE: *r = c->p1; return 1;
    case QC_FIXED: {    /* offset + lo*step, offset + hi*step: the product rounded first */
        double lo = c->mode ? (double)c->smin : 0.0, hi = c->mode ? (double)c->smax : (double)c->maxcode;
        double p = lo * c->p1, q = hi * c->p1;
        a = fabs(c->p2 + p); x = fabs(c->p2 + q);
        *r = a > x ? a : x;
        return 1;
    }
    case QC_UINT: *r = (double)qc__mask(c->bits); return 1;
    case QC_INT: *r = qc__pow2(c->bits - 1); return 1;
    case QC_BOOL: *r = 1.0; return 1;
    case QC_INTRANGE: {
        uint64_t lo = c->smin < 0 ? (uint64_t)0 - (uint64_t)c->smin : (uint64_t)c->smin;
        uint64_t hi = c->smax < 0 ? (uint64_t)0 - (uint64_t)c->smax : (uint64_t)c->smax;
        m = lo > hi ? lo : hi;
        *r = (double)m;
        return 1;
    }
    default: return 0;
    }
}

static int qc__nested_kind(const qc_json *spec) {
    const qc_json *k = qc_json_get(spec, "kind");
    if (k == NULL || k->type != QC_JSON_STRING) return 0;
    return qc__kind_of(k->text);
}

static int qc__build_codec(qc__sb *b, const qc_json *spec, qc_codec *c, int depth) {
    QC__NOFMA
    const qc_json *kv, *v;
    const char *kn;
    int64_t iv;
    memset(c, 0, sizeof *c);
    if (spec->type != QC_JSON_OBJECT)
        return qc__fail(b->err, "%scodec spec must be an object, got %s", b->where, qc__jtype_name(spec));
    kv = qc_json_get(spec, "kind");
    if (kv == NULL || kv->type != QC_JSON_STRING || qc__kind_of(kv->text) == 0)
        return qc__fail(b->err, "%sunknown codec kind %s%s%s; expected one of Bounded, Fixed, Angle, PowerCurve, Half, UInt, "
                        "Int, Bool, Enum, Quat, UnitVector, Vector, Grid, NearlyZero, IntRange", b->where,
                        kv != NULL && kv->type == QC_JSON_STRING ? "'" : "",
                        kv == NULL ? "None" : kv->type == QC_JSON_STRING ? kv->text : qc__jtype_name(kv),
                        kv != NULL && kv->type == QC_JSON_STRING ? "'" : "");
    c->kind = qc__kind_of(kv->text);
    kn = qc__kind_names[c->kind];
    switch (c->kind) {
    case QC_BOUNDED: {
        static const char *const keys[] = {"min", "max", "bits", "mode", NULL};
        const qc_json *jmin, *jmax, *jbits;
        double lo, hi;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((jmin = qc__need(b, kn, spec, "min")) == NULL || (jmax = qc__need(b, kn, spec, "max")) == NULL ||
            (jbits = qc__need(b, kn, spec, "bits")) == NULL) return -1;
        if (qc__float_param(b, kn, "min", jmin, &lo) < 0 || qc__float_param(b, kn, "max", jmax, &hi) < 0 ||
            qc__int_param(b, kn, "bits", jbits, 1, 32, &iv) < 0) return -1;
        if (!(lo < hi)) return qc__fail(b->err, "%sBounded: min must be less than max, got min=%.17g, max=%.17g", b->where, lo, hi);
        if (!qc__isfinite(hi - lo)) return qc__fail(b->err, "%sBounded: the range max - min overflows", b->where);
        if (qc__mode_param(b, kn, spec, &c->mode) < 0) return -1;
        if (c->mode == 2 && iv < 2)
            return qc__fail(b->err, "%sBounded: mode='midpoint' needs bits >= 2 (2**bits - 2 intervals), got bits=%d", b->where, (int)iv);
        if (!qc__isfinite((hi - lo) * qc__pow2((int)iv)))
            return qc__fail(b->err, "%sBounded: the range max - min times 2**bits overflows (valid codes would decode to inf)", b->where);
        c->bits = (int)iv;
        c->lo = lo; c->hi = hi; c->R = hi - lo;
        c->L = c->mode == 1 ? qc__pow2(c->bits) : qc__pow2(c->bits) - (c->mode == 2 ? 2.0 : 1.0);
        c->p1 = lo; c->p2 = hi;
        break;
    }
    case QC_FIXED: {
        static const char *const keys[] = {"step", "bits", "signed", "offset", NULL};
        const qc_json *js, *jb, *jo;
        double st, off = 0.0;
        int sg, k;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((js = qc__need(b, kn, spec, "step")) == NULL || (jb = qc__need(b, kn, spec, "bits")) == NULL) return -1;
        if (qc__float_param(b, kn, "step", js, &st) < 0) return -1;
        if (st <= 0) return qc__fail(b->err, "%sFixed: step must be positive, got %s", b->where, js->text);
        if (qc__int_param(b, kn, "bits", jb, 1, 64, &iv) < 0) return -1;
        if ((jo = qc_json_get(spec, "offset")) != NULL && qc__float_param(b, kn, "offset", jo, &off) < 0) return -1;
        if (qc__bool_param(b, kn, "signed", spec, 1, &sg) < 0) return -1;
        c->bits = (int)iv;
        c->mode = sg;
        c->maxcode = qc__mask(c->bits);
        if (sg) {
            c->smin = c->bits == 64 ? INT64_MIN : -((int64_t)1 << (c->bits - 1));
            c->smax = c->bits == 64 ? INT64_MAX : ((int64_t)1 << (c->bits - 1)) - 1;
            c->fmin = -qc__pow2(c->bits - 1);
            c->fmax = qc__pow2(c->bits - 1);
        } else {
            c->smin = 0;
            c->smax = c->bits < 64 ? (int64_t)qc__mask(c->bits) : INT64_MAX;
            c->fmin = 0.0;
            c->fmax = qc__pow2(c->bits);
        }
        for (k = 0; k < 2; k++) {
            double ec = sg ? (k ? (double)c->smax : (double)c->smin) : (k ? (double)c->maxcode : 0.0);
            if (!qc__isfinite(off + ec * st))
                return qc__fail(b->err, "%sFixed: code %s would decode to a non-finite value (offset + code * step overflows)",
                                b->where, k ? "max" : "min");
        }
        c->lo = off; c->hi = st;
        c->p1 = st; c->p2 = off;
        break;
    }
    case QC_ANGLE: {
        static const char *const keys[] = {"bits", "signed", "unit", NULL};
        const qc_json *jb, *ju;
        int sg;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((jb = qc__need(b, kn, spec, "bits")) == NULL) return -1;
        if (qc__int_param(b, kn, "bits", jb, 1, 32, &iv) < 0) return -1;
        ju = qc_json_get(spec, "unit");
        if (ju != NULL && !(ju->type == QC_JSON_STRING && (strcmp(ju->text, "rad") == 0 || strcmp(ju->text, "deg") == 0)))
            return qc__fail(b->err, "%sAngle: unit must be 'rad' or 'deg', got %s", b->where,
                            ju->type == QC_JSON_STRING ? ju->text : qc__jtype_name(ju));
        if (qc__bool_param(b, kn, "signed", spec, 0, &sg) < 0) return -1;
        c->bits = (int)iv;
        c->mode = sg;
        c->deg = ju != NULL && strcmp(ju->text, "deg") == 0;
        c->lo = c->deg ? 360.0 : 2.0 * 3.141592653589793;
        c->hi = c->lo / 2.0;
        c->L = qc__pow2(c->bits);
        break;
    }
    case QC_POWERCURVE: {
        static const char *const keys[] = {"max", "pow", "bits", NULL};
        const qc_json *jm, *jp, *jb;
        double m, p;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((jm = qc__need(b, kn, spec, "max")) == NULL || (jp = qc__need(b, kn, spec, "pow")) == NULL ||
            (jb = qc__need(b, kn, spec, "bits")) == NULL) return -1;
        if (qc__float_param(b, kn, "max", jm, &m) < 0 || qc__float_param(b, kn, "pow", jp, &p) < 0 ||
            qc__int_param(b, kn, "bits", jb, 2, 32, &iv) < 0) return -1;
        if (m <= 0) return qc__fail(b->err, "%sPowerCurve: max must be positive, got %s", b->where, jm->text);
        if (p < 1) return qc__fail(b->err, "%sPowerCurve: pow must be at least 1, got %s", b->where, jp->text);
        c->bits = (int)iv;
        c->lo = m; c->hi = p; c->R = 1.0 / p;
        c->L = qc__pow2(c->bits - 1) - 1.0;
        c->p1 = m; c->p2 = p;
        break;
    }
    case QC_HALF: case QC_BOOL: {
        static const char *const keys[] = {NULL};
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        c->bits = c->kind == QC_HALF ? 16 : 1;
        break;
    }
    case QC_UINT: case QC_INT: {
        static const char *const keys[] = {"bits", NULL};
        const qc_json *jb;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((jb = qc__need(b, kn, spec, "bits")) == NULL) return -1;
        if (qc__int_param(b, kn, "bits", jb, 1, 64, &iv) < 0) return -1;
        c->bits = (int)iv;
        if (c->kind == QC_INT) {
            c->smin = c->bits == 64 ? INT64_MIN : -((int64_t)1 << (c->bits - 1));
            c->smax = c->bits == 64 ? INT64_MAX : ((int64_t)1 << (c->bits - 1)) - 1;
        }
        break;
    }
    case QC_INTRANGE: {
        static const char *const keys[] = {"hi", "lo", NULL};
        const qc_json *jlo, *jhi;
        int64_t lo, hi;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((jlo = qc__need(b, kn, spec, "lo")) == NULL || (jhi = qc__need(b, kn, spec, "hi")) == NULL) return -1;
        if (qc__int_param(b, kn, "lo", jlo, INT64_MIN, INT64_MAX, &lo) < 0 ||
            qc__int_param(b, kn, "hi", jhi, INT64_MIN, INT64_MAX, &hi) < 0) return -1;
        if (lo >= hi) return qc__fail(b->err, "%sIntRange: lo must be less than hi, got lo=%s, hi=%s", b->where, jlo->text, jhi->text);
        if ((uint64_t)hi - (uint64_t)lo >= ((uint64_t)1 << 63))
            return qc__fail(b->err, "%sIntRange: hi - lo must be below 2**63 (lo=%s, hi=%s)", b->where, jlo->text, jhi->text);
        c->smin = lo; c->smax = hi;
        c->maxcode = (uint64_t)hi - (uint64_t)lo;
        c->bits = qc__bitlen(c->maxcode);
        break;
    }
    case QC_ENUM: {
        const qc_json *jl = qc_json_get(spec, "labels"), *jc = qc_json_get(spec, "count");
        static const char *const keys_l[] = {"labels", NULL};
        static const char *const keys_c[] = {"count", NULL};
        uint64_t n;
        size_t i, j, at;
        unsigned cp;
        if (jl == NULL && jc == NULL) return qc__fail(b->err, "%sEnum spec is missing 'count'", b->where);
        if (qc__check_keys(b, kn, spec, jl != NULL ? keys_l : keys_c) < 0) return -1;
        v = jl != NULL ? jl : jc;
        if (v->type == QC_JSON_NUMBER && v->is_int) {
            if (qc__int_param(b, kn, "count", v, 1, (int64_t)1 << 32, &iv) < 0) return -1;
            n = (uint64_t)iv;
        } else if (v->type == QC_JSON_ARRAY) {
            n = v->nkids;
            if (n == 0) return qc__fail(b->err, "%sEnum: labels must not be empty", b->where);
            c->labels = (char **)qc__arena_alloc(b->a, n * sizeof(char *));
            if (c->labels == NULL) return qc__fail(b->err, "out of memory");
            for (i = 0; i < n; i++) {
                if (v->kids[i].type != QC_JSON_STRING)
                    return qc__fail(b->err, "%sEnum: labels must be strings, got %s", b->where, qc__jtype_name(&v->kids[i]));
                if (strlen(v->kids[i].text) != v->kids[i].len)
                    return qc__fail(b->err, "%sEnum labels must not contain U+0000 (NUL), label %lu does", b->where, (unsigned long)i);
                if (qc__lone_surrogate(v->kids[i].text, v->kids[i].len, &at, &cp))
                    return qc__fail(b->err, "%sEnum labels must be Unicode text: a lone surrogate U+%04X at character %lu, label %lu",
                                    b->where, cp, (unsigned long)at, (unsigned long)i);
                for (j = 0; j < i; j++)
                    if (strcmp(v->kids[j].text, v->kids[i].text) == 0)
                        return qc__fail(b->err, "%sEnum: duplicate labels ['%s']", b->where, v->kids[i].text);
                c->labels[i] = (char *)v->kids[i].text;     /* (copied below) */
                c->labels[i] = qc__arena_strdup(b->a, v->kids[i].text, v->kids[i].len);
                if (c->labels[i] == NULL) return qc__fail(b->err, "out of memory");
            }
        } else {
            return qc__fail(b->err, "%sEnum: expected a list of labels or a count, got %s", b->where, qc__jtype_name(v));
        }
        c->count = n;
        c->bits = qc__bitlen(n - 1);
        c->maxcode = n - 1;
        break;
    }
    case QC_QUAT: {
        static const char *const keys[] = {"bits", "mode", NULL};
        const qc_json *jb;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        iv = 9;
        if ((jb = qc_json_get(spec, "bits")) != NULL && qc__int_param(b, kn, "bits", jb, 2, 20, &iv) < 0) return -1;
        if (qc__mode_param(b, kn, spec, &c->mode) < 0) return -1;
        c->cbits = (int)iv;
        c->bits = 2 + 3 * c->cbits;
        c->lo = -QC__SQRT1_2; c->hi = QC__SQRT1_2; c->R = QC__SQRT1_2 - (-QC__SQRT1_2);
        c->L = c->mode == 1 ? qc__pow2(c->cbits) : qc__pow2(c->cbits) - (c->mode == 2 ? 2.0 : 1.0);
        c->maxcode = qc__mask(c->bits);
        return 0;
    }
    case QC_UNITVECTOR: {
        static const char *const keys[] = {"bits", NULL};
        const qc_json *jb;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((jb = qc__need(b, kn, spec, "bits")) == NULL) return -1;
        if (qc__int_param(b, kn, "bits", jb, 2, 32, &iv) < 0) return -1;
        c->cbits = (int)iv;
        c->bits = 2 * c->cbits;
        c->lo = -1.0; c->hi = 1.0; c->R = 2.0; c->L = qc__pow2(c->cbits) - 1.0;
        c->maxcode = qc__mask(c->bits);
        return 0;
    }
    case QC_GRID: {
        static const char *const keys[] = {"cell_size", "cell_bits", "offset_bits", NULL};
        const qc_json *jc, *jcb, *job;
        double cs;
        int64_t cb, ob;
        int k;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if ((jc = qc__need(b, kn, spec, "cell_size")) == NULL || (jcb = qc__need(b, kn, spec, "cell_bits")) == NULL ||
            (job = qc__need(b, kn, spec, "offset_bits")) == NULL) return -1;
        if (qc__float_param(b, kn, "cell_size", jc, &cs) < 0) return -1;
        if (cs <= 0) return qc__fail(b->err, "%sGrid: cell_size must be positive, got %s", b->where, jc->text);
        if (qc__int_param(b, kn, "cell_bits", jcb, 1, 63, &cb) < 0 || qc__int_param(b, kn, "offset_bits", job, 1, 63, &ob) < 0) return -1;
        if (cb + ob > 64)
            return qc__fail(b->err, "%sGrid: cell_bits + offset_bits must be at most 64, got %d + %d = %d", b->where, (int)cb, (int)ob, (int)(cb + ob));
        for (k = 0; k < 2; k++) {
            double ecell = k ? (double)(((int64_t)1 << (cb - 1)) - 1) : -qc__pow2((int)cb - 1);
            double eoff = k ? (double)qc__mask((int)ob) : 0.0;
            if (!qc__isfinite((ecell + (eoff + 0.5) / qc__pow2((int)ob)) * cs))
                return qc__fail(b->err, "%sGrid: cell_size * 2**(cell_bits - 1) overflows", b->where);
        }
        c->bits = (int)(cb + ob);
        c->cbits = (int)ob;
        c->cell_bits = (int)cb;
        c->lo = cs;
        c->L = qc__pow2((int)ob);
        c->smin = -((int64_t)1 << (cb - 1));
        c->smax = ((int64_t)1 << (cb - 1)) - 1;
        c->fmin = -qc__pow2((int)cb - 1);
        c->fmax = qc__pow2((int)cb - 1);
        c->p1 = cs;
        break;
    }
    case QC_VECTOR: {
        static const char *const keys[] = {"codecs", NULL};
        const qc_json *jc;
        size_t i;
        int any_signed = 0, any_u64 = 0;
        if ((jc = qc__need(b, kn, spec, "codecs")) == NULL) return -1;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if (jc->type != QC_JSON_ARRAY)
            return qc__fail(b->err, "%sVector: codecs must be a list of codec specs, got %s", b->where, qc__jtype_name(jc));
        for (i = 0; i < jc->nkids; i++) {
            int k = qc__nested_kind(&jc->kids[i]);
            if (k != 0 && !qc__is_scalar_kind(k))
                return qc__fail(b->err, "%sVector: component %lu must be a scalar codec, got a %s spec", b->where, (unsigned long)i, qc__kind_names[k]);
        }
        if (jc->nkids == 0) return qc__fail(b->err, "%sVector: needs at least one component codec", b->where);
        if (jc->nkids > 65535)
            return qc__fail(b->err, "%sa Vector has at most 65535 components, got %lu", b->where, (unsigned long)jc->nkids);
        c->ninner = (int)jc->nkids;
        c->inner = (qc_codec *)qc__arena_alloc(b->a, jc->nkids * sizeof(qc_codec));
        if (c->inner == NULL) return qc__fail(b->err, "out of memory");
        c->bits = 0;
        for (i = 0; i < jc->nkids; i++) {
            qc_codec *ic = &c->inner[i];
            if (qc__build_codec(b, &jc->kids[i], ic, depth + 1) < 0) return -1;
            if (!qc__is_scalar_kind(ic->kind))
                return qc__fail(b->err, "%sVector: component %lu must be a scalar codec", b->where, (unsigned long)i);
            c->bits += ic->bits;
            if (ic->kind == QC_INT || (ic->kind == QC_FIXED && ic->mode)) any_signed = 1;
            if (ic->bits == 64 && (ic->kind == QC_UINT || (ic->kind == QC_FIXED && !ic->mode) || ic->kind == QC_GRID)) any_u64 = 1;
        }
        if (any_signed && any_u64)
            return qc__fail(b->err, "%sVector: a 64-bit unsigned component cannot share one code array with signed components; use separate fields", b->where);
        return 0;
    }
    case QC_NEARLYZERO: {
        static const char *const keys[] = {"inner", "threshold", NULL};
        const qc_json *ji = qc_json_get(spec, "inner"), *jt;
        int k = ji != NULL ? qc__nested_kind(ji) : 0;
        double t;
        if (k != 0 && !qc__is_scalar_kind(k) && k != QC_VECTOR)
            return qc__fail(b->err, "%sNearlyZero: inner must be a scalar codec or a Vector, got a %s spec", b->where, qc__kind_names[k]);
        if ((ji = qc__need(b, kn, spec, "inner")) == NULL) return -1;
        c->inner = (qc_codec *)qc__arena_alloc(b->a, sizeof(qc_codec));
        if (c->inner == NULL) return qc__fail(b->err, "out of memory");
        c->ninner = 1;
        if (qc__build_codec(b, ji, c->inner, depth + 1) < 0) return -1;
        if ((jt = qc__need(b, kn, spec, "threshold")) == NULL) return -1;
        if (qc__check_keys(b, kn, spec, keys) < 0) return -1;
        if (!qc__is_scalar_kind(c->inner->kind) && c->inner->kind != QC_VECTOR)
            return qc__fail(b->err, "%sNearlyZero: inner must be a scalar codec or a Vector", b->where);
        if (qc__float_param(b, kn, "threshold", jt, &t) < 0) return -1;
        if (t < 0) return qc__fail(b->err, "%sNearlyZero: threshold must be non-negative, got %s", b->where, jt->text);
        {
            double r;
            if (qc__reach(c->inner, &r) && t >= r)
                return qc__fail(b->err, "%sNearlyZero: threshold %.17g covers the whole range of its inner %s (no decoded "
                                "value is farther than %.17g from zero): every value would be sent as zero; the threshold "
                                "must be below that", b->where, t, qc__kind_names[c->inner->kind], r);
        }
        c->p1 = t;
        c->bits = 1 + c->inner->bits;
        return 0;
    }
    default:
        break;
    }
    (void)depth;
    if (c->kind != QC_ENUM && c->kind != QC_FIXED && c->kind != QC_INTRANGE) c->maxcode = qc__mask(c->bits);
    if (c->kind == QC_BOUNDED && c->mode == 2) c->maxcode -= 1;    /* midpoint: 2**bits - 1 is no code */
    return 0;
}

/* ---- canonical JSON (the fingerprint) -------------------------------------------------------- */

typedef struct qc__out { char *buf; size_t n, cap; } qc__out;

static void qc__emit(qc__out *o, const char *s, size_t n) {
    if (o->buf != NULL && o->n + n <= o->cap) memcpy(o->buf + o->n, s, n);
    o->n += n;
}
static void qc__emits(qc__out *o, const char *s) { qc__emit(o, s, strlen(s)); }

static void qc__emit_str(qc__out *o, const char *s) {   /* json.dumps(ensure_ascii=True) */
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), i = 0;
    char tmp[16];
    qc__emit(o, "\"", 1);
    while (i < n) {
        unsigned cp;
        size_t l = qc__utf8_get(p + i, n - i, &cp);
        if (l == 0) {      /* a lone surrogate from a \u escape, kept as 3 bytes (WTF-8) */
            cp = ((unsigned)(p[i] & 0x0F) << 12) | ((unsigned)(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
            l = 3;
        }
        i += l;
        if (cp == '"') qc__emits(o, "\\\"");
        else if (cp == '\\') qc__emits(o, "\\\\");
        else if (cp == '\n') qc__emits(o, "\\n");
        else if (cp == '\r') qc__emits(o, "\\r");
        else if (cp == '\t') qc__emits(o, "\\t");
        else if (cp == '\b') qc__emits(o, "\\b");
        else if (cp == '\f') qc__emits(o, "\\f");
        else if (cp >= 0x20 && cp < 0x7F) { tmp[0] = (char)cp; qc__emit(o, tmp, 1); }
        else if (cp < 0x10000) { sprintf(tmp, "\\u%04x", cp); qc__emits(o, tmp); }
        else {
            unsigned v = cp - 0x10000;
            sprintf(tmp, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            qc__emits(o, tmp);
        }
    }
    qc__emit(o, "\"", 1);
}

static void qc__emit_hex(qc__out *o, double x) {
    char tmp[40];
    int n = qc_float_hex(x, tmp);
    qc__emit(o, "\"", 1);
    qc__emit(o, tmp, (size_t)n);
    qc__emit(o, "\"", 1);
}

static void qc__emit_int(qc__out *o, long long v) {
    char tmp[32];
    sprintf(tmp, "%lld", v);
    qc__emits(o, tmp);
}

/* The codec's spec(), keys sorted, floats as float.hex strings, compact. */
static void qc__emit_codec(qc__out *o, const qc_codec *c) {
    int i;
    switch (c->kind) {
    case QC_BOUNDED:
        qc__emits(o, "{\"bits\":"); qc__emit_int(o, c->bits);
        qc__emits(o, ",\"kind\":\"Bounded\",\"max\":"); qc__emit_hex(o, c->p2);
        qc__emits(o, ",\"min\":"); qc__emit_hex(o, c->p1);
        qc__emits(o, c->mode == 2 ? ",\"mode\":\"midpoint\"}" : c->mode ? ",\"mode\":\"bins\"}" : ",\"mode\":\"endpoints\"}");
        break;
    case QC_FIXED:
        qc__emits(o, "{\"bits\":"); qc__emit_int(o, c->bits);
        qc__emits(o, ",\"kind\":\"Fixed\",\"offset\":"); qc__emit_hex(o, c->p2);
        qc__emits(o, c->mode ? ",\"signed\":true,\"step\":" : ",\"signed\":false,\"step\":"); qc__emit_hex(o, c->p1);
        qc__emits(o, "}");
        break;
    case QC_ANGLE:
        qc__emits(o, "{\"bits\":"); qc__emit_int(o, c->bits);
        qc__emits(o, c->mode ? ",\"kind\":\"Angle\",\"signed\":true" : ",\"kind\":\"Angle\",\"signed\":false");
        qc__emits(o, c->deg ? ",\"unit\":\"deg\"}" : ",\"unit\":\"rad\"}");
        break;
    case QC_POWERCURVE:
        qc__emits(o, "{\"bits\":"); qc__emit_int(o, c->bits);
        qc__emits(o, ",\"kind\":\"PowerCurve\",\"max\":"); qc__emit_hex(o, c->p1);
        qc__emits(o, ",\"pow\":"); qc__emit_hex(o, c->p2);
        qc__emits(o, "}");
        break;
    case QC_HALF: qc__emits(o, "{\"kind\":\"Half\"}"); break;
    case QC_BOOL: qc__emits(o, "{\"kind\":\"Bool\"}"); break;
    case QC_UINT: case QC_INT:
        qc__emits(o, "{\"bits\":"); qc__emit_int(o, c->bits);
        qc__emits(o, c->kind == QC_UINT ? ",\"kind\":\"UInt\"}" : ",\"kind\":\"Int\"}");
        break;
    case QC_INTRANGE:
        qc__emits(o, "{\"hi\":"); qc__emit_int(o, (long long)c->smax);
        qc__emits(o, ",\"kind\":\"IntRange\",\"lo\":"); qc__emit_int(o, (long long)c->smin);
        qc__emits(o, "}");
        break;
    case QC_ENUM:
        if (c->labels == NULL) {
            qc__emits(o, "{\"count\":"); qc__emit_int(o, (long long)c->count); qc__emits(o, ",\"kind\":\"Enum\"}");
        } else {
            uint64_t k;
            qc__emits(o, "{\"kind\":\"Enum\",\"labels\":[");
            for (k = 0; k < c->count; k++) {
                if (k) qc__emits(o, ",");
                qc__emit_str(o, c->labels[k]);
            }
            qc__emits(o, "]}");
        }
        break;
    case QC_QUAT:
        qc__emits(o, "{\"bits\":"); qc__emit_int(o, c->cbits);
        qc__emits(o, c->mode == 2 ? ",\"kind\":\"Quat\",\"mode\":\"midpoint\"}" : c->mode ? ",\"kind\":\"Quat\",\"mode\":\"bins\"}"
                     : ",\"kind\":\"Quat\",\"mode\":\"endpoints\"}");
        break;
    case QC_UNITVECTOR:
        qc__emits(o, "{\"bits\":"); qc__emit_int(o, c->cbits); qc__emits(o, ",\"kind\":\"UnitVector\"}");
        break;
    case QC_GRID:
        qc__emits(o, "{\"cell_bits\":"); qc__emit_int(o, c->cell_bits);
        qc__emits(o, ",\"cell_size\":"); qc__emit_hex(o, c->p1);
        qc__emits(o, ",\"kind\":\"Grid\",\"offset_bits\":"); qc__emit_int(o, c->cbits);
        qc__emits(o, "}");
        break;
    case QC_VECTOR:
        qc__emits(o, "{\"codecs\":[");
        for (i = 0; i < c->ninner; i++) {
            if (i) qc__emits(o, ",");
            qc__emit_codec(o, &c->inner[i]);
        }
        qc__emits(o, "],\"kind\":\"Vector\"}");
        break;
    case QC_NEARLYZERO:
        qc__emits(o, "{\"inner\":"); qc__emit_codec(o, c->inner);
        qc__emits(o, ",\"kind\":\"NearlyZero\",\"threshold\":"); qc__emit_hex(o, c->p1);
        qc__emits(o, "}");
        break;
    default: break;
    }
}

static void qc__emit_schema(qc__out *o, const qc_schema *s) {
    int f;
    qc__emits(o, "{\"fields\":[");
    for (f = 0; f < s->nfields; f++) {
        if (f) qc__emits(o, ",");
        qc__emits(o, "{\"codec\":");
        qc__emit_codec(o, s->fields[f].codec);
        qc__emits(o, ",\"name\":");
        qc__emit_str(o, s->fields[f].name);
        qc__emits(o, "}");
    }
    qc__emits(o, "],\"name\":");
    qc__emit_str(o, s->name);
    qc__emits(o, ",\"version\":");
    qc__emits(o, s->version_text);
    qc__emits(o, "}");
}

/* A field name: ASCII [A-Za-z_][A-Za-z0-9_]*, n bytes (docs/schema-format.md, "One reading", R2:
   not "a Python identifier", which each language and Unicode version read otherwise). */
static int qc__is_identifier(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t k;
    if (n == 0 || (p[0] >= '0' && p[0] <= '9')) return 0;
    for (k = 0; k < n; k++) {
        if (!((p[k] >= 'a' && p[k] <= 'z') || (p[k] >= 'A' && p[k] <= 'Z') || (p[k] >= '0' && p[k] <= '9') || p[k] == '_'))
            return 0;
    }
    return 1;
}

/* s (n bytes, UTF-8) quoted for a message as Python's repr() would show it in ASCII: printable
   ASCII as is, the rest escaped (\xNN, \uNNNN, \UNNNNNNNN); cut with "..." to fit cap. */
static const char *qc__quoted(const char *s, size_t n, char *out, size_t cap) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;
    out[o++] = '\'';
    while (i < n && o + 16 < cap) {
        unsigned cp;
        size_t l = qc__utf8_get(p + i, n - i, &cp);
        if (l == 0) {       /* a lone surrogate from a \u escape (WTF-8), or any other byte */
            if (n - i >= 3 && p[i] == 0xED) { cp = ((unsigned)(p[i] & 0x0F) << 12) | ((unsigned)(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F); l = 3; }
            else { cp = p[i]; l = 1; }
        }
        i += l;
        if (cp == '\\' || cp == '\'') { out[o++] = '\\'; out[o++] = (char)cp; }
        else if (cp >= 0x20 && cp < 0x7F) out[o++] = (char)cp;
        else if (cp < 0x100) o += (size_t)sprintf(out + o, "\\x%02x", cp);
        else if (cp < 0x10000) o += (size_t)sprintf(out + o, "\\u%04x", cp);
        else o += (size_t)sprintf(out + o, "\\U%08x", cp);
    }
    if (i < n) { memcpy(out + o, "...", 3); o += 3; }
    out[o++] = '\'';
    out[o] = 0;
    return out;
}

/* The slots and components of a codec (wire-format section 2). */
static void qc__add_slots(qc_schema *s, const qc_codec *c, int field, int *ns, int *nc, int fill) {
    int i;
    if (c->kind == QC_VECTOR) {
        for (i = 0; i < c->ninner; i++) qc__add_slots(s, &c->inner[i], field, ns, nc, fill);
        return;
    }
    if (c->kind == QC_NEARLYZERO) {
        int flag = *ns;
        (*ns)++;
        qc__add_slots(s, c->inner, field, ns, nc, fill);
        if (fill) {
            qc_slot *sl = &s->slots[flag];
            sl->codec = NULL; sl->bits = 1; sl->field = field; sl->span = *ns - flag - 1;
            sl->sign = 0; sl->role = QC_ROLE_FLAG; sl->comp = -1;
        }
        return;
    }
    if (fill) {
        qc_slot *sl = &s->slots[*ns];
        sl->codec = c; sl->bits = c->bits; sl->field = field; sl->span = 0;
        sl->sign = c->kind == QC_INT || (c->kind == QC_FIXED && c->mode);
        sl->comp = -1;
        switch (c->kind) {
        case QC_QUAT: sl->role = QC_ROLE_QUAT; break;
        case QC_UNITVECTOR: sl->role = QC_ROLE_UVEC; break;
        case QC_BOOL: case QC_ENUM: sl->role = QC_ROLE_ABS; break;
        default: sl->role = QC_ROLE_ORD; break;
        }
        if (sl->role != QC_ROLE_ABS) sl->comp = *nc;
        if (sl->role == QC_ROLE_ORD) {
            qc_comp *cp = &s->comps[*nc];
            cp->slot = *ns; cp->shift = 0; cp->b = c->bits; cp->smag = c->kind == QC_POWERCURVE || c->kind == QC_HALF;
            cp->mask = qc__mask(cp->b); cp->smt = cp->smag ? qc__mask(cp->b - 1) : 0;
        } else if (sl->role == QC_ROLE_QUAT || sl->role == QC_ROLE_UVEC) {
            int k, m = sl->role == QC_ROLE_QUAT ? 3 : 2;
            for (k = 0; k < m; k++) {
                qc_comp *cp = &s->comps[*nc + k];
                cp->slot = *ns; cp->shift = (m - 1 - k) * c->cbits; cp->b = c->cbits; cp->smag = 0;
                cp->mask = qc__mask(cp->b); cp->smt = 0;
            }
        }
    }
    if (c->kind == QC_QUAT) *nc += 3;
    else if (c->kind == QC_UNITVECTOR) *nc += 2;
    else if (c->kind != QC_BOOL && c->kind != QC_ENUM) *nc += 1;
    (*ns)++;
}

int qc_schema_parse(qc_schema *s, const char *json, size_t len, const qc_allocator *al, qc_error *err) {
    QC__NOFMA
    qc__arena a, tmp;
    qc_json *root;
    const qc_json *jn, *jv, *jf;
    qc__sb b;
    size_t k, nf, at;
    unsigned cp;
    int f, ns = 0, nc = 0;
    char where[200];
    memset(s, 0, sizeof *s);
    a.al = qc__allocator_of(al); a.head = NULL;
    tmp.al = a.al; tmp.head = NULL;
    b.a = &a; b.err = err; b.where = "";
    root = qc__json_parse_arena(json, len, &tmp, err);
    if (root == NULL) goto fail;
    if (root->type != QC_JSON_OBJECT) { qc__fail(err, "schema spec must be an object, got %s", qc__jtype_name(root)); goto fail; }
    for (k = 0; k < root->nkids; k++) {
        const char *key = root->kids[k].key;
        if (strcmp(key, "name") && strcmp(key, "version") && strcmp(key, "fields")) {
            qc__fail(err, "schema spec has unknown key '%s' (expected name, version, fields)", key);
            goto fail;
        }
    }
    jn = qc_json_get(root, "name");
    jf = qc_json_get(root, "fields");
    jv = qc_json_get(root, "version");
    if (jn == NULL) { qc__fail(err, "schema spec is missing 'name'"); goto fail; }
    if (jf == NULL) { qc__fail(err, "schema spec is missing 'fields'"); goto fail; }
    if (jn->type != QC_JSON_STRING || jn->len == 0) { qc__fail(err, "schema name must be a non-empty string, got %s", qc__jtype_name(jn)); goto fail; }
    if (strlen(jn->text) != jn->len) { qc__fail(err, "schema name must not contain U+0000 (NUL)"); goto fail; }
    if (qc__lone_surrogate(jn->text, jn->len, &at, &cp)) {
        qc__fail(err, "schema name must be Unicode text: a lone surrogate U+%04X at character %lu", cp, (unsigned long)at);
        goto fail;
    }
    s->name = qc__arena_strdup(&a, jn->text, jn->len);
    if (jv == NULL) {
        s->version_text = "1";
        s->version32 = 1;
    } else {
        uint32_t v32 = 0;
        /* an integer literal 0 .. 2**63 - 1, compared as digits (JSON has no leading zeros); -0 is 0
           (jv->neg is 0 for it), written "0" in the canonical JSON as Python's int gives it */
        const char *dg = jv->type == QC_JSON_NUMBER && jv->text[0] == '-' ? jv->text + 1 : jv->text;
        size_t nd = jv->type == QC_JSON_NUMBER ? jv->len - (size_t)(dg - jv->text) : 0;
        if (jv->type != QC_JSON_NUMBER || !jv->is_int || jv->neg ||
            nd > 19 || (nd == 19 && memcmp(dg, "9223372036854775807", 19) > 0)) {
            char q[64];
            if (jv->type == QC_JSON_NUMBER && jv->len > 40) snprintf(q, sizeof q, "%.20s... (%lu digits)", jv->text, (unsigned long)nd);
            qc__fail(err, "schema version must be an integer from 0 to 2**63 - 1, got %s",
                     jv->type != QC_JSON_NUMBER ? qc__jtype_name(jv) : jv->len > 40 ? q : jv->text);
            goto fail;
        }
        for (k = 0; k < nd; k++) v32 = v32 * 10u + (uint32_t)(dg[k] - '0');
        s->version_text = qc__arena_strdup(&a, dg, nd);
        s->version32 = v32;
    }
    if (jf->type != QC_JSON_ARRAY && jf->type != QC_JSON_OBJECT) {
        qc__fail(err, "fields must be a dict or a list of (name, codec) pairs, got %s", qc__jtype_name(jf));
        goto fail;
    }
    nf = jf->nkids;
    if (nf == 0) { qc__fail(err, "a schema needs at least one field"); goto fail; }
    if (nf > 65535) { qc__fail(err, "a schema has at most 65535 fields, got %lu", (unsigned long)nf); goto fail; }
    s->nfields = (int)nf;
    s->fields = (qc_field *)qc__arena_alloc(&a, nf * sizeof(qc_field));
    s->codecs = (qc_codec *)qc__arena_alloc(&a, nf * sizeof(qc_codec));
    if (s->name == NULL || s->version_text == NULL || s->fields == NULL || s->codecs == NULL) { qc__fail(err, "out of memory"); goto fail; }
    memset(s->fields, 0, nf * sizeof(qc_field));
    for (k = 0; k < nf; k++) {
        const qc_json *item = &jf->kids[k], *fname, *fcodec;
        size_t j;
        if (jf->type == QC_JSON_OBJECT) {
            fname = NULL;
            fcodec = item;
        } else if (item->type == QC_JSON_OBJECT) {
            int ok = item->nkids == 2 && qc_json_get(item, "name") != NULL && qc_json_get(item, "codec") != NULL;
            if (!ok) { qc__fail(err, "field %lu: expected keys 'name' and 'codec'", (unsigned long)k); goto fail; }
            fname = qc_json_get(item, "name");
            fcodec = qc_json_get(item, "codec");
        } else if (item->type == QC_JSON_ARRAY && item->nkids == 2) {
            fname = &item->kids[0];
            fcodec = &item->kids[1];
        } else {
            qc__fail(err, "field %lu: expected a (name, codec) pair, got %s", (unsigned long)k, qc__jtype_name(item));
            goto fail;
        }
        {
            const char *nm = fname != NULL ? (fname->type == QC_JSON_STRING ? fname->text : NULL) : item->key;
            size_t nl = fname != NULL ? fname->len : strlen(item->key);
            if (nm == NULL || !qc__is_identifier(nm, nl)) {
                char q[96];
                qc__fail(err, "field names must be ASCII identifiers (letters A-Z and a-z, digits and _, not starting "
                         "with a digit), got %s", nm != NULL ? qc__quoted(nm, nl, q, sizeof q) : qc__jtype_name(fname));
                goto fail;
            }
            for (j = 0; j < k; j++)
                if (strcmp(s->fields[j].name, nm) == 0) { qc__fail(err, "duplicate field name '%s'", nm); goto fail; }
            s->fields[k].name = qc__arena_strdup(&a, nm, nl);
            if (s->fields[k].name == NULL) { qc__fail(err, "out of memory"); goto fail; }
        }
        if (fcodec->type != QC_JSON_OBJECT) {
            qc__fail(err, "field '%s': expected a codec (or a codec spec dict), got %s", s->fields[k].name, qc__jtype_name(fcodec));
            goto fail;
        }
        snprintf(where, sizeof where, "field '%s': ", s->fields[k].name);
        b.where = where;
        if (qc__build_codec(&b, fcodec, &s->codecs[k], 0) < 0) goto fail;
        s->fields[k].codec = &s->codecs[k];
    }
    s->ncodecs = (int)nf;
    /* slots and components */
    for (f = 0; f < s->nfields; f++) qc__add_slots(s, s->fields[f].codec, f, &ns, &nc, 0);
    s->slots = (qc_slot *)qc__arena_alloc(&a, (size_t)(ns + 1) * sizeof(qc_slot));
    s->comps = (qc_comp *)qc__arena_alloc(&a, (size_t)(nc + 1) * sizeof(qc_comp));
    if (s->slots == NULL || s->comps == NULL) { qc__fail(err, "out of memory"); goto fail; }
    ns = 0; nc = 0;
    s->max_bits = 0; s->min_bits = 0;
    for (f = 0; f < s->nfields; f++) {
        qc_field *fd = &s->fields[f];
        int i;
        fd->first_slot = ns;
        fd->first_comp = nc;
        qc__add_slots(s, fd->codec, f, &ns, &nc, 1);
        fd->nslots = ns - fd->first_slot;
        fd->ncomps = nc - fd->first_comp;
        fd->nvalues = qc_nvalues(fd->codec);
        fd->implied_flag = fd->codec->kind == QC_NEARLYZERO;
        fd->implied_flip = fd->nslots == 1 && s->slots[fd->first_slot].role == QC_ROLE_ABS && s->slots[fd->first_slot].bits == 1;
        for (i = fd->first_slot; i < ns; i++) {
            s->max_bits += s->slots[i].bits;
            if (!(i > fd->first_slot && fd->implied_flag)) s->min_bits += s->slots[i].bits;
        }
    }
    s->nslots = ns;
    s->ncomps = nc;
    /* how each slot's codes are checked: 0 every code of its width is valid (full-range
       Bounded, Fixed, Angle, UInt, Int, Grid, Half, Bool, UnitVector, an Enum of 2**bits);
       1 the codec's valid(); 2 a PowerCurve (every code but the negative zero); 4 a Quat through a table of its component codes' shrunk values
       (quat_valid's arithmetic, value for value); 6 a flag */
    for (f = 0; f < ns; f++) {
        qc_slot *sl = &s->slots[f];
        const qc_codec *c = sl->codec;
        sl->qtab = NULL;
        sl->qsq = NULL;
        if (sl->role == QC_ROLE_FLAG) sl->vclass = 6;
        else if (c->kind == QC_POWERCURVE) sl->vclass = 2;
        else if (c->kind == QC_ENUM) sl->vclass = c->count == ((uint64_t)1 << c->bits) ? 0 : 1;
        else if (c->kind == QC_INTRANGE) sl->vclass = c->maxcode == qc__mask(c->bits) ? 0 : 1;
        else if (c->kind == QC_BOUNDED && c->mode == 2) sl->vclass = 1;     /* midpoint: no 2**bits - 1 */
        else if (c->kind == QC_QUAT) {
            sl->vclass = 1;
            if (c->cbits <= 12) {
                size_t j, nq = (size_t)1 << c->cbits;
                double *t = (double *)qc__arena_alloc(&a, nq * sizeof(double));
                uint32_t *q;
                double st = c->R / c->L;
                if (t == NULL) { qc__fail(err, "out of memory"); goto fail; }
                /* a code above the mode's top (midpoint: 2**cbits - 1) is no level: 2.0 fails the test */
                for (j = 0; j < nq; j++)
                    t[j] = (double)j <= c->L ? qc__quat_shrunk(qc__bounded_dqd((double)j, c->lo, c->hi, c->R, c->L, c->mode), st) : 2.0;
                sl->qtab = t;
                sl->vclass = 4;
                /* t * t rounded is within a unit in the last place of the square, far less
                   than the 2 units added; the 2.0 of a code above the top gives the largest */
                q = (uint32_t *)qc__arena_alloc(&a, nq * sizeof(uint32_t));
                if (q == NULL) { qc__fail(err, "out of memory"); goto fail; }
                for (j = 0; j < nq; j++) {
                    double x = t[j] * t[j] * 4294967296.0;
                    q[j] = x < 4294967000.0 ? (uint32_t)((uint64_t)x + 2) : 0xFFFFFFFFu;
                }
                sl->qsq = q;
            }
        } else sl->vclass = 0;
    }
    /* canonical JSON, fingerprint, the fields' hashes */
    {
        qc__out o;
        uint8_t dg[32];
        int i;
        o.buf = NULL; o.n = 0; o.cap = 0;
        qc__emit_schema(&o, s);
        o.cap = o.n + 1;
        o.buf = (char *)qc__arena_alloc(&a, o.cap);
        if (o.buf == NULL) { qc__fail(err, "out of memory"); goto fail; }
        o.n = 0;
        qc__emit_schema(&o, s);
        o.buf[o.n] = 0;
        s->canonical = o.buf;
        s->canonical_len = o.n;
        qc_sha256((const uint8_t *)o.buf, o.n, dg);
        for (i = 0; i < 8; i++) sprintf(s->fingerprint + 2 * i, "%02x", dg[i]);
        for (f = 0; f < s->nfields; f++) {
            qc__out co;
            co.buf = NULL; co.n = 0; co.cap = 0;
            qc__emit_codec(&co, s->fields[f].codec);
            co.cap = co.n;
            co.buf = (char *)qc__arena_alloc(&tmp, co.cap + 1);
            if (co.buf == NULL) { qc__fail(err, "out of memory"); goto fail; }
            co.n = 0;
            qc__emit_codec(&co, s->fields[f].codec);
            qc_sha256((const uint8_t *)co.buf, co.n, dg);
            s->fields[f].h = (uint32_t)dg[0] | (uint32_t)dg[1] << 8 | (uint32_t)dg[2] << 16 | (uint32_t)dg[3] << 24;
        }
    }
    qc__arena_free(tmp.al, tmp.head);
    s->al = a.al;
    s->chunks = a.head;
    return 0;
fail:
    qc__arena_free(tmp.al, tmp.head);
    qc__arena_free(a.al, a.head);
    memset(s, 0, sizeof *s);
    return -1;
}

void qc_schema_free(qc_schema *s) {
    if (s == NULL) return;              /* like free(NULL) */
    if (s->chunks != NULL) qc__arena_free(s->al, (qc__chunk *)s->chunks);
    memset(s, 0, sizeof *s);
}

int qc_field_index(const qc_schema *s, const char *name) {
    int f;
    for (f = 0; f < s->nfields; f++) if (strcmp(s->fields[f].name, name) == 0) return f;
    return -1;
}

static const char *qc__role_name(int r) {
    switch (r) {
    case QC_ROLE_FLAG: return "flag";
    case QC_ROLE_ORD: return "ord";
    case QC_ROLE_QUAT: return "quat";
    case QC_ROLE_UVEC: return "uvec";
    default: return "abs";
    }
}

size_t qc_schema_slot_table(const qc_schema *s, char *buf, size_t cap) {
    size_t n = 0;
    int i;
    for (i = 0; i < s->nslots; i++) {
        const qc_slot *sl = &s->slots[i];
        char line[160];
        int l = snprintf(line, sizeof line, "slot %d: field %s %s %d bits %s%s\n", i, s->fields[sl->field].name,
                         sl->codec ? qc__kind_names[sl->codec->kind] : "flag", sl->bits, qc__role_name(sl->role),
                         sl->sign ? " signed" : "");
        if (l > 0 && n + (size_t)l < cap) memcpy(buf + n, line, (size_t)l);
        n += (size_t)(l > 0 ? l : 0);
    }
    if (cap) buf[n < cap ? n : cap - 1] = 0;
    return n;
}

int qc_field_values(const qc_schema *s, int field, const uint64_t *row, double *out) {
    const qc_field *fd;
    /* -1 (what qc_field_index gives for a name the schema lacks) or past the last: an error */
    if (field < 0 || field >= s->nfields) return -1;
    fd = &s->fields[field];
    qc__dq_codes(fd->codec, row + fd->first_slot, out);
    return 0;
}

/* ---- records (wire-format section 3) ---------------------------------------------------------- */

static const char *qc__slot_name(const qc_schema *s, int slot, char *buf, size_t cap) {
    const qc_slot *sl = &s->slots[slot];
    const qc_field *fd = &s->fields[sl->field];
    if (fd->nslots == 1) snprintf(buf, cap, "field '%s'", fd->name);
    else if (sl->role == QC_ROLE_FLAG) snprintf(buf, cap, "field '%s' (flag)", fd->name);
    else snprintf(buf, cap, "field '%s'[%d]", fd->name, slot - fd->first_slot - (fd->implied_flag ? 1 : 0));
    return buf;
}

QC__HOT uint64_t qc__sext(uint64_t w, int bits) {
    if (bits < 64 && bits > 0 && (w >> (bits - 1))) return w | (~(uint64_t)0 << bits);
    return w;
}

/* Valid only where qc__slot_ok says so, from q, an upper bound of each component code's
   shrunk value squared in units of 2**-32 (qc_slot.qsq): a sum of squares and the largest
   square together at most 1 - 2**-24 leave sqrt(1 - s) above the largest kept value by far
   more than the doubles' rounding; anything closer to the boundary takes the exact test. */
#define QC__QSQ_LIM ((((uint64_t)1) << 32) - (((uint64_t)1) << 8))
QC__HOT int qc__quat_surely_valid(const uint32_t *q, uint64_t a, uint64_t b, uint64_t c) {
    uint64_t x = q[a], y = q[b], z = q[c], big = x > y ? x : y;
    big = big > z ? big : z;
    return x + y + z + big <= QC__QSQ_LIM;
}

/* A code read from the wire (bits wide, sign-extended for signed slots) is valid. */
QC__HOT int qc__slot_ok(const qc_slot *sl, uint64_t v) {
    QC__NOFMA
    switch (sl->vclass) {
    case 0: return 1;
    case 6: return v <= 1;
    case 2: return !((v >> (sl->bits - 1)) && (v & (sl->codec->maxcode >> 1)) == 0);   /* PowerCurve: no -0 */
    case 4: {
        int cb = sl->codec->cbits;
        uint64_t m = (((uint64_t)1) << cb) - 1;
        double a, b, c, s, big;
        /* most codes: the integer test on the squares' bounds; the rest, the exact test */
        if (qc__quat_surely_valid(sl->qsq, (v >> (2 * cb)) & m, (v >> cb) & m, v & m)) return 1;
        a = sl->qtab[(v >> (2 * cb)) & m];
        b = sl->qtab[(v >> cb) & m];
        c = sl->qtab[v & m];
        s = (a * a + b * b) + c * c;
        big = c > 0.0 ? c : 0.0;
        big = b > big ? b : big;
        big = a > big ? a : big;
        return (!(s > 1.0)) & (sqrt(1.0 - s) >= big);
    }
    default: return qc_valid(sl->codec, v);
    }
}

static int qc__slot_valid(const qc_slot *sl, uint64_t c) {
    if (sl->role == QC_ROLE_FLAG) return c <= 1;
    return qc_valid(sl->codec, c);
}

int qc_record_encode(const qc_schema *s, const uint64_t *row, uint8_t *out, size_t cap, size_t *outlen, qc_error *err) {
    qc__bw w;
    int i;
    char nm[160];
    w.buf = out; w.cap = cap; w.pos = 0; w.overflow = 0;
    for (i = 0; i < s->nslots; i++) {
        const qc_slot *sl = &s->slots[i];
        if (!qc__slot_valid(sl, row[i])) {
            qc__fail(err, "%s: code %llu is not valid", qc__slot_name(s, i, nm, sizeof nm), (unsigned long long)row[i]);
            return -1;
        }
        if (sl->role == QC_ROLE_FLAG && row[i] == 0) {
            int t;
            for (t = i + 1; t <= i + sl->span; t++)
                if (row[t] != 0) {
                    qc__fail(err, "%s: flag 0 with a non-zero code", qc__slot_name(s, i, nm, sizeof nm));
                    return -1;
                }
            qc__put(&w, 0, 1);
            i += sl->span;
            continue;
        }
        qc__put(&w, row[i] & qc__mask(sl->bits), sl->bits);
    }
    while (w.pos & 7) qc__put(&w, 0, 1);
    if (w.overflow) { qc__fail(err, "record needs more than %lu bytes", (unsigned long)cap); return -1; }
    *outlen = w.pos / 8;
    return 0;
}

/* One record's codes (wire-format 3) from r into row, a flag of 0 zeroing the slots it governs,
   signed codes sign-extended: 0; -1 a short read (*slot: at which slot); 1 a code that is not
   valid (*slot, *code, read at r->pos minus the slot's bits) */
static int qc__record_read(qc__br *r, const qc_schema *s, uint64_t *row, int *slot, uint64_t *code) {
    int i, t;
    uint64_t v;
    for (i = 0; i < s->nslots; i++) {
        const qc_slot *sl = &s->slots[i];
        *slot = i;
        if (qc__get(r, sl->bits, &v) < 0) return -1;
        if (sl->role == QC_ROLE_FLAG) {
            row[i] = v;
            if (v == 0) {
                for (t = i + 1; t <= i + sl->span; t++) row[t] = 0;
                i += sl->span;
            }
            continue;
        }
        if (sl->sign) v = qc__sext(v, sl->bits);
        row[i] = v;
        if (!qc__slot_ok(sl, v)) { *code = v; return 1; }
    }
    return 0;
}

int qc_record_decode(const qc_schema *s, const uint8_t *buf, size_t len, uint64_t *row, qc_error *err) {
    qc__br r;
    int i = 0, st;
    uint64_t v = 0;
    char nm[160];
    qc__br_init(&r, buf, len);
    st = qc__record_read(&r, s, row, &i, &v);
    if (st < 0)
        return qc__fail(err, "%s: message too short: the code needs %d bits at bit %lu, the message has %lu bits (%lu bytes)",
                        qc__slot_name(s, i, nm, sizeof nm), s->slots[i].bits, (unsigned long)r.pos, (unsigned long)r.nbits,
                        (unsigned long)len);
    if (st > 0) {
        char num[32];
        if (s->slots[i].sign) snprintf(num, sizeof num, "%lld", (long long)(int64_t)v);
        else snprintf(num, sizeof num, "%llu", (unsigned long long)v);
        return qc__fail(err, "%s: code %s is not valid at bit %lu", qc__slot_name(s, i, nm, sizeof nm), num,
                        (unsigned long)(r.pos - (size_t)s->slots[i].bits));
    }
    if ((r.pos + 7) / 8 != len) {
        if ((r.pos + 7) / 8 > len)
            return qc__fail(err, "message too short");
        return qc__fail(err, "message too long: %lu bytes, but the record ends at bit %lu (%lu bytes)", (unsigned long)len,
                        (unsigned long)r.pos, (unsigned long)((r.pos + 7) / 8));
    }
    if (qc__get(&r, (int)(r.nbits - r.pos), &v) == 0 && v != 0)
        return qc__fail(err, "padding bits after the last field are not zero (at bit %lu)", (unsigned long)r.pos);
    return 0;
}

