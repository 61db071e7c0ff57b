package main

// The benchmark's results and how they are printed: a table on stdout, or
// JSON. Untagged, so that it is tested without a GPU.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gvr-go/gvr/topk"
)

// Report is everything one run measured, as -json and -o write it.
type Report struct {
	Command  string    `json:"command"`
	Start    time.Time `json:"start"`
	Device   Device    `json:"device"`
	K        int       `json:"k"`
	Iters    int       `json:"iters"`
	Warmup   int       `json:"warmup"`
	FlushMB  int       `json:"flush_mb"`
	Seed     uint64    `json:"seed"`
	Workload string    `json:"workload"`
	Kernels  []string  `json:"kernels"`
	Loaded   []string  `json:"loaded_kernels"` // what the JIT made of each
	FirstUse string    `json:"first_use"`      // what a program's first NewSelector and Select took
	Timings  []Timing  `json:"timings"`
	Phases   []Phases  `json:"phases,omitempty"`
	// FlushRead: cold launches followed a flush that read its buffer
	// (-flush-by read), not one that wrote it.
	FlushRead bool `json:"flush_read,omitempty"`
	// HoldUS: how long the hold a timed launch queues behind ran at the
	// end (its first length, doubled for each sample taken again).
	HoldUS float64 `json:"hold_us,omitempty"`
	// PhasesWarm: the phases were taken warm (-phases-warm), not cold.
	PhasesWarm bool     `json:"phases_warm,omitempty"`
	Replays    []Replay `json:"replays,omitempty"`
	// Ablations: the paper's ablation on calibrated trajectories (-ablation).
	Ablations []Ablation `json:"ablations,omitempty"`
	// Mismatches lists outputs that differed from the CPU reference; a
	// run with any exits with status 1.
	Mismatches []string `json:"mismatches"`
}

// Device describes the GPU.
type Device struct {
	Name     string `json:"name"`
	CC       string `json:"compute_capability"`
	Target   string `json:"target"`
	SMs      int    `json:"sms"`
	L2MB     int    `json:"l2_mb"`
	ClockMHz int    `json:"clock_mhz"`
	Driver   string `json:"driver"`
}

// Timing is one kernel's latency on one batch, cold or warm, from CUDA
// events around each launch.
type Timing struct {
	Batch    int     `json:"batch"`
	N        int     `json:"n"`
	Mode     string  `json:"mode"` // cold or warm
	Kernel   string  `json:"kernel"`
	MedianUS float64 `json:"median_us"`
	P10US    float64 `json:"p10_us"`
	P90US    float64 `json:"p90_us"`
	MinUS    float64 `json:"min_us"`
	Samples  int     `json:"samples"`
	// Retaken: samples taken again because the host had not yet submitted
	// the launch when the work queued ahead of it ended (gvrbench's queued).
	Retaken int `json:"retaken,omitempty"`
}

// Phases is the instrumented kernel's breakdown for one batch: the mean
// over rows (and launches) of each phase's time and of the counters.
type Phases struct {
	Batch        int        `json:"batch"`
	N            int        `json:"n"`
	Kernel       string     `json:"kernel"`
	PhaseUS      [4]float64 `json:"phase_us"` // SM cycles at the device clock
	PhaseCycles  [4]float64 `json:"phase_cycles"`
	Phase2Passes float64    `json:"phase2_passes"`
	RadixPasses  float64    `json:"radix_passes"`
	Candidates   float64    `json:"candidates"`
	Sure         float64    `json:"sure"` // of the candidates, the sure ones (gen.Config.SureSet)
	ValidPred    float64    `json:"valid_pred"`
	Paths        [4]int     `json:"paths"` // rows by path: copy, gvr, exact, held
	// StepUS is the mean time of each of topk.Steps inside Phases 1-4
	// over the rows that passed through it (0: none did).
	StepUS [len(topk.Steps)]float64 `json:"step_us"`
}

// summarize turns samples into a Timing.
func summarize(samples []time.Duration) (median, p10, p90, lo float64) {
	if len(samples) == 0 {
		return 0, 0, 0, 0
	}
	us := make([]float64, len(samples))
	for i, d := range samples {
		us[i] = float64(d) / float64(time.Microsecond)
	}
	slices.Sort(us)
	q := func(p float64) float64 {
		// Linear interpolation between closest ranks.
		x := p * float64(len(us)-1)
		i := int(x)
		if i+1 >= len(us) {
			return us[len(us)-1]
		}
		return us[i] + (x-float64(i))*(us[i+1]-us[i])
	}
	return q(0.5), q(0.1), q(0.9), us[0]
}

