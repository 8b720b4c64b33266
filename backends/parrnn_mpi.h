/* parrnn_mpi.h - parrnn across MPI ranks: sequence-parallel scans and DEER,
 * data-parallel gradients, and SCYFI with its candidates split over ranks.
 *
 * USE
 *   In ONE C or C++ file, after the implementation of parrnn.h:
 *       #define PARRNN_MPI_IMPLEMENTATION
 *       #include "backends/parrnn_mpi.h"
 *   compile with mpicc (Open MPI: Debian's openmpi-bin and libopenmpi-dev)
 *   and start the program with mpirun:
 *       mpirun -np 4 ./prog                        (4 ranks on this machine)
 *       mpirun -np 8 --hostfile hosts ./prog       (over the hosts listed)
 *   parrnn.h itself has no MPI dependency: only this header includes mpi.h,
 *   and it uses only parrnn's public API.
 *
 * MODEL
 *   Every rank runs the same program (SPMD) with its own prn_context, on any
 *   backend ("reference", "opencl", "cuda"; ranks may even differ). Tensors
 *   stay in each rank's backend memory; what crosses ranks (one carry per
 *   rank and batch row, gradients, SCYFI's cycles) is staged through host
 *   memory in f64, so no CUDA-aware MPI is needed.
 *
 *   Every function here is collective over the prn_mpi's communicator: all
 *   ranks call it, in the same order, with arguments that agree (dtype,
 *   batch, channels, options). Ranks check their inputs and then agree on
 *   the outcome before any data moves: when one rank fails (bad input, an
 *   allocation, its backend, a callback), every rank returns an error,
 *   none hangs. The failing rank keeps its own message; the others get
 *   PRN_ERR_REMOTE with "rank r failed: <its message>".
 *
 * SEQUENCES SPLIT OVER RANKS
 *   A sequence of length T is cut into contiguous slices, rank 0 holding the
 *   first: rank r holds steps start_r .. start_r + T_r - 1 (prn_mpi_split
 *   gives an even split; any split works, T_r = 0 included: pass tensors
 *   with a time axis of 0). Tensors are the rank's slice with the shapes of
 *   the single-process functions.
 *
 * GRADIENTS
 *   The ops below are recorded on each rank's tape. Their backward passes
 *   are collective too: when one rank calls prn_backward, every rank must,
 *   on a loss that depends on the op's output (a rank with nothing to add
 *   may use prn_sum of its, possibly empty, slice times 0). The gradients
 *   are those of the sum of the ranks' losses; parameters shared by the
 *   ranks (a DEER cell's weights) get this rank's part, which
 *   prn_mpi_allreduce_grads sums.
 *
 * Compiles as C99 and as C++ (with Open MPI, define OMPI_SKIP_MPICXX: its
 * old C++ bindings do not build with -Wextra -Werror). MIT licence, as
 * parrnn.h.
 */
#ifndef PARRNN_MPI_H
#define PARRNN_MPI_H
#include "../parrnn.h"
#include <mpi.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct prn_mpi prn_mpi;

/* Wraps comm (duplicated: parrnn's traffic never mixes with the caller's)
 * for use with ctx's allocator. Collective. */
PRNDEF prn_status prn_mpi_create(prn_context *ctx, MPI_Comm comm, prn_mpi **out);
/* Collective (frees the duplicated communicators). NULL is ok. */
PRNDEF void prn_mpi_free(prn_mpi *mpi);
PRNDEF int prn_mpi_rank(const prn_mpi *mpi);
PRNDEF int prn_mpi_size(const prn_mpi *mpi);

/* The even split of T steps over the ranks: the first T % size ranks get
 * one more. */
PRNDEF void prn_mpi_split(const prn_mpi *mpi, size_t T, int rank, size_t *start, size_t *len);

/* The status every rank agrees on: PRN_OK when status is PRN_OK on every
 * rank; otherwise the first failing rank's status on it, and
 * PRN_ERR_REMOTE (message "fn: rank r failed: ...") on the others. Use it
 * in your own SPMD code before collective steps. */
PRNDEF prn_status prn_mpi_agree(prn_context *ctx, prn_mpi *mpi, const char *fn, prn_status status);

/* Sequence-parallel scans: prn_scan_diag / prn_scan_block over a sequence
 * split across ranks. a, b: this rank's slice ([B, T_r, C] or [T_r, C];
 * block a [B, T_r, C, k]); h0: the sequence's initial state, read on the
 * rank where the scan starts (rank 0; the last rank when reverse),
 * ignored elsewhere (may be NULL there; NULL: zeros). out: this rank's
 * slice of h. final (may be NULL): the state after the whole sequence, on
 * every rank (not recorded on the tape).
 *
 * How: each rank reduces its slice to one affine map h -> M h + v on its
 * backend (a local scan from zero and the product of its a's), MPI_Exscan
 * composes the maps of the ranks before it (a user-defined, non-commutative
 * operator, in f64), and a local scan from the carry gives the slice.
 * Backward is the adjoint recurrence run the other way with A^T, the same
 * way across ranks (a second exclusive scan, of the maps' transposes). */
PRNDEF prn_status prn_mpi_scan_diag(prn_context *ctx, prn_mpi *mpi, prn_tensor *a, prn_tensor *b, prn_tensor *h0,
                                    int reverse, prn_tensor **out, prn_tensor **final);
PRNDEF prn_status prn_mpi_scan_block(prn_context *ctx, prn_mpi *mpi, prn_tensor *a, prn_tensor *b, prn_tensor *h0,
                                     int reverse, prn_tensor **out, prn_tensor **final);

/* Sequence-parallel DEER: prn_deer over a sequence split across ranks. x is
 * this rank's slice [B, T_r, X]; state0 [B, S] is read on rank 0; y is this
 * rank's slice [B, T_r, S]. Each Newton iteration evaluates f and its
 * Jacobians on the slice and solves the linear recurrence with the
 * sequence-parallel scan; the convergence test is global (MPI_Allreduce of
 * the largest scaled residual), so every rank iterates alike and stats are
 * the same everywhere. opt as prn_deer's (modes, tolerances, clip,
 * damping); adaptive damping and warm starts are not supported here
 * (PRN_ERR_UNSUPPORTED). Not converged: with no_fallback the last iterate,
 * else the sequential evaluation, passed from rank to rank. The ranks must
 * pass the same options (mode, max_iter, no_fallback, atol, rtol, clip,
 * damping: checked, PRN_ERR_SHAPE on every rank otherwise). Gradients as
 * prn_deer's: the adjoint recurrence by the sequence-parallel reverse scan,
 * then one recorded step of f over the slice; sum the parameters'
 * gradients over ranks with prn_mpi_allreduce_grads. */
PRNDEF prn_status prn_mpi_deer(prn_context *ctx, prn_mpi *mpi, const prn_deer_system *cell, prn_tensor *x,
                               prn_tensor *state0, const prn_deer_options *opt, prn_tensor **y,
                               prn_deer_stats *stats);
/* The same for a single-layer, one-direction built-in network (its cell
 * through prn_rnn_jacobian and prn_rnn_step): y [B, T_r, H]; state0 as
 * prn_deer_rnn's ([1, B, S]) or [B, S]. */
PRNDEF prn_status prn_mpi_deer_rnn(prn_context *ctx, prn_mpi *mpi, const prn_rnn *rnn, prn_tensor *x,
                                   prn_tensor *state0, const prn_deer_options *opt, prn_tensor **y,
                                   prn_deer_stats *stats);

/* Data-parallel training: each parameter's gradient becomes the sum (mean:
 * the average) of its gradients on all ranks, in one MPI_Allreduce. A rank
 * where a gradient is NULL adds zeros. params must match in number, shape
 * and dtype on every rank. */
PRNDEF prn_status prn_mpi_allreduce_grads(prn_context *ctx, prn_mpi *mpi, prn_tensor *const *params, int num_params,
                                          int mean);
/* Copies root's parameter values to every rank (same shapes everywhere). */
PRNDEF prn_status prn_mpi_broadcast(prn_context *ctx, prn_mpi *mpi, prn_tensor *const *params, int num_params,
                                    int root);

/* SCYFI across ranks: each order's chains are dealt to the ranks in
 * contiguous blocks of opt->batch, the chains' cycles gathered, then judged
 * in chain order on every rank; so the result (on every rank) has the same
 * cycles, in the same order, as prn_scyfi on one process with the same
 * seed. result->solves counts every rank's solves. The ranks first agree
 * on the model (its sizes and numbers) and on every option: one that
 * differs fails the call on every rank (PRN_ERR_SHAPE naming it). */
PRNDEF prn_status prn_mpi_scyfi(prn_context *ctx, prn_mpi *mpi, const prn_pwl_model *m,
                                const prn_scyfi_options *opt, prn_scyfi_result **out);

#ifdef __cplusplus
}
#endif
#endif /* PARRNN_MPI_H */

#ifdef PARRNN_MPI_IMPLEMENTATION
#ifndef PARRNN_MPI_IMPLEMENTATION_DONE
#define PARRNN_MPI_IMPLEMENTATION_DONE
#include <math.h>
#include <stdio.h>
#include <float.h>
#include <string.h>

#define PRN__MPI_KMAX 64 /* block size limit of the scans */

struct prn_mpi {
    prn_context *ctx;
    MPI_Comm comm;     /* a duplicate of the caller's */
    MPI_Comm rcomm;    /* the same ranks in reverse order: reverse scans */
    MPI_Op compose;    /* composition of affine maps (non-commutative)   */
    int rank, size;
    prn_tensor *token; /* requires grad: every rank records its collective
                        * ops alike, whatever its own inputs need */
};

/* --- small helpers ---------------------------------------------------------- */
static prn_status prn__mpi_fail(prn_context *ctx, const char *fn, const char *call, int rc) {
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(rc, s, &n) != MPI_SUCCESS) snprintf(s, sizeof s, "error code %d", rc);
    return prn_set_error(ctx, PRN_ERR_BACKEND, "%s: %s failed: %s", fn, call, s);
}
#define PRN__MPI(ctx, fn, call) ((call) == MPI_SUCCESS ? PRN_OK : prn__mpi_fail((ctx), (fn), #call, MPI_ERR_OTHER))

/* MPI_Exscan's operator on maps h -> M h + v, stored as the k x k M
 * (row-major) then v: inout = (in, then inout), i.e. M = Mw Mu and
 * v = Mw vu + vw, with in from the lower ranks. k follows from the element
 * size (k^2 + k doubles). */
static void prn__mpi_compose(void *in, void *inout, int *len, MPI_Datatype *dt) {
    double tmp[PRN__MPI_KMAX * PRN__MPI_KMAX + PRN__MPI_KMAX];
    int bytes = 0, e;
    size_t n, k, i, j, l;
    MPI_Type_size(*dt, &bytes);
    n = (size_t)bytes / sizeof(double);
    k = (size_t)((sqrt(1.0 + 4.0 * (double)n) - 1.0) / 2.0 + 0.5);
    for (e = 0; e < *len; ++e) {
        const double *u = (const double *)in + (size_t)e * n, *vu = u + k * k;
        double *w = (double *)inout + (size_t)e * n, *vw = w + k * k;
        for (i = 0; i < k; ++i) {
            double sv = vw[i];
            for (l = 0; l < k; ++l) sv += w[i * k + l] * vu[l];
            tmp[k * k + i] = sv;
            for (j = 0; j < k; ++j) {
                double sm = 0;
                for (l = 0; l < k; ++l) sm += w[i * k + l] * u[l * k + j];
                tmp[i * k + j] = sm;
            }
        }
        memcpy(w, tmp, n * sizeof(double));
    }
}

/* A tensor's elements as doubles (dst holds numel). */
static prn_status prn__mpi_get(prn_context *ctx, prn_tensor *t, double *dst) {
    size_t n = prn_tensor_numel(t), i;
    prn_status st;
    float *f;
    if (prn_tensor_dtype(t) == PRN_F64) return prn_tensor_download(t, dst, n);
    if (n == 0) return PRN_OK;
    if (!(f = (float *)prn_alloc(ctx, n * sizeof(float)))) return PRN_ERR_OUT_OF_MEMORY;
    st = prn_tensor_download(t, f, n);
    for (i = 0; st == PRN_OK && i < n; ++i) dst[i] = f[i];
    prn_free(ctx, f);
    return st;
}
/* A new tensor of dtype dt from doubles. */
static prn_status prn__mpi_put(prn_context *ctx, prn_dtype dt, int nd, const size_t *shape, const double *src,
                               prn_tensor **out) {
    size_t n = 1, i;
    int d;
    float *f;
    prn_status st;
    for (d = 0; d < nd; ++d) n *= shape[d];
    if (dt == PRN_F64 || n == 0) return n ? prn_tensor_from_host(ctx, dt, nd, shape, src, out) : prn_tensor_create(ctx, dt, nd, shape, out);
    if (!(f = (float *)prn_alloc(ctx, n * sizeof(float)))) return PRN_ERR_OUT_OF_MEMORY;
    for (i = 0; i < n; ++i) f[i] = (float)src[i];
    st = prn_tensor_from_host(ctx, dt, nd, shape, f, out);
    prn_free(ctx, f);
    return st;
}
static prn_status prn__mpi_view(prn_context *ctx, prn_tensor *x, int nd, size_t d0, size_t d1, size_t d2, size_t d3,
                                prn_tensor **out) {
    size_t s[4];
    s[0] = d0; s[1] = d1; s[2] = d2; s[3] = d3;
    return prn_reshape(ctx, x, nd, s, out);
}
static void prn__mpi_free_all(prn_tensor **t, int n) {
    int i;
    for (i = 0; i < n; ++i) { prn_tensor_free(t[i]); t[i] = NULL; }
}

