/* Recurrent networks (prn_rnn): step Jacobians against finite differences,
 * the step, per-frame and sequence APIs against each other, the PLRNN
 * family against a direct formula, gradients against finite differences,
 * model files, bad input. PyTorch equivalence: test_rnn_golden.c. */
#include "../parrnn.h"
#include "prn_crc32.h"
#include "prn_test.h"

static prn_context *g_ctx;

static const prn_rnn_kind k_all[] = {PRN_RNN_ELMAN, PRN_RNN_LSTM, PRN_RNN_GRU, PRN_RNN_MHGRU, PRN_RNN_PLRNN,
                                     PRN_RNN_SHPLRNN, PRN_RNN_CLIPPED_SHPLRNN, PRN_RNN_ALRNN};
#define NKINDS ((int)(sizeof k_all / sizeof k_all[0]))

/* A small network of each kind: NI inputs, H hidden (MHGRU: 2 heads). */
static prn_rnn_config cfg_of(prn_rnn_kind kind, prn_dtype dt, size_t NI, size_t H, int layers, int bidir, size_t O) {
    prn_rnn_config c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.dtype = dt;
    c.input_size = NI;
    c.hidden_size = H;
    c.num_layers = layers;
    c.bidirectional = bidir;
    c.output_size = O;
    if (kind == PRN_RNN_MHGRU) c.num_heads = 2;
    if (kind == PRN_RNN_SHPLRNN || kind == PRN_RNN_CLIPPED_SHPLRNN) c.shallow_size = 5;
    if (kind == PRN_RNN_ALRNN) c.num_relu = H / 2;
    return c;
}

static prn_tensor *host_tensor(prn_dtype dt, int nd, size_t d0, size_t d1, size_t d2, const double *v) {
    size_t shape[3], n;
    prn_tensor *t = NULL;
    shape[0] = d0; shape[1] = d1; shape[2] = d2;
    n = d0 * (nd > 1 ? d1 : 1) * (nd > 2 ? d2 : 1);
    if (prn_tensor_create(g_ctx, dt, nd, shape, &t) != PRN_OK) return NULL;
    if (n) prnt_upload_f64(t, v);
    return t;
}
static void rand_fill(double *v, size_t n, unsigned *seed, double scale) {
    size_t i;
    for (i = 0; i < n; ++i) {
        *seed = *seed * 1103515245u + 12345u;
        v[i] = scale * (((*seed >> 8) & 0xffff) / 32768.0 - 1.0);
    }
}
static double max_abs_diff(const double *a, const double *b, size_t n) {
    double m = 0;
    size_t i;
    for (i = 0; i < n; ++i) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}
/* Zero rows: every kind and mode gives empty results (the shallow PLRNN
 * kinds once failed in an inner prn_matmul: a batch of 0 against a single
 * matrix did not broadcast). */
static void test_jacobian_empty(void) {
    int kk, m;
    for (kk = 0; kk < NKINDS; ++kk) {
        prn_rnn_config c = cfg_of(k_all[kk], PRN_F64, 2, 4, 1, 0, 0);
        prn_rnn *r = NULL;
        prn_tensor *x, *s, *nx, *jac;
        PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
        if (!r) return;
        x = host_tensor(PRN_F64, 2, 0, 2, 0, NULL);
        s = host_tensor(PRN_F64, 2, 0, prn_rnn_state_size(r), 0, NULL);
        for (m = 0; m < 3; ++m) {
            nx = jac = NULL;
            PRNT_OK(g_ctx, prn_rnn_jacobian(g_ctx, r, x, s, (prn_jacobian_mode)m, &nx, &jac));
            PRNT_CHECK(nx && jac && prn_tensor_numel(nx) == 0 && prn_tensor_numel(jac) == 0 && prn_tensor_dim(nx, 0) == 0,
                       "%s mode %d: empty results", prn_rnn_kind_name(k_all[kk]), m);
            prn_tensor_free(nx); prn_tensor_free(jac);
        }
        prn_tensor_free(x); prn_tensor_free(s);
        prn_rnn_free(r);
    }
    {
        size_t sa[3] = {0, 2, 3}, sb[3] = {1, 3, 4};
        prn_tensor *a = NULL, *b = NULL, *y = NULL;
        prn_tensor_create(g_ctx, PRN_F64, 3, sa, &a);
        prn_tensor_create(g_ctx, PRN_F64, 3, sb, &b);
        PRNT_OK(g_ctx, prn_matmul(g_ctx, a, b, &y));
        PRNT_CHECK(y && prn_tensor_dim(y, 0) == 0 && prn_tensor_dim(y, 1) == 2 && prn_tensor_dim(y, 2) == 4,
                   "[0, 2, 3] @ [1, 3, 4] is [0, 2, 4]");
        prn_tensor_free(a); prn_tensor_free(b); prn_tensor_free(y);
    }
}

/* --- Jacobians against finite differences (f64) ------------------------- */
static void test_jacobian_fd(void) {
    int kk;
    for (kk = 0; kk < NKINDS; ++kk) {
        prn_rnn_kind kind = k_all[kk];
        size_t N = 3, NI = 2, H = 4, S, P, i, j, n;
        prn_rnn_config c = cfg_of(kind, PRN_F64, NI, H, 1, 0, 0);
        prn_rnn *r = NULL;
        double xs[3 * 2], ss[3 * 8], *J, *Jd, *Jb, *nx0, *np, *nm, step = 1e-6, err = 0, errd = 0, errb = 0;
        unsigned seed = 11u + (unsigned)kk;
        prn_tensor *x, *s, *nx = NULL, *jac = NULL, *jd = NULL, *jb = NULL, *sp, *n1 = NULL;
        PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
        if (!r) return;
        S = prn_rnn_state_size(r);
        P = prn_rnn_jacobian_block(r);
        rand_fill(xs, N * NI, &seed, 1.0);
        rand_fill(ss, N * S, &seed, 1.0);
        x = host_tensor(PRN_F64, 2, N, NI, 0, xs);
        s = host_tensor(PRN_F64, 2, N, S, 0, ss);
        PRNT_OK(g_ctx, prn_rnn_jacobian(g_ctx, r, x, s, PRN_JACOBIAN_DENSE, &nx, &jac));
        PRNT_OK(g_ctx, prn_rnn_jacobian(g_ctx, r, x, s, PRN_JACOBIAN_DIAG, NULL, &jd));
        PRNT_OK(g_ctx, prn_rnn_jacobian(g_ctx, r, x, s, PRN_JACOBIAN_BLOCK, NULL, &jb));
        if (!jac || !jd || !jb || !nx) { prn_rnn_free(r); return; }
        PRNT_CHECK(prn_tensor_ndim(jac) == 3 && prn_tensor_dim(jac, 1) == S && prn_tensor_dim(jac, 2) == S, "dense shape");
        PRNT_CHECK(prn_tensor_ndim(jd) == 2 && prn_tensor_dim(jd, 1) == S, "diag shape");
        PRNT_CHECK(prn_tensor_ndim(jb) == 3 && prn_tensor_dim(jb, 1) == S && prn_tensor_dim(jb, 2) == P, "block shape");
        J = (double *)malloc(N * S * S * sizeof *J);
        Jd = (double *)malloc(N * S * sizeof *Jd);
        Jb = (double *)malloc(N * S * P * sizeof *Jb);
        nx0 = (double *)malloc(N * S * sizeof *nx0);
        np = (double *)malloc(N * S * sizeof *np);
        nm = (double *)malloc(N * S * sizeof *nm);
        prn_tensor_download(jac, J, N * S * S);
        prn_tensor_download(jd, Jd, N * S);
        prn_tensor_download(jb, Jb, N * S * P);
        prn_tensor_download(nx, nx0, N * S);
        /* column j of every row's Jacobian by central differences of prn_rnn_step */
        for (j = 0; j < S; ++j) {
            double sv[3 * 8];
            memcpy(sv, ss, sizeof sv);
            for (n = 0; n < N; ++n) sv[n * S + j] += step;
            sp = host_tensor(PRN_F64, 2, N, S, 0, sv);
            prn_no_grad_begin(g_ctx);
            PRNT_OK(g_ctx, prn_rnn_step(g_ctx, r, x, sp, &n1));
            if (n1) prn_tensor_download(n1, np, N * S);
            prn_tensor_free(n1); n1 = NULL; prn_tensor_free(sp);
            for (n = 0; n < N; ++n) sv[n * S + j] -= 2 * step;
            sp = host_tensor(PRN_F64, 2, N, S, 0, sv);
            PRNT_OK(g_ctx, prn_rnn_step(g_ctx, r, x, sp, &n1));
            if (n1) prn_tensor_download(n1, nm, N * S);
            prn_no_grad_end(g_ctx);
            prn_tensor_free(n1); n1 = NULL; prn_tensor_free(sp);
            for (n = 0; n < N; ++n)
                for (i = 0; i < S; ++i) {
                    double fd = (np[n * S + i] - nm[n * S + i]) / (2 * step);
                    double d = fabs(fd - J[(n * S + i) * S + j]);
                    if (d > err) err = d;
                }
        }
        for (n = 0; n < N; ++n)
            for (i = 0; i < S; ++i) {
                double d = fabs(Jd[n * S + i] - J[(n * S + i) * S + i]);
                if (d > errd) errd = d;
                for (j = 0; j < P; ++j) { /* block (i / P) of row n */
                    double want = J[(n * S + i) * S + (i / P) * P + j];
                    d = fabs(Jb[(n * S + i) * P + j] - want);
                    if (d > errb) errb = d;
                }
            }
        if (kind == PRN_RNN_MHGRU) { /* block-diagonal: nothing outside the blocks */
            double off = 0;
            for (n = 0; n < N; ++n)
                for (i = 0; i < S; ++i)
                    for (j = 0; j < S; ++j)
                        if (i / P != j / P && fabs(J[(n * S + i) * S + j]) > off) off = fabs(J[(n * S + i) * S + j]);
            PRNT_CHECK(off == 0.0, "mhgru: off-block entry %g", off);
        }
        PRNT_CHECK(err < 1e-7, "%s: dense Jacobian vs finite differences: %g", prn_rnn_kind_name(kind), err);
        PRNT_CHECK(errd < 1e-12, "%s: diagonal mode vs dense: %g", prn_rnn_kind_name(kind), errd);
        PRNT_CHECK(errb < 1e-12, "%s: block mode vs dense: %g", prn_rnn_kind_name(kind), errb);
        free(J); free(Jd); free(Jb); free(nx0); free(np); free(nm);
        prn_tensor_free(x); prn_tensor_free(s); prn_tensor_free(nx); prn_tensor_free(jac); prn_tensor_free(jd);
        prn_tensor_free(jb);
        prn_rnn_free(r);
    }
}

/* --- the three evaluation paths agree ------------------------------------- */
/* prn_rnn_step T times == prn_rnn_forward (single layer), and the frame API
 * (stacked, with readout) == prn_rnn_forward + prn_rnn_readout. */
static void test_step_frame_sequence(void) {
    int kk, dti;
    for (dti = 0; dti < 2; ++dti)
        for (kk = 0; kk < NKINDS; ++kk) {
            prn_dtype dt = dti ? PRN_F64 : PRN_F32;
            double tol = dti ? 1e-11 : 2e-5;
            prn_rnn_kind kind = k_all[kk];
            size_t B = 2, T = 5, NI = 3, H = 4, O = 3, S, t, b;
            prn_rnn_config c1 = cfg_of(kind, dt, NI, H, 1, 0, 0), c2 = cfg_of(kind, dt, NI, H, 2, 0, O);
            prn_rnn *r1 = NULL, *r2 = NULL;
            prn_rnn_frame *fr = NULL;
            double xs[2 * 5 * 3], s0[2 * 2 * 8], *ys, *st, *st2, *ys2, yf[2 * 3], xf[2 * 3], sf[2 * 2 * 8], err = 0, errf = 0;
            unsigned seed = 5u + (unsigned)kk;
            prn_tensor *x, *s0t, *y = NULL, *fin = NULL, *cur, *nx = NULL, *xt, *y2 = NULL, *fin2 = NULL, *o2 = NULL, *s02;
            PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c1, &r1));
            PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c2, &r2));
            if (!r1 || !r2) { prn_rnn_free(r1); prn_rnn_free(r2); return; }
            S = prn_rnn_state_size(r1);
            rand_fill(xs, B * T * NI, &seed, 1.0);
            rand_fill(s0, 2 * B * S, &seed, 0.5);
            x = host_tensor(dt, 3, B, T, NI, xs);
            s0t = host_tensor(dt, 3, 1, B, S, s0);
            prn_no_grad_begin(g_ctx);
            PRNT_OK(g_ctx, prn_rnn_forward(g_ctx, r1, x, s0t, &y, &fin));
            ys = (double *)malloc(B * T * H * sizeof *ys);
            st = (double *)malloc(B * S * sizeof *st);
            if (y) prnt_download_f64(y, ys);
            if (fin) prnt_download_f64(fin, st);
            cur = host_tensor(dt, 2, B, S, 0, s0);
            for (t = 0; t < T; ++t) {
                double xv[2 * 3], hv[2 * 8];
                for (b = 0; b < B; ++b) memcpy(xv + b * NI, xs + (b * T + t) * NI, NI * sizeof *xv);
                xt = host_tensor(dt, 2, B, NI, 0, xv);
                PRNT_OK(g_ctx, prn_rnn_step(g_ctx, r1, xt, cur, &nx));
                prn_tensor_free(xt);
                prn_tensor_free(cur);
                cur = nx;
                nx = NULL;
                if (!cur) break;
                prnt_download_f64(cur, hv);
                for (b = 0; b < B; ++b) {
                    double d = max_abs_diff(hv + b * S, ys + (b * T + t) * H, H);
                    if (d > err) err = d;
                }
                if (t == T - 1) {
                    double d = max_abs_diff(hv, st, B * S);
                    if (d > err) err = d;
                }
            }
            prn_tensor_free(cur);
            PRNT_CHECK(err <= tol, "%s %s: step vs forward %g", prn_rnn_kind_name(kind), prn_dtype_name(dt), err);
            /* stacked with readout: frames against the sequence */
            s02 = host_tensor(dt, 3, 2, B, S, s0);
            PRNT_OK(g_ctx, prn_rnn_forward(g_ctx, r2, x, s02, &y2, &fin2));
            if (y2) PRNT_OK(g_ctx, prn_rnn_readout(g_ctx, r2, y2, &o2));
            prn_no_grad_end(g_ctx);
            ys2 = (double *)malloc(B * T * O * sizeof *ys2);
            st2 = (double *)malloc(2 * B * S * sizeof *st2);
            if (o2) prnt_download_f64(o2, ys2);
            if (fin2) prnt_download_f64(fin2, st2);
            PRNT_OK(g_ctx, prn_rnn_frame_create(r2, B, &fr));
            if (fr) {
                PRNT_CHECK(prn_rnn_frame_memory(fr) > 0, "frame memory");
                PRNT_OK(g_ctx, prn_rnn_frame_set_state(fr, s0));
                for (t = 0; t < T; ++t) {
                    for (b = 0; b < B; ++b) memcpy(xf + b * NI, xs + (b * T + t) * NI, NI * sizeof *xf);
                    PRNT_OK(g_ctx, prn_rnn_frame_step(fr, xf, yf));
                    for (b = 0; b < B; ++b) {
                        double d = max_abs_diff(yf + b * O, ys2 + (b * T + t) * O, O);
                        if (d > errf) errf = d;
                    }
                }
                PRNT_OK(g_ctx, prn_rnn_frame_get_state(fr, sf));
                {
                    double d = max_abs_diff(sf, st2, 2 * B * S);
                    if (d > errf) errf = d;
                }
                { /* one row: zero in every layer, the other row kept */
                    double s2[2 * 2 * 8];
                    PRNT_OK(g_ctx, prn_rnn_frame_reset_row(fr, 1));
                    PRNT_STATUS(g_ctx, prn_rnn_frame_reset_row(fr, 2), PRN_ERR_INVALID_ARGUMENT);
                    PRNT_OK(g_ctx, prn_rnn_frame_get_state(fr, s2));
                    for (t = 0; t < 2; ++t) /* layers */
                        for (b = 0; b < S; ++b)
                            PRNT_CHECK(s2[(t * B + 1) * S + b] == 0.0 && s2[(t * B) * S + b] == sf[(t * B) * S + b],
                                       "reset_row layer %lu", (unsigned long)t);
                }
                prn_rnn_frame_reset(fr);
                PRNT_OK(g_ctx, prn_rnn_frame_get_state(fr, sf));
                PRNT_CHECK(sf[0] == 0.0 && sf[2 * B * S - 1] == 0.0, "reset");
            }
            PRNT_CHECK(errf <= tol * 5, "%s %s: frame vs forward+readout %g", prn_rnn_kind_name(kind), prn_dtype_name(dt), errf);
            prn_rnn_frame_free(fr);
            free(ys); free(st); free(ys2); free(st2);
            prn_tensor_free(x); prn_tensor_free(s0t); prn_tensor_free(y); prn_tensor_free(fin); prn_tensor_free(s02);
            prn_tensor_free(y2); prn_tensor_free(fin2); prn_tensor_free(o2);
            prn_rnn_free(r1);
            prn_rnn_free(r2);
        }
}

