package gen

// The fused page-table output: the serving engines' layout, where a
// selected column goes out as the KV cache slot its page table maps it to.

import (
	"github.com/gvr-go/gvr/ptx"
)

// pageOut is the fused page-table output of a row (the serving engines'
// layout): slot j gets page_table[b][c / page_size] * page_size +
// c % page_size for the slot's column c, or -1 where c is -1.
type pageOut struct {
	has   ptx.Pred // out_pages is not null
	out   ptx.Reg  // u64 global address of the row's first slot
	table ptx.Reg  // u64 global address of its batch's page-table row
	size  ptx.Reg  // u32 page size, at least 1
	shift ptx.Reg  // u32 log2 of the page size when it is a power of two
	pow2  ptx.Pred // the page size is a power of two: a shift, not a division
}

// pageOutput sets up row r's fused page-table output: where out_pages is
// not null, slot j of the row (at out_pages + 4*rk) gets its column
// mapped through the page table of the row's batch, b = r / next_n (r with
// next_n <= 1), whose row is page_table_stride entries. A page size of 0
// counts as 1.
func (t *topk) pageOutput(p *pageOut, table, stride, size, out *ptx.Param, r, rk, nextN ptx.Reg) {
	e := t.e
	pages := e.LdParam(out)
	e.Setp(p.has, ptx.NE, pages, ptx.Imm(0))
	e.Mov(p.out, ptx.Imm(0))
	e.Mov(p.table, ptx.Imm(0))
	e.Mov(p.size, ptx.Imm(1))
	e.Mov(p.shift, ptx.Imm(0))
	e.If(p.has, func() {
		g := t.u64()
		e.CvtaToGlobal(g, pages)
		e.Mov(p.out, t.elemAddr(g, rk, 4).Base)
		e.Cvt(p.size, e.LdParam(size))
		e.Max(p.size, p.size, ptx.Imm(1))
		b := t.u32()
		e.Mov(b, r)
		e.If(t.setp(ptx.GT, nextN, ptx.Imm(1)), func() { e.Div(b, r, nextN) })
		tb := t.u64()
		e.CvtaToGlobal(tb, e.LdParam(table))
		off := t.u64()
		e.Cvt(off, b)
		e.Mul(off, off, e.LdParam(stride))
		e.Mad(p.table, off, ptx.Imm(4), tb)
		// A power of two (the engines' 1, 16, 64): the page is a shift.
		low := t.u32()
		e.Sub(low, p.size, ptx.Imm(1))
		e.And(low, low, p.size)
		e.Setp(p.pow2, ptx.EQ, low, ptx.Imm(0))
		e.Bfind(p.shift, p.size)
		t.prefetchPages(p)
	})
}

// newPageOut is a pageOut's registers, which pageOutput sets.
func (t *topk) newPageOut() *pageOut {
	return &pageOut{has: t.pred(), out: t.u64(), table: t.u64(), size: t.u32(), shift: t.u32(), pow2: t.pred()}
}

// writePages writes the fused page-table output (where out_pages is set)
// once every index slot is written (past the sure ones, pagesAfterSure):
// each thread maps its slots' columns
// through the page table, pageUnroll slots at a time, their table loads
// (L2 hits: prefetchPages) in flight together. Mapped per store, as the
// indices were written, each slot's table load waited alone: 1.7-3.1 us
// a launch (perf notes 31).
func (t *topk) writePages() {
	e, p, o := t.e, t.out.pages, t.out
	if p == nil {
		return
	}
	e.If(p.has, func() {
		t.sync() // every index slot of the row written, by any thread
		K, T := int64(t.cfg.K), int64(t.threads)
		first := t.tid
		if t.pagesAfterSure() {
			// Past the sure slots, mapped by the CTAs that wrote them.
			sure := t.u32()
			e.Ld(ptx.SpaceShared, sure, t.smem.at(t.split, 4))
			first = t.u32()
			e.Add(first, t.tid, sure)
		}
		j := t.u32()
		e.For(j, first, t.k, ptx.Imm(pageUnroll*T), func() {
			var slot, v [pageUnroll]ptx.Reg
			var in [pageUnroll]ptx.Pred
			for u := range pageUnroll {
				slot[u], v[u] = t.u32(), t.constU32(-1)
				e.Add(slot[u], j, ptx.Imm(int64(u)*T))
				in[u] = t.setp(ptx.LT, slot[u], ptx.Imm(K))
				e.If(in[u], func() {
					idx := t.u32()
					e.Ld(ptx.SpaceGlobal, idx, t.elemAddr(o.idx, slot[u], 4)) // not .nc: written by this kernel
					e.If(t.setp(ptx.NE, idx, ptx.Imm(0xFFFFFFFF)), func() {
						col := t.u32() // the column in the row
						e.Sub(col, idx, o.offset)
						e.Add(col, col, o.start)
						t.pageOf(v[u], col)
					})
				})
			}
			for u := range pageUnroll {
				e.If(in[u], func() { e.St(ptx.SpaceGlobal, ptx.U32, t.elemAddr(p.out, slot[u], 4), v[u]) })
			}
		})
	})
}

// pagesAfterSure reports whether writePages maps only the slots past the
// sure candidates (split's second word, 0 unless Phase 3 set some apart):
// in a cluster kernel whose CTAs write their sure ones out, with a
// page-table output, those CTAs mapped their slots (outSure).
func (t *topk) pagesAfterSure() bool { return t.sureOutByCTAs() && t.out.pages != nil }

// pageOf sets v to the fused page-table output of column col of the row:
// its page's entry in the page table, times the page size, plus its
// place in the page.
func (t *topk) pageOf(v, col ptx.Reg) {
	e, p := t.e, t.out.pages
	page, off := t.u32(), t.u32()
	e.IfElse(p.pow2, func() {
		e.Shr(page, col, p.shift)
		e.Sub(off, p.size, ptx.Imm(1))
		e.And(off, col, off)
	}, func() {
		e.Div(page, col, p.size)
		e.Mul(off, page, p.size)
		e.Sub(off, col, off)
	})
	e.LdNC(v, t.elemAddr(p.table, page, 4))
	e.Mad(v, v, p.size, off)
}

// pageUnroll is how many output slots a thread maps at once in
// writePages: K = 2048 over 512 threads is four each.
const pageUnroll = 4

// prefetchPages brings the page-table entries of this row's window into
// L2 at the kernel's start, one 128-byte line a thread at a time: the
// output stores read them at the end, each a dependent load, which cold
// cost 1.5-3 us a launch (perf notes 31); by then they are in L2.
func (t *topk) prefetchPages(p *pageOut) {
	e := t.e
	first, last := t.u32(), t.u32() // the window's pages [first, last)
	e.Div(first, t.out.start, p.size)
	e.Add(last, t.out.start, t.n)
	e.Add(last, last, p.size)
	e.Sub(last, last, ptx.Imm(1))
	e.Div(last, last, p.size)
	e.And(first, first, ptx.Imm(^int64(31))) // from the line the first entry is in
	j := t.u32()
	e.Mad(j, t.tid, ptx.Imm(32), first)
	e.For(j, j, last, ptx.Imm(int64(32*t.threads)), func() {
		e.PrefetchL2(t.elemAddr(p.table, j, 4))
	})
}
