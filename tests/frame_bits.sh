#!/bin/sh
# The float frames' bits do not depend on how the library is built:
# tests/frame_bits.c, with the implementation, is compiled in several ways
# (gcc and clang; -O1, -O2, -O3 -march=native with contraction on;
# two at a time, or $PRNT_COMPILE_JOBS;
# without AVX-512 (the AVX2 path), without AVX2 or intrinsics (the portable
# path with fmaf))
# and every build must print the same bits. Prints a summary line like the
# test programs; a compiler that is missing is a skip.
cd "$(dirname "$0")/.." || exit 1
passed=0; failed=0; skipped=0
tmp=${TMPDIR:-/tmp}/prn_frame_bits_$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT
jobs=${PRNT_COMPILE_JOBS:-$(nproc 2>/dev/null || echo 2)}
n=0
names=""
build() { # name compiler flags...: builds and runs in the background ($jobs at once)
    name=$1; shift
    n=$((n + 1)); names="$names $name"
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "skip $name ($1 not installed)" >"$tmp/$name.res"; return
    fi
    (if ! "$@" -I. -o "$tmp/$name" tests/frame_bits.c parrnn_impl.c -lm -lpthread 2>"$tmp/$name.err"; then
        { echo "FAIL $name: does not build"; head -n 20 "$tmp/$name.err"; } >"$tmp/$name.res"
    elif ! "$tmp/$name" >"$tmp/$name.out" 2>"$tmp/$name.err"; then
        { echo "FAIL $name: exit status $?"; head -n 5 "$tmp/$name.err"; } >"$tmp/$name.res"
    else
        echo built >"$tmp/$name.res"
    fi) &
    [ $((n % jobs)) -eq 0 ] && wait
}
build gcc-O2-noavx512 gcc -std=c99 -O2 -DPARRNN_NO_AVX512
build gcc-O3-native-contract gcc -std=gnu99 -O3 -march=native -ffp-contract=fast
build gcc-O2-noavx2-native gcc -std=gnu99 -O2 -march=native -ffp-contract=fast -DPARRNN_NO_AVX2
build gcc-O1-nointrinsics gcc -std=c99 -O1 -DPARRNN_NO_INTRINSICS
build clang-O3-native-contract clang -std=gnu99 -O3 -march=native -ffp-contract=fast
build clang-O2-noavx2 clang -std=c99 -O2 -DPARRNN_NO_AVX2
wait
# every build's bits against the first one's
ref=""
for name in $names; do
    case $(head -n 1 "$tmp/$name.res") in
        skip*) cat "$tmp/$name.res"; skipped=$((skipped + 1)); continue ;;
        FAIL*) cat "$tmp/$name.res"; failed=$((failed + 1)); continue ;;
    esac
    path=$(tail -n 1 "$tmp/$name.out")
    sed '$d' "$tmp/$name.out" >"$tmp/$name.bits"
    if [ -z "$ref" ]; then
        ref=$name
        echo "ok   $name ($path; $(wc -l <"$tmp/$name.bits") lines: the reference)"; passed=$((passed + 1))
    elif cmp -s "$tmp/$ref.bits" "$tmp/$name.bits"; then
        echo "ok   $name ($path): same bits as $ref"; passed=$((passed + 1))
    else
        echo "FAIL $name ($path): bits differ from $ref"
        diff "$tmp/$ref.bits" "$tmp/$name.bits" | head -n 4 | cut -c1-200
        failed=$((failed + 1))
    fi
done
echo "summary passed=$passed failed=$failed skipped=$skipped"
[ "$failed" -eq 0 ]
