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

	"github.com/gvr-go/gvr/ptx"
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
	args := k.Args().Set("scores", bufs[0].Ptr()).Set("row_stride", uint64(stride)).
		Set("lengths", bufs[1].Ptr()).Set("thresholds", bufs[2].Ptr()).Set("counts", bufs[3].Ptr())
	counts := make([]uint32, len(rows))
	err := errors.Join(UploadAsync(s, bufs[0], host), UploadAsync(s, bufs[1], lengths), UploadAsync(s, bufs[2], thr))
	if err == nil {
		err = k.Launch(s, len(rows), args)
	}
	if err == nil && s == nil {
		err = d.Synchronize() // the default stream
	} else if err == nil {
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
	k := loadCountGE(t, d)
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
	buf, err := d.Alloc(64)
	must(t, err)
	defer buf.Free()
	good := func() *ptx.Args {
		return k.Args().Set("scores", buf.Ptr()).Set("row_stride", 1).Set("lengths", buf.Ptr()).
			Set("thresholds", buf.Ptr()).Set("counts", buf.Ptr())
	}
	other := loadFill(t, d)
	fake := &Stream{dev: &Device{info: Info{Ordinal: 7, Name: "another GPU"}}}
	for _, c := range []struct {
		name, want string
		err        error
	}{
		{"a parameter not set", "row_stride is not set", k.Launch(nil, 1, k.Args().Set("scores", buf.Ptr()))},
		{"an unknown parameter", `no parameter "count"`, k.Launch(nil, 1, good().Set("count", buf.Ptr()))},
		{"a misaligned pointer", "lengths = 0x", k.Launch(nil, 1, good().Set("lengths", buf.Ptr()+2))},
		{"another kernel's arguments", "arguments are for fill", k.Launch(nil, 1, other.Args())},
		{"no arguments", "no arguments", k.Launch(nil, 1, nil)},
		{"grid 0", "0 CTAs", k.Launch(nil, 0, good())},
		{"wrong device", "is on device 7", k.Launch(fake, 1, good())},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v; want an error saying %q", c.name, c.err, c.want)
		} else {
			t.Logf("%s: %v", c.name, c.err)
		}
	}
	// The context is intact: the good launch still runs.
	got, err = countGE(k, nil, [][]float32{{1, 2}}, 2, []float32{2})
	if err != nil || got[0] != 1 {
		t.Errorf("count_ge after the refused launches: %v, %v; want [1]", got, err)
	}
}

func TestJITErrorLog(t *testing.T) {
	d := device(t)
	text, l := countGEText(t, d.Info().Target, false)
	// Text gvr cannot read is refused before the JIT, saying why.
	bad := strings.Replace(text, "ret;", "mov.u32 %no_such_register, 1;\n\tret;", 1)
	if _, err := d.LoadPTX(bad, "count_ge", 0); err == nil || !strings.Contains(err.Error(), "reading the PTX") ||
		!strings.Contains(err.Error(), "no_such_register") {
		t.Errorf("PTX with an undeclared register: %v; want a parse error naming it", err)
	}
	// Text that reads well but that the JIT refuses: 1 MB of static
	// shared memory, more than any SM has.
	big, _ := countGEText(t, d.Info().Target, true)
	_, err := d.LoadPTX(big, "count_ge", 0)
	var je *JITError
	if !errors.As(err, &je) {
		t.Fatalf("PTX the JIT refuses: error %v, want a *JITError", err)
	}
	t.Logf("the error:\n%v", err)
	if !strings.Contains(strings.ToLower(je.Log), "error") || !strings.Contains(je.Log, "shared") {
		t.Errorf("the JIT error log does not say what is wrong: %q", je.Log)
	}
	var de *DriverError
	if !errors.As(err, &de) || !strings.HasPrefix(de.Name, "CUDA_ERROR_") {
		t.Errorf("no DriverError with the driver's name in %v", err)
	}
	if _, err := d.LoadPTX(text, "not_there", 0); err == nil || !strings.Contains(err.Error(), `no entry "not_there"`) {
		t.Errorf("missing entry: %v", err)
	}
	if _, err := d.LoadPTX(text, "count_ge", d.Info().SharedOptin+1); err == nil || !strings.Contains(err.Error(), "shared memory") {
		t.Errorf("too much shared memory: %v", err)
	}
	// A contract that is not the text's is refused before the JIT.
	ml := l
	ml.Params = append([]ptx.Param(nil), l.Params...)
	ml.Params[0].PtrAlign = 16
	if _, err := d.Load(text, ml); err == nil || !strings.Contains(err.Error(), "does not match the PTX") {
		t.Errorf("a contract with another alignment: %v", err)
	}
	ml = l
	ml.Block = 256
	if _, err := d.Load(text, ml); err == nil || !strings.Contains(err.Error(), "the PTX fixes 128") {
		t.Errorf("a contract with another block: %v", err)
	}
	// A plain text whose entry fixes its block loads by LoadPTX alone.
	lk, err := d.LoadPTX(text, "count_ge", 0)
	must(t, err)
	if lk.Contract.String() != l.String() {
		t.Errorf("LoadPTX contract %v; the builder's %v", lk.Contract, l)
	}
}

func TestGraphAndEvents(t *testing.T) {
	d := device(t)
	k := loadCountGE(t, d)
	var err error
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
	params := k.Args().Set("scores", bufs[0].Ptr()).Set("row_stride", stride).Set("lengths", bufs[1].Ptr()).
		Set("thresholds", bufs[2].Ptr()).Set("counts", bufs[3].Ptr())

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
	k := loadCountGE(t, d)
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
