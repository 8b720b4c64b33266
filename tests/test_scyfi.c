/* SCYFI: fixed points and cycles of piecewise-linear RNNs.
 *  - closed forms: a 2-D PLRNN's analytic fixed point, a border-collision
 *    2-cycle with its saddle fixed point;
 *  - exhaustive enumeration against the randomised search on random small
 *    models of every kind: every cycle found, none spurious, no duplicates;
 *  - every reported cycle is one: k steps of the model return to its
 *    first point, fewer do not;
 *  - the same cycles for any batch width and thread count;
 *  - the reference implementation's own cases and trained models from
 *    ../shared/data/scyfi (PARRNN_SCYFI_DATA overrides; skipped when absent);
 *  - bad input and allocation failures. */
#include "parrnn.h"
#include "tests/prn_test.h"
#include <limits.h>

static prn_context *g_ctx;
static int g_quick, g_ref;

/* --- helpers ---------------------------------------------------------------------------- */
static double urand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xFFFFFF) / 16777216.0;
}
static double nrand(unsigned *s) {
    double u = urand(s) + 1e-12, v = urand(s);
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* A model and the storage of its arrays. */
typedef struct tmodel { prn_pwl_model m; double buf[4096]; } tmodel;

static void random_model(tmodel *t, prn_pwl_kind kind, int M, int H, int P, int full_A, unsigned seed, double wscale) {
    double *p = t->buf;
    int i, n;
    unsigned s = seed * 7919u + 13u;
    memset(&t->m, 0, sizeof t->m);
    t->m.kind = kind; t->m.M = (size_t)M; t->m.H = (size_t)H; t->m.P = (size_t)P; t->m.full_A = full_A;
    t->m.A = p;
    n = full_A ? M * M : M;
    for (i = 0; i < n; ++i) p[i] = full_A ? (i % (M + 1) == 0 ? 0.2 + 0.6 * urand(&s) : 0.2 * nrand(&s)) : 0.2 + 0.7 * urand(&s);
    p += n;
    if (kind == PRN_PWL_PLRNN || kind == PRN_PWL_ALRNN) {
        t->m.W = p; for (i = 0; i < M * M; ++i) p[i] = wscale * nrand(&s); p += M * M;
        t->m.h = p; for (i = 0; i < M; ++i) p[i] = nrand(&s); p += M;
    } else {
        t->m.W1 = p; for (i = 0; i < M * H; ++i) p[i] = wscale * nrand(&s); p += M * H;
        t->m.W2 = p; for (i = 0; i < H * M; ++i) p[i] = nrand(&s); p += H * M;
        t->m.h1 = p; for (i = 0; i < M; ++i) p[i] = nrand(&s); p += M;
        t->m.h2 = p; for (i = 0; i < H; ++i) p[i] = nrand(&s); p += H;
    }
}

static double dist_inf(const double *a, const double *b, int n) {
    double d = 0;
    int i;
    for (i = 0; i < n; ++i) d = fabs(a[i] - b[i]) > d ? fabs(a[i] - b[i]) : d;
    return d;
}
static double norm_inf(const double *a, int n) {
    double d = 0;
    int i;
    for (i = 0; i < n; ++i) d = fabs(a[i]) > d ? fabs(a[i]) : d;
    return d;
}

/* Every cycle is one: the model maps point l to point l + 1, point k - 1
 * back to point 0, and no earlier point equals point 0; no two cycles of
 * an order share a point; counts add up. Returns the failures. */
static int check_cycles(const prn_pwl_model *m, const prn_scyfi_result *r, const char *what) {
    int c, l, bad = 0, M = (int)m->M, total = 0, k;
    double z[64], z2[64];
    for (k = 1; k <= (int)r->kmax; ++k) total += (int)r->count[k];
    PRNT_CHECK(total == (int)r->num_cycles, "%s: counts add to %d, num_cycles %d", what, total, (int)r->num_cycles);
    for (c = 0; c < (int)r->num_cycles; ++c) {
        const prn_scyfi_cycle *cy = &r->cycles[c];
        double lo = HUGE_VAL, hi = 0;
        int d;
        memcpy(z, cy->points, (size_t)M * sizeof(double));
        for (l = 1; l <= (int)cy->k; ++l) {
            const double *want = cy->points + (size_t)(l % (int)cy->k) * M;
            double tol = 1e-7 * (1 + norm_inf(want, M));
            prn_pwl_step(g_ctx, m, z, z2);
            if (dist_inf(z2, want, M) > tol) {
                PRNT_CHECK(0, "%s: cycle %d (k=%d): step %d goes to a point %g away from the next point", what, c, (int)cy->k,
                           l, dist_inf(z2, want, M));
                ++bad;
                break;
            }
            if (l < (int)cy->k && dist_inf(z2, cy->points, M) <= 1e-7 * (1 + norm_inf(cy->points, M))) {
                PRNT_CHECK(0, "%s: cycle %d (k=%d) returns after %d steps", what, c, (int)cy->k, l);
                ++bad;
            }
            memcpy(z, want, (size_t)M * sizeof(double));
        }
        for (d = 0; d < M; ++d) {
            double a = hypot(cy->eig_re[d], cy->eig_im[d]);
            lo = a < lo ? a : lo;
            hi = a > hi ? a : hi;
            if (d > 0) PRNT_CHECK(a <= hypot(cy->eig_re[d - 1], cy->eig_im[d - 1]) + 1e-12, "%s: eigenvalues not sorted", what);
        }
        PRNT_CHECK(cy->type == (hi < 1 ? PRN_CYCLE_STABLE : lo > 1 ? PRN_CYCLE_UNSTABLE : PRN_CYCLE_SADDLE),
                   "%s: cycle %d type %d, eigenvalue moduli %g .. %g", what, c, (int)cy->type, lo, hi);
        for (d = 0; d < c; ++d) {
            const prn_scyfi_cycle *o = &r->cycles[d];
            int p, q;
            if (o->k != cy->k) continue;
            for (p = 0; p < (int)o->k; ++p)
                for (q = 0; q < (int)cy->k; ++q)
                    if (dist_inf(o->points + (size_t)p * M, cy->points + (size_t)q * M, M) <= 1e-6 * (1 + norm_inf(cy->points, M))) {
                        PRNT_CHECK(0, "%s: cycles %d and %d (k=%d) are the same", what, d, c, (int)cy->k);
                        ++bad;
                        p = o->k;
                        break;
                    }
        }
    }
    return bad;
}

/* Is a cycle (any rotation) of r, of order k, within tol of points? */
static int has_cycle(const prn_scyfi_result *r, int M, int k, const double *points, double tol) {
    int c, rot;
    for (c = 0; c < (int)r->num_cycles; ++c) {
        const prn_scyfi_cycle *cy = &r->cycles[c];
        if ((int)cy->k != k) continue;
        for (rot = 0; rot < k; ++rot) {
            int l, ok = 1;
            for (l = 0; l < k && ok; ++l)
                ok = dist_inf(cy->points + (size_t)((l + rot) % k) * M, points + (size_t)l * M, M) <= tol * (1 + norm_inf(points + (size_t)l * M, M));
            if (ok) return 1;
        }
    }
    return 0;
}

static prn_scyfi_result *run(const prn_pwl_model *m, int kmax, int outer, int inner, int exhaustive, uint64_t seed) {
    prn_scyfi_options o;
    prn_scyfi_result *r = NULL;
    memset(&o, 0, sizeof o);
    o.kmax = kmax; o.outer = outer; o.inner = inner; o.exhaustive = exhaustive; o.seed = seed;
    PRNT_OK(g_ctx, prn_scyfi(g_ctx, m, &o, &r));
    return r;
}

/* --- closed forms --------------------------------------------------------------------------- */
/* z' = A z + W relu(z) + h, A = diag(0.5, 0.3), W = [0 0.2; -0.4 0], h = (1, -1):
 * only the region z1 > 0 >= z2 has its fixed point inside, (2, -18/7);
 * J = A + W diag(1, 0) = [0.5 0; -0.4 0.3], eigenvalues 0.5 and 0.3. */
static void test_fixed_point_closed_form(void) {
    double A[2] = {0.5, 0.3}, W[4] = {0, 0.2, -0.4, 0}, h[2] = {1, -1}, want[2] = {2, -18.0 / 7.0};
    prn_pwl_model m;
    int ex;
    memset(&m, 0, sizeof m);
    m.kind = PRN_PWL_PLRNN; m.M = 2; m.A = A; m.W = W; m.h = h;
    for (ex = 0; ex < 2; ++ex) {
        prn_scyfi_result *r = run(&m, 1, 0, 0, ex, 0);
        if (!r) return;
        PRNT_CHECK((int)r->num_cycles == 1 && (int)r->count[1] == 1, "exhaustive=%d: %d cycles", ex, (int)r->num_cycles);
        if ((int)r->num_cycles == 1) {
            PRNT_CHECK(dist_inf(r->cycles[0].points, want, 2) < 1e-13, "exhaustive=%d: fixed point (%.17g, %.17g)", ex,
                       r->cycles[0].points[0], r->cycles[0].points[1]);
            PRNT_CHECK(fabs(r->cycles[0].eig_re[0] - 0.5) < 1e-13 && fabs(r->cycles[0].eig_re[1] - 0.3) < 1e-13 &&
                       r->cycles[0].eig_im[0] == 0 && r->cycles[0].eig_im[1] == 0,
                       "eigenvalues %g%+gi, %g%+gi", r->cycles[0].eig_re[0], r->cycles[0].eig_im[0], r->cycles[0].eig_re[1],
                       r->cycles[0].eig_im[1]);
            PRNT_CHECK(r->cycles[0].type == PRN_CYCLE_STABLE, "type %d", (int)r->cycles[0].type);
        }
        check_cycles(&m, r, "closed form");
        prn_scyfi_free(g_ctx, r);
    }
}

/* A border-collision map in z1 (slopes 0.5 left of 0, -1.5 right of it,
 * offset 1), z2' = 0.5 z2 - 1 beside it. Fixed point (0.4, -2): a saddle
 * (eigenvalues -1.5, 0.5). 2-cycle (-2/7, -2) -> (6/7, -2): stable
 * (multipliers -0.75, 0.25). No other cycle up to order 4. */
static void test_border_collision_2_cycle(void) {
    double A[2] = {0.5, 0.5}, W[4] = {-2, 0, 0, 0}, h[2] = {1, -1};
    double fp[2] = {0.4, -2}, cyc[4] = {-2.0 / 7.0, -2, 6.0 / 7.0, -2};
    prn_pwl_model m;
    int ex;
    memset(&m, 0, sizeof m);
    m.kind = PRN_PWL_PLRNN; m.M = 2; m.A = A; m.W = W; m.h = h;
    for (ex = 0; ex < 2; ++ex) {
        prn_scyfi_result *r = run(&m, 4, 0, 0, ex, 5);
        int c;
        if (!r) return;
        PRNT_CHECK((int)r->count[1] == 1 && (int)r->count[2] == 1 && (int)r->count[3] == 0 && (int)r->count[4] == 0,
                   "exhaustive=%d: counts %d %d %d %d", ex, (int)r->count[1], (int)r->count[2], (int)r->count[3], (int)r->count[4]);
        PRNT_CHECK(has_cycle(r, 2, 1, fp, 1e-13), "exhaustive=%d: no fixed point at (0.4, -2)", ex);
        PRNT_CHECK(has_cycle(r, 2, 2, cyc, 1e-13), "exhaustive=%d: no 2-cycle at (-2/7, -2), (6/7, -2)", ex);
        for (c = 0; c < (int)r->num_cycles; ++c) {
            const prn_scyfi_cycle *cy = &r->cycles[c];
            if ((int)cy->k == 1) {
                PRNT_CHECK(cy->type == PRN_CYCLE_SADDLE && fabs(cy->eig_re[0] + 1.5) < 1e-13 && fabs(cy->eig_re[1] - 0.5) < 1e-13,
                           "fixed point: type %d, eigenvalues %g %g", (int)cy->type, cy->eig_re[0], cy->eig_re[1]);
            }
            if ((int)cy->k == 2) {
                PRNT_CHECK(cy->type == PRN_CYCLE_STABLE && fabs(cy->eig_re[0] + 0.75) < 1e-13 && fabs(cy->eig_re[1] - 0.25) < 1e-13,
                           "2-cycle: type %d, eigenvalues %g %g", (int)cy->type, cy->eig_re[0], cy->eig_re[1]);
            }
        }
        check_cycles(&m, r, "border collision");
        prn_scyfi_free(g_ctx, r);
    }
}

/* --- exhaustive against randomised ------------------------------------------------------------ */
static void compare_search(const prn_pwl_model *m, int kmax, const char *what, int *total) {
    prn_scyfi_result *ex = run(m, kmax, 0, 0, 1, 0), *rs = run(m, kmax, 200, 100, 0, 11);
    int c;
    if (ex && rs) {
        char w[96];
        snprintf(w, sizeof w, "%s exhaustive", what);
        check_cycles(m, ex, w);
        snprintf(w, sizeof w, "%s random", what);
        check_cycles(m, rs, w);
        for (c = 0; c < (int)ex->num_cycles; ++c)
            PRNT_CHECK(has_cycle(rs, (int)m->M, (int)ex->cycles[c].k, ex->cycles[c].points, 1e-8),
                       "%s: the search missed exhaustive cycle %d (k=%d)", what, c, (int)ex->cycles[c].k);
        for (c = 0; c < (int)rs->num_cycles; ++c)
            PRNT_CHECK(has_cycle(ex, (int)m->M, (int)rs->cycles[c].k, rs->cycles[c].points, 1e-8),
                       "%s: search cycle %d (k=%d) is not in the exhaustive set", what, c, (int)rs->cycles[c].k);
        PRNT_CHECK((int)ex->num_cycles == (int)rs->num_cycles, "%s: exhaustive %d cycles, search %d", what, (int)ex->num_cycles,
                   (int)rs->num_cycles);
        *total += (int)ex->num_cycles;
    }
    prn_scyfi_free(g_ctx, ex);
    prn_scyfi_free(g_ctx, rs);
}

static void test_exhaustive_vs_search(void) {
    tmodel t;
    int s, total = 0, nmod = g_quick || !g_ref ? 2 : 6;
    char what[64];
    for (s = 0; s < nmod; ++s) {
        random_model(&t, PRN_PWL_PLRNN, 3, 0, 0, s % 2, (unsigned)s, 1.2);
        snprintf(what, sizeof what, "plrnn M=3 seed %d", s);
        compare_search(&t.m, 3, what, &total);
        random_model(&t, PRN_PWL_ALRNN, 4, 0, 2, 0, (unsigned)s + 100, 1.2);
        snprintf(what, sizeof what, "alrnn M=4 P=2 seed %d", s);
        compare_search(&t.m, 3, what, &total);
        random_model(&t, PRN_PWL_SHPLRNN, 2, 4, 0, s % 2, (unsigned)s + 200, 1.0);
        snprintf(what, sizeof what, "shplrnn M=2 H=4 seed %d", s);
        compare_search(&t.m, 3, what, &total);
        random_model(&t, PRN_PWL_CLIPPED_SHPLRNN, 2, 3, 0, 0, (unsigned)s + 300, 1.5);
        snprintf(what, sizeof what, "clipped M=2 H=3 seed %d", s);
        compare_search(&t.m, 2, what, &total);
    }
    printf("    %d cycles in the exhaustive sets\n", total);
    PRNT_CHECK(total >= nmod * 2, "only %d cycles over all models: the comparison says little", total);
}

/* --- determinism ------------------------------------------------------------------------------- */
static void test_same_for_any_batch_and_threads(void) {
    tmodel t;
    prn_scyfi_options o;
    prn_scyfi_result *r[3] = {NULL, NULL, NULL};
    prn_context *c1 = NULL;
    prn_config cfg;
    int i, c;
    random_model(&t, PRN_PWL_SHPLRNN, 3, 6, 0, 0, 42, 1.0);
    memset(&o, 0, sizeof o);
    o.kmax = 3; o.seed = 9;
    PRNT_OK(g_ctx, prn_scyfi(g_ctx, &t.m, &o, &r[0]));
    o.batch = 1;
    PRNT_OK(g_ctx, prn_scyfi(g_ctx, &t.m, &o, &r[1]));
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = prn_context_backend_name(g_ctx);
    cfg.num_threads = 1;
    o.batch = 37;
    if (prn_context_create(&cfg, &c1, NULL, 0) == PRN_OK) PRNT_OK(c1, prn_scyfi(c1, &t.m, &o, &r[2]));
    for (i = 1; i < 3; ++i) {
        if (!r[0] || !r[i]) continue;
        PRNT_CHECK((int)r[i]->num_cycles == (int)r[0]->num_cycles, "run %d: %d cycles (%g solves), want %d (%g)",
                   i, (int)r[i]->num_cycles, (double)r[i]->solves, (int)r[0]->num_cycles, (double)r[0]->solves);
        for (c = 0; c < (int)r[0]->num_cycles && c < (int)r[i]->num_cycles; ++c)
            PRNT_CHECK((int)r[i]->cycles[c].k == (int)r[0]->cycles[c].k &&
                       !memcmp(r[i]->cycles[c].points, r[0]->cycles[c].points, (size_t)r[0]->cycles[c].k * 3 * sizeof(double)),
                       "run %d: cycle %d differs", i, c);
    }
    PRNT_CHECK(r[0] && (int)r[0]->num_cycles > 0, "no cycles: the comparison says little");
    for (i = 0; i < 3; ++i) prn_scyfi_free(i == 2 ? c1 : g_ctx, r[i]);
    prn_context_free(c1);
}

/* Backends other than the reference form the k-step products with their
 * GEMM; on the CPU (host_products) the cycles are the same up to rounding. */
static void test_host_and_device_products(void) {
    tmodel t;
    prn_scyfi_options o;
    prn_scyfi_result *a = NULL, *b = NULL;
    int c;
    unsigned seed;
    memset(&o, 0, sizeof o);
    o.kmax = 4; o.seed = 3; o.outer = 30; o.inner = 60;
    for (seed = 0; seed < 40; ++seed) { /* a model with a few cycles */
        random_model(&t, PRN_PWL_PLRNN, 4, 0, 0, 1, seed, 1.3);
        o.host_products = 1;
        prn_scyfi_free(g_ctx, b);
        b = NULL;
        PRNT_OK(g_ctx, prn_scyfi(g_ctx, &t.m, &o, &b));
        if (!b || (int)b->num_cycles >= 3) break;
    }
    o.host_products = 0;
    PRNT_OK(g_ctx, prn_scyfi(g_ctx, &t.m, &o, &a));
    if (a && b) {
        PRNT_CHECK((int)a->num_cycles == (int)b->num_cycles, "%d cycles, %d with host products", (int)a->num_cycles, (int)b->num_cycles);
        for (c = 0; c < (int)a->num_cycles; ++c)
            PRNT_CHECK(has_cycle(b, 4, (int)a->cycles[c].k, a->cycles[c].points, 1e-9), "cycle %d (k=%d) not found with host products",
                       c, (int)a->cycles[c].k);
        PRNT_CHECK((int)a->num_cycles > 1, "%d cycles: the comparison says little", (int)a->num_cycles);
        check_cycles(&t.m, a, "device products");
    }
    prn_scyfi_free(g_ctx, a);
    prn_scyfi_free(g_ctx, b);
}

/* --- the reference implementation's cases ------------------------------------------------------- */
static const char *data_dir(void) {
    const char *d = getenv("PARRNN_SCYFI_DATA");
    return d && *d ? d : "../shared/data/scyfi";
}

/* A trajectory of 10^4 steps from a random start: its last two points. */
static void trajectory_end(const prn_pwl_model *m, unsigned seed, double *last2) {
    double z[64], z2[64];
    int t, i, M = (int)m->M;
    for (i = 0; i < M; ++i) z[i] = nrand(&seed);
    for (t = 0; t < 10000; ++t) {
        prn_pwl_step(g_ctx, m, z, z2);
        memcpy(z, z2, (size_t)M * sizeof(double));
        if (t == 9998) memcpy(last2, z, (size_t)M * sizeof(double));
    }
    memcpy(last2 + M, z, (size_t)M * sizeof(double));
}

static int rounds_to(double x, double want, int digits) {
    double s = pow(10, digits);
    return fabs(floor(x * s + 0.5) - floor(want * s + 0.5)) < 0.5;
}

/* Some trajectory ends on (one of the last two points) a cycle of order k. */
static int trajectory_meets(const prn_pwl_model *m, const prn_scyfi_result *r, int k) {
    double last2[128];
    unsigned s;
    int c, p, q, i, M = (int)m->M;
    for (s = 1; s <= 20; ++s) {
        trajectory_end(m, s, last2);
        for (c = 0; c < (int)r->num_cycles; ++c) {
            if ((int)r->cycles[c].k != k) continue;
            for (p = 0; p < k; ++p)
                for (q = 0; q < 2; ++q) {
                    for (i = 0; i < M && rounds_to(r->cycles[c].points[p * M + i], last2[q * M + i], 3); ++i) {}
                    if (i == M) return 1;
                }
        }
    }
    return 0;
}

/* One assertion of the reference's tests, as cases.json writes it. */
static void check_assertion(const char *name, const prn_pwl_model *m, const prn_scyfi_result *r, const char *t) {
    int k, n, a, b, stable = 0, c;
    double x, y;
    char op[3];
    if (sscanf(t, "length(FPs[%d][1]) == %d", &k, &n) == 2 && strstr(t, "][1])")) {
        PRNT_CHECK(k <= (int)r->kmax && (int)r->count[k] >= 1, "%s: %s: no cycle of order %d", name, t, k);
    } else if (sscanf(t, "length(FPs[%d]) %2s %d", &k, op, &n) == 3) {
        int got = k <= (int)r->kmax ? (int)r->count[k] : -1;
        if (!strcmp(op, "==")) PRNT_CHECK(got == n, "%s: %s: %d cycles of order %d", name, t, got, k);
        else if (!strcmp(op, ">")) PRNT_CHECK(got > n, "%s: %s: %d cycles of order %d", name, t, got, k);
        else PRNT_CHECK(0, "%s: unknown comparison in '%s'", name, t);
    } else if (sscanf(t, "round.(FPs[1][1][1],digits=2) == [%lf, %lf]", &x, &y) == 2) {
        int found = 0;
        for (c = 0; c < (int)r->num_cycles && !found; ++c)
            found = (int)r->cycles[c].k == 1 && (int)m->M == 2 && rounds_to(r->cycles[c].points[0], x, 2) &&
                    rounds_to(r->cycles[c].points[1], y, 2);
        PRNT_CHECK(found, "%s: %s: no such fixed point", name, t);
    } else if (strstr(t, "round.(FPs[1][1][1],digits=3)==round.(traj[:,end],digits=3)")) {
        PRNT_CHECK(trajectory_meets(m, r, 1), "%s: %s: no trajectory ends on a fixed point found", name, t);
    } else if (strstr(t, "round.(FPs[2][1][1][1],digits=3)") && strstr(t, "traj[:,end-1:end]")) {
        PRNT_CHECK(trajectory_meets(m, r, 2), "%s: %s: no trajectory ends on a 2-cycle found", name, t);
    } else if (sscanf(t, "exactly %d fixed points: %d stable, %d unstable", &n, &a, &b) == 3 ||
               (sscanf(t, "exactly %d fixed point, stable", &n) == 1 && (a = 1, b = 0, 1))) {
        for (c = 0; c < (int)r->num_cycles; ++c) stable += (int)r->cycles[c].k == 1 && r->cycles[c].type == PRN_CYCLE_STABLE;
        PRNT_CHECK((int)r->count[1] == n && stable == a, "%s: %s: %d fixed points, %d stable", name, t, (int)r->count[1], stable);
    } else {
        PRNT_CHECK(0, "%s: assertion '%s' not understood", name, t);
    }
}

/* Reads cases.json line by line (it has one key per line). */
static void test_reference_cases(void) {
    char path[1024], line[1024], name[256] = "", model[256] = "", tests[8][256];
    FILE *fp;
    int kmax = 1, outer = 0, inner = 0, nt = 0, in_tests = 0, ncases = 0;
    snprintf(path, sizeof path, "%s/cases.json", data_dir());
    fp = fopen(path, "r");
    if (!fp) {
        PRNT_SKIP("%s is absent (the SCYFI reference cases live in ../shared/data/scyfi; PARRNN_SCYFI_DATA points elsewhere)",
                  path);
        return;
    }
    while (fgets(line, sizeof line, fp)) {
        char *p = line, *q;
        while (*p == ' ') ++p;
        if (in_tests) {
            if (*p == ']') { in_tests = 0; continue; }
            if (*p == '"' && nt < 8) {
                char *o = tests[nt];
                for (++p; *p && *p != '"' && o < tests[nt] + 255; ++p) {
                    if (*p == '\\' && p[1] == 't') { ++p; continue; }
                    *o++ = *p;
                }
                *o = 0;
                ++nt;
            }
            continue;
        }
        if (sscanf(p, "\"kmax\": %d", &kmax) == 1 || sscanf(p, "\"outer\": %d", &outer) == 1 ||
            sscanf(p, "\"inner\": %d", &inner) == 1)
            continue;
        if (!strncmp(p, "\"model\": \"", 10)) {
            q = strchr(p + 10, '"');
            if (q && q - (p + 10) < 255) { memcpy(model, p + 10, (size_t)(q - (p + 10))); model[q - (p + 10)] = 0; }
            continue;
        }
        if (!strncmp(p, "\"tests\": [", 10)) { in_tests = 1; nt = 0; continue; }
        if (*p == '"' && strstr(p, "{")) {
            q = strchr(p + 1, '"');
            if (q && q - (p + 1) < 255) { memcpy(name, p + 1, (size_t)(q - (p + 1))); name[q - (p + 1)] = 0; }
            model[0] = 0; kmax = 1; outer = inner = nt = 0;
            continue;
        }
        if (*p == '}' && model[0]) {
            prn_pwl_model *m = NULL;
            prn_scyfi_result *r;
            int i;
            snprintf(path, sizeof path, "%s/%s", data_dir(), model);
            PRNT_OK(g_ctx, prn_pwl_load(g_ctx, path, &m));
            if (!m) continue;
            if ((!g_ref || g_quick) && kmax > 20) { /* long orders: reference backend, full runs */
                prn_pwl_free(g_ctx, m);
                model[0] = 0;
                continue;
            }
            r = run(m, kmax, outer, inner, 0, getenv("PRNT_SCYFI_SEED") ? strtoull(getenv("PRNT_SCYFI_SEED"), NULL, 10) : 0);
            if (r) {
                for (i = 0; i < nt; ++i) check_assertion(name, m, r, tests[i]);
                check_cycles(m, r, name);
                prn_scyfi_free(g_ctx, r);
            }
            prn_pwl_free(g_ctx, m);
            model[0] = 0;
            ++ncases;
        }
    }
    fclose(fp);
    printf("    %d cases\n", ncases);
    PRNT_CHECK(ncases >= 10, "only %d cases read from cases.json", ncases);
}

/* The trained models: every fixed point is in the exhaustive set over the
 * 2^H patterns, which the search must equal. */
static void test_trained_exhaustive(void) {
    static const char *names[] = {"trained_multistable_trial1", "trained_singlestable_trial8"};
    char path[1024];
    int i;
    for (i = 0; i < 2; ++i) {
        prn_pwl_model *m = NULL;
        int total = 0;
        snprintf(path, sizeof path, "%s/%s.txt", data_dir(), names[i]);
        if (prn_pwl_load(g_ctx, path, &m) != PRN_OK) {
            PRNT_SKIP("%s: %s", path, prn_last_error(g_ctx));
            return;
        }
        compare_search(m, 1, names[i], &total);
        prn_pwl_free(g_ctx, m);
    }
}

/* --- bad input and failures ---------------------------------------------------------------------- */
static void test_bad_input(void) {
    double A[2] = {0.5, 0.3}, W[4] = {0, 0.2, -0.4, 0}, h[2] = {1, -1};
    prn_pwl_model m;
    prn_scyfi_options o;
    prn_scyfi_result *r = (prn_scyfi_result *)&m;
    memset(&m, 0, sizeof m);
    m.kind = PRN_PWL_PLRNN; m.M = 2; m.A = A; m.W = W; m.h = h;
    memset(&o, 0, sizeof o);
    PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, NULL, &o, &r), PRN_ERR_NULL_ARGUMENT);
    PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, &m, &o, NULL), PRN_ERR_NULL_ARGUMENT);
    o.kmax = (size_t)-1; /* what a negative int becomes */
    PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, &m, &o, &r), PRN_ERR_INVALID_ARGUMENT);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "kmax") != NULL, "message: %s", prn_last_error(g_ctx));
    o.kmax = PRN_SCYFI_MAX_KMAX + 1;
    PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, &m, &o, &r), PRN_ERR_INVALID_ARGUMENT);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "kmax") != NULL, "message: %s", prn_last_error(g_ctx));
    o.kmax = 30; o.exhaustive = 1;
    PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, &m, &o, &r), PRN_ERR_INVALID_ARGUMENT);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "exhaustive") != NULL, "message: %s", prn_last_error(g_ctx));
    o.kmax = 1; o.exhaustive = 0; o.inner = (size_t)-2;
    PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, &m, &o, &r), PRN_ERR_INVALID_ARGUMENT);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "inner 18446744073709551614") != NULL || sizeof(size_t) < 8, "message: %s",
               prn_last_error(g_ctx));
    o.inner = 0; o.batch = (size_t)1 << 31; /* past INT_MAX */
    PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, &m, &o, &r), PRN_ERR_INVALID_ARGUMENT);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "batch 2147483648") != NULL, "message: %s", prn_last_error(g_ctx));
    o.batch = 0;
    W[1] = NAN;
    PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, &m, &o, &r), PRN_ERR_NONFINITE);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "W[1]") != NULL, "message: %s", prn_last_error(g_ctx));
    W[1] = 0.2;
    m.M = 0;
    PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, &m, &o, &r), PRN_ERR_INVALID_ARGUMENT);
    m.M = (size_t)65537; /* past PRN__PWL_MAX_DIM: named, never allocated */
    PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, &m, &o, &r), PRN_ERR_INVALID_ARGUMENT);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "m->M is 65537") != NULL, "message: %s", prn_last_error(g_ctx));
    m.M = 2; m.kind = PRN_PWL_ALRNN; m.P = 3;
    PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, &m, &o, &r), PRN_ERR_INVALID_ARGUMENT);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "m->P is 3") != NULL, "message: %s", prn_last_error(g_ctx));
    m.P = 0; m.kind = PRN_PWL_SHPLRNN; m.H = 3;
    PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, &m, &o, &r), PRN_ERR_NULL_ARGUMENT);
    PRNT_CHECK(strstr(prn_last_error(g_ctx), "W1") != NULL, "message: %s", prn_last_error(g_ctx));
    PRNT_CHECK(r == (prn_scyfi_result *)&m, "a failed call wrote *out");
    {   /* M = 65536 (cheap as a shallow model with H = 1) and a batch of
         * 2^31 - 1 chains: (M^2 + M) doubles each wrapped size_t */
        static double big[4 * 65536 + 1];
        prn_pwl_model b;
        size_t i;
        memset(&b, 0, sizeof b);
        b.kind = PRN_PWL_SHPLRNN; b.M = 65536; b.H = 1;
        for (i = 0; i < 65536; ++i) big[i] = 0.5;
        b.A = big; b.W1 = big + 65536; b.W2 = big + 2 * 65536; b.h1 = big + 3 * 65536; b.h2 = big + 4 * 65536;
        memset(&o, 0, sizeof o);
        o.batch = 2147483647;
        PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, &b, &o, &r), PRN_ERR_OUT_OF_MEMORY);
        PRNT_CHECK(strstr(prn_last_error(g_ctx), "batch = 2147483647") != NULL, "message: %s", prn_last_error(g_ctx));
        PRNT_CHECK(r == (prn_scyfi_result *)&m, "a failed call wrote *out");
    }
    PRNT_STATUS(g_ctx, prn_eigenvalues(g_ctx, 2, NULL, A, h), PRN_ERR_NULL_ARGUMENT);
}

