package gen

import (
	"github.com/gvr-go/gvr/ptx"
)

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
	// meet a CTA still reading the round before. A round costs 0.5-0.7 us
	// at C = 16 on an H100, ~0.1-0.2 us more than a bare st.async round,
	// and every other signal measured cost more or ordered nothing (perf
	// notes 159).
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

// messageWidth is how many u32 an exchange round's message carries for
// n values (send): a vector store takes 1, 2 or 4, the rest padding.
func messageWidth(n int) int {
	switch {
	case n <= 1:
		return 1
	case n == 2:
		return 2
	}
	return 4
}

// combineAlone is the cluster size from which one warp combines a round's
// rows and the CTA reads the totals from shared memory (combineInWarp):
// every thread adding the C rows itself is C*n shared loads a thread,
// which 16 warps issue through the SM's one shared-memory pipe (at C = 16
// and four values, 1024 loads: ~0.5 us; perf notes 93).
const combineAlone = 8

// clusterTopKShared is a cluster Top-K kernel's shared memory after the
// Top-K kernel's.
type clusterTopKShared struct {
	xchg   [2]region
	bars   region // MbarrierRounds: the exchange buffers' mbarriers, then the hand-over's
	sample region // the whole row sample, gathered from every CTA's share (sampleRow)
	groups region // Groups: the clusters' totals of a round (groupPart.scratch)
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
	if cfg.cluster() >= combineAlone {
		bytes += 2 * 4 * exchangeVals // a round's totals and lower ranks' sums, after its rows
	}
	s.xchg = [2]region{l.alloc("exchange0", bytes, 16), l.alloc("exchange1", bytes, 16)}
	if cfg.MbarrierRounds {
		s.bars = l.alloc("round_mbarriers", 3*8, 8)
	}
	s.sample = ts.cand.bits
	if pts := samplePoints(cfg.BlockSize); 4*pts > s.sample.bytes {
		s.sample = l.alloc("sample", 4*pts, 16)
	}
	if cfg.Groups > 1 {
		s.groups = l.alloc("group_totals", 2*3*exchangeVals*4, 16)
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
// alone (nothing for one CTA per row; where clusters share the row, every
// CTA but the first cluster's leader). Past it, no CTA may touch another's
// shared memory.
func (t *topk) leaderOnly() {
	switch {
	case t.group != nil:
		t.e.If(t.group.rowLeader(t).Not(), t.e.Ret)
	case t.part != nil:
		t.e.If(t.part.leader.Not(), t.e.Ret)
	}
}

// send is the first half of an exchange round, which combines vals (u32,
// the same in every thread of a CTA) across the cluster: this CTA's values
// go to every CTA's current buffer, row rank. Work that needs no total can
// go between it and receive, which waits for the others' and returns the
// totals and the sums over the CTAs of lower rank (the cluster-wide
// exclusive prefix), in every thread.
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
			// The values go in one st.async (a vector, padded with
			// zeros that combine never reads): a round takes longer by
			// each message a CTA sends a CTA, not by its bytes (perf
			// notes 200). It completes its bytes on CTA tid's mbarrier
			// as it lands there: no fence and no arrival of ours (a
			// release arrival is a MEMBAR.ALL.GPU: perf notes 41).
			bar := c.u32()
			e.Mapa(ptx.SpaceSharedCluster, bar, p.curBar, c.tid)
			w := messageWidth(len(vals))
			if w == 1 {
				e.StAsync(ptx.U32, ptx.At(remote, 0), vals[0], ptx.At(bar, 0))
				return
			}
			vec := make(ptx.Vec, w)
			for i := range vec {
				if i < len(vals) {
					vec[i] = vals[i]
				} else {
					vec[i] = c.constU32(0)
				}
			}
			e.StAsync(ptx.U32, ptx.At(remote, 0), vec, ptx.At(bar, 0))
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
		// This CTA's one arrival a round expects every CTA's message's
		// bytes (messageWidth's, padding included), before or after they
		// land.
		var tx ptx.Operand = ptx.Imm(int64(4 * messageWidth(n) * p.size))
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
	if p.size < combineAlone {
		tot, below = p.combine(c, ops)
	} else {
		tot, below = p.combineInWarp(c, ops)
	}
	e.Sub(p.cur, p.both, p.cur)
	return tot, below
}

// combineInWarp is receive's combine for large clusters: a warp's lane r
// loads row r (one vector load), and a warp reduction a value takes the
// totals and the lower ranks' sums. Where the target reduces a warp in
// one instruction (redux.sync), every warp does so for itself; else warp
// 0 does, lane 0 leaves them after the rows, a barrier, and every thread
// reads them. The buffer's next round is two on: every thread has read
// these by the barrier of the round between, past which warp 0 writes
// them again.
func (p *clusterPart) combineInWarp(c *cta, ops []string) (tot, below []ptx.Reg) {
	e := c.e
	if exchangeVals != 4 || len(ops) > 4 {
		panic("gen: combineInWarp loads a row of 4 values at once")
	}
	// reduce: the calling warp's lane r loads row r; each value is
	// reduced over the rows (an added one over the rows of lower rank
	// too), the result in every lane.
	reduce := func() (tot, below []ptx.Reg) {
		row := ptx.Vec{c.u32(), c.u32(), c.u32(), c.u32()}
		for i := range row {
			op := "add"
			if i < len(ops) {
				op = ops[i]
			}
			e.Mov(row[i], identity(op, ptx.U32))
		}
		in := c.setp(ptx.LT, c.lane, ptx.Imm(int64(p.size)))
		e.Guarded(in, func() {
			at := c.u32()
			e.Mad(at, c.lane, ptx.Imm(4*exchangeVals), p.cur)
			e.Ld(ptx.SpaceShared, row, ptx.At(at, 0))
		})
		lower := c.setp(ptx.LT, c.lane, p.s.rank)
		for i, op := range ops {
			tot = append(tot, c.warpReduce(op, row[i]))
			if op != "add" {
				below = append(below, c.constU32(0))
				continue
			}
			y := c.u32()
			e.Selp(y, row[i], ptx.Imm(0), lower)
			below = append(below, c.warpReduce(op, y))
		}
		return tot, below
	}
	if c.target.Has(ptx.FeatReduxInt) {
		// Every warp combines the rows itself, each value one redux: no
		// barrier and no totals through shared memory (perf notes 202).
		// The buffer is written again two rounds on, past the CTA
		// barrier of the sums the next round sends.
		return reduce()
	}
	res := int64(p.size * 4 * exchangeVals)
	e.If(c.setp(ptx.EQ, c.warp, ptx.Imm(0)), func() {
		t, b := reduce()
		first := c.setp(ptx.EQ, c.lane, ptx.Imm(0))
		e.Guarded(first, func() {
			for i, op := range ops {
				e.St(ptx.SpaceShared, ptx.U32, ptx.At(p.cur, res+int64(4*i)), t[i])
				if op == "add" {
					e.St(ptx.SpaceShared, ptx.U32, ptx.At(p.cur, res+int64(4*(exchangeVals+i))), b[i])
				}
			}
		})
	})
	c.sync()
	for i, op := range ops {
		tot, below = append(tot, c.u32()), append(below, c.constU32(0))
		e.Ld(ptx.SpaceShared, tot[i], ptx.At(p.cur, res+int64(4*i)))
		if op == "add" {
			e.Ld(ptx.SpaceShared, below[i], ptx.At(p.cur, res+int64(4*(exchangeVals+i))))
		}
	}
	return tot, below
}

// combine adds up (or takes the minimum or maximum of) each of a round's
// values over the C rows of the current buffer, in rank order, and the
// added ones' sums over the rows of lower rank than this CTA, in every
// thread.
func (p *clusterPart) combine(c *cta, ops []string) (tot, below []ptx.Reg) {
	e := c.e
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
