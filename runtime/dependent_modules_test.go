package runtime

import (
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// dependentModules builds the two kernels of TestLaunchDependent for t, 64
// threads a CTA: slow_store(out, value) lets its dependents launch, spins
// for spin clock cycles, then stores value in out[ctaid*64 + tid];
// add_one(in, out), which waits first (griddepcontrol.wait) unless
// waitLate, sets out[g] = in[g] + 1 (waitLate: it reads in[g] before it
// waits).
func dependentModules(t ptx.Target, spin int64, waitLate bool) (slow, add *ptx.Module, err error) {
	elem := func(e *ptx.Entry, p *ptx.Param) ptx.Addr {
		g, a, i, tid, cta := e.Reg(ptx.U64), e.Reg(ptx.U64), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.CvtaToGlobal(g, e.LdParam(p))
		e.Mov(tid, ptx.TidX)
		e.Mov(cta, ptx.CtaIDX)
		e.Mad(i, cta, ptx.Imm(64), tid)
		e.MulWide(a, i, ptx.Imm(4))
		e.Add(a, a, g)
		return ptx.At(a, 0)
	}
	ptr := func(e *ptx.Entry, name string) *ptx.Param {
		p := e.Param(name, ptx.U64)
		p.PtrAlign = 4
		return p
	}

	slow = ptx.NewModule(t)
	e := slow.NewEntry("slow_store")
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
	if err := slow.Build(); err != nil {
		return nil, nil, err
	}

	add = ptx.NewModule(t)
	e = add.NewEntry("add_one")
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
	return slow, add, add.Build()
}

// The kernels of TestLaunchDependent build for sm_90, and only add_one
// without waitLate may be launched dependent (WaitsFirst).
func TestDependentModules(t *testing.T) {
	for _, late := range []bool{false, true} {
		slow, add, err := dependentModules(ptx.SM90, 100, late)
		if err != nil {
			t.Fatal(err)
		}
		ls, err := ptx.LaunchOf(slow, "slow_store", 0)
		if err != nil {
			t.Fatal(err)
		}
		la, err := ptx.LaunchOf(add, "add_one", 0)
		if err != nil {
			t.Fatal(err)
		}
		if ls.WaitsFirst || la.WaitsFirst == late {
			t.Errorf("waitLate %v: WaitsFirst slow_store %v, add_one %v", late, ls.WaitsFirst, la.WaitsFirst)
		}
	}
}
