package emu

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/gvr-go/gvr/ptx"
)

// This file compiles loads, stores, atomics and cvta, and resolves
// addresses in the state spaces.

// addrOp is a compiled address [base+off].
type addrOp struct {
	base   src
	off    uint64
	narrow bool // a 32-bit base register: the address wraps at 32 bits
}

func (c *compiler) addr(o ptx.Operand) (addrOp, error) {
	ad, ok := o.(ptx.Addr)
	if !ok {
		return addrOp{}, fmt.Errorf("memory operand %T is not an address", o)
	}
	var a addrOp
	var err error
	a.off = uint64(ad.Off)
	if r, ok := ad.Base.(ptx.Reg); ok {
		a.narrow = r.T.Bits() == 32
	}
	a.base, err = c.src(ad.Base, ptx.U64)
	return a, err
}

func (w *warp) at(a *addrOp, l int) uint64 {
	x := w.v(a.base)[l] + a.off
	if a.narrow {
		x = uint64(uint32(x))
	}
	return x
}

// mem returns the n bytes at addr in space sp, for lane l executing in: the
// access must be naturally aligned (to n, the whole vector) and inside an
// allocation of global memory or inside the CTA's shared memory. Shared
// accesses go through the race detector when it is on.
func (w *warp) mem(in *inst, sp ptx.Space, l int, addr uint64, n int, write, atomic bool) ([]byte, *Fault) {
	if addr&uint64(n-1) != 0 {
		return nil, w.addrFault(FaultAlign, in, l, addr, "a %d-byte access must be aligned to %d bytes", n, n)
	}
	switch sp {
	case ptx.SpaceNone: // generic: the shared window, or global memory
		if addr-genericShared < 1<<32 {
			t, a, f := w.sharedTarget(in, sp, l, addr)
			if f != nil {
				return nil, f
			}
			return w.shared(in, l, t, a, addr, n, write, atomic)
		}
		fallthrough
	case ptx.SpaceGlobal:
		a := w.cache
		if a == nil || addr < a.base || addr+uint64(n) > a.base+uint64(len(a.data)) {
			a = w.c.ls.mem.find(addr, n)
			if a == nil {
				return nil, w.addrFault(FaultMemory, in, l, addr, "%d-byte global access outside every allocation%s", n, w.c.ls.mem.near(addr))
			}
			w.cache = a
		}
		off := addr - a.base
		return a.data[off : off+uint64(n)], nil
	case ptx.SpaceShared, ptx.SpaceSharedCTA, ptx.SpaceSharedCluster:
		t, a, f := w.sharedTarget(in, sp, l, addr)
		if f != nil {
			return nil, f
		}
		return w.shared(in, l, t, a, addr, n, write, atomic)
	case ptx.SpaceParam:
		p := w.c.ls.params
		if addr+uint64(n) > uint64(len(p)) {
			return nil, w.addrFault(FaultMemory, in, l, addr, "%d-byte parameter access outside the %d parameter bytes", n, len(p))
		}
		return p[addr : addr+uint64(n)], nil
	}
	return nil, w.addrFault(FaultUnsupported, in, l, addr, "the .%s state space is not supported yet", sp)
}

// shared returns the n bytes at .shared address a of CTA t (addr as the
// thread wrote it, for faults), through the race detector.
func (w *warp) shared(in *inst, l int, t *cta, a, addr uint64, n int, write, atomic bool) ([]byte, *Fault) {
	s := t.smem
	off := a - sharedWindow
	if a < sharedWindow || off+uint64(n) > uint64(len(s)) {
		whose := "the CTA's"
		if t != w.c {
			whose = fmt.Sprintf("CTA rank %d's", t.rank)
		}
		return nil, w.addrFault(FaultMemory, in, l, addr, "%d-byte shared access outside %s %d bytes of shared memory [%#x, %#x)", n, whose, len(s), sharedWindow, sharedWindow+len(s))
	}
	if r := t.race; r != nil {
		for o := int(off) &^ (raceGrain - 1); o < int(off)+n; o += raceGrain {
			if other, otherWrites, race := r.check(o, w, l, int32(in.pc), write, atomic); race {
				return nil, w.raceFault(in, l, t, addr, write, atomic, other, otherWrites)
			}
		}
	}
	return s[off : off+uint64(n)], nil
}

// near helps read a global fault: the allocation the address misses.
func (m *Memory) near(addr uint64) string {
	for _, a := range m.allocs {
		end := a.base + uint64(len(a.data))
		switch {
		case addr >= end && addr < end+globalGap:
			return fmt.Sprintf(" (%d bytes past the end of the %d-byte allocation at %#x)", addr-end, len(a.data), a.base)
		case addr < a.base && addr+globalGap >= a.base:
			return fmt.Sprintf(" (%d bytes before the %d-byte allocation at %#x)", a.base-addr, len(a.data), a.base)
		}
	}
	return ""
}

