/* Linear-recurrence RNN cells (minGRU, minLSTM, QRNN width 1 and 2, SRU,
 * GILR-LSTM) and prn_concat:
 *   - prn_cell_forward (every scan algorithm) against
 *     prn_cell_forward_sequential and against an independent host loop
 *     written from the papers' equations; f64 to 1e-12, f32 to 1e-5;
 *     with and without state0, T = 1 and a prime T, an empty batch;
 *   - the final state: continuing from it equals one longer call; a
 *     [T, input] x equals a batch of one;
 *   - gradients of every parameter, x and state0 against central finite
 *     differences (f64, relative error <= 1e-6), and the parallel and the
 *     sequential gradients agree;
 *   - short Adam training runs reduce the loss;
 *   - bad arguments give statuses and messages naming function and argument,
 *     change nothing (outputs, tape, live tensors); so do refused
 *     allocations (PRN_ERR_OUT_OF_MEMORY) at every point of a forward pass;
 *   - nothing leaks (prn_live_tensors back to its start value). */
#include "parrnn.h"
#include "prn_test.h"

static prn_context *ctx;

/* xorshift test data (independent of the library's generator) */
static uint64_t rng_state = 88172645463325252ull;
static double urand(void) {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static void fill_rand(double *v, size_t n, double lo, double hi) {
    size_t i;
    for (i = 0; i < n; ++i) v[i] = lo + (hi - lo) * urand();
}
static double *dalloc(size_t n) { return (double *)calloc(n ? n : 1, sizeof(double)); }

/* Host <-> tensor in either dtype; upload rounds v to the dtype in place. */
static prn_tensor *upload(prn_dtype dt, int nd, const size_t *shape, double *v) {
    prn_tensor *t = NULL;
    size_t n = 1, i;
    int k;
    for (k = 0; k < nd; ++k) n *= shape[k];
    if (dt == PRN_F32) {
        float *f = (float *)malloc(n * sizeof(float) + 1);
        for (i = 0; i < n; ++i) { f[i] = (float)v[i]; v[i] = (double)f[i]; }
        if (prn_tensor_from_host(ctx, dt, nd, shape, f, &t) != PRN_OK) printf("    upload: %s\n", prn_last_error(ctx));
        free(f);
    } else if (prn_tensor_from_host(ctx, dt, nd, shape, v, &t) != PRN_OK) {
        printf("    upload: %s\n", prn_last_error(ctx));
    }
    return t;
}
static void set_values(prn_tensor *t, double *v) { /* v rounded to t's dtype */
    size_t n = prn_tensor_numel(t), i;
    if (prn_tensor_dtype(t) == PRN_F32) {
        float *f = (float *)malloc(n * sizeof(float) + 1);
        for (i = 0; i < n; ++i) { f[i] = (float)v[i]; v[i] = (double)f[i]; }
        prn_tensor_upload(t, f, n);
        free(f);
    } else {
        prn_tensor_upload(t, v, n);
    }
}

/* ---- the cells under test ------------------------------------------------ */
enum { K_MINGRU, K_MINLSTM, K_QRNN, K_SRU, K_GILR };
typedef struct { const char *name; int kind, width; } cell_kind;
static const cell_kind kinds[] = {
    {"mingru", K_MINGRU, 1}, {"minlstm", K_MINLSTM, 1}, {"qrnn1", K_QRNN, 1},
    {"qrnn2", K_QRNN, 2},    {"sru", K_SRU, 1},         {"gilr_lstm", K_GILR, 1},
};
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

static prn_status make_cell(const cell_kind *k, prn_dtype dt, size_t NI, size_t H, prn_cell **out) {
    switch (k->kind) {
    case K_MINGRU: return prn_mingru_create(ctx, dt, NI, H, out);
    case K_MINLSTM: return prn_minlstm_create(ctx, dt, NI, H, out);
    case K_QRNN: return prn_qrnn_create(ctx, dt, NI, H, k->width, out);
    case K_SRU: return prn_sru_create(ctx, dt, NI, H, out);
    default: return prn_gilr_lstm_create(ctx, dt, NI, H, out);
    }
}
/* Random parameters (biases too, so that their placement is tested). */
static void randomize(prn_cell *c, double r) {
    prn_tensor *p[4];
    int n = prn_cell_params(c, p, 4), k;
    for (k = 0; k < n; ++k) {
        size_t m = prn_tensor_numel(p[k]);
        double *v = dalloc(m);
        fill_rand(v, m, -r, r);
        set_values(p[k], v);
        free(v);
    }
}

/* ---- independent host reference, from the papers' equations -------------- */
static double sg(double v) { return 1.0 / (1.0 + exp(-v)); }

/* x [B, T, NI], s0 [B, S] or NULL; h [B, T, H], sT [B, S]. */
static void ref_forward(const cell_kind *k, prn_cell *c, const double *x, const double *s0, size_t B, size_t T,
                        double *h, double *sT) {
    size_t NI = prn_cell_input_size(c), H = prn_cell_hidden_size(c), S = prn_cell_state_size(c);
    prn_tensor *p[4];
    int np = prn_cell_params(c, p, 4);
    size_t rows = prn_tensor_dim(p[0], 0), cols = prn_tensor_dim(p[0], 1), n, t, r, j, m;
    double *W = dalloc(rows * cols), *U = dalloc(H * 4 * H), *b = dalloc(cols);
    double *pre = dalloc(cols), *ut = dalloc(4 * H), *cs = dalloc(H), *ht = dalloc(H), *htn = dalloc(H);
    double *xin = dalloc(rows);
    prnt_download_f64(p[0], W);
    if (np == 3) prnt_download_f64(p[1], U);
    prnt_download_f64(p[np - 1], b);
    for (n = 0; n < B; ++n) {
        const double *s = s0 ? s0 + n * S : NULL;
        for (j = 0; j < H; ++j) {
            cs[j] = s ? s[k->kind == K_GILR ? H + j : j] : 0;
            ht[j] = s && k->kind == K_GILR ? s[j] : 0;
        }
        for (t = 0; t < T; ++t) {
            const double *xt = x + (n * T + t) * NI;
            double *hout = h + (n * T + t) * H;
            if (k->width == 2) { /* rows: x_{t-1} then x_t */
                for (r = 0; r < NI; ++r) {
                    xin[r] = t ? x[(n * T + t - 1) * NI + r] : (s ? s[H + r] : 0);
                    xin[NI + r] = xt[r];
                }
            } else {
                for (r = 0; r < NI; ++r) xin[r] = xt[r];
            }
            for (j = 0; j < cols; ++j) {
                double acc = 0;
                for (r = 0; r < rows; ++r) acc += xin[r] * W[r * cols + j];
                pre[j] = acc;
            }
            if (k->kind == K_GILR)
                for (j = 0; j < 4 * H; ++j) {
                    double acc = 0;
                    for (m = 0; m < H; ++m) acc += ht[m] * U[m * 4 * H + j];
                    ut[j] = acc;
                }
            for (j = 0; j < H; ++j) {
                switch (k->kind) {
                case K_MINGRU: {
                    double z = sg(pre[j] + b[j]), hh = pre[H + j] + b[H + j];
                    cs[j] = (1 - z) * cs[j] + z * hh;
                    hout[j] = cs[j];
                    break;
                }
                case K_MINLSTM: {
                    double f = sg(pre[j] + b[j]), i = sg(pre[H + j] + b[H + j]), hh = pre[2 * H + j] + b[2 * H + j];
                    cs[j] = f / (f + i) * cs[j] + i / (f + i) * hh;
                    hout[j] = cs[j];
                    break;
                }
                case K_QRNN: {
                    double z = tanh(pre[j] + b[j]), f = sg(pre[H + j] + b[H + j]), o = sg(pre[2 * H + j] + b[2 * H + j]);
                    cs[j] = f * cs[j] + (1 - f) * z;
                    hout[j] = o * cs[j];
                    break;
                }
                case K_SRU: {
                    double xt_ = pre[j], f = sg(pre[H + j] + b[j]), rr = sg(pre[2 * H + j] + b[H + j]);
                    double xp = NI == H ? xt[j] : pre[3 * H + j];
                    cs[j] = f * cs[j] + (1 - f) * xt_;
                    hout[j] = rr * cs[j] + (1 - rr) * xp;
                    break;
                }
                default: {
                    double g = sg(pre[j] + b[j]), jj = tanh(pre[H + j] + b[H + j]);
                    double f = sg(pre[2 * H + j] + ut[j] + b[2 * H + j]);
                    double i = sg(pre[3 * H + j] + ut[H + j] + b[3 * H + j]);
                    double o = sg(pre[4 * H + j] + ut[2 * H + j] + b[4 * H + j]);
                    double z = tanh(pre[5 * H + j] + ut[3 * H + j] + b[5 * H + j]);
                    htn[j] = g * ht[j] + (1 - g) * jj;
                    cs[j] = f * cs[j] + i * z;
                    hout[j] = o * cs[j];
                    break;
                }
                }
            }
            if (k->kind == K_GILR) memcpy(ht, htn, H * sizeof(double));
        }
        for (j = 0; j < H; ++j) {
            if (k->kind == K_GILR) { sT[n * S + j] = ht[j]; sT[n * S + H + j] = cs[j]; }
            else sT[n * S + j] = cs[j];
        }
        if (k->width == 2)
            for (r = 0; r < NI; ++r) sT[n * S + H + r] = x[(n * T + T - 1) * NI + r];
    }
    free(W); free(U); free(b); free(pre); free(ut); free(cs); free(ht); free(htn); free(xin);
}

/* ---- forward: parallel vs sequential vs reference ------------------------ */
static double worst_fw[2];

static void forward_case(const cell_kind *k, prn_dtype dt, size_t B, size_t T, size_t NI, size_t H, int with_s0,
                         int n_algos) {
    static const prn_scan_algo algos[4] = {PRN_SCAN_AUTO, PRN_SCAN_SEQUENTIAL, PRN_SCAN_CHUNKED, PRN_SCAN_TREE};
    prn_cell *c = NULL;
    size_t S, xs[3], ss[2], nh = B * T * H, a;
    double *x, *s0, *hr, *sr, *hp, *sp, *hq, *sq, tol = dt == PRN_F64 ? 1e-12 : 1e-5, e;
    prn_tensor *tx = NULL, *ts0 = NULL, *h = NULL, *st = NULL, *h2 = NULL, *st2 = NULL;
    char desc[128];
    PRNT_OK(ctx, make_cell(k, dt, NI, H, &c));
    if (!c) return;
    randomize(c, 0.8);
    S = prn_cell_state_size(c);
    snprintf(desc, sizeof desc, "%s %s B=%zu T=%zu NI=%zu H=%zu%s", k->name, prn_dtype_name(dt), B, T, NI, H,
             with_s0 ? " state0" : "");
    x = dalloc(B * T * NI); s0 = dalloc(B * S);
    hr = dalloc(nh); hp = dalloc(nh); hq = dalloc(nh);
    sr = dalloc(B * S); sp = dalloc(B * S); sq = dalloc(B * S);
    fill_rand(x, B * T * NI, -1.5, 1.5);
    fill_rand(s0, B * S, -1, 1);
    xs[0] = B; xs[1] = T; xs[2] = NI;
    ss[0] = B; ss[1] = S;
    tx = upload(dt, 3, xs, x);
    if (with_s0) ts0 = upload(dt, 2, ss, s0);
    ref_forward(k, c, x, with_s0 ? s0 : NULL, B, T, hr, sr);
    PRNT_OK(ctx, prn_cell_forward_sequential(ctx, c, tx, ts0, &h2, &st2));
    if (h2 && st2) {
        PRNT_CHECK(prn_tensor_ndim(h2) == 3 && prn_tensor_dim(h2, 0) == B && prn_tensor_dim(h2, 1) == T &&
                   prn_tensor_dim(h2, 2) == H, "%s: sequential h has the wrong shape", desc);
        PRNT_CHECK(prn_tensor_ndim(st2) == 2 && prn_tensor_dim(st2, 0) == B && prn_tensor_dim(st2, 1) == S,
                   "%s: sequential state has the wrong shape", desc);
        prnt_download_f64(h2, hq);
        prnt_download_f64(st2, sq);
        e = prnt_max_rel_err(hq, hr, nh);
        PRNT_CHECK(e <= tol, "%s: sequential h vs reference: rel err %.3g", desc, e);
        e = prnt_max_rel_err(sq, sr, B * S);
        PRNT_CHECK(e <= tol, "%s: sequential state vs reference: rel err %.3g", desc, e);
    }
    for (a = 0; a < (size_t)n_algos; ++a) {
        PRNT_OK(ctx, prn_cell_set_scan_algo(c, algos[a]));
        PRNT_OK(ctx, prn_cell_forward(ctx, c, tx, ts0, &h, &st));
        if (!h || !st) continue;
        PRNT_CHECK(prn_tensor_ndim(h) == 3 && prn_tensor_dim(h, 0) == B && prn_tensor_dim(h, 1) == T &&
                   prn_tensor_dim(h, 2) == H, "%s: h has the wrong shape", desc);
        prnt_download_f64(h, hp);
        prnt_download_f64(st, sp);
        e = prnt_max_rel_err(hp, hr, nh);
        if (e > worst_fw[dt == PRN_F32]) worst_fw[dt == PRN_F32] = e;
        PRNT_CHECK(e <= tol, "%s algo %d: parallel h vs reference: rel err %.3g", desc, (int)algos[a], e);
        e = prnt_max_rel_err(hp, hq, nh);
        PRNT_CHECK(e <= tol, "%s algo %d: parallel h vs sequential: rel err %.3g", desc, (int)algos[a], e);
        e = prnt_max_rel_err(sp, sr, B * S);
        PRNT_CHECK(e <= tol, "%s algo %d: parallel final state vs reference: rel err %.3g", desc, (int)algos[a], e);
        prn_tensor_free(h); prn_tensor_free(st);
        h = st = NULL;
    }
    prn_tape_clear(ctx);
    prn_tensor_free(h2); prn_tensor_free(st2); prn_tensor_free(tx); prn_tensor_free(ts0);
    prn_cell_free(c);
    free(x); free(s0); free(hr); free(hp); free(hq); free(sr); free(sp); free(sq);
}

static void test_forward(void) {
    static const size_t shapes[][4] = {{2, 1, 3, 4}, {3, 13, 3, 5}, {1, 7, 4, 4}, {2, 5, 3, 3}, {0, 3, 2, 3}};
    size_t live = prn_live_tensors(ctx);
    int k, s, h0;
    for (k = 0; k < NKINDS; ++k)
        for (s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); ++s)
            for (h0 = 0; h0 < 2; ++h0) {
                forward_case(&kinds[k], PRN_F64, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], h0, 4);
                forward_case(&kinds[k], PRN_F32, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], h0, 2);
            }
    printf("    worst rel err vs the host loop: f64 %.2e, f32 %.2e\n", worst_fw[0], worst_fw[1]);
    PRNT_CHECK(prn_live_tensors(ctx) == live, "live tensors %zu, want %zu", prn_live_tensors(ctx), live);
}

