#!/bin/sh
# The flow of tools/gpu_check.sh, on the CUDA emulator (build-cuda-emu laid
# out as the GPU bundle): a first run whose budget lets only the first
# steps start (the others are reported as skipped), then a second run that
# does only those; the summary comes first, at most 8 files are written,
# every step has a verdict. Speed means nothing here: sizes are small
# (GPU_CHECK_SMOKE=1). Prints a summary line like the test programs.
cd "$(dirname "$0")/.." || exit 1
B=${PRNT_EMU_BUNDLE:-build-cuda-emu}
passed=0; failed=0; skipped=0
ok() { if eval "$2"; then echo "ok   $1"; passed=$((passed + 1)); else echo "FAIL $1"; failed=$((failed + 1)); fi; }
if [ ! -x "$B/tools/gpu_probe" ] || ! command -v bash >/dev/null 2>&1; then
    echo "skip: no emulated bundle in $B (make cuda-emu programs) or no bash"
    echo "summary passed=0 failed=0 skipped=1"; exit 0
fi
tmp=${TMPDIR:-/tmp}/prn_gpuflow_$$
mkdir -p "$tmp"
steps=env,probe,sanitize,bench_scan,deer_targets,scan_choice
export GPU_CHECK_BUNDLE=$B GPU_CHECK_STATE=$tmp/done GPU_CHECK_SMOKE=1 GPU_CHECK_STEPS=$steps PARRNN_BACKEND=cuda
# run 1: 40 s leave 25 after the summary's 15: env and probe (limits 20
# and 30, at least 10 s each) start; the benchmarks (limit 90: at least 30) do not
GPU_CHECK_BUDGET=40 bash tools/gpu_check.sh "$tmp/out1" >"$tmp/stdout1" 2>&1
ok "first run: the summary comes first" "head -n 1 $tmp/stdout1 | grep -q '^gpu_check.sh: '"
ok "first run: env and probe ran" "grep -q '^env  *ok' $tmp/stdout1 && grep -q '^probe  *ok' $tmp/stdout1"
ok "first run: the benchmarks were skipped for the budget" \
    "[ \$(grep -c 'SKIPPED (budget spent' $tmp/stdout1) -ge 2 ]"
ok "first run: at most 8 files" "[ \$(ls $tmp/out1 | wc -l) -le 8 ] && [ -f $tmp/out1/00_summary.txt ]"
ok "first run: 00_summary.txt is what it printed" "cmp -s $tmp/out1/00_summary.txt $tmp/stdout1"
GPU_CHECK_BUDGET=300 bash tools/gpu_check.sh "$tmp/out2" >"$tmp/stdout2" 2>&1
ok "second run: env and probe not run again" \
    "grep -q '^env  *done in an earlier run' $tmp/stdout2 && grep -q '^probe  *done in an earlier run' $tmp/stdout2 && ! [ -f $tmp/out2/01_core.log ]"
ok "second run: the skipped steps ran" \
    "grep -q '^bench_scan  *ok' $tmp/stdout2 && grep -q '^deer_targets  *ok' $tmp/stdout2 && grep -q '^scan_choice  *ok' $tmp/stdout2"
ok "second run: DEER beside the sequential layer, two hidden sizes, with gradients (1 and 32 on a GPU)" \
    "grep -q '^BENCH name=deer_gru backend=cuda hidden=1 .*method=sequential grad=1' $tmp/out2/05_bench_deer.log && grep -q '^BENCH name=deer_gru backend=cuda hidden=4 .*method=deer grad=1' $tmp/out2/05_bench_deer.log"
ok "second run: the scan grid with each algorithm forced" \
    "grep -q '^BENCH forced=lookback name=scan_diag' $tmp/out2/04_bench_scan.log && grep -q '^BENCH forced=chunked name=scan_diag' $tmp/out2/04_bench_scan.log"
ok "second run: no compute-sanitizer here is reported, not failed" \
    "command -v compute-sanitizer >/dev/null || grep -q '^sanitize  *UNAVAILABLE' $tmp/stdout2"
ok "second run: the scan's device rows are in the summary" "grep -q '^BENCH name=device_copy backend=cuda' $tmp/stdout2"
ok "second run: at most 8 files" "[ \$(ls $tmp/out2 | wc -l) -le 8 ]"
[ "$failed" -eq 0 ] || { echo "--- run 1"; cat "$tmp/stdout1"; echo "--- run 2"; cat "$tmp/stdout2"; }
rm -rf "$tmp"
echo "summary passed=$passed failed=$failed skipped=$skipped"
[ "$failed" -eq 0 ]
