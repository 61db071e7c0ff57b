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
		ts := newTopKShared(&l, cfg, true, !generators[name].predicted)
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
	// n = min(chunk, rowLen-lo). Where G clusters share the row, the row
	// is in C*G slices, cluster g's CTA rank taking slice g*C + rank.
	size, V := int64(c.size()), int64(c.perVec())
	parts := int64(c.cluster * max(c.groups, 1))
	chunk := c.u32()
	e.Add(chunk, rowLen, ptx.Imm(V*parts-1))
	e.Div(chunk, chunk, ptx.Imm(V*parts))
	e.Shl(chunk, chunk, ptx.Imm(log2(V)))
	part := s.rank
	if c.groups > 1 {
		part = c.u32()
		e.Mad(part, c.groupID(), ptx.Imm(int64(c.cluster)), s.rank)
	}
	s.lo = c.u32()
	e.Mul(s.lo, part, chunk)
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
// row_stride, lengths; a null lengths: every row is row_stride long).
func newClusterKernel(name string, cfg Config) (*ptx.Module, *cta, clusterRow) {
	m, e, sv := kernelModule(name, cfg)
	c := newCTA(e, cfg.Target, cfg.BlockSize, sv)
	c.perCluster(cfg.cluster())
	scores, stride := c.globalParam("scores"), e.LdParam(e.Param("row_stride", ptx.U64))
	lengths := e.LdParam(pointerParam(e, "lengths", 4))
	row := clusterRow{id: c.rowID(), n: c.u32()}
	// A null lengths is a dense batch, as for the Top-K kernels.
	e.IfElse(c.setp(ptx.EQ, lengths, ptx.Imm(0)), func() {
		e.Cvt(row.n, stride)
	}, func() {
		g := c.u64()
		e.CvtaToGlobal(g, lengths)
		e.Ld(ptx.SpaceGlobal, row.n, c.elemAddr(g, row.id, 4))
	})
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
