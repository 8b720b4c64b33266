/* What the benchmarks share: settings, timing, the triad probe of the
 * machine's memory bandwidth, and how busy the other CPUs were.
 * Included once by each benchmark program, after parrnn.h (the device
 * helpers use its API); the program sets
 * bench_prog to its name. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef PARRNN_USE_CBLAS
/* before the report below, which names OpenBLAS's version where cblas.h
 * (OpenBLAS's) defines OPENBLAS_VERSION: a benchmark that included it
 * after this header was reported as "not OpenBLAS" */
#include <cblas.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#define BENCH_PRAGMA(x) _Pragma(#x)
#else
#define BENCH_PRAGMA(x)
#endif
/* Parallel loop over the machine probes' outer loops. */
#define BENCH_PARFOR BENCH_PRAGMA(omp parallel for schedule(static) num_threads(g_threads))

static const char *bench_prog = "bench";
static int g_threads = 1;
static int g_quick = 0;
static int g_repeats = 10;         /* timed samples per measurement (at most) */
static double g_min_sample = 0.05; /* seconds: calls are batched up to this  */
static double g_budget = 1.5;      /* seconds: no new sample after this (past the minimum) */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "%s: out of memory (%lu bytes)\n", bench_prog, (unsigned long)bytes);
        exit(1);
    }
    return p;
}

/* Best seconds per call of fn(user): a warm-up call (timed a second time
 * when fast, since the first may pay page faults), then up to g_repeats
 * batches of at least g_min_sample seconds (at least 3 -- 2 for calls over
 * 0.5 s; no new batch once g_budget seconds are spent). Calls over 1 s get
 * one more call only. The best sample filters out interference from other
 * processes. fn returns 0 on success; a failure is returned at once. */
typedef int (*bench_fn)(void *user);
static int time_best(bench_fn fn, void *user, double *best) {
    double start = now(), t0, t1, b = 1e300;
    long iters, i;
    int r, min_samples;
    t0 = now();
    if (fn(user)) return 1;
    t1 = now() - t0;
    if (t1 > 1.0) {
        t0 = now();
        if (fn(user)) return 1;
        t0 = now() - t0;
        *best = t0 < t1 ? t0 : t1;
        return 0;
    }
    if (t1 < 0.5 * g_min_sample) {
        t0 = now();
        if (fn(user)) return 1;
        t1 = now() - t0;
    }
    iters = t1 >= g_min_sample ? 1 : (long)(g_min_sample / (t1 > 1e-7 ? t1 : 1e-7)) + 1;
    min_samples = t1 > 0.5 ? 2 : 3;
    for (r = 0; r < g_repeats && (r < min_samples || now() - start < g_budget); ++r) {
        t0 = now();
        for (i = 0; i < iters; ++i)
            if (fn(user)) return 1;
        t1 = (now() - t0) / (double)iters;
        if (t1 < b) b = t1;
    }
    *best = b;
    return 0;
}

/* Best seconds per call of each of n functions, timed in rounds: each
 * round takes one sample (a batch of calls of at least g_min_sample
 * seconds) of every function in turn, so that all of them see the machine
 * in the same states -- a figure compared with another (a scan with the
 * triad) is then not at the mercy of when each was measured. A warm-up
 * call of each sizes its batches; then rounds until g_repeats are done or
 * n * g_budget seconds are spent (at least 3 rounds). When samples is not
 * NULL, it receives round r's seconds per call of function f at
 * [r * n + f] (room for g_repeats rounds) and *rounds their number.
 * Returns nonzero if a function fails. */
static inline int time_interleaved(int n, bench_fn *fns, void **users, double *best, double *samples, int *rounds) {
    double start = now(), t0, t1;
    long iters[16], i;
    int r, f;
    if (n > 16) return 1;
    for (f = 0; f < n; ++f) {
        t0 = now();
        if (fns[f](users[f])) return 1;
        t1 = now() - t0;
        if (t1 < 0.5 * g_min_sample) { /* the first call may pay page faults */
            t0 = now();
            if (fns[f](users[f])) return 1;
            t1 = now() - t0;
        }
        iters[f] = t1 >= g_min_sample ? 1 : (long)(g_min_sample / (t1 > 1e-7 ? t1 : 1e-7)) + 1;
        best[f] = 1e300;
    }
    for (r = 0; r < g_repeats && (r < 3 || now() - start < (double)n * g_budget); ++r)
        for (f = 0; f < n; ++f) {
            t0 = now();
            for (i = 0; i < iters[f]; ++i)
                if (fns[f](users[f])) return 1;
            t1 = (now() - t0) / (double)iters[f];
            if (t1 < best[f]) best[f] = t1;
            if (samples) samples[r * n + f] = t1;
        }
    if (rounds) *rounds = r;
    return 0;
}

