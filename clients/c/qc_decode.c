/* qc_decode: the runner of the conformance kit (SPEC section 7, conformance/README.md).

       qc_decode SCHEMA.json DATAGRAMS.bin

   DATAGRAMS.bin: each datagram as a 4-byte little-endian length then its bytes. One decoder that
   starts with no hello; one compact JSON line per datagram:
   {"seq":S,"ids":[...],"codes":[[...],...]}, {"error":"KIND"} or {"pending":true}. */
#define QUANTCODEC_IMPLEMENTATION
#include "quantcodec.h"

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
    if (ferror(f)) { free(buf); fclose(f); return NULL; }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

int main(int argc, char **argv) {
    size_t slen, dlen, pos = 0;
    char *stext, *dg;
    qc_schema schema;
    qc_decoder dec;
    qc_error err;
    qc_result res;
    static char out[1 << 16];
    if (argc != 3) {
        fprintf(stderr, "usage: qc-decode SCHEMA.json DATAGRAMS.bin\n");
        return 2;
    }
    stext = read_file(argv[1], &slen);
    if (stext == NULL) { fprintf(stderr, "qc-decode: cannot read %s\n", argv[1]); return 2; }
    if (qc_schema_parse(&schema, stext, slen, NULL, &err) < 0) {
        fprintf(stderr, "qc-decode: %s: %s\n", argv[1], err.message);
        return 2;
    }
    dg = read_file(argv[2], &dlen);
    if (dg == NULL) { fprintf(stderr, "qc-decode: cannot read %s\n", argv[2]); return 2; }
    setvbuf(stdout, out, _IOFBF, sizeof out);
    qc_decoder_init(&dec, &schema, NULL, &err);
    while (pos < dlen) {
        size_t n;
        int st;
        if (dlen - pos < 4) { fprintf(stderr, "qc-decode: %s: a truncated length at byte %lu\n", argv[2], (unsigned long)pos); return 2; }
        n = (size_t)(unsigned char)dg[pos] | (size_t)(unsigned char)dg[pos + 1] << 8 |
            (size_t)(unsigned char)dg[pos + 2] << 16 | (size_t)(unsigned char)dg[pos + 3] << 24;
        pos += 4;
        if (dlen - pos < n) { fprintf(stderr, "qc-decode: %s: a datagram of %lu bytes runs past the end\n", argv[2], (unsigned long)n); return 2; }
        st = qc_decoder_datagram(&dec, (const uint8_t *)dg + pos, n, &res);
        pos += n;
        if (st == QC_SNAPSHOT) {
            const qc_snapshot *s = res.snapshot;
            size_t i;
            int k;
            printf("{\"seq\":%u,\"ids\":[", (unsigned)s->seq);
            for (i = 0; i < s->n; i++) printf(i ? ",%llu" : "%llu", (unsigned long long)s->ids[i]);
            fputs("],\"codes\":[", stdout);
            for (i = 0; i < s->n; i++) {
                const uint64_t *row = s->rows + i * (size_t)schema.nslots;
                fputs(i ? ",[" : "[", stdout);
                for (k = 0; k < schema.nslots; k++) {
                    if (k) putchar(',');
                    if (schema.slots[k].sign) printf("%lld", (long long)(int64_t)row[k]);
                    else printf("%llu", (unsigned long long)row[k]);
                }
                putchar(']');
            }
            fputs("]}\n", stdout);
        } else if (st == QC_PENDING) {
            fputs("{\"pending\":true}\n", stdout);
        } else {
            printf("{\"error\":\"%s\"}\n", res.kind);
        }
    }
    qc_decoder_free(&dec);
    qc_schema_free(&schema);
    free(stext);
    free(dg);
    return 0;
}
