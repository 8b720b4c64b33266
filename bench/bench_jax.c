/* bench_jax.c - parrnn against JAX on the CPU, side by side: one GRU, the
 * same weights and inputs, evaluated sequentially and by DEER, forward and
 * forward + gradients.
 *
 * Shapes: a one-layer GRU (PRN_RNN_GRU, f32, PyTorch's initialisation from
 * seed 1234 + n), input size = hidden size n in {1, 2, 4, 8, 16, 32},
 * T in {10^4, 10^5}, batch B = 16, x ~ N(0, 1), h0 = 0. parrnn makes the
 * weights and x; they go to the JAX side as raw float32 files (w_ih, w_hh,
 * b_ih, b_hh in PyTorch's layout, x [B, T, n]) in a temporary directory.
 *
 * Methods (both sides):
 *   seq        parrnn: prn_rnn_forward (tape off)  JAX: jax.lax.scan
 *   seq_grad   forward, loss = sum(y), gradients of the four parameters:
 *              parrnn: tape + prn_backward          JAX: jax.grad through the scan
 *   deer       parrnn: prn_deer_rnn, default options (dense Jacobians,
 *              f32 atol = rtol = 1e-5, max_iter 100, sequential fall-back)
 *              JAX: bench_jax.py's DEER, written for this benchmark after
 *              prn_deer_rnn (jax.jacfwd Jacobians, jax.lax.associative_scan,
 *              the same tolerances, cap, clipping and fall-back)
 *   deer_grad  gradients as the DEER paper: parrnn's adjoint op (one
 *              reverse scan at the solution, then one batched step's VJP);
 *              JAX: a custom_vjp doing the same
 * Every JAX function is jitted and warmed up (compiled) before it is timed;
 * its time is of calls that end with block_until_ready.
 *
 * Checks: both sides' outputs and gradients are compared (y: max |parrnn -
 * JAX|; gradients: max |parrnn - JAX| / max |JAX|), each method against
 * the same method on the other side.
 *
 * Timing: interleaved rounds (--rounds, default 3; 1 with --quick): each
 * round takes one sample of every method on parrnn then on JAX (a sample:
 * calls until 0.05 s have passed, at least one), so both see the machine
 * in the same states; the best sample of each counts. The JAX side runs in
 * a child process (python3 bench/bench_jax.py, or --python / --script)
 * that this program drives through pipes. Both use every core OpenMP
 * offers (--threads N for parrnn; XLA's CPU client takes the machine's;
 * with --threads 1 the child gets XLA_FLAGS=--xla_cpu_multi_thread_eigen=false,
 * so that both sides run on one thread).
 *
 * Skipping: without python3 or jax, the JAX side is skipped with a message
 * (parrnn's side still runs). A DEER method is skipped when its memory
 * estimate, 5 B T n^2 * 4 + 24 B T n * 4 bytes (the dense Jacobians and
 * the scan's temporaries; the JAX side's peak RSS was 8.4 GB at n = 16,
 * T = 10^5, where this says 10.6 GB), exceeds --mem-gb (default: half the physical
 * memory), or when one call is predicted (linearly in T from the smaller T)
 * to take more than --time-budget seconds (default 20) on either side.
 *
 * Output: the machine report, a table, then for scripts one line per
 * measurement:
 *   BENCH name=gru_vs_jax backend=<parrnn|jax> n=<n> T=<T> B=16
 *         method=<seq|seq_grad|deer|deer_grad> threads=<t> seconds=<s>
 *         ratio=<seconds / parrnn's seconds of the method> iterations=<k>
 *         y_dev=<d> g_rel_dev=<d>
 * (one line each; ratio > 1 on a jax line: parrnn is faster).
 *
 * Usage: bench_jax [--quick] [--threads N] [--min-n N] [--max-n N]
 *                  [--min-T T] [--max-T T] [--rounds R] [--mem-gb G] [--time-budget S]
 *                  [--python PATH] [--script PATH]
 *   --quick   n = 1, T = 100, one round: a CI smoke run (JAX compiles 4 functions)
 *   --b1      then one sequence (B = 1), parrnn alone: prn_rnn_forward
 *             against prn_deer_rnn (dense) and quasi-DEER (diagonal), n in
 *             {1, 2}, T in {10^5, 10^6} (10^6 only when --max-T >= 10^5);
 *             lines BENCH name=gru_b1 ... seq_over_this=<r> (> 1: faster
 *             than the sequential layer). --b1-only: that section alone.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, mkdtemp, fdopen */

