package emu

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// This file tests clusters: their CTAs running together, the cluster
// registers, distributed shared memory through mapa, the split cluster
// barrier, mbarriers with bulk copies, elect.sync, and the faults of
// kernels that get them wrong (races, deadlocks).

var seeds = []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}

// clusterKernel builds entry "k" with a parameter out (u64), clusters of
// size CTAs (0: no .reqnctapercluster) and body, which gets out and %tid.x.
func clusterKernel(t *testing.T, size int, body func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg)) *Program {
	t.Helper()
	m := ptx.NewModule(ptx.SM90)
	e := m.NewEntry("k")
	if size > 0 {
		e.ReqNCTAPerCluster = ptx.Dim3{size}
	}
	out := e.LdParam(e.Param("out", ptx.U64))
	tid := e.Reg(ptx.U32)
	e.Mov(tid, ptx.TidX)
	body(m, e, out, tid)
	e.Ret()
	return mustLoad(t, m)
}

// runOut runs k on ctas CTAs of block threads with an out buffer of n
// words, and returns them.
func runOut(t *testing.T, p *Program, ctas, block, n int, seed uint64, race bool) ([]uint32, error) {
	t.Helper()
	mem := NewMemory()
	out := mem.Alloc(4*n, 0)
	_, err := p.Run(mem, Launch{Grid: [3]int{ctas}, Args: mustArgs(t, p, "k", block, 0).Set("out", out), Seed: seed, RaceCheck: race})
	got, _ := mem.ReadU32s(out, n)
	return got, err
}

// storeAt stores v to out[i] (u32 words).
func storeAt(e *ptx.Entry, out ptx.Reg, i, v ptx.Operand) {
	a := e.Reg(ptx.U64)
	e.MulWide(a, i, ptx.Imm(4))
	e.Add(a, a, out)
	e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(a, 0), v)
}

// Every cluster register, for clusters of 1 (declared and implicit), 2, 4
// and 8 CTAs, in a grid of several clusters.
func TestClusterRegisters(t *testing.T) {
	specials := []ptx.Special{ptx.ClusterCtaRank, ptx.ClusterNCtaRank, ptx.ClusterIDX, ptx.ClusterIDY, ptx.NClusterIDX, ptx.NClusterIDZ,
		ptx.ClusterCtaIDX, ptx.ClusterCtaIDY, ptx.ClusterNCtaIDX, ptx.ClusterNCtaIDZ, ptx.CtaIDX}
	n := len(specials) + 1
	for _, size := range []int{0, 1, 2, 4, 8} {
		p := clusterKernel(t, size, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) {
			p := e.Pred()
			e.Setp(p, ptx.EQ, tid, ptx.Imm(0))
			e.If(p, func() {
				ctaid, base, i := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
				e.Mov(ctaid, ptx.CtaIDX)
				e.Mul(base, ctaid, ptx.Imm(n))
				v := e.Reg(ptx.U32)
				for j, s := range specials {
					e.Mov(v, s)
					e.Add(i, base, ptx.Imm(j))
					storeAt(e, out, i, v)
				}
				x := e.Pred()
				e.Mov(x, ptx.IsExplicitCluster)
				e.Selp(v, ptx.Imm(1), ptx.Imm(0), x)
				e.Add(i, base, ptx.Imm(n-1))
				storeAt(e, out, i, v)
			})
		})
		c := max(size, 1)
		ctas := 3 * c
		got, err := runOut(t, p, ctas, 64, n*ctas, 0, true)
		if err != nil {
			t.Fatalf("clusters of %d: %v", size, err)
		}
		for cta := 0; cta < ctas; cta++ {
			explicit := 0
			if size > 0 {
				explicit = 1
			}
			want := []uint32{uint32(cta % c), uint32(c), uint32(cta / c), 0, 3, 1, uint32(cta % c), 0, uint32(c), 1, uint32(cta), uint32(explicit)}
			if g := got[cta*n : (cta+1)*n]; fmt.Sprint(g) != fmt.Sprint(want) {
				t.Errorf("clusters of %d, CTA %d: got %v, want %v", size, cta, g, want)
			}
		}
	}
}

