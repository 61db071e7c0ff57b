package gen

// A row shared by several clusters (Config.Groups): cluster g of the row's
// G holds its g-th part in shared memory, and the kernel is
// topk_fallback_cluster's, but wherever it combines counts across the
// cluster, every CTA of the row's clusters publishes its sums to the row's
// workspace in global memory instead and polls there until every CTA's
// are in (groupTotals). Phase 3's candidates of the clusters after the
// first go to the workspace at their place in the row's candidate order,
// and the row's first cluster's leader gathers them into its buffer
// (handToFirst, gatherGroups) and selects alone, as a cluster's leader
// does. Every cluster of a launch polls the others, so all of them must be
// resident at once: the caller launches it cooperatively.

import (
	"github.com/gvr-go/gvr/ptx"
)

// GroupWorkspaceBytes is the workspace a row of a kernel with Groups > 1
// needs (its "workspace" parameter points at rows times this many bytes,
// zero before the first launch): the row's generation, MaxCandidates
// candidates' slots, and two rounds of its CTAs' tagged sums. It depends
// on MaxCandidates alone, and so does its layout: kernels of any cluster
// size and groups share a workspace, as a Selector's do (every launch
// moves the row's generation on, and empties the candidate slots it
// filled).
func GroupWorkspaceBytes(cfg Config) int {
	w := groupLayout(cfg)
	return w.size
}

// groupWords is a row's workspace layout, in bytes.
type groupWords struct {
	gen   int // u32: launches so far (the rounds' tags)
	cands int // [MaxCandidates] u64: (index+1) << 32 | value bits; 0 while empty
	slots int // [2][maxGroupParts][exchangeVals] u64: (tag << 32) | a CTA's sum, by round parity
	size  int
}

// maxGroupParts is the most CTAs that share a row: Config.Groups (at most
// MaxGroups) clusters of up to 16.
const maxGroupParts = MaxGroups * 16

func groupLayout(cfg Config) groupWords {
	w := groupWords{gen: 0, cands: 128}
	w.slots = w.cands + 8*cfg.MaxCandidates
	w.size = (w.slots + 2*maxGroupParts*exchangeVals*8 + 127) / 128 * 128
	return w
}

// groupPart is a shared row's cluster: which part it is and its row's
// workspace.
type groupPart struct {
	n       int // G
	w       groupWords
	g       ptx.Reg  // u32 this cluster's part of the row
	part    ptx.Reg  // u32 this CTA's part of the row: g*C + its rank
	first   ptx.Pred // g == 0
	ws      ptx.Reg  // u64 the row's workspace
	gen     ptx.Reg  // u32 the row's launches before this one
	round   ptx.Reg  // u32 the rounds so far
	scratch region   // [2][3][exchangeVals] u32: a round's totals, belows and owns, by round parity (clusterTopKShared.groups)
}

// newGroupPart sets up a shared row's cluster: row r's workspace at
// param p (loadGen loads its generation).
func (t *topk) newGroupPart(p *ptx.Param, r ptx.Reg) *groupPart {
	e := t.e
	gp := &groupPart{n: t.cfg.groups(), w: groupLayout(t.cfg)}
	gp.g = t.groupID()
	gp.first = t.setp(ptx.EQ, gp.g, ptx.Imm(0))
	gp.part = t.u32()
	e.Mad(gp.part, gp.g, ptx.Imm(int64(t.part.size)), t.part.rank)
	gp.ws = t.u64()
	e.MulWide(gp.ws, r, ptx.Imm(int64(gp.w.size)))
	e.Add(gp.ws, gp.ws, t.global(p))
	gp.gen = t.u32()
	gp.round = t.constU32(0)
	gp.scratch = t.part.ctl.groups
	return gp
}

// loadGen loads the row's generation, which the tags of Phase 2's rounds
// carry: at Phase 1's start, its latency under Phase 1's (at the kernel's
// start, a wait for it held up the row's length: perf notes 164).
func (t *topk) loadGen() {
	if gp := t.group; gp != nil {
		t.e.Ld(ptx.SpaceGlobal, gp.gen, ptx.At(gp.ws, int64(gp.w.gen)))
	}
}

// rowLeader is whether this CTA is the row's leader: the first cluster's
// rank 0 (leaderOnly, for a shared row).
func (gp *groupPart) rowLeader(t *topk) ptx.Pred {
	p := t.pred()
	t.e.AndPred(p, t.part.leader, gp.first)
	return p
}

