package emu

import (
	"fmt"
	"math/bits"

	"github.com/gvr-go/gvr/ptx"
)

// This file compiles barriers and warp collectives. The scheduling rules
// around them (who waits for whom, what is a fault) are in exec.go; here is
// what they compute once every lane of a member mask has arrived.

// poison is what shfl returns when it reads a lane outside its member mask,
// which PTX leaves undefined: a value that stands out when it is used.
const poison = 0xDEADBEEF

func (c *compiler) barrier(ci *inst, in *ptx.Inst) error {
	if has(in, "warp") { // bar.warp.sync mask
		ci.kind = kColl
		var err error
		ci.mask, err = c.src(in.Args[0], ptx.U32)
		ci.coll = func(w *warp, part uint32) {
			if r := w.c.race; r != nil {
				r.warpSync(w.id, part)
			}
		}
		return err
	}
	if has(in, "cluster") { // barrier.cluster.arrive / .wait
		ci.kind = kCWait
		if has(in, "arrive") {
			ci.kind = kCArrive
		}
		return nil
	}
	ci.kind = kBar
	var err error
	if ci.barID, err = c.src(in.Args[0], ptx.U32); err != nil {
		return err
	}
	if len(in.Args) == 2 {
		ci.hasCnt = true
		ci.barCnt, err = c.src(in.Args[1], ptx.U32)
	}
	return err
}

func (c *compiler) collective(ci *inst, in *ptx.Inst, sig ptx.Sig) error {
	last := len(in.Args) - 1
	var err error
	if ci.mask, err = c.src(in.Args[last], ptx.U32); err != nil {
		return err
	}
	switch in.Op {
	case "shfl":
		return c.shfl(ci, in)
	case "vote":
		return c.vote(ci, in)
	case "match":
		return c.match(ci, in)
	}
	return c.redux(ci, in, sig)
}

// match.any: each lane gets the mask of the member lanes whose value equals
// its own.
func (c *compiler) match(ci *inst, in *ptx.Inst) error {
	d, err := c.dst(in.Args[0])
	if err != nil {
		return err
	}
	a, err := c.src(in.Args[1], ptx.U32)
	if err != nil {
		return err
	}
	ci.coll = func(w *warp, part uint32) {
		A := *w.v(a) // d may be a: read it first
		var out [32]uint32
		for x := part; x != 0; x &= x - 1 {
			lane := bits.TrailingZeros32(x)
			for y := part; y != 0; y &= y - 1 {
				if j := bits.TrailingZeros32(y); uint32(A[j]) == uint32(A[lane]) {
					out[lane] |= 1 << j
				}
			}
		}
		for x := part; x != 0; x &= x - 1 {
			lane := bits.TrailingZeros32(x)
			w.r.at(d)[lane] = uint64(out[lane])
		}
	}
	return nil
}

// shfl follows the PTX pseudocode: c packs the clamp value (c[4:0]) and
// the segment mask (c[12:8]); a lane whose source is out of range reads its
// own value.
func (c *compiler) shfl(ci *inst, in *ptx.Inst) error {
	d, err := c.dst(in.Args[0])
	if err != nil {
		return err
	}
	var s [3]src
	for i := range s {
		if s[i], err = c.src(in.Args[i+1], ptx.U32); err != nil {
			return err
		}
	}
	mode := in.Mods[1]
	ci.coll = func(w *warp, part uint32) {
		A, B, C := w.v(s[0]), w.v(s[1]), w.v(s[2])
		a := *A // d may be a: read every source first
		D := w.r.at(d)
		for x := part; x != 0; x &= x - 1 {
			lane := int32(bits.TrailingZeros32(x))
			b, cv, seg := int32(B[lane]&31), int32(C[lane]&31), int32(C[lane]>>8&31)
			maxLane := lane&seg | cv&^seg
			minLane := lane & seg
			var j int32
			var ok bool
			switch mode {
			case "up":
				j = lane - b
				ok = j >= maxLane
			case "down":
				j = lane + b
				ok = j <= maxLane
			case "bfly":
				j = lane ^ b
				ok = j <= maxLane
			default: // idx
				j = minLane | b&^seg
				ok = j <= maxLane
			}
			switch {
			case !ok:
				D[lane] = a[lane]
			case part&(1<<j) == 0:
				D[lane] = poison // the source lane is not in the member mask
			default:
				D[lane] = a[j]
			}
		}
	}
	return nil
}

