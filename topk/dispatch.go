package topk

import (
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/runtime"
)

// step is what the selector knows of a step when it picks the kernel.
type step struct {
	rows      int  // rows in the batch
	n         int  // the longest row: the stride, or the longest host length
	predicted bool // the layer's previous indices are there to guide it
	// alwaysPredict runs the GVR kernels on every predicted step, even
	// where the device's tuning measured the fallback faster
	// (Config.AlwaysPredict).
	alwaysPredict bool
	device        device // the device it runs on
}

// device is what the choice needs to know of a device.
type device struct {
	tuning   *Tuning // its GPU model's measured choice, or nil
	sms      int
	clusters bool // thread-block clusters (sm_90+)
}

// choice is a kernel, how many CTAs of a cluster take each row (0: one
// CTA per row, the single-CTA kernel), for a cluster kernel whether it
// keeps which vectors of a long row's excess hold high elements
// (gen.Config.KeepOver), and whether it sets apart the candidates its
// first pass shows to be in the Top-K (gen.Config.SureSet).
type choice struct {
	name    string
	cluster int
	keep    bool
	sure    bool
}

// The kernels a Selector runs.
const (
	kernelGVR             = "gvr_topk"              // GVR, guided by the layer's previous step
	kernelFallback        = "topk_fallback"         // GVR guessing from a row sample: no prediction yet
	kernelGVRCluster      = "gvr_topk_cluster"      // gvr_topk, one row per thread-block cluster
	kernelFallbackCluster = "topk_fallback_cluster" // topk_fallback, one row per thread-block cluster
)

// choose picks the kernel for a step, a pure function of the step, so the
// choice is unit-tested without a GPU. A layer's first step has no
// prediction and runs a fallback kernel; the others a GVR kernel, but
// where the device's Tuning measured the fallback of the same shape
// faster on predicted rows (Tuning.Fallback), the fallback: there the
// row sample's estimate lands the first pass as well as the prediction
// does, and the prediction's gathers cost Phase 1 time (perf notes 115,
// 116). Whether a row takes one CTA or a cluster of C, and C, comes from
// the device's Tuning (measured by gvrbench -tune, kept in tuning/ per GPU
// model), or for a GPU without one from defaultCluster.
func choose(s step) choice {
	c, keep, fallback := 0, false, false
	if s.device.clusters {
		if t := s.device.tuning; t != nil {
			c, keep, fallback = t.choice(s.rows, s.n)
		} else {
			c = defaultCluster(s)
		}
	}
	predict := s.predicted && (!fallback || s.alwaysPredict)
	sure := SureSet(s.n, c)
	switch {
	case c > 0 && predict:
		return choice{kernelGVRCluster, c, keep, sure}
	case c > 0:
		return choice{kernelFallbackCluster, c, keep, sure}
	case predict:
		return choice{kernelGVR, 0, false, sure}
	}
	return choice{kernelFallback, 0, false, sure}
}

// SureSet is the rule for gen.Config.SureSet, for rows of n elements
// over clusters of c CTAs (0: one CTA per row): rows of at most
// gen.SureSetMaxRow elements in one CTA, and in a cluster where each
// CTA's part is at most gen.SureSetMaxShare elements. On an H100 the sure
// set took 0.4-0.7 us off Phase 4 everywhere, and cost the first pass and
// Phase 3 more the more elements each CTA walks, in shared memory more
// than in global memory: one CTA -2 to -6% from 8K to 32K and about
// nothing at 64K; clusters -1 to -3% at 64K over 8 CTAs, +1 to +5% from
// 16K elements a CTA on (perf notes 91). Since each cluster CTA writes its
// own sure candidates out (95), 16K elements a CTA pays too (-2 to -4%
// cold, -3 to -6% graph-replayed), 32K not (perf notes 101).
func SureSet(n, c int) bool {
	if c <= 1 {
		return n <= gen.SureSetMaxRow
	}
	return (n+c-1)/c <= gen.SureSetMaxShare
}

// defaultCluster is the rule for a GPU with clusters but no Tuning, from
// the H100's and H200's tables: clusters of 8 once a row is long enough
// that one CTA reading it is slower than a cluster's fixed costs (32K
// elements), and while the batch's clusters fit on the device at once;
// otherwise one CTA per row.
func defaultCluster(s step) int {
	if s.n >= 32768 && s.rows*8 <= s.device.sms {
		return 8
	}
	return 0
}

// Tuning is the kernel choice measured on one GPU model: Cluster[i][j] is
// the cluster size of gvr_topk_cluster chosen for Batches[i] rows of Ns[j]
// elements, or 0 for gvr_topk (one CTA per row), and Keep[i][j] (if Keep
// is there) whether that cluster kernel keeps which vectors of a long
// row's excess hold high elements (gen.Config.KeepOver), and
// Fallback[i][j] (if Fallback is there) whether a predicted step runs the
// fallback kernel of that shape instead of the GVR one, each from cold-L2
// and graph-replayed medians in one gvrbench -tune run (MedianUS: the
// choice's cold one; with the paper's synthetic rows and static
// prediction). The choice is the fewest SMs whose worse mode (its median
// over the fastest's, in the worse of the two) is within 2% of the best
// (gvrbench's tuneMargin), without the keep where both are, and with the
// prediction unless the fallback of the same shape is faster in both
// modes, by more than the margin in one; each timed as the selector runs
// it, with the sure set where SureSet's rule takes it.
type Tuning struct {
	Device   string      `json:"device"`  // the GPU's name as the driver reports it
	Command  string      `json:"command"` // the gvrbench command that measured it
	Date     string      `json:"date"`
	Batches  []int       `json:"batches"` // ascending
	Ns       []int       `json:"ns"`      // ascending
	Cluster  [][]int     `json:"cluster"`
	Keep     [][]bool    `json:"keep,omitempty"`     // nil: no keep anywhere
	Fallback [][]bool    `json:"fallback,omitempty"` // nil: the prediction everywhere
	MedianUS [][]float64 `json:"median_us"`
}