// exchangeKernel: each thread writes its value to its CTA's buf[tid];
// after a cluster barrier (unless planted away) it reads buf[tid] of the
// next CTA of its cluster through mapa (and the previous one's through a
// generic address), adds one to a counter in rank 0's shared memory with
// red.shared::cluster, and stores what it read; rank 0 stores the counter
// after the second barrier (thread 0 clears it before the first). The
// second barrier is split: each thread stores between its arrive and its
// wait.
func exchangeKernel(t *testing.T, size int, barrier bool) *Program {
	return clusterKernel(t, size, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) {
		buf := m.Shared("buf", ptx.U32, 64, 4)
		count := m.Shared("count", ptx.U32, 1, 4)
		rank, ctaid, v, off := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.Mov(rank, ptx.ClusterCtaRank)
		e.Mov(ctaid, ptx.CtaIDX)
		e.Mad(v, ctaid, ptx.Imm(1000), tid)
		e.Mul(off, tid, ptx.Imm(4))
		a := e.Reg(ptx.U32)
		e.Mov(a, buf)
		e.Add(a, a, off)
		e.St(ptx.SpaceShared, ptx.U32, ptx.At(a, 0), v)
		zero := e.Pred() // shared memory starts as garbage: thread 0 clears the counter
		e.Setp(zero, ptx.EQ, tid, ptx.Imm(0))
		e.If(zero, func() { e.St(ptx.SpaceShared, ptx.U32, ptx.At(count, 0), ptx.Imm(0)) })
		if barrier {
			e.BarrierClusterSync()
		}
		next, prev := e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.Add(next, rank, ptx.Imm(1))
		e.Rem(next, next, ptx.Imm(size))
		e.Add(prev, rank, ptx.Imm(size-1))
		e.Rem(prev, prev, ptx.Imm(size))
		remote, got := e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.Mapa(ptx.SpaceSharedCluster, remote, a, next)
		e.Ld(ptx.SpaceSharedCluster, got, ptx.At(remote, 0))
		ga, gb, got2 := e.Reg(ptx.U64), e.Reg(ptx.U64), e.Reg(ptx.U32)
		e.Mov(ga, buf)
		e.Emit("cvta", []string{"shared", "u64"}, ga, ga)
		e.Mapa(ptx.SpaceNone, gb, ga, prev)
		e.Ld(ptx.SpaceNone, got2, ptx.At(gb, 0)) // buf[0] of the previous CTA
		e.Add(got, got, got2)
		c0 := e.Reg(ptx.U32)
		e.Mapa(ptx.SpaceSharedCluster, c0, count, ptx.Imm(0))
		e.Red(ptx.SpaceSharedCluster, "add", ptx.U32, ptx.At(c0, 0), ptx.Imm(1))
		e.BarrierClusterArrive(ptx.SemRelease)
		i := e.Reg(ptx.U32)
		e.Mad(i, ctaid, ptx.Imm(65), tid)
		storeAt(e, out, i, got)
		e.BarrierClusterWait(ptx.SemAcquire)
		p := e.Pred()
		e.Setp(p, ptx.EQ, tid, ptx.Imm(0))
		first := e.Pred()
		e.Setp(first, ptx.EQ, rank, ptx.Imm(0))
		e.AndPred(p, p, first)
		e.If(p, func() {
			n := e.Reg(ptx.U32)
			e.Ld(ptx.SpaceSharedCTA, n, ptx.At(count, 0))
			e.Add(i, i, ptx.Imm(64))
			storeAt(e, out, i, n)
		})
	})
}

// Distributed shared memory: each CTA reads its neighbours' values after a
// cluster barrier, for every cluster size and several schedules.
func TestClusterExchange(t *testing.T) {
	for _, size := range []int{2, 4, 8} {
		p := exchangeKernel(t, size, true)
		ctas := 2 * size
		for _, seed := range seeds {
			got, err := runOut(t, p, ctas, 64, 65*ctas, seed, true)
			if err != nil {
				t.Fatalf("clusters of %d, seed %d: %v", size, seed, err)
			}
			for cta := 0; cta < ctas; cta++ {
				base, rank := cta-cta%size, cta%size
				next, prev := base+(rank+1)%size, base+(rank+size-1)%size
				for tid := 0; tid < 64; tid++ {
					if w := uint32(next*1000 + tid + prev*1000); got[cta*65+tid] != w {
						t.Fatalf("clusters of %d, seed %d: CTA %d thread %d read %d, want %d", size, seed, cta, tid, got[cta*65+tid], w)
					}
				}
				if want := uint32(0); rank == 0 {
					want = uint32(64 * size)
					if got[cta*65+64] != want {
						t.Errorf("clusters of %d, seed %d: CTA %d counted %d, want %d", size, seed, cta, got[cta*65+64], want)
					}
				}
			}
		}
	}
}

// Planted bug 1: without the cluster barrier, reading another CTA's
// shared memory races with its writer, whatever the schedule.
func TestClusterMissingBarrierIsARace(t *testing.T) {
	for _, size := range []int{2, 8} {
		p := exchangeKernel(t, size, false)
		for _, seed := range seeds {
			_, err := runOut(t, p, size, 64, 65*size, seed, true)
			wantFault(t, err, FaultRace, "kernel k", "with no barrier between them", "of CTA rank", "st.shared.u32")
		}
	}
}

// bulkKernel: thread 0 initialises an mbarrier, then (after a CTA
// barrier) expects txBytes on it and issues a bulk copy of 256 bytes (the
// CTA's row of src) into buf; every thread waits on the mbarrier (unless
// planted away) and stores buf[tid] to out.
func bulkKernel(t *testing.T, size, txBytes int, wait bool) *Program {
	return bulkKernelLate(t, size, txBytes, wait, false)
}

// bulkKernelLate is bulkKernel where, with late, every thread first runs
// long enough for the copy to land (longer than maxDelay) and passes a
// CTA barrier before its wait, or where the wait was, and its read.
func bulkKernelLate(t *testing.T, size, txBytes int, wait, late bool) *Program {
	return clusterKernel(t, size, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) {
		bar := m.Shared("bar", ptx.B64, 1, 8)
		buf := m.Shared("buf", ptx.U32, 64, 16)
		src := e.LdParam(e.Param("src", ptx.U64))
		ctaid := e.Reg(ptx.U32)
		e.Mov(ctaid, ptx.CtaIDX)
		p := e.Pred()
		e.Setp(p, ptx.EQ, tid, ptx.Imm(0))
		e.If(p, func() {
			e.MbarrierInit(ptx.SpaceShared, ptx.At(bar, 0), ptx.Imm(1))
			e.FenceMbarrierInit()
		})
		e.BarSync(0)
		e.If(p, func() {
			row := e.Reg(ptx.U64)
			e.MulWide(row, ctaid, ptx.Imm(256))
			e.Add(row, row, src)
			e.MbarrierArriveExpectTx(ptx.SpaceShared, ptx.ScopeCTA, e.Reg(ptx.B64), ptx.At(bar, 0), ptx.Imm(txBytes))
			e.CpAsyncBulk(ptx.At(buf, 0), ptx.At(row, 0), ptx.Imm(256), ptx.At(bar, 0))
		})
		if late {
			k := e.Reg(ptx.U32)
			e.For(k, ptx.Imm(0), ptx.Imm(maxDelay), ptx.Imm(1), func() {})
			e.BarSync(0)
		}
		if wait {
			e.MbarrierWait(ptx.SpaceShared, ptx.ScopeCTA, ptx.At(bar, 0), ptx.Imm(0))
		}
		off, v, i := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.Mul(off, tid, ptx.Imm(4))
		a := e.Reg(ptx.U32)
		e.Mov(a, buf)
		e.Add(a, a, off)
		e.Ld(ptx.SpaceShared, v, ptx.At(a, 0))
		e.Mad(i, ctaid, ptx.Imm(64), tid)
		storeAt(e, out, i, v)
	})
}

