/* fma_peak: this machine's f32 FMA peak in GFLOP/s (issue 28's ceiling).
 * Each thread runs NCH independent chains of vector FMAs on registers (no
 * memory operands), enough chains to cover the FMA latency (4 cycles) times
 * the FMA ports (2): 12 chains of AVX-512 (16 floats) or AVX2 (8 floats).
 * An FMA counts 2 flops per lane. Prints best of --reps runs at 1 and at
 * the OpenMP thread count (2 on the test machine). Independent of parrnn.
 *
 *   build: make build/bench/fma_peak     run: ./build/bench/fma_peak [--reps 7]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FP_X86 1
#endif

#define NCH 12
#define ITERS 50000000L

#ifdef FP_X86
__attribute__((target("avx512f"))) static float run512(long iters, float seed) {
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
__attribute__((target("avx2,fma"))) static float run256(long iters, float seed) {
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

static double now(void) {
#ifdef _OPENMP
    return omp_get_wtime();
#else
    return (double)clock() / CLOCKS_PER_SEC;
#endif
}

/* best GFLOP/s over reps runs of nt threads, each ITERS/div iterations */
static double measure(int wide, int nt, int reps, long iters) {
    double best = 0;
    int r;
    volatile float sink = 0;
    for (r = 0; r < reps; ++r) {
        double t0 = now(), dt, g;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) reduction(+ : sink)
#endif
        {
#ifdef FP_X86
            sink += wide ? run512(iters, 1.0f) : run256(iters, 1.0f);
#endif
        }
        dt = now() - t0;
        g = (double)nt * (double)iters * NCH * (wide ? 16 : 8) * 2 / dt * 1e-9;
        if (g > best) best = g;
    }
    (void)sink;
    return best;
}

int main(int argc, char **argv) {
    int reps = 7, nt = 1, i;
    long iters = ITERS / 10;
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: fma_peak [--reps R]\n");
            return 2;
        }
    }
#ifdef _OPENMP
    nt = omp_get_max_threads();
#endif
#ifdef FP_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        printf("avx512 fma, %d chains, 1 thread : %7.1f GFLOP/s\n", NCH, measure(1, 1, reps, iters));
        if (nt > 1) printf("avx512 fma, %d chains, %d threads: %7.1f GFLOP/s\n", NCH, nt, measure(1, nt, reps, iters));
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        printf("avx2   fma, %d chains, 1 thread : %7.1f GFLOP/s\n", NCH, measure(0, 1, reps, iters));
        if (nt > 1) printf("avx2   fma, %d chains, %d threads: %7.1f GFLOP/s\n", NCH, nt, measure(0, nt, reps, iters));
    }
#else
    printf("fma_peak: not an x86 processor\n");
#endif
    return 0;
}
