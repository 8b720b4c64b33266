/* scan_explain.c - how a linear recurrence is computed in parallel, step by
 * step, on a sequence short enough to follow by hand.
 *
 * The recurrence (one channel):   h[t] = a[t] * h[t-1] + b[t],   h[-1] = h0.
 *
 * Each step is an affine map f_t(h) = a[t] h + b[t], written (m, o) = (a[t], b[t]).
 * Maps compose ("later after earlier"):
 *
 *     (m2, o2) after (m1, o1) = (m2*m1, m2*o1 + o2)
 *
 * which is associative but not commutative. Associativity lets a scan
 * group the steps any way it likes, and that is where the parallelism
 * comes from; the order of the two arguments must be kept.
 *
 * The program prints every step of
 *   (a) the three-phase chunked scan: reduce each chunk to one map, scan the
 *       carries across chunks, expand each chunk from its carry;
 *   (b) the Blelloch tree scan: up-sweep (pairwise reductions), down-sweep
 *       (exclusive prefixes), then h[t] = f_t(prefix_t(h0)).
 * It computes these itself (plain C on doubles), then checks the results
 * against prn_scan_diag with PRN_SCAN_SEQUENTIAL, PRN_SCAN_CHUNKED and
 * PRN_SCAN_TREE from the library.
 *
 * Usage:  scan_explain [T [CHUNKS]]
 *   T       sequence length, 1..64 (default 8)
 *   CHUNKS  number of chunks of the chunked scan, 1..T (default 2)
 * The decays and inputs repeat a fixed pattern of 8 steps whose values
 * (0.5, 1, 2, -1 and small integers) keep every number exact and short.
 *
 * Exit status: 0 when every result agrees, 1 on a mismatch or a parrnn
 * error, 2 on bad usage.
 */
#include "parrnn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_T 64

/* An affine map h -> m*h + o. */
typedef struct map {
    double m, o;
} map;

static const map identity = {1.0, 0.0};

/* later after earlier: first apply e, then l. */
static map after(map l, map e) {
    map r;
    r.m = l.m * e.m;
    r.o = l.m * e.o + l.o;
    return r;
}

static double apply(map f, double h) { return f.m * h + f.o; }

/* Short text of a number or a map (rotating static buffers, for printf). */
static const char *num(double v) {
    static char buf[16][32];
    static int k = 0;
    char *s = buf[k++ % 16];
    snprintf(s, 32, "%g", v == 0.0 ? 0.0 : v); /* no "-0" */
    return s;
}
/* v in parentheses when negative (a factor), and " + v" / " - |v|" (a term). */
static const char *nump(double v) {
    static char buf[16][40];
    static int k = 0;
    char *s = buf[k++ % 16];
    snprintf(s, 40, v < 0 ? "(%s)" : "%s", num(v));
    return s;
}
static const char *plus(double v) {
    static char buf[16][40];
    static int k = 0;
    char *s = buf[k++ % 16];
    snprintf(s, 40, v < 0 ? " - %s" : " + %s", num(fabs(v)));
    return s;
}
static const char *mp(map f) {
    static char buf[16][64];
    static int k = 0;
    char *s = buf[k++ % 16];
    snprintf(s, 64, "(%s, %s)", num(f.m), num(f.o));
    return s;
}

static void print_row(const char *label, const double *v, int T) {
    int t;
    printf("  %-5s", label);
    for (t = 0; t < T; ++t) printf(" %6s", num(v[t]));
    printf("\n");
}

static void rule(const char *title) { printf("\n== %s ==\n", title); }

/* ------------------------------------------------------------------------
 * (a) the three-phase chunked scan
 * ---------------------------------------------------------------------- */
