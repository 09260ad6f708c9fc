/* The C client's tests: the codec goldens, the schema goldens, the snapshot goldens, the kit
   (values, records, streams), unit checks and the stream fuzz test (random and bit-flipped
   datagrams mixed into valid streams: the state is unchanged after each refusal and the valid
   datagrams still decode exactly). Ends with "N passed, M failed".

       test REPO_ROOT [--quick]                                                             */
#define QUANTCODEC_IMPLEMENTATION
#include "../quantcodec.h"
#include <ctype.h>
#include <limits.h>

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
    {"fragments", "pose"}, {"hostile", "pose"}, {"restart", "pose"}, {"one_bit", "one_bit"},
    {"stray_hello", "pose"}, {"fragment_duplicates", "pose"}
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

/* ---- wire-format 13: a hello of another stream that is not newer is adopted while the adopted
   stream has decoded no packet (latest none), and refused (kind hello, nothing changed) once it
   has; built from pose_clean's hello, resealed with other stream_ids and started ---- */
static void hello_variant(const dgram *h, uint64_t stream_id, uint64_t started, uint8_t *out) {
    int i;
    uint32_t c;
    memcpy(out, h->p, h->n);
    for (i = 0; i < 8; i++) { out[10 + i] = (uint8_t)(stream_id >> (8 * i)); out[18 + i] = (uint8_t)(started >> (8 * i)); }
    c = qc_crc32c(out, h->n - 4, qc_crc32c((const uint8_t *)"quantcodec hello", 16, 0));
    for (i = 0; i < 4; i++) out[h->n - 4 + (size_t)i] = (uint8_t)(c >> (8 * i));
}

static void test_hello_adoption(void) {
    qc_schema sc;
    char *dtext, *etext;
    size_t dlen, elen, n, k, h;
    static dgram dg[100000];
    static uint8_t older[512], equal[512], newer[512];
    qc_decoder d;
    qc_client cl;
    qc_result res;
    qc_error err;
    uint64_t sid, started;
    uint32_t c0, r0;
    int st, got = 0;
    if (load_stream(0, &sc, &dtext, &dlen, &etext, &elen) < 0) return;
    n = split_datagrams(dtext, dlen, dg, 100000);
    for (h = 0; h < n && !(dg[h].n >= 55 && dg[h].n <= sizeof older && memcmp(dg[h].p, "QCHL", 4) == 0); h++) {}
    if (h == n) { CHECK(0, "hello adoption: no hello in pose_clean"); goto done; }
    sid = qc__load_le64(dg[h].p + 10);
    started = qc__load_le64(dg[h].p + 18);
    hello_variant(&dg[h], sid ^ 0x5A5A, started - 1, older);     /* another stream, started earlier */
    hello_variant(&dg[h], sid ^ 0xA5A5, started, equal);         /* another stream, started the same */
    hello_variant(&dg[h], sid ^ 0x3C3C, started + 1, newer);     /* another stream, started later */
    qc_decoder_init(&d, &sc, NULL, &err);
    st = qc_decoder_datagram(&d, dg[h].p, dg[h].n, &res);
    CHECK(st == QC_PENDING && res.adopted && d.stream_id == sid, "hello adoption: the stream's hello (%d: %s)", st, res.message);
    /* nothing decoded yet: another stream's hello is taken whatever its started */
    st = qc_decoder_datagram(&d, equal, dg[h].n, &res);
    CHECK(st == QC_PENDING && res.adopted && d.stream_id == (sid ^ 0xA5A5),
          "hello adoption: a hello of another stream started the same, before any packet: %d (%s)", st, res.message);
    st = qc_decoder_datagram(&d, older, dg[h].n, &res);
    CHECK(st == QC_PENDING && res.adopted && d.stream_id == (sid ^ 0x5A5A) && d.started == started - 1,
          "hello adoption: an older stream's hello before any packet: %d (%s)", st, res.message);
    st = qc_decoder_datagram(&d, older, dg[h].n, &res);
    CHECK(st == QC_PENDING && !res.adopted, "hello adoption: the adopted hello again: %d, adopted %d", st, res.adopted);
    /* the stream's own hello takes it back (newer than the older one), then its packets decode */
    st = qc_decoder_datagram(&d, dg[h].p, dg[h].n, &res);
    CHECK(st == QC_PENDING && res.adopted && d.stream_id == sid, "hello adoption: the stream's own hello taken back: %d (%s)", st, res.message);
    for (k = h + 1; k < n && !got; k++) got = qc_decoder_datagram(&d, dg[k].p, dg[k].n, &res) == QC_SNAPSHOT;
    CHECK(got && qc_decoder_latest(&d) >= 0, "hello adoption: no packet of pose_clean decoded after its hello");
    /* a packet decoded: another stream's hello that is not newer is refused, nothing changed */
    c0 = digest_core(&d);
    r0 = digest_reasm(&d);
    st = qc_decoder_datagram(&d, older, dg[h].n, &res);
    CHECK(st == QC_E_HELLO && strcmp(res.kind, "hello") == 0 && strstr(res.message, "older stream") != NULL,
          "hello adoption: an older stream's hello after a packet: %d (%s)", st, res.message);
    st = qc_decoder_datagram(&d, equal, dg[h].n, &res);
    CHECK(st == QC_E_HELLO && d.stream_id == sid, "hello adoption: a hello started the same after a packet: %d (%s)", st, res.message);
    CHECK(digest_core(&d) == c0 && digest_reasm(&d) == r0, "hello adoption: a refused older hello changed the state");
    /* a newer stream's hello is adopted even then, and starts the client over */
    st = qc_decoder_datagram(&d, newer, dg[h].n, &res);
    CHECK(st == QC_PENDING && res.adopted && d.stream_id == (sid ^ 0x3C3C) && qc_decoder_latest(&d) == -1,
          "hello adoption: a newer stream's hello after a packet: %d (%s)", st, res.message);
    qc_decoder_free(&d);
    /* the session client: an older hello adopted before any packet makes a reply due (a new stream) */
    qc_client_init(&cl, &sc, NULL, 0, 0, 7, &err);
    {
        uint8_t r[QC_REPLY_MAX];
        qc_client_reply(&cl, r);    /* (the first, a hello request) */
        qc_client_receive(&cl, dg[h].p, dg[h].n, &res);
        qc_client_reply(&cl, r);
        st = qc_client_receive(&cl, older, dg[h].n, &res);
        CHECK(st == QC_PENDING && res.adopted && qc_client_reply(&cl, r) != 0 && r[0] == 0x41 && r[1] == 0,
              "hello adoption: the client's reply after an older hello adopted before any packet (%d)", st);
    }
    qc_client_free(&cl);
done:
    qc_schema_free(&sc);
    free(dtext);
    free(etext);
}

/* ---- wire-format 12, rule 4: at the reassembly's bound (256 * max_datagram, chunks counted as
   C bytes), partial packets give way oldest first by how far their seq is behind latest, equals
   in the order begun, the fragment's own packet ranked with them: an older packet's fragments
   (a duplicated packet) never push out a newer one, and a newer packet's chunks push out an
   older partial packet even when it was begun later. The fragments are fragment_duplicates'
   (max_datagram 64, C = 52: 315 chunks fit; packets 0..5 of 196-197 fragments). ---- */
typedef struct { const uint8_t *p[6][256]; size_t n[6][256]; int count[6]; const uint8_t *hello; size_t hello_len; } frag_kit;

static void frag_feed(qc_decoder *d, const frag_kit *fk, int seq, int from, int to, int *snaps, int *last_seq) {
    int i;
    for (i = from; i < to; i++) {
        qc_result res;
        if (qc_decoder_datagram(d, fk->p[seq][i], fk->n[seq][i], &res) == QC_SNAPSHOT) { (*snaps)++; *last_seq = res.snapshot->seq; }
    }
}

static const qc_partial *frag_partial(const qc_decoder *d, int seq) {
    const qc_partial *p;
    for (p = d->partials; p != NULL && p->seq != seq; p = p->next) {}
    return p;
}

