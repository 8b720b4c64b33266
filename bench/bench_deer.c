/* bench_deer.c - DEER and quasi-DEER (prn_deer_rnn) against the sequential
 * evaluation (prn_rnn_forward) of a GRU: the speed-up study of the DEER
 * paper (Lim et al., 2023, the GRU speed-up figure) on this machine.
 *
 * Shapes: a one-layer, one-direction GRU (PRN_RNN_GRU, f32, PyTorch's
 * initialisation; seed 1234 + n) with hidden size n in {1, 2, 4, 8, 16,
 * 32, 64} and input size I = n, batch B = 16, T in {10^3, 10^4, 10^5,
 * 10^6} steps, x ~ N(0, 1), state0 = zeros: the shapes of the paper's
 * benchmark (deer/benchmarks/speedup/seq1d.py in machine-discovery/deer:
 * inputs [T, 16, nh], which also has T = 3 * 10^k). Methods, each with
 * gradients off (prn_no_grad_begin/end), each call ending with a
 * one-element read back of y (device backends queue their work):
 *   sequential  prn_rnn_forward
 *   deer        prn_deer_rnn, mode PRN_JACOBIAN_DENSE (Newton: the full n x n
 *               Jacobians, a dense block scan per iteration)
 *   quasi       prn_deer_rnn, mode PRN_JACOBIAN_DIAG (quasi-DEER: the
 *               diagonal of the Jacobians, a diagonal scan per iteration)
 * DEER runs with the library's default options (max_iter 100, f32
 * tolerances atol = rtol = 1e-5, no damping, no warm start, sequential
 * fall-back when not converged: a fall-back is flagged, and its time counts).
 *
 * Timing: bench_common.h's time_best (a warm-up call, then the best of a
 * few batches; for calls over 1 s the warm-up and one more call, best of
 * the two), CLOCK_MONOTONIC. Reported per measurement: seconds (best call),
 * iterations (Newton iterations of the last call, 0 for sequential),
 * speed-up (sequential seconds / this method's seconds) and max_abs_dev
 * (largest |y - y_sequential| over all B*T*n outputs; sanity: <= 1e-4).
 * On Linux the table also shows the peak resident memory of the
 * measurement (VmHWM after resetting it through /proc/self/clear_refs;
 * host memory only, so not meaningful for device backends).
 *
 * Skipping: a configuration is skipped ("skipped: needs ~X GB") when its
 * estimated peak memory exceeds the budget (--mem-gb, default half the
 * physical memory), and ("skipped: out of memory") when a call fails for
 * want of memory all the same (the composed DEER of n = 32 on an H200's
 * 139 GB did): the run goes on. Estimates in bytes, generous (f32 values): sequential
 * 10 B T n * 4; quasi-DEER 56 B T n * 4; DEER 12 B T n^2 * 4 + 56 B T n * 4
 * (the GRU's dense Jacobian is built from about ten temporaries of B T n^2
 * values); on a backend with fused DEER iterations (deer_iterate: the
 * reference) DEER and quasi-DEER 16 B T n * 4 where its supports takes
 * the size (CUDA: n <= 64; the composed estimate above otherwise: the
 * H200 run of n = 32 had used the fused one for the composed path); --grad doubles B T n; each
 * plus 0.6 GB for the reference backend's cache of freed buffers. Peaks measured on the
 * reference backend (generic iterations) are 7.8 B T n * 4,
 * 44 B T n * 4 and 9-12 B T n^2 * 4 + 45 B T n * 4. A method is also skipped
 * when one call of it is predicted, linearly in T from its time at the next
 * smaller T of the same n, to take more than --time-budget seconds (default
 * 120; a method skipped at one T is skipped at every larger T). When the
 * sequential evaluation is skipped the whole configuration is.
 *
 * Output: the machine report, a table for people (one row per method and
 * configuration, then the speed-ups as n x T matrices), then for scripts
 * one line per measurement (skipped ones have none):
 *   BENCH name=deer_gru backend=<b> hidden=<n> batch=16 T=<T>
 *         method=<sequential|deer|quasi> grad=<0|1> threads=<t> seconds=<s>
 *         iterations=<k> ns_per_row_iteration=<s / (B T k), k = 1 for
 *         sequential> speedup=<seq/this> max_abs_dev=<d>
 *         converged=<0|1> fell_back=<0|1>
 * (each on one line; sequential: iterations=0 speedup=1 max_abs_dev=0).
 * With --plot PREFIX: PREFIX.dat (a block per n, see write_dat), the
 * gnuplot script PREFIX.gp and, when gnuplot is on PATH, PREFIX_deer.png
 * and PREFIX_quasi.png: speed-up (log y) against T (log x), one line per
 * n, a dashed line at 1 (the figure of the DEER paper). Without gnuplot
 * the .dat and .gp are still written: `gnuplot PREFIX.gp` later.
 *
 * Usage: bench_deer [--quick] [--threads N] [--backend NAME] [--max-n N]
 *                   [--max-T T] [--n N] [--T T] [--grad] [--mem-gb G]
 *                   [--time-budget S] [--plot PREFIX]
 *   --n N, --T T     only this hidden size / this T (of the grid)
 *   --grad           every timed call (every method) also runs the backward
 *                    of sum(y) through the tape: forward plus gradients
 *   --quick          n in {1, 4}, T = 1000 only: a CI smoke run of a few seconds
 *   --threads N      prn_config.num_threads, OpenMP and OpenBLAS (default:
 *                    what OpenMP offers)
 *   --backend NAME   the parrnn backend (default "reference"; "opencl",
 *                    "cuda" where built in)
 *   --max-n N        largest hidden size (default 64)
 *   --max-T T        largest T (default 1000000; 1e5 is accepted)
 *   --mem-gb G       memory budget in GB (10^9 bytes; for a device backend
 *                    give the device's memory)
 *   --time-budget S  seconds one call may be predicted to take (default 120)
 *   --plot PREFIX    write PREFIX.dat, PREFIX.gp and the PNGs
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c99 */

