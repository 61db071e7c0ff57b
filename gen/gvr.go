package gen

import (
	"github.com/gvr-go/gvr/ptx"
)

// The Top-K kernels. One CTA selects one row:
//
//   - gvr_topk: GVR (Guess-Verify-Refine). Phase 1 takes statistics of the
//     row at the previous step's Top-K indices, Phase 2 brackets a threshold
//     with secant counting passes, Phase 3 collects the candidates above it
//     into shared memory, Phase 4 selects exactly K of them there.
//   - topk_fallback: the same pipeline for rows without a prediction; the
//     first guess comes from a strided sample of the row.
//   - topk_radix: exact radix select over the row in global memory. The
//     same select (without its small-bin finish) is the exact path of the
//     two kernels above, taken when no threshold can be bracketed (ties at
//     the K-th value wider than MaxCandidates, say).
//
// gvr_topk_cluster and topk_fallback_cluster run the first two with one
// cluster of CTAs per row (cluster.go). Rows of length n <= K are copied
// whole, padded with index -1 (value -Inf).

// Paths a row can take, as the instrumentation record reports them.
const (
	PathCopy  = 0 // n <= K: every element
	PathGVR   = 1 // threshold bracketed, candidates refined in shared memory
	PathExact = 2 // radix select over the row
	PathHeld  = 3 // K < n <= MaxCandidates: the row held in shared memory and selected there (heldSelect)
)

// Phase 2 tuning.
const (
	secantIters = 4    // secant steps before plain key bisection takes over
	damping     = 0.5  // the first secant step goes at most this far
	sampleSize  = 2048 // row elements Phase 1 samples (at most 8 per thread)
	// Rounds of the sample's threshold estimate (estimateThreshold): four
	// without a prediction; with one, whose minimum the first pass counts
	// too, two: 0.7 us less in Phase 1 on an H100, still one pass on every
	// replayed step (one round: more candidates; perf notes 16).
	sampleRounds = 4
	predRounds   = 2
)

// The instrumentation record (Config.Instrument): StatsBytes per row at
// stats + row*StatsBytes, holding five u64 %clock64 stamps at the phase
// boundaries (entry, end of Phases 1, 2, 3 and 4; a phase a row skips takes
// no time) at byte offsets 0, 8, ..., 32, then u32 counters at these
// offsets.
const (
	StatsBytes        = 168
	StatsPhase2Passes = 40  // counting passes in Phase 2
	StatsRadixPasses  = 44  // radix select passes (Phase 4 or the exact path)
	StatsCandidates   = 48  // candidates collected in Phase 3
	StatsPath         = 52  // PathCopy, PathGVR, PathExact or PathHeld
	StatsValidPred    = 56  // valid predicted indices Phase 1 saw
	StatsThreshold    = 60  // Phase 2's threshold, float32 bits (0 where Phase 2 did not run); with PathHeld, the key the select starts from (heldSelect)
	StatsMarks        = 64  // NumMarks u64 %clock64 marks inside Phases 1 and 4 (0: not reached)
	StatsSampleTop    = 160 // the key of the sample's largest value, Phase 4's guessed span reads (0 where Phase 4 did not read it)
)

// The marks inside Phases 1 and 4 (Config.Instrument), where their fixed
// costs go: %clock64 of thread 0 at each point, 0 where a row does not
// pass it. A mark after a load's first use says when the load arrived.
const (
	MarkP1Indices   = iota // Phase 1: the predicted indices arrived (their values' loads issued)
	MarkP1Values           // Phase 1: the predicted values arrived and were reduced (one CTA: after the sample's estimate; a cluster: combined in the round that gathers the sample, before its estimate)
	MarkP1Sample           // Phase 1: the sample's statistics and threshold estimate done
	MarkP1Done             // Phase 1's guess ready (a cluster kernel then waits for its slice)
	MarkP4Span             // Phase 4: the candidates' key span
	MarkP4Pass             // Phase 4: its first radix pass
	MarkP4Kth              // Phase 4: the K-th candidate found (ties resolved)
	MarkP4Written          // Phase 4: the selection written
	MarkLength             // the row's length arrived (before Phase 1: the kernel's first load)
	MarkP1Start            // Phase 1 starts (a cluster kernel's slice copy then starts once Phase 1's loads are out)
	MarkSliceIssued        // a cluster kernel's slice: thread 0 has initialised its mbarrier and issued the bulk copy
	MarkSliceSynced        // a cluster kernel's slice: its set-up done, past the CTA barrier and the cluster arrival
	NumMarks
)

// topk is the state of one Top-K kernel under construction.
type topk struct {
	*cta
	cfg Config

	row ptx.Reg // u64 global address of this CTA's row
	n   ptx.Reg // u32 row length, clamped to [0, row_stride]
	k   ptx.Reg // u32, K
	out outRow
	topkShared
	// smallRow: the exact path over the row ends with smallSelect (one
	// fewer pass over the row) rather than a last radix pass. Only
	// topk_radix uses it: on an H200 it makes topk_radix 8-11% faster,
	// but the GVR kernels up to 7% slower even when it sits only on their
	// rarely taken exact path (the code around it compiles worse), and 9%
	// slower in Phase 4.
	smallRow bool

	// part is a cluster kernel's share of the row (nil: one CTA per row,
	// which walks the whole row in global memory).
	part *clusterPart
	// keep holds which over vectors of a cluster kernel's slice Phase 2's
	// first pass found high (overflow.go; nil without Config.KeepOver).
	keep *overKeep
	// pred is a GVR kernel's prediction, its first indices loading from
	// the kernel's start (nil: no prediction).
	prediction *predFetch

	count   ptx.Reg           // u64 address of this row's out_count slot, 0 if none
	stats   ptx.Reg           // u64 address of this row's stats record (Instrument)
	stamps  [5]ptx.Reg        // u64 %clock64 at the phase boundaries (Instrument)
	marks   [NumMarks]ptx.Reg // u64 %clock64 inside Phases 1 and 4 (Instrument)
	iters   ptx.Reg           // u32 Phase 2 passes
	passes  ptx.Reg           // u32 radix passes
	ncand   ptx.Reg           // u32 candidates
	path    ptx.Reg           // u32
	valid   ptx.Reg           // u32 valid predicted indices
	thr     ptx.Reg           // u32 Phase 2's threshold's bits (Instrument)
	seenTop ptx.Reg           // u32 the sample's top key as Phase 4 read it (Instrument)
}

// topkShared is the shared memory of a Top-K kernel.
type topkShared struct {
	sel       selectShared
	reduce    region                     // block reductions of up to four values
	p1        *reductionRun              // Phase 1's block reductions (GVR pipeline only)
	sampleTop region                     // the key of the sample's largest value, for Phase 4 (GVR pipeline only)
	cand      struct{ bits, idx region } // MaxCandidates float bits and indices (GVR pipeline only)
	stage     *staging                   // sorted output only
}

// newTopKShared lays out a Top-K kernel's shared memory in l. The radix
// kernel has no candidate buffer.
func newTopKShared(l *layout, cfg Config, withCand bool) topkShared {
	warps := cfg.BlockSize / warpSize
	var s topkShared
	s.sel = allocSelect(l, cfg.Bins, warps)
	s.reduce = l.alloc("reduce", 4*4*warps, 16)
	if withCand {
		s.cand.bits = l.alloc("cand_bits", 4*cfg.MaxCandidates, 16)
		s.cand.idx = l.alloc("cand_idx", 4*cfg.MaxCandidates, 16)
		s.p1 = allocReductionRun(l, "p1_reduce", 4, warps)
		s.sampleTop = l.alloc("sample_top", 4, 4)
	}
	if cfg.Sorted {
		s.stage = allocStaging(l, cfg.K)
	}
	return s
}

// SharedBytes is the dynamic shared memory the GVR kernels (gvr_topk,
// topk_fallback) need for c; topk_radix needs less.
func (c Config) SharedBytes() int {
	var l layout
	newTopKShared(&l, c, true)
	return l.size
}

// guess is what Phase 1 gives Phase 2: the thresholds its first pass counts,
// and two anchors (value, estimated count >= value) for the secant.
type guess struct {
	first                [firstPoints]ptx.Reg // f32
	lo, cntLo, hi, cntHi ptx.Reg              // f32
	target               ptx.Reg              // f32: the count Phase 2 aims for (sample.target)
}

// firstPoints is how many thresholds Phase 2's first pass counts at once: a
// counting pass is memory-latency-bound, with issue slots to spare for one
// more compare per element, and one of two points is far more likely to land
// in [K, MaxCandidates] than a single guess. (Four points made the pass
// instruction-bound: +45% at N = 256K on an H200.)
const firstPoints = 2

