/* What GEMM needs besides CLBlast: C_b = beta C_b over the M x N matrices
 * of C (leading dimension ldc, batch stride sc), for K == 0, which CLBlast
 * rejects. beta_zero writes zeros without reading C, which may hold NaN. */
__kernel void gemm_scale_c(ulong M, ulong N, ulong ldc, ulong sc, ulong total, int beta_zero, real beta,
                           __global real *c) {
    ulong g = get_global_id(0), e;
    if (g >= total) return;
    e = g / (M * N) * sc + g / N % M * ldc + g % N;
    c[e] = beta_zero ? (real)0 : beta * c[e];
}
