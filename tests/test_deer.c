/* DEER (prn_deer, prn_deer_rnn): every cell and Jacobian mode against
 * sequential evaluation (prn_rnn_forward) for T from 1 to 10^5, gradients
 * against backpropagation through time, user cells given as callbacks,
 * non-convergence and its fall-back, damping and the trust region, NaN
 * handling, warm starts, statistics and bad input. Runs on every backend
 * (PARRNN_BACKEND); the longest sequences only where the backend is fast. */
#include "../parrnn.h"
#include "prn_test.h"

static prn_context *g_ctx;
static int g_slow;  /* a backend other than the reference (PoCL on a CPU): shorter long sequences */
static int g_quick; /* PRNT_QUICK (valgrind, sanitizers): shorter sequences everywhere */

static const prn_rnn_kind k_all[] = {PRN_RNN_ELMAN, PRN_RNN_LSTM, PRN_RNN_GRU, PRN_RNN_MHGRU, PRN_RNN_PLRNN,
                                     PRN_RNN_SHPLRNN, PRN_RNN_CLIPPED_SHPLRNN, PRN_RNN_ALRNN};
#define NKINDS ((int)(sizeof k_all / sizeof k_all[0]))
static const char *mode_name(prn_jacobian_mode m) {
    return m == PRN_JACOBIAN_DENSE ? "dense" : m == PRN_JACOBIAN_BLOCK ? "block" : "diag";
}

static prn_rnn_config cfg_of(prn_rnn_kind kind, prn_dtype dt, size_t NI, size_t H, int layers, int bidir) {
    prn_rnn_config c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.dtype = dt;
    c.input_size = NI;
    c.hidden_size = H;
    c.num_layers = layers;
    c.bidirectional = bidir;
    if (kind == PRN_RNN_MHGRU) c.num_heads = 2;
    if (kind == PRN_RNN_SHPLRNN || kind == PRN_RNN_CLIPPED_SHPLRNN) c.shallow_size = 6;
    if (kind == PRN_RNN_ALRNN) c.num_relu = H / 2;
    return c;
}
static void rand_fill(double *v, size_t n, unsigned *seed, double scale) {
    size_t i;
    for (i = 0; i < n; ++i) {
        *seed = *seed * 1103515245u + 12345u;
        v[i] = scale * (((*seed >> 8) & 0xffff) / 32768.0 - 1.0);
    }
}
static prn_tensor *rand_tensor(prn_dtype dt, int nd, size_t d0, size_t d1, size_t d2, unsigned *seed, double scale) {
    size_t shape[3], n = d0 * (nd > 1 ? d1 : 1) * (nd > 2 ? d2 : 1);
    prn_tensor *t = NULL;
    double *v = (double *)malloc((n ? n : 1) * sizeof *v);
    shape[0] = d0; shape[1] = d1; shape[2] = d2;
    rand_fill(v, n, seed, scale);
    if (prn_tensor_create(g_ctx, dt, nd, shape, &t) == PRN_OK && n) prnt_upload_f64(t, v);
    free(v);
    return t;
}
static double *host_of(const prn_tensor *t) {
    size_t n = t ? prn_tensor_numel(t) : 0;
    double *v = (double *)calloc(n ? n : 1, sizeof *v);
    if (t) prnt_download_f64(t, v);
    return v;
}
/* largest |a - b|, NaN as infinite */
static double max_diff(const prn_tensor *a, const prn_tensor *b) {
    double *x, *y, m = 0;
    size_t i, n;
    if (!a || !b || prn_tensor_numel(a) != prn_tensor_numel(b)) return HUGE_VAL;
    n = prn_tensor_numel(a);
    x = host_of(a); y = host_of(b);
    for (i = 0; i < n; ++i) {
        double d = fabs(x[i] - y[i]);
        if (!(d <= m)) m = d == d ? d : HUGE_VAL;
    }
    free(x); free(y);
    return m;
}
/* Scales every parameter of r by s (larger weights: harder, or chaotic). */
static void scale_params(prn_rnn *r, double s) {
    prn_tensor *p[64];
    int n = prn_rnn_params(r, p, 64), i;
    for (i = 0; i < n; ++i) {
        double *v = host_of(p[i]);
        size_t j, m = prn_tensor_numel(p[i]);
        for (j = 0; j < m; ++j) v[j] *= s;
        prnt_upload_f64(p[i], v);
        free(v);
    }
}

/* prn_deer_rnn against prn_rnn_forward; returns the largest deviation of y
 * and the final state; stats out. */
static double deer_vs_seq(prn_rnn *r, prn_tensor *x, prn_tensor *s0, const prn_deer_options *o, prn_deer_stats *st) {
    prn_tensor *y1 = NULL, *f1 = NULL, *y2 = NULL, *f2 = NULL;
    double e, e2;
    prn_no_grad_begin(g_ctx);
    PRNT_OK(g_ctx, prn_rnn_forward(g_ctx, r, x, s0, &y1, &f1));
    PRNT_OK(g_ctx, prn_deer_rnn(g_ctx, r, x, s0, o, &y2, &f2, st));
    prn_no_grad_end(g_ctx);
    e = max_diff(y2, y1);
    e2 = max_diff(f2, f1);
    prn_tensor_free(y1); prn_tensor_free(f1); prn_tensor_free(y2); prn_tensor_free(f2);
    return e > e2 ? e : e2;
}

/* --- every cell, mode and dtype equals sequential evaluation ---------------- */
static void test_equals_sequential(void) {
    static const size_t Ts[] = {1, 2, 17, 300};
    int kk, m, d, ti, worst_it = 0;
    for (d = 0; d < 2; ++d)
        for (kk = 0; kk < NKINDS; ++kk) {
            prn_dtype dt = d ? PRN_F64 : PRN_F32;
            prn_rnn_config c = cfg_of(k_all[kk], dt, 3, 4, 1, 0);
            prn_rnn *r = NULL;
            unsigned seed = 11u + (unsigned)kk;
            PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
            if (!r) return;
            /* the PLRNN family's initialisation can give growing trajectories, for which Newton
             * needs about T iterations (and then falls back): test it on contracting ones */
            if (c.kind >= PRN_RNN_PLRNN) scale_params(r, 0.5);
            for (ti = 0; ti < 4; ++ti)
                for (m = 0; m < 3; ++m) {
                    size_t B = 3, T = g_quick && Ts[ti] > 40 ? 40 : Ts[ti], S = prn_rnn_state_size(r);
                    prn_tensor *x = rand_tensor(dt, 3, B, T, 3, &seed, 1.0);
                    prn_tensor *s0 = ti == 2 ? NULL : rand_tensor(dt, 3, 1, B, S, &seed, 0.5);
                    prn_deer_options o;
                    prn_deer_stats st;
                    double e, tol = d ? 1e-9 : 1e-4;
                    memset(&o, 0, sizeof o);
                    o.mode = (prn_jacobian_mode)m;
                    memset(&st, 0, sizeof st);
                    e = deer_vs_seq(r, x, s0, &o, &st);
                    PRNT_CHECK(e <= tol, "%s %s %s T=%lu: deviation %g (iterations %d, converged %d, fell back %d)",
                               prn_rnn_kind_name(c.kind), prn_dtype_name(dt), mode_name(o.mode), (unsigned long)T, e,
                               st.iterations, st.converged, st.fell_back);
                    PRNT_CHECK(st.converged && !st.fell_back && !st.nonfinite && st.residual <= 1,
                               "%s %s %s T=%lu: converged %d fell back %d residual %g", prn_rnn_kind_name(c.kind),
                               prn_dtype_name(dt), mode_name(o.mode), (unsigned long)T, st.converged, st.fell_back,
                               st.residual);
                    if (o.mode != PRN_JACOBIAN_DIAG) /* Newton: exact after k iterations for the first k steps */
                        PRNT_CHECK(st.iterations <= (int)T + 1, "%s: %d iterations for T = %lu", prn_rnn_kind_name(c.kind),
                                   st.iterations, (unsigned long)T);
                    if (st.iterations > worst_it) worst_it = st.iterations;
                    prn_tensor_free(x); prn_tensor_free(s0);
                }
            prn_rnn_free(r);
        }
    printf("    most iterations: %d\n", worst_it);
}

