/* deer_demo.c - DEER: nonlinear RNNs evaluated in parallel over time.
 *
 * A recurrent network computes h_t = f(h_{t-1}, x_t): each step needs the
 * one before, so a plain evaluation takes T dependent steps. DEER (Lim et
 * al., 2023) treats the whole trajectory h_1..h_T as the unknown of one
 * equation system, h_t - f(h_{t-1}, x_t) = 0 for every t, and solves it by
 * Newton's method. Each Newton step is a LINEAR recurrence (with the
 * Jacobians J_t = df/dh at the current guess), which a parallel scan
 * evaluates in O(log T) depth; a few iterations usually reach the
 * sequential result to within float rounding.
 *
 * The program has two parts:
 *
 * 1. Evaluation. A GRU and a multi-head GRU (several small independent
 *    GRUs: a block-diagonal Jacobian) run over long sequences (batch 4 x
 *    T = 100000 steps) sequentially (prn_rnn_forward) and by prn_deer_rnn
 *    in each Jacobian mode:
 *      DENSE  DEER: the full Jacobian, Newton's method;
 *      BLOCK  the Jacobian's diagonal blocks (exact for the multi-head GRU,
 *             whose heads do not interact: same iterations, less work);
 *      DIAG   quasi-DEER: the diagonal only (cheapest iterations, more of
 *             them; the fixed point and so the result are the same).
 *    For each it prints the Newton iterations, the largest absolute
 *    deviation from the sequential result, the size of one iteration's
 *    Jacobians and the time.
 *
 * 2. Training. Two identical GRUs (the same seed, so the same initial
 *    weights) learn the same task, one by backpropagation through time
 *    (prn_rnn_forward + prn_backward), the other through DEER
 *    (prn_deer_rnn + prn_backward: its backward pass solves the adjoint
 *    recurrence with one more scan). The task: from a noisy signal, predict
 *    its low-pass filtered version. Each step prints both losses and the
 *    DEER iterations; the DEER model starts each step's Newton iterations
 *    from the previous step's trajectory (prn_deer_options.warm), so later
 *    steps need fewer. The gradients of the first step (identical weights)
 *    are compared too.
 *
 * 3. Where DEER pays, and where not. One sequence (batch 1) through GRUs
 *    of hidden 1 and 2 (T = 10^3 .. 3 10^5) and 8 (to 3 10^4): sequential,
 *    DEER and quasi-DEER timed side by side; the table names the faster at
 *    each size and a line per hidden size says where DEER won on this
 *    machine. The times go to PREFIX.dat with a gnuplot script PREFIX.gp,
 *    and, when gnuplot is installed, to the plot PREFIX.png of time
 *    against T (PREFIX: build/deer_demo_T when run from the repository,
 *    as make demo does, else deer_demo_T; --plot PREFIX chooses).
 *
 * On a CPU with two cores DEER is mostly SLOWER than the sequential loop:
 * it does several times the arithmetic (Jacobians, matrix products, scans)
 * to win depth, which pays off on hardware with thousands of parallel
 * lanes (the DEER paper reports large speed-ups on GPUs). The exception is
 * one long sequence of a tiny network (hidden 1 or 2, T >= 10^4): there
 * the sequential loop is one dependent chain of short steps, while DEER's
 * fused iterations split time into segments that fill the SIMD lanes and
 * both threads, and part 3 shows DEER ahead. From hidden 8 on, and in parts
 * 1 and 2, the sequential loop wins. The program says so in its output
 * rather than hide it; bench/bench_deer.c measures it.
 *
 * Usage:  deer_demo [--quick] [--backend NAME] [--plot PREFIX]
 *   --quick          tiny sizes (a smoke test: a second or two)
 *   --backend NAME   e.g. "reference" or "opencl"; by default the
 *                    PARRNN_BACKEND environment variable, else "reference"
 *   --plot PREFIX    where part 3 writes PREFIX.dat, .gp and .png
 *
 * Exit status: 0 on success; 1 on a parrnn error (the message from
 * prn_last_error is printed), when a DEER evaluation did not converge or
 * differs from the sequential one by more than 1e-3 (neither should
 * happen), or when tensors are still alive at exit (a leak); 2 on bad
 * usage.
 *
 * It takes about 30 s on a 2-core machine that other jobs load (the
 * evaluations about 20 s, the training 1 s, part 3 about 3 s); less when idle.
 *
 * Build and run:  make demo   (or: make build/examples/deer_demo)
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c99 */

#include "parrnn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEED 7
#define LEARNING_RATE 0.01
#define FAIL_DEVIATION 1e-3 /* a DEER result further than this from sequential fails the run */

/* Every parrnn call returns a prn_status; CHECK jumps to the clean-up of
 * the enclosing function on failure, and main prints prn_last_error. */
#define CHECK(call)                                                            \
    do {                                                                       \
        if ((st = (call)) != PRN_OK) goto done;                                \
    } while (0)

