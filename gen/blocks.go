package gen

import (
	"fmt"

	"github.com/gvr-go/gvr/ptx"
)

// The building blocks every Top-K kernel is made of: warp and block
// reductions, a block-wide exclusive prefix sum, and a walk over a row with
// 16-byte vector loads. Each emits code into a cta; none knows about Top-K.

const fullMask = -1 // every lane of the warp, as shfl/vote/redux take it

// combine emits d = op(a, b) for op "add", "min" or "max".
func (c *cta) combine(op string, d ptx.Reg, a, b ptx.Operand) {
	switch op {
	case "add":
		c.e.Add(d, a, b)
	case "min":
		c.e.Min(d, a, b)
	case "max":
		c.e.Max(d, a, b)
	case "and":
		c.e.And(d, a, b)
	case "or":
		c.e.Or(d, a, b)
	default:
		panic(fmt.Sprintf("gen: unknown reduction %q", op))
	}
}

// identity is the neutral element of op for type t (u32, s32 or f32 add).
func identity(op string, t ptx.Type) ptx.Operand {
	switch {
	case t == ptx.F32 && op == "add":
		return ptx.Float(0)
	case op == "add":
		return ptx.Imm(0)
	case op == "min" && t == ptx.S32:
		return ptx.Imm(0x7FFFFFFF)
	case op == "min":
		return ptx.Imm(0xFFFFFFFF)
	case op == "max" && t == ptx.S32:
		return ptx.Imm(-0x80000000)
	case op == "max" && t.IsInt(), op == "or":
		return ptx.Imm(0)
	case op == "and":
		return ptx.Imm(0xFFFFFFFF)
	}
	panic(fmt.Sprintf("gen: no identity for %s on %v", op, t))
}

// warpReduce returns op over the 32 lanes of v in every lane. The warp must
// be converged. Integer reductions are one redux.sync where the target has
// it (sm_80+); elsewhere, and for floats, five butterfly shuffles.
func (c *cta) warpReduce(op string, v ptx.Reg) ptx.Reg {
	e := c.e
	d := e.Reg(v.T)
	if v.T.IsInt() && v.T.Bits() == 32 && c.target.Has(ptx.FeatReduxInt) {
		e.Redux(op, d, v, ptx.Imm(fullMask))
		return d
	}
	e.Mov(d, v)
	t := e.Reg(v.T)
	for off := warpSize / 2; off >= 1; off /= 2 {
		e.Shfl(ptx.ShflBfly, t, d, ptx.Imm(int64(off)), ptx.Imm(warpSize-1), ptx.Imm(fullMask))
		c.combine(op, d, d, t)
	}
	return d
}

// blockReduce returns op over every thread's v in every thread (see
// blockReduceN).
func (c *cta) blockReduce(op string, v ptx.Reg, scratch region) ptx.Reg {
	return c.blockReduceN([]string{op}, []ptx.Reg{v}, scratch)[0]
}

// blockReduceN reduces several values at once, vals[i] by ops[i] (u32 or
// s32; f32 for add), and returns the results in every thread. scratch holds
// one word per warp per value. Two barriers whatever the number of values:
// one to publish the warp results, one so that scratch may be reused at
// once. Float sums are deterministic: the reduction tree is fixed.
func (c *cta) blockReduceN(ops []string, vals []ptx.Reg, scratch region) []ptx.Reg {
	c.publishWarpReductions(ops, vals, scratch)
	c.sync()
	out := c.collectWarpReductions(ops, vals, scratch)
	c.sync()
	return out
}

