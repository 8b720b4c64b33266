/* Model files of the piecewise-linear RNNs (prn_pwl_parse, prn_pwl_load),
 * prn_pwl_check on hand-built models and prn_pwl_step against a step
 * computed here.
 *
 * Valid files of every kind (A diagonal and full, numbers continuing over
 * lines, comments, blank lines, CRLF, tabs, scientific notation) must give
 * exactly the numbers written. Malformed ones must fail with
 * PRN_ERR_FORMAT, leave the output untouched and set a message that names
 * the function, "line N" and the field ('W', ...); the checks of the
 * message are loose on purpose (no wording beyond that). Every prefix of a
 * valid file is parsed from a buffer of exactly that size (ASan and
 * valgrind see any read past len). A counting allocator checks that a
 * parsed model is one allocation, that failures free everything, and
 * that a failing allocation gives PRN_ERR_OUT_OF_MEMORY and no leak. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "parrnn.h"
#include "prn_test.h"

#include <stdint.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * A counting allocator that can fail the n-th allocation
 * ---------------------------------------------------------------------- */
typedef struct counter {
    long allocs, frees; /* outstanding = allocs - frees                      */
    long fail_at;       /* 0: never; else the allocation number that fails   */
    long seen;          /* allocations asked for since fail_at was set       */
} counter;

static void *ca_alloc(void *user, size_t size) {
    counter *c = (counter *)user;
    void *p;
    if (c->fail_at && ++c->seen == c->fail_at) return NULL;
    p = malloc(size ? size : 1);
    if (p) c->allocs++;
    return p;
}
static void ca_free(void *user, void *ptr) {
    counter *c = (counter *)user;
    if (!ptr) return;
    c->frees++;
    free(ptr);
}

static counter g_count;
static prn_context *g_ctx;
static long outstanding(void) { return g_count.allocs - g_count.frees; }

/* A sentinel for *out: failures must not write it. */
static prn_pwl_model sentinel_model;
#define SENT (&sentinel_model)

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */
/* Parses len bytes from a buffer of exactly len bytes (no terminator). */
static prn_status parse_n(const char *text, size_t len, prn_pwl_model **m) {
    char *buf = (char *)malloc(len ? len : 1);
    prn_status st;
    if (!buf) return PRN_ERR_OUT_OF_MEMORY;
    if (len) memcpy(buf, text, len);
    st = prn_pwl_parse(g_ctx, buf, len, m);
    memset(buf, 'x', len); /* the model must not point into the text */
    free(buf);
    return st;
}
static prn_status parse_s(const char *text, prn_pwl_model **m) { return parse_n(text, strlen(text), m); }

/* msg contains "line N" with no digit after N. */
static int has_line(const char *msg, int n) {
    char pat[32];
    const char *p = msg;
    size_t len;
    snprintf(pat, sizeof pat, "line %d", n);
    len = strlen(pat);
    while ((p = strstr(p, pat)) != NULL) {
        if (p[len] < '0' || p[len] > '9') return 1;
        p += len;
    }
    return 0;
}
/* msg contains 'field' (quoted). */
static int has_field(const char *msg, const char *field) {
    char pat[64];
    snprintf(pat, sizeof pat, "'%s'", field);
    return strstr(msg, pat) != NULL;
}

/* text must fail with PRN_ERR_FORMAT; the message names line (line2, when
 * not 0, is accepted too), field (field2 too, when not NULL; field NULL: no
 * field is checked); out untouched; nothing leaks. */
static void expect_format2(const char *label, const char *text, size_t len, int line, int line2, const char *field,
                           const char *field2) {
    prn_pwl_model *m = SENT;
    long before = outstanding();
    prn_status st = parse_n(text, len, &m);
    const char *msg = prn_last_error(g_ctx);
    PRNT_CHECK(st == PRN_ERR_FORMAT, "%s: got %s (%s), want PRN_ERR_FORMAT", label, prn_status_string(st), msg);
    if (st == PRN_OK && m != SENT) {
        prn_pwl_free(g_ctx, m);
        return;
    }
    PRNT_CHECK(m == SENT, "%s: *out written on failure", label);
    PRNT_CHECK(prn_last_status(g_ctx) == st, "%s: prn_last_status %s", label, prn_status_string(prn_last_status(g_ctx)));
    PRNT_CHECK(strstr(msg, "prn_pwl_parse") != NULL, "%s: message does not name prn_pwl_parse: \"%s\"", label, msg);
    PRNT_CHECK(has_line(msg, line) || (line2 && has_line(msg, line2)), "%s: message does not say \"line %d\"%s: \"%s\"",
               label, line, line2 ? " (or the other line allowed)" : "", msg);
    if (field)
        PRNT_CHECK(has_field(msg, field) || (field2 && has_field(msg, field2)),
                   "%s: message does not name field '%s'%s%s%s: \"%s\"", label, field, field2 ? " (or '" : "",
                   field2 ? field2 : "", field2 ? "')" : "", msg);
    PRNT_CHECK(outstanding() == before, "%s: %ld allocations leaked", label, outstanding() - before);
}
static void expect_format(const char *label, const char *text, int line, const char *field) {
    expect_format2(label, text, strlen(text), line, 0, field, NULL);
}

/* Parses text, which must succeed as one allocation. */
static prn_pwl_model *parse_ok(const char *label, const char *text) {
    prn_pwl_model *m = NULL;
    long before = outstanding();
    prn_status st = parse_s(text, &m);
    PRNT_CHECK(st == PRN_OK, "%s: got %s: %s", label, prn_status_string(st), prn_last_error(g_ctx));
    if (st != PRN_OK) return NULL;
    PRNT_CHECK(m != NULL, "%s: no model", label);
    PRNT_CHECK(outstanding() == before + 1, "%s: the model is %ld allocations, want one", label, outstanding() - before);
    return m;
}