/* Problem sizes: the defaults, or tiny ones with --quick. */
typedef struct sizes {
    size_t batch, T, input;      /* part 1: the long sequences               */
    size_t gru_hidden;           /* part 1: the GRU                          */
    size_t mh_hidden, mh_heads;  /* part 1: the multi-head GRU               */
    size_t train_batch, train_T; /* part 2                                   */
    size_t train_hidden;
    int train_steps;
    size_t sweep_T0;             /* part 3: T = T0, 3 T0, 10 T0, ...        */
    int sweep_nT;
} sizes;

/* What the run found, for the summary and the exit status. */
typedef struct findings {
    double worst_deviation;     /* part 1, over every DEER evaluation */
    int not_converged;          /* DEER evaluations that fell back     */
    double min_ratio, max_ratio;/* DEER time / sequential time         */
    double worst_loss_diff;     /* part 2 */
    double grad_diff, grad_scale;
    double deer_step_ms, bptt_step_ms;
} findings;

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *mode_label(prn_jacobian_mode m) {
    return m == PRN_JACOBIAN_DENSE ? "DEER (dense J)" : m == PRN_JACOBIAN_BLOCK ? "DEER (block J)" : "quasi-DEER (diag J)";
}

/* Bytes of one iteration's Jacobians in mode m for N rows of S states
 * (k: the block size): dense N S^2, block N S k, diagonal N S values. */
static double jacobian_bytes(prn_jacobian_mode m, size_t N, size_t S, size_t k) {
    double per_row = m == PRN_JACOBIAN_DENSE ? (double)S * (double)S
                     : m == PRN_JACOBIAN_BLOCK ? (double)S * (double)k : (double)S;
    return (double)N * per_row * sizeof(float);
}

static void format_bytes(double b, char *out, size_t n) {
    if (b >= 1e9) snprintf(out, n, "%.1f GB", b / 1e9);
    else if (b >= 1e6) snprintf(out, n, "%.0f MB", b / 1e6);
    else snprintf(out, n, "%.0f kB", b / 1e3);
}

/* Copies a tensor of f32 values to a new host array (the caller frees it). */
static prn_status to_host(prn_context *ctx, const prn_tensor *t, float **out) {
    size_t n = prn_tensor_numel(t);
    prn_status st;
    float *v = (float *)malloc((n ? n : 1) * sizeof *v);
    if (!v) return prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "deer_demo: out of host memory (%lu floats)", (unsigned long)n);
    st = prn_tensor_download(t, v, n);
    if (st != PRN_OK) { free(v); return st; }
    *out = v;
    return PRN_OK;
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d; /* a NaN would stay visible */
    }
    return m;
}

/* ------------------------------------------------------------------------
 * Part 1: one network over x, sequentially and by DEER in the given modes.
 * Timings include reading back one element, which waits for the backend to
 * finish (backends such as OpenCL queue their work).
 * ---------------------------------------------------------------------- */
static prn_status compare_evaluation(prn_context *ctx, const char *label, const prn_rnn *rnn, prn_tensor *x,
                                     const prn_jacobian_mode *modes, int nmodes, findings *f) {
    prn_tensor *yseq = NULL, *y = NULL;
    float *hseq = NULL, *hdeer = NULL;
    prn_deer_options opt;
    prn_deer_stats stats;
    prn_status st = PRN_OK;
    size_t n, N = prn_tensor_dim(x, 0) * prn_tensor_dim(x, 1), S = prn_rnn_state_size(rnn);
    size_t k = prn_rnn_jacobian_block(rnn);
    double t0, tseq, tdeer, first;
    char mem[32];
    int i;

    prn_no_grad_begin(ctx); /* pure evaluation: record nothing for backward */
    t0 = seconds_now();
    CHECK(prn_rnn_forward(ctx, rnn, x, NULL, &yseq, NULL));
    CHECK(prn_tensor_item(yseq, &first));
    tseq = seconds_now() - t0;
    CHECK(to_host(ctx, yseq, &hseq));
    n = prn_tensor_numel(yseq);
    printf("%-28s %-20s %5s %12s %9s %8.2f s\n", label, "sequential", "-", "-", "-", tseq);

    for (i = 0; i < nmodes; ++i) {
        double dev, ratio;
        memset(&opt, 0, sizeof opt); /* zero fields: the defaults */
        opt.mode = modes[i];
        t0 = seconds_now();
        CHECK(prn_deer_rnn(ctx, rnn, x, NULL, &opt, &y, NULL, &stats));
        CHECK(prn_tensor_item(y, &first));
        tdeer = seconds_now() - t0;
        CHECK(to_host(ctx, y, &hdeer));
        dev = max_abs_diff(hdeer, hseq, n);
        /* a backend with the fused iteration (the reference) makes each
         * row's Jacobian, uses it and drops it: none are stored */
        if (prn_context_backend(ctx)->deer_iterate) snprintf(mem, sizeof mem, "none");
        else format_bytes(jacobian_bytes(modes[i], N, S, k), mem, sizeof mem);
        ratio = tdeer / (tseq > 0 ? tseq : 1e-9);
        if (f->min_ratio == 0 || ratio < f->min_ratio) f->min_ratio = ratio;
        if (ratio > f->max_ratio) f->max_ratio = ratio;
        printf("%-28s %-20s %5d %12.1e %9s %8.2f s  %.1fx %s%s\n", "", mode_label(modes[i]), stats.iterations, dev, mem,
               tdeer, ratio >= 1 ? ratio : 1 / ratio, ratio >= 1 ? "slower" : "faster",
               stats.fell_back ? "  NOT CONVERGED: fell back to sequential" : "");
        if (!(dev <= f->worst_deviation)) f->worst_deviation = dev;
        if (!stats.converged) f->not_converged++;
        free(hdeer); hdeer = NULL;
        prn_tensor_free(y); y = NULL;
    }

done:
    prn_no_grad_end(ctx);
    prn_tensor_free(yseq);
    prn_tensor_free(y);
    free(hseq);
    free(hdeer);
    return st;
}

