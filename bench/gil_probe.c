/* Where a Python process holds the GIL (bench/bench_views.py --part 5): an LD_PRELOAD library
 * that wraps PyEval_SaveThread / PyEval_RestoreThread, which Cython's `with nogil` and NumPy call
 * through the dynamic linker, and counts the releases, the wall time with the GIL released (from
 * the release to the call that takes it back), the wall time with it held (from taking it back
 * to the next release) and the time spent waiting to take it back (another thread held it).
 * Measurement only: never loaded by quantcodec.
 *
 *     gcc -O2 -shared -fPIC -o /tmp/gil_probe.so bench/gil_probe.c -ldl
 *     LD_PRELOAD=/tmp/gil_probe.so python bench/bench_views.py --part 5
 *
 * Python reads the counters with ctypes: gil_probe_read(long long out[4]) gives releases, ns
 * released, ns waiting to take the GIL back, ns held (all threads, since the start); the
 * histogram of the released spans by power of two of nanoseconds: gil_probe_hist(long long[24]).
 * Works where libpython is a shared library (the calls then go through the dynamic linker); the
 * GIL held inside the interpreter's own calls to PyEval_SaveThread (time.sleep, file reads) is
 * not counted as released. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <time.h>

typedef struct _ts PyThreadState;
static PyThreadState* (*real_save)(void);
static void (*real_restore)(PyThreadState*);
static __thread long long t_released, t_taken;
static _Atomic long long n_releases, ns_released, ns_waiting, ns_held, hist[24];

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

PyThreadState* PyEval_SaveThread(void) {
    if (!real_save) real_save = (PyThreadState* (*)(void))dlsym(RTLD_NEXT, "PyEval_SaveThread");
    n_releases++;
    if (t_taken) ns_held += now_ns() - t_taken;
    PyThreadState* s = real_save();
    t_released = now_ns();
    return s;
}

void PyEval_RestoreThread(PyThreadState* s) {
    if (!real_restore) real_restore = (void (*)(PyThreadState*))dlsym(RTLD_NEXT, "PyEval_RestoreThread");
    long long w = now_ns(), f = w - t_released;
    int b = 0;
    ns_released += f;
    while (f > 1 && b < 23) { f >>= 1; b++; }
    hist[b]++;
    real_restore(s);
    t_taken = now_ns();
    ns_waiting += t_taken - w;
}

void gil_probe_read(long long* out) {
    out[0] = n_releases; out[1] = ns_released; out[2] = ns_waiting; out[3] = ns_held;
}

void gil_probe_hist(long long* out) {
    for (int i = 0; i < 24; i++) out[i] = hist[i];
}
