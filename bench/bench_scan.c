/* bench_scan.c - throughput of parrnn's scans of linear recurrences
 * (prn_scan_diag, prn_scan_block) on the reference backend (and any device
 * backend built in), against the
 * memory bandwidth of the machine and against a plain sequential C loop,
 * both measured in the same run.
 *
 * Machine probe (no parrnn involved):
 *   triad        a[i] = b[i] + s*c[i] on three f64 arrays far larger than the
 *                caches (as in bench_ops): the sustainable memory bandwidth,
 *                24 bytes per element (2 reads + 1 write), OpenMP.
 *
 * Diagonal scans, f32, forward, batch 1, h0 = 0, decays in [0.999, 0.9999]:
 *   h[t, c] = a[t, c] * h[t-1, c] + b[t, c]   for (T, C) = (10^7, 1),
 *   (10^6, 16), (10^5, 128), (10^4, 1024): every shape is 40-64 MB per array.
 *   scan_diag_loop  the obvious sequential loop in this file, on one thread
 *                   (C = 1: h = a*h + b; C > 1: row by row, the inner loop
 *                   over channels vectorised by the compiler);
 *   scan_diag       prn_scan_diag with algo AUTO, SEQUENTIAL, CHUNKED and
 *                   TREE (TREE only for C = 1 and C = 1024, where a call
 *                   takes about a second; at C = 16 and 128 it takes 2-4 s).
 *   Counted: 12 bytes per element (read a, read b, write h).
 *   The triad, the loop and the algorithms of a shape are timed in rounds
 *   (time_interleaved: one sample of each per round, in turn), because
 *   this machine's bandwidth drifts by up to 40% within a run. GB/s and
 *   time/call are the best sample; frac_bw is the median over the rounds
 *   of a sample's GB/s over the triad's measured around it (paired_frac);
 *   the `triad` row of a shape gives its best triad. speedup = loop time /
 *   parrnn time. The triad counts 24 bytes per element but moves 32 (its
 *   stores first read the line), while the scans stream outputs of 16 MiB
 *   and more past the caches and move what they count: frac_bw can
 *   exceed 1.
 *
 * Block scans, f32, forward, batch 1, T = 10^5:
 *   h[t] = A[t] h[t-1] + b[t] with A[t] block-diagonal, blocks of k x k.
 *   scan_dense  k = C = n for n = 2, 8, 32 (one dense block);
 *   scan_bdiag  C = 64 channels in 64/n blocks of k = n.
 *   AUTO, SEQUENTIAL, CHUNKED, and TREE for n = 2 and 8, each against
 *   scan_*_loop, the plain loop (per step, per block, per row:
 *   acc = b + sum_m A[i,m] h[m]) on one thread. Counted: 4 (T C k + 2 T C)
 *   bytes (read A, read b, write h).
 *
 * --quick: the same with T / 100 (diagonal) and T = 2000 (block), TREE
 * everywhere, fewer samples: a few seconds, for CI (the arrays then fit in
 * the caches, so the rates are not comparable with the full run).
 *
 * Device backends built in (e.g. "opencl", where a device is present) run
 * the same shapes on inputs uploaded once, with AUTO and SEQUENTIAL; each
 * timed call ends by reading one element back, which waits for the queued
 * kernels. They also run T = 10^6, C = 128 (1.28e8 elements; T = 10^4
 * with --quick) against their own device-to-device copy bandwidth
 * (device_copy: buf_copy of one array, 2 x 4 bytes per element; frac_bw
 * of those rows is against it) and report AUTO's and CHUNKED's speedup
 * over their SEQUENTIAL kernel (parallel over channels, serial in time).
 * On CUDA, AUTO there is the single-pass look-back scan and CHUNKED the
 * reduce / scan / expand one, so the two rows compare them.
 *
 * For AUTO rows the table says which algorithm the library picked: its
 * output is compared bit for bit with the SEQUENTIAL and CHUNKED outputs
 * (the algorithms round differently, so exactly one matches). Every output
 * is also checked against the C loop (max |diff| <= 1e-4 max |h|).
 *
 * All parrnn calls run inside prn_no_grad_begin, after warm-up, through
 * the public API; each figure is the best of several repeats timed with
 * CLOCK_MONOTONIC.
 *
 * Output: a human table, then one line per measurement for scripts:
 *   BENCH name=<what> backend=<b> dtype=f32 algo=<a> T=<T> C=<C> k=<k>
 *         threads=<t> seconds=<s> gbps=<v> frac_bw=<v> speedup=<v>
 *         [picked=<algo>]    (AUTO rows only)
 * (on one line; see bench/README.md).
 *
 * Large arrays, f32, B = 16, C = 128, T = 10^5 (0.82 GB per array, the
 * shape where a fixed 512 MiB cache of freed buffers once cost 200k page
 * faults a call), 131072, 262144, 524288 (1, 2 and 4 GiB per array):
 * prn_scan_diag AUTO in a fresh context, as a training loop runs it:
 *   scan_first   its first call (its output is fresh memory: page faults,
 *                the kernel zeroing the pages); frac_bw against the triad
 *                of the first round after it
 *   scan_steady  the repeated calls (each output freed before the next
 *                call, as a loop's are), timed in rounds with the triad;
 *                frac_bw as for the other shapes (paired_frac)
 * each beside a `triad` row (its best in those rounds). A shape is skipped
 * with a message when MemAvailable is under its three arrays plus 1 GB
 * (4 GiB: 13.9 GB). --quick: T = 131 only.
 *
 * Usage: bench_scan [--quick] [--threads N] [--device-only] [--large-only]
 *   --large-only  the triad and the large arrays alone (about a minute)
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c99 */

