/* optout_use.c - what a build with parts left out still does (see LEAVING
 * PARTS OUT at the top of parrnn.h). tests/optout_check.sh compiles it
 * with the same PARRNN_NO_* / PARRNN_ONLY_FRAMES macros as the
 * implementation it links, as C99 and as C++, and runs it:
 *   - the reference backend's slots of the left-out parts are NULL, the
 *     others (the fused cells' and layers' forwards) set;
 *   - a two-layer GRU with a readout (its layers on the fused layer entry)
 *     and an LSTM run by prn_rnn_forward agree with the double and the
 *     float frames stepped frame by frame;
 *   - without training the tape stays empty (the parameters still require
 *     grad); with it, backward and an SGD step change a parameter;
 *   - where kept, DEER reproduces the forward and SCYFI finds the fixed
 *     point of a one-unit PLRNN.
 * An argument names another backend to run on (its slots are not checked;
 * the OpenCL and CUDA backends link with any of the builds).
 * Prints the summary line of the test programs. */
#include "parrnn.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;
#define CHECK(c)                                                                      \
    do {                                                                              \
        if (c) ++passed;                                                              \
        else { ++failed; printf("FAIL line %d: %s\n", __LINE__, #c); }                \
    } while (0)
#define OK(call) CHECK((call) == PRN_OK)

#define B 3
#define T 6
#define I 4
#define H 8
#define O 2

/* The network's outputs at every step (the readout's when out > 0, else
 * the last layer's y) by prn_rnn_forward against both frames' steps. */
static void check_network(prn_context *ctx, prn_rnn_kind kind, int layers, size_t out) {
    prn_rnn_config rc;
    prn_rnn *rnn = NULL;
    prn_rnn_frame *fr = NULL;
    prn_rnn_framef *ff = NULL;
    prn_tensor *x = NULL, *y = NULL, *o = NULL;
    size_t shape[3] = {B, T, I}, n = out ? out : H, b, t, i;
    float xs[B * T * I], os[B * T * H];
    double xd[B * I], yd[B * H], err = 0, errf = 0;
    float xf[B * I], yf[B * H];
    memset(&rc, 0, sizeof rc);
    rc.kind = kind;
    rc.input_size = I;
    rc.hidden_size = H;
    rc.num_layers = layers;
    rc.output_size = out;
    OK(prn_rnn_create(ctx, &rc, &rnn));
    if (!rnn) return;
    OK(prn_tensor_uniform(ctx, PRN_F32, 3, shape, -1.0, 1.0, &x));
    OK(prn_rnn_forward(ctx, rnn, x, NULL, &y, NULL));
    if (out) OK(prn_rnn_readout(ctx, rnn, y, &o));
    else o = prn_tensor_retain(y);
#ifdef PARRNN_NO_TRAINING
    CHECK(prn_tape_size(ctx) == 0); /* the parameters require grad, yet nothing records */
    CHECK(prn_grad_enabled(ctx) == 0);
#else
    CHECK(prn_tape_size(ctx) > 0);
#endif
    OK(prn_tensor_download(x, xs, B * T * I));
    OK(prn_tensor_download(o, os, B * T * n));
    OK(prn_rnn_frame_create(rnn, B, &fr));
    OK(prn_rnn_framef_create(rnn, B, &ff));
    for (t = 0; fr && ff && t < T; ++t) {
        for (b = 0; b < B; ++b)
            for (i = 0; i < I; ++i) xf[b * I + i] = (float)(xd[b * I + i] = xs[(b * T + t) * I + i]);
        OK(prn_rnn_frame_step(fr, xd, yd));
        OK(prn_rnn_framef_step(ff, xf, yf));
        for (b = 0; b < B; ++b)
            for (i = 0; i < n; ++i) {
                double ref = os[(b * T + t) * n + i];
                err = fmax(err, fabs(yd[b * n + i] - ref));
                errf = fmax(errf, fabs(yf[b * n + i] - ref));
            }
    }
    printf("%s, %d layers: |forward - frame| %.2g, |forward - framef| %.2g\n", prn_rnn_kind_name(kind), layers, err,
           errf);
    CHECK(err < 1e-4 && errf < 1e-4);
#ifndef PARRNN_NO_DEER
    {
        prn_tensor *yd2 = NULL;
        prn_deer_stats st;
        float ys[B * T * H], y2[B * T * H];
        double e = 0;
        /* with the tape on: the parameters require grad (recorded unless
         * PARRNN_NO_TRAINING; the training part below clears the tape) */
        OK(prn_deer_rnn(ctx, rnn, x, NULL, NULL, &yd2, NULL, &st));
#ifdef PARRNN_NO_TRAINING
        CHECK(prn_tape_size(ctx) == 0);
#endif
        OK(prn_tensor_download(y, ys, B * T * H));
        if (yd2) OK(prn_tensor_download(yd2, y2, B * T * H));
        for (i = 0; yd2 && i < B * T * H; ++i) e = fmax(e, fabs((double)ys[i] - y2[i]));
        printf("  prn_deer_rnn: %d iterations, |forward - deer| %.2g\n", st.iterations, e);
        CHECK(yd2 && st.converged && e < 1e-4);
        prn_tensor_free(yd2);
    }
#endif
#ifndef PARRNN_NO_TRAINING
    {
        prn_tensor *loss = NULL, *p = prn_rnn_param(rnn, "weight_hh_l0");
        prn_optim *opt = NULL;
        float before[4 * H * H], after[4 * H * H];
        size_t np = p ? prn_tensor_numel(p) : 0;
        OK(prn_sum(ctx, o, PRN_ALL_AXES, 0, &loss));
        OK(prn_backward(ctx, loss));
        CHECK(p && prn_tensor_grad(p) != NULL);
        OK(prn_tensor_download(p, before, np));
        OK(prn_optim_sgd_create(ctx, &p, 1, NULL, &opt));
        OK(prn_optim_step(opt));
        OK(prn_tensor_download(p, after, np));
        CHECK(np > 0 && np <= 4 * H * H && memcmp(before, after, np * sizeof *after) != 0);
        prn_optim_free(opt);
        prn_tensor_free(loss);
        prn_tape_clear(ctx);
    }
#endif
    prn_rnn_framef_free(ff);
    prn_rnn_frame_free(fr);
    prn_tensor_free(o);
    prn_tensor_free(y);
    prn_tensor_free(x);
    prn_rnn_free(rnn);
}

int main(int argc, char **argv) {
    prn_config cfg;
    prn_context *ctx = NULL;
    const prn_backend *be;
    char err[256];
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = argc > 1 ? argv[1] : "reference";
    cfg.seed = 7;
    if (prn_context_create(&cfg, &ctx, err, sizeof err) != PRN_OK) {
        printf("FAIL prn_context_create: %s\nsummary passed=0 failed=1 skipped=0\n", err);
        return 1;
    }
    be = prn_context_backend(ctx);
    if (argc > 1) goto run;
    /* what the build left out (NULL), what it kept */
    CHECK(be->rnn_gates_forward && be->rnn_layer_forward && be->scan_diag && be->gemm && be->all_finite);
#ifdef PARRNN_NO_SCYFI
    CHECK(be->solve_batched == NULL);
#else
    CHECK(be->solve_batched != NULL);
#endif
#ifdef PARRNN_NO_DEER
    CHECK(be->deer_iterate == NULL && be->deer_adjoint == NULL);
#else
    CHECK(be->deer_iterate != NULL);
#endif
#ifdef PARRNN_NO_TRAINING
    CHECK(!be->sgd_update && !be->adam_update && !be->rnn_gates_backward && !be->rnn_layer_backward &&
          !be->deer_adjoint);
#else
    CHECK(be->sgd_update && be->adam_update && be->rnn_gates_backward && be->rnn_layer_backward);
#endif
#if !defined(PARRNN_NO_TRAINING) && !defined(PARRNN_NO_DEER)
    CHECK(be->deer_adjoint != NULL);
#endif
run:
    check_network(ctx, PRN_RNN_GRU, 2, O);
    check_network(ctx, PRN_RNN_LSTM, 1, 0);
#ifndef PARRNN_NO_SCYFI
    {
        /* z' = 0.5 z + 0 relu(z) + 1: one fixed point, z = 2, stable */
        double A = 0.5, W = 0, h = 1;
        prn_pwl_model m;
        prn_scyfi_options so;
        prn_scyfi_result *r = NULL;
        memset(&m, 0, sizeof m);
        memset(&so, 0, sizeof so);
        m.kind = PRN_PWL_PLRNN;
        m.M = 1;
        m.A = &A;
        m.W = &W;
        m.h = &h;
        so.kmax = 1;
        OK(prn_scyfi(ctx, &m, &so, &r));
        CHECK(r && r->num_cycles == 1 && fabs(r->cycles[0].points[0] - 2) < 1e-12 &&
              r->cycles[0].type == PRN_CYCLE_STABLE);
        prn_scyfi_free(ctx, r);
    }
#endif
    CHECK(prn_live_tensors(ctx) == 0);
    prn_context_free(ctx);
    printf("summary passed=%d failed=%d skipped=0\n", passed, failed);
    return failed != 0;
}
