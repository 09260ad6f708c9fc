/* ---- snapshot interpolation (docs/interpolation.md) ------------------------------------------ */

static void *qc__ip_alloc(qc_interp *ip, size_t n) {
    void *p = ip->al.alloc(ip->al.ud, n ? n : 1);
    if (p != NULL) ip->bytes += n ? n : 1;
    return p;
}
static void qc__ip_free(qc_interp *ip, void *p, size_t n) {
    if (p == NULL) return;
    ip->al.free(ip->al.ud, p, n ? n : 1);
    ip->bytes -= n ? n : 1;
}

/* a scalar codec's column rule: 0 linear, 1 angle, 2 held; -1 none */
static int qc__ip_rule(const qc_codec *c, double *full, double *lo) {
    QC__NOFMA
    *full = 0.0; *lo = 0.0;
    switch (c->kind) {
    case QC_BOUNDED: case QC_FIXED: case QC_POWERCURVE: case QC_HALF: case QC_GRID: return 0;
    case QC_UINT: case QC_INT: case QC_INTRANGE: case QC_ENUM: case QC_BOOL: return 2;
    case QC_ANGLE:
        *full = c->deg ? 360.0 : 2.0 * 3.14159265358979323846;
        *lo = c->mode ? -*full / 2.0 : 0.0;
        return 1;
    default: return -1;
    }
}

void qc_interp_free(qc_interp *ip) {
    int i, nf, nv;
    if (ip == NULL || ip->schema == NULL) return;   /* NULL: like free(NULL); freed already: nothing */
    nf = ip->schema->nfields; nv = ip->nvalues;
    for (i = 0; i < ip->nviews; i++) qc__ip_free(ip, ip->views[i].ids, ip->views[i].bytes);
    qc__ip_free(ip, ip->views, ((size_t)ip->capacity + 1) * sizeof(qc_interp_view));
    qc__ip_free(ip, ip->offset, (size_t)(nf + 1) * sizeof(int));
    qc__ip_free(ip, ip->frule, (size_t)(nf + 1) * sizeof(int));
    qc__ip_free(ip, ip->crule, (size_t)(nv + 1) * sizeof(int));
    qc__ip_free(ip, ip->cfull, (size_t)(nv + 1) * sizeof(double));
    qc__ip_free(ip, ip->clo, (size_t)(nv + 1) * sizeof(double));
    qc__ip_free(ip, ip->out, ip->out_cap * sizeof(double));
    memset(ip, 0, sizeof *ip);
}

int qc_interp_init(qc_interp *ip, const qc_schema *s, int capacity, double max_extrapolation, const qc_allocator *al, qc_error *err) {
    int f, k, col;
    memset(ip, 0, sizeof *ip);
    if (capacity < 2) return qc__fail(err, "qc_interp_init: capacity must be an integer of at least 2, got %d", capacity);
    if ((size_t)capacity >= SIZE_MAX / sizeof(qc_interp_view))
        return qc__fail(err, "qc_interp_init: a capacity of %d views cannot be allocated", capacity);
    if (!(max_extrapolation >= 0.0 && max_extrapolation - max_extrapolation == 0.0))
        return qc__fail(err, "qc_interp_init: max_extrapolation must be finite and >= 0, got %g", max_extrapolation);
    ip->al = qc__allocator_of(al);
    ip->schema = s;
    ip->capacity = capacity;
    ip->max_extrapolation = max_extrapolation;
    for (f = 0; f < s->nfields; f++) ip->nvalues += s->fields[f].nvalues;
    ip->views = (qc_interp_view *)qc__ip_alloc(ip, ((size_t)capacity + 1) * sizeof(qc_interp_view));
    ip->offset = (int *)qc__ip_alloc(ip, (size_t)(s->nfields + 1) * sizeof(int));
    ip->frule = (int *)qc__ip_alloc(ip, (size_t)(s->nfields + 1) * sizeof(int));
    ip->crule = (int *)qc__ip_alloc(ip, (size_t)(ip->nvalues + 1) * sizeof(int));
    ip->cfull = (double *)qc__ip_alloc(ip, (size_t)(ip->nvalues + 1) * sizeof(double));
    ip->clo = (double *)qc__ip_alloc(ip, (size_t)(ip->nvalues + 1) * sizeof(double));
    if (!ip->views || !ip->offset || !ip->frule || !ip->crule || !ip->cfull || !ip->clo) {
        qc_interp_free(ip);
        return qc__fail(err, "qc_interp_init: out of memory");
    }
    col = 0;
    for (f = 0; f < s->nfields; f++) {
        const qc_codec *c = s->fields[f].codec;
        ip->offset[f] = col;
        if (c->kind == QC_NEARLYZERO) c = c->inner;
        ip->frule[f] = c->kind == QC_QUAT ? 1 : c->kind == QC_UNITVECTOR ? 2 : 0;
        for (k = 0; k < s->fields[f].nvalues; k++, col++) {
            const qc_codec *cc = c->kind == QC_VECTOR ? &c->inner[k] : c;
            if (ip->frule[f]) { ip->crule[col] = 0; ip->cfull[col] = ip->clo[col] = 0.0; continue; }
            ip->crule[col] = qc__ip_rule(cc, &ip->cfull[col], &ip->clo[col]);
            if (ip->crule[col] < 0) {
                const char *name = s->fields[f].name;
                qc_interp_free(ip);
                return qc__fail(err, "qc_interp_init: field '%s': no interpolation rule for its codec", name);
            }
        }
    }
    return 0;
}

