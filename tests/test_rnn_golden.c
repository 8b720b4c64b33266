/* Golden tests of prn_rnn (Elman tanh and relu, LSTM, GRU) against PyTorch:
 *   - fixtures tests/golden/{rnn_tanh,rnn_relu,lstm,gru}.txt, written by
 *     tests/golden/gen_golden.py from nn.RNN / nn.LSTM / nn.GRU (several
 *     sizes, batch 1 and 3, T 1 to 7, 1 and 2 layers, one and two
 *     directions, with and without state0), are committed: no Python here.
 *     $PRNT_GOLDEN_DIR overrides the directory; a missing fixture fails.
 *   - per case, in f32 and f64: the weights are uploaded by PyTorch's names,
 *     x and state0 require grad; y, the final state, the loss
 *     sum(y Ry) + sum(h_n Rh) (+ sum(c_n Rc)) and the gradients of every
 *     parameter, x and state0 are compared with PyTorch's (f64 reference).
 *     parrnn's LSTM state is [L*D, B, 2H] with h then c along the last axis:
 *     PyTorch's h0 and c0 are combined into it, its gradient split back.
 *   - the parameter list (prn_rnn_params order, names, shapes) is PyTorch's
 *     state_dict; a network exported by name into the fixture format loads
 *     into a fresh network (and, with PRNT_GOLDEN_EXPORT=FILE, into torch:
 *     gen_golden.py --check-export FILE), so weights go both ways by name.
 *
 * Fixture format (see gen_golden.py): "parrnn-golden 1", then per case
 * "case NAME", "key value" lines (kind input_size hidden_size num_layers
 * bidirectional batch seq_len state0 f32_inputs), blocks "param|tensor NAME NDIM
 * D0 .. Dn-1" followed by the values (row-major), and "end". '#' starts a
 * comment line. With f32_inputs 1 the param blocks and x, h0, c0, Ry, Rh,
 * Rc are float32 values printed with %.9g: they are rounded to float.
 *
 * Tolerances: outputs (y, final state, loss) max |a - r| / max(1, |r|)
 * (prnt_max_rel_err); gradients max |a - r| / max |r| over the tensor (an
 * elementwise relative error is meaningless for entries that cancel to
 * near zero; the tensor's scale is what float32 rounding is relative to).
 * f32: outputs 1e-5, gradients 1e-4; f64: both 1e-10. */
#include "parrnn.h"
#include "prn_test.h"

static prn_context *ctx;

/* ---- fixtures -------------------------------------------------------------- */
#define G_MAX_TENSORS 64
typedef struct {
    char name[64];
    int is_param; /* a "param" block (state_dict entry) */
    int ndim;
    size_t dims[4], n;
    double *v;
} gtensor;

typedef struct {
    char name[96], kind[16];
    size_t isz, hsz, bsz, tsz; /* I, H, B, T (I itself is a macro once OpenBLAS includes complex.h) */
    int L, bi, state0;
    int f32_inputs; /* param blocks and x, h0, c0, R* are float32 values */
    int nt;
    gtensor t[G_MAX_TENSORS];
} gcase;

typedef struct {
    const char *kind; /* file name without .txt, and the kind field */
    int ncases;
    gcase *cases;
    char error[1536]; /* why loading failed ("" when it did not) */
} gfile;

static const char *const kind_names[] = {"rnn_tanh", "rnn_relu", "lstm", "gru"};
#define NFILES 4
static gfile files[NFILES];

/* Next token; '#' starts a comment to the end of the line. 0 at EOF. */
static int next_tok(FILE *f, char *tok, size_t size) {
    int c;
    size_t n = 0;
    for (;;) {
        c = getc(f);
        if (c == EOF) return 0;
        if (c == '#') {
            while (c != '\n' && c != EOF) c = getc(f);
            continue;
        }
        if (c != ' ' && c != '\n' && c != '\t' && c != '\r') break;
    }
    while (c != EOF && c != ' ' && c != '\n' && c != '\t' && c != '\r') {
        if (n + 1 < size) tok[n++] = (char)c;
        c = getc(f);
    }
    tok[n] = 0;
    return 1;
}

static int tok_size(FILE *f, size_t *v) {
    char tok[64], *end;
    unsigned long u;
    if (!next_tok(f, tok, sizeof tok)) return 0;
    u = strtoul(tok, &end, 10);
    if (*end || end == tok) return 0;
    *v = (size_t)u;
    return 1;
}

