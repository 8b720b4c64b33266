/* The corpus replay of a fuzz target without libFuzzer (built with
 * -DPRN_FUZZ_STANDALONE): runs LLVMFuzzerTestOneInput on each file given,
 * and on each file of each directory given, with an exact-size copy of its
 * bytes (so that AddressSanitizer catches reads past the end). Included at
 * the end of a harness that defines PRNF_NAME (its name, for messages) and
 * g_ctx (destroyed at the end; the target creates it on first use). The
 * harness's _POSIX_C_SOURCE must be 200809L or more (opendir, stat). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int prnf_run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL, *exact;
    size_t len = 0, cap = 0, n;
    if (!f) {
        fprintf(stderr, "%s: cannot open %s\n", PRNF_NAME, path);
        return 1;
    }
    for (;;) {
        if (len == cap) {
            unsigned char *q;
            cap = cap ? 2 * cap : 4096;
            q = (unsigned char *)realloc(buf, cap);
            if (!q) {
                fclose(f);
                free(buf);
                fprintf(stderr, "%s: out of memory\n", PRNF_NAME);
                return 1;
            }
            buf = q;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) break;
    }
    if (ferror(f)) {
        fclose(f);
        free(buf);
        fprintf(stderr, "%s: cannot read %s\n", PRNF_NAME, path);
        return 1;
    }
    fclose(f);
    exact = (unsigned char *)malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return 1;
    }
    if (len) memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int prnf_run_path(const char *path, int *count) {
    struct stat s;
    if (stat(path, &s) != 0) {
        fprintf(stderr, "%s: cannot stat %s\n", PRNF_NAME, path);
        return 1;
    }
    if (S_ISDIR(s.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        int bad = 0;
        if (!d) {
            fprintf(stderr, "%s: cannot open directory %s\n", PRNF_NAME, path);
            return 1;
        }
        while ((e = readdir(d)) != NULL) {
            char sub[4096];
            struct stat ss;
            if (e->d_name[0] == '.') continue;
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            if (stat(sub, &ss) == 0 && S_ISREG(ss.st_mode)) {
                bad |= prnf_run_file(sub);
                ++*count;
            }
        }
        closedir(d);
        return bad;
    }
    ++*count;
    return prnf_run_file(path);
}

int main(int argc, char **argv) {
    int i, bad = 0, count = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    for (i = 1; i < argc; ++i) bad |= prnf_run_path(argv[i], &count);
    printf("%s: %d input%s replayed%s\n", PRNF_NAME, count, count == 1 ? "" : "s", bad ? ", some unreadable" : "");
    prn_context_free(g_ctx);
    return bad;
}
