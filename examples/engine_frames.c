/* engine_frames.c - a trained recurrent network inside a game or audio
 * engine: load a .prnrnn file (e.g. written from PyTorch by
 *     python3 tools/export_torch.py model.pt model.prnrnn --kind gru
 * ) and step it once per frame with the float frame API: float in, float
 * out, no allocation and no thread per frame, the same bits whatever
 * flags the engine is built with.
 *
 * Usage: engine_frames [MODEL.prnrnn] [--frames N] [--agents B]
 * Without a model it saves a small random GRU with a readout first (as the
 * exporter would) and loads that. Each frame feeds every agent an input of
 * sines (its "sensors"), steps all agents at once, and prints a few frames'
 * outputs; at the end, the time per frame and per agent step. */
#define _POSIX_C_SOURCE 200809L
#include "parrnn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    const char *path = NULL;
    char tmp_path[64];
    long frames = 2000, f;
    size_t agents = 4, In, Out, b, i;
    prn_config cfg;
    prn_context *ctx = NULL;
    prn_rnn *net = NULL;
    prn_rnn_framef *frame = NULL;
    float *x, *y;
    double t0, t;
    int a;
    for (a = 1; a < argc; ++a) {
        if (!strcmp(argv[a], "--frames") && a + 1 < argc) frames = atol(argv[++a]);
        else if (!strcmp(argv[a], "--agents") && a + 1 < argc) agents = (size_t)atol(argv[++a]);
        else if (argv[a][0] != '-' && !path) path = argv[a];
        else {
            fprintf(stderr, "usage: engine_frames [MODEL.prnrnn] [--frames N] [--agents B]\n");
            return 2;
        }
    }
    if (frames < 1 || agents < 1) { fprintf(stderr, "engine_frames: --frames and --agents must be >= 1\n"); return 2; }
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = 42;
    cfg.num_threads = 1;
    if (prn_context_create(&cfg, &ctx, NULL, 0) != PRN_OK) { fprintf(stderr, "engine_frames: no context\n"); return 1; }
    if (!path) { /* stand-in for an exported model: a random GRU, 6 sensors -> 2 controls */
        prn_rnn_config c;
        memset(&c, 0, sizeof c);
        c.kind = PRN_RNN_GRU;
        c.input_size = 6;
        c.hidden_size = 32;
        c.output_size = 2;
        snprintf(tmp_path, sizeof tmp_path, "/tmp/engine_frames_%ld.prnrnn", (long)time(NULL) % 100000);
        if (prn_rnn_create(ctx, &c, &net) != PRN_OK || prn_rnn_save(net, tmp_path) != PRN_OK) {
            fprintf(stderr, "engine_frames: %s\n", prn_last_error(ctx));
            return 1;
        }
        prn_rnn_free(net);
        net = NULL;
        path = tmp_path;
        printf("no model given: saved a random GRU (6 -> 32 -> 2) to %s\n", path);
    }
    if (prn_rnn_load(ctx, path, &net) != PRN_OK) { fprintf(stderr, "engine_frames: %s\n", prn_last_error(ctx)); return 1; }
    if (path == tmp_path) remove(tmp_path);
    /* at load time: the frame (weights repacked, state, workspace) */
    if (prn_rnn_framef_create(net, agents, &frame) != PRN_OK) {
        fprintf(stderr, "engine_frames: %s\n", prn_last_error(ctx));
        return 1;
    }
    In = prn_rnn_get_config(net)->input_size;
    Out = prn_rnn_get_config(net)->output_size ? prn_rnn_get_config(net)->output_size : prn_rnn_output_size(net);
    x = (float *)malloc(agents * In * sizeof *x);
    y = (float *)malloc(agents * Out * sizeof *y);
    if (!x || !y) { fprintf(stderr, "engine_frames: out of memory\n"); return 1; }
    printf("%s: %s, %lu inputs -> %lu outputs, %lu agents, %lu bytes, path %s\n", path,
           prn_rnn_kind_name(prn_rnn_get_config(net)->kind), (unsigned long)In, (unsigned long)Out, (unsigned long)agents,
           (unsigned long)prn_rnn_framef_memory(frame), prn_rnn_framef_path(frame));
    t = 0;
    for (f = 0; f < frames; ++f) {
        /* the engine's frame: sensors in, one step, controls out */
        for (b = 0; b < agents; ++b)
            for (i = 0; i < In; ++i) x[b * In + i] = (float)sin(0.05 * (double)f * (double)(i + 1) + (double)b);
        t0 = now();
        if (prn_rnn_framef_step(frame, x, y) != PRN_OK) { fprintf(stderr, "engine_frames: %s\n", prn_last_error(ctx)); return 1; }
        t += now() - t0;
        if (f % (frames / 4 > 0 ? frames / 4 : 1) == 0) {
            printf("frame %5ld  agent 0:", f);
            for (i = 0; i < Out && i < 4; ++i) printf(" %+.5f", (double)y[i]);
            printf("\n");
        }
        if (f == frames / 2 && agents > 1) prn_rnn_framef_reset_row(frame, 1); /* agent 1 respawns */
    }
    printf("%.0f ns per frame, %.0f ns per agent step\n", 1e9 * t / (double)frames, 1e9 * t / (double)frames / (double)agents);
    free(x);
    free(y);
    prn_rnn_framef_free(frame);
    prn_rnn_free(net);
    prn_context_free(ctx);
    return 0;
}
