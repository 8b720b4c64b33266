/* Every op: forward against hand-computed values, gradient against central
 * finite differences in f64 (relative error at most 1e-6). */
#define PARRNN_FAST_MATH /* the private prn__expf and prn__tanhf, tested below */
#include "parrnn.h"
#include "prn_test.h"

static prn_context *ctx;

/* ---- helpers ------------------------------------------------------------ */
static prn_tensor *mk(int ndim, const size_t *shape, const double *v) {
    prn_tensor *t = NULL;
    if (prn_tensor_from_host(ctx, PRN_F64, ndim, shape, v, &t) != PRN_OK)
        printf("    mk failed: %s\n", prn_last_error(ctx));
    return t;
}
/* Checks t's shape and values against expectations (abs tol 1e-12). */
static void expect(prn_tensor *t, int ndim, const size_t *shape, const double *want, const char *what) {
    double got[64];
    size_t n = 1, i;
    int k;
    PRNT_CHECK(t != NULL, "%s: no tensor", what);
    if (!t) return;
    PRNT_CHECK(prn_tensor_ndim(t) == ndim, "%s: ndim %d, want %d", what, prn_tensor_ndim(t), ndim);
    for (k = 0; k < ndim; ++k) {
        PRNT_CHECK(prn_tensor_dim(t, k) == shape[k], "%s: dim %d is %zu, want %zu", what, k, prn_tensor_dim(t, k), shape[k]);
        n *= shape[k];
    }
    if (n > 64 || n != prn_tensor_numel(t)) { PRNT_CHECK(0, "%s: numel %zu", what, prn_tensor_numel(t)); return; }
    PRNT_OK(ctx, prn_tensor_download(t, got, n));
    for (i = 0; i < n; ++i)
        PRNT_CHECK(fabs(got[i] - want[i]) <= 1e-12 * (1 + fabs(want[i])), "%s: [%zu] = %.15g, want %.15g", what, i,
                   got[i], want[i]);
}

/* ---- finite-difference gradient check ----------------------------------- */
typedef prn_status (*op_fn)(prn_tensor **in, prn_tensor **out, const void *arg);

typedef struct {
    int n_in;
    int ndim[3];
    size_t shape[3][4];
    double lo[3], hi[3];  /* sampling range of each input                  */
    double gap;           /* keep |x| >= gap (kinks at 0: relu, ...)       */
} gc_spec;

/* L = sum(op(in) * W) for a fixed random W; returns L. */
static double eval_loss(op_fn f, prn_tensor **in, const void *arg, prn_tensor *W, int *ok) {
    prn_tensor *y = NULL, *p = NULL, *s = NULL;
    double v = NAN;
    prn_no_grad_begin(ctx);
    *ok = f(in, &y, arg) == PRN_OK && prn_mul(ctx, y, W, &p) == PRN_OK &&
          prn_sum(ctx, p, PRN_ALL_AXES, 0, &s) == PRN_OK && prn_tensor_item(s, &v) == PRN_OK;
    prn_no_grad_end(ctx);
    prn_tensor_free(y); prn_tensor_free(p); prn_tensor_free(s);
    return v;
}

static void gradcheck(const char *name, op_fn f, const gc_spec *sp, const void *arg) {
    prn_tensor *in[3] = {NULL, NULL, NULL}, *y = NULL, *W = NULL, *p = NULL, *L = NULL;
    double *x[3] = {NULL, NULL, NULL}, worst = 0;
    size_t n[3] = {0, 0, 0}, j;
    int k, ok;
    prn_seed(ctx, 1234);
    for (k = 0; k < sp->n_in; ++k) {
        PRNT_OK(ctx, prn_tensor_uniform(ctx, PRN_F64, sp->ndim[k], sp->shape[k], sp->lo[k], sp->hi[k], &in[k]));
        n[k] = prn_tensor_numel(in[k]);
        x[k] = (double *)malloc((n[k] ? n[k] : 1) * sizeof(double));
        prn_tensor_download(in[k], x[k], n[k]);
        for (j = 0; j < n[k]; ++j)
            if (fabs(x[k][j]) < sp->gap) x[k][j] = x[k][j] < 0 ? x[k][j] - sp->gap : x[k][j] + sp->gap;
        prn_tensor_upload(in[k], x[k], n[k]);
        prn_tensor_set_requires_grad(in[k], 1);
    }
    PRNT_OK(ctx, f(in, &y, arg));
    if (!y) goto done;
    {
        size_t ys[4];
        int d;
        for (d = 0; d < prn_tensor_ndim(y); ++d) ys[d] = prn_tensor_dim(y, d);
        PRNT_OK(ctx, prn_tensor_normal(ctx, PRN_F64, prn_tensor_ndim(y), ys, 0, 1, &W));
    }
    PRNT_OK(ctx, prn_mul(ctx, y, W, &p));
    PRNT_OK(ctx, prn_sum(ctx, p, PRN_ALL_AXES, 0, &L));
    PRNT_OK(ctx, prn_backward(ctx, L));
    for (k = 0; k < sp->n_in; ++k) {
        double *ga = (double *)malloc((n[k] ? n[k] : 1) * sizeof(double));
        prn_tensor *g = prn_tensor_grad(in[k]);
        PRNT_CHECK(g != NULL || n[k] == 0, "%s: input %d got no gradient", name, k);
        if (g) prn_tensor_download(g, ga, n[k]);
        for (j = 0; g && j < n[k]; ++j) {
            const double h = 1e-6, x0 = x[k][j];
            double lp, lm, num, err;
            x[k][j] = x0 + h; prn_tensor_upload(in[k], x[k], n[k]);
            lp = eval_loss(f, in, arg, W, &ok);
            x[k][j] = x0 - h; prn_tensor_upload(in[k], x[k], n[k]);
            lm = eval_loss(f, in, arg, W, &ok);
            x[k][j] = x0; prn_tensor_upload(in[k], x[k], n[k]);
            num = (lp - lm) / (2 * h);
            err = fabs(num - ga[j]) / (fabs(num) > 1 ? fabs(num) : 1);
            if (err > worst) worst = err;
            PRNT_CHECK(err <= 1e-6, "%s: d/d in%d[%zu]: analytic %.12g numeric %.12g (rel err %.3g)", name, k, j, ga[j],
                       num, err);
        }
        free(ga);
    }
done:
    printf("    %-28s max rel err %.2e\n", name, worst);
    for (k = 0; k < sp->n_in; ++k) { prn_tensor_free(in[k]); free(x[k]); }
    prn_tensor_free(y); prn_tensor_free(W); prn_tensor_free(p); prn_tensor_free(L);
    PRNT_CHECK(prn_tape_size(ctx) == 0, "%s: tape not empty after backward", name);
}

