// Command ptxgen prints the PTX that gvr generates for a kernel and a
// configuration, so a person can read it, diff it or feed it to ptxas; it
// summarises a kernel and diffs two configurations.
//
// Usage:
//
//	ptxgen [flags]
//
// With no flags it prints the default kernel (gvr_topk; until that kernel
// exists, the most complete one, count_ge, with a note on stderr) for the
// GVR paper's configuration, gen.DefaultConfig: K = 2048,
// MAX_CANDIDATES = 6144, 512 threads, 2048 bins, sm_100.
//
// The flags:
//
//	-kernel NAME          the kernel to print (see -list)
//	-k N                  K, how many elements to select
//	-max-candidates N     capacity of the candidate buffer (>= K)
//	-block N              threads per CTA (a multiple of 32, at most 1024)
//	-bins N               histogram bins (a power of two)
//	-arch NAME            target: sm_80, sm_90, sm_100... (see -list)
//	-unroll N             float4 loads in flight per thread (0: default)
//	-instrument           emit phase timestamps and counters
//	-summary              print a summary instead of the PTX
//	-row N                with -summary: also the warp instructions issued on a row of N
//	-diff CHANGES         print a unified diff against a second kernel
//	-o FILE               write to FILE instead of standard output
//	-list                 list the kernels and the targets, then exit
//
// -summary prints the kernel's name, configuration, target and PTX ISA
// version, threads per CTA, shared memory, and per entry its parameters
// (name and type), its register declarations and its instruction counts:
// "setup", then one line per phase, a phase being what follows a body
// comment "Phase N: ..." up to the next one, with the steps within it (any
// other comment, such as "radix select: digit bits [21, 32)") indented
// below it and counted in it too.
//
// -summary -row N also runs a Top-K kernel in the interpreter (ptx/emu) on
// one row of N of the paper's synthetic scores, with their static
// prediction where the kernel takes one, and gives beside each count the
// warp instructions issued there, over the row's CTAs (with -groups, those
// of every cluster that shares the row, run at once). These are PTX
// instructions: ptxas makes about as many machine instructions of them
// (it folds some and expands others), of which an SM issues four a
// cycle, its latencies on top. With -diff, two kernels' counts side by
// side on the same row.
//
// -diff CHANGES generates a second kernel: the first one's flags changed by
// CHANGES, comma-separated flags without their dash ("arch=sm_100",
// "k=1024,max-candidates=3072", "instrument", "kernel=topk_fallback"), and
// prints a unified diff of the two PTX texts, or with -summary of the two
// summaries; nothing when they are the same.
//
// Examples:
//
//	ptxgen -list
//	ptxgen -arch sm_90 -o /tmp/k_sm_90.ptx
//	ptxgen -kernel count_ge -block 256 -arch sm_80
//	ptxgen -summary -kernel topk_fallback -arch sm_90
//	ptxgen -arch sm_90 -diff arch=sm_100
//	ptxgen -summary -diff k=1024,max-candidates=3072
//	ptxgen -summary -row 65536 -kernel topk_fallback -arch sm_90 -sure-set -diff sorted
//
// A bad flag, an unknown kernel or target, or a configuration the generator
// rejects prints one line, "ptxgen: ...", on stderr and exits with status 2.
// A failure to write the output exits with status 1.
package main