// runBulk runs a bulkKernel on ctas CTAs of 64 threads, src row c holding
// c*1000+i, and reports the rows that came out wrong.
func runBulk(t *testing.T, p *Program, ctas int, seed uint64, race bool) (wrong int, err error) {
	t.Helper()
	mem := NewMemory()
	rows := make([]uint32, 64*ctas)
	for i := range rows {
		rows[i] = uint32(i/64*1000 + i%64 + 1)
	}
	src := mem.AllocU32s(rows)
	out := mem.Alloc(4*len(rows), 0)
	args := mustArgs(t, p, "k", 64, 0).Set("out", out).Set("src", src)
	_, err = p.Run(mem, Launch{Grid: [3]int{ctas}, Args: args, Seed: seed, RaceCheck: race})
	got, _ := mem.ReadU32s(out, len(rows))
	for i := range rows {
		if got[i] != rows[i] {
			wrong++
		}
	}
	return wrong, err
}

// A bulk copy on an mbarrier with expect_tx, then try_wait: correct for
// every schedule, alone and in clusters.
func TestBulkCopy(t *testing.T) {
	for _, size := range []int{0, 2, 4} {
		p := bulkKernel(t, size, 256, true)
		ctas := 2 * max(size, 1)
		for _, seed := range seeds {
			wrong, err := runBulk(t, p, ctas, seed, true)
			if err != nil || wrong != 0 {
				t.Fatalf("clusters of %d, seed %d: %d words wrong, %v", size, seed, wrong, err)
			}
		}
	}
}

// A bulk L2 prefetch is a hint: it changes nothing, but a size or an
// address the hardware would reject, and bytes outside every allocation,
// are faults.
func TestBulkPrefetch(t *testing.T) {
	for _, tc := range []struct {
		off, size int64
		kind      FaultKind
		want      string
	}{
		{0, 256, 0, ""},
		{16, 240, 0, ""},
		{0, 0, FaultAlign, "a bulk prefetch of 0 bytes"},
		{0, 24, FaultAlign, "a bulk prefetch of 24 bytes"},
		{8, 16, FaultAlign, "must be aligned to 16 bytes"},
		{16, 256, FaultMemory, "a bulk prefetch of 256 bytes from outside every allocation"},
	} {
		p := clusterKernel(t, 0, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) {
			src := e.LdParam(e.Param("src", ptx.U64))
			p := e.Pred()
			e.Setp(p, ptx.EQ, tid, ptx.Imm(0))
			e.If(p, func() {
				e.CpAsyncBulkPrefetchL2(ptx.At(src, tc.off), ptx.Imm(tc.size))
			})
			storeAt(e, out, tid, tid)
		})
		mem := NewMemory()
		src := mem.Alloc(256, 0)
		out := mem.Alloc(4*32, 0)
		args := mustArgs(t, p, "k", 32, 0).Set("out", out).Set("src", src)
		_, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: args, RaceCheck: true})
		if tc.want == "" {
			if err != nil {
				t.Errorf("prefetch of %d bytes at +%d: %v", tc.size, tc.off, err)
			}
			continue
		}
		wantFault(t, err, tc.kind, "cp.async.bulk.prefetch", tc.want)
	}
}

// Planted bug 2: reading the copy's destination without waiting on its
// mbarrier is reported as a race for every seed (the copy lands on memory
// read after its issue); without the race detector the reads see stale
// data.
func TestBulkCopyReadBeforeWait(t *testing.T) {
	p := bulkKernel(t, 0, 256, false)
	for _, seed := range seeds {
		_, err := runBulk(t, p, 2, seed, true)
		wantFault(t, err, FaultRace, "kernel k", "cp.async.bulk", "the bulk copy issued here (into CTA rank 0) lands in shared memory that thread",
			"reads at line", "before it completed")
		if wrong, err := runBulk(t, p, 2, seed, false); err != nil || wrong == 0 {
			t.Errorf("seed %d without the race detector: %d words wrong, %v; want stale data", seed, wrong, err)
		}
	}
}

