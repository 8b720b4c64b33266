#!/bin/sh
# Compile test: parrnn.h must build as C99 and as C++ (also with
# PARRNN_STATIC, without intrinsics, and C++ at -O2) with -Wall -Wextra -Wpedantic -Werror on gcc and clang;
# so must the README's quick start and examples/rnn_train_small.c at -O3
# (the latter also runs when PRNT_RNN_TRAIN_SMALL names its binary).
# The only programs of the project that compile the implementation
# themselves: this checks the single-file usage. Compiles run
# $PRNT_COMPILE_JOBS at once (default: the number of cores).
# Prints a summary line like the test programs.
cd "$(dirname "$0")/.." || exit 1
tmp=${TMPDIR:-/tmp}/prn_compile_$$
mkdir -p "$tmp"
jobs=${PRNT_COMPILE_JOBS:-$(nproc 2>/dev/null || echo 2)}
n=0
try() { # name compiler flags...: starts one compile (and run) in the background
    name=$1; shift
    n=$((n + 1))
    echo "$name" >"$tmp/$n.name"
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "skip $name ($1 not installed)" >"$tmp/$n.res"; return
    fi
    (if "$@" -Wall -Wextra -Wpedantic -Werror -I. -o "$tmp/$n.out" -lm 2>"$tmp/$n.err" && "$tmp/$n.out" >/dev/null; then
        echo "ok   $name" >"$tmp/$n.res"
    else
        { echo "FAIL $name"; cat "$tmp/$n.err"; } >"$tmp/$n.res"
    fi) &
    [ $((n % jobs)) -eq 0 ] && wait
}
try_c() { # name compiler flags...: compiles only (a program that links the implementation object)
    name=$1; shift
    n=$((n + 1))
    echo "$name" >"$tmp/$n.name"
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "skip $name ($1 not installed)" >"$tmp/$n.res"; return
    fi
    (if "$@" -Wall -Wextra -Wpedantic -Werror -I. -c -o "$tmp/$n.o" 2>"$tmp/$n.err"; then
        echo "ok   $name" >"$tmp/$n.res"
    else
        { echo "FAIL $name"; cat "$tmp/$n.err"; } >"$tmp/$n.res"
    fi) &
    [ $((n % jobs)) -eq 0 ] && wait
}
# The README's quick start (its first C block after "## Quick start", as a
# newcomer copies it; it defines the implementation) and the short RNN
# training program, warning-free at -O3 on both compilers.
awk '/^## Quick start/ { q = 1 } q && /^```c$/ { c = 1; next } c && /^```$/ { exit } c { print }' README.md >"$tmp/quick_start.c"
if ! grep -q "int main" "$tmp/quick_start.c"; then
    n=$((n + 1)); echo "FAIL README quick start: no C block with main after '## Quick start'" >"$tmp/$n.res"
fi
for cc in gcc clang; do
    try "$cc README quick start -O3 openmp" $cc -std=c99 -O3 -fopenmp "$tmp/quick_start.c"
    try_c "$cc examples/rnn_train_small.c -O3" $cc -std=c99 -O3 examples/rnn_train_small.c
done
# ... and the program itself, as make builds it, learns (exit status 0)
if [ -n "${PRNT_RNN_TRAIN_SMALL:-}" ]; then
    n=$((n + 1))
    if "$PRNT_RNN_TRAIN_SMALL" >"$tmp/$n.err" 2>&1; then echo "ok   run $PRNT_RNN_TRAIN_SMALL" >"$tmp/$n.res"
    else { echo "FAIL run $PRNT_RNN_TRAIN_SMALL"; cat "$tmp/$n.err"; } >"$tmp/$n.res"; fi
fi
for cc in gcc clang; do
    try "$cc c99" $cc -std=c99 tests/compile_c.c tests/compile_c_user.c
    try "$cc c99 static" $cc -std=c99 -DPARRNN_STATIC tests/compile_c.c
    try "$cc c99 -O3" $cc -std=c99 -O3 tests/compile_c.c tests/compile_c_user.c
    try "$cc c11 openmp" $cc -std=c11 -fopenmp tests/compile_c.c tests/compile_c_user.c
    try "$cc c11 openmp -O3" $cc -std=c11 -O3 -fopenmp tests/compile_c.c tests/compile_c_user.c
    try "$cc c99 no intrinsics" $cc -std=c99 -O2 -DPARRNN_NO_INTRINSICS tests/compile_c.c tests/compile_c_user.c
done
for cxx in g++ clang++; do
    try "$cxx c++11" $cxx -std=c++11 -x c++ tests/compile_cpp.cpp -x c++ tests/compile_c_user.c
    try "$cxx c++17 static" $cxx -std=c++17 -DPARRNN_STATIC tests/compile_cpp.cpp
    # optimised C++: g++ then sees the intrinsics headers' inlined code (-Winit-self)
    try_c "$cxx c++11 -O2" $cxx -std=c++11 -O2 tests/compile_cpp.cpp
done
wait
. "$(dirname "$0")/jobs_report.sh"
jobs_report "$tmp" "$n"
