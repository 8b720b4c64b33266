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
 *         scan_explain --html FILE
 *   T       sequence length, 1..64 (default 8)
 *   CHUNKS  number of chunks of the chunked scan, 1..T (default 2)
 * The decays and inputs repeat a fixed pattern of 8 steps whose values
 * (0.5, 1, 2, -1 and small integers) keep every number exact and short.
 *
 * --html FILE writes one self-contained interactive page (inline SVG, CSS
 * and JavaScript; `make teach` writes build/scan_explain.html): the maps
 * and their composition, the sequential loop, the chunked and the tree
 * scan step by step with their work and depth, DEER and quasi-DEER on a
 * small tanh RNN, and exercises. The page computes everything itself in
 * JavaScript; this program computes a set of cases with the library
 * (prn_scan_diag, prn_deer_rnn, prn_rnn_jacobian, in f64) and embeds them
 * as JSON, and the page's self-test (FILE#selftest) compares its own
 * results with them (tests/teach_page.sh runs it in headless Chromium).
 * The page's source is examples/scan_explain_page.html, embedded at build
 * time as examples/scan_explain_page.h (examples/embed_page.sh).
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

/* ------------------------------------------------------------------------
 * --html: the interactive page, and the library's values it is tested on
 * ---------------------------------------------------------------------- */
#include "scan_explain_page.h" /* scan_explain_page_lines: examples/scan_explain_page.html */

/* The page's own JavaScript recomputes everything below; these are the
 * library's answers for a few fixed cases, which its self-test compares
 * with. Node values of the chunked and tree scans are compositions of
 * runs of consecutive steps: the library gives each as the last state of
 * prn_scan_diag over that run, once from 0 (the offset o) and once with
 * b = 0 from 1 (the factor m), both as channels of one batched call. */
typedef struct range {
    int lo, hi; /* the steps lo..hi-1, applied in order; lo == hi: the identity */
} range;

#define MAX_SEQS 1024

/* out[i] = the composition of steps 0..len[i]-1 of (a[i], b[i]). */
static int lib_compose(prn_context *ctx, prn_scan_algo algo, int n, const int *len, const double *const *a,
                       const double *const *b, map *out) {
    size_t shape[3], s2[2];
    int L = 1, i, t, ok;
    double *ha, *hb, *h0, *h;
    prn_tensor *ta = NULL, *tb = NULL, *th = NULL, *y = NULL;
    prn_status st;
    for (i = 0; i < n; ++i)
        if (len[i] > L) L = len[i];
    ha = (double *)malloc(sizeof(double) * (size_t)n * (size_t)L * 2);
    hb = (double *)malloc(sizeof(double) * (size_t)n * (size_t)L * 2);
    h = (double *)malloc(sizeof(double) * (size_t)n * (size_t)L * 2);
    h0 = (double *)malloc(sizeof(double) * (size_t)n * 2);
    if (!ha || !hb || !h || !h0) {
        free(ha); free(hb); free(h); free(h0);
        fprintf(stderr, "scan_explain: out of memory\n");
        return 0;
    }
    for (i = 0; i < n; ++i) {
        for (t = 0; t < L; ++t) { /* padding after the run: identity steps */
            double *pa = ha + ((size_t)i * L + t) * 2, *pb = hb + ((size_t)i * L + t) * 2;
            pa[0] = pa[1] = t < len[i] ? a[i][t] : 1.0;
            pb[0] = t < len[i] ? b[i][t] : 0.0;
            pb[1] = 0.0;
        }
        h0[2 * i] = 0.0;
        h0[2 * i + 1] = 1.0;
    }
    shape[0] = (size_t)n; shape[1] = (size_t)L; shape[2] = 2;
    s2[0] = (size_t)n; s2[1] = 2;
    st = prn_tensor_from_host(ctx, PRN_F64, 3, shape, ha, &ta);
    if (st == PRN_OK) st = prn_tensor_from_host(ctx, PRN_F64, 3, shape, hb, &tb);
    if (st == PRN_OK) st = prn_tensor_from_host(ctx, PRN_F64, 2, s2, h0, &th);
    if (st == PRN_OK) st = prn_scan_diag(ctx, ta, tb, th, 0, algo, &y);
    if (st == PRN_OK) st = prn_tensor_download(y, h, (size_t)n * (size_t)L * 2);
    ok = st == PRN_OK;
    if (!ok) fprintf(stderr, "scan_explain: prn_scan_diag: %s\n", prn_last_error(ctx));
    for (i = 0; ok && i < n; ++i) {
        out[i].o = h[((size_t)i * L + L - 1) * 2];
        out[i].m = h[((size_t)i * L + L - 1) * 2 + 1];
    }
    prn_tensor_free(ta); prn_tensor_free(tb); prn_tensor_free(th); prn_tensor_free(y);
    free(ha); free(hb); free(h); free(h0);
    return ok;
}

