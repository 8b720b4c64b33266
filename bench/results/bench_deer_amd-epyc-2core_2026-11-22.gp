# gnuplot script written by bench_deer: gnuplot bench/results/bench_deer_amd-epyc-2core_2026-11-22.gp
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1000,650 font ",11"
} else {
    set terminal png size 1000,650
}
set datafile missing "?"
set logscale xy
set format x "10^{%L}"
set xrange [500:2000000]
set xlabel "sequence length T"
set ylabel "speed-up over sequential (seconds / seconds)"
set key outside right top
set grid

set yrange [0.0422:2]
set output "bench/results/bench_deer_amd-epyc-2core_2026-11-22_deer.png"
set title "DEER (dense Jacobians)\nGRU, batch 16, input size = hidden size n, f32; parrnn backend reference, 1 thread"
plot "bench/results/bench_deer_amd-epyc-2core_2026-11-22.dat" index 0 using 2:6 with linespoints lw 2 pt 7 title "n = 1", \
     "bench/results/bench_deer_amd-epyc-2core_2026-11-22.dat" index 1 using 2:6 with linespoints lw 2 pt 7 title "n = 4", \
     1 with lines dt 2 lw 2 lc rgb "black" title "1 (break-even)"
unset output

set yrange [0.028:2]
set output "bench/results/bench_deer_amd-epyc-2core_2026-11-22_quasi.png"
set title "quasi-DEER (diagonal Jacobians)\nGRU, batch 16, input size = hidden size n, f32; parrnn backend reference, 1 thread"
plot "bench/results/bench_deer_amd-epyc-2core_2026-11-22.dat" index 0 using 2:7 with linespoints lw 2 pt 7 title "n = 1", \
     "bench/results/bench_deer_amd-epyc-2core_2026-11-22.dat" index 1 using 2:7 with linespoints lw 2 pt 7 title "n = 4", \
     1 with lines dt 2 lw 2 lc rgb "black" title "1 (break-even)"
unset output