#include "parrnn.h"
#include "bench_common.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define BATCH 16
#define NUM_N 6
#define NUM_T 2
#define NUM_M 4

static const size_t g_ns[NUM_N] = {1, 2, 4, 8, 16, 32};
static size_t g_Ts[NUM_T] = {10000, 100000};
static const char *const g_mnames[NUM_M] = {"seq", "seq_grad", "deer", "deer_grad"};

static size_t g_max_n = 32, g_max_T = 100000, g_min_n = 1, g_min_T = 1;
static int g_rounds = 3;
static double g_mem_budget = 0.0, g_time_budget = 20.0;
static const char *g_python = "python3", *g_script = "bench/bench_jax.py";

/* One (n, T, method) on one side. */
typedef struct result {
    int state; /* 0 not run, 1 measured, 2 skipped */
    double seconds;
    int iterations;
    double y_dev, g_dev; /* parrnn vs JAX; NAN unknown */
    char note[96];
} result;
static result g_res[NUM_N][NUM_T][NUM_M][2]; /* [..][0] parrnn, [1] jax */

/* ------------------------------------------------------------------------
 * The JAX child
 * ---------------------------------------------------------------------- */
static FILE *g_to = NULL, *g_from = NULL;
static pid_t g_child = -1;
static char g_jax_version[600] = "";

/* One command, one line of answer (0 on success; the line without '\n'). */
static void jax_stop(void);
static int jax_ask(const char *cmd, char *ans, size_t size) {
    snprintf(ans, size, "no answer: the JAX process has ended (out of memory?)");
    if (!g_to) return 1;
    if (fprintf(g_to, "%s\n", cmd) < 0 || fflush(g_to) != 0 || !fgets(ans, (int)size, g_from)) {
        snprintf(ans, size, "no answer: the JAX process has ended (out of memory?)");
        jax_stop();
        return 1;
    }
    ans[strcspn(ans, "\n")] = 0;
    return 0;
}

static void jax_stop(void) {
    if (g_to) {
        fprintf(g_to, "quit\n");
        fclose(g_to);
    }
    if (g_from) fclose(g_from);
    if (g_child > 0) waitpid(g_child, NULL, 0);
    g_to = g_from = NULL;
    g_child = -1;
}

/* Starts the child and asks whether jax imports; 0 when it does, else the
 * reason in why. */
static int jax_start(char *why, size_t size) {
    int to[2], from[2];
    char ans[512];
    struct stat sb;
    if (stat(g_script, &sb) != 0) {
        snprintf(why, size, "%s not found (run from the repository root, or give --script)", g_script);
        return 1;
    }
    if (pipe(to) || pipe(from)) {
        snprintf(why, size, "pipe: %s", strerror(errno));
        return 1;
    }
    fflush(stdout);
    g_child = fork();
    if (g_child < 0) {
        snprintf(why, size, "fork: %s", strerror(errno));
        return 1;
    }
    if (g_child == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]); close(to[1]); close(from[0]); close(from[1]);
        if (g_threads == 1) { /* XLA on one thread too */
            static char flags[2048];
            const char *old = getenv("XLA_FLAGS");
            snprintf(flags, sizeof flags, "%s%s--xla_cpu_multi_thread_eigen=false", old ? old : "", old ? " " : "");
            setenv("XLA_FLAGS", flags, 1);
        }
        execlp(g_python, g_python, g_script, (char *)NULL);
        _exit(127); /* no python: the parent reads end of file */
    }
    close(to[0]);
    close(from[1]);
    g_to = fdopen(to[1], "w");
    g_from = fdopen(from[0], "r");
    if (!g_to || !g_from || jax_ask("check", ans, sizeof ans)) {
        snprintf(why, size, "%s could not run %s", g_python, g_script);
        jax_stop();
        return 1;
    }
    if (strncmp(ans, "ok ", 3) != 0) {
        snprintf(why, size, "%s", strncmp(ans, "nojax ", 6) == 0 ? ans + 6 : ans);
        jax_stop();
        return 1;
    }
    snprintf(g_jax_version, sizeof g_jax_version, "%s", ans + 3);
    return 0;
}

/* ------------------------------------------------------------------------
 * parrnn's side
 * ---------------------------------------------------------------------- */
#define CHECK(call) BENCH_CHECK(call)