/* plrnn and alrnn have no H: whatever it holds is ignored. When H was an
 * int, a negative H once passed prn_pwl_check and wrapped the size of
 * prn_scyfi's scratch (heap overflow), INT_MAX asked for gigabytes; as a
 * size_t those are the huge values below. */
static void test_unused_H(void) {
    static const size_t Hs[] = {(size_t)-1, (size_t)-7, (size_t)INT_MAX + 1, (size_t)INT_MAX};
    int kinds, i;
    for (kinds = 0; kinds < 2; ++kinds) {
        prn_pwl_kind kind = kinds ? PRN_PWL_ALRNN : PRN_PWL_PLRNN;
        tmodel t;
        prn_scyfi_options o;
        prn_scyfi_result *r0 = NULL, *r = NULL;
        double z[4] = {0.3, -0.2, 0.1, 0.4}, y0[4], y[4];
        if (kinds) random_model(&t, kind, 4, 0, 2, 0, 100, 1.2); /* models with cycles */
        else random_model(&t, kind, 3, 0, 0, 0, 1, 1.2);
        memset(&o, 0, sizeof o);
        o.kmax = 3;
        PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, &t.m, &o, &r0), PRN_OK);
        PRNT_STATUS(g_ctx, prn_pwl_step(g_ctx, &t.m, z, y0), PRN_OK);
        for (i = 0; r0 && i < (int)(sizeof Hs / sizeof Hs[0]); ++i) {
            t.m.H = Hs[i];
            PRNT_STATUS(g_ctx, prn_pwl_check(g_ctx, &t.m), PRN_OK);
            PRNT_STATUS(g_ctx, prn_pwl_step(g_ctx, &t.m, z, y), PRN_OK);
            PRNT_CHECK(!memcmp(y, y0, t.m.M * sizeof y[0]), "%s H=%lu: another step", kinds ? "alrnn" : "plrnn",
                       (unsigned long)Hs[i]);
            r = NULL;
            PRNT_STATUS(g_ctx, prn_scyfi(g_ctx, &t.m, &o, &r), PRN_OK);
            PRNT_CHECK(r && (int)r->num_cycles == (int)r0->num_cycles, "%s H=%lu: %d cycles, want %d", kinds ? "alrnn" : "plrnn",
                       (unsigned long)Hs[i], r ? (int)r->num_cycles : -1, (int)r0->num_cycles);
            if (r && (int)r->num_cycles == (int)r0->num_cycles && (int)r0->num_cycles > 0)
                PRNT_CHECK(!memcmp(r->cycles[0].points, r0->cycles[0].points,
                                   (size_t)r0->cycles[0].k * (size_t)t.m.M * sizeof(double)),
                           "%s H=%lu: other points", kinds ? "alrnn" : "plrnn", (unsigned long)Hs[i]);
            prn_scyfi_free(g_ctx, r);
        }
        PRNT_CHECK(r0 && (int)r0->num_cycles > 0, "%s: no cycles to compare", kinds ? "alrnn" : "plrnn");
        prn_scyfi_free(g_ctx, r0);
    }
}

