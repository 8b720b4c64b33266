#!/bin/sh
# Code size of the opt-out builds (LEAVING PARTS OUT in parrnn.h): the
# implementation object (parrnn_impl.c) and examples/engine_frames linked
# with it, built with $CC (default gcc) and $FLAGS (default -std=c99 -O2:
# no OpenMP, no CBLAS, as a small engine would), for the full build, each
# macro and PARRNN_ONLY_FRAMES. Prints `size`'s text, data and bss (bytes)
# and writes nothing else; about a minute on one core (the builds run one
# after the other). Usage: sh bench/optout_size.sh [> bench/results/...]
cd "$(dirname "$0")/.." || exit 1
CC=${CC:-gcc}
FLAGS=${FLAGS:--std=c99 -O2}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/prn_size.XXXXXX") || exit 1
echo "# parrnn code size by opt-out macro, $(date -u +%Y-%m-%d) $(uname -m), $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
echo "# commit $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo ' (modified)'); $($CC --version | head -n 1)"
echo "# flags: $FLAGS -I. (impl: -c parrnn_impl.c; program: examples/engine_frames.c + impl, -lm)"
echo "# load: $(uptime | sed 's/.*load/load/')"
printf '%-34s %10s %10s %10s   %10s %10s\n' "build" "impl text" "data" "bss" "prog text" "vs full"
full=
for cfg in "full|" "PARRNN_NO_SCYFI|-DPARRNN_NO_SCYFI" "PARRNN_NO_DEER|-DPARRNN_NO_DEER" \
           "PARRNN_NO_TRAINING|-DPARRNN_NO_TRAINING" "PARRNN_ONLY_FRAMES|-DPARRNN_ONLY_FRAMES"; do
    name=${cfg%%|*}; defs=${cfg#*|}
    # shellcheck disable=SC2086
    if ! $CC $FLAGS $defs -I. -c -o "$tmp/impl.o" parrnn_impl.c ||
       ! $CC $FLAGS $defs -I. -c -o "$tmp/prog.o" examples/engine_frames.c ||
       ! $CC -o "$tmp/prog" "$tmp/prog.o" "$tmp/impl.o" -lm; then
        echo "$name: build failed"; rm -rf "$tmp"; exit 1
    fi
    set -- $(size "$tmp/impl.o" | tail -n 1)
    it=$1; id=$2; ib=$3
    set -- $(size "$tmp/prog" | tail -n 1)
    pt=$1
    [ -z "$full" ] && full=$pt
    printf '%-34s %10s %10s %10s   %10s %9s%%\n' "$name" "$it" "$id" "$ib" "$pt" "$((pt * 100 / full))"
done
rm -rf "$tmp"
