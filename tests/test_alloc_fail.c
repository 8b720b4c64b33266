/* Allocation-failure test.
 *
 * A counting allocator (prn_config.allocator) fails the n-th allocation,
 * either only that one ("single") or that one and every later one ("from").
 * One training step of a tiny 2-layer MLP (context, parameters, Adam, two
 * forward/backward passes accumulating gradients, clip, step, free, destroy)
 * is run with no failure to count the allocations N, then for every n in
 * 1..N+1 in both modes, for f32 and f64. For every call of the step:
 *   - it succeeds or returns PRN_ERR_OUT_OF_MEMORY with a message that names
 *     the function called; the output pointer keeps its sentinel;
 *   - a failed op leaves prn_live_tensors and prn_tape_size unchanged;
 *   - a failed prn_backward leaves every .grad bitwise unchanged and keeps
 *     the tape; a failed prn_clip_grad_norm leaves the gradients and
 *     *total_norm unchanged; a failed prn_optim_step leaves the parameters
 *     bitwise unchanged;
 *   - every failed call is retried once: in "single" mode the retry must
 *     succeed and the whole step must end with parameters bitwise equal to
 *     the run without failures; in "from" mode the retry must fail cleanly
 *     again (or succeed) and the step is abandoned;
 *   - after releasing everything, the context has no live tensors and after
 *     prn_context_free the allocator has no outstanding allocation. */
#include "parrnn.h"
#include "prn_test.h"
#include <stdint.h>

/* ------------------------------------------------------------------------
 * The failing, counting allocator
 * ---------------------------------------------------------------------- */
#define FA_HDR 32               /* header before each block: keeps 16-byte alignment */
#define FA_MAGIC ((size_t)0x50524e41u)

typedef struct fa_state {
    long count;       /* allocations requested so far                    */
    long fail_at;     /* 0: never fail                                   */
    int from;         /* fail every allocation from fail_at on           */
    long failures;    /* allocations refused                             */
    long live;        /* outstanding allocations                         */
    size_t live_bytes;
    long bad_frees;   /* frees of pointers not from us / double frees    */
    long misaligned;
} fa_state;

typedef struct fa_hdr { size_t size; size_t magic; void *base; } fa_hdr;

static void *fa_alloc(void *user, size_t size) {
    fa_state *fa = (fa_state *)user;
    long n = ++fa->count;
    unsigned char *base, *p;
    fa_hdr h;
    if (fa->fail_at > 0 && (n == fa->fail_at || (fa->from && n > fa->fail_at))) {
        fa->failures++;
        return NULL;
    }
    if (size > SIZE_MAX - FA_HDR - 16) return NULL;
    base = (unsigned char *)malloc(size + FA_HDR + 16);
    if (!base) return NULL;
    p = base + FA_HDR + ((16 - ((uintptr_t)(base + FA_HDR) & 15)) & 15);
    h.size = size;
    h.magic = FA_MAGIC;
    h.base = base;
    memcpy(p - sizeof h, &h, sizeof h);
    if (((uintptr_t)p & 15) != 0) fa->misaligned++;
    fa->live++;
    fa->live_bytes += size;
    return p;
}

static void fa_free(void *user, void *ptr) {
    fa_state *fa = (fa_state *)user;
    fa_hdr h;
    if (!ptr) return;
    memcpy(&h, (unsigned char *)ptr - sizeof h, sizeof h);
    if (h.magic != FA_MAGIC) { fa->bad_frees++; return; }
    h.magic = 0;
    memcpy((unsigned char *)ptr - sizeof h, &h, sizeof h);
    fa->live--;
    fa->live_bytes -= h.size;
    free(h.base);
}

/* ------------------------------------------------------------------------
 * One training step
 * ---------------------------------------------------------------------- */
#define BATCH 5
#define NIN 4
#define NHID 6
#define NOUT 3
#define NP 4
#define MAXEL (NIN * NHID > NHID * NOUT ? NIN * NHID : NHID * NOUT)

typedef struct result {
    int completed;             /* the step ran to the end                  */
    long failed_calls;         /* calls that returned an error             */
    double loss[2];
    unsigned char params[NP][MAXEL * 8];
    double norm;
} result;