// choice is the measured choice for rows rows of n elements: that of the
// smallest measured batch and row length at least as large (the largest
// where none is).
func (t *Tuning) choice(rows, n int) (c int, keep, fallback bool) {
	i, _ := slices.BinarySearch(t.Batches, rows)
	j, _ := slices.BinarySearch(t.Ns, n)
	i, j = min(i, len(t.Batches)-1), min(j, len(t.Ns)-1)
	return t.Cluster[i][j], t.Keep != nil && t.Keep[i][j], t.Fallback != nil && t.Fallback[i][j]
}

// checkGrid reports a grid of t's (what: its entries' name) that does not
// hold one entry per batch and row length.
func checkGrid[T any](t *Tuning, what string, g [][]T) error {
	if len(g) != len(t.Batches) {
		return fmt.Errorf("tuning for %s: %d rows of %s for %d batches", t.Device, len(g), what, len(t.Batches))
	}
	for i, row := range g {
		if len(row) != len(t.Ns) {
			return fmt.Errorf("tuning for %s: batch %d has %d %s for %d row lengths", t.Device, t.Batches[i], len(row), what, len(t.Ns))
		}
	}
	return nil
}

// Check reports what makes t unusable.
func (t *Tuning) Check() error {
	if t.Device == "" || len(t.Batches) == 0 || len(t.Ns) == 0 {
		return fmt.Errorf("tuning: no device, batches or row lengths")
	}
	if !slices.IsSorted(t.Batches) || !slices.IsSorted(t.Ns) {
		return fmt.Errorf("tuning for %s: batches and row lengths must ascend", t.Device)
	}
	if err := checkGrid(t, "choices", t.Cluster); err != nil {
		return err
	}
	for _, row := range t.Cluster {
		for _, c := range row {
			if c < 0 || c > 16 {
				return fmt.Errorf("tuning for %s: cluster size %d", t.Device, c)
			}
		}
	}
	if t.Keep != nil {
		if err := checkGrid(t, "keeps", t.Keep); err != nil {
			return err
		}
	}
	for i, row := range t.Keep {
		for j, k := range row {
			if k && t.Cluster[i][j] == 0 {
				return fmt.Errorf("tuning for %s: batch %d, N %d keeps without a cluster", t.Device, t.Batches[i], t.Ns[j])
			}
		}
	}
	if t.Fallback != nil {
		return checkGrid(t, "fallbacks", t.Fallback)
	}
	return nil
}

//go:embed tuning/*.json
var tuningFiles embed.FS

// tunings are the embedded tables, by device name.
var tunings = func() map[string]*Tuning {
	m := make(map[string]*Tuning)
	files, _ := tuningFiles.ReadDir("tuning")
	for _, f := range files {
		raw, err := tuningFiles.ReadFile(path.Join("tuning", f.Name()))
		if err != nil {
			panic(err)
		}
		t := new(Tuning)
		if err := json.Unmarshal(raw, t); err != nil {
			panic(fmt.Sprintf("topk: tuning/%s: %v", f.Name(), err))
		}
		if err := t.Check(); err != nil {
			panic(fmt.Sprintf("topk: tuning/%s: %v", f.Name(), err))
		}
		m[t.Device] = t
	}
	return m
}()

// ChoiceConfig is the configuration a Selector generates a chosen kernel
// with: kc with the choice's cluster size (0: one CTA per row) and, for a
// cluster kernel, its rounds signalled by mbarriers instead of
// barrier.cluster (gen.Config.MbarrierRounds: H100, 0.1-1.7 us faster in
// every measured cell up to 256K, about 2% slower on the 1M rows a
// cluster streams; perf notes 29, 36), the keep if chosen
// (gen.Config.KeepOver; gvrbench -tune measures these) and the sure set
// if chosen (gen.Config.SureSet).
func ChoiceConfig(kc gen.Config, cluster int, keep, sure bool) gen.Config {
	kc.Cluster = cluster
	kc.MbarrierRounds = cluster > 0
	kc.KeepOver = cluster > 0 && keep
	kc.SureSet = sure
	return kc
}

// TuningFor is the measured kernel choice gvr keeps for the GPU called
// name (runtime.Info.Name), or nil if it has none.
func TuningFor(name string) *Tuning { return tunings[strings.TrimSpace(name)] }

// Choice is the kernel a Selector picks for rows rows of at most n
// elements on the device info describes, with a prediction (the layer's
// previous step) or without (with one, the fallback where the device's
// Tuning measured it faster: Tuning.Fallback; a Selector with
// Config.AlwaysPredict takes the GVR kernel of the same shape): its name,
// and for a cluster kernel the
// cluster size (0 otherwise), whether it keeps which vectors of a long
// row's excess hold high elements, and whether it sets apart the
// candidates sure to be in the Top-K (ChoiceConfig).
func Choice(info runtime.Info, rows, n int, predicted bool) (kernel string, cluster int, keep, sure bool) {
	c := choose(step{rows: rows, n: n, predicted: predicted, device: deviceOf(info)})
	return c.name, c.cluster, c.keep, c.sure
}

// deviceOf is what choose needs to know of the device info describes.
func deviceOf(info runtime.Info) device {
	return device{tuning: TuningFor(info.Name), sms: info.SMs, clusters: info.Target.Has(ptx.FeatCluster)}
}
