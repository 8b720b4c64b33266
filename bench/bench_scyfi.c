/* bench_scyfi.c - SCYFI (prn_scyfi): the search for the fixed points and
 * cycles of piecewise-linear RNNs, against the model size M and the order
 * k, for the PLRNN and the shallow PLRNN, threads and backends side by
 * side, and against a naive variant of the same search written here.
 *
 * Models (random, f64, from this file's own generator; seed 1000 + M, plus
 * 100000 for the shallow one):
 *   plrnn    z' = A z + W relu(z) + h: A diagonal ~ U(0.3, 0.9), W ~
 *            N(0, (0.5 / sqrt(M))^2) with a zero diagonal, h ~ N(0, 1).
 *   shplrnn  z' = A z + W1 relu(W2 z + h2) + h1 with H = 2 M hidden units:
 *            A ~ U(0.3, 0.9), W1 ~ N(0, (0.5 / sqrt(H))^2) [M x H],
 *            W2 ~ N(0, 1 / M) [H x M], h1 ~ N(0, 1), h2 ~ N(0, 1).
 * The scale 0.5 keeps the models tame (with 1, the random searches find
 * nothing at all); at small M they have fixed points the search finds,
 * higher orders are mostly fruitless -- the search's common case, every
 * chain running all of its steps. M in {2, 10, 50, 100, 200, 500}, k in
 * {1, 2, 10}.
 *
 * Per model, backend and thread count, with gradients off, three kinds of
 * prn_scyfi calls (seed 1, max_cycles 8, the library's other defaults:
 * tol 1e-6, for the shallow model a pool of 1000 points in [-10, 10]^M):
 *   workload  kmax = k, outer = 8 fruitless chains end an order, inner = 10
 *             steps per chain, batch = 8 chains at once (= outer, so that
 *             an order without discoveries solves no chain it does not
 *             need): the total time of a fixed, bounded search (orders
 *             1 .. k). The same work on
 *             every backend and thread count (a chain depends only on the
 *             seed, its order and its index; batch is fixed).
 *   probe     kmax = 10 and 9, outer = 1, inner = 1, batch = 8: one batch
 *             of one-step chains per order (more only when a chain finds a
 *             new cycle), so 8 solves of order 10 in the difference (with
 *             fewer they drown in the run-to-run noise); pool_size 1
 *             (the shallow model's pool from one point and its trajectory:
 *             a full pool takes seconds at M = 500 and its noise would
 *             swamp the difference; the cost of a solve does not depend on
 *             it).
 *   baseline  kmax = 1, outer = inner = batch = 1: setup, the shallow
 *             model's pool and one solve.
 * The search of order k alone is the difference of two calls with the same
 * options whose kmax differ by one (a chain depends only on the seed, its
 * order and its index, so the orders below do the same work in both):
 * k = 1 the workload minus the baseline, k = 2 the workloads with kmax 2
 * and 1, k = 10 the probes. order_seconds / order_solves is the time per
 * candidate solve of order k.
 * Every candidate solve of order j builds j Jacobians and their product
 * (j - 1 products of M x M matrices; for the shallow model each Jacobian
 * A + W1 D W2 costs another M H M multiply-adds), then an LU of M x M: the
 * cost per solve grows with the order. A call that takes 5 s or more is
 * timed once, one of 1 to 5 s twice (the better counts), shorter ones by
 * bench_common.h's time_best (best of several batches); each context
 * first runs a warm-up call on a tiny model.
 * A call predicted (M^3 from the next smaller M of the same call) to take
 * more than --time-budget seconds is skipped, and so are its larger M.
 *
 * The naive variant (this file, one thread): the same search, done the
 * simple way -- one chain at a time, one candidate at a time, every matrix
 * malloc'ed per candidate, each Jacobian formed as a dense matrix (shallow:
 * (W1 D) W2 by a triple loop), their product by plain triple loops (i, l,
 * j order: the inner loop runs along rows and the compiler vectorises it;
 * not a cache-hostile strawman), the explicit inverse of (I - product) by
 * Gauss-Jordan with partial pivoting, z_1 = inverse * right-hand side, k
 * model steps and a comparison of the visited patterns with the guess. It
 * follows prn_scyfi's rules: chains from random guesses (random bits;
 * shallow: drawn from the pool of patterns met at sampled points and along
 * trajectories from them), up to `inner` steps each, the visited patterns
 * as the next guess, a new random guess after a singular or non-finite
 * candidate or a pattern sequence seen in the chain's last 8 steps, and
 * after a self-consistent candidate (patterns equal, z_1 comes back),
 * which the chain keeps when it is not a lower-order cycle repeated and
 * new to the chain (its step count then starts again); chains judged in
 * order: the cycles a chain kept that are new to the search (not within
 * max |a - b| <= tol (1 + max |a|) of a known point) are added, one zeroes
 * the count of fruitless chains, `outer` fruitless chains in a row or
 * max_cycles cycles end the order; the eigenvalues of a new cycle's k-step
 * Jacobian by the library's prn_eigenvalues. Its random streams are
 * the library's (Philox through the public prn_philox4x32, keyed as
 * prn_scyfi keys them), so it visits the same candidates up to rounding:
 * where it runs uncapped it must find the same cycles with at most as many
 * solves (prn_scyfi also solves chains ahead that turn out not to be
 * needed). An order of the naive search stops after --naive-budget
 * seconds (default 2; 0.2 with --quick) once it has 3 solves ("capped");
 * the order-k search runs first, the orders below it only when it was not
 * capped. Only its time per solve is compared when capped.
 *
 * Reported per (model, M, k, backend, threads):
 *   seconds, solves, us_per_solve   the workload call (orders 1 .. k)
 *   order_*                         the difference (order k alone)
 *   speedup_vs_naive                naive seconds per solve of order k /
 *                                   parrnn's order-k seconds per solve
 *   speedup_total_vs_naive          the naive search of orders 1 .. k (with
 *                                   its pool) / the workload call's
 *                                   seconds, where the naive one ran
 *                                   uncapped (the same chains)
 * Checks (WARNING lines, not failures): the same calls give the same
 * solves and cycles on every backend and thread count; a smaller kmax of
 * the same options agrees on the orders below; the naive search, where
 * uncapped, finds as many cycles per order and solves no more systems.
 *
 * Output: the machine report, a table for people, then for scripts one
 * line per measurement (each on one line):
 *   BENCH name=scyfi model=<plrnn|shplrnn> backend=<b> threads=<t> M=<M>
 *         H=<H> k=<k> outer=8 inner=10 batch=8 seconds=<s> solves=<n>
 *         us_per_solve=<v> [speedup_vs_naive=<v>] [naive_seconds=<s>
 *         speedup_total_vs_naive=<v>] cycles=<all orders> cycles_k=<order k>
 *   BENCH name=scyfi_order model=<m> backend=<b> threads=<t> M=<M> H=<H>
 *         k=<k> outer=<o> inner=<i> batch=<b> seconds=<s> solves=<n>
 *         us_per_solve=<v> [naive_us_per_solve=<v> speedup_vs_naive=<v>]
 *   BENCH name=scyfi_naive model=<m> backend=naive threads=1 M=<M> H=<H>
 *         k=<k> outer=8 inner=10 seconds=<s of order k> solves=<n>
 *         us_per_solve=<v> capped=<0|1> cycles_k=<n> [total_seconds=<s>
 *         total_solves=<n>]
 * (keys in brackets only where measured).
 *
 * Usage: bench_scyfi [--quick] [--threads N] [--backend NAME] [--max-m N]
 *                    [--naive-budget S] [--no-naive] [--time-budget S]
 *   --quick           M in {2, 10}, the three orders: a CI smoke run of a
 *                     few seconds
 *   --threads N       the second thread count beside 1: prn_config.num_threads,
 *                     OpenMP and OpenBLAS (default: what OpenMP offers); device
 *                     backends run at this count only
 *   --backend NAME    only this backend (default: "reference" and every
 *                     device backend built in whose device is present;
 *                     "reference-noblas" only when named: SCYFI builds its
 *                     systems on the host, so it runs the same code)
 *   --max-m N         largest M (default 500)
 *   --naive-budget S  seconds per order of the naive search (see above)
 *   --no-naive        skip the naive variant
 *   --time-budget S   seconds one call may be predicted to take (default 60)
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c99 */

