/* Scans of linear recurrences: every variant (diagonal, block, dense;
 * forward, reverse; with and without h0; sequential, chunked, tree, auto)
 * against a sequential loop in f64, with asserted error bounds. */
#include "parrnn.h"
#include "prn_test.h"
#ifdef _OPENMP
#include <omp.h> /* test_diag_many_threads sets OpenMP's thread count */
#endif

static prn_context *ctx;
static const char *algo_name[] = {"auto", "sequential", "chunked", "tree"};

/* xorshift for test data (independent of the library's generator) */
static uint64_t rng_state = 88172645463325252ull;
static double urand(void) {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}


static prn_tensor *upload(prn_dtype dt, int nd, const size_t *shape, double *v, size_t n) {
    prn_tensor *t = NULL;
    size_t i;
    if (dt == PRN_F32) {
        float *f = (float *)malloc(n * sizeof(float) + 1);
        for (i = 0; i < n; ++i) { f[i] = (float)v[i]; v[i] = (double)f[i]; } /* the reference sees the rounded data */
        prn_tensor_from_host(ctx, dt, nd, shape, f, &t);
        free(f);
    } else {
        prn_tensor_from_host(ctx, dt, nd, shape, v, &t);
    }
    return t;
}

/* decay kinds: 0 uniform in (-1, 1), 1 near 1 (0.999..1), 2 up to 1.05 in magnitude */
static double decay(int kind) {
    if (kind == 0) return 2 * urand() - 1;
    if (kind == 1) return 0.999 + 0.001 * urand();
    return (urand() < 0.5 ? -1 : 1) * (0.95 + 0.1 * urand());
}

static double worst_ratio[2][4]; /* [dtype][algo]: max error / (eps * bound), for the report */

/* One case; k = 0 diagonal, else block size k (k == C: dense). */
static void scan_case(prn_dtype dt, prn_scan_algo algo, int rev, int with_h0, size_t B, size_t T, size_t C, size_t k,
                      int dkind) {
    size_t nb = B * T * C, na = k ? nb * k : nb, i, bad = 0, worst_i = 0;
    double *a = (double *)malloc(na * sizeof(double)), *b = (double *)malloc(nb * sizeof(double));
    double *h0 = with_h0 ? (double *)malloc(B * C * sizeof(double)) : NULL;
    double *want = (double *)malloc(nb * sizeof(double)), *bound = (double *)malloc(nb * sizeof(double));
    double *got = (double *)malloc(nb * sizeof(double));
    double eps = dt == PRN_F32 ? 5.96e-8 : 1.11e-16, worst = 0;
    /* rounding: each step adds at most ~2 roundings (k+1 for a block row),
     * relative to the bound; chunked and tree add the composition of maps */
    double steps = (double)T * (k ? (double)k + 2 : 2) + 64.0 * (k ? (double)(k * k) : 1);
    size_t sa[4], sb[3], sh0[2];
    prn_tensor *ta = NULL, *tb = NULL, *th0 = NULL, *th = NULL;
    char desc[160];
    snprintf(desc, sizeof desc, "%s %s %s%s B=%zu T=%zu C=%zu k=%zu decay=%d", prn_dtype_name(dt), algo_name[algo],
             rev ? "reverse" : "forward", with_h0 ? " h0" : "", B, T, C, k, dkind);
    for (i = 0; i < na; ++i) a[i] = k ? decay(dkind) / (double)k : decay(dkind);
    for (i = 0; i < nb; ++i) b[i] = 2 * urand() - 1;
    for (i = 0; h0 && i < B * C; ++i) h0[i] = 2 * urand() - 1;
    sa[0] = B; sa[1] = T; sa[2] = C; sa[3] = k;
    sb[0] = B; sb[1] = T; sb[2] = C;
    sh0[0] = B; sh0[1] = C;
    ta = upload(dt, k ? 4 : 3, sa, a, na);
    tb = upload(dt, 3, sb, b, nb);
    if (h0) th0 = upload(dt, 2, sh0, h0, B * C);
    prnt_scan_host(rev, 0, B, T, C, k, a, b, h0, want, bound);
    if (k) PRNT_OK(ctx, prn_scan_block(ctx, ta, tb, th0, rev, algo, &th));
    else PRNT_OK(ctx, prn_scan_diag(ctx, ta, tb, th0, rev, algo, &th));
    if (th) {
        prnt_download_f64(th, got);
        for (i = 0; i < nb; ++i) {
            double err = fabs(got[i] - want[i]), lim = steps * eps * bound[i] * 1.01 + 1e-300;
            double r = err / (eps * (bound[i] > 0 ? bound[i] : 1));
            if (!(err <= lim)) { if (!bad) worst_i = i; bad++; }
            if (r > worst || r != r) worst = r;
        }
        PRNT_CHECK(bad == 0, "%s: %zu elements outside the bound; e.g. [%zu] got %.9g want %.9g bound %.3g", desc, bad,
                   worst_i, got[worst_i], want[worst_i], steps * eps * bound[worst_i]);
        if (worst > worst_ratio[dt == PRN_F64][algo]) worst_ratio[dt == PRN_F64][algo] = worst;
    }
    prn_tensor_free(ta); prn_tensor_free(tb); prn_tensor_free(th0); prn_tensor_free(th);
    free(a); free(b); free(h0); free(want); free(bound); free(got);
}

