package gen

import "github.com/gvr-go/gvr/ptx"

// Rows longer than a cluster holds. Each CTA's slice then has an over
// part, the elements that did not fit in its shared memory, which every
// walk reads from global memory (sliceWalk): a third of each slice at 1M
// with C = 16, read by 16 SMs' loads alone. Two things keep those reads
// off the later walks:
//
//   - The slice's copy is followed by a bulk prefetch of the over part
//     into L2 (prefetchOver), so that Phase 2's first walk of it finds it
//     there rather than in HBM.
//   - With Config.KeepOver, that first walk keeps the over elements at or
//     above the lowest point it counts in shared memory (overKeep): about
//     as many as the candidates there, a few per thread. Each later pass
//     at a threshold at or above that point, and Phase 3, walks them
//     instead of the over part. It pays where many rows read their over
//     parts at once (batch 16-64 at 1M: -20 to -31% with C = 8), and costs
//     at batch 1 (+5 to +11%; the synthetic rows' over candidates sit in
//     one CTA's slice, whose threads overflow their slots) and, with C =
//     16, in rows that fit (+10%: the added code), so the Selector takes
//     it only where its table says (perf notes 79, 83).

// prefetchMax is the most bytes one bulk prefetch asks for.
const prefetchMax = 64 << 10

// prefetchOver asks for s's over part in L2: the 16-byte-aligned bytes
// within it, in bulk prefetches of at most prefetchMax bytes. Thread 0,
// once the slice's copy is issued; nothing where the slice fits.
func (c *cta) prefetchOver(s slice) {
	e := c.e
	size := int64(c.size())
	rest := c.u32()
	e.Sub(rest, s.n, s.held)
	e.If(c.setp(ptx.GT, rest, ptx.Imm(0)), func() {
		lo, hi := c.u64(), c.u64()
		e.MulWide(hi, rest, ptx.Imm(size))
		e.Add(hi, hi, s.over)
		e.And(hi, hi, ptx.Imm(-16))
		e.Add(lo, s.over, ptx.Imm(15))
		e.And(lo, lo, ptx.Imm(-16))
		e.While(func() ptx.Pred { return c.setp(ptx.LT, lo, hi) }, func() {
			n := c.u64()
			e.Sub(n, hi, lo)
			e.Min(n, n, ptx.Imm(prefetchMax))
			n32 := c.u32()
			e.Cvt(n32, n)
			e.CpAsyncBulkPrefetchL2(ptx.At(lo, 0), n32)
			e.Add(lo, lo, n)
		})
	})
}

// overKeep is where a cluster Top-K kernel keeps the over elements of
// its slice that Phase 2's first pass finds at or above the lowest point
// it counts (low): in Phase 4's two histograms, unused until then, a
// thread's j-th kept element in word j*threads + tid of each (its float
// bits in the first, its index in the second). A thread keeps the ones
// its own walk visits, in walk order, while it has slots; a walk at a
// threshold at or above low then visits, in each thread that lost none,
// the kept ones instead of its over part: the same elements at or above
// the threshold per thread, in a fixed order (Phase 3's positions come
// from the last pass's per-thread counts, whichever each walked). A
// thread that had more than its slots walks its over part as before.
type overKeep struct {
	bits, idx region  // the slots
	per       int     // slots a thread
	n         ptx.Reg // u32: this thread's over elements at or above low
	low       ptx.Reg // f32: the first pass's lowest point
}

// newOverKeep sets up a cluster Top-K kernel's keep (nil where the
// histograms hold less than a slot a thread).
func (t *topk) newOverKeep() *overKeep {
	per := t.sel.bins / t.threads
	if t.part == nil || per == 0 {
		return nil
	}
	return &overKeep{bits: t.sel.hist[0], idx: t.sel.hist[1], per: per, n: t.constU32(0), low: t.f32()}
}

