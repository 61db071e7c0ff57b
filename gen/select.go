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

// elem is one visited element: its float bits and a function that emits
// its row index (computed only where needed).
type elem struct {
	bits ptx.Reg
	idx  func() ptx.Reg
}

// walker emits a walk over a set of elements, calling visit for each. A
// walker visits the same elements in the same per-thread order every time.
type walker func(visit func(x elem))

// stream emits a walk that yields one u32 rank per element of interest;
// larger ranks come first in the Top-K order.
type stream func(visit func(r ptx.Reg))

// keysOf ranks every element by its key.
func (c *cta) keysOf(w walker) stream {
	return func(visit func(ptx.Reg)) {
		w(func(x elem) { visit(c.key(x.bits)) })
	}
}

// tiesOf ranks the elements whose key is kth by lowest index first (rank
// ^idx), skipping the others.
func (c *cta) tiesOf(w walker, kth ptx.Reg) stream {
	return func(visit func(ptx.Reg)) {
		w(func(x elem) {
			c.e.If(c.setp(ptx.EQ, c.key(x.bits), kth), func() {
				r := c.u32()
				c.e.Not(r, x.idx())
				visit(r)
			})
		})
	}
}

// selectShared is the shared memory exact selection uses.
type selectShared struct {
	hist    [2]region // one u32 per bin; passes alternate between the two
	scratch region    // one u32 per warp (block scans)
	scalars region    // the found digit, count above it, count in it
	bins    int
}

