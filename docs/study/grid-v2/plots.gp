# Written by report.py; `gnuplot plots.gp` in this directory redraws the plots.
set terminal pngcairo size 1700,800 font ',11' noenhanced
set grid
set key inside top right vertical box opaque samplen 3
set terminal pngcairo size 1700,1450 font ',11' noenhanced
set output 'loss_vs_tokens.png'
set multiplot layout 2,2 title "Eval loss of the global θ vs tokens: 10.2 M tokens per run (K = 8), ppu-mlp-8-1.5x: 15.4 M (1.5x); not shown: 4 rows at other model sizes (gap_vs_params.png)\nrows with several seeds: thick line = mean, band = min..max, thin lines = each seed" font ',12'
set key inside top right vertical box opaque samplen 3; set rmargin
set title 'methods'; set xlabel 'tokens, all ranks (millions)'; set ylabel 'eval loss of θ (nats/token)'
set yrange [3.2479:8.3273]; set xrange [0:*]
set label 1 'unigram entropy of val under train counts' at graph 0.98, first 6.373705731191416 right offset 0, 0.7 textcolor rgb '#555555'
plot 'curve-streaming-diloco.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-2.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#9467bd' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):10 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):11 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-2.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($2/1e+06):10 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($2/1e+06):11 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):10 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):11 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):10 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):11 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ddp.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 1 ps 0.9 pi 4 lc rgb '#000000' title 'ddp', \
  'curve-diloco.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 2 ps 0.9 pi 4 lc rgb '#1f77b4' title 'diloco', \
  'curve-streaming-diloco.dat' using ($2/1e+06):4 with linespoints lw 3 dt 1 pt 5 ps 0.9 pi 4 lc rgb '#2ca02c' title 'streaming-diloco (mean of 5 seeds)', \
  'curve-ppu-mlp-2.dat' using ($2/1e+06):4 with linespoints lw 3 dt 1 pt 7 ps 0.9 pi 4 lc rgb '#d62728' title 'ppu-mlp-2 (mean of 5 seeds)', \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):4 with linespoints lw 3 dt 1 pt 9 ps 0.9 pi 4 lc rgb '#ff7f0e' title 'ppu-mlp-4 (mean of 5 seeds)', \
  'curve-ppu-mlp-8.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 11 ps 0.9 pi 4 lc rgb '#8c564b' title 'ppu-mlp-8', \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):4 with linespoints lw 3 dt 1 pt 4 ps 0.9 pi 4 lc rgb '#9467bd' title 'ppu-mlp-heads-4 (mean of 5 seeds)', \
  'curve-ppu-mlp-8-1.5x.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 13 ps 0.9 pi 4 lc rgb '#e377c2' title 'ppu-mlp-8-1.5x', \
  NaN with filledcurves fs transparent solid 0.15 noborder lc rgb '#777777' title 'seed range (min..max)', \
  6.373705731191416 with lines dt 3 lw 2 lc rgb '#555555' title 'unigram entropy (6.374 nats)'
unset label 1
set key inside top right vertical box opaque samplen 3; set rmargin
set title 'ablations (App. A.1, A.2, D; heads only) and their references'; set xlabel 'tokens, all ranks (millions)'; set ylabel 'eval loss of θ (nats/token)'
set yrange [3.6314:8.2195]; set xrange [0:*]
set label 1 'unigram entropy of val under train counts' at graph 0.98, first 6.373705731191416 right offset 0, 0.7 textcolor rgb '#555555'
plot 'curve-streaming-diloco.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#9467bd' notitle, \
  'curve-ppu-heads-4.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#3182bd' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):10 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):11 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):10 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):11 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):10 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):11 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-heads-4.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#3182bd' notitle, \
  'curve-ppu-heads-4.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#3182bd' notitle, \
  'curve-ppu-heads-4.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#3182bd' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):4 with linespoints lw 3 dt 2 pt 5 ps 0.9 pi 4 lc rgb '#2ca02c' title 'streaming-diloco (mean of 5 seeds) (reference)', \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):4 with linespoints lw 3 dt 2 pt 9 ps 0.9 pi 4 lc rgb '#ff7f0e' title 'ppu-mlp-4 (mean of 5 seeds) (reference)', \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):4 with linespoints lw 3 dt 2 pt 4 ps 0.9 pi 4 lc rgb '#9467bd' title 'ppu-mlp-heads-4 (mean of 5 seeds) (reference)', \
  'curve-ppu-heads-4.dat' using ($2/1e+06):4 with linespoints lw 3 dt 1 pt 14 ps 0.9 pi 4 lc rgb '#3182bd' title 'ppu-heads-4 (mean of 3 seeds)', \
  'curve-ppu-grouping-slices.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 3 ps 0.9 pi 4 lc rgb '#17becf' title 'ppu-grouping-slices', \
  'curve-ppu-wo-sliced.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 6 ps 0.9 pi 4 lc rgb '#bcbd22' title 'ppu-wo-sliced', \
  'curve-ppu-horizontal.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 8 ps 0.9 pi 4 lc rgb '#7f7f7f' title 'ppu-horizontal', \
  'curve-ppu-detach-all-but-k.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 10 ps 0.9 pi 4 lc rgb '#393b79' title 'ppu-detach-all-but-k', \
  'curve-ppu-k-plus-random.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 12 ps 0.9 pi 4 lc rgb '#843c39' title 'ppu-k-plus-random', \
  NaN with filledcurves fs transparent solid 0.15 noborder lc rgb '#777777' title 'seed range (min..max)', \
  6.373705731191416 with lines dt 3 lw 2 lc rgb '#555555' title 'unigram entropy (6.374 nats)'
