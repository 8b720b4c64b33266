/* prn_eigenvalues: eigenvalues of a real nonsymmetric matrix.
 *  - against LAPACK's dgeev, called here directly, on matrix families with
 *    n = 1 .. 200 (fixed seeds): random; entries spanning 1e-150 .. 1e150;
 *    scaled by 1e+-150, 1e+-300 and into the subnormals; graded; upper
 *    Hessenberg; symmetric, skew-symmetric, orthogonal, rank one;
 *    permutations; companion matrices; Jordan blocks hidden by an
 *    orthogonal similarity (defective: accurate to about eps^(1/k) only);
 *    Frank, Grcar and other classic hard cases. Errors are measured by
 *    matching the two multisets, relative to ||A||_F;
 *  - exact answers: zero, scalar, diagonal, triangular and nilpotent
 *    matrices give their diagonal exactly; closed forms for roots of
 *    unity, rank one, Jordan blocks and some 2x2 matrices;
 *  - every result: `a` unchanged, finite values, sorted by decreasing
 *    modulus, complex values in exact conjugate pairs with the positive
 *    imaginary part first, sum equal to the trace;
 *  - bad input: NaN / Inf (PRN_ERR_NONFINITE with a message), NULL
 *    pointers, n < 0; n = 0 is fine.
 * The Makefile builds it plain and with -DPARRNN_USE_LAPACK (prn_eigenvalues
 * is then dgeev itself); it passes both ways. PRNT_QUICK (valgrind,
 * sanitizers): n <= 40; with PARRNN_USE_LAPACK also the tiny scales are
 * skipped (OpenBLAS's x87 kernels lose them under valgrind). */
#include "parrnn.h"
#include "tests/prn_test.h"
#include <float.h>

/* LAPACK (column-major): the reference. */
extern void dgeev_(const char *jobvl, const char *jobvr, const int *n, double *a, const int *lda, double *wr,
                   double *wi, double *vl, const int *ldvl, double *vr, const int *ldvr, double *work,
                   const int *lwork, int *info);

static prn_context *g_ctx;
static int g_quick;