int64_t qc_interp_tick(const qc_interp *ip, uint16_t seq) {
    int64_t d;
    if (!ip->has_newest) return seq;
    d = (int64_t)(((uint64_t)seq - (uint64_t)ip->newest) & 0xFFFFu);
    return ip->newest + (d >= 0x8000 ? d - 0x10000 : d);
}

int qc_interp_push(qc_interp *ip, const qc_snapshot *view) {
    const qc_schema *s = ip->schema;
    int64_t t;
    int i, at, f;
    size_t e, bytes;
    qc_interp_view v;
    /* a decoder's view carries its allocation, qc_snapshot_bytes(its schema, n): rows of
       another width are another schema's, read past their end (fewer slots) or misread (more);
       a view the caller built has bytes 0 and is taken on trust */
    if (view->bytes != 0 && view->bytes != qc_snapshot_bytes(s, view->n)) return -2;
    t = qc_interp_tick(ip, view->seq);
    for (i = 0; i < ip->nviews; i++)
        if (ip->views[i].tick == t) { ip->stats.dropped++; return 0; }
    if (ip->nviews >= ip->capacity && t < ip->views[0].tick) { ip->stats.dropped++; return 0; }
    bytes = view->n * 8 + view->n * (size_t)ip->nvalues * sizeof(double);
    v.tick = t; v.n = view->n; v.bytes = bytes;
    v.ids = (uint64_t *)qc__ip_alloc(ip, bytes);
    if (v.ids == NULL) return -1;
    v.values = (double *)(v.ids + view->n);
    if (view->n) memcpy(v.ids, view->ids, view->n * 8);
    for (e = 0; e < view->n; e++)
        for (f = 0; f < s->nfields; f++)
            qc_field_values(s, f, view->rows + e * (size_t)s->nslots, v.values + e * (size_t)ip->nvalues + ip->offset[f]);
    if (ip->has_last && (double)t <= ip->last_t) ip->stats.late++;
    for (at = 0; at < ip->nviews && ip->views[at].tick < t; at++) {}
    memmove(ip->views + at + 1, ip->views + at, (size_t)(ip->nviews - at) * sizeof(qc_interp_view));
    ip->views[at] = v;
    ip->nviews++;
    if (ip->nviews > ip->capacity) {
        qc__ip_free(ip, ip->views[0].ids, ip->views[0].bytes);
        memmove(ip->views, ip->views + 1, (size_t)(ip->nviews - 1) * sizeof(qc_interp_view));
        ip->nviews--;
    }
    if (!ip->has_newest || t > ip->newest) { ip->newest = t; ip->has_newest = 1; }
    ip->stats.pushed++;
    return 1;
}

void qc_interp_reset(qc_interp *ip) {
    int i;
    for (i = 0; i < ip->nviews; i++) qc__ip_free(ip, ip->views[i].ids, ip->views[i].bytes);
    ip->nviews = 0;
    ip->has_newest = 0;             /* the next push: its tick its seq */
    ip->newest = 0;
    ip->has_last = 0;               /* no render time sampled */
    ip->last_t = 0.0;
}

/* index of id in ids[0..n) (ascending), or -1 */
static ptrdiff_t qc__ip_find(const uint64_t *ids, size_t n, uint64_t id) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < id) lo = mid + 1; else hi = mid;
    }
    return lo < n && ids[lo] == id ? (ptrdiff_t)lo : -1;
}

static double qc__ip_short(double d, double full) { QC__NOFMA return d - full * floor(d / full + 0.5); }
static double qc__ip_wrap(double v, double full, double lo) { QC__NOFMA return v - full * floor((v - lo) / full); }

