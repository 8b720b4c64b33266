/* bench_rnn.c - throughput of parrnn's GRU and LSTM (prn_rnn), beside
 * PyTorch's nn.GRU / nn.LSTM on the CPU at the same thread count.
 *
 * Shapes: batch B = 1, 16 and 64, input I = 64, hidden H = 64, 128, 256
 * and 512, T = 1000 steps, f32, one layer, one direction, no readout (the
 * input projection and the recurrence both counted, on both sides). Modes:
 *   fwd      prn_rnn_forward inside prn_no_grad_begin/end (nothing recorded)
 *   fwdbwd   prn_rnn_forward recorded on the tape, loss = sum(y * R) with R
 *            a fixed random tensor shaped like y, prn_backward, then
 *            prn_tape_clear and every parameter's gradient zeroed
 *            (x needs no gradient, as in the PyTorch script)
 * Each measurement: one warm-up call, then a few timed calls (5; 3 with
 * --quick), CLOCK_MONOTONIC; seconds = the best call (median shown in the
 * table); tokens/s = B * T / seconds. For fwdbwd the table also splits the
 * best call into its forward (prn_rnn_forward + loss) and backward
 * (prn_backward + zeroing) parts. --rounds R repeats every measurement R
 * times and keeps each one's best.
 *
 * PyTorch: bench/bench_rnn_torch.py runs the same shapes and modes
 * (batch_first, float32, torch.set_num_threads(N), forward under
 * torch.no_grad(), the same loss). It runs for the whole program in its
 * --serve mode, on pipes: each line of the grid is measured by parrnn and
 * then by PyTorch (PyTorch first in odd rounds), 20 ms apart, so that the
 * two figures of a line see the same state of the machine (a shared host's
 * load changes within minutes, and a round of the grid takes several). It
 * is run by
 *   1. current PyTorch (the primary, the ratios and the TARGET): the
 *      interpreter --torch-python PATH, else $PARRNN_PYTHON, else
 *      /work/venv-torch/bin/python or ~/venv-torch/bin/python (a venv with
 *      the PyPI CPU wheel, see bench/README.md), when it imports torch;
 *   2. Debian's python3-torch (1.13) through /usr/bin/python3, labelled
 *      torch-fallback: measured too when present, its ratios printed
 *      beside; the primary when no venv has torch.
 * Without either the program says how to install torch and the lines carry
 * no vs_torch.
 *
 * GFLOP/s: the products' flops of a call (call_flops) over its seconds,
 * held against this machine's f32 FMA peak, measured in the same run
 * (bench/fma_peak.h) before and after the rounds.
 *
 * Output: a table for people, then one line per measurement (one line each):
 *   BENCH name=rnn_<gru|lstm>_<fwd|fwdbwd> backend=<b> hidden=<H> batch=<B>
 *         input=64 T=<T> threads=<n> seconds=<s> tokens_per_s=<v>
 *         gflops_per_s=<v> [of_fma_peak=<share>]
 *         [vs_torch=<parrnn tokens/s / PyTorch tokens/s> torch_version=<v>]
 * and the same for PyTorch with backend=torch or torch-fallback and its
 * torch_version (see bench/README.md); for a line below its target,
 * BENCH name=rnn_<kind>_<mode>_target ... seconds=<what the target asks>
 * gflops_per_s=<v> of_fma_peak=<share>; and BENCH name=fma_peak.
 * TARGET (issue 28): vs_torch >= 1.2 for lstm fwd, >= 1.5 for every other
 * line, against PyTorch 2.x.
 *
 * Usage: bench_rnn [--quick] [--no-torch] [--threads N] [--backend NAME]
 *                  [--rounds R] [--torch-python PATH] [--hidden H,...]
 *                  [--batch B,...] [--kinds gru,lstm] [--modes fwd,fwdbwd]
 *   --quick      T = 100, 3 timed calls: a CI smoke run of a few seconds
 *   --threads N  prn_config.num_threads, OpenMP, OpenBLAS and torch
 *                (default: what OpenMP offers, as the library uses)
 *   --backend B  the parrnn backend to measure (default "reference")
 *   --hidden, --batch  a subset of the shapes (e.g. --hidden 128,256)
 *   --kinds, --modes   a subset of the lines (e.g. --kinds lstm --modes fwd),
 *                      PyTorch measured for the same subset
 *   --no-torch-fallback  Debian's PyTorch not measured beside a current one
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, popen under -std=c99 */

#include "parrnn.h"
#include "bench_common.h"
#include "fma_peak.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <sys/types.h>
#include <sys/wait.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define RNN_INPUT 64
#define RNN_T_FULL 1000
#define RNN_T_QUICK 100
#define RNN_MAX_PARAMS 8

static const prn_rnn_kind g_kinds[2] = {PRN_RNN_GRU, PRN_RNN_LSTM};
#define NH 4
#define NB 3
static const size_t g_hidden[NH] = {64, 128, 256, 512};
static const size_t g_batch[NB] = {1, 16, 64};
static const char *const g_modes[2] = {"fwd", "fwdbwd"};
/* the TARGET of each line (issue 28): LSTM forward 1.2x current PyTorch,
 * every other line 1.5x */
static double target_ratio(int k, int mode) { return g_kinds[k] == PRN_RNN_LSTM && mode == 0 ? 1.2 : 1.5; }

