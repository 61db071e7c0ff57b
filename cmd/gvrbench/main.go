//go:build cuda

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/runtime"
	"github.com/gvr-go/gvr/topk"
)

// The kernels gvrbench can time.
var kernelDocs = map[string]string{
	"gvr":       "gvr_topk with the static structural prior as its prediction (the paper's setting)",
	"feedback":  "gvr_topk with its own previous output as the prediction, in place (a decode step on unchanged scores: a perfect prediction)",
	"fallback":  "topk_fallback: no prediction, the guess comes from a sample of the row (the baseline)",
	"radix":     "topk_radix: exact radix select over the row",
	"floor":     "cluster_read: the row read once into a cluster's shared memory and nothing else, for each -cluster size (columns floorC): the floor of a cluster kernel (sm_90+)",
	"cgvr":      "gvr_topk_cluster with the static prior, one row per cluster, for each -cluster size (columns cgvrC; sm_90+); the Selector's configuration",
	"cfallback": "topk_fallback_cluster: no prediction, one row per cluster, for each -cluster size (columns cfallbackC; sm_90+)",
	"gfallback": "topk_fallback_cluster with each row shared by G clusters, combining counts through global memory (gen.Config.Groups), for each -cluster size C and -groups G (columns gfallbackCxG; sm_90+), launched cooperatively; a cell whose batch's clusters are not all resident at once is left out",
	"auto":      "the kernel a Selector picks for the batch and N (topk.Choice: gvr_topk, or gvr_topk_cluster with the tuned cluster size, or their fallback where the tuning runs it on predicted rows), with the static prior",
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type options struct {
	batches, ns    []int
	kernels        []string
	k, iters, warm int
	tuning         topk.Config // -max-candidates, -block-size, -bins, -unroll: the kernels' configuration beside K
	flushMB        int
	flushRead      bool // -flush-by read: the L2 flushed by reading the flush buffer, not writing it
	seed           uint64
	device         int
	cold, hot      bool
	graph          bool   // time launches replayed from a CUDA graph too
	tune           string // -tune: write the measured kernel choice here
	into           string // -into: splice it into this table first
	phases         bool
	phasesWarm     bool // -phases-warm: the breakdown without the L2 flush
	values         bool
	asJSON         bool
	out            string
	clusters       []int        // the cluster sizes of the floor kernels
	scores         []topk.DType // -scores: the row types the kernels are timed on
	pageSize       int          // -pages: with the fused page-table output of this page size (0: without)
	mbar           bool         // -mbarrier-rounds: the cluster Top-K kernels with mbarrier rounds too
	keep           bool         // -keep-over: and keeping a long row's excess's high vectors too
	sure           bool         // -sure-set: and setting apart the candidates sure to be in the Top-K too
	dependent      bool         // -dependent: every launch a programmatic dependent one
	dense          bool         // -dense: a null lengths pointer, every row N long
	sorted         bool         // -sorted: each row's Top-K in rank order
	groups         []int        // -groups: the clusters a row of the gfallback kernels
	// Replays instead of the table: calibrated profiles and trace files.
	replay         []string
	trace          string
	steps, replayN int
	ablation       bool // -ablation: the paper's ablation instead of the table
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gvrbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	batches := fs.String("batch", "1,8,64", "batch sizes (rows per launch), comma-separated")
	ns := fs.String("n", "8192,16384,32768,65536,70690,131072,262144", "row lengths N, comma-separated")
	kernels := fs.String("kernels", "gvr,feedback,fallback,radix", "kernels to time: gvr, feedback, fallback, radix, floor, cgvr, cfallback")
	clusters := fs.String("cluster", "8,16", "the cluster kernels' (floor, cgvr, cfallback) cluster sizes, comma-separated (1 to 16)")
	replay := fs.String("replay", "", "instead of the table, replay calibrated decode trajectories of these profiles (comma-separated: layer0, layer1, middle, layer60, or all)")
	var o options
	scores := fs.String("scores", "f32", "the score types the kernels are timed on, comma-separated (f32, f16, bf16): a 16-bit type adds a column per kernel (gvr.bf16), its rows the float32 rows rounded")
	fs.BoolVar(&o.sure, "sure-set", false, "also time each GVR kernel (gvr, fallback, cgvrC, cfallbackC; with -mbarrier-rounds each +mbar one) setting apart the candidates its first pass shows to be in the Top-K (columns gvr+sure, cgvr16+mbar+sure; gen.Config.SureSet; the auto column takes it by topk's rule, topk.SureSet; -tune times each kernel with it and without, and ranks each where the rule takes it with it)")
	fs.BoolVar(&o.keep, "keep-over", false, "also time each cluster Top-K kernel (with -mbarrier-rounds: each +mbar one) keeping, in rows longer than its cluster holds, which vectors of the excess hold high elements, to load only those again (columns cgvr16+keep, cgvr16+mbar+keep; gen.Config.KeepOver); with -tune, the choice may take it")
	fs.BoolVar(&o.mbar, "mbarrier-rounds", false, "also time each cluster Top-K kernel (cgvr, cfallback) with its rounds signalled by mbarriers (columns cgvr16+mbar; gen.Config.MbarrierRounds: what the selector's cluster kernels do)")
	fs.BoolVar(&o.dependent, "dependent", false, "build every kernel for a programmatic dependent launch and launch it so (topk.Config.DependentLaunch, runtime.Kernel.LaunchDependent; sm_90+): graph-replayed, each launch may then be scheduled while the one before it runs, and waits for its end, as in a decode step whose kernels all allow it; cold and warm launches follow a copy or an event, and run as plain ones")
	fs.BoolVar(&o.sorted, "sorted", false, "build every Top-K kernel to write each row's Top-K in rank order (topk.Config.Sorted), checked slot by slot against the reference")
	fs.BoolVar(&o.dense, "dense", false, "launch every kernel on a dense batch: a null lengths pointer, every row N long (a topk.Batch without lengths), so that no kernel loads a length before its row")
	fs.IntVar(&o.pageSize, "pages", 0, "also time each kernel writing the fused page-table output of this page size (columns gvr+pages; 0: not)")
	fs.StringVar(&o.trace, "trace", "", "instead of the table, replay the decode trace in `file` (.npy, or a folder of them: topk.LoadTrace)")
	fs.IntVar(&o.steps, "steps", 32, "-replay: decode steps")
	fs.IntVar(&o.replayN, "replay-n", 70690, "-replay, -ablation: the row's length at the first step (it grows by one a step)")
	fs.BoolVar(&o.ablation, "ablation", false, "instead of the table, the paper's ablation: gvr_topk and the Selector's kernel with no prediction, a random one, the static prior and the previous step's at low and high alpha, on calibrated trajectories (-replay-n, -steps), beside the paper's figures")
	fs.IntVar(&o.k, "k", 2048, "K")
	groups := fs.String("groups", "4", "the gfallback kernels' clusters a row, comma-separated (2 to 8); -tune measures each")
	fs.IntVar(&o.tuning.MaxCandidates, "max-candidates", 0, "every kernel's MaxCandidates, as topk.Config's (0: its default, max(3K, 1024))")
	fs.IntVar(&o.tuning.BlockSize, "block-size", 0, "every kernel's threads per CTA, as topk.Config's (0: its default, 512)")
	fs.IntVar(&o.tuning.Bins, "bins", 0, "every kernel's radix-select bins (Phase 4), as topk.Config's (0: its default, 2048)")
	fs.IntVar(&o.tuning.Unroll, "unroll", 0, "every kernel's row-walk unrolling, as topk.Config's (0: the generator's default)")
	fs.IntVar(&o.iters, "iters", 50, "timed launches per median")
	fs.IntVar(&o.warm, "warmup", 5, "untimed launches before them")
	fs.IntVar(&o.flushMB, "flush-mb", 256, "MB written (or read: -flush-by) before each cold launch to flush L2")
	flushBy := fs.String("flush-by", "write", "how a cold launch's L2 flush evicts the row: write (a memset of -flush-mb MB, leaving the L2 full of dirty lines that the timed kernel's misses write back, as Triton's do_bench and nvbench flush) or read (count_ge over them: clean lines; what the write-backs cost, perf notes 173)")
	seed := fs.Uint64("seed", 1, "seed of the synthetic scores")
	fs.IntVar(&o.device, "device", 0, "CUDA device ordinal")
	mode := fs.String("mode", "cold,warm", "timing modes, comma-separated: cold (L2 flushed before each launch), warm (no flush), graph (launches captured in a CUDA graph, replayed: kernel time without the launch and event overhead)")
	fs.StringVar(&o.into, "into", "", intoUsage)
	fs.StringVar(&o.tune, "tune", "", "measure gvr_topk against gvr_topk_cluster for every -cluster size, each beside its fallback (topk_fallback, topk_fallback_cluster), for every -batch and -n (cold and graph-replayed), and write the choice per batch and N to `file`: the fewest SMs whose worse mode (its median over the fastest's) is within 2% of the best, a cluster only where it is no slower than one CTA a row in either mode, with the prediction unless the fallback of that shape is faster in both modes, by more than 2% in one; each kernel timed with the sure set too, and ranked with it where topk.SureSet's rule takes it (topk.Tuning JSON; topk/tuning/ keeps one per GPU); with -from, the choice of a saved -tune run's report (-o), or of several runs' (comma-separated: each cell's median over them)")
	fs.BoolVar(&o.phases, "phases", true, "per-phase breakdown from the instrumented kernels")
	fs.BoolVar(&o.phasesWarm, "phases-warm", false, "take the per-phase breakdown warm (after one untimed launch, no L2 flush before each) instead of cold: what a cold row's misses add to each step")
	fs.BoolVar(&o.values, "values", false, "also write the selected values")
	fs.BoolVar(&o.asJSON, "json", false, "print JSON on stdout instead of the table")
	fs.StringVar(&o.out, "o", "", "also write the JSON report to `file`")
	charts := fs.String("charts", "", "also write charts (SVG and PNG) into `dir`: latency against N, phases, replay passes")
	compare := fs.String("compare", "", "with -from: print its medians and phases against those of the report in `file` (an A/B of two saved runs; needs no GPU)")
	from := fs.String("from", "", "print the report saved in `file` (-o) instead of measuring, and with -charts draw it; needs no GPU")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "gvrbench times gvr's Top-K kernels on the GVR paper's synthetic workload.\n\nUsage: gvrbench [flags]\n\nKernels:\n")
		for _, k := range []string{"gvr", "feedback", "fallback", "radix", "floor", "cgvr", "cfallback", "gfallback", "auto"} {
			fmt.Fprintf(stderr, "  %-9s %s\n", k, kernelDocs[k])
		}
		fmt.Fprintf(stderr, "\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(status int, format string, a ...any) int {
		fmt.Fprintf(stderr, "gvrbench: "+format+"\n", a...)
		return status
	}
	if *from != "" {
		if err := fromReport(*from, *charts, *compare, o.tune, o.into, stdout); err != nil {
			return fail(1, "%v", err)
		}
		return 0
	}
	var err error
	if o.batches, err = parseInts(*batches); err != nil {
		return fail(2, "-batch %v", err)
	}
	if o.ns, err = parseInts(*ns); err != nil {
		return fail(2, "-n %v", err)
	}
	if o.clusters, err = parseInts(*clusters); err != nil || slices.Max(o.clusters) > 16 {
		return fail(2, "-cluster %q: want comma-separated cluster sizes from 1 to 16", *clusters)
	}
	if o.groups, err = parseInts(*groups); err != nil || slices.Min(o.groups) < 2 || slices.Max(o.groups) > gen.MaxGroups {
		return fail(2, "-groups %q: want comma-separated numbers of clusters a row from 2 to %d", *groups, gen.MaxGroups)
	}
	for _, k := range strings.Split(*kernels, ",") {
		if _, ok := kernelDocs[k]; !ok {
			return fail(2, "-kernels: unknown kernel %q (gvr, feedback, fallback, radix, floor, cgvr, cfallback, gfallback, auto)", k)
		}
		if clusterKernels[k] == "" {
			o.kernels = append(o.kernels, k)
			continue
		}
		for _, c := range o.clusters {
			if k != "gfallback" {
				o.kernels = append(o.kernels, fmt.Sprintf("%s%d", k, c))
				continue
			}
			for _, g := range o.groups {
				if c > 1 {
					o.kernels = append(o.kernels, fmt.Sprintf("%s%dx%d", k, c, g))
				}
			}
		}
	}
	for _, s := range strings.Split(*scores, ",") {
		st, err := gen.ParseScoreType(s)
		if err != nil {
			return fail(2, "-scores: %v", err)
		}
		for _, d := range []topk.DType{topk.Float32, topk.Float16, topk.BFloat16} {
			if d.ScoreType() == st {
				o.scores = append(o.scores, d)
			}
		}
	}
	if o.pageSize < 0 {
		return fail(2, "-pages %d: want a page size, or 0", o.pageSize)
	}
	o.kernels = columns(o.kernels, o.scores, o.pageSize > 0, o.mbar, o.keep, o.sure)
	for _, m := range strings.Split(*mode, ",") {
		switch m {
		case "cold":
			o.cold = true
		case "warm":
			o.hot = true
		case "graph":
			o.graph = true
		default:
			return fail(2, "-mode: %q is not cold, warm or graph", m)
		}
	}
	switch *flushBy {
	case "write":
	case "read":
		o.flushRead = true
	default:
		return fail(2, "-flush-by: %q is not write or read", *flushBy)
	}
	if o.iters < 1 || o.warm < 0 || o.k < 1 || o.flushMB < 1 {
		return fail(2, "-iters, -k and -flush-mb must be positive, -warmup not negative")
	}
	o.seed = *seed
	if o.into != "" && o.tune == "" {
		return fail(2, "-into splices a -tune table; give -tune too")
	}
	if o.tune != "" {
		// The kernels the selector generates (topk.ChoiceConfig): the
		// cluster kernels with mbarrier rounds; each GVR kernel beside
		// its fallback, which the selector may run on predicted steps
		// too (topk.Tuning.Fallback); each also with the sure set, which
		// the table's choice takes where topk.SureSet's rule does.
		o.kernels = []string{"gvr", "gvr+sure", "fallback", "fallback+sure"}
		for _, c := range o.clusters {
			for _, prefix := range []string{"cgvr", "cfallback"} {
				k := fmt.Sprintf("%s%d", prefix, c)
				if topk.ChoiceConfig(gen.Config{}, c, false, false, 0).MbarrierRounds {
					k += "+mbar"
				}
				o.kernels = append(o.kernels, k, k+"+sure")
				if o.keep {
					o.kernels = append(o.kernels, k+"+keep")
				}
			}
			for _, g := range o.groups {
				// Rows shared by clusters, as the selector runs them.
				if c > 1 {
					o.kernels = append(o.kernels, fmt.Sprintf("gfallback%dx%d+mbar", c, g))
				}
			}
		}
		o.cold, o.hot, o.graph, o.phases = true, false, true, false
	}
	if *replay == "all" {
		*replay = "layer0,layer1,middle,layer60"
	}
	if *replay != "" {
		o.replay = strings.Split(*replay, ",")
		if o.steps < 2 || o.replayN < 1 {
			return fail(2, "-replay needs -steps of at least 2 and a positive -replay-n")
		}
	}

	// Progress goes to a terminal, never into -json output or a CI log.
	progress := io.Discard
	if f, ok := stderr.(*os.File); ok && !o.asJSON && os.Getenv("CI") == "" {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			progress = stderr
		}
	}
	rep, err := bench(o, progress)
	if err != nil {
		return fail(1, "%v", err)
	}
	rep.Command = strings.Join(append([]string{"gvrbench"}, args...), " ")
	if *charts != "" {
		if _, err := writeCharts(*charts, rep); err != nil {
			return fail(1, "%v", err)
		}
	}
	if o.tune != "" {
		if err := writeTuning(o.tune, o.into, rep); err != nil {
			return fail(1, "%v", err)
		}
	}
	if o.out != "" {
		if err := writeJSON(o.out, rep); err != nil {
			return fail(1, "%v", err)
		}
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fail(1, "%v", err)
		}
	} else {
		rep.WriteTable(stdout)
	}
	if len(rep.Mismatches) > 0 {
		return 1
	}
	return 0
}

