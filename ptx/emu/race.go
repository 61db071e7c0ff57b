package emu

import "fmt"

// This file is the shared-memory race detector (Launch.RaceCheck).
//
// Time between two completed CTA barriers is an epoch. For each 2-byte grain
// of shared memory the detector keeps, for the current epoch, the last
// writer and up to two readers; a bulk copy's landing stays the writer
// past the epoch's end, as only its mbarrier orders it (current). An
// access conflicts with a recorded one when they come from different
// threads, at least one writes, they are not both atomic, and no
// synchronisation orders them. Within an epoch only
// bar.warp.sync orders threads: the lanes of its member mask, after it. A
// completed barrier (bar.sync/barrier.sync, with or without a thread count)
// starts a new epoch for the whole CTA, so a barrier of a subset of the
// threads is treated as ordering everyone: the detector may miss a race
// across named barriers, it never reports a false one there. An mbarrier
// orders too: an access is ordered before a thread whose warp saw a phase
// of an mbarrier complete in which the accessing thread arrived after the
// access, or another thread of its CTA arrived after a CTA barrier that
// followed the access (a release is cumulative). shfl, vote and redux do
// not order memory. Atomics count as writes that never race with
// each other. A byte access counts for its whole grain (two threads writing
// the two bytes of one grain are reported); 16-bit accesses to the halves of
// a word are told apart, as 16-bit scores in shared memory need.

// raceGrain is the bytes of shared memory one shadow record watches.
const raceGrain = 2

type access struct {
	// thread is the thread's index in its cluster (rank, then linear id)
	// + 1; 0: none; -(id+1): the bulk copy of that id.
	thread int32
	pc     int32
	sync   int32  // the warp's count of warp syncs at the time of the access
	epoch  uint32 // the epoch of the accessing thread's CTA at the time
	time   int64  // the cluster's clock at the time
	atomic bool
}

type shadow struct {
	epoch  uint32
	writer access
	r1, r2 access
}

type raceState struct {
	barTime int64 // the cluster's clock at the CTA's last completed barrier
	epoch   uint32
	grains  []shadow
	// syncs holds, per warp, the member masks of the bar.warp.sync executed
	// in the current epoch, in order.
	syncs [][]uint32
}

func newRaceState(smemBytes, warps int) *raceState {
	return &raceState{epoch: 1, grains: make([]shadow, (smemBytes+raceGrain-1)/raceGrain), syncs: make([][]uint32, warps)}
}

// barrier starts a new epoch, at the cluster's clock now.
func (r *raceState) barrier(now int64) {
	r.barTime = now
	r.epoch++
	for i := range r.syncs {
		r.syncs[i] = r.syncs[i][:0]
	}
}

// warpSync records a bar.warp.sync of the lanes of m in warp w.
func (r *raceState) warpSync(w int, m uint32) { r.syncs[w] = append(r.syncs[w], m) }

// threadID is lane l of w's index in the cluster + 1.
func (w *warp) threadID(l int) int32 { return int32(w.c.rank*32*len(w.c.warps) + w.id*32 + l + 1) }

// ordered reports whether access a happens before the current access by
// lane l of w: a bulk copy's write, if the warp saw its mbarrier phase
// complete; another thread's access of the same CTA, if that CTA completed a
// barrier since (the access was to another CTA's memory), or a
// bar.warp.sync of both since; any thread's access, if an mbarrier
// arrival orders it (arrivedAfter, looked at last: it scans the arrivals).
func (w *warp) ordered(a access, l int) bool {
	if a.thread < 0 {
		cp := w.c.cl.copies[-a.thread-1]
		return w.observed[cp.bar] > cp.phase
	}
	return w.orderedInCTA(a, l) || w.arrivedAfter(a)
}

// orderedInCTA is ordered's test for an access by a thread of w's CTA: a
// barrier of the CTA since, or a bar.warp.sync of both threads since.
func (w *warp) orderedInCTA(a access, l int) bool {
	per := int32(32 * len(w.c.warps))
	if int((a.thread-1)/per) != w.c.rank {
		return false
	}
	r := w.c.race
	if r.epoch != a.epoch {
		return true
	}
	t := (a.thread - 1) % per
	if int(t/32) != w.id {
		return false
	}
	both := uint32(1)<<(t%32) | uint32(1)<<l
	for _, m := range r.syncs[w.id][a.sync:] {
		if m&both == both {
			return true
		}
	}
	return false
}

// check records an access by lane l of w, at pc, to offset off of the
// shared memory r watches, and returns the conflicting earlier access, if
// any, and whether it wrote.
func (r *raceState) check(off int, w *warp, l int, pc int32, write, atomic bool) (access, bool, bool) {
	s := r.current(off)
	t := w.threadID(l)
	mine := w.c.race
	now := access{thread: t, pc: pc, sync: int32(len(mine.syncs[w.id])), epoch: mine.epoch, time: w.c.cl.clock, atomic: atomic}
	conflicts := func(a access) bool {
		return a.thread != 0 && a.thread != t && !(a.atomic && atomic) && !w.ordered(a, l)
	}
	if conflicts(s.writer) {
		return s.writer, true, true
	}
	if write {
		for _, a := range []access{s.r1, s.r2} {
			if conflicts(a) {
				return a, false, true
			}
		}
		s.writer = now
		return access{}, false, false
	}
	switch {
	case s.r1.thread == 0 || s.r1.thread == t:
		s.r1 = now
	case s.r2.thread == 0 || s.r2.thread == t:
		s.r2 = now
	}
	return access{}, false, false
}

