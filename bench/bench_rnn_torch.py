#!/usr/bin/env python3
"""PyTorch side of bench_rnn: nn.GRU / nn.LSTM on the CPU, same shapes.

For each kind (gru, lstm), hidden size and mode:
  fwd     y, _ = rnn(x) under torch.no_grad()
  fwdbwd  y, _ = rnn(x); (y * R).sum().backward(); grads zeroed
          (R a fixed random tensor shaped like y; x needs no gradient)
x is [batch, T, input] float32 (batch_first). One warm-up call, then
--repeats timed calls (time.perf_counter); seconds = the best of them,
median printed beside it. tokens/s = batch * T / seconds.

One line per measurement (bench_rnn reads them):
  TORCH kind=<gru|lstm> mode=<fwd|fwdbwd> hidden=<H> batch=<B> input=<I>
        T=<T> threads=<n> seconds=<best> median=<s> tokens_per_s=<v>
(on one line), preceded by "TORCH_INFO version=<v> threads=<n>".

With --serve the shapes come from stdin instead, one request per line,
"<kind> <mode> <H> <B>" (e.g. "lstm fwd 512 64"), each answered by its
TORCH line as soon as it is measured; bench_rnn keeps one such process
open and asks for each line right before or after measuring parrnn's, so
that both see the same state of a busy machine. The model of the last
(kind, H, B) is kept for the next request.

Where cuDNN refuses a sequence that long (CUDNN_STATUS_NOT_SUPPORTED, seen at
T = 10^6), the sequence runs as consecutive pieces of --chunk steps (default
10000) with the state carried from one to the next and one graph over all
of them (the backward goes through every piece); such lines say chunk=<n>.

Usage: bench_rnn_torch.py [--threads N] [--T T] [--batch B[,B...]] [--input I]
                          [--hidden H[,H...]] [--kinds gru,lstm]
                          [--modes fwd,fwdbwd] [--repeats R] [--chunk N]
                          [--device cpu|cuda] [--serve]
"""
import argparse
import statistics
import sys
import time
import warnings


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    p.add_argument("--T", type=int, default=1000)
    p.add_argument("--batch", default="16")
    p.add_argument("--input", type=int, default=64)
    p.add_argument("--hidden", default="128,256")
    p.add_argument("--kinds", default="gru,lstm")
    p.add_argument("--modes", default="fwd,fwdbwd")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--chunk", type=int, default=10000, help="pieces' length where cuDNN refuses the whole sequence")
    p.add_argument("--device", default="cpu", help="cpu, or cuda: PyTorch on the GPU (cuDNN), synchronised per call")
    p.add_argument("--serve", action="store_true",
                   help="measure what stdin asks for, one line '<kind> <mode> <H> <B>' each (bench_rnn's interleaving)")
    a = p.parse_args()

    warnings.filterwarnings("ignore")  # e.g. "Failed to initialize NumPy"
    import torch

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    threads = torch.get_num_threads()
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    print("TORCH_INFO version=%s threads=%d mkldnn=%d device=%s cudnn=%s" %
          (torch.__version__, threads, int(torch.backends.mkldnn.is_available()), a.device,
           torch.backends.cudnn.version() if dev.type == "cuda" else "-"), flush=True)

    cache = {}  # the model and tensors of one (kind, H, B): the last one asked for

    def measure(kind, mode, H, B):
        key = (kind, H, B)
        if key not in cache:
            cache.clear()
            cls = {"gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[kind]
            cache[key] = (cls(a.input, H, num_layers=1, batch_first=True).float().to(dev),
                          torch.randn(B, a.T, a.input, dtype=torch.float32).to(dev),
                          torch.randn(B, a.T, H, dtype=torch.float32).to(dev))
        rnn, x, R = cache[key]
        chunk = [0]  # 0: the whole sequence in one call

        def run(xx):
            if not chunk[0]:
                return rnn(xx)[0]
            ys, hx = [], None
            for t0 in range(0, a.T, chunk[0]):
                y, hx = rnn(xx[:, t0:t0 + chunk[0]], hx)
                ys.append(y)
            return torch.cat(ys, dim=1)

        def call():
            if mode == "fwd":
                with torch.no_grad():
                    y = run(x)
            else:
                y = run(x)
                (y * R).sum().backward()
                for q in rnn.parameters():
                    q.grad = None
            sync()  # the GPU queues work: the call ends when it is done
            return y

        try:
            call()  # warm-up
        except RuntimeError as e:
            if "NOT_SUPPORTED" not in str(e) or a.chunk <= 0 or a.chunk >= a.T:
                raise
            chunk[0] = a.chunk
            call()
        times = []
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        best = min(times)
        print("TORCH kind=%s mode=%s hidden=%d batch=%d input=%d T=%d threads=%d "
              "seconds=%.6g median=%.6g tokens_per_s=%.6g%s" %
              (kind, mode, H, B, a.input, a.T, threads, best,
               statistics.median(times), B * a.T / best,
               " chunk=%d" % chunk[0] if chunk[0] else ""), flush=True)

    if a.serve:
        # one request per line, "<kind> <mode> <H> <B>", answered by its
        # TORCH line; ends at end of input or "quit"
        for line in sys.stdin:
            f = line.split()
            if not f:
                continue
            if f[0] == "quit":
                break
            if len(f) != 4 or f[0] not in ("gru", "lstm") or f[1] not in ("fwd", "fwdbwd") or \
                    not f[2].isdigit() or not f[3].isdigit():
                print("TORCH_ERROR bad request: %s" % line.strip(), flush=True)
                continue
            measure(f[0], f[1], int(f[2]), int(f[3]))
        return 0
    for kind in a.kinds.split(","):
        for H, B in [(int(h), int(b)) for h in a.hidden.split(",") for b in a.batch.split(",")]:
            for mode in a.modes.split(","):
                measure(kind, mode, H, B)
    return 0


if __name__ == "__main__":
    sys.exit(main())