func writeJSON(path string, rep *Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// bench is the whole measurement.
type bencher struct {
	o          options
	dev        *runtime.Device
	st         *runtime.Stream
	start, end *runtime.Event
	flush      *runtime.Buffer
	reader     *flushReader               // -flush-by read; nil: flush by writing
	hold       *runtime.Kernel            // gen's hold: what a timed launch queues behind
	holdArgs   *ptx.Args                  // its arguments, made once: a sample sets ns and allocates nothing
	holdNS     uint64                     // its length, doubled for each sample taken again
	retaken    int                        // samples taken again since the last Timing (queued)
	kern       map[string]*runtime.Kernel // by kernel name, and name+"/instrumented"
	rep        *Report
	workspace  *runtime.Buffer // the kernels' whose rows clusters share (gen.GroupWorkspaceBytes a row), zero before the first launch
}

func bench(o options, progress io.Writer) (*Report, error) {
	dev, err := runtime.Open(o.device)
	if err != nil {
		return nil, err
	}
	info := dev.Info()
	b := &bencher{o: o, dev: dev, kern: make(map[string]*runtime.Kernel)}
	b.rep = &Report{Start: time.Now().UTC(), K: o.k, Iters: o.iters, Warmup: o.warm, FlushMB: o.flushMB, FlushRead: o.flushRead, Seed: o.seed, PhasesWarm: o.phases && o.phasesWarm,
		Kernels: o.kernels, Mismatches: []string{},
		Workload: "synthetic scores (GVR paper appendix: random q/k, YaRN RoPE), batch rows independent, prediction: static structural prior",
		Device: Device{Name: info.Name, CC: fmt.Sprintf("%d.%d", info.Major, info.Minor), Target: info.Target.Name,
			SMs: info.SMs, L2MB: info.L2Bytes >> 20, ClockMHz: info.ClockKHz / 1000,
			Driver: fmt.Sprintf("%d.%d", info.Driver/1000, info.Driver%1000/10)}}
	fmt.Fprintf(progress, "gvrbench: %v\n", info)
	if b.st, err = dev.NewStream(); err != nil {
		return nil, err
	}
	defer b.st.Close()
	if b.start, err = dev.NewEvent(); err != nil {
		return nil, err
	}
	defer b.start.Close()
	if b.end, err = dev.NewEvent(); err != nil {
		return nil, err
	}
	defer b.end.Close()
	if b.flush, err = dev.Alloc(o.flushMB << 20); err != nil {
		return nil, err
	}
	defer b.flush.Free()
	hcfg := gen.DefaultConfig()
	hcfg.Target, hcfg.BlockSize = info.Target, 32
	if b.hold, err = topk.Kernel(dev, "hold", hcfg); err != nil {
		return nil, err
	}
	b.holdArgs, b.holdNS = b.hold.Args(), 20_000
	if o.flushRead {
		if b.reader, err = newFlushReader(dev, b.config(), b.flush); err != nil {
			return nil, fmt.Errorf("-flush-by read: %w", err)
		}
		defer b.reader.free()
	}
	if slices.ContainsFunc(o.kernels, func(k string) bool { k = parseColumn(k).kernel; return groupsOf(k) > 0 || k == "auto" }) {
		// One workspace for every such kernel (its size and layout
		// depend on MaxCandidates alone): the selector's choice (auto)
		// may share rows too.
		cfg := b.config()
		if b.workspace, err = dev.Alloc(slices.Max(o.batches) * gen.GroupWorkspaceBytes(cfg)); err != nil {
			return nil, err
		}
		defer b.workspace.Free()
		if err := b.workspace.Memset32(nil, 0); err != nil {
			return nil, err
		}
	}
	if err := o.selectorConfig().KernelConfig(info.Target).Validate(); err != nil {
		return nil, fmt.Errorf("-k, -max-candidates, -block-size, -bins, -unroll: %w", err)
	}
	if b.rep.FirstUse, err = firstUse(dev, o.selectorConfig()); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "first use: %s\n", b.rep.FirstUse)
	if len(o.replay) > 0 || o.trace != "" {
		return b.replays(progress)
	}
	if o.ablation {
		b.rep.Workload = "calibrated decode trajectories (topk.Profiles), one row, each step cold (see the ablation table)"
		return b.rep, b.ablation()
	}
	if err := b.load(); err != nil {
		return nil, err
	}

	step, steps := 0, len(o.ns)*len(o.batches)
	for _, n := range o.ns {
		if n < o.k {
			return nil, fmt.Errorf("N = %d is smaller than K = %d", n, o.k)
		}
		t0 := time.Now()
		d, err := b.data(n)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "N=%d: %d synthetic rows and their reference in %v\n", n, d.rows, time.Since(t0).Round(time.Millisecond))
		for _, batch := range o.batches {
			step++
			t0 := time.Now()
			if err := b.measure(d, batch); err != nil {
				d.free()
				return nil, err
			}
			mode := "cold"
			if !o.cold {
				mode = "warm"
			}
			line := fmt.Sprintf("[%d/%d] batch %d, N %d, %s:", step, steps, batch, n, mode)
			for _, k := range o.kernels {
				line += fmt.Sprintf(" %s %.1f us", k, b.rep.median(batch, n, mode, k))
			}
			fmt.Fprintf(progress, "%s (%v)\n", line, time.Since(t0).Round(time.Millisecond))
		}
		d.free()
	}
	b.rep.HoldUS = float64(b.holdNS) / 1000
	return b.rep, nil
}

