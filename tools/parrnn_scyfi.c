/* parrnn-scyfi - the fixed points and cycles of a piecewise-linear RNN.
 *
 * Reads a model file (the format of prn_pwl_parse: `kind`, `M`, `A`, `W`,
 * `h`, ... see parrnn.h, "Piecewise-linear models and SCYFI"), runs SCYFI
 * (prn_scyfi) for the orders 1 .. K and prints every cycle found: its
 * order, its type (stable / unstable / saddle, from the eigenvalues of the
 * Jacobian of k steps), its largest |eigenvalue| and its points.
 *
 * Usage:  parrnn-scyfi [options] MODEL_FILE
 *   --kmax K         orders 1 .. K (default 1; K <= 100000)
 *   --outer N        fruitless chains that end an order (0: by order, the
 *                    library's defaults)
 *   --inner N        steps of one chain (0: by order)
 *   --seed S         seed of the search (default 0)
 *   --backend NAME   e.g. "reference" or "opencl"; by default the
 *                    PARRNN_BACKEND environment variable, else "reference"
 *   --threads N      at most N threads per call (default: all)
 *   --max-bytes N    read at most N bytes of the model file (default 1 GiB,
 *                    the library's prn_config.max_file_bytes); the model
 *                    may come from a pipe (/dev/stdin)
 *   --exhaustive     enumerate every pattern sequence instead of searching
 *                    (the complete set of cycles; refused when too many)
 *   --json           one JSON document on stdout, nothing else:
 *                    {"kmax": K, "counts": [n1, ..., nK], "cycles": [
 *                    {"k": k, "type": "stable"|"saddle"|"unstable",
 *                     "stable": true|false, "max_abs_eigenvalue": v,
 *                     "points": [[...], ...], "eigenvalues": [[re, im], ...]},
 *                    ...]} (a cycle per line; "cycles": [] when none)
 *   --help           every option with its default, on stdout
 * Options take their value as the next argument or after '=' (--kmax=3).
 *
 * Exit status: 0 on success; 1 when the backend cannot be used or the
 * search fails; 2 on bad usage or a model file that cannot be read or
 * parsed (the library's message names the line and the field).
 *
 * Build:  make build/parrnn-scyfi
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c99 */

#include "parrnn.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *g_prog = "parrnn-scyfi";
#define PRN_STR_(x) #x
#define PRN_STR(x) PRN_STR_(x)
#define PRN_SCYFI_MAX_KMAX_STR PRN_STR(PRN_SCYFI_MAX_KMAX)

static void print_usage(FILE *f) {
    fprintf(f,
            "usage: %s [--kmax K] [--outer N] [--inner N] [--seed S] [--backend NAME] [--threads N]\n"
            "       %*s [--max-bytes N] [--exhaustive] [--json] MODEL_FILE\n",
            g_prog, (int)strlen(g_prog), "");
}

/* --help: the usage, then every option with its default. */
static void print_help(FILE *f) {
    print_usage(f);
    fprintf(f,
            "\nFinds the fixed points and cycles of a piecewise-linear RNN (SCYFI) in the\n"
            "model file (prn_pwl_parse's format) for the orders 1 .. K.\n\n"
            "options (a value follows as the next argument or after '='):\n"
            "  --kmax K        orders 1 .. K                               (default 1)\n"
            "  --outer N       fruitless chains that end an order; 0: the  (default 0)\n"
            "                  library's choice by order\n"
            "  --inner N       steps of one chain; 0: by order             (default 0)\n"
            "  --seed S        seed of the search                          (default 0)\n"
            "  --backend NAME  e.g. reference, opencl                      (default: $PARRNN_BACKEND,\n"
            "                                                               else reference)\n"
            "  --threads N     at most N threads per call                  (default: all)\n"
            "  --max-bytes N   read at most N bytes of the model file      (default 1073741824, 1 GiB)\n"
            "                  (it may be a pipe: /dev/stdin)\n"
            "  --exhaustive    enumerate every pattern sequence instead    (default: off, search)\n"
            "                  of searching (refused when too many)\n"
            "  --json          one JSON document on stdout: {\"kmax\", \"counts\",  (default: off, a table)\n"
            "                  \"cycles\": [{\"k\", \"type\" (stable|saddle|unstable), \"stable\",\n"
            "                  \"max_abs_eigenvalue\", \"points\", \"eigenvalues\"}, ...]}; \"cycles\": []\n"
            "                  when none is found\n"
            "  --help, -h      this text\n\n"
            "exit status: 0 success (also when no cycle is found); 1 the backend or the search\n"
            "failed; 2 bad usage or a model file that cannot be read or parsed\n");
}