// publishWarpReductions is blockReduceN's first half: each warp's lane 0
// stores the warp's reductions into scratch. A barrier must follow before
// collectWarpReductions.
func (c *cta) publishWarpReductions(ops []string, vals []ptx.Reg, scratch region) {
	e := c.e
	nw := int64(c.warps())
	ws := make([]ptx.Reg, len(vals))
	for i, v := range vals {
		ws[i] = c.warpReduce(ops[i], v)
	}
	e.If(c.setp(ptx.EQ, c.lane, ptx.Imm(0)), func() {
		for i, w := range ws {
			slot := c.u32()
			e.Add(slot, c.warp, ptx.Imm(int64(i)*nw))
			e.St(ptx.SpaceShared, w.T, c.smem.elem(scratch, slot, 4), w)
		}
	})
}

// collectWarpReductions is blockReduceN's second half, past the barrier
// after publishWarpReductions: every warp reduces the per-warp results
// itself (one word per lane), so no second broadcast through shared memory
// is needed. vals give the types. scratch must not be written again before
// another barrier.
func (c *cta) collectWarpReductions(ops []string, vals []ptx.Reg, scratch region) []ptx.Reg {
	e := c.e
	nw := int64(c.warps())
	out := make([]ptx.Reg, len(vals))
	lanes := c.setp(ptx.LT, c.lane, ptx.Imm(nw))
	for i, v := range vals {
		x := e.Reg(v.T)
		e.Mov(x, identity(ops[i], v.T))
		e.If(lanes, func() {
			slot := c.u32()
			e.Add(slot, c.lane, ptx.Imm(int64(i)*nw))
			e.Ld(ptx.SpaceShared, x, c.smem.elem(scratch, slot, 4))
		})
		out[i] = c.warpReduce(ops[i], x)
	}
	return out
}

// reductionRun is scratch for a run of block reductions with one barrier
// each instead of blockReduceN's two: consecutive reductions alternate
// between its two halves, so each writes its half only past the barrier of
// the one before, which every thread reaches after reading that half. The
// run must be straight-line code (none of its reductions in a loop), and
// nothing else may use its scratch.
type reductionRun struct {
	half [2]region // one word per warp per value each
	next int
}

func allocReductionRun(l *layout, name string, values, warps int) *reductionRun {
	r := &reductionRun{}
	for i := range r.half {
		r.half[i] = l.alloc(fmt.Sprintf("%s%d", name, i), 4*values*warps, 16)
	}
	return r
}

// reduceIn is blockReduceN in the run.
func (c *cta) reduceIn(run *reductionRun, ops []string, vals []ptx.Reg) []ptx.Reg {
	s := run.half[run.next%2]
	run.next++
	c.publishWarpReductions(ops, vals, s)
	c.sync()
	return c.collectWarpReductions(ops, vals, s)
}

// sumsIn is reduceIn of sums that also gives each thread the sums of the
// warps before its own (warps): the warps' sums it reads past the
// barrier anyway, one more warp reduction each. With a warp's exclusive
// scan (warpExclusiveScan), which needs no barrier and so can go where
// it waits least, that is each thread's exclusive prefix over the CTA.
func (c *cta) sumsIn(run *reductionRun, vals []ptx.Reg) (tot, warps []ptx.Reg) {
	e := c.e
	s := run.half[run.next%2]
	run.next++
	ops := make([]string, len(vals))
	for i := range ops {
		ops[i] = "add"
	}
	c.publishWarpReductions(ops, vals, s)
	c.sync()
	nw := int64(c.warps())
	lanes := c.setp(ptx.LT, c.lane, ptx.Imm(nw))
	before := c.setp(ptx.LT, c.lane, c.warp)
	for i := range vals {
		x := c.constU32(0)
		e.Guarded(lanes, func() {
			slot := c.u32()
			e.Add(slot, c.lane, ptx.Imm(int64(i)*nw))
			e.Ld(ptx.SpaceShared, x, c.smem.elem(s, slot, 4))
		})
		y := c.u32()
		e.Selp(y, x, ptx.Imm(0), before)
		tot, warps = append(tot, c.warpReduce("add", x)), append(warps, c.warpReduce("add", y))
	}
	return tot, warps
}

