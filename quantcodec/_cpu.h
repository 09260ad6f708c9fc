/* The one CPU dispatch of every compiled module of quantcodec.
 *
 * qc_simd_level() is the instruction set the hot loops may use: the best the CPU and the OS
 * support, capped by the environment variable QUANTCODEC_SIMD=baseline|avx2|avx512 (read once,
 * on first use; unset or unknown: no cap). Levels: QC_SIMD_BASELINE (portable C),
 * QC_SIMD_AVX2, QC_SIMD_AVX512 (F, CD, BW, DQ, VL). qc_crc_hw() says whether the SSE 4.2 crc32
 * instruction may be used: the CPU has it and the cap is not "baseline".
 *
 * CPUID and XGETBV come straight from <cpuid.h>, not __builtin_cpu_supports (compiler-rt's
 * __cpu_model is not linked everywhere), and the OS must have enabled the register state, not
 * only the CPU. Every module includes this header and so holds its own cached copy of the
 * answer; the copies agree, being pure functions of the CPU and the environment at first use.
 * Two threads racing on the cache write the same value. */
#ifndef QC_CPU_H
#define QC_CPU_H

#include <stdlib.h>
#include <string.h>

#define QC_SIMD_BASELINE 0
#define QC_SIMD_AVX2 1
#define QC_SIMD_AVX512 2

#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#define QC_CPU_X86 1
#endif

/* What the CPU and the OS support, without the cap. */
static inline int qc_cpu_level(void) {
#ifdef QC_CPU_X86
    unsigned int a, b, c, d, xcr0, xcr0_hi;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)) || !(c & (1u << 28)))
        return QC_SIMD_BASELINE;                    /* no OSXSAVE or no AVX */
    __asm__ volatile ("xgetbv" : "=a"(xcr0), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0 & 0x6) != 0x6 || __get_cpuid_max(0, 0) < 7)
        return QC_SIMD_BASELINE;                    /* no XMM/YMM state, or no leaf 7 */
    __cpuid_count(7, 0, a, b, c, d);
    if (!(b & (1u << 5)))
        return QC_SIMD_BASELINE;                    /* no AVX2 */
    if ((xcr0 & 0xe6) == 0xe6 && (b & (1u << 16)) && (b & (1u << 17)) && (b & (1u << 28))
            && (b & (1u << 30)) && (b & (1u << 31)))
        return QC_SIMD_AVX512;                      /* AVX-512 F, DQ, CD, BW, VL and their state */
    return QC_SIMD_AVX2;
#else
    return QC_SIMD_BASELINE;
#endif
}

/* QUANTCODEC_SIMD as a level (case and surrounding blanks ignored); unset or unknown: AVX-512. */
static inline int qc_simd_cap(void) {
    const char* s = getenv("QUANTCODEC_SIMD");
    char w[16];
    size_t n = 0;
    if (!s)
        return QC_SIMD_AVX512;
    while (*s == ' ' || *s == '\t')
        s++;
    while (*s && *s != ' ' && *s != '\t' && n < sizeof w - 1) {
        char ch = *s++;
        w[n++] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    }
    w[n] = 0;
    if (strcmp(w, "baseline") == 0)
        return QC_SIMD_BASELINE;
    if (strcmp(w, "avx2") == 0)
        return QC_SIMD_AVX2;
    return QC_SIMD_AVX512;
}

static volatile int qc_simd_level_cache = -1;

static inline int qc_simd_level(void) {
    int l = qc_simd_level_cache;
    if (l < 0) {
        int cpu = qc_cpu_level(), cap = qc_simd_cap();
        l = cpu < cap ? cpu : cap;
        qc_simd_level_cache = l;
    }
    return l;
}

static volatile int qc_crc_hw_cache = -1;

static inline int qc_crc_hw(void) {
    int ok = qc_crc_hw_cache;
    if (ok < 0) {
        ok = 0;
#ifdef QC_CPU_X86
        {
            unsigned int a, b, c, d;
            ok = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 20)) && qc_simd_cap() != QC_SIMD_BASELINE;
        }
#endif
        qc_crc_hw_cache = ok;
    }
    return ok;
}

#endif