/* --- the PLRNN family against its formula --------------------------------- */
static double *param_host(prn_rnn *r, const char *name, size_t *n) {
    prn_tensor *t = prn_rnn_param(r, name);
    double *v;
    if (!t) return NULL;
    *n = prn_tensor_numel(t);
    v = (double *)malloc((*n ? *n : 1) * sizeof *v);
    prnt_download_f64(t, v);
    return v;
}
static void test_plrnn_formula(void) {
    int kk;
    for (kk = 4; kk < NKINDS; ++kk) {
        prn_rnn_kind kind = k_all[kk];
        size_t M = 6, Lw = 5, NI = 2, T = 7, n, t, i, j;
        int autonomous;
        for (autonomous = 0; autonomous < 2; ++autonomous) {
            prn_rnn_config c = cfg_of(kind, PRN_F64, autonomous ? 0 : NI, M, 1, 0, 0);
            prn_rnn *r = NULL;
            double xs[7 * 2], z[6], zn[6], *A, *W = NULL, *W1 = NULL, *W2 = NULL, *h, *h2 = NULL, *C = NULL, ys[7 * 6], err = 0;
            unsigned seed = 99u + (unsigned)kk;
            prn_tensor *x, *y = NULL;
            size_t shape[2];
            int sh = kind == PRN_RNN_SHPLRNN || kind == PRN_RNN_CLIPPED_SHPLRNN;
            PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
            if (!r) return;
            A = param_host(r, "A_l0", &n);
            h = param_host(r, sh ? "h1_l0" : "h_l0", &n);
            if (sh) { W1 = param_host(r, "W1_l0", &n); W2 = param_host(r, "W2_l0", &n); h2 = param_host(r, "h2_l0", &n); }
            else W = param_host(r, "W_l0", &n);
            if (!autonomous) C = param_host(r, "C_l0", &n);
            PRNT_CHECK(autonomous == (prn_rnn_param(r, "C_l0") == NULL), "C present iff there are inputs");
            /* a nonzero h, so that the trajectory moves */
            {
                double hv[6];
                rand_fill(hv, M, &seed, 0.5);
                prn_tensor_upload(prn_rnn_param(r, sh ? "h1_l0" : "h_l0"), hv, M);
                memcpy(h, hv, sizeof hv);
            }
            rand_fill(xs, T * NI, &seed, 1.0);
            shape[0] = T; shape[1] = autonomous ? 0 : NI;
            x = NULL;
            PRNT_OK(g_ctx, prn_tensor_from_host(g_ctx, PRN_F64, 2, shape, xs, &x));
            PRNT_OK(g_ctx, prn_rnn_forward(g_ctx, r, x, NULL, &y, NULL));
            if (y) prn_tensor_download(y, ys, T * M);
            for (i = 0; i < M; ++i) z[i] = 0;
            for (t = 0; t < T; ++t) {
                for (i = 0; i < M; ++i) {
                    double s = A[i] * z[i] + h[i];
                    if (!autonomous) for (j = 0; j < NI; ++j) s += C[i * NI + j] * xs[t * NI + j];
                    if (sh) {
                        size_t l;
                        for (l = 0; l < Lw; ++l) {
                            double v = 0;
                            for (j = 0; j < M; ++j) v += W2[l * M + j] * z[j];
                            s += W1[i * Lw + l] * (fmax(v + h2[l], 0) - (kind == PRN_RNN_CLIPPED_SHPLRNN ? fmax(v, 0) : 0));
                        }
                    } else {
                        for (j = 0; j < M; ++j) {
                            double phi = kind == PRN_RNN_ALRNN && j < M - M / 2 ? z[j] : fmax(z[j], 0);
                            s += W[i * M + j] * phi;
                        }
                    }
                    zn[i] = s;
                }
                memcpy(z, zn, sizeof z);
                {
                    double d = max_abs_diff(z, ys + t * M, M);
                    if (d > err) err = d;
                }
            }
            PRNT_CHECK(err < 1e-12, "%s%s: forward vs formula %g", prn_rnn_kind_name(kind), autonomous ? " (autonomous)" : "", err);
            free(A); free(W); free(W1); free(W2); free(h); free(h2); free(C);
            prn_tensor_free(x); prn_tensor_free(y);
            prn_tape_clear(g_ctx);
            prn_rnn_free(r);
        }
    }
}

/* --- gradients against finite differences (f64) --------------------------- */
/* loss = sum(y * Ry) + sum(state * Rs) */
static double loss_of(prn_rnn *r, prn_tensor *x, prn_tensor *s0, prn_tensor *Ry, prn_tensor *Rs, int backward) {
    prn_tensor *y = NULL, *fin = NULL, *a = NULL, *b = NULL, *sa = NULL, *sb = NULL, *l = NULL;
    double v = NAN;
    if (prn_rnn_forward(g_ctx, r, x, s0, &y, &fin) == PRN_OK && prn_mul(g_ctx, y, Ry, &a) == PRN_OK &&
        prn_mul(g_ctx, fin, Rs, &b) == PRN_OK && prn_sum(g_ctx, a, PRN_ALL_AXES, 0, &sa) == PRN_OK &&
        prn_sum(g_ctx, b, PRN_ALL_AXES, 0, &sb) == PRN_OK && prn_add(g_ctx, sa, sb, &l) == PRN_OK) {
        prn_tensor_item(l, &v);
        if (backward && prn_backward(g_ctx, l) != PRN_OK) v = NAN;
    }
    prn_tensor_free(y); prn_tensor_free(fin); prn_tensor_free(a); prn_tensor_free(b);
    prn_tensor_free(sa); prn_tensor_free(sb); prn_tensor_free(l);
    prn_tape_clear(g_ctx);
    return v;
}
static double fd_check(prn_rnn *r, prn_tensor *p, prn_tensor *x, prn_tensor *s0, prn_tensor *Ry, prn_tensor *Rs) {
    size_t n = prn_tensor_numel(p), i, stride = n > 12 ? n / 12 : 1;
    double *v = (double *)malloc(n * sizeof *v), *g = (double *)malloc(n * sizeof *g), worst = 0, h = 1e-6;
    prn_tensor *gt = prn_tensor_grad(p);
    prn_tensor_download(p, v, n);
    if (gt) prn_tensor_download(gt, g, n);
    else memset(g, 0, n * sizeof *g);
    for (i = 0; i < n; i += stride) {
        double o = v[i], lp, lm, fd, d;
        v[i] = o + h; prn_tensor_upload(p, v, n);
        prn_no_grad_begin(g_ctx);
        lp = loss_of(r, x, s0, Ry, Rs, 0);
        v[i] = o - h; prn_tensor_upload(p, v, n);
        lm = loss_of(r, x, s0, Ry, Rs, 0);
        prn_no_grad_end(g_ctx);
        v[i] = o; prn_tensor_upload(p, v, n);
        fd = (lp - lm) / (2 * h);
        d = fabs(fd - g[i]) / fmax(1.0, fabs(fd));
        if (!(d <= worst)) worst = d;
    }
    free(v); free(g);
    return worst;
}
static void test_gradients_fd(void) {
    int kk, variant;
    for (kk = 0; kk < NKINDS; ++kk)
        for (variant = 0; variant < 2; ++variant) {
            prn_rnn_kind kind = k_all[kk];
            int layers = variant ? 2 : 1, bidir = variant;
            size_t B = 2, T = 4, NI = 3, H = 4, S, LD = (size_t)layers * (bidir ? 2 : 1), F, np, i;
            prn_rnn_config c = cfg_of(kind, PRN_F64, NI, H, layers, bidir, 0);
            prn_rnn *r = NULL;
            double xs[2 * 4 * 3], s0v[4 * 2 * 8], ry[2 * 4 * 8], rs[4 * 2 * 8], worst = 0;
            unsigned seed = 7u + (unsigned)kk * 3u + (unsigned)variant;
            prn_tensor *x, *s0, *Ry, *Rs, *params[64];
            const char *wn = "";
            PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
            if (!r) return;
            S = prn_rnn_state_size(r);
            F = prn_rnn_output_size(r);
            rand_fill(xs, B * T * NI, &seed, 1.0);
            rand_fill(s0v, LD * B * S, &seed, 0.5);
            rand_fill(ry, B * T * F, &seed, 1.0);
            rand_fill(rs, LD * B * S, &seed, 1.0);
            x = host_tensor(PRN_F64, 3, B, T, NI, xs);
            s0 = host_tensor(PRN_F64, 3, LD, B, S, s0v);
            Ry = host_tensor(PRN_F64, 3, B, T, F, ry);
            Rs = host_tensor(PRN_F64, 3, LD, B, S, rs);
            prn_tensor_set_requires_grad(x, 1);
            prn_tensor_set_requires_grad(s0, 1);
            PRNT_CHECK(!isnan(loss_of(r, x, s0, Ry, Rs, 1)), "%s: loss", prn_rnn_kind_name(kind));
            np = (size_t)prn_rnn_params(r, params, 64);
            for (i = 0; i < np; ++i) {
                double d = fd_check(r, params[i], x, s0, Ry, Rs);
                if (d > worst) { worst = d; wn = prn_rnn_param_name(r, (int)i); }
            }
            {
                double d = fd_check(r, x, x, s0, Ry, Rs);
                if (d > worst) { worst = d; wn = "x"; }
                d = fd_check(r, s0, x, s0, Ry, Rs);
                if (d > worst) { worst = d; wn = "state0"; }
            }
            PRNT_CHECK(worst < 1e-6, "%s layers=%d bidir=%d: gradient vs finite differences %g (%s)",
                       prn_rnn_kind_name(kind), layers, bidir, worst, wn);
            for (i = 0; i < np; ++i) prn_tensor_zero_grad(params[i]);
            prn_tensor_free(x); prn_tensor_free(s0); prn_tensor_free(Ry); prn_tensor_free(Rs);
            prn_rnn_free(r);
        }
}

/* --- names and shapes ------------------------------------------------------ */
static void test_names(void) {
    prn_rnn_config c = cfg_of(PRN_RNN_LSTM, PRN_F32, 3, 5, 2, 1, 7);
    prn_rnn *r = NULL;
    prn_tensor *p[32];
    int n;
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
    if (!r) return;
    n = prn_rnn_params(r, p, 32);
    PRNT_CHECK(n == 2 * 2 * 4 + 2, "count %d", n);
    PRNT_CHECK(!strcmp(prn_rnn_param_name(r, 0), "weight_ih_l0"), "%s", prn_rnn_param_name(r, 0));
    PRNT_CHECK(!strcmp(prn_rnn_param_name(r, 5), "weight_hh_l0_reverse"), "%s", prn_rnn_param_name(r, 5));
    PRNT_CHECK(!strcmp(prn_rnn_param_name(r, 8), "weight_ih_l1"), "%s", prn_rnn_param_name(r, 8));
    PRNT_CHECK(!strcmp(prn_rnn_param_name(r, 16), "readout_weight"), "%s", prn_rnn_param_name(r, 16));
    PRNT_CHECK(prn_tensor_dim(prn_rnn_param(r, "weight_ih_l1"), 1) == 10, "layer 1 reads both directions");
    PRNT_CHECK(prn_tensor_dim(prn_rnn_param(r, "weight_hh_l0"), 0) == 20, "4H rows");
    PRNT_CHECK(prn_rnn_state_size(r) == 10 && prn_rnn_output_size(r) == 10, "sizes");
    PRNT_CHECK(prn_rnn_param(r, "nope") == NULL && prn_rnn_param_name(r, 99) == NULL, "unknown names");
    PRNT_CHECK(!strcmp(prn_rnn_kind_name(PRN_RNN_CLIPPED_SHPLRNN), "clipped_shplrnn") && !strcmp(prn_rnn_kind_name((prn_rnn_kind)99), ""), "kind names");
    prn_rnn_free(r);
}