unset label 1
unset key; set rmargin 33
set title "methods\nzoomed on the last 40 % of the budget; right: the final eval loss of each row"
set xlabel 'tokens, all ranks (millions)'; set ylabel 'eval loss of θ (nats/token)'
set yrange [3.2949:4.9061]; set xrange [6.144:10.34]
set label 10 '3.3682  ddp (1 seed)' at graph 1.02, first 3.3682 left font ',10' textcolor rgb '#000000'
set label 11 '3.7497  streaming-diloco (mean of 5)' at graph 1.02, first 3.7497 left font ',10' textcolor rgb '#2ca02c'
set label 12 '3.7561  diloco (1 seed)' at graph 1.02, first 3.8222 left font ',10' textcolor rgb '#1f77b4'
set label 13 '3.7608  ppu-mlp-2 (mean of 5)' at graph 1.02, first 3.8947 left font ',10' textcolor rgb '#d62728'
set label 14 '4.0809  ppu-mlp-4 (mean of 5)' at graph 1.02, first 4.0809 left font ',10' textcolor rgb '#ff7f0e'
set label 15 '4.1818  ppu-mlp-heads-4 (mean of 5)' at graph 1.02, first 4.1818 left font ',10' textcolor rgb '#9467bd'
set label 16 '3.9811 at 15.4:  ppu-mlp-8-1.5x (1 seed)' at graph 1.02, first 4.2594 left font ',10' textcolor rgb '#e377c2'
set label 17 '4.3183  ppu-mlp-8 (1 seed)' at graph 1.02, first 4.3319 left font ',10' textcolor rgb '#8c564b'
plot 'curve-streaming-diloco.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-2.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#9467bd' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):10 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):11 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-2.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($2/1e+06):10 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($2/1e+06):11 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):10 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):11 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):10 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):11 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ddp.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 1 ps 0.9 pi 4 lc rgb '#000000' title 'ddp', \
  'curve-diloco.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 2 ps 0.9 pi 4 lc rgb '#1f77b4' title 'diloco', \
  'curve-streaming-diloco.dat' using ($2/1e+06):4 with linespoints lw 3 dt 1 pt 5 ps 0.9 pi 4 lc rgb '#2ca02c' title 'streaming-diloco (mean of 5 seeds)', \
  'curve-ppu-mlp-2.dat' using ($2/1e+06):4 with linespoints lw 3 dt 1 pt 7 ps 0.9 pi 4 lc rgb '#d62728' title 'ppu-mlp-2 (mean of 5 seeds)', \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):4 with linespoints lw 3 dt 1 pt 9 ps 0.9 pi 4 lc rgb '#ff7f0e' title 'ppu-mlp-4 (mean of 5 seeds)', \
  'curve-ppu-mlp-8.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 11 ps 0.9 pi 4 lc rgb '#8c564b' title 'ppu-mlp-8', \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):4 with linespoints lw 3 dt 1 pt 4 ps 0.9 pi 4 lc rgb '#9467bd' title 'ppu-mlp-heads-4 (mean of 5 seeds)', \
  'curve-ppu-mlp-8-1.5x.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 13 ps 0.9 pi 4 lc rgb '#e377c2' title 'ppu-mlp-8-1.5x'
unset label 10
unset label 11
unset label 12
unset label 13
unset label 14
unset label 15
unset label 16
unset label 17

