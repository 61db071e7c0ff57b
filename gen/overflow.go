package gen

import "github.com/gvr-go/gvr/ptx"

// Rows longer than a cluster holds. Each CTA's slice then has an over
// part, the elements that did not fit in its shared memory, which every
// walk reads from global memory (sliceWalk): a third of each slice at 1M
// with C = 16, read by 16 SMs' loads alone. Two things make those reads
// cheaper:
//
//   - The slice's copy is followed by a bulk prefetch of the over part
//     into L2 (prefetchOver), so that Phase 2's first walk of it finds it
//     there rather than in HBM.
//   - With Config.KeepOver, that first walk keeps the indices of the over
//     vectors that hold an element at or above the lowest point it counts
//     (overKeep): a few a thread. Each later pass at a threshold at or
//     above that point, and Phase 3, loads those vectors again (from L2,
//     four in flight a thread) instead of walking the whole over part. At
//     1M with C = 16 that takes b1 from 23.6 to 19.6 us, b64 1M with C = 2
//     from 308 to 151 (H100); in rows that fit it costs 1-3% (the code),
//     so the Selector takes it where its table says (perf notes 79, 83,
//     84).

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

// overKeep is where a cluster Top-K kernel keeps the vectors of its
// slice's over part in which Phase 2's first pass finds an element at or
// above the lowest point it counts (low): their indices, in Phase 4's two
// histograms (contiguous, unused until then), a thread's j-th kept vector
// in word j*threads + tid. A thread keeps the ones its own walk visits, in
// walk order, while it has slots; a walk at a threshold at or above low
// then visits, in each thread that lost none, the part's head and tail
// elements and its kept vectors, loaded again from global memory (L2),
// instead of the whole part: the same elements at or above the threshold
// per thread, in the same order (Phase 3's positions come from the last
// pass's per-thread counts, whichever each walked). A thread that had more
// than its slots walks its over part as before. A thread's vectors are a
// block of the threads' width apart, so a run of high elements, as the
// synthetic rows have, gives each thread about one (keeping the elements
// themselves, four slots a thread overflowed: perf notes 79).
type overKeep struct {
	slots region
	per   int     // slots a thread
	n     ptx.Reg // u32: this thread's over vectors with an element at or above low
	low   ptx.Reg // f32: the first pass's lowest point
}

// keepGroup is how many kept vectors a thread loads at once.
const keepGroup = 4

// newOverKeep sets up a cluster Top-K kernel's keep (nil where the
// histograms hold less than a slot a thread: with Bins = 2, say, whose two
// 8-byte histograms are not even contiguous, 16-byte aligned).
func (t *topk) newOverKeep() *overKeep {
	h := t.sel.hist
	per := (h[0].bytes + h[1].bytes) / 4 / t.threads
	if t.part == nil || per == 0 {
		return nil
	}
	if h[1].off != h[0].off+h[0].bytes {
		panic("gen: Phase 4's histograms hold a slot a thread but are not contiguous")
	}
	slots := region{name: "keep", off: h[0].off, bytes: h[0].bytes + h[1].bytes}
	return &overKeep{slots: slots, per: per, n: t.constU32(0), low: t.f32()}
}

// countFirst is Phase 2's first pass: this thread's count of its share
// at or above each of pts (countMine), keeping, in a cluster kernel, the
// over vectors with an element at or above the least of them: after each
// group of vectors loaded together, a predicated store and add a vector
// (a branch per element put a convergence barrier, BSSY/BSYNC, around
// each: +1 us of Phase 2 at 1M; perf notes 79).
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
	var xs []ptx.Reg // the group's elements, in visit order
	return t.countGEWalk(func(visit func(x ptx.Reg, idx func() ptx.Reg)) {
		t.heldWalk(s, visit)
		t.overWalkGroups(s, t.cfg.unroll(), func(x ptx.Reg, idx func() ptx.Reg) {
			visit(x, idx)
			xs = append(xs, x)
		}, func(vidx []ptx.Reg) {
			// The head's and tail's elements are not kept: a walk of the
			// kept vectors visits them again.
			V := t.perVec()
			for v, i := range vidx {
				high := t.setp(ptx.GEU, xs[v*V], k.low)
				for _, x := range xs[v*V+1 : (v+1)*V] {
					e.OrPred(high, high, t.setp(ptx.GEU, x, k.low))
				}
				t.keepVec(high, i)
			}
			xs = nil
		})
	}, pts)
}

