package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gvr-go/gvr/topk"
)

func TestSummarize(t *testing.T) {
	var s []time.Duration
	for i := 10; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Microsecond)
	}
	med, p10, p90, lo := summarize(s)
	if med != 5.5 || lo != 1 || p10 != 1.9 || p90 < 9.09 || p90 > 9.11 {
		t.Errorf("summarize = %v %v %v %v", med, p10, p90, lo)
	}
	if med, _, _, _ := summarize(nil); med != 0 {
		t.Errorf("summarize(nil) = %v", med)
	}
}

func TestParseInts(t *testing.T) {
	if v, err := parseInts("1, 8,64"); err != nil || len(v) != 3 || v[2] != 64 {
		t.Errorf("parseInts = %v, %v", v, err)
	}
	for _, bad := range []string{"", "1,,2", "0", "x", "-3"} {
		if _, err := parseInts(bad); err == nil {
			t.Errorf("parseInts(%q): no error", bad)
		}
	}
}

func TestWriteTable(t *testing.T) {
	r := &Report{Command: "gvrbench -batch 1", K: 2048, Iters: 50, Warmup: 5, FlushMB: 256,
		Device:  Device{Name: "GPU", CC: "9.0", Target: "sm_90", SMs: 132, L2MB: 50, ClockMHz: 1980, Driver: "13.0"},
		Kernels: []string{"gvr", "fallback"}, Workload: "synthetic",
		Timings: []Timing{
			{Batch: 1, N: 65536, Mode: "cold", Kernel: "gvr", MedianUS: 20},
			{Batch: 1, N: 65536, Mode: "cold", Kernel: "fallback", MedianUS: 30},
			{Batch: 1, N: 65536, Mode: "warm", Kernel: "gvr", MedianUS: 10},
			{Batch: 1, N: 65536, Mode: "warm", Kernel: "fallback", MedianUS: 25},
		},
		Phases: []Phases{{Batch: 1, N: 65536, Kernel: "gvr", PhaseUS: [4]float64{1, 2, 3, 4}, Paths: [4]int{0, 1, 0, 0}}},
	}
	var b strings.Builder
	r.WriteTable(&b)
	out := b.String()
	for _, want := range []string{"GPU (compute capability 9.0", "cold: median us", "warm: median us",
		"    1   65536 |     20.0     30.0    1.50x |     10.0     25.0    2.50x", "phase1", "0/1/0", "exact"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "phases (instrumented kernels, cold,") {
		t.Errorf("the phases are not said to be cold:\n%s", out)
	}
	if !strings.Contains(out, "cold: L2 flushed by writing 256 MB") {
		t.Errorf("the flush is not said to write:\n%s", out)
	}
	r.FlushRead = true // -flush-by read
	b.Reset()
	r.WriteTable(&b)
	if !strings.Contains(b.String(), "cold: L2 flushed by reading 256 MB") {
		t.Errorf("-flush-by read's flush is not said to read:\n%s", b.String())
	}
	r.FlushRead = false
	r.PhasesWarm = true // -phases-warm
	b.Reset()
	r.WriteTable(&b)
	if !strings.Contains(b.String(), "phases (instrumented kernels, warm,") {
		t.Errorf("-phases-warm's phases are not said to be warm:\n%s", b.String())
	}
	r.PhasesWarm = false
	if strings.Contains(b.String(), "taken again") || strings.Contains(b.String(), "hold") {
		t.Errorf("a run with no hold and no sample taken again says otherwise:\n%s", b.String())
	}
	r.HoldUS, r.Timings[1].Retaken, r.Timings[3].Retaken = 40, 1, 2
	b.Reset()
	r.WriteTable(&b)
	for _, want := range []string{"; each launch queued behind a 40 us hold of the GPU\n",
		"3 samples taken again: the host had not submitted the launch when the work queued ahead of it ended (most: fallback, batch 1, N 65536, warm: 2)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	r.Mismatches = []string{"gvr, batch 1, N 65536, row 0: wrong"}
	b.Reset()
	r.WriteTable(&b)
	if !strings.Contains(b.String(), "1 outputs DIFFER") {
		t.Errorf("mismatches not reported:\n%s", b.String())
	}
}

// A replay-only report prints the replay table, and says the outputs were
// exact (or not).
func TestWriteReplays(t *testing.T) {
	r := &Report{Device: Device{Name: "GPU"}, K: 2048, Mismatches: []string{},
		Replays: []Replay{{Source: "profile middle", Steps: 32, Rows: 1, MinN: 70690, MaxN: 70721, Alpha: 0.437,
			OneShot: 0.9, Within2: 0.95, Within3: 1, CandMean: 3000, CandP99: 3500, Paths: [4]int{0, 31, 0, 0},
			PhaseUS: [4]float64{2, 3, 4, 0.3}, StepUS: 14.5}}}
	var b strings.Builder
	r.WriteTable(&b)
	out := b.String()
	for _, want := range []string{"replay (topk.Selector", "profile middle", "70690-70721", "43.7%", "90.0%", "100.0%", "0/31/0", "14.5", "exact"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	r.Mismatches = []string{"replay x, step 3, row 0: wrong"}
	b.Reset()
	r.WriteTable(&b)
	if !strings.Contains(b.String(), "1 outputs DIFFER") {
		t.Errorf("a mismatch is not reported:\n%s", b.String())
	}
}

// TestTuning: a -tune run's choice is, per batch and N, the fewest SMs
// (0: gvr_topk) whose worse mode (cold or graph-replayed median over the
// fastest's) is within tuneMargin of the best; the file it writes reads
// back as the same table, one line per batch.
func TestTuning(t *testing.T) {
	r := &Report{Command: "gvrbench -tune x", Start: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC),
		Device: Device{Name: "GPU"}, Kernels: []string{"gvr", "cgvr8", "cgvr16"}}
	addModes := func(b, n int, kernel string, cold, graph float64) {
		r.Timings = append(r.Timings, Timing{Batch: b, N: n, Mode: "cold", Kernel: kernel, MedianUS: cold},
			Timing{Batch: b, N: n, Mode: "graph", Kernel: kernel, MedianUS: graph},
			Timing{Batch: b, N: n, Mode: "warm", Kernel: kernel, MedianUS: cold / 10}) // warm: ignored
	}
	// Graph-replayed 3 us faster, in the same order as cold.
	add := func(b, n int, kernel string, us float64) { addModes(b, n, kernel, us, max(0, us-3)) }
	add(1, 8192, "gvr", 12)
	add(1, 8192, "cgvr8", 14)
	add(1, 8192, "cgvr16", 15)
	add(1, 65536, "gvr", 19)
	add(1, 65536, "cgvr8", 17.4)
	add(1, 65536, "cgvr16", 17.2) // faster, by less than the margin
	add(1, 262144, "gvr", 36)
	add(1, 262144, "cgvr8", 14.2)
	add(1, 262144, "cgvr16", 13.1) // faster, by more
	add(64, 8192, "gvr", 13)
	add(64, 8192, "cgvr8", 48)
	add(64, 8192, "cgvr16", 100)
	add(64, 65536, "gvr", 25)
	add(64, 65536, "cgvr8", 24.96) // faster, by less than the margin
	add(64, 65536, "cgvr16", 0)    // not measured
	add(64, 262144, "gvr", 70)
	add(64, 262144, "cgvr8", 60.4)
	add(64, 262144, "cgvr16", 95)
	add(8, 8192, "gvr", 12)
	add(8, 8192, "cgvr8", 14)
	add(8, 8192, "cgvr16", 15)
	addModes(8, 65536, "gvr", 19, 16)
	addModes(8, 65536, "cgvr8", 17.4, 12)
	addModes(8, 65536, "cgvr16", 16.5, 13.8) // 5% faster cold, 15% slower graph-replayed: neither within both
	addModes(8, 262144, "gvr", 36, 33)
	addModes(8, 262144, "cgvr8", 14.2, 10)
	addModes(8, 262144, "cgvr16", 13.1, 10.1) // faster cold by more, graph-replayed within the margin
	tu, err := tuning(r)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{0, 8, 16}, {0, 8, 16}, {0, 0, 8}}
	if fmt.Sprint(tu.Cluster) != fmt.Sprint(want) || fmt.Sprint(tu.MedianUS) != "[[12 17.4 13.1] [12 17.4 13.1] [13 25 60.4]]" {
		t.Errorf("tuning: cluster %v (want %v), medians %v", tu.Cluster, want, tu.MedianUS)
	}
	raw := writeBack(t, tu)
	var back topk.Tuning
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("%v:\n%s", err, raw)
	}
	if fmt.Sprint(back) != fmt.Sprint(*tu) {
		t.Errorf("read back %+v, wrote %+v", back, *tu)
	}
	if !strings.Contains(string(raw), "\n    [0,8,16],\n") {
		t.Errorf("want one line per batch:\n%s", raw)
	}
	// -from report.json -tune file: the same table from the saved run.
	saved, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	rpath, again := filepath.Join(t.TempDir(), "r.json"), filepath.Join(t.TempDir(), "again.json")
	if err := os.WriteFile(rpath, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fromReport(rpath, "", "", again, "", io.Discard); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(again); err != nil || string(got) != string(raw) {
		t.Errorf("-from -tune wrote %s (%v), want %s", got, err, raw)
	}
	// Measured with mbarrier rounds (-tune -mbarrier-rounds): the same
	// choice from the +mbar columns; other columns do not count.
	m := *r
	m.Kernels, m.Timings = []string{"gvr", "cgvr8+mbar", "cgvr16+mbar", "cgvr16.bf16", "cgvr16+pages"}, nil
	for _, tm := range r.Timings {
		if tm.Kernel != "gvr" {
			tm.Kernel += "+mbar"
		}
		m.Timings = append(m.Timings, tm)
		if tm.Kernel == "cgvr16+mbar" {
			tm.MedianUS = 1 // faster, but not the selector's kernel
			for _, k := range []string{"cgvr16.bf16", "cgvr16+pages"} {
				tm.Kernel = k
				m.Timings = append(m.Timings, tm)
			}
		}
	}
	if tm, err := tuning(&m); err != nil || fmt.Sprint(tm.Cluster) != fmt.Sprint(want) {
		t.Errorf("tuning with mbarrier rounds: %v, %v; want %v", tm, err, want)
	}
	// With the keep (-tune -keep-over): a +keep column is taken where it
	// beats its cluster size without the keep by more than the margin,
	// not where it is within it; the table then has a keep grid.
	kp := m
	kp.Kernels = append(slices.Clone(m.Kernels), "cgvr8+mbar+keep", "cgvr16+mbar+keep")
	kp.Timings = slices.Clone(m.Timings)
	for _, tm := range m.Timings {
		if tm.Kernel == "cgvr8+mbar" || tm.Kernel == "cgvr16+mbar" {
			tm.Kernel += "+keep"
			switch {
			case tm.Batch == 64 && tm.N == 262144 && tm.Kernel == "cgvr8+mbar+keep":
				tm.MedianUS *= 0.7 // the keep's gain at batch 64
			case tm.Batch == 1 && tm.N == 262144 && tm.Kernel == "cgvr16+mbar+keep":
				tm.MedianUS *= 0.99 // within the margin
			default:
				tm.MedianUS *= 1.1
			}
			kp.Timings = append(kp.Timings, tm)
		}
	}
	tk, err := tuning(&kp)
	if err != nil {
		t.Fatal(err)
	}
	wantKeep := [][]bool{{false, false, false}, {false, false, false}, {false, false, true}}
	if fmt.Sprint(tk.Cluster) != fmt.Sprint(want) || fmt.Sprint(tk.Keep) != fmt.Sprint(wantKeep) || tk.MedianUS[2][2] != 42.3 {
		t.Errorf("tuning with the keep: cluster %v keep %v medians %v; want %v, %v", tk.Cluster, tk.Keep, tk.MedianUS, want, wantKeep)
	}
	raw = writeBack(t, tk)
	back = topk.Tuning{}
	if err := json.Unmarshal(raw, &back); err != nil || fmt.Sprint(back) != fmt.Sprint(*tk) {
		t.Errorf("read back %+v (%v), wrote %+v", back, err, *tk)
	}
	// With the fallbacks (every -tune run times them): a fallback is taken
	// where it is faster than every GVR kernel of its cluster size in
	// both modes, by more than the margin in one, and then ranks as any
	// option; the table
	// then has a fallback grid, and the selector runs it on predicted
	// steps.
	fb := *r
	fb.Kernels = append(slices.Clone(r.Kernels), "fallback", "cfallback8", "cfallback16")
	fb.Timings = slices.Clone(r.Timings)
	addFB := func(b, n int, kernel string, cold, graph float64) {
		fb.Timings = append(fb.Timings, Timing{Batch: b, N: n, Mode: "cold", Kernel: kernel, MedianUS: cold},
			Timing{Batch: b, N: n, Mode: "graph", Kernel: kernel, MedianUS: graph})
	}
	for _, tm := range r.Timings {
		if tm.Mode != "warm" {
			// By default 1% slower than the GVR kernel of the same shape.
			fb.Timings = append(fb.Timings, Timing{Batch: tm.Batch, N: tm.N, Mode: tm.Mode,
				Kernel: strings.Replace(strings.Replace(tm.Kernel, "cgvr", "cfallback", 1), "gvr", "fallback", 1), MedianUS: tm.MedianUS * 1.01})
		}
	}
	fb.Timings = slices.DeleteFunc(fb.Timings, func(tm Timing) bool {
		return strings.Contains(tm.Kernel, "fallback") && (tm.Batch == 1 && tm.N != 262144 || tm.Batch == 8 && tm.N <= 65536 || tm.Batch == 64 && tm.N == 262144)
	})
	addFB(1, 8192, "fallback", 11.5, 8.5)      // 4% and 6% faster than gvr: taken
	addFB(1, 8192, "cfallback8", 14, 11)       // as cgvr8
	addFB(1, 8192, "cfallback16", 15, 12)      // as cgvr16
	addFB(1, 65536, "fallback", 19, 16)        // as gvr
	addFB(1, 65536, "cfallback8", 17, 14)      // 2.4% and 2.9% faster than cgvr8: counts
	addFB(1, 65536, "cfallback16", 16, 13)     // faster than cgvr16 by more, and the fastest
	addFB(8, 8192, "fallback", 11.9, 8.5)      // faster than gvr in both modes, by more than the margin graph-replayed: taken
	addFB(8, 8192, "cfallback8", 14, 11)       // as cgvr8
	addFB(8, 8192, "cfallback16", 15, 12)      // as cgvr16
	addFB(8, 65536, "fallback", 19, 16)        // as gvr
	addFB(8, 65536, "cfallback8", 16.9, 11.6)  // 3% faster than cgvr8 in both
	addFB(8, 65536, "cfallback16", 16.5, 13.8) // as cgvr16
	addFB(64, 262144, "fallback", 70, 67)
	addFB(64, 262144, "cfallback8", 57, 58) // 6% faster cold, 3% slower graph-replayed: not taken
	addFB(64, 262144, "cfallback16", 95, 92)
	tf, err := tuning(&fb)
	if err != nil {
		t.Fatal(err)
	}
	wantFB := [][]int{{0, 16, 16}, {0, 8, 16}, {0, 0, 8}}
	wantFallback := [][]bool{{true, true, false}, {true, true, false}, {false, false, false}}
	if fmt.Sprint(tf.Cluster) != fmt.Sprint(wantFB) || fmt.Sprint(tf.Fallback) != fmt.Sprint(wantFallback) ||
		fmt.Sprint(tf.MedianUS) != "[[11.5 16 13.1] [11.9 16.9 13.1] [13 25 60.4]]" {
		t.Errorf("tuning with the fallbacks: cluster %v fallback %v medians %v; want %v, %v", tf.Cluster, tf.Fallback, tf.MedianUS, wantFB, wantFallback)
	}
	raw = writeBack(t, tf)
	back = topk.Tuning{}
	if err := json.Unmarshal(raw, &back); err != nil || fmt.Sprint(back) != fmt.Sprint(*tf) {
		t.Errorf("read back %+v (%v), wrote %+v", back, err, *tf)
	}
	if !strings.Contains(string(raw), "\n    [true,true,false],\n") {
		t.Errorf("want the fallback grid, one line per batch:\n%s", raw)
	}

	// With the sure set's columns (every -tune run times them): an option
	// is ranked by its +sure column's medians where topk.SureSet's rule
	// takes it, as the selector runs it, and by its plain column's
	// elsewhere.
	sr := *r
	sr.Kernels = append(slices.Clone(r.Kernels), "gvr+sure", "cgvr8+sure", "cgvr16+sure")
	sr.Timings = slices.Clone(r.Timings)
	for _, tm := range r.Timings {
		tm.Kernel += "+sure"
		switch {
		case tm.Batch == 1 && tm.N == 65536 && tm.Kernel == "cgvr16+sure":
			tm.MedianUS *= 0.9 // 64K over 16 CTAs takes the sure set: now C16 by more than the margin
		case tm.Batch == 8 && tm.N == 262144 && tm.Kernel == "cgvr8+sure":
			tm.MedianUS *= 0.5 // 32K elements a CTA: no sure set, so not counted
		case tm.Batch == 64 && tm.N == 8192 && tm.Kernel == "gvr+sure":
			tm.MedianUS *= 0.95
		}
		sr.Timings = append(sr.Timings, tm)
	}
	ts, err := tuning(&sr)
	if err != nil {
		t.Fatal(err)
	}
	wantSure := [][]int{{0, 16, 16}, {0, 8, 16}, {0, 0, 8}}
	if fmt.Sprint(ts.Cluster) != fmt.Sprint(wantSure) || fmt.Sprint(ts.MedianUS) != "[[12 15.5 13.1] [12 17.4 13.1] [12.4 25 60.4]]" {
		t.Errorf("tuning with the sure set: cluster %v medians %v; want %v", ts.Cluster, ts.MedianUS, wantSure)
	}

	r.Timings = r.Timings[2:] // no gvr at batch 1, N 8192
	if _, err := tuning(r); err == nil {
		t.Error("tuning without a gvr timing: no error")
	}
}