/* The maps of runs of (a, b) (steps at or after T are identity padding). */
static int lib_ranges(prn_context *ctx, prn_scan_algo algo, const double *a, const double *b, int T, const range *r,
                      int n, map *out) {
    int len[MAX_SEQS], i;
    const double *pa[MAX_SEQS], *pb[MAX_SEQS];
    if (n > MAX_SEQS) return 0;
    for (i = 0; i < n; ++i) {
        int lo = r[i].lo < T ? r[i].lo : T, hi = r[i].hi < T ? r[i].hi : T;
        len[i] = hi > lo ? hi - lo : 0;
        pa[i] = a + lo;
        pb[i] = b + lo;
    }
    return lib_compose(ctx, algo, n, len, pa, pb, out);
}

/* A JSON writer: just enough for numbers, arrays of them and keys. */
static void jnum(FILE *f, double v) {
    if (v != v || v > 1e308 || v < -1e308) fputs("null", f);
    else fprintf(f, "%.17g", v == 0.0 ? 0.0 : v);
}
static void jarr(FILE *f, const char *key, const double *v, int n) {
    int i;
    fprintf(f, "\"%s\":[", key);
    for (i = 0; i < n; ++i) {
        if (i) fputc(',', f);
        jnum(f, v[i]);
    }
    fputs("]", f);
}
static void jmaps(FILE *f, const char *key, const map *v, int n) {
    int i;
    fprintf(f, "\"%s\":[", key);
    for (i = 0; i < n; ++i) {
        fputs(i ? ",[" : "[", f);
        jnum(f, v[i].m);
        fputc(',', f);
        jnum(f, v[i].o);
        fputc(']', f);
    }
    fputs("]", f);
}

/* Two maps agree up to rounding (exactly, for the dyadic cases). */
static int close_to(double x, double y) { return fabs(x - y) <= 1e-12 * (1.0 + fabs(x) + fabs(y)); }
static int maps_close(map x, map y) { return close_to(x.m, y.m) && close_to(x.o, y.o); }
/* 1 + the largest |h|: the scale of rounding errors in a scan's result */
static double size_of(const double *h, int T) {
    double m = 0.0;
    int t;
    for (t = 0; t < T; ++t)
        if (fabs(h[t]) > m) m = fabs(h[t]);
    return 1.0 + m;
}

/* The tree scan's stages, as the page draws them: the leaves, each level
 * of the up-sweep, the root cleared, each level of the down-sweep. Every
 * node holds a run of steps; the walk checks that the runs it composes
 * are adjacent (the algorithm composes only neighbours). */
#define MAX_STAGES 16
typedef struct tree_rec {
    int np, nst;
    int d[MAX_STAGES];              /* distance of the level; 0: leaves or clear */
    const char *phase[MAX_STAGES]; /* "leaves", "up", "clear", "down" */
    range r[MAX_STAGES][MAX_T];
    map v[MAX_STAGES][MAX_T];      /* the walk's own values (plain C)  */
} tree_rec;

