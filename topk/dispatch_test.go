package topk

import (
	"math/rand/v2"
	"testing"

	"github.com/gvr-go/gvr/gen"
)

func TestChoose(t *testing.T) {
	tuned := &Tuning{Device: "Test GPU", Batches: []int{1, 8, 64}, Ns: []int{8192, 65536, 262144, 1 << 20},
		Cluster:  [][]int{{0, 8, 16, 16}, {0, 8, 8, 16}, {0, 0, 0, 8}},
		Keep:     [][]bool{{false, false, false, false}, {false, false, false, true}, {false, false, false, true}},
		Fallback: [][]bool{{false, false, false, false}, {true, true, false, false}, {false, false, false, true}}}
	if err := tuned.Check(); err != nil {
		t.Fatal(err)
	}
	h := device{tuning: tuned, sms: 132, clusters: true}
	other := device{sms: 132, clusters: true}
	old := device{sms: 108}
	for _, c := range []struct {
		s    step
		want choice
	}{
		// The table: the smallest batch and N at least as large.
		{step{rows: 1, n: 65536, predicted: true, device: h}, choice{kernelGVRCluster, 8, false, true, 0}},
		{step{rows: 1, n: 200000, predicted: true, device: h}, choice{kernelGVRCluster, 16, false, true, 0}},
		{step{rows: 1, n: 1 << 20, predicted: true, device: h}, choice{kernelGVRCluster, 16, false, false, 0}},
		{step{rows: 1, n: 1 << 22, predicted: true, device: h}, choice{kernelGVRCluster, 16, false, false, 0}},
		// The keep where the table has it, for the fallback twin too.
		{step{rows: 8, n: 1 << 20, predicted: true, device: h}, choice{kernelGVRCluster, 16, true, false, 0}},
		{step{rows: 64, n: 600000, device: h}, choice{kernelFallbackCluster, 8, true, false, 0}},
		{step{rows: 2, n: 262144, predicted: true, device: h}, choice{kernelGVRCluster, 8, false, false, 0}},
		{step{rows: 1, n: 4096, predicted: true, device: h}, choice{kernelGVR, 0, false, true, 0}},
		{step{rows: 64, n: 262144, predicted: true, device: h}, choice{kernelGVR, 0, false, false, 0}},
		{step{rows: 4096, n: 262144, predicted: true, device: h}, choice{kernelGVR, 0, false, false, 0}},
		// Where the table runs the fallback on predicted steps: the
		// fallback of the choice's shape, or with alwaysPredict the GVR one.
		{step{rows: 8, n: 8192, predicted: true, device: h}, choice{kernelFallback, 0, false, true, 0}},
		{step{rows: 8, n: 8192, predicted: true, alwaysPredict: true, device: h}, choice{kernelGVR, 0, false, true, 0}},
		{step{rows: 4, n: 65536, predicted: true, device: h}, choice{kernelFallbackCluster, 8, false, true, 0}},
		{step{rows: 4, n: 65536, predicted: true, alwaysPredict: true, device: h}, choice{kernelGVRCluster, 8, false, true, 0}},
		{step{rows: 64, n: 1 << 20, predicted: true, device: h}, choice{kernelFallbackCluster, 8, true, false, 0}},
		// No prediction: the fallback twins.
		{step{rows: 1, n: 65536, device: h}, choice{kernelFallbackCluster, 8, false, true, 0}},
		{step{rows: 64, n: 8192, device: h}, choice{kernelFallback, 0, false, true, 0}},
		// No table: the rule.
		{step{rows: 1, n: 65536, predicted: true, device: other}, choice{kernelGVRCluster, 8, false, true, 0}},
		{step{rows: 17, n: 65536, predicted: true, device: other}, choice{kernelGVR, 0, false, false, 0}},
		{step{rows: 1, n: 16384, predicted: true, device: other}, choice{kernelGVR, 0, false, true, 0}},
		// No clusters.
		{step{rows: 1, n: 1 << 20, predicted: true, device: old}, choice{kernelGVR, 0, false, false, 0}},
		{step{rows: 1, n: 1 << 20, device: old}, choice{kernelFallback, 0, false, false, 0}},
	} {
		if got := choose(c.s); got != c.want {
			t.Errorf("choose(%+v) = %v, want %v", c.s, got, c.want)
		}
	}
}

