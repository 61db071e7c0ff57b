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
//   - topk_radix: exact radix select over the row in global memory. It is
//     also the exact path of the two kernels above, taken when no threshold
//     can be bracketed (ties at the K-th value wider than MaxCandidates, say).
//
// Rows of length n <= K are copied whole, padded with index -1 (value -Inf).

// Paths a row can take, as reported by instrumentation.
const (
	pathCopy  = 0 // n <= K: every element
	pathGVR   = 1 // threshold bracketed, candidates refined in shared memory
	pathExact = 2 // radix select over the row
)

// Phase 2 tuning.
const (
	secantIters = 4   // secant steps before plain key bisection takes over
	damping     = 0.5 // the first secant step goes at most this far
	sampleSize  = 2048
)

// Instrumentation record per row (Config.Instrument): five %clock64 stamps
// at the phase boundaries, then u32 counters.
const (
	statsBytes       = 64
	statsPhase2Iters = 40 // counting passes in Phase 2
	statsRefinePass  = 44 // radix passes (Phase 4 or the exact path)
	statsCandidates  = 48 // candidates collected in Phase 3
	statsPath        = 52 // pathCopy, pathGVR or pathExact
	statsValidPred   = 56 // valid predicted indices seen by Phase 1
)

// topk is the state of one Top-K kernel under construction.
type topk struct {
	*cta
	cfg Config

	row    ptx.Reg // u64 global address of this CTA's row
	n      ptx.Reg // u32 row length, clamped to [0, row_stride]
	k      ptx.Reg // u32, K
	out    outRow
	sel    selectShared
	cand   struct{ bits, idx region }
	reduce region // block reductions of up to four values

	stats  ptx.Reg    // u64 address of this row's stats record (Instrument)
	stamps [5]ptx.Reg // u64 %clock64 at the phase boundaries (Instrument)
	iters  ptx.Reg    // u32 Phase 2 passes
	passes ptx.Reg    // u32 radix passes
	ncand  ptx.Reg    // u32 candidates
	path   ptx.Reg    // u32
	valid  ptx.Reg    // u32 valid predicted indices
}

// guess is what Phase 1 gives Phase 2: a first threshold and two anchors
// (value, estimated count >= value) for the secant.
type guess struct {
	t, lo, cntLo, hi, cntHi ptx.Reg // f32
}

// newTopK declares the parameters of a Top-K kernel and sets up its row.
// withPred adds the prediction parameters of gvr_topk.
func newTopK(name string, cfg Config, withPred bool) (*topk, *ptx.Module, predParams) {
	m, e, sv := kernelModule(name, cfg)
	pScores := e.Param("scores", ptx.U64)
	pStride := e.Param("row_stride", ptx.U64)
	pLengths := e.Param("lengths", ptx.U64)
	var pp predParams
	if withPred {
		pp.pred = e.Param("pred", ptx.U64)
		pp.stride = e.Param("pred_stride", ptx.U64)
		pp.count = e.Param("pred_count", ptx.U64)
	}
	pIdx := e.Param("out_idx", ptx.U64)
	pVals := e.Param("out_vals", ptx.U64)
	var pStats *ptx.Param
	if cfg.Instrument {
		pStats = e.Param("stats", ptx.U64)
	}

	t := &topk{cta: newCTA(e, cfg.Target, cfg.BlockSize, sv), cfg: cfg}
	t.iters, t.passes, t.ncand, t.path, t.valid = t.constU32(0), t.constU32(0), t.constU32(0), t.constU32(pathCopy), t.constU32(0)
	t.stamp(0)
	t.k = t.constU32(int64(cfg.K))
	t.cand.bits = t.smem.alloc("cand_bits", 4*cfg.MaxCandidates, 16)
	t.cand.idx = t.smem.alloc("cand_idx", 4*cfg.MaxCandidates, 16)
	t.sel = t.allocSelect(cfg.Bins)
	t.reduce = t.smem.alloc("reduce", 4*4*t.warps(), 16)

	r := t.rowID()
	scores := t.global(pScores)
	stride := e.LdParam(pStride)
	t.row = t.rowAddr(scores, stride, r)

	// n = clamp(lengths[r], 0, row_stride): a bad length never reads
	// outside the row.
	lengths := t.global(pLengths)
	n := t.s32()
	e.Ld(ptx.SpaceGlobal, n, t.elemAddr(lengths, r, 4))
	e.Max(n, n, ptx.Imm(0))
	t.n = t.u32()
	e.Cvt(t.n, stride)
	e.Min(t.n, t.n, n)

	// Output row r: K slots of indices and, if out_vals is not null, values.
	rk := t.u32()
	e.Mul(rk, r, ptx.Imm(int64(cfg.K)))
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
	if cfg.Instrument {
		t.stats = t.u64()
		e.Mov(t.stats, t.elemAddr(t.global(pStats), r, statsBytes).Base)
	}
	return t, m, pp
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
	t.e.Mov(t.stamps[i], ptx.Clock64)
	for j := i + 1; j < len(t.stamps); j++ {
		t.e.Mov(t.stamps[j], t.stamps[i])
	}
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
		}{{statsPhase2Iters, t.iters}, {statsRefinePass, t.passes}, {statsCandidates, t.ncand},
			{statsPath, t.path}, {statsValidPred, t.valid}} {
			e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(t.stats, f.off), f.v)
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
			b, i := t.u32(), t.u32()
			e.Ld(ptx.SpaceShared, b, t.smem.elem(t.cand.bits, j, 4))
			e.Ld(ptx.SpaceShared, i, t.smem.elem(t.cand.idx, j, 4))
			visit(elem{bits: b, idx: func() ptx.Reg { return i }})
		})
	}
}

