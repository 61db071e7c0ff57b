package ptx

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
)

// NewModule starts a module for target t.
func NewModule(t Target) *Module {
	return &Module{Target: t}
}

// Comment adds a line to the module's header comment.
func (m *Module) Comment(format string, args ...any) {
	m.Header = append(m.Header, fmt.Sprintf(format, args...))
}

// Errorf records a builder error at the caller's position; Build returns it.
func (m *Module) Errorf(format string, args ...any) {
	m.errs = append(m.errs, fmt.Errorf("%s: %s", callerPos(), fmt.Sprintf(format, args...)))
}

// Shared declares a static shared-memory array of n elements of type elem,
// aligned to align bytes (0: the element size).
func (m *Module) Shared(name string, elem Type, n, align int) *Var {
	if align == 0 {
		align = elem.Bytes()
	}
	v := &Var{Name: name, Space: SpaceShared, Elem: elem, Len: n, Align: align}
	m.Vars = append(m.Vars, v)
	return v
}

// ExternShared declares the dynamically sized shared-memory array whose size
// is given at launch.
func (m *Module) ExternShared(name string, align int) *Var {
	v := &Var{Name: name, Space: SpaceShared, Elem: B8, Align: align, Extern: true}
	m.Vars = append(m.Vars, v)
	return v
}

// NewEntry adds a kernel entry called name.
func (m *Module) NewEntry(name string) *Entry {
	e := &Entry{Name: name, m: m, id: uint32(len(m.Entries) + 1)}
	m.Entries = append(m.Entries, e)
	return e
}

// Build checks the module (the verify pass), fixes its .version, and returns
// every error found, each with the generator position that caused it.
func (m *Module) Build() error {
	errs := append([]error(nil), m.errs...)
	errs = append(errs, Verify(m)...)
	m.Version = m.Target.MinPTX
	for _, e := range m.Entries {
		if len(e.clusterDirectives()) > 0 {
			m.Version = maxVersion(m.Version, v78)
		}
		for _, s := range e.Body {
			if in, ok := s.(*Inst); ok {
				_, v := in.Requires()
				m.Version = maxVersion(m.Version, v)
			}
		}
	}
	m.built = len(errs) == 0
	return errors.Join(errs...)
}

// callerPos is the file:line of the first caller outside package ptx.
// Every instruction records it, so it is resolved once per return address
// (posAt): resolving the frames of every call took most of a kernel's
// generation time.
func callerPos() string {
	var pcs [16]uintptr
	n := runtime.Callers(2, pcs[:])
	for _, pc := range pcs[:n] {
		if pos := posAt(pc); pos != "" {
			return pos
		}
	}
	return "?"
}

// positions caches posAt: return address -> position ("" where every frame
// at it is in package ptx).
var positions sync.Map

// posAt is the file:line of the first frame outside package ptx among the
// frames at return address pc (more than one where calls were inlined),
// or "" if there is none.
func posAt(pc uintptr) string {
	if pos, ok := positions.Load(pc); ok {
		return pos.(string)
	}
	pos := ""
	frames := runtime.CallersFrames([]uintptr{pc})
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "github.com/gvr-go/gvr/ptx.") || strings.HasSuffix(f.File, "_test.go") {
			file := f.File
			if i := strings.LastIndex(file, "/"); i >= 0 {
				if j := strings.LastIndex(file[:i], "/"); j >= 0 {
					file = file[j+1:]
				}
			}
			pos = fmt.Sprintf("%s:%d", file, f.Line)
			break
		}
		if !more {
			break
		}
	}
	positions.Store(pc, pos)
	return pos
}

// Param adds a kernel parameter.
func (e *Entry) Param(name string, t Type) *Param {
	p := &Param{Name: name, T: t}
	e.Params = append(e.Params, p)
	return p
}

// Reg allocates a new virtual register of type t.
func (e *Entry) Reg(t Type) Reg {
	if t == TypePred || t.Bits() < 8 {
		e.m.Errorf("entry %s: Reg(%v): use Pred for predicates", e.Name, t)
		return Reg{}
	}
	c := classOf(t)
	r := Reg{T: t, N: e.nregs[c], entry: e.id}
	e.nregs[c]++
	return r
}

// Pred allocates a new predicate register.
func (e *Entry) Pred() Pred {
	p := Pred{N: e.nregs[classPred], entry: e.id}
	e.nregs[classPred]++
	return p
}

// NewLabel makes a label unique within the entry; hint makes it readable.
func (e *Entry) NewLabel(hint string) Label {
	e.labels++
	return Label{Name: fmt.Sprintf("$L%d_%s", e.labels, hint)}
}

