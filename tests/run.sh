#!/bin/sh
# Runs each test program given and adds up their summary lines.
# A program that dies without a summary counts as one failure.
# PRNT_WRAP, when set, prefixes each program (e.g. valgrind).
passed=0; failed=0; skipped=0
for t in "$@"; do
    echo "== $t"
    out=$($PRNT_WRAP "$t" 2>&1); rc=$?
    printf '%s\n' "$out"
    line=$(printf '%s\n' "$out" | grep '^summary passed=' | tail -n 1)
    if [ -z "$line" ]; then
        echo "FAIL $t exited with status $rc without a summary"
        failed=$((failed + 1)); continue
    fi
    p=$(echo "$line" | sed 's/.*passed=\([0-9]*\).*/\1/')
    f=$(echo "$line" | sed 's/.*failed=\([0-9]*\).*/\1/')
    s=$(echo "$line" | sed 's/.*skipped=\([0-9]*\).*/\1/')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $t exited with status $rc"; f=1
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