// Planted bug 2, late: the copy has landed, and a CTA barrier passed,
// before the reads; the barrier orders the threads, not the copy, so the
// reads without a wait are still a race (a first pass that walked a slice
// copied in chunks without awaiting them read this way: perf notes 126).
// With the wait, the same kernel is clean.
func TestBulkCopyReadAfterBarrierWithoutWait(t *testing.T) {
	bad, good := bulkKernelLate(t, 0, 256, false, true), bulkKernelLate(t, 0, 256, true, true)
	for _, seed := range seeds {
		_, err := runBulk(t, bad, 2, seed, true)
		wantFault(t, err, FaultRace, "kernel k", "ld.shared", "the bulk copy issued by thread", "the reader did not wait on its mbarrier phase 0")
		if wrong, err := runBulk(t, good, 2, seed, true); err != nil || wrong != 0 {
			t.Errorf("seed %d with the wait: %d words wrong, %v", seed, wrong, err)
		}
	}
}

// An mbarrier that never completes (expecting more bytes than the copy
// brings) is a fault naming the kernel, the CTA, the wait and the
// barrier's state, not a hang.
func TestMbarrierNeverCompletes(t *testing.T) {
	p := bulkKernel(t, 2, 512, true)
	_, err := runBulk(t, p, 2, 0, true)
	f := wantFault(t, err, FaultBarrier, "kernel k", "mbarrier.try_wait.parity", "never completes phase 0",
		"0 of 1 arrivals pending, transaction count 256 bytes", "CTA rank 1")
	if f.Line == 0 {
		t.Errorf("the fault names no line: %v", f)
	}
}

// A cluster barrier that one CTA's threads never reach ends with a fault,
// whether they wait elsewhere or loop forever; threads that exit count as
// arrived.
func TestClusterBarrierNotReached(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rank1  func(m *ptx.Module, e *ptx.Entry)
		kind   FaultKind
		want   []string
		passes bool
	}{
		{"waits on an mbarrier", func(m *ptx.Module, e *ptx.Entry) {
			bar := m.Shared("bar", ptx.B64, 1, 8)
			e.MbarrierInit(ptx.SpaceShared, ptx.At(bar, 0), ptx.Imm(1000))
			e.MbarrierWait(ptx.SpaceShared, ptx.ScopeDefault, ptx.At(bar, 0), ptx.Imm(0))
		}, FaultBarrier, []string{"barrier.cluster.wait", "CTA (0,0,0)", "cluster barrier's phase 0 never completes: 64 of the cluster's 128 threads arrived",
			"CTA rank 1 (1,0,0): warp 0: lanes {0-31} wait on the mbarrier at line"}, false},
		{"loops forever", func(m *ptx.Module, e *ptx.Entry) {
			l := e.NewLabel("forever")
			e.Place(l)
			e.Bra(l)
		}, FaultSteps, []string{"CTA (1,0,0)", "bra"}, false},
		{"exits", func(m *ptx.Module, e *ptx.Entry) { e.Exit() }, 0, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := clusterKernel(t, 2, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) {
				rank := e.Reg(ptx.U32)
				e.Mov(rank, ptx.ClusterCtaRank)
				p := e.Pred()
				e.Setp(p, ptx.EQ, rank, ptx.Imm(1))
				e.If(p, func() { tc.rank1(m, e) })
				e.BarrierClusterSync()
				e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(out, 0), ptx.Imm(7))
			})
			mem := NewMemory()
			out := mem.Alloc(4, 0)
			_, err := p.Run(mem, Launch{Grid: [3]int{2}, Args: mustArgs(t, p, "k", 64, 0).Set("out", out), MaxSteps: 10000, RaceCheck: true})
			if tc.passes {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantFault(t, err, tc.kind, append(tc.want, "kernel k")...)
		})
	}
}

// A CTA arrives on another CTA's mbarrier through mapa; that CTA waits for
// the phase. Arriving without waiting, or waiting without arriving, at the
// cluster barrier is a fault.
func TestRemoteMbarrierArrive(t *testing.T) {
	p := clusterKernel(t, 4, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) {
		bar := m.Shared("bar", ptx.B64, 1, 8)
		rank := e.Reg(ptx.U32)
		e.Mov(rank, ptx.ClusterCtaRank)
		first, zero := e.Pred(), e.Pred()
		e.Setp(first, ptx.EQ, rank, ptx.Imm(0))
		e.Setp(zero, ptx.EQ, tid, ptx.Imm(0))
		both := e.Pred()
		e.AndPred(both, first, zero)
		e.If(both, func() {
			e.MbarrierInit(ptx.SpaceShared, ptx.At(bar, 0), ptx.Imm(3*32)) // every thread of ranks 1-3
			e.FenceMbarrierInit()
		})
		e.BarrierClusterArrive(ptx.SemRelaxed)
		e.BarrierClusterWait(ptx.SemAcquire)
		e.IfElse(first, func() {
			e.MbarrierWait(ptx.SpaceShared, ptx.ScopeCluster, ptx.At(bar, 0), ptx.Imm(0))
			e.Guarded(zero, func() { e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(out, 0), ptx.Imm(7)) })
		}, func() {
			r := e.Reg(ptx.U32)
			e.Mapa(ptx.SpaceSharedCluster, r, bar, ptx.Imm(0))
			e.MbarrierArrive(ptx.SpaceSharedCluster, ptx.ScopeCluster, ptx.Sink{}, ptx.At(r, 0))
		})
		e.BarrierClusterSync() // rank 0's barrier outlives the arrivals
	})
	for _, seed := range seeds {
		got, err := runOut(t, p, 8, 32, 1, seed, true)
		if err != nil || got[0] != 7 {
			t.Fatalf("seed %d: %v %v", seed, got, err)
		}
	}

	for _, tc := range []struct {
		name string
		body func(e *ptx.Entry)
		want string
	}{
		{"arrive twice", func(e *ptx.Entry) { e.BarrierClusterArrive(ptx.SemDefault); e.BarrierClusterArrive(ptx.SemDefault) }, "arrives at the cluster barrier again"},
		{"wait alone", func(e *ptx.Entry) { e.BarrierClusterWait(ptx.SemDefault) }, "without arriving first"},
	} {
		p := clusterKernel(t, 2, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) { tc.body(e) })
		_, err := runOut(t, p, 2, 32, 1, 0, false)
		wantFault(t, err, FaultBarrier, tc.want)
	}
}

