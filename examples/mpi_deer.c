/* mpi_deer.c - DEER over a sequence split across MPI ranks, and one
 * data-parallel training step through it.
 *
 * DEER (Lim et al., 2023) evaluates a nonlinear RNN h_t = f(h_{t-1}, x_t)
 * by Newton iterations whose linear steps are scans. A scan splits over
 * processes: each rank reduces its slice of the sequence to one affine map
 * h -> M h + v, the ranks combine the maps of the ranks before them with
 * one MPI_Exscan, and each rank finishes its slice from the carry it gets.
 * So a sequence too long for one machine (or one GPU) can be evaluated by
 * many, each holding only its slice: backends/parrnn_mpi.h.
 *
 * What the program does, on every rank (SPMD):
 *   1. creates a context (backend: $PARRNN_BACKEND, else "reference") and
 *      wraps MPI_COMM_WORLD with prn_mpi_create;
 *   2. creates a GRU (one layer, one direction, a readout of one output)
 *      with the same seed on every rank, so every rank has the same
 *      weights; prn_mpi_broadcast copies rank 0's anyway, as a program
 *      that loads its weights on rank 0 only would;
 *   3. generates ITS slice of a long input sequence (prn_mpi_split says
 *      which steps): a sum of sines, computed from the global step index,
 *      so the slices of all ranks together are the sequence one process
 *      would generate;
 *   4. evaluates the GRU over the whole sequence with prn_mpi_deer_rnn;
 *      rank 0 prints the Newton iterations, whether it converged, the final
 *      residual and the time (the slowest rank's);
 *   5. when T <= --check-max (default 200000), rank 0 also evaluates the
 *      whole sequence sequentially (prn_rnn_forward), gathers the ranks'
 *      slices and prints the largest deviation;
 *   6. trains: each rank's loss is the squared error of the readout against
 *      a target on its own slice (scaled so that the ranks' losses add up
 *      to the mean over the whole sequence); prn_backward on every rank
 *      (collective: its adjoint recurrence is a reverse scan across
 *      ranks), prn_mpi_allreduce_grads sums the gradients, and every rank
 *      takes the same Adam step (prn_optim_adam_create), so the weights stay the
 *      same everywhere. Rank 0 prints the global loss of each step.
 *
 * The task of the training steps: predict a smoothed copy of the input's
 * first channel (a low-pass filter, a target with memory).
 *
 * Usage:  mpirun -np 4 ./build/examples/mpi_deer [--T N] [--hidden H] [--batch B]
 *                [--steps S] [--check-max N] [--quasi]
 *   --T N          sequence length over all ranks (default 40000)
 *   --hidden H     hidden size of the GRU (default 8; DEER and training need
 *                  H <= 64, quasi-DEER evaluation takes any)
 *   --batch B      independent sequences (default 2)
 *   --steps S      training steps (default 3; 0: evaluation only)
 *   --check-max N  compare with sequential evaluation when T <= N (default
 *                  200000; 0: never)
 *   --quasi        quasi-DEER (diagonal Jacobians) instead of DEER
 * As root, Open MPI's mpirun needs --allow-run-as-root; with more ranks
 * than cores, --oversubscribe.
 *
 * Exit status: 0 on success; 1 on a parrnn error (printed with the rank),
 * when DEER did not converge or deviates from the sequential evaluation by
 * more than 1e-3, or when tensors are left alive at exit; 2 on bad usage.
 *
 * Build:  make build/examples/mpi_deer   (mpicc; `make` builds it when MPI
 *         is installed)
 */
#define _POSIX_C_SOURCE 199309L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parrnn.h"
#include "backends/parrnn_mpi.h"

#define INPUTS 4

static int g_rank = 0;

/* A parrnn call failed. The collective prn_mpi_* calls fail on every rank
 * together (they agree on the outcome first), but a local call (an
 * allocation, say) fails on one rank only, and the others would then wait
 * in the next collective call for ever: MPI_Abort ends them all. */
