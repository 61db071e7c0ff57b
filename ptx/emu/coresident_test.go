package emu

import (
	"slices"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// This file tests co-resident launches (Launch.CoResident): clusters that
// wait on each other through global memory, spin loops that never end,
// and ordinary cluster kernels, which must come out as they do one
// cluster after another.

// spinRounds is the rounds of the handshake kernel.
const spinRounds = 3

// handshakeKernel: a grid of two clusters of 2 CTAs of 64 threads. Thread
// 0 of each cluster's rank-0 CTA starts from v = cluster id + 1 and, for
// each round r = 1..spinRounds, publishes r<<32 | v into its slot of
// parity r%2 (slots[2*(r%2) + cluster], atom.exch.b64, then fence.acq_rel.gpu),
// spins on the other cluster's slot of that parity (atom.or.b64 with 0)
// until it carries the tag r, and goes on with v = (3v + other's v + r)
// mod 2^32. It stores v and the cluster id with st.global.v2.u32 to
// out[2*cluster]. Every thread of every CTA adds 1 to count (red.add.u32);
// each CTA's thread 0 takes a ticket (atom.add.u32) and stores it to
// tickets[ctaid] (st.global.u32).
func handshakeKernel(t *testing.T) *Program {
	t.Helper()
	m := ptx.NewModule(ptx.SM90)
	e := m.NewEntry("k")
	e.ReqNCTAPerCluster = ptx.Dim3{2}
	slots := e.LdParam(e.Param("slots", ptx.U64))
	out := e.LdParam(e.Param("out", ptx.U64))
	count := e.LdParam(e.Param("count", ptx.U64))
	tickets := e.LdParam(e.Param("tickets", ptx.U64))
	tid, rank, cid, ctaid := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
	e.Mov(tid, ptx.TidX)
	e.Mov(rank, ptx.ClusterCtaRank)
	e.Mov(cid, ptx.ClusterIDX)
	e.Mov(ctaid, ptx.CtaIDX)
	e.Red(ptx.SpaceGlobal, "add", ptx.U32, ptx.At(count, 0), ptx.Imm(1))
	first := e.Pred()
	e.Setp(first, ptx.EQ, tid, ptx.Imm(0))
	e.If(first, func() {
		ticket := e.Reg(ptx.U32)
		e.Atom(ptx.SpaceGlobal, "add", ticket, ptx.At(count, 4), ptx.Imm(1))
		storeAt(e, tickets, ctaid, ticket)
	})
	lead, r0 := e.Pred(), e.Pred()
	e.Setp(r0, ptx.EQ, rank, ptx.Imm(0))
	e.AndPred(lead, first, r0)
	e.If(lead, func() {
		other := e.Reg(ptx.U32)
		e.Xor(other, cid, ptx.Imm(1))
		v := e.Reg(ptx.U64)
		e.Cvt(v, cid)
		e.Add(v, v, ptx.Imm(1))
		for r := int64(1); r <= spinRounds; r++ {
			slot := func(c ptx.Reg) ptx.Reg {
				i, a := e.Reg(ptx.U32), e.Reg(ptx.U64)
				e.Add(i, c, ptx.Imm(2*(r%2)))
				e.MulWide(a, i, ptx.Imm(8))
				e.Add(a, a, slots)
				return a
			}
			mine, theirs := slot(cid), slot(other)
			tagged, old := e.Reg(ptx.B64), e.Reg(ptx.B64)
			e.Or(tagged, v, ptx.Imm(r<<32))
			e.Atom(ptx.SpaceGlobal, "exch", old, ptx.At(mine, 0), tagged)
			e.Fence(ptx.SemAcqRel, ptx.ScopeGPU)
			got, tag := e.Reg(ptx.B64), e.Reg(ptx.U64)
			e.DoWhile(func() {
				e.Atom(ptx.SpaceGlobal, "or", got, ptx.At(theirs, 0), ptx.Imm(0))
				e.Shr(tag, got, ptx.Imm(32))
			}, func() ptx.Pred {
				p := e.Pred()
				e.Setp(p, ptx.NE, tag, ptx.Imm(r))
				return p
			})
			e.Fence(ptx.SemAcqRel, ptx.ScopeGPU)
			o := e.Reg(ptx.U64)
			e.And(o, got, ptx.Imm(0xffffffff))
			e.Mad(v, v, ptx.Imm(3), o)
			e.Add(v, v, ptx.Imm(r))
			e.And(v, v, ptx.Imm(0xffffffff))
		}
		lo, a := e.Reg(ptx.U32), e.Reg(ptx.U64)
		e.Cvt(lo, v)
		e.MulWide(a, cid, ptx.Imm(8))
		e.Add(a, a, out)
		e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(a, 0), ptx.Vec{lo, cid})
	})
	e.Ret()
	return mustLoad(t, m)
}

