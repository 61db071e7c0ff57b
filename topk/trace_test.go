package topk

import (
	"flag"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"codeberg.org/sbinet/npyio/npy"

	"github.com/gvr-go/gvr/internal/half"
)

var updateTrace = flag.Bool("gvr.update-trace", false, "TestTraceSample: rewrite testdata/trace_small.npy")

// The committed sample: DecodeTrace(sampleStart, 4, 2, 1), float32, N = 512.
const (
	sampleTrace = "testdata/trace_small.npy"
	sampleStart = 509
)

func TestTraceSample(t *testing.T) {
	want := DecodeTrace(sampleStart, 4, 2, 1)
	if *updateTrace {
		if err := want.Save(sampleTrace, Float32); err != nil {
			t.Fatal(err)
		}
	}
	got, err := LoadTrace(sampleTrace)
	if err != nil {
		t.Fatal(err)
	}
	if want.N != 512 {
		t.Fatalf("the sample's N = %d, want 512", want.N)
	}
	sameTrace(t, got, want)
}

func TestDecodeTrace(t *testing.T) {
	const start, steps, rows = 100, 5, 3
	tr := DecodeTrace(start, steps, rows, 7)
	if tr.Rows != rows || tr.N != start+steps-1 || len(tr.Steps) != steps {
		t.Fatalf("Rows, N, steps = %d, %d, %d, want %d, %d, %d", tr.Rows, tr.N, len(tr.Steps), rows, start+steps-1, steps)
	}
	for r := range rows {
		d := NewDecode(start, start+steps, 0, 7+uint64(r))
		for s := range steps {
			if want := d.Next(); !slices.Equal(tr.Row(s, r), want) {
				t.Errorf("step %d row %d differs from NewDecode's", s, r)
			}
			for i, v := range tr.Steps[s][r*tr.N+tr.Len(s, r) : (r+1)*tr.N] {
				if !math.IsInf(float64(v), -1) {
					t.Errorf("step %d row %d: padding [%d] = %v, want -Inf", s, r, tr.Len(s, r)+i, v)
				}
			}
		}
	}
}

// specialTrace is a trace of random scores with the values a conversion
// gets wrong: NaN, infinities, zeros, subnormals, the largest finite ones.
func specialTrace(steps, rows, n int, lengths bool) *Trace {
	rng := rand.New(rand.NewPCG(1, 2))
	tr := &Trace{Rows: rows, N: n}
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
		math.SmallestNonzeroFloat32, 0x1p-24, 0x1p-25, 0x1.8p-24, 65504, 65520, -math.MaxFloat32, 1, 1.0 / 3}
	for s := range steps {
		x := make([]float32, rows*n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 10)
		}
		copy(x[s:], specials)
		tr.Steps = append(tr.Steps, x)
		if lengths {
			l := make([]int32, rows)
			for r := range l {
				l[r] = int32(rng.IntN(n + 1))
			}
			tr.Lengths = append(tr.Lengths, l)
		}
	}
	return tr
}

// rounded is tr with each score rounded to d and back.
func rounded(tr *Trace, d DType) *Trace {
	out := *tr
	out.Steps = nil
	for _, x := range tr.Steps {
		y := make([]float32, len(x))
		for i, v := range x {
			switch d {
			case Float16:
				y[i] = half.Float16ToFloat32(half.Float32ToFloat16(v))
			case BFloat16:
				y[i] = half.BFloat16ToFloat32(half.Float32ToBFloat16(v))
			default:
				y[i] = v
			}
		}
		out.Steps = append(out.Steps, y)
	}
	return &out
}

func sameTrace(t *testing.T, got, want *Trace) {
	t.Helper()
	if got.Rows != want.Rows || got.N != want.N || len(got.Steps) != len(want.Steps) {
		t.Fatalf("Rows, N, steps = %d, %d, %d, want %d, %d, %d", got.Rows, got.N, len(got.Steps), want.Rows, want.N, len(want.Steps))
	}
	for s := range want.Steps {
		for i := range want.Steps[s] {
			if g, w := math.Float32bits(got.Steps[s][i]), math.Float32bits(want.Steps[s][i]); g != w {
				t.Fatalf("step %d score %d = %v (%#08x), want %v (%#08x)", s, i, got.Steps[s][i], g, want.Steps[s][i], w)
			}
		}
	}
	if (got.Lengths == nil) != (want.Lengths == nil) {
		t.Fatalf("Lengths = %v, want %v", got.Lengths, want.Lengths)
	}
	for s := range want.Lengths {
		if !slices.Equal(got.Lengths[s], want.Lengths[s]) {
			t.Fatalf("step %d lengths = %v, want %v", s, got.Lengths[s], want.Lengths[s])
		}
	}
}

