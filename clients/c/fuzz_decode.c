/* libFuzzer target on the datagram decoder, with the oracle that a refused datagram leaves the
   state exactly as it was (a digest of the stream, latest, the held snapshots, the ambiguous
   numbers and the partial packets, before and after).

   Build and run (clang's libFuzzer; see fuzz.sh):
       clang -g -O1 -std=c99 -ffp-contract=off -fsanitize=fuzzer,address,undefined fuzz_decode.c -lm -o build/fuzz_decode
       QC_FUZZ_SCHEMA=../../conformance/schemas/pose.json build/fuzz_decode CORPUS -runs=1000000

   An input is a mode byte, then a sequence of records [u16 little-endian length][u8 how][length
   bytes]. The mode: bit 0 keyed checks (wire-format 17, the kit's 32-byte key); bit 1 through the
   session client (qc_client_receive, then qc_client_reply after every datagram, with the oracle
   that a reply comes exactly when one is due or a keep-alive's turn (the 31 calls before made
   none), laid out as wire-format 18 says, its check holding); bits 2-3 max_bytes (the default, 400000, 100000, 2000000), with the oracle that the
   cost model never passes it. A record's how: 0 the bytes are a datagram as it arrived; 1 a bare
   packet the harness seals with the adopted stream's whole-packet check (so that mutations reach
   the packet decoder, not only the check); 2 a fragment body sealed with the fragment check; 3 a
   hello body sealed with the hello check (CRC or tag, as the mode says). A hello of another
   stream that is not newer (its started not later) is adopted only while the adopted stream has
   decoded no packet (wire-format 13). */
#define QUANTCODEC_IMPLEMENTATION
#include "quantcodec.h"

static qc_schema g_schema;
static int g_ready;

/* a word-wise hash of 64-bit words (fast enough to run twice per datagram over every held snapshot) */
static uint64_t hash_words(const uint64_t *w, size_t n, uint64_t h) {
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ w[i]) * 0x100000001B3ull + (h >> 29);
    return h;
}

