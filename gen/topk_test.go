package gen_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/ptx/emu"
	"github.com/gvr-go/gvr/topk"
)

// The Top-K kernels run in the interpreter on an adversarial suite and must
// match the CPU reference bit for bit (as sets: the output is unsorted).

var (
	cfgK16  = gen.Config{K: 16, MaxCandidates: 64, BlockSize: 64, Bins: 64, Target: ptx.SM90}
	cfgK256 = gen.Config{K: 256, MaxCandidates: 1024, BlockSize: 256, Bins: 256, Target: ptx.SM80}
	cfgK2k  = gen.Config{K: 2048, MaxCandidates: 6144, BlockSize: 512, Bins: 2048, Target: ptx.SM90}
)

// testCase is one row and its prediction.
type testCase struct {
	name string
	x    []float32
	pred []int32
}

func normal(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// bf16 rounds x to bfloat16 (to nearest, ties to even), as a model's
// scores often are: it makes ties common.
func bf16(x float32) float32 {
	b := math.Float32bits(x)
	b += 0x7FFF + (b>>16)&1
	return math.Float32frombits(b &^ 0xFFFF)
}

// rows is the adversarial suite for K and MaxCandidates C, rows of about n
// elements.
func rows(r *rand.Rand, K, C, n int) []testCase {
	var cs []testCase
	add := func(name string, x []float32) { cs = append(cs, testCase{name: name, x: x}) }
	add("random", normal(r, n))
	add("random n%4=3", normal(r, n-1))
	x := normal(r, n)
	for i := range x {
		x[i] = bf16(x[i])
	}
	add("bf16", x)
	x = normal(r, n)
	for i := range x {
		x[i] = bf16(x[i] * 0.01)
	}
	add("bf16 narrow", x)
	x = make([]float32, n)
	for i := range x {
		x[i] = 0.25
	}
	add("all equal", x)
	x = normal(r, n)
	for i := 0; i < K/2; i++ {
		x[i] = 10 + float32(i)
	}
	for i := K / 2; i < K/2+2*C && i < n; i++ {
		x[i] = 5
	}
	r.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	add("ties at K-th wider than C", x)
	x = normal(r, n)
	for i := range x {
		switch u := r.Float64(); {
		case u < 0.02:
			x[i] = float32(math.NaN())
		case u < 0.03:
			x[i] = math.Float32frombits(0xFFC00000) // -NaN
		case u < 0.035:
			x[i] = math.Float32frombits(0x7F800123) // NaN with a payload
		case u < 0.045:
			x[i] = float32(math.Inf(1))
		case u < 0.055:
			x[i] = float32(math.Inf(-1))
		}
	}
	add("NaN and Inf sprinkled", x)
	x = normal(r, n)
	for i := range x {
		if r.IntN(2) == 0 {
			x[i] = float32(math.NaN())
		}
	}
	add("NaN majority", x)
	x = normal(r, n)
	for i := n * 6 / 10; i < n; i++ {
		x[i] = float32(math.Inf(-1))
	}
	add("-Inf masked tail", x)
	x = make([]float32, n)
	for i := range x {
		if r.IntN(2) == 0 {
			x[i] = float32(math.Copysign(0, -1))
		}
	}
	add("+0 and -0", x)
	for _, m := range []int{0, 1, K - 1, K, K + 1, K + 3, C, C + 1} {
		add(fmt.Sprintf("n=%d", m), normal(r, m))
	}
	return cs
}

// predict fills each case's prediction in the given mode.
func predict(r *rand.Rand, cs []testCase, mode string, K int) {
	for i := range cs {
		n := len(cs[i].x)
		top, _ := topk.Reference(cs[i].x, K, true)
		top = top[:min(K, n)]
		var p []int32
		switch mode {
		case "perfect":
			p = top
		case "partial":
			p = append([]int32(nil), top[:len(top)/2]...)
			for len(p) < K {
				p = append(p, int32(r.IntN(max(n, 1))))
			}
		case "random":
			for range K {
				p = append(p, int32(r.IntN(max(n, 1))))
			}
		case "garbage": // negative, out of range, duplicates
			for j := range K {
				switch j % 3 {
				case 0:
					p = append(p, -1-int32(r.IntN(5000)))
				case 1:
					p = append(p, int32(n+r.IntN(100000)))
				default:
					p = append(p, 7)
				}
			}
		case "empty":
		}
		cs[i].pred = p
	}
}

// launch runs kernel name of cfg over cs in the interpreter, one CTA per
// row, and returns each row's indices and values. Rows are laid out with an
// odd stride, so most start at an address that is not 16-byte aligned, and
// the bytes past each row's length hold a value that must never be chosen.
func launch(t testing.TB, p *emu.Program, k *gen.Kernel, cs []testCase, race bool) ([][]int32, [][]float32) {
	t.Helper()
	K := k.Config.K
	stride := 1
	pstride := 1
	for _, c := range cs {
		stride = max(stride, len(c.x))
		pstride = max(pstride, len(c.pred))
	}
	stride |= 1
	mem := emu.NewMemory()
	host := make([]float32, len(cs)*stride)
	lens := make([]int32, len(cs))
	pred := make([]int32, len(cs)*pstride)
	for r, c := range cs {
		copy(host[r*stride:], c.x)
		for j := len(c.x); j < stride; j++ {
			host[r*stride+j] = 1e30
		}
		lens[r] = int32(len(c.x))
		copy(pred[r*pstride:], c.pred)
	}
	scores := mem.AllocF32s(host)
	lengths := mem.AllocI32s(lens)
	outIdx := mem.AllocI32s(make([]int32, len(cs)*K))
	outVals := mem.AllocF32s(make([]float32, len(cs)*K))
	args := k.Launch.Args().Set("scores", scores).Set("row_stride", uint64(stride)).Set("lengths", lengths).
		Set("out_idx", outIdx).Set("out_vals", outVals)
	if k.Name == "gvr_topk" {
		pcount := uint64(pstride)
		if len(cs) > 0 && cs[0].pred == nil {
			pcount = 0
		}
		args.Set("pred", mem.AllocI32s(pred)).Set("pred_stride", uint64(pstride)).Set("pred_count", pcount)
	}
	_, err := p.Run(mem, emu.Launch{Grid: [3]int{len(cs)}, Args: args, RaceCheck: race})
	if err != nil {
		t.Fatalf("%s (%v): %v", k.Name, k.Config, err)
	}
	idx, err := mem.ReadI32s(outIdx, len(cs)*K)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := mem.ReadF32s(outVals, len(cs)*K)
	if err != nil {
		t.Fatal(err)
	}
	var is [][]int32
	var vs [][]float32
	for r := range cs {
		is = append(is, idx[r*K:(r+1)*K])
		vs = append(vs, vals[r*K:(r+1)*K])
	}
	return is, vs
}

func load(t testing.TB, name string, cfg gen.Config) (*emu.Program, *gen.Kernel) {
	t.Helper()
	k, err := gen.Generate(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := emu.LoadModule(k.Module)
	if err != nil {
		t.Fatal(err)
	}
	return p, k
}

func checkRows(t *testing.T, label string, cs []testCase, K int, idx [][]int32, vals [][]float32) {
	t.Helper()
	for r, c := range cs {
		if err := topk.Check(c.x, K, false, idx[r], vals[r]); err != nil {
			t.Errorf("%s: row %d (%s, n=%d): %v", label, r, c.name, len(c.x), err)
		}
	}
}

func TestTopKExact(t *testing.T) {
	configs := []struct {
		cfg gen.Config
		n   int
	}{{cfgK16, 700}, {cfgK256, 6000}, {cfgK2k, 20000}}
	if testing.Short() {
		configs = configs[:2]
	}
	for _, tc := range configs {
		cfg := tc.cfg
		t.Run(fmt.Sprintf("K=%d", cfg.K), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(cfg.K), 1))
			cs := rows(r, cfg.K, cfg.MaxCandidates, tc.n)
			for _, name := range []string{"topk_fallback", "topk_radix"} {
				p, k := load(t, name, cfg)
				idx, vals := launch(t, p, k, cs, false)
				checkRows(t, name, cs, cfg.K, idx, vals)
			}
			p, k := load(t, "gvr_topk", cfg)
			for _, mode := range []string{"perfect", "partial", "random", "garbage", "empty"} {
				predict(r, cs, mode, cfg.K)
				if mode == "empty" {
					for i := range cs {
						cs[i].pred = nil
					}
				}
				idx, vals := launch(t, p, k, cs, false)
				checkRows(t, "gvr_topk pred="+mode, cs, cfg.K, idx, vals)
			}
		})
	}
}