// TestCharts: a report with timings in three modes, phases and replays
// draws its latency, phase and replay charts, each as SVG and PNG.
func TestCharts(t *testing.T) {
	r := &Report{Device: Device{Name: "GPU"}, K: 2048, Kernels: []string{"gvr", "auto"},
		Replays: []Replay{{Source: "profile middle", OneShot: 0.9, Within2: 1, Within3: 1}}}
	for _, n := range []int{8192, 65536, 262144} {
		for _, mode := range []string{"cold", "warm", "graph"} {
			for _, k := range r.Kernels {
				r.Timings = append(r.Timings, Timing{Batch: 1, N: n, Mode: mode, Kernel: k, MedianUS: float64(n) / 1e4})
			}
		}
		r.Phases = append(r.Phases, Phases{Batch: 1, N: n, Kernel: "gvr", PhaseUS: [4]float64{4, 3, 2, 1}})
	}
	dir := t.TempDir()
	names, err := writeCharts(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"latency_batch1", "phases_gvr_batch1", "replay_phase2_passes"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("charts %v, want %v", names, want)
	}
	for _, name := range want {
		svg, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		if err != nil || !strings.Contains(string(svg), "<svg") {
			t.Errorf("%s.svg: %v, %d bytes", name, err, len(svg))
		}
		png, err := os.ReadFile(filepath.Join(dir, name+".png"))
		if err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
			t.Errorf("%s.png: %v, %d bytes", name, err, len(png))
		}
	}
}

