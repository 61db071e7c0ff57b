//go:build cuda

package runtime

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/gvr-go/gvr/gen"
)

// GPU tests. Without a GPU they skip, unless GVR_REQUIRE_GPU is set (as
// scripts/gpu-run.sh does), which makes a missing GPU a failure.

var testDev struct {
	once sync.Once
	d    *Device
	err  error
}

func device(t testing.TB) *Device {
	t.Helper()
	testDev.once.Do(func() {
		n, err := DeviceCount()
		if err == nil && n == 0 {
			err = errors.New("no CUDA device")
		}
		if err == nil {
			testDev.d, err = Open(0)
		}
		testDev.err = err
	})
	if testDev.err != nil {
		if os.Getenv("GVR_REQUIRE_GPU") != "" {
			t.Fatalf("GVR_REQUIRE_GPU is set but there is no usable GPU: %v", testDev.err)
		}
		t.Skipf("no GPU: %v", testDev.err)
	}
	return testDev.d
}

// small is a configuration whose kernels are quick to JIT.
var small = gen.Config{K: 16, MaxCandidates: 1024, BlockSize: 128, Bins: 256}

func TestDevice(t *testing.T) {
	d := device(t)
	i := d.Info()
	t.Logf("%v", i)
	t.Logf("%d SMs at %d MHz, %d KB shared memory per block opt-in, %d GB", i.SMs, i.ClockKHz/1000, i.SharedOptin>>10, i.TotalMem>>30)
	if i.Major == 9 && i.Minor == 0 && i.Target.Name != "sm_90" {
		t.Errorf("compute capability 9.0: target %s, want sm_90", i.Target.Name)
	}
	if i.Major == 10 && i.Minor == 0 && i.Target.Name != "sm_100" {
		t.Errorf("compute capability 10.0: target %s, want sm_100", i.Target.Name)
	}
	if d2, err := Open(0); err != nil || d2 != d {
		t.Errorf("Open(0) again = %p, %v; want the same device %p", d2, err, d)
	}
	n, _ := DeviceCount()
	for _, bad := range []int{-1, n} {
		if _, err := Open(bad); err == nil || !strings.Contains(err.Error(), "no device") {
			t.Errorf("Open(%d): %v", bad, err)
		}
	}
	if err := d.Synchronize(); err != nil {
		t.Error(err)
	}
}

