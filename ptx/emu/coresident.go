package emu

import (
	"math/rand/v2"
)

// This file runs the clusters of a co-resident launch (Launch.CoResident)
// together, in one schedule.

// coResidentStream is the PCG stream of a co-resident launch's schedule;
// each cluster's own stream (its index) still draws when its bulk copies
// land.
const coResidentStream = 1<<64 - 1

// runTogether runs the clusters cls (in grid order) to their end or to a
// fault, all at once. Each round visits every warp of every cluster in a
// random order and gives each that can run a turn of 1 to maxTurn warp
// instructions, both drawn from the launch's seed; after a turn, the bulk
// copies of the warp's cluster whose delay has passed land. A cluster none
// of whose warps could run in a round lands its oldest pending copy, as
// cluster.run does when nothing can run; when it has none either (and
// warps that have not exited) it can never go on, whatever the others do
// (what it waits for, barriers and mbarriers, is its own), and the launch
// ends with its deadlock. A warp that spins on global memory for ever ends
// in a FaultSteps, as its CTA's step budget runs out.
func (ls *launchState) runTogether(cls []*cluster) *Fault {
	seed := ls.seed
	if seed == 0 {
		seed = 0x9e3779b97f4a7c15
	}
	rng := rand.New(rand.NewPCG(seed, coResidentStream))
	var warps []*warp
	for _, cl := range cls {
		for _, c := range cl.ctas {
			warps = append(warps, c.warps...)
		}
	}
	ran := make([]bool, len(cls))  // a warp of the cluster ran this round
	live := make([]bool, len(cls)) // a warp of the cluster has not finished
	for {
		rng.Shuffle(len(warps), func(i, j int) { warps[i], warps[j] = warps[j], warps[i] })
		clear(ran)
		clear(live)
		for _, w := range warps {
			if w.done {
				continue
			}
			cl := w.c.cl
			live[cl.index] = true
			if w.cur < 0 && !w.wake() {
				continue
			}
			ran[cl.index] = true
			w.budget = 1 + rng.Int64N(maxTurn)
			if f := w.run(); f != nil {
				return f
			}
			if f := cl.landDue(); f != nil {
				return f
			}
		}
		progress := false
		for i, cl := range cls {
			switch {
			case ran[i]:
				progress = true
			case len(cl.pending) > 0:
				// Nothing else can happen in this cluster before its next
				// copy lands (copies still in flight when its threads have
				// all exited land too).
				if f := cl.land(0); f != nil {
					return f
				}
				progress = true
			case live[i]:
				return cl.deadlock()
			}
		}
		if !progress {
			return nil // every warp of every cluster has exited
		}
	}
}
