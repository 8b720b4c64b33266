/* Prints the bits of float-frame outputs and states (hex, one line per
 * step) for fixed networks: Elman (tanh, relu), GRU, MHGRU and LSTM, two
 * layers with a readout, hidden sizes 5 (padded) and 16, a batch of 6 (the
 * tiles of 4, 2 and 1 row), 40 steps. Parameters and inputs are exact
 * dyadic numbers from an integer generator, so that they are the same
 * values in every build. tests/frame_bits.sh builds this program and the
 * implementation with different compilers and flags and compares the
 * output: prn_rnn_framef_step's bits must not depend on them. The last
 * line names the paths taken (avx512, avx2, portable), which the script
 * drops. */
#include "../parrnn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned g_seed = 2024;
static double next_val(int scale) { /* k / 2^scale, k in -64 .. 63 */
    g_seed = g_seed * 1103515245u + 12345u;
    return (double)((int)((g_seed >> 16) & 127) - 64) / (double)(1 << scale);
}

int main(void) {
    static const prn_rnn_kind kinds[] = {PRN_RNN_ELMAN, PRN_RNN_ELMAN, PRN_RNN_GRU, PRN_RNN_MHGRU, PRN_RNN_LSTM};
    static const size_t Hs[] = {5, 16};
    prn_config cfg;
    prn_context *ctx = NULL;
    int k, hi, t, p;
    char paths[64] = "";
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = 1;
    cfg.num_threads = 1;
    cfg.backend = "reference";
    if (prn_context_create(&cfg, &ctx, NULL, 0) != PRN_OK) { fprintf(stderr, "frame_bits: no context\n"); return 1; }
    for (k = 0; k < 5; ++k)
        for (hi = 0; hi < 2; ++hi) {
            prn_rnn_config c;
            prn_rnn *r = NULL;
            prn_rnn_framef *f = NULL;
            prn_tensor *ps[64];
            size_t B = 6, In = 3, O = 2, H = Hs[hi], n, i, S;
            float x[6 * 3], y[6 * 2], st[2 * 6 * 32];
            int np;
            memset(&c, 0, sizeof c);
            c.kind = kinds[k];
            c.dtype = PRN_F32;
            c.relu = k == 1;
            c.input_size = In;
            c.hidden_size = H;
            c.num_layers = 2;
            c.output_size = O;
            c.num_heads = kinds[k] == PRN_RNN_MHGRU && H % 2 == 0 ? 2 : 1;
            if (prn_rnn_create(ctx, &c, &r) != PRN_OK) { fprintf(stderr, "frame_bits: %s\n", prn_last_error(ctx)); return 1; }
            np = prn_rnn_params(r, ps, 64);
            for (p = 0; p < np; ++p) {
                double *v;
                float *fv;
                n = prn_tensor_numel(ps[p]);
                v = (double *)malloc(n * sizeof *v);
                fv = (float *)malloc(n * sizeof *fv);
                if (!v || !fv) return 1;
                for (i = 0; i < n; ++i) fv[i] = (float)next_val(k == 1 ? 8 : 6);
                (void)v;
                if (prn_tensor_upload(ps[p], fv, n) != PRN_OK) { fprintf(stderr, "frame_bits: upload\n"); return 1; }
                free(v);
                free(fv);
            }
            if (prn_rnn_framef_create(r, B, &f) != PRN_OK) { fprintf(stderr, "frame_bits: %s\n", prn_last_error(ctx)); return 1; }
            if (!strstr(paths, prn_rnn_framef_path(f))) {
                strcat(paths, " ");
                strcat(paths, prn_rnn_framef_path(f));
            }
            S = prn_rnn_state_size(r);
            for (t = 0; t < 40; ++t) {
                unsigned u;
                for (i = 0; i < B * In; ++i) x[i] = (float)next_val(5);
                if (prn_rnn_framef_step(f, x, y) != PRN_OK) { fprintf(stderr, "frame_bits: %s\n", prn_last_error(ctx)); return 1; }
                prn_rnn_framef_get_state(f, st);
                printf("%s%s H=%lu t=%d", prn_rnn_kind_name(kinds[k]), k == 1 ? "-relu" : "", (unsigned long)H, t);
                for (i = 0; i < B * O; ++i) { memcpy(&u, y + i, 4); printf(" %08x", u); }
                printf(" |");
                for (i = 0; i < 2 * B * S; ++i) { memcpy(&u, st + i, 4); printf(" %08x", u); }
                printf("\n");
            }
            prn_rnn_framef_free(f);
            prn_rnn_free(r);
        }
    printf("paths%s\n", paths);
    prn_context_free(ctx);
    return 0;
}