#include "parrnn.h"
#include "bench_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define NUM_KIND 2
#define NUM_M 6
#define NUM_K 3
/* The calls made per model, backend and thread count: the baseline, the
 * probes (kmax 1, 2, 9, 10) and the workloads (kmax 1, 2, 10). */
enum { C_BASE, C_P9, C_P10, C_W1, C_W2, C_W10, NUM_CALLS };
#define MAX_BACKENDS 8
#define MAX_THR 2
#define KTOP 10

static const int g_ms[NUM_M] = {2, 10, 50, 100, 200, 500};
static const int g_ks[NUM_K] = {1, 2, 10};
static const int g_call_kmax[NUM_CALLS] = {1, 9, 10, 1, 2, 10};
static const int g_call_type[NUM_CALLS] = {0, 1, 1, 2, 2, 2}; /* 0 baseline, 1 probe, 2 workload */
static const char *const g_kind_names[NUM_KIND] = {"plrnn", "shplrnn"};

/* The workload. */
#define W_OUTER 8
#define W_INNER 10
#define W_BATCH 8
#define W_MAX_CYCLES 8
#define W_SEED 1
#define W_TOL 1e-6
#define W_POOL 1000
#define W_POOL_RANGE 10.0
#define WSCALE 0.5

static const char *g_only_backend = NULL;
static int g_max_m = 500;
static double g_naive_budget = -1.0; /* seconds per order; < 0: by mode */
static int g_no_naive = 0;
static double g_time_budget = 60.0;

/* ------------------------------------------------------------------------
 * Random numbers (splitmix64) and the models
 * ---------------------------------------------------------------------- */