unset key; set rmargin 33
set title "ablations (App. A.1, A.2, D; heads only) and their references\nzoomed on the last 40 % of the budget; right: the final eval loss of each row"
set xlabel 'tokens, all ranks (millions)'; set ylabel 'eval loss of θ (nats/token)'
set yrange [3.6793:4.9465]; set xrange [6.144:10.34]
set label 10 '3.7497  streaming-diloco (mean of 5)' at graph 1.02, first 3.7497 left font ',10' textcolor rgb '#2ca02c'
set label 11 '3.7513  ppu-heads-4 (mean of 3)' at graph 1.02, first 3.8067 left font ',10' textcolor rgb '#3182bd'
set label 12 '4.0575  ppu-k-plus-random (1 seed)' at graph 1.02, first 4.0575 left font ',10' textcolor rgb '#843c39'
set label 13 '4.0624  ppu-grouping-slices (1 seed)' at graph 1.02, first 4.1145 left font ',10' textcolor rgb '#17becf'
set label 14 '4.0809  ppu-mlp-4 (mean of 5)' at graph 1.02, first 4.1715 left font ',10' textcolor rgb '#ff7f0e'
set label 15 '4.1818  ppu-mlp-heads-4 (mean of 5)' at graph 1.02, first 4.2286 left font ',10' textcolor rgb '#9467bd'
set label 16 '4.3191  ppu-detach-all-but-k (1 seed)' at graph 1.02, first 4.3191 left font ',10' textcolor rgb '#393b79'
set label 17 '4.3681  ppu-horizontal (1 seed)' at graph 1.02, first 4.3761 left font ',10' textcolor rgb '#7f7f7f'
set label 18 '4.5517  ppu-wo-sliced (1 seed)' at graph 1.02, first 4.5517 left font ',10' textcolor rgb '#bcbd22'
plot 'curve-streaming-diloco.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#9467bd' notitle, \
  'curve-ppu-heads-4.dat' using ($2/1e+06):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#3182bd' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):10 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):11 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):10 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):11 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):10 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):11 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-heads-4.dat' using ($2/1e+06):7 with lines lw 0.8 lc rgb '#3182bd' notitle, \
  'curve-ppu-heads-4.dat' using ($2/1e+06):8 with lines lw 0.8 lc rgb '#3182bd' notitle, \
  'curve-ppu-heads-4.dat' using ($2/1e+06):9 with lines lw 0.8 lc rgb '#3182bd' notitle, \
  'curve-streaming-diloco.dat' using ($2/1e+06):4 with linespoints lw 3 dt 2 pt 5 ps 0.9 pi 4 lc rgb '#2ca02c' title 'streaming-diloco (mean of 5 seeds) (reference)', \
  'curve-ppu-mlp-4.dat' using ($2/1e+06):4 with linespoints lw 3 dt 2 pt 9 ps 0.9 pi 4 lc rgb '#ff7f0e' title 'ppu-mlp-4 (mean of 5 seeds) (reference)', \
  'curve-ppu-mlp-heads-4.dat' using ($2/1e+06):4 with linespoints lw 3 dt 2 pt 4 ps 0.9 pi 4 lc rgb '#9467bd' title 'ppu-mlp-heads-4 (mean of 5 seeds) (reference)', \
  'curve-ppu-heads-4.dat' using ($2/1e+06):4 with linespoints lw 3 dt 1 pt 14 ps 0.9 pi 4 lc rgb '#3182bd' title 'ppu-heads-4 (mean of 3 seeds)', \
  'curve-ppu-grouping-slices.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 3 ps 0.9 pi 4 lc rgb '#17becf' title 'ppu-grouping-slices', \
  'curve-ppu-wo-sliced.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 6 ps 0.9 pi 4 lc rgb '#bcbd22' title 'ppu-wo-sliced', \
  'curve-ppu-horizontal.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 8 ps 0.9 pi 4 lc rgb '#7f7f7f' title 'ppu-horizontal', \
  'curve-ppu-detach-all-but-k.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 10 ps 0.9 pi 4 lc rgb '#393b79' title 'ppu-detach-all-but-k', \
  'curve-ppu-k-plus-random.dat' using ($2/1e+06):4 with linespoints lw 2 dt 1 pt 12 ps 0.9 pi 4 lc rgb '#843c39' title 'ppu-k-plus-random'
unset label 10
unset label 11
unset label 12
unset label 13
unset label 14
unset label 15
unset label 16
unset label 17
unset label 18

unset multiplot; set rmargin; set key inside top right vertical box opaque samplen 3
set output 'loss_vs_flops.png'
set multiplot layout 2,2 title "Eval loss of the global θ vs FLOPs executed per rank: 10.2 M tokens per run (K = 8), ppu-mlp-8-1.5x: 15.4 M (1.5x); not shown: 4 rows at other model sizes (gap_vs_params.png)\nrows with several seeds: thick line = mean, band = min..max, thin lines = each seed" font ',12'
set key inside top right vertical box opaque samplen 3; set rmargin
set title 'methods'; set xlabel 'FLOPs executed per rank (10^12)'; set ylabel 'eval loss of θ (nats/token)'
set yrange [3.2479:8.3273]; set xrange [0:*]
set label 1 'unigram entropy of val under train counts' at graph 0.98, first 6.373705731191416 right offset 0, 0.7 textcolor rgb '#555555'
plot 'curve-streaming-diloco.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-2.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#9467bd' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):10 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):11 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-2.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($3/1e+12):10 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($3/1e+12):11 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):10 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):11 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):10 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):11 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ddp.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 1 ps 0.9 pi 4 lc rgb '#000000' title 'ddp', \
  'curve-diloco.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 2 ps 0.9 pi 4 lc rgb '#1f77b4' title 'diloco', \
  'curve-streaming-diloco.dat' using ($3/1e+12):4 with linespoints lw 3 dt 1 pt 5 ps 0.9 pi 4 lc rgb '#2ca02c' title 'streaming-diloco (mean of 5 seeds)', \
  'curve-ppu-mlp-2.dat' using ($3/1e+12):4 with linespoints lw 3 dt 1 pt 7 ps 0.9 pi 4 lc rgb '#d62728' title 'ppu-mlp-2 (mean of 5 seeds)', \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):4 with linespoints lw 3 dt 1 pt 9 ps 0.9 pi 4 lc rgb '#ff7f0e' title 'ppu-mlp-4 (mean of 5 seeds)', \
  'curve-ppu-mlp-8.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 11 ps 0.9 pi 4 lc rgb '#8c564b' title 'ppu-mlp-8', \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):4 with linespoints lw 3 dt 1 pt 4 ps 0.9 pi 4 lc rgb '#9467bd' title 'ppu-mlp-heads-4 (mean of 5 seeds)', \
  'curve-ppu-mlp-8-1.5x.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 13 ps 0.9 pi 4 lc rgb '#e377c2' title 'ppu-mlp-8-1.5x', \
  NaN with filledcurves fs transparent solid 0.15 noborder lc rgb '#777777' title 'seed range (min..max)', \
  6.373705731191416 with lines dt 3 lw 2 lc rgb '#555555' title 'unigram entropy (6.374 nats)'