static int tree_walk(int T, const double *a, const double *b, tree_rec *tr) {
    range r[MAX_T];
    map x[MAX_T];
    int np = 1, d, i, ok = 1;
    while (np < T) np *= 2;
    tr->np = np;
    tr->nst = 0;
#define SNAP(ph, dd)                                                            \
    do {                                                                        \
        tr->phase[tr->nst] = ph;                                                \
        tr->d[tr->nst] = dd;                                                    \
        memcpy(tr->r[tr->nst], r, sizeof r);                                    \
        memcpy(tr->v[tr->nst], x, sizeof x);                                    \
        ++tr->nst;                                                              \
    } while (0)
    for (i = 0; i < np; ++i) {
        x[i].m = i < T ? a[i] : 1.0;
        x[i].o = i < T ? b[i] : 0.0;
        r[i].lo = i;
        r[i].hi = i + 1;
    }
    SNAP("leaves", 0);
    for (d = 1; d < np; d *= 2) {
        for (i = 2 * d - 1; i < np; i += 2 * d) {
            if (r[i - d].hi != r[i].lo) ok = 0;
            x[i] = after(x[i], x[i - d]);
            r[i].lo = r[i - d].lo;
        }
        SNAP("up", d);
    }
    x[np - 1] = identity;
    r[np - 1].lo = r[np - 1].hi = 0;
    SNAP("clear", 0);
    for (d = np / 2; d >= 1; d /= 2) {
        for (i = 2 * d - 1; i < np; i += 2 * d) {
            map left = x[i - d];
            range rl = r[i - d];
            if (r[i].hi != rl.lo) ok = 0;
            x[i - d] = x[i];
            r[i - d] = r[i];
            x[i] = after(left, x[i]);
            r[i].hi = rl.hi;
        }
        SNAP("down", d);
    }
#undef SNAP
    for (i = 0; i < T; ++i) /* exclusive prefixes */
        if (r[i].lo != 0 || r[i].hi != i) ok = 0;
    return ok;
}

