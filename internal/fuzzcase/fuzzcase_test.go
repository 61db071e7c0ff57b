package fuzzcase

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/topk"
)

// randomParams are Params with every byte random, as a fuzzer's mutations
// give them (Random draws a friendlier distribution).
func randomParams(r *rand.Rand) Params {
	return Params{
		Kernel: uint8(r.Uint32()), Target: uint8(r.Uint32()), K: uint16(r.Uint32()), Cand: uint16(r.Uint32()),
		Block: uint8(r.Uint32()), Bins: uint8(r.Uint32()), Unroll: uint8(r.Uint32()), Flags: uint8(r.Uint32()),
		N: r.Uint32(), Fill: uint8(r.Uint32()), Special: uint8(r.Uint32()), Pred: uint8(r.Uint32()), Seed: r.Uint64(),
	}
}

// Every Params decodes to a valid configuration: no fuzz input is wasted
// on a skip, and the decoder reaches every kernel and target.
func TestCaseAlwaysValid(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	kernels, targets, groups := map[string]bool{}, map[string]bool{}, map[int]bool{}
	for i := range 20000 {
		p := randomParams(r)
		if i%2 == 1 {
			p = Random(r)
		}
		c, err := p.Case(InterpMaxN)
		if err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		if err := c.Config.Validate(); err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		if c.N < 0 || c.N > InterpMaxN || c.Lead < 0 || c.Lead > 3 {
			t.Fatalf("%v: n or lead out of range", c)
		}
		kernels[c.Kernel], targets[c.Config.Target.Name], groups[max(c.Config.Groups, 1)] = true, true, true
	}
	if len(kernels) != len(Kernels) || len(targets) != len(Targets) || len(groups) != gen.MaxGroups {
		t.Errorf("reached kernels %v, targets %v and groups %v (want 1 to %d)", kernels, targets, groups, gen.MaxGroups)
	}
}

// The lengths around each anchor are small values of N, so a fuzzer finds
// them with a mutation or two.
func TestLengthEdges(t *testing.T) {
	const K, C = 100, 300
	want := []int{0, 1, K - 1, K, K + 1, C - 1, C, C + 1, 2*C + K, 2*C + K + 7}
	got := map[int]bool{}
	for n := range uint32(64) {
		got[Params{N: n}.Length(K, C, InterpMaxN)] = true
	}
	for _, n := range want {
		if !got[n] {
			t.Errorf("n = %d needs N >= 64", n)
		}
	}
	if n := (Params{N: 4 * 100000}).Length(K, C, 1000); n > 1000 {
		t.Errorf("length %d past maxN 1000", n)
	}
}

// A case's row and prediction depend on its Params alone.
func TestDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for range 200 {
		p := Random(r)
		c, err := p.Case(InterpMaxN)
		if err != nil {
			t.Fatal(err)
		}
		c2, _ := p.Case(InterpMaxN)
		x, x2 := c.Row(), c2.Row()
		if len(x) != c.N || !slices.Equal(bitsOf(x), bitsOf(x2)) {
			t.Fatalf("%v: two rows differ (or the length is not %d)", c, c.N)
		}
		top := make([]int32, c.Config.K)
		for j := range top {
			top[j] = int32(j%max(c.N, 1)) - int32(min(1, j/max(c.N, 1))) // some -1 pads
		}
		if !slices.Equal(c.Prediction(top), c2.Prediction(top)) {
			t.Fatalf("%v: two predictions differ", c)
		}
	}
}

func bitsOf(x []float32) []uint32 {
	b := make([]uint32, len(x))
	for i, v := range x {
		b[i] = math.Float32bits(v)
	}
	return b
}

func TestSpecials(t *testing.T) {
	c, err := Params{K: 9, Cand: 30, N: 4*2000 + 8, Fill: 0, Special: 0x40}.Case(InterpMaxN) // nan-mass
	if err != nil {
		t.Fatal(err)
	}
	nans := 0
	for _, v := range c.Row() {
		if v != v {
			nans++
		}
	}
	if want := max(4*c.Config.K, c.Config.MaxCandidates+1) + 7; nans != want {
		t.Errorf("nan-mass planted %d NaNs, want %d", nans, want)
	}
	c.Params.Special = 0x80 | 0x08 // dense -Inf
	inf := 0
	for _, v := range c.Row() {
		if math.IsInf(float64(v), -1) {
			inf++
		}
	}
	if inf < c.N/8 || inf > c.N/2 {
		t.Errorf("dense -Inf: %d of %d", inf, c.N)
	}
}