// elect.sync elects the lowest lane of the member mask, executed by all
// of its lanes, and gives every lane its id.
func TestElectSync(t *testing.T) {
	p := clusterKernel(t, 0, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) {
		lane, v := e.Reg(ptx.U32), e.Reg(ptx.U32)
		p, odd := e.Pred(), e.Pred()
		bit := e.Reg(ptx.U32)
		e.And(bit, tid, ptx.Imm(1))
		e.Setp(odd, ptx.EQ, bit, ptx.Imm(1))
		e.IfElse(odd, func() { e.ElectSync(lane, p, ptx.Imm(0xAAAAAAAA)) },
			func() { e.ElectSync(lane, p, ptx.Imm(0x55555555)) })
		e.Selp(v, ptx.Imm(100), ptx.Imm(0), p)
		e.Add(v, v, lane)
		storeAt(e, out, tid, v)
	})
	got, err := runOut(t, p, 1, 64, 64, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	for tid, g := range got {
		want := uint32(tid % 2)
		if tid%32 < 2 {
			want += 100
		}
		if g != want {
			t.Errorf("thread %d: got %d, want %d", tid, g, want)
		}
	}
}

// The same seed gives the same run; another seed may give another
// interleaving but the same results.
func TestClusterDeterministic(t *testing.T) {
	p := exchangeKernel(t, 4, true)
	var stats []Stats
	for range 2 {
		mem := NewMemory()
		out := mem.Alloc(4*65*8, 0)
		st, err := p.Run(mem, Launch{Grid: [3]int{8}, Args: mustArgs(t, p, "k", 64, 0).Set("out", out), Seed: 42, RaceCheck: true})
		if err != nil {
			t.Fatal(err)
		}
		stats = append(stats, st)
	}
	if stats[0] != stats[1] {
		t.Errorf("two runs of seed 42: %+v and %+v", stats[0], stats[1])
	}
}

// mbarrierExchangeKernel: thread r < size of each CTA stores the CTA's
// rank*100+r into word rank of CTA r's buffer through mapa and signals
// CTA r's mbarrier (expecting size arrivals) with a remote arrive; every
// thread waits on its own CTA's mbarrier, then thread t < size reads word
// t and stores it. mode "thread": the storing thread arrives; "cta": the
// stores, a CTA barrier, then thread 0 arrives on every CTA's mbarrier (a
// release is cumulative); "early": the arrive comes before the store (a
// race). "async": the stores are st.async, completing their bytes on the
// destination's mbarrier, which expects one arrival (its own thread 0's
// arrive.expect_tx of all the bytes, before or after they land) and no
// fence or remote arrival; "async-nowait": so, but the readers do not wait
// on the mbarrier (a race).
func mbarrierExchangeKernel(t *testing.T, size int, mode string) *Program {
	async := mode == "async" || mode == "async-nowait"
	return clusterKernel(t, size, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) {
		buf := m.Shared("buf", ptx.U32, 16, 4)
		bar := m.Shared("bar", ptx.B64, 1, 8)
		rank, ctaid := e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.Mov(rank, ptx.ClusterCtaRank)
		e.Mov(ctaid, ptx.CtaIDX)
		zero, mine := e.Pred(), e.Pred()
		e.Setp(zero, ptx.EQ, tid, ptx.Imm(0))
		e.Setp(mine, ptx.LT, tid, ptx.Imm(size))
		e.If(zero, func() {
			n := int64(size)
			if async {
				n = 1
			}
			e.MbarrierInit(ptx.SpaceShared, ptx.At(bar, 0), ptx.Imm(n))
			e.FenceMbarrierInit()
		})
		e.BarrierClusterSync()
		if async {
			e.If(zero, func() {
				e.MbarrierArriveExpectTx(ptx.SpaceShared, ptx.ScopeCluster, e.Reg(ptx.B64), ptx.At(bar, 0), ptx.Imm(int64(4*size)))
			})
		}
		arrive := func(to ptx.Operand) {
			r := e.Reg(ptx.U32)
			e.Mapa(ptx.SpaceSharedCluster, r, bar, to)
			e.MbarrierArrive(ptx.SpaceSharedCluster, ptx.ScopeCluster, ptx.Sink{}, ptx.At(r, 0))
		}
		e.If(mine, func() {
			if mode == "early" {
				arrive(tid)
			}
			a, v := e.Reg(ptx.U32), e.Reg(ptx.U32)
			e.Mov(a, buf)
			e.Mad(a, rank, ptx.Imm(4), a)
			e.Mapa(ptx.SpaceSharedCluster, a, a, tid)
			e.Mad(v, rank, ptx.Imm(100), tid)
			if async {
				r := e.Reg(ptx.U32)
				e.Mapa(ptx.SpaceSharedCluster, r, bar, tid)
				e.StAsync(ptx.B32, ptx.At(a, 0), v, ptx.At(r, 0))
				return
			}
			e.St(ptx.SpaceSharedCluster, ptx.U32, ptx.At(a, 0), v)
			if mode == "thread" {
				arrive(tid)
			}
		})
		if mode == "cta" {
			e.BarSync(0)
			e.If(zero, func() {
				for r := range size {
					arrive(ptx.Imm(int64(r)))
				}
			})
		}
		if mode != "async-nowait" {
			e.MbarrierWait(ptx.SpaceShared, ptx.ScopeCluster, ptx.At(bar, 0), ptx.Imm(0))
		}
		e.If(mine, func() {
			a, v, i := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
			e.Mov(a, buf)
			e.Mad(a, tid, ptx.Imm(4), a)
			e.Ld(ptx.SpaceShared, v, ptx.At(a, 0))
			e.Mad(i, ctaid, ptx.Imm(size), tid)
			storeAt(e, out, i, v)
		})
		e.BarrierClusterSync()
	})
}

