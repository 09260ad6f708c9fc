/* The C client's decode bench: a shared library the driver (bench.py) loads with ctypes, so that
   the C decoder and Python's SnapshotDecoder.decode are timed in one process, alternately, on
   the same datagrams. Build: cc -O2 -ffp-contract=off -shared -fPIC bench.c -o build/libqcbench.so -lm */
#define _POSIX_C_SOURCE 199309L
#define QUANTCODEC_IMPLEMENTATION
#include "quantcodec.h"
#include <time.h>

typedef struct bench {
    qc_schema schema;
    qc_decoder dec;
    qc_result res;
} bench;

static int use_cpu;     /* qcb_clock(1): the thread's CPU time, not the wall clock */

static double now(void) {
    struct timespec ts;
    clock_gettime(use_cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void *qcb_open(const char *schema_json, size_t len);
int qcb_feed(void *b, const uint8_t *dg, size_t n);
double qcb_time(void *b, const uint8_t *dg, size_t n, int number, int values);
void qcb_close(void *b);
void qcb_clock(int cpu);

/* which clock qcb_time reads: 1 the calling thread's CPU time (a busy machine's other processes
   then count less), 0 the wall clock (the default) */
void qcb_clock(int cpu) { use_cpu = cpu; }

void *qcb_open(const char *schema_json, size_t len) {
    bench *b = (bench *)calloc(1, sizeof *b);
    qc_error err;
    if (b == NULL) return NULL;
    if (qc_schema_parse(&b->schema, schema_json, len, NULL, &err) < 0) {
        fprintf(stderr, "qcb_open: %s\n", err.message);
        free(b);
        return NULL;
    }
    qc_decoder_init(&b->dec, &b->schema, NULL, &err);
    return b;
}

/* one datagram into the decoder (the stream up to the timed packet): its status */
int qcb_feed(void *vb, const uint8_t *dg, size_t n) {
    bench *b = (bench *)vb;
    return qc_decoder_datagram(&b->dec, dg, n, &b->res);
}

/* seconds per decode of the datagram (a duplicate of a held packet after the first: decoded in
   full, then compared with the held snapshot, as Python's decoder does), over `number` calls;
   with values, every field of every entity dequantized too. -1 if it does not decode. */
double qcb_time(void *vb, const uint8_t *dg, size_t n, int number, int values) {
    bench *b = (bench *)vb;
    static double vals[64];
    double t0, t1, sink = 0.0;
    int i;
    t0 = now();
    for (i = 0; i < number; i++) {
        if (qc_decoder_datagram(&b->dec, dg, n, &b->res) != QC_SNAPSHOT) return -1.0;
        if (values) {
            const qc_snapshot *s = b->res.snapshot;
            size_t e;
            int f;
            for (e = 0; e < s->n; e++)
                for (f = 0; f < b->schema.nfields; f++) {
                    qc_field_values(&b->schema, f, s->rows + e * (size_t)b->schema.nslots, vals);
                    sink += vals[0];
                }
        }
    }
    t1 = now();
    if (sink == 12345.678) fprintf(stderr, " ");
    return (t1 - t0) / number;
}

void qcb_close(void *vb) {
    bench *b = (bench *)vb;
    qc_decoder_free(&b->dec);
    qc_schema_free(&b->schema);
    free(b);
}
