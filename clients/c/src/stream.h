/* ---- the datagram layer (wire-format sections 11-15) ------------------------------------------- */

typedef struct qc__chunk_node { struct qc__chunk_node *next; size_t len; int index; } qc__chunk_node;
#define QC__NODE_HEAD ((sizeof(qc__chunk_node) + 15) / 16 * 16)

struct qc_partial {
    qc_partial *next;
    int seq, count, nheld;
    uint32_t pcheck;
    size_t bytes;
    uint64_t have[4];
    qc__chunk_node *chunks;
};

static void qc__partial_free(qc_decoder *d, qc_partial *p) {
    qc__chunk_node *c = p->chunks;
    while (c != NULL) {
        qc__chunk_node *nx = c->next;
        qc__dfree(d, c, QC__NODE_HEAD + c->len);
        c = nx;
    }
    d->chunk_bytes -= d->chunk * (size_t)p->nheld;
    d->npartials--;
    qc__dfree(d, p, sizeof *p);
}

static void qc__partial_unlink(qc_decoder *d, qc_partial *p) {
    qc_partial **pp = &d->partials;
    while (*pp != NULL && *pp != p) pp = &(*pp)->next;
    if (*pp == p) *pp = p->next;
}

static void qc__partials_clear(qc_decoder *d) {
    while (d->partials != NULL) {
        qc_partial *p = d->partials;
        d->partials = p->next;
        qc__partial_free(d, p);
    }
}

static void qc__forget(qc_decoder *d) {     /* every snapshot, latest, the partial packets */
    int i;
    for (i = 0; i < d->nheld; i++) qc__snap_free(d, d->held[i]);
    d->nheld = 0;
    d->held_cost = 0;
    d->latest = -1;
    memset(d->ambiguous, 0, sizeof d->ambiguous);
    d->nambiguous = 0;
    qc__partials_clear(d);
}

static size_t qc__scratch_bytes(const qc_schema *s, size_t n) {
    /* removed + 8 lists of kept (size_t), new ids and rows, the per-packet tables and the
       tail's padded copy, a byte per field and one per changed entity and field; with the
       growth margin of qc__scratch */
    /* (9 * (n + 1) + 1) size_t's + n * (1 + nslots) * 8 + tables + nfields + 1 + n * nfields,
       as a fixed part plus n per entity; SIZE_MAX when it does not fit */
    size_t per = 9 * sizeof(size_t) + (1 + (size_t)s->nslots) * 8 + (size_t)s->nfields;
    size_t b = qc__sat_add(10 * sizeof(size_t) + qc__tables_bytes(s) + ((size_t)s->nfields + 1), qc__sat_mul(n, per));
    return qc__sat_add(qc__sat_add(b, b / 4), 4096);
}

size_t qc_decoder_worst_case_bytes(const qc_schema *s, int history, size_t max_entities, int max_datagram, int max_partials) {
    size_t keep, snaps, lists, chunk_limit, np, reasm, hello, total;
    /* the hello's ranges (wire-format 13: history 1..32767, max_datagram 64..65507) and the
       config's (max_partials >= 0, 0: 1024); outside them 0, which no real bound is (below 16
       bytes of max_datagram the chunk size divided by zero) */
    if (history < 1 || history > 32767 || max_datagram < 64 || max_datagram > 65507 || max_partials < 0) return 0;
    keep = (size_t)(2 * history - 1 <= 32768 ? 2 * history - 1 : 32768);
    snaps = qc__sat_mul(keep + 2, qc_snapshot_bytes(s, max_entities));   /* held + one decoding + one loose */
    lists = keep * (sizeof(uint16_t) + sizeof(qc_snapshot *));
    chunk_limit = 256 * (size_t)max_datagram;
    np = (size_t)(max_partials > 0 ? max_partials : 1024);
    /* reassembly: the chunk bytes (at most 256 * max_datagram), a node per chunk (full chunks:
       at most chunk_limit / C, C = max_datagram - 8 - T, the fewest bytes with a key's T = 8;
       short ones: one per partial packet), a header per partial packet, and the reassembled
       packet (at most the chunk limit) */
    reasm = qc__sat_add(2 * chunk_limit + (chunk_limit / (size_t)(max_datagram - 16) + 1) * QC__NODE_HEAD,
                        qc__sat_mul(np, QC__NODE_HEAD + sizeof(qc_partial)));
    hello = 2 * (size_t)65507;     /* the adopted hello and, while adopting, the next */
    /* a packet reassembled from fragments is at most 256 * (max_datagram - 12) bytes: its new
       entities are at most 8 per byte, so max_entities above that is never reached */
    /* the scratch twice: growing it keeps the old one until the new one is filled; every sum
       stops at SIZE_MAX (an absurd max_entities) instead of wrapping */
    total = qc__sat_add(snaps, 2 * lists);
    total = qc__sat_add(total, qc__sat_mul(2, qc__scratch_bytes(s, max_entities)));
    total = qc__sat_add(total, reasm);
    return qc__sat_add(total, hello + (size_t)QC_EG_TABLES * QC_EG_TABLE_BYTES + 64);
}

