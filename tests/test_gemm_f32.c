/* f32 products of the reference backend against reference-noblas (plain
 * loops) on the same inputs: every combination of op(A) and op(B), sizes
 * that are not multiples of the kernels' 4 x 16 tiles or of their 64-row
 * tasks, batched and broadcast operands, beta through the backward's
 * accumulation. Without CBLAS on an AVX2 machine, or where OpenBLAS runs
 * its SSE3 kernels on one, the reference backend's f32 products run on
 * parrnn's AVX2 panel GEMM (prn__gemm_f32x): this checks it (elsewhere it
 * checks CBLAS). `make test` builds it both ways (test_gemm_f32_noblas:
 * the implementation without CBLAS).
 * Tolerance: 2e-5 of the largest |entry| (f32 sums of up to 300 terms in
 * different orders). */
#include "parrnn.h"
#include "prn_test.h"

static prn_context *make(const char *backend) {
    prn_config cfg;
    prn_context *ctx = NULL;
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = backend;
    cfg.seed = 7;
    if (prn_context_create(&cfg, &ctx, NULL, 0) != PRN_OK) return NULL;
    return ctx;
}

static double max_abs(const float *x, size_t n) {
    double m = 0;
    size_t i;
    for (i = 0; i < n; ++i) m = fabs((double)x[i]) > m ? fabs((double)x[i]) : m;
    return m;
}

/* a [batch_a.., ra0, ra1], b [..., rb0, rb1]; product with ta, tb; also the
 * gradients of sum(y * R) (products with the other transposes, and beta
 * accumulation). */
static void check_case(size_t batch_a, size_t batch_b, size_t M, size_t N, size_t K, int ta, int tb) {
    prn_context *c[2];
    float *out[2][3] = {{NULL, NULL, NULL}, {NULL, NULL, NULL}};
    size_t na = 0, nb = 0, ny = 0, sa[3], sb[3], i;
    int q, w;
    c[0] = make("reference");
    c[1] = make("reference-noblas");
    PRNT_CHECK(c[0] && c[1], "contexts");
    if (!c[0] || !c[1]) goto done;
    for (q = 0; q < 2; ++q) {
        prn_tensor *a = NULL, *b = NULL, *y = NULL, *R = NULL, *p = NULL, *loss = NULL;
        int da = batch_a ? 3 : 2, db = batch_b ? 3 : 2, k = 0;
        if (batch_a) sa[k++] = batch_a;
        sa[k++] = ta ? K : M;
        sa[k] = ta ? M : K;
        k = 0;
        if (batch_b) sb[k++] = batch_b;
        sb[k++] = tb ? N : K;
        sb[k] = tb ? K : N;
        PRNT_OK(c[q], prn_tensor_uniform(c[q], PRN_F32, da, sa, -1.0, 1.0, &a));
        PRNT_OK(c[q], prn_tensor_uniform(c[q], PRN_F32, db, sb, -1.0, 1.0, &b));
        if (!a || !b) goto next;
        prn_tensor_set_requires_grad(a, 1);
        prn_tensor_set_requires_grad(b, 1);
        PRNT_OK(c[q], prn_matmul_ex(c[q], a, ta, b, tb, &y));
        if (!y) goto next;
        {
            size_t sy[3];
            int dy = prn_tensor_ndim(y);
            for (k = 0; k < dy; ++k) sy[k] = prn_tensor_dim(y, k);
            PRNT_OK(c[q], prn_tensor_uniform(c[q], PRN_F32, dy, sy, -1.0, 1.0, &R));
        }
        PRNT_OK(c[q], prn_mul(c[q], y, R, &p));
        PRNT_OK(c[q], prn_sum(c[q], p, PRN_ALL_AXES, 0, &loss));
        PRNT_OK(c[q], prn_backward(c[q], loss));
        na = prn_tensor_numel(a);
        nb = prn_tensor_numel(b);
        ny = prn_tensor_numel(y);
        out[q][0] = (float *)malloc(ny * sizeof(float));
        out[q][1] = (float *)malloc(na * sizeof(float));
        out[q][2] = (float *)malloc(nb * sizeof(float));
        if (!out[q][0] || !out[q][1] || !out[q][2] || !prn_tensor_grad(a) || !prn_tensor_grad(b)) {
            PRNT_CHECK(0, "gradients or memory missing");
            goto next;
        }
        PRNT_OK(c[q], prn_tensor_download(y, out[q][0], ny));
        PRNT_OK(c[q], prn_tensor_download(prn_tensor_grad(a), out[q][1], na));
        PRNT_OK(c[q], prn_tensor_download(prn_tensor_grad(b), out[q][2], nb));
    next:
        prn_tape_clear(c[q]);
        prn_tensor_free(loss);
        prn_tensor_free(p);
        prn_tensor_free(R);
        prn_tensor_free(y);
        prn_tensor_free(a);
        prn_tensor_free(b);
    }
    for (w = 0; w < 3; ++w) {
        size_t n = w == 0 ? ny : w == 1 ? na : nb;
        double md = 0, mv;
        if (!out[0][w] || !out[1][w]) continue;
        mv = max_abs(out[1][w], n);
        for (i = 0; i < n; ++i) {
            double d = fabs((double)out[0][w][i] - (double)out[1][w][i]);
            if (d > md || d != d) md = d != d ? 1e300 : d;
        }
        PRNT_CHECK(md <= 2e-5 * (mv + 1e-30),
                   "%s of batch %lu/%lu M %lu N %lu K %lu ta %d tb %d: max |diff| %.3g, max |value| %.3g",
                   w == 0 ? "product" : w == 1 ? "d a" : "d b", (unsigned long)batch_a, (unsigned long)batch_b,
                   (unsigned long)M, (unsigned long)N, (unsigned long)K, ta, tb, md, mv);
    }
done:
    for (q = 0; q < 2; ++q)
        for (w = 0; w < 3; ++w) free(out[q][w]);
    prn_context_free(c[0]);
    prn_context_free(c[1]);
}

