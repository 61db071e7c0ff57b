package gen

// A row's output: the slots a selection is stored into (outRow), through a
// shared-memory buffer or straight to global memory, and the sorting stage
// that orders a selection by rank where Config.Sorted asks.

import (
	"math/bits"

	"github.com/gvr-go/gvr/ptx"
)

// outRow is where a row's result goes: K index slots and, when vals is
// not null, K value slots; or, for sorted output, the staging buffer that
// sortStaged orders and copies there.
type outRow struct {
	idx     ptx.Reg  // u64 global address of the row's first index slot
	vals    ptx.Reg  // u64 global address of the first value slot (0: none)
	hasVals ptx.Pred // vals != 0
	stage   *staging // non-nil: store into shared memory for sorting
	pages   *pageOut // non-nil: also the fused page-table output (writePages)
	// The elements' indices are the window's; start is where the window
	// begins in the row (0 without windows), offset what is added to an
	// index written out (start with absolute indices, else 0). The page
	// table is indexed by the column in the row, index + start.
	start, offset ptx.Reg // u32
	slots         int     // K: the row's output slots
	// from, where set (a u32 register), is the slot a selection's first
	// element goes to: Phase 4's follows the sure elements (sureSet).
	from ptx.Reg
	// src is the address of the row's element 0 (the window's), from
	// which a float16 NaN's exact bits are read again when it is written
	// as a value (valueBits).
	src ptx.Reg
	// buf, where set, is shared memory the selection goes to first, a
	// slot's index and value bits at the same position of two regions,
	// copied out in slot order after (writeSelected): a thread writing
	// its own run of slots straight to global memory makes each of a
	// warp's stores touch a line per lane.
	buf *outBuf
}

// outBuf is outRow.buf: a u32 index and a u32 value slot per output slot.
type outBuf struct{ idx, bits region }

// buffered is o with its selection staged in the histograms of sh, which
// are free once the K-th element is known, where they hold K slots (not
// with a sorting stage, which is a buffer of its own).
func (o outRow) buffered(sh selectShared) outRow {
	if o.stage == nil && 4*o.slots <= sh.hist[0].bytes {
		o.buf = &outBuf{idx: sh.hist[0], bits: sh.hist[1]}
	}
	return o
}

// after is o with its slots starting at slot n (outRow.from).
func (o outRow) after(n ptx.Reg) outRow {
	o.from = n
	return o
}

// slot is output slot pos of o: pos past o.from.
func (c *cta) slot(o outRow, pos ptx.Reg) ptx.Reg {
	if o.from.T == ptx.TypeInvalid {
		return pos
	}
	s := c.u32()
	c.e.Add(s, pos, o.from)
	return s
}

// store puts the element (idx, bits) in output slot pos (past o.from).
func (c *cta) store(o outRow, pos, idx, bits ptx.Reg) {
	e := c.e
	if s := o.stage; s != nil {
		c.stItem(s, c.slot(o, pos), 0, sortItem{c.key(bits), idx, bits})
		return
	}
	valid := c.setp(ptx.NE, idx, ptx.Imm(0xFFFFFFFF)) // not a padding slot
	out := c.u32()
	e.Mov(out, idx)
	e.Guarded(valid, func() { e.Add(out, out, o.offset) })
	idx = out
	if b := o.buf; b != nil {
		e.St(ptx.SpaceShared, ptx.U32, c.smem.elem(b.idx, pos, 4), idx)
		e.St(ptx.SpaceShared, ptx.U32, c.smem.elem(b.bits, pos, 4), bits)
		return
	}
	c.storeGlobal(o, c.slot(o, pos), idx, bits)
}

// storeGlobal writes slot pos of o's row in global memory: the index, and
// the value bits where o has values.
func (c *cta) storeGlobal(o outRow, pos, idx, bits ptx.Reg) {
	e := c.e
	e.St(ptx.SpaceGlobal, ptx.U32, c.elemAddr(o.idx, pos, 4), idx)
	e.If(o.hasVals, func() {
		v := c.valueBits(o, idx, bits)
		e.St(ptx.SpaceGlobal, ptx.U32, c.elemAddr(o.vals, pos, 4), v)
	})
}

