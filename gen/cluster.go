package gen

import (
	"fmt"

	"github.com/gvr-go/gvr/ptx"
)

// Clusters: a thread-block cluster of C CTAs (sm_90+) holds one row. CTA r
// of the cluster (its rank) brings its slice of the row into its own
// shared memory once, with a bulk copy on an mbarrier, and the work that
// follows reads shared memory; what must be combined across the row is
// combined across the cluster through distributed shared memory. A row is
// read from HBM once, by C SMs at a time, instead of by one.

// clusterShared is the shared memory of a cluster kernel's slice.
type clusterShared struct {
	bar   region // the mbarrier the bulk copy completes on (8 bytes)
	count region // a u32 the cluster's CTAs add into (rank 0's is used)
	slice region // the slice, shifted by 0 to perVec-1 elements so that its 16-byte-aligned part lands 16-byte aligned
	cap   int    // elements the slice region holds
}

// sliceCapacity is how many elements of a row of at most maxN elements
// each of c CTAs holds: ceil(maxN/c) rounded up to a whole vector of v.
func sliceCapacity(maxN, c, v int) int {
	per := (maxN + c - 1) / c
	return (per + v - 1) / v * v
}

// maxN is cfg.MaxN, or when it is 0 the longest row the cluster can hold:
// each CTA's slice as large as the target's shared memory allows beside
// the used bytes the kernel lays out before it.
func (cfg Config) maxN(used int) int {
	if cfg.MaxN > 0 {
		return cfg.MaxN
	}
	size, v := cfg.Scores.Size(), 16/cfg.Scores.Size()
	overhead := 8 + 4 + (v-1)*size + sliceAlign // mbarrier, counter, shift, alignment
	per := (MaxSharedPerBlock(cfg.Target) - used - overhead - 4*32) / size / v * v
	return max(per, v) * cfg.cluster()
}

// sliceAlign is the alignment of a cluster kernel's slice in shared
// memory: a cache line, so that the bulk copies' destinations do not move
// within one as the regions before the slice change. 16 bytes would do
// for the copies and the vector loads, but the slice's offset within a
// line then followed unrelated layout changes: 112 bytes into one, where
// 16 more bytes of Phase 1 state put it, took 2-10% longer at batch 64
// than 96 (perf notes 57).
const sliceAlign = 128

// allocCluster lays out a cluster kernel's slice for cfg after what l
// holds already.
func allocCluster(l *layout, cfg Config) clusterShared {
	size, v := cfg.Scores.Size(), 16/cfg.Scores.Size()
	cap := sliceCapacity(cfg.maxN(l.size), cfg.cluster(), v)
	return clusterShared{
		bar:   l.alloc("mbarrier", 8, 8),
		count: l.alloc("cluster_count", 4, 4),
		// v-1 elements more: the shift that aligns the slice.
		slice: l.alloc("slice", size*(cap+v-1), sliceAlign),
		cap:   cap,
	}
}

// clusterSharedBytes is the dynamic shared memory cluster kernel name
// needs for cfg, for Validate-style checks before generating.
func clusterSharedBytes(name string, cfg Config) int {
	size, _ := clusterLayout(name, cfg)
	return size
}

// clusterLayout is the shared memory of cluster kernel name for cfg: its
// size in bytes and its slice.
func clusterLayout(name string, cfg Config) (int, clusterShared) {
	var l layout
	var sh clusterShared
	if generators[name].topk {
		ts := newTopKShared(&l, cfg, true)
		sh = allocClusterTopK(&l, cfg, ts).slice
	} else {
		sh = allocCluster(&l, cfg)
	}
	return l.size, sh
}

// ClusterMaxN is the longest row cluster kernel name for cfg holds in its
// cluster's shared memory: cfg.MaxN rounded up to whole vectors per CTA,
// or with MaxN 0 what the shared memory left holds (twice as many 16-bit
// scores as float32 ones). Longer rows are exact too, their excess read
// from global memory.
func ClusterMaxN(name string, cfg Config) int {
	_, sh := clusterLayout(name, cfg)
	return sh.cap * cfg.cluster()
}

// slice is this CTA's part of its cluster's row, once in shared memory:
// elements [lo, lo+held) of the row are at shared address at (a u32
// register) onwards, as they are in the row (4 or 2 bytes each); elements [lo+held, lo+n) did not fit
// (a row longer than MaxN) and stay in global memory at over.
type slice struct {
	rank, row ptx.Reg // %cluster_ctarank, %clusterid.x: the row
	lo, n     ptx.Reg // the slice: the row's elements [lo, lo+n)
	held      ptx.Reg // of them, in shared memory
	at        ptx.Reg // u32 shared address of element lo
	over      ptx.Reg // u64 global address of element lo+held
	ends      [2]endCopy
}

