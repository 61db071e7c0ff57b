package gen

import (
	"math/bits"

	"github.com/gvr-go/gvr/ptx"
)

// Exact selection. A walker visits a set of elements (a row in global
// memory, or the candidates in shared memory); radixSelect finds the R-th
// largest rank among them digit by digit with a shared-memory histogram, and
// writeSelected writes the chosen elements in walk order. Together they pick
// exactly K elements with ties broken by lowest index, whatever the input.

// elem is one visited element: its float bits, a function that emits its
// row index (computed only where needed) and, where the walker has it
// already, its key (keyOf).
type elem struct {
	bits ptx.Reg
	idx  func() ptx.Reg
	key  ptx.Reg // u32; the zero Reg: computed from bits
}

// keyOf is x's key: the walker's, or the key of its bits.
func (c *cta) keyOf(x elem) ptx.Reg {
	if x.key.T != ptx.TypeInvalid {
		return x.key
	}
	return c.key(x.bits)
}

// walker emits a walk over a set of elements, calling visit for each. A
// walker visits the same elements in the same per-thread order every time.
type walker func(visit func(x elem))

// stream emits a walk that yields one u32 rank per element of interest;
// larger ranks come first in the Top-K order.
type stream func(visit func(r ptx.Reg))

// ranksOf ranks every element by rankOf.
func (c *cta) ranksOf(w walker, rankOf func(x elem) ptx.Reg) stream {
	return func(visit func(ptx.Reg)) {
		w(func(x elem) { visit(rankOf(x)) })
	}
}

// keySpan is what a set of elements' keys span: every key lies in [min,
// min + 2^(32-shift)). Ranked by (key - min) << shift, the order is kept,
// and the top radix digit splits the span itself, not bits its keys share:
// Phase 4's candidates (keys above one threshold, close together) fall
// into one or two bins of a first pass over their keys, but spread over
// the bins of a first pass over their offsets.
type keySpan struct {
	min, shift ptx.Reg // u32
	// zeros is how many low bits every rank has zero (at most 32): the
	// shift, and the low bits the keys share (a 16-bit score's widened
	// key has 13 or 16 zero low bits). A radix digit below them splits
	// nothing, and its pass is skipped.
	zeros ptx.Reg
	// lim, for a guessed span (guessSpan), is the largest key - min in
	// it; unset where every key lies in the span.
	lim ptx.Reg
}

// spanGuess is what exactSelect needs when its span is a guess: how many
// elements there are, and how to find their exact span. Its first pass
// counts the elements whose keys lie in the span; if that is not all of
// them, it takes the exact span and starts over.
type spanGuess struct {
	total ptx.Reg // u32
	exact func() keySpan
}

// ranksIn ranks the elements of w whose keys lie in the guessed span s,
// skipping the others.
func (c *cta) ranksIn(w walker, s keySpan) stream {
	return func(visit func(ptx.Reg)) {
		w(func(x elem) {
			d := c.u32()
			c.e.Sub(d, c.keyOf(x), s.min)
			c.e.If(c.setp(ptx.LE, d, s.lim), func() {
				r := c.u32()
				c.e.Shl(r, d, s.shift)
				visit(r)
			})
		})
	}
}

// rank is key k's rank in the span.
func (s keySpan) rank(c *cta, k ptx.Reg) ptx.Reg {
	r := c.u32()
	c.e.Sub(r, k, s.min)
	c.e.Shl(r, r, s.shift)
	return r
}

// spanOf walks w once and returns the span of its keys, in every thread
// (scratch: four words per warp). A single key, or none, gives shift 32:
// every rank 0 (shl clamps the shift at 32).
func (c *cta) spanOf(w walker, scratch region) keySpan {
	acc := c.newSpanAcc()
	w(func(x elem) { acc.add(c.keyOf(x)) })
	return acc.span(scratch)
}

// spanAcc accumulates this thread's part of a key span (spanOf), for a
// walk that does more than that.
type spanAcc struct {
	c                *cta
	lo, hi, all, any ptx.Reg // u32
}

func (c *cta) newSpanAcc() *spanAcc {
	return &spanAcc{c: c, lo: c.constU32(0xFFFFFFFF), hi: c.constU32(0), all: c.constU32(0xFFFFFFFF), any: c.constU32(0)}
}

// spanOps are the reductions a key span takes of its keys, in spanAcc.regs
// order: the smallest, the largest, and the bits every key has set (and)
// and any key has (or).
var spanOps = []string{"min", "max", "and", "or"}

func (a *spanAcc) regs() []ptx.Reg { return []ptx.Reg{a.lo, a.hi, a.all, a.any} }

// add takes in key k.
func (a *spanAcc) add(k ptx.Reg) {
	for i, r := range a.regs() {
		a.c.combine(spanOps[i], r, r, k)
	}
}

// span combines the threads' parts into the span, in every thread (a block
// reduction: its barrier also publishes shared stores made before it).
func (a *spanAcc) span(scratch region) keySpan {
	c, e := a.c, a.c.e
	r := c.blockReduceN(spanOps, a.regs(), scratch)
	d := c.u32()
	e.Sub(d, r[1], r[0])
	span := keySpan{min: r[0], shift: c.u32(), zeros: c.u32()}
	e.Clz(span.shift, d)
	e.Guarded(c.setp(ptx.GT, r[0], r[1]), func() { e.Mov(span.shift, ptx.Imm(32)) }) // no elements
	// The low bits every key shares are zero in every key - min, and so in
	// every rank below the shift.
	same := c.alike(r[2], r[3])
	e.Add(span.zeros, span.shift, same)
	e.Min(span.zeros, span.zeros, ptx.Imm(32))
	return span
}