// valueBits returns the bits a value slot gets for the element (idx, as
// written out, and bits, as widened): bits, but for a float16 row's NaN,
// which is widened without its sign and payload (halfToF32): those are
// made from the score read again at its column, idx less o.offset.
func (c *cta) valueBits(o outRow, idx, bits ptx.Reg) ptx.Reg {
	if c.scores != Float16 {
		return bits
	}
	e := c.e
	v := c.u32()
	e.Mov(v, bits)
	abs := c.u32()
	e.And(abs, bits, ptx.Imm(0x7FFFFFFF))
	e.If(c.setp(ptx.GT, abs, ptx.Imm(0x7F800000)), func() {
		col := c.u32()
		e.Sub(col, idx, o.offset)
		h := e.Reg(ptx.U16)
		e.LdNC(h, c.elemAddr(o.src, col, 2))
		w := c.u32()
		e.Cvt(w, h)
		e.Mov(v, c.halfNaNBits(w))
	})
	return v
}

// copyOut writes o's first n buffered slots to global memory, past a
// barrier: consecutive threads, consecutive slots.
func (c *cta) copyOut(o outRow, n ptx.Reg) {
	e, b := c.e, o.buf
	c.sync()
	j := c.u32()
	e.For(j, c.tid, n, ptx.Imm(int64(c.threads)), func() {
		idx, bits := c.u32(), c.u32()
		e.Ld(ptx.SpaceShared, idx, c.smem.elem(b.idx, j, 4))
		e.Ld(ptx.SpaceShared, bits, c.smem.elem(b.bits, j, 4))
		c.storeGlobal(o, c.slot(o, j), idx, bits)
	})
}

// staging holds a row's selected elements in shared memory for sorting:
// size (a power of two, at least K) slots of rank and float bits, and the
// sort's block reduction (five words a warp). A slot's rank is a u64 whose
// order is rank order: the key in its high word, the index's complement
// in its low one (a lower index ranks first), so that one load and one
// compare rank two elements (placeByBins). Padding, key 0 and index -1,
// is rank 0: below every element's. sortRankStep slots more of padding
// follow the size, for the rank loop's reads past the last bin.
type staging struct {
	rank, bits region
	reduce     region
	size       int
}

func allocStaging(l *layout, k, warps int) *staging {
	size := 1
	for size < k {
		size *= 2
	}
	return &staging{
		rank:   l.alloc("stage_rank", 8*(size+sortRankStep), 16),
		bits:   l.alloc("stage_bits", 4*size, 16),
		reduce: l.alloc("stage_reduce", 4*5*warps, 16),
		size:   size,
	}
}

// clearStaging fills every slot with padding: key 0 (below every real key;
// the lowest is -Inf's), index -1 and value -Inf, which is what the slots
// past a short row's length must hold, and where padding sorts: last.
func (c *cta) clearStaging(s *staging) {
	e := c.e
	j, z := c.u32(), c.constU32(0)
	e.For(j, c.tid, ptx.Imm(int64(s.size+sortRankStep)), ptx.Imm(int64(c.threads)), func() {
		e.St(ptx.SpaceShared, ptx.U32, c.smem.elem(s.rank, j, 8), ptx.Vec{z, z})
		e.If(c.setp(ptx.LT, j, ptx.Imm(int64(s.size))), func() {
			e.St(ptx.SpaceShared, ptx.U32, c.smem.elem(s.bits, j, 4), ptx.Imm(0xFF800000))
		})
	})
	c.sync()
}