// Place puts label l at the current position.
func (e *Entry) Place(l Label) { e.Body = append(e.Body, LabelStmt{l}) }

// Comment adds a comment line at the current position.
func (e *Entry) Comment(format string, args ...any) {
	e.Body = append(e.Body, Comment{fmt.Sprintf(format, args...)})
}

// Emit appends an instruction spelled op.mods[0].mods[1]... with args. The
// typed helpers below cover what gvr's generators use; Emit is the escape
// hatch, checked like them by the verify pass.
func (e *Entry) Emit(op string, mods []string, args ...Operand) *Inst {
	in := &Inst{Op: op, Mods: mods, Args: args, Guard: e.guard, Pos: callerPos()}
	e.Body = append(e.Body, in)
	return in
}

// Guarded emits the instructions that fn emits under the guard @p (@!p for
// p.Not()). Guards do not nest.
func (e *Entry) Guarded(p Pred, fn func()) {
	if e.guard != nil {
		e.m.Errorf("entry %s: Guarded inside Guarded", e.Name)
	}
	e.guard = &p
	fn()
	e.guard = nil
}

// If emits then, executed by the threads for which p holds.
func (e *Entry) If(p Pred, then func()) {
	end := e.NewLabel("endif")
	e.braIf(p.Not(), end)
	then()
	e.Place(end)
}

// IfElse emits then for the threads where p holds and els for the others.
func (e *Entry) IfElse(p Pred, then, els func()) {
	elseL, end := e.NewLabel("else"), e.NewLabel("endif")
	e.braIf(p.Not(), elseL)
	then()
	e.Bra(end)
	e.Place(elseL)
	els()
	e.Place(end)
}

// For emits for i = start; i < end; i += step { body }, comparing as i's
// type (signed or unsigned).
func (e *Entry) For(i Reg, start, end, step Operand, body func()) {
	e.Mov(i, start)
	e.While(func() Pred {
		p := e.Pred()
		e.Setp(p, LT, i, end)
		return p
	}, func() {
		body()
		e.Add(i, i, step)
	})
}

// While emits a loop that evaluates cond at the top of each iteration and
// runs body while it holds.
func (e *Entry) While(cond func() Pred, body func()) {
	top, end := e.NewLabel("loop"), e.NewLabel("endloop")
	e.Place(top)
	p := cond()
	e.braIf(p.Not(), end)
	body()
	e.Bra(top)
	e.Place(end)
}

// DoWhile emits a loop whose body runs once, then again while cond holds.
func (e *Entry) DoWhile(body func(), cond func() Pred) {
	top := e.NewLabel("do")
	e.Place(top)
	body()
	e.braIf(cond(), top)
}

func (e *Entry) braIf(p Pred, l Label) {
	saved := e.guard
	e.guard = &p
	e.Emit("bra", nil, l)
	e.guard = saved
}

// BraIf branches to l when p holds.
func (e *Entry) BraIf(p Pred, l Label) { e.braIf(p, l) }

// Bra branches to l.
func (e *Entry) Bra(l Label) { e.Emit("bra", nil, l) }

// BraUni branches to l; the branch is known to be warp-uniform.
func (e *Entry) BraUni(l Label) { e.Emit("bra", []string{"uni"}, l) }

// Ret returns from the kernel.
func (e *Entry) Ret() { e.Emit("ret", nil) }

// Exit ends the thread.
func (e *Entry) Exit() { e.Emit("exit", nil) }

// Float is a float32 immediate.
func Float(v float32) FloatImm { return FloatImm{T: F32, Bits: uint64(math.Float32bits(v))} }

// FloatBits is the float32 immediate with the given bits.
func FloatBits(b uint32) FloatImm { return FloatImm{T: F32, Bits: uint64(b)} }

// Double is a float64 immediate.
func Double(v float64) FloatImm { return FloatImm{T: F64, Bits: math.Float64bits(v)} }

// At is the address [base+off].
func At(base Operand, off int64) Addr { return Addr{Base: base, Off: off} }

// typeOf is the type an operand carries, if any.
func typeOf(a Operand) Type {
	switch a := a.(type) {
	case Reg:
		return a.T
	case Pred:
		return TypePred
	case FloatImm:
		return a.T
	case Special:
		return a.Type()
	}
	return TypeInvalid
}

// ---- data movement and arithmetic ----

// Mov emits mov: d = a. d is a Reg or a Pred; a may be a register, an
// immediate, a special register, or a *Var/*Param (its address).
func (e *Entry) Mov(d, a Operand) { e.Emit("mov", []string{typeOf(d).Name()}, d, a) }