int qc_decoder_init(qc_decoder *d, const qc_schema *s, const qc_decoder_config *cfg, qc_error *err) {
    memset(d, 0, sizeof *d);
    if (cfg != NULL && (cfg->max_history < 0 || cfg->max_partials < 0)) {
        /* (0 is "the default"; a negative one is a mistake, not a default) */
        if (err != NULL) {
            err->kind = -1;
            snprintf(err->message, sizeof err->message, "qc_decoder_config: %s %d is negative (0: the default)",
                     cfg->max_history < 0 ? "max_history" : "max_partials",
                     cfg->max_history < 0 ? cfg->max_history : cfg->max_partials);
        }
        return -1;
    }
    d->schema = s;
    d->al = qc__allocator_of(cfg != NULL ? &cfg->allocator : NULL);
    d->alloc_limit = cfg != NULL ? cfg->alloc_limit : 0;
    d->max_bytes = cfg != NULL && cfg->max_bytes ? (uint64_t)cfg->max_bytes : (uint64_t)QC_MAX_BYTES_DEFAULT;
    if (cfg != NULL && cfg->max_bytes == (size_t)-1) d->max_bytes = ~(uint64_t)0;
    d->tlen = 4;
    if (cfg != NULL && (cfg->key != NULL || cfg->key_len != 0)) {
        if (qc_mac_master(cfg->key, cfg->key_len, d->mk) < 0) {
            if (err != NULL) {
                err->kind = -1;
                snprintf(err->message, sizeof err->message, "key: %lu bytes%s; a key is 1 to 255 bytes (16 or more random ones)",
                         (unsigned long)cfg->key_len, cfg->key == NULL ? " at NULL" : "");
            }
            memset(d, 0, sizeof *d);
            return -1;
        }
        d->keyed = 1;
        d->tlen = 8;
        qc_mac_sub(d->mk, (const uint8_t *)"quantcodec hello", 16, d->k_h);
        qc_mac_sub(d->mk, (const uint8_t *)"quantcodec hello request", 24, d->k_q);
    }
    d->max_entities = cfg != NULL && cfg->max_entities ? cfg->max_entities : ((size_t)1 << 24);
    d->max_history = cfg != NULL && cfg->max_history > 0 && cfg->max_history < 32767 ? cfg->max_history : 32767;
    d->max_partials = cfg != NULL && cfg->max_partials > 0 ? cfg->max_partials : 1024;
    d->latest = -1;
    d->history = 64;
    (void)err;
    return 0;
}

static void qc__hello_free(qc_decoder *d);

void qc_decoder_free(qc_decoder *d) {
    if (d == NULL) return;              /* like free(NULL) */
    qc__forget(d);
    qc__snap_free(d, d->loose);
    d->loose = NULL;
    qc__dfree(d, d->held, (size_t)d->held_cap * sizeof(qc_snapshot *));
    qc__dfree(d, d->held_seq, (size_t)d->held_cap * sizeof(uint16_t));
    qc__dfree(d, d->scratch, d->scratch_size);
    qc__hello_free(d);
    qc__egt_free(d);
    d->held = NULL; d->held_seq = NULL; d->scratch = NULL; d->scratch_size = 0; d->held_cap = 0;
}

static void qc__hello_free(qc_decoder *d) {
    if (d->adopted && d->hello_bytes != NULL) qc__dfree(d, d->hello_bytes, d->hello_len);
    d->hello_bytes = NULL;
    d->hello_len = 0;
}

static int qc__utf8_strict(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned cp;
        size_t l = qc__utf8_get(p + i, n - i, &cp);
        if (l == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += l;
    }
    return 1;
}

typedef struct qc__hello {
    int predict, history, max_datagram;
    uint64_t stream_id, started;
    const uint8_t *fp;
    uint32_t schema_version;
    const uint8_t *name; size_t name_len;
    unsigned nf, ns;
    size_t fields_at;           /* offset of the first summary */
} qc__hello;

