// Package half converts IEEE half-precision (float16) and bfloat16 numbers
// to float32 and back: exactly one way (subnormals, infinities, signed
// zeros and NaN payloads included), to nearest, ties to even, the other.
// Package topk (score types, traces) and the fuzz cases share it.
package half

import "math"

// Float16ToFloat32 is the float32 of IEEE half-precision bits, exactly
// (subnormals, infinities and NaN payloads included).
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch exp {
	case 0x1f: // Inf, NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case 0: // zero, subnormal: frac * 2^-24, exact in float32
		v := float32(frac) * 0x1p-24
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// Float32ToFloat16 rounds x to the nearest half-precision value, ties to
// even, overflowing to Inf; a NaN stays a (quiet) NaN.
func Float32ToFloat16(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	frac := b & 0x7fffff
	if exp == 0xff {
		if frac != 0 {
			return sign | 0x7e00 | uint16(frac>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	m, shift := frac, uint(13)
	if e <= 0 { // a half subnormal (or zero): shift the implicit one in
		if e < -10 {
			return sign
		}
		m |= 0x800000
		shift = uint(14 - e)
		e = 0
	}
	h := uint32(e)<<10 | m>>shift
	rem, half := m&(1<<shift-1), uint32(1)<<(shift-1)
	if rem > half || rem == half && h&1 == 1 {
		h++ // a carry out of the fraction bumps the exponent, up to Inf
	}
	return sign | uint16(h)
}

// BFloat16ToFloat32 is the float32 of bfloat16 bits: the top half of its bits.
func BFloat16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float32ToBFloat16 rounds x to the nearest bfloat16, ties to even; a NaN
// stays a (quiet) NaN.
func Float32ToBFloat16(x float32) uint16 {
	b := math.Float32bits(x)
	if x != x {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// Format is a 16-bit float format.
type Format uint8

// The formats.
const (
	Float16  Format = iota // IEEE binary16
	BFloat16               // bfloat16: the top half of a float32
)

// Widen returns the exact float32 values of h, numbers of format f.
func (f Format) Widen(h []uint16) []float32 {
	if f == BFloat16 {
		return convert(h, BFloat16ToFloat32)
	}
	return convert(h, Float16ToFloat32)
}

// Narrow rounds x to format f: to nearest, ties to even, a NaN staying a
// (quiet) NaN; float16 overflows to Inf.
func (f Format) Narrow(x []float32) []uint16 {
	if f == BFloat16 {
		return convert(x, Float32ToBFloat16)
	}
	return convert(x, Float32ToFloat16)
}

func convert[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