/* One scan case: the library's values of everything the page shows. */
static int html_scan_case(FILE *f, prn_context *ctx, const char *name, int T, int nch, double h0, const double *a,
                          const double *b) {
    static const prn_scan_algo algos[3] = {PRN_SCAN_SEQUENTIAL, PRN_SCAN_CHUNKED, PRN_SCAN_TREE};
    static const char *const keys[3] = {"h_sequential", "h_chunked", "h_tree"};
    static tree_rec tr;
    static range rr[MAX_STAGES * MAX_T];
    static map lv[MAX_STAGES * MAX_T];
    double h[3][MAX_T], carry[MAX_T + 1], bounds[MAX_T + 1], hc[MAX_T];
    map cm[MAX_T], cw, pair[2], mine;
    range cr[MAX_T];
    int j, t, k, s, n, ok = 1, pi, pj, len2[2];
    memset(cr, 0, sizeof cr); /* (gcc cannot see that nch >= 1) */
    const double *pa[2], *pb[2];
    double a2[2][2], b2[2][2];

    for (k = 0; k < 3; ++k) {
        if (!library_scan(ctx, algos[k], T, a, b, h0, h[k])) {
            fprintf(stderr, "scan_explain: prn_scan_diag: %s\n", prn_last_error(ctx));
            return 0;
        }
        if (k && max_diff(h[k], h[0], T) > 1e-12 * size_of(h[0], T)) ok = 0;
    }
    fprintf(f, "{\"name\":\"%s\",\"T\":%d,\"K\":%d,\"h0\":", name, T, nch);
    jnum(f, h0);
    fputc(',', f);
    jarr(f, "a", a, T);
    fputc(',', f);
    jarr(f, "b", b, T);
    for (k = 0; k < 3; ++k) {
        fputc(',', f);
        jarr(f, keys[k], h[k], T);
    }

    /* composition of two steps in both orders: f_j after f_i, f_i after f_j */
    pi = 0;
    pj = T > 1 ? T / 2 : 0;
    a2[0][0] = a[pi]; b2[0][0] = b[pi]; a2[0][1] = a[pj]; b2[0][1] = b[pj];
    a2[1][0] = a[pj]; b2[1][0] = b[pj]; a2[1][1] = a[pi]; b2[1][1] = b[pi];
    pa[0] = a2[0]; pb[0] = b2[0]; pa[1] = a2[1]; pb[1] = b2[1];
    len2[0] = len2[1] = 2;
    if (!lib_compose(ctx, PRN_SCAN_SEQUENTIAL, 2, len2, pa, pb, pair)) return 0;
    {
        map fi, fj;
        fi.m = a[pi]; fi.o = b[pi]; fj.m = a[pj]; fj.o = b[pj];
        if (!maps_close(pair[0], after(fj, fi)) || !maps_close(pair[1], after(fi, fj))) ok = 0;
    }
    fprintf(f, ",\"compose\":{\"i\":%d,\"j\":%d,", pi, pj);
    jmaps(f, "j_after_i", &pair[0], 1);
    fputc(',', f);
    jmaps(f, "i_after_j", &pair[1], 1);
    fputc('}', f);

    /* chunked: each chunk's map, the carries, the expanded h */
    for (j = 0; j < nch; ++j) {
        cr[j].lo = j * T / nch;
        cr[j].hi = (j + 1) * T / nch;
        bounds[j] = cr[j].lo;
    }
    bounds[nch] = T;
    if (!lib_ranges(ctx, PRN_SCAN_CHUNKED, a, b, T, cr, nch, cm)) return 0;
    carry[0] = h0;
    for (j = 0; j < nch; ++j) {
        cw = identity;
        for (t = cr[j].lo; t < cr[j].hi; ++t) {
            map ft;
            ft.m = a[t]; ft.o = b[t];
            cw = after(ft, cw);
        }
        if (!maps_close(cw, cm[j])) ok = 0;
        carry[j + 1] = h[1][cr[j].hi - 1]; /* the library's state at the end of chunk j */
        if (!close_to(apply(cm[j], carry[j]), carry[j + 1])) ok = 0;
    }
    for (j = 0; j < nch; ++j) { /* the expand phase from the library's carries */
        double x = carry[j];
        for (t = cr[j].lo; t < cr[j].hi; ++t) hc[t] = x = a[t] * x + b[t];
    }
    if (max_diff(hc, h[1], T) > 1e-12 * size_of(h[1], T)) ok = 0;
    fputs(",\"chunks\":{", f);
    jarr(f, "bounds", bounds, nch + 1);
    fputc(',', f);
    jmaps(f, "maps", cm, nch);
    fputc(',', f);
    jarr(f, "carries", carry, nch + 1);
    fprintf(f, ",\"work\":[%d,%d,%d],", T, nch, T);
    {
        int longest = 0;
        for (j = 0; j < nch; ++j)
            if (cr[j].hi - cr[j].lo > longest) longest = cr[j].hi - cr[j].lo;
        fprintf(f, "\"depth\":[%d,%d,%d]}", longest, nch, longest);
    }

    /* tree: every node at every stage */
    if (!tree_walk(T, a, b, &tr)) {
        fprintf(stderr, "scan_explain: the tree walk composed runs that are not adjacent\n");
        return 0;
    }
    n = 0;
    for (s = 0; s < tr.nst; ++s)
        for (j = 0; j < tr.np; ++j) rr[n++] = tr.r[s][j];
    if (!lib_ranges(ctx, PRN_SCAN_TREE, a, b, T, rr, n, lv)) return 0;
    fprintf(f, ",\"tree\":{\"np\":%d,\"stages\":[", tr.np);
    n = 0;
    for (s = 0; s < tr.nst; ++s) {
        double lo[MAX_T], hi[MAX_T];
        for (j = 0; j < tr.np; ++j, ++n) {
            mine = tr.v[s][j];
            if (!maps_close(mine, lv[n])) ok = 0;
            lo[j] = tr.r[s][j].lo;
            hi[j] = tr.r[s][j].hi;
        }
        fprintf(f, "%s{\"phase\":\"%s\",\"d\":%d,", s ? "," : "", tr.phase[s], tr.d[s]);
        jmaps(f, "nodes", lv + n - tr.np, tr.np);
        fputc(',', f);
        jarr(f, "lo", lo, tr.np);
        fputc(',', f);
        jarr(f, "hi", hi, tr.np);
        fputc('}', f);
    }
    {
        int lg = 0;
        while ((1 << lg) < tr.np) ++lg;
        /* up-sweep and down-sweep: np-1 compositions each, one level per
         * step; the final phase applies prefix and step: 2 per t */
        fprintf(f, "],\"work\":[%d,%d,%d],\"depth\":[%d,%d,%d]}", tr.np - 1, tr.np - 1, 2 * T, lg, lg, 2);
    }
    fprintf(f, ",\"sequential\":{\"work\":%d,\"depth\":%d}}", T, T);
    if (!ok) fprintf(stderr, "scan_explain: case %s: the walkthrough and the library disagree\n", name);
    return ok;
}

