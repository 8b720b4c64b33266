/* Fuzz target of the model-file loader (prn_rnn_load).
 *
 * Each input is a model file whose last 4 bytes are replaced by the CRC-32
 * of the rest (the file format of prn_rnn_save), so the fuzzer reaches the
 * header and the parameters instead of stopping at the checksum; it is
 * written to a temporary file and loaded, in a context that reads at most
 * 1 MiB. On failure the status must be PRN_ERR_FORMAT, PRN_ERR_NONFINITE
 * or PRN_ERR_OUT_OF_MEMORY, *out untouched and the message must name
 * prn_rnn_load. On success the network must survive a round trip (saved,
 * loaded again: the same configuration and parameters bit for bit), run
 * prn_rnn_forward on two steps (PRN_OK, or PRN_ERR_NONFINITE when it
 * overflows) and, with one direction, a frame step. Any violation aborts
 * (a crash for the fuzzer); AddressSanitizer and UBSan watch the rest.
 *
 * `make fuzz` runs it (libFuzzer, clang) from the seeds in
 * tests/fuzz_corpus_rnn (small files of every kind, written by
 * tests/fuzz_corpus_rnn_gen.c: `make fuzz-corpus-rnn`); `make fuzz-replay`
 * replays them and the regression inputs in tests/fuzz_regress_rnn
 * without libFuzzer (-DPRN_FUZZ_STANDALONE).
 */
#define _POSIX_C_SOURCE 200809L /* getpid, opendir, stat */
#include "parrnn.h"
#include "prn_crc32.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static prn_context *g_ctx;
static char g_in[512], g_out[512];

static void fail(const char *what, const char *msg) {
    fprintf(stderr, "fuzz_rnn_load: %s%s%s\n", what, msg ? ": " : "", msg ? msg : "");
    abort();
}

static void remove_files(void) {
    remove(g_in);
    remove(g_out);
}

static prn_context *context(void) {
    if (!g_ctx) {
        prn_config cfg;
        char err[256];
        const char *tmp = getenv("TMPDIR");
        memset(&cfg, 0, sizeof cfg);
        cfg.backend = "reference";
        cfg.num_threads = 1;
        cfg.max_file_bytes = (size_t)1 << 20;
        if (prn_context_create(&cfg, &g_ctx, err, sizeof err) != PRN_OK) fail("prn_context_create", err);
        if (!tmp || !*tmp) tmp = "/tmp";
        snprintf(g_in, sizeof g_in, "%s/fuzz_rnn_load_%ld.in", tmp, (long)getpid());
        snprintf(g_out, sizeof g_out, "%s/fuzz_rnn_load_%ld.out", tmp, (long)getpid());
        atexit(remove_files);
    }
    return g_ctx;
}


static double *params_of(const prn_rnn *r, size_t *total) {
    prn_tensor *p[1024];
    int n = prn_rnn_params(r, p, 1024), i;
    size_t all = 0, off = 0;
    double *v;
    if (n > 1024) fail("more than 1024 parameters", NULL);
    for (i = 0; i < n; ++i) all += prn_tensor_numel(p[i]);
    v = (double *)malloc((all ? all : 1) * sizeof *v);
    if (!v) fail("out of memory", NULL);
    for (i = 0; i < n; ++i) {
        size_t m = prn_tensor_numel(p[i]);
        if (prn_tensor_dtype(p[i]) == PRN_F64) {
            if (m && prn_tensor_download(p[i], v + off, m) != PRN_OK) fail("download", NULL);
        } else {
            float *f = (float *)malloc((m ? m : 1) * sizeof *f);
            size_t j;
            if (!f) fail("out of memory", NULL);
            if (m && prn_tensor_download(p[i], f, m) != PRN_OK) fail("download", NULL);
            for (j = 0; j < m; ++j) v[off + j] = f[j];
            free(f);
        }
        off += m;
    }
    *total = all;
    return v;
}