static uint32_t digest_core(const qc_decoder *d) {
    uint32_t h = 0;
    int i;
    h = qc_crc32c((const uint8_t *)&d->adopted, sizeof d->adopted, h);
    h = qc_crc32c((const uint8_t *)&d->latest, sizeof d->latest, h);
    h = qc_crc32c((const uint8_t *)&d->stream_id, sizeof d->stream_id, h);
    h = qc_crc32c((const uint8_t *)&d->history, sizeof d->history, h);
    h = qc_crc32c((const uint8_t *)&d->nheld, sizeof d->nheld, h);
    {
        uint64_t x = hash_words(d->ambiguous, 1024, 0);
        h = qc_crc32c((const uint8_t *)&x, 8, h);
    }
    if (d->hello_bytes) h = qc_crc32c(d->hello_bytes, d->hello_len, h);
    for (i = 0; i < d->nheld; i++) {
        const qc_snapshot *s = d->held[i];
        h = qc_crc32c((const uint8_t *)&d->held_seq[i], 2, h);
        h = qc_crc32c((const uint8_t *)&s->n, sizeof s->n, h);
        if (s->n) {
            uint64_t x = hash_words(s->ids, s->n, 0);
            x = hash_words(s->rows, s->n * (size_t)d->schema->nslots, x);
            h = qc_crc32c((const uint8_t *)&x, 8, h);
        }
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

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    const char *path = getenv("QC_FUZZ_SCHEMA");
    FILE *f;
    static char text[1 << 20];
    size_t n;
    qc_error err;
    (void)argc; (void)argv;
    if (path == NULL) path = "../../conformance/schemas/pose.json";
    f = fopen(path, "rb");
    if (f == NULL) { fprintf(stderr, "fuzz_decode: cannot read %s (set QC_FUZZ_SCHEMA)\n", path); abort(); }
    n = fread(text, 1, sizeof text, f);
    fclose(f);
    if (qc_schema_parse(&g_schema, text, n, NULL, &err) < 0) { fprintf(stderr, "fuzz_decode: %s\n", err.message); abort(); }
    g_ready = 1;
    return 0;
}

/* the kit's key (conformance/manifest.json, the keyed stream's --key), so that its datagrams seed the keyed modes */
static const uint8_t FUZZ_KEY[32] = {0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f,
                                     0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x5b, 0x5c, 0x5d, 0x5e, 0x5f};

static void seal(const qc_decoder *d, uint8_t *buf, size_t *len, uint32_t seed, const uint8_t *key) {
    int i;
    if (d->keyed) {
        uint64_t t = qc_siphash(key, buf, *len);
        for (i = 0; i < 8; i++) buf[*len + (size_t)i] = (uint8_t)(t >> (8 * i));
        *len += 8;
    } else {
        uint32_t c = qc_crc32c(buf, *len, seed);
        for (i = 0; i < 4; i++) buf[*len + (size_t)i] = (uint8_t)(c >> (8 * i));
        *len += 4;
    }
}

static int sealed_with(const qc_decoder *d, const uint8_t *buf, size_t len, uint32_t seed, const uint8_t *key) {
    if (len < (size_t)d->tlen) return 0;
    if (d->keyed) return qc_siphash(key, buf, len - 8) == qc__load_le64(buf + len - 8);
    return qc_crc32c(buf, len - 4, seed) == qc__le32(buf + len - 4);
}

/* the reply the client made: its layout and check (wire-format 18) */
static void check_reply(const qc_client *c, const uint8_t *r, size_t n) {
    const qc_decoder *d = &c->dec;
    size_t T = (size_t)d->tlen;
    if (qc__le32(r + 2) != c->nonce || qc__le32(r + 6) != c->rseq - 1) { fprintf(stderr, "ORACLE: reply nonce/rseq\n"); abort(); }
    if (d->adopted) {
        uint32_t acks = qc__le32(r + 12);
        int i;
        if (n != 16 + T || r[0] != 0x41 || r[1] != (d->latest >= 0) || !sealed_with(d, r, n, d->seed_r, d->k_r)) {
            fprintf(stderr, "ORACLE: an ack's layout or check\n");
            abort();
        }
        if (d->latest < 0 ? (qc__le16(r + 10) != 0 || acks != 0) : qc__le16(r + 10) != (unsigned)d->latest) { fprintf(stderr, "ORACLE: ack latest\n"); abort(); }
        for (i = 0; i < 32; i++)
            if (((acks >> i) & 1) && (i + 1 >= d->history || qc_decoder_get(d, (d->latest - 1 - i) & 0xFFFF) == NULL)) {
                fprintf(stderr, "ORACLE: an ack names %d, not a possible baseline\n", (d->latest - 1 - i) & 0xFFFF);
                abort();
            }
    } else if (n != 26 + T || r[0] != 0x48 || r[1] != 0 || memcmp(r + 10, d->schema->fingerprint, 16) != 0 ||
               !sealed_with(d, r, n, qc_crc32c((const uint8_t *)"quantcodec hello request", 24, 0), d->k_q)) {
        fprintf(stderr, "ORACLE: a hello request's layout or check\n");
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const size_t bounds[4] = {0, 400000, 100000, 2000000};
    qc_client cl;
    qc_decoder *dp = &cl.dec;
    qc_decoder_config cfg;
    qc_error err;
    static uint8_t buf[70000];
    size_t pos = 1, first_end = 0;     /* (the end of the first record) */
    int mode, client, idle = 0;         /* (the harness's own count of replies not made in a row) */
    if (!g_ready || size < 1) return 0;
    mode = data[0];
    client = (mode >> 1) & 1;
    memset(&cfg, 0, sizeof cfg);
    cfg.max_entities = 1 << 16;
    cfg.alloc_limit = (size_t)256 << 20;
    cfg.max_bytes = bounds[(mode >> 2) & 3];
    if (mode & 1) { cfg.key = FUZZ_KEY; cfg.key_len = sizeof FUZZ_KEY; }
    if (qc_client_init_config(&cl, &g_schema, &cfg, 12345, &err) < 0) abort();
    while (pos + 3 <= size) {
        size_t len = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
        int how = data[pos + 2] % 4, st, was_fragment, latest0 = dp->latest, adopted0 = dp->adopted;
        uint32_t c0, r0;
        uint64_t sid0 = dp->stream_id, started0 = dp->started;
        qc_result res;
        pos += 3;
        if (len > size - pos) len = size - pos;
        memcpy(buf, data + pos, len);
        pos += len;
        if (first_end == 0) first_end = pos;
        if (how == 1 && dp->adopted) seal(dp, buf, &len, dp->seed_p, dp->k_p);
        else if (how == 2 && dp->adopted) seal(dp, buf, &len, dp->seed_f, dp->k_f);
        else if (how == 3) seal(dp, buf, &len, qc_crc32c((const uint8_t *)"quantcodec hello", 16, 0), dp->k_h);
        /* taken as a fragment (its check holds and it is not a whole packet): a completed
           reassembly that fails drops its partial packet, as Python's client does */
        was_fragment = dp->adopted && len >= 9 + (size_t)dp->tlen &&
                       !sealed_with(dp, buf, len, dp->seed_p, dp->k_p) && sealed_with(dp, buf, len, dp->seed_f, dp->k_f);
        c0 = digest_core(dp);
        r0 = digest_reasm(dp);
        st = client ? qc_client_receive(&cl, buf, len, &res) : qc_decoder_datagram(dp, buf, len, &res);
        if (st < 0) {
            if (digest_core(dp) != c0) {
                fprintf(stderr, "ORACLE: a refused datagram (kind %s: %s) changed the state\n", res.kind, res.message);
                abort();
            }
            if (!was_fragment && st != QC_E_MEMORY && digest_reasm(dp) != r0) {
                fprintf(stderr, "ORACLE: a refused datagram (kind %s) changed the partial packets\n", res.kind);
                abort();
            }
        } else if (st == QC_SNAPSHOT) {
            size_t i;
            const qc_snapshot *s = res.snapshot;
            /* latest never moves backwards within one stream; ids ascending; codes valid */
            if (adopted0 && dp->stream_id == sid0 && latest0 >= 0 && dp->latest != latest0 && !qc__newer(dp->latest, latest0)) {
                fprintf(stderr, "ORACLE: latest moved backwards %d -> %d\n", latest0, dp->latest);
                abort();
            }
            if (!res.ack || res.ack_seq != (uint16_t)dp->latest) { fprintf(stderr, "ORACLE: ack\n"); abort(); }
            for (i = 0; i < s->n; i++) {
                int k;
                if (i && !(s->ids[i - 1] < s->ids[i])) { fprintf(stderr, "ORACLE: ids not ascending\n"); abort(); }
                for (k = 0; k < g_schema.nslots; k++) {
                    const qc_slot *sl = &g_schema.slots[k];
                    uint64_t v = s->rows[i * (size_t)g_schema.nslots + (size_t)k];
                    if (sl->role == QC_ROLE_FLAG ? v > 1 : !qc_valid(sl->codec, v)) { fprintf(stderr, "ORACLE: an invalid code decoded\n"); abort(); }
                }
            }
        } else if (st != QC_PENDING) {
            abort();
        } else if (res.adopted && adopted0 && dp->stream_id != sid0 && dp->started <= started0 && latest0 >= 0) {
            /* wire-format 13: another stream that is not newer is taken only while nothing is decoded */
            fprintf(stderr, "ORACLE: an older stream's hello adopted after a packet decoded\n");
            abort();
        }
        if (client) {
            uint8_t r[QC_REPLY_MAX];
            /* (a new client starts with a reply due: its hello request) */
            int due = pos == first_end || st == QC_SNAPSHOT || res.adopted || st == QC_E_NO_HELLO || st == QC_E_BASELINE;
            /* (or a keep-alive: the 31 calls before returned nothing, wire-format 18) */
            int keepalive = !due && idle == QC_KEEPALIVE_CALLS - 1;
            size_t n = qc_client_reply(&cl, r);
            if ((n != 0) != (due || keepalive)) {
                fprintf(stderr, "ORACLE: a reply %s (status %d, %d calls without one before)\n", n ? "not due" : "due but not made", st, idle);
                abort();
            }
            idle = n ? 0 : idle + 1;
            if (n) check_reply(&cl, r, n);
        }
        if (dp->alloc_limit && dp->bytes > dp->alloc_limit) { fprintf(stderr, "ORACLE: over the byte budget\n"); abort(); }
        if (qc_decoder_cost(dp) > dp->max_bytes) { fprintf(stderr, "ORACLE: the cost model over max_bytes\n"); abort(); }
    }
    qc_client_free(&cl);
    if (cl.dec.bytes != 0) { fprintf(stderr, "ORACLE: %lu bytes held after free\n", (unsigned long)cl.dec.bytes); abort(); }
    return 0;
}
