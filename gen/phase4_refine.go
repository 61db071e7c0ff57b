package gen

// Phase 4, the refinement: an exact selection of K among the candidates,
// in shared memory.

import (
	"github.com/gvr-go/gvr/ptx"
)

// phase4Refine selects exactly K of v.total candidates: radix select on
// their keys in shared memory, then by lowest index among those equal to
// the K-th key if not all of them fit.
func (t *topk) phase4Refine(v verdict) {
	e := t.e
	e.Comment("Phase 4: exact selection in shared memory")
	total, k, out := v.total, t.k, t.out
	if t.cfg.SureSet {
		// The candidates to select from come first in the buffer, the sure
		// ones after them (Phase 3's splitFor4), whose stores go out first
		// and travel during the select.
		total, k = t.u32(), t.u32()
		sure := t.u32()
		e.Ld(ptx.SpaceShared, total, t.smem.at(t.split, 0))
		e.Ld(ptx.SpaceShared, sure, t.smem.at(t.split, 4))
		e.Sub(k, t.k, sure)
		copySure := func() { t.copyCands(total, sure, t.out) }
		if t.sureOut != (ptx.Pred{}) { // unless the CTAs wrote them out (phase3Collect)
			e.If(t.sureOut.Not(), copySure)
		} else {
			copySure()
		}
		out = t.out.after(sure)
	}
	cands := t.candWalker(total)
	e.IfElse(t.setp(ptx.EQ, total, k), func() {
		// Exactly K candidates: all of them, in buffer order.
		t.copyCands(ptx.Reg{}, total, out)
	}, func() {
		// Inlined passes: the candidate walk is short, and this is the
		// common path, where a loop's few instructions per pass would show.
		// The digits split the candidates' key span, and after the first
		// one the K-th candidate's bin usually holds few enough
		// (smallBinMax) to rank them (smallWrite) instead of more passes.
		how := selectHow{small: true, cleared: true}
		span := t.guessSpan(v.thr)
		how.guess = &spanGuess{total: total, exact: func() keySpan { return t.spanOf(cands, t.reduce) }}
		how.span = &span
		t.mark(MarkP4Span)
		t.onMark = t.mark // exactSelect's own points
		t.exactSelect(cands, k, t.sel, out, t.passes, how)
		t.onMark = nil
	})
}

// copyCands writes the n candidates from buffer slot first on (0 where
// first is unset) to o's first n slots, in buffer order.
func (t *topk) copyCands(first, n ptx.Reg, o outRow) {
	e := t.e
	j := t.u32()
	e.For(j, t.tid, n, ptx.Imm(int64(t.threads)), func() {
		at := j
		if first.T != ptx.TypeInvalid {
			at = t.u32()
			e.Add(at, j, first)
		}
		b, i := t.loadCand(at)
		t.store(o, j, i, b)
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