// The columns of -scores and -pages, and how their names read back.
func TestColumns(t *testing.T) {
	got := columns([]string{"gvr", "floor8", "cgvr8"}, []topk.DType{topk.Float32, topk.BFloat16, topk.Float16}, true, true, false, false)
	want := []string{"gvr", "gvr.bf16", "gvr.bf16/f32", "gvr.f16", "gvr.f16/f32", "gvr+pages", "floor8", "cgvr8", "cgvr8+mbar",
		"cgvr8.bf16", "cgvr8.bf16/f32", "cgvr8.f16", "cgvr8.f16/f32", "cgvr8+pages"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("columns: %v, want %v", got, want)
	}
	got = columns([]string{"gvr", "cgvr16"}, nil, false, true, true, false)
	want = []string{"gvr", "cgvr16", "cgvr16+keep", "cgvr16+mbar", "cgvr16+mbar+keep"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("columns with the keep: %v, want %v", got, want)
	}
	got = columns([]string{"gvr", "radix", "floor8", "cgvr8", "auto"}, nil, false, true, false, true)
	want = []string{"gvr", "gvr+sure", "radix", "floor8", "cgvr8", "cgvr8+sure", "cgvr8+mbar", "cgvr8+mbar+sure", "auto"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("columns with the sure set: %v, want %v", got, want)
	}
	for name, c := range map[string]column{
		"gvr":             {kernel: "gvr"},
		"cgvr16.bf16":     {kernel: "cgvr16", scores: topk.BFloat16},
		"auto.f16":        {kernel: "auto", scores: topk.Float16},
		"auto+pages":      {kernel: "auto", pages: true},
		"cgvr8+mbar":      {kernel: "cgvr8", mbar: true},
		"cgvr8+keep":      {kernel: "cgvr8", keep: true},
		"cgvr8+mbar+keep": {kernel: "cgvr8", mbar: true, keep: true},
		"cgvr8+mbar+sure": {kernel: "cgvr8", mbar: true, sure: true},
		"gvr+sure":        {kernel: "gvr", sure: true},
		"gvr.bf16/f32":    {kernel: "gvr", scores: topk.BFloat16, wide: true},
	} {
		if got := parseColumn(name); got != c {
			t.Errorf("parseColumn(%q) = %+v, want %+v", name, got, c)
		}
	}
	if p, n := clusterOf(parseColumn("cgvr16.bf16").kernel); p != "cgvr" || n != 16 {
		t.Errorf("clusterOf(cgvr16): %q %d", p, n)
	}
}