static const char *const g_pnames[4] = {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"};

typedef struct pcase {
    prn_context *ctx;
    prn_rnn *rnn;
    prn_tensor *x, *y; /* y: the last forward call's output */
    int method, iterations;
} pcase;

static int run_parrnn(void *user) {
    pcase *c = (pcase *)user;
    prn_context *ctx = c->ctx;
    prn_tensor *y = NULL, *loss = NULL;
    prn_deer_stats ds;
    double v = 0.0;
    int grad = c->method == 1 || c->method == 3, deer = c->method >= 2, i, rc = 1;
    prn_tensor_free(c->y);
    c->y = NULL;
    for (i = 0; i < 4; ++i) prn_tensor_zero_grad(prn_rnn_param(c->rnn, g_pnames[i]));
    if (!grad) prn_no_grad_begin(ctx);
    if (deer) {
        memset(&ds, 0, sizeof ds);
        CHECK(prn_deer_rnn(ctx, c->rnn, c->x, NULL, NULL, &y, NULL, &ds));
        c->iterations = ds.iterations;
    } else {
        CHECK(prn_rnn_forward(ctx, c->rnn, c->x, NULL, &y, NULL));
    }
    if (grad) {
        CHECK(prn_sum(ctx, y, PRN_ALL_AXES, 0, &loss));
        CHECK(prn_backward(ctx, loss));
        CHECK(prn_tensor_item(prn_tensor_grad(prn_rnn_param(c->rnn, g_pnames[1])), &v));
    } else {
        CHECK(prn_tensor_item(y, &v));
    }
    c->y = y;
    y = NULL;
    rc = 0;
fail:
    if (!grad) prn_no_grad_end(ctx);
    prn_tensor_free(y);
    prn_tensor_free(loss);
    return rc;
}

/* One sample: calls until g_min_sample seconds have passed (at least one). */
static int sample_parrnn(pcase *c, double *sec) {
    double t0 = now(), el;
    long calls = 0;
    do {
        if (run_parrnn(c)) return 1;
        ++calls;
        el = now() - t0;
    } while (el < g_min_sample);
    *sec = el / (double)calls;
    return 0;
}

static int write_f32(const char *dir, const char *name, const float *a, size_t n) {
    char path[1200];
    FILE *f;
    size_t w;
    snprintf(path, sizeof path, "%s/%s.f32", dir, name);
    f = fopen(path, "wb");
    if (!f) return 1;
    w = fwrite(a, sizeof *a, n, f);
    return (fclose(f) != 0) | (w != n);
}

static float *read_f32(const char *dir, const char *name, size_t n) {
    char path[1200];
    float *a = (float *)xmalloc(n * sizeof *a);
    FILE *f;
    size_t r;
    snprintf(path, sizeof path, "%s/%s.f32", dir, name);
    f = fopen(path, "rb");
    if (!f) { free(a); return NULL; }
    r = fread(a, sizeof *a, n, f);
    fclose(f);
    if (r != n) { free(a); return NULL; }
    return a;
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d; /* NaN wins */
    }
    return m;
}

static double max_abs(const float *a, size_t n) {
    double m = 0.0;
    size_t i;
    for (i = 0; i < n; ++i)
        if (fabs((double)a[i]) > m) m = fabs((double)a[i]);
    return m;
}

/* The gradients of the four parameters, concatenated in g_pnames' order. */
static int grads_of(prn_rnn *rnn, float *g) {
    int i;
    size_t off = 0;
    for (i = 0; i < 4; ++i) {
        prn_tensor *gt = prn_tensor_grad(prn_rnn_param(rnn, g_pnames[i]));
        size_t k = prn_tensor_numel(prn_rnn_param(rnn, g_pnames[i]));
        if (!gt || prn_tensor_download(gt, g + off, k) != PRN_OK) return 1;
        off += k;
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * The grid
 * ---------------------------------------------------------------------- */
static double physical_memory(void) {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGE_SIZE)
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && size > 0) return (double)pages * (double)size;
#endif
    return 0.0;
}

static double deer_bytes(size_t n, size_t T) {
    double btn = (double)BATCH * (double)T * (double)n;
    return 5.0 * btn * (double)n * 4.0 + 24.0 * btn * 4.0; /* JAX's peak: 8.4 GB at n = 16, T = 1e5 */
}

/* Predicted seconds of (ni, ti, m) on side s from the smaller T; 0 none. */
static double predict(int ni, int ti, int m, int s) {
    int tj;
    for (tj = ti - 1; tj >= 0; --tj) {
        const result *r = &g_res[ni][tj][m][s];
        if (r->state == 1) return r->seconds * (double)g_Ts[ti] / (double)g_Ts[tj];
        if (r->state == 2) return 1e300;
    }
    return 0.0;
}

