/* Fused optimiser updates, one work-item per element, in the order of the
 * reference's loops (prn__ref_sgd_update, prn__ref_adam_update); no
 * contraction to fma, so the roundings are the reference's too. */
#pragma OPENCL FP_CONTRACT OFF

/* SGD with weight decay wd, momentum mom (use_v: v is the velocity) and
 * optionally Nesterov's look-ahead. */
__kernel void opt_sgd(ulong n, __global real *w, __global const real *g, __global real *v, int use_v,
                      int nesterov, real lr, real mom, real wd) {
    ulong i = get_global_id(0);
    real d, vi;
    if (i >= n) return;
    d = g[i] + wd * w[i];
    if (use_v) {
        vi = mom * v[i] + d;
        v[i] = vi;
        d = nesterov ? d + mom * vi : vi;
    }
    w[i] -= lr * d;
}

/* Adam (decoupled: AdamW's weight decay); ib1, ib2 are 1 / (1 - beta^t). */
__kernel void opt_adam(ulong n, __global real *w, __global const real *g, __global real *m, __global real *v,
                       int decoupled, real lr, real b1, real b2, real eps, real wd, real ib1, real ib2) {
    ulong i = get_global_id(0);
    real wi, gi, mi, vi;
    if (i >= n) return;
    wi = w[i];
    gi = decoupled ? g[i] : g[i] + wd * wi;
    mi = b1 * m[i] + ((real)1 - b1) * gi;
    vi = b2 * v[i] + ((real)1 - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    w[i] = wi - lr * ((mi * ib1) / (sqrt(vi * ib2) + eps) + (decoupled ? wd * wi : (real)0));
}
