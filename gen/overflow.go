package gen

import "github.com/gvr-go/gvr/ptx"

// Rows longer than a cluster holds. Each CTA's slice then has an over
// part, the elements that did not fit in its shared memory, which every
// walk reads from global memory (sliceWalk). The slice's copy is followed
// by a bulk prefetch of the over part into L2, so that Phase 2's first
// walk of it finds it there rather than in HBM.

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