typedef struct run {
    prn_dtype dt;
    int from;                  /* mode of the allocator                    */
    const char *label;         /* for messages                             */
    fa_state fa;
    result res;
} run;

static union { double d; void *p; } sentinel_obj;
#define SENT_T ((prn_tensor *)(void *)&sentinel_obj)
#define SENT_O ((prn_optim *)(void *)&sentinel_obj)
#define SENT_C ((prn_context *)(void *)&sentinel_obj)

/* Checks a failed call; mode-specific handling is done by the caller. */
static void check_failure(run *r, prn_context *ctx, const char *fn, prn_status st, size_t live0, size_t tape0,
                          int check_live) {
    const char *msg = ctx ? prn_last_error(ctx) : "";
    r->res.failed_calls++;
    PRNT_CHECK(st == PRN_ERR_OUT_OF_MEMORY, "%s n=%ld: %s returned %s (%s)", r->label, r->fa.fail_at, fn,
               prn_status_string(st), msg);
    if (!ctx) return;
    PRNT_CHECK(prn_last_status(ctx) == st, "%s n=%ld: %s: prn_last_status %s", r->label, r->fa.fail_at, fn,
               prn_status_string(prn_last_status(ctx)));
    PRNT_CHECK(msg[0] != 0, "%s n=%ld: %s failed with an empty message", r->label, r->fa.fail_at, fn);
    PRNT_CHECK(strstr(msg, fn) != NULL, "%s n=%ld: message \"%s\" does not name %s", r->label, r->fa.fail_at, msg, fn);
    if (check_live)
        PRNT_CHECK(prn_live_tensors(ctx) == live0, "%s n=%ld: failed %s changed live tensors %lu -> %lu", r->label,
                   r->fa.fail_at, fn, (unsigned long)live0, (unsigned long)prn_live_tensors(ctx));
    PRNT_CHECK(prn_tape_size(ctx) == tape0, "%s n=%ld: failed %s changed the tape %lu -> %lu", r->label, r->fa.fail_at,
               fn, (unsigned long)tape0, (unsigned long)prn_tape_size(ctx));
}

/* Runs a call returning a tensor through OUTV (a prn_tensor* variable),
 * retrying once after a failure; jumps to done when it cannot go on. */
#define OP_T(FN, OUTV, EXPR)                                                      \
    do { int att_;                                                                \
        for (att_ = 0;; ++att_) {                                                 \
            size_t l0_ = prn_live_tensors(ctx), t0_ = prn_tape_size(ctx);         \
            prn_status st_;                                                       \
            prn_clear_error(ctx);                                                 \
            OUTV = SENT_T;                                                        \
            st_ = (EXPR);                                                         \
            if (st_ == PRN_OK) {                                                  \
                PRNT_CHECK(OUTV != SENT_T && OUTV != NULL, "%s: %s gave no tensor", r->label, FN); \
                break;                                                            \
            }                                                                     \
            check_failure(r, ctx, FN, st_, l0_, t0_, 1);                          \
            PRNT_CHECK(OUTV == SENT_T, "%s n=%ld: failed %s wrote its output", r->label, r->fa.fail_at, FN); \
            OUTV = NULL;                                                          \
            if (att_ == 1) {                                                      \
                PRNT_CHECK(r->from, "%s n=%ld: retry of %s failed", r->label, r->fa.fail_at, FN); \
                goto done;                                                        \
            }                                                                     \
        } } while (0)

/* A host copy of a tensor's bytes (or a marker that it is NULL). */
typedef struct hcopy { int present; size_t n; unsigned char b[MAXEL * 8]; } hcopy;
static void hcopy_take(const prn_tensor *t, hcopy *h) {
    memset(h, 0, sizeof *h);
    if (!t) return;
    h->present = 1;
    h->n = prn_tensor_numel(t) * prn_dtype_size(prn_tensor_dtype(t));
    if (h->n > sizeof h->b || prn_tensor_download(t, h->b, prn_tensor_numel(t)) != PRN_OK) h->present = -1;
}
static int hcopy_same(const prn_tensor *t, const hcopy *h) {
    hcopy now;
    hcopy_take(t, &now);
    return now.present == h->present && now.n == h->n && memcmp(now.b, h->b, h->n) == 0;
}

