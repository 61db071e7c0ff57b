package gen

import (
	"math"

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
// cluster of CTAs per row (cluster_topk.go). Rows of length n <= K are copied
// whole, padded with index -1 (value -Inf).
//
// This file holds what the kernels share: their state and parameters, the
// pipeline (body), short and held rows, the exact path and the
// instrumentation. The phases have a file each: phase1_stats.go,
// phase2_search.go, phase3_collect.go and phase4_refine.go.

// Paths a row can take, as the instrumentation record reports them.
const (
	PathCopy  = 0 // n <= K: every element
	PathGVR   = 1 // threshold bracketed, candidates refined in shared memory
	PathExact = 2 // radix select over the row
	PathHeld  = 3 // K < n <= Config.HeldMax(): the row held in shared memory and selected there (heldSelect)
)

// Phase 2 tuning.
const (
	secantIters = 4    // secant steps before plain key bisection takes over
	damping     = 0.5  // the first secant step goes at most this far
	sampleSize  = 2048 // row elements Phase 1 samples (at most 8 per thread)
	// Rounds of the sample's threshold estimate with a prediction, whose
	// minimum the first pass counts too (estimateThreshold): two, 0.7 us
	// less in Phase 1 on an H100 than four, still one pass on every
	// replayed step (one round: more candidates; perf notes 16). Without
	// a prediction the sample's histogram replaces the rounds
	// (histogramGuess).
	predRounds = 2
)

// The instrumentation record (Config.Instrument): StatsBytes per row at
// stats + row*StatsBytes, holding five u64 %clock64 stamps at the phase
// boundaries (entry, end of Phases 1, 2, 3 and 4; a phase a row skips takes
// no time) at byte offsets 0, 8, ..., 32, then u32 counters at these
// offsets.
const (
	StatsBytes        = 200
	StatsPhase2Passes = 40  // counting passes in Phase 2
	StatsRadixPasses  = 44  // radix select passes (Phase 4 or the exact path)
	StatsCandidates   = 48  // candidates collected in Phase 3
	StatsPath         = 52  // PathCopy, PathGVR, PathExact or PathHeld
	StatsValidPred    = 56  // valid predicted indices Phase 1 saw
	StatsThreshold    = 60  // Phase 2's threshold, float32 bits (0 where Phase 2 did not run); with PathHeld, the key the select starts from (heldSelect)
	StatsMarks        = 64  // NumMarks u64 %clock64 marks inside Phases 1-4 (0: not reached)
	StatsSampleTop    = 192 // the key of the sample's largest value, Phase 4's guessed span reads (0 where Phase 4 did not read it; with a sure set, the sure threshold's key - 1)
	StatsSure         = 196 // sure candidates Phase 4 wrote as they were, 0 where none
)

// The marks inside Phases 1-4 (Config.Instrument), where their fixed
// costs go: %clock64 of thread 0 at each point, 0 where a row does not
// pass it. A mark after a load's first use says when the load arrived.
const (
	MarkP1Indices   = iota // Phase 1: the predicted indices arrived (their values' loads issued)
	MarkP1Values           // Phase 1: the predicted values arrived and were reduced (one CTA: after the sample's estimate; a cluster: combined in the round that gathers the sample, before its estimate); without a prediction, the sample arrived and was reduced or gathered, before its estimate
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
	MarkP2Counted          // Phase 2: the first pass's count of this thread's share done
	MarkP2Combined         // Phase 2: the first pass's counts combined over the CTA or the cluster
	MarkP3Placed           // Phase 3: this thread's candidates placed (their slots, from Phase 2's prefixes)
	MarkP3Walked           // Phase 3: the walk's candidates written to this CTA's buffer (past the barrier after it)
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
	// group is a shared row's cluster (Config.Groups; nil: the row is its
	// cluster's or CTA's alone).
	group *groupPart
	// keep holds which over vectors of a cluster kernel's slice Phase 2's
	// first pass found high (overflow.go; nil without Config.KeepOver).
	keep *overKeep
	// pred is a GVR kernel's prediction, its first indices loading from
	// the kernel's start (nil: no prediction).
	prediction *predFetch
	// early is whether Phase 2's first pass collects while the row's
	// round is out (earlyCollect).
	early bool
	// sureOut, where set, holds in a cluster kernel with the sure set
	// where Phase 3 wrote the sure candidates to their output slots
	// itself, each CTA its own (outSure): Phase 4 then leaves them.
	sureOut ptx.Pred

	// setupOut emits the loads of the output's parameters (count, out,
	// stats) into their registers: on every path once, before their first
	// use, and where Phase 1 runs, under its first loads (perf notes 194).
	setupOut func()

	count   ptx.Reg           // u64 address of this row's out_count slot, 0 if none
	stats   ptx.Reg           // u64 address of this row's stats record (Instrument)
	stamps  [5]ptx.Reg        // u64 %clock64 at the phase boundaries (Instrument)
	marks   [NumMarks]ptx.Reg // u64 %clock64 inside Phases 1-4 (Instrument)
	iters   ptx.Reg           // u32 Phase 2 passes
	passes  ptx.Reg           // u32 radix passes
	ncand   ptx.Reg           // u32 candidates
	nsure   ptx.Reg           // u32 sure candidates (Config.SureSet, Instrument)
	path    ptx.Reg           // u32
	valid   ptx.Reg           // u32 valid predicted indices
	thr     ptx.Reg           // u32 Phase 2's threshold's bits (Instrument)
	seenTop ptx.Reg           // u32 the sample's top key as Phase 4 read it (Instrument)
}

// topkShared is the shared memory of a Top-K kernel.
type topkShared struct {
	sel        selectShared
	reduce     region                     // block reductions of up to four values
	p1         *reductionRun              // Phase 1's block reductions (GVR pipeline only)
	sampleTop  region                     // the key of the sample's largest value, for Phase 4 (GVR pipeline only)
	sampleHist region                     // the sample's histogram, Phase 1 without a prediction (the fallback kernels only: countSample)
	guessOut   region                     // the first pass's points and anchors, as firstPoints hands them over (GVR pipeline only); past Phase 1, the threshold earlyCollect collected at
	split      region                     // how many candidates Phase 4 selects from, and the sure ones after them (Config.SureSet)
	cand       struct{ bits, idx region } // MaxCandidates float bits and indices (GVR pipeline only)
	stage      *staging                   // sorted output only
}

// newTopKShared lays out a Top-K kernel's shared memory in l. The radix
// kernel has no candidate buffer; only a kernel without a prediction (the
// fallback kernels) has the sample's histogram.
func newTopKShared(l *layout, cfg Config, withCand, withHist bool) topkShared {
	warps := cfg.BlockSize / warpSize
	var s topkShared
	s.sel = allocSelect(l, cfg.Bins, warps, smallBinMax(cfg.Scores, cfg.BlockSize))
	s.reduce = l.alloc("reduce", 4*4*warps, 16)
	if withCand {
		s.cand.bits = l.alloc("cand_bits", 4*cfg.MaxCandidates, 16)
		s.cand.idx = l.alloc("cand_idx", 4*cfg.MaxCandidates, 16)
		s.p1 = allocReductionRun(l, "p1_reduce", 4, warps)
		s.sampleTop = l.alloc("sample_top", 4, 4)
		s.guessOut = l.alloc("guess", 4*guessWords, 4)
		if withHist {
			s.sampleHist = l.alloc("sample_hist", 4*sampleBins, 16)
		}
		if cfg.SureSet {
			s.split = l.alloc("split", 8, 4)
		}
	}
	if cfg.Sorted {
		s.stage = allocStaging(l, cfg.K, warps)
	}
	return s
}

// SharedBytes is the dynamic shared memory the GVR kernels (gvr_topk,
// topk_fallback) need for c, the larger of the two (the fallback's, with
// the sample's histogram); topk_radix needs less.
func (c Config) SharedBytes() int {
	var l layout
	newTopKShared(&l, c, true, true)
	return l.size
}

// newTopK declares the parameters of a Top-K kernel and sets up its row.
// withPred adds the prediction parameters of gvr_topk; cluster makes it a
// cluster kernel, one row per cluster of cfg.Cluster CTAs.
func newTopK(name string, cfg Config, withPred, withCand, cluster bool) (*topk, *ptx.Module) {
	m, e, sv := kernelModule(name, cfg)
	pScores := pointerParam(e, "scores", cfg.Scores.Size())
	pStride := e.Param("row_stride", ptx.U64)
	pLengths := pointerParam(e, "lengths", 4) // null: every row is row_stride long
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
	var pWork *ptx.Param
	if cfg.Groups > 1 {
		pWork = pointerParam(e, "workspace", 16) // GroupWorkspaceBytes a row, zero before the first launch
	}
	var pStats *ptx.Param
	if cfg.Instrument {
		pStats = pointerParam(e, "stats", 8) // u64 stamps
	}

	t := &topk{cta: newCTA(e, cfg.Target, cfg.BlockSize, sv), cfg: cfg}
	t.scores = cfg.Scores
	if cluster {
		t.perCluster(cfg.cluster())
		if cfg.Groups > 1 {
			t.perGroups(cfg.Groups)
		}
	}
	t.iters, t.passes, t.ncand, t.path, t.valid = t.constU32(0), t.constU32(0), t.constU32(0), t.constU32(PathCopy), t.constU32(0)
	if cfg.SureSet && cfg.Instrument {
		t.nsure = t.constU32(0)
	}
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
	t.topkShared = newTopKShared(&t.smem.layout, cfg, withCand, withCand && !withPred)
	if cluster {
		t.part = t.newClusterPart(cfg)
		if cfg.KeepOver {
			t.keep = t.newOverKeep()
		}
	}

	r := t.rowID()
	if pWork != nil {
		t.group = t.newGroupPart(pWork, r)
	}
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
	// length of the r%next_n-th new token. A null lengths is a dense
	// batch, every row row_stride long: then the launch starts without
	// the length's load, a memory round trip that everything after it
	// waits for (perf notes 139).
	n := t.s32()
	nextN := t.u32()
	e.Cvt(nextN, e.LdParam(pNextN))
	lengthsP := e.LdParam(pLengths)
	e.IfElse(t.setp(ptx.EQ, lengthsP, ptx.Imm(0)), func() {
		e.Mov(n, ptx.Imm(math.MaxInt32)) // the clamp makes it row_stride
	}, func() {
		lengths := t.u64()
		e.CvtaToGlobal(lengths, lengthsP)
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
	t.out.src = t.row
	t.out.offset = t.constU32(0)
	e.If(t.setp(ptx.NE, e.LdParam(pAbs), ptx.Imm(0)), func() { e.Mov(t.out.offset, start) })
	// The output's registers, which setupOut loads where Phase 1's first
	// loads hide the parameters' latency (perf notes 194).
	t.count, t.out.idx, t.out.vals, t.out.hasVals = t.u64(), t.u64(), t.u64(), t.pred()
	t.out.slots = cfg.K
	t.out.pages = t.newPageOut()
	if cfg.Instrument {
		t.stats = t.u64()
	}
	t.setupOut = func() {
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
		e.Mov(t.out.idx, t.elemAddr(t.global(pIdx), rk, 4).Base)
		vals := e.LdParam(pVals)
		e.Setp(t.out.hasVals, ptx.NE, vals, ptx.Imm(0))
		e.Mov(t.out.vals, ptx.Imm(0))
		e.If(t.out.hasVals, func() {
			g := t.u64()
			e.CvtaToGlobal(g, vals)
			e.Mov(t.out.vals, t.elemAddr(g, rk, 4).Base)
		})
		t.pageOutput(t.out.pages, pTable, pTableStride, pPageSize, pPages, r, rk, nextN)
		if cfg.Instrument {
			e.Mov(t.stats, t.elemAddr(t.global(pStats), r, StatsBytes).Base)
		}
	}
	if cfg.Sorted {
		// Every path stores its selection into the staging buffer; finish
		// sorts it into the output.
		t.out.stage = t.stage
		t.clearStaging(t.stage)
	}
	return t, m
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
	MarkP2Counted: "p2 counted", MarkP2Combined: "p2 combined", MarkP3Placed: "p3 placed", MarkP3Walked: "p3 walked",
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
		var sure ptx.Operand = ptx.Imm(0) // a record's every field written: its buffer may hold another kernel's
		if t.nsure.T != ptx.TypeInvalid {
			sure = t.nsure
		}
		e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(t.stats, StatsSure), sure)
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
	t.setupOut()
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
// exact path. One CTA per row holds a row of at most HeldMax() elements
// in shared memory and selects it there instead (heldSelect).
func (t *topk) body(phase1 func() guess) {
	e := t.e
	if t.pagesAfterSure() {
		// No sure candidates until Phase 3 says otherwise (splitFor4):
		// the count writePages starts from on every path. In shared
		// memory: a register from here to the end made ptxas spill.
		e.If(t.setp(ptx.EQ, t.tid, ptx.Imm(0)), func() {
			e.St(ptx.SpaceShared, ptx.U32, t.smem.at(t.split, 4), ptx.Imm(0))
		})
	}
	e.IfElse(t.setp(ptx.LE, t.n, t.k), func() {
		t.setupOut()
		t.leaderOnly()
		t.endGroups()
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
			t.loadGen()
			g := phase1()
			t.mark(MarkP1Done)
			t.awaitPart()
			t.stamp(1)
			v := t.phase2SecantSearch(g)
			t.endGroups()
			if t.cfg.Instrument {
				e.MovBits(t.thr, v.thr)
			}
			t.stamp(2)
			e.IfElse(v.found, func() {
				e.Mov(t.path, ptx.Imm(PathGVR))
				cleared := t.phase3Collect(v)
				t.stamp(3)
				t.leaderOnly()
				if t.cfg.DependentLaunch {
					// The kernel after this one may be scheduled from here,
					// to wait for this one's end: ~2 us of Phase 4 hide its
					// launch. Earlier, it shared the SMs with this one where
					// the rows stream (perf notes 111). A CTA that ends
					// without this counts as having issued it.
					t.e.GridDepLaunchDependents()
				}
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
		e.IfElse(t.setp(ptx.LE, t.n, ptx.Imm(int64(t.cfg.HeldMax()))), t.heldSelect, gvr)
	})
	t.finish()
}

// walkMine visits this CTA's share of the row at or above thr (or NaN),
// and maybe others: the whole row in global memory, or in a cluster kernel
// its slice, the part that did not fit only where Phase 2's first pass
// found it high, where it kept that (walkOver). Every pass at the same threshold
// visits the same elements per thread, in the same order, so a count from
// one pass tells where the next one's elements go. overUnroll is the
// vectors in flight a step in the walk over the part of a slice that did
// not fit (the row walk of a kernel without a cluster takes cfg.unroll()).
func (t *topk) walkMine(thr ptx.Reg, overUnroll int, visit func(x ptx.Reg, idx func() ptx.Reg)) {
	if t.part == nil {
		t.rowWalk(t.row, t.n, t.cfg.unroll(), visit)
		return
	}
	t.heldWalk(t.part.s, visit)
	t.walkOver(thr, overUnroll, visit)
}

// countMine counts this thread's elements of walkMine >= each of thrs (or
// NaN). With a keep it counts one threshold: the first pass's several go
// through countFirst.
func (t *topk) countMine(thrs []ptx.Reg) []ptx.Reg {
	if t.keep != nil && len(thrs) > 1 {
		panic("gen: countMine with a keep counts one threshold (countFirst counts the first pass's)")
	}
	return t.countGEWalk(func(visit func(x ptx.Reg, idx func() ptx.Reg)) { t.walkMine(thrs[0], t.cfg.unroll(), visit) }, thrs)
}

// rowTotals adds each of vals (per-thread u32 counts) over the row: across
// the CTA, and in a cluster kernel across the cluster. It returns the
// totals and, in a cluster kernel, the sums over the CTAs of lower rank
// (nil otherwise; where clusters share the row, over the CTAs of lower
// rank and those of the clusters before, and own is the cluster's
// totals), in every thread; and this thread's exclusive prefix of
// each over the CTA (excl) and the CTA's sum (cta), where Phase 3 places
// its candidates. With run (straight-line code only: reductionRun), the
// CTA's sums take one barrier instead of two. Where clusters share the
// row, during (if not nil) runs in every thread once the CTA's sums are
// out and before it waits for the others' (groupTotals), with this
// thread's prefixes and the CTA's sums.
func (t *topk) rowTotals(vals []ptx.Reg, run *reductionRun, during func(excl, cta []ptx.Reg)) (tot, below, excl, cta, own []ptx.Reg) {
	if run != nil {
		// The sums and the warps' offsets; the prefixes inside the warps,
		// which need no barrier, follow while the cluster's round is out.
		cta, excl = t.sumsIn(run, vals)
	} else {
		for _, v := range vals {
			ex, ct := t.blockExclusiveScan(v, t.reduce)
			excl, cta = append(excl, ex), append(cta, ct)
		}
	}
	cluster := t.part != nil && t.part.size > 1
	if cluster && t.group == nil {
		t.part.send(t.cta, cta)
	}
	if run != nil {
		for i, v := range vals {
			t.e.Add(excl[i], excl[i], t.warpExclusiveScan(v))
		}
	}
	if !cluster {
		return cta, nil, excl, cta, nil // one CTA holds the row: nothing to combine
	}
	if t.group != nil {
		// Every CTA of the row's clusters, through global memory: no
		// cluster round of its own.
		var hook func()
		if during != nil {
			hook = func() { during(excl, cta) }
		}
		tot, below, own = t.groupTotals(cta, hook)
		return tot, below, excl, cta, own
	}
	tot, below = t.part.receive(t.cta, len(vals), nil, nil)
	return tot, below, excl, cta, own
}

// finish sorts the selection into rank order (Sorted only), writes the
// number of valid outputs, min(K, n), if out_count is given, then records
// the last phase boundary and the stats.
func (t *topk) finish() {
	e := t.e
	if t.cfg.Sorted {
		t.sortStaged(t.stage, t.out, t.cfg.K, t.sel, t.reduce)
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