// MovBits emits d = a reinterpreted: mov.bN between registers of one width
// (a float's bits into an integer register, say).
func (e *Entry) MovBits(d Reg, a Operand) { e.Emit("mov", []string{bitsType(d.T).Name()}, d, a) }

func (e *Entry) arith(op string, d Reg, args ...Operand) {
	e.Emit(op, []string{d.T.Name()}, append([]Operand{d}, args...)...)
}

// bitop emits a logical instruction, which PTX types by width only (.b32).
func (e *Entry) bitop(op string, d Reg, args ...Operand) {
	e.Emit(op, []string{bitsType(d.T).Name()}, append([]Operand{d}, args...)...)
}

// Add emits d = a + b.
func (e *Entry) Add(d Reg, a, b Operand) { e.arith("add", d, a, b) }

// Sub emits d = a - b.
func (e *Entry) Sub(d Reg, a, b Operand) { e.arith("sub", d, a, b) }

// Min emits d = min(a, b) (for floats a NaN operand is ignored).
func (e *Entry) Min(d Reg, a, b Operand) { e.arith("min", d, a, b) }

// Max emits d = max(a, b) (for floats a NaN operand is ignored).
func (e *Entry) Max(d Reg, a, b Operand) { e.arith("max", d, a, b) }

// Rem emits the integer remainder d = a % b. An unsigned one by a power
// of two (an immediate) is a mask, as Div's quotient is a shift.
func (e *Entry) Rem(d Reg, a, b Operand) {
	if s, ok := pow2Shift(d.T, b); ok {
		e.And(d, a, Imm(int64(1)<<s-1))
		return
	}
	e.arith("rem", d, a, b)
}

// And emits d = a & b (AndPred is the predicate form).
func (e *Entry) And(d Reg, a, b Operand) { e.bitop("and", d, a, b) }

// Or emits d = a | b.
func (e *Entry) Or(d Reg, a, b Operand) { e.bitop("or", d, a, b) }

// Xor emits d = a ^ b.
func (e *Entry) Xor(d Reg, a, b Operand) { e.bitop("xor", d, a, b) }

// Not emits d = ^a.
func (e *Entry) Not(d Reg, a Operand) { e.bitop("not", d, a) }

// Neg emits d = -a.
func (e *Entry) Neg(d Reg, a Operand) { e.arith("neg", d, a) }

// Abs emits d = |a|.
func (e *Entry) Abs(d Reg, a Operand) { e.arith("abs", d, a) }

// AndPred emits d = a && b on predicates.
func (e *Entry) AndPred(d, a, b Pred) { e.Emit("and", []string{"pred"}, d, a, b) }

// OrPred emits d = a || b on predicates.
func (e *Entry) OrPred(d, a, b Pred) { e.Emit("or", []string{"pred"}, d, a, b) }

// XorPred emits d = a != b on predicates.
func (e *Entry) XorPred(d, a, b Pred) { e.Emit("xor", []string{"pred"}, d, a, b) }

// Mul emits d = a * b: the low half for integers, round-to-nearest for floats.
func (e *Entry) Mul(d Reg, a, b Operand) {
	if d.T.IsFloat() {
		e.Emit("mul", []string{"rn", d.T.Name()}, d, a, b)
		return
	}
	e.Emit("mul", []string{"lo", d.T.Name()}, d, a, b)
}

// MulHi emits the high half of the integer product a * b.
func (e *Entry) MulHi(d Reg, a, b Operand) { e.Emit("mul", []string{"hi", d.T.Name()}, d, a, b) }

// MulWide emits the full product of two half-width integers: d is 64-bit for
// 32-bit sources (the source type is d's halved: u64 -> u32).
func (e *Entry) MulWide(d Reg, a, b Operand) {
	e.Emit("mul", []string{"wide", narrow(d.T).Name()}, d, a, b)
}

// Mad emits d = a*b + c: mad.lo for integers, fma.rn for floats.
func (e *Entry) Mad(d Reg, a, b, c Operand) {
	if d.T.IsFloat() {
		e.Emit("fma", []string{"rn", d.T.Name()}, d, a, b, c)
		return
	}
	e.Emit("mad", []string{"lo", d.T.Name()}, d, a, b, c)
}

