package gen_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/internal/fuzzcase"
	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/ptx/emu"
)

// TestRoundTrip: every kernel, on every target and for several configs,
// prints text that parses back to the same text. The interpreter runs the
// parsed text, so this is what lets its results stand for the driver's.
func TestRoundTrip(t *testing.T) {
	small := gen.Config{K: 16, MaxCandidates: 64, BlockSize: 64, Bins: 64}
	inst := gen.DefaultConfig()
	inst.Instrument = true
	for _, name := range gen.Names() {
		for _, target := range append(ptx.Targets, ptx.SM75) {
			cfgs := []gen.Config{gen.DefaultConfig()}
			if target == ptx.SM75 || target == ptx.SM100a {
				cfgs = append(cfgs, small, inst)
			}
			if gen.IsClusterKernel(name) && !target.Has(ptx.FeatCluster) {
				continue // sm_90+; Generate refuses it (TestClusterKernels)
			}
			for _, cfg := range cfgs {
				cfg.Target = target
				k, err := gen.Generate(name, cfg)
				if err != nil {
					t.Fatalf("%s %v: %v", name, cfg, err)
				}
				if err := ptx.RoundTrip(k.Module); err != nil {
					t.Errorf("%s %v: %v", name, cfg, err)
				}
			}
		}
	}
}

// TestValidate: each invalid field is named, all at once.
func TestValidate(t *testing.T) {
	cases := []struct {
		cfg  gen.Config
		want string
	}{
		{gen.Config{K: 0, MaxCandidates: 10, BlockSize: 64, Bins: 64, Target: ptx.SM90}, "K = 0"},
		{gen.Config{K: 100, MaxCandidates: 99, BlockSize: 64, Bins: 64, Target: ptx.SM90}, "MaxCandidates = 99"},
		{gen.Config{K: 1, MaxCandidates: 10, BlockSize: 100, Bins: 64, Target: ptx.SM90}, "BlockSize = 100"},
		{gen.Config{K: 1, MaxCandidates: 10, BlockSize: 2048, Bins: 64, Target: ptx.SM90}, "BlockSize = 2048"},
		{gen.Config{K: 1, MaxCandidates: 10, BlockSize: 64, Bins: 48, Target: ptx.SM90}, "Bins = 48"},
		{gen.Config{K: 1, MaxCandidates: 10, BlockSize: 512, Bins: 8, Target: ptx.SM90}, "multiple of the warp count 16"},
		{gen.Config{K: 2048, MaxCandidates: 30000, BlockSize: 512, Bins: 2048, Target: ptx.SM86}, "sm_86 allows 101376"},
		{gen.Config{K: 1, MaxCandidates: 10, BlockSize: 64, Bins: 64}, "no target"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error mentioning %q", c.cfg, err, c.want)
		}
	}
	for _, k := range []int{1, 16, 64, 512, 1024, 2048} {
		cfg := gen.DefaultConfig()
		cfg.K, cfg.MaxCandidates = k, 3*k
		if err := cfg.Validate(); err != nil {
			t.Errorf("K=%d: %v", k, err)
		}
	}
}

// TestGenerateValidConfigs: every configuration Validate accepts
// generates, without a panic or an error, instrumented or not. The
// configurations are the fuzzers' (fuzzcase.Random, decoded into the valid
// space: every Top-K kernel, cluster sizes, MaxN, the keep, score types),
// generated and not run, so many more of them than the fuzzers run in the
// same time: generating gvr_topk_cluster with the keep and Bins = 2
// panicked (FuzzTopKConfig's fixedbug-cgvr-keep-bins2).
func TestGenerateValidConfigs(t *testing.T) {
	const parts, perPart = 4, 60
	for part := range parts {
		t.Run(fmt.Sprint("part=", part), func(t *testing.T) {
			t.Parallel()
			for i := part * perPart; i < (part+1)*perPart; i++ {
				p := fuzzcase.Random(rand.New(rand.NewPCG(1, uint64(i))))
				c, err := p.Case(1 << 22)
				if err != nil {
					continue // no valid configuration: Case says so, and TestFuzzCorpus checks the seeds decode
				}
				for _, instrument := range []bool{false, true} {
					cfg := c.Config
					cfg.Instrument = instrument
					func() {
						defer func() {
							if r := recover(); r != nil {
								t.Errorf("%s %+v: panic: %v", c.Kernel, cfg, r)
							}
						}()
						if _, err := gen.Generate(c.Kernel, cfg); err != nil {
							t.Errorf("%s %+v: %v", c.Kernel, cfg, err)
						}
					}()
				}
			}
		})
	}
}

