/* The tape, custom ops, optimisers, contexts and the random generator. */
#define _POSIX_C_SOURCE 200112L
#include "parrnn.h"
#include "prn_test.h"
#include <pthread.h>

static prn_context *ctx;

static void set_grad(prn_tensor *w, const double *g, size_t n);
static prn_tensor *vec(size_t n, const double *v) {
    prn_tensor *t = NULL;
    prn_tensor_from_host(ctx, PRN_F64, 1, &n, v, &t);
    return t;
}
static double get(const prn_tensor *t, size_t i) {
    double v[64];
    if (!t || prn_tensor_numel(t) > 64 || prn_tensor_download(t, v, prn_tensor_numel(t)) != PRN_OK) return NAN;
    return v[i];
}

static void test_reuse_accumulates(void) {
    /* y = sum(x*x + x): dy/dx = 2x + 1, x used three times */
    const double xv[3] = {1, -2, 0.5};
    prn_tensor *x = vec(3, xv), *sq = NULL, *s = NULL, *y = NULL;
    int i;
    prn_tensor_set_requires_grad(x, 1);
    PRNT_OK(ctx, prn_mul(ctx, x, x, &sq));
    PRNT_OK(ctx, prn_add(ctx, sq, x, &s));
    PRNT_OK(ctx, prn_sum(ctx, s, PRN_ALL_AXES, 0, &y));
    PRNT_CHECK(prn_tape_size(ctx) == 3, "tape has %zu records", prn_tape_size(ctx));
    PRNT_OK(ctx, prn_backward(ctx, y));
    for (i = 0; i < 3; ++i) PRNT_CHECK(get(prn_tensor_grad(x), i) == 2 * xv[i] + 1, "grad[%d]", i);
    PRNT_CHECK(prn_tape_size(ctx) == 0, "backward releases the records it ran");
    /* a second backward over a new graph accumulates into .grad */
    prn_tensor_free(y); y = NULL;
    PRNT_OK(ctx, prn_sum(ctx, x, PRN_ALL_AXES, 0, &y));
    PRNT_OK(ctx, prn_backward(ctx, y));
    for (i = 0; i < 3; ++i) PRNT_CHECK(get(prn_tensor_grad(x), i) == 2 * xv[i] + 2, "accumulated grad[%d]", i);
    prn_tensor_zero_grad(x);
    PRNT_CHECK(prn_tensor_grad(x) == NULL, "zero_grad drops the gradient");
    prn_tensor_free(x); prn_tensor_free(sq); prn_tensor_free(s); prn_tensor_free(y);
}

static void test_free_intermediates_early(void) {
    /* The tape keeps what backward needs, so callers may free at once. */
    const double xv[2] = {0.3, -0.7};
    prn_tensor *x = vec(2, xv), *t = NULL, *e = NULL, *y = NULL;
    prn_tensor_set_requires_grad(x, 1);
    PRNT_OK(ctx, prn_tanh(ctx, x, &t));
    PRNT_OK(ctx, prn_exp(ctx, t, &e));
    prn_tensor_free(t);
    PRNT_OK(ctx, prn_sum(ctx, e, PRN_ALL_AXES, 0, &y));
    prn_tensor_free(e);
    PRNT_OK(ctx, prn_backward(ctx, y));
    {
        double th = tanh(xv[1]), want = exp(th) * (1 - th * th);
        PRNT_CHECK(fabs(get(prn_tensor_grad(x), 1) - want) < 1e-14, "grad %g want %g", get(prn_tensor_grad(x), 1), want);
    }
    prn_tensor_free(y);
    prn_tensor_free(x);
    PRNT_CHECK(prn_live_tensors(ctx) == 0, "live tensors after freeing all: %zu", prn_live_tensors(ctx));
}

static void test_no_grad(void) {
    const double xv[2] = {1, 2};
    prn_tensor *x = vec(2, xv), *a = NULL, *b = NULL, *c = NULL;
    prn_tensor_set_requires_grad(x, 1);
    prn_no_grad_begin(ctx);
    prn_no_grad_begin(ctx);
    PRNT_OK(ctx, prn_exp(ctx, x, &a));
    prn_no_grad_end(ctx);
    PRNT_CHECK(!prn_grad_enabled(ctx), "still inside the outer region");
    PRNT_OK(ctx, prn_exp(ctx, x, &b));
    prn_no_grad_end(ctx);
    PRNT_CHECK(prn_grad_enabled(ctx), "regions closed");
    PRNT_CHECK(prn_tape_size(ctx) == 0 && !prn_tensor_requires_grad(a) && !prn_tensor_requires_grad(b),
               "nothing recorded in no-grad regions");
    PRNT_OK(ctx, prn_exp(ctx, x, &c));
    PRNT_CHECK(prn_tape_size(ctx) == 1 && prn_tensor_requires_grad(c), "recorded outside");
    prn_tape_clear(ctx);
    PRNT_CHECK(prn_tape_size(ctx) == 0, "tape_clear");
    prn_tensor_free(x); prn_tensor_free(a); prn_tensor_free(b); prn_tensor_free(c);
}

/* A custom op: y = x^3 elementwise, with its own backward 3x^2 g. */
static int cube_freed;
static void cube_free(void *user) { cube_freed += *(int *)user; }
static prn_status cube_backward(prn_context *c, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    prn_tensor *sq = NULL, *t = NULL;
    prn_status s = prn_pow_scalar(c, op->inputs[0], 2, &sq);
    if (s == PRN_OK) s = prn_scale(c, sq, 3, &t);
    if (s == PRN_OK) s = prn_mul(c, t, g, &gin[0]);
    prn_tensor_free(sq); prn_tensor_free(t);
    PRNT_CHECK(!prn_grad_enabled(c), "backward runs without recording");
    PRNT_CHECK(op->needs_grad[0] == 1 && op->user && *(int *)op->user == 5, "op fields");
    return s;
}
static prn_status cube(prn_tensor *x, prn_tensor **out, int *user) {
    prn_tensor *y = NULL;
    prn_status s;
    prn_no_grad_begin(ctx);
    s = prn_pow_scalar(ctx, x, 3, &y);
    prn_no_grad_end(ctx);
    if (s != PRN_OK) return s;
    s = prn_tape_record(ctx, "cube", &x, 1, y, cube_backward, user, cube_free);
    if (s != PRN_OK) { prn_tensor_free(y); return s; }
    *out = y;
    return PRN_OK;
}
static void test_custom_op(void) {
    const double xv[3] = {1, -2, 0.5};
    static int five = 5;
    prn_tensor *x = vec(3, xv), *y = NULL, *s = NULL, *plain = NULL;
    int i;
    cube_freed = 0;
    prn_tensor_set_requires_grad(x, 1);
    PRNT_OK(ctx, cube(x, &y, &five));
    PRNT_OK(ctx, prn_sum(ctx, y, PRN_ALL_AXES, 0, &s));
    PRNT_OK(ctx, prn_backward(ctx, s));
    for (i = 0; i < 3; ++i) PRNT_CHECK(get(prn_tensor_grad(x), i) == 3 * xv[i] * xv[i], "custom grad[%d]", i);
    PRNT_CHECK(cube_freed == 5, "user data freed with the record");
    /* Without anything requiring grad, user data is freed at once. */
    plain = vec(3, xv);
    prn_tensor_free(y); y = NULL;
    {
        prn_tensor *y2 = NULL;
        cube_freed = 0;
        PRNT_OK(ctx, cube(plain, &y2, &five));
        PRNT_CHECK(cube_freed == 5 && prn_tape_size(ctx) == 0, "nothing recorded, user freed");
        prn_tensor_free(y2);
    }
    prn_tensor_free(x); prn_tensor_free(s); prn_tensor_free(plain);
}

