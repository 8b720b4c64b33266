#!/usr/bin/env bash
# gpu_check.sh - parrnn's check of its CUDA backend on a GPU machine, made
# to fit one run of at most 10 minutes, building nothing there.
#
# Here (no GPU needed):   make gpu-bundle           (fills build-gpu/, < 48 MiB)
# There, from the project root:
#   bash tools/gpu_check.sh [LOGDIR]      LOGDIR, else $GPU_CHECK_OUT, else $OUT,
#                                         else ./gpucheck-out
# It prints a summary (the verdict of every step and the key figures) and
# nothing else; the details are in at most 8 files in LOGDIR:
#   00_summary.txt  the same summary           01_core.log  environment, probe,
#   test_cuda, conformance   02_suite.log  every test, PARRNN_BACKEND=cuda
#   03_sanitizer.log  compute-sanitizer memcheck/racecheck/synccheck on
#   gpu_probe   04_bench_scan.log  the scan vs the device-to-device copy
#   05_bench_deer.log   06_bench_ops_scyfi.log  bench_ops and bench_scyfi
#   (CUDA beside the reference, M up to 500)   07_rnn_cudnn.log  the GRU and
#   LSTM layers beside PyTorch's cuDNN nn.GRU / nn.LSTM on the same GPU
# The issue's H100 targets, each a step of its own (first, after the tests):
#   deer_targets  (05) DEER and quasi-DEER of a GRU, n = 1 and n = 32,
#                 T = 10^6, B = 16, with gradients, beside the sequential
#                 layer (bench_deer --n --T --grad: speedup= on its BENCH lines)
#   cudnn_targets (07) cuDNN's nn.GRU at those shapes (input = hidden = n, to
#                 set beside deer_targets) and nn.GRU / nn.LSTM at hidden 64
#                 and 512 (bench_rnn covers 128 and 256 on both sides)
#   scan_choice   (04) the device scan grid again with PARRNN_CUDA_SCAN=
#                 lookback and =chunked (BENCH lines tagged forced=...): is
#                 AUTO's choice the faster one at every shape?
# The channels-only serial baseline at C <= 128, T = 10^6 is the sequential
# row of bench_scan's device grid at (1, 10^6, 128) and (4, 10^6, 32).
#
# Every step runs under its own timeout, cut to what is left of the budget.
# A step that ran to its end (passed or failed) is written to
# $GPU_CHECK_BUNDLE/.gpucheck-done; a second run (the machine still warm)
# does only the steps the first skipped or that were cut by the budget.
#
# Environment:
#   GPU_CHECK_BUDGET  seconds for the whole run (default 540)
#   GPU_CHECK_STEPS   comma list of steps to consider (default: all of
#                     env,probe,test_cuda,conformance,bench_scan,
#                     deer_targets,rnn_cudnn,cudnn_targets,suite,sanitize,
#                     bench_deer,bench_ops_scyfi,scan_choice)
#   GPU_CHECK_REDO=1  run steps that already ran
#   GPU_CHECK_BUNDLE  the bundle (default build-gpu)
#   GPU_CHECK_STATE   the list of steps done (default $GPU_CHECK_BUNDLE/.gpucheck-done)
#   GPU_CHECK_SMOKE=1 small sizes everywhere (the flow test on the CUDA
#                     emulator: tests/gpu_check_flow.sh)
set -u
export LC_ALL=C
[ -f parrnn.h ] && [ -d kernels_cuda ] || { echo "gpu_check.sh: run me from the project root" >&2; exit 2; }

