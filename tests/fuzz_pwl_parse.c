/* Fuzz target of the model-file parser (prn_pwl_parse).
 *
 * Each input is parsed as a model file. On failure the status must be
 * PRN_ERR_FORMAT (or PRN_ERR_OUT_OF_MEMORY), the output untouched and the
 * message must name prn_pwl_parse. On success the model must pass
 * prn_pwl_check, take one step from the zero vector, and survive a round
 * trip: written back out with %.17g and parsed again, it must give the
 * same kind, sizes and numbers bit for bit. Any violation aborts (a crash
 * for the fuzzer); AddressSanitizer finds reads past the input (the input
 * is not NUL-terminated) and leaks.
 *
 * libFuzzer (clang):
 *   clang -std=c99 -g -O1 -fsanitize=fuzzer,address,undefined -I. \
 *       tests/fuzz_pwl_parse.c -o build/fuzz_pwl_parse -lm
 *   ./build/fuzz_pwl_parse -max_total_time=60 -max_len=4096 build/fuzz_work tests/fuzz_corpus
 * Corpus replay without libFuzzer (any C99 compiler, e.g. gcc + ASan):
 *   gcc -std=c99 -g -O1 -fsanitize=address,undefined -DPRN_FUZZ_STANDALONE -I. \
 *       tests/fuzz_pwl_parse.c -o build/fuzz_pwl_parse_replay -lm
 *   ./build/fuzz_pwl_parse_replay tests/fuzz_corpus        (files or directories)
 */
#ifdef PRN_FUZZ_STANDALONE
#define _POSIX_C_SOURCE 200809L /* opendir, stat */
#endif
#include "parrnn.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static prn_context *g_ctx;

static void fail(const char *what, const char *msg) {
    fprintf(stderr, "fuzz_pwl_parse: %s%s%s\n", what, msg ? ": " : "", msg ? msg : "");
    abort();
}

static prn_context *context(void) {
    if (!g_ctx) {
        prn_config cfg;
        char err[256];
        memset(&cfg, 0, sizeof cfg);
        cfg.backend = "reference";
        cfg.num_threads = 1;
        if (prn_context_create(&cfg, &g_ctx, err, sizeof err) != PRN_OK) fail("prn_context_create", err);
    }
    return g_ctx;
}

static const char *kind_word(prn_pwl_kind k) {
    switch (k) {
    case PRN_PWL_PLRNN: return "plrnn";
    case PRN_PWL_SHPLRNN: return "shplrnn";
    case PRN_PWL_CLIPPED_SHPLRNN: return "clipped_shplrnn";
    case PRN_PWL_ALRNN: return "alrnn";
    }
    return NULL;
}

/* Appends to a growing buffer; aborts when out of memory. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;
static void sb_put(sbuf *b, const char *s) {
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        size_t cap = 2 * (b->len + n + 1) + 256;
        char *q = (char *)realloc(b->p, cap);
        if (!q) fail("out of memory", NULL);
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}
static void sb_field(sbuf *b, const char *name, const double *v, size_t n) {
    char num[40];
    size_t i;
    sb_put(b, name);
    for (i = 0; i < n; ++i) {
        snprintf(num, sizeof num, "%s%.17g", i % 8 == 7 ? "\n  " : " ", v[i]); /* continuation lines too */
        sb_put(b, num);
    }
    sb_put(b, "\n");
}

static int same_array(const double *a, const double *b, size_t n) {
    if (!a || !b) return a == b;
    return memcmp(a, b, n * sizeof(double)) == 0;
}

/* The model written back as a file, parsed again: the same model. */
static void round_trip(const prn_pwl_model *m) {
    prn_context *ctx = context();
    size_t M = m->M, H = m->H, nA = m->full_A ? M * M : M;
    int shallow = m->kind == PRN_PWL_SHPLRNN || m->kind == PRN_PWL_CLIPPED_SHPLRNN;
    sbuf b = {NULL, 0, 0};
    char line[64];
    prn_pwl_model *r = NULL;
    const char *kw = kind_word(m->kind);
    if (!kw) fail("parsed model has an unknown kind", NULL);
    sb_put(&b, "# round trip\nkind ");
    sb_put(&b, kw);
    snprintf(line, sizeof line, "\nM %lu\n", (unsigned long)m->M);
    sb_put(&b, line);
    if (shallow) {
        snprintf(line, sizeof line, "H %lu\n", (unsigned long)m->H);
        sb_put(&b, line);
    }
    if (m->kind == PRN_PWL_ALRNN) {
        snprintf(line, sizeof line, "P %lu\n", (unsigned long)m->P);
        sb_put(&b, line);
    }
    sb_field(&b, "A", m->A, nA);
    if (shallow) {
        sb_field(&b, "W1", m->W1, M * H);
        sb_field(&b, "W2", m->W2, H * M);
        sb_field(&b, "h1", m->h1, M);
        sb_field(&b, "h2", m->h2, H);
    } else {
        sb_field(&b, "W", m->W, M * M);
        sb_field(&b, "h", m->h, M);
    }
    if (prn_pwl_parse(ctx, b.p, b.len, &r) != PRN_OK) {
        fprintf(stderr, "%s", b.p);
        fail("the model written back does not parse", prn_last_error(ctx));
    }
    if (r->kind != m->kind || r->M != m->M || r->full_A != m->full_A || (shallow && r->H != m->H) ||
        (m->kind == PRN_PWL_ALRNN && r->P != m->P) || !same_array(r->A, m->A, nA) ||
        (shallow ? !same_array(r->W1, m->W1, M * H) || !same_array(r->W2, m->W2, H * M) ||
                       !same_array(r->h1, m->h1, M) || !same_array(r->h2, m->h2, H)
                 : !same_array(r->W, m->W, M * M) || !same_array(r->h, m->h, M)))
        fail("the model written back parses to another model", NULL);
    prn_pwl_free(ctx, r);
    free(b.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static prn_pwl_model sentinel;
    prn_context *ctx = context();
    prn_pwl_model *m = &sentinel;
    prn_status st;
    /* libFuzzer's buffer is exactly size bytes: ASan sees reads past it */
    st = prn_pwl_parse(ctx, (const char *)data, size, &m);
    if (st != PRN_OK) {
        const char *msg = prn_last_error(ctx);
        if (st != PRN_ERR_FORMAT && st != PRN_ERR_OUT_OF_MEMORY) fail(prn_status_string(st), msg);
        if (m != &sentinel) fail("*out written on failure", msg);
        if (!strstr(msg, "prn_pwl_parse")) fail("the message does not name prn_pwl_parse", msg);
        if (st == PRN_ERR_FORMAT && !strstr(msg, "line ")) fail("the message does not name a line", msg);
        return 0;
    }
    if (!m || m == &sentinel) fail("PRN_OK without a model", NULL);
    if (prn_pwl_check(ctx, m) != PRN_OK) fail("a parsed model fails prn_pwl_check", prn_last_error(ctx));
    {
        double *z = (double *)calloc((size_t)m->M, sizeof(double));
        double *out = (double *)calloc((size_t)m->M, sizeof(double));
        if (!z || !out) fail("out of memory", NULL);
        if (prn_pwl_step(ctx, m, z, out) != PRN_OK) fail("prn_pwl_step", prn_last_error(ctx));
        free(z);
        free(out);
    }
    round_trip(m);
    prn_pwl_free(ctx, m);
    return 0;
}

#ifdef PRN_FUZZ_STANDALONE
#define PRNF_NAME "fuzz_pwl_parse"
#include "fuzz_replay.h"
#endif
