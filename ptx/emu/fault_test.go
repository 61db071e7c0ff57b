package emu

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// memKernel: thread t loads a value of type typ at in+t*stride+off (space
// sp) and stores it to out[t].
func memKernel(t *testing.T, sp ptx.Space, vec int, stride, off int64) *Program {
	t.Helper()
	m := ptx.NewModule(ptx.SM90)
	var smem *ptx.Var
	if sp == ptx.SpaceShared {
		smem = m.Shared("buf", ptx.F32, 256, 16)
	}
	e := m.NewEntry("k")
	in := e.LdParam(e.Param("in", ptx.U64))
	tid, a := e.Reg(ptx.U32), e.Reg(ptx.U64)
	e.Mov(tid, ptx.TidX)
	e.MulWide(a, tid, ptx.Imm(stride))
	if sp == ptx.SpaceShared {
		base, a32 := e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.Mov(base, smem)
		e.Cvt(a32, a)
		e.Add(a32, a32, base)
		a = e.Reg(ptx.U64)
		e.Cvt(a, a32)
	} else {
		e.Add(a, a, in)
	}
	var d ptx.Operand = e.Reg(ptx.F32)
	if vec > 1 {
		v := ptx.Vec{}
		for range vec {
			v = append(v, e.Reg(ptx.F32))
		}
		d = v
	}
	if sp == ptx.SpaceShared {
		a32 := e.Reg(ptx.U32)
		e.Cvt(a32, a)
		e.Ld(sp, d, ptx.At(a32, off))
	} else {
		e.Ld(sp, d, ptx.At(a, off))
	}
	e.Ret()
	return mustLoad(t, m)
}

func TestFaultGlobalOutOfBounds(t *testing.T) {
	p := memKernel(t, ptx.SpaceGlobal, 1, 4, 0)
	mem := NewMemory()
	in := mem.AllocF32s(make([]float32, 40)) // 64 threads read 64 floats
	_, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 64, 0).Set("in", in)})
	f := wantFault(t, err, FaultMemory, "ld.global.f32", "outside every allocation", "0 bytes past the end of the 160-byte allocation")
	if f.Thread != [3]int{40, 0, 0} || f.Addr != in+160 || !f.HasAddr || f.Line == 0 {
		t.Errorf("fault %+v", f)
	}
	// Before the start too.
	p = memKernel(t, ptx.SpaceGlobal, 1, 4, -4)
	_, err = p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 32, 0).Set("in", in)})
	wantFault(t, err, FaultMemory, "4 bytes before")
}

func TestFaultMisalignedVector(t *testing.T) {
	// A row that starts 4 bytes into an allocation: v4 loads from it are
	// misaligned.
	p := memKernel(t, ptx.SpaceGlobal, 4, 16, 0)
	mem := NewMemory()
	in := mem.AllocF32s(make([]float32, 300))
	if _, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 32, 0).Set("in", in)}); err != nil {
		t.Fatalf("aligned: %v", err)
	}
	_, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 32, 0).Set("in", in+4)})
	f := wantFault(t, err, FaultAlign, "ld.global.v4.f32", "16-byte access must be aligned to 16 bytes")
	if f.Addr != in+4 || f.Thread[0] != 0 {
		t.Errorf("fault %+v", f)
	}
	// v2 needs 8 bytes.
	p = memKernel(t, ptx.SpaceGlobal, 2, 8, 4)
	_, err = p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 32, 0).Set("in", in)})
	wantFault(t, err, FaultAlign, "8-byte access")
}

func TestFaultShared(t *testing.T) {
	// 256 floats of static shared memory and 64 dynamic bytes: thread t
	// reads float t*2; 168 threads reach byte 1340 > 1024+64.
	p := memKernel(t, ptx.SpaceShared, 1, 8, 0)
	mem := NewMemory()
	_, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 168, 64).Set("in", 0)})
	f := wantFault(t, err, FaultMemory, "ld.shared.f32", "outside the CTA's 1088 bytes of shared memory")
	if f.Thread[0] != 136 || f.Addr != sharedWindow+1088 {
		t.Errorf("fault %+v", f)
	}
	// Misaligned shared v4.
	p = memKernel(t, ptx.SpaceShared, 4, 16, 8)
	_, err = p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 32, 0).Set("in", 0)})
	wantFault(t, err, FaultAlign, "ld.shared.v4.f32")
	// An offset used as an address (no shared base added) faults.
	m := ptx.NewModule(ptx.SM90)
	m.Shared("buf", ptx.U32, 64, 4)
	e := m.NewEntry("k")
	r := e.Reg(ptx.U32)
	e.Mov(r, ptx.Imm(8))
	e.Ld(ptx.SpaceShared, r, ptx.At(r, 0))
	e.Ret()
	p = mustLoad(t, m)
	_, err = p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 1, 0)})
	wantFault(t, err, FaultMemory)
}