/* --- model files ---------------------------------------------------------- */
static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char *b;
    long sz;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = (unsigned char *)malloc((size_t)sz + 1);
    *n = fread(b, 1, (size_t)sz, f);
    fclose(f);
    return b;
}
static void write_all(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(b, 1, n, f);
    fclose(f);
}
static void test_model_files(void) {
    char path[200], bad[256];
    int kk;
    snprintf(path, sizeof path, "/tmp/prn_test_rnn_%ld.prnrnn", (long)(size_t)&path % 100000);
    snprintf(bad, sizeof bad, "%s.bad", path);
    for (kk = 0; kk < NKINDS; ++kk) {
        prn_dtype dt = kk % 2 ? PRN_F64 : PRN_F32;
        prn_rnn_config c = cfg_of(k_all[kk], dt, 3, 4, 2, kk % 3 == 0, kk % 2 ? 3 : 0);
        prn_rnn *r = NULL, *r2 = NULL, *keep = (prn_rnn *)&c;
        prn_tensor *p1[64], *p2[64];
        int n1, n2, i;
        unsigned char *b;
        size_t n;
        PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
        if (!r) return;
        PRNT_OK(g_ctx, prn_rnn_save(r, path));
        PRNT_OK(g_ctx, prn_rnn_load(g_ctx, path, &r2));
        if (!r2) { prn_rnn_free(r); return; }
        {
            const prn_rnn_config *a = prn_rnn_get_config(r), *b2 = prn_rnn_get_config(r2);
            PRNT_CHECK(a->kind == b2->kind && a->dtype == b2->dtype && a->input_size == b2->input_size &&
                       a->hidden_size == b2->hidden_size && a->num_layers == b2->num_layers &&
                       a->bidirectional == b2->bidirectional && a->relu == b2->relu && a->num_heads == b2->num_heads &&
                       a->shallow_size == b2->shallow_size && a->num_relu == b2->num_relu &&
                       a->output_size == b2->output_size, "config round trip");
        }
        n1 = prn_rnn_params(r, p1, 64);
        n2 = prn_rnn_params(r2, p2, 64);
        PRNT_CHECK(n1 == n2, "param count");
        for (i = 0; i < n1 && i < n2; ++i) {
            size_t m = prn_tensor_numel(p1[i]);
            double *a = (double *)malloc((m ? m : 1) * 8), *bb = (double *)malloc((m ? m : 1) * 8);
            prnt_download_f64(p1[i], a);
            prnt_download_f64(p2[i], bb);
            PRNT_CHECK(m == prn_tensor_numel(p2[i]) && !memcmp(a, bb, m * 8), "param %s differs", prn_rnn_param_name(r, i));
            free(a); free(bb);
        }
        prn_rnn_free(r2);
        r2 = keep;
        /* corrupted: one flipped bit in the last parameter value */
        b = read_all(path, &n);
        if (b) {
            b[n - 6] ^= 0x10;
            write_all(bad, b, n);
            PRNT_STATUS(g_ctx, prn_rnn_load(g_ctx, bad, &r2), PRN_ERR_FORMAT);
            PRNT_CHECK(strstr(prn_last_error(g_ctx), "checksum") != NULL, "%s", prn_last_error(g_ctx));
            b[n - 6] ^= 0x10;
            /* truncated, at several lengths */
            write_all(bad, b, n - 1);
            PRNT_STATUS(g_ctx, prn_rnn_load(g_ctx, bad, &r2), PRN_ERR_FORMAT);
            write_all(bad, b, 50);
            PRNT_STATUS(g_ctx, prn_rnn_load(g_ctx, bad, &r2), PRN_ERR_FORMAT);
            write_all(bad, b, 0);
            PRNT_STATUS(g_ctx, prn_rnn_load(g_ctx, bad, &r2), PRN_ERR_FORMAT);
            /* wrong version */
            b[8] = 2;
            write_all(bad, b, n);
            PRNT_STATUS(g_ctx, prn_rnn_load(g_ctx, bad, &r2), PRN_ERR_FORMAT);
            PRNT_CHECK(strstr(prn_last_error(g_ctx), "version 2") != NULL, "%s", prn_last_error(g_ctx));
            b[8] = 1;
            /* wrong magic */
            b[0] = 'X';
            write_all(bad, b, n);
            PRNT_STATUS(g_ctx, prn_rnn_load(g_ctx, bad, &r2), PRN_ERR_FORMAT);
            PRNT_CHECK(strstr(prn_last_error(g_ctx), "magic") != NULL, "%s", prn_last_error(g_ctx));
            free(b);
        }
        PRNT_CHECK(r2 == keep, "a failed load changed *out");
        prn_rnn_free(r);
    }
    {
        prn_rnn *r2 = NULL;
        PRNT_STATUS(g_ctx, prn_rnn_load(g_ctx, "/nonexistent/dir/model.prnrnn", &r2), PRN_ERR_IO);
        PRNT_CHECK(strstr(prn_last_error(g_ctx), "prn_rnn_load") != NULL, "%s", prn_last_error(g_ctx));
    }
    remove(path);
    remove(bad);
}

/* An allocator that keeps the peak of the bytes outstanding. */
typedef struct peak_al { size_t cur, peak; } peak_al;
static void *peak_alloc(void *user, size_t size) {
    peak_al *p = (peak_al *)user;
    size_t *b = (size_t *)malloc(size + 16);
    if (!b) return NULL;
    b[0] = size;
    p->cur += size;
    if (p->cur > p->peak) p->peak = p->cur;
    return b + 2;
}
static void peak_free(void *user, void *q) {
    if (q) {
        size_t *b = (size_t *)q - 2;
        ((peak_al *)user)->cur -= b[0];
        free(b);
    }
}
static void put_le(unsigned char *p, uint64_t v, int bytes) {
    int i;
    for (i = 0; i < bytes; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

/* A loader allocates nothing the file does not hold, and reads no more
 * than the context's limit. */
static void test_model_limits(void) {
    char path[200];
    unsigned char h[96];
    peak_al pk = {0, 0};
    size_t base;
    prn_config cfg;
    prn_context *ctx = NULL;
    prn_rnn *r = NULL, *keep = (prn_rnn *)&pk;
    prn_pwl_model *pm = (prn_pwl_model *)&pk;
    snprintf(path, sizeof path, "/tmp/prn_test_rnn_lim_%ld.prnrnn", (long)(size_t)&path % 100000);
    memset(&cfg, 0, sizeof cfg);
    cfg.allocator.alloc = peak_alloc;
    cfg.allocator.free = peak_free;
    cfg.allocator.user = &pk;
    cfg.backend = "reference";
    PRNT_OK(NULL, prn_context_create(&cfg, &ctx, NULL, 0));
    if (!ctx) return;
    /* 96 bytes, a valid checksum, a header claiming a GRU of 4096 x 4096
     * (about 400 MB of f32 parameters): refused before any of it exists */
    memset(h, 0, sizeof h);
    memcpy(h, "PRNRNN\r\n", 8);
    put_le(h + 8, 1, 4);
    put_le(h + 12, PRN_RNN_GRU, 4);
    put_le(h + 16, PRN_F32, 4);
    put_le(h + 20, 1, 4);
    put_le(h + 32, 4, 4);
    put_le(h + 36, 4096, 8);
    put_le(h + 44, 4096, 8);
    put_le(h + 52, 1, 8);
    put_le(h + 92, crc32_of(h, 92), 4);
    write_all(path, h, 96);
    pk.peak = base = pk.cur; /* (the backend may cache what it frees: the peak counts) */
    PRNT_STATUS(ctx, prn_rnn_load(ctx, path, &r), PRN_ERR_FORMAT);
    PRNT_CHECK(strstr(prn_last_error(ctx), "truncated") != NULL, "%s", prn_last_error(ctx));
    PRNT_CHECK(pk.peak - base < 65536, "a 96-byte file made prn_rnn_load allocate %lu bytes",
               (unsigned long)(pk.peak - base));
    /* streams without end */
    pk.peak = base = pk.cur;
    PRNT_STATUS(ctx, prn_rnn_load(ctx, "/dev/zero", &r), PRN_ERR_FORMAT);
    PRNT_CHECK(strstr(prn_last_error(ctx), "magic") != NULL, "%s", prn_last_error(ctx));
    PRNT_STATUS(ctx, prn_pwl_load(ctx, "/dev/zero", &pm), PRN_ERR_FORMAT);
    PRNT_CHECK(strstr(prn_last_error(ctx), "NUL") != NULL, "%s", prn_last_error(ctx));
    PRNT_CHECK(pk.peak - base < 1 << 20, "reading /dev/zero took %lu bytes", (unsigned long)(pk.peak - base));
    prn_context_free(ctx);
    ctx = NULL;
    /* the limit: a small model file loads under the default, not under 200 bytes */
    {
        prn_rnn_config c = cfg_of(PRN_RNN_GRU, PRN_F64, 2, 3, 1, 0, 0);
        prn_rnn *m = NULL;
        unsigned char *b;
        size_t n;
        PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &m));
        if (m) PRNT_OK(g_ctx, prn_rnn_save(m, path));
        prn_rnn_free(m);
        PRNT_OK(g_ctx, prn_rnn_load(g_ctx, path, &r));
        prn_rnn_free(r);
        r = keep;
        cfg.max_file_bytes = 200;
        PRNT_OK(NULL, prn_context_create(&cfg, &ctx, NULL, 0));
        if (ctx) {
            PRNT_STATUS(ctx, prn_rnn_load(ctx, path, &r), PRN_ERR_FORMAT);
            PRNT_CHECK(strstr(prn_last_error(ctx), "max_file_bytes") != NULL, "%s", prn_last_error(ctx));
            prn_context_free(ctx);
        }
        /* a NaN parameter (valid checksum): refused, naming it */
        b = read_all(path, &n);
        if (b) {
            double nan = NAN;
            uint64_t u;
            memcpy(&u, &nan, 8);
            put_le(b + 84 + 8 + 8 * 4, u, 8); /* the 84-byte header, a count, weight_ih_l0[4] */
            put_le(b + n - 4, crc32_of(b, n - 4), 4);
            write_all(path, b, n);
            PRNT_STATUS(g_ctx, prn_rnn_load(g_ctx, path, &r), PRN_ERR_NONFINITE);
            PRNT_CHECK(strstr(prn_last_error(g_ctx), "weight_ih_l0") != NULL, "%s", prn_last_error(g_ctx));
            free(b);
        }
    }
    PRNT_CHECK(r == keep && pm == (prn_pwl_model *)&pk, "a failed load wrote *out");
    remove(path);
}