// handshakeWant is what handshakeKernel computes: v for clusters 0 and 1.
func handshakeWant() [2]uint32 {
	v := [2]uint64{1, 2}
	for r := uint64(1); r <= spinRounds; r++ {
		v = [2]uint64{(3*v[0] + v[1] + r) & 0xffffffff, (3*v[1] + v[0] + r) & 0xffffffff}
	}
	return [2]uint32{uint32(v[0]), uint32(v[1])}
}

// runHandshake runs handshakeKernel on its two clusters and returns out,
// count and the tickets.
func runHandshake(t *testing.T, p *Program, l Launch) (out []uint32, count uint32, tickets []uint32, err error) {
	t.Helper()
	mem := NewMemory()
	slots := mem.Alloc(8*4, 0)
	o := mem.Alloc(4*4, 0)
	c := mem.Alloc(8, 0)
	tk := mem.Alloc(4*4, 0)
	l.Grid = [3]int{4}
	l.Args = mustArgs(t, p, "k", 64, 0).Set("slots", slots).Set("out", o).Set("count", c).Set("tickets", tk)
	_, err = p.Run(mem, l)
	return mustReadU32s(t, mem, o, 4), mustReadU32s(t, mem, c, 1)[0], mustReadU32s(t, mem, tk, 4), err
}

// Two clusters that hand values back and forth through global memory for
// three rounds: co-resident, they finish with the exact values for every
// seed; one after another, the first spins until its steps run out.
func TestCoResidentHandshake(t *testing.T) {
	p := handshakeKernel(t)
	text := ptx.Text(p.Module)
	for _, want := range []string{"atom.global.exch.b64", "atom.global.or.b64", "atom.global.add.u32", "red.global.add.u32",
		"fence.acq_rel.gpu", "st.global.v2.u32"} {
		if !strings.Contains(text, want) {
			t.Errorf("the kernel's text has no %s:\n%s", want, text)
		}
	}
	w := handshakeWant()
	for _, seed := range seeds {
		out, count, tickets, err := runHandshake(t, p, Launch{Seed: seed, CoResident: true, MaxSteps: 1 << 20, RaceCheck: true})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if want := []uint32{w[0], 0, w[1], 1}; !slices.Equal(out, want) {
			t.Errorf("seed %d: out %v, want %v", seed, out, want)
		}
		if count != 4*64 {
			t.Errorf("seed %d: count %d, want %d", seed, count, 4*64)
		}
		if s := slices.Sorted(slices.Values(tickets)); !slices.Equal(s, []uint32{0, 1, 2, 3}) {
			t.Errorf("seed %d: tickets %v, want a permutation of 0..3", seed, tickets)
		}
	}
	_, _, _, err := runHandshake(t, p, Launch{Seed: 1, MaxSteps: 5000})
	if f := wantFault(t, err, FaultSteps, "step budget of 5000"); f.CTA != [3]int{0, 0, 0} {
		t.Errorf("the fault is in CTA %v, want the first cluster's rank 0 (0,0,0)", f.CTA)
	}
}

