#!/bin/sh
# Checks a GPU bundle (make gpu-bundle): every program is there and links
# nothing a GPU machine may lack (no OpenBLAS, LAPACK, OpenCL, CLBlast or
# MPI; no library ldd cannot find, cuBLAS aside: the GPU machine's toolkit
# provides it), and the folder fits what travels to that machine (64 MiB
# with the working tree; at most 48 MiB here, leaving room for the rest).
# Usage: sh tools/gpu_bundle_check.sh [folder]   (default build-gpu)
dir=${1:-build-gpu}
bad=0
[ -d "$dir/tests" ] && [ -x "$dir/tests/test_cuda" ] && [ -x "$dir/tools/gpu_probe" ] && [ -f "$dir/lib/libgomp.so.1" ] ||
    { echo "gpu_bundle_check: $dir is not a complete bundle (make gpu-bundle)"; exit 1; }
for f in "$dir"/tests/* "$dir"/bench/* "$dir"/tools/* "$dir"/lib/libparrnn.so; do
    libs=$(ldd "$f" 2>&1) || { echo "gpu_bundle_check: ldd $f failed: $libs"; bad=1; continue; }
    if printf '%s\n' "$libs" | grep -Eiq 'openblas|lapack|libblas|OpenCL|clblast|libmpi|open-rte|open-pal'; then
        echo "gpu_bundle_check: $f links a library the GPU machine may lack:"
        printf '%s\n' "$libs" | grep -Ei 'openblas|lapack|libblas|OpenCL|clblast|libmpi|open-rte|open-pal'
        bad=1
    fi
    if printf '%s\n' "$libs" | grep 'not found' | grep -vq 'libcublas'; then
        echo "gpu_bundle_check: $f: $(printf '%s\n' "$libs" | grep 'not found' | grep -v libcublas)"
        bad=1
    fi
    printf '%s\n' "$libs" | grep -q "libcudart\.so" && { echo "gpu_bundle_check: $f links libcudart.so (the bundle links it statically)"; bad=1; }
    case $f in *.so) own=libgomp ;; *) own="libgomp libparrnn" ;; esac
    for l in $own; do
        printf '%s\n' "$libs" | grep "$l" | grep -q "$dir/.*lib/$l" ||
            { echo "gpu_bundle_check: $f does not take $l from $dir/lib"; bad=1; }
    done
done
kb=$(du -sk "$dir" | cut -f1)
n=$(ls "$dir"/tests "$dir"/bench "$dir"/tools | grep -vc ':$')
echo "gpu_bundle_check: $dir: $n programs, $((kb / 1024)) MiB"
[ "$kb" -le $((48 * 1024)) ] || { echo "gpu_bundle_check: $dir is over 48 MiB"; bad=1; }
exit $bad
