package emu

import (
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
)

// The project's kernels, as committed in golden/ (the text the driver
// receives), run in the interpreter against pure-Go references. Each
// launch takes the contract the generator returns with the kernel (block,
// dynamic shared memory, parameters) and binds the arguments by name, so a
// change of configuration does not break these tests.

type goldenKernel struct {
	p      *Program
	cfg    gen.Config // the configuration the file was generated for
	launch ptx.Launch // the generator's contract, which the file declares
}

// loadGolden loads golden/<name>_<target>.ptx, the kernel of the default
// configuration for target, with the contract gen.Generate returns for it:
// the dynamic shared memory size is in no declaration of the text, only in
// its header comment, so the generator is the one place to ask. The text
// must declare the rest of that contract (entry, block, parameters). A
// missing file fails the test: skipping would let a moved or deleted
// golden/ pass every test here.
func loadGolden(t testing.TB, name string, target ptx.Target) goldenKernel {
	t.Helper()
	cfg := gen.DefaultConfig()
	cfg.Target = target
	k, err := gen.Generate(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("..", "..", "golden", name+"_"+target.Name+".ptx")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("golden kernel %s: %v (regenerate golden/ with: go test ./golden -update)", file, err)
	}
	p, err := Load(string(b))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	declared, err := p.Contract(k.Name, 0, k.Launch.SharedBytes)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if !reflect.DeepEqual(declared, k.Launch) {
		t.Fatalf("%s declares %v, the generator's contract is %v (regenerate golden/ with: go test ./golden -update)", file, declared, k.Launch)
	}
	return goldenKernel{p: p, cfg: cfg, launch: k.Launch}
}

// args are the kernel's arguments with the values named in vals.
func (g *goldenKernel) args(vals map[string]uint64) *ptx.Args {
	a := g.launch.Args()
	for name, v := range vals {
		a.Set(name, v)
	}
	return a
}

