/* What the tests of the device backends (test_opencl.c, test_cuda.c) share:
 * making a context on a named backend and device, the device from the
 * environment, the check that two contexts share nothing, and the start of
 * main that decides whether the backend can run here. Include after
 * parrnn.h and prn_test.h (and setenv's declaration: _POSIX_C_SOURCE). */
#ifndef PRN_TEST_DEVICE_H
#define PRN_TEST_DEVICE_H

/* a program without the backend built in calls only some of these */
#if defined(__GNUC__) || defined(__clang__)
#define PRNTD_FN static __attribute__((unused))
#else
#define PRNTD_FN static
#endif

PRNTD_FN prn_status prntd_make(const char *backend, const char *device, prn_context **ctx, char *err, size_t n) {
    prn_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = backend;
    cfg.device = device;
    return prn_context_create(&cfg, ctx, err, n);
}

/* The device from the environment variable env: a selector that names no
 * device (bad) makes creation fail with PRN_ERR_NO_DEVICE; a device in the
 * config (good) wins over the variable. The variable is restored. */
PRNTD_FN void prntd_device_from_environment(const char *backend, const char *env, const char *bad, const char *good) {
    prn_context *ctx = NULL;
    char err[512], saved[256];
    const char *old = getenv(env);
    snprintf(saved, sizeof saved, "%s", old ? old : "");
    setenv(env, bad, 1);
    PRNT_CHECK(prntd_make(backend, NULL, &ctx, err, sizeof err) == PRN_ERR_NO_DEVICE, "%s was not read", env);
    PRNT_CHECK(prntd_make(backend, good, &ctx, err, sizeof err) == PRN_OK, "config over environment: %s", err);
    prn_context_free(ctx);
    if (old) setenv(env, saved, 1);
    else unsetenv(env);
}

/* Two contexts at once on the device share nothing: one's destruction
 * leaves the other working, with the values of the same draw. */
PRNTD_FN void prntd_two_contexts(const char *backend) {
    prn_context *c1 = NULL, *c2 = NULL;
    char err[512];
    prn_tensor *x1 = NULL, *x2 = NULL, *y1 = NULL, *y2 = NULL;
    size_t shape[1] = {1000};
    static float a[1000], b[1000];
    if (prntd_make(backend, NULL, &c1, err, sizeof err) != PRN_OK ||
        prntd_make(backend, NULL, &c2, err, sizeof err) != PRN_OK) {
        PRNT_CHECK(0, "%s", err);
        prn_context_free(c1);
        return;
    }
    PRNT_OK(c1, prn_tensor_uniform(c1, PRN_F32, 1, shape, -1, 1, &x1));
    PRNT_OK(c2, prn_tensor_uniform(c2, PRN_F32, 1, shape, -1, 1, &x2));
    PRNT_OK(c1, prn_tanh(c1, x1, &y1));
    prn_context_free(c1);
    PRNT_OK(c2, prn_tanh(c2, x2, &y2));
    PRNT_OK(c2, prn_tensor_download(y2, a, 1000));
    PRNT_OK(c2, prn_tensor_download(x2, b, 1000));
    PRNT_CHECK(fabsf(a[7] - tanhf(b[7])) < 1e-6f, "tanh after the other context went: %g vs %g", a[7], tanhf(b[7]));
    prn_context_free(c2);
}

/* Can a context run on backend (device from the environment variable
 * env)? Leaves skip empty when it can, the reason when there is no device;
 * returns 1 after printing a failed summary when creation fails otherwise. */
PRNTD_FN int prntd_probe(const char *backend, const char *env, char *skip, size_t n) {
    prn_context *ctx = NULL;
    char err[512];
    prn_status st = prntd_make(backend, getenv(env), &ctx, err, sizeof err);
    skip[0] = 0;
    if (st == PRN_ERR_NO_DEVICE) {
        snprintf(skip, n, "%s", err);
    } else if (st != PRN_OK) {
        printf("%s context: %s (%s)\n", backend, err, prn_status_string(st));
        printf("summary passed=0 failed=1 skipped=0\n");
        return 1;
    } else {
        printf("backend: %s\n", backend);
        prn_context_free(ctx);
    }
    return 0;
}

#endif /* PRN_TEST_DEVICE_H */
