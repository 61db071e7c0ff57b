package topk

import (
	"slices"
	"testing"

	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/ptx/emu"
)

// slowCopyModule builds slow_copy(dst, src, n) for t: an indexer's
// stand-in, whose output a dependent launch must wait for
// (TestDependentLaunch). Its CTAs (256 threads, as many as launched) let
// the kernel after them be scheduled first thing
// (griddepcontrol.launch_dependents), spin for spin clock cycles, then
// copy the n words of src to dst between them.
func slowCopyModule(t ptx.Target, spin int64) (*ptx.Module, error) {
	m := ptx.NewModule(t)
	e := m.NewEntry("slow_copy")
	e.ReqNTID = ptx.Dim3{256}
	param := func(name string) ptx.Reg {
		p := e.Param(name, ptx.U64)
		p.PtrAlign = 4
		g := e.Reg(ptx.U64)
		e.CvtaToGlobal(g, e.LdParam(p))
		return g
	}
	dst, src := param("dst"), param("src")
	n := e.Reg(ptx.U32)
	e.Cvt(n, e.LdParam(e.Param("n", ptx.U64)))
	e.GridDepLaunchDependents()
	start, now, el := e.Reg(ptx.U64), e.Reg(ptx.U64), e.Reg(ptx.U64)
	e.Mov(start, ptx.Clock64)
	spinning := e.NewLabel("spin")
	e.Place(spinning)
	e.Mov(now, ptx.Clock64)
	e.Sub(el, now, start)
	p := e.Pred()
	e.Setp(p, ptx.LT, el, ptx.Imm(spin))
	e.BraIf(p, spinning)
	i, step, v, tid, cta, ctas := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
	e.Mov(tid, ptx.TidX)
	e.Mov(cta, ptx.CtaIDX)
	e.Mov(ctas, ptx.NCtaIDX)
	e.Mad(i, cta, ptx.Imm(256), tid)
	e.Mul(step, ctas, ptx.Imm(256))
	e.For(i, i, n, step, func() {
		off := e.Reg(ptx.U64)
		e.MulWide(off, i, ptx.Imm(4))
		a, b := e.Reg(ptx.U64), e.Reg(ptx.U64)
		e.Add(a, src, off)
		e.Add(b, dst, off)
		e.Ld(ptx.SpaceGlobal, v, ptx.At(a, 0))
		e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(b, 0), v)
	})
	e.Ret()
	return m, m.Build()
}

// TestSlowCopyModule: TestDependentLaunch's indexer stand-in copies n
// words over a grid of a few CTAs, in the interpreter (without the spin:
// its clock is not the GPU's).
func TestSlowCopyModule(t *testing.T) {
	m, err := slowCopyModule(ptx.SM90, 0)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ptx.LaunchOf(m, "slow_copy", 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := emu.LoadModule(m)
	if err != nil {
		t.Fatal(err)
	}
	const n = 1999
	src := make([]int32, n)
	for i := range src {
		src[i] = int32(3*i + 1)
	}
	mem := emu.NewMemory()
	dst := mem.AllocI32s(make([]int32, n+1))
	args := l.Args().Set("dst", dst).Set("src", mem.AllocI32s(src)).Set("n", n)
	if _, err := p.Run(mem, emu.Launch{Grid: [3]int{3}, Args: args}); err != nil {
		t.Fatal(err)
	}
	got, err := mem.ReadI32s(dst, n+1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[:n], src) || got[n] != 0 {
		t.Errorf("slow_copy: dst is not src (or went past n)")
	}
}