func TestBuffers(t *testing.T) {
	d := device(t)
	b, err := d.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	zero := make([]uint32, 1024)
	if err := Download(zero, b); err != nil {
		t.Fatal(err)
	}
	for i, v := range zero {
		if v != 0 {
			t.Fatalf("Alloc: word %d = %#x, want zeroed memory", i, v)
		}
	}
	src := make([]float32, 1024)
	for i := range src {
		src[i] = float32(i) - 0.5
	}
	if err := Upload(b, src); err != nil {
		t.Fatal(err)
	}
	// A view at an odd word: unaligned for float4.
	v, err := b.View(4*3, 4*10)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 10)
	if err := Download(got, v); err != nil {
		t.Fatal(err)
	}
	for i, x := range got {
		if x != src[3+i] {
			t.Fatalf("view element %d = %v, want %v", i, x, src[3+i])
		}
	}
	if v.Ptr() != b.Ptr()+12 || v.Bytes() != 40 || v.Device() != d {
		t.Errorf("view: ptr %#x bytes %d, buffer at %#x", v.Ptr(), v.Bytes(), b.Ptr())
	}
	if err := v.Memset32(nil, 0xFFFFFFFF); err != nil {
		t.Fatal(err)
	}
	ints := make([]int32, 14)
	if err := Download(ints, b); err != nil {
		t.Fatal(err)
	}
	if ints[2] == -1 || ints[3] != -1 || ints[12] != -1 || ints[13] == -1 {
		t.Errorf("Memset32 of the view: words 2..13 = %v", ints[2:])
	}

	// Misuse is an error, never a crash.
	for name, err := range map[string]error{
		"Alloc(0)":          func() error { _, err := d.Alloc(0); return err }(),
		"View out of range": func() error { _, err := b.View(4000, 100); return err }(),
		"View negative":     func() error { _, err := b.View(-4, 8); return err }(),
		"Free of a view":    v.Free(),
		"Upload too long":   Upload(v, make([]float32, 11)),
		"Download too long": Download(make([]byte, 4097), b),
		"nil buffer":        Upload((*Buffer)(nil), src),
		"Memset32 odd size": func() error { w, _ := b.View(0, 6); return w.Memset32(nil, 0) }(),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	c, err := d.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	cv, _ := c.View(0, 4)
	if err := c.Free(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Free twice":            c.Free(),
		"Upload after Free":     Upload(c, []int32{1}),
		"use a view after Free": Upload(cv, []int32{1}),
	} {
		if err == nil || !strings.Contains(err.Error(), "Free") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// countGE runs count_ge over rows on s and returns the counts.
func countGE(k *Kernel, s *Stream, rows [][]float32, stride int, thr []float32) ([]uint32, error) {
	d := k.Device()
	host := make([]float32, len(rows)*stride)
	lengths := make([]int32, len(rows))
	for r, x := range rows {
		copy(host[r*stride:], x)
		lengths[r] = int32(len(x))
	}
	var bufs [4]*Buffer
	for i, n := range []int{4 * len(host), 4 * len(rows), 4 * len(rows), 4 * len(rows)} {
		var err error
		if bufs[i], err = d.Alloc(n); err != nil {
			return nil, err
		}
		defer bufs[i].Free()
	}
	vals := [5]uint64{bufs[0].Ptr(), uint64(stride), bufs[1].Ptr(), bufs[2].Ptr(), bufs[3].Ptr()}
	params := make([]unsafe.Pointer, len(vals))
	for i := range vals {
		params[i] = unsafe.Pointer(&vals[i])
	}
	counts := make([]uint32, len(rows))
	err := errors.Join(UploadAsync(s, bufs[0], host), UploadAsync(s, bufs[1], lengths), UploadAsync(s, bufs[2], thr))
	if err == nil {
		err = k.Launch(s, len(rows), params)
	}
	if err == nil {
		err = s.Synchronize()
	}
	if err == nil {
		err = Download(counts, bufs[3])
	}
	return counts, err
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestLaunch(t *testing.T) {
	d := device(t)
	k, err := d.Kernel("count_ge", small)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v", k)
	s, err := d.NewStream()
	must(t, err)
	defer s.Close()
	nan := float32(math.NaN())
	rows := [][]float32{{}, {1}, {1, 2, 3, 4, 5}, make([]float32, 1001), {nan, 0, nan, -1}}
	for i := range rows[3] {
		rows[3][i] = float32(i)
	}
	got, err := countGE(k, s, rows, 1003, []float32{0, 1, 3, 500, 0})
	must(t, err)
	want := []uint32{0, 1, 3, 501, 3}
	for r := range want {
		if got[r] != want[r] {
			t.Errorf("row %d: count %d, want %d", r, got[r], want[r])
		}
	}

	// Bad launches are errors before they reach the driver.
	var x uint64
	p := unsafe.Pointer(&x)
	fake := &Stream{dev: &Device{info: Info{Ordinal: 7, Name: "another GPU"}}}
	for name, err := range map[string]error{
		"too few parameters": k.Launch(nil, 1, []unsafe.Pointer{p}),
		"grid 0":             k.Launch(nil, 0, []unsafe.Pointer{p, p, p, p, p}),
		"nil parameter":      k.Launch(nil, 1, []unsafe.Pointer{p, p, nil, p, p}),
		"wrong device":       k.Launch(fake, 1, []unsafe.Pointer{p, p, p, p, p}),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestKernelCache(t *testing.T) {
	d := device(t)
	cfg := small
	cfg.Bins = 512 // a configuration no other test loads
	d.mu.Lock()
	before := d.loads
	d.mu.Unlock()
	ks := make([]*Kernel, 16)
	var wg sync.WaitGroup
	for i := range ks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := d.Kernel("count_ge", cfg)
			if err != nil {
				t.Error(err)
			}
			ks[i] = k
		}()
	}
	wg.Wait()
	for _, k := range ks {
		if k != ks[0] {
			t.Fatal("concurrent requests for one kernel gave different kernels")
		}
	}
	d.mu.Lock()
	loads := d.loads - before
	d.mu.Unlock()
	if loads != 1 {
		t.Errorf("16 concurrent requests JIT-loaded the kernel %d times, want once", loads)
	}
	// An explicit older target loads too; a newer one is refused clearly.
	old := cfg
	old.Target = d.Info().Target
	if k, err := d.Kernel("count_ge", old); err != nil || k != ks[0] {
		t.Errorf("explicit device target: %v, %v; want the cached kernel", k, err)
	}
	if _, err := d.Kernel("no_such_kernel", cfg); err == nil || !strings.Contains(err.Error(), "unknown kernel") {
		t.Errorf("unknown kernel: %v", err)
	}
	bad := cfg
	bad.BlockSize = 100
	if _, err := d.Kernel("count_ge", bad); err == nil || !strings.Contains(err.Error(), "BlockSize") {
		t.Errorf("invalid config: %v", err)
	}
}

// TestTopKKernels loads the Top-K kernels of the default configuration,
// checks that the JIT's figures allow the launch the kernel needs, and
// reports them.
func TestTopKKernels(t *testing.T) {
	d := device(t)
	cfg := gen.DefaultConfig()
	cfg.Target = d.Info().Target
	for _, name := range []string{"gvr_topk", "topk_fallback", "topk_radix"} {
		k, err := d.Kernel(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v", k)
		if k.Name != name || k.Block != cfg.BlockSize || k.Config != cfg {
			t.Errorf("%s: loaded %s, %d threads, config %v; want %d threads, config %v", name, k.Name, k.Block, k.Config, cfg.BlockSize, cfg)
		}
		if k.Regs <= 0 || k.MaxThreads < k.Block {
			t.Errorf("%s: the JIT says %d registers, at most %d threads per CTA: cannot launch %d", name, k.Regs, k.MaxThreads, k.Block)
		}
		if k.SharedBytes > d.Info().SharedOptin {
			t.Errorf("%s: %d B of dynamic shared memory, the device allows %d", name, k.SharedBytes, d.Info().SharedOptin)
		}
		if k.SharedBytes <= 48<<10 {
			t.Logf("%s: %d B of shared memory, under the 48 KB opt-in", name, k.SharedBytes)
		}
		if k.LocalBytes > 0 {
			t.Logf("%s: %d B of local memory per thread (register spills)", name, k.LocalBytes)
		}
		for _, l := range strings.Split(k.InfoLog, "\n") {
			if strings.Contains(l, "Used") || strings.Contains(l, "spill") {
				t.Logf("  %s", strings.TrimSpace(l))
			}
		}
	}
}

func TestJITErrorLog(t *testing.T) {
	d := device(t)
	k, err := gen.Generate("count_ge", func() gen.Config { c := small; c.Target = d.Info().Target; return c }())
	must(t, err)
	text := strings.Replace(k.PTX(), "ret;", "mov.u32 %no_such_register, 1;\n\tret;", 1)
	_, err = d.LoadPTX("count_ge", text, k.Block, k.SharedBytes, 5)
	var je *JITError
	if !errors.As(err, &je) {
		t.Fatalf("bad PTX: error %v, want a *JITError", err)
	}
	t.Logf("the error:\n%v", err)
	if !strings.Contains(strings.ToLower(je.Log), "error") || !strings.Contains(je.Log, "no_such_register") {
		t.Errorf("the JIT error log does not say what is wrong: %q", je.Log)
	}
	var de *DriverError
	if !errors.As(err, &de) || !strings.HasPrefix(de.Name, "CUDA_ERROR_") {
		t.Errorf("no DriverError with the driver's name in %v", err)
	}
	if _, err := d.LoadPTX("not_there", k.PTX(), k.Block, k.SharedBytes, 5); err == nil || !strings.Contains(err.Error(), "entry not found") {
		t.Errorf("missing entry: %v", err)
	}
	if _, err := d.LoadPTX("count_ge", k.PTX(), k.Block, d.Info().SharedOptin+1, 5); err == nil || !strings.Contains(err.Error(), "shared memory") {
		t.Errorf("too much shared memory: %v", err)
	}
}

func TestGraphAndEvents(t *testing.T) {
	d := device(t)
	k, err := d.Kernel("count_ge", small)
	must(t, err)
	s, err := d.NewStream()
	must(t, err)
	defer s.Close()
	const n, stride = 5000, 5001
	var bufs [4]*Buffer
	for i, size := range []int{4 * stride, 4, 4, 4} {
		bufs[i], err = d.Alloc(size)
		must(t, err)
		defer bufs[i].Free()
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i % 100)
	}
	must(t, Upload(bufs[0], x))
	must(t, Upload(bufs[1], []int32{n}))
	vals := [5]uint64{bufs[0].Ptr(), stride, bufs[1].Ptr(), bufs[2].Ptr(), bufs[3].Ptr()}
	params := []unsafe.Pointer{unsafe.Pointer(&vals[0]), unsafe.Pointer(&vals[1]), unsafe.Pointer(&vals[2]), unsafe.Pointer(&vals[3]), unsafe.Pointer(&vals[4])}

	// The graph: set the threshold, count.
	g, err := s.Capture(func() error {
		if c, err := s.Capturing(); err != nil || !c {
			return fmt.Errorf("Capturing() = %v, %v inside Capture", c, err)
		}
		if err := bufs[3].Memset32(s, 12345); err != nil {
			return err
		}
		return k.Launch(s, 1, params)
	})
	must(t, err)
	defer g.Close()
	if c, err := s.Capturing(); err != nil || c {
		t.Errorf("Capturing() = %v, %v after Capture", c, err)
	}
	start, err := d.NewEvent()
	must(t, err)
	defer start.Close()
	end, err := d.NewEvent()
	must(t, err)
	defer end.Close()
	for thr := range 100 {
		must(t, UploadAsync(s, bufs[2], []float32{float32(thr)}))
		must(t, start.Record(s))
		must(t, g.Launch(s))
		must(t, end.Record(s))
		must(t, end.Synchronize())
		got := []uint32{0}
		must(t, Download(got, bufs[3]))
		if want := uint32(50 * (100 - thr)); got[0] != want {
			t.Fatalf("replay %d: count %d, want %d", thr, got[0], want)
		}
		if thr == 99 {
			el, err := Elapsed(start, end)
			must(t, err)
			t.Logf("one replay of memset + count_ge over %d floats: %v", n, el)
			if el <= 0 {
				t.Errorf("Elapsed = %v", el)
			}
		}
	}

	// Work that cannot be captured fails the capture, clearly.
	_, err = s.Capture(func() error { return Upload(bufs[2], []float32{1}) })
	if err == nil {
		t.Error("a synchronous copy inside Capture: no error")
	} else {
		t.Logf("synchronous copy inside Capture: %v", err)
	}
	_, err = s.Capture(func() error { return errors.New("planted") })
	if err == nil || !strings.Contains(err.Error(), "planted") {
		t.Errorf("record's error: %v", err)
	}
	if _, err := (*Stream)(nil).Capture(func() error { return nil }); err == nil {
		t.Error("Capture on the default stream: no error")
	}
	// The stream still works after the failed captures.
	must(t, g.Launch(s))
	must(t, s.Synchronize())
}

func TestConcurrentLaunches(t *testing.T) {
	d := device(t)
	k, err := d.Kernel("count_ge", small)
	must(t, err)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := d.NewStream()
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			for it := range 20 {
				n := 1000 + 37*g + it
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(i)
				}
				got, err := countGE(k, s, [][]float32{x}, n, []float32{float32(g)})
				if err != nil {
					t.Error(err)
					return
				}
				if want := uint32(n - g); got[0] != want {
					t.Errorf("goroutine %d, launch %d: count %d, want %d", g, it, got[0], want)
					return
				}
			}
		}()
	}
	wg.Wait()
}