static int run_case(prn_context *ctx, int ni, int ti, int have_jax, const char *dir) {
    size_t n = g_ns[ni], T = g_Ts[ti], xs[3], ny = (size_t)BATCH * T * n, ng = 2 * 3 * n * n + 2 * 3 * n;
    prn_rnn_config rc;
    pcase c;
    char cmd[1400], ans[512];
    float *buf = NULL, *y_p[NUM_M] = {NULL, NULL, NULL, NULL}, *g_p[NUM_M] = {NULL, NULL, NULL, NULL};
    int m, r, s, i, jax_ok = have_jax, ret = 1, jax_iters = 0, run[NUM_M];
    memset(&c, 0, sizeof c);
    c.ctx = ctx;
    memset(&rc, 0, sizeof rc);
    rc.kind = PRN_RNN_GRU;
    rc.dtype = PRN_F32;
    rc.input_size = n;
    rc.hidden_size = n;
    rc.num_layers = 1;
    prn_seed(ctx, 1234 + n);
    CHECK(prn_rnn_create(ctx, &rc, &c.rnn));
    xs[0] = BATCH; xs[1] = T; xs[2] = n;
    CHECK(prn_tensor_normal(ctx, PRN_F32, 3, xs, 0.0, 1.0, &c.x));
    for (i = 0; i < 4; ++i) CHECK(prn_tensor_set_requires_grad(prn_rnn_param(c.rnn, g_pnames[i]), 1));

    /* which methods run: DEER within the budgets */
    for (m = 0; m < NUM_M; ++m) {
        run[m] = 1;
        if (m >= 2 && deer_bytes(n, T) > g_mem_budget) {
            run[m] = 0;
            snprintf(g_res[ni][ti][m][0].note, sizeof g_res[ni][ti][m][0].note, "skipped: needs ~%.1f GB (budget %.1f)",
                     deer_bytes(n, T) / 1e9, g_mem_budget / 1e9);
        }
        for (s = 0; s < 2 && run[m]; ++s)
            if (predict(ni, ti, m, s) > g_time_budget) {
                run[m] = 0;
                snprintf(g_res[ni][ti][m][0].note, sizeof g_res[ni][ti][m][0].note,
                         "skipped: a %s call predicted over %g s", s ? "jax" : "parrnn", g_time_budget);
            }
        if (!run[m]) {
            g_res[ni][ti][m][0].state = g_res[ni][ti][m][1].state = 2;
            snprintf(g_res[ni][ti][m][1].note, sizeof g_res[ni][ti][m][1].note, "%s", g_res[ni][ti][m][0].note);
        }
    }

    /* parrnn's results, once, for the comparison */
    buf = (float *)xmalloc((ny > ng ? ny : ng) * sizeof *buf);
    for (m = 0; m < NUM_M; ++m) {
        if (!run[m]) continue;
        c.method = m;
        if (run_parrnn(&c)) goto fail;
        if (m == 0 || m == 2) {
            y_p[m] = (float *)xmalloc(ny * sizeof(float));
            CHECK(prn_tensor_download(c.y, y_p[m], ny));
            g_res[ni][ti][m][0].iterations = m == 2 ? c.iterations : 0;
        } else {
            g_p[m] = (float *)xmalloc(ng * sizeof(float));
            if (grads_of(c.rnn, g_p[m])) { fprintf(stderr, "%s: no gradients\n", bench_prog); goto fail; }
            g_res[ni][ti][m][0].iterations = m == 3 ? c.iterations : 0;
        }
    }
    prn_tensor_free(c.y);
    c.y = NULL;

    /* the JAX side: same weights and x, its results */
    if (jax_ok) {
        for (i = 0; i < 4 && jax_ok; ++i) {
            prn_tensor *p = prn_rnn_param(c.rnn, g_pnames[i]);
            size_t k = prn_tensor_numel(p);
            static const char *const files[4] = {"w_ih", "w_hh", "b_ih", "b_hh"};
            CHECK(prn_tensor_download(p, buf, k));
            if (write_f32(dir, files[i], buf, k)) jax_ok = 0;
        }
        CHECK(prn_tensor_download(c.x, buf, ny));
        if (jax_ok && write_f32(dir, "x", buf, ny)) jax_ok = 0;
        if (!jax_ok) fprintf(stderr, "%s: cannot write the inputs to %s\n", bench_prog, dir);
        snprintf(cmd, sizeof cmd, "load %s %lu %lu %d ", dir, (unsigned long)n, (unsigned long)T, BATCH);
        for (m = 0, i = 0; m < NUM_M; ++m) /* the methods to compile and run: skipped ones may not fit */
            if (run[m]) snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s%s", i++ ? "," : "", g_mnames[m]);
        if (jax_ok && (jax_ask(cmd, ans, sizeof ans) || strncmp(ans, "ok ", 3) != 0)) {
            fprintf(stderr, "%s: the JAX side failed to load n=%lu T=%lu: %s\n", bench_prog, (unsigned long)n,
                    (unsigned long)T, ans);
            jax_ok = 0;
            snprintf(g_res[ni][ti][0][1].note, sizeof g_res[ni][ti][0][1].note, "JAX side failed (see stderr)");
        }
        if (jax_ok) {
            const char *it = strstr(ans, "iterations=");
            jax_iters = it ? atoi(it + 11) : 0;
            if (strstr(ans, "fell_back=1"))
                snprintf(g_res[ni][ti][2][1].note, sizeof g_res[ni][ti][2][1].note, "JAX DEER NOT CONVERGED: fell back");
        }
        for (m = 0; m < NUM_M && jax_ok; ++m) {
            static const char *const outs[NUM_M] = {"y_seq", "g_seq", "y_deer", "g_deer"};
            int isy = m == 0 || m == 2;
            float *o = run[m] ? read_f32(dir, outs[m], isy ? ny : ng) : NULL;
            result *rp = &g_res[ni][ti][m][0], *rj = &g_res[ni][ti][m][1];
            if (!run[m]) continue;
            if (!o) { fprintf(stderr, "%s: cannot read %s\n", bench_prog, outs[m]); jax_ok = 0; break; }
            if (isy) rp->y_dev = rj->y_dev = max_abs_diff(y_p[m], o, ny), rp->g_dev = rj->g_dev = NAN;
            else {
                double mx = max_abs(o, ng);
                rp->g_dev = rj->g_dev = max_abs_diff(g_p[m], o, ng) / (mx > 0 ? mx : 1.0);
                rp->y_dev = rj->y_dev = NAN;
            }
            rj->iterations = m >= 2 ? jax_iters : 0;
            free(o);
        }
    }

    /* interleaved rounds */
    for (r = 0; r < g_rounds; ++r)
        for (m = 0; m < NUM_M; ++m) {
            double sec;
            if (!run[m]) continue;
            c.method = m;
            if (sample_parrnn(&c, &sec)) goto fail;
            if (r == 0 || sec < g_res[ni][ti][m][0].seconds) g_res[ni][ti][m][0].seconds = sec;
            g_res[ni][ti][m][0].state = 1;
            if (!jax_ok) continue;
            snprintf(cmd, sizeof cmd, "time %s %g", g_mnames[m], g_min_sample);
            if (jax_ask(cmd, ans, sizeof ans) || !(atof(ans) > 0)) {
                fprintf(stderr, "%s: the JAX side failed to time %s: %s\n", bench_prog, g_mnames[m], ans);
                jax_ok = 0;
                continue;
            }
            sec = atof(ans);
            if (r == 0 || sec < g_res[ni][ti][m][1].seconds) g_res[ni][ti][m][1].seconds = sec;
            g_res[ni][ti][m][1].state = 1;
        }
    ret = 0;
fail:
    prn_tensor_free(c.y);
    prn_tensor_free(c.x);
    prn_rnn_free(c.rnn);
    free(buf);
    for (m = 0; m < NUM_M; ++m) { free(y_p[m]); free(g_p[m]); }
    return ret;
}

