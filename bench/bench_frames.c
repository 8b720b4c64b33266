/* bench_frames.c - per-step time of the per-frame inference APIs, the
 * engine's use: input 8, hidden 8/16/32/64, one layer, no readout, for
 * GRU, LSTM and Elman (tanh), on the calling thread.
 *   float   prn_rnn_framef_step (float in and out, f32 math, AVX2/FMA when
 *           the processor has them: prn_rnn_framef_path)
 *   double  prn_rnn_frame_step (doubles, scalar f64 math)
 * at batch B = 1, and the float frames at B = 8 and 64 (ns per agent: the
 * step's time / B). Each figure: the best of 7 runs of about 20000 agent
 * steps over a fixed random input sequence (CLOCK_MONOTONIC): 25 runs of
 * about 4000, the best (the machine may be shared).
 *
 * RTNeural side by side: when the program named by $PARRNN_RTNEURAL_BENCH
 * (default: bench_rtneural beside this program) exists, it is run after
 * parrnn's measurements and its per-step times for the same GRU and LSTM
 * shapes (batch 1, float, compile-time sizes), each sampled in turn with
 * parrnn's float frame in that program (its own column, "float'"), fill
 * the table's rtneural columns; the ratio is float' / rtneural. `make bench-frames RTNEURAL_DIR=/path/to/RTNeural` builds it
 * from bench/bench_rtneural.cpp (RTNeural itself is not part of parrnn).
 *
 * Output: the table, then one line per measurement:
 *   BENCH name=frame_<kind> api=<float|double|rtneural> hidden=<H> input=8
 *         batch=<B> ns_per_agent_step=<t> [path=<avx2|portable>]
 * Usage: bench_frames [--quick]   (--quick: 2 runs of 2000 steps) */
#define _POSIX_C_SOURCE 200809L
#include "parrnn.h"
#include "bench_common.h"

#define NIN 8
#define SEQ 256
static int g_runs = 25;
static long g_steps = 4000;

typedef struct {
    prn_rnn_framef *ff;
    prn_rnn_frame *fd;
    size_t B, H;
    float *xf, *yf;
    double *xd, *yd;
} job;

static double run_job(job *j) {
    long steps = g_steps / (long)j->B, t;
    double best = 1e300;
    int r;
    if (steps < 50) steps = 50;
    for (r = 0; r < g_runs; ++r) {
        double t0 = now(), dt;
        for (t = 0; t < steps; ++t) {
            size_t o = (size_t)(t % SEQ) * j->B * NIN;
            prn_status st = j->ff ? prn_rnn_framef_step(j->ff, j->xf + o, j->yf) : prn_rnn_frame_step(j->fd, j->xd + o, j->yd);
            if (st != PRN_OK) {
                fprintf(stderr, "bench_frames: step failed: %s\n", prn_status_string(st));
                exit(1);
            }
        }
        dt = (now() - t0) / (double)steps / (double)j->B;
        if (dt < best) best = dt;
    }
    return best * 1e9;
}

static const char *kind_name(prn_rnn_kind k) { return k == PRN_RNN_GRU ? "gru" : k == PRN_RNN_LSTM ? "lstm" : "elman"; }

