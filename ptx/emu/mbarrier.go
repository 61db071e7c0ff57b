package emu

import (
	"fmt"
	"math/bits"

	"github.com/gvr-go/gvr/ptx"
)

// This file is the mbarrier objects and the bulk copies that complete on
// them.
//
// An mbarrier is an 8-byte object in a CTA's shared memory; the
// interpreter keeps its state beside the memory, by address: the arrivals
// each phase expects, those still pending, the transaction count (bytes
// expected by arrive.expect_tx minus bytes delivered by bulk copies) and
// the phases completed so far. A phase completes when no arrival is
// pending and the transaction count is zero; the next phase then expects
// the same arrivals.

// mbKey names an mbarrier: its CTA's rank and its .shared address there.
type mbKey struct {
	rank int
	addr uint32
}

type mbarrier struct {
	count   int    // arrivals per phase
	pending int    // arrivals still missing in the current phase
	tx      int    // transaction count, bytes
	phase   uint32 // phases completed
}

// maxMbarrierCount is the largest arrival count an mbarrier holds (2^20-1).
const maxMbarrierCount = 1<<20 - 1

func (mb *mbarrier) complete() {
	if mb.pending == 0 && mb.tx == 0 {
		mb.phase++
		mb.pending = mb.count
	}
}

// mbarAt resolves the mbarrier at addr (space sp) for lane l.
func (w *warp) mbarAt(in *inst, sp ptx.Space, l int, addr uint64) (*cta, mbKey, *Fault) {
	t, a, f := w.sharedTarget(in, sp, l, addr)
	if f != nil {
		return nil, mbKey{}, f
	}
	if a&7 != 0 {
		return nil, mbKey{}, w.addrFault(FaultAlign, in, l, addr, "an mbarrier must be aligned to 8 bytes")
	}
	if a < sharedWindow || a+8 > sharedWindow+uint64(len(t.smem)) {
		return nil, mbKey{}, w.addrFault(FaultMemory, in, l, addr, "mbarrier outside the %d bytes of shared memory of CTA rank %d", len(t.smem), t.rank)
	}
	return t, mbKey{t.rank, uint32(a)}, nil
}

// mbar returns the initialised mbarrier at addr, or a fault.
func (w *warp) mbar(in *inst, sp ptx.Space, l int, addr uint64) (*mbarrier, mbKey, *Fault) {
	_, key, f := w.mbarAt(in, sp, l, addr)
	if f != nil {
		return nil, key, f
	}
	mb := w.c.cl.mbars[key]
	if mb == nil {
		return nil, key, w.addrFault(FaultBarrier, in, l, addr, "the mbarrier of CTA rank %d at %#x is not initialised (mbarrier.init), or was invalidated", key.rank, key.addr)
	}
	return mb, key, nil
}

// mbarrier compiles mbarrier.init, inval, arrive{.expect_tx}, try_wait and
// test_wait (with a state or a parity).
func (c *compiler) mbarrier(ci *inst, in *ptx.Inst, sig ptx.Sig) error {
	sp := sig.Space
	op := in.Mods[0]
	switch op {
	case "init", "inval":
		bar, err := c.addr(in.Args[0])
		if err != nil {
			return err
		}
		var count src
		if op == "init" {
			if count, err = c.src(in.Args[1], ptx.U32); err != nil {
				return err
			}
		}
		ci.fn = func(w *warp, m uint32) *Fault {
			for ; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m)
				_, key, f := w.mbarAt(ci, sp, l, w.at(&bar, l))
				if f != nil {
					return f
				}
				if op == "inval" {
					delete(w.c.cl.mbars, key)
					continue
				}
				n := w.v(count)[l]
				if n == 0 || n > maxMbarrierCount {
					return w.fault(FaultBarrier, ci, 1<<l, "mbarrier.init with a count of %d: 1 to %d", n, maxMbarrierCount)
				}
				w.c.cl.mbars[key] = &mbarrier{count: int(n), pending: int(n)}
			}
			return nil
		}
		return nil
	case "arrive":
		return c.mbarrierArrive(ci, in, sp)
	}
	return c.mbarrierTest(ci, in, sp, op == "test_wait")
}

