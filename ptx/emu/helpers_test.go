package emu

import (
	"errors"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// mustLoad builds m and loads its printed text.
func mustLoad(t *testing.T, m *ptx.Module) *Program {
	t.Helper()
	if err := m.Build(); err != nil {
		t.Fatal(err)
	}
	p, err := LoadModule(m)
	if err != nil {
		t.Fatalf("%v\n%s", err, ptx.Text(m))
	}
	return p
}

// mustArgs makes the arguments of entry in p, launched in CTAs of block
// threads (0: as the text declares) with sharedBytes of dynamic shared
// memory: the contract the text declares (Program.Contract).
func mustArgs(t testing.TB, p *Program, entry string, block, sharedBytes int) *ptx.Args {
	t.Helper()
	l, err := p.Contract(entry, block, sharedBytes)
	if err != nil {
		t.Fatal(err)
	}
	return l.Args()
}

// wantFault checks that err is a *Fault of kind whose message contains
// every string of want.
func wantFault(t *testing.T, err error, kind FaultKind, want ...string) *Fault {
	t.Helper()
	var f *Fault
	if !errors.As(err, &f) {
		t.Fatalf("error %v, want a %v", err, kind)
	}
	if f.Kind != kind {
		t.Fatalf("fault %v, want a %v", err, kind)
	}
	for _, w := range want {
		if !strings.Contains(f.Error(), w) {
			t.Errorf("fault %q does not mention %q", f.Error(), w)
		}
	}
	return f
}

// opKernel is a kernel in which thread i reads operand k from slot i of
// input array k (8-byte slots, the low bytes used), runs the instructions
// that emit writes, and stores the result to slot i of out.
type opKernel struct {
	dt     ptx.Type   // result type
	ts     []ptx.Type // operand types
	emit   func(e *ptx.Entry, d ptx.Reg, a []ptx.Reg)
	target ptx.Target
}

// run runs the kernel on one CTA of len(in[0]) threads and returns the
// results, as bits of dt.
func (k opKernel) run(t *testing.T, in ...[]uint64) []uint64 {
	t.Helper()
	target := k.target
	if target.Name == "" {
		target = ptx.SM90
	}
	m := ptx.NewModule(target)
	e := m.NewEntry("op")
	out := e.LdParam(e.Param("out", ptx.U64))
	var ins []ptx.Reg
	for i := range k.ts {
		ins = append(ins, e.LdParam(e.Param("in"+string(rune('0'+i)), ptx.U64)))
	}
	tid, off := e.Reg(ptx.U32), e.Reg(ptx.U64)
	e.Mov(tid, ptx.TidX)
	e.MulWide(off, tid, ptx.Imm(8))
	var a []ptx.Reg
	for i, typ := range k.ts {
		addr := e.Reg(ptx.U64)
		e.Add(addr, ins[i], off)
		r := e.Reg(typ)
		e.Ld(ptx.SpaceGlobal, r, ptx.At(addr, 0))
		a = append(a, r)
	}
	d := e.Reg(k.dt)
	k.emit(e, d, a)
	addr := e.Reg(ptx.U64)
	e.Add(addr, out, off)
	e.St(ptx.SpaceGlobal, k.dt, ptx.At(addr, 0), d)
	e.Ret()
	p := mustLoad(t, m)

	n := len(in[0])
	mem := NewMemory()
	out0 := mem.Alloc(8*n, 0)
	args := mustArgs(t, p, "op", n, 0).Set("out", out0)
	for i, v := range in {
		a := mem.Alloc(8*n, 0)
		if err := mem.WriteU64s(a, v); err != nil {
			t.Fatal(err)
		}
		args.Set("in"+string(rune('0'+i)), a)
	}
	if _, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: args}); err != nil {
		t.Fatal(err)
	}
	got, err := mem.ReadU64s(out0, n)
	if err != nil {
		t.Fatal(err)
	}
	mk := mask(k.dt.Bits())
	for i := range got {
		got[i] &= mk
	}
	return got
}

// emitOp emits op.mods d, a... .
func emitOp(op string, mods ...string) func(e *ptx.Entry, d ptx.Reg, a []ptx.Reg) {
	return func(e *ptx.Entry, d ptx.Reg, a []ptx.Reg) {
		args := []ptx.Operand{d}
		for _, r := range a {
			args = append(args, r)
		}
		e.Emit(op, mods, args...)
	}
}

// cols turns rows of operands into one column per operand.
func cols(rows [][]uint64) [][]uint64 {
	out := make([][]uint64, len(rows[0]))
	for _, r := range rows {
		for i, v := range r {
			out[i] = append(out[i], v)
		}
	}
	return out
}

// chunks runs cases in CTAs of at most 1024 threads.
func chunks(n int, f func(lo, hi int)) {
	for lo := 0; lo < n; lo += 1024 {
		f(lo, min(n, lo+1024))
	}
}

// mustReadU32s reads n words at addr, failing the test on an error or a
// short read: a test that ignores the error would compare nothing.
func mustReadU32s(t testing.TB, mem *Memory, addr uint64, n int) []uint32 {
	t.Helper()
	v, err := mem.ReadU32s(addr, n)
	if err != nil {
		t.Fatalf("reading %d words at %#x: %v", n, addr, err)
	}
	if len(v) != n {
		t.Fatalf("reading %d words at %#x: got %d", n, addr, len(v))
	}
	return v
}

// mustReadU64s is mustReadU32s for 8-byte words.
func mustReadU64s(t testing.TB, mem *Memory, addr uint64, n int) []uint64 {
	t.Helper()
	v, err := mem.ReadU64s(addr, n)
	if err != nil {
		t.Fatalf("reading %d u64s at %#x: %v", n, addr, err)
	}
	if len(v) != n {
		t.Fatalf("reading %d u64s at %#x: got %d", n, addr, len(v))
	}
	return v
}

// mustReadF32s is mustReadU32s for float32s.
func mustReadF32s(t testing.TB, mem *Memory, addr uint64, n int) []float32 {
	t.Helper()
	v, err := mem.ReadF32s(addr, n)
	if err != nil {
		t.Fatalf("reading %d floats at %#x: %v", n, addr, err)
	}
	if len(v) != n {
		t.Fatalf("reading %d floats at %#x: got %d", n, addr, len(v))
	}
	return v
}

// mustWriteU64s writes v at addr, failing the test on an error.
func mustWriteU64s(t testing.TB, mem *Memory, addr uint64, v []uint64) {
	t.Helper()
	if err := mem.WriteU64s(addr, v); err != nil {
		t.Fatalf("writing %d u64s at %#x: %v", len(v), addr, err)
	}
}