// sortStaged sorts the staging buffer into rank order (key descending,
// then index ascending) and writes its first k slots to o's global row:
// a counting sort over bins of the elements' rank values. Each element's
// bin is the top bits of its rank value (rankBins: the key's distance
// below the largest, then the index); a histogram of the bins (in sh,
// free once the selection is made) and a scan give each bin's start, and
// an element's slot is its bin's start plus how many of its bin come
// before it (placeByBins). The keys of a Top-K spread over their span,
// and where they are few (ties) their indices do, so the bins hold a few
// elements each; where one holds more than sortBinMax (many distinct keys
// packed close below a far larger one, with ties among them), the
// elements go through a bitonic network instead (sortBitonic). Both give
// the one rank order. A bitonic network for every row took 13-15 us at K
// = 2048, this about 3 us (perf notes 148-154).
func (c *cta) sortStaged(s *staging, o outRow, k int, sh selectShared, scratch region) {
	e := c.e
	P, B, nb := s.size, c.threads, sh.bins
	// With more slots than Bins, the bins are Phase 4's two histograms as
	// one, twice as many (half as full: perf notes 151, 152), and a bin's
	// end is the next one's start; else, or where the histograms do not
	// lie end to end (Bins < 4), the second one keeps their counts.
	h0, h1 := sh.hist[0], sh.hist[1]
	twice := P > nb && h1.off == h0.off+h0.bytes
	counts, sizes := c.histOf(h0), c.histOf(h1)
	if twice {
		nb *= 2
	}
	e.Comment("sorted output: counting sort of %d slots in %d bins of rank values", P, nb)
	largest := c.smem.at(sh.scalars, 0) // the largest bin's count
	c.clearShared(counts, nb)
	e.If(c.setp(ptx.EQ, c.tid, ptx.Imm(0)), func() { e.St(ptx.SpaceShared, ptx.U32, largest, ptx.Imm(0)) })
	c.sync() // the staging's stores
	// This thread's slots, tid + i*B, in registers, their keys' span and
	// their indices' bits; padding (index -1) is left out, and goes last.
	n := (P + B - 1) / B
	bs := binSort{items: make([]sortItem, n), has: make([]ptx.Pred, n), place: make([]ptx.Reg, n), bin: make([]ptx.Reg, n),
		starts: counts, sizes: sizes, bins: nb, twice: twice}
	acc := c.newSpanAcc()
	idxs := c.constU32(0) // the bits any index has
	for i := range bs.items {
		it := sortItem{c.u32(), c.u32(), c.u32()}
		bs.items[i] = it
		e.Mov(it.idx, ptx.Imm(0xFFFFFFFF))
		slot := c.u32()
		e.Add(slot, c.tid, ptx.Imm(int64(i*B)))
		e.If(c.setp(ptx.LT, slot, ptx.Imm(int64(P))), func() {
			c.ldItem(s, slot, 0, it)
		})
		bs.has[i] = c.setp(ptx.NE, it.idx, ptx.Imm(0xFFFFFFFF))
		e.If(bs.has[i], func() {
			acc.add(it.key)
			e.Or(idxs, idxs, it.idx)
		})
	}
	bs.binOf = c.rankBins(acc, idxs, nb, s.reduce) // its barriers publish the clearing
	for i, it := range bs.items {
		bs.place[i], bs.bin[i] = c.u32(), c.u32()
		e.If(bs.has[i], func() {
			e.Mov(bs.bin[i], bs.binOf(it))
			e.Atom(ptx.SpaceShared, "add", bs.place[i], c.bin(counts, bs.bin[i]), ptx.Imm(1))
		})
	}
	c.sync()
	// The bins' starts, over their counts: threads own runs of q bins, a
	// block scan of the runs' sums; the counts are kept in sizes (unless
	// twice).
	q := max(1, nb/B)
	owns := c.setp(ptx.LT, c.tid, ptx.Imm(int64(nb/q)))
	first := c.u32()
	e.Mul(first, c.tid, ptx.Imm(int64(q)))
	cnt := make([]ptx.Reg, q)
	sum, most := c.constU32(0), c.constU32(0)
	for j := range cnt {
		cnt[j] = c.constU32(0)
		b := c.u32()
		e.Add(b, first, ptx.Imm(int64(j)))
		e.If(owns, func() { e.Ld(ptx.SpaceShared, cnt[j], c.bin(counts, b)) })
		e.Add(sum, sum, cnt[j])
		e.Max(most, most, cnt[j])
	}
	e.Red(ptx.SpaceShared, "max", ptx.U32, largest, most)
	at, total := c.blockScan(sum, scratch) // its barrier publishes the largest
	bs.total = total
	big := c.u32()
	e.Ld(ptx.SpaceShared, big, largest)
	e.If(owns, func() {
		for j := range cnt {
			b := c.u32()
			e.Add(b, first, ptx.Imm(int64(j)))
			e.St(ptx.SpaceShared, ptx.U32, c.bin(counts, b), at)
			if !twice {
				e.St(ptx.SpaceShared, ptx.U32, c.bin(sizes, b), cnt[j])
			}
			e.Add(at, at, cnt[j])
		}
	})
	c.sync()
	e.IfElse(c.setp(ptx.GT, big, ptx.Imm(sortBinMax)), func() { c.sortBitonic(s, o, k) }, func() {
		c.placeByBins(s, o, k, bs)
	})
}