/* The tanh RNN of the DEER view, h' = tanh(W h + u x + c), as a parrnn
 * Elman network (f64, one layer; bias_hh = 0). */
typedef struct deer_case {
    const char *name;
    int S, T;
    double W[4], u[2], c[2], h0[2];
    double x[MAX_T];
} deer_case;

static int set_param(prn_rnn *rnn, const char *name, const double *v, size_t n) {
    prn_tensor *p = prn_rnn_param(rnn, name);
    return p && prn_tensor_upload(p, v, n) == PRN_OK;
}

/* The residual r_t = y_t - f(y_{t-1}, x_t) of a trajectory y [T, S], by
 * the library's step (prn_rnn_jacobian's next); pass[t]: every element
 * meets |r| <= atol + rtol |f| (DEER's own test, f64 defaults). */
static int lib_residual(prn_context *ctx, const prn_rnn *rnn, prn_tensor *x, const deer_case *dc, const double *y,
                        double *r, int *prefix) {
    size_t s2[2];
    double yp[MAX_T * 2], fy[MAX_T * 2];
    prn_tensor *ty = NULL, *next = NULL, *jac = NULL;
    prn_status st;
    int t, i, S = dc->S, T = dc->T, p = 0, run = 1;
    for (i = 0; i < S; ++i) yp[i] = dc->h0[i];
    for (i = S; i < T * S; ++i) yp[i] = y[i - S];
    s2[0] = (size_t)T; s2[1] = (size_t)S;
    st = prn_tensor_from_host(ctx, PRN_F64, 2, s2, yp, &ty);
    if (st == PRN_OK) st = prn_rnn_jacobian(ctx, rnn, x, ty, PRN_JACOBIAN_DIAG, &next, &jac);
    if (st == PRN_OK) st = prn_tensor_download(next, fy, (size_t)(T * S));
    prn_tensor_free(ty); prn_tensor_free(next); prn_tensor_free(jac);
    if (st != PRN_OK) {
        fprintf(stderr, "scan_explain: prn_rnn_jacobian: %s\n", prn_last_error(ctx));
        return 0;
    }
    for (t = 0; t < T; ++t) {
        int pass = 1;
        for (i = 0; i < S; ++i) {
            r[t * S + i] = y[t * S + i] - fy[t * S + i];
            if (!(fabs(r[t * S + i]) <= 1e-10 + 1e-10 * fabs(fy[t * S + i]))) pass = 0;
        }
        if (run && pass) ++p;
        else run = 0;
    }
    *prefix = p;
    return 1;
}