// Div emits d = a / b: truncating for integers, IEEE round-to-nearest for
// floats. An unsigned quotient by a power of two (an immediate) is a right
// shift: ptxas turns div.u32 by any immediate into its generic division, a
// reciprocal through the MUFU unit and a dozen integer instructions, where
// a compiler's front end would have shifted.
func (e *Entry) Div(d Reg, a, b Operand) {
	if d.T.IsFloat() {
		e.Emit("div", []string{"rn", d.T.Name()}, d, a, b)
		return
	}
	if s, ok := pow2Shift(d.T, b); ok {
		e.Shr(d, a, Imm(s))
		return
	}
	e.arith("div", d, a, b)
}

// pow2Shift is log2(b) where b is a power-of-two immediate and t unsigned:
// where a division by b is a shift by it.
func pow2Shift(t Type, b Operand) (int64, bool) {
	v, ok := b.(Imm)
	if !ok || t.Kind() != KindUnsigned || v <= 0 || v&(v-1) != 0 {
		return 0, false
	}
	var s int64
	for v > 1 {
		v >>= 1
		s++
	}
	return s, true
}

// Lg2 emits d = log2(a), approximately (lg2.approx: about 22 good bits).
func (e *Entry) Lg2(d Reg, a Operand) { e.Emit("lg2", []string{"approx", d.T.Name()}, d, a) }

// Shl emits d = a << b.
func (e *Entry) Shl(d Reg, a, b Operand) {
	e.Emit("shl", []string{bitsType(d.T).Name()}, d, a, b)
}

// Shr emits d = a >> b: arithmetic for signed d, logical otherwise.
func (e *Entry) Shr(d Reg, a, b Operand) {
	t := d.T
	if t.Kind() == KindBits {
		t = bitsType(t)
	}
	e.Emit("shr", []string{t.Name()}, d, a, b)
}

// Popc emits d = number of set bits in a (d is 32-bit).
func (e *Entry) Popc(d Reg, a Reg) { e.Emit("popc", []string{bitsType(a.T).Name()}, d, a) }

// Clz emits d = number of leading zero bits of a.
func (e *Entry) Clz(d Reg, a Reg) { e.Emit("clz", []string{bitsType(a.T).Name()}, d, a) }

// Brev emits d = a with its bits reversed.
func (e *Entry) Brev(d Reg, a Operand) { e.Emit("brev", []string{bitsType(d.T).Name()}, d, a) }

// Bfind emits d = the position of a's most significant non-sign bit
// (0xffffffff when there is none).
func (e *Entry) Bfind(d Reg, a Reg) { e.Emit("bfind", []string{a.T.Name()}, d, a) }

// Cvt emits d = a converted to d's type, with the rounding C would use:
// round-to-nearest into floats, truncation from floats into integers.
func (e *Entry) Cvt(d Reg, a Reg) {
	var mods []string
	switch {
	case d.T.IsFloat() && a.T.IsInt(), d.T.IsFloat() && a.T.Bits() > d.T.Bits():
		mods = append(mods, "rn")
	case d.T.IsInt() && a.T.IsFloat():
		mods = append(mods, "rzi")
	}
	e.Emit("cvt", append(mods, d.T.Name(), a.T.Name()), d, a)
}

// PrefetchL2 emits prefetch.global.L2 [a]: a hint to bring the line at
// global address a into L2; it never faults.
func (e *Entry) PrefetchL2(a Addr) { e.Emit("prefetch", []string{"global", "L2"}, a) }

// CvtFrom emits cvt.d.from d, a: a conversion whose source type is not
// a's register type, such as an f16 held in a .b16 register.
func (e *Entry) CvtFrom(d Reg, a Reg, from Type) {
	e.Emit("cvt", []string{d.T.Name(), from.Name()}, d, a)
}

// CvtRound emits cvt with an explicit rounding mode ("rni", "rmi", "rn"...).
func (e *Entry) CvtRound(d Reg, a Reg, round string) {
	e.Emit("cvt", []string{round, d.T.Name(), a.T.Name()}, d, a)
}

// CvtaToGlobal converts the generic address a to a global one.
func (e *Entry) CvtaToGlobal(d Reg, a Operand) {
	e.Emit("cvta", []string{"to", "global", d.T.Name()}, d, a)
}

// Cmp is a setp comparison.
type Cmp string

// The comparisons. EQ..GE are ordered (false if a float operand is NaN),
// EQU..GEU unordered (true if one is); NUM and NAN test for NaN.
const (
	EQ  Cmp = "eq"
	NE  Cmp = "ne"
	LT  Cmp = "lt"
	LE  Cmp = "le"
	GT  Cmp = "gt"
	GE  Cmp = "ge"
	EQU Cmp = "equ"
	NEU Cmp = "neu"
	LTU Cmp = "ltu"
	LEU Cmp = "leu"
	GTU Cmp = "gtu"
	GEU Cmp = "geu"
	NUM Cmp = "num"
	NAN Cmp = "nan"
)