unset label 1
set key inside top right vertical box opaque samplen 3; set rmargin
set title 'ablations (App. A.1, A.2, D; heads only) and their references'; set xlabel 'FLOPs executed per rank (10^12)'; set ylabel 'eval loss of θ (nats/token)'
set yrange [3.6314:8.2195]; set xrange [0:*]
set label 1 'unigram entropy of val under train counts' at graph 0.98, first 6.373705731191416 right offset 0, 0.7 textcolor rgb '#555555'
plot 'curve-streaming-diloco.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#9467bd' notitle, \
  'curve-ppu-heads-4.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#3182bd' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):10 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):11 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):10 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):11 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):10 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):11 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-heads-4.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#3182bd' notitle, \
  'curve-ppu-heads-4.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#3182bd' notitle, \
  'curve-ppu-heads-4.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#3182bd' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):4 with linespoints lw 3 dt 2 pt 5 ps 0.9 pi 4 lc rgb '#2ca02c' title 'streaming-diloco (mean of 5 seeds) (reference)', \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):4 with linespoints lw 3 dt 2 pt 9 ps 0.9 pi 4 lc rgb '#ff7f0e' title 'ppu-mlp-4 (mean of 5 seeds) (reference)', \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):4 with linespoints lw 3 dt 2 pt 4 ps 0.9 pi 4 lc rgb '#9467bd' title 'ppu-mlp-heads-4 (mean of 5 seeds) (reference)', \
  'curve-ppu-heads-4.dat' using ($3/1e+12):4 with linespoints lw 3 dt 1 pt 14 ps 0.9 pi 4 lc rgb '#3182bd' title 'ppu-heads-4 (mean of 3 seeds)', \
  'curve-ppu-grouping-slices.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 3 ps 0.9 pi 4 lc rgb '#17becf' title 'ppu-grouping-slices', \
  'curve-ppu-wo-sliced.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 6 ps 0.9 pi 4 lc rgb '#bcbd22' title 'ppu-wo-sliced', \
  'curve-ppu-horizontal.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 8 ps 0.9 pi 4 lc rgb '#7f7f7f' title 'ppu-horizontal', \
  'curve-ppu-detach-all-but-k.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 10 ps 0.9 pi 4 lc rgb '#393b79' title 'ppu-detach-all-but-k', \
  'curve-ppu-k-plus-random.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 12 ps 0.9 pi 4 lc rgb '#843c39' title 'ppu-k-plus-random', \
  NaN with filledcurves fs transparent solid 0.15 noborder lc rgb '#777777' title 'seed range (min..max)', \
  6.373705731191416 with lines dt 3 lw 2 lc rgb '#555555' title 'unigram entropy (6.374 nats)'
unset label 1
unset key; set rmargin 33
set title "methods\nzoomed on the last 40 % of the budget; right: the final eval loss of each row"
set xlabel 'FLOPs executed per rank (10^12)'; set ylabel 'eval loss of θ (nats/token)'
set yrange [3.3037:4.7227]; set xrange [3.412:5.743]
set label 10 '3.3682  ddp (1 seed)' at graph 1.02, first 3.3682 left font ',10' textcolor rgb '#000000'
set label 11 '3.7497  streaming-diloco (mean of 5)' at graph 1.02, first 3.7497 left font ',10' textcolor rgb '#2ca02c'
set label 12 '3.7561  diloco (1 seed)' at graph 1.02, first 3.8135 left font ',10' textcolor rgb '#1f77b4'
set label 13 '3.7608  ppu-mlp-2 (mean of 5)' at graph 1.02, first 3.8774 left font ',10' textcolor rgb '#d62728'
set label 14 '4.0809  ppu-mlp-4 (mean of 5)' at graph 1.02, first 4.0809 left font ',10' textcolor rgb '#ff7f0e'
set label 15 '3.9811 at 7.54:  ppu-mlp-8-1.5x (1 seed)' at graph 1.02, first 4.1627 left font ',10' textcolor rgb '#e377c2'
set label 16 '4.1818  ppu-mlp-heads-4 (mean of 5)' at graph 1.02, first 4.2266 left font ',10' textcolor rgb '#9467bd'
set label 17 '4.3183  ppu-mlp-8 (1 seed)' at graph 1.02, first 4.3183 left font ',10' textcolor rgb '#8c564b'
plot 'curve-streaming-diloco.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-2.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#9467bd' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):10 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):11 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-2.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($3/1e+12):10 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-2.dat' using ($3/1e+12):11 with lines lw 0.8 lc rgb '#d62728' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):10 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):11 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):10 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):11 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ddp.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 1 ps 0.9 pi 4 lc rgb '#000000' title 'ddp', \
  'curve-diloco.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 2 ps 0.9 pi 4 lc rgb '#1f77b4' title 'diloco', \
  'curve-streaming-diloco.dat' using ($3/1e+12):4 with linespoints lw 3 dt 1 pt 5 ps 0.9 pi 4 lc rgb '#2ca02c' title 'streaming-diloco (mean of 5 seeds)', \
  'curve-ppu-mlp-2.dat' using ($3/1e+12):4 with linespoints lw 3 dt 1 pt 7 ps 0.9 pi 4 lc rgb '#d62728' title 'ppu-mlp-2 (mean of 5 seeds)', \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):4 with linespoints lw 3 dt 1 pt 9 ps 0.9 pi 4 lc rgb '#ff7f0e' title 'ppu-mlp-4 (mean of 5 seeds)', \
  'curve-ppu-mlp-8.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 11 ps 0.9 pi 4 lc rgb '#8c564b' title 'ppu-mlp-8', \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):4 with linespoints lw 3 dt 1 pt 4 ps 0.9 pi 4 lc rgb '#9467bd' title 'ppu-mlp-heads-4 (mean of 5 seeds)', \
  'curve-ppu-mlp-8-1.5x.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 13 ps 0.9 pi 4 lc rgb '#e377c2' title 'ppu-mlp-8-1.5x'
