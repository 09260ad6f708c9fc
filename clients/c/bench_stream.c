/* The bench stream decoded by C alone, for profilers and CPU time: `python bench.py --dump DIR`
   writes the stream (the hello and the 300 packets of bench.py's whole-stream case), then

       cc -std=c99 -O2 -ffp-contract=off -g bench_stream.c -o build/bench_stream -lm
       build/bench_stream DIR [passes]            # CPU ns per decoded entity, each pass a new decoder
       valgrind --tool=callgrind build/bench_stream DIR 2    # the instruction counts README quotes

   Alternate two builds (e.g. the header before and after a change) run by run and take medians:
   the CPU time is the process's (clock()), less moved by a
   busy machine than the wall clock, but not free of it. */
#define QUANTCODEC_IMPLEMENTATION
#include "quantcodec.h"
#include <time.h>   /* clock(): the process's CPU time */

static uint8_t *slurp(const char *dir, const char *name, size_t *n) {
    char path[4096];
    FILE *f;
    uint8_t *buf;
    long len;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "rb");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "bench_stream: cannot read %s (python bench.py --dump %s)\n", path, dir);
        exit(2);
    }
    buf = (uint8_t *)malloc((size_t)len + 1);
    if (buf == NULL || fread(buf, 1, (size_t)len, f) != (size_t)len) { fprintf(stderr, "bench_stream: %s\n", path); exit(2); }
    fclose(f);
    *n = (size_t)len;
    return buf;
}

int main(int argc, char **argv) {
    size_t jl, n, p, ents = 0;
    uint8_t *js, *data;
    int passes = argc > 2 ? atoi(argv[2]) : 10, i;
    qc_schema s;
    qc_error err;
    qc_result res;
    clock_t t0;
    if (argc < 2) { fprintf(stderr, "usage: bench_stream DIR [passes]\n"); return 2; }
    js = slurp(argv[1], "schema.json", &jl);
    data = slurp(argv[1], "stream.bin", &n);
    if (qc_schema_parse(&s, (const char *)js, jl, NULL, &err) < 0) { fprintf(stderr, "bench_stream: %s\n", err.message); return 1; }
    t0 = clock();
    for (i = 0; i < passes; i++) {
        qc_decoder d;
        if (qc_decoder_init(&d, &s, NULL, &err) < 0) { fprintf(stderr, "bench_stream: %s\n", err.message); return 1; }
        for (p = 0; p + 4 <= n;) {
            size_t len = (size_t)data[p] | (size_t)data[p + 1] << 8 | (size_t)data[p + 2] << 16 | (size_t)data[p + 3] << 24;
            if (len > n - p - 4) { fprintf(stderr, "bench_stream: a truncated stream.bin\n"); return 1; }
            if (qc_decoder_datagram(&d, data + p + 4, len, &res) == QC_SNAPSHOT) ents += res.snapshot->n;
            p += 4 + len;
        }
        qc_decoder_free(&d);
    }
    printf("%.1f ns/entity (%lu entities, %d passes)\n", (double)(clock() - t0) / CLOCKS_PER_SEC * 1e9 / (double)(ents ? ents : 1),
           (unsigned long)ents, passes);
    qc_schema_free(&s);
    free(js);
    free(data);
    return 0;
}
