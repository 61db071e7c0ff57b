//go:build cuda

package runtime

import (
	"strings"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// dependentKernels loads dependentModules' kernels on d.
func dependentKernels(t *testing.T, d *Device, spin int64, waitLate bool) (slow, add *Kernel) {
	t.Helper()
	load := func(m *ptx.Module, name string) *Kernel {
		l, err := ptx.LaunchOf(m, name, 0)
		must(t, err)
		k, err := d.Load(ptx.Text(m), l)
		must(t, err)
		return k
	}
	sm, am, err := dependentModules(d.Info().Target, spin, waitLate)
	must(t, err)
	return load(sm, "slow_store"), load(am, "add_one")
}

// TestLaunchDependent: a kernel launched dependent on one that lets it
// start at once and stores its output ~10 us later reads that output (its
// griddepcontrol.wait holds it), on a stream and replayed from a graph; a
// kernel that reads before it waits is refused such a launch.
func TestLaunchDependent(t *testing.T) {
	d := device(t)
	if d.Info().Major < 9 {
		t.Skipf("%v: programmatic dependent launch needs compute capability 9.0", d)
	}
	slow, add := dependentKernels(t, d, 20000, false)
	if !add.Contract.WaitsFirst || slow.Contract.WaitsFirst {
		t.Fatalf("WaitsFirst: add_one %v, slow_store %v; want true, false", add.Contract.WaitsFirst, slow.Contract.WaitsFirst)
	}
	s, err := d.NewStream()
	must(t, err)
	defer s.Close()
	const ctas, n = 8, 8 * 64
	a, err := d.Alloc(4 * n)
	must(t, err)
	defer a.Free()
	b, err := d.Alloc(4 * n)
	must(t, err)
	defer b.Free()
	check := func(what string, want uint32) {
		t.Helper()
		got := make([]uint32, n)
		must(t, Download(got, b))
		for i, g := range got {
			if g != want {
				t.Fatalf("%s: out[%d] = %d, want %d", what, i, g, want)
			}
		}
	}
	aArgs := slow.Args().Set("out", a.Ptr())
	bArgs := add.Args().Set("in", a.Ptr()).Set("out", b.Ptr())
	for i := range uint32(20) {
		must(t, slow.Launch(s, ctas, aArgs.Set("value", uint64(i))))
		must(t, add.LaunchDependent(s, ctas, bArgs))
		must(t, s.Synchronize())
		check("on a stream", i+1)
	}
	var value uint32 = 1000
	g, err := s.Capture(func() error {
		if err := slow.Launch(s, ctas, aArgs.Set("value", uint64(value))); err != nil {
			return err
		}
		return add.LaunchDependent(s, ctas, bArgs)
	})
	must(t, err)
	defer g.Close()
	for range 5 {
		must(t, b.Memset32(s, 0))
		must(t, g.Launch(s))
		must(t, s.Synchronize())
		check("replayed from a graph", value+1)
	}

	_, late := dependentKernels(t, d, 0, true)
	if late.Contract.WaitsFirst {
		t.Fatal("WaitsFirst for a kernel that loads before it waits")
	}
	lateArgs := late.Args().Set("in", a.Ptr()).Set("out", b.Ptr())
	err = late.LaunchDependent(s, ctas, lateArgs)
	if err == nil || !strings.Contains(err.Error(), "griddepcontrol.wait") {
		t.Errorf("a dependent launch of a kernel that reads before it waits: %v; want a refusal", err)
	}
	must(t, s.Synchronize())

	// What the wait guards against, past that refusal: the kernel that
	// reads before it waits, launched so, reads the value from before the
	// slow kernel's store. Seen at least once, it shows the launches above
	// did start early: their right outputs are the wait's doing.
	stale := 0
	for i := range uint32(20) {
		must(t, slow.Launch(s, ctas, aArgs.Set("value", uint64(100+i))))
		must(t, d.bind())
		err := launchEx(late.fn, ctas, late.Contract.Block, late.Contract.SharedBytes, s.handle(), lateArgs.Pointers(), true, false)
		d.unbind()
		must(t, err)
		must(t, s.Synchronize())
		got := make([]uint32, n)
		must(t, Download(got, b))
		if got[0] != 100+i+1 {
			stale++
		}
	}
	t.Logf("the kernel that reads before it waits read a stale value in %d of 20 dependent launches", stale)
	if stale == 0 {
		t.Error("no dependent launch started before the kernel before it ended: the test cannot tell a wait from none")
	}
}