/* --- bad input ------------------------------------------------------------- */
static void test_bad_input(void) {
    prn_rnn_config c = cfg_of(PRN_RNN_GRU, PRN_F32, 3, 4, 1, 0, 0), e;
    prn_rnn *r = NULL, *rb = NULL, *keep = (prn_rnn *)&c;
    prn_tensor *x = NULL, *y = (prn_tensor *)&c, *s = NULL, *x64 = NULL, *x0 = NULL, *j = NULL, *wrong = NULL, *x2 = NULL;
    prn_rnn_frame *fr = NULL;
    size_t shape[3];
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
    if (!r) return;
    /* configurations */
    e = c; e.hidden_size = 0;
    PRNT_STATUS(g_ctx, prn_rnn_create(g_ctx, &e, &rb), PRN_ERR_INVALID_ARGUMENT);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "hidden_size") != NULL, "%s", prn_last_error(g_ctx));
    e = c; e.input_size = 0;
    PRNT_STATUS(g_ctx, prn_rnn_create(g_ctx, &e, &rb), PRN_ERR_INVALID_ARGUMENT);
    e = c; e.kind = PRN_RNN_MHGRU; e.num_heads = 3;
    PRNT_STATUS(g_ctx, prn_rnn_create(g_ctx, &e, &rb), PRN_ERR_INVALID_ARGUMENT);
    e = c; e.kind = PRN_RNN_SHPLRNN;
    PRNT_STATUS(g_ctx, prn_rnn_create(g_ctx, &e, &rb), PRN_ERR_INVALID_ARGUMENT);
    e = c; e.kind = PRN_RNN_ALRNN; e.num_relu = 5;
    PRNT_STATUS(g_ctx, prn_rnn_create(g_ctx, &e, &rb), PRN_ERR_INVALID_ARGUMENT);
    e = c; e.dtype = PRN_I32;
    PRNT_STATUS(g_ctx, prn_rnn_create(g_ctx, &e, &rb), PRN_ERR_DTYPE);
    e = c; e.kind = (prn_rnn_kind)42;
    PRNT_STATUS(g_ctx, prn_rnn_create(g_ctx, &e, &rb), PRN_ERR_INVALID_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_rnn_create(g_ctx, NULL, &rb), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_rnn_create(g_ctx, &c, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_CHECK(rb == NULL, "failed create wrote *out");
    /* forward */
    shape[0] = 2; shape[1] = 5; shape[2] = 3;
    prn_tensor_create(g_ctx, PRN_F32, 3, shape, &x);
    prn_tensor_create(g_ctx, PRN_F64, 3, shape, &x64);
    shape[1] = 0;
    prn_tensor_create(g_ctx, PRN_F32, 3, shape, &x0);
    shape[0] = 2; shape[1] = 5; shape[2] = 4;
    prn_tensor_create(g_ctx, PRN_F32, 3, shape, &wrong);
    PRNT_STATUS(g_ctx, prn_rnn_forward(g_ctx, NULL, x, NULL, &y, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_rnn_forward(g_ctx, r, NULL, NULL, &y, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_rnn_forward(g_ctx, r, x, NULL, NULL, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_rnn_forward(g_ctx, r, wrong, NULL, &y, NULL), PRN_ERR_SHAPE);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "prn_rnn_forward") && strstr(prn_last_error(g_ctx), "'x'"), "%s", prn_last_error(g_ctx));
    PRNT_STATUS(g_ctx, prn_rnn_forward(g_ctx, r, x64, NULL, &y, NULL), PRN_ERR_DTYPE);
    PRNT_STATUS(g_ctx, prn_rnn_forward(g_ctx, r, x0, NULL, &y, NULL), PRN_ERR_SHAPE);
    PRNT_STATUS(g_ctx, prn_rnn_forward(g_ctx, r, x, wrong, &y, NULL), PRN_ERR_SHAPE);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "'state0'") != NULL, "%s", prn_last_error(g_ctx));
    PRNT_CHECK(y == (prn_tensor *)&c, "a failed forward wrote *y");
    PRNT_STATUS(g_ctx, prn_rnn_readout(g_ctx, r, x, &y), PRN_ERR_STATE);
    /* steps and Jacobians */
    shape[0] = 2; shape[1] = 4;
    prn_tensor_create(g_ctx, PRN_F32, 2, shape, &s);
    PRNT_STATUS(g_ctx, prn_rnn_step(g_ctx, r, NULL, s, &y), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_rnn_jacobian(g_ctx, r, NULL, s, PRN_JACOBIAN_DENSE, NULL, &j), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_rnn_jacobian(g_ctx, r, s, s, PRN_JACOBIAN_DENSE, NULL, &j), PRN_ERR_SHAPE);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "prn_rnn_jacobian: argument 'x'") != NULL, "%s", prn_last_error(g_ctx));
    shape[1] = 3;
    prn_tensor_create(g_ctx, PRN_F32, 2, shape, &x2);
    PRNT_STATUS(g_ctx, prn_rnn_jacobian(g_ctx, r, x2, s, (prn_jacobian_mode)7, NULL, &j), PRN_ERR_INVALID_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_rnn_jacobian(g_ctx, r, x2, s, PRN_JACOBIAN_DENSE, NULL, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_CHECK(j == NULL, "a failed jacobian wrote *jac");
    /* frames */
    {
        prn_rnn_config cb = cfg_of(PRN_RNN_GRU, PRN_F32, 3, 4, 1, 1, 0);
        PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &cb, &rb));
        if (rb) {
            PRNT_STATUS(g_ctx, prn_rnn_frame_create(rb, 1, &fr), PRN_ERR_INVALID_ARGUMENT);
            PRNT_STATUS(g_ctx, prn_rnn_step(g_ctx, rb, x, s, &y), PRN_ERR_INVALID_ARGUMENT);
        }
        PRNT_STATUS(g_ctx, prn_rnn_frame_create(r, 0, &fr), PRN_ERR_INVALID_ARGUMENT);
        PRNT_OK(g_ctx, prn_rnn_frame_create(r, 1, &fr));
        PRNT_STATUS(g_ctx, prn_rnn_frame_step(fr, NULL, NULL), PRN_ERR_NULL_ARGUMENT);
        PRNT_STATUS(g_ctx, prn_rnn_frame_set_state(fr, NULL), PRN_ERR_NULL_ARGUMENT);
        prn_rnn_frame_free(fr);
        prn_rnn_free(rb);
    }
    /* another context's network */
    {
        prn_config cfg;
        prn_context *c2 = NULL;
        memset(&cfg, 0, sizeof cfg);
        cfg.backend = "reference-noblas";
        if (prn_context_create(&cfg, &c2, NULL, 0) == PRN_OK) {
            PRNT_STATUS(c2, prn_rnn_forward(c2, r, x, NULL, &y, NULL), PRN_ERR_CONTEXT_MISMATCH);
            prn_context_free(c2);
        }
    }
    PRNT_STATUS(g_ctx, prn_rnn_save(r, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_rnn_save(r, "/nonexistent/dir/m.prnrnn"), PRN_ERR_IO);
    PRNT_CHECK(keep == (prn_rnn *)&c, "unchanged");
    prn_rnn_free(NULL);
    prn_rnn_frame_free(NULL);
    prn_tensor_free(x); prn_tensor_free(x64); prn_tensor_free(x0); prn_tensor_free(s); prn_tensor_free(wrong);
    prn_tensor_free(x2);
    prn_rnn_free(r);
}

/* --- NaN propagates ---------------------------------------------------------- */
/* NaN and Inf, one way for prn_rnn_forward, prn_rnn_step, prn_deer_rnn and
 * the frames: non-finite parameters, x or state are refused with
 * PRN_ERR_NONFINITE naming them, an overflowing recurrence too, and
 * nothing the caller owns changes (a frame's state included). */
static int has(const char *needle) { return strstr(prn_last_error(g_ctx), needle) != NULL; }
static void test_nan(void) {
    prn_rnn_config c = cfg_of(PRN_RNN_LSTM, PRN_F64, 2, 3, 1, 0, 0);
    prn_rnn *r = NULL;
    double xs[4 * 2] = {0.1, 0.2, NAN, 0.3, 0.1, 0.1, 0.2, 0.2}, s0[6] = {0, 0, 0, 0, 0, 0}, st1[6], st2[6], yv[3];
    double ys[64], w0; /* weight_hh_l0: 4H x H = 36 values */
    prn_tensor *x, *xok, *s0t, *y = (prn_tensor *)&c, *fs = (prn_tensor *)&c, *whh;
    prn_rnn_frame *fr = NULL, *fr2 = (prn_rnn_frame *)&c;
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
    if (!r) return;
    x = host_tensor(PRN_F64, 2, 4, 2, 0, xs);
    xs[2] = 0.15;
    xok = host_tensor(PRN_F64, 2, 4, 2, 0, xs);
    /* a non-finite x */
    PRNT_STATUS(g_ctx, prn_rnn_forward(g_ctx, r, x, NULL, &y, &fs), PRN_ERR_NONFINITE);
    PRNT_CHECK(has("prn_rnn_forward") && has("'x'"), "%s", prn_last_error(g_ctx));
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x, NULL, NULL, &y, &fs, NULL), PRN_ERR_NONFINITE);
    PRNT_CHECK(has("prn_deer_rnn") && has("'x'"), "%s", prn_last_error(g_ctx));
    PRNT_CHECK(y == (prn_tensor *)&c && fs == (prn_tensor *)&c, "a failed call wrote y or state");
    PRNT_OK(g_ctx, prn_rnn_frame_create(r, 1, &fr));
    if (!fr) goto done;
    PRNT_OK(g_ctx, prn_rnn_frame_step(fr, xs, yv));
    PRNT_OK(g_ctx, prn_rnn_frame_get_state(fr, st1));
    xs[2] = NAN;
    PRNT_STATUS(g_ctx, prn_rnn_frame_step(fr, xs + 2, yv), PRN_ERR_NONFINITE);
    PRNT_CHECK(has("prn_rnn_frame_step") && has("'x'"), "%s", prn_last_error(g_ctx));
    PRNT_OK(g_ctx, prn_rnn_frame_get_state(fr, st2));
    PRNT_CHECK(!memcmp(st1, st2, sizeof st1), "a refused frame step changed the state");
    /* a non-finite state */
    s0[4] = INFINITY;
    s0t = host_tensor(PRN_F64, 2, 1, 6, 0, s0);
    PRNT_STATUS(g_ctx, prn_rnn_forward(g_ctx, r, xok, s0t, &y, NULL), PRN_ERR_NONFINITE);
    PRNT_CHECK(has("'state0'"), "%s", prn_last_error(g_ctx));
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, xok, s0t, NULL, &y, NULL, NULL), PRN_ERR_NONFINITE);
    PRNT_CHECK(has("'state0'"), "%s", prn_last_error(g_ctx));
    PRNT_STATUS(g_ctx, prn_rnn_step(g_ctx, r, NULL, s0t, &y), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_rnn_frame_set_state(fr, s0), PRN_ERR_NONFINITE);
    PRNT_OK(g_ctx, prn_rnn_frame_get_state(fr, st2));
    PRNT_CHECK(!memcmp(st1, st2, sizeof st1), "a refused set_state changed the state");
    prn_tensor_free(s0t);
    /* a non-finite parameter (as training with too large a rate leaves it) */
    whh = prn_rnn_param(r, "weight_hh_l0");
    prnt_download_f64(whh, ys);
    w0 = ys[5];
    ys[5] = NAN;
    prnt_upload_f64(whh, ys);
    PRNT_STATUS(g_ctx, prn_rnn_forward(g_ctx, r, xok, NULL, &y, NULL), PRN_ERR_NONFINITE);
    PRNT_CHECK(has("weight_hh_l0"), "%s", prn_last_error(g_ctx));
    PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, xok, NULL, NULL, &y, NULL, NULL), PRN_ERR_NONFINITE);
    PRNT_CHECK(has("weight_hh_l0"), "%s", prn_last_error(g_ctx));
    PRNT_STATUS(g_ctx, prn_rnn_frame_create(r, 1, &fr2), PRN_ERR_NONFINITE);
    PRNT_CHECK(has("prn_rnn_frame_create") && has("weight_hh_l0"), "%s", prn_last_error(g_ctx));
    PRNT_CHECK(fr2 == (prn_rnn_frame *)&c, "a failed frame_create wrote *out");
    PRNT_STATUS(g_ctx, prn_rnn_frame_sync(fr), PRN_ERR_NONFINITE);
    PRNT_OK(g_ctx, prn_rnn_frame_step(fr, xs, yv)); /* the frame kept its finite copy */
    PRNT_CHECK(yv[0] == yv[0] && yv[1] == yv[1] && yv[2] == yv[2], "NaN after a refused sync");
    ys[5] = w0;
    prnt_upload_f64(whh, ys);
    PRNT_OK(g_ctx, prn_rnn_forward(g_ctx, r, xok, NULL, &y, NULL));
    if (y != (prn_tensor *)&c) prn_tensor_free(y);
    y = (prn_tensor *)&c;
    prn_rnn_frame_free(fr);
    fr = NULL;
    prn_rnn_free(r);
    r = NULL;
    /* finite everything, but the recurrence overflows: z_t = 1e200 z_{t-1} */
    {
        prn_rnn_config cp = cfg_of(PRN_RNN_PLRNN, PRN_F64, 0, 2, 1, 0, 0);
        double A[2] = {1e200, 1e200}, one[2] = {1, 1}, z[2];
        prn_tensor *x0 = NULL, *st0;
        size_t shx[2] = {3, 0};
        int k, failed = 0;
        PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &cp, &r));
        if (!r) goto done;
        prnt_upload_f64(prn_rnn_param(r, "A_l0"), A);
        prn_tensor_create(g_ctx, PRN_F64, 2, shx, &x0);
        st0 = host_tensor(PRN_F64, 2, 1, 2, 0, one);
        PRNT_STATUS(g_ctx, prn_rnn_forward(g_ctx, r, x0, st0, &y, NULL), PRN_ERR_NONFINITE);
        PRNT_CHECK(has("overflow"), "%s", prn_last_error(g_ctx));
        PRNT_STATUS(g_ctx, prn_deer_rnn(g_ctx, r, x0, st0, NULL, &y, NULL, NULL), PRN_ERR_NONFINITE);
        PRNT_CHECK(y == (prn_tensor *)&c, "a failed call wrote y");
        PRNT_OK(g_ctx, prn_rnn_frame_create(r, 1, &fr));
        if (fr) {
            PRNT_OK(g_ctx, prn_rnn_frame_set_state(fr, one));
            for (k = 0; k < 4 && !failed; ++k) {
                double before[2];
                prn_rnn_frame_get_state(fr, before);
                if (prn_rnn_frame_step(fr, NULL, z) != PRN_OK) {
                    failed = 1;
                    PRNT_CHECK(prn_last_status(g_ctx) == PRN_ERR_NONFINITE && has("overflow"), "%s", prn_last_error(g_ctx));
                    prn_rnn_frame_get_state(fr, z);
                    PRNT_CHECK(!memcmp(z, before, sizeof z), "a failed step changed the state");
                }
            }
            PRNT_CHECK(failed, "the frame stepped into Inf with PRN_OK");
        }
        prn_tensor_free(x0);
        prn_tensor_free(st0);
    }
done:
    prn_rnn_frame_free(fr);
    prn_tensor_free(x); prn_tensor_free(xok);
    prn_tape_clear(g_ctx);
    prn_rnn_free(r);
}

/* x [B, T, NI] from xs (requiring grad) through r with no initial state;
 * out receives y then the final state, grads the gradients of
 * sum(y) + sum(state) for r's parameters in order, then for x (those that
 * fit in ngrads). The tape is cleared. */
static void fwd_bwd_sum(prn_context *ctx, const prn_rnn *r, const double *xs, size_t B, size_t T, size_t NI, double *out,
                        double *grads, size_t ngrads) {
    prn_tensor *x = NULL, *y = NULL, *st = NULL, *l1 = NULL, *l2 = NULL, *l = NULL, *ps[64];
    size_t shx[3], off = 0;
    int np, j;
    shx[0] = B; shx[1] = T; shx[2] = NI;
    PRNT_OK(ctx, prn_tensor_from_host(ctx, PRN_F64, 3, shx, xs, &x));
    if (!x) return;
    prn_tensor_set_requires_grad(x, 1);
    PRNT_OK(ctx, prn_rnn_forward(ctx, r, x, NULL, &y, &st));
    if (y && st) {
        prn_tensor_download(y, out, prn_tensor_numel(y));
        prn_tensor_download(st, out + prn_tensor_numel(y), prn_tensor_numel(st));
        prn_sum(ctx, y, PRN_ALL_AXES, 0, &l1);
        prn_sum(ctx, st, PRN_ALL_AXES, 0, &l2);
        prn_add(ctx, l1, l2, &l);
        PRNT_OK(ctx, prn_backward(ctx, l));
    }
    np = prn_rnn_params(r, ps, 63);
    ps[np++] = x;
    for (j = 0; j < np; ++j) {
        size_t n = prn_tensor_numel(ps[j]);
        if (prn_tensor_grad(ps[j]) && off + n <= ngrads) prn_tensor_download(prn_tensor_grad(ps[j]), grads + off, n);
        off += n;
    }
    prn_tensor_free(x); prn_tensor_free(y); prn_tensor_free(st);
    prn_tensor_free(l1); prn_tensor_free(l2); prn_tensor_free(l);
    prn_tape_clear(ctx);
}

