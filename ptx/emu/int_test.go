package emu

import (
	"math"
	"math/bits"
	"math/rand"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// intValues are edge values and random values of an n-bit type.
func intValues(n int, rng *rand.Rand) []uint64 {
	mk := mask(n)
	v := []uint64{0, 1, 2, 3, 7, 31, 32, 33, 63, 64, mk, mk - 1, mk >> 1, mk>>1 + 1, mk>>1 - 1, 0x5555555555555555 & mk}
	for range 8 {
		v = append(v, rng.Uint64()&mk, uint64(rng.Intn(100)), -uint64(rng.Intn(100))&mk)
	}
	return v
}

// pairs is every pair of vs, then random triples for a third operand.
func triples(vs []uint64, rng *rand.Rand) [][]uint64 {
	var out [][]uint64
	for _, a := range vs {
		for _, b := range vs {
			out = append(out, []uint64{a, b, vs[rng.Intn(len(vs))]})
		}
	}
	return out
}

// Reference semantics, written with Go's typed integers.
func s16(v uint64) int64 { return int64(int16(v)) }
func s32(v uint64) int64 { return int64(int32(v)) }
func s64(v uint64) int64 { return int64(v) }

func signedOf(n int) func(uint64) int64 {
	switch n {
	case 16:
		return s16
	case 32:
		return s32
	}
	return s64
}

func TestIntegerOps(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	type tc struct {
		op      string
		mods    []string
		t       ptx.Type // operand type
		dt      ptx.Type // result type (0: t)
		ts      []ptx.Type
		arity   int
		ref     func(a, b, c uint64) uint64
		nonzero bool // the divisor b must not be 0 (checked separately)
	}
	var cases []tc
	for _, typ := range []ptx.Type{ptx.U16, ptx.S16, ptx.U32, ptx.S32, ptx.U64, ptx.S64} {
		n := typ.Bits()
		mk := mask(n)
		sg := typ.Kind() == ptx.KindSigned
		s := signedOf(n)
		less := func(a, b uint64) bool {
			if sg {
				return s(a) < s(b)
			}
			return a < b
		}
		name := typ.Name()
		cases = append(cases,
			tc{op: "add", t: typ, arity: 2, ref: func(a, b, _ uint64) uint64 { return (a + b) & mk }},
			tc{op: "sub", t: typ, arity: 2, ref: func(a, b, _ uint64) uint64 { return (a - b) & mk }},
			tc{op: "mul", mods: []string{"lo"}, t: typ, arity: 2, ref: func(a, b, _ uint64) uint64 { return a * b & mk }},
			tc{op: "mad", mods: []string{"lo"}, t: typ, arity: 3, ref: func(a, b, c uint64) uint64 { return (a*b + c) & mk }},
			tc{op: "min", t: typ, arity: 2, ref: func(a, b, _ uint64) uint64 {
				if less(b, a) {
					return b
				}
				return a
			}},
			tc{op: "max", t: typ, arity: 2, ref: func(a, b, _ uint64) uint64 {
				if less(a, b) {
					return b
				}
				return a
			}},
			tc{op: "div", t: typ, arity: 2, nonzero: true, ref: func(a, b, _ uint64) uint64 {
				if sg {
					if s(b) == -1 {
						return -a & mk
					}
					return uint64(s(a)/s(b)) & mk
				}
				return a / b
			}},
			tc{op: "rem", t: typ, arity: 2, nonzero: true, ref: func(a, b, _ uint64) uint64 {
				if sg {
					if s(b) == -1 {
						return 0
					}
					return uint64(s(a)%s(b)) & mk
				}
				return a % b
			}},
		)
		if sg {
			cases = append(cases,
				tc{op: "abs", t: typ, arity: 1, ref: func(a, _, _ uint64) uint64 {
					if s(a) < 0 {
						return uint64(-s(a)) & mk
					}
					return a
				}},
				tc{op: "neg", t: typ, arity: 1, ref: func(a, _, _ uint64) uint64 { return uint64(-s(a)) & mk }},
				tc{op: "shr", t: typ, ts: []ptx.Type{typ, ptx.U32}, arity: 2, ref: func(a, b, _ uint64) uint64 {
					return uint64(s(a)>>min(uint32(b), uint32(n-1))) & mk
				}},
			)
			if n == 32 {
				cases = append(cases, tc{op: "add", mods: []string{"sat"}, t: typ, arity: 2, ref: func(a, b, _ uint64) uint64 {
					return uint64(int32(max(math.MinInt32, min(math.MaxInt32, s(a)+s(b))))) & mk
				}}, tc{op: "sub", mods: []string{"sat"}, t: typ, arity: 2, ref: func(a, b, _ uint64) uint64 {
					return uint64(int32(max(math.MinInt32, min(math.MaxInt32, s(a)-s(b))))) & mk
				}})
			}
		} else {
			cases = append(cases,
				tc{op: "shr", t: typ, ts: []ptx.Type{typ, ptx.U32}, arity: 2, ref: func(a, b, _ uint64) uint64 {
					if uint32(b) >= uint32(n) {
						return 0
					}
					return a >> uint32(b)
				}},
			)
		}
		// The high half and the wide product.
		if n < 64 {
			wide := map[ptx.Type]ptx.Type{ptx.U16: ptx.U32, ptx.S16: ptx.S32, ptx.U32: ptx.U64, ptx.S32: ptx.S64}[typ]
			prod := func(a, b uint64) uint64 {
				if sg {
					return uint64(s(a) * s(b))
				}
				return a * b
			}
			cases = append(cases,
				tc{op: "mul", mods: []string{"hi"}, t: typ, arity: 2, ref: func(a, b, _ uint64) uint64 { return prod(a, b) >> n & mk }},
				tc{op: "mul", mods: []string{"wide"}, t: typ, dt: wide, arity: 2, ref: func(a, b, _ uint64) uint64 { return prod(a, b) & mask(2*n) }},
				tc{op: "mad", mods: []string{"wide"}, t: typ, dt: wide, ts: []ptx.Type{typ, typ, wide}, arity: 3, ref: func(a, b, c uint64) uint64 {
					return (prod(a, b) + c) & mask(2*n)
				}},
				tc{op: "mad", mods: []string{"hi"}, t: typ, arity: 3, ref: func(a, b, c uint64) uint64 { return (prod(a, b)>>n + c) & mk }},
			)
		} else {
			cases = append(cases, tc{op: "mul", mods: []string{"hi"}, t: typ, arity: 2, ref: func(a, b, _ uint64) uint64 {
				hi, _ := bits.Mul64(a, b)
				if sg { // the signed 128-bit product's high half
					if int64(a) < 0 {
						hi -= b
					}
					if int64(b) < 0 {
						hi -= a
					}
				}
				return hi
			}})
		}
		_ = name
	}
	// Bit operations.
	for _, typ := range []ptx.Type{ptx.B16, ptx.B32, ptx.B64} {
		n := typ.Bits()
		mk := mask(n)
		cases = append(cases,
			tc{op: "and", t: typ, arity: 2, ref: func(a, b, _ uint64) uint64 { return a & b }},
			tc{op: "or", t: typ, arity: 2, ref: func(a, b, _ uint64) uint64 { return a | b }},
			tc{op: "xor", t: typ, arity: 2, ref: func(a, b, _ uint64) uint64 { return a ^ b }},
			tc{op: "not", t: typ, arity: 1, ref: func(a, _, _ uint64) uint64 { return ^a & mk }},
			tc{op: "shl", t: typ, ts: []ptx.Type{typ, ptx.U32}, arity: 2, ref: func(a, b, _ uint64) uint64 {
				if uint32(b) >= uint32(n) {
					return 0
				}
				return a << uint32(b) & mk
			}},
			tc{op: "shr", t: typ, ts: []ptx.Type{typ, ptx.U32}, arity: 2, ref: func(a, b, _ uint64) uint64 {
				if uint32(b) >= uint32(n) {
					return 0
				}
				return a >> uint32(b)
			}},
		)
	}
	for _, typ := range []ptx.Type{ptx.B32, ptx.B64} {
		n := typ.Bits()
		cases = append(cases,
			tc{op: "popc", t: typ, dt: ptx.U32, arity: 1, ref: func(a, _, _ uint64) uint64 { return uint64(bits.OnesCount64(a)) }},
			tc{op: "clz", t: typ, dt: ptx.U32, arity: 1, ref: func(a, _, _ uint64) uint64 {
				if n == 32 {
					return uint64(bits.LeadingZeros32(uint32(a)))
				}
				return uint64(bits.LeadingZeros64(a))
			}},
			tc{op: "brev", t: typ, arity: 1, ref: func(a, _, _ uint64) uint64 {
				if n == 32 {
					return uint64(bits.Reverse32(uint32(a)))
				}
				return bits.Reverse64(a)
			}},
		)
	}
	for _, typ := range []ptx.Type{ptx.U32, ptx.S32, ptx.U64, ptx.S64} {
		n := typ.Bits()
		s := signedOf(n)
		sg := typ.Kind() == ptx.KindSigned
		pos := func(a uint64) (uint64, bool) {
			if sg && s(a) < 0 {
				a = ^a & mask(n)
			}
			if a == 0 {
				return 0, false
			}
			return uint64(63 - bits.LeadingZeros64(a)), true
		}
		cases = append(cases,
			tc{op: "bfind", t: typ, dt: ptx.U32, arity: 1, ref: func(a, _, _ uint64) uint64 {
				p, ok := pos(a)
				if !ok {
					return 0xFFFFFFFF
				}
				return p
			}},
			tc{op: "bfind", mods: []string{"shiftamt"}, t: typ, dt: ptx.U32, arity: 1, ref: func(a, _, _ uint64) uint64 {
				p, ok := pos(a)
				if !ok {
					return 0xFFFFFFFF
				}
				return uint64(n-1) - p
			}},
		)
	}

	for _, c := range cases {
		dt := c.dt
		if dt == 0 {
			dt = c.t
		}
		ts := c.ts
		if ts == nil {
			for range c.arity {
				ts = append(ts, c.t)
			}
		}
		var rows [][]uint64
		for _, r := range triples(intValues(c.t.Bits(), rng), rng) {
			r = r[:c.arity]
			for i := range r {
				r[i] &= mask(ts[i].Bits())
			}
			if c.nonzero && r[1] == 0 {
				continue
			}
			rows = append(rows, r)
		}
		k := opKernel{dt: dt, ts: ts, emit: emitOp(c.op, append(c.mods, c.t.Name())...)}
		chunks(len(rows), func(lo, hi int) {
			got := k.run(t, cols(rows[lo:hi])...)
			for i, r := range rows[lo:hi] {
				r3 := append(append([]uint64(nil), r...), 0, 0)
				if want := c.ref(r3[0], r3[1], r3[2]); got[i] != want {
					t.Errorf("%s.%v.%s %#x: got %#x, want %#x", c.op, c.mods, c.t, r, got[i], want)
					return
				}
			}
		})
	}
}

// Division by zero is undefined in PTX; the interpreter's documented
// answer is all ones for the quotient and the dividend for the remainder.
func TestIntegerDivideByZero(t *testing.T) {
	for _, typ := range []ptx.Type{ptx.U32, ptx.S32, ptx.S64} {
		mk := mask(typ.Bits())
		q := opKernel{dt: typ, ts: []ptx.Type{typ, typ}, emit: emitOp("div", typ.Name())}.run(t, []uint64{5, 0}, []uint64{0, 0})
		r := opKernel{dt: typ, ts: []ptx.Type{typ, typ}, emit: emitOp("rem", typ.Name())}.run(t, []uint64{5, 0}, []uint64{0, 0})
		if q[0] != mk || q[1] != mk || r[0] != 5 || r[1] != 0 {
			t.Errorf("%s: x/0 = %#x %#x, x%%0 = %#x %#x", typ, q[0], q[1], r[0], r[1])
		}
	}
}

// Immediates are read at the instruction's type: -1 is all ones.
func TestImmediates(t *testing.T) {
	got := opKernel{dt: ptx.U32, ts: []ptx.Type{ptx.U32}, emit: func(e *ptx.Entry, d ptx.Reg, a []ptx.Reg) {
		e.Add(d, a[0], ptx.Imm(-1))
		e.Xor(d, d, ptx.Imm(0x12345678))
	}}.run(t, []uint64{1, 0})
	if got[0] != 0x12345678 || got[1] != 0xFFFFFFFF^0x12345678 {
		t.Errorf("got %#x", got)
	}
}

func TestSelpAndPredicates(t *testing.T) {
	// d = (a < b && !(a == 0)) || a == 7 ? 100 : 200, through and/or/not/xor/mov on predicates.
	got := opKernel{dt: ptx.U32, ts: []ptx.Type{ptx.U32, ptx.U32}, emit: func(e *ptx.Entry, d ptx.Reg, a []ptx.Reg) {
		p, q, r, s := e.Pred(), e.Pred(), e.Pred(), e.Pred()
		e.Setp(p, ptx.LT, a[0], a[1])
		e.Setp(q, ptx.EQ, a[0], ptx.Imm(0))
		e.Emit("not", []string{"pred"}, q, q)
		e.AndPred(r, p, q)
		e.Setp(s, ptx.EQ, a[0], ptx.Imm(7))
		e.OrPred(r, r, s)
		e.Emit("xor", []string{"pred"}, s, r, s) // s = r xor s
		e.Emit("mov", []string{"pred"}, p, s)
		e.Selp(d, ptx.Imm(100), ptx.Imm(200), r)
		e.Guarded(p, func() { e.Add(d, d, ptx.Imm(1)) })
	}}.run(t, []uint64{1, 0, 7, 5, 7}, []uint64{2, 2, 1, 3, 9})
	want := []uint64{101, 200, 100, 200, 100}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("case %d: %d, want %d", i, got[i], want[i])
		}
	}
}