// The A/B view: the kernels both reports timed, per mode, the change in
// percent; a kernel or cell only one has is left out or shown as -.
func TestComparison(t *testing.T) {
	base := &Report{Command: "gvrbench (base)", Device: Device{Name: "GPU"}, Kernels: []string{"gvr", "auto"}}
	nu := &Report{Command: "gvrbench (new)", Device: Device{Name: "GPU"}, Kernels: []string{"gvr", "auto", "cgvr8"}}
	for _, c := range []struct {
		r       *Report
		n       int
		mode, k string
		us      float64
	}{{base, 8192, "cold", "gvr", 13.0}, {nu, 8192, "cold", "gvr", 12.0}, {base, 8192, "cold", "auto", 10}, {nu, 8192, "cold", "auto", 11},
		{nu, 65536, "cold", "gvr", 19}, {nu, 8192, "cold", "cgvr8", 14}, {base, 8192, "graph", "gvr", 9}, {nu, 8192, "graph", "gvr", 9}} {
		c.r.Timings = append(c.r.Timings, Timing{Batch: 1, N: c.n, Mode: c.mode, Kernel: c.k, MedianUS: c.us})
	}
	// Phases in both reports for auto at 8192; cgvr8's only in the new one.
	var was, now Phases
	was = Phases{Batch: 1, N: 8192, Kernel: "auto", PhaseUS: [4]float64{4, 1, 1.5, 3}}
	now = was
	now.PhaseUS[0] = 3.5
	lengthStep, valuesStep := slices.Index(topk.Steps[:], "length"), slices.Index(topk.Steps[:], "p1 values")
	was.StepUS[lengthStep], now.StepUS[lengthStep] = 0.7, 0.75 // moved less than stepMoved: not named
	was.StepUS[valuesStep], now.StepUS[valuesStep] = 1.6, 1.1
	base.Phases = []Phases{was}
	nu.Phases = []Phases{now, {Batch: 1, N: 8192, Kernel: "cgvr8"}}
	var b strings.Builder
	nu.WriteComparison(&b, base)
	out := b.String()
	for _, want := range []string{
		"cold: median us, against -> this, change",
		"    1    8192 |    13.0    12.0   -7.7% |    10.0    11.0  +10.0%",
		"graph: median us",
		"    1    8192 |     9.0     9.0   +0.0% |                        -",
		"      geomean |         1 cells   -7.7% |         1 cells  +10.0%",
		"      geomean |         1 cells   +0.0% |                        -",
		"phases (instrumented kernels, cold, mean per row)",
		"    1    8192 auto               |  4.00  3.50 -0.50 |  1.00  1.00 +0.00 |  1.50  1.50 +0.00 |  3.00  3.00 +0.00 | p1 values -0.50",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "cgvr8") || strings.Contains(out, "65536") {
		t.Errorf("a kernel or row only one report has:\n%s", out)
	}
	if strings.Contains(out, "length") {
		t.Errorf("a step that moved less than %v us is named:\n%s", stepMoved, out)
	}
}