#include "parrnn.h"
#include "bench_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define DEER_BATCH 16
#define NUM_N 7
#define NUM_T 4
#define NUM_M 3 /* sequential, deer, quasi */

static const size_t g_ns[NUM_N] = {1, 2, 4, 8, 16, 32, 64};
static const size_t g_Ts[NUM_T] = {1000, 10000, 100000, 1000000};
static const char *const g_mnames[NUM_M] = {"sequential", "deer", "quasi"};

static const char *g_backend = "reference";
static size_t g_max_n = 64, g_max_T = 1000000;
static double g_mem_budget = 0.0; /* bytes */
static double g_time_budget = 120.0;
static const char *g_plot = NULL;
static int g_grad = 0;              /* --grad: each call also runs the backward of sum(y) */
static size_t g_only_n = 0, g_only_T = 0; /* --n, --T: one hidden size / length only */
static int g_fused = 0;             /* the backend has deer_iterate (prn_deer_rnn's fused iterations) */
static prn_context *g_ectx = NULL;  /* for fused_takes */

/* Whether prn_deer_rnn runs this GRU's iterations (and with --grad its
 * adjoint) fused: the backend has the entries and its supports, when it
 * has one, takes the sizes (the CUDA kernels: n <= 64; larger ones are
 * composed, with the composed path's memory). */
static int fused_takes(size_t n, size_t T) {
    prn_deer_fused a;
    if (!g_ectx) return 0;
    memset(&a, 0, sizeof a);
    a.kind = PRN_RNN_GRU; a.dtype = PRN_F32; a.mode = PRN_JACOBIAN_DENSE;
    a.B = DEER_BATCH; a.T = T; a.H = a.S = a.hk = n;
    return prn_backend_supports(g_ectx, PRN_SLOT_deer_iterate, &a) &&
           (!g_grad || prn_backend_supports(g_ectx, PRN_SLOT_deer_adjoint, &a));
}

/* One (n, T, method). */
typedef struct result {
    int state;          /* 0 not in the grid, 1 measured, 2 skipped */
    double seconds;
    int iterations, converged, fell_back;
    double dev;         /* max |y - y_sequential|; NAN when not finite */
    double peak_gb;     /* peak RSS during the measurement, < 0 unknown */
    char note[96];      /* why skipped, or a remark */
} result;

static result g_res[NUM_N][NUM_T][NUM_M];

#define CHECK(call) BENCH_CHECK(call)

/* ------------------------------------------------------------------------
 * Memory: the budget, the estimates, the measured peak
 * ---------------------------------------------------------------------- */
static double physical_memory(void) {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGE_SIZE)
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && size > 0) return (double)pages * (double)size;
#endif
    return 0.0;
}

/* A call's estimated peak in bytes (see the header comment); "kept" also
 * covers x and the sequential output, alive throughout. */
static double estimate_bytes(int method, size_t n, size_t T) {
    double btn = (double)DEER_BATCH * (double)T * (double)n, kept = 0.6e9;
    if (g_grad) btn *= 2.0; /* the tape's saved values (fused DEER: the step's gates) */
    if (method == 0) return 10.0 * btn * 4.0 + kept;
    if (fused_takes(n, T)) return 16.0 * btn * 4.0 + kept; /* x, projections, two iterates, output */
    if (method == 2) return 56.0 * btn * 4.0 + kept;
    return 12.0 * btn * (double)n * 4.0 + 56.0 * btn * 4.0 + kept;
}

