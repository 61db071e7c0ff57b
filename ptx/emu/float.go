package emu

import (
	"math"
	"math/big"
)

// This file holds PTX's floating-point rules: canonical NaNs, rounding
// modes, min/max, comparisons and conversions. Round-to-nearest results come
// from Go's own IEEE arithmetic (float32 operations in Go round to float32);
// the directed modes (.rz, .rm, .rp) adjust that result by comparing it with
// the exact value, computed with math/big. They are rare in gvr's kernels,
// so they are exact rather than fast.

// The canonical NaNs. The CUDA programming guide (Floating-Point Standard):
// "The result of a single-precision floating-point operation involving one
// or more input NaNs is the quiet NaN of bit pattern 0x7fffffff". The f64
// pattern is the same idea, unconfirmed on hardware.
const (
	nan32 = 0x7FFFFFFF
	nan64 = 0x7FFFFFFFFFFFFFFF
)

type rmode uint8

const (
	rn rmode = iota // to nearest, ties to even
	rz              // toward zero
	rm              // toward -Inf
	rp              // toward +Inf
)

func rmodeOf(s string) rmode {
	switch s {
	case "rz", "rzi":
		return rz
	case "rm", "rmi":
		return rm
	case "rp", "rpi":
		return rp
	}
	return rn
}

func f32(v uint64) float32 { return math.Float32frombits(uint32(v)) }
func f64(v uint64) float64 { return math.Float64frombits(v) }

// b32 returns f's bits, canonicalising NaN as the hardware does.
func b32(f float32) uint64 {
	if f != f {
		return nan32
	}
	return uint64(math.Float32bits(f))
}

func b64(f float64) uint64 {
	if f != f {
		return nan64
	}
	return math.Float64bits(f)
}

func isNaN32(v uint64) bool { return uint32(v)&0x7FFFFFFF > 0x7F800000 }
func isNaN64(v uint64) bool { return v&(1<<63-1) > 0x7FF0000000000000 }

// ftz32 flushes a subnormal to a zero of its sign.
func ftz32(v uint64) uint64 {
	if uint32(v)&0x7F800000 == 0 {
		return v & 0x80000000
	}
	return v
}

// bigOf returns x exactly (x finite).
func bigOf(x float64) *big.Float { return new(big.Float).SetFloat64(x) }

// direct turns r, the round-to-nearest result of an operation, into the
// result in mode m, given c: the sign of r minus the exact result.
func direct64(r float64, c int, m rmode) float64 {
	switch {
	case m == rz && (r > 0 && c > 0 || r < 0 && c < 0):
		return math.Nextafter(r, 0)
	case m == rm && c > 0:
		return math.Nextafter(r, math.Inf(-1))
	case m == rp && c < 0:
		return math.Nextafter(r, math.Inf(1))
	}
	return r
}

func direct32(r float32, c int, m rmode) float32 {
	switch {
	case m == rz && (r > 0 && c > 0 || r < 0 && c < 0):
		return math.Nextafter32(r, 0)
	case m == rm && c > 0:
		return math.Nextafter32(r, float32(math.Inf(-1)))
	case m == rp && c < 0:
		return math.Nextafter32(r, float32(math.Inf(1)))
	}
	return r
}

// cmpExact is the sign of r - x, r a float64 (possibly infinite) and x an
// exact finite value.
func cmpExact(r float64, x *big.Float) int {
	if math.IsInf(r, 0) {
		if r > 0 {
			return 1
		}
		return -1
	}
	return bigOf(r).Cmp(x)
}

// exactPrec holds a*b+c of float64s exactly: from 2^1024 down to the
// lowest bit of a product of subnormals, 2^-2148.
const exactPrec = 3300

func exactSum(a, b float64) *big.Float {
	z := new(big.Float).SetPrec(exactPrec)
	return z.Add(bigOf(a), bigOf(b))
}

func exactFMA(a, b, c float64) *big.Float {
	z := new(big.Float).SetPrec(exactPrec)
	z.Mul(bigOf(a), bigOf(b))
	return z.Add(z, bigOf(c))
}

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return false
		}
	}
	return true
}

// zeroSum is the sign rule for an exactly zero sum a+b in mode m: the common
// sign of two like-signed zeros, else +0 except when rounding toward -Inf.
func zeroSum(a, b float64, m rmode) float64 {
	if a == 0 && b == 0 && math.Signbit(a) == math.Signbit(b) {
		return a
	}
	if m == rm {
		return math.Copysign(0, -1)
	}
	return 0
}

// ---- f32 arithmetic ----

