/* A property test of the tape: random graphs of recorded ops (reused and
 * shared inputs, views, custom ops whose backwards pass grad_output through,
 * hand back an input or fill two slots with one tensor), several losses per
 * graph, each with its own prn_backward (prn_backward_retain where a later
 * loss shares records, or by chance, followed by a second pass). Checked:
 *   - the gradients against central finite differences (f64) of the sum of
 *     the losses, each counted once per backward pass made on it;
 *   - a second run of the same graph, rebuilt, gives bit-identical gradients;
 *   - a backward again on a loss whose records were released fails with
 *     PRN_ERR_STATE and changes no gradient;
 *   - (some graphs) a parameter written after the forward: the backward
 *     fails with PRN_ERR_STATE and changes no gradient;
 *   - nothing leaks: after the graph is freed and the tape cleared, the live
 *     tensors are the leaves and their gradients.
 * Deterministic: graph g uses seed BASE + g; a failing case prints its seed,
 * and `test_tape_prop SEED` runs that one graph alone. */
#include "parrnn.h"
#include "prn_test.h"
#include <stdint.h>

#define NGRAPHS 300
#define BASE_SEED 20261127u
#define MAXV 48    /* values of a graph (leaves + instructions) */
#define MAXL 4     /* losses */
#define NPARAM 3   /* vector parameters [S], plus the matrix W [S, S] */
#define NCONST 2   /* vector constants [S] */

static prn_context *ctx;
static int verbose;
/* what the graphs covered, printed at the end */
static long n_orphan, n_graphs, n_values, n_losses, n_passes, n_retained, n_again, n_written, n_fd, n_op[32];

/* ---- a small generator (splitmix64) -------------------------------------- */
static uint64_t rng_state;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int rint_(int n) { return (int)(rnd() % (uint64_t)n); }
static double runif(double lo, double hi) { return lo + (hi - lo) * (double)(rnd() >> 11) / 9007199254740992.0; }

/* ---- custom ops ---------------------------------------------------------- */
/* identity: grad_output passed through as it is */
static prn_status ident_bw(prn_context *c, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    (void)c; (void)op;
    gin[0] = g;
    return PRN_OK;
}
/* a + b (same shape): one borrowed tensor in both slots */
static prn_status add2_bw(prn_context *c, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    (void)c;
    if (op->needs_grad[0]) gin[0] = g;
    if (op->needs_grad[1]) gin[1] = g;
    return PRN_OK;
}
/* 2 x: a new tensor */
static prn_status twice_bw(prn_context *c, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    (void)op;
    return prn_scale(c, g, 2.0, &gin[0]);
}
/* sum(a * b), only ever a loss (g == 1): d/da = b and d/db = a, handed back
 * as they are */
static prn_status dot_loss_bw(prn_context *c, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    double gv = 0;
    prn_status st = prn_tensor_item(g, &gv);
    if (st != PRN_OK) return st;
    if (gv != 1.0) return prn_set_error(c, PRN_ERR_STATE, "dot_loss_bw: grad_output is %g, not the seed 1", gv);
    if (op->needs_grad[0]) gin[0] = op->inputs[1];
    if (op->needs_grad[1]) gin[1] = op->inputs[0];
    return PRN_OK;
}

/* Computes y with recording off and records it as a custom op. */
static prn_status custom(const char *name, prn_tensor **in, int n, int kind, prn_backward_fn bw, prn_tensor **out) {
    prn_tensor *y = NULL, *t = NULL;
    prn_status st;
    prn_no_grad_begin(ctx);
    switch (kind) {
    case 0: st = prn_copy(ctx, in[0], &y); break;
    case 1: st = prn_add(ctx, in[0], in[1], &y); break;
    case 2: st = prn_scale(ctx, in[0], 2.0, &y); break;
    default:
        st = prn_mul(ctx, in[0], in[1], &t);
        if (st == PRN_OK) st = prn_sum(ctx, t, PRN_ALL_AXES, 0, &y);
        prn_tensor_free(t);
    }
    prn_no_grad_end(ctx);
    if (st == PRN_OK && prn_grad_enabled(ctx)) st = prn_tape_record(ctx, name, in, n, y, bw, NULL, NULL);
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    *out = y;
    return PRN_OK;
}