static void fmt_dev(char *b, size_t size, double v) {
    if (isnan(v)) snprintf(b, size, "-");
    else snprintf(b, size, "%.2g", v);
}

static void print_table(int have_jax) {
    int ni, ti, m;
    printf("\nGRU, B = %d, input = hidden = n, f32; seconds per call (best sample); ratio = JAX / parrnn (> 1: parrnn "
           "faster);\ny dev = max |y_parrnn - y_jax|; g dev = max |g_parrnn - g_jax| / max |g_jax| (same method)\n",
           BATCH);
    printf("  %3s %7s  %-10s %11s %11s %8s %5s %5s %9s %9s  %s\n", "n", "T", "method", "parrnn s", "jax s", "ratio", "it_p",
           "it_j", "y dev", "g dev", "note");
    for (ni = 0; ni < NUM_N; ++ni)
        for (ti = 0; ti < NUM_T; ++ti)
            for (m = 0; m < NUM_M; ++m) {
                const result *p = &g_res[ni][ti][m][0], *j = &g_res[ni][ti][m][1];
                char ps[24] = "-", js[24] = "-", rs[24] = "-", yd[24], gd[24];
                if (p->state == 0) continue;
                if (p->state == 1) snprintf(ps, sizeof ps, "%.4g", p->seconds);
                if (j->state == 1) snprintf(js, sizeof js, "%.4g", j->seconds);
                if (p->state == 1 && j->state == 1) snprintf(rs, sizeof rs, "%.3g", j->seconds / p->seconds);
                fmt_dev(yd, sizeof yd, have_jax && j->state == 1 ? p->y_dev : NAN);
                fmt_dev(gd, sizeof gd, have_jax && j->state == 1 ? p->g_dev : NAN);
                printf("  %3lu %7lu  %-10s %11s %11s %8s %5d %5d %9s %9s  %s%s%s\n", (unsigned long)g_ns[ni],
                       (unsigned long)g_Ts[ti], g_mnames[m], ps, js, rs, p->iterations, j->iterations, yd, gd, p->note,
                       p->note[0] && j->note[0] && strcmp(p->note, j->note) ? "; " : "",
                       strcmp(p->note, j->note) ? j->note : "");
            }
}

