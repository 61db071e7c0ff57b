package gen_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/ptx/emu"
	"github.com/gvr-go/gvr/topk"
)

// clusterRows are rows of every length from 0 up, starting at every
// alignment (an odd stride), with NaN, Inf and ties, some longer than a
// cluster of maxN holds; and a threshold per row.
func clusterRows(r *rand.Rand, maxN int) (x []float32, stride int, lens []int, thr []float32) {
	lens = []int{0, 1, 3, 4, 5, 17, 63, maxN - 1, maxN, maxN + 37, 2*maxN + 5}
	stride = 2*maxN + 7
	x = make([]float32, len(lens)*stride)
	for i := range x {
		switch u := r.Float64(); {
		case u < 0.02:
			x[i] = float32(math.NaN())
		case u < 0.04:
			x[i] = float32(math.Inf(1 - 2*r.IntN(2)))
		case u < 0.3:
			x[i] = float32(r.IntN(4)) // ties
		default:
			x[i] = float32(r.NormFloat64())
		}
	}
	thr = make([]float32, len(lens))
	for i := range thr {
		thr[i] = float32(r.NormFloat64())
	}
	thr[0], thr[1] = float32(math.Inf(-1)), float32(math.NaN())
	return x, stride, lens, thr
}

// TestClusterKernels runs cluster_count_ge and cluster_read in the
// interpreter, one row per cluster of C = 1, 2, 4, 8 CTAs, on several
// schedules (seeds) with the race checker: the counts are exact, and each
// CTA holds its slice of the row.
func TestClusterKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const maxN = 200
	x, stride, lens, thr := clusterRows(r, maxN)
	rows := len(lens)
	want := make([]uint32, rows)
	for row, n := range lens {
		for _, v := range x[row*stride : row*stride+n] {
			if !(v < thr[row]) { // >= or unordered
				want[row]++
			}
		}
	}
	l32 := make([]int32, rows)
	for row, n := range lens {
		l32[row] = int32(n)
	}
	for _, C := range []int{1, 2, 4, 8} {
		cfg := gen.Config{K: 16, MaxCandidates: 64, BlockSize: 64, Bins: 64, Target: ptx.SM90, Cluster: C, MaxN: maxN}
		count, countK := load(t, "cluster_count_ge", cfg)
		read, readK := load(t, "cluster_read", cfg)
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("C=%d/seed=%d", C, seed), func(t *testing.T) {
				mem := emu.NewMemory()
				scores, lengths, thresholds := mem.AllocF32s(x), mem.AllocI32s(l32), mem.AllocF32s(thr)
				counts := mem.AllocU32s(make([]uint32, rows))
				args := countK.Launch.Args().Set("scores", scores).Set("row_stride", uint64(stride)).
					Set("lengths", lengths).Set("thresholds", thresholds).Set("counts", counts)
				if _, err := count.Run(mem, emu.Launch{Grid: [3]int{rows * C}, Args: args, RaceCheck: true, Seed: seed}); err != nil {
					t.Fatalf("cluster_count_ge: %v", err)
				}
				got, err := mem.ReadU32s(counts, rows)
				if err != nil {
					t.Fatal(err)
				}
				for row := range rows {
					if got[row] != want[row] {
						t.Errorf("cluster_count_ge: row %d (n = %d, threshold %v): count %d, want %d", row, lens[row], thr[row], got[row], want[row])
					}
				}

				held := mem.AllocU32s(make([]uint32, rows*C))
				rargs := readK.Launch.Args().Set("scores", scores).Set("row_stride", uint64(stride)).
					Set("lengths", lengths).Set("held", held)
				if _, err := read.Run(mem, emu.Launch{Grid: [3]int{rows * C}, Args: rargs, RaceCheck: true, Seed: seed}); err != nil {
					t.Fatalf("cluster_read: %v", err)
				}
				h, err := mem.ReadU32s(held, rows*C)
				if err != nil {
					t.Fatal(err)
				}
				capacity := ((maxN+C-1)/C + 3) / 4 * 4
				for row, n := range lens {
					chunk := (n + 4*C - 1) / (4 * C) * 4
					for rank := range C {
						if w := min(chunk, max(0, n-rank*chunk), capacity); h[row*C+rank] != uint32(w) {
							t.Errorf("cluster_read: row %d (n = %d), CTA %d holds %d elements, want %d", row, n, rank, h[row*C+rank], w)
						}
					}
				}
			})
		}
	}
}

