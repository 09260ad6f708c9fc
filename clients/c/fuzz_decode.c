/* libFuzzer target on the datagram decoder, with the oracle that a refused datagram leaves the
   state exactly as it was (a digest of the stream, latest, the held snapshots, the ambiguous
   numbers and the partial packets, before and after).

   Build and run (clang's libFuzzer; see fuzz.sh):
       clang -g -O1 -std=c99 -ffp-contract=off -fsanitize=fuzzer,address,undefined fuzz_decode.c -lm -o build/fuzz_decode
       QC_FUZZ_SCHEMA=../../conformance/schemas/pose.json build/fuzz_decode CORPUS -runs=1000000

   An input is a sequence of records [u16 little-endian length][u8 how][length bytes]: how 0 the
   bytes are a datagram as it arrived; how 1 they are a bare packet the harness seals with the
   adopted stream's whole-packet check (so that mutations reach the packet decoder, not only the
   check); how 2 a fragment body the harness seals with the fragment check. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qc_decoder d;
    qc_decoder_config cfg;
    qc_error err;
    static uint8_t buf[70000];
    size_t pos = 0;
    if (!g_ready) return 0;
    memset(&cfg, 0, sizeof cfg);
    cfg.max_entities = 1 << 16;
    cfg.alloc_limit = (size_t)256 << 20;
    qc_decoder_init(&d, &g_schema, &cfg, &err);
    while (pos + 3 <= size) {
        size_t len = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
        int how = data[pos + 2] % 3, st, was_fragment, latest0 = d.latest, adopted0 = d.adopted;
        uint32_t c0, r0;
        uint64_t sid0 = d.stream_id;
        qc_result res;
        pos += 3;
        if (len > size - pos) len = size - pos;
        memcpy(buf, data + pos, len);
        pos += len;
        if (how == 1 && d.adopted) {
            uint32_t c = qc_crc32c(buf, len, d.seed_p);
            buf[len] = (uint8_t)c; buf[len + 1] = (uint8_t)(c >> 8); buf[len + 2] = (uint8_t)(c >> 16); buf[len + 3] = (uint8_t)(c >> 24);
            len += 4;
        } else if (how == 2 && d.adopted) {
            uint32_t c = qc_crc32c(buf, len, d.seed_f);
            buf[len] = (uint8_t)c; buf[len + 1] = (uint8_t)(c >> 8); buf[len + 2] = (uint8_t)(c >> 16); buf[len + 3] = (uint8_t)(c >> 24);
            len += 4;
        }
        /* taken as a fragment (its check holds and it is not a whole packet): a completed
           reassembly that fails drops its partial packet, as Python's client does */
        was_fragment = d.adopted && len >= 13 &&
                       qc_crc32c(buf, len - 4, d.seed_p) != qc__le32(buf + len - 4) &&
                       qc_crc32c(buf, len - 4, d.seed_f) == qc__le32(buf + len - 4);
        c0 = digest_core(&d);
        r0 = digest_reasm(&d);
        st = qc_decoder_datagram(&d, buf, len, &res);
        if (st < 0) {
            if (digest_core(&d) != c0) {
                fprintf(stderr, "ORACLE: a refused datagram (kind %s: %s) changed the state\n", res.kind, res.message);
                abort();
            }
            if (!was_fragment && st != QC_E_MEMORY && digest_reasm(&d) != r0) {
                fprintf(stderr, "ORACLE: a refused datagram (kind %s) changed the partial packets\n", res.kind);
                abort();
            }
        } else if (st == QC_SNAPSHOT) {
            size_t i;
            const qc_snapshot *s = res.snapshot;
            /* latest never moves backwards within one stream; ids ascending; codes valid */
            if (adopted0 && d.stream_id == sid0 && latest0 >= 0 && d.latest != latest0 && !qc__newer(d.latest, latest0)) {
                fprintf(stderr, "ORACLE: latest moved backwards %d -> %d\n", latest0, d.latest);
                abort();
            }
            if (!res.ack || res.ack_seq != (uint16_t)d.latest) { fprintf(stderr, "ORACLE: ack\n"); abort(); }
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
        }
        if (d.alloc_limit && d.bytes > d.alloc_limit) { fprintf(stderr, "ORACLE: over the byte budget\n"); abort(); }
    }
    qc_decoder_free(&d);
    if (d.bytes != 0) { fprintf(stderr, "ORACLE: %lu bytes held after free\n", (unsigned long)d.bytes); abort(); }
    return 0;
}
