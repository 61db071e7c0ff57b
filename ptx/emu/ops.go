package emu

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/gvr-go/gvr/ptx"
)

// This file compiles the arithmetic, logic, comparison and conversion
// instructions.

// sx sign-extends the low n bits of v.
func sx(v uint64, n int) int64 {
	s := 64 - n
	return int64(v<<s) >> s
}

// compute compiles the instructions that only read and write registers.
func (c *compiler) compute(in *ptx.Inst, sig ptx.Sig) (execFn, error) {
	t := sig.Type
	switch {
	case t == ptx.TypePred:
		return c.predOp(in)
	case in.Op == "setp":
		return c.setp(in, sig)
	case in.Op == "selp":
		return c.selp(in, sig)
	case in.Op == "cvt":
		return c.cvt(in, sig)
	case in.Op == "activemask":
		d, err := c.dst(in.Args[0])
		return func(w *warp, m uint32) *Fault {
			for ; m != 0; m &= m - 1 {
				w.r.at(d)[bits.TrailingZeros32(m)] = uint64(w.active)
			}
			return nil
		}, err
	}
	d, err := c.dst(in.Args[0])
	if err != nil {
		return nil, err
	}
	var s []src
	for i, a := range in.Args[1:] {
		x, err := c.src(a, sig.Args[i+1].T)
		if err != nil {
			return nil, err
		}
		s = append(s, x)
	}
	if in.Op == "mov" {
		if sp, ok := in.Args[1].(ptx.Special); ok && (sp == ptx.Clock || sp == ptx.Clock64 || sp == ptx.GlobalTimer) {
			return clockFn(d, sp), nil
		}
		return movFn(d, s[0]), nil
	}
	if len(s) == 2 && (in.Op == "add" || in.Op == "sub") && t.IsInt() && !has(in, "sat") {
		mk := mask(t.Bits())
		if in.Op == "add" {
			return addFn(d, s[0], s[1], mk), nil
		}
		return bin(d, s[0], s[1], func(a, b uint64) uint64 { return (a - b) & mk }), nil
	}
	var f any
	if t.IsFloat() {
		f, err = floatOp(in, t)
	} else {
		f, err = intOp(in, t)
	}
	if err != nil {
		return nil, err
	}
	switch f := f.(type) {
	case fn1:
		if len(s) == 1 {
			return un(d, s[0], f), nil
		}
	case fn2:
		if len(s) == 2 {
			return bin(d, s[0], s[1], f), nil
		}
	case fn3:
		if len(s) == 3 {
			return tern(d, s[0], s[1], s[2], f), nil
		}
	}
	return nil, fmt.Errorf("internal: operand count")
}

// clockFn reads the deterministic clocks: the CTA's warp instructions so
// far (as nanoseconds for %globaltimer).
func clockFn(d int32, sp ptx.Special) execFn {
	return func(w *warp, m uint32) *Fault {
		v := uint64(w.c.steps)
		if sp == ptx.Clock {
			v = uint64(uint32(v))
		}
		for ; m != 0; m &= m - 1 {
			w.r.at(d)[bits.TrailingZeros32(m)] = v
		}
		return nil
	}
}