// copyShortRow handles n <= K: every element is selected, in index order,
// and the slots past n get index -1 and value -Inf.
func (t *topk) copyShortRow() {
	e := t.e
	j := t.u32()
	e.For(j, t.tid, t.k, ptx.Imm(int64(t.threads)), func() {
		e.IfElse(t.setp(ptx.LT, j, t.n), func() {
			x := t.f32()
			e.LdNC(x, t.elemAddr(t.row, j, 4))
			t.store(t.out, j, j, t.bitsOf(x))
		}, func() {
			t.store(t.out, j, t.constU32(-1), t.constU32(0xFF800000))
		})
	})
}

// genGVR: gvr_topk(scores, row_stride, lengths, pred, pred_stride,
// pred_count, out_idx, out_vals[, stats]).
func genGVR(cfg Config) (*Kernel, error) {
	t, m, pp := newTopK("gvr_topk", cfg, true)
	t.body(func() guess {
		g, ok := t.phase1PreIndexStats(pp)
		// Without a usable prediction (pred_count 0, or no valid index with
		// a finite score) guess from a sample of the row instead.
		e := t.e
		e.If(ok.Not(), func() {
			s := t.phase1SampleStats()
			for _, p := range [][2]ptx.Reg{{g.t, s.t}, {g.lo, s.lo}, {g.cntLo, s.cntLo}, {g.hi, s.hi}, {g.cntHi, s.cntHi}} {
				e.Mov(p[0], p[1])
			}
		})
		return g
	})
	return finish("gvr_topk", cfg, m, t.cta)
}

// genFallback: topk_fallback(scores, row_stride, lengths, out_idx,
// out_vals[, stats]).
func genFallback(cfg Config) (*Kernel, error) {
	t, m, _ := newTopK("topk_fallback", cfg, false)
	t.body(t.phase1SampleStats)
	return finish("topk_fallback", cfg, m, t.cta)
}

// genRadix: topk_radix(scores, row_stride, lengths, out_idx, out_vals[,
// stats]).
func genRadix(cfg Config) (*Kernel, error) {
	t, m, _ := newTopK("topk_radix", cfg, false)
	e := t.e
	e.IfElse(t.setp(ptx.LE, t.n, t.k), t.copyShortRow, func() {
		e.Mov(t.path, ptx.Imm(pathExact))
		t.exactPath()
	})
	t.stamp(4)
	t.writeStats()
	return finish("topk_radix", cfg, m, t.cta)
}

// body emits the GVR pipeline with the given Phase 1.
func (t *topk) body(phase1 func() guess) {
	e := t.e
	e.IfElse(t.setp(ptx.LE, t.n, t.k), t.copyShortRow, func() {
		g := phase1()
		t.stamp(1)
		thr, found, mine := t.phase2SecantSearch(g)
		t.stamp(2)
		e.IfElse(found, func() {
			e.Mov(t.path, ptx.Imm(pathGVR))
			total := t.phase3Collect(thr, mine)
			t.stamp(3)
			t.phase4Refine(total)
		}, func() {
			e.Mov(t.path, ptx.Imm(pathExact))
			t.exactPath()
		})
	})
	t.stamp(4)
	t.writeStats()
}