/* --- the backend's fused layers and steps against the composed ops -------- */
/* The same networks on the backend, on a copy of its table without
 * rnn_layer_* (the generic code steps through time with its fused cell
 * steps) and on one without rnn_layer_* and rnn_gates_* (the composed ops,
 * what backends without them run): the same outputs and gradients (f64). */
static void test_fused_vs_composed(void) {
    prn_backend composed, steps;
    const prn_backend *list[2];
    prn_config cfg;
    prn_context *c2 = NULL, *c3 = NULL;
    int kk, relu;
    if (!prn_context_backend(g_ctx)->rnn_gates_forward) {
        PRNT_SKIP("backend '%s' has no fused cell step", prn_context_backend_name(g_ctx));
        return;
    }
    composed = *prn_context_backend(g_ctx);
    composed.name = "composed";
    composed.rnn_gates_forward = NULL;
    composed.rnn_gates_backward = NULL;
    composed.rnn_layer_forward = NULL;
    composed.rnn_layer_backward = NULL;
    steps = *prn_context_backend(g_ctx);
    steps.name = "steps";
    steps.rnn_layer_forward = NULL;
    steps.rnn_layer_backward = NULL;
    list[0] = &composed;
    list[1] = &steps;
    memset(&cfg, 0, sizeof cfg);
    cfg.backends = list;
    cfg.num_backends = 2;
    cfg.backend = "composed";
    PRNT_OK(g_ctx, prn_context_create(&cfg, &c2, NULL, 0));
    cfg.backend = "steps";
    PRNT_OK(g_ctx, prn_context_create(&cfg, &c3, NULL, 0));
    if (!c2 || !c3) { prn_context_free(c2); prn_context_free(c3); return; }
    for (kk = 0; kk < 5; ++kk) /* 4: MHGRU of one head (a GRU to the fused layer) */
        for (relu = 0; relu <= (kk == 0); ++relu) {
            prn_dtype dt = PRN_F64;
            prn_rnn_config c = cfg_of(k_all[kk < 4 ? kk : 3], dt, 3, 6, 2, 1, 0);
            prn_rnn *r[3] = {NULL, NULL, NULL};
            prn_context *cx[3];
            double xs[2 * 5 * 3], out[3][2 * 5 * 12 + 4 * 2 * 12], grads[3][2048];
            unsigned seed = 21u + (unsigned)kk;
            size_t B = 2, T = 5, S, LD = 4;
            int side;
            c.relu = relu;
            if (kk == 4) c.num_heads = 1;
            memset(out, 0, sizeof out);
            memset(grads, 0, sizeof grads);
            cx[0] = g_ctx;
            cx[1] = c2;
            cx[2] = c3;
            rand_fill(xs, B * T * 3, &seed, 1.0);
            for (side = 0; side < 3; ++side) {
                prn_seed(cx[side], 99); /* the same initial parameters on all three */
                PRNT_OK(cx[side], prn_rnn_create(cx[side], &c, &r[side]));
                if (!r[side]) break;
                fwd_bwd_sum(cx[side], r[side], xs, B, T, 3, out[side], grads[side], 2048);
            }
            for (side = 1; side < 3 && r[0]; ++side)
                if (r[side]) {
                    S = prn_rnn_state_size(r[0]);
                    PRNT_CHECK(max_abs_diff(out[0], out[side], B * T * 12 + LD * B * S) < 1e-13, "%s%s: outputs differ (%s)",
                               prn_rnn_kind_name(c.kind), kk == 4 ? " of one head" : relu ? " relu" : "", list[side - 1]->name);
                    PRNT_CHECK(max_abs_diff(grads[0], grads[side], 2048) < 1e-12, "%s%s: gradients differ by %g (%s)",
                               prn_rnn_kind_name(c.kind), kk == 4 ? " of one head" : relu ? " relu" : "",
                               max_abs_diff(grads[0], grads[side], 2048),
                               list[side - 1]->name);
                }
            for (side = 0; side < 3; ++side) prn_rnn_free(r[side]);
        }
    prn_context_free(c2);
    prn_context_free(c3);
}

/* --- a multi-head GRU of one head is a GRU --------------------------------- */
/* With the same parameters (W_hh [1, 3H, H] against [3H, H]): the same
 * outputs, final states and gradients (2 layers, bidirectional), the same
 * Jacobians in every mode (1 layer) and the same frame steps. */
static void test_mhgru_one_head(void) {
    prn_rnn_config cg = cfg_of(PRN_RNN_GRU, PRN_F64, 3, 4, 2, 1, 0), cm = cg, c1;
    prn_rnn *r[2] = {NULL, NULL}, *q[2] = {NULL, NULL};
    prn_tensor *ps[2][32];
    double xs[2 * 5 * 3], out[2][2 * 5 * 8 + 4 * 2 * 4], grads[2][1024], jac[2][3][2 * 4 * 4], fy[2][8];
    size_t B = 2, T = 5, n;
    unsigned seed = 5;
    int side, np[2], j, mode;
    cm.kind = PRN_RNN_MHGRU;
    cm.num_heads = 1;
    memset(out, 0, sizeof out);
    memset(grads, 0, sizeof grads);
    memset(jac, 0, sizeof jac);
    memset(fy, 0, sizeof fy);
    rand_fill(xs, B * T * 3, &seed, 1.0);
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &cg, &r[0]));
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &cm, &r[1]));
    c1 = cg; c1.num_layers = 1; c1.bidirectional = 0;
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c1, &q[0]));
    c1.kind = PRN_RNN_MHGRU; c1.num_heads = 1;
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c1, &q[1]));
    if (!r[0] || !r[1] || !q[0] || !q[1]) goto out;
    for (side = 0; side < 2; ++side) np[side] = prn_rnn_params(r[side], ps[side], 32);
    PRNT_CHECK(np[0] == np[1], "%d against %d parameters", np[0], np[1]);
    for (j = 0; j < np[0] && j < np[1]; ++j) { /* the GRU's values into the MHGRU */
        double v[3 * 4 * 8];
        n = prn_tensor_numel(ps[0][j]);
        PRNT_CHECK(n == prn_tensor_numel(ps[1][j]) && n <= 96, "parameter %d: %lu against %lu values", j,
                   (unsigned long)n, (unsigned long)prn_tensor_numel(ps[1][j]));
        if (n > 96 || n != prn_tensor_numel(ps[1][j])) goto out;
        prnt_download_f64(ps[0][j], v);
        prnt_upload_f64(ps[1][j], v);
    }
    for (side = 0; side < 2; ++side) {
        prn_tensor *qp[8];
        prn_rnn_frame *fr = NULL;
        int nq = prn_rnn_params(q[side], qp, 8);
        fwd_bwd_sum(g_ctx, r[side], xs, B, T, 3, out[side], grads[side], 1024);
        for (j = 0; j < nq; ++j) { /* the one-layer networks: the first layer's forward direction */
            double v[3 * 4 * 8];
            prnt_download_f64(ps[0][j], v);
            prnt_upload_f64(qp[j], v);
        }
        for (mode = 0; mode < 3; ++mode) {
            prn_tensor *xj = host_tensor(PRN_F64, 2, B, 3, 0, xs), *sj = host_tensor(PRN_F64, 2, B, 4, 0, xs + 6);
            prn_tensor *J = NULL;
            PRNT_OK(g_ctx, prn_rnn_jacobian(g_ctx, q[side], xj, sj, (prn_jacobian_mode)mode, NULL, &J));
            if (J) prn_tensor_download(J, jac[side][mode], prn_tensor_numel(J));
            prn_tensor_free(xj); prn_tensor_free(sj); prn_tensor_free(J);
        }
        PRNT_OK(g_ctx, prn_rnn_frame_create(q[side], 2, &fr));
        if (fr) {
            for (j = 0; j < 3; ++j) PRNT_OK(g_ctx, prn_rnn_frame_step(fr, xs + 6 * j, fy[side]));
            prn_rnn_frame_free(fr);
        }
    }
    PRNT_CHECK(max_abs_diff(out[0], out[1], sizeof out[0] / sizeof out[0][0]) < 1e-14, "outputs differ by %g",
               max_abs_diff(out[0], out[1], sizeof out[0] / sizeof out[0][0]));
    PRNT_CHECK(max_abs_diff(grads[0], grads[1], 1024) < 1e-13, "gradients differ by %g",
               max_abs_diff(grads[0], grads[1], 1024));
    for (mode = 0; mode < 3; ++mode)
        PRNT_CHECK(max_abs_diff(jac[0][mode], jac[1][mode], 32) < 1e-14, "Jacobian mode %d differs by %g", mode,
                   max_abs_diff(jac[0][mode], jac[1][mode], 32));
    PRNT_CHECK(max_abs_diff(fy[0], fy[1], 8) < 1e-14, "frame steps differ by %g", max_abs_diff(fy[0], fy[1], 8));
out:
    prn_rnn_free(r[0]); prn_rnn_free(r[1]); prn_rnn_free(q[0]); prn_rnn_free(q[1]);
}

/* --- allocation failures -------------------------------------------------- */
/* A context whose allocator refuses its n-th allocation once. Each call of a
 * short training and inference sequence either succeeds or fails with
 * PRN_ERR_OUT_OF_MEMORY, a message naming it, its output untouched and the
 * live tensors and the tape as before; retried, it succeeds, and the
 * gradients end bitwise equal to a run without failures. The frame steps
 * allocate nothing. */
typedef struct fa { long count, fail_at, refused, live; } fa;
static void *fa_alloc(void *user, size_t size) {
    fa *f = (fa *)user;
    if (++f->count == f->fail_at) { f->refused++; return NULL; }
    f->live++;
    return malloc(size);
}
static void fa_free(void *user, void *p) {
    if (p) ((fa *)user)->live--;
    free(p);
}
static union { double d; void *p; } g_sent;
#define SENT ((void *)&g_sent)
/* one call that returns a status, retried once after a refusal */
#define AF_CALL(NAME, OUTP, CALL)                                                           \
    do { int att_;                                                                          \
        for (att_ = 0; att_ < 2; ++att_) {                                                  \
            size_t l0_ = prn_live_tensors(ctx), t0_ = prn_tape_size(ctx);                   \
            prn_status st_;                                                                 \
            *(void **)(OUTP) = SENT;                                                        \
            st_ = (CALL);                                                                   \
            if (st_ == PRN_OK) break;                                                       \
            PRNT_CHECK(st_ == PRN_ERR_OUT_OF_MEMORY && strstr(prn_last_error(ctx), NAME),   \
                       "n=%ld: %s: %s (%s)", f.fail_at, NAME, prn_status_string(st_), prn_last_error(ctx)); \
            PRNT_CHECK(*(void **)(OUTP) == SENT, "n=%ld: failed %s wrote its output", f.fail_at, NAME); \
            PRNT_CHECK(prn_live_tensors(ctx) == l0_ && prn_tape_size(ctx) == t0_,           \
                       "n=%ld: failed %s changed live tensors %lu -> %lu or the tape %lu -> %lu", f.fail_at, NAME, \
                       (unsigned long)l0_, (unsigned long)prn_live_tensors(ctx), (unsigned long)t0_, \
                       (unsigned long)prn_tape_size(ctx));                                  \
            failed_calls++;                                                                 \
        }                                                                                   \
        PRNT_CHECK(att_ < 2, "n=%ld: retry of %s failed", f.fail_at, NAME);                 \
        if (att_ == 2) goto done;                                                           \
    } while (0)