func TestFaultCollectives(t *testing.T) {
	for _, c := range []struct {
		name string
		body func(e *ptx.Entry, tid, res ptx.Reg)
		want []string
	}{
		{"masks disagree", func(e *ptx.Entry, tid, res ptx.Reg) {
			mk := e.Reg(ptx.U32)
			e.Or(mk, tid, ptx.Imm(-4)) // lane 0: ...fc, lane 1: ...fd
			e.Shfl(ptx.ShflBfly, res, tid, ptx.Imm(1), ptx.Imm(31), mk)
		}, []string{"disagree on the member mask"}},
		{"lane not in its mask", func(e *ptx.Entry, tid, res ptx.Reg) {
			e.Redux("add", res, tid, ptx.Imm(0xFFFFFFFE))
		}, []string{"lane 0 executes the collective but is not in its member mask"}},
		{"lane exited", func(e *ptx.Entry, tid, res ptx.Reg) {
			p := e.Pred()
			e.Setp(p, ptx.EQ, tid, ptx.Imm(7))
			e.Guarded(p, func() { e.Exit() })
			e.Redux("add", res, tid, ptx.Imm(-1))
		}, []string{"never arrive", "lanes {7} exited"}},
		{"lane skips by guard", func(e *ptx.Entry, tid, res ptx.Reg) {
			p := e.Pred()
			e.Setp(p, ptx.NE, tid, ptx.Imm(3))
			e.Guarded(p, func() { e.Redux("add", res, tid, ptx.Imm(-1)) })
		}, []string{"lanes {3} are in the member mask", "guard false"}},
		{"lanes at another collective", func(e *ptx.Entry, tid, res ptx.Reg) {
			p := e.Pred()
			e.Setp(p, ptx.LT, tid, ptx.Imm(16))
			e.IfElse(p, func() {
				e.Redux("add", res, tid, ptx.Imm(-1))
			}, func() {
				e.Redux("or", res, tid, ptx.Imm(-1))
			})
		}, []string{"never arrive", "lanes {16-31} wait at collective", "redux.sync.or"}},
		{"warp sync with exited lanes", func(e *ptx.Entry, tid, res ptx.Reg) {
			p := e.Pred()
			e.Setp(p, ptx.GE, tid, ptx.Imm(30))
			e.Guarded(p, func() { e.Exit() })
			e.BarWarpSync(ptx.Imm(-1))
		}, []string{"bar.warp.sync", "lanes {30-31} exited"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := threadKernel(t, ptx.SM90, c.body)
			_, err := runThreads(t, p, 32)
			wantFault(t, err, FaultCollective, c.want...)
		})
	}
}