// newTopK declares the parameters of a Top-K kernel and sets up its row.
// withPred adds the prediction parameters of gvr_topk; cluster makes it a
// cluster kernel, one row per cluster of cfg.Cluster CTAs.
func newTopK(name string, cfg Config, withPred, withCand, cluster bool) (*topk, *ptx.Module) {
	m, e, sv := kernelModule(name, cfg)
	pScores := pointerParam(e, "scores", cfg.Scores.Size())
	pStride := e.Param("row_stride", ptx.U64)
	pLengths := pointerParam(e, "lengths", 4)
	pNextN := e.Param("next_n", ptx.U64)
	pStarts := pointerParam(e, "row_starts", 4) // null: windows start at 0
	pAbs := e.Param("abs_idx", ptx.U64)         // nonzero: indices count from the row's start, not the window's
	var pp predParams
	if withPred {
		pp.pred = pointerParam(e, "pred", 4)
		pp.stride = e.Param("pred_stride", ptx.U64)
		pp.count = e.Param("pred_count", ptx.U64)
	}
	pIdx := pointerParam(e, "out_idx", 4)
	pVals := pointerParam(e, "out_vals", 4)   // null: no values
	pCount := pointerParam(e, "out_count", 4) // null: no counts
	pTable := pointerParam(e, "page_table", 4)
	pTableStride := e.Param("page_table_stride", ptx.U64)
	pPageSize := e.Param("page_size", ptx.U64)
	pPages := pointerParam(e, "out_pages", 4) // null: no page-table output
	var pStats *ptx.Param
	if cfg.Instrument {
		pStats = pointerParam(e, "stats", 8) // u64 stamps
	}

	t := &topk{cta: newCTA(e, cfg.Target, cfg.BlockSize, sv), cfg: cfg}
	t.scores = cfg.Scores
	if cluster {
		t.perCluster(cfg.cluster())
	}
	t.iters, t.passes, t.ncand, t.path, t.valid = t.constU32(0), t.constU32(0), t.constU32(0), t.constU32(PathCopy), t.constU32(0)
	if cfg.Instrument {
		t.thr, t.seenTop = t.constU32(0), t.constU32(0)
	}
	t.stamp(0)
	if cfg.Instrument {
		for i := range t.marks {
			t.marks[i] = t.u64() // 0 on every path: a row that skips a mark leaves it so
			e.Mov(t.marks[i], ptx.Imm(0))
		}
	}
	t.k = t.constU32(int64(cfg.K))
	t.topkShared = newTopKShared(&t.smem.layout, cfg, withCand)
	if cluster {
		t.part = t.newClusterPart(cfg)
		if cfg.KeepOver {
			t.keep = t.newOverKeep()
		}
	}

	r := t.rowID()
	if withPred {
		t.prediction = t.fetchPrediction(pp, r)
	}
	scores := t.global(pScores)
	stride := e.LdParam(pStride)
	t.row = t.rowAddrOf(scores, stride, r, t.size())

	// n = clamp(length, 0, row_stride): a bad length never reads outside
	// the row. The length is lengths[r]; or, with next_n > 1 (speculative
	// decoding: next_n rows per sequence, lengths holding the sequences'),
	// row r's is lengths[r/next_n] - next_n + 1 + r%next_n, the causal
	// length of the r%next_n-th new token.
	lengths := t.global(pLengths)
	n := t.s32()
	nextN := t.u32()
	e.Cvt(nextN, e.LdParam(pNextN))
	e.IfElse(t.setp(ptx.GT, nextN, ptx.Imm(1)), func() {
		seq, q := t.u32(), t.u32()
		e.Div(seq, r, nextN)
		e.Rem(q, r, nextN)
		e.Ld(ptx.SpaceGlobal, n, t.elemAddr(lengths, seq, 4))
		e.Sub(n, n, nextN)
		e.Add(n, n, ptx.Imm(1))
		e.Add(n, n, q)
	}, func() {
		e.Ld(ptx.SpaceGlobal, n, t.elemAddr(lengths, r, 4))
	})
	e.Max(n, n, ptx.Imm(0))
	t.n = t.u32()
	e.Cvt(t.n, stride)
	e.Min(t.n, t.n, n)
	t.mark(MarkLength)
	// A window (prefill): row r's elements [row_starts[r], length) with the
	// start clamped to [0, length]; the kernel works on the window as on
	// a row, and its indices count from the window's start unless abs_idx
	// is set.
	start := t.constU32(0)
	starts := e.LdParam(pStarts)
	e.If(t.setp(ptx.NE, starts, ptx.Imm(0)), func() {
		g := t.u64()
		e.CvtaToGlobal(g, starts)
		st := t.s32()
		e.Ld(ptx.SpaceGlobal, st, t.elemAddr(g, r, 4))
		e.Max(st, st, ptx.Imm(0))
		e.Min(start, t.n, st)
		e.Sub(t.n, t.n, start)
		s64 := t.u64()
		e.Cvt(s64, start)
		e.Mad(t.row, s64, ptx.Imm(int64(t.size())), t.row)
	})
	t.out.start = start
	t.out.offset = t.constU32(0)
	e.If(t.setp(ptx.NE, e.LdParam(pAbs), ptx.Imm(0)), func() { e.Mov(t.out.offset, start) })
	t.count = t.u64()
	e.Mov(t.count, ptx.Imm(0))
	count := e.LdParam(pCount)
	e.If(t.setp(ptx.NE, count, ptx.Imm(0)), func() {
		g := t.u64()
		e.CvtaToGlobal(g, count)
		e.Mov(t.count, t.elemAddr(g, r, 4).Base)
	})

	// Output row r: K slots of indices and, if out_vals is not null, values.
	rk := t.u32()
	e.Mul(rk, r, ptx.Imm(int64(cfg.K)))
	t.out.slots = cfg.K
	t.out.idx = t.u64()
	e.Mov(t.out.idx, t.elemAddr(t.global(pIdx), rk, 4).Base)
	vals := e.LdParam(pVals)
	t.out.hasVals = t.setp(ptx.NE, vals, ptx.Imm(0))
	t.out.vals = t.u64()
	e.Mov(t.out.vals, ptx.Imm(0))
	e.If(t.out.hasVals, func() {
		g := t.u64()
		e.CvtaToGlobal(g, vals)
		e.Mov(t.out.vals, t.elemAddr(g, rk, 4).Base)
	})
	t.out.pages = t.pageOutput(pTable, pTableStride, pPageSize, pPages, r, rk, nextN)
	if cfg.Instrument {
		t.stats = t.u64()
		e.Mov(t.stats, t.elemAddr(t.global(pStats), r, StatsBytes).Base)
	}
	if cfg.Sorted {
		// Every path stores its selection into the staging buffer; finish
		// sorts it into the output.
		t.out.stage = t.stage
		t.clearStaging(t.stage)
	}
	return t, m
}

// pageOutput sets up row r's fused page-table output: where out_pages is
// not null, slot j of the row (at out_pages + 4*rk) gets its column
// mapped through the page table of the row's batch, b = r / next_n (r with
// next_n <= 1), whose row is page_table_stride entries. A page size of 0
// counts as 1.
func (t *topk) pageOutput(table, stride, size, out *ptx.Param, r, rk, nextN ptx.Reg) *pageOut {
	e := t.e
	p := &pageOut{out: t.u64(), table: t.u64(), size: t.u32(), shift: t.u32(), pow2: t.pred()}
	pages := e.LdParam(out)
	p.has = t.setp(ptx.NE, pages, ptx.Imm(0))
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
	return p
}

// writePages writes the fused page-table output (where out_pages is set)
// once every index slot is written: each thread maps its slots' columns
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
		j := t.u32()
		e.For(j, t.tid, t.k, ptx.Imm(pageUnroll*T), func() {
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
						e.LdNC(v[u], t.elemAddr(p.table, page, 4))
						e.Mad(v[u], v[u], p.size, off)
					})
				})
			}
			for u := range pageUnroll {
				e.If(in[u], func() { e.St(ptx.SpaceGlobal, ptx.U32, t.elemAddr(p.out, slot[u], 4), v[u]) })
			}
		})
	})
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

// predParams are gvr_topk's prediction parameters: pred[r*pred_stride+j],
// j < pred_count, are the previous step's Top-K indices for row r.
type predParams struct{ pred, stride, count *ptx.Param }

func (t *topk) global(p *ptx.Param) ptx.Reg {
	g := t.u64()
	t.e.CvtaToGlobal(g, t.e.LdParam(p))
	return g
}

// stamp records %clock64 as phase boundary i and, until they are stamped
// themselves, as every later boundary: a phase a row skips takes no time
// (Instrument only).
func (t *topk) stamp(i int) {
	if !t.cfg.Instrument {
		return
	}
	if t.stamps[i].T == ptx.TypeInvalid {
		for j := range t.stamps {
			t.stamps[j] = t.u64()
		}
	}
	t.e.Comment("clock: stamp %d", i) // scripts/sass-steps.sh names the clock reads by these
	t.e.Mov(t.stamps[i], ptx.Clock64)
	for j := i + 1; j < len(t.stamps); j++ {
		t.e.Mov(t.stamps[j], t.stamps[i])
	}
}

// mark records %clock64 as mark i (Instrument only).
func (t *topk) mark(i int) {
	if t.cfg.Instrument {
		t.e.Comment("clock: %s", markNames[i])
		t.e.Mov(t.marks[i], ptx.Clock64)
	}
}