// exactPath selects the row's Top-K by radix select over global memory.
func (t *topk) exactPath() {
	t.exactSelect(t.rowWalker(), t.k, t.sel, t.out, t.passes)
}

// phase1PreIndexStats: min, max and mean of the scores at the predicted
// indices (the previous step's Top-K). Indices outside [0, n) are skipped,
// duplicates count as often as they appear, and only finite scores enter
// the statistics. Min and max are taken on order-preserving keys, so the
// warp reductions are single redux.sync instructions where the target has
// them. ok is false when there is nothing to take statistics of.
func (t *topk) phase1PreIndexStats(pp predParams) (guess, ptx.Pred) {
	e := t.e
	e.Comment("Phase 1: pre-indexed statistics")
	pred := t.global(pp.pred)
	pstride := e.LdParam(pp.stride)
	prow := t.rowAddr(pred, pstride, t.rowID())
	m := t.u32()
	e.Cvt(m, e.LdParam(pp.count))

	kmin, kmax, cnt := t.constU32(0xFFFFFFFF), t.constU32(0), t.constU32(0)
	sum := t.f32()
	e.Mov(sum, ptx.Float(0))
	j := t.u32()
	e.For(j, t.tid, m, ptx.Imm(int64(t.threads)), func() {
		p := t.u32()
		e.LdNC(p, t.elemAddr(prow, j, 4))
		// As unsigned, a negative index is out of range too.
		e.If(t.setp(ptx.LT, p, t.n), func() {
			x := t.f32()
			e.LdNC(x, t.elemAddr(t.row, p, 4))
			t.addFinite(x, kmin, kmax, cnt, sum)
		})
	})
	r := t.blockReduceN([]string{"min", "max", "add", "add"}, []ptx.Reg{kmin, kmax, cnt, sum}, t.reduce)
	e.Mov(t.valid, r[2])
	ok := t.setp(ptx.GT, r[2], ptx.Imm(0))
	g := t.newGuess()
	e.If(ok, func() {
		c := t.f32()
		e.Cvt(c, r[2])
		e.Div(g.t, r[3], c)
		t.anchors(g, r[0], r[1], c)
	})
	return g, ok
}

// addFinite accumulates x into the statistics if it is finite.
func (t *topk) addFinite(x, kmin, kmax, cnt, sum ptx.Reg) {
	e := t.e
	b := t.bitsOf(x)
	abs := t.u32()
	e.And(abs, b, ptx.Imm(0x7FFFFFFF))
	e.If(t.setp(ptx.LT, abs, ptx.Imm(0x7F800000)), func() {
		k := t.key(b)
		e.Min(kmin, kmin, k)
		e.Max(kmax, kmax, k)
		e.Add(cnt, cnt, ptx.Imm(1))
		e.Add(sum, sum, x)
	})
}

func (t *topk) newGuess() guess {
	return guess{t: t.f32(), lo: t.f32(), cntLo: t.f32(), hi: t.f32(), cntHi: t.f32()}
}

// anchors sets the secant anchors from the smallest and largest key seen:
// an estimated count of cntLo at the smallest, 1 at the largest. Phase 2
// replaces them with measured counts as it goes.
func (t *topk) anchors(g guess, kmin, kmax, cntLo ptx.Reg) {
	e := t.e
	e.Mov(g.lo, t.keyToFloat(kmin))
	e.Mov(g.hi, t.keyToFloat(kmax))
	e.Mov(g.cntLo, cntLo)
	e.Mov(g.cntHi, ptx.Float(1))
}

