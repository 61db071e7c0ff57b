//go:build cuda

package topk

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx/emu"
	"github.com/gvr-go/gvr/runtime"
)

// The interpreter and the GPU run the same PTX text on the same inputs and
// must agree: bit for bit where a kernel's output is fully determined by
// its input, as sets (and both equal to the CPU reference) for the Top-K
// kernels, whose output order follows the Phase 2 threshold, which an
// approximate instruction (lg2.approx) may place differently on the GPU.

// arg is a launch argument by name: a buffer with its contents, or an
// integer.
type arg struct {
	name string
	u32s []uint32 // a buffer (nil: an integer)
	v    uint64   // the integer
}

// runBoth launches kernel gk on the device and in the interpreter with the
// same arguments and returns, for each buffer argument by name, its
// contents after each run.
func runBoth(t *testing.T, d *runtime.Device, gk *gen.Kernel, grid int, args []arg) (gpu, cpu map[string][]uint32) {
	t.Helper()
	k, err := Kernel(d, gk.Name, gk.Config)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := emu.LoadModule(gk.Module)
	if err != nil {
		t.Fatal(err)
	}
	mem := emu.NewMemory()
	onGPU, inEmu := k.Args(), gk.Launch.Args()
	bufs := map[string]*runtime.Buffer{}
	emuAddr := map[string]uint64{}
	for _, a := range args {
		if a.u32s == nil {
			onGPU.Set(a.name, a.v)
			inEmu.Set(a.name, a.v)
			continue
		}
		b, err := d.Alloc(4 * max(1, len(a.u32s)))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Free()
		if err := runtime.Upload(b, a.u32s); err != nil {
			t.Fatal(err)
		}
		bufs[a.name], emuAddr[a.name] = b, mem.AllocU32s(a.u32s)
		onGPU.Set(a.name, b.Ptr())
		inEmu.Set(a.name, emuAddr[a.name])
	}
	if err := k.Launch(nil, grid, onGPU); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if _, err := prog.Run(mem, emu.Launch{Grid: [3]int{grid}, Args: inEmu}); err != nil {
		t.Fatal(err)
	}
	gpu, cpu = map[string][]uint32{}, map[string][]uint32{}
	for _, a := range args {
		if a.u32s == nil {
			continue
		}
		g := make([]uint32, len(a.u32s))
		if err := runtime.Download(g, bufs[a.name]); err != nil {
			t.Fatal(err)
		}
		c, err := mem.ReadU32s(emuAddr[a.name], len(a.u32s))
		if err != nil {
			t.Fatal(err)
		}
		gpu[a.name], cpu[a.name] = g, c
	}
	return gpu, cpu
}

