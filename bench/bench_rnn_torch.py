#!/usr/bin/env python3
"""PyTorch side of bench_rnn: nn.GRU / nn.LSTM on the CPU, same shapes.

For each kind (gru, lstm), hidden size and mode:
  fwd     y, _ = rnn(x) under torch.no_grad()
  fwdbwd  y, _ = rnn(x); (y * R).sum().backward(); grads zeroed
          (R a fixed random tensor shaped like y; x needs no gradient)
x is [batch, T, input] float32 (batch_first). One warm-up call, then
--repeats timed calls (time.perf_counter); seconds = the best of them,
median printed beside it. tokens/s = batch * T / seconds.

One line per measurement, for bench_rnn (which runs this with popen):
  TORCH kind=<gru|lstm> mode=<fwd|fwdbwd> hidden=<H> batch=<B> input=<I>
        T=<T> threads=<n> seconds=<best> median=<s> tokens_per_s=<v>
(on one line), preceded by "TORCH_INFO version=<v> threads=<n>".

Where cuDNN refuses a sequence that long (CUDNN_STATUS_NOT_SUPPORTED, seen at
T = 10^6), the sequence runs as consecutive pieces of --chunk steps (default
10000) with the state carried from one to the next and one graph over all
of them (the backward goes through every piece); such lines say chunk=<n>.

Usage: bench_rnn_torch.py [--threads N] [--T T] [--batch B[,B...]] [--input I]
                          [--hidden H[,H...]] [--kinds gru,lstm]
                          [--modes fwd,fwdbwd] [--repeats R] [--chunk N]
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

    for kind in a.kinds.split(","):
        for H, B in [(int(h), int(b)) for h in a.hidden.split(",") for b in a.batch.split(",")]:
            cls = {"gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[kind]
            rnn = cls(a.input, H, num_layers=1, batch_first=True).float().to(dev)
            x = torch.randn(B, a.T, a.input, dtype=torch.float32).to(dev)
            R = torch.randn(B, a.T, H, dtype=torch.float32).to(dev)
            for mode in a.modes.split(","):
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
