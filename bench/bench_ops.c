/* bench_ops.c - matmul and elementwise throughput of parrnn's reference
 * backend, against the limits of the machine measured in the same run.
 *
 * Probes of the machine (no parrnn involved):
 *   triad        a[i] = b[i] + s*c[i] on three f64 arrays far larger than the
 *                caches (STREAM's triad): the sustainable memory bandwidth,
 *                counting 24 bytes per element (2 reads + 1 write).
 *   gemm_c       a cache-blocked, OpenMP-parallel C GEMM written so the
 *                compiler vectorises it, built with the program's flags;
 *   gemm_c_avx2  the same code compiled for AVX2+FMA (x86 with GCC/clang,
 *                when the CPU has them);
 *   cblas_gemm   cblas_sgemm/cblas_dgemm called directly (CBLAS builds).
 *   The "machine GEMM result" of a dtype is the best GFLOP/s of any probe.
 *
 * parrnn, through its public API only, on "reference" (GEMM through CBLAS
 * when built with PARRNN_USE_CBLAS), "reference-noblas" (plain loops) and
 * every device backend built in whose device is present ("opencl": GEMM
 * through CLBlast; its timed calls end by reading one element back, which
 * waits for the queued work; inputs stay on the device):
 *   matmul       prn_matmul of two n x n matrices: 2 n^3 flops per call;
 *                ratio = GFLOP/s / machine GEMM result of that dtype.
 *   add          prn_add of two same-shaped tensors: 3 N elements moved.
 *   mul_row      prn_mul of [N/1024, 1024] by a [1, 1024] row (broadcast):
 *                2 N + 1024 elements moved.
 *   tanh, exp    prn_tanh / prn_exp: 2 N elements moved.
 *   sum, max     prn_sum / prn_max over all axes: N elements read.
 *   sum_rows     prn_sum of [N/1024, 1024] over its last axis: N + N/1024.
 *                ratio = GB/s / triad GB/s (a reduction only reads: its
 *                ratio can pass 1).
 *   *_cached     the same elementwise ops on a context whose allocator
 *                recycles freed blocks: every parrnn op returns a new
 *                tensor, and with plain malloc a large output is fresh
 *                memory from the kernel each call (page faults and
 *                zeroing); the cached variant shows the loop alone.
 * All parrnn work runs inside prn_no_grad_begin, after warm-up calls; each
 * figure is the best of several repeats timed with CLOCK_MONOTONIC.
 *
 * Output: a human table, then one line per measurement for scripts:
 *   BENCH name=<what> backend=<b> dtype=<f32|f64> n=<size> threads=<t>
 *         seconds=<s per call> gflops=<v>|gbps=<v> ratio=<v>
 * (on one line; see bench/README.md).
 *
 * Usage: bench_ops [--quick] [--threads N]
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


#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define BENCH_HAVE_AVX2_PROBE 1
#else
#define BENCH_HAVE_AVX2_PROBE 0
#endif

/* ------------------------------------------------------------------------
 * Settings and results
 * ---------------------------------------------------------------------- */

typedef struct result {
    char name[32];
    char backend[24];
    prn_dtype dtype;
    size_t n;
    double seconds; /* per call */
    double value;   /* GFLOP/s or GB/s */
    int bandwidth;  /* value is GB/s */
    double ratio;
} result;

#define MAX_RESULTS 256
static result g_results[MAX_RESULTS];
static int g_num_results = 0;


static void table_header(const char *title) {
    printf("\n%s\n", title);
    printf("  %-16s %-17s %-5s %10s %12s %10s %-7s %6s\n", "measurement", "backend", "dtype", "n",
           "time/call", "rate", "unit", "ratio");
}

static void record(const char *name, const char *backend, prn_dtype dtype, size_t n, double seconds,
                   double value, int bandwidth, double ratio) {
    result *r;
    printf("  %-16s %-17s %-5s %10lu %10.4g s %10.3f %-7s %6.3f\n", name, backend, prn_dtype_name(dtype),
           (unsigned long)n, seconds, value, bandwidth ? "GB/s" : "GFLOP/s", ratio);
    fflush(stdout);
    if (g_num_results == MAX_RESULTS) return;
    r = &g_results[g_num_results++];
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->backend, sizeof r->backend, "%s", backend);
    r->dtype = dtype;
    r->n = n;
    r->seconds = seconds;
    r->value = value;
    r->bandwidth = bandwidth;
    r->ratio = ratio;
}