/* One measurement (parrnn or torch). */
typedef struct measurement {
    int kind;      /* index into g_kinds  */
    int hidden;    /* index into g_hidden */
    int batch;     /* index into g_batch  */
    int mode;      /* index into g_modes  */
    double best, median;
    double fwd_part, bwd_part; /* fwdbwd on parrnn: the parts of the best call */
    int have;
} measurement;

/* PyTorch installations: [0] the primary (current PyTorch, normally the
 * PyPI wheel in a venv), [1] the labelled fallback (Debian's python3-torch
 * through /usr/bin/python3), measured too when it is a different one. */
#define NTORCH 2
typedef struct torch_run {
    char python[512];
    char label[32];   /* "pypi" / "fallback" */
    char version[64];
    int threads;
    int have;         /* measurements read */
    measurement m[2][NH][NB][2];
    pid_t pid;        /* the script in --serve mode (0: not running) */
    FILE *to, *from;  /* its stdin and stdout */
} torch_run;

static measurement g_prn[2][NH][NB][2];
static torch_run g_torch[NTORCH];
static size_t g_T = RNN_T_FULL;
static int g_timed = 5;
static int g_rounds = 1;
static int g_no_torch = 0;
static int g_no_fallback = 0; /* --no-torch-fallback */
static const char *g_backend = "reference";
static const char *g_torch_python = NULL; /* --torch-python */
static int g_hmask = (1 << NH) - 1, g_bmask = (1 << NB) - 1; /* --hidden / --batch subsets */
static int g_kmask = 3, g_mmask = 3; /* --kinds / --modes subsets */

/* ------------------------------------------------------------------------
 * parrnn side
 * ---------------------------------------------------------------------- */
#define CHECK(call) BENCH_CHECK(call)

typedef struct rnn_case {
    prn_context *ctx;
    prn_rnn *rnn;
    prn_tensor *x, *R;
    prn_tensor *params[RNN_MAX_PARAMS];
    int num_params;
    double t_fwd, t_bwd; /* parts of the last fwdbwd call */
    double check;        /* last loss / output sum, to keep results alive */
} rnn_case;

static int run_fwd(rnn_case *c) {
    prn_context *ctx = c->ctx;
    prn_tensor *y = NULL;
    double v = 0.0;
    int rc = 1;
    prn_no_grad_begin(ctx);
    CHECK(prn_rnn_forward(ctx, c->rnn, c->x, NULL, &y, NULL));
    /* One element read back: the work is done (device backends queue). */
    CHECK(prn_tensor_item(y, &v));
    c->check = v;
    rc = 0;
fail:
    prn_no_grad_end(ctx);
    prn_tensor_free(y);
    return rc;
}

