/* game_agent.c - an RNN controller stepped every frame, as in a game loop.
 *
 * The simulation: an inverted pendulum with a torque motor, at a fixed 30
 * frames per second. Angle theta is 0 upright; per frame, in 4 substeps,
 *
 *     omega' = (g/l) sin(theta) - c omega + u,   |u| <= U_MAX
 *
 * and now and then a random kick (an instant change of omega) knocks it
 * about. The motor is too weak to lift the pendulum from lying down, so it
 * must be kept upright; when |theta| passes FALL_ANGLE it counts as a fall
 * and the pendulum respawns near upright (as a game would respawn).
 *
 * The controllers:
 *   none     u = 0.
 *   expert   a PD law on the TRUE state: u = -KP theta - KD omega.
 *   finite   the same PD law, but from the sensor only: a noisy angle, the
 *            velocity taken as the difference of the last two readings
 *            (with this sensor, off by about 1.3 rad/s rms: too noisy).
 *   rnn      a GRU (prn_rnn, kind PRN_RNN_GRU, readout of 1) that sees only
 *            the noisy angle (as sin and cos) and outputs u / U_MAX. It must
 *            infer the velocity from the history of readings, and learns to
 *            filter the noise while doing so.
 *
 * Training (a few seconds, before the game starts): behaviour cloning by
 * backpropagation through time. Episodes of the expert are simulated with
 * extra random torque added to what is executed, so that they visit states
 * off the expert's path (DART-style noise injection; without it the clone
 * never sees how to recover from its own mistakes), the sensor's readings
 * are the inputs and the expert's clean action the target, and the mean
 * squared error is minimised with Adam over fresh episodes every step.
 *
 * The game: each controller runs the same sequence of kicks and sensor
 * noise for --frames frames. The RNN runs through the per-frame API:
 * prn_rnn_frame_create copies the weights to host doubles once; then
 * prn_rnn_frame_step advances the GRU by one frame on the calling thread
 * with no allocation, no tape and no backend call. Its time per frame is
 * measured around that call (mean, median, 99th percentile and worst).
 * Then a crowd of --crowd pendulums runs for a tenth of the frames with one
 * batched prn_rnn_frame_step per frame (B = crowd rows), timed likewise.
 *
 * Usage:  game_agent [--steps N] [--hidden H] [--seed S] [--frames N]
 *                    [--crowd N] [--batch B] [--episode T]
 *   --steps    training steps (default 100, about 10 s on 2 cores)
 *   --hidden   GRU width (default 32)
 *   --seed     seed of the weights, the training episodes and the game (1)
 *   --frames   frames of the game per controller (default 9000: 5 minutes)
 *   --crowd    pendulums in the batched run (default 256; 0 skips it)
 *   --batch    training episodes per step (default 64)
 *   --episode  frames per training episode (default 60: 2 s)
 *
 * Exit status: 0 on success, 1 on a parrnn error (the message is printed),
 * 2 on bad usage.
 *
 * Build and run:  make build/examples/game_agent && ./build/examples/game_agent
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c99 */

#include "parrnn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------------
 * The world
 * ---------------------------------------------------------------------- */
#define FPS 30.0
#define DT (1.0 / FPS)
#define SUBSTEPS 4
#define G_OVER_L 4.0        /* 1/s^2: a pole of about 2.5 m              */
#define DAMPING 0.1         /* 1/s                                       */
#define U_MAX 3.0           /* torque limit: holds it up to about 48 deg */
#define KICK_EVERY 2.0      /* s: mean time between kicks                */
#define KICK_STD 0.7        /* rad/s: size of a kick                     */
#define SENSOR_STD 0.03     /* rad: noise of the angle sensor            */
#define FALL_ANGLE 1.0      /* rad: beyond this it counts as a fall      */
#define UPRIGHT_ANGLE 0.2   /* rad: "upright" for the statistics         */
#define KP 12.0             /* the expert's PD gains: closed loop        */
#define KD 4.0              /* omega_n 2.8 rad/s, damping ratio 0.7      */

