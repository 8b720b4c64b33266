/* test_cuda.c - what is particular to the CUDA backend: choosing the
 * device (prn_config.device, PARRNN_CUDA_DEVICE), the statuses and
 * messages of failures, and contexts that share nothing. Under the CUDA
 * emulator (tests/cuda_emu, built with PRNT_CUDA_EMU), which can make the
 * driver report no device and make device allocations fail, also: the
 * no-device status, and a sweep that fails each device allocation of a
 * forward and backward pass in turn (ops, a chunked scan, an LSTM on the
 * fused layers; pools and cudaMalloc; the one allocation, or every one
 * from it on). Each failure must come back as
 * PRN_ERR_OUT_OF_MEMORY naming the CUDA call, leave the output untouched
 * and the live tensors as they were; a retry must give results bitwise
 * equal to the run without failures; no device memory may outlive the
 * context. Its primitives are checked by test_conformance, and the whole
 * suite runs on it with PARRNN_BACKEND=cuda. Skipped when the backend is
 * not built in or no device exists. */
#define _POSIX_C_SOURCE 200112L /* setenv */
#define PARRNN_IMPLEMENTATION
#include "parrnn.h"
#include "prn_test.h"

#include <stdlib.h>
#include <string.h>

#include "prn_test_device.h"

#ifdef PRNT_CUDA_EMU /* the emulator's own counters (tests/cuda_emu/cuda_runtime_api.h) */
size_t prn_cuda_emu_live_allocations(void);
long prn_cuda_emu_allocation_count(void);
#endif

static char g_skip[512]; /* why the backend cannot run here ("" when it can) */

static prn_status make(const char *device, prn_context **ctx, char *err, size_t n) {
    return prntd_make("cuda", device, ctx, err, n);
}

static void test_device_choice(void) {
    prn_context *ctx = NULL, *sentinel = (prn_context *)&g_skip;
    char err[512];
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    PRNT_CHECK(make(NULL, &ctx, err, sizeof err) == PRN_OK, "default device: %s", err);
    prn_context_destroy(ctx);
    ctx = NULL;
    PRNT_CHECK(make("0", &ctx, err, sizeof err) == PRN_OK, "device 0: %s", err);
    prn_context_destroy(ctx);
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
    prn_context_destroy(ctx);
}

static void test_two_contexts(void) {
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    prntd_two_contexts("cuda");
}

#ifdef PRNT_CUDA_EMU
/* Sets or (value NULL) removes an environment variable. */
static void set_env(const char *name, const char *value) {
    if (value) setenv(name, value, 1);
    else unsetenv(name);
}

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
    prn_context_destroy(ctx);
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
#ifdef PRNT_CUDA_EMU
    PRNT_RUN(test_no_device);
    PRNT_RUN(test_device_memory_failures);
#endif
    return prnt_summary();
}