/* Resets the peak RSS (Linux >= 4.0); 0 when it cannot. */
static int peak_reset(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    int ok;
    if (!f) return 0;
    ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

/* Peak RSS in GB since the last reset (VmHWM), < 0 when unknown. */
static double peak_gb(void) {
    char line[256];
    double kb = -1.0;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1.0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kb = atof(line + 6);
            break;
        }
    fclose(f);
    return kb < 0 ? -1.0 : kb * 1024.0 / 1e9;
}

/* ------------------------------------------------------------------------
 * The timed calls
 * ---------------------------------------------------------------------- */
typedef struct deer_case {
    prn_context *ctx;
    prn_rnn *rnn;
    prn_tensor *x;
    prn_tensor *y;       /* the last call's output */
    int method;
    prn_deer_stats stats; /* the last DEER call's */
    prn_status status;    /* the last call's: out of memory skips the case */
    char msg[160];
} deer_case;

static int run_call(void *user) {
    deer_case *c = (deer_case *)user;
    prn_context *ctx = c->ctx;
    prn_tensor *y = NULL, *l = NULL;
    double v = 0.0;
    int rc = 1;
    c->status = PRN_OK;
#undef CHECK /* as BENCH_CHECK, keeping the status and message for measure() */
#define CHECK(call)                                                                             \
    do {                                                                                        \
        prn_status st_ = (call);                                                                \
        if (st_ != PRN_OK) {                                                                    \
            c->status = st_;                                                                    \
            snprintf(c->msg, sizeof c->msg, "%s", prn_last_error(ctx));                         \
            if (st_ != PRN_ERR_OUT_OF_MEMORY)                                                   \
                fprintf(stderr, "%s: %s failed: %s (%s)\n", bench_prog, #call, prn_status_string(st_), \
                        c->msg);                                                                \
            goto fail;                                                                          \
        }                                                                                       \
    } while (0)
    prn_tensor_free(c->y); /* before the call: one output alive at a time */
    c->y = NULL;
    if (!g_grad) prn_no_grad_begin(ctx);
    if (c->method == 0) {
        CHECK(prn_rnn_forward(ctx, c->rnn, c->x, NULL, &y, NULL));
    } else {
        prn_deer_options o;
        memset(&o, 0, sizeof o);
        o.mode = c->method == 1 ? PRN_JACOBIAN_DENSE : PRN_JACOBIAN_DIAG;
        memset(&c->stats, 0, sizeof c->stats);
        CHECK(prn_deer_rnn(ctx, c->rnn, c->x, NULL, &o, &y, NULL, &c->stats));
    }
    if (g_grad) { /* the backward of sum(y): every parameter's gradient */
        prn_tensor *p[8];
        int np = prn_rnn_params(c->rnn, p, 8), i;
        CHECK(prn_sum(ctx, y, PRN_ALL_AXES, 0, &l));
        CHECK(prn_backward(ctx, l));
        CHECK(prn_tensor_item(prn_tensor_grad(p[0]), &v));
        for (i = 0; i < np; ++i) prn_tensor_zero_grad(p[i]);
    }
    CHECK(prn_tensor_item(y, &v)); /* waits for queued work on device backends */
    c->y = y;
    y = NULL;
    rc = 0;
fail:
    if (g_grad) prn_tape_clear(ctx);
    else prn_no_grad_end(ctx);
    prn_tensor_free(l);
    prn_tensor_free(y);
    return rc;
}
#undef CHECK
#define CHECK(call) BENCH_CHECK(call)

/* max |a - b| over all elements (on the backend); NAN when any difference
 * is not finite. */
static int max_abs_dev(prn_context *ctx, prn_tensor *a, prn_tensor *b, double *dev) {
    prn_tensor *d = NULL, *nd = NULL, *mx = NULL, *mn = NULL, *sm = NULL;
    double hi = 0.0, lo = 0.0, s = 0.0;
    int rc = 1;
    prn_no_grad_begin(ctx);
    CHECK(prn_sub(ctx, a, b, &d));
    CHECK(prn_sum(ctx, d, PRN_ALL_AXES, 0, &sm)); /* a sum keeps a NaN; max skips it */
    CHECK(prn_tensor_item(sm, &s));
    CHECK(prn_max(ctx, d, PRN_ALL_AXES, 0, &mx));
    CHECK(prn_tensor_item(mx, &hi));
    CHECK(prn_neg(ctx, d, &nd));
    CHECK(prn_max(ctx, nd, PRN_ALL_AXES, 0, &mn));
    CHECK(prn_tensor_item(mn, &lo));
    *dev = isfinite(s) && isfinite(hi) && isfinite(lo) ? (hi > lo ? hi : lo) : NAN;
    rc = 0;
fail:
    prn_no_grad_end(ctx);
    prn_tensor_free(d); prn_tensor_free(nd); prn_tensor_free(mx); prn_tensor_free(mn); prn_tensor_free(sm);
    return rc;
}

