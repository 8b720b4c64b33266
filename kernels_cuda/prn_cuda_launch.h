/* prn_cuda_launch.h - the launchers of kernels_cuda/ *.cu, called by the
 * host side of the CUDA backend (backends/parrnn_cuda.h).
 *
 * Each launcher queues its kernel(s) on the given stream and returns the
 * cudaError_t of the launch (cudaSuccess = 0) as an int; it never
 * synchronises, allocates or prints. Element types: f64 != 0 selects
 * double, else float; esize is the element size in bytes for type-blind
 * copies and fills. Sizes and indices are 64-bit throughout, and every
 * kernel walks its work with a grid-stride loop over a 1-D grid of at most
 * 65535 blocks, so any size fits the grid limits. Pointers are device
 * pointers; those documented as optional may be NULL. */
#ifndef PRN_CUDA_LAUNCH_H
#define PRN_CUDA_LAUNCH_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Optimiser parameters as the kernels take them (ib1/ib2 = 1/bias1, 1/bias2). */
typedef struct prn_cu_optim {
    double lr, momentum, weight_decay, beta1, beta2, eps, ib1, ib2;
    int nesterov, decoupled;
} prn_cu_optim;

/* A trivial kernel: tells create whether this build has code for the device. */
int prn_cu_probe(cudaStream_t s);

/* y[i] = bit pattern `bits` (esize 4: the low 32 bits) for i < n. */
int prn_cu_fill(cudaStream_t s, int esize, void *y, size_t n, uint64_t bits);
/* op: a prn_unary_op. y may equal x. */
int prn_cu_unary(cudaStream_t s, int f64, int op, size_t n, const void *x, void *y, double alpha, double beta);
/* op: a prn_binary_op; 4-D broadcast walk, y contiguous (may equal a or b). */
int prn_cu_binary(cudaStream_t s, int f64, int op, const size_t shape[4], const void *a, const size_t as[4],
                  const void *b, const size_t bs[4], void *y);
/* y[yoff + sum i*ys] = x[xoff + sum i*xs] over shape; esize 4 or 8. */
int prn_cu_strided_copy(cudaStream_t s, int esize, const size_t shape[4], const void *x, size_t xoff,
                        const size_t xs[4], void *y, size_t yoff, const size_t ys[4]);
/* C_b = beta C_b (beta == 0: zeros) for the M x N matrices of a batch
 * (GEMM with K == 0). */
int prn_cu_scale_matrices(cudaStream_t s, int f64, size_t batch, size_t M, size_t N, double beta, void *C,
                          size_t ldc, size_t sc);
/* Philox4x32-10 random numbers, element i from block counter + i. */
int prn_cu_random(cudaStream_t s, int f64, int normal, size_t n, uint64_t seed, uint64_t counter, double p0,
                  double p1, void *y);
/* Fused optimiser updates; v (velocity) may be NULL. */
int prn_cu_sgd(cudaStream_t s, int f64, size_t n, void *w, const void *g, void *v, const prn_cu_optim *p);
int prn_cu_adam(cudaStream_t s, int f64, size_t n, void *w, const void *g, void *m, void *v, const prn_cu_optim *p);

/* Row pitches in elements (from batch row b to b + 1) of a cell step's
 * arrays: their widths for one step's [B, X] arrays, T times that for step
 * t of a layer's [B, T, X] arrays. dxp has xp's pitch, dq q's. */
typedef struct prn_cu_rows {
    size_t xp, q, s, next, saved, g;
} prn_cu_rows;

/* One fused step of the classic cells' gates (rnn_cell.cu; the table's
 * rnn_gates_forward / _backward, and each step of its fused layers); kind a
 * prn_rnn_kind; saved NULL for ELMAN, or when no backward follows (forward).
 * Backward: carry [B, S] (contiguous; NULL: none) is added to g, and ds
 * [B, S] is contiguous. */
int prn_cu_rnn_cell_fwd(cudaStream_t s, int f64, int kind, int relu, size_t B, size_t H, size_t k,
                        const prn_cu_rows *rows, const void *xp, const void *q, const void *bias, const void *st,
                        void *next, void *saved);