// Stores into other CTAs' shared memory, each followed by a remote mbarrier
// arrive, are ordered before the reads of the CTA that waited on its
// mbarrier (by the storing thread's arrive, or by another thread's after a
// CTA barrier); an arrive before the store is a race.
func TestMbarrierOrdersRemoteStores(t *testing.T) {
	for _, size := range []int{2, 4, 8} {
		for _, mode := range []string{"thread", "cta", "async"} {
			p := mbarrierExchangeKernel(t, size, mode)
			for _, seed := range seeds {
				got, err := runOut(t, p, 2*size, 32, 2*size*size, seed, true)
				if err != nil {
					t.Fatalf("%s, clusters of %d, seed %d: %v", mode, size, seed, err)
				}
				for cta := range 2 * size {
					for j := range size {
						if w := uint32(j*100 + cta%size); got[cta*size+j] != w {
							t.Fatalf("%s, clusters of %d, seed %d: CTA %d word %d: %d, want %d", mode, size, seed, cta, j, got[cta*size+j], w)
						}
					}
				}
			}
		}
		for _, bad := range []struct{ mode, want, what string }{
			{"early", "with no barrier between them", "an arrive before the store"},
			{"async-nowait", "shared memory", "reads of st.async's destination without a wait"},
		} {
			wantRace(t, mbarrierExchangeKernel(t, size, bad.mode), size, size*size, bad.want, bad.what)
		}
	}
}

// redAsyncKernel: every thread of every CTA of a cluster of size adds
// rank+1 into word tid%4 of CTA 0's buffer with red.async, completing 4
// bytes on CTA 0's mbarrier, which expects one arrival (its thread 0's
// arrive.expect_tx of all the bytes) and no fence; CTA 0's threads add
// 1000 to their words with a red.shared meanwhile (the words are zeroed
// first, before a cluster barrier); then threads 0-3 of CTA 0 wait on the
// mbarrier and, past a CTA barrier, store their word. mode "wait": so;
// "nowait": the readers do not wait (a race); "plain": CTA 0's threads
// store their word plainly instead of the red.shared (a race with the
// reductions); "few", "many": the arrive.expect_tx counts one reduction's
// 4 bytes fewer or more than are sent.
func redAsyncKernel(t *testing.T, size int, mode string) *Program {
	tx := int64(4 * 32 * size)
	switch mode {
	case "few":
		tx -= 4
	case "many":
		tx += 4
	}
	return clusterKernel(t, size, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) {
		buf := m.Shared("buf", ptx.U32, 4, 4)
		bar := m.Shared("bar", ptx.B64, 1, 8)
		rank := e.Reg(ptx.U32)
		e.Mov(rank, ptx.ClusterCtaRank)
		zero, lead := e.Pred(), e.Pred()
		e.Setp(zero, ptx.EQ, tid, ptx.Imm(0))
		e.Setp(lead, ptx.EQ, rank, ptx.Imm(0))
		word := e.Reg(ptx.U32)
		e.And(word, tid, ptx.Imm(3))
		local := e.Reg(ptx.U32)
		e.Mov(local, buf)
		e.Mad(local, word, ptx.Imm(4), local)
		e.If(zero, func() {
			e.MbarrierInit(ptx.SpaceShared, ptx.At(bar, 0), ptx.Imm(1))
			e.FenceMbarrierInit()
			for j := range 4 {
				e.St(ptx.SpaceShared, ptx.U32, ptx.At(buf, int64(4*j)), ptx.Imm(0))
			}
		})
		e.BarrierClusterSync()
		a, b, v := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.Mapa(ptx.SpaceSharedCluster, a, local, ptx.Imm(0))
		e.Mapa(ptx.SpaceSharedCluster, b, bar, ptx.Imm(0))
		e.Add(v, rank, ptx.Imm(1))
		e.RedAsync("add", ptx.U32, ptx.At(a, 0), v, ptx.At(b, 0))
		e.If(lead, func() {
			e.If(zero, func() {
				e.MbarrierArriveExpectTx(ptx.SpaceShared, ptx.ScopeDefault, e.Reg(ptx.B64), ptx.At(bar, 0), ptx.Imm(tx))
			})
			if mode == "plain" {
				e.St(ptx.SpaceShared, ptx.U32, ptx.At(local, 0), ptx.Imm(1000))
			} else {
				e.Red(ptx.SpaceShared, "add", ptx.U32, ptx.At(local, 0), ptx.Imm(1000))
			}
			if mode != "nowait" {
				e.MbarrierWait(ptx.SpaceShared, ptx.ScopeCluster, ptx.At(bar, 0), ptx.Imm(0))
			}
			e.BarSync(0) // the CTA's own updates
			small := e.Pred()
			e.Setp(small, ptx.LT, tid, ptx.Imm(4))
			e.If(small, func() {
				x := e.Reg(ptx.U32)
				e.Ld(ptx.SpaceShared, x, ptx.At(local, 0))
				storeAt(e, out, tid, x)
			})
		})
		e.BarrierClusterSync()
	})
}