// markNames name the marks in the instrumented kernels' PTX comments.
var markNames = [NumMarks]string{
	MarkP1Indices: "p1 indices", MarkP1Values: "p1 values", MarkP1Sample: "p1 sample", MarkP1Done: "p1 done",
	MarkP4Span: "p4 span", MarkP4Pass: "p4 pass", MarkP4Kth: "p4 k-th", MarkP4Written: "p4 written",
	MarkLength: "length", MarkP1Start: "p1 start", MarkSliceIssued: "slice issued", MarkSliceSynced: "slice synced",
}

// writeStats stores the instrumentation record (thread 0, Instrument only).
func (t *topk) writeStats() {
	if !t.cfg.Instrument {
		return
	}
	e := t.e
	e.If(t.setp(ptx.EQ, t.tid, ptx.Imm(0)), func() {
		for i, s := range t.stamps {
			e.St(ptx.SpaceGlobal, ptx.U64, ptx.At(t.stats, int64(8*i)), s)
		}
		for _, f := range []struct {
			off int64
			v   ptx.Reg
		}{{StatsPhase2Passes, t.iters}, {StatsRadixPasses, t.passes}, {StatsCandidates, t.ncand},
			{StatsPath, t.path}, {StatsValidPred, t.valid}, {StatsThreshold, t.thr}, {StatsSampleTop, t.seenTop}} {
			e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(t.stats, f.off), f.v)
		}
		for i, m := range t.marks {
			e.St(ptx.SpaceGlobal, ptx.U64, ptx.At(t.stats, int64(StatsMarks+8*i)), m)
		}
	})
}

// rowWalker visits the row's elements in the fixed order of rowWalk.
func (t *topk) rowWalker() walker {
	return func(visit func(elem)) {
		t.rowWalk(t.row, t.n, t.cfg.unroll(), func(x ptx.Reg, idx func() ptx.Reg) {
			visit(elem{bits: t.bitsOf(x), idx: idx})
		})
	}
}

// candWalker visits the first n candidates in shared memory, round-robin.
func (t *topk) candWalker(n ptx.Reg) walker {
	return func(visit func(elem)) {
		e := t.e
		j := t.u32()
		e.For(j, t.tid, n, ptx.Imm(int64(t.threads)), func() {
			b, i := t.loadCand(j)
			visit(elem{bits: b, idx: func() ptx.Reg { return i }})
		})
	}
}

// loadCand loads candidate j: its float bits and its row index.
func (t *topk) loadCand(j ptx.Reg) (bits, idx ptx.Reg) {
	bits, idx = t.u32(), t.u32()
	t.e.Ld(ptx.SpaceShared, bits, t.smem.elem(t.cand.bits, j, 4))
	t.e.Ld(ptx.SpaceShared, idx, t.smem.elem(t.cand.idx, j, 4))
	return bits, idx
}

// copyShortRow handles n <= K: every element is selected, in index order,
// and the slots past n get index -1 and value -Inf.
func (t *topk) copyShortRow() {
	e := t.e
	j := t.u32()
	e.For(j, t.tid, t.k, ptx.Imm(int64(t.threads)), func() {
		e.IfElse(t.setp(ptx.LT, j, t.n), func() {
			x := t.f32()
			t.loadScore(x, t.row, j)
			t.store(t.out, j, j, t.bitsOf(x))
		}, func() {
			t.store(t.out, j, t.constU32(-1), t.constU32(0xFF800000))
		})
	})
}

// genGVR: gvr_topk(scores, row_stride, lengths, next_n, pred,
// pred_stride, pred_count, out_idx, out_vals, out_count, page_table,
// page_table_stride, page_size, out_pages[, stats]).
func genGVR(cfg Config) (*Kernel, error) {
	t, m := newTopK("gvr_topk", cfg, true, true, false)
	t.body(t.phase1PreIndexStats)
	return finish("gvr_topk", cfg, m, t.cta)
}

// genFallback: topk_fallback(scores, row_stride, lengths, next_n,
// out_idx, out_vals, out_count, page_table, page_table_stride, page_size,
// out_pages[, stats]).
func genFallback(cfg Config) (*Kernel, error) {
	t, m := newTopK("topk_fallback", cfg, false, true, false)
	t.body(t.phase1SampleStats)
	return finish("topk_fallback", cfg, m, t.cta)
}

// genRadix: topk_radix(scores, row_stride, lengths, next_n, out_idx,
// out_vals, out_count, page_table, page_table_stride, page_size,
// out_pages[, stats]).
func genRadix(cfg Config) (*Kernel, error) {
	t, m := newTopK("topk_radix", cfg, false, false, false)
	t.smallRow = true
	e := t.e
	e.IfElse(t.setp(ptx.LE, t.n, t.k), t.copyShortRow, func() {
		e.Mov(t.path, ptx.Imm(PathExact))
		t.exactPath()
	})
	t.finish()
	return finish("topk_radix", cfg, m, t.cta)
}

// body emits the GVR pipeline with the given Phase 1. In a cluster
// kernel, every CTA of the cluster runs Phase 1 over the row in global
// memory while its slice of the row comes into shared memory, and Phases
// 2 and 3 over its slice, combining across the cluster; then the
// candidates are in the leader CTA's shared memory, and the leader alone
// refines them (Phase 4). The leader alone copies short rows and takes the
// exact path. One CTA per row holds a row of at most MaxCandidates
// elements in shared memory and selects it there instead (heldSelect).
func (t *topk) body(phase1 func() guess) {
	e := t.e
	e.IfElse(t.setp(ptx.LE, t.n, t.k), func() {
		t.leaderOnly()
		t.copyShortRow()
	}, func() {
		// Phase 4's first histogram and small-bin counter are cleared
		// now (clearSelect), before Phase 1's loads go out, rather than
		// on Phase 4's path behind barriers of their own; Phases 1-3 pass
		// many barriers before Phase 4 reads them. (Cleared in Phase 1,
		// the stores queued behind the sample's loads: perf notes 53,
		// 54.) A cluster's slice copy starts in Phase 1 (startPart).
		t.clearSelect(t.sel)
		gvr := func() {
			t.mark(MarkP1Start)
			g := phase1()
			t.mark(MarkP1Done)
			t.awaitPart()
			t.stamp(1)
			v := t.phase2SecantSearch(g)
			if t.cfg.Instrument {
				e.MovBits(t.thr, v.thr)
			}
			t.stamp(2)
			e.IfElse(v.found, func() {
				e.Mov(t.path, ptx.Imm(PathGVR))
				cleared := t.phase3Collect(v)
				t.stamp(3)
				t.leaderOnly()
				t.syncKept(cleared)
				t.phase4Refine(v)
			}, func() {
				e.Mov(t.path, ptx.Imm(PathExact))
				t.leaderOnly()
				t.exactPath()
			})
		}
		if t.part != nil {
			gvr()
			return
		}
		e.IfElse(t.setp(ptx.LE, t.n, ptx.Imm(int64(t.cfg.MaxCandidates))), t.heldSelect, gvr)
	})
	t.finish()
}

// heldSelect selects the Top-K of a row of K < n <= MaxCandidates
// elements (PathHeld): the row comes into the candidate buffer once, and
// Phase 4's exact selection runs over it. Phases 1-3 exist to cut a long
// row down to a few candidates, and a row that fits the candidate buffer
// is one Phase 2's window [K, MaxCandidates] could cut by half at most;
// their fixed costs (the prediction's and the sample's scattered loads,
// two passes over the row) are more than the select's walks over the
// extra elements cost, up to MaxCandidates = 6144 at K = 2048, though not
// at 8192 (perf notes 58-60). No prediction is used. One CTA per row only:
// a cluster kernel's rows are long.
func (t *topk) heldSelect() {
	e := t.e
	e.Comment("a held row: selected in shared memory, without Phases 1-3")
	e.Mov(t.path, ptx.Imm(PathHeld))
	e.Mov(t.ncand, t.n)
	// The loads of a row walk are all in flight before its stores (an
	// unrolled vector loop): one memory latency. The keys' span is taken
	// on the way, and its reduction's barrier publishes the stores.
	acc := t.newSpanAcc()
	bound := t.newKthBound()
	t.rowWalk(t.row, t.n, t.cfg.unroll(), func(x ptx.Reg, idx func() ptx.Reg) {
		// The key goes beside the value (the buffer's index half), so
		// that the select's walks load it rather than work it out again
		// each time (perf notes 61).
		b := t.bitsOf(x)
		k := t.key(b)
		e.St(ptx.SpaceShared, ptx.U32, t.smem.elem(t.cand.bits, idx(), 4), b)
		e.St(ptx.SpaceShared, ptx.U32, t.smem.elem(t.cand.idx, idx(), 4), k)
		acc.add(k)
		if bound != nil {
			bound.add(k)
		}
	})
	for i := 1; i <= 3; i++ {
		t.stamp(i) // the load is Phase 1's time; Phases 2 and 3 take none
	}
	if bound != nil {
		// The span starts at the bound instead of the row's least key: a
		// row's low tail (down to zero or below it, where keys are
		// spread over every exponent) put ~1500 of 8192 synthetic keys
		// into the K-th one's first-digit bin, and the select took three
		// passes instead of one (perf notes 58). The bound is one of the
		// span's keys (the ranks count from it, so the low bits the keys
		// share must be its too) and its least.
		least := bound.top[len(bound.top)-1]
		acc.add(least)
		e.Mov(acc.lo, least)
	}
	span := acc.span(t.reduce)
	if t.cfg.Instrument {
		e.Mov(t.thr, span.min) // the stats' threshold, as a key
	}
	t.mark(MarkP4Span)
	row := t.heldWalker(span.min)
	t.onMark = t.mark // exactSelect's own points
	t.exactSelect(row, t.k, t.sel, t.out, t.passes, selectHow{small: true, cleared: true, span: &span})
	t.onMark = nil
}