/* One untimed run of every method on a short sequence first, so that the
 * timings leave out one-time costs (OpenCL compiles its kernels on first
 * use). */
static prn_status warm_up(prn_context *ctx, const prn_rnn *rnn, prn_tensor *xs, const prn_jacobian_mode *modes,
                          int nmodes) {
    prn_tensor *y = NULL;
    prn_deer_options opt;
    prn_status st;
    int i;
    prn_no_grad_begin(ctx);
    CHECK(prn_rnn_forward(ctx, rnn, xs, NULL, &y, NULL));
    for (i = 0; i < nmodes; ++i) {
        prn_tensor_free(y); y = NULL;
        memset(&opt, 0, sizeof opt);
        opt.mode = modes[i];
        CHECK(prn_deer_rnn(ctx, rnn, xs, NULL, &opt, &y, NULL, NULL));
    }
done:
    prn_no_grad_end(ctx);
    prn_tensor_free(y);
    return st;
}

static prn_status part1_evaluation(prn_context *ctx, const sizes *z, findings *f) {
    static const prn_jacobian_mode gru_modes[] = {PRN_JACOBIAN_DENSE, PRN_JACOBIAN_DIAG};
    static const prn_jacobian_mode mh_modes[] = {PRN_JACOBIAN_DENSE, PRN_JACOBIAN_BLOCK, PRN_JACOBIAN_DIAG};
    prn_rnn_config rc;
    prn_rnn *gru = NULL, *mh = NULL;
    prn_tensor *x = NULL, *xs = NULL;
    prn_status st;
    size_t shape[3];
    char label[64];

    printf("\n1. Evaluation: batch %lu x T = %lu steps, %lu inputs, f32\n", (unsigned long)z->batch,
           (unsigned long)z->T, (unsigned long)z->input);
    printf("%-28s %-20s %5s %12s %9s %10s\n", "network", "method", "iters", "max |dev|", "J stored", "time");

    /* Inputs uniform in [-1, 1] from the context's generator. */
    shape[0] = z->batch; shape[1] = z->T; shape[2] = z->input;
    CHECK(prn_tensor_uniform(ctx, PRN_F32, 3, shape, -1.0, 1.0, &x));
    CHECK(prn_slice(ctx, x, 1, 0, 64, &xs)); /* the first 64 steps, for warming up */

    memset(&rc, 0, sizeof rc);
    rc.kind = PRN_RNN_GRU;
    rc.dtype = PRN_F32;
    rc.input_size = z->input;
    rc.hidden_size = z->gru_hidden;
    CHECK(prn_rnn_create(ctx, &rc, &gru));
    CHECK(warm_up(ctx, gru, xs, gru_modes, 2));
    snprintf(label, sizeof label, "GRU, hidden %lu", (unsigned long)z->gru_hidden);
    CHECK(compare_evaluation(ctx, label, gru, x, gru_modes, 2, f));

    rc.kind = PRN_RNN_MHGRU;
    rc.hidden_size = z->mh_hidden;
    rc.num_heads = z->mh_heads;
    CHECK(prn_rnn_create(ctx, &rc, &mh));
    CHECK(warm_up(ctx, mh, xs, mh_modes, 3));
    snprintf(label, sizeof label, "multi-head GRU, %lu x %lu", (unsigned long)z->mh_heads,
             (unsigned long)(z->mh_hidden / z->mh_heads));
    CHECK(compare_evaluation(ctx, label, mh, x, mh_modes, 3, f));

done:
    prn_rnn_free(gru);
    prn_rnn_free(mh);
    prn_tensor_free(x);
    prn_tensor_free(xs);
    return st;
}

/* ------------------------------------------------------------------------
 * Part 2: the same training by BPTT and through DEER.
 *
 * Data: u_t = sin(2 pi t / period_b + phase_b) + 0.7 noise_t per sequence
 * b, and the target v_t = 0.9 v_{t-1} + 0.1 u_t (an exponential moving
 * average: the smooth signal under the noise). The model reads u and must
 * output v: GRU -> readout (one output), mean squared error.
 * ---------------------------------------------------------------------- */
