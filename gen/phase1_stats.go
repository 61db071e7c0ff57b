package gen

// Phase 1, pre-indexed statistics: the first guess of the threshold,
// from the scores at the predicted indices and a strided row sample.

import (
	"github.com/gvr-go/gvr/ptx"
)

// guess is what Phase 1 gives Phase 2: the thresholds its first pass counts,
// and two anchors (value, estimated count >= value) for the secant.
type guess struct {
	first                [firstPoints]ptx.Reg // f32
	lo, cntLo, hi, cntHi ptx.Reg              // f32
	target               ptx.Reg              // f32: the count Phase 2 aims for (sample.target)
	// sure is a threshold the first pass also counts (Config.SureSet),
	// estimated to have sureShare*K elements at or above it: if fewer than
	// K are, each of them is in the Top-K, and Phase 4 selects among the
	// others only (sureSet).
	sure ptx.Reg // f32
}

// sureShare is the share of K the sure threshold (guess.sure) aims for:
// low enough that the sample's estimate rarely puts K or more above it
// (then nothing is sure), high enough to take most of the Top-K out of
// Phase 4's select (0.75 before perf notes 102).
const sureShare = 0.85

// firstPoints is how many thresholds Phase 2's first pass counts at once: a
// counting pass is memory-latency-bound, with issue slots to spare for one
// more compare per element, and one of two points is far more likely to land
// in [K, MaxCandidates] than a single guess. (Four points made the pass
// instruction-bound: +45% at N = 256K on an H200.)
const firstPoints = 2

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
	//
	// The output's parameters load first (setupOut): the values' loads
	// wait for the indices, loading since the kernel's start, and the
	// parameters' latency passes under theirs (perf notes 194).
	t.setupOut()
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
	t.sampleGuess(g, smp)
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
	// The histogram is counted into past the barriers of the sample's
	// reduction or round.
	t.clearShared(t.histOf(t.sampleHist), sampleBins)
	g := t.newGuess()
	smp := t.sampleRow()
	t.startPart()
	// The output's parameters load once the sample's loads are out, their
	// latency under the sample's (perf notes 194).
	t.setupOut()
	if t.part != nil && t.part.size > 1 {
		t.gatherSample(smp, nil, nil)
	} else {
		smp.finish()
	}
	// The sample is in (loaded, and reduced or gathered); its estimate
	// follows. At batch 1 on an H100 the first takes 0.9-1.8 us (in a
	// cluster mostly the gathering round, perf notes 159), the estimate
	// ~0.55 (perf notes 128).
	t.mark(MarkP1Values)
	t.histogramGuess(g, smp)
	t.mark(MarkP1Sample)
	return g
}

// sampleGuess sets g from a strided sample of the row: estimateThreshold
// over the sample's range gives the anchors, and the first pass counts the
// points whose estimated counts are 1 and 1.6 times the target, so that it
// lands in [K, MaxCandidates] when the estimate is off by a factor between
// 0.42 and 2 (0.5 and 2.4 at a dense sample's target).
func (t *topk) sampleGuess(g guess, smp *sample) {
	e := t.e
	e.Mov(g.target, smp.target)
	e.Mov(g.lo, smp.rng.min)
	e.Mov(g.hi, smp.rng.max)
	t.storeSampleTop(smp)
	pts := [4]ptx.Reg{t.f32(), t.f32(), t.f32(), t.f32()}
	t.evenPoints(pts, g.lo, g.hi)
	t.estimateThreshold(smp, g, pts, predRounds)
	// Every point, and the anchors, from the target's bracket.
	t.firstPoints(g, func(ptx.Reg) guess { return g })
}

// firstShares are the estimated counts of the first pass's points, as
// multiples of the target.
var firstShares = [firstPoints]float32{1, 1.6}

