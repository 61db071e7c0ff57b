package emu

import (
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// threadKernel builds a kernel of one CTA in which body computes a u32
// result per thread, stored to out[tid]. body gets the entry and %tid.x.
func threadKernel(t *testing.T, target ptx.Target, body func(e *ptx.Entry, tid, res ptx.Reg)) *Program {
	t.Helper()
	m := ptx.NewModule(target)
	e := m.NewEntry("k")
	out := e.LdParam(e.Param("out", ptx.U64))
	tid, res, a := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U64)
	e.Mov(tid, ptx.TidX)
	e.Mov(res, ptx.Imm(0))
	body(e, tid, res)
	e.MulWide(a, tid, ptx.Imm(4))
	e.Add(a, a, out)
	e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(a, 0), res)
	e.Ret()
	return mustLoad(t, m)
}

// runThreads runs a threadKernel on n threads and returns out.
func runThreads(t *testing.T, p *Program, n int) ([]uint32, error) {
	t.Helper()
	mem := NewMemory()
	out := mem.Alloc(4*n, 0)
	l, err := p.Contract("k", n, 0)
	if err == nil {
		_, err = p.Run(mem, Launch{Grid: [3]int{1}, Args: l.Args().Set("out", out)})
	}
	if err != nil {
		return nil, err
	}
	return mem.ReadU32s(out, n)
}

func mustRunThreads(t *testing.T, p *Program, n int) []uint32 {
	t.Helper()
	got, err := runThreads(t, p, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d results for %d threads", len(got), n)
	}
	return got
}

// Divergent loops with per-lane trip counts, if/else inside, a nested loop
// with an early exit from it, lanes that exit early, and then a full-warp
// shuffle and a barrier: these only work if every lane reconverges.
func TestDivergenceAndReconvergence(t *testing.T) {
	p := threadKernel(t, ptx.SM90, func(e *ptx.Entry, tid, res ptx.Reg) {
		n, i, j, x := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.Mul(n, tid, ptx.Imm(7))
		e.Rem(n, n, ptx.Imm(13)) // trip count 0..12, different per lane
		e.For(i, ptx.Imm(0), n, ptx.Imm(1), func() {
			e.Add(x, i, tid)
			e.And(x, x, ptx.Imm(1))
			odd := e.Pred()
			e.Setp(odd, ptx.EQ, x, ptx.Imm(1))
			e.IfElse(odd, func() {
				e.Mad(res, i, ptx.Imm(3), res)
			}, func() {
				e.Xor(res, res, i)
				// Nested loop, left early when j*j > i.
				brk := e.NewLabel("break")
				e.For(j, ptx.Imm(0), ptx.Imm(10), ptx.Imm(1), func() {
					big := e.Pred()
					sq := e.Reg(ptx.U32)
					e.Mul(sq, j, j)
					e.Setp(big, ptx.GT, sq, i)
					e.BraIf(big, brk)
					e.Add(res, res, ptx.Imm(1))
				})
				e.Place(brk)
			})
		})
		// Every lane must be back: a full-mask shuffle and a barrier.
		y := e.Reg(ptx.U32)
		e.Shfl(ptx.ShflBfly, y, res, ptx.Imm(1), ptx.Imm(31), ptx.Imm(-1))
		e.BarSync(0)
		e.Shl(y, y, ptx.Imm(16))
		e.Add(res, res, y)
	})
	got := mustRunThreads(t, p, 96)
	ref := func(tid uint32) uint32 {
		var res uint32
		n := tid * 7 % 13
		for i := uint32(0); i < n; i++ {
			if (i+tid)&1 == 1 {
				res += i * 3
			} else {
				res ^= i
				for j := uint32(0); j < 10 && j*j <= i; j++ {
					res++
				}
			}
		}
		return res
	}
	for tid := range uint32(96) {
		want := ref(tid) + ref(tid^1)<<16
		if got[tid] != want {
			t.Errorf("thread %d: %#x, want %#x", tid, got[tid], want)
		}
	}
}