/* --- long sequences: T = 10^5 (10^4 on slow backends) ------------------------ */
static void test_long(void) {
    int d, m, kk;
    size_t T = g_quick ? 1000 : g_slow ? 10000 : 100000;
    static const prn_rnn_kind kinds[] = {PRN_RNN_GRU, PRN_RNN_MHGRU, PRN_RNN_LSTM};
    for (kk = 0; kk < 3; ++kk)
        for (d = 0; d < 2; ++d)
            for (m = 0; m < 3; m += 2) {
                prn_dtype dt = d ? PRN_F64 : PRN_F32;
                prn_rnn_config c = cfg_of(kinds[kk], dt, 2, 4, 1, 0);
                prn_rnn *r = NULL;
                unsigned seed = 5u + (unsigned)(d * 3 + m);
                prn_tensor *x;
                prn_deer_options o;
                prn_deer_stats st;
                double e, tol = d ? 1e-9 : 1e-4;
                PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
                if (!r) return;
                x = rand_tensor(dt, 3, 2, T, 2, &seed, 1.0);
                memset(&o, 0, sizeof o);
                o.mode = (prn_jacobian_mode)m;
                e = deer_vs_seq(r, x, NULL, &o, &st);
                PRNT_CHECK(e <= tol && st.converged && !st.fell_back, "%s %s %s T=%lu: deviation %g, iterations %d, converged %d",
                           prn_rnn_kind_name(c.kind), prn_dtype_name(dt), mode_name(o.mode), (unsigned long)T, e,
                           st.iterations, st.converged);
                printf("    %s %s %s T=%lu: %d iterations, deviation %.2g\n", prn_rnn_kind_name(c.kind), prn_dtype_name(dt),
                       mode_name(o.mode), (unsigned long)T, st.iterations, e);
                prn_tensor_free(x);
                prn_rnn_free(r);
            }
}

/* --- stacked and bidirectional networks --------------------------------------- */
static void test_layers_directions(void) {
    static const prn_rnn_kind kinds[] = {PRN_RNN_GRU, PRN_RNN_LSTM, PRN_RNN_MHGRU, PRN_RNN_ELMAN};
    int kk, batched;
    for (kk = 0; kk < 4; ++kk)
        for (batched = 0; batched < 2; ++batched) {
            prn_rnn_config c = cfg_of(kinds[kk], PRN_F64, 3, 4, 2, 1);
            prn_rnn *r = NULL;
            unsigned seed = 3u + (unsigned)kk;
            prn_tensor *x, *s0;
            prn_deer_stats st;
            double e;
            PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
            if (!r) return;
            if (batched) {
                x = rand_tensor(PRN_F64, 3, 2, 40, 3, &seed, 1.0);
                s0 = rand_tensor(PRN_F64, 3, 4, 2, prn_rnn_state_size(r), &seed, 0.5);
            } else {
                x = rand_tensor(PRN_F64, 2, 40, 3, 0, &seed, 1.0);
                s0 = rand_tensor(PRN_F64, 2, 4, prn_rnn_state_size(r), 0, &seed, 0.5);
            }
            e = deer_vs_seq(r, x, s0, NULL, &st);
            PRNT_CHECK(e <= 1e-9 && st.converged, "%s 2 layers, bidirectional%s: deviation %g, converged %d",
                       prn_rnn_kind_name(c.kind), batched ? "" : ", unbatched", e, st.converged);
            prn_tensor_free(x); prn_tensor_free(s0);
            prn_rnn_free(r);
        }
}

/* --- gradients against BPTT ----------------------------------------------------- */
/* loss = sum(y * Ry) + sum(state * Rs) by DEER (use_deer) or sequentially;
 * the gradients of every parameter, x and state0 go to g (host, in order). */
static int grads_of(prn_rnn *r, int use_deer, const prn_deer_options *o, prn_tensor *x, prn_tensor *s0, prn_tensor *Ry,
                    prn_tensor *Rs, double *g, double *loss) {
    prn_tensor *y = NULL, *f = NULL, *a = NULL, *b = NULL, *sa = NULL, *sb = NULL, *l = NULL, *p[64];
    int np = prn_rnn_params(r, p, 64), i, n = 0;
    prn_status s;
    for (i = 0; i < np; ++i) prn_tensor_zero_grad(p[i]);
    prn_tensor_zero_grad(x);
    prn_tensor_zero_grad(s0);
    s = use_deer ? prn_deer_rnn(g_ctx, r, x, s0, o, &y, &f, NULL) : prn_rnn_forward(g_ctx, r, x, s0, &y, &f);
    if (s == PRN_OK) s = prn_mul(g_ctx, y, Ry, &a);
    if (s == PRN_OK) s = prn_sum(g_ctx, a, PRN_ALL_AXES, 0, &sa);
    if (s == PRN_OK) s = prn_mul(g_ctx, f, Rs, &b);
    if (s == PRN_OK) s = prn_sum(g_ctx, b, PRN_ALL_AXES, 0, &sb);
    if (s == PRN_OK) s = prn_add(g_ctx, sa, sb, &l);
    if (s == PRN_OK) s = prn_tensor_item(l, loss);
    if (s == PRN_OK) s = prn_backward(g_ctx, l);
    PRNT_CHECK(s == PRN_OK, "%s: %s", use_deer ? "deer" : "sequential", prn_last_error(g_ctx));
    for (i = 0; s == PRN_OK && i < np + 2; ++i) {
        prn_tensor *t = i < np ? p[i] : i == np ? x : s0, *gr = prn_tensor_grad(t);
        size_t m = prn_tensor_numel(t), j;
        double *v = host_of(gr);
        for (j = 0; j < m; ++j) g[n++] = gr ? v[j] : 0.0;
        free(v);
    }
    prn_tensor_free(y); prn_tensor_free(f); prn_tensor_free(a); prn_tensor_free(b); prn_tensor_free(sa);
    prn_tensor_free(sb); prn_tensor_free(l);
    prn_tape_clear(g_ctx);
    return n;
}
static void grad_case(prn_rnn_kind kind, prn_dtype dt, int layers, int bidir, prn_jacobian_mode mode, size_t T) {
    prn_rnn_config c = cfg_of(kind, dt, 3, 4, layers, bidir);
    prn_rnn *r = NULL;
    unsigned seed = 17u + (unsigned)kind;
    size_t B = 2, LD, S, F, total, i;
    prn_tensor *x, *s0, *Ry, *Rs, *p[64];
    prn_deer_options o;
    double *g1, *g2, l1 = 0, l2 = 0, worst = 0, scale = 0, tol = dt == PRN_F64 ? 1e-8 : 1e-4;
    int np, n1, n2;
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
    if (!r) return;
    LD = (size_t)layers * (bidir ? 2 : 1);
    S = prn_rnn_state_size(r);
    F = prn_rnn_output_size(r);
    x = rand_tensor(dt, 3, B, T, 3, &seed, 1.0);
    s0 = rand_tensor(dt, 3, LD, B, S, &seed, 0.5);
    Ry = rand_tensor(dt, 3, B, T, F, &seed, 1.0);
    Rs = rand_tensor(dt, 3, LD, B, S, &seed, 1.0);
    prn_tensor_set_requires_grad(x, 1);
    prn_tensor_set_requires_grad(s0, 1);
    np = prn_rnn_params(r, p, 64);
    for (total = 0, i = 0; i < (size_t)np; ++i) total += prn_tensor_numel(p[i]);
    total += prn_tensor_numel(x) + prn_tensor_numel(s0);
    g1 = (double *)calloc(total, sizeof *g1);
    g2 = (double *)calloc(total, sizeof *g2);
    memset(&o, 0, sizeof o);
    o.mode = mode;
    n1 = grads_of(r, 0, &o, x, s0, Ry, Rs, g1, &l1);
    n2 = grads_of(r, 1, &o, x, s0, Ry, Rs, g2, &l2);
    for (i = 0; i < total; ++i) if (fabs(g1[i]) > scale) scale = fabs(g1[i]);
    for (i = 0; i < total; ++i) {
        double e = fabs(g1[i] - g2[i]) / (scale > 1e-30 ? scale : 1.0);
        if (!(e <= worst)) worst = e == e ? e : HUGE_VAL;
    }
    PRNT_CHECK(n1 == (int)total && n2 == (int)total && worst <= tol && fabs(l1 - l2) <= tol * (1 + fabs(l1)),
               "%s %s layers=%d bidir=%d %s T=%lu: gradient deviation %g (relative to the largest), losses %.10g %.10g",
               prn_rnn_kind_name(kind), prn_dtype_name(dt), layers, bidir, mode_name(mode), (unsigned long)T, worst, l1, l2);
    free(g1); free(g2);
    prn_tensor_free(x); prn_tensor_free(s0); prn_tensor_free(Ry); prn_tensor_free(Rs);
    prn_rnn_free(r);
}
static void test_gradients(void) {
    int kk, m;
    for (kk = 0; kk < NKINDS; ++kk)
        for (m = 0; m < 3; ++m) {
            grad_case(k_all[kk], PRN_F64, 1, 0, (prn_jacobian_mode)m, 25);
            grad_case(k_all[kk], PRN_F32, 1, 0, (prn_jacobian_mode)m, 25);
        }
    grad_case(PRN_RNN_GRU, PRN_F64, 2, 1, PRN_JACOBIAN_DENSE, 30);
    grad_case(PRN_RNN_LSTM, PRN_F32, 2, 1, PRN_JACOBIAN_DIAG, 30);
    grad_case(PRN_RNN_MHGRU, PRN_F32, 1, 1, PRN_JACOBIAN_BLOCK, 30);
    grad_case(PRN_RNN_GRU, PRN_F32, 1, 0, PRN_JACOBIAN_DENSE, 1);
    grad_case(PRN_RNN_GRU, PRN_F32, 1, 0, PRN_JACOBIAN_DIAG, g_quick ? 200 : 2000);
}

