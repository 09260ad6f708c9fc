/* C-speed estimate for bench/context_study.py (issue 38): the cost per residual of today's
 * Exp-Golomb fields against the adaptive binary range coder of bench/context_coder.py.
 *
 * Reads from stdin: n, then n lines "packet cell u k b" (the study's residuals, cells numbered
 * from 0 in each packet). Codes them packet by packet both ways, decodes them back (checked),
 * and prints ns per value for encode and decode of each (median of 7 repeats), and the bits.
 *
 *   cc -O2 -o /tmp/context_cost bench/context_cost.c && python bench/context_study.py --cost
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { uint32_t pk, cell, u, k, b; } Val;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* ---- Exp-Golomb(k, b) with the escape, LSB-first (docs/wire-format.md 4) ---- */
typedef struct { uint64_t acc; int n; uint8_t *p; } BW;
static inline void bw_put(BW *w, uint64_t v, int n) {
    w->acc |= v << w->n;
    w->n += n;
    while (w->n >= 8) { *w->p++ = (uint8_t)w->acc; w->acc >>= 8; w->n -= 8; }
}
static inline void eg_put(BW *w, uint32_t u, int k, int b) {
    int E = (b - k + 1) / 2 + 1;
    uint32_t v = u >> k;
    if (v >= (1u << E) - 1) { bw_put(w, 0, E); bw_put(w, u, b); return; }
    uint32_t x = v + 1;
    int e = 31 - __builtin_clz(x);
    bw_put(w, 1u << e, e + 1);
    bw_put(w, x & ((1u << e) - 1), e);
    bw_put(w, u & ((1u << k) - 1), k);
}
typedef struct { const uint8_t *p; uint64_t acc; int n; } BR;
static inline void br_fill(BR *r) { while (r->n <= 56) { r->acc |= (uint64_t)*r->p++ << r->n; r->n += 8; } }
static inline uint32_t br_get(BR *r, int n) {
    br_fill(r);
    uint32_t v = (uint32_t)(r->acc & ((n == 32) ? 0xFFFFFFFFull : ((1ull << n) - 1)));
    r->acc >>= n; r->n -= n;
    return v;
}
static inline uint32_t eg_get(BR *r, int k, int b) {
    int E = (b - k + 1) / 2 + 1;
    br_fill(r);
    int z = r->acc ? __builtin_ctzll(r->acc) : 64;
    if (z >= E) { r->acc >>= E; r->n -= E; return br_get(r, b); }
    r->acc >>= z + 1; r->n -= z + 1;
    uint32_t x = (1u << z) | br_get(r, z);
    return ((x - 1) << k) | br_get(r, k);
}

/* ---- the adaptive binary range coder (LZMA's, 16-bit probabilities, KT counts) ---- */
#define NSLOT 64
typedef struct { uint16_t n0, n1; } Cnt;
typedef struct { uint64_t low; uint32_t range; uint8_t cache; uint64_t csize; uint8_t *p; } RE;
static inline void re_shift(RE *e) {
    if ((uint32_t)e->low < 0xFF000000u || (e->low >> 32)) {
        uint8_t carry = (uint8_t)(e->low >> 32), t = e->cache;
        do { *e->p++ = (uint8_t)(t + carry); t = 0xFF; } while (--e->csize);
        e->cache = (uint8_t)(e->low >> 24);
    }
    e->csize++;
    e->low = (e->low & 0x00FFFFFFu) << 8;
}
static uint32_t RECIP[1025];        /* 2**32 // (2n + 2): p0 without a division */
static inline uint32_t p0_of(Cnt *c) {
    uint32_t p = (uint32_t)(((uint64_t)(2u * c->n0 + 1) * RECIP[c->n0 + c->n1]) >> 16);
    return p < 1 ? 1 : p > 65535 ? 65535 : p;
}
static inline void upd(Cnt *c, int bit) {
    if (bit) c->n1++; else c->n0++;
    if (c->n0 + c->n1 >= 1024) { c->n0 = (c->n0 + 1) >> 1; c->n1 = (c->n1 + 1) >> 1; }
}
static inline void re_bit(RE *e, int bit, uint32_t p0) {
    uint32_t bound = (e->range >> 16) * p0;
    if (bit) { e->low += bound; e->range -= bound; } else e->range = bound;
    while (e->range < (1u << 24)) { e->range <<= 8; re_shift(e); }
}
static inline void re_mbit(RE *e, Cnt *c, int bit) { re_bit(e, bit, p0_of(c)); upd(c, bit); }
typedef struct { uint32_t range, code; const uint8_t *p; } RD;
static inline int rd_bit(RD *d, uint32_t p0) {
    uint32_t bound = (d->range >> 16) * p0;
    int bit;
    if (d->code < bound) { d->range = bound; bit = 0; } else { d->code -= bound; d->range -= bound; bit = 1; }
    while (d->range < (1u << 24)) { d->range <<= 8; d->code = (d->code << 8) | *d->p++; }
    return bit;
}
static inline int rd_mbit(RD *d, Cnt *c) { int bit = rd_bit(d, p0_of(c)); upd(c, bit); return bit; }