static void chunked(int T, int nch, const double *a, const double *b, double h0, double *h) {
    map red[MAX_T];
    double carry[MAX_T + 1];
    int j, t;
    rule("(a) Chunked scan: three phases");
    printf("%d chunks; chunk j holds steps [j*T/%d, (j+1)*T/%d).\n", nch, nch, nch);

    printf("\nPhase 1, reduce: compose each chunk's steps into one map, starting\n"
           "from the identity (1, 0). Chunks are independent (one per thread).\n");
    for (j = 0; j < nch; ++j) {
        int t0 = j * T / nch, t1 = (j + 1) * T / nch;
        map acc = identity;
        printf("  chunk %d (t = %d..%d):\n", j, t0, t1 - 1);
        for (t = t0; t < t1; ++t) {
            map f, n;
            f.m = a[t];
            f.o = b[t];
            n = after(f, acc);
            printf("    t=%-2d %s after %s = %s\n", t, mp(f), mp(acc), mp(n));
            acc = n;
        }
        red[j] = acc;
        printf("    => chunk %d maps h -> %s*h%s\n", j, nump(acc.m), plus(acc.o));
    }

    printf("\nPhase 2, carries: the state entering chunk j+1 is chunk j's map\n"
           "applied to the state entering chunk j. Serial, but one step per chunk.\n");
    carry[0] = h0;
    printf("  carry into chunk 0 = h0 = %s\n", num(h0));
    for (j = 0; j < nch; ++j) {
        carry[j + 1] = apply(red[j], carry[j]);
        printf("  carry %s chunk %d = %s*%s%s = %s\n", j + 1 < nch ? "into" : "after", j + 1 < nch ? j + 1 : j,
               nump(red[j].m), nump(carry[j]), plus(red[j].o), num(carry[j + 1]));
    }

    printf("\nPhase 3, expand: rerun each chunk's steps from its carry (independent\n"
           "again); every h[t] comes out here.\n");
    for (j = 0; j < nch; ++j) {
        int t0 = j * T / nch, t1 = (j + 1) * T / nch;
        double x = carry[j];
        printf("  chunk %d:", j);
        for (t = t0; t < t1; ++t) {
            double y = a[t] * x + b[t];
            if (t > t0) printf((t - t0) % 2 == 0 ? ",\n          " : ",");
            printf(" h[%d] = %s*%s%s = %s", t, num(a[t]), nump(x), plus(b[t]), num(y));
            h[t] = x = y;
        }
        printf("\n");
    }
}

/* ------------------------------------------------------------------------
 * (b) the Blelloch tree scan
 * ---------------------------------------------------------------------- */
static void print_nodes(const map *x, int np) {
    int i;
    for (i = 0; i < np; ++i) printf("%s x%d=%s", i % 4 == 0 ? "\n   " : "", i, mp(x[i]));
    printf("\n");
}