static int set_host(prn_dtype dt, const double *src, size_t n, void *dst) {
    size_t i;
    for (i = 0; i < n; ++i) {
        if (dt == PRN_F32) ((float *)dst)[i] = (float)src[i];
        else ((double *)dst)[i] = src[i];
    }
    return 1;
}

/* The whole step; fills r->res. Allocator state is in r->fa. */
static void train_step(run *r) {
    prn_context *ctx = NULL;
    prn_config cfg;
    prn_tensor *params[NP] = {NULL, NULL, NULL, NULL};
    prn_tensor *x = NULL, *onehot = NULL, *tvec = NULL;
    prn_tensor *h = NULL, *hb = NULL, *a = NULL, *z = NULL, *logits = NULL, *ce = NULL, *m = NULL, *ms = NULL,
               *loss = NULL;
    prn_optim *opt = NULL;
    prn_adam_config acfg;
    char err[256];
    int pass, k, att;
    size_t sw1[2] = {NIN, NHID}, sb1[1] = {NHID}, sw2[2] = {NHID, NOUT}, sb2[1] = {NOUT};
    size_t sx[2] = {BATCH, NIN}, sy[2] = {BATCH, NOUT}, sv[1] = {NOUT};
    double xd[BATCH * NIN], yd[BATCH * NOUT], vd[NOUT];
    unsigned char hx[BATCH * NIN * 8], hy[BATCH * NOUT * 8], hv[NOUT * 8];

    memset(&r->res, 0, sizeof r->res);
    memset(&cfg, 0, sizeof cfg);
    cfg.allocator.alloc = fa_alloc;
    cfg.allocator.free = fa_free;
    cfg.allocator.user = &r->fa;
    cfg.seed = 1234;
    cfg.num_threads = 1;

    /* context */
    for (att = 0;; ++att) {
        prn_context *c = SENT_C;
        prn_status st;
        err[0] = 0;
        st = prn_context_create(&cfg, &c, err, sizeof err);
        if (st == PRN_OK) { ctx = c; break; }
        r->res.failed_calls++;
        PRNT_CHECK(st == PRN_ERR_OUT_OF_MEMORY, "%s n=%ld: prn_context_create returned %s", r->label, r->fa.fail_at,
                   prn_status_string(st));
        PRNT_CHECK(strstr(err, "prn_context_create") != NULL, "%s: err_buf \"%s\"", r->label, err);
        PRNT_CHECK(c == SENT_C, "%s: failed prn_context_create wrote *out", r->label);
        if (att == 1) { PRNT_CHECK(r->from, "%s n=%ld: retry of prn_context_create failed", r->label, r->fa.fail_at); goto done; }
    }

    /* parameters: uniform weights, normal first bias, constant second bias */
    OP_T("prn_tensor_uniform", params[0], prn_tensor_uniform(ctx, r->dt, 2, sw1, -0.8, 0.8, &params[0]));
    OP_T("prn_tensor_normal", params[1], prn_tensor_normal(ctx, r->dt, 1, sb1, 0.0, 0.1, &params[1]));
    OP_T("prn_tensor_uniform", params[2], prn_tensor_uniform(ctx, r->dt, 2, sw2, -0.8, 0.8, &params[2]));
    OP_T("prn_tensor_full", params[3], prn_tensor_full(ctx, r->dt, 1, sb2, 0.05, &params[3]));
    for (k = 0; k < NP; ++k) PRNT_OK(ctx, prn_tensor_set_requires_grad(params[k], 1));

    /* Adam */
    memset(&acfg, 0, sizeof acfg);
    acfg.lr = 0.05;
    for (att = 0;; ++att) {
        size_t l0 = prn_live_tensors(ctx), t0 = prn_tape_size(ctx);
        prn_status st;
        opt = SENT_O;
        prn_clear_error(ctx);
        st = prn_optim_adam_create(ctx, params, NP, &acfg, &opt);
        if (st == PRN_OK) break;
        check_failure(r, ctx, "prn_optim_adam_create", st, l0, t0, 1);
        PRNT_CHECK(opt == SENT_O, "%s: failed prn_optim_adam_create wrote *out", r->label);
        opt = NULL;
        if (att == 1) { PRNT_CHECK(r->from, "%s n=%ld: retry of prn_optim_adam_create failed", r->label, r->fa.fail_at); goto done; }
    }

    /* two micro-batches: gradients accumulate over the two backward passes */
    for (pass = 0; pass < 2; ++pass) {
        hcopy g_before[NP];
        for (k = 0; k < BATCH * NIN; ++k) xd[k] = 0.1 * (double)((k * 7 + pass * 3) % 11) - 0.5;
        for (k = 0; k < BATCH * NOUT; ++k) yd[k] = (k % NOUT) == ((k / NOUT + pass) % NOUT) ? 1.0 : 0.0;
        for (k = 0; k < NOUT; ++k) vd[k] = 0.25 * (double)k - 0.2;
        set_host(r->dt, xd, BATCH * NIN, hx);
        set_host(r->dt, yd, BATCH * NOUT, hy);
        set_host(r->dt, vd, NOUT, hv);
        OP_T("prn_tensor_from_host", x, prn_tensor_from_host(ctx, r->dt, 2, sx, hx, &x));
        OP_T("prn_tensor_from_host", onehot, prn_tensor_from_host(ctx, r->dt, 2, sy, hy, &onehot));
        OP_T("prn_tensor_from_host", tvec, prn_tensor_from_host(ctx, r->dt, 1, sv, hv, &tvec));

        /* forward; intermediates are freed as soon as they are used (the tape keeps what it needs) */
        OP_T("prn_matmul", h, prn_matmul(ctx, x, params[0], &h));
        OP_T("prn_add", hb, prn_add(ctx, h, params[1], &hb));               /* [5,6] + [6] broadcasts */
        prn_tensor_free(h); h = NULL;
        if (r->dt == PRN_F32) OP_T("prn_relu", a, prn_relu(ctx, hb, &a));
        else OP_T("prn_tanh", a, prn_tanh(ctx, hb, &a));
        prn_tensor_free(hb); hb = NULL;
        OP_T("prn_matmul", z, prn_matmul(ctx, a, params[2], &z));
        prn_tensor_free(a); a = NULL;
        OP_T("prn_add", logits, prn_add(ctx, z, params[3], &logits));
        prn_tensor_free(z); z = NULL;
        OP_T("prn_cross_entropy", ce, prn_cross_entropy(ctx, logits, onehot, &ce));
        OP_T("prn_mse", m, prn_mse(ctx, logits, tvec, &m));                 /* target [3] broadcasts */
        OP_T("prn_scale", ms, prn_scale(ctx, m, 0.5, &ms));
        OP_T("prn_add", loss, prn_add(ctx, ce, ms, &loss));
        prn_tensor_free(logits); logits = NULL;
        prn_tensor_free(ce); ce = NULL;
        prn_tensor_free(m); m = NULL;
        prn_tensor_free(ms); ms = NULL;
        prn_tensor_free(x); x = NULL;
        prn_tensor_free(onehot); onehot = NULL;
        prn_tensor_free(tvec); tvec = NULL;
        PRNT_OK(ctx, prn_tensor_item(loss, &r->res.loss[pass]));

        /* backward: on failure no .grad changes and the tape is kept */
        for (att = 0;; ++att) {
            size_t l0 = prn_live_tensors(ctx), t0 = prn_tape_size(ctx);
            prn_status st;
            for (k = 0; k < NP; ++k) hcopy_take(prn_tensor_grad(params[k]), &g_before[k]);
            prn_clear_error(ctx);
            st = prn_backward(ctx, loss);
            if (st == PRN_OK) {
                PRNT_CHECK(prn_tape_size(ctx) == 0, "%s: tape not cleared by backward", r->label);
                break;
            }
            check_failure(r, ctx, "prn_backward", st, l0, t0, 1);
            PRNT_CHECK(t0 > 0, "%s: empty tape before backward", r->label);
            for (k = 0; k < NP; ++k)
                PRNT_CHECK(hcopy_same(prn_tensor_grad(params[k]), &g_before[k]),
                           "%s n=%ld pass %d: failed prn_backward changed the grad of param %d", r->label,
                           r->fa.fail_at, pass, k);
            if (att == 1) { PRNT_CHECK(r->from, "%s n=%ld: retry of prn_backward failed", r->label, r->fa.fail_at); goto done; }
        }
        prn_tensor_free(loss); loss = NULL;
        for (k = 0; k < NP; ++k)
            PRNT_CHECK(prn_tensor_grad(params[k]) != NULL, "%s: param %d has no grad after backward", r->label, k);
    }

    /* clip (small max_norm: the gradients are scaled) */
    for (att = 0;; ++att) {
        hcopy g_before[NP];
        size_t l0 = prn_live_tensors(ctx), t0 = prn_tape_size(ctx);
        double norm = -7.0;
        prn_status st;
        for (k = 0; k < NP; ++k) hcopy_take(prn_tensor_grad(params[k]), &g_before[k]);
        prn_clear_error(ctx);
        st = prn_clip_grad_norm(ctx, params, NP, 0.05, &norm);
        if (st == PRN_OK) { r->res.norm = norm; break; }
        check_failure(r, ctx, "prn_clip_grad_norm", st, l0, t0, 1);
        PRNT_CHECK(norm == -7.0, "%s: failed prn_clip_grad_norm wrote total_norm", r->label);
        for (k = 0; k < NP; ++k)
            PRNT_CHECK(hcopy_same(prn_tensor_grad(params[k]), &g_before[k]),
                       "%s n=%ld: failed prn_clip_grad_norm changed the grad of param %d", r->label, r->fa.fail_at, k);
        if (att == 1) { PRNT_CHECK(r->from, "%s n=%ld: retry of prn_clip_grad_norm failed", r->label, r->fa.fail_at); goto done; }
    }

    /* optimiser step: on failure no parameter changes. The optimiser may keep
     * (zero) state it allocated: that is its own, so live tensors may grow. */
    for (att = 0;; ++att) {
        hcopy p_before[NP];
        size_t l0 = prn_live_tensors(ctx), t0 = prn_tape_size(ctx);
        prn_status st;
        for (k = 0; k < NP; ++k) hcopy_take(params[k], &p_before[k]);
        prn_clear_error(ctx);
        st = prn_optim_step(opt);
        if (st == PRN_OK) break;
        check_failure(r, ctx, "prn_optim_step", st, l0, t0, 0);
        for (k = 0; k < NP; ++k)
            PRNT_CHECK(hcopy_same(params[k], &p_before[k]), "%s n=%ld: failed prn_optim_step changed param %d",
                       r->label, r->fa.fail_at, k);
        if (att == 1) { PRNT_CHECK(r->from, "%s n=%ld: retry of prn_optim_step failed", r->label, r->fa.fail_at); goto done; }
    }
    for (k = 0; k < NP; ++k) {
        hcopy hc;
        hcopy_take(params[k], &hc);
        memcpy(r->res.params[k], hc.b, hc.n);
    }
    r->res.completed = 1;

done:
    if (ctx) {
        /* release everything this step holds; nothing may stay alive */
        prn_tape_clear(ctx);
        prn_optim_free(opt);
        prn_tensor_free(h); prn_tensor_free(hb); prn_tensor_free(a); prn_tensor_free(z);
        prn_tensor_free(logits); prn_tensor_free(ce); prn_tensor_free(m); prn_tensor_free(ms);
        prn_tensor_free(loss); prn_tensor_free(x); prn_tensor_free(onehot); prn_tensor_free(tvec);
        for (k = 0; k < NP; ++k) prn_tensor_free(params[k]);
        PRNT_CHECK(prn_live_tensors(ctx) == 0, "%s n=%ld: %lu tensors still alive after releasing all", r->label,
                   r->fa.fail_at, (unsigned long)prn_live_tensors(ctx));
        prn_context_free(ctx);
    }
    PRNT_CHECK(r->fa.live == 0 && r->fa.live_bytes == 0, "%s n=%ld: leak: %ld allocations, %lu bytes outstanding",
               r->label, r->fa.fail_at, r->fa.live, (unsigned long)r->fa.live_bytes);
    PRNT_CHECK(r->fa.bad_frees == 0, "%s n=%ld: %ld bad frees", r->label, r->fa.fail_at, r->fa.bad_frees);
    PRNT_CHECK(r->fa.misaligned == 0, "%s: misaligned blocks", r->label);
}