// TestClusterConfig: the cluster fields are checked, and kept for the
// cluster kernels.
func TestClusterConfig(t *testing.T) {
	base := gen.Config{K: 16, MaxCandidates: 64, BlockSize: 64, Bins: 64, Target: ptx.SM90}
	for _, c := range []struct {
		name string
		edit func(*gen.Config)
		want string
	}{
		{"cluster_count_ge", func(c *gen.Config) { c.Cluster = 17 }, "Cluster = 17"},
		{"cluster_count_ge", func(c *gen.Config) { c.Cluster, c.Target = 2, ptx.SM80 }, "sm_80 has no thread-block clusters"},
		{"cluster_read", func(c *gen.Config) { c.MaxN = 1 << 20 }, "needs 4194"},
		{"count_ge", func(c *gen.Config) { c.Cluster = 2 }, "Cluster and MaxN are for the cluster kernels"},
		{"gvr_topk", func(c *gen.Config) { c.MaxN = 4096 }, "Cluster and MaxN are for the cluster kernels"},
	} {
		cfg := base
		c.edit(&cfg)
		if _, err := gen.Generate(c.name, cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s (%v): %v; want an error about %q", c.name, cfg, err, c.want)
		}
	}
	cfg := base
	cfg.Cluster, cfg.MaxN = 16, 4096
	k, err := gen.Generate("cluster_count_ge", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l := k.Launch; l.Cluster != 16 || !l.NonPortableCluster || l.SharedBytes < 4*4096/16 {
		t.Errorf("contract %v: want clusters of 16 (non-portable) and room for 256 elements a CTA", l)
	}
}

// TestClusterTopK runs gvr_topk_cluster and topk_fallback_cluster in the
// interpreter on the adversarial suite, clusters of C = 1 to 8 CTAs (not
// only powers of two: the H100's table picks 3, 5 and 6), with rows that
// fit the cluster's shared memory and rows longer than it (MaxN), every
// prediction mode, on several schedules with the race checker: every row
// exact, and the output bit-identical on every schedule.
func TestClusterTopK(t *testing.T) {
	for _, tc := range []struct {
		C, maxN, n int
	}{{1, 512, 300}, {2, 512, 300}, {4, 512, 300}, {2, 128, 300}, {4, 1024, 1000}, {8, 1024, 1000}, {3, 512, 300}, {6, 1024, 1000}} {
		cfg := cfgK16
		cfg.Cluster, cfg.MaxN = tc.C, tc.maxN
		t.Run(fmt.Sprintf("C=%d/MaxN=%d/n=%d", tc.C, tc.maxN, tc.n), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.C), uint64(tc.n)))
			cs := rows(r, cfg.K, cfg.MaxCandidates, tc.n)
			for _, name := range []string{"gvr_topk_cluster", "topk_fallback_cluster"} {
				p, k := load(t, name, cfg)
				checkSchedules(t, r, cs, name, p, k, []string{"perfect", "partial", "random", "garbage", "empty"}, nil)
			}
		})
	}
}