// The geomean row is the geometric mean of the changes: +10% and -10%
// give -0.5%, not 0.
func TestComparisonGeomean(t *testing.T) {
	base := &Report{Device: Device{Name: "GPU"}, Kernels: []string{"auto"}}
	nu := &Report{Device: Device{Name: "GPU"}, Kernels: []string{"auto"}}
	for i, n := range []int{8192, 65536} {
		base.Timings = append(base.Timings, Timing{Batch: 1, N: n, Mode: "cold", Kernel: "auto", MedianUS: 10})
		nu.Timings = append(nu.Timings, Timing{Batch: 1, N: n, Mode: "cold", Kernel: "auto", MedianUS: []float64{11, 9}[i]})
	}
	var b strings.Builder
	nu.WriteComparison(&b, base)
	if want := "      geomean |         2 cells   -0.5%"; !strings.Contains(b.String(), want) {
		t.Errorf("comparison lacks %q:\n%s", want, b.String())
	}
}

// The steps inside Phases 1-4 get their own table when measured.
func TestStepTable(t *testing.T) {
	r := &Report{Device: Device{Name: "GPU", ClockMHz: 1980}, Kernels: []string{"gvr"},
		Timings: []Timing{{Batch: 1, N: 65536, Mode: "cold", Kernel: "gvr", MedianUS: 20}}}
	r.Phases = []Phases{{Batch: 1, N: 65536, Kernel: "gvr", StepUS: [len(topk.Steps)]float64{0.5, 0, 0, 0.75, 1.5, 1.25, 2, 0, 0.5, 0.75, 1, 1.5, 0.25}}}
	var b strings.Builder
	r.WriteTable(&b)
	for _, want := range []string{"inside Phases 1-4", "p1 indices", "p4 finish", "p2 combine", "    1   65536 gvr          0.50        0.00       0.00     0.75       1.50      1.25"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestTuningNoSlowerThanOneCTA: a cluster is chosen only where it is no
// slower than one CTA a row in either mode, even where the worse-mode
// rule alone would take it (b1 8K on an H100, perf notes 210: clusters of
// 4 and 8 faster cold and slower graph-replayed than one CTA).
func TestTuningNoSlowerThanOneCTA(t *testing.T) {
	r := &Report{Command: "gvrbench -tune x", Start: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC),
		Device: Device{Name: "GPU"}, Kernels: []string{"gvr", "cgvr4", "cgvr8"}}
	add := func(n int, kernel string, cold, graph float64) {
		r.Timings = append(r.Timings, Timing{Batch: 1, N: n, Mode: "cold", Kernel: kernel, MedianUS: cold},
			Timing{Batch: 1, N: n, Mode: "graph", Kernel: kernel, MedianUS: graph})
	}
	// 8K: C4's worse mode (graph-replayed, 1.4% over the fastest) is the
	// least, and one CTA's (cold, 3.4%) is past the margin of it, so the
	// worse-mode rule alone takes C4; but C4 and C8 are slower
	// graph-replayed than one CTA.
	add(8192, "gvr", 8.74, 5.82)
	add(8192, "cgvr4", 8.50, 5.90)
	add(8192, "cgvr8", 8.45, 5.95)
	// 16K: C8 faster than one CTA in both modes, and the fastest.
	add(16384, "gvr", 8.9, 6.6)
	add(16384, "cgvr4", 8.6, 6.1)
	add(16384, "cgvr8", 8.4, 5.9)
	tu, err := tuning(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[[0 8]]"; fmt.Sprint(tu.Cluster) != want || fmt.Sprint(tu.MedianUS) != "[[8.7 8.4]]" {
		t.Errorf("tuning: cluster %v (want %s), medians %v", tu.Cluster, want, tu.MedianUS)
	}
}

// TestTuningGroups: a row shared by clusters (gfallbackCxG) is chosen
// where it is the fastest by the rule, as the fallback it is (it beats
// the GVR kernels of its cluster size), and the table's Groups grid says
// how many clusters; elsewhere the grid is 0, and without any such cell
// there is none.
func TestTuningGroups(t *testing.T) {
	if p, c := clusterOf("gfallback16x4"); p != "gfallback" || c != 16 || groupsOf("gfallback16x4+mbar") != 0 || groupsOf(parseColumn("gfallback16x4+mbar").kernel) != 4 {
		t.Fatalf("gfallback16x4: prefix %q, cluster %d, groups %d", p, c, groupsOf(parseColumn("gfallback16x4+mbar").kernel))
	}
	r := &Report{Command: "gvrbench -tune x", Start: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC),
		Device: Device{Name: "GPU"}, Kernels: []string{"gvr", "cgvr16+mbar", "cfallback16+mbar", "gfallback8x8+mbar", "gfallback16x4+mbar"}}
	add := func(b, n int, kernel string, cold, graph float64) {
		r.Timings = append(r.Timings, Timing{Batch: b, N: n, Mode: "cold", Kernel: kernel, MedianUS: cold},
			Timing{Batch: b, N: n, Mode: "graph", Kernel: kernel, MedianUS: graph})
	}
	add(1, 262144, "gvr", 36, 33)
	add(1, 262144, "cgvr16+mbar", 10.6, 7.9)
	add(1, 262144, "cfallback16+mbar", 10.4, 7.8)  // within the margin: the prediction
	add(1, 262144, "gfallback8x8+mbar", 12.8, 9.3) // slower: not taken
	add(1, 262144, "gfallback16x4+mbar", 12.1, 9.4)
	add(1, 1048576, "gvr", 108, 100)
	add(1, 1048576, "cgvr16+mbar", 17.4, 14.0)
	add(1, 1048576, "cfallback16+mbar", 16.8, 13.9)
	add(1, 1048576, "gfallback8x8+mbar", 15.4, 10.6)
	add(1, 1048576, "gfallback16x4+mbar", 14.6, 11.0) // the same SMs, faster cold, slower graph-replayed: within neither
	tu, err := tuning(r)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(tu.Cluster, tu.Groups, tu.Fallback) != "[[16 8]] [[0 8]] [[false true]]" {
		t.Errorf("cluster %v, groups %v, fallback %v; want [[16 8]] [[0 8]] [[false true]]", tu.Cluster, tu.Groups, tu.Fallback)
	}
	// The file reads back as the same table, groups included.
	raw := writeBack(t, tu)
	var back topk.Tuning
	if err := json.Unmarshal(raw, &back); err != nil || fmt.Sprint(back) != fmt.Sprint(*tu) {
		t.Errorf("read back %+v (%v), wrote %+v:\n%s", back, err, *tu, raw)
	}
	r.Kernels = r.Kernels[:3]
	if tu, err = tuning(r); err != nil || tu.Groups != nil {
		t.Errorf("without gfallback columns: groups %v (%v), want none", tu.Groups, err)
	}
}