static void test_diag_all_variants(void) {
    static const size_t shapes[][3] = {{1, 1, 1}, {2, 7, 3}, {1, 4099, 1}, {3, 4099, 5}, {2, 13, 40}, {1, 5000, 17}};
    int d, al, rev, h0, sh, dk;
    for (d = 0; d < 2; ++d)
        for (al = 0; al < PRN_SCAN_ALGO_COUNT; ++al)
            for (rev = 0; rev < 2; ++rev)
                for (h0 = 0; h0 < 2; ++h0)
                    for (sh = 0; sh < 6; ++sh)
                        for (dk = 0; dk < 3; ++dk)
                            scan_case(d ? PRN_F64 : PRN_F32, (prn_scan_algo)al, rev, h0, shapes[sh][0], shapes[sh][1],
                                      shapes[sh][2], 0, dk);
}

static void test_block_all_variants(void) {
    static const size_t shapes[][4] = {{1, 1, 1, 1}, {2, 7, 6, 2}, {1, 4099, 3, 3}, {2, 31, 8, 4}, {1, 11, 5, 5}, {1, 300, 64, 64}};
    int d, al, rev, h0, sh, dk;
    for (d = 0; d < 2; ++d)
        for (al = 0; al < PRN_SCAN_ALGO_COUNT; ++al)
            for (rev = 0; rev < 2; ++rev)
                for (h0 = 0; h0 < 2; ++h0)
                    for (sh = 0; sh < 6; ++sh)
                        for (dk = 0; dk < 2; ++dk) {
                            if (sh == 5 && (al == PRN_SCAN_TREE || al == PRN_SCAN_CHUNKED) && (rev || h0 || dk)) continue; /* k=64: slow variants once */
                            scan_case(d ? PRN_F64 : PRN_F32, (prn_scan_algo)al, rev, h0, shapes[sh][0], shapes[sh][1],
                                      shapes[sh][2], shapes[sh][3], dk);
                        }
}

static void test_diag_long(void) {
    /* T = 10^6 with one and with 16 channels, every algorithm */
    int al;
    for (al = 0; al < PRN_SCAN_ALGO_COUNT; ++al) {
        scan_case(PRN_F32, (prn_scan_algo)al, 0, 1, 1, 1000000, 1, 0, 1);
        scan_case(PRN_F32, (prn_scan_algo)al, 1, 0, 1, 1000000, 1, 0, 0);
    }
    scan_case(PRN_F64, PRN_SCAN_AUTO, 0, 1, 1, 1000000, 16, 0, 1);
    /* outputs of 16 MiB and more take the streaming-store path (groups of
     * more than 16 channels); 37 channels put rows at every alignment */
    scan_case(PRN_F32, PRN_SCAN_SEQUENTIAL, 1, 1, 1, 150000, 37, 0, 0);
    scan_case(PRN_F64, PRN_SCAN_SEQUENTIAL, 0, 1, 2, 60000, 37, 0, 1);
    scan_case(PRN_F32, PRN_SCAN_CHUNKED, 0, 1, 2, 1000000, 3, 0, 0);
}