// Setp emits p = a cmp b, comparing as the type of the first register operand.
func (e *Entry) Setp(p Pred, cmp Cmp, a, b Operand) {
	t := typeOf(a)
	if t == TypeInvalid {
		t = typeOf(b)
	}
	if t == TypeInvalid {
		e.m.Errorf("entry %s: setp with two immediates has no type", e.Name)
	}
	e.Emit("setp", []string{string(cmp), t.Name()}, p, a, b)
}

// SetpT is Setp with an explicit comparison type (for unsigned compares of
// bit-typed registers, say).
func (e *Entry) SetpT(t Type, p Pred, cmp Cmp, a, b Operand) {
	e.Emit("setp", []string{string(cmp), t.Name()}, p, a, b)
}

// Selp emits d = p ? a : b.
func (e *Entry) Selp(d Reg, a, b Operand, p Pred) {
	e.Emit("selp", []string{d.T.Name()}, d, a, b, p)
}

// ---- memory ----

// memType is the instruction type of a load or store of d (a Reg or Vec).
func memType(d Operand) (Type, []string) {
	if v, ok := d.(Vec); ok && len(v) > 0 {
		return v[0].T, []string{fmt.Sprintf("v%d", len(v))}
	}
	return typeOf(d), nil
}

func spaceMods(sp Space) []string {
	if sp == SpaceNone {
		return nil
	}
	return []string{sp.Name()}
}

// Ld loads d (a Reg or a Vec of 2 or 4) from addr in space sp.
func (e *Entry) Ld(sp Space, d Operand, addr Addr) {
	t, vec := memType(d)
	mods := append(append(spaceMods(sp), vec...), t.Name())
	e.Emit("ld", mods, d, addr)
}

// LdStrong loads d (a Reg or a Vec of 2 or 4) from addr in space sp as
// a strong load of sem (SemRelaxed or SemAcquire) at scope: ld.sem.scope
// (PTX 6.0, sm_70; .cluster scope PTX 7.8, sm_90). A relaxed load sees
// other threads' strong stores without a fence, where a weak one may not:
// what a spin on another CTA's word needs.
func (e *Entry) LdStrong(sp Space, sem Sem, scope Scope, d Operand, addr Addr) {
	t, vec := memType(d)
	mods := append(append(append([]string{string(sem), string(scope)}, spaceMods(sp)...), vec...), t.Name())
	e.Emit("ld", mods, d, addr)
}

// StStrong stores v to addr in space sp as a strong store of sem
// (SemRelaxed or SemRelease) at scope: st.sem.scope (as LdStrong).
func (e *Entry) StStrong(sp Space, sem Sem, scope Scope, t Type, addr Addr, v Operand) {
	_, vec := memType(v)
	mods := append(append(append([]string{string(sem), string(scope)}, spaceMods(sp)...), vec...), t.Name())
	e.Emit("st", mods, addr, v)
}

// LdNC loads d from global memory through the read-only (non-coherent) path.
func (e *Entry) LdNC(d Operand, addr Addr) {
	t, vec := memType(d)
	mods := append(append([]string{"global", "nc"}, vec...), t.Name())
	e.Emit("ld", mods, d, addr)
}

// LdParam loads parameter p into a new register of p's type.
func (e *Entry) LdParam(p *Param) Reg {
	r := e.Reg(p.T)
	e.Ld(SpaceParam, r, At(p, 0))
	return r
}

// St stores v (a register, immediate or Vec) to addr in space sp; t is the
// store type.
func (e *Entry) St(sp Space, t Type, addr Addr, v Operand) {
	_, vec := memType(v)
	mods := append(append(spaceMods(sp), vec...), t.Name())
	e.Emit("st", mods, addr, v)
}

// Atom emits d = atom.op [addr], b in space sp (op: "add", "min", "max",
// "exch", "or"...). d's type is the operation's type.
func (e *Entry) Atom(sp Space, op string, d Reg, addr Addr, b Operand) {
	e.Emit("atom", append(spaceMods(sp), op, d.T.Name()), d, addr, b)
}

// Red emits the reduction red.op [addr], b of type t in space sp.
func (e *Entry) Red(sp Space, op string, t Type, addr Addr, b Operand) {
	e.Emit("red", append(spaceMods(sp), op, t.Name()), addr, b)
}

// ---- synchronisation and warp collectives ----

// BarSync emits bar.sync id: every thread of the CTA waits for the others.
func (e *Entry) BarSync(id int) { e.Emit("bar", []string{"sync"}, Imm(id)) }