static long af_run(long fail_at, double *grads, size_t ngrads, int *completed) {
    fa f;
    prn_config cfg;
    prn_context *ctx = NULL;
    prn_rnn_config c = cfg_of(PRN_RNN_LSTM, PRN_F64, 2, 3, 2, 1, 3);
    prn_rnn *r = NULL, *r2 = NULL;
    prn_rnn_frame *fr = NULL;
    prn_tensor *x = NULL, *s0 = NULL, *y = NULL, *st = NULL, *o = NULL, *so = NULL, *ss = NULL, *l = NULL, *ps[32];
    double xs[2 * 4 * 2], s0v[4 * 2 * 6], xf[2], yf[3];
    size_t shx[3] = {2, 4, 2}, shs[3] = {4, 2, 6}, off = 0, i;
    unsigned seed = 3;
    long failed_calls = 0, before;
    char path[64];
    int np, k;
    memset(&f, 0, sizeof f);
    f.fail_at = fail_at;
    memset(&cfg, 0, sizeof cfg);
    cfg.allocator.alloc = fa_alloc;
    cfg.allocator.free = fa_free;
    cfg.allocator.user = &f;
    cfg.seed = 77;
    cfg.backend = "reference-noblas"; /* the allocator is the library's (OpenBLAS and OpenMP keep their own) */
    cfg.num_threads = 1;
    *completed = 0;
    if (prn_context_create(&cfg, &ctx, NULL, 0) != PRN_OK && prn_context_create(&cfg, &ctx, NULL, 0) != PRN_OK) {
        PRNT_CHECK(0, "n=%ld: context", fail_at);
        return f.count;
    }
    rand_fill(xs, 16, &seed, 1.0);
    rand_fill(s0v, 48, &seed, 0.5);
    AF_CALL("prn_rnn_create", &r, prn_rnn_create(ctx, &c, &r));
    AF_CALL("prn_tensor_from_host", &x, prn_tensor_from_host(ctx, PRN_F64, 3, shx, xs, &x));
    AF_CALL("prn_tensor_from_host", &s0, prn_tensor_from_host(ctx, PRN_F64, 3, shs, s0v, &s0));
    prn_tensor_set_requires_grad(x, 1);
    prn_tensor_set_requires_grad(s0, 1);
    AF_CALL("prn_rnn_forward", &y, prn_rnn_forward(ctx, r, x, s0, &y, &st));
    AF_CALL("prn_rnn_readout", &o, prn_rnn_readout(ctx, r, y, &o));
    AF_CALL("prn_sum", &so, prn_sum(ctx, o, PRN_ALL_AXES, 0, &so));
    AF_CALL("prn_sum", &ss, prn_sum(ctx, st, PRN_ALL_AXES, 0, &ss));
    AF_CALL("prn_add", &l, prn_add(ctx, so, ss, &l));
    {
        int att;
        for (att = 0; att < 2; ++att) {
            prn_status bs = prn_backward(ctx, l);
            if (bs == PRN_OK) break;
            PRNT_CHECK(bs == PRN_ERR_OUT_OF_MEMORY && strstr(prn_last_error(ctx), "prn_backward"), "n=%ld: backward: %s",
                       fail_at, prn_last_error(ctx));
            PRNT_CHECK(prn_tensor_grad(x) == NULL, "n=%ld: failed backward left a gradient on x", fail_at);
            failed_calls++;
        }
        if (att == 2) goto done;
    }
    np = prn_rnn_params(r, ps, 32);
    ps[np++] = x;
    ps[np++] = s0;
    for (k = 0; k < np; ++k) {
        size_t n = prn_tensor_numel(ps[k]);
        PRNT_CHECK(prn_tensor_grad(ps[k]) != NULL, "n=%ld: no gradient %d", fail_at, k);
        if (prn_tensor_grad(ps[k]) && off + n <= ngrads) prn_tensor_download(prn_tensor_grad(ps[k]), grads + off, n);
        off += n;
    }
    prn_tape_clear(ctx);
    /* training without the final states (an LSTM's y by rnn_layer_forward_yc) */
    for (k = 0; k < np; ++k) prn_tensor_zero_grad(ps[k]);
    prn_tensor_free(o); o = NULL;
    prn_tensor_free(so); so = NULL;
    prn_tensor_free(y); y = NULL;
    AF_CALL("prn_rnn_forward", &y, prn_rnn_forward(ctx, r, x, s0, &y, NULL));
    AF_CALL("prn_rnn_readout", &o, prn_rnn_readout(ctx, r, y, &o));
    AF_CALL("prn_sum", &so, prn_sum(ctx, o, PRN_ALL_AXES, 0, &so));
    {
        int att;
        for (att = 0; att < 2; ++att) {
            prn_status bs = prn_backward(ctx, so);
            if (bs == PRN_OK) break;
            PRNT_CHECK(bs == PRN_ERR_OUT_OF_MEMORY && strstr(prn_last_error(ctx), "prn_backward"),
                       "n=%ld: backward (no final state): %s", fail_at, prn_last_error(ctx));
            failed_calls++;
        }
        if (att == 2) goto done;
    }
    for (k = 0; k < np; ++k) {
        size_t n = prn_tensor_numel(ps[k]);
        PRNT_CHECK(prn_tensor_grad(ps[k]) != NULL, "n=%ld: no gradient %d (no final state)", fail_at, k);
        if (prn_tensor_grad(ps[k]) && off + n <= ngrads) prn_tensor_download(prn_tensor_grad(ps[k]), grads + off, n);
        off += n;
    }
    prn_tape_clear(ctx);
    /* inference: frames allocate only when created */
    {
        prn_rnn_config c1 = cfg_of(PRN_RNN_GRU, PRN_F64, 2, 3, 2, 0, 3);
        prn_rnn *rf = NULL;
        AF_CALL("prn_rnn_create", &rf, prn_rnn_create(ctx, &c1, &rf));
        {
            int att;
            for (att = 0; att < 2; ++att) {
                fr = (prn_rnn_frame *)SENT;
                if (prn_rnn_frame_create(rf, 1, &fr) == PRN_OK) break;
                PRNT_CHECK(fr == (prn_rnn_frame *)SENT && strstr(prn_last_error(ctx), "prn_rnn_frame_create"),
                           "n=%ld: frame create: %s", fail_at, prn_last_error(ctx));
                failed_calls++;
                fr = NULL;
            }
        }
        if (fr) {
            before = f.count;
            xf[0] = 0.5; xf[1] = -0.5;
            for (k = 0; k < 5; ++k) PRNT_OK(ctx, prn_rnn_frame_step(fr, xf, yf));
            PRNT_CHECK(f.count == before, "frame steps allocated %ld times", f.count - before);
            prn_rnn_frame_free(fr);
        }
        /* the float frames likewise (a readout, two rows: the AVX2 tiles) */
        {
            prn_rnn_config c2 = cfg_of(PRN_RNN_LSTM, PRN_F32, 2, 3, 2, 0, 3);
            prn_rnn *rg = NULL;
            prn_rnn_framef *ff = NULL;
            float xff[4] = {0.5f, -0.5f, 0.25f, 1.0f}, yff[6];
            AF_CALL("prn_rnn_create", &rg, prn_rnn_create(ctx, &c2, &rg));
            {
                int att;
                for (att = 0; att < 2; ++att) {
                    ff = (prn_rnn_framef *)SENT;
                    if (prn_rnn_framef_create(rg, 2, &ff) == PRN_OK) break;
                    PRNT_CHECK(ff == (prn_rnn_framef *)SENT && strstr(prn_last_error(ctx), "prn_rnn_framef_create"),
                               "n=%ld: float frame create: %s", fail_at, prn_last_error(ctx));
                    failed_calls++;
                    ff = NULL;
                }
            }
            if (ff) {
                before = f.count;
                for (k = 0; k < 5; ++k) PRNT_OK(ctx, prn_rnn_framef_step(ff, xff, yff));
                PRNT_OK(ctx, prn_rnn_framef_reset_row(ff, 1));
                PRNT_CHECK(f.count == before, "float frame steps allocated %ld times", f.count - before);
                prn_rnn_framef_free(ff);
            }
            prn_rnn_free(rg);
        }
        prn_rnn_free(rf);
    }
    /* model files */
    snprintf(path, sizeof path, "/tmp/prn_test_rnn_af_%ld.prnrnn", fail_at);
    {
        int att;
        for (att = 0; att < 2; ++att) {
            prn_status vs = prn_rnn_save(r, path);
            if (vs == PRN_OK) break;
            PRNT_CHECK(vs == PRN_ERR_OUT_OF_MEMORY && strstr(prn_last_error(ctx), "prn_rnn_save"), "n=%ld: save: %s",
                       fail_at, prn_last_error(ctx));
            failed_calls++;
        }
        if (att == 2) goto done;
    }
    AF_CALL("prn_rnn_load", &r2, prn_rnn_load(ctx, path, &r2));
    remove(path);
    *completed = 1;
done:
    if (f.refused) PRNT_CHECK(failed_calls > 0 || *completed, "n=%ld: a refusal was not reported", fail_at);
    prn_tape_clear(ctx);
    prn_tensor_free(x); prn_tensor_free(s0); prn_tensor_free(y); prn_tensor_free(st); prn_tensor_free(o);
    prn_tensor_free(so); prn_tensor_free(ss); prn_tensor_free(l);
    prn_rnn_free(r);
    prn_rnn_free(r2);
    PRNT_CHECK(prn_live_tensors(ctx) == 0, "n=%ld: %lu tensors alive", fail_at, (unsigned long)prn_live_tensors(ctx));
    prn_context_free(ctx);
    PRNT_CHECK(f.live == 0, "n=%ld: %ld allocations outstanding", fail_at, f.live);
    (void)i;
    return f.count;
}
static void test_alloc_failures(void) {
    static double base[4096], got[4096];
    int done_ok;
    long N = af_run(0, base, 4096, &done_ok), n, stride;
    PRNT_CHECK(done_ok, "the run without failures did not complete");
    /* every allocation under PRNT_FULL=1; else a spread of about 400 */
    stride = getenv("PRNT_FULL") ? 1 : N / 400 + 1;
    printf("    %ld allocations; failing every %ld-th\n", N, stride);
    for (n = 1; n <= N; n += stride) {
        long before = prnt_cur_failed;
        memset(got, 0, sizeof got);
        af_run(n, got, 4096, &done_ok);
        PRNT_CHECK(done_ok, "n=%ld: not completed", n);
        if (done_ok) PRNT_CHECK(!memcmp(got, base, sizeof got), "n=%ld: gradients differ from the run without failures", n);
        if (prnt_cur_failed - before > 0 && prnt_cur_failed > 20) break;
    }
}

/* prn_rnn_frame_create out of memory at each of its allocations: the
 * message names prn_rnn_frame_create (it once named prn_rnn_frame_sync,
 * which create calls), *out is untouched and nothing leaks. */
static void test_frame_create_oom(void) {
    prnt_fa f;
    prn_config cfg;
    prn_context *ctx = NULL;
    prn_rnn_config c = cfg_of(PRN_RNN_GRU, PRN_F32, 2, 3, 2, 0, 2);
    prn_rnn *r = NULL;
    long n, refusals = 0;
    memset(&f, 0, sizeof f);
    memset(&cfg, 0, sizeof cfg);
    cfg.allocator.alloc = prnt_fa_alloc;
    cfg.allocator.free = prnt_fa_free;
    cfg.allocator.user = &f;
    cfg.backend = "reference";
    PRNT_OK(NULL, prn_context_create(&cfg, &ctx, NULL, 0));
    if (!ctx) return;
    PRNT_OK(ctx, prn_rnn_create(ctx, &c, &r));
    for (n = 1; r && n < 64; ++n) {
        prn_rnn_frame *fr = (prn_rnn_frame *)&f;
        long live = f.live;
        prn_status st;
        f.fail_at = f.count + n;
        st = prn_rnn_frame_create(r, 2, &fr);
        f.fail_at = 0;
        if (st == PRN_OK) { prn_rnn_frame_free(fr); break; }
        ++refusals;
        PRNT_CHECK(st == PRN_ERR_OUT_OF_MEMORY && strstr(prn_last_error(ctx), "prn_rnn_frame_create") &&
                   !strstr(prn_last_error(ctx), "prn_rnn_frame_sync"),
                   "allocation %ld refused: %s (%s)", n, prn_status_string(st), prn_last_error(ctx));
        PRNT_CHECK(fr == (prn_rnn_frame *)&f, "allocation %ld refused: *out written", n);
        PRNT_CHECK(f.live <= live, "allocation %ld refused: %ld blocks more alive", n, f.live - live);
    }
    PRNT_CHECK(refusals >= 3, "only %ld allocations in prn_rnn_frame_create", refusals);
    prn_rnn_free(r);
    prn_context_free(ctx);
    PRNT_CHECK(f.live == 0, "%ld blocks alive at the end", f.live);
}

/* The fused layers split the work between threads by rows of the batch
 * (several rows) or by hidden units (one row, a large step): either way
 * the same bits as one thread, forward and backward (outputs, final
 * states, every gradient), for LSTM, GRU and Elman in f32 and f64. */
static void run_threads(int threads, prn_rnn_kind kind, prn_dtype dt, size_t B, size_t T, size_t H, double *out,
                        size_t *n_out) {
    prn_config cfg;
    prn_context *ctx;
    prn_rnn_config rc = cfg_of(kind, dt, 8, H, 1, 0, 0);
    prn_rnn *rnn = NULL;
    prn_tensor *x = NULL, *y = NULL, *st = NULL, *loss = NULL, *sq = NULL, *p[16];
    size_t xs[3] = {B, T, 8}, n = 0, k;
    int np, i;
    char err[256];
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = 5;
    cfg.num_threads = threads;
    /* the built-in products: a CBLAS's own threads may change the last bits
     * of the weight gradients (the header's THREADS AND BUSY MACHINES) */
    cfg.backend = "reference-noblas";
    *n_out = 0;
    if (prn_context_create(&cfg, &ctx, err, sizeof err) != PRN_OK) { PRNT_CHECK(0, "%s", err); return; }
    PRNT_OK(ctx, prn_rnn_create(ctx, &rc, &rnn));
    PRNT_OK(ctx, prn_tensor_uniform(ctx, dt, 3, xs, -1, 1, &x));
    PRNT_OK(ctx, prn_rnn_forward(ctx, rnn, x, NULL, &y, &st));
    PRNT_OK(ctx, prn_mul(ctx, y, y, &sq));
    PRNT_OK(ctx, prn_sum(ctx, sq, PRN_ALL_AXES, 0, &loss));
    PRNT_OK(ctx, prn_backward(ctx, loss));
    k = prn_tensor_numel(y); PRNT_OK(ctx, prn_tensor_download(y, out + n, k)); n += k;
    k = prn_tensor_numel(st); PRNT_OK(ctx, prn_tensor_download(st, out + n, k)); n += k;
    np = prn_rnn_params(rnn, p, 16);
    for (i = 0; i < np; ++i) {
        prn_tensor *g = prn_tensor_grad(p[i]);
        PRNT_CHECK(g != NULL, "parameter %d has no gradient", i);
        if (!g) continue;
        k = prn_tensor_numel(g); PRNT_OK(ctx, prn_tensor_download(g, out + n, k)); n += k;
    }
    *n_out = n;
    prn_rnn_free(rnn);
    prn_context_free(ctx);
}
static void test_threads_same_bits(void) {
    static const prn_rnn_kind kinds[3] = {PRN_RNN_LSTM, PRN_RNN_GRU, PRN_RNN_ELMAN};
    /* H 262: the weight gradients' kernel over groups of 3 blocks of 16
     * and a pair (GRU's 17 blocks), each tile asking for the next one's
     * sums; 1 thread takes a gate's 262 rows of dW at a time (6 past the
     * last tile of 8), 2 threads split them by rows (528 + 520) */
    static const size_t shapes[4][3] = {{16, 80, 48}, {3, 200, 40}, {1, 40, 160}, {5, 30, 262}}; /* B, T, H */
    size_t cap = 1 << 21, n1, n2, i;
    double *a = (double *)malloc(cap * sizeof(double)), *b = (double *)malloc(cap * sizeof(double));
    int k, s, d;
    PRNT_CHECK(a && b, "out of memory");
    for (k = 0; a && b && k < 3; ++k)
        for (s = 0; s < 4; ++s)
            for (d = 0; d < 2; ++d) {
                const prn_dtype dt = d ? PRN_F64 : PRN_F32;
                size_t diff = 0;
                memset(a, 0, cap * sizeof(double)); /* f32 values fill half of each slot */
                memset(b, 0, cap * sizeof(double));
                run_threads(1, kinds[k], dt, shapes[s][0], shapes[s][1], shapes[s][2], a, &n1);
                run_threads(2, kinds[k], dt, shapes[s][0], shapes[s][1], shapes[s][2], b, &n2);
                PRNT_CHECK(n1 == n2 && n1 > 0, "%lu and %lu values", (unsigned long)n1, (unsigned long)n2);
                for (i = 0; i < n1 && i < n2; ++i) diff += memcmp(&a[i], &b[i], sizeof(double)) != 0;
                PRNT_CHECK(diff == 0, "%s %s B %lu T %lu H %lu: %lu of %lu values differ between 1 and 2 threads",
                           prn_rnn_kind_name(kinds[k]), d ? "f64" : "f32", (unsigned long)shapes[s][0],
                           (unsigned long)shapes[s][1], (unsigned long)shapes[s][2], (unsigned long)diff,
                           (unsigned long)n1);
            }
    free(a);
    free(b);
}

