package topk

import (
	"math"
	"math/rand"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/quick"
)

var (
	inf    = float32(math.Inf(1))
	negInf = float32(math.Inf(-1))
	negZ   = float32(math.Copysign(0, -1))
	nanPos = math.Float32frombits(0x7FC00000)
	nanNeg = math.Float32frombits(0xFFC00000)
	nanPay = math.Float32frombits(0x7F800001) // a signalling NaN payload
)

func TestKey(t *testing.T) {
	for _, tc := range []struct {
		x    float32
		want uint32
	}{
		{negInf, 0x007FFFFF},
		{-1, 0x407FFFFF},
		{negZ, 0x7FFFFFFF},
		{0, 0x80000000},
		{math.Float32frombits(1), 0x80000001}, // smallest denormal
		{1, 0xBF800000},
		{inf, 0xFF800000},
		{nanPos, 0xFFFFFFFF},
		{nanNeg, 0xFFFFFFFF},
		{nanPay, 0xFFFFFFFF},
	} {
		if got := Key(tc.x); got != tc.want {
			t.Errorf("Key(%v, bits %#08x) = %#08x, want %#08x", tc.x, math.Float32bits(tc.x), got, tc.want)
		}
	}
}

// Keys increase with the contract's order, lowest first.
func TestKeyOrder(t *testing.T) {
	ascending := []float32{negInf, -math.MaxFloat32, -1, -math.SmallestNonzeroFloat32, negZ, 0,
		math.SmallestNonzeroFloat32, 1, math.MaxFloat32, inf, nanPos}
	for i := 1; i < len(ascending); i++ {
		if Key(ascending[i-1]) >= Key(ascending[i]) {
			t.Errorf("Key(%v) >= Key(%v)", ascending[i-1], ascending[i])
		}
	}
}

func TestReferenceCases(t *testing.T) {
	for _, tc := range []struct {
		name       string
		x          []float32
		k          int
		sorted     []int32 // rank order
		unsorted   []int32 // ascending index order
		sortedVals []float32
	}{
		{"NaN of both signs above +Inf", []float32{1, inf, nanNeg, nanPos, 2}, 3,
			[]int32{2, 3, 1}, []int32{1, 2, 3}, []float32{nanNeg, nanPos, inf}},
		{"+0 above -0", []float32{negZ, 0, negZ}, 1, []int32{1}, []int32{1}, []float32{0}},
		{"-0 above negatives", []float32{-1, negZ, negInf}, 2, []int32{1, 0}, []int32{0, 1}, []float32{negZ, -1}},
		{"-Inf lowest", []float32{negInf, -math.MaxFloat32, negInf}, 2, []int32{1, 0}, []int32{0, 1},
			[]float32{-math.MaxFloat32, negInf}},
		{"ties by lowest index", []float32{5, 7, 5, 7, 5, 5}, 4, []int32{1, 3, 0, 2}, []int32{0, 1, 2, 3},
			[]float32{7, 7, 5, 5}},
		{"all equal", []float32{2, 2, 2, 2, 2}, 3, []int32{0, 1, 2}, []int32{0, 1, 2}, []float32{2, 2, 2}},
		{"n < K pads", []float32{3, 1, 2}, 5, []int32{0, 2, 1, -1, -1}, []int32{0, 1, 2, -1, -1},
			[]float32{3, 2, 1, negInf, negInf}},
		{"n == K", []float32{3, 1, 2}, 3, []int32{0, 2, 1}, []int32{0, 1, 2}, []float32{3, 2, 1}},
		{"n == 0", nil, 3, []int32{-1, -1, -1}, []int32{-1, -1, -1}, []float32{negInf, negInf, negInf}},
		{"K == 0", []float32{1, 2}, 0, []int32{}, []int32{}, []float32{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx, vals := Reference(tc.x, tc.k, true)
			if !slices.Equal(idx, tc.sorted) {
				t.Errorf("sorted: %v, want %v", idx, tc.sorted)
			}
			if !sameBits(vals, tc.sortedVals) {
				t.Errorf("sorted values: %v, want %v", vals, tc.sortedVals)
			}
			idx, vals = Reference(tc.x, tc.k, false)
			if !slices.Equal(idx, tc.unsorted) {
				t.Errorf("unsorted: %v, want %v", idx, tc.unsorted)
			}
			for j, i := range idx {
				w := PadValue
				if i >= 0 {
					w = tc.x[i]
				}
				if math.Float32bits(vals[j]) != math.Float32bits(w) {
					t.Errorf("unsorted value %d: %v, want %v", j, vals[j], w)
				}
			}
		})
	}
}