/* --- the handle --------------------------------------------------------------- */
PRNDEF int prn_mpi_rank(const prn_mpi *mpi) { return mpi ? mpi->rank : 0; }
PRNDEF int prn_mpi_size(const prn_mpi *mpi) { return mpi ? mpi->size : 1; }

PRNDEF void prn_mpi_split(const prn_mpi *mpi, size_t T, int rank, size_t *start, size_t *len) {
    size_t P = mpi && mpi->size > 0 ? (size_t)mpi->size : 1, q = T / P, r = T % P, i = rank > 0 ? (size_t)rank : 0;
    if (len) *len = i < P ? q + (i < r) : 0;
    if (start) *start = i < P ? i * q + (i < r ? i : r) : T;
}

/* What a rank brings to an agreement, the smallest winning: the first rank
 * that failed by itself, else the first told of a failure, else 2P (none). */
static int prn__mpi_key(const prn_mpi *mpi, prn_status status) {
    return status == PRN_OK ? 2 * mpi->size : status == PRN_ERR_REMOTE ? mpi->size + mpi->rank : mpi->rank;
}

/* The failure of rank 'first', told to every rank. */
static prn_status prn__mpi_tell(prn_context *ctx, prn_mpi *mpi, const char *fn, prn_status status, int first) {
    struct { int status; char msg[500]; } m;
    memset(&m, 0, sizeof m);
    if (mpi->rank == first) {
        const char *src = prn_last_status(ctx) != PRN_OK ? prn_last_error(ctx) : prn_status_string(status);
        size_t n = strlen(src);
        m.status = (int)status;
        memcpy(m.msg, src, n < sizeof m.msg - 1 ? n : sizeof m.msg - 1);
    }
    if (MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, first, mpi->comm) != MPI_SUCCESS)
        return prn__mpi_fail(ctx, fn, "MPI_Bcast", MPI_ERR_OTHER);
    if (mpi->rank == first) return status;
    if (m.status == PRN_ERR_REMOTE) return prn_set_error(ctx, PRN_ERR_REMOTE, "%s", m.msg);
    return prn_set_error(ctx, PRN_ERR_REMOTE, "%s: rank %d failed: %s", fn, first, m.msg);
}

PRNDEF prn_status prn_mpi_agree(prn_context *ctx, prn_mpi *mpi, const char *fn, prn_status status) {
    int mine, first = 0;
    if (!ctx || !mpi) return PRN_ERR_NULL_ARGUMENT;
    if (!fn) fn = "prn_mpi_agree";
    mine = prn__mpi_key(mpi, status);
    if (MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, mpi->comm) != MPI_SUCCESS)
        return prn__mpi_fail(ctx, fn, "MPI_Allreduce", MPI_ERR_OTHER);
    return first == 2 * mpi->size ? PRN_OK : prn__mpi_tell(ctx, mpi, fn, status, first % mpi->size);
}

