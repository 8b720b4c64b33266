/* gpu_probe: small cases of every kernel family of a device backend,
 * each run on the device and on the reference backend from the same
 * inputs and compared. Small enough for compute-sanitizer (memcheck,
 * racecheck, synccheck): that is what tools/gpu_check.sh runs it under;
 * the conformance test and test_cuda check the same kernels at length.
 *
 *   gpu_probe [--backend NAME]     NAME: default $PARRNN_BACKEND, else "cuda"
 *
 * Families: the diagonal scan (look-back over many tiles, chunked,
 * sequential; reverse, h0), block and dense scans, GEMM (plain and
 * transposed), elementwise ops with broadcasting, reductions (sum, max,
 * argmax, softmax, log-softmax), copies (transpose, concat, slice), the
 * fused Elman/LSTM/GRU layers forward and backward (parameter gradients),
 * and DEER (dense, block, diagonal Jacobians).
 *
 * Prints "ok"/"FAIL" per case and "gpu_probe: N checks, F failed"; exits 1
 * when a check failed, 2 when the backend cannot be created, 0 otherwise.
 * Build: make build/tools/gpu_probe (or the GPU bundle, make gpu-bundle). */
#include "parrnn.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAP 400000 /* outputs compared per case, at most */

static int g_checks, g_failed;
static uint64_t g_rng;

static double urand(double lo, double hi) { /* a fixed sequence per case: both backends get the same inputs */
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}

static prn_tensor *rnd(prn_context *ctx, prn_dtype dt, int nd, const size_t *shape, double lo, double hi) {
    size_t n = 1, i;
    int d;
    double *v;
    prn_tensor *t = NULL;
    for (d = 0; d < nd; ++d) n *= shape[d];
    v = (double *)malloc((n ? n : 1) * sizeof *v);
    if (!v) return NULL;
    for (i = 0; i < n; ++i) v[i] = urand(lo, hi);
    if (prn_tensor_create(ctx, dt, nd, shape, &t) == PRN_OK) {
        if (dt == PRN_F32) {
            float *f = (float *)malloc((n ? n : 1) * sizeof *f);
            for (i = 0; f && i < n; ++i) f[i] = (float)v[i];
            if (!f || prn_tensor_upload(t, f, n) != PRN_OK) { prn_tensor_free(t); t = NULL; }
            free(f);
        } else if (prn_tensor_upload(t, v, n) != PRN_OK) {
            prn_tensor_free(t);
            t = NULL;
        }
    }
    free(v);
    return t;
}

/* Appends t's values (as doubles) to out[*n ..]; 0 on failure. */
static int take(const prn_tensor *t, double *out, size_t *n) {
    size_t m = t ? prn_tensor_numel(t) : 0, i;
    if (!t || *n + m > CAP) return 0;
    if (prn_tensor_dtype(t) == PRN_F64) {
        if (prn_tensor_download(t, out + *n, m) != PRN_OK) return 0;
    } else if (prn_tensor_dtype(t) == PRN_I32) {
        int32_t *q = (int32_t *)malloc((m ? m : 1) * sizeof *q);
        if (!q || prn_tensor_download(t, q, m) != PRN_OK) { free(q); return 0; }
        for (i = 0; i < m; ++i) out[*n + i] = q[i];
        free(q);
    } else {
        float *f = (float *)malloc((m ? m : 1) * sizeof *f);
        if (!f || prn_tensor_download(t, f, m) != PRN_OK) { free(f); return 0; }
        for (i = 0; i < m; ++i) out[*n + i] = f[i];
        free(f);
    }
    *n += m;
    return 1;
}

typedef struct probe_case {
    const char *name;
    prn_dtype dt;
    int a, b, c, d; /* the case's parameters */
} probe_case;

/* Each family: computes its outputs on ctx into out; 0 on failure. */
typedef int (*family_fn)(prn_context *ctx, const probe_case *pc, double *out, size_t *n);