// alike returns how many low bits every key has alike, from the keys'
// and (all) and or (any): the trailing zeros of all ^ any, 32 where they
// are one key.
func (c *cta) alike(all, any ptx.Reg) ptx.Reg {
	n := c.u32()
	c.e.Xor(n, all, any)
	c.e.Brev(n, n)
	c.e.Clz(n, n)
	return n
}

// tiesOf ranks the elements whose key is kth by lowest index first (rank
// ^idx), skipping the others.
func (c *cta) tiesOf(w walker, kth ptx.Reg) stream {
	return func(visit func(ptx.Reg)) {
		w(func(x elem) {
			c.e.If(c.setp(ptx.EQ, c.keyOf(x), kth), func() {
				r := c.u32()
				c.e.Not(r, x.idx())
				visit(r)
			})
		})
	}
}

// tieSelect returns the index of the need-th lowest index among the
// elements of w whose key is kth. Their inverted indices are ranked within
// their span, as Phase 4's keys are (keySpan): the first digit then splits
// the tied indices' range, not the bits every index of the row shares, and
// its bin usually holds at most 32, which one warp ranks (smallRanks); a
// radix select over all 32 bits of ^index took three passes every time.
func (c *cta) tieSelect(w walker, kth, need ptx.Reg, sh selectShared, passes ptx.Reg) ptx.Reg {
	e := c.e
	ties := c.tiesOf(w, kth) // ^index: the lowest index ranks highest
	span := c.spanOfStream(ties, sh.scratch)
	ranked := func(visit func(ptx.Reg)) { ties(func(v ptx.Reg) { visit(span.rank(c, v)) }) }
	r := c.newRadix(ranked, need, sh, passes, false)
	r.pass()
	v := c.u32()
	e.IfElse(c.setp(ptx.LE, r.sel.equal, ptx.Imm(warpSize)), func() {
		e.Mov(v, c.smallRanks(ranked, r))
	}, func() {
		for !r.done() {
			r.pass()
		}
		e.Mov(v, r.sel.r)
	})
	// Back from the rank in the span to the index: the rank's low shift
	// bits are zero, so the shift loses nothing.
	e.Shr(v, v, span.shift)
	e.Add(v, v, span.min)
	e.Not(v, v)
	return v
}

// spanOfStream is spanOf for a stream of values (u32) instead of keys;
// scratch holds one word per warp (two reductions, one after the other).
func (c *cta) spanOfStream(s stream, scratch region) keySpan {
	e := c.e
	lo, hi := c.constU32(0xFFFFFFFF), c.constU32(0)
	s(func(v ptx.Reg) {
		e.Min(lo, lo, v)
		e.Max(hi, hi, v)
	})
	m := []ptx.Reg{c.blockReduce("min", lo, scratch), c.blockReduce("max", hi, scratch)}
	d := c.u32()
	e.Sub(d, m[1], m[0])
	span := keySpan{min: m[0], shift: c.u32()}
	e.Clz(span.shift, d)
	e.Guarded(c.setp(ptx.GT, m[0], m[1]), func() { e.Mov(span.shift, ptx.Imm(32)) }) // no elements
	return span
}

// smallRanks returns the r.rem-th largest of the values of s that share
// the digits r has fixed, when at most 32 do: they are gathered into
// shared memory, in any order, and one warp ranks each against the others
// (the values are distinct). The result does not depend on the order.
func (c *cta) smallRanks(s stream, r *radix) ptx.Reg {
	e, sh := c.e, r.sh
	c.clearSmallBin(sh)
	c.sync()
	s(func(v ptx.Reg) {
		m := c.u32()
		e.And(m, v, r.fixed)
		e.If(c.setp(ptx.EQ, m, r.sel.r), func() {
			slot := c.u32()
			e.Atom(ptx.SpaceShared, "add", slot, c.smem.at(sh.scalars, 12), ptx.Imm(1))
			e.St(ptx.SpaceShared, ptx.U32, c.smem.elem(sh.small, slot, 8), v)
		})
	})
	c.sync()
	e.If(c.setp(ptx.EQ, c.warp, ptx.Imm(0)), func() {
		in := c.setp(ptx.LT, c.lane, r.sel.equal)
		v := c.constU32(0) // past the gathered ones: ranks after all of them
		e.If(in, func() { e.Ld(ptx.SpaceShared, v, c.smem.elem(sh.small, c.lane, 8)) })
		rank := c.constU32(0) // how many gathered values are larger
		for j := range warpSize {
			vj := c.u32()
			e.Shfl(ptx.ShflIdx, vj, v, ptx.Imm(int64(j)), ptx.Imm(warpSize-1), ptx.Imm(fullMask))
			e.Guarded(c.setp(ptx.GT, vj, v), func() { e.Add(rank, rank, ptx.Imm(1)) })
		}
		want := c.u32()
		e.Sub(want, r.rem, ptx.Imm(1))
		hit := c.setp(ptx.EQ, rank, want)
		e.AndPred(hit, hit, in)
		e.Guarded(hit, func() { e.St(ptx.SpaceShared, ptx.U32, c.smem.at(sh.scalars, 0), v) })
	})
	c.sync()
	out := c.u32()
	e.Ld(ptx.SpaceShared, out, c.smem.at(sh.scalars, 0))
	return out
}