// heldWalker visits the elements of a held row (heldSelect) whose keys are
// at least lo: element j at word j of the buffer, round-robin over the
// threads, heldUnroll loads in flight per thread (one at a time, a walk of
// a dozen elements a thread waited on each load in turn: perf notes 59).
func (t *topk) heldWalker(lo ptx.Reg) walker {
	return func(visit func(elem)) {
		e := t.e
		B := int64(t.threads)
		j := t.u32()
		e.For(j, t.tid, t.n, ptx.Imm(heldUnroll*B), func() {
			var bs, ks, js [heldUnroll]ptx.Reg
			var in [heldUnroll]ptx.Pred
			for u := range heldUnroll {
				js[u] = t.u32()
				e.Add(js[u], j, ptx.Imm(int64(u)*B))
				bs[u], ks[u] = t.u32(), t.u32()
				in[u] = t.setp(ptx.LT, js[u], t.n)
				e.Guarded(in[u], func() {
					e.Ld(ptx.SpaceShared, bs[u], t.smem.elem(t.cand.bits, js[u], 4))
					e.Ld(ptx.SpaceShared, ks[u], t.smem.elem(t.cand.idx, js[u], 4))
				})
			}
			for u := range heldUnroll {
				p := t.setp(ptx.GE, ks[u], lo)
				e.AndPred(p, p, in[u])
				e.If(p, func() { visit(elem{bits: bs[u], key: ks[u], idx: func() ptx.Reg { return js[u] }}) })
			}
		})
	}
}

// heldUnroll is heldWalker's loads in flight per thread.
const heldUnroll = 4

// kthBound keeps the m = ceil(K/B) largest keys a thread sees, in
// descending order. Every thread has m keys at or above its m-th, so at
// least B*m >= K keys of the row are at or above the least of them: the
// K-th largest key is too, and elements below it cannot be selected. (A
// thread that sees fewer than m keys keeps key 0, the least: no bound.)
type kthBound struct {
	t   *topk
	top []ptx.Reg // u32
}

// maxBoundKeys caps m: the keys are registers through the row's load.
const maxBoundKeys = 8

// newKthBound is nil where m would exceed maxBoundKeys.
func (t *topk) newKthBound() *kthBound {
	m := (t.cfg.K + t.threads - 1) / t.threads
	if m > maxBoundKeys {
		return nil
	}
	b := &kthBound{t: t}
	for range m {
		b.top = append(b.top, t.constU32(0))
	}
	return b
}

// add inserts key k, keeping the m largest.
func (b *kthBound) add(k ptx.Reg) {
	e := b.t.e
	k0 := b.t.u32()
	e.Mov(k0, k)
	for _, r := range b.top {
		hi := b.t.u32()
		e.Max(hi, r, k0)
		e.Min(k0, r, k0)
		e.Mov(r, hi)
	}
}

// walkMine visits this CTA's share of the row at or above thr (or NaN),
// and maybe others: the whole row in global memory, or in a cluster kernel
// its slice, the part that did not fit only where Phase 2's first pass
// found it high, where it kept that (walkOver). Every pass at the same threshold
// visits the same elements per thread, in the same order, so a count from
// one pass tells where the next one's elements go.
func (t *topk) walkMine(thr ptx.Reg, visit func(x ptx.Reg, idx func() ptx.Reg)) {
	if t.part == nil {
		t.rowWalk(t.row, t.n, t.cfg.unroll(), visit)
		return
	}
	t.heldWalk(t.part.s, visit)
	t.walkOver(thr, visit)
}

// countMine counts this thread's elements of walkMine >= each of thrs (or
// NaN). With a keep it counts one threshold: the first pass's several go
// through countFirst.
func (t *topk) countMine(thrs []ptx.Reg) []ptx.Reg {
	if t.keep != nil && len(thrs) > 1 {
		panic("gen: countMine with a keep counts one threshold (countFirst counts the first pass's)")
	}
	return t.countGEWalk(func(visit func(x ptx.Reg, idx func() ptx.Reg)) { t.walkMine(thrs[0], visit) }, thrs)
}

// rowTotals adds each of vals (per-thread u32 counts) over the row: across
// the CTA, and in a cluster kernel across the cluster. It returns the
// totals and, in a cluster kernel, the sums over the CTAs of lower rank
// (nil otherwise), in every thread. With run (straight-line code only:
// reductionRun), the CTA's sums take one barrier instead of two.
func (t *topk) rowTotals(vals []ptx.Reg, run *reductionRun) (tot, below []ptx.Reg) {
	ops := make([]string, len(vals))
	for i := range ops {
		ops[i] = "add"
	}
	if run != nil {
		tot = t.reduceIn(run, ops, vals)
	} else {
		tot = t.blockReduceN(ops, vals, t.reduce)
	}
	if t.part == nil || t.part.size == 1 {
		return tot, nil // one CTA holds the row: nothing to combine
	}
	return t.part.exchange(t.cta, tot)
}

// finish sorts the selection into rank order (Sorted only), writes the
// number of valid outputs, min(K, n), if out_count is given, then records
// the last phase boundary and the stats.
func (t *topk) finish() {
	e := t.e
	if t.cfg.Sorted {
		t.sortStaged(t.stage, t.out, t.cfg.K)
	}
	t.writePages()
	first := t.setp(ptx.EQ, t.tid, ptx.Imm(0))
	e.AndPred(first, first, t.setp(ptx.NE, t.count, ptx.Imm(0)))
	e.If(first, func() {
		valid := t.u32()
		e.Min(valid, t.n, t.k)
		e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(t.count, 0), valid)
	})
	t.stamp(4)
	t.writeStats()
}

// exactPath selects the row's Top-K by radix select over global memory.
func (t *topk) exactPath() {
	t.e.Comment("Phase 4 (exact path): radix select over the row")
	// The radix passes loop over the digits: the row walk is long (an
	// unrolled vector loop), and inlined once per digit it made this rarely
	// taken path most of the GVR kernels' code.
	t.exactSelect(t.rowWalker(), t.k, t.sel, t.out, t.passes, selectHow{small: t.smallRow, loop: true})
}

// phase1PreIndexStats: the minimum and the count of the scores at the
// predicted indices (the previous step's Top-K). Indices outside [0, n)
// are skipped, duplicates count as often as they appear, and only finite
// scores enter the statistics. The minimum is taken on order-preserving
// keys, so the warp reductions are single redux.sync instructions where
// the target has them. The first pass counts the predicted minimum, right for a good
// prediction, and a row sample's estimate (estimateThreshold), right
// whatever the prediction; without a usable prediction (pred_count 0, or
// no valid index with a finite score) the sample's two points, as in the
// fallback.
func (t *topk) phase1PreIndexStats() guess {
	e, pf := t.e, t.prediction
	e.Comment("Phase 1: pre-indexed statistics")
	cluster := t.part != nil && t.part.size > 1
	st := t.newStats()
	B := int64(t.threads)
	gather := func(j ptx.Reg) [predUnroll]ptx.Reg { return t.predValues(pf.indices(t, j)) }
	// In one CTA, the first step's values load while the sample's
	// estimate is worked out (its block reductions need no prediction):
	// the estimate costs no time of its own where it fits in that memory
	// latency. (K = 2048 over 512 threads is that one step.) A cluster's
	// estimate needs the others' sample shares, which come in the round
	// that combines the values.
	xs := t.predValues(pf.ps)
	// mine takes in the first step's values and gathers the rest of my
	// share: their minimum key and count, not yet reduced.
	mine := func() *stats {
		for _, x := range xs {
			st.add(x)
		}
		j := t.u32()
		e.Add(j, pf.first, t.tid)
		e.Add(j, j, ptx.Imm(predUnroll*B))
		e.For(j, j, pf.end, ptx.Imm(predUnroll*B), func() {
			for _, x := range gather(j) {
				st.add(x)
			}
		})
		return st
	}
	// A row sample, loading while the predicted values do: how far the
	// prediction can be trusted is not known until Phase 2 counts. Its
	// loads go out after the first step's, which would otherwise queue
	// behind its 2048 scattered loads in the SM's L1 (one wavefront each;
	// the JIT put them between the index loads: perf notes 49).
	smp := t.sampleRow()
	t.mark(MarkP1Indices)
	t.startPart()

	var kmin, cnt ptx.Reg
	if cluster {
		// This CTA's minimum and count go to the others with its share of
		// the sample, in one round.
		mine()
		tot := t.gatherSample(smp, []ptx.Reg{st.kmin, st.nf}, []string{"min", "add"})
		kmin, cnt = tot[0], tot[1]
		t.mark(MarkP1Values)
	} else {
		smp.finish()
	}

	// The sample's estimate is the first pass's first point, as in the
	// fallback. With a prediction, the second is the predicted minimum: a
	// good prediction's hits are the Top-K, so its minimum has about K
	// elements above it. The pass keeps whichever lands in the window with
	// fewer candidates; a weak prediction (a decode's early layers overlap
	// their previous step by 1.5%: perf notes 15) costs nothing more.
	g := t.newGuess()
	t.sampleGuess(g, smp, predRounds)
	t.mark(MarkP1Sample)

	if !cluster {
		// The first step's values loaded while the estimate was worked out.
		kmin, cnt = mine().reduceMinCount()
		t.mark(MarkP1Values)
	}
	e.Mov(t.valid, cnt)
	e.If(t.setp(ptx.GT, cnt, ptx.Imm(0)), func() { e.Mov(g.first[1], t.keyToFloat(kmin)) })
	return g
}

