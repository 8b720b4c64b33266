/* char_rnn.c - a character-level GRU language model: train, save, sample.
 *
 * The text is read as bytes; its distinct bytes, sorted, are the
 * vocabulary (V of them), and each byte becomes a one-hot vector of V.
 * The model is one prn_rnn of kind PRN_RNN_GRU with a readout of V logits:
 *
 *     one-hot x_t (V) -> GRU (H) -> readout -> logits (V) ~ next byte
 *
 * Training (truncated backpropagation through time): each step takes a
 * batch of random windows of the first 90% of the text, runs
 * prn_rnn_forward over them from a zero state, applies the readout and
 * prn_cross_entropy against the one-hot next characters, backpropagates,
 * clips the gradient norm and takes an Adam step (cosine-decayed learning
 * rate). The last 10% of the text is held out: its loss is measured before
 * and after training. The loss is in nats per character; a model that knows
 * nothing scores log(V), one that knows the character frequencies about 3.
 *
 * Sampling uses the per-frame inference API that an engine would use
 * (prn_rnn_frame_create / prn_rnn_frame_step): one character in, the
 * readout's logits out as doubles, no tape and no allocation per step. The
 * next character is drawn from softmax(logits / temperature) by a small
 * deterministic generator seeded with --seed, so a run is reproducible.
 *
 * Usage:  char_rnn [TEXT_FILE] [options]
 *   TEXT_FILE          plain text to learn (default
 *                      examples/data/alice_in_wonderland_ch1-4.txt, so run
 *                      from the repository root)
 *   --steps N          training steps (default 200: 30-60 s on 2 cores)
 *   --hidden H         GRU width (default 128)
 *   --batch B          windows per step (default 32)
 *   --seq T            characters per window (default 64)
 *   --lr X             Adam learning rate at the start (default 0.01)
 *   --clip X           gradient-norm clipping threshold (default 5)
 *   --seed S           seed of the weights, the windows and the sampling (1)
 *   --temperature X    sampling temperature; 0 takes the most likely (0.7)
 *   --sample N         characters to generate (default 500)
 *   --prime TEXT       text fed to the model before sampling ("Alice ")
 *   --save FILE        write the trained model (prn_rnn_save)
 *   --load FILE        read a model (prn_rnn_load) instead of training; the
 *                      vocabulary comes from TEXT_FILE, so give the text the
 *                      model was trained on
 *
 * Exit status: 0 on success, 1 on a parrnn or file error (the message is
 * printed), 2 on bad usage.
 *
 * Build and run:  make build/examples/char_rnn && ./build/examples/char_rnn
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime, isatty under -std=c99 */

#include "parrnn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TEXT "examples/data/alice_in_wonderland_ch1-4.txt"
#define MAX_TEXT_BYTES (64u << 20) /* refuse anything larger than 64 MiB */
#define NUM_VALID_WINDOWS 32       /* held-out windows for the validation loss */
#define CURVE_POINTS 10            /* loss-curve summary: one value per 10% */

/* Every parrnn call returns a prn_status; CHECK jumps to the clean-up of
 * the enclosing function on failure, where prn_last_error is printed. */
#define CHECK(call)                                                            \
    do {                                                                       \
        if ((st = (call)) != PRN_OK) goto done;                                \
    } while (0)

typedef struct options {
    const char *text_path, *save_path, *load_path, *prime;
    long steps, hidden, batch, seq, sample;
    double lr, clip, temperature;
    unsigned long seed;
} options;

/* The text and its vocabulary. */
typedef struct corpus {
    unsigned char *bytes;
    size_t len;
    int vocab;                 /* V: number of distinct bytes           */
    unsigned char chars[256];  /* id -> byte                            */
    int id[256];               /* byte -> id, -1 when not in the text  */
    size_t train_len;          /* windows of the first train_len bytes */
} corpus;

/* ------------------------------------------------------------------------
 * A small deterministic generator (splitmix64) for window positions and
 * sampling, so that both depend only on --seed.
 * ---------------------------------------------------------------------- */
static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* Uniform in [0, 1) with 53 random bits. */
static double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }
static size_t rng_below(uint64_t *s, size_t n) { return (size_t)(rng_uniform(s) * (double)n); }

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------------
 * The text
 * ---------------------------------------------------------------------- */