/* ------------------------------------------------------------------------
 * Report
 * ---------------------------------------------------------------------- */
static void fmt_gb(char *buf, size_t size, double bytes) {
    if (bytes < 1e8) snprintf(buf, size, "%.2g", bytes / 1e9);
    else if (bytes < 1e10) snprintf(buf, size, "%.2f", bytes / 1e9);
    else snprintf(buf, size, "%.1f", bytes / 1e9);
}

static void print_row(size_t n, size_t T, int m, const result *r, const result *seq) {
    char secs[16] = "-", it[8] = "-", sp[16] = "-", dev[16] = "-", pk[16] = "-";
    if (r->state == 1) {
        snprintf(secs, sizeof secs, "%.4g", r->seconds);
        if (m) snprintf(it, sizeof it, "%d", r->iterations);
        if (m && seq->state == 1) snprintf(sp, sizeof sp, "%.3g", seq->seconds / r->seconds);
        if (m) snprintf(dev, sizeof dev, "%.2g", r->dev);
        if (r->peak_gb >= 0) snprintf(pk, sizeof pk, "%.2f", r->peak_gb);
    }
    printf("  %3lu %8lu  %-10s %10s %5s %9s %9s %7s  %s\n", (unsigned long)n, (unsigned long)T, g_mnames[m], secs, it, sp,
           dev, pk, r->note);
    fflush(stdout);
}

static void print_bench_line(size_t n, size_t T, int m, const result *r, const result *seq, int threads) {
    /* ns per row-iteration: the call's time over B T rows times the Newton iterations */
    double rows = (double)DEER_BATCH * (double)T * (m && r->iterations ? r->iterations : 1);
    printf("BENCH name=deer_gru backend=%s hidden=%lu batch=%d T=%lu method=%s grad=%d threads=%d seconds=%.6g "
           "iterations=%d ns_per_row_iteration=%.4g speedup=%.6g max_abs_dev=%.3g converged=%d fell_back=%d\n",
           g_backend, (unsigned long)n, DEER_BATCH, (unsigned long)T, g_mnames[m], g_grad, threads, r->seconds,
           m ? r->iterations : 0, r->seconds * 1e9 / rows, m ? seq->seconds / r->seconds : 1.0, m ? r->dev : 0.0,
           m ? r->converged : 1, m ? r->fell_back : 0);
}

/* PREFIX.dat: one block per hidden size (gnuplot's "index", blocks
 * separated by two blank lines), one row per T; "?" where not measured. */
static int write_dat(const char *path) {
    FILE *f = fopen(path, "w");
    int ni, ti, m, blocks = 0;
    if (!f) {
        fprintf(stderr, "%s: cannot write %s\n", bench_prog, path);
        return 1;
    }
    fprintf(f, "# bench_deer: GRU, batch %d, input size = hidden size n, f32, backend %s\n", DEER_BATCH, g_backend);
    fprintf(f, "# columns: n T seq_s deer_s quasi_s deer_speedup quasi_speedup deer_iter quasi_iter deer_dev "
               "quasi_dev; ? = not measured\n");
    for (ni = 0; ni < NUM_N; ++ni) {
        int any = 0;
        for (ti = 0; ti < NUM_T; ++ti) any |= g_res[ni][ti][0].state == 1;
        if (!any) continue;
        if (blocks++) fprintf(f, "\n\n");
        fprintf(f, "# n = %lu\n", (unsigned long)g_ns[ni]);
        for (ti = 0; ti < NUM_T; ++ti) {
            const result *r = g_res[ni][ti];
            if (r[0].state != 1) continue;
            fprintf(f, "%lu %lu %.6g", (unsigned long)g_ns[ni], (unsigned long)g_Ts[ti], r[0].seconds);
            for (m = 1; m < NUM_M; ++m)
                if (r[m].state == 1) fprintf(f, " %.6g", r[m].seconds);
                else fprintf(f, " ?");
            for (m = 1; m < NUM_M; ++m)
                if (r[m].state == 1) fprintf(f, " %.6g", r[0].seconds / r[m].seconds);
                else fprintf(f, " ?");
            for (m = 1; m < NUM_M; ++m)
                if (r[m].state == 1) fprintf(f, " %d", r[m].iterations);
                else fprintf(f, " ?");
            for (m = 1; m < NUM_M; ++m)
                if (r[m].state == 1) fprintf(f, " %.3g", r[m].dev);
                else fprintf(f, " ?");
            fprintf(f, "\n");
        }
    }
    return fclose(f) != 0;
}

