package topk

// Synthetic workloads: the GVR paper's synthetic indexer scores (appendix
// "Synthetic Data Generation", gvr-paper.tex), ported from its Python to Go,
// and a decode trajectory built from the same pieces.
//
// The port keeps torch's float32 arithmetic (every operation rounded to
// float32 as torch does on float32 tensors) and numpy's float64 for the
// static prediction, but draws its normal variates from Go's math/rand/v2
// (PCG, seeded) instead of torch's generator, so it reproduces the paper's
// distribution, not its bits. The output is deterministic from the seed
// on every platform: explicit float32 conversions keep the compiler from
// fusing multiplies and adds.

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
)

// The paper's defaults.
const (
	DefaultAm    = 0.1 // amplitude of the random part of q and k
	DefaultDRope = 64  // RoPE dimensions
)

// YaRNInvFreq is the paper's yarn_inv_freq(dim) with its defaults (base
// 10000, scaling factor 40, original context 4096, beta_fast 32,
// beta_slow 1): DeepSeek-V3.2's YaRN RoPE frequencies, dim/2 of them.
func YaRNInvFreq(dim int) []float32 { return yarnInvFreq(dim, 10000, 40, 4096, 32, 1) }

func yarnInvFreq(dim int, base, sf float64, origMax, bf, bs int) []float32 {
	half := dim / 2
	// lo and hi are Python floats truncated to int.
	lo := max(int(float64(dim)*math.Log(float64(origMax)/(float64(bf)*2*math.Pi))/(2*math.Log(base))), 0)
	hi := min(int(math.Ceil(float64(dim)*math.Log(float64(origMax)/(float64(bs)*2*math.Pi))/(2*math.Log(base)))), dim-1)
	span := float32(max(hi-lo, 1)) // max(hi-lo, 1e-3) of integers
	f := make([]float32, half)
	for i := range f {
		// pos_f = base ** (arange(0, dim, 2) / dim), in float32.
		e := float32(2*i) / float32(dim)
		posF := float32(math.Pow(base, float64(e)))
		extra := 1 / posF
		inter := 1 / float32(float32(sf)*posF)
		ramp := min(max((float32(i)-float32(lo))/span, 0), 1)
		f[i] = float32(inter*ramp) + float32(extra*float32(1-ramp))
	}
	return f
}

// StaticPrediction is the paper's compute_static_pre_idx(n, k, dRope): the
// Top-K of the all-ones RoPE structural prior f(p) = 2 sum_i cos(p
// theta_i), in float64 as numpy computes it, ordered by value descending
// (ties by index ascending). It is the same for every row of length n, and
// the paper's prediction for synthetic scores.
func StaticPrediction(n, k, dRope int) []int32 {
	theta := YaRNInvFreq(dRope)
	f := make([]float64, n)
	terms := make([]float64, len(theta))
	for p := range f {
		for i, t := range theta {
			terms[i] = math.Cos(float64(p) * float64(t))
		}
		f[p] = 2 * pairwiseSum(terms)
	}
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if f[a] != f[b] {
			if f[a] > f[b] {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	return idx[:min(k, n)]
}

// pairwiseSum adds like numpy's sum of a short contiguous float64 array
// (fewer than 128 elements): eight interleaved partial sums, combined
// pairwise, then the remainder.
func pairwiseSum(a []float64) float64 {
	if len(a) < 8 {
		s := 0.0
		for _, x := range a {
			s += x
		}
		return s
	}
	var r [8]float64
	copy(r[:], a)
	i := 8
	for ; i < len(a)-len(a)%8; i += 8 {
		for j := range r {
			r[j] += a[i+j]
		}
	}
	s := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
	for ; i < len(a); i++ {
		s += a[i]
	}
	return s
}

// ropes holds the paper's RoPE cosines and sines of positions 0..n-1:
// cos(pos*inv_freq) and sin(pos*inv_freq) in float32, half = len(inv_freq)
// per position.
type ropes struct {
	cos, sin []float32
	half     int
}

func newRopes(n int, invFreq []float32) ropes {
	h := len(invFreq)
	r := ropes{make([]float32, n*h), make([]float32, n*h), h}
	for p := range n {
		for i, f := range invFreq {
			a := float64(float32(float32(p) * f))
			r.cos[p*h+i] = float32(math.Cos(a))
			r.sin[p*h+i] = float32(math.Sin(a))
		}
	}
	return r
}

// apply is rope(x, c, s) at position p: x1, x2 = x[0::2], x[1::2];
// [x1*c - x2*s, x2*c + x1*s].
func (r ropes) apply(dst, x []float32, p int) {
	h := r.half
	c, s := r.cos[p*h:(p+1)*h], r.sin[p*h:(p+1)*h]
	for i := range h {
		x1, x2 := x[2*i], x[2*i+1]
		dst[i] = float32(x1*c[i]) - float32(x2*s[i])
		dst[h+i] = float32(x2*c[i]) + float32(x1*s[i])
	}
}

// dot is a float32 dot product accumulated in order.
func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += float32(a[i] * b[i])
	}
	return s
}