/* ------------------------------------------------------------------------
 * Drivers
 * ---------------------------------------------------------------------- */
static result g_base[2];
static long g_count[2];

static void baseline(prn_dtype dt) {
    run r;
    int i = dt == PRN_F64;
    memset(&r, 0, sizeof r);
    r.dt = dt;
    r.label = dt == PRN_F32 ? "f32 baseline" : "f64 baseline";
    train_step(&r);
    PRNT_CHECK(r.res.completed, "%s: the step did not complete", r.label);
    PRNT_CHECK(r.res.failed_calls == 0, "%s: %ld calls failed", r.label, r.res.failed_calls);
    PRNT_CHECK(r.fa.failures == 0, "%s: allocator refused", r.label);
    PRNT_CHECK(r.fa.count > 10, "%s: only %ld allocations", r.label, r.fa.count);
    PRNT_CHECK(r.res.loss[0] > 0 && r.res.loss[1] > 0, "%s: losses %g %g", r.label, r.res.loss[0], r.res.loss[1]);
    PRNT_CHECK(r.res.norm > 0.05, "%s: norm %g (clipping should scale)", r.label, r.res.norm);
    g_base[i] = r.res;
    g_count[i] = r.fa.count;
    printf("    %s: %ld allocations per step\n", r.label, r.fa.count);
    /* the step is deterministic: a second run gives the same bits */
    memset(&r, 0, sizeof r);
    r.dt = dt;
    r.label = "rerun";
    train_step(&r);
    PRNT_CHECK(r.fa.count == g_count[i], "rerun: %ld allocations, first run %ld", r.fa.count, g_count[i]);
    PRNT_CHECK(memcmp(r.res.params, g_base[i].params, sizeof r.res.params) == 0, "rerun: different parameters");
}