LOGDIR=${1:-${GPU_CHECK_OUT:-${OUT:-./gpucheck-out}}}
BUNDLE=${GPU_CHECK_BUNDLE:-build-gpu}
BUDGET=${GPU_CHECK_BUDGET:-540}
ALL_STEPS=env,probe,test_cuda,conformance,bench_scan,deer_targets,rnn_cudnn,cudnn_targets,suite,sanitize,bench_deer,bench_ops_scyfi,scan_choice
STEPS=${GPU_CHECK_STEPS:-$ALL_STEPS}
SMOKE=${GPU_CHECK_SMOKE:-0}
DONE=${GPU_CHECK_STATE:-$BUNDLE/.gpucheck-done}
SUM=$LOGDIR/00_summary.txt
T0=$(date +%s)
mkdir -p "$LOGDIR" || exit 2
[ -x "$BUNDLE/tests/test_cuda" ] || { echo "gpu_check.sh: no bundle in $BUNDLE (make gpu-bundle, and carry it)" >&2; exit 2; }
touch "$DONE"
[ "${GPU_CHECK_REDO:-0}" = 1 ] && : >"$DONE"
STEPLINES=$(mktemp)
trap 'rm -f "$STEPLINES"' EXIT

left() { echo $((BUDGET - ($(date +%s) - T0))); }
wanted() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

# step NAME LOG LIMIT CMD...: runs CMD (output appended to LOG) unless not
# wanted or done already; records the verdict. A step starts only with a
# third of its limit (at least 10 s) left in the budget, keeping 15 s for
# the summary; its limit is cut to what is left. CMD's exit status 3 means
# "not available on this machine" (e.g. no compute-sanitizer).
step() {
    local name=$1 log=$LOGDIR/$2 lim=$3 l s rc v min
    shift 3
    wanted "$name" || return 0
    if grep -qx "$name" "$DONE"; then
        printf '%-16s done in an earlier run\n' "$name" >>"$STEPLINES"
        return 0
    fi
    l=$(($(left) - 15))
    min=$((lim / 3))
    [ "$min" -lt 10 ] && min=10
    [ "$lim" -gt "$l" ] && lim=$l
    if [ "$l" -lt "$min" ]; then
        printf '%-16s SKIPPED (budget spent; a second run does it)\n' "$name" >>"$STEPLINES"
        return 0
    fi
    printf '\n===== %s [timeout %s s] $ %s\n' "$name" "$lim" "$*" >>"$log"
    s=$(date +%s)
    # timeout runs programs: a function of this script runs in a bash of its own
    declare -F "$1" >/dev/null && set -- bash -c '"$@"' _ "$@"
    timeout -k 5 "$lim" "$@" >>"$log" 2>&1
    rc=$?
    case $rc in
        0) v=ok ;;
        3) v=UNAVAILABLE ;;
        124 | 137) v="TIMEOUT" ;;
        *) v="FAIL rc=$rc" ;;
    esac
    echo "===== end $name: $v in $(($(date +%s) - s)) s" >>"$log"
    printf '%-16s %-12s %4s s  %s\n' "$name" "$v" "$(($(date +%s) - s))" "${log##*/}" >>"$STEPLINES"
    case $rc in 124 | 137) ;; *) echo "$name" >>"$DONE" ;; esac # a timed-out step is tried again
    return 0
}

# ---------------------------------------------------------------------------
# What the machine has: cuBLAS (not in the bundle), compute-sanitizer, torch
# ---------------------------------------------------------------------------
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if ldd "$BUNDLE/tests/test_cuda" 2>/dev/null | grep -q 'libcublas.*not found'; then
    for d in "$CUDA_HOME/lib64" /usr/local/cuda*/lib64 /usr/lib/x86_64-linux-gnu \
        "$(python3 -c 'import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), "lib"))' 2>/dev/null)"; do
        [ -n "$d" ] && ls "$d"/libcublas.so.* >/dev/null 2>&1 && { export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; break; }
    done