// Some lanes exit early; the others go on and use collectives among
// themselves, and exited lanes are not waited for.
func TestEarlyExit(t *testing.T) {
	p := threadKernel(t, ptx.SM90, func(e *ptx.Entry, tid, res ptx.Reg) {
		p := e.Pred()
		e.Setp(p, ptx.GE, tid, ptx.Imm(20))
		e.Guarded(p, func() { e.Exit() })
		m := e.Reg(ptx.U32)
		e.Activemask(m)
		e.Redux("add", res, tid, m)
	})
	mem := NewMemory()
	out := mem.Alloc(4*32, 0)
	if _, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 32, 0).Set("out", out)}); err != nil {
		t.Fatal(err)
	}
	got := mustReadU32s(t, mem, out, 32)
	for i, v := range got {
		want := uint32(0)
		if i < 20 {
			want = 190 // 0+1+...+19
		}
		if v != want {
			t.Errorf("thread %d: %d, want %d", i, v, want)
		}
	}
}

// A CTA whose size is not a multiple of 32 has a partial last warp, whose
// missing lanes are not threads: barriers and full collectives of the
// existing lanes work.
func TestPartialWarp(t *testing.T) {
	p := threadKernel(t, ptx.SM90, func(e *ptx.Entry, tid, res ptx.Reg) {
		m := e.Reg(ptx.U32)
		e.Activemask(m)
		e.BarSync(0)
		e.Redux("add", res, tid, m)
	})
	got := mustRunThreads(t, p, 40) // warp 1 has lanes 0-7
	for i, v := range got {
		want := uint32(496) // 0+...+31
		if i >= 32 {
			want = 32*8 + 28
		}
		if v != want {
			t.Errorf("thread %d: %d, want %d", i, v, want)
		}
	}
}

// Special registers.
func TestSpecialRegisters(t *testing.T) {
	m := ptx.NewModule(ptx.SM90)
	e := m.NewEntry("k")
	out := e.LdParam(e.Param("out", ptx.U64))
	specials := []ptx.Special{ptx.TidX, ptx.TidY, ptx.TidZ, ptx.NTidX, ptx.NTidY, ptx.NTidZ, ptx.CtaIDX, ptx.CtaIDY, ptx.CtaIDZ,
		ptx.NCtaIDX, ptx.NCtaIDY, ptx.NCtaIDZ, ptx.LaneID, ptx.WarpID, ptx.NWarpID, ptx.LaneMaskLt, ptx.LaneMaskLe, ptx.LaneMaskGt, ptx.LaneMaskEq, ptx.SMID,
		ptx.ClusterCtaRank, ptx.ClusterNCtaRank}
	// out[((ctaid linear)*threads + tid linear)*len(specials) + k]
	lin, cta, tmp, a := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U64)
	reg := map[ptx.Special]ptx.Reg{}
	for _, s := range specials {
		reg[s] = e.Reg(ptx.U32)
		e.Mov(reg[s], s)
	}
	e.Mad(lin, reg[ptx.TidZ], reg[ptx.NTidY], reg[ptx.TidY])
	e.Mad(lin, lin, reg[ptx.NTidX], reg[ptx.TidX])
	e.Mad(cta, reg[ptx.CtaIDZ], reg[ptx.NCtaIDY], reg[ptx.CtaIDY])
	e.Mad(cta, cta, reg[ptx.NCtaIDX], reg[ptx.CtaIDX])
	e.Mul(tmp, reg[ptx.NTidX], reg[ptx.NTidY])
	e.Mul(tmp, tmp, reg[ptx.NTidZ])
	e.Mad(lin, cta, tmp, lin)
	e.Mul(lin, lin, ptx.Imm(len(specials)))
	for i, s := range specials {
		e.Add(tmp, lin, ptx.Imm(i))
		e.MulWide(a, tmp, ptx.Imm(4))
		e.Add(a, a, out)
		e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(a, 0), reg[s])
	}
	e.Ret()
	p := mustLoad(t, m)
	// Blocks are 1-D (the launch contract's Block), grids 3-D. 48 threads:
	// warp 1 is partial.
	mem := NewMemory()
	nt := 6 * 48
	out0 := mem.Alloc(4*nt*len(specials), 0)
	if _, err := p.Run(mem, Launch{Grid: [3]int{2, 3, 1}, Args: mustArgs(t, p, "k", 48, 0).Set("out", out0)}); err != nil {
		t.Fatal(err)
	}
	got := mustReadU32s(t, mem, out0, nt*len(specials))
	for c := 0; c < 6; c++ {
		cx, cy := c%2, c/2
		for th := 0; th < 48; th++ {
			lane := th % 32
			want := []uint32{uint32(th), 0, 0, 48, 1, 1, uint32(cx), uint32(cy), 0, 2, 3, 1,
				uint32(lane), uint32(th / 32), 2, 1<<lane - 1, uint32(uint64(1)<<(lane+1) - 1), ^uint32(0) << lane << 1, 1 << lane, 0, 0, 1}
			row := got[(c*48+th)*len(specials):]
			for k := range want {
				if row[k] != want[k] {
					t.Errorf("CTA %d thread %d: %s = %#x, want %#x", c, th, specials[k].Type(), row[k], want[k])
				}
			}
		}
	}
}