/* A backward that hands back its grad_output itself (identity op). */
static prn_status ident_backward(prn_context *c, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    (void)c; (void)op;
    gin[0] = prn_tensor_retain(g);
    return PRN_OK;
}
static void test_custom_op_shared_grad(void) {
    const double xv[2] = {1, 2};
    prn_tensor *x = vec(2, xv), *y = NULL, *z = NULL, *s = NULL;
    prn_tensor_set_requires_grad(x, 1);
    prn_no_grad_begin(ctx);
    prn_copy(ctx, x, &y);
    prn_no_grad_end(ctx);
    PRNT_OK(ctx, prn_tape_record(ctx, "ident", &x, 1, y, ident_backward, NULL, NULL));
    PRNT_OK(ctx, prn_add(ctx, y, x, &z));
    PRNT_OK(ctx, prn_sum(ctx, z, PRN_ALL_AXES, 0, &s));
    PRNT_OK(ctx, prn_backward(ctx, s));
    PRNT_CHECK(get(prn_tensor_grad(x), 0) == 2 && get(prn_tensor_grad(x), 1) == 2, "grad %g %g",
               get(prn_tensor_grad(x), 0), get(prn_tensor_grad(x), 1));
    prn_tensor_free(x); prn_tensor_free(y); prn_tensor_free(z); prn_tensor_free(s);
}

/* Backwards that hand back tensors the engine holds, without a reference
 * of their own: grad_output itself (an identity op) and an input. The engine
 * freed them once too often (use after free). */
static prn_status pass_backward(prn_context *c, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    (void)c; (void)op;
    gin[0] = g; /* not retained */
    return PRN_OK;
}
/* sum(x * w), only ever used as the loss (g == 1): d/dx = w, handed back as is */
static prn_status dot_loss_backward(prn_context *c, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    (void)c; (void)g;
    gin[0] = op->inputs[1];
    return PRN_OK;
}
static prn_status pass_both_backward(prn_context *c, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    (void)c; (void)op;
    gin[0] = gin[1] = g; /* the same tensor in two slots, no reference taken */
    return PRN_OK;
}
static prn_tensor *record_copy(prn_tensor *const *in, int n, prn_backward_fn bw) {
    prn_tensor *y = NULL;
    prn_no_grad_begin(ctx);
    prn_copy(ctx, in[0], &y);
    prn_no_grad_end(ctx);
    PRNT_OK(ctx, prn_tape_record(ctx, "custom", in, n, y, bw, NULL, NULL));
    return y;
}
static void test_custom_op_borrowed_grads(void) {
    const double xv[2] = {1, 2}, wv[2] = {-3, 0.5};
    prn_tensor *x = vec(2, xv), *w = vec(2, wv), *y = NULL, *z = NULL, *s = NULL, *d = NULL, *in[2];
    size_t live;
    prn_tensor_set_requires_grad(x, 1);
    /* identity, then x * ident(x): d/dx = 2x */
    y = record_copy(&x, 1, pass_backward);
    PRNT_OK(ctx, prn_mul(ctx, y, x, &z));
    PRNT_OK(ctx, prn_sum(ctx, z, PRN_ALL_AXES, 0, &s));
    PRNT_OK(ctx, prn_backward(ctx, s));
    PRNT_CHECK(get(prn_tensor_grad(x), 0) == 2 && get(prn_tensor_grad(x), 1) == 4, "identity grads %g %g",
               get(prn_tensor_grad(x), 0), get(prn_tensor_grad(x), 1));
    prn_tensor_free(y); prn_tensor_free(z); prn_tensor_free(s);
    /* an identity straight on the loss: the seed itself is passed through */
    prn_tensor_zero_grad(x);
    PRNT_OK(ctx, prn_sum(ctx, x, PRN_ALL_AXES, 0, &s));
    y = record_copy(&s, 1, pass_backward);
    PRNT_OK(ctx, prn_backward(ctx, y));
    PRNT_CHECK(get(prn_tensor_grad(x), 0) == 1 && get(prn_tensor_grad(x), 1) == 1, "seed passed through");
    prn_tensor_free(y); prn_tensor_free(s);
    /* the same borrowed tensor in two slots: op(x, y) = x, d/dx = d/dy = g */
    {
        prn_tensor *u = vec(2, wv);
        prn_tensor_zero_grad(x);
        prn_tensor_set_requires_grad(u, 1);
        in[0] = x; in[1] = u;
        y = record_copy(in, 2, pass_both_backward);
        PRNT_OK(ctx, prn_sum(ctx, y, PRN_ALL_AXES, 0, &s));
        PRNT_OK(ctx, prn_backward(ctx, s));
        PRNT_CHECK(get(prn_tensor_grad(x), 1) == 1 && get(prn_tensor_grad(u), 1) == 1, "both slots");
        prn_tensor_free(y); prn_tensor_free(s); prn_tensor_free(u);
    }
    /* an input handed back as the gradient of another */
    prn_tensor_zero_grad(x);
    live = prn_live_tensors(ctx);
    in[0] = x; in[1] = w;
    {
        prn_tensor *p = NULL;
        prn_no_grad_begin(ctx);
        prn_mul(ctx, x, w, &p);
        prn_sum(ctx, p, PRN_ALL_AXES, 0, &d);
        prn_no_grad_end(ctx);
        prn_tensor_free(p);
    }
    PRNT_OK(ctx, prn_tape_record(ctx, "dot_loss", in, 2, d, dot_loss_backward, NULL, NULL));
    PRNT_OK(ctx, prn_backward(ctx, d));
    PRNT_CHECK(get(prn_tensor_grad(x), 0) == -3 && get(prn_tensor_grad(x), 1) == 0.5, "input as gradient %g %g",
               get(prn_tensor_grad(x), 0), get(prn_tensor_grad(x), 1));
    PRNT_CHECK(get(w, 0) == -3 && get(w, 1) == 0.5, "the input itself is intact");
    prn_tensor_free(d);
    /* the grad is one new tensor, nothing else was freed or leaked */
    PRNT_CHECK(prn_live_tensors(ctx) == live + 1, "live tensors %zu, want %zu", prn_live_tensors(ctx), live + 1);
    prn_tensor_free(x); prn_tensor_free(w);
}

