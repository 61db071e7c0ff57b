package gen

import "github.com/gvr-go/gvr/ptx"

// Score rows of float32, bfloat16 or float16 (Config.Scores). Every load of
// a score widens it to a float32 register at once, exactly: the conversion
// is monotone and keeps every value, so the phases, the keys and the
// candidates work on float32 as for a float32 row and the order, the ties
// and the values written are the 16-bit numbers'. A NaN written as a value
// keeps its sign and payload bits, moved into place as for every other
// number (no quiet bit is set); as a key every NaN is the same anyway, so a
// float16 NaN is made exact only where it is written (halfToF32).

// size is the bytes of one score.
func (c *cta) size() int { return c.scores.Size() }

// perVec is how many scores one 16-byte vector load brings: 4 floats or 8
// 16-bit scores.
func (c *cta) perVec() int { return 16 / c.size() }

// loadScore sets the f32 register x to the score at index j (u32) of the
// row at global address row, through the read-only path.
func (c *cta) loadScore(x, row, j ptx.Reg) {
	c.loadScoreAt(x, c.elemAddr(row, j, c.size()), ptx.SpaceGlobal)
}

// loadScoreIf is loadScore in the threads where p holds: a guarded load
// for a float32 row, a branch around the load and widening otherwise.
func (c *cta) loadScoreIf(p ptx.Pred, x, row, j ptx.Reg) {
	if c.scores == Float32 {
		c.e.Guarded(p, func() { c.loadScore(x, row, j) })
		return
	}
	c.e.If(p, func() { c.loadScore(x, row, j) })
}

// loadScoreAt sets x to the score at a in space sp (global: read-only
// path).
func (c *cta) loadScoreAt(x ptx.Reg, a ptx.Addr, sp ptx.Space) {
	e := c.e
	ld := func(d ptx.Reg) {
		if sp == ptx.SpaceGlobal {
			e.LdNC(d, a)
		} else {
			e.Ld(sp, d, a)
		}
	}
	if c.scores == Float32 {
		ld(x)
		return
	}
	h := e.Reg(ptx.U16)
	ld(h)
	w := c.u32()
	e.Cvt(w, h)
	e.Mov(x, c.widen(w, false))
}

// rawScoreReg is a register for one score as it is in memory, not
// widened (f32, or u16 for a 16-bit score): a slice's end elements go from
// global to shared memory through it.
func (c *cta) rawScoreReg() ptx.Reg {
	if c.scores == Float32 {
		return c.f32()
	}
	return c.e.Reg(ptx.U16)
}

// newVec returns the registers of one 16-byte vector of scores: four f32,
// or four u32 words of two 16-bit scores each.
func (c *cta) newVec() ptx.Vec {
	t := ptx.F32
	if c.scores != Float32 {
		t = ptx.U32
	}
	return ptx.Vec{c.e.Reg(t), c.e.Reg(t), c.e.Reg(t), c.e.Reg(t)}
}

// unpackVec returns the perVec scores of a vector newVec made, widened,
// in index order (little-endian: a word's low half first).
func (c *cta) unpackVec(x ptx.Vec) []ptx.Reg {
	if c.scores == Float32 {
		return x[:]
	}
	var xs []ptx.Reg
	for _, w := range x {
		xs = append(xs, c.widen(w, false), c.widen(w, true))
	}
	return xs
}

// widen returns the f32 register holding the 16-bit score in the low
// (high: the high) half of the u32 word w.
func (c *cta) widen(w ptx.Reg, high bool) ptx.Reg {
	e := c.e
	if c.scores == BFloat16 {
		// A bfloat16 is the top half of the float32 with the same value.
		b := c.u32()
		if high {
			e.And(b, w, ptx.Imm(0xFFFF0000))
		} else {
			e.Shl(b, w, ptx.Imm(16))
		}
		x := c.f32()
		e.MovBits(x, b)
		return x
	}
	h := w
	if high {
		h = c.u32()
		e.Shr(h, w, ptx.Imm(16))
	}
	return c.halfToF32(h)
}

// halfToF32 returns the f32 register holding the IEEE half in the low 16
// bits of h (a u32; the high bits are ignored): the hardware's
// conversion, exact for every number. A NaN comes out a NaN, not
// necessarily with its sign and payload: the walks only compare it and
// take its key (every NaN's is the same), and the one place a score's
// bits leave the kernel, a value slot, makes them exactly (valueBits).
func (c *cta) halfToF32(h ptx.Reg) ptx.Reg {
	e := c.e
	u := e.Reg(ptx.U16)
	e.Cvt(u, h)
	b := e.Reg(ptx.B16)
	e.Mov(b, u)
	x := c.f32()
	e.CvtFrom(x, b, ptx.F16)
	return x
}

// halfNaNBits returns the float32 bits of the NaN half in the low 16 bits
// of h (a u32): its sign, exponent 255, and its payload moved into place
// (no quiet bit set), as topk.DType.Widen makes them.
func (c *cta) halfNaNBits(h ptx.Reg) ptx.Reg {
	e := c.e
	nb, s := c.u32(), c.u32()
	e.Shl(nb, h, ptx.Imm(13))
	e.And(nb, nb, ptx.Imm(0x007FE000)) // the payload
	e.Shl(s, h, ptx.Imm(16))
	e.And(s, s, ptx.Imm(0x80000000)) // the sign
	e.Or(nb, nb, s)
	e.Or(nb, nb, ptx.Imm(0x7F800000))
	return nb
}
