// Package fuzzcase builds random Top-K test cases from a handful of raw
// numbers: a kernel, a configuration mapped into the valid space, and a
// recipe for a row and its prediction. The interpreter's fuzz targets (gen)
// and the GPU fuzz test (topk, tag cuda) share it, so a case found on one
// side can be replayed on the other.
//
// Decoding is deterministic: the same Params and maxN give the same Case,
// the same row and the same prediction, on every machine. It uses only
// math/rand/v2's PCG, whose output is fixed by its specification.
//
// The package cannot check results: package topk (the reference) imports
// nothing from here, and topk's own tests import this package. Callers
// compare with topk.Check.
package fuzzcase

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/internal/half"
	"github.com/gvr-go/gvr/ptx"
)

// Kernels are the Top-K kernels a case can run: one CTA per row, then one
// thread-block cluster per row (sm_90+).
var Kernels = []string{"gvr_topk", "topk_fallback", "topk_radix", "gvr_topk_cluster", "topk_fallback_cluster"}

// Targets are the targets a case can generate for: sm_75 lacks redux.sync,
// so it takes the shuffle paths.
var Targets = []ptx.Target{ptx.SM75, ptx.SM80, ptx.SM90, ptx.SM100}

// ScoreTypes are the score types by Flags bits 4-5: float32 twice as often
// as each 16-bit type.
var ScoreTypes = [4]gen.ScoreType{gen.Float32, gen.Float16, gen.BFloat16, gen.Float32}

// InterpMaxN is the longest row the interpreter's fuzz targets run: one
// execution stays well under a second.
const InterpMaxN = 8192

// Params are the raw numbers of a case, as a fuzzer mutates them. Every
// value is valid: Case maps each field into range as documented here.
type Params struct {
	Kernel  uint8  // Kernels[Kernel % 5]
	Target  uint8  // Targets[Target % 4]
	K       uint16 // K = 1 + K % 2048
	Cand    uint16 // MaxCandidates = K + Cand % (2K + 64): Cand = 0 leaves no room
	Block   uint8  // BlockSize = 32 << (Block % 6): 32 to 1024
	Bins    uint8  // Bins = 2 << (Bins % 11), raised to the warp count: 2 to 2048
	Unroll  uint8  // Unroll = Unroll % 17 (0: the default)
	Flags   uint8  // bit 0: Sorted; bit 1: no value output; bits 2-3: empty rows before the row; bits 4-5: the score type (ScoreTypes); bits 6-7: a cluster kernel's Cluster = 1 << (bits + Seed bit 53)
	N       uint32 // the row length (Length)
	Fill    uint8  // the row's base values: Fills[Fill % len(Fills)]
	Special uint8  // special values sprinkled over the row: a bit mask (Specials)
	Pred    uint8  // gvr_topk's prediction: Preds[Pred % len(Preds)]
	Seed    uint64 // the random source of the row and the prediction; a cluster kernel's MaxN (bits 56-63), MbarrierRounds (bit 55), KeepOver (bit 54) and, with Flags bits 6-7, Cluster (bit 53); SureSet (bit 52); with no empty rows before a nonempty row, a dense batch (bit 51: Case.Dense); topk_fallback_cluster's Groups (where Cluster >= 2, KeepOver is off and bit 50 set: 2 + bits 48-49, 3 more with bit 47: 2 to 8; no SureSet then)
}

// Args are p's fields in order: the arguments of a fuzz function that
// takes Params field by field (gen's FuzzTopKConfig).
func (p Params) Args() []any {
	return []any{p.Kernel, p.Target, p.K, p.Cand, p.Block, p.Bins, p.Unroll, p.Flags,
		p.N, p.Fill, p.Special, p.Pred, p.Seed}
}

// Corpus is p as a Go fuzz corpus file (testdata/fuzz/<Target>/<name>) of
// a fuzz function whose arguments are Args.
func (p Params) Corpus() string {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, a := range p.Args() {
		fmt.Fprintf(&b, "%T(%v)\n", a, a)
	}
	return b.String()
}

// Length is the row length p.N gives for K and MaxCandidates C: N % 4
// picks an anchor (0, K, C, 2C+K) and N/4 an offset o from it, n = anchor
// + o - 8 (reflected at 0), so the lengths around each anchor (K-1, K,
// K+1, C+1...) are small values of N. A length past maxN wraps modulo
// maxN+1.
func (p Params) Length(K, C, maxN int) int {
	anchor := [4]int{0, K, C, 2*C + K}[p.N%4]
	n := anchor + int(p.N/4) - 8
	if n < 0 {
		n = -n
	}
	if n > maxN {
		n %= maxN + 1
	}
	return n
}