/* A row's outputs do not depend on the batch around it: the fused layer's
 * product takes rows by 8 (two blocks of 16 units at a time) and the rows
 * past a multiple of 8 one at a time over 8 blocks, each entry the same
 * chain of multiply-adds either way. Rows 0 and 9 of a batch of 11 (one
 * tile of 8, three rows left) against each row alone (B = 1), bit for bit,
 * LSTM and GRU (12 and 9 blocks of 16 at H = 40), f32 and f64, one thread.
 * At H = 8 the batch runs the lanes loop (the rows across the vector
 * lanes) and the row alone the threaded loop: the same bits too (the
 * lanes' product once summed without FMAs where the panels use them:
 * 6-46 of 240 outputs differed in f32). */
static void run_rows(prn_rnn_kind kind, prn_dtype dt, size_t B, size_t H, const double *xv, double *y) {
    prn_config cfg;
    prn_context *ctx;
    prn_rnn_config rc = cfg_of(kind, dt, 8, H, 1, 0, 0);
    prn_rnn *rnn = NULL;
    prn_tensor *x = NULL, *out = NULL;
    char err[256];
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = 9;
    cfg.num_threads = 1;
    cfg.backend = "reference-noblas";
    if (prn_context_create(&cfg, &ctx, err, sizeof err) != PRN_OK) { PRNT_CHECK(0, "%s", err); return; }
    PRNT_OK(ctx, prn_rnn_create(ctx, &rc, &rnn));
    {
        size_t xs[3];
        xs[0] = B; xs[1] = 30; xs[2] = 8;
        PRNT_OK(ctx, prn_tensor_create(ctx, dt, 3, xs, &x));
    }
    if (x) {
        prnt_upload_f64(x, xv);
        PRNT_OK(ctx, prn_rnn_forward(ctx, rnn, x, NULL, &out, NULL));
        if (out) PRNT_OK(ctx, prn_tensor_download(out, y, prn_tensor_numel(out)));
    }
    prn_tensor_free(out);
    prn_tensor_free(x);
    prn_rnn_free(rnn);
    prn_context_free(ctx);
}
static void test_row_same_bits(void) {
    static const prn_rnn_kind kinds[2] = {PRN_RNN_LSTM, PRN_RNN_GRU};
    static const size_t hs[2] = {40, 8};
    static double xv[11 * 30 * 8], y[11 * 30 * 40], y1[30 * 40];
    static const size_t rows[2] = {0, 9};
    unsigned seed = 77;
    int k, d, r, hi;
    rand_fill(xv, 11 * 30 * 8, &seed, 1.0);
    for (hi = 0; hi < 2; ++hi)
        for (k = 0; k < 2; ++k)
            for (d = 0; d < 2; ++d) {
                const prn_dtype dt = d ? PRN_F64 : PRN_F32;
                const size_t es = d ? sizeof(double) : sizeof(float), H = hs[hi];
                memset(y, 0, sizeof y);
                run_rows(kinds[k], dt, 11, H, xv, y);
                for (r = 0; r < 2; ++r) {
                    size_t i, diff = 0;
                    memset(y1, 0, sizeof y1);
                    run_rows(kinds[k], dt, 1, H, xv + rows[r] * 30 * 8, y1);
                    /* downloads hold the tensor's dtype: f32 fills the first half */
                    for (i = 0; i < 30 * H; ++i)
                        diff += memcmp((const char *)y1 + i * es, (const char *)y + (rows[r] * 30 * H + i) * es, es) != 0;
                    PRNT_CHECK(diff == 0, "%s %s H %lu row %lu of 11: %lu of %lu outputs differ from the row alone",
                               prn_rnn_kind_name(kinds[k]), d ? "f64" : "f32", (unsigned long)H, (unsigned long)rows[r],
                               (unsigned long)diff, (unsigned long)(30 * H));
                }
            }
}

/* --- the input projection inside the fused layer (rnn_layer_forward_x) ---
 * A forward that records nothing takes rnn_layer_forward_y (y and the last
 * state without the states), once per layer and direction; a recorded one
 * (gradients asked for) rnn_layer_forward_x for ELMAN and LSTM, whose
 * backward then takes rnn_layer_backward_x (test_fused_x_grad), and the
 * gemm and rnn_layer_forward for GRU and MHGRU: for ELMAN and LSTM the
 * recorded forward's bits are the unrecorded one's (forward_y against
 * forward_x). Its outputs and final states against the composition
 * (the same backend without the entry): within rounding (the product's sum
 * may run in another order than the gemm's). Its own bits do not depend on
 * the threads (1 or 2: the batch split, the units split) nor on the batch
 * around a row (H 40: 8-row tiles and single rows, chunks of steps per row
 * or a product per step; H 8: the lanes loop with 11 rows, the threaded one
 * alone). Shapes: the units split (B 1, H 112), a few rows per thread (B 6),
 * 8 or more (B 17), the lanes loop (H 5, 8), 2 layers bidirectional, and
 * W_hh past 2 MB with 4 rows (LSTM H 264 f64: split by units); T 150
 * crosses B 1's chunks of 64 steps. */
static int g_xcalls, g_ycalls;
static prn_status count_layer_y(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse, size_t B,
                                size_t T, size_t H, size_t In, const void *x, const void *w_ih, const void *b_ih,
                                const void *w_hh, const void *b_hh, const void *s0, void *y, void *fin) {
    g_ycalls++;
    return prn_reference_noblas_backend()->rnn_layer_forward_y(ctx, dtype, kind, relu, reverse, B, T, H, In, x, w_ih,
                                                                b_ih, w_hh, b_hh, s0, y, fin);
}
static prn_status count_layer_x(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse, size_t B,
                                size_t T, size_t H, size_t In, const void *x, const void *w_ih, const void *b_ih,
                                const void *w_hh, const void *b_hh, const void *s0, void *states, void *saved) {
    g_xcalls++;
    return prn_reference_noblas_backend()->rnn_layer_forward_x(ctx, dtype, kind, relu, reverse, B, T, H, In, x, w_ih,
                                                                b_ih, w_hh, b_hh, s0, states, saved);
}
/* y then the final states of a forward (no_grad: nothing recorded) into out */
static size_t run_x(prn_context *ctx, prn_rnn_kind kind, prn_dtype dt, size_t B, size_t T, size_t H, size_t NI,
                    int layers, const double *xv, int no_grad, double *out) {
    prn_rnn_config rc = cfg_of(kind, dt, NI, H, layers, layers > 1, 0);
    prn_rnn *rnn = NULL;
    prn_tensor *x = NULL, *y = NULL, *st = NULL;
    size_t xs[3], n = 0;
    if (kind == PRN_RNN_MHGRU) rc.num_heads = 1;
    xs[0] = B; xs[1] = T; xs[2] = NI;
    prn_seed(ctx, 31);
    PRNT_OK(ctx, prn_rnn_create(ctx, &rc, &rnn));
    PRNT_OK(ctx, prn_tensor_create(ctx, dt, 3, xs, &x));
    if (rnn && x) {
        prnt_upload_f64(x, xv);
        if (no_grad) prn_no_grad_begin(ctx);
        PRNT_OK(ctx, prn_rnn_forward(ctx, rnn, x, NULL, &y, &st));
        if (no_grad) prn_no_grad_end(ctx);
        if (y && st) {
            PRNT_OK(ctx, prn_tensor_download(y, out, prn_tensor_numel(y)));
            n = prn_tensor_numel(y);
            PRNT_OK(ctx, prn_tensor_download(st, (char *)out + n * (dt == PRN_F64 ? 8 : 4), prn_tensor_numel(st)));
            n += prn_tensor_numel(st);
        }
    }
    prn_tensor_free(y);
    prn_tensor_free(st);
    prn_tensor_free(x);
    prn_rnn_free(rnn);
    return n;
}
/* A context on backend `name` of the two in list, with `threads` threads;
 * NULL (and a failed check) when it cannot be made. */
static prn_context *ctx_among(const prn_backend **list, int n, const char *name, int threads) {
    prn_config cfg;
    prn_context *ctx = NULL;
    char err[256];
    memset(&cfg, 0, sizeof cfg);
    cfg.backends = list;
    cfg.num_backends = n;
    cfg.backend = name;
    cfg.num_threads = threads;
    if (prn_context_create(&cfg, &ctx, err, sizeof err) != PRN_OK) PRNT_CHECK(0, "%s", err);
    return ctx;
}
static void test_fused_projection(void) {
    static const prn_rnn_kind kinds[4] = {PRN_RNN_ELMAN, PRN_RNN_LSTM, PRN_RNN_GRU, PRN_RNN_MHGRU};
    static const size_t shapes[7][5] = {{1, 150, 112, 7, 1}, {6, 40, 40, 5, 1}, {17, 40, 24, 9, 1},
                                        {11, 30, 8, 8, 1}, {3, 20, 5, 4, 1}, {5, 12, 20, 6, 2},
                                        {4, 3, 264, 5, 1}}; /* B T H I layers */
    enum { CAP = 1 << 16 };
    static double xv[CAP], a[CAP], b[CAP], c[CAP];
    prn_backend bx, bn;
    const prn_backend *list[2];
    prn_context *ctx[2][2] = {{NULL, NULL}, {NULL, NULL}}; /* [with the entry, without][threads 1, 2] */
    unsigned seed = 13;
    int k, d, s, th, i;
    bx = *prn_reference_noblas_backend();
    bx.name = "xcount";
    bx.rnn_layer_forward_x = count_layer_x;
    bx.rnn_layer_forward_y = count_layer_y;
    bn = *prn_reference_noblas_backend();
    bn.name = "nox";
    bn.rnn_layer_forward_x = NULL;
    bn.rnn_layer_forward_y = NULL;
    list[0] = &bx;
    list[1] = &bn;
    for (i = 0; i < 4; ++i) ctx[i / 2][i % 2] = ctx_among(list, 2, i / 2 ? "nox" : "xcount", i % 2 + 1);
    rand_fill(xv, CAP, &seed, 1.0);
    for (k = 0; k < 4 && ctx[1][1]; ++k)
        for (s = 0; s < 7; ++s)
            for (d = 0; d < 2; ++d) {
                const prn_dtype dt = d ? PRN_F64 : PRN_F32;
                const size_t B = shapes[s][0], T = shapes[s][1], H = shapes[s][2], NI = shapes[s][3];
                const int L = (int)shapes[s][4], LD = L * (L > 1 ? 2 : 1);
                const size_t es = d ? 8 : 4;
                const double tol = d ? 1e-12 : 2e-5;
                size_t n1, n2, j, diff;
                double worst = 0;
                for (th = 0; th < 2; ++th) {
                    g_xcalls = g_ycalls = 0;
                    n1 = run_x(ctx[0][th], kinds[k], dt, B, T, H, NI, L, xv, 1, th ? b : a);
                    PRNT_CHECK(g_ycalls == LD && g_xcalls == 0, "%s: rnn_layer_forward_y called %d times, not %d (_x %d)",
                               prn_rnn_kind_name(kinds[k]), g_ycalls, LD, g_xcalls);
                }
                /* 1 and 2 threads: the same bits */
                for (j = 0, diff = 0; j < n1; ++j) diff += memcmp((char *)a + j * es, (char *)b + j * es, es) != 0;
                PRNT_CHECK(diff == 0, "%s %s B %lu H %lu: %lu of %lu values differ between 1 and 2 threads",
                           prn_rnn_kind_name(kinds[k]), d ? "f64" : "f32", (unsigned long)B, (unsigned long)H,
                           (unsigned long)diff, (unsigned long)n1);
                /* against the composition, 2 threads */
                n2 = run_x(ctx[1][1], kinds[k], dt, B, T, H, NI, L, xv, 1, c);
                PRNT_CHECK(n1 == n2 && n1 > 0, "%lu and %lu values", (unsigned long)n1, (unsigned long)n2);
                for (j = 0; j < n1 && j < n2; ++j) {
                    const double u = d ? a[j] : (double)((float *)a)[j], v = d ? c[j] : (double)((float *)c)[j];
                    if (!(fabs(u - v) <= worst)) worst = fabs(u - v);
                }
                PRNT_CHECK(worst <= tol, "%s %s B %lu T %lu H %lu: the fused projection differs from gemm + layer by %g",
                           prn_rnn_kind_name(kinds[k]), d ? "f64" : "f32", (unsigned long)B, (unsigned long)T,
                           (unsigned long)H, worst);
                /* recorded (gradients asked for): the entry for ELMAN and LSTM
                 * (the backend has rnn_layer_backward_x), the composition for
                 * the others; the same bits as unrecorded */
                g_xcalls = 0;
                n2 = run_x(ctx[0][1], kinds[k], dt, B, T, H, NI, L, xv, 0, c);
                PRNT_CHECK(g_xcalls == (k < 2 ? LD : 0) && n2 == n1,
                           "%s: a recorded forward called rnn_layer_forward_x %d times", prn_rnn_kind_name(kinds[k]),
                           g_xcalls);
                for (j = 0, diff = 0; k < 2 && j < n1 && j < n2; ++j)
                    diff += memcmp((char *)b + j * es, (char *)c + j * es, es) != 0;
                PRNT_CHECK(diff == 0, "%s %s B %lu H %lu: %lu of %lu values of a recorded forward differ",
                           prn_rnn_kind_name(kinds[k]), d ? "f64" : "f32", (unsigned long)B, (unsigned long)H,
                           (unsigned long)diff, (unsigned long)n1);
            }
    /* a row alone and in a batch of 11: the same bits */
    for (k = 1; k < 3 && ctx[0][0]; ++k)
        for (s = 0; s < 2; ++s)
            for (d = 0; d < 2; ++d) {
                const prn_dtype dt = d ? PRN_F64 : PRN_F32;
                const size_t H = s ? 8 : 40, T = 30, NI = 8, es = d ? 8 : 4;
                static const size_t rows[2] = {0, 9};
                int r;
                run_x(ctx[0][0], kinds[k], dt, 11, T, H, NI, 1, xv, 1, a);
                for (r = 0; r < 2; ++r) {
                    size_t j, diff = 0;
                    run_x(ctx[0][0], kinds[k], dt, 1, T, H, NI, 1, xv + rows[r] * T * NI, 1, b);
                    for (j = 0; j < T * H; ++j)
                        diff += memcmp((char *)b + j * es, (char *)a + (rows[r] * T * H + j) * es, es) != 0;
                    PRNT_CHECK(diff == 0, "%s %s H %lu row %lu of 11: %lu of %lu outputs differ from the row alone",
                               prn_rnn_kind_name(kinds[k]), d ? "f64" : "f32", (unsigned long)H, (unsigned long)rows[r],
                               (unsigned long)diff, (unsigned long)(T * H));
                }
            }
    for (i = 0; i < 4; ++i) prn_context_free(ctx[i / 2][i % 2]);
}