/* Several backward passes: each runs and releases the records that reach
 * its loss; a pass with nothing left to run says so. */
static void test_several_backwards(void) {
    const double xv[2] = {1, -2};
    prn_tensor *x = vec(2, xv), *sq = NULL, *l1 = NULL, *l2 = NULL, *e = NULL, *l3 = NULL, *ee = NULL, *l4 = NULL;
    prn_tensor *k = NULL;
    prn_tensor_set_requires_grad(x, 1);
    /* two independent losses: grads add up, whichever order */
    PRNT_OK(ctx, prn_mul(ctx, x, x, &sq));
    PRNT_OK(ctx, prn_sum(ctx, sq, PRN_ALL_AXES, 0, &l1));   /* 2x */
    PRNT_OK(ctx, prn_scale(ctx, x, 3, &k));
    PRNT_OK(ctx, prn_sum(ctx, k, PRN_ALL_AXES, 0, &l2));    /* 3 */
    PRNT_CHECK(prn_tape_size(ctx) == 4, "tape %zu", prn_tape_size(ctx));
    PRNT_OK(ctx, prn_backward(ctx, l1));
    PRNT_CHECK(prn_tape_size(ctx) == 2, "only l1's records released: tape %zu", prn_tape_size(ctx));
    PRNT_OK(ctx, prn_backward(ctx, l2));
    PRNT_CHECK(get(prn_tensor_grad(x), 0) == 5 && get(prn_tensor_grad(x), 1) == -1, "sum of both: %g %g",
               get(prn_tensor_grad(x), 0), get(prn_tensor_grad(x), 1));
    PRNT_CHECK(prn_tape_size(ctx) == 0, "tape %zu", prn_tape_size(ctx));
    /* a second pass over a released graph fails, changing nothing */
    PRNT_STATUS(ctx, prn_backward(ctx, l1), PRN_ERR_STATE);
    PRNT_CHECK(strstr(prn_last_error(ctx), "prn_backward") && strstr(prn_last_error(ctx), "'loss'"), "message: %s",
               prn_last_error(ctx));
    PRNT_CHECK(get(prn_tensor_grad(x), 0) == 5, "unchanged");
    /* so does one on an output whose record prn_tape_clear dropped */
    prn_tensor_free(l2); l2 = NULL;
    PRNT_OK(ctx, prn_sum(ctx, x, PRN_ALL_AXES, 0, &l2));
    prn_tape_clear(ctx);
    PRNT_STATUS(ctx, prn_backward(ctx, l2), PRN_ERR_STATE);
    PRNT_CHECK(get(prn_tensor_grad(x), 0) == 5 && get(prn_tensor_grad(x), 1) == -1, "unchanged");
    /* shared intermediate: the second loss needs a record the first released */
    prn_tensor_zero_grad(x);
    PRNT_OK(ctx, prn_exp(ctx, x, &e));
    PRNT_OK(ctx, prn_sum(ctx, e, PRN_ALL_AXES, 0, &l3));
    PRNT_OK(ctx, prn_mul(ctx, e, e, &ee));
    PRNT_OK(ctx, prn_sum(ctx, ee, PRN_ALL_AXES, 0, &l4));
    PRNT_OK(ctx, prn_backward(ctx, l3));
    PRNT_STATUS(ctx, prn_backward(ctx, l4), PRN_ERR_STATE);
    PRNT_CHECK(strstr(prn_last_error(ctx), "'mul'") != NULL, "message names the op: %s", prn_last_error(ctx));
    PRNT_CHECK(fabs(get(prn_tensor_grad(x), 1) - exp(-2.0)) < 1e-15, "first pass only");
    prn_tape_clear(ctx);
    /* the same with the first pass retained: exp(x) + 2 exp(2x) */
    prn_tensor_zero_grad(x);
    prn_tensor_free(e); prn_tensor_free(l3); prn_tensor_free(ee); prn_tensor_free(l4);
    PRNT_OK(ctx, prn_exp(ctx, x, &e));
    PRNT_OK(ctx, prn_sum(ctx, e, PRN_ALL_AXES, 0, &l3));
    PRNT_OK(ctx, prn_mul(ctx, e, e, &ee));
    PRNT_OK(ctx, prn_sum(ctx, ee, PRN_ALL_AXES, 0, &l4));
    PRNT_OK(ctx, prn_backward_retain(ctx, l3));
    PRNT_OK(ctx, prn_backward(ctx, l4));
    PRNT_CHECK(fabs(get(prn_tensor_grad(x), 1) - (exp(-2.0) + 2 * exp(-4.0))) < 1e-15, "retained: %.17g",
               get(prn_tensor_grad(x), 1));
    PRNT_CHECK(prn_tape_size(ctx) == 1, "l3's sum stays (l3 is held): tape %zu", prn_tape_size(ctx));
    prn_tensor_free(l3); l3 = NULL;
    prn_tensor_zero_grad(x);
    PRNT_OK(ctx, prn_sum(ctx, x, PRN_ALL_AXES, 0, &l3));
    PRNT_OK(ctx, prn_backward(ctx, l3));
    PRNT_CHECK(prn_tape_size(ctx) == 0, "unreachable records released too: tape %zu", prn_tape_size(ctx));
    /* a state carried into the next forward: through its released history
     * refused; a copy made with recording off is a leaf and cuts it */
    {
        prn_tensor *h = NULL, *lh = NULL, *h2 = NULL, *lh2 = NULL, *hc = NULL;
        prn_tensor_zero_grad(x);
        PRNT_OK(ctx, prn_tanh(ctx, x, &h));
        PRNT_OK(ctx, prn_sum(ctx, h, PRN_ALL_AXES, 0, &lh));
        PRNT_OK(ctx, prn_backward(ctx, lh));
        PRNT_OK(ctx, prn_mul(ctx, h, x, &h2));
        PRNT_OK(ctx, prn_sum(ctx, h2, PRN_ALL_AXES, 0, &lh2));
        PRNT_STATUS(ctx, prn_backward(ctx, lh2), PRN_ERR_STATE);
        prn_tensor_free(h2); prn_tensor_free(lh2); h2 = lh2 = NULL;
        prn_tape_clear(ctx);
        prn_no_grad_begin(ctx);
        PRNT_OK(ctx, prn_copy(ctx, h, &hc));
        prn_no_grad_end(ctx);
        PRNT_OK(ctx, prn_mul(ctx, hc, x, &h2));
        PRNT_OK(ctx, prn_sum(ctx, h2, PRN_ALL_AXES, 0, &lh2));
        PRNT_OK(ctx, prn_backward(ctx, lh2)); /* first pass 1 - tanh^2, then tanh (the state a constant) */
        PRNT_CHECK(fabs(get(prn_tensor_grad(x), 1) - (1 - tanh(-2.0) * tanh(-2.0) + tanh(-2.0))) < 1e-15,
                   "carried state: %.17g", get(prn_tensor_grad(x), 1));
        prn_tensor_free(h); prn_tensor_free(lh); prn_tensor_free(h2); prn_tensor_free(lh2); prn_tensor_free(hc);
    }
    /* a leaf loss: .grad += 1 */
    {
        prn_tensor *one = NULL, *g;
        prn_tensor_full(ctx, PRN_F64, 0, NULL, 2.0, &one);
        prn_tensor_set_requires_grad(one, 1);
        PRNT_OK(ctx, prn_backward(ctx, one));
        PRNT_OK(ctx, prn_backward(ctx, one));
        g = prn_tensor_grad(one);
        PRNT_CHECK(g && get(g, 0) == 2, "leaf loss grad %g", get(g, 0));
        prn_tensor_free(one);
    }
    prn_tensor_free(x); prn_tensor_free(sq); prn_tensor_free(l1); prn_tensor_free(l2); prn_tensor_free(k);
    prn_tensor_free(e); prn_tensor_free(l3); prn_tensor_free(ee); prn_tensor_free(l4);
}

