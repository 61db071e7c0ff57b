//go:build cuda

package topk

import (
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/runtime"
)

var (
	maxCluster  = flag.Int("gvr.max-cluster", 16, "TestClusterKernels, TestAdversarialGroups: the largest cluster size to run")
	groupsBatch = flag.Int("gvr.groups-batch", 4, "TestAdversarialGroups: the most rows a launch takes (fewer where their clusters would not all be resident)")
	groupsMaxN  = flag.Int("gvr.groups-max-n", 0, "TestAdversarialGroups: leave out rows longer than this (0: none left out)")
)

// TestClusterKernels runs the cluster building blocks on the GPU, one row
// per cluster of C = 1 to 16 CTAs: cluster_count_ge against a count in Go
// (rows of every length from 0 up, unaligned, with NaN, Inf and ties, some
// longer than the cluster holds), and cluster_read's per-CTA slices.
func TestClusterKernels(t *testing.T) {
	d := gpu(t)
	if d.Info().Major < 9 {
		t.Skipf("%v has no thread-block clusters", d)
	}
	rng := rand.New(rand.NewPCG(10, 10))
	const stride, maxN = 70001, 32768 // an odd stride: rows start at every alignment
	lens := []int{0, 1, 3, 4, 5, 17, 1000, 4097, 32767, maxN, maxN + 777, stride}
	rows := len(lens)
	x := make([]float32, rows*stride)
	for r, n := range lens {
		copy(x[r*stride:], scoresRow(rng, n))
	}
	thr := make([]float32, rows)
	for r := range thr {
		thr[r] = float32(rng.NormFloat64())
	}
	thr[1], thr[2] = float32(math.Inf(-1)), float32(math.NaN())
	scores, lengths, thresholds := alloc(t, d, 4*len(x)), alloc(t, d, 4*rows), alloc(t, d, 4*rows)
	counts, held := alloc(t, d, 4*rows), alloc(t, d, 4*16*rows)
	must(t, runtime.Upload(scores, x))
	l32 := make([]int32, rows)
	for r, n := range lens {
		l32[r] = int32(n)
	}
	must(t, runtime.Upload(lengths, l32))
	must(t, runtime.Upload(thresholds, thr))
	want := make([]uint32, rows)
	for r, n := range lens {
		for _, v := range x[r*stride : r*stride+n] {
			if !(v < thr[r]) { // >= or unordered
				want[r]++
			}
		}
	}
	for _, C := range []int{1, 2, 3, 4, 5, 6, 8, 16} {
		if C > *maxCluster {
			t.Logf("clusters of %d: not run (-gvr.max-cluster=%d)", C, *maxCluster)
			continue
		}
		t.Run(fmt.Sprintf("C=%d", C), func(t *testing.T) {
			cfg := gen.DefaultConfig()
			cfg.BlockSize, cfg.Target, cfg.Cluster, cfg.MaxN = 256, d.Info().Target, C, maxN
			k, err := Kernel(d, "cluster_count_ge", cfg)
			must(t, err)
			must(t, counts.Memset32(nil, 0xFFFFFFFF))
			args := k.Args().Set("scores", scores.Ptr()).Set("row_stride", stride).Set("lengths", lengths.Ptr()).
				Set("thresholds", thresholds.Ptr()).Set("counts", counts.Ptr())
			must(t, k.Launch(nil, rows*C, args))
			must(t, d.Synchronize())
			got := make([]uint32, rows)
			must(t, runtime.Download(got, counts))
			for r := range rows {
				if got[r] != want[r] {
					t.Errorf("cluster_count_ge: row %d (n = %d, threshold %v): count %d, want %d", r, lens[r], thr[r], got[r], want[r])
				}
			}

			rk, err := Kernel(d, "cluster_read", cfg)
			must(t, err)
			must(t, held.Memset32(nil, 0xFFFFFFFF))
			must(t, rk.Launch(nil, rows*C, rk.Args().Set("scores", scores.Ptr()).Set("row_stride", stride).
				Set("lengths", lengths.Ptr()).Set("held", held.Ptr())))
			must(t, d.Synchronize())
			h := make([]int32, rows*C)
			must(t, runtime.Download(h, held))
			capacity := (maxN + C - 1) / C
			capacity = (capacity + 3) / 4 * 4
			for r, n := range lens {
				chunk := (n + 4*C - 1) / (4 * C) * 4
				for rank := range C {
					w := min(chunk, max(0, n-rank*chunk), capacity)
					if h[r*C+rank] != int32(w) {
						t.Errorf("cluster_read: row %d (n = %d), CTA %d holds %d elements, want %d", r, n, rank, h[r*C+rank], w)
					}
				}
			}
			t.Logf("clusters of %d: %d resident at once (cluster_count_ge), %d (cluster_read)", C, k.MaxActiveClusters, rk.MaxActiveClusters)
		})
	}
}

