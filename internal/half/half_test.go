package half

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestHalf checks float16 both ways: every half goes to float32 and back
// unchanged, and float32 rounds to the nearest half, ties to even.
func TestHalf(t *testing.T) {
	testNarrow(t, Float16ToFloat32, Float32ToFloat16, 0x7c00)
	for _, c := range []struct {
		x float32
		h uint16
	}{{1, 0x3c00}, {65504, 0x7bff}, {65519.99, 0x7bff}, {65520, 0x7c00}, {0x1p-24, 1}, {0x1p-25, 0},
		{0x1.000002p-25, 1}, {0x1.8p-24, 2}, {0x1p-14, 0x400}, {0x1.ff8p-15, 0x3ff}, {0x1.ffbp-15, 0x3ff}, {0x1.ffcp-15, 0x400}, {-2, 0xc000}} {
		if h := Float32ToFloat16(c.x); h != c.h {
			t.Errorf("Float32ToFloat16(%v) = %#04x, want %#04x", c.x, h, c.h)
		}
	}
}

func TestBFloat16(t *testing.T) {
	testNarrow(t, BFloat16ToFloat32, Float32ToBFloat16, 0x7f80)
}

// testNarrow checks a 16-bit float format whose +Inf is inf: decoding then
// encoding every value gives it back (NaN stays NaN), and random float32
// values round to nearest, ties to even.
func testNarrow(t *testing.T, dec func(uint16) float32, enc func(float32) uint16, inf uint16) {
	t.Helper()
	for h := range uint32(1 << 16) {
		x := dec(uint16(h))
		if got := enc(x); x != x {
			if y := dec(got); y == y {
				t.Fatalf("NaN %#04x comes back as %v", h, y)
			}
		} else if got != uint16(h) {
			t.Fatalf("%#04x -> %v -> %#04x", h, x, got)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		x := math.Float32frombits(rng.Uint32() >> 1) // positive
		if x != x {
			continue
		}
		if rng.IntN(2) == 0 { // near 1 as often as anywhere
			x = math.Float32frombits(0x3f800000 + rng.Uint32()%(1<<24))
		}
		h := enc(x)
		if neg := enc(-x); neg != h|0x8000 {
			t.Fatalf("enc(-%v) = %#04x, want %#04x", x, neg, h|0x8000)
		}
		if h == inf { // overflow: the largest finite value must be farther than half a step
			lo, prev := float64(dec(inf-1)), float64(dec(inf-2))
			if float64(x) < lo+(lo-prev)/2 {
				t.Fatalf("enc(%v) = Inf, the largest finite is %v", x, lo)
			}
			continue
		}
		v := float64(dec(h))
		d := math.Abs(float64(x) - v)
		for _, o := range []uint16{h - 1, h + 1} {
			if h == 0 && o == h-1 {
				continue
			}
			do := math.Abs(float64(x) - float64(dec(o)))
			if do < d || do == d && h&1 == 1 {
				t.Fatalf("enc(%v) = %#04x (%v), but %#04x (%v) is nearer or even", x, h, v, o, dec(o))
			}
		}
	}
}
