/* Table-driven test of invalid calls.
 *
 * Each table entry makes one invalid call and names the status it must
 * return. For every entry the runner checks:
 *   - the exact status;
 *   - the message on the context (or err_buf for prn_context_create) is not
 *     empty, names the public function and, where given, the argument, and
 *     prn_last_status agrees with the returned status;
 *   - every output pointer/value passed in still holds its sentinel;
 *   - every tensor of the fixture (all three contexts, gradients included)
 *     has the same dtype, shape, requires_grad, grad and bytes as before;
 *   - prn_live_tensors and prn_tape_size of every context are unchanged;
 *   - a custom op's user data was not freed by a failed prn_tape_record.
 * The fixture is shared by all entries: a failed call must leave it intact,
 * which is what the per-entry comparison verifies. */
#include "parrnn.h"
#include "prn_test.h"
#include <float.h>
#include <stdint.h>

/* ------------------------------------------------------------------------
 * Sentinels for outputs
 * ---------------------------------------------------------------------- */
static union { double d; void *p; size_t z; } sentinel_obj;
#define SENT_T ((prn_tensor *)(void *)&sentinel_obj)
#define SENT_O ((prn_optim *)(void *)&sentinel_obj)
#define SENT_C ((prn_context *)(void *)&sentinel_obj)
#define SENT_D (-12345.678)

typedef struct outs {
    prn_tensor *t;
    prn_optim *o;
    prn_context *c;
    double d;
} outs;

/* ------------------------------------------------------------------------
 * Fixture
 * ---------------------------------------------------------------------- */
#define NT 24
typedef struct fx {
    prn_context *ctx;    /* main context, reference backend               */
    prn_context *ctx2;   /* a second context                              */
    prn_context *nb;     /* backend with gemm/softmax/random/... NULL     */
    prn_backend crippled;
    prn_tensor *a;       /* f32 [2,3]                                     */
    prn_tensor *b;       /* f32 [3,2]                                     */
    prn_tensor *c;       /* f32 [4,3]                                     */
    prn_tensor *v;       /* f32 [3]                                       */
    prn_tensor *a64;     /* f64 [2,3]                                     */
    prn_tensor *idx;     /* i32 [2] from prn_argmax                       */
    prn_tensor *b3;      /* f32 [2,3,4]                                   */
    prn_tensor *c3;      /* f32 [3,4,5]                                   */
    prn_tensor *w;       /* f32 [2,3] parameter that has a .grad          */
    prn_tensor *y;       /* f32 [2,3] = w * a, recorded                   */
    prn_tensor *released;/* f32 scalar loss whose records a backward released */
    prn_tensor *a2;      /* f32 [2,3], filled after stale was recorded    */
    prn_tensor *stale;   /* f32 scalar = sum(w * a2), recorded before a2's fill */
    prn_tensor *s;       /* f32 scalar, no grad                           */
    prn_tensor *other;   /* f32 [2,3] on ctx2                             */
    prn_tensor *other_s; /* f32 scalar on ctx2, requires grad             */
    prn_tensor *nb_a;    /* f32 [2,3] on nb                               */
    prn_tensor *nb_b;    /* f32 [3,2] on nb                               */
    prn_tensor *nb_w;    /* f32 [2,3] parameter on nb                     */
    prn_optim *nb_opt;   /* adam on nb (adam_update is NULL there)        */
    prn_optim *opt;      /* adam on ctx, params {w}                       */
    char errbuf[512];
    /* snapshot */
    prn_tensor *all[NT];
    int n_all;
} fx;

typedef struct tsnap {
    prn_dtype dtype;
    int ndim, rg;
    size_t shape[PRN_MAX_DIMS], numel;
    prn_tensor *grad;
    unsigned char bytes[256];
    unsigned char gbytes[256];
} tsnap;

typedef struct fsnap {
    tsnap t[NT];
    size_t live[3], tape[3];
} fsnap;

static size_t tbytes(const prn_tensor *t) {
    return prn_tensor_numel(t) * prn_dtype_size(prn_tensor_dtype(t));
}

static void snap_take(fx *f, fsnap *s) {
    int i, k;
    prn_context *cs[3];
    cs[0] = f->ctx; cs[1] = f->ctx2; cs[2] = f->nb;
    memset(s, 0, sizeof *s);
    for (i = 0; i < f->n_all; ++i) {
        prn_tensor *t = f->all[i];
        tsnap *q = &s->t[i];
        q->dtype = prn_tensor_dtype(t);
        q->ndim = prn_tensor_ndim(t);
        q->rg = prn_tensor_requires_grad(t);
        q->numel = prn_tensor_numel(t);
        for (k = 0; k < q->ndim; ++k) q->shape[k] = prn_tensor_dim(t, k);
        q->grad = prn_tensor_grad(t);
        if (prn_tensor_download(t, q->bytes, q->numel) != PRN_OK) q->bytes[0] ^= 0xff;
        if (q->grad && prn_tensor_download(q->grad, q->gbytes, prn_tensor_numel(q->grad)) != PRN_OK)
            q->gbytes[0] ^= 0xff;
    }
    for (k = 0; k < 3; ++k) { s->live[k] = prn_live_tensors(cs[k]); s->tape[k] = prn_tape_size(cs[k]); }
}

/* Compares the fixture with a snapshot; reports every difference. */
static void snap_check(fx *f, const fsnap *s, const char *name) {
    fsnap now;
    int i, k;
    static const char *cn[3] = {"ctx", "ctx2", "nb"};
    snap_take(f, &now);
    for (i = 0; i < f->n_all; ++i) {
        const tsnap *a = &s->t[i], *b = &now.t[i];
        int same_shape = a->ndim == b->ndim && a->numel == b->numel;
        for (k = 0; k < a->ndim && same_shape; ++k) same_shape = a->shape[k] == b->shape[k];
        PRNT_CHECK(a->dtype == b->dtype && same_shape, "%s: fixture tensor %d changed dtype/shape", name, i);
        PRNT_CHECK(a->rg == b->rg, "%s: fixture tensor %d requires_grad %d -> %d", name, i, a->rg, b->rg);
        PRNT_CHECK(a->grad == b->grad, "%s: fixture tensor %d .grad pointer changed", name, i);
        PRNT_CHECK(memcmp(a->bytes, b->bytes, tbytes(f->all[i])) == 0, "%s: fixture tensor %d contents changed", name, i);
        if (a->grad && a->grad == b->grad)
            PRNT_CHECK(memcmp(a->gbytes, b->gbytes, tbytes(a->grad)) == 0, "%s: fixture tensor %d .grad contents changed",
                       name, i);
    }
    for (k = 0; k < 3; ++k) {
        PRNT_CHECK(s->live[k] == now.live[k], "%s: prn_live_tensors(%s) %lu -> %lu", name, cn[k],
                   (unsigned long)s->live[k], (unsigned long)now.live[k]);
        PRNT_CHECK(s->tape[k] == now.tape[k], "%s: prn_tape_size(%s) %lu -> %lu", name, cn[k],
                   (unsigned long)s->tape[k], (unsigned long)now.tape[k]);
    }
}