/* One pass of the STREAM-like triad below over arrays the caller keeps
 * (for time_interleaved): user points at a triad_job. */
typedef struct triad_job {
    double *a, *b, *c;
    size_t n;
} triad_job;
static inline int triad_job_init(triad_job *j, size_t n) {
    long i, len = (long)n;
    j->n = n;
    j->a = (double *)xmalloc(n * sizeof(double));
    j->b = (double *)xmalloc(n * sizeof(double));
    j->c = (double *)xmalloc(n * sizeof(double));
    BENCH_PARFOR /* first touch in parallel, so pages land where the threads run */
    for (i = 0; i < len; ++i) { j->a[i] = 0.0; j->b[i] = 1.0; j->c[i] = 2.0; }
    return 0;
}
static inline int run_triad(void *user) {
    triad_job *j = (triad_job *)user;
    double *a = j->a;
    const double *b = j->b, *c = j->c, s = 3.0;
    long i, len = (long)j->n;
    BENCH_PARFOR
    for (i = 0; i < len; ++i) a[i] = b[i] + s * c[i];
    return a[len - 1] != 7.0; /* the values are checked */
}
static inline void triad_job_free(triad_job *j) { free(j->a); free(j->b); free(j->c); }

/* STREAM-like triad a[i] = b[i] + s*c[i] on n doubles: best seconds. */
static double probe_triad(size_t n) {
    double *a = (double *)xmalloc(n * sizeof *a);
    double *b = (double *)xmalloc(n * sizeof *b);
    double *c = (double *)xmalloc(n * sizeof *c);
    const double s = 3.0;
    double best = 1e300, check = 0.0, t;
    long i, len = (long)n;
    int r;
    BENCH_PARFOR /* first touch in parallel, so pages land where the threads run */
    for (i = 0; i < len; ++i) { a[i] = 0.0; b[i] = 1.0; c[i] = 2.0; }
    for (r = 0; r <= g_repeats; ++r) { /* r == 0 is the warm-up */
        t = now();
        BENCH_PARFOR
        for (i = 0; i < len; ++i) a[i] = b[i] + s * c[i];
        t = now() - t;
        if (r > 0 && t < best) best = t;
    }
    for (i = 0; i < len; i += 4096) check += a[i];
    if (check != 7.0 * (double)((len + 4095) / 4096)) {
        fprintf(stderr, "%s: triad probe computed wrong values\n", bench_prog);
        exit(1);
    }
    free(a); free(b); free(c);
    return best;
}

/* How busy the CPUs are, from /proc/stat (Linux; elsewhere unknown):
 * other processes' load makes the results noisy, so it is reported.
 * cpu_sample takes busy and total CPU seconds (all CPUs, USER_HZ = 100)
 * and this process's CPU seconds; cpu_background gives the share of all
 * CPU time between two samples that went to other processes. */
typedef struct cpu_sample {
    double busy, total, own;
    int ok;
} cpu_sample;