func genKernel(t *testing.T, d *runtime.Device, name string, cfg gen.Config) *gen.Kernel {
	t.Helper()
	cfg.Target = d.Info().Target
	k, err := gen.Generate(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func randU32s(r *rand.Rand, n int, below uint32) []uint32 {
	v := make([]uint32, n)
	for i := range v {
		v[i] = r.Uint32N(below)
	}
	return v
}

// scoresRow is a row with NaN, Inf, ties and signed zeros mixed in.
func scoresRow(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		switch u := r.Float64(); {
		case u < 0.01:
			x[i] = float32(math.NaN())
		case u < 0.02:
			x[i] = math.Float32frombits(0xFFC00001)
		case u < 0.03:
			x[i] = float32(math.Inf(1 - 2*r.IntN(2)))
		case u < 0.05:
			x[i] = float32(math.Copysign(0, float64(1-2*r.IntN(2))))
		case u < 0.3:
			x[i] = float32(r.IntN(8)) // ties
		default:
			x[i] = float32(r.NormFloat64())
		}
	}
	return x
}

// TestInterpreterMatchesGPU: the device and the interpreter agree, and
// both agree with a Go reference, so two runs that both did nothing (the
// outputs start as zeros) cannot pass.
func TestInterpreterMatchesGPU(t *testing.T) {
	d := gpu(t) // skips without a GPU, fails under GVR_REQUIRE_GPU
	r := rand.New(rand.NewPCG(11, 13))
	cfg := gen.Config{K: 256, MaxCandidates: 1024, BlockSize: 256, Bins: 256}

	t.Run("count_ge", func(t *testing.T) {
		gk := genKernel(t, d, "count_ge", cfg)
		const rows, stride = 24, 5003 // odd: unaligned rows
		x := scoresRow(r, rows*stride)
		lens := randU32s(r, rows, stride+1)
		thr := make([]float32, rows)
		for i := range thr {
			thr[i] = float32(r.NormFloat64())
		}
		thr[0] = float32(math.Inf(-1))
		thr[1] = float32(math.Copysign(0, -1))
		gpu, cpu := runBoth(t, d, gk, rows, []arg{{name: "scores", u32s: math32bits(x)}, {name: "row_stride", v: stride},
			{name: "lengths", u32s: lens}, {name: "thresholds", u32s: math32bits(thr)}, {name: "counts", u32s: make([]uint32, rows)}})
		if !slices.Equal(gpu["counts"], cpu["counts"]) {
			t.Errorf("counts differ:\n gpu %v\n cpu %v", gpu["counts"], cpu["counts"])
		}
		want := make([]uint32, rows)
		for row := range rows {
			for _, v := range x[row*stride : row*stride+int(lens[row])] {
				if !(v < thr[row]) { // >= or unordered
					want[row]++
				}
			}
		}
		if !slices.Equal(gpu["counts"], want) {
			t.Errorf("counts differ from the reference:\n gpu  %v\n want %v", gpu["counts"], want)
		}
	})
	t.Run("warp_reduce", func(t *testing.T) {
		gk := genKernel(t, d, "warp_reduce", cfg)
		const grid = 8
		in := randU32s(r, grid*cfg.BlockSize, 1<<31)
		gpu, cpu := runBoth(t, d, gk, grid, []arg{{name: "in", u32s: in}, {name: "out", u32s: make([]uint32, 3*grid*cfg.BlockSize/32)}})
		if !slices.Equal(gpu["out"], cpu["out"]) {
			t.Errorf("warp results differ")
		}
		var want []uint32 // sum, min, max of each warp
		for w := 0; w < len(in)/32; w++ {
			v := in[32*w : 32*w+32]
			var sum uint32
			for _, x := range v {
				sum += x
			}
			want = append(want, sum, slices.Min(v), slices.Max(v))
		}
		if !slices.Equal(gpu["out"], want) {
			t.Errorf("warp results differ from the reference")
		}
	})
	t.Run("block_scan", func(t *testing.T) {
		gk := genKernel(t, d, "block_scan", cfg)
		const grid = 8
		in := randU32s(r, grid*cfg.BlockSize, 1<<20)
		gpu, cpu := runBoth(t, d, gk, grid, []arg{{name: "in", u32s: in}, {name: "out", u32s: make([]uint32, grid*cfg.BlockSize)},
			{name: "totals", u32s: make([]uint32, grid)}})
		if !slices.Equal(gpu["out"], cpu["out"]) || !slices.Equal(gpu["totals"], cpu["totals"]) {
			t.Errorf("scans differ")
		}
		scan, totals := make([]uint32, len(in)), make([]uint32, grid) // exclusive scan per CTA
		for c := range grid {
			var s uint32
			for i := c * cfg.BlockSize; i < (c+1)*cfg.BlockSize; i++ {
				scan[i] = s
				s += in[i]
			}
			totals[c] = s
		}
		if !slices.Equal(gpu["out"], scan) || !slices.Equal(gpu["totals"], totals) {
			t.Errorf("scans differ from the reference")
		}
	})
	sorted := cfg
	sorted.Sorted = true
	for _, run := range []struct {
		name   string
		cfg    gen.Config
		sorted bool
	}{{"gvr_topk", cfg, false}, {"topk_fallback", cfg, false}, {"topk_radix", cfg, false},
		{"gvr_topk", sorted, true}, {"topk_fallback", sorted, true}, {"topk_radix", sorted, true}} {
		name := run.name
		label := name
		if run.sorted {
			label += "/sorted"
		}
		t.Run(label, func(t *testing.T) {
			gk := genKernel(t, d, name, run.cfg)
			K := cfg.K
			const rows, stride = 12, 9001
			x := make([]float32, rows*stride)
			lens := make([]uint32, rows)
			for row := range rows {
				n := []int{stride, 5000, 3000, K + 1, K, 7, 0, stride, stride - 1, 1200, 4097, stride}[row]
				copy(x[row*stride:], scoresRow(r, n))
				lens[row] = uint32(n)
			}
			args := []arg{{name: "scores", u32s: math32bits(x)}, {name: "row_stride", v: stride}, {name: "lengths", u32s: lens},
				{name: "out_idx", u32s: make([]uint32, rows*K)}, {name: "out_vals", u32s: make([]uint32, rows*K)},
				{name: "next_n", v: 0}, {name: "row_starts", v: 0}, {name: "abs_idx", v: 0}, {name: "out_count", v: 0},
				{name: "page_table", v: 0}, {name: "page_table_stride", v: 0}, {name: "page_size", v: 0}, {name: "out_pages", v: 0}}
			if name == "gvr_topk" {
				pred := randU32s(r, rows*K, stride) // a random prediction
				args = append(args, arg{name: "pred", u32s: pred}, arg{name: "pred_stride", v: uint64(K)}, arg{name: "pred_count", v: uint64(K)})
			}
			gpu, cpu := runBoth(t, d, gk, rows, args)
			io, vo := "out_idx", "out_vals"
			for row := range rows {
				n := int(lens[row])
				rx := x[row*stride : row*stride+n]
				for _, out := range []struct {
					who string
					b   map[string][]uint32
				}{{"gpu", gpu}, {"interpreter", cpu}} {
					idx := make([]int32, K)
					vals := make([]float32, K)
					for j := range K {
						idx[j] = int32(out.b[io][row*K+j])
						vals[j] = math.Float32frombits(out.b[vo][row*K+j])
					}
					if err := Check(rx, K, run.sorted, idx, vals); err != nil {
						t.Errorf("%s row %d (n=%d): %v", out.who, row, n, err)
					}
				}
			}
			// Sorted output is fully determined by the input, so the
			// interpreter and the GPU agree bit for bit.
			if run.sorted && (!slices.Equal(gpu[io], cpu[io]) || !slices.Equal(gpu[vo], cpu[vo])) {
				t.Errorf("sorted outputs differ between the GPU and the interpreter")
			}
		})
	}
}