/* The final state carries a sequence on: x[:, :k] then x[:, k:] from its
 * state equals one call on x; step-by-step calls with T = 1 too; a [T, NI]
 * x equals a batch of one. */
static void test_state_continuation(void) {
    size_t live = prn_live_tensors(ctx), B = 2, T = 7, NI = 3, H = 4, K = 3, xs[3];
    int k, seq;
    for (k = 0; k < NKINDS; ++k)
        for (seq = 0; seq < 2; ++seq) {
            prn_status (*fw)(prn_context *, const prn_cell *, prn_tensor *, prn_tensor *, prn_tensor **, prn_tensor **) =
                seq ? prn_cell_forward_sequential : prn_cell_forward;
            prn_cell *c = NULL;
            prn_tensor *x = NULL, *x1 = NULL, *x2 = NULL, *h = NULL, *s = NULL, *h1 = NULL, *s1 = NULL, *h2 = NULL,
                       *s2 = NULL, *hj = NULL, *xo = NULL, *ho = NULL, *so = NULL, *cur = NULL;
            double *v = dalloc(B * T * NI), *a = dalloc(B * T * H), *b = dalloc(B * T * H);
            double sa[64], sb[64], e;
            size_t S, t;
            PRNT_OK(ctx, make_cell(&kinds[k], PRN_F64, NI, H, &c));
            if (!c) continue;
            randomize(c, 0.8);
            S = prn_cell_state_size(c);
            xs[0] = B; xs[1] = T; xs[2] = NI;
            fill_rand(v, B * T * NI, -1, 1);
            x = upload(PRN_F64, 3, xs, v);
            PRNT_OK(ctx, fw(ctx, c, x, NULL, &h, &s));
            PRNT_OK(ctx, prn_slice(ctx, x, 1, 0, K, &x1));
            PRNT_OK(ctx, prn_slice(ctx, x, 1, K, T - K, &x2));
            PRNT_OK(ctx, fw(ctx, c, x1, NULL, &h1, &s1));
            PRNT_OK(ctx, fw(ctx, c, x2, s1, &h2, &s2));
            PRNT_OK(ctx, prn_concat(ctx, h1, h2, 1, &hj));
            if (h && hj && s && s2) {
                prnt_download_f64(h, a); prnt_download_f64(hj, b);
                e = prnt_max_rel_err(b, a, B * T * H);
                PRNT_CHECK(e <= 1e-13, "%s seq=%d: h of two continued calls vs one: rel err %.3g", kinds[k].name, seq, e);
                prnt_download_f64(s, sa); prnt_download_f64(s2, sb);
                e = prnt_max_rel_err(sb, sa, B * S);
                PRNT_CHECK(e <= 1e-13, "%s seq=%d: final state of continued calls: rel err %.3g", kinds[k].name, seq, e);
            }
            /* one step at a time: the state after the last step */
            for (t = 0; t < T; ++t) {
                prn_tensor *xt = NULL, *ht = NULL, *nx = NULL;
                PRNT_OK(ctx, prn_slice(ctx, x, 1, t, 1, &xt));
                PRNT_OK(ctx, fw(ctx, c, xt, cur, &ht, &nx));
                prn_tensor_free(xt); prn_tensor_free(ht); prn_tensor_free(cur);
                cur = nx;
            }
            if (cur && s) {
                prnt_download_f64(cur, sb);
                e = prnt_max_rel_err(sb, sa, B * S);
                PRNT_CHECK(e <= 1e-13, "%s seq=%d: state after %zu single steps: rel err %.3g", kinds[k].name, seq, T, e);
            }
            /* [T, NI] for one sequence: the second of the batch */
            PRNT_OK(ctx, prn_slice(ctx, x, 0, 1, 1, &xo));
            {
                prn_tensor *x2d = NULL, *s0 = NULL, *s01 = NULL;
                size_t s2d[2], s1d[1];
                s2d[0] = T; s2d[1] = NI; s1d[0] = S;
                PRNT_OK(ctx, prn_reshape(ctx, xo, 2, s2d, &x2d));
                PRNT_OK(ctx, prn_slice(ctx, s, 0, 0, 1, &s0)); /* some state: the first sequence's final one */
                PRNT_OK(ctx, prn_reshape(ctx, s0, 1, s1d, &s01));
                PRNT_OK(ctx, fw(ctx, c, x2d, s01, &ho, &so));
                if (ho && so) {
                    prn_tensor *hb = NULL, *sbt = NULL, *xb = NULL;
                    PRNT_CHECK(prn_tensor_ndim(ho) == 2 && prn_tensor_dim(ho, 0) == T && prn_tensor_dim(ho, 1) == H,
                               "%s: h of a [T, NI] x is not [T, H]", kinds[k].name);
                    PRNT_CHECK(prn_tensor_ndim(so) == 1 && prn_tensor_dim(so, 0) == S, "%s: state of a [T, NI] x is not [S]",
                               kinds[k].name);
                    PRNT_OK(ctx, prn_copy(ctx, xo, &xb));
                    PRNT_OK(ctx, fw(ctx, c, xb, s0, &hb, &sbt));
                    if (hb && sbt) {
                        prnt_download_f64(ho, a); prnt_download_f64(hb, b);
                        PRNT_CHECK(prnt_max_rel_err(a, b, T * H) == 0, "%s: [T, NI] x differs from a batch of one",
                                   kinds[k].name);
                        prnt_download_f64(so, sa); prnt_download_f64(sbt, sb);
                        PRNT_CHECK(prnt_max_rel_err(sa, sb, S) == 0, "%s: [T, NI] state differs", kinds[k].name);
                    }
                    prn_tensor_free(hb); prn_tensor_free(sbt); prn_tensor_free(xb);
                }
                prn_tensor_free(x2d); prn_tensor_free(s0); prn_tensor_free(s01);
            }
            prn_tape_clear(ctx);
            prn_tensor_free(x); prn_tensor_free(x1); prn_tensor_free(x2); prn_tensor_free(h); prn_tensor_free(s);
            prn_tensor_free(h1); prn_tensor_free(s1); prn_tensor_free(h2); prn_tensor_free(s2); prn_tensor_free(hj);
            prn_tensor_free(xo); prn_tensor_free(ho); prn_tensor_free(so); prn_tensor_free(cur);
            prn_cell_free(c);
            free(v); free(a); free(b);
        }
    PRNT_CHECK(prn_live_tensors(ctx) == live, "live tensors %zu, want %zu", prn_live_tensors(ctx), live);
}

