/* backend_probe.c - can a context run on the backend named argv[1] here?
 * Exit 0 and one line naming the backend when it can; otherwise exit 1
 * with the reason (e.g. no OpenCL platform). tests/run.sh uses it to skip
 * a backend's pass of the suite on machines without its device. */
#include "parrnn.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    prn_config cfg;
    prn_context *ctx = NULL;
    char err[512];
    prn_status st;
    if (argc != 2) {
        fprintf(stderr, "usage: backend_probe NAME\n");
        return 2;
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.backend = argv[1];
    st = prn_context_create(&cfg, &ctx, err, sizeof err);
    if (st != PRN_OK) {
        printf("%s (%s)\n", err, prn_status_string(st));
        return 1;
    }
    printf("backend %s is available\n", prn_context_backend_name(ctx));
    prn_context_free(ctx);
    return 0;
}