// parseInts parses a comma-separated list of positive integers.
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q: want comma-separated positive integers", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// median of the timing for (batch, n, mode, kernel), or 0.
func (r *Report) median(batch, n int, mode, kernel string) float64 {
	for _, t := range r.Timings {
		if t.Batch == batch && t.N == n && t.Mode == mode && t.Kernel == kernel {
			return t.MedianUS
		}
	}
	return 0
}

// WriteTable prints the report as tables: medians per batch and N, cold
// and warm side by side, with the fallback/GVR speedup; then the phases.
func (r *Report) WriteTable(w io.Writer) {
	d := r.Device
	fmt.Fprintf(w, "gvrbench: %s (compute capability %s, PTX %s, %d SMs, %d MB L2, %d MHz), driver %s\n",
		d.Name, d.CC, d.Target, d.SMs, d.L2MB, d.ClockMHz, d.Driver)
	flushBy := "writing"
	if r.FlushRead {
		flushBy = "reading"
	}
	fmt.Fprintf(w, "%s; K = %d; median of %d launches after %d warm-up, CUDA events; cold: L2 flushed by %s %d MB before each launch",
		r.Workload, r.K, r.Iters, r.Warmup, flushBy, r.FlushMB)
	if r.HoldUS > 0 {
		fmt.Fprintf(w, "; each launch queued behind a %.0f us hold of the GPU", r.HoldUS)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "command: %s\n", r.Command)
	for _, l := range r.Loaded {
		fmt.Fprintf(w, "kernel %s\n", l)
	}
	if r.FirstUse != "" {
		fmt.Fprintf(w, "first use: %s\n", r.FirstUse)
	}
	fmt.Fprintln(w)

	if len(r.Timings) == 0 {
		WriteReplays(w, r.Replays)
		WriteAblations(w, r.Ablations)
		r.writeMismatches(w)
		return
	}
	var modes []string
	for _, m := range []string{"cold", "warm", "graph"} {
		if slices.ContainsFunc(r.Timings, func(t Timing) bool { return t.Mode == m }) {
			modes = append(modes, m)
		}
	}
	speedup := slices.Contains(r.Kernels, "gvr") && slices.Contains(r.Kernels, "fallback")
	ratios := r.floorRatios()
	colW := 9
	for _, k := range r.Kernels {
		colW = max(colW, len(k)+1) // cgvr16.bf16, cgvr16+pages
	}
	// Header: mode group titles, then kernel names.
	var h1, h2 strings.Builder
	fmt.Fprintf(&h1, "%5s %7s", "", "")
	fmt.Fprintf(&h2, "%5s %7s", "batch", "N")
	for _, m := range modes {
		width := colW * len(r.Kernels)
		if speedup {
			width += colW
		}
		for _, q := range ratios {
			width += q.width(colW)
		}
		fmt.Fprintf(&h1, " | %-*s", width-1, m+": median us")
		h2.WriteString(" |")
		for _, k := range r.Kernels {
			fmt.Fprintf(&h2, "%*s", colW, k)
		}
		if speedup {
			fmt.Fprintf(&h2, "%*s", colW, "fb/gvr")
		}
		for _, q := range ratios {
			fmt.Fprintf(&h2, "%*s", q.width(colW), q.name())
		}
	}
	fmt.Fprintln(w, strings.TrimRight(h1.String(), " "))
	fmt.Fprintln(w, h2.String())
	for _, b := range r.batches() {
		for _, n := range r.ns() {
			if !slices.ContainsFunc(r.Timings, func(t Timing) bool { return t.Batch == b && t.N == n }) {
				continue
			}
			fmt.Fprintf(w, "%5d %7d", b, n)
			for _, m := range modes {
				w.Write([]byte(" |"))
				for _, k := range r.Kernels {
					if v := r.median(b, n, m, k); v > 0 {
						fmt.Fprintf(w, "%*.1f", colW, v)
					} else {
						fmt.Fprintf(w, "%*s", colW, "-") // not measured: a floor whose cluster cannot hold the row
					}
				}
				if speedup {
					g, f := r.median(b, n, m, "gvr"), r.median(b, n, m, "fallback")
					if g > 0 {
						fmt.Fprintf(w, "%*.2fx", colW-1, f/g)
					}
				}
				for _, q := range ratios {
					if k, f := r.median(b, n, m, q.kernel), r.median(b, n, m, q.floor); k > 0 && f > 0 {
						fmt.Fprintf(w, "%*.2fx", q.width(colW)-1, k/f)
					} else {
						fmt.Fprintf(w, "%*s", q.width(colW), "-")
					}
				}
			}
			fmt.Fprintln(w)
		}
	}

	if n, most := r.retaken(); n > 0 {
		fmt.Fprintf(w, "%d samples taken again: the host had not submitted the launch when the work queued ahead of it ended (most: %s)\n", n, most)
	}

	if len(r.Phases) > 0 {
		fmt.Fprintf(w, "\nphases (instrumented kernels, %s, mean per row; us from SM cycles at %d MHz):\n", r.phasesMode(), d.ClockMHz)
		fmt.Fprintf(w, "%5s %7s %-9s %8s %8s %8s %8s %7s %7s %7s %7s %7s  %s\n", "batch", "N", "kernel",
			"phase1", "phase2", "phase3", "phase4", "passes", "radix", "cands", "sure", "valid", "rows copy/gvr/exact/held")
		phases := slices.Clone(r.Phases)
		slices.SortStableFunc(phases, func(a, b Phases) int {
			if a.Batch != b.Batch {
				return a.Batch - b.Batch
			}
			return a.N - b.N
		})
		for _, p := range phases {
			fmt.Fprintf(w, "%5d %7d %-9s %8.1f %8.1f %8.1f %8.1f %7.2f %7.2f %7.0f %7.0f %7.0f  %d/%d/%d/%d\n",
				p.Batch, p.N, p.Kernel, p.PhaseUS[0], p.PhaseUS[1], p.PhaseUS[2], p.PhaseUS[3],
				p.Phase2Passes, p.RadixPasses, p.Candidates, p.Sure, p.ValidPred, p.Paths[0], p.Paths[1], p.Paths[2], p.Paths[3])
		}
		if slices.ContainsFunc(phases, func(p Phases) bool { return p.StepUS != [len(topk.Steps)]float64{} }) {
			fmt.Fprintf(w, "\ninside Phases 1-4 (the same runs; us, mean over the rows that pass each step):\n%5s %7s %-9s", "batch", "N", "kernel")
			for _, s := range topk.Steps {
				fmt.Fprintf(w, " %*s", max(7, len(s)), s)
			}
			fmt.Fprintln(w)
			for _, p := range phases {
				fmt.Fprintf(w, "%5d %7d %-9s", p.Batch, p.N, p.Kernel)
				for i, s := range topk.Steps {
					fmt.Fprintf(w, " %*.2f", max(7, len(s)), p.StepUS[i])
				}
				fmt.Fprintln(w)
			}
		}
	}
	WriteReplays(w, r.Replays)
	WriteAblations(w, r.Ablations)
	r.writeMismatches(w)
}