// Case is a decoded Params: what runs and on what.
type Case struct {
	Params Params
	MaxN   int        // the longest row it was decoded for
	Kernel string     // one of Kernels
	Config gen.Config // valid
	N      int        // the row length
	Lead   int        // empty rows launched before the row (so, with an odd stride, it starts at any alignment)
	Dense  bool       // no Lead, the row at stride N and a null lengths pointer: a dense batch
	Values bool       // whether out_vals is given (a nil pointer means no value writes)
	Fill   Fill
	Pred   Pred
}

// ForSM is p with its Target lowered so that the case runs on a device of
// compute capability sm (major*10+minor): the target p picks if the device
// runs it, else the newest older one. A cluster kernel decodes the targets
// without clusters as sm_90 or sm_100 (Case), so there the low bit picks
// sm_90. A device older than every target a kernel has is the caller's
// check (a cluster kernel needs sm_90).
func (p Params) ForSM(sm int) Params {
	i := int(p.Target) % len(Targets)
	for i > 0 && Targets[i].SM > sm {
		i--
	}
	p.Target = uint8(i)
	if gen.IsClusterKernel(Kernels[int(p.Kernel)%len(Kernels)]) && !Targets[i].Has(ptx.FeatCluster) && ptx.SM100.SM > sm {
		p.Target = 0 // decodes as sm_90
	}
	return p
}

// Case decodes p for rows of at most maxN elements. The configuration is
// valid: one whose shared memory does not fit the target is retried with
// MaxCandidates = K, and the error says when even that does not fit.
func (p Params) Case(maxN int) (Case, error) {
	K := 1 + int(p.K)%2048
	cfg := gen.Config{
		K:             K,
		MaxCandidates: K + int(p.Cand)%(2*K+64),
		BlockSize:     32 << (p.Block % 6),
		Bins:          2 << (p.Bins % 11),
		Target:        Targets[int(p.Target)%len(Targets)],
		Unroll:        int(p.Unroll) % 17,
		Sorted:        p.Flags&1 != 0,
		Scores:        ScoreTypes[p.Flags>>4&3],
	}
	// Bins must be a multiple of the warp count; both are powers of two.
	cfg.Bins = max(cfg.Bins, cfg.BlockSize/32)
	kernel := Kernels[int(p.Kernel)%len(Kernels)]
	cluster := gen.IsClusterKernel(kernel)
	if cluster {
		// sm_90 or sm_100; clusters of 1 to 16 CTAs (16, non-portable, is
		// what the Selector runs most at batch 1); the rounds signalled
		// either way; with the keep or without; and, one time in two, a
		// MaxN that makes part of the row stay in global memory.
		if !cfg.Target.Has(ptx.FeatCluster) {
			cfg.Target = []ptx.Target{ptx.SM90, ptx.SM100}[p.Target&1]
		}
		cfg.Cluster = 1 << (p.Flags>>6 + uint8(p.Seed>>53&1))
		cfg.MbarrierRounds = p.Seed>>55&1 != 0
		cfg.KeepOver = p.Seed>>54&1 != 0
	}
	cfg.SureSet = p.Seed>>52&1 != 0
	if kernel == "topk_fallback_cluster" && cfg.Cluster >= 2 && !cfg.KeepOver && p.Seed>>50&1 != 0 {
		// The row shared by 2 to 8 clusters (gen.MaxGroups; the H100's
		// table shares rows among up to 7), which do not set apart the
		// sure candidates. Bit 47 came later: the corpus's cases with
		// groups have it clear and keep theirs.
		cfg.Groups = 2 + int(p.Seed>>48&3) + 3*int(p.Seed>>47&1)
		cfg.SureSet = false
	}
	if cfg.Validate() != nil {
		cfg.MaxCandidates = K
	}
	if err := cfg.Validate(); err != nil {
		return Case{}, fmt.Errorf("fuzzcase: %+v: %w", p, err)
	}
	n := p.Length(cfg.K, cfg.MaxCandidates, maxN)
	if m := int(p.Seed >> 56); cluster && m >= 128 {
		cfg.MaxN = max(16, n*(m-127)/128)
	}
	if cluster && !gen.FitsCluster(kernel, cfg) {
		cfg.MaxN = 0 // what the shared memory left holds
	}
	if cluster && !gen.FitsCluster(kernel, cfg) {
		cfg.MaxCandidates = K
	}
	if cluster && !gen.FitsCluster(kernel, cfg) {
		return Case{}, fmt.Errorf("fuzzcase: %+v: %v leaves no shared memory for a slice", p, cfg)
	}
	return Case{
		Params: p,
		MaxN:   maxN,
		Kernel: kernel,
		Config: cfg,
		N:      n,
		Lead:   int(p.Flags>>2) & 3,
		Dense:  p.Seed>>51&1 != 0 && p.Flags>>2&3 == 0 && n > 0,
		Values: p.Flags&2 == 0,
		Fill:   Fills[int(p.Fill)%len(Fills)],
		Pred:   Preds[int(p.Pred)%len(Preds)],
	}, nil
}