static int run_fwdbwd(rnn_case *c) {
    prn_context *ctx = c->ctx;
    prn_tensor *y = NULL, *p = NULL, *loss = NULL;
    double t0 = now(), t1, v = 0.0;
    int i, rc = 1;
    CHECK(prn_rnn_forward(ctx, c->rnn, c->x, NULL, &y, NULL));
    CHECK(prn_mul(ctx, y, c->R, &p));
    CHECK(prn_sum(ctx, p, PRN_ALL_AXES, 0, &loss));
    CHECK(prn_tensor_item(loss, &v));
    t1 = now();
    CHECK(prn_backward(ctx, loss));
    for (i = 0; i < c->num_params; ++i) {
        prn_tensor *g = prn_tensor_grad(c->params[i]);
        if (!g) {
            fprintf(stderr, "%s: parameter %s has no gradient after prn_backward\n", bench_prog,
                    prn_rnn_param_name(c->rnn, i));
            goto fail;
        }
        if (i == 0) { /* waits for the gradients (device backends queue work) */
            double g0;
            CHECK(prn_tensor_item(g, &g0));
            if (!isfinite(g0)) v = g0; /* reported by the warm-up check */
        }
    }
    prn_tape_clear(ctx);
    for (i = 0; i < c->num_params; ++i) prn_tensor_zero_grad(c->params[i]);
    c->t_fwd = t1 - t0;
    c->t_bwd = now() - t1;
    c->check = v;
    rc = 0;
fail:
    if (rc) prn_tape_clear(ctx);
    prn_tensor_free(loss);
    prn_tensor_free(p);
    prn_tensor_free(y);
    return rc;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Warm-up, then g_timed calls: best and median into m. */
/* Warm-up, then g_timed calls: best and median into m; a later round keeps
 * the better best (and its median and parts). */
static int measure_prn(rnn_case *c, int mode, measurement *m) {
    double times[16], fwd_best = 0.0, bwd_best = 0.0, t, best = 0.0;
    int r;
    if ((mode ? run_fwdbwd(c) : run_fwd(c)) != 0) return 1; /* warm-up */
    if (!isfinite(c->check)) {
        fprintf(stderr, "%s: the warm-up call gave a non-finite value (%g)\n", bench_prog, c->check);
        return 1;
    }
    for (r = 0; r < g_timed && r < 16; ++r) {
        t = now();
        if ((mode ? run_fwdbwd(c) : run_fwd(c)) != 0) return 1;
        times[r] = now() - t;
        if (r == 0 || times[r] < best) {
            best = times[r];
            fwd_best = c->t_fwd;
            bwd_best = c->t_bwd;
        }
    }
    if (m->have && m->best <= best) return 0;
    qsort(times, (size_t)r, sizeof times[0], cmp_double);
    m->best = best;
    m->median = r % 2 ? times[r / 2] : 0.5 * (times[r / 2 - 1] + times[r / 2]);
    m->fwd_part = mode ? fwd_best : m->best;
    m->bwd_part = mode ? bwd_best : 0.0;
    m->have = 1;
    return 0;
}

static double tokens(const measurement *m) { return (double)g_batch[m->batch] * (double)g_T / m->best; }

/* The products' flops of a call, the same for both libraries: forward
 * 2 B T G H (I + H) (input projection and recurrence; G = 4 gates LSTM,
 * 3 GRU); fwdbwd adds the backward's d h = dq W_hh (2 B T G H H) and the
 * weight gradients dW_hh, dW_ih (2 B T G H (H + I)); x needs no gradient.
 * The gates' exponentials and the loss are not counted: GFLOP/s here is a
 * lower bound of the arithmetic rate, to hold against the FMA peak. */
static double call_flops(const measurement *m) {
    const double B = (double)g_batch[m->batch], T = (double)g_T, H = (double)g_hidden[m->hidden], NI = RNN_INPUT;
    const double G = g_kinds[m->kind] == PRN_RNN_LSTM ? 4.0 : 3.0;
    return 2.0 * B * T * G * H * (m->mode ? 2.0 * NI + 3.0 * H : NI + H);
}
static double gflops(const measurement *m) { return call_flops(m) / m->best * 1e-9; }
/* parrnn's ratio to PyTorch (r) over the line's target: below 1, the line
 * misses it; and the rate the target asks parrnn for */
static double of_target(const measurement *m, const measurement *r) {
    return r->best / m->best / target_ratio(m->kind, m->mode);
}
static double target_gflops(const measurement *r) { return gflops(r) * target_ratio(r->kind, r->mode); }
/* this machine's f32 FMA peak on the benchmark's threads (bench/fma_peak.h),
 * measured before the rounds and after them: the better of the two (a
 * shared host's load lowers it for a while) */
static double g_peak = 0.0;
static const char *g_peak_isa = "none";
static double peak_now(int threads) {
    const double p = fma_peak_best(threads, 3, FMA_PEAK_ITERS, &g_peak_isa);
    if (p > g_peak) g_peak = p;
    return p;
}

static void print_row(const char *backend, const measurement *m, const measurement *ref, const measurement *ref2) {
    char split[48] = "", ratio[40] = "";
    if (m->bwd_part > 0.0) snprintf(split, sizeof split, "%7.3f + %7.3f", m->fwd_part, m->bwd_part);
    if (ref && ref->have) snprintf(ratio, sizeof ratio, "%6.2fx", ref->best / m->best);
    if (ref2 && ref2->have)
        snprintf(ratio + strlen(ratio), sizeof ratio - strlen(ratio), "  %6.2fx", ref2->best / m->best);
    printf("  %-5s %-7s %4lu %3lu  %-16s %9.4f %9.4f %12.0f %8.1f  %-17s %s\n", prn_rnn_kind_name(g_kinds[m->kind]),
           g_modes[m->mode], (unsigned long)g_hidden[m->hidden], (unsigned long)g_batch[m->batch], backend, m->best,
           m->median, tokens(m), gflops(m), split, ratio);
    fflush(stdout);
}

static int torch_measure(torch_run *tr, int k, int h, int bi, int mode);

/* Waits 20 ms: the side that just ran (parrnn's OpenMP team, or PyTorch's)
 * may spin a little before its threads sleep; the other side's warm-up
 * call should not share the cores with that. */
static void settle(void) {
    struct timespec ts = {0, 20000000L};
    nanosleep(&ts, NULL);
}

/* One round: for each line, parrnn's measurement and each PyTorch's, one
 * right after the other (parrnn first in even rounds, last in odd ones),
 * so that a line's two figures see the same state of the machine. */
static int bench_round(int threads, int round, int ntorch) {
    prn_config cfg;
    prn_context *ctx = NULL;
    char err[512];
    rnn_case c;
    int k, h, bi, mode, i, side, rc = 1;
    size_t live0;
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
    printf("\nround %d of %d: backend %s, prn_context_num_threads = %d (I = %d, T = %lu, f32; best of %d "
           "calls after a warm-up)%s\n",
           round + 1, g_rounds, prn_context_backend_name(ctx), prn_context_num_threads(ctx), RNN_INPUT,
           (unsigned long)g_T, g_timed, ntorch ? (round % 2 ? "; PyTorch first" : "; parrnn first") : "");
    printf("  %-5s %-7s %4s %3s  %-16s %9s %9s %12s %8s  %-17s\n", "kind", "mode", "H", "B", "backend", "best s",
           "median s", "tokens/s", "GFLOP/s", "fwd + bwd s");
    for (k = 0; k < 2; ++k)
        for (h = 0; h < NH; ++h)
            for (bi = 0; bi < NB; ++bi) {
                prn_rnn_config rc_cfg;
                size_t xs[3], ys[3];
                if (!(g_hmask >> h & 1) || !(g_bmask >> bi & 1) || !(g_kmask >> k & 1)) continue;
                live0 = prn_live_tensors(ctx);
                memset(&rc_cfg, 0, sizeof rc_cfg);
                rc_cfg.kind = g_kinds[k];
                rc_cfg.dtype = PRN_F32;
                rc_cfg.input_size = RNN_INPUT;
                rc_cfg.hidden_size = g_hidden[h];
                rc_cfg.num_layers = 1;
                CHECK(prn_rnn_create(ctx, &rc_cfg, &c.rnn));
                c.num_params = prn_rnn_params(c.rnn, c.params, RNN_MAX_PARAMS);
                if (c.num_params != 4) {
                    fprintf(stderr, "%s: expected 4 parameters, prn_rnn_params says %d\n", bench_prog, c.num_params);
                    goto fail;
                }
                if (prn_rnn_output_size(c.rnn) != g_hidden[h]) {
                    fprintf(stderr, "%s: prn_rnn_output_size is %lu, expected %lu\n", bench_prog,
                            (unsigned long)prn_rnn_output_size(c.rnn), (unsigned long)g_hidden[h]);
                    goto fail;
                }
                xs[0] = g_batch[bi]; xs[1] = g_T; xs[2] = RNN_INPUT;
                ys[0] = g_batch[bi]; ys[1] = g_T; ys[2] = g_hidden[h];
                CHECK(prn_tensor_normal(ctx, PRN_F32, 3, xs, 0.0, 1.0, &c.x));
                CHECK(prn_tensor_normal(ctx, PRN_F32, 3, ys, 0.0, 1.0, &c.R));
                for (mode = 0; mode < 2; ++mode) {
                    measurement *m = &g_prn[k][h][bi][mode];
                    if (!(g_mmask >> mode & 1)) continue;
                    m->kind = k; m->hidden = h; m->batch = bi; m->mode = mode;
                    for (side = 0; side < 2; ++side) {
                        if (side == round % 2) { /* parrnn's turn */
                            if (measure_prn(&c, mode, m)) goto fail;
                            print_row(g_backend, m, NULL, NULL);
                        } else {
                            for (i = 0; i < ntorch; ++i) torch_measure(&g_torch[i], k, h, bi, mode);
                        }
                        if (ntorch) settle();
                    }
                }
                prn_tensor_free(c.x); c.x = NULL;
                prn_tensor_free(c.R); c.R = NULL;
                prn_rnn_free(c.rnn); c.rnn = NULL;
                if (prn_live_tensors(ctx) != live0) /* reported, not fatal: the timings still stand */
                    printf("  warning:   %lu tensors still alive after the %s H=%lu B=%lu case (%d calls): a leak\n",
                           (unsigned long)(prn_live_tensors(ctx) - live0), prn_rnn_kind_name(g_kinds[k]),
                           (unsigned long)g_hidden[h], (unsigned long)g_batch[bi], 2 * (g_timed + 1));
            }
    rc = 0;
fail:
    prn_tensor_free(c.x);
    prn_tensor_free(c.R);
    prn_rnn_free(c.rnn);
    prn_context_free(ctx);
    return rc;
}

/* ------------------------------------------------------------------------
 * PyTorch side
 * ---------------------------------------------------------------------- */
static int file_exists(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    fclose(f);
    return 1;
}

/* bench_rnn_torch.py: next to this source file as compiled (the Makefile
 * compiles bench/bench_rnn.c from the repository root), else next to the
 * program's source seen from the program (build/bench/ -> ../../bench/). */
static int find_torch_script(const char *argv0, char *path, size_t size) {
    const char *env = getenv("PARRNN_TORCH_SCRIPT");
    const char *slash;
    if (env && *env) {
        snprintf(path, size, "%s", env);
        return file_exists(path);
    }
    slash = strrchr(__FILE__, '/');
    if (slash) snprintf(path, size, "%.*s/bench_rnn_torch.py", (int)(slash - __FILE__), __FILE__);
    else snprintf(path, size, "bench_rnn_torch.py");
    if (file_exists(path)) return 1;
    slash = strrchr(argv0, '/');
    if (slash) {
        snprintf(path, size, "%.*s/../../bench/bench_rnn_torch.py", (int)(slash - argv0), argv0);
        if (file_exists(path)) return 1;
    }
    return 0;
}

static int shell_safe(const char *s) { return strchr(s, '\'') == NULL; }

/* `python -c "import torch"` works */
static int has_torch(const char *python) {
    char cmd[700];
    if (!shell_safe(python) || strlen(python) > 500) return 0;
    snprintf(cmd, sizeof cmd, "'%s' -c 'import torch' >/dev/null 2>&1", python);
    return system(cmd) == 0;
}

/* The interpreters to measure: the primary, current PyTorch, from
 * --torch-python, else $PARRNN_PYTHON, else the first of the default venvs
 * (/work/venv-torch, $HOME/venv-torch) that imports torch; then Debian's
 * /usr/bin/python3 as the labelled fallback (also the primary's place when
 * no venv has torch). Returns how many (0-2). */
static int find_torch_pythons(void) {
    const char *home = getenv("HOME"), *env = getenv("PARRNN_PYTHON");
    char cand[3][512];
    int nc = 0, i, n = 0;
    if (g_torch_python && *g_torch_python) snprintf(cand[nc++], sizeof cand[0], "%s", g_torch_python);
    else if (env && *env) snprintf(cand[nc++], sizeof cand[0], "%s", env);
    else {
        snprintf(cand[nc++], sizeof cand[0], "/work/venv-torch/bin/python");
        if (home && *home) snprintf(cand[nc++], sizeof cand[0], "%s/venv-torch/bin/python", home);
    }
    for (i = 0; i < nc && !n; ++i)
        if (has_torch(cand[i])) {
            snprintf(g_torch[n].python, sizeof g_torch[n].python, "%s", cand[i]);
            snprintf(g_torch[n].label, sizeof g_torch[n].label, "torch");
            ++n;
        } else {
            printf("  torch:     %s: no `import torch` there\n", cand[i]);
        }
    if (!(g_no_fallback && n) && has_torch("/usr/bin/python3") && !(n && strcmp(g_torch[0].python, "/usr/bin/python3") == 0)) {
        snprintf(g_torch[n].python, sizeof g_torch[n].python, "/usr/bin/python3");
        snprintf(g_torch[n].label, sizeof g_torch[n].label, n ? "torch-fallback" : "torch-fallback");
        ++n;
    }
    if (!n) {
        printf("  torch:     not measured: no interpreter with torch found\n");
        printf("             install the current CPU wheel in a venv (see bench/README.md):\n"
               "               python3 -m venv /work/venv-torch\n"
               "               /work/venv-torch/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu\n"
               "             (or from PyPI: /work/venv-torch/bin/pip install torch); bench_rnn looks there and in\n"
               "             ~/venv-torch; elsewhere: --torch-python PATH or PARRNN_PYTHON=PATH\n");
    }
    return n;
}

static int lookup_size(size_t v, const size_t *vals, int n) {
    int i;
    for (i = 0; i < n; ++i)
        if (vals[i] == v) return i;
    return -1;
}

/* Starts the script in --serve mode with tr's interpreter, its stdin and
 * stdout on pipes, and reads its TORCH_INFO line. Returns 0 when it runs. */
static int torch_start(const char *argv0, int threads, torch_run *tr) {
    char script[1024], ths[16], Ts[32], ins[16], reps[16], line[512], version[64];
    const char *args[20];
    int to[2], from[2], na = 0, thr;
    pid_t pid;
    if (!find_torch_script(argv0, script, sizeof script)) {
        printf("  torch:     not measured: bench_rnn_torch.py not found (set PARRNN_TORCH_SCRIPT to its path)\n");
        return 1;
    }
    snprintf(ths, sizeof ths, "%d", threads);
    snprintf(Ts, sizeof Ts, "%lu", (unsigned long)g_T);
    snprintf(ins, sizeof ins, "%d", RNN_INPUT);
    snprintf(reps, sizeof reps, "%d", g_timed);
    args[na++] = tr->python; args[na++] = script; args[na++] = "--serve";
    args[na++] = "--threads"; args[na++] = ths; args[na++] = "--T"; args[na++] = Ts;
    args[na++] = "--input"; args[na++] = ins; args[na++] = "--repeats"; args[na++] = reps;
    /* a CUDA backend is compared with PyTorch on the GPU (cuDNN) */
    if (strcmp(g_backend, "cuda") == 0) { args[na++] = "--device"; args[na++] = "cuda"; }
    args[na] = NULL;
    printf("  torch:     %s:", tr->label);
    for (na = 0; args[na]; ++na) printf(" %s", args[na]);
    printf("\n");
    fflush(stdout);
    if (pipe(to) != 0) return 1;
    if (pipe(from) != 0) {
        close(to[0]); close(to[1]);
        return 1;
    }
    /* this side's ends closed in every child (another script's too: one
     * that held this one's stdin open would keep it from ever ending) */
    fcntl(to[1], F_SETFD, FD_CLOEXEC);
    fcntl(from[0], F_SETFD, FD_CLOEXEC);
    pid = fork();
    if (pid < 0) {
        close(to[0]); close(to[1]); close(from[0]); close(from[1]);
        printf("  torch:     not measured: fork failed\n");
        return 1;
    }
    if (pid == 0) { /* the child: the pipes as stdin and stdout, then the script */
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]); close(to[1]); close(from[0]); close(from[1]);
        execvp(tr->python, (char *const *)args);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    tr->pid = pid;
    tr->to = fdopen(to[1], "w");
    tr->from = fdopen(from[0], "r");
    if (!tr->to || !tr->from) return 1;
    while (fgets(line, sizeof line, tr->from))
        if (sscanf(line, "TORCH_INFO version=%63s threads=%d", version, &thr) == 2) {
            snprintf(tr->version, sizeof tr->version, "%s", version);
            tr->threads = thr;
            printf("             torch %s, torch.get_num_threads() = %d\n", version, thr);
            return 0;
        }
    printf("  torch:     %s: the script ended before saying its version\n", tr->python);
    return 1;
}