/* --- the same bits with 1 and 2 threads ------------------------------------------ */
/* y, final state and gradients of a bidirectional GRU (DENSE) and LSTM (DIAG)
 * over B = 21 rows (lane groups of 8 and a partial one, split between the
 * threads) and T = 700 (several chunks), run on two contexts of the
 * backend with 1 and 2 threads: the fused iterations never mix rows, so
 * the results must be equal bit for bit. */
static void threads_case(prn_rnn_kind kind, prn_jacobian_mode mode, size_t B, size_t T) {
    const size_t I = 3;
    double *out[2] = {NULL, NULL};
    size_t n[2] = {0, 0};
    int t;
    for (t = 0; t < 2; ++t) {
        prn_config cfg;
        prn_context *ctx = NULL, *keep = g_ctx;
        prn_rnn_config c = cfg_of(kind, PRN_F32, I, 5, 1, 1);
        prn_rnn *r = NULL;
        prn_tensor *x = NULL, *y = NULL, *f = NULL, *l = NULL, *l2 = NULL, *lt = NULL, *p[16];
        prn_deer_options o;
        unsigned seed = 99u;
        int np, i;
        size_t k, m = 0;
        memset(&cfg, 0, sizeof cfg);
        /* the built-in products: a CBLAS's own threads may change the last
         * bits of a weight gradient (the header's THREADS AND BUSY MACHINES) */
        cfg.backend = strcmp(prn_context_backend_name(g_ctx), "reference") ? prn_context_backend_name(g_ctx)
                                                                           : "reference-noblas";
        cfg.seed = 5;
        cfg.num_threads = t + 1;
        if (prn_context_create(&cfg, &ctx, NULL, 0) != PRN_OK) { PRNT_CHECK(0, "context"); break; }
        g_ctx = ctx; /* rand_tensor makes its tensors in g_ctx */
        PRNT_OK(ctx, prn_rnn_create(ctx, &c, &r));
        x = rand_tensor(PRN_F32, 3, B, T, I, &seed, 1.0);
        prn_tensor_set_requires_grad(x, 1);
        memset(&o, 0, sizeof o);
        o.mode = mode;
        PRNT_OK(ctx, prn_deer_rnn(ctx, r, x, NULL, &o, &y, &f, NULL));
        PRNT_OK(ctx, prn_sum(ctx, y, PRN_ALL_AXES, 0, &l));
        PRNT_OK(ctx, prn_sum(ctx, f, PRN_ALL_AXES, 0, &l2));
        PRNT_OK(ctx, prn_add(ctx, l, l2, &lt));
        PRNT_OK(ctx, prn_backward(ctx, lt));
        np = r ? prn_rnn_params(r, p, 16) : 0;
        p[np++] = x;
        for (i = 0; i < np; ++i) m += prn_tensor_numel(p[i]);
        m += y ? prn_tensor_numel(y) : 0;
        out[t] = (double *)calloc(m, sizeof(double));
        if (y) prnt_download_f64(y, out[t]);
        for (k = y ? prn_tensor_numel(y) : 0, i = 0; i < np; ++i) {
            prn_tensor *gr = prn_tensor_grad(p[i]);
            if (gr) prnt_download_f64(gr, out[t] + k);
            k += prn_tensor_numel(p[i]);
        }
        n[t] = m;
        prn_tape_clear(ctx);
        prn_tensor_free(x); prn_tensor_free(y); prn_tensor_free(f); prn_tensor_free(l); prn_tensor_free(l2);
        prn_tensor_free(lt);
        prn_rnn_free(r);
        prn_context_free(ctx);
        g_ctx = keep;
    }
    PRNT_CHECK(n[0] && n[0] == n[1] && out[0] && out[1] && !memcmp(out[0], out[1], n[0] * sizeof(double)),
               "%s %s: outputs or gradients differ between 1 and 2 threads", prn_rnn_kind_name(kind), mode_name(mode));
    free(out[0]); free(out[1]);
}
static void test_threads(void) {
    threads_case(PRN_RNN_GRU, PRN_JACOBIAN_DENSE, 21, 700);
    threads_case(PRN_RNN_LSTM, PRN_JACOBIAN_DIAG, 21, 700);
    /* one row, T >= 1024: lanes and threads over time segments (the
     * reference backend's fused iterations) */
    if (g_slow) return;
    threads_case(PRN_RNN_GRU, PRN_JACOBIAN_DENSE, 1, 5000);
    threads_case(PRN_RNN_GRU, PRN_JACOBIAN_DIAG, 2, 3000);
}

/* --- deer_iterate's discard_converged ------------------------------------------- */
/* The reference backend's entry called directly (its buffers are host
 * memory), one row over time segments: iterated to convergence, then once
 * more from the converged y. With discard_converged 0, ynew must still be
 * written (the Newton step from y: y again); with 1 it may be skipped. */
static void test_discard_converged(void) {
    const prn_backend *be = prn_context_backend(g_ctx);
    const size_t T = 4096, H = 2, P = 6;
    float w[12], bh[6], h0[2] = {0.3f, -0.2f}, *xp, *y, *yn;
    double v[12];
    prn_deer_fused a;
    unsigned seed = 3u;
    size_t i;
    int it, k, conv = 0;
    if (strcmp(be->name, "reference") != 0 || !be->deer_iterate) {
        printf("skip test_discard_converged: calls the reference backend's deer_iterate\n");
        return;
    }
    xp = (float *)malloc(T * P * sizeof(float));
    y = (float *)malloc(T * H * sizeof(float));
    yn = (float *)malloc(T * H * sizeof(float));
    if (!xp || !y || !yn) { free(xp); free(y); free(yn); PRNT_CHECK(0, "malloc"); return; }
    rand_fill(v, 12, &seed, 0.8);
    for (i = 0; i < 12; ++i) w[i] = (float)v[i];
    rand_fill(v, 6, &seed, 0.3);
    for (i = 0; i < 6; ++i) bh[i] = (float)v[i];
    for (i = 0; i < T * P; ++i) { rand_fill(v, 1, &seed, 1.0); xp[i] = (float)v[0]; }
    memset(&a, 0, sizeof a);
    a.kind = PRN_RNN_GRU; a.dtype = PRN_F32; a.mode = PRN_JACOBIAN_DENSE;
    a.B = 1; a.T = T; a.H = H; a.S = H; a.hk = H;
    a.w[0] = w; a.w[1] = bh; a.xp = xp; a.h0 = h0;
    a.clip = 1e8; a.atol = a.rtol = 1e-5;
    for (it = 0; it < 30; ++it) {
        a.ynew = yn;
        PRNT_OK(g_ctx, be->deer_iterate(g_ctx, &a));
        if (a.finite && a.residual <= 1) { conv = 1; break; }
        memcpy(y, yn, T * H * sizeof(float));
        a.y = y;
    }
    PRNT_CHECK(conv && it >= 1, "converged %d after %d calls", conv, it);
    for (k = 0; k < 2 && conv; ++k) {
        double dev = 0;
        for (i = 0; i < T * H; ++i) yn[i] = (float)(0.0 / (double)(k - k)); /* NaN: not written */
        a.discard_converged = k;
        PRNT_OK(g_ctx, be->deer_iterate(g_ctx, &a));
        PRNT_CHECK(a.finite && a.residual <= 1, "discard_converged %d: residual %g finite %d", k, a.residual, a.finite);
        if (k) continue;
        for (i = 0; i < T * H; ++i) {
            double e = fabs((double)yn[i] - (double)y[i]);
            if (!(e <= dev)) dev = e == e ? e : HUGE_VAL;
        }
        PRNT_CHECK(dev <= 1e-4, "discard_converged 0: ynew deviates %g from the converged y", dev);
    }
    free(xp); free(y); free(yn);
}

