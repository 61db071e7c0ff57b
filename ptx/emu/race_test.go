package emu

import (
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// neighbourKernel: each thread writes buf[tid], then (after sync, if any)
// reads buf[(tid+shift) % n]. sync emits what separates the two.
func neighbourKernel(t *testing.T, n, shift int, sync func(e *ptx.Entry)) *Program {
	t.Helper()
	m := ptx.NewModule(ptx.SM90)
	buf := m.Shared("buf", ptx.U32, n, 4)
	e := m.NewEntry("k")
	out := e.LdParam(e.Param("out", ptx.U64))
	tid, base, a, j, v := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
	e.Mov(tid, ptx.TidX)
	e.Mov(base, buf)
	e.Mad(a, tid, ptx.Imm(4), base)
	e.St(ptx.SpaceShared, ptx.U32, ptx.At(a, 0), tid)
	sync(e)
	e.Add(j, tid, ptx.Imm(shift))
	e.Rem(j, j, ptx.Imm(n))
	e.Mad(a, j, ptx.Imm(4), base)
	e.Ld(ptx.SpaceShared, v, ptx.At(a, 0))
	storeAt(e, out, tid, v)
	e.Ret()
	return mustLoad(t, m)
}

func runRace(t *testing.T, p *Program, n int) error {
	t.Helper()
	mem := NewMemory()
	out := mem.Alloc(4*n, 0)
	l, err := p.Contract("k", n, 0)
	if err != nil {
		return err
	}
	_, err = p.Run(mem, Launch{Grid: [3]int{1}, Args: l.Args().Set("out", out), RaceCheck: true})
	return err
}

// The acceptance test: a kernel with a missing bar.sync is caught.
func TestRaceMissingBarrier(t *testing.T) {
	p := neighbourKernel(t, 128, 32, func(*ptx.Entry) {})
	err := runRace(t, p, 128)
	f := wantFault(t, err, FaultRace, "ld.shared.u32", "st.shared.u32", "with no barrier between them")
	if !f.HasAddr {
		t.Errorf("no address: %+v", f)
	}
	// Deterministic: the same report every run.
	if err2 := runRace(t, p, 128); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("second run: %v\nfirst: %v", err2, err)
	}
	// Without the race check the same kernel runs.
	mem := NewMemory()
	if _, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 128, 0).Set("out", mem.Alloc(512, 0))}); err != nil {
		t.Fatal(err)
	}
}

// With the barrier the race check is quiet, and every thread reads its
// neighbour's write: the barrier really ordered the two.
func TestRaceWithBarrierIsClean(t *testing.T) {
	p := neighbourKernel(t, 128, 32, func(e *ptx.Entry) { e.BarSync(0) })
	if err := runRace(t, p, 128); err != nil {
		t.Fatal(err)
	}
	checkNeighbours(t, p, 128, 32)
}

// checkNeighbours runs a neighbourKernel of n threads with the race check on
// and requires out[tid] = (tid+shift) % n, what its neighbour wrote.
func checkNeighbours(t *testing.T, p *Program, n, shift int) {
	t.Helper()
	mem := NewMemory()
	out := mem.Alloc(4*n, 0)
	if _, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", n, 0).Set("out", out), RaceCheck: true}); err != nil {
		t.Fatal(err)
	}
	for tid, v := range mustReadU32s(t, mem, out, n) {
		if want := uint32((tid + shift) % n); v != want {
			t.Errorf("thread %d read %d, want %d (its neighbour's write)", tid, v, want)
		}
	}
}

// The read comes first, the write after it (write-after-read).
func TestRaceWriteAfterRead(t *testing.T) {
	m := ptx.NewModule(ptx.SM90)
	buf := m.Shared("buf", ptx.U32, 64, 4)
	e := m.NewEntry("k")
	tid, base, a, v := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
	e.Mov(tid, ptx.TidX)
	e.Mov(base, buf)
	e.Ld(ptx.SpaceShared, v, ptx.At(base, 0)) // everyone reads buf[0]
	e.BarSync(0)
	e.Ld(ptx.SpaceShared, v, ptx.At(base, 4)) // everyone reads buf[1]...
	p := e.Pred()
	e.Setp(p, ptx.EQ, tid, ptx.Imm(40))
	e.Mad(a, tid, ptx.Imm(0), base)
	e.Guarded(p, func() { e.St(ptx.SpaceShared, ptx.U32, ptx.At(a, 4), tid) }) // ...and thread 40 writes it
	e.Ret()
	pr := mustLoad(t, m)
	_, err := pr.Run(NewMemory(), Launch{Grid: [3]int{1}, Args: mustArgs(t, pr, "k", 64, 0), RaceCheck: true})
	wantFault(t, err, FaultRace, "writes shared memory", "reads at line")
}

// Threads of one warp need bar.warp.sync to see each other's writes.
func TestRaceWithinWarp(t *testing.T) {
	p := neighbourKernel(t, 32, 1, func(*ptx.Entry) {})
	wantFault(t, runRace(t, p, 32), FaultRace)
	p = neighbourKernel(t, 32, 1, func(e *ptx.Entry) { e.BarWarpSync(ptx.Imm(-1)) })
	if err := runRace(t, p, 32); err != nil {
		t.Fatal(err)
	}
	checkNeighbours(t, p, 32, 1)
	// A warp sync orders its own warp only.
	p = neighbourKernel(t, 64, 32, func(e *ptx.Entry) { e.BarWarpSync(ptx.Imm(-1)) })
	wantFault(t, runRace(t, p, 64), FaultRace)
}