static int same(const double *got, const double *want, int n) {
    int i;
    if (!got) return 0;
    for (i = 0; i < n; ++i)
        if (got[i] != want[i]) return 0;
    return 1;
}
#define CHECK_ARRAY(label, m, field, want, n)                                                            \
    do {                                                                                                  \
        PRNT_CHECK(same((m)->field, want, n), "%s: %s is not the numbers written%s", label, #field,       \
                   (m)->field ? "" : " (NULL)");                                                          \
        if ((m)->field && !same((m)->field, want, n)) {                                                   \
            int i_;                                                                                       \
            for (i_ = 0; i_ < (n); ++i_)                                                                  \
                printf("      %s[%d] = %.17g, want %.17g\n", #field, i_, (m)->field[i_], (want)[i_]);     \
        }                                                                                                 \
    } while (0)

/* Replaces every "\n" by "\r\n" (the caller frees). */
static char *crlf(const char *s) {
    size_t n = strlen(s), i, j = 0;
    char *o = (char *)malloc(2 * n + 1);
    if (!o) return NULL;
    for (i = 0; i < n; ++i) {
        if (s[i] == '\n') o[j++] = '\r';
        o[j++] = s[i];
    }
    o[j] = 0;
    return o;
}

/* ------------------------------------------------------------------------
 * Valid files
 * ---------------------------------------------------------------------- */
static const char *k_plrnn_diag =
    "# a PLRNN with a diagonal A\n"
    "kind plrnn   # the kind\n"
    "M 2\n"
    "\n"
    "A 0.5 -0.25\n"
    "# between fields\n"
    "W 0.1 0.2\n"
    "  0.3 0.4\n"
    "h 1e-3 -2.5E+2\n";
static const double k_pd_A[] = {0.5, -0.25}, k_pd_W[] = {0.1, 0.2, 0.3, 0.4}, k_pd_h[] = {1e-3, -2.5e2};

static void check_plrnn_diag(const char *label, const prn_pwl_model *m) {
    if (!m) return;
    PRNT_CHECK(m->kind == PRN_PWL_PLRNN, "%s: kind %d", label, (int)m->kind);
    PRNT_CHECK(m->M == 2, "%s: M %d", label, (int)m->M);
    PRNT_CHECK(m->full_A == 0, "%s: full_A %d", label, m->full_A);
    CHECK_ARRAY(label, m, A, k_pd_A, 2);
    CHECK_ARRAY(label, m, W, k_pd_W, 4);
    CHECK_ARRAY(label, m, h, k_pd_h, 2);
    PRNT_CHECK(!m->W1 && !m->W2 && !m->h1 && !m->h2, "%s: arrays of the shallow kinds set", label);
}

static void test_plrnn_diagonal(void) {
    prn_pwl_model *m = parse_ok("plrnn diag", k_plrnn_diag);
    check_plrnn_diag("plrnn diag", m);
    if (m) PRNT_OK(g_ctx, prn_pwl_check(g_ctx, m));
    prn_pwl_free(g_ctx, m);
}

static void test_plrnn_full(void) {
    static const double A[] = {0.9, -0.1, 0.05, 0.8}, W[] = {0, -0.6437499999999996, 0.52505307999999995, 0},
                        h[] = {0.37298253000000087, -0.97931491000000004};
    prn_pwl_model *m = parse_ok("plrnn full",
                                "kind plrnn\n"
                                "M 2\n"
                                "A 0.9 -0.1\n"
                                "  0.05 0.8\n"
                                "W 0 -0.6437499999999996 0.52505307999999995 0\n"
                                "h 0.37298253000000087 -0.97931491000000004"); /* no final newline */
    if (!m) return;
    PRNT_CHECK(m->kind == PRN_PWL_PLRNN && m->M == 2, "kind %d M %d", (int)m->kind, (int)m->M);
    PRNT_CHECK(m->full_A == 1, "full_A %d", m->full_A);
    CHECK_ARRAY("plrnn full", m, A, A, 4);
    CHECK_ARRAY("plrnn full", m, W, W, 4);
    CHECK_ARRAY("plrnn full", m, h, h, 2);
    PRNT_OK(g_ctx, prn_pwl_check(g_ctx, m));
    prn_pwl_free(g_ctx, m);
}

static void test_alrnn(void) {
    static const double A[] = {0.5, 0.6, 0.7}, W[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, h[] = {-1, 0, 1};
    static const double Af[] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    int P;
    for (P = 0; P <= 3; ++P) {
        char text[512], label[64];
        prn_pwl_model *m;
        snprintf(text, sizeof text,
                 "kind alrnn\nM 3\nP %d\nA 0.5 0.6 0.7\nW 1 2 3\n 4 5 6\n 7 8 9\nh -1 0 1\n", P);
        snprintf(label, sizeof label, "alrnn P=%d", P);
        m = parse_ok(label, text);
        if (!m) continue;
        PRNT_CHECK(m->kind == PRN_PWL_ALRNN && m->M == 3 && m->P == (size_t)P && !m->full_A, "%s: kind %d M %d P %d full_A %d",
                   label, (int)m->kind, (int)m->M, (int)m->P, m->full_A);
        CHECK_ARRAY(label, m, A, A, 3);
        CHECK_ARRAY(label, m, W, W, 9);
        CHECK_ARRAY(label, m, h, h, 3);
        PRNT_OK(g_ctx, prn_pwl_check(g_ctx, m));
        prn_pwl_free(g_ctx, m);
    }
    {
        prn_pwl_model *m = parse_ok("alrnn full A", "kind alrnn\nM 3\nP 1\nA 1 0 0 0 1 0 0 0 1\n"
                                                    "W 1 2 3 4 5 6 7 8 9\nh -1 0 1\n");
        if (m) {
            PRNT_CHECK(m->full_A == 1 && m->P == 1, "full_A %d P %d", m->full_A, (int)m->P);
            CHECK_ARRAY("alrnn full A", m, A, Af, 9);
            prn_pwl_free(g_ctx, m);
        }
    }
}

static void check_shallow(const char *label, const prn_pwl_model *m, prn_pwl_kind kind, int fullA) {
    static const double Ad[] = {0.25, -0.75}, Af[] = {0.25, 0.125, -0.5, -0.75};
    static const double W1[] = {1, 2, 3, 4, 5, 6}, W2[] = {-1, -2, -3, -4, -5, -6};
    static const double h1[] = {1.5e-1, -2e1}, h2[] = {0.001, -0.002, 3e-10};
    if (!m) return;
    PRNT_CHECK(m->kind == kind && m->M == 2 && m->H == 3, "%s: kind %d M %d H %d", label, (int)m->kind, (int)m->M, (int)m->H);
    PRNT_CHECK(m->full_A == fullA, "%s: full_A %d", label, m->full_A);
    if (fullA) CHECK_ARRAY(label, m, A, Af, 4);
    else CHECK_ARRAY(label, m, A, Ad, 2);
    CHECK_ARRAY(label, m, W1, W1, 6);
    CHECK_ARRAY(label, m, W2, W2, 6);
    CHECK_ARRAY(label, m, h1, h1, 2);
    CHECK_ARRAY(label, m, h2, h2, 3);
    PRNT_CHECK(!m->W && !m->h, "%s: W or h set for a shallow kind", label);
}

static void test_shallow_kinds(void) {
    prn_pwl_model *m;
    m = parse_ok("shplrnn", "kind shplrnn\nM 2\nH 3\nA 0.25 -0.75\n"
                            "W1 1 2 3\n   4 5 6\n"
                            "W2 -1 -2\n -3 -4\n -5 -6\n"
                            "h1 1.5e-1 -2E+1\n"
                            "h2 1e-3 -2.0e-3 3e-10\n");
    check_shallow("shplrnn", m, PRN_PWL_SHPLRNN, 0);
    if (m) PRNT_OK(g_ctx, prn_pwl_check(g_ctx, m));
    prn_pwl_free(g_ctx, m);

    m = parse_ok("clipped_shplrnn", "# clipped, full A, numbers spread over lines with comments\n"
                                    "kind clipped_shplrnn\n"
                                    "M 2 # state\n"
                                    "H 3 # hidden\n"
                                    "A 0.25 0.125   # row 1\n"
                                    "  -0.5 -0.75   # row 2\n"
                                    "W1\n1\n2\n3\n4\n5\n6\n"
                                    "W2 -1 -2 -3 -4 -5 -6\n"
                                    "h1 0.15 -20\n"
                                    "h2 0.001 -0.002 0.0000000003\n");
    check_shallow("clipped_shplrnn", m, PRN_PWL_CLIPPED_SHPLRNN, 1);
    if (m) PRNT_OK(g_ctx, prn_pwl_check(g_ctx, m));
    prn_pwl_free(g_ctx, m);
}

/* Line endings and white space: CRLF, tabs, no final newline, fields in
 * another order (after kind and M). */
static void test_whitespace_and_order(void) {
    char *t = crlf(k_plrnn_diag);
    prn_pwl_model *m;
    if (!t) return;
    m = parse_ok("CRLF", t);
    check_plrnn_diag("CRLF", m);
    prn_pwl_free(g_ctx, m);
    free(t);

    m = parse_ok("tabs", "kind\tplrnn\nM\t2\nA\t0.5\t-0.25\nW 0.1\t0.2 0.3 0.4\t\nh\t1e-3 -2.5E+2");
    check_plrnn_diag("tabs", m);
    prn_pwl_free(g_ctx, m);

    m = parse_ok("order", "kind plrnn\nM 2\nh 1e-3 -2.5E+2\nW 0.1 0.2 0.3 0.4\nA 0.5 -0.25\n");
    check_plrnn_diag("order", m);
    prn_pwl_free(g_ctx, m);

    t = crlf("kind plrnn\r\nM 2\nA 0.5 -0.25\nW 0.1 0.2\n0.3 0.4\nh 1e-3 -2.5E+2\n"); /* \r\r\n: stray CR */
    if (t) {
        prn_pwl_model *m2 = SENT;
        prn_status st = parse_s(t, &m2);
        /* a stray '\r' is white space or an error: either way no crash */
        PRNT_CHECK(st == PRN_OK || st == PRN_ERR_FORMAT, "stray CR: %s", prn_status_string(st));
        if (st == PRN_OK) prn_pwl_free(g_ctx, m2);
        free(t);
    }
}

/* '#' starts a comment also right after a word or a number. */
static void test_comment_without_space(void) {
    prn_pwl_model *m = parse_ok("comment after a number, no space",
                                "kind plrnn#c\nM 2#c\nA 0.5 -0.25#c\nW 0.1 0.2 0.3 0.4\nh 1e-3 -2.5E+2#end");
    check_plrnn_diag("comment after a number, no space", m);
    prn_pwl_free(g_ctx, m);
}

/* Numbers as strtod reads them. */
static void test_number_forms(void) {
    static const double h[] = {0.5, 3}, W[] = {5, 1000, -0.125, 1e-300};
    prn_pwl_model *m =
        parse_ok("number forms", "kind plrnn\nM 2\nA 1 1\nW 5. 1E3 -.125 1e-300\nh .5 +3\n");
    if (!m) return;
    CHECK_ARRAY("number forms", m, W, W, 4);
    CHECK_ARRAY("number forms", m, h, h, 2);
    prn_pwl_free(g_ctx, m);
}

/* ------------------------------------------------------------------------
 * Malformed files
 * ---------------------------------------------------------------------- */
/* lines:  1 kind plrnn / 2 M 2 / 3 A .. / 4 W .. / 5 h .. */
#define L1 "kind plrnn\n"
#define L2 "M 2\n"
#define L3 "A 0.5 0.5\n"
#define L4 "W 0.1 0.2 0.3 0.4\n"
#define L5 "h 1 2\n"
/* shallow: 1 kind / 2 M 2 / 3 H 3 / 4 A / 5 W1 / 6 W2 / 7 h1 / 8 h2 */
#define S1 "kind shplrnn\n"
#define S2 "M 2\n"
#define S3 "H 3\n"
#define S4 "A 0.5 0.5\n"
#define S5 "W1 1 2 3 4 5 6\n"
#define S6 "W2 1 2 3 4 5 6\n"
#define S7 "h1 1 2\n"
#define S8 "h2 1 2 3\n"

static void test_missing_fields(void) {
    /* the end of the text is on line 5 (after the last newline); the last
     * line (4) is accepted too */
    expect_format2("missing h", L1 L2 L3 L4, strlen(L1 L2 L3 L4), 5, 4, "h", NULL);
    expect_format2("missing W", L1 L2 L3 L5, strlen(L1 L2 L3 L5), 5, 4, "W", NULL);
    expect_format2("missing A", L1 L2 L4 L5, strlen(L1 L2 L4 L5), 5, 4, "A", NULL);
    expect_format2("missing M", L1 L3 L4 L5, strlen(L1 L3 L4 L5), 5, 4, "M", NULL);
    expect_format2("missing kind", L2 L3 L4 L5, strlen(L2 L3 L4 L5), 5, 4, "kind", NULL);
    expect_format2("missing h, no final newline", L1 L2 L3 "W 0.1 0.2 0.3 0.4", strlen(L1 L2 L3 L4) - 1, 4, 0, "h",
                   NULL);
    expect_format2("missing H", S1 S2 S4 S5 S6 S7 S8, strlen(S1 S2 S4 S5 S6 S7 S8), 8, 7, "H", NULL);
    expect_format2("missing W2", S1 S2 S3 S4 S5 S7 S8, strlen(S1 S2 S3 S4 S5 S7 S8), 8, 7, "W2", NULL);
    expect_format2("missing h2", S1 S2 S3 S4 S5 S6 S7, strlen(S1 S2 S3 S4 S5 S6 S7), 8, 7, "h2", NULL);
    expect_format2("missing P", "kind alrnn\nM 2\nA 1 1\nW 1 2 3 4\nh 1 2\n",
                   strlen("kind alrnn\nM 2\nA 1 1\nW 1 2 3 4\nh 1 2\n"), 6, 5, "P", NULL);
}

static void test_repeated_fields(void) {
    expect_format("repeated h", L1 L2 L3 L4 L5 "h 3 4\n", 6, "h");
    expect_format("repeated M", L1 L2 "M 2\n" L3 L4 L5, 3, "M");
    expect_format("repeated kind", L1 "kind plrnn\n" L2 L3 L4 L5, 2, "kind");
    expect_format("repeated A", L1 L2 L3 L4 "A 0.5 0.5\n" L5, 5, "A");
    expect_format("repeated W1", S1 S2 S3 S4 S5 S6 S7 S8 "\n# again\nW1 1 2 3 4 5 6\n", 11, "W1");
}

static void test_unknown_keyword(void) {
    expect_format("unknown keyword", L1 L2 "foo 1 2\n" L3 L4 L5, 3, "foo");
    expect_format("unknown keyword at the end", L1 L2 L3 L4 L5 "bias 1 2\n", 6, "bias");
    expect_format("keyword of the wrong case", L1 L2 L3 "w 0.1 0.2 0.3 0.4\n" L5, 4, "w");
}

static void test_wrong_counts(void) {
    expect_format("A: 3 numbers", L1 L2 "A 1 2 3\n" L4 L5, 3, "A");
    expect_format("A: 1 number", L1 L2 "A 1\n" L4 L5, 3, "A");
    expect_format("A: 5 numbers", L1 L2 "A 1 2 3 4 5\n" L4 L5, 3, "A");
    expect_format("A: none", L1 L2 "A\n" L4 L5, 3, "A");
    expect_format("W: 3 numbers", L1 L2 L3 "W 0.1 0.2 0.3\n" L5, 4, "W");
    expect_format("W: 5 numbers", L1 L2 L3 "W 0.1 0.2 0.3 0.4 0.5\n" L5, 4, "W");
    expect_format("W: 3 numbers over two lines", L1 L2 L3 "W 0.1 0.2\n 0.3\n" "h 1 2\n", 4, "W");
    expect_format("h: 1 number", L1 L2 L3 L4 "h 1\n", 5, "h");
    expect_format("h: 3 numbers", L1 L2 L3 L4 "h 1 2 3\n", 5, "h");
    expect_format("h: 3 numbers, the last on the next line", L1 L2 L3 L4 "h 1 2\n3\n", 5, "h");
    expect_format("M: two numbers", L1 "M 2 2\n" L3 L4 L5, 2, "M");
    expect_format("M: no number", L1 "M\n" L3 L4 L5, 2, "M");
    expect_format("W1: 5", S1 S2 S3 S4 "W1 1 2 3 4 5\n" S6 S7 S8, 5, "W1");
    expect_format("W1: 7", S1 S2 S3 S4 "W1 1 2 3 4 5 6 7\n" S6 S7 S8, 5, "W1");
    expect_format("W2: 5", S1 S2 S3 S4 S5 "W2 1 2 3 4 5\n" S7 S8, 6, "W2");
    expect_format("W2: 7", S1 S2 S3 S4 S5 "W2 1 2 3 4 5 6 7\n" S7 S8, 6, "W2");
    expect_format("h1: 1", S1 S2 S3 S4 S5 S6 "h1 1\n" S8, 7, "h1");
    expect_format("h1: 3", S1 S2 S3 S4 S5 S6 "h1 1 2 3\n" S8, 7, "h1");
    expect_format("h2: 2", S1 S2 S3 S4 S5 S6 S7 "h2 1 2\n", 8, "h2");
    expect_format("h2: 4", S1 S2 S3 S4 S5 S6 S7 "h2 1 2 3 4\n", 8, "h2");
}

static void test_not_numbers(void) {
    static const char *bad[] = {"0.1.2", "1x", "--3", "1e", "0x", ".", "-", "1,5", "2e+", "0.3)"};
    /* words: an unknown keyword inside W's numbers may be reported as
     * either (the word or 'W') */
    static const char *words[] = {"abc", "one"};
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        char text[256], label[64];
        snprintf(text, sizeof text, L1 L2 L3 "W 0.1 0.2 %s 0.4\n" L5, bad[i]);
        snprintf(label, sizeof label, "W with '%s'", bad[i]);
        expect_format(label, text, 4, "W");
    }
    for (i = 0; i < sizeof words / sizeof words[0]; ++i) {
        char text[256], label[64];
        snprintf(text, sizeof text, L1 L2 L3 "W 0.1 0.2 %s 0.4\n" L5, words[i]);
        snprintf(label, sizeof label, "W with '%s'", words[i]);
        expect_format2(label, text, strlen(text), 4, 0, "W", words[i]);
    }
    expect_format2("h with a non-number on its next line", L1 L2 L3 L4 "h 1\n2q\n", strlen(L1 L2 L3 L4 "h 1\n2q\n"), 6,
                   5, "h", NULL);
    expect_format2("A with a word", L1 L2 "A 0.5 x5\n" L4 L5, strlen(L1 L2 "A 0.5 x5\n" L4 L5), 3, 0, "A", "x5");
}

static void test_not_finite(void) {
    static const char *bad[] = {"nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e999", "-1e400", "NAN(123)"};
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        char text[256], label[64];
        snprintf(text, sizeof text, L1 L2 L3 "W 0.1 0.2\n %s 0.4\n" L5, bad[i]);
        snprintf(label, sizeof label, "W with %s", bad[i]);
        /* the value is on line 5, W on line 4: either is fine */
        expect_format2(label, text, strlen(text), 5, 4, "W", NULL);
    }
    expect_format("A with inf", L1 L2 "A inf 0.5\n" L4 L5, 3, "A");
    expect_format("h2 with nan", S1 S2 S3 S4 S5 S6 S7 "h2 1 nan 3\n", 8, "h2");
}

