/* The MPI layer (backends/parrnn_mpi.h) against the single-process
 * functions. Every rank builds the whole problem from the same
 * deterministic data, solves it alone with prn_scan_diag / prn_scan_block /
 * prn_deer / prn_deer_rnn / prn_scyfi, and compares its own slice of the
 * distributed result with it:
 *  - sequence-parallel scans: diagonal, block (k = 1, 2, 4) and dense
 *    (k = C = 8); forward and reverse; f64 and f32; [B, T, C] and [T, C];
 *    h0 absent, given on the starting rank only, or given everywhere with
 *    other values off the starting rank (ignored there); the final state
 *    on every rank;
 *  - splits: even (prn_mpi_split), unequal, empty slices (the first rank,
 *    every other rank, all but the last one) and T below the rank count;
 *  - backward through the scans: a's and b's slices and h0 on the starting
 *    rank, empty slices included;
 *  - DEER: a GRU (prn_mpi_deer_rnn) and a user tanh cell (prn_mpi_deer),
 *    dense and diagonal Jacobians, statistics alike on every rank, the
 *    gradients of the parameters (summed by prn_mpi_allreduce_grads), of
 *    x's slices and of state0; not converging, with and without fall-back;
 *  - prn_mpi_allreduce_grads (sum, mean, NULL gradients), prn_mpi_broadcast;
 *  - SCYFI across ranks: the cycles of prn_scyfi, in its order;
 *  - failures: one rank's bad input, failing callback or mismatched shape
 *    makes every rank fail (PRN_ERR_REMOTE naming it elsewhere), none
 *    hangs, and the communicator works afterwards; prn_mpi_agree;
 *  - options or a model that differ on one rank (prn_mpi_scyfi's kmax,
 *    seed, batch, model, exhaustive; prn_mpi_deer_rnn's max_iter and
 *    no_fallback; a scan's direction): every rank fails with
 *    PRN_ERR_SHAPE, none hangs.
 *
 * Run it as mpirun -np N build/tests/test_mpi (N = 1, 2, 4, ...). Rank 0
 * prints the results and the summary line. A check that fails on any rank
 * fails the test: the failure counts are summed over the ranks before a
 * test is called passed, and the other ranks print their failed checks on
 * stderr, tagged with the rank. A test that hangs is ended by an alarm
 * (PRNT_MPI_TIMEOUT seconds, default 120), which names it and ends the
 * job without a summary (so tests/run.sh counts a failure). */
#define _POSIX_C_SOURCE 200809L /* alarm */
#include "parrnn.h"
#include "backends/parrnn_mpi.h"
#include "prn_test.h"
#include <signal.h>
#include <unistd.h>

static prn_context *g_ctx;
static prn_mpi *g_mpi;
static int g_rank, g_size;
static int g_quick; /* PRNT_QUICK: fewer cases */
static int g_slow;  /* a backend other than the reference: fewer cases */
static FILE *g_out; /* this rank's failed checks: stdout on rank 0, stderr elsewhere */

/* prn_test.h's check, tagged with the rank and printed where this rank may
 * print (the first 12 failures of a test on a rank; all are counted). */
