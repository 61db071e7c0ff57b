package topk

import (
	"fmt"
	"math"

	"github.com/gvr-go/gvr/gen"
)

// DType is the element type of score rows: of a Selector's rows
// (Config.Scores) and of a trace's scores in a file.
type DType int

const (
	Float32  DType = iota // '<f4'
	Float16               // '<f2', IEEE half precision
	BFloat16              // '<V2': bfloat16 as np.save writes an ml_dtypes.bfloat16 array
)

func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Float16:
		return "float16"
	case BFloat16:
		return "bfloat16"
	}
	return fmt.Sprintf("DType(%d)", int(d))
}

// descr is the dtype's .npy descriptor.
func (d DType) descr() string {
	switch d {
	case Float16:
		return "<f2"
	case BFloat16:
		return "<V2"
	}
	return "<f4"
}

// Size is the bytes of one score.
func (d DType) Size() int { return d.ScoreType().Size() }

// ScoreType is the generator's name for d (gen.Config.Scores).
func (d DType) ScoreType() gen.ScoreType {
	switch d {
	case Float16:
		return gen.Float16
	case BFloat16:
		return gen.BFloat16
	}
	return gen.Float32
}

// Widen returns the float32 values of 16-bit scores of type d (Float16 or
// BFloat16), exactly: subnormals, infinities, signed zeros and NaN payloads
// included. They are what a Selector compares and writes for such a row, so
// Reference over them is the reference of the 16-bit row. Float32 is a
// programmer error (a panic).
func (d DType) Widen(h []uint16) []float32 {
	f := d.widen()
	x := make([]float32, len(h))
	for i, v := range h {
		x[i] = f(v)
	}
	return x
}

// Narrow rounds x to scores of type d (Float16 or BFloat16): to nearest,
// ties to even, a NaN staying a (quiet) NaN; Float16 overflows to Inf.
// Float32 is a programmer error (a panic).
func (d DType) Narrow(x []float32) []uint16 {
	f := d.narrow()
	h := make([]uint16, len(x))
	for i, v := range x {
		h[i] = f(v)
	}
	return h
}

func (d DType) widen() func(uint16) float32 {
	switch d {
	case Float16:
		return halfToFloat32
	case BFloat16:
		return bfloat16ToFloat32
	}
	panic(fmt.Sprintf("topk: %v scores are not 16-bit", d))
}

func (d DType) narrow() func(float32) uint16 {
	switch d {
	case Float16:
		return float32ToHalf
	case BFloat16:
		return float32ToBFloat16
	}
	panic(fmt.Sprintf("topk: %v scores are not 16-bit", d))
}

// halfToFloat32 is the float32 of IEEE half-precision bits, exactly
// (subnormals, infinities and NaN payloads included).
func halfToFloat32(h uint16) float32 {
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

// float32ToHalf rounds x to the nearest half-precision value, ties to
// even, overflowing to Inf; a NaN stays a (quiet) NaN.
func float32ToHalf(x float32) uint16 {
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

// bfloat16ToFloat32 is the float32 of bfloat16 bits: the top half of its bits.
func bfloat16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// float32ToBFloat16 rounds x to the nearest bfloat16, ties to even; a NaN
// stays a (quiet) NaN.
func float32ToBFloat16(x float32) uint16 {
	b := math.Float32bits(x)
	if x != x {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}
