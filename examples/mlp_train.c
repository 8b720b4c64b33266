/* mlp_train.c - a first parrnn program: classify the "two spirals".
 *
 * Two interleaved spirals, one per class, are generated deterministically
 * below. A small multi-layer perceptron
 *
 *     x (2) -> linear -> tanh (32) -> linear -> tanh (32) -> linear -> logits (2)
 *
 * is trained on all points at once (full batch) with Adam and the
 * cross-entropy loss, then the training accuracy is measured with
 * prn_argmax. Everything is deterministic for the seed: data, initial
 * weights and every update are the same on every run, so the program
 * prints the same losses each time on a given machine and thread count.
 * (The last digits may differ between backends, or when OpenBLAS runs its
 * GEMM on a different number of threads and so sums in another order.)
 *
 * Usage:  mlp_train [BACKEND] [--epochs N]
 *   BACKEND   e.g. "reference" or "reference-noblas"; by default the
 *             PARRNN_BACKEND environment variable, else "reference".
 *   --epochs  number of training epochs (default 1500). With the default,
 *             the program also checks that it reached 95% accuracy.
 *
 * Exit status: 0 on success, 1 on a parrnn error (the message from
 * prn_last_error is printed) or when the accuracy check fails, 2 on bad
 * usage.
 *
 * Build and run:  make build/examples/mlp_train && ./build/examples/mlp_train
 *   or by hand:    cc -std=c99 -O3 -fopenmp -I. examples/mlp_train.c parrnn_impl.c -lm
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c99 */

/* parrnn is a single header: exactly one file of a program defines
 * PARRNN_IMPLEMENTATION before including it to compile the library. This
 * project keeps that file apart (parrnn_impl.c, compiled once and linked
 * into every program), so this one includes the declarations only. */
#include "parrnn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------------
 * Settings
 * ---------------------------------------------------------------------- */
#define POINTS_PER_CLASS 200
#define NUM_CLASSES 2
#define NUM_POINTS (NUM_CLASSES * POINTS_PER_CLASS)
#define HIDDEN 32
#define DEFAULT_EPOCHS 1500
#define LEARNING_RATE 0.01
#define SEED 42
#define TARGET_ACCURACY 0.95
#define MAX_LOG_LINES 30 /* loss lines printed during training (at most) */

/* Every parrnn call returns a prn_status. CHECK jumps to the error exit
 * of the enclosing function when a call fails; the context then holds the
 * message (prn_last_error), which main prints. */
#define CHECK(call)                                                            \
    do {                                                                       \
        if ((st = (call)) != PRN_OK) goto done;                                \
    } while (0)

/* ------------------------------------------------------------------------
 * The model: three linear layers. Each weight matrix is [in, out] so that
 * a layer is  y = x @ W + b  with x as [rows, in]; b is [out] and is added
 * to every row by broadcasting.
 * ---------------------------------------------------------------------- */
typedef struct mlp {
    prn_tensor *w1, *b1; /* 2 -> HIDDEN      */
    prn_tensor *w2, *b2; /* HIDDEN -> HIDDEN */
    prn_tensor *w3, *b3; /* HIDDEN -> 2      */
} mlp;

#define MLP_NUM_PARAMS 6

static void mlp_params(mlp *net, prn_tensor *params[MLP_NUM_PARAMS]) {
    params[0] = net->w1; params[1] = net->b1;
    params[2] = net->w2; params[3] = net->b2;
    params[4] = net->w3; params[5] = net->b3;
}

/* One layer's parameters: W ~ Normal(0, 1/fan_in) (Xavier/LeCun scaling,
 * which suits tanh), b = 0. Both are marked as requiring a gradient, so
 * every op that uses them is recorded on the tape for prn_backward. */
