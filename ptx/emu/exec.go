package emu

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/gvr-go/gvr/ptx"
)

// This file is the machine: CTAs of warps of 32 lanes, the scheduler that
// runs divergent lanes and reconverges them, CTA barriers and the checks
// around warp collectives.

const fullMask = ^uint32(0)

// Address windows. A CTA's shared memory starts at sharedWindow in the
// .shared state space (nonzero, so that an offset used as an address
// faults); genericShared+a is the generic address of shared address a.
const (
	sharedWindow  = 0x40000
	genericShared = 0x7000_0000_0000
)

type instKind uint8

const (
	kPlain   instKind = iota // fn does it all
	kBra                     // branch to target
	kExit                    // exit and ret
	kBar                     // bar.sync, barrier.sync
	kColl                    // shfl, vote, redux, bar.warp.sync, elect.sync: lanes meet
	kFault                   // not supported: faults when executed
	kCArrive                 // barrier.cluster.arrive
	kCWait                   // barrier.cluster.wait
	kMWait                   // mbarrier.try_wait, mbarrier.test_wait
)

// execFn runs an instruction for the lanes of m.
type execFn func(w *warp, m uint32) *Fault

// inst is one compiled instruction.
type inst struct {
	kind   instKind
	guard  int32 // predicate register, -1: none
	gneg   bool
	fn     execFn
	coll   func(w *warp, part uint32) // a collective's work for the lanes of one member mask
	mask   src                        // a collective's member mask
	target int32                      // branch target
	barID  src
	barCnt src
	hasCnt bool
	msg    string // kFault's reason
	// wait runs mbarrier.try_wait/test_wait for the lanes of m if their
	// phases are complete (done); test answers at once.
	wait func(w *warp, m uint32) (done bool, f *Fault)
	test bool
	bar  *addrOp   // the mbarrier's address, for reports
	sp   ptx.Space // its space

	pc   int
	line int
	text string
}

// src is an operand's values: a constant shared by all warps, or a register.
type src struct {
	c *[32]uint64
	r int32
}

type waitKind uint8

const (
	running     waitKind = iota
	waitColl             // at a collective, waiting for lanes of the mask
	waitBarWarp          // at a barrier, waiting for the rest of the warp
	atBarrier            // the whole warp arrived at a CTA barrier
	waitCluster          // at barrier.cluster.wait, for the phase to complete
	waitMbar             // at mbarrier.try_wait, for the phase to complete
)

// group is a set of lanes of a warp at the same pc. A warp's groups are
// kept sorted by pc, with distinct pcs.
type group struct {
	pc   int32
	mask uint32
	wait waitKind
}

type warp struct {
	c      *cta
	id     int
	r      regs     // value registers
	p      []uint32 // predicate registers, one bit per lane
	groups []group
	cur    int    // the running group with the least pc; -1: none
	exists uint32 // lanes that are threads of the CTA
	live   uint32 // lanes that have not exited
	active uint32 // the executing group's lanes, for activemask
	done   bool
	cache  *allocation // the last global allocation hit

	budget   int64            // warp instructions left in this turn
	yield    bool             // end the turn after this instruction
	carrived uint32           // lanes arrived at the cluster barrier, not yet waited
	cphase   int              // the cluster barrier phase they arrived in
	observed map[mbKey]uint32 // mbarrier phases the warp saw complete (race detector)
}

type cta struct {
	ls          *launchState
	k           *kernel
	cl          *cluster
	id          [3]int
	rank        int    // %cluster_ctarank
	cid         [3]int // %cluster_ctaid
	warps       []*warp
	smem        []byte
	bars        [16]barrier
	exited      int
	steps       int64
	threadInstr int64
	barriers    int64
	race        *raceState
}

type barrier struct {
	pc       int32
	arrived  int
	expected int
	waiting  []*warp
}

// smemGarbage is every byte of a CTA's shared memory at its start, and of
// its registers and predicates (garbageReg).
const smemGarbage = 0xA5

// garbageReg is every register's lanes at a CTA's start, and predGarbage
// every predicate's lane mask: smemGarbage in every byte (a u32 reads
// 0xA5A5A5A5, an f32 -2.9e-16; half of a predicate's lanes true).
var garbageReg = func() (r [32]uint64) {
	for l := range r {
		r[l] = 0x0101010101010101 * smemGarbage
	}
	return r
}()