static prn_status make_filter_task(prn_context *ctx, size_t B, size_t T, prn_tensor **x, prn_tensor **target) {
    const double pi = 3.14159265358979323846;
    size_t shape[3], b, t;
    prn_tensor *noise = NULL;
    float *u = NULL, *v = NULL, *e = NULL;
    prn_status st = PRN_OK;
    u = (float *)malloc(B * T * sizeof *u);
    v = (float *)malloc(B * T * sizeof *v);
    e = (float *)malloc(B * T * sizeof *e);
    if (!u || !v || !e) {
        st = prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "deer_demo: out of host memory for the training data");
        goto done;
    }
    shape[0] = B; shape[1] = T; shape[2] = 1;
    CHECK(prn_tensor_normal(ctx, PRN_F32, 3, shape, 0.0, 1.0, &noise));
    CHECK(prn_tensor_download(noise, e, B * T));
    for (b = 0; b < B; ++b) {
        double period = 40.0 + 25.0 * (double)b, phase = 0.9 * (double)b, avg = 0.0;
        for (t = 0; t < T; ++t) {
            double ut = sin(2.0 * pi * (double)t / period + phase) + 0.7 * e[b * T + t];
            avg = 0.9 * avg + 0.1 * ut;
            u[b * T + t] = (float)ut;
            v[b * T + t] = (float)avg;
        }
    }
    CHECK(prn_tensor_from_host(ctx, PRN_F32, 3, shape, u, x));
    CHECK(prn_tensor_from_host(ctx, PRN_F32, 3, shape, v, target));
done:
    prn_tensor_free(noise);
    free(u);
    free(v);
    free(e);
    return st;
}

/* loss = mse(readout(y), target), recorded on the tape, then backward. */
static prn_status loss_and_backward(prn_context *ctx, const prn_rnn *rnn, prn_tensor *y, prn_tensor *target,
                                    double *value) {
    prn_tensor *out = NULL, *loss = NULL;
    prn_status st;
    CHECK(prn_rnn_readout(ctx, rnn, y, &out));
    CHECK(prn_mse(ctx, out, target, &loss));
    CHECK(prn_tensor_item(loss, value));
    CHECK(prn_backward(ctx, loss));
done:
    prn_tensor_free(out);
    prn_tensor_free(loss);
    return st;
}

/* Largest |grad_a - grad_b| over every parameter of two networks of the
 * same configuration, and the largest |grad_a| (the scale). */
static prn_status compare_grads(prn_context *ctx, const prn_rnn *a, const prn_rnn *b, double *diff, double *scale) {
    prn_tensor *pa[16], *pb[16];
    int n = prn_rnn_params(a, pa, 16), i;
    float *ga = NULL, *gb = NULL;
    prn_status st = PRN_OK;
    size_t j, m;
    prn_rnn_params(b, pb, 16);
    *diff = *scale = 0.0;
    for (i = 0; i < n && i < 16; ++i) {
        const prn_tensor *gra = prn_tensor_grad(pa[i]), *grb = prn_tensor_grad(pb[i]);
        if (!gra || !grb) continue;
        CHECK(to_host(ctx, gra, &ga));
        CHECK(to_host(ctx, grb, &gb));
        m = prn_tensor_numel(gra);
        for (j = 0; j < m; ++j)
            if (fabs(ga[j]) > *scale) *scale = fabs(ga[j]);
        {
            double d = max_abs_diff(ga, gb, m);
            if (!(d <= *diff)) *diff = d;
        }
        free(ga); ga = NULL;
        free(gb); gb = NULL;
    }
done:
    free(ga);
    free(gb);
    return st;
}