static void test_diag_chunked_pipeline(void) {
    /* The chunked scan hands carries from superblock to superblock; with
     * one channel each pass takes 4 (SSE2) or 8 (AVX2) steps per register.
     * Two sequences of odd length put the second one's rows at every
     * alignment; several superblocks each, both directions, h0. */
    int d, rev;
    for (d = 0; d < 2; ++d)
        for (rev = 0; rev < 2; ++rev) {
            scan_case(d ? PRN_F64 : PRN_F32, PRN_SCAN_CHUNKED, rev, 1, 2, 300001, 1, 0, rev ? 2 : 1);
            scan_case(d ? PRN_F64 : PRN_F32, PRN_SCAN_SEQUENTIAL, rev, 1, 3, 100003, 1, 0, 0);
            scan_case(d ? PRN_F64 : PRN_F32, PRN_SCAN_CHUNKED, rev, rev, 1, 200003, 37, 0, 1);
        }
    /* outputs of 16 MiB and more: streaming stores, one channel and rows
     * (not under valgrind and the sanitizers: PRNT_QUICK) */
    if (getenv("PRNT_QUICK")) return;
    scan_case(PRN_F32, PRN_SCAN_CHUNKED, 0, 1, 1, 4500001, 1, 0, 1);
    scan_case(PRN_F32, PRN_SCAN_SEQUENTIAL, 1, 1, 1, 4500001, 1, 0, 0);
    scan_case(PRN_F64, PRN_SCAN_CHUNKED, 1, 0, 1, 2250001, 1, 0, 1);
    scan_case(PRN_F32, PRN_SCAN_CHUNKED, 1, 1, 1, 150001, 37, 0, 0);
    scan_case(PRN_F64, PRN_SCAN_CHUNKED, 0, 1, 1, 60001, 37, 0, 1);
}

static void test_diag_many_threads(void) {
    /* More threads than chunks in a superblock fill: thread j composes the
     * maps of chunks 1 .. j-1 (with 2 threads there are none) */
    prn_config cfg;
    prn_context *c5 = NULL, *saved = ctx;
    char err[256];
    int d, rev;
#ifdef _OPENMP
    const int max_before = omp_get_max_threads();
    omp_set_num_threads(5); /* contexts use at most what OpenMP offers */
#endif
    memset(&cfg, 0, sizeof cfg);
    cfg.num_threads = 5;
    PRNT_CHECK(prn_context_create(&cfg, &c5, err, sizeof err) == PRN_OK, "context: %s", err);
    if (!c5) return;
    PRNT_CHECK(prn_context_num_threads(c5) == 5 || prn_context_num_threads(c5) == 1, "threads: %d",
               prn_context_num_threads(c5));
    ctx = c5;
    for (d = 0; d < 2; ++d)
        for (rev = 0; rev < 2; ++rev) {
            scan_case(d ? PRN_F64 : PRN_F32, PRN_SCAN_CHUNKED, rev, 1, 1, 1000003, 1, 0, 1);
            scan_case(d ? PRN_F64 : PRN_F32, PRN_SCAN_CHUNKED, rev, !rev, 2, 200003, 5, 0, 0);
            scan_case(d ? PRN_F64 : PRN_F32, PRN_SCAN_AUTO, rev, 1, 2, 100003, 64, 0, 1);
        }
    ctx = saved;
    prn_context_free(c5);
#ifdef _OPENMP
    omp_set_num_threads(max_before);
#endif
}