/* PREFIX.gp, and the PNGs when gnuplot is on PATH. */
static void write_plot(int threads) {
    char dat[1100], gp[1100], cmd[2400];
    FILE *f;
    int ni, ti, k, blocks = 0, idx[NUM_N];
    if (strchr(g_plot, '"') || strchr(g_plot, '\'') || strchr(g_plot, '\\')) {
        fprintf(stderr, "%s: --plot %s: quotes and backslashes are not allowed in the prefix\n", bench_prog, g_plot);
        return;
    }
    snprintf(dat, sizeof dat, "%s.dat", g_plot);
    snprintf(gp, sizeof gp, "%s.gp", g_plot);
    if (write_dat(dat)) return;
    for (ni = 0; ni < NUM_N; ++ni) {
        int any = 0;
        for (ti = 0; ti < NUM_T; ++ti) any |= g_res[ni][ti][0].state == 1;
        idx[ni] = any ? blocks++ : -1;
    }
    f = fopen(gp, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot write %s\n", bench_prog, gp);
        return;
    }
    fprintf(f, "# gnuplot script written by bench_deer: gnuplot %s\n", gp);
    fprintf(f, "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
               "    set terminal pngcairo size 1000,650 font \",11\"\n"
               "} else {\n"
               "    set terminal png size 1000,650\n"
               "}\n");
    fprintf(f, "set datafile missing \"?\"\n"
               "set logscale xy\n"
               "set format x \"10^{%%L}\"\n"
               "set xrange [500:2000000]\n"
               "set xlabel \"sequence length T\"\n"
               "set ylabel \"speed-up over sequential (seconds / seconds)\"\n"
               "set key outside right top\n"
               "set grid\n");
    for (k = 0; k < 2; ++k) {
        int first = 1;
        double lo = 1.0, hi = 1.0; /* the y range: every speed-up and 1 */
        for (ni = 0; ni < NUM_N; ++ni)
            for (ti = 0; ti < NUM_T; ++ti) {
                const result *r = g_res[ni][ti];
                if (r[0].state == 1 && r[1 + k].state == 1) {
                    double sp = r[0].seconds / r[1 + k].seconds;
                    if (sp < lo) lo = sp;
                    if (sp > hi) hi = sp;
                }
            }
        fprintf(f, "\nset yrange [%.3g:%.3g]\n", lo / 2.0, hi * 2.0);
        fprintf(f, "set output \"%s_%s.png\"\n", g_plot, k ? "quasi" : "deer");
        fprintf(f, "set title \"%s\\nGRU, batch %d, input size = hidden size n, f32; parrnn backend %s, %d thread%s\"\n",
                k ? "quasi-DEER (diagonal Jacobians)" : "DEER (dense Jacobians)", DEER_BATCH, g_backend, threads,
                threads == 1 ? "" : "s");
        fprintf(f, "plot ");
        for (ni = 0; ni < NUM_N; ++ni) {
            int any = 0;
            for (ti = 0; ti < NUM_T; ++ti) any |= g_res[ni][ti][1 + k].state == 1;
            if (idx[ni] < 0 || !any) continue;
            fprintf(f, "%s\"%s\" index %d using 2:%d with linespoints lw 2 pt 7 title \"n = %lu\"", first ? "" : ", \\\n     ",
                    dat, idx[ni], 6 + k, (unsigned long)g_ns[ni]);
            first = 0;
        }
        fprintf(f, "%s1 with lines dt 2 lw 2 lc rgb \"black\" title \"1 (break-even)\"\n", first ? "" : ", \\\n     ");
        fprintf(f, "unset output\n");
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "%s: cannot write %s\n", bench_prog, gp);
        return;
    }
    printf("\nplot: wrote %s and %s\n", dat, gp);
    if (blocks == 0) {
        printf("  nothing measured: no PNG\n");
        return;
    }
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        printf("  gnuplot not found on PATH: no PNG (install it, e.g. apt-get install -y gnuplot-nox, then run\n"
               "  gnuplot '%s')\n", gp);
        return;
    }
    snprintf(cmd, sizeof cmd, "gnuplot '%s'", gp);
    if (system(cmd) != 0) printf("  gnuplot '%s' failed\n", gp);
    else printf("  wrote %s_deer.png and %s_quasi.png\n", g_plot, g_plot);
}

/* ------------------------------------------------------------------------
 * The grid
 * ---------------------------------------------------------------------- */