/* OpenBLAS runs its own pthreads, which keep spinning for a while after a
 * call; an OpenMP-parallel measurement right after one would find a core
 * busy. So after anything that ran CBLAS, wait for them to go idle. */
static int g_blas_busy = 0;
static void settle(void) {
    struct timespec ts;
    if (!g_blas_busy) return;
    ts.tv_sec = 0;
    ts.tv_nsec = 300000000L;
    nanosleep(&ts, NULL);
    g_blas_busy = 0;
}

/* Best seconds per call of fn(user): one warm-up call, one call to size
 * the batches (at least g_min_sample seconds each), then up to g_repeats
 * timed batches (at least 3; no new one once g_budget seconds are spent).
 * Taking the best sample filters out interference from other processes.
 * fn returns 0 on success; a failure is returned at once. */

/* ------------------------------------------------------------------------
 * Machine probe 1: STREAM-like triad
 * ---------------------------------------------------------------------- */
static double triad_gbps_probe(size_t n) {
    double best = probe_triad(n), gbps = 3.0 * sizeof(double) * (double)n / best * 1e-9;
    record("triad", "c", PRN_F64, n, best, gbps, 1, 1.0);
    return gbps;
}

/* ------------------------------------------------------------------------
 * Machine probe 2: a blocked C GEMM, C = A B with n x n row-major matrices.
 *
 * A KC x NC block of B stays in L2 while the threads sweep their rows of
 * C. The kernel accumulates an 8-row x W-column tile of C (W = one or two
 * SIMD vectors) in a local array, adding A[i,k] * B[k, j..j+W) for each k: the
 * fixed-width inner loop vectorises without alias checks and the tile
 * lives in registers; it is added to C once per block. Edges are scalar.
 * ---------------------------------------------------------------------- */
#define GEMM_MR 8
#define GEMM_KC 256
#define GEMM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define GEMM_ZERO(r) acc[r][jj] = 0;
#define GEMM_LOADA(r) x[r] = A[(i0 + r) * n + kk];
#define GEMM_FMA(r) acc[r][jj] += x[r] * bv;
#define GEMM_STORE(r) C[(i0 + r) * n + c0 + jj] += acc[r][jj];
#define DEFINE_GEMM_PROBE(NAME, T, W, NC, ATTR)                                      \
    /* Rows i0 .. i0+7 of C += A[rows, kb:kend] B[kb:kend, jb:jend]. */              \
    ATTR static void NAME##_tile(size_t n, const T *A, const T *B, T *C, size_t i0, \
                                 size_t jb, size_t jend, size_t kb, size_t kend) {   \
        size_t jj, kk, c0, r;                                                        \
        for (c0 = jb; c0 + W <= jend; c0 += W) {                                     \
            T acc[GEMM_MR][W], x[GEMM_MR];                                           \
            for (jj = 0; jj < W; ++jj) { GEMM_ROWS(GEMM_ZERO) }                      \
            for (kk = kb; kk < kend; ++kk) {                                         \
                const T *bk = B + kk * n + c0;                                       \
                GEMM_ROWS(GEMM_LOADA)                                                \
                for (jj = 0; jj < W; ++jj) {                                         \
                    const T bv = bk[jj];                                             \
                    GEMM_ROWS(GEMM_FMA)                                              \
                }                                                                    \
            }                                                                        \
            for (jj = 0; jj < W; ++jj) { GEMM_ROWS(GEMM_STORE) }                     \
        }                                                                            \
        for (; c0 < jend; ++c0) /* column edge */                                    \
            for (r = 0; r < GEMM_MR; ++r)                                            \
                for (kk = kb; kk < kend; ++kk)                                       \
                    C[(i0 + r) * n + c0] += A[(i0 + r) * n + kk] * B[kk * n + c0];   \
    }                                                                                \
    /* The tile is a function of its own so that it keeps ATTR inside the      */    \
    /* OpenMP region (clang does not pass target attributes to the region). */      \
    ATTR static void NAME(size_t n, const T *A, const T *B, T *C) {                  \
        long it, ntiles = (long)(n / GEMM_MR), nn = (long)n;                         \
        size_t jb, kb, i, j, k;                                                      \
        BENCH_PARFOR                                                                 \
        for (it = 0; it < nn; ++it) memset(C + (size_t)it * n, 0, n * sizeof(T));    \
        for (jb = 0; jb < n; jb += NC) {                                             \
            const size_t jend = jb + NC < n ? jb + NC : n;                           \
            for (kb = 0; kb < n; kb += GEMM_KC) {                                    \
                const size_t kend = kb + GEMM_KC < n ? kb + GEMM_KC : n;             \
                BENCH_PARFOR                                                         \
                for (it = 0; it < ntiles; ++it)                                      \
                    NAME##_tile(n, A, B, C, (size_t)it * GEMM_MR, jb, jend, kb, kend); \
            }                                                                        \
        }                                                                            \
        for (i = (size_t)ntiles * GEMM_MR; i < n; ++i) /* row edge */                \
            for (k = 0; k < n; ++k)                                                  \
                for (j = 0; j < n; ++j) C[i * n + j] += A[i * n + k] * B[k * n + j]; \
    }