static void free_case(gcase *c) {
    int k;
    for (k = 0; k < c->nt; ++k) free(c->t[k].v);
    c->nt = 0;
}
static void free_cases(gcase *cs, int n) {
    int i;
    for (i = 0; i < n; ++i) free_case(&cs[i]);
    free(cs);
}

/* Reads every case of f. Returns 1, or 0 with a message in err. */
static int read_cases(FILE *f, gcase **out, int *nout, char *err, size_t errsize) {
    char tok[128];
    gcase *cs = NULL, *c;
    int n = 0, cap = 0, ok = 0, i;
    if (!next_tok(f, tok, sizeof tok) || strcmp(tok, "parrnn-golden") != 0 || !next_tok(f, tok, sizeof tok) ||
        strcmp(tok, "1") != 0) {
        snprintf(err, errsize, "not a parrnn-golden version 1 file");
        return 0;
    }
    while (next_tok(f, tok, sizeof tok)) {
        if (strcmp(tok, "case") != 0) { snprintf(err, errsize, "expected 'case', read '%s'", tok); goto done; }
        if (n == cap) {
            gcase *g;
            cap = cap ? 2 * cap : 8;
            g = (gcase *)realloc(cs, (size_t)cap * sizeof *cs);
            if (!g) { snprintf(err, errsize, "out of memory"); goto done; }
            cs = g;
        }
        c = &cs[n++];
        memset(c, 0, sizeof *c);
        if (!next_tok(f, c->name, sizeof c->name)) { snprintf(err, errsize, "truncated case"); goto done; }
        for (;;) {
            size_t v;
            if (!next_tok(f, tok, sizeof tok)) { snprintf(err, errsize, "%s: no 'end'", c->name); goto done; }
            if (strcmp(tok, "end") == 0) break;
            if (strcmp(tok, "param") == 0 || strcmp(tok, "tensor") == 0) {
                gtensor *t;
                size_t i, nd;
                if (c->nt == G_MAX_TENSORS) { snprintf(err, errsize, "%s: too many tensors", c->name); goto done; }
                t = &c->t[c->nt];
                memset(t, 0, sizeof *t);
                t->is_param = tok[0] == 'p';
                if (!next_tok(f, t->name, sizeof t->name) || !tok_size(f, &nd) || nd > 4) {
                    snprintf(err, errsize, "%s: bad block header", c->name);
                    goto done;
                }
                t->ndim = (int)nd;
                t->n = 1;
                for (i = 0; i < nd; ++i) {
                    if (!tok_size(f, &t->dims[i])) { snprintf(err, errsize, "%s: bad shape of %s", c->name, t->name); goto done; }
                    t->n *= t->dims[i];
                }
                t->v = (double *)malloc((t->n ? t->n : 1) * sizeof(double));
                if (!t->v) { snprintf(err, errsize, "out of memory"); goto done; }
                c->nt++;
                for (i = 0; i < t->n; ++i) {
                    char *end;
                    if (!next_tok(f, tok, sizeof tok)) { snprintf(err, errsize, "%s: %s truncated", c->name, t->name); goto done; }
                    t->v[i] = strtod(tok, &end);
                    if (*end || end == tok) { snprintf(err, errsize, "%s: %s: bad number '%s'", c->name, t->name, tok); goto done; }
                }
            } else if (strcmp(tok, "kind") == 0) {
                if (!next_tok(f, c->kind, sizeof c->kind)) { snprintf(err, errsize, "%s: no kind", c->name); goto done; }
            } else {
                char key[128];
                snprintf(key, sizeof key, "%s", tok);
                if (!tok_size(f, &v)) { snprintf(err, errsize, "%s: bad value of %s", c->name, key); goto done; }
                if (strcmp(key, "input_size") == 0) c->isz = v;
                else if (strcmp(key, "hidden_size") == 0) c->hsz = v;
                else if (strcmp(key, "num_layers") == 0) c->L = (int)v;
                else if (strcmp(key, "bidirectional") == 0) c->bi = (int)v;
                else if (strcmp(key, "batch") == 0) c->bsz = v;
                else if (strcmp(key, "seq_len") == 0) c->tsz = v;
                else if (strcmp(key, "state0") == 0) c->state0 = (int)v;
                else if (strcmp(key, "f32_inputs") == 0) c->f32_inputs = (int)v;
                else { snprintf(err, errsize, "%s: unknown key '%s'", c->name, key); goto done; }
            }
        }
    }
    /* %.9g of a float32 read as a double is not that float32: round */
    for (i = 0; i < n; ++i)
        if (cs[i].f32_inputs) {
            int k;
            for (k = 0; k < cs[i].nt; ++k) {
                gtensor *t = &cs[i].t[k];
                static const char *const inputs[] = {"x", "h0", "c0", "Ry", "Rh", "Rc"};
                size_t j, m, inp = 0;
                for (m = 0; m < 6; ++m) inp |= strcmp(t->name, inputs[m]) == 0;
                if (t->is_param || inp)
                    for (j = 0; j < t->n; ++j) t->v[j] = (double)(float)t->v[j];
            }
        }
    ok = 1;
done:
    if (!ok) { free_cases(cs, n); cs = NULL; n = 0; }
    *out = cs;
    *nout = n;
    return ok;
}