// rankBins returns the bin, of nb, of an element in rank order: the top
// bits of its rank value, its key's distance below the largest key (less
// the low bits every key shares) followed by its index, over the span of
// the elements' rank values. acc holds this thread's part of the keys'
// span, idxs the bits its indices have; the block reduction goes through
// scratch (five words a warp), and its barriers publish the shared stores
// before it. Where the keys are few (bfloat16 scores, wide ties), the
// index's top bits split their bins, so that a bin of equal keys does not
// hold them all: ranking by comparisons within a bin costs the square of
// its size (perf notes 150). Where the keys spread over more bits than
// the bins have, the bin is the key's alone, as a bin of the keys' span
// would be.
func (c *cta) rankBins(acc *spanAcc, idxs ptx.Reg, nb int, scratch region) func(it sortItem) ptx.Reg {
	e := c.e
	r := c.blockReduceN(append(spanOps[:4:4], "or"), append(acc.regs(), idxs), scratch)
	top, shared := r[1], c.alike(r[2], r[3])
	// The rank value has keyLen + idxLen bits, of which the bin takes the
	// top L: (distance << a >> b) | (index << c >> d), each shift the
	// positive part of a difference of lengths; a and b also drop the
	// distance's shared low zeros, which keyLen leaves out.
	L := int64(bits.TrailingZeros(uint(nb)))
	keyLen, idxLen := c.u32(), c.u32()
	e.Sub(keyLen, top, r[0])
	e.Shr(keyLen, keyLen, shared) // shr clamps a shift of 32: 0
	e.Clz(keyLen, keyLen)
	e.Sub(keyLen, ptx.Imm(32), keyLen)
	e.Clz(idxLen, r[4])
	e.Sub(idxLen, ptx.Imm(32), idxLen)
	total, keyShift := c.u32(), c.u32()
	e.Add(total, keyLen, idxLen)
	e.Add(keyShift, keyLen, shared)
	shift := func(x, y ptx.Operand) ptx.Reg { // max(x - y, 0)
		d := c.s32()
		e.Sub(d, x, y)
		e.Max(d, d, ptx.Imm(0))
		u := c.u32()
		e.Mov(u, d)
		return u
	}
	a, b := shift(ptx.Imm(L), keyShift), shift(keyShift, ptx.Imm(L))
	cs, d := shift(ptx.Imm(L), total), shift(total, ptx.Imm(L))
	return func(it sortItem) ptx.Reg {
		k, x := c.u32(), c.u32()
		e.Sub(k, top, it.key)
		e.Shl(k, k, a)
		e.Shr(k, k, b)
		e.Shl(x, it.idx, cs)
		e.Shr(x, x, d)
		e.Or(k, k, x)
		return k
	}
}

// binSort is sortStaged's state past the bins' starts: this thread's
// elements (has: not padding), their bins and their places in them, the
// bin of an element (rankBins), each of the bins' start and count (not
// kept where twice: a bin ends where the next starts), and the number of
// elements.
type binSort struct {
	items         []sortItem
	has           []ptx.Pred
	place, bin    []ptx.Reg
	binOf         func(it sortItem) ptx.Reg
	starts, sizes histBuf
	bins          int
	twice         bool
	total         ptx.Reg
}

