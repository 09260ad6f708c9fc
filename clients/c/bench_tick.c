/* One tick of the bench stream decoded by C alone, over and over, for profilers and CPU time:
   `python bench.py --dump DIR` writes the stream, then

       cc -std=c99 -O2 -ffp-contract=off -g bench_tick.c -o build/bench_tick -lm
       build/bench_tick DIR 60 200 9      # tick 60: the best of 9 repeats of 200 decodes (CPU us)

   The decoder is fed the hello and the ticks up to this one, then decodes it `number` times as
   bench.py's tick cases do (bench.c's qcb_time, the thread's CPU time). Callgrind's instructions
   for one decode: the difference of two runs, e.g. `... 60 21 1` and `... 60 1 1`, over 20. */
#include "bench.c"

static uint8_t *slurp(const char *dir, const char *name, size_t *n) {
    char path[4096];
    FILE *f;
    uint8_t *buf;
    long len;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "rb");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "bench_tick: cannot read %s (python bench.py --dump %s)\n", path, dir);
        exit(2);
    }
    buf = (uint8_t *)malloc((size_t)len + 1);
    if (buf == NULL || fread(buf, 1, (size_t)len, f) != (size_t)len) { fprintf(stderr, "bench_tick: %s\n", path); exit(2); }
    fclose(f);
    *n = (size_t)len;
    return buf;
}

int main(int argc, char **argv) {
    size_t jl, n, p, dl = 0;
    uint8_t *js, *data;
    const uint8_t *dg = NULL;
    int tick, number, repeats, i, j;
    double best = -1.0;
    void *b;
    if (argc < 3) { fprintf(stderr, "usage: bench_tick DIR TICK [number [repeats]]\n"); return 2; }
    tick = atoi(argv[2]);
    number = argc > 3 ? atoi(argv[3]) : 200;
    repeats = argc > 4 ? atoi(argv[4]) : 9;
    js = slurp(argv[1], "schema.json", &jl);
    data = slurp(argv[1], "stream.bin", &n);
    b = qcb_open((const char *)js, jl);
    if (b == NULL) return 1;
    qcb_clock(1);
    /* stream.bin: each datagram as a 4-byte little-endian length and its bytes, the hello first */
    for (p = 0, i = 0; p + 4 <= n && i <= tick + 1; i++) {
        size_t len = (size_t)data[p] | (size_t)data[p + 1] << 8 | (size_t)data[p + 2] << 16 | (size_t)data[p + 3] << 24;
        if (len > n - p - 4) { fprintf(stderr, "bench_tick: a truncated stream.bin\n"); return 1; }
        qcb_feed(b, data + p + 4, len);
        dg = data + p + 4;
        dl = len;
        p += 4 + len;
    }
    if (i != tick + 2) { fprintf(stderr, "bench_tick: the stream has no tick %d\n", tick); return 1; }
    for (j = 0; j < repeats; j++) {
        double t = qcb_time(b, dg, dl, number, 0);
        if (t < 0) { fprintf(stderr, "bench_tick: tick %d does not decode\n", tick); return 1; }
        if (best < 0 || t < best) best = t;
    }
    printf("tick %d: %lu bytes, %.2f us a decode (CPU time, best of %d x %d)\n", tick, (unsigned long)dl, best * 1e6,
           repeats, number);
    qcb_close(b);
    free(js);
    free(data);
    return 0;
}