// predUnroll is how many predicted indices a thread loads a step, all
// before any is used: two memory latencies a step instead of eight.
const predUnroll = 4

// predFetch is a row's prediction: its indices' row, this CTA's share of
// them, [first, end), and the first step's indices (-1 where none),
// loading since the kernel's start.
type predFetch struct {
	prow       ptx.Reg // u64
	first, end ptx.Reg // u32
	ps         [predUnroll]ptx.Reg
}

// fetchPrediction sets up row r's prediction and starts loading its first
// step of indices. They need nothing of the row, so they go out before
// the row's length, and their latency passes while the length, then the
// slice's copy, are worked on (the values they index need the length:
// predValues, in Phase 1).
func (t *topk) fetchPrediction(pp predParams, r ptx.Reg) *predFetch {
	e := t.e
	pf := &predFetch{}
	pred := t.global(pp.pred)
	pf.prow = t.rowAddr(pred, e.LdParam(pp.stride), r)
	m := t.u32()
	e.Cvt(m, e.LdParam(pp.count))

	// My share of the predicted indices: all of them, or in a cluster the
	// rank's 1/C (its 2048 scattered loads were a queue through the SM's
	// L1 that the sample's loads waited behind: perf notes 49), the
	// statistics then combined across the cluster.
	pf.first, pf.end = t.constU32(0), m
	if t.part != nil && t.part.size > 1 {
		C := int64(t.part.size)
		share := t.u32()
		e.Add(share, m, ptx.Imm(C-1))
		e.Div(share, share, ptx.Imm(C))
		e.Mul(pf.first, t.part.rank, share)
		e.Min(pf.first, pf.first, m)
		pf.end = t.u32()
		e.Add(pf.end, pf.first, share)
		e.Min(pf.end, pf.end, m)
	}
	j := t.u32()
	e.Add(j, pf.first, t.tid)
	pf.ps = pf.indices(t, j)
	return pf
}

// indices loads the predicted indices j, j+B, ..., j+3B of my share
// (-1 past its end).
func (pf *predFetch) indices(t *topk, j ptx.Reg) [predUnroll]ptx.Reg {
	e := t.e
	var ps [predUnroll]ptx.Reg
	for u := range predUnroll {
		ju := t.u32()
		e.Add(ju, j, ptx.Imm(int64(u*t.threads)))
		ps[u] = t.constU32(-1)
		e.Guarded(t.setp(ptx.LT, ju, pf.end), func() { e.LdNC(ps[u], t.elemAddr(pf.prow, ju, 4)) })
	}
	return ps
}

// predValues loads the values at predicted indices ps: -Inf (not counted)
// where an index is outside the row.
func (t *topk) predValues(ps [predUnroll]ptx.Reg) [predUnroll]ptx.Reg {
	e := t.e
	var xs [predUnroll]ptx.Reg
	for u, p := range ps {
		// The previous output's space to the window's. As unsigned, a
		// negative index is out of range too, and so is -1 (no index)
		// less any window start (a row is shorter than 2^31).
		i := t.u32()
		e.Sub(i, p, t.out.offset)
		xs[u] = t.f32()
		e.Mov(xs[u], ptx.FloatBits(0xFF800000))
		t.loadScoreIf(t.setp(ptx.LT, i, t.n), xs[u], t.row, i)
	}
	return xs
}

// phase1SampleStats guesses without a prediction, from a sample of the row.
func (t *topk) phase1SampleStats() guess {
	t.e.Comment("Phase 1 (no prediction): sample statistics")
	g := t.newGuess()
	smp := t.sampleRow()
	t.startPart()
	if t.part != nil && t.part.size > 1 {
		t.gatherSample(smp, nil, nil)
	} else {
		smp.finish()
	}
	t.sampleGuess(g, smp, sampleRounds)
	t.mark(MarkP1Sample)
	return g
}

// sampleGuess sets g from a strided sample of the row: estimateThreshold
// over the sample's range gives the anchors, and the first pass counts the
// points whose estimated counts are 1 and 1.6 times the target, so that it
// lands in [K, MaxCandidates] when the estimate is off by a factor between
// 0.42 and 2 (0.5 and 2.4 at a dense sample's target).
func (t *topk) sampleGuess(g guess, smp *sample, rounds int) {
	e := t.e
	e.Mov(g.target, smp.target)
	e.Mov(g.lo, smp.rng.min)
	e.Mov(g.hi, smp.rng.max)
	// Phase 4 guesses its span from the sample's largest value (guessSpan).
	e.If(t.setp(ptx.EQ, t.tid, ptx.Imm(0)), func() {
		e.St(ptx.SpaceShared, ptx.U32, t.smem.at(t.sampleTop, 0), t.key(t.bitsOf(smp.rng.max)))
	})
	pts := [4]ptx.Reg{t.f32(), t.f32(), t.f32(), t.f32()}
	t.evenPoints(pts, g.lo, g.hi)
	t.estimateThreshold(smp, g, pts, rounds)
	for i, f := range []float64{1, 1.6} {
		x := t.f32()
		e.Mul(x, g.target, ptx.Float(float32(f)))
		t.logSecant(g.first[i], g, x, false, ptx.Pred{})
	}
}

// stats accumulates, per thread, the min and max key and the count of the
// finite values it sees.
type stats struct {
	t              *topk
	kmin, kmax, nf ptx.Reg // u32
}

func (t *topk) newStats() *stats {
	return &stats{t: t, kmin: t.constU32(0xFFFFFFFF), kmax: t.constU32(0), nf: t.constU32(0)}
}

// add accumulates x if it is finite.
func (s *stats) add(x ptx.Reg) {
	t, e := s.t, s.t.e
	b := t.bitsOf(x)
	abs := t.u32()
	e.And(abs, b, ptx.Imm(0x7FFFFFFF))
	e.If(t.setp(ptx.LT, abs, ptx.Imm(0x7F800000)), func() {
		k := t.key(b)
		e.Min(s.kmin, s.kmin, k)
		e.Max(s.kmax, s.kmax, k)
		e.Add(s.nf, s.nf, ptx.Imm(1))
	})
}

// reduceMinCount reduces the minimum key and the count alone (the same in
// every thread; the key is 0xFFFFFFFF where the count is 0), what
// Phase 1 takes of the predicted values.
func (s *stats) reduceMinCount() (kmin, cnt ptx.Reg) {
	r := s.t.reduceIn(s.t.p1, []string{"min", "add"}, []ptx.Reg{s.kmin, s.nf})
	return r[0], r[1]
}

// valueRange is the smallest and the largest of a set of finite values,
// the same in every thread; both NaN where the set is empty.
type valueRange struct {
	min, max ptx.Reg // f32
}

// rangeOf turns reduced min and max keys into a valueRange (the min key
// above the max one: no finite value).
func (t *topk) rangeOf(kmin, kmax ptx.Reg) valueRange {
	e := t.e
	out := valueRange{min: t.f32(), max: t.f32()}
	e.Mov(out.min, ptx.FloatBits(0x7FC00000))
	e.Mov(out.max, ptx.FloatBits(0x7FC00000))
	e.If(t.setp(ptx.LE, kmin, kmax), func() {
		e.Mov(out.min, t.keyToFloat(kmin))
		e.Mov(out.max, t.keyToFloat(kmax))
	})
	return out
}

// sample is a strided sample of the row, held in registers: per thread
// len(vals) values (-Inf where there is no sample), and the factor that
// turns a sample count into an estimated row count.
type sample struct {
	t     *topk
	s     ptx.Reg   // u32 samples taken
	vals  []ptx.Reg // f32
	scale ptx.Reg   // f32: n / samples
	rng   valueRange
	// target is the count Phase 2 aims for, by how far the sample can be
	// trusted (topk.target).
	target ptx.Reg // f32
	// In a cluster, vals are first this CTA's share of the points alone,
	// the points js, those below end loaded (sampleRow); gatherSample
	// then brings every CTA's.
	js  []ptx.Reg // u32
	end ptx.Reg   // u32
}

