//go:build cuda

package runtime_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/gen"
	rt "github.com/gvr-go/gvr/runtime"
	"github.com/gvr-go/gvr/topk"
)

// gpu opens device 0, or skips (fails with GVR_REQUIRE_GPU set).
func gpu(t *testing.T) *rt.Device {
	t.Helper()
	n, err := rt.DeviceCount()
	if err == nil && n == 0 {
		err = errors.New("no CUDA device")
	}
	var d *rt.Device
	if err == nil {
		d, err = rt.Open(0)
	}
	if err != nil {
		if os.Getenv("GVR_REQUIRE_GPU") != "" {
			t.Fatalf("GVR_REQUIRE_GPU is set but there is no usable GPU: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	return d
}

func alloc(t *testing.T, d *rt.Device, bytes int) *rt.Buffer {
	t.Helper()
	b, err := d.Alloc(bytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free() })
	return b
}

// poison fills buf with -7, an index no kernel writes and a value no test
// row holds, so that an output a launch did not write cannot pass a check
// by holding an earlier launch's result (or memory the allocator reused).
func poison(t *testing.T, buf *rt.Buffer) {
	t.Helper()
	if err := rt.Upload(buf, slices.Repeat([]int32{-7}, buf.Bytes()/4)); err != nil {
		t.Fatal(err)
	}
}

// standardTargets are the targets with embedded kernels, written out from
// the README ("K 512/1024/2048; sm_80/90/100"), not read from the package.
var standardTargets = []string{"sm_80", "sm_90", "sm_100"}

// TestTypedLaunchers runs the generated launchers on the standard K = 512
// kernels (embedded, on a device with a standard target): the fallback
// kernel, then gvr_topk with the fallback's output as its prediction; both
// checked against the CPU reference. A launch allocates nothing.
func TestTypedLaunchers(t *testing.T) {
	d := gpu(t)
	const K = 512
	cfg := gen.Config{K: K, MaxCandidates: 3 * K, BlockSize: 512, Bins: 2048} // standard; zero Target: the device's
	fbK, err := d.Kernel("topk_fallback", cfg)
	if err != nil {
		t.Fatal(err)
	}
	gvrK, err := d.Kernel("gvr_topk", cfg)
	if err != nil {
		t.Fatal(err)
	}
	target := d.Info().Target.Name
	standard := slices.Contains(standardTargets, target)
	if fbK.Embedded != standard || gvrK.Embedded != standard {
		t.Errorf("on %s (standard target: %v): %s embedded %v, %s embedded %v; want both %v",
			target, standard, fbK.Name, fbK.Embedded, gvrK.Name, gvrK.Embedded, standard)
	}
	fb, err := rt.NewTopKFallback(fbK)
	if err != nil {
		t.Fatal(err)
	}
	gvr, err := rt.NewGVRTopK(gvrK)
	if err != nil {
		t.Fatal(err)
	}
	if fb.Kernel() != fbK || gvr.Kernel() != gvrK {
		t.Error("Kernel() is not the kernel the launcher was made with")
	}

	r := rand.New(rand.NewPCG(3, 5))
	const rows, stride = 6, 20011
	lens := []int32{stride, 5000, K, K - 1, 0, 12345}
	x := make([]float32, rows*stride)
	for i := range x {
		x[i] = float32(r.NormFloat64())
		if r.IntN(5) == 0 {
			x[i] = float32(r.IntN(4)) // ties
		}
	}
	x[7] = float32(math.NaN())
	scores, lengths := alloc(t, d, 4*len(x)), alloc(t, d, 4*rows)
	idx1, vals1, idx2 := alloc(t, d, 4*rows*K), alloc(t, d, 4*rows*K), alloc(t, d, 4*rows*K)
	if err := errors.Join(rt.Upload(scores, x), rt.Upload(lengths, lens)); err != nil {
		t.Fatal(err)
	}
	check := func(who string, idxBuf, valsBuf *rt.Buffer) {
		t.Helper()
		idx := make([]int32, rows*K)
		var vals []float32
		if err := rt.Download(idx, idxBuf); err != nil {
			t.Fatal(err)
		}
		if valsBuf != nil {
			vals = make([]float32, rows*K)
			if err := rt.Download(vals, valsBuf); err != nil {
				t.Fatal(err)
			}
		}
		for row := range rows {
			var v []float32
			if vals != nil {
				v = vals[row*K : (row+1)*K]
			}
			if err := topk.Check(x[row*stride:row*stride+int(lens[row])], K, false, idx[row*K:(row+1)*K], v); err != nil {
				t.Errorf("%s row %d (n=%d): %v", who, row, lens[row], err)
			}
		}
	}

	poison(t, idx1)
	poison(t, vals1)
	fp := rt.TopKFallbackParams{Scores: scores.Ptr(), RowStride: stride, Lengths: lengths.Ptr(), OutIdx: idx1.Ptr(), OutVals: vals1.Ptr()}
	if err := fb.Launch(nil, rows, fp); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	check("topk_fallback", idx1, vals1)

	poison(t, idx2)
	gp := rt.GVRTopKParams{Scores: scores.Ptr(), RowStride: stride, Lengths: lengths.Ptr(),
		Pred: idx1.Ptr(), PredStride: K, PredCount: K, OutIdx: idx2.Ptr()} // OutVals 0: no values
	if err := gvr.Launch(nil, rows, gp); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	check("gvr_topk", idx2, nil)

	// No allocation per launch. The output is poisoned first, so the check
	// after the launches sees what they wrote, not the launch above.
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	poison(t, idx2)
	var lerr error
	allocs := testing.AllocsPerRun(100, func() {
		if err := gvr.Launch(nil, rows, gp); err != nil {
			lerr = err
		}
	})
	if lerr != nil {
		t.Fatal(lerr)
	}
	if allocs != 0 {
		t.Errorf("GVRTopK.Launch: %v allocations per launch, want 0", allocs)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	check("gvr_topk (repeated)", idx2, nil)

	// A generated kernel of another configuration with the same .param
	// list takes the same launcher.
	small := gen.Config{K: 64, MaxCandidates: 1024, BlockSize: 256, Bins: 256}
	k64, err := d.Kernel("topk_fallback", small)
	if err != nil {
		t.Fatal(err)
	}
	fb64, err := rt.NewTopKFallback(k64)
	if err != nil {
		t.Fatalf("launcher of a generated topk_fallback: %v", err)
	}
	if k64.Embedded {
		t.Errorf("%v: embedded", small)
	}
	idx64 := alloc(t, d, 4*rows*64)
	poison(t, idx64)
	if err := fb64.Launch(nil, rows, rt.TopKFallbackParams{Scores: scores.Ptr(), RowStride: stride, Lengths: lengths.Ptr(), OutIdx: idx64.Ptr()}); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := make([]int32, rows*64)
	if err := rt.Download(got, idx64); err != nil {
		t.Fatal(err)
	}
	for row := range rows {
		if err := topk.Check(x[row*stride:row*stride+int(lens[row])], 64, false, got[row*64:(row+1)*64], nil); err != nil {
			t.Errorf("K=64 row %d: %v", row, err)
		}
	}

	// LoadPTX reads the .param names from the text: a launcher takes the
	// kernel it loads.
	// On a target without embedded kernels, the generated text stands in.
	ptxText, block, shared, nparams, file := "", 0, 0, 0, ""
	std, ok := rt.LookupStandard("gvr_topk", func() gen.Config { c := cfg; c.Target = d.Info().Target; return c }())
	if ok != standard {
		t.Errorf("LookupStandard(gvr_topk K=%d on %s) = %v, want %v", K, target, ok, standard)
	}
	if ok {
		ptxText, block, shared, nparams, file = std.PTX, std.Block, std.SharedBytes, len(std.Params), std.File
	} else {
		c := cfg
		c.Target = d.Info().Target
		gk, err := gen.Generate("gvr_topk", c)
		if err != nil {
			t.Fatal(err)
		}
		ptxText, block, shared, nparams, file = gk.PTX(), gk.Block, gk.SharedBytes, len(gk.Module.Entries[0].Params), "generated gvr_topk"
	}
	lk, err := d.LoadPTX("gvr_topk", ptxText, block, shared, nparams)
	if err != nil {
		t.Fatal(err)
	}
	lgvr, err := rt.NewGVRTopK(lk)
	if err != nil {
		t.Fatalf("launcher of LoadPTX(%s): %v", file, err)
	}
	poison(t, idx2)
	if err := lgvr.Launch(nil, rows, gp); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	check("gvr_topk (LoadPTX)", idx2, nil)

	// A launcher refuses a kernel it was not generated for.
	inst := cfg
	inst.Instrument = true
	instK, err := d.Kernel("gvr_topk", inst)
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"another kernel":   func() error { _, err := rt.NewGVRTopK(fbK); return err }(),
		"nil kernel":       func() error { _, err := rt.NewTopKFallback(nil); return err }(),
		"other parameters": func() error { _, err := rt.NewGVRTopK(instK); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), "launcher") {
			t.Errorf("%s: %v", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