#include "parrnn.h"
#include "bench_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "../tests/prn_meminfo.h"


/* ------------------------------------------------------------------------
 * Settings and results
 * ---------------------------------------------------------------------- */

static const char *const algo_names[PRN_SCAN_ALGO_COUNT] = {"auto", "sequential", "chunked", "tree"};

typedef struct result {
    char name[24];
    char backend[12];
    char algo[12];
    char picked[12]; /* AUTO rows: the algorithm the library ran */
    size_t T, C, k;
    double seconds, gbps, frac, speedup;
} result;

#define MAX_RESULTS 128
static result g_results[MAX_RESULTS];
static int g_num_results = 0;
static double g_triad = 0.0;     /* GB/s: the reference of the rows being measured */
static size_t g_triad_n = 0;     /* doubles per triad array */
static double g_triad_first = 0.0; /* GB/s: the probe before all shapes */
static triad_job g_triad_job;      /* the triad's arrays, timed beside each diagonal shape */
static prn_context *g_dev = NULL;  /* a device backend's context, when one is built in and present */



static void table_header(const char *title) {
    printf("\n%s\n", title);
    printf("  %-15s %-9s %-19s %8s %5s %3s %11s %8s %7s %8s\n", "measurement", "backend", "algo", "T", "C", "k",
           "time/call", "GB/s", "frac_bw", "speedup");
}

/* One row of the table (and of the BENCH lines). frac < 0: GB/s over
 * g_triad; otherwise the fraction measured by paired_frac. */
static void record(const char *name, const char *backend, const char *algo, const char *picked, size_t T, size_t C,
                   size_t k, double seconds, double bytes, double loop_seconds, double frac) {
    result *r;
    char shown[32];
    double gbps = bytes / seconds * 1e-9;
    double speedup = loop_seconds > 0 ? loop_seconds / seconds : 1.0;
    if (frac < 0) frac = gbps / g_triad;
    if (picked && picked[0]) snprintf(shown, sizeof shown, "%s->%s", algo, picked);
    else snprintf(shown, sizeof shown, "%s", algo);
    printf("  %-15s %-9s %-19s %8lu %5lu %3lu %9.4g s %8.3f %7.3f %7.2fx\n", name, backend, shown, (unsigned long)T,
           (unsigned long)C, (unsigned long)k, seconds, gbps, frac, speedup);
    fflush(stdout);
    if (g_num_results == MAX_RESULTS) return;
    r = &g_results[g_num_results++];
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->backend, sizeof r->backend, "%s", backend);
    snprintf(r->algo, sizeof r->algo, "%s", algo);
    snprintf(r->picked, sizeof r->picked, "%s", picked ? picked : "");
    r->T = T;
    r->C = C;
    r->k = k;
    r->seconds = seconds;
    r->gbps = gbps;
    r->frac = frac;
    r->speedup = speedup;
}

/* frac_bw of function f from time_interleaved's samples (function 0 being
 * the triad): each round's GB/s over the triad's GB/s measured around it
 * (the faster of the round's triad sample, just before, and the next
 * round's, just after), and the median of those ratios over the rounds. A
 * sample pairs with its neighbours in time, so a change of the machine's
 * bandwidth between rounds moves both; the median ignores a round in which
 * it changed halfway. */
static double paired_frac(const double *samples, int n, int rounds, int f, double bytes) {
    double ratio[64], tmp;
    int r, i, j;
    for (r = 0; r < rounds && r < 64; ++r) {
        double tri = samples[r * n], gbps = bytes / samples[r * n + f] * 1e-9;
        if (r + 1 < rounds && samples[(r + 1) * n] < tri) tri = samples[(r + 1) * n];
        ratio[r] = gbps / (24.0 * (double)g_triad_job.n / tri * 1e-9);
    }
    for (i = 1; i < r; ++i) /* insertion sort: a handful of values */
        for (j = i; j > 0 && ratio[j - 1] > ratio[j]; --j) { tmp = ratio[j]; ratio[j] = ratio[j - 1]; ratio[j - 1] = tmp; }
    return r % 2 ? ratio[r / 2] : 0.5 * (ratio[r / 2 - 1] + ratio[r / 2]);
}