static int fam_scan_diag(prn_context *ctx, const probe_case *pc, double *out, size_t *n) {
    size_t sh[3], s0[2];
    prn_tensor *a, *b, *h0 = NULL, *h = NULL;
    int ok;
    sh[0] = (size_t)pc->a; sh[1] = (size_t)pc->b; sh[2] = (size_t)pc->c;
    s0[0] = sh[0]; s0[1] = sh[2];
    a = rnd(ctx, pc->dt, 3, sh, 0.5, 0.999);
    b = rnd(ctx, pc->dt, 3, sh, -1, 1);
    if (pc->d & 2) h0 = rnd(ctx, pc->dt, 2, s0, -1, 1);
    ok = a && b && (!(pc->d & 2) || h0) &&
         prn_scan_diag(ctx, a, b, h0, pc->d & 1, (prn_scan_algo)(pc->d >> 2), &h) == PRN_OK && take(h, out, n);
    prn_tensor_free(a); prn_tensor_free(b); prn_tensor_free(h0); prn_tensor_free(h);
    return ok;
}

static int fam_scan_block(prn_context *ctx, const probe_case *pc, double *out, size_t *n) {
    const size_t k = (size_t)pc->d;
    size_t sa[4], sb[3];
    prn_tensor *a, *b, *h = NULL;
    int ok;
    sa[0] = sb[0] = (size_t)pc->a; sa[1] = sb[1] = (size_t)pc->b; sa[2] = sb[2] = (size_t)pc->c; sa[3] = k;
    a = rnd(ctx, pc->dt, 4, sa, -0.9 / (double)k, 0.9 / (double)k); /* contracting: rows sum below 0.9 */
    b = rnd(ctx, pc->dt, 3, sb, -1, 1);
    ok = a && b && prn_scan_block(ctx, a, b, NULL, 0, PRN_SCAN_AUTO, &h) == PRN_OK && take(h, out, n);
    prn_tensor_free(a); prn_tensor_free(b); prn_tensor_free(h);
    return ok;
}

static int fam_matmul(prn_context *ctx, const probe_case *pc, double *out, size_t *n) {
    size_t sa[2], sb[2];
    prn_tensor *a, *b, *c = NULL, *ct = NULL;
    int ok;
    sa[0] = (size_t)pc->a; sa[1] = (size_t)pc->b; sb[0] = (size_t)pc->b; sb[1] = (size_t)pc->c;
    a = rnd(ctx, pc->dt, 2, sa, -1, 1);
    b = rnd(ctx, pc->dt, 2, sb, -1, 1);
    ok = a && b && prn_matmul(ctx, a, b, &c) == PRN_OK && take(c, out, n) &&
         prn_matmul_ex(ctx, b, 1, a, 1, &ct) == PRN_OK && take(ct, out, n); /* b^T a^T = (a b)^T */
    prn_tensor_free(a); prn_tensor_free(b); prn_tensor_free(c); prn_tensor_free(ct);
    return ok;
}

static int fam_elementwise(prn_context *ctx, const probe_case *pc, double *out, size_t *n) {
    size_t sa[3], sb[3];
    prn_tensor *a, *b, *r[9] = {NULL};
    int ok, i;
    sa[0] = (size_t)pc->a; sa[1] = 1; sa[2] = (size_t)pc->c;
    sb[0] = 1; sb[1] = (size_t)pc->b; sb[2] = (size_t)pc->c;
    a = rnd(ctx, pc->dt, 3, sa, -2, 2);
    b = rnd(ctx, pc->dt, 3, sb, 0.5, 2);
    ok = a && b && prn_add(ctx, a, b, &r[0]) == PRN_OK && prn_mul(ctx, a, b, &r[1]) == PRN_OK &&
         prn_div(ctx, a, b, &r[2]) == PRN_OK && prn_sub(ctx, b, a, &r[3]) == PRN_OK &&
         prn_exp(ctx, r[0], &r[4]) == PRN_OK && prn_tanh(ctx, r[1], &r[5]) == PRN_OK &&
         prn_sigmoid(ctx, r[2], &r[6]) == PRN_OK && prn_relu(ctx, r[3], &r[7]) == PRN_OK &&
         prn_pow_scalar(ctx, b, 1.5, &r[8]) == PRN_OK;
    for (i = 4; ok && i < 9; ++i) ok = take(r[i], out, n);
    prn_tensor_free(a); prn_tensor_free(b);
    for (i = 0; i < 9; ++i) prn_tensor_free(r[i]);
    return ok;
}