// floorRatio is a column of one kernel's medians over a floor's (the
// row read into a cluster's shared memory and nothing else): how far the
// kernel is from what its reads alone cost.
type floorRatio struct{ kernel, floor string }

func (q floorRatio) name() string { return q.kernel + "/" + q.floor }

// width is the column's width in a table whose columns are colW wide.
func (q floorRatio) width(colW int) int { return max(colW, len(q.name())+1) }

// floorRatios are the table's ratio columns, where it has a floor: each
// cluster kernel's column against the floor of its cluster size, and the
// selector's choice (auto) against the floor of the largest cluster size
// measured, the fastest read of a row.
func (r *Report) floorRatios() []floorRatio {
	floors, largest := map[int]string{}, 0
	for _, k := range r.Kernels {
		if p, c := clusterOf(k); p == "floor" {
			floors[c], largest = k, max(largest, c)
		}
	}
	var qs []floorRatio
	for _, k := range r.Kernels {
		col := parseColumn(k)
		switch p, c := clusterOf(col.kernel); {
		case p == "floor" || len(floors) == 0:
		case c > 0 && floors[c] != "":
			qs = append(qs, floorRatio{k, floors[c]})
		case col.kernel == "auto":
			qs = append(qs, floorRatio{k, floors[largest]})
		}
	}
	return qs
}

