/* A translation unit that sees only the API (no implementation). */
#include "parrnn.h"
#ifdef __cplusplus
extern "C"
#endif
int prn_compile_user(void);
int prn_compile_user(void) {
    prn_context *ctx = NULL;
    prn_tensor *t = NULL;
    size_t shape[2] = {2, 3}, n = 0;
    if (prn_context_create(NULL, &ctx, NULL, 0) != PRN_OK) return -1;
    if (prn_tensor_create(ctx, PRN_F64, 2, shape, &t) == PRN_OK) n = prn_tensor_numel(t);
    prn_context_free(ctx);
    return (int)n;
}
