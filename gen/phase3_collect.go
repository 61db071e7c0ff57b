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
// buffer. The prefix sum over the CTA of Phase 2's counts at v.thr, taken
// with their sums (rowTotals), gives where each thread's candidates go: no
// ballots, no atomics, no second counting pass, no scan of its own, and
// the same order every run. In a cluster kernel the
// buffer that counts is the leader's: each CTA collects into its own, then
// copies them there after the candidates of the CTAs of lower rank
// (v.below), a warp's stores to consecutive words, as distributed shared
// memory takes them best (one thread's scattered run of remote stores
// each measured slower). With Config.SureSet the sure ones (v.sure) go
// after the others (collectParts). cleared says whether clearKept cleared
// Phase 4's first histogram, which then needs a barrier before Phase 4
// (syncKept).
func (t *topk) phase3Collect(v verdict) (cleared ptx.Pred) {
	e := t.e
	e.Comment("Phase 3: ballot-free candidate collection")
	c := t.collectParts(v)
	t.mark(MarkP3Placed)
	if t.early {
		e.If(t.earlyKept(v).Not(), func() { t.collectWalk(v, c) })
	} else {
		t.collectWalk(v, c)
	}
	t.sync()
	t.mark(MarkP3Walked)
	if c.unpack != nil {
		c.unpack()
	}
	cleared = t.clearKept()
	toIdx := t.candIdxOff()
	if t.part == nil || t.part.size == 1 {
		return cleared
	}
	if t.group != nil {
		// A cluster after the row's first hands its candidates over
		// through global memory, and is done.
		t.e.If(t.group.first.Not(), func() {
			t.handToFirst(c)
			t.e.Ret()
		})
	}
	// The leader's own are in place (v.below is 0 there); the others' go
	// to the leader's buffer after the candidates of the CTAs of lower
	// rank (in each part, with the sure ones set apart): with mbarrier
	// rounds as st.async stores completing on the leader's hand-over
	// mbarrier, which its own arrival makes expect the others' bytes; then
	// the others end and the leader alone waits, with no fence or arrival
	// of theirs. Else by DSMEM stores and a cluster barrier.
	mbar := t.part.mbar()
	var hand, remoteHand ptx.Reg
	if mbar {
		hand = t.part.handOver(t.cta)
	}
	// handed is how many of this CTA's candidates go to the leader's
	// buffer, all how many it holds then: every candidate, or where the
	// CTAs write their sure ones out themselves (outSure), the others.
	handed, all, direct := c.ours, v.total, ptx.Pred{}
	if t.group != nil {
		all = v.own // the first cluster's; the others' come from the workspace
	}
	if c.outSure != nil {
		var sure ptx.Reg
		direct, all, sure = t.sureDirect()
		t.sureOut = direct
		handed = t.u32()
		e.Selp(handed, c.ourRest, c.ours, direct)
		e.Guarded(direct.Not(), func() { e.Add(all, all, sure) })
	}
	e.If(t.part.leader.Not(), func() {
		if mbar {
			remoteHand = t.u32()
			e.Mapa(ptx.SpaceSharedCluster, remoteHand, hand, ptx.Imm(0))
		}
		j := t.u32()
		e.For(j, t.tid, handed, ptx.Imm(int64(t.threads)), func() {
			src := c.from(j)
			b, i := t.loadCand(src)
			d := t.candSlot(c.to(j, src))
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
	// The sure ones go out while the leader waits for the others.
	outSure := func() {
		if c.outSure != nil {
			e.If(direct, c.outSure)
		}
	}
	if !mbar {
		// Every CTA's candidates are in the leader's buffer before it reads them.
		e.BarrierClusterArrive(ptx.SemRelease)
		outSure()
		if t.group != nil {
			// The other clusters' while this one's arrive.
			e.If(t.part.leader, func() { t.gatherGroups(v.own, v.total) })
		}
		e.BarrierClusterWait(ptx.SemAcquire)
		return
	}
	outSure()
	e.If(t.part.leader, func() {
		e.If(t.setp(ptx.EQ, t.tid, ptx.Imm(0)), func() {
			others := t.u32() // bytes: a value and an index per candidate of the others
			e.Sub(others, all, handed)
			e.Shl(others, others, ptx.Imm(3))
			e.MbarrierArriveExpectTx(ptx.SpaceShared, ptx.ScopeDefault, e.Reg(ptx.B64), ptx.At(hand, 0), others)
		})
		if t.group != nil {
			// The other clusters' while this one's arrive.
			t.gatherGroups(v.own, v.total)
		}
		e.MbarrierWait(ptx.SpaceShared, ptx.ScopeCluster, ptx.At(hand, 0), ptx.Imm(0))
	})
	return cleared
}

// collected is where Phase 3 puts a CTA's candidates.
type collected struct {
	a, as ptx.Reg // this thread's next slot (shared address) of the others, and of the sure ones (Config.SureSet)
	ours  ptx.Reg // the CTA's candidates
	// from gives the slot of the CTA's j-th candidate in its own buffer,
	// and to (with from's answer) the slot it takes in the leader's
	// (cluster kernels).
	from func(j ptx.Reg) ptx.Reg
	to   func(j, from ptx.Reg) ptx.Reg
	// unpack, if not nil, sets ours (and what from and to need) past the
	// walk.
	unpack func()
	// With the sure set in a cluster kernel (not sorted): this CTA's
	// candidates below the sure threshold (ourRest, the first of ours),
	// and outSure, which writes its sure ones to their output slots.
	ourRest ptx.Reg
	outSure func()
}

// collectParts places this thread's candidates: after those of the
// threads (and in a cluster, of the CTAs) before it. With Config.SureSet
// the buffer holds the candidates below the sure threshold first, then
// the sure ones (v.sure; all of the candidates where none is sure), each
// part in row order. Phase 2's prefixes of both counts place them, packed
// in the halves of a word (a CTA's candidates fit the buffer, so neither
// half carries), and so are the counts needed past the walk, which then
// carries few registers: ptxas spilled in the walk otherwise.
func (t *topk) collectParts(v verdict) collected {
	e := t.e
	slot := t.candSlot
	if !t.cfg.SureSet {
		pos, ours := v.excl, v.cta
		e.Mov(t.ncand, v.total)
		return collected{a: slot(pos), ours: ours, from: func(j ptx.Reg) ptx.Reg { return j }, to: func(j, _ ptx.Reg) ptx.Reg {
			d := t.u32()
			e.Add(d, j, v.below)
			return d
		}}
	}
	pack := func(all, sure ptx.Reg) ptx.Reg { // (all - sure) | sure << 16
		p := t.u32()
		e.Sub(p, all, sure)
		e.Mad(p, sure, ptx.Imm(1<<16), p)
		return p
	}
	// The packing is linear: the packed prefixes are the prefixes' packs.
	pos, ours := pack(v.excl, v.sure.excl), pack(v.cta, v.sure.cta)
	rest := t.u32() // the row's candidates below the sure threshold
	e.Sub(rest, v.total, v.sure.total)
	e.Mov(t.ncand, v.total)
	t.splitFor4(v, rest)
	var below ptx.Reg
	if t.part != nil && t.part.size > 1 {
		below = pack(v.below, v.sure.below)
	}
	c := collected{a: t.u32(), as: t.u32(), ours: t.u32()}
	e.And(c.a, pos, ptx.Imm(0xFFFF))
	e.Mov(c.a, slot(c.a))
	e.Shr(c.as, pos, ptx.Imm(16))
	e.Add(c.as, c.as, rest)
	e.Mov(c.as, slot(c.as))
	// Unpacked past the walk.
	ourRest := t.u32()
	// The others' j-th, then the sure ones', each past the lower ranks'
	// of its part.
	c.from = func(j ptx.Reg) ptx.Reg {
		src := t.u32()
		e.Mov(src, j)
		e.Guarded(t.setp(ptx.GE, j, ourRest), func() {
			e.Sub(src, j, ourRest)
			e.Add(src, src, rest)
		})
		return src
	}
	c.to = func(j, src ptx.Reg) ptx.Reg {
		d := t.u32()
		e.And(d, below, ptx.Imm(0xFFFF))
		e.Add(d, d, j)
		e.Guarded(t.setp(ptx.GE, j, ourRest), func() {
			e.Shr(d, below, ptx.Imm(16))
			e.Add(d, d, src)
		})
		return d
	}
	c.unpack = func() {
		e.And(ourRest, ours, ptx.Imm(0xFFFF))
		e.Shr(c.ours, ours, ptx.Imm(16))
		e.Add(c.ours, c.ours, ourRest)
	}
	if t.sureOutByCTAs() {
		c.ourRest = ourRest
		// The slots Phase 4's copy would give them (copyCands): the
		// leader's buffer holds the sure ones past the others, in rank
		// order, and copies them to the first slots in buffer order.
		c.outSure = func() {
			j := t.u32()
			n := t.u32()
			e.Sub(n, c.ours, ourRest)
			e.For(j, t.tid, n, ptx.Imm(int64(t.threads)), func() {
				src := t.u32()
				e.Add(src, j, rest)
				b, i := t.loadCand(src)
				slot := t.u32()
				e.Shr(slot, below, ptx.Imm(16))
				e.Add(slot, slot, j)
				t.store(t.out, slot, i, b)
				if p := t.out.pages; p != nil {
					// Their page-table output too: the leader maps only
					// the slots it writes itself (writePages).
					e.If(p.has, func() {
						col, v := t.u32(), t.u32()
						e.Add(col, i, t.out.start)
						t.pageOf(v, col)
						e.St(ptx.SpaceGlobal, ptx.U32, t.elemAddr(p.out, slot, 4), v)
					})
				}
			})
		}
	}
	return c
}

// sureOutByCTAs reports whether a kernel's CTAs write their own sure
// candidates out where some are sure (outSure, sureDirect): a cluster
// kernel with the sure set, but not with sorted output, which stages in
// the leader's shared memory. writePages relies on the same answer
// (pagesAfterSure).
func (t *topk) sureOutByCTAs() bool {
	return t.part != nil && t.part.size > 1 && t.cfg.SureSet && t.out.stage == nil
}

// sureDirect is whether a cluster's CTAs write their sure candidates to
// the output themselves (outSure), read past the walk's barrier from
// splitFor4's counts (which the walk then need not carry): where some are
// sure. They map their page-table output too, and the leader maps only
// the slots after theirs (writePages, pagesAfterSure), which it wrote: it
// maps from the index slots it reads back, and would need the others'
// stores ordered before its reads. It also returns those counts: how
// many candidates Phase 4 selects from, and how many are sure.
func (t *topk) sureDirect() (direct ptx.Pred, sel, sure ptx.Reg) {
	e := t.e
	sel, sure = t.u32(), t.u32()
	e.Ld(ptx.SpaceShared, sel, t.smem.at(t.split, 0))
	e.Ld(ptx.SpaceShared, sure, t.smem.at(t.split, 4))
	return t.setp(ptx.NE, sure, ptx.Imm(0)), sel, sure
}

// splitFor4 tells Phase 4, through shared memory (the walk between
// carries few registers), how many candidates it selects from, the first
// in the buffer, and how many sure ones follow them; where some are sure,
// the candidates it selects from are all below the sure threshold, which
// tops Phase 4's span (guessSpan) instead of the sample's largest value.
func (t *topk) splitFor4(v verdict, rest ptx.Reg) {
	e := t.e
	e.If(t.setp(ptx.EQ, t.tid, ptx.Imm(0)), func() {
		sel, sure := t.u32(), t.constU32(0)
		e.Mov(sel, v.total)
		e.If(v.sure.has, func() {
			e.Mov(sel, rest)
			e.Mov(sure, v.sure.total)
			top := t.key(t.bitsOf(v.sure.thr))
			e.Sub(top, top, ptx.Imm(1))
			e.St(ptx.SpaceShared, ptx.U32, t.smem.at(t.sampleTop, 0), top)
		})
		e.St(ptx.SpaceShared, ptx.U32, t.smem.at(t.split, 0), sel)
		e.St(ptx.SpaceShared, ptx.U32, t.smem.at(t.split, 4), sure)
		if t.nsure.T != ptx.TypeInvalid {
			e.Mov(t.nsure, sure)
		}
	})
}

// candSlot is the shared address of candidate slot j's value; its
// index's is candIdxOff bytes past it.
func (t *topk) candSlot(j ptx.Reg) ptx.Reg {
	a := t.u32()
	t.e.Mad(a, j, ptx.Imm(4), t.smem.base)
	t.e.Add(a, a, ptx.Imm(int64(t.cand.bits.off)))
	return a
}

// candIdxOff is how far a candidate slot's index lies past its value.
func (t *topk) candIdxOff() int64 { return int64(t.cand.idx.off - t.cand.bits.off) }

// collectWalk is Phase 3's walk: it stores this thread's candidates of
// v.thr at c's slots, in walk order.
func (t *topk) collectWalk(v verdict, c collected) {
	e := t.e
	toIdx := t.candIdxOff()
	// The over walk 16 elements a step, not cfg.unroll()'s 32 or 48: the
	// element indices a step carries beside its values made ptxas spill
	// (perf notes 86-88).
	t.walkMine(v.thr, min(collectOverElems/t.perVec(), t.cfg.unroll()), func(x ptx.Reg, idx func() ptx.Reg) {
		// Predicated, not branched: the pass streams like a counting pass.
		// (One 8-byte store of value and index measured 60% slower on an
		// H200 than these two.)
		p := t.setp(ptx.GEU, x, v.thr)
		at, sure := c.a, ptx.Pred{}
		if c.as.T != ptx.TypeInvalid {
			// A candidate goes to its part's slot and moves that part on:
			// the others' by 4 - 4 for a sure one (v.sure.thr >= v.thr:
			// a sure one is a candidate), the sure ones' by 4.
			sure = t.setp(ptx.GEU, x, v.sure.thr)
			at = t.u32()
			e.Selp(at, c.as, c.a, sure)
		}
		e.Guarded(p, func() {
			e.St(ptx.SpaceShared, ptx.F32, ptx.At(at, 0), x)
			e.St(ptx.SpaceShared, ptx.U32, ptx.At(at, toIdx), idx())
			e.Add(c.a, c.a, ptx.Imm(4))
		})
		if c.as.T != ptx.TypeInvalid {
			e.Guarded(sure, func() {
				e.Sub(c.a, c.a, ptx.Imm(4))
				e.Add(c.as, c.as, ptx.Imm(4))
			})
		}
	})
}

// earlyCollect is, where clusters share the row (Config.Groups) and
// Phase 3's walk is the plain one (no sure set, no keep), the first
// pass's work while the row's round is out (groupTotals): Phase 3's walk
// at the first point, the one the verdict keeps on most rows, into this
// CTA's buffer at the slots Phase 3 would give its candidates there.
// Phase 3 then walks only where the verdict is another threshold
// (earlyKept). It collects nothing early where
//   - the CTA's part is longer than earlyMaxShare: the round through
//     global memory waits about as long as a walk over that many, and a
//     longer walk, wasted on a row whose verdict is another threshold,
//     costs more than a kept one saves (perf notes 179);
//   - the other point is not below the first: a verdict there would
//     place the candidates of the leader's cluster, which arrive in its
//     buffer meanwhile, over the leader's early ones;
//   - the CTA's candidates there would not fit its buffer.
//
// The threshold collected at waits where Phase 1 handed over the points
// (guessOut, read only then), NaN where nothing was: in a register across
// the round, ptxas spilled it.
func (t *topk) earlyCollect(g guess) func(excl, cta []ptx.Reg) {
	if t.group == nil || t.cfg.SureSet || t.keep != nil {
		return nil
	}
	t.early = true
	return func(excl, cta []ptx.Reg) {
		e := t.e
		e.Comment("Phase 3's walk at the first point, while the round is out")
		hi, lo := g.first[0], g.first[1] // first[1] aims at more candidates
		done := t.setp(ptx.LE, lo, hi)   // NaN: not ordered
		e.AndPred(done, done, t.setp(ptx.LE, cta[0], ptx.Imm(int64(t.cfg.MaxCandidates))))
		e.AndPred(done, done, t.setp(ptx.LE, t.part.s.n, ptx.Imm(int64(earlyMaxShare))))
		e.If(t.setp(ptx.EQ, t.tid, ptx.Imm(0)), func() {
			at := t.f32()
			e.Selp(at, hi, ptx.FloatBits(0x7FC00000), done)
			e.St(ptx.SpaceShared, ptx.F32, t.smem.at(t.guessOut, 0), at)
		})
		e.If(done, func() { t.collectWalk(verdict{thr: hi}, collected{a: t.candSlot(excl[0])}) })
	}
}

// earlyMaxShare is the longest part of a row a CTA collects early
// (earlyCollect): a walk over 16K elements in shared memory takes ~1 us,
// about what the round's wait leaves (perf notes 179). A variable only so
// that the tests can take both paths on short rows.
var earlyMaxShare = 16384

// earlyKept is whether earlyCollect collected the candidates of the
// verdict v already.
func (t *topk) earlyKept(v verdict) ptx.Pred {
	at := t.f32()
	t.e.Ld(ptx.SpaceShared, at, t.smem.at(t.guessOut, 0))
	return t.setp(ptx.EQ, v.thr, at) // NaN: not kept
}