static void test_bad_sizes(void) {
    static const char *badM[] = {"0", "-3", "2.5", "99999999999999999999", "4294967298", "2147483648", "x", "1e999",
                                 "nan"};
    /* sizes that fit in an int but whose products M*M or M*H do not, or
     * that are far too large for the numbers given */
    static const char *bigM[] = {"46341", "65536", "2147483647", "1000000"};
    size_t i;
    for (i = 0; i < sizeof badM / sizeof badM[0]; ++i) {
        char text[256], label[64];
        snprintf(text, sizeof text, L1 "M %s\n" L3 L4 L5, badM[i]);
        snprintf(label, sizeof label, "M %s", badM[i]);
        expect_format2(label, text, strlen(text), 2, 0, "M", badM[i]); /* a word may be named as a keyword */
        snprintf(text, sizeof text, S1 S2 "H %s\n" S4 S5 S6 S7 S8, badM[i]);
        snprintf(label, sizeof label, "H %s", badM[i]);
        expect_format2(label, text, strlen(text), 3, 0, "H", badM[i]);
    }
    for (i = 0; i < sizeof bigM / sizeof bigM[0]; ++i) {
        char text[256], label[64];
        snprintf(text, sizeof text, L1 "M %s\n" L3 L4 L5, bigM[i]);
        snprintf(label, sizeof label, "M %s (too large for the numbers)", bigM[i]);
        expect_format2(label, text, strlen(text), 2, 3, NULL, NULL); /* M's line or A's */
        snprintf(text, sizeof text, S1 S2 "H %s\n" S4 S5 S6 S7 S8, bigM[i]);
        snprintf(label, sizeof label, "H %s (too large for the numbers)", bigM[i]);
        expect_format2(label, text, strlen(text), 3, 5, NULL, NULL); /* H's line or W1's */
    }
    expect_format("alrnn P > M", "kind alrnn\nM 2\nP 3\nA 1 1\nW 1 2 3 4\nh 1 2\n", 3, "P");
    expect_format("alrnn P < 0", "kind alrnn\nM 2\nP -1\nA 1 1\nW 1 2 3 4\nh 1 2\n", 3, "P");
    expect_format("alrnn P 1.5", "kind alrnn\nM 2\nP 1.5\nA 1 1\nW 1 2 3 4\nh 1 2\n", 3, "P");
}