/* --- training through the fused projection (rnn_layer_backward_x) --------
 * A recorded ELMAN or LSTM forward is one op through rnn_layer_forward_x,
 * whose backward takes rnn_layer_backward_x once per layer and direction:
 * dW_ih and db_ih inside the layer backward, d loss / d x as dxp W_ih. The
 * gradients of every parameter, of x and of state0 (and y, the final
 * states) against the same backend without rnn_layer_backward_x (the gemm,
 * rnn_layer_forward and rnn_layer_backward_dw, then the gemm's backward):
 * within rounding; with the entry, 1 and 2 threads give the same bits. The
 * shapes of test_fused_projection (the units split, rows per thread, the
 * lanes loop without the rings, 2 layers bidirectional, chunks of steps).
 * Without the final states asked for (loss sum(y * y)), an LSTM takes
 * rnn_layer_forward_yc and rnn_layer_backward_yc instead, once per layer
 * and direction: the same bits as rnn_layer_forward_x/_backward_x's (the
 * backend without the _yc entries). */
static int g_bxcalls, g_fyccalls, g_byccalls;
static prn_status count_layer_fyc(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse, size_t B, size_t T,
                                  size_t H, size_t In, const void *x, const void *w_ih, const void *b_ih,
                                  const void *w_hh, const void *b_hh, const void *s0, void *y, void *c, void *saved) {
    g_fyccalls++;
    return prn_reference_noblas_backend()->rnn_layer_forward_yc(ctx, dtype, kind, relu, reverse, B, T, H, In, x, w_ih,
                                                                 b_ih, w_hh, b_hh, s0, y, c, saved);
}
static prn_status count_layer_byc(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse, size_t B, size_t T,
                                  size_t H, size_t In, const void *gy, const void *x, const void *w_hh, const void *s0,
                                  const void *y, const void *c, const void *saved, void *dxp, void *ds0, void *dw_hh,
                                  void *db_hh, void *dw_ih, void *db_ih) {
    g_byccalls++;
    return prn_reference_noblas_backend()->rnn_layer_backward_yc(ctx, dtype, kind, relu, reverse, B, T, H, In, gy, x,
                                                                  w_hh, s0, y, c, saved, dxp, ds0, dw_hh, db_hh, dw_ih,
                                                                  db_ih);
}
static prn_status count_layer_bx(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse, size_t B, size_t T,
                                 size_t H, size_t In, const void *g, const void *x, const void *w_hh, const void *s0,
                                 const void *states, const void *saved, void *dxp, void *ds0, void *dw_hh,
                                 void *db_hh, void *dw_ih, void *db_ih) {
    g_bxcalls++;
    return prn_reference_noblas_backend()->rnn_layer_backward_x(ctx, dtype, kind, relu, reverse, B, T, H, In, g, x, w_hh,
                                                                 s0, states, saved, dxp, ds0, dw_hh, db_hh, dw_ih, db_ih);
}
/* the gradients of loss = sum(y * y) + sum(st) for every parameter, x and
 * state0, then y and the final states st, into out; returns their number.
 * ws 0: the final states not asked for, loss sum(y * y), no st in out. */
static size_t run_xg(prn_context *ctx, prn_rnn_kind kind, prn_dtype dt, size_t B, size_t T, size_t H, size_t NI,
                     int layers, int ws, const double *xv, double *out, size_t cap) {
    prn_rnn_config rc = cfg_of(kind, dt, NI, H, layers, layers > 1, 0);
    prn_rnn *rnn = NULL;
    prn_tensor *x = NULL, *s0 = NULL, *y = NULL, *st = NULL, *yy = NULL, *l1 = NULL, *l2 = NULL, *l = NULL, *ps[40];
    size_t xs[3], ss[3], n = 0;
    int np = 0, j;
    xs[0] = B; xs[1] = T; xs[2] = NI;
    prn_seed(ctx, 37);
    PRNT_OK(ctx, prn_rnn_create(ctx, &rc, &rnn));
    PRNT_OK(ctx, prn_tensor_create(ctx, dt, 3, xs, &x));
    if (rnn) {
        ss[0] = (size_t)layers * (layers > 1 ? 2 : 1); ss[1] = B; ss[2] = prn_rnn_state_size(rnn);
        PRNT_OK(ctx, prn_tensor_create(ctx, dt, 3, ss, &s0));
    }
    if (rnn && x && s0) {
        prnt_upload_f64(x, xv);
        prnt_upload_f64(s0, xv + 7);
        prn_tensor_set_requires_grad(x, 1);
        prn_tensor_set_requires_grad(s0, 1);
        PRNT_OK(ctx, prn_rnn_forward(ctx, rnn, x, s0, &y, ws ? &st : NULL));
        if (y && (st || !ws)) {
            PRNT_OK(ctx, prn_mul(ctx, y, y, &yy));
            PRNT_OK(ctx, prn_sum(ctx, yy, PRN_ALL_AXES, 0, &l1));
            if (ws) {
                PRNT_OK(ctx, prn_sum(ctx, st, PRN_ALL_AXES, 0, &l2));
                PRNT_OK(ctx, prn_add(ctx, l1, l2, &l));
            } else l = prn_tensor_retain(l1);
            if (l) PRNT_OK(ctx, prn_backward(ctx, l));
            np = prn_rnn_params(rnn, ps, 37);
            ps[np++] = x;
            ps[np++] = s0;
            ps[np++] = y;
            if (ws) ps[np++] = st;
        }
        for (j = 0; j < np; ++j) {
            const prn_tensor *t = j < np - 1 - ws ? prn_tensor_grad(ps[j]) : ps[j];
            size_t m = prn_tensor_numel(ps[j]);
            PRNT_CHECK(t != NULL, "%s: no gradient for tensor %d", prn_rnn_kind_name(kind), j);
            if (!t || n + m > cap) break;
            prnt_download_f64(t, out + n);
            n += m;
        }
    }
    prn_tensor_free(x); prn_tensor_free(s0); prn_tensor_free(y); prn_tensor_free(st); prn_tensor_free(yy);
    prn_tensor_free(l1); prn_tensor_free(l2); prn_tensor_free(l);
    prn_tape_clear(ctx);
    prn_rnn_free(rnn);
    return n;
}
static void test_fused_x_grad(void) {
    static const size_t shapes[8][5] = {{1, 150, 112, 7, 1}, {6, 40, 40, 5, 1}, {17, 40, 24, 9, 1},
                                        {11, 30, 8, 8, 1}, {3, 20, 5, 4, 1}, {5, 12, 20, 6, 2},
                                        {4, 3, 264, 5, 1}, {16, 70, 64, 20, 1}}; /* B T H I layers */
    enum { CAP = 1 << 19 };
    static double xv[CAP], a[CAP], b[CAP], c[CAP], e[CAP];
    prn_backend bx, bn, bz;
    const prn_backend *list[3];
    /* with the entries on 1 and 2 threads, without rnn_layer_backward_x on
     * 2, without the _yc entries on 2 */
    prn_context *ctx[4] = {NULL, NULL, NULL, NULL};
    unsigned seed = 17;
    int k, d, s, i, ws;
    bx = *prn_reference_noblas_backend();
    bx.name = "bxcount";
    bx.rnn_layer_backward_x = count_layer_bx;
    bx.rnn_layer_forward_yc = count_layer_fyc;
    bx.rnn_layer_backward_yc = count_layer_byc;
    bn = *prn_reference_noblas_backend();
    bn.name = "nobx";
    bn.rnn_layer_backward_x = NULL;
    bz = *prn_reference_noblas_backend();
    bz.name = "noyc";
    bz.rnn_layer_forward_yc = NULL;
    bz.rnn_layer_backward_yc = NULL;
    list[0] = &bx;
    list[1] = &bn;
    list[2] = &bz;
    for (i = 0; i < 4; ++i) ctx[i] = ctx_among(list, 3, i == 3 ? "noyc" : i == 2 ? "nobx" : "bxcount", i ? 2 : 1);
    rand_fill(xv, CAP, &seed, 1.0);
    for (k = 0; k < 2 && ctx[2] && ctx[3]; ++k)
        for (s = 0; s < 8; ++s)
            for (d = 0; d < 2; ++d)
                for (ws = 1; ws >= 0; --ws) {
                    const prn_rnn_kind kind = k ? PRN_RNN_LSTM : PRN_RNN_ELMAN;
                    const prn_dtype dt = d ? PRN_F64 : PRN_F32;
                    const size_t B = shapes[s][0], T = shapes[s][1], H = shapes[s][2], NI = shapes[s][3];
                    const int L = (int)shapes[s][4], LD = L * (L > 1 ? 2 : 1), yc = kind == PRN_RNN_LSTM && !ws;
                    const double tol = d ? 1e-11 : 2e-4;
                    size_t n0, n1, n2, j, diff = 0;
                    double worst = 0, big = 0;
                    g_bxcalls = g_fyccalls = g_byccalls = 0;
                    n0 = run_xg(ctx[0], kind, dt, B, T, H, NI, L, ws, xv, a, CAP);
                    PRNT_CHECK(g_bxcalls == (yc ? 0 : LD) && g_fyccalls == (yc ? LD : 0) && g_byccalls == g_fyccalls,
                               "%s%s: rnn_layer_backward_x called %d times, rnn_layer_forward_yc %d, _backward_yc %d; "
                               "expected %d each of %s",
                               prn_rnn_kind_name(kind), ws ? "" : " (no final state)", g_bxcalls, g_fyccalls, g_byccalls, LD,
                               yc ? "the _yc entries" : "rnn_layer_backward_x");
                    n1 = run_xg(ctx[1], kind, dt, B, T, H, NI, L, ws, xv, b, CAP);
                    n2 = run_xg(ctx[2], kind, dt, B, T, H, NI, L, ws, xv, c, CAP);
                    if (yc) { /* the _yc entries against rnn_layer_forward_x/_backward_x: the same bits */
                        const size_t n3 = run_xg(ctx[3], kind, dt, B, T, H, NI, L, ws, xv, e, CAP);
                        size_t dz = 0;
                        for (j = 0; j < n1 && j < n3; ++j) dz += b[j] != e[j];
                        PRNT_CHECK(n3 == n1 && dz == 0,
                                   "LSTM %s B %lu H %lu: %lu of %lu values differ between the _yc entries and "
                                   "rnn_layer_forward_x/_backward_x", d ? "f64" : "f32", (unsigned long)B,
                                   (unsigned long)H, (unsigned long)dz, (unsigned long)n1);
                    }
                    PRNT_CHECK(n0 == n1 && n1 == n2 && n0 > 0, "%lu, %lu and %lu values", (unsigned long)n0,
                               (unsigned long)n1, (unsigned long)n2);
                    for (j = 0; j < n0 && j < n1; ++j) diff += a[j] != b[j];
                    PRNT_CHECK(diff == 0, "%s %s B %lu H %lu: %lu of %lu gradients differ between 1 and 2 threads",
                               prn_rnn_kind_name(kind), d ? "f64" : "f32", (unsigned long)B, (unsigned long)H,
                               (unsigned long)diff, (unsigned long)n0);
                    for (j = 0; j < n1 && j < n2; ++j) {
                        if (fabs(c[j]) > big) big = fabs(c[j]);
                        if (!(fabs(b[j] - c[j]) <= worst)) worst = fabs(b[j] - c[j]);
                    }
                    PRNT_CHECK(worst <= tol * (1 + big),
                               "%s %s B %lu T %lu H %lu%s: the fused layer's gradients differ from the composition's by "
                               "%g (largest %g)",
                               prn_rnn_kind_name(kind), d ? "f64" : "f32", (unsigned long)B, (unsigned long)T,
                               (unsigned long)H, ws ? "" : " (no final state)", worst, big);
                }
    for (i = 0; i < 4; ++i) prn_context_free(ctx[i]);
}

static void test_no_leaks(void) {
    PRNT_CHECK(prn_live_tensors(g_ctx) == 0, "live tensors: %lu", (unsigned long)prn_live_tensors(g_ctx));
}

int main(void) {
    g_ctx = prnt_context(2026);
    if (!g_ctx) return 1;
    PRNT_RUN(test_names);
    PRNT_RUN(test_jacobian_fd);
    PRNT_RUN(test_jacobian_empty);
    PRNT_RUN(test_step_frame_sequence);
    PRNT_RUN(test_plrnn_formula);
    PRNT_RUN(test_gradients_fd);
    PRNT_RUN(test_model_files);
    PRNT_RUN(test_model_limits);
    PRNT_RUN(test_bad_input);
    PRNT_RUN(test_nan);
    PRNT_RUN(test_fused_vs_composed);
    PRNT_RUN(test_mhgru_one_head);
    PRNT_RUN(test_threads_same_bits);
    PRNT_RUN(test_row_same_bits);
    PRNT_RUN(test_fused_projection);
    PRNT_RUN(test_fused_x_grad);
    PRNT_RUN(test_alloc_failures);
    PRNT_RUN(test_frame_create_oom);
    PRNT_RUN(test_no_leaks);
    prn_context_free(g_ctx);
    return prnt_summary();
}