PRNDEF prn_status prn_mpi_create(prn_context *ctx, MPI_Comm comm, prn_mpi **out) {
    static const char *fn = "prn_mpi_create";
    prn_mpi tmp, *m = NULL;
    prn_status st = PRN_OK;
    int inited = 0;
    if (!ctx) return PRN_ERR_NULL_ARGUMENT;
    if (!out) return prn_set_error(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'out' is NULL", fn);
    if (MPI_Initialized(&inited) != MPI_SUCCESS || !inited)
        return prn_set_error(ctx, PRN_ERR_STATE, "%s: MPI is not initialised (call MPI_Init first)", fn);
    memset(&tmp, 0, sizeof tmp);
    tmp.ctx = ctx;
    /* The collective steps first, the same on every rank; then the local
     * ones, whose outcome the ranks agree on. */
    if (MPI_Comm_dup(comm, &tmp.comm) != MPI_SUCCESS) return prn__mpi_fail(ctx, fn, "MPI_Comm_dup", MPI_ERR_OTHER);
    MPI_Comm_set_errhandler(tmp.comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(tmp.comm, &tmp.rank);
    MPI_Comm_size(tmp.comm, &tmp.size);
    if (MPI_Comm_split(tmp.comm, 0, tmp.size - 1 - tmp.rank, &tmp.rcomm) != MPI_SUCCESS) {
        MPI_Comm_free(&tmp.comm);
        return prn__mpi_fail(ctx, fn, "MPI_Comm_split", MPI_ERR_OTHER);
    }
    MPI_Comm_set_errhandler(tmp.rcomm, MPI_ERRORS_RETURN);
    MPI_Op_create(prn__mpi_compose, 0, &tmp.compose);
    if (!(m = (prn_mpi *)prn_alloc(ctx, sizeof *m))) st = prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    if (st == PRN_OK) st = prn_tensor_create(ctx, PRN_F32, 0, NULL, &tmp.token);
    if (st == PRN_OK) st = prn_tensor_set_requires_grad(tmp.token, 1);
    st = prn_mpi_agree(ctx, &tmp, fn, st);
    if (st != PRN_OK) {
        prn_tensor_free(tmp.token);
        prn_free(ctx, m);
        MPI_Op_free(&tmp.compose);
        MPI_Comm_free(&tmp.rcomm);
        MPI_Comm_free(&tmp.comm);
        return st;
    }
    *m = tmp;
    *out = m;
    return PRN_OK;
}

PRNDEF void prn_mpi_free(prn_mpi *mpi) {
    if (!mpi) return;
    prn_tensor_free(mpi->token);
    MPI_Op_free(&mpi->compose);
    MPI_Comm_free(&mpi->rcomm);
    MPI_Comm_free(&mpi->comm);
    prn_free(mpi->ctx, mpi);
}

/* prn_mpi_agree on status and, in the same MPI_Allreduce, a check that
 * every rank passes the same v[0 .. n-1] (the same error on every rank
 * otherwise, naming the first that differs); w[0 .. nw-1] (NULL when nw is
 * 0) become their maximum over the ranks. One collective at the start of a
 * call instead of four. */
static prn_status prn__mpi_same(prn_context *ctx, prn_mpi *mpi, const char *fn, prn_status status, const long long *v,
                                const char *const *names, int n, long long *w, int nw) {
    long long buf[1 + 2 * 16 + 2];
    int i, key;
    if (n > 16 || nw > 2) return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: too many values to agree on", fn);
    buf[0] = -(long long)prn__mpi_key(mpi, status);   /* the max of -key is the min key */
    for (i = 0; i < n; ++i) {
        buf[1 + i] = status == PRN_OK ? v[i] : 0;
        buf[1 + n + i] = -buf[1 + i];
    }
    for (i = 0; i < nw; ++i) buf[1 + 2 * n + i] = w[i];
    if (MPI_Allreduce(MPI_IN_PLACE, buf, 1 + 2 * n + nw, MPI_LONG_LONG, MPI_MAX, mpi->comm) != MPI_SUCCESS)
        return prn__mpi_fail(ctx, fn, "MPI_Allreduce", MPI_ERR_OTHER);
    key = (int)-buf[0];
    if (key != 2 * mpi->size) return prn__mpi_tell(ctx, mpi, fn, status, key % mpi->size);
    for (i = 0; i < n; ++i)
        if (buf[1 + i] != -buf[1 + n + i])
            return prn_set_error(ctx, PRN_ERR_SHAPE, "%s: the ranks disagree on %s (from %lld to %lld); every rank must "
                                 "pass the same", fn, names[i], -buf[1 + n + i], buf[1 + i]);
    for (i = 0; i < nw; ++i) w[i] = buf[1 + 2 * n + i];
    return PRN_OK;
}

/* FNV-1a of n bytes, continuing h. */
static unsigned long long prn__mpi_hash(unsigned long long h, const void *p, size_t n) {
    const unsigned char *c = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
    return h;
}
/* 8 bytes (a double's bits, a u64) as a value for prn__mpi_same, which
 * negates them: a hash in 0 .. 2^63 - 1 (-0.0's bits are LLONG_MIN). */
static long long prn__mpi_bits8(const void *p) {
    return (long long)(prn__mpi_hash(14695981039346656037ull, p, 8) >> 1);
}
static long long prn__mpi_bits(double d) { return prn__mpi_bits8(&d); }
/* A count (size_t, uint64_t) as a value for prn__mpi_same: itself, or -1
 * from 2^62 up, which no count prn_scyfi takes reaches (so ranks that
 * differ there are refused by prn_scyfi's own check, on every rank). */
static long long prn__mpi_count(unsigned long long n) { return n >> 62 ? -1 : (long long)n; }

/* --- sequence-parallel scans ---------------------------------------------------- */
/* A scan split over ranks, on internal shapes: b [B, T, C]; a [B, T, C]
 * (diagonal, k = 1) or [B, T, C, k]. first/last: this rank starts/ends
 * the recurrence in its direction (rank 0/size-1; mirrored when reverse). */
typedef struct prn__mpi_geo {
    size_t B, T, C, k, nb;
    int diag, reverse, first, last;
    prn_dtype dt;
} prn__mpi_geo;

static void prn__mpi_geo_init(prn__mpi_geo *g, const prn_mpi *mpi, prn_dtype dt, size_t B, size_t T, size_t C, size_t k,
                              int diag, int reverse) {
    g->B = B; g->T = T; g->C = C; g->k = diag ? 1 : k; g->nb = C / g->k;
    g->diag = diag; g->reverse = reverse; g->dt = dt;
    g->first = reverse ? mpi->rank == mpi->size - 1 : mpi->rank == 0;
    g->last = reverse ? mpi->rank == 0 : mpi->rank == mpi->size - 1;
}

/* Time step t of x [B, T, ...] as [B, 1, ...]. */
static prn_status prn__mpi_step(prn_context *ctx, prn_tensor *x, size_t t, prn_tensor **out) {
    return prn_slice(ctx, x, 1, t, 1, out);
}

/* Two partial products of a slice's blocks, x of the earlier steps and y
 * of the later ones, combined in time order: y x (reverse: x y). x, y:
 * [N, 1, C k], N*nb k x k blocks. */
static prn_status prn__mpi_combine(prn_context *ctx, const prn__mpi_geo *g, size_t N, prn_tensor *x, prn_tensor *y,
                                   prn_tensor **out) {
    prn_tensor *xv = NULL, *yv = NULL, *p = NULL;
    size_t k = g->k;
    prn_status st = prn__mpi_view(ctx, x, 3, N * g->nb, k, k, 0, &xv);
    if (st == PRN_OK) st = prn__mpi_view(ctx, y, 3, N * g->nb, k, k, 0, &yv);
    if (st == PRN_OK) st = g->reverse ? prn_matmul(ctx, xv, yv, &p) : prn_matmul(ctx, yv, xv, &p);
    if (st == PRN_OK) st = prn__mpi_view(ctx, p, 3, N, 1, g->C * k, 0, out);
    prn_tensor_free(xv); prn_tensor_free(yv); prn_tensor_free(p);
    return st;
}

/* The product of the block coefficients of T steps, a [N, T, E = C k]:
 * [N, 1, E]. Steps are cut into runs of L; the products of all
 * runs form together, position by position (L batched products over every
 * run at once), then the runs' products recurse, and the T % L steps left
 * over are folded in last. Each level reads its input once and leaves L
 * times less; no copies beyond one gather of each position. */
static prn_status prn__mpi_prod_rec(prn_context *ctx, const prn__mpi_geo *g, size_t N, size_t T, prn_tensor *a,
                                    prn_tensor **out) {
    enum { L = 32 };
    size_t E = g->C * g->k, n = T / L, rem = T % L, j;
    prn_tensor *pre = NULL, *v = NULL, *s = NULL, *acc = NULL, *nx = NULL, *runs = NULL, *tail = NULL;
    prn_status st = PRN_OK;
    if (T < L) {   /* one step after the other */
        for (j = 0; st == PRN_OK && j < T; ++j) {
            st = prn_slice(ctx, a, 1, j, 1, &s);
            if (st == PRN_OK && acc) {
                st = prn__mpi_combine(ctx, g, N, acc, s, &nx);
                prn_tensor_free(acc); prn_tensor_free(s);
                acc = nx; nx = s = NULL;
            } else if (st == PRN_OK) {
                acc = s; s = NULL;
            }
        }
        if (st != PRN_OK) { prn_tensor_free(acc); return st; }
        *out = acc;
        return PRN_OK;
    }
    st = rem ? prn_slice(ctx, a, 1, 0, n * L, &pre) : PRN_OK;
    if (st == PRN_OK) st = prn__mpi_view(ctx, rem ? pre : a, 4, N, n, L, E, &v);
    for (j = 0; st == PRN_OK && j < L; ++j) {   /* position j of every run: [N, n, 1, E] */
        st = prn_slice(ctx, v, 2, j, 1, &s);
        if (st == PRN_OK && acc) {
            st = prn__mpi_combine(ctx, g, N * n, acc, s, &nx);
            prn_tensor_free(acc); prn_tensor_free(s);
            acc = nx; nx = s = NULL;
        } else if (st == PRN_OK) {
            acc = s; s = NULL;
        }
    }
    prn_tensor_free(pre); prn_tensor_free(v);
    pre = v = NULL;
    if (st == PRN_OK) st = prn__mpi_view(ctx, acc, 3, N, n, E, 0, &v);
    if (st == PRN_OK) st = prn__mpi_prod_rec(ctx, g, N, n, v, &runs);
    if (st == PRN_OK && rem) {
        st = prn_slice(ctx, a, 1, n * L, rem, &pre);
        if (st == PRN_OK) st = prn__mpi_prod_rec(ctx, g, N, rem, pre, &tail);
        if (st == PRN_OK) st = prn__mpi_combine(ctx, g, N, runs, tail, &nx);
        if (st == PRN_OK) { prn_tensor_free(runs); runs = nx; }
    }
    prn_tensor_free(pre); prn_tensor_free(v); prn_tensor_free(acc); prn_tensor_free(tail);
    if (st != PRN_OK) { prn_tensor_free(runs); return st; }
    *out = runs;
    return PRN_OK;
}

/* The slice's coefficient product, M = A_{T-1} ... A_0 (reverse: A_0 ...
 * A_{T-1}), on the backend: [B, 1, C(, k)]. Diagonal: the scan itself,
 * from h0 = 1 with b = 0 (measured 1.7x faster than the runs below, whose
 * gathers of C elements per step are too short to stream); blocks: runs. */
static prn_status prn__mpi_product(prn_context *ctx, const prn__mpi_geo *g, prn_tensor *a, prn_tensor **out) {
    prn_tensor *a3 = NULL, *p = NULL;
    prn_status st;
    if (g->diag) {
        prn_tensor *t[3] = {NULL, NULL, NULL};
        size_t sh[3];
        sh[0] = g->B; sh[1] = g->T; sh[2] = g->C;
        st = prn_tensor_create(ctx, g->dt, 3, sh, &t[0]);
        sh[1] = g->C;
        if (st == PRN_OK) st = prn_tensor_full(ctx, g->dt, 2, sh, 1.0, &t[1]);
        if (st == PRN_OK) st = prn_scan_diag(ctx, a, t[0], t[1], g->reverse, PRN_SCAN_AUTO, &t[2]);
        if (st == PRN_OK) st = prn__mpi_step(ctx, t[2], g->reverse ? 0 : g->T - 1, out);
        prn__mpi_free_all(t, 3);
        return st;
    }
    st = prn__mpi_view(ctx, a, 3, g->B, g->T, g->C * g->k, 0, &a3);
    if (st == PRN_OK) st = prn__mpi_prod_rec(ctx, g, g->B, g->T, a3, &p);
    if (st == PRN_OK) st = prn__mpi_view(ctx, p, 4, g->B, 1, g->C, g->k, out);
    prn_tensor_free(a3); prn_tensor_free(p);
    return st;
}

/* Host maps, one per (batch row, block): k*k numbers of M then k of v. */
static size_t prn__mpi_elem(const prn__mpi_geo *g) { return g->k * g->k + g->k; }

/* M (host [B, C, k] or [B, C] as downloaded; NULL: mode) into the maps. */
static void prn__mpi_pack(const prn__mpi_geo *g, double *maps, const double *M, int ident, int transpose, const double *v) {
    size_t e, i, j, k = g->k, n = prn__mpi_elem(g);
    for (e = 0; e < g->B * g->nb; ++e) {
        double *d = maps + e * n;
        for (i = 0; i < k; ++i)
            for (j = 0; j < k; ++j)
                d[i * k + j] = M ? (transpose ? M[e * k * k + j * k + i] : M[e * k * k + i * k + j])
                                 : (ident && i == j ? 1.0 : 0.0);
        for (i = 0; i < k; ++i) d[k * k + i] = v ? v[e * k + i] : 0.0;
    }
}

/* The exclusive scan of the ranks' maps in the direction: recv gets the
 * composition of the maps before this rank (undefined on the first). */
static prn_status prn__mpi_exscan(prn_context *ctx, prn_mpi *mpi, const char *fn, const prn__mpi_geo *g, int rev,
                                  double *send, double *recv) {
    MPI_Datatype t;
    size_t count = g->B * g->nb;
    int rc;
    if (count > 2147483647u) return prn_set_error(ctx, PRN_ERR_OVERFLOW, "%s: too many carries for one MPI call", fn);
    if (MPI_Type_contiguous((int)prn__mpi_elem(g), MPI_DOUBLE, &t) != MPI_SUCCESS || MPI_Type_commit(&t) != MPI_SUCCESS)
        return prn__mpi_fail(ctx, fn, "MPI_Type_contiguous", MPI_ERR_OTHER);
    rc = MPI_Exscan(send, recv, (int)count, t, mpi->compose, rev ? mpi->rcomm : mpi->comm);
    MPI_Type_free(&t);
    return rc == MPI_SUCCESS ? PRN_OK : prn__mpi_fail(ctx, fn, "MPI_Exscan", rc);
}

static prn_status prn__mpi_local_scan(prn_context *ctx, const prn__mpi_geo *g, prn_tensor *a, prn_tensor *b, prn_tensor *h0,
                                      int reverse, prn_tensor **out) {
    return g->diag ? prn_scan_diag(ctx, a, b, h0, reverse, PRN_SCAN_AUTO, out)
                   : prn_scan_block(ctx, a, b, h0, reverse, PRN_SCAN_AUTO, out);
}

/* The state at the slice's end in the direction, [B, C] on the host. */
static prn_status prn__mpi_end_state(prn_context *ctx, const prn__mpi_geo *g, prn_tensor *h, double *v) {
    prn_tensor *s = NULL;
    prn_status st = prn__mpi_step(ctx, h, g->reverse ? 0 : g->T - 1, &s);
    if (st == PRN_OK) st = prn__mpi_get(ctx, s, v);
    prn_tensor_free(s);
    return st;
}

/* The scan over the split sequence (no tape): out gets this rank's slice,
 * carry (B*C) the state before it (the first rank: h0 or zeros), and maps,
 * when not NULL, the slice's maps as exchanged (B*nb elements). h0 is the
 * first rank's [B, C] (NULL: zeros). */
static prn_status prn__mpi_scan_core(prn_context *ctx, prn_mpi *mpi, const char *fn, const prn__mpi_geo *g, prn_tensor *a,
                                     prn_tensor *b, const double *h0, prn_tensor **out, double *carry, double *maps,
                                     prn_status st_in) {
    size_t BC = g->B * g->C, n = g->B * g->nb * prn__mpi_elem(g), i, sh[4];
    double *buf = (double *)prn_alloc(ctx, (2 * n + 2 * BC + g->B * g->nb * g->k * g->k) * sizeof(double));
    double *send = buf, *recv = buf + n, *v = recv + n, *hz = v + BC, *M = hz + BC;
    prn_tensor *h = NULL, *ht = NULL, *P = NULL, *c = NULL;
    prn_status st = st_in != PRN_OK ? st_in : buf ? PRN_OK : prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    if (st == PRN_OK) {
        for (i = 0; i < BC; ++i) hz[i] = h0 ? h0[i] : 0.0;
        sh[0] = g->B; sh[1] = g->C;
    }
    /* Reduce: the first rank scans from h0 at once (its map is the
     * constant h -> its end state); the others scan from zero and form the
     * product of their coefficients. */
    if (st == PRN_OK && g->T > 0 && g->first) {
        st = prn__mpi_put(ctx, g->dt, 2, sh, hz, &c);
        if (st == PRN_OK) st = prn__mpi_local_scan(ctx, g, a, b, c, g->reverse, &h);
        if (st == PRN_OK) st = prn__mpi_end_state(ctx, g, h, v);
        if (st == PRN_OK) prn__mpi_pack(g, send, NULL, 0, 0, v);
    } else if (st == PRN_OK && g->T > 0) {
        st = prn__mpi_local_scan(ctx, g, a, b, NULL, g->reverse, &ht);
        if (st == PRN_OK) st = prn__mpi_end_state(ctx, g, ht, v);
        if (st == PRN_OK) st = prn__mpi_product(ctx, g, a, &P);
        if (st == PRN_OK) st = prn__mpi_get(ctx, P, M);
        if (st == PRN_OK) prn__mpi_pack(g, send, M, 0, 0, v);
    } else if (st == PRN_OK) { /* an empty slice passes the state on */
        prn__mpi_pack(g, send, NULL, !g->first, 0, g->first ? hz : NULL);
    }
    prn_tensor_free(ht); prn_tensor_free(P); prn_tensor_free(c);
    c = NULL;
    st = prn_mpi_agree(ctx, mpi, fn, st);
    if (st == PRN_OK) st = prn__mpi_exscan(ctx, mpi, fn, g, g->reverse, send, recv);
    if (st == PRN_OK && !g->first) {
        size_t e, k = g->k, ne = prn__mpi_elem(g);
        for (e = 0; e < g->B * g->nb; ++e)
            for (i = 0; i < k; ++i) hz[e * k + i] = recv[e * ne + k * k + i];
    }
    /* Expand: the slice from its carry. */
    if (st == PRN_OK && g->T > 0 && !g->first) {
        st = prn__mpi_put(ctx, g->dt, 2, sh, hz, &c);
        if (st == PRN_OK) st = prn__mpi_local_scan(ctx, g, a, b, c, g->reverse, &h);
    }
    if (st == PRN_OK && g->T == 0) {
        sh[0] = g->B; sh[1] = 0; sh[2] = g->C;
        st = prn_tensor_create(ctx, g->dt, 3, sh, &h);
    }
    prn_tensor_free(c);
    st = prn_mpi_agree(ctx, mpi, fn, st);
    if (st == PRN_OK) {
        memcpy(carry, hz, BC * sizeof(double));
        if (maps) memcpy(maps, send, n * sizeof(double));
        *out = h;
    } else {
        prn_tensor_free(h);
    }
    prn_free(ctx, buf);
    return st;
}

/* Coefficients of the adjoint recurrence on this slice: A_{t+1}^T at t
 * (forward; reverse: A_{t-1}^T), the identity at the slice's end, where
 * the carry from the next rank enters. */
static prn_status prn__mpi_adjoint_coef(prn_context *ctx, const prn__mpi_geo *g, prn_tensor *A, prn_tensor **out) {
    prn_tensor *At = NULL, *t[4] = {NULL, NULL, NULL, NULL}, *eye = NULL;
    size_t sh[4], n, e, i, B = g->B, T = g->T, C = g->C, k = g->k;
    double *id;
    prn_status st = PRN_OK;
    sh[0] = B; sh[1] = 1; sh[2] = C; sh[3] = k;
    n = B * C * (g->diag ? 1 : k);
    if (!(id = (double *)prn_alloc(ctx, n * sizeof(double)))) return PRN_ERR_OUT_OF_MEMORY;
    memset(id, 0, n * sizeof(double));
    if (g->diag) for (i = 0; i < n; ++i) id[i] = 1.0;
    else for (e = 0; e < B * g->nb; ++e) for (i = 0; i < k; ++i) id[e * k * k + i * k + i] = 1.0;
    st = prn__mpi_put(ctx, g->dt, g->diag ? 3 : 4, sh, id, &eye);
    prn_free(ctx, id);
    if (st == PRN_OK && g->diag) At = prn_tensor_retain(A);
    if (st == PRN_OK && !g->diag) {  /* each k x k block transposed */
        st = prn__mpi_view(ctx, A, 3, B * T * g->nb, k, k, 0, &t[0]);
        if (st == PRN_OK) st = prn_transpose(ctx, t[0], 1, 2, &t[1]);
        if (st == PRN_OK) st = prn__mpi_view(ctx, t[1], 4, B, T, C, k, &At);
    }
    if (st == PRN_OK) st = prn_slice(ctx, At, 1, g->reverse ? 0 : 1, T - 1, &t[2]);
    if (st == PRN_OK) st = g->reverse ? prn_concat(ctx, eye, t[2], 1, &t[3]) : prn_concat(ctx, t[2], eye, 1, &t[3]);
    if (st == PRN_OK) *out = prn_tensor_retain(t[3]);
    prn_tensor_free(At); prn_tensor_free(eye);
    prn__mpi_free_all(t, 4);
    return st;
}

/* A_first^T lam_first (the gradient of the state before the slice), host [B*C]. */
static prn_status prn__mpi_carry_grad(prn_context *ctx, const prn__mpi_geo *g, prn_tensor *A, prn_tensor *lam, double *dc) {
    prn_tensor *t[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    size_t f = g->reverse ? g->T - 1 : 0, N = g->B * g->nb, k = g->k;
    prn_status st = prn__mpi_step(ctx, A, f, &t[0]);
    if (st == PRN_OK) st = prn__mpi_step(ctx, lam, f, &t[1]);
    if (st == PRN_OK && g->diag) st = prn_mul(ctx, t[0], t[1], &t[5]);
    if (st == PRN_OK && !g->diag) {
        st = prn__mpi_view(ctx, t[0], 3, N, k, k, 0, &t[2]);
        if (st == PRN_OK) st = prn__mpi_view(ctx, t[1], 3, N, k, 1, 0, &t[3]);
        if (st == PRN_OK) st = prn_matmul_ex(ctx, t[2], 1, t[3], 0, &t[5]);
    }
    if (st == PRN_OK) st = prn__mpi_get(ctx, t[5], dc);
    prn__mpi_free_all(t, 6);
    return st;
}

/* The adjoint of a split recurrence h_t = A_t h_{t-1} + b_t (mirrored when
 * reverse): lam_t = G_t + A_{t+1}^T lam_{t+1}, run the other way, across
 * ranks by an exclusive scan of the slices' transposed maps. maps: the
 * forward maps of prn__mpi_scan_core (NULL: the products are formed here).
 * lam: this rank's slice; dc (B*C): the gradient of the state before it. */
static prn_status prn__mpi_adjoint(prn_context *ctx, prn_mpi *mpi, const char *fn, const prn__mpi_geo *g, prn_tensor *A,
                                   prn_tensor *G, const double *maps, prn_tensor **lam_out, double *dc) {
    size_t BC = g->B * g->C, ne = prn__mpi_elem(g), n = g->B * g->nb * ne, kk = g->k * g->k, e, i, sh[3];
    double *buf = (double *)prn_alloc(ctx, (2 * n + 2 * BC + g->B * g->nb * kk) * sizeof(double));
    double *send = buf, *recv = buf + n, *d0 = recv + n, *mu = d0 + BC, *M = mu + BC;
    prn_tensor *Ap = NULL, *lam0 = NULL, *lam = NULL, *P = NULL, *m = NULL;
    int afirst = g->last; /* the adjoint starts where the recurrence ends */
    prn_status st = buf ? PRN_OK : prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    sh[0] = g->B; sh[1] = g->C;
    if (st == PRN_OK) { memset(d0, 0, BC * sizeof(double)); memset(mu, 0, BC * sizeof(double)); }
    if (st == PRN_OK && g->T > 0) {
        st = prn__mpi_adjoint_coef(ctx, g, A, &Ap);
        if (st == PRN_OK) st = prn__mpi_local_scan(ctx, g, Ap, G, NULL, !g->reverse, &lam0);
        if (st == PRN_OK) st = prn__mpi_carry_grad(ctx, g, A, lam0, d0);
        if (st == PRN_OK && !afirst && !maps) {
            st = prn__mpi_product(ctx, g, A, &P);
            if (st == PRN_OK) st = prn__mpi_get(ctx, P, M);
        }
    }
    if (st == PRN_OK) {
        if (afirst) prn__mpi_pack(g, send, NULL, 0, 0, d0);              /* the constant d0 */
        else if (g->T == 0) prn__mpi_pack(g, send, NULL, 1, 0, NULL);    /* passes through  */
        else if (!maps) prn__mpi_pack(g, send, M, 0, 1, d0);             /* M^T mu + d0     */
        else {
            for (e = 0; e < g->B * g->nb; ++e) for (i = 0; i < kk; ++i) M[e * kk + i] = maps[e * ne + i];
            prn__mpi_pack(g, send, M, 0, 1, d0);
        }
    }
    prn_tensor_free(lam0); prn_tensor_free(P);
    st = prn_mpi_agree(ctx, mpi, fn, st);
    if (st == PRN_OK) st = prn__mpi_exscan(ctx, mpi, fn, g, !g->reverse, send, recv);
    if (st == PRN_OK && !afirst)
        for (e = 0; e < g->B * g->nb; ++e) for (i = 0; i < g->k; ++i) mu[e * g->k + i] = recv[e * ne + kk + i];
    if (st == PRN_OK && g->T > 0) {
        st = prn__mpi_put(ctx, g->dt, 2, sh, mu, &m);
        if (st == PRN_OK) st = prn__mpi_local_scan(ctx, g, Ap, G, m, !g->reverse, &lam);
        if (st == PRN_OK && dc) st = prn__mpi_carry_grad(ctx, g, A, lam, dc);
    } else if (st == PRN_OK) {
        sh[0] = g->B; sh[1] = 0; sh[2] = g->C;
        st = prn_tensor_create(ctx, g->dt, 3, sh, &lam);
        if (st == PRN_OK && dc) memcpy(dc, mu, BC * sizeof(double));
    }
    prn_tensor_free(Ap); prn_tensor_free(m);
    st = prn_mpi_agree(ctx, mpi, fn, st);
    if (st == PRN_OK) *lam_out = lam;
    else prn_tensor_free(lam);
    prn_free(ctx, buf);
    return st;
}

/* The recorded scan: what its backward needs. */
typedef struct prn__mpi_sop {
    prn_mpi *mpi;
    prn__mpi_geo g;
    prn_tensor *a, *h;   /* internal shapes */
    double *carry, *maps;
    int ia, ib, ih;      /* input slots of a, b, h0 (-1: absent) */
} prn__mpi_sop;

static void prn__mpi_sop_free(void *p) {
    prn__mpi_sop *o = (prn__mpi_sop *)p;
    prn_tensor_free(o->a);
    prn_tensor_free(o->h);
    prn_free(o->mpi->ctx, o);
}

/* The previous state of every step: the carry, then h without its last
 * step (mirrored when reverse). */
static prn_status prn__mpi_prev(prn_context *ctx, const prn__mpi_geo *g, prn_tensor *h, const double *carry,
                                prn_tensor **out) {
    prn_tensor *c = NULL, *s = NULL;
    size_t sh[3];
    prn_status st;
    sh[0] = g->B; sh[1] = 1; sh[2] = g->C;
    st = prn__mpi_put(ctx, g->dt, 3, sh, carry, &c);
    if (st == PRN_OK) st = prn_slice(ctx, h, 1, g->reverse ? 1 : 0, g->T - 1, &s);
    if (st == PRN_OK) st = g->reverse ? prn_concat(ctx, s, c, 1, out) : prn_concat(ctx, c, s, 1, out);
    prn_tensor_free(c); prn_tensor_free(s);
    return st;
}

static prn_status prn__mpi_scan_backward(prn_context *ctx, const prn_op *op, prn_tensor *gout, prn_tensor **gin) {
    static const char *fn = "prn_mpi_scan (backward)";
    prn__mpi_sop *o = (prn__mpi_sop *)op->user;
    const prn__mpi_geo *g = &o->g;
    prn_tensor *G = NULL, *lam = NULL, *hp = NULL, *t[4] = {NULL, NULL, NULL, NULL}, *da = NULL, *db = NULL, *dh = NULL;
    double *dc = (double *)prn_alloc(ctx, g->B * g->C * sizeof(double));
    prn_status st = dc ? PRN_OK : PRN_ERR_OUT_OF_MEMORY;
    if (st == PRN_OK) st = prn__mpi_view(ctx, gout, 3, g->B, g->T, g->C, 0, &G);
    /* collective from here: errors go through the agreement inside */
    st = prn_mpi_agree(ctx, o->mpi, fn, st);
    if (st == PRN_OK) st = prn__mpi_adjoint(ctx, o->mpi, fn, g, o->a, G, o->maps, &lam, dc);
    if (st == PRN_OK && op->needs_grad[o->ib]) {
        size_t sh[4];
        int d, nd = prn_tensor_ndim(op->inputs[o->ib]);
        for (d = 0; d < nd && d < 4; ++d) sh[d] = prn_tensor_dim(op->inputs[o->ib], d);
        st = prn_reshape(ctx, lam, nd, sh, &db);
    }
    if (st == PRN_OK && g->T > 0 && op->needs_grad[o->ia]) {
        size_t sh[4];
        int d, nd = prn_tensor_ndim(op->inputs[o->ia]);
        for (d = 0; d < nd && d < 4; ++d) sh[d] = prn_tensor_dim(op->inputs[o->ia], d);
        st = prn__mpi_prev(ctx, g, o->h, o->carry, &hp);
        if (st == PRN_OK && g->diag) st = prn_mul(ctx, lam, hp, &t[2]);
        if (st == PRN_OK && !g->diag) {   /* outer products lam_t hprev_t^T within each block */
            size_t N = g->B * g->T * g->nb;
            st = prn__mpi_view(ctx, lam, 3, N, g->k, 1, 0, &t[0]);
            if (st == PRN_OK) st = prn__mpi_view(ctx, hp, 3, N, 1, g->k, 0, &t[1]);
            if (st == PRN_OK) st = prn_matmul(ctx, t[0], t[1], &t[2]);
        }
        if (st == PRN_OK) st = prn_reshape(ctx, t[2], nd, sh, &da);
    } else if (st == PRN_OK && op->needs_grad[o->ia]) {
        prn_tensor *a = op->inputs[o->ia];
        size_t sh[4];
        int d, nd = prn_tensor_ndim(a);
        for (d = 0; d < nd && d < 4; ++d) sh[d] = prn_tensor_dim(a, d);
        st = prn_tensor_create(ctx, prn_tensor_dtype(a), nd, sh, &da);
    }
    if (st == PRN_OK && o->ih >= 0 && op->needs_grad[o->ih]) {
        prn_tensor *h0 = op->inputs[o->ih];
        size_t sh[2];
        int nd = prn_tensor_ndim(h0);
        sh[0] = prn_tensor_dim(h0, 0); sh[1] = prn_tensor_dim(h0, 1);
        st = prn__mpi_put(ctx, g->dt, nd, sh, dc, &dh);
    }
    /* every rank ends alike */
    st = prn_mpi_agree(ctx, o->mpi, fn, st);
    if (st == PRN_OK) {
        gin[o->ia] = da; gin[o->ib] = db;
        if (o->ih >= 0) gin[o->ih] = dh;
        da = db = dh = NULL;
    }
    prn_tensor_free(G); prn_tensor_free(lam); prn_tensor_free(hp); prn_tensor_free(da); prn_tensor_free(db);
    prn_tensor_free(dh);
    prn__mpi_free_all(t, 4);
    prn_free(ctx, dc);
    return st;
}

static prn_status prn__mpi_scan(prn_context *ctx, prn_mpi *mpi, const char *fn, int diag, prn_tensor *a, prn_tensor *b,
                                prn_tensor *h0, int reverse, prn_tensor **out, prn_tensor **final) {
    static const char *names[] = {"the dtype", "the batch size", "the channels", "the block size", "the layout (batched or not)",
                                  "whether gradients are recorded", "the direction (reverse)"};
    prn__mpi_geo g;
    prn_status st = PRN_OK;
    prn_tensor *a3 = NULL, *b3 = NULL, *h = NULL, *hu = NULL, *fin = NULL;
    double *carry = NULL, *maps = NULL, *h0v = NULL;
    size_t B = 1, T = 0, C = 0, k = 1, sh[4];
    long long v[7], any;
    int nd = 0, any_grad = 0, mine_grad = 0, first;
    if (!ctx || !mpi) return PRN_ERR_NULL_ARGUMENT;
    first = reverse ? mpi->rank == mpi->size - 1 : mpi->rank == 0;
    /* Local checks, then the ranks agree before anything moves. */
    if (ctx != mpi->ctx) st = prn_set_error(ctx, PRN_ERR_CONTEXT_MISMATCH, "%s: 'mpi' was created on another context", fn);
    else if (!out) st = prn_set_error(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'out' is NULL", fn);
    else if (!a || !b) st = prn_set_error(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn, a ? "b" : "a");
    else if (prn_tensor_context(a) != ctx || prn_tensor_context(b) != ctx || (h0 && prn_tensor_context(h0) != ctx))
        st = prn_set_error(ctx, PRN_ERR_CONTEXT_MISMATCH, "%s: a tensor is from another context", fn);
    else if ((nd = prn_tensor_ndim(b)) != 2 && nd != 3)
        st = prn_set_error(ctx, PRN_ERR_SHAPE, "%s: argument 'b' must be [B, T, C] or [T, C] (has %d axes)", fn, nd);
    else if (prn_tensor_dtype(b) == PRN_I32 || prn_tensor_dtype(a) != prn_tensor_dtype(b))
        st = prn_set_error(ctx, PRN_ERR_DTYPE, "%s: a and b must both be f32 or both f64", fn);
    if (st == PRN_OK) {
        int d, ok;
        B = nd == 3 ? prn_tensor_dim(b, 0) : 1;
        T = prn_tensor_dim(b, -2);
        C = prn_tensor_dim(b, -1);
        k = diag ? 1 : prn_tensor_dim(a, -1);
        ok = prn_tensor_ndim(a) == nd + !diag;
        for (d = 0; ok && d < nd; ++d) ok = prn_tensor_dim(a, d) == prn_tensor_dim(b, d);
        if (!ok) st = prn_set_error(ctx, PRN_ERR_SHAPE, "%s: argument 'a' must be %s", fn,
                                    diag ? "shaped like b" : "[B, T, C, k] ([T, C, k]) for b [B, T, C] ([T, C])");
        else if (!diag && (k < 1 || k > PRN__MPI_KMAX || C % k))
            st = prn_set_error(ctx, PRN_ERR_SHAPE, "%s: argument 'a': block size %lu must be 1 .. 64 and divide C = %lu",
                               fn, (unsigned long)k, (unsigned long)C);
        else if (C == 0 || B == 0) st = prn_set_error(ctx, PRN_ERR_SHAPE, "%s: argument 'b' has no channels or rows", fn);
        else if (first && h0 && !(prn_tensor_dtype(h0) == prn_tensor_dtype(b) && prn_tensor_numel(h0) == B * C &&
                                  prn_tensor_ndim(h0) == nd - 1 && prn_tensor_dim(h0, -1) == C))
            st = prn_set_error(ctx, PRN_ERR_SHAPE, "%s: argument 'h0' must be %s of b's dtype", fn, nd == 3 ? "[B, C]" : "[C]");
    }
    mine_grad = prn_grad_enabled(ctx) && (prn_tensor_requires_grad(a) || prn_tensor_requires_grad(b) ||
                                           (first && h0 && prn_tensor_requires_grad(h0)));
    if (st == PRN_OK) {
        v[0] = (long long)prn_tensor_dtype(b); v[1] = (long long)B; v[2] = (long long)C; v[3] = (long long)k; v[4] = nd;
        v[5] = prn_grad_enabled(ctx);
        v[6] = reverse != 0; /* the direction picks the communicator the carries go through */
    }
    any = mine_grad;
    if ((st = prn__mpi_same(ctx, mpi, fn, st, v, names, 7, &any, 1)) != PRN_OK) return st;
    any_grad = any != 0;
    prn__mpi_geo_init(&g, mpi, prn_tensor_dtype(b), B, T, C, k, diag, reverse);
    prn_no_grad_begin(ctx);
    carry = (double *)prn_alloc(ctx, (B * C + B * g.nb * prn__mpi_elem(&g) + B * C) * sizeof(double));
    if (!carry) st = prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    else { maps = carry + B * C; h0v = maps + B * g.nb * prn__mpi_elem(&g); }
    if (st == PRN_OK && first && h0) st = prn__mpi_get(ctx, h0, h0v);
    if (st == PRN_OK) st = prn__mpi_view(ctx, b, 3, B, T, C, 0, &b3);
    if (st == PRN_OK) st = diag ? prn__mpi_view(ctx, a, 3, B, T, C, 0, &a3) : prn__mpi_view(ctx, a, 4, B, T, C, k, &a3);
    /* the core agrees on st before its first exchange */
    st = prn__mpi_scan_core(ctx, mpi, fn, &g, a3, b3, st == PRN_OK && first && h0 ? h0v : NULL, &h, carry, maps, st);
    if (st == PRN_OK) {
        sh[0] = nd == 3 ? B : T; sh[1] = nd == 3 ? T : C; sh[2] = C;
        st = prn_reshape(ctx, h, nd, sh, &hu);
    }
    if (st == PRN_OK && final) {   /* the end state, from the rank where the recurrence ends */
        double *fv = h0v;
        int root = reverse ? 0 : mpi->size - 1;
        if (g.last && T > 0) st = prn__mpi_end_state(ctx, &g, h, fv);
        else if (g.last) memcpy(fv, carry, B * C * sizeof(double));
        st = prn_mpi_agree(ctx, mpi, fn, st);
        if (st == PRN_OK && MPI_Bcast(fv, (int)(B * C), MPI_DOUBLE, root, mpi->comm) != MPI_SUCCESS)
            st = prn__mpi_fail(ctx, fn, "MPI_Bcast", MPI_ERR_OTHER);
        sh[0] = B; sh[1] = C;
        if (st == PRN_OK) st = nd == 3 ? prn__mpi_put(ctx, g.dt, 2, sh, fv, &fin) : prn__mpi_put(ctx, g.dt, 1, sh + 1, fv, &fin);
    }
    prn_no_grad_end(ctx);
    if (st == PRN_OK && any_grad) {
        prn__mpi_sop *o = (prn__mpi_sop *)prn_alloc(ctx, sizeof *o);
        prn_tensor *in[4];
        int n = 0;
        if (!o) st = prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        else {
            memset(o, 0, sizeof *o);
            o->mpi = mpi; o->g = g;
            o->carry = (double *)prn_alloc(ctx, (B * C + B * g.nb * prn__mpi_elem(&g)) * sizeof(double));
            if (!o->carry) { prn_free(ctx, o); o = NULL; st = prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn); }
        }
        if (o) {
            o->maps = o->carry + B * C;
            memcpy(o->carry, carry, (B * C + B * g.nb * prn__mpi_elem(&g)) * sizeof(double));
            o->a = prn_tensor_retain(a3);
            o->h = prn_tensor_retain(h);
            o->ia = n; in[n++] = a;
            o->ib = n; in[n++] = b;
            o->ih = -1;
            if (first && h0) { o->ih = n; in[n++] = h0; }
            in[n++] = mpi->token;
            st = prn_tape_record(ctx, fn, in, n, hu, prn__mpi_scan_backward, o, prn__mpi_sop_free);
            if (st != PRN_OK) prn__mpi_sop_free(o);
        }
        /* record on every rank or on none */
        st = prn_mpi_agree(ctx, mpi, fn, st);
    }
    prn_tensor_free(a3); prn_tensor_free(b3); prn_tensor_free(h);
    prn_free(ctx, carry);
    if (st != PRN_OK) { prn_tensor_free(hu); prn_tensor_free(fin); return st; }
    *out = hu;
    if (final) *final = fin;
    return PRN_OK;
}

PRNDEF prn_status prn_mpi_scan_diag(prn_context *ctx, prn_mpi *mpi, prn_tensor *a, prn_tensor *b, prn_tensor *h0,
                                    int reverse, prn_tensor **out, prn_tensor **final) {
    return prn__mpi_scan(ctx, mpi, "prn_mpi_scan_diag", 1, a, b, h0, reverse, out, final);
}
PRNDEF prn_status prn_mpi_scan_block(prn_context *ctx, prn_mpi *mpi, prn_tensor *a, prn_tensor *b, prn_tensor *h0,
                                     int reverse, prn_tensor **out, prn_tensor **final) {
    return prn__mpi_scan(ctx, mpi, "prn_mpi_scan_block", 0, a, b, h0, reverse, out, final);
}

/* --- sequence-parallel DEER ------------------------------------------------------ */
/* The recorded adjoint: y = z forward; backward lam = the adjoint
 * recurrence of the exact Jacobians J at the solution. */
typedef struct prn__mpi_aop {
    prn_mpi *mpi;
    prn__mpi_geo g;
    prn_tensor *J;
    int iz, ih;
} prn__mpi_aop;
static void prn__mpi_aop_free(void *p) {
    prn__mpi_aop *o = (prn__mpi_aop *)p;
    prn_tensor_free(o->J);
    prn_free(o->mpi->ctx, o);
}
static prn_status prn__mpi_aop_backward(prn_context *ctx, const prn_op *op, prn_tensor *gout, prn_tensor **gin) {
    static const char *fn = "prn_mpi_deer (backward)";
    prn__mpi_aop *o = (prn__mpi_aop *)op->user;
    prn_tensor *lam = NULL, *dh = NULL;
    size_t sh[2];
    double *dc = (double *)prn_alloc(ctx, o->g.B * o->g.C * sizeof(double));
    prn_status st = prn_mpi_agree(ctx, o->mpi, fn, dc ? PRN_OK : PRN_ERR_OUT_OF_MEMORY);
    if (st == PRN_OK) st = prn__mpi_adjoint(ctx, o->mpi, fn, &o->g, o->J, gout, NULL, &lam, dc);
    sh[0] = o->g.B; sh[1] = o->g.C;
    if (st == PRN_OK && o->ih >= 0) st = prn__mpi_put(ctx, o->g.dt, 2, sh, dc, &dh);
    st = prn_mpi_agree(ctx, o->mpi, fn, st);
    if (st == PRN_OK) {
        if (o->iz >= 0) { gin[o->iz] = lam; lam = NULL; }
        if (o->ih >= 0) { gin[o->ih] = dh; dh = NULL; }
    }
    prn_tensor_free(lam); prn_tensor_free(dh);
    prn_free(ctx, dc);
    return st;
}

/* max |y - fy| / (atol + rtol |fy|) over the slice; *fin 0 when a term is not finite. */
static prn_status prn__mpi_resid(prn_context *ctx, prn_tensor *y, prn_tensor *fy, double atol, double rtol, double *r, int *fin) {
    const prn_backend *be = prn_context_backend(ctx);
    prn_tensor *df = NULL, *den = NULL, *q = NULL, *mx = NULL, *z = NULL, *sm = NULL;
    prn_dtype dt = prn_tensor_dtype(y);
    double s = 0;
    prn_tensor *fv = NULL;
    size_t sh[3];
    prn_status st;
    sh[0] = prn_tensor_dim(y, 0); sh[1] = prn_tensor_dim(y, 1); sh[2] = prn_tensor_dim(y, 2);
    st = prn_reshape(ctx, fy, 3, sh, &fv);
    fy = fv;
    if (st == PRN_OK) st = prn_sub(ctx, y, fy, &df);
    if (st == PRN_OK) st = be->unary(ctx, PRN_UNARY_ABS, dt, prn_tensor_numel(df), prn_tensor_buffer(df), prn_tensor_buffer(df), 0, 0);
    if (st == PRN_OK) st = prn_copy(ctx, fy, &den);
    if (st == PRN_OK) st = be->unary(ctx, PRN_UNARY_ABS, dt, prn_tensor_numel(den), prn_tensor_buffer(den), prn_tensor_buffer(den), 0, 0);
    if (st == PRN_OK) st = be->unary(ctx, PRN_UNARY_AFFINE, dt, prn_tensor_numel(den), prn_tensor_buffer(den), prn_tensor_buffer(den),
                                     rtol, atol);
    if (st == PRN_OK) st = prn_div(ctx, df, den, &q);
    if (st == PRN_OK) st = prn_scale(ctx, q, 0.0, &z);       /* NaN exactly where q is NaN or Inf */
    if (st == PRN_OK) st = prn_sum(ctx, z, PRN_ALL_AXES, 0, &sm);
    if (st == PRN_OK) st = prn_tensor_item(sm, &s);
    if (st == PRN_OK) st = prn_max(ctx, q, PRN_ALL_AXES, 0, &mx);
    if (st == PRN_OK) st = prn_tensor_item(mx, r);
    *fin = s == s;
    prn_tensor_free(df); prn_tensor_free(den); prn_tensor_free(q); prn_tensor_free(mx); prn_tensor_free(z); prn_tensor_free(sm);
    prn_tensor_free(fv);
    return st;
}

/* One Newton step's recurrence: A = (1 - kappa) J, b = fy - A yprev. */
static prn_status prn__mpi_newton_terms(prn_context *ctx, const prn__mpi_geo *g, prn_tensor *J, prn_tensor *yprev,
                                        prn_tensor *fy, double kappa, prn_tensor **A4, prn_tensor **b3) {
    prn_tensor *A = NULL, *t[4] = {NULL, NULL, NULL, NULL}, *Ay = NULL, *b = NULL;
    size_t N = g->B * g->T, S = g->C, k = g->k;
    prn_status st = kappa > 0 ? prn_scale(ctx, J, 1.0 - kappa, &A) : PRN_OK;
    if (kappa <= 0) A = prn_tensor_retain(J);
    if (st == PRN_OK && g->diag) st = prn_mul(ctx, A, yprev, &Ay);
    if (st == PRN_OK && !g->diag) {
        st = prn__mpi_view(ctx, A, 3, N * (S / k), k, k, 0, &t[0]);
        if (st == PRN_OK) st = prn__mpi_view(ctx, yprev, 3, N * (S / k), k, 1, 0, &t[1]);
        if (st == PRN_OK) st = prn_matmul(ctx, t[0], t[1], &t[2]);
        if (st == PRN_OK) st = prn__mpi_view(ctx, t[2], 2, N, S, 0, 0, &Ay);
    }
    if (st == PRN_OK) st = prn__mpi_view(ctx, fy, 2, N, S, 0, 0, &t[3]);
    if (st == PRN_OK) st = prn_sub(ctx, t[3], Ay, &b);
    if (st == PRN_OK) st = prn__mpi_view(ctx, b, 3, g->B, g->T, S, 0, b3);
    if (st == PRN_OK) st = g->diag ? prn__mpi_view(ctx, A, 3, g->B, g->T, S, 0, A4) : prn__mpi_view(ctx, A, 4, g->B, g->T, S, k, A4);
    prn_tensor_free(A); prn_tensor_free(Ay); prn_tensor_free(b);
    prn__mpi_free_all(t, 4);
    return st;
}

/* f and its Jacobian on the slice, given the states before each step. */
static prn_status prn__mpi_cell_eval(prn_context *ctx, const prn_deer_system *cell, const prn__mpi_geo *g, prn_tensor *xr,
                                     prn_tensor *y, const double *carry, prn_jacobian_mode mode, prn_tensor **prev,
                                     prn_tensor **fy, prn_tensor **J) {
    prn_tensor *p = NULL, *pr = NULL;
    prn_status st = prn__mpi_prev(ctx, g, y, carry, &p);
    if (st == PRN_OK) st = prn__mpi_view(ctx, p, 2, g->B * g->T, g->C, 0, 0, &pr);
    if (st == PRN_OK) st = cell->jacobian(ctx, cell->user, xr, pr, mode, fy, J);
    prn_tensor_free(p);
    if (st == PRN_OK && prev) *prev = pr;
    else prn_tensor_free(pr);
    return st;
}

/* The sequential evaluation when Newton did not converge, passed from rank
 * to rank: each waits for the state before its slice. */
static prn_status prn__mpi_deer_pipeline(prn_context *ctx, prn_mpi *mpi, const char *fn, const prn_deer_system *cell,
                                         const prn__mpi_geo *g, prn_tensor *x, double *carry, prn_tensor **yout, prn_status st) {
    size_t BS = g->B * g->C, t, sh[3];
    double *buf = (double *)prn_alloc(ctx, (BS + 1 + g->B * g->T * g->C + BS) * sizeof(double)), *Y, *nv;
    prn_tensor *s = NULL, *y = NULL;
    if (!buf) { st = st != PRN_OK ? st : PRN_ERR_OUT_OF_MEMORY; }
    Y = buf ? buf + BS + 1 : NULL;
    nv = Y ? Y + g->B * g->T * g->C : NULL;
    if (buf) {
        memcpy(buf, carry, BS * sizeof(double));
        buf[BS] = st == PRN_OK;
    }
    if (mpi->rank > 0) {   /* the state (and the outcome) of the ranks before */
        double *in = buf;
        double dummy[1];
        if (!in) in = dummy;
        if (MPI_Recv(in, buf ? (int)(BS + 1) : 0, MPI_DOUBLE, mpi->rank - 1, 17, mpi->comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            st = prn__mpi_fail(ctx, fn, "MPI_Recv", MPI_ERR_OTHER);
        else if (buf && buf[BS] != 1.0 && st == PRN_OK)
            st = prn_set_error(ctx, PRN_ERR_REMOTE, "%s: a rank before this one failed", fn);
    }
    if (st == PRN_OK) { sh[0] = g->B; sh[1] = g->C; st = prn__mpi_put(ctx, g->dt, 2, sh, buf, &s); }
    if (st == PRN_OK) memcpy(carry, buf, BS * sizeof(double));
    for (t = 0; st == PRN_OK && t < g->T; ++t) {
        prn_tensor *xt = NULL, *xv = NULL, *nx = NULL, *jj = NULL;
        size_t b;
        st = prn__mpi_step(ctx, x, t, &xt);
        if (st == PRN_OK) st = prn__mpi_view(ctx, xt, 2, g->B, prn_tensor_dim(x, 2), 0, 0, &xv);
        if (st == PRN_OK) st = cell->jacobian(ctx, cell->user, xv, s, PRN_JACOBIAN_DIAG, &nx, &jj);
        if (st == PRN_OK) st = prn__mpi_get(ctx, nx, nv);
        for (b = 0; st == PRN_OK && b < g->B; ++b) memcpy(Y + (b * g->T + t) * g->C, nv + b * g->C, g->C * sizeof(double));
        if (st == PRN_OK) { prn_tensor_free(s); s = prn_tensor_retain(nx); memcpy(buf, nv, BS * sizeof(double)); }
        prn_tensor_free(xt); prn_tensor_free(xv); prn_tensor_free(nx); prn_tensor_free(jj);
    }
    if (mpi->rank < mpi->size - 1) {
        double dummy[1] = {0};
        if (buf) buf[BS] = st == PRN_OK;
        if (MPI_Send(buf ? buf : dummy, buf ? (int)(BS + 1) : 0, MPI_DOUBLE, mpi->rank + 1, 17, mpi->comm) != MPI_SUCCESS && st == PRN_OK)
            st = prn__mpi_fail(ctx, fn, "MPI_Send", MPI_ERR_OTHER);
    }
    if (st == PRN_OK) { sh[0] = g->B; sh[1] = g->T; sh[2] = g->C; st = prn__mpi_put(ctx, g->dt, 3, sh, Y, &y); }
    prn_tensor_free(s);
    prn_free(ctx, buf);
    st = prn_mpi_agree(ctx, mpi, fn, st);
    if (st == PRN_OK) *yout = y;
    else prn_tensor_free(y);
    return st;
}

PRNDEF prn_status prn_mpi_deer(prn_context *ctx, prn_mpi *mpi, const prn_deer_system *cell, prn_tensor *x,
                               prn_tensor *state0, const prn_deer_options *opt, prn_tensor **y, prn_deer_stats *stats) {
    static const char *fn = "prn_mpi_deer";
    static const char *names[] = {"the dtype", "the batch size", "the state size", "the input size", "the Jacobian mode",
                                  "the block size", "whether gradients are recorded", "opt->max_iter",
                                  "opt->no_fallback", "opt->atol", "opt->rtol", "opt->clip", "opt->damping"};
    prn_deer_options o;
    prn_deer_stats ss;
    prn__mpi_geo g;
    prn_status st = PRN_OK;
    prn_tensor *xr = NULL, *ys = NULL, *fy = NULL, *J = NULL, *A4 = NULL, *b3 = NULL, *yn = NULL, *Jx = NULL, *yout = NULL;
    prn_tensor *yp = NULL;
    double *h0 = NULL, *carry = NULL, *tmp = NULL, kappa;
    size_t B = 0, T = 0, S = 0, X = 0, kb = 1, i, sh[4];
    long long v[13];
    int it = 0, rank0, exact_k;
    prn_jacobian_mode exact_mode;
    if (!ctx || !mpi) return PRN_ERR_NULL_ARGUMENT;
    rank0 = mpi->rank == 0;
    memset(&o, 0, sizeof o);
    if (opt) o = *opt;
    memset(&ss, 0, sizeof ss);
    if (ctx != mpi->ctx) st = prn_set_error(ctx, PRN_ERR_CONTEXT_MISMATCH, "%s: 'mpi' was created on another context", fn);
    else if (!cell || !cell->jacobian) st = prn_set_error(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'cell' (or its jacobian) is NULL", fn);
    else if (!x || !y) st = prn_set_error(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn, x ? "y" : "x");
    else if (prn_tensor_ndim(x) != 3 || prn_tensor_dim(x, 2) != cell->input_size || cell->state_size == 0)
        st = prn_set_error(ctx, PRN_ERR_SHAPE, "%s: argument 'x' must be [B, T, %lu] (the cell's input size)", fn,
                           (unsigned long)cell->input_size);
    else if (prn_tensor_dtype(x) == PRN_I32) st = prn_set_error(ctx, PRN_ERR_DTYPE, "%s: argument 'x' must be f32 or f64", fn);
    else if (o.adaptive || o.warm)
        st = prn_set_error(ctx, PRN_ERR_UNSUPPORTED, "%s: adaptive damping and warm starts are not supported across ranks", fn);
    else if ((int)o.mode < 0 || o.mode > PRN_JACOBIAN_DIAG || o.max_iter < 0 || !(o.damping >= 0 && o.damping <= 1) ||
             !(o.atol >= 0 && o.atol <= DBL_MAX) || !(o.rtol >= 0 && o.rtol <= DBL_MAX) || !(o.clip >= 0))
        st = prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'opt': mode, max_iter, damping, atol, rtol (finite, "
                           ">= 0) or clip out of range", fn);
    if (st == PRN_OK) {
        B = prn_tensor_dim(x, 0); T = prn_tensor_dim(x, 1); S = cell->state_size; X = cell->input_size;
        kb = o.mode == PRN_JACOBIAN_DIAG ? 1 : o.mode == PRN_JACOBIAN_BLOCK && cell->block ? cell->block : S;
        if (B == 0) st = prn_set_error(ctx, PRN_ERR_SHAPE, "%s: argument 'x' has no rows", fn);
        else if (kb > PRN__MPI_KMAX || S % kb)
            st = prn_set_error(ctx, PRN_ERR_SHAPE, "%s: Jacobian blocks of %lu (state size %lu): at most 64, dividing S", fn,
                               (unsigned long)kb, (unsigned long)S);
        else if (rank0 && state0 && (prn_tensor_ndim(state0) != 2 || prn_tensor_dim(state0, 0) != B ||
                                     prn_tensor_dim(state0, 1) != S || prn_tensor_dtype(state0) != prn_tensor_dtype(x)))
            st = prn_set_error(ctx, PRN_ERR_SHAPE, "%s: argument 'state0' must be [B, S] of x's dtype", fn);
    }
    if (st == PRN_OK) {   /* x and state0 must be finite, as for prn_deer */
        double r = 0;
        int fin = 1;
        prn_no_grad_begin(ctx);
        if (T > 0) st = prn__mpi_resid(ctx, x, x, 1.0, 0.0, &r, &fin);
        if (st == PRN_OK && !fin) st = prn_set_error(ctx, PRN_ERR_NONFINITE, "%s: argument 'x' holds NaN or Inf", fn);
        if (st == PRN_OK && rank0 && state0) {
            prn_tensor *s3 = NULL;
            size_t sh3[3];
            sh3[0] = B; sh3[1] = 1; sh3[2] = S;
            st = prn_reshape(ctx, state0, 3, sh3, &s3);
            if (st == PRN_OK) st = prn__mpi_resid(ctx, s3, s3, 1.0, 0.0, &r, &fin);
            if (st == PRN_OK && !fin) st = prn_set_error(ctx, PRN_ERR_NONFINITE, "%s: argument 'state0' holds NaN or Inf", fn);
            prn_tensor_free(s3);
        }
        prn_no_grad_end(ctx);
    }
    if (st == PRN_OK) {
        v[0] = prn_tensor_dtype(x); v[1] = (long long)B; v[2] = (long long)S; v[3] = (long long)X; v[4] = o.mode;
        v[5] = (long long)kb; v[6] = prn_grad_enabled(ctx);
        /* the options that steer the iterations and the fall-back: ranks
         * that stopped at different counts would wait for each other */
        v[7] = o.max_iter; v[8] = o.no_fallback != 0;
        v[9] = prn__mpi_bits(o.atol); v[10] = prn__mpi_bits(o.rtol); v[11] = prn__mpi_bits(o.clip);
        v[12] = prn__mpi_bits(o.damping);
    }
    if ((st = prn__mpi_same(ctx, mpi, fn, st, v, names, 13, NULL, 0)) != PRN_OK) return st;
    if (!o.max_iter) o.max_iter = 100;
    if (!o.atol) o.atol = prn_tensor_dtype(x) == PRN_F64 ? 1e-10 : 1e-5;
    if (!o.rtol) o.rtol = prn_tensor_dtype(x) == PRN_F64 ? 1e-10 : 1e-5;
    if (!o.clip) o.clip = 1e8;
    kappa = o.damping;
    prn__mpi_geo_init(&g, mpi, prn_tensor_dtype(x), B, T, S, kb, o.mode == PRN_JACOBIAN_DIAG, 0);
    exact_mode = cell->block && cell->block < S ? PRN_JACOBIAN_BLOCK : PRN_JACOBIAN_DENSE;
    exact_k = exact_mode == PRN_JACOBIAN_BLOCK ? (int)cell->block : (int)S;
    prn_no_grad_begin(ctx);
    h0 = (double *)prn_alloc(ctx, (2 * B * S + B * T * S + 1) * sizeof(double));
    if (!h0) st = prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    else { carry = h0 + B * S; tmp = carry + B * S; memset(h0, 0, B * S * sizeof(double)); }
    if (st == PRN_OK && rank0 && state0) st = prn__mpi_get(ctx, state0, h0);
    st = prn_mpi_agree(ctx, mpi, fn, st);
    if (st == PRN_OK && MPI_Bcast(h0, (int)(B * S), MPI_DOUBLE, 0, mpi->comm) != MPI_SUCCESS)
        st = prn__mpi_fail(ctx, fn, "MPI_Bcast", MPI_ERR_OTHER);
    /* The guess: h0 at every step; the state before the slice likewise. */
    if (st == PRN_OK) {
        size_t b, t;
        for (b = 0; b < B; ++b) for (t = 0; t < T; ++t) memcpy(tmp + (b * T + t) * S, h0 + b * S, S * sizeof(double));
        memcpy(carry, h0, B * S * sizeof(double));
        sh[0] = B; sh[1] = T; sh[2] = S;
        st = prn__mpi_put(ctx, g.dt, 3, sh, tmp, &ys);
    }
    if (st == PRN_OK) st = prn__mpi_view(ctx, x, 2, B * T, X, 0, 0, &xr);
    st = prn_mpi_agree(ctx, mpi, fn, st);
    while (st == PRN_OK) {
        double r = 0, rr[2];
        int fin = 1;
        prn_tensor_free(yp); prn_tensor_free(fy); prn_tensor_free(J);
        yp = fy = J = NULL;
        if (T > 0) {
            st = prn__mpi_cell_eval(ctx, cell, &g, xr, ys, carry, o.mode, &yp, &fy, &J);
            if (st == PRN_OK) st = prn__mpi_resid(ctx, ys, fy, o.atol, o.rtol, &r, &fin);
        }
        st = prn_mpi_agree(ctx, mpi, fn, st);
        if (st != PRN_OK) break;
        rr[0] = fin ? r : HUGE_VAL; rr[1] = !fin;
        if (MPI_Allreduce(MPI_IN_PLACE, rr, 2, MPI_DOUBLE, MPI_MAX, mpi->comm) != MPI_SUCCESS) {
            st = prn__mpi_fail(ctx, fn, "MPI_Allreduce", MPI_ERR_OTHER);
            break;
        }
        ss.residual = rr[0];
        if (rr[1] != 0) ss.nonfinite = 1;
        if (rr[1] == 0 && rr[0] <= 1) { ss.converged = 1; break; }
        if (it >= o.max_iter) break;
        /* Newton: the linear recurrence by the sequence-parallel scan, then
         * NaN -> 0 and clipping, on the slice and on its carry alike. */
        if (T > 0) st = prn__mpi_newton_terms(ctx, &g, J, yp, fy, kappa, &A4, &b3);
        st = prn__mpi_scan_core(ctx, mpi, fn, &g, A4, b3, rank0 ? h0 : NULL, &yn, carry, NULL, st);
        if (st == PRN_OK && T > 0)
            st = prn_context_backend(ctx)->unary(ctx, PRN_UNARY_CLAMP, g.dt, prn_tensor_numel(yn), prn_tensor_buffer(yn),
                                                 prn_tensor_buffer(yn), o.clip, 0.0);
        for (i = 0; st == PRN_OK && i < B * S; ++i)
            carry[i] = carry[i] != carry[i] ? 0.0 : carry[i] > o.clip ? o.clip : carry[i] < -o.clip ? -o.clip : carry[i];
        st = prn_mpi_agree(ctx, mpi, fn, st);
        prn_tensor_free(A4); prn_tensor_free(b3);
        A4 = b3 = NULL;
        if (st == PRN_OK) { prn_tensor_free(ys); ys = yn; yn = NULL; }
        ++it;
    }
    ss.iterations = it;
    ss.damping = kappa;
    if (st == PRN_OK && !ss.converged && !o.no_fallback) {
        prn_tensor *yq = NULL;
        st = prn__mpi_deer_pipeline(ctx, mpi, fn, cell, &g, x, carry, &yq, st);
        if (st == PRN_OK) { prn_tensor_free(ys); ys = yq; ss.fell_back = 1; ss.residual = 0; }
        prn_tensor_free(yp); prn_tensor_free(fy); prn_tensor_free(J);
        yp = fy = J = NULL;
    }
    if (st == PRN_OK) {   /* a result that is not finite is an error, as in prn_deer */
        double r = 0, bad = 0;
        int fin = 1;
        if (T > 0) st = prn__mpi_resid(ctx, ys, ys, 1.0, 0.0, &r, &fin);
        bad = !fin;
        st = prn_mpi_agree(ctx, mpi, fn, st);
        if (st == PRN_OK && MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_DOUBLE, MPI_MAX, mpi->comm) != MPI_SUCCESS)
            st = prn__mpi_fail(ctx, fn, "MPI_Allreduce", MPI_ERR_OTHER);
        if (st == PRN_OK && bad != 0) {
            ss.nonfinite = 1;
            st = prn_set_error(ctx, PRN_ERR_NONFINITE, "%s: the result is not finite (the model overflows or its "
                               "parameters are not finite)", fn);
        }
    }
    /* Gradients: the exact Jacobians at the solution, an adjoint op, and one
     * recorded step of f over the slice. */
    if (st == PRN_OK && v[6] && cell->step) {
        if (T > 0 && (!J || o.mode == PRN_JACOBIAN_DIAG || !ss.converged || kb != (size_t)exact_k)) {
            prn_tensor_free(yp); prn_tensor_free(fy); prn_tensor_free(J);
            yp = fy = J = NULL;
            st = prn__mpi_cell_eval(ctx, cell, &g, xr, ys, carry, exact_mode, NULL, &fy, &J);
        }
        if (st == PRN_OK && T > 0 && exact_mode == PRN_JACOBIAN_DENSE && S > PRN__MPI_KMAX)
            st = prn_set_error(ctx, PRN_ERR_UNSUPPORTED, "%s: gradients need the exact Jacobian, and S = %lu is more than 64",
                               fn, (unsigned long)S);
        if (st == PRN_OK && T > 0) st = prn__mpi_view(ctx, J, 4, B, T, S, (size_t)exact_k, &Jx);
    }
    st = prn_mpi_agree(ctx, mpi, fn, st);
    prn_no_grad_end(ctx);
    if (st == PRN_OK && v[6] && cell->step) {
        prn__mpi_aop *op = (prn__mpi_aop *)prn_alloc(ctx, sizeof *op);
        prn_tensor *c = NULL, *s1 = NULL, *cat = NULL, *catr = NULL, *z = NULL, *z3 = NULL, *in[3];
        int n = 0;
        if (!op) st = prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        if (st == PRN_OK && T > 0) {
            sh[0] = B; sh[1] = 1; sh[2] = S;
            if (rank0 && state0) st = prn_reshape(ctx, state0, 3, sh, &c);
            else { prn_no_grad_begin(ctx); st = prn__mpi_put(ctx, g.dt, 3, sh, carry, &c); prn_no_grad_end(ctx); }
            if (st == PRN_OK) st = prn_slice(ctx, ys, 1, 0, T - 1, &s1);
            if (st == PRN_OK) st = prn_concat(ctx, c, s1, 1, &cat);
            if (st == PRN_OK) st = prn__mpi_view(ctx, cat, 2, B * T, S, 0, 0, &catr);
            /* x again, recorded this time, so that its gradient flows */
            if (st == PRN_OK) { prn_tensor_free(xr); xr = NULL; st = prn__mpi_view(ctx, x, 2, B * T, X, 0, 0, &xr); }
            if (st == PRN_OK) st = cell->step(ctx, cell->user, xr, catr, &z);
            if (st == PRN_OK) st = prn__mpi_view(ctx, z, 3, B, T, S, 0, &z3);
        }
        if (st == PRN_OK) { prn_no_grad_begin(ctx); st = prn_copy(ctx, ys, &yout); prn_no_grad_end(ctx); }
        if (st == PRN_OK) {
            memset(op, 0, sizeof *op);
            op->mpi = mpi;
            prn__mpi_geo_init(&op->g, mpi, g.dt, B, T, S, (size_t)exact_k, 0, 0);
            op->J = prn_tensor_retain(Jx);
            op->iz = op->ih = -1;
            if (T > 0) { op->iz = n; in[n++] = z3; }
            if (T == 0 && rank0 && state0) { op->ih = n; in[n++] = state0; }
            in[n++] = mpi->token;
            st = prn_tape_record(ctx, fn, in, n, yout, prn__mpi_aop_backward, op, prn__mpi_aop_free);
            if (st != PRN_OK) prn__mpi_aop_free(op);
            op = NULL;
        }
        prn_free(ctx, op);
        prn_tensor_free(c); prn_tensor_free(s1); prn_tensor_free(cat); prn_tensor_free(catr); prn_tensor_free(z); prn_tensor_free(z3);
        st = prn_mpi_agree(ctx, mpi, fn, st);
    } else if (st == PRN_OK) {
        yout = prn_tensor_retain(ys);
    }
    prn_tensor_free(xr); prn_tensor_free(ys); prn_tensor_free(yp); prn_tensor_free(fy); prn_tensor_free(J);
    prn_tensor_free(A4); prn_tensor_free(b3); prn_tensor_free(yn); prn_tensor_free(Jx);
    prn_free(ctx, h0);
    if (stats) *stats = ss;
    if (st != PRN_OK) { prn_tensor_free(yout); return st; }
    *y = yout;
    return PRN_OK;
}

/* Writes doubles into t (numel of them), converting to t's dtype. */
static prn_status prn__mpi_set(prn_context *ctx, prn_tensor *t, const double *src) {
    size_t n = prn_tensor_numel(t), i;
    prn_status st;
    float *f;
    if (prn_tensor_dtype(t) == PRN_F64) return prn_tensor_upload(t, src, n);
    if (!(f = (float *)prn_alloc(ctx, (n ? n : 1) * sizeof(float)))) return PRN_ERR_OUT_OF_MEMORY;
    for (i = 0; i < n; ++i) f[i] = (float)src[i];
    st = prn_tensor_upload(t, f, n);
    prn_free(ctx, f);
    return st;
}

/* The common start of the calls on a list of parameters: the list checked
 * locally, the ranks agreed on it (count, elements and, with has_root, the
 * root), and a host buffer of every element allocated (*buf, *total). */
static prn_status prn__mpi_params(prn_context *ctx, prn_mpi *mpi, const char *fn, prn_tensor *const *params, int num_params,
                                  int has_root, int root, size_t *total, double **buf) {
    static const char *names[] = {"the number of tensors", "the number of elements", "the root"};
    long long v[3];
    int i;
    prn_status st = PRN_OK;
    *total = 0;
    *buf = NULL;
    if (!ctx || !mpi) return PRN_ERR_NULL_ARGUMENT;
    if (has_root && (root < 0 || root >= mpi->size)) st = prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: root %d is not a rank", fn, root);
    else if (num_params < 0 || (num_params > 0 && !params))
        st = prn_set_error(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'params' is NULL", fn);
    for (i = 0; st == PRN_OK && i < num_params; ++i) {
        if (!params[i]) st = prn_set_error(ctx, PRN_ERR_NULL_ARGUMENT, "%s: params[%d] is NULL", fn, i);
        else *total += prn_tensor_numel(params[i]);
    }
    v[0] = num_params; v[1] = (long long)*total; v[2] = root;
    if ((st = prn__mpi_same(ctx, mpi, fn, st, v, names, has_root ? 3 : 2, NULL, 0)) != PRN_OK) return st;
    if (*total > 2147483647u) st = prn_set_error(ctx, PRN_ERR_OVERFLOW, "%s: more than 2^31 elements", fn);
    if (st == PRN_OK && !(*buf = (double *)prn_alloc(ctx, (*total ? *total : 1) * sizeof(double))))
        st = prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    return st;
}

PRNDEF prn_status prn_mpi_allreduce_grads(prn_context *ctx, prn_mpi *mpi, prn_tensor *const *params, int num_params,
                                          int mean) {
    static const char *fn = "prn_mpi_allreduce_grads";
    size_t total, off = 0;
    double *buf;
    int i;
    prn_status st = prn__mpi_params(ctx, mpi, fn, params, num_params, 0, 0, &total, &buf);
    if (st == PRN_ERR_NULL_ARGUMENT && (!ctx || !mpi)) return st;
    for (i = 0; st == PRN_OK && i < num_params; ++i) {
        prn_tensor *g = prn_tensor_grad(params[i]);
        size_t n = prn_tensor_numel(params[i]);
        if (g) st = prn__mpi_get(ctx, g, buf + off);
        else memset(buf + off, 0, n * sizeof(double));
        off += n;
    }
    st = prn_mpi_agree(ctx, mpi, fn, st);
    if (st == PRN_OK && MPI_Allreduce(MPI_IN_PLACE, buf, (int)total, MPI_DOUBLE, MPI_SUM, mpi->comm) != MPI_SUCCESS)
        st = prn__mpi_fail(ctx, fn, "MPI_Allreduce", MPI_ERR_OTHER);
    if (st == PRN_OK && mean) for (off = 0; off < total; ++off) buf[off] /= mpi->size;
    /* Every rank writes the same sums; a failure here still leaves the
     * other ranks' gradients summed, so the ranks agree afterwards. */
    for (i = 0, off = 0; st == PRN_OK && i < num_params; ++i) {
        size_t sh[4];
        int d, nd = prn_tensor_ndim(params[i]);
        prn_tensor *g = NULL;
        for (d = 0; d < nd && d < 4; ++d) sh[d] = prn_tensor_dim(params[i], d);
        st = prn__mpi_put(ctx, prn_tensor_dtype(params[i]), nd, sh, buf + off, &g);
        if (st == PRN_OK) st = prn_tensor_set_grad(params[i], g);
        prn_tensor_free(g);
        off += prn_tensor_numel(params[i]);
    }
    prn_free(ctx, buf);
    return prn_mpi_agree(ctx, mpi, fn, st);
}

PRNDEF prn_status prn_mpi_broadcast(prn_context *ctx, prn_mpi *mpi, prn_tensor *const *params, int num_params, int root) {
    static const char *fn = "prn_mpi_broadcast";
    size_t total, off = 0;
    double *buf;
    int i;
    prn_status st = prn__mpi_params(ctx, mpi, fn, params, num_params, 1, root, &total, &buf);
    if (st == PRN_ERR_NULL_ARGUMENT && (!ctx || !mpi)) return st;
    for (i = 0; st == PRN_OK && mpi->rank == root && i < num_params; ++i) {
        st = prn__mpi_get(ctx, params[i], buf + off);
        off += prn_tensor_numel(params[i]);
    }
    st = prn_mpi_agree(ctx, mpi, fn, st);
    if (st == PRN_OK && MPI_Bcast(buf, (int)total, MPI_DOUBLE, root, mpi->comm) != MPI_SUCCESS)
        st = prn__mpi_fail(ctx, fn, "MPI_Bcast", MPI_ERR_OTHER);
    for (i = 0, off = 0; st == PRN_OK && mpi->rank != root && i < num_params; ++i) {
        st = prn__mpi_set(ctx, params[i], buf + off);
        off += prn_tensor_numel(params[i]);
    }
    prn_free(ctx, buf);
    return prn_mpi_agree(ctx, mpi, fn, st);
}

/* --- built-in networks as DEER cells ----------------------------------------------- */
static prn_status prn__mpi_rnn_jacobian(prn_context *ctx, void *user, prn_tensor *x, prn_tensor *state, prn_jacobian_mode mode,
                                        prn_tensor **next, prn_tensor **jac) {
    return prn_rnn_jacobian(ctx, (const prn_rnn *)user, x, state, mode, next, jac);
}
static prn_status prn__mpi_rnn_step(prn_context *ctx, void *user, prn_tensor *x, prn_tensor *state, prn_tensor **next) {
    return prn_rnn_step(ctx, (const prn_rnn *)user, x, state, next);
}
PRNDEF prn_status prn_mpi_deer_rnn(prn_context *ctx, prn_mpi *mpi, const prn_rnn *rnn, prn_tensor *x, prn_tensor *state0,
                                   const prn_deer_options *opt, prn_tensor **y, prn_deer_stats *stats) {
    prn_deer_system c;
    const prn_rnn_config *cf = rnn ? prn_rnn_get_config(rnn) : NULL;
    memset(&c, 0, sizeof c);
    if (cf && (cf->num_layers > 1 || cf->bidirectional)) {
        /* still collective: the others learn of it through the agreement */
        prn_status st = prn_set_error(ctx, PRN_ERR_UNSUPPORTED, "prn_mpi_deer_rnn: argument 'rnn' must have one layer and one "
                                      "direction");
        return prn_mpi_agree(ctx, mpi, "prn_mpi_deer_rnn", st);
    }
    if (rnn) {
        c.state_size = prn_rnn_state_size(rnn);
        c.input_size = cf->input_size;
        c.block = prn_rnn_jacobian_block(rnn) < c.state_size ? prn_rnn_jacobian_block(rnn) : 0;
        c.jacobian = prn__mpi_rnn_jacobian;
        c.step = prn__mpi_rnn_step;
        c.user = (void *)rnn;
    }
    {   /* state0 as prn_deer_rnn's, [1, B, S], or [B, S] */
        prn_tensor *s2 = NULL;
        prn_status st = PRN_OK;
        if (state0 && prn_tensor_ndim(state0) == 3 && prn_tensor_dim(state0, 0) == 1) {
            size_t sh[2];
            sh[0] = prn_tensor_dim(state0, 1); sh[1] = prn_tensor_dim(state0, 2);
            st = prn_reshape(ctx, state0, 2, sh, &s2);
        } else {
            s2 = prn_tensor_retain(state0);
        }
        st = prn_mpi_agree(ctx, mpi, "prn_mpi_deer_rnn", st);
        if (st == PRN_OK) st = prn_mpi_deer(ctx, mpi, rnn ? &c : NULL, x, s2, opt, y, stats);
        prn_tensor_free(s2);
        return st;
    }
}

/* --- SCYFI across ranks ---------------------------------------------------------- */
static prn_status prn__mpi_scyfi_exchange(prn_context *ctx, void *user, int failed, const void *mine, size_t bytes, void **all,
                                          size_t *all_bytes) {
    static const char *fn = "prn_mpi_scyfi";
    prn_mpi *mpi = (prn_mpi *)user;
    int *counts = NULL, *displs = NULL, i, n = (int)bytes;
    long long total = 0;
    unsigned char *out = NULL;
    prn_status st = failed ? (prn_last_status(ctx) != PRN_OK ? prn_last_status(ctx) : PRN_ERR_STATE) : PRN_OK;
    if (st == PRN_OK && bytes > 2147483647u) st = prn_set_error(ctx, PRN_ERR_OVERFLOW, "%s: a message of more than 2 GiB", fn);
    if (st == PRN_OK && !(counts = (int *)prn_alloc(ctx, 2 * (size_t)mpi->size * sizeof(int))))
        st = prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    st = prn_mpi_agree(ctx, mpi, fn, st);
    if (st != PRN_OK) { prn_free(ctx, counts); return st; }
    displs = counts + mpi->size;
    if (MPI_Allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, mpi->comm) != MPI_SUCCESS)
        st = prn__mpi_fail(ctx, fn, "MPI_Allgather", MPI_ERR_OTHER);
    for (i = 0; st == PRN_OK && i < mpi->size; ++i) { displs[i] = (int)total; total += counts[i]; }
    if (st == PRN_OK && total > 2147483647LL) st = prn_set_error(ctx, PRN_ERR_OVERFLOW, "%s: a round of more than 2 GiB", fn);
    if (st == PRN_OK && !(out = (unsigned char *)prn_alloc(ctx, total ? (size_t)total : 1)))
        st = prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    st = prn_mpi_agree(ctx, mpi, fn, st);
    if (st == PRN_OK && MPI_Allgatherv((void *)(mine ? mine : (const void *)counts), n, MPI_BYTE, out, counts, displs, MPI_BYTE,
                                       mpi->comm) != MPI_SUCCESS)
        st = prn__mpi_fail(ctx, fn, "MPI_Allgatherv", MPI_ERR_OTHER);
    prn_free(ctx, counts);
    if (st != PRN_OK) { prn_free(ctx, out); return st; }
    *all = out;
    *all_bytes = (size_t)total;
    return PRN_OK;
}

/* FNV-1a over a model's sizes and numbers: ranks with different models
 * would deal and judge different chains, and wait for each other. */
static long long prn__mpi_model_hash(const prn_pwl_model *m) {
    unsigned long long h = 14695981039346656037ull;
    size_t M = m->M, H, nA = m->full_A ? M * M : M, v[4];
    int shallow = m->kind == PRN_PWL_SHPLRNN || m->kind == PRN_PWL_CLIPPED_SHPLRNN;
    H = shallow ? m->H : 0;
    v[0] = (size_t)m->kind; v[1] = M; v[2] = H; v[3] = m->kind == PRN_PWL_ALRNN ? m->P : 0;
    h = prn__mpi_hash(h, v, sizeof v);
    h = prn__mpi_hash(h, &m->full_A, sizeof m->full_A);
    h = prn__mpi_hash(h, m->A, nA * sizeof(double));
    if (shallow) {
        h = prn__mpi_hash(h, m->W1, M * H * sizeof(double));
        h = prn__mpi_hash(h, m->W2, H * M * sizeof(double));
        h = prn__mpi_hash(h, m->h1, M * sizeof(double));
        h = prn__mpi_hash(h, m->h2, H * sizeof(double));
    } else {
        h = prn__mpi_hash(h, m->W, M * M * sizeof(double));
        h = prn__mpi_hash(h, m->h, M * sizeof(double));
    }
    return (long long)(h >> 1);
}

PRNDEF prn_status prn_mpi_scyfi(prn_context *ctx, prn_mpi *mpi, const prn_pwl_model *m, const prn_scyfi_options *opt,
                                prn_scyfi_result **out) {
    static const char *fn = "prn_mpi_scyfi";
    static const char *names[] = {"the model", "opt->kmax", "opt->outer", "opt->inner", "opt->seed", "opt->batch",
                                  "opt->tol", "opt->exhaustive", "opt->exhaustive_limit", "opt->pool_size",
                                  "opt->pool_range", "opt->max_cycles", "opt->host_products"};
    prn_scyfi_options o;
    prn_status st = PRN_OK;
    long long v[13];
    if (!ctx || !mpi) return PRN_ERR_NULL_ARGUMENT;
    memset(&o, 0, sizeof o);
    if (opt) o = *opt;
    /* The ranks agree on the model and the options before the search:
     * prn_scyfi's own checks (and every round's count) depend on them, and
     * a rank that returned early, or searched longer, would leave the
     * others waiting in an exchange. */
    memset(v, 0, sizeof v);
    if (ctx != mpi->ctx) st = prn_set_error(ctx, PRN_ERR_CONTEXT_MISMATCH, "%s: 'mpi' was created on another context", fn);
    else if (!out) st = prn_set_error(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'out' is NULL", fn);
    else st = prn_pwl_check(ctx, m);
    if (st == PRN_OK) {
        v[0] = prn__mpi_model_hash(m); v[1] = prn__mpi_count(o.kmax); v[2] = prn__mpi_count(o.outer);
        v[3] = prn__mpi_count(o.inner); v[4] = prn__mpi_bits8(&o.seed);
        v[5] = prn__mpi_count(o.batch); v[6] = prn__mpi_bits(o.tol); v[7] = o.exhaustive;
        v[8] = prn__mpi_count(o.exhaustive_limit); v[9] = prn__mpi_count(o.pool_size);
        v[10] = prn__mpi_bits(o.pool_range); v[11] = prn__mpi_count(o.max_cycles); v[12] = o.host_products;
    }
    if ((st = prn__mpi_same(ctx, mpi, fn, st, v, names, 13, NULL, 0)) != PRN_OK) return st;
    o.part_rank = mpi->rank;
    o.part_size = mpi->size;
    o.part_exchange = prn__mpi_scyfi_exchange;
    o.part_user = mpi;
    return prn_scyfi(ctx, m, &o, out);
}

#endif /* PARRNN_MPI_IMPLEMENTATION_DONE */
#endif /* PARRNN_MPI_IMPLEMENTATION */