int prn_cu_rnn_cell_bwd(cudaStream_t s, int f64, int kind, int relu, size_t B, size_t H, size_t k,
                        const prn_cu_rows *rows, const void *g, const void *carry, const void *st, const void *next,
                        const void *saved, void *dxp, void *dq, void *ds);
/* A whole layer in one launch (rnn_cell.cu): a persistent kernel whose ns
 * blocks per group of bg sequences each keep a slice of W_hh (u hidden
 * units, all their gates) in shared memory for all T steps. The plan is
 * made per call from the device's multiprocessors and opt-in shared memory
 * (min_slices > 1 forces at least that many slices: tests); it returns 0
 * where the layer does not fit on chip (the caller then runs a GEMM and a
 * cell kernel per step). scratch: pl->scratch bytes of device memory.
 * Arrays as the table's rnn_layer_forward / _backward ([B, T, X]). */
typedef struct prn_cu_layer_plan {
    unsigned ns, u, bg, nbg, grid, threads, ks, rb;
    size_t smem, smem_max, scratch; /* smem_max: the kernels' opt-in (the device's limit) */
    unsigned path;                  /* 0: the block kernels (k_lay_*); 1: a thread per sequence (H = 1, k_lay1_*) */
    unsigned xtag;                  /* slices exchange tagged 64-bit words (f32), not the counter barrier */
} prn_cu_layer_plan;
/* blocks_only: never the thread-per-sequence kernels (tests, benchmarks:
 * PARRNN_CUDA_LAYER=blocks) */
int prn_cu_rnn_layer_plan(int f64, int kind, int bwd, size_t B, size_t T, size_t H, int sm_count, size_t smem_optin,
                          unsigned min_slices, int blocks_only, prn_cu_layer_plan *pl);
int prn_cu_rnn_layer_fwd(cudaStream_t s, int f64, int kind, int relu, int rev, size_t B, size_t T, size_t H,
                         const prn_cu_layer_plan *pl, const void *xp, const void *w, const void *bias, const void *s0,
                         void *states, void *saved, void *scratch);
int prn_cu_rnn_layer_bwd(cudaStream_t s, int f64, int kind, int relu, int rev, size_t B, size_t T, size_t H,
                         const prn_cu_layer_plan *pl, const void *g, const void *w, const void *s0, const void *states,
                         const void *saved, void *dxp, void *dq, void *ds0, void *scratch);

/* Batched dense solves (solve.cu; the table's solve_batched): a [batch, n,
 * n] and r [batch, n] in place, info [batch] int32 on the device. */
int prn_cu_solve_batched(cudaStream_t s, int f64, size_t batch, size_t n, void *a, void *r, int *info);

/* Reductions over the middle axis of [outer, n, inner]; op: prn_reduce_op.
 * Long rows with few outputs run in two stages through scratch, whose size
 * prn_cu_reduce_scratch gives (0: none needed; sm: the multiprocessors). */
size_t prn_cu_reduce_scratch(size_t outer, size_t n, size_t inner, int sm);
int prn_cu_reduce(cudaStream_t s, int f64, int op, size_t outer, size_t n, size_t inner, const void *x, void *y,
                  void *scratch, int sm);
/* int32 index of the first maximum. */
int prn_cu_argmax(cudaStream_t s, int f64, size_t outer, size_t n, size_t inner, const void *x, void *y);
int prn_cu_softmax(cudaStream_t s, int f64, int logsm, size_t outer, size_t n, size_t inner, const void *x,
                   void *y);

/* Scans (see backends/parrnn_cuda.h for the algorithm). Chunk j of a
 * sequence holds logical steps [j L, min(T, (j+1) L)); step t lives in row
 * rev ? T-1-t : t.
 * diag fold: the maps (m, o) of chunks 0..nm-1, [batch, nm, C] each.
 * diag expand: chunk j starts from carry[n, j-1] (j > 0) or h0[n] (NULL:
 * zero), writes h (may be b). */
int prn_cu_scan_diag_fold(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, size_t L, size_t nm, int rev,
                          const void *a, const void *b, void *m, void *o);
int prn_cu_scan_diag_expand(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, size_t L, size_t nch,
                            int rev, const void *a, const void *b, const void *h0, const void *carry, void *h);