// BarWarpSync emits bar.warp.sync mask.
func (e *Entry) BarWarpSync(mask Operand) { e.Emit("bar", []string{"warp", "sync"}, mask) }

// ShflMode is a shfl.sync mode.
type ShflMode string

// The shuffle modes.
const (
	ShflUp   ShflMode = "up"
	ShflDown ShflMode = "down"
	ShflBfly ShflMode = "bfly"
	ShflIdx  ShflMode = "idx"
)

// Shfl emits d = shfl.sync.mode(a, b, c, mask) on 32 bits.
func (e *Entry) Shfl(mode ShflMode, d Reg, a, b, c, mask Operand) {
	e.Emit("shfl", []string{"sync", string(mode), "b32"}, d, a, b, c, mask)
}

// VoteBallot emits d = the mask of lanes in mask whose p holds.
func (e *Entry) VoteBallot(d Reg, p Pred, mask Operand) {
	e.Emit("vote", []string{"sync", "ballot", "b32"}, d, p, mask)
}

// VoteAny emits d = p holds in some lane of mask.
func (e *Entry) VoteAny(d, p Pred, mask Operand) {
	e.Emit("vote", []string{"sync", "any", "pred"}, d, p, mask)
}

// VoteAll emits d = p holds in every lane of mask.
func (e *Entry) VoteAll(d, p Pred, mask Operand) {
	e.Emit("vote", []string{"sync", "all", "pred"}, d, p, mask)
}

// Redux emits the warp reduction d = op over the lanes of mask of a (op:
// "add", "min", "max", "and", "or", "xor"); the type is d's.
func (e *Entry) Redux(op string, d Reg, a Reg, mask Operand) {
	t := d.T.Name()
	if op == "and" || op == "or" || op == "xor" {
		t = "b32" // the bitwise reductions are typed by width only
	}
	e.Emit("redux", []string{"sync", op, t}, d, a, mask)
}

// MatchAny emits d = the mask of the lanes in mask whose a equals this
// lane's (match.any.sync.b32).
func (e *Entry) MatchAny(d Reg, a Reg, mask Operand) {
	e.Emit("match", []string{"any", "sync", "b32"}, d, a, mask)
}

// Activemask emits d = the mask of currently active lanes.
func (e *Entry) Activemask(d Reg) { e.Emit("activemask", []string{"b32"}, d) }

// ---- clusters, mbarriers and bulk copies ----

// Sem is the memory-ordering qualifier of a synchronising instruction.
type Sem string

// The orderings. SemDefault spells none: the instruction's default.
const (
	SemDefault Sem = ""
	SemRelaxed Sem = "relaxed"
	SemAcquire Sem = "acquire"
	SemRelease Sem = "release"
	SemAcqRel  Sem = "acq_rel"
	SemSC      Sem = "sc"
)

// Scope is the set of threads a memory ordering is promised to.
// ScopeDefault spells none: the instruction's default.
type Scope string

// The scopes.
const (
	ScopeDefault Scope = ""
	ScopeCTA     Scope = "cta"
	ScopeCluster Scope = "cluster"
	ScopeGPU     Scope = "gpu"
	ScopeSys     Scope = "sys"
)

// semScope spells the qualifiers that are given.
func semScope(sem Sem, scope Scope) []string {
	var out []string
	if sem != SemDefault {
		out = append(out, string(sem))
	}
	if scope != ScopeDefault {
		out = append(out, string(scope))
	}
	return out
}

// Fence emits fence.sem.scope (sem SemSC or SemAcqRel): fence.acq_rel.cluster
// orders this thread's memory accesses as seen by the whole cluster.
func (e *Entry) Fence(sem Sem, scope Scope) { e.Emit("fence", semScope(sem, scope)) }

// FenceMbarrierInit emits fence.mbarrier_init.release.cluster: this
// thread's earlier mbarrier.init become visible to the cluster (to other
// CTAs' arrivals and to bulk copies) at its next barrier.cluster.arrive.
func (e *Entry) FenceMbarrierInit() {
	e.Emit("fence", []string{"mbarrier_init", "release", "cluster"})
}

// BarrierClusterArrive emits barrier.cluster.arrive{.sem}.aligned: this
// thread arrives at the cluster barrier (sem SemDefault, which is release,
// SemRelease or SemRelaxed; the spelled ones need PTX 8.0). Every thread of
// the warp executes it together.
func (e *Entry) BarrierClusterArrive(sem Sem) {
	e.Emit("barrier", append(append([]string{"cluster", "arrive"}, semScope(sem, "")...), "aligned"))
}