// firstUse times what a program's first Top-K costs: NewSelector, which
// generates and JIT-loads the two kernels (before any other kernel of
// this configuration is loaded in the process), then a first Select of
// one row, to the GPU's end.
func firstUse(dev *runtime.Device, cfg topk.Config) (string, error) {
	k := cfg.K
	cfg.MaxRows, cfg.Device = 1, dev
	t0 := time.Now()
	sel, err := topk.NewSelector(cfg)
	if err != nil {
		return "", err
	}
	defer sel.Close()
	made := time.Since(t0)
	t1 := time.Now()
	if _, _, err := sel.SelectHost(0, make([]float32, 4*k), 4*k, nil); err != nil {
		return "", err
	}
	first := time.Since(t1)
	gvr, fb := sel.Kernels()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return fmt.Sprintf("NewSelector %.1f ms (JIT of gvr_topk %.1f ms and of topk_fallback %.1f ms, the rest generation and checks), "+
		"then the first SelectHost %.2f ms", ms(made), ms(gvr.JITTime), ms(fb.JITTime), ms(first)), nil
}

// load JIT-loads the kernels (and their instrumented variants).
func (b *bencher) load() error {
	cfg := b.config()
	names := map[string]string{"gvr": "gvr_topk", "feedback": "gvr_topk", "fallback": "topk_fallback", "radix": "topk_radix"}
	for _, k := range b.o.kernels {
		col := parseColumn(k)
		if _, c := clusterOf(col.kernel); c > 0 || col.kernel == "auto" {
			continue // loaded when measured (kernelFor)
		}
		for _, instr := range []bool{false, true} {
			if instr && (!b.o.phases || col.kernel == "radix" || col.pages) {
				continue // every column's phases but the page-table output's
			}
			c := cfg
			c.Instrument, c.Scores, c.SureSet = instr, col.kernelScores().ScoreType(), col.sure
			kern, err := topk.Kernel(b.dev, names[col.kernel], c)
			if err != nil {
				return err
			}
			key := k
			if instr {
				key += "/instrumented"
			}
			b.kern[key] = kern
			if desc := fmt.Sprintf("%v (%s)", kern, c); !slices.Contains(b.rep.Loaded, desc) {
				b.rep.Loaded = append(b.rep.Loaded, desc)
			}
		}
	}
	return nil
}