// TestClusterGroups: topk_fallback_cluster with each row shared by
// Groups clusters (their counts combined through global memory, the
// candidates gathered by the row's first cluster) is exact, the same on
// every schedule and race-free, on rows that fit the clusters, rows past
// what they hold, and every path (short rows, the exact path); each row's
// workspace counts its launches and is left ready for the next.
func TestClusterGroups(t *testing.T) {
	// Warps of one: the leader's threads gather the other clusters'
	// candidates in several turns each.
	narrow := gen.Config{K: 256, MaxCandidates: 768, BlockSize: 32, Bins: 32, Target: ptx.SM90}
	for _, tc := range []struct {
		base          gen.Config
		C, G, maxN, n int
	}{{cfgK16, 2, 2, 512, 300}, {cfgK16, 4, 2, 512, 1000}, {cfgK16, 2, 3, 256, 1000}, {cfgK16, 2, 4, 128, 1000}, {cfgK16, 4, 4, 1024, 2000}, {cfgK16, 2, 7, 128, 1700},
		{narrow, 2, 4, 512, 4000}} {
		cfg := tc.base
		cfg.Cluster, cfg.Groups, cfg.MaxN = tc.C, tc.G, tc.maxN
		t.Run(fmt.Sprintf("K=%d/C=%d/G=%d/MaxN=%d/n=%d", cfg.K, tc.C, tc.G, tc.maxN, tc.n), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.C*tc.G), uint64(tc.n)))
			cs := rows(r, cfg.K, cfg.MaxCandidates, tc.n)
			for _, run := range []struct {
				mbar  bool
				early int // the longest part collected early (0: the default)
			}{{false, 0}, {true, 0}, {true, 48}} {
				cfg.MbarrierRounds = run.mbar
				restore := func() {}
				if run.early > 0 {
					// Parts of rows longer than 48 elements a CTA not
					// collected early: both of Phase 3's ways in a batch.
					restore = gen.SetEarlyMaxShare(run.early)
				}
				p, k := load(t, "topk_fallback_cluster", cfg)
				restore()
				if k.Launch.Cooperative != tc.C*tc.G {
					t.Fatalf("the contract's Cooperative is %d, want the row's %d CTAs", k.Launch.Cooperative, tc.C*tc.G)
				}
				// The text says so too: a kernel loaded from it alone
				// (runtime.Device.LoadPTX) is launched cooperatively.
				pm, err := ptx.Parse(ptx.Text(k.Module))
				if err != nil {
					t.Fatal(err)
				}
				if l, err := ptx.LaunchOf(pm, k.Name, k.Launch.SharedBytes); err != nil || l.String() != k.Launch.String() {
					t.Fatalf("the contract from the text: %v, %v; want %v", l, err, k.Launch)
				}
				checkSchedules(t, r, cs, "topk_fallback_cluster", p, k, nil, nil)
			}
		})
	}
}

// TestClusterGroupsShareWorkspace: kernels of different cluster sizes and
// groups take turns on one workspace, as a Selector's do (one workspace a
// layer, whatever kernel a step picks), row after row of a batch: every
// row exact after every launch, and the workspace left as it should be.
// (A layout that depended on the cluster size and groups put one
// kernel's row generation and round words where another's candidates go.)
func TestClusterGroupsShareWorkspace(t *testing.T) {
	const n = 1000
	r := rand.New(rand.NewPCG(7, 7))
	var cs []testCase
	for range 3 {
		x := make([]float32, n)
		for j := range x {
			x[j] = float32(r.NormFloat64())
		}
		cs = append(cs, testCase{name: "normal", x: x})
	}
	type prog struct {
		p *emu.Program
		k *gen.Kernel
	}
	var ks []prog
	for _, cg := range [][2]int{{2, 4}, {4, 2}, {2, 2}} {
		cfg := cfgK16
		cfg.Cluster, cfg.Groups, cfg.MaxN, cfg.MbarrierRounds = cg[0], cg[1], 256, true
		p, k := load(t, "topk_fallback_cluster", cfg)
		ks = append(ks, prog{p, k})
	}
	mem := emu.NewMemory()
	host := make([]float32, 0, len(cs)*n)
	for _, c := range cs {
		host = append(host, c.x...)
	}
	K := cfgK16.K
	scores := mem.AllocF32s(host)
	ws := mem.Alloc(len(cs)*gen.GroupWorkspaceBytes(ks[0].k.Config), 128)
	for _, k := range ks {
		if gen.GroupWorkspaceBytes(k.k.Config) != gen.GroupWorkspaceBytes(ks[0].k.Config) {
			t.Fatalf("%v: a workspace of %d bytes a row, %v's %d", k.k.Config, gen.GroupWorkspaceBytes(k.k.Config), ks[0].k.Config, gen.GroupWorkspaceBytes(ks[0].k.Config))
		}
	}
	for launch := range 2 * len(ks) {
		k := ks[launch%len(ks)]
		outIdx := mem.AllocI32s(make([]int32, len(cs)*K))
		outVals := mem.AllocF32s(make([]float32, len(cs)*K))
		args := k.k.Launch.Args().Set("scores", scores).Set("row_stride", uint64(n)).Set("lengths", 0).
			Set("out_idx", outIdx).Set("out_vals", outVals).Set("next_n", 0).Set("row_starts", 0).Set("abs_idx", 0).Set("out_count", 0).
			Set("page_table", 0).Set("page_table_stride", 0).Set("page_size", 0).Set("out_pages", 0).Set("workspace", ws)
		grid := len(cs) * k.k.Config.Cluster * k.k.Config.Groups
		if _, err := k.p.Run(mem, emu.Launch{Grid: [3]int{grid}, Args: args, CoResident: true, RaceCheck: true, Seed: uint64(launch)}); err != nil {
			t.Fatalf("launch %d (%v): %v", launch, k.k.Config, err)
		}
		is, vs := readRows(t, mem, outIdx, outVals, len(cs), K)
		checkRows(t, fmt.Sprintf("launch %d (%v)", launch, k.k.Config), cs, K, is, vs)
		checkWorkspace(t, mem, ws, k.k.Config, len(cs), launch+1)
	}
}

