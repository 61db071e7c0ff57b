package emu

import (
	"math/rand"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// The speed recorded in doc.go: go test -run X -bench . ./ptx/emu

// BenchmarkCountGE: 512 threads walk rows of 65536 floats with v4 loads,
// compare and add, then reduce across the block.
func BenchmarkCountGE(b *testing.B) {
	g := loadGolden(b, "count_ge", ptx.SM90)
	const rows, n = 16, 1 << 16
	rng := rand.New(rand.NewSource(1))
	x := make([]float32, rows*n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	lengths, th := make([]uint32, rows), make([]float32, rows)
	for r := range lengths {
		lengths[r] = n
	}
	mem := NewMemory()
	args := map[string]uint64{"scores": mem.AllocF32s(x), "row_stride": n, "lengths": mem.AllocU32s(lengths),
		"thresholds": mem.AllocF32s(th), "counts": mem.Alloc(4*rows, 0)}
	benchRun(b, g, mem, rows, args, false)
}

// BenchmarkGVRTopK: the full GVR Top-K kernel (K=2048, 512 threads) on
// rows of 65536 floats with a good prediction.
func BenchmarkGVRTopK(b *testing.B) { benchGVR(b, false) }

// BenchmarkGVRTopKRace is BenchmarkGVRTopK with the race detector on.
func BenchmarkGVRTopKRace(b *testing.B) { benchGVR(b, true) }

func benchGVR(b *testing.B, race bool) {
	g := loadGolden(b, "gvr_topk", ptx.SM90)
	const rows, n, k = 16, 1 << 16, 2048
	rng := rand.New(rand.NewSource(1))
	mem := NewMemory()
	var data [][]float32
	pred := make([]int32, rows*k)
	for r := range rows {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		data = append(data, x)
		y := make([]float32, n)
		for i := range y {
			y[i] = x[i] + float32(rng.NormFloat64()*0.05)
		}
		copy(pred[r*k:], refTopK(y, k))
	}
	args, _ := topkArgs(mem, data, n, k)
	args["pred"], args["pred_stride"], args["pred_count"] = mem.AllocI32s(pred), k, k
	benchRun(b, g, mem, rows, args, race)
}

func benchRun(b *testing.B, g goldenKernel, mem *Memory, rows int, args map[string]uint64, race bool) {
	var st Stats
	b.ResetTimer()
	for range b.N {
		st = g.run(b, mem, rows, args, race)
	}
	b.StopTimer()
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(st.Instructions)*float64(b.N)/s/1e6, "Mthread-inst/s")
	b.ReportMetric(float64(st.WarpInstructions)*float64(b.N)/s/1e6, "Mwarp-inst/s")
	b.ReportMetric(s*1e3/float64(b.N*rows), "ms/row")
}
