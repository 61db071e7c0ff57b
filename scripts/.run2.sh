set -u
O=$OUT/r2; mkdir -p $O
cd gpubin && xz -d -k -f gvrbench-main.xz && cd ..
RUNS=2 OUT=$O/ab scripts/gpu-ab.sh gpubin/gvrbench-main gpubin/gvrbench -kernels gvr,fallback,auto -batch 1,8,64 -n 4096,8192,12288,16384,65536 -mode cold,graph -iters 30 -phases=false > $O/ab.txt 2>&1
for b in main ""; do nm=${b:-new}; gpubin/gvrbench${b:+-$b} -kernels gvr,fallback -batch 1,64 -n 4096,8192,12288,16384 -mode cold -iters 20 -o $O/ph-$nm.json > /dev/null 2> $O/ph-$nm.err; done
STEPS="runtime topk ptxas" GVR_FUZZ_CASES=40 OUT=$O/suite scripts/gpu-run.sh > $O/suite.txt 2>&1
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