static int qc__parse_hello(const uint8_t *data, size_t len, size_t tlen, qc__hello *h, char *msg, size_t cap) {
    size_t end = len - tlen, pos = 46;
    unsigned i;
    if (data[4] != 1) { snprintf(msg, cap, "hello: format version %u, this client reads version 1", data[4]); return -1; }
    if (data[5] & ~1u) { snprintf(msg, cap, "hello: unknown flags 0x%02x", data[5]); return -1; }
    h->predict = data[5] & 1;
    h->history = (int)qc__le16(data + 6);
    h->max_datagram = (int)qc__le16(data + 8);
    h->stream_id = qc__load_le64(data + 10);
    h->started = qc__load_le64(data + 18);
    h->fp = data + 26;
    h->schema_version = qc__le32(data + 42);
    if (h->history < 1 || h->history > 0x7FFF) { snprintf(msg, cap, "hello: history %d outside 1..32767", h->history); return -1; }
    if (h->max_datagram < 64 || h->max_datagram > 65507 || len > (size_t)h->max_datagram) {
        snprintf(msg, cap, "hello: max_datagram %d outside 64..65507 or smaller than the hello (%lu bytes)", h->max_datagram, (unsigned long)len);
        return -1;
    }
    {
        int i;
        for (i = 0; i < 16; i++)
            if (!((h->fp[i] >= '0' && h->fp[i] <= '9') || (h->fp[i] >= 'a' && h->fp[i] <= 'f'))) {
                snprintf(msg, cap, "hello: the fingerprint is not 16 lowercase hex digits");
                return -1;
            }
    }
    if (pos + 1 > end) goto trunc;
    h->name_len = data[pos++];
    if (pos + h->name_len > end) goto trunc;
    h->name = data + pos;
    if (!qc__utf8_strict(h->name, h->name_len)) { snprintf(msg, cap, "hello: the schema name is not UTF-8"); return -1; }
    pos += h->name_len;
    if (pos + 4 > end) goto trunc;
    h->nf = qc__le16(data + pos);
    h->ns = qc__le16(data + pos + 2);
    pos += 4;
    if (h->ns > h->nf) { snprintf(msg, cap, "hello: %u field summaries for %u fields", h->ns, h->nf); return -1; }
    h->fields_at = pos;
    for (i = 0; i < h->ns; i++) {
        size_t l;
        if (pos + 1 > end) goto trunc;
        l = data[pos++];
        if (pos + l > end) goto trunc;
        if (!qc__utf8_strict(data + pos, l)) { snprintf(msg, cap, "hello: field %u's name is not UTF-8", i); return -1; }
        pos += l;
        if (pos + 7 > end) goto trunc;
        pos += 7;
    }
    if (pos != end) { snprintf(msg, cap, "hello: %lu bytes after the last field summary", (unsigned long)(end - pos)); return -1; }
    return 0;
trunc:
    snprintf(msg, cap, "hello: truncated at byte %lu", (unsigned long)pos);
    return -1;
}

static void qc__cat(char *msg, size_t cap, const char *fmt, ...) {
    size_t n = strlen(msg);
    va_list ap;
    if (n + 3 >= cap) return;
    if (n) { msg[n++] = ';'; msg[n++] = ' '; msg[n] = 0; }
    va_start(ap, fmt);
    vsnprintf(msg + n, cap - n, fmt, ap);
    va_end(ap);
}

/* Says what differs between the decoder's schema and the hello's (its fingerprint differs). */
static void qc__differences(const qc_schema *s, const uint8_t *data, const qc__hello *h, char *msg, size_t cap) {
    size_t pos;
    unsigned i;
    int f, complete = h->ns == h->nf;
    size_t nl = strlen(s->name);
    msg[0] = 0;
    qc__cat(msg, cap, "a hello of another schema: fingerprint %s here, %.16s in the hello", s->fingerprint, (const char *)h->fp);
    if (nl > 255) nl = 255;   /* (the hello carries at most 255 bytes of the name) */
    if (h->name_len != nl || memcmp(h->name, s->name, nl) != 0)
        qc__cat(msg, cap, "schema name '%s' here, '%.*s' in the hello", s->name, (int)h->name_len, (const char *)h->name);
    if (h->schema_version != s->version32)
        qc__cat(msg, cap, "schema version %s here, %lu in the hello", s->version_text, (unsigned long)h->schema_version);
    for (f = 0; f < s->nfields; f++) {
        const qc_field *fd = &s->fields[f];
        int found = 0;
        pos = h->fields_at;
        for (i = 0; i < h->ns; i++) {
            size_t l = data[pos];
            const uint8_t *nm = data + pos + 1;
            int kind = data[pos + 1 + l];
            unsigned bits = qc__le16(data + pos + 2 + l);
            uint32_t hh = qc__le32(data + pos + 4 + l);
            if (l == strlen(fd->name) && memcmp(nm, fd->name, l) == 0) {
                unsigned mybits = fd->codec->bits > 0xFFFF ? 0xFFFF : (unsigned)fd->codec->bits;
                found = 1;
                if (kind != fd->codec->kind)
                    qc__cat(msg, cap, "field '%s': %s here, %s on the server", fd->name, qc__kind_names[fd->codec->kind],
                            kind >= 1 && kind <= 15 ? qc__kind_names[kind] : "an unknown kind");
                else if (bits != mybits)
                    qc__cat(msg, cap, "field '%s': %u bits here, %u on the server", fd->name, mybits, bits);
                else if (hh != fd->h)
                    qc__cat(msg, cap, "field '%s': same kind (%s) and bits, other parameters (range, step, labels...)",
                            fd->name, qc__kind_names[fd->codec->kind]);
                break;
            }
            pos += 1 + l + 7;
        }
        if (!found && complete) qc__cat(msg, cap, "field '%s' is not in the server's schema", fd->name);
    }
    pos = h->fields_at;
    for (i = 0; i < h->ns; i++) {
        size_t l = data[pos];
        int mine = 0;
        for (f = 0; f < s->nfields && !mine; f++)
            mine = strlen(s->fields[f].name) == l && memcmp(s->fields[f].name, data + pos + 1, l) == 0;
        if (!mine) qc__cat(msg, cap, "field '%.*s' of the server's schema is missing here", (int)l, (const char *)data + pos + 1);
        pos += 1 + l + 7;
    }
    if (!complete) qc__cat(msg, cap, "(the hello summarizes %u of the server's %u fields)", h->ns, h->nf);
}