/* Training (the batch and episode length are options) */
#define LEARNING_RATE 0.02
#define CLIP 1.0
static size_t train_batch = 64, train_frames = 60; /* set from the options */

#define CHECK(call)                                                            \
    do {                                                                       \
        if ((st = (call)) != PRN_OK) goto done;                                \
    } while (0)

/* splitmix64: a small deterministic generator; each use (kicks, sensor,
 * respawns, training) gets its own stream so that every controller meets
 * exactly the same kicks and the same sensor noise. */
static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double rng_uniform(uint64_t *s) { return ((double)(rng_next(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
static double rng_range(uint64_t *s, double lo, double hi) { return lo + (hi - lo) * rng_uniform(s); }
static double rng_normal(uint64_t *s) { /* Box-Muller; the second value is dropped */
    double u1 = rng_uniform(s), u2 = rng_uniform(s);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static double clamp(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

static double wrap_angle(double a) { /* to (-pi, pi] */
    const double pi = 3.14159265358979323846;
    while (a > pi) a -= 2.0 * pi;
    while (a <= -pi) a += 2.0 * pi;
    return a;
}

typedef struct pendulum {
    double theta, omega;
} pendulum;

static void pendulum_step(pendulum *p, double u) {
    const double h = DT / SUBSTEPS;
    int k;
    u = clamp(u, -U_MAX, U_MAX);
    for (k = 0; k < SUBSTEPS; ++k) { /* semi-implicit Euler */
        p->omega += h * (G_OVER_L * sin(p->theta) - DAMPING * p->omega + u);
        p->theta += h * p->omega;
    }
    p->theta = wrap_angle(p->theta);
}

/* The disturbance of one frame: always draws the same amount from the
 * stream, kick or not, so the stream stays in step across controllers. */
static double kick(uint64_t *s) {
    double happens = rng_uniform(s), size = rng_normal(s);
    return happens < DT / KICK_EVERY ? KICK_STD * size : 0.0;
}

static double expert(const pendulum *p) { return clamp(-KP * p->theta - KD * p->omega, -U_MAX, U_MAX); }

/* What the RNN reads: the sensor's angle as (sin, cos), continuous all the
 * way round. sin is scaled up so that the small angles that matter (and
 * their frame-to-frame changes, the velocity) are not tiny inputs: that
 * makes learning much faster. */
#define OBS_GAIN 4.0
static void observation(double measured, double *x) {
    x[0] = OBS_GAIN * sin(measured);
    x[1] = cos(measured);
}

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------------
 * Training by behaviour cloning
 * ---------------------------------------------------------------------- */
/* train_batch episodes of the expert with exploration noise: x [B, T, 2] sensor
 * readings, y [B, T, 1] the expert's clean action / U_MAX. */
static void make_episodes(uint64_t *rng, float *x, float *y) {
    size_t b, t;
    for (b = 0; b < train_batch; ++b) {
        pendulum p;
        double noise = 0.0, noise_std = rng_range(rng, 0.0, 0.6) * U_MAX;
        p.theta = rng_range(rng, -0.6, 0.6);
        p.omega = rng_range(rng, -1.0, 1.0);
        for (t = 0; t < train_frames; ++t) {
            size_t row = b * train_frames + t;
            double obs[2], u = expert(&p);
            observation(p.theta + SENSOR_STD * rng_normal(rng), obs);
            x[2 * row] = (float)obs[0];
            x[2 * row + 1] = (float)obs[1];
            y[row] = (float)(u / U_MAX);
            /* Correlated (Ornstein-Uhlenbeck) torque noise pushes the
             * pendulum off the expert's path for a while, not per frame. */
            noise = 0.8 * noise + 0.6 * noise_std * rng_normal(rng);
            pendulum_step(&p, u + noise);
            p.omega += kick(rng);
        }
    }
}

static prn_status train(prn_context *ctx, prn_rnn *rnn, long steps, uint64_t *rng) {
    const size_t n = train_batch * train_frames;
    size_t xshape[3], yshape[3];
    float *xh = NULL, *yh = NULL;
    prn_tensor *x = NULL, *y = NULL, *h = NULL, *pred = NULL, *loss = NULL;
    prn_tensor *params[6]; /* one GRU layer: 4 tensors, and the readout's 2 */
    prn_optim *opt = NULL;
    prn_adam_config adam;
    prn_status st = PRN_OK;
    int nparams = prn_rnn_params(rnn, params, 6);
    long step;
    double value = 0.0, first = 0.0, smooth = 0.0, zero_mse = 0.0, t0;
    const double pi = 3.14159265358979323846;
    size_t i;

    xh = (float *)malloc(2 * n * sizeof *xh);
    yh = (float *)malloc(n * sizeof *yh);
    if (!xh || !yh) {
        st = prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "game_agent: out of host memory");
        goto done;
    }
    if (nparams != 6) {
        st = prn_set_error(ctx, PRN_ERR_STATE, "game_agent: expected 6 parameter tensors, got %d", nparams);
        goto done;
    }
    xshape[0] = train_batch; xshape[1] = train_frames; xshape[2] = 2;
    yshape[0] = train_batch; yshape[1] = train_frames; yshape[2] = 1;
    CHECK(prn_tensor_create(ctx, PRN_F32, 3, xshape, &x));
    CHECK(prn_tensor_create(ctx, PRN_F32, 3, yshape, &y));
    memset(&adam, 0, sizeof adam);
    adam.lr = LEARNING_RATE;
    CHECK(prn_optim_adam_create(ctx, params, nparams, &adam, &opt));

    t0 = seconds_now();
    for (step = 1; step <= steps; ++step) {
        double frac = (double)(step - 1) / (double)(steps > 1 ? steps - 1 : 1);
        CHECK(prn_optim_set_lr(opt, LEARNING_RATE * (0.05 + 0.475 * (1.0 + cos(pi * frac)))));
        make_episodes(rng, xh, yh); /* fresh episodes every step: no overfitting */
        if (step == 1)
            for (i = 0; i < n; ++i) zero_mse += (double)yh[i] * yh[i] / (double)n;
        CHECK(prn_tensor_upload(x, xh, 2 * n));
        CHECK(prn_tensor_upload(y, yh, n));

        CHECK(prn_rnn_forward(ctx, rnn, x, NULL, &h, NULL));
        CHECK(prn_rnn_readout(ctx, rnn, h, &pred));
        CHECK(prn_mse(ctx, pred, y, &loss));
        CHECK(prn_backward(ctx, loss));
        CHECK(prn_clip_grad_norm(ctx, params, nparams, CLIP, NULL));
        CHECK(prn_optim_step(opt));
        prn_optim_zero_grad(opt);

        CHECK(prn_tensor_item(loss, &value));
        prn_tensor_free(h); h = NULL;
        prn_tensor_free(pred); pred = NULL;
        prn_tensor_free(loss); loss = NULL;
        if (step == 1) first = smooth = value;
        smooth = 0.9 * smooth + 0.1 * value;
        if (step == 1 || step % (steps / 5 > 0 ? steps / 5 : 1) == 0 || step == steps) {
            printf("  step %4ld  mse %.4f  (%.1f s)\n", step, smooth, seconds_now() - t0);
            fflush(stdout);
        }
    }
    printf("trained in %.1f s: mse %.4f -> %.4f (always-zero output: %.4f)\n", seconds_now() - t0, first, smooth,
           zero_mse);

done:
    prn_optim_free(opt);
    prn_tensor_free(x);
    prn_tensor_free(y);
    prn_tensor_free(h);
    prn_tensor_free(pred);
    prn_tensor_free(loss);
    free(xh);
    free(yh);
    return st;
}

/* ------------------------------------------------------------------------
 * The game
 * ---------------------------------------------------------------------- */
typedef enum controller { CTRL_NONE, CTRL_EXPERT, CTRL_FINITE, CTRL_RNN } controller;
static const char *const controller_name[] = {"none", "expert (true state)", "finite differences", "rnn (angle only)"};

typedef struct result {
    long frames, upright, falls;
    double sum_sq_angle;
    double step_sum, step_max; /* seconds in prn_rnn_frame_step */
    double *step_times;        /* per frame, for the percentile   */
} result;

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One game of `frames` frames with controller c (frame: the RNN's, for
 * CTRL_RNN). The seed fixes the kicks, the sensor noise and the respawns,
 * the same for every controller. */
static prn_status play(controller c, prn_rnn_frame *frame, long frames, uint64_t seed, result *r) {
    uint64_t kicks = seed ^ 0x1111, sensor = seed ^ 0x2222, respawn = seed ^ 0x3333;
    pendulum p;
    double x[2], y[1], prev = 0.0;
    int fresh = 1; /* the finite-difference controller has no previous reading */
    long f;
    prn_status st = PRN_OK;

    p.theta = 0.3;
    p.omega = 0.0;
    if (frame) prn_rnn_frame_reset(frame);
    for (f = 0; f < frames; ++f) {
        double measured = p.theta + SENSOR_STD * rng_normal(&sensor), u = 0.0;
        switch (c) {
        case CTRL_NONE: break;
        case CTRL_EXPERT: u = expert(&p); break;
        case CTRL_FINITE:
            u = -KP * measured - KD * (fresh ? 0.0 : wrap_angle(measured - prev) * FPS);
            prev = measured;
            fresh = 0;
            break;
        case CTRL_RNN: {
            double t0, dt;
            observation(measured, x);
            t0 = seconds_now();
            st = prn_rnn_frame_step(frame, x, y);
            dt = seconds_now() - t0;
            if (st != PRN_OK) return st;
            r->step_sum += dt;
            if (dt > r->step_max) r->step_max = dt;
            if (r->step_times) r->step_times[f] = dt;
            u = U_MAX * y[0];
            break;
        }
        }
        pendulum_step(&p, u);
        p.omega += kick(&kicks);

        r->frames++;
        r->sum_sq_angle += p.theta * p.theta;
        if (fabs(p.theta) < UPRIGHT_ANGLE) r->upright++;
        if (fabs(p.theta) > FALL_ANGLE) {
            r->falls++;
            p.theta = rng_range(&respawn, -0.3, 0.3);
            p.omega = 0.0;
            fresh = 1;
            if (frame) prn_rnn_frame_reset(frame); /* a new life: forget the old one */
        }
    }
    return st;
}

static void print_result(controller c, const result *r) {
    printf("  %-20s upright %5.1f%%   rms angle %5.3f rad   falls %4ld (%.1f per minute)\n", controller_name[c],
           100.0 * (double)r->upright / (double)r->frames, sqrt(r->sum_sq_angle / (double)r->frames), r->falls,
           (double)r->falls / ((double)r->frames * DT / 60.0));
}

/* The crowd: n pendulums, one batched prn_rnn_frame_step per frame. A
 * respawned pendulum gets its row of the state zeroed
 * (prn_rnn_frame_reset_row). */
static prn_status play_crowd(prn_context *ctx, const prn_rnn *rnn, size_t n, long frames, uint64_t seed) {
    prn_rnn_frame *frame = NULL;
    pendulum *p = NULL;
    uint64_t *kicks = NULL, *sensor = NULL, respawn = seed ^ 0x4444;
    double *x = NULL, *y = NULL, sum = 0.0, worst = 0.0;
    size_t i;
    long f, upright = 0, falls = 0;
    prn_status st = PRN_OK;

    CHECK(prn_rnn_frame_create(rnn, n, &frame));
    p = (pendulum *)malloc(n * sizeof *p);
    kicks = (uint64_t *)malloc(n * sizeof *kicks);
    sensor = (uint64_t *)malloc(n * sizeof *sensor);
    x = (double *)malloc(2 * n * sizeof *x);
    y = (double *)malloc(n * sizeof *y);
    if (!p || !kicks || !sensor || !x || !y) {
        st = prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "game_agent: out of host memory for the crowd");
        goto done;
    }
    for (i = 0; i < n; ++i) {
        kicks[i] = seed * 7919u + i;
        sensor[i] = ~(seed * 104729u + i);
        p[i].theta = rng_range(&respawn, -0.3, 0.3);
        p[i].omega = 0.0;
    }
    for (f = 0; f < frames; ++f) {
        double t0, dt;
        for (i = 0; i < n; ++i) observation(p[i].theta + SENSOR_STD * rng_normal(&sensor[i]), x + 2 * i);
        t0 = seconds_now();
        CHECK(prn_rnn_frame_step(frame, x, y));
        dt = seconds_now() - t0;
        sum += dt;
        if (dt > worst) worst = dt;
        for (i = 0; i < n; ++i) {
            pendulum_step(&p[i], U_MAX * y[i]);
            p[i].omega += kick(&kicks[i]);
            if (fabs(p[i].theta) < UPRIGHT_ANGLE) upright++;
            if (fabs(p[i].theta) > FALL_ANGLE) {
                falls++;
                p[i].theta = rng_range(&respawn, -0.3, 0.3);
                p[i].omega = 0.0;
                CHECK(prn_rnn_frame_reset_row(frame, i));
            }
        }
    }
    printf("crowd of %lu pendulums, one prn_rnn_frame_step per frame (%lu bytes of frame memory):\n",
           (unsigned long)n, (unsigned long)prn_rnn_frame_memory(frame));
    printf("  upright %.1f%%, %.1f falls per pendulum-minute\n",
           100.0 * (double)upright / ((double)frames * (double)n),
           (double)falls / ((double)frames * (double)n * DT / 60.0));
    printf("  time per frame: mean %.1f us, worst %.1f us; %.3f us per pendulum\n", 1e6 * sum / (double)frames,
           1e6 * worst, 1e6 * sum / (double)frames / (double)n);

done:
    prn_rnn_frame_free(frame);
    free(p);
    free(kicks);
    free(sensor);
    free(x);
    free(y);
    return st;
}

/* ------------------------------------------------------------------------
 * main
 * ---------------------------------------------------------------------- */
static int usage(const char *prog) {
    fprintf(stderr,
            "usage: %s [--steps N] [--hidden H] [--seed S] [--frames N] [--crowd N] [--batch B] "
            "[--episode T]\n",
            prog);
    return 2;
}

int main(int argc, char **argv) {
    long steps = 100, hidden = 32, seed = 1, frames = 9000, crowd = 256, batch = 64, episode = 60;
    prn_config config;
    prn_context *ctx = NULL;
    prn_rnn *rnn = NULL;
    prn_rnn_frame *frame = NULL;
    prn_rnn_config rc;
    prn_status st = PRN_OK;
    result res[4];
    uint64_t rng;
    char err[256];
    int i, exit_code = 1;

    memset(res, 0, sizeof res);
    for (i = 1; i < argc; ++i) {
        long *target = NULL, lo = 1, hi = 100000000L;
        char *end;
        if (i + 1 >= argc) return usage(argv[0]);
        if (!strcmp(argv[i], "--steps")) target = &steps;
        else if (!strcmp(argv[i], "--hidden")) target = &hidden, hi = 1024;
        else if (!strcmp(argv[i], "--seed")) target = &seed, lo = 0, hi = 2147483647L;
        else if (!strcmp(argv[i], "--frames")) target = &frames, hi = 10000000L;
        else if (!strcmp(argv[i], "--crowd")) target = &crowd, lo = 0, hi = 100000;
        else if (!strcmp(argv[i], "--batch")) target = &batch, hi = 4096;
        else if (!strcmp(argv[i], "--episode")) target = &episode, hi = 100000;
        else return usage(argv[0]);
        *target = strtol(argv[++i], &end, 10);
        if (!*argv[i] || *end || *target < lo || *target > hi) return usage(argv[0]);
    }

    train_batch = (size_t)batch;
    train_frames = (size_t)episode;
    memset(&config, 0, sizeof config);
    config.seed = (uint64_t)seed;
    if (prn_context_create(&config, &ctx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "game_agent: %s\n", err);
        return 1;
    }
    printf("parrnn %s, backend '%s', %d thread(s)\n", PARRNN_VERSION_STRING, prn_context_backend_name(ctx),
           prn_context_num_threads(ctx));

    /* The controller: sensor (sin, cos) -> GRU -> readout -> u / U_MAX. */
    memset(&rc, 0, sizeof rc);
    rc.kind = PRN_RNN_GRU;
    rc.dtype = PRN_F32;
    rc.input_size = 2;
    rc.hidden_size = (size_t)hidden;
    rc.num_layers = 1;
    rc.output_size = 1;
    CHECK(prn_rnn_create(ctx, &rc, &rnn));
    printf("behaviour cloning: GRU 2 -> %ld -> 1, %ld steps of %ld episodes x %ld frames (BPTT), Adam\n", hidden, steps,
           batch, episode);
    rng = (uint64_t)seed * 0x2545F4914F6CDD1Dull + 7;
    CHECK(train(ctx, rnn, steps, &rng));

    /* From here on nothing touches the backend: the frame has its own
     * copy of the weights in host memory. */
    CHECK(prn_rnn_frame_create(rnn, 1, &frame));
    res[CTRL_RNN].step_times = (double *)malloc((size_t)frames * sizeof(double));
    if (!res[CTRL_RNN].step_times) {
        fprintf(stderr, "game_agent: out of host memory\n");
        goto done;
    }

    printf("\ngame: %ld frames at %.0f fps (%.1f min), kicks of %.1f rad/s every %.0f s on average,\n", frames, FPS,
           (double)frames * DT / 60.0, KICK_STD, KICK_EVERY);
    printf("      sensor noise %.2f rad, torque limit %.1f, fall beyond %.1f rad (then respawn)\n", SENSOR_STD, U_MAX,
           FALL_ANGLE);
    for (i = CTRL_NONE; i <= CTRL_RNN; ++i) {
        CHECK(play((controller)i, i == CTRL_RNN ? frame : NULL, frames, (uint64_t)seed, &res[i]));
        print_result((controller)i, &res[i]);
    }
    qsort(res[CTRL_RNN].step_times, (size_t)frames, sizeof(double), compare_double);
    printf("\nrnn controller: prn_rnn_frame_step, batch 1, frame memory %lu bytes\n",
           (unsigned long)prn_rnn_frame_memory(frame));
    /* The median shows the cost of the step itself; the mean and the worst
     * also hold whatever the OS did to the thread (preemption, page faults
     * in the first frames), which is what a frame budget has to absorb. */
    printf("  time per frame: mean %.2f us, median %.2f us, 99th percentile %.2f us, worst %.2f us (%ld frames)\n",
           1e6 * res[CTRL_RNN].step_sum / (double)frames, 1e6 * res[CTRL_RNN].step_times[(size_t)frames / 2],
           1e6 * res[CTRL_RNN].step_times[(size_t)((double)frames * 0.99)], 1e6 * res[CTRL_RNN].step_max, frames);
    printf("  (the frame budget at %.0f fps is %.0f us)\n\n", FPS, 1e6 * DT);

    if (crowd > 0) CHECK(play_crowd(ctx, rnn, (size_t)crowd, frames / 10 > 0 ? frames / 10 : 1, (uint64_t)seed));
    exit_code = 0;

done:
    if (st != PRN_OK) fprintf(stderr, "game_agent: parrnn error: %s\n", prn_last_error(ctx));
    free(res[CTRL_RNN].step_times);
    prn_rnn_frame_free(frame);
    prn_rnn_free(rnn);
    if (ctx && prn_live_tensors(ctx) != 0) {
        fprintf(stderr, "game_agent: %lu tensor(s) still alive at exit\n", (unsigned long)prn_live_tensors(ctx));
        exit_code = 1;
    }
    prn_context_free(ctx);
    return exit_code;
}