// TestAdversarialCluster runs gvr_topk_cluster (every prediction mode) and
// topk_fallback_cluster on the adversarial suite's generators and shapes,
// one row per cluster of C = 1 to 16 CTAs, with rows that fit the
// cluster's shared memory and rows longer than MaxN (their excess read
// from global memory), with the rounds signalled by barrier.cluster and by
// mbarriers (MbarrierRounds), and checks each row against Reference.
func TestAdversarialCluster(t *testing.T) {
	d := gpu(t)
	if d.Info().Major < 9 {
		t.Skipf("%v has no thread-block clusters", d)
	}
	base := gen.DefaultConfig()
	base.Target = d.Info().Target
	type clusterCase struct {
		C, maxN int
		edit    func(*gen.Config)
	}
	cases := []clusterCase{{C: 1}, {C: 2}, {C: 4}, {C: 8}, {C: 16}, {C: 8, maxN: 32768}, {C: 2, maxN: 20000},
		{C: 4, edit: func(c *gen.Config) { c.K, c.MaxCandidates, c.BlockSize, c.Bins = 16, 1024, 128, 256 }},
		{C: 8, edit: func(c *gen.Config) { c.Sorted = true }}}
	mbar := func(c *gen.Config) { c.MbarrierRounds = true }
	cases = append(cases, clusterCase{C: 2, edit: mbar}, clusterCase{C: 8, edit: mbar}, clusterCase{C: 16, edit: mbar},
		clusterCase{C: 8, maxN: 32768, edit: mbar},
		clusterCase{C: 4, edit: func(c *gen.Config) { mbar(c); c.K, c.MaxCandidates, c.BlockSize, c.Bins = 16, 1024, 128, 256 }})
	// KeepOver: rows past MaxN keep which vectors of their excess hold
	// high elements (eight slots a thread at the defaults, four at 128
	// threads and 256 bins), with and without mbarrier rounds.
	keep := func(c *gen.Config) { c.KeepOver = true }
	cases = append(cases, clusterCase{C: 8, maxN: 32768, edit: func(c *gen.Config) { mbar(c); keep(c) }},
		clusterCase{C: 2, maxN: 20000, edit: keep},
		clusterCase{C: 16, maxN: 65536, edit: func(c *gen.Config) { mbar(c); keep(c) }},
		clusterCase{C: 4, maxN: 8192, edit: func(c *gen.Config) {
			mbar(c)
			keep(c)
			c.K, c.MaxCandidates, c.BlockSize, c.Bins = 16, 1024, 128, 256
		}})
	// SureSet: the candidates sure to be in the Top-K set apart, in
	// clusters that hold the row and ones that stream it, with the keep.
	sure := func(c *gen.Config) { mbar(c); c.SureSet = true }
	cases = append(cases, clusterCase{C: 8, edit: sure}, clusterCase{C: 2, edit: func(c *gen.Config) { c.SureSet = true }},
		clusterCase{C: 16, maxN: 65536, edit: func(c *gen.Config) { sure(c); keep(c) }})
	// Sizes that are not powers of two, as the H100's table picks them at
	// batches 16 and 32 (perf notes 192).
	cases = append(cases, clusterCase{C: 3, edit: sure}, clusterCase{C: 5, edit: sure},
		clusterCase{C: 6, maxN: 32768, edit: func(c *gen.Config) { mbar(c); keep(c) }})
	for _, cc := range cases {
		cfg := base
		cfg.Cluster, cfg.MaxN = cc.C, cc.maxN
		if cc.edit != nil {
			cc.edit(&cfg)
		}
		if cc.C > *maxCluster {
			t.Logf("clusters of %d: not run (-gvr.max-cluster=%d)", cc.C, *maxCluster)
			continue
		}
		t.Run(fmt.Sprintf("C=%d/MaxN=%d/K=%d/sorted=%v/mbarrier=%v/keep=%v/sure=%v", cc.C, cfg.MaxN, cfg.K, cfg.Sorted, cfg.MbarrierRounds, cfg.KeepOver, cfg.SureSet), func(t *testing.T) {
			single := cfg
			single.Cluster, single.MaxN, single.MbarrierRounds, single.KeepOver, single.SureSet = 0, 0, false, false, false
			var ks [3]*runtime.Kernel
			var err error
			if ks[0], err = Kernel(d, "topk_radix", single); err != nil {
				t.Fatal(err)
			}
			for i, name := range []string{"topk_fallback_cluster", "gvr_topk_cluster"} {
				if ks[i+1], err = Kernel(d, name, cfg); err != nil {
					t.Fatal(err)
				}
			}
			rows := 0
			for _, sh := range shapes(cfg.K, cfg.MaxCandidates, 8) {
				for gi, g := range generators {
					rows += runCase(t, ks, cfg, sh, g, uint64(1000*gi+len(sh.lengths)))
				}
			}
			t.Logf("%v: %d rows checked, %d clusters resident at once", cfg, rows, ks[2].MaxActiveClusters)
		})
	}
}

