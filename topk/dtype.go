package topk

import (
	"fmt"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/internal/half"
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
func (d DType) Widen(h []uint16) []float32 { return d.format().Widen(h) }

// Narrow rounds x to scores of type d (Float16 or BFloat16): to nearest,
// ties to even, a NaN staying a (quiet) NaN; Float16 overflows to Inf.
// Float32 is a programmer error (a panic).
func (d DType) Narrow(x []float32) []uint16 { return d.format().Narrow(x) }

func (d DType) format() half.Format {
	switch d {
	case Float16:
		return half.Float16
	case BFloat16:
		return half.BFloat16
	}
	panic(fmt.Sprintf("topk: %v scores are not 16-bit", d))
}