static void print_bench_lines(int threads) {
    int ni, ti, m, s;
    printf("\n");
    for (ni = 0; ni < NUM_N; ++ni)
        for (ti = 0; ti < NUM_T; ++ti)
            for (m = 0; m < NUM_M; ++m)
                for (s = 0; s < 2; ++s) {
                    const result *r = &g_res[ni][ti][m][s], *p = &g_res[ni][ti][m][0];
                    if (r->state != 1 || p->state != 1) continue;
                    printf("BENCH name=gru_vs_jax backend=%s n=%lu T=%lu B=%d method=%s threads=%d seconds=%.6g "
                           "ratio=%.6g iterations=%d y_dev=%.3g g_rel_dev=%.3g\n",
                           s ? "jax" : "parrnn", (unsigned long)g_ns[ni], (unsigned long)g_Ts[ti], BATCH, g_mnames[m],
                           threads, r->seconds, r->seconds / p->seconds, r->iterations, r->y_dev, r->g_dev);
                }
}

/* ------------------------------------------------------------------------
 * --b1: one sequence (B = 1), parrnn alone: where DEER beats the
 * sequential layer. The same GRU as the grid (n = input = hidden), x ~
 * N(0, 1), h0 = 0, forward, tape off; interleaved rounds, best sample.
 * DEER with default options (dense) and quasi-DEER (PRN_JACOBIAN_DIAG);
 * ratio = sequential seconds / the method's seconds (> 1: DEER wins).
 * ---------------------------------------------------------------------- */