/* On a device backend each run builds the context's kernel programs again
 * (about 0.4 s per run with PoCL, 300+ runs per sweep), and the allocations
 * particular to the backend come first (state, program sources), the
 * generic code's after them (checked on every n by the reference pass). So
 * there the sweep takes n = 1..40, then every 16th, then the last four;
 * PRNT_FULL=1 sweeps every n. */
static int g_device_stride = 1;

static void sweep(prn_dtype dt, int from) {
    int i = dt == PRN_F64;
    long n, N = g_count[i], incomplete = 0, runs = 0, before = prnt_cur_failed;
    char label[64];
    if (N <= 0) { PRNT_CHECK(0, "no baseline"); return; }
    for (n = 1; n <= N + 1; n += (g_device_stride > 1 && n >= 40 && n < N - 3) ? g_device_stride : 1) {
        run r;
        memset(&r, 0, sizeof r);
        r.dt = dt;
        r.from = from;
        r.fa.fail_at = n;
        r.fa.from = from;
        snprintf(label, sizeof label, "%s %s", prn_dtype_name(dt), from ? "from" : "single");
        r.label = label;
        train_step(&r);
        if (n <= N) runs++;
        if (n <= N) PRNT_CHECK(r.fa.failures >= 1, "%s n=%ld: allocator never refused", label, n);
        else PRNT_CHECK(r.fa.failures == 0, "%s n=%ld: allocator refused", label, n);
        if (!from || n > N) {
            /* exactly one refusal, retried: the step ends as without failures */
            PRNT_CHECK(r.res.completed, "%s n=%ld: step did not complete", label, n);
            PRNT_CHECK(r.fa.failures <= 1, "%s n=%ld: %ld refusals", label, n, r.fa.failures);
            if (r.res.completed) {
                PRNT_CHECK(memcmp(r.res.loss, g_base[i].loss, sizeof r.res.loss) == 0, "%s n=%ld: losses differ", label, n);
                PRNT_CHECK(memcmp(r.res.params, g_base[i].params, sizeof r.res.params) == 0,
                           "%s n=%ld: parameters differ from the run without failures", label, n);
            }
        } else if (!r.res.completed) {
            incomplete++;
        }
        /* a refusal must be reported by some call (or the results must be intact, checked above) */
        if (from && n <= N)
            PRNT_CHECK(r.res.failed_calls > 0 || r.res.completed, "%s n=%ld: refusal not reported", label, n);
        if (prnt_cur_failed - before > 40) { printf("    (stopping %s sweep: too many failures)\n", label); break; }
    }
    if (from) printf("    %s from-n: %ld of %ld runs abandoned the step\n", prn_dtype_name(dt), incomplete, runs);
}

