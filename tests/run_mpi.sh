#!/bin/sh
# Runs an MPI test program under mpirun once per rank count and adds up the
# summary lines ("summary passed=N failed=N skipped=N", printed by rank 0),
# as tests/run.sh does; the last line reads "N passed, N failed, N skipped".
#   sh tests/run_mpi.sh PROGRAM [ARGS...]
# Environment: MPIRUN (default mpirun), MPIRUN_FLAGS (e.g. "--oversubscribe
# --allow-run-as-root"), MPI_NPS (rank counts, default "1 2 4"),
# MPI_TIMEOUT (seconds per run, default 300; needs timeout(1)).
# A run that dies, hangs past the timeout or prints no summary counts as
# one failure. When several summary lines appear (ranks that each print
# one), the first one's counts are taken, with the most failures of any.
MPIRUN=${MPIRUN:-mpirun}
MPI_NPS=${MPI_NPS:-1 2 4}
MPI_TIMEOUT=${MPI_TIMEOUT:-300}
if [ $# -lt 1 ]; then echo "usage: $0 PROGRAM [ARGS...]" >&2; exit 2; fi
TO=""
if command -v timeout >/dev/null 2>&1; then TO="timeout $MPI_TIMEOUT"; fi
passed=0; failed=0; skipped=0
for np in $MPI_NPS; do
    echo "== $MPIRUN $MPIRUN_FLAGS -np $np $*"
    out=$($TO $MPIRUN $MPIRUN_FLAGS -np "$np" "$@" 2>&1); rc=$?
    printf '%s\n' "$out"
    lines=$(printf '%s\n' "$out" | grep '^summary passed=')
    if [ "$rc" -eq 124 ]; then
        echo "FAIL $1 with $np ranks: timed out after $MPI_TIMEOUT s"
        failed=$((failed + 1)); continue
    fi
    if [ -z "$lines" ]; then
        echo "FAIL $1 with $np ranks exited with status $rc without a summary"
        failed=$((failed + 1)); continue
    fi
    first=$(printf '%s\n' "$lines" | head -n 1)
    p=$(echo "$first" | sed 's/.*passed=\([0-9]*\).*/\1/')
    s=$(echo "$first" | sed 's/.*skipped=\([0-9]*\).*/\1/')
    f=$(printf '%s\n' "$lines" | sed 's/.*failed=\([0-9]*\).*/\1/' | sort -n | tail -n 1)
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $1 with $np ranks exited with status $rc"; f=1
    fi
    echo "-- $np ranks: $p passed, $f failed, $s skipped"
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