static const char *golden_dir(void) {
    const char *d = getenv("PRNT_GOLDEN_DIR");
    return d && *d ? d : "tests/golden";
}

static void load_files(void) {
    int i;
    for (i = 0; i < NFILES; ++i) {
        char path[1024], why[256];
        FILE *f;
        gfile *g = &files[i];
        g->kind = kind_names[i];
        snprintf(path, sizeof path, "%s/%s.txt", golden_dir(), g->kind);
        f = fopen(path, "r");
        if (!f) {
            snprintf(g->error, sizeof g->error,
                     "cannot open fixture %s (the fixtures are committed under tests/golden; run from the repository "
                     "root or set PRNT_GOLDEN_DIR)", path);
            continue;
        }
        if (!read_cases(f, &g->cases, &g->ncases, why, sizeof why)) {
            snprintf(g->error, sizeof g->error, "%s: %s", path, why);
        } else if (g->ncases == 0) {
            snprintf(g->error, sizeof g->error, "%s: no cases", path);
        }
        fclose(f);
    }
}

static const gtensor *find(const gcase *c, const char *name) {
    int k;
    for (k = 0; k < c->nt; ++k)
        if (strcmp(c->t[k].name, name) == 0) return &c->t[k];
    return NULL;
}

/* ---- host <-> tensors ---------------------------------------------------- */
static double *dalloc(size_t n) { return (double *)calloc(n ? n : 1, sizeof(double)); }

static prn_tensor *make_tensor(prn_dtype dt, int nd, const size_t *shape, const double *v) {
    prn_tensor *t = NULL;
    PRNT_OK(ctx, prn_tensor_create(ctx, dt, nd, shape, &t));
    if (t && v) PRNT_OK(ctx, prnt_upload_f64(t, v));
    return t;
}

static int shape_is(const prn_tensor *t, int nd, const size_t *dims) {
    int k;
    if (!t || prn_tensor_ndim(t) != nd) return 0;
    for (k = 0; k < nd; ++k)
        if (prn_tensor_dim(t, k) != dims[k]) return 0;
    return 1;
}

/* ---- comparisons ------------------------------------------------------------ */
static double worst_out[2], worst_grad[2]; /* [dtype == f32] */

/* max |a - r| / max |r| (see the top of the file) */
static double grad_err(const double *a, const double *r, size_t n) {
    double m = 0, s = 0;
    size_t i;
    for (i = 0; i < n; ++i) {
        double d = fabs(a[i] - r[i]);
        if (!(d <= m)) m = d; /* NaN counts as the worst */
        if (fabs(r[i]) > s) s = fabs(r[i]);
    }
    return m / (s > 1e-30 ? s : 1e-30);
}

static void compare(const char *desc, prn_dtype dt, const char *what, int is_grad, const double *got, const double *ref,
                    size_t n) {
    int f32 = dt == PRN_F32;
    double tol = !f32 ? 1e-10 : is_grad ? 1e-4 : 1e-5;
    double e = is_grad ? grad_err(got, ref, n) : prnt_max_rel_err(got, ref, n);
    double *w = is_grad ? &worst_grad[f32] : &worst_out[f32];
    if (!(e <= *w)) *w = e;
    PRNT_CHECK(e <= tol, "%s %s: %s: error %.3g > %.0e", desc, prn_dtype_name(dt), what, e, tol);
    if (!(e <= tol)) { /* where: the worst element */
        size_t i, wi = 0;
        double wd = -1;
        for (i = 0; i < n; ++i) {
            double d = fabs(got[i] - ref[i]);
            if (!(d <= wd)) { wd = d; wi = i; }
        }
        printf("      worst element %zu of %zu: got %.10g, PyTorch %.10g\n", wi, n, got[wi], ref[wi]);
    }
}