// %clock, %clock64 and %globaltimer count steps: they grow, and are the
// same run after run.
func TestClocksDeterministic(t *testing.T) {
	p := threadKernel(t, ptx.SM90, func(e *ptx.Entry, tid, res ptx.Reg) {
		c0, c1 := e.Reg(ptx.U32), e.Reg(ptx.U32)
		g := e.Reg(ptx.U64)
		e.Mov(c0, ptx.Clock)
		e.Mov(g, ptx.GlobalTimer)
		e.Mov(c1, ptx.Clock)
		e.Sub(res, c1, c0)
	})
	a, b := mustRunThreads(t, p, 64), mustRunThreads(t, p, 64)
	for i := range a {
		if a[i] == 0 || a[i] != b[i] {
			t.Fatalf("clock deltas %v vs %v", a, b)
		}
	}
}

// A profiled launch counts each instruction's warp issues: a uniform loop
// of five trips issues its body five times a warp, a divergent one as
// often as its longest lane, and the counts add up to the launch's.
func TestProfile(t *testing.T) {
	const uniform, divergent = 1001, 2002 // the loops' adds, by their immediates
	p := threadKernel(t, ptx.SM90, func(e *ptx.Entry, tid, res ptx.Reg) {
		i, n := e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.For(i, ptx.Imm(0), ptx.Imm(5), ptx.Imm(1), func() { e.Add(res, res, ptx.Imm(uniform)) })
		e.And(n, tid, ptx.Imm(7)) // 0..7 trips
		e.For(i, ptx.Imm(0), n, ptx.Imm(1), func() { e.Add(res, res, ptx.Imm(divergent)) })
	})
	mem := NewMemory()
	out := mem.Alloc(4*64, 0)
	l, err := p.Contract("k", 64, 0)
	if err != nil {
		t.Fatal(err)
	}
	var prof Profile
	st, err := p.Run(mem, Launch{Grid: [3]int{3}, Args: l.Args().Set("out", out), Profile: &prof})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]int64{uniform: 3 * 2 * 5, divergent: 3 * 2 * 7} // 3 CTAs of 2 warps; the longest lane's 7 trips
	n, found := 0, 0                                                  // body instructions so far; adds found
	for _, s := range p.kernels["k"].entry.Body {
		in, ok := s.(*ptx.Inst)
		if !ok {
			continue
		}
		if n >= len(prof.Issued) {
			t.Fatalf("%d counts for more instructions", len(prof.Issued))
		}
		if w, ok := want[lastImm(in)]; ok && in.Op == "add" {
			found++
			if got := prof.Issued[n]; got != w {
				t.Errorf("%s: issued %d times, want %d", in.Op, got, w)
			}
		}
		n++
	}
	if n != len(prof.Issued) || found != 2 {
		t.Fatalf("%d counts for %d instructions; %d of the 2 adds found", len(prof.Issued), n, found)
	}
	var sum int64
	for _, c := range prof.Issued {
		sum += c
	}
	if sum != st.WarpInstructions {
		t.Errorf("issued %d warp instructions in all, the launch %d", sum, st.WarpInstructions)
	}
}

// lastImm is in's last operand where it is an immediate, else -1.
func lastImm(in *ptx.Inst) int64 {
	if len(in.Args) > 0 {
		if imm, ok := in.Args[len(in.Args)-1].(ptx.Imm); ok {
			return int64(imm)
		}
	}
	return -1
}