static int qc__refuse(qc_result *res, int kind) {
    static const char *const names[] = {"", "no-hello", "check", "hello", "schema", "fragment", "baseline", "malformed", "memory",
                                        "limits"};
    res->status = kind;
    res->kind = names[-kind];
    return kind;
}

static int qc__adopt(qc_decoder *d, const uint8_t *data, size_t len, const qc__hello *h, qc_result *res) {
    uint8_t key[41];
    uint8_t *copy;
    int keep = 2 * h->history - 1 <= 32768 ? 2 * h->history - 1 : 32768;
    qc_snapshot **held;
    uint16_t *held_seq;
    copy = (uint8_t *)qc__dalloc(d, len);
    held = (qc_snapshot **)qc__dalloc(d, (size_t)keep * sizeof(qc_snapshot *));
    held_seq = (uint16_t *)qc__dalloc(d, (size_t)keep * sizeof(uint16_t));
    if (copy == NULL || held == NULL || held_seq == NULL) {
        qc__dfree(d, copy, len);
        qc__dfree(d, held, (size_t)keep * sizeof(qc_snapshot *));
        qc__dfree(d, held_seq, (size_t)keep * sizeof(uint16_t));
        snprintf(res->message, sizeof res->message, "hello: out of memory for a history of %d", h->history);
        return qc__refuse(res, QC_E_MEMORY);
    }
    memcpy(copy, data, len);
    /* start over: nothing held, latest none, no partial packet */
    qc__forget(d);
    qc__dfree(d, d->held, (size_t)d->held_cap * sizeof(qc_snapshot *));
    qc__dfree(d, d->held_seq, (size_t)d->held_cap * sizeof(uint16_t));
    qc__hello_free(d);
    d->held = held;
    d->held_seq = held_seq;
    d->held_cap = keep;
    d->hello_bytes = copy;
    d->hello_len = len;
    d->adopted = 1;
    d->history = h->history;
    d->keep = keep;
    d->predict = h->predict;
    d->max_datagram = h->max_datagram;
    d->stream_id = h->stream_id;
    d->started = h->started;
    d->chunk = (size_t)h->max_datagram - 8 - (size_t)d->tlen;
    memcpy(key, "quantcodec", 10);
    key[10] = 1;
    memcpy(key + 11, h->fp, 16);
    key[27] = (uint8_t)h->history; key[28] = (uint8_t)(h->history >> 8);
    key[29] = (uint8_t)h->predict;
    key[30] = (uint8_t)h->max_datagram; key[31] = (uint8_t)(h->max_datagram >> 8);
    {
        int i;
        for (i = 0; i < 8; i++) key[32 + i] = (uint8_t)(h->stream_id >> (8 * i));
    }
    memcpy(d->stream_key, key, 40);
    key[40] = 'P';
    d->seed_p = qc_crc32c(key, 41, 0);
    if (d->keyed) qc_mac_sub(d->mk, key, 41, d->k_p);
    key[40] = 'F';
    d->seed_f = qc_crc32c(key, 41, 0);
    if (d->keyed) qc_mac_sub(d->mk, key, 41, d->k_f);
    key[40] = 'R';
    d->seed_r = qc_crc32c(key, 41, 0);
    if (d->keyed) qc_mac_sub(d->mk, key, 41, d->k_r);
    res->status = QC_PENDING;
    res->adopted = 1;
    snprintf(res->message, sizeof res->message, "hello: stream %016llx adopted (history %d, max_datagram %d%s)",
             (unsigned long long)h->stream_id, h->history, h->max_datagram, h->predict ? ", predict" : "");
    return QC_PENDING;
}