static int g_user_freed;
static void count_free(void *u) { (void)u; g_user_freed++; }
static prn_status dummy_backward(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    (void)ctx; (void)op; (void)g; (void)gin;
    return PRN_OK;
}
static void *test_alloc(void *u, size_t n) { (void)u; return malloc(n); }
static void test_free(void *u, void *p) { (void)u; free(p); }

#define SETUP_OK(call)                                                          \
    do { prn_status s_ = (call);                                                \
         if (s_ != PRN_OK) { printf("fixture: %s failed: %s\n", #call, prn_status_string(s_)); return 0; } } while (0)

static prn_tensor *keep(fx *f, prn_tensor *t) {
    if (f->n_all < NT) f->all[f->n_all++] = t;
    return t;
}

static int fx_init(fx *f) {
    static const float a_data[6] = {0.5f, -1.0f, 2.0f, 3.0f, 0.25f, -0.75f};
    static const float b_data[6] = {1.0f, 2.0f, -3.0f, 0.5f, 0.0f, 4.0f};
    static const double a64_data[6] = {1, 2, 3, 4, 5, 6};
    size_t s23[2] = {2, 3}, s32[2] = {3, 2}, s43[2] = {4, 3}, s3[1] = {3}, s234[3] = {2, 3, 4}, s345[3] = {3, 4, 5};
    prn_config cfg;
    const prn_backend *bes[1];
    prn_tensor *loss = NULL, *prod = NULL;
    char err[256];
    memset(f, 0, sizeof *f);
    SETUP_OK(prn_context_create(NULL, &f->ctx, err, sizeof err));
    SETUP_OK(prn_context_create(NULL, &f->ctx2, err, sizeof err));
    f->crippled = *prn_reference_backend();
    f->crippled.name = "crippled";
    f->crippled.gemm = NULL;
    f->crippled.softmax = NULL;
    f->crippled.random = NULL;
    f->crippled.argmax = NULL;
    f->crippled.adam_update = NULL;
    bes[0] = &f->crippled;
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = "crippled";
    cfg.backends = bes;
    cfg.num_backends = 1;
    SETUP_OK(prn_context_create(&cfg, &f->nb, err, sizeof err));
    if (strcmp(prn_context_backend_name(f->nb), "crippled") != 0) { printf("fixture: wrong backend\n"); return 0; }

    SETUP_OK(prn_tensor_from_host(f->ctx, PRN_F32, 2, s23, a_data, &f->a)); keep(f, f->a);
    SETUP_OK(prn_tensor_from_host(f->ctx, PRN_F32, 2, s32, b_data, &f->b)); keep(f, f->b);
    SETUP_OK(prn_tensor_uniform(f->ctx, PRN_F32, 2, s43, -1, 1, &f->c)); keep(f, f->c);
    SETUP_OK(prn_tensor_uniform(f->ctx, PRN_F32, 1, s3, -1, 1, &f->v)); keep(f, f->v);
    SETUP_OK(prn_tensor_from_host(f->ctx, PRN_F64, 2, s23, a64_data, &f->a64)); keep(f, f->a64);
    SETUP_OK(prn_argmax(f->ctx, f->a, 1, 0, &f->idx)); keep(f, f->idx);
    SETUP_OK(prn_tensor_normal(f->ctx, PRN_F32, 3, s234, 0, 1, &f->b3)); keep(f, f->b3);
    SETUP_OK(prn_tensor_normal(f->ctx, PRN_F32, 3, s345, 0, 1, &f->c3)); keep(f, f->c3);
    SETUP_OK(prn_tensor_uniform(f->ctx, PRN_F32, 2, s23, -1, 1, &f->w)); keep(f, f->w);
    SETUP_OK(prn_tensor_set_requires_grad(f->w, 1));
    /* give w a gradient, then leave one record on the tape */
    SETUP_OK(prn_mul(f->ctx, f->w, f->a, &prod));
    SETUP_OK(prn_sum(f->ctx, prod, PRN_ALL_AXES, 0, &loss));
    SETUP_OK(prn_backward(f->ctx, loss));
    prn_tensor_free(prod); prod = NULL;
    f->released = loss; keep(f, f->released);
    if (!prn_tensor_grad(f->w)) { printf("fixture: w has no grad\n"); return 0; }
    SETUP_OK(prn_mul(f->ctx, f->w, f->a, &f->y)); keep(f, f->y);
    SETUP_OK(prn_tensor_from_host(f->ctx, PRN_F32, 2, s23, a_data, &f->a2)); keep(f, f->a2);
    SETUP_OK(prn_mul(f->ctx, f->w, f->a2, &prod));
    SETUP_OK(prn_sum(f->ctx, prod, PRN_ALL_AXES, 0, &f->stale)); keep(f, f->stale);
    prn_tensor_free(prod);
    SETUP_OK(prn_tensor_fill(f->a2, 1.0));
    if (prn_tape_size(f->ctx) != 3) { printf("fixture: tape size %lu\n", (unsigned long)prn_tape_size(f->ctx)); return 0; }
    SETUP_OK(prn_tensor_full(f->ctx, PRN_F32, 0, NULL, 2.0, &f->s)); keep(f, f->s);
    SETUP_OK(prn_optim_adam_create(f->ctx, &f->w, 1, NULL, &f->opt));

    SETUP_OK(prn_tensor_from_host(f->ctx2, PRN_F32, 2, s23, a_data, &f->other)); keep(f, f->other);
    SETUP_OK(prn_tensor_full(f->ctx2, PRN_F32, 0, NULL, 1.0, &f->other_s)); keep(f, f->other_s);
    SETUP_OK(prn_tensor_set_requires_grad(f->other_s, 1));

    SETUP_OK(prn_tensor_from_host(f->nb, PRN_F32, 2, s23, a_data, &f->nb_a)); keep(f, f->nb_a);
    SETUP_OK(prn_tensor_from_host(f->nb, PRN_F32, 2, s32, b_data, &f->nb_b)); keep(f, f->nb_b);
    SETUP_OK(prn_tensor_full(f->nb, PRN_F32, 2, s23, 0.5, &f->nb_w)); keep(f, f->nb_w);
    SETUP_OK(prn_tensor_set_requires_grad(f->nb_w, 1));
    SETUP_OK(prn_optim_adam_create(f->nb, &f->nb_w, 1, NULL, &f->nb_opt));
    return 1;
}

static void fx_free(fx *f) {
    prn_optim_free(f->opt);
    prn_optim_free(f->nb_opt);
    prn_context_free(f->ctx);
    prn_context_free(f->ctx2);
    prn_context_free(f->nb);
}

/* ------------------------------------------------------------------------
 * The invalid calls
 * ---------------------------------------------------------------------- */
#define E(name, ...) static prn_status name(fx *f, outs *o) { (void)f; (void)o; __VA_ARGS__ }

/* NULL context / tensors / outputs / shapes / data / params */
E(e_add_null_ctx, return prn_add(NULL, f->a, f->a, &o->t);)
E(e_add_null_a, return prn_add(f->ctx, NULL, f->a, &o->t);)
E(e_add_null_b, return prn_add(f->ctx, f->a, NULL, &o->t);)
E(e_add_null_out, return prn_add(f->ctx, f->a, f->a, NULL);)
E(e_matmul_null_b, return prn_matmul(f->ctx, f->a, NULL, &o->t);)
E(e_exp_null_x, return prn_exp(f->ctx, NULL, &o->t);)
E(e_softmax_null_ctx, return prn_softmax(NULL, f->a, 0, &o->t);)
E(e_create_null_shape, return prn_tensor_create(f->ctx, PRN_F32, 2, NULL, &o->t);)
E(e_create_null_out, size_t sh[1] = {3}; return prn_tensor_create(f->ctx, PRN_F32, 1, sh, NULL);)
E(e_from_host_null_data, size_t sh[1] = {3}; return prn_tensor_from_host(f->ctx, PRN_F32, 1, sh, NULL, &o->t);)
E(e_uniform_null_out, size_t sh[1] = {3}; return prn_tensor_uniform(f->ctx, PRN_F32, 1, sh, 0, 1, NULL);)
E(e_upload_null_t, float x[6] = {0}; return prn_tensor_upload(NULL, x, 6);)
E(e_upload_null_src, return prn_tensor_upload(f->a, NULL, 6);)
E(e_download_null_dst, return prn_tensor_download(f->a, NULL, 6);)
E(e_item_null_value, return prn_tensor_item(f->s, NULL);)
E(e_backward_null_ctx, return prn_backward(NULL, f->y);)
E(e_backward_null_loss, return prn_backward(f->ctx, NULL);)
E(e_backward_retain_null_loss, return prn_backward_retain(f->ctx, NULL);)
E(e_backward_released, return prn_backward(f->ctx, f->released);)
E(e_backward_stale, return prn_backward(f->ctx, f->stale);)
E(e_sgd_dup_params, prn_tensor *p[2]; p[0] = f->w; p[1] = f->w;
  return prn_optim_sgd_create(f->ctx, p, 2, NULL, &o->o);)
E(e_adam_null_params, return prn_optim_adam_create(f->ctx, NULL, 1, NULL, &o->o);)
E(e_sgd_null_out, return prn_optim_sgd_create(f->ctx, &f->w, 1, NULL, NULL);)
E(e_adam_null_param_entry, prn_tensor *p[2]; p[0] = f->w; p[1] = NULL;
  return prn_optim_adam_create(f->ctx, p, 2, NULL, &o->o);)
E(e_clip_null_params, return prn_clip_grad_norm(f->ctx, NULL, 2, 1.0, &o->d);)
E(e_context_null_out, return prn_context_create(NULL, NULL, f->errbuf, sizeof f->errbuf);)
E(e_tape_record_null_inputs, return prn_tape_record(f->ctx, "op", NULL, 1, f->a, dummy_backward, NULL, count_free);)

/* shapes */
E(e_add_shape, return prn_add(f->ctx, f->a, f->c, &o->t);)
E(e_sub_shape, return prn_sub(f->ctx, f->c, f->a, &o->t);)
E(e_mul_shape, return prn_mul(f->ctx, f->a, f->b, &o->t);)
E(e_div_shape, return prn_div(f->ctx, f->b3, f->a, &o->t);)
E(e_pow_shape, return prn_pow(f->ctx, f->a, f->c3, &o->t);)
E(e_matmul_inner, return prn_matmul(f->ctx, f->a, f->a, &o->t);)
E(e_matmul_ex_inner, return prn_matmul_ex(f->ctx, f->a, 1, f->b, 0, &o->t);)
E(e_matmul_batch, return prn_matmul(f->ctx, f->b3, f->c3, &o->t);)
E(e_matmul_1d_a, return prn_matmul(f->ctx, f->v, f->b, &o->t);)
E(e_matmul_1d_b, return prn_matmul(f->ctx, f->a, f->v, &o->t);)
E(e_reshape_numel, size_t sh[2] = {4, 2}; return prn_reshape(f->ctx, f->a, 2, sh, &o->t);)
E(e_broadcast_incompatible, size_t sh[2] = {4, 3}; return prn_broadcast(f->ctx, f->a, 2, sh, &o->t);)
E(e_broadcast_fewer_dims, size_t sh[1] = {3}; return prn_broadcast(f->ctx, f->a, 1, sh, &o->t);)
E(e_transpose_axis, return prn_transpose(f->ctx, f->a, 0, 2, &o->t);)
E(e_transpose_neg_axis, return prn_transpose(f->ctx, f->a, -3, 1, &o->t);)
E(e_sum_axis, return prn_sum(f->ctx, f->a, 2, 0, &o->t);)
E(e_mean_neg_axis, return prn_mean(f->ctx, f->a, -3, 1, &o->t);)
E(e_max_axis, return prn_max(f->ctx, f->v, 1, 0, &o->t);)
E(e_softmax_axis, return prn_softmax(f->ctx, f->a, 2, &o->t);)
E(e_log_softmax_axis, return prn_log_softmax(f->ctx, f->b3, -4, &o->t);)
E(e_argmax_axis, return prn_argmax(f->ctx, f->a, 5, 0, &o->t);)
E(e_cross_entropy_shape, return prn_cross_entropy(f->ctx, f->a, f->b, &o->t);)
E(e_cross_entropy_scalar, return prn_cross_entropy(f->ctx, f->s, f->s, &o->t);)
E(e_mse_shape, return prn_mse(f->ctx, f->a, f->c, &o->t);)
E(e_item_empty, size_t sh[1] = {0}; prn_tensor *t = NULL; prn_status st;
  /* an empty tensor made for the call and freed after: live count stays */
  if (prn_tensor_create(f->ctx, PRN_F32, 1, sh, &t) != PRN_OK) return PRN_OK;
  st = prn_tensor_item(t, &o->d);
  prn_tensor_free(t);
  return st;)

/* dtypes */
E(e_add_mixed_dtype, return prn_add(f->ctx, f->a, f->a64, &o->t);)
E(e_matmul_mixed_dtype, return prn_matmul(f->ctx, f->a64, f->b, &o->t);)
E(e_mse_mixed_dtype, return prn_mse(f->ctx, f->a, f->a64, &o->t);)
E(e_cross_entropy_mixed_dtype, return prn_cross_entropy(f->ctx, f->a, f->a64, &o->t);)
E(e_add_i32, return prn_add(f->ctx, f->idx, f->idx, &o->t);)
E(e_mul_i32_b, return prn_mul(f->ctx, f->v, f->idx, &o->t);)
E(e_exp_i32, return prn_exp(f->ctx, f->idx, &o->t);)
E(e_scale_i32, return prn_scale(f->ctx, f->idx, 2.0, &o->t);)
E(e_softmax_i32, return prn_softmax(f->ctx, f->idx, 0, &o->t);)
E(e_sum_i32, return prn_sum(f->ctx, f->idx, PRN_ALL_AXES, 0, &o->t);)
E(e_matmul_i32, return prn_matmul(f->ctx, f->idx, f->b, &o->t);)
E(e_mse_i32, return prn_mse(f->ctx, f->idx, f->idx, &o->t);)
E(e_backward_i32, return prn_backward(f->ctx, f->idx);)
E(e_set_requires_grad_i32, return prn_tensor_set_requires_grad(f->idx, 1);)
E(e_adam_i32_param, return prn_optim_adam_create(f->ctx, &f->idx, 1, NULL, &o->o);)
E(e_create_bad_dtype, size_t sh[1] = {3}; return prn_tensor_create(f->ctx, (prn_dtype)7, 1, sh, &o->t);)
E(e_uniform_i32, size_t sh[1] = {3}; return prn_tensor_uniform(f->ctx, PRN_I32, 1, sh, 0, 1, &o->t);)

/* contexts */
E(e_add_other_ctx, return prn_add(f->ctx, f->a, f->other, &o->t);)
E(e_matmul_other_ctx, return prn_matmul(f->ctx, f->other, f->b, &o->t);)
E(e_mse_other_ctx, return prn_mse(f->ctx, f->a, f->other, &o->t);)
E(e_backward_other_ctx, return prn_backward(f->ctx, f->other_s);)
E(e_adam_other_ctx, return prn_optim_adam_create(f->ctx, &f->other, 1, NULL, &o->o);)
E(e_clip_other_ctx, return prn_clip_grad_norm(f->ctx, &f->other_s, 1, 1.0, &o->d);)
E(e_tape_record_other_ctx, return prn_tape_record(f->ctx, "op", &f->other_s, 1, f->a, dummy_backward, NULL, count_free);)

/* sizes */
E(e_create_overflow, size_t sh[2] = {SIZE_MAX / 2, 4}; return prn_tensor_create(f->ctx, PRN_F32, 2, sh, &o->t);)
E(e_full_byte_overflow, size_t sh[1] = {SIZE_MAX / 4}; return prn_tensor_full(f->ctx, PRN_F64, 1, sh, 1.0, &o->t);)
E(e_uniform_overflow, size_t sh[3] = {SIZE_MAX / 8, 4, 4}; return prn_tensor_uniform(f->ctx, PRN_F32, 3, sh, 0, 1, &o->t);)
E(e_reshape_overflow, size_t sh[2] = {SIZE_MAX / 2, 4}; return prn_reshape(f->ctx, f->a, 2, sh, &o->t);)
E(e_create_ndim5, size_t sh[5] = {1, 1, 1, 1, 1}; return prn_tensor_create(f->ctx, PRN_F32, 5, sh, &o->t);)
E(e_create_ndim_neg, size_t sh[1] = {1}; return prn_tensor_create(f->ctx, PRN_F32, -1, sh, &o->t);)
E(e_reshape_ndim5, size_t sh[5] = {1, 1, 2, 3, 1}; return prn_reshape(f->ctx, f->a, 5, sh, &o->t);)
E(e_broadcast_ndim_neg, size_t sh[1] = {1}; return prn_broadcast(f->ctx, f->a, -1, sh, &o->t);)
E(e_upload_count, float x[7] = {9, 9, 9, 9, 9, 9, 9}; return prn_tensor_upload(f->a, x, 7);)
E(e_upload_count_small, float x[5] = {9, 9, 9, 9, 9}; return prn_tensor_upload(f->a, x, 5);)
E(e_download_count, float x[8]; return prn_tensor_download(f->a, x, 5);)

/* autodiff state */
E(e_backward_nonscalar, return prn_backward(f->ctx, f->y);)
E(e_backward_no_grad, return prn_backward(f->ctx, f->s);)
E(e_set_requires_grad_op_output, return prn_tensor_set_requires_grad(f->y, 1);)
E(e_tape_record_null_backward, return prn_tape_record(f->ctx, "op", &f->w, 1, f->a, NULL, NULL, count_free);)
E(e_tape_record_null_name, return prn_tape_record(f->ctx, NULL, &f->w, 1, f->a, dummy_backward, NULL, count_free);)
E(e_tape_record_too_many, prn_tensor *in[PRN_MAX_OP_INPUTS + 1]; int k;
  for (k = 0; k <= PRN_MAX_OP_INPUTS; ++k) in[k] = f->w;
  return prn_tape_record(f->ctx, "op", in, PRN_MAX_OP_INPUTS + 1, f->a, dummy_backward, NULL, count_free);)
E(e_tape_record_zero_inputs, return prn_tape_record(f->ctx, "op", &f->w, 0, f->a, dummy_backward, NULL, count_free);)
E(e_tape_record_recorded_output, return prn_tape_record(f->ctx, "op", &f->w, 1, f->y, dummy_backward, NULL, count_free);)
E(e_tape_record_param_output, return prn_tape_record(f->ctx, "op", &f->a, 1, f->w, dummy_backward, NULL, count_free);)
E(e_tape_record_output_is_input, prn_tensor *in[2]; in[0] = f->w; in[1] = f->a;
  return prn_tape_record(f->ctx, "op", in, 2, f->a, dummy_backward, NULL, count_free);)

/* contexts and allocators */
E(e_context_unknown_backend, prn_config cfg; memset(&cfg, 0, sizeof cfg); cfg.backend = "no-such-backend";
  return prn_context_create(&cfg, &o->c, f->errbuf, sizeof f->errbuf);)
E(e_context_alloc_only, prn_config cfg; memset(&cfg, 0, sizeof cfg); cfg.allocator.alloc = test_alloc;
  return prn_context_create(&cfg, &o->c, f->errbuf, sizeof f->errbuf);)
E(e_context_free_only, prn_config cfg; memset(&cfg, 0, sizeof cfg); cfg.allocator.free = test_free;
  return prn_context_create(&cfg, &o->c, f->errbuf, sizeof f->errbuf);)
E(e_context_negative_threads, prn_config cfg; memset(&cfg, 0, sizeof cfg); cfg.num_threads = -2;
  return prn_context_create(&cfg, &o->c, f->errbuf, sizeof f->errbuf);)
E(e_context_backends_null, prn_config cfg; memset(&cfg, 0, sizeof cfg); cfg.num_backends = 2;
  return prn_context_create(&cfg, &o->c, f->errbuf, sizeof f->errbuf);)
E(e_context_abi_mismatch, prn_backend be = *prn_reference_backend(); const prn_backend *bes[1]; prn_config cfg;
  be.name = "old-abi"; be.abi_version = PARRNN_BACKEND_ABI + 1; bes[0] = &be;
  memset(&cfg, 0, sizeof cfg); cfg.backend = "old-abi"; cfg.backends = bes; cfg.num_backends = 1;
  return prn_context_create(&cfg, &o->c, f->errbuf, sizeof f->errbuf);)
E(e_context_no_buf_alloc, prn_backend be = *prn_reference_backend(); const prn_backend *bes[1]; prn_config cfg;
  be.name = "no-buffers"; be.buf_alloc = NULL; bes[0] = &be;
  memset(&cfg, 0, sizeof cfg); cfg.backend = "no-buffers"; cfg.backends = bes; cfg.num_backends = 1;
  return prn_context_create(&cfg, &o->c, f->errbuf, sizeof f->errbuf);)

/* optimisers and clipping */
E(e_adam_lr_negative, prn_adam_config c; memset(&c, 0, sizeof c); c.lr = -0.1;
  return prn_optim_adam_create(f->ctx, &f->w, 1, &c, &o->o);)
E(e_adam_beta1_one, prn_adam_config c; memset(&c, 0, sizeof c); c.beta1 = 1.0;
  return prn_optim_adam_create(f->ctx, &f->w, 1, &c, &o->o);)
E(e_adam_beta2_big, prn_adam_config c; memset(&c, 0, sizeof c); c.beta2 = 1.5;
  return prn_optim_adam_create(f->ctx, &f->w, 1, &c, &o->o);)
E(e_adam_num_params_zero, return prn_optim_adam_create(f->ctx, &f->w, 0, NULL, &o->o);)
E(e_adam_op_output_param, return prn_optim_adam_create(f->ctx, &f->y, 1, NULL, &o->o);)
E(e_sgd_lr_negative, prn_sgd_config c; memset(&c, 0, sizeof c); c.lr = -1;
  return prn_optim_sgd_create(f->ctx, &f->w, 1, &c, &o->o);)
E(e_sgd_momentum_negative, prn_sgd_config c; memset(&c, 0, sizeof c); c.momentum = -0.5;
  return prn_optim_sgd_create(f->ctx, &f->w, 1, &c, &o->o);)
E(e_sgd_num_params_negative, return prn_optim_sgd_create(f->ctx, &f->w, -1, NULL, &o->o);)
E(e_set_lr_negative, return prn_optim_set_lr(f->opt, -1e-3);)
E(e_set_lr_nan, return prn_optim_set_lr(f->opt, NAN);)
E(e_optim_step_null, return prn_optim_step(NULL);)
E(e_clip_max_norm_zero, return prn_clip_grad_norm(f->ctx, &f->w, 1, 0.0, &o->d);)
E(e_clip_max_norm_negative, return prn_clip_grad_norm(f->ctx, &f->w, 1, -1.0, &o->d);)
E(e_clip_max_norm_nan, return prn_clip_grad_norm(f->ctx, &f->w, 1, NAN, &o->d);)
E(e_clip_i32_param, return prn_clip_grad_norm(f->ctx, &f->idx, 1, 1.0, &o->d);)

/* scalar arguments */
E(e_uniform_lo_gt_hi, size_t sh[1] = {3}; return prn_tensor_uniform(f->ctx, PRN_F32, 1, sh, 1.0, 0.0, &o->t);)
E(e_normal_negative_stddev, size_t sh[1] = {3}; return prn_tensor_normal(f->ctx, PRN_F64, 1, sh, 0.0, -1.0, &o->t);)
E(e_scale_nan, return prn_scale(f->ctx, f->a, NAN, &o->t);)
E(e_pow_scalar_nan, return prn_pow_scalar(f->ctx, f->a, NAN, &o->t);)
/* infinite scalars: an infinite range, scale or mean draws or makes Inf and NaN */
E(e_uniform_infinite, size_t sh[1] = {3}; return prn_tensor_uniform(f->ctx, PRN_F32, 1, sh, -INFINITY, INFINITY, &o->t);)
E(e_uniform_range_overflows, size_t sh[1] = {3};
  return prn_tensor_uniform(f->ctx, PRN_F64, 1, sh, -DBL_MAX, DBL_MAX, &o->t);)
E(e_normal_infinite_mean, size_t sh[1] = {3}; return prn_tensor_normal(f->ctx, PRN_F64, 1, sh, INFINITY, 1.0, &o->t);)
E(e_scale_inf, return prn_scale(f->ctx, f->a, INFINITY, &o->t);)
/* a mean of nothing is 0 / 0: refused, as prn_max of nothing is */
E(e_mean_empty, size_t sh[2] = {0, 3}; prn_tensor *e = NULL; prn_status st;
  if (prn_tensor_create(f->ctx, PRN_F32, 2, sh, &e) != PRN_OK) return PRN_ERR_STATE;
  st = prn_mean(f->ctx, e, PRN_ALL_AXES, 0, &o->t); prn_tensor_free(e); return st;)
E(e_mean_empty_axis, size_t sh[2] = {0, 3}; prn_tensor *e = NULL; prn_status st;
  if (prn_tensor_create(f->ctx, PRN_F32, 2, sh, &e) != PRN_OK) return PRN_ERR_STATE;
  st = prn_mean(f->ctx, e, 0, 0, &o->t); prn_tensor_free(e); return st;)
E(e_mse_empty, size_t sh[2] = {0, 3}; prn_tensor *e = NULL; prn_status st;
  if (prn_tensor_create(f->ctx, PRN_F32, 2, sh, &e) != PRN_OK) return PRN_ERR_STATE;
  st = prn_mse(f->ctx, e, e, &o->t); prn_tensor_free(e); return st;)

/* a backend that leaves primitives NULL */
E(e_unsupported_gemm, return prn_matmul(f->nb, f->nb_a, f->nb_b, &o->t);)
E(e_unsupported_softmax, return prn_softmax(f->nb, f->nb_a, 1, &o->t);)
E(e_unsupported_log_softmax, return prn_log_softmax(f->nb, f->nb_a, -1, &o->t);)
E(e_unsupported_cross_entropy, return prn_cross_entropy(f->nb, f->nb_a, f->nb_a, &o->t);)
E(e_unsupported_uniform, size_t sh[2] = {2, 2}; return prn_tensor_uniform(f->nb, PRN_F32, 2, sh, 0, 1, &o->t);)
E(e_unsupported_normal, size_t sh[1] = {5}; return prn_tensor_normal(f->nb, PRN_F64, 1, sh, 0, 1, &o->t);)
E(e_unsupported_argmax, return prn_argmax(f->nb, f->nb_a, 0, 0, &o->t);)
E(e_unsupported_adam_update, return prn_optim_step(f->nb_opt);)

/* ------------------------------------------------------------------------
 * The table
 * ---------------------------------------------------------------------- */
enum { MSG_CTX, MSG_NB, MSG_ERRBUF, MSG_NONE };

typedef struct entry {
    const char *name;
    prn_status (*call)(fx *f, outs *o);
    prn_status expect;
    int where;        /* where the message must appear                   */
    const char *fn;   /* public function the message must name           */
    const char *arg;  /* argument (or primitive) it must name, or NULL   */
} entry;

#define NUL PRN_ERR_NULL_ARGUMENT
#define INV PRN_ERR_INVALID_ARGUMENT
#define SHP PRN_ERR_SHAPE
#define DTY PRN_ERR_DTYPE
#define CTXM PRN_ERR_CONTEXT_MISMATCH
#define OVF PRN_ERR_OVERFLOW
#define UNS PRN_ERR_UNSUPPORTED
#define NFD PRN_ERR_NOT_FOUND
#define STA PRN_ERR_STATE
#define ROW(fn_, st, where, pub, arg) { #fn_, fn_, st, where, pub, arg }

static const entry table[] = {
    /* NULL pointers */
    ROW(e_add_null_ctx, NUL, MSG_NONE, NULL, NULL),
    ROW(e_add_null_a, NUL, MSG_CTX, "prn_add", "'a'"),
    ROW(e_add_null_b, NUL, MSG_CTX, "prn_add", "'b'"),
    ROW(e_add_null_out, NUL, MSG_CTX, "prn_add", "'out'"),
    ROW(e_matmul_null_b, NUL, MSG_CTX, "prn_matmul", "'b'"),
    ROW(e_exp_null_x, NUL, MSG_CTX, "prn_exp", "'x'"),
    ROW(e_softmax_null_ctx, NUL, MSG_NONE, NULL, NULL),
    ROW(e_create_null_shape, NUL, MSG_CTX, "prn_tensor_create", "'shape'"),
    ROW(e_create_null_out, NUL, MSG_CTX, "prn_tensor_create", "'out'"),
    ROW(e_from_host_null_data, NUL, MSG_CTX, "prn_tensor_from_host", "'data'"),
    ROW(e_uniform_null_out, NUL, MSG_CTX, "prn_tensor_uniform", "'out'"),
    ROW(e_upload_null_t, NUL, MSG_NONE, NULL, NULL),
    ROW(e_upload_null_src, NUL, MSG_CTX, "prn_tensor_upload", "'src'"),
    ROW(e_download_null_dst, NUL, MSG_CTX, "prn_tensor_download", "'dst'"),
    ROW(e_item_null_value, NUL, MSG_CTX, "prn_tensor_item", "'value'"),
    ROW(e_backward_null_ctx, NUL, MSG_NONE, NULL, NULL),
    ROW(e_backward_null_loss, NUL, MSG_CTX, "prn_backward", "'loss'"),
    ROW(e_backward_retain_null_loss, NUL, MSG_CTX, "prn_backward_retain", "'loss'"),
    ROW(e_adam_null_params, NUL, MSG_CTX, "prn_optim_adam_create", "'params'"),
    ROW(e_sgd_null_out, NUL, MSG_CTX, "prn_optim_sgd_create", "'out'"),
    ROW(e_adam_null_param_entry, NUL, MSG_CTX, "prn_optim_adam_create", "params"),
    ROW(e_clip_null_params, NUL, MSG_CTX, "prn_clip_grad_norm", "'params'"),
    ROW(e_context_null_out, NUL, MSG_ERRBUF, "prn_context_create", "'out'"),
    ROW(e_tape_record_null_inputs, NUL, MSG_CTX, "prn_tape_record", "'inputs'"),
    /* shapes */
    ROW(e_add_shape, SHP, MSG_CTX, "prn_add", "'b'"),
    ROW(e_sub_shape, SHP, MSG_CTX, "prn_sub", "'b'"),
    ROW(e_mul_shape, SHP, MSG_CTX, "prn_mul", "'b'"),
    ROW(e_div_shape, SHP, MSG_CTX, "prn_div", "'b'"),
    ROW(e_pow_shape, SHP, MSG_CTX, "prn_pow", "'b'"),
    ROW(e_matmul_inner, SHP, MSG_CTX, "prn_matmul", "'b'"),
    ROW(e_matmul_ex_inner, SHP, MSG_CTX, "prn_matmul", "'b'"),
    ROW(e_matmul_batch, SHP, MSG_CTX, "prn_matmul", "batch"),
    ROW(e_matmul_1d_a, SHP, MSG_CTX, "prn_matmul", "'a'"),
    ROW(e_matmul_1d_b, SHP, MSG_CTX, "prn_matmul", "'b'"),
    ROW(e_reshape_numel, SHP, MSG_CTX, "prn_reshape", "'shape'"),
    ROW(e_broadcast_incompatible, SHP, MSG_CTX, "prn_broadcast", "'shape'"),
    ROW(e_broadcast_fewer_dims, SHP, MSG_CTX, "prn_broadcast", "'ndim'"),
    ROW(e_transpose_axis, INV, MSG_CTX, "prn_transpose", "'axis'"),
    ROW(e_transpose_neg_axis, INV, MSG_CTX, "prn_transpose", "'axis'"),
    ROW(e_sum_axis, INV, MSG_CTX, "prn_sum", "'axis'"),
    ROW(e_mean_neg_axis, INV, MSG_CTX, "prn_mean", "'axis'"),
    ROW(e_max_axis, INV, MSG_CTX, "prn_max", "'axis'"),
    ROW(e_softmax_axis, INV, MSG_CTX, "prn_softmax", "'axis'"),
    ROW(e_log_softmax_axis, INV, MSG_CTX, "prn_log_softmax", "'axis'"),
    ROW(e_argmax_axis, INV, MSG_CTX, "prn_argmax", "'axis'"),
    ROW(e_cross_entropy_shape, SHP, MSG_CTX, "prn_cross_entropy", "'target'"),
    ROW(e_cross_entropy_scalar, SHP, MSG_CTX, "prn_cross_entropy", NULL),
    ROW(e_mse_shape, SHP, MSG_CTX, "prn_mse", "'target'"),
    ROW(e_item_empty, SHP, MSG_CTX, "prn_tensor_item", "'t'"),
    /* dtypes */
    ROW(e_add_mixed_dtype, DTY, MSG_CTX, "prn_add", "'b'"),
    ROW(e_matmul_mixed_dtype, DTY, MSG_CTX, "prn_matmul", "'b'"),
    ROW(e_mse_mixed_dtype, DTY, MSG_CTX, "prn_mse", "'target'"),
    ROW(e_cross_entropy_mixed_dtype, DTY, MSG_CTX, "prn_cross_entropy", "'target'"),
    ROW(e_add_i32, DTY, MSG_CTX, "prn_add", "'a'"),
    ROW(e_mul_i32_b, DTY, MSG_CTX, "prn_mul", "'b'"),
    ROW(e_exp_i32, DTY, MSG_CTX, "prn_exp", "'x'"),
    ROW(e_scale_i32, DTY, MSG_CTX, "prn_scale", "'x'"),
    ROW(e_softmax_i32, DTY, MSG_CTX, "prn_softmax", "'x'"),
    ROW(e_sum_i32, DTY, MSG_CTX, "prn_sum", "'x'"),
    ROW(e_matmul_i32, DTY, MSG_CTX, "prn_matmul", "'a'"),
    ROW(e_mse_i32, DTY, MSG_CTX, "prn_mse", "'pred'"),
    ROW(e_backward_i32, DTY, MSG_CTX, "prn_backward", "'loss'"),
    ROW(e_set_requires_grad_i32, DTY, MSG_CTX, "prn_tensor_set_requires_grad", "'t'"),
    ROW(e_adam_i32_param, DTY, MSG_CTX, "prn_optim_adam_create", "params"),
    ROW(e_create_bad_dtype, DTY, MSG_CTX, "prn_tensor_create", "'dtype'"),
    ROW(e_uniform_i32, DTY, MSG_CTX, "prn_tensor_uniform", "'dtype'"),
    /* contexts */
    ROW(e_add_other_ctx, CTXM, MSG_CTX, "prn_add", "'b'"),
    ROW(e_matmul_other_ctx, CTXM, MSG_CTX, "prn_matmul", "'a'"),
    ROW(e_mse_other_ctx, CTXM, MSG_CTX, "prn_mse", "'target'"),
    ROW(e_backward_other_ctx, CTXM, MSG_CTX, "prn_backward", "'loss'"),
    ROW(e_adam_other_ctx, CTXM, MSG_CTX, "prn_optim_adam_create", "params"),
    ROW(e_clip_other_ctx, CTXM, MSG_CTX, "prn_clip_grad_norm", "params"),
    ROW(e_tape_record_other_ctx, CTXM, MSG_CTX, "prn_tape_record", "inputs"),
    /* sizes */
    ROW(e_create_overflow, OVF, MSG_CTX, "prn_tensor_create", "'shape'"),
    ROW(e_full_byte_overflow, OVF, MSG_CTX, "prn_tensor_full", "'shape'"),
    ROW(e_uniform_overflow, OVF, MSG_CTX, "prn_tensor_uniform", "'shape'"),
    ROW(e_reshape_overflow, OVF, MSG_CTX, "prn_reshape", "'shape'"),
    ROW(e_create_ndim5, INV, MSG_CTX, "prn_tensor_create", "'ndim'"),
    ROW(e_create_ndim_neg, INV, MSG_CTX, "prn_tensor_create", "'ndim'"),
    ROW(e_reshape_ndim5, INV, MSG_CTX, "prn_reshape", "'ndim'"),
    ROW(e_broadcast_ndim_neg, INV, MSG_CTX, "prn_broadcast", "'ndim'"),
    ROW(e_upload_count, SHP, MSG_CTX, "prn_tensor_upload", "'count'"),
    ROW(e_upload_count_small, SHP, MSG_CTX, "prn_tensor_upload", "'count'"),
    ROW(e_download_count, SHP, MSG_CTX, "prn_tensor_download", "'count'"),
    /* autodiff state */
    ROW(e_backward_nonscalar, SHP, MSG_CTX, "prn_backward", "'loss'"),
    ROW(e_backward_no_grad, STA, MSG_CTX, "prn_backward", "'loss'"),
    ROW(e_backward_released, STA, MSG_CTX, "prn_backward", "'loss'"),
    ROW(e_backward_stale, STA, MSG_CTX, "prn_backward", "input 1 of op 'mul'"),
    ROW(e_sgd_dup_params, INV, MSG_CTX, "prn_optim_sgd_create", "params[1]"),
    ROW(e_set_requires_grad_op_output, STA, MSG_CTX, "prn_tensor_set_requires_grad", "'t'"),
    ROW(e_tape_record_null_backward, NUL, MSG_CTX, "prn_tape_record", "'backward'"),
    ROW(e_tape_record_null_name, NUL, MSG_CTX, "prn_tape_record", "'name'"),
    ROW(e_tape_record_too_many, INV, MSG_CTX, "prn_tape_record", "'num_inputs'"),
    ROW(e_tape_record_zero_inputs, INV, MSG_CTX, "prn_tape_record", "'num_inputs'"),
    ROW(e_tape_record_recorded_output, STA, MSG_CTX, "prn_tape_record", "'output'"),
    ROW(e_tape_record_param_output, STA, MSG_CTX, "prn_tape_record", "'output'"),
    ROW(e_tape_record_output_is_input, INV, MSG_CTX, "prn_tape_record", "'output'"),
    /* context creation */
    ROW(e_context_unknown_backend, NFD, MSG_ERRBUF, "prn_context_create", "no-such-backend"),
    ROW(e_context_alloc_only, INV, MSG_ERRBUF, "prn_context_create", "allocator"),
    ROW(e_context_free_only, INV, MSG_ERRBUF, "prn_context_create", "allocator"),
    ROW(e_context_negative_threads, INV, MSG_ERRBUF, "prn_context_create", "num_threads"),
    ROW(e_context_backends_null, INV, MSG_ERRBUF, "prn_context_create", "backends"),
    ROW(e_context_abi_mismatch, INV, MSG_ERRBUF, "prn_context_create", "ABI"),
    ROW(e_context_no_buf_alloc, INV, MSG_ERRBUF, "prn_context_create", "no-buffers"),
    /* optimisers, clipping */
    ROW(e_adam_lr_negative, INV, MSG_CTX, "prn_optim_adam_create", "lr"),
    ROW(e_adam_beta1_one, INV, MSG_CTX, "prn_optim_adam_create", "beta"),
    ROW(e_adam_beta2_big, INV, MSG_CTX, "prn_optim_adam_create", "beta"),
    ROW(e_adam_num_params_zero, INV, MSG_CTX, "prn_optim_adam_create", "'num_params'"),
    ROW(e_adam_op_output_param, INV, MSG_CTX, "prn_optim_adam_create", "params"),
    ROW(e_sgd_lr_negative, INV, MSG_CTX, "prn_optim_sgd_create", "lr"),
    ROW(e_sgd_momentum_negative, INV, MSG_CTX, "prn_optim_sgd_create", "momentum"),
    ROW(e_sgd_num_params_negative, INV, MSG_CTX, "prn_optim_sgd_create", "'num_params'"),
    ROW(e_set_lr_negative, INV, MSG_CTX, "prn_optim_set_lr", "'lr'"),
    ROW(e_set_lr_nan, INV, MSG_CTX, "prn_optim_set_lr", "'lr'"),
    ROW(e_optim_step_null, NUL, MSG_NONE, NULL, NULL),
    ROW(e_clip_max_norm_zero, INV, MSG_CTX, "prn_clip_grad_norm", "'max_norm'"),
    ROW(e_clip_max_norm_negative, INV, MSG_CTX, "prn_clip_grad_norm", "'max_norm'"),
    ROW(e_clip_max_norm_nan, INV, MSG_CTX, "prn_clip_grad_norm", "'max_norm'"),
    ROW(e_clip_i32_param, DTY, MSG_CTX, "prn_clip_grad_norm", "params"),
    /* scalar arguments */
    ROW(e_uniform_lo_gt_hi, INV, MSG_CTX, "prn_tensor_uniform", "lo"),
    ROW(e_normal_negative_stddev, INV, MSG_CTX, "prn_tensor_normal", "stddev"),
    ROW(e_scale_nan, INV, MSG_CTX, "prn_scale", NULL),
    ROW(e_pow_scalar_nan, INV, MSG_CTX, "prn_pow_scalar", NULL),
    ROW(e_uniform_infinite, INV, MSG_CTX, "prn_tensor_uniform", "lo"),
    ROW(e_uniform_range_overflows, INV, MSG_CTX, "prn_tensor_uniform", "hi - lo"),
    ROW(e_normal_infinite_mean, INV, MSG_CTX, "prn_tensor_normal", "mean"),
    ROW(e_scale_inf, INV, MSG_CTX, "prn_scale", "not finite"),
    ROW(e_mean_empty, SHP, MSG_CTX, "prn_mean", "empty"),
    ROW(e_mean_empty_axis, SHP, MSG_CTX, "prn_mean", "empty"),
    ROW(e_mse_empty, SHP, MSG_CTX, "prn_mse", "empty"),
    /* unsupported primitives */
    ROW(e_unsupported_gemm, UNS, MSG_NB, "prn_matmul", "'gemm'"),
    ROW(e_unsupported_softmax, UNS, MSG_NB, "prn_softmax", "'softmax'"),
    ROW(e_unsupported_log_softmax, UNS, MSG_NB, "prn_log_softmax", "'softmax'"),
    ROW(e_unsupported_cross_entropy, UNS, MSG_NB, "prn_cross_entropy", "'softmax'"),
    ROW(e_unsupported_uniform, UNS, MSG_NB, "prn_tensor_uniform", "'random'"),
    ROW(e_unsupported_normal, UNS, MSG_NB, "prn_tensor_normal", "'random'"),
    ROW(e_unsupported_argmax, UNS, MSG_NB, "prn_argmax", "'argmax'"),
    ROW(e_unsupported_adam_update, UNS, MSG_NB, "prn_optim_step", "'adam_update'"),
};
#define N_ENTRIES ((int)(sizeof table / sizeof table[0]))

static fx F;

/* Runs one entry with every check; failures are counted on the current test. */
static void run_entry(const entry *e) {
    outs o;
    fsnap before;
    prn_status st;
    const char *msg = "";
    prn_context *mctx = NULL;
    prn_clear_error(F.ctx);
    prn_clear_error(F.ctx2);
    prn_clear_error(F.nb);
    memset(F.errbuf, 0, sizeof F.errbuf);
    o.t = SENT_T;
    o.o = SENT_O;
    o.c = SENT_C;
    o.d = SENT_D;
    g_user_freed = 0;
    snap_take(&F, &before);

    st = e->call(&F, &o);

    PRNT_CHECK(st == e->expect, "%s: got %s, want %s", e->name, prn_status_string(st), prn_status_string(e->expect));
    if (e->where == MSG_CTX) mctx = F.ctx;
    if (e->where == MSG_NB) mctx = F.nb;
    if (mctx) {
        msg = prn_last_error(mctx);
        PRNT_CHECK(prn_last_status(mctx) == st, "%s: prn_last_status is %s, returned %s", e->name,
                   prn_status_string(prn_last_status(mctx)), prn_status_string(st));
    } else if (e->where == MSG_ERRBUF) {
        msg = F.errbuf;
    }
    if (e->where != MSG_NONE) {
        PRNT_CHECK(msg[0] != 0, "%s: empty error message", e->name);
        if (e->fn) PRNT_CHECK(strstr(msg, e->fn) != NULL, "%s: message \"%s\" does not name %s", e->name, msg, e->fn);
        if (e->arg) PRNT_CHECK(strstr(msg, e->arg) != NULL, "%s: message \"%s\" does not name %s", e->name, msg, e->arg);
    }
    /* messages go only to the context the call was made on */
    if (mctx != F.ctx) PRNT_CHECK(prn_last_error(F.ctx)[0] == 0, "%s: message on ctx: %s", e->name, prn_last_error(F.ctx));
    if (mctx != F.nb) PRNT_CHECK(prn_last_error(F.nb)[0] == 0, "%s: message on nb: %s", e->name, prn_last_error(F.nb));
    PRNT_CHECK(prn_last_error(F.ctx2)[0] == 0, "%s: message on ctx2: %s", e->name, prn_last_error(F.ctx2));
    if (e->where != MSG_ERRBUF) PRNT_CHECK(F.errbuf[0] == 0, "%s: err_buf written", e->name);
    PRNT_CHECK(o.t == SENT_T, "%s: tensor output overwritten", e->name);
    PRNT_CHECK(o.o == SENT_O, "%s: optimiser output overwritten", e->name);
    PRNT_CHECK(o.c == SENT_C, "%s: context output overwritten", e->name);
    {
        double sd = SENT_D;
        PRNT_CHECK(memcmp(&o.d, &sd, sizeof sd) == 0, "%s: double output overwritten (%g)", e->name, o.d);
    }
    PRNT_CHECK(g_user_freed == 0, "%s: failed prn_tape_record freed the caller's user data", e->name);
    snap_check(&F, &before, e->name);
    if (st == PRN_OK) {
        /* an unexpected success may have handed out something: release it */
        if (o.t != SENT_T) prn_tensor_free(o.t);
        if (o.o != SENT_O) prn_optim_free(o.o);
        if (o.c != SENT_C) prn_context_free(o.c);
    }
}

/* After all the failures the fixture still works normally. */
static void fixture_still_works(void) {
    prn_tensor *loss = NULL, *prod = NULL, *g;
    float gw[6], a[6];
    double norm = 0;
    size_t tape0 = prn_tape_size(F.ctx);
    int k;
    PRNT_CHECK(tape0 == 3, "tape size %lu", (unsigned long)tape0); /* y's record, stale's two */
    PRNT_OK(F.ctx, prn_sum(F.ctx, F.y, PRN_ALL_AXES, 0, &loss));
    g = prn_tensor_grad(F.w);
    PRNT_CHECK(g != NULL, "w lost its grad");
    if (!loss || !g) { prn_tensor_free(loss); return; }
    PRNT_OK(F.ctx, prn_tensor_download(g, gw, 6));
    PRNT_OK(F.ctx, prn_backward(F.ctx, loss));
    PRNT_CHECK(prn_tape_size(F.ctx) == 2, "tape %lu: the loss's records released, stale's kept",
               (unsigned long)prn_tape_size(F.ctx));
    {
        float gw2[6];
        PRNT_OK(F.ctx, prn_tensor_download(prn_tensor_grad(F.w), gw2, 6));
        PRNT_OK(F.ctx, prn_tensor_download(F.a, a, 6));
        /* d/dw sum(w*a) = a, accumulated onto the fixture's first gradient (also a) */
        for (k = 0; k < 6; ++k) PRNT_CHECK(gw2[k] == gw[k] + a[k], "grad[%d] %g != %g + %g", k, gw2[k], gw[k], a[k]);
    }
    PRNT_OK(F.ctx, prn_clip_grad_norm(F.ctx, &F.w, 1, 1e6, &norm));
    PRNT_CHECK(norm > 0, "norm %g", norm);
    PRNT_OK(F.ctx, prn_optim_step(F.opt));
    prn_tensor_free(loss); (void)prod;
}

int main(void) {
    int i, ok;
    ok = fx_init(&F);
    printf("bad-input table: %d entries\n", N_ENTRIES);
    if (!ok) {
        printf("FAIL fixture\n");
        prnt_failed++;
        return prnt_summary();
    }
    for (i = 0; i < N_ENTRIES; ++i) {
        prnt_cur_failed = 0;
        prnt_cur_skipped = 0;
        run_entry(&table[i]);
        if (prnt_cur_failed) { prnt_failed++; printf("FAIL bad_input/%s\n", table[i].name); }
        else { prnt_passed++; printf("ok   bad_input/%s\n", table[i].name); }
        fflush(stdout);
    }
    PRNT_RUN(fixture_still_works);
    fx_free(&F);
    return prnt_summary();
}