// sampleRun is how many adjacent elements the sample takes at each of its
// points where the row is short enough (sampleRow): a warp's loads then
// touch half as many sectors, each a wavefront through the SM's L1 (the
// sample's 2048 scattered loads were what Phase 1 waited on: perf notes
// 49).
const sampleRun = 2

// samplePerThread is how many of the row sample's points each of threads
// threads holds; samplePoints, how many points the sample has at most.
func samplePerThread(threads int) int { return max(1, min(8, sampleSize/threads)) }
func samplePoints(threads int) int    { return samplePerThread(threads) * threads }

// sampleRow starts loading a strided sample of the row: thread tid takes
// samples j = tid, tid+B, ..., s = min(n, samples) of them, d = n/s
// elements apart: at index j*d, or where d <= K/16 in runs of R =
// sampleRun adjacent elements R*d apart, at (j/R)*(R*d) + j%R. A point
// stands for d elements, so the Top-K holds about K/d of them; runs
// halve the distinct points, and below 8 in the Top-K (d > K/16: N >
// 256K at K = 2048) the estimate misses more often than the sectors
// saved are worth (perf notes 49). Either way the samples are distinct
// elements spread over the row. The loads are independent of everything
// else in Phase 1; call finish (one CTA) or gatherSample (a cluster) once
// the values are needed, so that their latency overlaps other work.
//
// In a cluster, CTA r loads only the r-th of C equal shares of the
// points (j = r*share + tid, r*share + tid + B, ...), and gatherSample
// sends them to every CTA: the same points, but an SM's L1 works through
// 1/C of the scattered loads (a wavefront each, perf notes 49; 50 did
// the same for the predicted values).
func (t *topk) sampleRow() *sample {
	e := t.e
	per := samplePerThread(t.threads)
	s := t.u32()
	e.Min(s, t.n, ptx.Imm(int64(per*t.threads)))
	stride := t.u32()
	e.Div(stride, t.n, s) // s >= 1: this path has n > K
	// In runs: j = R*q + r at R*d*q + r, i.e. j*d - r*(d-1). Single: j*d.
	// Dense: at least 16 points expected in the Top-K (8 distinct in runs).
	dense := t.setp(ptx.LE, stride, ptx.Imm(int64(max(1, t.cfg.K/16))))
	back := t.u32()
	e.Sub(back, stride, ptx.Imm(1))
	e.Selp(back, back, ptx.Imm(0), dense)
	smp := &sample{t: t, s: s, scale: t.f32(), target: t.f32(), end: s}
	e.Selp(smp.target, ptx.Float(float32(t.target(true))), ptx.Float(float32(t.target(false))), dense)
	from := t.tid // thread tid's first point
	if t.part != nil && t.part.size > 1 {
		C := t.part.size
		share := (per*t.threads + C - 1) / C
		first := t.u32()
		e.Mul(first, t.part.rank, ptx.Imm(int64(share)))
		from = t.u32()
		e.Add(from, first, t.tid)
		smp.end = t.u32()
		e.Add(smp.end, first, ptx.Imm(int64(share)))
		e.Min(smp.end, smp.end, s)
		per = (share + t.threads - 1) / t.threads
	}
	for i := range per {
		v := t.f32()
		e.Mov(v, ptx.FloatBits(0xFF800000))
		j := t.u32()
		e.Add(j, from, ptx.Imm(int64(i*t.threads)))
		e.If(t.setp(ptx.LT, j, smp.end), func() {
			idx, r := t.u32(), t.u32()
			e.Mul(idx, j, stride)
			e.And(r, j, ptx.Imm(sampleRun-1))
			e.Mul(r, r, back)
			e.Sub(idx, idx, r)
			t.loadScore(v, t.row, idx)
		})
		smp.vals = append(smp.vals, v)
		smp.js = append(smp.js, j)
	}
	return smp
}

// stats accumulates this thread's sampled values.
func (smp *sample) stats() *stats {
	st := smp.t.newStats()
	for _, v := range smp.vals {
		st.add(v) // -Inf where there is no sample: not finite, not counted
	}
	return st
}

// setScale sets the factor from sample counts to row counts.
func (smp *sample) setScale() {
	t, e := smp.t, smp.t.e
	fs, fn := t.f32(), t.f32()
	e.Cvt(fs, smp.s)
	e.Cvt(fn, t.n)
	e.Div(smp.scale, fn, fs)
}

// finish takes the sample's range, all its estimate needs of it (a sum or
// a count would be a longer reduction: perf notes 51); the sampled values
// must be there. One CTA per row.
func (smp *sample) finish() {
	st := smp.stats()
	smp.setScale()
	r := smp.t.reduceIn(smp.t.p1, []string{"min", "max"}, []ptx.Reg{st.kmin, st.kmax})
	smp.rng = smp.t.rangeOf(r[0], r[1])
}

// gatherSample is finish for a cluster: each CTA's share of the sample
// goes to every CTA's sample buffer in one exchange round, beside vals
// (u32, reduced over the CTA by ops, then combined across the cluster by
// the same ops) and the share's range; then every thread holds the
// points it would hold in one CTA, so the estimate, the same in every
// CTA, is one CTA's. It returns vals' totals.
func (t *topk) gatherSample(smp *sample, vals []ptx.Reg, ops []string) []ptx.Reg {
	e, p := t.e, t.part
	st := smp.stats()
	// The points go out first, so that they travel during the reduction
	// (and, without mbarrier rounds, before send's arrival releases them).
	t.syncCluster() // the others' mbarriers are initialised past it
	buf := t.u32()
	e.Add(buf, t.smem.base, ptx.Imm(int64(p.ctl.sample.off)))
	for i, v := range smp.vals {
		e.If(t.setp(ptx.LT, smp.js[i], smp.end), func() {
			at := t.u32()
			e.Mad(at, smp.js[i], ptx.Imm(4), buf)
			p.store(t.cta, ptx.F32, at, v)
		})
	}
	n := len(vals)
	ops = append(append([]string{}, ops...), "min", "max")
	r := t.reduceIn(t.p1, ops, append(append([]ptx.Reg{}, vals...), st.kmin, st.kmax))
	p.send(t.cta, r)
	tx := t.u32()
	e.Shl(tx, smp.s, ptx.Imm(2)) // every CTA receives every point
	tot, _ := p.receive(t.cta, len(ops), ops, tx)
	smp.vals, smp.js = nil, nil
	for i := range samplePerThread(t.threads) {
		v := t.f32()
		e.Mov(v, ptx.FloatBits(0xFF800000))
		j := t.u32()
		e.Add(j, t.tid, ptx.Imm(int64(i*t.threads)))
		e.If(t.setp(ptx.LT, j, smp.s), func() {
			at := t.u32()
			e.Mad(at, j, ptx.Imm(4), buf)
			e.Ld(ptx.SpaceShared, v, ptx.At(at, 0))
		})
		smp.vals = append(smp.vals, v)
	}
	smp.setScale()
	smp.rng = t.rangeOf(tot[n], tot[n+1])
	return tot[:n]
}

// evenPoints sets pts to four evenly spaced points strictly inside (lo, hi).
func (t *topk) evenPoints(pts [4]ptx.Reg, lo, hi ptx.Reg) {
	e := t.e
	d := t.f32()
	e.Sub(d, hi, lo)
	e.Mul(d, d, ptx.Float(0.2))
	for i, p := range pts {
		e.Mad(p, d, ptx.Float(float32(i+1)), lo)
	}
}

// estimateThreshold narrows g's bracket [lo, hi] toward the threshold whose
// estimated count is the Phase 2 target, counting the sample instead of the
// row: est(x) = scale * #(samples >= x). Each round estimates four points in
// one block reduction and keeps the two neighbours the target falls
// between; the first round's points are pts, later rounds' are evenly
// spaced. The final bracket's ends are Phase 2's first secant anchors, and
// the points its first pass counts are interpolated between them in
// log(count). All of this is an estimate: Phase 2 counts the row for real,
// so a poor sample costs passes, never exactness.
func (t *topk) estimateThreshold(s *sample, g guess, pts [4]ptx.Reg, rounds int) {
	e := t.e
	target := g.target
	e.Cvt(g.cntLo, t.n)
	e.Mov(g.cntHi, ptx.Float(0.5)) // below one element: keeps log finite
	for round := range rounds {
		if round > 0 {
			t.evenPoints(pts, g.lo, g.hi)
		}
		var cnts []ptx.Reg
		for _, p := range pts {
			c := t.constU32(0)
			for _, v := range s.vals {
				e.Guarded(t.setp(ptx.GEU, v, p), func() { e.Add(c, c, ptx.Imm(1)) })
			}
			cnts = append(cnts, c)
		}
		r := t.reduceIn(t.p1, []string{"add", "add", "add", "add"}, cnts)
		est := make([]ptx.Reg, 4)
		for i := range est {
			est[i] = t.f32()
			e.Cvt(est[i], r[i])
			e.Mul(est[i], est[i], s.scale)
		}
		// The points ascend, so the estimates descend: lo is the last point
		// at or above the target, hi the first below it.
		for i := range pts {
			e.Guarded(t.setp(ptx.GE, est[i], target), func() {
				e.Mov(g.lo, pts[i])
				e.Mov(g.cntLo, est[i])
			})
		}
		for i := len(pts) - 1; i >= 0; i-- {
			e.Guarded(t.setp(ptx.LT, est[i], target), func() {
				e.Mov(g.hi, pts[i])
				e.Mov(g.cntHi, est[i])
			})
		}
	}
	e.Max(g.cntHi, g.cntHi, ptx.Float(0.5))
}