// mbarrierArrive: each lane arrives (count times, 1 by default) on its
// barrier, in lane order, after adding tx to its transaction count
// (expect_tx); the state it gets back is the phase it arrived in.
func (c *compiler) mbarrierArrive(ci *inst, in *ptx.Inst, sp ptx.Space) error {
	d := int32(-1)
	var err error
	if _, sink := in.Args[0].(ptx.Sink); !sink {
		if d, err = c.dst(in.Args[0]); err != nil {
			return err
		}
	}
	bar, err := c.addr(in.Args[1])
	if err != nil {
		return err
	}
	expectTx := has(in, "expect_tx")
	arg := c.konst(1) // an arrival count, or the bytes expected
	if len(in.Args) == 3 {
		if arg, err = c.src(in.Args[2], ptx.U32); err != nil {
			return err
		}
	}
	ci.fn = func(w *warp, m uint32) *Fault {
		A := w.v(arg)
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			mb, key, f := w.mbar(ci, sp, l, w.at(&bar, l))
			if f != nil {
				return f
			}
			n := 1
			if expectTx {
				mb.tx += int(A[l])
			} else {
				n = int(A[l])
			}
			if n == 0 || n > mb.pending {
				return w.fault(FaultBarrier, ci, 1<<l, "%d arrivals on an mbarrier whose phase %d expects %d more", n, mb.phase, mb.pending)
			}
			state := uint64(mb.phase)
			w.recordArrival(l, key, mb.phase)
			mb.pending -= n
			mb.complete()
			if d >= 0 {
				w.r.at(d)[l] = state
			}
		}
		return nil
	}
	return nil
}

// mbarrierTest compiles try_wait and test_wait. A lane's phase is
// complete when, with .parity, the phase of that parity has completed (the
// current phase has the other parity), or else when the barrier has left
// the phase of the state an arrive returned. try_wait never answers false:
// a warp whose phase is incomplete waits there (as if its suspend time
// never ran out), so a lost arrival is a deadlock the scheduler reports,
// not a spinning loop. test_wait answers at once and, when false, ends the
// warp's turn so that other warps and bulk copies can make progress.
func (c *compiler) mbarrierTest(ci *inst, in *ptx.Inst, sp ptx.Space, test bool) error {
	ci.kind, ci.test = kMWait, test
	p, neg, err := predOf(in.Args[0])
	if err != nil || neg {
		return fmt.Errorf("mbarrier.%s writes a plain predicate", in.Mods[0])
	}
	bar, err := c.addr(in.Args[1])
	if err != nil {
		return err
	}
	ci.bar, ci.sp = &bar, sp
	parity := has(in, "parity")
	arg, err := c.src(in.Args[2], ptx.B64)
	if err != nil {
		return err
	}
	ci.wait = func(w *warp, m uint32) (bool, *Fault) {
		A := w.v(arg)
		var ok uint32
		for x := m; x != 0; x &= x - 1 {
			l := bits.TrailingZeros32(x)
			mb, key, f := w.mbar(ci, sp, l, w.at(&bar, l))
			if f != nil {
				return false, f
			}
			var done bool
			if parity {
				done = uint64(mb.phase&1) != A[l]&1
			} else {
				done = mb.phase > uint32(A[l])
			}
			if done {
				ok |= 1 << l
				if w.observed == nil {
					w.observed = map[mbKey]uint32{}
				}
				w.observed[key] = max(w.observed[key], mb.phase)
			}
		}
		if ok != m && !test {
			return false, nil
		}
		w.p[p] = w.p[p]&^m | ok
		if ok != m && w.c.cl.interleave {
			w.yield = true
		}
		return true, nil
	}
	return nil
}