static cpu_sample cpu_sample_now(void) {
    cpu_sample c;
    double v[8];
    FILE *f = fopen("/proc/stat", "r");
    int k;
    memset(&c, 0, sizeof c);
    c.own = (double)clock() / CLOCKS_PER_SEC; /* all threads of this process */
    if (!f) return c;
    /* user nice system idle iowait irq softirq steal */
    c.ok = fscanf(f, "cpu %lf %lf %lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                  &v[7]) == 8;
    fclose(f);
    for (k = 0; c.ok && k < 8; ++k) {
        c.total += v[k] / 100.0;
        if (k != 3 && k != 4) c.busy += v[k] / 100.0;
    }
    return c;
}

static double cpu_background(cpu_sample a, cpu_sample b) {
    double other;
    if (!a.ok || !b.ok || b.total <= a.total) return -1.0;
    other = (b.busy - a.busy) - (b.own - a.own);
    return (other > 0 ? other : 0.0) / (b.total - a.total);
}

static void print_background(const char *when, double load) {
    if (load >= 0)
        printf("  background: %.0f%% of all CPU time went to other processes %s%s\n", 100.0 * load, when,
               load > 0.05 ? " (expect noise)" : "");
}

/* The compiler line of the machine report. */
static void bench_print_compiler(void) {
#if defined(__clang__)
    printf("  compiler:  clang %s\n", __clang_version__);
#elif defined(__GNUC__)
    printf("  compiler:  gcc %s\n", __VERSION__);
#else
    printf("  compiler:  unknown C99 compiler\n");
#endif
}

/* The threads line of the machine report of a benchmark that runs on
 * prn_config.num_threads: prefix ("1 and " or "") before the count, and
 * what else the threads are given to, with OpenMP and without. Inline:
 * not every benchmark prints it. */
static inline void bench_print_threads(const char *prefix, int threads, const char *with, const char *without) {
#ifdef _OPENMP
    (void)without;
    printf("  threads:   %s%d (prn_config.num_threads, OpenMP%s%s; %d processors)\n", prefix, threads,
#if defined(PARRNN_USE_CBLAS) && defined(OPENBLAS_VERSION)
           ", OpenBLAS",
#else
           "",
#endif
           with, omp_get_num_procs());
#else
    (void)prefix; (void)threads; (void)with;
    printf("  threads:   1 (built without OpenMP%s)\n", without);
#endif
}

/* The BLAS line of the machine report (inline: not every benchmark prints it). */
static inline void bench_print_cblas(void) {
#if defined(PARRNN_USE_CBLAS) && defined(OPENBLAS_VERSION)
    printf("  cblas:     %s(%s)\n", OPENBLAS_VERSION, openblas_get_config());
#elif defined(PARRNN_USE_CBLAS)
    printf("  cblas:     yes (not OpenBLAS)\n");
#else
    printf("  cblas:     no -- built without PARRNN_USE_CBLAS: backend \"reference\" runs f32\n"
           "             products on parrnn's AVX2 panel GEMM (M N K >= 2^18, AVX2 and FMA),\n"
           "             the rest on the loops of \"reference-noblas\"\n");
#endif
}

/* Watches the CPUs for a moment (1 s; 0.2 s with --quick) and reports how
 * much of their time other processes took. */
static void bench_report_idle(void) {
    cpu_sample c0 = cpu_sample_now(), c1;
    struct timespec ts;
    ts.tv_sec = g_quick ? 0 : 1;
    ts.tv_nsec = g_quick ? 200000000L : 0;
    nanosleep(&ts, NULL);
    c1 = cpu_sample_now();
    print_background("just before the run", cpu_background(c0, c1));
}

/* Options shared by the benchmarks: --quick and --threads N (default: what
 * OpenMP offers). Returns nonzero on a bad argument. */
/* A parrnn call that must succeed: on failure prints the call and the
 * context's message and jumps to the caller's fail label (ctx: the
 * caller's context). */
#define BENCH_CHECK(call)                                                                           \
    do {                                                                                            \
        prn_status st_ = (call);                                                                    \
        if (st_ != PRN_OK) {                                                                        \
            fprintf(stderr, "%s: %s failed: %s (%s)\n", bench_prog, #call, prn_status_string(st_), \
                    prn_last_error(ctx));                                                           \
            goto fail;                                                                              \
        }                                                                                           \
    } while (0)

static int bench_parse_args(int argc, char **argv) {
    int i, threads_given = 0;
    for (i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--quick") == 0) {
            g_quick = 1;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1024) return 1;
            g_threads = (int)v;
            threads_given = 1;
        } else {
            return 1;
        }
    }
#ifdef _OPENMP
    if (!threads_given) g_threads = omp_get_max_threads();
    omp_set_num_threads(g_threads);
#else
    if (threads_given && g_threads != 1) fprintf(stderr, "%s: built without OpenMP; running on 1 thread\n", bench_prog);
    g_threads = 1;
#endif
    return 0;
}

/* Device backends (every name but "reference*") queue their work. */
static int bench_is_device(const char *backend) { return strncmp(backend, "reference", 9) != 0; }

/* A context (with seed, gradients off) on the first device backend built in
 * whose device is present, or NULL; reports each one it tries. */
static prn_context *bench_device_context(uint64_t seed) {
    const char *names[16];
    int n = prn_backend_list(NULL, names, 16), i;
    prn_context *ctx = NULL;
    for (i = 0; i < n && i < 16 && !ctx; ++i)
        if (bench_is_device(names[i])) {
            prn_config cfg;
            char err[512];
            memset(&cfg, 0, sizeof cfg);
            cfg.backend = names[i];
            cfg.seed = seed;
            if (prn_context_create(&cfg, &ctx, err, sizeof err) == PRN_OK) {
                prn_no_grad_begin(ctx);
                printf("  device:    backend %s (timed calls end with a one-element read back)\n", names[i]);
            } else {
                ctx = NULL;
                printf("  device:    backend %s skipped: %s\n", names[i], err);
            }
        }
    return ctx;
}

/* The CPU's model name ("unknown" when /proc/cpuinfo says nothing). */
static void cpu_model(char *model, size_t size) {
    char line[256];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(model, size, "unknown");
    if (!f) return;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            char *p = strchr(line, ':');
            if (p) {
                p += 1 + strspn(p + 1, " \t");
                p[strcspn(p, "\n")] = 0;
                snprintf(model, size, "%s", p);
            }
            break;
        }
    fclose(f);
}
#endif