static int html_deer_case(FILE *f, prn_context *ctx, const deer_case *dc) {
    static const prn_jacobian_mode modes[2] = {PRN_JACOBIAN_DENSE, PRN_JACOBIAN_DIAG};
    static const char *const mkeys[2] = {"deer", "quasi"};
    static double iter[MAX_T + 8][MAX_T * 2], res[MAX_T + 8][MAX_T * 2];
    prn_rnn_config cfg;
    prn_rnn *rnn = NULL;
    prn_tensor *x = NULL, *s0 = NULL, *y = NULL;
    double yseq[MAX_T * 2], yfin[MAX_T * 2], zero[2] = {0, 0};
    int S = dc->S, T = dc->T, m, k, i, ok = 1, prefix[MAX_T + 8];
    size_t sx[2], ss[2];
    prn_status st;

    memset(&cfg, 0, sizeof cfg);
    cfg.kind = PRN_RNN_ELMAN;
    cfg.dtype = PRN_F64;
    cfg.input_size = 1;
    cfg.hidden_size = (size_t)S;
    st = prn_rnn_create(ctx, &cfg, &rnn);
    if (st != PRN_OK) {
        fprintf(stderr, "scan_explain: prn_rnn_create: %s\n", prn_last_error(ctx));
        return 0;
    }
    if (!set_param(rnn, "weight_hh_l0", dc->W, (size_t)(S * S)) || !set_param(rnn, "weight_ih_l0", dc->u, (size_t)S) ||
        !set_param(rnn, "bias_ih_l0", dc->c, (size_t)S) || !set_param(rnn, "bias_hh_l0", zero, (size_t)S)) {
        fprintf(stderr, "scan_explain: setting the RNN's parameters failed\n");
        prn_rnn_free(rnn);
        return 0;
    }
    sx[0] = (size_t)T; sx[1] = 1;
    ss[0] = 1; ss[1] = (size_t)S;
    st = prn_tensor_from_host(ctx, PRN_F64, 2, sx, dc->x, &x);
    if (st == PRN_OK) st = prn_tensor_from_host(ctx, PRN_F64, 2, ss, dc->h0, &s0);
    if (st == PRN_OK) st = prn_rnn_forward(ctx, rnn, x, s0, &y, NULL);
    if (st == PRN_OK) st = prn_tensor_download(y, yseq, (size_t)(T * S));
    prn_tensor_free(y);
    y = NULL;
    if (st != PRN_OK) {
        fprintf(stderr, "scan_explain: prn_rnn_forward: %s\n", prn_last_error(ctx));
        ok = 0;
    }
    if (ok) {
        fprintf(f, "{\"name\":\"%s\",\"S\":%d,\"T\":%d,", dc->name, S, T);
        jarr(f, "W", dc->W, S * S);
        fputc(',', f);
        jarr(f, "u", dc->u, S);
        fputc(',', f);
        jarr(f, "c", dc->c, S);
        fputc(',', f);
        jarr(f, "h0", dc->h0, S);
        fputc(',', f);
        jarr(f, "x", dc->x, T);
        fputc(',', f);
        jarr(f, "y_sequential", yseq, T * S);
    }
    for (m = 0; ok && m < 2; ++m) {
        prn_deer_options o;
        prn_deer_stats stt;
        int K;
        memset(&o, 0, sizeof o);
        o.mode = modes[m];
        o.max_iter = 4 * T + 16; /* both converge within T + 1 in exact arithmetic */
        st = prn_deer_rnn(ctx, rnn, x, s0, &o, &y, NULL, &stt);
        if (st == PRN_OK) st = prn_tensor_download(y, yfin, (size_t)(T * S));
        prn_tensor_free(y);
        y = NULL;
        if (st != PRN_OK || !stt.converged || stt.iterations > T + 4) {
            fprintf(stderr, "scan_explain: prn_deer_rnn (%s): %s\n", mkeys[m],
                    st != PRN_OK ? prn_last_error(ctx) : "did not converge");
            ok = 0;
            break;
        }
        K = stt.iterations;
        /* iterate 0 is the initial guess, h0 at every step; iterate k is
         * what prn_deer_rnn returns after k iterations without fall-back */
        for (i = 0; i < T * S; ++i) iter[0][i] = dc->h0[i % S];
        for (k = 1; ok && k <= K; ++k) {
            o.max_iter = k;
            o.no_fallback = 1;
            st = prn_deer_rnn(ctx, rnn, x, s0, &o, &y, NULL, NULL);
            if (st == PRN_OK) st = prn_tensor_download(y, iter[k], (size_t)(T * S));
            prn_tensor_free(y);
            y = NULL;
            if (st != PRN_OK) {
                fprintf(stderr, "scan_explain: prn_deer_rnn: %s\n", prn_last_error(ctx));
                ok = 0;
            }
        }
        for (k = 0; ok && k <= K; ++k) ok = lib_residual(ctx, rnn, x, dc, iter[k], res[k], &prefix[k]);
        if (!ok) break;
        if (prefix[K] != T || max_diff(iter[K], yfin, T * S) > 0.0 || max_diff(yfin, yseq, T * S) > 1e-8) {
            fprintf(stderr, "scan_explain: DEER case %s (%s): the iterates do not end at the sequential result\n",
                    dc->name, mkeys[m]);
            ok = 0;
            break;
        }
        fprintf(f, ",\"%s\":{\"iterations\":%d,", mkeys[m], K);
        jarr(f, "y", yfin, T * S);
        fputs(",\"iterates\":[", f);
        for (k = 0; k <= K; ++k) {
            fputs(k ? ",[" : "[", f);
            for (i = 0; i < T * S; ++i) {
                if (i) fputc(',', f);
                jnum(f, iter[k][i]);
            }
            fputc(']', f);
        }
        fputs("],\"residuals\":[", f);
        for (k = 0; k <= K; ++k) {
            fputs(k ? ",[" : "[", f);
            for (i = 0; i < T * S; ++i) {
                if (i) fputc(',', f);
                jnum(f, res[k][i]);
            }
            fputc(']', f);
        }
        fputs("],\"prefix\":[", f);
        for (k = 0; k <= K; ++k) fprintf(f, "%s%d", k ? "," : "", prefix[k]);
        fputs("]}", f);
    }
    if (ok) fputc('}', f);
    prn_tensor_free(x);
    prn_tensor_free(s0);
    prn_rnn_free(rnn);
    return ok;
}