// randnVec fills x with 1 + am*randn, as `1.0 + Am * torch.randn(...)`.
func randnVec(x []float32, am float32, rng *rand.Rand) {
	for i := range x {
		x[i] = 1 + float32(am*float32(rng.NormFloat64()))
	}
}

// Synthetic is the paper's generate_indexer_scores: a row of N scores q.k_p
// of a random query q and random keys k_p (1 + Am*randn each) with YaRN
// RoPE at the key's position p, and the static structural prior as the
// prediction.
type Synthetic struct {
	N     int     // positions per row
	K     int     // size of the prediction; 0 means 2048
	Am    float32 // 0 means DefaultAm
	DRope int     // 0 means DefaultDRope
	Seed  uint64
}

func (s Synthetic) withDefaults() Synthetic {
	if s.K == 0 {
		s.K = 2048
	}
	if s.Am == 0 {
		s.Am = DefaultAm
	}
	if s.DRope == 0 {
		s.DRope = DefaultDRope
	}
	return s
}

// Rows returns rows independent rows of N scores, [rows*N] row-major. Row r
// is generate_indexer_scores with its own generator, seeded from (Seed, r),
// so a row does not depend on how many are asked for. Rows are generated
// in parallel.
func (s Synthetic) Rows(rows int) []float32 {
	s = s.withDefaults()
	out := make([]float32, rows*s.N)
	rp := newRopes(max(s.N, 1), YaRNInvFreq(s.DRope)) // position 0 is the query's
	parallel(rows, func(r int) { s.row(out[r*s.N:(r+1)*s.N], rp, r) })
	return out
}

// row fills dst with row r: q first, then the keys one position after the
// other, as torch draws them. rp holds at least max(len(dst), 1) positions.
func (s Synthetic) row(dst []float32, rp ropes, r int) {
	rng := rand.New(rand.NewPCG(s.Seed, uint64(r)))
	d := s.DRope
	q, qr := make([]float32, d), make([]float32, d)
	k, kr := make([]float32, d), make([]float32, d)
	randnVec(q, s.Am, rng)
	rp.apply(qr, q, 0) // the query sits at position 0
	for p := range dst {
		randnVec(k, s.Am, rng)
		rp.apply(kr, k, p)
		dst[p] = dot(qr, kr)
	}
}

// Prediction is StaticPrediction(N, K, DRope).
func (s Synthetic) Prediction() []int32 {
	s = s.withDefaults()
	return StaticPrediction(s.N, s.K, s.DRope)
}

// parallel runs f(0..n-1) on GOMAXPROCS goroutines.
func parallel(n int, f func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// Decode is a synthetic decode trajectory of one row, built like
// Synthetic: random keys with YaRN RoPE at their positions, and a query
// that drifts a little each step (q += Drift*randn), while the sequence
// grows by one position a step. Consecutive steps' Top-K overlap, as in a
// real decode, which is what GVR's prediction relies on.
type Decode struct {
	keys  []float32 // RoPE'd keys, DefaultDRope per position
	maxN  int
	rp    ropes
	q, qr []float32
	n     int // current length
	drift float32
	rng   *rand.Rand
}

// NewDecode starts a trajectory at length start that can grow to maxLen.
// drift 0 means Am/10.
func NewDecode(start, maxLen int, drift float32, seed uint64) *Decode {
	am := float32(DefaultAm)
	if drift == 0 {
		drift = am / 10
	}
	const dim = DefaultDRope
	d := &Decode{n: min(start, maxLen), maxN: maxLen, drift: drift, rng: rand.New(rand.NewPCG(seed, 0)),
		rp: newRopes(max(maxLen, 1), YaRNInvFreq(dim))}
	d.q, d.qr = make([]float32, dim), make([]float32, dim)
	randnVec(d.q, am, d.rng)
	d.keys = make([]float32, maxLen*dim)
	k := make([]float32, dim)
	for p := range maxLen {
		randnVec(k, am, d.rng)
		d.rp.apply(d.keys[p*dim:(p+1)*dim], k, p)
	}
	return d
}

// Len is the length of the next step's row.
func (d *Decode) Len() int { return d.n }

// Next returns the current step's scores (Len of them), then drifts the
// query and grows the row by one position (up to maxLen).
func (d *Decode) Next() []float32 {
	const dim = DefaultDRope
	d.rp.apply(d.qr, d.q, 0)
	out := make([]float32, d.n)
	for p := range out {
		out[p] = dot(d.qr, d.keys[p*dim:(p+1)*dim])
	}
	for i := range d.q {
		d.q[i] += float32(d.drift * float32(d.rng.NormFloat64()))
	}
	d.n = min(d.n+1, d.maxN)
	return out
}