static prn_status part2_training(prn_context *ctx, const sizes *z, findings *f) {
    prn_rnn_config rc;
    prn_rnn *bptt = NULL, *deer = NULL;
    prn_tensor *x = NULL, *target = NULL, *y = NULL, *warm = NULL;
    prn_tensor *pbptt[16], *pdeer[16];
    prn_optim *opt_bptt = NULL, *opt_deer = NULL;
    prn_adam_config adam;
    prn_deer_options dopt;
    prn_deer_stats stats;
    prn_status st;
    int np, step;
    double lb = 0.0, ld = 0.0, first_loss = 0.0, t0, tb = 0.0, td = 0.0;

    printf("\n2. Training: two identical GRUs (hidden %lu, readout 1), batch %lu x T = %lu, Adam lr %g, %d steps\n",
           (unsigned long)z->train_hidden, (unsigned long)z->train_batch, (unsigned long)z->train_T, LEARNING_RATE,
           z->train_steps);
    printf("   task: read a noisy signal, output its low-pass filtered version (mean squared error)\n");
    printf("   one model learns by backpropagation through time, the other through DEER; the DEER model\n");
    printf("   warm-starts each step's Newton iterations from the previous step's trajectory (opt.warm)\n");

    CHECK(make_filter_task(ctx, z->train_batch, z->train_T, &x, &target));

    /* Identical initial weights: parameters come from the context's
     * generator, so reseeding it before each create gives the same ones. */
    memset(&rc, 0, sizeof rc);
    rc.kind = PRN_RNN_GRU;
    rc.dtype = PRN_F32;
    rc.input_size = 1;
    rc.hidden_size = z->train_hidden;
    rc.output_size = 1;
    prn_seed(ctx, SEED + 1);
    CHECK(prn_rnn_create(ctx, &rc, &bptt));
    prn_seed(ctx, SEED + 1);
    CHECK(prn_rnn_create(ctx, &rc, &deer));

    np = prn_rnn_params(bptt, pbptt, 16);
    prn_rnn_params(deer, pdeer, 16);
    memset(&adam, 0, sizeof adam);
    adam.lr = LEARNING_RATE;
    CHECK(prn_optim_adam_create(ctx, pbptt, np, &adam, &opt_bptt));
    CHECK(prn_optim_adam_create(ctx, pdeer, np, &adam, &opt_deer));

    memset(&dopt, 0, sizeof dopt);
    dopt.mode = PRN_JACOBIAN_DENSE;
    dopt.warm = &warm; /* NULL at first: a cold start; then the last solution */

    printf("%6s %14s %14s %10s %11s\n", "step", "loss (BPTT)", "loss (DEER)", "|diff|", "DEER iters");
    for (step = 1; step <= z->train_steps; ++step) {
        double diff;
        /* backpropagation through time */
        t0 = seconds_now();
        CHECK(prn_rnn_forward(ctx, bptt, x, NULL, &y, NULL));
        CHECK(loss_and_backward(ctx, bptt, y, target, &lb));
        tb += seconds_now() - t0;
        prn_tensor_free(y); y = NULL;

        /* DEER: the forward pass by Newton iterations, the backward pass by
         * the adjoint recurrence (one reverse scan) */
        t0 = seconds_now();
        CHECK(prn_deer_rnn(ctx, deer, x, NULL, &dopt, &y, NULL, &stats));
        CHECK(loss_and_backward(ctx, deer, y, target, &ld));
        td += seconds_now() - t0;
        prn_tensor_free(y); y = NULL;

        if (step == 1) {
            /* Same weights, same data: the gradients must agree. */
            CHECK(compare_grads(ctx, bptt, deer, &f->grad_diff, &f->grad_scale));
            first_loss = lb;
        }
        t0 = seconds_now();
        CHECK(prn_optim_step(opt_bptt));
        prn_optim_zero_grad(opt_bptt);
        tb += seconds_now() - t0;
        t0 = seconds_now();
        CHECK(prn_optim_step(opt_deer));
        prn_optim_zero_grad(opt_deer);
        td += seconds_now() - t0;

        diff = fabs(lb - ld);
        if (!(diff <= f->worst_loss_diff)) f->worst_loss_diff = diff;
        printf("%6d %14.6f %14.6f %10.1e %6d%s%s\n", step, lb, ld, diff, stats.iterations,
               step == 1 ? "  (cold start)" : step == 2 ? "  (warm start from here on)" : "",
               stats.fell_back ? "  NOT CONVERGED: fell back to sequential" : "");
    }
    f->bptt_step_ms = 1000.0 * tb / z->train_steps;
    f->deer_step_ms = 1000.0 * td / z->train_steps;
    printf("loss %.4f -> %.4f (BPTT) and %.4f (DEER); largest loss difference %.1e\n", first_loss, lb, ld,
           f->worst_loss_diff);
    printf("step-1 gradients (same weights): largest difference %.1e, largest gradient %.2g\n", f->grad_diff,
           f->grad_scale);
    printf("time per step (forward + backward + Adam): BPTT %.1f ms, DEER %.1f ms\n", f->bptt_step_ms,
           f->deer_step_ms);

done:
    prn_optim_free(opt_bptt);
    prn_optim_free(opt_deer);
    prn_rnn_free(bptt);
    prn_rnn_free(deer);
    prn_tensor_free(x);
    prn_tensor_free(target);
    prn_tensor_free(y);
    prn_tensor_free(warm); /* the last solution, owned by us */
    return st;
}


/* ------------------------------------------------------------------------
 * Part 3: where DEER pays on this machine, and where not. One sequence
 * (batch 1: no sequences for threads to share; DEER's fused iterations
 * share time segments instead), GRUs of hidden n, T from 10^3 to 3 10^5
 * steps: sequential, DEER and quasi-DEER,
 * best of a few calls each. The table says which is faster at each
 * size; the plot (gnuplot, when installed) shows time against T.
 * ---------------------------------------------------------------------- */
#define SWEEP_NH 3
#define SWEEP_NT 6
typedef struct sweep {
    size_t hidden[SWEEP_NH], T[SWEEP_NT];
    double t[SWEEP_NH][SWEEP_NT][3]; /* seconds: sequential, DEER, quasi-DEER */
    int it[SWEEP_NH][SWEEP_NT][3];   /* Newton iterations (DEER, quasi-DEER) */
    int nT, nTh[SWEEP_NH]; /* sizes of T in all; measured for hidden h */
} sweep;

