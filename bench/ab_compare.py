#!/usr/bin/env python3
"""Side-by-side comparison of two builds' benchmarks (before/after a change).

    bench/ab_compare.py --base DIR --new DIR [--rounds N] [--metric NAME] -- PROGRAM ARGS...

runs DIR/PROGRAM ARGS for the base and the new build in turn, N rounds
(interleaved, the order swapped every round, so that a drift of the
machine's speed hits both alike), collects their BENCH lines, and prints
for every line the best (smallest) seconds of each build and base/new
(above 1: the new build is faster). A line's key is everything before
"seconds=" (the benchmark's name, backend and parameters), as in every
BENCH line of the project. --metric compares another field where smaller
is better instead (bench_frames: --metric ns_per_agent_step); lines
without it are left out. Lines for scripts:
    BENCH name=ab program=P key="..." base_seconds=S new_seconds=S ratio=R
(base_<metric>, new_<metric> with --metric).
"""
import subprocess, sys, time, argparse, os

def bench_lines(out, metric="seconds"):
    res = {}
    field = " %s=" % metric
    for line in out.splitlines():
        if not line.startswith("BENCH ") or field not in line:
            continue
        key, rest = line[6:].split(field, 1)
        try:
            res[key] = float(rest.split()[0])
        except ValueError:
            pass
    return res

def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--metric", default="seconds", help="the field compared (smaller is better)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no program given")
    best = {"base": {}, "new": {}}
    order = []
    for r in range(a.rounds):
        sides = ("base", "new") if r % 2 == 0 else ("new", "base")
        for side in sides:
            d = a.base if side == "base" else a.new
            t0 = time.time()
            p = subprocess.run([os.path.join(d, cmd[0])] + cmd[1:], cwd=d, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit("ab_compare: %s in %s failed (rc %d):\n%s" % (cmd[0], d, p.returncode, p.stderr[-2000:]))
            for k, v in bench_lines(p.stdout, a.metric).items():
                if k not in best["base"] and k not in best["new"]:
                    order.append(k)
                b = best[side]
                b[k] = min(v, b.get(k, v))
            print("# round %d %s: %.0f s" % (r + 1, side, time.time() - t0), flush=True)
    prog = os.path.basename(cmd[0])
    print("# %s %s: best of %d interleaved rounds; ratio = base/new (above 1: new is faster)"
          % (prog, " ".join(cmd[1:]), a.rounds))
    print("%-90s %10s %10s %6s" % ("line", "base", "new", "ratio"))
    print("# base, new: best %s of each build" % a.metric)
    ratios = []
    for k in order:
        if k in best["base"] and k in best["new"]:
            b, n = best["base"][k], best["new"][k]
            r = b / n if n > 0 else float("nan")
            ratios.append(r)
            print("%-90s %10.4g %10.4g %6.2f" % (k[:90], b, n, r))
    for k in order:
        if k in best["base"] and k in best["new"]:
            b, n = best["base"][k], best["new"][k]
            print('BENCH name=ab program=%s key="%s" base_%s=%g new_%s=%g ratio=%.3f'
                  % (prog, k, a.metric, b, a.metric, n, b / n if n > 0 else float("nan")))
    if ratios:
        ratios.sort()
        print("# %d lines: ratio min %.2f, median %.2f, max %.2f"
              % (len(ratios), ratios[0], ratios[len(ratios) // 2], ratios[-1]))

if __name__ == "__main__":
    main()
