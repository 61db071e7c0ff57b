package emu

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"

	"github.com/gvr-go/gvr/ptx"
)

// This file runs a cluster: its CTAs together, the schedule that
// interleaves their warps, the cluster barrier, mapa and the
// .shared::cluster windows, and the report of a cluster that cannot go on.

// Shared::cluster addresses. A CTA's own .shared addresses (below
// 1<<24) are valid .shared::cluster addresses of itself; the shared memory
// of the CTA of rank r is also at clusterWindow(r) + its .shared address,
// which is what mapa returns.
const rankShift = 24

func clusterWindow(rank int) uint64 { return uint64(rank+1) << rankShift }

// maxTurn bounds a warp's turn when warps are interleaved, in warp
// instructions; maxDelay bounds how long after its issue a bulk copy lands,
// in the cluster's warp instructions.
const (
	maxTurn  = 32
	maxDelay = 256
)

// cluster is the CTAs of one cluster and what they share.
type cluster struct {
	ls         *launchState
	ctas       []*cta // by rank
	rng        *rand.Rand
	interleave bool  // warps take short turns in a seeded random order
	clock      int64 // warp instructions of the cluster so far
	index      int   // the cluster's index in grid order
	first      int   // the pool slot of its first CTA's warps (0 unless co-resident)

	// The cluster barrier: its phase (completed phases), the threads
	// that arrived in it, the threads that exited (they count as arrived).
	cphase   int
	carrived int
	cexited  int

	mbars    map[mbKey]*mbarrier
	arrivals []arrival   // mbarrier arrivals, for the race detector
	pending  []*bulkCopy // bulk copies issued, not landed yet
	copies   []*bulkCopy // every bulk copy, by id (the race detector names them)
}

// nclusters is the grid's clusters in each dimension.
func (ls *launchState) nclusters() [3]int {
	var n [3]int
	for i := range n {
		n[i] = ls.grid[i] / ls.cshape[i]
	}
	return n
}

// newCluster sets up the CTAs of the cluster at position id.
func (ls *launchState) newCluster(id [3]int) *cluster {
	seed := ls.seed
	if seed == 0 {
		seed = 0x9e3779b97f4a7c15
	}
	// Each cluster gets its own schedule, the same on every run.
	n := ls.nclusters()
	idx := uint64(id[0] + n[0]*(id[1]+n[1]*id[2]))
	cl := &cluster{ls: ls, rng: rand.New(rand.NewPCG(seed, idx)), mbars: map[mbKey]*mbarrier{},
		interleave: ls.csize > 1 || ls.async || ls.coResident, index: int(idx)}
	if ls.coResident {
		// Every cluster is resident at once: each has warps of its own.
		cl.first = cl.index * ls.csize
	}
	s := ls.cshape
	for z := 0; z < s[2]; z++ {
		for y := 0; y < s[1]; y++ {
			for x := 0; x < s[0]; x++ {
				cta := [3]int{id[0]*s[0] + x, id[1]*s[1] + y, id[2]*s[2] + z}
				cl.ctas = append(cl.ctas, ls.newCTA(cl, cta, len(cl.ctas)))
			}
		}
	}
	return cl
}

// run runs the cluster's CTAs to their end or to a fault. Each round gives
// every warp that can run a turn. Without interleaving (one CTA, no
// mbarriers or bulk copies) the warps run in order and a turn lasts until
// the warp blocks, as fast as the interpreter goes. With it, each round
// visits the cluster's warps in a random order and each turn lasts 1 to
// maxTurn warp instructions, both drawn from the launch's seed; bulk copies
// land between turns once their random delay has passed, or when nothing
// else can run. When nothing can run and no copy is pending, the cluster is
// deadlocked: a fault says where every warp waits.
func (cl *cluster) run() *Fault {
	var warps []*warp
	for _, c := range cl.ctas {
		warps = append(warps, c.warps...)
	}
	for {
		if cl.interleave {
			cl.rng.Shuffle(len(warps), func(i, j int) { warps[i], warps[j] = warps[j], warps[i] })
		}
		ran, live := false, false
		for _, w := range warps {
			if w.done {
				continue
			}
			live = true
			if w.cur < 0 && !w.wake() {
				continue
			}
			ran = true
			w.budget = math.MaxInt64
			if cl.interleave {
				w.budget = 1 + cl.rng.Int64N(maxTurn)
			}
			if f := w.run(); f != nil {
				return f
			}
			if f := cl.landDue(); f != nil {
				return f
			}
		}
		switch {
		case !live && len(cl.pending) == 0:
			return nil
		case !ran && len(cl.pending) > 0:
			// Nothing else can happen before the next copy lands. Copies
			// still in flight when every thread has exited land too: the
			// race detector then sees reads that came before them.
			if f := cl.land(0); f != nil {
				return f
			}
		case !ran:
			return cl.deadlock()
		}
	}
}