// retaken is the samples taken again over every timing, and the timing
// with the most.
func (r *Report) retaken() (n int, most string) {
	top := 0
	for _, t := range r.Timings {
		n += t.Retaken
		if t.Retaken > top {
			top, most = t.Retaken, fmt.Sprintf("%s, batch %d, N %d, %s: %d", t.Kernel, t.Batch, t.N, t.Mode, t.Retaken)
		}
	}
	return n, most
}

// writeMismatches says whether every output matched the reference.
func (r *Report) writeMismatches(w io.Writer) {
	fmt.Fprintln(w)
	if len(r.Mismatches) == 0 {
		fmt.Fprintln(w, "every output checked against the CPU reference: exact")
	} else {
		fmt.Fprintf(w, "%d outputs DIFFER from the CPU reference:\n", len(r.Mismatches))
		for _, m := range r.Mismatches {
			fmt.Fprintf(w, "  %s\n", m)
		}
	}
}

func (r *Report) batches() []int {
	var b []int
	for _, t := range r.Timings {
		b = append(b, t.Batch)
	}
	slices.Sort(b)
	return slices.Compact(b)
}

func (r *Report) ns() []int {
	var n []int
	for _, t := range r.Timings {
		n = append(n, t.N)
	}
	slices.Sort(n)
	return slices.Compact(n)
}

// Replay is a decode trajectory replayed step by step through a
// topk.Selector (its feedback: each step's output is the next one's
// prediction), with the instrumented kernels: what the paper's replay
// measures. The first step runs the fallback and is not counted in the
// GVR figures.
type Replay struct {
	Source string `json:"source"` // the profile or the trace file
	Steps  int    `json:"steps"`
	Rows   int    `json:"rows"`
	MinN   int    `json:"min_n"`
	MaxN   int    `json:"max_n"`
	// Alpha is the mean overlap of a step's Top-K with the previous
	// step's, measured on the GPU's outputs.
	Alpha float64 `json:"alpha"`
	// OneShot, Within2, Within3: the fraction of predicted rows whose
	// threshold search (Phase 2) took 1, at most 2, at most 3 counting
	// passes; candidates and paths are of the predicted rows too.
	OneShot  float64    `json:"one_shot"`
	Within2  float64    `json:"within_2"`
	Within3  float64    `json:"within_3"`
	CandMean float64    `json:"candidates_mean"` // candidates collected in Phase 3
	CandP99  float64    `json:"candidates_p99"`
	Paths    [4]int     `json:"paths"`    // predicted rows by path: copy, gvr, exact, held
	PhaseUS  [4]float64 `json:"phase_us"` // mean per predicted row, from SM cycles
	StepUS   float64    `json:"step_us"`  // median time of a step (CUDA events around Select, on an idle stream: unlike the table's timings, its host work is in it)
}

// WriteReplays prints the replay table.
func WriteReplays(w io.Writer, rs []Replay) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nreplay (topk.Selector with feedback, instrumented kernels; the first step, the fallback's, not counted):\n")
	fmt.Fprintf(w, "%-28s %5s %4s %15s %6s %6s %6s %6s %8s %8s %8s  %-23s %s\n", "source", "steps", "rows", "N", "alpha",
		"1-shot", "<=2", "<=3", "cands", "p99", "step us", "phase us 1/2/3/4", "copy/gvr/exact/held")
	for _, r := range rs {
		fmt.Fprintf(w, "%-28s %5d %4d %7d-%-7d %5.1f%% %5.1f%% %5.1f%% %5.1f%% %8.0f %8.0f %8.1f  %5.1f %5.1f %5.1f %5.1f  %d/%d/%d/%d\n",
			r.Source, r.Steps, r.Rows, r.MinN, r.MaxN, 100*r.Alpha, 100*r.OneShot, 100*r.Within2, 100*r.Within3,
			r.CandMean, r.CandP99, r.StepUS, r.PhaseUS[0], r.PhaseUS[1], r.PhaseUS[2], r.PhaseUS[3], r.Paths[0], r.Paths[1], r.Paths[2], r.Paths[3])
	}
}

