package fuzzcase

import (
	"math"
	"math/rand/v2"
	"strings"
)

// A Fill makes a row's base values: n of them, for K and MaxCandidates c.
type Fill struct {
	Name string
	Gen  func(r *rand.Rand, n, K, c int) []float32
}

// Fills are the base value distributions, indexed by Params.Fill.
var Fills = []Fill{
	{"normal", func(r *rand.Rand, n, K, c int) []float32 { return normal(r, n, 1) }},
	{"bf16", func(r *rand.Rand, n, K, c int) []float32 { return bf16s(normal(r, n, 1)) }},
	// bf16 of a narrow spread: a few hundred distinct values, wide ties.
	{"bf16-narrow", func(r *rand.Rand, n, K, c int) []float32 { return bf16s(normal(r, n, 0.01)) }},
	{"small-ints", func(r *rand.Rand, n, K, c int) []float32 {
		return fill(n, func(int) float32 { return float32(r.IntN(8)) })
	}},
	// Every element equal, to a value from Palette (NaN and -Inf included).
	{"equal", func(r *rand.Rand, n, K, c int) []float32 {
		v := Palette[r.IntN(len(Palette))]
		return fill(n, func(int) float32 { return v })
	}},
	{"ascending", func(r *rand.Rand, n, K, c int) []float32 {
		return fill(n, func(i int) float32 { return float32(i) / 1024 })
	}},
	{"descending", func(r *rand.Rand, n, K, c int) []float32 {
		return fill(n, func(i int) float32 { return -float32(i) / 1024 })
	}},
	// Ties at the K-th value wider than the candidate buffer: K/2 values
	// above 2K+c equal ones, the rest below.
	{"wide-ties", func(r *rand.Rand, n, K, c int) []float32 {
		x := fill(n, func(int) float32 { return r.Float32() / 2 })
		spread(r, x, 2*K+c, func() float32 { return 1 })
		spread(r, x, K/2, func() float32 { return 2 })
		return x
	}},
	// Denormals of both signs and signed zeros: keys that differ only in
	// their low bits.
	{"denormals", func(r *rand.Rand, n, K, c int) []float32 {
		return fill(n, func(int) float32 { return denormal(r) })
	}},
	// A DSA-style mask: a third of the row, then -Inf.
	{"masked-tail", func(r *rand.Rand, n, K, c int) []float32 {
		x := normal(r, n, 1)
		for i := n / 3; i < n; i++ {
			x[i] = float32(math.Inf(-1))
		}
		return x
	}},
	// Uniformly random bits: every float, NaNs with payloads included.
	{"bits", func(r *rand.Rand, n, K, c int) []float32 {
		return fill(n, func(int) float32 { return math.Float32frombits(r.Uint32()) })
	}},
	{"palette", func(r *rand.Rand, n, K, c int) []float32 {
		return fill(n, func(int) float32 { return Palette[r.IntN(len(Palette))] })
	}},
}

// Palette holds the values whose keys are edges of the Top-K order.
var Palette = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1, 0.5,
	float32(math.Inf(1)), float32(math.Inf(-1)),
	math.Float32frombits(0x7FC00000), // NaN
	math.Float32frombits(0xFFC00000), // -NaN
	math.Float32frombits(0x7F800001), // NaN, smallest payload
	math.Float32frombits(0x00000001), // smallest denormal
	math.Float32frombits(0x80000001), // its negative
	math.Float32frombits(0x007FFFFF), // largest denormal
	math.Float32frombits(0x00800000), // smallest normal
	math.MaxFloat32, -math.MaxFloat32,
}

// Specials name the bits of Params.Special. Each set bit sprinkles its
// values over about 2% of the row (25% with bit 7, "dense"); bit 6 instead
// plants more NaNs (the largest key) than K and than the candidate buffer.
var Specials = [8]string{"+nan", "-nan", "+inf", "-inf", "zeros", "denormals", "nan-mass", "dense"}

func specialNames(mask uint8) string {
	var s []string
	for b, name := range Specials {
		if mask&(1<<b) != 0 {
			s = append(s, name)
		}
	}
	if s == nil {
		return "none"
	}
	return strings.Join(s, "+")
}

// sprinkle overwrites elements of x with the special values mask names.
func sprinkle(r *rand.Rand, x []float32, mask uint8, K, c int) {
	kinds := []func() float32{
		func() float32 { return nan(r, 0) },
		func() float32 { return nan(r, 0x80000000) },
		func() float32 { return float32(math.Inf(1)) },
		func() float32 { return float32(math.Inf(-1)) },
		func() float32 { return float32(math.Copysign(0, float64(r.IntN(2)*2-1))) },
		func() float32 { return denormal(r) },
	}
	var on []func() float32
	for b, k := range kinds {
		if mask&(1<<b) != 0 {
			on = append(on, k)
		}
	}
	density := 0.02
	if mask&0x80 != 0 {
		density = 0.25
	}
	if on != nil {
		for i := range x {
			if r.Float64() < density {
				x[i] = on[r.IntN(len(on))]()
			}
		}
	}
	if mask&0x40 != 0 {
		spread(r, x, max(4*K, c+1)+7, func() float32 { return nan(r, uint32(r.IntN(2))<<31) })
	}
}

// A Pred makes gvr_topk's prediction from the reference Top-K top (K
// slots, -1 past n) of a row of n elements.
type Pred struct {
	Name string
	Gen  func(r *rand.Rand, top []int32, n, K int) []int32
}