func TestFaultBarriers(t *testing.T) {
	for _, c := range []struct {
		name string
		body func(e *ptx.Entry, tid, res ptx.Reg)
		want []string
	}{
		{"some warps exit first", func(e *ptx.Entry, tid, res ptx.Reg) {
			p := e.Pred()
			e.Setp(p, ptx.LT, tid, ptx.Imm(32))
			e.Guarded(p, func() { e.Exit() })
			e.BarSync(0)
		}, []string{"reached after 32 threads of the CTA exited", "warp 0 lanes {0-31}"}},
		{"threads exit while others wait", func(e *ptx.Entry, tid, res ptx.Reg) {
			p := e.Pred()
			e.Setp(p, ptx.LT, tid, ptx.Imm(64))
			e.Guarded(p, func() { e.BarSync(0) })
		}, []string{"barrier 0 never completes", "64 of 96 threads arrived", "warp 2 exited"}},
		{"different barrier instructions", func(e *ptx.Entry, tid, res ptx.Reg) {
			p := e.Pred()
			e.Setp(p, ptx.LT, tid, ptx.Imm(32))
			e.IfElse(p, func() { e.BarSync(0) }, func() { e.BarSync(0) })
		}, []string{"threads wait at different instructions for barrier 0"}},
		{"divergent barrier in a warp", func(e *ptx.Entry, tid, res ptx.Reg) {
			p := e.Pred()
			e.Setp(p, ptx.LT, tid, ptx.Imm(5))
			e.IfElse(p, func() { e.BarSync(0) }, func() { e.BarSync(1) })
		}, []string{"the warp's other lanes never reach it", "lanes {5-31} wait at barrier"}},
		{"guard splits a warp", func(e *ptx.Entry, tid, res ptx.Reg) {
			p := e.Pred()
			e.Setp(p, ptx.LT, tid, ptx.Imm(5))
			e.Guarded(p, func() { e.BarSync(0) })
		}, []string{"guard is false for lanes {5-31}"}},
		{"barriers of different ids", func(e *ptx.Entry, tid, res ptx.Reg) {
			p := e.Pred()
			e.Setp(p, ptx.LT, tid, ptx.Imm(32))
			e.IfElse(p, func() { e.BarSync(1) }, func() { e.BarSync(2) })
		}, []string{"barrier 1 never completes", "32 of 96 threads arrived", "bar.sync 2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := threadKernel(t, ptx.SM90, c.body)
			_, err := runThreads(t, p, 96)
			wantFault(t, err, FaultBarrier, c.want...)
		})
	}
}

// A named barrier with a thread count synchronises only that many threads.
func TestNamedBarrierWithCount(t *testing.T) {
	p := threadKernel(t, ptx.SM90, func(e *ptx.Entry, tid, res ptx.Reg) {
		p := e.Pred()
		e.Setp(p, ptx.LT, tid, ptx.Imm(64))
		e.If(p, func() {
			e.Emit("bar", []string{"sync"}, ptx.Imm(1), ptx.Imm(64))
			e.Mov(res, ptx.Imm(1))
		})
	})
	got := mustRunThreads(t, p, 96)
	if got[0] != 1 || got[63] != 1 || got[64] != 0 {
		t.Errorf("got %v", got)
	}
}

func TestFaultStepBudget(t *testing.T) {
	m := ptx.NewModule(ptx.SM90)
	e := m.NewEntry("k")
	top := e.NewLabel("forever")
	e.Place(top)
	e.Bra(top)
	p := mustLoad(t, m)
	_, err := p.Run(NewMemory(), Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 32, 0), MaxSteps: 1000})
	wantFault(t, err, FaultSteps, "1000 warp instructions", "bra")
}