// endCopy is one of the elements before and after a slice's bulk copy
// that a thread loads in startSlice and stores in awaitSlice: storing it at
// once would hold the thread (warp 0's first three) for the load's whole
// latency before the phase that follows, which every barrier then waits for.
type endCopy struct {
	ok  ptx.Pred // this thread has one
	dst ptx.Reg  // u32 shared address
	x   ptx.Reg  // the score, as loaded
}

// loadSlice brings this CTA's slice of row (a global address, rowLen
// elements) into shared memory: CTA r of the cluster's C (perCluster)
// takes elements [r*chunk, (r+1)*chunk), chunk = ceil(rowLen/C) rounded
// up to a vector (16 bytes).
// The 16-byte-aligned middle of the slice comes by one bulk copy
// completing on the mbarrier; the elements before it and after it (less
// than a vector each) by plain loads, meanwhile. It
// ends with the slice in shared memory and every thread past a cluster
// and a CTA barrier. before runs once the copy has started, before the
// cluster barrier that makes what it sets up visible to the other CTAs (a
// kernel puts its own shared setup there, such as clearing what other
// CTAs will add into).
func (c *cta) loadSlice(sh clusterShared, row, rowLen ptx.Reg, before func(s slice)) slice {
	s := c.startSlice(sh, row, rowLen, nil, before, true)
	c.awaitSlice(sh, s)
	return s
}

// startSlice is loadSlice up to the wait for the bulk copy: work that
// needs no slice (reads of global memory, say) can go between it and
// awaitSlice, while the copy is in flight. inits, if not nil, initialises
// the kernel's other mbarriers (thread 0, beside the slice's). Without
// barrier, the CTA barrier before the cluster arrival is left out: the
// other threads go on at once rather than wait for thread 0's fence and
// issue, and the caller must pass a CTA barrier before awaitSlice (which
// waits on the mbarrier thread 0 initialises); before must be nil then.
func (c *cta) startSlice(sh clusterShared, row, rowLen ptx.Reg, inits func(), before func(s slice), barrier bool) slice {
	e := c.e
	s := slice{rank: c.u32(), row: c.u32()}
	e.Mov(s.rank, ptx.ClusterCtaRank)
	e.Mov(s.row, ptx.ClusterIDX)

	// chunk = ceil(rowLen/C) rounded up to V; lo = min(rank*chunk, rowLen);
	// n = min(chunk, rowLen-lo).
	size, V := int64(c.size()), int64(c.perVec())
	chunk := c.u32()
	e.Add(chunk, rowLen, ptx.Imm(V*int64(c.cluster)-1))
	e.Div(chunk, chunk, ptx.Imm(V*int64(c.cluster)))
	e.Shl(chunk, chunk, ptx.Imm(log2(V)))
	s.lo = c.u32()
	e.Mul(s.lo, s.rank, chunk)
	e.Min(s.lo, s.lo, rowLen)
	s.n = c.u32()
	e.Sub(s.n, rowLen, s.lo)
	e.Min(s.n, s.n, chunk)
	s.held = c.u32()
	e.Min(s.held, s.n, ptx.Imm(int64(sh.cap)))

	// The slice's global address g; head = elements before the first
	// 16-byte boundary at or after g (less than V, at most held); the
	// vectors after them; tail = what is left of held.
	g := c.u64()
	e.MulWide(g, s.lo, ptx.Imm(size))
	e.Add(g, g, row)
	head := c.headElems(g, s.held)
	vecBytes := c.u32()
	e.Sub(vecBytes, s.held, head)
	e.And(vecBytes, vecBytes, ptx.Imm(^(V - 1)))
	e.Shl(vecBytes, vecBytes, ptx.Imm(log2(size)))

	// Element j sits at element shift+j of the slice region, shift =
	// (V-head) mod V: then element head, the first vector, is 16-byte
	// aligned in shared memory as in global memory (the bulk copy needs
	// both).
	shift := c.u32()
	e.Sub(shift, ptx.Imm(V), head)
	e.And(shift, shift, ptx.Imm(V-1))
	s.at = c.u32()
	e.Mad(s.at, shift, ptx.Imm(size), c.smem.base)
	e.Add(s.at, s.at, ptx.Imm(int64(sh.slice.off)))
	s.over = c.u64()
	e.MulWide(s.over, s.held, ptx.Imm(size))
	e.Add(s.over, s.over, g)

	// Thread 0 initialises the mbarrier and starts the copy at once: the
	// copy is its own CTA's, on its own mbarrier, so the init needs only
	// its fence, not a cluster barrier first (which would cost the copy a
	// cluster round trip). The kernel's other mbarriers (inits) are
	// initialised with it, under the same fence.
	bar := ptx.At(c.smem.base, int64(sh.bar.off))
	e.If(c.setp(ptx.EQ, c.tid, ptx.Imm(0)), func() {
		e.MbarrierInit(ptx.SpaceShared, bar, ptx.Imm(1))
		if inits != nil {
			inits()
		}
		e.FenceMbarrierInit()
		state := c.u64()
		e.MbarrierArriveExpectTx(ptx.SpaceShared, ptx.ScopeDefault, state, bar, vecBytes)
		e.If(c.setp(ptx.GT, vecBytes, ptx.Imm(0)), func() {
			src := c.u64()
			e.MulWide(src, head, ptx.Imm(size))
			e.Add(src, src, g)
			dst := c.u32()
			e.Mad(dst, head, ptx.Imm(size), s.at)
			e.CpAsyncBulk(ptx.At(dst, 0), ptx.At(src, 0), vecBytes, bar)
		})
		c.prefetchOver(s)
	})
	c.markAt(MarkSliceIssued)
	if before != nil {
		before(s)
	}
	// The other threads wait on the mbarrier (awaitSlice) only past this
	// barrier. The cluster's CTAs arrive now and wait in awaitSlice, long
	// after: the other CTAs' shared memory (and what before set up there)
	// is touched only past that wait. A cluster of one has no other CTA.
	if barrier {
		c.sync()
	} else if before != nil {
		panic("gen: startSlice without its barrier publishes nothing of before's")
	}
	if c.cluster > 1 {
		// A release arrival is a MEMBAR.ALL.GPU first (scripts/sass-steps.sh).
		// The mbarriers' inits are published by their fence.mbarrier_init,
		// made for a relaxed arrival; only what before writes needs release.
		sem := ptx.SemRelaxed
		if before != nil {
			sem = ptx.SemRelease
		}
		e.BarrierClusterArrive(sem)
	}
	c.markAt(MarkSliceSynced)
	// Meanwhile the head and the tail, one element per thread, loaded now
	// and stored in awaitSlice.
	tail0 := c.u32()
	e.Shr(tail0, vecBytes, ptx.Imm(log2(size)))
	e.Add(tail0, tail0, head)
	tail := c.u32()
	e.Sub(tail, s.held, tail0)
	j := c.u32()
	e.Add(j, tail0, c.tid)
	for i, end := range []struct{ n, j ptx.Reg }{{head, c.tid}, {tail, j}} {
		ec := endCopy{ok: c.setp(ptx.LT, c.tid, end.n), dst: c.u32(), x: c.rawScoreReg()}
		e.Guarded(ec.ok, func() {
			a := c.u64()
			e.MulWide(a, end.j, ptx.Imm(size))
			e.Add(a, a, g)
			e.LdNC(ec.x, ptx.At(a, 0))
			e.Mad(ec.dst, end.j, ptx.Imm(size), s.at)
		})
		s.ends[i] = ec
	}
	return s
}