/* ---- one fixture case -------------------------------------------------------- */
static prn_rnn_config config_of(const gcase *c, prn_dtype dt) {
    prn_rnn_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = strcmp(c->kind, "lstm") == 0 ? PRN_RNN_LSTM : strcmp(c->kind, "gru") == 0 ? PRN_RNN_GRU : PRN_RNN_ELMAN;
    cfg.relu = strcmp(c->kind, "rnn_relu") == 0;
    cfg.dtype = dt;
    cfg.input_size = c->isz;
    cfg.hidden_size = c->hsz;
    cfg.num_layers = c->L;
    cfg.bidirectional = c->bi;
    return cfg;
}

/* Uploads the fixture's parameters by name; 1 when all went in. */
static int load_params(prn_rnn *rnn, const gcase *c, const char *desc) {
    int k, np = 0, ok = 1;
    for (k = 0; k < c->nt; ++k) {
        const gtensor *g = &c->t[k];
        prn_tensor *p;
        if (!g->is_param) continue;
        np++;
        p = prn_rnn_param(rnn, g->name);
        PRNT_CHECK(p != NULL, "%s: no parameter named %s", desc, g->name);
        if (!p) { ok = 0; continue; }
        PRNT_CHECK(shape_is(p, g->ndim, g->dims), "%s: %s has another shape than PyTorch's", desc, g->name);
        if (prn_tensor_numel(p) != g->n) { ok = 0; continue; }
        PRNT_OK(ctx, prnt_upload_f64(p, g->v));
    }
    /* every parameter of the network came from the fixture */
    PRNT_CHECK(prn_rnn_params(rnn, NULL, 0) == np, "%s: the network has %d parameters, PyTorch %d", desc,
               prn_rnn_params(rnn, NULL, 0), np);
    return ok && prn_rnn_params(rnn, NULL, 0) == np;
}