// checkSchedules runs kernel name on cs with each prediction mode (none
// for a kernel without one) on three schedules under the race checker:
// every row exact, and the same output on every schedule. each, if not
// nil, gets every launch's stats.
func checkSchedules(t *testing.T, r *rand.Rand, cs []testCase, name string, p *emu.Program, k *gen.Kernel, modes []string, each func(stats [][]byte)) {
	t.Helper()
	if !strings.HasPrefix(name, "gvr_topk") {
		modes = []string{"none"}
	}
	for _, mode := range modes {
		if mode != "none" {
			predict(r, cs, mode, k.Config.K)
		}
		var first string
		for seed := range uint64(3) {
			idx, vals, stats := launchSeed(t, p, k, cs, true, seed)
			checkRows(t, fmt.Sprintf("%s pred=%s seed=%d", name, mode, seed), cs, k.Config.K, idx, vals)
			if out := fmt.Sprint(idx, vals); seed == 0 {
				first = out
			} else if out != first {
				t.Errorf("%s pred=%s: seed %d's output differs from seed 0's", name, mode, seed)
			}
			if each != nil {
				each(stats)
			}
		}
	}
}

// TestClusterTopKSameSearch: gvr_topk_cluster's Phase 1 is gvr_topk's and
// its Phase 2 counts the same row by slices, so the search is the same:
// per row the same valid predicted indices, Phase 2 passes, candidates and
// path, with rows that fit the cluster and rows past MaxN.
func TestClusterTopKSameSearch(t *testing.T) {
	single := cfgK16
	single.Instrument = true
	r := rand.New(rand.NewPCG(5, 6))
	cs := rows(r, single.K, single.MaxCandidates, 700)
	p1, k1 := load(t, "gvr_topk", single)
	for _, tc := range []struct{ C, maxN int }{{2, 1024}, {4, 1024}, {4, 256}} {
		cfg := single
		cfg.Cluster, cfg.MaxN = tc.C, tc.maxN
		pc, kc := load(t, "gvr_topk_cluster", cfg)
		for _, mode := range []string{"perfect", "partial", "random", "garbage"} {
			predict(r, cs, mode, cfg.K)
			_, _, want := launchStats(t, p1, k1, cs, false)
			_, _, got := launchSeed(t, pc, kc, cs, true, 1)
			for row := range cs {
				if binary.LittleEndian.Uint32(want[row][gen.StatsPath:]) == gen.PathHeld {
					continue // a row gvr_topk holds; the cluster kernels have no held path
				}
				for _, f := range []struct {
					name string
					off  int
				}{{"valid predicted", gen.StatsValidPred}, {"Phase 2 passes", gen.StatsPhase2Passes},
					{"candidates", gen.StatsCandidates}, {"path", gen.StatsPath}} {
					w := binary.LittleEndian.Uint32(want[row][f.off:])
					g := binary.LittleEndian.Uint32(got[row][f.off:])
					if w != g {
						t.Errorf("C=%d MaxN=%d pred=%s row %d (%s, n=%d): %s %d, gvr_topk %d",
							tc.C, tc.maxN, mode, row, cs[row].name, len(cs[row].x), f.name, g, w)
					}
				}
			}
		}
	}
}

