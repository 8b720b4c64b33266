#!/bin/sh
# Runs bench_mpi with 1, 2 and 4 ranks (each run compares with its own
# 1-rank baseline) and prints the three reports one after the other:
#   sh bench/run_mpi_bench.sh [bench_mpi options]  | tee bench/results/bench_mpi_<machine>_<date>.txt
# Environment: MPIRUN (default mpirun), MPIRUN_FLAGS (default --oversubscribe,
# plus --allow-run-as-root as root), MPI_NPS (default "1 2 4"), BENCH_MPI
# (default build/bench/bench_mpi).
MPIRUN=${MPIRUN:-mpirun}
MPI_NPS=${MPI_NPS:-1 2 4}
BENCH_MPI=${BENCH_MPI:-build/bench/bench_mpi}
if [ -z "${MPIRUN_FLAGS+x}" ]; then
    MPIRUN_FLAGS="--oversubscribe"
    if [ "$(id -u)" -eq 0 ]; then MPIRUN_FLAGS="$MPIRUN_FLAGS --allow-run-as-root"; fi
fi
status=0
for np in $MPI_NPS; do
    echo "=================================================================="
    echo "== $MPIRUN $MPIRUN_FLAGS -np $np $BENCH_MPI $*   ($(date -u '+%Y-%m-%d %H:%M:%S UTC'); load: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))"
    echo "=================================================================="
    $MPIRUN $MPIRUN_FLAGS -np "$np" "$BENCH_MPI" "$@" || status=1
    echo
done
exit $status