unset label 10
unset label 11
unset label 12
unset label 13
unset label 14
unset label 15
unset label 16
unset label 17

unset key; set rmargin 33
set title "ablations (App. A.1, A.2, D; heads only) and their references\nzoomed on the last 40 % of the budget; right: the final eval loss of each row"
set xlabel 'FLOPs executed per rank (10^12)'; set ylabel 'eval loss of θ (nats/token)'
set yrange [3.6870:4.7844]; set xrange [3.412:5.743]
set label 10 '3.7497  streaming-diloco (mean of 5)' at graph 1.02, first 3.7497 left font ',10' textcolor rgb '#2ca02c'
set label 11 '3.7513  ppu-heads-4 (mean of 3)' at graph 1.02, first 3.7990 left font ',10' textcolor rgb '#3182bd'
set label 12 '4.0575  ppu-k-plus-random (1 seed)' at graph 1.02, first 4.0575 left font ',10' textcolor rgb '#843c39'
set label 13 '4.0624  ppu-grouping-slices (1 seed)' at graph 1.02, first 4.1069 left font ',10' textcolor rgb '#17becf'
set label 14 '4.0809  ppu-mlp-4 (mean of 5)' at graph 1.02, first 4.1563 left font ',10' textcolor rgb '#ff7f0e'
set label 15 '4.1818  ppu-mlp-heads-4 (mean of 5)' at graph 1.02, first 4.2056 left font ',10' textcolor rgb '#9467bd'
set label 16 '4.3191  ppu-detach-all-but-k (1 seed)' at graph 1.02, first 4.3191 left font ',10' textcolor rgb '#393b79'
set label 17 '4.3681  ppu-horizontal (1 seed)' at graph 1.02, first 4.3685 left font ',10' textcolor rgb '#7f7f7f'
set label 18 '4.5517  ppu-wo-sliced (1 seed)' at graph 1.02, first 4.5517 left font ',10' textcolor rgb '#bcbd22'
plot 'curve-streaming-diloco.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#9467bd' notitle, \
  'curve-ppu-heads-4.dat' using ($3/1e+12):5:6 with filledcurves fs transparent solid 0.15 noborder lc rgb '#3182bd' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):10 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):11 with lines lw 0.8 lc rgb '#2ca02c' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):10 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):11 with lines lw 0.8 lc rgb '#ff7f0e' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):10 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):11 with lines lw 0.8 lc rgb '#9467bd' notitle, \
  'curve-ppu-heads-4.dat' using ($3/1e+12):7 with lines lw 0.8 lc rgb '#3182bd' notitle, \
  'curve-ppu-heads-4.dat' using ($3/1e+12):8 with lines lw 0.8 lc rgb '#3182bd' notitle, \
  'curve-ppu-heads-4.dat' using ($3/1e+12):9 with lines lw 0.8 lc rgb '#3182bd' notitle, \
  'curve-streaming-diloco.dat' using ($3/1e+12):4 with linespoints lw 3 dt 2 pt 5 ps 0.9 pi 4 lc rgb '#2ca02c' title 'streaming-diloco (mean of 5 seeds) (reference)', \
  'curve-ppu-mlp-4.dat' using ($3/1e+12):4 with linespoints lw 3 dt 2 pt 9 ps 0.9 pi 4 lc rgb '#ff7f0e' title 'ppu-mlp-4 (mean of 5 seeds) (reference)', \
  'curve-ppu-mlp-heads-4.dat' using ($3/1e+12):4 with linespoints lw 3 dt 2 pt 4 ps 0.9 pi 4 lc rgb '#9467bd' title 'ppu-mlp-heads-4 (mean of 5 seeds) (reference)', \
  'curve-ppu-heads-4.dat' using ($3/1e+12):4 with linespoints lw 3 dt 1 pt 14 ps 0.9 pi 4 lc rgb '#3182bd' title 'ppu-heads-4 (mean of 3 seeds)', \
  'curve-ppu-grouping-slices.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 3 ps 0.9 pi 4 lc rgb '#17becf' title 'ppu-grouping-slices', \
  'curve-ppu-wo-sliced.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 6 ps 0.9 pi 4 lc rgb '#bcbd22' title 'ppu-wo-sliced', \
  'curve-ppu-horizontal.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 8 ps 0.9 pi 4 lc rgb '#7f7f7f' title 'ppu-horizontal', \
  'curve-ppu-detach-all-but-k.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 10 ps 0.9 pi 4 lc rgb '#393b79' title 'ppu-detach-all-but-k', \
  'curve-ppu-k-plus-random.dat' using ($3/1e+12):4 with linespoints lw 2 dt 1 pt 12 ps 0.9 pi 4 lc rgb '#843c39' title 'ppu-k-plus-random'
