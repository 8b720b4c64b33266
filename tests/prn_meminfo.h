/* MemAvailable of /proc/meminfo in bytes (0: unknown, not Linux); shared by
 * the tests and benchmarks that skip sizes the machine cannot hold. */
#ifndef PRN_MEMINFO_H
#define PRN_MEMINFO_H
#include <stdio.h>
static double prn_mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024.0;
}
#endif
