/* =============================================================================================
   Implementation
   ============================================================================================= */
#ifdef QUANTCODEC_IMPLEMENTATION
#ifndef QUANTCODEC_IMPLEMENTATION_DONE
#define QUANTCODEC_IMPLEMENTATION_DONE

#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <math.h>
#include <stdarg.h>
#include <time.h>
#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(QUANTCODEC_NO_BMI2)
#include <immintrin.h>  /* the packet decoder's BMI2 and AVX2 copies (target attributes) */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* No FMA contraction in the codecs' arithmetic, whatever the build's -ffp-contract: a fused
   a * b + c rounds once where Python's core rounds twice. GCC: the implementation is compiled
   with fp-contract=off (push/pop around it); Clang: each function with float arithmetic starts
   with the C99 pragma, which holds to the end of that function (Clang's -ffp-contract=fast
   disregards pragmas: do not build this file with it, nor with -ffast-math). Other compilers:
   build with contraction off (MSVC's default /fp:precise does not contract). */
#if defined(__clang__)
#define QC__NOFMA _Pragma("STDC FP_CONTRACT OFF")
#else
#define QC__NOFMA
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("fp-contract=off")
#define QC__GCC_OPTIONS_PUSHED 1
#endif

/* ---- memory ---------------------------------------------------------------------------------- */

static void *qc__malloc_cb(void *ud, size_t n) { (void)ud; return malloc(n ? n : 1); }
static void qc__free_cb(void *ud, void *p, size_t n) { (void)ud; (void)n; free(p); }

static qc_allocator qc__allocator_of(const qc_allocator *al) {
    qc_allocator a;
    if (al != NULL && al->alloc != NULL && al->free != NULL) return *al;
    a.alloc = qc__malloc_cb;
    a.free = qc__free_cb;
    a.ud = NULL;
    return a;
}

/* An arena: chunks from the allocator, freed together (schemas and JSON trees). */
typedef struct qc__chunk { struct qc__chunk *next; size_t size, used; } qc__chunk;
#define QC__ALIGN 16
#define QC__CHUNK_HEAD ((sizeof(qc__chunk) + QC__ALIGN - 1) / QC__ALIGN * QC__ALIGN)

typedef struct qc__arena { qc_allocator al; qc__chunk *head; } qc__arena;

static void *qc__arena_alloc(qc__arena *a, size_t n) {
    qc__chunk *c = a->head;
    void *p;
    n = (n + QC__ALIGN - 1) / QC__ALIGN * QC__ALIGN;
    if (n == 0) n = QC__ALIGN;
    if (c == NULL || c->size - c->used < n) {
        size_t sz = n > 8192 ? n : 8192;
        c = (qc__chunk *)a->al.alloc(a->al.ud, QC__CHUNK_HEAD + sz);
        if (c == NULL) return NULL;
        c->size = sz;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    p = (char *)c + QC__CHUNK_HEAD + c->used;
    c->used += n;
    return p;
}

static void qc__arena_free(qc_allocator al, qc__chunk *c) {
    while (c != NULL) {
        qc__chunk *nx = c->next;
        al.free(al.ud, c, QC__CHUNK_HEAD + c->size);
        c = nx;
    }
}

static char *qc__arena_strdup(qc__arena *a, const char *s, size_t n) {
    char *p = (char *)qc__arena_alloc(a, n + 1);
    if (p == NULL) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}

static int qc__fail(qc_error *err, const char *fmt, ...) {
    va_list ap;
    if (err != NULL) {
        err->kind = -1;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ---- bits ------------------------------------------------------------------------------------ */

#if defined(__GNUC__) || defined(__clang__)
#define QC__HOT static inline __attribute__((always_inline))
#define QC__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define QC__LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define QC__HOT static inline
#define QC__UNLIKELY(x) (x)
#define QC__LIKELY(x) (x)
#endif

static uint64_t qc__mask(int b) { return b >= 64 ? ~(uint64_t)0 : (((uint64_t)1) << b) - 1; }

static int qc__bitlen(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return x ? 64 - __builtin_clzll(x) : 0;
#else
    int n = 0;
    while (x) { x >>= 1; n++; }
    return n;
#endif
}

static int qc__ctz(uint64_t x) {     /* x != 0 */
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int n = 0;
    while (!(x & 1)) { x >>= 1; n++; }
    return n;
#endif
}

QC__HOT uint64_t qc__load_le64(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
#endif
}
static uint32_t qc__le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static unsigned qc__le16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

/* LSB-first bit reader over nbytes bytes. */
typedef struct qc__br { const uint8_t *buf; size_t nbytes, pos, nbits; } qc__br;

static void qc__br_init(qc__br *r, const uint8_t *buf, size_t n) {
    r->buf = buf; r->nbytes = n; r->pos = 0; r->nbits = n * 8;
}
static size_t qc__br_left(const qc__br *r) { return r->nbits - r->pos; }

/* n (0..64) bits at bit position p, which must be available. */
static uint64_t qc__peek_at(const qc__br *r, size_t p, int n) {
    size_t idx = p >> 3;
    int sh = (int)(p & 7);
    uint64_t x;
    if (n == 0) return 0;
    if (idx + 8 <= r->nbytes) {
        x = qc__load_le64(r->buf + idx) >> sh;
        if (n + sh > 64) x |= (uint64_t)r->buf[idx + 8] << (64 - sh);
    } else {
        int i, got = -sh;
        x = 0;
        for (i = 0; idx + (size_t)i < r->nbytes && got < n; i++) {
            uint64_t byte = r->buf[idx + (size_t)i];
            if (got < 0) x = byte >> sh;
            else x |= byte << got;
            got += 8;
        }
    }
    return n >= 64 ? x : x & ((((uint64_t)1) << n) - 1);
}

QC__HOT int qc__get(qc__br *r, int n, uint64_t *v) {
    size_t idx = r->pos >> 3;
    if (n <= 56 && idx + 8 <= r->nbytes) {
        *v = (qc__load_le64(r->buf + idx) >> (r->pos & 7)) & ((((uint64_t)1) << n) - 1);
        r->pos += (size_t)n;
        return 0;
    }
    if ((size_t)n > r->nbits - r->pos) return -1;
    *v = qc__peek_at(r, r->pos, n);
    r->pos += (size_t)n;
    return 0;
}

/* LSB-first bit writer */
typedef struct qc__bw { uint8_t *buf; size_t cap, pos; int overflow; } qc__bw;

static void qc__put(qc__bw *w, uint64_t v, int n) {
    int i;
    for (i = 0; i < n; i++) {
        size_t byte = w->pos >> 3;
        if (byte >= w->cap) { w->overflow = 1; return; }
        if ((w->pos & 7) == 0) w->buf[byte] = 0;
        if ((v >> i) & 1) w->buf[byte] |= (uint8_t)(1u << (w->pos & 7));
        w->pos++;
    }
}