static void test_nan_propagates(void) {
    const size_t s[3] = {1, 9, 2};
    double a[18], b[18], h[18];
    prn_tensor *ta, *tb, *th = NULL;
    int i, al;
    for (i = 0; i < 18; ++i) { a[i] = 0.5; b[i] = 1; }
    b[4] = NAN; /* step 2, channel 0 */
    ta = upload(PRN_F64, 3, s, a, 18);
    tb = upload(PRN_F64, 3, s, b, 18);
    for (al = 0; al < PRN_SCAN_ALGO_COUNT; ++al) {
        PRNT_OK(ctx, prn_scan_diag(ctx, ta, tb, NULL, 0, (prn_scan_algo)al, &th));
        if (!th) continue;
        prn_tensor_download(th, h, 18);
        PRNT_CHECK(h[0] == 1 && h[2] == 1.5 && h[4] != h[4] && h[16] != h[16] && h[17] == h[17], "%s: NaN from step 2 on",
                   algo_name[al]);
        prn_tensor_free(th);
        th = NULL;
    }
    prn_tensor_free(ta); prn_tensor_free(tb);
    {   /* block scans too: a NaN in one block stays in that block */
        const size_t sa[4] = {1, 9, 2, 1}, sb[3] = {1, 9, 2};
        prn_tensor *ba = upload(PRN_F64, 4, sa, a, 18), *bb = upload(PRN_F64, 3, sb, b, 18);
        for (al = 0; al < PRN_SCAN_ALGO_COUNT; ++al) {
            PRNT_OK(ctx, prn_scan_block(ctx, ba, bb, NULL, 0, (prn_scan_algo)al, &th));
            if (!th) continue;
            prn_tensor_download(th, h, 18);
            PRNT_CHECK(h[2] == 1.5 && h[4] != h[4] && h[16] != h[16] && h[17] == h[17], "block %s: NaN from step 2 on",
                       algo_name[al]);
            prn_tensor_free(th);
            th = NULL;
        }
        prn_tensor_free(ba); prn_tensor_free(bb);
    }
}