/* W, the width of the tile: one SIMD vector with GCC; two with clang,
 * which schedules that shape better. */
#ifdef __clang__
#define GEMM_VECS 2
#else
#define GEMM_VECS 1
#endif
/* Portable build: SSE2-sized vectors (16 bytes). */
DEFINE_GEMM_PROBE(gemm_c_f32, float, 4 * GEMM_VECS, 256, )
DEFINE_GEMM_PROBE(gemm_c_f64, double, 2 * GEMM_VECS, 128, )
#if BENCH_HAVE_AVX2_PROBE
/* The same source compiled for AVX2+FMA: 32-byte vectors. */
#define BENCH_AVX2 __attribute__((target("avx2,fma")))
DEFINE_GEMM_PROBE(gemm_avx2_f32, float, 8 * GEMM_VECS, 256, BENCH_AVX2)
DEFINE_GEMM_PROBE(gemm_avx2_f64, double, 4 * GEMM_VECS, 128, BENCH_AVX2)
static int cpu_has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

typedef struct gemm_job {
    int kind; /* 0 portable C, 1 AVX2 C, 2 CBLAS */
    prn_dtype dtype;
    size_t n;
    void *A, *B, *C;
} gemm_job;

static int run_gemm_probe(void *user) {
    gemm_job *g = (gemm_job *)user;
    int f32 = g->dtype == PRN_F32;
    if (g->kind == 0) {
        if (f32) gemm_c_f32(g->n, (const float *)g->A, (const float *)g->B, (float *)g->C);
        else gemm_c_f64(g->n, (const double *)g->A, (const double *)g->B, (double *)g->C);
    }
#if BENCH_HAVE_AVX2_PROBE
    else if (g->kind == 1) {
        if (f32) gemm_avx2_f32(g->n, (const float *)g->A, (const float *)g->B, (float *)g->C);
        else gemm_avx2_f64(g->n, (const double *)g->A, (const double *)g->B, (double *)g->C);
    }
#endif
#ifdef PARRNN_USE_CBLAS
    else if (g->kind == 2) {
        int n = (int)g->n;
        if (f32)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, (const float *)g->A, n,
                        (const float *)g->B, n, 0.0f, (float *)g->C, n);
        else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, (const double *)g->A, n,
                        (const double *)g->B, n, 0.0, (double *)g->C, n);
    }
#endif
    return 0;
}

