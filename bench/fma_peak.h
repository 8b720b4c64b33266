/* fma_peak.h - this machine's f32 FMA peak in GFLOP/s, measured: the
 * ceiling for a benchmark's GFLOP/s (bench/fma_peak.c prints it; bench_rnn
 * holds each line's GFLOP/s against it). Each thread runs NCH independent
 * chains of vector FMAs on registers (no memory operands), enough chains
 * to cover the FMA latency (4 cycles) times the FMA ports (2): 12 chains
 * of AVX-512 (16 floats) or AVX2 (8 floats). An FMA counts 2 flops per
 * lane. Static inline functions; needs OpenMP for more
 * than one thread. */
#ifndef PARRNN_BENCH_FMA_PEAK_H
#define PARRNN_BENCH_FMA_PEAK_H
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FP_X86 1
#endif

#define NCH 12
#define FMA_PEAK_ITERS 5000000L /* a call: ~20 ms of one core at 3 GHz */

#ifdef FP_X86
__attribute__((target("avx512f"))) static inline float run512(long iters, float seed) {
    __m512 c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    float out[16], s = 0;
    long k;
    c0 = _mm512_set1_ps(seed + 0.0f);
    c1 = _mm512_set1_ps(seed + 1.0f);
    c2 = _mm512_set1_ps(seed + 2.0f);
    c3 = _mm512_set1_ps(seed + 3.0f);
    c4 = _mm512_set1_ps(seed + 4.0f);
    c5 = _mm512_set1_ps(seed + 5.0f);
    c6 = _mm512_set1_ps(seed + 6.0f);
    c7 = _mm512_set1_ps(seed + 7.0f);
    c8 = _mm512_set1_ps(seed + 8.0f);
    c9 = _mm512_set1_ps(seed + 9.0f);
    c10 = _mm512_set1_ps(seed + 10.0f);
    c11 = _mm512_set1_ps(seed + 11.0f);
    for (k = 0; k < iters; ++k) {
        /* one FMA per chain, on registers: named variables (an array
         * would live on the stack), and the empty asm keeps the compiler
         * from folding the chains */
        c0 = _mm512_fmadd_ps(c0, a, b); c1 = _mm512_fmadd_ps(c1, a, b); c2 = _mm512_fmadd_ps(c2, a, b); c3 = _mm512_fmadd_ps(c3, a, b); c4 = _mm512_fmadd_ps(c4, a, b); c5 = _mm512_fmadd_ps(c5, a, b); c6 = _mm512_fmadd_ps(c6, a, b); c7 = _mm512_fmadd_ps(c7, a, b); c8 = _mm512_fmadd_ps(c8, a, b); c9 = _mm512_fmadd_ps(c9, a, b); c10 = _mm512_fmadd_ps(c10, a, b); c11 = _mm512_fmadd_ps(c11, a, b);
        __asm__ volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5));
        __asm__ volatile("" : "+v"(c6), "+v"(c7), "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11));
    }
    _mm512_storeu_ps(out, c0); s += out[0];
    _mm512_storeu_ps(out, c1); s += out[0];
    _mm512_storeu_ps(out, c2); s += out[0];
    _mm512_storeu_ps(out, c3); s += out[0];
    _mm512_storeu_ps(out, c4); s += out[0];
    _mm512_storeu_ps(out, c5); s += out[0];
    _mm512_storeu_ps(out, c6); s += out[0];
    _mm512_storeu_ps(out, c7); s += out[0];
    _mm512_storeu_ps(out, c8); s += out[0];
    _mm512_storeu_ps(out, c9); s += out[0];
    _mm512_storeu_ps(out, c10); s += out[0];
    _mm512_storeu_ps(out, c11); s += out[0];
    return s;
}
__attribute__((target("avx2,fma"))) static inline float run256(long iters, float seed) {
    __m256 c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    float out[8], s = 0;
    long k;
    c0 = _mm256_set1_ps(seed + 0.0f);
    c1 = _mm256_set1_ps(seed + 1.0f);
    c2 = _mm256_set1_ps(seed + 2.0f);
    c3 = _mm256_set1_ps(seed + 3.0f);
    c4 = _mm256_set1_ps(seed + 4.0f);
    c5 = _mm256_set1_ps(seed + 5.0f);
    c6 = _mm256_set1_ps(seed + 6.0f);
    c7 = _mm256_set1_ps(seed + 7.0f);
    c8 = _mm256_set1_ps(seed + 8.0f);
    c9 = _mm256_set1_ps(seed + 9.0f);
    c10 = _mm256_set1_ps(seed + 10.0f);
    c11 = _mm256_set1_ps(seed + 11.0f);
    for (k = 0; k < iters; ++k) {
        /* one FMA per chain, on registers: named variables (an array
         * would live on the stack), and the empty asm keeps the compiler
         * from folding the chains */
        c0 = _mm256_fmadd_ps(c0, a, b); c1 = _mm256_fmadd_ps(c1, a, b); c2 = _mm256_fmadd_ps(c2, a, b); c3 = _mm256_fmadd_ps(c3, a, b); c4 = _mm256_fmadd_ps(c4, a, b); c5 = _mm256_fmadd_ps(c5, a, b); c6 = _mm256_fmadd_ps(c6, a, b); c7 = _mm256_fmadd_ps(c7, a, b); c8 = _mm256_fmadd_ps(c8, a, b); c9 = _mm256_fmadd_ps(c9, a, b); c10 = _mm256_fmadd_ps(c10, a, b); c11 = _mm256_fmadd_ps(c11, a, b);
        __asm__ volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5));
        __asm__ volatile("" : "+x"(c6), "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));
    }
    _mm256_storeu_ps(out, c0); s += out[0];
    _mm256_storeu_ps(out, c1); s += out[0];
    _mm256_storeu_ps(out, c2); s += out[0];
    _mm256_storeu_ps(out, c3); s += out[0];
    _mm256_storeu_ps(out, c4); s += out[0];
    _mm256_storeu_ps(out, c5); s += out[0];
    _mm256_storeu_ps(out, c6); s += out[0];
    _mm256_storeu_ps(out, c7); s += out[0];
    _mm256_storeu_ps(out, c8); s += out[0];
    _mm256_storeu_ps(out, c9); s += out[0];
    _mm256_storeu_ps(out, c10); s += out[0];
    _mm256_storeu_ps(out, c11); s += out[0];
    return s;
}
#endif