/* --- one row, long T: time segments with an amplifying Jacobian ----------------- */
/* The time segments' second pass stops adding a segment's carry once it
 * has faded below a thousandth of the tolerance (an inexact Newton step).
 * Large weights make J amplify in places, so a faded carry could grow
 * again: the result must still equal sequential evaluation, converged or
 * fallen back, with a start state (nonzero carries from the first
 * segment on) and without. */
static void test_segments_amplifying(void) {
    int d, m, s0;
    size_t T = g_quick || g_slow ? 2000 : 20000;
    for (d = 0; d < 2; ++d)
        for (m = 0; m < 3; m += 2)
            for (s0 = 0; s0 < 2; ++s0) {
                prn_dtype dt = d ? PRN_F64 : PRN_F32;
                prn_rnn_config c = cfg_of(PRN_RNN_GRU, dt, 2, 2, 1, 0);
                prn_rnn *r = NULL;
                unsigned seed = 77u + (unsigned)(d * 4 + m + s0);
                prn_tensor *x, *h0;
                prn_deer_options o;
                prn_deer_stats st;
                double e, tol = d ? 1e-9 : 2e-4;
                PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
                if (!r) return;
                scale_params(r, 5.0);
                x = rand_tensor(dt, 3, 1, T, 2, &seed, 1.0);
                h0 = rand_tensor(dt, 3, 1, 1, 2, &seed, 0.9);
                memset(&o, 0, sizeof o);
                o.mode = (prn_jacobian_mode)m;
                o.max_iter = 60;
                if (d) o.atol = o.rtol = 1e-12;
                e = deer_vs_seq(r, x, s0 ? h0 : NULL, &o, &st);
                PRNT_CHECK(e <= tol && (st.converged || st.fell_back), "%s %s%s T=%lu: deviation %g, iterations %d, converged %d, fell back %d",
                           prn_dtype_name(dt), mode_name(o.mode), s0 ? " state0" : "", (unsigned long)T, e, st.iterations,
                           st.converged, st.fell_back);
                printf("    %s %s%s T=%lu: %d iterations, converged %d, deviation %.2g\n", prn_dtype_name(dt),
                       mode_name(o.mode), s0 ? " state0" : "", (unsigned long)T, st.iterations, st.converged, e);
                prn_tensor_free(x);
                prn_tensor_free(h0);
                prn_rnn_free(r);
            }
}

/* --- a user cell: y' = tanh(W y + U x + b), callbacks built from prn ops -------- */
typedef struct ucell {
    prn_tensor *W, *U, *b; /* [S, S], [S, X], [S] */
    int calls;
} ucell;
static prn_status uc_pre(prn_context *ctx, ucell *u, prn_tensor *x, prn_tensor *s, prn_tensor **out) {
    prn_tensor *a = NULL, *c = NULL, *e = NULL;
    prn_status st = prn_matmul_ex(ctx, s, 0, u->W, 1, &a);
    if (st == PRN_OK) st = prn_matmul_ex(ctx, x, 0, u->U, 1, &c);
    if (st == PRN_OK) st = prn_add(ctx, a, c, &e);
    if (st == PRN_OK) st = prn_add(ctx, e, u->b, out);
    prn_tensor_free(a); prn_tensor_free(c); prn_tensor_free(e);
    return st;
}
static prn_status uc_step(prn_context *ctx, void *user, prn_tensor *x, prn_tensor *s, prn_tensor **next) {
    prn_tensor *p = NULL;
    prn_status st = uc_pre(ctx, (ucell *)user, x, s, &p);
    if (st == PRN_OK) st = prn_tanh(ctx, p, next);
    prn_tensor_free(p);
    return st;
}
/* J = diag(1 - y^2) W; DIAG: (1 - y^2) * diag(W) */
static prn_status uc_jac(prn_context *ctx, void *user, prn_tensor *x, prn_tensor *s, prn_jacobian_mode mode,
                         prn_tensor **next, prn_tensor **jac) {
    ucell *u = (ucell *)user;
    prn_tensor *y = NULL, *y2 = NULL, *d = NULL, *dv = NULL, *Wd = NULL, *eye = NULL, *We = NULL;
    size_t N = prn_tensor_dim(s, 0), S = prn_tensor_dim(s, 1), sh[3];
    prn_status st;
    u->calls++;
    st = uc_step(ctx, user, x, s, &y);
    if (st == PRN_OK) st = prn_mul(ctx, y, y, &y2);
    if (st == PRN_OK) st = prn_neg(ctx, y2, &d);
    if (st == PRN_OK) { prn_tensor_free(y2); y2 = NULL; st = prn_add_scalar(ctx, d, 1.0, &y2); }
    if (st == PRN_OK && mode == PRN_JACOBIAN_DIAG) {
        double *w = host_of(u->W), *e = (double *)calloc(S, sizeof *e);
        size_t i;
        for (i = 0; i < S; ++i) e[i] = w[i * S + i];
        sh[0] = S;
        st = prn_tensor_create(ctx, prn_tensor_dtype(s), 1, sh, &Wd);
        if (st == PRN_OK) st = prnt_upload_f64(Wd, e);
        if (st == PRN_OK) st = prn_mul(ctx, y2, Wd, jac);
        free(w); free(e);
    } else if (st == PRN_OK) {
        sh[0] = N; sh[1] = S; sh[2] = 1;
        st = prn_reshape(ctx, y2, 3, sh, &dv);
        if (st == PRN_OK) st = prn_mul(ctx, dv, u->W, jac);
    }
    (void)eye; (void)We;
    if (st == PRN_OK) *next = prn_tensor_retain(y);
    prn_tensor_free(y); prn_tensor_free(y2); prn_tensor_free(d); prn_tensor_free(dv); prn_tensor_free(Wd);
    return st;
}
static void test_user_cell(void) {
    int d, m;
    for (d = 0; d < 2; ++d)
        for (m = 0; m < 3; ++m) {
            prn_dtype dt = d ? PRN_F64 : PRN_F32;
            size_t B = 2, T = 60, S = 5, X = 3, t;
            unsigned seed = 99u;
            ucell u;
            prn_deer_system cell;
            prn_deer_options o;
            prn_deer_stats st;
            prn_tensor *x = rand_tensor(dt, 3, B, T, X, &seed, 1.0), *s0 = rand_tensor(dt, 2, B, S, 0, &seed, 0.5);
            prn_tensor *y = NULL, *ys = NULL, *R = rand_tensor(dt, 3, B, T, S, &seed, 1.0), *s, *prod = NULL, *l = NULL;
            prn_tensor *gW = NULL, *gx = NULL, *gs0 = NULL;
            double tol = d ? 1e-9 : 1e-4, e, eg[3] = {0, 0, 0};
            int k;
            u.W = rand_tensor(dt, 2, S, S, 0, &seed, 0.6);
            u.U = rand_tensor(dt, 2, S, X, 0, &seed, 0.6);
            u.b = rand_tensor(dt, 1, S, 0, 0, &seed, 0.3);
            u.calls = 0;
            prn_tensor_set_requires_grad(u.W, 1);
            prn_tensor_set_requires_grad(u.U, 1);
            prn_tensor_set_requires_grad(u.b, 1);
            prn_tensor_set_requires_grad(x, 1);
            prn_tensor_set_requires_grad(s0, 1);
            memset(&cell, 0, sizeof cell);
            cell.state_size = S; cell.input_size = X; cell.block = m == PRN_JACOBIAN_BLOCK ? S : 0;
            cell.jacobian = uc_jac; cell.step = uc_step; cell.user = &u;
            memset(&o, 0, sizeof o);
            o.mode = (prn_jacobian_mode)m;
            /* BPTT reference: the recorded step, T times */
            s = prn_tensor_retain(s0);
            for (t = 0; t < T; ++t) {
                prn_tensor *xt = NULL, *x2 = NULL, *nx = NULL, *n3 = NULL;
                size_t sh[3];
                sh[0] = B; sh[1] = X;
                PRNT_OK(g_ctx, prn_slice(g_ctx, x, 1, t, 1, &xt));
                PRNT_OK(g_ctx, prn_reshape(g_ctx, xt, 2, sh, &x2));
                PRNT_OK(g_ctx, uc_step(g_ctx, &u, x2, s, &nx));
                sh[0] = B; sh[1] = 1; sh[2] = S;
                PRNT_OK(g_ctx, prn_reshape(g_ctx, nx, 3, sh, &n3));
                if (!ys) ys = prn_tensor_retain(n3);
                else { prn_tensor *c = NULL; PRNT_OK(g_ctx, prn_concat(g_ctx, ys, n3, 1, &c)); prn_tensor_free(ys); ys = c; }
                prn_tensor_free(s); s = nx;
                prn_tensor_free(xt); prn_tensor_free(x2); prn_tensor_free(n3);
            }
            prn_tensor_free(s);
            for (k = 0; k < 2; ++k) { /* k = 0: BPTT, 1: DEER */
                prn_tensor *yy = k ? NULL : ys;
                if (k) PRNT_OK(g_ctx, prn_deer(g_ctx, &cell, x, s0, &o, &y, &st));
                if (k) yy = y;
                if (!yy) break;
                PRNT_OK(g_ctx, prn_mul(g_ctx, yy, R, &prod));
                PRNT_OK(g_ctx, prn_sum(g_ctx, prod, PRN_ALL_AXES, 0, &l));
                PRNT_OK(g_ctx, prn_backward(g_ctx, l));
                if (!k) {
                    PRNT_OK(g_ctx, prn_copy(g_ctx, prn_tensor_grad(u.W), &gW));
                    PRNT_OK(g_ctx, prn_copy(g_ctx, prn_tensor_grad(x), &gx));
                    PRNT_OK(g_ctx, prn_copy(g_ctx, prn_tensor_grad(s0), &gs0));
                } else {
                    eg[0] = max_diff(prn_tensor_grad(u.W), gW);
                    eg[1] = max_diff(prn_tensor_grad(x), gx);
                    eg[2] = max_diff(prn_tensor_grad(s0), gs0);
                }
                prn_tensor_zero_grad(u.W); prn_tensor_zero_grad(u.U); prn_tensor_zero_grad(u.b);
                prn_tensor_zero_grad(x); prn_tensor_zero_grad(s0);
                prn_tensor_free(prod); prn_tensor_free(l); prod = l = NULL;
            }
            e = max_diff(y, ys);
            PRNT_CHECK(e <= tol && st.converged, "user cell %s %s: deviation %g, converged %d, iterations %d",
                       prn_dtype_name(dt), mode_name(o.mode), e, st.converged, st.iterations);
            PRNT_CHECK(eg[0] <= 10 * tol && eg[1] <= 10 * tol && eg[2] <= 10 * tol,
                       "user cell %s %s: gradient deviation W %g x %g state0 %g", prn_dtype_name(dt), mode_name(o.mode),
                       eg[0], eg[1], eg[2]);
            PRNT_CHECK(u.calls == st.iterations + 1 + (m == PRN_JACOBIAN_DIAG),
                       "one Jacobian evaluation per iteration, one to confirm%s: %d calls, %d iterations",
                       m == PRN_JACOBIAN_DIAG ? " and one for the exact adjoint" : "", u.calls, st.iterations);
            prn_tensor_free(x); prn_tensor_free(s0); prn_tensor_free(y); prn_tensor_free(ys); prn_tensor_free(R);
            prn_tensor_free(gW); prn_tensor_free(gx); prn_tensor_free(gs0);
            prn_tensor_free(u.W); prn_tensor_free(u.U); prn_tensor_free(u.b);
            prn_tape_clear(g_ctx);
        }
}