// intOp returns the lane function of an integer instruction of type t.
func intOp(in *ptx.Inst, t ptx.Type) (any, error) {
	n := t.Bits()
	mk := mask(n)
	signed := t.Kind() == ptx.KindSigned
	mode := ""
	for _, m := range in.Mods {
		switch m {
		case "lo", "hi", "wide":
			mode = m
		}
	}
	switch in.Op {
	case "add", "sub": // with .sat: only s32 saturates
		neg := in.Op == "sub"
		return fn2(func(a, b uint64) uint64 {
			x, y := sx(a, n), sx(b, n)
			if neg {
				y = -y
			}
			s := x + y
			if s > math.MaxInt32 {
				s = math.MaxInt32
			} else if s < math.MinInt32 {
				s = math.MinInt32
			}
			return uint64(s) & mk
		}), nil
	case "mul", "mad":
		var f fn2
		switch mode {
		case "lo":
			f = func(a, b uint64) uint64 { return a * b & mk }
		case "wide":
			wk := mask(2 * n)
			if signed {
				f = func(a, b uint64) uint64 { return uint64(sx(a, n)*sx(b, n)) & wk }
			} else {
				f = func(a, b uint64) uint64 { return a * b & wk }
			}
		case "hi":
			f = mulHi(n, signed)
		default:
			return nil, fmt.Errorf("integer %s needs .lo, .hi or .wide", in.Op)
		}
		if in.Op == "mul" {
			return f, nil
		}
		rk := mk
		if mode == "wide" {
			rk = mask(2 * n)
		}
		return fn3(func(a, b, c uint64) uint64 { return (f(a, b) + c) & rk }), nil
	case "div":
		if signed {
			return fn2(func(a, b uint64) uint64 {
				x, y := sx(a, n), sx(b, n)
				switch {
				case y == 0:
					return mk // PTX leaves x/0 undefined; the interpreter gives all ones
				case y == -1:
					return uint64(-x) & mk // MIN/-1 wraps to MIN
				}
				return uint64(x/y) & mk
			}), nil
		}
		return fn2(func(a, b uint64) uint64 {
			if b == 0 {
				return mk
			}
			return a / b
		}), nil
	case "rem":
		if signed {
			return fn2(func(a, b uint64) uint64 {
				x, y := sx(a, n), sx(b, n)
				if y == 0 || y == -1 {
					if y == 0 {
						return a // x%0: the dividend (PTX: undefined)
					}
					return 0
				}
				return uint64(x%y) & mk
			}), nil
		}
		return fn2(func(a, b uint64) uint64 {
			if b == 0 {
				return a
			}
			return a % b
		}), nil
	case "min", "max":
		isMax := in.Op == "max"
		if signed {
			return fn2(func(a, b uint64) uint64 {
				if (sx(a, n) < sx(b, n)) != isMax {
					return a
				}
				return b
			}), nil
		}
		return fn2(func(a, b uint64) uint64 {
			if (a < b) != isMax {
				return a
			}
			return b
		}), nil
	case "abs":
		return fn1(func(a uint64) uint64 {
			if sx(a, n) < 0 {
				return -a & mk
			}
			return a
		}), nil
	case "neg":
		return fn1(func(a uint64) uint64 { return -a & mk }), nil
	case "not":
		return fn1(func(a uint64) uint64 { return ^a & mk }), nil
	case "and":
		return fn2(func(a, b uint64) uint64 { return a & b }), nil
	case "or":
		return fn2(func(a, b uint64) uint64 { return a | b }), nil
	case "xor":
		return fn2(func(a, b uint64) uint64 { return a ^ b }), nil
	case "shl": // amounts past the width give 0
		return fn2(func(a, b uint64) uint64 {
			if b >= uint64(n) {
				return 0
			}
			return a << b & mk
		}), nil
	case "shr":
		if signed { // amounts past the width fill with the sign
			return fn2(func(a, b uint64) uint64 { return uint64(sx(a, n)>>min(b, uint64(n-1))) & mk }), nil
		}
		return fn2(func(a, b uint64) uint64 {
			if b >= uint64(n) {
				return 0
			}
			return a >> b
		}), nil
	case "popc":
		return fn1(func(a uint64) uint64 { return uint64(bits.OnesCount64(a)) }), nil
	case "clz":
		return fn1(func(a uint64) uint64 { return uint64(bits.LeadingZeros64(a) - (64 - n)) }), nil
	case "brev":
		return fn1(func(a uint64) uint64 { return bits.Reverse64(a) >> (64 - n) }), nil
	case "bfind":
		shiftamt := has(in, "shiftamt")
		return fn1(func(a uint64) uint64 {
			if signed && sx(a, n) < 0 {
				a = ^a & mk // the most significant non-sign bit is the top 0
			}
			if a == 0 {
				return 0xFFFFFFFF
			}
			p := uint64(63 - bits.LeadingZeros64(a))
			if shiftamt {
				return uint64(n-1) - p
			}
			return p
		}), nil
	}
	return nil, unsupported("%s on .%s", in.Op, t)
}

// mulHi is the high half of the 2n-bit product.
func mulHi(n int, signed bool) fn2 {
	if n < 64 {
		if signed {
			return func(a, b uint64) uint64 { return uint64(sx(a, n)*sx(b, n)>>n) & mask(n) }
		}
		return func(a, b uint64) uint64 { return a * b >> n }
	}
	if signed {
		return func(a, b uint64) uint64 {
			hi, _ := bits.Mul64(a, b)
			if int64(a) < 0 {
				hi -= b
			}
			if int64(b) < 0 {
				hi -= a
			}
			return hi
		}
	}
	return func(a, b uint64) uint64 {
		hi, _ := bits.Mul64(a, b)
		return hi
	}
}