/* Best seconds per call of fn(user): one warm-up call (timed, to size the
 * batches of at least g_min_sample seconds), then up to g_repeats timed
 * batches: at least 3 (2 when one call takes over half a second), no new
 * one once g_budget seconds are spent. A call over 1 s is only repeated
 * once (the best of the two counts). Returns nonzero if fn fails. */

/* ------------------------------------------------------------------------
 * Machine probe: STREAM-like triad (as bench_ops)
 * ---------------------------------------------------------------------- */
static double triad_gbps(size_t n) { return 3.0 * sizeof(double) * (double)n / probe_triad(n) * 1e-9; }

static void triad_gbps_probe(size_t n) {
    g_triad_n = n;
    g_triad_first = g_triad = triad_gbps(n);
    printf("  triad: 3 x %lu doubles, %.2f GB/s (24 bytes per element)\n", (unsigned long)n, g_triad);
}

/* ------------------------------------------------------------------------
 * The plain sequential loops (the baselines), one thread
 * ---------------------------------------------------------------------- */
/* C == 1: the textbook recurrence, one multiply-add per step. */
static void loop_diag_1(size_t T, const float *restrict a, const float *restrict b, float *restrict h) {
    float x = 0.0f;
    size_t t;
    for (t = 0; t < T; ++t) {
        x = a[t] * x + b[t];
        h[t] = x;
    }
}

/* C > 1: row by row; the inner loop over channels is independent and the
 * compiler vectorises it. */
static void loop_diag_rows(size_t T, size_t C, const float *restrict a, const float *restrict b,
                           float *restrict h) {
    size_t t, c;
    for (c = 0; c < C; ++c) h[c] = b[c];
    for (t = 1; t < T; ++t) {
        const float *restrict ar = a + t * C, *restrict br = b + t * C;
        const float *restrict hp = h + (t - 1) * C;
        float *restrict hr = h + t * C;
        for (c = 0; c < C; ++c) hr[c] = ar[c] * hp[c] + br[c];
    }
}

/* Block-diagonal: per step, per block j, per row i of the block. */
static void loop_block(size_t T, size_t C, size_t k, const float *restrict a, const float *restrict b,
                       float *restrict h) {
    size_t t, j, i, m;
    for (t = 0; t < T; ++t) {
        const float *ar = a + t * C * k, *br = b + t * C;
        float *hr = h + t * C;
        const float *hp = t ? h + (t - 1) * C : NULL;
        for (j = 0; j < C; j += k)
            for (i = 0; i < k; ++i) {
                const float *row = ar + (j + i) * k;
                float acc = br[j + i];
                if (hp)
                    for (m = 0; m < k; ++m) acc += row[m] * hp[j + m];
                hr[j + i] = acc;
            }
    }
}

typedef struct loop_job {
    int kind; /* 0 diag, 1 block */
    size_t T, C, k;
    const float *a, *b;
    float *h;
} loop_job;

static int run_loop(void *user) {
    loop_job *j = (loop_job *)user;
    if (j->kind == 1) loop_block(j->T, j->C, j->k, j->a, j->b, j->h);
    else if (j->C == 1) loop_diag_1(j->T, j->a, j->b, j->h);
    else loop_diag_rows(j->T, j->C, j->a, j->b, j->h);
    return 0;
}

/* ------------------------------------------------------------------------
 * parrnn
 * ---------------------------------------------------------------------- */
typedef struct scan_job {
    prn_context *ctx;
    int block;
    int sync; /* device backends queue work: read one element back to wait for it */
    prn_scan_algo algo;
    prn_tensor *a, *b;
    prn_tensor *keep; /* the last output, when keep_out is set */
    int keep_out;
} scan_job;

static int run_scan(void *user) {
    scan_job *j = (scan_job *)user;
    prn_tensor *y = NULL;
    prn_status st = j->block ? prn_scan_block(j->ctx, j->a, j->b, NULL, 0, j->algo, &y)
                             : prn_scan_diag(j->ctx, j->a, j->b, NULL, 0, j->algo, &y);
    if (st == PRN_OK && j->sync) {
        double v;
        st = prn_tensor_item(y, &v);
    }
    if (st != PRN_OK) {
        prn_tensor_free(y);
        return 1;
    }
    if (j->keep_out) {
        prn_tensor_free(j->keep);
        j->keep = y;
    } else {
        prn_tensor_free(y);
    }
    return 0;
}

static void die_prn(prn_context *ctx, const char *what) {
    fprintf(stderr, "bench_scan: %s: parrnn error: %s\n", what, prn_last_error(ctx));
    exit(1);
}

static prn_context *make_context(void) {
    prn_config cfg;
    prn_context *ctx = NULL;
    char err[256];
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = "reference";
    cfg.seed = 2026;
    cfg.num_threads = g_threads;
    if (prn_context_create(&cfg, &ctx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "bench_scan: %s\n", err);
        exit(1);
    }
    prn_no_grad_begin(ctx); /* nothing here needs a gradient */
    return ctx;
}