const predGarbage = 0x01010101 * smemGarbage

// regs is a warp's value registers, a [32]uint64 (a lane each) a
// register, in pages made at their first use, garbage until written. A
// generated kernel declares thousands of registers and a warp touches
// few of them (a cluster's other CTAs skip Phase 4, an empty row nearly
// everything: 1.2% in a fuzz case of four rows over five clusters of 16,
// whose registers, all made at once, took 6.6 GB), and a co-resident
// launch holds every warp's at once.
type regs struct{ pages []*regPage }

const (
	regPageShift = 5
	regPageSize  = 1 << regPageShift
)

type regPage [regPageSize][32]uint64

func newRegs(n int) regs {
	return regs{pages: make([]*regPage, (n+regPageSize-1)>>regPageShift)}
}

// at is register i.
func (r regs) at(i int32) *[32]uint64 {
	p := r.pages[i>>regPageShift]
	if p == nil {
		p = r.page(i >> regPageShift)
	}
	return &p[i&(regPageSize-1)]
}

// page makes page n, every register garbage.
func (r regs) page(n int32) *regPage {
	p := new(regPage)
	for i := range p {
		p[i] = garbageReg
	}
	r.pages[n] = p
	return p
}

// reset makes every register garbage again, for a new CTA.
func (r regs) reset() {
	for _, p := range r.pages {
		if p != nil {
			for i := range p {
				p[i] = garbageReg
			}
		}
	}
}

// newCTA sets up the warps of CTA id, rank rank of cluster cl, reusing
// the launch's register files.
func (ls *launchState) newCTA(cl *cluster, id [3]int, rank int) *cta {
	k := ls.k
	c := &cta{ls: ls, k: k, cl: cl, id: id, rank: rank, smem: make([]byte, ls.smemSize)}
	// A GPU leaves a CTA's shared memory as the last CTA on its SM left
	// it: start from garbage, not zeros, so that a kernel which reads what
	// it never wrote goes wrong here too.
	for i := range c.smem {
		c.smem[i] = smemGarbage
	}
	for i := range c.cid {
		c.cid[i] = id[i] % ls.cshape[i]
	}
	if ls.race {
		c.race = newRaceState(ls.smemSize, (ls.nthreads+31)/32)
	}
	nw := (ls.nthreads + 31) / 32
	slot := cl.first + rank // the CTA's place in the pool
	for len(ls.pool) < (slot+1)*nw {
		ls.pool = append(ls.pool, &warp{r: newRegs(k.nregs), p: make([]uint32, k.npreds)})
	}
	c.warps = ls.pool[slot*nw : (slot+1)*nw]
	for i, w := range c.warps {
		// Registers start undefined in PTX: garbage, not zeros, as shared
		// memory does, so that a kernel which reads a register it never
		// wrote (on some path) goes wrong here too.
		w.r.reset()
		for j := range w.p {
			w.p[j] = predGarbage
		}
		*w = warp{c: c, id: i, r: w.r, p: w.p, groups: w.groups[:0], cache: w.cache}
		n := min(32, ls.nthreads-32*i)
		w.exists = uint32(mask(n))
		w.live = w.exists
		w.groups = append(w.groups, group{pc: 0, mask: w.exists})
		w.fillSpecials()
	}
	return c
}

// tid is the %tid of lane l.
func (w *warp) tid(l int) [3]int { return w.c.tid(w.id*32 + l) }

// tid is the %tid of the thread of linear index t.
func (c *cta) tid(t int) [3]int {
	b := c.ls.block
	return [3]int{t % b[0], t / b[0] % b[1], t / (b[0] * b[1])}
}