/* ---- graphs -------------------------------------------------------------- */
enum { K_VEC, K_SCALAR, K_MAT };
enum {
    OP_TANH, OP_SIGMOID, OP_EXPTANH, OP_SCALE, OP_ADDSC, OP_NEG, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_SUM, OP_MEAN,
    OP_VIEWS, OP_MATMUL, OP_IDENT, OP_ADD2, OP_TWICE, OP_COUNT
};
enum { L_SUM, L_MEAN, L_DOT };

typedef struct { int op, a, b; double c; } instr;
typedef struct {
    size_t S;
    int nleaf, nv;
    int kind[MAXV];
    uint64_t params[MAXV]; /* which parameters a value depends on (bit per leaf) */
    uint64_t anc[MAXV];    /* which recorded values it depends on, itself included */
    instr ins[MAXV];
    int nl;
    int lform[MAXL], la[MAXL], lb[MAXL];
    int order[MAXL], retain[MAXL], again[MAXL];
    double leafv[NPARAM + 1 + NCONST][16];
    int poison; /* 1 + the parameter to write before the first backward; 0: none */
} graph;

static int pick(const graph *G, int want_kind) {
    int i, cand[MAXV], n = 0;
    for (i = 0; i < G->nv; ++i)
        if (G->kind[i] == want_kind || (want_kind < 0 && G->kind[i] != K_MAT)) cand[n++] = i;
    return n ? cand[rint_(n)] : -1;
}

static void make_graph(graph *G) {
    int i, nins = 6 + rint_(22), l;
    memset(G, 0, sizeof *G);
    G->S = (size_t)(1 + rint_(3));
    /* leaves: params 0..NPARAM-1 [S], W [S, S], constants [S] */
    for (i = 0; i < NPARAM + 1 + NCONST; ++i) {
        size_t k;
        G->kind[i] = i == NPARAM ? K_MAT : K_VEC;
        G->params[i] = i <= NPARAM ? 1ull << i : 0;
        for (k = 0; k < 16; ++k) G->leafv[i][k] = runif(-1, 1);
    }
    G->nleaf = G->nv = NPARAM + 1 + NCONST;
    for (i = 0; i < nins && G->nv < MAXV; ++i) {
        instr in;
        int v = G->nv, ka;
        in.op = rint_(OP_COUNT);
        in.a = pick(G, -1);
        ka = G->kind[in.a];
        in.b = -1;
        in.c = runif(-1.5, 1.5);
        switch (in.op) {
        case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV:
            in.b = pick(G, -1);
            G->kind[v] = ka == K_VEC || G->kind[in.b] == K_VEC ? K_VEC : K_SCALAR;
            break;
        case OP_ADD2:
            in.b = rint_(3) ? pick(G, ka) : in.a; /* sometimes op(x, x) */
            G->kind[v] = ka;
            break;
        case OP_SUM: case OP_MEAN: G->kind[v] = K_SCALAR; break;
        case OP_VIEWS: case OP_MATMUL:
            if (ka != K_VEC) in.op = OP_TANH;
            G->kind[v] = ka;
            break;
        default: G->kind[v] = ka;
        }
        G->params[v] = G->params[in.a] | (in.b >= 0 ? G->params[in.b] : 0) | (in.op == OP_MATMUL ? 1ull << NPARAM : 0);
        G->anc[v] = G->anc[in.a] | (in.b >= 0 ? G->anc[in.b] : 0) | (G->params[v] ? 1ull << v : 0);
        G->ins[v] = in;
        G->nv++;
    }
    /* losses over values that depend on a parameter */
    G->nl = 1 + rint_(MAXL);
    for (l = 0; l < G->nl; ++l) {
        int tries = 0, a;
        do a = rint_(G->nv); while ((!G->params[a] || G->kind[a] == K_MAT) && ++tries < 100);
        if (!G->params[a] || G->kind[a] == K_MAT) a = 0; /* parameter 0 itself */
        G->la[l] = a;
        G->lform[l] = G->kind[a] == K_VEC ? rint_(3) : L_SUM;
        G->lb[l] = G->lform[l] == L_DOT ? (rint_(4) ? pick(G, K_VEC) : a) : -1;
    }
    /* the schedule: a random order; retain where a later loss shares a
     * record; voluntary retains (then a second pass at the end) on losses
     * that share nothing */
    for (l = 0; l < G->nl; ++l) G->order[l] = l;
    for (l = G->nl - 1; l > 0; --l) { int j = rint_(l + 1), t = G->order[l]; G->order[l] = G->order[j]; G->order[j] = t; }
    for (l = 0; l < G->nl; ++l) {
        int j, lj = G->order[l], shares_later = 0, shares_any = 0;
        uint64_t al = G->anc[G->la[lj]] | (G->lb[lj] >= 0 ? G->anc[G->lb[lj]] : 0);
        for (j = 0; j < G->nl; ++j) {
            int lk = G->order[j];
            uint64_t ak = G->anc[G->la[lk]] | (G->lb[lk] >= 0 ? G->anc[G->lb[lk]] : 0);
            if (j == l || !(al & ak)) continue;
            shares_any = 1;
            if (j > l) shares_later = 1;
        }
        G->retain[lj] = shares_later || (!shares_any && rint_(4) == 0);
        G->again[lj] = G->retain[lj] && !shares_any;
    }
    G->poison = rint_(8) == 0 ? 1 + rint_(NPARAM) : 0;
    n_graphs++;
    n_values += G->nv;
    n_losses += G->nl;
    for (l = 0; l < G->nl; ++l) { n_passes += 1 + G->again[l]; n_retained += G->retain[l]; n_again += G->again[l]; }
    for (i = G->nleaf; i < G->nv; ++i) n_op[G->ins[i].op]++;
    n_written += G->poison != 0;
}