func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// NaN payloads come back bit for bit.
func TestReferenceKeepsNaNBits(t *testing.T) {
	x := []float32{1, nanPay, nanNeg}
	_, vals := Reference(x, 2, true)
	if math.Float32bits(vals[0]) != 0x7F800001 || math.Float32bits(vals[1]) != 0xFFC00000 {
		t.Errorf("values %#08x %#08x", math.Float32bits(vals[0]), math.Float32bits(vals[1]))
	}
}

func TestReferencePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "negative") {
			t.Errorf("recovered %v, want a panic about negative k", r)
		}
	}()
	Reference([]float32{1}, -1, false)
}

// naive is the obvious O(n log n) Top-K: a stable sort of the indices by key,
// descending.
func naive(x []float32, k int, sorted bool) []int32 {
	order := make([]int32, len(x))
	for i := range order {
		order[i] = int32(i)
	}
	sort.SliceStable(order, func(a, b int) bool { return Key(x[order[a]]) > Key(x[order[b]]) })
	m := min(k, len(x))
	out := slices.Clone(order[:m])
	if !sorted {
		slices.Sort(out)
	}
	for len(out) < k {
		out = append(out, -1)
	}
	return out
}

// row is a quick-generated input rich in ties and special values.
type row []float32

func (row) Generate(r *rand.Rand, size int) reflect.Value {
	n := r.Intn(4 * size)
	if r.Intn(8) == 0 {
		n = r.Intn(3)
	}
	pool := []float32{0, negZ, inf, negInf, nanPos, nanNeg, nanPay, 1, -1, math.MaxFloat32}
	x := make(row, n)
	for i := range x {
		switch r.Intn(3) {
		case 0:
			x[i] = pool[r.Intn(len(pool))]
		case 1:
			x[i] = float32(r.Intn(5)) // many ties
		default:
			x[i] = math.Float32frombits(r.Uint32())
		}
	}
	return reflect.ValueOf(x)
}