static int fam_reduce(prn_context *ctx, const probe_case *pc, double *out, size_t *n) {
    size_t sh[3];
    prn_tensor *x, *r[6] = {NULL};
    int ok, i;
    sh[0] = (size_t)pc->a; sh[1] = (size_t)pc->b; sh[2] = (size_t)pc->c;
    x = rnd(ctx, pc->dt, 3, sh, -3, 3);
    ok = x && prn_sum(ctx, x, 1, 0, &r[0]) == PRN_OK && prn_max(ctx, x, 2, 0, &r[1]) == PRN_OK &&
         prn_argmax(ctx, x, 1, 0, &r[2]) == PRN_OK && prn_softmax(ctx, x, 2, &r[3]) == PRN_OK &&
         prn_log_softmax(ctx, x, 1, &r[4]) == PRN_OK && prn_mean(ctx, x, 0, 1, &r[5]) == PRN_OK;
    for (i = 0; ok && i < 6; ++i) ok = take(r[i], out, n);
    prn_tensor_free(x);
    for (i = 0; i < 6; ++i) prn_tensor_free(r[i]);
    return ok;
}

static int fam_copy(prn_context *ctx, const probe_case *pc, double *out, size_t *n) {
    size_t sh[3];
    prn_tensor *x, *y, *r[3] = {NULL};
    int ok, i;
    sh[0] = (size_t)pc->a; sh[1] = (size_t)pc->b; sh[2] = (size_t)pc->c;
    x = rnd(ctx, pc->dt, 3, sh, -1, 1);
    y = rnd(ctx, pc->dt, 3, sh, -1, 1);
    ok = x && y && prn_transpose(ctx, x, 0, 2, &r[0]) == PRN_OK && prn_concat(ctx, x, y, 1, &r[1]) == PRN_OK &&
         prn_slice(ctx, r[1], 1, 1, sh[1], &r[2]) == PRN_OK;
    for (i = 0; ok && i < 3; ++i) ok = take(r[i], out, n);
    prn_tensor_free(x); prn_tensor_free(y);
    for (i = 0; i < 3; ++i) prn_tensor_free(r[i]);
    return ok;
}

/* An RNN of kind pc->d with weights from the host sequence (so both
 * backends have the same ones): forward, then the gradients of sum(y). */
static int make_rnn(prn_context *ctx, const probe_case *pc, size_t I, size_t H, prn_rnn **rnn) {
    prn_rnn_config cfg;
    prn_tensor *p[64];
    int np, i;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = (prn_rnn_kind)pc->d;
    cfg.dtype = pc->dt;
    cfg.input_size = I;
    cfg.hidden_size = H;
    if (prn_rnn_create(ctx, &cfg, rnn) != PRN_OK) return 0;
    np = prn_rnn_params(*rnn, p, 64);
    for (i = 0; i < np; ++i) {
        size_t m = prn_tensor_numel(p[i]), j;
        double *v = (double *)malloc(m * sizeof *v);
        float *f = (float *)malloc(m * sizeof *f);
        int ok = v && f;
        for (j = 0; ok && j < m; ++j) f[j] = (float)(v[j] = urand(-0.5, 0.5));
        ok = ok && prn_tensor_upload(p[i], pc->dt == PRN_F64 ? (const void *)v : (const void *)f, m) == PRN_OK;
        free(v); free(f);
        if (!ok) return 0;
    }
    return 1;
}

static int fam_rnn(prn_context *ctx, const probe_case *pc, double *out, size_t *n) {
    const size_t B = (size_t)pc->a, T = (size_t)pc->b, I = 5, H = (size_t)pc->c;
    size_t sx[3];
    prn_rnn *rnn = NULL;
    prn_tensor *x = NULL, *y = NULL, *s = NULL, *p[64];
    int ok, np, i;
    sx[0] = B; sx[1] = T; sx[2] = I;
    ok = make_rnn(ctx, pc, I, H, &rnn) && (x = rnd(ctx, pc->dt, 3, sx, -1, 1)) != NULL &&
         prn_rnn_forward(ctx, rnn, x, NULL, &y, NULL) == PRN_OK && take(y, out, n) &&
         prn_sum(ctx, y, PRN_ALL_AXES, 0, &s) == PRN_OK && prn_backward(ctx, s) == PRN_OK;
    np = ok ? prn_rnn_params(rnn, p, 64) : 0;
    for (i = 0; ok && i < np; ++i) ok = take(prn_tensor_grad(p[i]), out, n);
    prn_tape_clear(ctx);
    prn_tensor_free(x); prn_tensor_free(y); prn_tensor_free(s);
    prn_rnn_free(rnn);
    return ok;
}