static int qc__take_hello(qc_decoder *d, const uint8_t *data, size_t len, qc_result *res) {
    qc__hello h;
    if (qc__parse_hello(data, len, (size_t)d->tlen, &h, res->message, sizeof res->message) < 0) return qc__refuse(res, QC_E_HELLO);
    if (memcmp(h.fp, d->schema->fingerprint, 16) != 0) {
        qc__differences(d->schema, data, &h, res->message, sizeof res->message);
        return qc__refuse(res, QC_E_SCHEMA);
    }
    if (d->adopted) {
        if (h.stream_id == d->stream_id) {
            if (len != d->hello_len || memcmp(data, d->hello_bytes, len - (size_t)d->tlen) != 0) {
                snprintf(res->message, sizeof res->message, "hello: a hello of stream %016llx with other parameters than the one adopted",
                         (unsigned long long)h.stream_id);
                return qc__refuse(res, QC_E_HELLO);
            }
            res->status = QC_PENDING;
            snprintf(res->message, sizeof res->message, "hello: the current stream's hello again");
            return QC_PENDING;
        }
        /* (wire-format 13: a stream that has decoded no packet yet holds nothing, so it refuses
           no other; a stray hello adopted cannot keep the client from its server, whose next
           hello takes it back) */
        if (h.started <= d->started && d->latest >= 0) {
            snprintf(res->message, sizeof res->message, "hello: a hello of an older stream %016llx (started %llu, the current one %llu, "
                     "which has decoded packets)", (unsigned long long)h.stream_id, (unsigned long long)h.started,
                     (unsigned long long)d->started);
            return qc__refuse(res, QC_E_HELLO);
        }
    }
    {
        /* wire-format 19, check 1: a window of empty snapshots and full reassembly */
        uint64_t need = (uint64_t)(2 * h.history - 1) * 256 + 256 * (uint64_t)h.max_datagram;
        if (need > d->max_bytes) {
            snprintf(res->message, sizeof res->message, "hello: history %d and max_datagram %d need %llu bytes "
                     "((2 * history - 1) * 256 + 256 * max_datagram), above max_bytes %llu",
                     h.history, h.max_datagram, (unsigned long long)need, (unsigned long long)d->max_bytes);
            return qc__refuse(res, QC_E_LIMITS);
        }
    }
    if (h.history > d->max_history) {
        snprintf(res->message, sizeof res->message, "hello: history %d above this decoder's max_history %d", h.history, d->max_history);
        return qc__refuse(res, QC_E_HELLO);
    }
    return qc__adopt(d, data, len, &h, res);
}

static int qc__packet(qc_decoder *d, const uint8_t *p, size_t n, qc_result *res) {
    qc_snapshot *snap = NULL;
    int st = qc__decode_packet(d, p, n, &snap, res);
    if (st != QC_SNAPSHOT) return qc__refuse(res, st);
    qc__keep(d, snap);
    res->status = QC_SNAPSHOT;
    res->snapshot = snap;
    res->ack = 1;
    res->ack_seq = (uint16_t)d->latest;
    return QC_SNAPSHOT;
}

/* How far packet `seq` is behind latest (wire-format 12, rule 4): (latest - seq) mod 65536, less
   65536 from 32768 on (a packet newer than latest is behind by a negative number); 0 for every
   packet while no packet is decoded. */
static int qc__behind(const qc_decoder *d, int seq) {
    int dd;
    if (d->latest < 0) return 0;
    dd = (d->latest - seq) & QC__M;
    return dd >= 0x8000 ? dd - 0x10000 : dd;
}

/* Room for one more chunk of the partial packet `own` (NULL: one begun now, packet `seq`), under
   both bounds: the chunks' 256 * max_datagram (wire-format 12, rule 4) and max_partials (this
   client's, for a new partial packet). Until both hold, the partial packets are dropped oldest
   first: the furthest behind latest, equals in the order begun (the list's order; a new one
   last among its equals). When `own` comes up it is dropped (if it was held) and 0 is returned:
   the chunk is not kept, and the packets ranked after it stay. Allocates nothing. */
static int qc__make_room(qc_decoder *d, qc_partial *own, int seq) {
    size_t limit = 256 * (size_t)d->max_datagram;
    int own_rank = qc__behind(d, seq);
    while (d->chunk_bytes + d->chunk > limit || (own == NULL && d->npartials >= d->max_partials)) {
        qc_partial *p, *oldest = NULL, **pp, **at = NULL;
        int best = 0;
        for (pp = &d->partials; (p = *pp) != NULL; pp = &p->next) {
            int r = qc__behind(d, p->seq);
            if (oldest == NULL || r > best) { oldest = p; at = pp; best = r; }
        }
        if (oldest == NULL || (own == NULL && own_rank > best)) return 0;   /* a new own packet the oldest */
        *at = oldest->next;
        qc__partial_free(d, oldest);
        if (oldest == own) return 0;
    }
    return 1;
}

