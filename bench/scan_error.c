/* How the rounding error of f32 scans grows with the sequence length.
 *
 * For each T and decay regime, runs prn_scan_diag in f32 with every
 * algorithm and compares with the same recurrence in f64 (from the same
 * f32-rounded data). Prints the largest error relative to the bound
 * s_t = |a_t| s_{t-1} + |b_t| (the recurrence on absolute values), in units
 * of f32's eps, and the largest error relative to max |h|. The numbers are
 * the basis of the README's table; run: ./build/bench/scan_error [--quick] */
#include "parrnn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double urand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

int main(int argc, char **argv) {
    static const char *algo_name[] = {"auto", "sequential", "chunked", "tree"};
    static const char *regime[] = {"|a| < 1 (uniform in (-1,1))", "a near 1 (0.999..1)", "a = 1 (running sum)"};
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    size_t Ts[] = {100, 10000, 1000000, 10000000}, nT = quick ? 3 : 4, ti, i;
    prn_context *ctx;
    char err[256];
    int r, al;
    if (prn_context_create(NULL, &ctx, err, sizeof err) != PRN_OK) { fprintf(stderr, "%s\n", err); return 1; }
    printf("f32 scan error against f64 (one channel; eps = 2^-24)\n");
    printf("%-30s %9s %-11s %14s %14s\n", "decays", "T", "algorithm", "err/(eps*s)", "err/max|h|");
    for (r = 0; r < 3; ++r)
        for (ti = 0; ti < nT; ++ti) {
            size_t T = Ts[ti], shape[3] = {1, 0, 1};
            float *a = (float *)malloc(T * sizeof(float)), *b = (float *)malloc(T * sizeof(float));
            float *h = (float *)malloc(T * sizeof(float));
            double hd = 0, sd = 0, hmax = 0;
            double *ref = (double *)malloc(T * sizeof(double)), *bnd = (double *)malloc(T * sizeof(double));
            prn_tensor *ta = NULL, *tb = NULL;
            shape[1] = T;
            for (i = 0; i < T; ++i) {
                a[i] = (float)(r == 0 ? 2 * urand() - 1 : r == 1 ? 0.999 + 0.001 * urand() : 1.0);
                b[i] = (float)(2 * urand() - 1);
                hd = (double)a[i] * hd + (double)b[i];
                sd = fabs((double)a[i]) * sd + fabs((double)b[i]);
                ref[i] = hd;
                bnd[i] = sd;
                if (fabs(hd) > hmax) hmax = fabs(hd);
            }
            if (prn_tensor_from_host(ctx, PRN_F32, 3, shape, a, &ta) != PRN_OK ||
                prn_tensor_from_host(ctx, PRN_F32, 3, shape, b, &tb) != PRN_OK) {
                fprintf(stderr, "%s\n", prn_last_error(ctx));
                return 1;
            }
            for (al = 1; al < PRN_SCAN_ALGO_COUNT; ++al) {
                prn_tensor *th = NULL;
                double e1 = 0, e2 = 0;
                if (al == PRN_SCAN_TREE && T > 1000000) continue; /* slow, and it says nothing new */
                if (prn_scan_diag(ctx, ta, tb, NULL, 0, (prn_scan_algo)al, &th) != PRN_OK ||
                    prn_tensor_download(th, h, T) != PRN_OK) {
                    fprintf(stderr, "%s\n", prn_last_error(ctx));
                    return 1;
                }
                for (i = 0; i < T; ++i) {
                    double e = fabs((double)h[i] - ref[i]);
                    if (e / (5.96e-8 * bnd[i]) > e1) e1 = e / (5.96e-8 * bnd[i]);
                    if (e / hmax > e2) e2 = e / hmax;
                }
                printf("%-30s %9zu %-11s %14.1f %14.2e\n", regime[r], T, algo_name[al], e1, e2);
                printf("BENCH name=scan_error backend=%s dtype=f32 algo=%s decays=%d T=%zu err_eps_bound=%.3g err_rel_max=%.3g\n",
                       prn_context_backend_name(ctx), algo_name[al], r, T, e1, e2);
                prn_tensor_free(th);
            }
            prn_tensor_free(ta); prn_tensor_free(tb);
            free(a); free(b); free(h); free(ref); free(bnd);
        }
    prn_context_free(ctx);
    return 0;
}