// floatOp returns the lane function of a float instruction of type t.
func floatOp(in *ptx.Inst, t ptx.Type) (any, error) {
	m, rounded := rn, false
	for _, s := range in.Mods {
		switch s {
		case "rn", "rz", "rm", "rp":
			m, rounded = rmodeOf(s), true
		}
	}
	if (in.Op == "mul" || in.Op == "mad") && !rounded {
		// ptxas may fuse it with an add into an fma: the GPU's result is
		// not determined, so the interpreter cannot stand for it.
		return nil, fmt.Errorf("%s.%s without a rounding modifier may be contracted into an fma by ptxas; write %s.rn", in.Op, t, in.Op)
	}
	// .approx and .full are computed exactly (round to nearest): the
	// hardware's approximations are not reproduced.
	is32 := t == ptx.F32
	sat := has(in, "sat")
	ftz := has(in, "ftz") && is32
	var f any
	switch in.Op {
	case "add", "sub":
		neg := uint64(0)
		if in.Op == "sub" {
			neg = 1 << (t.Bits() - 1)
		}
		if is32 {
			f = fn2(func(a, b uint64) uint64 { return addF32(a, b^neg, m) })
		} else {
			f = fn2(func(a, b uint64) uint64 { return addF64(a, b^neg, m) })
		}
	case "mul":
		if is32 {
			f = fn2(func(a, b uint64) uint64 { return mulF32(a, b, m) })
		} else {
			f = fn2(func(a, b uint64) uint64 { return mulF64(a, b, m) })
		}
	case "fma", "mad": // mad.f32 is fused, like fma
		if is32 {
			f = fn3(func(a, b, c uint64) uint64 { return fmaF32(a, b, c, m) })
		} else {
			f = fn3(func(a, b, c uint64) uint64 { return fmaF64(a, b, c, m) })
		}
	case "div":
		if is32 {
			f = fn2(func(a, b uint64) uint64 { return divF32(a, b, m) })
		} else {
			f = fn2(func(a, b uint64) uint64 { return divF64(a, b, m) })
		}
	case "rcp":
		if is32 {
			f = fn1(func(a uint64) uint64 { return divF32(0x3F800000, a, m) })
		} else {
			f = fn1(func(a uint64) uint64 { return divF64(0x3FF0000000000000, a, m) })
		}
	case "sqrt":
		if is32 {
			f = fn1(func(a uint64) uint64 { return sqrtF32(a, m) })
		} else {
			f = fn1(func(a uint64) uint64 { return sqrtF64(a, m) })
		}
	case "lg2", "ex2":
		// The hardware's approximations (MUFU) are not reproduced: the
		// result is the exact function correctly rounded, within the
		// documented error of .approx but not bit-identical to a GPU.
		fn := math.Log2
		if in.Op == "ex2" {
			fn = math.Exp2
		}
		if is32 {
			f = fn1(func(a uint64) uint64 { return b32(float32(fn(float64(f32(a))))) })
		} else {
			f = fn1(func(a uint64) uint64 { return b64(fn(f64(a))) })
		}
	case "min", "max":
		isMax, nan := in.Op == "max", has(in, "NaN")
		if is32 {
			f = fn2(func(a, b uint64) uint64 { return minmaxF32(a, b, isMax, nan) })
		} else {
			f = fn2(func(a, b uint64) uint64 { return minmaxF64(a, b, isMax, nan) })
		}
	case "abs", "neg": // sign-bit operations: NaNs pass through
		sb := uint64(1) << (t.Bits() - 1)
		if in.Op == "abs" {
			f = fn1(func(a uint64) uint64 { return a &^ sb })
		} else {
			f = fn1(func(a uint64) uint64 { return a ^ sb })
		}
	default:
		return nil, unsupported("%s on .%s", in.Op, t)
	}
	if ftz {
		f = flushed(f)
	}
	if sat {
		f = saturated(f, is32)
	}
	return f, nil
}

