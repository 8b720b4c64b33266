/* Elementwise primitives: fill, unary, binary with broadcast strides,
 * strided copy. One work-item per output element; 4-D indices come from
 * the flat index (shape[0] is implied by n). The op codes are parrnn.h's
 * prn_unary_op / prn_binary_op. Fills and copies move bits (uint for 4-byte
 * elements, f32 and i32; ulong for f64), so they need no f64 support. */

__kernel void fill32(__global uint *y, ulong n, ulong bits) {
    ulong i = get_global_id(0);
    if (i < n) y[i] = (uint)bits;
}

__kernel void fill64(__global ulong *y, ulong n, ulong bits) {
    ulong i = get_global_id(0);
    if (i < n) y[i] = bits;
}

__kernel void unary(int op, ulong n, __global const real *x, __global real *y, real alpha, real beta) {
    ulong i = get_global_id(0);
    real v, r;
    if (i >= n) return;
    v = x[i];
    switch (op) {
    case 0: r = -v; break;
    case 1: r = exp(v); break;
    case 2: r = log(v); break;
    case 3: r = v > (real)0 ? v : (real)0; break;
    case 4: r = (real)1 / ((real)1 + exp(-v)); break;
    case 5: r = tanh(v); break;
    case 6: r = v * v; break;
    case 7: r = sqrt(v); break;
    case 8: r = fabs(v); break;
    case 9: r = pow(v, alpha); break;
    case 11: r = isnan(v) ? beta : clamp(v, -alpha, alpha); break; /* clamp (NaN -> beta) */
    default: r = alpha * v + beta; break; /* 10: affine */
    }
    y[i] = r;
}

/* the op codes of prn_binary_op */
real binary_op(int op, real A, real B) {
    switch (op) {
    case 0: return A + B;
    case 1: return A - B;
    case 2: return A * B;
    case 3: return A / B;
    case 4: return pow(A, B);
    case 5: return A > B ? A : B;
    case 6: return A < B ? A : B;
    case 7: return A == B ? (real)1 : (real)0;
    case 8: return B > (real)0 ? A : (real)0;
    case 9: return A * B * ((real)1 - B);
    default: return A * ((real)1 - B * B); /* 10: tanh_grad */
    }
}

/* flat index i of shape [*, s1, s2, s3] -> offset under strides st */
#define PRN_OFFSET(i, s1, s2, s3, st0, st1, st2, st3)                            \
    ((i) / ((s1) * (s2) * (s3)) * (st0) + (i) / ((s2) * (s3)) % (s1) * (st1) +  \
     (i) / (s3) % (s2) * (st2) + (i) % (s3) * (st3))

__kernel void binary(int op, ulong s1, ulong s2, ulong s3, ulong n,
                     __global const real *a, ulong a0, ulong a1, ulong a2, ulong a3,
                     __global const real *b, ulong b0, ulong b1, ulong b2, ulong b3,
                     __global real *y) {
    ulong i = get_global_id(0);
    real A, B;
    if (i >= n) return;
    A = a[PRN_OFFSET(i, s1, s2, s3, a0, a1, a2, a3)];
    B = b[PRN_OFFSET(i, s1, s2, s3, b0, b1, b2, b3)];
    y[i] = binary_op(op, A, B);
}

/* binary on operands laid out like y (no broadcast): no index arithmetic,
 * which costs more than the operation itself on CPUs and GPUs alike */
__kernel void binary_flat(int op, ulong n, __global const real *a, __global const real *b, __global real *y) {
    ulong i = get_global_id(0);
    real A, B;
    if (i >= n) return;
    A = a[i];
    B = b[i];
    y[i] = binary_op(op, A, B);
}

__kernel void strided_copy32(ulong s1, ulong s2, ulong s3, ulong n,
                             __global const uint *x, ulong xo, ulong x0, ulong x1, ulong x2, ulong x3,
                             __global uint *y, ulong yo, ulong y0, ulong y1, ulong y2, ulong y3) {
    ulong i = get_global_id(0);
    if (i >= n) return;
    y[yo + PRN_OFFSET(i, s1, s2, s3, y0, y1, y2, y3)] = x[xo + PRN_OFFSET(i, s1, s2, s3, x0, x1, x2, x3)];
}

__kernel void strided_copy64(ulong s1, ulong s2, ulong s3, ulong n,
                             __global const ulong *x, ulong xo, ulong x0, ulong x1, ulong x2, ulong x3,
                             __global ulong *y, ulong yo, ulong y0, ulong y1, ulong y2, ulong y3) {
    ulong i = get_global_id(0);
    if (i >= n) return;
    y[yo + PRN_OFFSET(i, s1, s2, s3, y0, y1, y2, y3)] = x[xo + PRN_OFFSET(i, s1, s2, s3, x0, x1, x2, x3)];
}