// phase1SampleStats guesses without a prediction: it samples up to
// sampleSize elements at an even stride into shared memory and takes the
// sample's quantile at the Phase 2 target count as the first threshold.
func (t *topk) phase1SampleStats() guess {
	e := t.e
	e.Comment("Phase 1 (no prediction): sample statistics")
	size := min(sampleSize, t.cfg.MaxCandidates)
	s := t.u32()
	e.Min(s, t.n, ptx.Imm(int64(size)))
	kmin, kmax, cnt := t.constU32(0xFFFFFFFF), t.constU32(0), t.constU32(0)
	sum := t.f32()
	e.Mov(sum, ptx.Float(0))
	j := t.u32()
	e.For(j, t.tid, s, ptx.Imm(int64(t.threads)), func() {
		// idx = j*n/s: s <= n, so every sample is a distinct element.
		w := t.u64()
		e.MulWide(w, j, t.n)
		s64 := t.u64()
		e.Cvt(s64, s)
		e.Div(w, w, s64)
		idx := t.u32()
		e.Cvt(idx, w)
		x := t.f32()
		e.LdNC(x, t.elemAddr(t.row, idx, 4))
		b := t.bitsOf(x)
		e.St(ptx.SpaceShared, ptx.U32, t.smem.elem(t.cand.bits, j, 4), b)
		t.addFinite(x, kmin, kmax, cnt, sum)
	})
	r := t.blockReduceN([]string{"min", "max", "add"}, []ptx.Reg{kmin, kmax, cnt}, t.reduce)
	// The sample's R-th largest, R = ceil(target*s/n), estimates the
	// threshold whose count is the target.
	R := t.u32()
	w := t.u64()
	e.MulWide(w, s, ptx.Imm(int64(t.target())))
	n64 := t.u64()
	e.Cvt(n64, t.n)
	e.Add(w, w, n64)
	e.Sub(w, w, ptx.Imm(1))
	e.Div(w, w, n64)
	e.Cvt(R, w)
	e.Max(R, R, ptx.Imm(1))
	e.Min(R, R, s)
	q := t.radixSelect(t.keysOf(t.sampleWalker(s)), R, t.sel, ptx.Reg{})
	g := t.newGuess()
	// A NaN quantile (a row of mostly NaN) is no threshold: Phase 2
	// bisects from a NaN guess.
	e.Mov(g.t, ptx.FloatBits(0x7FC00000))
	e.If(t.setp(ptx.LE, q.r, ptx.Imm(keyPosInf)), func() { e.Mov(g.t, t.keyToFloat(q.r)) })
	n := t.f32()
	e.Cvt(n, t.n)
	e.IfElse(t.setp(ptx.GT, r[2], ptx.Imm(0)), func() { t.anchors(g, r[0], r[1], n) }, func() {
		t.anchors(g, t.constU32(keyNegInf), t.constU32(keyPosInf), n)
	})
	return g
}

// sampleWalker visits the first s sampled values in shared memory.
func (t *topk) sampleWalker(s ptx.Reg) walker {
	return func(visit func(elem)) {
		e := t.e
		j := t.u32()
		e.For(j, t.tid, s, ptx.Imm(int64(t.threads)), func() {
			b := t.u32()
			e.Ld(ptx.SpaceShared, b, t.smem.elem(t.cand.bits, j, 4))
			visit(elem{bits: b, idx: func() ptx.Reg { return j }})
		})
	}
}

// target is the count Phase 2 aims for: inside [K, MaxCandidates], nearer
// K, so that Phase 4 has few candidates but one more pass is unlikely.
func (t *topk) target() int {
	return t.cfg.K + (t.cfg.MaxCandidates-t.cfg.K)/4
}