static void test_fields_of_other_kinds(void) {
    expect_format("W in shplrnn", S1 S2 S3 S4 S5 "W 1 2 3 4\n" S6 S7 S8, 6, "W");
    expect_format("h in clipped_shplrnn", "kind clipped_shplrnn\n" S2 S3 S4 S5 S6 S7 S8 "h 1 2\n", 9, "h");
    expect_format("W1 in plrnn", L1 L2 L3 L4 L5 "W1 1 2 3 4 5 6\n", 6, "W1");
    expect_format("H in plrnn", L1 L2 "H 3\n" L3 L4 L5, 3, "H");
    expect_format("P in plrnn", L1 L2 "P 1\n" L3 L4 L5, 3, "P");
    expect_format("h2 in alrnn", "kind alrnn\nM 2\nP 1\nA 1 1\nW 1 2 3 4\nh 1 2\nh2 1 2 3\n", 7, "h2");
    expect_format("P in shplrnn", S1 S2 S3 "P 1\n" S4 S5 S6 S7 S8, 4, "P");
}

static void test_bad_kind(void) {
    expect_format("kind rnn", "kind rnn\n" L2 L3 L4 L5, 1, "kind");
    expect_format("kind 3", "kind 3\n" L2 L3 L4 L5, 1, "kind");
    expect_format("kind plrnn2", "kind plrnn2\n" L2 L3 L4 L5, 1, "kind");
    expect_format2("kind two words", "kind plrnn shplrnn\n" L2 L3 L4 L5, strlen("kind plrnn shplrnn\n" L2 L3 L4 L5), 1, 0,
                   "kind", "shplrnn");
    expect_format2("kind without a value", "kind\n" L2 L3 L4 L5, strlen("kind\n" L2 L3 L4 L5), 1, 2, "kind", "M");
    expect_format2("kind without a value at the end", "kind", 4, 1, 0, "kind", NULL);
}