/* The page's input patterns for DEER (the page has the same presets). */
static void deer_input(double *x, int T) {
    int t;
    for (t = 0; t < T; ++t) x[t] = 1.5 * sin(0.5 * (t + 1)) + (t % 5 == 2 ? 1.0 : 0.0);
}

static int html_main(const char *path) {
    static const double pa[8] = {0.5, 2, 1, -1, 2, 0.5, 1, 0.5};
    static const double pb[8] = {1, 2, -1, 3, 0, 1, 2, -2};
    static const double da[5] = {0.9, -0.7, 1.1, 0.35, 0.8};
    static const double db[5] = {0.1, -0.2, 0.45, 1.3, -0.6};
    static const struct {
        const char *name;
        int T, K, pattern;
        double h0;
    } cases[4] = {{"pattern8", 8, 2, 1, 1.0}, {"pattern13", 13, 3, 1, -2.0}, {"pattern64", 64, 8, 1, 0.5},
                  {"decimals5", 5, 2, 0, 0.3}};
    static deer_case dcs[2];
    double a[MAX_T], b[MAX_T];
    prn_context *ctx = NULL;
    char err[256];
    FILE *f;
    int c, t, ok = 1;
    unsigned li;

    memset(dcs, 0, sizeof dcs);
    /* scalar: w > 1, so the map is not a contraction for small h and the
     * converged prefix grows step by step at first */
    dcs[0].name = "scalar";
    dcs[0].S = 1; dcs[0].T = 32;
    dcs[0].W[0] = 1.5; dcs[0].u[0] = 1.0; dcs[0].c[0] = 0.1; dcs[0].h0[0] = 0.0;
    /* 2-D: a damped rotation; its Jacobian is far from diagonal, so the
     * diagonal approximation (quasi-DEER) needs more iterations */
    dcs[1].name = "rotation2d";
    dcs[1].S = 2; dcs[1].T = 32;
    dcs[1].W[0] = 0.8; dcs[1].W[1] = -1.2; dcs[1].W[2] = 1.2; dcs[1].W[3] = 0.8;
    dcs[1].u[0] = 1.0; dcs[1].u[1] = -0.5; dcs[1].c[0] = 0.1; dcs[1].c[1] = -0.1;
    dcs[1].h0[0] = 0.5; dcs[1].h0[1] = -0.5;
    deer_input(dcs[0].x, dcs[0].T);
    deer_input(dcs[1].x, dcs[1].T);

    if (prn_context_create(NULL, &ctx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "scan_explain: %s\n", err);
        return 1;
    }
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "scan_explain: cannot write %s\n", path);
        prn_context_free(ctx);
        return 1;
    }
    for (li = 0; li < sizeof scan_explain_page_lines / sizeof scan_explain_page_lines[0]; ++li) {
        const char *line = scan_explain_page_lines[li];
        if (!strstr(line, "@EXPECTED_JSON@")) {
            fputs(line, f);
            continue;
        }
        fprintf(f, "{\"backend\":\"%s\",\"scan\":[", prn_context_backend_name(ctx));
        for (c = 0; ok && c < 4; ++c) {
            for (t = 0; t < cases[c].T; ++t) {
                a[t] = cases[c].pattern ? pa[t % 8] : da[t % 5];
                b[t] = cases[c].pattern ? pb[t % 8] : db[t % 5];
            }
            if (c) fputc(',', f);
            ok = html_scan_case(f, ctx, cases[c].name, cases[c].T, cases[c].K, cases[c].h0, a, b);
            fputc('\n', f);
        }
        fputs("],\"deer\":[", f);
        for (c = 0; ok && c < 2; ++c) {
            if (c) fputc(',', f);
            ok = html_deer_case(f, ctx, &dcs[c]);
            fputc('\n', f);
        }
        fputs("]}\n", f);
    }
    if (fclose(f) != 0) ok = 0;
    prn_context_free(ctx);
    if (!ok) {
        fprintf(stderr, "scan_explain: %s was not written correctly (see above)\n", path);
        remove(path);
        return 1;
    }
    printf("scan_explain: wrote %s (open it in a browser; %s#selftest runs its self-test)\n", path, path);
    return 0;
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

    if (argc >= 2 && strcmp(argv[1], "--html") == 0) {
        if (argc != 3) {
            fprintf(stderr, "usage: scan_explain --html FILE\n");
            return 2;
        }
        return html_main(argv[2]);
    }
    if (argc > 3 || (argc > 1 && !parse_int(argv[1], 1, MAX_T, &T)) ||
        (argc > 2 && !parse_int(argv[2], 1, T, &nch))) {
        fprintf(stderr, "usage: scan_explain [T [CHUNKS]]   (1 <= T <= %d, 1 <= CHUNKS <= T)\n"
                        "       scan_explain --html FILE   (the interactive page)\n", MAX_T);
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
            prn_context_free(ctx);
            return 1;
        }
        d = max_diff(h_lib, h_seq, T);
        printf("    prn_scan_diag %-19s max |diff| %s\n", algo_names[k], num(d));
        if (!(d <= 1e-12 * scale)) ok = 0;
    }
    prn_context_free(ctx);
    printf("%s\n", ok ? "All results agree." : "MISMATCH: the results differ.");
    return ok ? 0 : 1;
}