/* nlerp of k components (k 4: hemisphere, q and -q alike) */
static void qc__ip_nlerp(const double *x0, const double *x1, double a, int k, double *out) {
    QC__NOFMA
    double y[4], q[4], n = 0.0, dot = 0.0;
    int i;
    for (i = 0; i < k; i++) y[i] = x1[i];
    if (k == 4) {
        for (i = 0; i < k; i++) dot = dot + x0[i] * x1[i];
        if (dot < 0.0) for (i = 0; i < k; i++) y[i] = -y[i];
    }
    for (i = 0; i < k; i++) { q[i] = x0[i] + (y[i] - x0[i]) * a; n = n + q[i] * q[i]; }
    n = sqrt(n);
    if (n == 0.0) { for (i = 0; i < k; i++) out[i] = x0[i]; return; }
    for (i = 0; i < k; i++) out[i] = q[i] / n;
}

/* how: 0 hold, 1 between, 2 extrapolate */
static int qc__ip_out(qc_interp *ip, const qc_interp_view *A, const qc_interp_view *O, int how, double x, qc_interp_frame *fr) {
    QC__NOFMA
    const qc_schema *s = ip->schema;
    size_t need = A->n * (size_t)ip->nvalues, e;
    int nv = ip->nvalues;
    if (need > ip->out_cap) {
        double *nb = (double *)qc__ip_alloc(ip, need * sizeof(double));
        if (nb == NULL) return -1;
        qc__ip_free(ip, ip->out, ip->out_cap * sizeof(double));
        ip->out = nb;
        ip->out_cap = need;
    }
    if (need) memcpy(ip->out, A->values, need * sizeof(double));
    if (how != 0) {
        for (e = 0; e < A->n; e++) {
            ptrdiff_t j = qc__ip_find(O->ids, O->n, A->ids[e]);
            const double *ra = A->values + e * (size_t)nv, *ro;
            double *r = ip->out + e * (size_t)nv;
            int f;
            if (j < 0) continue;
            ro = O->values + (size_t)j * (size_t)nv;
            for (f = 0; f < s->nfields; f++) {
                int c0 = ip->offset[f], c;
                if (ip->frule[f]) {
                    if (how == 1) qc__ip_nlerp(ra + c0, ro + c0, x, ip->frule[f] == 1 ? 4 : 3, r + c0);
                    continue;
                }
                for (c = c0; c < c0 + s->fields[f].nvalues; c++) {
                    double xa = ra[c], xo = ro[c], full = ip->cfull[c];
                    if (ip->crule[c] == 2) continue;
                    if (how == 1)
                        r[c] = ip->crule[c] == 0 ? xa + (xo - xa) * x
                             : qc__ip_wrap(xa + qc__ip_short(xo - xa, full) * x, full, ip->clo[c]);
                    else
                        r[c] = ip->crule[c] == 0 ? xa + (xa - xo) * x
                             : qc__ip_wrap(xa + qc__ip_short(xa - xo, full) * x, full, ip->clo[c]);
                }
            }
        }
    }
    fr->n = A->n;
    fr->ids = A->ids;
    fr->values = ip->out;
    fr->a = A->tick;
    fr->has_b = how == 1;
    fr->b = how == 1 ? O->tick : 0;
    fr->alpha = x;
    return 0;
}

int qc_interp_sample(qc_interp *ip, double t, qc_interp_frame *out) {
    QC__NOFMA
    int ia = -1, i;
    const qc_interp_view *A;
    if (ip->nviews == 0) return -1;
    if (t == t) {                   /* (a NaN is no render time: it leaves the latest one) */
        if (!ip->has_last || t > ip->last_t) ip->last_t = t;
        ip->has_last = 1;
    }
    for (i = 0; i < ip->nviews; i++) if ((double)ip->views[i].tick <= t) ia = i;
    if (ia < 0) {
        if (qc__ip_out(ip, &ip->views[0], NULL, 0, 0.0, out) < 0) return -1;
        ip->stats.early++;
        return 0;
    }
    A = &ip->views[ia];
    if (ia + 1 < ip->nviews) {
        const qc_interp_view *B = &ip->views[ia + 1];
        return qc__ip_out(ip, A, B, 1, (t - (double)A->tick) / (double)(B->tick - A->tick), out);
    }
    if (ia == 0 || t == (double)A->tick) return qc__ip_out(ip, A, NULL, 0, 0.0, out);
    {
        const qc_interp_view *P = &ip->views[ia - 1];
        double d = t - (double)A->tick, e = ip->max_extrapolation < d ? ip->max_extrapolation : d;
        if (qc__ip_out(ip, A, P, 2, e / (double)(A->tick - P->tick), out) < 0) return -1;
        ip->stats.extrapolated++;
        return 0;
    }
}

#ifdef QC__GCC_OPTIONS_PUSHED
#pragma GCC pop_options
#undef QC__GCC_OPTIONS_PUSHED
#endif

#ifdef __cplusplus
}
#endif

#endif /* QUANTCODEC_IMPLEMENTATION_DONE */
#endif /* QUANTCODEC_IMPLEMENTATION */
