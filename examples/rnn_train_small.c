/* rnn_train_small.c - a complete RNN training program: a GRU learns to output
 * the running mean of a noisy signal (a low-pass filter), by backpropagation
 * through time and Adam. Build and run: make build/examples/rnn_train_small &&
 * ./build/examples/rnn_train_small (make test builds and runs it). */
#include <math.h>
#include <stdio.h>
#include "parrnn.h"
#define B 8   /* sequences */
#define T 100 /* steps each */

int main(void) {
    static float u[B * T], v[B * T];
    size_t shape[3] = {B, T, 1}, b, t;
    prn_context *ctx;
    prn_rnn *rnn;
    prn_tensor *x, *target, *params[8], *y, *out, *loss;
    prn_optim *opt;
    prn_rnn_config rc = {0};
    prn_adam_config ac = {0};
    double l = 0, first = 0;
    char err[256];
    int step;
    if (prn_context_create(NULL, &ctx, err, sizeof err) != PRN_OK) { puts(err); return 1; }
    for (b = 0; b < B; ++b) { /* the data: noisy sines and their running mean */
        double avg = 0;
        for (t = 0; t < T; ++t) {
            double ut = sin(0.1 * (double)t * (1 + 0.2 * (double)b)) + 0.5 * sin(37.0 * (double)(t * (b + 3)));
            avg = 0.9 * avg + 0.1 * ut;
            u[b * T + t] = (float)ut;
            v[b * T + t] = (float)avg;
        }
    }
    rc.kind = PRN_RNN_GRU; rc.input_size = 1; rc.hidden_size = 16; rc.output_size = 1; /* readout: 1 value */
    ac.lr = 0.01;
    if (prn_tensor_from_host(ctx, PRN_F32, 3, shape, u, &x) || prn_tensor_from_host(ctx, PRN_F32, 3, shape, v, &target) ||
        prn_rnn_create(ctx, &rc, &rnn) || prn_optim_adam_create(ctx, params, prn_rnn_params(rnn, params, 8), &ac, &opt)) {
        printf("error: %s\n", prn_last_error(ctx)); return 1; }
    for (step = 0; step < 200; ++step) {
        prn_optim_zero_grad(opt);
        if (prn_rnn_forward(ctx, rnn, x, NULL, &y, NULL) || prn_rnn_readout(ctx, rnn, y, &out) ||
            prn_mse(ctx, out, target, &loss) || prn_tensor_item(loss, &l) || prn_backward(ctx, loss) ||
            prn_optim_step(opt)) { printf("error: %s\n", prn_last_error(ctx)); return 1; }
        if (step == 0) first = l;
        if (step % 50 == 0) printf("step %3d  loss %.5f\n", step, l);
        prn_tensor_free(y); prn_tensor_free(out); prn_tensor_free(loss); /* the tape keeps what it needs */
    }
    printf("loss %.5f -> %.5f\n", first, l);
    prn_optim_free(opt); prn_rnn_free(rnn); prn_context_free(ctx); /* frees x, target and the rest */
    return l < first / 4 ? 0 : 1; /* exit status 1 if it did not learn */
}