int main(int argc, char **argv) {
    static const prn_rnn_kind kinds[3] = {PRN_RNN_GRU, PRN_RNN_LSTM, PRN_RNN_ELMAN};
    static const size_t Hs[4] = {8, 16, 32, 64}, Bs[3] = {1, 8, 64};
    double tf[3][4][3], td[3][4], trt[3][4], tpair[3][4];
    const char *path[3][4];
    char rtn[4096];
    prn_context *ctx = NULL;
    prn_config cfg;
    int k, h, b, have_rtn = 0;
    size_t i;
    unsigned seed = 12345;
    float *xf;
    double *xd;
    bench_prog = "bench_frames";
    for (k = 1; k < argc; ++k) {
        if (!strcmp(argv[k], "--quick")) g_runs = 2, g_steps = 2000;
        else { fprintf(stderr, "usage: bench_frames [--quick]\n"); return 2; }
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = 1;
    cfg.num_threads = 1;
    if (prn_context_create(&cfg, &ctx, NULL, 0) != PRN_OK) { fprintf(stderr, "bench_frames: no context\n"); return 1; }
    xf = (float *)xmalloc((size_t)SEQ * 64 * NIN * sizeof *xf);
    xd = (double *)xmalloc((size_t)SEQ * 64 * NIN * sizeof *xd);
    for (i = 0; i < (size_t)SEQ * 64 * NIN; ++i) {
        seed = seed * 1103515245u + 12345u;
        xf[i] = (float)(((seed >> 8) & 0xffff) / 32768.0 - 1.0);
        xd[i] = xf[i];
    }
    for (k = 0; k < 3; ++k)
        for (h = 0; h < 4; ++h) {
            prn_rnn_config c;
            prn_rnn *r = NULL;
            job j;
            float yf[64 * 64];
            double yd[64];
            memset(&c, 0, sizeof c);
            c.kind = kinds[k];
            c.dtype = PRN_F32;
            c.input_size = NIN;
            c.hidden_size = Hs[h];
            if (prn_rnn_create(ctx, &c, &r) != PRN_OK) { fprintf(stderr, "bench_frames: %s\n", prn_last_error(ctx)); return 1; }
            for (b = 0; b < 3; ++b) {
                memset(&j, 0, sizeof j);
                j.B = Bs[b], j.H = Hs[h], j.xf = xf, j.yf = yf;
                if (prn_rnn_framef_create(r, j.B, &j.ff) != PRN_OK) { fprintf(stderr, "bench_frames: %s\n", prn_last_error(ctx)); return 1; }
                path[k][h] = prn_rnn_framef_path(j.ff);
                tf[k][h][b] = run_job(&j);
                prn_rnn_framef_free(j.ff);
            }
            memset(&j, 0, sizeof j);
            j.B = 1, j.H = Hs[h], j.xd = xd, j.yd = yd;
            if (prn_rnn_frame_create(r, 1, &j.fd) != PRN_OK) { fprintf(stderr, "bench_frames: %s\n", prn_last_error(ctx)); return 1; }
            td[k][h] = run_job(&j);
            prn_rnn_frame_free(j.fd);
            prn_rnn_free(r);
            trt[k][h] = -1, tpair[k][h] = -1;
        }
    /* RTNeural, when its driver was built */
    {
        const char *exe = getenv("PARRNN_RTNEURAL_BENCH");
        char def[1024], cmd[1200], line[256];
        FILE *p;
        if (!exe) {
            const char *slash = strrchr(argv[0], '/');
            snprintf(def, sizeof def, "%.*sbench_rtneural", slash ? (int)(slash - argv[0] + 1) : 0, argv[0]);
            exe = def;
        }
        rtn[0] = 0;
        p = fopen(exe, "rb");
        if (p) {
            fclose(p);
            snprintf(cmd, sizeof cmd, "'%s'", exe);
            p = popen(cmd, "r");
            while (p && fgets(line, sizeof line, p)) {
                char kn[16];
                int hid;
                double ns, nsp;
                if (sscanf(line, "RTN kind=%15s hidden=%d ns_per_step=%lf parrnn_ns_per_step=%lf", kn, &hid, &ns, &nsp) == 4)
                    for (k = 0; k < 3; ++k)
                        for (h = 0; h < 4; ++h)
                            if (!strcmp(kn, kind_name(kinds[k])) && (size_t)hid == Hs[h])
                                trt[k][h] = ns, tpair[k][h] = nsp, have_rtn = 1;
            }
            if (p) pclose(p);
        } else {
            snprintf(rtn, sizeof rtn, "  rtneural: %s not built (make bench-frames RTNEURAL_DIR=/path/to/RTNeural)\n", exe);
        }
    }
    printf("bench_frames: per-step time, input %d, one layer (float frames' path per row)\n", NIN);
    {
        char model[256];
        cpu_model(model, sizeof model);
        printf("  machine:   %s\n", model);
    }
    bench_print_compiler();
    if (rtn[0]) printf("%s", rtn);
    printf("  ns per agent step      B=1                                      B=8      B=64\n");
    printf("  kind   H     float   double    float'  rtneural  float'/rtn      float    float  path\n");
    for (k = 0; k < 3; ++k)
        for (h = 0; h < 4; ++h) {
            char rt[32], pr[32], ratio[32];
            if (trt[k][h] > 0) {
                snprintf(rt, sizeof rt, "%8.1f", trt[k][h]);
                snprintf(pr, sizeof pr, "%8.1f", tpair[k][h]);
                snprintf(ratio, sizeof ratio, "%8.2f", tpair[k][h] / trt[k][h]);
            } else {
                snprintf(rt, sizeof rt, "%8s", "-");
                snprintf(pr, sizeof pr, "%8s", "-");
                snprintf(ratio, sizeof ratio, "%8s", "-");
            }
            printf("  %-5s %2lu  %8.1f %8.1f  %s  %s    %s   %8.1f %8.1f  %s\n", kind_name(kinds[k]), (unsigned long)Hs[h],
                   tf[k][h][0], td[k][h], pr, rt, ratio, tf[k][h][1], tf[k][h][2], path[k][h]);
        }
    for (k = 0; k < 3; ++k)
        for (h = 0; h < 4; ++h) {
            for (b = 0; b < 3; ++b)
                printf("BENCH name=frame_%s api=float hidden=%lu input=%d batch=%lu ns_per_agent_step=%.2f path=%s\n",
                       kind_name(kinds[k]), (unsigned long)Hs[h], NIN, (unsigned long)Bs[b], tf[k][h][b], path[k][h]);
            printf("BENCH name=frame_%s api=double hidden=%lu input=%d batch=1 ns_per_agent_step=%.2f\n", kind_name(kinds[k]),
                   (unsigned long)Hs[h], NIN, td[k][h]);
            if (trt[k][h] > 0)
                printf("BENCH name=frame_%s api=rtneural hidden=%lu input=%d batch=1 ns_per_agent_step=%.2f "
                       "parrnn_float_same_run=%.2f ratio=%.3f\n",
                       kind_name(kinds[k]), (unsigned long)Hs[h], NIN, trt[k][h], tpair[k][h], tpair[k][h] / trt[k][h]);
        }
    (void)have_rtn;
    /* bench_common.h's helpers this program has no use for */
    (void)time_best, (void)probe_triad, (void)bench_report_idle, (void)bench_parse_args, (void)bench_device_context;
    free(xf);
    free(xd);
    prn_context_free(ctx);
    return 0;
}