// awaitSlice waits for the slice startSlice began: the bulk copy's
// mbarrier, the cluster barrier startSlice arrived at (past it, every CTA
// of the cluster has set up its shared memory; none in a cluster of one),
// and a CTA barrier for the head and tail other threads stored.
func (c *cta) awaitSlice(sh clusterShared, s slice) {
	c.e.MbarrierWait(ptx.SpaceShared, ptx.ScopeDefault, ptx.At(c.smem.base, int64(sh.bar.off)), ptx.Imm(0))
	for _, ec := range s.ends {
		c.e.Guarded(ec.ok, func() { c.e.St(ptx.SpaceShared, ec.x.T, ptx.At(ec.dst, 0), ec.x) })
	}
	c.syncCluster()
	c.sync()
}

// syncCluster is the wait half of the cluster barrier startSlice arrived
// at (once: awaitSlice then leaves it out). Past it, the other CTAs'
// mbarriers are initialised, so this CTA may send them values; it waits
// for no copy.
func (c *cta) syncCluster() {
	if c.cluster > 1 && !c.clusterSynced {
		c.e.BarrierClusterWait(ptx.SemAcquire) // startSlice arrived
		c.clusterSynced = true
	}
}

// sliceWalk visits the elements of slice s: those held in shared memory,
// round-robin over the threads, four loads in flight per thread; then those
// that did not fit, from global memory (rowWalk). The order is fixed, as
// for rowWalk; idx gives the element's index in the row.
func (c *cta) sliceWalk(s slice, unroll int, visit func(x ptx.Reg, idx func() ptx.Reg)) {
	c.heldWalk(s, visit)
	c.overWalk(s, unroll, visit)
}