func TestPredModes(t *testing.T) {
	const n, K = 50, 8
	top := []int32{3, 9, 1, 49, 0, 7, 2, 5}
	r := rand.New(rand.NewPCG(3, 3))
	byName := map[string][]int32{}
	for _, m := range Preds {
		byName[m.Name] = m.Gen(r, top, n, K)
	}
	if byName["none"] != nil {
		t.Errorf("none: %v, want nil (pred_count 0)", byName["none"])
	}
	if !slices.Equal(byName["perfect"], top) || !slices.Equal(byName["long"][:K], top) || len(byName["long"]) != 2*K {
		t.Errorf("perfect %v, long %v", byName["perfect"], byName["long"])
	}
	if !slices.Equal(byName["short"], top[:2]) {
		t.Errorf("short: %v", byName["short"])
	}
	if s := byName["shifted"]; s[3] != n {
		t.Errorf("shifted: %v: the last index should fall past the row", s)
	}
	for _, j := range byName["garbage"] {
		if j < 0 || j >= n {
			return
		}
	}
	t.Errorf("garbage has no out-of-range index: %v", byName["garbage"])
}

func TestRowFromBytes(t *testing.T) {
	f32 := []byte{0, 0, 0x80, 0x3F, 0, 0, 0xC0, 0xFF, 1} // 1.0, -NaN, a stray byte
	if x := RowFromBytes(0, 0, f32, 100); len(x) != 2 || x[0] != 1 || math.Float32bits(x[1]) != 0xFFC00000 {
		t.Errorf("float32: %v", x)
	}
	if x := RowFromBytes(1, 5, []byte{0x80, 0x3F, 0x80, 0x7F}, 100); len(x) != 5 || x[0] != 1 || !math.IsInf(float64(x[1]), 1) || x[4] != 1 {
		t.Errorf("bf16 repeated to 5: %v", x)
	}
	if x := RowFromBytes(2, 0, []byte{0, 1, 6, 0x35}, 100); !slices.Equal(bitsOf(x), bitsOf([]float32{0, Palette[1], float32(math.Inf(-1)), 3})) {
		t.Errorf("palette: %v", x)
	}
	if x := RowFromBytes(2, 7, nil, 100); len(x) != 7 || slices.ContainsFunc(x, func(v float32) bool { return v != 0 }) {
		t.Errorf("no data, length 7: %v", x)
	}
	if x := RowFromBytes(2, 1000, []byte{1}, 100); len(x) != 1000%101 {
		t.Errorf("length 1000 with maxN 100: %d elements", len(x))
	}
	if p := PredFromBytes([]byte{1, 0, 0xFF, 0xFF, 0x00, 0x80, 9}); !slices.Equal(p, []int32{1, -1, math.MinInt16}) {
		t.Errorf("prediction: %v", p)
	}
}

