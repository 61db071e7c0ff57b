package emu

import (
	"runtime"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// A warp's registers are made at their first use: a co-resident launch of
// many CTAs of a kernel that declares thousands of registers and uses few
// holds only those. (All of them were made with each CTA: a fuzz case of
// four rows over five clusters of 16, 320 CTAs, took 6.6 GB, and the
// fuzzing process died.)
func TestRegistersOnFirstUse(t *testing.T) {
	const declared, ctas = 8192, 64
	p := clusterKernel(t, 2, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) {
		never := e.Pred()
		e.Setp(never, ptx.GT, tid, ptx.Imm(1<<20))
		e.If(never, func() { // no thread takes this path
			for i := range declared {
				r := e.Reg(ptx.U32)
				e.Add(r, tid, ptx.Imm(int64(i)))
			}
		})
		// Every register read before it is written is garbage, on any page.
		g := e.Reg(ptx.U32)
		e.Add(g, tid, ptx.Imm(0))
		ctaid, v := e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.Mov(ctaid, ptx.CtaIDX)
		e.Mad(v, ctaid, ptx.Imm(32), tid)
		storeAt(e, out, v, v)
	})
	mem := NewMemory()
	out := mem.Alloc(4*32*ctas, 0)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := p.Run(mem, Launch{Grid: [3]int{ctas}, Args: mustArgs(t, p, "k", 32, 0).Set("out", out), CoResident: true})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := mem.ReadU32s(out, 32*ctas)
	for i, v := range got {
		if v != uint32(i) {
			t.Fatalf("out[%d] = %d", i, v)
		}
	}
	// Every register of every warp would be 64 x 8192 x 256 bytes = 128 MB.
	if a := after.TotalAlloc - before.TotalAlloc; a > 16<<20 {
		t.Errorf("the launch allocated %d MB, want the registers its warps use only", a>>20)
	}
}

// regs: a register not yet written is garbage, wherever it is, and again
// after a reset; pages are made only where a register is touched.
func TestRegs(t *testing.T) {
	r := newRegs(3*regPageSize + 1)
	if len(r.pages) != 4 {
		t.Fatalf("%d pages for %d registers", len(r.pages), 3*regPageSize+1)
	}
	if *r.at(3 * regPageSize) != garbageReg || *r.at(5) != garbageReg {
		t.Error("a register not written is not garbage")
	}
	r.at(5)[7] = 42
	made := 0
	for _, p := range r.pages {
		if p != nil {
			made++
		}
	}
	if made != 2 {
		t.Errorf("%d pages made, want the 2 touched", made)
	}
	r.reset()
	if *r.at(5) != garbageReg {
		t.Error("a register after reset is not garbage")
	}
}
