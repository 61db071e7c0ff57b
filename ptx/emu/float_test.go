package emu

import (
	"math"
	"math/big"
	"math/rand"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// Special float32 bit patterns: zeros, ones, infinities, NaNs of both signs
// (quiet and signalling), the subnormal and normal extremes.
var specials32 = []uint32{
	0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000,
	0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF,
	0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF,
	0x3FC00000, 0x40400000, 0x3EAAAAAB, 0x33800000, 0x34000000, 0x4B800000, 0x4B800001,
}

// values32 is the specials plus random floats of every magnitude and of
// moderate magnitude (where rounding, not overflow, decides).
func values32(rng *rand.Rand, n int) []uint32 {
	v := append([]uint32(nil), specials32...)
	for range n {
		v = append(v, rng.Uint32(), math.Float32bits(float32(rng.NormFloat64()*math.Exp2(float64(rng.Intn(40)-20)))))
	}
	return v
}

// ref32 rounds the exact nonzero finite value v to float32 in mode m,
// choosing between the round-to-nearest result and its neighbour.
func ref32(v *big.Float, m rmode) uint64 {
	r, _ := v.Float32()
	if m == rn {
		return uint64(math.Float32bits(r))
	}
	var c int
	if math.IsInf(float64(r), 0) {
		c = int(math.Copysign(1, float64(r)))
	} else {
		c = new(big.Float).SetFloat64(float64(r)).Cmp(v)
	}
	if c == 0 {
		return uint64(math.Float32bits(r))
	}
	lo, hi := r, r
	if c > 0 {
		lo = math.Nextafter32(r, float32(math.Inf(-1)))
	} else {
		hi = math.Nextafter32(r, float32(math.Inf(1)))
	}
	pick := lo
	switch {
	case m == rp, m == rz && v.Sign() < 0:
		pick = hi
	}
	return uint64(math.Float32bits(pick))
}

func ref64(v *big.Float, m rmode) uint64 {
	r, _ := v.Float64()
	if m == rn {
		return math.Float64bits(r)
	}
	var c int
	if math.IsInf(r, 0) {
		c = int(math.Copysign(1, r))
	} else {
		c = new(big.Float).SetFloat64(r).Cmp(v)
	}
	if c == 0 {
		return math.Float64bits(r)
	}
	lo, hi := r, r
	if c > 0 {
		lo = math.Nextafter(r, math.Inf(-1))
	} else {
		hi = math.Nextafter(r, math.Inf(1))
	}
	pick := lo
	switch {
	case m == rp, m == rz && v.Sign() < 0:
		pick = hi
	}
	return math.Float64bits(pick)
}

func big0(x float64) *big.Float { return new(big.Float).SetPrec(4000).SetFloat64(x) }

// refArith is the reference for a float operation on float64 values (f32
// inputs widened exactly): NaN in or out gives the canonical NaN;
// infinities and zeros follow IEEE; everything else is the exact value
// rounded by ref32/ref64.
func refArith(op string, xs []float64, m rmode, is32 bool) uint64 {
	nan, zero := uint64(nan64), func(neg bool) uint64 {
		if neg {
			return 1 << 63
		}
		return 0
	}
	if is32 {
		nan = nan32
		zero = func(neg bool) uint64 {
			if neg {
				return 0x80000000
			}
			return 0
		}
	}
	out := func(f float64) uint64 {
		if math.IsNaN(f) {
			return nan
		}
		if is32 {
			return uint64(math.Float32bits(float32(f)))
		}
		return math.Float64bits(f)
	}
	round := func(v *big.Float) uint64 {
		if is32 {
			return ref32(v, m)
		}
		return ref64(v, m)
	}
	// zeroSum: the sign of an exactly zero sum a+b.
	zeroSum := func(a, b float64) uint64 {
		if a == 0 && b == 0 && math.Signbit(a) == math.Signbit(b) {
			return zero(math.Signbit(a))
		}
		return zero(m == rm)
	}
	for _, x := range xs {
		if math.IsNaN(x) {
			return nan
		}
	}
	x, y := xs[0], 0.0
	if len(xs) > 1 {
		y = xs[1]
	}
	switch op {
	case "add":
		if !finite(x, y) {
			return out(x + y)
		}
		v := new(big.Float).SetPrec(4000).Add(big0(x), big0(y))
		if v.Sign() == 0 {
			return zeroSum(x, y)
		}
		return round(v)
	case "mul":
		if !finite(x, y) || x == 0 || y == 0 {
			return out(x * y)
		}
		return round(new(big.Float).SetPrec(4000).Mul(big0(x), big0(y)))
	case "fma":
		z := xs[2]
		if !finite(x, y, z) {
			return out(x*y + z)
		}
		v := new(big.Float).SetPrec(4000).Mul(big0(x), big0(y))
		if v.Sign() == 0 && z == 0 {
			p := math.Copysign(0, x) * math.Copysign(1, y)
			return zeroSum(p, z)
		}
		v.Add(v, big0(z))
		if v.Sign() == 0 {
			return zero(m == rm)
		}
		return round(v)
	case "div":
		if !finite(x, y) || x == 0 || y == 0 {
			return out(x / y)
		}
		return round(new(big.Float).SetPrec(400).Quo(big0(x), big0(y)))
	case "sqrt":
		if !finite(x) || x <= 0 {
			return out(math.Sqrt(x))
		}
		return round(new(big.Float).SetPrec(400).Sqrt(big0(x)))
	case "rcp":
		return refArith("div", []float64{1, x}, m, is32)
	}
	panic(op)
}

func TestFloatArith(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	v32 := values32(rng, 200)
	var v64 []uint64
	for _, b := range v32 {
		v64 = append(v64, math.Float64bits(float64(math.Float32frombits(b))))
	}
	for range 200 {
		v64 = append(v64, rng.Uint64(), math.Float64bits(rng.NormFloat64()*math.Exp2(float64(rng.Intn(80)-40))))
	}
	v64 = append(v64, 1, 0x000FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, 0x3CA0000000000000)

	for _, typ := range []ptx.Type{ptx.F32, ptx.F64} {
		is32 := typ == ptx.F32
		var vals []uint64
		if is32 {
			for _, b := range v32 {
				vals = append(vals, uint64(b))
			}
		} else {
			vals = v64
		}
		asF := func(b uint64) float64 {
			if is32 {
				return float64(math.Float32frombits(uint32(b)))
			}
			return math.Float64frombits(b)
		}
		for _, op := range []string{"add", "sub", "mul", "fma", "div", "sqrt", "rcp"} {
			arity := map[string]int{"fma": 3, "sqrt": 1, "rcp": 1}[op]
			if arity == 0 {
				arity = 2
			}
			var rows [][]uint64
			for range 2000 {
				r := make([]uint64, arity)
				for i := range r {
					r[i] = vals[rng.Intn(len(vals))]
				}
				// Also near-ties: b tiny against a.
				if arity >= 2 && rng.Intn(4) == 0 {
					r[1] = math.Float64bits(asF(r[0]) * math.Exp2(-float64(rng.Intn(60))))
					if is32 {
						r[1] = uint64(math.Float32bits(float32(math.Float64frombits(r[1]))))
					}
				}
				rows = append(rows, r)
			}
			for _, mode := range []string{"rn", "rz", "rm", "rp"} {
				m := rmodeOf(mode)
				mods := []string{mode, typ.Name()}
				k := opKernel{dt: typ, emit: emitOp(op, mods...)}
				for range arity {
					k.ts = append(k.ts, typ)
				}
				chunks(len(rows), func(lo, hi int) {
					got := k.run(t, cols(rows[lo:hi])...)
					for i, r := range rows[lo:hi] {
						xs := make([]float64, arity)
						for j := range xs {
							xs[j] = asF(r[j])
						}
						rop := op
						if op == "sub" {
							rop = "add"
							xs[1] = -xs[1]
						}
						want := refArith(rop, xs, m, is32)
						if got[i] != want {
							t.Errorf("%s.%s.%s %#x: got %#x, want %#x", op, mode, typ, r, got[i], want)
							return
						}
					}
				})
			}
		}
	}
}

// An f32 fma is rounded once: computing it as float32(math.FMA(..)) in
// float64 rounds twice, and these inputs show the difference.
func TestFMAf32SingleRounding(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	var rows [][]uint64
	twice := 0 // rows where rounding twice gives another answer
	row := func(a, b, c float32) []uint64 {
		return []uint64{uint64(math.Float32bits(a)), uint64(math.Float32bits(b)), uint64(math.Float32bits(c))}
	}
	for len(rows) < 1000 {
		// a and b have 13 significant bits, so a*b is exact in 26 bits
		// and often lands on a float32 halfway point; c is a nudge below
		// float64's half ulp. float64 rounds the nudge away, leaving the
		// tie, which float32 then breaks to even, not the nudge's way.
		a := float32(1 + math.Ldexp(float64(rng.Intn(1<<11)), -12))
		b := float32(1 + math.Ldexp(float64(rng.Intn(1<<11)), -12))
		c := float32(math.Ldexp(float64(2*rng.Intn(2)-1), -60-rng.Intn(20)))
		x, y, z := float64(a), float64(b), float64(c)
		exact := refArith("fma", []float64{x, y, z}, rn, true)
		if uint64(math.Float32bits(float32(math.FMA(x, y, z)))) != exact {
			twice++
			rows = append(rows, row(a, b, c))
		}
		// Plain rows too.
		a, b = float32(1+rng.Float64()), float32(1+rng.Float64())
		c = float32(-float64(a)*float64(b)) + float32(math.Ldexp(rng.Float64()-0.5, -20))
		rows = append(rows, row(a, b, c))
	}
	// Without such rows the test would not tell one rounding from two.
	if twice < 10 {
		t.Fatalf("only %d of %d rows tell single from double rounding", twice, len(rows))
	}
	k := opKernel{dt: ptx.F32, ts: []ptx.Type{ptx.F32, ptx.F32, ptx.F32}, emit: emitOp("fma", "rn", "f32")}
	chunks(len(rows), func(lo, hi int) {
		got := k.run(t, cols(rows[lo:hi])...)
		for i, r := range rows[lo:hi] {
			xs := []float64{float64(f32(r[0])), float64(f32(r[1])), float64(f32(r[2]))}
			if want := refArith("fma", xs, rn, true); got[i] != want {
				t.Fatalf("fma %#x: %#x, want %#x", r, got[i], want)
			}
		}
	})
}

// The NaN results of f32 arithmetic are the canonical 0x7fffffff, whatever
// the input NaN's sign and payload; abs and neg only touch the sign bit.
func TestFloatNaNAndSignOps(t *testing.T) {
	in := []uint64{0xFFC00000, 0x7F800001, 0x7FC12345, 0x7F800000}
	sq := opKernel{dt: ptx.F32, ts: []ptx.Type{ptx.F32, ptx.F32}, emit: emitOp("add", "f32")}.run(t, in, []uint64{0x3F800000, 0x3F800000, 0x3F800000, 0xFF800000})
	for i, v := range sq {
		if v != nan32 {
			t.Errorf("add %#x: %#x, want the canonical NaN", in[i], v)
		}
	}
	abs := opKernel{dt: ptx.F32, ts: []ptx.Type{ptx.F32}, emit: emitOp("abs", "f32")}.run(t, in)
	neg := opKernel{dt: ptx.F32, ts: []ptx.Type{ptx.F32}, emit: emitOp("neg", "f32")}.run(t, in)
	for i, v := range in {
		if abs[i] != v&^0x80000000 || neg[i] != v^0x80000000 {
			t.Errorf("abs/neg %#x: %#x %#x", v, abs[i], neg[i])
		}
	}
	// add.sat clamps to [0, 1], NaN to +0.
	sat := opKernel{dt: ptx.F32, ts: []ptx.Type{ptx.F32, ptx.F32}, emit: emitOp("add", "sat", "f32")}.run(t,
		[]uint64{0x7FC00000, 0x40000000, 0xBF800000, 0x3F000000}, []uint64{0, 0, 0, 0})
	if want := []uint64{0, 0x3F800000, 0, 0x3F000000}; !equal(sat, want) {
		t.Errorf("add.sat: %#x, want %#x", sat, want)
	}
	// Subnormals are kept, and flushed with .ftz.
	sub := opKernel{dt: ptx.F32, ts: []ptx.Type{ptx.F32}, emit: emitOp("sqrt", "rn", "f32")}.run(t, []uint64{0x00000004})
	ftz := opKernel{dt: ptx.F32, ts: []ptx.Type{ptx.F32}, emit: emitOp("sqrt", "rn", "ftz", "f32")}.run(t, []uint64{0x00000004, 0x80000001})
	if sub[0] != uint64(math.Float32bits(float32(math.Sqrt(4*math.SmallestNonzeroFloat32)))) || ftz[0] != 0 || ftz[1] != 0x80000000 {
		t.Errorf("sqrt of a subnormal: %#x, with .ftz %#x", sub, ftz)
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFloatMinMax(t *testing.T) {
	const (
		pz, nz   = 0x00000000, 0x80000000
		one, two = 0x3F800000, 0x40000000
		pinf     = 0x7F800000
		ninf     = 0xFF800000
		qn, nqn  = 0x7FC00000, 0xFFC00001
	)
	for _, c := range []struct {
		a, b             uint64
		min, max         uint64
		minNaN, maxNaN   uint64
		skipNaNQualifier bool
	}{
		{one, two, one, two, one, two, false},
		{pz, nz, nz, pz, nz, pz, false},
		{nz, pz, nz, pz, nz, pz, false},
		{qn, one, one, one, nan32, nan32, false},
		{one, nqn, one, one, nan32, nan32, false},
		{qn, nqn, nan32, nan32, nan32, nan32, false},
		{ninf, qn, ninf, ninf, nan32, nan32, false},
		{pinf, ninf, ninf, pinf, ninf, pinf, false},
	} {
		for _, op := range []struct {
			name string
			mods []string
			want uint64
		}{
			{"min", []string{"f32"}, c.min}, {"max", []string{"f32"}, c.max},
			{"min", []string{"NaN", "f32"}, c.minNaN}, {"max", []string{"NaN", "f32"}, c.maxNaN},
		} {
			got := opKernel{dt: ptx.F32, ts: []ptx.Type{ptx.F32, ptx.F32}, emit: emitOp(op.name, op.mods...)}.run(t, []uint64{c.a}, []uint64{c.b})
			if got[0] != op.want {
				t.Errorf("%s.%v(%#x, %#x) = %#x, want %#x", op.name, op.mods, c.a, c.b, got[0], op.want)
			}
		}
	}
	// f64 follows the same rules.
	got := opKernel{dt: ptx.F64, ts: []ptx.Type{ptx.F64, ptx.F64}, emit: emitOp("max", "f64")}.run(t,
		[]uint64{math.Float64bits(math.NaN()), 1 << 63}, []uint64{math.Float64bits(-2), 0})
	if got[0] != math.Float64bits(-2) || got[1] != 0 {
		t.Errorf("max.f64: %#x", got)
	}
}

func TestSetpFloat(t *testing.T) {
	nan := math.NaN()
	vals := []float64{nan, math.Inf(-1), -1, math.Copysign(0, -1), 0, 1, math.Inf(1)}
	var a, b []uint64
	for _, x := range vals {
		for _, y := range vals {
			a = append(a, uint64(math.Float32bits(float32(x))))
			b = append(b, uint64(math.Float32bits(float32(y))))
		}
	}
	ref := map[string]func(x, y float64) bool{
		"eq": func(x, y float64) bool { return x == y }, "ne": func(x, y float64) bool { return x == x && y == y && x != y },
		"lt": func(x, y float64) bool { return x < y }, "le": func(x, y float64) bool { return x <= y },
		"gt": func(x, y float64) bool { return x > y }, "ge": func(x, y float64) bool { return x >= y },
		"equ": func(x, y float64) bool { return !(x < y || x > y) }, "neu": func(x, y float64) bool { return x != y },
		"ltu": func(x, y float64) bool { return !(x >= y) }, "leu": func(x, y float64) bool { return !(x > y) },
		"gtu": func(x, y float64) bool { return !(x <= y) }, "geu": func(x, y float64) bool { return !(x < y) },
		"num": func(x, y float64) bool { return x == x && y == y }, "nan": func(x, y float64) bool { return x != x || y != y },
	}
	for op, f := range ref {
		for _, typ := range []ptx.Type{ptx.F32, ptx.F64} {
			in := [2][]uint64{a, b}
			if typ == ptx.F64 {
				for i := range in {
					in[i] = nil
					for _, v := range [][]uint64{a, b}[i] {
						in[i] = append(in[i], math.Float64bits(float64(f32(v))))
					}
				}
			}
			got := opKernel{dt: ptx.U32, ts: []ptx.Type{typ, typ}, emit: func(e *ptx.Entry, d ptx.Reg, r []ptx.Reg) {
				p := e.Pred()
				e.Setp(p, ptx.Cmp(op), r[0], r[1])
				e.Selp(d, ptx.Imm(1), ptx.Imm(0), p)
			}}.run(t, in[0], in[1])
			for i := range a {
				x, y := float64(f32(a[i])), float64(f32(b[i]))
				if (got[i] == 1) != f(x, y) {
					t.Errorf("setp.%s.%s %v %v: %d", op, typ, x, y, got[i])
				}
			}
		}
	}
}

func TestCvtFloat(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	f := func(x float32) uint64 { return uint64(math.Float32bits(x)) }
	d := func(x float64) uint64 { return math.Float64bits(x) }
	nanF, nanD := uint64(0xFFC00000), d(math.NaN())
	for _, c := range []struct {
		mods []string
		in   []uint64
		want []uint64
	}{
		// float -> int: rounding modes, clamping, NaN -> 0.
		{[]string{"rzi", "s32", "f32"}, []uint64{f(2.7), f(-2.7), f(3e9), f(-3e9), nanF, f(float32(math.Inf(1)))},
			[]uint64{2, 0xFFFFFFFE, 0x7FFFFFFF, 0x80000000, 0, 0x7FFFFFFF}},
		{[]string{"rni", "s32", "f32"}, []uint64{f(2.5), f(3.5), f(-2.5), f(-0.5)}, []uint64{2, 4, 0xFFFFFFFE, 0}},
		{[]string{"rmi", "s32", "f32"}, []uint64{f(2.5), f(-2.5), f(float32(math.Copysign(0, -1)))}, []uint64{2, 0xFFFFFFFD, 0}},
		{[]string{"rpi", "s32", "f32"}, []uint64{f(2.5), f(-2.5)}, []uint64{3, 0xFFFFFFFE}},
		{[]string{"rzi", "u32", "f32"}, []uint64{f(-1), f(5e9), f(4294967040), nanF}, []uint64{0, 0xFFFFFFFF, 4294967040, 0}},
		{[]string{"rmi", "ftz", "s32", "f32"}, []uint64{0x80000001}, []uint64{0}},
		{[]string{"rmi", "s32", "f32"}, []uint64{0x80000001}, []uint64{0xFFFFFFFF}},
		// NaN into a 64-bit integer, or from f64: 1 << (bits-1).
		{[]string{"rzi", "s64", "f32"}, []uint64{nanF, f(-1e30)}, []uint64{1 << 63, 1 << 63}},
		{[]string{"rzi", "u64", "f32"}, []uint64{nanF, f(1e30)}, []uint64{1 << 63, ^uint64(0)}},
		{[]string{"rzi", "s32", "f64"}, []uint64{nanD, d(-7.9)}, []uint64{0x80000000, 0xFFFFFFF9}},
		// int -> float, in each mode: 2^24+1 is not a float32.
		{[]string{"rn", "f32", "u32"}, []uint64{1<<24 + 1, 1<<24 + 3, 0xFFFFFFFF}, []uint64{f(1 << 24), f(1<<24 + 4), f(4294967296)}},
		{[]string{"rz", "f32", "u32"}, []uint64{1<<24 + 3, 0xFFFFFFFF}, []uint64{f(1<<24 + 2), f(4294967040)}},
		{[]string{"rp", "f32", "s32"}, []uint64{1<<24 + 1, 0xFEFFFFFF}, []uint64{f(1<<24 + 2), f(-16777216)}},
		{[]string{"rm", "f32", "s32"}, []uint64{0xFEFFFFFF}, []uint64{f(-16777218)}},
		{[]string{"rn", "f32", "s64"}, []uint64{1<<62 + 1<<38 + 1}, []uint64{f(1<<62 + 1<<39)}},
		{[]string{"rn", "f64", "u64"}, []uint64{1<<63 + 1<<10 + 1}, []uint64{d(1<<63 + 1<<11)}},
		// f64 -> f32 in each mode, overflow, NaN.
		{[]string{"rn", "f32", "f64"}, []uint64{d(1 + 0x1p-24), d(1e300), nanD}, []uint64{f(1), f(float32(math.Inf(1))), nan32}},
		{[]string{"rz", "f32", "f64"}, []uint64{d(1e300), d(-(1 + 0x1p-24))}, []uint64{f(math.MaxFloat32), f(-1)}},
		{[]string{"rp", "f32", "f64"}, []uint64{d(1 + 0x1p-40), d(0x1p-160)}, []uint64{f(1 + 0x1p-23), 1}},
		{[]string{"rm", "f32", "f64"}, []uint64{d(-(1 + 0x1p-40)), d(-0x1p-160)}, []uint64{f(-(1 + 0x1p-23)), 0x80000001}},
		// f32 -> f64 is exact; NaN becomes canonical.
		{[]string{"f64", "f32"}, []uint64{f(0.1), 1, nanF}, []uint64{d(float64(float32(0.1))), d(math.SmallestNonzeroFloat32), nan64}},
		// Rounding to an integral float, saturation, flushing.
		{[]string{"rni", "f32", "f32"}, []uint64{f(2.5), f(-3.5), f(0.4)}, []uint64{f(2), f(-4), f(0)}},
		{[]string{"rpi", "f32", "f32"}, []uint64{f(2.1), f(-0.5)}, []uint64{f(3), f(float32(math.Copysign(0, -1)))}},
		{[]string{"sat", "f32", "f32"}, []uint64{f(2), f(-1), nanF, f(0.25)}, []uint64{f(1), 0, 0, f(0.25)}},
		{[]string{"ftz", "f32", "f32"}, []uint64{0x00000005, 0x80000005, f(1)}, []uint64{0, 0x80000000, f(1)}},
		{[]string{"rn", "sat", "f32", "s32"}, []uint64{5, 0xFFFFFFFF, 0}, []uint64{f(1), 0, 0}},
	} {
		var types []ptx.Type
		for _, m := range c.mods {
			if ty, ok := ptx.TypeByName(m); ok {
				types = append(types, ty)
			}
		}
		got := opKernel{dt: types[0], ts: types[1:], emit: emitOp("cvt", c.mods...)}.run(t, c.in)
		for i := range c.want {
			if got[i] != c.want[i] {
				t.Errorf("cvt.%v %#x: %#x, want %#x", c.mods, c.in[i], got[i], c.want[i])
			}
		}
	}

	// Random int -> f32 in each mode against the big.Float reference.
	for _, st := range []ptx.Type{ptx.U32, ptx.S32, ptx.U64, ptx.S64} {
		for _, mode := range []string{"rn", "rz", "rm", "rp"} {
			var in []uint64
			for range 500 {
				in = append(in, rng.Uint64()&mask(st.Bits())>>rng.Intn(st.Bits()))
			}
			got := opKernel{dt: ptx.F32, ts: []ptx.Type{st}, emit: emitOp("cvt", mode, "f32", st.Name())}.run(t, in)
			for i, v := range in {
				x := new(big.Float)
				if st.Kind() == ptx.KindSigned {
					x.SetInt64(signedOf(st.Bits())(v))
				} else {
					x.SetUint64(v)
				}
				want := uint64(0)
				if x.Sign() != 0 {
					want = ref32(x, rmodeOf(mode))
				}
				if got[i] != want {
					t.Errorf("cvt.%s.f32.%s %#x: %#x, want %#x", mode, st, v, got[i], want)
					break
				}
			}
		}
	}
}

// PTX rejects conversions without their mandatory rounding modifier, and
// so does Load, as the driver would.
func TestCvtNeedsRounding(t *testing.T) {
	for _, mods := range [][]string{{"s32", "f32"}, {"f32", "s32"}, {"f32", "f64"}, {"rn", "f32", "f32"}, {"rn", "s32", "f32"}} {
		m := ptx.NewModule(ptx.SM90)
		e := m.NewEntry("k")
		var types []ptx.Type
		for _, s := range mods {
			if ty, ok := ptx.TypeByName(s); ok {
				types = append(types, ty)
			}
		}
		d, a := e.Reg(types[0]), e.Reg(types[1])
		e.Mov(a, ptx.Imm(0))
		if types[1].IsFloat() {
			e.Body = e.Body[:0]
			e.Mov(a, ptx.Float(0))
			if types[1] == ptx.F64 {
				e.Body = e.Body[:0]
				e.Mov(a, ptx.Double(0))
			}
		}
		e.Emit("cvt", mods, d, a)
		e.Ret()
		if err := m.Build(); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadModule(m); err == nil {
			t.Errorf("cvt.%v loaded", mods)
		}
	}
}

// An unrounded float mul may be fused with an add by ptxas, so its result
// on a GPU is not determined: Load refuses it.
func TestUnroundedMulRefused(t *testing.T) {
	m := ptx.NewModule(ptx.SM90)
	e := m.NewEntry("k")
	a := e.Reg(ptx.F32)
	e.Mov(a, ptx.Float(1))
	e.Emit("mul", []string{"f32"}, a, a, a)
	e.Ret()
	if err := m.Build(); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadModule(m); err == nil || !strings.Contains(err.Error(), "write mul.rn") {
		t.Errorf("Load: %v", err)
	}
}

func TestLg2Ex2(t *testing.T) {
	f := func(x float32) uint64 { return uint64(math.Float32bits(x)) }
	in := []uint64{f(8), f(0.5), 0, 0x80000000, f(-1), f(float32(math.Inf(1))), 0x7FC00000}
	got := opKernel{dt: ptx.F32, ts: []ptx.Type{ptx.F32}, emit: emitOp("lg2", "approx", "f32")}.run(t, in)
	want := []uint64{f(3), f(-1), f(float32(math.Inf(-1))), f(float32(math.Inf(-1))), nan32, f(float32(math.Inf(1))), nan32}
	if !equal(got, want) {
		t.Errorf("lg2: %#x, want %#x", got, want)
	}
	got = opKernel{dt: ptx.F32, ts: []ptx.Type{ptx.F32}, emit: emitOp("ex2", "approx", "f32")}.run(t,
		[]uint64{f(3), f(-1), f(float32(math.Inf(-1)))})
	if want := []uint64{f(8), f(0.5), 0}; !equal(got, want) {
		t.Errorf("ex2: %#x, want %#x", got, want)
	}
}

// cvt.f32.f16 of every half: the exact value (subnormals included, signed
// zeros and infinities kept), NaN giving the canonical NaN.
func TestCvtF32F16(t *testing.T) {
	var in []uint64
	for h := range 1 << 16 {
		in = append(in, uint64(h))
	}
	for lo := 0; lo < len(in); lo += 1024 { // one CTA of 1024 threads at a time
		got := opKernel{dt: ptx.F32, ts: []ptx.Type{ptx.B16}, emit: func(e *ptx.Entry, d ptx.Reg, a []ptx.Reg) {
			e.CvtFrom(d, a[0], ptx.F16)
		}}.run(t, in[lo:lo+1024])
		for i, g := range got {
			h := uint16(in[lo+i])
			exp, frac := int(h>>10)&0x1F, float64(h&0x3FF)
			var v float64
			switch exp {
			case 0x1F:
				v = math.Inf(1)
				if frac != 0 {
					v = math.NaN()
				}
			case 0:
				v = frac * 0x1p-24
			default:
				v = (1 + frac/1024) * math.Ldexp(1, exp-15)
			}
			if h&0x8000 != 0 {
				v = -v
			}
			want := uint64(math.Float32bits(float32(v)))
			if math.IsNaN(v) {
				want = nan32
			}
			if g != want {
				t.Fatalf("cvt.f32.f16 %#04x: %#08x, want %#08x", h, g, want)
			}
		}
	}
}