// heldWalk is sliceWalk's first part: the elements held in shared memory.
func (c *cta) heldWalk(s slice, visit func(x ptx.Reg, idx func() ptx.Reg)) {
	e := c.e
	B := int64(c.threads)
	at := func(j ptx.Reg) (ptx.Reg, func() ptx.Reg) {
		a := c.u32()
		e.Mad(a, j, ptx.Imm(int64(c.size())), s.at)
		x := c.f32()
		c.loadScoreAt(x, ptx.At(a, 0), ptx.SpaceShared)
		return x, func() ptx.Reg {
			i := c.u32()
			e.Add(i, s.lo, j)
			return i
		}
	}
	// Whole groups of 4B elements: four loads per thread before any visit.
	const group = 4
	full := c.u32()
	e.Div(full, s.held, ptx.Imm(group*B))
	e.Mul(full, full, ptx.Imm(group*B))
	j := c.u32()
	e.For(j, c.tid, full, ptx.Imm(group*B), func() {
		var xs [group]ptx.Reg
		var is [group]func() ptx.Reg
		for u := range group {
			ju := c.u32()
			e.Add(ju, j, ptx.Imm(int64(u)*B))
			xs[u], is[u] = at(ju)
		}
		for u := range group {
			visit(xs[u], is[u])
		}
	})
	k := c.u32()
	e.Add(k, full, c.tid)
	e.For(k, k, s.held, ptx.Imm(B), func() { visit(at(k)) })
}

// overWalk is sliceWalk's second part: what did not fit, elements
// lo+held onwards, from global memory.
func (c *cta) overWalk(s slice, unroll int, visit func(x ptx.Reg, idx func() ptx.Reg)) {
	c.overWalkGroups(s, unroll, visit, nil)
}

// overWalkGroups is overWalk with rowWalkGroups' group.
func (c *cta) overWalkGroups(s slice, unroll int, visit func(x ptx.Reg, idx func() ptx.Reg), group func(vidx []ptx.Reg)) {
	rest, inRow := c.overPart(s, visit)
	c.rowWalkGroups(s.over, rest, unroll, inRow, group)
}

// overPart is s's over part: its length, and visit with the part's
// indices made the row's.
func (c *cta) overPart(s slice, visit func(x ptx.Reg, idx func() ptx.Reg)) (rest ptx.Reg, inRow func(x ptx.Reg, idx func() ptx.Reg)) {
	e := c.e
	rest = c.u32()
	e.Sub(rest, s.n, s.held)
	first := c.u32()
	e.Add(first, s.lo, s.held)
	return rest, func(x ptx.Reg, idx func() ptx.Reg) {
		visit(x, func() ptx.Reg {
			i := c.u32()
			e.Add(i, first, idx())
			return i
		})
	}
}

// clusterSum adds every CTA's v (the same in all of a CTA's threads) into
// rank 0's counter through distributed shared memory, one add per CTA, and
// returns the total in rank 0's thread 0 (other threads get garbage). The
// counter was cleared before the cluster barrier of loadSlice.
func (c *cta) clusterSum(sh clusterShared, s slice, v ptx.Reg) ptx.Reg {
	e := c.e
	counter := c.u32()
	e.Add(counter, c.smem.base, ptx.Imm(int64(sh.count.off)))
	e.If(c.setp(ptx.EQ, c.tid, ptx.Imm(0)), func() {
		remote := c.u32()
		e.Mapa(ptx.SpaceSharedCluster, remote, counter, ptx.Imm(0))
		e.Red(ptx.SpaceSharedCluster, "add", ptx.U32, ptx.At(remote, 0), v)
	})
	// Every add lands before rank 0 reads, and no CTA's shared memory goes
	// away while another may still touch it.
	e.BarrierClusterArrive(ptx.SemRelease)
	e.BarrierClusterWait(ptx.SemAcquire)
	total := c.u32()
	e.If(c.setp(ptx.EQ, s.rank, ptx.Imm(0)), func() {
		e.Ld(ptx.SpaceShared, total, ptx.At(counter, 0))
	})
	return total
}