func load(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func store(b []byte, v uint64) {
	switch len(b) {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}

func (c *compiler) memory(ci *inst, in *ptx.Inst, sig ptx.Sig) (execFn, error) {
	switch in.Op {
	case "ld":
		return c.ld(ci, in, sig)
	case "st":
		return c.st(ci, in, sig)
	case "atom", "red":
		return c.atom(ci, in, sig)
	}
	return c.cvta(in, sig)
}

// regsOf lists the registers of a Reg or Vec operand.
func regsOf(o ptx.Operand) []ptx.Reg {
	switch o := o.(type) {
	case ptx.Reg:
		return []ptx.Reg{o}
	case ptx.Vec:
		return o
	}
	return nil
}

func (c *compiler) ld(ci *inst, in *ptx.Inst, sig ptx.Sig) (execFn, error) {
	t := sig.Type
	regs := regsOf(in.Args[0])
	if len(regs) == 0 {
		return nil, fmt.Errorf("ld writes %T", in.Args[0])
	}
	a, err := c.addr(in.Args[1])
	if err != nil {
		return nil, err
	}
	es := t.Bytes()
	n := es * len(regs)
	sp := sig.Space
	dst := make([]int32, len(regs))
	ext := make([]int, len(regs)) // sign-extend from this many bits, 0: no
	for i, r := range regs {
		dst[i] = c.reg(r)
		if t.Kind() == ptx.KindSigned && clsBits[classOf(r.T)] > t.Bits() {
			ext[i] = t.Bits() // an s8 in a 16-bit register
		}
	}
	if sp == ptx.SpaceGlobal && es == 4 && t.Kind() != ptx.KindSigned {
		return ldGlobal32(ci, a, dst), nil
	}
	return func(w *warp, m uint32) *Fault {
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			b, f := w.mem(ci, sp, l, w.at(&a, l), n, false, false)
			if f != nil {
				return f
			}
			for i, d := range dst {
				v := load(b[i*es : (i+1)*es])
				if ext[i] != 0 {
					v = uint64(sx(v, ext[i])) & 0xFFFF
				}
				w.r.at(d)[l] = v
			}
		}
		return nil
	}, nil
}

// ldGlobal32 is the common global load of 32-bit elements (scalar, .v2,
// .v4), kept short: an aligned access inside the warp's last allocation
// reads it directly; anything else takes the general path.
func ldGlobal32(ci *inst, a addrOp, dst []int32) execFn {
	n := uint64(4 * len(dst))
	return func(w *warp, m uint32) *Fault {
		A := w.v(a.base)
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			addr := A[l] + a.off
			var b []byte
			if c := w.cache; c != nil && addr&(n-1) == 0 && addr >= c.base && addr+n <= c.base+uint64(len(c.data)) {
				b = c.data[addr-c.base : addr-c.base+n]
			} else {
				var f *Fault
				if b, f = w.mem(ci, ptx.SpaceGlobal, l, addr, int(n), false, false); f != nil {
					return f
				}
			}
			for i, d := range dst {
				w.r.at(d)[l] = uint64(binary.LittleEndian.Uint32(b[4*i:]))
			}
		}
		return nil
	}
}

func (c *compiler) st(ci *inst, in *ptx.Inst, sig ptx.Sig) (execFn, error) {
	if has(in, "async") {
		c.k.async = true
		return c.stAsync(ci, in, sig, false)
	}
	t := sig.Type
	a, vals, err := c.storeArgs(in, t)
	if err != nil {
		return nil, err
	}
	es := t.Bytes()
	n := es * len(vals)
	sp := sig.Space
	if sp == ptx.SpaceParam {
		return nil, fmt.Errorf("st.param is not valid in a kernel")
	}
	return func(w *warp, m uint32) *Fault {
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			b, f := w.mem(ci, sp, l, w.at(&a, l), n, true, false)
			if f != nil {
				return f
			}
			for i, v := range vals {
				store(b[i*es:(i+1)*es], w.v(v)[l])
			}
		}
		return nil
	}, nil
}

// storeArgs compiles a store's address and values (a Reg, an immediate or
// a Vec of type t): st's and st.async's first two operands.
func (c *compiler) storeArgs(in *ptx.Inst, t ptx.Type) (addrOp, []src, error) {
	a, err := c.addr(in.Args[0])
	if err != nil {
		return a, nil, err
	}
	if v, ok := in.Args[1].(ptx.Vec); ok {
		vals := make([]src, len(v))
		for i, r := range v {
			vals[i] = src{r: c.reg(r)}
		}
		return a, vals, nil
	}
	s, err := c.src(in.Args[1], t)
	return a, []src{s}, err
}