// Preds are the prediction modes, indexed by Params.Pred.
var Preds = []Pred{
	{"none", func(r *rand.Rand, top []int32, n, K int) []int32 { return nil }},
	{"perfect", func(r *rand.Rand, top []int32, n, K int) []int32 { return clone(top) }},
	{"partial", func(r *rand.Rand, top []int32, n, K int) []int32 {
		p := clone(top)
		for j := K / 2; j < K; j++ {
			p[j] = index(r, n)
		}
		return p
	}},
	{"random", func(r *rand.Rand, top []int32, n, K int) []int32 {
		p := make([]int32, K)
		for j := range p {
			p[j] = index(r, n)
		}
		return p
	}},
	// Negative, out of range (just and far) and duplicate indices.
	{"garbage", func(r *rand.Rand, top []int32, n, K int) []int32 {
		junk := []int32{-1, math.MinInt32, int32(n), int32(n + 100), math.MaxInt32, 0, 0, index(r, n)}
		p := make([]int32, K)
		for j := range p {
			p[j] = junk[j%len(junk)]
		}
		return p
	}},
	{"duplicates", func(r *rand.Rand, top []int32, n, K int) []int32 {
		p := make([]int32, K)
		for j := range p {
			p[j] = top[0]
		}
		return p
	}},
	// A quarter of the Top-K, pred_count shorter than K.
	{"short", func(r *rand.Rand, top []int32, n, K int) []int32 { return clone(top[:max(1, K/4)]) }},
	// The Top-K one position on, as when the scored window moves: the last
	// may fall past the row.
	{"shifted", func(r *rand.Rand, top []int32, n, K int) []int32 {
		p := clone(top)
		for j := range p {
			if p[j] >= 0 {
				p[j]++
			}
		}
		return p
	}},
	// pred_count 2K: the Top-K, then K random indices.
	{"long", func(r *rand.Rand, top []int32, n, K int) []int32 {
		p := clone(top)
		for range K {
			p = append(p, index(r, n))
		}
		return p
	}},
}

// RowFromBytes decodes a fuzzer's bytes into a row. enc%3 picks how
// elements are coded: 0, float32 (4 bytes, little-endian: every float);
// 1, bfloat16 (2 bytes: the high half of a float32, so ties and NaN/Inf
// are a few mutations away); 2, a byte indexing Palette (b%16) or, from
// 16 up, the small integer b/16. length 0 gives the elements the data
// holds; any other length repeats them cyclically (zeros when there are
// none) up to length, wrapped modulo maxN+1.
func RowFromBytes(enc uint8, length uint16, data []byte, maxN int) []float32 {
	size := [3]int{4, 2, 1}[enc%3]
	var elems []float32
	for i := 0; i+size <= len(data); i += size {
		var v float32
		switch size {
		case 4:
			v = math.Float32frombits(uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24)
		case 2:
			v = math.Float32frombits((uint32(data[i]) | uint32(data[i+1])<<8) << 16)
		default:
			if b := data[i]; b < 16 {
				v = Palette[b]
			} else {
				v = float32(b / 16)
			}
		}
		elems = append(elems, v)
	}
	n := len(elems)
	if length != 0 {
		n = int(length)
	}
	n %= maxN + 1
	x := make([]float32, n)
	if len(elems) > 0 {
		for i := range x {
			x[i] = elems[i%len(elems)]
		}
	}
	return x
}

// PredFromBytes decodes a prediction: each 2 bytes are a little-endian
// int16 index, so negative and out-of-range indices are common. No bytes
// (fewer than 2) means pred_count = 0.
func PredFromBytes(b []byte) []int32 {
	var p []int32
	for i := 0; i+2 <= len(b); i += 2 {
		p = append(p, int32(int16(uint16(b[i])|uint16(b[i+1])<<8)))
	}
	return p
}

func fill(n int, f func(i int) float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = f(i)
	}
	return x
}

func normal(r *rand.Rand, n int, scale float64) []float32 {
	return fill(n, func(int) float32 { return float32(r.NormFloat64() * scale) })
}

// BF16 rounds x to bfloat16 (to nearest, ties to even), as a model's
// scores often are: it makes ties common.
func BF16(x float32) float32 {
	b := math.Float32bits(x)
	if x != x {
		return x // rounding could carry a NaN's payload into Inf
	}
	b += 0x7FFF + (b>>16)&1
	return math.Float32frombits(b &^ 0xFFFF)
}

func bf16s(x []float32) []float32 {
	for i := range x {
		x[i] = BF16(x[i])
	}
	return x
}

// nan is a NaN with a random payload and the given sign bit.
func nan(r *rand.Rand, sign uint32) float32 {
	return math.Float32frombits(sign | 0x7F800000 | (1 + r.Uint32N(0x7FFFFF)))
}

// denormal is a random denormal of either sign, or a signed zero.
func denormal(r *rand.Rand) float32 {
	return math.Float32frombits(uint32(r.IntN(2))<<31 | r.Uint32N(0x800000))
}

// spread sets m distinct random positions of x (at most all) to v().
func spread(r *rand.Rand, x []float32, m int, v func() float32) {
	for _, i := range r.Perm(len(x))[:min(m, len(x))] {
		x[i] = v()
	}
}

// index is a random index of a row of n elements (-1 when it is empty).
func index(r *rand.Rand, n int) int32 {
	if n == 0 {
		return -1
	}
	return int32(r.IntN(n))
}

func clone(s []int32) []int32 { return append([]int32(nil), s...) }