static prn_status init_layer(prn_context *ctx, size_t fan_in, size_t fan_out, prn_tensor **w,
                             prn_tensor **b) {
    size_t wshape[2], bshape[1];
    prn_status st;
    wshape[0] = fan_in;
    wshape[1] = fan_out;
    bshape[0] = fan_out;
    CHECK(prn_tensor_normal(ctx, PRN_F32, 2, wshape, 0.0, 1.0 / sqrt((double)fan_in), w));
    CHECK(prn_tensor_create(ctx, PRN_F32, 1, bshape, b));
    CHECK(prn_tensor_set_requires_grad(*w, 1));
    CHECK(prn_tensor_set_requires_grad(*b, 1));
done:
    return st; /* on failure the caller's mlp_free releases what was made */
}

static prn_status mlp_init(prn_context *ctx, mlp *net) {
    prn_status st;
    CHECK(init_layer(ctx, 2, HIDDEN, &net->w1, &net->b1));
    CHECK(init_layer(ctx, HIDDEN, HIDDEN, &net->w2, &net->b2));
    CHECK(init_layer(ctx, HIDDEN, NUM_CLASSES, &net->w3, &net->b3));
done:
    return st;
}

static void mlp_free(mlp *net) {
    prn_tensor_free(net->w1); prn_tensor_free(net->b1);
    prn_tensor_free(net->w2); prn_tensor_free(net->b2);
    prn_tensor_free(net->w3); prn_tensor_free(net->b3);
    memset(net, 0, sizeof *net);
}

/* y = x @ w + b, optionally followed by tanh.
 *
 * Each parrnn op returns a NEW tensor holding one reference for us. The
 * tape keeps its own references to whatever backward will need, so we free
 * intermediates as soon as we are done with them: that keeps memory flat
 * over thousands of steps. prn_tensor_free(NULL) is a no-op, which makes
 * the clean-up below valid on every path. */
static prn_status linear(prn_context *ctx, prn_tensor *x, prn_tensor *w, prn_tensor *b,
                         int apply_tanh, prn_tensor **out) {
    prn_tensor *xw = NULL, *z = NULL;
    prn_status st;
    CHECK(prn_matmul(ctx, x, w, &xw)); /* [rows, in] @ [in, out]   */
    CHECK(prn_add(ctx, xw, b, &z));    /* + b broadcast over rows  */
    if (apply_tanh) {
        CHECK(prn_tanh(ctx, z, out));
    } else {
        *out = z;
        z = NULL; /* ownership passed to the caller */
    }
done:
    prn_tensor_free(xw);
    prn_tensor_free(z);
    return st;
}

/* logits = MLP(x): [rows, 2] -> [rows, NUM_CLASSES]. */
static prn_status mlp_forward(prn_context *ctx, const mlp *net, prn_tensor *x, prn_tensor **logits) {
    prn_tensor *h1 = NULL, *h2 = NULL;
    prn_status st;
    CHECK(linear(ctx, x, net->w1, net->b1, 1, &h1));
    CHECK(linear(ctx, h1, net->w2, net->b2, 1, &h2));
    CHECK(linear(ctx, h2, net->w3, net->b3, 0, logits));
done:
    prn_tensor_free(h1);
    prn_tensor_free(h2);
    return st;
}

/* Fraction of rows whose largest logit is the true class. prn_argmax gives
 * an i32 tensor of class indices, which we copy to the host to compare. */
static prn_status accuracy(prn_context *ctx, prn_tensor *logits, const int32_t *labels, double *acc) {
    int32_t predicted[NUM_POINTS];
    prn_tensor *idx = NULL;
    prn_status st;
    int i, correct = 0;
    CHECK(prn_argmax(ctx, logits, -1, 0, &idx)); /* [rows] of class ids */
    CHECK(prn_tensor_download(idx, predicted, NUM_POINTS));
    for (i = 0; i < NUM_POINTS; ++i) correct += predicted[i] == labels[i];
    *acc = (double)correct / NUM_POINTS;
done:
    prn_tensor_free(idx);
    return st;
}