/* Runs the graph's forward (recorded when the caller has recording on):
 * v[] gets every value (leaves retained), L[] the losses. */
static prn_status forward(const graph *G, prn_tensor **leaves, prn_tensor **v, prn_tensor **L) {
    int i, l;
    prn_status st = PRN_OK;
    size_t S = G->S, row[2] = {1, S};
    for (i = 0; i < G->nleaf; ++i) v[i] = prn_tensor_retain(leaves[i]);
    for (i = G->nleaf; i < G->nv && st == PRN_OK; ++i) {
        const instr *in = &G->ins[i];
        prn_tensor *a = v[in->a], *b = in->b >= 0 ? v[in->b] : NULL, *t = NULL, *u = NULL, *pair[2];
        switch (in->op) {
        case OP_TANH: st = prn_tanh(ctx, a, &v[i]); break;
        case OP_SIGMOID: st = prn_sigmoid(ctx, a, &v[i]); break;
        case OP_EXPTANH:
            st = prn_tanh(ctx, a, &t);
            if (st == PRN_OK) st = prn_exp(ctx, t, &v[i]);
            break;
        case OP_SCALE: st = prn_scale(ctx, a, in->c, &v[i]); break;
        case OP_ADDSC: st = prn_add_scalar(ctx, a, in->c, &v[i]); break;
        case OP_NEG: st = prn_neg(ctx, a, &v[i]); break;
        case OP_ADD: st = prn_add(ctx, a, b, &v[i]); break;
        case OP_SUB: st = prn_sub(ctx, a, b, &v[i]); break;
        case OP_MUL: /* a * tanh(b): products of products stay bounded */
            st = prn_tanh(ctx, b, &t);
            if (st == PRN_OK) st = prn_mul(ctx, a, t, &v[i]);
            break;
        case OP_DIV: /* a / (1.5 + sigmoid(b)) */
            st = prn_sigmoid(ctx, b, &t);
            if (st == PRN_OK) st = prn_add_scalar(ctx, t, 1.5, &u);
            if (st == PRN_OK) st = prn_div(ctx, a, u, &v[i]);
            break;
        case OP_SUM: st = prn_sum(ctx, a, PRN_ALL_AXES, 0, &v[i]); break;
        case OP_MEAN: st = prn_mean(ctx, a, PRN_ALL_AXES, 0, &v[i]); break;
        case OP_VIEWS: /* [S] -> [1, S] -> [S]: views on a's storage */
            st = prn_reshape(ctx, a, 2, row, &t);
            if (st == PRN_OK) st = prn_reshape(ctx, t, 1, &S, &v[i]);
            break;
        case OP_MATMUL: /* a W */
            st = prn_reshape(ctx, a, 2, row, &t);
            if (st == PRN_OK) st = prn_matmul(ctx, t, v[NPARAM], &u);
            prn_tensor_free(t); t = NULL;
            if (st == PRN_OK) st = prn_tanh(ctx, u, &t);
            prn_tensor_free(u); u = NULL;
            if (st == PRN_OK) st = prn_reshape(ctx, t, 1, &S, &v[i]);
            break;
        case OP_IDENT: st = custom("ident", &a, 1, 0, ident_bw, &v[i]); break;
        case OP_ADD2:
            pair[0] = a; pair[1] = b;
            st = custom("add2", pair, 2, 1, add2_bw, &v[i]);
            break;
        default: st = custom("twice", &a, 1, 2, twice_bw, &v[i]); break;
        }
        prn_tensor_free(t); prn_tensor_free(u); /* the tape keeps what it needs */
    }
    for (l = 0; l < G->nl && st == PRN_OK; ++l) {
        prn_tensor *a = v[G->la[l]], *pair[2];
        switch (G->lform[l]) {
        case L_SUM: st = prn_sum(ctx, a, PRN_ALL_AXES, 0, &L[l]); break;
        case L_MEAN: st = prn_mean(ctx, a, PRN_ALL_AXES, 0, &L[l]); break;
        default:
            pair[0] = a; pair[1] = v[G->lb[l]];
            st = custom("dot_loss", pair, 2, 3, dot_loss_bw, &L[l]);
        }
    }
    return st;
}

