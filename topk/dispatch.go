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
	// oneCluster keeps each row in one cluster where the tuning shares
	// it among several (Tuning.Groups): a Selector's choice where the
	// batch's clusters would not all be resident at once.
	oneCluster bool
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
// (gen.Config.KeepOver), whether it sets apart the candidates its first
// pass shows to be in the Top-K (gen.Config.SureSet), and how many
// clusters share each row (gen.Config.Groups; 0: one).
type choice struct {
	name    string
	cluster int
	keep    bool
	sure    bool
	groups  int
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
// model), or for a GPU without one from defaultCluster; and from the
// Tuning too, where a row is long enough, whether several clusters share
// it (Tuning.Groups: the fallback only, on steps the table runs it on).
func choose(s step) choice {
	c, keep, fallback, groups := 0, false, false, 0
	if s.device.clusters {
		if t := s.device.tuning; t != nil {
			c, keep, fallback, groups = t.choice(s.rows, s.n)
			if s.oneCluster {
				groups = 0
			}
		} else {
			c = defaultCluster(s)
		}
	}
	predict := s.predicted && (!fallback || s.alwaysPredict)
	sure := SureSet(s.n, c)
	switch {
	case c > 0 && groups > 1 && !predict:
		// Only the fallback shares a row (the table takes it on
		// predicted steps where it beat the GVR kernels: Fallback).
		return choice{kernelFallbackCluster, c, false, false, groups}
	case c > 0 && predict:
		return choice{kernelGVRCluster, c, keep, sure, 0}
	case c > 0:
		return choice{kernelFallbackCluster, c, keep, sure, 0}
	case predict:
		return choice{kernelGVR, 0, false, sure, 0}
	}
	return choice{kernelFallback, 0, false, sure, 0}
}

// choicesFor is every kernel choose may pick on device d for steps of up
// to maxRows rows (with alwaysPredict as a Selector's Config has it): the
// single-CTA pair, and the kernels (cluster sizes, the keep, the sure set)
// d's tuning (or rule) picks for any length, rows shared by clusters or
// not; and groupRows, the most rows a choice shares rows at (0: none).
// choose is constant between the points where one of its inputs flips (a
// table's batches and lengths, the sure set's limits, the rule's), so the
// steps at each such point and one past it meet every choice: a choice
// left out would run as one CTA a row (Selector.Select).
func choicesFor(d device, maxRows int, alwaysPredict bool) (out []choice, groupRows int) {
	out = []choice{{kernelGVR, 0, false, false, 0}, {kernelFallback, 0, false, false, 0}}
	seen := map[choice]bool{out[0]: true, out[1]: true}
	var rowsAt, nAt []int
	for v := 1; v <= 1<<30; v *= 2 {
		rowsAt, nAt = append(rowsAt, v), append(nAt, v)
	}
	rowsAt = append(rowsAt, maxRows, d.sms/8, d.sms/8+1)
	nAt = append(nAt, gen.SureSetMaxRow, gen.SureSetMaxRow+1)
	for parts := 1; parts <= 16*gen.MaxGroups; parts++ {
		for _, share := range []int{gen.SureSetMaxShare, gen.SureSetMaxShareSmall} {
			nAt = append(nAt, parts*share, parts*share+1)
		}
	}
	if t := d.tuning; t != nil {
		for _, b := range t.Batches {
			rowsAt = append(rowsAt, b, b+1)
		}
		for _, n := range t.Ns {
			nAt = append(nAt, n, n+1)
		}
	}
	slices.Sort(rowsAt)
	slices.Sort(nAt)
	for _, rows := range slices.Compact(rowsAt) {
		if rows < 1 || rows > maxRows {
			continue
		}
		for _, n := range slices.Compact(nAt) {
			for _, p := range []bool{true, false} {
				for _, one := range []bool{false, true} {
					c := choose(step{rows: rows, n: n, predicted: p, alwaysPredict: alwaysPredict, device: d, oneCluster: one})
					if !seen[c] {
						seen[c] = true
						out = append(out, c)
					}
					if c.groups > 1 {
						groupRows = max(groupRows, rows)
					}
				}
			}
		}
	}
	return out, groupRows
}

// SureSet is the rule for gen.Config.SureSet, for rows of n elements
// over clusters of c CTAs (0: one CTA per row): rows of at most
// gen.SureSetMaxRow elements in one CTA, and in a cluster where each
// CTA's part is at most gen.SureSetMaxShare elements
// (gen.SureSetMaxShareSmall in clusters of fewer than
// gen.SureSetSmallCluster CTAs, perf notes 212). On an H100 the sure
// set took 0.4-0.7 us off Phase 4 everywhere, and cost the first pass and
// Phase 3 more the more elements each CTA walks, in shared memory more
// than in global memory: one CTA -2 to -6% from 8K to 32K and about
// nothing at 64K; clusters -1 to -3% at 64K over 8 CTAs, +1 to +5% from
// 16K elements a CTA on (perf notes 91). Since each cluster CTA writes its
// own sure candidates out (95), 16K elements a CTA pays too (-2 to -4%
// cold, -3 to -6% graph-replayed), 32K not (perf notes 101); after
// 179-202, 32K pays in clusters of 2-7 (-1 to -5% cold, -1 to -8%
// graph-replayed) and not in clusters of 8 or 16 (perf notes 212).
func SureSet(n, c int) bool {
	switch {
	case c <= 1:
		return n <= gen.SureSetMaxRow
	case c < gen.SureSetSmallCluster:
		return (n+c-1)/c <= gen.SureSetMaxShareSmall
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
// (gvrbench's tuneMargin), a cluster only where it is no slower than one
// CTA a row in either mode, without the keep where both are, and with the
// prediction unless the fallback of the same shape is faster in both
// modes, by more than the margin in one; each timed as the selector runs
// it, with the sure set where SureSet's rule takes it.
type Tuning struct {
	Device   string   `json:"device"`  // the GPU's name as the driver reports it
	Command  string   `json:"command"` // the gvrbench command that measured it
	Date     string   `json:"date"`
	Batches  []int    `json:"batches"` // ascending
	Ns       []int    `json:"ns"`      // ascending
	Cluster  [][]int  `json:"cluster"`
	Keep     [][]bool `json:"keep,omitempty"`     // nil: no keep anywhere
	Fallback [][]bool `json:"fallback,omitempty"` // nil: the prediction everywhere
	// Groups[i][j] (if Groups is there), where above 1, is how many
	// clusters of Cluster[i][j] CTAs share each row: the fallback cluster
	// kernel with gen.Config.Groups, on every step (it has no GVR twin).
	Groups   [][]int     `json:"groups,omitempty"`
	MedianUS [][]float64 `json:"median_us"`
}

// choice is the measured choice for rows rows of n elements: that of the
// smallest measured batch and row length at least as large (the largest
// where none is).
func (t *Tuning) choice(rows, n int) (c int, keep, fallback bool, groups int) {
	i, _ := slices.BinarySearch(t.Batches, rows)
	j, _ := slices.BinarySearch(t.Ns, n)
	i, j = min(i, len(t.Batches)-1), min(j, len(t.Ns)-1)
	if t.Groups != nil {
		groups = t.Groups[i][j]
	}
	return t.Cluster[i][j], t.Keep != nil && t.Keep[i][j], t.Fallback != nil && t.Fallback[i][j], groups
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
		if err := checkGrid(t, "fallbacks", t.Fallback); err != nil {
			return err
		}
	}
	if t.Groups != nil {
		if err := checkGrid(t, "groups", t.Groups); err != nil {
			return err
		}
	}
	for i, row := range t.Groups {
		for j, g := range row {
			if g < 0 || g > gen.MaxGroups || g > 1 && (t.Cluster[i][j] < 2 || t.Keep != nil && t.Keep[i][j]) {
				return fmt.Errorf("tuning for %s: batch %d, N %d: %d clusters a row, of %d CTAs (rows shared by 2 to %d clusters of at least 2, without the keep)",
					t.Device, t.Batches[i], t.Ns[j], g, t.Cluster[i][j], gen.MaxGroups)
			}
		}
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
		t, err := ParseTuning(raw)
		if err != nil {
			panic(fmt.Sprintf("topk: tuning/%s: %v", f.Name(), err))
		}
		m[t.Device] = t
	}
	return m
}()

// ParseTuning decodes a table as topk/tuning/*.json holds it (gvrbench
// -tune writes one) and checks it (Tuning.Check).
func ParseTuning(raw []byte) (*Tuning, error) {
	t := new(Tuning)
	if err := json.Unmarshal(raw, t); err != nil {
		return nil, err
	}
	if err := t.Check(); err != nil {
		return nil, err
	}
	return t, nil
}

// ChoiceConfig is the configuration a Selector generates a chosen kernel
// with: kc with the choice's cluster size (0: one CTA per row) and, for a
// cluster kernel, its rounds signalled by mbarriers instead of
// barrier.cluster (gen.Config.MbarrierRounds: H100, 0.1-1.7 us faster in
// every measured cell up to 256K, about 2% slower on the 1M rows a
// cluster streams; perf notes 29, 36), the keep if chosen
// (gen.Config.KeepOver; gvrbench -tune measures these) and the sure set
// if chosen (gen.Config.SureSet), and the clusters that share a row
// (gen.Config.Groups; 0 or 1: one).
func ChoiceConfig(kc gen.Config, cluster int, keep, sure bool, groups int) gen.Config {
	kc.Cluster = cluster
	kc.MbarrierRounds = cluster > 0
	kc.KeepOver = cluster > 0 && keep
	kc.SureSet = sure
	kc.Groups = 0
	if cluster > 1 && groups > 1 {
		kc.Groups = groups
	}
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
// row's excess hold high elements, whether it sets apart the candidates
// sure to be in the Top-K, and how many clusters share each row
// (ChoiceConfig). A Selector runs a row shared by several clusters only
// where the batch's clusters are all resident at once (else the same
// kernel with one cluster a row).
func Choice(info runtime.Info, rows, n int, predicted bool) (kernel string, cluster int, keep, sure bool, groups int) {
	c := choose(step{rows: rows, n: n, predicted: predicted, device: deviceOf(info)})
	return c.name, c.cluster, c.keep, c.sure, c.groups
}

// deviceOf is what choose needs to know of the device info describes.
func deviceOf(info runtime.Info) device {
	return device{tuning: TuningFor(info.Name), sms: info.SMs, clusters: info.Target.Has(ptx.FeatCluster)}
}
