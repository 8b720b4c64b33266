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
# PRNT_JOBS (default 1): programs run at once; their outputs are printed
# whole, in the order given, as each finishes in turn (OpenMP threads then
# wait passively: two programs spinning on two cores would crawl).
# Each program's wall time is printed after it, and the slowest at the end.
if [ "$1" = "--one" ]; then # internal: run job $2 of list $3, results in $4
    line=$(sed -n "$(($2 + 1))p" "$3")
    b=${line%% *}; t=${line#* }
    s=$(date +%s%N)
    if [ "$b" != "-" ]; then PARRNN_BACKEND=$b $PRNT_WRAP "$t" >"$4/$2.out" 2>&1
    else $PRNT_WRAP "$t" >"$4/$2.out" 2>&1; fi
    echo $? >"$4/$2.rc"
    echo $((($(date +%s%N) - s) / 1000000)) >"$4/$2.ms"
    exit 0
fi
passed=0; failed=0; skipped=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/prn_run.XXXXXX") || exit 1
list=$tmp/list
: >"$list"
for t in "$@"; do echo "- $t" >>"$list"; done
for b in $PRNT_BACKENDS; do
    if why=$("$PRNT_PROBE" "$b" 2>&1); then
        echo "== backend $b: $why; the suite again"
        for t in "$@"; do
            case "$t" in *.sh) ;; *) echo "$b $t" >>"$list" ;; esac
        done
    else
        echo "skip backend $b: $why"
        skipped=$((skipped + 1))
    fi
done
for e in $PRNT_ALSO; do echo "${e%%:*} ${e#*:}" >>"$list"; done
n=$(wc -l <"$list")
jobs=${PRNT_JOBS:-1}
report() { # idx: print job idx's output and add up its summary
    line=$(sed -n "$(($1 + 1))p" "$list")
    b=${line%% *}; t=${line#* }
    [ "$b" = "-" ] && b=""
    echo "== $t${b:+ (PARRNN_BACKEND=$b)}"
    cat "$tmp/$1.out"
    rc=$(cat "$tmp/$1.rc")
    ms=$(cat "$tmp/$1.ms")
    printf '%s %s\n' "$ms" "$t${b:+ ($b)}" >>"$tmp/times"
    echo "   ($((ms / 1000)).$((ms % 1000 / 100)) s)"
    sline=$(grep '^summary passed=' "$tmp/$1.out" | tail -n 1)
    if [ -z "$sline" ]; then
        echo "FAIL $t exited with status $rc without a summary"
        failed=$((failed + 1)); return
    fi
    p=$(echo "$sline" | sed 's/.*passed=\([0-9]*\).*/\1/')
    f=$(echo "$sline" | sed 's/.*failed=\([0-9]*\).*/\1/')
    s=$(echo "$sline" | sed 's/.*skipped=\([0-9]*\).*/\1/')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $t exited with status $rc"; f=1
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
}
if [ "$jobs" -le 1 ]; then
    i=0
    while [ "$i" -lt "$n" ]; do sh "$0" --one "$i" "$list" "$tmp"; report "$i"; i=$((i + 1)); done
else
    # the pool runs in the background; each output is printed once it and
    # all before it are done
    seq 0 $((n - 1)) | OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} xargs -P "$jobs" -I{} sh "$0" --one {} "$list" "$tmp" &
    pool=$!
    i=0
    while [ "$i" -lt "$n" ]; do
        while [ ! -f "$tmp/$i.ms" ]; do sleep 0.2; done
        report "$i"; i=$((i + 1))
    done
    wait "$pool"
fi
echo "slowest: $(sort -rn "$tmp/times" | head -n 6 | awk '{ printf "%s%s %.1f s", (NR > 1 ? "; " : ""), substr($0, index($0, " ") + 1), $1 / 1000 }')"
rm -rf "$tmp"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
