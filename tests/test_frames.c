/* Float frames (prn_rnn_framef_*): every supported kind, depth, readout,
 * hidden size (padded and not) and batch size (the tiles of 4, 2 and 1 row)
 * against the double frames; the state's layout, reset, the refusals (NaN
 * input, NaN state, NaN parameter, other kinds, bidirectional) and that a
 * refused call changes nothing; an LSTM with saturated gates. Same bits with other flags:
 * tests/frame_bits.sh. Allocation-freedom: test_rnn's allocator test. */
#include "../parrnn.h"
#include "prn_test.h"

static prn_context *g_ctx;

static void rand_fill(double *v, size_t n, unsigned *seed, double scale) {
    size_t i;
    for (i = 0; i < n; ++i) {
        *seed = *seed * 1103515245u + 12345u;
        v[i] = scale * (((*seed >> 8) & 0xffff) / 32768.0 - 1.0);
    }
}

static prn_rnn *make_rnn(prn_rnn_kind kind, int relu, size_t In, size_t H, int L, size_t O) {
    prn_rnn_config c;
    prn_rnn *r = NULL;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.dtype = PRN_F32;
    c.relu = relu;
    c.input_size = In;
    c.hidden_size = H;
    c.num_layers = L;
    c.output_size = O;
    if (kind == PRN_RNN_MHGRU) c.num_heads = H % 2 ? 1 : 2;
    if (prn_rnn_create(g_ctx, &c, &r) != PRN_OK) return NULL;
    return r;
}

static void test_against_double(void) {
    static const prn_rnn_kind kinds[] = {PRN_RNN_ELMAN, PRN_RNN_ELMAN, PRN_RNN_GRU, PRN_RNN_MHGRU, PRN_RNN_LSTM};
    static const size_t Hs[] = {3, 8, 13, 32}, Bs[] = {1, 2, 3, 7};
    int kk, hi, bi, L;
    double worst = 0;
    for (kk = 0; kk < 5; ++kk)
        for (hi = 0; hi < 4; ++hi)
            for (L = 1; L <= 2; ++L)
                for (bi = 0; bi < 4; ++bi) {
                    size_t H = Hs[hi], B = Bs[bi], In = 5, O = L == 2 ? 3 : 0, S, Y, i, t;
                    int relu = kk == 1;
                    prn_rnn *r = make_rnn(kinds[kk], relu, In, H, L, O);
                    prn_rnn_frame *fd = NULL;
                    prn_rnn_framef *ff = NULL;
                    double xd[7 * 5], yd[7 * 32], *sd;
                    float xf[7 * 5], yf[7 * 32], *sf;
                    unsigned seed = 11u * (unsigned)(kk + 1) + (unsigned)(hi * 7 + bi + L);
                    double err = 0;
                    PRNT_CHECK(r != NULL, "create");
                    if (!r) return;
                    S = prn_rnn_state_size(r);
                    Y = O ? O : H;
                    PRNT_OK(g_ctx, prn_rnn_frame_create(r, B, &fd));
                    PRNT_OK(g_ctx, prn_rnn_framef_create(r, B, &ff));
                    sd = (double *)malloc((size_t)L * B * S * sizeof *sd);
                    sf = (float *)malloc((size_t)L * B * S * sizeof *sf);
                    if (!fd || !ff || !sd || !sf) { free(sd); free(sf); prn_rnn_frame_free(fd); prn_rnn_framef_free(ff); prn_rnn_free(r); return; }
                    PRNT_CHECK(prn_rnn_framef_memory(ff) > 0, "memory");
                    /* a start state: set in both */
                    rand_fill(sd, (size_t)L * B * S, &seed, 0.5);
                    for (i = 0; i < (size_t)L * B * S; ++i) sf[i] = (float)sd[i], sd[i] = sf[i];
                    PRNT_OK(g_ctx, prn_rnn_frame_set_state(fd, sd));
                    PRNT_OK(g_ctx, prn_rnn_framef_set_state(ff, sf));
                    for (t = 0; t < 6; ++t) {
                        rand_fill(xd, B * In, &seed, 1.5);
                        for (i = 0; i < B * In; ++i) xf[i] = (float)xd[i], xd[i] = xf[i];
                        PRNT_OK(g_ctx, prn_rnn_frame_step(fd, xd, yd));
                        PRNT_OK(g_ctx, prn_rnn_framef_step(ff, xf, yf));
                        for (i = 0; i < B * Y; ++i) {
                            double d = fabs(yd[i] - (double)yf[i]);
                            if (!(d <= err)) err = d;
                        }
                    }
                    PRNT_OK(g_ctx, prn_rnn_frame_get_state(fd, sd));
                    PRNT_OK(g_ctx, prn_rnn_framef_get_state(ff, sf));
                    for (i = 0; i < (size_t)L * B * S; ++i) {
                        double d = fabs(sd[i] - (double)sf[i]);
                        if (!(d <= err)) err = d;
                    }
                    PRNT_CHECK(err < (relu ? 1e-4 : 2e-5), "%s%s H=%lu L=%d B=%lu: float vs double frames %g",
                               prn_rnn_kind_name(kinds[kk]), relu ? "(relu)" : "", (unsigned long)H, L, (unsigned long)B, err);
                    if (err > worst) worst = err;
                    /* reset_row zeroes one row in every layer, nothing else */
                    if (B > 1) {
                        float *s2 = (float *)malloc((size_t)L * B * S * sizeof *s2);
                        size_t l, b, bad = 0;
                        PRNT_OK(g_ctx, prn_rnn_framef_reset_row(ff, 1));
                        PRNT_STATUS(g_ctx, prn_rnn_framef_reset_row(ff, B), PRN_ERR_INVALID_ARGUMENT);
                        PRNT_OK(g_ctx, prn_rnn_framef_get_state(ff, s2));
                        for (l = 0; l < (size_t)L; ++l)
                            for (b = 0; b < B; ++b)
                                for (i = 0; i < S; ++i) {
                                    size_t o = (l * B + b) * S + i;
                                    if (s2[o] != (b == 1 ? 0.0f : sf[o])) ++bad;
                                }
                        PRNT_CHECK(bad == 0, "reset_row: %lu values wrong", (unsigned long)bad);
                        free(s2);
                    }
                    prn_rnn_framef_reset(ff);
                    PRNT_OK(g_ctx, prn_rnn_framef_get_state(ff, sf));
                    for (i = 0; i < (size_t)L * B * S; ++i)
                        if (sf[i] != 0.0f) break;
                    PRNT_CHECK(i == (size_t)L * B * S, "reset left a nonzero state");
                    free(sd);
                    free(sf);
                    prn_rnn_frame_free(fd);
                    prn_rnn_framef_free(ff);
                    prn_rnn_free(r);
                }
    printf("  float vs double frames: worst difference %.3g\n", worst);
}