/* ------------------------------------------------------------------------
 * The data set: two spirals of 1.75 turns each, the second one the first
 * rotated by 180 degrees, with a little Gaussian noise from parrnn's own
 * counter-based generator (so the data depend only on the seed).
 * Coordinates are in about [-1, 1]; targets are one-hot rows.
 * ---------------------------------------------------------------------- */
static prn_status make_spirals(prn_context *ctx, float *points, float *onehot, int32_t *labels) {
    const double pi = 3.14159265358979323846, turns = 1.75, noise = 0.02;
    double jitter[NUM_POINTS * 2];
    size_t shape[2];
    prn_tensor *noise_t = NULL;
    prn_status st;
    int c, i;
    shape[0] = NUM_POINTS;
    shape[1] = 2;
    CHECK(prn_tensor_normal(ctx, PRN_F64, 2, shape, 0.0, noise, &noise_t));
    CHECK(prn_tensor_download(noise_t, jitter, NUM_POINTS * 2));
    for (c = 0; c < NUM_CLASSES; ++c) {
        for (i = 0; i < POINTS_PER_CLASS; ++i) {
            int row = c * POINTS_PER_CLASS + i;
            double t = (double)i / POINTS_PER_CLASS;          /* 0 .. 1 along the arm */
            double angle = 2.0 * pi * turns * t + pi * c;     /* class 1: rotated     */
            double radius = 0.05 + 0.95 * t;
            points[2 * row] = (float)(radius * cos(angle) + jitter[2 * row]);
            points[2 * row + 1] = (float)(radius * sin(angle) + jitter[2 * row + 1]);
            onehot[NUM_CLASSES * row + 0] = c == 0 ? 1.0f : 0.0f;
            onehot[NUM_CLASSES * row + 1] = c == 1 ? 1.0f : 0.0f;
            labels[row] = c;
        }
    }
done:
    prn_tensor_free(noise_t);
    return st;
}

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int usage(const char *prog) {
    fprintf(stderr, "usage: %s [BACKEND] [--epochs N]\n", prog);
    return 2;
}