static gc_spec spec1(int nd, size_t a, size_t b, size_t c, double lo, double hi) {
    gc_spec s;
    memset(&s, 0, sizeof s);
    s.n_in = 1;
    s.ndim[0] = nd;
    s.shape[0][0] = a; s.shape[0][1] = b; s.shape[0][2] = c; s.shape[0][3] = 1;
    s.lo[0] = lo; s.hi[0] = hi;
    return s;
}
static gc_spec spec2(int nda, const size_t *sa, int ndb, const size_t *sb, double lo, double hi) {
    gc_spec s;
    int i;
    memset(&s, 0, sizeof s);
    s.n_in = 2;
    s.ndim[0] = nda; s.ndim[1] = ndb;
    for (i = 0; i < nda; ++i) s.shape[0][i] = sa[i];
    for (i = 0; i < ndb; ++i) s.shape[1][i] = sb[i];
    s.lo[0] = s.lo[1] = lo; s.hi[0] = s.hi[1] = hi;
    return s;
}

/* op wrappers */
static prn_status f_add(prn_tensor **i, prn_tensor **o, const void *a) { (void)a; return prn_add(ctx, i[0], i[1], o); }
static prn_status f_sub(prn_tensor **i, prn_tensor **o, const void *a) { (void)a; return prn_sub(ctx, i[0], i[1], o); }
static prn_status f_mul(prn_tensor **i, prn_tensor **o, const void *a) { (void)a; return prn_mul(ctx, i[0], i[1], o); }
static prn_status f_div(prn_tensor **i, prn_tensor **o, const void *a) { (void)a; return prn_div(ctx, i[0], i[1], o); }
static prn_status f_pow(prn_tensor **i, prn_tensor **o, const void *a) { (void)a; return prn_pow(ctx, i[0], i[1], o); }
static prn_status f_neg(prn_tensor **i, prn_tensor **o, const void *a) { (void)a; return prn_neg(ctx, i[0], o); }
static prn_status f_exp(prn_tensor **i, prn_tensor **o, const void *a) { (void)a; return prn_exp(ctx, i[0], o); }
static prn_status f_log(prn_tensor **i, prn_tensor **o, const void *a) { (void)a; return prn_log(ctx, i[0], o); }
static prn_status f_relu(prn_tensor **i, prn_tensor **o, const void *a) { (void)a; return prn_relu(ctx, i[0], o); }
static prn_status f_sigmoid(prn_tensor **i, prn_tensor **o, const void *a) { (void)a; return prn_sigmoid(ctx, i[0], o); }
static prn_status f_tanh(prn_tensor **i, prn_tensor **o, const void *a) { (void)a; return prn_tanh(ctx, i[0], o); }
static prn_status f_copy(prn_tensor **i, prn_tensor **o, const void *a) { (void)a; return prn_copy(ctx, i[0], o); }
static prn_status f_pows(prn_tensor **i, prn_tensor **o, const void *a) { return prn_pow_scalar(ctx, i[0], *(const double *)a, o); }
static prn_status f_scale(prn_tensor **i, prn_tensor **o, const void *a) { return prn_scale(ctx, i[0], *(const double *)a, o); }
static prn_status f_adds(prn_tensor **i, prn_tensor **o, const void *a) { return prn_add_scalar(ctx, i[0], *(const double *)a, o); }
static prn_status f_bcast(prn_tensor **i, prn_tensor **o, const void *a) {
    const size_t *s = (const size_t *)a;
    return prn_broadcast(ctx, i[0], (int)s[0], s + 1, o);
}
static prn_status f_reshape(prn_tensor **i, prn_tensor **o, const void *a) {
    const size_t *s = (const size_t *)a;
    return prn_reshape(ctx, i[0], (int)s[0], s + 1, o);
}
static prn_status f_transpose(prn_tensor **i, prn_tensor **o, const void *a) {
    const int *ax = (const int *)a;
    return prn_transpose(ctx, i[0], ax[0], ax[1], o);
}
static prn_status f_matmul(prn_tensor **i, prn_tensor **o, const void *a) {
    const int *t = (const int *)a;
    return prn_matmul_ex(ctx, i[0], t[0], i[1], t[1], o);
}
typedef struct { int axis, keep; } red_arg;
static prn_status f_sum(prn_tensor **i, prn_tensor **o, const void *a) {
    const red_arg *r = (const red_arg *)a; return prn_sum(ctx, i[0], r->axis, r->keep, o);
}
static prn_status f_mean(prn_tensor **i, prn_tensor **o, const void *a) {
    const red_arg *r = (const red_arg *)a; return prn_mean(ctx, i[0], r->axis, r->keep, o);
}
static prn_status f_max(prn_tensor **i, prn_tensor **o, const void *a) {
    const red_arg *r = (const red_arg *)a; return prn_max(ctx, i[0], r->axis, r->keep, o);
}
static prn_status f_softmax(prn_tensor **i, prn_tensor **o, const void *a) { return prn_softmax(ctx, i[0], *(const int *)a, o); }
static prn_status f_logsoftmax(prn_tensor **i, prn_tensor **o, const void *a) { return prn_log_softmax(ctx, i[0], *(const int *)a, o); }
static prn_status f_xent(prn_tensor **i, prn_tensor **o, const void *a) {
    /* targets: softmax of the second input, so they are probabilities */
    prn_tensor *t = NULL;
    prn_status s;
    (void)a;
    s = prn_softmax(ctx, i[1], -1, &t);
    if (s == PRN_OK) s = prn_cross_entropy(ctx, i[0], t, o);
    prn_tensor_free(t);
    return s;
}
static prn_status f_mse(prn_tensor **i, prn_tensor **o, const void *a) { (void)a; return prn_mse(ctx, i[0], i[1], o); }

typedef struct { int reverse, algo, block, h0; } scan_arg;
static prn_status f_scan(prn_tensor **i, prn_tensor **o, const void *a) {
    const scan_arg *sa = (const scan_arg *)a;
    prn_tensor *h0 = sa->h0 ? i[2] : NULL;
    return sa->block ? prn_scan_block(ctx, i[0], i[1], h0, sa->reverse, (prn_scan_algo)sa->algo, o)
                     : prn_scan_diag(ctx, i[0], i[1], h0, sa->reverse, (prn_scan_algo)sa->algo, o);
}
static prn_status f_slice(prn_tensor **i, prn_tensor **o, const void *a) {
    const size_t *s = (const size_t *)a;
    return prn_slice(ctx, i[0], (int)s[0], s[1], s[2], o);
}