/* Saturated LSTM gates: the float LSTM forms c' = c / Df + Ng / (Di Dg)
 * and h = Nc / (Do Dc) (sigmoid 1 / D, tanh N / D), and a product of two
 * denominators must stay finite wherever the result is not negligible. No
 * weights, only biases: the forget gate 1, the input gate e^-100, the
 * output gate's preactivation -2 down to -80 across the units (og 0.12
 * down to 1e-35) and the cell state +-85 down to +-5 (tanh exactly +-1 in
 * float): h = +-og and c' = c, within float rounding, as the double frames
 * give. (With tanh's argument clamped at 43.5, not 10, Do Dc overflowed and
 * h[0] was 0.) */
static void test_saturated_lstm(void) {
    static const size_t Hs[] = {5, 16, 32}, Bs[] = {1, 3};
    int hi, bi, p, np;
    for (hi = 0; hi < 3; ++hi)
        for (bi = 0; bi < 2; ++bi) {
            size_t H = Hs[hi], B = Bs[bi], S, i, j, t, n;
            prn_rnn *r = make_rnn(PRN_RNN_LSTM, 0, 1, H, 1, 0);
            prn_rnn_frame *fd = NULL;
            prn_rnn_framef *ff = NULL;
            prn_tensor *ps[8];
            double xd[3], yd[3 * 32], sd[3 * 64];
            float xf[3], yf[3 * 32], sf[3 * 64], pf[4 * 32 * 32];
            double err = 0;
            PRNT_CHECK(r != NULL, "create");
            if (!r) return;
            np = prn_rnn_params(r, ps, 8); /* weight_ih, weight_hh, bias_ih, bias_hh; gates i, f, g, o */
            PRNT_CHECK(np == 4, "params: %d", np);
            for (p = 0; p < np; ++p) {
                n = prn_tensor_numel(ps[p]);
                memset(pf, 0, sizeof pf);
                if (p == 2)
                    for (j = 0; j < H; ++j)
                        pf[j] = -100.0f, pf[H + j] = 30.0f, pf[2 * H + j] = 0.5f, pf[3 * H + j] = -2.0f - 78.0f * (float)j / (float)(H - 1);
                PRNT_OK(g_ctx, prn_tensor_upload(ps[p], pf, n));
            }
            S = prn_rnn_state_size(r);
            PRNT_OK(g_ctx, prn_rnn_frame_create(r, B, &fd));
            PRNT_OK(g_ctx, prn_rnn_framef_create(r, B, &ff));
            if (!fd || !ff) { prn_rnn_frame_free(fd); prn_rnn_framef_free(ff); prn_rnn_free(r); return; }
            for (i = 0; i < B * S; ++i) {
                j = i % S;
                sf[i] = j < H ? 0.25f : (float)((j + i / S) % 2 ? 1 : -1) * (85.0f - 80.0f * (float)(j - H) / (float)(H - 1));
                sd[i] = sf[i];
            }
            PRNT_OK(g_ctx, prn_rnn_frame_set_state(fd, sd));
            PRNT_OK(g_ctx, prn_rnn_framef_set_state(ff, sf));
            for (t = 0; t < 3; ++t) {
                for (i = 0; i < B; ++i) xf[i] = 0.5f * (float)i - 0.25f, xd[i] = xf[i];
                PRNT_OK(g_ctx, prn_rnn_frame_step(fd, xd, yd));
                PRNT_OK(g_ctx, prn_rnn_framef_step(ff, xf, yf));
                for (i = 0; i < B * H; ++i) {
                    double d = fabs(yd[i] - (double)yf[i]);
                    if (!(d <= err)) err = d;
                }
                PRNT_OK(g_ctx, prn_rnn_framef_get_state(ff, sf));
                PRNT_OK(g_ctx, prn_rnn_frame_get_state(fd, sd));
                for (i = 0; i < B * S; ++i) {
                    double d = fabs(sd[i] - (double)sf[i]) / (fabs(sd[i]) > 1.0 ? fabs(sd[i]) : 1.0);
                    if (!(d <= err)) err = d;
                }
            }
            PRNT_CHECK(fabs(yd[0]) > 0.1 && err < 1e-6, "H=%lu B=%lu: h[0] %g, float vs double frames %g", (unsigned long)H,
                       (unsigned long)B, yd[0], err);
            prn_rnn_frame_free(fd);
            prn_rnn_framef_free(ff);
            prn_rnn_free(r);
        }
}

