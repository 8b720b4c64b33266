#!/bin/sh
# The parrnn-scyfi command-line tool: exit statuses, messages, --json.
# Usage: sh tests/tool_scyfi.sh [TOOL]   (default $PRNT_SCYFI, else build/parrnn-scyfi)
# Prints a summary line like the test programs; skips when the tool is not built.
cd "$(dirname "$0")/.." || exit 1
tool=${1:-${PRNT_SCYFI:-build/parrnn-scyfi}}
passed=0; failed=0; skipped=0
if [ ! -x "$tool" ]; then
    echo "skip tool_scyfi ($tool not built)"
    echo "summary passed=0 failed=0 skipped=1"
    exit 0
fi
tmp=${TMPDIR:-/tmp}/prn_tool_scyfi_$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT

# One fixed point, (1/0.3, -2), stable (J = diag(0.7, 0.5)); no cycles.
cat > "$tmp/fp.txt" <<'EOF'
# z' = A z + W relu(z) + h
kind plrnn
M 2
A 0.5 0.5
W 0.2 0
  0   0.2
h 1 -1
EOF
# a saddle: z' = diag(0.5, 1.5) z + (1, 1): z* = (2, -2), eigenvalues 0.5 and 1.5;
# unstable: diag(1.5, 2): z* = (-2, -1); none: A = 1, W = 0, h = 1 (z' = z + 1)
printf 'kind plrnn\nM 2\nA 0.5 1.5\nW 0 0\n  0 0\nh 1 1\n' > "$tmp/saddle.txt"
printf 'kind plrnn\nM 2\nA 1.5 2\nW 0 0\n  0 0\nh 1 1\n' > "$tmp/unstable.txt"
printf 'kind plrnn\nM 2\nA 1 1\nW 0 0\n  0 0\nh 1 1\n' > "$tmp/nocycle.txt"
# W has 3 numbers: line 6
printf 'kind plrnn\nM 2\nA 0.5 0.5\n# c\n\nW 1 2 3\nh 1 2\n' > "$tmp/bad.txt"
# H = 12: order 2 needs 2^24 sequences, more than the exhaustive limit
{
    echo "kind shplrnn"; echo "M 2"; echo "H 12"; echo "A 0.5 0.5"
    echo "W1 0.1 -0.2 0.3 -0.1 0.2 -0.3 0.1 -0.2 0.3 -0.1 0.2 -0.3"
    echo "   0.2 0.1 -0.1 0.3 -0.2 0.1 0.2 -0.3 0.1 0.2 -0.1 0.3"
    echo "W2 1 -1 0.5 0.5 -0.5 1 0.3 -0.7 1 1 -1 -1 0.2 0.4 -0.6 0.8 0.9 -0.1 0.7 0.3 -0.4 0.6 1 0.5"
    echo "h1 0.1 -0.1"
    echo "h2 0.1 -0.2 0.3 -0.4 0.5 -0.6 0.7 -0.8 0.9 -1 0.2 -0.3"
} > "$tmp/big.txt"

# expect NAME STATUS PATTERN_IN_STDERR -- ARGS...   (PATTERN "" = not checked;
# $run_prefix, e.g. "timeout 20", runs before the tool)
run_prefix=""
expect() {
    name=$1; want=$2; pat=$3; shift 4
    $run_prefix "$tool" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ "$rc" -ne "$want" ]; then
        echo "FAIL $name: exit status $rc, want $want"; sed 's/^/    /' "$tmp/err" | head -n 5
        failed=$((failed + 1)); return 1
    fi
    if [ -n "$pat" ] && ! grep -q -- "$pat" "$tmp/err"; then
        echo "FAIL $name: stderr lacks \"$pat\""; sed 's/^/    /' "$tmp/err" | head -n 5
        failed=$((failed + 1)); return 1
    fi
    echo "ok   $name"; passed=$((passed + 1)); return 0
}
check() { # NAME CONDITION-STATUS
    if [ "$2" -eq 0 ]; then echo "ok   $1"; passed=$((passed + 1))
    else echo "FAIL $1"; sed 's/^/    /' "$tmp/out" | head -n 5; failed=$((failed + 1)); fi
}

# json_valid NAME: $tmp/out parses as one JSON document (when a Python is here)
json_valid() {
    py=""
    for p in python3 /usr/bin/python3; do command -v "$p" >/dev/null 2>&1 && { py=$p; break; }; done
    if [ -z "$py" ]; then echo "skip $1: valid JSON (no python3)"; skipped=$((skipped + 1)); return; fi
    "$py" -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/out" 2>"$tmp/jerr"
    check "$1: valid JSON" $?
}

expect "--help" 0 "" -- --help
grep -q "^usage:" "$tmp/out"; check "--help prints the usage on stdout" $?
# every option, each with its default
for o in --kmax --outer --inner --seed --backend --threads --max-bytes --exhaustive --json --help; do
    grep -E -- "^  $o( |,).*\(default" "$tmp/out" >/dev/null || [ "$o" = --help ] && grep -q -- "^  $o" "$tmp/out"
    check "--help lists $o$([ "$o" = --help ] || echo ' with its default')" $?