static inline double fma_peak_now(void) {
#ifdef _OPENMP
    return omp_get_wtime();
#else
    return (double)clock() / CLOCKS_PER_SEC;
#endif
}

/* the flops of one run of nt threads */
static inline double fma_peak_run_flops(int wide, int nt, long iters) {
    return (double)nt * (double)iters * NCH * (wide ? 16 : 8) * 2;
}
/* best GFLOP/s over reps runs of nt threads, each of iters iterations;
 * wide: AVX-512 (else AVX2); 0 off x86 */
static inline double fma_peak_measure(int wide, int nt, int reps, long iters) {
    double best = 0;
    int r;
    volatile float sink = 0;
    for (r = 0; r < reps; ++r) {
        double t0 = fma_peak_now(), dt, g;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) reduction(+ : sink)
#endif
        {
#ifdef FP_X86
            sink += wide ? run512(iters, 1.0f) : run256(iters, 1.0f);
#endif
        }
        dt = fma_peak_now() - t0;
        g = fma_peak_run_flops(wide, nt, iters) / dt * 1e-9;
        if (g > best) best = g;
    }
    (void)sink;
    return best;
}

/* the widest FMA this processor has, on nt threads (0: neither, or not
 * x86); *name: "avx512" or "avx2" */
static inline double fma_peak_best(int nt, int reps, long iters, const char **name) {
    *name = "none";
#ifdef FP_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        *name = "avx512";
        return fma_peak_measure(1, nt, reps, iters);
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        *name = "avx2";
        return fma_peak_measure(0, nt, reps, iters);
    }
#endif
    (void)nt; (void)reps; (void)iters;
    return 0.0;
}
#endif /* PARRNN_BENCH_FMA_PEAK_H */