/* A tensor the tape saved, written before the backward: refused, nothing
 * changes; the gradient would otherwise use the new values. */
static void test_saved_tensor_written(void) {
    const double xv[2] = {1, 2}, cv[2] = {3, 4}, nv[2] = {30, 40};
    prn_tensor *x = vec(2, xv), *c = vec(2, cv), *p = NULL, *l = NULL, *e = NULL, *r = NULL, *l2 = NULL;
    prn_tensor *other = vec(2, cv), *po = NULL;
    prn_optim *o = NULL;
    size_t tape;
    prn_tensor_set_requires_grad(x, 1);
    /* upload into a saved input */
    PRNT_OK(ctx, prn_mul(ctx, x, c, &p));
    PRNT_OK(ctx, prn_sum(ctx, p, PRN_ALL_AXES, 0, &l));
    PRNT_OK(ctx, prn_mul(ctx, other, x, &po)); /* a graph the loss does not reach */
    PRNT_OK(ctx, prn_tensor_upload(c, nv, 2));
    PRNT_OK(ctx, prn_tensor_fill(other, 7));   /* not reached: no matter */
    tape = prn_tape_size(ctx);
    PRNT_STATUS(ctx, prn_backward(ctx, l), PRN_ERR_STATE);
    PRNT_CHECK(strstr(prn_last_error(ctx), "prn_backward") && strstr(prn_last_error(ctx), "input 1 of op 'mul'"),
               "message: %s", prn_last_error(ctx));
    PRNT_CHECK(prn_tensor_grad(x) == NULL && prn_tape_size(ctx) == tape, "no gradient, tape kept");
    prn_tape_clear(ctx);
    prn_tensor_free(p); prn_tensor_free(l); p = l = NULL;
    /* fill of exp's output (saved for its backward; sum's input too, which
     * is checked first) */
    PRNT_OK(ctx, prn_exp(ctx, x, &e));
    PRNT_OK(ctx, prn_sum(ctx, e, PRN_ALL_AXES, 0, &l));
    PRNT_OK(ctx, prn_tensor_fill(e, 0));
    PRNT_STATUS(ctx, prn_backward(ctx, l), PRN_ERR_STATE);
    PRNT_CHECK(strstr(prn_last_error(ctx), "input 0 of op 'sum'") != NULL, "message: %s", prn_last_error(ctx));
    PRNT_CHECK(prn_tensor_grad(x) == NULL, "no gradient");
    prn_tape_clear(ctx);
    prn_tensor_free(l); prn_tensor_free(e); l = e = NULL;
    /* an earlier record on the path, a later one intact: checked before
     * anything runs, so no gradient at all */
    PRNT_OK(ctx, prn_mul(ctx, x, c, &p));
    PRNT_OK(ctx, prn_sum(ctx, p, PRN_ALL_AXES, 0, &l));
    PRNT_OK(ctx, prn_reshape(ctx, x, 1, (const size_t[]){2}, &r));
    PRNT_OK(ctx, prn_sum(ctx, r, PRN_ALL_AXES, 0, &l2));
    PRNT_OK(ctx, prn_add(ctx, l, l2, &e));
    prn_tensor_free(l2); l2 = e; e = NULL;
    PRNT_OK(ctx, prn_tensor_fill(c, 1));
    PRNT_STATUS(ctx, prn_backward(ctx, l2), PRN_ERR_STATE);
    PRNT_CHECK(prn_tensor_grad(x) == NULL, "no gradient");
    prn_tape_clear(ctx);
    prn_tensor_free(p); prn_tensor_free(l); prn_tensor_free(r); prn_tensor_free(l2);
    /* an optimiser step between the forward and the backward */
    {
        const double g[2] = {1, 1};
        set_grad(x, g, 2);
        PRNT_OK(ctx, prn_optim_sgd_create(ctx, &x, 1, NULL, &o));
        PRNT_OK(ctx, prn_mul(ctx, x, x, &p));
        PRNT_OK(ctx, prn_sum(ctx, p, PRN_ALL_AXES, 0, &l));
        PRNT_OK(ctx, prn_optim_step(o));
        PRNT_STATUS(ctx, prn_backward(ctx, l), PRN_ERR_STATE);
        PRNT_CHECK(get(prn_tensor_grad(x), 0) == 1, "grad unchanged");
        prn_tape_clear(ctx);
        /* a fresh forward after the step is fine */
        prn_tensor_free(p); prn_tensor_free(l);
        PRNT_OK(ctx, prn_mul(ctx, x, x, &p));
        PRNT_OK(ctx, prn_sum(ctx, p, PRN_ALL_AXES, 0, &l));
        PRNT_OK(ctx, prn_backward(ctx, l));
        prn_optim_free(o);
    }
    prn_tensor_free(x); prn_tensor_free(c); prn_tensor_free(p); prn_tensor_free(l); prn_tensor_free(other);
    prn_tensor_free(po);
    prn_tape_clear(ctx);
}