func TestSetpInteger(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, typ := range []ptx.Type{ptx.U32, ptx.S32, ptx.U64, ptx.S64, ptx.U16, ptx.S16} {
		n := typ.Bits()
		s := signedOf(n)
		sg := typ.Kind() == ptx.KindSigned
		cmp := func(a, b uint64) int {
			if sg {
				return cmpInt(s(a), s(b))
			}
			return cmpInt(a, b)
		}
		ops := map[string]func(a, b uint64) bool{
			"eq": func(a, b uint64) bool { return a == b }, "ne": func(a, b uint64) bool { return a != b },
			"lt": func(a, b uint64) bool { return cmp(a, b) < 0 }, "le": func(a, b uint64) bool { return cmp(a, b) <= 0 },
			"gt": func(a, b uint64) bool { return cmp(a, b) > 0 }, "ge": func(a, b uint64) bool { return cmp(a, b) >= 0 },
			"lo": func(a, b uint64) bool { return a < b }, "ls": func(a, b uint64) bool { return a <= b },
			"hi": func(a, b uint64) bool { return a > b }, "hs": func(a, b uint64) bool { return a >= b },
		}
		var rows [][]uint64
		for _, r := range triples(intValues(n, rng), rng) {
			rows = append(rows, r[:2])
		}
		for op, ref := range ops {
			k := opKernel{dt: ptx.U32, ts: []ptx.Type{typ, typ}, emit: func(e *ptx.Entry, d ptx.Reg, a []ptx.Reg) {
				p := e.Pred()
				e.SetpT(typ, p, ptx.Cmp(op), a[0], a[1])
				e.Selp(d, ptx.Imm(1), ptx.Imm(0), p)
			}}
			chunks(len(rows), func(lo, hi int) {
				got := k.run(t, cols(rows[lo:hi])...)
				for i, r := range rows[lo:hi] {
					want := uint64(0)
					if ref(r[0], r[1]) {
						want = 1
					}
					if got[i] != want {
						t.Errorf("setp.%s.%s %#x %#x: %d, want %d", op, typ, r[0], r[1], got[i], want)
						break
					}
				}
			})
		}
	}
}