/* Max |got - want| relative to max |want|; exits on a mismatch. */
static void check_close(const char *what, const prn_tensor *got, const float *want, size_t n) {
    float *g = (float *)xmalloc(n * sizeof(float));
    double md = 0.0, mv = 0.0;
    size_t i;
    if (prn_tensor_download(got, g, n) != PRN_OK) die_prn(prn_tensor_context(got), what);
    for (i = 0; i < n; ++i) {
        double d = fabs((double)g[i] - (double)want[i]), v = fabs((double)want[i]);
        if (d > md || d != d) md = d != d ? 1e300 : d;
        if (v > mv) mv = v;
    }
    free(g);
    if (md > 1e-4 * (mv + 1e-30)) {
        fprintf(stderr, "bench_scan: %s differs from the C loop: max |diff| %.3g, max |h| %.3g\n", what, md, mv);
        exit(1);
    }
}

static int same_bits(const prn_tensor *x, const prn_tensor *y, size_t n) {
    return x && y && memcmp(prn_tensor_buffer(x), prn_tensor_buffer(y), n * sizeof(float)) == 0;
}

/* ------------------------------------------------------------------------
 * Device backends: the scan against the device's own copy bandwidth
 * ---------------------------------------------------------------------- */
typedef struct copy_job {
    prn_context *ctx;
    prn_tensor *x, *y;
    size_t bytes;
} copy_job;

/* One device-to-device copy of x into y (buf_copy), waited for. */
static int run_copy(void *user) {
    copy_job *j = (copy_job *)user;
    double v;
    const prn_backend *be = prn_context_backend(j->ctx);
    if (be->buf_copy(j->ctx, prn_tensor_buffer(j->y), 0, prn_tensor_buffer(j->x), 0, j->bytes) != PRN_OK) return 1;
    return prn_tensor_item(j->y, &v) != PRN_OK;
}

/* The device's copy bandwidth (read + write of a T x C f32 array) and the
 * diagonal scan of T x C >= 10^8 elements on it: the GPU issues' target is
 * 0.8 of the copy bandwidth (frac_bw on these rows is against the copy). */
static void bench_device_copy_and_scan(size_t B, size_t T, size_t C) {
    size_t shape[3], n = B * T * C, i;
    prn_tensor *a = NULL, *b = NULL, *y = NULL;
    copy_job cj;
    scan_job sj;
    double copy_s, copy_gbps, s_auto = 0, s_seq = 0, s_chk = 0;
    const char *dev = prn_context_backend_name(g_dev);
    shape[0] = B; shape[1] = T; shape[2] = C;
    if (prn_tensor_uniform(g_dev, PRN_F32, 3, shape, 0.999, 0.9999, &a) != PRN_OK ||
        prn_tensor_uniform(g_dev, PRN_F32, 3, shape, -1.0, 1.0, &b) != PRN_OK ||
        prn_tensor_create(g_dev, PRN_F32, 3, shape, &y) != PRN_OK)
        die_prn(g_dev, "device inputs");
    cj.ctx = g_dev;
    cj.x = a;
    cj.y = y;
    cj.bytes = n * sizeof(float);
    if (time_best(run_copy, &cj, &copy_s)) die_prn(g_dev, "device copy");
    copy_gbps = 2.0 * (double)cj.bytes / copy_s * 1e-9;
    prn_tensor_free(y);
    memset(&sj, 0, sizeof sj);
    sj.ctx = g_dev;
    sj.a = a;
    sj.b = b;
    sj.sync = 1;
    for (i = 0; i < 3; ++i) {
        /* the serial kernel only where it takes well under a second: one
         * chain of 10^8 dependent steps would take most of a GPU run */
        if (i == 1 && T > 1000000) continue;
        sj.algo = i == 0 ? PRN_SCAN_AUTO : i == 1 ? PRN_SCAN_SEQUENTIAL : PRN_SCAN_CHUNKED;
        if (time_best(run_scan, &sj, i == 0 ? &s_auto : i == 1 ? &s_seq : &s_chk)) die_prn(g_dev, "device scan");
    }
    {
        double triad = g_triad;
        char nc[48], ns[48];
        /* B > 1 in the name (the table's columns are T, C, k) */
        snprintf(nc, sizeof nc, B > 1 ? "device_copy_b%lu" : "device_copy", (unsigned long)B);
        snprintf(ns, sizeof ns, B > 1 ? "scan_diag_b%lu" : "scan_diag", (unsigned long)B);
        g_triad = copy_gbps; /* these rows compare with the copy */
        record(nc, dev, "copy", NULL, T, C, 1, copy_s, 2.0 * (double)cj.bytes, 0, -1);
        if (s_seq > 0) record(ns, dev, "sequential", NULL, T, C, 1, s_seq, 12.0 * (double)n, s_seq, -1);
        record(ns, dev, "chunked", NULL, T, C, 1, s_chk, 12.0 * (double)n, s_seq, -1);
        record(ns, dev, "auto", NULL, T, C, 1, s_auto, 12.0 * (double)n, s_seq, -1);
        g_triad = triad;
    }
    prn_tensor_free(a);
    prn_tensor_free(b);
}