// selectShared is the shared memory exact selection uses.
type selectShared struct {
	hist    [2]region // one u32 per bin; passes alternate between the two
	scratch region    // one u32 per warp (block scans)
	scalars region    // the found digit, count above it, count in it; gatherSmall's counter
	small   region    // gatherSmall's entries (smallBinMax), or smallRanks' values (32)
	bins    int
}

// clearSelect zeroes what an exact selection clears first, its first
// histogram and the small bin, ahead of time: a select told so
// (selectHow.cleared) starts without two clearings and their barriers. A
// barrier must come between it and the select.
func (c *cta) clearSelect(sh selectShared) {
	c.clearShared(c.histOf(sh.hist[0]), sh.bins)
	c.clearSmallBin(sh)
}

// clearSmallBin zeroes the counter gatherSmall and smallRanks gather
// with, and, where more than a warp's entries are ranked by loops, the
// small bin's entries: rankSmall reads up to a whole step past the
// gathered ones, where a zero entry ranks after every element, and no
// further than smallMax entries (a whole number of steps).
func (c *cta) clearSmallBin(sh selectShared) {
	e := c.e
	e.If(c.setp(ptx.EQ, c.tid, ptx.Imm(0)), func() {
		e.St(ptx.SpaceShared, ptx.U32, c.smem.at(sh.scalars, 12), ptx.Imm(0))
	})
	if c.smallMax() > warpSize {
		if c.smallMax()%smallRankStep != 0 {
			panic("gen: a small bin's rank steps read past its entries")
		}
		// c.smallMax() <= c.threads: a store a thread.
		z := c.constU32(0)
		e.If(c.setp(ptx.LT, c.tid, ptx.Imm(int64(c.smallMax()))), func() {
			e.St(ptx.SpaceShared, ptx.U32, c.smem.elem(sh.small, c.tid, 16), ptx.Vec{z, z, z, z})
		})
	}
}

// selectHow says how exactSelect goes about it.
type selectHow struct {
	// small: once few elements share the K-th one's high digits, they
	// are ranked against each other (smallSelect) instead of further
	// passes.
	small bool
	// loop: each radix select is a PTX loop over its digits (for walks
	// too long to inline once per digit); else its passes are inlined.
	loop bool
	// span, if non-nil: the digits are those of the keys' offsets within
	// the span (keySpan), and, with small, the small-bin test comes after
	// the first digit.
	span *keySpan
	// cleared: clearSelect ran (behind a barrier) since the shared
	// memory was last used.
	cleared bool
	// guess, if non-nil: span is a guess, which the first pass checks.
	guess *spanGuess
}

func allocSelect(l *layout, bins, warps, small int) selectShared {
	return selectShared{
		hist:    [2]region{l.alloc("hist0", 4*bins, 16), l.alloc("hist1", 4*bins, 16)},
		scratch: l.alloc("select_scratch", 4*warps, 4),
		scalars: l.alloc("select_scalars", 16, 16),
		small:   l.alloc("select_small", 16*small, 16),
		bins:    bins,
	}
}

// selection is the result of radixSelect, the same in every thread.
type selection struct {
	r     ptx.Reg // the R-th largest rank
	above ptx.Reg // how many ranks are larger
	equal ptx.Reg // how many equal it
}

// radixSelect returns the R-th largest rank of s (1 <= R <= its size).
// Each pass histograms one digit of the ranks that match the digits fixed
// so far, then finds the bin where the count from the top reaches R:
// ceil(32 / log2(bins)) passes, each an exact count, so ties and NaN need
// no special case. With loop the passes are one PTX loop over the digits
// (radix.loop), else one inlined copy per digit. passes, if non-nil, counts
// the passes made.
func (c *cta) radixSelect(s stream, R ptx.Reg, sh selectShared, passes ptx.Reg, loop bool) selection {
	r := c.newRadix(s, R, sh, passes, false)
	if loop {
		r.loop(nil)
		return r.sel
	}
	for !r.done() {
		r.pass()
	}
	return r.sel
}

// radix is a radix select under way: the digits fixed so far (sel.r, the
// lower bits zero; fixed, the mask of those bits), how many ranks are above
// them (sel.above), how many share them (sel.equal), and which rank is
// wanted among those (rem).
type radix struct {
	c      *cta
	s      stream
	sh     selectShared
	passes ptx.Reg
	digits []digit // from the most significant
	p      int     // the next pass (unrolled passes)
	rem    ptx.Reg
	sel    selection
	fixed  ptx.Operand // u32 mask of the rank bits fixed so far
	// counted is how many ranks the last pass histogrammed.
	counted ptx.Reg
}

// digit is the rank bits [lo, hi) one pass histograms.
type digit struct{ lo, hi int }

// newRadix starts a radix select of the R-th largest rank of s: its first
// histogram is cleared, behind a barrier, unless cleared says it is zero
// already (clearSelect).
func (c *cta) newRadix(s stream, R ptx.Reg, sh selectShared, passes ptx.Reg, cleared bool) *radix {
	e := c.e
	r := &radix{c: c, s: s, sh: sh, passes: passes, rem: c.u32(),
		sel: selection{r: c.constU32(0), above: c.constU32(0), equal: c.u32()}, fixed: ptx.Imm(0)}
	e.Mov(r.rem, R)
	db := r.width()
	for hi := 32; hi > 0; hi -= db {
		r.digits = append(r.digits, digit{max(0, hi-db), hi})
	}
	if !cleared {
		c.clearShared(c.histOf(sh.hist[0]), 1<<(r.digits[0].hi-r.digits[0].lo))
		c.sync()
	}
	return r
}