static void free_values(const graph *G, prn_tensor **v, prn_tensor **L) {
    int i;
    for (i = 0; i < G->nv; ++i) { prn_tensor_free(v[i]); v[i] = NULL; }
    for (i = 0; i < G->nl; ++i) { prn_tensor_free(L[i]); L[i] = NULL; }
}

static int make_leaves(const graph *G, prn_tensor **leaves) {
    int i;
    for (i = 0; i < G->nleaf; ++i) {
        size_t sh[2] = {G->S, G->S};
        leaves[i] = NULL;
        if (prn_tensor_from_host(ctx, PRN_F64, i == NPARAM ? 2 : 1, sh, G->leafv[i], &leaves[i]) != PRN_OK) return 0;
        if (i <= NPARAM) prn_tensor_set_requires_grad(leaves[i], 1);
    }
    return 1;
}

/* Gradients of the parameters, flattened (0 where none); returns the count. */
static int grads(const graph *G, prn_tensor **leaves, double *out) {
    int i, n = 0;
    for (i = 0; i <= NPARAM; ++i) {
        size_t k, m = prn_tensor_numel(leaves[i]);
        prn_tensor *g = prn_tensor_grad(leaves[i]);
        double buf[16];
        if (g) prn_tensor_download(g, buf, m);
        for (k = 0; k < m; ++k) out[n++] = g ? buf[k] : 0.0;
    }
    (void)G;
    return n;
}

/* The schedule of backward passes; 0 on an unexpected status. */
static int run_schedule(const graph *G, prn_tensor **L, uint64_t seed) {
    int j;
    for (j = 0; j < G->nl; ++j) {
        int l = G->order[j];
        prn_status st = G->retain[l] ? prn_backward_retain(ctx, L[l]) : prn_backward(ctx, L[l]);
        if (st != PRN_OK) {
            printf("    seed %lu: backward of loss %d: %s\n", (unsigned long)seed, l, prn_last_error(ctx));
            return 0;
        }
    }
    for (j = 0; j < G->nl; ++j) {
        int l = G->order[j];
        if (G->again[l] && prn_backward(ctx, L[l]) != PRN_OK) {
            printf("    seed %lu: second backward of loss %d: %s\n", (unsigned long)seed, l, prn_last_error(ctx));
            return 0;
        }
    }
    return 1;
}

/* The objective the backward passes differentiate, without recording. */
static double objective(const graph *G, prn_tensor **leaves) {
    prn_tensor *v[MAXV], *L[MAXL];
    double f = 0;
    int l;
    memset(v, 0, sizeof v); memset(L, 0, sizeof L);
    prn_no_grad_begin(ctx);
    if (forward(G, leaves, v, L) != PRN_OK) f = NAN;
    prn_no_grad_end(ctx);
    for (l = 0; l < G->nl && f == f; ++l) {
        double x = NAN;
        prn_tensor_item(L[l], &x);
        f += x * (1 + G->again[l]);
    }
    free_values(G, v, L);
    return f;
}