func TestTraceRoundTrip(t *testing.T) {
	for _, d := range []DType{Float32, Float16, BFloat16} {
		for _, lengths := range []bool{false, true} {
			tr := specialTrace(3, 2, 40, lengths)
			want := rounded(tr, d)
			dir := t.TempDir()
			file, folder := filepath.Join(dir, "t.npy"), filepath.Join(dir, "steps")
			if err := tr.Save(file, d); err != nil {
				t.Fatal(err)
			}
			if err := tr.SaveDir(folder, d); err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{file, folder} {
				got, err := LoadTrace(path)
				if err != nil {
					t.Fatalf("%v lengths %v: %v", d, lengths, err)
				}
				sameTrace(t, got, want)
				// What was loaded saves and loads again to the same.
				again := filepath.Join(dir, "again.npy")
				if err := got.Save(again, d); err != nil {
					t.Fatal(err)
				}
				if got, err = LoadTrace(again); err != nil {
					t.Fatal(err)
				}
				sameTrace(t, got, want)
			}
			// The header is one npyio reads, and float32 data too.
			if d == Float32 {
				f, err := os.Open(file)
				if err != nil {
					t.Fatal(err)
				}
				var x []float32
				err = npy.Read(f, &x)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(math32bits(x), math32bits(slices.Concat(tr.Steps...))) {
					t.Errorf("npyio reads other data than Save wrote")
				}
			}
		}
	}
	// Saving without lengths removes a stale lengths file.
	dir := t.TempDir()
	path := filepath.Join(dir, "t.npy")
	if err := DecodeTrace(10, 3, 2, 1).Save(path, Float32); err != nil {
		t.Fatal(err)
	}
	tr := specialTrace(3, 2, 12, false)
	if err := tr.Save(path, Float32); err != nil {
		t.Fatal(err)
	}
	got, err := LoadTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	sameTrace(t, got, tr)
}

// math32bits are the bits of each float (for comparisons that must see
// NaN payloads and signed zeros).
func math32bits(x []float32) []uint32 {
	b := make([]uint32, len(x))
	for i, v := range x {
		b[i] = math.Float32bits(v)
	}
	return b
}