// wake makes the warp's lanes that wait for a cluster barrier or an
// mbarrier phase that has completed runnable again, and reports whether
// any lane can run.
func (w *warp) wake() bool {
	for i := range w.groups {
		g := &w.groups[i]
		switch g.wait {
		case waitCluster:
			if w.c.cl.cphase > w.cphase {
				g.wait = running
			}
		case waitMbar:
			in := &w.c.k.code[g.pc]
			if done, f := in.wait(w, w.guarded(in, g.mask)); done || f != nil {
				g.wait = running // it runs again, and completes or faults
			}
		}
	}
	w.pick()
	return w.cur >= 0
}

// guarded is the lanes of m whose guard of in is true.
func (w *warp) guarded(in *inst, m uint32) uint32 {
	if in.guard >= 0 {
		return m & w.pred(in.guard, in.gneg)
	}
	return m
}

// ---- the cluster barrier ----

// clusterBarrier runs barrier.cluster.arrive or .wait for the lanes of m.
// Both are .aligned: the warp's live threads execute them together. A
// thread arrives once per phase and waits after arriving; wait blocks until
// every thread of the cluster arrived, exited threads counting as arrived.
func (w *warp) clusterBarrier(in *inst, m uint32) *Fault {
	g := &w.groups[w.cur]
	if m == 0 {
		g.pc++
		w.advanced()
		return nil
	}
	if m != g.mask {
		return w.fault(FaultBarrier, in, g.mask&^m, "the guard is false for lanes %s and true for lanes %s: barrier.cluster is executed by all threads of a warp together", lanes(g.mask&^m), lanes(m))
	}
	if g.mask != w.live {
		g.wait = waitBarWarp // wait for the warp's other lanes
		w.pick()
		return nil
	}
	cl := w.c.cl
	if in.kind == kCArrive {
		if w.carrived != 0 {
			return w.fault(FaultBarrier, in, m, "arrives at the cluster barrier again without waiting for phase %d it arrived in", w.cphase)
		}
		w.carrived, w.cphase = m, cl.cphase
		cl.carrived += bits.OnesCount32(m)
		cl.completeClusterPhase()
	} else {
		if w.carrived != m {
			return w.fault(FaultBarrier, in, m, "waits at the cluster barrier without arriving first (barrier.cluster.arrive)")
		}
		if cl.cphase <= w.cphase {
			g.wait = waitCluster
			w.pick()
			return nil
		}
		w.carrived = 0
	}
	g.pc++
	w.advanced()
	return nil
}

// completeClusterPhase ends the cluster barrier's phase once every thread
// has arrived or exited, some having arrived. For the race detector that
// is a barrier of every CTA of the cluster.
func (cl *cluster) completeClusterPhase() {
	if cl.carrived == 0 || cl.carrived+cl.cexited < cl.ls.csize*cl.ls.nthreads {
		return
	}
	cl.cphase++
	cl.carrived = 0
	for _, c := range cl.ctas {
		if c.race != nil {
			c.race.barrier(cl.clock)
		}
	}
}

// exit counts the lanes of m of w, exiting, as arrived at the cluster
// barrier from now on.
func (cl *cluster) exit(w *warp, m uint32) {
	if x := m & w.carrived; x != 0 {
		if w.cphase == cl.cphase {
			cl.carrived -= bits.OnesCount32(x) // counted below, for good
		}
		w.carrived &^= x
	}
	cl.cexited += bits.OnesCount32(m)
	cl.completeClusterPhase()
}

// ---- mapa and the shared::cluster windows ----

// sharedTarget resolves a shared address in space sp (.shared, .shared::cta,
// .shared::cluster, or generic) to the CTA whose memory it is and the
// .shared address there.
func (w *warp) sharedTarget(in *inst, sp ptx.Space, l int, addr uint64) (*cta, uint64, *Fault) {
	a := addr
	if sp == ptx.SpaceNone {
		a -= genericShared
	}
	if a < 1<<rankShift {
		return w.c, a, nil
	}
	if sp == ptx.SpaceShared || sp == ptx.SpaceSharedCTA {
		return nil, 0, w.addrFault(FaultMemory, in, l, addr, ".%s access to a .shared::cluster address (from mapa): use ld/st.shared::cluster", sp)
	}
	rank := int(a>>rankShift) - 1
	cl := w.c.cl
	if a>>32 != 0 || rank >= len(cl.ctas) {
		return nil, 0, w.addrFault(FaultMemory, in, l, addr, "shared::cluster address of CTA rank %d: the cluster has %d CTAs", rank, len(cl.ctas))
	}
	t := cl.ctas[rank]
	if t != w.c && t.finished() {
		return nil, 0, w.addrFault(FaultMemory, in, l, addr, "the shared memory of CTA rank %d, whose threads have all exited (a cluster barrier before they exit keeps it)", rank)
	}
	return t, a & (1<<rankShift - 1), nil
}