static void test_transposes(void) {
    int ta, tb;
    for (ta = 0; ta < 2; ++ta)
        for (tb = 0; tb < 2; ++tb) {
            check_case(0, 0, 300, 37, 70, ta, tb);   /* N below one block of 16, rows past 4 tasks of 64 */
            check_case(0, 0, 129, 1040, 64, ta, tb); /* an input projection's shape (N = 4 H + 16) */
            check_case(0, 0, 3, 5, 9, ta, tb);       /* below the size the AVX2 kernel takes */
        }
    /* A^T B with B read in place (N a multiple of 16, rows of 128 floats at
     * most), rows past a multiple of 8: a weight gradient's shape */
    check_case(0, 0, 100, 128, 3000, 1, 0);
    check_case(0, 0, 256, 48, 2500, 1, 0);
}

static void test_batched(void) {
    check_case(3, 3, 70, 33, 40, 0, 0);
    check_case(3, 0, 70, 33, 40, 0, 1); /* one b for every a */
    check_case(0, 4, 66, 48, 65, 0, 0); /* one a for every b */
}

/* A weight gradient's product, A^T B with K the batch rows times the steps
 * (an LSTM training step's X^T dQ, bench_contended's shape): the same bits
 * with 1 and 2 threads on the reference backend, whose threads then follow
 * the machine's load (prn__team) -- where OpenBLAS runs SSE3 kernels, the
 * built-in AVX2 kernel; elsewhere CBLAS on one thread or two, which need
 * not agree, so there it is only checked against the plain loops. */
static void run_tn(const char *backend, int threads, float *y) {
    prn_config cfg;
    prn_context *ctx = NULL;
    prn_tensor *a = NULL, *b = NULL, *p = NULL;
    size_t sa[2] = {2048, 256}, sb[2] = {2048, 64};
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = backend;
    cfg.seed = 3;
    cfg.num_threads = threads;
    if (prn_context_create(&cfg, &ctx, NULL, 0) != PRN_OK) { PRNT_CHECK(0, "context %s", backend); return; }
    PRNT_OK(ctx, prn_tensor_uniform(ctx, PRN_F32, 2, sa, -1.0, 1.0, &a));
    PRNT_OK(ctx, prn_tensor_uniform(ctx, PRN_F32, 2, sb, -1.0, 1.0, &b));
    PRNT_OK(ctx, prn_matmul_ex(ctx, a, 1, b, 0, &p));
    if (p) PRNT_OK(ctx, prn_tensor_download(p, y, 256 * 64));
    prn_tensor_free(p);
    prn_tensor_free(a);
    prn_tensor_free(b);
    prn_context_free(ctx);
}
static void test_weight_gradient_threads(void) {
    static float y1[256 * 64], y2[256 * 64], yl[256 * 64];
    size_t i, diff = 0;
    double md = 0, mv;
    /* one kernel whose entries are each one chain over K: without CBLAS
     * (the panel GEMM, or the plain loops without AVX2), or OpenBLAS's SSE3
     * kernels replaced by the panel GEMM */
    int one_kernel = 1;
#ifdef PARRNN_USE_CBLAS
    const char *core = "";
#ifdef OPENBLAS_VERSION
    core = openblas_get_corename();
#endif
    one_kernel = strcmp(core, "Prescott") == 0;
#endif
    run_tn("reference", 1, y1);
    run_tn("reference", 2, y2);
    run_tn("reference-noblas", 1, yl);
    mv = max_abs(yl, 256 * 64);
    for (i = 0; i < 256 * 64; ++i) {
        const double d = fabs((double)y1[i] - (double)yl[i]);
        diff += memcmp(&y1[i], &y2[i], sizeof(float)) != 0;
        if (d > md || d != d) md = d != d ? 1e300 : d;
    }
    PRNT_CHECK(md <= 2e-5 * (mv + 1e-30), "A^T B 2048 x 256 x 64: max |diff| %.3g to the plain loops, max |value| %.3g",
               md, mv);
    if (one_kernel)
        PRNT_CHECK(diff == 0, "A^T B 2048 x 256 x 64: %lu of %d values differ between 1 and 2 threads",
                   (unsigned long)diff, 256 * 64);
}

int main(void) {
    PRNT_RUN(test_transposes);
    PRNT_RUN(test_batched);
    PRNT_RUN(test_weight_gradient_threads);
    return prnt_summary();
}