/* One shape: the C loop, then parrnn with SEQUENTIAL, CHUNKED, [TREE],
 * AUTO (printed in the order auto, sequential, chunked, tree). */
static void bench_shape(prn_context *ctx, const char *name, int block, size_t T, size_t C, size_t k, int with_tree) {
    static const prn_scan_algo order[4] = {PRN_SCAN_SEQUENTIAL, PRN_SCAN_CHUNKED, PRN_SCAN_TREE, PRN_SCAN_AUTO};
    size_t shape_b[3], shape_a[4], n = T * C;
    prn_tensor *a = NULL, *b = NULL, *outs[PRN_SCAN_ALGO_COUNT] = {NULL, NULL, NULL, NULL};
    double secs[PRN_SCAN_ALGO_COUNT] = {0, 0, 0, 0}, fracs[PRN_SCAN_ALGO_COUNT] = {0, 0, 0, 0}, loop_s = 0.0, bytes;
    double best[8], samples[8 * 64], loop_frac = 0.0;
    loop_job lj;
    scan_job jobs[4];
    bench_fn fns[8];
    void *users[8];
    char loop_name[32], what[64];
    const char *picked = "?";
    int q, nm, slot[4], rounds = 0;
    shape_b[0] = shape_a[0] = 1;
    shape_b[1] = shape_a[1] = T;
    shape_b[2] = shape_a[2] = C;
    shape_a[3] = k;
    /* Stable recurrences with a long memory, so that a carry changes the
     * values of the whole next chunk (the algorithms then round differently,
     * which tells AUTO's pick): diagonal decays in [0.999, 0.9999]; block
     * matrices with a diagonal in [0.998, 0.999] and other entries in
     * +-0.001/k (infinity norm below 1). */
    if (block) {
        float *A;
        size_t r, i;
        uint32_t x = 12345u;
        if (prn_tensor_uniform(ctx, PRN_F32, 4, shape_a, -0.001 / (double)k, 0.001 / (double)k, &a) != PRN_OK)
            die_prn(ctx, "inputs");
        A = (float *)prn_tensor_buffer(a); /* host memory on the reference backend */
        for (r = 0; r < n; ++r) { /* row r is row r % k of its block */
            x = x * 1664525u + 1013904223u;
            i = r % k;
            A[r * k + i] = (float)(0.998 + 0.001 * (double)(x >> 8) / 16777216.0);
        }
    } else if (prn_tensor_uniform(ctx, PRN_F32, 3, shape_b, 0.999, 0.9999, &a) != PRN_OK) {
        die_prn(ctx, "inputs");
    }
    if (prn_tensor_uniform(ctx, PRN_F32, 3, shape_b, -1.0, 1.0, &b) != PRN_OK) die_prn(ctx, "inputs");
    bytes = 4.0 * ((double)n * (double)(block ? k : 1) + 2.0 * (double)n);

    /* The triad, the C loop and every algorithm are timed in interleaved
     * rounds: this machine's bandwidth drifts by 20-30% within a minute
     * (other guests on the host), and a figure compared with the triad must
     * have seen the same states of it. */
    lj.kind = block;
    lj.T = T; lj.C = C; lj.k = k;
    lj.a = (const float *)prn_tensor_buffer(a); /* host memory on the reference backend */
    lj.b = (const float *)prn_tensor_buffer(b);
    lj.h = (float *)xmalloc(n * sizeof(float));
    snprintf(loop_name, sizeof loop_name, "%s_loop", name);
    nm = 0;
    if (!block) { fns[nm] = run_triad; users[nm++] = &g_triad_job; }
    fns[nm] = run_loop; users[nm++] = &lj;
    memset(jobs, 0, sizeof jobs);
    for (q = 0; q < 4; ++q) {
        prn_scan_algo al = order[q];
        if (al == PRN_SCAN_TREE && !with_tree) continue;
        jobs[q].ctx = ctx;
        jobs[q].block = block;
        jobs[q].a = a;
        jobs[q].b = b;
        jobs[q].keep_out = 1;
        jobs[q].algo = al;
        slot[q] = nm;
        fns[nm] = run_scan; users[nm++] = &jobs[q];
    }
    snprintf(what, sizeof what, "%s T=%lu C=%lu k=%lu", name, (unsigned long)T, (unsigned long)C, (unsigned long)k);
    if (time_interleaved(nm, fns, users, best, samples, &rounds)) die_prn(ctx, what);
    loop_s = best[block ? 0 : 1];
    if (!block) loop_frac = paired_frac(samples, nm, rounds, 1, bytes);
    for (q = 0; q < 4; ++q) {
        prn_scan_algo al = order[q];
        if (!jobs[q].keep) continue;
        secs[al] = best[slot[q]];
        if (!block) fracs[al] = paired_frac(samples, nm, rounds, slot[q], bytes);
        snprintf(what, sizeof what, "%s %s T=%lu C=%lu k=%lu", name, algo_names[al], (unsigned long)T,
                 (unsigned long)C, (unsigned long)k);
        check_close(what, jobs[q].keep, lj.h, n);
        outs[al] = jobs[q].keep;
    }
    if (same_bits(outs[PRN_SCAN_AUTO], outs[PRN_SCAN_SEQUENTIAL], n)) picked = "sequential";
    else if (same_bits(outs[PRN_SCAN_AUTO], outs[PRN_SCAN_CHUNKED], n)) picked = "chunked";
    else if (same_bits(outs[PRN_SCAN_AUTO], outs[PRN_SCAN_TREE], n)) picked = "tree";
    if (same_bits(outs[PRN_SCAN_SEQUENTIAL], outs[PRN_SCAN_CHUNKED], n)) picked = "?"; /* cannot tell */
    if (!block) {
        g_triad = 24.0 * (double)g_triad_job.n / best[0] * 1e-9;
        record("triad", "c", "triad", NULL, T, C, k, best[0], 24.0 * (double)g_triad_job.n, 0, 1.0);
    }

    record(loop_name, "c", "loop", NULL, T, C, k, loop_s, bytes, loop_s, block ? -1 : loop_frac);
    record(name, "reference", "auto", picked, T, C, k, secs[PRN_SCAN_AUTO], bytes, loop_s,
           block ? -1 : fracs[PRN_SCAN_AUTO]);
    for (q = PRN_SCAN_SEQUENTIAL; q < PRN_SCAN_ALGO_COUNT; ++q)
        if (outs[q]) record(name, "reference", algo_names[q], NULL, T, C, k, secs[q], bytes, loop_s, block ? -1 : fracs[q]);
    for (q = 0; q < PRN_SCAN_ALGO_COUNT; ++q) prn_tensor_free(outs[q]);

    /* The device backend on the same inputs (uploaded once), AUTO and
     * SEQUENTIAL (what each means there: see its header). */
    if (g_dev) {
        prn_tensor *da = NULL, *db = NULL;
        static const prn_scan_algo dev_algos[2] = {PRN_SCAN_AUTO, PRN_SCAN_SEQUENTIAL};
        const char *dev = prn_context_backend_name(g_dev);
        if (prn_tensor_from_host(g_dev, PRN_F32, block ? 4 : 3, block ? shape_a : shape_b, prn_tensor_buffer(a), &da) ||
            prn_tensor_from_host(g_dev, PRN_F32, 3, shape_b, prn_tensor_buffer(b), &db))
            die_prn(g_dev, "device inputs");
        for (q = 0; q < 2; ++q) {
            double ds;
            scan_job dj;
            memset(&dj, 0, sizeof dj);
            dj.block = block;
            dj.keep_out = 1;
            dj.ctx = g_dev;
            dj.a = da;
            dj.b = db;
            dj.sync = 1;
            dj.algo = dev_algos[q];
            dj.keep = NULL;
            snprintf(what, sizeof what, "%s %s %s T=%lu C=%lu k=%lu", name, dev, algo_names[dev_algos[q]],
                     (unsigned long)T, (unsigned long)C, (unsigned long)k);
            if (time_best(run_scan, &dj, &ds)) die_prn(g_dev, what);
            check_close(what, dj.keep, lj.h, n);
            prn_tensor_free(dj.keep);
            record(name, dev, algo_names[dev_algos[q]], NULL, T, C, k, ds, bytes, loop_s, -1);
        }
        prn_tensor_free(da);
        prn_tensor_free(db);
    }
    prn_tensor_free(a);
    prn_tensor_free(b);
    free(lj.h);
}