static void test_empty_and_junk(void) {
    expect_format2("empty", "", 0, 1, 0, "kind", NULL);
    expect_format2("only comments", "# a model\n# nothing else\n", strlen("# a model\n# nothing else\n"), 3, 2, "kind",
                   NULL);
    expect_format2("only blank lines", "\n  \n\t\n", 3 + 3, 4, 3, "kind", NULL);
    expect_format2("comment without newline", "# x", 3, 1, 0, "kind", NULL);
    expect_format2("numbers before any keyword", "1 2\n" L1 L2 L3 L4 L5, strlen("1 2\n" L1 L2 L3 L4 L5), 1, 0, NULL,
                   NULL);
    expect_format2("numbers after a comment, before any keyword", "# c\n\n 0.5\n" L1 L2 L3 L4 L5,
                   strlen("# c\n\n 0.5\n" L1 L2 L3 L4 L5), 3, 0, NULL, NULL);
    {
        static const char nul[] = "kind plrnn\nM 2\nA 0.5 0.5\nW 0.1 0.2 0.3 0.4\nh 1 2\0\n";
        prn_pwl_model *m = SENT;
        prn_status st = parse_n(nul, sizeof nul - 1, &m); /* a NUL byte at the end of line 5 */
        PRNT_CHECK(st == PRN_ERR_FORMAT, "NUL byte: got %s (%s)", prn_status_string(st), prn_last_error(g_ctx));
        if (st == PRN_OK) prn_pwl_free(g_ctx, m);
    }
}

/* A file cut in the middle: W's numbers stop early. Then every prefix of a
 * valid file of each kind, from a buffer of exactly that length: OK (a cut
 * inside the last number still leaves a number) or PRN_ERR_FORMAT with a
 * line in the message; never a crash, a read past len or a leak. */
static void test_truncated(void) {
    static const char *files[] = {
        L1 L2 L3 L4 L5,
        S1 S2 S3 S4 "W1 1 2 3\n 4 5 6 # c\n" S6 S7 S8,
        "kind clipped_shplrnn\r\nM 2\r\nH 3\r\nA 1 0 0 1\r\nW1 1 2 3 4 5 6\r\nW2 1 2 3 4 5 6\r\nh1 1 2\r\nh2 1 2 3\r\n",
        "kind alrnn\nM 2\nP 1\nA 1 1\nW 1e-1 2E1 -3 4\nh 1 2\n",
    };
    size_t f, n;
    /* W short and h missing: either may be reported */
    expect_format2("cut inside W", L1 L2 L3 "W 0.1 0.", strlen(L1 L2 L3 "W 0.1 0."), 4, 0, "W", "h");
    /* W last: only its count is wrong */
    expect_format2("cut inside the last field", L1 L2 L3 L5 "W 0.1 0.", strlen(L1 L2 L3 L5 "W 0.1 0."), 5, 0, "W",
                   NULL);
    for (f = 0; f < sizeof files / sizeof files[0]; ++f) {
        size_t len = strlen(files[f]);
        int bad = 0;
        for (n = 0; n <= len && bad < 3; ++n) {
            prn_pwl_model *m = SENT;
            long before = outstanding();
            prn_status st = parse_n(files[f], n, &m);
            if (st == PRN_OK) {
                if (n + 3 < len && strchr(files[f] + n, '\n') && strchr(files[f] + n, '\n')[1] != 0) {
                    /* the cut removed a whole field: only the end may parse */
                    PRNT_CHECK(0, "file %d cut at %lu of %lu parsed", (int)f, (unsigned long)n, (unsigned long)len);
                    ++bad;
                }
                prn_pwl_free(g_ctx, m);
            } else {
                const char *msg = prn_last_error(g_ctx);
                if (st != PRN_ERR_FORMAT || m != SENT || !strstr(msg, "line ") || !strstr(msg, "prn_pwl_parse")) {
                    PRNT_CHECK(0, "file %d cut at %lu: %s, out %s: \"%s\"", (int)f, (unsigned long)n,
                               prn_status_string(st), m == SENT ? "untouched" : "written", msg);
                    ++bad;
                }
            }
            if (outstanding() != before) {
                PRNT_CHECK(0, "file %d cut at %lu: %ld allocations leaked", (int)f, (unsigned long)n,
                           outstanding() - before);
                ++bad;
            }
        }
        /* the whole file parses */
        {
            prn_pwl_model *m = NULL;
            PRNT_OK(g_ctx, parse_n(files[f], len, &m));
            prn_pwl_free(g_ctx, m);
        }
    }
}

