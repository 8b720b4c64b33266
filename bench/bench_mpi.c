/* bench_mpi.c - parrnn across MPI ranks (backends/parrnn_mpi.h): scaling of
 * the sequence-parallel scans and of DEER, the cost of the carry exchange,
 * the network's latency and bandwidth, and a communication cost model for
 * many ranks.
 *
 * Run it once per rank count; each run compares with the 1-rank baseline
 * measured in the same run:
 *     mpirun -np 1 ./build/bench/bench_mpi
 *     mpirun -np 2 ./build/bench/bench_mpi
 *     mpirun -np 4 ./build/bench/bench_mpi      (bench/run_mpi_bench.sh: all three)
 *
 * What is measured (P = the number of ranks of this run; f32 data; every
 * rank runs --threads threads, default 1, so that P ranks use P cores and
 * the 1-rank baseline uses one):
 *
 * 1. Scans (batch 1, C = 64 channels, forward, h0 = 0, gradients off):
 *      diag   prn_mpi_scan_diag, a = decays in [0.9, 0.999]
 *      block  prn_mpi_scan_block, blocks of k = 8 (8 blocks; contracting)
 *    weak scaling: T_r steps per rank fixed (diag 5e5, block 1e5), T = P T_r;
 *    strong scaling: T fixed (diag 2e6, block 4e5), T_r = T / P.
 *    Beside each: the non-MPI baseline, prn_scan_diag / prn_scan_block of
 *    the whole T on rank 0 alone (the other ranks wait sleeping, not
 *    spinning, so that they leave rank 0 its core), and the MPI algorithm
 *    on one rank (prn_mpi_* on MPI_COMM_SELF, rank 0 alone): its local work
 *    without communication. speedup = baseline seconds / MPI seconds;
 *    efficiency = speedup / P. Each rank generates its slice from the
 *    global step index, so all runs scan the same sequence; the final
 *    state (on every rank) is compared with the baseline's (max_rel_dev:
 *    largest |difference| / largest |value|).
 * 2. DEER: prn_mpi_deer_rnn of a GRU (hidden 8, input 8, batch 2, dense
 *    Jacobians, default options), weak (T_r = 1e4) and strong (T = 4e4);
 *    baselines prn_deer_rnn and prn_rnn_forward (sequential) of the whole
 *    T on rank 0; max_abs_dev: the last step's states against
 *    prn_rnn_forward.
 * 3. Communication: (a) the carry exchange: prn_mpi_scan_diag / _block
 *    with T_r = 1 step per rank (so the time is the call's fixed cost:
 *    the agreement on the ranks' status, the exclusive scan of the maps,
 *    the final state) for B C = 64 and 4096 carries, forward and forward +
 *    backward, against prn_scan_diag of T = 1 on one rank; (b) latency
 *    alpha and inverse bandwidth beta from a ping-pong (MPI_Send/MPI_Recv)
 *    between ranks 0 and 1 of 8 B .. 1 MiB: alpha = one-way time of 8 B,
 *    beta = (t(1 MiB) - t(8 B)) / (1 MiB - 8 B). Needs P >= 2.
 * 4. A cost model for P = 64 .. 1024 ranks (printed with its assumptions):
 *    predicted time of one sequence-parallel scan of T = 1e8 and 1e9 steps,
 *    C = 64, from the local per-step cost c measured here (a rank that is
 *    not the first, measured on ranks 0 and 1 alone: P >= 2 runs) and the
 *    communication cost
 *    ceil(log2 P) (alpha + m beta + compose) of the exclusive scan of one
 *    map per rank, m = B C (k + 1) 8 bytes (each block of k channels: a
 *    k x k matrix and a k-vector, f64), plus MODEL_SMALL_COLLECTIVES
 *    latency-bound collectives of ceil(log2 P) alpha; for this machine's
 *    shared memory (alpha, beta measured; P >= 2 runs), an assumed cluster
 *    interconnect (alpha = 2 us, 10 GB/s), and that interconnect with c at
 *    an estimated floor for this algorithm (diag: 2 passes of the
 *    single-process scan; blocks of k: 2 + k, for the k^3 products).
 *
 * Timing: MPI measurements are the best over repetitions (a warm-up, then
 * up to 5, 3 with --quick; calls over 1 s: one) of the slowest rank's time,
 * each repetition starting after an MPI_Barrier (MPI_Wtime; the ranks'
 * times are combined by MPI_Allreduce(MAX)). Rank-0 baselines use
 * bench_common.h's time_best.
 *
 * Output (rank 0): the machine report, tables for people, then one line
 * per measurement:
 *   BENCH name=mpi_scan_<diag|block>_<weak|strong> backend=<b> ranks=<P> T=<T> T_per_rank=<T_r> C=64 k=<k>
 *         threads=<t> seconds=<s> seq_seconds=<s> self_seconds=<s> speedup=<v> efficiency=<v> max_rel_dev=<d>
 *   BENCH name=mpi_deer_<weak|strong> backend=<b> ranks=<P> T=<T> T_per_rank=<T_r> hidden=8 batch=2
 *         threads=<t> seconds=<s> iterations=<k> seq_seconds=<prn_deer_rnn s> seq_iterations=<k>
 *         self_seconds=<s> forward_seconds=<prn_rnn_forward s> speedup=<v> efficiency=<v> max_abs_dev=<d>
 *   BENCH name=mpi_carry_exchange_<diag|block>[_fwdbwd] backend=<b> ranks=<P> T=<P> C=<C> k=<k>
 *         seconds=<s> local_seconds=<s> exchange_seconds=<s> model_seconds=<s>
 *   BENCH name=pingpong backend=mpi ranks=<P> bytes=<n> seconds=<one-way s> gbps=<v>
 *   BENCH name=mpi_model_scan backend=model network=<shm|cluster|cluster_floor> ranks=<P> T=<T> C=64 k=<k>
 *         seconds=<predicted> local_seconds=<s> comm_seconds=<s> speedup=<v> efficiency=<v>
 *   (one line each).
 *
 * Usage: mpirun -np P bench_mpi [--quick] [--threads N] [--backend NAME]
 *   --quick         small sizes (a few seconds): a CI smoke run
 *   --threads N     threads per rank (default 1)
 *   --backend NAME  the parrnn backend of every rank (default: $PARRNN_BACKEND,
 *                   else "reference")
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep under -std=c99 */