done
expect "no model file" 2 "usage:" --
expect "two model files" 2 "usage:" -- "$tmp/fp.txt" "$tmp/fp.txt"
expect "unknown option" 2 "--frob" -- --frob "$tmp/fp.txt"
expect "--kmax 0" 2 "--kmax" -- --kmax 0 "$tmp/fp.txt"
expect "--kmax without a value" 2 "--kmax" -- --kmax
expect "--kmax 1.5" 2 "--kmax" -- --kmax 1.5 "$tmp/fp.txt"
expect "--outer -1" 2 "--outer" -- --outer -1 "$tmp/fp.txt"
expect "--inner x" 2 "--inner" -- --inner x "$tmp/fp.txt"
expect "--seed -1" 2 "--seed" -- --seed -1 "$tmp/fp.txt"
expect "--threads 0" 2 "--threads" -- --threads 0 "$tmp/fp.txt"
expect "--kmax 99999999999" 2 "--kmax" -- --kmax 99999999999 "$tmp/fp.txt"
# one past the library's limit (PRN_SCYFI_MAX_KMAX): bad usage, refused
# before anything is printed (it once printed the header and exited 1)
expect "--kmax 100001" 2 "--kmax" -- --kmax 100001 "$tmp/fp.txt"
test ! -s "$tmp/out"; check "--kmax 100001 prints nothing on stdout" $?
# a stream without end: refused at its first NUL byte, not read until
# memory runs out (timeout: a hang fails)
if [ -r /dev/zero ] && command -v timeout >/dev/null 2>&1; then
    run_prefix="timeout 20"
    expect "/dev/zero as the model file" 2 "NUL" -- /dev/zero
    run_prefix=""
fi
expect "missing file" 2 "prn_pwl_load" -- "$tmp/none.txt"
expect "--max-bytes 0" 2 "--max-bytes" -- --max-bytes 0 "$tmp/fp.txt"
expect "a file longer than --max-bytes" 2 "max_file_bytes" -- --max-bytes 20 "$tmp/fp.txt"
expect "a file within --max-bytes" 0 "" -- --max-bytes 4096 "$tmp/fp.txt"
expect "bad file: the line" 2 "line 6" -- "$tmp/bad.txt"
expect "bad file: the field" 2 "'W'" -- "$tmp/bad.txt"
expect "unknown backend" 1 "nosuch" -- --backend nosuch "$tmp/fp.txt"
expect "search failure (exhaustive limit)" 1 "prn_scyfi" -- --exhaustive --kmax 2 --json "$tmp/big.txt"

for mode in "" "--exhaustive"; do
    if expect "--json $mode" 0 "" -- --json $mode --kmax 3 --seed 5 --threads 1 "$tmp/fp.txt"; then
        json_valid "--json $mode"
        grep -q '^{"kmax": 3, "counts": \[1, 0, 0\], "cycles": \[$' "$tmp/out"; check "--json $mode: kmax and counts" $?
        # the numbers to about 1e-10 (%.17g: the last digits may differ)
        n1='3\.3333333333[0-9]*'; n2='-(2|2\.0000000000[0-9]*|1\.9999999999[0-9]*)'
        e1='0\.(6999999999|7000000000)[0-9]*'; e2='0\.(5|50000000000[0-9]*|49999999999[0-9]*)'; z='-?0'
        grep -Eq "^\{\"k\": 1, \"type\": \"stable\", \"stable\": true, \"max_abs_eigenvalue\": $e1, \"points\": \[\[$n1, $n2\]\], \"eigenvalues\": \[\[$e1, $z\], \[$e2, $z\]\]\}\$" "$tmp/out"
        check "--json $mode: the fixed point, its eigenvalues, stable" $?
    fi
done
for t in saddle unstable; do
    if expect "--json $t" 0 "" -- --json --exhaustive --kmax 2 "$tmp/$t.txt"; then
        json_valid "--json $t"
        grep -q "^{\"k\": 1, \"type\": \"$t\", \"stable\": false," "$tmp/out"; check "--json: the fixed point's type is $t" $?
    fi
done
for mode in "" "--exhaustive"; do
    if expect "--json $mode, no cycle" 0 "" -- --json $mode --kmax 2 "$tmp/nocycle.txt"; then
        json_valid "--json $mode, no cycle"
        [ "$(cat "$tmp/out")" = '{"kmax": 2, "counts": [0, 0], "cycles": []}' ]
        check "--json $mode, no cycle: an empty result ($(cat "$tmp/out"))" $?
    fi
done
if expect "table" 0 "" -- --kmax 2 "$tmp/fp.txt"; then
    grep -q "stable" "$tmp/out" && grep -q "^summary" "$tmp/out"; check "table: a stable cycle and the summary" $?
fi

echo "summary passed=$passed failed=$failed skipped=$skipped"
[ "$failed" -eq 0 ]
