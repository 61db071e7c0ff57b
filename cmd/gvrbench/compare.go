package main

// The A/B view: two saved reports (-o) side by side, a kernel's median
// against the same kernel's in the other report, per batch, N and mode,
// and the instrumented kernels' phases.
// Untagged, so that it runs (and is tested) without a GPU.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/gvr-go/gvr/topk"
)

// readReport reads a report saved with -o.
func readReport(path string) (*Report, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := new(Report)
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// WriteComparison prints, for every kernel, batch, N and mode that both
// reports timed, base's median, r's, and the change in percent (negative:
// r is faster), and per mode each kernel's geometric mean of the changes
// over those cells. The runs must have been taken on the same device model
// to mean anything; a different one is named in the header.
func (r *Report) WriteComparison(w io.Writer, base *Report) {
	fmt.Fprintf(w, "compare: %q\n against: %q\n", r.Command, base.Command)
	if r.Device.Name != base.Device.Name {
		fmt.Fprintf(w, "warning: different devices: %s against %s\n", r.Device.Name, base.Device.Name)
	}
	var kernels []string
	for _, k := range r.Kernels {
		if slices.Contains(base.Kernels, k) {
			kernels = append(kernels, k)
		}
	}
	if len(kernels) == 0 {
		fmt.Fprintln(w, "no kernel in common")
		return
	}
	for _, mode := range []string{"cold", "warm", "graph"} {
		var lines []string
		// Per kernel, the sum of log(new/base) and the cells in it: the
		// geometric mean of the changes, one figure for the whole A/B.
		logs, cells := make([]float64, len(kernels)), make([]int, len(kernels))
		for _, b := range r.batches() {
			for _, n := range r.ns() {
				line := fmt.Sprintf("%5d %7d", b, n)
				any := false
				for i, k := range kernels {
					nu, ba := r.median(b, n, mode, k), base.median(b, n, mode, k)
					if nu > 0 && ba > 0 {
						line += fmt.Sprintf(" | %7.1f %7.1f %+6.1f%%", ba, nu, 100*(nu-ba)/ba)
						logs[i] += math.Log(nu / ba)
						cells[i]++
						any = true
					} else {
						line += fmt.Sprintf(" | %24s", "-")
					}
				}
				if any {
					lines = append(lines, line)
				}
			}
		}
		if len(lines) == 0 {
			continue
		}
		line := fmt.Sprintf("%13s", "geomean")
		for i := range kernels {
			if cells[i] == 0 {
				line += fmt.Sprintf(" | %24s", "-")
				continue
			}
			line += fmt.Sprintf(" | %15s %+6.1f%%", fmt.Sprintf("%d cells", cells[i]), 100*(math.Exp(logs[i]/float64(cells[i]))-1))
		}
		lines = append(lines, line)
		fmt.Fprintf(w, "\n%s: median us, against -> this, change\n%5s %7s", mode, "batch", "N")
		for _, k := range kernels {
			fmt.Fprintf(w, " | %24s", k)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, strings.Join(lines, "\n"))
	}
	r.writePhaseComparison(w, base)
}

// stepMoved is the least change of a step inside Phases 1-4, in us,
// that writePhaseComparison names.
const stepMoved = 0.1

// writePhaseComparison prints, for every kernel, batch and N that both
// reports broke down (the instrumented kernels), the four phases' means
// against base's, and the steps inside Phases 1-4 that moved by
// stepMoved or more: where an A/B's time went.
func (r *Report) writePhaseComparison(w io.Writer, base *Report) {
	type key struct {
		batch, n int
		kernel   string
	}
	was := map[key]Phases{}
	for _, p := range base.Phases {
		was[key{p.Batch, p.N, p.Kernel}] = p
	}
	var lines []string
	for _, p := range r.Phases {
		b, ok := was[key{p.Batch, p.N, p.Kernel}]
		if !ok {
			continue
		}
		line := fmt.Sprintf("%5d %7d %-18s", p.Batch, p.N, p.Kernel)
		for i := range p.PhaseUS {
			line += fmt.Sprintf(" | %5.2f %5.2f %+5.2f", b.PhaseUS[i], p.PhaseUS[i], p.PhaseUS[i]-b.PhaseUS[i])
		}
		var moved []string
		for i, name := range topk.Steps {
			if d := p.StepUS[i] - b.StepUS[i]; math.Abs(d) >= stepMoved {
				moved = append(moved, fmt.Sprintf("%s %+.2f", name, d))
			}
		}
		lines = append(lines, line+" | "+strings.Join(moved, ", "))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\nphases (instrumented kernels, %s, mean per row): us against -> this, change; the steps inside Phases 1-4 that moved %.1f us or more\n", r.phasesMode(), stepMoved)
	fmt.Fprintf(w, "%5s %7s %-18s", "batch", "N", "kernel")
	for i := range 4 {
		fmt.Fprintf(w, " | %17s", fmt.Sprintf("phase%d", i+1))
	}
	fmt.Fprintln(w, " | steps")
	fmt.Fprintln(w, strings.Join(lines, "\n"))
}

// mergeRuns is several runs of one measurement (the same device model,
// K, kernels and cells) as one report: each cell's median is the median
// of the runs' (for an even number of runs, the mean of the middle two),
// its p10 and minimum the lowest and its p90 the highest of the runs',
// its samples their sum; the mismatches are every run's. A table tuned on
// it (-tune) chooses by cells that one run's noise does not flip: one
// -tune run flips near-ties (perf notes 130, 165).
func mergeRuns(runs []*Report) (*Report, error) {
	first := runs[0]
	type cell struct {
		batch, n     int
		mode, kernel string
	}
	byCell := map[cell][]Timing{}
	for i, r := range runs {
		if r.Device.Name != first.Device.Name || r.K != first.K || !slices.Equal(r.Kernels, first.Kernels) {
			return nil, fmt.Errorf("run %d (%s, K = %d, %d kernels) is not a run of run 1's measurement (%s, K = %d, %d kernels)",
				i+1, r.Device.Name, r.K, len(r.Kernels), first.Device.Name, first.K, len(first.Kernels))
		}
		if len(r.Timings) != len(first.Timings) {
			return nil, fmt.Errorf("run %d has %d timings, run 1 %d", i+1, len(r.Timings), len(first.Timings))
		}
		for _, t := range r.Timings {
			c := cell{t.Batch, t.N, t.Mode, t.Kernel}
			if len(byCell[c]) != i {
				return nil, fmt.Errorf("run %d times batch %d, N %d, %s, %s twice or not in run 1", i+1, t.Batch, t.N, t.Mode, t.Kernel)
			}
			byCell[c] = append(byCell[c], t)
		}
	}
	m := *first
	m.Command = fmt.Sprintf("%s (each cell the median over %d runs)", first.Command, len(runs))
	m.Timings, m.Phases, m.Mismatches = nil, nil, nil
	for _, t := range first.Timings {
		ts := byCell[cell{t.Batch, t.N, t.Mode, t.Kernel}]
		if len(ts) != len(runs) {
			return nil, fmt.Errorf("batch %d, N %d, %s, %s: timed in %d of %d runs", t.Batch, t.N, t.Mode, t.Kernel, len(ts), len(runs))
		}
		meds := make([]float64, len(ts))
		t.Samples = 0
		for i, x := range ts {
			meds[i] = x.MedianUS
			t.P10US, t.P90US, t.MinUS = min(t.P10US, x.P10US), max(t.P90US, x.P90US), min(t.MinUS, x.MinUS)
			t.Samples += x.Samples
		}
		slices.Sort(meds)
		h := len(meds) / 2
		t.MedianUS = meds[h]
		if len(meds)%2 == 0 {
			t.MedianUS = (meds[h-1] + meds[h]) / 2
		}
		m.Timings = append(m.Timings, t)
	}
	for _, r := range runs {
		m.Mismatches = append(m.Mismatches, r.Mismatches...)
	}
	return &m, nil
}