static int fam_deer(prn_context *ctx, const probe_case *pc, double *out, size_t *n) {
    const size_t B = (size_t)pc->a, T = (size_t)pc->b, I = 3, H = (size_t)pc->c;
    size_t sx[3];
    prn_rnn *rnn = NULL;
    prn_tensor *x = NULL, *y = NULL;
    prn_deer_options o;
    probe_case gru = *pc;
    int ok;
    memset(&o, 0, sizeof o);
    o.mode = (prn_jacobian_mode)pc->d;
    gru.d = PRN_RNN_GRU;
    sx[0] = B; sx[1] = T; sx[2] = I;
    prn_no_grad_begin(ctx);
    ok = make_rnn(ctx, &gru, I, H, &rnn) && (x = rnd(ctx, pc->dt, 3, sx, -1, 1)) != NULL &&
         prn_deer_rnn(ctx, rnn, x, NULL, &o, &y, NULL, NULL) == PRN_OK && take(y, out, n);
    prn_no_grad_end(ctx);
    prn_tensor_free(x); prn_tensor_free(y);
    prn_rnn_free(rnn);
    return ok;
}

typedef struct family {
    family_fn fn;
    probe_case c;
} family;

int main(int argc, char **argv) {
    static double want[CAP], got[CAP];
    const char *dev = getenv("PARRNN_BACKEND");
    prn_config cfg;
    prn_context *dctx = NULL, *rctx = NULL;
    char err[512];
    size_t k;
    const family fams[] = {
        /* scan_diag: a = B, b = T, c = C, d = reverse | 2 h0 | algo << 2 */
        {fam_scan_diag, {"scan_diag auto look-back", PRN_F32, 1, 40000, 3, 2 | (PRN_SCAN_AUTO << 2)}},
        {fam_scan_diag, {"scan_diag auto reverse", PRN_F32, 2, 4000, 40, 1 | (PRN_SCAN_AUTO << 2)}},
        /* 100 chains of 3 tiles: the third starts from the first's state (D = 2) */
        {fam_scan_diag, {"scan_diag auto f64 states", PRN_F64, 1, 900, 400, 3 | (PRN_SCAN_AUTO << 2)}},
        {fam_scan_diag, {"scan_diag auto f64 h0", PRN_F64, 1, 20000, 9, 2 | (PRN_SCAN_AUTO << 2)}},
        {fam_scan_diag, {"scan_diag auto wide", PRN_F32, 8, 150, 300, 2 | (PRN_SCAN_AUTO << 2)}},
        {fam_scan_diag, {"scan_diag chunked", PRN_F32, 1, 20000, 5, 3 | (PRN_SCAN_CHUNKED << 2)}},
        {fam_scan_diag, {"scan_diag sequential", PRN_F32, 4, 500, 64, PRN_SCAN_SEQUENTIAL << 2}},
        {fam_scan_diag, {"scan_diag tree", PRN_F64, 2, 3000, 4, 1 | (PRN_SCAN_TREE << 2)}},
        /* scan_block: d = k */
        {fam_scan_block, {"scan_block k=2", PRN_F32, 2, 3000, 8, 2}},
        {fam_scan_block, {"scan_block k=4 f64", PRN_F64, 1, 2000, 8, 4}},
        {fam_scan_block, {"scan_block dense k=16", PRN_F32, 2, 1500, 16, 16}},
        {fam_scan_block, {"scan_block dense k=64", PRN_F32, 1, 300, 64, 64}},
        {fam_matmul, {"matmul 33x47x29", PRN_F32, 33, 47, 29, 0}},
        {fam_matmul, {"matmul f64 70x5x90", PRN_F64, 70, 5, 90, 0}},
        {fam_elementwise, {"elementwise broadcast", PRN_F32, 7, 13, 33, 0}},
        {fam_elementwise, {"elementwise broadcast f64", PRN_F64, 3, 5, 300, 0}},
        {fam_reduce, {"reductions", PRN_F32, 5, 37, 19, 0}},
        {fam_reduce, {"reductions f64 long", PRN_F64, 2, 3000, 3, 0}},
        {fam_copy, {"transpose concat slice", PRN_F32, 6, 7, 9, 0}},
        /* rnn: a = B, b = T, c = H, d = kind */
        {fam_rnn, {"elman layer fwd+bwd", PRN_F32, 3, 30, 16, PRN_RNN_ELMAN}},
        {fam_rnn, {"lstm layer fwd+bwd", PRN_F32, 3, 30, 16, PRN_RNN_LSTM}},
        {fam_rnn, {"gru layer fwd+bwd", PRN_F32, 3, 30, 16, PRN_RNN_GRU}},
        {fam_rnn, {"gru layer fwd+bwd f64", PRN_F64, 2, 20, 9, PRN_RNN_GRU}},
        /* deer: d = Jacobian mode */
        {fam_deer, {"deer gru dense", PRN_F32, 2, 2000, 4, PRN_JACOBIAN_DENSE}},
        {fam_deer, {"deer gru diag", PRN_F32, 2, 2000, 4, PRN_JACOBIAN_DIAG}},
        {fam_deer, {"deer gru dense f64", PRN_F64, 1, 1000, 3, PRN_JACOBIAN_DENSE}},
        /* S 12: deer.cu's larger room; S 20: declined, composed from scans */
        {fam_deer, {"deer gru dense 12", PRN_F32, 3, 1500, 12, PRN_JACOBIAN_DENSE}},
        {fam_deer, {"deer gru dense 20 (composed)", PRN_F32, 2, 300, 20, PRN_JACOBIAN_DENSE}},
    };
    if (argc == 3 && strcmp(argv[1], "--backend") == 0) dev = argv[2];
    else if (argc != 1) {
        fprintf(stderr, "usage: gpu_probe [--backend NAME]\n");
        return 2;
    }
    if (!dev || !*dev) dev = "cuda";
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = 7;
    cfg.backend = dev;
    if (prn_context_create(&cfg, &dctx, err, sizeof err) != PRN_OK) {
        printf("gpu_probe: no context on backend %s: %s\n", dev, err);
        return 2;
    }
    cfg.backend = "reference";
    if (prn_context_create(&cfg, &rctx, err, sizeof err) != PRN_OK) {
        printf("gpu_probe: no reference context: %s\n", err);
        prn_context_free(dctx);
        return 2;
    }
    printf("gpu_probe: backend %s (%s) against reference\n", prn_context_backend_name(dctx),
           prn_context_device(dctx) ? prn_context_device(dctx) : "device not named");
    for (k = 0; k < sizeof fams / sizeof fams[0]; ++k) {
        const probe_case *pc = &fams[k].c;
        size_t nw = 0, ng = 0, i;
        double worst = 0, scale = 0;
        int okw, okg;
        g_rng = 0x9e3779b97f4a7c15ull + k;
        okw = fams[k].fn(rctx, pc, want, &nw);
        g_rng = 0x9e3779b97f4a7c15ull + k;
        okg = fams[k].fn(dctx, pc, got, &ng);
        g_checks++;
        if (!okw || !okg || nw != ng) {
            g_failed++;
            printf("FAIL %-28s %s: %s\n", pc->name, !okw ? "reference" : dev,
                   !okw ? prn_last_error(rctx) : !okg ? prn_last_error(dctx) : "output sizes differ");
            continue;
        }
        for (i = 0; i < nw; ++i)
            if (fabs(want[i]) > scale) scale = fabs(want[i]);
        /* per value: relative, plus absolute against the case's scale (f32:
         * sums over up to a few thousand terms in another order) */
        for (i = 0; i < nw; ++i) {
            const double tol = pc->dt == PRN_F64 ? 1e-9 * fabs(want[i]) + 1e-10 * (1 + scale)
                                                 : 1e-3 * fabs(want[i]) + 1e-4 * (1 + scale);
            const double r = fabs(got[i] - want[i]) / tol;
            if (!(r <= worst)) worst = r; /* NaN counts as worst */
        }
        if (!(worst <= 1)) g_failed++;
        printf("%s %-28s %8lu values, worst |diff| / tolerance %.3g\n", worst <= 1 ? "ok  " : "FAIL", pc->name,
               (unsigned long)nw, worst);
        fflush(stdout);
    }
    printf("gpu_probe: %d checks, %d failed\n", g_checks, g_failed);
    prn_context_free(dctx);
    prn_context_free(rctx);
    return g_failed ? 1 : 0;
}