// TestAdversarialGroups: topk_fallback_cluster with each row shared by
// Groups clusters (gen.Config.Groups: counts combined through a workspace
// in global memory, launched cooperatively) is exact on the adversarial
// rows, from empty rows to rows past what the clusters hold, at every
// cluster size, with and without mbarrier rounds, in batches as large as
// stay resident, launch after launch on one workspace (each launch's
// rounds tagged with the row's generation). A plain launch, or a grid
// that cuts a row's clusters short, is refused before anything runs
// (either would never end).
func TestAdversarialGroups(t *testing.T) {
	d := gpu(t)
	if d.Info().Major < 9 {
		t.Skipf("%v has no thread-block clusters", d)
	}
	base := gen.DefaultConfig()
	base.Target = d.Info().Target
	for _, cc := range []struct {
		C, G, maxN int
		mbar       bool
	}{{2, 2, 0, false}, {4, 4, 0, true}, {8, 2, 0, true}, {8, 8, 0, true}, {16, 4, 0, true}, {16, 2, 65536, true}, {2, 3, 20000, false}} {
		if cc.C > *maxCluster {
			t.Logf("clusters of %d: not run (-gvr.max-cluster=%d)", cc.C, *maxCluster)
			continue
		}
		cfg := base
		cfg.Cluster, cfg.Groups, cfg.MaxN, cfg.MbarrierRounds = cc.C, cc.G, cc.maxN, cc.mbar
		t.Run(fmt.Sprintf("C=%d/G=%d/MaxN=%d/mbarrier=%v", cc.C, cc.G, cc.maxN, cc.mbar), func(t *testing.T) {
			k, err := Kernel(d, "topk_fallback_cluster", cfg)
			must(t, err)
			batch := min(max(1, *groupsBatch), k.MaxActiveClusters/cc.G)
			if batch < 1 {
				t.Skipf("%d clusters of %d are not resident at once here (%d are)", cc.G, cc.C, k.MaxActiveClusters)
			}
			K := cfg.K
			work := alloc(t, d, batch*gen.GroupWorkspaceBytes(cfg))
			must(t, work.Memset32(nil, 0))
			if got := k.Contract.Cooperative; got != cc.C*cc.G {
				t.Fatalf("the contract's Cooperative is %d, want %d", got, cc.C*cc.G)
			}
			refused(t, k, work, cc.C, cc.G)
			if cc.C == 2 && cc.G == 2 {
				// The same kernel loaded from its text alone: the contract
				// read there is cooperative too (the text's comment line),
				// and refused the same way.
				gk, err := gen.Generate("topk_fallback_cluster", cfg)
				must(t, err)
				pk, err := d.LoadPTX(ptx.Text(gk.Module), gk.Name, gk.Launch.SharedBytes)
				must(t, err)
				if got := pk.Contract.Cooperative; got != cc.C*cc.G {
					t.Fatalf("the contract from the text alone: Cooperative %d, want %d", got, cc.C*cc.G)
				}
				refused(t, pk, work, cc.C, cc.G)
			}
			lengths := []int{0, 1, K - 1, K, K + 1, 3*cc.C*cc.G + 1, 5000, 65537, 300001}
			if *groupsMaxN > 0 {
				lengths = slices.DeleteFunc(lengths, func(n int) bool { return n > *groupsMaxN })
			}
			rng := rand.New(rand.NewPCG(uint64(cc.C), uint64(cc.G)))
			checked := 0
			for _, g := range generators {
				for first := 0; first < len(lengths); first += batch {
					ls := lengths[first:min(first+batch, len(lengths))]
					rows, stride := len(ls), slices.Max(ls)|1
					host := make([]float32, 1+rows*stride) // one float in: rows at every alignment
					for i := range host {
						host[i] = float32(math.NaN()) // past a row's length: never chosen
					}
					x := make([][]float32, rows)
					l32 := make([]int32, rows)
					for r, n := range ls {
						x[r] = g.gen(n, K, cfg.MaxCandidates, rng)
						copy(host[1+r*stride:], x[r])
						l32[r] = int32(n)
					}
					scores := alloc(t, d, 4*len(host))
					must(t, runtime.Upload(scores, host))
					view, err := scores.View(4, 4*rows*stride)
					must(t, err)
					lens, idxBuf, valBuf := alloc(t, d, 4*rows), alloc(t, d, 4*rows*K), alloc(t, d, 4*rows*K)
					must(t, runtime.Upload(lens, l32))
					args := k.Args().Set("scores", view.Ptr()).Set("row_stride", uint64(stride)).Set("lengths", lens.Ptr()).
						Set("out_idx", idxBuf.Ptr()).Set("out_vals", valBuf.Ptr()).Set("next_n", 0).Set("row_starts", 0).Set("abs_idx", 0).
						Set("out_count", 0).Set("page_table", 0).Set("page_table_stride", 0).Set("page_size", 0).Set("out_pages", 0).
						Set("workspace", work.Ptr())
					must(t, k.LaunchCooperative(nil, rows*cc.C*cc.G, args, false))
					must(t, d.Synchronize())
					idx, vals := make([]int32, rows*K), make([]float32, rows*K)
					must(t, runtime.Download(idx, idxBuf))
					must(t, runtime.Download(vals, valBuf))
					for r := range rows {
						want, _ := Reference(x[r], K, false)
						if err := checkRow(x[r], want, idx[r*K:(r+1)*K], vals[r*K:(r+1)*K], false); err != nil {
							t.Fatalf("%s row of %d: %v", g.name, ls[r], err)
						}
						checked++
					}
				}
			}
			t.Logf("%v: %d rows checked in batches of %d, %d clusters resident at once", cfg, checked, batch, k.MaxActiveClusters)
		})
	}
}