// The same seed gives the same co-resident run, stats included; the
// schedule is not the one-after-another's, and is drawn from the seed.
func TestCoResidentDeterministic(t *testing.T) {
	p := handshakeKernel(t)
	stats := func(seed uint64) Stats {
		mem := NewMemory()
		args := mustArgs(t, p, "k", 64, 0).Set("slots", mem.Alloc(32, 0)).Set("out", mem.Alloc(16, 0)).
			Set("count", mem.Alloc(8, 0)).Set("tickets", mem.Alloc(16, 0))
		st, err := p.Run(mem, Launch{Grid: [3]int{4}, Args: args, Seed: seed, CoResident: true})
		if err != nil {
			t.Fatal(err)
		}
		if st.CTAs != 4 {
			t.Errorf("seed %d: %d CTAs counted, want 4", seed, st.CTAs)
		}
		return st
	}
	a, b := stats(7), stats(7)
	if a != b {
		t.Errorf("two runs of seed 7: %+v and %+v", a, b)
	}
	differ := false
	for _, seed := range seeds {
		if stats(seed) != a {
			differ = true
		}
	}
	if !differ {
		t.Errorf("every seed spins the same number of steps (%+v): the schedule does not depend on the seed", a)
	}
}

// A spin on a flag that nobody sets ends in a FaultSteps, co-resident too,
// while the other clusters finish.
func TestCoResidentSpinForever(t *testing.T) {
	p := clusterKernel(t, 2, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) {
		cid := e.Reg(ptx.U32)
		e.Mov(cid, ptx.ClusterIDX)
		p := e.Pred()
		e.Setp(p, ptx.EQ, cid, ptx.Imm(1))
		e.If(p, func() {
			spinWhileZero(e, out)
		})
	})
	for _, seed := range seeds[:3] {
		mem := NewMemory()
		out := mem.Alloc(8, 0)
		_, err := p.Run(mem, Launch{Grid: [3]int{6}, Args: mustArgs(t, p, "k", 64, 0).Set("out", out), Seed: seed, CoResident: true, MaxSteps: 3000})
		if f := wantFault(t, err, FaultSteps, "step budget of 3000"); f.CTA[0] != 2 && f.CTA[0] != 3 {
			t.Errorf("seed %d: the fault is in CTA %v, want one of cluster 1's", seed, f.CTA)
		}
	}
}

// A co-resident cluster that deadlocks (its rank 1 waits on an mbarrier
// that never completes, so rank 0 waits at the cluster barrier for ever)
// is reported so, though the other cluster still runs: it spins on a flag
// the deadlocked cluster would set.
func TestCoResidentDeadlock(t *testing.T) {
	p := clusterKernel(t, 2, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) {
		rank, cid := e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.Mov(rank, ptx.ClusterCtaRank)
		e.Mov(cid, ptx.ClusterIDX)
		c1 := e.Pred()
		e.Setp(c1, ptx.EQ, cid, ptx.Imm(1))
		e.If(c1, func() {
			spinWhileZero(e, out)
			e.Exit()
		})
		r1 := e.Pred()
		e.Setp(r1, ptx.EQ, rank, ptx.Imm(1))
		e.If(r1, func() {
			bar := m.Shared("bar", ptx.B64, 1, 8)
			e.MbarrierInit(ptx.SpaceShared, ptx.At(bar, 0), ptx.Imm(1000))
			e.MbarrierWait(ptx.SpaceShared, ptx.ScopeDefault, ptx.At(bar, 0), ptx.Imm(0))
		})
		e.BarrierClusterSync()
		e.Atom(ptx.SpaceGlobal, "exch", e.Reg(ptx.B64), ptx.At(out, 0), ptx.Imm(1))
	})
	for _, seed := range seeds[:3] {
		mem := NewMemory()
		out := mem.Alloc(8, 0)
		_, err := p.Run(mem, Launch{Grid: [3]int{4}, Args: mustArgs(t, p, "k", 64, 0).Set("out", out), Seed: seed, CoResident: true})
		wantFault(t, err, FaultBarrier, "kernel k", "barrier.cluster.wait", "CTA (0,0,0)",
			"cluster barrier's phase 0 never completes: 64 of the cluster's 128 threads arrived",
			"CTA rank 1 (1,0,0): warp 0: lanes {0-31} wait on the mbarrier at line")
	}
}