/* A backward that fails: nothing changes, the tape is kept. */
static int fail_now;
static prn_status failing_backward(prn_context *c, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    (void)op;
    if (fail_now) return prn_set_error(c, PRN_ERR_BACKEND, "failing_backward: asked to fail");
    return prn_copy(c, g, &gin[0]);
}
static void test_backward_failure_keeps_state(void) {
    const double xv[2] = {1, 2};
    prn_tensor *x = vec(2, xv), *y = NULL, *z = NULL, *s = NULL, *e = NULL;
    size_t tape;
    prn_tensor_set_requires_grad(x, 1);
    /* an existing gradient that must survive the failed pass */
    PRNT_OK(ctx, prn_sum(ctx, x, PRN_ALL_AXES, 0, &e));
    PRNT_OK(ctx, prn_backward(ctx, e));
    prn_no_grad_begin(ctx);
    prn_copy(ctx, x, &y);
    prn_no_grad_end(ctx);
    PRNT_OK(ctx, prn_tape_record(ctx, "fails", &x, 1, y, failing_backward, NULL, NULL));
    PRNT_OK(ctx, prn_mul(ctx, y, x, &z));
    PRNT_OK(ctx, prn_sum(ctx, z, PRN_ALL_AXES, 0, &s));
    tape = prn_tape_size(ctx);
    fail_now = 1;
    PRNT_STATUS(ctx, prn_backward(ctx, s), PRN_ERR_BACKEND);
    PRNT_CHECK(strstr(prn_last_error(ctx), "failing_backward") != NULL, "message kept: %s", prn_last_error(ctx));
    PRNT_CHECK(prn_tape_size(ctx) == tape, "tape kept");
    PRNT_CHECK(get(prn_tensor_grad(x), 0) == 1 && get(prn_tensor_grad(x), 1) == 1, "grad unchanged");
    fail_now = 0;
    PRNT_OK(ctx, prn_backward(ctx, s)); /* retry works: d/dx (x*x) = 2x, plus the old 1 */
    PRNT_CHECK(get(prn_tensor_grad(x), 0) == 3 && get(prn_tensor_grad(x), 1) == 5, "grad after retry %g %g",
               get(prn_tensor_grad(x), 0), get(prn_tensor_grad(x), 1));
    prn_tensor_free(x); prn_tensor_free(y); prn_tensor_free(z); prn_tensor_free(s); prn_tensor_free(e);
}

/* Tape-changing calls from inside a backward function are refused. */
static prn_tensor *meddling_loss;
static prn_status meddling_backward(prn_context *c, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    prn_tensor *t = NULL;
    prn_status s;
    (void)op;
    prn_tape_clear(c);
    PRNT_CHECK(prn_last_status(c) == PRN_ERR_STATE, "tape_clear refused: %s", prn_last_error(c));
    PRNT_CHECK(prn_backward(c, meddling_loss) == PRN_ERR_STATE, "nested backward refused: %s", prn_last_error(c));
    prn_no_grad_end(c);
    s = prn_exp(c, op->inputs[0], &t);
    PRNT_CHECK(s == PRN_ERR_STATE && t == NULL, "recording refused: %s", prn_last_error(c));
    prn_no_grad_begin(c);
    return prn_copy(c, g, &gin[0]);
}
static void test_backward_guards(void) {
    const double xv[2] = {1, 2};
    prn_tensor *x = vec(2, xv), *e = NULL, *y = NULL, *s = NULL;
    prn_tensor_set_requires_grad(x, 1);
    PRNT_OK(ctx, prn_exp(ctx, x, &e));
    prn_no_grad_begin(ctx);
    prn_copy(ctx, e, &y);
    prn_no_grad_end(ctx);
    PRNT_OK(ctx, prn_tape_record(ctx, "meddler", &e, 1, y, meddling_backward, NULL, NULL));
    prn_tensor_free(e);
    PRNT_OK(ctx, prn_sum(ctx, y, PRN_ALL_AXES, 0, &s));
    meddling_loss = s;
    PRNT_OK(ctx, prn_backward(ctx, s));
    PRNT_CHECK(fabs(get(prn_tensor_grad(x), 1) - exp(2.0)) < 1e-12, "grad through the guarded op");
    prn_tensor_free(x); prn_tensor_free(y); prn_tensor_free(s);
}

/* ---- optimisers ---------------------------------------------------------- */
static void set_grad(prn_tensor *w, const double *g, size_t n) {
    /* grad of sum(w * g) is g */
    prn_tensor *gt = vec(n, g), *p = NULL, *s = NULL;
    prn_tensor_zero_grad(w);
    prn_mul(ctx, w, gt, &p);
    prn_sum(ctx, p, PRN_ALL_AXES, 0, &s);
    prn_backward(ctx, s);
    prn_tensor_free(gt); prn_tensor_free(p); prn_tensor_free(s);
}
static void test_sgd(void) {
    const double w0[2] = {1, -1}, g[2] = {0.5, 2};
    prn_tensor *w = vec(2, w0);
    prn_optim *o = NULL;
    prn_sgd_config c;
    double v[2], wv[2];
    int i, k;
    prn_tensor_set_requires_grad(w, 1);
    memset(&c, 0, sizeof c);
    c.lr = 0.1; c.momentum = 0.9;
    PRNT_OK(ctx, prn_optim_sgd_create(ctx, &w, 1, &c, &o));
    for (i = 0; i < 2; ++i) { v[i] = 0; wv[i] = w0[i]; }
    for (k = 0; k < 3; ++k) {
        set_grad(w, g, 2);
        PRNT_OK(ctx, prn_optim_step(o));
        for (i = 0; i < 2; ++i) { v[i] = 0.9 * v[i] + g[i]; wv[i] -= 0.1 * v[i]; }
    }
    for (i = 0; i < 2; ++i) PRNT_CHECK(fabs(get(w, i) - wv[i]) < 1e-14, "sgd momentum w[%d] %g want %g", i, get(w, i), wv[i]);
    prn_optim_zero_grad(o);
    PRNT_CHECK(prn_tensor_grad(w) == NULL, "optim_zero_grad");
    PRNT_OK(ctx, prn_optim_step(o)); /* no gradient: nothing moves */
    for (i = 0; i < 2; ++i) PRNT_CHECK(fabs(get(w, i) - wv[i]) < 1e-14, "no-grad step moved w");
    prn_optim_free(o);
    /* nesterov + weight decay, one step from zero velocity */
    {
        prn_tensor *u = vec(2, w0);
        prn_tensor_set_requires_grad(u, 1);
        c.nesterov = 1; c.weight_decay = 0.01;
        PRNT_OK(ctx, prn_optim_sgd_create(ctx, &u, 1, &c, &o));
        set_grad(u, g, 2);
        PRNT_OK(ctx, prn_optim_step(o));
        for (i = 0; i < 2; ++i) {
            double d = g[i] + 0.01 * w0[i], vel = d, want = w0[i] - 0.1 * (d + 0.9 * vel);
            PRNT_CHECK(fabs(get(u, i) - want) < 1e-14, "nesterov u[%d] %g want %g", i, get(u, i), want);
        }
        prn_optim_free(o);
        prn_tensor_free(u);
    }
    prn_tensor_free(w);
}