// writeBack writes tu as -tune does and returns the file's bytes.
func writeBack(t *testing.T, tu *topk.Tuning) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.json")
	if err := writeTuningFile(path, tu); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestMergeRuns: -from a.json,b.json,c.json -tune chooses by each cell's
// median over the runs, so that one run's outlier does not flip a cell;
// runs of another measurement, or with a cell missing, are refused, and
// several reports without -tune too.
func TestMergeRuns(t *testing.T) {
	run := func(gvr, cgvr []float64) *Report {
		r := &Report{Command: "gvrbench -tune x", Start: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC),
			Device: Device{Name: "GPU"}, K: 2048, Kernels: []string{"gvr", "cgvr16+mbar"}}
		for i, mode := range []string{"cold", "graph"} {
			r.Timings = append(r.Timings, Timing{Batch: 1, N: 65536, Mode: mode, Kernel: "gvr", MedianUS: gvr[i], P10US: gvr[i] - 1, P90US: gvr[i] + 1, MinUS: gvr[i] - 2, Samples: 20},
				Timing{Batch: 1, N: 65536, Mode: mode, Kernel: "cgvr16+mbar", MedianUS: cgvr[i], P10US: cgvr[i], P90US: cgvr[i], MinUS: cgvr[i], Samples: 20})
		}
		return r
	}
	// Run 2 is an outlier where the cluster loses; the median keeps it.
	runs := []*Report{run([]float64{18, 15}, []float64{10, 7}), run([]float64{17, 14}, []float64{19, 16}), run([]float64{19, 16}, []float64{11, 8})}
	m, err := mergeRuns(runs)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(m.median(1, 65536, "cold", "gvr"), m.median(1, 65536, "graph", "cgvr16+mbar")); got != "18 8" {
		t.Errorf("medians %s, want 18 8", got)
	}
	if tm := m.Timings[0]; tm.P10US != 16 || tm.P90US != 20 || tm.MinUS != 15 || tm.Samples != 60 {
		t.Errorf("gvr cold merged as %+v: want p10 16, p90 20, min 15, 60 samples", tm)
	}
	if !strings.Contains(m.Command, "median over 3 runs") {
		t.Errorf("command %q does not say it is merged", m.Command)
	}
	tu, err := tuning(m)
	if err != nil || fmt.Sprint(tu.Cluster) != "[[16]]" {
		t.Errorf("tuned on the merged runs: %v (%v), want [[16]]", tu, err)
	}
	if tu, err := tuning(runs[1]); err != nil || fmt.Sprint(tu.Cluster) != "[[0]]" {
		t.Errorf("tuned on the outlier alone: %v (%v), want [[0]]", tu, err)
	}
	// Two runs: the mean of the two.
	if m, err := mergeRuns(runs[:2]); err != nil || m.median(1, 65536, "cold", "cgvr16+mbar") != 14.5 {
		t.Errorf("two runs: %v", err)
	}

	other := run([]float64{18, 15}, []float64{10, 7})
	other.Device.Name = "Other GPU"
	short := run([]float64{18, 15}, []float64{10, 7})
	short.Timings = short.Timings[:3]
	dup := run([]float64{18, 15}, []float64{10, 7})
	dup.Timings[3] = dup.Timings[0]
	for name, r := range map[string]*Report{"another device": other, "a cell missing": short, "a cell twice": dup} {
		if _, err := mergeRuns([]*Report{runs[0], r}); err == nil {
			t.Errorf("%s: merged", name)
		}
	}

	dir := t.TempDir()
	var paths []string
	for i, r := range runs {
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("r%d.json", i)))
		if err := os.WriteFile(paths[i], raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	from := strings.Join(paths, ",")
	out := filepath.Join(dir, "t.json")
	if err := fromReport(from, "", "", out, "", io.Discard); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(raw), "median over 3 runs") {
		t.Errorf("the table written from three runs: %v\n%s", err, raw)
	}
	if err := fromReport(from, "", "", "", "", io.Discard); err == nil || !strings.Contains(err.Error(), "only with -tune") {
		t.Errorf("several reports without -tune: %v", err)
	}
}

