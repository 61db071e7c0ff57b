//go:build cuda

package runtime

import (
	"strings"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// dependentKernels builds the two kernels of TestLaunchDependent, 64
// threads a CTA: slow_store(out, value) lets its dependents launch, spins
// for spin clock cycles, then stores value in out[ctaid*64 + tid];
// add_one(in, out), which waits first (griddepcontrol.wait) unless
// waitLate, sets out[g] = in[g] + 1 (waitLate: it reads in[g] before it
// waits).
func dependentKernels(t *testing.T, d *Device, spin int64, waitLate bool) (slow, add *Kernel) {
	t.Helper()
	load := func(m *ptx.Module, name string) *Kernel {
		must(t, m.Build())
		l, err := ptx.LaunchOf(m, name, 0)
		must(t, err)
		k, err := d.Load(ptx.Text(m), l)
		must(t, err)
		return k
	}
	elem := func(e *ptx.Entry, p *ptx.Param) ptx.Addr {
		g, a, i := e.Reg(ptx.U64), e.Reg(ptx.U64), e.Reg(ptx.U32)
		e.CvtaToGlobal(g, e.LdParam(p))
		e.Mad(i, ptx.CtaIDX, ptx.Imm(64), ptx.TidX)
		e.MulWide(a, i, ptx.Imm(4))
		e.Add(a, a, g)
		return ptx.At(a, 0)
	}
	ptr := func(e *ptx.Entry, name string) *ptx.Param {
		p := e.Param(name, ptx.U64)
		p.PtrAlign = 4
		return p
	}

	m := ptx.NewModule(d.Info().Target)
	e := m.NewEntry("slow_store")
	e.ReqNTID = ptx.Dim3{64}
	out, v := ptr(e, "out"), e.LdParam(e.Param("value", ptx.U32))
	e.GridDepLaunchDependents()
	start, now, el := e.Reg(ptx.U64), e.Reg(ptx.U64), e.Reg(ptx.U64)
	e.Mov(start, ptx.Clock64)
	again := e.NewLabel("spin")
	e.Place(again)
	e.Mov(now, ptx.Clock64)
	e.Sub(el, now, start)
	p := e.Pred()
	e.Setp(p, ptx.LT, el, ptx.Imm(spin))
	e.BraIf(p, again)
	e.St(ptx.SpaceGlobal, ptx.U32, elem(e, out), v)
	e.Ret()
	slow = load(m, "slow_store")

	m = ptx.NewModule(d.Info().Target)
	e = m.NewEntry("add_one")
	e.ReqNTID = ptx.Dim3{64}
	in, o := ptr(e, "in"), ptr(e, "out")
	if !waitLate {
		e.GridDepWait()
	}
	x := e.Reg(ptx.U32)
	e.Ld(ptx.SpaceGlobal, x, elem(e, in))
	if waitLate {
		e.GridDepWait()
	}
	e.Add(x, x, ptx.Imm(1))
	e.St(ptx.SpaceGlobal, ptx.U32, elem(e, o), x)
	e.Ret()
	return slow, load(m, "add_one")
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
	err = late.LaunchDependent(s, ctas, late.Args().Set("in", a.Ptr()).Set("out", b.Ptr()))
	if err == nil || !strings.Contains(err.Error(), "griddepcontrol.wait") {
		t.Errorf("a dependent launch of a kernel that reads before it waits: %v; want a refusal", err)
	}
	must(t, s.Synchronize())
}