static void test_adam(void) {
    const double w0[3] = {1, -1, 0.5}, g[3] = {0.5, -2, 1e-3};
    prn_tensor *w = vec(3, w0);
    prn_optim *o = NULL;
    double m[3] = {0, 0, 0}, v[3] = {0, 0, 0}, wv[3];
    int i, k;
    prn_tensor_set_requires_grad(w, 1);
    PRNT_OK(ctx, prn_optim_adam_create(ctx, &w, 1, NULL, &o)); /* defaults: 1e-3, 0.9, 0.999, 1e-8 */
    memcpy(wv, w0, sizeof wv);
    for (k = 1; k <= 3; ++k) {
        set_grad(w, g, 3);
        PRNT_OK(ctx, prn_optim_step(o));
        for (i = 0; i < 3; ++i) {
            m[i] = 0.9 * m[i] + 0.1 * g[i];
            v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
            wv[i] -= 1e-3 * (m[i] / (1 - pow(0.9, k))) / (sqrt(v[i] / (1 - pow(0.999, k))) + 1e-8);
        }
    }
    for (i = 0; i < 3; ++i) PRNT_CHECK(fabs(get(w, i) - wv[i]) < 1e-13, "adam w[%d] %.15g want %.15g", i, get(w, i), wv[i]);
    prn_optim_free(o);
    prn_tensor_free(w);
}

static void test_adam_per_parameter_steps(void) {
    /* a parameter that first gets a gradient later still takes a full first step */
    const double w0[1] = {1}, g[1] = {0.5};
    prn_tensor *a = vec(1, w0), *b = vec(1, w0), *ps[2];
    prn_optim *o = NULL;
    prn_adam_config c;
    memset(&c, 0, sizeof c);
    c.lr = 0.1;
    prn_tensor_set_requires_grad(a, 1);
    prn_tensor_set_requires_grad(b, 1);
    ps[0] = a; ps[1] = b;
    PRNT_OK(ctx, prn_optim_adam_create(ctx, ps, 2, &c, &o));
    set_grad(a, g, 1);
    PRNT_OK(ctx, prn_optim_step(o));
    PRNT_OK(ctx, prn_optim_step(o));
    set_grad(b, g, 1);
    prn_tensor_zero_grad(a);
    PRNT_OK(ctx, prn_optim_step(o));
    /* Adam's first step moves by lr (up to eps) */
    PRNT_CHECK(fabs(get(b, 0) - (1 - 0.1)) < 1e-6, "b's first step: %.9f", get(b, 0));
    c.beta1 = NAN;
    { prn_optim *o2 = NULL; PRNT_STATUS(ctx, prn_optim_adam_create(ctx, ps, 2, &c, &o2), PRN_ERR_INVALID_ARGUMENT); }
    PRNT_STATUS(ctx, prn_optim_set_lr(o, HUGE_VAL), PRN_ERR_INVALID_ARGUMENT);
    prn_optim_free(o);
    prn_tensor_free(a); prn_tensor_free(b);
}

static void test_adam_converges(void) {
    /* minimise mean((x A - b)^2) in f32 */
    const size_t sa[2] = {4, 4}, sx[2] = {1, 4};
    prn_tensor *A = NULL, *b = NULL, *x = NULL;
    prn_optim *o = NULL;
    prn_adam_config c;
    double first = 0, last = 0;
    int it;
    memset(&c, 0, sizeof c);
    c.lr = 0.05;
    prn_seed(ctx, 99);
    prn_tensor_normal(ctx, PRN_F32, 2, sa, 0, 1, &A);
    prn_tensor_normal(ctx, PRN_F32, 2, sx, 0, 1, &b);
    prn_tensor_create(ctx, PRN_F32, 2, sx, &x);
    prn_tensor_set_requires_grad(x, 1);
    PRNT_OK(ctx, prn_optim_adam_create(ctx, &x, 1, &c, &o));
    for (it = 0; it < 400; ++it) {
        prn_tensor *p = NULL, *l = NULL;
        double lv = 0;
        prn_optim_zero_grad(o);
        prn_matmul(ctx, x, A, &p);
        prn_mse(ctx, p, b, &l);
        prn_tensor_item(l, &lv);
        if (it == 0) first = lv;
        last = lv;
        prn_backward(ctx, l);
        prn_clip_grad_norm(ctx, &x, 1, 10.0, NULL);
        prn_optim_step(o);
        prn_tensor_free(p); prn_tensor_free(l);
    }
    PRNT_CHECK(last < 1e-4 * first, "loss %g -> %g", first, last);
    prn_optim_free(o);
    prn_tensor_free(A); prn_tensor_free(b); prn_tensor_free(x);
}

static void test_clip_grad_norm(void) {
    const double w0[2] = {0, 0}, g1[2] = {3, 0}, g2[2] = {0, 4};
    prn_tensor *a = vec(2, w0), *b = vec(2, w0), *ps[2];
    double norm = 0;
    prn_tensor_set_requires_grad(a, 1);
    prn_tensor_set_requires_grad(b, 1);
    set_grad(a, g1, 2);
    set_grad(b, g2, 2);
    ps[0] = a; ps[1] = b;
    PRNT_OK(ctx, prn_clip_grad_norm(ctx, ps, 2, 10.0, &norm));
    PRNT_CHECK(fabs(norm - 5) < 1e-14 && get(prn_tensor_grad(a), 0) == 3, "no clipping below max: norm %g", norm);
    PRNT_OK(ctx, prn_clip_grad_norm(ctx, ps, 2, 1.0, &norm));
    PRNT_CHECK(fabs(get(prn_tensor_grad(a), 0) - 0.6) < 1e-12 && fabs(get(prn_tensor_grad(b), 1) - 0.8) < 1e-12,
               "clipped to 0.6 0.8: %g %g", get(prn_tensor_grad(a), 0), get(prn_tensor_grad(b), 1));
    prn_tensor_free(a); prn_tensor_free(b);
}