/* --- non-convergence: reported, and the fall-back is sequential ---------------- */
static void test_nonconvergent(void) {
    prn_rnn_config c = cfg_of(PRN_RNN_ELMAN, PRN_F64, 2, 8, 1, 0);
    prn_rnn *r = NULL;
    unsigned seed = 21u;
    prn_tensor *x, *y = NULL;
    prn_deer_options o;
    prn_deer_stats st;
    double e, *v;
    size_t i, n;
    int fin = 1;
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
    if (!r) return;
    scale_params(r, 6.0); /* large weights: a chaotic Elman network */
    x = rand_tensor(PRN_F64, 3, 2, 3000, 2, &seed, 1.0);
    memset(&o, 0, sizeof o);
    o.max_iter = 8;
    e = deer_vs_seq(r, x, NULL, &o, &st);
    PRNT_CHECK(!st.converged && st.fell_back && st.iterations == 8 && e <= 1e-12,
               "not converged in 8 iterations: converged %d fell back %d iterations %d, deviation from sequential %g",
               st.converged, st.fell_back, st.iterations, e);
    o.no_fallback = 1;
    prn_no_grad_begin(g_ctx);
    PRNT_OK(g_ctx, prn_deer_rnn(g_ctx, r, x, NULL, &o, &y, NULL, &st));
    prn_no_grad_end(g_ctx);
    PRNT_CHECK(!st.converged && !st.fell_back && st.residual > 1, "no fall-back: converged %d fell back %d residual %g",
               st.converged, st.fell_back, st.residual);
    v = host_of(y);
    n = y ? prn_tensor_numel(y) : 0;
    for (i = 0; i < n; ++i) fin &= isfinite(v[i]) && fabs(v[i]) <= 1e8;
    PRNT_CHECK(fin, "the unconverged iterate is finite and clipped");
    free(v);
    prn_tensor_free(y);
    prn_tensor_free(x);
    prn_rnn_free(r);
}

/* --- damping and the trust region ------------------------------------------------ */
static void test_damping(void) {
    prn_rnn_config c = cfg_of(PRN_RNN_GRU, PRN_F64, 2, 4, 1, 0);
    prn_rnn *r = NULL, *hard = NULL;
    unsigned seed = 8u;
    prn_tensor *x, *xh;
    prn_deer_options o;
    prn_deer_stats st, st0;
    double e;
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
    c.kind = PRN_RNN_ELMAN;
    c.hidden_size = 6;
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &hard));
    if (!r || !hard) { prn_rnn_free(r); prn_rnn_free(hard); return; }
    x = rand_tensor(PRN_F64, 3, 2, 50, 2, &seed, 1.0);
    memset(&o, 0, sizeof o);
    o.damping = 1.0; /* Picard: T iterations at most */
    e = deer_vs_seq(r, x, NULL, &o, &st);
    PRNT_CHECK(e <= 1e-9 && st.converged && st.iterations <= 51, "Picard (damping 1): deviation %g, iterations %d", e, st.iterations);
    o.damping = 0.5;
    e = deer_vs_seq(r, x, NULL, &o, &st);
    PRNT_CHECK(e <= 1e-9 && st.converged && st.damping == 0.5, "damping 0.5: deviation %g, iterations %d", e, st.iterations);
    o.damping = 0;
    o.mode = PRN_JACOBIAN_DIAG;
    o.adaptive = 1;
    e = deer_vs_seq(r, x, NULL, &o, &st);
    PRNT_CHECK(e <= 1e-9 && st.converged, "adaptive quasi-DEER: deviation %g, iterations %d", e, st.iterations);
    /* a strongly coupled Elman network, where quasi-DEER needs many iterations: the trust region
     * (which only acts on blow-ups) still converges to the sequential result */
    scale_params(hard, 2.0);
    xh = rand_tensor(PRN_F64, 3, 2, 200, 2, &seed, 1.0);
    o.adaptive = 0;
    o.max_iter = 400;
    o.no_fallback = 1;
    e = deer_vs_seq(hard, xh, NULL, &o, &st0);
    PRNT_CHECK(st0.converged && e <= 1e-9, "plain quasi-DEER: converged %d, deviation %g", st0.converged, e);
    o.adaptive = 1;
    e = deer_vs_seq(hard, xh, NULL, &o, &st);
    printf("    quasi-DEER on a coupled Elman network: plain %d iterations; trust region %d iterations, %d rejected\n",
           st0.iterations, st.iterations, st.rejected);
    PRNT_CHECK(st.converged && e <= 1e-9, "trust region: converged %d, deviation %g", st.converged, e);
    o.damping = 0.5; /* damped quasi-DEER */
    e = deer_vs_seq(hard, xh, NULL, &o, &st);
    PRNT_CHECK(st.converged && e <= 1e-9 && st.damping >= 0.5, "damped trust region: converged %d, deviation %g, k %g",
               st.converged, e, st.damping);
    prn_tensor_free(x); prn_tensor_free(xh);
    prn_rnn_free(r); prn_rnn_free(hard);
}