static int one_graph(uint64_t seed) {
    graph G;
    prn_tensor *leaves[NPARAM + 1 + NCONST], *v[MAXV], *L[MAXL];
    double g1[64], g2[64], fd, f0;
    int n, i, ok = 1;
    size_t live0 = prn_live_tensors(ctx);
    rng_state = seed;
    make_graph(&G);
    memset(v, 0, sizeof v); memset(L, 0, sizeof L);
    if (!make_leaves(&G, leaves)) { printf("    seed %lu: leaves\n", (unsigned long)seed); return 0; }
    /* a parameter written after the forward: refused, nothing changes */
    if (G.poison) {
        prn_tensor *p = leaves[G.poison - 1];
        int l, first = -1;
        for (l = 0; l < G.nl && first < 0; ++l)
            if (G.params[G.la[G.order[l]]] & (1ull << (G.poison - 1))) first = G.order[l];
        if (forward(&G, leaves, v, L) != PRN_OK) { printf("    seed %lu: forward: %s\n", (unsigned long)seed, prn_last_error(ctx)); return 0; }
        prn_tensor_upload(p, G.leafv[G.poison - 1], prn_tensor_numel(p)); /* the same values, still a write */
        if (first >= 0) {
            prn_status st = prn_backward(ctx, L[first]);
            int any = 0;
            for (i = 0; i <= NPARAM; ++i) any |= prn_tensor_grad(leaves[i]) != NULL;
            if (st != PRN_ERR_STATE || any || !strstr(prn_last_error(ctx), "written")) {
                printf("    seed %lu: backward after a write: %s (%s), gradients %s\n", (unsigned long)seed,
                       prn_status_string(st), prn_last_error(ctx), any ? "changed" : "unchanged");
                ok = 0;
            }
        }
        prn_tape_clear(ctx);
        free_values(&G, v, L);
    }
    /* two losses sharing records, the first by a plain prn_backward: the
     * second is refused and changes nothing (some graphs) */
    for (i = 0; i < G.nl * G.nl && ok; ++i) {
        int a = i / G.nl, b = i % G.nl;
        uint64_t sa = G.anc[G.la[a]] | (G.lb[a] >= 0 ? G.anc[G.lb[a]] : 0);
        uint64_t sb = G.anc[G.la[b]] | (G.lb[b] >= 0 ? G.anc[G.lb[b]] : 0);
        prn_status st;
        if (a == b || !(sa & sb) || (seed & 1)) continue;
        n_orphan++;
        if (forward(&G, leaves, v, L) != PRN_OK || prn_backward(ctx, L[a]) != PRN_OK) ok = 0;
        n = grads(&G, leaves, g1);
        st = prn_backward(ctx, L[b]);
        grads(&G, leaves, g2);
        if (!ok || st != PRN_ERR_STATE || memcmp(g1, g2, (size_t)n * sizeof *g1) != 0 ||
            !strstr(prn_last_error(ctx), "no longer on the tape")) {
            printf("    seed %lu: backward of loss %d after loss %d's released shared records: %s (%s)\n",
                   (unsigned long)seed, b, a, prn_status_string(st), prn_last_error(ctx));
            ok = 0;
        }
        prn_tape_clear(ctx);
        free_values(&G, v, L);
        for (i = 0; i <= NPARAM; ++i) prn_tensor_zero_grad(leaves[i]);
        break;
    }
    /* run 1 */
    if (forward(&G, leaves, v, L) != PRN_OK) { printf("    seed %lu: forward: %s\n", (unsigned long)seed, prn_last_error(ctx)); return 0; }
    if (!run_schedule(&G, L, seed)) ok = 0;
    n = grads(&G, leaves, g1);
    /* a loss whose records a plain backward released: refused, nothing changes */
    for (i = 0; i < G.nl && ok; ++i) {
        if (!G.retain[i] || G.again[i]) {
            prn_status st = prn_backward(ctx, L[i]);
            grads(&G, leaves, g2);
            if (st != PRN_ERR_STATE || memcmp(g1, g2, (size_t)n * sizeof *g1) != 0) {
                printf("    seed %lu: backward again on loss %d: %s (%s)\n", (unsigned long)seed, i, prn_status_string(st),
                       prn_last_error(ctx));
                ok = 0;
            }
            break;
        }
    }
    free_values(&G, v, L);
    prn_tape_clear(ctx);
    for (i = 0; i <= NPARAM; ++i) prn_tensor_zero_grad(leaves[i]);
    /* run 2: the same graph rebuilt, bit-identical gradients */
    if (ok && forward(&G, leaves, v, L) == PRN_OK && run_schedule(&G, L, seed)) {
        grads(&G, leaves, g2);
        for (i = 0; i < n; ++i)
            if (memcmp(&g1[i], &g2[i], sizeof g1[i]) != 0) {
                printf("    seed %lu: rebuilt graph: grad %d %.17g vs %.17g\n", (unsigned long)seed, i, g1[i], g2[i]);
                ok = 0;
                break;
            }
    } else ok = 0;
    free_values(&G, v, L);
    prn_tape_clear(ctx);
    /* finite differences of the objective, element by element; the error
     * allowed: the truncation's (relative) and the rounding's (f0 eps / h) */
    f0 = ok ? objective(&G, leaves) : 0;
    for (i = 0; i < n && ok; ++i) {
        int p = 0;
        size_t k = (size_t)i, m;
        double h = 1e-5, fp, fm, save, rel;
        while (k >= (m = prn_tensor_numel(leaves[p]))) { k -= m; ++p; }
        save = G.leafv[p][k];
        G.leafv[p][k] = save + h;
        prn_tensor_upload(leaves[p], G.leafv[p], m);
        fp = objective(&G, leaves);
        G.leafv[p][k] = save - h;
        prn_tensor_upload(leaves[p], G.leafv[p], m);
        fm = objective(&G, leaves);
        G.leafv[p][k] = save;
        prn_tensor_upload(leaves[p], G.leafv[p], m);
        fd = (fp - fm) / (2 * h);
        rel = fabs(fd - g1[i]) / (fabs(fd) > 1 ? fabs(fd) : 1);
        n_fd++;
        if (!(rel < 1e-6 + 1e-9 * fabs(f0))) {
            printf("    seed %lu: parameter %d element %lu: backward %.12g, finite differences %.12g\n", (unsigned long)seed,
                   p, (unsigned long)k, g1[i], fd);
            ok = 0;
        }
    }
    if (verbose)
        printf("    seed %lu: S %lu, %d values, %d losses, %d gradient elements%s\n", (unsigned long)seed,
               (unsigned long)G.S, G.nv, G.nl, n, G.poison ? ", a write before backward" : "");
    for (i = 0; i < G.nleaf; ++i) prn_tensor_free(leaves[i]);
    if (prn_live_tensors(ctx) != live0 || prn_tape_size(ctx) != 0) {
        printf("    seed %lu: %lu live tensors (want %lu), tape %lu\n", (unsigned long)seed,
               (unsigned long)prn_live_tensors(ctx), (unsigned long)live0, (unsigned long)prn_tape_size(ctx));
        ok = 0;
    }
    return ok;
}

