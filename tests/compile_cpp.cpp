// Compile test: the implementation compiled as C++.
#define PARRNN_IMPLEMENTATION
#include "parrnn.h"

#ifndef PARRNN_STATIC
extern "C" int prn_compile_user(void);
#endif

int main() {
    prn_context *ctx = nullptr;
    prn_tensor *a = nullptr, *b = nullptr, *c = nullptr;
    const size_t shape[2] = {2, 2};
    const double va[4] = {1, 2, 3, 4};
    bool ok = prn_context_create(nullptr, &ctx, nullptr, 0) == PRN_OK &&
              prn_tensor_from_host(ctx, PRN_F64, 2, shape, va, &a) == PRN_OK &&
              prn_tensor_from_host(ctx, PRN_F64, 2, shape, va, &b) == PRN_OK &&
              prn_matmul(ctx, a, b, &c) == PRN_OK;
    double out[4] = {0, 0, 0, 0};
    ok = ok && prn_tensor_download(c, out, 4) == PRN_OK && out[0] == 7 && out[3] == 22;
    prn_context_free(ctx);
#ifndef PARRNN_STATIC
    ok = ok && prn_compile_user() == 6;
#endif
    return ok ? 0 : 1;
}
