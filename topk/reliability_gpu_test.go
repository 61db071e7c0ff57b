//go:build cuda

package topk

// GPU tests of what a Selector promises beyond one call: calls from several
// goroutines, misaligned views refused before any launch, a layer's steps
// on several streams, and one Selector per device on a machine with two.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gvr-go/gvr/runtime"
)

// TestSharedSelector: goroutines calling SelectHost on one Selector each
// get their own rows' Top-K. (Before the fix one call's upload could
// overwrite another's scores between its upload and its launch.)
func TestSharedSelector(t *testing.T) {
	d := gpu(t)
	const goroutines, steps, rows, n = 4, 40, 3, 20000
	sel, err := NewSelector(Config{MaxRows: rows, Layers: 2, Device: d})
	must(t, err)
	defer sel.Close()
	k := sel.Config().K
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 14))
			for step := range steps {
				// Rows of every goroutine differ in scale, so that a row
				// read from another call's upload is a wrong answer.
				x := normal(rows*n, rng)
				for i := range x {
					x[i] = x[i]*float32(g+1) + float32(100*g)
				}
				idx, _, err := sel.SelectHost(g%2, x, n, nil)
				if err != nil {
					errs <- fmt.Errorf("goroutine %d step %d: %v", g, step, err)
					return
				}
				for r := range rows {
					want, _ := Reference(x[r*n:(r+1)*n], k, false)
					if err := Compare(idx[r*k:(r+1)*k], want, false); err != nil {
						errs <- fmt.Errorf("goroutine %d step %d row %d: %v", g, step, r, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d goroutines x %d SelectHost calls of %d rows on one selector: exact", goroutines, steps, rows)
}

// TestMisalignedViews: scores or lengths that are not 4-byte aligned are a
// clear error before any launch, and the selector (and the process's CUDA
// context) keeps working.
func TestMisalignedViews(t *testing.T) {
	d := gpu(t)
	const rows, stride = 2, 5000
	sel, err := NewSelector(Config{K: 256, MaxRows: rows, Device: d})
	must(t, err)
	defer sel.Close()
	buf := alloc(t, d, 4*rows*stride+64)
	lens := alloc(t, d, 64)
	x := normal(rows*stride+16, rand.New(rand.NewPCG(3, 3)))
	must(t, runtime.Upload(buf, x))
	must(t, runtime.Upload(lens, []int32{stride, stride - 7, 0, 0}))
	view := func(b *runtime.Buffer, off, bytes int) *runtime.Buffer {
		v, err := b.View(off, bytes)
		must(t, err)
		return v
	}
	for _, off := range []int{1, 2, 3, 6} {
		b := Batch{Scores: view(buf, off, 4*rows*stride), Stride: stride, Rows: rows, Lengths: []int32{stride, stride}}
		if _, err := sel.Select(0, b, nil); err == nil || !strings.Contains(err.Error(), "4-byte boundary") {
			t.Errorf("Scores at byte offset %d: %v; want an error about the 4-byte boundary", off, err)
		}
		b = Batch{Scores: view(buf, 0, 4*rows*stride), Stride: stride, Rows: rows, DeviceLengths: view(lens, off, 4*rows)}
		if _, err := sel.Select(0, b, nil); err == nil || !strings.Contains(err.Error(), "DeviceLengths") {
			t.Errorf("DeviceLengths at byte offset %d: %v; want an error naming DeviceLengths", off, err)
		}
	}
	// The selector still works, on an aligned view past the start.
	const off = 3 // elements
	b := Batch{Scores: view(buf, 4*off, 4*rows*stride), Stride: stride, Rows: rows, DeviceLengths: view(lens, 0, 4*rows)}
	res, err := sel.Select(0, b, nil)
	must(t, err)
	idx, err := res.ReadIndices()
	must(t, err)
	for r, n := range []int{stride, stride - 7} {
		row := x[off+r*stride : off+r*stride+n]
		want, _ := Reference(row, 256, false)
		if err := Compare(idx[r*256:(r+1)*256], want, false); err != nil {
			t.Errorf("row %d after the refused launches: %v", r, err)
		}
	}
}

// TestLayerAcrossStreams: a layer's step queued on another stream than its
// previous one runs after it. The first step is slow (64 rows of 1M), the
// second fast (64 rows of 4096): unordered, the slow one finishes last and
// its output replaces the fast one's.
func TestLayerAcrossStreams(t *testing.T) {
	d := gpu(t)
	const rows, big, small = 64, 1 << 20, 4096
	sel, err := NewSelector(Config{MaxRows: rows, Device: d})
	must(t, err)
	defer sel.Close()
	k := sel.Config().K
	a, err := d.NewStream()
	must(t, err)
	defer a.Close()
	b, err := d.NewStream()
	must(t, err)
	defer b.Close()
	rng := rand.New(rand.NewPCG(5, 5))
	bigScores := alloc(t, d, 4*rows*big)
	must(t, runtime.Upload(bigScores, normal(rows*big, rng)))
	smallScores := alloc(t, d, 4*rows*small)
	bigBatch := Batch{Scores: bigScores, Stride: big, Rows: rows, Lengths: fill(rows, big)}

	// check runs the slow step on from, the fast one on to, and compares
	// the layer's output with the fast step's rows.
	check := func(name string, from, to *runtime.Stream) {
		t.Helper()
		x := normal(rows*small, rng)
		must(t, runtime.Upload(smallScores, x))
		_, err := sel.Select(0, bigBatch, from)
		must(t, err)
		res, err := sel.Select(0, Batch{Scores: smallScores, Stride: small, Rows: rows, Lengths: fill(rows, small)}, to)
		must(t, err)
		must(t, d.Synchronize())
		idx, err := res.ReadIndices()
		must(t, err)
		wrong := 0
		for r := range rows {
			want, _ := Reference(x[r*small:(r+1)*small], k, false)
			if Compare(idx[r*k:(r+1)*k], want, false) != nil {
				wrong++
			}
		}
		if wrong > 0 {
			t.Errorf("%s: %d of %d rows are not the second step's Top-K", name, wrong, rows)
		}
	}
	for i := range 3 {
		check(fmt.Sprintf("stream A then B, round %d", i), a, b)
		check(fmt.Sprintf("stream B then A, round %d", i), b, a)
	}
	check("stream A then the default stream", a, nil)
	check("the default stream then stream B", nil, b)

	// A graph cannot wait for work outside it: capturing the layer on a new
	// stream while its last step may run is refused, and works once that
	// step is done.
	c, err := d.NewStream()
	must(t, err)
	defer c.Close()
	lens := alloc(t, d, 4*rows)
	must(t, runtime.Upload(lens, fill(rows, small)))
	graphBatch := Batch{Scores: smallScores, Stride: small, Rows: rows, DeviceLengths: lens}
	_, err = sel.Select(0, bigBatch, a)
	must(t, err)
	_, err = c.Capture(func() error { _, err := sel.Select(0, graphBatch, c); return err })
	if err == nil || !strings.Contains(err.Error(), "synchronize that stream") {
		t.Errorf("capturing on stream C while the layer's step on A runs: %v; want a refusal", err)
	}
	must(t, a.Synchronize())
	g, err := c.Capture(func() error { _, err := sel.Select(0, graphBatch, c); return err })
	must(t, err)
	defer g.Close()
	x := normal(rows*small, rng)
	must(t, runtime.Upload(smallScores, x))
	must(t, g.Launch(c))
	must(t, c.Synchronize())
	idx, err := Result{Rows: rows, K: k, Indices: sel.layers[0].idx}.ReadIndices()
	must(t, err)
	for r := range rows {
		want, _ := Reference(x[r*small:(r+1)*small], k, false)
		if err := Compare(idx[r*k:(r+1)*k], want, false); err != nil {
			t.Fatalf("graph replay on stream C, row %d: %v", r, err)
		}
	}

	// A closed stream's work is done (Close waits for it): the next step,
	// on another stream, needs no event, and is not given one of a
	// destroyed stream.
	s2, err := d.NewStream()
	must(t, err)
	_, err = sel.Select(0, bigBatch, s2)
	must(t, err)
	must(t, s2.Close())
	x = normal(rows*small, rng)
	must(t, runtime.Upload(smallScores, x))
	res, err := sel.Select(0, Batch{Scores: smallScores, Stride: small, Rows: rows, Lengths: fill(rows, small)}, b)
	must(t, err)
	must(t, b.Synchronize())
	idx, err = res.ReadIndices()
	must(t, err)
	for r := range rows {
		want, _ := Reference(x[r*small:(r+1)*small], k, false)
		if err := Compare(idx[r*k:(r+1)*k], want, false); err != nil {
			t.Fatalf("after a closed stream, row %d: %v", r, err)
		}
	}
}

// fill is n copies of v.
func fill(n, v int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(v)
	}
	return s
}

// TestTwoGPUs: one Selector per device, used at once from several
// goroutines and streams, each exact; a device's buffers and streams are
// refused by the other device's Selector. Needs two GPUs: with fewer it
// skips, unless GVR_REQUIRE_GPUS is 2 or more (then it fails).
func TestTwoGPUs(t *testing.T) {
	gpu(t)
	n, err := runtime.DeviceCount()
	must(t, err)
	if n < 2 {
		if req, _ := strconv.Atoi(os.Getenv("GVR_REQUIRE_GPUS")); req >= 2 {
			t.Fatalf("GVR_REQUIRE_GPUS=%d but there are %d GPUs", req, n)
		}
		t.Skipf("%d GPU: the test needs two", n)
	}
	devs := make([]*runtime.Device, 2)
	sels := make([]*Selector, 2)
	for i := range devs {
		devs[i], err = runtime.Open(i)
		must(t, err)
		sels[i], err = NewSelector(Config{MaxRows: 4, Layers: 4, Values: true, Device: devs[i]})
		must(t, err)
		defer sels[i].Close()
		gvr, fb := sels[i].Kernels()
		if gvr.Device() != devs[i] || fb.Device() != devs[i] {
			t.Fatalf("selector on %v has kernels on %v and %v", devs[i], gvr.Device(), fb.Device())
		}
	}
	t.Logf("device 0: %v; device 1: %v", devs[0].Info(), devs[1].Info())

	// Each device: two goroutines with a stream each, on their own layers,
	// and one on SelectHost, all at once.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range devs {
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := streamDecode(sels[i], g, uint64(10*i+g)); err != nil {
					errs <- fmt.Errorf("device %d goroutine %d: %v", i, g, err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 99))
			for step := range 10 {
				x := normal(4*30000, rng)
				idx, vals, err := sels[i].SelectHost(3, x, 30000, nil)
				if err == nil {
					for r := range 4 {
						row := x[r*30000 : (r+1)*30000]
						want, _ := Reference(row, 2048, false)
						if err = checkRow(row, want, idx[r*2048:(r+1)*2048], vals[r*2048:(r+1)*2048], false); err != nil {
							err = fmt.Errorf("row %d: %v", r, err)
							break
						}
					}
				}
				if err != nil {
					errs <- fmt.Errorf("device %d SelectHost step %d: %v", i, step, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// The other device's buffers and streams are refused, naming both.
	other, err := devs[1].Alloc(4 * 4 * 4096)
	must(t, err)
	defer other.Free()
	lens, err := devs[1].Alloc(16)
	must(t, err)
	defer lens.Free()
	mine, err := devs[0].Alloc(4 * 4 * 4096)
	must(t, err)
	defer mine.Free()
	st1, err := devs[1].NewStream()
	must(t, err)
	defer st1.Close()
	for _, c := range []struct {
		name string
		b    Batch
		st   *runtime.Stream
	}{
		{"scores of device 1", Batch{Scores: other, Stride: 4096, Rows: 4, Lengths: fill(4, 4096)}, nil},
		{"lengths of device 1", Batch{Scores: mine, Stride: 4096, Rows: 4, DeviceLengths: lens}, nil},
		{"a stream of device 1", Batch{Scores: mine, Stride: 4096, Rows: 4, Lengths: fill(4, 4096)}, st1},
	} {
		_, err := sels[0].Select(0, c.b, c.st)
		if err == nil || !strings.Contains(err.Error(), "is on device 1") {
			t.Errorf("device 0's selector given %s: %v; want an error saying it is on device 1", c.name, err)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
}

// streamDecode runs 12 steps of a decode on layer g of sel, on a stream of
// its own, and checks each step.
func streamDecode(sel *Selector, g int, seed uint64) error {
	d := sel.Config().Device
	st, err := d.NewStream()
	if err != nil {
		return err
	}
	defer st.Close()
	const rows, stride = 4, 70000
	scores, err := d.Alloc(4 * rows * stride)
	if err != nil {
		return err
	}
	defer scores.Free()
	traj := make([]*Decode, rows)
	for r := range traj {
		traj[r] = NewDecode(50000+1001*r, stride, 0, seed*8+uint64(r))
	}
	for step := range 12 {
		x := make([][]float32, rows)
		for r := range rows {
			x[r] = traj[r].Next()
		}
		if err := streamStep(sel, g, st, scores, stride, x); err != nil {
			return fmt.Errorf("step %d: %v", step, err)
		}
	}
	return nil
}