func (w *warp) fillSpecials() {
	ls := w.c.ls
	for _, s := range w.c.k.specials {
		r := w.r.at(s.r)
		for l := 0; l < 32; l++ {
			t := w.tid(l)
			var v uint64
			switch s.s {
			case ptx.TidX, ptx.TidY, ptx.TidZ:
				v = uint64(t[s.s-ptx.TidX])
			case ptx.NTidX, ptx.NTidY, ptx.NTidZ:
				v = uint64(ls.block[s.s-ptx.NTidX])
			case ptx.CtaIDX, ptx.CtaIDY, ptx.CtaIDZ:
				v = uint64(w.c.id[s.s-ptx.CtaIDX])
			case ptx.NCtaIDX, ptx.NCtaIDY, ptx.NCtaIDZ:
				v = uint64(ls.grid[s.s-ptx.NCtaIDX])
			case ptx.LaneID:
				v = uint64(l)
			case ptx.WarpID:
				v = uint64(w.id)
			case ptx.NWarpID:
				v = uint64(len(w.c.warps))
			case ptx.LaneMaskLt:
				v = 1<<l - 1
			case ptx.LaneMaskLe:
				v = 1<<(l+1) - 1
			case ptx.LaneMaskGt:
				v = uint64(fullMask << (l + 1)) // a shift by 32 gives 0
			case ptx.LaneMaskEq:
				v = 1 << l
			case ptx.SMID:
				v = 0
			case ptx.ClusterCtaRank:
				v = uint64(w.c.rank)
			case ptx.ClusterNCtaRank:
				v = uint64(ls.csize)
			case ptx.ClusterIDX, ptx.ClusterIDY, ptx.ClusterIDZ:
				i := s.s - ptx.ClusterIDX
				v = uint64(w.c.id[i] / ls.cshape[i])
			case ptx.NClusterIDX, ptx.NClusterIDY, ptx.NClusterIDZ:
				i := s.s - ptx.NClusterIDX
				v = uint64(ls.grid[i] / ls.cshape[i])
			case ptx.ClusterCtaIDX, ptx.ClusterCtaIDY, ptx.ClusterCtaIDZ:
				v = uint64(w.c.cid[s.s-ptx.ClusterCtaIDX])
			case ptx.ClusterNCtaIDX, ptx.ClusterNCtaIDY, ptx.ClusterNCtaIDZ:
				v = uint64(ls.cshape[s.s-ptx.ClusterNCtaIDX])
			}
			r[l] = v
		}
	}
}

// v returns the values of an operand.
func (w *warp) v(s src) *[32]uint64 {
	if s.c != nil {
		return s.c
	}
	return w.r.at(s.r)
}

func (c *cta) finished() bool { return c.exited == c.ls.nthreads }

// run executes the warp's lanes until they all exit, the warp waits at a
// barrier, its turn ends (w.budget, w.yield), or a fault.
func (w *warp) run() *Fault {
	c := w.c
	code := c.k.code
	for w.cur >= 0 {
		if w.budget <= 0 || w.yield {
			w.yield = false
			return nil // the turn is over; the warp can go on
		}
		w.budget--
		c.cl.clock++
		g := &w.groups[w.cur]
		in := &code[g.pc]
		m := g.mask
		if in.guard >= 0 {
			p := w.p[in.guard]
			if in.gneg {
				p = ^p
			}
			m &= p
		}
		c.steps++
		if c.ls.issued != nil {
			c.ls.issued[g.pc]++
		}
		if c.steps > c.ls.maxSteps {
			return w.fault(FaultSteps, in, g.mask, "the step budget of %d warp instructions per CTA is spent (an endless loop?)", c.ls.maxSteps)
		}
		c.threadInstr += int64(bits.OnesCount32(m))
		switch in.kind {
		case kPlain:
			if m != 0 {
				w.active = g.mask
				if f := in.fn(w, m); f != nil {
					return f
				}
			}
			g.pc++
			if len(w.groups) > 1 {
				w.advanced()
			}
		case kBra:
			w.branch(m, in.target)
		case kExit:
			w.exit(m)
		case kBar:
			if f := w.barrier(in, m); f != nil {
				return f
			}
		case kColl:
			if f := w.collective(in, m); f != nil {
				return f
			}
		case kFault:
			if m != 0 {
				return w.fault(FaultUnsupported, in, m, "%s", in.msg)
			}
			g.pc++
			w.advanced()
		case kCArrive, kCWait:
			if f := w.clusterBarrier(in, m); f != nil {
				return f
			}
		case kMWait:
			if f := w.mbarrierWait(in, m); f != nil {
				return f
			}
		}
	}
	return w.blocked()
}

// advanced merges the running group with the next one when its pc, just
// incremented, reached it: this is where divergent lanes reconverge.
func (w *warp) advanced() {
	i := w.cur
	if i+1 < len(w.groups) && w.groups[i+1].pc == w.groups[i].pc {
		w.groups[i].mask |= w.groups[i+1].mask
		w.groups[i].wait = running // a waiting group gets its lanes: it tries again
		w.groups = append(w.groups[:i+1], w.groups[i+2:]...)
	}
}