static void run_case(const gcase *c, prn_dtype dt) {
    int lstm = strcmp(c->kind, "lstm") == 0, k;
    size_t D = c->bi ? 2 : 1, LD = (size_t)c->L * D, H = c->hsz, B = c->bsz, T = c->tsz, S = lstm ? 2 * H : H;
    size_t nx = B * c->tsz * c->isz, ny = B * T * D * H, ns = LD * B * S, nh = LD * B * H, i;
    size_t xs[3], ys[3], ss[3];
    const gtensor *gx = find(c, "x"), *gh0 = find(c, "h0"), *gc0 = find(c, "c0"), *gRy = find(c, "Ry"),
                  *gRh = find(c, "Rh"), *gRc = find(c, "Rc"), *gy = find(c, "y"), *ghn = find(c, "h_n"),
                  *gcn = find(c, "c_n"), *gl = find(c, "loss"), *ggx = find(c, "grad.x"), *ggh0 = find(c, "grad.h0"),
                  *ggc0 = find(c, "grad.c0");
    prn_rnn_config cfg = config_of(c, dt);
    prn_rnn *rnn = NULL;
    prn_tensor *x = NULL, *s0 = NULL, *y = NULL, *st = NULL, *Ry = NULL, *Rs = NULL, *p1 = NULL, *p2 = NULL, *l1 = NULL,
               *l2 = NULL, *L = NULL;
    double *hs0 = dalloc(ns), *hRs = dalloc(ns), *got = dalloc(ns > ny ? (ns > nx ? ns : nx) : (ny > nx ? ny : nx));
    double *a = dalloc(nh), *b = dalloc(nh), loss = 0;
    char desc[128];
    snprintf(desc, sizeof desc, "%s", c->name);
    if (!gx || !gRy || !gRh || !gy || !ghn || !gl || !ggx || (lstm && (!gRc || !gcn)) ||
        (c->state0 && (!gh0 || !ggh0 || (lstm && (!gc0 || !ggc0))))) {
        PRNT_CHECK(0, "%s: the fixture lacks a tensor", desc);
        goto done;
    }
    PRNT_CHECK(gx->n == nx && gy->n == ny && ghn->n == nh, "%s: fixture shapes disagree with its config", desc);
    if (gx->n != nx || gy->n != ny || ghn->n != nh) goto done;
    PRNT_OK(ctx, prn_rnn_create(ctx, &cfg, &rnn));
    if (!rnn) goto done;
    PRNT_CHECK(prn_rnn_state_size(rnn) == S, "%s: state size %zu, want %zu", desc, prn_rnn_state_size(rnn), S);
    PRNT_CHECK(prn_rnn_output_size(rnn) == D * H, "%s: output size %zu, want %zu", desc, prn_rnn_output_size(rnn), D * H);
    if (!load_params(rnn, c, desc)) goto done;

    /* state [L*D, B, S]: LSTM rows are h then c; Rs likewise from Rh, Rc */
    for (i = 0; i < nh; ++i) {
        size_t r = i / H, j = i % H;
        if (c->state0) hs0[r * S + j] = gh0->v[i];
        hRs[r * S + j] = gRh->v[i];
        if (lstm) {
            if (c->state0) hs0[r * S + H + j] = gc0->v[i];
            hRs[r * S + H + j] = gRc->v[i];
        }
    }
    xs[0] = B; xs[1] = T; xs[2] = c->isz;
    ys[0] = B; ys[1] = T; ys[2] = D * H;
    ss[0] = LD; ss[1] = B; ss[2] = S;
    x = make_tensor(dt, 3, xs, gx->v);
    Ry = make_tensor(dt, 3, ys, gRy->v);
    Rs = make_tensor(dt, 3, ss, hRs);
    if (!x || !Ry || !Rs) goto done;
    PRNT_OK(ctx, prn_tensor_set_requires_grad(x, 1));
    if (c->state0) {
        s0 = make_tensor(dt, 3, ss, hs0);
        if (!s0) goto done;
        PRNT_OK(ctx, prn_tensor_set_requires_grad(s0, 1));
    }

    PRNT_OK(ctx, prn_rnn_forward(ctx, rnn, x, s0, &y, &st));
    if (!y || !st) goto done;
    PRNT_CHECK(shape_is(y, 3, ys), "%s: y is not [B, T, D*H]", desc);
    PRNT_CHECK(shape_is(st, 3, ss), "%s: the final state is not [L*D, B, S]", desc);
    if (!shape_is(y, 3, ys) || !shape_is(st, 3, ss)) goto done;
    PRNT_OK(ctx, prn_mul(ctx, y, Ry, &p1));
    if (p1) PRNT_OK(ctx, prn_sum(ctx, p1, PRN_ALL_AXES, 0, &l1));
    PRNT_OK(ctx, prn_mul(ctx, st, Rs, &p2));
    if (p2) PRNT_OK(ctx, prn_sum(ctx, p2, PRN_ALL_AXES, 0, &l2));
    if (l1 && l2) PRNT_OK(ctx, prn_add(ctx, l1, l2, &L));
    if (!L) goto done;

    PRNT_OK(ctx, prnt_download_f64(y, got));
    compare(desc, dt, "y", 0, got, gy->v, ny);
    PRNT_OK(ctx, prnt_download_f64(st, hs0));
    for (i = 0; i < nh; ++i) {
        a[i] = hs0[i / H * S + i % H];
        if (lstm) b[i] = hs0[i / H * S + H + i % H];
    }
    compare(desc, dt, "h_n", 0, a, ghn->v, nh);
    if (lstm) compare(desc, dt, "c_n", 0, b, gcn->v, nh);
    PRNT_OK(ctx, prn_tensor_item(L, &loss));
    compare(desc, dt, "loss", 0, &loss, gl->v, 1);

    PRNT_OK(ctx, prn_backward(ctx, L));
    PRNT_CHECK(prn_tape_size(ctx) == 0, "%s: tape not empty after backward", desc);
    for (k = 0; k < c->nt; ++k) {
        const gtensor *g = &c->t[k], *gg;
        prn_tensor *p, *gp;
        char gname[80];
        double *v;
        if (!g->is_param) continue;
        snprintf(gname, sizeof gname, "grad.%s", g->name);
        gg = find(c, gname);
        p = prn_rnn_param(rnn, g->name);
        gp = p ? prn_tensor_grad(p) : NULL;
        PRNT_CHECK(gg && gg->n == g->n, "%s: the fixture lacks %s", desc, gname);
        PRNT_CHECK(gp != NULL, "%s: no gradient for %s", desc, g->name);
        if (!gg || gg->n != g->n || !gp || prn_tensor_numel(gp) != g->n) continue;
        v = dalloc(g->n);
        PRNT_OK(ctx, prnt_download_f64(gp, v));
        compare(desc, dt, gname, 1, v, gg->v, g->n);
        free(v);
    }
    PRNT_CHECK(prn_tensor_grad(x) != NULL, "%s: no gradient for x", desc);
    if (prn_tensor_grad(x)) {
        PRNT_OK(ctx, prnt_download_f64(prn_tensor_grad(x), got));
        compare(desc, dt, "grad.x", 1, got, ggx->v, nx);
    }
    if (s0) {
        PRNT_CHECK(prn_tensor_grad(s0) != NULL, "%s: no gradient for state0", desc);
        if (prn_tensor_grad(s0)) {
            PRNT_OK(ctx, prnt_download_f64(prn_tensor_grad(s0), hs0));
            for (i = 0; i < nh; ++i) {
                a[i] = hs0[i / H * S + i % H];
                if (lstm) b[i] = hs0[i / H * S + H + i % H];
            }
            compare(desc, dt, "grad.h0", 1, a, ggh0->v, nh);
            if (lstm) compare(desc, dt, "grad.c0", 1, b, ggc0->v, nh);
        }
    }
done:
    prn_tape_clear(ctx);
    prn_tensor_free(x); prn_tensor_free(s0); prn_tensor_free(y); prn_tensor_free(st); prn_tensor_free(Ry);
    prn_tensor_free(Rs); prn_tensor_free(p1); prn_tensor_free(p2); prn_tensor_free(l1); prn_tensor_free(l2);
    prn_tensor_free(L);
    prn_rnn_free(rnn);
    free(hs0); free(hRs); free(got); free(a); free(b);
}