// placeByBins is sortStaged's common path: each element goes to its place
// in its bin in the staging (a bin's elements then lie together, in any
// order), and each gathered element then to the output slot that is its
// bin's start plus how many of the bin's elements come before it. The
// slots after the elements, up to k, are padding.
func (c *cta) placeByBins(s *staging, o outRow, k int, bs binSort) {
	e := c.e
	e.Comment("sorted output: each element to its bin's start plus its rank within the bin")
	for i, it := range bs.items {
		e.If(bs.has[i], func() {
			at := c.u32()
			e.Ld(ptx.SpaceShared, at, c.bin(bs.starts, bs.bin[i]))
			e.Add(at, at, bs.place[i])
			c.stItem(s, at, 0, it)
		})
	}
	c.sync() // the gathered bins
	out := o
	out.stage = nil
	// The gathered elements, slots tid + i*B: neighbouring lanes take
	// neighbouring elements, mostly of one bin, and their walks over it
	// read the same words at once (one access, where the lanes' own
	// elements, in bins all over, made bank conflicts: perf notes 149).
	for i := range bs.items {
		at := c.u32()
		e.Add(at, c.tid, ptx.Imm(int64(i*c.threads)))
		e.If(c.setp(ptx.LT, at, bs.total), func() {
			it := sortItem{c.u32(), c.u32(), c.u32()}
			c.ldItem(s, at, 0, it)
			b := bs.binOf(it)
			g, end := c.u32(), c.u32()
			start := c.bin(bs.starts, b)
			e.Ld(ptx.SpaceShared, g, start)
			if bs.twice {
				e.Mov(end, bs.total) // the last bin's end
				e.If(c.setp(ptx.LT, b, ptx.Imm(int64(bs.bins-1))), func() {
					e.Ld(ptx.SpaceShared, end, ptx.At(start.Base, start.Off+4))
				})
			} else {
				e.Ld(ptx.SpaceShared, end, c.bin(bs.sizes, b))
				e.Add(end, end, g)
			}
			// The slots past the bin's end hold later bins' elements and
			// padding, none of them before this one.
			c.countBefore(s.rank, 8, sortRankStep, g, end, c.rankWord(it), g)
			e.If(c.setp(ptx.LT, g, ptx.Imm(int64(k))), func() { c.store(out, g, it.idx, it.bits) })
		})
	}
	g, pad, negInf := c.u32(), c.constU32(0xFFFFFFFF), c.constU32(0xFF800000)
	e.Add(g, bs.total, c.tid)
	e.For(g, g, ptx.Imm(int64(k)), ptx.Imm(int64(c.threads)), func() { c.store(out, g, pad, negInf) })
}

// sortBinMax is the most elements a bin of sortStaged's counting sort may
// hold: each of them is compared with every other, so a bin of b elements
// costs its warps b steps for every 32 of them, and bins of sortBinMax
// throughout would take about as long as the bitonic network over K =
// 2048 slots (~13 us on an H100).
const sortBinMax = 128

// rankWord is it's rank word as the staging holds it (staging): a u64
// whose order is rank order. (Worked out in registers: loading it from
// the staging instead put a load's latency before the rank loop, +1% cold,
// perf notes 154.)
func (c *cta) rankWord(it sortItem) ptx.Reg {
	e := c.e
	r, lo := c.u64(), c.u64()
	e.Cvt(r, it.key)
	e.Shl(r, r, ptx.Imm(32))
	n := c.u32()
	e.Not(n, it.idx)
	e.Cvt(lo, n)
	e.Or(r, r, lo)
	return r
}