// pick makes the running group with the least pc current: the scheduler's
// one rule. Lanes that branch forward wait until the lanes behind them
// catch up, so structured code (if/else, loops, early exits from loops)
// reconverges at its join points.
func (w *warp) pick() {
	w.cur = -1
	for i := range w.groups {
		if w.groups[i].wait == running {
			w.cur = i
			return
		}
	}
}

// insert adds lanes at pc, merging them into a group already there.
func (w *warp) insert(pc int32, m uint32) {
	i := 0
	for i < len(w.groups) && w.groups[i].pc < pc {
		i++
	}
	if i < len(w.groups) && w.groups[i].pc == pc {
		w.groups[i].mask |= m
		w.groups[i].wait = running
		return
	}
	w.groups = append(w.groups, group{})
	copy(w.groups[i+1:], w.groups[i:])
	w.groups[i] = group{pc: pc, mask: m}
}

func (w *warp) remove(i int) { w.groups = append(w.groups[:i], w.groups[i+1:]...) }

// branch sends the lanes of taken to target and the rest of the group on.
func (w *warp) branch(taken uint32, target int32) {
	g := &w.groups[w.cur]
	if len(w.groups) == 1 && (taken == g.mask || taken == 0) { // converged, uniform
		if taken != 0 {
			g.pc = target
		} else {
			g.pc++
		}
		return
	}
	rest := g.mask &^ taken
	pc := g.pc
	w.remove(w.cur)
	if rest != 0 {
		w.insert(pc+1, rest)
	}
	if taken != 0 {
		w.insert(target, taken)
	}
	w.pick()
}

// exit ends the lanes of m; the group's other lanes go on.
func (w *warp) exit(m uint32) {
	g := &w.groups[w.cur]
	w.live &^= m
	w.c.exited += bits.OnesCount32(m)
	w.c.cl.exit(w, m)
	g.mask &^= m
	if g.mask == 0 {
		w.remove(w.cur)
		w.pick()
		return
	}
	g.pc++
	w.advanced()
}

// blocked is reached when no group of the warp can run: the warp is done,
// or waits at a CTA barrier, or can never go on.
func (w *warp) blocked() *Fault {
	switch {
	case len(w.groups) == 0:
		w.done = true
		return nil
	case len(w.groups) == 1 && w.groups[0].wait == atBarrier:
		return nil
	}
	for _, g := range w.groups {
		if g.wait == waitCluster || g.wait == waitMbar {
			// Lanes that wait for a phase can go on later, and the
			// other lanes may be waiting for them.
			return nil
		}
	}
	// Some lanes wait at a collective or a barrier for lanes that are
	// blocked elsewhere or gone.
	code := w.c.k.code
	for _, g := range w.groups {
		in := &code[g.pc]
		switch g.wait {
		case waitColl:
			return w.fault(FaultCollective, in, g.mask, "lanes %s wait for lanes of their member mask that never arrive: %s", lanes(g.mask), w.whereAre(w.exists&^g.mask))
		case waitBarWarp:
			return w.fault(FaultBarrier, in, g.mask, "lanes %s wait at this barrier, but the warp's other lanes never reach it: %s (a barrier must be reached by every thread of the warp together)", lanes(g.mask), w.whereAre(w.live&^g.mask))
		}
	}
	return w.fault(FaultInternal, &code[w.groups[0].pc], w.groups[0].mask, "interpreter bug: warp blocked with groups %v", w.groups)
}

// whereAre describes where the lanes of m are.
func (w *warp) whereAre(m uint32) string {
	var parts []string
	if x := m & w.exists &^ w.live; x != 0 {
		parts = append(parts, fmt.Sprintf("lanes %s exited", lanes(x)))
	}
	if x := m &^ w.exists; x != 0 {
		parts = append(parts, fmt.Sprintf("lanes %s are not threads of the CTA", lanes(x)))
	}
	code := w.c.k.code
	for _, g := range w.groups {
		if x := g.mask & m; x != 0 {
			state := "are at"
			switch g.wait {
			case waitColl:
				state = "wait at collective"
			case waitBarWarp, atBarrier, waitCluster:
				state = "wait at barrier"
			case waitMbar:
				state = "wait on the mbarrier at"
			}
			parts = append(parts, fmt.Sprintf("lanes %s %s line %d `%s`", lanes(x), state, code[g.pc].line, code[g.pc].text))
		}
	}
	if len(parts) == 0 {
		return "none missing"
	}
	return strings.Join(parts, "; ")
}