// red.async reductions from every CTA into one word land as atomics: the
// sums are exact, they race neither with each other nor with the
// destination's own atomics, and the mbarrier's wait orders them before
// the destination's reads; a read without the wait, or a plain store into
// the word, races with them.
func TestRedAsync(t *testing.T) {
	for _, size := range []int{2, 4} {
		p := redAsyncKernel(t, size, "wait")
		for _, seed := range seeds {
			got, err := runOut(t, p, size, 32, 4, seed, true)
			if err != nil {
				t.Fatalf("clusters of %d, seed %d: %v", size, seed, err)
			}
			// 8 threads a CTA per word, each adding rank+1; 8 adding 1000.
			want := uint32(8*1000 + 8*size*(size+1)/2)
			for j, g := range got {
				if g != want {
					t.Fatalf("clusters of %d, seed %d: word %d is %d, want %d", size, seed, j, g, want)
				}
			}
		}
		for _, bad := range []struct{ mode, want, what string }{
			{"nowait", "red.async", "reads of red.async's destination without a wait"},
			{"plain", "", "a plain store into red.async's destination"},
		} {
			wantRace(t, redAsyncKernel(t, size, bad.mode), size, 4, bad.want, bad.what)
		}
	}
}

// An mbarrier whose arrive.expect_tx counts red.async's bytes wrongly.
// Expecting more than are sent, its phase never completes: a deadlock,
// reported at the cluster barrier the other CTAs wait at, naming CTA 0's
// wait on the mbarrier. Expecting fewer, the phase completes before the
// last reduction lands, which then races with the reads it should have
// preceded (and the sum comes out short), unless every reduction landed
// before the arrive.expect_tx, leaving the count negative: a deadlock.
func TestRedAsyncWrongTxCount(t *testing.T) {
	deadlock := func(err error) {
		t.Helper()
		wantFault(t, err, FaultBarrier, "kernel k", "barrier.cluster.wait", "the cluster barrier's phase 1 never completes",
			"CTA rank 0 (0,0,0): warp 0: lanes {0-31} wait on the mbarrier at line", "mbarrier.try_wait.parity")
	}
	for _, size := range []int{2, 4} {
		p := redAsyncKernel(t, size, "many")
		for _, seed := range seeds {
			_, err := runOut(t, p, size, 32, 4, seed, true)
			deadlock(err)
		}
		p = redAsyncKernel(t, size, "few")
		for _, seed := range seeds {
			_, err := runOut(t, p, size, 32, 4, seed, true)
			var f *Fault
			if !errors.As(err, &f) {
				t.Fatalf("clusters of %d, seed %d: error %v, want a fault", size, seed, err)
			}
			switch f.Kind {
			case FaultRace:
				wantFault(t, err, FaultRace, "the red.async issued here (into CTA rank 0) lands in shared memory that thread (3,0,0)",
					"of CTA rank 0 reads at line", "before it completed")
			case FaultBarrier:
				deadlock(err)
			default:
				t.Fatalf("clusters of %d, seed %d: %v, want a race or a deadlock", size, seed, err)
			}
		}
	}
}