// checkVariant runs a cluster kernel's variant (p, k) on cs (gvr_topk_cluster
// with every prediction mode but partial) under the race checker on three
// schedules: exact, and the same output as the kernel it varies (pb, kb),
// which against names.
func checkVariant(t *testing.T, r *rand.Rand, cs []testCase, name string, pb *emu.Program, kb *gen.Kernel, p *emu.Program, k *gen.Kernel, against string) {
	t.Helper()
	K := k.Config.K
	modes := []string{"none"}
	if name == "gvr_topk_cluster" {
		modes = []string{"perfect", "random", "garbage"}
	}
	for _, mode := range modes {
		if mode != "none" {
			predict(r, cs, mode, K)
		}
		wi, wv, _ := launchSeed(t, pb, kb, cs, false, 0)
		for seed := range uint64(3) {
			idx, vals, _ := launchSeed(t, p, k, cs, true, seed)
			checkRows(t, fmt.Sprintf("%s pred=%s seed=%d", name, mode, seed), cs, K, idx, vals)
			if fmt.Sprint(idx, vals) != fmt.Sprint(wi, wv) {
				t.Errorf("%s pred=%s seed %d: output differs from %s", name, mode, seed, against)
			}
		}
	}
}

// TestClusterTopKKeepOver: with KeepOver the cluster kernels keep the
// vectors of rows past MaxN that lie outside shared memory and hold an
// element at or above Phase 2's lowest first point, by index in Phase 4's
// histograms (two slots a thread at 64 bins, eight at 256: rows whose
// threads overflow them and rows that fit), and later walks load them
// again: exact on the suite under the race checker, on three schedules,
// and the same output as without it. Only the cluster Top-K kernels take
// it.
func TestClusterTopKKeepOver(t *testing.T) {
	wide := cfgK16
	wide.Bins = 256
	for _, tc := range []struct {
		base       gen.Config
		C, maxN, n int
		mbar       bool
	}{{cfgK16, 2, 128, 300, false}, {cfgK16, 4, 256, 700, true}, {cfgK16, 2, 128, 1000, true},
		{wide, 2, 128, 1000, true}, {wide, 4, 256, 700, false}, {wide, 2, 1024, 300, true},
		// About 11 over vectors a thread: a random prediction's low
		// point keeps 5-8 of them in some threads, more than the 8 slots
		// in others.
		{wide, 2, 128, 6000, true}, {cfgK16, 2, 128, 3000, false}} {
		cfg := tc.base
		cfg.Cluster, cfg.MaxN, cfg.MbarrierRounds = tc.C, tc.maxN, tc.mbar
		keep := cfg
		keep.KeepOver = true
		t.Run(fmt.Sprintf("C=%d/MaxN=%d/n=%d/bins=%d/mbarrier=%v", tc.C, tc.maxN, tc.n, cfg.Bins, tc.mbar), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.C), 79))
			cs := rows(r, cfg.K, cfg.MaxCandidates, tc.n)
			for _, name := range []string{"gvr_topk_cluster", "topk_fallback_cluster"} {
				pb, kb := load(t, name, cfg)
				pk, kk := load(t, name, keep)
				checkVariant(t, r, cs, name, pb, kb, pk, kk, "the kernel's without KeepOver")
			}
		})
	}
	if _, err := gen.Generate("gvr_topk", gen.Config{K: 16, MaxCandidates: 64, BlockSize: 64, Bins: 64, Target: ptx.SM90, KeepOver: true}); err == nil {
		t.Error("gvr_topk accepted KeepOver")
	}
}

// TestClusterTopKMbarrierRounds: with MbarrierRounds the cluster kernels
// combine each round through st.async stores completing on the receivers'
// mbarriers and hand the candidates over through remote mbarrier
// arrivals: exact on the suite under the race checker, on three
// schedules, the same output as with barrier.cluster, and only the slice's
// cluster barrier left in the code.
func TestClusterTopKMbarrierRounds(t *testing.T) {
	for _, tc := range []struct{ C, maxN, n int }{{1, 512, 300}, {2, 512, 300}, {4, 1024, 1000}, {4, 256, 700}, {8, 512, 1500}, {3, 512, 300}, {5, 256, 700}} {
		cfg := cfgK16
		cfg.Cluster, cfg.MaxN = tc.C, tc.maxN
		mb := cfg
		mb.MbarrierRounds = true
		t.Run(fmt.Sprintf("C=%d/MaxN=%d/n=%d", tc.C, tc.maxN, tc.n), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.C), 77))
			cs := rows(r, cfg.K, cfg.MaxCandidates, tc.n)
			for _, name := range []string{"gvr_topk_cluster", "topk_fallback_cluster"} {
				pb, kb := load(t, name, cfg)
				pm, km := load(t, name, mb)
				want := 1 // the slice's
				if tc.C == 1 {
					want = 0 // a cluster of one has nothing to wait for
				}
				if n := strings.Count(km.PTX(), "barrier.cluster.wait"); n != want {
					t.Errorf("%s with MbarrierRounds: %d barrier.cluster.wait, want %d", name, n, want)
				}
				checkVariant(t, r, cs, name, pb, kb, pm, km, "the barrier.cluster kernel's")
			}
		})
	}
	if _, err := gen.Generate("gvr_topk", gen.Config{K: 16, MaxCandidates: 64, BlockSize: 64, Bins: 64, Target: ptx.SM90, MbarrierRounds: true}); err == nil {
		t.Error("gvr_topk accepted MbarrierRounds")
	}
}