// groupTotals adds each of cta (this CTA's sums, the same in every
// thread) over every CTA of the row's clusters, in place of a cluster's
// exchange round: it returns the totals, the sums over the CTAs before
// this one (the lower ranks of this cluster and every CTA of the clusters
// before it: below) and this cluster's sums (own), in every thread. Each
// CTA stores its sums beside the round's tag in one 64-bit word each (no
// fence: the word is its own arrival); warp 0 of every CTA polls every
// CTA's words, by relaxed loads (strong: they see the other SMs' stores,
// from L2), until their tags are the round's, and reduces them; a CTA
// barrier hands the sums to every thread.
//
// A tag is gen*256 + round + 1 in 32 bits: it holds the generation's low
// 24 bits. No slot is cleared between launches, so a word left by a
// launch exactly a multiple of 2^24 launches of the row before, in a slot
// not written since, would pass for this launch's. Only a slot that goes
// unwritten for 2^24 (16.7M) launches of its row can hold one (one that
// only a kernel with more CTAs a row writes, say), and its tag must come
// round exactly then: not guarded, as a wider tag would take bits from
// the sums.
//
// during, if not nil, runs in every thread between the CTA's stores and
// warp 0's polls: work that needs none of the totals then fills the
// round's wait (earlyCollect).
func (t *topk) groupTotals(cta []ptx.Reg, during func()) (tot, below, own []ptx.Reg) {
	e, gp := t.e, t.group
	n, C := len(cta), t.part.size
	parts := gp.n * C // CTAs sharing the row
	e.Comment("combine across the row's clusters")
	tag, par := t.u32(), t.u32() // a launch's tags: gen*256 + round + 1
	e.Shl(tag, gp.gen, ptx.Imm(8))
	e.Add(tag, tag, gp.round)
	e.Add(tag, tag, ptx.Imm(1))
	e.And(par, gp.round, ptx.Imm(1))
	e.Add(gp.round, gp.round, ptx.Imm(1))
	slots := t.u64() // this round's: [parts][exchangeVals] u64
	e.MulWide(slots, par, ptx.Imm(int64(parts*exchangeVals*8)))
	e.Add(slots, slots, gp.ws)
	e.Add(slots, slots, ptx.Imm(int64(gp.w.slots)))
	hi := t.u64()
	e.Cvt(hi, tag)
	e.Shl(hi, hi, ptx.Imm(32))
	e.If(t.setp(ptx.EQ, t.tid, ptx.Imm(0)), func() {
		mine := t.u64()
		e.MulWide(mine, gp.part, ptx.Imm(int64(exchangeVals*8)))
		e.Add(mine, mine, slots)
		for i, v := range cta {
			w := t.u64()
			e.Cvt(w, v)
			e.Or(w, w, hi)
			e.StStrong(ptx.SpaceGlobal, ptx.SemRelaxed, ptx.ScopeGPU, ptx.U64, ptx.At(mine, int64(8*i)), w)
		}
	})
	if during != nil {
		during()
	}
	scratch := t.u32() // this round's half: the totals, belows and owns
	e.Mad(scratch, par, ptx.Imm(int64(3*exchangeVals*4)), t.smem.base)
	e.Add(scratch, scratch, ptx.Imm(int64(gp.scratch.off)))
	e.If(t.setp(ptx.EQ, t.warp, ptx.Imm(0)), func() {
		// Lane l polls the CTAs l, l+32, ...: all their words at once a
		// try, so that a try costs one round trip.
		type polled struct {
			slot        ptx.Reg
			in          ptx.Pred
			before, own ptx.Pred // the CTA is before this one; in this cluster
			x           []ptx.Reg
			at          ptx.Reg
		}
		var ps []polled
		for k := 0; k*warpSize < parts; k++ {
			p := polled{slot: t.u32()}
			e.Add(p.slot, t.lane, ptx.Imm(int64(k*warpSize)))
			p.in = t.setp(ptx.LT, p.slot, ptx.Imm(int64(parts)))
			p.before = t.setp(ptx.LT, p.slot, gp.part)
			g := t.u32()
			e.Div(g, p.slot, ptx.Imm(int64(C)))
			p.own = t.setp(ptx.EQ, g, gp.g)
			p.at = t.u64()
			e.MulWide(p.at, p.slot, ptx.Imm(int64(exchangeVals*8)))
			e.Add(p.at, p.at, slots)
			for range n {
				x := t.u64()
				e.Mov(x, hi) // a slot past the CTAs counts as arrived, with 0
				p.x = append(p.x, x)
			}
			ps = append(ps, p)
		}
		e.DoWhile(func() {
			for _, p := range ps {
				e.Guarded(p.in, func() {
					for i, x := range p.x {
						e.LdStrong(ptx.SpaceGlobal, ptx.SemRelaxed, ptx.ScopeGPU, x, ptx.At(p.at, int64(8*i)))
					}
				})
			}
		}, func() ptx.Pred {
			late := t.falsePred()
			for _, p := range ps {
				for _, x := range p.x {
					h := t.u64()
					e.And(h, x, ptx.Imm(-1<<32))
					e.OrPred(late, late, t.setp(ptx.NE, h, hi))
				}
			}
			return late
		})
		first := t.setp(ptx.EQ, t.lane, ptx.Imm(0))
		for i := range n {
			sums := [3]ptx.Reg{t.constU32(0), t.constU32(0), t.constU32(0)} // total, below, own
			for _, p := range ps {
				v := t.u32()
				e.Cvt(v, p.x[i])
				e.Add(sums[0], sums[0], v)
				e.Guarded(p.before, func() { e.Add(sums[1], sums[1], v) })
				e.Guarded(p.own, func() { e.Add(sums[2], sums[2], v) })
			}
			for s, v := range sums {
				r := t.warpReduce("add", v)
				e.Guarded(first, func() { e.St(ptx.SpaceShared, ptx.U32, ptx.At(scratch, int64(4*(s*exchangeVals+i))), r) })
			}
		}
	})
	t.sync()
	var out [3][]ptx.Reg // the totals, belows and owns
	for s := range out {
		for i := range n {
			r := t.u32()
			e.Ld(ptx.SpaceShared, r, ptx.At(scratch, int64(4*(s*exchangeVals+i))))
			out[s] = append(out[s], r)
		}
	}
	return out[0], out[1], out[2]
}