/* Predicted seconds of one call of method m at (ni, ti) from the next
 * smaller T: 0 when there is none (the first T of the grid), < 0 when that
 * one was skipped. */
static double predict(int ni, int ti, int m) {
    int tj;
    for (tj = ti - 1; tj >= 0; --tj) {
        const result *r = &g_res[ni][tj][m];
        if (g_Ts[tj] > g_max_T) continue;
        if (r->state == 1) return r->seconds * (double)g_Ts[ti] / (double)g_Ts[tj];
        if (r->state == 2) return -1.0;
    }
    return 0.0;
}

/* Sets r->state = 2 and the note when (ni, ti, m) is over a budget. */
static int check_budgets(int ni, int ti, int m, result *r) {
    double need = estimate_bytes(m, g_ns[ni], g_Ts[ti]), pred = predict(ni, ti, m);
    char gb[32], lim[32];
    if (need > g_mem_budget) {
        fmt_gb(gb, sizeof gb, need);
        fmt_gb(lim, sizeof lim, g_mem_budget);
        snprintf(r->note, sizeof r->note, "skipped: needs ~%s GB (budget %s GB)", gb, lim);
        r->state = 2;
    } else if (pred < 0) {
        snprintf(r->note, sizeof r->note, "skipped: skipped at a smaller T");
        r->state = 2;
    } else if (pred > g_time_budget) {
        snprintf(r->note, sizeof r->note, "skipped: predicted %.3g s per call (budget %g s)", pred, g_time_budget);
        r->state = 2;
    }
    return r->state == 2;
}

static int measure(deer_case *c, int m, result *r) {
    int have_peak = peak_reset();
    c->method = m;
    if (time_best(run_call, c, &r->seconds)) {
        if (c->status != PRN_ERR_OUT_OF_MEMORY) return 1;
        /* the estimate was short of the backend's memory: a skip, not the end of the run */
        snprintf(r->note, sizeof r->note, "skipped: out of memory (%.60s)", c->msg);
        r->state = 2;
        return 0;
    }
    r->peak_gb = have_peak ? peak_gb() : -1.0;
    if (m) {
        r->iterations = c->stats.iterations;
        r->converged = c->stats.converged;
        r->fell_back = c->stats.fell_back;
        if (r->fell_back)
            snprintf(r->note, sizeof r->note, "NOT CONVERGED in %d iterations: fell back to sequential",
                     c->stats.iterations);
        else if (!r->converged)
            snprintf(r->note, sizeof r->note, "NOT CONVERGED (residual %.3g)", c->stats.residual);
    }
    r->state = 1;
    return 0;
}