// genClusterCountGE: cluster_count_ge(scores, row_stride, lengths,
// thresholds, counts), count_ge with one row per cluster of cfg.Cluster
// CTAs: each CTA brings its slice of the row into shared memory, counts
// the elements >= thresholds[row] (or NaN) there, and the cluster combines
// the counts over distributed shared memory, one add per CTA.
func genClusterCountGE(cfg Config) (*Kernel, error) {
	name := "cluster_count_ge"
	m, c, row := newClusterKernel(name, cfg)
	e := c.e
	thresholds, counts := c.globalParam("thresholds"), c.globalParam("counts")
	sh := allocCluster(&c.smem.layout, cfg)
	scratch := c.smem.alloc("warp_totals", 4*c.warps(), 4)
	r, n := row.id, row.n
	thr := c.f32()
	e.Ld(ptx.SpaceGlobal, thr, c.elemAddr(thresholds, r, 4))
	s := c.loadSlice(sh, row.addr, n, func(s slice) {
		e.If(c.setp(ptx.EQ, c.tid, ptx.Imm(0)), func() {
			e.St(ptx.SpaceShared, ptx.U32, c.smem.at(sh.count, 0), ptx.Imm(0))
		})
	})

	// Count over my slice: in shared memory, then what did not fit.
	cnt := c.countGEWalk(func(visit func(ptx.Reg, func() ptx.Reg)) {
		c.sliceWalk(s, cfg.unroll(), visit)
	}, []ptx.Reg{thr})[0]

	// Combine across the CTA, then across the cluster.
	total := c.clusterSum(sh, s, c.blockReduce("add", cnt, scratch))
	e.If(c.setp(ptx.EQ, c.tid, ptx.Imm(0)), func() {
		e.If(c.setp(ptx.EQ, s.rank, ptx.Imm(0)), func() {
			e.St(ptx.SpaceGlobal, ptx.U32, c.elemAddr(counts, r, 4), total)
		})
	})
	return finish(name, cfg, m, c)
}

// genClusterRead: cluster_read(scores, row_stride, lengths, held), the
// floor of every cluster kernel: each CTA of a cluster brings its slice of
// row clusterid into shared memory (loadSlice) and does nothing else but
// write, in held[row*C + rank], how many elements it holds. Timing it
// gives the least a kernel that reads its row into a cluster once can
// take.
func genClusterRead(cfg Config) (*Kernel, error) {
	name := "cluster_read"
	m, c, row := newClusterKernel(name, cfg)
	e := c.e
	held := c.globalParam("held")
	sh := allocCluster(&c.smem.layout, cfg)
	C, r := cfg.cluster(), row.id
	s := c.loadSlice(sh, row.addr, row.n, nil)
	e.If(c.setp(ptx.EQ, c.tid, ptx.Imm(0)), func() {
		slot := c.u32()
		e.Mad(slot, r, ptx.Imm(int64(C)), s.rank)
		e.St(ptx.SpaceGlobal, ptx.U32, c.elemAddr(held, slot, 4), s.held)
	})
	return finish(name, cfg, m, c)
}

// FitsCluster reports whether a row of cfg.MaxN elements fits in the
// shared memory of a cluster of cfg.Cluster CTAs on cfg.Target, for
// cluster kernel name.
func FitsCluster(name string, cfg Config) bool {
	return clusterSharedBytes(name, cfg) <= MaxSharedPerBlock(cfg.Target)
}

// IsClusterKernel reports whether kernel name runs one row per
// thread-block cluster (Config.Cluster, Config.MaxN; sm_90+).
func IsClusterKernel(name string) bool { return generators[name].cluster }

// clusterRow is the row a cluster works on: its index (%clusterid.x),
// global address and length.
type clusterRow struct {
	id   ptx.Reg // u32
	addr ptx.Reg // u64 global address of element 0
	n    ptx.Reg // u32, lengths[id]
}

// newClusterKernel starts cluster kernel name for cfg, one row per
// cluster of cfg.Cluster CTAs: its module, its CTA context, and its row,
// from the parameters every cluster kernel begins with, (scores,
// row_stride, lengths).
func newClusterKernel(name string, cfg Config) (*ptx.Module, *cta, clusterRow) {
	m, e, sv := kernelModule(name, cfg)
	c := newCTA(e, cfg.Target, cfg.BlockSize, sv)
	c.perCluster(cfg.cluster())
	scores, stride := c.globalParam("scores"), e.LdParam(e.Param("row_stride", ptx.U64))
	lengths := c.globalParam("lengths")
	row := clusterRow{id: c.rowID(), n: c.u32()}
	e.Ld(ptx.SpaceGlobal, row.n, c.elemAddr(lengths, row.id, 4))
	row.addr = c.rowAddr(scores, stride, row.id)
	return m, c, row
}

// checkCluster reports why cfg cannot make cluster kernel name.
func checkCluster(name string, cfg Config) error {
	if !cfg.Target.Has(ptx.FeatCluster) {
		return fmt.Errorf("%s has no thread-block clusters, mbarrier transaction counts or bulk copies (sm_90+)", cfg.Target.Name)
	}
	if need, limit := clusterSharedBytes(name, cfg), MaxSharedPerBlock(cfg.Target); need > limit {
		return fmt.Errorf("%w: MaxN = %d over %d CTAs needs %d bytes per CTA; %s allows %d",
			ErrSharedMemory, cfg.MaxN, cfg.cluster(), need, cfg.Target.Name, limit)
	}
	return nil
}