/* --- NaN and Inf -------------------------------------------------------------------- */
static void test_nonfinite(void) {
    prn_rnn_config c = cfg_of(PRN_RNN_GRU, PRN_F32, 2, 4, 1, 0);
    prn_rnn *r = NULL;
    unsigned seed = 4u;
    prn_tensor *x, *s0, *y = (prn_tensor *)&seed, *p;
    prn_deer_stats st;
    double *v;
    size_t tape;
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
    if (!r) return;
    x = rand_tensor(PRN_F32, 3, 2, 30, 2, &seed, 1.0);
    s0 = rand_tensor(PRN_F32, 3, 1, 2, 4, &seed, 1.0);
    v = host_of(x);
    v[17] = NAN;
    prnt_upload_f64(x, v);
    tape = prn_tape_size(g_ctx);
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x, NULL, NULL, &y, NULL, NULL), PRN_ERR_NONFINITE);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "prn_deer_rnn") && strstr(prn_last_error(g_ctx), "'x'"), "message: %s",
               prn_last_error(g_ctx));
    PRNT_CHECK(y == (prn_tensor *)&seed && prn_tape_size(g_ctx) == tape, "outputs and tape untouched");
    v[17] = INFINITY;
    prnt_upload_f64(x, v);
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x, NULL, NULL, &y, NULL, NULL), PRN_ERR_NONFINITE);
    v[17] = 0.5;
    prnt_upload_f64(x, v);
    free(v);
    v = host_of(s0);
    v[3] = NAN;
    prnt_upload_f64(s0, v);
    free(v);
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x, s0, NULL, &y, NULL, NULL), PRN_ERR_NONFINITE);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "'state0'") != NULL, "message: %s", prn_last_error(g_ctx));
    /* a NaN weight: refused before any iteration, naming it (as prn_rnn_forward and the frames do) */
    p = prn_rnn_param(r, "weight_hh_l0");
    v = host_of(p);
    v[5] = NAN;
    prnt_upload_f64(p, v);
    free(v);
    memset(&st, 0, sizeof st);
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x, NULL, NULL, &y, NULL, &st), PRN_ERR_NONFINITE);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "weight_hh_l0") != NULL, "message: %s", prn_last_error(g_ctx));
    PRNT_CHECK(!st.converged && y == (prn_tensor *)&seed && prn_tape_size(g_ctx) == tape,
               "NaN weight: converged %d; outputs and tape untouched", st.converged);
    prn_tensor_free(x); prn_tensor_free(s0);
    prn_rnn_free(r);
}

/* --- warm start ------------------------------------------------------------------------ */
static void test_warm_start(void) {
    prn_rnn_config c = cfg_of(PRN_RNN_GRU, PRN_F64, 2, 6, 2, 1);
    prn_rnn *r = NULL;
    unsigned seed = 6u;
    prn_tensor *x, *warm = NULL, *y = NULL, *p;
    prn_deer_options o;
    prn_deer_stats cold, hot, again;
    double *v, e;
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
    if (!r) return;
    x = rand_tensor(PRN_F64, 3, 2, 400, 2, &seed, 1.0);
    memset(&o, 0, sizeof o);
    o.warm = &warm;
    e = deer_vs_seq(r, x, NULL, &o, &cold);
    PRNT_CHECK(warm && prn_tensor_ndim(warm) == 4 && prn_tensor_dim(warm, 0) == 4 && prn_tensor_dim(warm, 2) == 400,
               "the solution is handed back as [L*D, B, T, S]");
    e = deer_vs_seq(r, x, NULL, &o, &again);
    PRNT_CHECK(again.iterations == 0 && again.converged && e <= 1e-9, "same problem again: %d iterations", again.iterations);
    /* a small parameter update, as in training: fewer iterations from the last solution */
    p = prn_rnn_param(r, "weight_hh_l0");
    v = host_of(p);
    v[0] += 0.01; v[7] -= 0.01;
    prnt_upload_f64(p, v);
    free(v);
    e = deer_vs_seq(r, x, NULL, &o, &hot);
    PRNT_CHECK(hot.converged && e <= 1e-9 && hot.iterations < cold.iterations,
               "warm start after an update: %d iterations (cold %d), deviation %g", hot.iterations, cold.iterations, e);
    /* a guess of the wrong shape is an error naming it */
    prn_tensor_free(warm);
    warm = rand_tensor(PRN_F64, 3, 2, 2, 2, &seed, 1.0);
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x, NULL, &o, &y, NULL, NULL), PRN_ERR_SHAPE);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "warm") != NULL, "message: %s", prn_last_error(g_ctx));
    prn_tensor_free(warm);
    prn_tensor_free(x);
    prn_rnn_free(r);
}