static double elem(const void *p, prn_dtype dtype, size_t i) {
    return dtype == PRN_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* Compares a few entries of C with dot products in double precision. */
static int gemm_result_ok(const gemm_job *g) {
    size_t t, k, n = g->n;
    for (t = 0; t < 16; ++t) {
        size_t i = (t * 7919) % n, j = (t * 104729 + 3) % n;
        double ref = 0.0, mag = 0.0, got = elem(g->C, g->dtype, i * n + j);
        for (k = 0; k < n; ++k) {
            double p = elem(g->A, g->dtype, i * n + k) * elem(g->B, g->dtype, k * n + j);
            ref += p;
            mag += fabs(p);
        }
        if (fabs(got - ref) > (g->dtype == PRN_F32 ? 1e-4 : 1e-12) * (mag + 1.0)) return 0;
    }
    return 1;
}

static const char *const probe_names[3] = {"gemm_c", "gemm_c_avx2", "cblas_gemm"};
static const char *const probe_backends[3] = {"c", "c-avx2", "cblas"};

/* GFLOP/s of probe `kind` at size n (0 when unavailable). */
static double probe_gemm(int kind, prn_dtype dtype, size_t n, double *seconds) {
    size_t sz = prn_dtype_size(dtype), i;
    gemm_job g;
    double best = 0.0;
    uint32_t x = 12345u;
#if !BENCH_HAVE_AVX2_PROBE
    if (kind == 1) return 0.0;
#else
    if (kind == 1 && !cpu_has_avx2()) return 0.0;
#endif
#ifndef PARRNN_USE_CBLAS
    if (kind == 2) return 0.0;
#endif
    g.kind = kind;
    g.dtype = dtype;
    g.n = n;
    g.A = xmalloc(n * n * sz);
    g.B = xmalloc(n * n * sz);
    g.C = xmalloc(n * n * sz);
    for (i = 0; i < n * n; ++i) { /* small LCG: values in [-1, 1) */
        double va, vb;
        x = x * 1664525u + 1013904223u; va = (double)(x >> 8) / 8388608.0 - 1.0;
        x = x * 1664525u + 1013904223u; vb = (double)(x >> 8) / 8388608.0 - 1.0;
        if (dtype == PRN_F32) { ((float *)g.A)[i] = (float)va; ((float *)g.B)[i] = (float)vb; }
        else { ((double *)g.A)[i] = va; ((double *)g.B)[i] = vb; }
    }
    if (kind != 2) settle();
    time_best(run_gemm_probe, &g, &best);
    if (kind == 2) g_blas_busy = 1;
    if (!gemm_result_ok(&g)) {
        fprintf(stderr, "bench_ops: GEMM probe %s computed wrong values (n=%lu, %s)\n", probe_names[kind],
                (unsigned long)n, prn_dtype_name(dtype));
        exit(1);
    }
    free(g.A); free(g.B); free(g.C);
    *seconds = best;
    return 2.0 * (double)n * (double)n * (double)n / best * 1e-9;
}

/* ------------------------------------------------------------------------
 * parrnn measurements
 * ---------------------------------------------------------------------- */
enum { OP_MATMUL, OP_ADD, OP_MUL_ROW, OP_TANH, OP_EXP, OP_SUM, OP_SUM_ROWS, OP_MAX, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"matmul", "add", "mul_row", "tanh", "exp", "sum", "sum_rows", "max"};

typedef struct op_job {
    prn_context *ctx;
    int op;
    int sync; /* device backends queue work: read one element back to wait for it */
    prn_tensor *a, *b;
} op_job;

/* One call of the op; the result is freed at once, as a program would. */
static int run_op(void *user) {
    op_job *j = (op_job *)user;
    prn_tensor *y = NULL;
    prn_status st;
    switch (j->op) {
    case OP_MATMUL: st = prn_matmul(j->ctx, j->a, j->b, &y); break;
    case OP_ADD: st = prn_add(j->ctx, j->a, j->b, &y); break;
    case OP_MUL_ROW: st = prn_mul(j->ctx, j->a, j->b, &y); break;
    case OP_TANH: st = prn_tanh(j->ctx, j->a, &y); break;
    case OP_SUM: st = prn_sum(j->ctx, j->a, PRN_ALL_AXES, 0, &y); break;
    case OP_SUM_ROWS: st = prn_sum(j->ctx, j->a, 1, 0, &y); break;
    case OP_MAX: st = prn_max(j->ctx, j->a, PRN_ALL_AXES, 0, &y); break;
    default: st = prn_exp(j->ctx, j->a, &y); break;
    }
    if (st == PRN_OK && j->sync) {
        double v;
        st = prn_tensor_item(y, &v);
    }
    prn_tensor_free(y);
    return st != PRN_OK;
}

static void die_prn(prn_context *ctx, const char *what) {
    fprintf(stderr, "bench_ops: %s: parrnn error: %s\n", what, prn_last_error(ctx));
    exit(1);
}

/* A caching allocator for the *_cached runs: freed blocks are kept (up to
 * CACHE_SLOTS of them) and handed out again for the same size. */
#define CACHE_SLOTS 16
typedef struct block_cache {
    void *blocks[CACHE_SLOTS];
    size_t sizes[CACHE_SLOTS];
    int count;
} block_cache;
#define CACHE_HEADER 64 /* keeps the size; keeps the user pointer 64-byte aligned */

static void *cache_alloc(void *user, size_t size) {
    block_cache *c = (block_cache *)user;
    char *p;
    int k;
    for (k = 0; k < c->count; ++k)
        if (c->sizes[k] == size) {
            p = (char *)c->blocks[k];
            c->blocks[k] = c->blocks[c->count - 1];
            c->sizes[k] = c->sizes[c->count - 1];
            c->count--;
            return p + CACHE_HEADER;
        }
    if (size > (size_t)-1 - CACHE_HEADER) return NULL;
    p = (char *)malloc(size + CACHE_HEADER);
    if (!p) return NULL;
    memcpy(p, &size, sizeof size);
    return p + CACHE_HEADER;
}
static void cache_free(void *user, void *ptr) {
    block_cache *c = (block_cache *)user;
    char *p;
    size_t size;
    if (!ptr) return;
    p = (char *)ptr - CACHE_HEADER;
    memcpy(&size, p, sizeof size);
    if (c->count == CACHE_SLOTS) { free(p); return; }
    c->blocks[c->count] = p;
    c->sizes[c->count] = size;
    c->count++;
}
static void cache_release(block_cache *c) {
    while (c->count > 0) free(c->blocks[--c->count]);
}


static prn_context *make_context(const char *backend, block_cache *cache) {
    prn_config cfg;
    prn_context *ctx = NULL;
    char err[512];
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = backend;
    cfg.seed = 2026;
    cfg.num_threads = g_threads;
    if (cache) {
        cfg.allocator.alloc = cache_alloc;
        cfg.allocator.free = cache_free;
        cfg.allocator.user = cache;
    }
    if (prn_context_create(&cfg, &ctx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "bench_ops: %s\n", err);
        exit(1);
    }
    prn_no_grad_begin(ctx); /* nothing here needs a gradient */
    return ctx;
}

static void bench_matmul(const char *backend, prn_dtype dtype, size_t n, double machine_gflops) {
    prn_context *ctx = make_context(backend, NULL);
    size_t shape[2];
    op_job j;
    double s;
    shape[0] = shape[1] = n;
    j.ctx = ctx;
    j.op = OP_MATMUL;
    j.sync = bench_is_device(backend);
    j.a = j.b = NULL;
    if (prn_tensor_uniform(ctx, dtype, 2, shape, -1.0, 1.0, &j.a) != PRN_OK ||
        prn_tensor_uniform(ctx, dtype, 2, shape, -1.0, 1.0, &j.b) != PRN_OK)
        die_prn(ctx, "matmul inputs");
    settle();
    if (time_best(run_op, &j, &s)) die_prn(ctx, "prn_matmul");
#ifdef PARRNN_USE_CBLAS
    if (strcmp(backend, "reference") == 0) g_blas_busy = 1;
#endif
    record("matmul", backend, dtype, n, s, 2.0 * (double)n * (double)n * (double)n / s * 1e-9, 0,
           2.0 * (double)n * (double)n * (double)n / s * 1e-9 / machine_gflops);
    prn_tensor_free(j.a);
    prn_tensor_free(j.b);
    prn_context_free(ctx);
}

#define ROW 1024
static void bench_elementwise(const char *backend, prn_dtype dtype, size_t n, int cached, double triad_gbps) {
    block_cache cache;
    prn_context *ctx;
    size_t flat[1], mat[2], row[2], sz = prn_dtype_size(dtype);
    prn_tensor *x = NULL, *x2 = NULL, *xm = NULL, *r = NULL;
    int op;
    memset(&cache, 0, sizeof cache);
    ctx = make_context(backend, cached ? &cache : NULL);
    flat[0] = n;
    mat[0] = n / ROW; mat[1] = ROW;
    row[0] = 1; row[1] = ROW;
    if (prn_tensor_uniform(ctx, dtype, 1, flat, -1.0, 1.0, &x) != PRN_OK ||
        prn_tensor_uniform(ctx, dtype, 1, flat, -1.0, 1.0, &x2) != PRN_OK ||
        prn_reshape(ctx, x, 2, mat, &xm) != PRN_OK ||
        prn_tensor_uniform(ctx, dtype, 2, row, -1.0, 1.0, &r) != PRN_OK)
        die_prn(ctx, "elementwise inputs");
    for (op = OP_ADD; op < OP_COUNT; ++op) {
        op_job j;
        char name[32];
        double s, bytes, gbps;
        j.ctx = ctx;
        j.op = op;
        j.sync = bench_is_device(backend);
        j.a = op == OP_MUL_ROW || op == OP_SUM_ROWS ? xm : x;
        j.b = op == OP_ADD ? x2 : op == OP_MUL_ROW ? r : NULL;
        settle();
        if (time_best(run_op, &j, &s)) die_prn(ctx, op_names[op]);
        bytes = (double)sz * (op == OP_ADD ? 3.0 * (double)n
                              : op == OP_MUL_ROW ? 2.0 * (double)n + ROW
                              : op == OP_SUM || op == OP_MAX ? (double)n
                              : op == OP_SUM_ROWS ? (double)n + (double)(n / ROW) : 2.0 * (double)n);
        gbps = bytes / s * 1e-9;
        snprintf(name, sizeof name, "%s%s", op_names[op], cached ? "_cached" : "");
        record(name, backend, dtype, n, s, gbps, 1, gbps / triad_gbps);
    }
    prn_tensor_free(x);
    prn_tensor_free(x2);
    prn_tensor_free(xm);
    prn_tensor_free(r);
    prn_context_free(ctx);
    cache_release(&cache);
}

/* ------------------------------------------------------------------------
 * Main
 * ---------------------------------------------------------------------- */
/* How busy the CPUs are, from /proc/stat (Linux; elsewhere unknown):
 * other processes' load makes the results noisy, so it is reported.
 * cpu_sample takes busy and total CPU seconds (all CPUs, USER_HZ = 100)
 * and this process's CPU seconds; cpu_background gives the share of all
 * CPU time between two samples that went to other processes. */




static void print_machine(void) {
    char model[256];
    cpu_model(model, sizeof model);
    printf("bench_ops: parrnn %s, %s mode\n", PARRNN_VERSION_STRING, g_quick ? "quick" : "full");
    printf("  cpu:       %s\n", model);
#ifdef _OPENMP
    printf("  threads:   %d (OpenMP; %d processors)\n", g_threads, omp_get_num_procs());
#else
    printf("  threads:   1 (built without OpenMP)\n");
#endif
    bench_print_compiler();
    bench_print_cblas();
#if BENCH_HAVE_AVX2_PROBE
    printf("  avx2+fma:  %s\n", cpu_has_avx2() ? "yes" : "no");
#endif
    bench_report_idle();
}

static int usage(void) {
    fprintf(stderr, "usage: bench_ops [--quick] [--threads N]\n");
    return 2;
}

int main(int argc, char **argv) {
    bench_prog = "bench_ops";
    static const size_t full_sizes[] = {64, 256, 1024}, quick_sizes[] = {32, 128};
    const char *backends[3] = {"reference", "reference-noblas", NULL};
    static const prn_dtype dtypes[2] = {PRN_F32, PRN_F64};
    const size_t *sizes;
    size_t num_sizes, triad_n, elem_n;
    double triad_gbps, machine[2] = {0.0, 0.0}, t_start = now();
    int i, d, b, k, cached, nb = 2;
    cpu_sample run_start;

    if (bench_parse_args(argc, argv)) return usage();
#if defined(PARRNN_USE_CBLAS) && defined(OPENBLAS_VERSION)
    openblas_set_num_threads(g_threads);
#endif
    if (g_quick) {
        sizes = quick_sizes;
        num_sizes = sizeof quick_sizes / sizeof quick_sizes[0];
        triad_n = (size_t)4 << 20;   /* 3 x 32 MiB */
        elem_n = (size_t)1 << 20;
        g_repeats = 3;
        g_min_sample = 0.01;
        g_budget = 0.2;
    } else {
        sizes = full_sizes;
        num_sizes = sizeof full_sizes / sizeof full_sizes[0];
        triad_n = (size_t)32 << 20;  /* 3 x 256 MiB */
        elem_n = (size_t)16 << 20;
    }
    print_machine();
    {   /* a device backend built in, when its device is here */
        prn_context *dev = bench_device_context(2026);
        if (dev) {
            backends[nb++] = prn_context_backend_name(dev); /* the table's name outlives the context */
            prn_context_free(dev);
        }
    }
    run_start = cpu_sample_now();
    printf("  sizes:     matmul n =");
    for (i = 0; i < (int)num_sizes; ++i) printf(" %lu", (unsigned long)sizes[i]);
    printf("; elementwise %lu elements; triad 3 x %lu doubles\n", (unsigned long)elem_n,
           (unsigned long)triad_n);
    printf("  timing:    best of up to %d samples of >= %g s after warm-up\n", g_repeats, g_min_sample);

    /* 1. Machine limits. */
    table_header("Machine probes (ratio: triad = 1; GEMM vs the best probe of the dtype)");
    triad_gbps = triad_gbps_probe(triad_n);
    {
        double gf[3][2][8], sec[3][2][8];
        size_t s;
        for (d = 0; d < 2; ++d)
            for (k = 0; k < 3; ++k)
                for (s = 0; s < num_sizes; ++s) {
                    gf[k][d][s] = probe_gemm(k, dtypes[d], sizes[s], &sec[k][d][s]);
                    if (gf[k][d][s] > machine[d]) machine[d] = gf[k][d][s];
                }
        for (d = 0; d < 2; ++d)
            for (k = 0; k < 3; ++k)
                for (s = 0; s < num_sizes; ++s)
                    if (gf[k][d][s] > 0)
                        record(probe_names[k], probe_backends[k], dtypes[d], sizes[s], sec[k][d][s],
                               gf[k][d][s], 0, gf[k][d][s] / machine[d]);
    }
    printf("  => memory bandwidth (triad) %.2f GB/s; machine GEMM f32 %.2f, f64 %.2f GFLOP/s\n", triad_gbps,
           machine[0], machine[1]);

    /* 2. parrnn matmul. */
    table_header("parrnn prn_matmul, n x n (ratio: vs machine GEMM of the dtype)");
    for (b = 0; b < nb; ++b)
        for (d = 0; d < 2; ++d) {
            size_t s;
            for (s = 0; s < num_sizes; ++s) bench_matmul(backends[b], dtypes[d], sizes[s], machine[d]);
        }

    /* 3. parrnn elementwise. */
    table_header("parrnn elementwise, bytes read + written (ratio: vs triad bandwidth)");
    for (cached = 0; cached < 2; ++cached)
        for (b = 0; b < nb; ++b) /* device buffers do not come from the allocator: no cached run */
            for (d = 0; d < 2; ++d)
                if (!cached || !bench_is_device(backends[b]))
                    bench_elementwise(backends[b], dtypes[d], elem_n, cached, triad_gbps);

    /* 4. The same for scripts. */
    printf("\n");
    for (i = 0; i < g_num_results; ++i) {
        const result *r = &g_results[i];
        printf("BENCH name=%s backend=%s dtype=%s n=%lu threads=%d seconds=%.6g %s=%.4f ratio=%.4f\n", r->name,
               r->backend, prn_dtype_name(r->dtype), (unsigned long)r->n, g_threads, r->seconds,
               r->bandwidth ? "gbps" : "gflops", r->value, r->ratio);
    }
    printf("\n");
    print_background("during the run", cpu_background(run_start, cpu_sample_now()));
    printf("bench_ops: done in %.1f s\n", now() - t_start);
    return 0;
}
