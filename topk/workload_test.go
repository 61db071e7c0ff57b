package topk

import (
	"math"
	"slices"
	"testing"
)

// The expected values below come from a transcription of the paper's Python
// (gvr-paper.tex, "Synthetic Data Generation") into plain Python with every
// float32 operation rounded through struct.pack('f'), and numpy's pairwise
// summation for the float64 prior.

func TestYaRNInvFreq(t *testing.T) {
	want := []uint32{1065353216, 1061157137, 1058010522, 1054337179, 1050798235, 1047712803, 1043732615,
		1040747895, 1036831949, 1033475085, 1030116802, 1025492410, 1021063708, 1016499651, 1011610243,
		1007193463, 1001666905, 996765798, 991128086, 984851149, 978271799, 970560274, 960132947, 940299377,
		936490775, 933053347, 929815792, 925949777, 923050675, 919006429, 915745858, 912243279}
	got := YaRNInvFreq(64)
	if len(got) != len(want) {
		t.Fatalf("%d frequencies, want %d", len(got), len(want))
	}
	for i, g := range got {
		if math.Float32bits(g) != want[i] {
			t.Errorf("inv_freq[%d] = %v (bits %d), want %v (bits %d)", i, g, math.Float32bits(g), math.Float32frombits(want[i]), want[i])
		}
	}
	// Below lo = 10 the ramp is 0: the plain RoPE frequency base^(-2i/dim).
	if got[0] != 1 {
		t.Errorf("inv_freq[0] = %v, want 1", got[0])
	}
}

func TestStaticPrediction(t *testing.T) {
	want := []int32{0, 1, 2, 3, 4, 6, 5, 7, 8, 9, 12, 11, 10, 13, 101, 18}
	if got := StaticPrediction(1000, 16, 64); !slices.Equal(got, want) {
		t.Errorf("StaticPrediction(1000, 16, 64) = %v, want %v", got, want)
	}
	if got := StaticPrediction(5, 16, 64); len(got) != 5 {
		t.Errorf("StaticPrediction(5, 16, 64) has %d indices, want 5", len(got))
	}
	s := Synthetic{N: 1000, K: 16}
	if got := s.Prediction(); !slices.Equal(got, want) {
		t.Errorf("Synthetic.Prediction = %v, want %v", got, want)
	}
}

func TestPairwiseSum(t *testing.T) {
	for n := range 40 {
		a := make([]float64, n)
		naive := 0.0
		for i := range a {
			a[i] = math.Cos(float64(i))
			naive += a[i]
		}
		if got := pairwiseSum(a); math.Abs(got-naive) > 1e-12 {
			t.Errorf("n=%d: pairwiseSum = %v, naive sum %v", n, got, naive)
		}
	}
}

func TestSyntheticRows(t *testing.T) {
	s := Synthetic{N: 777, Seed: 42}
	a, b := s.Rows(3), s.Rows(3)
	if !slices.Equal(a, b) {
		t.Fatal("Rows is not deterministic")
	}
	// A row does not depend on how many are generated.
	if one := s.Rows(1); !slices.Equal(one, a[:s.N]) {
		t.Error("Rows(1) differs from the first row of Rows(3)")
	}
	if slices.Equal(a[:s.N], a[s.N:2*s.N]) {
		t.Error("rows 0 and 1 are equal")
	}
	s.Seed = 43
	if slices.Equal(s.Rows(1), a[:s.N]) {
		t.Error("seeds 42 and 43 give the same row")
	}
	// q and k are near all-ones, so the score at position 0 (no rotation)
	// is near d_rope = 64, and every score is finite and below that scale.
	for i, x := range a {
		if math.IsNaN(float64(x)) || math.Abs(float64(x)) > 100 {
			t.Fatalf("score %d = %v", i, x)
		}
	}
	if x := a[0]; x < 55 || x > 75 {
		t.Errorf("score at position 0 = %v, want about 64", x)
	}
	// Empty and one-element rows.
	if got := (Synthetic{N: 0}).Rows(2); len(got) != 0 {
		t.Errorf("N=0: %d scores", len(got))
	}
	if got := (Synthetic{N: 1, Seed: 42}).Rows(1); len(got) != 1 || got[0] != a[0] {
		t.Errorf("N=1: %v, want the first score of a longer row, %v", got, a[0])
	}
}

func TestDecode(t *testing.T) {
	const k = 64
	d, e := NewDecode(1000, 1010, 0, 7), NewDecode(1000, 1010, 0, 7)
	var prev []int32
	for step := range 15 {
		n := d.Len()
		want := min(1000+step, 1010)
		if n != want {
			t.Fatalf("step %d: Len = %d, want %d", step, n, want)
		}
		x, y := d.Next(), e.Next()
		if len(x) != n || !slices.Equal(x, y) {
			t.Fatalf("step %d: %d scores, or not deterministic", step, len(x))
		}
		idx, _ := Reference(x, k, false)
		if prev != nil {
			if o := overlap(prev, idx); o < k/2 {
				t.Errorf("step %d: consecutive Top-%d overlap in %d indices, want at least %d", step, k, o, k/2)
			}
		}
		prev = idx
	}
}

func TestDecodeFromEmpty(t *testing.T) {
	d := NewDecode(0, 2, 0, 1)
	for step, want := range []int{0, 1, 2, 2} {
		if x := d.Next(); len(x) != want {
			t.Errorf("step %d: %d scores, want %d", step, len(x), want)
		}
	}
	if x := NewDecode(5, 0, 0, 1).Next(); len(x) != 0 {
		t.Errorf("maxLen 0: %d scores", len(x))
	}
}

func overlap(a, b []int32) int {
	in := make(map[int32]bool, len(a))
	for _, i := range a {
		in[i] = true
	}
	n := 0
	for _, i := range b {
		if in[i] {
			n++
		}
	}
	return n
}