/* --- bad input --------------------------------------------------------------------------- */
static prn_status dummy_jac(prn_context *ctx, void *user, prn_tensor *x, prn_tensor *s, prn_jacobian_mode m,
                            prn_tensor **next, prn_tensor **jac) {
    (void)user; (void)x; (void)m;
    *jac = NULL;
    return prn_copy(ctx, s, next); /* no Jacobian: a broken callback */
}
static void test_bad_input(void) {
    prn_rnn_config c = cfg_of(PRN_RNN_GRU, PRN_F32, 2, 4, 1, 0);
    prn_rnn *r = NULL, *big = NULL;
    unsigned seed = 2u;
    prn_tensor *x, *x64, *y = NULL, *bad_s0, *xb;
    prn_deer_options o;
    prn_deer_system cell;
    int takes;
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
    c.hidden_size = 80;
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &big));
    if (!r || !big) { prn_rnn_free(r); prn_rnn_free(big); return; }
    x = rand_tensor(PRN_F32, 3, 2, 10, 2, &seed, 1.0);
    x64 = rand_tensor(PRN_F64, 3, 2, 10, 2, &seed, 1.0);
    bad_s0 = rand_tensor(PRN_F32, 3, 1, 3, 4, &seed, 1.0);
    xb = rand_tensor(PRN_F32, 3, 2, 10, 3, &seed, 1.0);
    memset(&o, 0, sizeof o);
    PRNT_STATUS(g_ctx, prn_deer_rnn(NULL, r, x, NULL, NULL, &y, NULL, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, NULL, x, NULL, NULL, &y, NULL, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, NULL, NULL, NULL, &y, NULL, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x, NULL, NULL, NULL, NULL, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x64, NULL, NULL, &y, NULL, NULL), PRN_ERR_DTYPE);
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, xb, NULL, NULL, &y, NULL, NULL), PRN_ERR_SHAPE);
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x, bad_s0, NULL, &y, NULL, NULL), PRN_ERR_SHAPE);
    o.mode = (prn_jacobian_mode)7;
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x, NULL, &o, &y, NULL, NULL), PRN_ERR_INVALID_ARGUMENT);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "opt->mode") != NULL, "message: %s", prn_last_error(g_ctx));
    o.mode = PRN_JACOBIAN_DENSE;
    o.damping = 1.5;
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x, NULL, &o, &y, NULL, NULL), PRN_ERR_INVALID_ARGUMENT);
    o.damping = 0;
    o.max_iter = -1;
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x, NULL, &o, &y, NULL, NULL), PRN_ERR_INVALID_ARGUMENT);
    o.max_iter = 0;
    o.rtol = -1;
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x, NULL, &o, &y, NULL, NULL), PRN_ERR_INVALID_ARGUMENT);
    /* an infinite tolerance passes any residual: it once "converged" after
     * 0 iterations, 0.95 away from the sequential result */
    o.rtol = INFINITY;
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x, NULL, &o, &y, NULL, NULL), PRN_ERR_INVALID_ARGUMENT);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "opt->rtol") != NULL, "message: %s", prn_last_error(g_ctx));
    o.rtol = 0;
    o.atol = INFINITY;
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x, NULL, &o, &y, NULL, NULL), PRN_ERR_INVALID_ARGUMENT);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "opt->atol") != NULL, "message: %s", prn_last_error(g_ctx));
    o.atol = 0;
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, big, x, NULL, &o, &y, NULL, NULL), PRN_ERR_UNSUPPORTED);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "PRN_JACOBIAN_DIAG") != NULL, "message suggests DIAG: %s", prn_last_error(g_ctx));
    PRNT_CHECK(y == NULL, "no output on failure");
    /* dense state 80 > 64: quasi-DEER works, and gradients say why they cannot
     * (the generic adjoint scans the exact 80 x 80 Jacobians), except on a
     * backend whose deer_adjoint recomputes them row by row (and takes a
     * GRU of 80 states: the CUDA backend's kernels decline it) */
    o.mode = PRN_JACOBIAN_DIAG;
    prn_no_grad_begin(g_ctx);
    PRNT_OK(g_ctx, prn_deer_rnn(g_ctx, big, x, NULL, &o, &y, NULL, NULL));
    prn_no_grad_end(g_ctx);
    prn_tensor_free(y); y = NULL;
    {
        prn_deer_fused fz;
        memset(&fz, 0, sizeof fz);
        fz.kind = PRN_RNN_GRU; fz.dtype = PRN_F32; fz.mode = PRN_JACOBIAN_DIAG; fz.B = 2; fz.T = 10;
        fz.H = fz.S = fz.hk = 80;
        takes = prn_backend_supports(g_ctx, PRN_SLOT_deer_iterate, &fz) &&
                prn_backend_supports(g_ctx, PRN_SLOT_deer_adjoint, &fz);
    }
    if (takes) {
        PRNT_OK(g_ctx, prn_deer_rnn(g_ctx, big, x, NULL, &o, &y, NULL, NULL));
        PRNT_CHECK(y != NULL && prn_tape_size(g_ctx) > 0, "recorded for gradients");
        prn_tensor_free(y); y = NULL;
        prn_tape_clear(g_ctx);
    } else {
        PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, big, x, NULL, &o, &y, NULL, NULL), PRN_ERR_UNSUPPORTED);
        PRNT_CHECK(y == NULL && prn_tape_size(g_ctx) == 0, "nothing left on the tape");
    }
    /* user cells */
    memset(&cell, 0, sizeof cell);
    cell.state_size = 4; cell.input_size = 2;
    PRNT_STATUS(g_ctx, prn_deer(g_ctx, NULL, x, NULL, NULL, &y, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_deer(g_ctx, &cell, x, NULL, NULL, &y, NULL), PRN_ERR_NULL_ARGUMENT);
    cell.jacobian = dummy_jac;
    PRNT_STATUS(g_ctx, prn_deer(g_ctx, &cell, x, NULL, NULL, &y, NULL), PRN_ERR_SHAPE);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "jacobian callback") != NULL, "message: %s", prn_last_error(g_ctx));
    cell.input_size = 3;
    PRNT_STATUS(g_ctx, prn_deer(g_ctx, &cell, x, NULL, NULL, &y, NULL), PRN_ERR_SHAPE);
    cell.input_size = 2; cell.block = 3;
    PRNT_STATUS(g_ctx, prn_deer(g_ctx, &cell, x, NULL, NULL, &y, NULL), PRN_ERR_INVALID_ARGUMENT);
    cell.block = 0; cell.state_size = 0;
    PRNT_STATUS(g_ctx, prn_deer(g_ctx, &cell, x, NULL, NULL, &y, NULL), PRN_ERR_INVALID_ARGUMENT);
    PRNT_CHECK(y == NULL, "no output on failure");
    prn_tensor_free(x); prn_tensor_free(x64); prn_tensor_free(bad_s0); prn_tensor_free(xb);
    prn_rnn_free(r); prn_rnn_free(big);
}

/* --- allocation failures ------------------------------------------------------------------ */
/* A context whose allocator refuses its n-th allocation once. prn_deer_rnn
 * (with a warm-start slot) and the backward through it either succeed or
 * fail with PRN_ERR_OUT_OF_MEMORY, a message naming them, the outputs, the
 * warm slot, the live tensors and the tape as before; retried they succeed,
 * and the gradients equal those of a run without failures bit for bit. */
static long af_run(long fail_at, double *grads, size_t ngrads, int *completed) {
    prnt_fa f;
    prn_config cfg;
    prn_context *ctx = NULL;
    prn_rnn_config c = cfg_of(PRN_RNN_GRU, PRN_F64, 2, 3, 1, 1);
    prn_rnn *r = NULL;
    prn_tensor *x = NULL, *y = NULL, *fin = NULL, *l = NULL, *warm = NULL, *ps[16];
    prn_deer_options o;
    double xs[2 * 6 * 2];
    size_t shx[3] = {2, 6, 2}, off = 0;
    unsigned seed = 3;
    int np, k, att;
    memset(&f, 0, sizeof f);
    f.fail_at = fail_at;
    memset(&cfg, 0, sizeof cfg);
    cfg.allocator.alloc = prnt_fa_alloc;
    cfg.allocator.free = prnt_fa_free;
    cfg.allocator.user = &f;
    cfg.seed = 77;
    cfg.backend = "reference-noblas";
    cfg.num_threads = 1;
    *completed = 0;
    if (prn_context_create(&cfg, &ctx, NULL, 0) != PRN_OK && prn_context_create(&cfg, &ctx, NULL, 0) != PRN_OK) {
        PRNT_CHECK(0, "n=%ld: context", fail_at);
        return f.count;
    }
    rand_fill(xs, 24, &seed, 1.0);
    for (att = 0; att < 2 && !r; ++att) prn_rnn_create(ctx, &c, &r);
    for (att = 0; att < 2 && !x; ++att) prn_tensor_from_host(ctx, PRN_F64, 3, shx, xs, &x);
    if (!r || !x) { PRNT_CHECK(0, "n=%ld: set-up", fail_at); goto done; }
    prn_tensor_set_requires_grad(x, 1);
    memset(&o, 0, sizeof o);
    o.warm = &warm;
    for (k = 0; k < 2; ++k) /* the second call starts from the first's solution */
        for (att = 0; att < 2; ++att) {
            size_t l0 = prn_live_tensors(ctx), t0 = prn_tape_size(ctx);
            prn_tensor *w0 = warm, *ys = (prn_tensor *)&f;
            prn_status st;
            prn_tensor_free(y); prn_tensor_free(fin); y = fin = NULL;
            prn_tape_clear(ctx);
            l0 = prn_live_tensors(ctx); t0 = prn_tape_size(ctx);
            fin = ys;
            st = prn_deer_rnn(ctx, r, x, NULL, &o, &ys, &fin, NULL);
            if (st == PRN_OK) { y = ys; break; }
            PRNT_CHECK(st == PRN_ERR_OUT_OF_MEMORY && strstr(prn_last_error(ctx), "prn_deer_rnn"), "n=%ld: %s (%s)", fail_at,
                       prn_status_string(st), prn_last_error(ctx));
            PRNT_CHECK(ys == (prn_tensor *)&f && fin == (prn_tensor *)&f && warm == w0, "n=%ld: failed call wrote an output",
                       fail_at);
            PRNT_CHECK(prn_live_tensors(ctx) == l0 && prn_tape_size(ctx) == t0, "n=%ld: live tensors %lu -> %lu, tape %lu -> %lu",
                       fail_at, (unsigned long)l0, (unsigned long)prn_live_tensors(ctx), (unsigned long)t0,
                       (unsigned long)prn_tape_size(ctx));
            fin = NULL;
            if (att == 1) goto done;
        }
    for (att = 0; att < 2 && !l; ++att) {
        prn_tensor *a = NULL;
        if (prn_sum(ctx, y, PRN_ALL_AXES, 0, &a) == PRN_OK) l = a;
    }
    if (!l) goto done;
    for (att = 0; att < 2; ++att) {
        prn_status bs = prn_backward(ctx, l);
        if (bs == PRN_OK) break;
        PRNT_CHECK(bs == PRN_ERR_OUT_OF_MEMORY && prn_tensor_grad(x) == NULL, "n=%ld: backward: %s", fail_at, prn_last_error(ctx));
        if (att == 1) goto done;
    }
    np = prn_rnn_params(r, ps, 16);
    ps[np++] = x;
    for (k = 0; k < np; ++k) {
        size_t n = prn_tensor_numel(ps[k]);
        PRNT_CHECK(prn_tensor_grad(ps[k]) != NULL, "n=%ld: no gradient %d", fail_at, k);
        if (prn_tensor_grad(ps[k]) && off + n <= ngrads) prn_tensor_download(prn_tensor_grad(ps[k]), grads + off, n);
        off += n;
    }
    *completed = 1;
done:
    prn_tape_clear(ctx);
    prn_tensor_free(x); prn_tensor_free(y); prn_tensor_free(fin); prn_tensor_free(l); prn_tensor_free(warm);
    prn_rnn_free(r);
    PRNT_CHECK(prn_live_tensors(ctx) == 0, "n=%ld: %lu tensors alive", fail_at, (unsigned long)prn_live_tensors(ctx));
    prn_context_free(ctx);
    PRNT_CHECK(f.live == 0, "n=%ld: %ld allocations outstanding", fail_at, f.live);
    return f.count;
}
static void test_alloc_failures(void) {
    static double base[512], got[512];
    int ok;
    long N = af_run(0, base, 512, &ok), n, stride;
    PRNT_CHECK(ok, "the run without failures did not complete");
    stride = getenv("PRNT_FULL") ? 1 : (g_quick ? N / 40 : N / 400) + 1;
    printf("    %ld allocations; failing every %ld-th\n", N, stride);
    for (n = 1; n <= N; n += stride) {
        memset(got, 0, sizeof got);
        af_run(n, got, 512, &ok);
        PRNT_CHECK(ok, "n=%ld: not completed", n);
        if (ok) PRNT_CHECK(!memcmp(got, base, sizeof got), "n=%ld: gradients differ from the run without failures", n);
        if (prnt_cur_failed > 20) break;
    }
}

