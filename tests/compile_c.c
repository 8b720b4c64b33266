/* Compile test: the implementation in one C file, a second file (compile_c_user.c)
 * using only the declarations. With PARRNN_STATIC this file stands alone. */
#define PARRNN_IMPLEMENTATION
#include "parrnn.h"
#include "parrnn.h" /* including twice must be harmless */

#ifndef PARRNN_STATIC
int prn_compile_user(void);
#endif

int main(void) {
    prn_context *ctx = NULL;
    prn_tensor *t = NULL;
    size_t shape[2] = {2, 3};
    int ok = PARRNN_VERSION_MAJOR >= 0 && prn_context_create(NULL, &ctx, NULL, 0) == PRN_OK &&
             prn_tensor_create(ctx, PRN_F32, 2, shape, &t) == PRN_OK;
    prn_tensor_free(t);
    prn_context_free(ctx);
#ifndef PARRNN_STATIC
    ok = ok && prn_compile_user() == 6;
#endif
    return ok ? 0 : 1;
}