// dataset is one N's rows on the device, with their reference.
type dataset struct {
	n, rows int
	host    []float32
	want    map[topk.DType][][]int32 // per score type: 16-bit rows are the float32 rows rounded
	scores  map[topk.DType]*runtime.Buffer
	wide    map[topk.DType]*runtime.Buffer // the 16-bit rows' values as float32
	table   []int32                        // the page table, [rows, ceil(n/pageSize)] (-pages)
	tableD  *runtime.Buffer                // on the device
	pages   map[string]*runtime.Buffer
	lengths *runtime.Buffer // int32 [rows], all n
	prior   *runtime.Buffer // int32 [rows, K], the static prior in every row
	out     map[string]*runtime.Buffer
	vals    *runtime.Buffer
	stats   *runtime.Buffer
}

func (d *dataset) free() {
	for _, buf := range []*runtime.Buffer{d.lengths, d.prior, d.vals, d.stats, d.tableD} {
		if buf != nil {
			buf.Free()
		}
	}
	for _, m := range []map[string]*runtime.Buffer{d.out, d.pages} {
		for _, buf := range m {
			buf.Free()
		}
	}
	for _, m := range []map[topk.DType]*runtime.Buffer{d.scores, d.wide} {
		for _, buf := range m {
			buf.Free()
		}
	}
}