// tuneMargin is how close a -tune choice must be: per batch and N, each
// option's worse mode is the larger of its cold and graph-replayed
// medians' ratios to the fastest in that mode, and the choice is the
// fewest SMs whose worse mode is within this fraction of the smallest (one
// CTA before any cluster, a smaller cluster before a larger): where one
// option is the fastest in both modes, the fewest SMs within 2% of it in
// both. A cluster takes part only where it is no slower than one CTA a row
// in either mode (tuning). Cold medians 1-2% apart ranked the other way
// graph-replayed (C16 over C8 at 32K-64K, batches 1-4: 1-1.8% faster cold,
// 3% slower graph-replayed: perf notes 68; C16 over C8 at batch 8, 512K:
// 5% faster cold, 15% slower graph-replayed: 70), and a smaller choice
// leaves SMs to the rest of the step.
const tuneMargin = 0.02

// tuning is the kernel choice rep measured (a -tune run): per batch and N,
// the cluster size of a gvr_topk_cluster column (cgvrC), or 0 for
// gvr_topk, whether it keeps a long row's excess's high vectors (a +keep
// column), and whether a predicted step runs the fallback of that shape
// instead (fallback, cfallbackC: the prediction unused), and how many
// clusters share each row (gfallbackCxG: the fallback, G clusters of C a
// row), by cold and graph-replayed medians under tuneMargin: the fewest
// SMs, among the same SMs no keep before the keep and the prediction
// before the fallback. The keep counts only where it beats its kernel and
// cluster size without it, and the fallback only where it is faster than
// the GVR kernels of its cluster size (with the keep and without; a row
// shared by clusters, than every GVR kernel) in both modes, by more than
// the margin in one, and a cluster only where it is no slower than one CTA
// a row (gvr_topk or the fallback) in either mode. Each option is timed as
// the selector runs it: with the sure set where topk.SureSet's rule takes
// it (its +sure column, where the run has one). The table keeps the
// choice's cold median, and a keep, fallback or groups grid only where
// some cell takes it.
func tuning(rep *Report) (*topk.Tuning, error) {
	t := &topk.Tuning{Device: rep.Device.Name, Command: rep.Command, Date: rep.Start.Format("2006-01-02"),
		Batches: rep.batches(), Ns: rep.ns()}
	type option struct {
		cluster        int // 0: one CTA per row
		keep, fallback bool
		groups         int // clusters a row (0: one)
		cold, graph    float64
	}
	// sms is how many SMs an option takes a row.
	sms := func(o option) int { return max(o.cluster, 1) * max(o.groups, 1) }
	anyKeep, anyFallback, anyGroups := false, false, false
	for _, b := range t.Batches {
		var cs, gs []int
		var ks, fs []bool
		var us []float64
		for _, n := range t.Ns {
			// timed sets o's medians from column k's, or from its +sure
			// column's where the selector would run o with the sure set.
			timed := func(o option, k string) option {
				if topk.SureSet(n, o.cluster) && slices.Contains(rep.Kernels, k+"+sure") {
					k += "+sure"
				}
				o.cold, o.graph = rep.median(b, n, "cold", k), rep.median(b, n, "graph", k)
				return o
			}
			opts := []option{timed(option{}, "gvr")}
			if opts[0].cold <= 0 || opts[0].graph <= 0 {
				return nil, fmt.Errorf("tuning: no cold and graph timings of gvr at batch %d, N %d", b, n)
			}
			for _, k := range rep.Kernels {
				// The selector's kernels on float32 rows writing indices
				// only, with or without mbarrier rounds (-tune measures
				// one), with or without the keep (the sure set: timed).
				col := parseColumn(k)
				if col.scores != topk.Float32 || col.pages || col.sure {
					continue
				}
				prefix, size := clusterOf(col.kernel)
				var o option
				switch {
				case col.kernel == "fallback":
					o = option{fallback: true}
				case prefix == "cgvr" || prefix == "cfallback":
					o = option{cluster: size, keep: col.keep, fallback: prefix == "cfallback"}
				case prefix == "gfallback":
					o = option{cluster: size, fallback: true, groups: groupsOf(col.kernel)}
				default:
					continue
				}
				if o = timed(o, k); o.cold > 0 && o.graph > 0 {
					opts = append(opts, o)
				}
			}
			// beats: o is faster than p by more than the margin in both
			// modes.
			beats := func(o, p option) bool {
				return o.cold*(1+tuneMargin) < p.cold && o.graph*(1+tuneMargin) < p.graph
			}
			// The keep only where it beats its cluster size without it:
			// in rows that fit the cluster it keeps nothing, and a
			// difference there is noise. (The filters compare against
			// all, not opts, which DeleteFunc compacts as it goes.)
			all := slices.Clone(opts)
			opts = slices.DeleteFunc(opts, func(o option) bool {
				if !o.keep {
					return false
				}
				i := slices.IndexFunc(all, func(p option) bool {
					return p.cluster == o.cluster && !p.keep && p.fallback == o.fallback && p.groups == o.groups
				})
				return i >= 0 && !beats(o, all[i])
			})
			// The fallback only where it is faster than every GVR kernel
			// of its cluster size (and one was measured) in both modes,
			// by more than the margin in one: the prediction is what the
			// selector runs unless it measurably costs.
			costs := func(o, p option) bool {
				return o.cold <= p.cold && o.graph <= p.graph &&
					(o.cold*(1+tuneMargin) < p.cold || o.graph*(1+tuneMargin) < p.graph)
			}
			all = slices.Clone(opts)
			opts = slices.DeleteFunc(opts, func(o option) bool {
				if !o.fallback {
					return false
				}
				gvr := 0
				for _, p := range all {
					// A row shared by clusters has no GVR twin: it must
					// beat every GVR kernel.
					if !p.fallback && (p.cluster == o.cluster || o.groups > 1) {
						if !costs(o, p) {
							return true
						}
						gvr++
					}
				}
				return gvr == 0
			})
			// A cluster only where it is no slower than one CTA a row in
			// either mode (issue 15: the choice is never slower than the
			// single-CTA kernel). Where a cluster trades one mode for the
			// other against it, one CTA stays: the worse-mode rule below
			// would take a cluster faster cold and up to the margin slower
			// graph-replayed (b1 8K, perf notes 209 and 210, refused by
			// hand in their A/Bs).
			oneCold, oneGraph := math.Inf(1), math.Inf(1)
			for _, o := range opts {
				if o.cluster == 0 {
					oneCold, oneGraph = min(oneCold, o.cold), min(oneGraph, o.graph)
				}
			}
			opts = slices.DeleteFunc(opts, func(o option) bool {
				return o.cluster > 0 && (o.cold > oneCold || o.graph > oneGraph)
			})
			slices.SortStableFunc(opts, func(a, b option) int {
				if sms(a) != sms(b) {
					return sms(a) - sms(b)
				}
				if a.cluster != b.cluster {
					return a.cluster - b.cluster
				}
				if a.keep != b.keep {
					return cmpBool(a.keep, b.keep)
				}
				return cmpBool(a.fallback, b.fallback)
			})
			fastCold, fastGraph := math.Inf(1), math.Inf(1)
			for _, o := range opts {
				fastCold, fastGraph = min(fastCold, o.cold), min(fastGraph, o.graph)
			}
			worse := func(o option) float64 { return max(o.cold/fastCold, o.graph/fastGraph) }
			least := math.Inf(1)
			for _, o := range opts {
				least = min(least, worse(o))
			}
			best := opts[slices.IndexFunc(opts, func(o option) bool { return worse(o) <= least*(1+tuneMargin) })]
			cs, ks, fs, gs = append(cs, best.cluster), append(ks, best.keep), append(fs, best.fallback), append(gs, best.groups)
			us = append(us, math.Round(best.cold*10)/10)
			anyKeep, anyFallback, anyGroups = anyKeep || best.keep, anyFallback || best.fallback, anyGroups || best.groups > 1
		}
		t.Cluster, t.Keep, t.Fallback, t.Groups = append(t.Cluster, cs), append(t.Keep, ks), append(t.Fallback, fs), append(t.Groups, gs)
		t.MedianUS = append(t.MedianUS, us)
	}
	if !anyKeep {
		t.Keep = nil
	}
	if !anyFallback {
		t.Fallback = nil
	}
	if !anyGroups {
		t.Groups = nil
	}
	return t, t.Check()
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// writeTuning writes rep's kernel choice to path as JSON; with into set,
// spliced into the table saved there (spliceTuning).
func writeTuning(path, into string, rep *Report) error {
	t, err := tuning(rep)
	if err != nil {
		return err
	}
	if into != "" {
		base, err := readTuningFile(into)
		if err != nil {
			return fmt.Errorf("-into: %w", err)
		}
		if t, err = spliceTuning(base, t); err != nil {
			return fmt.Errorf("-into %s: %w", into, err)
		}
	}
	return writeTuningFile(path, t)
}

// readTuningFile reads a table as writeTuningFile writes it
// (topk/tuning/*.json).
func readTuningFile(path string) (*topk.Tuning, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := topk.ParseTuning(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// intoUsage is -into's help, the same in both builds.
const intoUsage = "with -tune, splice the measured rows into the table saved in `file` (topk/tuning/*.json: the rows of the measured batches replaced, the others kept) and write that: a table tuned a few batches at a time"

// spliceTuning is base with t's batches' rows in place of its own, and
// those it has no row for added in order: a table tuned a few batches at
// a time (each with the cluster sizes that fit it, perf notes 208) is
// built up by one -into after another. Both must be of one device and
// one set of row lengths. A grid that one of them lacks (no keep
// anywhere, say) reads as all false or 0 there. The command says which
// rows which command measured; the date is t's.
func spliceTuning(base, t *topk.Tuning) (*topk.Tuning, error) {
	if base.Device != t.Device || !slices.Equal(base.Ns, t.Ns) {
		return nil, fmt.Errorf("a table for %s at N %v does not splice into one for %s at N %v", t.Device, t.Ns, base.Device, base.Ns)
	}
	batches := make([]string, len(t.Batches))
	for i, b := range t.Batches {
		batches[i] = strconv.Itoa(b)
	}
	out := &topk.Tuning{Device: base.Device, Date: t.Date, Ns: base.Ns,
		Command: fmt.Sprintf("%s; batches %s: %s", base.Command, strings.Join(batches, ", "), t.Command)}
	for _, b := range slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(base.Batches), t.Batches...)))) {
		src := t
		i := slices.Index(t.Batches, b)
		if i < 0 {
			src, i = base, slices.Index(base.Batches, b)
		}
		out.Batches = append(out.Batches, b)
		out.Cluster = append(out.Cluster, spliceRow(src.Cluster, i, len(out.Ns)))
		out.MedianUS = append(out.MedianUS, spliceRow(src.MedianUS, i, len(out.Ns)))
		if base.Keep != nil || t.Keep != nil {
			out.Keep = append(out.Keep, spliceRow(src.Keep, i, len(out.Ns)))
		}
		if base.Fallback != nil || t.Fallback != nil {
			out.Fallback = append(out.Fallback, spliceRow(src.Fallback, i, len(out.Ns)))
		}
		if base.Groups != nil || t.Groups != nil {
			out.Groups = append(out.Groups, spliceRow(src.Groups, i, len(out.Ns)))
		}
	}
	return out, out.Check()
}