func (c *compiler) vote(ci *inst, in *ptx.Inst) error {
	p, neg, err := predOf(in.Args[1])
	if err != nil {
		return err
	}
	mode := in.Mods[1]
	if mode == "ballot" {
		d, err := c.dst(in.Args[0])
		ci.coll = func(w *warp, part uint32) {
			v := uint64(w.pred(p, neg) & part)
			for x := part; x != 0; x &= x - 1 {
				w.r.at(d)[bits.TrailingZeros32(x)] = v
			}
		}
		return err
	}
	d, dneg, err := predOf(in.Args[0])
	if err != nil || dneg {
		return fmt.Errorf("vote writes a plain predicate")
	}
	ci.coll = func(w *warp, part uint32) {
		v := w.pred(p, neg) & part
		var r bool
		switch mode {
		case "all":
			r = v == part
		case "any":
			r = v != 0
		default: // uni
			r = v == 0 || v == part
		}
		if r {
			w.p[d] |= part
		} else {
			w.p[d] &^= part
		}
	}
	return nil
}

// redux reduces over the lanes of a member mask. Integer .add wraps at 32
// bits. For .f32 min/max, +0 > -0 and NaNs are ignored (the result is the
// canonical NaN only if all inputs are NaN) unless .NaN, where any NaN
// gives it; .abs takes absolute values first.
func (c *compiler) redux(ci *inst, in *ptx.Inst, sig ptx.Sig) error {
	d, err := c.dst(in.Args[0])
	if err != nil {
		return err
	}
	a, err := c.src(in.Args[1], sig.Type)
	if err != nil {
		return err
	}
	op := in.Mods[1]
	t := sig.Type
	var f func(x, y uint64) uint64
	var pre func(x uint64) uint64
	switch {
	case t == ptx.F32 && (op == "min" || op == "max"):
		isMax, nan := op == "max", has(in, "NaN")
		f = func(x, y uint64) uint64 { return minmaxF32(x, y, isMax, nan) }
		if has(in, "abs") {
			pre = func(x uint64) uint64 { return x &^ 0x80000000 }
		}
	case t.IsFloat():
		return fmt.Errorf("redux.%s on .%s is not defined", op, t)
	case op == "add":
		f = func(x, y uint64) uint64 { return (x + y) & 0xFFFFFFFF }
	case op == "and":
		f = func(x, y uint64) uint64 { return x & y }
	case op == "or":
		f = func(x, y uint64) uint64 { return x | y }
	case op == "xor":
		f = func(x, y uint64) uint64 { return x ^ y }
	case op == "min" || op == "max":
		isMax, signed := op == "max", t.Kind() == ptx.KindSigned
		f = func(x, y uint64) uint64 {
			less := x < y
			if signed {
				less = int32(x) < int32(y)
			}
			if less != isMax {
				return x
			}
			return y
		}
	}
	ci.coll = func(w *warp, part uint32) {
		A := w.v(a)
		l0 := bits.TrailingZeros32(part)
		r := A[l0]
		if pre != nil {
			r = pre(r)
		}
		for x := part & (part - 1); x != 0; x &= x - 1 {
			v := A[bits.TrailingZeros32(x)]
			if pre != nil {
				v = pre(v)
			}
			r = f(r, v)
		}
		if t == ptx.F32 && isNaN32(r) {
			r = nan32
		}
		for x := part; x != 0; x &= x - 1 {
			w.r.at(d)[bits.TrailingZeros32(x)] = r
		}
	}
	return nil
}
