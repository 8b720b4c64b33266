// bench_rtneural.cpp - RTNeural's per-step time for the shapes of
// bench_frames (GRU and LSTM, input 8, hidden 8/16/32/64, batch 1, float,
// compile-time sizes, the Eigen backend), beside parrnn's float frames at
// the same shapes in the same process: samples of 1000 steps of each, in
// turn, 201 rounds, the best sample of each, so that load from other
// processes on a shared machine hits both alike. RTNeural is not part of
// parrnn: this file is compiled only when RTNEURAL_DIR names a checkout
// (`make bench-frames RTNEURAL_DIR=...`), and bench_frames runs it.
// Output: one line per shape,
//   RTN kind=<gru|lstm> hidden=<H> ns_per_step=<t> parrnn_ns_per_step=<t>
#include <RTNeural.h>
#include "parrnn.h"
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

namespace {
constexpr int kIn = 8, kSteps = 1000, kRounds = 201, kSeq = 1024;

template <typename Layer>
void fill_layer(Layer &layer, int gates, std::mt19937 &rng) {
    std::uniform_real_distribution<float> u(-0.3f, 0.3f);
    std::vector<std::vector<float>> w(Layer::in_size, std::vector<float>(gates * Layer::out_size));
    std::vector<std::vector<float>> r(Layer::out_size, std::vector<float>(gates * Layer::out_size));
    for (auto &row : w) for (auto &v : row) v = u(rng);
    for (auto &row : r) for (auto &v : row) v = u(rng);
    layer.setWVals(w);
    layer.setUVals(r);
}

const float *aligned(const std::vector<float> &buf) {
    // the Eigen backend maps the input as 32-byte aligned
    const float *xs = buf.data();
    while (reinterpret_cast<std::uintptr_t>(xs) % 32) ++xs;
    return xs;
}

double now_ns() {
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best ns per step of RTNeural's model and of parrnn's float frame of the
// same kind and sizes (its own random weights), sampled in turn.
template <typename Model>
void time_pair(const char *kind, int H, Model &model, prn_rnn_kind pk, const std::vector<float> &buf) {
    const float *xs = aligned(buf);
    prn_config cfg = {};
    prn_context *ctx = nullptr;
    prn_rnn_config c = {};
    prn_rnn *r = nullptr;
    prn_rnn_framef *f = nullptr;
    std::vector<float> y(H);
    double best_rtn = 1e30, best_prn = 1e30;
    volatile float sink = 0.0f;
    cfg.seed = 1;
    cfg.num_threads = 1;
    c.kind = pk;
    c.dtype = PRN_F32;
    c.input_size = kIn;
    c.hidden_size = (size_t)H;
    if (prn_context_create(&cfg, &ctx, nullptr, 0) != PRN_OK || prn_rnn_create(ctx, &c, &r) != PRN_OK ||
        prn_rnn_framef_create(r, 1, &f) != PRN_OK) {
        std::fprintf(stderr, "bench_rtneural: parrnn setup failed\n");
        std::exit(1);
    }
    for (int round = 0; round < kRounds; ++round) {
        double t0 = now_ns();
        float acc = 0.0f;
        for (int t = 0; t < kSteps; ++t) acc += model.forward(xs + (t % kSeq) * kIn);
        double t1 = now_ns();
        for (int t = 0; t < kSteps; ++t) {
            prn_rnn_framef_step(f, xs + (t % kSeq) * kIn, y.data());
            acc += y[0];
        }
        double t2 = now_ns();
        sink = sink + acc;
        if ((t1 - t0) / kSteps < best_rtn) best_rtn = (t1 - t0) / kSteps;
        if ((t2 - t1) / kSteps < best_prn) best_prn = (t2 - t1) / kSteps;
    }
    std::printf("RTN kind=%s hidden=%d ns_per_step=%.2f parrnn_ns_per_step=%.2f\n", kind, H, best_rtn, best_prn);
    prn_rnn_framef_free(f);
    prn_rnn_free(r);
    prn_context_free(ctx);
}

template <int H>
void run_gru(const std::vector<float> &xs, std::mt19937 &rng) {
    RTNeural::ModelT<float, kIn, H, RTNeural::GRULayerT<float, kIn, H>> model;
    auto &g = model.template get<0>();
    fill_layer(g, 3, rng);
    std::uniform_real_distribution<float> u(-0.3f, 0.3f);
    std::vector<std::vector<float>> b(2, std::vector<float>(3 * H));
    for (auto &row : b) for (auto &v : row) v = u(rng);
    g.setBVals(b);
    model.reset();
    time_pair("gru", H, model, PRN_RNN_GRU, xs);
}

template <int H>
void run_lstm(const std::vector<float> &xs, std::mt19937 &rng) {
    RTNeural::ModelT<float, kIn, H, RTNeural::LSTMLayerT<float, kIn, H>> model;
    auto &l = model.template get<0>();
    fill_layer(l, 4, rng);
    std::uniform_real_distribution<float> u(-0.3f, 0.3f);
    std::vector<float> b(4 * H);
    for (auto &v : b) v = u(rng);
    l.setBVals(b);
    model.reset();
    time_pair("lstm", H, model, PRN_RNN_LSTM, xs);
}
} // namespace

int main() {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> xs(kSeq * kIn + 8);
    for (auto &v : xs) v = u(rng);
    run_gru<8>(xs, rng); run_gru<16>(xs, rng); run_gru<32>(xs, rng); run_gru<64>(xs, rng);
    run_lstm<8>(xs, rng); run_lstm<16>(xs, rng); run_lstm<32>(xs, rng); run_lstm<64>(xs, rng);
    return 0;
}