// TestSpliceTuning: -from R -tune OUT -into TABLE writes TABLE with the
// rows of R's batches in place of its own and the batches it lacks added
// in order, every other row as it was; a grid only one side has reads as
// zero on the other; a table of another device or other row lengths is
// refused, and so is -into without -tune.
func TestSpliceTuning(t *testing.T) {
	ns := []int{8192, 65536}
	base := &topk.Tuning{Device: "GPU", Command: "gvrbench -tune a", Date: "2026-11-27", Batches: []int{1, 8, 64}, Ns: ns,
		Cluster:  [][]int{{0, 16}, {4, 8}, {0, 2}},
		Fallback: [][]bool{{true, true}, {true, false}, {false, true}},
		Groups:   [][]int{{0, 0}, {0, 0}, {0, 0}},
		MedianUS: [][]float64{{8, 9}, {9, 11}, {10, 17}}}
	rows := &topk.Tuning{Device: "GPU", Command: "gvrbench -tune b", Date: "2026-11-28", Batches: []int{6, 8}, Ns: ns,
		Cluster:  [][]int{{8, 16}, {4, 6}},
		Keep:     [][]bool{{false, true}, {false, false}},
		Fallback: [][]bool{{false, false}, {true, true}},
		MedianUS: [][]float64{{8.5, 9.5}, {8.9, 10.5}}}
	got, err := spliceTuning(base, rows)
	if err != nil {
		t.Fatal(err)
	}
	want := &topk.Tuning{Device: "GPU", Command: "gvrbench -tune a; batches 6, 8: gvrbench -tune b", Date: "2026-11-28",
		Batches:  []int{1, 6, 8, 64},
		Ns:       ns,
		Cluster:  [][]int{{0, 16}, {8, 16}, {4, 6}, {0, 2}},
		Keep:     [][]bool{{false, false}, {false, true}, {false, false}, {false, false}},
		Fallback: [][]bool{{true, true}, {false, false}, {true, true}, {false, true}},
		Groups:   [][]int{{0, 0}, {0, 0}, {0, 0}, {0, 0}},
		MedianUS: [][]float64{{8, 9}, {8.5, 9.5}, {8.9, 10.5}, {10, 17}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("spliced table (-want +got):\n%s", d)
	}
	// The rows spliced are copies: the table spliced into is unchanged.
	got.Cluster[0][0] = 3
	if base.Cluster[0][0] != 0 {
		t.Errorf("splicing shares the base table's rows")
	}

	other := *rows
	other.Device = "Other GPU"
	longer := *rows
	longer.Ns = []int{8192, 131072}
	for name, r := range map[string]*topk.Tuning{"another device": &other, "other row lengths": &longer} {
		if _, err := spliceTuning(base, r); err == nil {
			t.Errorf("%s: spliced", name)
		}
	}

	// Through -from: a -tune run's report spliced into a saved table.
	dir := t.TempDir()
	table := filepath.Join(dir, "table.json")
	if err := os.WriteFile(table, writeBack(t, base), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Report{Command: "gvrbench -tune c", Start: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC),
		Device: Device{Name: "GPU"}, K: 2048, Kernels: []string{"gvr", "cgvr16+mbar"}}
	for _, n := range ns {
		for _, mode := range []string{"cold", "graph"} {
			r.Timings = append(r.Timings, Timing{Batch: 8, N: n, Mode: mode, Kernel: "gvr", MedianUS: 20},
				Timing{Batch: 8, N: n, Mode: mode, Kernel: "cgvr16+mbar", MedianUS: 10})
		}
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	from, out := filepath.Join(dir, "r.json"), filepath.Join(dir, "out.json")
	if err := os.WriteFile(from, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fromReport(from, "", "", out, table, io.Discard); err != nil {
		t.Fatal(err)
	}
	spliced, err := readTuningFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(spliced.Batches, spliced.Cluster) != "[1 8 64] [[0 16] [16 16] [0 2]]" || !strings.HasSuffix(spliced.Command, "; batches 8: gvrbench -tune c") {
		t.Errorf("-from -tune -into: batches %v, clusters %v, command %q", spliced.Batches, spliced.Cluster, spliced.Command)
	}
	if err := fromReport(from, "", "", "", table, io.Discard); err == nil || !strings.Contains(err.Error(), "give -tune") {
		t.Errorf("-into without -tune: %v", err)
	}
}

// The latency axis's ticks: 1, 2 and 5 times each power of ten in range.
func TestUsTicks(t *testing.T) {
	var got []string
	for _, tk := range (usTicks{}).Ticks(1.5, 600) {
		got = append(got, tk.Label)
	}
	if want := "[2 5 10 20 50 100 200 500]"; fmt.Sprint(got) != want {
		t.Errorf("ticks %v, want %s", got, want)
	}
}

// The table sets each cluster kernel's median over the floor of its
// cluster size, and the selector's over the largest cluster's floor; a
// cell whose floor was not measured shows "-".
func TestFloorRatios(t *testing.T) {
	r := &Report{K: 2048, Kernels: []string{"gvr", "cgvr8+mbar", "cgvr16", "auto", "floor8", "floor16"}}
	want := []floorRatio{{"cgvr8+mbar", "floor8"}, {"cgvr16", "floor16"}, {"auto", "floor16"}}
	if diff := cmp.Diff(want, r.floorRatios(), cmp.AllowUnexported(floorRatio{})); diff != "" {
		t.Errorf("floorRatios (-want +got):\n%s", diff)
	}
	for k, us := range map[string]float64{"gvr": 30, "cgvr8+mbar": 12, "cgvr16": 10, "auto": 9, "floor8": 4, "floor16": 3} {
		r.Timings = append(r.Timings, Timing{Batch: 1, N: 65536, Mode: "cold", Kernel: k, MedianUS: us})
		if k != "floor16" {
			r.Timings = append(r.Timings, Timing{Batch: 1, N: 1048576, Mode: "cold", Kernel: k, MedianUS: 2 * us})
		}
	}
	var b strings.Builder
	r.WriteTable(&b)
	for _, want := range []string{
		"floor16 cgvr8+mbar/floor8 cgvr16/floor16 auto/floor16\n",
		"    1   65536 |       30.0       12.0       10.0        9.0        4.0        3.0             3.00x          3.33x        3.00x\n",
		"    1 1048576 |       60.0       24.0       20.0       18.0        8.0          -             3.00x              -            -\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if qs := (&Report{Kernels: []string{"gvr", "auto", "cgvr16"}}).floorRatios(); len(qs) != 0 {
		t.Errorf("ratios %v without a floor column", qs)
	}
}