// TestChooseGroups: where the table shares rows among clusters
// (Tuning.Groups), the fallback cluster kernel does so on steps without a
// prediction and on predicted ones the table runs the fallback on; with
// AlwaysPredict a predicted step runs the GVR kernel, one cluster a row;
// and oneCluster (a batch whose clusters would not all be resident)
// takes the same kernel with one cluster a row.
func TestChooseGroups(t *testing.T) {
	tuned := &Tuning{Device: "Test GPU", Batches: []int{1, 8}, Ns: []int{65536, 1 << 20},
		Cluster:  [][]int{{8, 16}, {8, 16}},
		Fallback: [][]bool{{false, true}, {false, false}},
		Groups:   [][]int{{0, 4}, {0, 0}}}
	if err := tuned.Check(); err != nil {
		t.Fatal(err)
	}
	h := device{tuning: tuned, sms: 132, clusters: true}
	for _, c := range []struct {
		s    step
		want choice
	}{
		{step{rows: 1, n: 1 << 20, device: h}, choice{kernelFallbackCluster, 16, false, false, 4}},
		{step{rows: 1, n: 1 << 20, predicted: true, device: h}, choice{kernelFallbackCluster, 16, false, false, 4}},
		{step{rows: 1, n: 1 << 20, predicted: true, alwaysPredict: true, device: h}, choice{kernelGVRCluster, 16, false, false, 0}},
		{step{rows: 1, n: 1 << 20, device: h, oneCluster: true}, choice{kernelFallbackCluster, 16, false, false, 0}},
		{step{rows: 1, n: 65536, device: h}, choice{kernelFallbackCluster, 8, false, true, 0}},
		{step{rows: 8, n: 1 << 20, device: h}, choice{kernelFallbackCluster, 16, false, false, 0}},
	} {
		if got := choose(c.s); got != c.want {
			t.Errorf("choose(%+v) = %v, want %v", c.s, got, c.want)
		}
	}
}

// TestSureSetRule: the sure set for rows of at most gen.SureSetMaxRow
// elements in one CTA, and where a cluster CTA's part of the row is at
// most gen.SureSetMaxShare elements (gen.SureSetMaxShareSmall in clusters
// of 2-7); not past them.
func TestSureSetRule(t *testing.T) {
	for _, c := range []struct {
		n, cluster int
		want       bool
	}{{1, 0, true}, {8192, 0, true}, {32768, 0, true}, {32769, 0, false}, {65536, 0, false},
		{131072, 8, true}, {131073, 8, false}, {262144, 16, true}, {262145, 16, false},
		{65536, 2, true}, {65537, 2, false}, {131072, 4, true}, {131073, 4, false}, {229376, 7, true},
		{229377, 7, false}, {1 << 20, 16, false}} {
		if got := SureSet(c.n, c.cluster); got != c.want {
			t.Errorf("SureSet(%d, %d) = %v, want %v", c.n, c.cluster, got, c.want)
		}
	}
}

