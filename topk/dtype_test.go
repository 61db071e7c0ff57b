package topk

import (
	"math"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
)

// Widen is exact and Narrow its inverse on every 16-bit pattern (a NaN
// stays a NaN of the same sign and payload, quiet); the sizes and the
// generator's names agree.
func TestDTypeWidenNarrow(t *testing.T) {
	for _, d := range []DType{Float16, BFloat16} {
		h := make([]uint16, 1<<16)
		for i := range h {
			h[i] = uint16(i)
		}
		x := d.Widen(h)
		back := d.Narrow(x)
		quiet := uint16(0x0200) // float16's quiet bit
		if d == BFloat16 {
			quiet = 0x0040
		}
		for i, v := range h {
			switch {
			case x[i] != x[i]:
				if back[i] != v|quiet {
					t.Fatalf("%v %#04x: a NaN narrows back to %#04x, want %#04x", d, v, back[i], v|quiet)
				}
			case back[i] != v:
				t.Fatalf("%v %#04x: widened to %v, narrowed back to %#04x", d, v, x[i], back[i])
			}
		}
		if d.Size() != 2 || d.ScoreType().Size() != 2 {
			t.Errorf("%v: size %d", d, d.Size())
		}
	}
	if Float32.Size() != 4 || Float32.ScoreType() != gen.Float32 || Float16.ScoreType() != gen.Float16 || BFloat16.ScoreType() != gen.BFloat16 {
		t.Error("Float32's size or a generator name is wrong")
	}
	// Rounding: to nearest, ties to even, overflow to Inf.
	if got := Float16.Narrow([]float32{1 + 0x1p-11, 70000, float32(math.Inf(-1))}); got[0] != 0x3C00 || got[1] != 0x7C00 || got[2] != 0xFC00 {
		t.Errorf("Float16.Narrow: %#04x", got)
	}
	if got := BFloat16.Narrow([]float32{1 + 0x1p-7 + 0x1p-8}); got[0] != 0x3F82 {
		t.Errorf("BFloat16.Narrow: %#04x", got)
	}
}

// A selector's score type must be one of the three.
func TestConfigScores(t *testing.T) {
	c := Config{MaxRows: 1, Scores: 9}.withDefaults()
	if err := c.validate(ptx.SM90); err == nil || !strings.Contains(err.Error(), "Scores = DType(9)") {
		t.Errorf("Scores = 9: %v", err)
	}
	c.Scores = BFloat16
	if err := c.validate(ptx.SM90); err != nil {
		t.Errorf("BFloat16: %v", err)
	}
	if got := c.kernelConfig(ptx.SM90).Scores; got != gen.BFloat16 {
		t.Errorf("kernel config scores %v", got)
	}
}