static int load_corpus(const char *path, size_t min_len, corpus *c) {
    FILE *f = fopen(path, "rb");
    size_t cap = 1 << 16, n = 0, i;
    int v;
    memset(c, 0, sizeof *c);
    if (!f) {
        fprintf(stderr, "char_rnn: cannot open '%s'", path);
        if (strcmp(path, DEFAULT_TEXT) == 0) fprintf(stderr, " (run from the repository root, or name a text file)");
        fprintf(stderr, "\n");
        return 1;
    }
    c->bytes = (unsigned char *)malloc(cap);
    while (c->bytes) {
        size_t got;
        if (n == cap) {
            unsigned char *bigger;
            if (cap >= MAX_TEXT_BYTES) break;
            bigger = (unsigned char *)realloc(c->bytes, cap * 2);
            if (!bigger) break;
            c->bytes = bigger;
            cap *= 2;
        }
        got = fread(c->bytes + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (!c->bytes || ferror(f) || (n == cap && !feof(f))) {
        fprintf(stderr, "char_rnn: cannot read '%s' (unreadable, out of memory or over %u MiB)\n", path,
                MAX_TEXT_BYTES >> 20);
        fclose(f);
        free(c->bytes);
        c->bytes = NULL;
        return 1;
    }
    fclose(f);
    c->len = n;
    /* Training windows come from the first 90%, validation from the rest;
     * both parts must hold at least one window of min_len bytes. */
    c->train_len = n - n / 10;
    if (n / 10 < min_len || c->train_len < min_len) {
        fprintf(stderr, "char_rnn: '%s' has %lu bytes; need at least %lu for --seq %lu\n", path,
                (unsigned long)n, (unsigned long)(10 * min_len), (unsigned long)(min_len - 1));
        free(c->bytes);
        c->bytes = NULL;
        return 1;
    }
    for (v = 0; v < 256; ++v) c->id[v] = -1;
    for (i = 0; i < n; ++i) c->id[c->bytes[i]] = 0;
    c->vocab = 0;
    for (v = 0; v < 256; ++v) {
        if (c->id[v] == 0) {
            c->chars[c->vocab] = (unsigned char)v;
            c->id[v] = c->vocab++;
        }
    }
    return 0;
}

/* One-hot inputs x [B, T, V] and targets y [B, T, V] for windows starting
 * at starts[b]: x_t is byte start+t, its target byte start+t+1. */
static void fill_batch(const corpus *c, const size_t *starts, size_t batch, size_t seq, float *x, float *y) {
    size_t b, t, v = (size_t)c->vocab;
    memset(x, 0, batch * seq * v * sizeof *x);
    memset(y, 0, batch * seq * v * sizeof *y);
    for (b = 0; b < batch; ++b) {
        const unsigned char *w = c->bytes + starts[b];
        for (t = 0; t < seq; ++t) {
            x[(b * seq + t) * v + (size_t)c->id[w[t]]] = 1.0f;
            y[(b * seq + t) * v + (size_t)c->id[w[t + 1]]] = 1.0f;
        }
    }
}

/* Mean cross-entropy of the model on the batch already in x and y,
 * computed without recording anything on the tape. */
static prn_status eval_loss(prn_context *ctx, const prn_rnn *rnn, prn_tensor *x, prn_tensor *y, double *loss) {
    prn_tensor *h = NULL, *logits = NULL, *l = NULL;
    prn_status st;
    prn_no_grad_begin(ctx);
    CHECK(prn_rnn_forward(ctx, rnn, x, NULL, &h, NULL));
    CHECK(prn_rnn_readout(ctx, rnn, h, &logits));
    CHECK(prn_cross_entropy(ctx, logits, y, &l));
    CHECK(prn_tensor_item(l, loss));
done:
    prn_no_grad_end(ctx);
    prn_tensor_free(h);
    prn_tensor_free(logits);
    prn_tensor_free(l);
    return st;
}

/* The progress bar: one line rewritten with \r on a terminal; when the
 * output is a file or a pipe, a plain line every 10% instead. */
static void show_progress(int tty, long step, long steps, double loss, double elapsed) {
    const int width = 30;
    int filled = (int)((double)width * (double)step / (double)steps), i;
    char bar[64];
    for (i = 0; i < width; ++i) bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    if (tty) {
        printf("\r[%s] step %ld/%ld  loss %.3f  %.1f s ", bar, step, steps, loss, elapsed);
        if (step == steps) printf("\n");
    } else {
        printf("[%s] step %ld/%ld  loss %.3f  %.1f s\n", bar, step, steps, loss, elapsed);
    }
    fflush(stdout);
}

/* ------------------------------------------------------------------------
 * Training
 * ---------------------------------------------------------------------- */
static prn_status train(prn_context *ctx, prn_rnn *rnn, const corpus *c, const options *o, uint64_t *rng) {
    const size_t batch = (size_t)o->batch, seq = (size_t)o->seq, v = (size_t)c->vocab;
    const size_t vb = NUM_VALID_WINDOWS; /* validation batch */
    size_t shape[3], vshape[3], *starts = NULL, i;
    float *xh = NULL, *yh = NULL, *vx = NULL, *vy = NULL;
    prn_tensor *x = NULL, *y = NULL, *valx = NULL, *valy = NULL;
    prn_tensor *h = NULL, *logits = NULL, *loss = NULL, **params = NULL;
    prn_optim *opt = NULL;
    prn_adam_config adam;
    prn_status st = PRN_OK;
    int nparams, tty = isatty(STDOUT_FILENO), k;
    long step, next_report = 1, curve_at = 0;
    double value = 0.0, smooth = 0.0, gnorm = 0.0, valid0 = 0.0, valid1 = 0.0, t0, last_draw = -1.0;
    double curve[CURVE_POINTS + 1];
    const double pi = 3.14159265358979323846;

    starts = (size_t *)malloc((batch > vb ? batch : vb) * sizeof *starts);
    xh = (float *)malloc(batch * seq * v * sizeof *xh);
    yh = (float *)malloc(batch * seq * v * sizeof *yh);
    vx = (float *)malloc(vb * seq * v * sizeof *vx);
    vy = (float *)malloc(vb * seq * v * sizeof *vy);
    nparams = prn_rnn_params(rnn, NULL, 0);
    params = (prn_tensor **)malloc((size_t)nparams * sizeof *params);
    if (!starts || !xh || !yh || !vx || !vy || !params) {
        st = prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "char_rnn: out of host memory for the batches");
        goto done;
    }
    prn_rnn_params(rnn, params, nparams);

    /* The input and target tensors are made once and refilled each step
     * with prn_tensor_upload. */
    shape[0] = batch; shape[1] = seq; shape[2] = v;
    vshape[0] = vb; vshape[1] = seq; vshape[2] = v;
    CHECK(prn_tensor_create(ctx, PRN_F32, 3, shape, &x));
    CHECK(prn_tensor_create(ctx, PRN_F32, 3, shape, &y));

    /* Validation windows evenly spaced over the held-out tail. */
    for (i = 0; i < vb; ++i)
        starts[i] = c->train_len + i * (c->len - c->train_len - seq - 1) / (vb > 1 ? vb - 1 : 1);
    fill_batch(c, starts, vb, seq, vx, vy);
    CHECK(prn_tensor_from_host(ctx, PRN_F32, 3, vshape, vx, &valx));
    CHECK(prn_tensor_from_host(ctx, PRN_F32, 3, vshape, vy, &valy));
    CHECK(eval_loss(ctx, rnn, valx, valy, &valid0));

    memset(&adam, 0, sizeof adam);
    adam.lr = o->lr;
    CHECK(prn_optim_adam_create(ctx, params, nparams, &adam, &opt));

    printf("training: %ld steps of %ld windows x %ld chars, Adam lr %g (cosine decay), clip %g\n", o->steps,
           o->batch, o->seq, o->lr, o->clip);
    printf("held-out loss before training: %.3f nats/char (log V = %.3f)\n", valid0, log((double)v));

    t0 = seconds_now();
    for (step = 1; step <= o->steps; ++step) {
        double now;
        /* Cosine decay from lr to lr/10 over the run: large steps while the
         * loss falls fast, small ones to settle at the end. */
        double frac = (double)(step - 1) / (double)(o->steps > 1 ? o->steps - 1 : 1);
        CHECK(prn_optim_set_lr(opt, o->lr * (0.1 + 0.45 * (1.0 + cos(pi * frac)))));

        for (i = 0; i < batch; ++i) starts[i] = rng_below(rng, c->train_len - seq);
        fill_batch(c, starts, batch, seq, xh, yh);
        CHECK(prn_tensor_upload(x, xh, batch * seq * v));
        CHECK(prn_tensor_upload(y, yh, batch * seq * v));

        /* Forward over every window from a zero state (recorded on the
         * tape), the loss, then backpropagation through time. */
        CHECK(prn_rnn_forward(ctx, rnn, x, NULL, &h, NULL));
        CHECK(prn_rnn_readout(ctx, rnn, h, &logits));
        CHECK(prn_cross_entropy(ctx, logits, y, &loss));
        CHECK(prn_backward(ctx, loss));
        /* Recurrent nets occasionally produce a huge gradient (a step that
         * would throw the weights far away); clipping the norm keeps the
         * direction and bounds the step. */
        CHECK(prn_clip_grad_norm(ctx, params, nparams, o->clip, &gnorm));
        CHECK(prn_optim_step(opt));
        prn_optim_zero_grad(opt);

        CHECK(prn_tensor_item(loss, &value));
        prn_tensor_free(h); h = NULL;
        prn_tensor_free(logits); logits = NULL;
        prn_tensor_free(loss); loss = NULL;

        /* An exponential moving average: one batch's loss is noisy. */
        smooth = step == 1 ? value : 0.9 * smooth + 0.1 * value;
        if (step == 1) curve[curve_at++] = value;
        while (curve_at <= CURVE_POINTS && step * CURVE_POINTS >= curve_at * o->steps) curve[curve_at++] = smooth;

        now = seconds_now() - t0;
        if (step == o->steps || (tty ? now - last_draw >= 0.1 : step >= next_report)) {
            show_progress(tty, step, o->steps, smooth, now);
            last_draw = now;
            while (next_report <= step) next_report += (o->steps + 9) / 10;
        }
    }
    CHECK(eval_loss(ctx, rnn, valx, valy, &valid1));
    printf("trained in %.1f s (%.1f ms/step); last gradient norm %.2f\n", seconds_now() - t0,
           1000.0 * (seconds_now() - t0) / (double)o->steps, gnorm);
    printf("loss curve (smoothed training loss at 0%%, 10%%, ..., 100%% of the steps):\n ");
    for (k = 0; k < curve_at; ++k) printf(" %.2f", curve[k]);
    printf("\nheld-out loss: %.3f -> %.3f nats/char (%.2f bits/char)\n", valid0, valid1, valid1 / log(2.0));

done:
    prn_optim_free(opt);
    prn_tensor_free(h);
    prn_tensor_free(logits);
    prn_tensor_free(loss);
    prn_tensor_free(x);
    prn_tensor_free(y);
    prn_tensor_free(valx);
    prn_tensor_free(valy);
    free(params);
    free(starts);
    free(xh);
    free(yh);
    free(vx);
    free(vy);
    return st;
}

/* ------------------------------------------------------------------------
 * Sampling through the per-frame API
 * ---------------------------------------------------------------------- */
/* Index drawn from softmax(logits / temperature); temperature 0: argmax. */
static int draw(const double *logits, int n, double temperature, uint64_t *rng, double *work) {
    double top = logits[0], total = 0.0, u;
    int i, best = 0;
    for (i = 1; i < n; ++i)
        if (logits[i] > top) top = logits[i], best = i;
    if (temperature <= 0.0) return best;
    for (i = 0; i < n; ++i) total += work[i] = exp((logits[i] - top) / temperature); /* max-shifted: no overflow */
    u = rng_uniform(rng) * total;
    for (i = 0; i < n; ++i) {
        if (u < work[i]) return i;
        u -= work[i];
    }
    return best; /* only reached through rounding */
}

static prn_status sample(prn_context *ctx, const prn_rnn *rnn, const corpus *c, const options *o, uint64_t *rng) {
    prn_rnn_frame *frame = NULL;
    prn_status st = PRN_OK;
    double *x = NULL, *logits = NULL, *work = NULL, t0, elapsed;
    const size_t v = (size_t)c->vocab;
    const char *p;
    int fed = 0, id = 0;
    long i;

    x = (double *)calloc(v, sizeof *x);
    logits = (double *)calloc(v, sizeof *logits);
    work = (double *)calloc(v, sizeof *work);
    if (!x || !logits || !work) {
        st = prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "char_rnn: out of host memory for sampling");
        goto done;
    }
    /* One row (B = 1): the parameters are copied to host doubles here, once. */
    CHECK(prn_rnn_frame_create(rnn, 1, &frame));
    printf("\nsample (%ld chars, temperature %g, seed %lu; frame memory %lu bytes):\n", o->sample,
           o->temperature, o->seed, (unsigned long)prn_rnn_frame_memory(frame));
    printf("----------------------------------------------------------------------\n");

    t0 = seconds_now();
    /* Feed the prime text (bytes the text never has are skipped: the model
     * has no input for them), printing it as the start of the sample. */
    for (p = o->prime; *p; ++p) {
        id = c->id[(unsigned char)*p];
        if (id < 0) continue;
        x[id] = 1.0;
        CHECK(prn_rnn_frame_step(frame, x, logits));
        x[id] = 0.0;
        putchar(*p);
        ++fed;
    }
    if (!fed) { /* nothing usable: start from the text's first byte */
        id = c->id[c->bytes[0]];
        x[id] = 1.0;
        CHECK(prn_rnn_frame_step(frame, x, logits));
        x[id] = 0.0;
        putchar(c->bytes[0]);
        ++fed;
    }
    /* Then each drawn character is the next input. */
    for (i = 0; i < o->sample; ++i) {
        id = draw(logits, c->vocab, o->temperature, rng, work);
        putchar(c->chars[id]);
        x[id] = 1.0;
        CHECK(prn_rnn_frame_step(frame, x, logits));
        x[id] = 0.0;
    }
    elapsed = seconds_now() - t0;
    printf("\n----------------------------------------------------------------------\n");
    printf("sampling: %.2f us per character (prn_rnn_frame_step + softmax draw)\n",
           1e6 * elapsed / (double)(fed + o->sample));

done:
    prn_rnn_frame_free(frame);
    free(x);
    free(logits);
    free(work);
    return st;
}