// run launches the kernel on rows CTAs with the arguments named in vals.
func (g *goldenKernel) run(t testing.TB, mem *Memory, rows int, vals map[string]uint64, race bool) Stats {
	t.Helper()
	st, err := g.p.Run(mem, Launch{Grid: [3]int{rows}, Args: g.args(vals), RaceCheck: race})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// goldenTargets are the targets of golden/'s files: every kernel has one
// for sm_90 (the other device targets differ only in the header, which
// golden's test checks); warp_reduce also has its sm_75 shuffle path.
var goldenTargets = []ptx.Target{ptx.SM90}

func TestGoldenWarpReduce(t *testing.T) {
	compared := 0 // warps
	for _, target := range []ptx.Target{ptx.SM75, ptx.SM90} {
		g := loadGolden(t, "warp_reduce", target)
		rng := rand.New(rand.NewSource(7))
		ctas := 3
		in := make([]uint32, ctas*g.launch.Block)
		for i := range in {
			in[i] = rng.Uint32() >> rng.Intn(32)
		}
		mem := NewMemory()
		out := mem.Alloc(4*3*len(in)/32, 0)
		g.run(t, mem, ctas, map[string]uint64{"in": mem.AllocU32s(in), "out": out}, true)
		got := mustReadU32s(t, mem, out, 3*len(in)/32)
		compared += len(in) / 32
		for w := 0; w < len(in)/32; w++ {
			v := in[32*w : 32*w+32]
			var sum uint32
			for _, x := range v {
				sum += x
			}
			want := []uint32{sum, slices.Min(v), slices.Max(v)}
			if !slices.Equal(got[3*w:3*w+3], want) {
				t.Errorf("%s warp %d: %v, want %v", target, w, got[3*w:3*w+3], want)
			}
		}
	}
	// 3 CTAs of at least one warp on each target.
	if min := 3 * 2; compared < min {
		t.Errorf("compared %d warps, want at least %d", compared, min)
	}
}

func TestGoldenBlockScan(t *testing.T) {
	compared := 0 // CTAs
	for _, target := range goldenTargets {
		g := loadGolden(t, "block_scan", target)
		rng := rand.New(rand.NewSource(8))
		ctas := 3
		in := make([]uint32, ctas*g.launch.Block)
		for i := range in {
			in[i] = rng.Uint32() >> rng.Intn(32)
		}
		mem := NewMemory()
		out, totals := mem.Alloc(4*len(in), 0), mem.Alloc(4*ctas, 0)
		g.run(t, mem, ctas, map[string]uint64{"in": mem.AllocU32s(in), "out": out, "totals": totals}, true)
		gotOut := mustReadU32s(t, mem, out, len(in))
		gotTot := mustReadU32s(t, mem, totals, ctas)
		compared += ctas
		for r := range ctas {
			var s uint32
			for i := r * g.launch.Block; i < (r+1)*g.launch.Block; i++ {
				if gotOut[i] != s {
					t.Fatalf("%s: out[%d] = %d, want %d", target, i, gotOut[i], s)
				}
				s += in[i]
			}
			if gotTot[r] != s {
				t.Errorf("%s: totals[%d] = %d, want %d", target, r, gotTot[r], s)
			}
		}
		if g.launch.Block < 32 {
			t.Errorf("%s: %d threads per CTA: a scan of less than a warp tests little", target, g.launch.Block)
		}
	}
	if min := 3 * len(goldenTargets); compared != min {
		t.Errorf("compared %d CTAs, want %d", compared, min)
	}
}

// count_ge on rows that start anywhere (unaligned for float4 loads), of
// lengths that are not multiples of 4, with NaN, infinities and zeros.
func TestGoldenCountGE(t *testing.T) {
	compared, nonzero := 0, 0 // rows; rows with a count above 0
	for _, target := range goldenTargets {
		g := loadGolden(t, "count_ge", target)
		rng := rand.New(rand.NewSource(9))
		stride := 5003
		lengths := []uint32{0, 1, 3, 4, 5, 17, 4999, 5003}
		rows := len(lengths)
		x := make([]float32, rows*stride+3)
		for i := range x {
			switch rng.Intn(20) {
			case 0:
				x[i] = float32(math.NaN())
			case 1:
				x[i] = float32(math.Inf(rng.Intn(2)*2 - 1))
			case 2:
				x[i] = float32(math.Copysign(0, float64(rng.Intn(2)*2-1)))
			default:
				x[i] = float32(rng.NormFloat64())
			}
		}
		th := make([]float32, rows)
		for r := range th {
			th[r] = float32(rng.NormFloat64())
		}
		th[1] = float32(math.NaN())
		th[2] = 0
		mem := NewMemory()
		xs := mem.AllocF32s(x)
		for _, shift := range []int{0, 1, 2, 3} { // row starts 0, 4, 8, 12 bytes past 16-byte alignment
			counts := mem.Alloc(4*rows, 0)
			g.run(t, mem, rows, map[string]uint64{"scores": xs + uint64(4*shift), "row_stride": uint64(stride),
				"lengths": mem.AllocU32s(lengths), "thresholds": mem.AllocF32s(th), "counts": counts}, shift == 1)
			got := mustReadU32s(t, mem, counts, rows)
			for r := range rows {
				compared++
				want := uint32(0)
				for _, v := range x[shift+r*stride : shift+r*stride+int(lengths[r])] {
					if !(v < th[r]) { // >= or unordered
						want++
					}
				}
				if got[r] != want {
					t.Errorf("%s shift %d row %d (n=%d): %d, want %d", target, shift, r, lengths[r], got[r], want)
				}
				if want > 0 {
					nonzero++
				}
			}
		}
	}
	// 8 rows, 4 shifts, each target; most counts are not 0, so a kernel
	// that writes nothing cannot pass.
	if want := 8 * 4 * len(goldenTargets); compared != want || nonzero < compared/2 {
		t.Errorf("compared %d rows (%d with a count above 0), want %d", compared, nonzero, want)
	}
}

// key is the order of the Top-K contract: NaN > +Inf > ... > +0 > -0 > ...
func key(x float32) uint32 {
	if x != x {
		return 0xFFFFFFFF
	}
	b := math.Float32bits(x)
	if b&0x80000000 != 0 {
		return ^b
	}
	return b | 0x80000000
}

// refTopK is the set of the first min(k, n) indices by key descending,
// then index ascending, sorted by index.
func refTopK(x []float32, k int) []int32 {
	r := make([]uint64, len(x))
	for i, v := range x {
		r[i] = uint64(key(v))<<32 | uint64(^uint32(i))
	}
	slices.Sort(r)
	slices.Reverse(r)
	var idx []int32
	for _, v := range r[:min(k, len(r))] {
		idx = append(idx, int32(^uint32(v)))
	}
	slices.Sort(idx)
	return idx
}

// topkRows are test rows: typical, with ties and special values, short.
func topkRows(rng *rand.Rand, n int) [][]float32 {
	normal := func() []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	ties := make([]float32, n) // few distinct values: ties wider than any buffer
	for i := range ties {
		ties[i] = float32(rng.Intn(3))
	}
	special := normal()
	for i := 0; i < n; i += 97 {
		special[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), 0}[i%5]
	}
	return [][]float32{normal(), ties, special, normal()[:1000], normal()[:n-3]}
}

