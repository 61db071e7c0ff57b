package emu

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/gvr-go/gvr/ptx"
)

// This file compiles each instruction once into a closure that runs it for
// a whole warp: the dispatch costs once per warp instruction, not once per
// lane, which is what makes the interpreter fast.

// Register files: value registers are numbered per class like the
// printer's (%rs, %r, %rd, %f, %fd), then laid out one class after another.
const (
	clsB16 = iota
	clsB32
	clsB64
	clsF32
	clsF64
	numCls
)

var clsBits = [numCls]int{16, 32, 64, 32, 64}

func classOf(t ptx.Type) int {
	switch {
	case t == ptx.F32:
		return clsF32
	case t == ptx.F64:
		return clsF64
	case t.Bits() == 64:
		return clsB64
	case t.Bits() == 32:
		return clsB32
	}
	return clsB16
}

type compiler struct {
	k      *kernel
	base   [numCls]int
	labels map[string]int32
	consts map[uint64]*[32]uint64
	slots  map[ptx.Special]int32
	lines  []string
}

func compile(m *ptx.Module, e *ptx.Entry, lines []string) (*kernel, error) {
	k := &kernel{name: e.Name, entry: e}
	k.layout(m)
	c := &compiler{k: k, labels: map[string]int32{}, consts: map[uint64]*[32]uint64{}, slots: map[ptx.Special]int32{}, lines: lines}

	// Number the registers: each class gets as many as its highest use.
	var count [numCls]int
	pc := int32(0)
	for _, s := range e.Body {
		switch s := s.(type) {
		case ptx.LabelStmt:
			c.labels[s.Label.Name] = pc
		case *ptx.Inst:
			pc++
			for _, o := range append(s.Reads(), s.Writes()...) {
				switch o := o.(type) {
				case ptx.Reg:
					count[classOf(o.T)] = max(count[classOf(o.T)], o.N+1)
				case ptx.Pred:
					k.npreds = max(k.npreds, o.N+1)
				}
			}
		}
	}
	for i := 1; i < numCls; i++ {
		c.base[i] = c.base[i-1] + count[i-1]
	}
	k.nregs = c.base[numCls-1] + count[numCls-1]

	var errs []string
	for _, s := range e.Body {
		in, ok := s.(*ptx.Inst)
		if !ok {
			continue
		}
		ci, err := c.inst(in, len(k.code))
		if err != nil {
			errs = append(errs, fmt.Sprintf("line %d `%s`: %v", ci.line, ci.text, err))
		}
		k.code = append(k.code, ci)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("emu: kernel %s:\n\t%s", e.Name, strings.Join(errs, "\n\t"))
	}
	// Falling off the end of the body ends the thread.
	k.code = append(k.code, inst{kind: kExit, guard: -1, pc: len(k.code), text: "(end of kernel)"})
	return k, nil
}

func (c *compiler) reg(r ptx.Reg) int32 { return int32(c.base[classOf(r.T)] + r.N) }

// konst is a constant operand: the same 32 values for every warp.
func (c *compiler) konst(v uint64) src {
	if p, ok := c.consts[v]; ok {
		return src{c: p}
	}
	p := new([32]uint64)
	for i := range p {
		p[i] = v
	}
	c.consts[v] = p
	return src{c: p}
}

// special gives a special register a register slot, filled when a CTA
// starts.
func (c *compiler) special(s ptx.Special) int32 {
	if r, ok := c.slots[s]; ok {
		return r
	}
	r := int32(c.k.nregs)
	c.k.nregs++
	c.slots[s] = r
	c.k.specials = append(c.k.specials, specialAt{s, r})
	return r
}

// src compiles an operand read as type t.
func (c *compiler) src(o ptx.Operand, t ptx.Type) (src, error) {
	switch o := o.(type) {
	case ptx.Reg:
		return src{r: c.reg(o)}, nil
	case ptx.Imm:
		return c.konst(uint64(int64(o)) & mask(t.Bits())), nil
	case ptx.FloatImm:
		return c.konst(o.Bits), nil
	case ptx.Special:
		return src{r: c.special(o)}, nil
	case *ptx.Var:
		a, ok := c.k.sharedAddr[o]
		if !ok {
			return src{}, fmt.Errorf("variable %s in .%s: only shared variables are supported", o.Name, o.Space)
		}
		return c.konst(a), nil
	case *ptx.Param:
		return c.konst(uint64(c.k.paramOff[o])), nil
	}
	return src{}, fmt.Errorf("operand %T cannot be read here", o)
}

func (c *compiler) dst(o ptx.Operand) (int32, error) {
	if r, ok := o.(ptx.Reg); ok {
		return c.reg(r), nil
	}
	return 0, fmt.Errorf("destination %T is not a value register", o)
}

