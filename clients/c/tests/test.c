/* The C client's tests: the codec goldens, the schema goldens, the snapshot goldens, the kit
   (values, records, streams), unit checks and the stream fuzz test (random and bit-flipped
   datagrams mixed into valid streams: the state is unchanged after each refusal and the valid
   datagrams still decode exactly). Ends with "N passed, M failed".

       test REPO_ROOT [--quick]                                                             */
#define QUANTCODEC_IMPLEMENTATION
#include "../quantcodec.h"

static int g_pass, g_fail;
static char g_root[1024];

#define CHECK(cond, ...) do { if (cond) g_pass++; else { g_fail++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    if (f == NULL) return NULL;
    for (;;) {
        if (n == cap) {
            char *nb;
            cap = cap ? cap * 2 : 65536;
            nb = (char *)realloc(buf, cap + 1);
            if (nb == NULL) { free(buf); fclose(f); return NULL; }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

static char *read_rel(const char *rel, size_t *len) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", g_root, rel);
    return read_file(path, len);
}

/* ---- a JSON writer for the reader's tree (to wrap a codec spec in a schema) ---- */
typedef struct { char *b; size_t n, cap; } sbuf;
static void sb_put(sbuf *s, const char *t, size_t n) {
    if (s->n + n + 1 > s->cap) {
        s->cap = (s->n + n + 1) * 2;
        s->b = (char *)realloc(s->b, s->cap);
    }
    memcpy(s->b + s->n, t, n);
    s->n += n;
    s->b[s->n] = 0;
}
static void sb_puts(sbuf *s, const char *t) { sb_put(s, t, strlen(t)); }
static void sb_json_str(sbuf *s, const char *t) {
    sb_puts(s, "\"");
    for (; *t; t++) {
        char tmp[8];
        if (*t == '"' || *t == '\\') { tmp[0] = '\\'; tmp[1] = *t; sb_put(s, tmp, 2); }
        else if ((unsigned char)*t < 0x20) { sprintf(tmp, "\\u%04x", (unsigned char)*t); sb_puts(s, tmp); }
        else sb_put(s, t, 1);
    }
    sb_puts(s, "\"");
}
static void sb_json(sbuf *s, const qc_json *v) {
    size_t i;
    switch (v->type) {
    case QC_JSON_NULL: sb_puts(s, "null"); break;
    case QC_JSON_TRUE: sb_puts(s, "true"); break;
    case QC_JSON_FALSE: sb_puts(s, "false"); break;
    case QC_JSON_NUMBER: sb_put(s, v->text, v->len); break;
    case QC_JSON_STRING: sb_json_str(s, v->text); break;
    case QC_JSON_ARRAY:
        sb_puts(s, "[");
        for (i = 0; i < v->nkids; i++) { if (i) sb_puts(s, ","); sb_json(s, &v->kids[i]); }
        sb_puts(s, "]");
        break;
    default:
        sb_puts(s, "{");
        for (i = 0; i < v->nkids; i++) {
            if (i) sb_puts(s, ",");
            sb_json_str(s, v->kids[i].key);
            sb_puts(s, ":");
            sb_json(s, &v->kids[i]);
        }
        sb_puts(s, "}");
    }
}

/* a schema of one field "f" with the codec spec */
static int codec_schema(const qc_json *spec, qc_schema *sc) {
    sbuf s = {0, 0, 0};
    qc_error err;
    int rc;
    sb_puts(&s, "{\"name\":\"t\",\"fields\":[{\"name\":\"f\",\"codec\":");
    sb_json(&s, spec);
    sb_puts(&s, "}]}");
    rc = qc_schema_parse(sc, s.b, s.n, NULL, &err);
    if (rc < 0) printf("  (schema of %s: %s)\n", s.b, err.message);
    free(s.b);
    return rc;
}

static uint64_t jint(const qc_json *v) {    /* an integer node (two's complement if negative) */
    if (v->neg) return (uint64_t)0 - v->u;
    return v->u;
}

static double hexd(const char *s) { double x = 0; qc_parse_hex_double(s, &x); return x; }
static uint64_t dbits(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
static int same_double(double a, double b) { return (a != a && b != b) || dbits(a) == dbits(b); }

static uint64_t bits_hex16(const char *s) { return strtoull(s, NULL, 16); }
static double from_bits(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }

/* decimal string -> uint64 carrier (two's complement for negatives); 0 if it does not fit */
static int dec_code(const char *s, int is_signed, uint64_t *out) {
    int neg = s[0] == '-';
    uint64_t u = 0;
    const char *p = s + neg;
    if (*p == 0) return 0;
    for (; *p; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (d > 9 || u > (UINT64_MAX - d) / 10) return 0;
        u = u * 10 + d;
    }
    if (neg) {
        if (!is_signed || u > ((uint64_t)1 << 63)) return 0;
        *out = (uint64_t)0 - u;
        return 1;
    }
    if (is_signed && u > (uint64_t)INT64_MAX) return 0;
    *out = u;
    return 1;
}

static void pack_hex(const uint64_t *codes, size_t n, int bits, char *out) {
    uint8_t buf[4096];
    qc__bw w;
    size_t i;
    w.buf = buf; w.cap = sizeof buf; w.pos = 0; w.overflow = 0;
    for (i = 0; i < n; i++) qc__put(&w, codes[i] & qc__mask(bits), bits);
    while (w.pos & 7) qc__put(&w, 0, 1);
    for (i = 0; i < w.pos / 8; i++) sprintf(out + 2 * i, "%02x", buf[i]);
    out[2 * (w.pos / 8)] = 0;
}

static uint64_t rnd(void);

/* ---- the codec goldens (tests/golden/codecs/codecs.json) ---- */
static void test_codec_goldens(void) {
    size_t len, ci, i;
    char *text = read_rel("tests/golden/codecs/codecs.json", &len);
    void *mem;
    qc_error err;
    const qc_json *root, *cases;
    if (text == NULL) { CHECK(0, "cannot read tests/golden/codecs/codecs.json"); return; }
    root = qc_json_parse(text, len, NULL, &mem, &err);
    CHECK(root != NULL, "codecs.json: %s", err.message);
    if (root == NULL) { free(text); return; }
    cases = qc_json_get(root, "cases");
    for (ci = 0; ci < cases->nkids; ci++) {
        const qc_json *cs = &cases->kids[ci], *spec = qc_json_get(cs, "spec"), *inputs = qc_json_get(cs, "inputs"),
                      *codes = qc_json_get(cs, "codes"), *values = qc_json_get(cs, "values"), *packed = qc_json_get(cs, "packed");
        qc_schema sc;
        const qc_codec *c;
        int bad = 0;
        const char *kind = qc_json_get(spec, "kind")->text;
        if (codec_schema(spec, &sc) < 0) { CHECK(0, "case %lu (%s): schema", (unsigned long)ci, kind); continue; }
        c = sc.fields[0].codec;
        for (i = 0; i < inputs->nkids; i++) {
            const qc_json *in = &inputs->kids[i], *cd = &codes->kids[i];
            uint64_t got[16], want[16];
            double x[16], vals[16];
            int nc = qc_ncodes(c), nv = qc_nvalues(c), j, st;
            if (cd->type == QC_JSON_ARRAY) {
                /* NearlyZero: [flag, c0, ...] flat rows */
                for (j = 0; j < (int)cd->nkids && j < 16; j++) want[j] = jint(&cd->kids[j]);
            } else {
                want[0] = jint(cd);
            }
            if (in->type == QC_JSON_ARRAY) for (j = 0; j < nv; j++) x[j] = hexd(in->kids[j].text);
            else if (in->type == QC_JSON_NUMBER) x[0] = (double)0;
            else x[0] = hexd(in->text);
            if (in->type == QC_JSON_NUMBER) {
                st = in->neg ? qc_quantize_int(c, (int64_t)jint(in), &got[0]) : qc_quantize_uint(c, in->u, &got[0]);
            } else {
                st = qc_quantize_values(c, x, got, &j);
            }
            if (st != QC_Q_OK) { bad++; printf("  case %lu (%s) input %lu: quantize status %d\n", (unsigned long)ci, kind, (unsigned long)i, st); continue; }
            for (j = 0; j < nc; j++)
                if (got[j] != want[j]) { bad++; printf("  case %lu (%s) input %lu: code %llu, want %llu\n", (unsigned long)ci, kind, (unsigned long)i, (unsigned long long)got[j], (unsigned long long)want[j]); break; }
            if (!qc_valid_codes(c, want)) { bad++; printf("  case %lu (%s) input %lu: golden code not valid\n", (unsigned long)ci, kind, (unsigned long)i); }
            if (values != NULL) {
                const qc_json *vv = &values->kids[i];
                if (qc_dequantize_codes(c, want, vals) < 0) { bad++; continue; }
                for (j = 0; j < nv; j++) {
                    double w = vv->type == QC_JSON_ARRAY ? hexd(vv->kids[j].text) : hexd(vv->text);
                    if (!same_double(vals[j], w)) {
                        bad++;
                        printf("  case %lu (%s) input %lu: value[%d] %a, want %a\n", (unsigned long)ci, kind, (unsigned long)i, j, vals[j], w);
                        break;
                    }
                }
            }
        }
        if (packed != NULL) {
            uint64_t all[64];
            char hex[8300];
            size_t n = codes->nkids < 64 ? codes->nkids : 64;
            for (i = 0; i < n; i++) all[i] = jint(&codes->kids[i]);
            pack_hex(all, n, c->bits, hex);
            if (strcmp(hex, packed->text) != 0) { bad++; printf("  case %lu (%s): packed %s, want %s\n", (unsigned long)ci, kind, hex, packed->text); }
        }
        CHECK(bad == 0, "codec golden case %lu (%s): %d mismatches", (unsigned long)ci, kind, bad);
        qc_schema_free(&sc);
    }
    qc_json_free(mem, NULL);
    free(text);
}

/* ---- schema goldens: fingerprints, records ---- */
static void test_schema_goldens(void) {
    static const char *const files[] = {"tests/golden/schema/player_state.json", "tests/golden/schema/all_kinds.json"};
    int fi;
    for (fi = 0; fi < 2; fi++) {
        size_t len;
        char *text = read_rel(files[fi], &len);
        void *mem;
        qc_error err;
        const qc_json *root;
        sbuf s = {0, 0, 0};
        qc_schema sc;
        if (text == NULL) { CHECK(0, "cannot read %s", files[fi]); continue; }
        root = qc_json_parse(text, len, NULL, &mem, &err);
        sb_json(&s, qc_json_get(root, "spec"));
        CHECK(qc_schema_parse(&sc, s.b, s.n, NULL, &err) == 0, "%s: %s", files[fi], err.message);
        CHECK(strcmp(sc.fingerprint, qc_json_get(root, "fingerprint")->text) == 0, "%s: fingerprint %s, want %s", files[fi],
              sc.fingerprint, qc_json_get(root, "fingerprint")->text);
        {
            /* the one record (all_kinds: 'hex') or the records' hex decode and re-encode */
            const qc_json *recs = qc_json_get(root, "records"), *hx = qc_json_get(root, "hex");
            size_t r, nrec = recs != NULL ? recs->nkids : 1;
            for (r = 0; r < nrec; r++) {
                const char *h = recs != NULL ? qc_json_get(&recs->kids[r], "hex")->text : hx->text;
                uint8_t bytes[512], again[512];
                uint64_t row[256];
                size_t n = strlen(h) / 2, i, n2 = 0;
                for (i = 0; i < n; i++) { unsigned b; sscanf(h + 2 * i, "%2x", &b); bytes[i] = (uint8_t)b; }
                CHECK(qc_record_decode(&sc, bytes, n, row, &err) == 0, "%s record %lu: %s", files[fi], (unsigned long)r, err.message);
                CHECK(qc_record_encode(&sc, row, again, sizeof again, &n2, &err) == 0 && n2 == n && memcmp(again, bytes, n) == 0,
                      "%s record %lu: re-encoded differently", files[fi], (unsigned long)r);
            }
        }
        qc_schema_free(&sc);
        free(s.b);
        qc_json_free(mem, NULL);
        free(text);
    }
}

/* ---- snapshot goldens: bare packets (tests/golden/snapshot) ---- */
static void test_snapshot_goldens(void) {
    size_t len, slen, i;
    char *text = read_rel("tests/golden/snapshot/packets.json", &len), *stext = read_rel("tests/golden/snapshot/schema.json", &slen);
    void *mem;
    qc_error err;
    const qc_json *root, *pk, *slots;
    qc_schema sc;
    qc_decoder d;
    int framed;
    if (text == NULL || stext == NULL) { CHECK(0, "cannot read tests/golden/snapshot"); free(text); free(stext); return; }
    root = qc_json_parse(text, len, NULL, &mem, &err);
    CHECK(qc_schema_parse(&sc, stext, slen, NULL, &err) == 0, "snapshot golden schema: %s", err.message);
    CHECK(strcmp(sc.fingerprint, qc_json_get(root, "fingerprint")->text) == 0, "snapshot golden fingerprint %s", sc.fingerprint);
    slots = qc_json_get(root, "slots");
    {
        int ok = (int)slots->nkids == sc.nslots;
        for (i = 0; ok && i < slots->nkids; i++) {
            const qc_json *sl = &slots->kids[i];
            const char *cls = sl->kids[0].text;
            const qc_slot *m = &sc.slots[i];
            const char *mine = m->role == QC_ROLE_FLAG ? "flag" : m->role == QC_ROLE_QUAT ? "quat" : m->role == QC_ROLE_UVEC ? "uvec" :
                               m->role == QC_ROLE_ABS ? "abs" : (m->codec->kind == QC_POWERCURVE || m->codec->kind == QC_HALF) ? "smag" : "ord";
            ok = strcmp(cls, mine) == 0 && (int)sl->kids[1].u == m->bits && (int)sl->kids[2].u == m->field && (int)sl->kids[3].u == m->span;
        }
        CHECK(ok, "snapshot golden: the slot table differs");
    }
    qc_decoder_init(&d, &sc, NULL, &err);
    framed = qc_json_get(root, "hello") != NULL;
    if (framed) {
        /* the datagrams of one stream, after its hello */
        size_t hlen;
        char *h = read_rel("tests/golden/snapshot/hello.bin", &hlen);
        qc_result res;
        CHECK(h != NULL && qc_decoder_datagram(&d, (const uint8_t *)h, hlen, &res) == QC_PENDING && d.adopted &&
              d.stream_id == qc_json_get(root, "stream_id")->u, "snapshot golden hello: %s", h ? res.message : "missing");
        free(h);
    }
    pk = qc_json_get(root, "packets");
    for (i = 0; i < pk->nkids; i++) {
        const qc_json *p = &pk->kids[i], *ids = qc_json_get(p, "ids"), *mat = qc_json_get(p, "matrix");
        char path[256];
        size_t plen, e;
        char *data;
        qc_result res;
        int st, ok;
        snprintf(path, sizeof path, "tests/golden/snapshot/%s", qc_json_get(p, "file")->text);
        data = read_rel(path, &plen);
        if (data == NULL) { CHECK(0, "cannot read %s", path); continue; }
        st = framed ? qc_decoder_datagram(&d, (const uint8_t *)data, plen, &res) : qc_decoder_packet(&d, (const uint8_t *)data, plen, &res);
        ok = st == QC_SNAPSHOT && res.snapshot->seq == qc_json_get(p, "seq")->u && res.snapshot->n == ids->nkids;
        for (e = 0; ok && e < ids->nkids; e++) {
            int s;
            ok = res.snapshot->ids[e] == ids->kids[e].u;
            for (s = 0; ok && s < sc.nslots; s++) ok = res.snapshot->rows[e * (size_t)sc.nslots + (size_t)s] == jint(&mat->kids[e].kids[s]);
        }
        CHECK(ok, "snapshot golden %s: status %d (%s)", path, st, res.message);
        free(data);
    }
    qc_decoder_free(&d);
    qc_schema_free(&sc);
    qc_json_free(mem, NULL);
    free(text);
    free(stext);
}

/* ---- the kit: values ---- */
static void test_kit_values(void) {
    size_t len, i, j;
    char *mtext = read_rel("conformance/manifest.json", &len);
    void *mmem;
    qc_error err;
    const qc_json *man, *vals;
    if (mtext == NULL) { printf("  (no conformance kit: kit tests skipped)\n"); return; }
    man = qc_json_parse(mtext, len, NULL, &mmem, &err);
    vals = qc_json_get(man, "values");
    for (i = 0; i < vals->nkids; i++) {
        char path[512];
        size_t vlen;
        char *vtext;
        void *vmem;
        const qc_json *v, *dq, *q, *inv;
        qc_schema sc;
        const qc_codec *c;
        int bad = 0, sg, checked = 0;
        snprintf(path, sizeof path, "conformance/%s", vals->kids[i].text);
        vtext = read_rel(path, &vlen);
        if (vtext == NULL) { CHECK(0, "cannot read %s", path); continue; }
        v = qc_json_parse(vtext, vlen, NULL, &vmem, &err);
        if (codec_schema(qc_json_get(v, "codec"), &sc) < 0) { CHECK(0, "%s: codec", path); continue; }
        c = sc.fields[0].codec;
        sg = qc_json_get(v, "signed")->type == QC_JSON_TRUE;
        CHECK(c->bits == (int)qc_json_get(v, "bits")->u, "%s: bits %d", path, c->bits);
        dq = qc_json_get(v, "dequantize");
        for (j = 0; j < dq->nkids; j++) {
            const qc_json *e = &dq->kids[j], *val = qc_json_get(e, "value");
            uint64_t code;
            double out[4];
            size_t k;
            if (!dec_code(qc_json_get(e, "code")->text, sg, &code)) { bad++; continue; }
            if (!qc_valid(c, code) || qc_dequantize(c, code, out) < 0) { bad++; printf("  %s: code %s refused\n", path, qc_json_get(e, "code")->text); continue; }
            for (k = 0; k < val->nkids; k++)
                if (dbits(out[k]) != bits_hex16(val->kids[k].text)) {
                    bad++;
                    printf("  %s: code %s value[%lu] %016llx, want %s\n", path, qc_json_get(e, "code")->text, (unsigned long)k,
                           (unsigned long long)dbits(out[k]), val->kids[k].text);
                    break;
                }
            checked++;
        }
        q = qc_json_get(v, "quantize");
        for (j = 0; j < q->nkids; j++) {
            const qc_json *e = &q->kids[j], *in = qc_json_get(e, "input");
            double x[4];
            uint64_t code, want;
            size_t k;
            int st, ncl = 0;
            for (k = 0; k < in->nkids; k++) x[k] = from_bits(bits_hex16(in->kids[k].text));
            if (!dec_code(qc_json_get(e, "code")->text, sg, &want)) { bad++; continue; }
            st = qc_quantize_values(c, x, &code, &ncl);
            if (st != QC_Q_OK || code != want) {
                bad++;
                printf("  %s: quantize input %lu: code %llu (status %d), want %llu\n", path, (unsigned long)j, (unsigned long long)code, st, (unsigned long long)want);
            }
            checked++;
        }
        inv = qc_json_get(v, "invalid");
        for (j = 0; j < inv->nkids; j++) {
            uint64_t code;
            if (!dec_code(inv->kids[j].text, sg, &code)) continue;     /* beyond 64 bits: not representable */
            if (qc_valid(c, code)) { bad++; printf("  %s: invalid code %s accepted\n", path, inv->kids[j].text); }
            checked++;
        }
        CHECK(bad == 0 && checked > 0, "kit values %s: %d mismatches of %d", path, bad, checked);
        qc_schema_free(&sc);
        qc_json_free(vmem, NULL);
        free(vtext);
    }
    qc_json_free(mmem, NULL);
    free(mtext);
}

/* ---- the kit: records ---- */
static void test_kit_records(void) {
    size_t len, i, j;
    char *mtext = read_rel("conformance/manifest.json", &len);
    void *mmem;
    qc_error err;
    const qc_json *man, *recs;
    if (mtext == NULL) return;
    man = qc_json_parse(mtext, len, NULL, &mmem, &err);
    recs = qc_json_get(man, "records");
    for (i = 0; i < recs->nkids; i++) {
        char path[512];
        size_t rlen, slen;
        char *rtext, *stext;
        void *rmem;
        const qc_json *r, *valid, *invalid;
        qc_schema sc;
        int bad = 0;
        snprintf(path, sizeof path, "conformance/%s", recs->kids[i].text);
        rtext = read_rel(path, &rlen);
        if (rtext == NULL) { CHECK(0, "cannot read %s", path); continue; }
        r = qc_json_parse(rtext, rlen, NULL, &rmem, &err);
        snprintf(path, sizeof path, "conformance/%s", qc_json_get(r, "schema")->text);
        stext = read_rel(path, &slen);
        if (stext == NULL || qc_schema_parse(&sc, stext, slen, NULL, &err) < 0) { CHECK(0, "%s: schema", path); continue; }
        valid = qc_json_get(r, "valid");
        for (j = 0; j < valid->nkids; j++) {
            const char *h = qc_json_get(&valid->kids[j], "hex")->text;
            const qc_json *codes = qc_json_get(&valid->kids[j], "codes");
            uint8_t bytes[1024], again[1024];
            uint64_t row[512], want;
            size_t n = strlen(h) / 2, k, n2 = 0;
            for (k = 0; k < n; k++) { unsigned b; sscanf(h + 2 * k, "%2x", &b); bytes[k] = (uint8_t)b; }
            if (qc_record_decode(&sc, bytes, n, row, &err) < 0) { bad++; printf("  %s valid %lu: %s\n", path, (unsigned long)j, err.message); continue; }
            for (k = 0; k < codes->nkids; k++) {
                if (!dec_code(codes->kids[k].text, sc.slots[k].sign, &want) || want != row[k]) {
                    bad++;
                    printf("  %s valid %lu: slot %lu code %llu, want %s\n", path, (unsigned long)j, (unsigned long)k, (unsigned long long)row[k], codes->kids[k].text);
                    break;
                }
            }
            if (qc_record_encode(&sc, row, again, sizeof again, &n2, &err) < 0 || n2 != n || memcmp(again, bytes, n) != 0) {
                bad++;
                printf("  %s valid %lu: re-encoded differently\n", path, (unsigned long)j);
            }
        }
        invalid = qc_json_get(r, "invalid");
        for (j = 0; j < invalid->nkids; j++) {
            const char *h = qc_json_get(&invalid->kids[j], "hex")->text;
            uint8_t bytes[1024];
            uint64_t row[512];
            size_t n = strlen(h) / 2, k;
            for (k = 0; k < n; k++) { unsigned b; sscanf(h + 2 * k, "%2x", &b); bytes[k] = (uint8_t)b; }
            if (qc_record_decode(&sc, bytes, n, row, &err) == 0) {
                bad++;
                printf("  %s invalid %lu (%s) accepted\n", path, (unsigned long)j, qc_json_get(&invalid->kids[j], "why")->text);
            }
        }
        CHECK(bad == 0, "kit records %s: %d mismatches (%lu valid, %lu invalid)", recs->kids[i].text, bad,
              (unsigned long)valid->nkids, (unsigned long)invalid->nkids);
        qc_schema_free(&sc);
        qc_json_free(rmem, NULL);
        free(rtext);
        free(stext);
    }
    qc_json_free(mmem, NULL);
    free(mtext);
}

/* ---- streams ---- */

/* the runner's line for one result */
static void result_line(const qc_schema *sc, int st, const qc_result *res, sbuf *out) {
    char tmp[64];
    if (st == QC_SNAPSHOT) {
        const qc_snapshot *s = res->snapshot;
        size_t i;
        int k;
        sprintf(tmp, "{\"seq\":%u,\"ids\":[", (unsigned)s->seq);
        sb_puts(out, tmp);
        for (i = 0; i < s->n; i++) { sprintf(tmp, i ? ",%llu" : "%llu", (unsigned long long)s->ids[i]); sb_puts(out, tmp); }
        sb_puts(out, "],\"codes\":[");
        for (i = 0; i < s->n; i++) {
            const uint64_t *row = s->rows + i * (size_t)sc->nslots;
            sb_puts(out, i ? ",[" : "[");
            for (k = 0; k < sc->nslots; k++) {
                if (sc->slots[k].sign) sprintf(tmp, k ? ",%lld" : "%lld", (long long)(int64_t)row[k]);
                else sprintf(tmp, k ? ",%llu" : "%llu", (unsigned long long)row[k]);
                sb_puts(out, tmp);
            }
            sb_puts(out, "]");
        }
        sb_puts(out, "]}");
    } else if (st == QC_PENDING) {
        sb_puts(out, "{\"pending\":true}");
    } else {
        sb_puts(out, "{\"error\":\"");
        sb_puts(out, res->kind);
        sb_puts(out, "\"}");
    }
}

typedef struct { const uint8_t *p; size_t n; } dgram;

static size_t split_datagrams(const char *data, size_t len, dgram *out, size_t cap) {
    size_t pos = 0, k = 0;
    while (pos + 4 <= len && k < cap) {
        size_t n = (size_t)(unsigned char)data[pos] | (size_t)(unsigned char)data[pos + 1] << 8 |
                   (size_t)(unsigned char)data[pos + 2] << 16 | (size_t)(unsigned char)data[pos + 3] << 24;
        pos += 4;
        if (pos + n > len) break;
        out[k].p = (const uint8_t *)data + pos;
        out[k].n = n;
        k++;
        pos += n;
    }
    return k;
}

/* The digest of a decoder's state: the stream, latest, held snapshots, ambiguous numbers (core)
   and the partial packets (reassembly). */
static uint32_t digest_core(const qc_decoder *d) {
    uint32_t h = 0;
    int i, order[65536 > 1 ? 1 : 1];
    uint8_t tmp[64];
    (void)order;
    memcpy(tmp, &d->adopted, sizeof d->adopted);
    h = qc_crc32c(tmp, sizeof d->adopted, h);
    h = qc_crc32c((const uint8_t *)&d->latest, sizeof d->latest, h);
    h = qc_crc32c((const uint8_t *)&d->stream_id, sizeof d->stream_id, h);
    h = qc_crc32c((const uint8_t *)&d->history, sizeof d->history, h);
    h = qc_crc32c((const uint8_t *)&d->nheld, sizeof d->nheld, h);
    h = qc_crc32c((const uint8_t *)d->ambiguous, sizeof d->ambiguous, h);
    if (d->hello_bytes) h = qc_crc32c(d->hello_bytes, d->hello_len, h);
    for (i = 0; i < d->nheld; i++) {
        const qc_snapshot *s = d->held[i];
        h = qc_crc32c((const uint8_t *)&d->held_seq[i], 2, h);
        h = qc_crc32c((const uint8_t *)&s->n, sizeof s->n, h);
        h = qc_crc32c((const uint8_t *)s->ids, s->n * 8, h);
        h = qc_crc32c((const uint8_t *)s->rows, s->n * 8 * (size_t)d->schema->nslots, h);
    }
    return h;
}

static uint32_t digest_reasm(const qc_decoder *d) {
    uint32_t h = 0;
    const qc_partial *p;
    h = qc_crc32c((const uint8_t *)&d->chunk_bytes, sizeof d->chunk_bytes, h);
    for (p = d->partials; p != NULL; p = p->next) {
        const qc__chunk_node *c;
        h = qc_crc32c((const uint8_t *)&p->seq, sizeof p->seq, h);
        h = qc_crc32c((const uint8_t *)&p->pcheck, sizeof p->pcheck, h);
        h = qc_crc32c((const uint8_t *)p->have, sizeof p->have, h);
        for (c = p->chunks; c != NULL; c = c->next) h = qc_crc32c((const uint8_t *)c + QC__NODE_HEAD, c->len, h);
    }
    return h;
}

static const char *const STREAMS[][2] = {
    {"pose_clean", "pose"}, {"pose_lossy", "pose"}, {"all_kinds_pred", "all_kinds"}, {"all_kinds_nopred", "all_kinds"},
    {"fragments", "pose"}, {"hostile", "pose"}, {"restart", "pose"}, {"one_bit", "one_bit"}
};

static int load_stream(int which, qc_schema *sc, char **dtext, size_t *dlen, char **etext, size_t *elen) {
    char path[512];
    size_t slen;
    char *stext;
    qc_error err;
    snprintf(path, sizeof path, "conformance/schemas/%s.json", STREAMS[which][1]);
    stext = read_rel(path, &slen);
    if (stext == NULL) return -1;
    if (qc_schema_parse(sc, stext, slen, NULL, &err) < 0) { printf("  %s: %s\n", path, err.message); free(stext); return -1; }
    free(stext);
    snprintf(path, sizeof path, "conformance/streams/%s.bin", STREAMS[which][0]);
    *dtext = read_rel(path, dlen);
    snprintf(path, sizeof path, "conformance/streams/%s.jsonl", STREAMS[which][0]);
    *etext = read_rel(path, elen);
    if (*dtext == NULL || *etext == NULL) { free(*dtext); free(*etext); qc_schema_free(sc); return -1; }
    return 0;
}

static void test_kit_streams(void) {
    int w;
    for (w = 0; w < (int)(sizeof STREAMS / sizeof STREAMS[0]); w++) {
        qc_schema sc;
        char *dtext, *etext, *line;
        size_t dlen, elen, n, k, nline = 0;
        static dgram dg[100000];
        qc_decoder d;
        qc_error err;
        int bad = 0;
        if (load_stream(w, &sc, &dtext, &dlen, &etext, &elen) < 0) { if (w == 0) printf("  (no kit streams)\n"); continue; }
        n = split_datagrams(dtext, dlen, dg, 100000);
        qc_decoder_init(&d, &sc, NULL, &err);
        line = etext;
        for (k = 0; k < n; k++) {
            qc_result res;
            sbuf out = {0, 0, 0};
            char *eol = strchr(line, '\n');
            int st = qc_decoder_datagram(&d, dg[k].p, dg[k].n, &res);
            size_t ll = eol ? (size_t)(eol - line) : strlen(line);
            result_line(&sc, st, &res, &out);
            if (out.n != ll || memcmp(out.b, line, ll) != 0) {
                if (bad < 3) printf("  %s datagram %lu: %.*s\n    want %.*s\n", STREAMS[w][0], (unsigned long)k, (int)(out.n > 200 ? 200 : out.n), out.b, (int)(ll > 200 ? 200 : ll), line);
                bad++;
            }
            if (st == QC_SNAPSHOT && !(res.ack && res.ack_seq == (uint16_t)qc_decoder_latest(&d))) bad++;
            free(out.b);
            nline++;
            line = eol ? eol + 1 : line + ll;
        }
        CHECK(bad == 0 && n > 0 && *line == 0, "kit stream %s: %d of %lu lines differ", STREAMS[w][0], bad, (unsigned long)n);
        qc_decoder_free(&d);
        CHECK(d.bytes == 0, "kit stream %s: %lu bytes still held after free", STREAMS[w][0], (unsigned long)d.bytes);
        qc_schema_free(&sc);
        free(dtext);
        free(etext);
    }
}

/* ---- every kit stream within the documented worst case: a budget of exactly
   qc_decoder_worst_case_bytes for the stream's hello and largest snapshot refuses nothing ---- */
static void test_worst_case(void) {
    int w;
    for (w = 0; w < (int)(sizeof STREAMS / sizeof STREAMS[0]); w++) {
        qc_schema sc;
        char *dtext, *etext;
        size_t dlen, elen, n, k, most = 1;
        static dgram dg[100000];
        qc_decoder d;
        qc_decoder_config cfg;
        qc_error err;
        int history = 1, md = 64, mem = 0;
        if (load_stream(w, &sc, &dtext, &dlen, &etext, &elen) < 0) continue;
        n = split_datagrams(dtext, dlen, dg, 100000);
        qc_decoder_init(&d, &sc, NULL, &err);
        for (k = 0; k < n; k++) {
            qc_result res;
            if (qc_decoder_datagram(&d, dg[k].p, dg[k].n, &res) == QC_SNAPSHOT && res.snapshot->n > most) most = res.snapshot->n;
            if (d.adopted && d.history > history) history = d.history;
            if (d.adopted && d.max_datagram > md) md = d.max_datagram;
        }
        qc_decoder_free(&d);
        memset(&cfg, 0, sizeof cfg);
        cfg.max_entities = most;
        cfg.alloc_limit = qc_decoder_worst_case_bytes(&sc, history, most, md, 0);
        qc_decoder_init(&d, &sc, &cfg, &err);
        for (k = 0; k < n; k++) {
            qc_result res;
            if (qc_decoder_datagram(&d, dg[k].p, dg[k].n, &res) == QC_E_MEMORY) mem++;
        }
        CHECK(mem == 0, "worst case %s: %d refusals of kind memory within a budget of %lu bytes", STREAMS[w][0], mem, (unsigned long)cfg.alloc_limit);
        qc_decoder_free(&d);
        qc_schema_free(&sc);
        free(dtext);
        free(etext);
    }
}

/* ---- the fuzz test: junk mixed into valid streams ---- */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17; return g_rng; }

static void test_fuzz(int rounds) {
    int w, refusals = 0, trials = 0, changed = 0, accepted = 0;
    static uint8_t junk[70000];
    for (w = 0; w < (int)(sizeof STREAMS / sizeof STREAMS[0]); w++) {
        qc_schema sc;
        char *dtext, *etext, *line;
        size_t dlen, elen, n, k;
        static dgram dg[100000];
        qc_decoder d;
        qc_error err;
        int bad = 0, r;
        if (load_stream(w, &sc, &dtext, &dlen, &etext, &elen) < 0) continue;
        n = split_datagrams(dtext, dlen, dg, 100000);
        qc_decoder_init(&d, &sc, NULL, &err);
        line = etext;
        for (k = 0; k < n; k++) {
            qc_result res;
            sbuf out = {0, 0, 0};
            char *eol = strchr(line, '\n');
            size_t ll = eol ? (size_t)(eol - line) : strlen(line);
            int st;
            for (r = 0; r < rounds; r++) {
                /* a junk datagram: random bytes, or a valid one (this or another) bit-flipped, truncated or extended */
                size_t jl, src = (size_t)(rnd() % n);
                uint32_t c0, r0;
                int how = (int)(rnd() % 5), fl, f;
                switch (how) {
                case 0:
                    jl = (size_t)(rnd() % 300);
                    for (f = 0; f < (int)jl; f++) junk[f] = (uint8_t)rnd();
                    if (jl >= 4 && rnd() % 2) memcpy(junk, "QCHL", 4);
                    break;
                case 1: case 2:
                    if (how == 1) src = k;
                    jl = dg[src].n;
                    memcpy(junk, dg[src].p, jl);
                    fl = 1 + (int)(rnd() % 3);
                    for (f = 0; f < fl && jl; f++) { size_t b = (size_t)(rnd() % (jl * 8)); junk[b / 8] ^= (uint8_t)(1u << (b % 8)); }
                    break;
                case 3:
                    jl = dg[src].n;
                    memcpy(junk, dg[src].p, jl);
                    jl = jl ? (size_t)(rnd() % jl) : 0;
                    break;
                default:
                    jl = dg[src].n;
                    memcpy(junk, dg[src].p, jl);
                    fl = 1 + (int)(rnd() % 8);
                    for (f = 0; f < fl; f++) junk[jl++] = (uint8_t)rnd();
                    break;
                }
                /* a junk datagram equal to its source (two flips of one bit) is not junk */
                if (jl == dg[src].n && memcmp(junk, dg[src].p, jl) == 0) continue;
                c0 = digest_core(&d);
                r0 = digest_reasm(&d);
                st = qc_decoder_datagram(&d, junk, jl, &res);
                trials++;
                if (st < 0) {
                    refusals++;
                    if (digest_core(&d) != c0 || digest_reasm(&d) != r0) {
                        changed++;
                        if (changed < 4) printf("  %s: state changed by a refused junk datagram (how %d, kind %s)\n", STREAMS[w][0], how, res.kind);
                    }
                } else {
                    accepted++;
                    if (accepted < 4) printf("  %s: a junk datagram accepted (how %d, status %d)\n", STREAMS[w][0], how, st);
                }
            }
            st = qc_decoder_datagram(&d, dg[k].p, dg[k].n, &res);
            result_line(&sc, st, &res, &out);
            if (out.n != ll || memcmp(out.b, line, ll) != 0) bad++;
            free(out.b);
            line = eol ? eol + 1 : line + ll;
        }
        CHECK(bad == 0, "fuzz %s: %d valid datagrams decoded otherwise with junk mixed in", STREAMS[w][0], bad);
        qc_decoder_free(&d);
        qc_schema_free(&sc);
        free(dtext);
        free(etext);
    }
    CHECK(trials > 0 && changed == 0 && accepted == 0, "fuzz: %d junk datagrams, %d refused, %d changed the state, %d accepted",
          trials, refusals, changed, accepted);
    printf("  fuzz: %d junk datagrams, %d refused, state unchanged after every refusal\n", trials, refusals);
}

/* ---- memory: a budget, a counting allocator ---- */
typedef struct { size_t live, peak, calls; } counting;
static void *c_alloc(void *ud, size_t n) { counting *c = (counting *)ud; c->live += n; if (c->live > c->peak) c->peak = c->live; c->calls++; return malloc(n); }
static void c_free(void *ud, void *p, size_t n) { counting *c = (counting *)ud; c->live -= n; free(p); }

static void test_memory(void) {
    qc_schema sc;
    char *dtext, *etext;
    size_t dlen, elen, n, k;
    static dgram dg[100000];
    qc_decoder d;
    qc_decoder_config cfg;
    qc_error err;
    counting cnt = {0, 0, 0};
    int memerr = 0, snaps = 0;
    size_t worst;
    if (load_stream(1, &sc, &dtext, &dlen, &etext, &elen) < 0) return;
    n = split_datagrams(dtext, dlen, dg, 100000);
    memset(&cfg, 0, sizeof cfg);
    cfg.allocator.alloc = c_alloc;
    cfg.allocator.free = c_free;
    cfg.allocator.ud = &cnt;
    qc_decoder_init(&d, &sc, &cfg, &err);
    for (k = 0; k < n; k++) { qc_result res; if (qc_decoder_datagram(&d, dg[k].p, dg[k].n, &res) == QC_SNAPSHOT) snaps++; }
    CHECK(cnt.live == d.bytes && snaps > 0, "memory: the allocator sees %lu live bytes, the decoder counts %lu", (unsigned long)cnt.live, (unsigned long)d.bytes);
    worst = qc_decoder_worst_case_bytes(&sc, d.history, 64, d.max_datagram, 0);
    CHECK(cnt.peak <= worst, "memory: peak %lu above the worst case %lu", (unsigned long)cnt.peak, (unsigned long)worst);
    printf("  memory: pose_lossy peak %lu bytes (worst case for 64 entities: %lu)\n", (unsigned long)cnt.peak, (unsigned long)worst);
    qc_decoder_free(&d);
    CHECK(cnt.live == 0, "memory: %lu bytes leaked", (unsigned long)cnt.live);
    /* a budget too small for the stream: refusals of kind memory, nothing held beyond it */
    cfg.alloc_limit = 4000;
    qc_decoder_init(&d, &sc, &cfg, &err);
    for (k = 0; k < n; k++) {
        qc_result res;
        uint32_t c0 = digest_core(&d);
        int st = qc_decoder_datagram(&d, dg[k].p, dg[k].n, &res);
        if (st == QC_E_MEMORY) { memerr++; CHECK(digest_core(&d) == c0, "memory: a refusal of kind memory changed the state"); }
        CHECK(d.bytes <= cfg.alloc_limit, "memory: %lu bytes held over the budget", (unsigned long)d.bytes);
    }
    CHECK(memerr > 0, "memory: a budget of 4000 bytes refused nothing");
    qc_decoder_free(&d);
    CHECK(cnt.live == 0, "memory: %lu bytes leaked (budget)", (unsigned long)cnt.live);
    qc_schema_free(&sc);
    free(dtext);
    free(etext);
}

/* ---- units ---- */
static void test_units(void) {
    uint8_t dg[32];
    char hx[40];
    static const char *const bad_schemas[] = {
        "", "{", "[]", "{\"name\":\"x\"}", "{\"name\":\"x\",\"fields\":[]}",
        "{\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bounded\",\"min\":1,\"max\":0,\"bits\":8}}]}",
        "{\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bounded\",\"min\":0,\"max\":1,\"bits\":8.0}}]}",
        "{\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"UInt\",\"bits\":65}}]}",
        "{\"name\":\"x\",\"fields\":[{\"name\":\"1a\",\"codec\":{\"kind\":\"Bool\"}}]}",
        "{\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bool\"}},{\"name\":\"a\",\"codec\":{\"kind\":\"Bool\"}}]}",
        "{\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Vector\",\"codecs\":[{\"kind\":\"Vector\",\"codecs\":[]}]}}]}",
        "{\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bool\",\"extra\":1}}]}",
        "{\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bool\"}}]} x",
        "{\"name\":\"x\",\"name\":\"y\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bool\"}}]}",
        "{\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Enum\",\"labels\":[\"a\",\"a\"]}}]}",
        "{\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Fixed\",\"step\":1e308,\"bits\":64}}]}",
        "{\"name\":\"x\",\"version\":-1,\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bool\"}}]}",
        "{\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bounded\",\"min\":NaN,\"max\":1,\"bits\":8}}]}",
        "{\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Half\"}}],}",
        "{\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"NearlyZero\",\"inner\":{\"kind\":\"Quat\"},\"threshold\":0}}]}",
        "{\"name\":\"x\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Vector\",\"codecs\":[{\"kind\":\"Int\",\"bits\":8},{\"kind\":\"UInt\",\"bits\":64}]}}]}",
    };
    size_t i;
    qc_schema sc;
    qc_error err;
    CHECK(qc_crc32c((const uint8_t *)"123456789", 9, 0) == 0xE3069283u, "crc32c check value");
    CHECK(qc_crc32c((const uint8_t *)"6789", 4, qc_crc32c((const uint8_t *)"12345", 5, 0)) == 0xE3069283u, "crc32c continuation");
    CHECK(qc_crc32c(NULL, 0, 0) == 0, "crc32c of nothing");
    {
        /* the slicing-by-8 and the hardware forms against a bit-at-a-time reference */
        static uint8_t buf[700];
        int n, bad = 0, k;
        for (n = 0; n < 700; n++) buf[n] = (uint8_t)rnd();
        for (n = 0; n < 700; n += 1 + n / 16) {
            uint32_t seed = (uint32_t)rnd(), ref = ~seed;
            int i;
            for (i = 0; i < n; i++) {
                ref ^= buf[i];
                for (k = 0; k < 8; k++) ref = (ref & 1) ? (ref >> 1) ^ 0x82F63B78u : ref >> 1;
            }
            ref = ~ref;
            if (qc__crc32c_sw(buf, (size_t)n, seed) != ref || qc_crc32c(buf, (size_t)n, seed) != ref) bad++;
        }
        CHECK(bad == 0, "crc32c: %d lengths differ from the bitwise reference", bad);
    }
    qc_sha256((const uint8_t *)"abc", 3, dg);
    CHECK(dg[0] == 0xba && dg[1] == 0x78 && dg[31] == 0xad, "sha256(abc)");
    qc_sha256((const uint8_t *)"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, dg);
    CHECK(dg[0] == 0x24 && dg[1] == 0x8d && dg[31] == 0xc1, "sha256 of 56 bytes");
    qc_float_hex(2048.0, hx); CHECK(strcmp(hx, "0x1.0000000000000p+11") == 0, "float_hex 2048: %s", hx);
    qc_float_hex(5e-324, hx); CHECK(strcmp(hx, "0x0.0000000000001p-1022") == 0, "float_hex subnormal: %s", hx);
    qc_float_hex(-0.1, hx); CHECK(strcmp(hx, "-0x1.999999999999ap-4") == 0, "float_hex -0.1: %s", hx);
    qc_float_hex(0.0, hx); CHECK(strcmp(hx, "0x0.0p+0") == 0, "float_hex 0: %s", hx);
    for (i = 0; i < sizeof bad_schemas / sizeof bad_schemas[0]; i++) {
        int rc = qc_schema_parse(&sc, bad_schemas[i], strlen(bad_schemas[i]), NULL, &err);
        CHECK(rc < 0 && err.message[0] != 0, "bad schema %lu accepted", (unsigned long)i);
        if (rc == 0) qc_schema_free(&sc);
    }
    {
        /* the docs' PlayerState fingerprint, from its JSON with ints for floats and defaults left out */
        const char *js = "{\"name\": \"PlayerState\", \"version\": 3, \"fields\": {"
            "\"position\": {\"kind\": \"Vector\", \"codecs\": [{\"kind\": \"Bounded\", \"min\": -2048, \"max\": 2048, \"bits\": 18},"
            "{\"kind\": \"Bounded\", \"min\": -64, \"max\": 192, \"bits\": 14}, {\"kind\": \"Bounded\", \"min\": -2048, \"max\": 2048, \"bits\": 18}]},"
            "\"rotation\": {\"kind\": \"Quat\"},"
            "\"velocity\": {\"kind\": \"NearlyZero\", \"threshold\": 0.01, \"inner\": {\"kind\": \"Vector\", \"codecs\": ["
            "{\"kind\": \"PowerCurve\", \"max\": 50, \"pow\": 2, \"bits\": 10}, {\"kind\": \"PowerCurve\", \"max\": 50.0, \"pow\": 2.0, \"bits\": 10},"
            "{\"kind\": \"PowerCurve\", \"max\": 5e1, \"pow\": 2, \"bits\": 10}]}},"
            "\"yaw\": [\"ignored\", 0], \"health\": {\"kind\": \"UInt\", \"bits\": 8}}}";
        /* (the pair form is only for lists: a dict of fields maps names to codecs, so "yaw" above is an error) */
        CHECK(qc_schema_parse(&sc, js, strlen(js), NULL, &err) < 0, "a non-codec field value accepted");
    }
    {
        const char *js = "\xef\xbb\xbf{\"name\": \"PlayerState\", \"version\": 3, \"fields\": ["
            "[\"position\", {\"kind\": \"Vector\", \"codecs\": [{\"kind\": \"Bounded\", \"min\": -2048, \"max\": 2048, \"bits\": 18},"
            "{\"kind\": \"Bounded\", \"min\": -64, \"max\": 192, \"bits\": 14}, {\"kind\": \"Bounded\", \"min\": -2048, \"max\": 2048, \"bits\": 18}]}],"
            "[\"rotation\", {\"kind\": \"Quat\"}],"
            "[\"velocity\", {\"kind\": \"NearlyZero\", \"threshold\": 0.01, \"inner\": {\"kind\": \"Vector\", \"codecs\": ["
            "{\"kind\": \"PowerCurve\", \"max\": 50, \"pow\": 2, \"bits\": 10}, {\"kind\": \"PowerCurve\", \"max\": 50.0, \"pow\": 2.0, \"bits\": 10},"
            "{\"kind\": \"PowerCurve\", \"max\": 5e1, \"pow\": 2, \"bits\": 10}]}}],"
            "[\"yaw\", {\"kind\": \"Angle\", \"bits\": 16}], [\"health\", {\"kind\": \"UInt\", \"bits\": 8}],"
            "{\"name\": \"state\", \"codec\": {\"kind\": \"Enum\", \"labels\": [\"idle\", \"walk\", \"run\", \"jump\"]}},"
            "[\"grounded\", {\"kind\": \"Bool\"}]]}";
        CHECK(qc_schema_parse(&sc, js, strlen(js), NULL, &err) == 0 && strcmp(sc.fingerprint, "6835f5f0e12ff134") == 0,
              "PlayerState from pairs and ints: %s", err.message);
        qc_schema_free(&sc);
    }
    {
        /* Quat: q and -q give one code; a tie round-trips */
        const char *js = "{\"name\":\"q\",\"fields\":[{\"name\":\"r\",\"codec\":{\"kind\":\"Quat\",\"bits\":9}}]}";
        double q[4] = {0.1, -0.7, 0.5, 0.3}, nq[4] = {-0.1, 0.7, -0.5, -0.3};
        uint64_t a, b;
        qc_schema_parse(&sc, js, strlen(js), NULL, &err);
        CHECK(qc_quantize_quat(sc.fields[0].codec, q, &a) == QC_Q_OK && qc_quantize_quat(sc.fields[0].codec, nq, &b) == QC_Q_OK && a == b, "quat q and -q");
        q[0] = q[1] = q[2] = q[3] = 0;
        CHECK(qc_quantize_quat(sc.fields[0].codec, q, &a) == QC_Q_ZERO, "quat zero");
        qc_schema_free(&sc);
    }
}

/* the decoder's per-slot validity (tables, classes) against qc_valid, code for code */
static void test_slot_validity(void) {
    size_t len;
    char *text = read_rel("conformance/schemas/all_kinds.json", &len);
    qc_schema sc;
    qc_error err;
    int s, bad = 0, checked = 0, quats = 0;
    static const char *const quat_schemas[] = {
        "{\"name\":\"q\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Quat\",\"bits\":2}},"
        "{\"name\":\"b\",\"codec\":{\"kind\":\"Quat\",\"bits\":5,\"mode\":\"bins\"}},"
        "{\"name\":\"c\",\"codec\":{\"kind\":\"Quat\",\"bits\":6}},"
        "{\"name\":\"d\",\"codec\":{\"kind\":\"PowerCurve\",\"max\":3,\"pow\":1.5,\"bits\":12}},"
        "{\"name\":\"e\",\"codec\":{\"kind\":\"Enum\",\"count\":5}}]}"
    };
    for (s = -1; s < 1; s++) {
        const char *js = s < 0 ? text : quat_schemas[0];
        size_t jl = s < 0 ? len : strlen(quat_schemas[0]);
        int k;
        if (js == NULL) continue;
        if (qc_schema_parse(&sc, js, jl, NULL, &err) < 0) { CHECK(0, "slot validity schema: %s", err.message); continue; }
        for (k = 0; k < sc.nslots; k++) {
            const qc_slot *sl = &sc.slots[k];
            uint64_t c, n;
            if (sl->role == QC_ROLE_FLAG) continue;
            if (sl->codec->kind == QC_QUAT) quats++;
            n = sl->bits <= 20 ? ((uint64_t)1 << sl->bits) : 200000;
            for (c = 0; c < n; c++) {
                uint64_t v = sl->bits <= 20 ? c : (rnd() & qc__mask(sl->bits));
                if (sl->sign) v = qc__sext(v, sl->bits);
                if (qc__slot_ok(sl, v) != qc_valid(sl->codec, v)) {
                    if (bad < 3) printf("  slot %d (%s): code %llu: decoder %d, valid() %d\n", k, sc.fields[sl->field].name,
                                        (unsigned long long)v, qc__slot_ok(sl, v), qc_valid(sl->codec, v));
                    bad++;
                }
                checked++;
            }
        }
        qc_schema_free(&sc);
    }
    CHECK(bad == 0 && checked > 0 && quats >= 3, "decoder validity vs valid(): %d of %d codes differ (%d Quat slots)", bad, checked, quats);
    free(text);
}

int main(int argc, char **argv) {
    int quick = argc > 2 && strcmp(argv[2], "--quick") == 0;
    snprintf(g_root, sizeof g_root, "%s", argc > 1 ? argv[1] : "../..");
    test_units();
    test_slot_validity();
    test_codec_goldens();
    test_schema_goldens();
    test_snapshot_goldens();
    test_kit_values();
    test_kit_records();
    test_kit_streams();
    test_memory();
    test_worst_case();
    test_fuzz(quick ? 1 : 10);
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