static void check_network(prn_context *ctx, prn_rnn *r) {
    const prn_rnn_config *c = prn_rnn_get_config(r);
    prn_rnn *r2 = NULL;
    size_t n1, n2, shape[3];
    double *p1, *p2;
    prn_tensor *x = NULL, *y = NULL;
    prn_status st;
    /* round trip */
    if (prn_rnn_save(r, g_out) != PRN_OK) fail("prn_rnn_save", prn_last_error(ctx));
    if (prn_rnn_load(ctx, g_out, &r2) != PRN_OK) fail("a saved network does not load", prn_last_error(ctx));
    if (memcmp(prn_rnn_get_config(r2), c, sizeof *c) != 0) fail("the round trip changed the configuration", NULL);
    p1 = params_of(r, &n1);
    p2 = params_of(r2, &n2);
    if (n1 != n2 || memcmp(p1, p2, n1 * sizeof *p1) != 0) fail("the round trip changed the parameters", NULL);
    free(p1);
    free(p2);
    prn_rnn_free(r2);
    /* two steps of one sequence */
    shape[0] = 1; shape[1] = 2; shape[2] = c->input_size;
    if (prn_tensor_full(ctx, c->dtype, 3, shape, 0.5, &x) != PRN_OK) fail("prn_tensor_full", prn_last_error(ctx));
    st = prn_rnn_forward(ctx, r, x, NULL, &y, NULL);
    if (st != PRN_OK && st != PRN_ERR_NONFINITE) fail("prn_rnn_forward", prn_last_error(ctx));
    if (st == PRN_OK && prn_tensor_numel(y) != 2 * prn_rnn_output_size(r)) fail("prn_rnn_forward: size of y", NULL);
    prn_tensor_free(y);
    prn_tensor_free(x);
    if (!c->bidirectional) {
        prn_rnn_frame *f = NULL;
        double *xin = (double *)calloc(c->input_size + 1, sizeof(double));
        if (!xin) fail("out of memory", NULL);
        if (prn_rnn_frame_create(r, 1, &f) != PRN_OK) fail("prn_rnn_frame_create", prn_last_error(ctx));
        st = prn_rnn_frame_step(f, c->input_size ? xin : NULL, NULL);
        if (st != PRN_OK && st != PRN_ERR_NONFINITE) fail("prn_rnn_frame_step", prn_last_error(ctx));
        prn_rnn_frame_free(f);
        free(xin);
    }
    prn_tape_clear(ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    prn_context *ctx = context();
    prn_rnn *r = (prn_rnn *)&g_in; /* a sentinel: must stay as it is on failure */
    prn_status st;
    unsigned char *buf = (unsigned char *)malloc(size ? size : 1);
    FILE *f;
    if (!buf) fail("out of memory", NULL);
    if (size) memcpy(buf, data, size);
    if (size >= 4) {
        uint32_t crc = crc32_of(buf, size - 4);
        int i;
        for (i = 0; i < 4; ++i) buf[size - 4 + (size_t)i] = (unsigned char)(crc >> (8 * i));
    }
    f = fopen(g_in, "wb");
    if (!f || (size && fwrite(buf, 1, size, f) != size) || fclose(f) != 0) fail("cannot write", g_in);
    free(buf);
    st = prn_rnn_load(ctx, g_in, &r);
    if (st != PRN_OK) {
        const char *msg = prn_last_error(ctx);
        if (st != PRN_ERR_FORMAT && st != PRN_ERR_NONFINITE && st != PRN_ERR_OUT_OF_MEMORY) fail(prn_status_string(st), msg);
        if (r != (prn_rnn *)&g_in) fail("*out written on failure", msg);
        if (!strstr(msg, "prn_rnn_load")) fail("the message does not name prn_rnn_load", msg);
        return 0;
    }
    if (!r || r == (prn_rnn *)&g_in) fail("PRN_OK without a network", NULL);
    check_network(ctx, r);
    prn_rnn_free(r);
    return 0;
}

#ifdef PRN_FUZZ_STANDALONE
#define PRNF_NAME "fuzz_rnn_load"
#include "fuzz_replay.h"
#endif