fi
SANITIZER=$(command -v compute-sanitizer || ls "$CUDA_HOME"/bin/compute-sanitizer /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
PY=${PARRNN_PYTHON:-python3}

env_report() {
    echo "date: $(date -u)   bundle: $(head -n 1 "$BUNDLE/BUNDLE" 2>/dev/null)"
    uname -srm; echo "cores: $(nproc)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1 || echo "no nvidia-smi"
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"; ldd "$BUNDLE/tests/test_cuda" | grep -E 'cublas|gomp|not found'
    echo "compute-sanitizer: ${SANITIZER:-not found}"
    "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "cudnn", torch.backends.cudnn.version())' 2>&1 | tail -n 1
}

# the suite: every test program but the core ones, PARRNN_BACKEND=cuda, 4 at once
suite() {
    local t list rc=0 tmp
    tmp=$(mktemp -d)
    list=$(cd "$BUNDLE/tests" && ls | grep -Ev '^(backend_probe|test_cuda|test_conformance)$')
    [ "$SMOKE" = 1 ] && list="test_ops test_scan"
    printf '%s\n' $list | xargs -P 4 -I{} sh -c 'PARRNN_BACKEND=cuda OMP_NUM_THREADS=4 PRNT_QUICK='"$SMOKE"' '"$BUNDLE"'/tests/{} >'"$tmp"'/{}.log 2>&1; echo $? >'"$tmp"'/{}.rc'
    for t in $list; do
        echo "===== $t: rc=$(cat "$tmp/$t.rc" 2>/dev/null || echo killed)"
        cat "$tmp/$t.log" 2>/dev/null
        [ "$(cat "$tmp/$t.rc" 2>/dev/null)" = 0 ] || rc=1
    done
    rm -rf "$tmp"
    return $rc
}

sanitize() {
    local tool rc=0
    [ -n "$SANITIZER" ] || { echo "compute-sanitizer not found: skipped"; return 3; }
    for tool in memcheck racecheck synccheck; do
        echo "----- $tool"
        "$SANITIZER" --tool "$tool" --error-exitcode 97 --print-limit 20 "$BUNDLE/tools/gpu_probe" || rc=1
    done
    return $rc
}

ops_scyfi() {
    local rc=0
    if [ "$SMOKE" = 1 ]; then
        "$BUNDLE/bench/bench_ops" --quick || rc=1
        "$BUNDLE/bench/bench_scyfi" --quick --no-naive || rc=1
    else
        "$BUNDLE/bench/bench_ops" || rc=1
        "$BUNDLE/bench/bench_scyfi" --max-m 500 --time-budget 3 --no-naive || rc=1  # the reference and CUDA, side by side
    fi
    return $rc
}

rnn_cudnn() {
    "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1 ||
        echo "PyTorch with CUDA not importable by $PY: bench_rnn runs without its cuDNN side"
    if [ "$SMOKE" = 1 ]; then "$BUNDLE/bench/bench_rnn" --quick --backend cuda --no-torch
    else PARRNN_PYTHON=$PY "$BUNDLE/bench/bench_rnn" --backend cuda; fi
}

# DEER vs the sequential layer at the issue's shapes: n = 1 and 32, T = 10^6,
# B = 16 (bench_deer's batch), with gradients
# (n = 32 runs the fused kernels, O(B T n): bench_deer estimates ~66 GB with
# gradients; the composed path would need ten times that. Budget: 85% of the GPU's memory)
deer_targets() {
    local n ns="1 32" rc=0 GPU_MEM_GB
    GPU_MEM_GB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | head -n 1 | awk '{ printf "%d", $1 * 1.048576e-3 * 0.85 }')
    [ -n "$GPU_MEM_GB" ] && [ "$GPU_MEM_GB" -gt 0 ] 2>/dev/null || GPU_MEM_GB=60
    [ "$SMOKE" = 1 ] && ns="1 4" # --quick measures n = 1 and 4 only
    for n in $ns; do
        if [ "$SMOKE" = 1 ]; then "$BUNDLE/bench/bench_deer" --backend cuda --quick --n "$n" --T 1000 --grad || rc=1
        else "$BUNDLE/bench/bench_deer" --backend cuda --n "$n" --T 1000000 --grad --time-budget 100 --mem-gb "$GPU_MEM_GB" || rc=1; fi
    done
    return $rc
}