/* ------------------------------------------------------------------------
 * Command line
 * ---------------------------------------------------------------------- */
static int usage(const char *prog) {
    fprintf(stderr,
            "usage: %s [TEXT_FILE] [--steps N] [--hidden H] [--batch B] [--seq T] [--lr X]\n"
            "       [--clip X] [--seed S] [--temperature X] [--sample N] [--prime TEXT]\n"
            "       [--save FILE] [--load FILE]\n",
            prog);
    return 2;
}

static int parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

static int parse_double(const char *s, double lo, double hi, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= lo && v <= hi)) return 0;
    *out = v;
    return 1;
}

static int parse_args(int argc, char **argv, options *o) {
    int i;
    long seed = 1;
    memset(o, 0, sizeof *o);
    o->text_path = NULL;
    o->prime = "Alice ";
    o->steps = 200;
    o->hidden = 128;
    o->batch = 32;
    o->seq = 64;
    o->sample = 500;
    o->lr = 0.01;
    o->clip = 5.0;
    o->temperature = 0.7;
    for (i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (a[0] != '-') {
            if (o->text_path) return 0;
            o->text_path = a;
            continue;
        }
        if (!v) return 0;
        if (!strcmp(a, "--steps")) ok = parse_long(v, 1, 100000000L, &o->steps);
        else if (!strcmp(a, "--hidden")) ok = parse_long(v, 1, 4096, &o->hidden);
        else if (!strcmp(a, "--batch")) ok = parse_long(v, 1, 4096, &o->batch);
        else if (!strcmp(a, "--seq")) ok = parse_long(v, 1, 4096, &o->seq);
        else if (!strcmp(a, "--sample")) ok = parse_long(v, 0, 100000000L, &o->sample);
        else if (!strcmp(a, "--seed")) ok = parse_long(v, 0, 2147483647L, &seed);
        else if (!strcmp(a, "--lr")) ok = parse_double(v, 1e-9, 10.0, &o->lr);
        else if (!strcmp(a, "--clip")) ok = parse_double(v, 1e-9, 1e9, &o->clip);
        else if (!strcmp(a, "--temperature")) ok = parse_double(v, 0.0, 100.0, &o->temperature);
        else if (!strcmp(a, "--prime")) o->prime = v;
        else if (!strcmp(a, "--save")) o->save_path = v;
        else if (!strcmp(a, "--load")) o->load_path = v;
        else return 0;
        if (!ok) return 0;
        ++i;
    }
    if (!o->text_path) o->text_path = DEFAULT_TEXT;
    o->seed = (unsigned long)seed;
    return 1;
}