// current is the shadow of the grain at off for a thread's access in the
// current epoch: what an earlier epoch recorded is ordered by the barrier
// that ended it, but for a bulk copy's landing (or an st.async's), which
// only its mbarrier's phase orders (ordered): it stays the grain's writer
// until a write replaces it. (An st.async's issue, unordered, does not
// look back past the barrier: the chain of rounds that orders a buffer's
// reuse runs through other CTAs' mbarriers, which ordered does not follow.)
func (r *raceState) current(off int) *shadow {
	s := &r.grains[off/raceGrain]
	if s.epoch != r.epoch {
		w := s.writer
		*s = shadow{epoch: r.epoch}
		if w.thread < 0 {
			s.writer = w
		}
	}
	return s
}

// unordered returns an access to the grain at off (in the current epoch)
// by another thread that is not ordered before lane l of w, and whether it
// wrote: what an st.async that w issues there would race with; with
// atomic (a red.async), not an atomic access.
func (r *raceState) unordered(off int, w *warp, l int, atomic bool) (access, bool, bool) {
	s := &r.grains[off/raceGrain]
	if s.epoch != r.epoch {
		return access{}, false, false
	}
	t := w.threadID(l)
	for i, a := range []access{s.writer, s.r1, s.r2} {
		if a.thread != 0 && a.thread != t && !(atomic && a.atomic) && !w.ordered(a, l) {
			return a, i == 0, true
		}
	}
	return access{}, false, false
}

// landing records bulk copy cp's write of the grain at off, and returns an
// access that conflicts with it: one made after the copy was issued (the
// accesses before it are taken as ordered: a thread hands the buffer over
// before the copy is issued), in this epoch or an earlier one: a CTA
// barrier does not order a copy in flight, only its mbarrier's phase does,
// and that completes after the landing.
func (r *raceState) landing(off int, cp *bulkCopy) (access, bool) {
	s := &r.grains[off/raceGrain]
	atomic := cp.red != nil // a red.async races with no atomic, nor another red.async
	for _, a := range []access{s.writer, s.r1, s.r2} {
		if a.thread != 0 && a.time > cp.issued && !(atomic && a.atomic) {
			return a, true
		}
	}
	if s.epoch != r.epoch {
		*s = shadow{epoch: r.epoch}
	}
	s.writer = access{thread: int32(-cp.id - 1), pc: int32(cp.in.pc), time: cp.w.c.cl.clock, atomic: atomic}
	return access{}, false
}

// raceFault describes a race between the current access (lane of w, at in,
// to shared memory of CTA t) and an earlier one.
func (w *warp) raceFault(in *inst, lane int, t *cta, addr uint64, write, atomic bool, other access, otherWrites bool) *Fault {
	where := ""
	if t != w.c {
		where = fmt.Sprintf(" of CTA rank %d", t.rank)
	}
	return w.addrFault(FaultRace, in, lane, addr,
		"this thread %s shared memory%s that %s, with no barrier between them",
		verb(write, atomic), where, w.c.cl.describe(other, otherWrites))
}

func verb(write, atomic bool) string {
	switch {
	case atomic:
		return "atomically updates"
	case write:
		return "writes"
	}
	return "reads"
}

// describe names an access: the thread (and its CTA if the cluster has
// several), what it did and where.
func (cl *cluster) describe(a access, writes bool) string {
	if a.thread < 0 {
		cp := cl.copies[-a.thread-1]
		t := cp.w.tid(cp.lane)
		return fmt.Sprintf("the %s issued by thread (%d,%d,%d) of CTA rank %d at line %d `%s` wrote (the reader did not wait on its mbarrier phase %d)",
			cp.what(), t[0], t[1], t[2], cp.w.c.rank, cp.in.line, cp.in.text, cp.phase)
	}
	per := 32 * len(cl.ctas[0].warps)
	c := cl.ctas[int(a.thread-1)/per]
	ot := int(a.thread-1) % per
	tid := c.tid(ot)
	who := fmt.Sprintf("thread (%d,%d,%d) [warp %d lane %d]", tid[0], tid[1], tid[2], ot/32, ot%32)
	if len(cl.ctas) > 1 {
		who += fmt.Sprintf(" of CTA rank %d", c.rank)
	}
	o := &c.k.code[a.pc]
	return fmt.Sprintf("%s %s at line %d `%s`", who, verb(writes || a.atomic, a.atomic), o.line, o.text)
}

// arrival is an mbarrier arrival the race detector keeps: by thread (as
// access.thread), in phase, at the cluster's clock time, when its CTA's
// last barrier had completed at barTime.
type arrival struct {
	key           mbKey
	phase         uint32
	thread        int32
	time, barTime int64
}

// recordArrival notes lane l of w's arrival on the mbarrier key in phase.
func (w *warp) recordArrival(l int, key mbKey, phase uint32) {
	if w.c.race == nil {
		return
	}
	cl := w.c.cl
	cl.arrivals = append(cl.arrivals, arrival{key: key, phase: phase, thread: w.threadID(l), time: cl.clock, barTime: w.c.race.barTime})
}

// arrivedAfter reports whether access a is ordered before w's current
// access by an mbarrier: w saw a phase complete in which a's thread
// arrived after a, or a thread of a's CTA arrived after a barrier of that
// CTA that followed a.
func (w *warp) arrivedAfter(a access) bool {
	per := int32(32 * len(w.c.warps))
	for _, ar := range w.c.cl.arrivals {
		if ar.time <= a.time || w.observed[ar.key] <= ar.phase {
			continue
		}
		if ar.thread == a.thread || (ar.thread-1)/per == (a.thread-1)/per && a.time < ar.barTime {
			return true
		}
	}
	return false
}