// width is the widest digit's bits: log2(bins).
func (r *radix) width() int { return bits.TrailingZeros(uint(r.sh.bins)) }

// done reports whether every digit is fixed (known when generating).
func (r *radix) done() bool { return r.p == len(r.digits) }

// pass fixes the next digit, inlined (its bits known when generating).
func (r *radix) pass() {
	c := r.c
	d := r.digits[r.p]
	c.e.Comment("radix select: digit bits [%d, %d)", d.lo, d.hi)
	var clearNext func()
	if r.p+1 < len(r.digits) {
		next := r.digits[r.p+1]
		clearNext = func() { c.clearShared(c.histOf(r.sh.hist[(r.p+1)%2]), 1<<(next.hi-next.lo)) }
	}
	r.count(ptx.Imm(int64(d.lo)), 1<<(d.hi-d.lo), c.histOf(r.sh.hist[r.p%2]), clearNext)
	r.fixed = ptx.Imm(int64(^uint32(0) << d.lo))
	r.p++
}

// loop emits the passes as one PTX loop over the digits, with the digit's
// shift, the mask of the bits fixed before it and the histogram in
// registers: a select over the row in global memory then carries one copy
// of the row walk instead of one per digit. Every digit is log2(bins) bits
// wide, from the top: pass p histograms bits [lo, lo+width) with lo =
// max(0, 32 - width*(p+1)). When 32 is no multiple of the width, the last
// digit overlaps bits already fixed; the ranks it counts all share those
// bits with sel.r, so only bins that agree with sel.r are filled, and OR-ing
// the found bin into sel.r changes none of them: still exact. The loop costs
// a few instructions per pass, and in the first pass a match test per rank
// that the inlined passes leave out.
//
// leave, if non-nil, is tested once one digit remains; if it holds the loop
// stops there, with r.rem, r.sel and r.fixed describing the digits fixed so
// far. loop returns whether every digit was fixed.
func (r *radix) loop(leave func() ptx.Pred) (all ptx.Pred) {
	c, e := r.c, r.c.e
	db, bins := r.width(), r.sh.bins
	e.Comment("radix select: a loop over the %d-bit digits, from the top", db)
	lo, fixed := c.constU32(int64(max(0, 32-db))), c.constU32(0)
	r.fixed = fixed
	// The passes alternate between the two histograms: h is this pass's,
	// next the other one (next = both - h).
	h, next, both := c.u32(), c.u32(), c.u32()
	e.Add(h, c.smem.base, ptx.Imm(int64(r.sh.hist[0].off)))
	e.Add(next, c.smem.base, ptx.Imm(int64(r.sh.hist[1].off)))
	e.Add(both, h, next)
	top, end := e.NewLabel("radix_pass"), e.NewLabel("radix_done")
	e.Place(top)
	all = c.setp(ptx.EQ, lo, ptx.Imm(0)) // the last digit
	r.count(lo, bins, histBuf{base: h}, func() {
		e.If(all.Not(), func() { c.clearShared(histBuf{base: next}, bins) })
	})
	e.BraIf(all, end)
	// The next digit: bits [lo', lo) with lo' = lo - min(lo, width).
	e.Shl(fixed, ptx.Imm(0xFFFFFFFF), lo)
	step := c.u32()
	e.Min(step, lo, ptx.Imm(int64(db)))
	e.Sub(lo, lo, step)
	e.Mov(h, next)
	e.Sub(next, both, h)
	if leave != nil {
		out := c.setp(ptx.EQ, lo, ptx.Imm(0))
		e.AndPred(out, out, leave())
		e.BraIf(out, end)
	}
	e.BraUni(top)
	e.Place(end)
	return all
}

// count is one radix pass: it histograms the digit (rank >> lo) & (nb-1)
// into h for every rank whose fixed bits match sel.r, then finds the bin
// where the count from the top reaches rem and fixes it into sel.r.
// clearNext, if non-nil, clears the next pass's histogram meanwhile.
func (r *radix) count(lo ptx.Operand, nb int, h histBuf, clearNext func()) {
	c, e := r.c, r.c.e
	if r.passes.T != ptx.TypeInvalid {
		e.Add(r.passes, r.passes, ptx.Imm(1))
	}
	r.s(func(x ptx.Reg) {
		count := func() {
			d := c.u32()
			e.Shr(d, x, lo)
			e.And(d, d, ptx.Imm(int64(nb-1)))
			e.Red(ptx.SpaceShared, "add", ptx.U32, c.bin(h, d), ptx.Imm(1))
		}
		if r.fixed == ptx.Imm(0) { // the first inlined pass: every rank
			count()
			return
		}
		// Only ranks whose higher digits match the ones fixed so far.
		m := c.u32()
		e.And(m, x, r.fixed)
		e.If(c.setp(ptx.EQ, m, r.sel.r), count)
	})
	c.sync()
	if clearNext != nil {
		// The next pass's histogram is the other buffer: clear it now;
		// findBin's closing barrier orders the clearing before its use.
		clearNext()
	}
	dig, ab, cnt, all := c.findBin(r.sh, h, nb, r.rem)
	r.counted = all
	e.Shl(dig, dig, lo)
	e.Or(r.sel.r, r.sel.r, dig)
	e.Sub(r.rem, r.rem, ab)
	e.Add(r.sel.above, r.sel.above, ab)
	e.Mov(r.sel.equal, cnt)
}