/* ---- gradients ----------------------------------------------------------- */
/* L = sum(h * R1) + sum(state * R2) */
static prn_status loss_of(prn_cell *c, int seq, prn_tensor *x, prn_tensor *s0, prn_tensor *R1, prn_tensor *R2,
                          prn_tensor **L) {
    prn_tensor *h = NULL, *s = NULL, *p = NULL, *q = NULL, *l1 = NULL, *l2 = NULL;
    prn_status st = seq ? prn_cell_forward_sequential(ctx, c, x, s0, &h, &s) : prn_cell_forward(ctx, c, x, s0, &h, &s);
    if (st == PRN_OK) st = prn_mul(ctx, h, R1, &p);
    if (st == PRN_OK) st = prn_sum(ctx, p, PRN_ALL_AXES, 0, &l1);
    if (st == PRN_OK) st = prn_mul(ctx, s, R2, &q);
    if (st == PRN_OK) st = prn_sum(ctx, q, PRN_ALL_AXES, 0, &l2);
    if (st == PRN_OK) st = prn_add(ctx, l1, l2, L);
    prn_tensor_free(h); prn_tensor_free(s); prn_tensor_free(p); prn_tensor_free(q);
    prn_tensor_free(l1); prn_tensor_free(l2);
    return st;
}
static double loss_value(prn_cell *c, prn_tensor *x, prn_tensor *s0, prn_tensor *R1, prn_tensor *R2) {
    prn_tensor *L = NULL;
    double v = NAN;
    prn_no_grad_begin(ctx);
    if (loss_of(c, 0, x, s0, R1, R2, &L) == PRN_OK) prn_tensor_item(L, &v);
    prn_no_grad_end(ctx);
    prn_tensor_free(L);
    return v;
}