// TestTopKEdgeConfigs: the smallest K, a window with no room (MaxCandidates
// = K), one warp per block, two histogram bins, a target without redux.sync,
// no unrolling, 1024 threads; with the race detector on.
func TestTopKEdgeConfigs(t *testing.T) {
	for _, cfg := range []gen.Config{
		{K: 1, MaxCandidates: 4, BlockSize: 32, Bins: 32, Target: ptx.SM90},
		{K: 7, MaxCandidates: 7, BlockSize: 32, Bins: 2, Target: ptx.SM75},
		{K: 100, MaxCandidates: 100, BlockSize: 128, Bins: 64, Target: ptx.SM80},
		{K: 1024, MaxCandidates: 3072, BlockSize: 256, Bins: 1024, Target: ptx.SM90},
		{K: 512, MaxCandidates: 1536, BlockSize: 1024, Bins: 1024, Target: ptx.SM100, Unroll: 1},
	} {
		t.Run(fmt.Sprint(cfg), func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, uint64(cfg.K)))
			cs := rows(r, cfg.K, cfg.MaxCandidates, 3*cfg.MaxCandidates+37)
			for _, name := range []string{"topk_fallback", "topk_radix"} {
				p, k := load(t, name, cfg)
				idx, vals := launch(t, p, k, cs, true)
				checkRows(t, name, cs, cfg.K, idx, vals)
			}
			p, k := load(t, "gvr_topk", cfg)
			for _, mode := range []string{"perfect", "garbage"} {
				predict(r, cs, mode, cfg.K)
				idx, vals := launch(t, p, k, cs, true)
				checkRows(t, "gvr_topk "+mode, cs, cfg.K, idx, vals)
			}
		})
	}
}