static int usage_error(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "%s: ", g_prog);
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    print_usage(stderr);
    return 2;
}

/* A decimal integer in [lo, hi], the whole string; 0 on success. */
static int parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    long v;
    if (!s || !*s) return 1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) return 1;
    *out = v;
    return 0;
}

/* An unsigned 64-bit decimal integer (no sign), the whole string. */
static int parse_u64(const char *s, uint64_t *out) {
    uint64_t v = 0;
    const char *p = s;
    if (!s || !*s) return 1;
    for (; *p; ++p) {
        unsigned d;
        if (*p < '0' || *p > '9') return 1;
        d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return 1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *kind_name(prn_pwl_kind k) {
    switch (k) {
    case PRN_PWL_PLRNN: return "plrnn";
    case PRN_PWL_SHPLRNN: return "shplrnn";
    case PRN_PWL_CLIPPED_SHPLRNN: return "clipped_shplrnn";
    case PRN_PWL_ALRNN: return "alrnn";
    }
    return "?";
}

static const char *type_name(prn_cycle_type t) {
    switch (t) {
    case PRN_CYCLE_STABLE: return "stable";
    case PRN_CYCLE_UNSTABLE: return "unstable";
    case PRN_CYCLE_SADDLE: return "saddle";
    }
    return "?";
}

/* A JSON number: %.17g, null for NaN and Inf (which JSON lacks). */
static void json_num(double v) {
    if (v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308) fputs("null", stdout);
    else printf("%.17g", v);
}

static void print_json(const prn_scyfi_result *r, size_t kmax) {
    size_t c, i, j, k, M = r->M;
    printf("{\"kmax\": %lu, \"counts\": [", (unsigned long)kmax);
    for (k = 1; k <= kmax; ++k) printf("%s%lu", k > 1 ? ", " : "", (unsigned long)r->count[k]);
    printf("], \"cycles\": [%s", r->num_cycles ? "\n" : "");
    for (c = 0; c < r->num_cycles; ++c) {
        const prn_scyfi_cycle *cy = &r->cycles[c];
        double mx = 0;
        for (j = 0; j < M; ++j) {
            double a = hypot(cy->eig_re[j], cy->eig_im[j]);
            if (!(a <= mx)) mx = a;
        }
        printf("{\"k\": %lu, \"type\": \"%s\", \"stable\": %s, \"max_abs_eigenvalue\": ", (unsigned long)cy->k, type_name(cy->type),
               cy->type == PRN_CYCLE_STABLE ? "true" : "false");
        json_num(mx);
        fputs(", \"points\": [", stdout);
        for (i = 0; i < cy->k; ++i) {
            printf(i ? ", [" : "[");
            for (j = 0; j < M; ++j) {
                if (j) fputs(", ", stdout);
                json_num(cy->points[i * M + j]);
            }
            putchar(']');
        }
        fputs("], \"eigenvalues\": [", stdout);
        for (j = 0; j < M; ++j) {
            fputs(j ? ", [" : "[", stdout);
            json_num(cy->eig_re[j]);
            fputs(", ", stdout);
            json_num(cy->eig_im[j]);
            putchar(']');
        }
        printf("]}%s\n", c + 1 < r->num_cycles ? "," : "");
    }
    printf("]}\n");
}

static void print_point(const double *z, size_t M) {
    size_t j;
    putchar('(');
    for (j = 0; j < M; ++j) printf("%s%.6g", j ? ", " : "", z[j]);
    putchar(')');
}

#define SHOW_POINTS 4 /* points of a cycle printed before "..." */

static void print_table(const prn_scyfi_result *r, size_t kmax) {
    size_t k, c, i, j, M = r->M, idx = 0;
    for (k = 1; k <= kmax; ++k) {
        size_t n = r->count[k];
        if (n == 0) { /* a run of orders without cycles: one line */
            size_t e = k;
            while (e < kmax && r->count[e + 1] == 0) ++e;
            if (e == k) printf("\norder %lu: no cycles\n", (unsigned long)k);
            else printf("\norders %lu-%lu: no cycles\n", (unsigned long)k, (unsigned long)e);
            k = e;
            continue;
        }
        printf("\norder %lu: %lu cycle%s\n", (unsigned long)k, (unsigned long)n, n == 1 ? "" : "s");
        printf("  %5s %4s  %-8s  %12s  %s\n", "#", "k", "type", "max |eig|", "points");
        for (c = 0; c < r->num_cycles; ++c) {
            const prn_scyfi_cycle *cy = &r->cycles[c];
            double mx = 0;
            if (cy->k != k) continue;
            for (j = 0; j < M; ++j) {
                double a = hypot(cy->eig_re[j], cy->eig_im[j]);
                if (!(a <= mx)) mx = a;
            }
            printf("  %5lu %4lu  %-8s  %12.6g  z1 = ", (unsigned long)idx, (unsigned long)cy->k, type_name(cy->type), mx);
            print_point(cy->points, M);
            putchar('\n');
            for (i = 1; i < cy->k && i < SHOW_POINTS; ++i) {
                printf("  %5s %4s  %-8s  %12s  z%lu = ", "", "", "", "", (unsigned long)(i + 1));
                print_point(cy->points + i * M, M);
                putchar('\n');
            }
            if (cy->k > SHOW_POINTS)
                printf("  %5s %4s  %-8s  %12s  ... (%lu more points)\n", "", "", "", "", (unsigned long)(cy->k - SHOW_POINTS));
            ++idx;
        }
    }
}

/* The value of option argv[*i] (--name VALUE or --name=VALUE); NULL when
 * argv[*i] is not that option. *missing is set when the value is absent. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, int *missing) {
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n] != 0) return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return a; /* non-NULL: the option matched */
    }
    return argv[++*i];
}

