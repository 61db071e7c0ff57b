package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
)

// preferredKernel is printed when -kernel is not given; fallbackKernel stands
// in for it while the generator does not know it yet.
const (
	preferredKernel = "gvr_topk"
	fallbackKernel  = "count_ge"
)

// Exit statuses.
const (
	exitOK    = 0
	exitIO    = 1 // the output could not be written
	exitUsage = 2 // bad flag, unknown kernel or target, invalid config
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// defaultKernel is the kernel printed when -kernel is not given.
func defaultKernel() string {
	if slices.Contains(gen.Names(), preferredKernel) {
		return preferredKernel
	}
	return fallbackKernel
}

// run is the whole command: it parses args, writes PTX (or the usage or the
// list) to stdout or the -o file, and one-line errors to stderr, and returns
// the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fail := func(status int, err error) int {
		fmt.Fprintf(stderr, "ptxgen: %s\n", oneLine(err))
		return status
	}

	def := gen.DefaultConfig()
	defKernel := defaultKernel()
	fs := flag.NewFlagSet("ptxgen", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, on one line
	kernel := fs.String("kernel", defKernel, "the kernel to print (see -list)")
	k := fs.Int("k", def.K, "K: how many elements to select")
	maxCand := fs.Int("max-candidates", def.MaxCandidates, "capacity of the candidate buffer (at least K)")
	block := fs.Int("block", def.BlockSize, "threads per CTA (a multiple of 32, at most 1024)")
	bins := fs.Int("bins", def.Bins, "histogram bins of the refine phase (a power of two)")
	arch := fs.String("arch", def.Target.Name, "target architecture: "+ptx.TargetNames())
	unroll := fs.Int("unroll", def.Unroll, "float4 loads in flight per thread in a pass over a row (0: the generator's default)")
	instrument := fs.Bool("instrument", def.Instrument, "emit phase timestamps and counters into a stats buffer")
	out := fs.String("o", "", "write the PTX to `file` instead of standard output")
	list := fs.Bool("list", false, "list the kernels and the targets, then exit")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, fs)
			return exitOK
		}
		return fail(exitUsage, fmt.Errorf("%v (ptxgen -h for usage)", err))
	}
	if fs.NArg() > 0 {
		return fail(exitUsage, fmt.Errorf("unexpected argument %q (ptxgen -h for usage)", fs.Arg(0)))
	}
	if *list {
		printList(stdout, defKernel)
		return exitOK
	}

	target, err := ptx.TargetByName(*arch)
	if err != nil {
		return fail(exitUsage, err)
	}
	cfg := gen.Config{
		K:             *k,
		MaxCandidates: *maxCand,
		BlockSize:     *block,
		Bins:          *bins,
		Target:        target,
		Unroll:        *unroll,
		Instrument:    *instrument,
	}
	kernelSet := false
	fs.Visit(func(f *flag.Flag) { kernelSet = kernelSet || f.Name == "kernel" })
	kern, err := gen.Generate(*kernel, cfg)
	if err != nil {
		return fail(exitUsage, err)
	}
	if !kernelSet && *kernel != preferredKernel {
		fmt.Fprintf(stderr, "ptxgen: %s is not generated yet; printing %s\n", preferredKernel, *kernel)
	}

	text := kern.PTX()
	if *out == "" {
		if _, err := io.WriteString(stdout, text); err != nil {
			return fail(exitIO, err)
		}
		return exitOK
	}
	if err := os.WriteFile(*out, []byte(text), 0o644); err != nil {
		return fail(exitIO, err)
	}
	return exitOK
}

// oneLine flattens a multi-line error (errors.Join, as Config.Validate
// returns) to one line, its parts separated by "; ".
func oneLine(err error) string {
	lines := strings.FieldsFunc(err.Error(), func(r rune) bool { return r == '\n' || r == '\r' })
	return strings.Join(lines, "; ")
}

// printList writes one line per kernel (name and description, the default
// marked) and the known targets.
func printList(w io.Writer, defKernel string) {
	names := gen.Names()
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	fmt.Fprintln(w, "kernels:")
	for _, n := range names {
		mark := ""
		if n == defKernel {
			mark = " (default)"
		}
		fmt.Fprintf(w, "  %-*s  %s%s\n", width, n, gen.Describe(n), mark)
	}
	fmt.Fprintf(w, "targets: %s (default %s)\n", ptx.TargetNames(), gen.DefaultConfig().Target.Name)
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `ptxgen prints the PTX gvr generates for a kernel and a configuration.

Usage:
  ptxgen [flags]

Examples:
  ptxgen                             the default kernel, default config (sm_100)
  ptxgen -list                       the kernels and targets
  ptxgen -arch sm_90                 the same kernel for sm_90 (PTX 7.8)
  ptxgen -kernel %s -k 256 -max-candidates 1024 -block 256 -bins 256
  ptxgen -arch sm_90 -o /tmp/k_sm_90.ptx

Flags:
`, fallbackKernel)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