// mbarrierWait runs try_wait or test_wait for the lanes of m: lanes whose
// phase has not completed wait at a try_wait.
func (w *warp) mbarrierWait(in *inst, m uint32) *Fault {
	g := &w.groups[w.cur]
	if m != 0 {
		done, f := in.wait(w, m)
		if f != nil {
			return f
		}
		if !done {
			g.wait = waitMbar
			w.pick()
			return nil
		}
	}
	g.pc++
	w.advanced()
	return nil
}

// mbarrierStuck describes the mbarrier that lanes m wait on at in, for a
// deadlock report.
func (w *warp) mbarrierStuck(in *inst, m uint32) string {
	l := bits.TrailingZeros32(m)
	_, key, f := w.mbarAt(in, in.sp, l, w.at(in.bar, l))
	mb := w.c.cl.mbars[key]
	if f != nil || mb == nil {
		return "the mbarrier never completes"
	}
	return fmt.Sprintf("the mbarrier of CTA rank %d at %#x never completes phase %d (parity %d): %d of %d arrivals pending, transaction count %d bytes",
		key.rank, key.addr, mb.phase, mb.phase&1, mb.pending, mb.count, mb.tx)
}

// ---- bulk copies ----

// bulkCopy is a cp.async.bulk, or an st.async, in flight: it lands (copies
// its bytes and completes its transactions on its mbarrier) at a later
// point the scheduler draws.
type bulkCopy struct {
	id      int
	w       *warp // the issuing thread: warp, lane, instruction
	lane    int
	in      *inst
	dst     *cta
	dstAddr uint64 // .shared address in dst
	src     uint64 // global address of the bytes (cp.async.bulk)
	data    []byte // or the bytes themselves, as stored (st.async), or the operand (red.async)
	red     fn3    // red.async: the update of the destination's value by the operand
	barTime int64  // st.async, race detector: the issuing CTA's last barrier before the issue
	size    int
	bar     mbKey
	issued  int64  // the cluster's clock at the issue
	due     int64  // the clock from which it may land
	phase   uint32 // the mbarrier phase it completes in (once landed)
}

// bulkCopy compiles
// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size, [bar]:
// each lane of m issues a copy; it is checked now and lands later.
func (c *compiler) bulkCopy(ci *inst, in *ptx.Inst, sig ptx.Sig) (execFn, error) {
	sp := sig.Space
	dst, err := c.addr(in.Args[0])
	if err != nil {
		return nil, err
	}
	srcA, err := c.addr(in.Args[1])
	if err != nil {
		return nil, err
	}
	size, err := c.src(in.Args[2], ptx.U32)
	if err != nil {
		return nil, err
	}
	bar, err := c.addr(in.Args[3])
	if err != nil {
		return nil, err
	}
	return func(w *warp, m uint32) *Fault {
		cl := w.c.cl
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			d, s, n := w.at(&dst, l), w.at(&srcA, l), int(w.v(size)[l])
			if n == 0 || n%16 != 0 {
				return w.fault(FaultAlign, ci, 1<<l, "a bulk copy of %d bytes: the size must be a positive multiple of 16", n)
			}
			if d%16 != 0 || s%16 != 0 {
				return w.fault(FaultAlign, ci, 1<<l, "a bulk copy from %#x to %#x: both must be aligned to 16 bytes", s, d)
			}
			t, a, key, f := w.asyncDest(ci, sp, l, d, n, w.at(&bar, l), "a bulk copy")
			if f != nil {
				return f
			}
			if cl.ls.mem.find(s, n) == nil {
				return w.addrFault(FaultMemory, ci, l, s, "a bulk copy of %d bytes from outside every allocation%s", n, cl.ls.mem.near(s))
			}
			cl.issue(&bulkCopy{w: w, lane: l, in: ci, dst: t, dstAddr: a, src: s, size: n, bar: key})
		}
		return nil
	}, nil
}