func addF32(a, b uint64, m rmode) uint64 {
	x, y := f32(a), f32(b)
	r := x + y
	if m == rn || !finite(float64(x), float64(y)) {
		return b32(r)
	}
	v := exactSum(float64(x), float64(y))
	if v.Sign() == 0 {
		return b32(float32(zeroSum(float64(x), float64(y), m)))
	}
	return b32(direct32(r, cmpExact(float64(r), v), m))
}

func mulF32(a, b uint64, m rmode) uint64 {
	x, y := f32(a), f32(b)
	r := float32(x * y)
	if m == rn || !finite(float64(x), float64(y)) || r == 0 && (x == 0 || y == 0) {
		return b32(r)
	}
	v := float64(x) * float64(y) // exact: 24+24 bits fit in 53
	return b32(direct32(r, cmpExact(float64(r), bigOf(v)), m))
}

// fmaF32 is a*b+c rounded once. In round-to-nearest it rounds the exact
// result to odd at float64 precision and then to float32, which is exact
// (53 >= 2*24+2); this avoids the double rounding of float32(math.FMA(..)).
func fmaF32(a, b, c uint64, m rmode) uint64 {
	x, y, z := float64(f32(a)), float64(f32(b)), float64(f32(c))
	if !finite(x, y, z) {
		return b32(float32(math.FMA(x, y, z)))
	}
	p := x * y // exact
	s := p + z
	if m == rn {
		if math.IsInf(s, 0) || s == 0 {
			return b32(float32(s))
		}
		// TwoSum: e is the exact error of s.
		bp := s - p
		e := (p - (s - bp)) + (z - bp)
		if e != 0 && math.Float64bits(s)&1 == 0 {
			if e > 0 {
				s = math.Nextafter(s, math.Inf(1))
			} else {
				s = math.Nextafter(s, math.Inf(-1))
			}
		}
		return b32(float32(s))
	}
	v := exactFMA(x, y, z)
	if v.Sign() == 0 {
		return b32(float32(zeroSum(p, z, m)))
	}
	r, _ := v.Float32()
	return b32(direct32(r, cmpExact(float64(r), v), m))
}

func divF32(a, b uint64, m rmode) uint64 {
	x, y := f32(a), f32(b)
	r := x / y
	if m == rn || !finite(float64(x), float64(y)) || y == 0 || x == 0 {
		return b32(r)
	}
	var c int
	if math.IsInf(float64(r), 0) { // overflow: the exact quotient is finite
		c = sign(float64(r))
	} else {
		// sign(r - x/y) = sign(r*y - x) * sign(y); r*y is exact in float64.
		c = sign(float64(r)*float64(y) - float64(x))
		if y < 0 {
			c = -c
		}
	}
	return b32(direct32(r, c, m))
}

func sqrtF32(a uint64, m rmode) uint64 {
	x := f32(a)
	r := float32(math.Sqrt(float64(x))) // correctly rounded: 53 >= 2*24+2
	if m == rn || !finite(float64(r)) || r == 0 || x < 0 {
		return b32(r)
	}
	c := sign(float64(r)*float64(r) - float64(x)) // exact in float64
	return b32(direct32(r, c, m))
}