// histBuf is where a histogram lies in shared memory: bin i at the u32
// address base + off + 4i.
type histBuf struct {
	base ptx.Reg
	off  int64
}

// histOf is the histogram in region h.
func (c *cta) histOf(h region) histBuf { return histBuf{c.smem.base, int64(h.off)} }

// bin is the address of bin i of h.
func (c *cta) bin(h histBuf, i ptx.Reg) ptx.Addr {
	a := c.u32()
	c.e.Mad(a, i, ptx.Imm(4), h.base)
	return ptx.At(a, h.off)
}

// clearShared zeroes the first n words of h (16-byte aligned, as every
// histogram is). Where n is a multiple of four words a thread, each thread
// clears its four-word runs with vector stores, unrolled: 2048 bins are
// one instruction a thread at 512 threads, not a loop of four.
func (c *cta) clearShared(h histBuf, n int) {
	e := c.e
	B := c.threads
	if runs := n / (4 * B); n%(4*B) == 0 && runs <= 4 {
		z := c.constU32(0)
		first := c.u32()
		e.Shl(first, c.tid, ptx.Imm(2))
		a := c.bin(h, first)
		for i := range runs {
			e.St(ptx.SpaceShared, ptx.U32, ptx.At(a.Base, a.Off+int64(16*B*i)), ptx.Vec{z, z, z, z})
		}
		return
	}
	j := c.u32()
	e.For(j, c.tid, ptx.Imm(int64(n)), ptx.Imm(int64(B)), func() {
		e.St(ptx.SpaceShared, ptx.U32, c.bin(h, j), ptx.Imm(0))
	})
}

// findBin finds the histogram bin, counting from the top, where the running
// count reaches R, and returns it with the count above it and its own
// count, in every thread. Threads own runs of bins from the top; a block
// scan of their sums tells each the count above its run, and the one whose
// run holds the crossing publishes it. total is the histogram's sum.
func (c *cta) findBin(sh selectShared, hist histBuf, nb int, R ptx.Reg) (dig, above, cnt, total ptx.Reg) {
	e := c.e
	per := max(1, nb/c.threads) // bins per thread
	owners := nb / per
	first := c.u32() // position from the top of this thread's first bin
	e.Mul(first, c.tid, ptx.Imm(int64(per)))
	owner := c.setp(ptx.LT, c.tid, ptx.Imm(int64(owners)))
	// The q-th bin of this thread's run is nb-1 - (first+q); its address
	// is hist[nb-1-first] - 4q.
	top := c.u32()
	e.Sub(top, ptx.Imm(int64(nb-1)), first)
	topAddr := c.bin(hist, top)
	binAt := func(q int) ptx.Addr { return ptx.At(topAddr.Base, topAddr.Off-int64(4*q)) }
	h := make([]ptx.Reg, per)
	sum := c.constU32(0)
	e.If(owner, func() {
		for q := range per {
			h[q] = c.u32()
			e.Ld(ptx.SpaceShared, h[q], binAt(q))
			e.Add(sum, sum, h[q])
		}
	})
	// The scan's scratch is next written by the next findBin, many
	// barriers later: no closing barrier needed.
	cum, total := c.blockScan(sum, sh.scratch)
	e.If(owner, func() {
		for q := range per {
			next := c.u32()
			e.Add(next, cum, h[q])
			// cum < R <= cum+h: the R-th largest is in this bin.
			in := c.pred()
			e.Setp(in, ptx.LT, cum, R)
			e.AndPred(in, in, c.setp(ptx.GE, next, R))
			e.If(in, func() {
				b := c.u32()
				e.Sub(b, top, ptx.Imm(int64(q)))
				e.St(ptx.SpaceShared, ptx.U32, c.smem.at(sh.scalars, 0), b)
				e.St(ptx.SpaceShared, ptx.U32, c.smem.at(sh.scalars, 4), cum)
				e.St(ptx.SpaceShared, ptx.U32, c.smem.at(sh.scalars, 8), h[q])
			})
			e.Mov(cum, next)
		}
	})
	c.sync()
	dig, above, cnt = c.u32(), c.u32(), c.u32()
	e.Ld(ptx.SpaceShared, dig, c.smem.at(sh.scalars, 0))
	e.Ld(ptx.SpaceShared, above, c.smem.at(sh.scalars, 4))
	e.Ld(ptx.SpaceShared, cnt, c.smem.at(sh.scalars, 8))
	return dig, above, cnt, total
}