// Atomics never race with each other; a histogram of atom.shared.add
// followed by a barrier and plain reads is clean.
func TestRaceAtomicsAreClean(t *testing.T) {
	m := ptx.NewModule(ptx.SM90)
	hist := m.Shared("hist", ptx.U32, 8, 4)
	e := m.NewEntry("k")
	out := e.LdParam(e.Param("out", ptx.U64))
	tid, base, a, old, bin := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
	e.Mov(tid, ptx.TidX)
	e.Mov(base, hist)
	e.And(bin, tid, ptx.Imm(7))
	e.Mad(a, bin, ptx.Imm(4), base)
	first := e.Pred() // shared memory starts as garbage: threads 0-7 clear the bins
	e.Setp(first, ptx.LT, tid, ptx.Imm(8))
	e.If(first, func() { e.St(ptx.SpaceShared, ptx.U32, ptx.At(a, 0), ptx.Imm(0)) })
	e.BarSync(0)
	e.Atom(ptx.SpaceShared, "add", old, ptx.At(a, 0), ptx.Imm(1))
	e.Red(ptx.SpaceShared, "add", ptx.U32, ptx.At(a, 0), ptx.Imm(2))
	e.BarSync(0)
	e.Ld(ptx.SpaceShared, old, ptx.At(a, 0))
	storeAt(e, out, tid, old)
	e.Ret()
	p := mustLoad(t, m)
	mem := NewMemory()
	o := mem.Alloc(4*256, 0)
	if _, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 256, 0).Set("out", o), RaceCheck: true}); err != nil {
		t.Fatal(err)
	}
	got := mustReadU32s(t, mem, o, 256)
	for i, v := range got {
		if v != 96 { // 32 threads per bin, 1+2 each
			t.Fatalf("thread %d: %d", i, v)
		}
	}
	// A plain read racing with the atomics is a race.
	m2 := ptx.NewModule(ptx.SM90)
	hist2 := m2.Shared("hist", ptx.U32, 8, 4)
	e2 := m2.NewEntry("k")
	base2, v2 := e2.Reg(ptx.U32), e2.Reg(ptx.U32)
	e2.Mov(base2, hist2)
	e2.Red(ptx.SpaceShared, "add", ptx.U32, ptx.At(base2, 0), ptx.Imm(1))
	e2.Ld(ptx.SpaceShared, v2, ptx.At(base2, 0))
	e2.Ret()
	p2 := mustLoad(t, m2)
	_, err := p2.Run(NewMemory(), Launch{Grid: [3]int{1}, Args: mustArgs(t, p2, "k", 64, 0), RaceCheck: true})
	wantFault(t, err, FaultRace, "atomically updates")
}

// Many threads writing one word, even the same value, race.
func TestRaceSameWordWriters(t *testing.T) {
	m := ptx.NewModule(ptx.SM90)
	flag := m.Shared("flag", ptx.U32, 1, 4)
	e := m.NewEntry("k")
	base := e.Reg(ptx.U32)
	e.Mov(base, flag)
	e.St(ptx.SpaceShared, ptx.U32, ptx.At(base, 0), ptx.Imm(1))
	e.Ret()
	p := mustLoad(t, m)
	_, err := p.Run(NewMemory(), Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 2, 0), RaceCheck: true})
	f := wantFault(t, err, FaultRace, "thread (1,0,0)", "writes shared memory that thread (0,0,0) [warp 0 lane 0] writes")
	if f.Lane != 1 {
		t.Errorf("fault %+v", f)
	}
}

// halfKernel: thread tid stores a value of type typ (size bytes) at
// byte offset size*tid of a shared buffer, then reads back the whole first
// word, after a barrier.
func halfKernel(t *testing.T, typ ptx.Type, size int) *Program {
	t.Helper()
	m := ptx.NewModule(ptx.SM90)
	buf := m.Shared("buf", ptx.U32, 16, 4)
	e := m.NewEntry("k")
	out := e.LdParam(e.Param("out", ptx.U64))
	tid, base, a, w := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
	v := e.Reg(typ)
	e.Mov(tid, ptx.TidX)
	e.Mov(base, buf)
	e.Mad(a, tid, ptx.Imm(int64(size)), base)
	e.Cvt(v, tid)
	e.St(ptx.SpaceShared, typ, ptx.At(a, 0), v)
	e.BarSync(0)
	e.Ld(ptx.SpaceShared, w, ptx.At(base, 0))
	storeAt(e, out, tid, w)
	e.Ret()
	return mustLoad(t, m)
}

// Two threads writing the two 16-bit halves of one word do not race (16-bit
// scores in shared memory are stored so); two writing the two bytes of one
// 2-byte grain are reported, the detector's documented limit.
func TestRaceSubWord(t *testing.T) {
	if err := runRace(t, halfKernel(t, ptx.U16, 2), 2); err != nil {
		t.Errorf("16-bit halves of a word: %v", err)
	}
	mem := NewMemory()
	p := halfKernel(t, ptx.U16, 2)
	out := mem.Alloc(8, 0)
	if _, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 2, 0).Set("out", out), RaceCheck: true}); err != nil {
		t.Fatal(err)
	}
	if got := mustReadU32s(t, mem, out, 2); got[0] != 0x00010000 || got[1] != 0x00010000 {
		t.Errorf("read back %#x, want both halves 0x00010000", got)
	}
	wantFault(t, runRace(t, halfKernel(t, ptx.U8, 1), 2), FaultRace, "st.shared.u8", "with no barrier between them")
}