static int qc__fragment(qc_decoder *d, const uint8_t *data, size_t len, qc_result *res) {
    const uint8_t *body = data;
    size_t blen = len - (size_t)d->tlen, clen = blen - 8, C = d->chunk;
    int seq = (int)qc__le16(body), index = body[2], count = body[3] + 1, last;
    uint32_t pcheck = qc__le32(body + 4);
    qc_partial *p, **pp;
    qc__chunk_node *node;
    if (count == 1) {
        snprintf(res->message, sizeof res->message, "fragment of packet %d: a count of 1 (a packet that fits is sent whole)", seq);
        return qc__refuse(res, QC_E_FRAGMENT);
    }
    if (index >= count) {
        snprintf(res->message, sizeof res->message, "fragment of packet %d: index %d of %d", seq, index, count);
        return qc__refuse(res, QC_E_FRAGMENT);
    }
    last = index == count - 1;
    if (last ? !(clen >= 1 && clen <= C) : clen != C) {
        snprintf(res->message, sizeof res->message, "fragment %d of %d of packet %d: a chunk of %lu bytes (%s%lu expected)",
                 index, count, seq, (unsigned long)clen, last ? "at most " : "", (unsigned long)C);
        return qc__refuse(res, QC_E_FRAGMENT);
    }
    res->status = QC_PENDING;
    if (d->latest >= 0) {
        int dd;
        pp = &d->partials;
        while (*pp != NULL) {
            dd = (d->latest - (*pp)->seq) & QC__M;
            if (dd >= d->history && dd < 0x8000) {
                p = *pp;
                *pp = p->next;
                qc__partial_free(d, p);
            } else {
                pp = &(*pp)->next;
            }
        }
        dd = (d->latest - seq) & QC__M;
        if (dd >= d->history && dd < 0x8000) {
            snprintf(res->message, sizeof res->message, "fragment of packet %d: given up (too old)", seq);
            return QC_PENDING;
        }
    }
    for (p = d->partials; p != NULL; p = p->next)
        if (p->seq == seq && p->count == count && p->pcheck == pcheck) break;
    if (p != NULL && ((p->have[index >> 6] >> (index & 63)) & 1)) {
        snprintf(res->message, sizeof res->message, "fragment %d of packet %d: a duplicate", index, seq);
        return QC_PENDING;
    }
    /* every chunk counts as a full one (docs/wire-format.md section 12, rule 4); no room: the
       oldest partial packets give way, the packet's own ranked with them */
    if (!qc__make_room(d, p, seq)) {
        snprintf(res->message, sizeof res->message, "fragment %d of packet %d: not kept (its packet the oldest held, "
                 "the reassembly's bound reached)", index, seq);
        return QC_PENDING;
    }
    if (p != NULL && p->nheld + 1 == count) {
        /* the chunk that completes the packet: P is the chunks in order and this one, joined
           without keeping it; the partial packet goes only once P is decoded or refused for
           what it is, so that a refusal for memory (the join, or the packet's snapshot) leaves
           it as it was, and the same fragment again completes it */
        size_t total = p->bytes + clen;
        uint8_t *packet = (uint8_t *)qc__dalloc(d, total);
        int st;
        if (packet == NULL) {
            snprintf(res->message, sizeof res->message, "packet %d: out of memory reassembling it", seq);
            return qc__refuse(res, QC_E_MEMORY);
        }
        for (node = p->chunks; node != NULL; node = node->next)
            memcpy(packet + (size_t)node->index * C, (uint8_t *)node + QC__NODE_HEAD, node->len);
        memcpy(packet + (size_t)index * C, body + 8, clen);
        if (qc_crc32c(packet, total, d->seed_p) != pcheck || total < 2 || qc__le16(packet) != (unsigned)seq) {
            qc__dfree(d, packet, total);
            qc__partial_unlink(d, p);
            qc__partial_free(d, p);
            snprintf(res->message, sizeof res->message, "fragments of packet %d: the reassembled packet fails its check", seq);
            return qc__refuse(res, QC_E_FRAGMENT);
        }
        st = qc__packet(d, packet, total, res);
        qc__dfree(d, packet, total);
        if (st != QC_E_MEMORY) {
            qc__partial_unlink(d, p);
            qc__partial_free(d, p);
        }
        return st;
    }
    node = (qc__chunk_node *)qc__dalloc(d, QC__NODE_HEAD + clen);
    if (node == NULL) {
        snprintf(res->message, sizeof res->message, "fragment of packet %d: out of memory", seq);
        return qc__refuse(res, QC_E_MEMORY);
    }
    if (p == NULL) {
        p = (qc_partial *)qc__dalloc(d, sizeof *p);
        if (p == NULL) {
            qc__dfree(d, node, QC__NODE_HEAD + clen);
            snprintf(res->message, sizeof res->message, "fragment of packet %d: out of memory", seq);
            return qc__refuse(res, QC_E_MEMORY);
        }
        memset(p, 0, sizeof *p);
        p->seq = seq; p->count = count; p->pcheck = pcheck;
        d->npartials++;
        for (pp = &d->partials; *pp != NULL; pp = &(*pp)->next) {}
        *pp = p;
    }
    node->len = clen;
    node->index = index;
    memcpy((uint8_t *)node + QC__NODE_HEAD, body + 8, clen);
    node->next = p->chunks;
    p->chunks = node;
    p->have[index >> 6] |= ((uint64_t)1) << (index & 63);
    p->nheld++;
    p->bytes += clen;
    d->chunk_bytes += C;   /* every chunk counted as a full one */
    snprintf(res->message, sizeof res->message, "fragment %d of %d of packet %d kept", index, count, seq);
    return QC_PENDING;
}