// Cluster faults: mapa of something that is not a shared address or to a
// rank outside the cluster, a .shared::cta access to a mapa address, a
// grid that is not a whole number of clusters, and .explicitcluster
// without a shape.
func TestClusterFaults(t *testing.T) {
	m := ptx.NewModule(ptx.SM90)
	buf := m.Shared("buf", ptx.U32, 16, 4)
	for _, tc := range []struct {
		name  string
		build func(e *ptx.Entry, d ptx.Reg)
	}{
		{"zero", func(e *ptx.Entry, d ptx.Reg) {
			e.Mov(d, ptx.Imm(0))
			e.Mapa(ptx.SpaceSharedCluster, d, d, ptx.Imm(0))
		}},
		{"rank", func(e *ptx.Entry, d ptx.Reg) { e.Mapa(ptx.SpaceSharedCluster, d, buf, ptx.Imm(1)) }},
		{"cta", func(e *ptx.Entry, d ptx.Reg) {
			e.Mapa(ptx.SpaceSharedCluster, d, buf, ptx.Imm(0))
			e.Ld(ptx.SpaceSharedCTA, d, ptx.At(d, 0))
		}},
	} {
		e := m.NewEntry(tc.name)
		tc.build(e, e.Reg(ptx.U32))
		e.Ret()
	}
	e := m.NewEntry("c")
	e.ReqNCTAPerCluster = ptx.Dim3{2}
	e.Ret()
	e = m.NewEntry("explicit_launch")
	e.ExplicitCluster = true
	e.Ret()
	p := mustLoad(t, m)
	for _, k := range []struct{ entry, want string }{
		{"zero", "mapa of an address outside the shared window"},
		{"rank", "mapa to CTA rank 1: the cluster has 1 CTAs"},
		{"cta", ".shared::cta access to a .shared::cluster address"},
	} {
		_, err := p.Run(NewMemory(), Launch{Grid: [3]int{1}, Args: mustArgs(t, p, k.entry, 32, 0)})
		wantFault(t, err, FaultMemory, k.want, "kernel "+k.entry)
	}
	c := mustArgs(t, p, "c", 32, 0)
	if n := c.Launch().Cluster; n != 2 {
		t.Fatalf("the contract of c has clusters of %d CTAs, want the 2 its text declares", n)
	}
	if _, err := p.Run(NewMemory(), Launch{Grid: [3]int{4}, Args: c}); err != nil {
		t.Errorf("two clusters of 2: %v", err)
	}
	_, err := p.Run(NewMemory(), Launch{Grid: [3]int{3}, Args: c})
	if err == nil || !strings.Contains(err.Error(), "grid [3 1 1] is not a whole number of clusters of 2 CTAs") {
		t.Errorf("cluster launch of 3 CTAs: %v", err)
	}
	_, err = p.Run(NewMemory(), Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "explicit_launch", 32, 0)})
	if err == nil || !strings.Contains(err.Error(), ".explicitcluster without .reqnctapercluster") {
		t.Errorf(".explicitcluster launch: %v", err)
	}
}

