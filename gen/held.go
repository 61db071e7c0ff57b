package gen

// A held row: one no longer than Config.HeldMax() skips Phases 1-3 and is
// selected in shared memory (PathHeld).

import (
	"github.com/gvr-go/gvr/ptx"
)

// heldSelect selects the Top-K of a row of K < n <= HeldMax() elements
// (PathHeld): the row comes into the candidate buffer once, and Phase 4's
// exact selection runs over it. Phases 1-3 exist to cut a long row down to
// a few candidates, and a row of at most 2K elements is one they could
// cut by half at most; their fixed costs (the prediction's and the
// sample's scattered loads, two passes over the row) are more than the
// select's walks over the extra elements cost. Past 2K the walks cost
// more: at K = 2048 the four phases were 7-12% faster at 5120-6144
// elements, where these walks had won before Phases 1-3 got faster
// (perf notes 58-61, 144). No prediction is used. One CTA per row only: a
// cluster kernel's rows are long.
func (t *topk) heldSelect() {
	e := t.e
	e.Comment("a held row: selected in shared memory, without Phases 1-3")
	t.setupOut()
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