static void test_bad_input(void) {
    const size_t s3[3] = {2, 5, 3}, s3b[3] = {2, 5, 4}, s0[3] = {2, 0, 3}, s4[4] = {2, 5, 3, 2}, sh0[2] = {3, 3};
    prn_tensor *a = NULL, *b = NULL, *c = NULL, *z = NULL, *ab = NULL, *h0 = NULL, *a32 = NULL;
    prn_tensor *out = (prn_tensor *)&rng_state;
    prn_tensor_create(ctx, PRN_F64, 3, s3, &a);
    prn_tensor_create(ctx, PRN_F64, 3, s3, &b);
    prn_tensor_create(ctx, PRN_F64, 3, s3b, &c);
    prn_tensor_create(ctx, PRN_F64, 3, s0, &z);
    prn_tensor_create(ctx, PRN_F64, 4, s4, &ab);
    prn_tensor_create(ctx, PRN_F64, 2, sh0, &h0);
    prn_tensor_create(ctx, PRN_F32, 3, s3, &a32);
    PRNT_STATUS(ctx, prn_scan_diag(ctx, a, c, NULL, 0, PRN_SCAN_AUTO, &out), PRN_ERR_SHAPE);
    PRNT_STATUS(ctx, prn_scan_diag(ctx, z, z, NULL, 0, PRN_SCAN_AUTO, &out), PRN_ERR_SHAPE);
    PRNT_CHECK(strstr(prn_last_error(ctx), "T = 0") != NULL, "T = 0 message: %s", prn_last_error(ctx));
    PRNT_STATUS(ctx, prn_scan_diag(ctx, NULL, b, NULL, 0, PRN_SCAN_AUTO, &out), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(ctx, prn_scan_diag(ctx, a, b, NULL, 0, PRN_SCAN_AUTO, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(ctx, prn_scan_diag(ctx, a, b, h0, 0, PRN_SCAN_AUTO, &out), PRN_ERR_SHAPE);
    PRNT_STATUS(ctx, prn_scan_diag(ctx, a32, b, NULL, 0, PRN_SCAN_AUTO, &out), PRN_ERR_DTYPE);
    PRNT_STATUS(ctx, prn_scan_diag(ctx, a, b, NULL, 0, (prn_scan_algo)9, &out), PRN_ERR_INVALID_ARGUMENT);
    PRNT_STATUS(ctx, prn_scan_block(ctx, a, b, NULL, 0, PRN_SCAN_AUTO, &out), PRN_ERR_SHAPE);  /* a not 4-D */
    PRNT_STATUS(ctx, prn_scan_block(ctx, ab, b, NULL, 0, PRN_SCAN_AUTO, &out), PRN_ERR_SHAPE); /* k=2 !| C=3 */
    PRNT_CHECK(out == (prn_tensor *)&rng_state, "out untouched");
    prn_tensor_free(a); prn_tensor_free(b); prn_tensor_free(c); prn_tensor_free(z);
    prn_tensor_free(ab); prn_tensor_free(h0); prn_tensor_free(a32);
}

static void test_final_state_slice(void) {
    const size_t s[3] = {2, 6, 3};
    prn_tensor *a = NULL, *b = NULL, *h = NULL, *last = NULL;
    double hv[36], lv[6];
    int n, c;
    prn_seed(ctx, 3);
    prn_tensor_uniform(ctx, PRN_F64, 3, s, -1, 1, &a);
    prn_tensor_uniform(ctx, PRN_F64, 3, s, -1, 1, &b);
    PRNT_OK(ctx, prn_scan_diag(ctx, a, b, NULL, 0, PRN_SCAN_AUTO, &h));
    PRNT_OK(ctx, prn_slice(ctx, h, 1, 5, 1, &last));
    PRNT_CHECK(last && prn_tensor_ndim(last) == 3 && prn_tensor_dim(last, 1) == 1, "final state shape");
    prn_tensor_download(h, hv, 36);
    prn_tensor_download(last, lv, 6);
    for (n = 0; n < 2; ++n)
        for (c = 0; c < 3; ++c) PRNT_CHECK(lv[n * 3 + c] == hv[(n * 6 + 5) * 3 + c], "final state [%d,%d]", n, c);
    prn_tensor_free(a); prn_tensor_free(b); prn_tensor_free(h); prn_tensor_free(last);
}

static void test_report(void) {
    int d, al;
    printf("    max |error| / (eps x bound), the bound being the same recurrence on |a|, |b|, |h0|:\n");
    for (d = 0; d < 2; ++d)
        for (al = 0; al < PRN_SCAN_ALGO_COUNT; ++al)
            printf("      %s %-10s %8.1f\n", d ? "f64" : "f32", algo_name[al], worst_ratio[d][al]);
    PRNT_CHECK(prn_live_tensors(ctx) == 0, "tensors leaked: %zu", prn_live_tensors(ctx));
}

#if defined(PARRNN_NO_AVX2) || defined(PARRNN_NO_INTRINSICS)
static void skip_not_reference(void) {
    PRNT_SKIP("built with PARRNN_NO_AVX2 or PARRNN_NO_INTRINSICS, which change only the reference backend");
}
#endif

int main(void) {
    if (!(ctx = prnt_context(0))) return 1;
#if defined(PARRNN_NO_AVX2) || defined(PARRNN_NO_INTRINSICS)
    /* this build checks the reference backend's other code paths */
    if (strncmp(prn_context_backend_name(ctx), "reference", 9) != 0) {
        PRNT_RUN(skip_not_reference);
        prn_context_free(ctx);
        return prnt_summary();
    }
#endif
    PRNT_RUN(test_diag_all_variants);
    PRNT_RUN(test_block_all_variants);
    PRNT_RUN(test_diag_long);
    PRNT_RUN(test_diag_chunked_pipeline);
    PRNT_RUN(test_diag_many_threads);
    PRNT_RUN(test_nan_propagates);
    PRNT_RUN(test_bad_input);
    PRNT_RUN(test_final_state_slice);
    PRNT_RUN(test_report);
    prn_context_free(ctx);
    return prnt_summary();
}