static void ac_put(RE *e, Cnt *m, uint32_t u) {
    uint32_t x = u + 1;
    int E = 31 - __builtin_clz(x);
    for (int i = 0; i <= E; i++) re_mbit(e, &m[i < 40 ? i : 40], i == E);
    for (int j = E - 1; j >= 0; j--) {
        int bit = (x >> j) & 1;
        if (j == E - 1) re_mbit(e, &m[41 + (E < 11 ? E : 11)], bit);
        else if (j == E - 2) re_mbit(e, &m[52 + (E < 11 ? E : 11)], bit);
        else re_bit(e, bit, 32768);
    }
}
static uint32_t ac_get(RD *d, Cnt *m) {
    int E = 0;
    while (!rd_mbit(d, &m[E < 40 ? E : 40])) E++;
    uint32_t x = 1;
    for (int j = E - 1; j >= 0; j--) {
        int bit;
        if (j == E - 1) bit = rd_mbit(d, &m[41 + (E < 11 ? E : 11)]);
        else if (j == E - 2) bit = rd_mbit(d, &m[52 + (E < 11 ? E : 11)]);
        else bit = rd_bit(d, 32768);
        x = (x << 1) | bit;
    }
    return x - 1;
}

static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return (x > y) - (x < y); }

int main(void) {
    size_t n;
    for (int i = 0; i <= 1024; i++) RECIP[i] = (uint32_t)((1ull << 32) / (2u * i + 2));
    if (scanf("%zu", &n) != 1) return 1;
    Val *v = malloc(n * sizeof *v);
    uint32_t maxcell = 0;
    for (size_t i = 0; i < n; i++) {
        if (scanf("%u %u %u %u %u", &v[i].pk, &v[i].cell, &v[i].u, &v[i].k, &v[i].b) != 5) return 1;
        if (v[i].cell > maxcell) maxcell = v[i].cell;
    }
    uint8_t *buf = malloc(n * 16 + 64);
    uint32_t *back = malloc(n * sizeof *back);
    Cnt *m = malloc((size_t)(maxcell + 1) * NSLOT * sizeof *m);
    double t[4][7];
    size_t egbits = 0, acbytes = 0;
    /* packet boundaries */
    size_t *start = malloc((n + 2) * sizeof *start), np = 0;
    for (size_t i = 0; i < n; i++) if (i == 0 || v[i].pk != v[i - 1].pk) start[np++] = i;
    start[np] = n;
    size_t *off = malloc((np + 1) * sizeof *off);
    for (int rep = 0; rep < 7; rep++) {
        /* Exp-Golomb: encode all packets, then decode */
        double a = now();
        uint8_t *p = buf;
        for (size_t q = 0; q < np; q++) {
            BW w = {0, 0, p};
            for (size_t i = start[q]; i < start[q + 1]; i++) eg_put(&w, v[i].u, v[i].k, v[i].b);
            if (w.n) bw_put(&w, 0, 8 - w.n);
            off[q] = p - buf; p = w.p;
            for (int z = 0; z < 8; z++) p[z] = 0;
            p += 8;
        }
        egbits = 8 * (size_t)(p - buf) - 64 * np;
        double b = now();
        for (size_t q = 0; q < np; q++) {
            BR r = {buf + off[q], 0, 0};
            for (size_t i = start[q]; i < start[q + 1]; i++) back[i] = eg_get(&r, v[i].k, v[i].b);
        }
        double c = now();
        for (size_t i = 0; i < n; i++) if (back[i] != v[i].u) { fprintf(stderr, "eg mismatch\n"); return 2; }
        t[0][rep] = b - a; t[1][rep] = c - b;
        /* the range coder, the model reset each packet */
        a = now();
        p = buf;
        acbytes = 0;
        for (size_t q = 0; q < np; q++) {
            uint32_t nc = 0;
            for (size_t i = start[q]; i < start[q + 1]; i++) if (v[i].cell + 1 > nc) nc = v[i].cell + 1;
            memset(m, 0, (size_t)nc * NSLOT * sizeof *m);
            RE e = {0, 0xFFFFFFFFu, 0, 1, p};
            for (size_t i = start[q]; i < start[q + 1]; i++) ac_put(&e, m + (size_t)v[i].cell * NSLOT, v[i].u);
            for (int z = 0; z < 5; z++) re_shift(&e);
            off[q] = p - buf; acbytes += (size_t)(e.p - p); p = e.p;
            for (int z = 0; z < 8; z++) p[z] = 0;
            p += 8;
        }
        b = now();
        for (size_t q = 0; q < np; q++) {
            uint32_t nc = 0;
            for (size_t i = start[q]; i < start[q + 1]; i++) if (v[i].cell + 1 > nc) nc = v[i].cell + 1;
            memset(m, 0, (size_t)nc * NSLOT * sizeof *m);
            RD d = {0xFFFFFFFFu, 0, buf + off[q] + 1};
            for (int z = 0; z < 4; z++) d.code = (d.code << 8) | *d.p++;
            for (size_t i = start[q]; i < start[q + 1]; i++) back[i] = ac_get(&d, m + (size_t)v[i].cell * NSLOT);
        }
        c = now();
        for (size_t i = 0; i < n; i++) if (back[i] != v[i].u) { fprintf(stderr, "ac mismatch at %zu\n", i); return 3; }
        t[2][rep] = b - a; t[3][rep] = c - b;
    }
    for (int j = 0; j < 4; j++) qsort(t[j], 7, sizeof(double), cmp);
    printf("values %zu packets %zu eg_bits %zu ac_bits %zu\n", n, np, egbits, 8 * acbytes);
    printf("ns/value: eg encode %.2f decode %.2f; ac encode %.2f decode %.2f\n",
           1e9 * t[0][3] / n, 1e9 * t[1][3] / n, 1e9 * t[2][3] / n, 1e9 * t[3][3] / n);
    return 0;
}