// TestTunings: every table kept in tuning/ is well formed (they are checked
// when the package loads, which panics otherwise) and names a GPU.
func TestTunings(t *testing.T) {
	if len(tunings) == 0 {
		t.Fatal("no tuning tables embedded")
	}
	for name, tu := range tunings {
		if err := tu.Check(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := []*Tuning{
		{Device: "x", Batches: []int{8, 1}, Ns: []int{1}, Cluster: [][]int{{0}, {0}}},
		{Device: "x", Batches: []int{1}, Ns: []int{1, 2}, Cluster: [][]int{{0}}},
		{Device: "x", Batches: []int{1}, Ns: []int{1}, Cluster: [][]int{{17}}},
		{Batches: []int{1}, Ns: []int{1}, Cluster: [][]int{{0}}},
		{Device: "x", Batches: []int{1}, Ns: []int{1}, Cluster: [][]int{{0}}, Keep: [][]bool{{true}}},
		{Device: "x", Batches: []int{1}, Ns: []int{1, 2}, Cluster: [][]int{{8, 8}}, Keep: [][]bool{{true}}},
		{Device: "x", Batches: []int{1, 2}, Ns: []int{1}, Cluster: [][]int{{8}, {8}}, Keep: [][]bool{{true}}},
		{Device: "x", Batches: []int{1}, Ns: []int{1, 2}, Cluster: [][]int{{8, 8}}, Fallback: [][]bool{{true}}},
		{Device: "x", Batches: []int{1, 2}, Ns: []int{1}, Cluster: [][]int{{8}, {8}}, Fallback: [][]bool{{true}}},
		{Device: "x", Batches: []int{1}, Ns: []int{1, 2}, Cluster: [][]int{{8, 8}}, Groups: [][]int{{4}}},
		{Device: "x", Batches: []int{1}, Ns: []int{1}, Cluster: [][]int{{0}}, Groups: [][]int{{4}}},
		{Device: "x", Batches: []int{1}, Ns: []int{1}, Cluster: [][]int{{8}}, Keep: [][]bool{{true}}, Groups: [][]int{{4}}},
		{Device: "x", Batches: []int{1}, Ns: []int{1}, Cluster: [][]int{{8}}, Groups: [][]int{{9}}},
	}
	for _, tu := range bad {
		if tu.Check() == nil {
			t.Errorf("Check(%+v) = nil, want an error", tu)
		}
	}
}

// TestChoicesCover: every step a Selector may take (rows up to its
// MaxRows, any length, with or without a prediction, rows shared or not)
// picks a kernel choicesFor names, so NewSelector loads it up front (one
// it did not would run as one CTA a row). Checked at every table batch
// and length, the sure set's limits a part and one past each, and random
// lengths, on each kept table and on the rule. (Lengths at powers of two
// alone missed the H100 table's clusters of 6 at batch 16 on rows of
// 64K-96K, which take the sure set: 16K elements a CTA or fewer.)
func TestChoicesCover(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 33))
	devs := map[string]device{"rule": {sms: 132, clusters: true}, "none": {sms: 132}}
	for name, tu := range tunings {
		devs[name] = device{tuning: tu, sms: 132, clusters: true}
	}
	for name, d := range devs {
		for _, maxRows := range []int{1, 7, 64} {
			for _, always := range []bool{false, true} {
				cs, _ := choicesFor(d, maxRows, always)
				have := map[choice]bool{}
				for _, c := range cs {
					have[c] = true
				}
				var ns []int
				for parts := 1; parts <= 16*gen.MaxGroups; parts++ {
					for _, share := range []int{gen.SureSetMaxShare, gen.SureSetMaxShareSmall} {
						ns = append(ns, parts*share, parts*share+1)
					}
				}
				for range 2000 {
					ns = append(ns, 1+r.IntN(1<<22))
				}
				if d.tuning != nil {
					for _, n := range d.tuning.Ns {
						ns = append(ns, n-1, n, n+1)
					}
				}
				for rows := 1; rows <= maxRows; rows++ {
					for _, n := range ns {
						for _, p := range []bool{true, false} {
							for _, one := range []bool{false, true} {
								s := step{rows: rows, n: n, predicted: p, alwaysPredict: always, device: d, oneCluster: one}
								if c := choose(s); !have[c] {
									t.Fatalf("%s, MaxRows %d, AlwaysPredict %v: %d rows of %d (predicted %v, one cluster %v) choose %v, which choicesFor leaves out",
										name, maxRows, always, rows, n, p, one, c)
								}
							}
						}
					}
				}
			}
		}
	}
}