// mapa maps a shared address of this CTA (or a .shared::cluster address)
// to the same place in the CTA of the given rank; without .shared::cluster
// both are generic addresses of the shared window.
func (c *compiler) mapa(ci *inst, in *ptx.Inst, sig ptx.Sig) (execFn, error) {
	d, err := c.dst(in.Args[0])
	if err != nil {
		return nil, err
	}
	a, err := c.src(in.Args[1], sig.Type)
	if err != nil {
		return nil, err
	}
	rank, err := c.src(in.Args[2], ptx.U32)
	if err != nil {
		return nil, err
	}
	generic := sig.Space == ptx.SpaceNone
	return func(w *warp, m uint32) *Fault {
		A, R := w.v(a), w.v(rank)
		n := len(w.c.cl.ctas)
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			x := A[l]
			if generic {
				x -= genericShared
			}
			if x >= 1<<32 || x&(1<<rankShift-1) < sharedWindow {
				return w.addrFault(FaultMemory, ci, l, A[l], "mapa of an address outside the shared window")
			}
			if R[l] >= uint64(n) {
				return w.fault(FaultMemory, ci, 1<<l, "mapa to CTA rank %d: the cluster has %d CTAs", R[l], n)
			}
			x = clusterWindow(int(R[l])) | x&(1<<rankShift-1)
			if generic {
				x += genericShared
			}
			w.r.at(d)[l] = x
		}
		return nil
	}, nil
}

// isExplicit is mov.pred p, %is_explicit_cluster: true when the entry
// declares its cluster shape (.reqnctapercluster), false for the implicit
// 1x1x1 cluster.
func (c *compiler) isExplicit(in *ptx.Inst) (execFn, error) {
	p, neg, err := predOf(in.Args[0])
	if err != nil || neg {
		return nil, fmt.Errorf("mov of %%is_explicit_cluster writes a plain predicate")
	}
	return func(w *warp, m uint32) *Fault {
		if w.c.ls.explicit {
			w.p[p] |= m
		} else {
			w.p[p] &^= m
		}
		return nil
	}, nil
}

// elect.sync d|p, membermask elects the lowest lane of the member mask (all
// of whose lanes execute it together, like any collective): p is true
// there, and every lane gets its id in d.
func (c *compiler) elect(ci *inst, in *ptx.Inst) error {
	var err error
	if ci.mask, err = c.src(in.Args[2], ptx.U32); err != nil {
		return err
	}
	d := int32(-1)
	if _, sink := in.Args[0].(ptx.Sink); !sink {
		if d, err = c.dst(in.Args[0]); err != nil {
			return err
		}
	}
	p, neg, err := predOf(in.Args[1])
	if err != nil || neg {
		return fmt.Errorf("elect.sync writes a plain predicate")
	}
	ci.coll = func(w *warp, part uint32) {
		leader := bits.TrailingZeros32(part)
		w.p[p] = w.p[p]&^part | 1<<leader
		if d >= 0 {
			for x := part; x != 0; x &= x - 1 {
				w.r.at(d)[bits.TrailingZeros32(x)] = uint64(leader)
			}
		}
	}
	return nil
}

// ---- deadlock ----

// deadlock reports why no warp of the cluster can go on: it names the
// first warp (in rank and warp order) waiting at the cluster barrier, at an
// mbarrier, or at a CTA barrier, and where every other warp is.
func (cl *cluster) deadlock() *Fault {
	for _, kind := range []waitKind{waitCluster, waitMbar} {
		for _, c := range cl.ctas {
			for _, w := range c.warps {
				for _, g := range w.groups {
					if g.wait != kind {
						continue
					}
					in := &c.k.code[g.pc]
					var why string
					if kind == waitCluster {
						why = fmt.Sprintf("the cluster barrier's phase %d never completes: %d of the cluster's %d threads arrived, %d exited",
							cl.cphase, cl.carrived, cl.ls.csize*cl.ls.nthreads, cl.cexited)
					} else {
						why = w.mbarrierStuck(in, g.mask)
					}
					return w.fault(FaultBarrier, in, g.mask, "%s; %s", why, cl.whereAll())
				}
			}
		}
	}
	for _, c := range cl.ctas {
		if !c.finished() {
			f := c.deadlock()
			if len(cl.ctas) > 1 && f.Kind == FaultBarrier {
				f.Msg += "; " + cl.whereAll()
			}
			return f
		}
	}
	return &Fault{Kind: FaultInternal, Kernel: cl.ls.k.name, Msg: "interpreter bug: cluster deadlocked with every CTA finished"}
}

// whereAll says where the cluster's warps that have not finished are.
func (cl *cluster) whereAll() string {
	var parts []string
	for _, c := range cl.ctas {
		var ws []string
		exited := 0
		for _, w := range c.warps {
			if w.done {
				exited++
				continue
			}
			ws = append(ws, fmt.Sprintf("warp %d: %s", w.id, w.whereAre(w.live)))
		}
		if exited > 0 {
			ws = append(ws, fmt.Sprintf("%d warps exited", exited))
		}
		parts = append(parts, fmt.Sprintf("CTA rank %d (%d,%d,%d): %s", c.rank, c.id[0], c.id[1], c.id[2], strings.Join(ws, ", ")))
	}
	return strings.Join(parts, "; ")
}