// inst compiles one instruction.
func (c *compiler) inst(in *ptx.Inst, pc int) (ci inst, err error) {
	ci = inst{guard: -1, pc: pc, line: lineOf(in)}
	if ci.line > 0 && ci.line <= len(c.lines) {
		ci.text = strings.Join(strings.Fields(c.lines[ci.line-1]), " ")
	}
	if in.Guard != nil {
		ci.guard, ci.gneg = int32(in.Guard.N), in.Guard.Neg
	}
	sig, err := in.Sig()
	if err != nil {
		return ci, err
	}
	switch in.Op {
	case "bra":
		ci.kind = kBra
		ci.target = c.labels[in.Args[0].(ptx.Label).Name]
	case "ret", "exit":
		ci.kind = kExit
	case "bar", "barrier":
		err = c.barrier(&ci, in)
	case "shfl", "vote", "redux", "match":
		ci.kind = kColl
		err = c.collective(&ci, in, sig)
	case "membar", "fence", "prefetch", "griddepcontrol":
		// Memory ordering needs no work here: the interpreter runs one
		// thread at a time, and the race detector does not count fences
		// as synchronisation. A prefetch is a hint (and never faults). A
		// launch here depends on no other grid: griddepcontrol has
		// nothing to wait for or to let go.
		ci.fn = func(*warp, uint32) *Fault { return nil }
	case "mapa":
		ci.fn, err = c.mapa(&ci, in, sig)
	case "mbarrier":
		c.k.async = true
		err = c.mbarrier(&ci, in, sig)
	case "cp":
		if has(in, "prefetch") {
			ci.fn, err = c.bulkPrefetch(&ci, in)
			break
		}
		c.k.async = true
		ci.fn, err = c.bulkCopy(&ci, in, sig)
	case "elect":
		ci.kind = kColl
		err = c.elect(&ci, in)
	case "mov":
		if in.Args[1] == ptx.IsExplicitCluster {
			ci.fn, err = c.isExplicit(in)
			break
		}
		ci.fn, err = c.compute(in, sig)
	case "ld", "st", "atom", "red", "cvta":
		ci.fn, err = c.memory(&ci, in, sig)
	default:
		ci.fn, err = c.compute(in, sig)
	}
	if err == nil && ci.kind == kPlain && ci.fn == nil {
		err = unsupported("%s", in.Op)
	}
	// What the interpreter lacks faults when a thread gets there, so the
	// module's other kernels still run; invalid PTX fails Load.
	var u unsupportedError
	if errors.As(err, &u) {
		ci.kind, ci.msg, err = kFault, u.Error(), nil
	}
	return ci, err
}

// unsupportedError is an instruction the interpreter does not implement
// yet, as opposed to one PTX forbids.
type unsupportedError string

func (e unsupportedError) Error() string { return string(e) }

func unsupported(format string, args ...any) error {
	return unsupportedError(fmt.Sprintf(format, args...) + " is not supported by the interpreter yet")
}

func has(in *ptx.Inst, mod string) bool { return slices.Contains(in.Mods, mod) }

// ---- lane loops ----

type fn1 func(a uint64) uint64
type fn2 func(a, b uint64) uint64
type fn3 func(a, b, c uint64) uint64

func un(d int32, a src, f fn1) execFn {
	return func(w *warp, m uint32) *Fault {
		D, A := w.r.at(d), w.v(a)
		if m == fullMask {
			for l := range D {
				D[l] = f(A[l])
			}
			return nil
		}
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			D[l] = f(A[l])
		}
		return nil
	}
}

func bin(d int32, a, b src, f fn2) execFn {
	return func(w *warp, m uint32) *Fault {
		D, A, B := w.r.at(d), w.v(a), w.v(b)
		if m == fullMask {
			for l := range D {
				D[l] = f(A[l], B[l])
			}
			return nil
		}
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			D[l] = f(A[l], B[l])
		}
		return nil
	}
}

func tern(d int32, a, b, cc src, f fn3) execFn {
	return func(w *warp, m uint32) *Fault {
		D, A, B, C := w.r.at(d), w.v(a), w.v(b), w.v(cc)
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			D[l] = f(A[l], B[l], C[l])
		}
		return nil
	}
}

// movFn copies a to d: the most common instruction gets no per-lane call.
func movFn(d int32, a src) execFn {
	return func(w *warp, m uint32) *Fault {
		D, A := w.r.at(d), w.v(a)
		if m == fullMask {
			*D = *A
			return nil
		}
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			D[l] = A[l]
		}
		return nil
	}
}

// addFn is integer addition modulo 2^bits, without a per-lane call.
func addFn(d int32, a, b src, mk uint64) execFn {
	return func(w *warp, m uint32) *Fault {
		D, A, B := w.r.at(d), w.v(a), w.v(b)
		if m == fullMask {
			for l := range D {
				D[l] = (A[l] + B[l]) & mk
			}
			return nil
		}
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			D[l] = (A[l] + B[l]) & mk
		}
		return nil
	}
}

// predOf compiles a predicate operand: its register and whether negated.
func predOf(o ptx.Operand) (int32, bool, error) {
	p, ok := o.(ptx.Pred)
	if !ok {
		return 0, false, fmt.Errorf("operand %T is not a predicate", o)
	}
	return int32(p.N), p.Neg, nil
}

func (w *warp) pred(p int32, neg bool) uint32 {
	if neg {
		return ^w.p[p]
	}
	return w.p[p]
}
