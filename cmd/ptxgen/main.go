package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// spec is a kernel and its configuration, as the flags give them.
type spec struct {
	kernel, arch                    string
	k, maxCand, block, bins, unroll int
	cluster, maxN, groups           int
	instrument, mbarrierRounds      bool
	keepOver, sureSet               bool
	dependentLaunch, sorted         bool
	scores                          string
}

func defaultSpec() spec {
	def := gen.DefaultConfig()
	return spec{kernel: defaultKernel(), arch: def.Target.Name, k: def.K, maxCand: def.MaxCandidates,
		block: def.BlockSize, bins: def.Bins, unroll: def.Unroll, instrument: def.Instrument, scores: def.Scores.String()}
}

// configFlags are the flags that set a spec; -diff takes the same names.
var configFlags = []string{"kernel", "k", "max-candidates", "block", "bins", "arch", "unroll", "instrument", "cluster", "max-n", "scores", "mbarrier-rounds", "keep-over", "sure-set", "dependent-launch", "sorted", "groups"}

// register defines the flags of configFlags on fs, s's fields their
// defaults and destinations.
func (s *spec) register(fs *flag.FlagSet) {
	fs.StringVar(&s.kernel, "kernel", s.kernel, "the kernel to print (see -list)")
	fs.IntVar(&s.k, "k", s.k, "K: how many elements to select")
	fs.IntVar(&s.maxCand, "max-candidates", s.maxCand, "capacity of the candidate buffer (at least K)")
	fs.IntVar(&s.block, "block", s.block, "threads per CTA (a multiple of 32, at most 1024)")
	fs.IntVar(&s.bins, "bins", s.bins, "histogram bins of the refine phase (a power of two)")
	fs.StringVar(&s.arch, "arch", s.arch, "target architecture: "+ptx.TargetNames())
	fs.IntVar(&s.unroll, "unroll", s.unroll, "float4 loads in flight per thread in a pass over a row (0: the generator's default)")
	fs.BoolVar(&s.instrument, "instrument", s.instrument, "emit phase timestamps and counters into a stats buffer")
	fs.IntVar(&s.cluster, "cluster", s.cluster, "cluster kernels: CTAs per thread-block cluster, 1 to 16 (sm_90+)")
	fs.IntVar(&s.groups, "groups", s.groups, "topk_fallback_cluster: clusters sharing one row, combining their counts through a workspace in global memory")
	fs.IntVar(&s.maxN, "max-n", s.maxN, "cluster kernels: the longest row a cluster holds in shared memory")
	fs.StringVar(&s.scores, "scores", s.scores, "Top-K kernels: the score type, f32, f16 or bf16")
	fs.BoolVar(&s.mbarrierRounds, "mbarrier-rounds", s.mbarrierRounds, "cluster Top-K kernels: signal the cluster's rounds with remote mbarrier arrivals instead of barrier.cluster")
	fs.BoolVar(&s.keepOver, "keep-over", s.keepOver, "cluster Top-K kernels: keep the high vectors of a row's part past max-n in shared memory for the later walks")
	fs.BoolVar(&s.sureSet, "sure-set", s.sureSet, "GVR kernels: set apart the candidates a first-pass count shows to be in the Top-K, so that Phase 4 selects among the others")
	fs.BoolVar(&s.sorted, "sorted", s.sorted, "Top-K kernels: write each row's Top-K in rank order (a sort of K in shared memory) instead of as a set")
	fs.BoolVar(&s.dependentLaunch, "dependent-launch", s.dependentLaunch, "wait first for the kernel before on the stream, then let the next one be scheduled: fit for a programmatic dependent launch (sm_90+)")
}

// generate builds the kernel s names.
func (s spec) generate() (*gen.Kernel, error) {
	target, err := ptx.TargetByName(s.arch)
	if err != nil {
		return nil, err
	}
	scores, err := gen.ParseScoreType(s.scores)
	if err != nil {
		return nil, err
	}
	return gen.Generate(s.kernel, gen.Config{
		K:              s.k,
		MaxCandidates:  s.maxCand,
		BlockSize:      s.block,
		Bins:           s.bins,
		Target:         target,
		Unroll:         s.unroll,
		Instrument:     s.instrument,
		Cluster:        s.cluster,
		MaxN:           s.maxN,
		Groups:         s.groups,
		Scores:         scores,
		MbarrierRounds: s.mbarrierRounds,
		KeepOver:       s.keepOver,
		SureSet:        s.sureSet,
		Sorted:         s.sorted,
		// The one name longer than the others, aligned apart.
		DependentLaunch: s.dependentLaunch,
	})
}