// keepVec keeps over vector vidx where high, while this thread has slots
// left, and counts it.
func (t *topk) keepVec(high ptx.Pred, vidx ptx.Reg) {
	e, k := t.e, t.keep
	slot := t.u32()
	e.Mad(slot, k.n, ptx.Imm(int64(t.threads)), t.tid)
	room := t.setp(ptx.LT, k.n, ptx.Imm(int64(k.per)))
	e.AndPred(room, room, high)
	e.Guarded(room, func() { e.St(ptx.SpaceShared, ptx.U32, t.smem.elem(k.slots, slot, 4), vidx) })
	e.Guarded(high, func() { e.Add(k.n, k.n, ptx.Imm(1)) })
}

// walkOver visits this thread's over elements at or above thr (or NaN),
// and maybe others: the head's, the kept vectors' and the tail's where
// they hold all of them (thr at or above low, none lost), else the whole
// over part, unroll vectors a step.
func (t *topk) walkOver(thr ptx.Reg, unroll int, visit func(x ptx.Reg, idx func() ptx.Reg)) {
	e, k, s := t.e, t.keep, t.part.s
	if k == nil {
		t.overWalk(s, unroll, visit)
		return
	}
	// Ordered: false where thr or low is NaN.
	use := t.setp(ptx.GE, thr, k.low)
	e.AndPred(use, use, t.setp(ptx.LE, k.n, ptx.Imm(int64(k.per))))
	e.IfElse(use, func() { t.walkKept(visit) }, func() { t.overWalk(s, unroll, visit) })
}

// walkKept is walkOver's walk of the kept vectors, in the over walk's
// order: the head's element, the kept vectors keepGroup loads at a time,
// the tail's element.
func (t *topk) walkKept(visit func(x ptx.Reg, idx func() ptx.Reg)) {
	e, k, s := t.e, t.keep, t.part.s
	rest, inRow := t.overPart(s, visit)
	head := t.headElems(s.over, rest)
	e.If(t.setp(ptx.LT, t.tid, head), func() { t.visitScalar(s.over, t.tid, inRow) })
	v := t.vecsFrom(s.over, rest, head)
	for g := 0; g < k.per; g += keepGroup {
		e.If(t.setp(ptx.GT, k.n, ptx.Imm(int64(g))), func() {
			var in []ptx.Pred
			var vidx []ptx.Reg
			var xs []ptx.Vec
			for j := g; j < min(g+keepGroup, k.per); j++ {
				p := t.setp(ptx.GT, k.n, ptx.Imm(int64(j)))
				slot, vi := t.u32(), t.u32()
				e.Add(slot, t.tid, ptx.Imm(int64(j*t.threads)))
				// A value where the slot is empty too: else ptxas keeps vi's
				// old value alive across Phase 2's passes and spills it
				// (perf notes 86).
				e.Mov(vi, ptx.Imm(0))
				e.Guarded(p, func() { e.Ld(ptx.SpaceShared, vi, t.smem.elem(k.slots, slot, 4)) })
				in, vidx, xs = append(in, p), append(vidx, vi), append(xs, t.loadVecIf(p, v.vrow, vi))
			}
			for u := range in {
				e.If(in[u], func() { t.visitVec(xs[u], head, vidx[u], inRow) })
			}
		})
	}
	t.visitTail(s.over, rest, v, inRow)
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
	t.e.If(over, func() { t.clearShared(t.histOf(t.sel.hist[0]), t.sel.bins) })
	return over
}

// syncKept is the barrier clearKept asks for.
func (t *topk) syncKept(cleared ptx.Pred) {
	if t.keep != nil {
		t.e.If(cleared, t.sync)
	}
}