// BarrierClusterWait emits barrier.cluster.wait{.sem}.aligned: the thread
// waits until every non-exited thread of the cluster has arrived (sem
// SemDefault, which is acquire, or SemAcquire).
func (e *Entry) BarrierClusterWait(sem Sem) {
	e.Emit("barrier", append(append([]string{"cluster", "wait"}, semScope(sem, "")...), "aligned"))
}

// BarrierClusterSync emits an arrive and a wait: every thread of the
// cluster waits for all the others.
func (e *Entry) BarrierClusterSync() {
	e.BarrierClusterArrive(SemDefault)
	e.BarrierClusterWait(SemDefault)
}

// Mapa emits d = the address in the shared memory of the cluster's CTA of
// rank rank that corresponds to a. With sp SpaceSharedCluster, a is a
// shared address (a register, or a shared *Var) and d a .shared::cluster
// address; with SpaceNone both are generic. d is 32- or 64-bit.
func (e *Entry) Mapa(sp Space, d Reg, a, rank Operand) {
	t := U32
	if d.T.Bits() == 64 {
		t = U64
	}
	e.Emit("mapa", append(spaceMods(sp), t.Name()), d, a, rank)
}

// mbarrierMods spells mbarrier.op{.sem.scope}{.space}.b64; with a scope,
// sem is the operation's ordering.
func mbarrierMods(op []string, sem Sem, scope Scope, sp Space) []string {
	mods := append([]string(nil), op...)
	if scope != ScopeDefault {
		mods = append(mods, semScope(sem, scope)...)
	}
	return append(append(mods, spaceMods(sp)...), "b64")
}

// MbarrierInit emits mbarrier.init: the mbarrier object at bar (8 bytes,
// 8-aligned, in shared memory) expects count arrivals per phase. sp is
// SpaceShared, SpaceSharedCTA (PTX 7.8) or SpaceNone (a generic address).
func (e *Entry) MbarrierInit(sp Space, bar Addr, count Operand) {
	e.Emit("mbarrier", mbarrierMods([]string{"init"}, "", "", sp), bar, count)
}

// MbarrierInval emits mbarrier.inval: the object at bar is no longer an
// mbarrier, and its memory may be used for something else.
func (e *Entry) MbarrierInval(sp Space, bar Addr) {
	e.Emit("mbarrier", mbarrierMods([]string{"inval"}, "", "", sp), bar)
}

// MbarrierArrive emits mbarrier.arrive: one arrival on the barrier at bar.
// state (a .b64 register) gets the phase token; on another CTA's barrier
// (sp SpaceSharedCluster, an address from Mapa) nothing comes back and state
// must be Sink{}. ScopeDefault spells no ordering (release at CTA scope);
// ScopeCTA or ScopeCluster spells .release.scope (PTX 8.0, sm_90).
func (e *Entry) MbarrierArrive(sp Space, scope Scope, state Operand, bar Addr) {
	e.Emit("mbarrier", mbarrierMods([]string{"arrive"}, SemRelease, scope, sp), state, bar)
}

// MbarrierArriveExpectTx emits mbarrier.arrive.expect_tx (PTX 8.0, sm_90):
// one arrival that also makes the current phase wait for tx more bytes of
// asynchronous transactions (the bytes a CpAsyncBulk will deliver).
func (e *Entry) MbarrierArriveExpectTx(sp Space, scope Scope, state Operand, bar Addr, tx Operand) {
	e.Emit("mbarrier", mbarrierMods([]string{"arrive", "expect_tx"}, SemRelease, scope, sp), state, bar, tx)
}

// MbarrierTryWaitParity emits mbarrier.try_wait.parity (PTX 7.8, sm_90):
// done = the phase of the barrier at bar with parity parity (0 or 1; it
// flips each time a phase completes) has completed. The thread may sleep a
// while before it answers false; loop until true (MbarrierWait). A scope
// spells .acquire.scope (PTX 8.0).
func (e *Entry) MbarrierTryWaitParity(sp Space, scope Scope, done Pred, bar Addr, parity Operand) {
	e.Emit("mbarrier", mbarrierMods([]string{"try_wait", "parity"}, SemAcquire, scope, sp), done, bar, parity)
}

// MbarrierWait waits until the phase of parity of the barrier at bar has
// completed: a loop on MbarrierTryWaitParity.
func (e *Entry) MbarrierWait(sp Space, scope Scope, bar Addr, parity Operand) {
	e.DoWhile(func() {}, func() Pred {
		done := e.Pred()
		e.MbarrierTryWaitParity(sp, scope, done, bar, parity)
		return done.Not()
	})
}