static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static double rng_u01(uint64_t *s) { return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }
static double rng_normal(uint64_t *s) {
    double u = rng_u01(s), v = rng_u01(s);
    if (u < 1e-300) u = 1e-300;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* A model and the arrays it points to. */
typedef struct bench_model {
    prn_pwl_model m;
    double *buf;
} bench_model;

static void model_make(bench_model *bm, int kind, int M, uint64_t seed) {
    int H = kind ? 2 * M : 0, i, j;
    size_t n = kind ? (size_t)M + 2 * (size_t)M * H + M + H : (size_t)M + (size_t)M * M + M;
    double *p;
    uint64_t s = seed;
    memset(bm, 0, sizeof *bm);
    bm->buf = p = (double *)xmalloc(n * sizeof *p);
    bm->m.kind = kind ? PRN_PWL_SHPLRNN : PRN_PWL_PLRNN;
    bm->m.M = (size_t)M;
    bm->m.H = (size_t)H;
    bm->m.A = p; p += M;
    for (i = 0; i < M; ++i) bm->m.A[i] = 0.3 + 0.6 * rng_u01(&s);
    if (!kind) {
        bm->m.W = p; p += (size_t)M * M;
        bm->m.h = p;
        for (i = 0; i < M; ++i)
            for (j = 0; j < M; ++j) bm->m.W[(size_t)i * M + j] = i == j ? 0.0 : WSCALE * rng_normal(&s) / sqrt((double)M);
        for (i = 0; i < M; ++i) bm->m.h[i] = rng_normal(&s);
    } else {
        bm->m.W1 = p; p += (size_t)M * H;
        bm->m.W2 = p; p += (size_t)H * M;
        bm->m.h1 = p; p += M;
        bm->m.h2 = p;
        for (i = 0; i < M * H; ++i) bm->m.W1[i] = WSCALE * rng_normal(&s) / sqrt((double)H);
        for (i = 0; i < H * M; ++i) bm->m.W2[i] = rng_normal(&s) / sqrt((double)M);
        for (i = 0; i < M; ++i) bm->m.h1[i] = rng_normal(&s);
        for (i = 0; i < H; ++i) bm->m.h2[i] = rng_normal(&s);
    }
}

static void model_free(bench_model *bm) { free(bm->buf); bm->buf = NULL; }

/* ------------------------------------------------------------------------
 * The naive variant
 * ---------------------------------------------------------------------- */
typedef struct naive_order {
    double seconds;
    long solves, singular;
    int cycles, capped, ran;
} naive_order;

/* A Philox stream as the library's chains draw it (prn_philox4x32 is
 * public): the same guesses, so the same candidates up to rounding. */
typedef struct naive_rng {
    uint64_t key, ctr;
    uint32_t w[4];
    int left;
} naive_rng;
static uint32_t naive_u32(naive_rng *r) {
    if (r->left == 0) {
        prn_philox4x32(r->key, r->ctr++, r->w);
        r->left = 4;
    }
    return r->w[--r->left];
}

typedef struct naive_state {
    const prn_pwl_model *m;
    prn_context *ctx;    /* for prn_eigenvalues only */
    int M, R;            /* state size, indicator bits per step */
    unsigned char *pool; /* shallow: npool distinct patterns of R bits */
    long npool;
    double pool_seconds;
} naive_state;

/* out = F(z) (out != z) and z's pattern into d (may be NULL): plrnn
 * [z > 0], shplrnn [W2 z + h2 > 0]. The sums run in the library's order, so
 * that the same point gives the same pattern. */
static void naive_step(const naive_state *st, const double *z, double *out, unsigned char *d) {
    const prn_pwl_model *m = st->m;
    int i, j, M = st->M, H = m->H;
    for (i = 0; i < M; ++i) out[i] = m->A[i] * z[i];
    if (m->kind == PRN_PWL_PLRNN) {
        for (j = 0; j < M; ++j) {
            double pj = z[j] > 0 ? z[j] : 0.0;
            if (d) d[j] = z[j] > 0;
            if (pj != 0)
                for (i = 0; i < M; ++i) out[i] += m->W[(size_t)i * M + j] * pj;
        }
        for (i = 0; i < M; ++i) out[i] += m->h[i];
    } else {
        double *r = (double *)xmalloc((size_t)H * sizeof *r);
        for (i = 0; i < H; ++i) {
            double a = 0, u;
            for (j = 0; j < M; ++j) a += m->W2[(size_t)i * M + j] * z[j];
            u = a + m->h2[i];
            r[i] = u > 0 ? u : 0.0;
            if (d) d[i] = u > 0;
        }
        for (i = 0; i < M; ++i) {
            double a = m->h1[i];
            for (j = 0; j < H; ++j) a += m->W1[(size_t)i * H + j] * r[j];
            out[i] += a;
        }
        free(r);
    }
}

/* C = A B, A n x q, B q x p: a new matrix. The plain triple loop. */
static double *naive_matmul(const double *a, const double *b, int n, int q, int p) {
    size_t cnt = (size_t)n * (size_t)p;
    double *c = (double *)calloc(cnt > 0 ? cnt : 1, sizeof *c);
    int i, l, j;
    if (!c) { fprintf(stderr, "%s: out of memory\n", bench_prog); exit(1); }
    for (i = 0; i < n; ++i)
        for (l = 0; l < q; ++l) {
            double x = a[(size_t)i * q + l];
            const double *bl = b + (size_t)l * p;
            double *ci = c + (size_t)i * p;
            for (j = 0; j < p; ++j) ci[j] += x * bl[j];
        }
    return c;
}

/* The Jacobian J (M x M) and offset c (M) of the region with pattern d:
 * new arrays, formed as dense matrices (shallow: J = A + (W1 D) W2). */
static void naive_region(const naive_state *st, const unsigned char *d, double **J, double **c) {
    const prn_pwl_model *m = st->m;
    int i, j, M = st->M, H = m->H;
    *c = (double *)xmalloc((size_t)M * sizeof **c);
    if (m->kind == PRN_PWL_PLRNN) {
        *J = (double *)xmalloc((size_t)M * M * sizeof **J);
        for (i = 0; i < M; ++i) {
            for (j = 0; j < M; ++j) (*J)[(size_t)i * M + j] = m->W[(size_t)i * M + j] * (double)d[j];
            (*J)[(size_t)i * M + i] += m->A[i];
            (*c)[i] = m->h[i];
        }
    } else {
        double *WD = (double *)xmalloc((size_t)M * H * sizeof *WD);
        for (i = 0; i < M; ++i)
            for (j = 0; j < H; ++j) WD[(size_t)i * H + j] = m->W1[(size_t)i * H + j] * (double)d[j];
        *J = naive_matmul(WD, m->W2, M, H, M);
        for (i = 0; i < M; ++i) {
            double a = m->h1[i];
            for (j = 0; j < H; ++j) a += WD[(size_t)i * H + j] * m->h2[j];
            (*c)[i] = a;
            (*J)[(size_t)i * M + i] += m->A[i];
        }
        free(WD);
    }
}

/* The inverse of B (n x n) by Gauss-Jordan with partial pivoting on
 * [B | I]: a new matrix, or NULL when a pivot is 0 or not finite. */
static double *naive_inverse(const double *B, int n) {
    int w = 2 * n, i, j, c;
    double *g = (double *)xmalloc((size_t)n * w * sizeof *g), *inv;
    for (i = 0; i < n; ++i) {
        for (j = 0; j < n; ++j) g[(size_t)i * w + j] = B[(size_t)i * n + j];
        for (j = 0; j < n; ++j) g[(size_t)i * w + n + j] = i == j ? 1.0 : 0.0;
    }
    for (j = 0; j < n; ++j) {
        int p = j;
        double best = fabs(g[(size_t)j * w + j]), piv;
        for (i = j + 1; i < n; ++i)
            if (fabs(g[(size_t)i * w + j]) > best) { best = fabs(g[(size_t)i * w + j]); p = i; }
        if (!(best > 0) || !isfinite(best)) { free(g); return NULL; }
        if (p != j)
            for (c = 0; c < w; ++c) { double t = g[(size_t)p * w + c]; g[(size_t)p * w + c] = g[(size_t)j * w + c]; g[(size_t)j * w + c] = t; }
        piv = g[(size_t)j * w + j];
        for (c = j; c < w; ++c) g[(size_t)j * w + c] /= piv;
        for (i = 0; i < n; ++i) {
            double f = g[(size_t)i * w + j];
            if (i == j || f == 0.0) continue;
            for (c = j; c < w; ++c) g[(size_t)i * w + c] -= f * g[(size_t)j * w + c];
        }
    }
    inv = (double *)xmalloc((size_t)n * n * sizeof *inv);
    for (i = 0; i < n; ++i)
        for (j = 0; j < n; ++j) inv[(size_t)i * n + j] = g[(size_t)i * w + n + j];
    free(g);
    return inv;
}

/* One candidate: for the guessed patterns D_1 .. D_k (k x R), the product
 * P = J_k ... J_1 (a new M x M array in *Pout) and the fixed point z_1 of
 * the k-step map into z1. Returns 1 when I - P is singular. */
static int naive_candidate(const naive_state *st, int k, const unsigned char *guess, double *z1, double **Pout) {
    int M = st->M, l, i, j;
    double *P = NULL, *v = NULL, *B, *inv, *z;
    for (l = 0; l < k; ++l) {
        double *J, *c;
        naive_region(st, guess + (size_t)l * st->R, &J, &c);
        if (l == 0) {
            P = J;
            v = c;
        } else {
            double *Pn = naive_matmul(J, P, M, M, M), *vn = naive_matmul(J, v, M, M, 1);
            for (i = 0; i < M; ++i) vn[i] += c[i];
            free(P); free(v); free(J); free(c);
            P = Pn;
            v = vn;
        }
    }
    B = (double *)xmalloc((size_t)M * M * sizeof *B);
    for (i = 0; i < M; ++i)
        for (j = 0; j < M; ++j) B[(size_t)i * M + j] = (i == j ? 1.0 : 0.0) - P[(size_t)i * M + j];
    inv = naive_inverse(B, M);
    free(B);
    *Pout = P;
    if (!inv) { free(v); return 1; }
    z = naive_matmul(inv, v, M, M, 1);
    memcpy(z1, z, (size_t)M * sizeof *z1);
    free(z); free(inv); free(v);
    return 0;
}

/* max |a - b| <= tol (1 + max |a|): the library's test. */
static int naive_same(const double *a, const double *b, int M, double tol) {
    double d = 0, na = 0;
    int i;
    for (i = 0; i < M; ++i) {
        if (fabs(a[i] - b[i]) > d) d = fabs(a[i] - b[i]);
        if (fabs(a[i]) > na) na = fabs(a[i]);
    }
    return d <= tol * (1 + na);
}

static int naive_finite(const double *x, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i)
        if (!(x[i] - x[i] == 0)) return 0;
    return 1;
}