// The cluster Top-K kernels (gvr_topk_cluster, topk_fallback_cluster) are
// gvr_topk and topk_fallback with a cluster in place of a CTA: the same
// phases (body), where "count over my share of the row, then combine
// across the CTA" becomes "count over my slice in shared memory, then
// combine across the cluster" (walkMine, rowTotals). Phase 1 runs in every
// CTA over the row in global memory while the slices arrive, so every CTA
// starts Phase 2 from the same guess without combining anything; Phase 3
// collects every CTA's candidates into the leader's (rank 0's) buffer;
// Phase 4 runs in the leader alone, over shared memory, as in gvr_topk.
// Rows longer than the cluster holds (Config.MaxN) are still exact: each
// CTA walks the part of its slice that did not fit from global memory,
// prefetched into L2 behind the slice's copy (overflow.go).

// clusterPart is a cluster Top-K kernel's share of the row and how its
// CTAs combine counts.
type clusterPart struct {
	size   int // CTAs in the cluster
	sh     clusterShared
	s      slice    // this CTA's slice (startPart; its registers unset before)
	rank   ptx.Reg  // u32 %cluster_ctarank
	leader ptx.Pred // this CTA is rank 0
	// The exchange: each round, every CTA writes its values into row
	// rank of every CTA's buffer; rounds alternate between the two
	// buffers (cur, the other being both - cur), so a round's writes never
	// meet a CTA still reading the round before.
	xchg      [2]region
	cur, both ptx.Reg // u32 shared addresses
	// With Config.MbarrierRounds, each buffer's mbarrier (expecting one
	// arrival per CTA a round; curBar and bothBar as cur and both), the
	// rounds so far (a buffer's uses alternate its phase parity), and the
	// leader's mbarrier for the candidates' hand-over; ctl.bars is empty
	// without.
	ctl             clusterTopKShared
	curBar, bothBar ptx.Reg
	round           ptx.Reg
}

// exchangeVals is how many u32 values one exchange round carries per CTA:
// Phase 2's first pass counts firstPoints thresholds; Phase 1 sends the
// predicted values' minimum and count and its sample share's range.
const exchangeVals = max(firstPoints, 4)

// clusterTopKShared is a cluster Top-K kernel's shared memory after the
// Top-K kernel's.
type clusterTopKShared struct {
	xchg   [2]region
	bars   region // MbarrierRounds: the exchange buffers' mbarriers, then the hand-over's
	sample region // the whole row sample, gathered from every CTA's share (sampleRow)
	slice  clusterShared
}

// allocClusterTopK lays out, after the Top-K shared memory ts in l, a
// cluster Top-K kernel's exchange buffers (and their mbarriers), its
// sample, and then its slice, which takes what is left. The sample is
// read in Phase 1 only, so it takes the candidate buffer's values where
// they hold it (Phase 3 fills them, past Phase 2's rounds, which every
// CTA enters only once its Phase 1 is done), rather than slice room.
func allocClusterTopK(l *layout, cfg Config, ts topkShared) clusterTopKShared {
	var s clusterTopKShared
	bytes := 4 * exchangeVals * cfg.cluster()
	s.xchg = [2]region{l.alloc("exchange0", bytes, 16), l.alloc("exchange1", bytes, 16)}
	if cfg.MbarrierRounds {
		s.bars = l.alloc("round_mbarriers", 3*8, 8)
	}
	s.sample = ts.cand.bits
	if pts := samplePoints(cfg.BlockSize); 4*pts > s.sample.bytes {
		s.sample = l.alloc("sample", 4*pts, 16)
	}
	s.slice = allocCluster(l, cfg)
	return s
}

// newClusterPart lays out a cluster Top-K kernel's exchange and slice
// after the Top-K shared memory: the slice takes what is left.
func (t *topk) newClusterPart(cfg Config) *clusterPart {
	e := t.e
	p := &clusterPart{size: cfg.cluster()}
	p.ctl = allocClusterTopK(&t.smem.layout, cfg, t.topkShared)
	p.xchg, p.sh = p.ctl.xchg, p.ctl.slice
	p.cur, p.both = t.u32(), t.u32()
	e.Add(p.cur, t.smem.base, ptx.Imm(int64(p.xchg[0].off)))
	e.Add(p.both, t.smem.base, ptx.Imm(int64(p.xchg[1].off)))
	e.Add(p.both, p.both, p.cur)
	if cfg.MbarrierRounds {
		p.curBar, p.bothBar, p.round = t.u32(), t.u32(), t.constU32(0)
		e.Add(p.curBar, t.smem.base, ptx.Imm(int64(p.ctl.bars.off)))
		e.Add(p.bothBar, p.curBar, p.curBar)
		e.Add(p.bothBar, p.bothBar, ptx.Imm(8))
	}
	p.rank = t.u32()
	e.Mov(p.rank, ptx.ClusterCtaRank)
	p.leader = t.setp(ptx.EQ, p.rank, ptx.Imm(0))
	return p
}

