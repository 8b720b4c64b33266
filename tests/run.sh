#!/bin/sh
# Runs each test program given and adds up their summary lines.
# A program that dies without a summary counts as one failure.
# PRNT_WRAP, when set, prefixes each program (e.g. valgrind).
# PRNT_BACKENDS, when set, names more backends: the programs (not the .sh
# scripts) run once more per backend with PARRNN_BACKEND set to it, when
# the probe program $PRNT_PROBE can create a context on it; otherwise that
# pass counts as one skipped test, with the reason printed.
# PRNT_ALSO, when set, lists backend:program pairs, each run once more
# with PARRNN_BACKEND=backend (the programs of the emulated CUDA build).
passed=0; failed=0; skipped=0
run_one() { # program [backend]
    t=$1
    echo "== $t${2:+ (PARRNN_BACKEND=$2)}"
    if [ -n "$2" ]; then out=$(PARRNN_BACKEND=$2 $PRNT_WRAP "$t" 2>&1); rc=$?
    else out=$($PRNT_WRAP "$t" 2>&1); rc=$?; fi
    printf '%s\n' "$out"
    line=$(printf '%s\n' "$out" | grep '^summary passed=' | tail -n 1)
    if [ -z "$line" ]; then
        echo "FAIL $t exited with status $rc without a summary"
        failed=$((failed + 1)); return
    fi
    p=$(echo "$line" | sed 's/.*passed=\([0-9]*\).*/\1/')
    f=$(echo "$line" | sed 's/.*failed=\([0-9]*\).*/\1/')
    s=$(echo "$line" | sed 's/.*skipped=\([0-9]*\).*/\1/')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $t exited with status $rc"; f=1
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
}
for t in "$@"; do run_one "$t"; done
for b in $PRNT_BACKENDS; do
    if why=$("$PRNT_PROBE" "$b" 2>&1); then
        echo "== backend $b: $why; the suite again"
        for t in "$@"; do
            case "$t" in *.sh) ;; *) run_one "$t" "$b" ;; esac
        done
    else
        echo "skip backend $b: $why"
        skipped=$((skipped + 1))
    fi
done
for e in $PRNT_ALSO; do run_one "${e#*:}" "${e%%:*}"; done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