// TestSelectorChoice runs a Selector's steps over batch sizes and row
// lengths where the device's tuning picks one CTA per row and where it
// picks clusters of each size, with the keep and without: every step runs
// the kernel Choice names (Result.Kernel, Result.Cluster, Result.KeepOver),
// first without a prediction, then with
// the layer's previous step, and every row is exact. With
// Config.AlwaysPredict the predicted step runs the GVR kernel of the same
// shape (where the tuning runs the fallback on predicted rows too, the
// fallback's shape: Tuning.Fallback). Rows of 81920 at batch 16 take the
// H100 table's clusters of 6 with the sure set, a kernel NewSelector did
// not load up front when it stepped lengths at powers of two only (the
// step then ran one CTA a row; choicesFor). Rows of 12000 take the
// tables' 16K column (clusters of 8 at batches 1-12 since perf notes 210
// and 211).
func TestSelectorChoice(t *testing.T) {
	d := gpu(t)
	const maxRows = 16
	seen := map[string]bool{}
	for _, always := range []bool{false, true} {
		sel, err := NewSelector(Config{MaxRows: maxRows, Layers: 1, Values: true, AlwaysPredict: always, Device: d})
		must(t, err)
		k := sel.Config().K
		rng := rand.New(rand.NewPCG(4, 4))
		for _, rows := range []int{1, 2, 8, 16} {
			for _, n := range []int{8192, 12000, 40000, 65536, 81920, 131075, 262144, 600000, 1048573} {
				if n > 600000 && rows > 2 {
					continue // rows that clusters share, at batches 1-2 only
				}
				x := make([][]float32, rows)
				host := make([]float32, rows*n)
				lengths := make([]int32, rows)
				for r := range rows {
					x[r] = scoresRow(rng, n-r)
					copy(host[r*n:], x[r])
					lengths[r] = int32(len(x[r]))
				}
				scores := alloc(t, d, 4*len(host))
				must(t, runtime.Upload(scores, host))
				must(t, sel.Reset())
				for step := range 2 {
					res, err := sel.Select(0, Batch{Scores: scores, Stride: n, Rows: rows, Lengths: lengths}, nil)
					must(t, err)
					name, c, keep, sure, groups := Choice(d.Info(), rows, n, step == 1)
					if always && step == 1 {
						name = strings.Replace(name, "topk_fallback", "gvr_topk", 1)
						if groups > 1 { // the GVR kernel of that cluster size, one cluster a row
							groups, keep, sure = 0, false, SureSet(n, c)
						}
					}
					if res.Kernel != name || res.Cluster != c || res.KeepOver != keep || res.SureSet != sure || res.Groups != groups {
						t.Errorf("always predict %v, rows %d, N %d, step %d: ran %s (cluster %d, keep %v, sure set %v, groups %d), Choice says %s (cluster %d, keep %v, sure set %v, groups %d)",
							always, rows, n, step, res.Kernel, res.Cluster, res.KeepOver, res.SureSet, res.Groups, name, c, keep, sure, groups)
					}
					if res.Predicted != strings.HasPrefix(res.Kernel, "gvr_topk") {
						t.Errorf("rows %d, N %d, step %d: %s ran, Predicted = %v", rows, n, step, res.Kernel, res.Predicted)
					}
					ran := fmt.Sprintf("%s/%d", res.Kernel, res.Cluster)
					if res.KeepOver {
						ran += "+keep"
					}
					if res.SureSet {
						ran += "+sure"
					}
					if res.Groups > 1 {
						ran += fmt.Sprintf("x%d", res.Groups)
					}
					seen[ran] = true
					idx, vals := readResult(t, res)
					for r := range rows {
						want, _ := Reference(x[r], k, false)
						if err := checkRow(x[r], want, idx[r*k:(r+1)*k], vals[r*k:(r+1)*k], false); err != nil {
							t.Fatalf("always predict %v, rows %d, N %d, step %d (%s, cluster %d): row %d: %v", always, rows, n, step, res.Kernel, res.Cluster, r, err)
						}
					}
				}
				must(t, scores.Free())
			}
		}
		must(t, sel.Close())
	}
	t.Logf("%s: kernels run: %v", d.Info().Name, slices.Sorted(maps.Keys(seen)))
	if d.Info().Major >= 9 && !seen["gvr_topk_cluster/8"] && !seen["gvr_topk_cluster/16"] {
		t.Errorf("no step ran a cluster kernel: %v", seen)
	}
}