func sign(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// ---- f64 arithmetic ----

func addF64(a, b uint64, m rmode) uint64 {
	x, y := f64(a), f64(b)
	r := x + y
	if m == rn || !finite(x, y) {
		return b64(r)
	}
	v := exactSum(x, y)
	if v.Sign() == 0 {
		return b64(zeroSum(x, y, m))
	}
	return b64(direct64(r, cmpExact(r, v), m))
}

func mulF64(a, b uint64, m rmode) uint64 {
	x, y := f64(a), f64(b)
	r := x * y
	if m == rn || !finite(x, y) || r == 0 && (x == 0 || y == 0) {
		return b64(r)
	}
	v := new(big.Float).SetPrec(exactPrec).Mul(bigOf(x), bigOf(y))
	return b64(direct64(r, cmpExact(r, v), m))
}

func fmaF64(a, b, c uint64, m rmode) uint64 {
	x, y, z := f64(a), f64(b), f64(c)
	r := math.FMA(x, y, z)
	if m == rn || !finite(x, y, z) {
		return b64(r)
	}
	v := exactFMA(x, y, z)
	if v.Sign() == 0 {
		return b64(zeroSum(x*y, z, m))
	}
	return b64(direct64(r, cmpExact(r, v), m))
}

func divF64(a, b uint64, m rmode) uint64 {
	x, y := f64(a), f64(b)
	r := x / y
	if m == rn || !finite(x, y) || y == 0 || x == 0 {
		return b64(r)
	}
	var c int
	if math.IsInf(r, 0) { // overflow: the exact quotient is finite
		c = sign(r)
	} else {
		ry := new(big.Float).SetPrec(exactPrec).Mul(bigOf(r), bigOf(y))
		c = ry.Cmp(bigOf(x))
		if y < 0 {
			c = -c
		}
	}
	return b64(direct64(r, c, m))
}

func sqrtF64(a uint64, m rmode) uint64 {
	x := f64(a)
	r := math.Sqrt(x)
	if m == rn || !finite(r) || r == 0 || x < 0 {
		return b64(r)
	}
	rr := new(big.Float).SetPrec(exactPrec).Mul(bigOf(r), bigOf(r))
	return b64(direct64(r, rr.Cmp(bigOf(x)), m))
}

// ---- min, max and comparisons ----

// minmaxF32 follows PTX: a NaN operand is ignored (the result is the
// canonical NaN only if both are NaN), unless nanMode, where any NaN gives
// the canonical NaN; -0 is less than +0.
func minmaxF32(a, b uint64, isMax, nanMode bool) uint64 {
	an, bn := isNaN32(a), isNaN32(b)
	switch {
	case an && bn, nanMode && (an || bn):
		return nan32
	case an:
		return b
	case bn:
		return a
	}
	x, y := f32(a), f32(b)
	if x == y { // equal, or zeros of either sign
		if isMax == (uint32(a)>>31 == 0) {
			return a
		}
		return b
	}
	if (x < y) != isMax {
		return a
	}
	return b
}

func minmaxF64(a, b uint64, isMax, nanMode bool) uint64 {
	an, bn := isNaN64(a), isNaN64(b)
	switch {
	case an && bn, nanMode && (an || bn):
		return nan64
	case an:
		return b
	case bn:
		return a
	}
	x, y := f64(a), f64(b)
	if x == y {
		if isMax == (a>>63 == 0) {
			return a
		}
		return b
	}
	if (x < y) != isMax {
		return a
	}
	return b
}

// ---- conversions ----

// roundInt rounds x to an integral value in mode m (.rni .rzi .rmi .rpi).
func roundInt(x float64, m rmode) float64 {
	switch m {
	case rz:
		return math.Trunc(x)
	case rm:
		return math.Floor(x)
	case rp:
		return math.Ceil(x)
	}
	return math.RoundToEven(x)
}

// floatToInt converts x (already rounded to an integer, or NaN/Inf) to an
// integer of bits bits, clamping to the range as PTX does by default. nan is
// the result for NaN.
func floatToInt(x float64, bits int, signed bool, nan uint64) uint64 {
	if math.IsNaN(x) {
		return nan
	}
	if signed {
		lo, hi := -math.Ldexp(1, bits-1), math.Ldexp(1, bits-1)
		switch {
		case x >= hi:
			return uint64(1)<<(bits-1) - 1
		case x < lo:
			return mask(bits) &^ (uint64(1)<<(bits-1) - 1)
		}
		return uint64(int64(x)) & mask(bits)
	}
	hi := math.Ldexp(1, bits)
	switch {
	case x >= hi:
		return mask(bits)
	case x <= 0:
		return 0
	}
	return uint64(x)
}

// intToF32 converts the integer v (signed: as int64) to float32 in mode m.
func intToF32(v uint64, signed bool, m rmode) uint64 {
	var r float32
	x := new(big.Float)
	if signed {
		r = float32(int64(v))
		x.SetInt64(int64(v))
	} else {
		r = float32(v)
		x.SetUint64(v)
	}
	if m != rn {
		r = direct32(r, cmpExact(float64(r), x), m)
	}
	return b32(r)
}

func intToF64(v uint64, signed bool, m rmode) uint64 {
	var r float64
	x := new(big.Float)
	if signed {
		r = float64(int64(v))
		x.SetInt64(int64(v))
	} else {
		r = float64(v)
		x.SetUint64(v)
	}
	if m != rn {
		r = direct64(r, cmpExact(r, x), m)
	}
	return b64(r)
}

// f64ToF32 narrows x in mode m.
func f64ToF32(v uint64, m rmode) uint64 {
	x := f64(v)
	r := float32(x)
	if m != rn && finite(x) {
		r = direct32(r, sign(float64(r)-x), m) // both exact in float64
	}
	return b32(r)
}

func mask(bits int) uint64 {
	if bits >= 64 {
		return ^uint64(0)
	}
	return 1<<bits - 1
}

// f16ToF32 is the float32 bits of IEEE half h, exactly (subnormals become
// normal floats); a NaN becomes the canonical NaN, as for every other
// conversion here: a kernel that needs a NaN's bits makes them itself.
func f16ToF32(h uint16) uint64 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f && frac != 0:
		return nan32
	case exp == 0x1f:
		return uint64(sign | 0x7f800000)
	case exp == 0:
		v := float32(frac) * 0x1p-24 // exact
		return uint64(math.Float32bits(v) | sign)
	}
	return uint64(sign | (exp+127-15)<<23 | frac<<13)
}
