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
//	cgvrC     gvr_topk_cluster, one row per cluster of C CTAs, for each -cluster size C
//	cfallbackC topk_fallback_cluster likewise
//	floorC    cluster_read: the row read once into a cluster of C, nothing else
//	auto      the kernel a Selector picks for the batch and N (topk.Choice),
//	          with the static prior where it picks a GVR kernel
//
// and, beside each kernel (but the floors), with -scores f16,bf16 the same
// kernel on rows of 16-bit scores (columns gvr.f16, gvr.bf16: the float32
// rows rounded, checked against the reference of the rounded rows), and
// with -pages P the same kernel also writing the fused page-table output of
// page size P (columns gvr+pages, checked slot by slot), and with
// -mbarrier-rounds each cluster Top-K kernel with its rounds signalled by
// mbarriers instead of barrier.cluster (columns cgvr16+mbar; the auto column
// and -tune time the selector's kernels, which do: topk.ChoiceConfig), and
// with -keep-over each cluster Top-K kernel keeping which vectors of a
// long row's excess hold high elements, to load only those again (columns
// cgvr16+keep, cgvr16+mbar+keep: gen.Config.KeepOver; with -tune the table
// may choose it), and with -sure-set each GVR kernel setting apart the
// candidates its first pass shows to be in the Top-K (columns gvr+sure,
// cgvr16+mbar+sure: gen.Config.SureSet; the auto column and the Selector
// take it by topk's rule, topk.SureSet, and -tune ranks each kernel with it
// where the rule takes it),
//
// cold (L2 flushed by writing a 256 MB buffer before each launch; with
// -flush-by read, by reading it), warm (L2 holding the row), and with -mode graph, launches
// replayed from a CUDA graph (kernel time without the host's launch and
// event overhead: how FlashInfer, vLLM and SGLang publish theirs), all on the same data in the same run (every row
// N long, its length in a device array, or with -dense a dense batch,
// no lengths at all: topk.Batch without them); checks every output against
// the CPU reference (topk.Reference); and runs the instrumented kernels
// for a per-phase breakdown of every column but the page-table output's
// (cold; -phases-warm: warm, for what a cold row's misses add to each
// step). It prints a table, or JSON with -json, and a
// progress line per batch on stderr. Where the table has floor columns,
// it adds each cluster kernel's ratio to the floor of its cluster size
// (cgvr16/floor16) and the selector's to the largest cluster's
// (auto/floor16): how far each is from reading its rows alone. It exits 1 if any output differs
// from the reference.
//
// Build it with the cuda tag (make gpu-test writes gpubin/gvrbench; make
// bench builds and runs it). Without the tag it only says so.
//
//	gvrbench                          the full table: batch 1, 8, 64; N from 8192 to 262144; K 2048
//	gvrbench -batch 1 -n 65536,131072 -iters 200
//	gvrbench -o bench.json            the table, and the report as JSON in bench.json
//	gvrbench -kernels gvr,floor -cluster 8,16   with the floor of a cluster kernel per cluster size
//	gvrbench -kernels gvr,auto,floor -cluster 16 -mode cold,warm,graph
//	gvrbench -kernels auto -scores f32,bf16,f16 -pages 64   what 16-bit rows save and the fused
//	                                  page-table output costs, beside the plain kernel
//	gvrbench -tune h100.json -cluster 2,4,8,16 -batch 1,2,4,8,16,32,64 -n 8192,...,2097152 -keep-over
//	                                  measure the Selector's kernel choice (topk/tuning/ keeps one per GPU;
//	                                  -cluster takes any sizes up to 16: 3, 5 and 6 pay at batches 16-32):
//	                                  each GVR kernel beside its fallback, which the table
//	                                  may run on predicted rows too (topk.Tuning.Fallback)
//	gvrbench -from r1.json,r2.json -tune new.json -into topk/tuning/h200.json
//	                                  a table with the rows of the runs' batches (each cell
//	                                  the median over the runs) put into the kept one
//	gvrbench -replay all -steps 32    replay calibrated decode trajectories (topk.Profiles) through a Selector
//	gvrbench -trace x.npy             replay a saved decode trace (topk.LoadTrace)
//	gvrbench -ablation                the paper's ablation (no, random, static, previous-step
//	                                  predictions at low and high alpha) beside its figures
//	gvrbench -charts dir              also draw the results (SVG, PNG: latency against N,
//	                                  phases, replay passes)
//	gvrbench -from r.json -charts dir print and draw a saved report (-o); needs no GPU,
//	                                  nor the cuda tag
//	gvrbench -from new.json -compare base.json   an A/B: each median against the
//	                                  other report's, with the change, its geometric mean
//	                                  per kernel and mode, and the phases and the steps in
//	                                  them that moved (scripts/gpu-ab.sh runs both
//	                                  binaries alternating and prints it)
//	gvrbench -bins 1024 -o b.json     every kernel with another configuration (also
//	                                  -max-candidates, -block-size, -unroll: topk.Config's
//	                                  knobs), to -compare with a default run: a sweep
//	                                  needs no second binary
//
// Each cold or warm launch, and each graph replay, lies between two events
// that reach a busy stream: behind gen's hold kernel (20 us, doubled
// whenever the host was slower), and a cold one behind the L2 flush after
// it, so that the events time the GPU and not the host's submission.
// Where the start event had already run when the host had submitted the
// end event, the sample is taken again; the report counts them (retaken,
// and the hold's last length). Before perf notes 190 a warm launch followed the host's wait
// for the previous one, its start event ran on an idle stream while the
// host still submitted the launch, and warm medians came out above cold
// ones (11.6 us warm, 8.1 cold at 8K on an H100; 7.8 warm now) and now and
// then several times them for a whole cell: the host stalls now and then,
// past half a millisecond at times, with Go's collector running or not (perf
// notes 191).
//
// A replay runs each step through a topk.Selector with the instrumented
// kernels and topk.Config.AlwaysPredict (it measures the prediction), each step's output the next one's prediction, checks every
// output against the reference, and prints per source the measured overlap
// of consecutive steps (alpha), how often Phase 2 settled in one, two or
// three passes, the candidates, the paths, the phase times and the median
// step. Progress lines go to stderr only when it is a terminal (never with
// -json or under CI).
package main