// runLaunch runs p's entry k on ctas CTAs of block threads, with an out
// buffer of n words and, if src is not nil, a src array.
func runLaunch(t *testing.T, p *Program, l Launch, block, n int, src []uint32) ([]uint32, Stats) {
	t.Helper()
	mem := NewMemory()
	out := mem.Alloc(4*n, 0)
	l.Args = mustArgs(t, p, "k", block, 0).Set("out", out)
	if src != nil {
		l.Args.Set("src", mem.AllocU32s(src))
	}
	st, err := p.Run(mem, l)
	if err != nil {
		t.Fatal(err)
	}
	return mustReadU32s(t, mem, out, n), st
}

// Ordinary cluster kernels (distributed shared memory with cluster
// barriers; bulk copies on mbarriers; no clusters at all) give the same
// output co-resident as one cluster after another, and count the same
// CTAs and barriers (the warp instructions depend on the schedule: a wait
// that has to be retried issues again).
func TestCoResidentSameOutput(t *testing.T) {
	rows := make([]uint32, 64*8)
	for i := range rows {
		rows[i] = uint32(i/64*1000 + i%64 + 1)
	}
	for _, tc := range []struct {
		name  string
		p     *Program
		ctas  int
		block int
		n     int
		src   []uint32
	}{
		{"exchange, clusters of 2", exchangeKernel(t, 2, true), 6, 64, 65 * 6, nil},
		{"exchange, clusters of 4", exchangeKernel(t, 4, true), 8, 64, 65 * 8, nil},
		{"bulk copies, clusters of 2", bulkKernel(t, 2, 256, true), 8, 64, 64 * 8, rows},
		{"bulk copies, no clusters", bulkKernel(t, 0, 256, true), 4, 64, 64 * 4, rows},
	} {
		for _, seed := range seeds[:4] {
			l := Launch{Grid: [3]int{tc.ctas}, Seed: seed, RaceCheck: true}
			want, wst := runLaunch(t, tc.p, l, tc.block, tc.n, tc.src)
			l.CoResident = true
			got, gst := runLaunch(t, tc.p, l, tc.block, tc.n, tc.src)
			if !slices.Equal(got, want) {
				t.Errorf("%s, seed %d: co-resident output differs:\n got %v\nwant %v", tc.name, seed, got, want)
			}
			if gst.CTAs != wst.CTAs || gst.Barriers != wst.Barriers {
				t.Errorf("%s, seed %d: co-resident stats %+v, one after another %+v", tc.name, seed, gst, wst)
			}
		}
	}
}

// A co-resident profile counts every cluster's warp instructions: they
// add up to Stats.WarpInstructions (the kernel ends in ret), as one
// cluster after another.
func TestCoResidentProfile(t *testing.T) {
	p := exchangeKernel(t, 2, true)
	for _, co := range []bool{false, true} {
		var prof Profile
		_, st := runLaunch(t, p, Launch{Grid: [3]int{4}, Seed: 3, CoResident: co, Profile: &prof}, 64, 65*4, nil)
		var sum int64
		for _, n := range prof.Issued {
			sum += n
		}
		if sum != st.WarpInstructions || sum == 0 {
			t.Errorf("co-resident %v: the profile counts %d warp instructions, the stats %d", co, sum, st.WarpInstructions)
		}
	}
}

