//go:build cuda

package runtime

import (
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// The runtime's tests launch kernels built here with package ptx, so that
// the package and its tests need no generator.

// countGEText is count_ge(scores, row_stride, lengths, thresholds, counts)
// for target t, in CTAs of 128 threads, one per row: counts[r] is how
// many of the lengths[r] floats at scores + 4*r*row_stride are >=
// thresholds[r] or NaN. With tooBig, it also declares and writes a static
// shared array of 1 MB, which the JIT must refuse (no SM has that much).
func countGEText(t testing.TB, target ptx.Target, tooBig bool) (string, ptx.Launch) {
	t.Helper()
	const block = 128
	m := ptx.NewModule(target)
	total := m.Shared("count_ge_total", ptx.B32, 1, 4)
	var big *ptx.Var
	if tooBig {
		big = m.Shared("too_big", ptx.B8, 1<<20, 4)
	}
	e := m.NewEntry("count_ge")
	e.ReqNTID = ptx.Dim3{block}
	ptr := func(name string) ptx.Reg {
		p := e.Param(name, ptx.U64)
		p.PtrAlign = 4
		g := e.Reg(ptx.U64)
		e.CvtaToGlobal(g, e.LdParam(p))
		return g
	}
	scores := ptr("scores")
	stride := e.LdParam(e.Param("row_stride", ptx.U64))
	lengths, thresholds, counts := ptr("lengths"), ptr("thresholds"), ptr("counts")
	elem := func(base, i ptx.Reg) ptx.Addr { // base + 4*i
		a := e.Reg(ptx.U64)
		e.MulWide(a, i, ptx.Imm(4))
		e.Add(a, a, base)
		return ptx.At(a, 0)
	}
	tid, row := e.Reg(ptx.U32), e.Reg(ptx.U32)
	e.Mov(tid, ptx.TidX)
	e.Mov(row, ptx.CtaIDX)
	n, thr := e.Reg(ptx.U32), e.Reg(ptx.F32)
	e.Ld(ptx.SpaceGlobal, n, elem(lengths, row))
	e.Ld(ptx.SpaceGlobal, thr, elem(thresholds, row))
	r64, rowp := e.Reg(ptx.U64), e.Reg(ptx.U64)
	e.Cvt(r64, row)
	e.Mul(rowp, r64, stride)
	e.Mad(rowp, rowp, ptx.Imm(4), scores)

	first := e.Pred()
	e.Setp(first, ptx.EQ, tid, ptx.Imm(0))
	e.If(first, func() { e.St(ptx.SpaceShared, ptx.U32, ptx.At(total, 0), ptx.Imm(0)) })
	e.BarSync(0)
	cnt, i := e.Reg(ptx.U32), e.Reg(ptx.U32)
	e.Mov(cnt, ptx.Imm(0))
	e.For(i, tid, n, ptx.Imm(block), func() {
		x := e.Reg(ptx.F32)
		e.Ld(ptx.SpaceGlobal, x, elem(rowp, i))
		ge := e.Pred()
		e.Setp(ge, ptx.GEU, x, thr) // >= or unordered
		e.Guarded(ge, func() { e.Add(cnt, cnt, ptx.Imm(1)) })
	})
	old := e.Reg(ptx.U32)
	e.Atom(ptx.SpaceShared, "add", old, ptx.At(total, 0), cnt)
	e.BarSync(0)
	e.If(first, func() {
		v := e.Reg(ptx.U32)
		e.Ld(ptx.SpaceShared, v, ptx.At(total, 0))
		e.St(ptx.SpaceGlobal, ptx.U32, elem(counts, row), v)
		if big != nil {
			e.St(ptx.SpaceShared, ptx.U32, ptx.At(big, 1<<20-4), v)
		}
	})
	e.Ret()
	must(t, m.Build())
	l, err := ptx.LaunchOf(m, "count_ge", 0)
	must(t, err)
	return ptx.Text(m), l
}

// loadCountGE loads count_ge on d.
func loadCountGE(t testing.TB, d *Device) *Kernel {
	t.Helper()
	text, l := countGEText(t, d.Info().Target, false)
	k, err := d.Load(text, l)
	must(t, err)
	return k
}

// loadFill loads fill(out, value), which sets out[ctaid*64 + tid] = value
// in CTAs of 64 threads: a second kernel, with other parameters.
func loadFill(t testing.TB, d *Device) *Kernel {
	t.Helper()
	m := ptx.NewModule(d.Info().Target)
	e := m.NewEntry("fill")
	e.ReqNTID = ptx.Dim3{64}
	outP := e.Param("out", ptx.U64)
	outP.PtrAlign = 4
	out := e.Reg(ptx.U64)
	e.CvtaToGlobal(out, e.LdParam(outP))
	v := e.LdParam(e.Param("value", ptx.U32))
	tid, cta, g := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
	e.Mov(tid, ptx.TidX)
	e.Mov(cta, ptx.CtaIDX)
	e.Mad(g, cta, ptx.Imm(64), tid)
	a := e.Reg(ptx.U64)
	e.MulWide(a, g, ptx.Imm(4))
	e.Add(a, a, out)
	e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(a, 0), v)
	e.Ret()
	must(t, m.Build())
	l, err := ptx.LaunchOf(m, "fill", 0)
	must(t, err)
	k, err := d.Load(ptx.Text(m), l)
	must(t, err)
	return k
}