static double worst_gc;

static void grad_case(const cell_kind *k, size_t B, size_t T, size_t NI, size_t H, int with_s0) {
    prn_cell *c = NULL;
    prn_tensor *leaf[5], *x = NULL, *s0 = NULL, *R1 = NULL, *R2 = NULL, *L = NULL;
    double *g_par[5], *g_seq[5];
    int nleaf = 0, np, j, seq;
    size_t S, xs[3], ss[2], hs[3];
    const char *lname[5];
    char desc[96];
    PRNT_OK(ctx, make_cell(k, PRN_F64, NI, H, &c));
    if (!c) return;
    randomize(c, 0.7);
    S = prn_cell_state_size(c);
    snprintf(desc, sizeof desc, "%s B=%zu T=%zu NI=%zu H=%zu%s", k->name, B, T, NI, H, with_s0 ? " state0" : "");
    np = prn_cell_params(c, leaf, 5);
    for (j = 0; j < np; ++j) lname[j] = prn_cell_param_name(c, j);
    nleaf = np;
    xs[0] = B; xs[1] = T; xs[2] = NI;
    ss[0] = B; ss[1] = S;
    hs[0] = B; hs[1] = T; hs[2] = H;
    prn_seed(ctx, 77);
    PRNT_OK(ctx, prn_tensor_uniform(ctx, PRN_F64, 3, xs, -1.2, 1.2, &x));
    PRNT_OK(ctx, prn_tensor_normal(ctx, PRN_F64, 3, hs, 0, 1, &R1));
    PRNT_OK(ctx, prn_tensor_normal(ctx, PRN_F64, 2, ss, 0, 1, &R2));
    prn_tensor_set_requires_grad(x, 1);
    leaf[nleaf] = x; lname[nleaf++] = "x";
    if (with_s0) {
        PRNT_OK(ctx, prn_tensor_uniform(ctx, PRN_F64, 2, ss, -1, 1, &s0));
        prn_tensor_set_requires_grad(s0, 1);
        leaf[nleaf] = s0; lname[nleaf++] = "state0";
    }
    for (j = 0; j < nleaf; ++j) {
        g_par[j] = dalloc(prn_tensor_numel(leaf[j]));
        g_seq[j] = dalloc(prn_tensor_numel(leaf[j]));
    }
    for (seq = 0; seq < 2; ++seq) {
        for (j = 0; j < nleaf; ++j) prn_tensor_zero_grad(leaf[j]);
        PRNT_OK(ctx, loss_of(c, seq, x, s0, R1, R2, &L));
        if (L) PRNT_OK(ctx, prn_backward(ctx, L));
        prn_tensor_free(L);
        L = NULL;
        for (j = 0; j < nleaf; ++j) {
            prn_tensor *g = prn_tensor_grad(leaf[j]);
            PRNT_CHECK(g != NULL, "%s: no gradient for %s", desc, lname[j]);
            if (g) prnt_download_f64(g, seq ? g_seq[j] : g_par[j]);
        }
    }
    PRNT_CHECK(prn_tape_size(ctx) == 0, "%s: tape not empty after backward", desc);
    /* finite differences on every element of every leaf */
    for (j = 0; j < nleaf; ++j) {
        size_t n = prn_tensor_numel(leaf[j]), e;
        double *v = dalloc(n), worst = 0, gap;
        prnt_download_f64(leaf[j], v);
        for (e = 0; e < n; ++e) {
            const double step = 1e-6, v0 = v[e];
            double lp, lm, num, err;
            v[e] = v0 + step; prn_tensor_upload(leaf[j], v, n);
            lp = loss_value(c, x, s0, R1, R2);
            v[e] = v0 - step; prn_tensor_upload(leaf[j], v, n);
            lm = loss_value(c, x, s0, R1, R2);
            v[e] = v0; prn_tensor_upload(leaf[j], v, n);
            num = (lp - lm) / (2 * step);
            err = fabs(num - g_par[j][e]) / (fabs(num) > 1 ? fabs(num) : 1);
            if (!(err <= worst)) worst = err;
            PRNT_CHECK(err <= 1e-6, "%s: dL/d%s[%zu]: analytic %.12g numeric %.12g (rel err %.3g)", desc, lname[j], e,
                       g_par[j][e], num, err);
        }
        if (worst > worst_gc) worst_gc = worst;
        gap = prnt_max_rel_err(g_seq[j], g_par[j], n);
        PRNT_CHECK(gap <= 1e-11, "%s: dL/d%s: sequential vs parallel gradients differ by %.3g", desc, lname[j], gap);
        free(v);
    }
    for (j = 0; j < nleaf; ++j) { free(g_par[j]); free(g_seq[j]); }
    prn_tensor_free(x); prn_tensor_free(s0); prn_tensor_free(R1); prn_tensor_free(R2);
    prn_cell_free(c);
}

static void test_gradients(void) {
    size_t live = prn_live_tensors(ctx);
    int k;
    for (k = 0; k < NKINDS; ++k) {
        grad_case(&kinds[k], 2, 5, 3, 4, 1);
        grad_case(&kinds[k], 1, 3, 2, 2, 0);
    }
    grad_case(&kinds[4], 2, 5, 3, 3, 1); /* SRU with input_size == hidden_size: the highway term is x */
    printf("    worst rel err vs finite differences %.2e\n", worst_gc);
    PRNT_CHECK(prn_live_tensors(ctx) == live, "live tensors %zu, want %zu", prn_live_tensors(ctx), live);
}

/* ---- training ------------------------------------------------------------- */
/* A leaky running sum of a scalar input, y_t = s_t / 2 with
 * s_t = 0.7 s_{t-1} + x_t, read out by a linear layer from h; Adam on the
 * cell and the readout (lr 0.03). Returns the first and last loss. */