// bulkPrefetch compiles cp.async.bulk.prefetch.L2.global [src], size: a
// hint with nothing to do here, but held to what the hardware requires of
// its operands (a positive multiple of 16 bytes, 16-byte aligned) and
// faulting outside every allocation, so that a kernel's prefetch of the
// wrong bytes shows.
func (c *compiler) bulkPrefetch(ci *inst, in *ptx.Inst) (execFn, error) {
	srcA, err := c.addr(in.Args[0])
	if err != nil {
		return nil, err
	}
	size, err := c.src(in.Args[1], ptx.U32)
	if err != nil {
		return nil, err
	}
	return func(w *warp, m uint32) *Fault {
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			s, n := w.at(&srcA, l), int(w.v(size)[l])
			if n == 0 || n%16 != 0 {
				return w.fault(FaultAlign, ci, 1<<l, "a bulk prefetch of %d bytes: the size must be a positive multiple of 16", n)
			}
			if s%16 != 0 {
				return w.fault(FaultAlign, ci, 1<<l, "a bulk prefetch from %#x: it must be aligned to 16 bytes", s)
			}
			if w.c.cl.ls.mem.find(s, n) == nil {
				return w.addrFault(FaultMemory, ci, l, s, "a bulk prefetch of %d bytes from outside every allocation%s", n, w.c.cl.ls.mem.near(s))
			}
		}
		return nil
	}, nil
}

// what names cp's instruction for a fault.
func (cp *bulkCopy) what() string {
	switch {
	case cp.red != nil:
		return "red.async"
	case cp.data != nil:
		return "st.async"
	}
	return "bulk copy"
}

// stAsync compiles
// st.async.shared::cluster.mbarrier::complete_tx::bytes{.v2,.v4}.T [a], b, [bar]
// and, with red, red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.op.T [a], b, [bar]:
// each lane of m stores b (its registers' bytes as they are now) into the
// shared memory of a CTA of the cluster, where it lands later, as a bulk
// copy does, and completes its bytes on the mbarrier at bar, which must be
// in the same CTA. A red.async's landing updates the T there by op
// atomically: it races with no other atomic (red.async landings into one
// word included), only with plain accesses.
func (c *compiler) stAsync(ci *inst, in *ptx.Inst, sig ptx.Sig, red bool) (execFn, error) {
	t := sig.Type
	dst, vals, err := c.storeArgs(in, t)
	if err != nil {
		return nil, err
	}
	bar, err := c.addr(in.Args[2])
	if err != nil {
		return nil, err
	}
	what := "an st.async"
	var f fn3
	if red {
		what = "a red.async"
		if f, err = atomOp(atomOpOf(in), t, false); err != nil {
			return nil, err
		}
	}
	es := t.Bytes()
	n := es * len(vals)
	return func(w *warp, m uint32) *Fault {
		cl := w.c.cl
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			d := w.at(&dst, l)
			if d%uint64(n) != 0 {
				return w.addrFault(FaultAlign, ci, l, d, "%s of %d bytes must be aligned to %d", what, n, n)
			}
			tc, a, key, flt := w.asyncDest(ci, ptx.SpaceSharedCluster, l, d, n, w.at(&bar, l), what)
			if flt != nil {
				return flt
			}
			if r := tc.race; r != nil {
				// What the destination's threads did there (a red.async:
				// other than atomically) must be ordered before this
				// store, as for a plain one.
				off := int(a - sharedWindow)
				for o := off &^ (raceGrain - 1); o < off+n; o += raceGrain {
					if other, otherWrites, race := r.unordered(o, w, l, red); race {
						return w.raceFault(ci, l, tc, d, true, red, other, otherWrites)
					}
				}
			}
			data := make([]byte, n)
			for i, v := range vals {
				store(data[i*es:(i+1)*es], w.v(v)[l])
			}
			cp := &bulkCopy{w: w, lane: l, in: ci, dst: tc, dstAddr: a, data: data, red: f, size: n, bar: key}
			if w.c.race != nil {
				cp.barTime = w.c.race.barTime
			}
			cl.issue(cp)
		}
		return nil
	}, nil
}