static void golden_kind(int f) {
    size_t live = prn_live_tensors(ctx);
    int i;
    PRNT_CHECK(files[f].error[0] == 0, "%s", files[f].error);
    for (i = 0; i < files[f].ncases; ++i) {
        run_case(&files[f].cases[i], PRN_F32);
        run_case(&files[f].cases[i], PRN_F64);
    }
    PRNT_CHECK(prn_live_tensors(ctx) == live, "live tensors %zu, want %zu", prn_live_tensors(ctx), live);
}
static void test_golden_rnn_tanh(void) { golden_kind(0); }
static void test_golden_rnn_relu(void) { golden_kind(1); }
static void test_golden_lstm(void) { golden_kind(2); }
static void test_golden_gru(void) { golden_kind(3); }

/* ---- names: parrnn's parameter list is PyTorch's state_dict ---------------- */
/* prn_rnn_params order, prn_rnn_param_name and the shapes equal the
 * fixture's param blocks (state_dict order), so a state_dict copies over
 * by name in both directions. */
static void check_names(const prn_rnn *rnn, const gcase *c, const char *desc) {
    prn_tensor *ps[G_MAX_TENSORS];
    int np = prn_rnn_params(rnn, ps, G_MAX_TENSORS), k, j = 0;
    for (k = 0; k < c->nt; ++k) {
        const gtensor *g = &c->t[k];
        const char *nm;
        if (!g->is_param) continue;
        PRNT_CHECK(j < np, "%s: parrnn lists %d parameters, PyTorch more", desc, np);
        if (j >= np) return;
        nm = prn_rnn_param_name(rnn, j);
        PRNT_CHECK(nm && strcmp(nm, g->name) == 0, "%s: parameter %d is %s, PyTorch's %s", desc, j, nm ? nm : "(null)",
                   g->name);
        PRNT_CHECK(shape_is(ps[j], g->ndim, g->dims), "%s: %s's shape differs from PyTorch's", desc, g->name);
        PRNT_CHECK(prn_rnn_param(rnn, g->name) == ps[j], "%s: prn_rnn_param(%s) is not parameter %d", desc, g->name, j);
        j++;
    }
    PRNT_CHECK(j == np, "%s: parrnn lists %d parameters, PyTorch %d", desc, np, j);
    PRNT_CHECK(prn_rnn_param_name(rnn, np) == NULL || prn_rnn_param_name(rnn, np)[0] == 0,
               "%s: a name past the last parameter", desc);
}

