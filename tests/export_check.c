/* The C half of tests/export_torch.sh: loads a .prnrnn file written by
 * tools/export_torch.py and runs it on a sequence, comparing with PyTorch's
 * outputs. One direction: per frame with the float frames
 * (prn_rnn_framef_step), and with the double frames; two directions: the
 * whole sequence with prn_rnn_forward (+ prn_rnn_readout).
 * Usage: export_check MODEL CASE TOL
 *   CASE: u32 T, I, Y, then T*I float inputs, then T*Y float outputs (PyTorch's)
 * Prints the largest difference and exits 0 when it is within TOL (relative
 * to max(1, |PyTorch's value|)), else 1. */
#include "../parrnn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static double worst = 0;
static void cmp(const float *want, const double *got, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i) {
        double d = fabs(got[i] - (double)want[i]) / (fabs(want[i]) > 1 ? fabs(want[i]) : 1.0);
        if (!(d <= worst)) worst = d;
    }
}

int main(int argc, char **argv) {
    prn_config cfg;
    prn_context *ctx = NULL;
    prn_rnn *r = NULL;
    FILE *fp;
    unsigned hd[3];
    size_t T, I, Y, t, i;
    float *x, *want, *yf;
    double *yd, *xd, tol, worst_d = 0;
    if (argc != 4) { fprintf(stderr, "usage: export_check MODEL CASE TOL\n"); return 2; }
    tol = atof(argv[3]);
    fp = fopen(argv[2], "rb");
    if (!fp || fread(hd, 4, 3, fp) != 3) { fprintf(stderr, "export_check: cannot read %s\n", argv[2]); return 2; }
    T = hd[0], I = hd[1], Y = hd[2];
    x = (float *)malloc(T * I * sizeof *x + 4);
    want = (float *)malloc(T * Y * sizeof *want + 4);
    yf = (float *)malloc(T * Y * sizeof *yf + 4);
    yd = (double *)malloc(T * Y * sizeof *yd + 8);
    xd = (double *)malloc(T * I * sizeof *xd + 8);
    if (!x || !want || !yf || !yd || !xd || fread(x, 4, T * I, fp) != T * I || fread(want, 4, T * Y, fp) != T * Y) {
        fprintf(stderr, "export_check: %s is short\n", argv[2]);
        return 2;
    }
    fclose(fp);
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = 1;
    cfg.backend = "reference";
    if (prn_context_create(&cfg, &ctx, NULL, 0) != PRN_OK) { fprintf(stderr, "export_check: no context\n"); return 2; }
    if (prn_rnn_load(ctx, argv[1], &r) != PRN_OK) { fprintf(stderr, "export_check: %s\n", prn_last_error(ctx)); return 1; }
    {
        const prn_rnn_config *c = prn_rnn_get_config(r);
        size_t have = c->output_size ? c->output_size : prn_rnn_output_size(r);
        if (have != Y || c->input_size != I) {
            fprintf(stderr, "export_check: the model maps %lu inputs to %lu outputs; PyTorch's %lu to %lu\n",
                    (unsigned long)c->input_size, (unsigned long)have, (unsigned long)I, (unsigned long)Y);
            return 1;
        }
        for (i = 0; i < T * I; ++i) xd[i] = x[i];
        if (!c->bidirectional) { /* per frame, float and double */
            prn_rnn_framef *ff = NULL;
            prn_rnn_frame *fd = NULL;
            if (prn_rnn_framef_create(r, 1, &ff) != PRN_OK || prn_rnn_frame_create(r, 1, &fd) != PRN_OK) {
                fprintf(stderr, "export_check: %s\n", prn_last_error(ctx));
                return 1;
            }
            for (t = 0; t < T; ++t)
                if (prn_rnn_framef_step(ff, x + t * I, yf + t * Y) != PRN_OK) { fprintf(stderr, "%s\n", prn_last_error(ctx)); return 1; }
            for (i = 0; i < T * Y; ++i) yd[i] = yf[i];
            cmp(want, yd, T * Y);
            worst_d = worst;
            worst = 0;
            for (t = 0; t < T; ++t)
                if (prn_rnn_frame_step(fd, xd + t * I, yd + t * Y) != PRN_OK) { fprintf(stderr, "%s\n", prn_last_error(ctx)); return 1; }
            cmp(want, yd, T * Y);
            { double tmp = worst; worst = worst_d; worst_d = tmp; }
            prn_rnn_framef_free(ff);
            prn_rnn_frame_free(fd);
            printf("float frames %.3g, double frames %.3g (tolerance %g)\n", worst, worst_d, tol);
        } else { /* two directions: the whole sequence */
            prn_tensor *xt = NULL, *y = NULL, *o = NULL;
            size_t sh[3];
            float *xs = x;
            sh[0] = 1, sh[1] = T, sh[2] = I;
            prn_no_grad_begin(ctx);
            if (prn_tensor_from_host(ctx, c->dtype, 3, sh, c->dtype == PRN_F32 ? (const void *)xs : (const void *)xd, &xt) != PRN_OK ||
                prn_rnn_forward(ctx, r, xt, NULL, &y, NULL) != PRN_OK ||
                (c->output_size && prn_rnn_readout(ctx, r, y, &o) != PRN_OK)) {
                fprintf(stderr, "export_check: %s\n", prn_last_error(ctx));
                return 1;
            }
            if (c->dtype == PRN_F32) {
                prn_tensor_download(o ? o : y, yf, T * Y);
                for (i = 0; i < T * Y; ++i) yd[i] = yf[i];
            } else {
                prn_tensor_download(o ? o : y, yd, T * Y);
            }
            cmp(want, yd, T * Y);
            printf("sequence (prn_rnn_forward) %.3g (tolerance %g)\n", worst, tol);
            prn_tensor_free(xt);
            prn_tensor_free(y);
            prn_tensor_free(o);
        }
    }
    prn_rnn_free(r);
    prn_context_free(ctx);
    return worst <= tol && worst_d <= tol ? 0 : 1;
}