/* ---- forward tests with hand-computed values ---------------------------- */
static void test_forward_elementwise(void) {
    const size_t s23[2] = {2, 3}, s3[1] = {3}, s21[2] = {2, 1};
    const double a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, c[2] = {2, 4};
    prn_tensor *A = mk(2, s23, a), *B = mk(1, s3, b), *C = mk(2, s21, c), *y = NULL;
    { const double w[6] = {11, 22, 33, 14, 25, 36}; PRNT_OK(ctx, prn_add(ctx, A, B, &y)); expect(y, 2, s23, w, "add bcast row"); prn_tensor_free(y); }
    { const double w[6] = {-9, -18, -27, -6, -15, -24}; PRNT_OK(ctx, prn_sub(ctx, A, B, &y)); expect(y, 2, s23, w, "sub"); prn_tensor_free(y); }
    { const double w[6] = {2, 4, 6, 16, 20, 24}; PRNT_OK(ctx, prn_mul(ctx, A, C, &y)); expect(y, 2, s23, w, "mul bcast col"); prn_tensor_free(y); }
    { const double w[6] = {0.5, 1, 1.5, 1, 1.25, 1.5}; PRNT_OK(ctx, prn_div(ctx, A, C, &y)); expect(y, 2, s23, w, "div"); prn_tensor_free(y); }
    { const double w[6] = {1, 4, 9, 256, 625, 1296}; PRNT_OK(ctx, prn_pow(ctx, A, C, &y)); expect(y, 2, s23, w, "pow"); prn_tensor_free(y); }
    { const double w[6] = {-1, -2, -3, -4, -5, -6}; PRNT_OK(ctx, prn_neg(ctx, A, &y)); expect(y, 2, s23, w, "neg"); prn_tensor_free(y); }
    { const double w[6] = {1, 8, 27, 64, 125, 216}; PRNT_OK(ctx, prn_pow_scalar(ctx, A, 3, &y)); expect(y, 2, s23, w, "pow_scalar"); prn_tensor_free(y); }
    { const double w[6] = {2.5, 5, 7.5, 10, 12.5, 15}; PRNT_OK(ctx, prn_scale(ctx, A, 2.5, &y)); expect(y, 2, s23, w, "scale"); prn_tensor_free(y); }
    { const double w[6] = {0, 1, 2, 3, 4, 5}; PRNT_OK(ctx, prn_add_scalar(ctx, A, -1, &y)); expect(y, 2, s23, w, "add_scalar"); prn_tensor_free(y); }
    { const double w[6] = {1, 2, 3, 4, 5, 6}; PRNT_OK(ctx, prn_copy(ctx, A, &y)); expect(y, 2, s23, w, "copy"); prn_tensor_free(y); }
    prn_tensor_free(A); prn_tensor_free(B); prn_tensor_free(C);
}

static void test_forward_unary(void) {
    const size_t s4[1] = {4};
    const double x[4] = {-2, -0.5, 0.5, 1};
    prn_tensor *X = mk(1, s4, x), *y = NULL;
    double w[4];
    int i;
    for (i = 0; i < 4; ++i) w[i] = exp(x[i]);
    PRNT_OK(ctx, prn_exp(ctx, X, &y)); expect(y, 1, s4, w, "exp"); prn_tensor_free(y);
    for (i = 0; i < 4; ++i) w[i] = x[i] > 0 ? x[i] : 0;
    PRNT_OK(ctx, prn_relu(ctx, X, &y)); expect(y, 1, s4, w, "relu"); prn_tensor_free(y);
    for (i = 0; i < 4; ++i) w[i] = 1 / (1 + exp(-x[i]));
    PRNT_OK(ctx, prn_sigmoid(ctx, X, &y)); expect(y, 1, s4, w, "sigmoid"); prn_tensor_free(y);
    for (i = 0; i < 4; ++i) w[i] = tanh(x[i]);
    PRNT_OK(ctx, prn_tanh(ctx, X, &y)); expect(y, 1, s4, w, "tanh"); prn_tensor_free(y);
    prn_tensor_free(X);
    {
        const double p[4] = {1, 2.718281828459045, 0.5, 4};
        const double wl[4] = {0, 1, -0.69314718055994529, 1.3862943611198906};
        X = mk(1, s4, p);
        PRNT_OK(ctx, prn_log(ctx, X, &y)); expect(y, 1, s4, wl, "log");
        prn_tensor_free(y); prn_tensor_free(X);
    }
}

static void test_forward_shape_ops(void) {
    const size_t s23[2] = {2, 3}, s32[2] = {3, 2}, s6[1] = {6}, s223[3] = {2, 2, 3}, s13[2] = {1, 3};
    const double a[6] = {1, 2, 3, 4, 5, 6}, r[3] = {7, 8, 9};
    prn_tensor *A = mk(2, s23, a), *R = mk(2, s13, r), *y = NULL;
    { const double w[6] = {1, 4, 2, 5, 3, 6}; PRNT_OK(ctx, prn_transpose(ctx, A, 0, 1, &y)); expect(y, 2, s32, w, "transpose"); prn_tensor_free(y); }
    { PRNT_OK(ctx, prn_reshape(ctx, A, 1, s6, &y)); expect(y, 1, s6, a, "reshape"); prn_tensor_free(y); }
    { const double w[12] = {7, 8, 9, 7, 8, 9, 7, 8, 9, 7, 8, 9}; PRNT_OK(ctx, prn_broadcast(ctx, R, 3, s223, &y)); expect(y, 3, s223, w, "broadcast"); prn_tensor_free(y); }
    {   /* transpose of a 3-D tensor, axes 0 and 2 */
        const size_t s[3] = {2, 1, 3}, st[3] = {3, 1, 2};
        const double w[6] = {1, 4, 2, 5, 3, 6};
        prn_tensor *T = mk(3, s, a);
        PRNT_OK(ctx, prn_transpose(ctx, T, 0, -1, &y)); expect(y, 3, st, w, "transpose 3d"); prn_tensor_free(y);
        prn_tensor_free(T);
    }
    prn_tensor_free(A); prn_tensor_free(R);
}

