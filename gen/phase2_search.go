package gen

// Phase 2, the threshold search: secant counting passes that bracket the
// K-th value until a threshold leaves between K and MaxCandidates
// candidates.

import (
	"github.com/gvr-go/gvr/ptx"
)

// verdict is what Phase 2 found, the same in every thread but mine.
type verdict struct {
	thr   ptx.Reg  // f32 the threshold
	found ptx.Pred // K <= count(x >= thr) <= MaxCandidates
	total ptx.Reg  // u32 that count
	mine  ptx.Reg  // u32 this thread's part of it
	below ptx.Reg  // u32 the part of CTAs of lower rank in the cluster (cluster kernels), and of the clusters before (Groups)
	own   ptx.Reg  // u32 this cluster's part (Groups; unset otherwise)
	excl  ptx.Reg  // u32 the part of the threads before this one in its CTA
	cta   ptx.Reg  // u32 this CTA's part
	sure  sureSet  // the candidates certain to be in the Top-K (Config.SureSet)
}

// sureSet is the part of the candidates that the first pass found to be
// in the Top-K: those >= thr (or NaN), where fewer than K are (has).
// Every one of them ranks before the K-th element, whatever the ties
// (all the elements before one of them in the Top-K order are >= thr
// too), so Phase 3 sets them apart and Phase 4 selects K - total among
// the rest. Where has is false, the set is every candidate (close), which
// Phase 3 walks as one part and Phase 4 selects from.
type sureSet struct {
	thr   ptx.Reg  // f32 the sure threshold (guess.sure)
	has   ptx.Pred // count(x >= thr) < K
	total ptx.Reg  // u32 that count
	mine  ptx.Reg  // u32 this thread's part of it
	below ptx.Reg  // u32 the part of CTAs of lower rank in the cluster
	excl  ptx.Reg  // u32 the part of the threads before this one in its CTA
	cta   ptx.Reg  // u32 this CTA's part
}

// newSureSet is the sure set at threshold thr from the first pass's
// counts there: this thread's (mine), the row's (total), the threads'
// before this one in its CTA (excl), the CTA's (cta) and, in a cluster,
// the CTAs' of lower rank (below's last).
func (t *topk) newSureSet(thr, mine, total, excl, cta ptx.Reg, below []ptx.Reg) sureSet {
	e := t.e
	s := sureSet{thr: thr, has: t.setp(ptx.LT, total, t.k), total: total, mine: mine, below: t.constU32(0), excl: excl, cta: cta}
	if below != nil {
		e.Mov(s.below, below[len(below)-1])
	}
	return s
}

// close makes a sure set that is not one (has false) every candidate of
// Phase 2's verdict v.
func (s sureSet) close(t *topk, v verdict) {
	t.e.Guarded(s.has.Not(), func() {
		t.e.Mov(s.thr, v.thr)
		t.e.Mov(s.total, v.total)
		t.e.Mov(s.mine, v.mine)
		t.e.Mov(s.below, v.below)
		t.e.Mov(s.excl, v.excl)
		t.e.Mov(s.cta, v.cta)
	})
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
	// Every row aims for the window, even one that would fit the buffer
	// whole: Phase 4 over every element of a row of 2.5-6K took 1.5-4.5
	// us more than over the ~1.25K a window holds (perf notes 144, 146).
	s := &search{t: t, g: g, lo: t.constU32(keyNegInf - 1), hi: t.constU32(keyPosInf + 1),
		thr: t.f32(), mine: t.u32(), total: t.u32(), below: t.constU32(0), excl: t.u32(), cta: t.u32(),
		found: t.falsePred(), measLo: t.falsePred(), measHi: t.falsePred()}
	if t.group != nil {
		s.own = t.constU32(0)
	}
	done := e.NewLabel("phase2_done")

	// First pass: every first point.
	// Its sums continue Phase 1's run of reductions: the first pass is
	// straight-line code, and lands in the window on most rows.
	pts := g.first[:]
	if t.cfg.SureSet {
		pts = append(pts, g.sure)
	}
	counts := t.countFirst(pts)
	t.mark(MarkP2Counted)
	// The counts' prefixes over the CTA come with their sums: Phase 3
	// places the candidates by them, with no block scan of its own.
	tot, below, excl, cta, own := t.rowTotals(counts, t.p1, t.earlyCollect(g))
	t.mark(MarkP2Combined)
	var sure sureSet
	if t.cfg.SureSet {
		sure = t.newSureSet(g.sure, counts[firstPoints], tot[firstPoints], excl[firstPoints], cta[firstPoints], below)
		counts, tot = counts[:firstPoints], tot[:firstPoints]
	}
	e.Add(t.iters, t.iters, ptx.Imm(1))
	e.Mov(s.total, ptx.Imm(0xFFFFFFFF))
	for i, p := range g.first {
		in := s.inWindow(tot[i])
		e.AndPred(in, in, t.setp(ptx.LT, tot[i], s.total))
		e.Guarded(in, func() {
			e.Mov(s.total, tot[i])
			e.Mov(s.thr, p)
			e.Mov(s.mine, counts[i])
			e.Mov(s.excl, excl[i])
			e.Mov(s.cta, cta[i])
			if below != nil {
				e.Mov(s.below, below[i])
			}
			if own != nil {
				e.Mov(s.own, own[i])
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
	tot, below, excl, cta, own = t.rowTotals([]ptx.Reg{s.mine}, nil, nil)
	cnt := tot[0]
	e.Mov(s.total, cnt)
	e.Mov(s.excl, excl[0])
	e.Mov(s.cta, cta[0])
	if below != nil {
		e.Mov(s.below, below[0])
	}
	if own != nil {
		e.Mov(s.own, own[0])
	}
	e.Add(t.iters, t.iters, ptx.Imm(1))
	e.Mov(s.found, s.inWindow(cnt))
	e.BraIf(s.found, done)
	s.record(s.thr, tk, cnt)
	s.next(done)
	e.BraUni(top)
	e.Place(done)
	v := verdict{thr: s.thr, found: s.found, total: s.total, mine: s.mine, below: s.below, own: s.own, excl: s.excl, cta: s.cta, sure: sure}
	if t.cfg.SureSet {
		sure.close(t, v)
	}
	return v
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
	own            ptx.Reg  // this cluster's part (Groups)
	excl, cta      ptx.Reg  // the part of the threads before this one in its CTA; the CTA's
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