// TestTraceNpyio loads files that npyio wrote: [steps, N] in one file and a
// folder of [N] steps named so that their order is numeric, not lexical.
func TestTraceNpyio(t *testing.T) {
	dir := t.TempDir()
	rows := [][]float32{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}
	write(t, filepath.Join(dir, "t.npy"), rows)
	got, err := LoadTrace(filepath.Join(dir, "t.npy"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Trace{Rows: 1, N: 3, Steps: rows}
	sameTrace(t, got, want)

	folder := filepath.Join(dir, "steps")
	os.Mkdir(folder, 0o755)
	for i, name := range []string{"s2.npy", "s9.npy", "s10.npy"} {
		write(t, filepath.Join(folder, name), rows[i])
	}
	os.WriteFile(filepath.Join(folder, "README"), []byte("not a step"), 0o644)
	if got, err = LoadTrace(folder); err != nil {
		t.Fatal(err)
	}
	sameTrace(t, got, want)

	// int64 lengths, as np.save writes a list of ints.
	write(t, filepath.Join(dir, "t.lengths.npy"), [][]int64{{3}, {0}, {2}})
	if got, err = LoadTrace(filepath.Join(dir, "t.npy")); err != nil {
		t.Fatal(err)
	}
	if want := [][]int32{{3}, {0}, {2}}; !slices.EqualFunc(got.Lengths, want, slices.Equal) {
		t.Errorf("lengths %v, want %v", got.Lengths, want)
	}
}

func write(t *testing.T, path string, v any) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := npy.Write(f, v); err != nil {
		t.Fatal(err)
	}
}

func TestLoadTraceErrors(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	save := func(name string) string {
		p := path(name)
		if err := specialTrace(2, 2, 8, false).Save(p, Float32); err != nil {
			t.Fatal(err)
		}
		return p
	}
	truncate := func(p string, by int64) string {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, fi.Size()-by); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mkdir := func(name string) string {
		p := path(name)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	type tc struct {
		name, path, named, says string
	}
	var cases []tc
	add := func(name, path, named, says string) { cases = append(cases, tc{name, path, named, says}) }

	p := path("int64.npy")
	write(t, p, [][]int64{{1, 2}, {3, 4}})
	add("wrong dtype", p, p, "dtype '<i8'")
	p = path("uint16.npy")
	write(t, p, [][]uint16{{1, 2}, {3, 4}})
	add("uint16 bits", p, p, "ml_dtypes.bfloat16")
	p = path("rank1.npy")
	write(t, p, []float32{1, 2, 3})
	add("rank 1 file", p, p, "want [steps, N] or [steps, rows, N]")
	p = path("nosteps.npy")
	if err := writeNpy(p, "<f4", []int{0, 4}, func(io.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	add("no steps", p, p, "shape [0 4]: no steps")
	p = save("truncated.npy")
	truncate(p, 3)
	add("truncated data", p, p, "truncated: 125 bytes of data, the header wants 128")
	p = save("trailing.npy")
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte{0})
	f.Close()
	add("trailing bytes", p, p, "trailing bytes")
	p = save("header.npy")
	os.Truncate(p, 30)
	add("truncated header", p, p, "truncated or malformed header")
	p = path("text.npy")
	os.WriteFile(p, []byte("scores: 1 2 3\n"), 0o644)
	add("not npy", p, p, "not a .npy file")
	p = path("missing.npy")
	add("missing", p, p, "no such file")

	p = mkdir("empty")
	os.WriteFile(filepath.Join(p, "notes.txt"), nil, 0o644)
	add("empty folder", p, p, "no .npy files")
	p = mkdir("mismatch")
	write(t, filepath.Join(p, "step1.npy"), []float32{1, 2, 3})
	write(t, filepath.Join(p, "step2.npy"), []float32{1, 2, 3, 4})
	add("mismatched N", p, filepath.Join(p, "step2.npy"), "step1.npy has [1, 3]")
	p = mkdir("rank3")
	write(t, filepath.Join(p, "0.npy"), [][][]float32{{{1}}})
	add("rank 3 step", p, filepath.Join(p, "0.npy"), "a step wants [N] or [rows, N]")
	p = mkdir("bad")
	write(t, filepath.Join(p, "0.npy"), []float32{1, 2})
	write(t, filepath.Join(p, "1.npy"), []int32{1, 2})
	add("wrong dtype in folder", p, filepath.Join(p, "1.npy"), "dtype '<i4'")

	p = save("lengths.npy")
	lp := path("lengths.lengths.npy")
	write(t, lp, [][]int32{{1, 2}})
	add("lengths shape", p, lp, "want [steps, rows] = [2 2]")
	p = save("long.npy")
	lp = path("long.lengths.npy")
	write(t, lp, [][]int32{{1, 2}, {9, 0}})
	add("length past N", p, lp, "step 1 row 0: length 9 outside [0, N = 8]")
	p = save("flengths.npy")
	lp = path("flengths.lengths.npy")
	write(t, lp, [][]float32{{1, 2}, {3, 4}})
	add("lengths dtype", p, lp, "want int32 ('<i4') or int64 ('<i8')")

	for _, c := range cases {
		_, err := LoadTrace(c.path)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.named) || !strings.Contains(msg, c.says) {
			t.Errorf("%s: error %q, want one naming %s and saying %q", c.name, msg, c.named, c.says)
		}
	}
}

func TestSaveErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.npy")
	for _, c := range []struct {
		tr   *Trace
		says string
	}{
		{&Trace{Rows: 1, N: 2}, "no steps"},
		{&Trace{Rows: 2, N: 2, Steps: [][]float32{{1, 2, 3}}}, "step 0 has 3 scores, want Rows*N = 2*2"},
		{&Trace{Rows: 1, N: 2, Steps: [][]float32{{1, 2}}, Lengths: [][]int32{{3}}}, "length 3 outside [0, N = 2]"},
		{&Trace{Rows: 1, N: 2, Steps: [][]float32{{1, 2}}, Lengths: [][]int32{}}, "lengths of 0 steps, want 1"},
	} {
		if err := c.tr.Save(path, Float32); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Save: error %v, want one saying %q", err, c.says)
		}
	}
}

func TestNaturalCompare(t *testing.T) {
	names := []string{"step_10.npy", "step_2.npy", "step_1.npy", "a.npy", "step_02b.npy", "step_9.npy", "b1.npy"}
	slices.SortFunc(names, naturalCompare)
	want := []string{"a.npy", "b1.npy", "step_1.npy", "step_2.npy", "step_02b.npy", "step_9.npy", "step_10.npy"}
	if !slices.Equal(names, want) {
		t.Errorf("sorted %v, want %v", names, want)
	}
}