# cuDNN at the DEER shapes (GRU, B = 16, input = hidden = n) and at hidden
# 64 and 512 (GRU and LSTM, bench_rnn's shapes otherwise)
cudnn_targets() {
    local script=bench/bench_rnn_torch.py rc=0
    "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1 ||
        { echo "PyTorch with CUDA not importable by $PY: skipped"; return 3; }
    if [ "$SMOKE" = 1 ]; then
        "$PY" "$script" --device cuda --T 200 --batch 16 --input 4 --hidden 4 --kinds gru --repeats 2 || rc=1
        return $rc
    fi
    for n in 1 32; do
        "$PY" "$script" --device cuda --T 1000000 --batch 16 --input "$n" --hidden "$n" --kinds gru --repeats 2 || rc=1
    done
    "$PY" "$script" --device cuda --T 1000 --batch 16 --input 64 --hidden 64,512 --kinds gru,lstm --repeats 5 || rc=1
    return $rc
}

# the device scan grid with the look-back and the chunked scan forced
scan_choice() {
    local f rc=0
    set -o pipefail
    for f in lookback chunked; do
        PARRNN_CUDA_SCAN=$f "$BUNDLE/bench/bench_scan" --device-only $Q | sed "s/^BENCH /BENCH forced=$f /" || rc=1
    done
    return $rc
}

Q=""
[ "$SMOKE" = 1 ] && Q=--quick
export BUNDLE SMOKE SANITIZER PY LD_LIBRARY_PATH Q
export -f env_report suite sanitize ops_scyfi rnn_cudnn deer_targets cudnn_targets scan_choice
# the order: correctness first, then the targets' figures, then the rest
# (a second run, the machine still warm, does what the budget left out)
step env 01_core.log 20 env_report
step probe 01_core.log 30 "$BUNDLE/tests/backend_probe" cuda
step test_cuda 01_core.log 90 "$BUNDLE/tests/test_cuda"
step conformance 01_core.log 150 env PARRNN_BACKEND=cuda "$BUNDLE/tests/test_conformance"
step bench_scan 04_bench_scan.log 90 "$BUNDLE/bench/bench_scan" --device-only $Q
step deer_targets 05_bench_deer.log 240 deer_targets
step rnn_cudnn 07_rnn_cudnn.log 90 rnn_cudnn
step cudnn_targets 07_rnn_cudnn.log 90 cudnn_targets
step suite 02_suite.log 200 suite
step sanitize 03_sanitizer.log 150 sanitize
step bench_deer 05_bench_deer.log 90 "$BUNDLE/bench/bench_deer" --backend cuda $( [ "$SMOKE" = 1 ] && echo --quick || echo --max-n 64 --time-budget 3 --mem-gb 40)
step bench_ops_scyfi 06_bench_ops_scyfi.log 90 ops_scyfi
step scan_choice 04_bench_scan.log 150 scan_choice

# ---------------------------------------------------------------------------
# The summary: printed first (and only), kept as 00_summary.txt
# ---------------------------------------------------------------------------
{
    echo "gpu_check.sh: $(date -u +%FT%TZ), $(($(date +%s) - T0)) s of a ${BUDGET} s budget; bundle $(head -n 1 "$BUNDLE/BUNDLE" 2>/dev/null)"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /'
    echo "--- steps"
    cat "$STEPLINES"
    echo "--- test summaries and failures"
    grep -hE '^summary passed=|^gpu_probe: [0-9]+ checks|^FAIL|^===== [a-z_]+: rc=[^0]' "$LOGDIR"/0[123]_*.log 2>/dev/null | sort | uniq -c | sort -rn | head -n 40
    echo "--- sanitizers"
    grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|skipped' "$LOGDIR/03_sanitizer.log" 2>/dev/null | head -n 10
    echo "--- key figures (BENCH lines)"
    grep -hE '^BENCH .*(device_copy|scan_diag|backend=cuda|backend=torch)|^TORCH kind' "$LOGDIR"/0[4567]_*.log 2>/dev/null | head -n 90
} >"$SUM"
cat "$SUM"
exit 0
