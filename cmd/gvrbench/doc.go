// Command gvrbench times gvr's Top-K kernels on a GPU, on the GVR paper's
// synthetic workload (topk.Synthetic: random q/k with YaRN RoPE, the static
// structural prior as the prediction).
//
// For each batch size and row length N it times, with CUDA events around
// each launch, the median latency over -iters launches of
//
//	gvr       gvr_topk with the static prior as its prediction
//	feedback  gvr_topk with its own previous output as the prediction (a
//	          decode step on unchanged scores: a perfect prediction)
//	fallback  topk_fallback, which has no prediction: the baseline
//	radix     topk_radix, exact radix select over the row
//
// cold (L2 flushed by writing a 256 MB buffer before each launch) and
// warm, all on the same data in the same run; checks every output against
// the CPU reference (topk.Reference); and runs the instrumented kernels
// for a per-phase breakdown. It prints a table, or JSON with -json, and a
// progress line per batch on stderr. It exits 1 if any output differs
// from the reference.
//
// Build it with the cuda tag (make gpu-test writes gpubin/gvrbench; make
// bench builds and runs it). Without the tag it only says so.
//
//	gvrbench                          the full table: batch 1, 8, 64; N from 8192 to 262144; K 2048
//	gvrbench -batch 1 -n 65536,131072 -iters 200
//	gvrbench -o bench.json            the table, and the report as JSON in bench.json
//	gvrbench -kernels gvr,floor -cluster 8,16   with the floor of a cluster kernel per cluster size
//	gvrbench -replay all -steps 32    replay calibrated decode trajectories (topk.Profiles) through a Selector
//	gvrbench -trace x.npy             replay a saved decode trace (topk.LoadTrace)
//
// A replay runs each step through a topk.Selector with the instrumented
// kernels, each step's output the next one's prediction, checks every
// output against the reference, and prints per source the measured overlap
// of consecutive steps (alpha), how often Phase 2 settled in one, two or
// three passes, the candidates, the paths, the phase times and the median
// step. Progress lines go to stderr only when it is a terminal (never with
// -json or under CI).
package main