static void train(const cell_kind *k, int steps, double *first, double *last) {
    const size_t B = 16, T = 12, NI = 1, H = 8;
    prn_cell *c = NULL;
    prn_tensor *p[6], *x = NULL, *y = NULL, *V = NULL, *vb = NULL;
    prn_optim *opt = NULL;
    prn_adam_config cfg;
    double *xv = dalloc(B * T), *yv = dalloc(B * T);
    size_t xs[3], vs[2], n, t;
    int np, s;
    *first = *last = NAN;
    for (n = 0; n < B; ++n) {
        double acc = 0;
        for (t = 0; t < T; ++t) {
            xv[n * T + t] = 2 * urand() - 1;
            acc = 0.7 * acc + xv[n * T + t];
            yv[n * T + t] = 0.5 * acc;
        }
    }
    xs[0] = B; xs[1] = T; xs[2] = NI;
    x = upload(PRN_F64, 3, xs, xv);
    y = upload(PRN_F64, 3, xs, yv);
    prn_seed(ctx, 5);
    PRNT_OK(ctx, make_cell(k, PRN_F64, NI, H, &c));
    vs[0] = H; vs[1] = 1;
    PRNT_OK(ctx, prn_tensor_uniform(ctx, PRN_F64, 2, vs, -0.3, 0.3, &V));
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 1, vs + 1, &vb));
    if (!c || !V || !vb) goto done;
    prn_tensor_set_requires_grad(V, 1);
    prn_tensor_set_requires_grad(vb, 1);
    np = prn_cell_params(c, p, 4);
    p[np++] = V;
    p[np++] = vb;
    memset(&cfg, 0, sizeof cfg);
    cfg.lr = 0.03;
    PRNT_OK(ctx, prn_optim_adam_create(ctx, p, np, &cfg, &opt));
    if (!opt) goto done;
    for (s = 0; s < steps; ++s) {
        prn_tensor *h = NULL, *pred = NULL, *pb = NULL, *L = NULL;
        double l = NAN;
        prn_status st = prn_cell_forward(ctx, c, x, NULL, &h, NULL);
        if (st == PRN_OK) st = prn_matmul(ctx, h, V, &pred);
        if (st == PRN_OK) st = prn_add(ctx, pred, vb, &pb);
        if (st == PRN_OK) st = prn_mse(ctx, pb, y, &L);
        if (st == PRN_OK) st = prn_tensor_item(L, &l);
        prn_optim_zero_grad(opt);
        if (st == PRN_OK) st = prn_backward(ctx, L);
        if (st == PRN_OK) st = prn_optim_step(opt);
        PRNT_CHECK(st == PRN_OK, "%s: training step %d: %s", k->name, s, prn_last_error(ctx));
        prn_tensor_free(h); prn_tensor_free(pred); prn_tensor_free(pb); prn_tensor_free(L);
        if (st != PRN_OK) break;
        if (s == 0) *first = l;
        *last = l;
    }
done:
    prn_tape_clear(ctx);
    prn_optim_free(opt);
    prn_cell_free(c);
    prn_tensor_free(x); prn_tensor_free(y); prn_tensor_free(V); prn_tensor_free(vb);
    free(xv); free(yv);
}

static void test_training(void) {
    size_t live = prn_live_tensors(ctx);
    int k;
    for (k = 0; k < NKINDS; ++k) {
        double first, last, ratio;
        int steps = k == 0 ? 120 : 50; /* small: the suite also runs under valgrind */
        train(&kinds[k], steps, &first, &last);
        ratio = last / first;
        printf("    %-10s %3d Adam steps: loss %.4f -> %.6f (x%.4f)\n", kinds[k].name, steps, first, last, ratio);
        PRNT_CHECK(ratio < (k == 0 ? 0.002 : 0.1), "%s: training reduced the loss only to %.4f of its start",
                   kinds[k].name, ratio);
    }
    PRNT_CHECK(prn_live_tensors(ctx) == live, "live tensors %zu, want %zu", prn_live_tensors(ctx), live);
}

/* ---- prn_concat ----------------------------------------------------------- */
static void test_concat(void) {
    size_t live = prn_live_tensors(ctx), sa[3] = {2, 3, 2}, sb[3] = {2, 1, 2}, se[3] = {2, 0, 2};
    double va[12], vb[4], got[32], ga[12], gb[4], wv[16];
    prn_tensor *a, *b, *e = NULL, *y = NULL, *y2 = NULL, *W = NULL, *p = NULL, *L = NULL;
    size_t i, n, t, j;
    for (i = 0; i < 12; ++i) va[i] = (double)i;
    for (i = 0; i < 4; ++i) vb[i] = 100.0 + (double)i;
    a = upload(PRN_F64, 3, sa, va);
    b = upload(PRN_F64, 3, sb, vb);
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 3, se, &e));
    /* along the middle axis: [2, 4, 2] */
    PRNT_OK(ctx, prn_concat(ctx, a, b, 1, &y));
    if (y) {
        PRNT_CHECK(prn_tensor_dim(y, 0) == 2 && prn_tensor_dim(y, 1) == 4 && prn_tensor_dim(y, 2) == 2, "shape");
        prnt_download_f64(y, got);
        for (n = 0; n < 2; ++n)
            for (t = 0; t < 4; ++t)
                for (j = 0; j < 2; ++j) {
                    double want = t < 3 ? va[(n * 3 + t) * 2 + j] : vb[n * 2 + j];
                    PRNT_CHECK(got[(n * 4 + t) * 2 + j] == want, "concat[%zu,%zu,%zu] = %g, want %g", n, t, j,
                               got[(n * 4 + t) * 2 + j], want);
                }
    }
    prn_tensor_free(y); y = NULL;
    /* negative axis, an empty part */
    PRNT_OK(ctx, prn_concat(ctx, e, a, -2, &y));
    if (y) { prnt_download_f64(y, got); PRNT_CHECK(prnt_max_rel_err(got, va, 12) == 0 && prn_tensor_dim(y, 1) == 3, "empty a"); }
    prn_tensor_free(y); y = NULL;
    /* gradient: split back */
    prn_tensor_set_requires_grad(a, 1);
    prn_tensor_set_requires_grad(b, 1);
    for (i = 0; i < 16; ++i) wv[i] = (double)(i * i) - 3.0;
    {
        size_t sy[3] = {2, 4, 2};
        W = upload(PRN_F64, 3, sy, wv);
    }
    PRNT_OK(ctx, prn_concat(ctx, a, b, 1, &y));
    PRNT_OK(ctx, prn_mul(ctx, y, W, &p));
    PRNT_OK(ctx, prn_sum(ctx, p, PRN_ALL_AXES, 0, &L));
    PRNT_OK(ctx, prn_backward(ctx, L));
    if (prn_tensor_grad(a) && prn_tensor_grad(b)) {
        prnt_download_f64(prn_tensor_grad(a), ga);
        prnt_download_f64(prn_tensor_grad(b), gb);
        for (n = 0; n < 2; ++n)
            for (t = 0; t < 4; ++t)
                for (j = 0; j < 2; ++j) {
                    double g = t < 3 ? ga[(n * 3 + t) * 2 + j] : gb[n * 2 + j];
                    PRNT_CHECK(g == wv[(n * 4 + t) * 2 + j], "gradient at [%zu,%zu,%zu] = %g, want %g", n, t, j, g,
                               wv[(n * 4 + t) * 2 + j]);
                }
    } else {
        PRNT_CHECK(0, "concat: no gradients");
    }
    prn_tensor_free(y); prn_tensor_free(p); prn_tensor_free(L);
    y = p = L = NULL;
    /* along the first and last axes */
    PRNT_OK(ctx, prn_concat(ctx, a, a, 0, &y));
    PRNT_OK(ctx, prn_concat(ctx, a, a, 2, &y2));
    if (y && y2) {
        PRNT_CHECK(prn_tensor_dim(y, 0) == 4 && prn_tensor_dim(y2, 2) == 4, "axis 0 / 2 shapes");
        prnt_download_f64(y, got);
        PRNT_CHECK(prnt_max_rel_err(got, va, 12) == 0 && prnt_max_rel_err(got + 12, va, 4) == 0, "axis 0 values");
        prnt_download_f64(y2, got);
        PRNT_CHECK(got[0] == 0 && got[1] == 1 && got[2] == 0 && got[3] == 1 && got[4] == 2, "axis 2 values");
    }
    prn_tape_clear(ctx);
    prn_tensor_free(y); prn_tensor_free(y2);
    y = NULL;
    /* errors */
    PRNT_STATUS(ctx, prn_concat(ctx, a, b, 0, &y), PRN_ERR_SHAPE);
    PRNT_CHECK(strstr(prn_last_error(ctx), "prn_concat") && strstr(prn_last_error(ctx), "'b'"), "message: %s",
               prn_last_error(ctx));
    PRNT_STATUS(ctx, prn_concat(ctx, a, b, 3, &y), PRN_ERR_INVALID_ARGUMENT);
    PRNT_STATUS(ctx, prn_concat(ctx, a, NULL, 1, &y), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(ctx, prn_concat(ctx, a, b, 1, NULL), PRN_ERR_NULL_ARGUMENT);
    {
        prn_tensor *f = NULL;
        PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F32, 3, sb, &f));
        PRNT_STATUS(ctx, prn_concat(ctx, a, f, 1, &y), PRN_ERR_DTYPE);
        prn_tensor_free(f);
    }
    PRNT_CHECK(y == NULL, "output written on failure");
    prn_tensor_free(a); prn_tensor_free(b); prn_tensor_free(e); prn_tensor_free(W);
    PRNT_CHECK(prn_live_tensors(ctx) == live, "live tensors %zu, want %zu", prn_live_tensors(ctx), live);
}