// startPart starts bringing a cluster kernel's slice of the row into
// shared memory (nothing for one CTA per row). With MbarrierRounds, thread
// 0 initialises the rounds' mbarriers with the slice's, under its one
// fence: the cluster barrier of the slice makes them the other CTAs' to
// arrive on. Phase 1 calls it once its own loads are out: the fence and
// the copy's issue hold up thread 0's warp alone (0.4-0.5 us of "slice
// issue" on an H100; perf notes 65), and the slice is needed only in
// Phase 2. Phase 1's block reductions are the CTA barrier awaitSlice
// needs after it.
func (t *topk) startPart() {
	p := t.part
	if p == nil {
		return
	}
	if p.started() {
		panic("gen: startPart twice")
	}
	var inits func()
	if p.mbar() {
		inits = func() {
			// One arrival each, the CTA's own, expecting the bytes the
			// others' st.async bring: a round's C rows of values, the
			// hand-over's candidates (in the leader).
			for i := range 3 {
				t.e.MbarrierInit(ptx.SpaceShared, ptx.At(t.smem.base, int64(p.ctl.bars.off+8*i)), ptx.Imm(1))
			}
		}
	}
	t.onMark = t.mark // startSlice's own points
	p.s = t.startSlice(p.sh, t.row, t.n, inits, nil, false)
	t.onMark = nil
}

// started reports whether startPart has set up the slice.
func (p *clusterPart) started() bool { return p.s.rank.T != ptx.TypeInvalid }

// mbar reports whether the rounds signal with mbarriers (MbarrierRounds).
func (p *clusterPart) mbar() bool { return p.ctl.bars.bytes > 0 }

// handOver is the shared address of the leader's mbarrier that the other
// CTAs' candidates complete on (MbarrierRounds).
func (p *clusterPart) handOver(c *cta) ptx.Reg {
	a := c.u32()
	c.e.Add(a, c.smem.base, ptx.Imm(int64(p.ctl.bars.off+16)))
	return a
}

// awaitPart waits for the slice startPart began.
func (t *topk) awaitPart() {
	if t.part != nil {
		if !t.part.started() {
			panic("gen: awaitPart before startPart")
		}
		t.awaitSlice(t.part.sh, t.part.s)
	}
}

// leaderOnly ends every CTA of a cluster but the leader, which goes on
// alone (nothing for one CTA per row). Past it, no CTA may touch another's
// shared memory.
func (t *topk) leaderOnly() {
	if t.part != nil {
		t.e.If(t.part.leader.Not(), t.e.Ret)
	}
}

// exchange adds vals (u32, the same in every thread of a CTA) across the
// cluster: each CTA's thread r writes the CTA's values into CTA r's
// buffer, one barrier.cluster, and every thread adds the C rows in rank
// order. It returns the totals and the sums over the CTAs of lower rank
// (the cluster-wide exclusive prefix), in every thread.
func (p *clusterPart) exchange(c *cta, vals []ptx.Reg) (tot, below []ptx.Reg) {
	p.send(c, vals)
	return p.receive(c, len(vals), nil, nil)
}

// send is the first half of an exchange: this CTA's values go to every
// CTA's current buffer. Work that needs no total can go between it and
// receive, which waits for the others'.
func (p *clusterPart) send(c *cta, vals []ptx.Reg) {
	e := c.e
	if len(vals) > exchangeVals {
		panic("gen: exchange of more values than its buffers hold")
	}
	e.Comment("combine across the cluster")
	e.If(c.setp(ptx.LT, c.tid, ptx.Imm(int64(p.size))), func() {
		row := c.u32()
		e.Mad(row, p.s.rank, ptx.Imm(4*exchangeVals), p.cur)
		remote := c.u32()
		e.Mapa(ptx.SpaceSharedCluster, remote, row, c.tid)
		if p.mbar() {
			// Each value completes its bytes on CTA tid's mbarrier as it
			// lands there: no fence and no arrival of ours (a release
			// arrival is a MEMBAR.ALL.GPU: perf notes 41).
			bar := c.u32()
			e.Mapa(ptx.SpaceSharedCluster, bar, p.curBar, c.tid)
			for i, v := range vals {
				e.StAsync(ptx.U32, ptx.At(remote, int64(4*i)), v, ptx.At(bar, 0))
			}
			return
		}
		for i, v := range vals {
			e.St(ptx.SpaceSharedCluster, ptx.U32, ptx.At(remote, int64(4*i)), v)
		}
	})
	if !p.mbar() {
		e.BarrierClusterArrive(ptx.SemRelease)
	}
}