// exactSelect writes the Top-K of the elements w visits. The K-th element
// in the Top-K order (key descending, then index ascending) is found as a
// (key, index) pair; then every element before it in that order, and it,
// are written. A radix select on the keys fixes all digits but the last;
// with how.small, if few elements (smallMax) then share the K-th one's
// high bits, they are ranked exactly (smallSelect). Otherwise the last digit pass
// follows, and, if only some of the elements equal to the K-th key fit, a
// second radix select on their inverted indices finds the cut.
//
// With how.span, the radix digits are those of the keys' offsets within the
// span (keySpan) instead of the keys', and, with small, the small-bin test
// comes after the first digit: the candidates of Phase 4 spread over the
// bins of one pass, and the K-th one's bin then holds a few.
func (c *cta) exactSelect(w walker, K ptx.Reg, sh selectShared, o outRow, passes ptx.Reg, how selectHow) {
	e := c.e
	small, loop, span := how.small, how.loop, how.span
	rankOf, toKey := c.keyOf, func(r ptx.Reg) {}
	if span != nil {
		rankOf = func(x elem) ptx.Reg { return span.rank(c, c.keyOf(x)) }
		toKey = func(r ptx.Reg) {
			e.Shr(r, r, span.shift)
			e.Add(r, r, span.min)
		}
	}
	ranks := c.ranksOf(w, rankOf)
	var respan ptx.Label
	if how.guess != nil {
		if span == nil || loop {
			panic("gen: a guessed span needs inlined passes over a span")
		}
		// The select starts over from here with the exact span where the
		// guess missed elements (checkSpan).
		ranks = c.ranksIn(w, *span)
		respan = e.NewLabel("select_span")
		e.Place(respan)
	}
	r := c.newRadix(ranks, K, sh, passes, how.cleared)
	kthKey, kthIdx := c.u32(), c.u32()
	ties := func() {
		need := c.u32()
		e.Sub(need, K, r.sel.above)
		e.Mov(kthKey, r.sel.r)
		toKey(kthKey)
		e.Mov(kthIdx, ptx.Imm(0xFFFFFFFF))
		e.If(c.setp(ptx.LT, need, r.sel.equal), func() {
			e.Comment("ties at the K-th key: keep the %s lowest indices", "need")
			if loop {
				tie := c.radixSelect(c.tiesOf(w, kthKey), need, sh, passes, loop)
				e.Not(kthIdx, tie.r)
				return
			}
			e.Mov(kthIdx, c.tieSelect(w, kthKey, need, sh, passes))
		})
	}
	// The selection: every element before the K-th in the Top-K order,
	// and it. n is how many of them this thread's walk visits.
	selected := func(x elem) ptx.Pred {
		k := c.keyOf(x)
		sel := c.setp(ptx.GT, k, kthKey)
		tie := c.setp(ptx.EQ, k, kthKey)
		e.AndPred(tie, tie, c.setp(ptx.LE, x.idx(), kthIdx))
		e.OrPred(sel, sel, tie)
		return sel
	}
	n := c.u32()
	// Where the small bin is ranked after the first pass, the bin's
	// selected elements are written in rank order after those above it
	// (smallWrite): the K-th element itself is never needed.
	direct := small && !loop && span != nil && len(r.digits) > 1
	smallBin := func() ptx.Pred { return c.setp(ptx.LE, r.sel.equal, ptx.Imm(int64(c.smallMax()))) }
	smallSel := func() {
		c.smallSelect(w, r, rankOf, kthKey, kthIdx, how.cleared)
		toKey(kthKey)
	}
	write := func() {
		c.markAt(MarkP4Kth)
		e.Mov(n, c.countSelected(w, selected))
		c.writeSelected(w, selected, n, o.buffered(sh), sh.scratch)
	}
	switch {
	case loop && small:
		if span != nil {
			panic("gen: the radix loop tests for a small bin at its last digit only")
		}
		all := r.loop(smallBin)
		e.IfElse(all, ties, smallSel)
	case loop:
		r.loop(nil)
		ties()
	default:
		check := len(r.digits) - 1 // the pass before which a small bin is looked for
		if span != nil {
			check = 1
		}
		for r.p < check {
			r.pass()
		}
		if how.guess != nil {
			c.checkSpan(r, span, how.guess, respan)
		}
		c.markAt(MarkP4Pass)
		rest := func() {
			for !r.done() {
				if span == nil {
					r.pass()
					continue
				}
				// A digit at or below the ranks' common zero bits splits
				// nothing: its pass would find every element in one bin.
				d := r.digits[r.p]
				e.If(c.setp(ptx.LT, span.zeros, ptx.Imm(int64(d.hi))), r.pass)
			}
			ties()
		}
		switch {
		case direct:
			e.IfElse(smallBin(), func() { c.smallWrite(w, r, rankOf, how.cleared, o.buffered(sh), sh.scratch) }, func() {
				rest()
				write()
			})
			c.markAt(MarkP4Written)
			return
		case small:
			e.IfElse(smallBin(), smallSel, rest)
		default:
			rest()
		}
	}
	write()
	c.markAt(MarkP4Written)
}

// checkSpan follows the first pass of a select over a guessed span: if it
// counted fewer elements than there are, some lie outside the guess, and
// the select starts over (at label again) with the exact span, whose
// ranks the first pass counts all of. Its histogram is cleared for that
// (the second is still clear: no pass has used it).
func (c *cta) checkSpan(r *radix, span *keySpan, g *spanGuess, again ptx.Label) {
	e := c.e
	e.If(c.setp(ptx.NE, r.counted, g.total), func() {
		e.Comment("the guessed span missed some: the exact span, and start over")
		exact := g.exact()
		e.Mov(span.min, exact.min)
		e.Mov(span.shift, exact.shift)
		e.Mov(span.zeros, exact.zeros)
		e.Mov(span.lim, ptx.Imm(0xFFFFFFFF))
		c.clearShared(c.histOf(r.sh.hist[0]), r.sh.bins)
		c.sync()
		e.BraUni(again)
	})
}