/* ---- parameters, no-grad, information ------------------------------------- */
static void test_params_and_info(void) {
    static const char *want_names[NKINDS] = {"mingru", "minlstm", "qrnn", "qrnn", "sru", "gilr_lstm"};
    static const size_t want_state[NKINDS] = {4, 4, 4, 7, 4, 8};
    size_t live = prn_live_tensors(ctx), xs[3] = {2, 5, 3};
    int k;
    for (k = 0; k < NKINDS; ++k) {
        prn_cell *c = NULL;
        prn_tensor *p[4] = {NULL, NULL, NULL, NULL}, *x = NULL, *h = NULL;
        int n, j;
        PRNT_OK(ctx, make_cell(&kinds[k], PRN_F32, 3, 4, &c));
        if (!c) continue;
        n = prn_cell_params(c, NULL, 0);
        PRNT_CHECK(n == (kinds[k].kind == K_GILR ? 3 : 2), "%s: %d parameters", kinds[k].name, n);
        PRNT_CHECK(prn_cell_params(c, p, 1) == n && p[1] == NULL, "%s: max not honoured", kinds[k].name);
        prn_cell_params(c, p, 4);
        for (j = 0; j < n; ++j) {
            PRNT_CHECK(prn_tensor_requires_grad(p[j]), "%s: parameter %d does not require grad", kinds[k].name, j);
            PRNT_CHECK(prn_tensor_dtype(p[j]) == PRN_F32, "%s: parameter %d dtype", kinds[k].name, j);
        }
        PRNT_CHECK(strcmp(prn_cell_param_name(c, 0), "W") == 0 && strcmp(prn_cell_param_name(c, n - 1), "b") == 0 &&
                   prn_cell_param_name(c, n) == NULL && prn_cell_param_name(c, -1) == NULL, "%s: names", kinds[k].name);
        if (n == 3) PRNT_CHECK(strcmp(prn_cell_param_name(c, 1), "U") == 0, "gilr: U name");
        PRNT_CHECK(prn_tensor_dim(p[0], 0) == (size_t)kinds[k].width * 3, "%s: rows of W", kinds[k].name);
        PRNT_CHECK(strcmp(prn_cell_name(c), want_names[k]) == 0, "%s: name %s", kinds[k].name, prn_cell_name(c));
        PRNT_CHECK(prn_cell_input_size(c) == 3 && prn_cell_hidden_size(c) == 4, "%s: sizes", kinds[k].name);
        PRNT_CHECK(prn_cell_state_size(c) == want_state[k], "%s: state size %zu", kinds[k].name, prn_cell_state_size(c));
        /* biases start at 0, weights within +-1/sqrt(rows) and not all equal */
        {
            float wv[256], bv[64];
            size_t nw = prn_tensor_numel(p[0]), nb = prn_tensor_numel(p[n - 1]), i;
            double r = 1.0 / sqrt((double)prn_tensor_dim(p[0], 0)) + 1e-7;
            int spread = 0;
            prn_tensor_download(p[0], wv, nw);
            prn_tensor_download(p[n - 1], bv, nb);
            for (i = 0; i < nw; ++i) { PRNT_CHECK(fabs(wv[i]) <= r, "W[%zu] = %g", i, wv[i]); spread |= wv[i] != wv[0]; }
            for (i = 0; i < nb; ++i) PRNT_CHECK(bv[i] == 0, "b[%zu] = %g", i, bv[i]);
            PRNT_CHECK(spread, "%s: W is constant", kinds[k].name);
        }
        /* no-grad: nothing recorded, h needs no grad */
        PRNT_OK(ctx, prn_tensor_uniform(ctx, PRN_F32, 3, xs, -1, 1, &x));
        prn_no_grad_begin(ctx);
        PRNT_OK(ctx, prn_cell_forward(ctx, c, x, NULL, &h, NULL));
        prn_no_grad_end(ctx);
        PRNT_CHECK(prn_tape_size(ctx) == 0 && h && !prn_tensor_requires_grad(h), "%s: no-grad forward recorded",
                   kinds[k].name);
        prn_tensor_free(h); prn_tensor_free(x);
        prn_cell_free(c);
    }
    prn_cell_free(NULL);
    PRNT_CHECK(prn_cell_params(NULL, NULL, 0) == 0 && strcmp(prn_cell_name(NULL), "") == 0 &&
               prn_cell_state_size(NULL) == 0 && prn_cell_param_name(NULL, 0) == NULL, "NULL cell accessors");
    PRNT_CHECK(prn_live_tensors(ctx) == live, "live tensors %zu, want %zu", prn_live_tensors(ctx), live);
}