// logSecant sets x to the point between g.lo and g.hi where the count,
// interpolated in log(count), reaches target. Tail counts fall roughly
// exponentially with the threshold, which a linear secant follows badly.
// With damp set, the step from the end just measured (lo if fromLo holds,
// else hi) goes at most the damping fraction of the way.
func (t *topk) logSecant(x ptx.Reg, g guess, target ptx.Operand, damp bool, fromLo ptx.Pred) {
	e := t.e
	a, b, lt := t.f32(), t.f32(), t.f32()
	e.Lg2(a, g.cntLo)
	e.Lg2(b, g.cntHi)
	e.Lg2(lt, target)
	frac, d := t.f32(), t.f32()
	e.Sub(frac, a, lt)
	e.Sub(d, a, b)
	e.Div(frac, frac, d)
	if damp {
		e.IfElse(fromLo, func() { e.Min(frac, frac, ptx.Float(damping)) },
			func() { e.Max(frac, frac, ptx.Float(1-damping)) })
	}
	e.Sub(d, g.hi, g.lo)
	e.Mad(x, frac, d, g.lo)
}

// target is the count Phase 2 aims for: inside [K, MaxCandidates], nearer
// K, so that Phases 3 and 4 have few candidates but one more pass is
// unlikely. How near depends on the sample (sampleRow): dense (16 or more
// points expected in the Top-K, 8 distinct in runs), its estimate is good enough to aim an
// eighth of the way (Phases 3 and 4 then take ~2500 candidates instead of
// ~2900 at K = 2048); sparser (N > 256K at K = 2048), a quarter, or the
// first pass misses more often than the smaller window saves (perf notes
// 51).
func (t *topk) target(dense bool) int {
	if dense {
		return t.cfg.K + (t.cfg.MaxCandidates-t.cfg.K)/8
	}
	return t.cfg.K + (t.cfg.MaxCandidates-t.cfg.K)/4
}

// verdict is what Phase 2 found, the same in every thread but mine.
type verdict struct {
	thr   ptx.Reg  // f32 the threshold
	found ptx.Pred // K <= count(x >= thr) <= MaxCandidates
	total ptx.Reg  // u32 that count
	mine  ptx.Reg  // u32 this thread's part of it
	below ptx.Reg  // u32 the part of CTAs of lower rank in the cluster (cluster kernels)
}

// phase2SecantSearch finds a threshold thr with K <= count(x >= thr) <=
// MaxCandidates. Its first pass counts all of g.first at once and keeps, of
// those in the window, the one with the fewest candidates. Every later pass
// counts one guess: the log-count secant through the two anchors (value,
// count) toward the target count, damped while only one anchor is measured.
// A safe bracket (lo, hi) of keys is kept from measured counts: a guess
// outside it, a NaN guess, or any guess after secantIters passes is
// replaced by the key midpoint, so the search ends within 32 bisection
// passes. found is false when lo and hi meet, i.e. no threshold brackets the
// K-th key (ties wider than MaxCandidates, or NaN mass at the top); the
// caller then takes the exact path. mine is this thread's count at thr,
// which Phase 3 reuses instead of counting again. Each pass counts this
// CTA's share of the row and combines the counts across the CTA, or the
// cluster (rowTotals).
func (t *topk) phase2SecantSearch(g guess) verdict {
	e := t.e
	e.Comment("Phase 2: secant threshold search")
	// Rows that fit the candidate buffer whole: -Inf counts every element.
	e.If(t.setp(ptx.LE, t.n, ptx.Imm(int64(t.cfg.MaxCandidates))), func() {
		for _, p := range g.first {
			e.Mov(p, ptx.FloatBits(0xFF800000))
		}
	})
	s := &search{t: t, g: g, lo: t.constU32(keyNegInf - 1), hi: t.constU32(keyPosInf + 1),
		thr: t.f32(), mine: t.u32(), total: t.u32(), below: t.constU32(0),
		found: t.falsePred(), measLo: t.falsePred(), measHi: t.falsePred()}
	done := e.NewLabel("phase2_done")

	// First pass: every first point.
	// Its sums continue Phase 1's run of reductions: the first pass is
	// straight-line code, and lands in the window on most rows.
	counts := t.countFirst(g.first[:])
	tot, below := t.rowTotals(counts, t.p1)
	e.Add(t.iters, t.iters, ptx.Imm(1))
	e.Mov(s.total, ptx.Imm(0xFFFFFFFF))
	for i, p := range g.first {
		in := s.inWindow(tot[i])
		e.AndPred(in, in, t.setp(ptx.LT, tot[i], s.total))
		e.Guarded(in, func() {
			e.Mov(s.total, tot[i])
			e.Mov(s.thr, p)
			e.Mov(s.mine, counts[i])
			if below != nil {
				e.Mov(s.below, below[i])
			}
		})
		e.OrPred(s.found, s.found, in)
	}
	e.BraIf(s.found, done)
	for i, p := range g.first {
		s.record(p, t.key(t.bitsOf(p)), tot[i])
	}
	s.next(done)

	// Later passes: one guess each.
	top := e.NewLabel("phase2_pass")
	e.Place(top)
	tk := t.key(t.bitsOf(s.thr))
	out := t.setp(ptx.LE, tk, s.lo)
	e.OrPred(out, out, t.setp(ptx.GE, tk, s.hi))
	e.If(out, func() { // keep the guess strictly inside the bracket, else bisect
		e.Sub(tk, s.hi, s.lo)
		e.Shr(tk, tk, ptx.Imm(1))
		e.Add(tk, tk, s.lo)
		e.Mov(s.thr, t.keyToFloat(tk))
	})
	e.Mov(s.mine, t.countMine([]ptx.Reg{s.thr})[0])
	tot, below = t.rowTotals([]ptx.Reg{s.mine}, nil)
	cnt := tot[0]
	e.Mov(s.total, cnt)
	if below != nil {
		e.Mov(s.below, below[0])
	}
	e.Add(t.iters, t.iters, ptx.Imm(1))
	e.Mov(s.found, s.inWindow(cnt))
	e.BraIf(s.found, done)
	s.record(s.thr, tk, cnt)
	s.next(done)
	e.BraUni(top)
	e.Place(done)
	return verdict{thr: s.thr, found: s.found, total: s.total, mine: s.mine, below: s.below}
}

// falsePred returns a new predicate that is false.
func (t *topk) falsePred() ptx.Pred {
	p := t.pred()
	t.e.SetpT(ptx.U32, p, ptx.NE, t.k, t.k)
	return p
}

// search is Phase 2's state, the same in every thread.
type search struct {
	t              *topk
	g              guess
	lo, hi         ptx.Reg  // u32 keys: valid thresholds lie strictly between
	thr, mine      ptx.Reg  // the next (or found) threshold; this thread's count at it
	total, below   ptx.Reg  // the row's count at thr; the part of lower-rank CTAs (clusters)
	found          ptx.Pred // thr's count is in the window
	measLo, measHi ptx.Pred // whether g's anchors are measured counts
}

func (s *search) inWindow(cnt ptx.Reg) ptx.Pred {
	t := s.t
	in := t.setp(ptx.GE, cnt, t.k)
	t.e.AndPred(in, in, t.setp(ptx.LE, cnt, ptx.Imm(int64(t.cfg.MaxCandidates))))
	return in
}

// record narrows the bracket with a measured count cnt, outside the window,
// at threshold x (key k), and makes it an anchor. A point outside the
// bracket (a NaN first point, say) is ignored.
func (s *search) record(x, k, cnt ptx.Reg) {
	t, e := s.t, s.t.e
	inside := t.setp(ptx.GT, k, s.lo)
	e.AndPred(inside, inside, t.setp(ptx.LT, k, s.hi))
	e.If(inside, func() {
		fc := t.f32()
		e.Cvt(fc, cnt)
		e.IfElse(t.setp(ptx.GT, cnt, ptx.Imm(int64(t.cfg.MaxCandidates))), func() {
			e.Mov(s.lo, k)
			e.Mov(s.g.lo, x)
			e.Mov(s.g.cntLo, fc)
			e.SetpT(ptx.U32, s.measLo, ptx.EQ, t.k, t.k) // true
		}, func() {
			e.Mov(s.hi, k)
			e.Mov(s.g.hi, x)
			e.Mov(s.g.cntHi, fc)
			e.SetpT(ptx.U32, s.measHi, ptx.EQ, t.k, t.k)
		})
	})
}