static void test_null_arguments(void) {
    prn_pwl_model *m = SENT;
    PRNT_STATUS(g_ctx, prn_pwl_parse(g_ctx, k_plrnn_diag, strlen(k_plrnn_diag), NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_pwl_parse(g_ctx, NULL, 10, &m), PRN_ERR_NULL_ARGUMENT);
    PRNT_CHECK(m == SENT, "out written on failure");
    PRNT_STATUS(g_ctx, prn_pwl_parse(NULL, k_plrnn_diag, strlen(k_plrnn_diag), &m), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_pwl_load(g_ctx, NULL, &m), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_pwl_load(g_ctx, "x", NULL), PRN_ERR_NULL_ARGUMENT);
    PRNT_CHECK(m == SENT, "out written on failure");
    prn_pwl_free(g_ctx, NULL);
    prn_pwl_free(NULL, NULL);
}

/* ------------------------------------------------------------------------
 * prn_pwl_load
 * ---------------------------------------------------------------------- */
static int write_temp(char *path, size_t size, const char *text) {
    int fd;
    FILE *f;
    snprintf(path, size, "%s/prn_pwl_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    fd = mkstemp(path);
    if (fd < 0) return 1;
    f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        remove(path);
        return 1;
    }
    fputs(text, f);
    if (fclose(f) != 0) {
        remove(path);
        return 1;
    }
    return 0;
}

static void test_load(void) {
    char path[512];
    prn_pwl_model *m = SENT;
    long before = outstanding();
    prn_status st;
    const char *msg;

    st = prn_pwl_load(g_ctx, "/nonexistent/dir/model.txt", &m);
    msg = prn_last_error(g_ctx);
    PRNT_CHECK(st == PRN_ERR_IO, "missing file: %s (%s)", prn_status_string(st), msg);
    PRNT_CHECK(strstr(msg, "prn_pwl_load") != NULL, "message does not name prn_pwl_load: \"%s\"", msg);
    PRNT_CHECK(strstr(msg, "/nonexistent/dir/model.txt") != NULL, "message does not name the file: \"%s\"", msg);
    PRNT_CHECK(m == SENT, "out written on failure");

    st = prn_pwl_load(g_ctx, ".", &m); /* a directory */
    PRNT_CHECK(st == PRN_ERR_IO || st == PRN_ERR_FORMAT, "directory: %s (%s)", prn_status_string(st),
               prn_last_error(g_ctx));
    if (st == PRN_OK) prn_pwl_free(g_ctx, m);
    m = SENT;
    PRNT_CHECK(outstanding() == before, "%ld allocations leaked", outstanding() - before);

    if (write_temp(path, sizeof path, k_plrnn_diag)) {
        PRNT_SKIP("cannot write a temporary file");
        return;
    }
    m = NULL;
    PRNT_OK(g_ctx, prn_pwl_load(g_ctx, path, &m));
    check_plrnn_diag("loaded", m);
    PRNT_CHECK(!m || outstanding() == before + 1, "a loaded model is %ld allocations, want one", outstanding() - before);
    prn_pwl_free(g_ctx, m);
    remove(path);

    if (write_temp(path, sizeof path, L1 L2 L3 "W 0.1 0.2 0.3\n" L5) == 0) {
        m = SENT;
        st = prn_pwl_load(g_ctx, path, &m);
        msg = prn_last_error(g_ctx);
        PRNT_CHECK(st == PRN_ERR_FORMAT, "bad file: %s (%s)", prn_status_string(st), msg);
        PRNT_CHECK(has_line(msg, 4) && has_field(msg, "W"), "bad file: message \"%s\"", msg);
        PRNT_CHECK(m == SENT, "out written on failure");
        remove(path);
    }
    PRNT_CHECK(outstanding() == before, "%ld allocations leaked", outstanding() - before);
}

/* Every allocation of a parse and of a load failing in turn. */
static void test_allocation_failures(void) {
    char path[512];
    int have_file = write_temp(path, sizeof path, k_plrnn_diag) == 0;
    int pass;
    for (pass = 0; pass < 2; ++pass) {
        long n, refused = 0;
        if (pass == 1 && !have_file) break;
        for (n = 1; n < 64; ++n) {
            prn_pwl_model *m = SENT;
            long before = outstanding();
            prn_status st;
            g_count.fail_at = n;
            g_count.seen = 0;
            st = pass == 0 ? parse_s(k_plrnn_diag, &m) : prn_pwl_load(g_ctx, path, &m);
            g_count.fail_at = 0;
            if (st == PRN_OK) {
                check_plrnn_diag("after failures", m);
                prn_pwl_free(g_ctx, m);
                if (g_count.seen < n) break; /* all allocations done */
                continue;
            }
            ++refused;
            PRNT_CHECK(st == PRN_ERR_OUT_OF_MEMORY, "%s, allocation %ld refused: %s (%s)", pass ? "load" : "parse", n,
                       prn_status_string(st), prn_last_error(g_ctx));
            PRNT_CHECK(m == SENT, "out written on failure");
            PRNT_CHECK(outstanding() == before, "%s, allocation %ld refused: %ld leaked", pass ? "load" : "parse", n,
                       outstanding() - before);
        }
        PRNT_CHECK(refused >= 1, "%s never used the context's allocator", pass ? "load" : "parse");
    }
    if (have_file) remove(path);
}

/* ------------------------------------------------------------------------
 * prn_pwl_check on hand-built models
 * ---------------------------------------------------------------------- */
static double g_A[9], g_W[9], g_h[3], g_W1[6], g_W2[6], g_h1[3], g_h2[3];

static prn_pwl_model model_of(prn_pwl_kind kind) {
    prn_pwl_model m;
    int i;
    memset(&m, 0, sizeof m);
    for (i = 0; i < 9; ++i) {
        g_A[i] = 0.1 * (i + 1);
        g_W[i] = 0.05 * (i - 4);
    }
    for (i = 0; i < 6; ++i) {
        g_W1[i] = 0.3 - 0.1 * i;
        g_W2[i] = 0.2 * (i % 3) - 0.25;
    }
    for (i = 0; i < 3; ++i) g_h[i] = g_h1[i] = g_h2[i] = 0.5 - 0.4 * i;
    m.kind = kind;
    m.M = 2;
    m.A = g_A;
    if (kind == PRN_PWL_PLRNN || kind == PRN_PWL_ALRNN) {
        m.W = g_W;
        m.h = g_h;
        if (kind == PRN_PWL_ALRNN) m.P = 1;
    } else {
        m.H = 3;
        m.W1 = g_W1;
        m.W2 = g_W2;
        m.h1 = g_h1;
        m.h2 = g_h2;
    }
    return m;
}

static void expect_check_fails(const char *label, const prn_pwl_model *m, prn_status want1, prn_status want2) {
    prn_status st = prn_pwl_check(g_ctx, m);
    const char *msg = prn_last_error(g_ctx);
    PRNT_CHECK(st == want1 || st == want2, "%s: got %s (%s), want %s or %s", label, prn_status_string(st), msg,
               prn_status_string(want1), prn_status_string(want2));
    PRNT_CHECK(st == PRN_OK || strstr(msg, "prn_pwl_check") != NULL, "%s: message does not name prn_pwl_check: \"%s\"",
               label, msg);
}

static void test_check(void) {
    static const prn_pwl_kind kinds[] = {PRN_PWL_PLRNN, PRN_PWL_SHPLRNN, PRN_PWL_CLIPPED_SHPLRNN, PRN_PWL_ALRNN};
    prn_pwl_model m;
    size_t k;
    for (k = 0; k < 4; ++k) {
        m = model_of(kinds[k]);
        PRNT_OK(g_ctx, prn_pwl_check(g_ctx, &m));
        m.full_A = 1;
        PRNT_OK(g_ctx, prn_pwl_check(g_ctx, &m));
        m = model_of(kinds[k]);
        m.A = NULL;
        expect_check_fails("A NULL", &m, PRN_ERR_NULL_ARGUMENT, PRN_ERR_INVALID_ARGUMENT);
        m = model_of(kinds[k]);
        m.M = 0;
        expect_check_fails("M 0", &m, PRN_ERR_INVALID_ARGUMENT, PRN_ERR_SHAPE);
        m.M = -2;
        expect_check_fails("M -2", &m, PRN_ERR_INVALID_ARGUMENT, PRN_ERR_SHAPE);
        m = model_of(kinds[k]);
        g_A[1] = NAN;
        expect_check_fails("A NaN", &m, PRN_ERR_NONFINITE, PRN_ERR_INVALID_ARGUMENT);
        m = model_of(kinds[k]);
        m.full_A = 1;
        g_A[3] = INFINITY; /* only in the full A */
        expect_check_fails("full A Inf", &m, PRN_ERR_NONFINITE, PRN_ERR_INVALID_ARGUMENT);
        m = model_of(kinds[k]);
        g_A[3] = INFINITY; /* beyond the diagonal A's M numbers: not read */
        PRNT_OK(g_ctx, prn_pwl_check(g_ctx, &m));
    }
    /* plrnn / alrnn */
    m = model_of(PRN_PWL_PLRNN);
    m.W = NULL;
    expect_check_fails("W NULL", &m, PRN_ERR_NULL_ARGUMENT, PRN_ERR_INVALID_ARGUMENT);
    m = model_of(PRN_PWL_PLRNN);
    m.h = NULL;
    expect_check_fails("h NULL", &m, PRN_ERR_NULL_ARGUMENT, PRN_ERR_INVALID_ARGUMENT);
    m = model_of(PRN_PWL_PLRNN);
    g_W[2] = NAN;
    expect_check_fails("W NaN", &m, PRN_ERR_NONFINITE, PRN_ERR_INVALID_ARGUMENT);
    m = model_of(PRN_PWL_PLRNN);
    g_h[1] = -INFINITY;
    expect_check_fails("h -Inf", &m, PRN_ERR_NONFINITE, PRN_ERR_INVALID_ARGUMENT);
    m = model_of(PRN_PWL_ALRNN);
    m.P = 3;
    expect_check_fails("P > M", &m, PRN_ERR_INVALID_ARGUMENT, PRN_ERR_SHAPE);
    m.P = -1;
    expect_check_fails("P < 0", &m, PRN_ERR_INVALID_ARGUMENT, PRN_ERR_SHAPE);
    m.P = 0;
    PRNT_OK(g_ctx, prn_pwl_check(g_ctx, &m));
    m.P = 2;
    PRNT_OK(g_ctx, prn_pwl_check(g_ctx, &m));
    /* shallow kinds */
    m = model_of(PRN_PWL_SHPLRNN);
    m.W2 = NULL;
    expect_check_fails("W2 NULL", &m, PRN_ERR_NULL_ARGUMENT, PRN_ERR_INVALID_ARGUMENT);
    m = model_of(PRN_PWL_CLIPPED_SHPLRNN);
    m.h2 = NULL;
    expect_check_fails("h2 NULL", &m, PRN_ERR_NULL_ARGUMENT, PRN_ERR_INVALID_ARGUMENT);
    m = model_of(PRN_PWL_SHPLRNN);
    m.H = 0;
    expect_check_fails("H 0", &m, PRN_ERR_INVALID_ARGUMENT, PRN_ERR_SHAPE);
    m = model_of(PRN_PWL_SHPLRNN);
    g_W1[5] = NAN;
    expect_check_fails("W1 NaN", &m, PRN_ERR_NONFINITE, PRN_ERR_INVALID_ARGUMENT);
    m = model_of(PRN_PWL_CLIPPED_SHPLRNN);
    g_h2[2] = INFINITY;
    expect_check_fails("h2 Inf", &m, PRN_ERR_NONFINITE, PRN_ERR_INVALID_ARGUMENT);
    /* the arrays of other kinds are not needed */
    m = model_of(PRN_PWL_SHPLRNN);
    m.W = NULL;
    m.h = NULL;
    PRNT_OK(g_ctx, prn_pwl_check(g_ctx, &m));
    /* kind out of range, NULL model */
    m = model_of(PRN_PWL_PLRNN);
    m.kind = (prn_pwl_kind)42;
    expect_check_fails("kind 42", &m, PRN_ERR_INVALID_ARGUMENT, PRN_ERR_INVALID_ARGUMENT);
    expect_check_fails("NULL model", NULL, PRN_ERR_NULL_ARGUMENT, PRN_ERR_NULL_ARGUMENT);
    PRNT_CHECK(prn_pwl_check(NULL, &m) != PRN_OK, "NULL context accepted");
}

/* ------------------------------------------------------------------------
 * prn_pwl_step against a step computed here
 * ---------------------------------------------------------------------- */
static double relu(double x) { return x > 0 ? x : 0; }

static void step_host(const prn_pwl_model *m, const double *z, double *out) {
    int M = (int)m->M, H = (int)m->H, P = (int)m->P, i, j;
    double hid[16];
    for (i = 0; i < M; ++i) {
        double a = 0;
        if (m->full_A)
            for (j = 0; j < M; ++j) a += m->A[i * M + j] * z[j];
        else
            a = m->A[i] * z[i];
        if (m->kind == PRN_PWL_PLRNN || m->kind == PRN_PWL_ALRNN) {
            for (j = 0; j < M; ++j) {
                double r = (m->kind == PRN_PWL_ALRNN && j < M - P) ? z[j] : relu(z[j]);
                a += m->W[i * M + j] * r;
            }
            a += m->h[i];
        } else {
            for (j = 0; j < H; ++j) {
                int l;
                double u = 0;
                for (l = 0; l < M; ++l) u += m->W2[j * M + l] * z[l];
                hid[j] = m->kind == PRN_PWL_SHPLRNN ? relu(u + m->h2[j]) : relu(u + m->h2[j]) - relu(u);
            }
            for (j = 0; j < H; ++j) a += m->W1[i * H + j] * hid[j];
            a += m->h1[i];
        }
        out[i] = a;
    }
}

static void test_step(void) {
    static const prn_pwl_kind kinds[] = {PRN_PWL_PLRNN, PRN_PWL_SHPLRNN, PRN_PWL_CLIPPED_SHPLRNN, PRN_PWL_ALRNN};
    static const double zs[][2] = {{0, 0}, {1, -1}, {-0.7, 2.5}, {3, 4}, {-2, -3}};
    size_t k, s;
    int full;
    for (k = 0; k < 4; ++k)
        for (full = 0; full < 2; ++full)
            for (s = 0; s < sizeof zs / sizeof zs[0]; ++s) {
                prn_pwl_model m = model_of(kinds[k]);
                double want[2], got[2], z[2];
                m.full_A = full;
                step_host(&m, zs[s], want);
                got[0] = got[1] = -1e300;
                PRNT_OK(g_ctx, prn_pwl_step(g_ctx, &m, zs[s], got));
                PRNT_CHECK(prnt_max_rel_err(got, want, 2) < 1e-14,
                           "kind %d full_A %d z (%g, %g): got (%.17g, %.17g), want (%.17g, %.17g)", (int)kinds[k],
                           full, zs[s][0], zs[s][1], got[0], got[1], want[0], want[1]);
                z[0] = zs[s][0];
                z[1] = zs[s][1];
                PRNT_OK(g_ctx, prn_pwl_step(g_ctx, &m, z, z)); /* in place */
                PRNT_CHECK(prnt_max_rel_err(z, want, 2) < 1e-14, "in place: kind %d", (int)kinds[k]);
            }
    {
        prn_pwl_model m = model_of(PRN_PWL_PLRNN);
        double z[2] = {0, 0}, o[2];
        PRNT_STATUS(g_ctx, prn_pwl_step(g_ctx, NULL, z, o), PRN_ERR_NULL_ARGUMENT);
        PRNT_STATUS(g_ctx, prn_pwl_step(g_ctx, &m, NULL, o), PRN_ERR_NULL_ARGUMENT);
        PRNT_STATUS(g_ctx, prn_pwl_step(g_ctx, &m, z, NULL), PRN_ERR_NULL_ARGUMENT);
    }
    /* a parsed model steps as written */
    {
        prn_pwl_model *m = NULL;
        if (parse_s(k_plrnn_diag, &m) == PRN_OK) {
            double z[2] = {1, -2}, got[2], want[2];
            step_host(m, z, want);
            PRNT_OK(g_ctx, prn_pwl_step(g_ctx, m, z, got));
            PRNT_CHECK(prnt_max_rel_err(got, want, 2) < 1e-14, "parsed: got (%g, %g), want (%g, %g)", got[0], got[1],
                       want[0], want[1]);
            prn_pwl_free(g_ctx, m);
        }
    }
}

int main(void) {
    prn_config cfg;
    char err[256];
    long base;
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = 1;
    cfg.allocator.alloc = ca_alloc;
    cfg.allocator.free = ca_free;
    cfg.allocator.user = &g_count;
    if (prn_context_create(&cfg, &g_ctx, err, sizeof err) != PRN_OK) {
        printf("context: %s\nsummary passed=0 failed=1 skipped=0\n", err);
        return 1;
    }
    printf("backend: %s\n", prn_context_backend_name(g_ctx));
    base = outstanding();

    PRNT_RUN(test_plrnn_diagonal);
    PRNT_RUN(test_plrnn_full);
    PRNT_RUN(test_alrnn);
    PRNT_RUN(test_shallow_kinds);
    PRNT_RUN(test_whitespace_and_order);
    PRNT_RUN(test_comment_without_space);
    PRNT_RUN(test_number_forms);
    PRNT_RUN(test_missing_fields);
    PRNT_RUN(test_repeated_fields);
    PRNT_RUN(test_unknown_keyword);
    PRNT_RUN(test_wrong_counts);
    PRNT_RUN(test_not_numbers);
    PRNT_RUN(test_not_finite);
    PRNT_RUN(test_bad_sizes);
    PRNT_RUN(test_fields_of_other_kinds);
    PRNT_RUN(test_bad_kind);
    PRNT_RUN(test_empty_and_junk);
    PRNT_RUN(test_truncated);
    PRNT_RUN(test_null_arguments);
    PRNT_RUN(test_load);
    PRNT_RUN(test_allocation_failures);
    PRNT_RUN(test_check);
    PRNT_RUN(test_step);

    if (outstanding() != base) {
        printf("FAIL %ld allocations outstanding at the end\n", outstanding() - base);
        prnt_failed++;
    }
    prn_context_free(g_ctx);
    if (g_count.allocs != g_count.frees) {
        printf("FAIL the allocator has %ld outstanding allocations after prn_context_free\n",
               g_count.allocs - g_count.frees);
        prnt_failed++;
    }
    return prnt_summary();
}