/* A parameter listed twice: an optimiser would step it twice, clipping
 * would count it twice. */
static void test_duplicate_params(void) {
    const double w0[2] = {1, 1}, g[2] = {3, 4};
    prn_tensor *w = vec(2, w0), *u = vec(2, w0), *ps[3], *view = NULL;
    prn_optim *o = NULL;
    double norm = 0;
    prn_tensor_set_requires_grad(w, 1);
    prn_tensor_set_requires_grad(u, 1);
    ps[0] = w; ps[1] = u; ps[2] = w;
    PRNT_STATUS(ctx, prn_optim_sgd_create(ctx, ps, 3, NULL, &o), PRN_ERR_INVALID_ARGUMENT);
    PRNT_CHECK(o == NULL && strstr(prn_last_error(ctx), "params[2]") && strstr(prn_last_error(ctx), "params[0]"),
               "message: %s", prn_last_error(ctx));
    PRNT_STATUS(ctx, prn_optim_adam_create(ctx, ps, 3, NULL, &o), PRN_ERR_INVALID_ARGUMENT);
    /* two tensors on one storage (a view made without recording) */
    prn_no_grad_begin(ctx);
    PRNT_OK(ctx, prn_reshape(ctx, u, 2, (const size_t[]){1, 2}, &view));
    prn_no_grad_end(ctx);
    prn_tensor_set_requires_grad(view, 1);
    ps[2] = view;
    PRNT_STATUS(ctx, prn_optim_sgd_create(ctx, ps, 3, NULL, &o), PRN_ERR_INVALID_ARGUMENT);
    PRNT_CHECK(strstr(prn_last_error(ctx), "storage") != NULL, "message: %s", prn_last_error(ctx));
    /* clipping counts and scales w once: norm 5 */
    set_grad(w, g, 2);
    ps[0] = w; ps[1] = w;
    PRNT_OK(ctx, prn_clip_grad_norm(ctx, ps, 2, 1.0, &norm));
    PRNT_CHECK(fabs(norm - 5) < 1e-14, "norm %g, want 5", norm);
    PRNT_CHECK(fabs(get(prn_tensor_grad(w), 0) - 0.6) < 1e-12 && fabs(get(prn_tensor_grad(w), 1) - 0.8) < 1e-12,
               "scaled once: %g %g", get(prn_tensor_grad(w), 0), get(prn_tensor_grad(w), 1));
    prn_tensor_free(w); prn_tensor_free(u); prn_tensor_free(view);
}

/* ---- contexts ------------------------------------------------------------ */
typedef struct { uint64_t seed; double result; int ok; } job;
/* A small deterministic training run on a private context. */
static void *train_job(void *arg) {
    job *j = (job *)arg;
    prn_context *c = NULL;
    prn_config cfg;
    const size_t sw[2] = {8, 8}, sx[2] = {16, 8};
    prn_tensor *w = NULL, *x = NULL, *t = NULL;
    prn_optim *o = NULL;
    int it;
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = j->seed;
    cfg.num_threads = 1;
    j->ok = prn_context_create(&cfg, &c, NULL, 0) == PRN_OK;
    if (!j->ok) return NULL;
    j->ok = prn_tensor_normal(c, PRN_F64, 2, sw, 0, 0.3, &w) == PRN_OK &&
            prn_tensor_uniform(c, PRN_F64, 2, sx, -1, 1, &x) == PRN_OK &&
            prn_tensor_uniform(c, PRN_F64, 2, sx, -1, 1, &t) == PRN_OK &&
            prn_tensor_set_requires_grad(w, 1) == PRN_OK && prn_optim_adam_create(c, &w, 1, NULL, &o) == PRN_OK;
    for (it = 0; j->ok && it < 50; ++it) {
        prn_tensor *h = NULL, *a = NULL, *l = NULL;
        prn_optim_zero_grad(o);
        j->ok = prn_matmul(c, x, w, &h) == PRN_OK && prn_tanh(c, h, &a) == PRN_OK && prn_mse(c, a, t, &l) == PRN_OK &&
                prn_backward(c, l) == PRN_OK && prn_optim_step(o) == PRN_OK && prn_tensor_item(l, &j->result) == PRN_OK;
        prn_tensor_free(h); prn_tensor_free(a); prn_tensor_free(l);
    }
    prn_optim_free(o);
    prn_context_free(c);
    return NULL;
}
static void test_two_threads(void) {
    job serial[2] = {{1, 0, 0}, {2, 0, 0}}, par[2] = {{1, 0, 0}, {2, 0, 0}};
    pthread_t th[2];
    int i;
    train_job(&serial[0]);
    train_job(&serial[1]);
    for (i = 0; i < 2; ++i) pthread_create(&th[i], NULL, train_job, &par[i]);
    for (i = 0; i < 2; ++i) pthread_join(th[i], NULL);
    for (i = 0; i < 2; ++i)
        PRNT_CHECK(serial[i].ok && par[i].ok && serial[i].result == par[i].result,
                   "context %d: serial %.17g threaded %.17g", i, serial[i].result, par[i].result);
    PRNT_CHECK(serial[0].result != serial[1].result, "different seeds give different runs");
}