/* Best seconds of one method (0 sequential, 1 DEER, 2 quasi-DEER) over a
 * few calls (up to 5, until 0.3 s are spent). */
static prn_status time_method(prn_context *ctx, const prn_rnn *rnn, prn_tensor *x, int method, double *best,
                              int *iters) {
    prn_tensor *y = NULL;
    prn_deer_options opt;
    prn_deer_stats stats;
    prn_status st = PRN_OK;
    double first, t0, t, spent = 0.0;
    int r;
    *best = 1e300;
    prn_no_grad_begin(ctx);
    for (r = 0; r < 5 && (r < 1 || spent < 0.3); ++r) {
        t0 = seconds_now();
        if (method == 0) CHECK(prn_rnn_forward(ctx, rnn, x, NULL, &y, NULL));
        else {
            memset(&opt, 0, sizeof opt);
            opt.mode = method == 1 ? PRN_JACOBIAN_DENSE : PRN_JACOBIAN_DIAG;
            CHECK(prn_deer_rnn(ctx, rnn, x, NULL, &opt, &y, NULL, &stats));
            *iters = stats.iterations;
            if (!stats.converged) {
                st = prn_set_error(ctx, PRN_ERR_STATE, "deer_demo: DEER did not converge in the sweep");
                goto done;
            }
        }
        CHECK(prn_tensor_item(y, &first));
        t = seconds_now() - t0;
        spent += t;
        if (t < *best) *best = t;
        prn_tensor_free(y); y = NULL;
    }
done:
    prn_no_grad_end(ctx);
    prn_tensor_free(y);
    return st;
}

/* Writes prefix.dat and prefix.gp, and runs gnuplot on the latter when it
 * is installed (prefix.png). Returns 1 when the PNG was written. */
static int write_plot(const sweep *w, const char *prefix) {
    static const char *names[3] = {"sequential", "DEER", "quasi-DEER"};
    char path[512], cmd[1200];
    FILE *fp;
    int h, i, m;
    snprintf(path, sizeof path, "%s.dat", prefix);
    if (!(fp = fopen(path, "w"))) return 0;
    fprintf(fp, "# deer_demo part 3: seconds per call, batch 1, GRU; columns: T, then sequential, DEER, quasi-DEER\n");
    for (h = 0; h < SWEEP_NH; ++h) {
        fprintf(fp, "# hidden %lu\n", (unsigned long)w->hidden[h]);
        for (i = 0; i < w->nTh[h]; ++i)
            fprintf(fp, "%lu %.6g %.6g %.6g\n", (unsigned long)w->T[i], w->t[h][i][0], w->t[h][i][1], w->t[h][i][2]);
        fprintf(fp, "\n\n");
    }
    fclose(fp);
    snprintf(path, sizeof path, "%s.gp", prefix);
    if (!(fp = fopen(path, "w"))) return 0;
    fprintf(fp, "set terminal pngcairo size 900,600 noenhanced\nset output '%s.png'\n", prefix);
    fprintf(fp, "set title 'parrnn deer_demo: one sequence (batch 1), GRU, f32, best of a few calls'\n");
    fprintf(fp, "set xrange [%g:%g]\n", 0.7 * (double)w->T[0], 1.4 * (double)w->T[w->nT - 1]);
    fprintf(fp, "set logscale xy\nset xlabel 'T (steps)'\nset ylabel 'seconds per call'\nset key left top\nset grid\n");
    fprintf(fp, "plot");
    for (h = 0; h < SWEEP_NH; ++h)
        for (m = 0; m < 3; ++m)
            fprintf(fp, "%s '%s.dat' index %d using 1:%d with linespoints lw 2 dt %d lc %d title '%s, hidden %lu'",
                    h || m ? ", \\\n    " : " ", prefix, h, m + 2, h + 1, m + 1, names[m], (unsigned long)w->hidden[h]);
    fprintf(fp, "\n");
    fclose(fp);
    if (system("gnuplot --version >/dev/null 2>&1") != 0) return 0;
    snprintf(cmd, sizeof cmd, "gnuplot '%s.gp' 2>/dev/null", prefix);
    if (system(cmd) != 0) { /* no cairo terminal: the plain PNG one */
        snprintf(cmd, sizeof cmd, "sed -i 's/pngcairo/png/' '%s.gp' && gnuplot '%s.gp' 2>/dev/null", prefix, prefix);
        if (system(cmd) != 0) return 0;
    }
    snprintf(path, sizeof path, "%s.png", prefix);
    if (!(fp = fopen(path, "rb"))) return 0;
    fclose(fp);
    return 1;
}