static void test_forward_matmul(void) {
    const size_t s23[2] = {2, 3}, s32[2] = {3, 2}, s22[2] = {2, 2}, s33[2] = {3, 3}, s223[3] = {2, 2, 3}, s222[3] = {2, 2, 2};
    const double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1};
    prn_tensor *A = mk(2, s23, a), *B = mk(2, s32, b), *y = NULL;
    { const double w[4] = {4, 5, 10, 11}; PRNT_OK(ctx, prn_matmul(ctx, A, B, &y)); expect(y, 2, s22, w, "matmul"); prn_tensor_free(y); }
    { const double w[4] = {14, 32, 32, 77}; PRNT_OK(ctx, prn_matmul_ex(ctx, A, 0, A, 1, &y)); expect(y, 2, s22, w, "A A^T"); prn_tensor_free(y); }
    { const double w[9] = {17, 22, 27, 22, 29, 36, 27, 36, 45}; PRNT_OK(ctx, prn_matmul_ex(ctx, A, 1, A, 0, &y)); expect(y, 2, s33, w, "A^T A"); prn_tensor_free(y); }
    { const double w[4] = {4, 10, 5, 11}; PRNT_OK(ctx, prn_matmul_ex(ctx, B, 1, A, 1, &y)); expect(y, 2, s22, w, "B^T A^T"); prn_tensor_free(y); }
    {   /* batched A [2,2,3] (second batch = 2*A) times a single B */
        double ab[12];
        int i;
        prn_tensor *AB;
        const double w[8] = {4, 5, 10, 11, 8, 10, 20, 22};
        for (i = 0; i < 6; ++i) { ab[i] = a[i]; ab[6 + i] = 2 * a[i]; }
        AB = mk(3, s223, ab);
        PRNT_OK(ctx, prn_matmul(ctx, AB, B, &y)); expect(y, 3, s222, w, "batched x single"); prn_tensor_free(y);
        prn_tensor_free(AB);
    }
    prn_tensor_free(A); prn_tensor_free(B);
}

static void test_forward_reductions(void) {
    const size_t s23[2] = {2, 3}, s2[1] = {2}, s3[1] = {3}, s21[2] = {2, 1}, s11[2] = {1, 1};
    const double a[6] = {1, 5, 3, 4, 2, 6};
    prn_tensor *A = mk(2, s23, a), *y = NULL;
    { const double w[2] = {9, 12}; PRNT_OK(ctx, prn_sum(ctx, A, 1, 0, &y)); expect(y, 1, s2, w, "sum axis 1"); prn_tensor_free(y); }
    { const double w[3] = {5, 7, 9}; PRNT_OK(ctx, prn_sum(ctx, A, 0, 0, &y)); expect(y, 1, s3, w, "sum axis 0"); prn_tensor_free(y); }
    { const double w[1] = {21}; PRNT_OK(ctx, prn_sum(ctx, A, PRN_ALL_AXES, 0, &y)); expect(y, 0, NULL, w, "sum all"); prn_tensor_free(y); }
    { const double w[1] = {21}; PRNT_OK(ctx, prn_sum(ctx, A, PRN_ALL_AXES, 1, &y)); expect(y, 2, s11, w, "sum all keepdim"); prn_tensor_free(y); }
    { const double w[2] = {3, 4}; PRNT_OK(ctx, prn_mean(ctx, A, -1, 1, &y)); expect(y, 2, s21, w, "mean keepdim"); prn_tensor_free(y); }
    { const double w[2] = {5, 6}; PRNT_OK(ctx, prn_max(ctx, A, 1, 0, &y)); expect(y, 1, s2, w, "max axis 1"); prn_tensor_free(y); }
    { const double w[3] = {4, 5, 6}; PRNT_OK(ctx, prn_max(ctx, A, 0, 0, &y)); expect(y, 1, s3, w, "max axis 0"); prn_tensor_free(y); }
    {
        int32_t idx[3] = {-1, -1, -1};
        PRNT_OK(ctx, prn_argmax(ctx, A, 0, 0, &y));
        PRNT_CHECK(y && prn_tensor_dtype(y) == PRN_I32, "argmax dtype");
        PRNT_OK(ctx, prn_tensor_download(y, idx, 3));
        PRNT_CHECK(idx[0] == 1 && idx[1] == 0 && idx[2] == 1, "argmax axis 0 = %d %d %d", idx[0], idx[1], idx[2]);
        prn_tensor_free(y);
        PRNT_OK(ctx, prn_argmax(ctx, A, PRN_ALL_AXES, 0, &y));
        PRNT_OK(ctx, prn_tensor_download(y, idx, 1));
        PRNT_CHECK(idx[0] == 5, "argmax all = %d", idx[0]);
        prn_tensor_free(y);
    }
    prn_tensor_free(A);
}

static void test_forward_softmax_losses(void) {
    const size_t s23[2] = {2, 3};
    const double x[6] = {1, 2, 3, 0, 0, 0}, t[6] = {0, 0, 1, 1, 0, 0};
    prn_tensor *X = mk(2, s23, x), *T = mk(2, s23, t), *y = NULL;
    double e1 = exp(1.0), e2 = exp(2.0), e3 = exp(3.0), z = e1 + e2 + e3;
    {
        const double w[6] = {e1 / z, e2 / z, e3 / z, 1.0 / 3, 1.0 / 3, 1.0 / 3};
        PRNT_OK(ctx, prn_softmax(ctx, X, -1, &y)); expect(y, 2, s23, w, "softmax"); prn_tensor_free(y);
    }
    {
        const double w[6] = {1 - log(z), 2 - log(z), 3 - log(z), -log(3.0), -log(3.0), -log(3.0)};
        PRNT_OK(ctx, prn_log_softmax(ctx, X, 1, &y)); expect(y, 2, s23, w, "log_softmax"); prn_tensor_free(y);
    }
    {
        const double ws[6] = {exp(1.0) / (exp(1.0) + 1), exp(2.0) / (exp(2.0) + 1), exp(3.0) / (exp(3.0) + 1),
                              1 / (exp(1.0) + 1), 1 / (exp(2.0) + 1), 1 / (exp(3.0) + 1)};
        PRNT_OK(ctx, prn_softmax(ctx, X, 0, &y)); expect(y, 2, s23, ws, "softmax axis 0"); prn_tensor_free(y);
    }
    {
        const double w[1] = {(-(3 - log(z)) + log(3.0)) / 2};
        PRNT_OK(ctx, prn_cross_entropy(ctx, X, T, &y)); expect(y, 0, NULL, w, "cross_entropy"); prn_tensor_free(y);
    }
    {
        const double w[1] = {(1 + 4 + 4 + 1 + 0 + 0) / 6.0};
        PRNT_OK(ctx, prn_mse(ctx, X, T, &y)); expect(y, 0, NULL, w, "mse"); prn_tensor_free(y);
    }
    prn_tensor_free(X); prn_tensor_free(T);
}