/* diag lookback: the whole scan in one pass (decoupled look-back, a and b
 * read once; kernels_cuda/scan.cu); scratch holds
 * prn_cu_scan_diag_lookback_bytes(f64, batch, T, C) bytes, 0 when the
 * shape has too many tiles for it (then the chunked scan serves); sm: the
 * device's multiprocessors (sizes the grid, not the results). */
size_t prn_cu_scan_diag_lookback_bytes(int f64, size_t batch, size_t T, size_t C);
/* 1 when PRN_SCAN_AUTO should take the look-back for this shape, 0 when
 * its chains of states would leave it slower than the chunked scan (the
 * model is at the function, kernels_cuda/scan.cu) */
int prn_cu_scan_diag_lookback_pays(int f64, size_t batch, size_t T, size_t C);
int prn_cu_scan_diag_lookback(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, int rev, const void *a,
                              const void *b, const void *h0, void *h, void *scratch, int sm);
/* block fold: M [batch, nm, C, k] and v [batch, nm, C] of chunks 0..nm-1;
 * block expand as diag expand, carry [batch, nch-1, C]. */
int prn_cu_scan_block_fold(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, size_t k, size_t L,
                           size_t nm, int rev, int tr, const void *a, const void *b, void *M, void *v);
int prn_cu_scan_block_expand(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, size_t k, size_t L,
                             size_t nch, int rev, int tr, const void *a, const void *b, const void *h0,
                             const void *carry, void *h);

/* The fused DEER iteration (deer.cu; the table's deer_iterate): the
 * arguments of prn_deer_fused that the kernels read, with P the
 * projections per step, kb the Jacobian's block (DIAG 1, MHGRU's BLOCK
 * hk, else S), one_k = 1 - damping, and the plan: C segments of Ls steps
 * per row (prn_cu_deer_plan), ntask = B C. */
typedef struct prn_cu_deer {
    int kind, relu, rev;
    size_t B, T, H, S, hk, L, P, kb, C, Ls, ntask;
    const void *w[4];
    const void *xp, *h0, *y; /* y NULL: h0 at every step */
    void *ynew;              /* NULL: the residual alone */
    int discard;             /* prn_deer_fused's discard_converged */
    int iters, ev;           /* prn_deer_fused's iters (y2 its second buffer);
                              * ev: the iteration a launch belongs to */
    void *y2;
    double one_k, clip, atol, rtol;
    /* deer_adjoint: g -> lam; dxp, dq, dh0, dw, db as prn_deer_fused
     * (NULL: not wanted); wc: dw's columns (H, MHGRU hk) */
    const void *g;
    void *lam, *dxp, *dq, *dh0, *dw, *db;
    size_t wc;
} prn_cu_deer;
/* The segments of a row: a function of B, T and S alone. */
void prn_cu_deer_plan(size_t B, size_t T, size_t S, size_t *C, size_t *Ls);
/* 1 when the kernels take a cell of this kind with S states (f64 or f32). */
int prn_cu_deer_takes(int kind, size_t S, int f64);
/* Up to iters iterations (prn_deer_fused's contract), queued without a
 * host round trip. res2 [2 ntask] doubles (a pair per block, at most ntask
 * blocks); tv [ntask (2 S + S S)] of the dtype when C > 1 and ynew is not
 * NULL, else unused; ctl [4] doubles, zero on entry: then the last
 * iteration's largest residual term, 1 when one was not finite (0
 * otherwise), the iterations made, and 1 when one stopped the call. */
int prn_cu_deer_iterate(cudaStream_t s, int f64, const prn_cu_deer *a, double *res2, void *tv, double *ctl);
/* The adjoint: tv as above (C > 1); dqs [B T, P] when dw and db are wanted
 * without dq and S > 1, else unused; part [nchunk (P wc + P)] doubles with
 * dw and db (prn_cu_deer_dw_plan gives nchunk: S = 1 a chunk per block of
 * the adjoint's kernel). kb: MHGRU hk, else S. */
void prn_cu_deer_dw_plan(const prn_cu_deer *a, size_t *rpc, size_t *nchunk);
int prn_cu_deer_adjoint(cudaStream_t s, int f64, const prn_cu_deer *a, void *tv, void *dqs, double *part);

#ifdef __cplusplus
}
#endif
#endif /* PRN_CUDA_LAUNCH_H */
