/* Writes the seed corpus of tests/fuzz_rnn_load.c: small model files
 * (prn_rnn_save) of every kind, f32 and f64, with and without a readout,
 * two layers, both directions, an autonomous PLRNN. Each stays under the
 * fuzzer's -max_len. Usage: fuzz_corpus_rnn_gen DIR (make fuzz-corpus-rnn). */
#include "parrnn.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    static const prn_rnn_kind kinds[] = {PRN_RNN_ELMAN, PRN_RNN_LSTM, PRN_RNN_GRU, PRN_RNN_MHGRU, PRN_RNN_PLRNN,
                                         PRN_RNN_SHPLRNN, PRN_RNN_CLIPPED_SHPLRNN, PRN_RNN_ALRNN};
    prn_context *ctx = NULL;
    char err[256], path[4096];
    int k, v, bad = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    if (prn_context_create(NULL, &ctx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    for (k = 0; k < (int)(sizeof kinds / sizeof kinds[0]); ++k)
        for (v = 0; v < 3; ++v) {
            prn_rnn_config c;
            prn_rnn *r = NULL;
            memset(&c, 0, sizeof c);
            c.kind = kinds[k];
            c.dtype = v == 1 ? PRN_F64 : PRN_F32;
            c.input_size = kinds[k] >= PRN_RNN_PLRNN && v == 2 ? 0 : 2; /* v 2: autonomous PLRNN family */
            c.hidden_size = 2;
            c.num_layers = v == 2 ? 2 : 1;
            c.bidirectional = v == 1;
            c.output_size = v == 0 ? 2 : 0;
            c.relu = kinds[k] == PRN_RNN_ELMAN && v == 2;
            if (kinds[k] == PRN_RNN_MHGRU) c.num_heads = 2;
            if (kinds[k] == PRN_RNN_SHPLRNN || kinds[k] == PRN_RNN_CLIPPED_SHPLRNN) c.shallow_size = 3;
            if (kinds[k] == PRN_RNN_ALRNN) c.num_relu = 1;
            snprintf(path, sizeof path, "%s/%s_%d.prnrnn", argv[1], prn_rnn_kind_name(kinds[k]), v);
            if (prn_rnn_create(ctx, &c, &r) != PRN_OK || prn_rnn_save(r, path) != PRN_OK) {
                fprintf(stderr, "%s: %s\n", path, prn_last_error(ctx));
                bad = 1;
            }
            prn_rnn_free(r);
        }
    prn_context_free(ctx);
    return bad;
}