static void tree(int T, const double *a, const double *b, double h0, double *h) {
    map x[MAX_T];
    int np = 1, d, i, t, level;
    while (np < T) np *= 2;
    rule("(b) Blelloch tree scan");
    printf("%d leaves x_t = (a[t], b[t])%s.\n", np, np > T ? "; the padding beyond T is the identity (1, 0)" : "");
    for (t = 0; t < np; ++t) {
        x[t].m = t < T ? a[t] : 1.0;
        x[t].o = t < T ? b[t] : 0.0;
    }

    printf("\nUp-sweep: at distance d, node i (i = 2d-1, 4d-1, ...) becomes\n"
           "x_i after x_(i-d): then node i holds the map of its whole subtree.\n");
    for (d = 1, level = 1; d < np; d *= 2, ++level) {
        printf("  level %d (d=%d):\n", level, d);
        for (i = 2 * d - 1; i < np; i += 2 * d) {
            map n = after(x[i], x[i - d]);
            printf("    x%-2d = x%-2d after x%-2d = %s after %s = %s\n", i, i, i - d, mp(x[i]), mp(x[i - d]), mp(n));
            x[i] = n;
        }
    }
    printf("  The root x%d = %s is the map of the whole sequence.\n", np - 1, mp(x[np - 1]));

    printf("\nDown-sweep: set the root to the identity; at distance d, for each\n"
           "node i: left = x_(i-d); x_(i-d) = x_i (a left child starts where its\n"
           "parent starts); x_i = left after x_i (the right child starts after\n"
           "the left subtree). In the end x_t is the exclusive prefix: steps 0..t-1.\n");
    x[np - 1] = identity;
    for (d = np / 2, level = 1; d >= 1; d /= 2, ++level) {
        printf("  level %d (d=%d):\n", level, d);
        for (i = 2 * d - 1; i < np; i += 2 * d) {
            map left = x[i - d], n = after(left, x[i]);
            printf("    x%-2d = x%-2d = %s;  x%-2d = %s after %s = %s\n", i - d, i, mp(x[i]), i, mp(left), mp(x[i]),
                   mp(n));
            x[i - d] = x[i];
            x[i] = n;
        }
    }
    printf("  Exclusive prefixes:");
    print_nodes(x, T);

    printf("\nFinal: h[t] = a[t] * (x_t applied to h0) + b[t], all t in parallel:\n");
    for (t = 0; t < T; ++t) {
        double p = apply(x[t], h0);
        h[t] = a[t] * p + b[t];
        printf("  h[%d] = %s*(%s*%s%s)%s = %s\n", t, num(a[t]), num(x[t].m), nump(h0), plus(x[t].o), plus(b[t]),
               num(h[t]));
    }
}

/* ------------------------------------------------------------------------
 * The library's answer
 * ---------------------------------------------------------------------- */
/* Runs prn_scan_diag with algo on a [T, 1] f64 sequence and h0; writes h. */
static int library_scan(prn_context *ctx, prn_scan_algo algo, int T, const double *a, const double *b, double h0,
                        double *h) {
    size_t shape[2], one = 1;
    prn_tensor *ta = NULL, *tb = NULL, *th = NULL, *y = NULL;
    prn_status st;
    shape[0] = (size_t)T;
    shape[1] = 1;
    st = prn_tensor_from_host(ctx, PRN_F64, 2, shape, a, &ta);
    if (st == PRN_OK) st = prn_tensor_from_host(ctx, PRN_F64, 2, shape, b, &tb);
    if (st == PRN_OK) st = prn_tensor_from_host(ctx, PRN_F64, 1, &one, &h0, &th);
    if (st == PRN_OK) st = prn_scan_diag(ctx, ta, tb, th, 0, algo, &y);
    if (st == PRN_OK) st = prn_tensor_download(y, h, (size_t)T);
    prn_tensor_free(ta);
    prn_tensor_free(tb);
    prn_tensor_free(th);
    prn_tensor_free(y);
    return st == PRN_OK;
}

static double max_diff(const double *x, const double *y, int T) {
    double m = 0.0;
    int t;
    for (t = 0; t < T; ++t) {
        double d = fabs(x[t] - y[t]);
        if (!(d <= m)) m = d; /* NaN propagates */
    }
    return m;
}

static int parse_int(const char *s, int lo, int hi, int *v) {
    char *end;
    long x = strtol(s, &end, 10);
    if (*s == 0 || *end || x < lo || x > hi) return 0;
    *v = (int)x;
    return 1;
}