// lanes spells a lane mask as a list of lanes and ranges.
func lanes(m uint32) string {
	var parts []string
	for m != 0 {
		lo := bits.TrailingZeros32(m)
		hi := lo
		for hi < 31 && m&(1<<(hi+1)) != 0 {
			hi++
		}
		if lo == hi {
			parts = append(parts, fmt.Sprint(lo))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", lo, hi))
		}
		m &^= uint32(mask(hi+1)) &^ uint32(mask(lo))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// fault makes a Fault at in for the first lane of m.
func (w *warp) fault(kind FaultKind, in *inst, m uint32, format string, args ...any) *Fault {
	l := 0
	if m != 0 {
		l = bits.TrailingZeros32(m)
	}
	return &Fault{
		Kind: kind, Kernel: w.c.k.name, PC: in.pc, Line: in.line, Inst: in.text,
		CTA: w.c.id, Thread: w.tid(l), Warp: w.id, Lane: l,
		Msg: fmt.Sprintf(format, args...),
	}
}

// addrFault is a fault at an address.
func (w *warp) addrFault(kind FaultKind, in *inst, lane int, addr uint64, format string, args ...any) *Fault {
	f := w.fault(kind, in, 1<<lane, format, args...)
	f.Addr, f.HasAddr = addr, true
	return f
}

// ---- barriers ----

// barrier executes bar.sync for the lanes of m.
func (w *warp) barrier(in *inst, m uint32) *Fault {
	g := &w.groups[w.cur]
	if m == 0 { // predicated off for every lane here
		g.pc++
		w.advanced()
		return nil
	}
	if m != g.mask {
		return w.fault(FaultBarrier, in, g.mask&^m, "the barrier's guard is false for lanes %s and true for lanes %s: a barrier must be executed by all threads of a warp together", lanes(g.mask&^m), lanes(m))
	}
	if g.mask != w.live {
		g.wait = waitBarWarp // wait for the warp's other lanes to reach it
		w.pick()
		return nil
	}
	c := w.c
	id, f := w.uniform(in, in.barID, m, "barrier id")
	if f != nil {
		return f
	}
	if id >= uint64(len(c.bars)) {
		return w.fault(FaultBarrier, in, m, "barrier id %d: there are %d", id, len(c.bars))
	}
	expected := c.ls.nthreads
	if in.hasCnt {
		n, f := w.uniform(in, in.barCnt, m, "thread count")
		if f != nil {
			return f
		}
		if n == 0 || n%32 != 0 || int(n) > (c.ls.nthreads+31)/32*32 {
			return w.fault(FaultBarrier, in, m, "thread count %d must be a positive multiple of 32, at most the CTA's threads", n)
		}
		expected = int(n)
	}
	if w.live != w.exists {
		return w.fault(FaultBarrier, in, m, "reached after lanes %s of this warp exited: gvr kernels must not rely on exited threads counting as arrived", lanes(w.exists&^w.live))
	}
	if !in.hasCnt && c.exited > 0 {
		return w.fault(FaultBarrier, in, m, "reached after %d threads of the CTA exited (%s): gvr kernels must not rely on exited threads counting as arrived", c.exited, c.exitedThreads())
	}
	b := &c.bars[id]
	if b.arrived == 0 {
		b.pc, b.expected = int32(in.pc), expected
	} else if b.pc != int32(in.pc) || b.expected != expected {
		o := &c.k.code[b.pc]
		return w.fault(FaultBarrier, in, m, "threads wait at different instructions for barrier %d: this one and line %d `%s`", id, o.line, o.text)
	}
	b.arrived += bits.OnesCount32(w.exists)
	b.waiting = append(b.waiting, w)
	g.wait = atBarrier
	w.cur = -1
	if b.arrived >= b.expected {
		for _, x := range b.waiting {
			x.groups[0].wait = running
			x.groups[0].pc++
			x.cur = 0
		}
		*b = barrier{waiting: b.waiting[:0]}
		c.barriers++
		if c.race != nil {
			c.race.barrier(c.cl.clock)
		}
	}
	return nil
}

func (c *cta) exitedThreads() string {
	var parts []string
	for _, w := range c.warps {
		if x := w.exists &^ w.live; x != 0 {
			parts = append(parts, fmt.Sprintf("warp %d lanes %s", w.id, lanes(x)))
		}
	}
	return strings.Join(parts, ", ")
}

// uniform reads an operand that must be the same in every lane of m.
func (w *warp) uniform(in *inst, s src, m uint32, what string) (uint64, *Fault) {
	v := w.v(s)
	l0 := bits.TrailingZeros32(m)
	for x := m; x != 0; x &= x - 1 {
		if l := bits.TrailingZeros32(x); v[l] != v[l0] {
			return 0, w.fault(FaultBarrier, in, 1<<l, "the %s differs between lanes %d (%d) and %d (%d)", what, l0, v[l0], l, v[l])
		}
	}
	return v[l0], nil
}

// deadlock reports why no warp of the CTA can go on: warps wait at
// barriers that cannot complete.
func (c *cta) deadlock() *Fault {
	for id := range c.bars {
		b := &c.bars[id]
		if b.arrived == 0 {
			continue
		}
		in := &c.k.code[b.pc]
		w := b.waiting[0]
		var missing []string
		for _, x := range c.warps {
			if x.done {
				missing = append(missing, fmt.Sprintf("warp %d exited", x.id))
			} else if x.groups[0].pc != b.pc {
				o := &c.k.code[x.groups[0].pc]
				missing = append(missing, fmt.Sprintf("warp %d waits at line %d `%s`", x.id, o.line, o.text))
			}
		}
		return w.fault(FaultBarrier, in, w.exists, "barrier %d never completes: %d of %d threads arrived; %s", id, b.arrived, b.expected, strings.Join(missing, "; "))
	}
	w := c.warps[0]
	return w.fault(FaultInternal, &c.k.code[0], 0, "interpreter bug: CTA deadlocked with no barrier pending")
}

// ---- warp collectives ----

// collective runs shfl/vote/redux/bar.warp.sync for the lanes of m. Every
// lane names its member mask; all lanes of a mask must execute this same
// instruction with the same mask. Lanes wait here until the rest of their
// mask arrives.
func (w *warp) collective(in *inst, m uint32) *Fault {
	g := &w.groups[w.cur]
	if m == 0 {
		g.pc++
		w.advanced()
		return nil
	}
	M := w.v(in.mask)
	l0 := bits.TrailingZeros32(m)
	mk := uint32(M[l0])
	uniform := true
	for x := m; x != 0; x &= x - 1 {
		if uint32(M[bits.TrailingZeros32(x)]) != mk {
			uniform = false
			break
		}
	}
	need := mk
	if !uniform {
		for x := m; x != 0; x &= x - 1 {
			l := bits.TrailingZeros32(x)
			ml := uint32(M[l])
			need |= ml
			for y := ml & m; y != 0; y &= y - 1 {
				if j := bits.TrailingZeros32(y); uint32(M[j]) != ml {
					return w.fault(FaultCollective, in, 1<<l, "lanes disagree on the member mask: lane %d has %#08x, lane %d has %#08x", l, ml, j, uint32(M[j]))
				}
			}
		}
	}
	for x := m; x != 0; x &= x - 1 {
		if l := bits.TrailingZeros32(x); uint32(M[l])&(1<<l) == 0 {
			return w.fault(FaultCollective, in, 1<<l, "lane %d executes the collective but is not in its member mask %#08x", l, uint32(M[l]))
		}
	}
	if missing := need &^ m; missing != 0 {
		if x := missing & g.mask; x != 0 {
			return w.fault(FaultCollective, in, m, "lanes %s are in the member mask %#08x but skip this instruction (guard false)", lanes(x), need)
		}
		if x := missing &^ w.live; x != 0 {
			return w.fault(FaultCollective, in, m, "member mask %#08x names lanes that will never arrive: %s", need, w.whereAre(x))
		}
		g.wait = waitColl
		w.pick()
		return nil
	}
	w.active = g.mask
	if uniform {
		in.coll(w, mk)
	} else {
		for x := m; x != 0; {
			part := uint32(M[bits.TrailingZeros32(x)])
			in.coll(w, part)
			x &^= part
		}
	}
	g.pc++
	w.advanced()
	return nil
}