// A bad launch is a plain error, raised before anything runs: a bad
// contract, one that is not the entry's, arguments that Args.Check refuses,
// limits a driver would enforce.
func TestLaunchErrors(t *testing.T) {
	m := ptx.NewModule(ptx.SM90)
	m.Shared("big", ptx.B8, 40<<10, 16)
	e := m.NewEntry("k")
	e.ReqNTID = ptx.Dim3{64}
	e.Param("x", ptx.U64).PtrAlign = 4
	e.Param("n", ptx.U32)
	r := e.Reg(ptx.U32)
	e.Mov(r, m.Vars[0])
	e.Ret()
	e = m.NewEntry("upto64")
	e.MaxNTID = ptx.Dim3{64}
	e.Ret()
	p := mustLoad(t, m)
	mem := NewMemory()
	x := mem.Alloc(4, 0)

	// .maxntid bounds the block; block 0 takes it.
	if _, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "upto64", 128, 0)}); err == nil ||
		!strings.Contains(err.Error(), "a block of 128 threads, above the entry's .maxntid [64 1 1]") {
		t.Errorf("a block above .maxntid: %v", err)
	}
	upto := mustArgs(t, p, "upto64", 0, 0)
	if _, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: upto}); err != nil || upto.Launch().Block != 64 {
		t.Errorf("the block .maxntid declares (%d threads): %v", upto.Launch().Block, err)
	}

	good, err := p.Contract("k", 0, 0) // the block the text declares
	if err != nil {
		t.Fatal(err)
	}
	if good.Block != 64 || good.Param("x") == nil || good.Param("x").PtrAlign != 4 {
		t.Fatalf("contract %v: want 64 threads and x 4-byte aligned, as the text declares", good)
	}
	if _, err := p.Run(mem, Launch{Grid: [3]int{2}, Args: good.Args().Set("x", x).Set("n", 1)}); err != nil {
		t.Fatalf("the good launch: %v", err)
	}
	// edited is good's contract changed by edit, with good arguments.
	edited := func(edit func(*ptx.Launch)) *ptx.Args {
		c := good
		c.Params = slices.Clone(good.Params)
		edit(&c)
		return c.Args().Set("x", x).Set("n", 1)
	}
	for _, c := range []struct {
		name string
		l    Launch
		want string
	}{
		{"no arguments", Launch{Grid: [3]int{1}}, "a launch without arguments"},
		{"not set", Launch{Grid: [3]int{1}, Args: good.Args().Set("x", x)}, "n is not set"},
		{"unknown name", Launch{Grid: [3]int{1}, Args: good.Args().Set("x", x).Set("n", 1).Set("y", 1)}, `no parameter "y"`},
		{"too wide", Launch{Grid: [3]int{1}, Args: good.Args().Set("x", x).Set("n", 1<<32)}, "does not fit its .u32"},
		{"misaligned", Launch{Grid: [3]int{1}, Args: good.Args().Set("x", x+2).Set("n", 1)}, "is not 4-byte aligned"},
		{"bad contract", Launch{Grid: [3]int{1}, Args: edited(func(c *ptx.Launch) { c.Block = 0 })}, "block of 0 threads"},
		{"no such kernel", Launch{Grid: [3]int{1}, Args: edited(func(c *ptx.Launch) { c.Entry = "nosuch" })}, `no kernel "nosuch"`},
		{"other block", Launch{Grid: [3]int{1}, Args: edited(func(c *ptx.Launch) { c.Block = 32 })}, "a block of 32 threads, the entry's .reqntid is [64 1 1]"},
		{"other name", Launch{Grid: [3]int{1}, Args: edited(func(c *ptx.Launch) { c.Params[1].Name = "count" })},
			"parameters (x .u64 .ptr.global.align 4, count .u32), the entry's are (x .u64 .ptr.global.align 4, n .u32)"},
		{"other type", Launch{Grid: [3]int{1}, Args: edited(func(c *ptx.Launch) { c.Params[1].T = ptx.S32 })}, "n .s32), the entry's are"},
		{"other alignment", Launch{Grid: [3]int{1}, Args: edited(func(c *ptx.Launch) { c.Params[0].PtrAlign = 16 })}, "(x .u64 .ptr.global.align 16, n .u32), the entry's"},
		{"other order", Launch{Grid: [3]int{1}, Args: edited(func(c *ptx.Launch) { slices.Reverse(c.Params) })}, "parameters (n .u32, x .u64"},
		{"other cluster", Launch{Grid: [3]int{2}, Args: edited(func(c *ptx.Launch) { c.Cluster = 2 })}, "clusters of 2 CTAs, the entry's .reqnctapercluster makes 1"},
		{"empty grid", Launch{Grid: [3]int{0}, Args: good.Args().Set("x", x).Set("n", 1)}, "must be positive"},
		{"too much shared memory", Launch{Grid: [3]int{1}, Args: edited(func(c *ptx.Launch) { c.SharedBytes = 200 << 10 })}, "at most"},
	} {
		_, err := p.Run(mem, c.l)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		var f *Fault
		if errors.As(err, &f) {
			t.Errorf("%s: a bad launch is not a Fault: %v", c.name, err)
		}
	}
	if _, err := p.Contract("k", 32, 0); err == nil || !strings.Contains(err.Error(), "a block of 32 threads, but the text declares .reqntid 64") {
		t.Errorf("a contract against the text's .reqntid: %v", err)
	}
	if _, err := p.Contract("nosuch", 32, 0); err == nil || !strings.Contains(err.Error(), `no entry "nosuch"`) {
		t.Errorf("the contract of no entry: %v", err)
	}
}

// An instruction the interpreter lacks loads, and faults only when a
// thread executes it.
func TestUnsupportedFaultsWhenExecuted(t *testing.T) {
	m := ptx.NewModule(ptx.SM90)
	e := m.NewEntry("k")
	a := e.LdParam(e.Param("a", ptx.U64))
	f := e.Reg(ptx.F32)
	e.Mov(f, ptx.Float(1))
	p := e.Pred()
	e.Setp(p, ptx.EQ, a, ptx.Imm(0))
	e.Guarded(p.Not(), func() { e.Atom(ptx.SpaceGlobal, "max", f, ptx.At(a, 0), f) })
	e.Ret()
	prog := mustLoad(t, m)
	if _, err := prog.Run(NewMemory(), Launch{Grid: [3]int{1}, Args: mustArgs(t, prog, "k", 32, 0).Set("a", 0)}); err != nil {
		t.Fatalf("not executed, yet: %v", err)
	}
	mem := NewMemory()
	_, err := prog.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, prog, "k", 32, 0).Set("a", mem.Alloc(4, 0))})
	wantFault(t, err, FaultUnsupported, "atomic max on .f32 is not supported by the interpreter yet")
}