// TestSelectNextN: speculative decoding rows (Batch.NextN) through a
// Selector with Counts: each sequence's NextN rows select among their
// causal lengths, lengths[r/NextN] - NextN + 1 + r%NextN, computed on the
// device from the sequences' lengths (host, then device), each row exact
// with its own prediction, and Result.Counts holds min(K, n); bad NextN
// batches are refused before any launch.
func TestSelectNextN(t *testing.T) {
	d := gpu(t)
	const nextN, stride = 3, 70001
	seqLens := []int32{stride, 5000, 2050, 1, 0}
	rows := nextN * len(seqLens)
	sel, err := NewSelector(Config{MaxRows: rows, Values: true, Counts: true, Device: d})
	must(t, err)
	defer sel.Close()
	k := sel.Config().K
	rng := rand.New(rand.NewPCG(7, 8))
	scores := alloc(t, d, 4*rows*stride)
	devLens := alloc(t, d, 4*len(seqLens))
	must(t, runtime.Upload(devLens, seqLens))
	for step := range 3 {
		host, x := nextNRows(rng, seqLens, nextN, stride)
		must(t, runtime.Upload(scores, host))
		b := Batch{Scores: scores, Stride: stride, Rows: rows, NextN: nextN, Lengths: seqLens}
		if step == 2 {
			b.Lengths, b.DeviceLengths = nil, devLens
		}
		res, err := sel.Select(0, b, nil)
		must(t, err)
		idx, vals := readResult(t, res)
		counts, err := res.ReadCounts()
		must(t, err)
		for r := range rows {
			want, _ := Reference(x[r], k, false)
			if err := checkRow(x[r], want, idx[r*k:(r+1)*k], vals[r*k:(r+1)*k], false); err != nil {
				t.Errorf("step %d (%s, cluster %d), row %d (n = %d): %v", step, res.Kernel, res.Cluster, r, len(x[r]), err)
			}
			if int(counts[r]) != min(k, len(x[r])) {
				t.Errorf("step %d, row %d: count %d, want %d", step, r, counts[r], min(k, len(x[r])))
			}
		}
		t.Logf("step %d: %s, cluster %d, predicted %v", step, res.Kernel, res.Cluster, res.Predicted)
	}
	for _, bad := range []struct {
		b    Batch
		want string
	}{
		{Batch{Scores: scores, Stride: stride, Rows: rows, NextN: -1, Lengths: seqLens}, "NextN = -1"},
		{Batch{Scores: scores, Stride: stride, Rows: rows - 1, NextN: nextN, Lengths: seqLens}, "not a whole number of sequences"},
		{Batch{Scores: scores, Stride: stride, Rows: rows, NextN: nextN, Lengths: seqLens[:2]}, "2 Lengths for 5 sequences"},
		{Batch{Scores: scores, Stride: stride, Rows: rows, NextN: nextN, Lengths: []int32{1, 2, 3, 4, stride + 1}}, "outside [0, Stride"},
	} {
		if _, err := sel.Select(0, bad.b, nil); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Select(%+v): %v, want an error with %q", bad.b, err, bad.want)
		}
	}
}