static int g_b1 = 0;
typedef struct b1case {
    prn_context *ctx;
    prn_rnn *rnn;
    prn_tensor *x, *y;
    int method; /* 0 seq, 1 deer, 2 quasi */
    int iterations;
} b1case;
static int b1_run(b1case *c) {
    prn_context *ctx = c->ctx;
    prn_deer_options o;
    prn_deer_stats ds;
    prn_tensor *y = NULL;
    int rc = 1;
    prn_no_grad_begin(c->ctx);
    memset(&o, 0, sizeof o);
    o.mode = c->method == 2 ? PRN_JACOBIAN_DIAG : PRN_JACOBIAN_DENSE;
    if (c->method) {
        CHECK(prn_deer_rnn(c->ctx, c->rnn, c->x, NULL, &o, &y, NULL, &ds));
        c->iterations = ds.iterations;
    } else {
        CHECK(prn_rnn_forward(c->ctx, c->rnn, c->x, NULL, &y, NULL));
    }
    prn_tensor_free(c->y);
    c->y = y;
    y = NULL;
    rc = 0;
fail:
    prn_no_grad_end(c->ctx);
    prn_tensor_free(y);
    return rc;
}
static int b1_section(prn_context *ctx, int threads) {
    static const size_t ns[2] = {1, 2}, Ts[2] = {100000, 1000000};
    static const char *const names[3] = {"seq", "deer", "quasi"};
    size_t ni, ti, xs[3];
    int m, r, rc = 1;
    printf("\nB = 1 (one sequence), parrnn alone: sequential against DEER and quasi-DEER (forward)\n");
    printf("    n        T         seq        deer (it)      quasi (it)   seq/deer  seq/quasi  max|y-y_seq|\n");
    for (ni = 0; ni < 2; ++ni)
        for (ti = 0; ti < 2; ++ti) {
            b1case c;
            prn_rnn_config rc_;
            double best[3] = {1e30, 1e30, 1e30}, dev = 0;
            int it[3] = {0, 0, 0};
            float *ys = NULL, *yd = NULL;
            size_t n = ns[ni], T = Ts[ti], k;
            if (T > g_max_T * 10) continue;
            memset(&c, 0, sizeof c);
            memset(&rc_, 0, sizeof rc_);
            c.ctx = ctx;
            rc_.kind = PRN_RNN_GRU; rc_.dtype = PRN_F32; rc_.input_size = n; rc_.hidden_size = n; rc_.num_layers = 1;
            prn_seed(ctx, 1234 + n);
            CHECK(prn_rnn_create(ctx, &rc_, &c.rnn));
            xs[0] = 1; xs[1] = T; xs[2] = n;
            CHECK(prn_tensor_normal(ctx, PRN_F32, 3, xs, 0.0, 1.0, &c.x));
            ys = (float *)xmalloc(T * n * sizeof *ys);
            yd = (float *)xmalloc(T * n * sizeof *yd);
            for (r = 0; r < g_rounds; ++r)
                for (m = 0; m < 3; ++m) {
                    double t0 = now(), el;
                    long calls = 0;
                    c.method = m;
                    do {
                        if (b1_run(&c)) goto fail;
                        ++calls;
                        el = now() - t0;
                    } while (el < g_min_sample);
                    if (el / (double)calls < best[m]) best[m] = el / (double)calls;
                    it[m] = m ? c.iterations : 0;
                    if (r == 0) {
                        CHECK(prn_tensor_download(c.y, m ? yd : ys, T * n));
                        if (m)
                            for (k = 0; k < T * n; ++k) {
                                double e = fabs((double)yd[k] - (double)ys[k]);
                                if (e > dev) dev = e;
                            }
                    }
                }
            printf("  %3lu  %7lu  %9.2f ms  %9.2f ms (%d)  %9.2f ms (%d)  %8.2f  %9.2f  %.2g\n", (unsigned long)n,
                   (unsigned long)T, 1e3 * best[0], 1e3 * best[1], it[1], 1e3 * best[2], it[2], best[0] / best[1],
                   best[0] / best[2], dev);
            for (m = 0; m < 3; ++m)
                printf("BENCH name=gru_b1 backend=parrnn n=%lu T=%lu B=1 method=%s threads=%d seconds=%.6g "
                       "seq_over_this=%.4g iterations=%d\n", (unsigned long)n, (unsigned long)T, names[m], threads, best[m],
                       best[0] / best[m], it[m]);
            fflush(stdout);
            free(ys); free(yd);
            prn_tensor_free(c.y); prn_tensor_free(c.x); prn_rnn_free(c.rnn);
            continue;
        fail:
            free(ys); free(yd);
            prn_tensor_free(c.y); prn_tensor_free(c.x); prn_rnn_free(c.rnn);
            return rc;
        }
    return 0;
}

static int usage(void) {
    fprintf(stderr, "usage: bench_jax [--quick] [--threads N] [--min-n N] [--max-n N] [--min-T T] [--max-T T] [--rounds R]\n"
                    "                 [--mem-gb G] [--time-budget S] [--python PATH] [--script PATH] [--b1 | --b1-only]\n");
    return 2;
}