/* Asks tr's script for one line and reads its answer into tr (a later
 * round keeps the better best); prints its row. Returns 0 on an answer. */
static int torch_measure(torch_run *tr, int k, int h, int bi, int mode) {
    char line[512], lab[96];
    if (!tr->pid || !tr->to || !tr->from) return 1;
    fprintf(tr->to, "%s %s %lu %lu\n", prn_rnn_kind_name(g_kinds[k]), g_modes[mode], (unsigned long)g_hidden[h],
            (unsigned long)g_batch[bi]);
    fflush(tr->to);
    while (fgets(line, sizeof line, tr->from)) {
        char kind[16], md[16];
        int hidden, batch, input, T, thr;
        double seconds, median, tps;
        measurement *m = &tr->m[k][h][bi][mode];
        if (strncmp(line, "TORCH_ERROR", 11) == 0) {
            printf("  torch:     %s", line);
            return 1;
        }
        if (sscanf(line,
                   "TORCH kind=%15s mode=%15s hidden=%d batch=%d input=%d T=%d threads=%d seconds=%lf "
                   "median=%lf tokens_per_s=%lf",
                   kind, md, &hidden, &batch, &input, &T, &thr, &seconds, &median, &tps) != 10)
            continue;
        if (strcmp(kind, prn_rnn_kind_name(g_kinds[k])) != 0 || strcmp(md, g_modes[mode]) != 0 ||
            (size_t)hidden != g_hidden[h] || (size_t)batch != g_batch[bi] || seconds <= 0.0) {
            printf("  torch:     an answer to another question: %s", line);
            return 1;
        }
        m->kind = k; m->hidden = h; m->batch = bi; m->mode = mode;
        if (!m->have || seconds < m->best) {
            m->best = seconds;
            m->median = median;
        }
        m->have = 1;
        tr->have = 1;
        snprintf(lab, sizeof lab, "torch %s", tr->version);
        print_row(lab, m, NULL, NULL);
        return 0;
    }
    printf("  torch:     %s ended (no answer for %s %s H=%lu B=%lu)\n", tr->python, prn_rnn_kind_name(g_kinds[k]),
           g_modes[mode], (unsigned long)g_hidden[h], (unsigned long)g_batch[bi]);
    fclose(tr->to);
    tr->to = NULL;
    return 1;
}