static uint64_t only_seed;
static int have_only;

static void test_random_graphs(void) {
    int g, failed = 0;
    if (have_only) {
        PRNT_CHECK(one_graph(only_seed), "seed %lu", (unsigned long)only_seed);
        return;
    }
    for (g = 0; g < NGRAPHS && failed < 5; ++g) {
        uint64_t seed = BASE_SEED + (uint64_t)g;
        if (!one_graph(seed)) {
            failed++;
            PRNT_CHECK(0, "graph %d failed: rerun with `test_tape_prop %lu`", g, (unsigned long)seed);
        }
    }
    printf("    %ld graphs: %ld values, %ld losses, %ld backward passes (%ld retained, %ld second passes), %ld writes "
           "before a backward, %ld refused passes after a shared release, %ld gradient elements checked; ident %ld, add2 %ld, twice %ld, views %ld, matmul %ld\n",
           n_graphs, n_values, n_losses, n_passes, n_retained, n_again, n_written, n_orphan, n_fd, n_op[OP_IDENT], n_op[OP_ADD2],
           n_op[OP_TWICE], n_op[OP_VIEWS], n_op[OP_MATMUL]);
}

int main(int argc, char **argv) {
    if (argc > 1) { only_seed = strtoull(argv[1], NULL, 10); have_only = verbose = 1; }
    if (!(ctx = prnt_context(1))) return 1;
    PRNT_RUN(test_random_graphs);
    prn_context_free(ctx);
    return prnt_summary();
}