// spliceRow is a copy of grid g's row i, or n zero values where the table
// has no such grid.
func spliceRow[T any](g [][]T, i, n int) []T {
	if g == nil {
		return make([]T, n)
	}
	return slices.Clone(g[i])
}

// writeTuningFile writes t to path as JSON.
func writeTuningFile(path string, t *topk.Tuning) error {
	var err error
	// One line per field, and per batch in the tables: a reviewer reads
	// the choice as a grid, and a new measurement diffs line by line.
	var w strings.Builder
	field := func(name string, v any, last bool) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		fmt.Fprintf(&w, "  %q: %s", name, b)
		if !last {
			w.WriteString(",")
		}
		w.WriteString("\n")
		return nil
	}
	grid := func(name string, rows int, row func(i int) any, last bool) error {
		fmt.Fprintf(&w, "  %q: [\n", name)
		for i := range rows {
			b, err := json.Marshal(row(i))
			if err != nil {
				return err
			}
			sep := ","
			if i == rows-1 {
				sep = ""
			}
			fmt.Fprintf(&w, "    %s%s\n", b, sep)
		}
		w.WriteString("  ]")
		if !last {
			w.WriteString(",")
		}
		w.WriteString("\n")
		return nil
	}
	w.WriteString("{\n")
	err = errors.Join(field("device", t.Device, false), field("command", t.Command, false), field("date", t.Date, false),
		field("batches", t.Batches, false), field("ns", t.Ns, false),
		grid("cluster", len(t.Cluster), func(i int) any { return t.Cluster[i] }, false))
	if t.Keep != nil {
		err = errors.Join(err, grid("keep", len(t.Keep), func(i int) any { return t.Keep[i] }, false))
	}
	if t.Fallback != nil {
		err = errors.Join(err, grid("fallback", len(t.Fallback), func(i int) any { return t.Fallback[i] }, false))
	}
	if t.Groups != nil {
		err = errors.Join(err, grid("groups", len(t.Groups), func(i int) any { return t.Groups[i] }, false))
	}
	err = errors.Join(err, grid("median_us", len(t.MedianUS), func(i int) any { return t.MedianUS[i] }, true))
	if err != nil {
		return err
	}
	w.WriteString("}\n")
	return os.WriteFile(path, []byte(w.String()), 0o644)
}