/* NaN and Inf: refused, and nothing changes. */
static void test_refusals(void) {
    prn_rnn *r = make_rnn(PRN_RNN_LSTM, 0, 2, 4, 1, 0), *pl, *bi;
    prn_rnn_framef *ff = NULL;
    prn_rnn_config c;
    float x[2 * 2] = {0.5f, -0.25f, 1.0f, 2.0f}, y[2 * 4], y0[2 * 4], s[2 * 8], s0[2 * 8];
    size_t i;
    PRNT_CHECK(r != NULL, "create");
    if (!r) return;
    PRNT_STATUS(g_ctx, prn_rnn_framef_create(r, 0, &ff), PRN_ERR_INVALID_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_rnn_framef_create(r, 2, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_OK(g_ctx, prn_rnn_framef_create(r, 2, &ff));
    if (!ff) { prn_rnn_free(r); return; }
    PRNT_CHECK(!strcmp(prn_rnn_framef_path(ff), "avx2") || !strcmp(prn_rnn_framef_path(ff), "portable"), "path");
    printf("  path: %s\n", prn_rnn_framef_path(ff));
    PRNT_OK(g_ctx, prn_rnn_framef_step(ff, x, y0));
    PRNT_OK(g_ctx, prn_rnn_framef_get_state(ff, s0));
    for (i = 0; i < 8; ++i) y[i] = 7.0f;
    x[3] = NAN;
    PRNT_STATUS(g_ctx, prn_rnn_framef_step(ff, x, y), PRN_ERR_NONFINITE);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "prn_rnn_framef_step") && strstr(prn_last_error(g_ctx), "'x'"), "message: %s",
               prn_last_error(g_ctx));
    x[3] = INFINITY;
    PRNT_STATUS(g_ctx, prn_rnn_framef_step(ff, x, y), PRN_ERR_NONFINITE);
    PRNT_OK(g_ctx, prn_rnn_framef_get_state(ff, s));
    PRNT_CHECK(!memcmp(s, s0, sizeof s), "a refused step changed the state");
    for (i = 0; i < 8; ++i) PRNT_CHECK(y[i] == 7.0f, "a refused step wrote y");
    PRNT_STATUS(g_ctx, prn_rnn_framef_step(ff, NULL, y), PRN_ERR_NULL_ARGUMENT);
    s[5] = NAN;
    PRNT_STATUS(g_ctx, prn_rnn_framef_set_state(ff, s), PRN_ERR_NONFINITE);
    PRNT_STATUS(g_ctx, prn_rnn_framef_set_state(ff, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_rnn_framef_get_state(ff, NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_OK(g_ctx, prn_rnn_framef_get_state(ff, s));
    PRNT_CHECK(!memcmp(s, s0, sizeof s), "a refused set_state changed the state");
    /* a NaN parameter: sync refuses it and keeps the old weights */
    {
        prn_tensor *ps[16];
        int np = prn_rnn_params(r, ps, 16);
        double v[4 * 4 * 2];
        float ya[2 * 4], yb[2 * 4];
        size_t n = prn_tensor_numel(ps[0]);
        PRNT_CHECK(np > 0 && n <= 32, "params");
        prnt_download_f64(ps[0], v);
        v[3] = NAN;
        prnt_upload_f64(ps[0], v);
        PRNT_OK(g_ctx, prn_rnn_framef_set_state(ff, s0));
        x[3] = 2.0f;
        PRNT_OK(g_ctx, prn_rnn_framef_step(ff, x, ya));
        PRNT_STATUS(g_ctx, prn_rnn_framef_sync(ff), PRN_ERR_NONFINITE);
        PRNT_CHECK(strstr(prn_last_error(g_ctx), "weight_ih") != NULL, "message names the parameter: %s", prn_last_error(g_ctx));
        PRNT_OK(g_ctx, prn_rnn_framef_set_state(ff, s0));
        PRNT_OK(g_ctx, prn_rnn_framef_step(ff, x, yb));
        PRNT_CHECK(!memcmp(ya, yb, sizeof ya), "a refused sync changed the weights");
        {
            prn_rnn_framef *f2 = (prn_rnn_framef *)&c;
            PRNT_STATUS(g_ctx, prn_rnn_framef_create(r, 1, &f2), PRN_ERR_NONFINITE);
            PRNT_CHECK(f2 == (prn_rnn_framef *)&c, "a failed create wrote *out");
        }
    }
    prn_rnn_framef_free(ff);
    prn_rnn_free(r);
    /* kinds the float frames do not step, and two directions */
    pl = make_rnn(PRN_RNN_PLRNN, 0, 2, 4, 1, 0);
    ff = NULL;
    if (pl) PRNT_STATUS(g_ctx, prn_rnn_framef_create(pl, 1, &ff), PRN_ERR_UNSUPPORTED);
    prn_rnn_free(pl);
    memset(&c, 0, sizeof c);
    c.kind = PRN_RNN_GRU;
    c.input_size = 2;
    c.hidden_size = 4;
    c.bidirectional = 1;
    bi = NULL;
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &bi));
    if (bi) PRNT_STATUS(g_ctx, prn_rnn_framef_create(bi, 1, &ff), PRN_ERR_INVALID_ARGUMENT);
    prn_rnn_free(bi);
    prn_rnn_framef_free(NULL);
    PRNT_CHECK(prn_rnn_framef_memory(NULL) == 0, "memory(NULL)");
    PRNT_STATUS(g_ctx, prn_rnn_framef_step(NULL, x, y), PRN_ERR_NULL_ARGUMENT);
}

/* One input and a batch of two tiles of four and one row. */
static void test_batch9(void) {
    prn_rnn *r = make_rnn(PRN_RNN_GRU, 0, 1, 5, 1, 2);
    prn_rnn_frame *fd = NULL;
    prn_rnn_framef *ff = NULL;
    double sd[9 * 5], yd[9 * 2], xd[9];
    float sf[9 * 5], yf[9 * 2], xf[9];
    unsigned seed = 9;
    size_t i, t;
    double err = 0;
    if (!r) { PRNT_CHECK(0, "create"); return; }
    PRNT_OK(g_ctx, prn_rnn_frame_create(r, 9, &fd));
    PRNT_OK(g_ctx, prn_rnn_framef_create(r, 9, &ff));
    if (fd && ff) {
        rand_fill(sd, 45, &seed, 1.0);
        for (i = 0; i < 45; ++i) sf[i] = (float)sd[i], sd[i] = sf[i];
        PRNT_OK(g_ctx, prn_rnn_frame_set_state(fd, sd));
        PRNT_OK(g_ctx, prn_rnn_framef_set_state(ff, sf));
        for (t = 0; t < 4; ++t) {
            rand_fill(xd, 9, &seed, 1.0);
            for (i = 0; i < 9; ++i) xf[i] = (float)xd[i], xd[i] = xf[i];
            PRNT_OK(g_ctx, prn_rnn_frame_step(fd, xd, yd));
            PRNT_OK(g_ctx, prn_rnn_framef_step(ff, xf, yf));
            for (i = 0; i < 18; ++i) if (fabs(yd[i] - yf[i]) > err) err = fabs(yd[i] - yf[i]);
        }
        PRNT_CHECK(err < 2e-5, "batch 9: %g", err);
    }
    prn_rnn_frame_free(fd);
    prn_rnn_framef_free(ff);
    prn_rnn_free(r);
}

int main(void) {
    g_ctx = prnt_context(2026);
    if (!g_ctx) return 1;
    PRNT_RUN(test_against_double);
    PRNT_RUN(test_saturated_lstm);
    PRNT_RUN(test_refusals);
    PRNT_RUN(test_batch9);
    prn_context_free(g_ctx);
    return prnt_summary();
}