// next ends the search (found false) when the bracket is closed, and
// otherwise sets the next guess: the log-count secant, damped toward the
// measured anchor while the other is only an estimate; after secantIters
// passes, NaN, which the next pass turns into the bracket's midpoint.
func (s *search) next(done ptx.Label) {
	t, e := s.t, s.t.e
	gap := t.u32()
	e.Sub(gap, s.hi, s.lo)
	e.BraIf(t.setp(ptx.LE, gap, ptx.Imm(1)), done)
	target := s.g.target
	e.IfElse(t.setp(ptx.LT, t.iters, ptx.Imm(secantIters)), func() {
		e.Max(s.g.cntHi, s.g.cntHi, ptx.Float(0.5))
		both := t.pred()
		e.AndPred(both, s.measLo, s.measHi)
		e.IfElse(both, func() {
			t.logSecant(s.thr, s.g, target, false, ptx.Pred{})
		}, func() {
			t.logSecant(s.thr, s.g, target, true, s.measLo)
		})
	}, func() {
		e.Mov(s.thr, ptx.FloatBits(0x7FC00000)) // NaN: bisect
	})
}

// phase3Collect writes every element >= v.thr (or NaN) into the candidate
// buffer. Each thread's count from Phase 2's last pass gives, by a block
// prefix sum, where its candidates go: no ballots, no atomics, no second
// counting pass, and the same order every run. In a cluster kernel the
// buffer that counts is the leader's: each CTA collects into its own, then
// copies them there after the candidates of the CTAs of lower rank
// (v.below), a warp's stores to consecutive words, as distributed shared
// memory takes them best (one thread's scattered run of remote stores
// each measured slower). cleared says whether clearKept cleared Phase 4's
// first histogram, which then needs a barrier before Phase 4 (syncKept).
func (t *topk) phase3Collect(v verdict) (cleared ptx.Pred) {
	e := t.e
	e.Comment("Phase 3: ballot-free candidate collection")
	// No closing barrier: the scan's scratch is next written in Phase 4,
	// past the barrier after the walk.
	pos, ours := t.blockScan(v.mine, t.sel.scratch)
	e.Mov(t.ncand, v.total)
	// One shared address walks this thread's slots: the index slot is at a
	// fixed distance from the value slot.
	a := t.u32()
	e.Mad(a, pos, ptx.Imm(4), t.smem.base)
	e.Add(a, a, ptx.Imm(int64(t.cand.bits.off)))
	toIdx := int64(t.cand.idx.off - t.cand.bits.off)
	t.walkMine(v.thr, func(x ptx.Reg, idx func() ptx.Reg) {
		// Predicated, not branched: the pass streams like a counting pass.
		// (One 8-byte store of value and index measured 60% slower on an
		// H200 than these two.)
		p := t.setp(ptx.GEU, x, v.thr)
		e.Guarded(p, func() {
			e.St(ptx.SpaceShared, ptx.F32, ptx.At(a, 0), x)
			e.St(ptx.SpaceShared, ptx.U32, ptx.At(a, toIdx), idx())
			e.Add(a, a, ptx.Imm(4))
		})
	})
	t.sync()
	cleared = t.clearKept()
	if t.part == nil || t.part.size == 1 {
		return cleared
	}
	// The leader's own are in place (v.below is 0 there); the others' go
	// to [below, below+ours) of the leader's buffer: with mbarrier rounds
	// as st.async stores completing on the leader's hand-over mbarrier,
	// which its own arrival makes expect the others' bytes; then the
	// others end and the leader alone waits, with no fence or arrival of
	// theirs. Else by DSMEM stores and a cluster barrier.
	mbar := t.part.mbar()
	var hand, remoteHand ptx.Reg
	if mbar {
		hand = t.part.handOver(t.cta)
	}
	e.If(t.part.leader.Not(), func() {
		if mbar {
			remoteHand = t.u32()
			e.Mapa(ptx.SpaceSharedCluster, remoteHand, hand, ptx.Imm(0))
		}
		j := t.u32()
		e.For(j, t.tid, ours, ptx.Imm(int64(t.threads)), func() {
			b, i := t.loadCand(j)
			d := t.u32()
			e.Add(d, j, v.below)
			e.Mad(d, d, ptx.Imm(4), t.smem.base)
			e.Add(d, d, ptx.Imm(int64(t.cand.bits.off)))
			e.Mapa(ptx.SpaceSharedCluster, d, d, ptx.Imm(0))
			if mbar {
				e.StAsync(ptx.U32, ptx.At(d, 0), b, ptx.At(remoteHand, 0))
				e.StAsync(ptx.U32, ptx.At(d, toIdx), i, ptx.At(remoteHand, 0))
				return
			}
			e.St(ptx.SpaceSharedCluster, ptx.U32, ptx.At(d, 0), b)
			e.St(ptx.SpaceSharedCluster, ptx.U32, ptx.At(d, toIdx), i)
		})
	})
	if !mbar {
		// Every CTA's candidates are in the leader's buffer before it reads them.
		e.BarrierClusterArrive(ptx.SemRelease)
		e.BarrierClusterWait(ptx.SemAcquire)
		return
	}
	e.If(t.part.leader, func() {
		e.If(t.setp(ptx.EQ, t.tid, ptx.Imm(0)), func() {
			others := t.u32() // bytes: a value and an index per candidate of the others
			e.Sub(others, v.total, ours)
			e.Shl(others, others, ptx.Imm(3))
			e.MbarrierArriveExpectTx(ptx.SpaceShared, ptx.ScopeDefault, e.Reg(ptx.B64), ptx.At(hand, 0), others)
		})
		e.MbarrierWait(ptx.SpaceShared, ptx.ScopeCluster, ptx.At(hand, 0), ptx.Imm(0))
	})
	return cleared
}

// phase4Refine selects exactly K of v.total candidates: radix select on
// their keys in shared memory, then by lowest index among those equal to
// the K-th key if not all of them fit.
func (t *topk) phase4Refine(v verdict) {
	e := t.e
	e.Comment("Phase 4: exact selection in shared memory")
	total := v.total
	cands := t.candWalker(total)
	e.IfElse(t.setp(ptx.EQ, total, t.k), func() {
		// Exactly K candidates: all of them, in buffer order.
		j := t.u32()
		e.For(j, t.tid, total, ptx.Imm(int64(t.threads)), func() {
			b, i := t.loadCand(j)
			t.store(t.out, j, i, b)
		})
	}, func() {
		// Inlined passes: the candidate walk is short, and this is the
		// common path, where a loop's few instructions per pass would show.
		// The digits split the candidates' key span, and after the first
		// one the K-th candidate's bin usually holds at most 32: one warp
		// ranks them (smallSelect) instead of two more passes.
		how := selectHow{small: true, cleared: true}
		var span keySpan
		if t.scores.Size() == 2 {
			// The walk also finds the low bits the keys share (a 16-bit
			// score's widened key has 13 or 16), which saves passes.
			span = t.spanOf(cands, t.reduce)
		} else {
			span = t.guessSpan(v.thr)
			how.guess = &spanGuess{total: total, exact: func() keySpan { return t.spanOf(cands, t.reduce) }}
		}
		how.span = &span
		t.mark(MarkP4Span)
		t.onMark = t.mark // exactSelect's own points
		t.exactSelect(cands, t.k, t.sel, t.out, t.passes, how)
		t.onMark = nil
	})
}

// guessSpan guesses the candidates' key span without walking them: from
// the threshold's key (every candidate is >= thr; a zero threshold
// collects -0.0 too) up to the sample's largest key, rounded up as every
// span is to a power of two of keys past the threshold's, which the row's
// largest usually lies under (the whole key range above the threshold's
// where the sample saw nothing above it). A candidate above it is found by
// exactSelect's first pass, which then takes the walk (spanGuess). The
// guess is no wider than the exact span where the sample holds the row's
// largest: a span twice as wide put twice the candidates into the K-th
// one's bin, past the 32 one warp ranks in some rows (perf notes 57).
func (t *topk) guessSpan(thr ptx.Reg) keySpan {
	e := t.e
	lo := t.key(t.bitsOf(thr))
	e.Guarded(t.setp(ptx.EQ, thr, ptx.Float(0)), func() { e.Mov(lo, ptx.Imm(0x7FFFFFFF)) }) // key(-0.0)
	top := t.u32()
	e.Ld(ptx.SpaceShared, top, t.smem.at(t.sampleTop, 0))
	if t.cfg.Instrument {
		e.Mov(t.seenTop, top)
	}
	d := t.u32()
	e.Sub(d, top, lo)
	e.Guarded(t.setp(ptx.LE, top, lo), func() { e.Not(d, lo) })
	span := keySpan{min: lo, shift: t.u32(), zeros: t.u32(), lim: t.u32()}
	e.Clz(span.shift, d)
	e.Mov(span.zeros, span.shift)
	e.Shr(span.lim, t.constU32(0xFFFFFFFF), span.shift) // shr clamps a shift of 32: lim 0
	return span
}

func (t *topk) newGuess() guess {
	g := guess{lo: t.f32(), cntLo: t.f32(), hi: t.f32(), cntHi: t.f32(), target: t.f32()}
	for i := range g.first {
		g.first[i] = t.f32()
	}
	return g
}