// data generates the largest batch's rows of length n and puts them on the
// device.
func (b *bencher) data(n int) (*dataset, error) {
	k := b.o.k
	rows := slices.Max(b.o.batches)
	syn := topk.Synthetic{N: n, K: k, Seed: b.o.seed}
	d := &dataset{n: n, rows: rows, host: syn.Rows(rows), out: make(map[string]*runtime.Buffer),
		want: make(map[topk.DType][][]int32), scores: make(map[topk.DType]*runtime.Buffer), wide: make(map[topk.DType]*runtime.Buffer),
		pages: make(map[string]*runtime.Buffer)}
	rowsOf := map[topk.DType][]float32{topk.Float32: d.host}
	narrow := map[topk.DType][]uint16{}
	for _, st := range b.o.scores {
		if st != topk.Float32 {
			narrow[st] = st.Narrow(d.host)
			rowsOf[st] = st.Widen(narrow[st])
		}
	}
	done := make(chan struct{}, rows*len(rowsOf))
	for st, x := range rowsOf {
		want := make([][]int32, rows)
		d.want[st] = want
		for r := range rows {
			go func() {
				want[r], _ = topk.Reference(x[r*n:(r+1)*n], k, b.o.sorted)
				done <- struct{}{}
			}()
		}
	}
	prior := syn.Prediction()
	priors := make([]int32, rows*k)
	lengths := make([]int32, rows)
	for r := range rows {
		copy(priors[r*k:(r+1)*k], prior)
		lengths[r] = int32(n)
	}
	for range rows * len(rowsOf) {
		<-done
	}
	var err error
	allocUp := func(bytes int, up func(*runtime.Buffer) error) *runtime.Buffer {
		if err != nil {
			return nil
		}
		var buf *runtime.Buffer
		if buf, err = b.dev.Alloc(bytes); err == nil && up != nil {
			err = up(buf)
		}
		return buf
	}
	d.scores[topk.Float32] = allocUp(4*rows*n, func(buf *runtime.Buffer) error { return runtime.Upload(buf, d.host) })
	for st, h := range narrow {
		d.scores[st] = allocUp(2*rows*n, func(buf *runtime.Buffer) error { return runtime.Upload(buf, h) })
		d.wide[st] = allocUp(4*rows*n, func(buf *runtime.Buffer) error { return runtime.Upload(buf, rowsOf[st]) })
	}
	if ps := b.o.pageSize; ps > 0 {
		// A page table of distinct random pages per row.
		per := (n + ps - 1) / ps
		d.table = make([]int32, rows*per)
		for i := range d.table {
			d.table[i] = int32((uint64(i)*2654435761 + b.o.seed) % (1 << 24))
		}
		d.tableD = allocUp(4*len(d.table), func(buf *runtime.Buffer) error { return runtime.Upload(buf, d.table) })
	}
	d.lengths = allocUp(4*rows, func(buf *runtime.Buffer) error { return runtime.Upload(buf, lengths) })
	d.prior = allocUp(4*rows*k, func(buf *runtime.Buffer) error { return runtime.Upload(buf, priors) })
	for _, name := range b.o.kernels {
		// The feedback kernel starts from the prior too.
		d.out[name] = allocUp(4*rows*max(k, 16), func(buf *runtime.Buffer) error { return runtime.Upload(buf, priors) })
		if parseColumn(name).pages {
			d.pages[name] = allocUp(4*rows*k, nil)
		}
	}
	if b.o.values {
		d.vals = allocUp(4*rows*k, nil)
	}
	if b.o.phases {
		d.stats = allocUp(rows*topk.StatsBytes, nil)
	}
	if err != nil {
		d.free()
		return nil, fmt.Errorf("N=%d: %w", n, err)
	}
	return d, nil
}

