#!/bin/sh
# Compile test: parrnn.h must build as C99 and as C++ (also with
# PARRNN_STATIC, and without intrinsics) with -Wall -Wextra -Wpedantic -Werror on gcc and clang.
# Prints a summary line like the test programs.
cd "$(dirname "$0")/.." || exit 1
passed=0; failed=0; skipped=0
tmp=${TMPDIR:-/tmp}/prn_compile_$$
mkdir -p "$tmp"
try() { # name compiler flags...
    name=$1; shift
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "skip $name ($1 not installed)"; skipped=$((skipped + 1)); return
    fi
    if "$@" -Wall -Wextra -Wpedantic -Werror -I. -o "$tmp/a.out" -lm 2>"$tmp/err" && "$tmp/a.out" >/dev/null; then
        echo "ok   $name"; passed=$((passed + 1))
    else
        echo "FAIL $name"; cat "$tmp/err"; failed=$((failed + 1))
    fi
}
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
done
rm -rf "$tmp"
echo "summary passed=$passed failed=$failed skipped=$skipped"
[ "$failed" -eq 0 ]