static void test_forward_f32(void) {
    /* The same ops in f32 agree with f64 to f32 precision. */
    const size_t s[2] = {5, 7};
    prn_tensor *a64 = NULL, *a32 = NULL, *y64 = NULL, *y32 = NULL;
    float v32[35], r32[35];
    double v64[35], r64[35];
    int i;
    prn_seed(ctx, 7);
    PRNT_OK(ctx, prn_tensor_uniform(ctx, PRN_F64, 2, s, -2, 2, &a64));
    prn_tensor_download(a64, v64, 35);
    for (i = 0; i < 35; ++i) v32[i] = (float)v64[i];
    PRNT_OK(ctx, prn_tensor_from_host(ctx, PRN_F32, 2, s, v32, &a32));
    PRNT_OK(ctx, prn_softmax(ctx, a64, -1, &y64));
    PRNT_OK(ctx, prn_softmax(ctx, a32, -1, &y32));
    prn_tensor_download(y64, r64, 35);
    prn_tensor_download(y32, r32, 35);
    for (i = 0; i < 35; ++i) PRNT_CHECK(fabs(r32[i] - r64[i]) < 1e-6, "softmax f32 [%d] %g vs %g", i, r32[i], r64[i]);
    prn_tensor_free(a64); prn_tensor_free(a32); prn_tensor_free(y64); prn_tensor_free(y32);
}

/* ---- gradient checks ----------------------------------------------------- */
static void test_grad_binary(void) {
    const size_t s34[2] = {3, 4}, s4[1] = {4}, s31[2] = {3, 1}, s214[3] = {2, 1, 4}, s3x1[2] = {3, 1};
    gc_spec sp;
    sp = spec2(2, s34, 2, s34, -2, 2); gradcheck("add", f_add, &sp, NULL);
    sp = spec2(2, s34, 1, s4, -2, 2); gradcheck("add bcast", f_add, &sp, NULL);
    sp = spec2(3, s214, 2, s3x1, -2, 2); gradcheck("sub bcast both", f_sub, &sp, NULL);
    sp = spec2(2, s34, 2, s31, -2, 2); gradcheck("mul bcast", f_mul, &sp, NULL);
    sp = spec2(1, s4, 2, s34, -2, 2); gradcheck("mul bcast left", f_mul, &sp, NULL);
    sp = spec2(2, s34, 1, s4, 0.5, 2); gradcheck("div bcast", f_div, &sp, NULL);
    sp = spec2(2, s34, 2, s31, 0.5, 2); gradcheck("pow", f_pow, &sp, NULL);
    sp = spec2(2, s34, 0, NULL, -2, 2); gradcheck("mul by scalar tensor", f_mul, &sp, NULL);
}

static void test_grad_unary(void) {
    const double p = 2.5, al = -1.75;
    gc_spec sp = spec1(2, 3, 5, 1, -2, 2);
    gradcheck("neg", f_neg, &sp, NULL);
    gradcheck("exp", f_exp, &sp, NULL);
    gradcheck("sigmoid", f_sigmoid, &sp, NULL);
    gradcheck("tanh", f_tanh, &sp, NULL);
    gradcheck("copy", f_copy, &sp, NULL);
    gradcheck("scale", f_scale, &sp, &al);
    gradcheck("add_scalar", f_adds, &sp, &al);
    sp.gap = 0.05;
    gradcheck("relu", f_relu, &sp, NULL);
    sp = spec1(2, 3, 5, 1, 0.2, 3);
    gradcheck("log", f_log, &sp, NULL);
    gradcheck("pow_scalar", f_pows, &sp, &p);
}

static void test_grad_shape_ops(void) {
    /* {ndim, shape...} */
    const size_t bs[4] = {3, 2, 4, 3}, rs2[4] = {3, 3, 1, 4};
    const int t01[2] = {0, 1}, t02[2] = {0, -1};
    gc_spec sp = spec1(2, 4, 3, 1, -1, 1);
    gradcheck("broadcast [4,3]->[2,4,3]", f_bcast, &sp, bs);
    gradcheck("reshape", f_reshape, &sp, rs2);
    gradcheck("transpose 2d", f_transpose, &sp, t01);
    sp = spec1(3, 2, 4, 3, -1, 1);
    gradcheck("transpose 3d (0,2)", f_transpose, &sp, t02);
}

static void test_grad_matmul(void) {
    const size_t s34[2] = {3, 4}, s45[2] = {4, 5}, s43[2] = {4, 3}, s54[2] = {5, 4};
    const size_t b234[3] = {2, 3, 4}, b245[3] = {2, 4, 5}, b145[3] = {1, 4, 5};
    const int nn[2] = {0, 0}, tn[2] = {1, 0}, nt[2] = {0, 1}, tt[2] = {1, 1};
    gc_spec sp;
    sp = spec2(2, s34, 2, s45, -1, 1); gradcheck("matmul", f_matmul, &sp, nn);
    sp = spec2(2, s43, 2, s45, -1, 1); gradcheck("matmul A^T B", f_matmul, &sp, tn);
    sp = spec2(2, s34, 2, s54, -1, 1); gradcheck("matmul A B^T", f_matmul, &sp, nt);
    sp = spec2(2, s43, 2, s54, -1, 1); gradcheck("matmul A^T B^T", f_matmul, &sp, tt);
    sp = spec2(3, b234, 3, b245, -1, 1); gradcheck("matmul batched", f_matmul, &sp, nn);
    sp = spec2(3, b234, 2, s45, -1, 1); gradcheck("matmul batch x single", f_matmul, &sp, nn);
    sp = spec2(2, s34, 3, b245, -1, 1); gradcheck("matmul single x batch", f_matmul, &sp, nn);
    sp = spec2(3, b234, 3, b145, -1, 1); gradcheck("matmul batch x [1,..]", f_matmul, &sp, nn);
}

static void test_grad_reductions(void) {
    const red_arg all = {PRN_ALL_AXES, 0}, ax0 = {0, 0}, ax1k = {1, 1}, axl = {-1, 0};
    const int last = -1, first = 0;
    gc_spec sp = spec1(3, 2, 3, 4, -2, 2);
    gradcheck("sum all", f_sum, &sp, &all);
    gradcheck("sum axis 0", f_sum, &sp, &ax0);
    gradcheck("sum axis 1 keepdim", f_sum, &sp, &ax1k);
    gradcheck("mean axis -1", f_mean, &sp, &axl);
    gradcheck("mean all", f_mean, &sp, &all);
    gradcheck("max axis 1 keepdim", f_max, &sp, &ax1k);
    gradcheck("max axis -1", f_max, &sp, &axl);
    gradcheck("max all", f_max, &sp, &all);
    gradcheck("softmax axis -1", f_softmax, &sp, &last);
    gradcheck("softmax axis 0", f_softmax, &sp, &first);
    gradcheck("log_softmax axis -1", f_logsoftmax, &sp, &last);
    gradcheck("log_softmax axis 0", f_logsoftmax, &sp, &first);
}

