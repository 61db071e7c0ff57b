//go:build cuda

package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gvr-go/gvr/runtime"
	"github.com/gvr-go/gvr/topk"
)

// A replay source is a decode trajectory: steps of rows of scores, each
// row growing step after step.
type replaySource struct {
	name        string
	rows, steps int
	maxN        int                     // the longest row of any step
	step        func(s int) [][]float32 // step s's rows, called once per step in order
}

// profileSource is a calibrated trajectory of profile p (topk.NewTrajectory):
// one row that starts with start scores and grows by one a step.
func profileSource(p topk.Profile, k, start, steps int, seed uint64) replaySource {
	tr := topk.NewTrajectory(p, k, start, 1, seed)
	return replaySource{name: "profile " + p.Name, rows: 1, steps: steps, maxN: start + steps - 1,
		step: func(int) [][]float32 {
			x, _ := tr.Next()
			return [][]float32{x}
		}}
}

// traceSource is the trace in path (topk.LoadTrace).
func traceSource(path string) (replaySource, error) {
	t, err := topk.LoadTrace(path)
	if err != nil {
		return replaySource{}, err
	}
	return replaySource{name: "trace " + path, rows: t.Rows, steps: len(t.Steps), maxN: t.N,
		step: func(s int) [][]float32 {
			rows := make([][]float32, t.Rows)
			for r := range rows {
				rows[r] = t.Row(s, r)
			}
			return rows
		}}, nil
}

// profileByName is the calibrated profile called name (topk.Profiles).
func profileByName(name string) (topk.Profile, error) {
	var names []string
	for _, p := range topk.Profiles {
		if strings.EqualFold(p.Name, name) {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return topk.Profile{}, fmt.Errorf("no profile %q (there are %s)", name, strings.Join(names, ", "))
}

// replay runs src step by step through a Selector with the instrumented
// kernels: each step's output is the next one's prediction, as in a
// decode. Every output is checked against topk.Reference; the overlap of
// consecutive steps is measured on the GPU's outputs.
func (b *bencher) replay(src replaySource) (Replay, error) {
	k := b.o.k
	rep := Replay{Source: src.name, Steps: src.steps, Rows: src.rows, MinN: math.MaxInt}
	cfg := b.o.selectorConfig()
	// AlwaysPredict: the replay measures the prediction, also where the
	// selector's tuning would run the fallback.
	cfg.MaxRows, cfg.Instrument, cfg.Device, cfg.AlwaysPredict = src.rows, true, b.dev, true
	sel, err := topk.NewSelector(cfg)
	if err != nil {
		return rep, err
	}
	defer sel.Close()
	stride := max(src.maxN, k)
	scores, err := b.dev.Alloc(4 * src.rows * stride)
	if err != nil {
		return rep, err
	}
	defer scores.Free()
	mhz := float64(b.dev.Info().ClockKHz) / 1000
	var prev [][]int32
	var alphas, stepUS []float64
	var passes, cands []uint32
	var phases [4]float64
	host := make([]float32, src.rows*stride)
	for s := range src.steps {
		rows := src.step(s)
		lengths := make([]int32, len(rows))
		for r, x := range rows {
			copy(host[r*stride:], x)
			lengths[r] = int32(len(x))
			rep.MinN, rep.MaxN = min(rep.MinN, len(x)), max(rep.MaxN, len(x))
		}
		if err := runtime.Upload(scores, host); err != nil {
			return rep, err
		}
		if err := b.start.Record(b.st); err != nil {
			return rep, err
		}
		res, err := sel.Select(0, topk.Batch{Scores: scores, Stride: stride, Rows: len(rows), Lengths: lengths}, b.st)
		if err != nil {
			return rep, err
		}
		if err := b.end.Record(b.st); err != nil {
			return rep, err
		}
		if err := b.end.Synchronize(); err != nil {
			return rep, err
		}
		el, err := runtime.Elapsed(b.start, b.end)
		if err != nil {
			return rep, err
		}
		idx, err := res.ReadIndices()
		if err != nil {
			return rep, err
		}
		stats, err := res.ReadStats()
		if err != nil {
			return rep, err
		}
		cur := make([][]int32, len(rows))
		for r, x := range rows {
			cur[r] = idx[r*k : (r+1)*k]
			want, _ := topk.Reference(x, k, b.o.sorted)
			if err := topk.Compare(cur[r], want, b.o.sorted); err != nil {
				b.rep.Mismatches = append(b.rep.Mismatches, fmt.Sprintf("replay %s, step %d, row %d: %v", src.name, s, r, err))
			}
			if s == 0 {
				continue // the fallback: no prediction
			}
			alphas = append(alphas, topk.Overlap(prev[r], cur[r]))
			st := stats[r]
			passes = append(passes, st.Phase2Passes)
			cands = append(cands, st.Candidates)
			if int(st.Path) < len(rep.Paths) {
				rep.Paths[st.Path]++
			}
			for i, c := range st.PhaseCycles() {
				phases[i] += float64(c) / mhz
			}
		}
		if s > 0 {
			stepUS = append(stepUS, float64(el)/float64(time.Microsecond))
		}
		prev = cur
	}
	if n := float64(len(alphas)); n > 0 {
		rep.Alpha = mean(alphas)
		count := func(most uint32) float64 {
			c := 0
			for _, p := range passes {
				if p <= most {
					c++
				}
			}
			return float64(c) / n
		}
		rep.OneShot, rep.Within2, rep.Within3 = count(1), count(2), count(3)
		cf := make([]float64, len(cands))
		for i, c := range cands {
			cf[i] = float64(c)
		}
		rep.CandMean = mean(cf)
		slices.Sort(cf)
		rep.CandP99 = cf[min(len(cf)-1, int(0.99*float64(len(cf))))]
		for i := range phases {
			rep.PhaseUS[i] = phases[i] / n
		}
		slices.Sort(stepUS)
		rep.StepUS = stepUS[len(stepUS)/2]
	}
	return rep, nil
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(max(len(x), 1))
}