// sortBitonic sorts the staging buffer into rank order (key descending,
// then index ascending) with a bitonic network and copies its first k
// slots to o's global row. Each thread holds E consecutive slots in
// registers: stages whose partners are in the same thread compare in
// registers, those within a warp exchange with shfl.bfly, and only those
// across warps (strides of 32*E and more) go through shared memory, one
// barrier each: 10 of the 66 stages for K = 2048. The stages past blocks
// of E slots are loops over the block size and the stride, one copy of
// each kind of stage: ~560 PTX instructions instead of ~3400 unrolled,
// for ~1 us more at K = 2048 (perf notes 148) on sortStaged's rare path.
func (c *cta) sortBitonic(s *staging, o outRow, k int) {
	e := c.e
	P := s.size
	E := max(1, P/c.threads) // slots per thread
	T := P / E               // threads holding slots
	e.Comment("sorted output: bitonic sort of %d slots, %d per thread", P, E)
	c.sync()
	items := make([]sortItem, E)
	for i := range items {
		items[i] = sortItem{c.u32(), c.u32(), c.u32()}
	}
	holds := c.setp(ptx.LT, c.tid, ptx.Imm(int64(T)))
	first := c.u32() // this thread's first slot
	e.Mul(first, c.tid, ptx.Imm(int64(E)))
	load := func() {
		for i, it := range items {
			e.Mov(it.key, ptx.Imm(0)) // padding, for threads that hold nothing
			e.Mov(it.idx, ptx.Imm(0xFFFFFFFF))
			e.Mov(it.bits, ptx.Imm(0xFF800000))
			e.If(holds, func() { c.ldItem(s, first, i, it) })
		}
	}
	store := func() {
		e.If(holds, func() {
			for i, it := range items {
				c.stItem(s, first, i, it)
			}
		})
	}
	load()
	// Blocks of up to E slots, within a thread.
	for size := 2; size <= E; size *= 2 {
		var rev ptx.Pred // the blocks of E slots alternate by thread
		within := size   // smaller ones within a thread
		if size == E {
			rev, within = c.reversed(c.constU32(int64(E)), E), 0
		}
		for stride := size / 2; stride >= 1; stride /= 2 {
			c.sortStageRegisters(items, stride, rev, within)
		}
	}
	// Larger blocks: for each size, the stages across warps, then within a
	// warp, then within a thread (strides below E).
	size, stride := c.u32(), c.u32()
	e.Mov(size, ptx.Imm(int64(2*E)))
	e.While(func() ptx.Pred { return c.setp(ptx.LE, size, ptx.Imm(int64(P))) }, func() {
		e.Shr(stride, size, ptx.Imm(1))
		if P > warpSize*E {
			e.If(c.setp(ptx.GE, stride, ptx.Imm(int64(warpSize*E))), func() {
				store()
				c.sync()
				e.DoWhile(func() {
					c.sortStageShared(s, size, stride)
					c.sync()
					e.Shr(stride, stride, ptx.Imm(1))
				}, func() ptx.Pred { return c.setp(ptx.GE, stride, ptx.Imm(int64(warpSize*E))) })
				load()
			})
		}
		e.While(func() ptx.Pred { return c.setp(ptx.GE, stride, ptx.Imm(int64(E))) }, func() {
			c.sortStageShuffle(items, size, stride, E)
			e.Shr(stride, stride, ptx.Imm(1))
		})
		rev := c.reversed(size, E)
		for st := E / 2; st >= 1; st /= 2 {
			c.sortStageRegisters(items, st, rev, 0)
		}
		e.Shl(size, size, ptx.Imm(1))
	})
	// Rank order: slot g is the row's g-th; padding sorted last.
	out := o
	out.stage = nil
	for i, it := range items {
		g := c.u32()
		e.Add(g, first, ptx.Imm(int64(i)))
		e.If(c.setp(ptx.LT, g, ptx.Imm(int64(k))), func() { c.store(out, g, it.idx, it.bits) })
	}
}

// sortItem is one slot of the sort in registers.
type sortItem struct{ key, idx, bits ptx.Reg }

// ldItem loads it from slot first+i of s.
func (c *cta) ldItem(s *staging, first ptx.Reg, i int, it sortItem) {
	e := c.e
	r, b := c.itemAddrs(s, first, i)
	e.Ld(ptx.SpaceShared, ptx.Vec{it.idx, it.key}, r)
	e.Not(it.idx, it.idx)
	e.Ld(ptx.SpaceShared, it.bits, b)
}

// stItem stores it into slot first+i of s.
func (c *cta) stItem(s *staging, first ptx.Reg, i int, it sortItem) {
	e := c.e
	r, b := c.itemAddrs(s, first, i)
	n := c.u32()
	e.Not(n, it.idx)
	e.St(ptx.SpaceShared, ptx.U32, r, ptx.Vec{n, it.key})
	e.St(ptx.SpaceShared, ptx.U32, b, it.bits)
}

// itemAddrs returns the addresses of slot first+i's rank and bits in s.
func (c *cta) itemAddrs(s *staging, first ptx.Reg, i int) (rank, bits ptx.Addr) {
	r, b := c.smem.elem(s.rank, first, 8), c.smem.elem(s.bits, first, 4)
	return ptx.At(r.Base, r.Off+int64(8*i)), ptx.At(b.Base, b.Off+int64(4*i))
}

// before sets p to whether a comes before b in rank order.
func (c *cta) before(a, b sortItem) ptx.Pred {
	e := c.e
	p := c.setp(ptx.GT, a.key, b.key)
	same := c.setp(ptx.EQ, a.key, b.key)
	e.AndPred(same, same, c.setp(ptx.LT, a.idx, b.idx))
	e.OrPred(p, p, same)
	return p
}