#include "parrnn.h"
#include "backends/parrnn_mpi.h"
#include "bench_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <unistd.h>

static int g_rank = 0, g_size = 1;
static prn_context *g_ctx = NULL;
static prn_mpi *g_mpi = NULL;       /* MPI_COMM_WORLD */
static prn_mpi *g_self = NULL;      /* MPI_COMM_SELF, rank 0 only */
static MPI_Comm g_pair_comm = MPI_COMM_NULL; /* ranks 0 and 1 (P >= 2) */
static prn_mpi *g_pair = NULL;      /* on g_pair_comm, ranks 0 and 1 only */
static const char *g_backend = NULL;

/* BENCH lines, printed at the end (rank 0). */
static char g_lines[1 << 16];
static size_t g_lines_len = 0;
static void bench_line(const char *fmt, ...) {
    va_list ap;
    int n;
    if (g_rank != 0 || g_lines_len >= sizeof g_lines - 1) return;
    va_start(ap, fmt);
    n = vsnprintf(g_lines + g_lines_len, sizeof g_lines - g_lines_len, fmt, ap);
    va_end(ap);
    if (n > 0) g_lines_len += (size_t)n;
    if (g_lines_len > sizeof g_lines - 1) g_lines_len = sizeof g_lines - 1;
}

static void fail(const char *what) {
    fprintf(stderr, "bench_mpi: rank %d: %s failed: %s\n", g_rank, what, g_ctx ? prn_last_error(g_ctx) : "");
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}
#define CHECK(call)                  \
    do {                             \
        if ((call) != PRN_OK) fail(#call); \
    } while (0)

/* ---------------------------------------------------------------- inputs */
/* Uniform in [0, 1) from a global index: every rank computes the same
 * number for the same (array, step, channel), whatever the split. */
static double unit(uint64_t seed, uint64_t i) {
    uint64_t z = i * 0x9e3779b97f4a7c15ULL + seed * 0xbf58476d1ce4e5b9ULL + 0x94d049bb133111ebULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* Steps start .. start+len-1 of a [1, T, C] (k = 1) or [1, T, C, k] array:
 * what 0: decays a, 1: inputs b. */
static prn_tensor *make_array(int what, size_t start, size_t len, size_t C, size_t k) {
    size_t per = what == 0 ? C * k : C, n = len * per, t, j;
    float *h = (float *)xmalloc((n + 1) * sizeof *h);
    size_t shape[4];
    prn_tensor *out;
    for (t = 0; t < len; ++t)
        for (j = 0; j < per; ++j) {
            uint64_t gi = (uint64_t)(start + t) * per + j;
            double u = unit((uint64_t)(what * 16 + (int)k), gi), v;
            if (what == 1) v = 2.0 * u - 1.0;
            else if (k == 1) v = 0.9 + 0.099 * u;
            else {
                size_t row = j / k, col = j % k;
                v = (row % k == col ? 0.6 : 0.0) + (0.6 / (double)k) * (2.0 * u - 1.0); /* contracting */
            }
            h[t * per + j] = (float)v;
        }
    shape[0] = 1; shape[1] = len; shape[2] = C; shape[3] = k;
    CHECK(prn_tensor_from_host(g_ctx, PRN_F32, (what == 0 && k > 1) ? 4 : 3, shape, h, &out));
    free(h);
    return out;
}

/* GRU inputs [B, T_r, I] for global steps start .. start+len-1. */
static prn_tensor *make_x(size_t B, size_t T, size_t start, size_t len, size_t nin) {
    float *h = (float *)xmalloc((B * len * nin + 1) * sizeof *h);
    size_t b, t, i, shape[3];
    prn_tensor *out;
    for (b = 0; b < B; ++b)
        for (t = 0; t < len; ++t)
            for (i = 0; i < nin; ++i)
                h[(b * len + t) * nin + i] = (float)(3.0 * unit(99, ((uint64_t)b * T + start + t) * nin + i) - 1.5);
    shape[0] = B; shape[1] = len; shape[2] = nin;
    CHECK(prn_tensor_from_host(g_ctx, PRN_F32, 3, shape, h, &out));
    free(h);
    return out;
}

/* ---------------------------------------------------------------- timing */
/* Every rank but 0 waits here without spinning (a nonblocking barrier
 * polled every 0.2 ms), so that rank 0 has its core for a baseline; rank 0
 * arrives when it is done. */
static void idle_barrier(void) {
    MPI_Request req;
    int done = 0;
    struct timespec ts;
    ts.tv_sec = 0;
    ts.tv_nsec = 200000L;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    for (;;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done) break;
        nanosleep(&ts, NULL);
    }
}

/* fn on rank 0 alone (time_best); the others sleep. Result on every rank. */
static void time_rank0(bench_fn fn, void *user, double *best) {
    int bad = 0;
    *best = 0.0;
    if (g_rank == 0) bad = time_best(fn, user, best);
    idle_barrier();
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(best, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (bad) fail("a rank-0 baseline");
}

/* fn on every rank of comm together: the best over repetitions of the
 * slowest rank's time. Every decision is taken on the reduced (common)
 * values, so all ranks repeat alike. */
static void time_comm(MPI_Comm comm, bench_fn fn, void *user, double *best) {
    int r, reps = g_quick ? 3 : 5, bad, anybad;
    double b = 1e300, t, tmax, spent = 0.0;
    for (r = 0; r <= reps; ++r) { /* r == 0: warm-up */
        MPI_Barrier(comm);
        t = MPI_Wtime();
        bad = fn(user);
        t = MPI_Wtime() - t;
        MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, comm);
        if (anybad) fail("a timed MPI call (on some rank)");
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, comm);
        spent += tmax;
        if (r > 0 && tmax < b) b = tmax;
        if (r == 0 && tmax > 1.0) reps = 1;                 /* slow calls: one more */
        if (r >= 2 && spent > (g_quick ? 1.0 : 4.0)) break; /* enough */
    }
    *best = b;
}
static void time_all(bench_fn fn, void *user, double *best) { time_comm(MPI_COMM_WORLD, fn, user, best); }
/* fn on ranks 0 and 1 alone (P >= 2), the others sleeping. */
static void time_pair(bench_fn fn, void *user, double *best) {
    *best = 0.0;
    if (g_rank <= 1) time_comm(g_pair_comm, fn, user, best);
    idle_barrier();
    MPI_Bcast(best, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}

/* ---------------------------------------------------------------- scans */
typedef struct scan_case {
    prn_mpi *mpi;      /* NULL: the single-process call */
    prn_tensor *a, *b;
    int block;
    int iters;         /* calls per timed run */
    int backward;      /* forward + backward */
} scan_case;

static int run_scan(void *user) {
    scan_case *c = (scan_case *)user;
    int i;
    for (i = 0; i < c->iters; ++i) {
        prn_tensor *out = NULL, *s = NULL;
        prn_status st;
        if (c->mpi)
            st = c->block ? prn_mpi_scan_block(g_ctx, c->mpi, c->a, c->b, NULL, 0, &out, NULL)
                          : prn_mpi_scan_diag(g_ctx, c->mpi, c->a, c->b, NULL, 0, &out, NULL);
        else
            st = c->block ? prn_scan_block(g_ctx, c->a, c->b, NULL, 0, PRN_SCAN_AUTO, &out)
                          : prn_scan_diag(g_ctx, c->a, c->b, NULL, 0, PRN_SCAN_AUTO, &out);
        if (st == PRN_OK && c->backward) {
            st = prn_sum(g_ctx, out, PRN_ALL_AXES, 0, &s);
            if (st == PRN_OK) st = prn_backward(g_ctx, s);
            prn_tensor_zero_grad(c->a);
            prn_tensor_zero_grad(c->b);
        }
        prn_tensor_free(s);
        prn_tensor_free(out);
        if (st != PRN_OK) {
            fprintf(stderr, "bench_mpi: rank %d: %s\n", g_rank, prn_last_error(g_ctx));
            return 1;
        }
    }
    return 0;
}

/* The final state of the MPI scan over this run's split (every rank has
 * it) against the last step of the single-process scan on rank 0: largest
 * |difference| / largest |value|, on every rank. */
static double scan_check(prn_tensor *a, prn_tensor *b, int block, prn_tensor *fa, prn_tensor *fb, size_t T,
                         size_t C) {
    prn_tensor *out = NULL, *fin = NULL;
    double *v = (double *)xmalloc(2 * C * sizeof *v), dev = 0.0, mx = 0.0;
    float *f = (float *)xmalloc(2 * C * sizeof *f);
    size_t i;
    CHECK(block ? prn_mpi_scan_block(g_ctx, g_mpi, a, b, NULL, 0, &out, &fin)
                : prn_mpi_scan_diag(g_ctx, g_mpi, a, b, NULL, 0, &out, &fin));
    CHECK(prn_tensor_download(fin, f, C));
    for (i = 0; i < C; ++i) v[i] = f[i];
    prn_tensor_free(out);
    prn_tensor_free(fin);
    if (g_rank == 0) {
        prn_tensor *full = NULL, *last = NULL;
        CHECK(block ? prn_scan_block(g_ctx, fa, fb, NULL, 0, PRN_SCAN_AUTO, &full)
                    : prn_scan_diag(g_ctx, fa, fb, NULL, 0, PRN_SCAN_AUTO, &full));
        CHECK(prn_slice(g_ctx, full, 1, T - 1, 1, &last));
        CHECK(prn_tensor_download(last, f + C, C));
        for (i = 0; i < C; ++i) {
            double d = fabs(v[i] - (double)f[C + i]);
            if (!(d <= dev)) dev = d;
            if (fabs((double)f[C + i]) > mx) mx = fabs((double)f[C + i]);
        }
        dev = mx > 0 ? dev / mx : dev;
        prn_tensor_free(full);
        prn_tensor_free(last);
    }
    MPI_Bcast(&dev, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    free(v);
    free(f);
    return dev;
}

typedef struct scan_result {
    double mpi, seq, self, dev;
} scan_result;

/* One scaling measurement: T_r steps on this rank (start), T in all. */
static scan_result scan_scaling(int block, size_t T, size_t C, size_t k) {
    size_t start, len;
    scan_result r;
    scan_case c;
    prn_tensor *a, *b, *fa = NULL, *fb = NULL;
    prn_mpi_split(g_mpi, T, g_rank, &start, &len);
    a = make_array(0, start, len, C, k);
    b = make_array(1, start, len, C, k);
    memset(&c, 0, sizeof c);
    c.mpi = g_mpi; c.a = a; c.b = b; c.block = block; c.iters = 1;
    time_all(run_scan, &c, &r.mpi);
    if (g_rank == 0) {
        fa = make_array(0, 0, T, C, k);
        fb = make_array(1, 0, T, C, k);
    }
    r.dev = scan_check(a, b, block, fa, fb, T, C);
    prn_tensor_free(a);
    prn_tensor_free(b);
    /* The baselines, rank 0 alone: the single-process scan and the MPI
     * algorithm on one rank (its local work, no communication). */
    c.mpi = NULL; c.a = fa; c.b = fb;
    time_rank0(run_scan, &c, &r.seq);
    c.mpi = g_self;
    time_rank0(run_scan, &c, &r.self);
    prn_tensor_free(fa);
    prn_tensor_free(fb);
    return r;
}

/* Per-step local work of a rank that is not the first (a scan from zero,
 * the product of its a's, a scan from the carry), from ranks 0 and 1 alone
 * with T_r steps each: the slowest rank's time / T_r. */
static double pair_local_cost(int block, size_t T_r, size_t C, size_t k) {
    size_t start, len;
    double t = 0.0;
    scan_case c;
    prn_tensor *a = NULL, *b = NULL;
    if (g_size < 2) return 0.0;
    if (g_rank <= 1) {
        prn_mpi_split(g_pair, 2 * T_r, g_rank, &start, &len);
        a = make_array(0, start, len, C, k);
        b = make_array(1, start, len, C, k);
    }
    memset(&c, 0, sizeof c);
    c.mpi = g_pair; c.a = a; c.b = b; c.block = block; c.iters = 1;
    time_pair(run_scan, &c, &t);
    prn_tensor_free(a);
    prn_tensor_free(b);
    return t / (double)T_r;
}

static void scan_section(size_t C, double *c_seq, double *c_mpi, double *c_seq_blk, double *c_mpi_blk) {
    static const char *kinds[2] = {"diag", "block"};
    size_t Tw[2], Ts[2], ks[2] = {1, 8};
    int kind, mode;
    Tw[0] = g_quick ? 8192 : 500000;
    Tw[1] = g_quick ? 2048 : 100000;
    Ts[0] = g_quick ? 32768 : 2000000;
    Ts[1] = g_quick ? 8192 : 400000;
    if (g_rank == 0) {
        printf("\n1. Sequence-parallel scans: batch 1, C = %lu, f32, forward; times in seconds (best of a few)\n",
               (unsigned long)C);
        printf("   baseline: prn_scan_diag / prn_scan_block of the whole T on rank 0 alone; 'MPI on 1 rank': the\n"
               "   prn_mpi_* call on MPI_COMM_SELF (its local work); speedup = baseline / MPI; efficiency = speedup / P\n");
        printf("   %-6s %-7s %5s %10s %10s %10s %10s %11s %8s %10s %11s\n", "scan", "scaling", "P", "T", "T/rank",
               "MPI", "baseline", "MPI 1 rank", "speedup", "efficiency", "final dev");
    }
    for (kind = 0; kind < 2; ++kind)
        for (mode = 0; mode < 2; ++mode) {
            size_t T = mode == 0 ? Tw[kind] * (size_t)g_size : Ts[kind], k = ks[kind];
            size_t tr = mode == 0 ? Tw[kind] : T / (size_t)g_size;
            scan_result r = scan_scaling(kind, T, C, k);
            double sp = r.seq / r.mpi, eff = sp / g_size;
            if (g_rank == 0) {
                printf("   %-6s %-7s %5d %10lu %10lu %10.4f %10.4f %11.4f %8.2f %10.2f %11.1e\n", kinds[kind],
                       mode == 0 ? "weak" : "strong", g_size, (unsigned long)T, (unsigned long)tr, r.mpi, r.seq,
                       r.self, sp, eff, r.dev);
                fflush(stdout);
            }
            bench_line("BENCH name=mpi_scan_%s_%s backend=%s ranks=%d T=%lu T_per_rank=%lu C=%lu k=%lu threads=%d "
                       "seconds=%.6g seq_seconds=%.6g self_seconds=%.6g speedup=%.4g efficiency=%.4g "
                       "max_rel_dev=%.3g\n",
                       kinds[kind], mode == 0 ? "weak" : "strong", g_backend, g_size, (unsigned long)T,
                       (unsigned long)tr, (unsigned long)C, (unsigned long)k, g_threads, r.mpi, r.seq, r.self, sp,
                       eff, r.dev);
            if (mode == 1) { /* per-step costs for the model: the strong T on one rank */
                if (kind == 0) { *c_seq = r.seq / (double)T; *c_mpi = r.self / (double)T; }
                else { *c_seq_blk = r.seq / (double)T; *c_mpi_blk = r.self / (double)T; }
            }
        }
    /* The model's per-step local work: a rank that is not the first does
     * more than the MPI call on one rank (the first rank's path, one scan
     * from h0): measured on ranks 0 and 1 alone. */
    if (g_size >= 2) {
        double d = pair_local_cost(0, Tw[0], C, 1), bl = pair_local_cost(1, Tw[1], C, 8);
        if (g_rank == 0)
            printf("   per-step local work of a rank that is not the first (ranks 0 and 1 alone, T/rank = %lu and %lu):\n"
                   "   diag %.3g ns, block %.3g ns per step (one rank, the first rank's path: %.3g, %.3g ns;\n"
                   "   single-process scan: %.3g, %.3g ns)\n",
                   (unsigned long)Tw[0], (unsigned long)Tw[1], 1e9 * d, 1e9 * bl, 1e9 * *c_mpi, 1e9 * *c_mpi_blk,
                   1e9 * *c_seq, 1e9 * *c_seq_blk);
        bench_line("BENCH name=mpi_scan_local_cost backend=%s ranks=2 T_per_rank=%lu C=%lu k=1 threads=%d "
                   "seconds_per_step=%.6g self_seconds_per_step=%.6g seq_seconds_per_step=%.6g\n",
                   g_backend, (unsigned long)Tw[0], (unsigned long)C, g_threads, d, *c_mpi, *c_seq);
        bench_line("BENCH name=mpi_scan_local_cost backend=%s ranks=2 T_per_rank=%lu C=%lu k=8 threads=%d "
                   "seconds_per_step=%.6g self_seconds_per_step=%.6g seq_seconds_per_step=%.6g\n",
                   g_backend, (unsigned long)Tw[1], (unsigned long)C, g_threads, bl, *c_mpi_blk, *c_seq_blk);
        *c_mpi = d;
        *c_mpi_blk = bl;
    }
}

/* ---------------------------------------------------------------- DEER */
typedef struct deer_case {
    prn_mpi *mpi; /* NULL: prn_deer_rnn; sequential: prn_rnn_forward */
    int sequential;
    prn_rnn *rnn;
    prn_tensor *x;
    int iterations;
    prn_tensor *keep; /* when set to a non-NULL pointer: keep y */
    int keep_y;
} deer_case;

static int run_deer(void *user) {
    deer_case *c = (deer_case *)user;
    prn_deer_options opt;
    prn_deer_stats st;
    prn_tensor *y = NULL;
    prn_status s;
    memset(&opt, 0, sizeof opt);
    memset(&st, 0, sizeof st);
    if (c->sequential) s = prn_rnn_forward(g_ctx, c->rnn, c->x, NULL, &y, NULL);
    else if (c->mpi) s = prn_mpi_deer_rnn(g_ctx, c->mpi, c->rnn, c->x, NULL, &opt, &y, &st);
    else s = prn_deer_rnn(g_ctx, c->rnn, c->x, NULL, &opt, &y, NULL, &st);
    if (s != PRN_OK) {
        fprintf(stderr, "bench_mpi: rank %d: %s\n", g_rank, prn_last_error(g_ctx));
        return 1;
    }
    c->iterations = st.iterations;
    if (c->keep_y) {
        prn_tensor_free(c->keep);
        c->keep = y;
    } else {
        prn_tensor_free(y);
    }
    return 0;
}

/* Last step of y [B, T_r, H] on the last rank with steps, to every rank:
 * out [B * H]. */
static void last_states(prn_tensor *y, size_t len, size_t B, size_t H, float *out) {
    int holder = 0, mine = len > 0 ? g_rank : -1;
    MPI_Allreduce(&mine, &holder, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (g_rank == holder) {
        prn_tensor *last;
        CHECK(prn_slice(g_ctx, y, 1, len - 1, 1, &last));
        CHECK(prn_tensor_download(last, out, B * H));
        prn_tensor_free(last);
    }
    MPI_Bcast(out, (int)(B * H), MPI_FLOAT, holder, MPI_COMM_WORLD);
}

static void deer_section(double *c_deer_iter, int *deer_iters) {
    const size_t H = 8, NIN = 8, B = 2;
    size_t Tw = g_quick ? 500 : 10000, Ts = g_quick ? 2000 : 40000;
    prn_rnn_config rc;
    prn_rnn *rnn;
    int mode;
    memset(&rc, 0, sizeof rc);
    rc.kind = PRN_RNN_GRU;
    rc.input_size = NIN;
    rc.hidden_size = H;
    prn_seed(g_ctx, 1234);
    CHECK(prn_rnn_create(g_ctx, &rc, &rnn)); /* the same seed: the same weights everywhere */
    prn_no_grad_begin(g_ctx);
    if (g_rank == 0) {
        printf("\n2. DEER: prn_mpi_deer_rnn of a GRU (hidden %lu, input %lu, batch %lu, dense Jacobians, f32);\n"
               "   baselines on rank 0 alone: prn_deer_rnn and the sequential prn_rnn_forward of the whole T\n",
               (unsigned long)H, (unsigned long)NIN, (unsigned long)B);
        printf("   %-7s %5s %8s %7s %9s %5s %9s %5s %10s %10s %8s %10s %10s\n", "scaling", "P", "T", "T/rank", "MPI",
               "iter", "DEER 1p", "iter", "MPI 1 rank", "sequential", "speedup", "efficiency", "last dev");
    }
    for (mode = 0; mode < 2; ++mode) {
        size_t T = mode == 0 ? Tw * (size_t)g_size : Ts, start, len, i;
        deer_case c;
        double t_mpi, t_seq, t_self, t_fwd, dev = 0.0, sp, eff;
        int it_mpi, it_seq = 0;
        float *mine = (float *)xmalloc(2 * B * H * sizeof *mine);
        prn_tensor *x, *xf = NULL;
        prn_mpi_split(g_mpi, T, g_rank, &start, &len);
        x = make_x(B, T, start, len, NIN);
        memset(&c, 0, sizeof c);
        c.mpi = g_mpi; c.rnn = rnn; c.x = x; c.keep_y = 1;
        time_all(run_deer, &c, &t_mpi);
        it_mpi = c.iterations;
        last_states(c.keep, len, B, H, mine);
        prn_tensor_free(c.keep);
        c.keep = NULL;
        prn_tensor_free(x);
        if (g_rank == 0) xf = make_x(B, T, 0, T, NIN);
        c.mpi = NULL; c.x = xf; c.keep_y = 0;
        time_rank0(run_deer, &c, &t_seq);
        MPI_Bcast(&c.iterations, 1, MPI_INT, 0, MPI_COMM_WORLD);
        it_seq = c.iterations;
        c.mpi = g_self;
        time_rank0(run_deer, &c, &t_self);
        c.mpi = NULL; c.sequential = 1; c.keep_y = 1;
        time_rank0(run_deer, &c, &t_fwd);
        if (g_rank == 0) {
            {
                prn_tensor *last;
                CHECK(prn_slice(g_ctx, c.keep, 1, T - 1, 1, &last));
                CHECK(prn_tensor_download(last, mine + B * H, B * H));
                prn_tensor_free(last);
                for (i = 0; i < B * H; ++i) {
                    double d = fabs((double)mine[i] - (double)mine[B * H + i]);
                    if (!(d <= dev)) dev = d;
                }
            }
        }
        prn_tensor_free(c.keep);
        prn_tensor_free(xf);
        free(mine);
        MPI_Bcast(&dev, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        sp = t_seq / t_mpi;
        eff = sp / g_size;
        if (g_rank == 0) {
            printf("   %-7s %5d %8lu %7lu %9.4f %5d %9.4f %5d %10.4f %10.4f %8.2f %10.2f %10.1e\n",
                   mode == 0 ? "weak" : "strong", g_size, (unsigned long)T, (unsigned long)(T / (size_t)g_size),
                   t_mpi, it_mpi, t_seq, it_seq, t_self, t_fwd, sp, eff, dev);
            fflush(stdout);
        }
        bench_line("BENCH name=mpi_deer_%s backend=%s ranks=%d T=%lu T_per_rank=%lu hidden=%lu batch=%lu threads=%d "
                   "seconds=%.6g iterations=%d seq_seconds=%.6g seq_iterations=%d self_seconds=%.6g "
                   "forward_seconds=%.6g speedup=%.4g efficiency=%.4g max_abs_dev=%.3g\n",
                   mode == 0 ? "weak" : "strong", g_backend, g_size, (unsigned long)T,
                   (unsigned long)(T / (size_t)g_size), (unsigned long)H, (unsigned long)B, g_threads, t_mpi, it_mpi,
                   t_seq, it_seq, t_self, t_fwd, sp, eff, dev);
        if (mode == 1) {
            *deer_iters = it_seq > 0 ? it_seq : 1;
            *c_deer_iter = t_self / ((double)T * (double)*deer_iters); /* per step and iteration */
        }
    }
    prn_no_grad_end(g_ctx);
    prn_rnn_free(rnn);
}

/* ---------------------------------------------------------------- communication */
/* One-way time of a message of n bytes between ranks 0 and 1 (best of
 * three batches of round trips), on every rank; 0 when P = 1. */
static double pingpong(size_t bytes) {
    char *buf = (char *)xmalloc(bytes);
    int iters = bytes <= 4096 ? 2000 : bytes <= 65536 ? 500 : 60, rep, i;
    double best = 1e300, t;
    if (g_quick) iters = iters / 10 > 5 ? iters / 10 : 5;
    memset(buf, 1, bytes);
    if (g_size < 2) {
        free(buf);
        return 0.0;
    }
    if (g_rank <= 1) {
        for (rep = 0; rep < 4; ++rep) { /* rep 0: warm-up */
            t = MPI_Wtime();
            for (i = 0; i < iters; ++i) {
                if (g_rank == 0) {
                    MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
                    MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
                }
            }
            t = (MPI_Wtime() - t) / (2.0 * iters);
            if (rep > 0 && t < best) best = t;
        }
    }
    idle_barrier();
    MPI_Bcast(&best, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    free(buf);
    return best;
}

/* Composing two affine maps of B C / k blocks of k channels (f64), as the
 * exclusive scan's operator does: M = M2 M1, v = M2 v1 + v2. A plain C
 * loop of that arithmetic, to price one round of the scan. */
typedef struct compose_case {
    size_t blocks, k;
    double *m1, *m2, *m, *v1, *v2, *v;
} compose_case;
static int run_compose(void *user) {
    compose_case *c = (compose_case *)user;
    size_t blk, i, j, l, k = c->k, kk = k * k;
    for (blk = 0; blk < c->blocks; ++blk) {
        const double *A = c->m2 + blk * kk, *Bm = c->m1 + blk * kk;
        double *M = c->m + blk * kk;
        for (i = 0; i < k; ++i) {
            double acc = c->v2[blk * k + i];
            for (j = 0; j < k; ++j) {
                double s = 0.0;
                for (l = 0; l < k; ++l) s += A[i * k + l] * Bm[l * k + j];
                M[i * k + j] = s;
                acc += A[i * k + j] * c->v1[blk * k + j];
            }
            c->v[blk * k + i] = acc;
        }
    }
    c->m1[0] += 1e-300 * c->m[0]; /* keep the loop */
    return 0;
}
static double compose_seconds(size_t BC, size_t k) {
    compose_case c;
    size_t n, i;
    double t = 0.0;
    c.k = k;
    c.blocks = BC / k;
    n = c.blocks * k * k;
    c.m1 = (double *)xmalloc(n * sizeof(double));
    c.m2 = (double *)xmalloc(n * sizeof(double));
    c.m = (double *)xmalloc(n * sizeof(double));
    c.v1 = (double *)xmalloc(BC * sizeof(double));
    c.v2 = (double *)xmalloc(BC * sizeof(double));
    c.v = (double *)xmalloc(BC * sizeof(double));
    for (i = 0; i < n; ++i) c.m1[i] = c.m2[i] = 0.5 + 1e-3 * (double)(i % 7);
    for (i = 0; i < BC; ++i) c.v1[i] = c.v2[i] = 1.0;
    time_rank0(run_compose, &c, &t);
    free(c.m1); free(c.m2); free(c.m); free(c.v1); free(c.v2); free(c.v);
    return t;
}

static int ceil_log2(long p) {
    int r = 0;
    while ((1L << r) < p) ++r;
    return r;
}

/* Latency-bound collectives (MPI_Allreduce of a few numbers) per forward
 * scan call without gradients or final, as parrnn_mpi.h has them: one
 * agreement at the start (status, shapes, whether any rank records) and
 * the status agreements before and after the exchange. */
#define MODEL_SMALL_COLLECTIVES 3
/* Predicted fixed cost of one sequence-parallel scan call on P ranks:
 * the small collectives (ceil(log2 P) alpha each, recursive doubling)
 * and the exclusive scan of m-byte maps. */
static double model_comm(long P, double alpha, double beta, double m_bytes, double t_compose) {
    int rounds = ceil_log2(P);
    return MODEL_SMALL_COLLECTIVES * rounds * alpha + rounds * (alpha + m_bytes * beta + t_compose);
}

static void comm_section(double *alpha, double *beta) {
    static const size_t sizes[7] = {8, 64, 512, 4096, 32768, 262144, 1048576};
    static const size_t Cs[3] = {64, 4096, 64}, ks[3] = {1, 1, 8};
    double t[7];
    int i, bwd;
    if (g_rank == 0) printf("\n3. Communication\n   a) ping-pong between ranks 0 and 1 (MPI_Send/MPI_Recv), one-way times\n");
    for (i = 0; i < 7; ++i) t[i] = pingpong(sizes[i]);
    if (g_size >= 2) {
        *alpha = t[0];
        *beta = (t[6] - t[0]) / (double)(sizes[6] - sizes[0]);
        if (g_rank == 0) {
            printf("   %10s %12s %10s\n", "bytes", "one-way us", "GB/s");
            for (i = 0; i < 7; ++i) {
                printf("   %10lu %12.2f %10.3f\n", (unsigned long)sizes[i], 1e6 * t[i], (double)sizes[i] / t[i] / 1e9);
                bench_line("BENCH name=pingpong backend=mpi ranks=%d bytes=%lu seconds=%.6g gbps=%.4g\n", g_size,
                           (unsigned long)sizes[i], t[i], (double)sizes[i] / t[i] / 1e9);
            }
            printf("   alpha (latency, 8 B) = %.2f us, 1/beta (bandwidth, 8 B .. 1 MiB) = %.2f GB/s\n", 1e6 * *alpha,
                   1e-9 / *beta);
        }
    } else if (g_rank == 0) {
        printf("   (needs 2 ranks: not measured in this run)\n");
    }

    if (g_rank == 0)
        printf("\n   b) the carry exchange: prn_mpi_scan_* with T_r = 1 step per rank (T = P), batch 1; the call's\n"
               "      fixed cost, against the same scan of T = 1 on rank 0 alone ('local')%s\n",
               g_size >= 2 ? "; model: ceil(log2 P) (4 alpha + m beta + compose)" : "");
    if (g_rank == 0)
        printf("   %-6s %6s %3s %8s %5s %12s %12s %12s %12s\n", "scan", "C", "k", "pass", "P", "MPI us",
               "local us", "exchange us", "model us");
    for (i = 0; i < 3; ++i)
        for (bwd = 0; bwd < 2; ++bwd) {
            size_t C = Cs[i], k = ks[i];
            int block = k > 1;
            scan_case c;
            double t_mpi, t_loc, m_bytes = (double)C * (double)(k + 1) * 8.0, model = 0.0, tc;
            prn_tensor *a = make_array(0, (size_t)g_rank, 1, C, k), *b = make_array(1, (size_t)g_rank, 1, C, k);
            if (bwd) {
                CHECK(prn_tensor_set_requires_grad(a, 1));
                CHECK(prn_tensor_set_requires_grad(b, 1));
            } else {
                prn_no_grad_begin(g_ctx);
            }
            memset(&c, 0, sizeof c);
            c.mpi = g_mpi; c.a = a; c.b = b; c.block = block; c.backward = bwd;
            c.iters = g_quick ? 20 : 200;
            time_all(run_scan, &c, &t_mpi);
            t_mpi /= c.iters;
            c.mpi = NULL; c.iters = 1;
            time_rank0(run_scan, &c, &t_loc);
            if (!bwd) prn_no_grad_end(g_ctx);
            tc = compose_seconds(C, k);
            if (g_size >= 2) model = (bwd ? 2.0 : 1.0) * model_comm(g_size, *alpha, *beta, m_bytes, tc);
            if (g_rank == 0) {
                char mcol[32];
                if (g_size >= 2) snprintf(mcol, sizeof mcol, "%.2f", 1e6 * model);
                else snprintf(mcol, sizeof mcol, "-");
                printf("   %-6s %6lu %3lu %8s %5d %12.2f %12.2f %12.2f %12s\n", block ? "block" : "diag",
                       (unsigned long)C, (unsigned long)k, bwd ? "fwd+bwd" : "fwd", g_size, 1e6 * t_mpi, 1e6 * t_loc,
                       1e6 * (t_mpi - t_loc), mcol);
                fflush(stdout);
            }
            bench_line("BENCH name=mpi_carry_exchange_%s%s backend=%s ranks=%d T=%d C=%lu k=%lu seconds=%.6g "
                       "local_seconds=%.6g exchange_seconds=%.6g model_seconds=%.6g\n",
                       block ? "block" : "diag", bwd ? "_fwdbwd" : "", g_backend, g_size, g_size, (unsigned long)C,
                       (unsigned long)k, t_mpi, t_loc, t_mpi - t_loc, model);
            prn_tensor_free(a);
            prn_tensor_free(b);
        }
}

/* ---------------------------------------------------------------- model */
static void model_section(double alpha, double beta, double c_seq, double c_mpi, double c_seq_blk,
                          double c_mpi_blk, double c_deer_iter, int deer_iters) {
    static const long Ps[5] = {64, 128, 256, 512, 1024};
    static const double Ts[2] = {1e8, 1e9};
    const size_t C = 64;
    int net, ki, ti, pi;
    double tc[2];
    char cdesc[160];
    tc[0] = compose_seconds(C, 1);
    tc[1] = compose_seconds(C, 8);
    (void)c_deer_iter;
    (void)deer_iters;
    if (g_rank != 0) return;
    if (g_size >= 2)
        snprintf(cdesc, sizeof cdesc, "diag %.3g ns, block k = 8 %.3g ns", 1e9 * c_mpi, 1e9 * c_mpi_blk);
    else
        snprintf(cdesc, sizeof cdesc, "needs 2 ranks (not measured in this run)");
    printf("\n4. Cost model: one forward sequence-parallel scan of T steps, C = %lu channels, batch 1, f32, on P ranks\n",
           (unsigned long)C);
    printf("   predicted = T/P * c + %d ceil(log2 P) alpha + ceil(log2 P) (alpha + m beta + compose)\n"
           "     c        per-step local work of a rank that is not the first (a scan from zero, the product of\n"
           "              its a's, a scan from the carry), measured on ranks 0 and 1 alone:\n"
           "              %s\n"
           "              (the single-process scan: %.3g, %.3g ns per step)\n"
           "     m        bytes of one rank's map, B C (k + 1) 8 (per block of k channels an f64 k x k matrix and\n"
           "              a k-vector): diag %lu, block %lu\n"
           "     compose  composing two maps (MPI_Exscan's operator), a plain C loop measured here: diag %.3g us,\n"
           "              block %.3g us\n"
           "   Assumptions: one rank per core (or GPU), each with the per-step cost c measured here, and the\n"
           "   local work perfectly parallel (no load imbalance, no OS noise); MPI_Exscan in ceil(log2 P) rounds\n"
           "   of one m-byte message and one composition each (recursive doubling), plus %d latency-bound\n"
           "   collectives of a few numbers per call (status agreements and argument checks in parrnn_mpi.h),\n"
           "   ceil(log2 P) alpha each; the host staging of the maps ignored (reference backend: host memory).\n"
           "   The adjoint (backward) repeats the exchange with about the same local work, so forward +\n"
           "   backward has about the same efficiency. A DEER iteration is one such scan (block, k = hidden)\n"
           "   plus one small MPI_Allreduce of the residual. Memory per rank: 12 T/P C bytes (a, b, h; diag),\n"
           "   4 T/P C (k + 2) (block). speedup and efficiency: against the single-process scan of all T on\n"
           "   one core (T times its per-step cost).\n",
           MODEL_SMALL_COLLECTIVES, cdesc,
           1e9 * c_seq, 1e9 * c_seq_blk, (unsigned long)(C * 2 * 8), (unsigned long)(C * 9 * 8), 1e6 * tc[0],
           1e6 * tc[1], MODEL_SMALL_COLLECTIVES);
    /* net 0: shared memory (measured), 1: cluster (assumed), 2: cluster with
     * the local work at an estimated floor (diag 2, block 2 + k scans) */
    for (net = 0; net < 3; ++net) {
        double a = net == 0 ? alpha : 2e-6, b = net == 0 ? beta : 1.0 / 10e9;
        if (net == 0 && g_size < 2) {
            printf("\n   network: this machine's shared memory: alpha and beta need 2 ranks (not measured in this run)\n");
            continue;
        }
        if (net == 1 && g_size < 2) {
            printf("\n   network: assumed cluster interconnect with c as measured: c needs 2 ranks (not measured in\n"
                   "   this run)\n");
            continue;
        }
        if (net < 2)
            printf("\n   network: %s: alpha = %.2f us, 1/beta = %.2f GB/s; c as measured\n",
                   net == 0 ? "this machine's shared memory (measured above)" : "assumed cluster interconnect",
                   1e6 * a, 1e-9 / b);
        else
            printf("\n   network: assumed cluster interconnect, and c at an estimated floor for this algorithm: diag\n"
                   "   2 x the single-process scan's per-step cost (the slice is read twice, once to reduce it to its\n"
                   "   map and once to expand it from the carry; the product of the a's is one multiply per value);\n"
                   "   block (2 + k) x (the product of the k x k blocks costs k^3 multiply-adds per step and block,\n"
                   "   k times the scan's k^2). What the local work could cost, not what it costs now.\n");
        printf("   %-6s %8s %6s %12s %12s %12s %10s %10s %9s\n", "scan", "T", "P", "local s", "comm s", "predicted s",
               "speedup", "efficiency", "GB/rank");
        for (ki = 0; ki < 2; ++ki)
            for (ti = 0; ti < 2; ++ti)
                for (pi = 0; pi < 5; ++pi) {
                    size_t k = ki ? 8 : 1;
                    double T = Ts[ti], P = (double)Ps[pi], cm = ki ? c_mpi_blk : c_mpi, cs = ki ? c_seq_blk : c_seq;
                    if (net == 2) cm = (ki ? 2.0 + (double)k : 2.0) * cs;
                    double m = (double)C * (double)(k + 1) * 8.0;
                    double loc = T / P * cm, comm = model_comm(Ps[pi], a, b, m, tc[ki]), pred = loc + comm;
                    double sp = T * cs / pred, eff = sp / P;
                    double gb = (ki ? 4.0 * (double)(k + 2) : 12.0) * T / P * (double)C / 1e9;
                    printf("   %-6s %8.0e %6ld %12.4g %12.4g %12.4g %10.1f %10.3f %9.2f\n", ki ? "block8" : "diag", T,
                           Ps[pi], loc, comm, pred, sp, eff, gb);
                    bench_line("BENCH name=mpi_model_scan backend=model network=%s ranks=%ld T=%.0f C=%lu k=%lu "
                               "seconds=%.6g local_seconds=%.6g comm_seconds=%.6g speedup=%.4g efficiency=%.4g\n",
                               net == 0 ? "shm" : net == 1 ? "cluster" : "cluster_floor", Ps[pi], T, (unsigned long)C, (unsigned long)k, pred, loc,
                               comm, sp, eff);
                }
    }
}

/* ---------------------------------------------------------------- main */
static int usage(void) {
    if (g_rank == 0)
        fprintf(stderr, "usage: mpirun -np P bench_mpi [--quick] [--threads N] [--backend NAME]\n");
    MPI_Finalize();
    return 2;
}

int main(int argc, char **argv) {
    char model[256], lib[MPI_MAX_LIBRARY_VERSION_STRING], err[512];
    int i, liblen = 0, deer_iters = 1;
    double t_start, alpha = 0.0, beta = 0.0, c_seq = 0, c_mpi = 0, c_seq_blk = 0, c_mpi_blk = 0, c_deer = 0;
    prn_config cfg;
    cpu_sample run_start, run_end;
    bench_prog = "bench_mpi";
    (void)probe_triad;
    (void)bench_device_context;
    (void)bench_parse_args;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    t_start = MPI_Wtime();
    g_threads = 1;
    for (i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--quick") == 0) {
            g_quick = 1;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1024) return usage();
            g_threads = (int)v;
        } else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            g_backend = argv[++i];
        } else {
            return usage();
        }
    }
#ifdef _OPENMP
    omp_set_num_threads(g_threads);
#endif
#if defined(PARRNN_USE_CBLAS) && defined(OPENBLAS_VERSION)
    openblas_set_num_threads(g_threads);
#endif
    if (g_quick) {
        g_repeats = 3;
        g_budget = 0.3;
        g_min_sample = 0.01;
    }

    memset(&cfg, 0, sizeof cfg);
    cfg.backend = g_backend; /* NULL: $PARRNN_BACKEND, else "reference" */
    cfg.seed = 1;
    cfg.num_threads = g_threads;
    if (prn_context_create(&cfg, &g_ctx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "bench_mpi: rank %d: prn_context_create: %s\n", g_rank, err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    g_backend = prn_context_backend_name(g_ctx);
    CHECK(prn_mpi_create(g_ctx, MPI_COMM_WORLD, &g_mpi));
    if (g_rank == 0) CHECK(prn_mpi_create(g_ctx, MPI_COMM_SELF, &g_self));
    if (g_size >= 2) {
        MPI_Comm_split(MPI_COMM_WORLD, g_rank <= 1 ? 0 : MPI_UNDEFINED, g_rank, &g_pair_comm);
        if (g_rank <= 1) CHECK(prn_mpi_create(g_ctx, g_pair_comm, &g_pair));
    }

    MPI_Get_library_version(lib, &liblen);
    lib[strcspn(lib, "\n,")] = 0;
    if (g_rank == 0) {
        cpu_model(model, sizeof model);
        printf("bench_mpi: parrnn %s, %s mode, %d rank(s)\n", PARRNN_VERSION_STRING, g_quick ? "quick" : "full",
               g_size);
        printf("  cpu:       %s\n", model);
        printf("  mpi:       %s\n", lib);
        printf("  backend:   %s on every rank\n", g_backend);
        bench_print_threads("per rank ", g_threads, "", "");
        bench_print_compiler();
        bench_print_cblas();
        {
            long online = sysconf(_SC_NPROCESSORS_ONLN);
            printf("  machine:   %ld processors online (mpirun may bind each rank to fewer: the threads line\n"
                   "             shows rank 0's)\n", online);
            if (online > 0 && (long)g_size * g_threads > online)
                printf("  note:      %d ranks x %d thread(s) on %ld processors: OVERSUBSCRIBED, the ranks share cores,\n"
                       "             so the MPI times measure contention as much as the algorithm\n",
                       g_size, g_threads, online);
        }
        bench_report_idle();
    }
    idle_barrier(); /* the other ranks sleep meanwhile: MPI's waits spin */
    run_start = cpu_sample_now();

    scan_section(64, &c_seq, &c_mpi, &c_seq_blk, &c_mpi_blk);
    deer_section(&c_deer, &deer_iters);
    comm_section(&alpha, &beta);
    model_section(alpha, beta, c_seq, c_mpi, c_seq_blk, c_mpi_blk, c_deer, deer_iters);

    run_end = cpu_sample_now();
    if (g_rank == 0) {
        printf("\n");
        print_background("during the measurements (rank 0's view; the other ranks count as other processes)",
                         cpu_background(run_start, run_end));
        printf("\n%s", g_lines);
        printf("\nbench_mpi: done in %.1f s\n", MPI_Wtime() - t_start);
    }
    prn_mpi_free(g_self);
    prn_mpi_free(g_pair);
    if (g_pair_comm != MPI_COMM_NULL) MPI_Comm_free(&g_pair_comm);
    prn_mpi_free(g_mpi);
    prn_context_free(g_ctx);
    MPI_Finalize();
    return 0;
}