// Ablation is one prediction mode of -ablation on one kernel: the median
// cold time over the trajectory's steps, the measured overlap of the
// prediction with the step's Top-K, and the instrumented means.
type Ablation struct {
	Prediction string     `json:"prediction"`
	Profile    string     `json:"profile"`  // the calibrated trajectory (topk.Profiles)
	PaperUS    float64    `json:"paper_us"` // the paper's figure (B200, real decoding), 0 if none
	Kernel     string     `json:"kernel"`
	Cluster    int        `json:"cluster,omitempty"`
	Alpha      float64    `json:"alpha"` // overlap of the prediction with the step's Top-K
	MedianUS   float64    `json:"median_us"`
	Passes     float64    `json:"phase2_passes"`
	Candidates float64    `json:"candidates"`
	PhaseUS    [4]float64 `json:"phase_us"`
}

// The paper's phase breakdown of its kernel on layer 0 (real decoding,
// B200, us): 34.3 in all.
var paperLayer0Phases = [4]float64{3.9, 15.7, 5.9, 8.8}

// WriteAblations prints the ablation table, the paper's figures beside
// ours, and the layer 0 phase table beside the paper's.
func WriteAblations(w io.Writer, as []Ablation) {
	if len(as) == 0 {
		return
	}
	fmt.Fprintf(w, "\nablation (one row growing from N by one a step, each step cold; paper: real DeepSeek-V3.2 decoding, N ~ 70690, B200):\n")
	fmt.Fprintf(w, "%-24s %-24s %-8s %7s %9s %8s %7s %7s  %s\n", "kernel", "prediction", "profile", "alpha", "paper us", "ours us", "passes", "cands", "phase us 1/2/3/4")
	for _, a := range as {
		kern := a.Kernel
		if a.Cluster > 0 {
			kern = fmt.Sprintf("%s C=%d", a.Kernel, a.Cluster)
		}
		alpha, paper := "-", "-"
		if a.Prediction != "none (fallback)" {
			alpha = fmt.Sprintf("%.1f%%", 100*a.Alpha)
		}
		if a.PaperUS > 0 {
			paper = fmt.Sprintf("%.1f", a.PaperUS)
		}
		fmt.Fprintf(w, "%-24s %-24s %-8s %7s %9s %8.1f %7.2f %7.0f  %.1f / %.1f / %.1f / %.1f\n", kern, a.Prediction, a.Profile, alpha, paper,
			a.MedianUS, a.Passes, a.Candidates, a.PhaseUS[0], a.PhaseUS[1], a.PhaseUS[2], a.PhaseUS[3])
	}
	fmt.Fprintf(w, "\nphases on layer 0, previous-step prediction (us): %-28s %6s %6s %6s %6s %6s\n", "", "1", "2", "3", "4", "sum")
	fmt.Fprintf(w, "%-77s %6.1f %6.1f %6.1f %6.1f %6.1f\n", "  the paper's kernel (B200, real decoding)", paperLayer0Phases[0], paperLayer0Phases[1],
		paperLayer0Phases[2], paperLayer0Phases[3], paperLayer0Phases[0]+paperLayer0Phases[1]+paperLayer0Phases[2]+paperLayer0Phases[3])
	for _, a := range as {
		if a.Prediction != "previous, low alpha" {
			continue
		}
		kern := a.Kernel
		if a.Cluster > 0 {
			kern = fmt.Sprintf("%s C=%d", a.Kernel, a.Cluster)
		}
		p := a.PhaseUS
		fmt.Fprintf(w, "%-77s %6.1f %6.1f %6.1f %6.1f %6.1f\n", "  "+kern+" (calibrated layer 0)", p[0], p[1], p[2], p[3], p[0]+p[1]+p[2]+p[3])
	}
}

// phasesMode is how the phases were taken: cold, or warm (-phases-warm).
func (r *Report) phasesMode() string {
	if r.PhasesWarm {
		return "warm"
	}
	return "cold"
}