/* ------------------------------------------------------------------------
 * Large arrays: the first call and the steady state
 * ---------------------------------------------------------------------- */

/* prn_scan_diag AUTO on B x T x C f32 (B = 16, C = 128) as a training loop
 * repeats it: a fresh context, so that its first call allocates its output
 * (page faults, the kernel zeroing fresh pages) as a program's first step
 * does; then the steady state, calls timed in rounds with the triad
 * (time_interleaved, each output freed before the next call, so that the
 * next call can reuse its buffer). Skipped with a message when MemAvailable
 * is under the three arrays plus 1 GB. Rows: scan_first (the first call)
 * and scan_steady (the best of the rounds; frac_bw the median of the
 * rounds' paired ratios with the triad). */
static void bench_large(size_t B, size_t T, size_t C) {
    size_t shape[3], n = B * T * C;
    double bytes = 12.0 * (double)n, need = 3.0 * 4.0 * (double)n + 1e9, avail = prn_mem_available(), t0, first;
    double best[2], samples[2 * 64] = {0};
    bench_fn fns[2];
    void *users[2];
    int rounds = 0;
    prn_context *ctx;
    prn_tensor *a = NULL, *b = NULL, *y = NULL;
    scan_job sj;
    char name[32];
    snprintf(name, sizeof name, "scan_diag_b%lu", (unsigned long)B);
    if (avail > 0 && avail < need) {
        printf("  %-15s skipped: T = %lu, C = %lu (%.2f GB per array) needs %.1f GB, MemAvailable is %.1f GB\n", name,
               (unsigned long)T, (unsigned long)C, 4.0 * (double)n * 1e-9, need * 1e-9, avail * 1e-9);
        return;
    }
    ctx = make_context();
    shape[0] = B; shape[1] = T; shape[2] = C;
    if (prn_tensor_uniform(ctx, PRN_F32, 3, shape, 0.999, 0.9999, &a) != PRN_OK ||
        prn_tensor_uniform(ctx, PRN_F32, 3, shape, -1.0, 1.0, &b) != PRN_OK)
        die_prn(ctx, "large inputs");
    t0 = now();
    if (prn_scan_diag(ctx, a, b, NULL, 0, PRN_SCAN_AUTO, &y) != PRN_OK) die_prn(ctx, "large scan");
    first = now() - t0;
    prn_tensor_free(y);
    memset(&sj, 0, sizeof sj);
    sj.ctx = ctx;
    sj.a = a;
    sj.b = b;
    sj.algo = PRN_SCAN_AUTO;
    fns[0] = run_triad; users[0] = &g_triad_job;
    fns[1] = run_scan; users[1] = &sj;
    if (time_interleaved(2, fns, users, best, samples, &rounds)) die_prn(ctx, "large scan");
    g_triad = 24.0 * (double)g_triad_job.n / best[0] * 1e-9;
    {
        /* the first call against the triad of its round-neighbour, the first round's */
        double tri0 = 24.0 * (double)g_triad_job.n / (samples[0] > 0 ? samples[0] : best[0]) * 1e-9;
        record("triad", "c", "triad", NULL, T, C, 1, best[0], 24.0 * (double)g_triad_job.n, 0, 1.0);
        record("scan_first", "reference", "auto", NULL, T, C, 1, first, bytes, 0, bytes / first * 1e-9 / tri0);
        record("scan_steady", "reference", "auto", NULL, T, C, 1, best[1], bytes, 0,
               paired_frac(samples, 2, rounds, 1, bytes));
    }
    prn_tensor_free(a);
    prn_tensor_free(b);
    prn_context_free(ctx);
}