// args are kernel k's arguments for the benchmark's kernel name on
// dataset d, with the instrumentation record when stats is set.
func (b *bencher) args(name string, k *runtime.Kernel, d *dataset, stats bool) *ptx.Args {
	var vals uint64 // null: no values
	if d.vals != nil {
		vals = d.vals.Ptr()
	}
	col := parseColumn(name)
	scores := d.scores[col.scores]
	if col.wide {
		scores = d.wide[col.scores]
	}
	lengths := d.lengths.Ptr()
	if b.o.dense {
		lengths = 0 // every row is row_stride = N long
	}
	a := k.Args().Set("scores", scores.Ptr()).Set("row_stride", uint64(d.n)).Set("lengths", lengths)
	if isFloor(name) {
		return a.Set("held", d.out[name].Ptr())
	}
	a.Set("out_idx", d.out[name].Ptr()).Set("out_vals", vals).Set("next_n", 0).Set("row_starts", 0).Set("abs_idx", 0).Set("out_count", 0).Set("page_table", 0).Set("page_table_stride", 0).Set("page_size", 0).Set("out_pages", 0)
	if col.pages {
		per := (d.n + b.o.pageSize - 1) / b.o.pageSize
		a.Set("page_table", d.tableD.Ptr()).Set("page_table_stride", uint64(per)).Set("page_size", uint64(b.o.pageSize)).Set("out_pages", d.pages[name].Ptr())
	}
	K := uint64(b.o.k)
	prefix, _ := clusterOf(col.kernel)
	switch {
	case col.kernel == "gvr" || prefix == "cgvr",
		col.kernel == "auto" && k.Contract.Param("pred") != nil: // not where the selector picks a fallback
		a.Set("pred", d.prior.Ptr()).Set("pred_stride", K).Set("pred_count", K)
	case col.kernel == "feedback": // its own previous output
		a.Set("pred", d.out[name].Ptr()).Set("pred_stride", K).Set("pred_count", K)
	}
	if stats {
		a.Set("stats", d.stats.Ptr())
	}
	if k.Contract.Param("workspace") != nil {
		a.Set("workspace", b.workspace.Ptr())
	}
	return a
}

// replays runs the -replay profiles and the -trace file.
func (b *bencher) replays(progress io.Writer) (*Report, error) {
	var srcs []replaySource
	for i, name := range b.o.replay {
		p, err := profileByName(strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("-replay: %w", err)
		}
		srcs = append(srcs, profileSource(p, b.o.k, b.o.replayN, b.o.steps, b.o.seed+uint64(i)))
	}
	if b.o.trace != "" {
		src, err := traceSource(b.o.trace)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, src)
	}
	b.rep.Workload = "decode trajectories replayed through topk.Selector (see the replay table)"
	for _, src := range srcs {
		t0 := time.Now()
		r, err := b.replay(src)
		if err != nil {
			return nil, fmt.Errorf("replay %s: %w", src.name, err)
		}
		b.rep.Replays = append(b.rep.Replays, r)
		fmt.Fprintf(progress, "replay %s: %d steps in %v\n", src.name, src.steps, time.Since(t0).Round(time.Millisecond))
	}
	return b.rep, nil
}

// config is the benchmark's kernel configuration, the Selector's for K.
func (b *bencher) config() gen.Config {
	return b.o.selectorConfig().KernelConfig(b.dev.Info().Target)
}

// selectorConfig is the topk.Config of the kernels' configuration (-k,
// -max-candidates, -block-size, -bins, -unroll, -dependent, -sorted), as a
// Selector takes it.
func (o options) selectorConfig() topk.Config {
	c := o.tuning
	c.K = o.k
	c.DependentLaunch = o.dependent
	c.Sorted = o.sorted
	return c
}

// clusterConfig is the configuration of cluster kernel prefix for clusters
// of c CTAs and rows of n elements: the floor's holds a row of n; the
// Top-K kernels' are the Selector's, whose slices take all the shared
// memory that is left (MaxN 0), whatever N.
func (b *bencher) clusterConfig(prefix string, c, n int) gen.Config {
	cfg := b.config()
	cfg.Cluster = c
	if prefix == "floor" {
		cfg.MaxN = n
	}
	return cfg
}

// clusterKernel loads cluster kernel name for cfg.
func (b *bencher) clusterKernel(name string, cfg gen.Config) (*runtime.Kernel, error) {
	k, err := topk.Kernel(b.dev, name, cfg)
	if err != nil {
		return nil, err
	}
	if desc := fmt.Sprintf("%v (%s), %d clusters resident", k, cfg, k.MaxActiveClusters); !slices.Contains(b.rep.Loaded, desc) {
		b.rep.Loaded = append(b.rep.Loaded, desc)
	}
	return k, nil
}

// measure times every kernel on the first batch rows of d, cold and warm,
// checks the outputs, and takes the phase breakdown.
func (b *bencher) measure(d *dataset, batch int) error {
	for _, name := range b.o.kernels {
		k, ik, err := b.kernelFor(name, d.n, batch)
		if err != nil {
			return fmt.Errorf("%s, batch %d, N %d: %w", name, batch, d.n, err)
		}
		if k == nil {
			continue // a floor whose cluster cannot hold the row (the table shows -)
		}
		args := b.args(name, k, d, false)
		for _, mode := range []string{"cold", "warm", "graph"} {
			var samples []time.Duration
			var err error
			b.retaken = 0
			switch {
			case mode == "cold" && b.o.cold, mode == "warm" && b.o.hot:
				samples, err = b.time(k, batch, args, mode == "cold")
			case mode == "graph" && b.o.graph:
				samples, err = b.graphTime(k, batch, args)
			default:
				continue
			}
			if err != nil {
				return fmt.Errorf("%s, batch %d, N %d, %s: %w", name, batch, d.n, mode, err)
			}
			t := Timing{Batch: batch, N: d.n, Mode: mode, Kernel: name, Samples: len(samples), Retaken: b.retaken}
			t.MedianUS, t.P10US, t.P90US, t.MinUS = summarize(samples)
			b.rep.Timings = append(b.rep.Timings, t)
		}
		if err := b.check(name, d, batch); err != nil {
			return err
		}
		if ik != nil {
			if err := b.phases(name, ik, d, batch); err != nil {
				return err
			}
		}
	}
	return nil
}