/* a call's result before anything is read (pending, nothing decoded), and the snapshot the
   previous call handed out without keeping it freed now */
static void qc__result_begin(qc_decoder *d, qc_result *res) {
    res->status = QC_PENDING;
    res->snapshot = NULL;
    res->ack = 0;
    res->ack_seq = 0;
    res->adopted = 0;
    res->kind = NULL;
    res->message[0] = 0;
    if (d->loose != NULL) { qc__snap_free(d, d->loose); d->loose = NULL; }
}

int qc_decoder_packet(qc_decoder *d, const uint8_t *packet, size_t len, qc_result *res) {
    qc__result_begin(d, res);
    if (d->held == NULL) {
        int keep = 2 * d->history - 1;
        d->held = (qc_snapshot **)qc__dalloc(d, (size_t)keep * sizeof(qc_snapshot *));
        d->held_seq = (uint16_t *)qc__dalloc(d, (size_t)keep * sizeof(uint16_t));
        if (d->held == NULL || d->held_seq == NULL) {
            qc__dfree(d, d->held, (size_t)keep * sizeof(qc_snapshot *));
            qc__dfree(d, d->held_seq, (size_t)keep * sizeof(uint16_t));
            d->held = NULL;
            d->held_seq = NULL;
            snprintf(res->message, sizeof res->message, "out of memory");
            return qc__refuse(res, QC_E_MEMORY);
        }
        d->held_cap = keep;
        d->keep = keep;
    }
    return qc__packet(d, packet, len, res);
}

/* whether the datagram's last T bytes are the check of the bytes before: CRC-32C with the seed,
   or SipHash-2-4 under the key (wire-format 11, 17) */
static int qc__sealed(const qc_decoder *d, const uint8_t *data, size_t len, uint32_t seed, const uint8_t *key) {
    if (d->keyed) return qc_siphash(key, data, len - 8) == qc__load_le64(data + len - 8);
    return qc_crc32c(data, len - 4, seed) == qc__le32(data + len - 4);
}

int qc_decoder_datagram(qc_decoder *d, const uint8_t *data, size_t len, qc_result *res) {
    size_t T = (size_t)d->tlen;
    qc__result_begin(d, res);
    if (len >= 1 + T) {
        if (d->adopted) {
            if (qc__sealed(d, data, len, d->seed_p, d->k_p)) return qc__packet(d, data, len - T, res);
            if (len >= 9 + T && qc__sealed(d, data, len, d->seed_f, d->k_f)) return qc__fragment(d, data, len, res);
        }
        if (len >= 51 + T && memcmp(data, "QCHL", 4) == 0 &&
            qc__sealed(d, data, len, qc_crc32c((const uint8_t *)"quantcodec hello", 16, 0), d->k_h))
            return qc__take_hello(d, data, len, res);
    }
    if (!d->adopted) {
        snprintf(res->message, sizeof res->message, "no hello adopted yet, so no datagram can be checked (a datagram of %lu bytes refused)",
                 (unsigned long)len);
        return qc__refuse(res, QC_E_NO_HELLO);
    }
    snprintf(res->message, sizeof res->message, "a datagram of %lu bytes fails the check of stream %016llx", (unsigned long)len,
             (unsigned long long)d->stream_id);
    return qc__refuse(res, QC_E_CHECK);
}

/* ---- the session client (wire-format 18) ----------------------------------------------------------- */

/* A 32-bit nonce from what portable C offers: /dev/urandom where it exists, else time, clock and
   addresses (of the client, a local, a function), mixed by SipHash. A game should pass its own. */