/* ------------------------------------------------------------------------
 * Main
 * ---------------------------------------------------------------------- */
/* How busy the CPUs are, from /proc/stat (Linux; elsewhere unknown): the
 * share of all CPU time between two samples that went to other processes. */




static void print_machine(void) {
    char model[256];
    cpu_model(model, sizeof model);
    printf("bench_scan: parrnn %s, %s mode\n", PARRNN_VERSION_STRING, g_quick ? "quick" : "full");
    printf("  cpu:       %s\n", model);
#ifdef _OPENMP
    printf("  threads:   %d (OpenMP; %d processors); the C loops run on 1\n", g_threads, omp_get_num_procs());
#else
    printf("  threads:   1 (built without OpenMP)\n");
#endif
    bench_print_compiler();
    bench_report_idle();
}

static int usage(void) {
    fprintf(stderr, "usage: bench_scan [--quick] [--threads N] [--device-only] [--large-only]\n");
    return 2;
}

int main(int argc, char **argv) {
    bench_prog = "bench_scan";
    /* diagonal shapes {T, C, with TREE}: in the full run TREE only where a
     * call takes about a second here (C = 16 and 128 take 2-4 s: the tree
     * walks each channel's column with a stride of C floats) */
    static const size_t full_diag[4][3] = {{10000000, 1, 1}, {1000000, 16, 0}, {100000, 128, 0}, {10000, 1024, 1}};
    static const size_t quick_diag[4][3] = {{100000, 1, 1}, {10000, 16, 1}, {1000, 128, 1}, {100, 1024, 1}};
    static const size_t block_n[3] = {2, 8, 32};
    const size_t (*diag)[3];
    size_t triad_n, block_T, i;
    double t_start = now();
    int ai, device_only = 0, large_only = 0;
    prn_context *ctx;
    cpu_sample run_start;
    /* the device grid {B, T, C}: T x C x B >= 10^8 f32 elements (1.2 GB of
     * traffic), from one channel to batch x channels filling the device */
    static const size_t dev_full[5][3] = {{1, 100000000, 1}, {1, 12500000, 8}, {4, 1000000, 32}, {1, 1000000, 128},
                                          {16, 100000, 128}};
    static const size_t dev_quick[2][3] = {{1, 20000, 3}, {2, 5000, 40}};

    /* --device-only: the device table alone (a GPU machine's minutes are
     * scarce: tools/gpu_check.sh runs this) */
    /* --large-only: the triad and the large arrays alone */
    for (ai = 1; ai < argc; ++ai)
        if (strcmp(argv[ai], "--device-only") == 0 || strcmp(argv[ai], "--large-only") == 0) {
            if (argv[ai][2] == 'd') device_only = 1;
            else large_only = 1;
            memmove(argv + ai, argv + ai + 1, (size_t)(argc - ai) * sizeof *argv);
            --argc;
            --ai;
        }
    if (bench_parse_args(argc, argv)) return usage();
    if (g_quick) {
        diag = quick_diag;
        triad_n = (size_t)4 << 20; /* 3 x 32 MiB */
        block_T = 2000;
        g_repeats = 3;
        g_min_sample = 0.01;
        g_budget = 0.2;
    } else {
        diag = full_diag;
        triad_n = (size_t)32 << 20; /* 3 x 256 MiB */
        block_T = 100000;
    }
    print_machine();
    run_start = cpu_sample_now();
    if (device_only) {
        g_dev = bench_device_context(2026);
        if (!g_dev) {
            printf("bench_scan --device-only: no device backend is built in or present\n");
            return 0;
        }
        triad_n = 0;
        goto device_table;
    }
    printf("  timing:    best of up to %d samples of >= %g s after warm-up\n", g_repeats, g_min_sample);

    printf("\nMachine probe\n");
    triad_gbps_probe(triad_n);
    triad_job_init(&g_triad_job, triad_n);
    ctx = make_context();
    g_dev = bench_device_context(2026);

    if (!large_only)
        table_header("Diagonal scans, f32, forward, batch 1: 12 bytes per element (frac_bw: vs triad; speedup: vs loop)");
    for (i = 0; i < 4 && !large_only; ++i) bench_shape(ctx, "scan_diag", 0, diag[i][0], diag[i][1], 1, diag[i][2] != 0);

    /* Large arrays, B = 16, C = 128: 0.82 GB (T = 10^5, the shape of the
     * issue), 1, 2 and 4 GiB per array; T / 1000 with --quick */
    table_header("Large arrays: prn_scan_diag AUTO, f32, B = 16, C = 128 (T the column), a fresh context: the first "
                 "call, then the steady state (frac_bw: vs the triad of the same rounds)");
    if (g_quick) bench_large(16, 131, 128);
    else {
        static const size_t large_T[4] = {100000, 131072, 262144, 524288};
        for (i = 0; i < 4; ++i) bench_large(16, large_T[i], 128);
    }

device_table:
    if (g_dev && !large_only) {
        table_header("Device: diagonal scan vs the device's copy bandwidth (read + write; speedup: vs its "
                     "SEQUENTIAL kernel, parallel over channels, serial in time)");
        if (g_quick)
            for (i = 0; i < 2; ++i) bench_device_copy_and_scan(dev_quick[i][0], dev_quick[i][1], dev_quick[i][2]);
        else
            for (i = 0; i < 5; ++i) bench_device_copy_and_scan(dev_full[i][0], dev_full[i][1], dev_full[i][2]);
    }
    if (device_only) {
        prn_context_free(g_dev);
        goto report;
    }
    if (large_only) {
        prn_context_free(ctx);
        prn_context_free(g_dev);
        triad_job_free(&g_triad_job);
        goto report;
    }

    table_header("Block scans, f32, forward, batch 1: 4 (T C k + 2 T C) bytes (dense: k = C; bdiag: C = 64)");
    for (i = 0; i < 3; ++i) {
        size_t n = block_n[i];
        bench_shape(ctx, "scan_dense", 1, block_T, n, n, n <= 8);
        bench_shape(ctx, "scan_bdiag", 1, block_T, 64, n, n <= 8);
    }
    prn_context_free(ctx);
    prn_context_free(g_dev);
    triad_job_free(&g_triad_job);

report:
    /* The same for scripts. */
    if (!device_only)
        printf("\nBENCH name=triad backend=c dtype=f64 n=%lu threads=%d gbps=%.4f frac_bw=1.0000\n",
           (unsigned long)triad_n, g_threads, g_triad_first);
    for (ai = 0; ai < g_num_results; ++ai) {
        const result *r = &g_results[ai];
        int triad = strcmp(r->name, "triad") == 0;
        printf("BENCH name=%s backend=%s dtype=%s algo=%s T=%lu C=%lu k=%lu threads=%d seconds=%.6g gbps=%.4f "
               "frac_bw=%.4f speedup=%.4f%s%s\n",
               r->name, r->backend, triad ? "f64" : "f32", r->algo, (unsigned long)r->T, (unsigned long)r->C,
               (unsigned long)r->k, strcmp(r->backend, "c") == 0 && !triad ? 1 : g_threads, r->seconds, r->gbps, r->frac, r->speedup,
               r->picked[0] ? " picked=" : "", r->picked);
    }
    printf("\n");
    print_background("during the run", cpu_background(run_start, cpu_sample_now()));
    printf("bench_scan: done in %.1f s\n", now() - t_start);
    return 0;
}