// store stores v (of type typ, 4 bytes) at shared address at in every
// CTA of the cluster, beside the values of the round send starts: with
// mbarrier rounds, on each CTA's mbarrier of the round (receive's extraTx
// must count it); without, before send, whose arrival releases it.
func (p *clusterPart) store(c *cta, typ ptx.Type, at, v ptx.Reg) {
	e := c.e
	for r := range p.size {
		remote := c.u32()
		e.Mapa(ptx.SpaceSharedCluster, remote, at, ptx.Imm(int64(r)))
		if p.mbar() {
			bar := c.u32()
			e.Mapa(ptx.SpaceSharedCluster, bar, p.curBar, ptx.Imm(int64(r)))
			e.StAsync(typ, ptx.At(remote, 0), v, ptx.At(bar, 0))
			continue
		}
		e.St(ptx.SpaceSharedCluster, typ, ptx.At(remote, 0), v)
	}
}

// receive is the second half of the exchange send began, of n values:
// it waits for every CTA's and combines them in rank order, each by its
// op ("add", or "min" or "max" of unsigned values; nil: all "add"). It
// returns the totals and, for the added values, the sums over the CTAs of
// lower rank, in every thread. extraTx (nil: none) is how many bytes more
// the round brings this CTA (u32, the same in every CTA): what the others
// stored beside their values on the round's mbarrier (sendSample).
func (p *clusterPart) receive(c *cta, n int, ops []string, extraTx ptx.Operand) (tot, below []ptx.Reg) {
	e := c.e
	if ops == nil {
		ops = make([]string, n)
		for i := range ops {
			ops[i] = "add"
		}
	}
	if p.mbar() {
		// This CTA's one arrival a round expects every CTA's values' bytes,
		// before or after they land.
		var tx ptx.Operand = ptx.Imm(int64(4 * n * p.size))
		if extraTx != nil {
			sum := c.u32()
			e.Add(sum, extraTx, tx)
			tx = sum
		}
		e.If(c.setp(ptx.EQ, c.tid, ptx.Imm(0)), func() {
			e.MbarrierArriveExpectTx(ptx.SpaceShared, ptx.ScopeDefault, e.Reg(ptx.B64), ptx.At(p.curBar, 0), tx)
		})
		// Every CTA's values are here once this buffer's mbarrier completes
		// its phase of this round. A CTA writes a buffer again two rounds
		// on, past the round between, whose arrivals each CTA makes only
		// after reading this one (and a CTA barrier).
		parity := c.u32()
		e.Shr(parity, p.round, ptx.Imm(1))
		e.And(parity, parity, ptx.Imm(1))
		e.MbarrierWait(ptx.SpaceShared, ptx.ScopeCluster, ptx.At(p.curBar, 0), parity)
		e.Add(p.round, p.round, ptx.Imm(1))
		e.Sub(p.curBar, p.bothBar, p.curBar)
	} else {
		e.BarrierClusterWait(ptx.SemAcquire)
	}
	for _, op := range ops {
		init := int64(0) // "add", "max"
		if op == "min" {
			init = -1 // the largest u32
		}
		tot, below = append(tot, c.constU32(init)), append(below, c.constU32(0))
	}
	for r := range p.size {
		lower := c.setp(ptx.GT, p.s.rank, ptx.Imm(int64(r)))
		for i, op := range ops {
			x := c.u32()
			e.Ld(ptx.SpaceShared, x, ptx.At(p.cur, int64(4*(r*exchangeVals+i))))
			switch op {
			case "add":
				e.Add(tot[i], tot[i], x)
				e.Guarded(lower, func() { e.Add(below[i], below[i], x) })
			case "min":
				e.Min(tot[i], tot[i], x)
			case "max":
				e.Max(tot[i], tot[i], x)
			default:
				panic("gen: exchange op " + op)
			}
		}
	}
	e.Sub(p.cur, p.both, p.cur)
	return tot, below
}

// genGVRCluster: gvr_topk_cluster, gvr_topk's parameters; one row per
// cluster of cfg.Cluster CTAs.
func genGVRCluster(cfg Config) (*Kernel, error) {
	name := "gvr_topk_cluster"
	t, m := newTopK(name, cfg, true, true, true)
	t.body(t.phase1PreIndexStats)
	return finish(name, cfg, m, t.cta)
}

// genFallbackCluster: topk_fallback_cluster, topk_fallback's parameters;
// one row per cluster of cfg.Cluster CTAs.
func genFallbackCluster(cfg Config) (*Kernel, error) {
	name := "topk_fallback_cluster"
	t, m := newTopK(name, cfg, false, true, true)
	t.body(t.phase1SampleStats)
	return finish(name, cfg, m, t.cta)
}