static uint32_t qc__draw_nonce(const void *where) {
    uint8_t buf[64], k[16];
    size_t n = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    time_t t = time(NULL);
    clock_t c = clock();
    uintptr_t a = (uintptr_t)where, b = (uintptr_t)&n, fn = (uintptr_t)&qc__draw_nonce;
    if (f != NULL) {
        n = fread(buf, 1, 16, f);
        fclose(f);
    }
    memcpy(buf + n, &t, sizeof t); n += sizeof t;
    memcpy(buf + n, &c, sizeof c); n += sizeof c;
    memcpy(buf + n, &a, sizeof a); n += sizeof a;
    memcpy(buf + n, &b, sizeof b); n += sizeof b;
    memcpy(k, &fn, sizeof fn < 16 ? sizeof fn : 16);
    memset(k + (sizeof fn < 16 ? sizeof fn : 16), 0x5A, 16 - (sizeof fn < 16 ? sizeof fn : 16));
    return (uint32_t)(qc_siphash(k, buf, n) >> 16);
}

int qc_client_init_config(qc_client *c, const qc_schema *s, const qc_decoder_config *cfg, int64_t nonce, qc_error *err) {
    memset(c, 0, sizeof *c);
    if (nonce != QC_NONCE_RANDOM && (nonce < 0 || nonce > (int64_t)0xFFFFFFFF)) {
        if (err != NULL) {
            err->kind = -1;
            snprintf(err->message, sizeof err->message, "nonce %lld: a nonce is 0 .. 2**32 - 1, or QC_NONCE_RANDOM", (long long)nonce);
        }
        return -1;
    }
    if (qc_decoder_init(&c->dec, s, cfg, err) < 0) return -1;
    c->nonce = nonce == QC_NONCE_RANDOM ? qc__draw_nonce(c) : (uint32_t)nonce;
    c->rseq = 0;
    c->due = 1;     /* a client starts with a reply due: a hello request, asking to be connected */
    c->idle = 0;    /* no call of qc_client_reply yet (keep-alives, wire-format 18) */
    return 0;
}

int qc_client_init(qc_client *c, const qc_schema *s, const uint8_t *key, size_t key_len, size_t max_bytes, int64_t nonce, qc_error *err) {
    qc_decoder_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.key = key;
    cfg.key_len = key_len;
    cfg.max_bytes = max_bytes;
    return qc_client_init_config(c, s, &cfg, nonce, err);
}

void qc_client_free(qc_client *c) { if (c != NULL) qc_decoder_free(&c->dec); }   /* NULL: like free(NULL) */

int qc_client_receive(qc_client *c, const uint8_t *data, size_t len, qc_result *res) {
    int st = qc_decoder_datagram(&c->dec, data, len, res);
    /* due: a view, a hello adopted (a new stream), a refusal of kind no-hello or baseline;
       nothing else, so that junk cannot make the client send */
    if (st == QC_SNAPSHOT || (st == QC_PENDING && res->adopted) || st == QC_E_NO_HELLO || st == QC_E_BASELINE) c->due = 1;
    return st;
}

static void qc__put_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

size_t qc_client_reply(qc_client *c, uint8_t *out) {
    const qc_decoder *d = &c->dec;
    size_t n;
    if (!c->due) {
        /* a keep-alive (wire-format 18): the reply all the same when the 31 calls before this one
           returned nothing */
        if (c->idle < QC_KEEPALIVE_CALLS - 1) {
            c->idle++;
            return 0;
        }
    }
    c->idle = 0;                                /* any reply made starts the count again */
    c->due = 0;
    qc__put_le32(out + 2, c->nonce);
    qc__put_le32(out + 6, c->rseq);
    c->rseq++;                                  /* mod 2**32 */
    if (d->adopted) {
        /* an ack: has_latest, latest, and the possible baselines among the 32 before it */
        uint32_t acks = 0;
        out[0] = 0x41;
        out[1] = d->latest >= 0 ? 1 : 0;
        if (d->latest >= 0) {
            int i;
            for (i = 0; i < 32 && i + 1 < d->history; i++)
                if (qc__find(d, (d->latest - 1 - i) & QC__M) >= 0) acks |= (uint32_t)1 << i;
        }
        out[10] = (uint8_t)(d->latest >= 0 ? d->latest : 0);
        out[11] = (uint8_t)(d->latest >= 0 ? d->latest >> 8 : 0);
        qc__put_le32(out + 12, acks);
        n = 16;
        if (d->keyed) qc__put_le64(out + n, qc_siphash(d->k_r, out, n));
        else qc__put_le32(out + n, qc_crc32c(out, n, d->seed_r));
    } else {
        /* a hello request: the client holds no stream */
        out[0] = 0x48;
        out[1] = 0;
        memcpy(out + 10, d->schema->fingerprint, 16);
        n = 26;
        if (d->keyed) qc__put_le64(out + n, qc_siphash(d->k_q, out, n));
        else qc__put_le32(out + n, qc_crc32c(out, n, qc_crc32c((const uint8_t *)"quantcodec hello request", 24, 0)));
    }
    return n + (size_t)d->tlen;
}