// firstPoints sets the points the first pass counts: the ones whose
// estimated counts are firstShares of g's target and, with the sure set,
// the sure threshold, each by the log-count secant within bracket(its
// count), and g's anchors (Phase 2's first secant) to the target's
// bracket. A warp of its own works out each point (bracket is emitted in
// it) and hands it to the others through shared memory, warp 0 the
// anchors too: the points' chains of dependent instructions run side by
// side, and the other warps, four to a scheduler, issue none of them
// (perf notes 128: the fallback's estimate 0.9 -> 0.55 us at batch 1,
// where every warp worked out every point).
func (t *topk) firstPoints(g guess, bracket func(x ptx.Reg) guess) {
	e := t.e
	words := g.words()
	points := len(words) - 4 // then the anchors
	word := func(i int) ptx.Addr { return t.smem.at(t.guessOut, 4*i) }
	// With fewer warps than points (small blocks), warp w works out
	// points w, w+warps, ...
	warps := t.threads / warpSize
	for first := 0; first < points; first += warps {
		e.If(t.setp(ptx.LT, t.warp, ptx.Imm(int64(min(warps, points-first)))), func() {
			p := t.u32() // my point: words[p]
			e.Add(p, t.warp, ptx.Imm(int64(first)))
			// My point's count: the target times its share, or the sure
			// threshold's.
			var f ptx.Operand = ptx.Float(firstShares[0])
			for i := 1; i < firstPoints; i++ {
				fi := t.f32()
				e.Selp(fi, ptx.Float(firstShares[i]), f, t.setp(ptx.EQ, p, ptx.Imm(int64(i))))
				f = fi
			}
			x := t.f32()
			e.Mul(x, g.target, f)
			if t.cfg.SureSet {
				sure := ptx.Float(float32(sureShare * float64(t.cfg.K)))
				e.Selp(x, sure, x, t.setp(ptx.EQ, p, ptx.Imm(firstPoints)))
			}
			b := bracket(x)
			pt := t.f32()
			t.logSecant(pt, b, x, false, ptx.Pred{})
			e.If(t.setp(ptx.EQ, t.lane, ptx.Imm(0)), func() {
				e.St(ptx.SpaceShared, ptx.F32, t.smem.elem(t.guessOut, p, 4), pt)
				e.If(t.setp(ptx.EQ, p, ptx.Imm(0)), func() {
					for i, w := range []ptx.Reg{b.lo, b.cntLo, b.hi, b.cntHi} {
						e.St(ptx.SpaceShared, ptx.F32, word(points+i), w)
					}
				})
			})
		})
	}
	t.sync()
	for i, w := range words {
		e.Ld(ptx.SpaceShared, w, word(i))
	}
}

// guessWords is how many words a guess's points and anchors take at most
// (guess.words).
const guessWords = firstPoints + 1 + 4

// words are g's points (the sure one last, if any) and its anchors (lo,
// cntLo, hi, cntHi), not its target: the order firstPoints hands them over
// in.
func (g guess) words() []ptx.Reg {
	w := append([]ptx.Reg{}, g.first[:]...)
	if g.sure.T != ptx.TypeInvalid {
		w = append(w, g.sure)
	}
	return append(w, g.lo, g.cntLo, g.hi, g.cntHi)
}

// histogramGuess is sampleGuess without a prediction: the sample's
// histogram (countSample) brackets each count the first pass aims for
// between two bin edges, 1/64 of the range apart, and the log-count secant
// within that bracket gives its point; the sure threshold too, which
// sampleGuess extrapolates from the target's bracket instead. The fallback
// counts no predicted minimum, so its estimate needs the precision of
// four rounds of evenPoints (1/625 of the range), and those rounds, two
// block reductions each, took 0.7-1 us more than the histogram; with a
// prediction, the histogram costs as much as the two rounds sampleGuess
// takes there (perf notes 113).
func (t *topk) histogramGuess(g guess, smp *sample) {
	e := t.e
	e.Mov(g.target, smp.target)
	t.storeSampleTop(smp)
	width := t.countSample(smp)
	// Each point's warp scans the histogram, past countSample's barrier.
	t.firstPoints(g, func(x ptx.Reg) guess { return t.scanSample(smp, width).bracket(x) })
}