// TestSureSet: with SureSet the GVR kernels set apart the candidates the
// first pass shows to be in the Top-K, and Phase 4 selects among the
// others: exact on the suite, with every prediction, the same output on
// three schedules under the race checker (the slots' order is the
// kernel's own: the sure ones first), and the set taken in some rows
// (else the test would not test it). One CTA per row, and clusters of 2,
// 3, 4, 6 and 8 with and without mbarrier rounds, rows held and streamed,
// with the keep.
func TestSureSet(t *testing.T) {
	one := cfgK16
	one.Bins = 256
	for _, tc := range []struct {
		name       string
		C, maxN, n int
		mbar, keep bool
	}{{"gvr_topk", 0, 0, 300, false, false}, {"topk_fallback", 0, 0, 1000, false, false},
		{"gvr_topk_cluster", 2, 512, 300, false, false}, {"gvr_topk_cluster", 4, 1024, 1000, true, false},
		{"topk_fallback_cluster", 2, 1024, 1000, true, false}, {"gvr_topk_cluster", 2, 128, 1000, true, true},
		{"topk_fallback_cluster", 4, 256, 700, false, true}, {"gvr_topk_cluster", 8, 512, 1500, true, false},
		{"topk_fallback_cluster", 3, 1024, 1000, true, false}, {"topk_fallback_cluster", 6, 1024, 1500, true, false}} {
		cfg := one
		cfg.Cluster, cfg.MaxN, cfg.MbarrierRounds, cfg.KeepOver = tc.C, tc.maxN, tc.mbar, tc.keep
		cfg.SureSet, cfg.Instrument = true, true
		t.Run(fmt.Sprintf("%s/C=%d/MaxN=%d/n=%d/mbarrier=%v/keep=%v", tc.name, tc.C, tc.maxN, tc.n, tc.mbar, tc.keep), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.n), 91))
			cs := rows(r, cfg.K, cfg.MaxCandidates, tc.n)
			p, k := load(t, tc.name, cfg)
			took := 0
			checkSchedules(t, r, cs, tc.name, p, k, []string{"perfect", "random", "garbage"}, func(stats [][]byte) {
				for _, st := range stats {
					if binary.LittleEndian.Uint32(st[gen.StatsSure:]) > 0 {
						took++
					}
				}
			})
			if took == 0 {
				t.Errorf("%s: no row took a sure set", tc.name)
			}
			t.Logf("%s: %d row launches took a sure set", tc.name, took)
		})
	}
	if _, err := gen.Generate("count_ge", gen.Config{K: 16, MaxCandidates: 64, BlockSize: 64, Bins: 64, Target: ptx.SM90, SureSet: true}); err == nil {
		t.Error("count_ge accepted SureSet")
	}
}

