#!/bin/sh
# Opt-out check (LEAVING PARTS OUT at the top of parrnn.h): the
# implementation built with PARRNN_NO_SCYFI, PARRNN_NO_DEER,
# PARRNN_NO_TRAINING, the three together and PARRNN_ONLY_FRAMES, each
#   - compiles warning-free (-Wall -Wextra -Wpedantic -Werror) with gcc as
#     C99 at -O2 with OpenMP (an engine's build; -O2 is where gcc's
#     flow warnings show) and with clang++ as C++11 at -O0 (the three
#     together also with clang as C99 at -O0 and g++ as C++11 at -O2),
#   - links tests/optout_use.c built with the same macros, which runs what
#     remains (and checks the backend's slots of the left-out parts are
#     NULL): it must pass,
#   - and holds none of the left-out functions: nm lists no symbol (public
#     or private, demangled for C++) of the part's prefixes below.
# PRNT_FULL_OBJ, when set, is the full build's object (make's build/parrnn.o):
# each part's prefixes must name functions there, so that a renamed
# function cannot make the nm test pass by matching nothing.
# Compiles run $PRNT_COMPILE_JOBS at once (default: the number of cores).
# Prints a summary line like the test programs.
cd "$(dirname "$0")/.." || exit 1
tmp=${TMPDIR:-/tmp}/prn_optout_$$
mkdir -p "$tmp"
jobs=${PRNT_COMPILE_JOBS:-$(nproc 2>/dev/null || echo 2)}
W="-Wall -Wextra -Wpedantic -Werror -I."

# The left-out functions of each part, as prefixes of their names.
SCYFI='prn_scyfi|prn_pwl_|prn_eigenvalues|prn__scyfi|prn__sc_|prn__pwl|prn__eig_|prn__lu_solve|prn__ref_solve_batched'
DEER='prn_deer|prn__deer|prn__dz_|prn__ref_deer'
TRAINING='prn_backward|prn__backward|prn_tape_record|prn_optim_|prn__optim|prn_clip_grad_norm|prn__bw_|prn__ref_sgd_update|prn__ref_adam_update|prn__ref_rnn_gates_backward|prn__ref_rnn_layer_backward|prn__layer_bw_|prn__lanes_bw_|prn__ref_deer_adjoint'

symbols() { # object: its defined symbols' names, demangled, one a line
    nm -C --defined-only "$1" | sed 's/^[0-9a-fA-F]* *[A-Za-z] //'
}

n=0
# name "macros" "parts" compiler lang-flags...: one build, link, run and nm check, in the background
try() {
    name=$1; defs=$2; parts=$3; shift 3
    n=$((n + 1))
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "skip $name ($1 not installed)" >"$tmp/$n.res"; return
    fi
    (d=$tmp/$n; mkdir -p "$d"
     ok=1
     # shellcheck disable=SC2086
     if ! "$@" $W $defs -c -o "$d/impl.o" parrnn_impl.c 2>"$d/err" ||
        ! "$@" $W $defs -c -o "$d/use.o" tests/optout_use.c 2>>"$d/err" ||
        ! "$1" -o "$d/use" "$d/use.o" "$d/impl.o" $LINK -lm -lpthread 2>>"$d/err"; then
         ok=0
     elif ! "$d/use" >"$d/out" 2>&1; then
         ok=0; { echo "tests/optout_use.c failed:"; cat "$d/out"; } >>"$d/err"
     else
         symbols "$d/impl.o" >"$d/syms"
         for p in $parts; do
             eval "pat=\$$p"
             if grep -E "^($pat)" "$d/syms" >"$d/left"; then
                 ok=0; { echo "left out $p, yet the object has:"; head -n 20 "$d/left"; } >>"$d/err"
             fi
         done
     fi
     if [ $ok = 1 ]; then echo "ok   $name" >"$tmp/$n.res"
     else { echo "FAIL $name"; cat "$d/err"; } >"$tmp/$n.res"; fi) &
    [ $((n % jobs)) -eq 0 ] && wait
}

# The prefixes name functions of the full build (else the check is empty).
if [ -n "${PRNT_FULL_OBJ:-}" ]; then
    n=$((n + 1))
    symbols "$PRNT_FULL_OBJ" >"$tmp/full.syms"
    res="ok   each part's prefixes name functions of the full build ($PRNT_FULL_OBJ)"
    for p in SCYFI DEER TRAINING; do
        eval "pat=\$$p"
        c=$(grep -cE "^($pat)" "$tmp/full.syms")
        [ "$c" -gt 0 ] || res="FAIL the $p prefixes match nothing in $PRNT_FULL_OBJ"
    done
    echo "$res" >"$tmp/$n.res"
fi

ALL="-DPARRNN_NO_SCYFI -DPARRNN_NO_DEER -DPARRNN_NO_TRAINING"
for cfg in "NO_SCYFI|-DPARRNN_NO_SCYFI|SCYFI" "NO_DEER|-DPARRNN_NO_DEER|DEER" \
           "NO_TRAINING|-DPARRNN_NO_TRAINING|TRAINING" "the three|$ALL|SCYFI DEER TRAINING" \
           "ONLY_FRAMES|-DPARRNN_ONLY_FRAMES|SCYFI DEER TRAINING"; do
    cname=${cfg%%|*}; rest=${cfg#*|}; cdefs=${rest%%|*}; cparts=${rest#*|}
    LINK=-fopenmp; try "$cname: gcc c99 -O2 openmp" "$cdefs" "$cparts" gcc -std=c99 -O2 -fopenmp
    LINK=; try "$cname: clang++ c++11 -O0" "$cdefs" "$cparts" clang++ -std=c++11 -O0 -x c++
done
# (gcc keeps unused static functions at -O0: its builds that nm reads are optimised)
LINK=; try "the three: clang c99 -O0" "$ALL" "SCYFI DEER TRAINING" clang -std=c99 -O0
LINK=; try "the three: g++ c++11 -O2" "$ALL" "SCYFI DEER TRAINING" g++ -std=c++11 -O2 -x c++
wait
. "$(dirname "$0")/jobs_report.sh"
jobs_report "$tmp" "$n"