static void test_grad_losses(void) {
    const size_t s35[2] = {3, 5}, s235[3] = {2, 3, 5}, s5[1] = {5};
    gc_spec sp;
    sp = spec2(2, s35, 2, s35, -2, 2); gradcheck("cross_entropy", f_xent, &sp, NULL);
    sp = spec2(3, s235, 3, s235, -2, 2); gradcheck("cross_entropy 3-D", f_xent, &sp, NULL);
    sp = spec2(2, s35, 2, s35, -2, 2); gradcheck("mse", f_mse, &sp, NULL);
    sp = spec2(2, s35, 1, s5, -2, 2); gradcheck("mse bcast target", f_mse, &sp, NULL);
}

static void test_grad_scans(void) {
    /* every algorithm, both directions, with and without h0; diagonal,
     * block (k = 2) and dense (k = C = 3); T = 5 and T = 1 */
    static const size_t Ts[2] = {5, 1};
    const size_t sl[3] = {1, 1, 2};
    int al, rev, h0, kind, ti;
    char name[96];
    gc_spec sp;
    for (kind = 0; kind < 3; ++kind)
        for (ti = 0; ti < 2; ++ti)
            for (al = 0; al < PRN_SCAN_ALGO_COUNT; ++al)
                for (rev = 0; rev < 2; ++rev)
                    for (h0 = 0; h0 < 2; ++h0) {
                        scan_arg arg;
                        size_t T = Ts[ti], C = kind == 1 ? 4 : 3, k = kind == 0 ? 0 : kind == 1 ? 2 : 3;
                        memset(&sp, 0, sizeof sp);
                        sp.n_in = h0 ? 3 : 2;
                        sp.ndim[0] = k ? 4 : 3; sp.shape[0][0] = 2; sp.shape[0][1] = T; sp.shape[0][2] = C; sp.shape[0][3] = k;
                        sp.ndim[1] = 3; sp.shape[1][0] = 2; sp.shape[1][1] = T; sp.shape[1][2] = C;
                        sp.ndim[2] = 2; sp.shape[2][0] = 2; sp.shape[2][1] = C;
                        sp.lo[0] = k ? -0.6 : -1.1; sp.hi[0] = k ? 0.6 : 1.1;
                        sp.lo[1] = sp.lo[2] = -1; sp.hi[1] = sp.hi[2] = 1;
                        arg.reverse = rev; arg.algo = al; arg.block = k != 0; arg.h0 = h0;
                        snprintf(name, sizeof name, "scan %s T=%zu %s %s%s", kind == 0 ? "diag" : kind == 1 ? "block k=2" : "dense",
                                 T, al == 0 ? "auto" : al == 1 ? "seq" : al == 2 ? "chunked" : "tree", rev ? "rev" : "fwd",
                                 h0 ? " h0" : "");
                        gradcheck(name, f_scan, &sp, &arg);
                    }
    /* the unbatched form: a [T, C] ([T, C, k]), b [T, C], h0 [C]; time is axis 0 */
    for (kind = 0; kind < 2; ++kind)
        for (rev = 0; rev < 2; ++rev) {
            scan_arg arg;
            size_t T = 4, C = 4, k = kind ? 2 : 0;
            memset(&sp, 0, sizeof sp);
            sp.n_in = 3;
            sp.ndim[0] = k ? 3 : 2; sp.shape[0][0] = T; sp.shape[0][1] = C; sp.shape[0][2] = k;
            sp.ndim[1] = 2; sp.shape[1][0] = T; sp.shape[1][1] = C;
            sp.ndim[2] = 1; sp.shape[2][0] = C;
            sp.lo[0] = k ? -0.6 : -1.1; sp.hi[0] = k ? 0.6 : 1.1;
            sp.lo[1] = sp.lo[2] = -1; sp.hi[1] = sp.hi[2] = 1;
            arg.reverse = rev; arg.algo = PRN_SCAN_AUTO; arg.block = k != 0; arg.h0 = 1;
            snprintf(name, sizeof name, "scan %s [T, C] h0 [C] %s", k ? "block k=2" : "diag", rev ? "rev" : "fwd");
            gradcheck(name, f_scan, &sp, &arg);
        }
    sp = spec1(3, 2, 5, 3, -1, 1);
    gradcheck("slice axis 1", f_slice, &sp, sl);
}

/* The f32 e^x and tanh of the fused gate loops (private, vectorisable):
 * within 2 ulp of libm's exp on [-87, 87] and at most 87's value beyond
 * (infinities too); tanh within 3e-7 absolute; NaN stays NaN. */
static void test_fast_expf(void) {
    double worst = 0, worst_t = 0;
    float at = 0, nan_ = (float)NAN;
    int i;
    for (i = 0; i <= 400000; ++i) {
        float x = -87.0f + 174.0f * (float)i / 400000.0f, y = prn__expf(x), ref = (float)exp((double)x);
        double ulp = (double)nextafterf(ref, (float)INFINITY) - (double)ref, e = fabs((double)y - exp((double)x)) / ulp;
        if (e > worst) { worst = e; at = x; }
    }
    PRNT_CHECK(worst <= 2.0, "prn__expf: %.2f ulp at %g", worst, (double)at);
    for (i = 0; i <= 40000; ++i) {
        float x = -20.0f + 40.0f * (float)i / 40000.0f;
        double e = fabs((double)prn__tanhf(x) - tanh((double)x));
        if (e > worst_t) { worst_t = e; at = x; }
    }
    PRNT_CHECK(worst_t <= 3e-7, "prn__tanhf: error %.2e at %g", worst_t, (double)at);
    PRNT_CHECK(prn__expf(1000.0f) == prn__expf(87.0f) && prn__expf((float)INFINITY) == prn__expf(87.0f) &&
               isfinite(prn__expf(87.0f)), "prn__expf above 87: %g", (double)prn__expf(1000.0f));
    PRNT_CHECK(prn__expf(-1000.0f) == prn__expf(-87.0f) && prn__expf(-(float)INFINITY) == prn__expf(-87.0f) &&
               prn__expf(-87.0f) > 0.0f, "prn__expf below -87: %g", (double)prn__expf(-1000.0f));
    PRNT_CHECK(prn__expf(nan_) != prn__expf(nan_) && prn__tanhf(nan_) != prn__tanhf(nan_), "NaN does not stay NaN");
    PRNT_CHECK(prn__tanhf(100.0f) == 1.0f && prn__tanhf(-100.0f) == -1.0f, "prn__tanhf(+-100) = %g, %g",
               (double)prn__tanhf(100.0f), (double)prn__tanhf(-100.0f));
    printf("    prn__expf worst %.2f ulp; prn__tanhf worst %.2e absolute\n", worst, worst_t);
}

