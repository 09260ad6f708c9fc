/* ---- JSON ------------------------------------------------------------------------------------ */

#define QC__JSON_DEPTH 64

typedef struct qc__jp {
    const char *s; size_t n, i; qc__arena *a; qc_error *err; int depth;
} qc__jp;

static void qc__jline(const qc__jp *p, size_t at, int *line, int *col) {
    size_t k;
    *line = 1; *col = 1;
    for (k = 0; k < at && k < p->n; k++) {
        if (p->s[k] == '\n') { (*line)++; *col = 1; } else (*col)++;
    }
}

static int qc__jfail(qc__jp *p, const char *what) {
    int line, col;
    qc__jline(p, p->i, &line, &col);
    return qc__fail(p->err, "not valid JSON: %s at line %d column %d (char %lu)", what, line, col,
                    (unsigned long)p->i);
}

static void qc__jws(qc__jp *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}

static int qc__hex4(const char *s, unsigned *v) {
    int k;
    *v = 0;
    for (k = 0; k < 4; k++) {
        char c = s[k];
        *v <<= 4;
        if (c >= '0' && c <= '9') *v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') *v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') *v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    return 0;
}

static size_t qc__utf8_put(char *o, unsigned cp) {   /* (lone surrogates as 3 bytes, as WTF-8) */
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* One UTF-8 sequence at s (n bytes left): its length and code point, or 0 if not well-formed
   UTF-8 (RFC 3629: overlongs, past U+10FFFF, truncated, and the encoded surrogates ED A0 80 ..
   ED BF BF refused). */
static size_t qc__utf8_get(const unsigned char *s, size_t n, unsigned *cp) {
    unsigned c = s[0];
    size_t len, k;
    unsigned v, min;
    if (c < 0x80) { *cp = c; return 1; }
    if (c >= 0xC2 && c <= 0xDF) { len = 2; v = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; v = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; v = c & 0x07; min = 0x10000; }
    else return 0;
    if (len > n) return 0;
    for (k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[k] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

static int qc__jstring(qc__jp *p, const char **out, size_t *olen) {
    size_t start = ++p->i, k, cap = 0, n = 0;
    char *buf;
    /* the decoded text is never longer than the source */
    for (k = start; k < p->n && p->s[k] != '"'; k++) {
        if (p->s[k] == '\\') k++;
    }
    if (k >= p->n) { p->i = start - 1; return qc__jfail(p, "unterminated string"); }
    cap = k - start;
    buf = (char *)qc__arena_alloc(p->a, cap + 1);
    if (buf == NULL) return qc__fail(p->err, "out of memory reading JSON");
    while (p->s[p->i] != '"') {
        unsigned char c = (unsigned char)p->s[p->i];
        if (c < 0x20) return qc__jfail(p, "control character in a string");
        if (c == '\\') {
            char e = p->s[p->i + 1];
            p->i += 2;
            switch (e) {
            case '"': buf[n++] = '"'; break;
            case '\\': buf[n++] = '\\'; break;
            case '/': buf[n++] = '/'; break;
            case 'b': buf[n++] = '\b'; break;
            case 'f': buf[n++] = '\f'; break;
            case 'n': buf[n++] = '\n'; break;
            case 'r': buf[n++] = '\r'; break;
            case 't': buf[n++] = '\t'; break;
            case 'u': {
                unsigned cp, lo;
                if (p->i + 4 > p->n || qc__hex4(p->s + p->i, &cp) < 0) return qc__jfail(p, "bad \\u escape");
                p->i += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF && p->i + 6 <= p->n && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u'
                    && qc__hex4(p->s + p->i + 2, &lo) == 0 && lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p->i += 6;
                }
                n += qc__utf8_put(buf + n, cp);
                break;
            }
            default:
                p->i -= 2;
                return qc__jfail(p, "bad escape in a string");
            }
            continue;
        }
        {
            unsigned cp;
            size_t l = qc__utf8_get((const unsigned char *)p->s + p->i, p->n - p->i, &cp);
            if (l == 0) return qc__jfail(p, "invalid UTF-8 in a string (a bad, overlong or truncated sequence, or an encoded surrogate)");
            memcpy(buf + n, p->s + p->i, l);
            n += l;
            p->i += l;
        }
    }
    p->i++;
    buf[n] = 0;
    *out = buf;
    *olen = n;
    return 0;
}

static int qc__jvalue(qc__jp *p, qc_json *v);

static int qc__jnumber(qc__jp *p, qc_json *v) {
    size_t st = p->i, k;
    int frac = 0;
    char *txt;
    const char *s = p->s;
    if (p->i < p->n && s[p->i] == '-') p->i++;
    if (p->i >= p->n) return qc__jfail(p, "bad number");
    if (s[p->i] == '0') p->i++;
    else if (s[p->i] >= '1' && s[p->i] <= '9') { while (p->i < p->n && s[p->i] >= '0' && s[p->i] <= '9') p->i++; }
    else return qc__jfail(p, "bad number");
    if (p->i < p->n && s[p->i] == '.') {
        frac = 1;
        p->i++;
        if (p->i >= p->n || !(s[p->i] >= '0' && s[p->i] <= '9')) return qc__jfail(p, "bad number");
        while (p->i < p->n && s[p->i] >= '0' && s[p->i] <= '9') p->i++;
    }
    if (p->i < p->n && (s[p->i] == 'e' || s[p->i] == 'E')) {
        frac = 1;
        p->i++;
        if (p->i < p->n && (s[p->i] == '+' || s[p->i] == '-')) p->i++;
        if (p->i >= p->n || !(s[p->i] >= '0' && s[p->i] <= '9')) return qc__jfail(p, "bad number");
        while (p->i < p->n && s[p->i] >= '0' && s[p->i] <= '9') p->i++;
    }
    txt = qc__arena_strdup(p->a, s + st, p->i - st);
    if (txt == NULL) return qc__fail(p->err, "out of memory reading JSON");
    v->type = QC_JSON_NUMBER;
    v->text = txt;
    v->len = p->i - st;
    v->num = strtod(txt, NULL);
    v->is_int = !frac;
    v->neg = txt[0] == '-';
    v->int_ok = 0;
    if (!frac) {
        uint64_t u = 0;
        int ok = 1;
        for (k = (size_t)v->neg; k < v->len; k++) {
            unsigned dg = (unsigned)(txt[k] - '0');
            if (u > (UINT64_MAX - dg) / 10) { ok = 0; break; }
            u = u * 10 + dg;
        }
        if (u == 0) v->neg = 0;
        if (ok && v->neg && u > ((uint64_t)1 << 63)) ok = 0;
        v->u = ok ? u : 0;
        v->int_ok = ok;
    }
    return 0;
}

static int qc__jlit(qc__jp *p, const char *lit, int type, qc_json *v) {
    size_t l = strlen(lit);
    if (p->n - p->i < l || memcmp(p->s + p->i, lit, l) != 0) return qc__jfail(p, "unexpected character");
    p->i += l;
    v->type = type;
    return 0;
}

static int qc__jcontainer(qc__jp *p, qc_json *v, int obj) {
    size_t cap = 8, n = 0, k;
    qc_json *kids;
    if (++p->depth > QC__JSON_DEPTH) return qc__jfail(p, "nested too deeply");
    kids = (qc_json *)qc__arena_alloc(p->a, cap * sizeof *kids);
    if (kids == NULL) return qc__fail(p->err, "out of memory reading JSON");
    p->i++;
    qc__jws(p);
    if (p->i < p->n && p->s[p->i] == (obj ? '}' : ']')) {
        p->i++;
    } else {
        for (;;) {
            qc_json *kid;
            if (n == cap) {
                qc_json *nk = (qc_json *)qc__arena_alloc(p->a, 2 * cap * sizeof *kids);
                if (nk == NULL) return qc__fail(p->err, "out of memory reading JSON");
                memcpy(nk, kids, n * sizeof *kids);
                kids = nk;
                cap *= 2;
            }
            kid = &kids[n];
            memset(kid, 0, sizeof *kid);
            qc__jws(p);
            if (obj) {
                const char *key;
                size_t kl;
                if (p->i >= p->n || p->s[p->i] != '"') return qc__jfail(p, "expected a key in quotes");
                if (qc__jstring(p, &key, &kl) < 0) return -1;
                if (strlen(key) != kl) return qc__jfail(p, "NUL character in a key");
                for (k = 0; k < n; k++)
                    if (strcmp(kids[k].key, key) == 0) return qc__jfail(p, "duplicate key");
                qc__jws(p);
                if (p->i >= p->n || p->s[p->i] != ':') return qc__jfail(p, "expected ':'");
                p->i++;
                if (qc__jvalue(p, kid) < 0) return -1;
                kid->key = key;
            } else {
                if (qc__jvalue(p, kid) < 0) return -1;
            }
            n++;
            qc__jws(p);
            if (p->i < p->n && p->s[p->i] == ',') { p->i++; continue; }
            if (p->i < p->n && p->s[p->i] == (obj ? '}' : ']')) { p->i++; break; }
            return qc__jfail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    p->depth--;
    v->type = obj ? QC_JSON_OBJECT : QC_JSON_ARRAY;
    v->kids = kids;
    v->nkids = n;
    return 0;
}

static int qc__jvalue(qc__jp *p, qc_json *v) {
    char c;
    qc__jws(p);
    if (p->i >= p->n) return qc__jfail(p, "unexpected end of the document");
    c = p->s[p->i];
    switch (c) {
    case '{': return qc__jcontainer(p, v, 1);
    case '[': return qc__jcontainer(p, v, 0);
    case '"': v->type = QC_JSON_STRING; return qc__jstring(p, &v->text, &v->len);
    case 't': return qc__jlit(p, "true", QC_JSON_TRUE, v);
    case 'f': return qc__jlit(p, "false", QC_JSON_FALSE, v);
    case 'n': return qc__jlit(p, "null", QC_JSON_NULL, v);
    default:
        if (c == '-' || (c >= '0' && c <= '9')) return qc__jnumber(p, v);
        return qc__jfail(p, "unexpected character");
    }
}

static qc_json *qc__json_parse_arena(const char *text, size_t len, qc__arena *a, qc_error *err) {
    qc__jp p;
    qc_json *root = (qc_json *)qc__arena_alloc(a, sizeof *root);
    if (root == NULL) { qc__fail(err, "out of memory reading JSON"); return NULL; }
    memset(root, 0, sizeof *root);
    p.s = text; p.n = len; p.i = 0; p.a = a; p.err = err; p.depth = 0;
    if (len >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB && (unsigned char)text[2] == 0xBF)
        p.i = 3;
    if (qc__jvalue(&p, root) < 0) return NULL;
    qc__jws(&p);
    if (p.i != p.n) { qc__jfail(&p, "extra data after the document"); return NULL; }
    return root;
}

qc_json *qc_json_parse(const char *text, size_t len, const qc_allocator *al, void **mem, qc_error *err) {
    qc__arena a;
    qc_json *r;
    a.al = qc__allocator_of(al);
    a.head = NULL;
    r = qc__json_parse_arena(text, len, &a, err);
    if (r == NULL) { qc__arena_free(a.al, a.head); *mem = NULL; return NULL; }
    *mem = a.head;
    return r;
}

void qc_json_free(void *mem, const qc_allocator *al) { qc__arena_free(qc__allocator_of(al), (qc__chunk *)mem); }

const qc_json *qc_json_get(const qc_json *obj, const char *key) {
    size_t k;
    if (obj == NULL || obj->type != QC_JSON_OBJECT) return NULL;
    for (k = 0; k < obj->nkids; k++)
        if (strcmp(obj->kids[k].key, key) == 0) return &obj->kids[k];
    return NULL;
}