// The instructions a cross-cluster spin loop is made of, each checked on
// its own: atom.global.exch.b64, atom.global.or.b64 with 0 (a read),
// atom.global.add.u32, red.global.add.u32, fence.acq_rel.gpu, and
// ld/st.global of .u32 and .v2.u32.
func TestSpinInstructions(t *testing.T) {
	m := ptx.NewModule(ptx.SM90)
	e := m.NewEntry("k")
	g := e.LdParam(e.Param("g", ptx.U64))
	out := e.LdParam(e.Param("out", ptx.U64))
	old, got := e.Reg(ptx.B64), e.Reg(ptx.B64)
	e.Atom(ptx.SpaceGlobal, "exch", old, ptx.At(g, 0), ptx.Imm(0x1_0000_0002)) // g[0:8] was 0x0000_0005_0000_0007
	e.Fence(ptx.SemAcqRel, ptx.ScopeGPU)
	e.Atom(ptx.SpaceGlobal, "or", got, ptx.At(g, 0), ptx.Imm(0))
	e.St(ptx.SpaceGlobal, ptx.B64, ptx.At(out, 0), old)
	e.St(ptx.SpaceGlobal, ptx.B64, ptx.At(out, 8), got)
	t0 := e.Reg(ptx.U32)
	e.Atom(ptx.SpaceGlobal, "add", t0, ptx.At(g, 8), ptx.Imm(10)) // g[8:12] was 3
	e.Red(ptx.SpaceGlobal, "add", ptx.U32, ptx.At(g, 8), ptx.Imm(100))
	x, y, z := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
	e.Ld(ptx.SpaceGlobal, x, ptx.At(g, 8))             // 113
	e.Ld(ptx.SpaceGlobal, ptx.Vec{y, z}, ptx.At(g, 0)) // {2, 1}
	e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(out, 16), t0)
	e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(out, 20), x)
	e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(out, 24), ptx.Vec{z, y})
	e.Ret()
	p := mustLoad(t, m)
	text := ptx.Text(m)
	for _, want := range []string{"atom.global.exch.b64", "atom.global.or.b64", "atom.global.add.u32", "red.global.add.u32",
		"fence.acq_rel.gpu", "ld.global.u32", "ld.global.v2.u32", "st.global.u32", "st.global.v2.u32"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text has no %s:\n%s", want, text)
		}
	}
	mem := NewMemory()
	ga := mem.AllocU32s([]uint32{7, 5, 3, 0})
	oa := mem.Alloc(32, 0)
	if _, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 1, 0).Set("g", ga).Set("out", oa)}); err != nil {
		t.Fatal(err)
	}
	if o := mustReadU32s(t, mem, oa, 8); !slices.Equal(o, []uint32{7, 5, 2, 1, 3, 113, 1, 2}) {
		t.Errorf("out %v, want [7 5 2 1 3 113 1 2]", o)
	}
}

// spinWhileZero emits a loop that polls the 64-bit word at out (atom.or
// with 0) until it is not zero.
func spinWhileZero(e *ptx.Entry, out ptx.Reg) {
	got := e.Reg(ptx.B64)
	e.DoWhile(func() {
		e.Atom(ptx.SpaceGlobal, "or", got, ptx.At(out, 0), ptx.Imm(0))
	}, func() ptx.Pred {
		q := e.Pred()
		e.Setp(q, ptx.EQ, got, ptx.Imm(0))
		return q
	})
}

// A contract whose CTAs wait for each other in groups (ptx.Launch's
// Cooperative) runs only co-resident and on whole groups, as a driver
// launches it only cooperatively: run one cluster after another, or with
// a group cut short, it would spin until its step budget.
func TestCooperativeContract(t *testing.T) {
	p := clusterKernel(t, 2, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) { e.Cooperative = 4 })
	l, err := p.Contract("k", 64, 0)
	if err != nil {
		t.Fatal(err)
	}
	if l.Cooperative != 4 {
		t.Fatalf("the contract's Cooperative is %d, want the entry's 4", l.Cooperative)
	}
	for _, c := range []struct {
		grid int
		co   bool
		want string // "": runs
	}{
		{8, false, "groups of 4 (the contract's Cooperative): run it CoResident"},
		{6, true, "not a whole number of cooperative groups of 4 CTAs"},
		{8, true, ""},
	} {
		mem := NewMemory()
		_, err := p.Run(mem, Launch{Grid: [3]int{c.grid}, Args: l.Args().Set("out", mem.Alloc(8, 0)), CoResident: c.co})
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("grid %d, co-resident %v: error %v, want %q", c.grid, c.co, err, c.want)
		}
	}
	// A contract that leaves out the entry's groups is not its contract.
	plain := l
	plain.Cooperative = 0
	mem := NewMemory()
	_, err = p.Run(mem, Launch{Grid: [3]int{8}, Args: plain.Args().Set("out", mem.Alloc(8, 0)), CoResident: true})
	if err == nil || !strings.Contains(err.Error(), "cooperative groups of 0 CTAs, the entry's are of 4") {
		t.Errorf("a contract without the entry's cooperative groups: error %v", err)
	}
}