static void test_baseline_f32(void) { baseline(PRN_F32); }
static void test_baseline_f64(void) { baseline(PRN_F64); }
static void test_fail_single_f32(void) { sweep(PRN_F32, 0); }
static void test_fail_from_f32(void) { sweep(PRN_F32, 1); }
static void test_fail_single_f64(void) { sweep(PRN_F64, 0); }
static void test_fail_from_f64(void) { sweep(PRN_F64, 1); }

/* The context allocation itself failing: the message goes to err_buf. */
static void test_context_create_oom(void) {
    fa_state fa;
    prn_config cfg;
    prn_context *c = SENT_C;
    char err[256] = "";
    prn_status st;
    memset(&fa, 0, sizeof fa);
    fa.fail_at = 1;
    memset(&cfg, 0, sizeof cfg);
    cfg.allocator.alloc = fa_alloc;
    cfg.allocator.free = fa_free;
    cfg.allocator.user = &fa;
    st = prn_context_create(&cfg, &c, err, sizeof err);
    PRNT_CHECK(st == PRN_ERR_OUT_OF_MEMORY, "got %s", prn_status_string(st));
    PRNT_CHECK(c == SENT_C, "*out written");
    PRNT_CHECK(strstr(err, "prn_context_create") != NULL, "err_buf \"%s\"", err);
    PRNT_CHECK(fa.live == 0, "leak");
}

