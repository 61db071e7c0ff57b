set -u
O=$OUT/r3; mkdir -p $O
cd gpubin && xz -d -k -f gvrbench-main.xz && cd ..
RUNS=2 OUT=$O/ab scripts/gpu-ab.sh gpubin/gvrbench-main gpubin/gvrbench -kernels gvr,auto -batch 1,64 -n 2560,3072,4096,5120,6144,8192 -mode cold,graph -iters 30 -phases=false > $O/ab.txt 2>&1
for b in main ""; do nm=${b:-new}; gpubin/gvrbench${b:+-$b} -kernels gvr -batch 1,64 -n 2560,3072,4096,5120,6144,8192 -mode cold -iters 20 -o $O/ph-$nm.json > /dev/null 2> $O/ph-$nm.err; done
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