unset label 10
unset label 11
unset label 12
unset label 13
unset label 14
unset label 15
unset label 16
unset label 17
unset label 18

unset multiplot; set rmargin; set key inside top right vertical box opaque samplen 3
set autoscale
set terminal pngcairo size 1100,680 font ',11' noenhanced
set terminal pngcairo size 1410,1080 font ',11' noenhanced
set output 'paired.png'
set multiplot title "Final eval loss of each paired row minus its reference's, seed by seed (reference: streaming-diloco unless named)\nbar: mean and its 99.17 % Bonferroni interval (m = 6); verdicts Holm-corrected; equivalent only by TOST within ±0.05 nats (shaded)" font ',12'
set ylabel 'final eval loss − reference (nats)'; set xlabel ''
set y2label 'perplexity ratio = exp(difference)'
set link y2 via exp(y) inverse log(y)
set xrange [-0.6:5.6]
set lmargin at screen 0.08; set rmargin at screen 0.9
set tmargin at screen 0.9; set bmargin at screen 0.64
set title 'all comparisons, full range' font ',11'
set yrange [-1.32974:2.09453]
set y2tics ('0.5' 0.5, '1' 1, '2' 2, '5' 5)
set xtics ("ppu-mlp-2" 0, "ppu-mlp-4" 1, "ppu-mlp-heads-4" 2, "ppu-heads-4" 3, "ppu-mlp-4-d48\nvs streaming-diloco-d48" 4, "ppu-mlp-4-d128\nvs streaming-diloco-d128" 5) font ',9'
unset key
plot '+' using 1:(-0.05):(0.05) with filledcurves fs transparent solid 0.15 noborder lc rgb '#2ca02c' notitle, \
  0 with lines lw 1.5 lc rgb '#000000' notitle, \
  'paired-seeds.dat' using ($3 == 0 ? $1 : 1/0):4 with points pt 7 ps 1.6 lc rgb '#1f77b4' notitle, \
  'paired-seeds.dat' using ($3 == 1 ? $1 : 1/0):4 with points pt 5 ps 1.6 lc rgb '#ff7f0e' notitle, \
  'paired-seeds.dat' using ($3 == 2 ? $1 : 1/0):4 with points pt 9 ps 1.6 lc rgb '#2ca02c' notitle, \
  'paired-seeds.dat' using ($3 == 3 ? $1 : 1/0):4 with points pt 11 ps 1.6 lc rgb '#9467bd' notitle, \
  'paired-seeds.dat' using ($3 == 4 ? $1 : 1/0):4 with points pt 13 ps 1.6 lc rgb '#8c564b' notitle, \
  'paired.dat' using 1:3:4:5 with yerrorbars pt 3 ps 2.5 lw 2.5 lc rgb '#d62728' notitle
set tmargin at screen 0.51; set bmargin at screen 0.21
set title "zoom on the margin ±0.05 nats: the test behind equivalent (TOST, Holm) is narrower than the 99.17 % interval drawn,\nso the interval of a row called equivalent can cross the margin a little" font ',11'
set yrange [-0.11500:0.11500]
set y2tics 0.05 format '%.4g'
set xtics ("ppu-mlp-2\nequivalent\nwithin ±0.05 nats" 0, "ppu-mlp-4\nworse" 1, "ppu-mlp-heads-4\nworse" 2, "ppu-heads-4\nequivalent\nwithin ±0.05 nats" 3, "ppu-mlp-4-d48\nvs streaming-diloco-d48\nnot distinguishable\ndetectable 1.821 nats" 4, "ppu-mlp-4-d128\nvs streaming-diloco-d128\nworse" 5) font ',10'
set label "mean +0.331\nabove this scale" at 1, graph 0.9 center textcolor rgb '#d62728' font ',10'
set label "mean +0.432\nabove this scale" at 2, graph 0.9 center textcolor rgb '#d62728' font ',10'
set label "mean +0.382\nabove this scale" at 4, graph 0.9 center textcolor rgb '#d62728' font ',10'
set label "mean +0.230\nabove this scale" at 5, graph 0.9 center textcolor rgb '#d62728' font ',10'
set key at screen 0.5, screen 0.02 center bottom horizontal maxrows 3 box
plot '+' using 1:(-0.05):(0.05) with filledcurves fs transparent solid 0.15 noborder lc rgb '#2ca02c' title 'equivalence margin ±0.05 nats (analysis.yaml)', \
  0 with lines lw 1.5 lc rgb '#000000' title 'no difference', \
  'paired-seeds.dat' using ($3 == 0 ? $1 : 1/0):4 with points pt 7 ps 1.6 lc rgb '#1f77b4' title 'seed 0', \
  'paired-seeds.dat' using ($3 == 1 ? $1 : 1/0):4 with points pt 5 ps 1.6 lc rgb '#ff7f0e' title 'seed 1', \
  'paired-seeds.dat' using ($3 == 2 ? $1 : 1/0):4 with points pt 9 ps 1.6 lc rgb '#2ca02c' title 'seed 2', \
  'paired-seeds.dat' using ($3 == 3 ? $1 : 1/0):4 with points pt 11 ps 1.6 lc rgb '#9467bd' title 'seed 3', \
  'paired-seeds.dat' using ($3 == 4 ? $1 : 1/0):4 with points pt 13 ps 1.6 lc rgb '#8c564b' title 'seed 4', \
  'paired.dat' using 1:3:4:5 with yerrorbars pt 3 ps 2.5 lw 2.5 lc rgb '#d62728' title 'mean with its 99.17 % Bonferroni interval'