static prn_status part3_where(prn_context *ctx, const sizes *z, const char *prefix) {
    static const char *names[3] = {"sequential", "DEER", "quasi-DEER"};
    sweep w;
    prn_rnn_config rc;
    prn_rnn *rnn = NULL;
    prn_tensor *x = NULL, *xt = NULL;
    prn_status st = PRN_OK;
    size_t shape[3];
    int h, i, m, wins = 0, cases = 0;
    double best_ratio = 1e300;
    size_t best_h = 0, best_T = 0;

    memset(&w, 0, sizeof w);
    w.hidden[0] = 1; w.hidden[1] = 2; w.hidden[2] = 8;
    w.nT = z->sweep_nT;
    /* the larger network stops at 3 10^4 steps: its longer calls would
     * take seconds and say nothing the smaller ones' do not */
    w.nTh[0] = w.nTh[1] = w.nT; w.nTh[2] = w.nT > 4 ? 4 : w.nT;
    for (i = 0; i < w.nT; ++i) w.T[i] = z->sweep_T0 * (size_t)(i % 2 ? 3 : 1) * (size_t)pow(10.0, i / 2);
    printf("\n3. Where DEER pays on this machine: one sequence (batch 1), GRU, %lu inputs, f32, %d thread(s);\n"
           "   best of a few calls each; 'faster' names the faster of sequential and the better DEER\n",
           (unsigned long)z->input, prn_context_num_threads(ctx));
    printf("%7s %8s %12s %17s %17s   %s\n", "hidden", "T", "sequential", "DEER (iters)", "quasi-DEER (iters)",
           "faster");
    shape[0] = 1; shape[1] = w.T[w.nT - 1]; shape[2] = z->input;
    CHECK(prn_tensor_uniform(ctx, PRN_F32, 3, shape, -1.0, 1.0, &x));
    memset(&rc, 0, sizeof rc);
    rc.kind = PRN_RNN_GRU;
    rc.input_size = z->input;
    for (h = 0; h < SWEEP_NH; ++h) {
        rc.hidden_size = w.hidden[h];
        CHECK(prn_rnn_create(ctx, &rc, &rnn));
        for (i = 0; i < w.nTh[h]; ++i) {
            double deer_best, ratio;
            CHECK(prn_slice(ctx, x, 1, 0, w.T[i], &xt));
            for (m = 0; m < 3; ++m) CHECK(time_method(ctx, rnn, xt, m, &w.t[h][i][m], &w.it[h][i][m]));
            prn_tensor_free(xt); xt = NULL;
            deer_best = w.t[h][i][1] < w.t[h][i][2] ? w.t[h][i][1] : w.t[h][i][2];
            ratio = deer_best / w.t[h][i][0];
            ++cases;
            if (ratio < 1.0) ++wins;
            if (ratio < best_ratio) { best_ratio = ratio; best_h = w.hidden[h]; best_T = w.T[i]; }
            printf("%7lu %8lu %10.2f ms %9.2f ms (%3d) %9.2f ms (%3d)   %s (%s %.1fx)\n", (unsigned long)w.hidden[h],
                   (unsigned long)w.T[i], 1e3 * w.t[h][i][0], 1e3 * w.t[h][i][1], w.it[h][i][1], 1e3 * w.t[h][i][2],
                   w.it[h][i][2],
                   ratio < 1.0 ? names[w.t[h][i][1] < w.t[h][i][2] ? 1 : 2] : "sequential",
                   ratio < 1.0 ? "by" : "DEER's best takes", ratio < 1.0 ? 1.0 / ratio : ratio);
        }
        prn_rnn_free(rnn); rnn = NULL;
    }
    for (h = 0; h < SWEEP_NH; ++h) { /* per size: from which T on DEER won, and by how much at best */
        int from = -1, hw = 0, k = 0;
        double hb = 0;
        for (i = 0; i < w.nTh[h]; ++i) {
            double r = w.t[h][i][0] / (w.t[h][i][1] < w.t[h][i][2] ? w.t[h][i][1] : w.t[h][i][2]);
            if (r > 1.0) { ++hw; if (from < 0) from = i; if (r > hb) { hb = r; k = i; } }
            else from = -1; /* a later loss: "from" restarts */
        }
        if (!hw) printf("hidden %lu: sequential was faster at every T here.\n", (unsigned long)w.hidden[h]);
        else if (from >= 0)
            printf("hidden %lu: DEER was faster from T = %lu on (%d of %d sizes), at best %.1fx (T %lu).\n",
                   (unsigned long)w.hidden[h], (unsigned long)w.T[from], hw, w.nTh[h], hb, (unsigned long)w.T[k]);
        else
            printf("hidden %lu: DEER was faster at %d of %d sizes but not the longest, at best %.1fx (T %lu).\n",
                   (unsigned long)w.hidden[h], hw, w.nTh[h], hb, (unsigned long)w.T[k]);
    }
    if (wins)
        printf("DEER beat sequential evaluation in %d of %d cases here (at best %.1fx faster: hidden %lu, T %lu).\n",
               wins, cases, 1.0 / best_ratio, (unsigned long)best_h, (unsigned long)best_T);
    else
        printf("DEER beat sequential evaluation in none of these %d cases here: at best it took %.1fx as long\n"
               "(hidden %lu, T %lu). On %d CPU thread(s) its extra arithmetic is not paid back.\n",
               cases, best_ratio, (unsigned long)best_h, (unsigned long)best_T, prn_context_num_threads(ctx));
    if (write_plot(&w, prefix))
        printf("plot of time against T: %s.png (data %s.dat, gnuplot script %s.gp)\n", prefix, prefix, prefix);
    else
        printf("no plot: gnuplot is not installed (or failed); the data is in %s.dat, the script in %s.gp\n"
               "(Debian: apt-get install gnuplot-nox, then: gnuplot %s.gp)\n", prefix, prefix, prefix);
done:
    prn_rnn_free(rnn);
    prn_tensor_free(x);
    prn_tensor_free(xt);
    return st;
}