// TestSelectPages: the fused page-table output through a Selector, page
// sizes 1 and 64, with NextN rows mapped to their batch's page table, on
// a single-CTA and a cluster kernel's row lengths (the cluster's with the
// sure set, whose CTAs map their sure slots themselves): every slot is
// the index slot's column through the table (-1 kept), the indices
// exact; a missing table, a short table and a page size of 0 are
// refused.
func TestSelectPages(t *testing.T) {
	d := gpu(t)
	const nextN = 2
	seqLens := []int32{70001, 3000, 100, 70001}
	rows := nextN * len(seqLens)
	sel, err := NewSelector(Config{MaxRows: rows, Values: true, Device: d})
	must(t, err)
	defer sel.Close()
	k := sel.Config().K
	rng := rand.New(rand.NewPCG(9, 10))
	for _, stride := range []int{4096, 70001} {
		sureCluster := false // a cluster kernel with the sure set ran: its CTAs map their sure slots themselves
		for _, pageSize := range []int{1, 64} {
			lens := make([]int32, len(seqLens))
			for i, l := range seqLens {
				lens[i] = min(l, int32(stride))
			}
			host, x := nextNRows(rng, lens, nextN, stride)
			ptStride := (stride + pageSize - 1) / pageSize
			table := make([]int32, len(seqLens)*ptStride)
			for i := range table {
				table[i] = int32(rng.IntN(1 << 24))
			}
			scores, tbl, pages := alloc(t, d, 4*len(host)), alloc(t, d, 4*len(table)), alloc(t, d, 4*rows*k)
			must(t, runtime.Upload(scores, host))
			must(t, runtime.Upload(tbl, table))
			b := Batch{Scores: scores, Stride: stride, Rows: rows, NextN: nextN, Lengths: lens,
				Pages: pages, PageTable: tbl, PageTableStride: ptStride, PageSize: pageSize}
			for step := range 2 {
				res, err := sel.Select(0, b, nil)
				must(t, err)
				sureCluster = sureCluster || res.Cluster > 1 && res.SureSet
				idx, vals := readResult(t, res)
				got := make([]int32, rows*k)
				must(t, runtime.Download(got, res.Pages))
				for r := range rows {
					want, _ := Reference(x[r], k, false)
					if err := checkRow(x[r], want, idx[r*k:(r+1)*k], vals[r*k:(r+1)*k], false); err != nil {
						t.Errorf("stride %d, page %d, step %d, row %d: %v", stride, pageSize, step, r, err)
					}
					for j := range k {
						c, w := idx[r*k+j], int32(-1)
						if c >= 0 {
							w = table[(r/nextN)*ptStride+int(c)/pageSize]*int32(pageSize) + c%int32(pageSize)
						}
						if got[r*k+j] != w {
							t.Errorf("stride %d, page %d, step %d (%s, cluster %d), row %d, slot %d (column %d): %d, want %d",
								stride, pageSize, step, res.Kernel, res.Cluster, r, j, c, got[r*k+j], w)
							break
						}
					}
				}
			}
			for _, bad := range []struct {
				edit func(*Batch)
				want string
			}{
				{func(b *Batch) { b.PageTable = nil }, "without a PageTable"},
				{func(b *Batch) { b.PageTableStride-- }, "entries per batch"},
				{func(b *Batch) { b.PageSize = 0 }, "PageSize = 0"},
				{func(b *Batch) { b.Pages = nil }, "without Pages"},
			} {
				bb := b
				bad.edit(&bb)
				if _, err := sel.Select(0, bb, nil); err == nil || !strings.Contains(err.Error(), bad.want) {
					t.Errorf("Select with a bad page table: %v, want an error with %q", err, bad.want)
				}
			}
			must(t, sel.Reset())
		}
		if stride == 70001 && !sureCluster {
			t.Errorf("stride %d: no cluster kernel with the sure set ran (the selector's choice moved: pick a stride that takes one)", stride)
		}
	}
}

