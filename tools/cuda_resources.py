#!/usr/bin/env python3
"""cuda_resources.py - the CUDA kernels' resource use, from ptxas.

Compiles each kernels_cuda/*.cu for sm_80 and sm_90 with `nvcc -Xptxas -v`
(as cuda.mk's NVCC_FLAGS, one architecture at a time) and tabulates per
kernel: registers, spill stores/loads, stack frame, static shared memory,
the block size it is launched with, and the blocks per multiprocessor those
allow (registers, shared memory, threads and the 32-block limit of sm_80 /
sm_90; an A100 has 164 KiB of shared memory per SM, an H100 228 KiB, 1 KiB
of it reserved per block). With --write, replaces the generated section of
kernels_cuda/README.md; with --check, fails (status 1) where a kernel spills
or has a stack frame, or where a 32-bit elementwise variant (k_binary and
k_strided_copy at MODE 0 and 1) still divides in 64 bits (div/rem .u64 in
its PTX). Run from the repository root: `make cuda-resources`.
"""
import os, re, subprocess, sys, tempfile

NVCC = os.environ.get("NVCC", os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc"))
FLAGS = ["-O3", "-std=c++14", "-I."]
ARCHS = {"sm_80": dict(smem=164 * 1024, regs=65536, threads=2048, blocks=32),
         "sm_90": dict(smem=228 * 1024, regs=65536, threads=2048, blocks=32)}
BEGIN = "<!-- cuda_resources.py: begin (generated; do not edit) -->"
END = "<!-- cuda_resources.py: end -->"


def block_size(name):
    """Threads per block each kernel is launched with (kernels_cuda/*.cu)."""
    if name.startswith("k_scan_diag_lookback"):
        return 256
    m = re.match(r"k_scan_block_fold<\w+, (\d+)>", name)
    if m:
        kb = int(m.group(1))
        return 128 if kb <= 16 else 64 if kb == 32 else 32
    if name.startswith("k_scan_block_expand"):
        return 128
    if name.startswith("k_lay1_"):
        return 64  # PRN_LAY1_TPB: a thread per sequence (hidden size 1)
    if name.startswith("k_lay_"):
        return 512  # PRN_LAY_NT (dynamic shared memory, not counted here: W_hh's slice, see the plan)
    if name.startswith("k_probe"):
        return 1
    m = re.match(r"k_deer_(?:iter|adj)<\w+, \d+, (\d+)>", name)
    if m:
        return int(m.group(1))  # NT: the per-thread slots' room (deer.cu)
    if name.startswith("k_deer_iterx") or name.startswith("k_deer_adjx"):
        return 128  # PRN_DZ_NT1
    if name.startswith("k_deer_chain1"):
        return 1024  # PRN_DZ_CH1_NT
    if name.startswith("k_deer_chain"):
        return 128  # PRN_DZ_CHAIN_NT
    return 256  # PRN_TPB; k_solve_lu: at most 256 (PRN_SOLVE_TPB)


def occupancy(arch, regs, smem, tpb):
    a = ARCHS[arch]
    warps = (tpb + 31) // 32
    per_warp = ((max(regs, 1) * 32 + 255) // 256) * 256
    by_regs = a["regs"] // (per_warp * warps)
    by_smem = a["smem"] // (smem + 1024)
    by_threads = a["threads"] // (warps * 32)
    return min(by_regs, by_smem, by_threads, a["blocks"])


def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
        return out.split("\n")[:len(names)]
    except (OSError, subprocess.CalledProcessError):
        return names


def short(name):
    """void k_scan_block_fold<float, 64>(unsigned long, ...) -> k_scan_block_fold<float, 64>"""
    if name.startswith("void "):
        name = name[5:]
    depth = 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return name[:i]
    return name


def ptxas(src, arch):
    cmd = [NVCC] + FLAGS + ["-gencode", "arch=compute_%s,code=%s" % (arch[3:], arch), "-Xptxas", "-v", "-c",
                            "-o", os.devnull, src]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit("%s failed:\n%s" % (" ".join(cmd), out.stderr))
    rows, cur = [], None
    for line in out.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            cur = dict(mangled=m.group(1), stack=0, spill_st=0, spill_ld=0, regs=0, smem=0)
            rows.append(cur)
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            cur["stack"], cur["spill_st"], cur["spill_ld"] = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            cur["regs"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            cur["smem"] = int(s.group(1)) if s else 0
    return rows


def ptx_divisions(src):
    """{kernel: True when its PTX divides 64-bit integers}"""
    with tempfile.TemporaryDirectory() as d:
        ptx = os.path.join(d, "k.ptx")
        subprocess.run([NVCC] + FLAGS + ["-arch=compute_90", "-ptx", "-o", ptx, src], check=True)
        text = open(ptx).read()
    found, name = {}, None
    for line in text.splitlines():
        m = re.match(r"\.visible \.entry (\w+)\(", line)
        if m:
            name = m.group(1)
            found[name] = False
        elif name and re.search(r"\b(div|rem)\.[us]64\b", line):
            found[name] = True
    return found


def main():
    write, check = "--write" in sys.argv, "--check" in sys.argv
    srcs = sorted(os.path.join("kernels_cuda", f) for f in os.listdir("kernels_cuda") if f.endswith(".cu"))
    table, problems = [], []
    for src in srcs:
        per = {arch: ptxas(src, arch) for arch in ARCHS}
        names = demangle([r["mangled"] for r in per["sm_90"]])
        by80 = {r["mangled"]: r for r in per["sm_80"]}
        for r90, dn in zip(per["sm_90"], names):
            r80 = by80.get(r90["mangled"], r90)
            k = short(dn)
            tpb = block_size(k)
            table.append((os.path.basename(src), k, tpb, r80, r90,
                          occupancy("sm_80", r80["regs"], r80["smem"], tpb),
                          occupancy("sm_90", r90["regs"], r90["smem"], tpb)))
            for arch, r in (("sm_80", r80), ("sm_90", r90)):
                if r["spill_st"] or r["spill_ld"] or r["stack"]:
                    problems.append("%s %s: %d bytes stack, %d/%d bytes spilled" % (
                        arch, k, r["stack"], r["spill_st"], r["spill_ld"]))
        if src.endswith("elementwise.cu"):
            div = ptx_divisions(src)
            for mangled, has in div.items():
                k = short(demangle([mangled])[0])
                if has and re.match(r"k_(binary|strided_copy)<\w+(, [01])?>", k):
                    problems.append("%s: 64-bit integer division in a 32-bit variant" % k)
    lines = ["| file | kernel | threads/block | regs sm_80 / sm_90 | spill st/ld bytes (sm_90) | stack (sm_90) "
             "| static smem | blocks/SM sm_80 | blocks/SM sm_90 |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for f, k, tpb, r80, r90, o80, o90 in table:
        lines.append("| %s | `%s` | %d | %d / %d | %d / %d | %d | %d | %d | %d |" % (
            f, k, tpb, r80["regs"], r90["regs"], r90["spill_st"], r90["spill_ld"], r90["stack"], r90["smem"], o80, o90))
    nv = subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    body = "\n".join(["Generated by `tools/cuda_resources.py --write` (`make cuda-resources`) with %s, flags `%s`." % (
        nv, " ".join(FLAGS)), ""] + lines + [""] +
        (["Spills or stack frames: " + "; ".join(problems), ""] if problems else
         ["No kernel spills or has a stack frame on either architecture.", ""]))
    if write:
        path = os.path.join("kernels_cuda", "README.md")
        text = open(path).read()
        if BEGIN not in text or END not in text:
            sys.exit("%s: no generated section (markers) to replace" % path)
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        open(path, "w").write(head + BEGIN + "\n" + body + END + tail)
    else:
        print(body)
    if check and problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