// smallBinMax is the most elements a small bin holds: those that share
// the K-th one's digits, ranked against each other (rankSmall) instead of
// further passes over the walk. With float32 scores that is 32, ranked by
// one warp's shuffles. A 16-bit score row's K-th value alone has 40-95
// ties at K = 2048, which took a tie select's walks (perf notes 155): there
// it is 128 (at most a thread each), ranked by loops over shared memory.
// Those loops would cost float32 rows a little (+1-2% at batch 1, 155),
// whose ties are rare.
func smallBinMax(scores ScoreType, threads int) int {
	if scores.Size() == 2 {
		return min(128, threads)
	}
	return warpSize
}

// smallMax is smallBinMax for this CTA.
func (c *cta) smallMax() int { return smallBinMax(c.scores, c.threads) }

// smallSelect finds the K-th element when at most smallMax elements share
// the digits r has fixed: it gathers them (key, index) into shared memory,
// in any order, and ranks each against the others in the Top-K order
// (rankSmall); the one ranked r.rem-th is the K-th. The ranks do not depend
// on the gathering order, so neither does the result. cleared: the small
// bin is cleared already (clearSelect).
func (c *cta) smallSelect(w walker, r *radix, rankOf func(x elem) ptx.Reg, kthKey, kthIdx ptx.Reg, cleared bool) {
	e, sh := c.e, r.sh
	e.Comment("small bin: rank the elements that share the K-th one's high bits")
	c.gatherSmall(w, r, rankOf, cleared, nil)
	c.sync()
	want := c.u32()
	e.Sub(want, r.rem, ptx.Imm(1))
	c.rankSmall(r, func(k, i, _, rank ptx.Reg) {
		e.If(c.setp(ptx.EQ, rank, want), func() {
			e.St(ptx.SpaceShared, ptx.U32, c.smem.at(sh.scalars, 0), k)
			e.St(ptx.SpaceShared, ptx.U32, c.smem.at(sh.scalars, 4), i)
		})
	})
	c.sync()
	e.Ld(ptx.SpaceShared, kthKey, c.smem.at(sh.scalars, 0))
	e.Ld(ptx.SpaceShared, kthIdx, c.smem.at(sh.scalars, 4))
}

// smallWrite writes the Top-K of w to o when at most smallMax elements
// share the digits r has fixed (the K-th one's bin), in one walk less than
// smallSelect and writeSelected: the elements above the bin take the first
// r.sel.above slots in walk order (a block scan of each thread's count),
// and the bin's r.rem selected ones the slots after them in rank order,
// written by the threads that rank them before their walks. The slots
// never depend on timing. scratch is the scan's, as writeSelected's.
func (c *cta) smallWrite(w walker, r *radix, rankOf func(x elem) ptx.Reg, cleared bool, o outRow, scratch region) {
	e := c.e
	e.Comment("small bin: the elements above it written in walk order, the bin's selected ones after them by rank")
	above := c.constU32(0)
	c.gatherSmall(w, r, rankOf, cleared, &above)
	// The scan's barrier also publishes the gathered bin.
	pos, _ := c.blockScan(above, scratch)
	c.markAt(MarkP4Kth)
	c.rankSmall(r, func(_, i, bits, rank ptx.Reg) {
		e.If(c.setp(ptx.LT, rank, r.rem), func() {
			slot := c.u32()
			e.Add(slot, r.sel.above, rank)
			c.store(o, slot, i, bits)
		})
	})
	w(func(x elem) {
		m := c.u32()
		e.And(m, rankOf(x), r.fixed)
		e.If(c.setp(ptx.GT, m, r.sel.r), func() {
			c.store(o, pos, x.idx(), x.bits)
			e.Add(pos, pos, ptx.Imm(1))
		})
	})
	if b := o.buf; b != nil {
		total := c.u32()
		e.Add(total, r.sel.above, r.rem)
		c.copyOut(o, total)
	}
}

// gatherSmall puts the elements of w that share the digits r has fixed
// into r.sh.small, in any order, as entries of (rank word, float bits,
// index): the rank word is a u64 whose order is the Top-K order, the rank
// key (rankOf) high and the index's complement low, so that a lower index
// comes first. With above (a u32 register, else nil), it also counts there
// this thread's elements above them. cleared: the small bin is cleared
// already.
func (c *cta) gatherSmall(w walker, r *radix, rankOf func(x elem) ptx.Reg, cleared bool, above *ptx.Reg) {
	e, sh := c.e, r.sh
	if !cleared {
		c.clearSmallBin(sh)
		c.sync()
	}
	w(func(x elem) {
		k := rankOf(x)
		m := c.u32()
		e.And(m, k, r.fixed)
		if above != nil {
			e.Guarded(c.setp(ptx.GT, m, r.sel.r), func() { e.Add(*above, *above, ptx.Imm(1)) })
		}
		e.If(c.setp(ptx.EQ, m, r.sel.r), func() {
			slot, n := c.u32(), c.u32()
			e.Atom(ptx.SpaceShared, "add", slot, c.smem.at(sh.scalars, 12), ptx.Imm(1))
			e.Not(n, x.idx())
			e.St(ptx.SpaceShared, ptx.U32, c.smem.elem(sh.small, slot, 16), ptx.Vec{n, k, x.bits, x.idx()})
		})
	})
}