int main(int argc, char **argv) {
    prn_config config;
    prn_context *ctx = NULL;
    prn_tensor *x = NULL, *y = NULL, *logits = NULL, *loss = NULL;
    prn_tensor *params[MLP_NUM_PARAMS];
    prn_optim *opt = NULL;
    prn_adam_config adam;
    prn_status st = PRN_OK;
    mlp net;
    static float points[NUM_POINTS * 2], onehot[NUM_POINTS * NUM_CLASSES];
    static int32_t labels[NUM_POINTS];
    size_t xshape[2], yshape[2];
    char err[256];
    int epochs = DEFAULT_EPOCHS, log_every, epoch, i, exit_code = 1;
    double acc = 0.0, value = 0.0, t0, elapsed;

    memset(&config, 0, sizeof config);
    memset(&net, 0, sizeof net);
    for (i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--epochs") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1000000) return usage(argv[0]);
            epochs = (int)v;
        } else if (argv[i][0] == '-' || config.backend) {
            return usage(argv[0]);
        } else {
            config.backend = argv[i];
        }
    }

    /* 1. A context: the backend, the random seed, the error state. A zeroed
     *    config is valid; backend NULL means $PARRNN_BACKEND or "reference". */
    config.seed = SEED;
    if (prn_context_create(&config, &ctx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "mlp_train: %s\n", err);
        return 1;
    }
    printf("parrnn %s, backend '%s', %d thread(s)\n", PARRNN_VERSION_STRING,
           prn_context_backend_name(ctx), prn_context_num_threads(ctx));

    /* 2. The data, copied into tensors: x [400, 2] points, y [400, 2] one-hot. */
    CHECK(make_spirals(ctx, points, onehot, labels));
    xshape[0] = NUM_POINTS; xshape[1] = 2;
    yshape[0] = NUM_POINTS; yshape[1] = NUM_CLASSES;
    CHECK(prn_tensor_from_host(ctx, PRN_F32, 2, xshape, points, &x));
    CHECK(prn_tensor_from_host(ctx, PRN_F32, 2, yshape, onehot, &y));

    /* 3. The model and an Adam optimiser over its six parameter tensors
     *    (zero fields of prn_adam_config take the usual defaults). */
    CHECK(mlp_init(ctx, &net));
    mlp_params(&net, params);
    memset(&adam, 0, sizeof adam);
    adam.lr = LEARNING_RATE;
    CHECK(prn_optim_adam_create(ctx, params, MLP_NUM_PARAMS, &adam, &opt));
    printf("two spirals: %d points, MLP 2-%d-%d-%d (tanh), Adam lr %g, %d epochs\n", NUM_POINTS,
           HIDDEN, HIDDEN, NUM_CLASSES, LEARNING_RATE, epochs);

    /* 4. Training. Each epoch: forward (recorded on the tape), loss,
     *    backward (fills each parameter's .grad and releases the records it ran),
     *    optimiser step, and dropping the gradients for the next epoch. */
    log_every = (epochs + MAX_LOG_LINES - 1) / MAX_LOG_LINES;
    t0 = seconds_now();
    for (epoch = 1; epoch <= epochs; ++epoch) {
        CHECK(mlp_forward(ctx, &net, x, &logits));
        CHECK(prn_cross_entropy(ctx, logits, y, &loss)); /* scalar */
        CHECK(prn_backward(ctx, loss));
        CHECK(prn_optim_step(opt));
        prn_optim_zero_grad(opt);

        if (epoch == 1 || epoch % log_every == 0 || epoch == epochs) {
            /* The logits are from before this step's update; argmax is
             * never recorded, so it may be used on them freely. */
            CHECK(prn_tensor_item(loss, &value));
            CHECK(accuracy(ctx, logits, labels, &acc));
            printf("epoch %5d  loss %.5f  accuracy %5.1f%%\n", epoch, value, 100.0 * acc);
        }
        prn_tensor_free(logits); logits = NULL;
        prn_tensor_free(loss); loss = NULL;
    }
    elapsed = seconds_now() - t0;

    /* 5. Final evaluation without recording anything on the tape. */
    prn_no_grad_begin(ctx);
    st = mlp_forward(ctx, &net, x, &logits);
    if (st == PRN_OK) st = prn_cross_entropy(ctx, logits, y, &loss);
    if (st == PRN_OK) st = prn_tensor_item(loss, &value);
    if (st == PRN_OK) st = accuracy(ctx, logits, labels, &acc);
    prn_no_grad_end(ctx);
    if (st != PRN_OK) goto done;
    printf("final: loss %.5f, training accuracy %.1f%% (%d/%d) in %.2f s\n", value, 100.0 * acc,
           (int)floor(acc * NUM_POINTS + 0.5), NUM_POINTS, elapsed);

    exit_code = 0;
    if (epochs == DEFAULT_EPOCHS && acc < TARGET_ACCURACY) {
        printf("FAILED: accuracy below %.0f%%\n", 100.0 * TARGET_ACCURACY);
        exit_code = 1;
    }

done:
    if (st != PRN_OK) {
        fprintf(stderr, "mlp_train: parrnn error: %s\n", prn_last_error(ctx));
        exit_code = 1;
    }
    /* 6. Clean up. The optimiser holds its own references to the
     *    parameters (and its Adam state), so free it as well as the model.
     *    prn_context_free would free any tensor we forgot, but a tidy
     *    program leaves nothing behind: prn_live_tensors checks that. */
    prn_tensor_free(logits);
    prn_tensor_free(loss);
    prn_optim_free(opt);
    mlp_free(&net);
    prn_tensor_free(x);
    prn_tensor_free(y);
    if (ctx && prn_live_tensors(ctx) != 0) {
        fprintf(stderr, "mlp_train: %lu tensor(s) still alive at exit\n",
                (unsigned long)prn_live_tensors(ctx));
        exit_code = 1;
    }
    prn_context_free(ctx);
    return exit_code;
}
