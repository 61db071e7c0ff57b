package gen

// Phase 3, the ballot-free collection of the candidates at or above
// Phase 2's threshold.

import (
	"github.com/gvr-go/gvr/ptx"
)

// collectOverElems is the elements a step of Phase 3's walk over the part
// of a slice that did not fit into a cluster's shared memory loads: 4
// vectors of float32 scores, 2 of 16-bit ones.
const collectOverElems = 16

// phase3Collect writes every element >= v.thr (or NaN) into the candidate
// buffer. Each thread's count from Phase 2's last pass gives, by a block
// prefix sum, where its candidates go: no ballots, no atomics, no second
// counting pass, and the same order every run. In a cluster kernel the
// buffer that counts is the leader's: each CTA collects into its own, then
// copies them there after the candidates of the CTAs of lower rank
// (v.below), a warp's stores to consecutive words, as distributed shared
// memory takes them best (one thread's scattered run of remote stores
// each measured slower). cleared says whether clearKept cleared Phase 4's
// first histogram, which then needs a barrier before Phase 4 (syncKept).
func (t *topk) phase3Collect(v verdict) (cleared ptx.Pred) {
	e := t.e
	e.Comment("Phase 3: ballot-free candidate collection")
	// No closing barrier: the scan's scratch is next written in Phase 4,
	// past the barrier after the walk.
	pos, ours := t.blockScan(v.mine, t.sel.scratch)
	e.Mov(t.ncand, v.total)
	// One shared address walks this thread's slots: the index slot is at a
	// fixed distance from the value slot.
	a := t.u32()
	e.Mad(a, pos, ptx.Imm(4), t.smem.base)
	e.Add(a, a, ptx.Imm(int64(t.cand.bits.off)))
	toIdx := int64(t.cand.idx.off - t.cand.bits.off)
	// The over walk 16 elements a step, not cfg.unroll()'s 32 or 48: the
	// element indices a step carries beside its values made ptxas spill
	// (perf notes 86-88).
	t.walkMine(v.thr, min(collectOverElems/t.perVec(), t.cfg.unroll()), func(x ptx.Reg, idx func() ptx.Reg) {
		// Predicated, not branched: the pass streams like a counting pass.
		// (One 8-byte store of value and index measured 60% slower on an
		// H200 than these two.)
		p := t.setp(ptx.GEU, x, v.thr)
		e.Guarded(p, func() {
			e.St(ptx.SpaceShared, ptx.F32, ptx.At(a, 0), x)
			e.St(ptx.SpaceShared, ptx.U32, ptx.At(a, toIdx), idx())
			e.Add(a, a, ptx.Imm(4))
		})
	})
	t.sync()
	cleared = t.clearKept()
	if t.part == nil || t.part.size == 1 {
		return cleared
	}
	// The leader's own are in place (v.below is 0 there); the others' go
	// to [below, below+ours) of the leader's buffer: with mbarrier rounds
	// as st.async stores completing on the leader's hand-over mbarrier,
	// which its own arrival makes expect the others' bytes; then the
	// others end and the leader alone waits, with no fence or arrival of
	// theirs. Else by DSMEM stores and a cluster barrier.
	mbar := t.part.mbar()
	var hand, remoteHand ptx.Reg
	if mbar {
		hand = t.part.handOver(t.cta)
	}
	e.If(t.part.leader.Not(), func() {
		if mbar {
			remoteHand = t.u32()
			e.Mapa(ptx.SpaceSharedCluster, remoteHand, hand, ptx.Imm(0))
		}
		j := t.u32()
		e.For(j, t.tid, ours, ptx.Imm(int64(t.threads)), func() {
			b, i := t.loadCand(j)
			d := t.u32()
			e.Add(d, j, v.below)
			e.Mad(d, d, ptx.Imm(4), t.smem.base)
			e.Add(d, d, ptx.Imm(int64(t.cand.bits.off)))
			e.Mapa(ptx.SpaceSharedCluster, d, d, ptx.Imm(0))
			if mbar {
				e.StAsync(ptx.U32, ptx.At(d, 0), b, ptx.At(remoteHand, 0))
				e.StAsync(ptx.U32, ptx.At(d, toIdx), i, ptx.At(remoteHand, 0))
				return
			}
			e.St(ptx.SpaceSharedCluster, ptx.U32, ptx.At(d, 0), b)
			e.St(ptx.SpaceSharedCluster, ptx.U32, ptx.At(d, toIdx), i)
		})
	})
	if !mbar {
		// Every CTA's candidates are in the leader's buffer before it reads them.
		e.BarrierClusterArrive(ptx.SemRelease)
		e.BarrierClusterWait(ptx.SemAcquire)
		return
	}
	e.If(t.part.leader, func() {
		e.If(t.setp(ptx.EQ, t.tid, ptx.Imm(0)), func() {
			others := t.u32() // bytes: a value and an index per candidate of the others
			e.Sub(others, v.total, ours)
			e.Shl(others, others, ptx.Imm(3))
			e.MbarrierArriveExpectTx(ptx.SpaceShared, ptx.ScopeDefault, e.Reg(ptx.B64), ptx.At(hand, 0), others)
		})
		e.MbarrierWait(ptx.SpaceShared, ptx.ScopeCluster, ptx.At(hand, 0), ptx.Imm(0))
	})
	return cleared
}