#undef PRNT_CHECK
#define PRNT_CHECK(cond, ...)                                                                          \
    do {                                                                                               \
        if (!(cond) && ++prnt_cur_failed <= 12) {                                                      \
            char prnt_m_[1400];                                                                        \
            int prnt_n_ = snprintf(prnt_m_, 400, "    [rank %d] check failed %s:%d: %s: ", g_rank,     \
                                   __FILE__, __LINE__, #cond);                                         \
            if (prnt_n_ < 0 || prnt_n_ > 399) prnt_n_ = 399;                                           \
            snprintf(prnt_m_ + prnt_n_, sizeof prnt_m_ - (size_t)prnt_n_, __VA_ARGS__);                \
            fprintf(g_out, "%s\n", prnt_m_); /* one write: ranks' lines do not interleave */          \
            fflush(g_out);                                                                             \
        }                                                                                              \
    } while (0)

/* --- running a test on every rank ------------------------------------------------------- */
static char g_alarm_msg[160];
static void on_alarm(int sig) {
    (void)sig;
    if (write(2, g_alarm_msg, strlen(g_alarm_msg)) < 0) _exit(3);
    _exit(3); /* mpirun ends the other ranks */
}

/* 1 on every rank when ok is set on every rank. The test's own collective
 * steps (a backward, an allreduce) go ahead only then, so that a failure
 * on one rank cannot leave the others waiting in them. Plain MPI, not the
 * layer under test. */
static int all_ok(int ok) {
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all;
}

/* PRNT_RUN for SPMD tests: runs fn on every rank, checks that it left no
 * tensor alive and nothing on the tape, then sums the failed checks over
 * the ranks; rank 0 reports, naming the ranks where checks failed. */
static void run_test(void (*fn)(void), const char *name) {
    size_t live0 = prn_live_tensors(g_ctx);
    int mine[2], *all = (int *)calloc((size_t)g_size * 2, sizeof(int)), r, failed = 0, skipped = 0;
    const char *t = getenv("PRNT_MPI_TIMEOUT");
    snprintf(g_alarm_msg, sizeof g_alarm_msg, "test_mpi: rank %d: %s did not finish in time (a hang?)\n", g_rank, name);
    signal(SIGALRM, on_alarm);
    alarm(t && atoi(t) > 0 ? (unsigned)atoi(t) : 120u);
    prnt_cur_failed = 0;
    prnt_cur_skipped = 0;
    fn();
    PRNT_CHECK(prn_tape_size(g_ctx) == 0, "%s left %lu records on the tape", name, (unsigned long)prn_tape_size(g_ctx));
    prn_tape_clear(g_ctx);
    PRNT_CHECK(prn_live_tensors(g_ctx) == live0, "%s: live tensors %lu before, %lu after", name, (unsigned long)live0,
               (unsigned long)prn_live_tensors(g_ctx));
    mine[0] = prnt_cur_failed;
    mine[1] = prnt_cur_skipped;
    MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
    alarm(0);
    for (r = 0; r < g_size; ++r) {
        failed += all[2 * r];
        skipped |= all[2 * r + 1];
    }
    if (failed) {
        prnt_failed++;
        printf("FAIL %s (failed checks by rank:", name);
        for (r = 0; r < g_size; ++r)
            if (all[2 * r]) printf(" %d:%d", r, all[2 * r]);
        printf(")\n");
    } else if (skipped) {
        prnt_skipped++;
        printf("skip %s\n", name);
    } else {
        prnt_passed++;
        printf("ok   %s\n", name);
    }
    fflush(stdout);
    free(all);
}
#define PRNT_MPI_RUN(fn) run_test(fn, #fn)

/* --- data and comparisons ---------------------------------------------------------------- */
/* xorshift64: the same numbers on every rank, independent of the library */
static uint64_t g_rs;
static void rng_seed(uint64_t s) { g_rs = s * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull; }
static double urand(void) {
    g_rs ^= g_rs << 13; g_rs ^= g_rs >> 7; g_rs ^= g_rs << 17;
    return (double)(g_rs >> 11) * (1.0 / 9007199254740992.0);
}
static double uni(double lo, double hi) { return lo + (hi - lo) * urand(); }
/* n numbers uniform in [lo, hi), rounded to float for f32 data so that the
 * reference and the distributed computation see the same values */
static double *rand_vec(size_t n, double lo, double hi, prn_dtype dt) {
    double *v = (double *)malloc((n ? n : 1) * sizeof *v);
    size_t i;
    for (i = 0; i < n; ++i) {
        v[i] = uni(lo, hi);
        if (dt == PRN_F32) v[i] = (double)(float)v[i];
    }
    return v;
}

/* A new tensor holding v (numel doubles); requires grad when rg. */
static prn_tensor *tensor_of(prn_dtype dt, int nd, const size_t *shape, const double *v, int rg) {
    prn_tensor *t = NULL;
    prn_status st = prn_tensor_create(g_ctx, dt, nd, shape, &t);
    if (st == PRN_OK && prn_tensor_numel(t)) st = prnt_upload_f64(t, (double *)v);
    if (st == PRN_OK && rg) st = prn_tensor_set_requires_grad(t, 1);
    PRNT_CHECK(st == PRN_OK, "making a tensor: %s", prn_last_error(g_ctx));
    if (st != PRN_OK) { prn_tensor_free(t); t = NULL; }
    return t;
}
static prn_tensor *tensor3(prn_dtype dt, size_t d0, size_t d1, size_t d2, const double *v, int rg) {
    size_t s[3];
    s[0] = d0; s[1] = d1; s[2] = d2;
    return tensor_of(dt, 3, s, v, rg);
}
static prn_tensor *tensor2(prn_dtype dt, size_t d0, size_t d1, const double *v, int rg) {
    size_t s[2];
    s[0] = d0; s[1] = d1;
    return tensor_of(dt, 2, s, v, rg);
}
/* t's values as doubles (calloc'd; zeros when t is NULL) */
static double *host_of(const prn_tensor *t) {
    size_t n = t ? prn_tensor_numel(t) : 0;
    double *v = (double *)calloc(n ? n : 1, sizeof *v);
    if (n) prnt_download_f64(t, v);
    return v;
}
/* t's gradient as numel(t) doubles (calloc'd; zeros when it has none) */
static double *grad_of(const prn_tensor *t) {
    const prn_tensor *g = t ? prn_tensor_grad(t) : NULL;
    size_t n = t ? prn_tensor_numel(t) : 0;
    double *v = (double *)calloc(n ? n : 1, sizeof *v);
    if (g && n && prn_tensor_numel(g) == n) prnt_download_f64(g, v);
    return v;
}
/* rows start .. start+len-1 of v viewed as [B, T, inner]: [B, len, inner] */
static double *rows_of(const double *v, size_t B, size_t T, size_t inner, size_t start, size_t len) {
    size_t total = B * len * inner;
    double *s = (double *)malloc((total ? total : 1) * sizeof *s);
    size_t n;
    for (n = 0; n < B; ++n) memcpy(s + n * len * inner, v + (n * T + start) * inner, len * inner * sizeof *s);
    return s;
}
/* largest |got - want| over the rows start.. of want [B, T, inner], got
 * being their slice [B, len, inner], relative to scale (NaN: infinite) */
static double rows_err(const double *got, const double *want, size_t B, size_t T, size_t inner, size_t start, size_t len,
                       double scale) {
    double m = 0;
    size_t n, i;
    for (n = 0; n < B; ++n)
        for (i = 0; i < len * inner; ++i) {
            double d = fabs(got[n * len * inner + i] - want[(n * T + start) * inner + i]) / scale;
            if (!(d <= m)) m = d == d ? d : HUGE_VAL;
        }
    return m;
}
/* max(1, largest |v|): errors are measured relative to the sequence's scale */
static double scale_of(const double *v, size_t n) {
    double m = 1;
    size_t i;
    for (i = 0; i < n; ++i)
        if (fabs(v[i]) > m) m = fabs(v[i]);
    return m;
}
static double max_err(const double *got, const double *want, size_t n, double scale) {
    return rows_err(got, want, 1, 1, n, 0, 1, scale);
}
/* A gradient (NULL: zeros) against want, relative to want's largest value. */
static double grad_err(const prn_tensor *t, const double *want, size_t n) {
    double *g = grad_of(t), e, s = 1e-30;
    size_t i;
    for (i = 0; i < n; ++i)
        if (fabs(want[i]) > s) s = fabs(want[i]);
    e = max_err(g, want, n, s > 1e-30 ? s : 1);
    free(g);
    return e;
}
static int all_zero_or_null(const prn_tensor *g) {
    double *v = host_of(g);
    size_t i, n = g ? prn_tensor_numel(g) : 0;
    int z = 1;
    for (i = 0; i < n; ++i) z &= v[i] == 0;
    free(v);
    return z;
}
static int has_shape(const prn_tensor *t, int nd, size_t d0, size_t d1, size_t d2) {
    size_t d[3];
    int i;
    d[0] = d0; d[1] = d1; d[2] = d2;
    if (!t || prn_tensor_ndim(t) != nd) return 0;
    for (i = 0; i < nd; ++i)
        if (prn_tensor_dim(t, i) != d[i]) return 0;
    return 1;
}

/* --- splits ------------------------------------------------------------------------------- */
/* How a sequence of T steps is cut over the ranks. */
enum {
    L_EVEN,        /* prn_mpi_split's even split                                   */
    L_UNEQUAL,     /* lengths in proportion 1 : 7 : 3 : 5 : 2 : 6 : 4 ...          */
    L_EMPTY_FIRST, /* rank 0 holds nothing (h0 still lives there)                  */
    L_EMPTY_ODD,   /* ranks 1, 3, ... hold nothing (with 2 ranks: the last one)    */
    L_LAST_ONLY,   /* the whole sequence on the last rank                          */
    L_COUNT
};
static const char *layout_name[] = {"even", "unequal", "empty-first", "empty-odd", "last-only"};

/* rank's steps start .. start+len-1 under layout kind */
static void slice_of(int kind, size_t T, int rank, size_t *start, size_t *len) {
    static const size_t pattern[] = {1, 7, 3, 5, 2, 6, 4};
    size_t W = 0, cum = 0, w, mine = 0;
    int r;
    if (kind == L_EVEN) {
        prn_mpi_split(g_mpi, T, rank, start, len);
        return;
    }
    /* rank r's weight w; its steps are T * (weights before it) / W onwards */
    for (r = 0; r < g_size; ++r) {
        w = kind == L_UNEQUAL ? pattern[r % 7] : kind == L_EMPTY_FIRST ? (size_t)(r > 0)
          : kind == L_EMPTY_ODD ? (size_t)(r % 2 ? 0 : r + 1) : (size_t)(r == g_size - 1);
        if (g_size == 1) w = 1;
        W += w;
        if (r < rank) cum += w;
        if (r == rank) mine = w;
    }
    *start = T * cum / W;
    *len = T * (cum + mine) / W - *start;
}

/* --- the rank handle and the even split --------------------------------------------------- */
static void test_handle_and_split(void) {
    static const size_t Ts[] = {0, 1, 2, 3, 5, 37, 1000, 1001};
    int i, r, k;
    PRNT_CHECK(prn_mpi_rank(g_mpi) == g_rank && prn_mpi_size(g_mpi) == g_size, "prn_mpi_rank %d, size %d; MPI says %d of %d",
               prn_mpi_rank(g_mpi), prn_mpi_size(g_mpi), g_rank, g_size);
    /* the documented even split: contiguous, the first T % size ranks one longer */
    for (i = 0; i < (int)(sizeof Ts / sizeof Ts[0]); ++i) {
        size_t next = 0;
        for (r = 0; r < g_size; ++r) {
            size_t s = 99, l = 99, want = Ts[i] / (size_t)g_size + ((size_t)r < Ts[i] % (size_t)g_size);
            prn_mpi_split(g_mpi, Ts[i], r, &s, &l);
            PRNT_CHECK(s == next && l == want, "T=%lu rank %d: start %lu len %lu, want %lu %lu", (unsigned long)Ts[i], r,
                       (unsigned long)s, (unsigned long)l, (unsigned long)next, (unsigned long)want);
            next += want;
        }
    }
    /* the test's own layouts cover T exactly (a test bug otherwise) */
    for (k = 0; k < L_COUNT; ++k)
        for (i = 0; i < (int)(sizeof Ts / sizeof Ts[0]); ++i) {
            size_t next = 0;
            for (r = 0; r < g_size; ++r) {
                size_t s, l;
                slice_of(k, Ts[i], r, &s, &l);
                PRNT_CHECK(s == next, "layout %s T=%lu rank %d starts at %lu", layout_name[k], (unsigned long)Ts[i], r,
                           (unsigned long)s);
                next = s + l;
            }
            PRNT_CHECK(next == Ts[i], "layout %s covers %lu of %lu steps", layout_name[k], (unsigned long)next,
                       (unsigned long)Ts[i]);
        }
}

/* --- scans ---------------------------------------------------------------------------------- */
typedef struct scan_case {
    prn_dtype dt;
    size_t k;    /* 0: prn_mpi_scan_diag; else prn_mpi_scan_block with blocks of k (k == C: dense) */
    size_t C, T;
    int rev;
    int h0;      /* 0: NULL everywhere; 1: on the starting rank, NULL elsewhere;
                  * 2: on every rank, other values off the starting rank (ignored there) */
    int batched; /* [B = 2, T, C] when set, else [T, C] */
    int layout;
    int unit;    /* decays of modulus 1: a = +-1, or signed permutation blocks (orthogonal, and they do not commute) */
    uint64_t seed;
} scan_case;

static const char *scan_desc(const scan_case *c, size_t start, size_t len, char *buf, size_t n) {
    snprintf(buf, n, "%s %s k=%lu C=%lu T=%lu %s h0=%s %s split %s (rank %d: steps [%lu, %lu))",
             c->k ? "block" : "diag", prn_dtype_name(c->dt), (unsigned long)c->k, (unsigned long)c->C, (unsigned long)c->T,
             c->rev ? "reverse" : "forward", c->h0 == 0 ? "none" : c->h0 == 1 ? "start-rank" : "everywhere",
             c->batched ? "[B,T,C]" : "[T,C]", layout_name[c->layout], g_rank, (unsigned long)start,
             (unsigned long)(start + len));
    return buf;
}
/* shape of a (what 0), b and h (1), h0 (2) for T steps */
static int scan_shape(const scan_case *c, size_t B, size_t T, int what, size_t *s) {
    int nd = 0;
    if (c->batched) s[nd++] = B;
    if (what < 2) s[nd++] = T;
    s[nd++] = c->C;
    if (what == 0 && c->k) s[nd++] = c->k;
    return nd;
}
static prn_status scan_local(const scan_case *c, prn_tensor *a, prn_tensor *b, prn_tensor *h0, prn_tensor **h) {
    return c->k ? prn_scan_block(g_ctx, a, b, h0, c->rev, PRN_SCAN_AUTO, h)
                : prn_scan_diag(g_ctx, a, b, h0, c->rev, PRN_SCAN_AUTO, h);
}
static prn_status scan_mpi(const scan_case *c, prn_tensor *a, prn_tensor *b, prn_tensor *h0, prn_tensor **h,
                           prn_tensor **final) {
    return c->k ? prn_mpi_scan_block(g_ctx, g_mpi, a, b, h0, c->rev, h, final)
                : prn_mpi_scan_diag(g_ctx, g_mpi, a, b, h0, c->rev, h, final);
}

/* One case on every rank. The reference: the whole sequence by the
 * single-process scan (and, with grad, loss = sum(h * w) and its
 * backward). The distributed scan gets this rank's slices; its h, final
 * state and (with grad, loss_r = sum(h_r * w_r) summed over ranks)
 * gradients must equal the reference's. */
static void scan_case_run(const scan_case *c, int with_grad) {
    size_t B = c->batched ? 2 : 1, T = c->T, C = c->C, K = c->k ? c->k : 1, ia = C * K;
    size_t start = 0, len = 0, sa[4], sb[4], sh[4], tl, n, i;
    int nda, ndb, ndh, start_rank = c->rev ? g_size - 1 : 0, ok;
    double *a, *b, *h0, *h0x, *w, *href, *ga = NULL, *gb = NULL, *gh0 = NULL, *got = NULL, *fin, scale;
    double tol = c->dt == PRN_F64 ? (with_grad ? 1e-11 : 1e-12) : 1e-4, e;
    prn_tensor *ta = NULL, *tb = NULL, *th0 = NULL, *tw = NULL, *th = NULL, *m = NULL, *l = NULL;
    prn_tensor *ra = NULL, *rb = NULL, *rh0 = NULL, *rw = NULL, *out = NULL, *final = NULL;
    double *xa, *xb, *xw;
    char desc[256];
    prn_status st;
    slice_of(c->layout, T, g_rank, &start, &len);
    scan_desc(c, start, len, desc, sizeof desc);
    /* data: decays of modulus 0.8 .. 1 (diagonal) or blocks of spectral
     * radius about 0.85, so that every rank's carry matters downstream */
    rng_seed(c->seed);
    if (c->unit) {   /* long slices: a product that neither shrinks nor grows, so that each one matters */
        size_t blk, r, q, perm[64];
        a = (double *)calloc(B * T * ia, sizeof *a);
        for (blk = 0; blk < B * T * (C / K); ++blk) {
            double *m = a + blk * K * K;
            for (r = 0; r < K; ++r) perm[r] = r;
            for (r = K; r > 1; --r) { q = (size_t)(urand() * (double)r) % r; i = perm[r - 1]; perm[r - 1] = perm[q]; perm[q] = i; }
            for (r = 0; r < K; ++r) m[r * K + perm[r]] = urand() < 0.5 ? -1.0 : 1.0;
        }
    } else if (c->k) a = rand_vec(B * T * ia, -1.5 / sqrt((double)K), 1.5 / sqrt((double)K), c->dt);
    else {
        a = rand_vec(B * T * ia, 0.8, 1.0, c->dt);
        for (i = 0; i < B * T * ia; ++i)
            if (urand() < 0.3) a[i] = -a[i];
    }
    b = rand_vec(B * T * C, -1, 1, c->dt);
    h0 = rand_vec(B * C, -1, 1, c->dt);
    h0x = rand_vec(B * C, 5, 9, c->dt);
    w = rand_vec(B * T * C, -1, 1, c->dt);
    href = (double *)calloc(B * T * C, sizeof *href);
    /* the reference, on this rank alone; always in the batched form
     * ([1, T, C] for one sequence: the same numbers) */
    {
        scan_case cb = *c;
        cb.batched = 1;
        nda = scan_shape(&cb, B, T, 0, sa);
        ndb = scan_shape(&cb, B, T, 1, sb);
        ndh = scan_shape(&cb, B, T, 2, sh);
    }
    ta = tensor_of(c->dt, nda, sa, a, with_grad);
    tb = tensor_of(c->dt, ndb, sb, b, with_grad);
    th0 = c->h0 ? tensor_of(c->dt, ndh, sh, h0, with_grad) : NULL;
    tw = tensor_of(c->dt, ndb, sb, w, 0);
    st = scan_local(c, ta, tb, th0, &th);
    PRNT_CHECK(st == PRN_OK, "%s: the single-process scan: %s", desc, prn_last_error(g_ctx));
    if (st == PRN_OK) {
        prnt_download_f64(th, href);
        if (with_grad) {
            st = prn_mul(g_ctx, th, tw, &m);
            if (st == PRN_OK) st = prn_sum(g_ctx, m, PRN_ALL_AXES, 0, &l);
            if (st == PRN_OK) st = prn_backward(g_ctx, l);
            PRNT_CHECK(st == PRN_OK, "%s: the single-process backward: %s", desc, prn_last_error(g_ctx));
            ga = grad_of(ta);
            gb = grad_of(tb);
            gh0 = grad_of(th0);
        }
    }
    prn_tensor_free(m); prn_tensor_free(l); m = l = NULL;
    scale = scale_of(href, B * T * C);
    /* the distributed scan on this rank's slice */
    xa = rows_of(a, B, T, ia, start, len);
    xb = rows_of(b, B, T, C, start, len);
    xw = rows_of(w, B, T, C, start, len);
    nda = scan_shape(c, B, len, 0, sa);
    ndb = scan_shape(c, B, len, 1, sb);
    ndh = scan_shape(c, B, len, 2, sh);
    ra = tensor_of(c->dt, nda, sa, xa, with_grad);
    rb = tensor_of(c->dt, ndb, sb, xb, with_grad);
    rw = tensor_of(c->dt, ndb, sb, xw, 0);
    if (c->h0 == 1 && g_rank == start_rank) rh0 = tensor_of(c->dt, ndh, sh, h0, with_grad);
    if (c->h0 == 2) rh0 = tensor_of(c->dt, ndh, sh, g_rank == start_rank ? h0 : h0x, with_grad);
    ok = st == PRN_OK && ra && rb && rw && (rh0 || c->h0 == 0 || (c->h0 == 1 && g_rank != start_rank));
    if (!all_ok(ok)) goto done; /* a set-up failure somewhere: reported there */
    st = scan_mpi(c, ra, rb, rh0, &out, &final);
    PRNT_CHECK(st == PRN_OK, "%s: %s (%s)", desc, prn_status_string(st), prn_last_error(g_ctx));
    if (!all_ok(st == PRN_OK)) goto done;
    /* h: this rank's rows of the reference */
    PRNT_CHECK(c->batched ? has_shape(out, 3, B, len, C) : has_shape(out, 2, len, C, 0), "%s: out has the wrong shape", desc);
    got = host_of(out);
    if (prn_tensor_numel(out) == B * len * C) {
        e = rows_err(got, href, B, T, C, start, len, scale);
        PRNT_CHECK(e <= tol, "%s: h deviates by %.3g (relative to the largest |h| %.3g)", desc, e, scale);
    }
    /* final: the state after the whole sequence, on every rank */
    tl = c->rev ? 0 : T - 1;
    PRNT_CHECK(c->batched ? has_shape(final, 2, B, C, 0) : has_shape(final, 1, C, 0, 0), "%s: final has the wrong shape",
               desc);
    if (final && prn_tensor_numel(final) == B * C) {
        fin = host_of(final);
        for (n = 0; n < B; ++n) {
            e = max_err(fin + n * C, href + (n * T + tl) * C, C, scale);
            PRNT_CHECK(e <= tol, "%s: final state of row %lu deviates by %.3g", desc, (unsigned long)n, e);
        }
        free(fin);
    }
    if (with_grad && ga) {
        /* loss = sum over ranks of sum(h_r * w_r); the backward is collective */
        st = prn_mul(g_ctx, out, rw, &m);
        if (st == PRN_OK) st = prn_sum(g_ctx, m, PRN_ALL_AXES, 0, &l);
        PRNT_CHECK(st == PRN_OK, "%s: the loss: %s", desc, prn_last_error(g_ctx));
        if (!all_ok(st == PRN_OK)) goto done;
        st = prn_backward(g_ctx, l);
        PRNT_CHECK(st == PRN_OK, "%s: backward: %s (%s)", desc, prn_status_string(st), prn_last_error(g_ctx));
        if (!all_ok(st == PRN_OK)) goto done;
        if (len == 0) {
            PRNT_CHECK(all_zero_or_null(prn_tensor_grad(ra)) && all_zero_or_null(prn_tensor_grad(rb)),
                       "%s: an empty slice got gradients", desc);
        } else {
            double *g = grad_of(ra), sg = scale_of(ga, B * T * ia);
            PRNT_CHECK(prn_tensor_grad(ra) != NULL, "%s: no gradient of a", desc);
            e = rows_err(g, ga, B, T, ia, start, len, sg);
            PRNT_CHECK(e <= tol, "%s: grad a deviates by %.3g (largest %.3g)", desc, e, sg);
            free(g);
            g = grad_of(rb);
            sg = scale_of(gb, B * T * C);
            PRNT_CHECK(prn_tensor_grad(rb) != NULL, "%s: no gradient of b", desc);
            e = rows_err(g, gb, B, T, C, start, len, sg);
            PRNT_CHECK(e <= tol, "%s: grad b deviates by %.3g (largest %.3g)", desc, e, sg);
            free(g);
        }
        if (rh0 && g_rank == start_rank) {
            double *g = grad_of(rh0), sg = scale_of(gh0, B * C);
            PRNT_CHECK(prn_tensor_grad(rh0) != NULL, "%s: no gradient of h0 on the starting rank", desc);
            e = max_err(g, gh0, B * C, sg);
            PRNT_CHECK(e <= tol, "%s: grad h0 deviates by %.3g (largest %.3g)", desc, e, sg);
            free(g);
        } else if (rh0) {
            PRNT_CHECK(all_zero_or_null(prn_tensor_grad(rh0)), "%s: h0 off the starting rank (ignored) got a gradient", desc);
        }
    }
done:
    prn_tape_clear(g_ctx);
    prn_tensor_free(ta); prn_tensor_free(tb); prn_tensor_free(th0); prn_tensor_free(tw); prn_tensor_free(th);
    prn_tensor_free(ra); prn_tensor_free(rb); prn_tensor_free(rh0); prn_tensor_free(rw); prn_tensor_free(out);
    prn_tensor_free(final); prn_tensor_free(m); prn_tensor_free(l);
    free(a); free(b); free(h0); free(h0x); free(w); free(href); free(ga); free(gb); free(gh0); free(got);
    free(xa); free(xb); free(xw);
}

static scan_case mk_case(prn_dtype dt, size_t k, size_t C, size_t T, int rev, int h0, int batched, int layout) {
    scan_case c;
    memset(&c, 0, sizeof c);
    c.dt = dt; c.k = k; c.C = C; c.T = T; c.rev = rev; c.h0 = h0; c.batched = batched; c.layout = layout;
    c.seed = 1000003u * (uint64_t)(k + 1) + 7919u * C + 31u * T + 7u * (uint64_t)(rev + 2 * h0 + 8 * batched) + (uint64_t)layout;
    return c;
}

/* Diagonal scans, even and unequal splits, every variant. */
static void test_scan_diag(void) {
    int d, rev, h0, bt, lay;
    for (d = 0; d < 2; ++d)
        for (lay = L_EVEN; lay <= L_UNEQUAL; ++lay)
            for (rev = 0; rev < 2; ++rev)
                for (h0 = 0; h0 < 3; ++h0)
                    for (bt = 0; bt < 2; ++bt) {
                        scan_case c = mk_case(d ? PRN_F64 : PRN_F32, 0, 3, 37, rev, h0, bt, lay);
                        scan_case_run(&c, 0);
                    }
}

/* Block scans k = 1, 2, 4 (C = 4) and dense (C = k = 8), the same variants. */
static void test_scan_block(void) {
    static const size_t ks[][2] = {{1, 4}, {2, 4}, {4, 4}, {8, 8}};
    int d, rev, h0, bt, lay, ki;
    for (ki = 0; ki < 4; ++ki)
        for (d = 0; d < 2; ++d)
            for (lay = L_EVEN; lay <= L_UNEQUAL; ++lay)
                for (rev = 0; rev < 2; ++rev)
                    for (h0 = 0; h0 < 3; ++h0)
                        for (bt = 0; bt < 2; ++bt) {
                            scan_case c = mk_case(d ? PRN_F64 : PRN_F32, ks[ki][0], ks[ki][1], 29, rev, h0, bt, lay);
                            if ((g_quick || g_slow) && (h0 == 1 || bt == 0)) continue;
                            scan_case_run(&c, 0);
                        }
}

/* Empty slices and short sequences: ranks with T_r = 0 ([B, 0, C]
 * tensors) at the start, in between and at the end, the whole sequence
 * on the last rank, and T = 1, 2 (below the rank count with 4 ranks: the
 * even split leaves the last ranks empty, and a reverse scan starts on an
 * empty rank). */
static void test_scan_splits(void) {
    static const size_t ks[][2] = {{0, 3}, {2, 4}, {8, 8}};
    static const int lays[][2] = {{L_EMPTY_FIRST, 23}, {L_EMPTY_ODD, 23}, {L_LAST_ONLY, 5}, {L_EVEN, 1}, {L_EVEN, 2}};
    int d, rev, h0, bt, li, ki;
    for (ki = 0; ki < 3; ++ki)
        for (li = 0; li < 5; ++li)
            for (d = 0; d < 2; ++d)
                for (rev = 0; rev < 2; ++rev)
                    for (h0 = 1; h0 < 3; ++h0)
                        for (bt = 0; bt < 2; ++bt) {
                            scan_case c = mk_case(d ? PRN_F64 : PRN_F32, ks[ki][0], ks[ki][1], (size_t)lays[li][1], rev, h0,
                                                  bt, lays[li][0]);
                            scan_case_run(&c, 0);
                        }
}

/* Long slices: a rank that is not the first forms the product of its
 * slice's coefficients in runs of 32 steps, recursively, with the steps
 * left over folded in; 1100 steps per rank take two levels and a rest at
 * each. Diagonal, block k = 2 and dense k = 4, both directions, f64 and
 * f32 (within the single-process tolerances). The decays have modulus 1
 * (exact in f32), or else the product of 1100 steps would vanish and an
 * error in it would not show. */
static void test_scan_long_slices(void) {
    static const size_t ks[][2] = {{0, 3}, {2, 4}, {4, 4}};
    int ki, rev, d;
    for (ki = 0; ki < 3; ++ki)
        for (d = 0; d < 2; ++d)
            for (rev = 0; rev < 2; ++rev) {
                scan_case c = mk_case(d ? PRN_F64 : PRN_F32, ks[ki][0], ks[ki][1], 1100 * (size_t)g_size, rev, 2, 1, L_EVEN);
                c.unit = 1;
                if ((g_quick || g_slow) && d == 0) continue;
                scan_case_run(&c, 0);
            }
}

/* Backward: a, b and h0 require grad; every rank's gradients of its
 * slices, and h0's on the starting rank, equal the single-process ones. */
static void test_scan_backward(void) {
    static const size_t ks[][2] = {{0, 3}, {2, 4}, {4, 4}};
    static const int lays[][2] = {{L_EVEN, 31}, {L_UNEQUAL, 31}, {L_EMPTY_FIRST, 17}, {L_EMPTY_ODD, 17}, {L_LAST_ONLY, 4},
                                  {L_EVEN, 2}};
    int rev, h0, bt, li, ki;
    for (ki = 0; ki < 3; ++ki)
        for (li = 0; li < 6; ++li)
            for (rev = 0; rev < 2; ++rev)
                for (h0 = 0; h0 < 3; ++h0)
                    for (bt = 0; bt < 2; ++bt) {
                        scan_case c = mk_case(PRN_F64, ks[ki][0], ks[ki][1], (size_t)lays[li][1], rev, h0, bt, lays[li][0]);
                        if (g_quick && bt == 0 && h0 == 1) continue;
                        scan_case_run(&c, 1);
                    }
    /* f32, a few */
    for (ki = 0; ki < 3; ++ki)
        for (rev = 0; rev < 2; ++rev) {
            scan_case c = mk_case(PRN_F32, ks[ki][0], ks[ki][1], 31, rev, 1, 1, L_UNEQUAL);
            scan_case_run(&c, 1);
        }
}

/* A small scan that must work: after a failure, the communicator and
 * every rank's state are fine. */
static void scan_still_works(const char *after) {
    scan_case c = mk_case(PRN_F64, 0, 2, 9, 0, 1, 1, L_EVEN);
    int f = prnt_cur_failed;
    scan_case_run(&c, 0);
    PRNT_CHECK(prnt_cur_failed == f, "a scan after %s failed", after);
}

/* --- DEER ---------------------------------------------------------------------------------- */
static const char *mode_name(prn_jacobian_mode m) {
    return m == PRN_JACOBIAN_DENSE ? "dense" : m == PRN_JACOBIAN_BLOCK ? "block" : "diag";
}
/* every rank's statistics are the same */
static void check_same_stats(const prn_deer_stats *s, const char *desc) {
    int v[4], lo[4], hi[4], i;
    double r[2], rr[2];
    v[0] = s->iterations; v[1] = s->converged; v[2] = s->fell_back; v[3] = s->nonfinite;
    r[0] = s->residual; r[1] = -s->residual;
    MPI_Allreduce(v, lo, 4, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(v, hi, 4, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(r, rr, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (i = 0; i < 4; ++i)
        PRNT_CHECK(lo[i] == hi[i], "%s: stats field %d (iterations, converged, fell_back, nonfinite) differs over the ranks: %d .. %d",
                   desc, i, lo[i], hi[i]);
    PRNT_CHECK(rr[0] == -rr[1], "%s: stats.residual differs over the ranks: %.17g .. %.17g", desc, -rr[1], rr[0]);
}

/* The gradients of n tensors, concatenated (zeros where NULL). */
static double *grads_of(prn_tensor *const *t, int n, size_t *count) {
    size_t total = 0, off = 0;
    double *v;
    int i;
    for (i = 0; i < n; ++i) total += prn_tensor_numel(t[i]);
    v = (double *)calloc(total ? total : 1, sizeof *v);
    for (i = 0; i < n; ++i) {
        double *g = grad_of(t[i]);
        size_t m = prn_tensor_numel(t[i]);
        if (prn_tensor_grad(t[i])) memcpy(v + off, g, m * sizeof *v);
        off += m;
        free(g);
    }
    *count = total;
    return v;
}
static double rel_largest(const double *got, const double *want, size_t n) {
    double s = 0;
    size_t i;
    for (i = 0; i < n; ++i)
        if (fabs(want[i]) > s) s = fabs(want[i]);
    return max_err(got, want, n, s > 0 ? s : 1);
}

/* What one DEER case compares: the reference (whole sequence, this rank)
 * and the distributed run (this rank's slice). */
typedef struct deer_ref {
    double *y, *yseq;       /* [B, T, S] by prn_deer(_rnn); by sequential evaluation (GRU) */
    double *gp, *gx, *gs0;  /* gradients: parameters (concatenated), x [B, T, X], state0 [B, S] */
    size_t np;
    prn_deer_stats st;
} deer_ref;
static void deer_ref_free(deer_ref *r) {
    free(r->y); free(r->yseq); free(r->gp); free(r->gx); free(r->gs0);
    memset(r, 0, sizeof *r);
}

/* loss = sum(y * R), backward; 1 on success (checked, named by desc) */
static int loss_backward(prn_tensor *y, prn_tensor *R, const char *desc, int collective) {
    prn_tensor *m = NULL, *l = NULL;
    prn_status st = prn_mul(g_ctx, y, R, &m);
    int ok;
    if (st == PRN_OK) st = prn_sum(g_ctx, m, PRN_ALL_AXES, 0, &l);
    PRNT_CHECK(st == PRN_OK, "%s: the loss: %s", desc, prn_last_error(g_ctx));
    ok = collective ? all_ok(st == PRN_OK) : st == PRN_OK;
    if (ok) {
        st = prn_backward(g_ctx, l);
        PRNT_CHECK(st == PRN_OK, "%s: backward: %s (%s)", desc, prn_status_string(st), prn_last_error(g_ctx));
        ok = collective ? all_ok(st == PRN_OK) : st == PRN_OK;
    }
    prn_tape_clear(g_ctx);
    prn_tensor_free(m); prn_tensor_free(l);
    return ok;
}

/* The distributed y slice, stats and gradients against the reference.
 * params: the np shared parameters (their gradients are summed over the
 * ranks here first); xr, s0r: this rank's x slice and state0 (NULL off
 * rank 0). */
static void deer_compare(const deer_ref *ref, prn_tensor *yr, const prn_deer_stats *st, prn_tensor *R, prn_tensor *const *params,
                         int np, prn_tensor *xr, prn_tensor *s0r, size_t B, size_t T, size_t X, size_t S, size_t start,
                         size_t len, double tol, int grads, const char *desc) {
    double *y = host_of(yr), e, *gp;
    size_t n;
    prn_status s;
    PRNT_CHECK(has_shape(yr, 3, B, len, S), "%s: y has the wrong shape", desc);
    if (yr && prn_tensor_numel(yr) == B * len * S) {
        e = rows_err(y, ref->y, B, T, S, start, len, 1.0);
        PRNT_CHECK(e <= tol, "%s: y deviates from the single-process DEER by %.3g", desc, e);
        if (ref->yseq) {
            e = rows_err(y, ref->yseq, B, T, S, start, len, 1.0);
            PRNT_CHECK(e <= tol, "%s: y deviates from the sequential evaluation by %.3g", desc, e);
        }
    }
    free(y);
    check_same_stats(st, desc);
    if (!grads || !loss_backward(yr, R, desc, 1)) return;
    /* the parameters' gradients: this rank's part, summed over the ranks */
    s = prn_mpi_allreduce_grads(g_ctx, g_mpi, params, np, 0);
    PRNT_CHECK(s == PRN_OK, "%s: prn_mpi_allreduce_grads: %s", desc, prn_last_error(g_ctx));
    gp = grads_of(params, np, &n);
    e = rel_largest(gp, ref->gp, n);
    PRNT_CHECK(n == ref->np && e <= tol, "%s: parameter gradients deviate by %.3g (relative to the largest)", desc, e);
    free(gp);
    if (len) {
        double *g = grad_of(xr), sg = 0;
        size_t i;
        for (i = 0; i < B * T * X; ++i) sg = fabs(ref->gx[i]) > sg ? fabs(ref->gx[i]) : sg;
        PRNT_CHECK(prn_tensor_grad(xr) != NULL, "%s: no gradient of x's slice", desc);
        e = rows_err(g, ref->gx, B, T, X, start, len, sg > 0 ? sg : 1);
        PRNT_CHECK(e <= tol, "%s: x's gradient deviates by %.3g", desc, e);
        free(g);
    } else {
        PRNT_CHECK(all_zero_or_null(prn_tensor_grad(xr)), "%s: an empty x slice got a gradient", desc);
    }
    if (s0r) {
        e = grad_err(s0r, ref->gs0, B * S);
        PRNT_CHECK(prn_tensor_grad(s0r) != NULL && e <= tol, "%s: state0's gradient (rank 0) deviates by %.3g", desc, e);
    }
}

/* -- a GRU through prn_mpi_deer_rnn -- */
static prn_rnn *make_gru(prn_dtype dt, size_t NI, size_t H) {
    prn_rnn_config c;
    prn_rnn *r = NULL;
    memset(&c, 0, sizeof c);
    c.kind = PRN_RNN_GRU;
    c.dtype = dt;
    c.input_size = NI;
    c.hidden_size = H;
    prn_seed(g_ctx, 4242); /* the same parameters on every rank */
    PRNT_OK(g_ctx, prn_rnn_create(g_ctx, &c, &r));
    return r;
}
static void zero_grads(prn_tensor *const *t, int n) {
    int i;
    for (i = 0; i < n; ++i)
        if (t[i]) prn_tensor_zero_grad(t[i]);
}

/* One GRU case: the reference by prn_deer_rnn (and prn_rnn_forward) on
 * the whole sequence, then prn_mpi_deer_rnn on the slice. */
static void deer_rnn_case(prn_dtype dt, const prn_deer_options *o, int layout, size_t T, int grads) {
    size_t B = 2, NI = 3, H = 4, start, len;
    prn_rnn *r = make_gru(dt, NI, H);
    prn_tensor *p[8], *X = NULL, *S0 = NULL, *RR = NULL, *Y = NULL, *Ys = NULL, *xr = NULL, *s0r = NULL, *Rr = NULL, *yr = NULL;
    double *x, *s0, *R, *xs, *Rs, tol = dt == PRN_F64 ? 1e-8 : 1e-3;
    int np, ok;
    deer_ref ref;
    prn_deer_stats st;
    prn_status s;
    char desc[200];
    memset(&ref, 0, sizeof ref);
    memset(&st, 0, sizeof st);
    if (!all_ok(r != NULL)) { prn_rnn_free(r); return; }
    np = prn_rnn_params(r, p, 8);
    slice_of(layout, T, g_rank, &start, &len);
    snprintf(desc, sizeof desc, "gru %s %s T=%lu split %s%s%s (rank %d: steps [%lu, %lu))", prn_dtype_name(dt),
             mode_name(o->mode), (unsigned long)T, layout_name[layout], o->max_iter ? " max_iter=2" : "",
             o->no_fallback ? " no_fallback" : "", g_rank, (unsigned long)start, (unsigned long)(start + len));
    rng_seed(77 + T + (uint64_t)o->mode);
    x = rand_vec(B * T * NI, -1, 1, dt);
    s0 = rand_vec(B * H, -0.5, 0.5, dt);
    R = rand_vec(B * T * H, -1, 1, dt);
    /* the reference: state0 is [layers * directions = 1, B, S] there */
    zero_grads(p, np);
    X = tensor3(dt, B, T, NI, x, grads);
    S0 = tensor3(dt, 1, B, H, s0, grads);
    RR = tensor3(dt, B, T, H, R, 0);
    s = prn_deer_rnn(g_ctx, r, X, S0, o, &Y, NULL, &ref.st);
    PRNT_CHECK(s == PRN_OK, "%s: single-process prn_deer_rnn: %s", desc, prn_last_error(g_ctx));
    PRNT_CHECK(!o->max_iter || !ref.st.converged, "%s: the single-process run converged: the case says little", desc);
    ref.y = host_of(Y);
    if (!o->no_fallback) {
        prn_no_grad_begin(g_ctx);
        PRNT_OK(g_ctx, prn_rnn_forward(g_ctx, r, X, S0, &Ys, NULL));
        prn_no_grad_end(g_ctx);
        ref.yseq = host_of(Ys);
    }
    if (grads && Y && loss_backward(Y, RR, desc, 0)) {
        ref.gp = grads_of(p, np, &ref.np);
        ref.gx = grad_of(X);
        ref.gs0 = grad_of(S0);
    }
    prn_tape_clear(g_ctx);
    zero_grads(p, np);
    /* the distributed run: state0 [B, S] on rank 0 only */
    xs = rows_of(x, B, T, NI, start, len);
    Rs = rows_of(R, B, T, H, start, len);
    xr = tensor3(dt, B, len, NI, xs, grads);
    Rr = tensor3(dt, B, len, H, Rs, 0);
    if (g_rank == 0) s0r = tensor2(dt, B, H, s0, grads);
    ok = s == PRN_OK && Y && xr && Rr && (g_rank || s0r) && (!grads || ref.gp);
    if (all_ok(ok)) {
        s = prn_mpi_deer_rnn(g_ctx, g_mpi, r, xr, s0r, o, &yr, &st);
        PRNT_CHECK(s == PRN_OK, "%s: %s (%s)", desc, prn_status_string(s), prn_last_error(g_ctx));
        if (all_ok(s == PRN_OK)) {
            deer_compare(&ref, yr, &st, Rr, p, np, xr, s0r, B, T, NI, H, start, len, tol, grads, desc);
            /* converged or not, as the single-process run (its stats are this rank's own) */
            PRNT_CHECK(st.converged == ref.st.converged && st.fell_back == ref.st.fell_back,
                       "%s: converged %d fell_back %d (iterations %d), single process %d %d (%d)", desc, st.converged,
                       st.fell_back, st.iterations, ref.st.converged, ref.st.fell_back, ref.st.iterations);
        }
    }
    prn_tape_clear(g_ctx);
    prn_tensor_free(X); prn_tensor_free(S0); prn_tensor_free(RR); prn_tensor_free(Y); prn_tensor_free(Ys);
    prn_tensor_free(xr); prn_tensor_free(s0r); prn_tensor_free(Rr); prn_tensor_free(yr);
    free(x); free(s0); free(R); free(xs); free(Rs);
    deer_ref_free(&ref);
    prn_rnn_free(r);
}

static void test_deer_rnn(void) {
    static const int lays[] = {L_EVEN, L_UNEQUAL, L_EMPTY_FIRST, L_EMPTY_ODD, L_LAST_ONLY};
    prn_deer_options o;
    int m, li;
    memset(&o, 0, sizeof o);
    for (m = 0; m < 2; ++m)
        for (li = 0; li < 5; ++li) {
            o.mode = m ? PRN_JACOBIAN_DIAG : PRN_JACOBIAN_DENSE;
            deer_rnn_case(PRN_F64, &o, lays[li], 40, 1);
        }
    /* T below the rank count, f32 */
    o.mode = PRN_JACOBIAN_DENSE;
    deer_rnn_case(PRN_F64, &o, L_EVEN, 2, 1);
    deer_rnn_case(PRN_F32, &o, L_UNEQUAL, 40, 1);
    o.mode = PRN_JACOBIAN_DIAG;
    deer_rnn_case(PRN_F32, &o, L_EVEN, 40, 1);
}

/* Not converged in max_iter = 2 iterations: by default the sequential
 * evaluation (fell_back on every rank), with no_fallback the last
 * iterate, which equals the single-process one. */
static void test_deer_not_converged(void) {
    prn_deer_options o;
    int li;
    for (li = 0; li < 2; ++li) {
        int lay = li ? L_EMPTY_ODD : L_EVEN;
        memset(&o, 0, sizeof o);
        o.max_iter = 2;
        deer_rnn_case(PRN_F64, &o, lay, 40, 0);
        o.no_fallback = 1;
        deer_rnn_case(PRN_F64, &o, lay, 40, 0);
    }
}

/* -- a user cell: y' = tanh(W y + U x + b), with a failure switch -- */
typedef struct ucell {
    prn_tensor *W, *U, *b; /* [S, S], [S, X], [S] */
    int calls;             /* jacobian calls                                      */
    int fail_at;           /* the jacobian call that fails with PRN_ERR_IO (0: none) */
} ucell;
static prn_status uc_pre(prn_context *ctx, ucell *u, prn_tensor *x, prn_tensor *s, prn_tensor **out) {
    prn_tensor *a = NULL, *c = NULL, *e = NULL;
    prn_status st = prn_matmul_ex(ctx, s, 0, u->W, 1, &a);
    if (st == PRN_OK) st = prn_matmul_ex(ctx, x, 0, u->U, 1, &c);
    if (st == PRN_OK) st = prn_add(ctx, a, c, &e);
    if (st == PRN_OK) st = prn_add(ctx, e, u->b, out);
    prn_tensor_free(a); prn_tensor_free(c); prn_tensor_free(e);
    return st;
}
static prn_status uc_step(prn_context *ctx, void *user, prn_tensor *x, prn_tensor *s, prn_tensor **next) {
    prn_tensor *p = NULL;
    prn_status st = uc_pre(ctx, (ucell *)user, x, s, &p);
    if (st == PRN_OK) st = prn_tanh(ctx, p, next);
    prn_tensor_free(p);
    return st;
}
/* J = diag(1 - y^2) W; DIAG: (1 - y^2) * diag(W) */
static prn_status uc_jac(prn_context *ctx, void *user, prn_tensor *x, prn_tensor *s, prn_jacobian_mode mode,
                         prn_tensor **next, prn_tensor **jac) {
    ucell *u = (ucell *)user;
    prn_tensor *y = NULL, *y2 = NULL, *d = NULL, *dv = NULL, *Wd = NULL;
    size_t N = prn_tensor_dim(s, 0), S = prn_tensor_dim(s, 1), sh[3];
    prn_status st;
    if (++u->calls == u->fail_at) return prn_set_error(ctx, PRN_ERR_IO, "uc_jac: injected failure at call %d", u->calls);
    st = uc_step(ctx, user, x, s, &y);
    if (st == PRN_OK) st = prn_mul(ctx, y, y, &y2);
    if (st == PRN_OK) st = prn_neg(ctx, y2, &d);
    if (st == PRN_OK) { prn_tensor_free(y2); y2 = NULL; st = prn_add_scalar(ctx, d, 1.0, &y2); }
    if (st == PRN_OK && mode == PRN_JACOBIAN_DIAG) {
        double *w = host_of(u->W), *e = (double *)calloc(S, sizeof *e);
        size_t i;
        for (i = 0; i < S; ++i) e[i] = w[i * S + i];
        sh[0] = S;
        st = prn_tensor_create(ctx, prn_tensor_dtype(s), 1, sh, &Wd);
        if (st == PRN_OK) st = prnt_upload_f64(Wd, e);
        if (st == PRN_OK) st = prn_mul(ctx, y2, Wd, jac);
        free(w); free(e);
    } else if (st == PRN_OK) {
        sh[0] = N; sh[1] = S; sh[2] = 1;
        st = prn_reshape(ctx, y2, 3, sh, &dv);
        if (st == PRN_OK) st = prn_mul(ctx, dv, u->W, jac);
    }
    if (st == PRN_OK) *next = prn_tensor_retain(y);
    prn_tensor_free(y); prn_tensor_free(y2); prn_tensor_free(d); prn_tensor_free(dv); prn_tensor_free(Wd);
    return st;
}
#define UC_S 5
#define UC_X 3
static void ucell_make(ucell *u, prn_deer_system *cell) {
    double *w, *v, *b;
    rng_seed(555); /* the same weights on every rank */
    w = rand_vec(UC_S * UC_S, -0.6, 0.6, PRN_F64);
    v = rand_vec(UC_S * UC_X, -0.6, 0.6, PRN_F64);
    b = rand_vec(UC_S, -0.3, 0.3, PRN_F64);
    memset(u, 0, sizeof *u);
    u->W = tensor2(PRN_F64, UC_S, UC_S, w, 1);
    u->U = tensor2(PRN_F64, UC_S, UC_X, v, 1);
    {
        size_t s1 = UC_S;
        u->b = tensor_of(PRN_F64, 1, &s1, b, 1);
    }
    free(w); free(v); free(b);
    memset(cell, 0, sizeof *cell);
    cell->state_size = UC_S;
    cell->input_size = UC_X;
    cell->jacobian = uc_jac;
    cell->step = uc_step;
    cell->user = u;
}
static void ucell_free(ucell *u) {
    prn_tensor_free(u->W); prn_tensor_free(u->U); prn_tensor_free(u->b);
}

/* One user-cell case: prn_deer on the whole sequence against prn_mpi_deer. */
static void deer_cell_case(prn_jacobian_mode mode, int layout, size_t T) {
    size_t B = 2, X = UC_X, S = UC_S, start, len;
    ucell u;
    prn_deer_system cell;
    prn_deer_options o;
    prn_deer_stats st;
    prn_tensor *p[3], *Xt = NULL, *S0 = NULL, *RR = NULL, *Y = NULL, *xr = NULL, *s0r = NULL, *Rr = NULL, *yr = NULL;
    double *x, *s0, *R, *xs, *Rs;
    deer_ref ref;
    prn_status s;
    char desc[200];
    int ok;
    ucell_make(&u, &cell);
    p[0] = u.W; p[1] = u.U; p[2] = u.b;
    memset(&ref, 0, sizeof ref);
    memset(&st, 0, sizeof st);
    memset(&o, 0, sizeof o);
    o.mode = mode;
    slice_of(layout, T, g_rank, &start, &len);
    snprintf(desc, sizeof desc, "user cell %s T=%lu split %s (rank %d: steps [%lu, %lu))", mode_name(mode), (unsigned long)T,
             layout_name[layout], g_rank, (unsigned long)start, (unsigned long)(start + len));
    rng_seed(99 + T);
    x = rand_vec(B * T * X, -1, 1, PRN_F64);
    s0 = rand_vec(B * S, -0.5, 0.5, PRN_F64);
    R = rand_vec(B * T * S, -1, 1, PRN_F64);
    Xt = tensor3(PRN_F64, B, T, X, x, 1);
    S0 = tensor2(PRN_F64, B, S, s0, 1);
    RR = tensor3(PRN_F64, B, T, S, R, 0);
    s = prn_deer(g_ctx, &cell, Xt, S0, &o, &Y, &ref.st);
    PRNT_CHECK(s == PRN_OK && ref.st.converged, "%s: single-process prn_deer: %s", desc, prn_last_error(g_ctx));
    ref.y = host_of(Y);
    if (Y && loss_backward(Y, RR, desc, 0)) {
        ref.gp = grads_of(p, 3, &ref.np);
        ref.gx = grad_of(Xt);
        ref.gs0 = grad_of(S0);
    }
    zero_grads(p, 3);
    xs = rows_of(x, B, T, X, start, len);
    Rs = rows_of(R, B, T, S, start, len);
    xr = tensor3(PRN_F64, B, len, X, xs, 1);
    Rr = tensor3(PRN_F64, B, len, S, Rs, 0);
    if (g_rank == 0) s0r = tensor2(PRN_F64, B, S, s0, 1);
    ok = s == PRN_OK && ref.gp && xr && Rr && (g_rank || s0r);
    if (all_ok(ok)) {
        s = prn_mpi_deer(g_ctx, g_mpi, &cell, xr, s0r, &o, &yr, &st);
        PRNT_CHECK(s == PRN_OK, "%s: %s (%s)", desc, prn_status_string(s), prn_last_error(g_ctx));
        if (all_ok(s == PRN_OK)) {
            deer_compare(&ref, yr, &st, Rr, p, 3, xr, s0r, B, T, X, S, start, len, 1e-8, 1, desc);
            PRNT_CHECK(st.converged && !st.fell_back, "%s: converged %d, fell back %d", desc, st.converged, st.fell_back);
        }
    }
    prn_tape_clear(g_ctx);
    prn_tensor_free(Xt); prn_tensor_free(S0); prn_tensor_free(RR); prn_tensor_free(Y);
    prn_tensor_free(xr); prn_tensor_free(s0r); prn_tensor_free(Rr); prn_tensor_free(yr);
    free(x); free(s0); free(R); free(xs); free(Rs);
    deer_ref_free(&ref);
    ucell_free(&u);
}

static void test_deer_user_cell(void) {
    static const int lays[] = {L_EVEN, L_UNEQUAL, L_EMPTY_FIRST, L_EMPTY_ODD};
    int m, li;
    for (m = 0; m < 2; ++m)
        for (li = 0; li < 4; ++li) deer_cell_case(m ? PRN_JACOBIAN_DIAG : PRN_JACOBIAN_DENSE, lays[li], 30);
    deer_cell_case(PRN_JACOBIAN_DENSE, L_EVEN, 1);
}

/* --- gradients across ranks, parameters from one rank --------------------------------------- */
/* Rank r's gradient of parameter i, element j: exact in binary, so that
 * sums and means over 1, 2, 4 ranks are exact too. */
static double gval(int r, int i, size_t j) { return 0.25 * (r + 1) + i - 0.125 * (double)j; }

static void test_allreduce_grads(void) {
    static const size_t shapes[4][2] = {{3, 4}, {5, 1}, {2, 3}, {1, 1}};
    static const prn_dtype dts[4] = {PRN_F64, PRN_F64, PRN_F32, PRN_F64};
    prn_tensor *p[4];
    int i, mean, r;
    size_t j;
    for (i = 0; i < 4; ++i) {
        double z[12] = {0};
        p[i] = tensor2(dts[i], shapes[i][0], shapes[i][1], z, 1);
    }
    if (!all_ok(p[0] && p[1] && p[2] && p[3])) goto done;
    for (mean = 0; mean < 2; ++mean) {
        /* parameter 1 has no gradient on the last rank, parameter 3 none anywhere */
        for (i = 0; i < 4; ++i) {
            size_t n = prn_tensor_numel(p[i]);
            double v[12];
            prn_tensor *g;
            prn_tensor_zero_grad(p[i]);
            if (i == 3 || (i == 1 && g_rank == g_size - 1)) continue;
            for (j = 0; j < n; ++j) v[j] = gval(g_rank, i, j);
            g = tensor_of(dts[i], prn_tensor_ndim(p[i]), shapes[i], v, 0);
            PRNT_OK(g_ctx, prn_tensor_set_grad(p[i], g));
            prn_tensor_free(g);
        }
        PRNT_OK(g_ctx, prn_mpi_allreduce_grads(g_ctx, g_mpi, p, 4, mean));
        for (i = 0; i < 3; ++i) {
            size_t n = prn_tensor_numel(p[i]);
            double want[12] = {0}, *got = grad_of(p[i]);
            for (j = 0; j < n; ++j) {
                want[j] = 0;
                for (r = 0; r < g_size; ++r)
                    if (!(i == 1 && r == g_size - 1)) want[j] += gval(r, i, j);
                if (mean) want[j] /= g_size;
            }
            /* with one rank, parameter 1 has no gradient anywhere: NULL or zeros then */
            int may_be_null = i == 1 && g_size == 1;
            PRNT_CHECK((prn_tensor_grad(p[i]) || may_be_null) && max_err(got, want, n, 1.0) <= (dts[i] == PRN_F32 ? 1e-6 : 1e-14),
                       "%s: parameter %d: gradient %s, first %g, want %g", mean ? "mean" : "sum", i,
                       prn_tensor_grad(p[i]) ? "present" : "NULL", got[0], want[0]);
            free(got);
        }
        PRNT_CHECK(all_zero_or_null(prn_tensor_grad(p[3])), "%s: a gradient that is NULL on every rank became nonzero",
                   mean ? "mean" : "sum");
    }
    /* nothing to do: zero parameters */
    PRNT_OK(g_ctx, prn_mpi_allreduce_grads(g_ctx, g_mpi, p, 0, 0));
done:
    for (i = 0; i < 4; ++i) prn_tensor_free(p[i]);
}

static void test_broadcast(void) {
    prn_tensor *p[3];
    int i, root, pass;
    size_t j;
    for (pass = 0; pass < 2; ++pass) {
        root = pass ? g_size - 1 : 0;
        for (i = 0; i < 3; ++i) {
            double v[12];
            for (j = 0; j < 12; ++j) v[j] = 10.0 * g_rank + i + 0.5 * (double)j;
            p[i] = i == 1 ? tensor2(PRN_F32, 3, 4, v, 0) : tensor2(PRN_F64, i ? 2 : 1, 3, v, i == 2);
        }
        if (all_ok(p[0] && p[1] && p[2])) {
            PRNT_OK(g_ctx, prn_mpi_broadcast(g_ctx, g_mpi, p, 3, root));
            for (i = 0; i < 3; ++i) {
                size_t n = prn_tensor_numel(p[i]);
                double *got = host_of(p[i]), want[12];
                for (j = 0; j < n; ++j) want[j] = 10.0 * root + i + 0.5 * (double)j;
                PRNT_CHECK(max_err(got, want, n, 1.0) == 0, "root %d, parameter %d: first value %g, want %g", root, i, got[0],
                           want[0]);
                free(got);
            }
        }
        for (i = 0; i < 3; ++i) prn_tensor_free(p[i]);
    }
}

/* --- SCYFI ---------------------------------------------------------------------------------- */
static double lcg(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xFFFFFF) / 16777216.0;
}
static double nrand(unsigned *s) {
    double u = lcg(s) + 1e-12, v = lcg(s);
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}
/* A random model (as tests/test_scyfi.c builds them) and its arrays. */
typedef struct tmodel { prn_pwl_model m; double buf[1024]; } tmodel;
static void random_model(tmodel *t, prn_pwl_kind kind, int M, int H, int P, int full_A, unsigned seed, double wscale) {
    double *p = t->buf;
    int i, n;
    unsigned s = seed * 7919u + 13u;
    memset(&t->m, 0, sizeof t->m);
    t->m.kind = kind; t->m.M = (size_t)M; t->m.H = (size_t)H; t->m.P = (size_t)P; t->m.full_A = full_A;
    t->m.A = p;
    n = full_A ? M * M : M;
    for (i = 0; i < n; ++i) p[i] = full_A ? (i % (M + 1) == 0 ? 0.2 + 0.6 * lcg(&s) : 0.2 * nrand(&s)) : 0.2 + 0.7 * lcg(&s);
    p += n;
    if (kind == PRN_PWL_PLRNN || kind == PRN_PWL_ALRNN) {
        t->m.W = p; for (i = 0; i < M * M; ++i) p[i] = wscale * nrand(&s); p += M * M;
        t->m.h = p; for (i = 0; i < M; ++i) p[i] = nrand(&s); p += M;
    } else {
        t->m.W1 = p; for (i = 0; i < M * H; ++i) p[i] = wscale * nrand(&s); p += M * H;
        t->m.W2 = p; for (i = 0; i < H * M; ++i) p[i] = nrand(&s); p += H * M;
        t->m.h1 = p; for (i = 0; i < M; ++i) p[i] = nrand(&s); p += M;
        t->m.h2 = p; for (i = 0; i < H; ++i) p[i] = nrand(&s); p += H;
    }
}

/* prn_mpi_scyfi against prn_scyfi with the same options: the same cycles,
 * in the same order, on every rank; returns the number of cycles. */
static int scyfi_case(const prn_pwl_model *m, int kmax, int exhaustive, int batch, uint64_t seed, const char *what) {
    prn_scyfi_options o;
    prn_scyfi_result *ref = NULL, *got = NULL;
    prn_status s;
    size_t c, k, n = 0, M = m->M;
    double sv[2], sr[2];
    char desc[160];
    memset(&o, 0, sizeof o);
    o.kmax = (size_t)kmax; o.exhaustive = exhaustive; o.batch = (size_t)batch; o.seed = seed;
    snprintf(desc, sizeof desc, "%s kmax=%d%s batch=%d seed=%lu", what, kmax, exhaustive ? " exhaustive" : "", batch,
             (unsigned long)seed);
    PRNT_OK(g_ctx, prn_scyfi(g_ctx, m, &o, &ref));
    if (all_ok(ref != NULL)) {
        s = prn_mpi_scyfi(g_ctx, g_mpi, m, &o, &got);
        PRNT_CHECK(s == PRN_OK, "%s: %s (%s)", desc, prn_status_string(s), prn_last_error(g_ctx));
    }
    if (ref && got) {
        n = ref->num_cycles;
        PRNT_CHECK(got->num_cycles == ref->num_cycles && got->M == ref->M && got->kmax == ref->kmax,
                   "%s: %lu cycles (M %lu, kmax %lu), single process %lu", desc, (unsigned long)got->num_cycles,
                   (unsigned long)got->M, (unsigned long)got->kmax, (unsigned long)ref->num_cycles);
        for (k = 1; k <= o.kmax && got->kmax == o.kmax; ++k)
            PRNT_CHECK(got->count[k] == ref->count[k], "%s: %lu cycles of order %lu, single process %lu", desc,
                       (unsigned long)got->count[k], (unsigned long)k, (unsigned long)ref->count[k]);
        for (c = 0; c < ref->num_cycles && c < got->num_cycles; ++c) {
            const prn_scyfi_cycle *a = &got->cycles[c], *b = &ref->cycles[c];
            double e = 0, ee = 0;
            size_t i;
            if (a->k != b->k) {
                PRNT_CHECK(0, "%s: cycle %lu has order %lu, single process %lu", desc, (unsigned long)c, (unsigned long)a->k,
                           (unsigned long)b->k);
                continue;
            }
            for (i = 0; i < a->k * M; ++i) e = fmax(e, fabs(a->points[i] - b->points[i]) / (1 + fabs(b->points[i])));
            for (i = 0; i < M; ++i) ee = fmax(ee, fabs(a->eig_re[i] - b->eig_re[i]) + fabs(a->eig_im[i] - b->eig_im[i]));
            PRNT_CHECK(e <= 1e-12 && ee <= 1e-9 && a->type == b->type,
                       "%s: cycle %lu (k=%lu): points deviate by %.3g, eigenvalues by %.3g, type %d vs %d", desc,
                       (unsigned long)c, (unsigned long)a->k, e, ee,
                       (int)a->type, (int)b->type);
        }
    }
    /* solves: a count over every rank, so the same on every rank */
    sv[0] = got ? (double)got->solves : 0;
    sv[1] = -sv[0];
    MPI_Allreduce(sv, sr, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (got) PRNT_CHECK(sr[0] == -sr[1] && got->solves > 0, "%s: solves %g .. %g over the ranks", desc, -sr[1], sr[0]);
    prn_scyfi_free(g_ctx, ref);
    prn_scyfi_free(g_ctx, got);
    return (int)n;
}

static void test_scyfi(void) {
    tmodel t;
    int s, total = 0;
    char what[64];
    for (s = 0; s < 3; ++s) {
        random_model(&t, PRN_PWL_PLRNN, 3 + s, 0, 0, s % 2, (unsigned)s, 1.2);
        snprintf(what, sizeof what, "plrnn M=%d seed %d", 3 + s, s);
        total += scyfi_case(&t.m, s == 2 ? 3 : 4, 0, 0, 11, what);
        total += scyfi_case(&t.m, 3, 0, 3, 5, what); /* narrow batches: many blocks to deal */
    }
    random_model(&t, PRN_PWL_PLRNN, 6, 0, 0, 0, 7, 1.3);
    total += scyfi_case(&t.m, 3, 0, 0, 2, "plrnn M=6");
    random_model(&t, PRN_PWL_SHPLRNN, 2, 4, 0, 0, 200, 1.0);
    total += scyfi_case(&t.m, 3, 0, 0, 11, "shplrnn M=2 H=4");
    random_model(&t, PRN_PWL_SHPLRNN, 3, 6, 0, 0, 42, 1.0);
    total += scyfi_case(&t.m, 3, 0, 5, 9, "shplrnn M=3 H=6");
    random_model(&t, PRN_PWL_CLIPPED_SHPLRNN, 2, 3, 0, 0, 300, 1.5);
    total += scyfi_case(&t.m, 2, 0, 0, 1, "clipped_shplrnn M=2 H=3");
    random_model(&t, PRN_PWL_ALRNN, 4, 0, 2, 0, 100, 1.2);
    total += scyfi_case(&t.m, 3, 0, 0, 4, "alrnn M=4 P=2");
    /* exhaustive: every pattern sequence, dealt over the ranks */
    random_model(&t, PRN_PWL_PLRNN, 3, 0, 0, 0, 1, 1.2);
    total += scyfi_case(&t.m, 3, 1, 0, 0, "plrnn M=3");
    total += scyfi_case(&t.m, 3, 1, 16, 0, "plrnn M=3");
    random_model(&t, PRN_PWL_SHPLRNN, 2, 4, 0, 1, 201, 1.0);
    total += scyfi_case(&t.m, 2, 1, 0, 0, "shplrnn M=2 H=4 full A");
    if (g_rank == 0) printf("    %d cycles compared\n", total);
    PRNT_CHECK(total >= 10, "only %d cycles over all models: the comparison says little", total);
}

/* --- failures ------------------------------------------------------------------------------- */
/* After a call that fails on every rank because rank bad did: bad has its
 * own status (want_bad) and message (containing bad_msg, when not NULL),
 * every other rank PRN_ERR_REMOTE with a message naming rank bad; the
 * output pointer is untouched everywhere. */
static void check_remote(prn_status s, int bad, prn_status want_bad, const char *bad_msg, int untouched, const char *desc) {
    const char *msg = prn_last_error(g_ctx);
    char rk[32];
    snprintf(rk, sizeof rk, "rank %d", bad);
    if (g_rank == bad) {
        PRNT_CHECK(s == want_bad, "%s: the failing rank got %s (%s), want %s", desc, prn_status_string(s), msg,
                   prn_status_string(want_bad));
        if (bad_msg) PRNT_CHECK(strstr(msg, bad_msg) != NULL, "%s: the failing rank's message: %s", desc, msg);
    } else {
        PRNT_CHECK(s == PRN_ERR_REMOTE, "%s: got %s (%s), want PRN_ERR_REMOTE", desc, prn_status_string(s), msg);
        PRNT_CHECK(strstr(msg, rk) != NULL, "%s: the message does not name %s: %s", desc, rk, msg);
        if (bad_msg) PRNT_CHECK(strstr(msg, bad_msg) != NULL, "%s: the message does not carry rank %d's: %s", desc, bad, msg);
    }
    PRNT_CHECK(untouched, "%s: an output was written on failure", desc);
}

/* A call every rank makes with the same bad argument: every rank fails;
 * rank 0 (the first failing one) with want, the others with want or with
 * PRN_ERR_REMOTE; the output pointer is untouched. */
static void check_all_fail(prn_status s, prn_status want, int untouched, const char *desc) {
    PRNT_CHECK(s == want || (g_rank > 0 && s == PRN_ERR_REMOTE), "%s: got %s (%s), want %s", desc, prn_status_string(s),
               prn_last_error(g_ctx), prn_status_string(want));
    PRNT_CHECK(untouched, "%s: an output was written on failure", desc);
}

static void test_agree(void) {
    int bad = g_size - 1;
    prn_status s;
    /* everyone fine */
    PRNT_OK(g_ctx, prn_mpi_agree(g_ctx, g_mpi, "all_fine", PRN_OK));
    /* the last rank fails */
    if (g_rank == bad) prn_set_error(g_ctx, PRN_ERR_IO, "disk on fire at step 7");
    s = prn_mpi_agree(g_ctx, g_mpi, "my_step", g_rank == bad ? PRN_ERR_IO : PRN_OK);
    check_remote(s, bad, PRN_ERR_IO, "disk on fire at step 7", 1, "prn_mpi_agree, the last rank failing");
    if (g_rank != bad) PRNT_CHECK(strstr(prn_last_error(g_ctx), "my_step") != NULL, "message names fn: %s", prn_last_error(g_ctx));
    /* two ranks fail (ranks 1 and 3 with 4 ranks): the first one's status wins */
    if (g_size >= 4) {
        if (g_rank == 1) prn_set_error(g_ctx, PRN_ERR_INVALID_ARGUMENT, "first failure");
        if (g_rank == 3) prn_set_error(g_ctx, PRN_ERR_SHAPE, "second failure");
        s = prn_mpi_agree(g_ctx, g_mpi, "two", g_rank == 1 ? PRN_ERR_INVALID_ARGUMENT : g_rank == 3 ? PRN_ERR_SHAPE : PRN_OK);
        if (g_rank == 1) PRNT_CHECK(s == PRN_ERR_INVALID_ARGUMENT, "two failing: rank 1 got %s", prn_status_string(s));
        else if (g_rank == 3) PRNT_CHECK(s != PRN_OK, "two failing: rank 3 got PRN_OK");
        else
            PRNT_CHECK(s == PRN_ERR_REMOTE && strstr(prn_last_error(g_ctx), "rank 1") && strstr(prn_last_error(g_ctx), "first failure"),
                       "two failing: got %s (%s), want PRN_ERR_REMOTE from rank 1", prn_status_string(s), prn_last_error(g_ctx));
    }
    /* and afterwards everyone fine again */
    PRNT_OK(g_ctx, prn_mpi_agree(g_ctx, g_mpi, "all_fine_again", PRN_OK));
}

/* One rank passes a bad argument to a scan: it fails with its own error,
 * every other rank with PRN_ERR_REMOTE naming it, nobody hangs, nothing
 * is written or recorded; then scans work again. */
static void test_scan_bad_input(void) {
    static const char *what[] = {"b NULL on the last rank", "b of the wrong width on rank 1", "out NULL on the last rank",
                                 "block scan, a not 4-D on rank 1"};
    static const prn_status want[] = {PRN_ERR_NULL_ARGUMENT, PRN_ERR_SHAPE, PRN_ERR_NULL_ARGUMENT, PRN_ERR_SHAPE};
    size_t T = 12, C = 3, B = 2, start, len, sa[4];
    int bad = g_size - 1, bad2 = g_size > 1 ? 1 : 0, i;
    double *a, *b;
    prn_tensor *ta, *tb, *tbw, *ta4, *tb4, *sentinel = (prn_tensor *)&g_rs, *out, *fin;
    prn_status s;
    prn_mpi_split(g_mpi, T, g_rank, &start, &len);
    rng_seed(3);
    a = rand_vec(B * len * 8, 0.5, 0.9, PRN_F64);
    b = rand_vec(B * len * 4, -1, 1, PRN_F64);
    ta = tensor3(PRN_F64, B, len, C, a, 0);
    tb = tensor3(PRN_F64, B, len, C, b, 0);
    tbw = tensor3(PRN_F64, B, len, C + 1, b, 0); /* wider than a */
    sa[0] = B; sa[1] = len; sa[2] = 4; sa[3] = 2;
    ta4 = tensor_of(PRN_F64, 4, sa, a, 0);       /* block a, C = 4 in blocks of 2 */
    tb4 = tensor3(PRN_F64, B, len, 4, b, 0);
    for (i = 0; i < 4 && all_ok(ta && tb && tbw && ta4 && tb4); ++i) {
        int who = i % 2 ? bad2 : bad;
        size_t live = prn_live_tensors(g_ctx), tape = prn_tape_size(g_ctx);
        out = fin = sentinel;
        if (i == 0) s = prn_mpi_scan_diag(g_ctx, g_mpi, ta, g_rank == who ? NULL : tb, NULL, 0, &out, &fin);
        else if (i == 1) s = prn_mpi_scan_diag(g_ctx, g_mpi, ta, g_rank == who ? tbw : tb, NULL, 1, &out, &fin);
        else if (i == 2) s = prn_mpi_scan_diag(g_ctx, g_mpi, ta, tb, NULL, 0, g_rank == who ? NULL : &out, &fin);
        else s = prn_mpi_scan_block(g_ctx, g_mpi, g_rank == who ? ta : ta4, tb4, NULL, 0, &out, &fin);
        check_remote(s, who, want[i], NULL, out == sentinel && fin == sentinel, what[i]);
        PRNT_CHECK(prn_tape_size(g_ctx) == tape && prn_live_tensors(g_ctx) == live,
                   "%s: tape %lu -> %lu, live tensors %lu -> %lu", what[i], (unsigned long)tape,
                   (unsigned long)prn_tape_size(g_ctx), (unsigned long)live, (unsigned long)prn_live_tensors(g_ctx));
        if (out != sentinel) prn_tensor_free(out);
        if (fin != sentinel) prn_tensor_free(fin);
        scan_still_works(what[i]);
    }
    prn_tensor_free(ta); prn_tensor_free(tb); prn_tensor_free(tbw); prn_tensor_free(ta4); prn_tensor_free(tb4);
    free(a); free(b);
}

/* Arguments that do not agree across ranks (each rank's own are fine):
 * the channels, the batch, the block size. Every rank fails, none hangs. */
static void test_scan_mismatch(void) {
    size_t T = 10, start, len, i;
    int bad = g_size - 1, v;
    if (g_size == 1) {
        PRNT_SKIP("needs 2 ranks or more");
        return;
    }
    prn_mpi_split(g_mpi, T, g_rank, &start, &len);
    for (v = 0; v < 3; ++v) {
        static const char *what[] = {"C = 4 on the last rank, 3 elsewhere", "B = 3 on the last rank, 2 elsewhere",
                                     "k = 2 on the last rank, 4 elsewhere (C = 4)"};
        size_t B = v == 1 && g_rank == bad ? 3 : 2, C = v == 0 ? (g_rank == bad ? 4 : 3) : 4;
        size_t k = v == 2 ? (g_rank == bad ? 2 : 4) : 0, sa[4], n = B * len * C * (k ? k : 1);
        double *a = (double *)malloc((n ? n : 1) * sizeof *a), *b = (double *)malloc((B * len * C + 1) * sizeof *b);
        prn_tensor *ta, *tb, *out = (prn_tensor *)&g_rs, *fin = (prn_tensor *)&g_rs;
        prn_status s;
        int cause, any_cause = 0, all_failed = 0;
        for (i = 0; i < n; ++i) a[i] = 0.5;
        for (i = 0; i < B * len * C; ++i) b[i] = 1;
        sa[0] = B; sa[1] = len; sa[2] = C; sa[3] = k;
        ta = tensor_of(PRN_F64, k ? 4 : 3, sa, a, 0);
        tb = tensor_of(PRN_F64, 3, sa, b, 0);
        if (all_ok(ta && tb)) {
            s = k ? prn_mpi_scan_block(g_ctx, g_mpi, ta, tb, NULL, 0, &out, &fin)
                  : prn_mpi_scan_diag(g_ctx, g_mpi, ta, tb, NULL, 0, &out, &fin);
            /* some rank reports the cause (not only PRN_ERR_REMOTE) */
            cause = s != PRN_OK && s != PRN_ERR_REMOTE;
            MPI_Allreduce(&cause, &any_cause, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
            all_failed = all_ok(s != PRN_OK);
            PRNT_CHECK(s != PRN_OK, "%s: got PRN_OK", what[v]);
            PRNT_CHECK(all_failed && any_cause, "%s: not every rank failed, or every one with PRN_ERR_REMOTE; here %s (%s)",
                       what[v], prn_status_string(s), prn_last_error(g_ctx));
            PRNT_CHECK(out == (prn_tensor *)&g_rs && fin == (prn_tensor *)&g_rs, "%s: an output was written", what[v]);
            if (s == PRN_OK) { prn_tensor_free(out); prn_tensor_free(fin); }
        }
        prn_tensor_free(ta); prn_tensor_free(tb);
        free(a); free(b);
        scan_still_works(what[v]);
    }
}

/* DEER: a callback failing on the last rank at its third call; NaN in one
 * rank's x; options the MPI version does not support. */
static void test_deer_failures(void) {
    size_t B = 2, T = 24, start, len;
    int bad = g_size - 1;
    ucell u;
    prn_deer_system cell;
    prn_deer_options o;
    prn_deer_stats st;
    prn_tensor *xr, *xn, *y, *sentinel = (prn_tensor *)&g_rs, *warm = NULL;
    double *x;
    prn_status s;
    size_t tape;
    prn_rnn *r = make_gru(PRN_F64, UC_X, 4);
    ucell_make(&u, &cell);
    prn_mpi_split(g_mpi, T, g_rank, &start, &len);
    rng_seed(11);
    x = rand_vec(B * len * UC_X, -1, 1, PRN_F64);
    xr = tensor3(PRN_F64, B, len, UC_X, x, 0);
    if (len) x[len * UC_X / 2] = NAN;
    xn = tensor3(PRN_F64, B, len, UC_X, x, 0);
    memset(&o, 0, sizeof o);
    tape = prn_tape_size(g_ctx);
    if (!all_ok(xr && xn && r && u.W && u.U && u.b)) goto done;
    /* the jacobian callback fails on the last rank at its third call (the
     * even split of 24 steps leaves nobody empty) */
    u.calls = 0;
    u.fail_at = g_rank == bad ? 3 : 0;
    y = sentinel;
    s = prn_mpi_deer(g_ctx, g_mpi, &cell, xr, NULL, &o, &y, &st);
    check_remote(s, bad, PRN_ERR_IO, "injected failure at call 3", y == sentinel, "a failing jacobian callback");
    PRNT_CHECK(prn_tape_size(g_ctx) == tape, "failing callback: tape %lu -> %lu", (unsigned long)tape,
               (unsigned long)prn_tape_size(g_ctx));
    if (y != sentinel) prn_tensor_free(y);
    /* the same cell, not failing, works on every rank afterwards */
    u.fail_at = 0;
    y = NULL;
    prn_no_grad_begin(g_ctx);
    PRNT_OK(g_ctx, prn_mpi_deer(g_ctx, g_mpi, &cell, xr, NULL, &o, &y, &st));
    prn_no_grad_end(g_ctx);
    PRNT_CHECK(y && st.converged, "after the failure: converged %d", st.converged);
    prn_tensor_free(y);
    /* NaN in x on the last rank: prn_deer's PRN_ERR_NONFINITE there, REMOTE elsewhere */
    y = sentinel;
    s = prn_mpi_deer_rnn(g_ctx, g_mpi, r, g_rank == bad ? xn : xr, NULL, &o, &y, &st);
    check_remote(s, bad, PRN_ERR_NONFINITE, NULL, y == sentinel, "NaN in the last rank's x");
    if (y != sentinel) prn_tensor_free(y);
    /* unsupported options, on every rank alike */
    o.adaptive = 1;
    y = sentinel;
    s = prn_mpi_deer_rnn(g_ctx, g_mpi, r, xr, NULL, &o, &y, &st);
    check_all_fail(s, PRN_ERR_UNSUPPORTED, y == sentinel, "prn_mpi_deer_rnn with adaptive damping");
    o.adaptive = 0;
    o.warm = &warm;
    s = prn_mpi_deer(g_ctx, g_mpi, &cell, xr, NULL, &o, &y, &st);
    check_all_fail(s, PRN_ERR_UNSUPPORTED, y == sentinel && warm == NULL, "prn_mpi_deer with a warm start");
    scan_still_works("the DEER failures");
done:
    prn_tensor_free(xr); prn_tensor_free(xn);
    free(x);
    ucell_free(&u);
    prn_rnn_free(r);
}

/* Arguments that differ on the last rank: every rank fails alike
 * (PRN_ERR_SHAPE naming what differs) instead of hanging in a collective,
 * and the layer works afterwards. prn_mpi_scyfi: kmax (the hang),
 * seed, batch, a model value, exhaustive; prn_mpi_deer_rnn: max_iter and
 * no_fallback, which decide how many collective rounds a rank runs. */
static void test_option_mismatch(void) {
    int bad = g_size - 1, v, here = g_rank == bad;
    tmodel t;
    if (g_size == 1) {
        PRNT_SKIP("needs 2 ranks or more");
        return;
    }
    for (v = 0; v < 5; ++v) {
        static const char *what[] = {"opt->kmax", "opt->seed", "opt->batch", "the model", "opt->exhaustive"};
        prn_scyfi_options o;
        prn_scyfi_result *r = (prn_scyfi_result *)&g_rs;
        prn_status s;
        random_model(&t, PRN_PWL_PLRNN, 3, 0, 0, 0, 1u, 1.2);
        memset(&o, 0, sizeof o);
        o.kmax = 3;
        if (here) {
            if (v == 0) o.kmax = 2;
            if (v == 1) o.seed = 99;
            if (v == 2) o.batch = 7;
            if (v == 3) t.m.A[0] += 0.125;
            if (v == 4) o.exhaustive = 1;
        }
        s = prn_mpi_scyfi(g_ctx, g_mpi, &t.m, &o, &r);
        PRNT_CHECK(s == PRN_ERR_SHAPE && strstr(prn_last_error(g_ctx), what[v]) != NULL,
                   "prn_mpi_scyfi, %s differs on rank %d: %s (%s)", what[v], bad, prn_status_string(s), prn_last_error(g_ctx));
        PRNT_CHECK(r == (prn_scyfi_result *)&g_rs, "prn_mpi_scyfi, %s differs: *out written", what[v]);
        if (s == PRN_OK) prn_scyfi_free(g_ctx, r);
    }
    random_model(&t, PRN_PWL_PLRNN, 3, 0, 0, 0, 1u, 1.2);
    PRNT_CHECK(scyfi_case(&t.m, 3, 0, 0, 11, "after the mismatches") >= 0, "prn_mpi_scyfi after the mismatches");
    {
        size_t B = 2, T = 12, start, len;
        prn_rnn *r = make_gru(PRN_F64, UC_X, 4);
        prn_tensor *xr, *y, *sentinel = (prn_tensor *)&g_rs;
        prn_deer_options o;
        prn_deer_stats st;
        double *x;
        prn_status s;
        prn_mpi_split(g_mpi, T, g_rank, &start, &len);
        rng_seed(5);
        x = rand_vec(B * len * UC_X, -1, 1, PRN_F64);
        xr = tensor3(PRN_F64, B, len, UC_X, x, 0);
        if (all_ok(xr && r)) {
            for (v = 0; v < 2; ++v) {
                static const char *what[] = {"opt->max_iter", "opt->no_fallback"};
                memset(&o, 0, sizeof o);
                o.max_iter = 2;
                if (here && v == 0) o.max_iter = 50;
                if (here && v == 1) o.no_fallback = 1;
                y = sentinel;
                prn_no_grad_begin(g_ctx);
                s = prn_mpi_deer_rnn(g_ctx, g_mpi, r, xr, NULL, &o, &y, &st);
                prn_no_grad_end(g_ctx);
                PRNT_CHECK(s == PRN_ERR_SHAPE && strstr(prn_last_error(g_ctx), what[v]) != NULL,
                           "prn_mpi_deer_rnn, %s differs on rank %d: %s (%s)", what[v], bad, prn_status_string(s),
                           prn_last_error(g_ctx));
                PRNT_CHECK(y == sentinel, "prn_mpi_deer_rnn, %s differs: y written", what[v]);
                if (y != sentinel) prn_tensor_free(y);
            }
        }
        prn_tensor_free(xr);
        free(x);
        prn_rnn_free(r);
    }
    {   /* the scan's direction: it picks the communicator the carries go through */
        size_t T = 10, start, len, i, sa[3];
        double *a, *b;
        prn_tensor *ta, *tb, *out = (prn_tensor *)&g_rs;
        prn_status s;
        prn_mpi_split(g_mpi, T, g_rank, &start, &len);
        sa[0] = 2; sa[1] = len; sa[2] = 3;
        a = (double *)malloc((2 * len * 3 + 1) * sizeof *a);
        b = (double *)malloc((2 * len * 3 + 1) * sizeof *b);
        for (i = 0; i < 2 * len * 3; ++i) { a[i] = 0.5; b[i] = 1; }
        ta = tensor_of(PRN_F64, 3, sa, a, 0);
        tb = tensor_of(PRN_F64, 3, sa, b, 0);
        if (all_ok(ta && tb)) {
            s = prn_mpi_scan_diag(g_ctx, g_mpi, ta, tb, NULL, here, &out, NULL);
            PRNT_CHECK(s == PRN_ERR_SHAPE && strstr(prn_last_error(g_ctx), "reverse") != NULL,
                       "prn_mpi_scan_diag, reverse on rank %d only: %s (%s)", bad, prn_status_string(s),
                       prn_last_error(g_ctx));
            PRNT_CHECK(out == (prn_tensor *)&g_rs, "prn_mpi_scan_diag, reverse differs: out written");
            if (s == PRN_OK) prn_tensor_free(out);
        }
        prn_tensor_free(ta); prn_tensor_free(tb);
        free(a); free(b);
    }
    scan_still_works("the option mismatches");
}

/* The data-parallel calls with one rank's bad input: the last rank passes
 * NULL parameters to prn_mpi_allreduce_grads, a bad root is refused
 * everywhere by prn_mpi_broadcast. */
static void test_grad_failures(void) {
    prn_tensor *p[1];
    double v[6] = {1, 2, 3, 4, 5, 6};
    int bad = g_size - 1;
    prn_status s;
    p[0] = tensor2(PRN_F64, 2, 3, v, 1);
    if (!all_ok(p[0] != NULL)) { prn_tensor_free(p[0]); return; }
    PRNT_OK(g_ctx, prn_tensor_set_grad(p[0], p[0]));
    s = prn_mpi_allreduce_grads(g_ctx, g_mpi, g_rank == bad ? NULL : p, 1, 0);
    check_remote(s, bad, PRN_ERR_NULL_ARGUMENT, NULL, 1, "allreduce_grads with NULL params on the last rank");
    check_all_fail(prn_mpi_broadcast(g_ctx, g_mpi, p, 1, g_size), PRN_ERR_INVALID_ARGUMENT, 1, "broadcast from root = size");
    check_all_fail(prn_mpi_broadcast(g_ctx, g_mpi, p, 1, -1), PRN_ERR_INVALID_ARGUMENT, 1, "broadcast from root = -1");
    /* and a good allreduce afterwards */
    PRNT_OK(g_ctx, prn_mpi_allreduce_grads(g_ctx, g_mpi, p, 1, 1));
    {
        double *g = grad_of(p[0]);
        PRNT_CHECK(max_err(g, v, 6, 1.0) <= 1e-15, "mean of equal gradients: %g, want 1", g[0]);
        free(g);
    }
    prn_tensor_free(p[0]);
    scan_still_works("the gradient failures");
}

int main(int argc, char **argv) {
    prn_config cfg;
    char err[256] = "";
    int ok, all;
    prn_status s;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    g_out = g_rank ? stderr : stdout;
    if (g_rank && !freopen("/dev/null", "w", stdout)) g_out = stderr; /* only rank 0 reports */
    g_quick = getenv("PRNT_QUICK") != NULL;
    /* the backend PARRNN_BACKEND names; one thread per call when ranks
     * share the machine's cores */
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = 1;
    cfg.num_threads = g_size > 1 ? 1 : 0;
    s = prn_context_create(&cfg, &g_ctx, err, sizeof err);
    if (s == PRN_OK) s = prn_mpi_create(g_ctx, MPI_COMM_WORLD, &g_mpi);
    ok = s == PRN_OK;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all) {
        fprintf(g_out, "rank %d: set-up: %s%s\n", g_rank, err, g_ctx ? prn_last_error(g_ctx) : "");
        printf("summary passed=0 failed=1 skipped=0\n");
        if (g_mpi) prn_mpi_free(g_mpi);
        prn_context_free(g_ctx);
        MPI_Finalize();
        return 1;
    }
    g_slow = strncmp(prn_context_backend_name(g_ctx), "reference", 9) != 0;
    printf("backend: %s, %d rank%s\n", prn_context_backend_name(g_ctx), g_size, g_size > 1 ? "s" : "");
    PRNT_MPI_RUN(test_handle_and_split);
    PRNT_MPI_RUN(test_scan_diag);
    PRNT_MPI_RUN(test_scan_block);
    PRNT_MPI_RUN(test_scan_splits);
    PRNT_MPI_RUN(test_scan_long_slices);
    PRNT_MPI_RUN(test_scan_backward);
    PRNT_MPI_RUN(test_deer_rnn);
    PRNT_MPI_RUN(test_deer_not_converged);
    PRNT_MPI_RUN(test_deer_user_cell);
    PRNT_MPI_RUN(test_allreduce_grads);
    PRNT_MPI_RUN(test_broadcast);
    PRNT_MPI_RUN(test_scyfi);
    PRNT_MPI_RUN(test_agree);
    PRNT_MPI_RUN(test_scan_bad_input);
    PRNT_MPI_RUN(test_deer_failures);
    PRNT_MPI_RUN(test_scan_mismatch);
    PRNT_MPI_RUN(test_option_mismatch);
    PRNT_MPI_RUN(test_grad_failures);
    prn_mpi_free(g_mpi);
    prn_context_free(g_ctx);
    MPI_Finalize();
    if (g_rank == 0) return prnt_summary();
    return prnt_failed ? 1 : 0;
}
