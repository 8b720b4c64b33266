/* fma_peak: this machine's f32 FMA peak in GFLOP/s (issue 28's ceiling),
 * by bench/fma_peak.h: 12 independent chains of register-only FMAs per
 * thread. Prints the best of --reps runs at 1 and at the OpenMP thread
 * count (2 on the test machine), AVX-512 and AVX2. Independent of parrnn.
 *
 *   build: make build/bench/fma_peak     run: ./build/bench/fma_peak [--reps 7]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fma_peak.h"

int main(int argc, char **argv) {
    int reps = 7, nt = 1, i;
    long iters = FMA_PEAK_ITERS;
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
        printf("avx512 fma, %d chains, 1 thread : %7.1f GFLOP/s\n", NCH, fma_peak_measure(1, 1, reps, iters));
        if (nt > 1) printf("avx512 fma, %d chains, %d threads: %7.1f GFLOP/s\n", NCH, nt, fma_peak_measure(1, nt, reps, iters));
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        printf("avx2   fma, %d chains, 1 thread : %7.1f GFLOP/s\n", NCH, fma_peak_measure(0, 1, reps, iters));
        if (nt > 1) printf("avx2   fma, %d chains, %d threads: %7.1f GFLOP/s\n", NCH, nt, fma_peak_measure(0, nt, reps, iters));
    }
#else
    printf("fma_peak: not an x86 processor\n");
#endif
    return 0;
}