// asyncDest resolves the destination of an asynchronous copy (what: "a
// bulk copy", "an st.async", "a red.async") by lane l: n bytes at d in space sp, inside a
// CTA's shared memory, and its mbarrier at bar, which must be in that CTA.
func (w *warp) asyncDest(in *inst, sp ptx.Space, l int, d uint64, n int, bar uint64, what string) (*cta, uint64, mbKey, *Fault) {
	t, a, f := w.sharedTarget(in, sp, l, d)
	if f != nil {
		return nil, 0, mbKey{}, f
	}
	if a < sharedWindow || a+uint64(n) > sharedWindow+uint64(len(t.smem)) {
		return nil, 0, mbKey{}, w.addrFault(FaultMemory, in, l, d, "%s of %d bytes outside the %d bytes of shared memory of CTA rank %d", what, n, len(t.smem), t.rank)
	}
	bt, key, f := w.mbarAt(in, sp, l, bar)
	if f != nil {
		return nil, 0, mbKey{}, f
	}
	if bt != t {
		return nil, 0, mbKey{}, w.fault(FaultBarrier, in, 1<<l, "the mbarrier of %s is in CTA rank %d, its destination in CTA rank %d: they must be in the same CTA", what, bt.rank, t.rank)
	}
	return t, a, key, nil
}

// issue puts cp in flight: it lands at a point drawn from the seed, up to
// maxDelay of the cluster's steps from now.
func (cl *cluster) issue(cp *bulkCopy) {
	cp.id, cp.issued, cp.due = len(cl.copies), cl.clock, cl.clock+1+cl.rng.Int64N(maxDelay)
	cl.copies = append(cl.copies, cp)
	cl.pending = append(cl.pending, cp)
}

// landDue lands the copies whose time has come.
func (cl *cluster) landDue() *Fault {
	for i := 0; i < len(cl.pending); {
		if cl.pending[i].due > cl.clock {
			i++
			continue
		}
		if f := cl.land(i); f != nil {
			return f
		}
	}
	return nil
}

// land completes pending copy i: its bytes reach shared memory, then its
// transactions complete on its mbarrier. The race detector sees it write
// every word of its destination.
func (cl *cluster) land(i int) *Fault {
	cp := cl.pending[i]
	cl.pending = append(cl.pending[:i], cl.pending[i+1:]...)
	w := cp.w
	mb := cl.mbars[cp.bar]
	if mb == nil {
		return w.fault(FaultBarrier, cp.in, 1<<cp.lane, "the %s issued here lands on the mbarrier of CTA rank %d at %#x, which is not initialised (or was invalidated)", cp.what(), cp.bar.rank, cp.bar.addr)
	}
	cp.phase = mb.phase
	off := int(cp.dstAddr - sharedWindow)
	if r := cp.dst.race; r != nil {
		for o := off &^ (raceGrain - 1); o < off+cp.size; o += raceGrain {
			if other, race := r.landing(o, cp); race {
				return w.addrFault(FaultRace, cp.in, cp.lane, cp.dstAddr+uint64(o-off),
					"the %s issued here (into CTA rank %d) lands in shared memory that %s after it was issued and before it completed, with no wait on its mbarrier between them",
					cp.what(), cp.dst.rank, cl.describe(other, false))
			}
		}
	}
	src := cp.data
	if src == nil {
		src, _ = cl.ls.mem.bytes(cp.src, cp.size) // checked at the issue; allocations are never freed
	}
	if cp.red != nil {
		mem := cp.dst.smem[off : off+cp.size]
		store(mem, cp.red(load(mem), load(src), 0))
	} else {
		copy(cp.dst.smem[off:off+cp.size], src)
	}
	if cp.data != nil && cp.w.c.race != nil {
		// A landed st.async or red.async releases what its thread did before it (and
		// what its CTA did before the barrier preceding it) to whoever
		// sees this phase complete, as an arrival of that thread would.
		cl.arrivals = append(cl.arrivals, arrival{key: cp.bar, phase: cp.phase, thread: w.threadID(cp.lane), time: cp.issued, barTime: cp.barTime})
	}
	mb.tx -= cp.size
	mb.complete()
	return nil
}
