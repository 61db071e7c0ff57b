package main

// Charts of a report (gonum.org/v1/plot), SVG and PNG: latency against N
// per kernel and timing mode, the phase breakdown as stacked bars, and
// the replays' Phase 2 passes. Untagged: a saved report renders without a
// GPU (gvrbench -from report.json -charts DIR).

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// writeCharts writes r's charts into dir, each as .svg and .png, and
// returns the files' base names.
func writeCharts(dir string, r *Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var names []string
	save := func(p *plot.Plot, name string, w, h vg.Length) error {
		for _, ext := range []string{".svg", ".png"} {
			if err := p.Save(w, h, filepath.Join(dir, name+ext)); err != nil {
				return fmt.Errorf("chart %s: %w", name, err)
			}
		}
		names = append(names, name)
		return nil
	}
	for _, b := range r.batches() {
		if p := latencyChart(r, b); p != nil {
			if err := save(p, fmt.Sprintf("latency_batch%d", b), 18*vg.Centimeter, 12*vg.Centimeter); err != nil {
				return names, err
			}
		}
		for _, k := range r.Kernels {
			if p := phaseChart(r, b, k); p != nil {
				if err := save(p, fmt.Sprintf("phases_%s_batch%d", k, b), 16*vg.Centimeter, 10*vg.Centimeter); err != nil {
					return names, err
				}
			}
		}
	}
	if p := passesChart(r.Replays); p != nil {
		if err := save(p, "replay_phase2_passes", 16*vg.Centimeter, 10*vg.Centimeter); err != nil {
			return names, err
		}
	}
	return names, nil
}

// latencyChart: median us against N for batch b, both axes log-scaled
// (the kernels span two orders of magnitude), a line per kernel and
// timing mode (cold solid, warm dashed, graph dotted: the title says so)
// and a legend entry per kernel; nil without timings.
func latencyChart(r *Report, b int) *plot.Plot {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s, K = %d, batch %d: median latency (cold solid, warm dashed, graph dotted)", r.Device.Name, r.K, b)
	p.X.Label.Text = "row length N"
	p.Y.Label.Text = "us"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = nTicks{r.ns()}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = usTicks{}
	p.Legend.Top = true
	p.Legend.Left = true
	dashes := map[string][]vg.Length{"cold": nil, "warm": {vg.Points(6), vg.Points(3)}, "graph": {vg.Points(1.5), vg.Points(2)}}
	lo, hi := math.Inf(1), 0.0
	for ki, k := range r.Kernels {
		legend := false
		for _, mode := range []string{"cold", "warm", "graph"} {
			var pts plotter.XYs
			for _, n := range r.ns() {
				if v := r.median(b, n, mode, k); v > 0 {
					pts = append(pts, plotter.XY{X: float64(n), Y: v})
					lo, hi = min(lo, v), max(hi, v)
				}
			}
			if len(pts) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				continue
			}
			c := plotutil.Color(ki)
			l.Color, s.Color = c, c
			l.Dashes = dashes[mode]
			s.Shape = plotutil.Shape(ki)
			p.Add(l, s)
			if !legend {
				p.Legend.Add(k, l, s)
				legend = true
			}
		}
	}
	if hi == 0 {
		return nil
	}
	// Room above the slowest line keeps the legend, top left, clear of
	// the lines.
	p.Y.Min, p.Y.Max = lo/1.25, hi*4
	return p
}

// usTicks labels the log-scaled latency axis at 1, 2 and 5 times the
// powers of ten between lo and hi.
type usTicks struct{}

