/* test_opencl.c - what is particular to the OpenCL backend: choosing the
 * device (prn_config.device, PARRNN_OPENCL_DEVICE, "P:D" or part of a
 * name), the statuses and messages of failures (a failed program build
 * carries the compiler's log), and contexts that share
 * nothing. Its primitives are checked by test_conformance
 * and the whole suite runs on it with PARRNN_BACKEND=opencl.
 * Skipped when the backend is not built in or no OpenCL device exists. */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include "parrnn.h"
#include "prn_test.h"

#include <stdlib.h>
#include <string.h>

#include "prn_test_device.h"

static char g_skip[512]; /* why the backend cannot run here ("" when it can) */

static prn_status make(const char *device, prn_context **ctx, char *err, size_t n) {
    return prntd_make("opencl", device, ctx, err, n);
}

static void test_device_choice(void) {
    prn_context *ctx = NULL, *sentinel = (prn_context *)&g_skip;
    char err[512];
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    /* the default and explicit indices */
    PRNT_CHECK(make(NULL, &ctx, err, sizeof err) == PRN_OK, "default device: %s", err);
    prn_context_free(ctx);
    ctx = NULL;
    PRNT_CHECK(make("0:0", &ctx, err, sizeof err) == PRN_OK, "device 0:0: %s", err);
    prn_context_free(ctx);
    /* a selector that names nothing: PRN_ERR_NO_DEVICE, the selector in the
     * message, *out untouched, no fallback to another device */
    ctx = sentinel;
    PRNT_CHECK(make("no-such-device-xyz", &ctx, err, sizeof err) == PRN_ERR_NO_DEVICE, "unknown name accepted");
    PRNT_CHECK(strstr(err, "no-such-device-xyz") != NULL, "message: %s", err);
    PRNT_CHECK(ctx == sentinel, "failed create wrote *out");
    PRNT_CHECK(make("99:0", &ctx, err, sizeof err) == PRN_ERR_NO_DEVICE, "platform 99 accepted");
    PRNT_CHECK(make("0:999", &ctx, err, sizeof err) == PRN_ERR_NO_DEVICE, "device 999 accepted");
    PRNT_CHECK(ctx == sentinel, "failed create wrote *out");
}

static void test_device_from_environment(void) {
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    prntd_device_from_environment("opencl", "PARRNN_OPENCL_DEVICE", "no-such-device-xyz", "0:0");
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
    /* a buffer no device has: the OpenCL call and its status in the message */
    st = be->buf_alloc(ctx, (size_t)1 << 62, &buf);
    PRNT_CHECK(st == PRN_ERR_BACKEND || st == PRN_ERR_OUT_OF_MEMORY, "huge buffer: %s", prn_status_string(st));
    PRNT_CHECK(buf == NULL, "failed buf_alloc wrote its output");
    PRNT_CHECK(strstr(prn_last_error(ctx), "clCreateBuffer") != NULL && strstr(prn_last_error(ctx), "CL_") != NULL,
               "message: %s", prn_last_error(ctx));
    prn_context_free(ctx);
}

/* A kernel file that does not compile: the failure names clBuildProgram,
 * the file, and carries the compiler's log (here: the unknown type that
 * PARRNN_OPENCL_OPTIONS substitutes for the element type). */
static void test_build_failure_log(void) {
    prn_context *ctx = NULL;
    char err[512];
    prn_tensor *x = NULL, *y = NULL;
    size_t shape[1] = {4};
    static const float v[4] = {1, 2, 3, 4};
    const char *old = getenv("PARRNN_OPENCL_OPTIONS");
    char saved[256];
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    snprintf(saved, sizeof saved, "%s", old ? old : "");
    setenv("PARRNN_OPENCL_OPTIONS", "-DREAL=prn_no_such_type", 1);
    if (make(NULL, &ctx, err, sizeof err) != PRN_OK) { PRNT_CHECK(0, "%s", err); goto done; }
    PRNT_OK(ctx, prn_tensor_from_host(ctx, PRN_F32, 1, shape, v, &x));
    PRNT_STATUS(ctx, prn_tanh(ctx, x, &y), PRN_ERR_BACKEND);
    PRNT_CHECK(y == NULL, "failed op wrote its output");
    PRNT_CHECK(strstr(prn_last_error(ctx), "prn_tanh") && strstr(prn_last_error(ctx), "clBuildProgram") &&
               strstr(prn_last_error(ctx), "elementwise.cl") && strstr(prn_last_error(ctx), "prn_no_such_type"),
               "message: %s", prn_last_error(ctx));
    prn_context_free(ctx);
done:
    if (old) setenv("PARRNN_OPENCL_OPTIONS", saved, 1);
    else unsetenv("PARRNN_OPENCL_OPTIONS");
}

/* Two contexts share nothing; each builds its own programs. */
static void test_two_contexts(void) {
    if (g_skip[0]) { PRNT_SKIP("%s", g_skip); return; }
    prntd_two_contexts("opencl");
}

int main(void) {
#ifndef PARRNN_WITH_OPENCL
    snprintf(g_skip, sizeof g_skip, "the OpenCL backend is not built in (PARRNN_WITH_OPENCL)");
#else
    if (prntd_probe("opencl", "PARRNN_OPENCL_DEVICE", g_skip, sizeof g_skip)) return 1;
#endif
    PRNT_RUN(test_device_choice);
    PRNT_RUN(test_device_from_environment);
    PRNT_RUN(test_runtime_failures);
    PRNT_RUN(test_build_failure_log);
    PRNT_RUN(test_two_contexts);
    return prnt_summary();
}