// phase2SecantSearch finds a threshold thr with K <= count(x >= thr) <=
// MaxCandidates. Each iteration is one counting pass; the next guess is the
// secant through the two anchors (value, count) toward the target count,
// damped on the first step. A safe bracket (lo, hi) of keys is kept from
// measured counts: a guess outside it, a NaN guess, or any guess after
// secantIters passes is replaced by the key midpoint, so the search ends
// within 32 bisection passes. found is false when lo and hi meet, i.e. no
// threshold brackets the K-th key (ties wider than MaxCandidates, or NaN
// mass at the top); the caller then takes the exact path. mine is this
// thread's count at thr, which Phase 3 reuses instead of counting again.
func (t *topk) phase2SecantSearch(g guess) (thr ptx.Reg, found ptx.Pred, mine ptx.Reg) {
	e := t.e
	e.Comment("Phase 2: secant threshold search")
	C := int64(t.cfg.MaxCandidates)
	// Rows that fit the candidate buffer whole: -Inf counts every element.
	e.If(t.setp(ptx.LE, t.n, ptx.Imm(C)), func() { e.Mov(g.t, ptx.FloatBits(0xFF800000)) })

	lo, hi := t.constU32(keyNegInf-1), t.constU32(keyPosInf+1)
	thr = t.f32()
	e.Mov(thr, g.t)
	found = t.pred()
	e.SetpT(ptx.U32, found, ptx.NE, t.k, t.k) // false
	done := e.NewLabel("phase2_done")
	top := e.NewLabel("phase2_pass")
	e.Place(top)

	// Keep the guess strictly inside the bracket, else bisect.
	tk := t.key(t.bitsOf(thr))
	out := t.setp(ptx.LE, tk, lo)
	e.OrPred(out, out, t.setp(ptx.GE, tk, hi))
	e.If(out, func() {
		e.Sub(tk, hi, lo)
		e.Shr(tk, tk, ptx.Imm(1))
		e.Add(tk, tk, lo)
		e.Mov(thr, t.keyToFloat(tk))
	})

	mine = t.countGE(t.row, t.n, thr, t.cfg.unroll())
	cnt := t.blockReduce("add", mine, t.reduce)
	e.Add(t.iters, t.iters, ptx.Imm(1))
	ok := t.setp(ptx.GE, cnt, t.k)
	e.AndPred(ok, ok, t.setp(ptx.LE, cnt, ptx.Imm(C)))
	e.Mov(found, ok)
	e.BraIf(ok, done)

	fc := t.f32()
	e.Cvt(fc, cnt)
	e.IfElse(t.setp(ptx.GT, cnt, ptx.Imm(C)), func() {
		e.Mov(lo, tk)
		e.Mov(g.lo, thr)
		e.Mov(g.cntLo, fc)
	}, func() {
		e.Mov(hi, tk)
		e.Mov(g.hi, thr)
		e.Mov(g.cntHi, fc)
	})
	gap := t.u32()
	e.Sub(gap, hi, lo)
	e.BraIf(t.setp(ptx.LE, gap, ptx.Imm(1)), done) // found stays false

	// Next guess: thr = lo + frac*(hi-lo), frac = (cntLo-target)/(cntLo-cntHi).
	e.IfElse(t.setp(ptx.LT, t.iters, ptx.Imm(secantIters)), func() {
		frac, d := t.f32(), t.f32()
		e.Sub(frac, g.cntLo, ptx.Float(float32(t.target())))
		e.Sub(d, g.cntLo, g.cntHi)
		e.Div(frac, frac, d)
		e.Guarded(t.setp(ptx.EQ, t.iters, ptx.Imm(1)), func() {
			e.Min(frac, frac, ptx.Float(damping))
		})
		e.Sub(d, g.hi, g.lo)
		e.Mad(thr, frac, d, g.lo)
	}, func() {
		e.Mov(thr, ptx.FloatBits(0x7FC00000)) // NaN: bisect
	})
	e.BraUni(top)
	e.Place(done)
	return thr, found, mine
}

// phase3Collect writes every element >= thr (or NaN) into the candidate
// buffer. Each thread's count from Phase 2's last pass gives, by a block
// prefix sum, where its candidates go: no ballots, no atomics, no second
// counting pass, and the same order every run.
func (t *topk) phase3Collect(thr, mine ptx.Reg) ptx.Reg {
	e := t.e
	e.Comment("Phase 3: ballot-free candidate collection")
	pos, total := t.blockExclusiveScan(mine, t.sel.scratch)
	e.Mov(t.ncand, total)
	t.rowWalk(t.row, t.n, t.cfg.unroll(), func(x ptx.Reg, idx func() ptx.Reg) {
		e.If(t.setp(ptx.GEU, x, thr), func() {
			e.St(ptx.SpaceShared, ptx.U32, t.smem.elem(t.cand.bits, pos, 4), t.bitsOf(x))
			e.St(ptx.SpaceShared, ptx.U32, t.smem.elem(t.cand.idx, pos, 4), idx())
			e.Add(pos, pos, ptx.Imm(1))
		})
	})
	t.sync()
	return total
}

// phase4Refine selects exactly K of the total candidates: radix select on
// their keys in shared memory, then by lowest index among those equal to
// the K-th key if not all of them fit.
func (t *topk) phase4Refine(total ptx.Reg) {
	e := t.e
	e.Comment("Phase 4: exact selection in shared memory")
	cands := t.candWalker(total)
	e.IfElse(t.setp(ptx.EQ, total, t.k), func() {
		// Exactly K candidates: all of them, in buffer order.
		j := t.u32()
		e.For(j, t.tid, total, ptx.Imm(int64(t.threads)), func() {
			b, i := t.u32(), t.u32()
			e.Ld(ptx.SpaceShared, b, t.smem.elem(t.cand.bits, j, 4))
			e.Ld(ptx.SpaceShared, i, t.smem.elem(t.cand.idx, j, 4))
			t.store(t.out, j, i, b)
		})
	}, func() {
		t.exactSelect(cands, t.k, t.sel, t.out, t.passes)
	})
}