/* Closes the script's stdin (it ends at end of input) and waits for it. */
static void torch_stop(torch_run *tr) {
    int status;
    if (tr->to) fclose(tr->to);
    if (tr->from) fclose(tr->from);
    tr->to = tr->from = NULL;
    if (tr->pid > 0 && waitpid(tr->pid, &status, 0) == tr->pid && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        printf("  torch:     %s ended with status %d\n", tr->python, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    tr->pid = 0;
}

/* CPU seconds of process pid so far (/proc/<pid>/stat: utime and stime,
 * the 14th and 15th fields; 0 where unknown): the PyTorch script's own
 * time is not the machine's background. */
static double proc_cpu_seconds(pid_t pid) {
    char path[64], buf[1024], *p;
    unsigned long ut = 0, st = 0;
    long hz = sysconf(_SC_CLK_TCK);
    size_t n;
    FILE *f;
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    if (pid <= 0 || hz <= 0 || !(f = fopen(path, "r"))) return 0.0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    p = strrchr(buf, ')'); /* after the command's name, which may hold spaces */
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return 0.0;
    return (double)(ut + st) / (double)hz;
}

/* ------------------------------------------------------------------------
 * Report
 * ---------------------------------------------------------------------- */
static void print_bench_line(const char *backend, const measurement *m, int threads, const torch_run *ref,
                             const char *extra) {
    const measurement *r = ref ? &ref->m[m->kind][m->hidden][m->batch][m->mode] : NULL;
    printf("BENCH name=rnn_%s_%s backend=%s hidden=%lu batch=%lu input=%d T=%lu threads=%d seconds=%.6g "
           "tokens_per_s=%.6g",
           prn_rnn_kind_name(g_kinds[m->kind]), g_modes[m->mode], backend, (unsigned long)g_hidden[m->hidden],
           (unsigned long)g_batch[m->batch], RNN_INPUT, (unsigned long)g_T, threads, m->best, tokens(m));
    printf(" gflops_per_s=%.4g", gflops(m));
    if (g_peak > 0.0) printf(" of_fma_peak=%.3f", gflops(m) / g_peak);
    if (r && r->have) printf(" vs_torch=%.4g torch_version=%s", tokens(m) / tokens(r), ref->version);
    if (extra) printf("%s", extra);
    printf("\n");
}

static int usage(void) {
    fprintf(stderr, "usage: bench_rnn [--quick] [--no-torch] [--threads N] [--backend NAME] [--rounds R]\n"
                    "                 [--torch-python PATH] [--no-torch-fallback] [--hidden H,...] [--batch B,...]\n"
                    "                 [--kinds gru,lstm] [--modes fwd,fwdbwd]\n");
    return 2;
}

/* "64,256" -> bit mask over vals; 0 on an unknown value */
static int parse_mask(const char *s, const size_t *vals, int n) {
    int mask = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        int i = end != s ? lookup_size((size_t)v, vals, n) : -1;
        if (i < 0) return 0;
        mask |= 1 << i;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return 0;
    }
    return mask;
}

/* "gru,lstm" (which 0) or "fwd,fwdbwd" (which 1): a mask over g_kinds /
 * g_modes; 0 for a name not among them */
static int parse_names(const char *s, int which) {
    int mask = 0;
    while (*s) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        int i, found = -1;
        for (i = 0; i < 2; ++i) {
            const char *name = which ? g_modes[i] : prn_rnn_kind_name(g_kinds[i]);
            if (strlen(name) == len && strncmp(name, s, len) == 0) found = i;
        }
        if (found < 0) return 0;
        mask |= 1 << found;
        s = end ? end + 1 : s + len;
    }
    return mask;
}