// kernelFor is the kernel column name times at rows of n elements in
// batches of batch, and its instrumented twin (nil without -phases, or
// for the floor and the radix kernel); k is nil for a floor whose
// cluster cannot hold the row.
func (b *bencher) kernelFor(name string, n, batch int) (k, ik *runtime.Kernel, err error) {
	col := parseColumn(name)
	prefix, c := clusterOf(col.kernel)
	var gname string
	keep, sure, groups := col.keep, false, groupsOf(col.kernel)
	switch {
	case c > 0:
		gname = clusterKernels[prefix]
	case col.kernel == "auto":
		gname, c, keep, sure, groups = topk.Choice(b.dev.Info(), batch, n, true)
	default:
		return b.kern[name], b.kern[name+"/instrumented"], nil
	}
	cfg := b.clusterConfig(prefix, c, n)
	cfg.Scores, cfg.MbarrierRounds, cfg.KeepOver, cfg.SureSet = col.kernelScores().ScoreType(), col.mbar, keep, col.sure
	cfg.Groups = groups
	if col.kernel == "auto" {
		cfg = topk.ChoiceConfig(cfg, c, keep, sure, groups) // the selector's kernel, as it generates it
	}
	if prefix == "floor" && (cfg.Validate() != nil || !gen.FitsCluster(gname, cfg)) {
		return nil, nil, nil
	}
	if k, err = b.clusterKernel(gname, cfg); err != nil {
		return nil, nil, err
	}
	if cfg.Groups > 1 && !k.ResidentUnits(batch) {
		if col.kernel != "auto" {
			return nil, nil, nil // its clusters would wait for clusters not yet resident
		}
		// The selector's choice there: one cluster a row.
		cfg.Groups = 0
		if k, err = b.clusterKernel(gname, cfg); err != nil {
			return nil, nil, err
		}
	}
	if b.o.phases && prefix != "floor" && !col.pages {
		cfg.Instrument = true
		if ik, err = b.clusterKernel(gname, cfg); err != nil {
			return nil, nil, fmt.Errorf("instrumented: %w", err)
		}
		if cfg.Groups > 1 && !ik.ResidentUnits(batch) {
			ik = nil // no phases where the instrumented kernel's clusters are not all resident
		}
	}
	return k, ik, nil
}