// topkArgs lays out rows at stride n+1 (so most rows are unaligned) and
// returns the arguments common to the Top-K kernels.
func topkArgs(mem *Memory, rows [][]float32, n, k int) (map[string]uint64, uint64) {
	stride := n + 1
	x := make([]float32, len(rows)*stride)
	lengths := make([]uint32, len(rows))
	for r, row := range rows {
		copy(x[r*stride:], row)
		lengths[r] = uint32(len(row))
	}
	out := mem.Alloc(4*len(rows)*k, 0)
	return map[string]uint64{"scores": mem.AllocF32s(x), "row_stride": uint64(stride), "lengths": mem.AllocU32s(lengths),
		"out_idx": out, "out_vals": mem.Alloc(4*len(rows)*k, 0), "next_n": 0, "row_starts": 0, "abs_idx": 0, "out_count": 0, "page_table": 0, "page_table_stride": 0, "page_size": 0, "out_pages": 0}, out
}

// checkTopK checks the kernel's out_idx and out_vals for rows against the
// reference: the index set, and each slot's value (the row's element, bit
// for bit, or -Inf in a padded slot). It returns the number of rows checked.
func checkTopK(t *testing.T, name string, mem *Memory, args map[string]uint64, rows [][]float32, k int) int {
	t.Helper()
	got, err := mem.ReadI32s(args["out_idx"], len(rows)*k)
	if err != nil {
		t.Fatal(err)
	}
	vals := mustReadF32s(t, mem, args["out_vals"], len(rows)*k)
	if len(got) != len(rows)*k {
		t.Fatalf("%s: read %d indices, want %d", name, len(got), len(rows)*k)
	}
	for r, row := range rows {
		g := slices.Clone(got[r*k : (r+1)*k])
		slices.Sort(g)
		want := refTopK(row, k)
		for len(want) < k {
			want = append([]int32{-1}, want...) // slots past n hold -1
		}
		if !slices.Equal(g, want) {
			t.Errorf("%s row %d (n=%d): the Top-%d set differs from the reference", name, r, len(row), k)
			continue
		}
		for j, i := range got[r*k : (r+1)*k] {
			w := uint32(0xFF800000) // -Inf in a padded slot
			if i >= 0 {
				w = math.Float32bits(row[i])
			}
			if v := math.Float32bits(vals[r*k+j]); v != w {
				t.Errorf("%s row %d slot %d (index %d): value bits %#08x, want %#08x", name, r, j, i, v, w)
				break
			}
		}
	}
	return len(rows)
}