static void test_param_names(void) {
    int f, i;
    for (f = 0; f < NFILES; ++f) {
        PRNT_CHECK(files[f].error[0] == 0, "%s", files[f].error);
        for (i = 0; i < files[f].ncases; ++i) {
            const gcase *c = &files[f].cases[i];
            prn_rnn_config cfg = config_of(c, PRN_F32);
            prn_rnn *rnn = NULL;
            PRNT_OK(ctx, prn_rnn_create(ctx, &cfg, &rnn));
            if (rnn) check_names(rnn, c, c->name);
            prn_rnn_free(rnn);
        }
    }
}

/* ---- exchange: parrnn -> file by name -> a fresh network (or torch) ------------ */
static void write_block(FILE *f, const char *head, const char *name, const prn_tensor *t, const double *v) {
    size_t n = prn_tensor_numel(t), i;
    int k;
    fprintf(f, "%s %s %d", head, name, prn_tensor_ndim(t));
    for (k = 0; k < prn_tensor_ndim(t); ++k) fprintf(f, " %zu", prn_tensor_dim(t, k));
    for (i = 0; i < n; ++i) fprintf(f, "%s%.17g", i % 6 ? " " : "\n", v[i]);
    fprintf(f, "\n");
}

/* For one stacked bidirectional case of each kind: a network initialised by
 * parrnn (f64) writes its parameters by prn_rnn_param_name, plus x and its
 * y, in the fixture format; read back with the fixtures' reader, the names
 * and shapes are PyTorch's (those of the torch fixture), and a fresh network
 * (another seed) loaded by name gives the same y bit for bit. */