// handToFirst is Phase 3's hand-over in a cluster after the row's first:
// every CTA stores its candidates (ours, the j-th at from(j)) to their
// places to(j) in the row's candidate order in the workspace, value and
// index+1 in one 64-bit word, which is its own arrival: gatherGroups
// waits for each slot to be nonzero, with no fence or count between.
func (t *topk) handToFirst(c collected) {
	e, gp := t.e, t.group
	j := t.u32()
	e.For(j, t.tid, c.ours, ptx.Imm(int64(t.threads)), func() {
		src := c.from(j)
		b, i := t.loadCand(src)
		w, hi := t.u64(), t.u64()
		e.Cvt(w, b)
		e.Add(i, i, ptx.Imm(1))
		e.Cvt(hi, i)
		e.Shl(hi, hi, ptx.Imm(32))
		e.Or(w, w, hi)
		a := t.u64()
		e.MulWide(a, c.to(j, src), ptx.Imm(8))
		e.Add(a, a, gp.ws)
		e.StStrong(ptx.SpaceGlobal, ptx.SemRelaxed, ptx.ScopeGPU, ptx.U64, ptx.At(a, int64(gp.w.cands)), w)
	})
}

// gatherGroups is the row leader's side of handToFirst: its threads load
// the other clusters' candidates, [mine, total) of the row's order, into
// its buffer at the same places, each polling its slot until it is
// filled and emptying it for the next launch.
func (t *topk) gatherGroups(mine, total ptx.Reg) {
	e, gp := t.e, t.group
	j := t.u32()
	e.Add(j, mine, t.tid)
	e.For(j, j, total, ptx.Imm(int64(t.threads)), func() {
		a := t.u64()
		e.MulWide(a, j, ptx.Imm(8))
		e.Add(a, a, gp.ws)
		at := ptx.At(a, int64(gp.w.cands))
		w, hi := t.u64(), t.u64()
		e.DoWhile(func() {
			e.LdStrong(ptx.SpaceGlobal, ptx.SemRelaxed, ptx.ScopeGPU, w, at)
			e.Shr(hi, w, ptx.Imm(32))
		}, func() ptx.Pred { return t.setp(ptx.EQ, hi, ptx.Imm(0)) })
		e.StStrong(ptx.SpaceGlobal, ptx.SemRelaxed, ptx.ScopeGPU, ptx.U64, at, ptx.Imm(0))
		b, i := t.u32(), t.u32()
		e.Cvt(b, w)
		e.Cvt(i, hi)
		e.Sub(i, i, ptx.Imm(1))
		e.St(ptx.SpaceShared, ptx.U32, t.smem.elem(t.cand.bits, j, 4), b)
		e.St(ptx.SpaceShared, ptx.U32, t.smem.elem(t.cand.idx, j, 4), i)
	})
	t.sync()
}

// endGroups moves the row's generation on, so that the next launch's
// tags differ from this one's: the row leader's thread 0, once every CTA
// has read the generation (past Phase 2's first round, whose words carry
// it; a short row has no round), and not at the kernel's end, where the
// atomic held up the leader's last step (perf notes 164).
func (t *topk) endGroups() {
	if t.group == nil {
		return
	}
	e, gp := t.e, t.group
	one := gp.rowLeader(t)
	e.AndPred(one, one, t.setp(ptx.EQ, t.tid, ptx.Imm(0)))
	e.If(one, func() {
		e.Red(ptx.SpaceGlobal, "add", ptx.U32, ptx.At(gp.ws, int64(gp.w.gen)), ptx.Imm(1))
	})
}