/* A context whose allocator (prnt_fa) refuses its n-th allocation. */
static long af_run(long fail_at, int *cycles) {
    prnt_fa f;
    prn_config cfg;
    prn_context *ctx = NULL;
    tmodel t;
    prn_scyfi_options o;
    prn_scyfi_result *r = (prn_scyfi_result *)&f;
    prn_status st;
    memset(&f, 0, sizeof f);
    f.fail_at = fail_at;
    memset(&cfg, 0, sizeof cfg);
    cfg.allocator.alloc = prnt_fa_alloc;
    cfg.allocator.free = prnt_fa_free;
    cfg.allocator.user = &f;
    cfg.backend = "reference-noblas";
    cfg.num_threads = 1;
    *cycles = -1;
    if (prn_context_create(&cfg, &ctx, NULL, 0) != PRN_OK && prn_context_create(&cfg, &ctx, NULL, 0) != PRN_OK) {
        PRNT_CHECK(0, "n=%ld: context", fail_at);
        return f.count;
    }
    random_model(&t, PRN_PWL_SHPLRNN, 2, 4, 0, 0, 5, 1.0);
    memset(&o, 0, sizeof o);
    o.kmax = 2; o.pool_size = 50;
    st = prn_scyfi(ctx, &t.m, &o, &r);
    if (st != PRN_OK) {
        PRNT_CHECK(st == PRN_ERR_OUT_OF_MEMORY && strstr(prn_last_error(ctx), "prn_scyfi"), "n=%ld: %s (%s)", fail_at,
                   prn_status_string(st), prn_last_error(ctx));
        PRNT_CHECK(r == (prn_scyfi_result *)&f, "n=%ld: a failed call wrote *out", fail_at);
        st = prn_scyfi(ctx, &t.m, &o, &r);
        PRNT_CHECK(st == PRN_OK, "n=%ld: the retry failed: %s", fail_at, prn_last_error(ctx));
    }
    if (st == PRN_OK) {
        *cycles = (int)r->num_cycles;
        prn_scyfi_free(ctx, r);
    }
    prn_context_free(ctx);
    PRNT_CHECK(f.live == 0, "n=%ld: %ld allocations outstanding", fail_at, f.live);
    return f.count;
}
static void test_alloc_failures(void) {
    int base, got;
    long N = af_run(0, &base), n;
    PRNT_CHECK(base > 0, "no cycles in the run without failures");
    for (n = 1; n <= N; ++n) {
        af_run(n, &got);
        PRNT_CHECK(got == base, "n=%ld: %d cycles, want %d", n, got, base);
        if (prnt_cur_failed > 10) break;
    }
}

int main(void) {
    g_ctx = prnt_context(1);
    if (!g_ctx) return 1;
    g_ref = !strncmp(prn_context_backend_name(g_ctx), "reference", 9);
    g_quick = getenv("PRNT_QUICK") != NULL;
    PRNT_RUN(test_fixed_point_closed_form);
    PRNT_RUN(test_border_collision_2_cycle);
    PRNT_RUN(test_exhaustive_vs_search);
    PRNT_RUN(test_same_for_any_batch_and_threads);
    PRNT_RUN(test_host_and_device_products);
    PRNT_RUN(test_reference_cases);
    PRNT_RUN(test_trained_exhaustive);
    PRNT_RUN(test_bad_input);
    PRNT_RUN(test_unused_H);
    if (!g_ref) printf("skip test_alloc_failures: the allocator hooks are checked on the reference backend\n");
    else PRNT_RUN(test_alloc_failures);
    prn_context_free(g_ctx);
    return prnt_summary();
}