/* ------------------------------------------------------------------------
 * Command line
 * ---------------------------------------------------------------------- */
static int usage(const char *prog) {
    fprintf(stderr, "usage: %s [--quick] [--backend NAME] [--plot PREFIX]\n", prog);
    return 2;
}

int main(int argc, char **argv) {
    prn_config config;
    prn_context *ctx = NULL;
    prn_status st = PRN_OK;
    sizes z;
    findings f;
    char err[256];
    int i, quick = 0, exit_code = 1;
    double t0 = seconds_now();
    const char *plot = NULL;

    memset(&config, 0, sizeof config);
    for (i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) config.backend = argv[++i];
        else if (strcmp(argv[i], "--plot") == 0 && i + 1 < argc) plot = argv[++i];
        else return usage(argv[0]);
    }

    memset(&z, 0, sizeof z);
    memset(&f, 0, sizeof f);
    z.batch = quick ? 2 : 4;
    z.T = quick ? 2000 : 100000;
    z.input = 4;
    z.gru_hidden = 8;
    z.mh_hidden = 16;
    z.mh_heads = 4;
    z.train_batch = quick ? 2 : 4;
    z.train_T = quick ? 300 : 1000;
    z.train_hidden = 8;
    z.train_steps = quick ? 4 : 25;
    z.sweep_T0 = 1000;
    z.sweep_nT = quick ? 2 : 6;
    if (!plot) { /* build/ when run from the repository (make demo), else here */
        FILE *probe = fopen("build/parrnn.o", "rb");
        plot = probe ? "build/deer_demo_T" : "deer_demo_T";
        if (probe) fclose(probe);
    }

    /* backend NULL: $PARRNN_BACKEND, else "reference" */
    config.seed = SEED;
    if (prn_context_create(&config, &ctx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "deer_demo: %s\n", err);
        return 1;
    }
    printf("DEER (Lim et al., 2023) evaluates a nonlinear RNN over a whole sequence at once: Newton\n"
           "iterations whose linear steps are parallel scans, instead of T dependent steps.\n");
    printf("parrnn %s, backend '%s', %d thread(s)%s\n", PARRNN_VERSION_STRING, prn_context_backend_name(ctx),
           prn_context_num_threads(ctx), quick ? ", --quick sizes" : "");

    CHECK(part1_evaluation(ctx, &z, &f));
    printf("Deviations are at float precision: iterations stop when every |h_t - f(h_{t-1}, x_t)| <=\n"
           "1e-5 + 1e-5 |f| (the f32 defaults); Newton (dense, block) lands well inside that.\n");
    if (f.max_ratio >= 1.0)
        printf("Speed, honestly: DEER took %.2g-%.2gx as long as the sequential loop here. It does several\n"
               "times the arithmetic (Jacobians, matrix products, scans) to cut the depth from T dependent steps\n"
               "to a few scans of depth log T: a win on a GPU's thousands of lanes (the DEER paper reports large\n"
               "speed-ups there); on a few CPU cores only where the state is tiny and the batch small (part 3).\n"
               "What this shows: the same result, found in parallel.\n",
               f.min_ratio, f.max_ratio);
    else
        printf("Speed: DEER took %.2g-%.2gx as long as the sequential loop here.\n", f.min_ratio, f.max_ratio);

    CHECK(part2_training(ctx, &z, &f));
    CHECK(part3_where(ctx, &z, plot));

    exit_code = 0;
    if (!(f.worst_deviation <= FAIL_DEVIATION) || f.not_converged) {
        printf("FAILED: DEER deviated from sequential evaluation by %.1e (limit %.0e); %d evaluation(s) did not "
               "converge\n", f.worst_deviation, FAIL_DEVIATION, f.not_converged);
        exit_code = 1;
    }
    printf("\ndone in %.1f s: DEER matched sequential evaluation within %.1e and BPTT's losses within %.1e.\n",
           seconds_now() - t0, f.worst_deviation, f.worst_loss_diff);

done:
    if (st != PRN_OK) {
        fprintf(stderr, "deer_demo: parrnn error: %s\n", prn_last_error(ctx));
        exit_code = 1;
    }
    if (ctx && prn_live_tensors(ctx) != 0) {
        fprintf(stderr, "deer_demo: %lu tensor(s) still alive at exit\n", (unsigned long)prn_live_tensors(ctx));
        exit_code = 1;
    }
    prn_context_free(ctx);
    return exit_code;
}
