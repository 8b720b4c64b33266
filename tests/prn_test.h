/* Minimal test harness shared by the test programs.
 * A test is a void function; PRNT_RUN counts it passed when none of its
 * checks failed. Each program ends with a "summary passed=N failed=N
 * skipped=N" line that tests/run.sh adds up into the suite's result. */
#ifndef PRN_TEST_H
#define PRN_TEST_H
#include <math.h>
#include <stdio.h>
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

#define PRNT_RUN(fn)                                                            \
    do { prnt_cur_failed = 0; prnt_cur_skipped = 0; fn();                       \
         if (prnt_cur_failed) { prnt_failed++; printf("FAIL %s\n", #fn); }      \
         else if (prnt_cur_skipped) { prnt_skipped++; printf("skip %s\n", #fn); } \
         else { prnt_passed++; printf("ok   %s\n", #fn); }                     \
         fflush(stdout); } while (0)

static int prnt_summary(void) {
    printf("summary passed=%d failed=%d skipped=%d\n", prnt_passed, prnt_failed, prnt_skipped);
    return prnt_failed ? 1 : 0;
}

/* max |a-b| / max(1, |b|) over n doubles */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((unused))
#endif
static double prnt_max_rel_err(const double *a, const double *b, size_t n) {
    double m = 0;
    size_t i;
    for (i = 0; i < n; ++i) {
        double d = fabs(a[i] - b[i]) / (fabs(b[i]) > 1 ? fabs(b[i]) : 1);
        if (!(d <= m)) m = d; /* NaN counts as the worst */
    }
    return m;
}
#endif