static void test_backend_selection(void) {
    prn_context *c = NULL;
    prn_config cfg;
    prn_backend mine;
    const prn_backend *list[1];
    const char *names[8];
    char err[256];
    int n, i, found = 0;
    const char *old = getenv("PARRNN_BACKEND");
    char saved[128] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    setenv("PARRNN_BACKEND", "reference-noblas", 1);
    PRNT_OK(ctx, prn_context_create(NULL, &c, err, sizeof err));
    PRNT_CHECK(c && strcmp(prn_context_backend_name(c), "reference-noblas") == 0, "PARRNN_BACKEND picks the backend");
    prn_context_free(c); c = NULL;
    setenv("PARRNN_BACKEND", "no-such-backend", 1);
    PRNT_CHECK(prn_context_create(NULL, &c, err, sizeof err) == PRN_ERR_NOT_FOUND && c == NULL &&
               strstr(err, "no-such-backend") && strstr(err, "reference"), "unknown backend: %s", err);
    /* the config's name wins over the environment */
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = "reference";
    PRNT_CHECK(prn_context_create(&cfg, &c, err, sizeof err) == PRN_OK, "config name: %s", err);
    prn_context_free(c); c = NULL;
    if (old) setenv("PARRNN_BACKEND", saved, 1);
    else unsetenv("PARRNN_BACKEND");
    /* a user backend, registered through the config */
    mine = *prn_reference_noblas_backend();
    mine.name = "mine";
    list[0] = &mine;
    cfg.backend = "mine";
    cfg.backends = list;
    cfg.num_backends = 1;
    n = prn_backend_list(&cfg, names, 8);
    for (i = 0; i < n && i < 8; ++i) found |= strcmp(names[i], "mine") == 0;
    PRNT_CHECK(found && n >= 3, "backend_list names the user backend (%d names)", n);
    PRNT_CHECK(prn_context_create(&cfg, &c, err, sizeof err) == PRN_OK, "user backend: %s", err);
    if (c) {
        const size_t s[1] = {3};
        prn_tensor *t = NULL, *u = NULL;
        PRNT_CHECK(strcmp(prn_context_backend_name(c), "mine") == 0, "name");
        PRNT_CHECK(prn_tensor_full(c, PRN_F32, 1, s, 2.0, &t) == PRN_OK && prn_exp(c, t, &u) == PRN_OK, "ops run");
        prn_context_free(c);
    }
}

static void log_cb(void *user, prn_log_level level, const char *msg) {
    if (level == PRN_LOG_ERROR && strstr(msg, "prn_add")) ++*(int *)user;
}
static void test_log_callback_and_errors(void) {
    prn_context *c = NULL;
    prn_config cfg;
    int hits = 0;
    const size_t s2[1] = {2}, s3[1] = {3};
    prn_tensor *a = NULL, *b = NULL, *out = NULL;
    memset(&cfg, 0, sizeof cfg);
    cfg.log = log_cb;
    cfg.log_user = &hits;
    PRNT_OK(ctx, prn_context_create(&cfg, &c, NULL, 0));
    if (!c) return;
    prn_tensor_create(c, PRN_F32, 1, s2, &a);
    prn_tensor_create(c, PRN_F32, 1, s3, &b);
    PRNT_CHECK(prn_add(c, a, b, &out) == PRN_ERR_SHAPE && out == NULL, "shape error");
    PRNT_CHECK(hits == 1, "log callback saw the error (%d)", hits);
    PRNT_CHECK(prn_last_status(c) == PRN_ERR_SHAPE && strstr(prn_last_error(c), "'b'"), "message: %s", prn_last_error(c));
    prn_clear_error(c);
    PRNT_CHECK(prn_last_status(c) == PRN_OK && prn_last_error(c)[0] == 0, "clear_error");
    {
        int s;
        for (s = 0; s <= PRN_STATUS_COUNT; ++s) PRNT_CHECK(prn_status_string((prn_status)s)[0] != 0, "status string %d", s);
    }
    PRNT_CHECK(PARRNN_VERSION_MAJOR == 0 && strlen(PARRNN_VERSION_STRING) > 0, "version macros");
    prn_context_free(c); /* frees a and b too */
}

static void test_random(void) {
    const size_t s[1] = {20000};
    prn_tensor *u1 = NULL, *u2 = NULL, *u3 = NULL, *n1 = NULL;
    static double a[20000], b[20000];
    double mean = 0, var = 0, lo = 1e9, hi = -1e9;
    int i, same = 1;
    prn_seed(ctx, 5);
    prn_tensor_uniform(ctx, PRN_F64, 1, s, -1, 3, &u1);
    prn_seed(ctx, 5);
    prn_tensor_uniform(ctx, PRN_F64, 1, s, -1, 3, &u2);
    prn_tensor_uniform(ctx, PRN_F64, 1, s, -1, 3, &u3); /* counter moved on */
    prn_tensor_download(u1, a, 20000);
    prn_tensor_download(u2, b, 20000);
    for (i = 0; i < 20000; ++i) { same &= a[i] == b[i]; if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i]; mean += a[i]; }
    PRNT_CHECK(same, "same seed, same numbers");
    PRNT_CHECK(lo >= -1 && hi < 3 && fabs(mean / 20000 - 1) < 0.05, "uniform range/mean: [%g, %g] mean %g", lo, hi, mean / 20000);
    prn_tensor_download(u3, b, 20000);
    PRNT_CHECK(a[0] != b[0] && a[1] != b[1], "next draw differs");
    prn_tensor_normal(ctx, PRN_F64, 1, s, 2, 0.5, &n1);
    prn_tensor_download(n1, a, 20000);
    mean = 0;
    for (i = 0; i < 20000; ++i) mean += a[i];
    mean /= 20000;
    for (i = 0; i < 20000; ++i) var += (a[i] - mean) * (a[i] - mean);
    var /= 20000;
    PRNT_CHECK(fabs(mean - 2) < 0.02 && fabs(sqrt(var) - 0.5) < 0.02, "normal mean %g std %g", mean, sqrt(var));
    prn_tensor_free(u1); prn_tensor_free(u2); prn_tensor_free(u3); prn_tensor_free(n1);
}

static void test_no_leaks(void) {
    PRNT_CHECK(prn_live_tensors(ctx) == 0, "tensors leaked: %zu", prn_live_tensors(ctx));
}

int main(void) {
    if (!(ctx = prnt_context(0))) return 1;
    PRNT_RUN(test_reuse_accumulates);
    PRNT_RUN(test_free_intermediates_early);
    PRNT_RUN(test_no_grad);
    PRNT_RUN(test_custom_op);
    PRNT_RUN(test_custom_op_shared_grad);
    PRNT_RUN(test_custom_op_borrowed_grads);
    PRNT_RUN(test_several_backwards);
    PRNT_RUN(test_saved_tensor_written);
    PRNT_RUN(test_backward_failure_keeps_state);
    PRNT_RUN(test_sgd);
    PRNT_RUN(test_adam);
    PRNT_RUN(test_adam_per_parameter_steps);
    PRNT_RUN(test_adam_converges);
    PRNT_RUN(test_backward_guards);
    PRNT_RUN(test_clip_grad_norm);
    PRNT_RUN(test_duplicate_params);
    PRNT_RUN(test_two_threads);
    PRNT_RUN(test_backend_selection);
    PRNT_RUN(test_log_callback_and_errors);
    PRNT_RUN(test_random);
    PRNT_RUN(test_no_leaks);
    prn_context_free(ctx);
    return prnt_summary();
}
