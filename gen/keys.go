package gen

import "github.com/gvr-go/gvr/ptx"

// The Top-K order is torch.topk's: a float's bits mapped to an
// order-preserving uint32 key (negative: ^bits; otherwise bits|0x80000000),
// every NaN mapped to 0xFFFFFFFF. Keys compare as unsigned integers, so
// min, max and radix digits on them follow the contract exactly.

const (
	keyNegInf = 0x007FFFFF // key(-Inf): the lowest non-NaN key
	keyPosInf = 0xFF800000 // key(+Inf): the highest non-NaN key
	keyNaN    = 0xFFFFFFFF // every NaN
)

// key returns the order-preserving key of the float bits b (a u32).
func (c *cta) key(b ptx.Reg) ptx.Reg {
	e := c.e
	m := c.s32()
	e.Shr(m, b, ptx.Imm(31)) // all ones for negative floats
	e.Or(m, m, ptx.Imm(0x80000000))
	k := c.u32()
	e.Xor(k, b, m)
	// NaN: exponent all ones and a nonzero mantissa.
	abs := c.u32()
	e.And(abs, b, ptx.Imm(0x7FFFFFFF))
	e.Guarded(c.setp(ptx.GT, abs, ptx.Imm(0x7F800000)), func() { e.Mov(k, ptx.Imm(keyNaN)) })
	return k
}

// bitsOf returns the bits of the f32 register x.
func (c *cta) bitsOf(x ptx.Reg) ptx.Reg {
	b := c.u32()
	c.e.MovBits(b, x)
	return b
}

// keyToFloat returns the float whose key is k (k must not be a NaN key).
func (c *cta) keyToFloat(k ptx.Reg) ptx.Reg {
	e := c.e
	b := c.u32()
	e.Xor(b, k, ptx.Imm(0x80000000)) // non-negative floats
	e.Guarded(c.setp(ptx.LT, k, ptx.Imm(0x80000000)), func() { e.Not(b, k) })
	x := c.f32()
	e.MovBits(x, b)
	return x
}