/* Long rows (one thread per chunk of them on the reference backend): a
 * sum's bits do not depend on the thread count (f64 values over a wide
 * range, so that any other grouping shows in the last bits), and an f32
 * sum is within f32 rounding of the host's sum in double; a maximum skips
 * NaNs and, when it is zero, is the first zero with its sign, as one pass
 * in order gives (the two zeros 15 apart: the later one in the lower of
 * the loop's lanes). */
static void test_long_reductions(void) {
    const size_t n = 3000003; /* 256 chunks, and a tail past the lanes */
    size_t sh[1], sh2[2], i;
    float *x = (float *)malloc(n * sizeof(float));
    double host = 0.0, mag = 0.0, got[2] = {0, 0}, d64[2] = {0, 0};
    double *xd = (double *)malloc(n * sizeof(double));
    prn_tensor *X = NULL, *y = NULL;
    int t, k;
    sh[0] = n;
    if (!x || !xd) { PRNT_CHECK(0, "out of host memory"); free(x); free(xd); return; }
    for (i = 0; i < n; ++i) x[i] = (float)((double)((i * 2654435761u) % 100003) / 100003.0 - 0.3) * (i % 7 ? 1.0f : 1e4f);
    for (i = 0; i < n; ++i) { host += x[i]; mag += fabs(x[i]); }
    for (i = 0; i < n; ++i) xd[i] = (double)x[i] * (1.0 + 1e-9 * (double)(i % 1009)) * (i % 3 ? 1e-12 : 1.0);
    for (t = 1; t <= 2; ++t) {
        prn_config cfg;
        prn_context *c = NULL;
        char err[256];
        memset(&cfg, 0, sizeof cfg);
        cfg.seed = 7;
        cfg.num_threads = t;
        if (prn_context_create(&cfg, &c, err, sizeof err) != PRN_OK) { PRNT_CHECK(0, "context: %s", err); break; }
        PRNT_OK(c, prn_tensor_from_host(c, PRN_F32, 1, sh, x, &X));
        PRNT_OK(c, prn_sum(c, X, PRN_ALL_AXES, 0, &y));
        PRNT_OK(c, prn_tensor_item(y, &got[t - 1]));
        prn_tensor_free(y); y = NULL;
        /* the same values as 3 rows: each its own sum, the same split */
        sh2[0] = 3; sh2[1] = n / 3;
        {
            prn_tensor *R = NULL;
            float r3[3];
            double h3[3] = {0, 0, 0};
            PRNT_OK(c, prn_reshape(c, X, 2, sh2, &R));
            PRNT_OK(c, prn_sum(c, R, 1, 0, &y));
            PRNT_OK(c, prn_tensor_download(y, r3, 3));
            for (i = 0; i < n; ++i) h3[i / (n / 3)] += x[i];
            for (k = 0; k < 3; ++k)
                PRNT_CHECK(fabs(r3[k] - h3[k]) <= 1e-6 * mag, "row %d's sum %.9g, host %.9g", k, (double)r3[k], h3[k]);
            prn_tensor_free(y); y = NULL;
            prn_tensor_free(R);
        }
        prn_tensor_free(X); X = NULL;
        PRNT_OK(c, prn_tensor_from_host(c, PRN_F64, 1, sh, xd, &X));
        PRNT_OK(c, prn_sum(c, X, PRN_ALL_AXES, 0, &y));
        PRNT_OK(c, prn_tensor_item(y, &d64[t - 1]));
        prn_tensor_free(y); y = NULL;
        prn_tensor_free(X); X = NULL;
        prn_context_free(c);
    }
    PRNT_CHECK(memcmp(&d64[0], &d64[1], sizeof d64[0]) == 0, "f64 sum on 1 thread %.17g, on 2 %.17g", d64[0], d64[1]);
    PRNT_CHECK(memcmp(&got[0], &got[1], sizeof got[0]) == 0, "sum on 1 thread %.17g, on 2 %.17g", got[0], got[1]);
    PRNT_CHECK(fabs(got[0] - host) <= 1e-6 * mag, "sum %.9g, host %.9g (sum |x| %.3g)", got[0], host, mag);
    /* maxima: negative values, NaNs, two zeros of either sign */
    for (k = 0; k < 2; ++k) {
        float m = 0.0f;
        for (i = 0; i < n; ++i) x[i] = i % 1001 == 5 ? NAN : -1.0f - (float)(i % 977);
        x[n - 1] = -0.5f;
        x[2000001] = k ? 0.0f : -0.0f;
        x[2000016] = k ? -0.0f : 0.0f;
        PRNT_OK(ctx, prn_tensor_from_host(ctx, PRN_F32, 1, sh, x, &X));
        PRNT_OK(ctx, prn_max(ctx, X, PRN_ALL_AXES, 0, &y));
        PRNT_OK(ctx, prn_tensor_download(y, &m, 1));
        /* the sign: the reference backend's own order (a device's tree of
         * maxima may take either zero) */
        PRNT_CHECK(m == 0.0f && (strncmp(prn_context_backend_name(ctx), "reference", 9) != 0 || !signbit(m) == (k == 1)),
                   "max %g (sign bit %d), want the first zero's sign (%d)", (double)m, signbit(m) != 0, k == 0);
        prn_tensor_free(y); y = NULL;
        prn_tensor_free(X); X = NULL;
        { /* the same in f64 (its own loop) */
            double md = 1.0;
            for (i = 0; i < n; ++i) xd[i] = x[i];
            PRNT_OK(ctx, prn_tensor_from_host(ctx, PRN_F64, 1, sh, xd, &X));
            PRNT_OK(ctx, prn_max(ctx, X, PRN_ALL_AXES, 0, &y));
            PRNT_OK(ctx, prn_tensor_download(y, &md, 1));
            PRNT_CHECK(md == 0.0 && (strncmp(prn_context_backend_name(ctx), "reference", 9) != 0 || !signbit(md) == (k == 1)),
                       "f64 max %g (sign bit %d), want the first zero's sign (%d)", md, signbit(md) != 0, k == 0);
            prn_tensor_free(y); y = NULL;
        }
        x[2000001] = x[2000016] = -3.0f;
        prn_tensor_free(X);
        PRNT_OK(ctx, prn_tensor_from_host(ctx, PRN_F32, 1, sh, x, &X));
        PRNT_OK(ctx, prn_max(ctx, X, PRN_ALL_AXES, 0, &y));
        PRNT_OK(ctx, prn_tensor_download(y, &m, 1));
        PRNT_CHECK(m == -0.5f, "max %g, want -0.5 (the last element; NaNs skipped)", (double)m);
        prn_tensor_free(y); y = NULL;
        prn_tensor_free(X); X = NULL;
    }
    free(x);
    free(xd);
}