func allocSelect(l *layout, bins, warps int) selectShared {
	return selectShared{
		hist:    [2]region{l.alloc("hist0", 4*bins, 16), l.alloc("hist1", 4*bins, 16)},
		scratch: l.alloc("select_scratch", 4*warps, 4),
		scalars: l.alloc("select_scalars", 16, 16),
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
// no special case. passes, if non-nil, counts the passes made.
func (c *cta) radixSelect(s stream, R ptx.Reg, sh selectShared, passes ptx.Reg) selection {
	e := c.e
	db := bits.TrailingZeros(uint(sh.bins))
	rem := c.u32()
	e.Mov(rem, R)
	prefix := c.constU32(0)
	above := c.constU32(0)
	equal := c.u32()
	// Digits from the most significant: bits [lo, hi).
	type digit struct{ lo, hi int }
	var digits []digit
	for hi := 32; hi > 0; hi -= db {
		digits = append(digits, digit{max(0, hi-db), hi})
	}
	c.clearShared(sh.hist[0], 1<<(digits[0].hi-digits[0].lo))
	c.sync()
	for p, d := range digits {
		lo, hi, nb := d.lo, d.hi, 1<<(d.hi-d.lo)
		hist := sh.hist[p%2]
		if passes.T != ptx.TypeInvalid {
			e.Add(passes, passes, ptx.Imm(1))
		}
		e.Comment("radix select: digit bits [%d, %d)", lo, hi)
		s(func(r ptx.Reg) {
			count := func() {
				d := c.u32()
				e.Shr(d, r, ptx.Imm(int64(lo)))
				e.And(d, d, ptx.Imm(int64(nb-1)))
				e.Red(ptx.SpaceShared, "add", ptx.U32, c.smem.elem(hist, d, 4), ptx.Imm(1))
			}
			if hi == 32 {
				count()
				return
			}
			// Only ranks whose higher digits match the ones fixed so far.
			m := c.u32()
			e.Xor(m, r, prefix)
			e.Shr(m, m, ptx.Imm(int64(hi)))
			e.If(c.setp(ptx.EQ, m, ptx.Imm(0)), count)
		})
		c.sync()
		if p+1 < len(digits) {
			// The next pass's histogram is the other buffer: clear it now;
			// findBin's closing barrier orders the clearing before its use.
			next := digits[p+1]
			c.clearShared(sh.hist[(p+1)%2], 1<<(next.hi-next.lo))
		}
		dig, ab, cnt := c.findBin(sh, hist, nb, rem)
		e.Shl(dig, dig, ptx.Imm(int64(lo)))
		e.Or(prefix, prefix, dig)
		e.Sub(rem, rem, ab)
		e.Add(above, above, ab)
		e.Mov(equal, cnt)
	}
	return selection{r: prefix, above: above, equal: equal}
}

// clearShared zeroes the first n words of r.
func (c *cta) clearShared(r region, n int) {
	e := c.e
	j := c.u32()
	e.For(j, c.tid, ptx.Imm(int64(n)), ptx.Imm(int64(c.threads)), func() {
		e.St(ptx.SpaceShared, ptx.U32, c.smem.elem(r, j, 4), ptx.Imm(0))
	})
}

// findBin finds the histogram bin, counting from the top, where the running
// count reaches R, and returns it with the count above it and its own
// count, in every thread. Threads own runs of bins from the top; a block
// scan of their sums tells each the count above its run, and the one whose
// run holds the crossing publishes it.
func (c *cta) findBin(sh selectShared, hist region, nb int, R ptx.Reg) (dig, above, cnt ptx.Reg) {
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
	topAddr := c.smem.elem(hist, top, 4)
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
	cum, _ := c.blockScan(sum, sh.scratch)
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
	return dig, above, cnt
}

// outRow is where a row's result goes: K index slots and, when vals is
// not null, K value slots.
type outRow struct {
	idx     ptx.Reg  // u64 global address of the row's first index slot
	vals    ptx.Reg  // u64 global address of the first value slot (0: none)
	hasVals ptx.Pred // vals != 0
}

func (c *cta) store(o outRow, pos, idx, bits ptx.Reg) {
	e := c.e
	e.St(ptx.SpaceGlobal, ptx.U32, c.elemAddr(o.idx, pos, 4), idx)
	e.If(o.hasVals, func() {
		e.St(ptx.SpaceGlobal, ptx.U32, c.elemAddr(o.vals, pos, 4), bits)
	})
}

// exactSelect writes the Top-K of the elements w visits: the K-th key by
// radix select, then, if only some of the elements equal to it fit, the
// cut among them by lowest index, then the selected elements.
func (c *cta) exactSelect(w walker, K ptx.Reg, sh selectShared, o outRow, passes ptx.Reg) {
	e := c.e
	kth := c.radixSelect(c.keysOf(w), K, sh, passes)
	need := c.u32()
	e.Sub(need, K, kth.above)
	// cut: the highest index taken among the elements equal to the K-th key.
	cut := c.constU32(0xFFFFFFFF)
	e.If(c.setp(ptx.LT, need, kth.equal), func() {
		e.Comment("ties at the K-th key: keep the %s lowest indices", "need")
		tie := c.radixSelect(c.tiesOf(w, kth.r), need, sh, passes)
		e.Not(cut, tie.r)
	})
	c.writeSelected(w, func(x elem) ptx.Pred {
		k := c.key(x.bits)
		sel := c.setp(ptx.GT, k, kth.r)
		tie := c.setp(ptx.EQ, k, kth.r)
		e.AndPred(tie, tie, c.setp(ptx.LE, x.idx(), cut))
		e.OrPred(sel, sel, tie)
		return sel
	}, o, sh.scratch)
}

// writeSelected writes the elements of w for which sel holds to o, at
// positions in walk order: a count pass, a block exclusive scan of the
// per-thread counts, and a write pass. The output never depends on timing.
func (c *cta) writeSelected(w walker, sel func(elem) ptx.Pred, o outRow, scratch region) {
	e := c.e
	n := c.constU32(0)
	w(func(x elem) {
		e.Guarded(sel(x), func() { e.Add(n, n, ptx.Imm(1)) })
	})
	pos, _ := c.blockExclusiveScan(n, scratch)
	w(func(x elem) {
		e.If(sel(x), func() {
			c.store(o, pos, x.idx(), x.bits)
			e.Add(pos, pos, ptx.Imm(1))
		})
	})
}