// hold spins until its timer has gone ns past its start and then ends: in
// the interpreter, whose %globaltimer counts the CTA's warp instructions
// and which runs a warp on until it blocks, each of the two warps issues
// ns of them after the other's, and a hold of 0 runs its loop once.
func TestHold(t *testing.T) {
	p, k := load(t, "hold", gen.Config{K: 16, MaxCandidates: 64, BlockSize: 64, Bins: 64, Target: ptx.SM90})
	issued := func(ns uint64) int64 {
		t.Helper()
		st, err := p.Run(emu.NewMemory(), emu.Launch{Grid: [3]int{1}, Args: k.Launch.Args().Set("ns", ns)})
		if err != nil {
			t.Fatalf("hold(%d): %v", ns, err)
		}
		return st.WarpInstructions
	}
	zero := issued(0)
	if zero > 2*20 { // two warps, a few instructions each
		t.Errorf("hold(0) issued %d warp instructions, want one pass of its loop", zero)
	}
	for _, ns := range []uint64{500, 5000} {
		lo, hi := 2*int64(ns), 2*int64(ns)+zero+2*3 // and one more pass of the loop's 3
		if got := issued(ns); got < lo || got > hi {
			t.Errorf("hold(%d) issued %d warp instructions, want %d to %d", ns, got, lo, hi)
		}
	}
}

// TestOutputAfterSampleLoads: a fallback kernel loads its output's
// parameters (out_idx and the rest) on Phase 1's path only once the row
// sample's first load is out, so that their latency passes under the
// sample's (perf notes 194): before, they were loaded ahead of Phase 1.
func TestOutputAfterSampleLoads(t *testing.T) {
	for _, c := range []struct {
		name    string
		cluster int
	}{{"topk_fallback", 0}, {"topk_fallback_cluster", 8}} {
		cfg := gen.DefaultConfig()
		cfg.Target = ptx.SM90
		cfg.Cluster = c.cluster
		cfg.MbarrierRounds = c.cluster > 0
		k, err := gen.Generate(c.name, cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		text := k.PTX()
		p1 := strings.Index(text, "// Phase 1 (no prediction)")
		if p1 < 0 {
			t.Fatalf("%s: no Phase 1 in its PTX", c.name)
		}
		phase1 := text[p1:]
		load, out := strings.Index(phase1, "ld.global"), strings.Index(phase1, "[out_idx]")
		switch {
		case load < 0:
			t.Errorf("%s: no global load on Phase 1's path", c.name)
		case out < 0:
			t.Errorf("%s: out_idx's parameter is not loaded on Phase 1's path (before it instead?)", c.name)
		case out < load:
			t.Errorf("%s: out_idx's parameter loads before the sample's first load (bytes %d and %d past Phase 1's start)", c.name, out, load)
		}
	}
}

// TestRoundOneMessageEach checks that a cluster kernel's exchange round
// sends a CTA's values to each CTA as one st.async (a vector where there
// are several): a round takes longer by each message, not by its bytes
// (perf notes 200). It counts the st.async between each round's send
// ("combine across the cluster") and its receive's expected bytes.
func TestRoundOneMessageEach(t *testing.T) {
	for _, name := range []string{"topk_fallback_cluster", "gvr_topk_cluster"} {
		cfg := gen.DefaultConfig()
		cfg.Target = ptx.SM90
		cfg.Cluster = 16
		cfg.MbarrierRounds = true
		cfg.SureSet = true
		k, err := gen.Generate(name, cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rounds := strings.Split(k.PTX(), "// combine across the cluster")[1:]
		if len(rounds) == 0 {
			t.Fatalf("%s: no exchange round in its PTX", name)
		}
		for i, r := range rounds {
			end := strings.Index(r, "mbarrier.arrive.expect_tx")
			if end < 0 {
				t.Fatalf("%s: round %d has no receive after its send", name, i)
			}
			if n := strings.Count(r[:end], "st.async"); n != 1 {
				t.Errorf("%s: round %d sends %d st.async a CTA, want 1", name, i, n)
			}
		}
	}
}