static void test_max_ties(void) {
    /* Ties share the gradient evenly. */
    const size_t s4[1] = {4};
    const double x[4] = {1, 3, 3, 0};
    prn_tensor *X = mk(1, s4, x), *y = NULL;
    double g[4];
    prn_tensor_set_requires_grad(X, 1);
    PRNT_OK(ctx, prn_max(ctx, X, 0, 0, &y));
    PRNT_OK(ctx, prn_backward(ctx, y));
    PRNT_OK(ctx, prn_tensor_download(prn_tensor_grad(X), g, 4));
    PRNT_CHECK(g[0] == 0 && g[1] == 0.5 && g[2] == 0.5 && g[3] == 0, "grad %g %g %g %g", g[0], g[1], g[2], g[3]);
    prn_tensor_free(X); prn_tensor_free(y);
}

static void test_edge_cases(void) {
    /* empty matrices: K = 0 gives zeros, M = 0 or N = 0 an empty result */
    const size_t s30[2] = {3, 0}, s04[2] = {0, 4}, s34[2] = {3, 4}, s03[2] = {0, 3}, s2033[3] = {2, 0, 3}, s234[3] = {2, 3, 4};
    prn_tensor *a = NULL, *b = NULL, *y = NULL, *big = NULL;
    double v[12];
    int i;
    PRNT_OK(ctx, prn_tensor_full(ctx, PRN_F64, 2, s34, 7.0, &big)); /* leave 7s in a freed buffer */
    prn_tensor_free(big);
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 2, s30, &a));
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 2, s04, &b));
    PRNT_OK(ctx, prn_matmul(ctx, a, b, &y));
    PRNT_CHECK(y && prn_tensor_numel(y) == 12, "K = 0 shape");
    if (y) { prn_tensor_download(y, v, 12); for (i = 0; i < 12; ++i) PRNT_CHECK(v[i] == 0, "K = 0 gives zeros: %g", v[i]); }
    prn_tensor_free(a); prn_tensor_free(b); prn_tensor_free(y); a = b = y = NULL;
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 2, s03, &a));
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 2, s34, &b));
    PRNT_OK(ctx, prn_matmul(ctx, a, b, &y));
    PRNT_CHECK(y && prn_tensor_dim(y, 0) == 0 && prn_tensor_dim(y, 1) == 4, "M = 0 shape");
    prn_tensor_free(a); prn_tensor_free(y); a = y = NULL;
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 3, s2033, &a));
    prn_tensor_free(b); b = NULL;
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 3, s234, &b));
    PRNT_OK(ctx, prn_matmul(ctx, a, b, &y));
    prn_tensor_free(a); prn_tensor_free(b); prn_tensor_free(y); a = b = y = NULL;
    /* softmax over an empty axis */
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F32, 2, s30, &a));
    PRNT_OK(ctx, prn_softmax(ctx, a, 1, &y));
    prn_tensor_free(a); prn_tensor_free(y); a = y = NULL;
    /* x^0 has gradient 0, also at x = 0 */
    {
        const size_t s3[1] = {3};
        const double xv[3] = {0, 1, 2}, zv[3] = {0, 0, 0};
        prn_tensor *x = NULL, *z = NULL, *p = NULL, *q = NULL, *s = NULL, *t = NULL;
        double g[3];
        x = mk(1, s3, xv); z = mk(1, s3, zv);
        prn_tensor_set_requires_grad(x, 1);
        PRNT_OK(ctx, prn_pow_scalar(ctx, x, 0, &p));
        PRNT_OK(ctx, prn_pow(ctx, x, z, &q));
        PRNT_OK(ctx, prn_add(ctx, p, q, &s));
        PRNT_OK(ctx, prn_sum(ctx, s, PRN_ALL_AXES, 0, &t));
        PRNT_OK(ctx, prn_backward(ctx, t));
        prn_tensor_download(prn_tensor_grad(x), g, 3);
        PRNT_CHECK(g[0] == 0 && g[1] == 0 && g[2] == 0, "d x^0 / dx = %g %g %g", g[0], g[1], g[2]);
        prn_tensor_free(x); prn_tensor_free(z); prn_tensor_free(p); prn_tensor_free(q); prn_tensor_free(s); prn_tensor_free(t);
    }
    /* i32 fill values must be int32 */
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F64, 2, s34, &a));
    PRNT_OK(ctx, prn_argmax(ctx, a, 1, 0, &y));
    PRNT_STATUS(ctx, prn_tensor_fill(y, 1e20), PRN_ERR_INVALID_ARGUMENT);
    PRNT_STATUS(ctx, prn_tensor_fill(y, 0.5), PRN_ERR_INVALID_ARGUMENT);
    PRNT_OK(ctx, prn_tensor_fill(y, -3));
    prn_tensor_free(a); prn_tensor_free(y);
    /* a message built from the previous one */
    prn_set_error(ctx, PRN_ERR_SHAPE, "inner: argument 'a' is bad");
    prn_set_error(ctx, PRN_ERR_SHAPE, "outer: %s", prn_last_error(ctx));
    PRNT_CHECK(strcmp(prn_last_error(ctx), "outer: inner: argument 'a' is bad") == 0, "got '%s'", prn_last_error(ctx));
    prn_clear_error(ctx);
    /* NULL contexts */
    PRNT_CHECK(prn_alloc(NULL, 8) == NULL && prn_backend_state(NULL) == NULL && prn_context_num_threads(NULL) >= 1,
               "NULL context");
    prn_free(NULL, NULL);
}

static void test_no_leaks(void) {
    PRNT_CHECK(prn_live_tensors(ctx) == 0, "tensors leaked: %zu", prn_live_tensors(ctx));
}

int main(void) {
    if (!(ctx = prnt_context(42))) return 1;
    PRNT_RUN(test_forward_elementwise);
    PRNT_RUN(test_forward_unary);
    PRNT_RUN(test_forward_shape_ops);
    PRNT_RUN(test_forward_matmul);
    PRNT_RUN(test_forward_reductions);
    PRNT_RUN(test_forward_softmax_losses);
    PRNT_RUN(test_forward_f32);
    PRNT_RUN(test_grad_binary);
    PRNT_RUN(test_grad_unary);
    PRNT_RUN(test_grad_shape_ops);
    PRNT_RUN(test_grad_matmul);
    PRNT_RUN(test_grad_reductions);
    PRNT_RUN(test_grad_losses);
    PRNT_RUN(test_grad_scans);
    PRNT_RUN(test_fast_expf);
    PRNT_RUN(test_long_reductions);
    PRNT_RUN(test_max_ties);
    PRNT_RUN(test_edge_cases);
    PRNT_RUN(test_no_leaks);
    prn_context_free(ctx);
    return prnt_summary();
}