// flushed wraps f to flush f32 subnormal inputs and results to zero (.ftz).
func flushed(f any) any {
	switch f := f.(type) {
	case fn1:
		return fn1(func(a uint64) uint64 { return ftz32(f(ftz32(a))) })
	case fn2:
		return fn2(func(a, b uint64) uint64 { return ftz32(f(ftz32(a), ftz32(b))) })
	case fn3:
		return fn3(func(a, b, c uint64) uint64 { return ftz32(f(ftz32(a), ftz32(b), ftz32(c))) })
	}
	return f
}

// saturated wraps f to clamp its result to [0, 1], NaN to +0 (.sat).
func saturated(f any, is32 bool) any {
	sat := func(v uint64) uint64 {
		x := f64(v)
		if is32 {
			x = float64(f32(v))
		}
		switch {
		case !(x > 0): // NaN, zeros, negatives
			return 0
		case x > 1 && is32:
			return 0x3F800000
		case x > 1:
			return 0x3FF0000000000000
		}
		return v
	}
	switch f := f.(type) {
	case fn1:
		return fn1(func(a uint64) uint64 { return sat(f(a)) })
	case fn2:
		return fn2(func(a, b uint64) uint64 { return sat(f(a, b)) })
	case fn3:
		return fn3(func(a, b, c uint64) uint64 { return sat(f(a, b, c)) })
	}
	return f
}

// predOp compiles mov, and, or, xor and not on predicates.
func (c *compiler) predOp(in *ptx.Inst) (execFn, error) {
	var ps [3]int32
	var neg [3]bool
	for i, a := range in.Args {
		p, n, err := predOf(a)
		if err != nil {
			return nil, err
		}
		ps[i], neg[i] = p, n
	}
	var op func(a, b uint32) uint32
	switch in.Op {
	case "mov":
		op = func(a, _ uint32) uint32 { return a }
	case "not":
		op = func(a, _ uint32) uint32 { return ^a }
	case "and":
		op = func(a, b uint32) uint32 { return a & b }
	case "or":
		op = func(a, b uint32) uint32 { return a | b }
	case "xor":
		op = func(a, b uint32) uint32 { return a ^ b }
	default:
		return nil, unsupported("%s on .pred", in.Op)
	}
	two := len(in.Args) == 3
	return func(w *warp, m uint32) *Fault {
		a := w.pred(ps[1], neg[1])
		var b uint32
		if two {
			b = w.pred(ps[2], neg[2])
		}
		w.p[ps[0]] = w.p[ps[0]]&^m | op(a, b)&m
		return nil
	}, nil
}

// Comparison outcomes, as bits of a setp table: which outcomes make the
// predicate true.
const (
	oLT = 1 << iota
	oEQ
	oGT
	oUN // unordered: a NaN operand
)

var setpTable = map[string]uint8{
	"eq": oEQ, "ne": oLT | oGT, "lt": oLT, "le": oLT | oEQ, "gt": oGT, "ge": oGT | oEQ,
	"lo": oLT, "ls": oLT | oEQ, "hi": oGT, "hs": oGT | oEQ,
	"equ": oEQ | oUN, "neu": oLT | oGT | oUN, "ltu": oLT | oUN, "leu": oLT | oEQ | oUN,
	"gtu": oGT | oUN, "geu": oGT | oEQ | oUN, "num": oLT | oEQ | oGT, "nan": oUN,
}

// outcome compares x and y: oLT, oEQ, oGT, or oUN when unordered.
func outcome[T int64 | uint64 | float32 | float64](x, y T) uint8 {
	switch {
	case x < y:
		return oLT
	case x == y:
		return oEQ
	case x > y:
		return oGT
	}
	return oUN
}

