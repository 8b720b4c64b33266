/* test_cuda.c - what is particular to the CUDA backend: choosing the
 * device (prn_config.device, PARRNN_CUDA_DEVICE), the statuses and
 * messages of failures, and contexts that share nothing. Under the CUDA
 * emulator (tests/cuda_emu, built with PRNT_CUDA_EMU), which can make the
 * driver report no device and make device allocations fail, also: the
 * no-device status, and a sweep that fails each device allocation of a
 * forward and backward pass in turn (ops, a scan, an LSTM on the
 * fused layers; pools and cudaMalloc; the one allocation, or every one
 * from it on). Each failure must come back as
 * PRN_ERR_OUT_OF_MEMORY naming the CUDA call, leave the output untouched
 * and the live tensors as they were; a retry must give results bitwise
 * equal to the run without failures; no device memory may outlive the
 * context. On any device: the single-pass diagonal scan over hundreds of
 * tiles, exactly, through each of its load paths (128-bit and scalar,
 * pointers off 16-byte boundaries); AUTO's choice between it and the
 * chunked scan; the chunked block scans at every compiled bound on k; the
 * one-kernel RNN layers against the per-step path (PARRNN_CUDA_LAYER=
 * steps), hidden size 1's thread per sequence against the block kernels
 * (=blocks) bit for bit, and the plan's choice of it; under the emulator again with 64 (the look-back) or 8 (block
 * scans, layers) blocks running at once.
 * Its primitives are checked by test_conformance, and the whole
 * suite runs on it with PARRNN_BACKEND=cuda. Skipped when the backend is
 * not built in or no device exists. */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include "parrnn.h"
#include "prn_test.h"

#include <stdlib.h>
#include <string.h>

#include "prn_test_device.h"
#ifdef PARRNN_WITH_CUDA
/* the CUDA headers use C11 anonymous unions (as in backends/parrnn_cuda.h) */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include "kernels_cuda/prn_cuda_launch.h" /* prn_cu_rnn_layer_plan */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

#ifdef PRNT_CUDA_EMU /* the emulator's own counters (tests/cuda_emu/cuda_runtime_api.h) */
size_t prn_cuda_emu_live_allocations(void);
long prn_cuda_emu_allocation_count(void);
#endif

static char g_skip[512]; /* why the backend cannot run here ("" when it can) */

static prn_status make(const char *device, prn_context **ctx, char *err, size_t n) {
    return prntd_make("cuda", device, ctx, err, n);
}

/* ---- the single-pass scan (decoupled look-back) over many tiles ----
 * Long sequences of 1 to 1000 channels (whole rows up to 8 f32 / 4 f64
 * channels, groups of that many beyond): tens to hundreds of tiles per
 * sequence and group. A tile starts from the state of the tile D places
 * back in its chain (D from the shape: 1 with hundreds of chains, up to
 * 249) composed with the D-1 aggregates between, each slice of the block
 * reading up to 8 of them; the first D tiles start from h0. Whether those
 * are published yet depends on timing: on the emulator, always when
 * blocks run in turn, often not with PRN_CUDA_EMU_RESIDENT=64. Each scan
 * runs twice and must give the same bits (the composition order may not
 * depend on timing). Channels of kind "exact" have decays of +-1 and small
 * integer inputs: every order of evaluation gives the same integers, so
 * any carry taken from the wrong tile, or lost, shows as an exact
 * mismatch however far back it came from. The other channels decay in
 * [0.5, 0.99] with inputs in [-1, 1], within a tolerance. */