int main(int argc, char **argv) {
    char *args[64], model[256];
    int nargs = 0, i, k, h, bi, mode, threads, ntorch = 0, round;
    double t_start = now();
    cpu_sample run_start, run_end;
    bench_prog = "bench_rnn";
    /* bench_common.h's batched timer and triad probe are not used: each call
     * here takes 0.01-1 s and is timed on its own, and the RNN is not
     * bandwidth bound. */
    (void)time_best;
    (void)probe_triad;
    (void)bench_device_context;

    /* Take out the options of this program; bench_parse_args does the rest. */
    args[nargs++] = argv[0];
    for (i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--no-torch") == 0) {
            g_no_torch = 1;
        } else if (strcmp(argv[i], "--no-torch-fallback") == 0) {
            g_no_fallback = 1;
        } else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            g_backend = argv[++i];
        } else if (strcmp(argv[i], "--torch-python") == 0 && i + 1 < argc) {
            g_torch_python = argv[++i];
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            g_rounds = atoi(argv[++i]);
            if (g_rounds < 1 || g_rounds > 20) return usage();
        } else if (strcmp(argv[i], "--hidden") == 0 && i + 1 < argc) {
            if (!(g_hmask = parse_mask(argv[++i], g_hidden, NH))) return usage();
        } else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
            if (!(g_bmask = parse_mask(argv[++i], g_batch, NB))) return usage();
        } else if (strcmp(argv[i], "--kinds") == 0 && i + 1 < argc) {
            if (!(g_kmask = parse_names(argv[++i], 0))) return usage();
        } else if (strcmp(argv[i], "--modes") == 0 && i + 1 < argc) {
            if (!(g_mmask = parse_names(argv[++i], 1))) return usage();
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
        g_T = RNN_T_QUICK;
        g_timed = 3;
    }

    cpu_model(model, sizeof model);
    printf("bench_rnn: parrnn %s, %s mode\n", PARRNN_VERSION_STRING, g_quick ? "quick" : "full");
    printf("  cpu:       %s\n", model);
    bench_print_threads("", threads, " and torch.set_num_threads", "; torch.set_num_threads(1)");
    bench_print_compiler();
    bench_print_cblas();
    bench_report_idle();
    if (strncmp(g_backend, "reference", 9) != 0) { /* a device's rate is not the host's FMAs' to judge */
        printf("  fma peak:  not measured (backend %s; the host CPU's peak is for the reference backends)\n", g_backend);
    } else {
        const double p0 = peak_now(threads);
        if (p0 > 0.0)
            printf("  fma peak:  %.1f GFLOP/s (%s, %d threads, bench/fma_peak.h; measured again after the rounds)\n",
                   p0, g_peak_isa, threads);
        else
            printf("  fma peak:  not measured (neither AVX-512 nor AVX2 with FMA): no share of the peak below\n");
    }
    if (g_no_torch) printf("  torch:     not measured (--no-torch)\n");
    else ntorch = find_torch_pythons();
    signal(SIGPIPE, SIG_IGN); /* a script that ended: an error from fprintf, not the end of this program */
    for (i = 0; i < ntorch; ++i)
        if (torch_start(argv[0], threads, &g_torch[i])) {
            torch_stop(&g_torch[i]);
            g_torch[i--] = g_torch[--ntorch]; /* the next in its place */
        }

    /* rounds: each line's parrnn and PyTorch measurements next to each
     * other; each keeps its best */
    for (round = 0; round < g_rounds; ++round) {
        double torch_cpu = 0.0; /* PyTorch's own time in the round is not background */
        run_start = cpu_sample_now();
        for (i = 0; i < ntorch; ++i) torch_cpu -= proc_cpu_seconds(g_torch[i].pid);
        if (bench_round(threads, round, ntorch)) return 1;
        for (i = 0; i < ntorch; ++i) torch_cpu += proc_cpu_seconds(g_torch[i].pid);
        run_end = cpu_sample_now();
        run_end.own += torch_cpu;
        print_background("during the round", cpu_background(run_start, run_end));
    }
    for (i = 0; i < ntorch; ++i) torch_stop(&g_torch[i]);
    if (g_peak > 0.0) {
        const double p0 = g_peak, p1 = peak_now(threads);
        printf("\nfma peak: %.1f GFLOP/s before the rounds, %.1f after; the shares below are of %.1f\n", p0, p1, g_peak);
    }

    if (g_torch[0].have) {
        const torch_run *t0 = &g_torch[0], *t1 = ntorch > 1 && g_torch[1].have ? &g_torch[1] : NULL;
        int met = 0, total = 0;
        double worst = 1e300;
        printf("\nparrnn against PyTorch (tokens/s = B*T / best seconds; ratio = parrnn / torch %s%s%s%s)\n",
               t0->version, t1 ? ", then / torch " : "", t1 ? t1->version : "", t1 ? " (fallback)" : "");
        printf("  %-5s %-7s %4s %3s  %-16s %9s %9s %12s %8s  %-17s %s\n", "kind", "mode", "H", "B", "backend", "best s",
               "median s", "tokens/s", "GFLOP/s", "fwd + bwd s", "vs torch");
        for (k = 0; k < 2; ++k)
            for (h = 0; h < NH; ++h)
                for (bi = 0; bi < NB; ++bi)
                    for (mode = 0; mode < 2; ++mode) {
                        const measurement *m = &g_prn[k][h][bi][mode], *r0 = &t0->m[k][h][bi][mode];
                        char lab[96];
                        if (!m->have) continue;
                        print_row(g_backend, m, r0, t1 ? &t1->m[k][h][bi][mode] : NULL);
                        snprintf(lab, sizeof lab, "torch %s", t0->version);
                        if (r0->have) print_row(lab, r0, NULL, NULL);
                        if (t1 && t1->m[k][h][bi][mode].have) {
                            snprintf(lab, sizeof lab, "torch %s", t1->version);
                            print_row(lab, &t1->m[k][h][bi][mode], NULL, NULL);
                        }
                        if (r0->have) {
                            const double f = of_target(m, r0);
                            ++total;
                            met += f >= 1.0;
                            if (f < worst) worst = f;
                        }
                    }
        printf("  TARGET vs torch %s >= 1.2 (lstm fwd), >= 1.5 (the others): %d of %d measurements meet it "
               "(lowest ratio / target %.2f)\n",
               t0->version, met, total, worst);
        /* what each line below its target would take, in flops: a target
         * that asks for nearly the whole FMA peak is beyond this machine in
         * f32, whatever the kernel (the products alone are counted) */
        if (met < total && g_peak > 0.0) {
            printf("\nlines below the target: GFLOP/s (share of the %.1f GFLOP/s FMA peak) of each, and what the "
                   "target needs\n", g_peak);
            printf("  %-5s %-7s %4s %3s  %7s  %16s  %16s  %16s\n", "kind", "mode", "H", "B", "ratio", "parrnn",
                   "torch", "target needs");
            for (k = 0; k < 2; ++k)
                for (h = 0; h < NH; ++h)
                    for (bi = 0; bi < NB; ++bi)
                        for (mode = 0; mode < 2; ++mode) {
                            const measurement *m = &g_prn[k][h][bi][mode], *r0 = &t0->m[k][h][bi][mode];
                            double need;
                            if (!m->have || !r0->have || of_target(m, r0) >= 1.0) continue;
                            need = target_gflops(r0);
                            printf("  %-5s %-7s %4lu %3lu  %6.2fx  %7.1f (%5.1f%%)  %7.1f (%5.1f%%)  %7.1f (%5.1f%%)\n",
                                   prn_rnn_kind_name(g_kinds[k]), g_modes[mode], (unsigned long)g_hidden[h],
                                   (unsigned long)g_batch[bi], r0->best / m->best, gflops(m), 100.0 * gflops(m) / g_peak,
                                   gflops(r0), 100.0 * gflops(r0) / g_peak, need, 100.0 * need / g_peak);
                        }
        }
    }

    printf("\n");
    for (k = 0; k < 2; ++k)
        for (h = 0; h < NH; ++h)
            for (bi = 0; bi < NB; ++bi)
                for (mode = 0; mode < 2; ++mode) {
                    const measurement *m = &g_prn[k][h][bi][mode];
                    if (!m->have) continue;
                    print_bench_line(g_backend, m, threads, g_torch[0].have ? &g_torch[0] : NULL, NULL);
                    if (g_torch[0].have && g_torch[0].m[k][h][bi][mode].have && g_peak > 0.0) {
                        /* a line below its target: the seconds and the rate the target asks for */
                        const measurement *r0 = &g_torch[0].m[k][h][bi][mode];
                        const double need = target_gflops(r0);
                        if (of_target(m, r0) < 1.0)
                            printf("BENCH name=rnn_%s_%s_target backend=%s hidden=%lu batch=%lu input=%d T=%lu "
                                   "threads=%d seconds=%.6g gflops_per_s=%.4g of_fma_peak=%.3f\n",
                                   prn_rnn_kind_name(g_kinds[k]), g_modes[mode], g_backend, (unsigned long)g_hidden[h],
                                   (unsigned long)g_batch[bi], RNN_INPUT, (unsigned long)g_T, threads,
                                   r0->best / target_ratio(k, mode), need, need / g_peak);
                    }
                    for (i = 0; i < ntorch; ++i)
                        if (g_torch[i].m[k][h][bi][mode].have) {
                            char be[48], extra[96];
                            snprintf(be, sizeof be, "%s", g_torch[i].label);
                            snprintf(extra, sizeof extra, " torch_version=%s", g_torch[i].version);
                            print_bench_line(be, &g_torch[i].m[k][h][bi][mode],
                                             g_torch[i].threads ? g_torch[i].threads : threads, NULL, extra);
                        }
                }
    if (g_peak > 0.0)
        printf("BENCH name=fma_peak backend=cpu isa=%s threads=%d seconds=%.6g gflops_per_s=%.4g\n", g_peak_isa, threads,
               fma_peak_run_flops(!strcmp(g_peak_isa, "avx512"), threads, FMA_PEAK_ITERS) / g_peak * 1e-9,
               g_peak);
    printf("\nbench_rnn: done in %.1f s\n", now() - t_start);
    return 0;
}