/* ---- bad arguments --------------------------------------------------------- */
#define SENTINEL ((prn_tensor *)&sentinel_obj)
static int sentinel_obj;

static void expect_fail(prn_status got, prn_status want, const char *fn, const char *arg, size_t tape, size_t live,
                        prn_tensor *h, prn_tensor *s, int line) {
    const char *m = prn_last_error(ctx);
    PRNT_CHECK(got == want, "line %d: got %s (%s), want %s", line, prn_status_string(got), m, prn_status_string(want));
    PRNT_CHECK(strncmp(m, fn, strlen(fn)) == 0, "line %d: message does not start with %s: %s", line, fn, m);
    PRNT_CHECK(!arg || strstr(m, arg), "line %d: message does not name %s: %s", line, arg, m);
    PRNT_CHECK(h == SENTINEL && s == SENTINEL, "line %d: an output was written on failure", line);
    PRNT_CHECK(prn_tape_size(ctx) == tape, "line %d: tape %zu, want %zu", line, prn_tape_size(ctx), tape);
    PRNT_CHECK(prn_live_tensors(ctx) == live, "line %d: live %zu, want %zu", line, prn_live_tensors(ctx), live);
}

static void test_bad_input(void) {
    size_t live0 = prn_live_tensors(ctx), xs[3] = {2, 4, 3}, x4[3] = {2, 4, 4}, s2[2] = {2, 4}, s3[2] = {3, 4};
    size_t x1[1] = {3}, x0[3] = {2, 0, 3}, sw[2] = {2, 5};
    prn_cell *c = NULL, *q2 = NULL, *out = (prn_cell *)&sentinel_obj, *other_cell = NULL;
    prn_tensor *x = NULL, *x32 = NULL, *xwide = NULL, *xv = NULL, *xe = NULL, *sok = NULL, *sbad = NULL, *s32 = NULL;
    prn_tensor *swrong = NULL, *h = SENTINEL, *s = SENTINEL, *dummy = NULL;
    prn_context *other = NULL;
    size_t tape, live;
    PRNT_OK(ctx, prn_sru_create(ctx, PRN_F64, 3, 4, &c));
    PRNT_OK(ctx, prn_qrnn_create(ctx, PRN_F64, 3, 4, 2, &q2));
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 3, xs, &x));
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F32, 3, xs, &x32));
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 3, x4, &xwide));
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 1, x1, &xv));
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 3, x0, &xe));
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 2, s2, &sok));
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 2, s3, &sbad));
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F32, 2, s2, &s32));
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 2, sw, &swrong));
    PRNT_OK(ctx, prn_context_create(NULL, &other, NULL, 0));
    if (!c || !q2 || !other) goto done;
    PRNT_OK(ctx, prn_mingru_create(other, PRN_F64, 3, 4, &other_cell));
    /* a recorded history on the tape, which failures must leave alone */
    prn_tensor_set_requires_grad(sok, 1);
    PRNT_OK(ctx, prn_scale(ctx, sok, 2.0, &dummy));
    tape = prn_tape_size(ctx);
    live = prn_live_tensors(ctx);
#define FW(call, want, fn, arg) do { prn_status st_ = (call); expect_fail(st_, want, fn, arg, tape, live, h, s, __LINE__); } while (0)
    PRNT_STATUS(ctx, prn_cell_forward(NULL, c, x, NULL, &h, &s), PRN_ERR_NULL_ARGUMENT);
    FW(prn_cell_forward(ctx, NULL, x, NULL, &h, &s), PRN_ERR_NULL_ARGUMENT, "prn_cell_forward:", "'cell'");
    FW(prn_cell_forward(ctx, c, NULL, NULL, &h, &s), PRN_ERR_NULL_ARGUMENT, "prn_cell_forward:", "'x'");
    FW(prn_cell_forward(ctx, c, x, NULL, NULL, &s), PRN_ERR_NULL_ARGUMENT, "prn_cell_forward:", "'h'");
    FW(prn_cell_forward(ctx, c, x32, NULL, &h, &s), PRN_ERR_DTYPE, "prn_cell_forward:", "'x'");
    FW(prn_cell_forward(ctx, c, x, s32, &h, &s), PRN_ERR_DTYPE, "prn_cell_forward:", "'state0'");
    FW(prn_cell_forward(ctx, c, xwide, NULL, &h, &s), PRN_ERR_SHAPE, "prn_cell_forward:", "input_size");
    FW(prn_cell_forward_sequential(ctx, c, xwide, NULL, &h, &s), PRN_ERR_SHAPE, "prn_cell_forward_sequential:", "'x'");
    FW(prn_cell_forward(ctx, c, xv, NULL, &h, &s), PRN_ERR_SHAPE, "prn_cell_forward:", "'x'");
    FW(prn_cell_forward(ctx, c, xe, NULL, &h, &s), PRN_ERR_SHAPE, "prn_cell_forward:", "T = 0");
    FW(prn_cell_forward(ctx, c, x, sbad, &h, &s), PRN_ERR_SHAPE, "prn_cell_forward:", "'state0'");
    FW(prn_cell_forward(ctx, q2, x, sok, &h, &s), PRN_ERR_SHAPE, "prn_cell_forward:", "state_size");
    FW(prn_cell_forward(ctx, c, x, swrong, &h, &s), PRN_ERR_SHAPE, "prn_cell_forward:", "'state0'");
    FW(prn_cell_forward(ctx, other_cell, x, NULL, &h, &s), PRN_ERR_CONTEXT_MISMATCH, "prn_cell_forward:", "'cell'");
    FW(prn_cell_forward_sequential(ctx, c, NULL, NULL, &h, &s), PRN_ERR_NULL_ARGUMENT, "prn_cell_forward_sequential:",
       "'x'");
    /* creation */
    PRNT_STATUS(ctx, prn_mingru_create(NULL, PRN_F64, 3, 4, &out), PRN_ERR_NULL_ARGUMENT);
    FW(prn_mingru_create(ctx, PRN_I32, 3, 4, &out), PRN_ERR_DTYPE, "prn_mingru_create:", "'dtype'");
    FW(prn_minlstm_create(ctx, PRN_F64, 0, 4, &out), PRN_ERR_INVALID_ARGUMENT, "prn_minlstm_create:", "'input_size'");
    FW(prn_sru_create(ctx, PRN_F64, 3, 0, &out), PRN_ERR_INVALID_ARGUMENT, "prn_sru_create:", "'hidden_size'");
    FW(prn_qrnn_create(ctx, PRN_F64, 3, 4, 3, &out), PRN_ERR_INVALID_ARGUMENT, "prn_qrnn_create:", "'width'");
    FW(prn_qrnn_create(ctx, PRN_F64, 3, 4, 0, &out), PRN_ERR_INVALID_ARGUMENT, "prn_qrnn_create:", "'width'");
    FW(prn_gilr_lstm_create(ctx, PRN_F64, 3, 4, NULL), PRN_ERR_NULL_ARGUMENT, "prn_gilr_lstm_create:", "'out'");
    FW(prn_gilr_lstm_create(ctx, PRN_F64, 3, (size_t)1 << 40, &out), PRN_ERR_OVERFLOW, "prn_gilr_lstm_create:",
       "'hidden_size'");
    PRNT_CHECK(out == (prn_cell *)&sentinel_obj, "create wrote its output on failure");
    FW(prn_cell_set_scan_algo(c, PRN_SCAN_ALGO_COUNT), PRN_ERR_INVALID_ARGUMENT, "prn_cell_set_scan_algo:", "'algo'");
    PRNT_STATUS(ctx, prn_cell_set_scan_algo(NULL, PRN_SCAN_AUTO), PRN_ERR_NULL_ARGUMENT);