int main(int argc, char **argv) {
    static const double pa[8] = {0.5, 2, 1, -1, 2, 0.5, 1, 0.5};
    static const double pb[8] = {1, 2, -1, 3, 0, 1, 2, -2};
    static const prn_scan_algo algos[3] = {PRN_SCAN_SEQUENTIAL, PRN_SCAN_CHUNKED, PRN_SCAN_TREE};
    static const char *const algo_names[3] = {"PRN_SCAN_SEQUENTIAL", "PRN_SCAN_CHUNKED", "PRN_SCAN_TREE"};
    double a[MAX_T], b[MAX_T], h_seq[MAX_T], h_chunk[MAX_T], h_tree[MAX_T], h_lib[MAX_T], x, scale = 1.0;
    const double h0 = 1.0;
    int T = 8, nch = 2, t, k, ok = 1;
    prn_context *ctx = NULL;
    char err[256];
    map f1, f0;

    if (argc > 3 || (argc > 1 && !parse_int(argv[1], 1, MAX_T, &T)) ||
        (argc > 2 && !parse_int(argv[2], 1, T, &nch))) {
        fprintf(stderr, "usage: scan_explain [T [CHUNKS]]   (1 <= T <= %d, 1 <= CHUNKS <= T)\n", MAX_T);
        return 2;
    }
    if (argc == 2 && nch > T) nch = T;
    for (t = 0; t < T; ++t) {
        a[t] = pa[t % 8];
        b[t] = pb[t % 8];
    }

    printf("scan_explain: h[t] = a[t] * h[t-1] + b[t] for t = 0..%d, starting from h[-1] = h0 = %s\n\n", T - 1,
           num(h0));
    {
        double tt[MAX_T];
        for (t = 0; t < T; ++t) tt[t] = t;
        print_row("t", tt, T);
        print_row("a[t]", a, T);
        print_row("b[t]", b, T);
    }
    printf("\nStep t is the affine map f_t(h) = a[t]*h + b[t], written (m, o) = (a[t], b[t]).\n"
           "Two maps compose, later after earlier:\n"
           "    (m2, o2) after (m1, o1) = (m2*m1, m2*o1 + o2)\n"
           "since m2*(m1*h + o1) + o2 = (m2*m1)*h + (m2*o1 + o2). This is associative,\n"
           "so the steps may be grouped in any way (the source of parallelism), but\n"
           "not commutative, so the order must be kept:\n");
    f0.m = a[0]; f0.o = b[0];
    f1.m = T > 1 ? a[1] : 2.0; f1.o = T > 1 ? b[1] : 2.0;
    printf("    %s after %s = %s,  but  %s after %s = %s\n", mp(f1), mp(f0), mp(after(f1, f0)), mp(f0), mp(f1),
           mp(after(f0, f1)));

    x = h0;
    for (t = 0; t < T; ++t) h_seq[t] = x = a[t] * x + b[t];
    printf("\nSequential loop (the answer):\n");
    print_row("h[t]", h_seq, T);

    chunked(T, nch, a, b, h0, h_chunk);
    tree(T, a, b, h0, h_tree);

    rule("Check");
    for (t = 0; t < T; ++t)
        if (fabs(h_seq[t]) > scale) scale = fabs(h_seq[t]);
    printf("  chunked above vs sequential loop: max |diff| %s\n", num(max_diff(h_chunk, h_seq, T)));
    printf("  tree above    vs sequential loop: max |diff| %s\n", num(max_diff(h_tree, h_seq, T)));
    if (!(max_diff(h_chunk, h_seq, T) <= 1e-12 * scale) || !(max_diff(h_tree, h_seq, T) <= 1e-12 * scale)) ok = 0;
    if (prn_context_create(NULL, &ctx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "scan_explain: %s\n", err);
        return 1;
    }
    printf("  library (backend %s, f64; it picks its own chunk count):\n", prn_context_backend_name(ctx));
    for (k = 0; k < 3; ++k) {
        double d;
        if (!library_scan(ctx, algos[k], T, a, b, h0, h_lib)) {
            fprintf(stderr, "scan_explain: prn_scan_diag (%s): %s\n", algo_names[k], prn_last_error(ctx));
            prn_context_destroy(ctx);
            return 1;
        }
        d = max_diff(h_lib, h_seq, T);
        printf("    prn_scan_diag %-19s max |diff| %s\n", algo_names[k], num(d));
        if (!(d <= 1e-12 * scale)) ok = 0;
    }
    prn_context_destroy(ctx);
    printf("%s\n", ok ? "All results agree." : "MISMATCH: the results differ.");
    return ok ? 0 : 1;
}