static int bench_grid(int threads) {
    prn_config cfg;
    prn_context *ctx = NULL;
    char err[512];
    deer_case c;
    prn_tensor *yseq = NULL;
    int ni, ti, m, rc = 1;
    memset(&c, 0, sizeof c);
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = g_backend;
    cfg.seed = 1234;
    cfg.num_threads = threads;
    if (prn_context_create(&cfg, &ctx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "%s: prn_context_create(backend %s): %s\n", bench_prog, g_backend, err);
        return 1;
    }
    c.ctx = ctx;
    g_fused = prn_context_backend(ctx)->deer_iterate != NULL;
    g_ectx = ctx;
    printf("  parrnn:    backend %s, prn_context_num_threads = %d%s%s%s\n", prn_context_backend_name(ctx),
           prn_context_num_threads(ctx), bench_is_device(g_backend) ? " (calls end with a one-element read back)" : "",
           g_fused ? ", fused DEER iterations (deer_iterate)" : ", generic DEER iterations",
           g_grad ? "; every call also runs the backward of sum(y)" : "");
    printf("\nGRU, B = %d, input = hidden = n, f32; seconds = best call (time_best); speed-up = sequential / this;\n"
           "dev = max |y - y_sequential|; peak = peak RSS of the measurement in GB\n",
           DEER_BATCH);
    printf("  %3s %8s  %-10s %10s %5s %9s %9s %7s  %s\n", "n", "T", "method", "seconds", "iter", "speed-up", "dev",
           "peak", "note");
    for (ni = 0; ni < NUM_N; ++ni) {
        size_t n = g_ns[ni];
        prn_rnn_config rcfg;
        if (n > g_max_n || (g_quick && n != 1 && n != 4) || (g_only_n && n != g_only_n)) continue;
        memset(&rcfg, 0, sizeof rcfg);
        rcfg.kind = PRN_RNN_GRU;
        rcfg.dtype = PRN_F32;
        rcfg.input_size = n;
        rcfg.hidden_size = n;
        rcfg.num_layers = 1;
        prn_seed(ctx, 1234 + n); /* the same network and inputs whatever else runs */
        CHECK(prn_rnn_create(ctx, &rcfg, &c.rnn));
        for (ti = 0; ti < NUM_T; ++ti) {
            size_t T = g_Ts[ti], xs[3];
            result *r = g_res[ni][ti];
            if (T > g_max_T || (g_quick && T != 1000) || (g_only_T && T != g_only_T)) continue;
            if (check_budgets(ni, ti, 0, &r[0])) {
                for (m = 1; m < NUM_M; ++m) {
                    r[m].state = 2;
                    snprintf(r[m].note, sizeof r[m].note, "skipped: sequential skipped");
                }
                for (m = 0; m < NUM_M; ++m) print_row(n, T, m, &r[m], &r[0]);
                continue;
            }
            xs[0] = DEER_BATCH; xs[1] = T; xs[2] = n;
            CHECK(prn_tensor_normal(ctx, PRN_F32, 3, xs, 0.0, 1.0, &c.x));
            if (measure(&c, 0, &r[0])) goto fail;
            if (r[0].state == 2) { /* out of memory */
                for (m = 1; m < NUM_M; ++m) {
                    r[m].state = 2;
                    snprintf(r[m].note, sizeof r[m].note, "skipped: sequential skipped");
                }
                for (m = 0; m < NUM_M; ++m) print_row(n, T, m, &r[m], &r[0]);
                prn_tensor_free(c.x); c.x = NULL;
                continue;
            }
            yseq = c.y;
            c.y = NULL;
            print_row(n, T, 0, &r[0], &r[0]);
            for (m = 1; m < NUM_M; ++m) {
                if (!check_budgets(ni, ti, m, &r[m])) {
                    if (measure(&c, m, &r[m])) goto fail;
                    if (r[m].state == 2) { print_row(n, T, m, &r[m], &r[0]); continue; } /* out of memory */
                    if (max_abs_dev(ctx, c.y, yseq, &r[m].dev)) goto fail;
                    if (!(r[m].dev <= 1e-4) && !r[m].note[0])
                        snprintf(r[m].note, sizeof r[m].note, "DEVIATION above 1e-4");
                    prn_tensor_free(c.y);
                    c.y = NULL;
                }
                print_row(n, T, m, &r[m], &r[0]);
            }
            prn_tensor_free(yseq); yseq = NULL;
            prn_tensor_free(c.x); c.x = NULL;
            if (g_plot) {
                char dat[1100];
                snprintf(dat, sizeof dat, "%s.dat", g_plot);
                write_dat(dat); /* kept current: a stopped run leaves what it measured */
            }
        }
        prn_rnn_free(c.rnn); c.rnn = NULL;
    }
    rc = 0;
fail:
    prn_tensor_free(yseq);
    prn_tensor_free(c.y);
    prn_tensor_free(c.x);
    prn_rnn_free(c.rnn);
    prn_context_free(ctx);
    return rc;
}

/* Speed-ups as n x T matrices, as in the paper's figure. */
static void print_matrices(void) {
    int m, ni, ti;
    for (m = 1; m < NUM_M; ++m) {
        printf("\nspeed-up of %s over sequential (sequential s / %s s; - not measured)\n", g_mnames[m], g_mnames[m]);
        printf("  %4s", "n");
        for (ti = 0; ti < NUM_T; ++ti)
            if (g_Ts[ti] <= g_max_T && (!g_quick || g_Ts[ti] == 1000)) {
                char h[32];
                snprintf(h, sizeof h, "T=%lu", (unsigned long)g_Ts[ti]);
                printf(" %10s", h);
            }
        printf("\n");
        for (ni = 0; ni < NUM_N; ++ni) {
            if (g_ns[ni] > g_max_n || (g_quick && g_ns[ni] != 1 && g_ns[ni] != 4)) continue;
            printf("  %4lu", (unsigned long)g_ns[ni]);
            for (ti = 0; ti < NUM_T; ++ti) {
                const result *r = g_res[ni][ti];
                if (g_Ts[ti] > g_max_T || (g_quick && g_Ts[ti] != 1000)) continue;
                if (r[0].state == 1 && r[m].state == 1) printf(" %10.3g", r[0].seconds / r[m].seconds);
                else printf(" %10s", "-");
            }
            printf("\n");
        }
    }
}

static int parse_double(const char *s, double lo, double *v) {
    char *end;
    double d = strtod(s, &end);
    if (end == s || *end || !(d >= lo) || !isfinite(d)) return 1;
    *v = d;
    return 0;
}

static int usage(void) {
    fprintf(stderr, "usage: bench_deer [--quick] [--threads N] [--backend NAME] [--max-n N] [--max-T T]\n"
                    "                  [--n N] [--T T] [--grad] [--mem-gb G] [--time-budget S] [--plot PREFIX]\n");
    return 2;
}