// nextNRows are the rows of sequences of seqLens with nextN rows each, at
// stride: row r has seqLens[r/nextN] - nextN + 1 + r%nextN scores (at
// least 0), then NaN up to the stride, which no kernel may choose.
func nextNRows(rng *rand.Rand, seqLens []int32, nextN, stride int) (host []float32, x [][]float32) {
	rows := nextN * len(seqLens)
	host = make([]float32, rows*stride)
	x = make([][]float32, rows)
	for r := range rows {
		n := max(0, int(seqLens[r/nextN])-nextN+1+r%nextN)
		x[r] = scoresRow(rng, n)
		copy(host[r*stride:], x[r])
		for j := n; j < stride; j++ {
			host[r*stride+j] = float32(math.NaN())
		}
	}
	return host, x
}

// TestSelectWindows: prefill windows through a Selector: row r selects
// among [RowStarts[r], Lengths[r]) of its row, indices from the window's
// start or the row's (AbsoluteIndices), a fallback then a predicted step,
// then one with NoPrediction (a prefill's next chunk: a fallback kernel
// again); bad windows are refused. Rows of 140001 take clusters without
// the sure set, rows of 65536 with it (each CTA then writes its sure
// candidates to their output slots itself: gen's sureDirect).
func TestSelectWindows(t *testing.T) {
	for _, stride := range []int{140001, 65536} {
		t.Run(fmt.Sprint(stride), func(t *testing.T) { testSelectWindows(t, stride) })
	}
}