static void die(prn_context *ctx, const char *what) {
    fprintf(stderr, "rank %d: %s failed: %s\n", g_rank, what, ctx ? prn_last_error(ctx) : "(no context)");
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}
#define CHECK(call)                           \
    do {                                      \
        if ((call) != PRN_OK) die(ctx, #call); \
    } while (0)

/* Input feature i of sequence b at GLOBAL step t: sines of a few
 * frequencies and phases, the same whichever rank computes it. */
static double input_at(size_t b, size_t t, int i) {
    double w = 0.0021 * (double)(i + 1) + 0.0007 * (double)b;
    return sin(w * (double)t + 0.5 * (double)i) + 0.3 * sin(0.031 * (double)t * (double)(i + 1));
}

/* The target: an exponential moving average of feature 0,
 * s_t = 0.95 s_{t-1} + 0.05 x_t with s_{-1} = 0. It depends on every
 * earlier step, so a rank cannot take its slice of it from its own inputs
 * alone; it starts the average WARM steps before its slice (0.95^600 is
 * 4e-14, far below f32 rounding, so the result is the same). */
#define WARM 600
/* Host values of steps start .. start+len-1 of every sequence, [B, len, F]. */
static float *make_inputs(size_t B, size_t start, size_t len) {
    float *x = (float *)malloc((B * len * INPUTS + 1) * sizeof *x);
    size_t b, t;
    int i;
    if (!x) return NULL;
    for (b = 0; b < B; ++b)
        for (t = 0; t < len; ++t)
            for (i = 0; i < INPUTS; ++i) x[(b * len + t) * INPUTS + i] = (float)input_at(b, start + t, i);
    return x;
}
static float *make_targets(size_t B, size_t start, size_t len) {
    float *y = (float *)malloc((B * len + 1) * sizeof *y);
    size_t b, t, u0 = start > WARM ? start - WARM : 0;
    if (!y) return NULL;
    for (b = 0; b < B; ++b) {
        double s = 0.0;
        for (t = u0; t < start + len; ++t) {
            s = 0.95 * s + 0.05 * input_at(b, t, 0);
            if (t >= start) y[b * len + (t - start)] = (float)s;
        }
    }
    return y;
}

static int parse_size(const char *s, size_t lo, size_t hi, size_t *out) {
    char *end;
    double v = strtod(s, &end); /* accepts 1e6 */
    if (*end || v < (double)lo || v > (double)hi || v != floor(v)) return 1;
    *out = (size_t)v;
    return 0;
}

int main(int argc, char **argv) {
    size_t T = 40000, H = 8, B = 2, steps = 3, check_max = 200000;
    int quasi = 0, size, a, failed = 0;
    size_t start, len, r_start, r_len, i, shape[3];
    prn_context *ctx = NULL;
    prn_mpi *mpi = NULL;
    prn_rnn *rnn = NULL;
    prn_rnn_config rc;
    prn_config cfg;
    prn_deer_options opt;
    prn_deer_stats stats;
    prn_tensor *params[16], *x = NULL, *y = NULL, *target = NULL;
    prn_optim *adam = NULL;
    prn_adam_config ac;
    float *host;
    char err[512];
    int num_params;
    double t0, secs, secs_max;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (a = 1; a < argc; ++a) {
        int bad = 1;
        if (a + 1 < argc && strcmp(argv[a], "--T") == 0) bad = parse_size(argv[++a], 1, (size_t)1 << 40, &T);
        else if (a + 1 < argc && strcmp(argv[a], "--hidden") == 0) bad = parse_size(argv[++a], 1, 4096, &H);
        else if (a + 1 < argc && strcmp(argv[a], "--batch") == 0) bad = parse_size(argv[++a], 1, 1 << 20, &B);
        else if (a + 1 < argc && strcmp(argv[a], "--steps") == 0) bad = parse_size(argv[++a], 0, 100000, &steps);
        else if (a + 1 < argc && strcmp(argv[a], "--check-max") == 0)
            bad = parse_size(argv[++a], 0, (size_t)1 << 40, &check_max);
        else if (strcmp(argv[a], "--quasi") == 0) quasi = 1, bad = 0;
        if (bad) {
            if (g_rank == 0)
                fprintf(stderr, "usage: mpirun -np N %s [--T N] [--hidden H] [--batch B] [--steps S] "
                                "[--check-max N] [--quasi]\n", argv[0]);
            MPI_Finalize();
            return 2;
        }
    }

    if (H > 64 && !quasi) { /* the dense block scan takes blocks of at most 64 */
        if (g_rank == 0) fprintf(stderr, "%s: dense DEER needs --hidden <= 64 (use --quasi for more)\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    if (H > 64 && steps > 0) { /* gradients need the exact (dense) Jacobians */
        if (g_rank == 0) printf("(no training: its gradients need --hidden <= 64)\n");
        steps = 0;
    }

    /* 1. A context per rank, and the MPI wrapper (collective). */
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = 42;        /* the same seed on every rank: the same weights */
    cfg.num_threads = 0;  /* the backend's default; with several ranks per
                           * machine, OMP_NUM_THREADS=1 is usually best   */
    if (prn_context_create(&cfg, &ctx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "rank %d: prn_context_create: %s\n", g_rank, err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CHECK(prn_mpi_create(ctx, MPI_COMM_WORLD, &mpi));

    /* 2. The network: identical on every rank. */
    memset(&rc, 0, sizeof rc);
    rc.kind = PRN_RNN_GRU;
    rc.input_size = INPUTS;
    rc.hidden_size = H;
    rc.output_size = 1; /* the readout: one prediction per step */
    CHECK(prn_rnn_create(ctx, &rc, &rnn));
    num_params = prn_rnn_params(rnn, params, 16);
    CHECK(prn_mpi_broadcast(ctx, mpi, params, num_params, 0));

    /* 3. This rank's slice of the input: steps start .. start+len-1. */
    prn_mpi_split(mpi, T, prn_mpi_rank(mpi), &start, &len);
    host = make_inputs(B, start, len);
    if (!host) die(NULL, "malloc");
    shape[0] = B; shape[1] = len; shape[2] = INPUTS;
    CHECK(prn_tensor_from_host(ctx, PRN_F32, 3, shape, host, &x));
    free(host);
    if (g_rank == 0) {
        printf("DEER over MPI: a GRU (hidden %lu, %d inputs) over batch %lu x T = %lu steps, split over %d rank(s)\n",
               (unsigned long)H, INPUTS, (unsigned long)B, (unsigned long)T, size);
        printf("backend '%s', %d thread(s) per rank; rank 0 holds steps 0..%lu\n", prn_context_backend_name(ctx),
               prn_context_num_threads(ctx), (unsigned long)(len ? len - 1 : 0));
    }

    /* 4. Evaluation (tape off): every rank gets its slice of y. */
    memset(&opt, 0, sizeof opt);
    opt.mode = quasi ? PRN_JACOBIAN_DIAG : PRN_JACOBIAN_DENSE;
    prn_no_grad_begin(ctx);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    CHECK(prn_mpi_deer_rnn(ctx, mpi, rnn, x, NULL, &opt, &y, &stats));
    secs = MPI_Wtime() - t0;
    MPI_Allreduce(&secs, &secs_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    prn_no_grad_end(ctx);
    if (g_rank == 0)
        printf("%s: %d iterations, converged %d, residual %.3g, fell back %d, %.3f s\n",
               quasi ? "quasi-DEER" : "DEER", stats.iterations, stats.converged, stats.residual, stats.fell_back,
               secs_max);
    if (!stats.converged) failed = 1; /* the same on every rank */

    /* 5. Rank 0 checks against the sequential evaluation of the whole
     * sequence (every rank takes part in the gather). */
    if (T <= check_max) {
        float *mine = (float *)malloc((B * len * H + 1) * sizeof *mine), *all = NULL;
        int *counts = NULL, *displs = NULL, r;
        double dev = 0.0, ts = 0.0;
        if (!mine) die(NULL, "malloc");
        CHECK(prn_tensor_download(y, mine, B * len * H));
        if (g_rank == 0) {
            all = (float *)malloc(B * T * H * sizeof *all);
            counts = (int *)malloc((size_t)size * sizeof *counts);
            displs = (int *)malloc((size_t)size * sizeof *displs);
            if (!all || !counts || !displs) die(NULL, "malloc");
        }
        /* Each sequence b's slice is a block of the global [B, T, H]
         * array: gather sequence by sequence. */
        for (i = 0; i < B; ++i) {
            if (g_rank == 0)
                for (r = 0; r < size; ++r) {
                    prn_mpi_split(mpi, T, r, &r_start, &r_len);
                    counts[r] = (int)(r_len * H);
                    displs[r] = (int)((i * T + r_start) * H);
                }
            MPI_Gatherv(mine + i * len * H, (int)(len * H), MPI_FLOAT, all, counts, displs, MPI_FLOAT, 0,
                        MPI_COMM_WORLD);
        }
        if (g_rank == 0) {
            prn_tensor *xf, *yf;
            float *seq = (float *)malloc(B * T * H * sizeof *seq);
            if (!seq || !(host = make_inputs(B, 0, T))) die(NULL, "malloc");
            shape[1] = T;
            CHECK(prn_tensor_from_host(ctx, PRN_F32, 3, shape, host, &xf));
            free(host);
            prn_no_grad_begin(ctx);
            ts = MPI_Wtime();
            CHECK(prn_rnn_forward(ctx, rnn, xf, NULL, &yf, NULL));
            ts = MPI_Wtime() - ts;
            prn_no_grad_end(ctx);
            CHECK(prn_tensor_download(yf, seq, B * T * H));
            for (i = 0; i < B * T * H; ++i) {
                double d = fabs((double)seq[i] - (double)all[i]);
                if (!(d <= dev)) dev = d; /* NaN counts as a deviation */
            }
            printf("sequential on rank 0: %.3f s; largest |y_deer - y_sequential| = %.2e%s\n", ts, dev,
                   dev > 1e-3 ? "  (too large!)" : "");
            if (!(dev <= 1e-3)) failed = 1;
            prn_tensor_free(xf);
            prn_tensor_free(yf);
            free(seq);
            free(all);
            free(counts);
            free(displs);
        }
        free(mine);
    } else if (g_rank == 0) {
        printf("(T > --check-max %lu: no comparison with sequential evaluation)\n", (unsigned long)check_max);
    }
    prn_tensor_free(y);
    y = NULL;

    /* 6. Training: the target of this rank's slice, then steps of Adam. */
    host = make_targets(B, start, len);
    if (!host) die(NULL, "malloc");
    shape[2] = 1;
    shape[1] = len;
    CHECK(prn_tensor_from_host(ctx, PRN_F32, 3, shape, host, &target));
    free(host);
    memset(&ac, 0, sizeof ac);
    ac.lr = 0.01;
    CHECK(prn_optim_adam_create(ctx, params, num_params, &ac, &adam));
    if (g_rank == 0 && steps > 0)
        printf("training: loss = mean over all %lu x %lu steps of (readout - target)^2, Adam lr %g\n",
               (unsigned long)B, (unsigned long)T, ac.lr);
    for (i = 0; i < steps; ++i) {
        prn_tensor *out, *diff, *sq, *sum, *loss;
        double mine, total;
        prn_optim_zero_grad(adam);
        t0 = MPI_Wtime();
        /* Forward on the tape: the op's backward is collective. */
        CHECK(prn_mpi_deer_rnn(ctx, mpi, rnn, x, NULL, &opt, &y, &stats));
        CHECK(prn_rnn_readout(ctx, rnn, y, &out));
        /* sum of squares / (B T): the ranks' losses add up to the global
         * mean (prn_mse would average over this rank's slice only). */
        CHECK(prn_sub(ctx, out, target, &diff));
        CHECK(prn_mul(ctx, diff, diff, &sq));
        CHECK(prn_sum(ctx, sq, PRN_ALL_AXES, 0, &sum));
        CHECK(prn_scale(ctx, sum, 1.0 / ((double)B * (double)T), &loss));
        CHECK(prn_tensor_item(loss, &mine));
        /* Every rank calls backward (collective: the adjoint recurrence
         * crosses the ranks as a reverse scan), then the shared weights'
         * gradients are summed over ranks, then every rank takes the same
         * step. */
        CHECK(prn_backward(ctx, loss));
        CHECK(prn_mpi_allreduce_grads(ctx, mpi, params, num_params, 0));
        CHECK(prn_optim_step(adam));
        secs = MPI_Wtime() - t0;
        MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(&secs, &secs_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (g_rank == 0)
            printf("  step %lu: loss %.6f  (DEER %d iterations; forward + backward + allreduce + Adam %.3f s)\n",
                   (unsigned long)(i + 1), total, stats.iterations, secs_max);
        if (!(total == total)) failed = 1;
        prn_tensor_free(y);
        prn_tensor_free(out);
        prn_tensor_free(diff);
        prn_tensor_free(sq);
        prn_tensor_free(sum);
        prn_tensor_free(loss);
        y = NULL;
    }

    prn_optim_free(adam);
    prn_tensor_free(target);
    prn_tensor_free(x);
    prn_rnn_free(rnn);
    prn_mpi_free(mpi); /* collective */
    if (prn_live_tensors(ctx) != 0) {
        fprintf(stderr, "rank %d: %lu tensors still alive (a leak)\n", g_rank, (unsigned long)prn_live_tensors(ctx));
        failed = 1;
    }
    prn_context_free(ctx);
    {
        int any;
        MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        failed = any;
    }
    if (g_rank == 0) printf("%s\n", failed ? "FAILED" : "done");
    MPI_Finalize();
    return failed ? 1 : 0;
}