// countFirst is Phase 2's first pass: this thread's count of its share
// at or above each of pts (countMine), keeping, in a cluster kernel, the
// over elements at or above the least of them. Few are: the walk tests
// each group of elements loaded together at once, and branches to keep
// them only where one is (a branch per element put a convergence barrier,
// BSSY/BSYNC, around each: +1 us of Phase 2 at 1M; predicated, the
// stores' operands for the elements in flight spilled).
func (t *topk) countFirst(pts []ptx.Reg) []ptx.Reg {
	k := t.keep
	if k == nil {
		return t.countMine(pts)
	}
	e := t.e
	e.Mov(k.low, pts[0])
	for _, p := range pts[1:] {
		e.Min(k.low, k.low, p) // min.f32 of a NaN and a number is the number
	}
	s := t.part.s
	type elem struct {
		x   ptx.Reg
		idx func() ptx.Reg
	}
	var group []elem
	some := t.falsePred()
	return t.countGEWalk(func(visit func(x ptx.Reg, idx func() ptx.Reg)) {
		t.heldWalk(s, visit)
		t.overWalkGroups(s, t.cfg.unroll(), func(x ptx.Reg, idx func() ptx.Reg) {
			visit(x, idx)
			e.OrPred(some, some, t.setp(ptx.GEU, x, k.low))
			group = append(group, elem{x, idx})
		}, func() {
			e.If(some, func() {
				for _, g := range group {
					t.keepOver(g.x, g.idx)
				}
				e.SetpT(ptx.U32, some, ptx.NE, t.k, t.k)
			})
			group = nil
		})
	}, pts)
}

// keepOver keeps over element x (index idx()) if it is at or above low or
// NaN, as a count at low takes it, while this thread has slots left.
func (t *topk) keepOver(x ptx.Reg, idx func() ptx.Reg) {
	e, k := t.e, t.keep
	e.If(t.setp(ptx.GEU, x, k.low), func() {
		e.If(t.setp(ptx.LT, k.n, ptx.Imm(int64(k.per))), func() {
			slot := t.u32()
			e.Mad(slot, k.n, ptx.Imm(int64(t.threads)), t.tid)
			e.St(ptx.SpaceShared, ptx.U32, t.smem.elem(k.bits, slot, 4), t.bitsOf(x))
			e.St(ptx.SpaceShared, ptx.U32, t.smem.elem(k.idx, slot, 4), idx())
		})
		e.Add(k.n, k.n, ptx.Imm(1))
	})
}

// walkOver visits this thread's over elements at or above thr (or NaN),
// and maybe others: the kept ones where they are all of them (thr at or
// above low, none lost), else the whole over part.
func (t *topk) walkOver(thr ptx.Reg, visit func(x ptx.Reg, idx func() ptx.Reg)) {
	e, k, s := t.e, t.keep, t.part.s
	if k == nil {
		t.overWalk(s, t.cfg.unroll(), visit)
		return
	}
	// Ordered: false where thr or low is NaN.
	use := t.setp(ptx.GE, thr, k.low)
	e.AndPred(use, use, t.setp(ptx.LE, k.n, ptx.Imm(int64(k.per))))
	e.IfElse(use, func() {
		for j := range k.per {
			e.If(t.setp(ptx.GT, k.n, ptx.Imm(int64(j))), func() {
				slot := t.u32()
				e.Add(slot, t.tid, ptx.Imm(int64(j*t.threads)))
				x, i := t.f32(), t.u32()
				e.Ld(ptx.SpaceShared, x, t.smem.elem(k.bits, slot, 4))
				e.Ld(ptx.SpaceShared, i, t.smem.elem(k.idx, slot, 4))
				visit(x, func() ptx.Reg { return i })
			})
		}
	}, func() { t.overWalk(s, t.cfg.unroll(), visit) })
}

// clearKept clears Phase 4's first histogram again, past Phase 3's walk
// and its barrier, where this CTA's slice has an over part (clearSelect
// cleared it before the keep): before the leader waits for the others'
// candidates, off Phase 4's path. It returns whether it did; a barrier
// must then come before Phase 4 (syncKept).
func (t *topk) clearKept() ptx.Pred {
	k := t.keep
	if k == nil {
		return ptx.Pred{}
	}
	s := t.part.s
	over := t.setp(ptx.GT, s.n, s.held)
	t.e.If(over, func() { t.clearShared(t.histOf(k.bits), t.sel.bins) })
	return over
}

// syncKept is the barrier clearKept asks for.
func (t *topk) syncKept(cleared ptx.Pred) {
	if t.keep != nil {
		t.e.If(cleared, t.sync)
	}
}