/* --- helpers ---------------------------------------------------------------------------- */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static void rng_seed(uint64_t s) { g_rng = s * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull; }
static double urand(void) { /* [0, 1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}
static double srand1(void) { return 2 * urand() - 1; } /* [-1, 1) */

static double *dalloc(int n) { return (double *)malloc(sizeof(double) * (size_t)(n > 0 ? n : 1)); }

/* dgeev on a (row-major; transposed here). Returns info. The matrix is
 * first scaled exactly, by a power of 2, to a largest entry in [0.5, 1)
 * (and the values back): under valgrind OpenBLAS's x87 kernels run in
 * double precision, and dgeev then goes wrong on entries like 1e-150. */
static int ref_eig(int n, const double *a, double *wr, double *wi) {
    double *at = dalloc(n * n), *work, wq = 0, dummy = 0, amax = 0;
    int lw = -1, info = 0, one = 1, i, j, e = 0;
    if (n == 0) { free(at); return 0; }
    for (i = 0; i < n * n; ++i) if (fabs(a[i]) > amax) amax = fabs(a[i]);
    if (amax > 0) (void)frexp(amax, &e);
    for (i = 0; i < n; ++i)
        for (j = 0; j < n; ++j) at[j * n + i] = ldexp(a[i * n + j], -e);
    dgeev_("N", "N", &n, at, &n, wr, wi, &dummy, &one, &dummy, &one, &wq, &lw, &info);
    lw = (int)wq > 4 * n ? (int)wq : 4 * n;
    work = dalloc(lw);
    dgeev_("N", "N", &n, at, &n, wr, wi, &dummy, &one, &dummy, &one, work, &lw, &info);
    for (i = 0; info == 0 && i < n; ++i) {
        wr[i] = ldexp(wr[i], e);
        wi[i] = ldexp(wi[i], e);
    }
    free(work);
    free(at);
    return info;
}

/* ||a||_F without overflow */
static double fro(int n, const double *a) {
    double m = 0, s = 0;
    int i;
    for (i = 0; i < n * n; ++i) if (fabs(a[i]) > m) m = fabs(a[i]);
    if (m == 0) return 0;
    for (i = 0; i < n * n; ++i) s += (a[i] / m) * (a[i] / m);
    return m * sqrt(s);
}

static double cabs2(double r, double i) { return hypot(r, i); }

/* Greedy matching of two multisets: the largest distance of a value of
 * (r1, i1) to its nearest not yet used value of (r2, i2). */
static double match_dist(int n, const double *r1, const double *i1, const double *r2, const double *i2) {
    char *used = (char *)calloc((size_t)n + 1, 1);
    double worst = 0;
    int i, j;
    for (i = 0; i < n; ++i) {
        int best = -1;
        double bd = 0;
        for (j = 0; j < n; ++j) {
            double d;
            if (used[j]) continue;
            d = cabs2((r1[i] - r2[j]) / 2, (i1[i] - i2[j]) / 2) * 2; /* halves: no overflow near DBL_MAX */
            if (best < 0 || d < bd) { best = j; bd = d; }
        }
        if (best >= 0) used[best] = 1;
        if (!(bd <= worst)) worst = bd; /* NaN counts as the worst */
    }
    free(used);
    return worst;
}

/* Every value of (er, ei) occurs in (re, im) exactly, as often. */
static int same_multiset_exact(int n, const double *re, const double *im, const double *er, const double *ei) {
    char *used = (char *)calloc((size_t)n + 1, 1);
    int i, j, ok = 1;
    for (i = 0; i < n && ok; ++i) {
        for (j = 0; j < n; ++j)
            if (!used[j] && re[j] == er[i] && im[j] == ei[i]) break;
        if (j == n) ok = 0;
        else used[j] = 1;
    }
    free(used);
    return ok;
}

/* Statistics of one family, printed by fam_end. */
typedef struct fam {
    const char *name;
    int count;
    double worst, tol;
} fam;
static fam fam_begin(const char *name, double tol) {
    fam f;
    f.name = name;
    f.count = 0;
    f.worst = 0;
    f.tol = tol;
    return f;
}
static void fam_end(const fam *f) {
    printf("    %-44s %4d matrices, max |err| / ||A||_F vs dgeev %.2g (limit %.2g)\n", f->name, f->count, f->worst,
           f->tol);
}

/* Checks that hold for every result: finite, sorted by decreasing modulus,
 * complex values in exact conjugate pairs with the positive part first. */
static void check_form(const char *what, int n, const double *re, const double *im) {
    int i, j;
    for (i = 0; i < n; ++i)
        PRNT_CHECK(fabs(re[i]) <= DBL_MAX && fabs(im[i]) <= DBL_MAX, "%s n=%d: value %d is %g%+gi", what, n, i, re[i],
                   im[i]);
    for (i = 0; i + 1 < n; ++i) {
        double m0 = cabs2(re[i], im[i]), m1 = cabs2(re[i + 1], im[i + 1]);
        PRNT_CHECK(m1 <= m0 * (1 + 1e-12) + DBL_MIN, "%s n=%d: |value %d| = %.17g < |value %d| = %.17g", what, n, i,
                   m0, i + 1, m1);
    }
    /* each value with im < 0 follows its own partner (re, -im): counted
     * over the values before it, partners outnumber its equals */
    for (i = 0; i < n; ++i) {
        int partners = 0, equals = 0, after = 0;
        if (im[i] == 0) continue;
        if (im[i] > 0) { /* its partner exists somewhere after it */
            for (j = i + 1; j < n; ++j) after += re[j] == re[i] && im[j] == -im[i];
            PRNT_CHECK(after > 0, "%s n=%d: value %d = %.17g%+.17gi has no conjugate after it", what, n, i, re[i],
                       im[i]);
            continue;
        }
        for (j = 0; j < i; ++j) {
            partners += re[j] == re[i] && im[j] == -im[i];
            equals += re[j] == re[i] && im[j] == im[i];
        }
        PRNT_CHECK(partners > equals, "%s n=%d: value %d = %.17g%+.17gi comes before its conjugate (or has none)", what,
                   n, i, re[i], im[i]);
    }
}

/* Runs prn_eigenvalues on a, with every general check and the comparison
 * with dgeev (|err| <= tol ||A||_F). Returns the relative error; re/im
 * (may be NULL) receive the values. Where dgeev itself does not converge
 * (seen only under valgrind), the comparison is left out, and with
 * PARRNN_USE_LAPACK prn_eigenvalues's PRN_ERR_NONFINITE is then right. */
static double run_case(fam *f, int n, const double *a, double tol, double *re_out, double *im_out) {
    double *copy = dalloc(n * n), *re = dalloc(n), *im = dalloc(n), *wr = dalloc(n), *wi = dalloc(n);
    double nrm = fro(n, a), err = 0, rel = 0, tr = 0, sum = 0, sabs = 0;
    int i, info;
    prn_status st;
    memcpy(copy, a, sizeof(double) * (size_t)(n * n));
    for (i = 0; i < n; ++i) re[i] = im[i] = -777.0;
    info = ref_eig(n, a, wr, wi);
    st = prn_eigenvalues(g_ctx, n, a, re, im);
    PRNT_CHECK(memcmp(copy, a, sizeof(double) * (size_t)(n * n)) == 0, "%s n=%d: a was changed", f->name, n);
    f->count++;
    if (info != 0) printf("    note: %s n=%d: dgeev info %d, no comparison\n", f->name, n, info);
    if (st == PRN_ERR_NONFINITE && info > 0) {
        printf("    note: %s n=%d: %s\n", f->name, n, prn_last_error(g_ctx));
        PRNT_CHECK(prn_last_error(g_ctx)[0] != 0, "%s n=%d: no message", f->name, n);
    } else {
        PRNT_CHECK(st == PRN_OK, "%s n=%d: %s (%s)", f->name, n, prn_status_string(st), prn_last_error(g_ctx));
    }
    if (st == PRN_OK) {
        check_form(f->name, n, re, im);
        /* the sum is the trace (clusters of a defective value too) */
        for (i = 0; i < n; ++i) {
            tr += a[i * n + i];
            sum += re[i];
            sabs += fabs(re[i]);
        }
        PRNT_CHECK(fabs(sum - tr) <= 1e-12 * (n + 1) * (nrm + sabs), "%s n=%d: sum %.17g, trace %.17g", f->name, n, sum,
                   tr);
        if (info == 0) {
            err = match_dist(n, re, im, wr, wi);
            rel = nrm > 0 ? err / nrm : err;
            PRNT_CHECK(rel <= tol, "%s n=%d: |err| / ||A||_F = %.3g > %.3g", f->name, n, rel, tol);
            if (!(rel <= f->worst)) f->worst = rel;
        }
    }
    if (re_out) memcpy(re_out, re, sizeof(double) * (size_t)n);
    if (im_out) memcpy(im_out, im, sizeof(double) * (size_t)n);
    free(copy); free(re); free(im); free(wr); free(wi);
    return rel;
}

/* Runs a case whose eigenvalues are known exactly: (er, ei) as a multiset. */
static void run_exact(fam *f, int n, const double *a, const double *er, const double *ei) {
    double *re = dalloc(n), *im = dalloc(n);
    run_case(f, n, a, 0, re, im);
    PRNT_CHECK(same_multiset_exact(n, re, im, er, ei), "%s n=%d: not exactly the expected values", f->name, n);
    free(re);
    free(im);
}

/* a <- Q a Q, Q = I - 2 u u^T / (u^T u), u random: an orthogonal similarity */
static void reflect(int n, double *a) {
    double *u = dalloc(n), *t = dalloc(n), uu = 0;
    int i, j;
    for (i = 0; i < n; ++i) { u[i] = srand1(); uu += u[i] * u[i]; }
    for (j = 0; j < n; ++j) { t[j] = 0; for (i = 0; i < n; ++i) t[j] += u[i] * a[i * n + j]; }
    for (i = 0; i < n; ++i) for (j = 0; j < n; ++j) a[i * n + j] -= 2 / uu * u[i] * t[j];
    for (i = 0; i < n; ++i) { t[i] = 0; for (j = 0; j < n; ++j) t[i] += a[i * n + j] * u[j]; }
    for (i = 0; i < n; ++i) for (j = 0; j < n; ++j) a[i * n + j] -= 2 / uu * t[i] * u[j];
    free(u);
    free(t);
}

/* Companion matrix of x^n + c[n-1] x^(n-1) + ... + c[0]. */
static void companion(int n, const double *c, double *a) {
    int i;
    memset(a, 0, sizeof(double) * (size_t)(n * n));
    for (i = 0; i < n; ++i) a[i] = -c[n - 1 - i];
    for (i = 1; i < n; ++i) a[i * n + i - 1] = 1;
}

/* Sizes: 1 .. 12 each, then larger ones up to 200 (quick: 40). */
static const int g_big[] = {16, 25, 40, 64, 100, 200};
#define NBIG ((int)(sizeof g_big / sizeof g_big[0]))
static int big_ok(int n) { return !g_quick || n <= 40; }

/* --- tests against dgeev ----------------------------------------------------------------- */
static void test_random(void) {
    fam f = fam_begin("random uniform [-1, 1]", 1e-11);
    double *a = dalloc(200 * 200);
    int n, r, i, k;
    rng_seed(1);
    for (n = 1; n <= 12; ++n)
        for (r = 0; r < 4; ++r) {
            for (i = 0; i < n * n; ++i) a[i] = srand1();
            run_case(&f, n, a, f.tol, NULL, NULL);
        }
    for (k = 0; k < NBIG; ++k) {
        n = g_big[k];
        if (!big_ok(n)) continue;
        for (i = 0; i < n * n; ++i) a[i] = srand1();
        run_case(&f, n, a, f.tol, NULL, NULL);
    }
    fam_end(&f);
    free(a);
}

/* Random matrices scaled by scales[0 .. ns-1]. */
static void run_scaled(const double *scales, const char *const *names, int ns) {
    static const int sizes[] = {1, 2, 3, 4, 5, 8, 13, 30, 100};
    double *a = dalloc(200 * 200);
    int s, k, n, i;
    for (s = 0; s < ns; ++s) {
        /* subnormal entries carry fewer bits: looser there */
        fam f = fam_begin(names[s], scales[s] < 1e-300 ? 1e-10 : 1e-11);
        for (k = 0; k < (int)(sizeof sizes / sizeof sizes[0]); ++k) {
            n = sizes[k];
            if (!big_ok(n)) continue;
            for (i = 0; i < n * n; ++i) a[i] = srand1() * scales[s];
            run_case(&f, n, a, f.tol, NULL, NULL);
        }
        fam_end(&f);
    }
    free(a);
}

static void test_tiny_scales(void) {
    static const double scales[] = {1e-150, 1e-300, 1e-310};
    static const char *const names[] = {"random * 1e-150", "random * 1e-300", "random * 1e-310 (subnormal entries)"};
#ifdef PARRNN_USE_LAPACK
    /* prn_eigenvalues is dgeev here, and under valgrind (PRNT_QUICK)
     * OpenBLAS's x87 kernels lose these (ref_eig scales them away) */
    if (g_quick) {
        PRNT_SKIP("PARRNN_USE_LAPACK with PRNT_QUICK: dgeev is not reliable on tiny entries under valgrind");
        return;
    }
#endif
    rng_seed(2);
    run_scaled(scales, names, 3);
}

static void test_scales(void) {
    static const double scales[] = {1e150, 1e300};
    static const char *const names[] = {"random * 1e150", "random * 1e300"};
    double *a = dalloc(200 * 200);
    int k, n, i;
    rng_seed(12);
    run_scaled(scales, names, 2);
    {
        fam f = fam_begin("entries +-10^U(-150, 150)", 1e-8);
        for (n = 1; n <= 12; ++n)
            for (k = 0; k < 3; ++k) {
                for (i = 0; i < n * n; ++i) a[i] = (urand() < 0.5 ? -1 : 1) * pow(10.0, 300 * urand() - 150);
                run_case(&f, n, a, f.tol, NULL, NULL);
            }
        for (k = 0; k < NBIG; ++k) {
            n = g_big[k];
            if (!big_ok(n)) continue;
            for (i = 0; i < n * n; ++i) a[i] = (urand() < 0.5 ? -1 : 1) * pow(10.0, 300 * urand() - 150);
            run_case(&f, n, a, f.tol, NULL, NULL);
        }
        fam_end(&f);
    }
    {
        /* rows scaled by 10^U(-100, 100), some entries zero */
        fam f = fam_begin("sparse, rows scaled by 10^U(-100, 100)", 1e-10);
        for (k = 0; k < 60; ++k) {
            double pz = urand();
            n = 1 + k % 12;
            for (i = 0; i < n * n; ++i) a[i] = urand() < pz ? 0 : srand1();
            for (i = 0; i < n; ++i) {
                double sc = pow(10.0, 200 * urand() - 100);
                int j;
                for (j = 0; j < n; ++j) a[i * n + j] *= sc;
            }
            run_case(&f, n, a, f.tol, NULL, NULL);
        }
        fam_end(&f);
    }
    free(a);
}

static void test_graded(void) {
    fam f1 = fam_begin("graded D A D^-1, D = 2^k over 2^+-250", 1e-11);
    fam f2 = fam_begin("graded a_ij = r 10^(-20 (i + j) / n)", 1e-11);
    double *a = dalloc(200 * 200);
    int n, k, i, j;
    rng_seed(3);
    for (k = 0; k < 12 + NBIG; ++k) {
        n = k < 12 ? k + 1 : g_big[k - 12];
        if (!big_ok(n)) continue;
        for (i = 0; i < n; ++i)
            for (j = 0; j < n; ++j) a[i * n + j] = ldexp(srand1(), n > 1 ? 500 * (i - j) / (n - 1) : 0);
        run_case(&f1, n, a, f1.tol, NULL, NULL);
        for (i = 0; i < n; ++i)
            for (j = 0; j < n; ++j) a[i * n + j] = srand1() * pow(10.0, -20.0 * (i + j) / n);
        run_case(&f2, n, a, f2.tol, NULL, NULL);
    }
    fam_end(&f1);
    fam_end(&f2);
    free(a);
}

/* Entries far apart in scale whose eigenvalues are far smaller than the
 * largest entry: an error relative to ||A||_F (run_case) would pass a
 * result of zeros, so each value is compared with dgeev's relative to the
 * largest |lambda|. The matrix must not be scaled down to 1 before it is
 * balanced: its small entries would underflow. */
static void test_scale_balance(void) {
    /* cyclic: a01 a12 a20 = p, so lambda = d + p^(1/3) w^j, w^3 = 1 */
    static const double cyc[][9] = {
        {0, 1e200, 0, 0, 0, 1e-200, 1e200, 0, 0},   /* p = 1e200: |lambda| 4.6e66 */
        {0, 1, 0, 0, 0, 1e200, 1e-200, 0, 0},       /* p = 1 */
        {1, 1e200, 0, 0, 1, 1, 1e-200, 0, 1},       /* d = 1, p = 1 */
        {0, 1e250, 0, 0, 0, 1e-120, 1e-100, 0, 0},  /* p = 1e30 */
    };
    static const double cyc_p[] = {1e200, 1, 1, 1e30}, cyc_d[] = {0, 0, 1, 0};
    double a[100], b[100], re[10], im[10], wr[10], wi[10];
    int t, n, i, j, k;
#ifdef PARRNN_USE_LAPACK
    /* prn_eigenvalues is dgeev here, and under valgrind (PRNT_QUICK)
     * OpenBLAS's x87 kernels lose entries of 1e-200 (as in test_tiny_scales) */
    if (g_quick) {
        PRNT_SKIP("PARRNN_USE_LAPACK with PRNT_QUICK: dgeev is not reliable on tiny entries under valgrind");
        return;
    }
#endif
    for (t = 0; t < (int)(sizeof cyc / sizeof cyc[0]); ++t) {
        double r = cbrt(cyc_p[t]), lmax = 0, err;
        prn_status st = prn_eigenvalues(g_ctx, 3, cyc[t], re, im);
        PRNT_CHECK(st == PRN_OK, "cyclic %d: %s (%s)", t, prn_status_string(st), prn_last_error(g_ctx));
        for (i = 0; i < 3; ++i) {
            wr[i] = cyc_d[t] + r * cos(2 * 3.14159265358979323846 * i / 3);
            wi[i] = r * sin(2 * 3.14159265358979323846 * i / 3);
            if (cabs2(wr[i], wi[i]) > lmax) lmax = cabs2(wr[i], wi[i]);
        }
        err = match_dist(3, re, im, wr, wi) / lmax;
        PRNT_CHECK(err <= 1e-13, "cyclic %d: |err| / max |lambda| = %.3g (|lambda| %.3g; got %g%+gi)", t, err, lmax,
                   re[0], im[0]);
    }
    /* s D B D^-1: B random, D = 2^e, e spread over +-325, s = 2^300, so the
     * entries span 2^-350 .. 2^950 and the eigenvalues are exactly s eig(B)
     * (dgeev on B: moderate numbers). */
    rng_seed(11);
    for (k = 0; k < 40; ++k) {
        double lmax = 0, err;
        int e[10];
        n = 3 + k % 8;
        for (i = 0; i < n; ++i) e[i] = (int)(urand() * 650) - 325;
        for (i = 0; i < n; ++i)
            for (j = 0; j < n; ++j) {
                b[i * n + j] = srand1();
                a[i * n + j] = ldexp(b[i * n + j], 300 + e[i] - e[j]);
            }
        PRNT_CHECK(prn_eigenvalues(g_ctx, n, a, re, im) == PRN_OK, "s D B D^-1 n=%d: %s", n, prn_last_error(g_ctx));
        PRNT_CHECK(ref_eig(n, b, wr, wi) == 0, "dgeev failed on B (n=%d)", n);
        for (i = 0; i < n; ++i) {
            wr[i] = ldexp(wr[i], 300);
            wi[i] = ldexp(wi[i], 300);
            if (cabs2(wr[i], wi[i]) > lmax) lmax = cabs2(wr[i], wi[i]);
        }
        err = match_dist(n, re, im, wr, wi) / lmax;
        PRNT_CHECK(err <= 1e-10, "s D B D^-1 n=%d (case %d): |err| / max |lambda| = %.3g", n, k, err);
    }
}

static void test_hessenberg_and_normal(void) {
    /* random Hessenberg matrices have very ill-conditioned eigenvalues as
     * n grows: kept to n <= 40 */
    fam fh = fam_begin("upper Hessenberg", 1e-9);
    fam fs = fam_begin("symmetric", 1e-12);
    fam fk = fam_begin("skew-symmetric", 1e-12);
    fam fo = fam_begin("orthogonal (3 reflections)", 1e-12);
    double *a = dalloc(200 * 200), *re = dalloc(200), *im = dalloc(200);
    int n, k, i, j;
    rng_seed(4);
    for (k = 0; k < 12 + NBIG; ++k) {
        double worst;
        n = k < 12 ? k + 1 : g_big[k - 12];
        if (!big_ok(n)) continue;
        if (n <= 40) {
            for (i = 0; i < n; ++i)
                for (j = 0; j < n; ++j) a[i * n + j] = j >= i - 1 ? srand1() : 0;
            run_case(&fh, n, a, fh.tol, NULL, NULL);
        }
        /* symmetric: real values, up to rounding */
        for (i = 0; i < n; ++i)
            for (j = 0; j <= i; ++j) a[i * n + j] = a[j * n + i] = srand1();
        run_case(&fs, n, a, fs.tol, re, im);
        for (i = 0, worst = 0; i < n; ++i) if (fabs(im[i]) > worst) worst = fabs(im[i]);
        PRNT_CHECK(worst <= 1e-12 * fro(n, a), "symmetric n=%d: imaginary part %g", n, worst);
        /* skew-symmetric: imaginary values */
        for (i = 0; i < n; ++i)
            for (j = 0; j <= i; ++j) {
                double v = srand1();
                a[i * n + j] = i == j ? 0 : v;
                a[j * n + i] = i == j ? 0 : -v;
            }
        run_case(&fk, n, a, fk.tol, re, im);
        for (i = 0, worst = 0; i < n; ++i) if (fabs(re[i]) > worst) worst = fabs(re[i]);
        PRNT_CHECK(worst <= 1e-12 * fro(n, a), "skew-symmetric n=%d: real part %g", n, worst);
        /* orthogonal: |lambda| = 1 */
        memset(a, 0, sizeof(double) * (size_t)(n * n));
        for (i = 0; i < n; ++i) a[i * n + i] = 1;
        reflect(n, a);
        reflect(n, a);
        for (i = 0; i < n; ++i) a[i] = -a[i]; /* det +-1 either way; breaks the symmetry */
        reflect(n, a);
        run_case(&fo, n, a, fo.tol, re, im);
        for (i = 0, worst = 0; i < n; ++i) {
            double d = fabs(cabs2(re[i], im[i]) - 1);
            if (d > worst) worst = d;
        }
        PRNT_CHECK(worst <= 1e-12, "orthogonal n=%d: ||lambda| - 1| up to %g", n, worst);
    }
    fam_end(&fh);
    fam_end(&fs);
    fam_end(&fk);
    fam_end(&fo);
    free(a); free(re); free(im);
}

/* --- exact answers ------------------------------------------------------------------------- */
static void test_exact_structures(void) {
    fam fz = fam_begin("zero", 0), fc = fam_begin("scalar * I", 0), fd = fam_begin("diagonal (values repeated)", 0);
    fam fu = fam_begin("upper triangular", 0), fl = fam_begin("lower triangular", 0);
    fam fn = fam_begin("strictly upper triangular (nilpotent)", 0), fj = fam_begin("Jordan form (triangular)", 0);
    double *a = dalloc(200 * 200), *er = dalloc(200), *ei = dalloc(200);
    int n, k, i, j;
    rng_seed(5);
    for (k = 0; k < 12 + NBIG; ++k) {
        n = k < 12 ? k + 1 : g_big[k - 12];
        if (!big_ok(n)) continue;
        for (i = 0; i < n; ++i) er[i] = ei[i] = 0;
        memset(a, 0, sizeof(double) * (size_t)(n * n));
        run_exact(&fz, n, a, er, ei);
        for (i = 0; i < n; ++i) a[i * n + i] = er[i] = -2.75;
        run_exact(&fc, n, a, er, ei);
        for (i = 0; i < n; ++i) a[i * n + i] = er[i] = (double)((int)(urand() * 5) - 2) * 1.5;
        run_exact(&fd, n, a, er, ei);
        for (i = 0; i < n; ++i)
            for (j = 0; j < n; ++j) a[i * n + j] = j >= i ? srand1() : 0;
        for (i = 0; i < n; ++i) er[i] = a[i * n + i];
        run_exact(&fu, n, a, er, ei);
        for (i = 0; i < n; ++i)
            for (j = 0; j < n; ++j) a[i * n + j] = j <= i ? srand1() * 1e100 : 0;
        for (i = 0; i < n; ++i) er[i] = a[i * n + i];
        run_exact(&fl, n, a, er, ei);
        for (i = 0; i < n; ++i)
            for (j = 0; j < n; ++j) a[i * n + j] = j > i ? srand1() : 0;
        for (i = 0; i < n; ++i) er[i] = 0;
        run_exact(&fn, n, a, er, ei);
        /* Jordan blocks of sizes 1 .. 3, values from {-2 .. 2} */
        memset(a, 0, sizeof(double) * (size_t)(n * n));
        for (i = 0; i < n;) {
            int bs = 1 + (int)(urand() * 3), t;
            double lam = (double)((int)(urand() * 5) - 2);
            for (t = 0; t < bs && i < n; ++t, ++i) {
                a[i * n + i] = er[i] = lam;
                if (t > 0) a[(i - 1) * n + i] = 1;
            }
        }
        run_exact(&fj, n, a, er, ei);
    }
    fam_end(&fz); fam_end(&fc); fam_end(&fd); fam_end(&fu); fam_end(&fl); fam_end(&fn); fam_end(&fj);
    free(a); free(er); free(ei);
}

/* --- defective matrices ------------------------------------------------------------------ */
static void test_jordan(void) {
    /* blocks of size <= 3 under an orthogonal similarity: errors ~ eps^(1/3) */
    fam fb = fam_begin("Jordan blocks <= 3, Q J Q", 1e-4);
    fam f1 = fam_begin("one Jordan block J_k, k <= 8, Q J Q", 1);
    double *a = dalloc(200 * 200), *re = dalloc(200), *im = dalloc(200);
    int n, k, i;
    rng_seed(6);
    for (k = 0; k < 12 + NBIG; ++k) {
        n = k < 12 ? k + 1 : g_big[k - 12];
        if (!big_ok(n) || n > 100) continue;
        memset(a, 0, sizeof(double) * (size_t)(n * n));
        for (i = 0; i < n;) {
            int bs = 1 + (int)(urand() * 3), t;
            double lam = (double)((int)(urand() * 5) - 2);
            for (t = 0; t < bs && i < n; ++t, ++i) {
                a[i * n + i] = lam;
                if (t > 0) a[(i - 1) * n + i] = 1;
            }
        }
        reflect(n, a);
        reflect(n, a);
        run_case(&fb, n, a, fb.tol, NULL, NULL);
    }
    /* a single block J_k(lambda): every value within ~ (eps ||A||)^(1/k) of lambda */
    for (n = 1; n <= 8; ++n) {
        double lam = 0.5 + urand(), worst = 0, lim, nrm;
        memset(a, 0, sizeof(double) * (size_t)(n * n));
        for (i = 0; i < n; ++i) {
            a[i * n + i] = lam;
            if (i) a[(i - 1) * n + i] = 1;
        }
        reflect(n, a);
        nrm = fro(n, a);
        lim = 20 * pow(n * DBL_EPSILON * nrm, 1.0 / n);
        run_case(&f1, n, a, f1.tol, re, im);
        for (i = 0; i < n; ++i) {
            double d = cabs2(re[i] - lam, im[i]);
            if (d > worst) worst = d;
        }
        PRNT_CHECK(worst <= lim, "Jordan block k=%d: |lambda_i - %g| up to %.3g > %.3g", n, lam, worst, lim);
    }
    fam_end(&fb);
    fam_end(&f1);
    free(a); free(re); free(im);
}

/* --- companion matrices, permutations ------------------------------------------------------ */
static void test_companion_and_permutations(void) {
    fam fr = fam_begin("companion, random coefficients", 1e-10);
    fam fu = fam_begin("companion of x^n - 1 (roots of unity)", 1e-12);
    fam fw = fam_begin("companion of (x-1)(x-2)...(x-n), n <= 10", 1e-9);
    fam fp = fam_begin("random permutation (Q P Q for n > 6)", 1e-12);
    double *a = dalloc(200 * 200), *c = dalloc(201), *re = dalloc(200), *im = dalloc(200);
    int *perm = (int *)malloc(sizeof(int) * 200);
    int n, k, i, j;
    rng_seed(7);
    for (k = 0; k < 12 + NBIG; ++k) {
        n = k < 12 ? k + 1 : g_big[k - 12];
        if (!big_ok(n)) continue;
        for (i = 0; i < n; ++i) c[i] = srand1();
        companion(n, c, a);
        run_case(&fr, n, a, fr.tol, NULL, NULL);
        /* x^n - 1: the n-th roots of unity (a cyclic permutation) */
        for (i = 0; i < n; ++i) c[i] = 0;
        c[0] = -1;
        companion(n, c, a);
        run_case(&fu, n, a, fu.tol, re, im);
        for (i = 0; i < n; ++i) {
            double best = 1e300;
            for (j = 0; j < n; ++j) {
                double t = 6.283185307179586 * j / n, d = cabs2(re[i] - cos(t), im[i] - sin(t));
                if (d < best) best = d;
            }
            PRNT_CHECK(best <= 1e-13 * n, "x^%d - 1: value %.17g%+.17gi is %.3g from every root of unity", n, re[i],
                       im[i], best);
        }
        /* random permutation matrix: all |lambda| = 1 */
        for (i = 0; i < n; ++i) perm[i] = i;
        for (i = n - 1; i > 0; --i) {
            int t = (int)(urand() * (i + 1)), s = perm[i];
            perm[i] = perm[t];
            perm[t] = s;
        }
        memset(a, 0, sizeof(double) * (size_t)(n * n));
        for (i = 0; i < n; ++i) a[i * n + perm[i]] = 1;
        if (n > 6) reflect(n, a);
        run_case(&fp, n, a, fp.tol, re, im);
        for (i = 0; i < n; ++i)
            PRNT_CHECK(fabs(cabs2(re[i], im[i]) - 1) <= 1e-12, "permutation n=%d: |lambda| = %.17g", n,
                       cabs2(re[i], im[i]));
    }
    /* roots 1 .. n: p(x) = prod (x - r) */
    for (n = 1; n <= 10; ++n) {
        double p[12];
        int r, t;
        memset(p, 0, sizeof p);
        p[0] = 1; /* coefficients, low to high */
        for (r = 1; r <= n; ++r) {
            for (t = r; t >= 1; --t) p[t] = p[t - 1] - r * p[t];
            p[0] = -r * p[0];
        }
        companion(n, p, a);
        run_case(&fw, n, a, fw.tol, re, im);
        for (i = 0; i < n; ++i) {
            double best = 1e300;
            for (r = 1; r <= n; ++r) if (cabs2(re[i] - r, im[i]) < best) best = cabs2(re[i] - r, im[i]);
            PRNT_CHECK(best <= 1e-13 * fro(n, a), "roots 1..%d: value %.17g%+.17gi is %.3g from every integer", n,
                       re[i], im[i], best);
        }
    }
    fam_end(&fr); fam_end(&fu); fam_end(&fw); fam_end(&fp);
    free(a); free(c); free(re); free(im); free(perm);
}

/* --- classic hard cases ------------------------------------------------------------------- */
static void test_classic(void) {
    fam fs = fam_begin("small classic cases", 1e-13);
    fam ff = fam_begin("Frank matrix, n <= 12", 1e-7);
    fam fg = fam_begin("Grcar matrix, n <= 40", 1e-9);
    fam fo = fam_begin("ones (rank one)", 1e-13);
    double *a = dalloc(200 * 200), *re = dalloc(200), *im = dalloc(200);
    int n, i, j, k;
    {
        /* cyclic shifts that stall unshifted/standard QR */
        static const double cyc3[9] = {0, 0, 1, 1, 0, 0, 0, 1, 0};
        static const double swap4[16] = {0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0};
        static const double rot[4] = {0, -1, 1, 0};
        double day[16] = {0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0}, e = 1e-6;
        run_case(&fs, 3, cyc3, fs.tol, NULL, NULL);
        run_case(&fs, 4, swap4, fs.tol, NULL, NULL);
        run_case(&fs, 2, rot, fs.tol, re, im);
        PRNT_CHECK(re[0] == 0 && im[0] == 1 && re[1] == 0 && im[1] == -1, "[0 -1; 1 0]: %g%+gi, %g%+gi", re[0], im[0],
                   re[1], im[1]);
        /* [0 1 0 0; 1 0 e 0; 0 -e 0 1; 0 0 1 0]: values +-1 +-... for tiny e */
        for (k = 0; k < 12; ++k, e *= 0.1) {
            day[6] = e;
            day[9] = -e;
            run_case(&fs, 4, day, fs.tol, NULL, NULL);
        }
    }
    {
        /* 2x2 near a double root: 1 +- 1e-10 i */
        double t2[4] = {1, 1, -1e-20, 1};
        run_case(&fs, 2, t2, fs.tol, re, im);
        PRNT_CHECK(fabs(re[0] - 1) <= 4 * DBL_EPSILON && fabs(im[0] / 1e-10 - 1) <= 1e-14 && im[1] == -im[0],
                   "[1 1; -1e-20 1]: %.17g%+.17gi", re[0], im[0]);
    }
#ifndef PARRNN_USE_LAPACK
    /* The built-in routine only: dgeev scales these matrices by a factor
     * that wipes out the small entry (1 +- 0i), or overflows. */
    {
        /* 1 +- i, exactly */
        double t1[4] = {1, 1e-300, -1e300, 1};
        PRNT_OK(g_ctx, prn_eigenvalues(g_ctx, 2, t1, re, im));
        PRNT_CHECK(fabs(re[0] - 1) <= 4 * DBL_EPSILON && fabs(im[0] - 1) <= 4 * DBL_EPSILON && im[1] == -im[0],
                   "[1 1e-300; -1e300 1]: %.17g%+.17gi", re[0], im[0]);
    }
    {
        /* DBL_MAX (1 +- i) */
        double t[4] = {DBL_MAX, DBL_MAX, -DBL_MAX, DBL_MAX};
        PRNT_OK(g_ctx, prn_eigenvalues(g_ctx, 2, t, re, im));
        PRNT_CHECK(re[0] == DBL_MAX && re[1] == DBL_MAX && fabs(im[0] / DBL_MAX - 1) <= 4 * DBL_EPSILON &&
                       im[1] == -im[0],
                   "DBL_MAX [1 1; -1 1]: %.17g%+.17gi, %.17g%+.17gi", re[0], im[0], re[1], im[1]);
    }
#endif
    /* diagonal 1e-150 .. 1e150 (exact), then coupled by 1e-150 */
    n = 6;
    memset(a, 0, sizeof(double) * 36);
    for (i = 0; i < n; ++i) a[i * n + i] = pow(10.0, -150 + 60 * i);
    run_case(&fs, n, a, fs.tol, re, im);
    for (i = 0; i < n; ++i)
        PRNT_CHECK(fabs(re[i] / pow(10.0, 150 - 60 * i) - 1) <= 4 * DBL_EPSILON && im[i] == 0,
                   "diag 1e-150..1e150: value %d = %.17g", i, re[i]);
    for (i = 0; i < n; ++i)
        for (j = 0; j < n; ++j) if (i != j) a[i * n + j] = 1e-150;
    run_case(&fs, n, a, fs.tol, NULL, NULL);
    /* Frank: small eigenvalues are ill-conditioned */
    for (n = 1; n <= 12; ++n) {
        for (i = 0; i < n; ++i)
            for (j = 0; j < n; ++j) a[i * n + j] = j >= i - 1 ? n - (i > j ? i : j) : 0;
        run_case(&ff, n, a, ff.tol, NULL, NULL);
    }
    /* Grcar: -1 below the diagonal, 1 on it and three above; highly non-normal */
    for (n = 4; n <= 40; n += 6) {
        for (i = 0; i < n; ++i)
            for (j = 0; j < n; ++j) a[i * n + j] = j == i - 1 ? -1 : (j >= i && j <= i + 3) ? 1 : 0;
        run_case(&fg, n, a, fg.tol, NULL, NULL);
    }
    /* all ones: n once, 0 n-1 times */
    for (k = 0; k < 12 + NBIG; ++k) {
        n = k < 12 ? k + 1 : g_big[k - 12];
        if (!big_ok(n)) continue;
        for (i = 0; i < n * n; ++i) a[i] = 1;
        run_case(&fo, n, a, fo.tol, re, im);
        PRNT_CHECK(fabs(re[0] - n) <= 1e-13 * n && im[0] == 0, "ones n=%d: largest %.17g%+.17gi", n, re[0], im[0]);
        for (i = 1; i < n; ++i)
            PRNT_CHECK(cabs2(re[i], im[i]) <= 1e-13 * n, "ones n=%d: value %d = %g%+gi", n, i, re[i], im[i]);
    }
    fam_end(&fs); fam_end(&ff); fam_end(&fg); fam_end(&fo);
    free(a); free(re); free(im);
}

/* --- bad input ------------------------------------------------------------------------------ */
static void expect_error(const char *what, prn_status got, prn_status want) {
    const char *msg = prn_last_error(g_ctx);
    PRNT_CHECK(got == want, "%s: got %s, want %s", what, prn_status_string(got), prn_status_string(want));
    PRNT_CHECK(prn_last_status(g_ctx) == got, "%s: prn_last_status %s, returned %s", what,
               prn_status_string(prn_last_status(g_ctx)), prn_status_string(got));
    PRNT_CHECK(msg[0] != 0, "%s: empty message", what);
    PRNT_CHECK(strstr(msg, "prn_eigenvalues") != NULL, "%s: message \"%s\" does not name prn_eigenvalues", what, msg);
}

static void test_bad_input(void) {
    static const int where[] = {0, 4, 8};
    double a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 10}, copy[9], re[3], im[3];
    double bad[3];
    int w, b;
    char what[64];
    bad[0] = NAN;
    bad[1] = INFINITY;
    bad[2] = -INFINITY;
    memcpy(copy, a, sizeof a);
    /* non-finite entries, first / middle / last */
    for (w = 0; w < 3; ++w)
        for (b = 0; b < 3; ++b) {
            double saved = a[where[w]];
            prn_clear_error(g_ctx);
            a[where[w]] = bad[b];
            snprintf(what, sizeof what, "a[%d] = %g", where[w], bad[b]);
            expect_error(what, prn_eigenvalues(g_ctx, 3, a, re, im), PRN_ERR_NONFINITE);
            a[where[w]] = saved;
            PRNT_CHECK(memcmp(a, copy, sizeof a) == 0, "%s: a changed", what);
        }
    {
        double one = NAN;
        prn_clear_error(g_ctx);
        expect_error("1x1 NaN", prn_eigenvalues(g_ctx, 1, &one, re, im), PRN_ERR_NONFINITE);
    }
    /* NULL pointers, n < 0 */
    PRNT_CHECK(prn_eigenvalues(NULL, 3, a, re, im) == PRN_ERR_NULL_ARGUMENT, "NULL ctx");
    prn_clear_error(g_ctx);
    expect_error("NULL a", prn_eigenvalues(g_ctx, 3, NULL, re, im), PRN_ERR_NULL_ARGUMENT);
    prn_clear_error(g_ctx);
    expect_error("NULL re", prn_eigenvalues(g_ctx, 3, a, NULL, im), PRN_ERR_NULL_ARGUMENT);
    prn_clear_error(g_ctx);
    expect_error("NULL im", prn_eigenvalues(g_ctx, 3, a, re, NULL), PRN_ERR_NULL_ARGUMENT);
    prn_clear_error(g_ctx);
    expect_error("n = SIZE_MAX", prn_eigenvalues(g_ctx, (size_t)-1, a, re, im), PRN_ERR_INVALID_ARGUMENT);
    expect_error("n = 65537", prn_eigenvalues(g_ctx, 65537, a, re, im), PRN_ERR_INVALID_ARGUMENT);
    /* n = 0: fine, nothing written */
    re[0] = im[0] = -777.0;
    PRNT_OK(g_ctx, prn_eigenvalues(g_ctx, 0, a, re, im));
    PRNT_CHECK(re[0] == -777.0 && im[0] == -777.0, "n = 0 wrote an output");
    /* and it still works */
    PRNT_OK(g_ctx, prn_eigenvalues(g_ctx, 3, a, re, im));
    PRNT_CHECK(fabs(re[0] + re[1] + re[2] - 16) <= 1e-13, "trace: %.17g", re[0] + re[1] + re[2]);
}

int main(void) {
    g_ctx = prnt_context(1);
    if (!g_ctx) return 1;
    g_quick = getenv("PRNT_QUICK") != NULL;
#ifdef PARRNN_USE_LAPACK
    printf("prn_eigenvalues: LAPACK's dgeev (PARRNN_USE_LAPACK)\n");
#else
    printf("prn_eigenvalues: built-in Francis QR\n");
#endif
    PRNT_RUN(test_random);
    PRNT_RUN(test_scales);
    PRNT_RUN(test_tiny_scales);
    PRNT_RUN(test_graded);
    PRNT_RUN(test_scale_balance);
    PRNT_RUN(test_hessenberg_and_normal);
    PRNT_RUN(test_exact_structures);
    PRNT_RUN(test_jordan);
    PRNT_RUN(test_companion_and_permutations);
    PRNT_RUN(test_classic);
    PRNT_RUN(test_bad_input);
    prn_context_free(g_ctx);
    return prnt_summary();
}