// with is s changed by -diff's argument: comma-separated flags of
// configFlags without their dash, "arch=sm_100,k=1024" or "instrument".
func (s spec) with(changes string) (spec, error) {
	fs := flag.NewFlagSet("-diff", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.register(fs)
	var args []string
	for _, c := range strings.Split(changes, ",") {
		if c = strings.TrimSpace(c); c != "" {
			args = append(args, "-"+strings.TrimLeft(c, "-"))
		}
	}
	if len(args) == 0 {
		return s, fmt.Errorf("-diff %q: no change given (e.g. -diff arch=sm_100)", changes)
	}
	if err := fs.Parse(args); err != nil {
		return s, fmt.Errorf("-diff %q: %v (it takes %s)", changes, err, strings.Join(configFlags, ", "))
	}
	if fs.NArg() > 0 {
		return s, fmt.Errorf("-diff %q: unexpected %q: write each change as name=value, separated by commas", changes, fs.Arg(0))
	}
	return s, nil
}

// label names the kernel and configuration in a diff header.
func label(k *gen.Kernel) string { return fmt.Sprintf("%s (%v)", k.Name, k.Config) }

// run is the whole command: it parses args, writes PTX, a summary, a diff
// (or the usage or the list) to stdout or the -o file, and one-line errors
// to stderr, and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fail := func(status int, err error) int {
		fmt.Fprintf(stderr, "ptxgen: %s\n", oneLine(err))
		return status
	}

	sp := defaultSpec()
	defKernel := sp.kernel
	fs := flag.NewFlagSet("ptxgen", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, on one line
	sp.register(fs)
	out := fs.String("o", "", "write the output to `file` instead of standard output")
	goOut := fs.String("go", "", "with -o: also write `file`.go, a Go file that embeds the -o PTX file and declares its launch contract")
	goPkg := fs.String("package", "", "with -go: the Go package (default: the -go file's directory name)")
	goName := fs.String("name", "", "with -go: the contract's Go name (default: the kernel's, in CamelCase: GvrTopk); the text is NAME+PTX")
	list := fs.Bool("list", false, "list the kernels and the targets, then exit")
	summary := fs.Bool("summary", false, "print a summary instead of the PTX: params, shared memory, registers, instructions per phase")
	row := fs.Int("row", 0, "with -summary, a Top-K kernel: also run it in the interpreter on one row of `n` of the paper's synthetic scores "+
		"(with their static prediction) and give the warp instructions issued in each phase, over the row's CTAs")
	diff := fs.String("diff", "", "compare with a second kernel: these flags changed by `changes`, comma-separated, without dashes "+
		"(arch=sm_100; k=1024,max-candidates=3072; instrument); prints a unified diff of the PTX, or of the summaries with -summary")

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
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	kern, err := sp.generate()
	if err != nil {
		return fail(exitUsage, err)
	}
	if !set["kernel"] && sp.kernel != preferredKernel {
		fmt.Fprintf(stderr, "ptxgen: %s is not generated yet; printing %s\n", preferredKernel, sp.kernel)
	}
	if set["row"] && !*summary {
		return fail(exitUsage, errors.New("-row adds to -summary: give -summary too"))
	}
	show := func(k *gen.Kernel) (string, error) {
		if !*summary {
			return k.PTX(), nil
		}
		if !set["row"] {
			return summarize(k, nil, 0), nil
		}
		iss, err := issued(k, *row)
		if err != nil {
			return "", err
		}
		return summarize(k, iss, *row), nil
	}
	text, err := show(kern)
	if err != nil {
		return fail(exitUsage, err)
	}
	if set["diff"] {
		sp2, err := sp.with(*diff)
		if err != nil {
			return fail(exitUsage, err)
		}
		kern2, err := sp2.generate()
		if err != nil {
			return fail(exitUsage, fmt.Errorf("-diff: %w", err))
		}
		text2, err := show(kern2)
		if err != nil {
			return fail(exitUsage, fmt.Errorf("-diff: %w", err))
		}
		text = unifiedDiff(label(kern), label(kern2), text, text2)
	}

	if *goOut != "" {
		if *out == "" || *summary || set["diff"] {
			return fail(exitUsage, errors.New("-go writes the Go file of the -o PTX file: give -o, and neither -summary nor -diff"))
		}
		if filepath.Dir(*goOut) != filepath.Dir(*out) {
			return fail(exitUsage, fmt.Errorf("-go %s and -o %s must be in one directory (the Go file embeds the PTX file)", *goOut, *out))
		}
		pkg, name := *goPkg, *goName
		if pkg == "" {
			abs, err := filepath.Abs(*goOut)
			if err != nil {
				return fail(exitIO, err)
			}
			pkg = filepath.Base(filepath.Dir(abs))
		}
		if name == "" {
			name = defaultGoName(kern.Name)
		}
		src, err := goFile(kern, pkg, name, filepath.Base(*out), args)
		if err != nil {
			return fail(exitUsage, err)
		}
		if err := os.WriteFile(*goOut, src, 0o644); err != nil {
			return fail(exitIO, err)
		}
	}
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
  ptxgen -summary                    params, shared memory, registers, instructions per phase
  ptxgen -arch sm_90 -diff arch=sm_100
                                     what changes from sm_90 to sm_100 (a unified diff)
  ptxgen -summary -diff k=1024,max-candidates=3072
                                     how the summary changes with K
  ptxgen -summary -row 65536 -kernel topk_fallback -arch sm_90 -diff sorted
                                     the warp instructions each phase issues on a
                                     synthetic row (the interpreter), unsorted and sorted
  ptxgen -arch sm_90 -k 512 -o topk.ptx -go topk.go -name TopK
                                     the PTX, and a Go file embedding it with its launch contract

Flags:
`, fallbackKernel)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