// atom compiles atom and red. Lanes apply their updates one after another
// in lane order, so the values returned are deterministic.
func (c *compiler) atom(ci *inst, in *ptx.Inst, sig ptx.Sig) (execFn, error) {
	if has(in, "async") {
		c.k.async = true
		return c.stAsync(ci, in, sig, true)
	}
	t := sig.Type
	args := in.Args
	d := int32(-1)
	if in.Op == "atom" {
		var err error
		if d, err = c.dst(args[0]); err != nil {
			return nil, err
		}
		args = args[1:]
	}
	a, err := c.addr(args[0])
	if err != nil {
		return nil, err
	}
	b, err := c.src(args[1], t)
	if err != nil {
		return nil, err
	}
	cc := b
	if len(args) > 2 {
		if cc, err = c.src(args[2], t); err != nil {
			return nil, err
		}
	}
	sp := sig.Space
	if sp != ptx.SpaceGlobal && sp != ptx.SpaceShared && sp != ptx.SpaceSharedCTA && sp != ptx.SpaceSharedCluster && sp != ptx.SpaceNone {
		return nil, unsupported("%s on .%s", in.Op, sp)
	}
	f, err := atomOp(atomOpOf(in), t, sp == ptx.SpaceGlobal)
	if err != nil {
		return nil, err
	}
	n := t.Bytes()
	return func(w *warp, m uint32) *Fault {
		B, C := w.v(b), w.v(cc)
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			mem, flt := w.mem(ci, sp, l, w.at(&a, l), n, true, true)
			if flt != nil {
				return flt
			}
			old := load(mem)
			store(mem, f(old, B[l], C[l]))
			if d >= 0 {
				w.r.at(d)[l] = old
			}
		}
		return nil
	}, nil
}

// atomOpOf is the operation of an atom, red or red.async (its modifier
// "add", "min", ...; "" if none).
func atomOpOf(in *ptx.Inst) string {
	for _, s := range in.Mods {
		switch s {
		case "add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas":
			return s
		}
	}
	return ""
}

// atomOp is the update of an atomic: new value from old, b and c.
func atomOp(op string, t ptx.Type, global bool) (fn3, error) {
	n := t.Bits()
	mk := mask(n)
	signed := t.Kind() == ptx.KindSigned
	switch {
	case op == "add" && t == ptx.F32:
		if global {
			// Global f32 atomic adds flush subnormals (CUDA programming
			// guide: they behave as FADD.F32.FTZ.RN); shared ones do not.
			return func(o, b, _ uint64) uint64 { return ftz32(addF32(ftz32(o), ftz32(b), rn)) }, nil
		}
		return func(o, b, _ uint64) uint64 { return addF32(o, b, rn) }, nil
	case op == "add" && t == ptx.F64:
		return func(o, b, _ uint64) uint64 { return addF64(o, b, rn) }, nil
	case t.IsFloat():
	case op == "add":
		return func(o, b, _ uint64) uint64 { return (o + b) & mk }, nil
	case op == "min" || op == "max":
		isMax := op == "max"
		return func(o, b, _ uint64) uint64 {
			less := o < b
			if signed {
				less = sx(o, n) < sx(b, n)
			}
			if less != isMax {
				return o
			}
			return b
		}, nil
	case op == "inc" && n == 32:
		return func(o, b, _ uint64) uint64 {
			if o >= b {
				return 0
			}
			return o + 1
		}, nil
	case op == "dec" && n == 32:
		return func(o, b, _ uint64) uint64 {
			if o == 0 || o > b {
				return b
			}
			return o - 1
		}, nil
	case op == "and":
		return func(o, b, _ uint64) uint64 { return o & b }, nil
	case op == "or":
		return func(o, b, _ uint64) uint64 { return o | b }, nil
	case op == "xor":
		return func(o, b, _ uint64) uint64 { return o ^ b }, nil
	case op == "exch":
		return func(_, b, _ uint64) uint64 { return b }, nil
	case op == "cas":
		return func(o, b, c uint64) uint64 {
			if o == b {
				return c
			}
			return o
		}, nil
	}
	return nil, unsupported("atomic %s on .%s", op, t)
}

// cvta converts between generic addresses and state-space addresses:
// global addresses are their own generic addresses; shared ones live in a
// window at genericShared.
func (c *compiler) cvta(in *ptx.Inst, sig ptx.Sig) (execFn, error) {
	d, err := c.dst(in.Args[0])
	if err != nil {
		return nil, err
	}
	a, err := c.src(in.Args[1], sig.Type)
	if err != nil {
		return nil, err
	}
	mk := mask(sig.Type.Bits())
	switch {
	case sig.Space == ptx.SpaceGlobal:
		return movFn(d, a), nil
	case sig.Space == ptx.SpaceShared && has(in, "to"):
		return un(d, a, func(v uint64) uint64 { return (v - genericShared) & mk }), nil
	case sig.Space == ptx.SpaceShared:
		return un(d, a, func(v uint64) uint64 { return (v + genericShared) & mk }), nil
	}
	return nil, unsupported("cvta for .%s", sig.Space)
}