static uint64_t naive_hash(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    size_t i;
    for (i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static void naive_random_guess(const naive_state *st, int k, unsigned char *g, naive_rng *r) {
    int l, i;
    for (l = 0; l < k; ++l) {
        unsigned char *d = g + (size_t)l * st->R;
        if (st->pool) {
            memcpy(d, st->pool + (size_t)(naive_u32(r) % (uint32_t)st->npool) * st->R, (size_t)st->R);
        } else {
            uint32_t w = 0;
            for (i = 0; i < st->R; ++i) {
                if (i % 32 == 0) w = naive_u32(r);
                d[i] = (unsigned char)((w >> (i % 32)) & 1u);
            }
        }
    }
}

/* The shallow model's pool, drawn as the library draws it: W_POOL points,
 * every other one further out (up to 100 x the range, log-uniform), short
 * trajectories (200 steps) from the first 20, the distinct patterns in the
 * order they first occur. */
static void naive_pool(naive_state *st) {
    int M = st->M, R = st->R, i, q, t;
    const int ntraj = W_POOL < 20 ? W_POOL : 20, steps = 200;
    long want = W_POOL + (long)ntraj * steps, nslots, *slot;
    double *z = (double *)xmalloc((size_t)M * sizeof *z), *z2 = (double *)xmalloc((size_t)M * sizeof *z2);
    unsigned char *pat = (unsigned char *)xmalloc((size_t)R);
    naive_rng rng;
    double t0 = now();
    for (nslots = 64; nslots < 2 * want; nslots *= 2) {}
    slot = (long *)xmalloc((size_t)nslots * sizeof *slot);
    for (i = 0; i < nslots; ++i) slot[i] = -1;
    st->pool = (unsigned char *)xmalloc((size_t)want * R);
    st->npool = 0;
    rng.key = (uint64_t)W_SEED ^ 0xD1B54A32D192ED03ULL;
    rng.ctr = 0;
    rng.left = 0;
    for (i = 0; i < W_POOL; ++i) {
        double scale = W_POOL_RANGE * (i % 2 ? exp(4.605170186 * ((double)naive_u32(&rng) + 0.5) / 4294967296.0) : 1.0);
        for (q = 0; q < M; ++q) z[q] = scale * (2.0 * ((double)naive_u32(&rng) + 0.5) / 4294967296.0 - 1.0);
        for (t = 0; t <= (i < ntraj ? steps : 0); ++t) {
            long h;
            naive_step(st, z, z2, pat);
            for (h = (long)(naive_hash(pat, (size_t)R) & (uint64_t)(nslots - 1)); slot[h] >= 0; h = (h + 1) & (nslots - 1))
                if (memcmp(st->pool + (size_t)slot[h] * R, pat, (size_t)R) == 0) break;
            if (slot[h] < 0) {
                slot[h] = st->npool;
                memcpy(st->pool + (size_t)st->npool * R, pat, (size_t)R);
                st->npool++;
            }
            if (!naive_finite(z2, (size_t)M)) break;
            memcpy(z, z2, (size_t)M * sizeof *z);
        }
    }
    free(slot); free(z); free(z2); free(pat);
    st->pool_seconds = now() - t0;
}

/* The search of order k, chain by chain, as described at the top. */
static void naive_search_order(const naive_state *st, int k, double budget, naive_order *o) {
    int M = st->M, R = st->R, fruitless = 0, found = 0;
    long chain;
    double t0 = now();
    double *cyc = (double *)xmalloc((size_t)W_MAX_CYCLES * k * M * sizeof *cyc);
    memset(o, 0, sizeof *o);
    o->ran = 1;
    for (chain = 0; fruitless < W_OUTER && found < W_MAX_CYCLES && !o->capped; ++chain) {
        naive_rng rng;
        unsigned char *guess = (unsigned char *)xmalloc((size_t)k * R);
        uint64_t recent[8];
        double **met_pts = NULL, **met_P = NULL; /* the cycles this chain met, new to it */
        int nmet = 0, step = 0, state = 0, fresh = 0, i;
        rng.key = (uint64_t)W_SEED ^ (0x9E3779B97F4A7C15ULL * (uint64_t)(k + 1));
        rng.ctr = (uint64_t)chain << 32;
        rng.left = 0;
        memset(recent, 0, sizeof recent);
        naive_random_guess(st, k, guess, &rng);
        while (state == 0) {
            double *z = (double *)xmalloc((size_t)(k + 1) * M * sizeof *z), *P = NULL;
            unsigned char *seen = (unsigned char *)xmalloc((size_t)k * R);
            int singular = naive_candidate(st, k, guess, z, &P), ok, l, consistent = 0;
            ++o->solves;
            o->singular += singular;
            ++step;
            ok = !singular && naive_finite(z, (size_t)M);
            if (ok) {
                for (l = 0; l < k; ++l) naive_step(st, z + (size_t)l * M, z + (size_t)(l + 1) * M, seen + (size_t)l * R);
                if (memcmp(seen, guess, (size_t)k * R) == 0 && naive_same(z, z + (size_t)k * M, M, 1e-6)) consistent = 1;
                else ok = naive_finite(z, (size_t)(k + 1) * M);
            }
            if (consistent) {
                /* kept when not a lower-order cycle repeated and new to the chain,
                 * which then counts its steps from 0 again */
                int keep = 1, d, c, p;
                for (d = 1; d < k && keep; ++d)
                    if (k % d == 0 && naive_same(z, z + (size_t)d * M, M, W_TOL)) keep = 0;
                for (c = 0; c < nmet && keep; ++c)
                    for (p = 0; p < k && keep; ++p)
                        if (naive_same(met_pts[c] + (size_t)p * M, z, M, W_TOL)) keep = 0;
                if (keep) {
                    met_pts = (double **)realloc(met_pts, (size_t)(nmet + 1) * sizeof *met_pts);
                    met_P = (double **)realloc(met_P, (size_t)(nmet + 1) * sizeof *met_P);
                    if (!met_pts || !met_P) { fprintf(stderr, "%s: out of memory\n", bench_prog); exit(1); }
                    met_pts[nmet] = z;
                    met_P[nmet] = P;
                    ++nmet;
                    z = P = NULL;
                    step = 0;
                }
                naive_random_guess(st, k, guess, &rng);
                if (step >= W_INNER) state = 2;
            } else if (step >= W_INNER) {
                state = 2;
            } else {
                if (ok) {
                    uint64_t h = naive_hash(seen, (size_t)k * R);
                    for (i = 0; i < 8 && recent[i] != h; ++i) {}
                    ok = i == 8;
                    recent[step % 8] = h;
                }
                if (ok) memcpy(guess, seen, (size_t)k * R);
                else naive_random_guess(st, k, guess, &rng); /* singular, overflowing or looping */
            }
            free(seen); free(P); free(z);
            if (o->solves >= 3 && now() - t0 > budget) {
                o->capped = 1;
                break;
            }
        }
        /* the chain's end, judged in order: the cycles it met that are new */
        for (i = 0; i < nmet && !o->capped; ++i) {
            int c, p, dup = 0;
            if (fresh + found >= W_MAX_CYCLES) break;
            for (c = 0; c < found + fresh && !dup; ++c)
                for (p = 0; p < k && !dup; ++p) dup = naive_same(cyc + ((size_t)c * k + p) * M, met_pts[i], M, W_TOL);
            if (dup) continue;
            {
                double *re = (double *)xmalloc((size_t)M * sizeof *re), *im = (double *)xmalloc((size_t)M * sizeof *im);
                prn_eigenvalues(st->ctx, M, met_P[i], re, im); /* the cycle's type, with the library's routine */
                free(re); free(im);
            }
            memcpy(cyc + (size_t)(found + fresh) * k * M, met_pts[i], (size_t)k * M * sizeof *cyc);
            ++fresh;
        }
        for (i = 0; i < nmet; ++i) { free(met_pts[i]); free(met_P[i]); }
        free(met_pts); free(met_P); free(guess);
        found += fresh;
        if (fresh) fruitless = 0;
        else ++fruitless;
    }
    o->cycles = found;
    o->seconds = now() - t0;
    free(cyc);
}

/* ------------------------------------------------------------------------
 * parrnn's side
 * ---------------------------------------------------------------------- */
typedef struct meas {
    int state;        /* 0 not run, 1 measured, 2 skipped, 3 failed */
    double seconds, solves;
    int counts[KTOP + 1];
    int num_cycles;
    char note[160];
} meas;

typedef struct naive_res {
    naive_order ord[KTOP + 1]; /* by order */
    double pool_seconds;
    int ran;
} naive_res;

static meas g_meas[NUM_KIND][NUM_M][MAX_BACKENDS][MAX_THR][NUM_CALLS];
static naive_res g_naive[NUM_KIND][NUM_M];
static const char *g_backends[MAX_BACKENDS];
static int g_num_backends = 0;
static int g_thr[MAX_THR], g_num_thr = 0;
static int g_warnings = 0;

typedef struct scyfi_call {
    prn_context *ctx;
    const prn_pwl_model *m;
    prn_scyfi_options opt;
    meas *out;
} scyfi_call;

/* The probe's batch (the workload's: a smaller one would save time, but
 * the order-10 difference must stand out of the run-to-run noise). */
static int probe_batch(int M) { (void)M; return W_BATCH; }

/* The options of call c for size M: the baseline (one chain of one step),
 * a probe (one step per chain, one batch of chains per order unless a
 * chain finds a new cycle) or the workload. */
static void call_options(prn_scyfi_options *o, int c, int M) {
    int type = g_call_type[c];
    memset(o, 0, sizeof *o);
    o->kmax = g_call_kmax[c];
    o->outer = type == 2 ? W_OUTER : 1;
    o->inner = type == 2 ? W_INNER : 1;
    o->batch = type == 0 ? 1 : type == 1 ? probe_batch(M) : W_BATCH;
    if (type == 1) o->pool_size = 1; /* the pool's time would swamp the probes' difference */
    o->seed = W_SEED;
    o->max_cycles = W_MAX_CYCLES;
}

static int run_scyfi(void *user) {
    scyfi_call *c = (scyfi_call *)user;
    prn_scyfi_result *r = NULL;
    prn_status st = prn_scyfi(c->ctx, c->m, &c->opt, &r);
    int j;
    if (st != PRN_OK) {
        snprintf(c->out->note, sizeof c->out->note, "prn_scyfi: %.30s (%.110s)", prn_status_string(st),
                 prn_last_error(c->ctx));
        return 1;
    }
    c->out->solves = r->solves;
    c->out->num_cycles = (int)r->num_cycles; /* a few hundred at most here */
    for (j = 0; j <= KTOP; ++j) c->out->counts[j] = (size_t)j <= r->kmax ? (int)r->count[j] : 0;
    prn_scyfi_free(c->ctx, r);
    return 0;
}

/* Calls of a second or more: the best of two (one from 5 s on); shorter
 * ones: bench_common's time_best. */
static int time_scyfi(scyfi_call *c) {
    double t = now(), t2;
    if (run_scyfi(c)) return 1;
    t = now() - t;
    if (t >= 1.0) {
        if (t < 5.0) {
            t2 = now();
            if (run_scyfi(c)) return 1;
            t2 = now() - t2;
            if (t2 < t) t = t2;
        }
        c->out->seconds = t;
        return 0;
    }
    return time_best(run_scyfi, c, &c->out->seconds);
}

static int work_call(int k) { return k == 1 ? C_W1 : k == 2 ? C_W2 : C_W10; }

static int m_wanted(int M) {
    if (M > g_max_m) return 0;
    if (g_quick) return M <= 10;
    return 1;
}

/* The time of one call predicted from the largest smaller M measured, by M^3. */
static double predict(int kind, int mi, int b, int t, int c) {
    int mj;
    for (mj = mi - 1; mj >= 0; --mj) {
        const meas *r = &g_meas[kind][mj][b][t][c];
        if (r->state == 1) {
            double f = (double)g_ms[mi] / (double)g_ms[mj];
            return r->seconds * f * f * f;
        }
        if (r->state == 2) return 1e300;
    }
    return 0.0;
}

/* The search of order k alone: the call with kmax = k minus the one with
 * kmax = k - 1 of the same options (k = 1: the workload minus the
 * baseline; k = 2: the workloads; k = 10: the probes). 0 when it cannot be
 * formed. */
static int order_diff(int kind, int mi, int b, int t, int k, double *sec, double *sol) {
    const meas *hi = &g_meas[kind][mi][b][t][k == 1 ? C_W1 : k == 2 ? C_W2 : C_P10];
    const meas *lo = &g_meas[kind][mi][b][t][k == 1 ? C_BASE : k == 2 ? C_W1 : C_P9];
    if (hi->state != 1 || lo->state != 1) return 0;
    *sec = hi->seconds - lo->seconds;
    *sol = hi->solves - lo->solves;
    return *sec > 0 && *sol > 0;
}

/* The naive search ran every order 1 .. k uncapped. */
static int naive_full(const naive_res *nv, int k) {
    int j;
    if (!nv->ran) return 0;
    for (j = 1; j <= k; ++j)
        if (!nv->ord[j].ran || nv->ord[j].capped) return 0;
    return 1;
}

static void naive_total(const naive_res *nv, int k, double *sec, long *solves) {
    int j;
    *sec = nv->pool_seconds;
    *solves = 0;
    for (j = 1; j <= k; ++j) {
        *sec += nv->ord[j].seconds;
        *solves += nv->ord[j].solves;
    }
}

/* Naive seconds per solve of order k / parrnn's: 0 when not measured. */
static double speedup_per_solve(int kind, int mi, int b, int t, int k, double *os, double *osol) {
    const naive_order *no = &g_naive[kind][mi].ord[k];
    if (!order_diff(kind, mi, b, t, k, os, osol) || !no->ran || no->solves <= 0) return 0.0;
    return (no->seconds / (double)no->solves) / (*os / *osol);
}

static void check_consistency(int kind, int mi, int b, int t) {
    int c, d, j, fb = 0, ft = 0, x, y;
    const meas *first = NULL;
    const meas *r = g_meas[kind][mi][b][t];
    /* the first measured (backend, threads) of this model is the yardstick */
    for (x = 0; x < g_num_backends && !first; ++x)
        for (y = 0; y < g_num_thr && !first; ++y)
            if (!(x == b && y == t) && g_meas[kind][mi][x][y][C_W1].state == 1) {
                first = g_meas[kind][mi][x][y];
                fb = x;
                ft = y;
            }
    for (c = 0; c < NUM_CALLS; ++c) {
        if (r[c].state != 1) continue;
        if (first && first[c].state == 1) {
            int same = first[c].solves == r[c].solves;
            for (j = 0; j <= KTOP; ++j) same &= first[c].counts[j] == r[c].counts[j];
            if (!same) {
                printf("  WARNING: %s M=%d %s kmax=%d: %s/%d threads: %.0f solves, %d cycles; %s/%d threads: "
                       "%.0f solves, %d cycles (expected the same)\n",
                       g_kind_names[kind], g_ms[mi], g_call_type[c] == 2 ? "workload" : "probe", g_call_kmax[c],
                       g_backends[b], g_thr[t], r[c].solves, r[c].num_cycles, g_backends[fb], g_thr[ft],
                       first[c].solves, first[c].num_cycles);
                ++g_warnings;
            }
        }
        /* a smaller kmax of the same options: the same orders below */
        for (d = 0; d < c; ++d) {
            int same;
            if (g_call_type[d] != g_call_type[c] || r[d].state != 1 || g_call_kmax[d] >= g_call_kmax[c]) continue;
            same = r[d].solves <= r[c].solves;
            for (j = 1; j <= g_call_kmax[d]; ++j) same &= r[d].counts[j] == r[c].counts[j];
            if (!same) {
                printf("  WARNING: %s M=%d %s/%d threads: %s kmax=%d and kmax=%d disagree on the orders below "
                       "(solves %.0f vs %.0f)\n",
                       g_kind_names[kind], g_ms[mi], g_backends[b], g_thr[t], g_call_type[c] == 2 ? "workload" : "probe",
                       g_call_kmax[d], g_call_kmax[c], r[d].solves, r[c].solves);
                ++g_warnings;
            }
        }
    }
}

/* Compares the naive search's cycles per order with parrnn's workload
 * (where the naive one ran every order uncapped: the same chains). */
static void compare_naive(int kind, int mi, int b, int t) {
    int kk, j;
    const naive_res *nv = &g_naive[kind][mi];
    for (kk = 0; kk < NUM_K; ++kk) {
        int k = g_ks[kk];
        const meas *r = &g_meas[kind][mi][b][t][work_call(k)];
        long nsol;
        double ns;
        if (!naive_full(nv, k) || r->state != 1) continue;
        for (j = (kk > 0 ? g_ks[kk - 1] + 1 : 1); j <= k; ++j)
            if (nv->ord[j].cycles != r->counts[j]) {
                printf("  WARNING: %s M=%d order %d: parrnn (%s, %d threads) found %d cycles, the naive search %d "
                       "(the same chains; rounding may differ near region borders)\n",
                       g_kind_names[kind], g_ms[mi], j, g_backends[b], g_thr[t], r->counts[j], nv->ord[j].cycles);
                ++g_warnings;
            }
        naive_total(nv, k, &ns, &nsol);
        if ((double)nsol > r->solves) {
            printf("  WARNING: %s M=%d k=%d: the naive search solved %ld systems, parrnn (%s, %d threads) %.0f "
                   "(parrnn judges the same chains and solves some ahead: expected at least as many)\n",
                   g_kind_names[kind], g_ms[mi], k, nsol, g_backends[b], g_thr[t], r->solves);
            ++g_warnings;
        }
    }
}

static void fmt_num(char *buf, size_t n, double v, int ok) {
    if (ok) snprintf(buf, n, "%.4g", v);
    else snprintf(buf, n, "-");
}

static void print_header(void) {
    printf("\n  %-8s %4s %5s %3s %-10s %3s | %9s %6s %9s | %9s %5s %9s | %9s %8s %8s  %s\n", "model", "M", "H", "k",
           "backend", "thr", "seconds", "solves", "us/solve", "order-k s", "solv", "us/solve", "naive us", "x/solve",
           "x total", "cycles (order k)");
}

static void print_row(int kind, int mi, int b, int t, int kk) {
    int k = g_ks[kk], H = kind ? 2 * g_ms[mi] : 0;
    const meas *w = &g_meas[kind][mi][b][t][work_call(k)];
    const meas *p = &g_meas[kind][mi][b][t][k == 10 ? C_P10 : C_BASE];
    const naive_res *nv = &g_naive[kind][mi];
    const naive_order *no = &nv->ord[k];
    double os = 0, osol = 0, ns = 0, sp;
    long nsol = 0;
    int have_ord, have_naive, full;
    char s0[32], s00[32], s1[32], s2[32], s3[32], s4[32], s5[32], s6[32], s7[32], s8[40];
    if (p->state == 0 && w->state == 0) return; /* not run */
    if (p->state != 1 && w->state != 1) {
        printf("  %-8s %4d %5d %3d %-10s %3d | %s\n", g_kind_names[kind], g_ms[mi], H, k, g_backends[b], g_thr[t],
               p->note[0] ? p->note : w->note);
        return;
    }
    have_ord = order_diff(kind, mi, b, t, k, &os, &osol);
    sp = speedup_per_solve(kind, mi, b, t, k, &os, &osol);
    have_naive = no->ran && no->solves > 0;
    full = naive_full(nv, k) && w->state == 1;
    if (full) naive_total(nv, k, &ns, &nsol);
    fmt_num(s0, sizeof s0, w->seconds, w->state == 1);
    fmt_num(s00, sizeof s00, w->solves, w->state == 1);
    fmt_num(s1, sizeof s1, 1e6 * w->seconds / w->solves, w->state == 1 && w->solves > 0);
    fmt_num(s2, sizeof s2, os, have_ord);
    fmt_num(s3, sizeof s3, osol, have_ord);
    fmt_num(s4, sizeof s4, 1e6 * os / osol, have_ord);
    fmt_num(s5, sizeof s5, 1e6 * no->seconds / (double)no->solves, have_naive);
    fmt_num(s6, sizeof s6, sp, sp > 0);
    fmt_num(s7, sizeof s7, ns / w->seconds, full);
    if (w->state == 1) snprintf(s8, sizeof s8, "%d (%d)", w->num_cycles, w->counts[k]);
    else snprintf(s8, sizeof s8, "workload %.30s", w->note);
    printf("  %-8s %4d %5d %3d %-10s %3d | %9s %6s %9s | %9s %5s %9s | %8s%s %8s %8s  %s\n", g_kind_names[kind],
           g_ms[mi], H, k, g_backends[b], g_thr[t], s0, s00, s1, s2, s3, s4, s5, have_naive && no->capped ? "*" : " ",
           s6, s7, s8);
    fflush(stdout);
}

static void run_naive(int kind, int mi, const bench_model *bm, prn_context *ectx) {
    naive_state st;
    naive_res *nv = &g_naive[kind][mi];
    int kk, j;
    double budget = g_naive_budget >= 0 ? g_naive_budget : (g_quick ? 0.2 : 2.0);
    memset(&st, 0, sizeof st);
    st.m = &bm->m;
    st.ctx = ectx;
    st.M = (int)bm->m.M;
    st.R = (int)(kind ? bm->m.H : bm->m.M);
    if (kind) naive_pool(&st);
    nv->pool_seconds = st.pool_seconds;
    nv->ran = 1;
    for (kk = 0; kk < NUM_K; ++kk) {
        int k = g_ks[kk];
        double ts;
        long tsol;
        /* order k first: its time per solve is what is compared */
        if (!nv->ord[k].ran) naive_search_order(&st, k, budget, &nv->ord[k]);
        for (j = 1; j < k && !nv->ord[k].capped; ++j)
            if (!nv->ord[j].ran) naive_search_order(&st, j, budget, &nv->ord[j]);
        printf("  %-8s %4d %5d %3d %-10s %3d  order %d alone: %.4g s, %ld solves, %.4g us/solve%s, %d cycles", "naive",
               st.M, kind ? (int)bm->m.H : 0, k, "naive", 1, k, nv->ord[k].seconds, nv->ord[k].solves,
               1e6 * nv->ord[k].seconds / (double)nv->ord[k].solves, nv->ord[k].capped ? " (capped)" : "",
               nv->ord[k].cycles);
        if (naive_full(nv, k)) {
            naive_total(nv, k, &ts, &tsol);
            printf("; orders 1..%d%s: %.4g s, %ld solves", k, kind ? " with the pool" : "", ts, tsol);
        }
        printf("\n");
        fflush(stdout);
    }
    free(st.pool);
}

static bench_model g_tiny; /* the warm-up model */

static int bench_model_all(int kind, int mi) {
    bench_model bm;
    int b, t, ci, kk, rc = 0;
    char err[512];
    prn_context *ectx = NULL;
    prn_config cfg;
    model_make(&bm, kind, g_ms[mi], 1000 + (uint64_t)g_ms[mi] + 100000 * (uint64_t)kind);
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = "reference";
    cfg.num_threads = 1;
    if (prn_context_create(&cfg, &ectx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "%s: prn_context_create: %s\n", bench_prog, err);
        model_free(&bm);
        return 1;
    }
    if (prn_pwl_check(ectx, &bm.m) != PRN_OK) {
        fprintf(stderr, "%s: prn_pwl_check: %s\n", bench_prog, prn_last_error(ectx));
        prn_context_free(ectx);
        model_free(&bm);
        return 1;
    }
#if defined(PARRNN_USE_CBLAS) && defined(OPENBLAS_VERSION)
    openblas_set_num_threads(1);
#endif
    if (!g_no_naive) run_naive(kind, mi, &bm, ectx);
    for (b = 0; b < g_num_backends; ++b)
        for (t = 0; t < g_num_thr; ++t) {
            prn_context *ctx = NULL;
            scyfi_call c;
            meas warm;
            /* Device backends at the larger thread count only (the host builds
             * the systems, the device solves them). */
            if (bench_is_device(g_backends[b]) && g_num_thr > 1 && t == 0) continue;
            memset(&cfg, 0, sizeof cfg);
            cfg.backend = g_backends[b];
            cfg.num_threads = g_thr[t];
            cfg.seed = 1;
#ifdef _OPENMP
            omp_set_num_threads(g_thr[t]);
#endif
#if defined(PARRNN_USE_CBLAS) && defined(OPENBLAS_VERSION)
            openblas_set_num_threads(g_thr[t]); /* SCYFI's products at large M are CBLAS's */
#endif
            if (prn_context_create(&cfg, &ctx, err, sizeof err) != PRN_OK) {
                for (ci = 0; ci < NUM_CALLS; ++ci) {
                    g_meas[kind][mi][b][t][ci].state = 2;
                    snprintf(g_meas[kind][mi][b][t][ci].note, sizeof g_meas[kind][mi][b][t][ci].note,
                             "skipped: no context: %.120s", err);
                }
                continue;
            }
            /* warm-up on a tiny model (kernel builds, first allocations) */
            memset(&c, 0, sizeof c);
            memset(&warm, 0, sizeof warm);
            c.ctx = ctx;
            c.m = &g_tiny.m;
            c.out = &warm;
            call_options(&c.opt, C_W2, 2);
            if (run_scyfi(&c)) {
                for (ci = 0; ci < NUM_CALLS; ++ci) {
                    g_meas[kind][mi][b][t][ci].state = 3;
                    snprintf(g_meas[kind][mi][b][t][ci].note, sizeof g_meas[kind][mi][b][t][ci].note,
                             "FAILED: %.140s", warm.note);
                }
                prn_context_free(ctx);
                rc = 1;
                continue;
            }
            c.m = &bm.m;
            for (ci = 0; ci < NUM_CALLS; ++ci) {
                meas *r = &g_meas[kind][mi][b][t][ci];
                double pred = predict(kind, mi, b, t, ci);
                if (pred > g_time_budget) {
                    r->state = 2;
                    if (pred >= 1e300) snprintf(r->note, sizeof r->note, "skipped: skipped at a smaller M");
                    else snprintf(r->note, sizeof r->note, "skipped: predicted %.3g s per call (--time-budget %g)",
                                  pred, g_time_budget);
                    continue;
                }
                c.out = r;
                call_options(&c.opt, ci, g_ms[mi]);
                if (time_scyfi(&c)) {
                    char note[160];
                    snprintf(note, sizeof note, "FAILED: %.140s", r->note);
                    memcpy(r->note, note, sizeof note);
                    r->state = 3;
                    rc = 1;
                    continue;
                }
                r->state = 1;
            }
            prn_context_free(ctx);
            for (kk = 0; kk < NUM_K; ++kk) print_row(kind, mi, b, t, kk);
            check_consistency(kind, mi, b, t);
            if (!g_no_naive) compare_naive(kind, mi, b, t);
        }
#ifdef _OPENMP
    omp_set_num_threads(g_threads);
#endif
    prn_context_free(ectx);
    model_free(&bm);
    return rc;
}

static void print_bench_lines(void) {
    int kind, mi, b, t, kk;
    for (kind = 0; kind < NUM_KIND; ++kind)
        for (mi = 0; mi < NUM_M; ++mi)
            for (kk = 0; kk < NUM_K; ++kk) {
                int k = g_ks[kk], M = g_ms[mi], H = kind ? 2 * M : 0, full;
                const naive_res *nv = &g_naive[kind][mi];
                const naive_order *no = &nv->ord[k];
                double ns = 0;
                long nsol = 0;
                if (!m_wanted(M)) continue;
                full = naive_full(nv, k);
                if (full) naive_total(nv, k, &ns, &nsol);
                if (no->ran && no->solves > 0) {
                    printf("BENCH name=scyfi_naive model=%s backend=naive threads=1 M=%d H=%d k=%d outer=%d inner=%d "
                           "seconds=%.6g solves=%ld us_per_solve=%.6g capped=%d cycles_k=%d",
                           g_kind_names[kind], M, H, k, W_OUTER, W_INNER, no->seconds, no->solves,
                           1e6 * no->seconds / (double)no->solves, no->capped, no->cycles);
                    if (full) printf(" total_seconds=%.6g total_solves=%ld", ns, nsol);
                    printf("\n");
                }
                for (b = 0; b < g_num_backends; ++b)
                    for (t = 0; t < g_num_thr; ++t) {
                        const meas *w = &g_meas[kind][mi][b][t][work_call(k)];
                        double os, osol, sp = speedup_per_solve(kind, mi, b, t, k, &os, &osol);
                        if (order_diff(kind, mi, b, t, k, &os, &osol)) {
                            printf("BENCH name=scyfi_order model=%s backend=%s threads=%d M=%d H=%d k=%d outer=%d "
                                   "inner=%d batch=%d seconds=%.6g solves=%.0f us_per_solve=%.6g",
                                   g_kind_names[kind], g_backends[b], g_thr[t], M, H, k, k == 10 ? 1 : W_OUTER,
                                   k == 10 ? 1 : W_INNER, k == 10 ? probe_batch(M) : W_BATCH, os, osol, 1e6 * os / osol);
                            if (sp > 0)
                                printf(" naive_us_per_solve=%.6g speedup_vs_naive=%.6g",
                                       1e6 * no->seconds / (double)no->solves, sp);
                            printf("\n");
                        }
                        if (w->state != 1) continue;
                        printf("BENCH name=scyfi model=%s backend=%s threads=%d M=%d H=%d k=%d outer=%d inner=%d "
                               "batch=%d seconds=%.6g solves=%.0f us_per_solve=%.6g",
                               g_kind_names[kind], g_backends[b], g_thr[t], M, H, k, W_OUTER, W_INNER, W_BATCH,
                               w->seconds, w->solves, w->solves > 0 ? 1e6 * w->seconds / w->solves : 0.0);
                        if (sp > 0) printf(" speedup_vs_naive=%.6g", sp);
                        if (full) printf(" naive_seconds=%.6g speedup_total_vs_naive=%.6g", ns, ns / w->seconds);
                        printf(" cycles=%d cycles_k=%d\n", w->num_cycles, w->counts[k]);
                    }
            }
}

/* The backends: --backend, or "reference" and every device backend built in
 * whose context can be created. */
static void pick_backends(void) {
    const char *names[16];
    int n = prn_backend_list(NULL, names, 16), i;
    if (g_only_backend) {
        g_backends[g_num_backends++] = g_only_backend;
        printf("  backends:  %s (--backend)\n", g_only_backend);
        return;
    }
    g_backends[g_num_backends++] = "reference";
    for (i = 0; i < n && i < 16 && g_num_backends < MAX_BACKENDS; ++i) {
        prn_config cfg;
        prn_context *ctx = NULL;
        char err[512];
        if (!bench_is_device(names[i])) continue;
        memset(&cfg, 0, sizeof cfg);
        cfg.backend = names[i];
        if (prn_context_create(&cfg, &ctx, err, sizeof err) == PRN_OK) {
            printf("  device:    backend %s: its solve_batched solves the candidates (host builds them)\n", names[i]);
            g_backends[g_num_backends++] = names[i];
            prn_context_free(ctx);
        } else {
            printf("  device:    backend %s skipped: %s\n", names[i], err);
        }
    }
#ifndef PARRNN_WITH_OPENCL
    printf("  opencl:    not built in (the Makefile builds it where the OpenCL headers, ICD loader and CLBlast are)\n");
#endif
#ifndef PARRNN_WITH_CUDA
    printf("  cuda:      not built in (make cuda, then build-cuda/bench/bench_scyfi)\n");
#endif
    printf("  backends:  ");
    for (i = 0; i < g_num_backends; ++i) printf("%s%s", i ? ", " : "", g_backends[i]);
    printf(" (reference-noblas only with --backend: SCYFI's solves and products are the same as reference's)\n");
}

static int usage(void) {
    fprintf(stderr, "usage: bench_scyfi [--quick] [--threads N] [--backend NAME] [--max-m N] [--naive-budget S]\n"
                    "                   [--no-naive] [--time-budget S]\n");
    return 2;
}

static int parse_double(const char *s, double lo, double *v) {
    char *end;
    double d = strtod(s, &end);
    if (end == s || *end || !(d >= lo) || !isfinite(d)) return 1;
    *v = d;
    return 0;
}

int main(int argc, char **argv) {
    char *args[64], model[256];
    int nargs = 0, i, kind, mi, rc = 0, threads;
    double t_start = now(), v;
    cpu_sample run_start;
    bench_prog = "bench_scyfi";
    (void)probe_triad;
    (void)bench_device_context;

    args[nargs++] = argv[0];
    for (i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            g_only_backend = argv[++i];
        } else if (strcmp(argv[i], "--max-m") == 0 && i + 1 < argc) {
            if (parse_double(argv[++i], 1, &v)) return usage();
            g_max_m = (int)v;
        } else if (strcmp(argv[i], "--naive-budget") == 0 && i + 1 < argc) {
            if (parse_double(argv[++i], 0, &g_naive_budget)) return usage();
        } else if (strcmp(argv[i], "--time-budget") == 0 && i + 1 < argc) {
            if (parse_double(argv[++i], 0, &g_time_budget)) return usage();
        } else if (strcmp(argv[i], "--no-naive") == 0) {
            g_no_naive = 1;
        } else if (nargs < 63) {
            args[nargs++] = argv[i];
        } else {
            return usage();
        }
    }
    args[nargs] = NULL;
    if (bench_parse_args(nargs, args)) return usage();
    threads = g_threads;
    g_thr[g_num_thr++] = 1;
    if (threads > 1) g_thr[g_num_thr++] = threads;
    if (g_quick) {
        g_repeats = 3;
        g_min_sample = 0.01;
        g_budget = 0.2;
    } else {
        g_repeats = 5;
        g_budget = 1.0;
    }
    model_make(&g_tiny, 0, 2, 7);

    cpu_model(model, sizeof model);
    printf("bench_scyfi: parrnn %s, %s mode\n", PARRNN_VERSION_STRING, g_quick ? "quick" : "full");
    printf("  cpu:       %s\n", model);
    bench_print_threads("1 and ", threads, "", "");
    bench_print_compiler();
    bench_print_cblas();
    pick_backends();
    printf("  workload:  prn_scyfi with kmax = k: outer %d, inner %d, batch %d, max_cycles %d, seed %d (f64)\n",
           W_OUTER, W_INNER, W_BATCH, W_MAX_CYCLES, W_SEED);
    printf("  models:    plrnn: A ~ U(0.3, 0.9), W ~ N(0, %g^2/M) with a zero diagonal, h ~ N(0, 1);\n"
           "             shplrnn: H = 2M, A ~ U(0.3, 0.9), W1 ~ N(0, %g^2/H), W2 ~ N(0, 1/M), h1, h2 ~ N(0, 1)\n",
           WSCALE, WSCALE);
    if (g_no_naive) printf("  naive:     skipped (--no-naive)\n");
    else
        printf("  naive:     one thread; an order stops after %g s once it has 3 solves (capped)\n",
               g_naive_budget >= 0 ? g_naive_budget : (g_quick ? 0.2 : 2.0));
    printf("  budgets:   max M %d; a call predicted (M^3) to take more than %g s is skipped (--time-budget)\n",
           g_quick && g_max_m > 10 ? 10 : g_max_m, g_time_budget);
    bench_report_idle();
    run_start = cpu_sample_now();

    printf("\nseconds: one prn_scyfi call with kmax = k (orders 1 .. k); us/solve = seconds / solves.\n"
           "order-k: the search of order k alone, a difference of two calls: k = 1: the workload minus a baseline\n"
           "call (outer = inner = batch = 1: setup, pool, one solve); k = 2: the workloads with kmax 2 and 1;\n"
           "k = 10: probes (outer = inner = 1, batch 8, pool_size 1) with kmax 10 and 9.\n"
           "naive us: the naive search of order k, us per solve (* capped by --naive-budget).\n"
           "x/solve = naive us / order-k us/solve; x total = the naive search of orders 1 .. k (the same\n"
           "chains, no solves ahead; with its pool) / seconds, where it ran uncapped.\n"
           "cycles: all orders (order k).\n");
    print_header();
    for (kind = 0; kind < NUM_KIND; ++kind)
        for (mi = 0; mi < NUM_M; ++mi) {
            if (!m_wanted(g_ms[mi])) continue;
            if (bench_model_all(kind, mi)) rc = 1;
        }
    model_free(&g_tiny);
    printf("\n");
    print_background("during the measurements", cpu_background(run_start, cpu_sample_now()));
    printf("  %d warning%s\n\n", g_warnings, g_warnings == 1 ? "" : "s");
    print_bench_lines();
    printf("\nbench_scyfi: done in %.1f s\n", now() - t_start);
    return rc;
}