// storeSampleTop keeps the sample's largest value's key, from which Phase
// 4 guesses its span (guessSpan).
func (t *topk) storeSampleTop(smp *sample) {
	e := t.e
	e.If(t.setp(ptx.EQ, t.tid, ptx.Imm(0)), func() {
		e.St(ptx.SpaceShared, ptx.U32, t.smem.at(t.sampleTop, 0), t.key(t.bitsOf(smp.rng.max)))
	})
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
	t      *topk
	s      ptx.Reg   // u32 samples taken
	points int       // s where it is known when the kernel is generated, else 0
	vals   []ptx.Reg // f32
	scale  ptx.Reg   // f32: n / samples
	rng    valueRange
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
	pts := per * t.threads
	s, stride := t.u32(), t.u32()
	fixed := t.cfg.K >= pts
	if fixed {
		// n > K >= pts on this path: the sample takes every point, and
		// the stride is a division by a constant, which ptx makes a
		// shift where it is a power of two; a register divisor is ptxas's
		// generic division, on the way to the sample's loads.
		e.Mov(s, ptx.Imm(int64(pts)))
		e.Div(stride, t.n, ptx.Imm(int64(pts)))
	} else {
		e.Min(s, t.n, ptx.Imm(int64(pts)))
		e.Div(stride, t.n, s) // s >= 1: this path has n > K
	}
	// In runs: j = R*q + r at R*d*q + r, i.e. j*d - r*(d-1). Single: j*d.
	// Dense: at least 16 points expected in the Top-K (8 distinct in runs).
	dense := t.setp(ptx.LE, stride, ptx.Imm(int64(max(1, t.cfg.K/16))))
	back := t.u32()
	e.Sub(back, stride, ptx.Imm(1))
	e.Selp(back, back, ptx.Imm(0), dense)
	smp := &sample{t: t, s: s, scale: t.f32(), target: t.f32(), end: s}
	if fixed {
		smp.points = pts
	}
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
	fn := t.f32()
	e.Cvt(fn, t.n)
	if p := smp.points; p > 0 && p&(p-1) == 0 {
		// A power of two's reciprocal is exact: the same quotient without
		// a division.
		e.Mul(smp.scale, fn, ptx.Float(1/float32(p)))
		return
	}
	fs := t.f32()
	e.Cvt(fs, smp.s)
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
		// The four counts go two to a word, in its 16-bit halves: the
		// sample has at most sampleSize points, so no half carries, and the
		// reduction takes two values instead of four (a warp reduction
		// each, serialised through one register in the SASS).
		if samplePoints(t.threads) >= 1<<16 {
			panic("gen: a sample count past a 16-bit half")
		}
		pairs := []ptx.Reg{t.constU32(0), t.constU32(0)}
		for i, p := range pts {
			c, one := pairs[i/2], ptx.Imm(int64(1)<<(16*(i%2)))
			for _, v := range s.vals {
				e.Guarded(t.setp(ptx.GEU, v, p), func() { e.Add(c, c, one) })
			}
		}
		r := t.reduceIn(t.p1, []string{"add", "add"}, pairs)
		est := make([]ptx.Reg, 4)
		for i := range est {
			c := t.u32()
			if i%2 == 0 {
				e.And(c, r[i/2], ptx.Imm(0xFFFF))
			} else {
				e.Shr(c, r[i/2], ptx.Imm(16))
			}
			est[i] = t.f32()
			e.Cvt(est[i], c)
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

// sampleBins is how many equal bins of the sample's value range its
// histogram has (countSample), sampleBins/32 a lane of a warp: the
// first pass's points are interpolated within one bin, 1/64 of the range.
const sampleBins = 64

// sampleHist is the sample's histogram as a warp holds it after
// scanSample: lane l has bins B-1-P*l-q, q < P (B = sampleBins, P =
// B/32, the top bins in lane 0), and est[q], the row count estimated at or
// above bin B-1-P*l-q's lower edge.
type sampleHist struct {
	t       *topk
	smp     *sample
	est     []ptx.Reg // f32, P of them
	w       ptx.Reg   // f32: a bin's width
	n       ptx.Reg   // f32: the row's length, the count at or above lo
	perLane int
}

// countSample counts the sample into sampleBins equal bins of its range
// [min, max] in shared memory (a bin per value, NaN and values at max in
// the top one, -Inf, which stands for no sample, in none), then a barrier,
// and returns the range's width. The counts are exact, so the estimate,
// like its output, does not depend on the order of the adds.
func (t *topk) countSample(smp *sample) (width ptx.Reg) {
	e := t.e
	B := int64(sampleBins)
	width = t.f32()
	inv := t.f32()
	e.Sub(width, smp.rng.max, smp.rng.min)
	e.Div(inv, ptx.Float(float32(B)), width) // +Inf where every value is equal: all go to the top bin
	for _, v := range smp.vals {
		// max.f32 takes 0 over NaN; min, B-1 over +Inf.
		f := t.f32()
		e.Sub(f, v, smp.rng.min)
		e.Mul(f, f, inv)
		e.Max(f, f, ptx.Float(0))
		e.Min(f, f, ptx.Float(float32(B-1)))
		bin := t.u32()
		e.Cvt(bin, f)
		e.Selp(bin, ptx.Imm(B-1), bin, t.setp(ptx.GEU, v, smp.rng.max))
		e.Guarded(t.setp(ptx.GEU, v, smp.rng.min), func() {
			e.Red(ptx.SpaceShared, "add", ptx.U32, t.smem.elem(t.sampleHist, bin, 4), ptx.Imm(1))
		})
	}
	t.sync()
	return width
}

// scanSample, in a warp past countSample's barrier, takes the counts at or
// above each bin's lower edge: a warp scan of the bins from the top. width
// is the sample's range's (countSample's).
func (t *topk) scanSample(smp *sample, width ptx.Reg) *sampleHist {
	e := t.e
	B := int64(sampleBins)
	P := sampleBins / warpSize
	h := &sampleHist{t: t, smp: smp, w: t.f32(), n: t.f32(), perLane: P}
	e.Cvt(h.n, t.n)
	e.Mul(h.w, width, ptx.Float(1/float32(B)))
	// My bins, from the top: B-1-P*lane down to B-P*(lane+1).
	top := t.u32()
	e.Mul(top, t.lane, ptx.Imm(int64(P)))
	e.Sub(top, ptx.Imm(B-1), top)
	at := t.smem.elem(t.sampleHist, top, 4)
	cnt := make([]ptx.Reg, P)
	sum := t.constU32(0)
	for q := range P {
		cnt[q] = t.u32()
		e.Ld(ptx.SpaceShared, cnt[q], ptx.At(at.Base, at.Off-int64(4*q)))
		e.Add(sum, sum, cnt[q])
	}
	// atOrAbove: the samples in my bins and every bin above them.
	atOrAbove := t.warpInclusiveScan(sum)
	h.est = make([]ptx.Reg, P)
	for q := P - 1; q >= 0; q-- {
		c := t.u32()
		e.Mov(c, atOrAbove)
		h.est[q] = t.f32()
		e.Cvt(h.est[q], c)
		e.Mul(h.est[q], h.est[q], smp.scale)
		e.Sub(atOrAbove, atOrAbove, cnt[q])
	}
	return h
}

// bracket is the two neighbouring bin edges whose estimated counts
// enclose the count x: lo the highest edge with an estimate of at least
// x (the range's least value, counted as the whole row, if none), hi the
// next (the range's largest value, counted as half an element: below one
// element, and log stays finite). The same in every thread.
func (h *sampleHist) bracket(x ptx.Reg) guess {
	t, e := h.t, h.t.e
	B := int64(sampleBins)
	P := int64(h.perLane)
	// The edges at or below x's are those whose estimate is at least x:
	// the estimates descend from the bottom edge up.
	m := t.constU32(0)
	for q := range h.perLane {
		bal, c := t.u32(), t.u32()
		e.VoteBallot(bal, t.setp(ptx.GE, h.est[q], x), ptx.Imm(fullMask))
		e.Popc(c, bal)
		e.Add(m, m, c)
	}
	b := t.u32()
	e.Max(m, m, ptx.Imm(1))
	e.Sub(b, m, ptx.Imm(1))
	// estAt(i) is the estimate at bin i's lower edge (i < B), which lane
	// (B-1-i)/P holds as its est[(B-1-i)%P].
	estAt := func(i ptx.Reg) ptx.Reg {
		r, lane, q := t.u32(), t.u32(), t.u32()
		e.Sub(r, ptx.Imm(B-1), i)
		e.Div(lane, r, ptx.Imm(P))
		e.Rem(q, r, ptx.Imm(P))
		mine := t.f32()
		e.Mov(mine, h.est[0])
		for j := 1; j < h.perLane; j++ {
			e.Selp(mine, h.est[j], mine, t.setp(ptx.EQ, q, ptx.Imm(int64(j))))
		}
		out := t.f32()
		e.Shfl(ptx.ShflIdx, out, mine, lane, ptx.Imm(warpSize-1), ptx.Imm(fullMask))
		return out
	}
	g := guess{lo: t.f32(), cntLo: estAt(b), hi: t.f32(), cntHi: t.f32()}
	e.Selp(g.cntLo, h.n, g.cntLo, t.setp(ptx.EQ, b, ptx.Imm(0)))
	next := t.u32()
	e.Add(next, b, ptx.Imm(1))
	last := t.setp(ptx.EQ, next, ptx.Imm(B))
	nextIn := t.u32()
	e.Min(nextIn, next, ptx.Imm(B-1))
	e.Mov(g.cntHi, estAt(nextIn))
	e.Selp(g.cntHi, ptx.Float(0.5), g.cntHi, last)
	e.Max(g.cntHi, g.cntHi, ptx.Float(0.5))
	fb, fn := t.f32(), t.f32()
	e.Cvt(fb, b)
	e.Cvt(fn, next)
	e.Mad(g.lo, fb, h.w, h.smp.rng.min)
	e.Mad(g.hi, fn, h.w, h.smp.rng.min)
	e.Selp(g.hi, h.smp.rng.max, g.hi, last)
	return g
}

// newGuess allocates a guess's registers.
func (t *topk) newGuess() guess {
	g := guess{lo: t.f32(), cntLo: t.f32(), hi: t.f32(), cntHi: t.f32(), target: t.f32()}
	if t.cfg.SureSet {
		g.sure = t.f32()
	}
	for i := range g.first {
		g.first[i] = t.f32()
	}
	return g
}