// String describes c completely enough to rebuild it: the Params (which
// with MaxN decode to c) and what they decode to.
func (c Case) String() string {
	s := fmt.Sprintf("%s (%v) n=%d fill=%s special=%s", c.Kernel, c.Config, c.N, c.Fill.Name, specialNames(c.Params.Special))
	if c.Predicted() {
		s += " pred=" + c.Pred.Name
	}
	if c.Lead > 0 {
		s += fmt.Sprintf(" lead=%d", c.Lead)
	}
	if !c.Values {
		s += " no-values"
	}
	if c.Dense {
		s += " no-lengths" // a dense batch ("+dense" among the specials is another thing)
	}
	return s + fmt.Sprintf(" [maxN %d, %+v]", c.MaxN, c.Params)
}

// rng is the case's random source for one purpose (row, prediction).
func (c Case) rng(stream uint64) *rand.Rand { return rand.New(rand.NewPCG(c.Params.Seed, stream)) }

// Row is the case's row: its base values, then the specials sprinkled in;
// for 16-bit scores, the exact float32 values of Row16.
func (c Case) Row() []float32 {
	if c.Config.Scores != gen.Float32 {
		return widen(c.Config.Scores, c.Row16())
	}
	return c.row32()
}

func (c Case) row32() []float32 {
	r := c.rng(1)
	x := c.Fill.Gen(r, c.N, c.Config.K, c.Config.MaxCandidates)
	sprinkle(r, x, c.Params.Special, c.Config.K, c.Config.MaxCandidates)
	return x
}

// Row16 is the row of a case of 16-bit scores: the float32 row rounded
// (nil for float32 scores).
func (c Case) Row16() []uint16 {
	if c.Config.Scores == gen.Float32 {
		return nil
	}
	return Narrow(c.Config.Scores, c.row32())
}

// Predicted reports whether the case's kernel takes a prediction.
func (c Case) Predicted() bool { return c.Kernel == "gvr_topk" || c.Kernel == "gvr_topk_cluster" }

// Prediction is gvr_topk's prediction for the row, made from the
// reference Top-K top (topk.Reference(row, K, true): K slots, -1 past n).
// nil means pred_count = 0.
func (c Case) Prediction(top []int32) []int32 {
	return c.Pred.Gen(c.rng(2), top, c.N, c.Config.K)
}

// Random draws Params the way a GPU run wants them: mostly short and edge
// lengths, small and middling K, some rows up to 256K elements and K up to
// 2048.
func Random(r *rand.Rand) Params {
	p := Params{
		Kernel: uint8(r.UintN(256)), Target: uint8(r.UintN(256)), Block: uint8(r.UintN(256)),
		Bins: uint8(r.UintN(256)), Unroll: uint8(r.UintN(256)), Flags: uint8(r.UintN(256)),
		Fill: uint8(r.UintN(256)), Special: uint8(r.UintN(256)), Pred: uint8(r.UintN(256)),
		Seed: r.Uint64(),
	}
	switch u := r.Float64(); {
	case u < 0.4:
		p.K = uint16(r.IntN(64))
	case u < 0.8:
		p.K = uint16(64 + r.IntN(448))
	default:
		p.K = uint16(r.IntN(2048))
	}
	if r.IntN(4) > 0 {
		p.Cand = uint16(r.UintN(1 << 16))
	}
	if r.IntN(4) == 0 {
		p.Special = 0 // clean rows too
	}
	o := r.IntN(16) // an edge length around the anchor
	switch u := r.Float64(); {
	case u < 0.3:
		o = r.IntN(8192)
	case u < 0.45:
		o = r.IntN(1 << 18)
	}
	p.N = uint32(r.IntN(4) + 4*o)
	return p
}

// format is the 16-bit format of score type s (not Float32).
func format(s gen.ScoreType) half.Format {
	if s == gen.BFloat16 {
		return half.BFloat16
	}
	return half.Float16
}

// Narrow rounds x to the 16-bit score type s.
func Narrow(s gen.ScoreType, x []float32) []uint16 { return format(s).Narrow(x) }

// widen is the exact float32 values of 16-bit scores of type s.
func widen(s gen.ScoreType, h []uint16) []float32 { return format(s).Widen(h) }