/* A big tensor whose buffer cannot be had: OOM with the function named. */
static void test_huge_tensor(void) {
    fa_state fa;
    prn_config cfg;
    prn_context *ctx = NULL;
    prn_tensor *t = SENT_T;
    size_t sh[2] = {(size_t)1 << 20, (size_t)1 << 20};
    char err[256];
    memset(&fa, 0, sizeof fa);
    memset(&cfg, 0, sizeof cfg);
    cfg.allocator.alloc = fa_alloc;
    cfg.allocator.free = fa_free;
    cfg.allocator.user = &fa;
    PRNT_STATUS(NULL, prn_context_create(&cfg, &ctx, err, sizeof err), PRN_OK);
    if (!ctx) return;
    fa.fail_at = fa.count + 1;
    fa.from = 1;
    PRNT_STATUS(ctx, prn_tensor_create(ctx, PRN_F64, 2, sh, &t), PRN_ERR_OUT_OF_MEMORY);
    PRNT_CHECK(t == SENT_T, "*out written");
    PRNT_CHECK(strstr(prn_last_error(ctx), "prn_tensor_create") != NULL, "message \"%s\"", prn_last_error(ctx));
    PRNT_CHECK(prn_live_tensors(ctx) == 0, "live tensors");
    prn_context_free(ctx);
    PRNT_CHECK(fa.live == 0, "leak");
}

int main(void) {
    {
        prn_context *c = NULL;
        const char *full = getenv("PRNT_FULL");
        if (prn_context_create(NULL, &c, NULL, 0) == PRN_OK) {
            const char *name = prn_context_backend_name(c);
            printf("backend: %s\n", name);
            if (strncmp(name, "reference", 9) != 0 && !(full && *full == '1')) {
                g_device_stride = 16;
                printf("note: device backend: failing allocations n = 1..40, every 16th, and the last four "
                       "(PRNT_FULL=1: every n)\n");
            }
            prn_context_free(c);
        }
    }
    PRNT_RUN(test_context_create_oom);
    PRNT_RUN(test_huge_tensor);
    PRNT_RUN(test_baseline_f32);
    PRNT_RUN(test_baseline_f64);
    PRNT_RUN(test_fail_single_f32);
    PRNT_RUN(test_fail_from_f32);
    PRNT_RUN(test_fail_single_f64);
    PRNT_RUN(test_fail_from_f64);
    return prnt_summary();
}
