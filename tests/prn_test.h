/* Minimal test harness shared by the test programs.
 * A test is a void function; PRNT_RUN counts it passed when none of its
 * checks failed. Each program ends with a "summary passed=N failed=N
 * skipped=N" line that tests/run.sh adds up into the suite's result. */
#ifndef PRN_TEST_H
#define PRN_TEST_H
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

static int prnt_passed, prnt_failed, prnt_skipped;
static int prnt_cur_failed, prnt_cur_skipped;

#define PRNT_CHECK(cond, ...)                                                   \
    do { if (!(cond)) {                                                         \
        prnt_cur_failed++;                                                      \
        printf("    check failed %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
        printf(__VA_ARGS__); printf("\n"); } } while (0)
/* status must equal expected; prints the context message otherwise */
#define PRNT_STATUS(ctx, call, expected)                                        \
    do { prn_status prnt_s_ = (call);                                           \
         PRNT_CHECK(prnt_s_ == (expected), "got %s (%s), want %s",             \
                    prn_status_string(prnt_s_), prn_last_error(ctx),             \
                    prn_status_string(expected)); } while (0)
#define PRNT_OK(ctx, call) PRNT_STATUS(ctx, call, PRN_OK)
#define PRNT_SKIP(...)                                                          \
    do { prnt_cur_skipped = 1; printf("    skipped: "); printf(__VA_ARGS__);     \
         printf("\n"); } while (0)

/* A test that took half a second of CPU or more says so (the suite's time
 * budget: make test within 10 minutes on 2 cores). */
#define PRNT_RUN(fn)                                                            \
    do { clock_t prnt_t0_ = clock(); double prnt_cpu_;                          \
         prnt_cur_failed = 0; prnt_cur_skipped = 0; fn();                       \
         prnt_cpu_ = (double)(clock() - prnt_t0_) / CLOCKS_PER_SEC;             \
         if (prnt_cur_failed) { prnt_failed++; printf("FAIL %s", #fn); }        \
         else if (prnt_cur_skipped) { prnt_skipped++; printf("skip %s", #fn); } \
         else { prnt_passed++; printf("ok   %s", #fn); }                       \
         if (prnt_cpu_ >= 0.5) printf("  [%.1f s CPU]", prnt_cpu_);             \
         printf("\n"); fflush(stdout); } while (0)

static int prnt_summary(void) {
    printf("summary passed=%d failed=%d skipped=%d\n", prnt_passed, prnt_failed, prnt_skipped);
    return prnt_failed ? 1 : 0;
}

#if defined(__GNUC__) || defined(__clang__)
#define PRNT_UNUSED __attribute__((unused))
#else
#define PRNT_UNUSED
#endif

/* max |a-b| / max(1, |b|) over n doubles */
PRNT_UNUSED static double prnt_max_rel_err(const double *a, const double *b, size_t n) {
    double m = 0;
    size_t i;
    for (i = 0; i < n; ++i) {
        double d = fabs(a[i] - b[i]) / (fabs(b[i]) > 1 ? fabs(b[i]) : 1);
        if (!(d <= m)) m = d; /* NaN counts as the worst */
    }
    return m;
}

/* An allocator (prn_config.allocator, user = a prnt_fa) that refuses its
 * fail_at-th allocation (0: none) and counts the blocks alive. */
typedef struct prnt_fa { long count, fail_at, refused, live; } prnt_fa;
PRNT_UNUSED static void *prnt_fa_alloc(void *user, size_t size) {
    prnt_fa *f = (prnt_fa *)user;
    if (++f->count == f->fail_at) { f->refused++; return NULL; }
    f->live++;
    return malloc(size);
}
PRNT_UNUSED static void prnt_fa_free(void *user, void *p) {
    if (p) ((prnt_fa *)user)->live--;
    free(p);
}

/* Shared by the tests that include parrnn.h first. */
#ifdef PARRNN_H
/* The program's context: the backend PARRNN_BACKEND names (else the
 * default), the seed given. On failure prints the reason and a failing
 * summary line, and returns NULL (main then returns 1). */
PRNT_UNUSED static prn_context *prnt_context(uint64_t seed) {
    prn_config cfg;
    prn_context *c = NULL;
    char err[256];
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = seed;
    if (prn_context_create(&cfg, &c, err, sizeof err) != PRN_OK) {
        printf("context: %s\nsummary passed=0 failed=1 skipped=0\n", err);
        return NULL;
    }
    printf("backend: %s\n", prn_context_backend_name(c));
    return c;
}

/* The recurrence on the host: h and the bound s. k = 0: diagonal (a is
 * [batch, T, C]); else a is [batch, T, C, k], used transposed when tr. */
PRNT_UNUSED static void prnt_scan_host(int rev, int tr, size_t B, size_t T, size_t C, size_t k, const double *a, const double *b,
                           const double *h0, double *h, double *s) {
    size_t n, t, c, m;
    for (n = 0; n < B; ++n)
        for (t = 0; t < T; ++t) {
            size_t r = rev ? T - 1 - t : t, pr = rev ? r + 1 : r - 1;
            for (c = 0; c < C; ++c) {
                double acc = b[(n * T + r) * C + c], sacc = fabs(acc);
                if (k == 0) {
                    double p = t ? h[(n * T + pr) * C + c] : h0 ? h0[n * C + c] : 0.0;
                    double ps = t ? s[(n * T + pr) * C + c] : h0 ? fabs(h0[n * C + c]) : 0.0;
                    double av = a[(n * T + r) * C + c];
                    acc += av * p;
                    sacc += fabs(av) * ps;
                } else {
                    size_t j0 = c / k * k, i = c - j0;
                    for (m = 0; m < k; ++m) {
                        double am = tr ? a[((n * T + r) * C + j0 + m) * k + i] : a[((n * T + r) * C + c) * k + m];
                        double p = t ? h[(n * T + pr) * C + j0 + m] : h0 ? h0[n * C + j0 + m] : 0.0;
                        double ps = t ? s[(n * T + pr) * C + j0 + m] : h0 ? fabs(h0[n * C + j0 + m]) : 0.0;
                        acc += am * p;
                        sacc += fabs(am) * ps;
                    }
                }
                h[(n * T + r) * C + c] = acc;
                s[(n * T + r) * C + c] = sacc;
            }
        }
}

/* A tensor's values as doubles (f32 or f64). */
PRNT_UNUSED static prn_status prnt_download_f64(const prn_tensor *t, double *v) {
    size_t n = prn_tensor_numel(t), i;
    prn_status st;
    float *f;
    if (prn_tensor_dtype(t) != PRN_F32) return prn_tensor_download(t, v, n);
    f = (float *)malloc(n * sizeof(float) + 1);
    if (!f) return PRN_ERR_OUT_OF_MEMORY;
    st = prn_tensor_download(t, f, n);
    for (i = 0; st == PRN_OK && i < n; ++i) v[i] = f[i];
    free(f);
    return st;
}
/* The reverse: numel(t) doubles into t (rounded to float for f32). */
PRNT_UNUSED static prn_status prnt_upload_f64(prn_tensor *t, const double *v) {
    size_t n = prn_tensor_numel(t), i;
    prn_status st;
    float *f;
    if (prn_tensor_dtype(t) != PRN_F32) return prn_tensor_upload(t, v, n);
    f = (float *)malloc(n * sizeof(float) + 1);
    if (!f) return PRN_ERR_OUT_OF_MEMORY;
    for (i = 0; i < n; ++i) f[i] = (float)v[i];
    st = prn_tensor_upload(t, f, n);
    free(f);
    return st;
}
#endif
#endif