// setp compiles a comparison: ordered float comparisons are false when an
// operand is NaN, the unordered ones (…u) true; lo/ls/hi/hs compare as
// unsigned.
func (c *compiler) setp(in *ptx.Inst, sig ptx.Sig) (execFn, error) {
	d, neg, err := predOf(in.Args[0])
	if err != nil || neg {
		return nil, fmt.Errorf("setp writes a plain predicate")
	}
	t := sig.Type
	a, err := c.src(in.Args[1], t)
	if err != nil {
		return nil, err
	}
	b, err := c.src(in.Args[2], t)
	if err != nil {
		return nil, err
	}
	op, n := in.Mods[0], t.Bits()
	tbl, ok := setpTable[op]
	switch {
	case !ok:
		return nil, unsupported("setp.%s", op)
	case t.IsInt() && tbl&oUN != 0:
		return nil, fmt.Errorf("setp.%s is for floats, not .%s", op, t)
	case t.IsFloat() && (op == "lo" || op == "ls" || op == "hi" || op == "hs"):
		return nil, fmt.Errorf("setp.%s is for integers, not .%s", op, t)
	case t.Kind() == ptx.KindBits && op != "eq" && op != "ne":
		return nil, fmt.Errorf("setp.%s is not defined on bit type .%s (use .u or .s)", op, t)
	}
	signed := t.Kind() == ptx.KindSigned && (op == "lt" || op == "le" || op == "gt" || op == "ge")
	return func(w *warp, m uint32) *Fault {
		A, B := w.v(a), w.v(b)
		var r uint32
		for x := m; x != 0; x &= x - 1 {
			l := bits.TrailingZeros32(x)
			var o uint8
			switch {
			case t == ptx.F32:
				o = outcome(f32(A[l]), f32(B[l]))
			case t == ptx.F64:
				o = outcome(f64(A[l]), f64(B[l]))
			case signed:
				o = outcome(sx(A[l], n), sx(B[l], n))
			default:
				o = outcome(A[l], B[l])
			}
			if tbl&o != 0 {
				r |= 1 << l
			}
		}
		w.p[d] = w.p[d]&^m | r
		return nil
	}, nil
}

func (c *compiler) selp(in *ptx.Inst, sig ptx.Sig) (execFn, error) {
	d, err := c.dst(in.Args[0])
	if err != nil {
		return nil, err
	}
	a, err := c.src(in.Args[1], sig.Type)
	if err != nil {
		return nil, err
	}
	b, err := c.src(in.Args[2], sig.Type)
	if err != nil {
		return nil, err
	}
	p, neg, err := predOf(in.Args[3])
	if err != nil {
		return nil, err
	}
	return func(w *warp, m uint32) *Fault {
		D, A, B, P := w.r.at(d), w.v(a), w.v(b), w.pred(p, neg)
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			if P&(1<<l) != 0 {
				D[l] = A[l]
			} else {
				D[l] = B[l]
			}
		}
		return nil
	}, nil
}