func TestReferenceQuick(t *testing.T) {
	f := func(x row, k uint8, sorted bool) bool {
		kk := int(k)%(len(x)+8) + 1
		idx, vals := Reference(x, kk, sorted)
		if !slices.Equal(idx, naive(x, kk, sorted)) {
			return false
		}
		return Check(x, kk, sorted, idx, vals) == nil
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}

// Large rows in orders that trouble a naive quickselect.
func TestReferenceAdversarial(t *testing.T) {
	const n = 50000
	patterns := map[string]func(i int) float32{
		"ascending":  func(i int) float32 { return float32(i) },
		"descending": func(i int) float32 { return float32(n - i) },
		"all equal":  func(i int) float32 { return 1 },
		"organ pipe": func(i int) float32 { return float32(min(i, n-i)) },
		"two values": func(i int) float32 { return float32(i % 2) },
		"sawtooth":   func(i int) float32 { return float32(i % 1000) },
	}
	for name, f := range patterns {
		x := make([]float32, n)
		for i := range x {
			x[i] = f(i)
		}
		for _, k := range []int{1, 17, 2048, n - 1, n, n + 5} {
			for _, sorted := range []bool{false, true} {
				idx, _ := Reference(x, k, sorted)
				if want := naive(x, k, sorted); !slices.Equal(idx, want) {
					t.Errorf("%s k=%d sorted=%v: differs from the naive Top-K", name, k, sorted)
				}
			}
		}
	}
}

func TestReferenceDeterministic(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	x := make([]float32, 100000)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, sorted := range []bool{false, true} {
		a, av := Reference(x, 2048, sorted)
		b, bv := Reference(x, 2048, sorted)
		if !slices.Equal(a, b) || !sameBits(av, bv) {
			t.Errorf("sorted=%v: two runs differ", sorted)
		}
	}
	// The unsorted set is the sorted result in index order.
	s, _ := Reference(x, 2048, true)
	u, _ := Reference(x, 2048, false)
	slices.Sort(s)
	if !slices.Equal(s, u) {
		t.Error("sorted and unsorted results are not the same set")
	}
}

func TestSameSet(t *testing.T) {
	for _, tc := range []struct {
		a, b []int32
		want bool
	}{
		{[]int32{1, 2, 3}, []int32{3, 1, 2}, true},
		{[]int32{1, 2, -1}, []int32{-1, 2, 1}, true},
		{[]int32{1, 2, -1}, []int32{1, 2, 3}, false},
		{[]int32{1, -1, -1}, []int32{1, 2, -1}, false},
		{[]int32{1, 1, 2}, []int32{1, 2, 2}, false},
		{[]int32{1, 2}, []int32{1, 2, -1}, false},
		{nil, []int32{}, true},
	} {
		if got := SameSet(tc.a, tc.b); got != tc.want {
			t.Errorf("SameSet(%v, %v) = %v", tc.a, tc.b, got)
		}
	}
}

func TestCompare(t *testing.T) {
	want := []int32{4, 0, 7, -1, -1} // rank order, two padded slots
	for _, tc := range []struct {
		name   string
		got    []int32
		sorted bool
		err    string // "" when the output is right
	}{
		{"same, sorted", []int32{4, 0, 7, -1, -1}, true, ""},
		{"permuted, unsorted", []int32{7, 4, 0, -1, -1}, false, ""},
		{"permuted, sorted", []int32{7, 4, 0, -1, -1}, true, "slot 0 (rank order): got index 7, want 4"},
		{"too few slots", []int32{4, 0, 7, -1}, false, "got 4 slots, want 5"},
		{"padding missing", []int32{4, 0, 7, 9, -1}, false, "slot 3: got index 9, want -1 padding"},
		{"padding too early", []int32{4, 0, -1, -1, -1}, false, "1 indices missing (first 7), 1 unexpected (first -1)"},
		{"padding moved", []int32{-1, 4, 0, 7, -1}, false, "slot 3: got index 7, want -1 padding"},
		{"wrong index", []int32{4, 0, 8, -1, -1}, false, "1 indices missing (first 7), 1 unexpected (first 8)"},
		{"duplicate", []int32{4, 4, 7, -1, -1}, false, "index 4 appears more than once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Compare(tc.got, want, tc.sorted)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}

func TestCheckValues(t *testing.T) {
	x := []float32{1, nanPay, 3}
	idx, vals := Reference(x, 4, false)
	if err := Check(x, 4, false, idx, vals); err != nil {
		t.Fatal(err)
	}
	if err := Check(x, 4, false, idx, nil); err != nil {
		t.Errorf("nil values: %v", err)
	}
	bad := slices.Clone(vals)
	bad[1] = nanPos // same NaN-ness, other bits
	if err := Check(x, 4, false, idx, bad); err == nil || !strings.Contains(err.Error(), "slot 1") {
		t.Errorf("NaN with other bits: %v", err)
	}
	bad = slices.Clone(vals)
	bad[3] = 0 // padding must be -Inf
	if err := Check(x, 4, false, idx, bad); err == nil || !strings.Contains(err.Error(), "slot 3 (index -1)") {
		t.Errorf("padding value 0: %v", err)
	}
	if err := Check(x, 4, false, idx, vals[:2]); err == nil {
		t.Error("short values accepted")
	}
}

func BenchmarkReference(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	x := make([]float32, 262144)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, sorted := range []bool{false, true} {
		name := "unsorted"
		if sorted {
			name = "sorted"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				Reference(x, 2048, sorted)
			}
		})
	}
}
