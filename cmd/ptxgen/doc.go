// Command ptxgen prints the PTX that gvr generates for a kernel and a
// configuration, so a person can read it, diff it or feed it to ptxas.
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
//	-o FILE               write to FILE instead of standard output
//	-list                 list the kernels and the targets, then exit
//
// Examples:
//
//	ptxgen -list
//	ptxgen -arch sm_90 -o /tmp/k_sm_90.ptx
//	ptxgen -kernel count_ge -block 256 -arch sm_80
//
// A bad flag, an unknown kernel or target, or a configuration the generator
// rejects prints one line, "ptxgen: ...", on stderr and exits with status 2.
// A failure to write the output exits with status 1.
package main
