package emu

// This file is the shared-memory race detector (Launch.RaceCheck).
//
// Time between two completed CTA barriers is an epoch. For each 4-byte word
// of shared memory the detector keeps, for the current epoch, the last
// writer and up to two readers. An access conflicts with a recorded one
// when they come from different threads, at least one writes, they are not
// both atomic, and no synchronisation orders them. Within an epoch only
// bar.warp.sync orders threads: the lanes of its member mask, after it. A
// completed barrier (bar.sync/barrier.sync, with or without a thread count)
// starts a new epoch for the whole CTA, so a barrier of a subset of the
// threads is treated as ordering everyone: the detector may miss a race
// across named barriers, it never reports a false one there. shfl, vote and
// redux do not order memory. Atomics count as writes that never race with
// each other. Sub-word (8- and 16-bit) accesses count for their whole word.

type access struct {
	thread int32 // linear thread id + 1; 0: none
	pc     int32
	sync   int32 // the warp's count of warp syncs at the time of the access
	atomic bool
}

type shadow struct {
	epoch  uint32
	writer access
	r1, r2 access
}

type raceState struct {
	epoch uint32
	words []shadow
	// syncs holds, per warp, the member masks of the bar.warp.sync executed
	// in the current epoch, in order.
	syncs [][]uint32
}

func newRaceState(smemBytes, warps int) *raceState {
	return &raceState{epoch: 1, words: make([]shadow, (smemBytes+3)/4), syncs: make([][]uint32, warps)}
}

// barrier starts a new epoch.
func (r *raceState) barrier() {
	r.epoch++
	for i := range r.syncs {
		r.syncs[i] = r.syncs[i][:0]
	}
}

// warpSync records a bar.warp.sync of the lanes of m in warp w.
func (r *raceState) warpSync(w int, m uint32) { r.syncs[w] = append(r.syncs[w], m) }

// ordered reports whether a's access happens before the current access of
// thread t: only a bar.warp.sync of both, since a, can order them here.
func (r *raceState) ordered(a access, t int32) bool {
	w1, w2 := (a.thread-1)/32, (t-1)/32
	if w1 != w2 {
		return false
	}
	both := uint32(1)<<((a.thread-1)%32) | uint32(1)<<((t-1)%32)
	for _, m := range r.syncs[w1][a.sync:] {
		if m&both == both {
			return true
		}
	}
	return false
}

// check records an access of thread t (linear id) to shared offset off and
// returns the conflicting earlier access, if any.
func (r *raceState) check(off int, t int32, pc int32, write, atomic bool) (access, bool) {
	s := &r.words[off/4]
	if s.epoch != r.epoch {
		*s = shadow{epoch: r.epoch}
	}
	now := access{thread: t, pc: pc, sync: int32(len(r.syncs[(t-1)/32])), atomic: atomic}
	conflicts := func(a access) bool {
		return a.thread != 0 && a.thread != t && !(a.atomic && atomic) && !r.ordered(a, t)
	}
	if conflicts(s.writer) {
		return s.writer, true
	}
	if write {
		for _, a := range []access{s.r1, s.r2} {
			if conflicts(a) {
				return a, true
			}
		}
		s.writer = now
		return access{}, false
	}
	switch {
	case s.r1.thread == 0 || s.r1.thread == t:
		s.r1 = now
	case s.r2.thread == 0 || s.r2.thread == t:
		s.r2 = now
	}
	return access{}, false
}

// raceFault describes a race between the current access (lane of w, at in)
// and an earlier one.
func (w *warp) raceFault(in *inst, lane int, addr uint64, write, atomic bool, other access) *Fault {
	verb := func(write, atomic bool) string {
		switch {
		case atomic:
			return "atomically updates"
		case write:
			return "writes"
		}
		return "reads"
	}
	ot := int(other.thread - 1)
	o := &w.c.k.code[other.pc]
	otherWrites := other.atomic || w.c.race.isWriter(addr, other)
	tid := w.c.tid(ot)
	return w.addrFault(FaultRace, in, lane, addr,
		"this thread %s shared memory that thread (%d,%d,%d) [warp %d lane %d] %s at line %d `%s`, with no barrier between them",
		verb(write, atomic), tid[0], tid[1], tid[2], ot/32, ot%32, verb(otherWrites, other.atomic), o.line, o.text)
}

// isWriter reports whether a is the recorded writer of the word at addr.
func (r *raceState) isWriter(addr uint64, a access) bool {
	off := int(addr - sharedWindow)
	return off >= 0 && off/4 < len(r.words) && r.words[off/4].writer == a
}
