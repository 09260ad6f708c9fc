/* qc_decode: the runner of the conformance kit (SPEC section 7, conformance/README.md).

       qc_decode [--key HEX] [--max-bytes N] [--replies NONCE [--idle N]] SCHEMA.json DATAGRAMS.bin
       (each option also as --opt=VALUE)

   DATAGRAMS.bin: each datagram as a 4-byte little-endian length then its bytes. One decoder that
   starts with no hello; one compact JSON line per datagram:
   {"seq":S,"ids":[...],"codes":[[...],...]}, {"error":"KIND"} or {"pending":true}.
   --key HEX: the shared key (wire-format 17: keyed checks), 1 to 255 bytes in hex.
   --max-bytes N: the client's bound (wire-format 19; default 268435456).
   --replies NONCE: the session client (wire-format 18) with that nonce (a decimal u32); after
   each datagram the reply it owes, as a key "reply": lowercase hex, or null.
   --idle N (with --replies; 0 to 1000, default 0): after each datagram's reply, N more calls of
   the reply function with nothing arriving (section 18's keep-alives), as a last key "idle":
   [hex or null, ...] in call order; none with N = 0. */
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

static int usage(const char *why) {
    fprintf(stderr, "qc-decode: %s\nusage: qc-decode [--key HEX] [--max-bytes N] [--replies NONCE [--idle N]] SCHEMA.json DATAGRAMS.bin\n", why);
    return 2;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* one call of the client's reply function, printed as lowercase hex in quotes, or null */
static void put_reply(qc_client *client) {
    uint8_t r[QC_REPLY_MAX];
    size_t rl = qc_client_reply(client, r), i;
    if (rl == 0) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (i = 0; i < rl; i++) printf("%02x", r[i]);
    putchar('"');
}

/* a decimal integer of at most `max`; -1 if it is not one */
static int parse_dec(const char *s, unsigned long long max, unsigned long long *out) {
    unsigned long long v = 0;
    if (*s == 0) return -1;
    for (; *s; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (d > 9 || v > (max - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int main(int argc, char **argv) {
    size_t slen, dlen, pos = 0, key_len = 0;
    char *stext, *dg;
    qc_schema schema;
    qc_client client;
    qc_decoder_config cfg;
    qc_error err;
    qc_result res;
    static uint8_t key[255];
    static char out[1 << 16];
    unsigned long long nonce = 0, max_bytes = 0, idle = 0;
    int replies = 0, idle_given = 0, a = 1;
    memset(&cfg, 0, sizeof cfg);
    while (a < argc && strncmp(argv[a], "--", 2) == 0) {
        /* --opt VALUE or --opt=VALUE */
        char opt[32];
        const char *val, *eq = strchr(argv[a], '=');
        int used = 2;
        if (eq != NULL) {
            size_t ol = (size_t)(eq - argv[a]);
            if (ol >= sizeof opt) ol = sizeof opt - 1;
            memcpy(opt, argv[a], ol);
            opt[ol] = 0;
            val = eq + 1;
            used = 1;
        } else {
            snprintf(opt, sizeof opt, "%s", argv[a]);
            if (a + 1 >= argc) { fprintf(stderr, "qc-decode: %s without its value\n", opt); return usage("an option without its value"); }
            val = argv[a + 1];
        }
        if (strcmp(opt, "--key") == 0) {
            const char *h = val;
            size_t n = strlen(h), i;
            if (n == 0 || n % 2 || n / 2 > 255) return usage("--key: 1 to 255 bytes in hex (an even number of hex digits)");
            for (i = 0; i < n / 2; i++) {
                int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
                if (hi < 0 || lo < 0) return usage("--key: not hex");
                key[i] = (uint8_t)(hi << 4 | lo);
            }
            key_len = n / 2;
            cfg.key = key;
            cfg.key_len = key_len;
        } else if (strcmp(opt, "--max-bytes") == 0) {
            if (parse_dec(val, (unsigned long long)(size_t)-1, &max_bytes) < 0 || max_bytes == 0)
                return usage("--max-bytes: a positive decimal integer");
            cfg.max_bytes = (size_t)max_bytes;
        } else if (strcmp(opt, "--replies") == 0) {
            if (parse_dec(val, 0xFFFFFFFFull, &nonce) < 0) return usage("--replies: a decimal nonce, 0 .. 4294967295");
            replies = 1;
        } else if (strcmp(opt, "--idle") == 0) {
            if (parse_dec(val, 1000, &idle) < 0) return usage("--idle: a count of calls, 0 .. 1000");
            idle_given = 1;
        } else {
            fprintf(stderr, "qc-decode: unknown option %s\n", opt);
            return usage("options: --key HEX, --max-bytes N, --replies NONCE, --idle N");
        }
        a += used;
    }
    if (idle_given && !replies) return usage("--idle counts calls of the reply function: give --replies NONCE too");
    if (argc - a != 2) return usage("two files expected");
    stext = read_file(argv[a], &slen);
    if (stext == NULL) { fprintf(stderr, "qc-decode: cannot read %s\n", argv[a]); return 2; }
    if (qc_schema_parse(&schema, stext, slen, NULL, &err) < 0) {
        fprintf(stderr, "qc-decode: %s: %s\n", argv[a], err.message);
        return 2;
    }
    dg = read_file(argv[a + 1], &dlen);
    if (dg == NULL) { fprintf(stderr, "qc-decode: cannot read %s\n", argv[a + 1]); return 2; }
    setvbuf(stdout, out, _IOFBF, sizeof out);
    if (qc_client_init_config(&client, &schema, &cfg, (int64_t)nonce, &err) < 0) {
        fprintf(stderr, "qc-decode: %s\n", err.message);
        return 2;
    }
    while (pos < dlen) {
        size_t n;
        int st;
        if (dlen - pos < 4) { fprintf(stderr, "qc-decode: %s: a truncated length at byte %lu\n", argv[a + 1], (unsigned long)pos); return 2; }
        n = (size_t)(unsigned char)dg[pos] | (size_t)(unsigned char)dg[pos + 1] << 8 |
            (size_t)(unsigned char)dg[pos + 2] << 16 | (size_t)(unsigned char)dg[pos + 3] << 24;
        pos += 4;
        if (dlen - pos < n) { fprintf(stderr, "qc-decode: %s: a datagram of %lu bytes runs past the end\n", argv[a + 1], (unsigned long)n); return 2; }
        st = qc_client_receive(&client, (const uint8_t *)dg + pos, n, &res);
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
            fputs("]", stdout);
        } else if (st == QC_PENDING) {
            fputs("{\"pending\":true", stdout);
        } else {
            printf("{\"error\":\"%s\"", res.kind);
        }
        if (replies) {
            unsigned long long c;
            fputs(",\"reply\":", stdout);
            put_reply(&client);
            if (idle > 0) {
                /* nothing arrives between these calls: the keep-alives of section 18 */
                fputs(",\"idle\":[", stdout);
                for (c = 0; c < idle; c++) {
                    if (c) putchar(',');
                    put_reply(&client);
                }
                putchar(']');
            }
        }
        fputs("}\n", stdout);
    }
    qc_client_free(&client);
    qc_schema_free(&schema);
    free(stext);
    free(dg);
    return 0;
}