// rankSmall, past a barrier after gatherSmall, calls use in each thread t
// that holds a gathered entry (t < r.sel.equal) with the entry (rank key
// k, index i, float bits) and its rank among them in the Top-K order: how
// many come before it. Where small bins hold at most 32 (float32 scores),
// warp 0's shuffles rank them; where they hold more (smallBinMax), each
// thread that holds an entry walks the entries in shared memory
// (countBefore), whatever the bin's size: one step of that loop is
// quicker than the shuffles over ten entries (perf notes 158).
func (c *cta) rankSmall(r *radix, use func(k, i, bits, rank ptx.Reg)) {
	e := c.e
	k, n, i, bits, rank := c.u32(), c.u32(), c.u32(), c.u32(), c.constU32(0)
	at := c.smem.elem(r.sh.small, c.tid, 16)
	load := func() { e.Ld(ptx.SpaceShared, ptx.Vec{n, k, bits, i}, at) }
	in := func() ptx.Pred { return c.setp(ptx.LT, c.tid, r.sel.equal) }
	if c.smallMax() <= warpSize {
		e.If(c.setp(ptx.EQ, c.warp, ptx.Imm(0)), func() {
			// The lanes past the entries hold (0, 0), after every one.
			e.Mov(k, ptx.Imm(0))
			e.Mov(n, ptx.Imm(0))
			held := in()
			e.If(held, load)
			c.rankInWarp(k, n, r.sel.equal, rank)
			e.If(held, func() { use(k, i, bits, rank) })
		})
		return
	}
	e.If(in(), func() {
		load()
		mine := c.u64()
		e.Ld(ptx.SpaceShared, mine, at)
		c.countBefore(r.sh.small, 16, smallRankStep, c.constU32(0), r.sel.equal, mine, rank)
		use(k, i, bits, rank)
	})
}

// rankInWarp adds to rank, in each lane of one warp, how many of the first
// count lanes' entries (k high, n low: a rank word) come before its own.
// The steps are unrolled, so that their shuffles overlap; those past count
// are left out, four at a time (the lanes there hold (0, 0), which comes
// after every entry).
func (c *cta) rankInWarp(k, n, count, rank ptx.Reg) {
	e := c.e
	done := e.NewLabel("ranked")
	for j := range warpSize {
		if j > 0 && j%4 == 0 {
			e.BraIf(c.setp(ptx.LE, count, ptx.Imm(int64(j))), done)
		}
		kj, nj := c.u32(), c.u32()
		e.Shfl(ptx.ShflIdx, kj, k, ptx.Imm(int64(j)), ptx.Imm(warpSize-1), ptx.Imm(fullMask))
		e.Shfl(ptx.ShflIdx, nj, n, ptx.Imm(int64(j)), ptx.Imm(warpSize-1), ptx.Imm(fullMask))
		before := c.setp(ptx.GT, kj, k)
		same := c.setp(ptx.EQ, kj, k)
		e.AndPred(same, same, c.setp(ptx.GT, nj, n))
		e.OrPred(before, before, same)
		e.Guarded(before, func() { e.Add(rank, rank, ptx.Imm(1)) })
	}
	e.Place(done)
}

// How many rank words countBefore compares a step, in the sort's
// placement and in a small bin's rank. The sort's loops run in every
// thread, where four a step issue best (perf notes 154; sixteen: +4% on
// sorted rows); a small bin's run in the few threads that hold its
// entries, where the loop's chain of steps is the time, and sixteen a
// step took 0.4 us less than four off 40-128 entries (perf notes 156).
const (
	sortRankStep  = 4
	smallRankStep = 16
)

// countBefore adds to n how many of the rank words (u64s whose order is the
// Top-K order) at slots [from, to) of region rg, stride bytes apart, are
// larger than mine: the elements that come before it. It reads step
// slots a step, their loads in flight together, and no test for to within
// a step: the caller keeps the slots past to, up to a whole step, no larger
// than mine (padding, whose word is 0, or elements after it).
func (c *cta) countBefore(rg region, stride, step int, from, to, mine, n ptx.Reg) {
	e := c.e
	j := c.u32()
	e.For(j, from, to, ptx.Imm(int64(step)), func() {
		at := c.smem.elem(rg, j, stride)
		for u := range step {
			w := c.u64()
			e.Ld(ptx.SpaceShared, w, ptx.At(at.Base, at.Off+int64(stride*u)))
			e.Guarded(c.setp(ptx.GT, w, mine), func() { e.Add(n, n, ptx.Imm(1)) })
		}
	})
}

// countSelected is a count pass: how many elements of this thread's walk
// sel holds for.
func (c *cta) countSelected(w walker, sel func(elem) ptx.Pred) ptx.Reg {
	n := c.constU32(0)
	w(func(x elem) {
		c.e.Guarded(sel(x), func() { c.e.Add(n, n, ptx.Imm(1)) })
	})
	return n
}

// writeSelected writes the elements of w for which sel holds to o, at
// positions in walk order: a block exclusive scan of the per-thread counts
// n (countSelected's), and a write pass. The output never depends on
// timing.
func (c *cta) writeSelected(w walker, sel func(elem) ptx.Pred, n ptx.Reg, o outRow, scratch region) {
	e := c.e
	// Buffered, the barrier before the copy-out is the one the scan's
	// scratch needs before it is written again.
	pos, total := c.blockScan(n, scratch)
	if o.buf == nil {
		c.sync()
	}
	w(func(x elem) {
		e.If(sel(x), func() {
			c.store(o, pos, x.idx(), x.bits)
			e.Add(pos, pos, ptx.Imm(1))
		})
	})
	if o.buf != nil {
		c.copyOut(o, total)
	}
}