int main(int argc, char **argv) {
    char *args[64], model[256], lim[32];
    int nargs = 0, i, ni, ti, m, threads, measured = 0, skipped = 0, over = 0, unconv = 0;
    double t_start = now(), v, worst = 0.0;
    cpu_sample run_start, run_end;
    bench_prog = "bench_deer";
    (void)probe_triad;
    (void)bench_device_context;

    args[nargs++] = argv[0];
    for (i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            g_backend = argv[++i];
        } else if (strcmp(argv[i], "--max-n") == 0 && i + 1 < argc) {
            if (parse_double(argv[++i], 1, &v)) return usage();
            g_max_n = (size_t)v;
        } else if (strcmp(argv[i], "--max-T") == 0 && i + 1 < argc) {
            if (parse_double(argv[++i], 1, &v)) return usage();
            g_max_T = (size_t)v;
        } else if (strcmp(argv[i], "--mem-gb") == 0 && i + 1 < argc) {
            if (parse_double(argv[++i], 0, &v)) return usage();
            g_mem_budget = v * 1e9;
        } else if (strcmp(argv[i], "--time-budget") == 0 && i + 1 < argc) {
            if (parse_double(argv[++i], 0, &g_time_budget)) return usage();
        } else if (strcmp(argv[i], "--plot") == 0 && i + 1 < argc) {
            g_plot = argv[++i];
        } else if (strcmp(argv[i], "--grad") == 0) {
            g_grad = 1;
        } else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) {
            if (parse_double(argv[++i], 1, &v)) return usage();
            g_only_n = (size_t)v;
        } else if (strcmp(argv[i], "--T") == 0 && i + 1 < argc) {
            if (parse_double(argv[++i], 1, &v)) return usage();
            g_only_T = (size_t)v;
        } else if (nargs < 63) {
            args[nargs++] = argv[i];
        } else {
            return usage();
        }
    }
    args[nargs] = NULL;
    if (bench_parse_args(nargs, args)) return usage();
    threads = g_threads;
#if defined(PARRNN_USE_CBLAS) && defined(OPENBLAS_VERSION)
    openblas_set_num_threads(threads);
#endif
    if (g_quick) {
        g_repeats = 3;
        g_budget = 0.5;
    }
    if (g_mem_budget <= 0.0) {
        g_mem_budget = 0.5 * physical_memory();
        if (g_mem_budget <= 0.0) g_mem_budget = 4e9; /* unknown: a guess */
    }

    cpu_model(model, sizeof model);
    printf("bench_deer: parrnn %s, %s mode\n", PARRNN_VERSION_STRING, g_quick ? "quick" : "full");
    printf("  cpu:       %s\n", model);
    bench_print_threads("", threads, "", "");
    bench_print_compiler();
    bench_print_cblas();
    fmt_gb(lim, sizeof lim, g_mem_budget);
    printf("  budgets:   memory %s GB (--mem-gb), %g s per call (--time-budget); max n %lu, max T %lu\n", lim,
           g_time_budget, (unsigned long)g_max_n, (unsigned long)g_max_T);
    bench_report_idle();
    run_start = cpu_sample_now();
    if (bench_grid(threads)) return 1;
    run_end = cpu_sample_now();
    print_background("during the measurements", cpu_background(run_start, run_end));
    print_matrices();

    for (ni = 0; ni < NUM_N; ++ni)
        for (ti = 0; ti < NUM_T; ++ti)
            for (m = 0; m < NUM_M; ++m) {
                const result *r = &g_res[ni][ti][m];
                measured += r->state == 1;
                skipped += r->state == 2;
                if (r->state == 1 && m) {
                    if (!(r->dev <= 1e-4)) ++over;
                    if (!(r->dev <= worst)) worst = r->dev;
                    if (!r->converged || r->fell_back) ++unconv;
                }
            }
    printf("\n  %d measurements, %d skipped; DEER/quasi-DEER: %d not converged, %d with max_abs_dev above 1e-4 "
           "(largest %.3g)\n",
           measured, skipped, unconv, over, worst);

    printf("\n");
    for (ni = 0; ni < NUM_N; ++ni)
        for (ti = 0; ti < NUM_T; ++ti)
            for (m = 0; m < NUM_M; ++m)
                if (g_res[ni][ti][m].state == 1)
                    print_bench_line(g_ns[ni], g_Ts[ti], m, &g_res[ni][ti][m], &g_res[ni][ti][0], threads);
    if (g_plot) write_plot(threads);
    printf("\nbench_deer: done in %.1f s\n", now() - t_start);
    return 0;
}