static double lb_rand(unsigned long long *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* The bits of every case's result (FNV-1a), recorded by the first pass of
 * run_lookback_cases (blocks in turn, 12 or 8 of them) and compared by the
 * second (64 at once, 66 or 44): the same bits whatever the grid and
 * whichever tiles were done first. */
static unsigned long long g_lb_bits[64];
static int g_lb_case, g_lb_compare;

static unsigned long long lb_hash(const void *p, size_t n) {
    const unsigned char *c = (const unsigned char *)p;
    unsigned long long hsh = 14695981039346656037ULL;
    size_t i;
    for (i = 0; i < n; ++i) hsh = (hsh ^ c[i]) * 1099511628211ULL;
    return hsh;
}

static void lookback_case(prn_dtype dt, size_t B, size_t T, size_t C, int rev, int use_h0) {
    const size_t n = B * T * C, es = dt == PRN_F64 ? 8 : 4;
    size_t sh[3], sz[2], i, t, c, q;
    unsigned long long seed = 0x9e3779b97f4a7c15ULL ^ (T * 31 + C * 7 + B + (size_t)rev * 5 + (size_t)use_h0);
    double *a = (double *)malloc(n * sizeof(double)), *b = (double *)malloc(n * sizeof(double));
    double *z = (double *)malloc(B * C * sizeof(double)), *want = (double *)malloc(n * sizeof(double));
    void *raw = malloc(n * es), *got = malloc(n * es);
    prn_context *ctx = NULL;
    prn_tensor *ta = NULL, *tb = NULL, *tz = NULL, *th = NULL;
    char err[512];
    long exact_bad = 0;
    double worst = 0;
    sh[0] = B; sh[1] = T; sh[2] = C;
    sz[0] = B; sz[1] = C;
    if (!a || !b || !z || !want || !raw || !got) {
        PRNT_CHECK(0, "host memory for T=%lu", (unsigned long)T);
        goto done;
    }
    for (q = 0; q < B; ++q)
        for (c = 0; c < C; ++c) {
            const int exact = (q + c) % 2 == 0;
            double st;
            z[q * C + c] = use_h0 ? (exact ? (double)((int)(lb_rand(&seed) * 7) - 3) : 2 * lb_rand(&seed) - 1) : 0;
            st = z[q * C + c];
            for (t = 0; t < T; ++t) {
                const size_t r = rev ? T - 1 - t : t;
                i = (q * T + r) * C + c;
                if (exact) {
                    a[i] = lb_rand(&seed) < 0.1 ? -1.0 : 1.0;
                    b[i] = (double)((int)(lb_rand(&seed) * 5) - 2);
                } else {
                    a[i] = dt == PRN_F64 ? 0.5 + 0.49 * lb_rand(&seed) : (double)(float)(0.5 + 0.49 * lb_rand(&seed));
                    b[i] = dt == PRN_F64 ? 2 * lb_rand(&seed) - 1 : (double)(float)(2 * lb_rand(&seed) - 1);
                }
                st = a[i] * st + b[i];
                want[i] = st;
            }
        }
    if (make(NULL, &ctx, err, sizeof err) != PRN_OK) {
        PRNT_CHECK(0, "context: %s", err);
        goto done;
    }
#define LB_UP(dst, src, cnt, nd, shp)                                                               \
    do {                                                                                            \
        for (i = 0; i < (cnt); ++i)                                                                 \
            if (dt == PRN_F64) ((double *)raw)[i] = (src)[i];                                       \
            else ((float *)raw)[i] = (float)(src)[i];                                               \
        PRNT_OK(ctx, prn_tensor_from_host(ctx, dt, nd, shp, raw, &(dst)));                          \
    } while (0)
    LB_UP(ta, a, n, 3, sh);
    LB_UP(tb, b, n, 3, sh);
    if (use_h0) LB_UP(tz, z, B * C, 2, sz);
#undef LB_UP
    PRNT_OK(ctx, prn_scan_diag(ctx, ta, tb, tz, rev, PRN_SCAN_AUTO, &th));
    if (th) PRNT_OK(ctx, prn_tensor_download(th, got, n));
    if (!th) goto done;
    prn_tensor_free(th);
    th = NULL;
    PRNT_OK(ctx, prn_scan_diag(ctx, ta, tb, tz, rev, PRN_SCAN_AUTO, &th));
    if (th) PRNT_OK(ctx, prn_tensor_download(th, raw, n));
    PRNT_CHECK(th && memcmp(raw, got, n * es) == 0, "T=%lu C=%lu: a second run gave other bits", (unsigned long)T,
               (unsigned long)C);
    if (g_lb_case < 64) {
        const unsigned long long hsh = lb_hash(got, n * es);
        if (!g_lb_compare) g_lb_bits[g_lb_case] = hsh;
        PRNT_CHECK(!g_lb_compare || g_lb_bits[g_lb_case] == hsh,
                   "T=%lu C=%lu: other bits with other blocks at once and another grid", (unsigned long)T,
                   (unsigned long)C);
        ++g_lb_case;
    }
    for (q = 0; q < B; ++q)
        for (t = 0; t < T; ++t)
            for (c = 0; c < C; ++c) {
                const double g = dt == PRN_F64 ? ((double *)got)[(q * T + t) * C + c] : ((float *)got)[(q * T + t) * C + c];
                const double w = want[(q * T + t) * C + c];
                if ((q + c) % 2 == 0) exact_bad += g != w;
                else if (!(fabs(g - w) <= worst)) worst = fabs(g - w);
            }
    PRNT_CHECK(exact_bad == 0 && worst <= (dt == PRN_F64 ? 1e-12 : 1e-4),
               "%s batch=%lu T=%lu C=%lu reverse=%d h0=%d: %ld exact values differ, worst other error %g",
               dt == PRN_F64 ? "f64" : "f32", (unsigned long)B, (unsigned long)T, (unsigned long)C, rev, use_h0,
               exact_bad, worst);
done:
    prn_context_free(ctx);
    free(a); free(b); free(z); free(want); free(raw); free(got);
}

/* Decays above 1 with b = 0 and h0 = 0: h stays exactly 0, though the
 * product of a tile's decays overflows (0 * inf would be NaN). */
static void lookback_zero_state(prn_dtype dt, size_t C, size_t T) {
    const size_t n = T * C, es = dt == PRN_F64 ? 8 : 4;
    size_t sh[2], i, bad = 0;
    void *raw = malloc(n * es);
    prn_context *ctx = NULL;
    prn_tensor *ta = NULL, *tb = NULL, *th = NULL;
    char err[512];
    sh[0] = T; sh[1] = C;
    if (!raw || make(NULL, &ctx, err, sizeof err) != PRN_OK) {
        PRNT_CHECK(0, "setup: %s", raw ? err : "host memory");
        free(raw);
        return;
    }
    PRNT_OK(ctx, prn_tensor_full(ctx, dt, 2, sh, dt == PRN_F64 ? 1.5 : 1.05, &ta));
    PRNT_OK(ctx, prn_tensor_full(ctx, dt, 2, sh, 0.0, &tb));
    if (ta && tb) PRNT_OK(ctx, prn_scan_diag(ctx, ta, tb, NULL, 0, PRN_SCAN_AUTO, &th));
    if (th) PRNT_OK(ctx, prn_tensor_download(th, raw, n));
    for (i = 0; th && i < n; ++i)
        bad += dt == PRN_F64 ? ((double *)raw)[i] != 0 : ((float *)raw)[i] != 0;
    PRNT_CHECK(th && bad == 0, "%s T=%lu C=%lu: %lu of %lu states are not 0", dt == PRN_F64 ? "f64" : "f32",
               (unsigned long)T, (unsigned long)C, (unsigned long)bad, (unsigned long)n);
    prn_context_free(ctx);
    free(raw);
}

/* The device buffers a case made (NULL: not made) and its context. */
static void free_bufs_and_context(prn_context *ctx, void *da, void *db, void *dh) {
    if (ctx) {
        const prn_backend *be = prn_context_backend(ctx);
        if (da) be->buf_free(ctx, da);
        if (db) be->buf_free(ctx, db);
        if (dh) be->buf_free(ctx, dh);
    }
    prn_context_free(ctx);
}

/* The look-back through the backend table with a, b and h one element
 * past a 16-byte boundary (as views into buffers may be): the kernels'
 * scalar load paths (the 128-bit ones need alignment). Exact data: decays
 * +-1, integer inputs. */
static void lookback_offset_case(prn_dtype dt, size_t B, size_t T, size_t C, int rev) {
    const size_t n = B * T * C, es = dt == PRN_F64 ? 8 : 4;
    unsigned long long seed = 0x51ed27ULL + T + C;
    double *want = (double *)malloc(n * sizeof(double));
    char *ha = (char *)malloc(n * es), *hb = (char *)malloc(n * es), *hh = (char *)malloc(n * es);
    void *da = NULL, *db = NULL, *dh = NULL;
    prn_context *ctx = NULL;
    const prn_backend *be;
    char err[512];
    size_t q, t, c, bad = 0;
    if (!want || !ha || !hb || !hh || make(NULL, &ctx, err, sizeof err) != PRN_OK) {
        PRNT_CHECK(0, "setup: %s", err);
        goto done;
    }
    for (q = 0; q < B; ++q)
        for (c = 0; c < C; ++c) {
            double st = 0;
            for (t = 0; t < T; ++t) {
                const size_t i = (q * T + (rev ? T - 1 - t : t)) * C + c;
                const double av = lb_rand(&seed) < 0.1 ? -1.0 : 1.0, bv = (double)((int)(lb_rand(&seed) * 5) - 2);
                if (dt == PRN_F64) { ((double *)ha)[i] = av; ((double *)hb)[i] = bv; }
                else { ((float *)ha)[i] = (float)av; ((float *)hb)[i] = (float)bv; }
                want[i] = st = av * st + bv;
            }
        }
    be = prn_context_backend(ctx);
    PRNT_OK(ctx, be->buf_alloc(ctx, (n + 1) * es, &da));
    PRNT_OK(ctx, be->buf_alloc(ctx, (n + 1) * es, &db));
    PRNT_OK(ctx, be->buf_alloc(ctx, (n + 1) * es, &dh));
    if (!da || !db || !dh) goto done;
    PRNT_OK(ctx, be->buf_upload(ctx, da, es, ha, n * es));
    PRNT_OK(ctx, be->buf_upload(ctx, db, es, hb, n * es));
    PRNT_OK(ctx, be->scan_diag(ctx, dt, rev, PRN_SCAN_AUTO, B, T, C, (char *)da + es, (char *)db + es, NULL,
                               (char *)dh + es));
    PRNT_OK(ctx, be->buf_download(ctx, dh, es, hh, n * es));
    for (q = 0; q < n; ++q) bad += (dt == PRN_F64 ? ((double *)hh)[q] : (double)((float *)hh)[q]) != want[q];
    PRNT_CHECK(bad == 0, "%s batch=%lu T=%lu C=%lu reverse=%d, pointers off 16 bytes: %lu values differ",
               dt == PRN_F64 ? "f64" : "f32", (unsigned long)B, (unsigned long)T, (unsigned long)C, rev,
               (unsigned long)bad);
done:
    free_bufs_and_context(ctx, da, db, dh);
    free(want); free(ha); free(hb); free(hh);
}

/* The block scans through the backend table, chunked (few sequences:
 * fold, carries, expand), at every compiled bound on the block size (k of
 * 1 to 64: registers up to 8, shared memory beyond), transposed or not,
 * reversed or not, against a host loop in double. Matrices with entries in
 * +-0.9/k keep the state bounded. */
static void block_case(prn_dtype dt, size_t B, size_t T, size_t C, size_t k, int rev, int tr) {
    const size_t n = B * T * C, na = n * k, es = dt == PRN_F64 ? 8 : 4;
    unsigned long long seed = 0xb10cULL + T * 3 + C * 5 + k;
    double *A = (double *)malloc(na * sizeof(double)), *bv = (double *)malloc(n * sizeof(double));
    double *want = (double *)malloc(n * sizeof(double)), *x = (double *)malloc(k * sizeof(double) * 2);
    char *ha = (char *)malloc(na * es), *hb = (char *)malloc(n * es), *hh = (char *)malloc(n * es);
    void *da = NULL, *db = NULL, *dh = NULL;
    prn_context *ctx = NULL;
    const prn_backend *be;
    char err[512];
    size_t q, t, jb, i, m;
    double worst = 0;
    if (!A || !bv || !want || !x || !ha || !hb || !hh || make(NULL, &ctx, err, sizeof err) != PRN_OK) {
        PRNT_CHECK(0, "setup: %s", err);
        goto done;
    }
    for (i = 0; i < na; ++i) {
        A[i] = (2 * lb_rand(&seed) - 1) * 0.9 / (double)k;
        if (dt == PRN_F32) A[i] = (double)(float)A[i];
    }
    for (i = 0; i < n; ++i) {
        bv[i] = 2 * lb_rand(&seed) - 1;
        if (dt == PRN_F32) bv[i] = (double)(float)bv[i];
    }
    for (i = 0; i < na; ++i)
        if (dt == PRN_F64) ((double *)ha)[i] = A[i];
        else ((float *)ha)[i] = (float)A[i];
    for (i = 0; i < n; ++i)
        if (dt == PRN_F64) ((double *)hb)[i] = bv[i];
        else ((float *)hb)[i] = (float)bv[i];
    for (q = 0; q < B; ++q)
        for (jb = 0; jb < C / k; ++jb) {
            const size_t j0 = jb * k;
            for (i = 0; i < k; ++i) x[i] = 0;
            for (t = 0; t < T; ++t) {
                const size_t r = rev ? T - 1 - t : t, row = q * T + r;
                const double *ar = A + row * C * k;
                for (i = 0; i < k; ++i) {
                    double acc = bv[row * C + j0 + i];
                    for (m = 0; m < k; ++m) acc += (tr ? ar[(j0 + m) * k + i] : ar[(j0 + i) * k + m]) * x[m];
                    x[k + i] = acc;
                }
                for (i = 0; i < k; ++i) want[row * C + j0 + i] = x[i] = x[k + i];
            }
        }
    be = prn_context_backend(ctx);
    PRNT_OK(ctx, be->buf_alloc(ctx, na * es, &da));
    PRNT_OK(ctx, be->buf_alloc(ctx, n * es, &db));
    PRNT_OK(ctx, be->buf_alloc(ctx, n * es, &dh));
    if (!da || !db || !dh) goto done;
    PRNT_OK(ctx, be->buf_upload(ctx, da, 0, ha, na * es));
    PRNT_OK(ctx, be->buf_upload(ctx, db, 0, hb, n * es));
    PRNT_OK(ctx, be->scan_block(ctx, dt, rev, tr, PRN_SCAN_CHUNKED, B, T, C, k, da, db, NULL, dh));
    PRNT_OK(ctx, be->buf_download(ctx, dh, 0, hh, n * es));
    for (i = 0; i < n; ++i) {
        const double g = dt == PRN_F64 ? ((double *)hh)[i] : (double)((float *)hh)[i];
        if (!(fabs(g - want[i]) <= worst)) worst = fabs(g - want[i]);
    }
    PRNT_CHECK(worst <= (dt == PRN_F64 ? 1e-12 : 2e-5), "%s scan_block batch=%lu T=%lu C=%lu k=%lu reverse=%d transpose=%d: error %g",
               dt == PRN_F64 ? "f64" : "f32", (unsigned long)B, (unsigned long)T, (unsigned long)C, (unsigned long)k, rev,
               tr, worst);
done:
    free_bufs_and_context(ctx, da, db, dh);
    free(A); free(bv); free(want); free(x); free(ha); free(hb); free(hh);
}

static void test_scan_block_sizes(void) {
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    block_case(PRN_F32, 1, 700, 3, 1, 0, 0);
    block_case(PRN_F64, 2, 400, 4, 2, 1, 1);
    block_case(PRN_F32, 1, 500, 9, 3, 0, 1);
    block_case(PRN_F64, 1, 300, 16, 8, 1, 0);
    block_case(PRN_F32, 1, 300, 32, 16, 0, 1); /* shared memory from here */
    block_case(PRN_F64, 1, 200, 26, 13, 1, 1);
    block_case(PRN_F32, 1, 200, 24, 24, 1, 0);
    block_case(PRN_F64, 1, 100, 37, 37, 0, 1);
    block_case(PRN_F32, 1, 100, 64, 64, 1, 1);
}

/* Sets or (value NULL) removes an environment variable. */
static void set_env(const char *name, const char *value) {
    if (value) setenv(name, value, 1);
    else unsetenv(name);
}

/* PARRNN_CUDA_SCAN=lookback: AUTO takes the look-back whatever the shape
 * (few sequences would otherwise go to the chunked scan). */
static void run_lookback_cases(void) {
    g_lb_case = 0;
    set_env("PARRNN_CUDA_SCAN", "lookback");
    lookback_case(PRN_F32, 2, 700001, 1, 0, 1); /* 183 tiles of 3840 steps per sequence, D = 87 */
    lookback_case(PRN_F64, 1, 600000, 1, 1, 0); /* 335 tiles, D = 187 */
    lookback_case(PRN_F32, 1, 100003, 3, 1, 1); /* 64 slices of 3 (of 4) channels: 105 tiles, up to 4 a slice */
    lookback_case(PRN_F64, 2, 30011, 5, 0, 1);  /* groups of 4 and 1: 4 chains of 67 tiles, D = 47 */
    lookback_case(PRN_F32, 3, 20011, 40, 0, 1); /* 5 groups of 8 channels: 15 chains of 42 tiles, D = 12 */
    lookback_case(PRN_F64, 1, 20000, 130, 1, 1); /* 32 groups of 4 and one of 2, D = 6 */
    lookback_case(PRN_F32, 1, 120011, 7, 1, 1); /* 251 tiles, D = 199: slices take up to 7 aggregates */
    lookback_case(PRN_F32, 2, 2000, 700, 0, 1); /* 176 chains: D = 1, each tile from the one before */
    lookback_case(PRN_F64, 1, 1000, 1001, 1, 1); /* 251 chains, D = 1, a group of 1 */
    lookback_zero_state(PRN_F32, 1, 23040);    /* decays 1.05: a tile's product overflows f32 */
    lookback_zero_state(PRN_F64, 40, 20000);
    /* the load paths: 128-bit rows of groups with a part group (12 = 8 + 4),
     * scalar rows where C is no multiple of the vector (10, 21), a span of
     * 2 channels whose tiles start off 16-byte boundaries */
    lookback_case(PRN_F32, 1, 20011, 12, 1, 1);
    lookback_case(PRN_F32, 1, 20011, 10, 0, 1);
    lookback_case(PRN_F64, 1, 9001, 21, 1, 0);
    lookback_case(PRN_F32, 1, 50021, 2, 1, 1);
    lookback_case(PRN_F64, 1, 30011, 6, 0, 1);
    lookback_case(PRN_F64, 1, 40001, 3, 1, 1); /* whole rows of 3 doubles, off 16-byte boundaries */
    lookback_offset_case(PRN_F32, 2, 30011, 3, 1); /* one group, scalar */
    lookback_offset_case(PRN_F64, 1, 40009, 1, 0);
    lookback_offset_case(PRN_F32, 1, 9001, 12, 1); /* groups, scalar */
    lookback_offset_case(PRN_F64, 1, 9001, 10, 0);
    set_env("PARRNN_CUDA_SCAN", NULL);
}

/* The two paths of the fused layers: one kernel per layer (where W_hh fits
 * on chip) and, with PARRNN_CUDA_LAYER=steps, a GEMM and a cell kernel per
 * step. Same inputs through each, forward and backward, every output
 * compared. slices > 0: a third context with PARRNN_CUDA_LAYER_SLICES =
 * slices (W_hh cut over at least that many blocks, which wait for each
 * other every step), whose outputs must have the same bits as the first's
 * (the sums' order does not depend on the launch), unless it could not
 * have the blocks resident and ran per step (bits 0: compared with the
 * tolerance only). */
static void layer_paths_case4(prn_dtype dt, int kind, int rev, size_t B, size_t T, size_t H, unsigned slices,
                              int bits, const char *layer3) {
    const size_t G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3, P = G * H;
    const size_t S = kind == PRN_RNN_LSTM ? 2 * H : H, V = (kind == PRN_RNN_LSTM ? 5 : kind == PRN_RNN_ELMAN ? 0 : 4) * H;
    const size_t es = dt == PRN_F64 ? 8 : 4;
    /* inputs: xp, w, bias, s0, g; outputs: states, saved, dxp, dq, ds0 */
    const size_t cnt[10] = {B * T * P, P * H, P, B * S, B * T * S, B * T * S, B * T * V + 1, B * T * P, B * T * P, B * S};
    unsigned long long seed = 0x1a7e5ULL + H * 7 + T + (size_t)kind;
    char *host[10], *out[3][10];
    void *dev[3][10];
    prn_context *ctx[3] = {NULL, NULL, NULL};
    char err[512], num[32];
    size_t i, q, diff = 0;
    const int sides = slices || layer3 ? 3 : 2;
    int side, bad = 0;
    double worst = 0;
    memset(host, 0, sizeof host);
    memset(out, 0, sizeof out);
    memset(dev, 0, sizeof dev);
    snprintf(num, sizeof num, "%u", slices);
    for (side = 0; side < sides; ++side) {
        set_env("PARRNN_CUDA_LAYER", side == 1 ? "steps" : side == 2 ? layer3 : NULL);
        set_env("PARRNN_CUDA_LAYER_SLICES", side == 2 && slices ? num : NULL);
        if (make(NULL, &ctx[side], err, sizeof err) != PRN_OK) {
            PRNT_CHECK(0, "context: %s", err);
            goto done;
        }
    }
    set_env("PARRNN_CUDA_LAYER", NULL);
    set_env("PARRNN_CUDA_LAYER_SLICES", NULL);
    for (q = 0; q < 10; ++q) {
        host[q] = (char *)malloc(cnt[q] * es);
        if (!host[q]) goto done;
        for (i = 0; q < 5 && i < cnt[q]; ++i) {
            const double v = (2 * lb_rand(&seed) - 1) * (q == 1 ? 1.0 / sqrt((double)H) : 1.0);
            if (dt == PRN_F64) ((double *)host[q])[i] = v;
            else ((float *)host[q])[i] = (float)v;
        }
    }
    for (side = 0; side < sides; ++side) {
        const prn_backend *be = prn_context_backend(ctx[side]);
        for (q = 0; q < 10; ++q) {
            PRNT_OK(ctx[side], be->buf_alloc(ctx[side], cnt[q] * es, &dev[side][q]));
            if (!dev[side][q]) goto done;
            if (q < 5) PRNT_OK(ctx[side], be->buf_upload(ctx[side], dev[side][q], 0, host[q], cnt[q] * es));
        }
        PRNT_OK(ctx[side], be->rnn_layer_forward(ctx[side], dt, kind, 0, rev, B, T, H, dev[side][0], dev[side][1],
                                                 dev[side][2], dev[side][3], dev[side][5], V ? dev[side][6] : NULL));
        PRNT_OK(ctx[side], be->rnn_layer_backward(ctx[side], dt, kind, 0, rev, B, T, H, dev[side][4], dev[side][1],
                                                  dev[side][3], dev[side][5], V ? dev[side][6] : NULL, dev[side][7],
                                                  dev[side][8], dev[side][9]));
        for (q = 5; q < 10; ++q) {
            out[side][q] = (char *)malloc(cnt[q] * es);
            if (!out[side][q]) goto done;
            if (q == 6 && !V) continue;
            PRNT_OK(ctx[side], be->buf_download(ctx[side], dev[side][q], 0, out[side][q], (cnt[q] - (q == 6)) * es));
        }
    }
    for (q = 5; q < 10; ++q)
        for (i = 0; i + (q == 6) < cnt[q] && (q != 6 || V); ++i) {
            const double a = dt == PRN_F64 ? ((double *)out[0][q])[i] : ((float *)out[0][q])[i];
            const double b = dt == PRN_F64 ? ((double *)out[1][q])[i] : ((float *)out[1][q])[i];
            const double d = fabs(a - b) / (1 + fabs(b));
            if (!(d <= worst)) worst = d;
            bad += a != a;
            if (sides == 3) {
                const double c = dt == PRN_F64 ? ((double *)out[2][q])[i] : ((float *)out[2][q])[i];
                const double dc = fabs(c - b) / (1 + fabs(b));
                if (!(dc <= worst)) worst = dc;
                diff += bits && memcmp(out[0][q] + i * es, out[2][q] + i * es, es) != 0;
            }
        }
    PRNT_CHECK(!diff, "%s kind=%d reverse=%d B=%lu T=%lu H=%lu: %lu values differ in bits between %u slices%s%s and the default plan",
               dt == PRN_F64 ? "f64" : "f32", kind, rev, (unsigned long)B, (unsigned long)T, (unsigned long)H,
               (unsigned long)diff, slices, layer3 ? ", PARRNN_CUDA_LAYER=" : "", layer3 ? layer3 : "");
    PRNT_CHECK(!bad && worst <= (dt == PRN_F64 ? 1e-12 : 2e-5),
               "%s kind=%d reverse=%d B=%lu T=%lu H=%lu: one kernel per layer vs per step: %d NaNs, worst %g",
               dt == PRN_F64 ? "f64" : "f32", kind, rev, (unsigned long)B, (unsigned long)T, (unsigned long)H, bad,
               worst);
done:
    set_env("PARRNN_CUDA_LAYER", NULL);
    set_env("PARRNN_CUDA_LAYER_SLICES", NULL);
    for (side = 0; side < 3; ++side) {
        for (q = 0; q < 10; ++q) {
            if (ctx[side] && dev[side][q]) prn_context_backend(ctx[side])->buf_free(ctx[side], dev[side][q]);
            free(out[side][q]);
        }
        prn_context_free(ctx[side]);
    }
    for (q = 0; q < 10; ++q) free(host[q]);
}

static void layer_paths_case3(prn_dtype dt, int kind, int rev, size_t B, size_t T, size_t H, unsigned slices,
                              int bits) {
    layer_paths_case4(dt, kind, rev, B, T, H, slices, bits, NULL);
}

static void layer_paths_case(prn_dtype dt, int kind, int rev, size_t B, size_t T, size_t H) {
    layer_paths_case3(dt, kind, rev, B, T, H, 0, 0);
}

static void test_layer_paths(void) {
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    layer_paths_case(PRN_F32, PRN_RNN_GRU, 0, 3, 20, 33);
    layer_paths_case(PRN_F64, PRN_RNN_LSTM, 1, 2, 15, 20);
    layer_paths_case(PRN_F32, PRN_RNN_ELMAN, 1, 1, 9, 70);
    layer_paths_case(PRN_F64, PRN_RNN_GRU, 1, 1, 5, 300); /* 900 rows of W_hh: threads loop */
}

/* The one-kernel layers with W_hh cut over several blocks that wait for
 * each other every step (8 blocks resident, 8 multiprocessors reported):
 * every kind, both directions, f32 and f64, one and several sequences per
 * block (the batch in registers by fours, with a remainder), uneven
 * slices, more units than threads in a block; the same bits as the default
 * plan. Then layers whose W_hh (2.9 MB f64, 0.8 MB f32) needs 13 or 4
 * blocks or more by itself (16 resident, 16 multiprocessors). With one
 * block resident (the emulator's default) the forced slices cannot run at
 * once: the backend must run the layer per step. */
static void test_layer_slices(void) {
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    set_env("PRN_CUDA_EMU_RESIDENT", "8");
    set_env("PRN_CUDA_EMU_SMS", "8");
    layer_paths_case3(PRN_F32, PRN_RNN_GRU, 0, 9, 12, 20, 3, 1);
    layer_paths_case3(PRN_F64, PRN_RNN_GRU, 1, 1, 9, 37, 4, 1);
    layer_paths_case3(PRN_F32, PRN_RNN_LSTM, 1, 5, 10, 33, 2, 1);
    layer_paths_case3(PRN_F64, PRN_RNN_LSTM, 0, 2, 7, 70, 8, 1);
    layer_paths_case3(PRN_F32, PRN_RNN_ELMAN, 1, 3, 11, 50, 5, 1);
    layer_paths_case3(PRN_F64, PRN_RNN_ELMAN, 0, 6, 6, 9, 3, 1);
    layer_paths_case3(PRN_F32, PRN_RNN_GRU, 1, 17, 5, 100, 4, 1);
    /* more units than threads in a block: the carry in global memory */
    layer_paths_case3(PRN_F32, PRN_RNN_ELMAN, 0, 33, 4, 150, 2, 1);
    layer_paths_case3(PRN_F64, PRN_RNN_LSTM, 1, 24, 3, 64, 2, 1);
    layer_paths_case3(PRN_F32, PRN_RNN_GRU, 0, 24, 3, 70, 2, 1);
    set_env("PRN_CUDA_EMU_RESIDENT", "16");
    set_env("PRN_CUDA_EMU_SMS", "16");
    layer_paths_case(PRN_F64, PRN_RNN_LSTM, 1, 1, 4, 300);
    layer_paths_case(PRN_F32, PRN_RNN_GRU, 0, 3, 3, 260);
    set_env("PRN_CUDA_EMU_SMS", NULL);
    set_env("PRN_CUDA_EMU_RESIDENT", NULL);
#ifdef PRNT_CUDA_EMU
    layer_paths_case3(PRN_F32, PRN_RNN_GRU, 0, 2, 6, 24, 3, 0);
#endif
}

/* Hidden size 1: a thread per sequence (k_lay1_*), every kind, both
 * directions, f32 and f64, T below, at and past the ring of prefetched
 * steps (8 f32, 4 f64), and B = 70: two blocks of 64 threads, several
 * resident at once; the same bits as the block kernels
 * (PARRNN_CUDA_LAYER=blocks) and the per-step path's values. Then hidden
 * 64 and 128, where the block kernels keep b_hh, the state and the next
 * x in registers: the same bits as forced slices (several blocks resident). */
static void test_layer_small(void) {
    static const int kinds[3] = {PRN_RNN_GRU, PRN_RNN_LSTM, PRN_RNN_ELMAN};
    static const size_t Ts[3] = {3, 8, 21}, Bs[3] = {1, 16, 70};
    int k, f64, rev;
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    set_env("PRN_CUDA_EMU_RESIDENT", "8");
    set_env("PRN_CUDA_EMU_SMS", "8");
    for (k = 0; k < 3; ++k)
        for (f64 = 0; f64 < 2; ++f64)
            for (rev = 0; rev < 2; ++rev)
                layer_paths_case4(f64 ? PRN_F64 : PRN_F32, kinds[k], rev, Bs[(k + rev) % 3], Ts[(k + f64 + rev) % 3], 1,
                                  0, 1, "blocks");
    layer_paths_case4(PRN_F32, PRN_RNN_GRU, 0, 70, 21, 1, 0, 1, "blocks");
    layer_paths_case4(PRN_F64, PRN_RNN_LSTM, 1, 70, 9, 1, 0, 1, "blocks");
    layer_paths_case3(PRN_F32, PRN_RNN_GRU, 0, 3, 5, 64, 2, 1);
    layer_paths_case3(PRN_F32, PRN_RNN_LSTM, 1, 2, 4, 64, 2, 1);
    layer_paths_case3(PRN_F64, PRN_RNN_ELMAN, 0, 5, 4, 64, 3, 1);
    layer_paths_case3(PRN_F32, PRN_RNN_GRU, 1, 2, 4, 128, 2, 1);
    layer_paths_case3(PRN_F64, PRN_RNN_LSTM, 0, 1, 3, 128, 4, 1);
    layer_paths_case3(PRN_F32, PRN_RNN_ELMAN, 1, 9, 4, 128, 2, 1);
    set_env("PRN_CUDA_EMU_SMS", NULL);
    set_env("PRN_CUDA_EMU_RESIDENT", NULL);
#ifdef PARRNN_WITH_CUDA
    { /* the plans: H = 1 a thread per sequence unless slices or the blocks are forced (an H200's 132 SMs, 227 KiB) */
        prn_cu_layer_plan pl;
        int bwd;
        for (bwd = 0; bwd < 2; ++bwd)
            for (k = 0; k < 3; ++k) {
                memset(&pl, 0, sizeof pl);
                PRNT_CHECK(prn_cu_rnn_layer_plan(0, kinds[k], bwd, 16, 1000000, 1, 132, 232448, 0, 0, &pl) &&
                               pl.path == 1 && pl.grid == 1,
                           "kind=%d bwd=%d H=1 B=16: a thread per sequence (path %u, grid %u)", kinds[k], bwd, pl.path,
                           pl.grid);
                PRNT_CHECK(prn_cu_rnn_layer_plan(1, kinds[k], bwd, 130, 1000, 1, 132, 232448, 0, 0, &pl) &&
                               pl.path == 1 && pl.grid == 3,
                           "kind=%d bwd=%d H=1 B=130 f64: three blocks (path %u, grid %u)", kinds[k], bwd, pl.path, pl.grid);
                PRNT_CHECK(!prn_cu_rnn_layer_plan(0, kinds[k], bwd, 16, 1000, 1, 132, 232448, 0, 1, &pl) || pl.path == 0,
                           "kind=%d bwd=%d H=1, blocks forced: a block plan", kinds[k], bwd);
                PRNT_CHECK(!prn_cu_rnn_layer_plan(0, kinds[k], bwd, 16, 1000, 64, 132, 232448, 0, 0, &pl) || pl.path == 0,
                           "kind=%d bwd=%d H=64: a block plan", kinds[k], bwd);
            }
    }
#endif
}

#ifdef PARRNN_WITH_CUDA
int prn_cu_scan_diag_lookback_pays(int f64, size_t batch, size_t T, size_t C); /* kernels_cuda/scan.cu */
#endif

/* AUTO: wherever time must be cut (batch x channels do not fill the
 * device), the look-back -- it beat or matched the chunked scan at every
 * shape of bench_scan's device grid on an H200 but one, where the chunked
 * scan runs (f32, one chain of 8-channel rows) -- and so the same
 * bits as PARRNN_CUDA_SCAN=lookback, not the chunked scan's. */
static void test_scan_auto_choice(void) {
    const size_t T = 60000, C = 8;
    size_t sh[3], i, n;
    unsigned long long seed = 77;
    float *raw, *g[3];
    prn_context *ctx = NULL, *forced = NULL;
    prn_tensor *ta = NULL, *tb = NULL, *tf[2] = {NULL, NULL}, *h[3] = {NULL, NULL, NULL};
    char err[512];
    int B, k;
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
#ifdef PARRNN_WITH_CUDA
    {
        static const size_t grid[5][3] = {{1, 100000000, 1}, {1, 12500000, 8}, {4, 1000000, 32}, {1, 1000000, 128},
                                          {16, 100000, 128}};
        int f64;
        for (f64 = 0; f64 < 2; ++f64)
            for (k = 0; k < 5; ++k) {
                /* f32 (1, 1.25e7, 8), one chain of 8-channel rows: the chunked
                 * scan, faster there on the H200 (0.42 against 0.33 of the copy) */
                int want = !(f64 == 0 && k == 1);
                PRNT_CHECK(prn_cu_scan_diag_lookback_pays(f64, grid[k][0], grid[k][1], grid[k][2]) == want,
                           "%s B=%lu T=%lu C=%lu: the %s scan chosen", f64 ? "f64" : "f32",
                           (unsigned long)grid[k][0], (unsigned long)grid[k][1], (unsigned long)grid[k][2],
                           want ? "chunked" : "look-back");
            }
        PRNT_CHECK(prn_cu_scan_diag_lookback_pays(0, 1, 2000, 8), "T=2000 C=8 (one tile): the chunked scan chosen");
        PRNT_CHECK(!prn_cu_scan_diag_lookback_pays(0, 1, (size_t)1 << 45, 1), "2^34 tiles: the look-back chosen");
    }
#endif
    for (B = 1; B <= 8; B += 7) {
        n = (size_t)B * T * C;
        sh[0] = (size_t)B; sh[1] = T; sh[2] = C;
        raw = (float *)malloc(n * sizeof(float));
        for (k = 0; k < 3; ++k) g[k] = (float *)malloc(n * sizeof(float));
        set_env("PARRNN_CUDA_SCAN", "lookback");
        if (make(NULL, &forced, err, sizeof err) != PRN_OK) PRNT_CHECK(0, "setup: %s", err);
        set_env("PARRNN_CUDA_SCAN", NULL);
        if (!raw || !g[0] || !g[1] || !g[2] || !forced || make(NULL, &ctx, err, sizeof err) != PRN_OK) {
            PRNT_CHECK(0, "setup: %s", err);
            free(raw); free(g[0]); free(g[1]); free(g[2]);
            prn_context_free(forced);
            return;
        }
        for (i = 0; i < n; ++i) raw[i] = (float)(0.5 + 0.49 * lb_rand(&seed));
        PRNT_OK(ctx, prn_tensor_from_host(ctx, PRN_F32, 3, sh, raw, &ta));
        PRNT_OK(forced, prn_tensor_from_host(forced, PRN_F32, 3, sh, raw, &tf[0]));
        for (i = 0; i < n; ++i) raw[i] = (float)(2 * lb_rand(&seed) - 1);
        PRNT_OK(ctx, prn_tensor_from_host(ctx, PRN_F32, 3, sh, raw, &tb));
        PRNT_OK(forced, prn_tensor_from_host(forced, PRN_F32, 3, sh, raw, &tf[1]));
        PRNT_OK(ctx, prn_scan_diag(ctx, ta, tb, NULL, 0, PRN_SCAN_AUTO, &h[0]));
        PRNT_OK(ctx, prn_scan_diag(ctx, ta, tb, NULL, 0, PRN_SCAN_CHUNKED, &h[1]));
        PRNT_OK(forced, prn_scan_diag(forced, tf[0], tf[1], NULL, 0, PRN_SCAN_AUTO, &h[2]));
        for (k = 0; k < 3; ++k)
            if (h[k]) PRNT_OK(prn_tensor_context(h[k]), prn_tensor_download(h[k], g[k], n));
        PRNT_CHECK(h[0] && h[2] && memcmp(g[0], g[2], n * sizeof(float)) == 0,
                   "B=%d T=%lu C=%lu: AUTO differs from the look-back's bits", B, (unsigned long)T, (unsigned long)C);
        PRNT_CHECK(h[0] && h[1] && memcmp(g[0], g[1], n * sizeof(float)) != 0,
                   "B=%d T=%lu C=%lu: AUTO gave the chunked scan's bits", B, (unsigned long)T, (unsigned long)C);
        prn_context_free(ctx);
        prn_context_free(forced);
        ctx = forced = NULL;
        ta = tb = tf[0] = tf[1] = h[0] = h[1] = h[2] = NULL;
        free(raw); free(g[0]); free(g[1]); free(g[2]);
    }
}

static void test_scan_lookback(void) {
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    run_lookback_cases();
}

static void test_device_choice(void) {
    prn_context *ctx = NULL, *sentinel = (prn_context *)&g_skip;
    char err[512];
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    PRNT_CHECK(make(NULL, &ctx, err, sizeof err) == PRN_OK, "default device: %s", err);
    prn_context_free(ctx);
    ctx = NULL;
    PRNT_CHECK(make("0", &ctx, err, sizeof err) == PRN_OK, "device 0: %s", err);
    prn_context_free(ctx);
    /* not an index: invalid argument, named in the message; no device of
     * that index: no device; *out untouched either way */
    ctx = sentinel;
    PRNT_CHECK(make("gpu-x", &ctx, err, sizeof err) == PRN_ERR_INVALID_ARGUMENT, "a name accepted");
    PRNT_CHECK(strstr(err, "gpu-x") != NULL, "message: %s", err);
    PRNT_CHECK(make("-1", &ctx, err, sizeof err) == PRN_ERR_INVALID_ARGUMENT, "-1 accepted");
    PRNT_CHECK(make("999", &ctx, err, sizeof err) == PRN_ERR_NO_DEVICE, "device 999 accepted");
    PRNT_CHECK(strstr(err, "999") != NULL, "message: %s", err);
    PRNT_CHECK(ctx == sentinel, "failed create wrote *out");
}

static void test_device_from_environment(void) {
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    prntd_device_from_environment("cuda", "PARRNN_CUDA_DEVICE", "999", "0");
}

static void test_runtime_failures(void) {
    prn_context *ctx = NULL;
    const prn_backend *be;
    char err[512];
    void *buf = NULL;
    prn_status st;
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    if (make(NULL, &ctx, err, sizeof err) != PRN_OK) { PRNT_CHECK(0, "%s", err); return; }
    be = prn_context_backend(ctx);
    /* a buffer no device has: out of memory, with the CUDA call and error */
    st = be->buf_alloc(ctx, (size_t)1 << 62, &buf);
    PRNT_CHECK(st == PRN_ERR_OUT_OF_MEMORY, "huge buffer: %s (%s)", prn_status_string(st), prn_last_error(ctx));
    PRNT_CHECK(buf == NULL, "failed buf_alloc wrote its output");
    PRNT_CHECK(strstr(prn_last_error(ctx), "buf_alloc") && strstr(prn_last_error(ctx), "cudaMalloc") &&
                   strstr(prn_last_error(ctx), "cudaErrorMemoryAllocation"),
               "message: %s", prn_last_error(ctx));
    prn_context_free(ctx);
}

static void test_two_contexts(void) {
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    prntd_two_contexts("cuda");
}

#ifdef PRNT_CUDA_EMU

static void test_no_device(void) {
    prn_context *ctx = (prn_context *)&g_skip;
    char err[512];
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    set_env("PRN_CUDA_EMU_DEVICES", "0");
    PRNT_CHECK(make(NULL, &ctx, err, sizeof err) == PRN_ERR_NO_DEVICE, "a context without a device");
    PRNT_CHECK(strstr(err, "cudaGetDeviceCount") && strstr(err, "cudaErrorNoDevice"), "message: %s", err);
    PRNT_CHECK(ctx == (prn_context *)&g_skip, "failed create wrote *out");
    set_env("PRN_CUDA_EMU_DEVICES", NULL);
}

/* The same with 64 blocks running at once on host threads, so that tiles
 * find the tiles they need still running (the wait). */
/* The block scans' expand (groups of k threads meeting barriers) and the
 * one-kernel layers with 8 blocks running at once. */
static void test_blocks_resident(void) {
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    set_env("PRN_CUDA_EMU_RESIDENT", "8");
    block_case(PRN_F32, 3, 300, 9, 3, 1, 0);
    block_case(PRN_F64, 2, 200, 32, 16, 0, 1);
    layer_paths_case(PRN_F32, PRN_RNN_GRU, 1, 9, 12, 20);
    layer_paths_case(PRN_F64, PRN_RNN_LSTM, 0, 10, 8, 12);
    set_env("PRN_CUDA_EMU_RESIDENT", NULL);
}


static void test_scan_lookback_resident(void) {
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    set_env("PRN_CUDA_EMU_RESIDENT", "64");
    set_env("PRN_CUDA_EMU_SMS", "11"); /* the grid: 66 blocks (f32), 44 (f64) */
    g_lb_compare = 1;
    run_lookback_cases();
    g_lb_compare = 0;
    set_env("PRN_CUDA_EMU_SMS", NULL);
    set_env("PRN_CUDA_EMU_RESIDENT", NULL);
}

/* ---- the sweep of failing device allocations ---- */
#define WT 300 /* scan steps: long enough for the chunked scan and its scratch */
#define RB 2   /* the LSTM's batch, steps, inputs and units */
#define RT 5
#define RI 3
#define RH 4
typedef struct wl_run {
    const char *label;
    long fail_at;        /* 0: no failure */
    int completed;       /* the pass ran to its end */
    long failed_calls;   /* calls that returned an error */
    float h[WT * 2], gw[64], gb[WT * 2];
    float y[RB * RT * RH], y_ng[RB * RT * RH], gr[4 * RH * RH]; /* the LSTM: outputs, without grad, dW_hh */
} wl_run;

static union { double d; void *p; } g_sentinel;
#define SENT ((prn_tensor *)(void *)&g_sentinel)

static void check_oom(wl_run *r, prn_context *ctx, const char *call, prn_status st, size_t live0) {
    const char *msg = prn_last_error(ctx);
    r->failed_calls++;
    PRNT_CHECK(st == PRN_ERR_OUT_OF_MEMORY, "%s n=%ld: %s: %s (%s)", r->label, r->fail_at, call,
               prn_status_string(st), msg);
    PRNT_CHECK(strstr(msg, "cudaMalloc") && strstr(msg, "cudaErrorMemoryAllocation"), "%s n=%ld: %s: message %s",
               r->label, r->fail_at, call, msg);
    PRNT_CHECK(prn_live_tensors(ctx) == live0, "%s n=%ld: failed %s changed the live tensors", r->label, r->fail_at,
               call);
}

/* Runs EXPR (a status) storing a tensor in OUT (NULL: none); after a
 * failure checks it and tries once more; a second failure ends the pass. */
#define STEP(OUT, EXPR)                                                                                   \
    do {                                                                                                  \
        int att_;                                                                                         \
        for (att_ = 0;; ++att_) {                                                                         \
            size_t live_ = prn_live_tensors(ctx);                                                         \
            prn_status st_;                                                                               \
            prn_tensor **o_ = (OUT);                                                                      \
            if (o_) *o_ = SENT;                                                                           \
            st_ = (EXPR);                                                                                 \
            if (st_ == PRN_OK) break;                                                                     \
            check_oom(r, ctx, #EXPR, st_, live_);                                                         \
            if (o_) {                                                                                     \
                PRNT_CHECK(*o_ == SENT, "%s n=%ld: failed %s wrote its output", r->label, r->fail_at, #EXPR); \
                *o_ = NULL;                                                                               \
            }                                                                                             \
            if (att_ == 1) goto done;                                                                     \
        }                                                                                                 \
    } while (0)

/* A matmul, tanh, a diagonal scan, an LSTM layer (the fused layers: with
 * and, under no_grad, without saved values), sums, backward, downloads. */
static void workload(wl_run *r) {
    prn_context *ctx = NULL;
    char err[512];
    prn_tensor *x = NULL, *w = NULL, *y = NULL, *z = NULL, *a = NULL, *b = NULL, *h = NULL, *s1 = NULL, *s2 = NULL,
               *loss = NULL, *rx = NULL, *ry = NULL, *ry_ng = NULL, *s3 = NULL, *l2 = NULL;
    prn_rnn *rnn = NULL;
    prn_rnn_config rc;
    size_t sx[2] = {4, 8}, sw[2] = {8, 8}, sa[3] = {1, WT, 2}, srx[3] = {RB, RT, RI};
    static float vx[32], vw[64], va[WT * 2], vb[WT * 2], vrx[RB * RT * RI];
    int i;
    memset(&rc, 0, sizeof rc);
    rc.kind = PRN_RNN_LSTM;
    rc.input_size = RI;
    rc.hidden_size = RH;
    for (i = 0; i < RB * RT * RI; ++i) vrx[i] = (float)sin(0.9 * i);
    for (i = 0; i < 32; ++i) vx[i] = (float)sin(0.3 * i);
    for (i = 0; i < 64; ++i) vw[i] = (float)cos(0.7 * i) * 0.5f;
    for (i = 0; i < WT * 2; ++i) {
        va[i] = 0.5f + 0.4f * (float)sin(0.11 * i);
        vb[i] = (float)cos(0.05 * i);
    }
    r->completed = 0;
    if (make(NULL, &ctx, err, sizeof err) != PRN_OK) {
        PRNT_CHECK(0, "%s n=%ld: context: %s", r->label, r->fail_at, err);
        return;
    }
    STEP(&x, prn_tensor_from_host(ctx, PRN_F32, 2, sx, vx, &x));
    STEP(&w, prn_tensor_from_host(ctx, PRN_F32, 2, sw, vw, &w));
    STEP(NULL, prn_tensor_set_requires_grad(w, 1));
    STEP(&y, prn_matmul(ctx, x, w, &y));
    STEP(&z, prn_tanh(ctx, y, &z));
    STEP(&a, prn_tensor_from_host(ctx, PRN_F32, 3, sa, va, &a));
    STEP(&b, prn_tensor_from_host(ctx, PRN_F32, 3, sa, vb, &b));
    STEP(NULL, prn_tensor_set_requires_grad(b, 1));
    STEP(&h, prn_scan_diag(ctx, a, b, NULL, 0, PRN_SCAN_AUTO, &h));
    STEP(&s1, prn_sum(ctx, z, PRN_ALL_AXES, 0, &s1));
    STEP(&s2, prn_sum(ctx, h, PRN_ALL_AXES, 0, &s2));
    STEP(NULL, prn_rnn_create(ctx, &rc, &rnn));
    STEP(&rx, prn_tensor_from_host(ctx, PRN_F32, 3, srx, vrx, &rx));
    STEP(&ry, prn_rnn_forward(ctx, rnn, rx, NULL, &ry, NULL));
    prn_no_grad_begin(ctx);
    STEP(&ry_ng, prn_rnn_forward(ctx, rnn, rx, NULL, &ry_ng, NULL));
    prn_no_grad_end(ctx);
    STEP(&s3, prn_sum(ctx, ry, PRN_ALL_AXES, 0, &s3));
    STEP(&loss, prn_add(ctx, s1, s2, &loss));
    STEP(&l2, prn_add(ctx, loss, s3, &l2));
    STEP(NULL, prn_backward(ctx, l2));
    STEP(NULL, prn_tensor_download(h, r->h, WT * 2));
    STEP(NULL, prn_tensor_download(prn_tensor_grad(w), r->gw, 64));
    STEP(NULL, prn_tensor_download(prn_tensor_grad(b), r->gb, WT * 2));
    STEP(NULL, prn_tensor_download(ry, r->y, RB * RT * RH));
    STEP(NULL, prn_tensor_download(ry_ng, r->y_ng, RB * RT * RH));
    STEP(NULL, prn_tensor_download(prn_tensor_grad(prn_rnn_param(rnn, "weight_hh_l0")), r->gr, 4 * RH * RH));
    r->completed = 1;
done:
    prn_tensor_free(rx);
    prn_tensor_free(ry);
    prn_tensor_free(ry_ng);
    prn_tensor_free(s3);
    prn_tensor_free(l2);
    prn_rnn_free(rnn);
    prn_tensor_free(x);
    prn_tensor_free(w);
    prn_tensor_free(y);
    prn_tensor_free(z);
    prn_tensor_free(a);
    prn_tensor_free(b);
    prn_tensor_free(h);
    prn_tensor_free(s1);
    prn_tensor_free(s2);
    prn_tensor_free(loss);
    prn_context_free(ctx);
}

/* pools: the context allocates from its memory pool (else cudaMalloc);
 * from: every allocation from the n-th on fails (else the n-th only). */
static void sweep(int pools, int from) {
    wl_run base, r;
    long n, N, c0, before = prnt_cur_failed;
    size_t live0 = prn_cuda_emu_live_allocations();
    char label[64], num[32];
    snprintf(label, sizeof label, "%s, %s", pools ? "pool" : "cudaMalloc", from ? "from n on" : "n-th only");
    set_env("PRN_CUDA_EMU_NO_POOLS", pools ? NULL : "1");
    set_env("PRN_CUDA_EMU_FAIL_MODE", from ? "from" : NULL);
    memset(&base, 0, sizeof base);
    base.label = label;
    c0 = prn_cuda_emu_allocation_count();
    workload(&base);
    N = prn_cuda_emu_allocation_count() - c0;
    PRNT_CHECK(base.completed && base.failed_calls == 0 && N > 5, "%s: the pass without failures (%ld allocations)",
               label, N);
    PRNT_CHECK(!memcmp(base.y, base.y_ng, sizeof base.y), "%s: the LSTM's outputs differ without grad", label);
    for (n = 1; n <= N + 1 && base.completed; ++n) {
        memset(&r, 0, sizeof r);
        r.label = label;
        r.fail_at = n;
        snprintf(num, sizeof num, "%ld", prn_cuda_emu_allocation_count() + n);
        set_env("PRN_CUDA_EMU_FAIL_ALLOC", num);
        workload(&r);
        set_env("PRN_CUDA_EMU_FAIL_ALLOC", NULL);
        PRNT_CHECK(prn_cuda_emu_live_allocations() == live0, "%s n=%ld: %lu device allocations outlived the context",
                   label, n, (unsigned long)(prn_cuda_emu_live_allocations() - live0));
        if (!from || n > N) {
            /* a pool trims itself and tries again: the one failure never shows */
            PRNT_CHECK(r.completed, "%s n=%ld: the pass did not complete", label, n);
            PRNT_CHECK(r.failed_calls == (!pools && n <= N), "%s n=%ld: %ld failed calls", label, n, r.failed_calls);
            PRNT_CHECK(!r.completed || (!memcmp(r.h, base.h, sizeof r.h) && !memcmp(r.gw, base.gw, sizeof r.gw) &&
                                        !memcmp(r.gb, base.gb, sizeof r.gb) && !memcmp(r.y, base.y, sizeof r.y) &&
                                        !memcmp(r.y_ng, base.y_ng, sizeof r.y_ng) &&
                                        !memcmp(r.gr, base.gr, sizeof r.gr)),
                       "%s n=%ld: results differ from the pass without failures", label, n);
        } else {
            PRNT_CHECK(!r.completed && r.failed_calls > 0, "%s n=%ld: the failures went unreported", label, n);
        }
        if (prnt_cur_failed - before > 20) break;
    }
    printf("    %s: %ld device allocations, each failed in turn\n", label, N);
    set_env("PRN_CUDA_EMU_NO_POOLS", NULL);
    set_env("PRN_CUDA_EMU_FAIL_MODE", NULL);
}

static void test_device_memory_failures(void) {
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    sweep(1, 0);
    sweep(1, 1);
    sweep(0, 0);
    sweep(0, 1);
}
#endif /* PRNT_CUDA_EMU */

int main(void) {
#ifndef PARRNN_WITH_CUDA
    snprintf(g_skip, sizeof g_skip, "the CUDA backend is not built in (PARRNN_WITH_CUDA)");
#else
    if (prntd_probe("cuda", "PARRNN_CUDA_DEVICE", g_skip, sizeof g_skip)) return 1;
#endif
    PRNT_RUN(test_device_choice);
    PRNT_RUN(test_device_from_environment);
    PRNT_RUN(test_runtime_failures);
    PRNT_RUN(test_two_contexts);
    PRNT_RUN(test_scan_lookback);
    PRNT_RUN(test_scan_auto_choice);
    PRNT_RUN(test_scan_block_sizes);
    PRNT_RUN(test_layer_paths);
    PRNT_RUN(test_layer_slices);
    PRNT_RUN(test_layer_small);
#ifdef PRNT_CUDA_EMU
    PRNT_RUN(test_scan_lookback_resident);
    PRNT_RUN(test_blocks_resident);
    PRNT_RUN(test_no_device);
    PRNT_RUN(test_device_memory_failures);
#endif
    return prnt_summary();
}