unset multiplot; unset label; set title font ',12'; set xtics font ''; set lmargin; set rmargin; set tmargin; set key default; set key inside top right vertical box opaque samplen 3
unset y2tics; unset y2label; unset link y2; set bmargin
set autoscale; set xtics autofreq norotate
set terminal pngcairo size 1755,760 font ',11' noenhanced
set output 'memory.png'
set title "Training-state memory per rank by component (K = 8), measured from the tensors\nlabels: state vs streaming-diloco (other sizes: vs their own), in all and on the device (dev.: weights + gradients + AdamW); ppu-mlp-8-1.5x: as ppu-mlp-8"
set ylabel 'MiB per rank'; set xlabel ''
set yrange [0:30.788]
set xrange [-0.7:18.70]
set xtics ('ddp' 0.00, 'diloco' 1.00, 'streaming-diloco' 2.00, 'ppu-mlp-2' 3.50, 'ppu-mlp-4' 4.50, 'ppu-mlp-8' 5.50, 'ppu-mlp-heads-4' 7.00, 'ppu-heads-4' 8.50, 'ppu-grouping-slices' 9.50, 'ppu-wo-sliced' 10.50, 'ppu-horizontal' 11.50, 'ppu-detach-all-but-k' 12.50, 'ppu-k-plus-random' 13.50, 'streaming-diloco-d48' 15.00, 'ppu-mlp-4-d48' 16.00, 'streaming-diloco-d128' 17.00, 'ppu-mlp-4-d128' 18.00) rotate by 30 right nomirror
unset grid; set grid ytics
set key outside bottom center horizontal box maxrows 2
set arrow from 2.75, graph 0 to 2.75, graph 1 nohead dt 3 lc rgb '#777777'
set arrow from 6.25, graph 0 to 6.25, graph 1 nohead dt 3 lc rgb '#777777'
set arrow from 7.75, graph 0 to 7.75, graph 1 nohead dt 3 lc rgb '#777777'
set arrow from 14.25, graph 0 to 14.25, graph 1 nohead dt 3 lc rgb '#777777'
set label "baselines" at 1.00, graph 0.95 center font ',11'
set label "PPU 1/N MLPs" at 4.50, graph 0.95 center font ',11'
set label "PPU 1/N MLPs\n+ 1/N heads" at 7.00, graph 0.95 center font ',11'
set label "ablations" at 11.00, graph 0.95 center font ',11'
set label "other model sizes\n(vs their own reference)" at 16.50, graph 0.95 center font ',11'
set label "−11.5 %\ndev. −17 %" at 3.50, 14.6607 center font ',9'
set label "−17.3 %\ndev. −26 %" at 4.50, 13.8170 center font ',9'
set label "−20.1 %\ndev. −30 %" at 5.50, 13.3951 center font ',9'
set label "−23.7 %\ndev. −36 %" at 7.00, 12.8678 center font ',9'
set label "−6.5 %\ndev. −10 %" at 8.50, 15.3990 center font ',9'
set label "−17.3 %\ndev. −26 %" at 9.50, 13.8170 center font ',9'
set label "−25.9 %\ndev. −39 %" at 10.50, 12.5514 center font ',9'
set label "−17.3 %\ndev. −26 %" at 11.50, 13.8170 center font ',9'
set label "−17.3 %\ndev. −26 %" at 12.50, 13.8170 center font ',9'
set label "−17.3 %\ndev. −26 %" at 13.50, 13.8170 center font ',9'
set label "−13.2 %\ndev. −20 %" at 16.00, 5.8519 center font ',9'
set label "−18.7 %\ndev. −28 %" at 18.00, 21.2364 center font ',9'
plot 'memory.dat' using 1:3:($1-0.35):($1+0.35):3:4 with boxxyerror fs solid 0.85 border lc rgb '#333333' fc rgb '#4c72b0' title 'weights', \
  'memory.dat' using 1:4:($1-0.35):($1+0.35):4:5 with boxxyerror fs solid 0.85 border lc rgb '#333333' fc rgb '#dd8452' title 'gradients', \
  'memory.dat' using 1:5:($1-0.35):($1+0.35):5:6 with boxxyerror fs solid 0.85 border lc rgb '#333333' fc rgb '#55a868' title 'inner AdamW moments', \
  'memory.dat' using 1:6:($1-0.35):($1+0.35):6:7 with boxxyerror fs pattern 4 border lc rgb '#333333' fc rgb '#8172b3' title 'outer momentum (host)', \
  'memory.dat' using 1:7:($1-0.35):($1+0.35):7:8 with boxxyerror fs pattern 4 border lc rgb '#333333' fc rgb '#937860' title 'global θ, offloaded (host)', \
  14.66455078125 with lines dt 2 lw 1.5 lc rgb '#2ca02c' title 'streaming-diloco total'