/* --- several iterations a call (prn_deer_fused's iters) -------------------- */
/* The context's backend wrapped twice: passing iters through, and making
 * every call one iteration (iters 0: what a backend that ignores iters
 * sees). Without adaptive damping prn_deer_rnn hands the backend several
 * iterations a call (no host round trip each on a device): far fewer
 * calls than iterations, and the same bits and statistics as one at a
 * time; never more than max_iter. */
static prn_backend g_mi_be[2];
static prn_status (*g_mi_inner)(prn_context *, prn_deer_fused *);
static long g_mi_calls[2];
static prn_status mi_multi(prn_context *ctx, prn_deer_fused *a) { g_mi_calls[0]++; return g_mi_inner(ctx, a); }
static prn_status mi_single(prn_context *ctx, prn_deer_fused *a) {
    prn_status st;
    g_mi_calls[1]++;
    a->iters = 0; a->y2 = NULL;
    st = g_mi_inner(ctx, a);
    if (st == PRN_OK && a->done > 1) return prn_set_error(ctx, PRN_ERR_BACKEND, "mi_single: %d iterations", a->done);
    return st;
}
static void multi_iters_case(size_t B, size_t T, int max_iter, int no_fallback) {
    const prn_backend *be = prn_context_backend(g_ctx);
    double *out[2] = {NULL, NULL};
    size_t n[2] = {0, 0};
    prn_deer_stats sts[2];
    int t;
    memset(sts, 0, sizeof sts);
    for (t = 0; t < 2; ++t) {
        prn_config cfg;
        const prn_backend *tbl[1];
        prn_context *ctx = NULL, *keep = g_ctx;
        prn_rnn_config c = cfg_of(PRN_RNN_GRU, PRN_F32, 3, 4, 1, 0);
        prn_rnn *r = NULL;
        prn_tensor *x = NULL, *y = NULL;
        prn_deer_options o;
        unsigned seed = 41u;
        char err[200];
        g_mi_be[t] = *be;
        g_mi_be[t].name = t ? "mi-single" : "mi-multi";
        g_mi_be[t].deer_iterate = t ? mi_single : mi_multi;
        g_mi_inner = be->deer_iterate;
        tbl[0] = &g_mi_be[t];
        memset(&cfg, 0, sizeof cfg);
        cfg.backend = g_mi_be[t].name;
        cfg.backends = tbl;
        cfg.num_backends = 1;
        cfg.seed = 5;
        g_mi_calls[t] = 0;
        if (prn_context_create(&cfg, &ctx, err, sizeof err) != PRN_OK) { PRNT_CHECK(0, "context: %s", err); break; }
        g_ctx = ctx;
        PRNT_OK(ctx, prn_rnn_create(ctx, &c, &r));
        if (r) scale_params(r, 3.0); /* a few more iterations */
        x = rand_tensor(PRN_F32, 3, B, T, 3, &seed, 1.0);
        memset(&o, 0, sizeof o);
        o.max_iter = max_iter;
        o.no_fallback = no_fallback;
        PRNT_OK(ctx, prn_deer_rnn(ctx, r, x, NULL, &o, &y, NULL, &sts[t]));
        if (y) {
            n[t] = prn_tensor_numel(y);
            out[t] = (double *)calloc(n[t], sizeof(double));
            prnt_download_f64(y, out[t]);
        }
        prn_tensor_free(x); prn_tensor_free(y);
        prn_rnn_free(r);
        prn_context_free(ctx);
        g_ctx = keep;
    }
    PRNT_CHECK(n[0] && n[0] == n[1] && out[0] && out[1] && !memcmp(out[0], out[1], n[0] * sizeof(double)),
               "B %lu T %lu max_iter %d: y differs between several iterations a call and one", (unsigned long)B,
               (unsigned long)T, max_iter);
    PRNT_CHECK(sts[0].iterations == sts[1].iterations && sts[0].residual == sts[1].residual &&
                   sts[0].converged == sts[1].converged && sts[0].fell_back == sts[1].fell_back &&
                   sts[0].nonfinite == sts[1].nonfinite,
               "statistics differ: iterations %d / %d, residual %g / %g, converged %d / %d, fell back %d / %d",
               sts[0].iterations, sts[1].iterations, sts[0].residual, sts[1].residual, sts[0].converged,
               sts[1].converged, sts[0].fell_back, sts[1].fell_back);
    PRNT_CHECK(sts[1].iterations >= 5 && g_mi_calls[1] == sts[1].iterations + 1,
               "one a call: %ld calls for %d iterations", g_mi_calls[1], sts[1].iterations);
    /* 1, 2, 4, 8 a call (capped by max_iter), one more for the last residual at max_iter */
    PRNT_CHECK(g_mi_calls[0] <= 5 && g_mi_calls[0] < g_mi_calls[1],
               "several a call: %ld calls for %d iterations", g_mi_calls[0], sts[0].iterations);
    free(out[0]); free(out[1]);
}
static void test_multi_iters(void) {
    if (!prn_context_backend(g_ctx)->deer_iterate) {
        printf("skip test_multi_iters: the backend has no deer_iterate\n");
        return;
    }
    multi_iters_case(3, 700, 0, 0);      /* converges */
    multi_iters_case(1, 3000, 0, 0);     /* time segments */
    multi_iters_case(3, 700, 6, 1);      /* stopped by max_iter: 1 + 2 + 3, then the residual */
}

int main(void) {
    g_ctx = prnt_context(1);
    if (!g_ctx) return 1;
    g_slow = strcmp(prn_context_backend_name(g_ctx), "reference") != 0;
    g_quick = getenv("PRNT_QUICK") != NULL;
    PRNT_RUN(test_equals_sequential);
    PRNT_RUN(test_long);
    PRNT_RUN(test_layers_directions);
    PRNT_RUN(test_gradients);
    PRNT_RUN(test_threads);
    PRNT_RUN(test_segments_amplifying);
    PRNT_RUN(test_discard_converged);
    PRNT_RUN(test_multi_iters);
    PRNT_RUN(test_user_cell);
    PRNT_RUN(test_nonconvergent);
    PRNT_RUN(test_damping);
    PRNT_RUN(test_nonfinite);
    PRNT_RUN(test_warm_start);
    PRNT_RUN(test_bad_input);
    if (g_slow) printf("skip test_alloc_failures: the allocator hooks are checked on the reference backend\n");
    else PRNT_RUN(test_alloc_failures);
    prn_context_free(g_ctx);
    return prnt_summary();
}