// reversed sets p to whether the bitonic block of size slots (a u32,
// at least E) holding this thread's slots is sorted in reverse: bit size
// of the slots, bit size/E of the thread.
func (c *cta) reversed(size ptx.Reg, E int) ptx.Pred {
	e := c.e
	b := c.u32()
	e.Shr(b, size, ptx.Imm(int64(bits.TrailingZeros(uint(E)))))
	e.And(b, b, c.tid)
	return c.setp(ptx.NE, b, ptx.Imm(0))
}

// sortStageShuffle: partners in other lanes of the warp (E <= stride <
// 32E; size and stride u32s). Slot i of lane l pairs with slot i of lane
// l ^ stride/E; the lane of the lower slot keeps the first of the pair in
// rank order unless the block is reversed.
func (c *cta) sortStageShuffle(items []sortItem, size, stride ptx.Reg, E int) {
	e := c.e
	lanes := c.u32()
	e.Shr(lanes, stride, ptx.Imm(int64(bits.TrailingZeros(uint(E)))))
	hi := c.u32()
	e.And(hi, c.tid, lanes)
	keepFirst := c.setp(ptx.EQ, hi, ptx.Imm(0))
	e.XorPred(keepFirst, keepFirst, c.reversed(size, E))
	for _, it := range items {
		p := sortItem{c.u32(), c.u32(), c.u32()}
		for _, f := range [][2]ptx.Reg{{p.key, it.key}, {p.idx, it.idx}, {p.bits, it.bits}} {
			e.Shfl(ptx.ShflBfly, f[0], f[1], lanes, ptx.Imm(warpSize-1), ptx.Imm(fullMask))
		}
		// Take the partner's slot when it is the one this lane keeps.
		take := c.before(it, p)
		e.XorPred(take, take, keepFirst)
		e.Guarded(take, func() {
			e.Mov(it.key, p.key)
			e.Mov(it.idx, p.idx)
			e.Mov(it.bits, p.bits)
		})
	}
}

// sortStageRegisters: partners in the same thread (stride < E). A
// block within the thread (size > 0, less than E) is sorted in reverse
// where bit size of its items is set; a larger one where rev holds (its
// direction is the thread's), and none where rev is unset.
func (c *cta) sortStageRegisters(items []sortItem, stride int, rev ptx.Pred, size int) {
	e := c.e
	for i := range items {
		if i&stride != 0 {
			continue
		}
		a, b := items[i], items[i+stride]
		swap := c.before(b, a)
		switch {
		case size > 0 && i&size != 0:
			swap = c.before(a, b)
		case size == 0 && rev != (ptx.Pred{}):
			e.XorPred(swap, swap, rev)
		}
		t := sortItem{c.u32(), c.u32(), c.u32()}
		e.Guarded(swap, func() {
			for _, f := range [][3]ptx.Reg{{t.key, a.key, b.key}, {t.idx, a.idx, b.idx}, {t.bits, a.bits, b.bits}} {
				e.Mov(f[0], f[1])
				e.Mov(f[1], f[2])
				e.Mov(f[2], f[0])
			}
		})
	}
}

// sortStageShared: partners in other warps, through shared memory (size
// and stride u32s).
func (c *cta) sortStageShared(s *staging, size, stride ptx.Reg) {
	e := c.e
	low := c.u32() // the bits below stride
	e.Sub(low, stride, ptx.Imm(1))
	i := c.u32()
	e.For(i, c.tid, ptx.Imm(int64(s.size/2)), ptx.Imm(int64(c.threads)), func() {
		// Pair i compares slots a (i with a zero bit spliced in at
		// stride) and b = a + stride.
		a, hi := c.u32(), c.u32()
		e.And(a, i, low)
		e.Sub(hi, i, a) // i & ^low
		e.Shl(hi, hi, ptx.Imm(1))
		e.Or(a, a, hi)
		b := c.u32()
		e.Add(b, a, stride)
		x, y := sortItem{c.u32(), c.u32(), c.u32()}, sortItem{c.u32(), c.u32(), c.u32()}
		c.ldItem(s, a, 0, x)
		c.ldItem(s, b, 0, y)
		// Blocks whose bit size is set are ordered in reverse.
		rev := c.u32()
		e.And(rev, a, size)
		swap := c.setp(ptx.NE, rev, ptx.Imm(0))
		e.XorPred(swap, swap, c.before(y, x))
		e.Guarded(swap, func() {
			c.stItem(s, a, 0, y)
			c.stItem(s, b, 0, x)
		})
	})
}