unset arrow; unset label
set autoscale; set xtics autofreq norotate
set terminal pngcairo size 1000,760 font ',11' noenhanced
set output 'ppl_vs_n.png'
set title "Final eval perplexity of θ vs N (each PPU rank trains 1/N of the sliced layers)\nequal tokens except ppu-mlp-8-1.5x: 1.5x tokens; no line between rows: no trend is tested"
set key outside bottom center vertical maxrows 6 maxcols 1 box; set bmargin 10
set logscale x 2; set xrange [1.3333333333333333:12.0]
set xtics ('2' 2, '4' 4, '8' 8)
set xlabel 'N (slices)'
set ylabel 'eval perplexity'; set autoscale y; set offsets 0, 0, graph 0.08, graph 0.08; set grid
set label "ppu-mlp-8\none seed" at 8.56, 75.05960097090052 left textcolor rgb '#d62728' font ',10'
set label "ppu-mlp-8-1.5x\none seed" at 8.56, 53.573302106641506 left textcolor rgb '#e377c2' font ',10'
plot '+' using 1:(41.96815444272852):(43.077926421686335) with filledcurves fs transparent solid 0.18 noborder lc rgb '#2ca02c' title 'streaming-diloco: seed range (42.0..43.1)', \
  42.50887141240487 with lines dt 2 lw 2.5 lc rgb '#2ca02c' title 'streaming-diloco (every parameter), mean of 5 seeds: 42.51', \
  'ppl_vs_n.dat' index 0 using ($1 == 0 && $5 > 1 ? $2 : 1/0):4 with points pt 7 ps 1.1 lc rgb '#d62728' notitle, \
  'ppl_vs_n.dat' index 1 using 2:($3 > 1 ? $4 : 1/0) with points pt 7 ps 2.2 lc rgb '#d62728' title '1/N MLPs: mean over seeds (large), each seed (small)', \
  'ppl_vs_n.dat' index 1 using 2:($3 == 1 ? $4 : 1/0) with points pt 6 ps 2.2 lw 2 lc rgb '#d62728' title '1/N MLPs: one seed (no mean, no interval)', \
  'ppl_vs_n.dat' index 0 using ($1 == 1 && $5 > 1 ? $2 : 1/0):4 with points pt 5 ps 1.1 lc rgb '#9467bd' notitle, \
  'ppl_vs_n.dat' index 2 using 2:($3 > 1 ? $4 : 1/0) with points pt 5 ps 2.2 lc rgb '#9467bd' title '1/N MLPs + 1/N heads: mean over seeds (large), each seed (small)', \
  'ppl_vs_n.dat' index 3 using 2:($3 == 1 ? $4 : 1/0) with points pt 12 ps 2.2 lw 2 lc rgb '#e377c2' title '1/N MLPs, more tokens: one seed (no mean, no interval)'
unset logscale x; unset label; set offsets 0, 0, 0, 0; set bmargin
set autoscale; set xtics autofreq norotate
set terminal pngcairo size 1000,720 font ',11' noenhanced
set output 'gap_vs_params.png'
set title "PPU 1/4 MLPs minus Streaming DiLoCo of the same size, seed by seed, at each model size\nbar: mean and its 99.17 % Bonferroni interval (family of m = 6); small points: each seed\nno trend across sizes is tested; the tokens, outer rounds and epochs change with the size too"
set logscale x; set xrange [131100:1681408]
set xtics ("209,760\n3.38 M tokens" 209760, "640,704\n10.24 M tokens" 640704, "1,050,880\n16.79 M tokens" 1050880); set mxtics default; set xlabel 'parameters of the model (log scale), and the tokens each run trained on' offset 0, -1
set bmargin 5
set ylabel 'final eval loss, 1/4 MLPs − Streaming DiLoCo (nats)'
set yrange [-1.38681:3.17888]
set y2label 'perplexity ratio = exp(difference)'; set link y2 via exp(y) inverse log(y)
set y2tics ('0.5' 0.5, '1' 1, '2' 2, '5' 5)
set key inside top left vertical box opaque; set grid
set label "ppu-mlp-4-d48, 3 seeds\n33 outer rounds, 0.55 epochs\nnot distinguishable\ndetectable 1.821 nats" at 209760, 1.80918 center offset 0, 3.3 font ',9'
set label "ppu-mlp-4, 5 seeds\n100 outer rounds, 1.66 epochs\nworse" at 640704, 0.63250 center offset 0, 3.3 font ',9'
set label "ppu-mlp-4-d128, 3 seeds\n164 outer rounds, 2.73 epochs\nworse" at 1050880, 0.31548 center offset 0, 3.3 font ',9'
plot 0 with lines lw 1.5 lc rgb '#000000' title 'no difference', \
  'gap-seeds.dat' using 1:3 with points pt 7 ps 1.1 lc rgb '#1f77b4' title 'one seed', \
  'gap.dat' using 1:2:3:4 with yerrorbars pt 5 ps 1.8 lw 2.5 lc rgb '#d62728' title 'mean, 99.17 % interval'
unset logscale x; unset label; unset y2tics; unset y2label; unset link y2; set xtics autofreq; set bmargin