func (usTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for d := math.Pow(10, math.Floor(math.Log10(lo))); d <= hi; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := m * d; v >= lo && v <= hi {
				ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return ts
}

// nTicks labels the log-scaled N axis at the measured lengths.
type nTicks struct{ ns []int }

func (t nTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for _, n := range t.ns {
		label := strconv.Itoa(n)
		if n%1024 == 0 {
			label = fmt.Sprintf("%dK", n/1024)
		}
		ts = append(ts, plot.Tick{Value: float64(n), Label: label})
	}
	return ts
}

// phaseChart: kernel k's mean phase times at batch b as stacked bars per
// N; nil without phases.
func phaseChart(r *Report, b int, k string) *plot.Plot {
	var ph []Phases
	for _, p := range r.Phases {
		if p.Batch == b && p.Kernel == k {
			ph = append(ph, p)
		}
	}
	if len(ph) == 0 {
		return nil
	}
	slices.SortFunc(ph, func(x, y Phases) int { return x.N - y.N })
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s, batch %d: phases (instrumented, cold, mean per row)", k, b)
	p.Y.Label.Text = "us"
	p.Legend.Top = true
	p.Legend.Left = true
	var below *plotter.BarChart
	names := make([]string, len(ph))
	for i, x := range ph {
		names[i] = strconv.Itoa(x.N)
	}
	for j, label := range []string{"Phase 1", "Phase 2", "Phase 3", "Phase 4"} {
		vals := make(plotter.Values, len(ph))
		for i, x := range ph {
			vals[i] = x.PhaseUS[j]
		}
		bars, err := plotter.NewBarChart(vals, vg.Points(22))
		if err != nil {
			return nil
		}
		bars.Color = plotutil.Color(j)
		bars.LineStyle.Width = 0
		if below != nil {
			bars.StackOn(below)
		}
		below = bars
		p.Add(bars)
		p.Legend.Add(label, bars)
	}
	p.NominalX(names...)
	p.X.Label.Text = "row length N"
	return p
}

// passesChart: per replay source, the share of predicted steps whose
// Phase 2 took 1, 2, 3 and more counting passes; nil without replays.
func passesChart(rs []Replay) *plot.Plot {
	if len(rs) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = "replays: Phase 2 counting passes per predicted step"
	p.Y.Label.Text = "share of steps"
	p.Y.Max = 1
	p.Legend.Top = true
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Source
	}
	shares := func(r Replay) [4]float64 {
		return [4]float64{r.OneShot, r.Within2 - r.OneShot, r.Within3 - r.Within2, 1 - r.Within3}
	}
	w := vg.Points(12)
	for j, label := range []string{"1 pass", "2", "3", "more"} {
		vals := make(plotter.Values, len(rs))
		for i, r := range rs {
			vals[i] = shares(r)[j]
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil
		}
		bars.Color = plotutil.Color(j)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(j-2)*w + w/2
		p.Add(bars)
		p.Legend.Add(label, bars)
	}
	p.NominalX(names...)
	return p
}

// fromReport prints the report saved in path (with compare set, against
// the report saved there: WriteComparison) and, with charts set, writes
// its charts there.
func fromReport(path, charts, compare, tune, into string, stdout io.Writer) error {
	if into != "" && tune == "" {
		return fmt.Errorf("-into %s: splices a -tune table; give -tune too", into)
	}
	if paths := strings.Split(path, ","); len(paths) > 1 {
		if tune == "" {
			return fmt.Errorf("-from %s: several reports are read only with -tune", path)
		}
		// The kernel choice of several saved -tune runs: each cell's
		// median over the runs' medians.
		var runs []*Report
		for _, p := range paths {
			r, err := readReport(p)
			if err != nil {
				return err
			}
			runs = append(runs, r)
		}
		r, err := mergeRuns(runs)
		if err != nil {
			return fmt.Errorf("-from %s: %w", path, err)
		}
		return writeTuning(tune, into, r)
	}
	r, err := readReport(path)
	if err != nil {
		return err
	}
	if tune != "" {
		// The kernel choice of a saved -tune run, under today's rule.
		return writeTuning(tune, into, r)
	}
	if compare != "" {
		base, err := readReport(compare)
		if err != nil {
			return err
		}
		r.WriteComparison(stdout, base)
		return nil
	}
	r.WriteTable(stdout)
	if charts == "" {
		return nil
	}
	names, err := writeCharts(charts, r)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "charts in %s: %v (.svg, .png)\n", charts, names)
	return nil
}