#undef FW
    prn_tape_clear(ctx);
done:
    prn_tensor_free(dummy);
    prn_cell_free(c); prn_cell_free(q2); prn_cell_free(other_cell);
    prn_tensor_free(x); prn_tensor_free(x32); prn_tensor_free(xwide); prn_tensor_free(xv); prn_tensor_free(xe);
    prn_tensor_free(sok); prn_tensor_free(sbad); prn_tensor_free(s32); prn_tensor_free(swrong);
    prn_context_free(other);
    PRNT_CHECK(prn_live_tensors(ctx) == live0, "live tensors %zu, want %zu", prn_live_tensors(ctx), live0);
}

/* ---- allocation failures ---------------------------------------------------- */
/* A context whose allocator refuses the fail_at-th allocation. Every
 * allocation of a forward pass (and of creating a cell) is refused in turn:
 * the call must fail with PRN_ERR_OUT_OF_MEMORY and a message naming it, or
 * succeed; a failure leaves the outputs, the tape and the live tensors as
 * they were, and nothing leaks. */
typedef struct { long count, fail_at, live; } fa_state;
static void *fa_alloc(void *user, size_t size) {
    fa_state *fa = (fa_state *)user;
    if (++fa->count == fa->fail_at) return NULL;
    fa->live++;
    return malloc(size);
}
static void fa_free(void *user, void *ptr) {
    fa_state *fa = (fa_state *)user;
    if (!ptr) return;
    fa->live--;
    free(ptr);
}

static void test_alloc_failures(void) {
    static const int which[3] = {3, 4, 5}; /* qrnn2, sru, gilr_lstm: every helper path */
    fa_state fa;
    prn_config cfg;
    prn_context *c2 = NULL;
    char err[256];
    int w, seq, failures = 0;
    long n;
    memset(&fa, 0, sizeof fa);
    memset(&cfg, 0, sizeof cfg);
    cfg.allocator.alloc = fa_alloc;
    cfg.allocator.free = fa_free;
    cfg.allocator.user = &fa;
    if (prn_context_create(&cfg, &c2, err, sizeof err) != PRN_OK) { PRNT_CHECK(0, "context: %s", err); return; }
    for (w = 0; w < 3; ++w) {
        const cell_kind *k = &kinds[which[w]];
        prn_cell *c = NULL, *cc = (prn_cell *)&sentinel_obj;
        prn_tensor *x = NULL, *s0 = NULL;
        size_t xs[3] = {2, 2, 3}, ss[2], live;
        long before, used;
        prn_context *keep = ctx;
        ctx = c2; /* make_cell and the checks below use ctx */
        /* creation */
        for (n = 1;; ++n) {
            prn_status st;
            fa.fail_at = fa.count + n;
            st = make_cell(k, PRN_F64, 3, 4, &cc);
            fa.fail_at = 0;
            if (st == PRN_OK) { prn_cell_free(cc); break; }
            failures++;
            PRNT_CHECK(st == PRN_ERR_OUT_OF_MEMORY && strstr(prn_last_error(c2), "_create:") &&
                       cc == (prn_cell *)&sentinel_obj && prn_live_tensors(c2) == 0,
                       "%s: create with allocation %ld refused: %s (%s)", k->name, n, prn_status_string(st),
                       prn_last_error(c2));
        }
        PRNT_OK(c2, make_cell(k, PRN_F64, 3, 4, &c));
        ss[0] = 2; ss[1] = prn_cell_state_size(c);
        PRNT_OK(c2, prn_tensor_uniform(c2, PRN_F64, 3, xs, -1, 1, &x));
        PRNT_OK(c2, prn_tensor_uniform(c2, PRN_F64, 2, ss, -1, 1, &s0));
        prn_tensor_set_requires_grad(s0, 1);
        for (seq = 0; c && x && s0 && seq < 2; ++seq) {
            prn_tensor *h = NULL, *s = NULL;
            before = fa.count;
            PRNT_OK(c2, seq ? prn_cell_forward_sequential(c2, c, x, s0, &h, &s) : prn_cell_forward(c2, c, x, s0, &h, &s));
            used = fa.count - before;
            prn_tensor_free(h); prn_tensor_free(s);
            prn_tape_clear(c2);
            live = prn_live_tensors(c2);
            for (n = 1; n <= used + 2; ++n) {
                prn_status st;
                h = s = SENTINEL;
                fa.fail_at = fa.count + n;
                st = seq ? prn_cell_forward_sequential(c2, c, x, s0, &h, &s) : prn_cell_forward(c2, c, x, s0, &h, &s);
                fa.fail_at = 0;
                if (st == PRN_OK) {
                    prn_tensor_free(h); prn_tensor_free(s);
                    prn_tape_clear(c2);
                    continue;
                }
                failures++;
                PRNT_CHECK(st == PRN_ERR_OUT_OF_MEMORY, "%s seq=%d alloc %ld: %s", k->name, seq, n, prn_status_string(st));
                PRNT_CHECK(strncmp(prn_last_error(c2), seq ? "prn_cell_forward_sequential:" : "prn_cell_forward:",
                                   seq ? 28 : 17) == 0, "%s: message %s", k->name, prn_last_error(c2));
                PRNT_CHECK(h == SENTINEL && s == SENTINEL, "%s seq=%d alloc %ld: output written", k->name, seq, n);
                PRNT_CHECK(prn_tape_size(c2) == 0, "%s seq=%d alloc %ld: tape %zu", k->name, seq, n, prn_tape_size(c2));
                PRNT_CHECK(prn_live_tensors(c2) == live, "%s seq=%d alloc %ld: live %zu, want %zu", k->name, seq, n,
                           prn_live_tensors(c2), live);
            }
        }
        prn_tensor_free(x); prn_tensor_free(s0);
        prn_cell_free(c);
        PRNT_CHECK(prn_live_tensors(c2) == 0, "%s: live tensors %zu", k->name, prn_live_tensors(c2));
        ctx = keep;
    }
    prn_context_free(c2);
    PRNT_CHECK(fa.live == 0, "%ld allocations outstanding after prn_context_free", fa.live);
    PRNT_CHECK(failures > 100, "only %d refused allocations were seen", failures);
    printf("    %d refused allocations handled\n", failures);
}

int main(void) {
    if (!(ctx = prnt_context(42))) return 1;
    PRNT_RUN(test_concat);
    PRNT_RUN(test_params_and_info);
    PRNT_RUN(test_forward);
    PRNT_RUN(test_state_continuation);
    PRNT_RUN(test_gradients);
    PRNT_RUN(test_training);
    PRNT_RUN(test_bad_input);
    PRNT_RUN(test_alloc_failures);
    if (prn_live_tensors(ctx) != 0) {
        printf("FAIL %zu tensors alive at the end\n", prn_live_tensors(ctx));
        prnt_failed++;
    }
    prn_context_free(ctx);
    return prnt_summary();
}