// TestTopKRaceFree runs the kernels under the interpreter's shared-memory
// race detector: every shared word is ordered by a barrier between writers
// and readers.
func TestTopKRaceFree(t *testing.T) {
	for _, cfg := range []gen.Config{cfgK16, cfgK256} {
		r := rand.New(rand.NewPCG(7, uint64(cfg.K)))
		cs := rows(r, cfg.K, cfg.MaxCandidates, 3*cfg.MaxCandidates)
		predict(r, cs, "partial", cfg.K)
		for _, name := range []string{"gvr_topk", "topk_fallback", "topk_radix"} {
			p, k := load(t, name, cfg)
			idx, vals := launch(t, p, k, cs, true)
			checkRows(t, name+" (race check)", cs, cfg.K, idx, vals)
		}
	}
}

// TestTopKDeterministic: the same input gives bit-identical outputs.
func TestTopKDeterministic(t *testing.T) {
	cfg := cfgK256
	r := rand.New(rand.NewPCG(3, 3))
	var cs []testCase
	for range 4 {
		x := normal(r, 5000)
		for i := range x {
			x[i] = bf16(x[i])
		}
		cs = append(cs, testCase{name: "bf16", x: x})
	}
	predict(r, cs, "partial", cfg.K)
	for _, name := range []string{"gvr_topk", "topk_fallback", "topk_radix"} {
		p, k := load(t, name, cfg)
		i1, v1 := launch(t, p, k, cs, false)
		i2, v2 := launch(t, p, k, cs, false)
		if fmt.Sprint(i1, v1) != fmt.Sprint(i2, v2) {
			t.Errorf("%s: two runs differ", name)
		}
	}
}

// FuzzTopK feeds arbitrary bytes as float32 scores (and as a prediction) to
// the three Top-K kernels at K=16 and checks them against the reference.
func FuzzTopK(f *testing.F) {
	f.Add([]byte{}, []byte{})
	f.Add(bytes.Repeat([]byte{0, 0, 0x80, 0x3f}, 40), []byte{1, 2, 3})            // all 1.0
	f.Add(bytes.Repeat([]byte{0, 0, 0xc0, 0x7f, 0, 0, 0xc0, 0xff}, 30), []byte{}) // +NaN, -NaN
	f.Add(bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, 50), bytes.Repeat([]byte{200}, 20))
	progs := map[string]*emu.Program{}
	kernels := map[string]*gen.Kernel{}
	for _, name := range []string{"gvr_topk", "topk_fallback", "topk_radix"} {
		progs[name], kernels[name] = load(f, name, cfgK16)
	}
	f.Fuzz(func(t *testing.T, data, predBytes []byte) {
		n := min(len(data)/4, 1000)
		x := make([]float32, n)
		for i := range x {
			x[i] = math.Float32frombits(uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24)
		}
		var pred []int32
		for _, b := range predBytes {
			pred = append(pred, int32(int8(b))*7)
		}
		cs := []testCase{{name: "fuzz", x: x, pred: pred}}
		for name, p := range progs {
			idx, vals := launch(t, p, kernels[name], cs, false)
			if err := topk.Check(x, cfgK16.K, false, idx[0], vals[0]); err != nil {
				t.Fatalf("%s: n=%d: %v", name, n, err)
			}
		}
	})
}

// TestTopKSorted: with Sorted, every kernel writes the Top-K in rank order.
func TestTopKSorted(t *testing.T) {
	for _, base := range []gen.Config{cfgK16, cfgK256, cfgK2k, {K: 100, MaxCandidates: 400, BlockSize: 128, Bins: 128, Target: ptx.SM80}} {
		cfg := base
		cfg.Sorted = true
		r := rand.New(rand.NewPCG(9, uint64(cfg.K)))
		cs := rows(r, cfg.K, cfg.MaxCandidates, 3*cfg.MaxCandidates+5)
		predict(r, cs, "partial", cfg.K)
		for _, name := range []string{"gvr_topk", "topk_fallback", "topk_radix"} {
			p, k := load(t, name, cfg)
			idx, vals := launch(t, p, k, cs, true)
			for row, c := range cs {
				if err := topk.Check(c.x, cfg.K, true, idx[row], vals[row]); err != nil {
					t.Errorf("%s K=%d: row %d (%s, n=%d): %v", name, cfg.K, row, c.name, len(c.x), err)
				}
			}
		}
	}
}