static void test_reassembly_bound(void) {
    qc_schema sc;
    char *stext, *dtext;
    size_t slen, dlen, n, k;
    static dgram dg[100000];
    static frag_kit fk;
    qc_decoder d;
    qc_decoder_config cfg;
    qc_result res;
    qc_error err;
    int snaps, last, ok = 1;
    const qc_partial *p;
    stext = read_rel("conformance/schemas/pose.json", &slen);
    dtext = read_rel("conformance/streams/fragment_duplicates.bin", &dlen);
    if (stext == NULL || dtext == NULL || qc_schema_parse(&sc, stext, slen, NULL, &err) < 0) {
        CHECK(0, "reassembly bound: cannot load fragment_duplicates");
        free(stext); free(dtext);
        return;
    }
    memset(&fk, 0, sizeof fk);
    n = split_datagrams(dtext, dlen, dg, 100000);
    for (k = 0; k < n; k++) {
        const uint8_t *q = dg[k].p;
        if (dg[k].n >= 4 && memcmp(q, "QCHL", 4) == 0) { fk.hello = q; fk.hello_len = dg[k].n; continue; }
        if (dg[k].n < 13 || qc__le16(q) > 5) { ok = 0; continue; }
        if (fk.p[q[0]][q[2]] == NULL) { fk.p[q[0]][q[2]] = q; fk.n[q[0]][q[2]] = dg[k].n; }
        fk.count[q[0]] = q[3] + 1;
    }
    for (k = 0; k < 6; k++) {
        int i;
        ok = ok && fk.count[k] > 158 && fk.count[k] <= 256;
        for (i = 0; ok && i < fk.count[k]; i++) ok = fk.p[k][i] != NULL;
    }
    if (!ok || fk.hello == NULL) { CHECK(0, "reassembly bound: fragment_duplicates is not packets 0..5 of 159-256 fragments"); goto done; }

    /* 1. packet 0 decoded; packet 1 all but its last fragment; packet 0's fragments again (a
       duplicated packet, older than 1): none of them kept once the bound is reached, packet 1
       keeps every chunk, and its last fragment completes it */
    qc_decoder_init(&d, &sc, NULL, &err);
    snaps = 0; last = -1;
    qc_decoder_datagram(&d, fk.hello, fk.hello_len, &res);
    CHECK(d.adopted && d.max_datagram == 64 && d.chunk == 52, "reassembly bound: the hello (max_datagram %d)", d.max_datagram);
    frag_feed(&d, &fk, 0, 0, fk.count[0], &snaps, &last);
    CHECK(snaps == 1 && last == 0, "reassembly bound: packet 0 (%d views)", snaps);
    frag_feed(&d, &fk, 1, 0, fk.count[1] - 1, &snaps, &last);
    frag_feed(&d, &fk, 0, 0, fk.count[0], &snaps, &last);
    p = frag_partial(&d, 1);
    CHECK(p != NULL && p->nheld == fk.count[1] - 1, "reassembly bound: an older packet's fragments pushed out the newer one (%d chunks left of %d)",
          p ? p->nheld : 0, fk.count[1] - 1);
    CHECK(d.chunk_bytes <= 256 * 64 && frag_partial(&d, 0) != NULL && d.npartials == 2,
          "reassembly bound: %lu chunk bytes held, %d partial packets", (unsigned long)d.chunk_bytes, d.npartials);
    frag_feed(&d, &fk, 1, fk.count[1] - 1, fk.count[1], &snaps, &last);
    CHECK(snaps == 2 && last == 1, "reassembly bound: packet 1 not completed after packet 0's duplicates (%d views, last %d)", snaps, last);
    qc_decoder_free(&d);
    CHECK(d.bytes == 0, "reassembly bound: %lu bytes held after free", (unsigned long)d.bytes);

    /* 2. packet 0 decoded; 100 chunks of packet 2, then 150 of packet 1 (older, begun later:
       both fit), then the rest of packet 2: packet 1 gives way to its chunks, packet 2 decodes */
    qc_decoder_init(&d, &sc, NULL, &err);
    snaps = 0; last = -1;
    qc_decoder_datagram(&d, fk.hello, fk.hello_len, &res);
    frag_feed(&d, &fk, 0, 0, fk.count[0], &snaps, &last);
    frag_feed(&d, &fk, 2, 0, 100, &snaps, &last);
    frag_feed(&d, &fk, 1, 0, 150, &snaps, &last);
    CHECK(d.npartials == 2 && d.chunk_bytes == 250 * 52, "reassembly bound: 250 chunks held (%lu bytes)", (unsigned long)d.chunk_bytes);
    frag_feed(&d, &fk, 2, 100, fk.count[2], &snaps, &last);
    CHECK(snaps == 2 && last == 2, "reassembly bound: packet 2 not completed past an older partial packet begun later (%d views, last %d)",
          snaps, last);
    CHECK(d.npartials == 0 && d.chunk_bytes == 0, "reassembly bound: packet 1 not dropped (%d partial packets)", d.npartials);
    qc_decoder_free(&d);

    /* 3. before any packet is decoded every partial packet ranks equal: the one begun earliest
       gives way (packet 2, 200 chunks, then packet 1 to the bound: packet 2 dropped) */
    qc_decoder_init(&d, &sc, NULL, &err);
    snaps = 0; last = -1;
    qc_decoder_datagram(&d, fk.hello, fk.hello_len, &res);
    frag_feed(&d, &fk, 2, 0, fk.count[2] - 1, &snaps, &last);
    frag_feed(&d, &fk, 1, 0, fk.count[1], &snaps, &last);
    CHECK(snaps == 1 && last == 1 && frag_partial(&d, 2) == NULL, "reassembly bound: before any packet, the partial packet begun earliest "
          "gives way (%d views, last %d)", snaps, last);
    qc_decoder_free(&d);

    /* 4. max_partials (this client's bound) ranks the same way: at 2, packet 0 decoded, packets
       2 and 1 begun; a fragment of packet 0 again is not kept, one of packet 3 drops packet 1 */
    memset(&cfg, 0, sizeof cfg);
    cfg.max_partials = 2;
    qc_decoder_init(&d, &sc, &cfg, &err);
    snaps = 0; last = -1;
    qc_decoder_datagram(&d, fk.hello, fk.hello_len, &res);
    frag_feed(&d, &fk, 0, 0, fk.count[0], &snaps, &last);
    frag_feed(&d, &fk, 2, 0, 1, &snaps, &last);
    frag_feed(&d, &fk, 1, 0, 1, &snaps, &last);
    frag_feed(&d, &fk, 0, 0, 1, &snaps, &last);
    CHECK(d.npartials == 2 && frag_partial(&d, 2) != NULL && frag_partial(&d, 1) != NULL && frag_partial(&d, 0) == NULL,
          "max_partials: an older packet's fragment pushed out a newer partial packet");
    frag_feed(&d, &fk, 3, 0, 1, &snaps, &last);
    CHECK(d.npartials == 2 && frag_partial(&d, 2) != NULL && frag_partial(&d, 3) != NULL && frag_partial(&d, 1) == NULL,
          "max_partials: a newer packet's fragment did not push out the oldest partial packet");
    qc_decoder_free(&d);
done:
    qc_schema_free(&sc);
    free(stext);
    free(dtext);
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

/* an allocator that records the largest request and fails those over 4 GiB */
typedef struct { size_t biggest; } recording;
static void *r_alloc(void *ud, size_t n) {
    recording *r = (recording *)ud;
    if (n > r->biggest) r->biggest = n;
    return n > ((size_t)1 << 32) ? NULL : malloc(n);
}
static void r_free(void *ud, void *p, size_t n) { (void)ud; (void)n; free(p); }

/* ---- memory: every allocation of every datagram failing in turn ---- */
typedef struct { long allow; size_t live; } failing;    /* allow: allocations before one fails (-1: none) */
static void *f_alloc(void *ud, size_t n) {
    failing *f = (failing *)ud;
    if (f->allow == 0) { f->allow = -1; return NULL; }
    if (f->allow > 0) f->allow--;
    f->live += n;
    return malloc(n);
}
static void f_free(void *ud, void *p, size_t n) { failing *f = (failing *)ud; f->live -= n; free(p); }

/* README, Memory: a datagram refused for memory changes nothing, and the same datagram again
   decodes as it would have. A decoder whose allocator fails at the 1st, 2nd, ... allocation of
   each datagram in turn (retrying the datagram until it goes through) keeps in step with one
   that never fails: the same results, the same state after each datagram. On the fragments
   streams a refusal on the fragment that completes a packet used to drop the partial packet. */
static void test_memory_failures(void) {
    static const int which[] = {4, 1, 9};        /* fragments, pose_lossy, fragment_duplicates */
    int w;
    for (w = 0; w < 3; w++) {
        qc_schema sc;
        char *dtext, *etext;
        size_t dlen, elen, n, k;
        static dgram dg[100000];
        qc_decoder a, b;
        qc_decoder_config cfg;
        qc_error err;
        failing f = {-1, 0};
        long refusals = 0, bad = 0;
        if (load_stream(which[w], &sc, &dtext, &dlen, &etext, &elen) < 0) continue;
        n = split_datagrams(dtext, dlen, dg, 100000);
        memset(&cfg, 0, sizeof cfg);
        qc_decoder_init(&a, &sc, &cfg, &err);
        cfg.allocator.alloc = f_alloc;
        cfg.allocator.free = f_free;
        cfg.allocator.ud = &f;
        qc_decoder_init(&b, &sc, &cfg, &err);
        for (k = 0; k < n && bad < 5; k++) {
            qc_result ra, rb;
            int sa = qc_decoder_datagram(&a, dg[k].p, dg[k].n, &ra), sb2, j;
            for (j = 0;; j++) {
                uint32_t c0 = digest_core(&b);
                f.allow = j;
                sb2 = qc_decoder_datagram(&b, dg[k].p, dg[k].n, &rb);
                if (sb2 != QC_E_MEMORY) break;
                refusals++;
                if (digest_core(&b) != c0) { bad++; CHECK(0, "memory failures %s: datagram %lu, allocation %d: a refusal changed the state", STREAMS[which[w]][0], (unsigned long)k, j + 1); }
            }
            f.allow = -1;
            if (sb2 != sa || digest_core(&a) != digest_core(&b) || digest_reasm(&a) != digest_reasm(&b) ||
                (sa == QC_SNAPSHOT && (ra.snapshot->seq != rb.snapshot->seq || ra.snapshot->n != rb.snapshot->n))) {
                bad++;
                CHECK(0, "memory failures %s: datagram %lu: %d against %d once it went through", STREAMS[which[w]][0], (unsigned long)k, sb2, sa);
            }
        }
        CHECK(bad == 0 && refusals > 0, "memory failures %s: %ld refusals, %ld departures", STREAMS[which[w]][0], refusals, bad);
        qc_decoder_free(&a);
        qc_decoder_free(&b);
        CHECK(f.live == 0, "memory failures %s: %lu bytes leaked", STREAMS[which[w]][0], (unsigned long)f.live);
        qc_schema_free(&sc);
        free(dtext);
        free(etext);
    }
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

/* ---- schema documents, one reading (docs/schema-format.md, rules R1-R9): every case of a file
   of the kit's schema_cases.json format, {"format": 1, "cases": [{"name", "hex", "ok",
   "fingerprint"}]}: its bytes as qc_schema_parse reads a file; ok: parsed with that fingerprint,
   else refused with a message ---- */
static int schema_cases_file(const char *rel) {     /* -1: no such file; else the cases read */
    size_t len, i, nbad = 0, nc = 0;
    char *text = read_rel(rel, &len);
    void *mem;
    qc_error err;
    const qc_json *root, *cases;
    if (text == NULL) return -1;
    root = qc_json_parse(text, len, NULL, &mem, &err);
    CHECK(root != NULL, "%s: %s", rel, root ? "" : err.message);
    if (root == NULL) { free(text); return 0; }
    cases = qc_json_get(root, "cases");
    CHECK(qc_json_get(root, "format") != NULL && strcmp(qc_json_get(root, "format")->text, "1") == 0 &&
          cases != NULL && cases->type == QC_JSON_ARRAY && cases->nkids > 0, "%s: not a format-1 file of cases", rel);
    for (i = 0; cases != NULL && i < cases->nkids; i++) {
        const qc_json *c = &cases->kids[i], *jn = qc_json_get(c, "name"), *jh = qc_json_get(c, "hex"),
                      *jo = qc_json_get(c, "ok"), *jf = qc_json_get(c, "fingerprint");
        size_t n, k;
        char *bytes;
        qc_schema sc;
        int rc, ok;
        if (jn == NULL || jh == NULL || jo == NULL || jh->type != QC_JSON_STRING || jh->len % 2) {
            CHECK(0, "%s: case %lu malformed", rel, (unsigned long)i); nbad++; continue;
        }
        n = jh->len / 2;
        bytes = (char *)malloc(n + 1);
        for (k = 0; k < n; k++) { unsigned b; sscanf(jh->text + 2 * k, "%2x", &b); bytes[k] = (char)b; }
        ok = jo->type == QC_JSON_TRUE;
        err.message[0] = 0;
        rc = qc_schema_parse(&sc, bytes, n, NULL, &err);
        nc++;
        if (ok) {
            int same = rc == 0 && jf != NULL && jf->type == QC_JSON_STRING && strcmp(sc.fingerprint, jf->text) == 0;
            if (!same) {
                nbad++;
                CHECK(0, "%s: %s: want accepted, fingerprint %s; got %s %s", rel, jn->text,
                      jf != NULL && jf->type == QC_JSON_STRING ? jf->text : "?", rc == 0 ? "fingerprint" : "refused:",
                      rc == 0 ? sc.fingerprint : err.message);
            }
        } else if (rc == 0 || err.message[0] == 0) {
            nbad++;
            CHECK(0, "%s: %s: want refused, got %s%s", rel, jn->text, rc == 0 ? "accepted, fingerprint " : "no message",
                  rc == 0 ? sc.fingerprint : "");
        }
        if (rc == 0) qc_schema_free(&sc);
        free(bytes);
    }
    CHECK(nbad == 0, "%s: %lu of %lu cases read otherwise", rel, (unsigned long)nbad, (unsigned long)nc);
    qc_json_free(mem, NULL);
    free(text);
    return (int)nc;
}

static void test_schema_cases(void) {
    size_t len;
    char *mtext = read_rel("conformance/manifest.json", &len), path[512];
    void *mmem = NULL;
    qc_error err;
    const qc_json *man = mtext ? qc_json_parse(mtext, len, NULL, &mmem, &err) : NULL, *jc;
    int n = schema_cases_file("clients/c/tests/schema_cases.json");
    CHECK(n > 0, "clients/c/tests/schema_cases.json missing or empty");
    /* the kit's file, where the manifest names it ("schema_cases"), else where it would be */
    jc = qc_json_get(man, "schema_cases");
    snprintf(path, sizeof path, "conformance/%s", jc != NULL && jc->type == QC_JSON_STRING ? jc->text : "schema_cases.json");
    n = schema_cases_file(path);
    if (n < 0) {
        CHECK(jc == NULL, "%s: named by the manifest, missing", path);
        printf("  (no %s in the kit: its schema cases skipped)\n", path);
    } else {
        printf("  %s: %d cases\n", path, n);
    }
    if (mmem != NULL) qc_json_free(mmem, NULL);
    free(mtext);
}

/* R7 (too big for the cases file): 65,535 Vector components and fields read, 65,536 refused;
   and what the refusals of R2-R7 say */
static void test_schema_rules_units(void) {
    sbuf v = {0, 0, 0}, f = {0, 0, 0};
    qc_schema sc;
    qc_error err;
    int i, rc;
    char nm[32];
    static const struct { const char *json, *msg; } says[] = {
        {"{\"name\":\"S\",\"fields\":[{\"name\":\"x\\u00e9\\ud800\\\\'\",\"codec\":{\"kind\":\"Bool\"}}]}",
         "field names must be ASCII identifiers (letters A-Z and a-z, digits and _, not starting with a digit), got 'x\\xe9\\ud800\\\\\\''"},
        {"{\"name\":\"S\",\"fields\":[{\"name\":\"a\\u0000\",\"codec\":{\"kind\":\"Bool\"}}]}",
         "field names must be ASCII identifiers (letters A-Z and a-z, digits and _, not starting with a digit), got 'a\\x00'"},
        {"{\"name\":\"S\\u0000\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bool\"}}]}", "schema name must not contain U+0000 (NUL)"},
        {"{\"name\":\"\\ud83d\\ude00\\ud800\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bool\"}}]}",
         "schema name must be Unicode text: a lone surrogate U+D800 at character 1"},
        {"{\"name\":\"S\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Enum\",\"labels\":[\"b\",\"\\u00e9\\udfff\"]}}]}",
         "field 'a': Enum labels must be Unicode text: a lone surrogate U+DFFF at character 1, label 1"},
        {"{\"name\":\"S\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Enum\",\"labels\":[\"b\",\"a\\u0000\"]}}]}",
         "field 'a': Enum labels must not contain U+0000 (NUL), label 1 does"},
        {"{\"name\":\"S\",\"version\":9223372036854775808,\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bool\"}}]}",
         "schema version must be an integer from 0 to 2**63 - 1, got 9223372036854775808"},
        {"{\"name\":\"S\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"NearlyZero\",\"threshold\":5,\"inner\":{\"kind\":\"Bounded\",\"min\":0,\"max\":1,\"bits\":8}}}]}",
         "field 'a': NearlyZero: threshold 5 covers the whole range of its inner Bounded (no decoded value is farther than 1 from zero)"},
        {"{\"name\":\"S\xed\xa0\x80\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bool\"}}]}",
         "not valid JSON: invalid UTF-8 in a string (a bad, overlong or truncated sequence, or an encoded surrogate) at line 1 column 11"},
        {"{\"name\":\"S\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"__proto__\"}}]}", "field 'a': unknown codec kind '__proto__'"},
    };
    for (i = 0; i < (int)(sizeof says / sizeof says[0]); i++) {
        rc = qc_schema_parse(&sc, says[i].json, strlen(says[i].json), NULL, &err);
        CHECK(rc < 0 && strncmp(err.message, says[i].msg, strlen(says[i].msg)) == 0, "rule message %d: %s", i, rc < 0 ? err.message : "accepted");
        if (rc == 0) qc_schema_free(&sc);
    }
    {   /* -0 is 0: the version's text and the hello's 32 bits */
        const char *js = "{\"name\":\"S\",\"version\":-0,\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bool\"}}]}";
        rc = qc_schema_parse(&sc, js, strlen(js), NULL, &err);
        CHECK(rc == 0 && strcmp(sc.version_text, "0") == 0 && sc.version32 == 0, "version -0: %s", rc == 0 ? sc.version_text : err.message);
        if (rc == 0) qc_schema_free(&sc);
        js = "{\"name\":\"S\",\"version\":9223372036854775807,\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bool\"}}]}";
        rc = qc_schema_parse(&sc, js, strlen(js), NULL, &err);
        CHECK(rc == 0 && sc.version32 == 0xFFFFFFFFu, "version 2**63 - 1: %s", rc == 0 ? sc.version_text : err.message);
        if (rc == 0) qc_schema_free(&sc);
    }
    sb_puts(&v, "{\"name\": \"S\", \"fields\": [{\"name\": \"f\", \"codec\": {\"kind\": \"Vector\", \"codecs\": [");
    sb_puts(&f, "{\"name\": \"S\", \"fields\": {");
    for (i = 0; i < 65535; i++) {
        sb_puts(&v, i ? ",{\"kind\": \"Bool\"}" : "{\"kind\": \"Bool\"}");
        snprintf(nm, sizeof nm, "%s\"f%d\": {\"kind\": \"Bool\"}", i ? "," : "", i);
        sb_puts(&f, nm);
    }
    sb_puts(&v, "]}}]}");
    sb_puts(&f, "}}");
    rc = qc_schema_parse(&sc, v.b, v.n, NULL, &err);
    CHECK(rc == 0 && strcmp(sc.fingerprint, "1937ebd68322cd55") == 0 && sc.nslots == 65535, "Vector of 65535: %s",
          rc == 0 ? sc.fingerprint : err.message);
    if (rc == 0) qc_schema_free(&sc);
    rc = qc_schema_parse(&sc, f.b, f.n, NULL, &err);
    CHECK(rc == 0 && strcmp(sc.fingerprint, "8f6830dc7ad5b37f") == 0 && sc.nfields == 65535, "65535 fields: %s",
          rc == 0 ? sc.fingerprint : err.message);
    if (rc == 0) qc_schema_free(&sc);
    v.n -= 5; sb_puts(&v, ",{\"kind\": \"Bool\"}]}}]}");
    f.n -= 2; sb_puts(&f, ",\"g\": {\"kind\": \"Bool\"}}}");
    rc = qc_schema_parse(&sc, v.b, v.n, NULL, &err);
    CHECK(rc < 0 && strcmp(err.message, "field 'f': a Vector has at most 65535 components, got 65536") == 0, "Vector of 65536: %s",
          rc == 0 ? "accepted" : err.message);
    if (rc == 0) qc_schema_free(&sc);
    rc = qc_schema_parse(&sc, f.b, f.n, NULL, &err);
    CHECK(rc < 0 && strcmp(err.message, "a schema has at most 65535 fields, got 65536") == 0, "65536 fields: %s",
          rc == 0 ? "accepted" : err.message);
    if (rc == 0) qc_schema_free(&sc);
    free(v.b);
    free(f.b);
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

/* ---- SipHash-2-4 and the key derivation (wire-format 17) ---- */

/* the reference implementation's 64 vectors (key 00..0f, message 00..n-1), recomputed with a
   Python SipHash written from the paper; n = 0 and n = 15 are the wire format's two examples */
static const uint64_t SIP_VECTORS[64] = {
    0x726fdb47dd0e0e31ull, 0x74f839c593dc67fdull, 0x0d6c8009d9a94f5aull, 0x85676696d7fb7e2dull,
    0xcf2794e0277187b7ull, 0x18765564cd99a68dull, 0xcbc9466e58fee3ceull, 0xab0200f58b01d137ull,
    0x93f5f5799a932462ull, 0x9e0082df0ba9e4b0ull, 0x7a5dbbc594ddb9f3ull, 0xf4b32f46226bada7ull,
    0x751e8fbc860ee5fbull, 0x14ea5627c0843d90ull, 0xf723ca908e7af2eeull, 0xa129ca6149be45e5ull,
    0x3f2acc7f57c29bdbull, 0x699ae9f52cbe4794ull, 0x4bc1b3f0968dd39cull, 0xbb6dc91da77961bdull,
    0xbed65cf21aa2ee98ull, 0xd0f2cbb02e3b67c7ull, 0x93536795e3a33e88ull, 0xa80c038ccd5ccec8ull,
    0xb8ad50c6f649af94ull, 0xbce192de8a85b8eaull, 0x17d835b85bbb15f3ull, 0x2f2e6163076bcfadull,
    0xde4daaaca71dc9a5ull, 0xa6a2506687956571ull, 0xad87a3535c49ef28ull, 0x32d892fad841c342ull,
    0x7127512f72f27cceull, 0xa7f32346f95978e3ull, 0x12e0b01abb051238ull, 0x15e034d40fa197aeull,
    0x314dffbe0815a3b4ull, 0x027990f029623981ull, 0xcadcd4e59ef40c4dull, 0x9abfd8766a33735cull,
    0x0e3ea96b5304a7d0ull, 0xad0c42d6fc585992ull, 0x187306c89bc215a9ull, 0xd4a60abcf3792b95ull,
    0xf935451de4f21df2ull, 0xa9538f0419755787ull, 0xdb9acddff56ca510ull, 0xd06c98cd5c0975ebull,
    0xe612a3cb9ecba951ull, 0xc766e62cfcadaf96ull, 0xee64435a9752fe72ull, 0xa192d576b245165aull,
    0x0a8787bf8ecb74b2ull, 0x81b3e73d20b49b6full, 0x7fa8220ba3b2eceaull, 0x245731c13ca42499ull,
    0xb78dbfaf3a8d83bdull, 0xea1ad565322a1a0bull, 0x60e61c23a3795013ull, 0x6606d7e446282b93ull,
    0x6ca4ecb15c5f91e1ull, 0x9f626da15c9625f3ull, 0xe51b38608ef25f57ull, 0x958a324ceb064572ull,
};

static void hex16(const uint8_t *b, char *out) {
    int i;
    for (i = 0; i < 16; i++) sprintf(out + 2 * i, "%02x", b[i]);
}

static void test_siphash(void) {
    uint8_t key[16], msg[64], mk[16], k[16];
    static uint8_t big[256];
    char hx[40];
    int n, bad = 0;
    for (n = 0; n < 16; n++) key[n] = (uint8_t)n;
    for (n = 0; n < 64; n++) msg[n] = (uint8_t)n;
    CHECK(qc_siphash(key, msg, 0) == 0x726fdb47dd0e0e31ull, "siphash of the empty message: %016llx", (unsigned long long)qc_siphash(key, msg, 0));
    CHECK(qc_siphash(key, msg, 15) == 0xa129ca6149be45e5ull, "siphash of 15 bytes: %016llx", (unsigned long long)qc_siphash(key, msg, 15));
    for (n = 0; n < 64; n++)
        if (qc_siphash(key, msg, (size_t)n) != SIP_VECTORS[n]) {
            if (bad < 3) printf("  siphash vector %d: %016llx, want %016llx\n", n, (unsigned long long)qc_siphash(key, msg, (size_t)n),
                                (unsigned long long)SIP_VECTORS[n]);
            bad++;
        }
    CHECK(bad == 0, "siphash: %d of the 64 reference vectors differ", bad);
    /* an unaligned message gives the same tag as an aligned copy */
    for (n = 0; n < 200; n++) big[n + 3] = (uint8_t)(n * 7);
    memcpy(big + 128, big + 3, 100);
    CHECK(qc_siphash(key, big + 3, 100) == qc_siphash(key, big + 128, 100), "siphash: unaligned data differs");
    /* the derivation, against the Python reference (key 00..0f; a one-byte and a 255-byte key) */
    CHECK(qc_mac_master(key, 16, mk) == 0, "mac master of a 16-byte key refused");
    hex16(mk, hx);
    CHECK(strcmp(hx, "13314e21ed015d7b7d9a9980d89475dc") == 0, "mk of key 00..0f: %s", hx);
    qc_mac_sub(mk, (const uint8_t *)"quantcodec hello", 16, k);
    hex16(k, hx);
    CHECK(strcmp(hx, "3f6cf6f197a49aa0709e58ad2e97abba") == 0, "kH of key 00..0f: %s", hx);
    qc_mac_sub(mk, (const uint8_t *)"quantcodec hello request", 24, k);
    hex16(k, hx);
    CHECK(strcmp(hx, "1d0b63e49683f4265e248f95d1c6ac1f") == 0, "kQ of key 00..0f: %s", hx);
    msg[0] = 0xff;
    qc_mac_master(msg, 1, mk);
    hex16(mk, hx);
    CHECK(strcmp(hx, "5823a7f0d096994dce276494f5420829") == 0, "mk of key ff: %s", hx);
    for (n = 0; n < 255; n++) big[n] = (uint8_t)n;
    CHECK(qc_mac_master(big, 255, mk) == 0, "a 255-byte key refused");
    hex16(mk, hx);
    CHECK(strcmp(hx, "2754c2f3b53d8151ccbd2b4dab70bacd") == 0, "mk of key 00..fe: %s", hx);
    CHECK(qc_mac_master(big, 0, mk) < 0 && qc_mac_master(big, 256, mk) < 0 && qc_mac_master(NULL, 16, mk) < 0,
          "a key of 0 or 256 bytes, or NULL, accepted");
    {
        /* the decoder and the client refuse a bad key with a message saying why */
        qc_schema sc;
        qc_decoder d;
        qc_decoder_config cfg;
        qc_client cl;
        qc_error err;
        const char *js = "{\"name\":\"k\",\"fields\":[{\"name\":\"a\",\"codec\":{\"kind\":\"Bool\"}}]}";
        qc_schema_parse(&sc, js, strlen(js), NULL, &err);
        memset(&cfg, 0, sizeof cfg);
        cfg.key = big;
        cfg.key_len = 256;
        err.message[0] = 0;
        CHECK(qc_decoder_init(&d, &sc, &cfg, &err) < 0 && strstr(err.message, "1 to 255") != NULL, "a 256-byte key: %s", err.message);
        /* negative bounds are mistakes, not defaults (0 is the default): refused, naming them */
        memset(&cfg, 0, sizeof cfg);
        cfg.max_history = -1;
        CHECK(qc_decoder_init(&d, &sc, &cfg, &err) < 0 && strstr(err.message, "max_history -1 is negative") != NULL,
              "max_history -1: %s", err.message);
        cfg.max_history = 0;
        cfg.max_partials = -5;
        CHECK(qc_decoder_init(&d, &sc, &cfg, &err) < 0 && strstr(err.message, "max_partials -5 is negative") != NULL,
              "max_partials -5: %s", err.message);
        CHECK(qc_client_init(&cl, &sc, big, 0, 0, 5, &err) < 0 && strstr(err.message, "0 bytes") != NULL, "a key of 0 bytes: %s", err.message);
        CHECK(qc_client_init(&cl, &sc, NULL, 0, 0, (int64_t)1 << 32, &err) < 0 && strstr(err.message, "nonce") != NULL,
              "a nonce of 2**32 accepted: %s", err.message);
        CHECK(qc_client_init(&cl, &sc, NULL, 0, 0, QC_NONCE_RANDOM, &err) == 0, "a random nonce refused");
        qc_client_free(&cl);
        qc_schema_free(&sc);
    }
}

/* ---- keyed streams: a kit stream sealed again with a key (and a smaller max_datagram, so that
   packets go in fragments of the keyed chunk size), built here from the wire format's rules ---- */

typedef struct {
    uint8_t *buf;           /* the datagrams back to back */
    size_t len, cap;
    size_t n, ndg;
    size_t *off, *dlen;     /* each datagram */
    size_t *last;           /* per original datagram: the index of its last datagram here */
} keyed_stream;

static void ks_add(keyed_stream *k, const uint8_t *p, size_t n) {
    if (k->len + n > k->cap) { k->cap = (k->len + n) * 2 + 4096; k->buf = (uint8_t *)realloc(k->buf, k->cap); }
    memcpy(k->buf + k->len, p, n);
    k->off[k->ndg] = k->len;
    k->dlen[k->ndg] = n;
    k->ndg++;
    k->len += n;
}

static void put_le64(uint8_t *p, uint64_t v) { int i; for (i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put_le32(uint8_t *p, uint32_t v) { int i; for (i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }

/* K (wire-format 11) of a hello */
static void stream_key_of(const uint8_t *hello, uint8_t K[41]) {
    memcpy(K, "quantcodec", 10);
    K[10] = 1;
    memcpy(K + 11, hello + 26, 16);
    memcpy(K + 27, hello + 6, 2);
    K[29] = hello[5] & 1;
    memcpy(K + 30, hello + 8, 2);
    memcpy(K + 32, hello + 10, 8);
}

/* every datagram of a one-stream kit stream, sealed with `key` (max_datagram md2): the hello
   with md2 and a tag, whole packets with a tag or in fragments, anything else as it was */
static int rekey(const dgram *dg, size_t n, const uint8_t *key, size_t key_len, int md2, keyed_stream *out) {
    uint8_t K[41], K2[41], mk[16], kh[16], kp[16], kf[16];
    uint32_t sp = 0, sf = 0, sp2;
    size_t i, h = n;
    static uint8_t tmp[70000];
    for (i = 0; i < n && h == n; i++)
        if (dg[i].n >= 55 && memcmp(dg[i].p, "QCHL", 4) == 0) h = i;
    if (h == n) return -1;
    stream_key_of(dg[h].p, K);
    K[40] = 'P'; sp = qc_crc32c(K, 41, 0);
    K[40] = 'F'; sf = qc_crc32c(K, 41, 0);
    memcpy(tmp, dg[h].p, dg[h].n - 4);
    tmp[8] = (uint8_t)md2; tmp[9] = (uint8_t)(md2 >> 8);
    stream_key_of(tmp, K2);
    qc_mac_master(key, key_len, mk);
    qc_mac_sub(mk, (const uint8_t *)"quantcodec hello", 16, kh);
    K2[40] = 'P'; qc_mac_sub(mk, K2, 41, kp); sp2 = qc_crc32c(K2, 41, 0);
    K2[40] = 'F'; qc_mac_sub(mk, K2, 41, kf);
    memset(out, 0, sizeof *out);
    out->n = n;
    out->off = (size_t *)malloc(sizeof(size_t) * (n * 300 + 1));
    out->dlen = (size_t *)malloc(sizeof(size_t) * (n * 300 + 1));
    out->last = (size_t *)malloc(sizeof(size_t) * (n + 1));
    for (i = 0; i < n; i++) {
        const uint8_t *d = dg[i].p;
        size_t len = dg[i].n;
        uint32_t c = len >= 5 ? (uint32_t)d[len - 4] | (uint32_t)d[len - 3] << 8 | (uint32_t)d[len - 2] << 16 | (uint32_t)d[len - 1] << 24 : 0;
        if (len >= 55 && memcmp(d, "QCHL", 4) == 0 && qc_crc32c(d, len - 4, qc_crc32c((const uint8_t *)"quantcodec hello", 16, 0)) == c &&
                memcmp(d + 10, dg[h].p + 10, 8) == 0) {
            memcpy(tmp, d, len - 4);
            tmp[8] = (uint8_t)md2; tmp[9] = (uint8_t)(md2 >> 8);
            put_le64(tmp + len - 4, qc_siphash(kh, tmp, len - 4));
            ks_add(out, tmp, len + 4);
        } else if (len >= 5 && qc_crc32c(d, len - 4, sp) == c) {
            size_t plen = len - 4, C = (size_t)md2 - 16;
            if (plen + 8 <= (size_t)md2 || i < h) {     /* (before the hello: whole, refused as no-hello) */
                memcpy(tmp, d, plen);
                put_le64(tmp + plen, qc_siphash(kp, tmp, plen));
                ks_add(out, tmp, plen + 8);
            } else {
                size_t count = (plen + C - 1) / C, f;
                uint32_t pcheck = qc_crc32c(d, plen, sp2);
                for (f = 0; f < count; f++) {
                    size_t cl = f + 1 < count ? C : plen - f * C;
                    tmp[0] = d[0]; tmp[1] = d[1];
                    tmp[2] = (uint8_t)f; tmp[3] = (uint8_t)(count - 1);
                    put_le32(tmp + 4, pcheck);
                    memcpy(tmp + 8, d + f * C, cl);
                    put_le64(tmp + 8 + cl, qc_siphash(kf, tmp, 8 + cl));
                    ks_add(out, tmp, 16 + cl);
                }
            }
        } else {
            if (len >= 13 && qc_crc32c(d, len - 4, sf) == c) { free(out->off); free(out->dlen); free(out->last); return -1; }
            ks_add(out, d, len);    /* junk stays junk */
        }
        out->last[i] = out->ndg - 1;
    }
    return 0;
}

static void ks_free(keyed_stream *k) { free(k->buf); free(k->off); free(k->dlen); free(k->last); }

static void test_keyed(void) {
    static const int which[] = {0, 1};      /* pose_clean, pose_lossy */
    uint8_t key[16];
    int w, i;
    for (i = 0; i < 16; i++) key[i] = (uint8_t)(0xA0 + i);
    for (w = 0; w < 2; w++) {
        qc_schema sc;
        char *dtext, *etext;
        size_t dlen, elen, n, k, j;
        static dgram dg[100000];
        keyed_stream ks;
        qc_client plain, keyed, wrong;
        qc_error err;
        int bad = 0, frags = 0, badrep = 0, replies = 0, noise = 0;
        uint8_t wkey[16];
        if (load_stream(which[w], &sc, &dtext, &dlen, &etext, &elen) < 0) continue;
        n = split_datagrams(dtext, dlen, dg, 100000);
        if (rekey(dg, n, key, 16, 200, &ks) < 0) { CHECK(0, "keyed: cannot reseal %s", STREAMS[which[w]][0]); continue; }
        memcpy(wkey, key, 16);
        wkey[15] ^= 1;
        qc_client_init(&plain, &sc, NULL, 0, 0, 77, &err);
        qc_client_init(&keyed, &sc, key, 16, 0, 77, &err);
        qc_client_init(&wrong, &sc, wkey, 16, 0, 77, &err);
        j = 0;
        for (k = 0; k < n; k++) {
            qc_result r1, r2, r3;
            sbuf o1 = {0, 0, 0}, o2 = {0, 0, 0};
            uint8_t p1[QC_REPLY_MAX], p2[QC_REPLY_MAX];
            size_t l1, l2;
            int s1 = qc_client_receive(&plain, dg[k].p, dg[k].n, &r1), s2 = 0;
            l1 = qc_client_reply(&plain, p1);
            for (; j <= ks.last[k]; j++) {
                s2 = qc_client_receive(&keyed, ks.buf + ks.off[j], ks.dlen[j], &r2);
                if (j < ks.last[k]) {
                    frags++;
                    if (s2 != QC_PENDING || qc_client_reply(&keyed, p2) != 0) {
                        if (bad < 3) printf("  keyed %s datagram %lu: a fragment not last: %d (%s)\n", STREAMS[which[w]][0], (unsigned long)k, s2, r2.message);
                        bad++;
                    }
                }
                /* a decoder with another key takes nothing of the stream */
                if (qc_client_receive(&wrong, ks.buf + ks.off[j], ks.dlen[j], &r3) != QC_E_NO_HELLO) noise++;
            }
            l2 = qc_client_reply(&keyed, p2);
            result_line(&sc, s1, &r1, &o1);
            result_line(&sc, s2, &r2, &o2);
            if (o1.n != o2.n || memcmp(o1.b, o2.b, o1.n) != 0) {
                if (bad < 3) printf("  keyed %s datagram %lu: %.*s\n    unkeyed: %.*s\n", STREAMS[which[w]][0], (unsigned long)k,
                                    (int)(o2.n > 120 ? 120 : o2.n), o2.b, (int)(o1.n > 120 ? 120 : o1.n), o1.b);
                bad++;
            }
            /* the same reply, but for its check: 8 bytes of tag instead of 4 of CRC */
            if (l1 ? !(l2 == l1 + 4 && memcmp(p1, p2, l1 - 4) == 0) : l2 != 0) badrep++;
            if (l1) replies++;
            free(o1.b);
            free(o2.b);
        }
        CHECK(bad == 0 && frags > 0, "keyed %s: %d datagrams decoded otherwise than unkeyed (%d keyed fragments)", STREAMS[which[w]][0], bad, frags);
        CHECK(badrep == 0 && replies > 0, "keyed %s: %d of %d replies differ from the unkeyed ones", STREAMS[which[w]][0], badrep, replies);
        CHECK(noise == 0 && !wrong.dec.adopted, "keyed %s: a client with another key took %d datagrams", STREAMS[which[w]][0], noise);
        qc_client_free(&plain);
        qc_client_free(&keyed);
        qc_client_free(&wrong);
        /* an unkeyed client takes nothing of the keyed stream, a keyed one nothing of the plain one */
        qc_client_init(&plain, &sc, NULL, 0, 0, 1, &err);
        qc_client_init(&keyed, &sc, key, 16, 0, 1, &err);
        noise = 0;
        for (j = 0; j < ks.ndg; j++) { qc_result r; if (qc_client_receive(&plain, ks.buf + ks.off[j], ks.dlen[j], &r) != QC_E_NO_HELLO) noise++; }
        for (k = 0; k < n; k++) { qc_result r; if (qc_client_receive(&keyed, dg[k].p, dg[k].n, &r) != QC_E_NO_HELLO) noise++; }
        CHECK(noise == 0, "keyed %s: %d datagrams taken across keyed and unkeyed", STREAMS[which[w]][0], noise);
        qc_client_free(&plain);
        qc_client_free(&keyed);
        if (w == 0) {
            /* the minimal lengths with T = 8: a whole packet of 1 + T bytes reaches the packet
               decoder (malformed: a 1-byte packet), 8 bytes is no datagram; a fragment of 9 + T
               bytes reaches the fragment rules; the same with T = 4 unkeyed */
            qc_decoder d;
            qc_decoder_config cfg;
            qc_result r;
            uint8_t b[64];
            size_t h = 0;
            while (h < ks.ndg && memcmp(ks.buf + ks.off[h], "QCHL", 4) != 0) h++;
            memset(&cfg, 0, sizeof cfg);
            cfg.key = key;
            cfg.key_len = 16;
            qc_decoder_init(&d, &sc, &cfg, &err);
            CHECK(qc_decoder_datagram(&d, ks.buf + ks.off[h], ks.dlen[h], &r) == QC_PENDING && r.adopted && d.chunk == 200 - 16,
                  "keyed hello not adopted: %s", r.message);
            b[0] = 7;
            put_le64(b + 1, qc_siphash(d.k_p, b, 1));
            CHECK(qc_decoder_datagram(&d, b, 9, &r) == QC_E_MALFORMED, "keyed: a 9-byte whole datagram: %s", r.kind);
            CHECK(qc_decoder_datagram(&d, b + 1, 8, &r) == QC_E_CHECK, "keyed: an 8-byte datagram: %s", r.kind);
            memset(b, 0, 9);
            put_le64(b + 9, qc_siphash(d.k_f, b, 9));      /* count - 1 = 0 */
            CHECK(qc_decoder_datagram(&d, b, 17, &r) == QC_E_FRAGMENT, "keyed: a 17-byte fragment: %s", r.kind);
            put_le64(b + 8, qc_siphash(d.k_f, b, 8));
            CHECK(qc_decoder_datagram(&d, b, 16, &r) == QC_E_CHECK, "keyed: a 16-byte fragment-sealed datagram: %s", r.kind);
            b[3] = 1;                                       /* count 2, index 0: a chunk of 1, not C */
            put_le64(b + 9, qc_siphash(d.k_f, b, 9));
            CHECK(qc_decoder_datagram(&d, b, 17, &r) == QC_E_FRAGMENT && strstr(r.message, "184") != NULL,
                  "keyed: a short chunk: %s (%s)", r.kind, r.message);
            /* the same hello with a CRC instead of the tag is no hello here */
            qc_decoder_free(&d);
            qc_decoder_init(&d, &sc, NULL, &err);
            qc_decoder_datagram(&d, dg[0].p, dg[0].n, &r);
            for (k = 0; k < n && !d.adopted; k++) qc_decoder_datagram(&d, dg[k].p, dg[k].n, &r);
            b[0] = 7;
            put_le32(b + 1, qc_crc32c(b, 1, d.seed_p));
            CHECK(qc_decoder_datagram(&d, b, 5, &r) == QC_E_MALFORMED, "unkeyed: a 5-byte whole datagram: %s", r.kind);
            CHECK(qc_decoder_datagram(&d, b + 1, 4, &r) == QC_E_CHECK, "unkeyed: a 4-byte datagram: %s", r.kind);
            qc_decoder_free(&d);
        }
        ks_free(&ks);
        qc_schema_free(&sc);
        free(dtext);
        free(etext);
    }
}

/* ---- replies (wire-format 18): the layout, field by field, and the due rule ---- */

static uint32_t le32_at(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t le64_at(const uint8_t *p) { return (uint64_t)le32_at(p) | (uint64_t)le32_at(p + 4) << 32; }

/* a hello request as the wire format lays it out; the check T bytes */
static int is_hello_request(const uint8_t *r, size_t n, uint32_t nonce, uint32_t rseq, const char *fp, const uint8_t *kq) {
    if (n != (kq ? 34u : 30u) || r[0] != 0x48 || r[1] != 0 || le32_at(r + 2) != nonce || le32_at(r + 6) != rseq || memcmp(r + 10, fp, 16) != 0)
        return 0;
    if (kq) return le64_at(r + 26) == qc_siphash(kq, r, 26);
    return le32_at(r + 26) == qc_crc32c(r, 26, qc_crc32c((const uint8_t *)"quantcodec hello request", 24, 0));
}

static int is_ack(const uint8_t *r, size_t n, uint32_t nonce, uint32_t rseq, int latest, uint32_t acks, uint32_t seed_r, const uint8_t *kr) {
    if (n != (kr ? 24u : 20u) || r[0] != 0x41 || r[1] != (latest >= 0 ? 1 : 0) || le32_at(r + 2) != nonce || le32_at(r + 6) != rseq ||
            (unsigned)(r[10] | r[11] << 8) != (unsigned)(latest >= 0 ? latest : 0) || le32_at(r + 12) != acks)
        return 0;
    if (kr) return le64_at(r + 16) == qc_siphash(kr, r, 16);
    return le32_at(r + 16) == qc_crc32c(r, 16, seed_r);
}

static void test_replies(void) {
    int keyed;
    for (keyed = 0; keyed < 2; keyed++) {
        qc_schema sc;
        char *dtext, *etext;
        size_t dlen, elen, n, k, h, nd;
        static dgram dg[100000], kd[100000];
        static uint8_t decoded[65536];
        keyed_stream ks;
        qc_client c;
        qc_error err;
        qc_result res;
        uint8_t r[QC_REPLY_MAX], K[41], mk[16], kr[16], kq[16], key[20], junk[3] = {1, 2, 3};
        uint32_t nonce = 0xA1B2C3D4u, rseq = 0, seed_r;
        int st, bad = 0, acks = 0, latest = -1, hist;
        size_t rl;
        if (load_stream(0, &sc, &dtext, &dlen, &etext, &elen) < 0) return;
        n = split_datagrams(dtext, dlen, dg, 100000);
        for (k = 0; k < 20; k++) key[k] = (uint8_t)(k * 13 + 1);
        nd = n;
        if (keyed) {
            if (rekey(dg, n, key, 20, 1200, &ks) < 0) { CHECK(0, "replies: cannot reseal"); return; }
            nd = ks.ndg;
            for (k = 0; k < nd; k++) { kd[k].p = ks.buf + ks.off[k]; kd[k].n = ks.dlen[k]; }
        } else {
            memcpy(kd, dg, n * sizeof(dgram));
        }
        for (h = 0; h < nd && memcmp(kd[h].p, "QCHL", 4) != 0; h++) {}
        stream_key_of(kd[h].p, K);
        K[40] = 'R';
        seed_r = qc_crc32c(K, 41, 0);
        qc_mac_master(key, 20, mk);
        qc_mac_sub(mk, K, 41, kr);
        qc_mac_sub(mk, (const uint8_t *)"quantcodec hello request", 24, kq);
        hist = (int)(kd[h].p[6] | kd[h].p[7] << 8);
        qc_client_init(&c, &sc, keyed ? key : NULL, keyed ? 20 : 0, 0, (int64_t)nonce, &err);
        /* a new client owes a hello request (rseq 0), once */
        rl = qc_client_reply(&c, r);
        CHECK(is_hello_request(r, rl, nonce, rseq++, sc.fingerprint, keyed ? kq : NULL) && qc_client_reply(&c, r) == 0,
              "replies (keyed %d): a new client's first reply is not one hello request (%lu bytes)", keyed, (unsigned long)rl);
        /* junk before the hello: no-hello, a hello request is due, once */
        st = qc_client_receive(&c, junk, 3, &res);
        rl = qc_client_reply(&c, r);
        CHECK(st == QC_E_NO_HELLO && is_hello_request(r, rl, nonce, rseq++, sc.fingerprint, keyed ? kq : NULL),
              "replies (keyed %d): no hello request after a no-hello refusal (%lu bytes)", keyed, (unsigned long)rl);
        CHECK(qc_client_reply(&c, r) == 0, "replies: a second reply for one datagram");
        /* the hello: adopted, an ack of nothing yet */
        st = qc_client_receive(&c, kd[h].p, kd[h].n, &res);
        rl = qc_client_reply(&c, r);
        CHECK(st == QC_PENDING && res.adopted && is_ack(r, rl, nonce, rseq++, -1, 0, seed_r, keyed ? kr : NULL),
              "replies (keyed %d): no ack after the hello was adopted", keyed);
        /* the hello again: nothing due */
        st = qc_client_receive(&c, kd[h].p, kd[h].n, &res);
        CHECK(st == QC_PENDING && !res.adopted && qc_client_reply(&c, r) == 0, "replies: a reply after a hello seen before");
        /* a damaged datagram, a sealed malformed packet, a sealed bad fragment: nothing due */
        {
            uint8_t b[64];
            memcpy(b, kd[h + 1].p, 40);
            b[3] ^= 0x10;
            st = qc_client_receive(&c, b, 40, &res);
            CHECK(st == QC_E_CHECK && qc_client_reply(&c, r) == 0, "replies: a reply after a refused check (%d)", st);
            b[0] = 7;
            if (keyed) put_le64(b + 1, qc_siphash(c.dec.k_p, b, 1)); else put_le32(b + 1, qc_crc32c(b, 1, c.dec.seed_p));
            st = qc_client_receive(&c, b, keyed ? 9 : 5, &res);
            CHECK(st == QC_E_MALFORMED && qc_client_reply(&c, r) == 0, "replies: a reply after a malformed packet (%d)", st);
            memset(b, 0, 9);
            if (keyed) put_le64(b + 9, qc_siphash(c.dec.k_f, b, 9)); else put_le32(b + 9, qc_crc32c(b, 9, c.dec.seed_f));
            st = qc_client_receive(&c, b, keyed ? 17 : 13, &res);
            CHECK(st == QC_E_FRAGMENT && qc_client_reply(&c, r) == 0, "replies: a reply after a bad fragment (%d)", st);
        }
        /* the stream: an ack after each view, naming the possible baselines among the 32 before */
        memset(decoded, 0, sizeof decoded);
        for (k = h + 1; k < nd; k++) {
            st = qc_client_receive(&c, kd[k].p, kd[k].n, &res);
            rl = qc_client_reply(&c, r);
            if (st == QC_SNAPSHOT) {
                uint32_t want = 0;
                int i;
                decoded[res.snapshot->seq] = 1;
                if (latest < 0 || qc__newer(res.snapshot->seq, latest)) latest = res.snapshot->seq;
                for (i = 0; i < 32 && i + 1 < hist; i++)
                    if (decoded[(latest - 1 - i) & 0xFFFF]) want |= (uint32_t)1 << i;
                if (!is_ack(r, rl, nonce, rseq++, latest, want, seed_r, keyed ? kr : NULL)) {
                    if (bad < 3) printf("  replies: datagram %lu (latest %d): not the ack expected (%lu bytes, acks %08x)\n",
                                        (unsigned long)k, latest, (unsigned long)rl, rl >= 16 ? le32_at(r + 12) : 0);
                    bad++;
                }
                if (want & 0x80000000u) acks++;
            } else if (rl != 0) {
                bad++;
            }
        }
        CHECK(bad == 0 && acks > 0, "replies (keyed %d): %d acks differ (%d with all 32 bits)", keyed, bad, acks);
        qc_client_free(&c);
        /* a baseline refusal makes a reply due; a limits refusal does not */
        qc_client_init(&c, &sc, keyed ? key : NULL, keyed ? 20 : 0, 0, 9, &err);
        qc_client_receive(&c, kd[h].p, kd[h].n, &res);
        qc_client_reply(&c, r);
        /* (the first datagram a client holding only the hello refuses as baseline: a delta) */
        for (k = h + 1; k < nd; k++) {
            qc_client_free(&c);
            qc_client_init(&c, &sc, keyed ? key : NULL, keyed ? 20 : 0, 0, 9, &err);
            qc_client_receive(&c, kd[h].p, kd[h].n, &res);
            qc_client_reply(&c, r);
            st = qc_client_receive(&c, kd[k].p, kd[k].n, &res);
            if (st == QC_E_BASELINE) break;
        }
        rl = qc_client_reply(&c, r);
        CHECK(st == QC_E_BASELINE && is_ack(r, rl, 9, 1, -1, 0, seed_r, keyed ? kr : NULL), "replies: no ack after a baseline refusal (%d)", st);
        qc_client_free(&c);
        /* (the bound of the hello alone: the stream's sixth snapshot or so passes it) */
        qc_client_init(&c, &sc, keyed ? key : NULL, keyed ? 20 : 0, (size_t)(2 * hist - 1) * 256 + 256 * (size_t)(kd[h].p[8] | kd[h].p[9] << 8), 9, &err);
        for (k = h, st = 0; k < nd && st != QC_E_LIMITS; k++) {
            st = qc_client_receive(&c, kd[k].p, kd[k].n, &res);
            if (st != QC_E_LIMITS) qc_client_reply(&c, r);
        }
        CHECK(st == QC_E_LIMITS && strcmp(res.kind, "limits") == 0 && qc_client_reply(&c, r) == 0, "replies: a reply after a limits refusal (%d)", st);
        qc_client_free(&c);
        if (keyed) ks_free(&ks);
        qc_schema_free(&sc);
        free(dtext);
        free(etext);
    }
}

/* wire-format 18's keep-alives (tests/test_session.py
   test_reply_makes_a_keep_alive_every_32nd_call_while_none_is_due): a call of qc_client_reply
   that would return 0 makes the reply all the same when the 31 calls before it returned 0; any
   reply made starts the count again. Before a stream, hello requests; after, acks. */
static void test_keepalive(void) {
    qc_schema sc;
    char *dtext, *etext;
    size_t dlen, elen, n, k, gl[65];
    static dgram dg[4096];
    static uint8_t got[65][QC_REPLY_MAX];
    uint8_t r[QC_REPLY_MAX];
    qc_client c;
    qc_error err;
    qc_result res;
    uint32_t rseq = 0;
    int made[65], nmade = 0, i, ok, views = 0, st = 0, latest;
    if (load_stream(0, &sc, &dtext, &dlen, &etext, &elen) < 0) { CHECK(0, "keep-alives: cannot load pose_clean"); return; }
    n = split_datagrams(dtext, dlen, dg, 4096);
    qc_client_init(&c, &sc, NULL, 0, 0, 7, &err);
    /* 65 calls, nothing received: replies at calls 0 (due: the first hello request), 32 and 64 */
    for (i = 0; i < 65; i++) {
        gl[i] = qc_client_reply(&c, got[i]);
        if (gl[i]) made[nmade++] = i;
    }
    CHECK(nmade == 3 && made[0] == 0 && made[1] == 32 && made[2] == 64, "keep-alives: %d replies in 65 calls (%d, %d, %d)", nmade,
          nmade > 0 ? made[0] : -1, nmade > 1 ? made[1] : -1, nmade > 2 ? made[2] : -1);
    for (ok = nmade == 3, i = 0; ok && i < 3; i++) ok = is_hello_request(got[made[i]], gl[made[i]], 7, rseq++, sc.fingerprint, NULL);
    CHECK(ok && c.idle == 0, "keep-alives: hello requests with rseq 0, 1, 2 (the stream not adopted)");
    for (i = 0; i < 5; i++) qc_client_reply(&c, r);
    CHECK(c.idle == 5 && !c.due, "keep-alives: idle counts the calls that returned 0 (%d)", c.idle);
    /* the stream: its hello and three views, a reply after each */
    for (k = 0; k < n && views < 3; k++) {
        st = qc_client_receive(&c, dg[k].p, dg[k].n, &res);
        if (st == QC_SNAPSHOT) views++;
        if (qc_client_reply(&c, r) != 0) rseq++;
    }
    CHECK(views == 3 && c.dec.adopted && c.idle == 0, "keep-alives: pose_clean's hello and three views (%d)", views);
    /* nothing arrives: a keep-alive ack at the 32nd call, naming latest */
    latest = qc_decoder_latest(&c.dec);
    for (nmade = 0, i = 0; i < 40; i++) {
        gl[i] = qc_client_reply(&c, got[i]);
        if (gl[i]) made[nmade++] = i;
    }
    CHECK(nmade == 1 && made[0] == 31 && gl[31] == 20 && got[31][0] == 0x41 && got[31][1] == 1 && le32_at(got[31] + 2) == 7 &&
          le32_at(got[31] + 6) == rseq && (int)(got[31][10] | got[31][11] << 8) == latest &&
          le32_at(got[31] + 16) == qc_crc32c(got[31], 16, c.dec.seed_r),
          "keep-alives: after the stream, 40 calls: %d replies (the first at %d), not one ack at 31", nmade, nmade ? made[0] : -1);
    rseq++;
    /* 20 calls more, then a view: its reply is due, and the count starts again from it (a
       keep-alive 31 calls after it, not 11) */
    for (i = 0; i < 20; i++) qc_client_reply(&c, r);
    for (st = 0; k < n && st != QC_SNAPSHOT; k++) st = qc_client_receive(&c, dg[k].p, dg[k].n, &res);
    CHECK(st == QC_SNAPSHOT && qc_client_reply(&c, r) != 0 && le32_at(r + 6) == rseq, "keep-alives: the next view's reply (due)");
    rseq++;
    for (nmade = 0, i = 0; i < 31; i++) if (qc_client_reply(&c, r) != 0) nmade++;
    CHECK(nmade == 0 && qc_client_reply(&c, r) == 20 && r[0] == 0x41 && le32_at(r + 6) == rseq,
          "keep-alives: after a due reply, 31 calls of nothing (%d replies), then a keep-alive", nmade);
    qc_client_free(&c);
    qc_schema_free(&sc);
    free(dtext);
    free(etext);
}

/* ---- limits (wire-format 19) ---- */

typedef struct { int seq; uint64_t cost; } held_model;

static void test_limits(void) {
    qc_schema sc;
    char *dtext, *etext;
    size_t dlen, elen, n, k, h;
    static dgram dg[100000];
    static held_model held[65536];
    static uint64_t need[100000];
    qc_client c;
    qc_error err;
    qc_result res;
    int nheld = 0, latest = -1, hist, md, keep, st, views = 0, kfirst = -1, bad = 0;
    uint64_t hello_need, per, best = 0, M;
    if (load_stream(0, &sc, &dtext, &dlen, &etext, &elen) < 0) return;
    n = split_datagrams(dtext, dlen, dg, 100000);
    for (h = 0; h < n && memcmp(dg[h].p, "QCHL", 4) != 0; h++) {}
    hist = dg[h].p[6] | dg[h].p[7] << 8;
    md = dg[h].p[8] | dg[h].p[9] << 8;
    keep = 2 * hist - 1;
    per = 8 + 8 * (uint64_t)sc.nslots;
    CHECK(qc_snapshot_cost(&sc, 1000) == 256 + 1000 * per && per == 8 + 8 * 12, "the cost of a snapshot of 1000 pose entities");
    /* check 1: the hello needs (2 * history - 1) * 256 + 256 * max_datagram */
    hello_need = (uint64_t)keep * 256 + 256 * (uint64_t)md;
    qc_client_init(&c, &sc, NULL, 0, (size_t)hello_need - 1, 1, &err);
    st = qc_client_receive(&c, dg[h].p, dg[h].n, &res);
    CHECK(st == QC_E_LIMITS && !c.dec.adopted && strstr(res.message, "max_bytes") != NULL, "limits: a hello above max_bytes: %d %s", st, res.message);
    st = qc_client_receive(&c, dg[h + 1].p, dg[h + 1].n, &res);
    CHECK(st == QC_E_NO_HELLO, "limits: after a hello refused for limits, a packet: %d", st);
    qc_client_free(&c);
    qc_client_init(&c, &sc, NULL, 0, (size_t)hello_need, 1, &err);
    st = qc_client_receive(&c, dg[h].p, dg[h].n, &res);
    CHECK(st == QC_PENDING && c.dec.adopted, "limits: a hello of exactly max_bytes refused: %s", res.message);
    qc_client_free(&c);
    /* check 2: each view's need, H (the held snapshots that stay in section 10's window: a view
       newer than latest leaves out those it pushes out; a clean stream in order, so the window
       alone decides) + the new snapshot + reassembly */
    qc_client_init(&c, &sc, NULL, 0, 0, 1, &err);
    for (k = 0; k < n; k++) {
        st = qc_client_receive(&c, dg[k].p, dg[k].n, &res);
        need[k] = 0;
        if (st == QC_SNAPSHOT) {
            int s = res.snapshot->seq, i, found = 0;
            uint64_t H = 0;
            int moves = latest < 0 || qc__newer(s, latest);
            for (i = 0; i < nheld; i++) {
                if (!moves || ((s - held[i].seq) & 0xFFFF) < keep) H += held[i].cost;
                if (held[i].seq == s) found = 1;
            }
            need[k] = H + 256 + (uint64_t)res.snapshot->n * per + 256 * (uint64_t)md;
            if (latest < 0 || qc__newer(s, latest)) {
                int j = 0;
                latest = s;
                for (i = 0; i < nheld; i++) if (((s - held[i].seq) & 0xFFFF) < keep) held[j++] = held[i];
                nheld = j;
                held[nheld].seq = s; held[nheld].cost = qc_snapshot_cost(&sc, res.snapshot->n); nheld++;
            } else if (!found && ((latest - s) & 0xFFFF) < keep) {
                held[nheld].seq = s; held[nheld].cost = qc_snapshot_cost(&sc, res.snapshot->n); nheld++;
            }
            if (qc_decoder_cost(&c.dec) != 0) {
                uint64_t H2 = 0;
                for (i = 0; i < nheld; i++) H2 += held[i].cost;
                if (qc_decoder_cost(&c.dec) != H2 + 256 * (uint64_t)md) bad++;
            }
            /* the first view that needs more than every view before it, past the 10th */
            if (views++ >= 10 && kfirst < 0 && need[k] > best && need[k] > hello_need) kfirst = (int)k;
            if (need[k] > best) best = need[k];
        }
    }
    qc_client_free(&c);
    CHECK(bad == 0, "limits: the decoder's cost differs from section 10's window %d times", bad);
    CHECK(kfirst > 0, "limits: no view to refuse");
    for (M = need[kfirst > 0 ? kfirst : 0] - 1; kfirst > 0 && M <= need[kfirst]; M++) {
        /* with max_bytes one below its need, that view is refused (limits, state unchanged) and
           every view before it decodes; with exactly its need, it decodes */
        int ok = 1;
        qc_client_init(&c, &sc, NULL, 0, (size_t)M, 1, &err);
        for (k = 0; k <= (size_t)kfirst; k++) {
            uint32_t d0 = digest_core(&c.dec);
            uint8_t r[QC_REPLY_MAX];
            st = qc_client_receive(&c, dg[k].p, dg[k].n, &res);
            if (k < (size_t)kfirst) qc_client_reply(&c, r);
            if (k < (size_t)kfirst && need[k] && st != QC_SNAPSHOT) ok = 0;
            if (k == (size_t)kfirst) {
                if (M < need[k]) {
                    CHECK(st == QC_E_LIMITS && digest_core(&c.dec) == d0 && !c.due, "limits: the view at max_bytes %llu - 1: %d (%s)",
                          (unsigned long long)need[k], st, res.message);
                    CHECK(strstr(res.message, "above max_bytes") != NULL, "limits: the refusal says why: %s", res.message);
                } else {
                    CHECK(st == QC_SNAPSHOT, "limits: the view at exactly its need refused: %s", res.message);
                }
            }
        }
        CHECK(ok, "limits: a view before the limit refused at max_bytes %llu", (unsigned long long)M);
        qc_client_free(&c);
    }
    qc_schema_free(&sc);
    free(dtext);
    free(etext);
    /* a small bound over a lossy stream: refusals of kind limits, each changing nothing, and the
       model never past the bound */
    if (load_stream(1, &sc, &dtext, &dlen, &etext, &elen) == 0) {
        int lim = 0, over = 0, changed = 0, due = 0;
        n = split_datagrams(dtext, dlen, dg, 100000);
        M = 339712 + 3 * (256 + 64 * per);
        qc_client_init(&c, &sc, NULL, 0, (size_t)M, 1, &err);
        for (k = 0; k < n; k++) {
            uint32_t d0 = digest_core(&c.dec), r0 = digest_reasm(&c.dec);
            uint8_t r[QC_REPLY_MAX];
            st = qc_client_receive(&c, dg[k].p, dg[k].n, &res);
            if (st == QC_E_LIMITS) {
                lim++;
                if (digest_core(&c.dec) != d0 || digest_reasm(&c.dec) != r0) changed++;
                if (c.due) due++;
            }
            if (qc_decoder_cost(&c.dec) > M) over++;
            qc_client_reply(&c, r);
        }
        CHECK(lim > 0 && changed == 0 && over == 0 && due == 0, "limits over pose_lossy at %llu: %d refusals, %d changed the state, "
              "%d times over, %d replies due", (unsigned long long)M, lim, changed, over, due);
        qc_client_free(&c);
        qc_schema_free(&sc);
        free(dtext);
        free(etext);
    }
}

/* ---- the hostile case of wire-format 19: a hello of history 256, a full packet of 20,000
   entities, then 200 deltas that change nothing, all against it: with the default bound the
   client holds what fits and refuses the rest (kind limits), never past 256 MiB in the model.
   The stream comes from the Python package (tests/make_limits_stream.py, run by run-tests). ---- */
static void test_limits_hostile(void) {
    char path[2048], *dtext, *stext;
    size_t dlen, slen, n, k;
    static dgram dg[100000];
    qc_schema sc;
    qc_client c;
    qc_error err;
    qc_result res;
    int views = 0, lim = 0, changed = 0, other = 0, due = 0, md = 0, big = 0;
    uint64_t peak_cost = 0, cost = 0, want;
    size_t peak_bytes = 0;
    snprintf(path, sizeof path, "%s/clients/c/build/tests/limits_hostile.bin", g_root);
    dtext = read_file(path, &dlen);
    stext = read_rel("conformance/schemas/pose.json", &slen);
    if (dtext == NULL || stext == NULL) {
        printf("  limits, hostile: skipped (no %s: run-tests makes it with the Python package, "
               "tests/make_limits_stream.py, when `import quantcodec` works)\n", path);
        free(dtext); free(stext);
        return;
    }
    qc_schema_parse(&sc, stext, slen, NULL, &err);
    n = split_datagrams(dtext, dlen, dg, 100000);
    qc_client_init(&c, &sc, NULL, 0, 0, 1, &err);
    CHECK(c.dec.max_bytes == 268435456u, "the default max_bytes: %llu", (unsigned long long)c.dec.max_bytes);
    for (k = 0; k < n; k++) {
        uint32_t d0 = digest_core(&c.dec);
        uint8_t r[QC_REPLY_MAX];
        int st = qc_client_receive(&c, dg[k].p, dg[k].n, &res);
        if (st == QC_SNAPSHOT) { views++; if (res.snapshot->n == 20000) big++; }
        else if (st == QC_E_LIMITS) { lim++; if (digest_core(&c.dec) != d0) changed++; if (c.due) due++; }
        else if (st != QC_PENDING) { other++; if (other < 3) printf("  limits, hostile: datagram %lu: %s (%s)\n", (unsigned long)k, res.kind, res.message); }
        if (c.dec.adopted) md = c.dec.max_datagram;
        qc_client_reply(&c, r);
        if (qc_decoder_cost(&c.dec) > peak_cost) peak_cost = qc_decoder_cost(&c.dec);
        if (c.dec.bytes > peak_bytes) peak_bytes = c.dec.bytes;
    }
    cost = qc_snapshot_cost(&sc, 20000);
    want = md ? (268435456u - 256 * (uint64_t)md) / cost : 0;   /* the views that fit */
    CHECK(c.dec.history == 256 && big == views && views > 0, "limits, hostile: history %d, %d views of 20,000 of %d", c.dec.history, big, views);
    CHECK((uint64_t)views == want && lim == 201 - views && other == 0, "limits, hostile: %d views (%llu fit), %d refused for limits, %d otherwise",
          views, (unsigned long long)want, lim, other);
    CHECK(changed == 0 && due == 0, "limits, hostile: %d refusals changed the state, %d made a reply due", changed, due);
    CHECK(peak_cost <= 268435456u, "limits, hostile: the model peaked at %llu bytes", (unsigned long long)peak_cost);
    printf("  limits, hostile: %d views of 20,000 entities held, %d refused (limits); the model's peak %.1f MiB, "
           "the decoder's memory %.1f MiB\n", views, lim, peak_cost / 1048576.0, peak_bytes / 1048576.0);
    qc_client_free(&c);
    qc_schema_free(&sc);
    free(dtext);
    free(stext);
}

/* ---- the junk test over keyed streams, through the session client: junk (random, bit-flipped,
   truncated, extended) never accepted and never changing the state; junk sealed with the
   stream's tags (so that it reaches the packet decoder and the fragment rules) changing nothing
   when refused; no reply due after anything but a view, an adopted hello, or a refusal of kind
   no-hello or baseline; the model never past max_bytes ---- */
/* an error in an entity's fields or record names the entity, the field or slot, and the bit:
   "snapshot packet: entity ID: field 'NAME'...: ... (at bit N)", or the entity's own one */
static int names_entity(const char *m) {
    static const char head[] = "snapshot packet: entity ", none[] = ": marked changed, but none of its fields is";
    const char *q = m + sizeof head - 1, *e = strstr(m, " (at bit ");
    if (strncmp(m, head, sizeof head - 1) != 0 || !isdigit((unsigned char)*q)) return 0;
    while (isdigit((unsigned char)*q)) q++;
    if (strncmp(q, ": field '", 9) != 0 && strncmp(q, none, sizeof none - 1) != 0) return 0;
    if (e == NULL || !isdigit((unsigned char)e[9])) return 0;
    for (e += 9; isdigit((unsigned char)*e); e++) {}
    return e[0] == ')' && e[1] == 0;
}

static void test_fuzz_keyed(int rounds) {
    static const int which[] = {0, 1};
    uint8_t key[16];
    static uint8_t junk[70000];
    int w, trials = 0, refusals = 0, changed = 0, accepted = 0, duebad = 0, over = 0, sealed = 0, bad = 0;
    int ent = 0, entbad = 0;
    for (w = 0; w < 16; w++) key[w] = (uint8_t)(w * 31 + 7);
    for (w = 0; w < 2; w++) {
        qc_schema sc;
        char *dtext, *etext;
        size_t dlen, elen, n, j;
        static dgram dg[100000];
        keyed_stream ks;
        qc_client c, ref;
        qc_error err;
        int phase;
        if (load_stream(which[w], &sc, &dtext, &dlen, &etext, &elen) < 0) continue;
        n = split_datagrams(dtext, dlen, dg, 100000);
        if (rekey(dg, n, key, 16, 200, &ks) < 0) { qc_schema_free(&sc); free(dtext); free(etext); continue; }
        for (phase = 0; phase < 2; phase++) {
            qc_client_init(&c, &sc, key, 16, 600000, 5, &err);
            qc_client_init(&ref, &sc, key, 16, 600000, 5, &err);
            for (j = 0; j < ks.ndg; j++) {
                qc_result res, rr;
                uint8_t rep[QC_REPLY_MAX];
                int r, st, sr;
                for (r = 0; r < rounds; r++) {
                    size_t jl, src = (size_t)(rnd() % ks.ndg), f;
                    const uint8_t *sp = ks.buf + ks.off[src];
                    size_t sl = ks.dlen[src];
                    int how = (int)(rnd() % 5), was_fragment;
                    uint32_t c0, r0;
                    switch (how) {
                    case 0:
                        jl = (size_t)(rnd() % 300);
                        for (f = 0; f < jl; f++) junk[f] = (uint8_t)rnd();
                        if (jl >= 4 && rnd() % 2) memcpy(junk, "QCHL", 4);
                        break;
                    case 1: case 2:
                        jl = sl;
                        memcpy(junk, sp, jl);
                        for (f = 0; f < 1 + rnd() % 3 && jl; f++) { size_t b = (size_t)(rnd() % (jl * 8)); junk[b / 8] ^= (uint8_t)(1u << (b % 8)); }
                        break;
                    case 3:
                        jl = sl ? (size_t)(rnd() % sl) : 0;
                        memcpy(junk, sp, jl);
                        break;
                    default:
                        jl = sl;
                        memcpy(junk, sp, jl);
                        for (f = 0; f < 1 + rnd() % 8; f++) junk[jl++] = (uint8_t)rnd();
                        break;
                    }
                    if (phase == 1 && c.dec.adopted && jl >= 9) {
                        /* sealed: the body (its tag dropped) sealed again as a packet or a fragment */
                        int frag = (int)(rnd() % 2);
                        jl = jl - 8 < 1 ? 1 : jl - 8;
                        put_le64(junk + jl, qc_siphash(frag ? c.dec.k_f : c.dec.k_p, junk, jl));
                        jl += 8;
                        sealed++;
                    }
                    if (jl == sl && memcmp(junk, sp, jl) == 0) continue;
                    was_fragment = c.dec.adopted && jl >= 17 && qc_siphash(c.dec.k_p, junk, jl - 8) != le64_at(junk + jl - 8) &&
                                   qc_siphash(c.dec.k_f, junk, jl - 8) == le64_at(junk + jl - 8);
                    c0 = digest_core(&c.dec);
                    r0 = digest_reasm(&c.dec);
                    qc_client_reply(&c, rep);
                    st = qc_client_receive(&c, junk, jl, &res);
                    trials++;
                    if (st < 0) {
                        refusals++;
                        if (strstr(res.message, "marked changed") != NULL || strstr(res.message, "is not valid") != NULL ||
                            strstr(res.message, "bad difference") != NULL || strstr(res.message, "remap to") != NULL) {
                            ent++;
                            if (!names_entity(res.message) && entbad++ < 4) printf("  keyed junk: an entity's error without its where: %s\n", res.message);
                        }
                        if (digest_core(&c.dec) != c0 || (!was_fragment && digest_reasm(&c.dec) != r0)) {
                            changed++;
                            if (changed < 4) printf("  keyed junk: the state changed by a refusal (how %d, kind %s)\n", how, res.kind);
                        }
                    } else if (phase == 0 && !(st == QC_PENDING && !res.adopted && digest_core(&c.dec) == c0)) {
                        /* (unsealed junk: at most a hello seen before, or a fragment given up) */
                        accepted++;
                    }
                    if (c.due != (st == QC_SNAPSHOT || res.adopted || st == QC_E_NO_HELLO || st == QC_E_BASELINE)) duebad++;
                    if (qc_decoder_cost(&c.dec) > c.dec.max_bytes) over++;
                }
                st = qc_client_receive(&c, ks.buf + ks.off[j], ks.dlen[j], &res);
                sr = qc_client_receive(&ref, ks.buf + ks.off[j], ks.dlen[j], &rr);
                if (phase == 0) {
                    sbuf o1 = {0, 0, 0}, o2 = {0, 0, 0};
                    result_line(&sc, st, &res, &o1);
                    result_line(&sc, sr, &rr, &o2);
                    if (o1.n != o2.n || memcmp(o1.b, o2.b, o1.n) != 0) bad++;
                    free(o1.b);
                    free(o2.b);
                }
                qc_client_reply(&ref, rep);
            }
            qc_client_free(&c);
            qc_client_free(&ref);
            CHECK(c.dec.bytes == 0, "keyed junk: bytes held after free");
        }
        ks_free(&ks);
        qc_schema_free(&sc);
        free(dtext);
        free(etext);
    }
    CHECK(trials > 0 && changed == 0 && accepted == 0 && bad == 0, "keyed junk: %d datagrams (%d sealed), %d refused, %d changed the state, "
          "%d accepted, %d valid datagrams decoded otherwise", trials, sealed, refusals, changed, accepted, bad);
    CHECK(duebad == 0 && over == 0, "keyed junk: the due rule broken %d times, the model over max_bytes %d times", duebad, over);
    CHECK(ent > 0 && entbad == 0, "keyed junk: %d errors in an entity's fields or record, %d not naming the entity, the field "
          "and the bit", ent, entbad);
    printf("  keyed junk: %d datagrams (%d sealed with the stream's tags), %d refused, state unchanged after every refusal; "
           "%d errors in entities, each naming the entity, the field and the bit\n", trials, sealed, refusals, ent);
}

/* a reply of the client as the runner prints it: lowercase hex in quotes, or null */
static void put_reply_hex(sbuf *out, qc_client *c) {
    uint8_t r[QC_REPLY_MAX];
    size_t rl = qc_client_reply(c, r), b;
    char hx[3];
    if (rl == 0) {
        sb_puts(out, "null");
        return;
    }
    sb_puts(out, "\"");
    for (b = 0; b < rl; b++) { sprintf(hx, "%02x", r[b]); sb_put(out, hx, 2); }
    sb_puts(out, "\"");
}

/* ---- the kit's streams with runner args (--key, --max-bytes, --replies, --idle), in process:
   each line, the reply and the idle calls' replies included, as the manifest's expected file says
   (run under the sanitizers too) ---- */
static void test_kit_args(void) {
    size_t mlen, i, streams = 0;
    char *mtext = read_rel("conformance/manifest.json", &mlen);
    void *mmem;
    qc_error err;
    qc_json *m;
    const qc_json *ss;
    if (mtext == NULL) return;
    m = qc_json_parse(mtext, mlen, NULL, &mmem, &err);
    ss = m ? qc_json_get(m, "streams") : NULL;
    for (i = 0; ss != NULL && i < ss->nkids; i++) {
        const qc_json *s = &ss->kids[i], *args = qc_json_get(s, "args");
        const qc_json *js = qc_json_get(s, "schema"), *jd = qc_json_get(s, "datagrams"), *je = qc_json_get(s, "expected");
        static uint8_t key[255];
        static dgram dg[100000];
        char path[512], *stext, *dtext, *etext, *line;
        size_t slen, dlen, elen, n, k, a, key_len = 0;
        unsigned long long max_bytes = 0, nonce = 0, idle = 0;
        int idle_given = 0;
        int replies = 0, bad = 0, ok = 1;
        qc_schema sc;
        qc_client c;
        if (args == NULL || js == NULL || jd == NULL || je == NULL) continue;
        for (a = 0; a + 1 < args->nkids; a += 2) {
            const char *opt = args->kids[a].text, *val = args->kids[a + 1].text;
            if (strcmp(opt, "--key") == 0) {
                size_t h;
                key_len = strlen(val) / 2;
                for (h = 0; h < key_len && h < sizeof key; h++) { unsigned x; sscanf(val + 2 * h, "%2x", &x); key[h] = (uint8_t)x; }
            } else if (strcmp(opt, "--max-bytes") == 0) {
                max_bytes = strtoull(val, NULL, 10);
            } else if (strcmp(opt, "--replies") == 0) {
                nonce = strtoull(val, NULL, 10);
                replies = 1;
            } else if (strcmp(opt, "--idle") == 0) {
                char *end;
                idle = strtoull(val, &end, 10);
                if (*end != 0 || idle > 1000) ok = 0;
                idle_given = 1;
            } else {
                ok = 0;
            }
        }
        if (idle_given && !replies) ok = 0;     /* (the runner's usage error) */
        CHECK(ok && args->nkids % 2 == 0, "kit args of %s: an option this test does not know", qc_json_get(s, "name")->text);
        snprintf(path, sizeof path, "conformance/%s", js->text);
        stext = read_rel(path, &slen);
        snprintf(path, sizeof path, "conformance/%s", jd->text);
        dtext = read_rel(path, &dlen);
        snprintf(path, sizeof path, "conformance/%s", je->text);
        etext = read_rel(path, &elen);
        if (stext == NULL || dtext == NULL || etext == NULL || qc_schema_parse(&sc, stext, slen, NULL, &err) < 0) {
            CHECK(0, "kit args: cannot load %s", qc_json_get(s, "name")->text);
            free(stext); free(dtext); free(etext);
            continue;
        }
        n = split_datagrams(dtext, dlen, dg, 100000);
        qc_client_init(&c, &sc, key_len ? key : NULL, key_len, (size_t)max_bytes, (int64_t)nonce, &err);
        line = etext;
        for (k = 0; k < n; k++) {
            qc_result res;
            sbuf out = {0, 0, 0};
            char *eol = strchr(line, '\n');
            size_t ll = eol ? (size_t)(eol - line) : strlen(line);
            int st = qc_client_receive(&c, dg[k].p, dg[k].n, &res);
            result_line(&sc, st, &res, &out);
            if (replies) {
                unsigned long long q;
                out.n--;            /* the closing brace */
                sb_puts(&out, ",\"reply\":");
                put_reply_hex(&out, &c);
                if (idle > 0) {     /* N more calls, nothing arriving between them: keep-alives */
                    sb_puts(&out, ",\"idle\":[");
                    for (q = 0; q < idle; q++) {
                        if (q) sb_puts(&out, ",");
                        put_reply_hex(&out, &c);
                    }
                    sb_puts(&out, "]");
                }
                sb_puts(&out, "}");
            }
            if (out.n != ll || memcmp(out.b, line, ll) != 0) {
                /* (from a little before the first difference: idle lists run past 160 characters) */
                size_t d = 0, from;
                while (d < out.n && d < ll && out.b[d] == line[d]) d++;
                from = d > 60 ? d - 60 : 0;
                if (bad < 2) printf("  %s datagram %lu, from character %lu: %.*s\n    want %.*s\n", qc_json_get(s, "name")->text,
                                    (unsigned long)k, (unsigned long)from, (int)(out.n - from > 160 ? 160 : out.n - from), out.b + from,
                                    (int)(ll - from > 160 ? 160 : ll - from), line + from);
                bad++;
            }
            free(out.b);
            line = eol ? eol + 1 : line + ll;
        }
        CHECK(bad == 0 && n > 0 && *line == 0, "kit stream %s (with its runner args): %d of %lu lines differ", qc_json_get(s, "name")->text, bad,
              (unsigned long)n);
        streams++;
        qc_client_free(&c);
        qc_schema_free(&sc);
        free(stext);
        free(dtext);
        free(etext);
    }
    printf("  kit streams with runner args, in process: %lu\n", (unsigned long)streams);
    if (m != NULL) qc_json_free(mmem, NULL);
    free(mtext);
}

/* ---- snapshot interpolation ---- */

/* column k of field f is a PowerCurve component (compared with relative 1e-12: libm's pow) */
static int interp_pow_col(const qc_schema *s, int f, int k) {
    const qc_codec *c = s->fields[f].codec;
    if (c->kind == QC_NEARLYZERO) c = c->inner;
    if (c->kind == QC_VECTOR) c = &c->inner[k];
    return c->kind == QC_POWERCURVE;
}

static uint64_t jnum_or_str(const qc_json *v) {
    uint64_t u = 0;
    if (v->type == QC_JSON_STRING) { dec_code(v->text, 0, &u); return u; }
    return jint(v);
}

/* conformance/interpolation/pose.json: every push's kept flag, every sample's a, b, alpha, ids,
   stats and values bit for bit (PowerCurve components: relative 1e-12) */
/* the fast path's Exp-Golomb look-up tables: every entry of every (k, b) of the fast path
   (b <= 32) against the register read it stands for (qc__bits_eg), under random bits above the
   window; then the decoder's cache of them: shared keys, at most QC_EG_TABLES, a table the
   current packet uses never rebuilt, counted in bytes, none when the budget leaves no room */
static void test_eg_tables(void) {
    static uint16_t t[1 << QC_EG_TABLE_BITS];
    const uint64_t W = QC_EG_TABLE_BITS, N = (uint64_t)1 << QC_EG_TABLE_BITS;
    qc__cpar P;
    qc_decoder d;
    const uint16_t *tabs[QC_EG_TABLES + 4];
    int b, k, bad = 0, hits = 0, i;
    uint64_t x;
    for (b = 1; b <= 32; b++)
        for (k = 0; k <= b; k++) {
            qc__cpar_set(&P, k, b);
            qc__egt_build(t, &P);
            for (x = 0; x < N; x++) {
                int rep;
                for (rep = 0; rep < 3; rep++) {
                    qc__bits r;
                    uint64_t u = 0, w = x | (rep ? rnd() << W : 0);
                    unsigned used;
                    int st;
                    r.w = w;
                    r.p = NULL;
                    r.n = 63;
                    st = qc__bits_eg(&r, &P, &u, 0);
                    used = 63 - r.n;
                    if (t[x] & 15) {
                        hits++;
                        if (st != 0 || used != (t[x] & 15u) || qc__unzz(u) != (uint64_t)(t[x] >> 4) - 2048) bad++;
                    } else if ((w & P.emask) && st == 0 && used <= W) {
                        bad++;     /* a code the table should have had */
                    }
                }
            }
        }
    CHECK(bad == 0 && hits > 0, "Exp-Golomb tables: %d entries differ from the read (%d checked)", bad, hits);
    /* the cache */
    memset(&d, 0, sizeof d);
    d.al = qc__allocator_of(NULL);
    qc__cpar_set(&P, 2, 16);
    tabs[0] = qc__egt_for(&d, &P);
    qc__cpar_set(&P, 2, 30);     /* E and b past the window's: the same table */
    tabs[1] = qc__egt_for(&d, &P);
    CHECK(tabs[0] == tabs[1] && d.negt == 1 && d.bytes == QC_EG_TABLE_BYTES, "Exp-Golomb tables: (2, 16) and (2, 30) not shared");
    qc__cpar_set(&P, (int)W, 32);     /* no code of it in the window */
    CHECK(qc__egt_for(&d, &P) == qc__egt_none && d.negt == 1, "Exp-Golomb tables: a table for k = %d", (int)W);
    /* one packet using more (k, b) than there are tables: the last ones without */
    d.egt_used = 0;
    for (i = 0; i < QC_EG_TABLES + 4; i++) {
        qc__cpar_set(&P, i % 8, 1 + i / 8 + (i % 8));
        tabs[i] = qc__egt_for(&d, &P);
    }
    bad = 0;
    for (i = 0; i < QC_EG_TABLES + 4; i++) {
        qc__cpar_set(&P, i % 8, 1 + i / 8 + (i % 8));
        qc__egt_build(t, &P);
        if (i < QC_EG_TABLES ? memcmp(tabs[i], t, sizeof t) != 0 : tabs[i] != qc__egt_none) bad++;
    }
    CHECK(bad == 0 && d.negt == QC_EG_TABLES && d.bytes == (size_t)QC_EG_TABLES * QC_EG_TABLE_BYTES,
          "Exp-Golomb tables: %d wrong in a packet of %d (k, b), %d tables", bad, QC_EG_TABLES + 4, d.negt);
    /* the next packet: a new (k, b) takes a table it does not use, the ones it uses stay */
    d.egt_used = 0;
    qc__cpar_set(&P, 0, 1);
    tabs[0] = qc__egt_for(&d, &P);
    qc__cpar_set(&P, 7, 30);
    tabs[1] = qc__egt_for(&d, &P);
    qc__egt_build(t, &P);
    CHECK(tabs[1] != qc__egt_none && memcmp(tabs[1], t, sizeof t) == 0 && tabs[1] != tabs[0] && d.negt == QC_EG_TABLES,
          "Exp-Golomb tables: a new (k, b) after a full cache");
    qc__cpar_set(&P, 0, 1);
    qc__egt_build(t, &P);
    CHECK(memcmp(tabs[0], t, sizeof t) == 0, "Exp-Golomb tables: a table in use was rebuilt");
    qc__egt_free(&d);
    CHECK(d.bytes == 0 && d.negt == 0, "Exp-Golomb tables: %lu bytes after free", (unsigned long)d.bytes);
    /* a budget with no room: no table, nothing counted */
    d.alloc_limit = QC_EG_TABLE_BYTES - 1;
    CHECK(qc__egt_for(&d, &P) == qc__egt_none && d.bytes == 0 && d.negt == 0, "Exp-Golomb tables: a table past alloc_limit");
}

static void test_interp_kit(const char *file) {     /* NULL: the kit's; else a file of its format */
    size_t len, slen, o;
    char *text = file ? read_file(file, &len) : read_rel("conformance/interpolation/pose.json", &len), *stext, path[512];
    void *mem = NULL;
    qc_error err;
    qc_json *root;
    const qc_json *ops;
    qc_schema sc;
    qc_interp ip;
    double maxx;
    int bad_values = 0, nvals = 0, nsamples = 0, npush = 0, nresets = 0;
    if (text == NULL) { CHECK(0, "%s missing", file ? file : "conformance/interpolation/pose.json"); return; }
    root = qc_json_parse(text, len, NULL, &mem, &err);
    CHECK(root != NULL, "interp kit json: %s", err.message);
    if (root == NULL) { free(text); return; }
    snprintf(path, sizeof path, "conformance/%s", qc_json_get(root, "schema")->text);
    stext = read_rel(path, &slen);
    CHECK(stext && qc_schema_parse(&sc, stext, slen, NULL, &err) == 0, "interp schema");
    maxx = from_bits(bits_hex16(qc_json_get(root, "max_extrapolation")->text));
    CHECK(qc_interp_init(&ip, &sc, (int)jint(qc_json_get(root, "capacity")), maxx, NULL, &err) == 0, "interp init: %s", err.message);
    ops = qc_json_get(root, "ops");
    for (o = 0; o < ops->nkids; o++) {
        const qc_json *op = &ops->kids[o], *push = qc_json_get(op, "push");
        if (push != NULL) {
            const qc_json *ids = qc_json_get(push, "ids"), *codes = qc_json_get(push, "codes");
            qc_snapshot v;
            size_t e, k;
            int kept;
            v.seq = (uint16_t)jint(qc_json_get(push, "seq"));
            v.n = ids->nkids;
            v.bytes = 0;                            /* built here, not by a decoder */
            v.ids = (uint64_t *)malloc((v.n + 1) * 8);
            v.rows = (uint64_t *)malloc((v.n * (size_t)sc.nslots + 1) * 8);
            for (e = 0; e < v.n; e++) {
                v.ids[e] = jnum_or_str(&ids->kids[e]);
                for (k = 0; k < (size_t)sc.nslots; k++) v.rows[e * sc.nslots + k] = jnum_or_str(&codes->kids[e].kids[k]);
            }
            kept = qc_interp_push(&ip, &v);
            CHECK(kept == (qc_json_get(op, "kept")->type == QC_JSON_TRUE), "interp op %zu: push seq %u kept %d", o, v.seq, kept);
            npush++;
            free(v.ids); free(v.rows);
        } else if (qc_json_get(op, "reset") != NULL) {
            /* {"reset": true}: a new stream, a new timeline (docs/interpolation.md, reset()) */
            uint64_t pushed = ip.stats.pushed, dropped = ip.stats.dropped;
            qc_interp_reset(&ip);
            CHECK(ip.nviews == 0 && !ip.has_newest && !ip.has_last && ip.stats.pushed == pushed && ip.stats.dropped == dropped,
                  "interp op %zu: reset (%d views left)", o, ip.nviews);
            nresets++;
        } else {
            qc_interp_frame fr;
            double t = from_bits(bits_hex16(qc_json_get(op, "sample")->text));
            const qc_json *a = qc_json_get(op, "a"), *b = qc_json_get(op, "b"), *ids = qc_json_get(op, "ids");
            const qc_json *vals = qc_json_get(op, "values"), *st = qc_json_get(op, "stats");
            int rc = qc_interp_sample(&ip, t, &fr), f, ok;
            size_t e;
            nsamples++;
            CHECK(rc == 0, "interp op %zu: sample failed", o);
            if (rc) continue;
            CHECK(fr.a == (int64_t)jint(a), "interp op %zu: a %lld", o, (long long)fr.a);
            CHECK(b->type == QC_JSON_NULL ? !fr.has_b : (fr.has_b && fr.b == (int64_t)jint(b)), "interp op %zu: b", o);
            CHECK(dbits(fr.alpha) == bits_hex16(qc_json_get(op, "alpha")->text), "interp op %zu: alpha %a", o, fr.alpha);
            ok = fr.n == ids->nkids;
            for (e = 0; ok && e < fr.n; e++) ok = fr.ids[e] == jnum_or_str(&ids->kids[e]);
            CHECK(ok, "interp op %zu: ids", o);
            CHECK(ip.stats.pushed == jint(qc_json_get(st, "pushed")) && ip.stats.dropped == jint(qc_json_get(st, "dropped")) &&
                  ip.stats.late == jint(qc_json_get(st, "late")) && ip.stats.extrapolated == jint(qc_json_get(st, "extrapolated")) &&
                  ip.stats.early == jint(qc_json_get(st, "early")),
                  "interp op %zu: stats %llu %llu %llu %llu %llu", o, (unsigned long long)ip.stats.pushed, (unsigned long long)ip.stats.dropped,
                  (unsigned long long)ip.stats.late, (unsigned long long)ip.stats.extrapolated, (unsigned long long)ip.stats.early);
            for (f = 0; f < sc.nfields && fr.n == ids->nkids; f++) {
                const qc_json *col = qc_json_get(vals, sc.fields[f].name);
                if (col == NULL || col->nkids != fr.n) { bad_values++; continue; }
                for (e = 0; e < fr.n; e++) {
                    int k;
                    for (k = 0; k < sc.fields[f].nvalues; k++) {
                        double got = fr.values[e * ip.nvalues + ip.offset[f] + k];
                        double want = from_bits(bits_hex16(col->kids[e].kids[k].text));
                        int same = interp_pow_col(&sc, f, k) ? (got == want || fabs(got - want) <= 1e-12 * fabs(want))
                                                              : dbits(got) == dbits(want);
                        nvals++;
                        if (!same) {
                            if (bad_values++ < 5) printf("  interp op %zu: %s[%zu][%d] %a, expected %a\n", o, sc.fields[f].name, e, k, got, want);
                        }
                    }
                }
            }
        }
    }
    CHECK(bad_values == 0 && nvals > 0, "interp kit: %d of %d values differ", bad_values, nvals);
    CHECK(file != NULL || nresets > 0, "interp kit: no reset in the kit's vectors (they end with a reset and a new timeline)");
    printf("  interpolation kit: %d pushes, %d samples, %d resets, %d values\n", npush, nsamples, nresets, nvals);
    qc_interp_free(&ip);
    qc_schema_free(&sc);
    qc_json_free(mem, NULL);
    free(text); free(stext);
}

/* a small schema for the unit tests: a linear scalar, an angle (signed degrees), a quat, a step */
static const char *interp_schema_json =
    "{\"name\":\"I\",\"fields\":["
    "{\"name\":\"x\",\"codec\":{\"kind\":\"Bounded\",\"min\":-100.0,\"max\":100.0,\"bits\":20,\"mode\":\"endpoints\"}},"
    "{\"name\":\"yaw\",\"codec\":{\"kind\":\"Angle\",\"bits\":16,\"signed\":true,\"unit\":\"deg\"}},"
    "{\"name\":\"rot\",\"codec\":{\"kind\":\"Quat\",\"bits\":12,\"mode\":\"endpoints\"}},"
    "{\"name\":\"hp\",\"codec\":{\"kind\":\"UInt\",\"bits\":8}}]}";

/* a view of ids with x, yaw, rot, hp (quantized) */
static void interp_view(const qc_schema *sc, qc_snapshot *v, uint16_t seq, size_t n, const uint64_t *ids,
                        const double *x, const double *yaw, const double (*rot)[4], const uint64_t *hp) {
    size_t e;
    v->seq = seq; v->n = n; v->bytes = 0;   /* built here, not by a decoder */
    v->ids = (uint64_t *)malloc((n + 1) * 8);
    v->rows = (uint64_t *)malloc((n * (size_t)sc->nslots + 1) * 8);
    for (e = 0; e < n; e++) {
        uint64_t *row = v->rows + e * sc->nslots;
        v->ids[e] = ids[e];
        row[0] = qc_quantize(sc->fields[0].codec, x[e], NULL);
        row[1] = qc_quantize(sc->fields[1].codec, yaw[e], NULL);
        qc_quantize_quat(sc->fields[2].codec, rot[e], &row[2]);
        row[3] = hp[e];
    }
}
static void interp_view_free(qc_snapshot *v) { free(v->ids); free(v->rows); }

static double interp_val(const qc_interp *ip, const qc_interp_frame *fr, size_t e, int field, int k) {
    return fr->values[e * ip->nvalues + ip->offset[field] + k];
}

static void test_interp_units(void) {
    qc_schema sc;
    qc_error err;
    qc_interp ip;
    qc_interp_frame fr;
    qc_snapshot v;
    double dq[4];
    static const double ident[1][4] = {{0, 0, 0, 1}};
    uint64_t id1[1] = {7}, hp1[1] = {5}, hp2[1] = {9}, ids2[2] = {7, 8}, hp22[2] = {1, 2};
    int i;
    if (qc_schema_parse(&sc, interp_schema_json, strlen(interp_schema_json), NULL, &err) != 0) { CHECK(0, "interp schema: %s", err.message); return; }
    CHECK(qc_interp_init(&ip, &sc, 1, 2.0, NULL, &err) < 0 && strstr(err.message, "capacity") != NULL, "capacity 1 refused");
    CHECK(qc_interp_init(&ip, &sc, 4, -1.0, NULL, &err) < 0 && strstr(err.message, "max_extrapolation") != NULL, "negative max_extrapolation refused");
    /* capacity + 1 views, counted in size_t (it overflowed an int at INT_MAX): the allocator is
       asked for exactly that (and fails it here), or, where no size_t holds it, init refuses */
    {
        recording r = {0};
        qc_allocator al;
        al.alloc = r_alloc; al.free = r_free; al.ud = &r;
        CHECK(qc_interp_init(&ip, &sc, INT_MAX, 1.0, &al, &err) < 0 &&
              (sizeof(size_t) < 8 || r.biggest == ((size_t)INT_MAX + 1) * sizeof(qc_interp_view)),
              "capacity INT_MAX: %lu bytes asked for", (unsigned long)r.biggest);
    }
    CHECK(qc_interp_init(&ip, &sc, 4, 1.0, NULL, &err) == 0, "init: %s", err.message);
    CHECK(qc_interp_sample(&ip, 0.0, &fr) < 0, "sample before any push refused");

    /* reordered: 12 before 10, then 11; duplicate 11 dropped */
    { double x[1] = {12}, y[1] = {0}; interp_view(&sc, &v, 12, 1, id1, x, y, ident, hp2); CHECK(qc_interp_push(&ip, &v) == 1, "push 12"); interp_view_free(&v); }
    { double x[1] = {10}, y[1] = {0}; interp_view(&sc, &v, 10, 1, id1, x, y, ident, hp1); CHECK(qc_interp_push(&ip, &v) == 1, "push 10 (reordered)"); interp_view_free(&v); }
    { double x[1] = {11}, y[1] = {0}; interp_view(&sc, &v, 11, 1, id1, x, y, ident, hp1); CHECK(qc_interp_push(&ip, &v) == 1, "push 11"); CHECK(qc_interp_push(&ip, &v) == 0, "duplicate 11 dropped"); interp_view_free(&v); }
    CHECK(ip.nviews == 3 && ip.views[0].tick == 10 && ip.views[1].tick == 11 && ip.views[2].tick == 12, "sorted by tick");
    CHECK(ip.stats.pushed == 3 && ip.stats.dropped == 1, "stats after pushes");
    /* between */
    CHECK(qc_interp_sample(&ip, 11.5, &fr) == 0 && fr.a == 11 && fr.has_b && fr.b == 12 && fr.alpha == 0.5, "between 11 and 12");
    qc_dequantize(sc.fields[0].codec, qc_quantize(sc.fields[0].codec, 11, NULL), &dq[0]);
    qc_dequantize(sc.fields[0].codec, qc_quantize(sc.fields[0].codec, 12, NULL), &dq[1]);
    CHECK(interp_val(&ip, &fr, 0, 0, 0) == dq[0] + (dq[1] - dq[0]) * 0.5, "linear blend");
    CHECK(interp_val(&ip, &fr, 0, 3, 0) == 5.0, "UInt held (a's)");
    /* early: before the oldest */
    CHECK(qc_interp_sample(&ip, 9.0, &fr) == 0 && fr.a == 10 && !fr.has_b && fr.alpha == 0.0 && ip.stats.early == 1, "early: the oldest held");
    /* extrapolation bounded by max_extrapolation (1 tick) */
    CHECK(qc_interp_sample(&ip, 15.0, &fr) == 0 && fr.a == 12 && !fr.has_b && fr.alpha == 1.0 && ip.stats.extrapolated == 1, "extrapolation capped");
    CHECK(interp_val(&ip, &fr, 0, 0, 0) == dq[1] + (dq[1] - dq[0]) * 1.0, "extrapolated linear");
    CHECK(qc_interp_sample(&ip, 12.0, &fr) == 0 && fr.a == 12 && !fr.has_b && fr.alpha == 0.0 && ip.stats.extrapolated == 1, "t == newest: held");
    /* late: 13 arrives after the render time passed 15 (kept, counted late); missing 14 */
    { double x[1] = {13}, y[1] = {0}; interp_view(&sc, &v, 13, 1, id1, x, y, ident, hp1); CHECK(qc_interp_push(&ip, &v) == 1 && ip.stats.late == 1, "late view kept and counted"); interp_view_free(&v); }
    { double x[1] = {15}, y[1] = {0}; interp_view(&sc, &v, 15, 1, id1, x, y, ident, hp1); CHECK(qc_interp_push(&ip, &v) == 1, "push 15"); interp_view_free(&v); }
    /* 15 <= last_t 15: late too (at or before the latest render time) */
    CHECK(ip.stats.late == 2, "a view at the render time counts late (%llu)", (unsigned long long)ip.stats.late);
    /* the buffer is full (capacity 4: 11, 12, 13, 15); an older view is dropped, the oldest evicted by a newer */
    CHECK(ip.nviews == 4 && ip.views[0].tick == 11, "capacity 4, the oldest evicted");
    { double x[1] = {10}, y[1] = {0}; interp_view(&sc, &v, 10, 1, id1, x, y, ident, hp1); CHECK(qc_interp_push(&ip, &v) == 0, "older than every view of a full buffer: dropped"); interp_view_free(&v); }
    /* missing 14: 13 -> 15 spans two ticks */
    CHECK(qc_interp_sample(&ip, 14.0, &fr) == 0 && fr.a == 13 && fr.b == 15 && fr.alpha == 0.5, "a missing view: blended over two ticks");
    qc_interp_free(&ip);

    /* angle wrap (signed degrees: [-180, 180)), a quaternion near q / -q, entities appearing and leaving */
    CHECK(qc_interp_init(&ip, &sc, 8, 2.0, NULL, &err) == 0, "init 2");
    {
        double x[2] = {0, 0}, ya[2] = {170, -170}, yb[2] = {-170, 170};
        /* one rotation near (0, 0, s, -s), the smallest-three form picks z in one view, w in the
           other and makes the largest positive: the two views' quaternions are near q and -q */
        double s = 0.70710678118654752440, u = 0.70 / sqrt(0.70 * 0.70 + 0.71 * 0.71), w = 0.71 / sqrt(0.70 * 0.70 + 0.71 * 0.71);
        double ra[2][4] = {{0, 0, u, -w}, {0, 0, 0, 1}}, rb[2][4] = {{0, 0, w, -u}, {0, 0, 0, 1}};
        uint64_t one[1] = {7}; double x1[1] = {0}, y1[1] = {170}, r1[1][4] = {{0, 0, s, s}};
        double a0, b0, want, q0[4], q1[4], d;
        interp_view(&sc, &v, 20, 2, ids2, x, ya, (const double (*)[4])ra, hp22); CHECK(qc_interp_push(&ip, &v) == 1, "push 20"); interp_view_free(&v);
        interp_view(&sc, &v, 22, 2, ids2, x, yb, (const double (*)[4])rb, hp22); CHECK(qc_interp_push(&ip, &v) == 1, "push 22"); interp_view_free(&v);
        CHECK(qc_interp_sample(&ip, 21.0, &fr) == 0 && fr.alpha == 0.5 && fr.n == 2, "sample 21");
        qc_dequantize(sc.fields[1].codec, qc_quantize(sc.fields[1].codec, 170, NULL), &a0);
        qc_dequantize(sc.fields[1].codec, qc_quantize(sc.fields[1].codec, -170, NULL), &b0);
        /* 170 -> -170 goes the short way, through 180 (wrapped to -180), not through 0 */
        want = (a0 + (b0 - a0 - 360.0 * floor((b0 - a0) / 360.0 + 0.5)) * 0.5);
        want = want - 360.0 * floor((want + 180.0) / 360.0);
        CHECK(interp_val(&ip, &fr, 0, 1, 0) == want && fabs(fabs(want) - 180.0) < 0.1, "angle wrap: %.17g (want %.17g)", interp_val(&ip, &fr, 0, 1, 0), want);
        CHECK(fabs(interp_val(&ip, &fr, 1, 1, 0) - 180.0) > 179.0 || fabs(interp_val(&ip, &fr, 1, 1, 0) + 180.0) < 0.1, "angle wrap the other way");
        /* q and -q: the blend stays at the rotation (no collapse through zero) */
        for (i = 0; i < 4; i++) q0[i] = ip.views[0].values[ip.offset[2] + i], q1[i] = ip.views[1].values[ip.offset[2] + i];
        d = q0[0] * q1[0] + q0[1] * q1[1] + q0[2] * q1[2] + q0[3] * q1[3];
        CHECK(d < -0.99, "the test's views are q and -q (dot %g)", d);
        for (d = 0, i = 0; i < 4; i++) d += interp_val(&ip, &fr, 0, 2, i) * q0[i];
        CHECK(fabs(d) > 0.999, "nlerp across q / -q keeps the rotation (dot %g)", d);
        for (d = 0, i = 0; i < 4; i++) d += interp_val(&ip, &fr, 0, 2, i) * interp_val(&ip, &fr, 0, 2, i);
        CHECK(fabs(d - 1.0) < 1e-15, "nlerp gives a unit quaternion (%.17g)", d);
        /* entity 8 leaves at 24; entity 7 alone: 8 is in A (22) but not B (24): held */
        interp_view(&sc, &v, 24, 1, one, x1, y1, (const double (*)[4])r1, hp1); CHECK(qc_interp_push(&ip, &v) == 1, "push 24"); interp_view_free(&v);
        CHECK(qc_interp_sample(&ip, 23.0, &fr) == 0 && fr.n == 2 && fr.ids[1] == 8, "a leaving entity: still in A");
        CHECK(interp_val(&ip, &fr, 1, 1, 0) == ip.views[1].values[ip.nvalues + ip.offset[1]], "a leaving entity: held at A's values");
        CHECK(qc_interp_sample(&ip, 24.5, &fr) == 0 && fr.n == 1 && fr.ids[0] == 7, "after it left: gone");
        /* 16-bit wrap: seq 65535 -> 0 unwraps to consecutive ticks */
    }
    qc_interp_free(&ip);
    CHECK(qc_interp_init(&ip, &sc, 4, 2.0, NULL, &err) == 0, "init 3");
    {
        double x[1] = {1}, y[1] = {0};
        interp_view(&sc, &v, 65535, 1, id1, x, y, ident, hp1); qc_interp_push(&ip, &v); interp_view_free(&v);
        interp_view(&sc, &v, 0, 1, id1, x, y, ident, hp1); qc_interp_push(&ip, &v); interp_view_free(&v);
        CHECK(ip.views[1].tick == 65536 && qc_interp_tick(&ip, 65534) == 65534 && qc_interp_tick(&ip, 5) == 65541, "seq unwrapped across 65535 -> 0");
        CHECK(ip.bytes > 0, "bytes counted");
    }
    qc_interp_free(&ip);
    qc_schema_free(&sc);
}

/* qc_interp_reset (docs/interpolation.md, reset(); tests/test_interpolation.py
   test_reset_starts_a_new_timeline_for_a_new_stream): a restarted server's ticks start again
   from its own start; unwrapped against the old stream's newest they are older than every view
   of a full buffer, and were dropped (the picture froze, up to 32,768 ticks); after a reset
   they are the timeline. Stats go on counting; the views' memory is freed. */
static void reset_view(const qc_schema *sc, qc_snapshot *v, uint16_t seq, double x) {
    static uint64_t id = 1;
    static uint64_t row[1];
    row[0] = qc_quantize(sc->fields[0].codec, x, NULL);
    v->seq = seq; v->n = 1; v->ids = &id; v->rows = row; v->bytes = 0;   /* built here, not by a decoder */
}

static void test_interp_reset(void) {
    static const char *js = "{\"name\":\"S\",\"fields\":[{\"name\":\"x\",\"codec\":{\"kind\":\"Bounded\",\"min\":0.0,"
                            "\"max\":100.0,\"bits\":16,\"mode\":\"endpoints\"}}]}";
    qc_schema sc;
    qc_error err;
    qc_interp ip, zi;
    qc_interp_frame fr;
    qc_snapshot v;
    size_t b0;
    int k, kept = 1;
    if (qc_schema_parse(&sc, js, strlen(js), NULL, &err) != 0) { CHECK(0, "interp reset schema: %s", err.message); return; }
    CHECK(qc_interp_init(&ip, &sc, 4, 2.0, NULL, &err) == 0, "interp reset: init: %s", err.message);
    b0 = ip.bytes;
    for (k = 3596; k < 3600; k++) { reset_view(&sc, &v, (uint16_t)k, (double)(k % 100)); kept &= qc_interp_push(&ip, &v) == 1; }
    CHECK(kept && ip.nviews == 4 && ip.newest == 3599, "interp reset: a full buffer at ticks 3596..3599");
    CHECK(qc_interp_sample(&ip, 3598.5, &fr) == 0 && fr.a == 3598 && fr.b == 3599, "interp reset: sample 3598.5");
    reset_view(&sc, &v, 0, 10.0);
    CHECK(qc_interp_push(&ip, &v) == 0 && qc_interp_tick(&ip, 0) == 0 && ip.nviews == 4,
          "interp reset: the new stream's first view (seq 0, tick 0 against 3599) dropped before a reset");
    qc_interp_reset(&ip);
    CHECK(ip.nviews == 0 && !ip.has_newest && !ip.has_last && ip.bytes == b0 + ip.out_cap * sizeof(double),
          "interp reset: every view and the latest render time forgotten, their memory freed (%lu bytes, %lu at init)",
          (unsigned long)ip.bytes, (unsigned long)b0);
    CHECK(qc_interp_sample(&ip, 0.0, &fr) < 0, "interp reset: a sample before any push since: -1");
    reset_view(&sc, &v, 0, 10.0);
    kept = qc_interp_push(&ip, &v);
    reset_view(&sc, &v, 1, 20.0);
    kept = kept == 1 && qc_interp_push(&ip, &v) == 1;
    CHECK(kept && ip.newest == 1 && ip.views[0].tick == 0, "interp reset: seq 0 and 1 kept, a new timeline from tick 0 (newest %lld)",
          (long long)ip.newest);
    CHECK(qc_interp_sample(&ip, 0.5, &fr) == 0 && fr.a == 0 && fr.has_b && fr.b == 1 && fr.alpha == 0.5 &&
          fabs(fr.values[ip.offset[0]] - 15.0) < 0.01, "interp reset: sample 0.5 between the new views");
    CHECK(ip.stats.pushed == 6 && ip.stats.dropped == 1 && ip.stats.late == 0 && ip.stats.extrapolated == 0 && ip.stats.early == 0,
          "interp reset: stats went on counting (%llu pushed, %llu dropped)", (unsigned long long)ip.stats.pushed,
          (unsigned long long)ip.stats.dropped);
    /* the render time is forgotten too: a view at a tick before the last sample is not late */
    qc_interp_reset(&ip);
    reset_view(&sc, &v, 0, 30.0);
    CHECK(qc_interp_push(&ip, &v) == 1 && ip.stats.late == 0 && ip.newest == 0, "interp reset: no view late against the old render time");
    qc_interp_free(&ip);
    CHECK(ip.bytes == 0, "interp reset: bytes after free");
    qc_interp_reset(&ip);                       /* freed: nothing */
    memset(&zi, 0, sizeof zi);
    qc_interp_reset(&zi);                       /* zero-filled: nothing */
    CHECK(zi.nviews == 0 && ip.nviews == 0, "interp reset of a freed and a zero-filled buffer");
    qc_schema_free(&sc);
}

/* ---- the API's edges: arguments out of range, NULL, sizes (the tester's report on the C API) -- */

/* qc_field_values checks its field index: qc_field_index's -1 for a missing name, or one past
   the last field, is -1 with nothing written (it read fields[-1] before) */
static void test_field_values_index(void) {
    qc_schema sc;
    qc_error err;
    size_t slen;
    char *stext = read_rel("conformance/schemas/pose.json", &slen);
    uint64_t row[64] = {0};
    double out[8] = {1.5, 1.5, 1.5, 1.5};
    int pos;
    if (stext == NULL || qc_schema_parse(&sc, stext, slen, NULL, &err) != 0) { CHECK(0, "field values: pose schema"); free(stext); return; }
    CHECK(qc_field_index(&sc, "no such field") == -1, "qc_field_index of a missing name: -1");
    CHECK(qc_field_values(&sc, qc_field_index(&sc, "no such field"), row, out) == -1 && out[0] == 1.5,
          "qc_field_values(-1): -1, nothing written");
    CHECK(qc_field_values(&sc, sc.nfields, row, out) == -1 && out[0] == 1.5, "qc_field_values(nfields): -1");
    CHECK(qc_field_values(&sc, INT_MIN, row, out) == -1, "qc_field_values(INT_MIN): -1");
    pos = qc_field_index(&sc, "position");
    CHECK(pos >= 0 && qc_field_values(&sc, pos, row, out) == 0, "qc_field_values of a real field: 0");
    qc_schema_free(&sc);
    free(stext);
}

/* qc_interp_push refuses a decoder's view of another width (it carries its allocation in
   bytes): a pose view (12 slots) into an all_kinds buffer read past the rows' end (ASan: a heap
   overflow in qc__dq_codes), an all_kinds view into a pose buffer gave garbage; both are -2 now,
   nothing changed. Each buffer still takes its own schema's views. */
static int first_view(int which, qc_schema *sc, qc_decoder *d, const qc_snapshot **view) {
    char *dtext, *etext;
    size_t dlen, elen, k, n;
    dgram dg[4096];
    qc_error err;
    qc_result res;
    *view = NULL;
    if (load_stream(which, sc, &dtext, &dlen, &etext, &elen) < 0) return -1;
    if (qc_decoder_init(d, sc, NULL, &err) != 0) { free(dtext); free(etext); qc_schema_free(sc); return -1; }
    n = split_datagrams(dtext, dlen, dg, 4096);
    for (k = 0; k < n && *view == NULL; k++)
        if (qc_decoder_datagram(d, dg[k].p, dg[k].n, &res) == QC_SNAPSHOT && res.snapshot->n > 0) *view = res.snapshot;
    free(dtext); free(etext);
    return *view != NULL ? 0 : -1;
}

static void test_interp_other_schema(void) {
    qc_schema pose, ak;
    qc_decoder dp, da;
    const qc_snapshot *vp = NULL, *va = NULL;
    qc_interp ip, ia;
    qc_error err;
    int okp = first_view(0, &pose, &dp, &vp) == 0, oka = first_view(2, &ak, &da, &va) == 0;   /* pose_clean, all_kinds_pred */
    CHECK(okp && oka, "interp other schema: a view of pose_clean and of all_kinds_pred");
    if (okp && oka) {
        CHECK(pose.nslots != ak.nslots && vp->bytes == qc_snapshot_bytes(&pose, vp->n), "interp other schema: widths %d, %d", pose.nslots, ak.nslots);
        CHECK(qc_interp_init(&ip, &pose, 4, 1.0, NULL, &err) == 0 && qc_interp_init(&ia, &ak, 4, 1.0, NULL, &err) == 0, "interp other schema: init");
        CHECK(qc_interp_push(&ia, vp) == -2 && ia.nviews == 0 && ia.stats.pushed == 0 && ia.stats.dropped == 0 && !ia.has_newest,
              "a view of fewer slots (pose) into an all_kinds buffer: -2, nothing changed");
        CHECK(qc_interp_push(&ip, va) == -2 && ip.nviews == 0 && ip.stats.pushed == 0 && !ip.has_newest,
              "a view of more slots (all_kinds) into a pose buffer: -2, nothing changed");
        CHECK(qc_interp_push(&ip, vp) == 1 && qc_interp_push(&ia, va) == 1, "each buffer takes its own schema's view");
        qc_interp_free(&ip);
        qc_interp_free(&ia);
    }
    if (okp) { qc_decoder_free(&dp); qc_schema_free(&pose); }
    if (oka) { qc_decoder_free(&da); qc_schema_free(&ak); }
}

/* The size helpers' arguments: qc_decoder_worst_case_bytes is 0 (its error) outside a hello's
   ranges (max_datagram 16 divided by zero, below 16 it wrapped; negative ones gave numbers), and
   the three saturate instead of wrapping on absurd inputs (they returned 4.6e18, 2^64 - 56, 152) */
static void test_size_arguments(void) {
    qc_schema sc;
    qc_error err;
    size_t slen, per, head, n;
    uint64_t cper, cn;
    char *stext = read_rel("conformance/schemas/pose.json", &slen);
    static const int bad_md[] = {16, 15, 0, -1, -1200, 63, 65508, INT_MAX, INT_MIN};
    static const int bad_h[] = {0, -1, -64, 32768, INT_MAX, INT_MIN};
    unsigned i;
    if (stext == NULL || qc_schema_parse(&sc, stext, slen, NULL, &err) != 0) { CHECK(0, "size arguments: pose schema"); free(stext); return; }
    free(stext);
    for (i = 0; i < sizeof bad_md / sizeof *bad_md; i++)
        CHECK(qc_decoder_worst_case_bytes(&sc, 64, 100, bad_md[i], 0) == 0, "worst case, max_datagram %d: 0", bad_md[i]);
    for (i = 0; i < sizeof bad_h / sizeof *bad_h; i++)
        CHECK(qc_decoder_worst_case_bytes(&sc, bad_h[i], 100, 1200, 0) == 0, "worst case, history %d: 0", bad_h[i]);
    CHECK(qc_decoder_worst_case_bytes(&sc, 64, 100, 1200, -1) == 0, "worst case, max_partials -1: 0");
    /* the ranges' edges are bounds */
    CHECK(qc_decoder_worst_case_bytes(&sc, 1, 100, 64, 0) > 0 && qc_decoder_worst_case_bytes(&sc, 32767, 100, 65507, 1) > 0 &&
          qc_decoder_worst_case_bytes(&sc, 64, 0, 1200, 0) > 0, "worst case at the ranges' edges: a bound");
    /* saturated, and never below what a smaller count needs */
    CHECK(qc_decoder_worst_case_bytes(&sc, 32767, SIZE_MAX / 2, 1200, 0) == SIZE_MAX &&
          qc_decoder_worst_case_bytes(&sc, 1, SIZE_MAX, 64, 0) == SIZE_MAX, "worst case of an absurd entity count: SIZE_MAX");
    head = qc_snapshot_bytes(&sc, 0);
    per = 8 * (1 + (size_t)sc.nslots);
    n = (SIZE_MAX - head) / per;
    CHECK(qc_snapshot_bytes(&sc, n) == head + n * per && qc_snapshot_bytes(&sc, n + 1) == SIZE_MAX &&
          qc_snapshot_bytes(&sc, SIZE_MAX) == SIZE_MAX, "qc_snapshot_bytes saturates at SIZE_MAX (%lu at SIZE_MAX)",
          (unsigned long)qc_snapshot_bytes(&sc, SIZE_MAX));
    cper = 8 + 8 * (uint64_t)sc.nslots;
    cn = (UINT64_MAX - 256) / cper;
    CHECK(qc_snapshot_cost(&sc, cn) == 256 + cn * cper && qc_snapshot_cost(&sc, cn + 1) == UINT64_MAX &&
          qc_snapshot_cost(&sc, UINT64_MAX) == UINT64_MAX, "qc_snapshot_cost saturates at UINT64_MAX (%llu at UINT64_MAX)",
          (unsigned long long)qc_snapshot_cost(&sc, UINT64_MAX));
    qc_schema_free(&sc);
}

/* The README's per-snapshot figures against the API: every "H + 8 * n * (1 + nslots)" and the
   "(D fewer than its cost)" beside it (on 64-bit platforms, which the README's figures are for).
   It said 16 and 240: the header is sizeof(qc_snapshot) rounded up to 16, 48 on 64-bit. */
static void test_readme_snapshot_bytes(void) {
    qc_schema sc;
    qc_error err;
    size_t slen, rlen, n = 1000;
    char *stext = read_rel("conformance/schemas/pose.json", &slen), *readme = read_rel("clients/c/README.md", &rlen);
    const char *p;
    int found = 0, diffs = 0;
    if (stext == NULL || readme == NULL || qc_schema_parse(&sc, stext, slen, NULL, &err) != 0) {
        CHECK(0, "README snapshot bytes: the README or the pose schema");
        free(stext); free(readme); return;
    }
    CHECK(qc_snapshot_bytes(&sc, n) - qc_snapshot_bytes(&sc, 0) == 8 * n * (1 + (size_t)sc.nslots) &&
          qc_snapshot_bytes(&sc, 0) == (sizeof(qc_snapshot) + 15) / 16 * 16, "qc_snapshot_bytes: the header plus 8 * n * (1 + nslots)");
    if (sizeof(void *) == 8) {
        for (p = strstr(readme, " + 8 * n * (1 + nslots)"); p != NULL; p = strstr(p + 1, " + 8 * n * (1 + nslots)")) {
            const char *q = p;
            while (q > readme && q[-1] >= '0' && q[-1] <= '9') q--;
            found++;
            CHECK(q < p && strtoul(q, NULL, 10) == qc_snapshot_bytes(&sc, 0), "README: '%.*s + 8 * n * (1 + nslots)', the API gives %lu",
                  (int)(p - q), q, (unsigned long)qc_snapshot_bytes(&sc, 0));
        }
        for (p = strstr(readme, " fewer than its cost"); p != NULL; p = strstr(p + 1, " fewer than its cost")) {
            const char *q = p;
            while (q > readme && q[-1] >= '0' && q[-1] <= '9') q--;
            diffs++;
            CHECK(q < p && strtoull(q, NULL, 10) == qc_snapshot_cost(&sc, n) - qc_snapshot_bytes(&sc, n),
                  "README: '%.*s fewer than its cost', the API gives %llu", (int)(p - q), q,
                  (unsigned long long)(qc_snapshot_cost(&sc, n) - qc_snapshot_bytes(&sc, n)));
        }
        CHECK(found >= 2 && diffs >= 1, "README: the snapshot formula found %d times, the difference %d", found, diffs);
    }
    qc_schema_free(&sc);
    free(stext); free(readme);
}

/* NULL and lifetimes as the README's "Arguments, lifetimes, threads" says: every *_free takes
   NULL (each dereferenced it), a zero-filled struct, and one freed already; the optional
   pointers the README lists may be NULL */
static void test_null_arguments(void) {
    qc_schema sc, zs;
    qc_decoder d, zd;
    qc_client c, zc;
    qc_interp ip, zi;
    qc_result res;
    size_t slen, need;
    uint8_t key[16] = {1};
    char *stext = read_rel("conformance/schemas/pose.json", &slen);
    qc_schema_free(NULL);
    qc_decoder_free(NULL);
    qc_client_free(NULL);
    qc_interp_free(NULL);
    qc_json_free(NULL, NULL);
    CHECK(1, "every *_free(NULL) returns, doing nothing");
    memset(&zs, 0, sizeof zs); memset(&zd, 0, sizeof zd); memset(&zc, 0, sizeof zc); memset(&zi, 0, sizeof zi);
    qc_schema_free(&zs); qc_decoder_free(&zd); qc_client_free(&zc); qc_interp_free(&zi);
    CHECK(1, "every *_free of a zero-filled struct returns");
    if (stext == NULL || qc_schema_parse(&sc, stext, slen, NULL, NULL) != 0) { CHECK(0, "null arguments: pose schema"); free(stext); return; }
    free(stext);
    CHECK(qc_schema_parse(&zs, "{", 1, NULL, NULL) == -1, "qc_schema_parse: err NULL on a failure");
    qc_schema_free(&zs);
    need = qc_schema_slot_table(&sc, NULL, 0);
    CHECK(need > 0, "qc_schema_slot_table(buf NULL, cap 0): the length");
    CHECK(qc_decoder_init(&d, &sc, NULL, NULL) == 0, "qc_decoder_init: cfg NULL, err NULL");
    CHECK(qc_decoder_datagram(&d, NULL, 0, &res) < 0 && res.kind != NULL, "qc_decoder_datagram(NULL, 0): refused");
    qc_decoder_free(&d);
    qc_decoder_free(&d);
    CHECK(d.bytes == 0, "qc_decoder_free twice");
    CHECK(qc_client_init(&c, &sc, NULL, 5, 0, 1, NULL) == -1, "qc_client_init: key NULL with a length refused, err NULL");
    qc_client_free(&c);
    CHECK(qc_client_init(&c, &sc, key, 16, 0, 1, NULL) == 0, "qc_client_init: err NULL");
    CHECK(qc_client_receive(&c, NULL, 0, &res) < 0, "qc_client_receive(NULL, 0): refused");
    qc_client_free(&c);
    qc_client_free(&c);
    CHECK(qc_client_init(&c, &sc, NULL, 0, 0, 1, NULL) == 0, "a client initialized again after its free");
    qc_client_free(&c);
    CHECK(qc_interp_init(&ip, &sc, 1, 1.0, NULL, NULL) == -1, "qc_interp_init: err NULL on a failure");
    qc_interp_free(&ip);
    CHECK(qc_interp_init(&ip, &sc, 4, 1.0, NULL, NULL) == 0, "qc_interp_init: al NULL, err NULL");
    qc_interp_free(&ip);
    qc_interp_free(&ip);
    CHECK(ip.bytes == 0, "qc_interp_free twice");
    qc_schema_free(&sc);
    qc_schema_free(&sc);
    CHECK(sc.chunks == NULL, "qc_schema_free twice");
}

int main(int argc, char **argv) {
    int quick = argc > 2 && strcmp(argv[2], "--quick") == 0;
    snprintf(g_root, sizeof g_root, "%s", argc > 1 ? argv[1] : "../..");
    if (argc > 3 && strcmp(argv[2], "--interp") == 0) {   /* tests/interp_diff.py: that file only */
        test_interp_kit(argv[3]);
        printf("%d passed, %d failed\n", g_pass, g_fail);
        return g_fail ? 1 : 0;
    }
    test_units();
    test_siphash();
    test_slot_validity();
    test_codec_goldens();
    test_schema_goldens();
    test_schema_cases();
    test_schema_rules_units();
    test_snapshot_goldens();
    test_kit_values();
    test_kit_records();
    test_kit_streams();
    test_hello_adoption();
    test_reassembly_bound();
    test_kit_args();
    test_memory();
    test_memory_failures();
    test_eg_tables();
    test_worst_case();
    test_keyed();
    test_replies();
    test_keepalive();
    test_limits();
    test_limits_hostile();
    test_interp_kit(NULL);
    test_interp_units();
    test_interp_reset();
    test_field_values_index();
    test_interp_other_schema();
    test_size_arguments();
    test_readme_snapshot_bytes();
    test_null_arguments();
    test_fuzz(quick ? 1 : 10);
    test_fuzz_keyed(quick ? 1 : 4);
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
