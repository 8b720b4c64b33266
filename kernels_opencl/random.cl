/* Counter-based random numbers: element i is a function of
 * (seed, counter + i) alone, through Philox4x32-10 (prn_philox4x32 of
 * parrnn.h) and the reference's mapping to values (prn__random_value),
 * which works in double: f32 uniforms must round exactly as there, so the
 * f32 program also uses double. Devices without cl_khr_fp64 get no kernel
 * here; the host draws their f32 numbers itself. p0 and p1 travel as the
 * bits of doubles. No contraction to fma, which would round differently. */
#pragma OPENCL FP_CONTRACT OFF
#if defined(cl_khr_fp64) && !defined(PRN_F64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#if defined(cl_khr_fp64) || defined(PRN_F64)

uint4 rng_philox4x32(ulong seed, ulong counter) {
    uint c0 = (uint)counter, c1 = (uint)(counter >> 32), c2 = 0, c3 = 0;
    uint k0 = (uint)seed, k1 = (uint)(seed >> 32), n0, n2;
    int r;
    for (r = 0; r < 10; ++r) {
        n0 = mul_hi(0xCD9E8D57u, c2) ^ c1 ^ k0;
        n2 = mul_hi(0xD2511F53u, c0) ^ c3 ^ k1;
        c1 = 0xCD9E8D57u * c2;
        c3 = 0xD2511F53u * c0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return (uint4)(c0, c1, c2, c3);
}

/* 53 random bits of words a, b */
double rng_bits53(uint a, uint b) { return (double)(((ulong)a << 21) ^ (ulong)(b >> 11)); }

/* y[i] for i < n: uniform in [p0, p1) (24 random bits for f32, 53 for
 * f64; a value that rounds to p1 becomes p0), or normal with mean p0 and
 * standard deviation p1 (Box-Muller, cosine branch). */
__kernel void rng_fill(int normal, ulong n, ulong seed, ulong counter, ulong p0_bits, ulong p1_bits,
                       __global real *y) {
    ulong i = get_global_id(0);
    double p0 = as_double(p0_bits), p1 = as_double(p1_bits), v;
    uint4 w;
    if (i >= n) return;
    w = rng_philox4x32(seed, counter + i);
    if (!normal) {
#ifdef PRN_F64
        v = p0 + (p1 - p0) * (rng_bits53(w.x, w.y) * (1.0 / 9007199254740992.0));
#else
        v = (double)(float)(p0 + (p1 - p0) * ((double)(w.x >> 8) * (1.0 / 16777216.0)));
#endif
        y[i] = (real)(v < p1 || p1 <= p0 ? v : p0);
    } else {
        double u1 = (rng_bits53(w.x, w.y) + 1.0) * (1.0 / 9007199254740992.0); /* (0, 1] */
        double u2 = rng_bits53(w.z, w.w) * (1.0 / 9007199254740992.0);         /* [0, 1) */
        y[i] = (real)(p0 + p1 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2));
    }
}

#endif