int main(int argc, char **argv) {
    prn_config cfg;
    prn_scyfi_options opt;
    prn_context *ctx = NULL;
    prn_pwl_model *model = NULL;
    prn_scyfi_result *res = NULL;
    const char *path = NULL, *v;
    char err[512];
    int i, json = 0, exit_code = 1;
    size_t k;
    long kmax = 1, outer = 0, inner = 0, threads = 0;
    uint64_t seed = 0;
    double t0, t1;
    prn_status st;

    if (argc > 0 && argv[0] && *argv[0]) {
        const char *s = strrchr(argv[0], '/');
        g_prog = s ? s + 1 : argv[0];
    }
    memset(&cfg, 0, sizeof cfg);
    memset(&opt, 0, sizeof opt);
    for (i = 1; i < argc; ++i) {
        const char *a = argv[i];
        int missing = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            print_help(stdout);
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--exhaustive") == 0) {
            opt.exhaustive = 1;
        } else if ((v = opt_value(argc, argv, &i, "--kmax", &missing)) != NULL) {
            if (missing) return usage_error("option %s needs a value%s", a, "");
            if (parse_long(v, 1, PRN_SCYFI_MAX_KMAX, &kmax))
                return usage_error("option --kmax: '%s' is not an integer in 1 .. %s", v, PRN_SCYFI_MAX_KMAX_STR);
        } else if ((v = opt_value(argc, argv, &i, "--outer", &missing)) != NULL) {
            if (missing) return usage_error("option %s needs a value%s", a, "");
            if (parse_long(v, 0, INT_MAX, &outer))
                return usage_error("option --outer: '%s' is not a non-negative integer (0: by order)%s", v, "");
        } else if ((v = opt_value(argc, argv, &i, "--inner", &missing)) != NULL) {
            if (missing) return usage_error("option %s needs a value%s", a, "");
            if (parse_long(v, 0, INT_MAX, &inner))
                return usage_error("option --inner: '%s' is not a non-negative integer (0: by order)%s", v, "");
        } else if ((v = opt_value(argc, argv, &i, "--seed", &missing)) != NULL) {
            if (missing) return usage_error("option %s needs a value%s", a, "");
            if (parse_u64(v, &seed))
                return usage_error("option --seed: '%s' is not an unsigned 64-bit integer%s", v, "");
        } else if ((v = opt_value(argc, argv, &i, "--max-bytes", &missing)) != NULL) {
            uint64_t mb = 0;
            if (missing) return usage_error("option %s needs a value%s", a, "");
            if (parse_u64(v, &mb) || mb == 0 || mb > (uint64_t)SIZE_MAX)
                return usage_error("option --max-bytes: '%s' is not a positive byte count%s", v, "");
            cfg.max_file_bytes = (size_t)mb;
        } else if ((v = opt_value(argc, argv, &i, "--threads", &missing)) != NULL) {
            if (missing) return usage_error("option %s needs a value%s", a, "");
            if (parse_long(v, 1, INT_MAX, &threads))
                return usage_error("option --threads: '%s' is not a positive integer%s", v, "");
        } else if ((v = opt_value(argc, argv, &i, "--backend", &missing)) != NULL) {
            if (missing) return usage_error("option %s needs a value%s", a, "");
            if (!*v) return usage_error("option --backend: empty name%s%s", "", "");
            cfg.backend = v;
        } else if (strcmp(a, "--") == 0) { /* the rest are file names */
            for (++i; i < argc; ++i) {
                if (path) return usage_error("more than one model file ('%s' and '%s')", path, argv[i]);
                path = argv[i];
            }
        } else if (a[0] == '-' && a[1] != 0) {
            return usage_error("unknown option '%s'%s", a, "");
        } else if (path) {
            return usage_error("more than one model file ('%s' and '%s')", path, a);
        } else {
            path = a;
        }
    }
    if (!path) return usage_error("no model file given%s%s", "", "");

    cfg.num_threads = (int)threads;
    cfg.seed = seed;
    if (prn_context_create(&cfg, &ctx, err, sizeof err) != PRN_OK) {
        fprintf(stderr, "%s: %s\n", g_prog, err);
        return 1;
    }

    if (prn_pwl_load(ctx, path, &model) != PRN_OK) {
        fprintf(stderr, "%s: %s\n", g_prog, prn_last_error(ctx));
        exit_code = 2;
        goto done;
    }

    opt.kmax = (size_t)kmax;
    opt.outer = (size_t)outer;
    opt.inner = (size_t)inner;
    opt.seed = seed;
    if (!json) {
        printf("parrnn %s, backend '%s', %d thread(s)\n", PARRNN_VERSION_STRING, prn_context_backend_name(ctx),
               prn_context_num_threads(ctx));
        printf("model %s: %s, M = %lu", path, kind_name(model->kind), (unsigned long)model->M);
        if (model->kind == PRN_PWL_SHPLRNN || model->kind == PRN_PWL_CLIPPED_SHPLRNN) printf(", H = %lu", (unsigned long)model->H);
        if (model->kind == PRN_PWL_ALRNN) printf(", P = %lu", (unsigned long)model->P);
        printf(", A %s\n", model->full_A ? "full" : "diagonal");
        printf("SCYFI: orders 1..%lu, %s", (unsigned long)opt.kmax, opt.exhaustive ? "exhaustive enumeration" : "search");
        if (!opt.exhaustive) {
            if (outer) printf(", outer %ld", outer); else printf(", outer by order");
            if (inner) printf(", inner %ld", inner); else printf(", inner by order");
            printf(", seed %llu", (unsigned long long)seed);
        }
        printf("\n");
    }
    t0 = seconds_now();
    st = prn_scyfi(ctx, model, &opt, &res);
    t1 = seconds_now();
    if (st != PRN_OK) {
        fprintf(stderr, "%s: %s\n", g_prog, prn_last_error(ctx));
        exit_code = 1;
        goto done;
    }

    if (json) {
        print_json(res, opt.kmax);
    } else {
        print_table(res, opt.kmax);
        int empty = 0, first = 1;
        printf("\nsummary: %lu cycle%s", (unsigned long)res->num_cycles, res->num_cycles == 1 ? "" : "s");
        for (k = 1; k <= opt.kmax; ++k) {
            if (res->count[k] == 0) { ++empty; continue; }
            printf("%sk=%lu: %lu", first ? " (" : ", ", (unsigned long)k, (unsigned long)res->count[k]);
            first = 0;
        }
        if (!first) printf(")");
        if (empty) printf("; %d of the %lu orders without cycles", empty, (unsigned long)opt.kmax);
        printf("; %.0f candidate solves (%.0f singular); %.3f s\n", (double)res->solves, (double)res->singular, t1 - t0);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: writing the output failed\n", g_prog);
        exit_code = 1;
        goto done;
    }
    exit_code = 0;

done:
    prn_scyfi_free(ctx, res);
    prn_pwl_free(ctx, model);
    prn_context_free(ctx);
    return exit_code;
}