func testSelectWindows(t *testing.T, stride int) {
	d := gpu(t)
	starts := []int32{0, 1, 5000, int32(stride) - 1001, 30000, 100}
	ends := []int32{int32(stride), int32(stride) - 1, 9000, int32(stride), 30000, 2148}
	rows := len(starts)
	// AlwaysPredict: step 1 runs a GVR kernel even where the device's
	// tuning would run the fallback, so the windows meet the prediction.
	sel, err := NewSelector(Config{MaxRows: rows, Values: true, AlwaysPredict: true, Device: d})
	must(t, err)
	defer sel.Close()
	k := sel.Config().K
	rng := rand.New(rand.NewPCG(11, 12))
	scores := alloc(t, d, 4*rows*stride)
	for _, abs := range []bool{false, true} {
		must(t, sel.Reset())
		for step := range 3 {
			host := make([]float32, rows*stride)
			for i := range host {
				host[i] = float32(math.NaN()) // outside every window
			}
			x := make([][]float32, rows)
			for r := range rows {
				x[r] = scoresRow(rng, int(ends[r]-starts[r]))
				copy(host[r*stride+int(starts[r]):], x[r])
			}
			must(t, runtime.Upload(scores, host))
			res, err := sel.Select(0, Batch{Scores: scores, Stride: stride, Rows: rows, Lengths: ends,
				RowStarts: starts, AbsoluteIndices: abs, NoPrediction: step == 2}, nil)
			must(t, err)
			if res.Predicted != (step == 1) || strings.HasPrefix(res.Kernel, "gvr_topk") != (step == 1) {
				t.Errorf("abs %v, step %d: %s, predicted %v; want a prediction at step 1 only", abs, step, res.Kernel, res.Predicted)
			}
			if _, c, _, sure, _ := Choice(d.Info(), rows, stride, step == 1); res.Cluster != c || res.SureSet != sure {
				t.Errorf("abs %v, step %d: cluster %d, sure set %v; topk.Choice says %d, %v", abs, step, res.Cluster, res.SureSet, c, sure)
			}
			if step == 1 {
				t.Logf("abs %v: %s, cluster %d, sure set %v", abs, res.Kernel, res.Cluster, res.SureSet)
			}
			idx, vals := readResult(t, res)
			for r := range rows {
				rel := slices.Clone(idx[r*k : (r+1)*k])
				for j, c := range rel {
					if c >= 0 && abs {
						rel[j] = c - starts[r]
					}
				}
				want, _ := Reference(x[r], k, false)
				if err := checkRow(x[r], want, rel, vals[r*k:(r+1)*k], false); err != nil {
					t.Errorf("abs %v, step %d (%s, cluster %d, sure set %v), row %d (window [%d, %d)): %v", abs, step, res.Kernel, res.Cluster, res.SureSet, r, starts[r], ends[r], err)
				}
			}
		}
	}
	for _, bad := range []struct {
		b    Batch
		want string
	}{
		{Batch{Scores: scores, Stride: stride, Rows: rows, Lengths: ends, RowStarts: []int32{0, 1, 9001, 0, 0, 0}}, "starts outside"},
		{Batch{Scores: scores, Stride: stride, Rows: rows, Lengths: ends, RowStarts: starts[:2]}, "2 RowStarts for 6 rows"},
		{Batch{Scores: scores, Stride: stride, Rows: rows, Lengths: ends, AbsoluteIndices: true}, "AbsoluteIndices without windows"},
		{Batch{Scores: scores, Stride: stride, Rows: rows, Lengths: ends[:2], NextN: 3, RowStarts: starts}, "windows (row starts) with NextN"},
	} {
		if _, err := sel.Select(0, bad.b, nil); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Select(bad windows): %v, want an error with %q", err, bad.want)
		}
	}
}

// refused: the grouped kernel k (clusters of c, g a row) launched plainly,
// or cooperatively with one cluster fewer than a row needs, is refused by
// runtime before anything is queued.
func refused(t *testing.T, k *runtime.Kernel, work *runtime.Buffer, c, g int) {
	t.Helper()
	d := work.Device()
	x := alloc(t, d, 4*8192)
	out := alloc(t, d, 4*2*2048)
	args := k.Args().Set("scores", x.Ptr()).Set("row_stride", uint64(8192)).Set("lengths", 0).
		Set("out_idx", out.Ptr()).Set("out_vals", 0).Set("next_n", 0).Set("row_starts", 0).Set("abs_idx", 0).
		Set("out_count", 0).Set("page_table", 0).Set("page_table_stride", 0).Set("page_size", 0).Set("out_pages", 0).
		Set("workspace", work.Ptr())
	for _, l := range []struct {
		what string
		err  error
		want string
	}{
		{"plain", k.Launch(nil, c*g, args), "LaunchCooperative"},
		{"a row's clusters cut short", k.LaunchCooperative(nil, c*(g-1), args, false), "cooperative groups"},
	} {
		if l.err == nil || !strings.Contains(l.err.Error(), l.want) {
			t.Errorf("%s launch of %d clusters of %d a row: error %v, want one that says %q", l.what, g, c, l.err, l.want)
		}
	}
	must(t, d.Synchronize())
}