// A batch puts the row after Lead empty rows, an odd stride apart, with
// NaN in the slack, and the prediction in every row.
func TestBatch(t *testing.T) {
	c, err := Params{K: 3, N: 4 * 18, Flags: 3 << 2}.Case(InterpMaxN) // lead 3, n = 10
	if err != nil {
		t.Fatal(err)
	}
	x := c.Row()
	b := c.Batch(x, []int32{4, 2})
	if b.Rows() != 4 || b.Stride%2 != 1 || b.Stride < len(x) || b.Lengths[3] != int32(len(x)) || b.Lengths[0] != 0 {
		t.Fatalf("batch shape: %d rows, stride %d, lengths %v", b.Rows(), b.Stride, b.Lengths)
	}
	if !slices.Equal(bitsOf(b.Scores[3*b.Stride:3*b.Stride+len(x)]), bitsOf(x)) || b.Scores[0] == b.Scores[0] {
		t.Errorf("the row is not at row 3, or the slack is not NaN")
	}
	if b.PredCount != 2 || b.Pred[2*b.PredStride+1] != 2 {
		t.Errorf("prediction: count %d, %v", b.PredCount, b.Pred)
	}
	for _, name := range []string{"topk_radix", "gvr_topk"} {
		k, err := gen.Generate(name, c.Config)
		if err != nil {
			t.Fatal(err)
		}
		a := b.Set(k.Launch.Args(), 4, 8, 12, 16, 20)
		if err := a.Check(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		vals := map[bool]uint64{true: 20}[b.Values]
		for name, want := range map[string]uint64{"scores": 4, "row_stride": uint64(b.Stride), "lengths": 8, "out_idx": 16, "out_vals": vals} {
			if v, _ := a.Value(name); v != want {
				t.Errorf("%s: %s = %d, want %d", k.Name, name, v, want)
			}
		}
		if k.Launch.Param("pred") != nil {
			for name, want := range map[string]uint64{"pred": 12, "pred_stride": uint64(b.PredStride), "pred_count": 2} {
				if v, _ := a.Value(name); v != want {
					t.Errorf("%s: %s = %d, want %d", k.Name, name, v, want)
				}
			}
		}
	}
}

// Seed bit 51 makes a case without empty lead rows dense: its row alone,
// at stride N, launched with a null lengths pointer; with lead rows it
// stays a batch with lengths. The dense launch is exact in the
// interpreter.
func TestDenseCase(t *testing.T) {
	for _, lead := range []uint8{0, 2} {
		c, err := Params{Kernel: 1, K: 30, N: 4 * 301, Flags: lead << 2, Seed: 1<<51 | 9}.Case(InterpMaxN)
		if err != nil {
			t.Fatal(err)
		}
		if c.Dense != (lead == 0) {
			t.Fatalf("lead %d: Dense = %v", lead, c.Dense)
		}
		x := c.Row()
		b := c.Batch(x, nil)
		if !c.Dense {
			continue
		}
		if b.Rows() != 1 || b.Stride != len(x) || !b.Dense {
			t.Fatalf("dense batch: %d rows, stride %d for n = %d, Dense %v", b.Rows(), b.Stride, len(x), b.Dense)
		}
		l, err := Load(c.Kernel, c.Config)
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := b.Set(l.Kernel.Launch.Args(), 4, 8, 12, 16, 20).Value("lengths"); v != 0 {
			t.Errorf("a dense batch's lengths = %d, want the null pointer", v)
		}
		out, err := RunEmu(l.Program, l.Kernel, b, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := topk.Check(x, c.Config.K, c.Config.Sorted, out.Idx, out.Vals); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
}

func TestCorpus(t *testing.T) {
	p := Params{Kernel: 2, K: 300, N: 77, Seed: 1 << 40}
	lines := strings.Split(strings.TrimSpace(p.Corpus()), "\n")
	if lines[0] != "go test fuzz v1" || len(lines) != 1+len(p.Args()) || lines[3] != "uint16(300)" || lines[13] != "uint64(1099511627776)" {
		t.Errorf("corpus file:\n%s", p.Corpus())
	}
}

// A case of 16-bit scores: Row is the exact float32 of Row16, and the
// batch holds Row16 at the case's row, NaN in the slack, no float32 rows.
func TestScoreTypes(t *testing.T) {
	for flags, want := range map[uint8]gen.ScoreType{0: gen.Float32, 16: gen.Float16, 32: gen.BFloat16, 48: gen.Float32} {
		p := Params{K: 30, N: 2000, Flags: flags | 2<<2, Special: 0xFF, Seed: 5}
		c, err := p.Case(InterpMaxN)
		if err != nil {
			t.Fatal(err)
		}
		if c.Config.Scores != want {
			t.Fatalf("flags %#x: scores %v, want %v", flags, c.Config.Scores, want)
		}
		x, h := c.Row(), c.Row16()
		b := c.Batch(x, nil)
		if want == gen.Float32 {
			if h != nil || b.Scores16 != nil || len(b.Scores) != b.Rows()*b.Stride {
				t.Fatalf("float32 case: Row16 %d, Scores16 %d, Scores %d", len(h), len(b.Scores16), len(b.Scores))
			}
			continue
		}
		if len(h) != len(x) || b.Scores != nil || len(b.Scores16) != b.Rows()*b.Stride {
			t.Fatalf("%v: row %d, Row16 %d, Scores %d, Scores16 %d", want, len(x), len(h), len(b.Scores), len(b.Scores16))
		}
		w := widen(want, h)
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(w[i]) || b.Scores16[c.Lead*b.Stride+i] != h[i] {
				t.Fatalf("%v: element %d: Row %v, Row16 %#04x, batch %#04x", want, i, x[i], h[i], b.Scores16[c.Lead*b.Stride+i])
			}
		}
		if v := widen(want, b.Scores16[:1])[0]; v == v {
			t.Errorf("%v: the slack holds %v, want NaN", want, v)
		}
	}
}

// ForSM lowers every case to a target the device runs, the cluster kernels'
// own choice of sm_90 or sm_100 included (TestFuzzGPU ran sm_100 cluster
// kernels on an H100 before), and keeps a target the device runs.
func TestForSM(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		p := randomParams(r)
		for _, sm := range []int{90, 100} {
			q := p.ForSM(sm)
			c, err := q.Case(InterpMaxN)
			if err != nil {
				t.Fatalf("%+v: %v", q, err)
			}
			if c.Config.Target.SM > sm {
				t.Fatalf("%+v for sm_%d: %s %v", q, sm, c.Kernel, c.Config.Target)
			}
			if pc, err := p.Case(InterpMaxN); err == nil && pc.Config.Target.SM <= sm && pc.Config.Target != c.Config.Target {
				t.Fatalf("%+v for sm_%d: %v runs there, ForSM gave %v", p, sm, pc.Config.Target, c.Config.Target)
			}
		}
	}
}