func TestIntegerCvt(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	types := []ptx.Type{ptx.U16, ptx.S16, ptx.U32, ptx.S32, ptx.U64, ptx.S64}
	val := func(typ ptx.Type, v uint64) int64OrU { // the value v of type typ stands for
		if typ.Kind() == ptx.KindSigned {
			return int64OrU{s: signedOf(typ.Bits())(v), neg: signedOf(typ.Bits())(v) < 0}
		}
		return int64OrU{u: v}
	}
	for _, dt := range types {
		for _, st := range types {
			if dt == st {
				continue
			}
			for _, sat := range []bool{false, true} {
				mods := []string{dt.Name(), st.Name()}
				if sat {
					mods = append([]string{"sat"}, mods...)
				}
				vs := intValues(st.Bits(), rng)
				got := opKernel{dt: dt, ts: []ptx.Type{st}, emit: emitOp("cvt", mods...)}.run(t, vs)
				for i, v := range vs {
					x := val(st, v)
					var want uint64
					dn := dt.Bits()
					if sat {
						want = x.clamp(dn, dt.Kind() == ptx.KindSigned)
					} else if x.neg {
						want = uint64(x.s) & mask(dn)
					} else {
						want = (x.u | uint64(x.s)) & mask(dn)
					}
					if got[i] != want {
						t.Errorf("cvt.%v %#x: %#x, want %#x", mods, v, got[i], want)
						break
					}
				}
			}
		}
	}
}

func cmpInt[T int64 | uint64](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// int64OrU is an integer of any of the types: s when negative.
type int64OrU struct {
	s   int64
	u   uint64
	neg bool
}

func (x int64OrU) clamp(n int, signed bool) uint64 {
	switch {
	case signed && x.neg:
		return uint64(max(x.s, -1<<(n-1))) & mask(n)
	case signed:
		v := x.u | uint64(x.s)
		return min(v, 1<<(n-1)-1)
	case x.neg:
		return 0
	}
	return min(x.u|uint64(x.s), mask(n))
}