// graphTime captures launches of k into a CUDA graph and replays it,
// warmup+iters times: each sample is a replay's time between two events
// (queued behind a hold, as a warm launch, so that the host's submission
// of the replay is not in it) divided by its launches. Back to back and
// warm, without a launch's host overhead and a cold launch's wait: how
// FlashInfer, vLLM and SGLang publish kernel times.
func (b *bencher) graphTime(k *runtime.Kernel, rows int, args *ptx.Args) ([]time.Duration, error) {
	const perGraph = 20
	g, err := b.st.Capture(func() error {
		for range perGraph {
			if err := b.launch(k, rows, args); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	defer g.Close()
	var samples []time.Duration
	for i := range b.o.warm + b.o.iters {
		el, err := b.queued(false, 0, func() error { return g.Launch(b.st) })
		if err != nil {
			return nil, err
		}
		if i >= b.o.warm {
			samples = append(samples, el/perGraph)
		}
	}
	return samples, nil
}

// launch queues k over rows rows on the bench's stream, as the Selector
// does (runtime.Kernel.LaunchUnits: cooperatively where the row's clusters
// wait for each other): a programmatic dependent launch with -dependent.
func (b *bencher) launch(k *runtime.Kernel, rows int, args *ptx.Args) error {
	return k.LaunchUnits(b.st, rows, args, b.o.dependent)
}

// time launches k warmup+iters times and returns the timed launches'
// durations.
func (b *bencher) time(k *runtime.Kernel, rows int, args *ptx.Args, cold bool) ([]time.Duration, error) {
	var samples []time.Duration
	for i := range b.o.warm + b.o.iters {
		el, err := b.once(k, rows, args, cold, uint32(i))
		if err != nil {
			return nil, err
		}
		if i >= b.o.warm {
			samples = append(samples, el)
		}
	}
	return samples, nil
}

// once launches k between two events and returns the time between them
// (queued: cold after an L2 flush, with fill).
func (b *bencher) once(k *runtime.Kernel, rows int, args *ptx.Args, cold bool, fill uint32) (time.Duration, error) {
	return b.queued(cold, fill, func() error { return b.launch(k, rows, args) })
}

// queued submits launch between two events, queued behind GPU work so
// that the events time the GPU and not the host, and returns the time
// between them: behind a hold of b.holdNS, which touches no memory, and
// cold, then the L2 flush (writing fill to the flush buffer, or with
// -flush-by read reading it). Where the start event had run before the
// host had submitted the end event (the host was slower than the work
// ahead, so the events would time its submission too), the sample is
// taken again (b.retaken) behind a hold twice as long.
func (b *bencher) queued(cold bool, fill uint32, launch func() error) (time.Duration, error) {
	const maxHold = 10_000_000 // ns: a host slower than this is broken
	for {
		err := b.hold.Launch(b.st, 1, b.holdArgs.Set("ns", b.holdNS))
		if err == nil && cold {
			if b.reader != nil {
				err = b.reader.launch(b.st)
			} else {
				err = b.flush.Memset32(b.st, fill)
			}
		}
		if err == nil {
			err = errors.Join(b.start.Record(b.st), launch(), b.end.Record(b.st))
		}
		var early bool
		if err == nil {
			early, err = b.start.Done()
		}
		if err == nil {
			err = b.end.Synchronize()
		}
		if err != nil {
			return 0, err
		}
		if !early {
			return runtime.Elapsed(b.start, b.end)
		}
		b.retaken++
		if b.holdNS *= 2; b.holdNS > maxHold {
			return 0, fmt.Errorf("the host took over %d us to submit a launch and two events", maxHold/1000)
		}
	}
}

// check compares the kernel's last output for the batch with the reference
// (a floor kernel's: each CTA holds its slice of the row, the whole row
// between them).
func (b *bencher) check(name string, d *dataset, batch int) error {
	if _, c := clusterOf(name); c > 0 && isFloor(name) {
		held := make([]int32, batch*c)
		if err := runtime.Download(held, d.out[name]); err != nil {
			return err
		}
		chunk := (d.n + 4*c - 1) / (4 * c) * 4
		for r := range batch {
			for rank := range c {
				want := min(chunk, max(0, d.n-rank*chunk))
				if got := held[r*c+rank]; int(got) != want {
					b.rep.Mismatches = append(b.rep.Mismatches, fmt.Sprintf("%s, batch %d, N %d, row %d: CTA %d holds %d elements, want %d",
						name, batch, d.n, r, rank, got, want))
				}
			}
		}
		return nil
	}
	k := b.o.k
	col := parseColumn(name)
	idx := make([]int32, batch*k)
	if err := runtime.Download(idx, d.out[name]); err != nil {
		return err
	}
	var pages []int32
	if col.pages {
		pages = make([]int32, batch*k)
		if err := runtime.Download(pages, d.pages[name]); err != nil {
			return err
		}
	}
	for r := range batch {
		if err := topk.Compare(idx[r*k:(r+1)*k], d.want[col.scores][r], b.o.sorted); err != nil {
			b.rep.Mismatches = append(b.rep.Mismatches, fmt.Sprintf("%s, batch %d, N %d, row %d: %v", name, batch, d.n, r, err))
		}
		if err := checkPages(d, b.o.pageSize, r, idx[r*k:(r+1)*k], pages); err != nil {
			b.rep.Mismatches = append(b.rep.Mismatches, fmt.Sprintf("%s, batch %d, N %d, row %d: %v", name, batch, d.n, r, err))
		}
	}
	return nil
}

// checkPages checks row r's page-table output (pages, the batch's; nil:
// none) against its indices idx: each slot the index's page through row
// r's table, or -1 where the index is.
func checkPages(d *dataset, pageSize, r int, idx, pages []int32) error {
	if pages == nil {
		return nil
	}
	per := (d.n + pageSize - 1) / pageSize
	k := len(idx)
	for j, c := range idx {
		want := int32(-1)
		if c >= 0 {
			want = d.table[r*per+int(c)/pageSize]*int32(pageSize) + c%int32(pageSize)
		}
		if got := pages[r*k+j]; got != want {
			return fmt.Errorf("page slot %d (index %d): %d, want %d", j, c, got, want)
		}
	}
	return nil
}

// phaseLaunches is how many cold launches of the instrumented kernel the
// breakdown averages.
const phaseLaunches = 5

// phases runs the instrumented kernel cold (warm with -phases-warm) and
// averages its records.
func (b *bencher) phases(name string, k *runtime.Kernel, d *dataset, batch int) error {
	args := b.args(name, k, d, true)
	p := Phases{Batch: batch, N: d.n, Kernel: name}
	var count float64
	var stepRows [len(topk.Steps)]float64
	cold := !b.o.phasesWarm
	if !cold {
		if _, err := b.once(k, batch, args, false, 0); err != nil { // the row and the kernel's data into L2
			return fmt.Errorf("%s (instrumented), batch %d, N %d: %w", name, batch, d.n, err)
		}
	}
	for i := range phaseLaunches {
		if _, err := b.once(k, batch, args, cold, uint32(i)); err != nil {
			return fmt.Errorf("%s (instrumented), batch %d, N %d: %w", name, batch, d.n, err)
		}
		raw := make([]byte, batch*topk.StatsBytes)
		if err := runtime.Download(raw, d.stats); err != nil {
			return err
		}
		recs, err := topk.ParseStats(raw)
		if err != nil {
			return err
		}
		for _, s := range recs {
			for j, c := range s.PhaseCycles() {
				p.PhaseCycles[j] += float64(c)
			}
			p.Phase2Passes += float64(s.Phase2Passes)
			p.RadixPasses += float64(s.RadixPasses)
			p.Candidates += float64(s.Candidates)
			p.Sure += float64(s.Sure)
			p.ValidPred += float64(s.ValidPred)
			c, ok := s.StepCycles()
			for j := range c {
				if ok[j] {
					p.StepUS[j] += float64(c[j])
					stepRows[j]++
				}
			}
			if i == 0 && int(s.Path) < len(p.Paths) {
				p.Paths[s.Path]++
			}
			count++
		}
	}
	mhz := float64(b.dev.Info().ClockKHz) / 1000
	for j := range p.PhaseCycles {
		p.PhaseCycles[j] /= count
		p.PhaseUS[j] = p.PhaseCycles[j] / mhz
	}
	for j := range p.StepUS {
		if stepRows[j] > 0 {
			p.StepUS[j] /= stepRows[j] * mhz
		}
	}
	p.Phase2Passes /= count
	p.RadixPasses /= count
	p.Candidates /= count
	p.Sure /= count
	p.ValidPred /= count
	b.rep.Phases = append(b.rep.Phases, p)
	return nil
}
