package gen_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/topk"
)

// Rows of 16-bit scores (Config.Scores): every kernel must give the
// reference's answer over the exactly widened values, and write those
// values bit for bit.

// rows16 is the adversarial suite rounded to d, and rows of 16-bit patterns
// that rounding a float32 never makes: subnormals and zeros of both signs,
// every NaN payload (signalling too), the largest finite numbers, and a
// sample of every pattern.
func rows16(r *rand.Rand, d topk.DType, K, C, n int) []testCase {
	cs := narrowed(rows(r, K, C, n), d)
	add := func(name string, h []uint16) {
		cs = append(cs, testCase{name: name, h: h, x: d.Widen(h)})
	}
	pick := func(lo, hi int) []uint16 { // n patterns from [lo, hi), both signs
		h := make([]uint16, n)
		for i := range h {
			h[i] = uint16(lo+r.IntN(hi-lo)) | uint16(r.IntN(2))<<15
		}
		return h
	}
	expShift, expMax := 10, 0x1F // float16: 5 exponent bits over 10 mantissa bits
	if d == topk.BFloat16 {
		expShift, expMax = 7, 0xFF
	}
	inf := expMax << expShift
	add("subnormals and zeros", pick(0, 1<<expShift))
	add("NaN payloads and Inf", pick(inf, inf+1<<expShift))
	add("largest finite", pick(inf-4*K, inf))
	add("every pattern", pick(0, 1<<15))
	return cs
}

func TestTopKScoreTypes(t *testing.T) {
	for _, d := range []topk.DType{topk.Float16, topk.BFloat16} {
		for _, base := range []gen.Config{cfgK16, cfgK256} {
			cfg := base
			cfg.Scores = scoreType(d)
			n := 3*cfg.MaxCandidates + 37
			t.Run(fmt.Sprintf("%v/K=%d", d, cfg.K), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(d), uint64(cfg.K)))
				cs := rows16(r, d, cfg.K, cfg.MaxCandidates, n)
				for _, name := range []string{"topk_fallback", "topk_radix"} {
					p, k := load(t, name, cfg)
					idx, vals := launch(t, p, k, cs, false)
					checkRows(t, name, cs, cfg.K, idx, vals)
				}
				p, k := load(t, "gvr_topk", cfg)
				for _, mode := range []string{"perfect", "random", "garbage"} {
					predict(r, cs, mode, cfg.K)
					idx, vals := launch(t, p, k, cs, false)
					checkRows(t, "gvr_topk pred="+mode, cs, cfg.K, idx, vals)
				}
			})
		}
	}
}

// TestTopKScoreTypesSorted: rank order holds for 16-bit rows too.
func TestTopKScoreTypesSorted(t *testing.T) {
	for _, d := range []topk.DType{topk.Float16, topk.BFloat16} {
		cfg := cfgK16
		cfg.Scores, cfg.Sorted = scoreType(d), true
		r := rand.New(rand.NewPCG(9, uint64(d)))
		cs := rows16(r, d, cfg.K, cfg.MaxCandidates, 500)
		p, k := load(t, "topk_fallback", cfg)
		idx, vals := launch(t, p, k, cs, false)
		for i, c := range cs {
			if err := topk.Check(c.x, cfg.K, true, idx[i], vals[i]); err != nil {
				t.Errorf("%v row %d (%s): %v", d, i, c.name, err)
			}
		}
	}
}

// TestClusterTopKScoreTypes: the cluster kernels bring 16-bit slices into
// shared memory (8 scores to a vector, heads and tails of up to 7), walk
// them there, and the part of a row past MaxN in global memory, also
// keeping its high vectors (KeepOver).
func TestClusterTopKScoreTypes(t *testing.T) {
	for _, d := range []topk.DType{topk.Float16, topk.BFloat16} {
		for _, tc := range []struct {
			C, maxN, n int
			keep       bool
		}{{2, 512, 300, false}, {4, 1024, 1000, false}, {4, 256, 700, false}, {4, 256, 700, true}, {2, 128, 3000, true}} {
			cfg := cfgK16
			cfg.Cluster, cfg.MaxN, cfg.Scores, cfg.KeepOver = tc.C, tc.maxN, scoreType(d), tc.keep
			t.Run(fmt.Sprintf("%v/C=%d/MaxN=%d/n=%d/keep=%v", d, tc.C, tc.maxN, tc.n, tc.keep), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(tc.C), uint64(tc.n)+uint64(d)))
				cs := rows16(r, d, cfg.K, cfg.MaxCandidates, tc.n)
				p, k := load(t, "topk_fallback_cluster", cfg)
				idx, vals, _ := launchSeed(t, p, k, cs, true, 1)
				checkRows(t, "topk_fallback_cluster", cs, cfg.K, idx, vals)
				p, k = load(t, "gvr_topk_cluster", cfg)
				for _, mode := range []string{"perfect", "garbage"} {
					predict(r, cs, mode, cfg.K)
					idx, vals, _ := launchSeed(t, p, k, cs, true, 2)
					checkRows(t, "gvr_topk_cluster pred="+mode, cs, cfg.K, idx, vals)
				}
			})
		}
	}
}

// TestScoreTypeConfig: 16-bit scores are for the Top-K kernels, and a
// cluster holds twice as many of them, less what their larger small bin
// takes (128 entries of 16 bytes instead of 32, a CTA).
func TestScoreTypeConfig(t *testing.T) {
	cfg := cfgK16
	cfg.Scores = gen.BFloat16
	if _, err := gen.Generate("count_ge", cfg); err == nil {
		t.Error("count_ge accepted bfloat16 scores")
	}
	cfg.Scores = 7
	if err := cfg.Validate(); err == nil {
		t.Error("Validate accepted score type 7")
	}
	c32 := gen.Config{K: 2048, MaxCandidates: 6144, BlockSize: 512, Bins: 2048, Target: ptx.SM90, Cluster: 8}
	c16 := c32
	c16.Scores = gen.Float16
	n32, n16 := gen.ClusterMaxN("gvr_topk_cluster", c32), gen.ClusterMaxN("gvr_topk_cluster", c16)
	want := 2*n32 - c16.Cluster*16*(128-32)/2
	if n16 < want-8*8 || n16 > want+8*8 {
		t.Errorf("a cluster holds %d float16 scores and %d float32 ones; want about twice", n16, n32)
	}
	for _, s := range []gen.ScoreType{gen.Float32, gen.Float16, gen.BFloat16} {
		if got, err := gen.ParseScoreType(s.String()); err != nil || got != s {
			t.Errorf("ParseScoreType(%q) = %v, %v", s.String(), got, err)
		}
	}
	if _, err := gen.ParseScoreType("fp8"); err == nil {
		t.Error("ParseScoreType accepted fp8")
	}
}

func scoreType(d topk.DType) gen.ScoreType { return d.ScoreType() }