int main(int argc, char **argv) {
    options o;
    corpus c;
    prn_config config;
    prn_context *ctx = NULL;
    prn_rnn *rnn = NULL;
    prn_rnn_config rc;
    prn_status st = PRN_OK;
    uint64_t rng;
    char err[256];
    int exit_code = 1;

    if (!parse_args(argc, argv, &o)) return usage(argv[0]);
    if (load_corpus(o.text_path, (size_t)o.seq + 1, &c)) return 1;

    memset(&config, 0, sizeof config);
    config.seed = o.seed; /* the initial weights */
    if (prn_context_create(&config, &ctx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "char_rnn: %s\n", err);
        free(c.bytes);
        return 1;
    }
    rng = (uint64_t)o.seed * 0x2545F4914F6CDD1Dull + 1; /* the training windows */
    printf("parrnn %s, backend '%s', %d thread(s)\n", PARRNN_VERSION_STRING, prn_context_backend_name(ctx),
           prn_context_num_threads(ctx));
    printf("text: %s, %lu bytes, %d distinct (V)\n", o.text_path, (unsigned long)c.len, c.vocab);

    if (o.load_path) {
        const prn_rnn_config *lc;
        CHECK(prn_rnn_load(ctx, o.load_path, &rnn));
        lc = prn_rnn_get_config(rnn);
        /* The file holds the network only: its input and output must be
         * this text's vocabulary. */
        if (lc->input_size != (size_t)c.vocab || lc->output_size != (size_t)c.vocab || lc->bidirectional) {
            fprintf(stderr,
                    "char_rnn: '%s' is a %s network with input %lu, output %lu%s; this text needs input "
                    "and output %d (load it with the text it was trained on)\n",
                    o.load_path, prn_rnn_kind_name(lc->kind), (unsigned long)lc->input_size,
                    (unsigned long)lc->output_size, lc->bidirectional ? ", bidirectional" : "", c.vocab);
            goto done;
        }
        printf("loaded %s: %s, %d layer(s) of %lu\n", o.load_path, prn_rnn_kind_name(lc->kind), lc->num_layers,
               (unsigned long)lc->hidden_size);
    } else {
        memset(&rc, 0, sizeof rc);
        rc.kind = PRN_RNN_GRU;
        rc.dtype = PRN_F32;
        rc.input_size = (size_t)c.vocab;
        rc.hidden_size = (size_t)o.hidden;
        rc.num_layers = 1;
        rc.output_size = (size_t)c.vocab;
        CHECK(prn_rnn_create(ctx, &rc, &rnn));
        printf("model: GRU %d -> %ld -> readout %d (%d parameter tensors)\n", c.vocab, o.hidden, c.vocab,
               prn_rnn_params(rnn, NULL, 0));
        CHECK(train(ctx, rnn, &c, &o, &rng));
        if (o.save_path) {
            CHECK(prn_rnn_save(rnn, o.save_path));
            printf("saved the model to %s\n", o.save_path);
        }
    }
    /* Sampling has a stream of its own, so that a model saved after
     * training and loaded again gives the same sample for the same seed. */
    rng = (uint64_t)o.seed * 0x9E3779B97F4A7C15ull + 2;
    CHECK(sample(ctx, rnn, &c, &o, &rng));
    exit_code = 0;

done:
    if (st != PRN_OK) fprintf(stderr, "char_rnn: parrnn error: %s\n", prn_last_error(ctx));
    prn_rnn_free(rnn);
    if (ctx && prn_live_tensors(ctx) != 0) {
        fprintf(stderr, "char_rnn: %lu tensor(s) still alive at exit\n", (unsigned long)prn_live_tensors(ctx));
        exit_code = 1;
    }
    prn_context_free(ctx);
    free(c.bytes);
    return exit_code;
}