// The full Top-K kernels: GVR with good and garbage predictions, the
// fallback and the radix select.
func TestGoldenTopK(t *testing.T) {
	const n = 1 << 16
	rng := rand.New(rand.NewSource(10))
	rows := topkRows(rng, n)
	checked := 0 // rows
	for _, name := range []string{"gvr_topk", "topk_fallback", "topk_radix"} {
		g := loadGolden(t, name, ptx.SM90)
		k := g.cfg.K
		mem := NewMemory()
		args, out := topkArgs(mem, rows, n, k)
		if name == "gvr_topk" {
			// Row r's prediction: the Top-K of a perturbed copy, except
			// for row 1 (garbage: out of range, negative, duplicates) and
			// row 2 (no prediction: pred_count 0 is tested below).
			pred := make([]int32, len(rows)*k)
			for r, row := range rows {
				y := slices.Clone(row)
				for i := range y {
					y[i] += float32(rng.NormFloat64() * 0.05)
				}
				p := refTopK(y, k)
				for i := range k {
					switch {
					case r == 1:
						pred[r*k+i] = int32(rng.Intn(3*n) - n)
					case i < len(p):
						pred[r*k+i] = p[i]
					}
				}
			}
			args["pred"], args["pred_stride"], args["pred_count"] = mem.AllocI32s(pred), uint64(k), uint64(k)
		}
		if k < 16 || k >= n {
			t.Fatalf("%s: K=%d: the test wants 16 <= K < %d", name, k, n)
		}
		g.run(t, mem, len(rows), args, false)
		checked += checkTopK(t, name, mem, args, rows, k)
		if name == "gvr_topk" {
			// Poison the output so that the second run must write it.
			if err := mem.WriteI32s(out, slices.Repeat([]int32{-7}, len(rows)*k)); err != nil {
				t.Fatal(err)
			}
			args["pred_count"] = 0
			g.run(t, mem, 2, args, true) // and with the race detector on
			checked += checkTopK(t, name+" (no prediction)", mem, args, rows[:2], k)
		}
	}
	if want := 3*len(rows) + 2; checked != want || len(rows) != 5 {
		t.Errorf("checked %d rows of %d, want %d", checked, len(rows), want)
	}
}

// A Program may run on several Memories at once, and each run computes its
// own result.
func TestConcurrentRuns(t *testing.T) {
	g := loadGolden(t, "count_ge", ptx.SM90)
	type result struct {
		i      int
		counts []uint32
		err    error
	}
	done := make(chan result)
	for i := range 2 {
		go func() {
			mem := NewMemory()
			x := make([]float32, 1000)
			for j := range x {
				x[j] = float32(j % (7 + i))
			}
			counts := mem.Alloc(4, 0)
			args := g.args(map[string]uint64{"scores": mem.AllocF32s(x), "row_stride": 1000,
				"lengths": mem.AllocU32s([]uint32{1000}), "thresholds": mem.AllocF32s([]float32{3}), "counts": counts})
			_, err := g.p.Run(mem, Launch{Grid: [3]int{1}, Args: args})
			var c []uint32
			if err == nil {
				c, err = mem.ReadU32s(counts, 1)
			}
			done <- result{i, c, err}
		}()
	}
	for range 2 {
		r := <-done
		if r.err != nil {
			t.Errorf("run %d: %v", r.i, r.err)
			continue
		}
		// x[j] = j % (7+i) >= 3: 7+i-3 of each 7+i values.
		m := 7 + r.i
		want := uint32(1000/m*(m-3) + max(0, 1000%m-3))
		if len(r.counts) != 1 || r.counts[0] != want {
			t.Errorf("run %d: count %v, want %d", r.i, r.counts, want)
		}
	}
}