// warpExclusiveScan returns the sum of v over lanes 0..lane-1.
func (c *cta) warpExclusiveScan(v ptx.Reg) ptx.Reg {
	x := c.warpInclusiveScan(v)
	c.e.Sub(x, x, v)
	return x
}

// warpInclusiveScan returns the running sum of v over lanes 0..lane.
func (c *cta) warpInclusiveScan(v ptx.Reg) ptx.Reg {
	e := c.e
	x, t := e.Reg(v.T), e.Reg(v.T)
	e.Mov(x, v)
	for off := 1; off < warpSize; off *= 2 {
		e.Shfl(ptx.ShflUp, t, x, ptx.Imm(int64(off)), ptx.Imm(0), ptx.Imm(fullMask))
		// shfl.up returns the lane's own value when lane < off: skip those.
		e.Guarded(c.setp(ptx.GE, c.lane, ptx.Imm(int64(off))), func() { e.Add(x, x, t) })
	}
	return x
}

// blockExclusiveScan returns, in each thread, the sum of v over the threads
// before it, and the sum over all threads. scratch holds one word per warp
// and may be reused at once.
func (c *cta) blockExclusiveScan(v ptx.Reg, scratch region) (excl, total ptx.Reg) {
	excl, total = c.blockScan(v, scratch)
	c.sync()
	return excl, total
}

// blockScan is blockExclusiveScan without the closing barrier: the caller
// must pass a barrier before scratch is written again.
func (c *cta) blockScan(v ptx.Reg, scratch region) (excl, total ptx.Reg) {
	e := c.e
	incl := c.warpInclusiveScan(v)
	e.If(c.setp(ptx.EQ, c.lane, ptx.Imm(warpSize-1)), func() {
		e.St(ptx.SpaceShared, ptx.U32, c.smem.elem(scratch, c.warp, 4), incl)
	})
	c.sync()
	// Each warp scans the warp totals (one per lane) and picks its own offset.
	wt := c.u32()
	e.Mov(wt, ptx.Imm(0))
	e.If(c.setp(ptx.LT, c.lane, ptx.Imm(int64(c.warps()))), func() {
		e.Ld(ptx.SpaceShared, wt, c.smem.elem(scratch, c.lane, 4))
	})
	wincl := c.warpInclusiveScan(wt)
	wexcl := c.u32()
	e.Sub(wexcl, wincl, wt)
	off := c.u32()
	e.Shfl(ptx.ShflIdx, off, wexcl, c.warp, ptx.Imm(warpSize-1), ptx.Imm(fullMask))
	total = c.u32()
	e.Shfl(ptx.ShflIdx, total, wincl, ptx.Imm(int64(c.warps()-1)), ptx.Imm(warpSize-1), ptx.Imm(fullMask))
	excl = c.u32()
	e.Add(excl, off, incl)
	e.Sub(excl, excl, v)
	return excl, total
}

// rowWalk emits a walk over the n scores at global address row, in the one
// order every pass over a row uses, so that a later pass sees each thread's
// elements in the same order as an earlier one: first the scalar head up to
// the first 16-byte boundary (one element per thread), then 16-byte vectors
// (4 floats or 8 16-bit scores) round-robin over the threads, unroll vectors
// per thread in flight at once, then the scalar tail. visit is called (at
// emission time) for each loaded element with its value (widened to f32)
// and a function that emits its row index.
//
// row must be aligned to the score size (any row is); it need not be
// 16-byte aligned, and n need not be a multiple of the vector.
func (c *cta) rowWalk(row ptx.Reg, n ptx.Reg, unroll int, visit func(x ptx.Reg, idx func() ptx.Reg)) {
	c.rowWalkGroups(row, n, unroll, visit, nil)
}