// TestSureOut: with the sure set, a cluster's CTAs write their sure
// candidates to their output slots themselves, and where there is a
// page-table output their page entries too (the leader maps only the
// slots after theirs: writePages reads back the index slots it maps,
// which other CTAs' stores are not ordered before). Exact with windows,
// absolute indices and values, the page-table output exact, and the same
// arrays with a page-table output as without, on two schedules.
func TestSureOut(t *testing.T) {
	cfg := cfgK16
	cfg.Bins, cfg.MaxN, cfg.SureSet, cfg.Instrument = 256, 1024, true, true
	r := rand.New(rand.NewPCG(7, 93))
	cs := rows(r, cfg.K, cfg.MaxCandidates, 1000)
	predict(r, cs, "perfect", cfg.K)
	const stride, pageSize = 1037, 16
	rowsN := len(cs)
	host := make([]float32, rowsN*stride)
	starts, ends := make([]int32, rowsN), make([]int32, rowsN)
	for i := range host {
		host[i] = float32(math.NaN()) // outside every window: never chosen
	}
	for row, c := range cs {
		starts[row] = int32(row * 3)
		ends[row] = starts[row] + int32(len(c.x))
		copy(host[row*stride+int(starts[row]):], c.x)
	}
	ptStride := (stride + pageSize - 1) / pageSize
	table := make([]int32, rowsN*ptStride)
	for i := range table {
		table[i] = int32(r.IntN(1 << 20))
	}
	for _, tc := range []struct {
		C    int
		mbar bool
	}{{2, false}, {4, true}} {
		cfg.Cluster, cfg.MbarrierRounds = tc.C, tc.mbar
		p, k := load(t, "gvr_topk_cluster", cfg)
		K := cfg.K
		for _, abs := range []uint64{0, 1} {
			var first string
			for run := range 4 {
				pages, seed := run%2, uint64(run/2) // on two schedules
				mem := emu.NewMemory()
				outIdx, outVals := mem.AllocI32s(make([]int32, rowsN*K)), mem.AllocF32s(make([]float32, rowsN*K))
				outPages, tableAt := uint64(0), uint64(0)
				if pages == 1 {
					outPages, tableAt = mem.AllocI32s(make([]int32, rowsN*K)), mem.AllocI32s(table)
				}
				pred := make([]int32, rowsN*K)
				for row, c := range cs {
					for j, i := range c.pred[:K] {
						pred[row*K+j] = i + int32(abs)*starts[row]
					}
				}
				stats := mem.Alloc(rowsN*gen.StatsBytes, 16)
				args := k.Launch.Args().Set("scores", mem.AllocF32s(host)).Set("row_stride", stride).
					Set("lengths", mem.AllocI32s(ends)).Set("next_n", 0).Set("row_starts", mem.AllocI32s(starts)).Set("abs_idx", abs).
					Set("out_idx", outIdx).Set("out_vals", outVals).Set("out_count", 0).
					Set("page_table", tableAt).Set("page_table_stride", uint64(ptStride)).
					Set("page_size", pageSize).Set("out_pages", outPages).
					Set("pred", mem.AllocI32s(pred)).Set("pred_stride", uint64(K)).Set("pred_count", uint64(K)).Set("stats", stats)
				if _, err := p.Run(mem, emu.Launch{Grid: [3]int{rowsN * tc.C}, Args: args, RaceCheck: true, Seed: seed}); err != nil {
					t.Fatalf("%v: %v", k.Config, err)
				}
				idx := readI32s(t, mem, outIdx, rowsN*K)
				vals, err := mem.ReadF32s(outVals, rowsN*K)
				if err != nil {
					t.Fatal(err)
				}
				raw, err := mem.Read(stats, rowsN*gen.StatsBytes)
				if err != nil {
					t.Fatal(err)
				}
				label := fmt.Sprintf("C=%d mbarrier=%v abs=%d pages=%d seed=%d", tc.C, tc.mbar, abs, pages, seed)
				sure := 0
				var pg []int32
				if pages == 1 {
					pg = readI32s(t, mem, outPages, rowsN*K)
				}
				for row, c := range cs {
					if binary.LittleEndian.Uint32(raw[row*gen.StatsBytes+gen.StatsSure:]) > 0 {
						sure++
					}
					rel := make([]int32, K)
					for j, i := range idx[row*K : (row+1)*K] {
						rel[j] = i
						if i >= 0 {
							rel[j] -= int32(abs) * starts[row]
						}
					}
					if err := topk.Check(c.x, K, false, rel, vals[row*K:(row+1)*K]); err != nil {
						t.Errorf("%s: row %d (%s): %v", label, row, c.name, err)
					}
					for j, i := range rel {
						if pg == nil {
							break
						}
						want := int32(-1)
						if i >= 0 {
							col := int(i) + int(starts[row])
							want = table[row*ptStride+col/pageSize]*pageSize + int32(col%pageSize)
						}
						if pg[row*K+j] != want {
							t.Errorf("%s: row %d slot %d: page output %d, want %d", label, row, j, pg[row*K+j], want)
							break
						}
					}
				}
				if sure == 0 {
					t.Errorf("%s: no row took a sure set", label)
				}
				if out := fmt.Sprint(idx, vals); run == 0 {
					first = out
				} else if d := cmp.Diff(first, out); d != "" {
					t.Errorf("%s: the output differs from the first run's, without a page-table output (-):\n%s", label, d)
				}
			}
		}
	}
}