int main(int argc, char **argv) {
    char *args[64], model[256], why[600], dir[512];
    const char *tmp = getenv("TMPDIR");
    int nargs = 0, i, ni, ti, have_jax, threads, rc = 1;
    double t_start = now();
    prn_config cfg;
    prn_context *ctx = NULL;
    char err[512];
    cpu_sample run_start;
    bench_prog = "bench_jax";
    (void)probe_triad;
    (void)bench_device_context;
    (void)time_best;
    signal(SIGPIPE, SIG_IGN); /* a dead child: a failed write, not a dead benchmark */

    args[nargs++] = argv[0];
    for (i = 1; i < argc; ++i) {
        char *end = NULL;
        if (i + 1 < argc && strcmp(argv[i], "--max-n") == 0) g_max_n = (size_t)strtod(argv[++i], &end);
        else if (i + 1 < argc && strcmp(argv[i], "--min-n") == 0) g_min_n = (size_t)strtod(argv[++i], &end);
        else if (i + 1 < argc && strcmp(argv[i], "--min-T") == 0) g_min_T = (size_t)strtod(argv[++i], &end);
        else if (i + 1 < argc && strcmp(argv[i], "--max-T") == 0) g_max_T = (size_t)strtod(argv[++i], &end);
        else if (i + 1 < argc && strcmp(argv[i], "--rounds") == 0) g_rounds = (int)strtol(argv[++i], &end, 10);
        else if (i + 1 < argc && strcmp(argv[i], "--mem-gb") == 0) g_mem_budget = 1e9 * strtod(argv[++i], &end);
        else if (i + 1 < argc && strcmp(argv[i], "--time-budget") == 0) g_time_budget = strtod(argv[++i], &end);
        else if (i + 1 < argc && strcmp(argv[i], "--python") == 0) g_python = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--script") == 0) g_script = argv[++i];
        else if (strcmp(argv[i], "--b1") == 0) g_b1 = 1;
        else if (strcmp(argv[i], "--b1-only") == 0) g_b1 = 2;
        else if (nargs < 63) args[nargs++] = argv[i];
        else return usage();
        if (end && *end) return usage();
    }
    args[nargs] = NULL;
    if (bench_parse_args(nargs, args) || g_rounds < 1 || g_max_n < 1 || g_max_T < 1) return usage();
    threads = g_threads;
#if defined(PARRNN_USE_CBLAS) && defined(OPENBLAS_VERSION)
    openblas_set_num_threads(threads);
#endif
    if (g_quick) {
        g_Ts[0] = 100;
        g_Ts[1] = 0;
        g_max_n = 1;
        g_rounds = 1;
        g_min_sample = 0.01;
    }
    if (g_mem_budget <= 0.0) g_mem_budget = 0.5 * physical_memory();
    if (g_mem_budget <= 0.0) g_mem_budget = 4e9;

    cpu_model(model, sizeof model);
    printf("bench_jax: parrnn %s against JAX, %s mode\n", PARRNN_VERSION_STRING, g_quick ? "quick" : "full");
    printf("  cpu:       %s\n", model);
    bench_print_threads("", threads, "", "");
    bench_print_compiler();
    bench_print_cblas();
    printf("  budgets:   DEER memory %.1f GB (--mem-gb), %g s per call (--time-budget); %d round%s\n", g_mem_budget / 1e9,
           g_time_budget, g_rounds, g_rounds == 1 ? "" : "s");
    have_jax = !jax_start(why, sizeof why);
    if (have_jax) printf("  jax:       %s (%s %s)\n", g_jax_version, g_python, g_script);
    else printf("  jax:       skipped: %s -- parrnn's side only (pip install jax)\n", why);
    snprintf(dir, sizeof dir, "%s/bench_jax.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (have_jax && !mkdtemp(dir)) {
        printf("  jax:       skipped: cannot make a directory under %s\n", tmp && *tmp ? tmp : "/tmp");
        jax_stop();
        have_jax = 0;
    }
    bench_report_idle();
    run_start = cpu_sample_now();

    memset(&cfg, 0, sizeof cfg);
    cfg.backend = "reference";
    cfg.seed = 1234;
    cfg.num_threads = threads;
    if (prn_context_create(&cfg, &ctx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "%s: prn_context_create: %s\n", bench_prog, err);
        goto done;
    }
    for (ni = 0; ni < NUM_N && g_b1 < 2; ++ni)
        for (ti = 0; ti < NUM_T; ++ti) {
            if (g_ns[ni] > g_max_n || g_ns[ni] < g_min_n || !g_Ts[ti] || g_Ts[ti] > g_max_T || g_Ts[ti] < g_min_T) continue;
            printf("  n=%lu T=%lu ...\n", (unsigned long)g_ns[ni], (unsigned long)g_Ts[ti]);
            fflush(stdout);
            if (run_case(ctx, ni, ti, have_jax, dir)) goto done;
        }
    if (g_b1 < 2) {
        print_background("during the measurements", cpu_background(run_start, cpu_sample_now()));
        print_table(have_jax);
        print_bench_lines(threads);
    }
    if (g_b1 && b1_section(ctx, threads)) goto done;
    printf("\nbench_jax: done in %.1f s\n", now() - t_start);
    rc = 0;
done:
    prn_context_free(ctx);
    jax_stop();
    if (have_jax) { /* the exchange files */
        static const char *const names[] = {"w_ih", "w_hh", "b_ih", "b_hh", "x", "y_seq", "y_deer", "g_seq", "g_deer"};
        char path[1200];
        for (i = 0; i < 9; ++i) {
            snprintf(path, sizeof path, "%s/%s.f32", dir, names[i]);
            remove(path);
        }
        rmdir(dir);
    }
    return rc;
}