// rowWalkGroups is rowWalk, calling group (if not nil) after each group
// of visits whose elements were loaded together, in the same block as
// they: a step of the unrolled loop or a remainder vector, with the
// vectors' indices (vecsFrom's), or the head's or the tail's element,
// with none. Work for the group as a whole, such as what its elements
// rarely need, goes there.
func (c *cta) rowWalkGroups(row ptx.Reg, n ptx.Reg, unroll int, visit func(x ptx.Reg, idx func() ptx.Reg), group func(vidx []ptx.Reg)) {
	e := c.e
	if group == nil {
		group = func([]ptx.Reg) {}
	}
	T := int64(c.threads)
	head := c.headElems(row, n)
	e.If(c.setp(ptx.LT, c.tid, head), func() {
		c.visitScalar(row, c.tid, visit)
		group(nil)
	})
	v := c.vecsFrom(row, n, head)

	i := c.u32()
	e.Mov(i, c.tid)
	if unroll > 1 {
		// Main loop: unroll vectors in flight per thread, all in range.
		last := c.u32()
		e.While(func() ptx.Pred {
			e.Add(last, i, ptx.Imm(int64(unroll-1)*T))
			return c.setp(ptx.LT, last, v.nvec)
		}, func() {
			xs := make([]ptx.Vec, unroll)
			vidx := make([]ptx.Reg, unroll)
			for u := range unroll {
				vidx[u] = i
				if u > 0 {
					vidx[u] = c.u32()
					e.Add(vidx[u], i, ptx.Imm(int64(u)*T))
				}
				xs[u] = c.loadVec(v.vrow, vidx[u])
			}
			for u := range unroll {
				c.visitVec(xs[u], v.head, vidx[u], visit)
			}
			group(vidx)
			e.Add(i, i, ptx.Imm(int64(unroll)*T))
		})
	}
	// Remainder: one vector at a time.
	e.While(func() ptx.Pred { return c.setp(ptx.LT, i, v.nvec) }, func() {
		x := c.loadVec(v.vrow, i)
		c.visitVec(x, v.head, i, visit)
		group([]ptx.Reg{i})
		e.Add(i, i, ptx.Imm(T))
	})
	c.visitTail(row, n, v, func(x ptx.Reg, idx func() ptx.Reg) {
		visit(x, idx)
		group(nil)
	})
}

// vecs is how a walk splits n scores at a global address into 16-byte
// vectors: head scores before the first 16-byte boundary, then nvec
// vectors from vrow, then the tail.
type vecs struct {
	head, nvec, vrow ptx.Reg
}

// vecsFrom splits the n scores at global address row, head of them
// before the first 16-byte boundary (headElems), as rowWalk does.
func (c *cta) vecsFrom(row, n, head ptx.Reg) vecs {
	e := c.e
	v := vecs{head: head, nvec: c.u32(), vrow: c.u64()}
	e.Sub(v.nvec, n, v.head)
	e.Shr(v.nvec, v.nvec, ptx.Imm(log2(int64(c.perVec()))))
	e.MulWide(v.vrow, v.head, ptx.Imm(int64(c.size())))
	e.Add(v.vrow, v.vrow, row)
	return v
}

// visitTail visits the tail of the n scores at row that v splits, the
// last (n-head) mod perVec, one a thread.
func (c *cta) visitTail(row, n ptx.Reg, v vecs, visit func(x ptx.Reg, idx func() ptx.Reg)) {
	e := c.e
	t0 := c.u32()
	e.Mad(t0, v.nvec, ptx.Imm(int64(c.perVec())), v.head)
	rem := c.u32()
	e.Sub(rem, n, t0)
	e.If(c.setp(ptx.LT, c.tid, rem), func() {
		j := c.u32()
		e.Add(j, t0, c.tid)
		c.visitScalar(row, j, visit)
	})
}

// log2 is the base-2 logarithm of the power of two v.
func log2(v int64) int64 {
	l := int64(0)
	for v > 1 {
		v >>= 1
		l++
	}
	return l
}