// cvt compiles a conversion with PTX's rules: float-to-int rounds as asked
// and clamps, NaN giving 0 (or 1<<(n-1) for an f64 source or a 64-bit
// destination); .sat clamps integers to the destination range and floats
// to [0, 1]; rounding modifiers are required where PTX requires them.
func (c *compiler) cvt(in *ptx.Inst, sig ptx.Sig) (execFn, error) {
	var rnd string
	var types []ptx.Type
	for _, s := range in.Mods {
		if t, ok := ptx.TypeByName(s); ok {
			types = append(types, t)
			continue
		}
		switch s {
		case "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi":
			rnd = s
		}
	}
	dt, st := types[0], types[1]
	if dt.Kind() == ptx.KindBits || st.Kind() == ptx.KindBits {
		return nil, fmt.Errorf("cvt takes .u, .s or .f types, not .b")
	}
	if (dt == ptx.F16 || st == ptx.F16) && !(dt == ptx.F32 && st == ptx.F16) {
		return nil, fmt.Errorf("cvt.%s.%s: of the .f16 conversions only cvt.f32.f16 is supported", dt, st)
	}
	d, err := c.dst(in.Args[0])
	if err != nil {
		return nil, err
	}
	a, err := c.src(in.Args[1], st)
	if err != nil {
		return nil, err
	}
	sat, ftz := has(in, "sat"), has(in, "ftz")
	m := rmodeOf(rnd)
	irnd := rnd == "rni" || rnd == "rzi" || rnd == "rmi" || rnd == "rpi"
	frnd := rnd != "" && !irnd
	dn, sn := dt.Bits(), st.Bits()
	dSigned, sSigned := dt.Kind() == ptx.KindSigned, st.Kind() == ptx.KindSigned
	regBits := clsBits[classOf(dt)] // an 8-bit result lives in a 16-bit register

	// readF returns the source as a float64 (exact), flushing if .ftz.
	readF := func(v uint64) float64 {
		if st == ptx.F32 {
			if ftz {
				v = ftz32(v)
			}
			return float64(f32(v))
		}
		return f64(v)
	}
	// readI returns the source integer, sign-extended when signed.
	readI := func(v uint64) uint64 {
		if sSigned {
			return uint64(sx(v, sn))
		}
		return v & mask(sn)
	}
	// writeI stores an integer result of dn bits in its register.
	writeI := func(v uint64) uint64 {
		if dSigned {
			return uint64(sx(v, dn)) & mask(regBits)
		}
		return v & mask(dn)
	}

	var f fn1
	switch {
	case st.IsInt() && dt.IsInt():
		if rnd != "" {
			return nil, fmt.Errorf("integer-to-integer cvt takes no rounding modifier")
		}
		lo, hi := intRange(dn, dSigned)
		f = func(v uint64) uint64 {
			x := readI(v)
			if sat {
				x = clampInt(x, sSigned, lo, hi, dSigned)
			}
			return writeI(x)
		}
	case st.IsInt() && dt.IsFloat():
		if !frnd {
			return nil, fmt.Errorf("int-to-float cvt needs .rn, .rz, .rm or .rp")
		}
		if dt == ptx.F32 {
			f = func(v uint64) uint64 { return intToF32(readI(v), sSigned, m) }
		} else {
			f = func(v uint64) uint64 { return intToF64(readI(v), sSigned, m) }
		}
		if sat {
			f = saturated(f, dt == ptx.F32).(fn1)
		}
	case st.IsFloat() && dt.IsInt():
		if !irnd {
			return nil, fmt.Errorf("float-to-int cvt needs .rni, .rzi, .rmi or .rpi")
		}
		nan := uint64(0)
		if st == ptx.F64 || dn == 64 {
			nan = 1 << (dn - 1)
		}
		f = func(v uint64) uint64 { return writeI(floatToInt(roundInt(readF(v), m), dn, dSigned, nan)) }
	default: // float to float
		switch {
		case dt == st && frnd, dt != st && irnd:
			return nil, fmt.Errorf("cvt.%s between .%s and .%s is not valid PTX", rnd, dt, st)
		case dn < sn && !frnd:
			return nil, fmt.Errorf("narrowing float cvt needs .rn, .rz, .rm or .rp")
		case dn > sn && rnd != "":
			return nil, fmt.Errorf("widening float cvt takes no rounding modifier")
		}
		var g fn1
		switch {
		case dt == ptx.F32 && st == ptx.F64:
			g = func(v uint64) uint64 { return f64ToF32(v, m) }
		case st == ptx.F16:
			g = func(v uint64) uint64 { return f16ToF32(uint16(v)) }
		case dt == ptx.F64 && st == ptx.F32:
			g = func(v uint64) uint64 { return b64(readF(v)) }
		case irnd && dt == ptx.F32:
			g = func(v uint64) uint64 { return b32(float32(roundInt(readF(v), m))) }
		case irnd:
			g = func(v uint64) uint64 { return b64(roundInt(readF(v), m)) }
		case dt == ptx.F32:
			g = func(v uint64) uint64 {
				if ftz {
					return ftz32(v)
				}
				return v
			}
		default:
			g = func(v uint64) uint64 { return v }
		}
		if ftz && dt == ptx.F32 { // the input was flushed by readF
			h := g
			g = func(v uint64) uint64 { return ftz32(h(v)) }
		}
		if sat {
			g = saturated(g, dt == ptx.F32).(fn1)
		}
		f = g
	}
	return un(d, a, f), nil
}

// intRange is the range of an n-bit integer, as the bits of int64 (signed)
// or uint64 values.
func intRange(n int, signed bool) (lo, hi uint64) {
	if signed {
		return uint64(int64(-1) << (n - 1)), uint64(1)<<(n-1) - 1
	}
	return 0, mask(n)
}

// clampInt clamps x (an int64 if xSigned) to [lo, hi] (int64s if signed).
func clampInt(x uint64, xSigned bool, lo, hi uint64, signed bool) uint64 {
	neg := xSigned && int64(x) < 0
	switch {
	case signed && neg:
		return uint64(max(int64(x), int64(lo)))
	case signed:
		if x > hi { // x is non-negative here: compare as unsigned
			return hi
		}
		return x
	case neg:
		return 0
	}
	return min(x, hi)
}