// Every red.async operation lands as its atom does: each of the 64 threads
// of a cluster of 2 reduces its own operand into one word (a double word
// for add.u64) of CTA 0 per operation, 40 bytes a thread on CTA 0's
// mbarrier; CTA 0 waits and reads the results.
func TestRedAsyncOps(t *testing.T) {
	type red struct {
		op   string
		t    ptx.Type
		init uint32
		v    func(e *ptx.Entry, gi ptx.Reg) ptx.Operand // the operand of thread gi
		want func(gi, o uint32) uint32                  // its effect on the word
	}
	reg := func(e *ptx.Entry, t ptx.Type, f func(d ptx.Reg)) ptx.Reg {
		d := e.Reg(t)
		f(d)
		return d
	}
	ops := []red{
		{"add", ptx.S32, 0, func(e *ptx.Entry, gi ptx.Reg) ptx.Operand {
			return reg(e, ptx.S32, func(d ptx.Reg) { e.Sub(d, gi, ptx.Imm(40)) })
		}, func(gi, o uint32) uint32 { return o + gi - 40 }},
		{"min", ptx.S32, 0, func(e *ptx.Entry, gi ptx.Reg) ptx.Operand {
			return reg(e, ptx.S32, func(d ptx.Reg) { e.Sub(d, gi, ptx.Imm(40)) })
		}, func(gi, o uint32) uint32 { return uint32(min(int32(o), int32(gi)-40)) }},
		{"max", ptx.U32, 0, func(e *ptx.Entry, gi ptx.Reg) ptx.Operand {
			return reg(e, ptx.U32, func(d ptx.Reg) { e.Mul(d, gi, ptx.Imm(3)) })
		}, func(gi, o uint32) uint32 { return max(o, 3*gi) }},
		{"inc", ptx.U32, 0, func(e *ptx.Entry, gi ptx.Reg) ptx.Operand { return ptx.Imm(10) },
			func(gi, o uint32) uint32 { return (o + 1) % 11 }},
		{"dec", ptx.U32, 0, func(e *ptx.Entry, gi ptx.Reg) ptx.Operand { return ptx.Imm(10) },
			func(gi, o uint32) uint32 { return (o + 10) % 11 }},
		{"and", ptx.B32, 0xFFFFFFFF, func(e *ptx.Entry, gi ptx.Reg) ptx.Operand {
			return reg(e, ptx.B32, func(d ptx.Reg) { e.And(d, gi, ptx.Imm(15)); e.Shl(d, ptx.Imm(1), d); e.Not(d, d) })
		}, func(gi, o uint32) uint32 { return o &^ (1 << (gi & 15)) }},
		{"or", ptx.B32, 0, func(e *ptx.Entry, gi ptx.Reg) ptx.Operand {
			return reg(e, ptx.B32, func(d ptx.Reg) { e.And(d, gi, ptx.Imm(15)); e.Shl(d, ptx.Imm(1), d) })
		}, func(gi, o uint32) uint32 { return o | 1<<(gi&15) }},
		{"xor", ptx.B32, 0, func(e *ptx.Entry, gi ptx.Reg) ptx.Operand {
			return reg(e, ptx.B32, func(d ptx.Reg) { e.Mul(d, gi, gi) })
		}, func(gi, o uint32) uint32 { return o ^ gi*gi }},
	}
	const threads = 64
	tx := int64(threads * (4*len(ops) + 8))
	p := clusterKernel(t, 2, func(m *ptx.Module, e *ptx.Entry, out, tid ptx.Reg) {
		buf := m.Shared("buf", ptx.U32, len(ops)+2, 8)
		bar := m.Shared("bar", ptx.B64, 1, 8)
		rank, gi := e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.Mov(rank, ptx.ClusterCtaRank)
		e.Mad(gi, rank, ptx.Imm(32), tid)
		zero, lead := e.Pred(), e.Pred()
		e.Setp(zero, ptx.EQ, tid, ptx.Imm(0))
		e.Setp(lead, ptx.EQ, rank, ptx.Imm(0))
		e.If(zero, func() {
			e.MbarrierInit(ptx.SpaceShared, ptx.At(bar, 0), ptx.Imm(1))
			e.FenceMbarrierInit()
			for i, o := range ops {
				e.St(ptx.SpaceShared, ptx.U32, ptx.At(buf, int64(4*i)), ptx.Imm(int64(o.init)))
			}
			e.St(ptx.SpaceShared, ptx.U64, ptx.At(buf, int64(4*len(ops))), ptx.Imm(0))
		})
		e.BarrierClusterSync()
		a, b := e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.Mapa(ptx.SpaceSharedCluster, a, buf, ptx.Imm(0))
		e.Mapa(ptx.SpaceSharedCluster, b, bar, ptx.Imm(0))
		for i, o := range ops {
			e.RedAsync(o.op, o.t, ptx.At(a, int64(4*i)), o.v(e, gi), ptx.At(b, 0))
		}
		v64 := e.Reg(ptx.U64)
		e.Cvt(v64, gi)
		e.Shl(v64, v64, ptx.Imm(32))
		e.Add(v64, v64, ptx.Imm(1))
		e.RedAsync("add", ptx.U64, ptx.At(a, int64(4*len(ops))), v64, ptx.At(b, 0))
		e.If(lead, func() {
			e.If(zero, func() {
				e.MbarrierArriveExpectTx(ptx.SpaceShared, ptx.ScopeDefault, e.Reg(ptx.B64), ptx.At(bar, 0), ptx.Imm(tx))
			})
			e.MbarrierWait(ptx.SpaceShared, ptx.ScopeCluster, ptx.At(bar, 0), ptx.Imm(0))
			small := e.Pred()
			e.Setp(small, ptx.LT, tid, ptx.Imm(int64(len(ops)+2)))
			e.If(small, func() {
				x, local := e.Reg(ptx.U32), e.Reg(ptx.U32)
				e.Mov(local, buf)
				e.Mad(local, tid, ptx.Imm(4), local)
				e.Ld(ptx.SpaceShared, x, ptx.At(local, 0))
				storeAt(e, out, tid, x)
			})
		})
		e.BarrierClusterSync()
	})
	want := make([]uint32, len(ops)+2)
	for i, o := range ops {
		want[i] = o.init
		for gi := range uint32(threads) {
			want[i] = o.want(gi, want[i])
		}
	}
	var sum uint64
	for gi := range uint64(threads) {
		sum += gi<<32 + 1
	}
	want[len(ops)], want[len(ops)+1] = uint32(sum), uint32(sum>>32)
	for _, seed := range seeds {
		got, err := runOut(t, p, 2, 32, len(want), seed, true)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for i, g := range got {
			if g != want[i] {
				name := "add.u64"
				if i < len(ops) {
					name = ops[i].op + "." + ops[i].t.Name()
				}
				t.Errorf("seed %d: word %d (%s) is %#x, want %#x", seed, i, name, g, want[i])
			}
		}
	}
}

// wantRace runs p (one cluster of size CTAs of 32 threads, n output
// words) under every seed: at least one must report a race mentioning
// want, and every failure must be one; what names the race.
func wantRace(t *testing.T, p *Program, size, n int, want, what string) {
	t.Helper()
	var raced bool
	for _, seed := range seeds {
		if _, err := runOut(t, p, size, 32, n, seed, true); err != nil {
			wantFault(t, err, FaultRace, want)
			raced = true
		}
	}
	if !raced {
		t.Errorf("clusters of %d: %s raced on no schedule", size, what)
	}
}