// headElems is how many scores at global address a come before the first
// 16-byte boundary at or after it (0 to perVec-1), at most n.
func (c *cta) headElems(a, n ptx.Reg) ptx.Reg {
	e := c.e
	lo := c.u32()
	e.Cvt(lo, a)
	e.And(lo, lo, ptx.Imm(15))
	head := c.u32()
	e.Sub(head, ptx.Imm(16), lo)
	e.And(head, head, ptx.Imm(15))
	e.Shr(head, head, ptx.Imm(log2(int64(c.size()))))
	e.Min(head, head, n)
	return head
}

func (c *cta) visitScalar(row, j ptx.Reg, visit func(ptx.Reg, func() ptx.Reg)) {
	x := c.f32()
	c.loadScore(x, row, j)
	visit(x, func() ptx.Reg { return j })
}

// loadVec loads vector v of the vectors at global address vrow.
func (c *cta) loadVec(vrow, v ptx.Reg) ptx.Vec {
	return c.loadVecIf(ptx.Pred{}, vrow, v)
}

// loadVecIf is loadVec in the threads where p holds (every thread for the
// zero Pred); elsewhere the vector is undefined.
func (c *cta) loadVecIf(p ptx.Pred, vrow, v ptx.Reg) ptx.Vec {
	e := c.e
	a := c.u64()
	e.MulWide(a, v, ptx.Imm(16))
	e.Add(a, a, vrow)
	x := c.newVec()
	if p == (ptx.Pred{}) {
		e.LdNC(x, ptx.At(a, 0))
	} else {
		e.Guarded(p, func() { e.LdNC(x, ptx.At(a, 0)) })
	}
	return x
}

func (c *cta) visitVec(x ptx.Vec, head, v ptx.Reg, visit func(ptx.Reg, func() ptx.Reg)) {
	xs := c.unpackVec(x)
	// The vector's first index, computed once and only if some visit asks:
	// a pass that does not need indices pays nothing (ptxas drops it).
	base := c.u32()
	c.e.Mad(base, v, ptx.Imm(int64(len(xs))), head)
	for j, xj := range xs {
		visit(xj, func() ptx.Reg {
			if j == 0 {
				return base
			}
			idx := c.u32()
			c.e.Add(idx, base, ptx.Imm(int64(j)))
			return idx
		})
	}
}

// countGE returns this thread's count of the elements of its share of the
// row that are >= thr or NaN. The set {x : x >= thr or x is NaN} is closed
// upwards in the Top-K key order (NaN above +Inf; -0 and +0 compare equal
// here, which only widens the set by elements equal in value), so a count of
// it is a valid count for bracketing the K-th key.
func (c *cta) countGE(row, n, thr ptx.Reg, unroll int) ptx.Reg {
	return c.countGEMulti(row, n, []ptx.Reg{thr}, unroll)[0]
}

// countGEMulti is countGE for several thresholds in one pass over the row.
func (c *cta) countGEMulti(row, n ptx.Reg, thrs []ptx.Reg, unroll int) []ptx.Reg {
	return c.countGEWalk(func(visit func(ptx.Reg, func() ptx.Reg)) { c.rowWalk(row, n, unroll, visit) }, thrs)
}

// countGEWalk is countGEMulti over the elements walk visits.
func (c *cta) countGEWalk(walk func(visit func(x ptx.Reg, idx func() ptx.Reg)), thrs []ptx.Reg) []ptx.Reg {
	e := c.e
	cnts := make([]ptx.Reg, len(thrs))
	for i := range cnts {
		cnts[i] = c.constU32(0)
	}
	walk(func(x ptx.Reg, _ func() ptx.Reg) {
		for i, thr := range thrs {
			p := c.pred()
			e.Setp(p, ptx.GEU, x, thr)
			e.Guarded(p, func() { e.Add(cnts[i], cnts[i], ptx.Imm(1)) })
		}
	})
	return cnts
}