// CpAsyncBulk emits
// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes (PTX 8.0,
// sm_90): an asynchronous copy of size bytes from global memory at src to
// shared memory at dst (a .shared::cluster address: this CTA's or, through
// Mapa, another's), which counts size bytes of transactions on the mbarrier
// at bar, in dst's CTA. size is a multiple of 16, dst and src 16-byte
// aligned.
func (e *Entry) CpAsyncBulk(dst, src Addr, size Operand, bar Addr) {
	e.Emit("cp", []string{"async", "bulk", "shared::cluster", "global", "mbarrier::complete_tx::bytes"}, dst, src, size, bar)
}

// CpAsyncBulkPrefetchL2 emits cp.async.bulk.prefetch.L2.global [src],
// size (PTX 8.0, sm_90): a hint to bring size bytes of global memory from
// src into L2, issued by one thread and carried out by the copy engine
// with no register or barrier of the thread's. size is a multiple of 16,
// src 16-byte aligned.
func (e *Entry) CpAsyncBulkPrefetchL2(src Addr, size Operand) {
	e.Emit("cp", []string{"async", "bulk", "prefetch", "L2", "global"}, src, size)
}

// StAsync emits st.async.shared::cluster.mbarrier::complete_tx::bytes (PTX
// 8.1, sm_90): v (a Reg or a Vec of 2 or 4) of type t stored at addr, in
// the shared memory of a CTA of the cluster (an address from Mapa), and
// its bytes completed on the mbarrier at bar, in that same CTA, once they
// land: the receiver waits on the mbarrier (which expects the bytes,
// arrive.expect_tx) instead of a fence and an arrival from the sender.
func (e *Entry) StAsync(t Type, addr Addr, v Operand, bar Addr) {
	_, vec := memType(v)
	mods := append(append([]string{"async", "shared::cluster", "mbarrier::complete_tx::bytes"}, vec...), t.Name())
	e.Emit("st", mods, addr, v, bar)
}

// RedAsync emits
// red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.op.t
// (PTX 8.1, sm_90): the reduction op of v into the t at addr, in the
// shared memory of a CTA of the cluster (an address from Mapa), as st.async
// stores: it lands later, and completes its bytes (t's size) on the
// mbarrier at bar, in that same CTA. Reductions from several CTAs into one
// word need no ordering among themselves; the receiver waits on the
// mbarrier, which expects their bytes, before it reads the word.
func (e *Entry) RedAsync(op string, t Type, addr Addr, v Operand, bar Addr) {
	e.Emit("red", []string{"async", "relaxed", "cluster", "shared::cluster", "mbarrier::complete_tx::bytes", op, t.Name()}, addr, v, bar)
}

// GridDepWait emits griddepcontrol.wait (PTX 7.8, sm_90): the thread
// waits until the grids this launch depends on programmatically
// (runtime.Kernel.LaunchDependent) have completed and their memory
// operations are visible; at once in a launch without that dependency.
func (e *Entry) GridDepWait() { e.Emit("griddepcontrol", []string{"wait"}) }

// GridDepLaunchDependents emits griddepcontrol.launch_dependents (PTX
// 7.8, sm_90): the grids launched to depend on this one programmatically
// may be scheduled once every CTA of this grid has issued it or exited.
// They still wait (GridDepWait) for this grid's completion before they
// use its memory.
func (e *Entry) GridDepLaunchDependents() { e.Emit("griddepcontrol", []string{"launch_dependents"}) }

// ElectSync emits elect.sync lane|p, mask (PTX 8.0, sm_90): p holds in one
// lane of mask, the same lane for the same mask, and lane (a 32-bit
// register, or Sink{} to drop it) gets that lane's id in every lane.
func (e *Entry) ElectSync(lane Operand, p Pred, mask Operand) {
	e.Emit("elect", []string{"sync"}, lane, p, mask)
}

func narrow(t Type) Type {
	switch t {
	case U64:
		return U32
	case S64:
		return S32
	case B64:
		return B32
	case U32:
		return U16
	case S32:
		return S16
	}
	return TypeInvalid
}

func bitsType(t Type) Type {
	switch t.Bits() {
	case 16:
		return B16
	case 32:
		return B32
	case 64:
		return B64
	}
	return t
}

// Type is the type of special register s.
func (s Special) Type() Type {
	switch s {
	case Clock64, GlobalTimer:
		return U64
	case IsExplicitCluster:
		return TypePred
	case SpecialInvalid:
		return TypeInvalid
	}
	return U32
}