static void test_exchange(void) {
    const char *path = getenv("PRNT_GOLDEN_EXPORT");
    FILE *f = path && *path ? fopen(path, "w+") : tmpfile();
    size_t live = prn_live_tensors(ctx);
    int fi, nread = 0, ncase = 0;
    gcase *back = NULL;
    char err[256];
    const gcase *src[NFILES];
    PRNT_CHECK(f != NULL, "cannot open %s", path && *path ? path : "a temporary file");
    if (!f) return;
    fprintf(f, "# exported by tests/test_rnn_golden.c\nparrnn-golden 1\n");
    for (fi = 0; fi < NFILES; ++fi) {
        const gcase *c = NULL;
        prn_rnn_config cfg;
        prn_rnn *rnn = NULL;
        prn_tensor *ps[G_MAX_TENSORS], *x = NULL, *y = NULL;
        const gtensor *gx;
        int np, k;
        size_t xs[3];
        src[fi] = NULL;
        PRNT_CHECK(files[fi].error[0] == 0, "%s", files[fi].error);
        for (k = 0; k < files[fi].ncases; ++k) /* the first stacked bidirectional case */
            if (!c && files[fi].cases[k].L > 1 && files[fi].cases[k].bi) c = &files[fi].cases[k];
        if (!c) continue;
        gx = find(c, "x");
        if (!gx) continue;
        cfg = config_of(c, PRN_F64);
        prn_seed(ctx, 1000 + (uint64_t)fi);
        PRNT_OK(ctx, prn_rnn_create(ctx, &cfg, &rnn));
        if (!rnn) continue;
        xs[0] = c->bsz; xs[1] = c->tsz; xs[2] = c->isz;
        x = make_tensor(PRN_F64, 3, xs, gx->v);
        if (x) PRNT_OK(ctx, prn_rnn_forward(ctx, rnn, x, NULL, &y, NULL));
        if (x && y) {
            fprintf(f, "case export_%s\nkind %s\ninput_size %zu\nhidden_size %zu\nnum_layers %d\nbidirectional %d\n"
                       "batch %zu\nseq_len %zu\nstate0 0\n", c->name, c->kind, c->isz, c->hsz, c->L, c->bi, c->bsz, c->tsz);
            np = prn_rnn_params(rnn, ps, G_MAX_TENSORS);
            for (k = 0; k < np; ++k) {
                double *v = dalloc(prn_tensor_numel(ps[k]));
                PRNT_OK(ctx, prnt_download_f64(ps[k], v));
                write_block(f, "param", prn_rnn_param_name(rnn, k), ps[k], v);
                free(v);
            }
            write_block(f, "tensor", "x", x, gx->v);
            {
                double *v = dalloc(prn_tensor_numel(y));
                PRNT_OK(ctx, prnt_download_f64(y, v));
                write_block(f, "tensor", "y", y, v);
                free(v);
            }
            fprintf(f, "end\n");
            src[ncase++] = c;
        }
        prn_tape_clear(ctx);
        prn_tensor_free(x); prn_tensor_free(y);
        prn_rnn_free(rnn);
    }
    PRNT_CHECK(fflush(f) == 0, "writing the export failed");
    rewind(f);
    PRNT_CHECK(read_cases(f, &back, &nread, err, sizeof err), "reading the export back: %s", err);
    fclose(f);
    PRNT_CHECK(nread == ncase, "read %d cases back, wrote %d", nread, ncase);
    for (fi = 0; fi < nread && fi < ncase; ++fi) {
        const gcase *c = &back[fi];
        prn_rnn_config cfg = config_of(c, PRN_F64);
        prn_rnn *rnn = NULL;
        prn_tensor *x = NULL, *y = NULL;
        const gtensor *gx = find(c, "x"), *gy = find(c, "y");
        size_t xs[3];
        double *v;
        /* what parrnn wrote names and shapes its parameters as torch does */
        PRNT_CHECK(strcmp(c->kind, src[fi]->kind) == 0, "%s: kind %s read back", c->name, c->kind);
        prn_seed(ctx, 2000 + (uint64_t)fi); /* another initialisation, overwritten by the load */
        PRNT_OK(ctx, prn_rnn_create(ctx, &cfg, &rnn));
        if (!rnn || !gx || !gy) { prn_rnn_free(rnn); PRNT_CHECK(gx && gy, "%s: x or y missing", c->name); continue; }
        check_names(rnn, src[fi], c->name);
        if (load_params(rnn, c, c->name)) {
            xs[0] = c->bsz; xs[1] = c->tsz; xs[2] = c->isz;
            x = make_tensor(PRN_F64, 3, xs, gx->v);
            if (x) PRNT_OK(ctx, prn_rnn_forward(ctx, rnn, x, NULL, &y, NULL));
            if (y && prn_tensor_numel(y) == gy->n) {
                v = dalloc(gy->n);
                PRNT_OK(ctx, prnt_download_f64(y, v));
                PRNT_CHECK(memcmp(v, gy->v, gy->n * sizeof(double)) == 0,
                           "%s: the network loaded by name differs from the exported one (rel err %.3g)", c->name,
                           prnt_max_rel_err(v, gy->v, gy->n));
                free(v);
            } else {
                PRNT_CHECK(0, "%s: no y of the exported size", c->name);
            }
        }
        prn_tape_clear(ctx);
        prn_tensor_free(x); prn_tensor_free(y);
        prn_rnn_free(rnn);
    }
    if (path && *path) printf("    exported %d networks to %s (check: gen_golden.py --check-export)\n", ncase, path);
    free_cases(back, nread);
    PRNT_CHECK(prn_live_tensors(ctx) == live, "live tensors %zu, want %zu", prn_live_tensors(ctx), live);
}

int main(void) {
    int f, n = 0;
    ctx = prnt_context(20240611);
    if (!ctx) return 1;
    load_files();
    for (f = 0; f < NFILES; ++f) {
        if (files[f].error[0]) printf("fixture error: %s\n", files[f].error);
        n += files[f].ncases;
    }
    printf("golden cases: %d from %s\n", n, golden_dir());
    PRNT_RUN(test_param_names);
    PRNT_RUN(test_golden_rnn_tanh);
    PRNT_RUN(test_golden_rnn_relu);
    PRNT_RUN(test_golden_lstm);
    PRNT_RUN(test_golden_gru);
    PRNT_RUN(test_exchange);
    printf("    worst error vs PyTorch: outputs f64 %.2e f32 %.2e, gradients f64 %.2e f32 %.2e\n", worst_out[0],
           worst_out[1], worst_grad[0], worst_grad[1]);
    for (f = 0; f < NFILES; ++f) free_cases(files[f].cases, files[f].ncases);
    prn_context_free(ctx);
    return prnt_summary();
}
