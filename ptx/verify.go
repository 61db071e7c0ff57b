package ptx

import (
	"fmt"
	"regexp"
	"strings"
)

// Verify checks a module: instruction forms and operand types against the ISA
// table, registers used but never defined, unknown or duplicate labels and
// names, entry directives, and every instruction or directive the target
// lacks. Each error names the generator position, the entry and the
// instruction. Module.Build runs it.
func Verify(m *Module) []error {
	v := &verifier{m: m}
	if m.Target.Name == "" {
		v.errorf("", nil, "module has no target")
	}
	names := map[string]bool{}
	for _, x := range m.Vars {
		v.checkName(x.Name, "variable", names)
		if x.Align <= 0 || x.Align&(x.Align-1) != 0 {
			v.errorf("", nil, "variable %s: alignment %d is not a power of two", x.Name, x.Align)
		}
	}
	for _, e := range m.Entries {
		v.checkName(e.Name, "entry", names)
		v.entry(e)
	}
	return v.errs
}

type verifier struct {
	m    *Module
	e    *Entry
	errs []error
}

var identRE = regexp.MustCompile(`^[a-zA-Z_$][a-zA-Z0-9_$]*$`)

func (v *verifier) checkName(name, what string, seen map[string]bool) {
	switch {
	case !identRE.MatchString(name):
		v.errorf("", nil, "%s name %q is not a PTX identifier", what, name)
	case seen[name]:
		v.errorf("", nil, "duplicate %s name %q", what, name)
	}
	seen[name] = true
}

func (v *verifier) errorf(pos string, in *Inst, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if in != nil {
		msg = fmt.Sprintf("`%s`: %s", strings.Replace(formatInst(in), " \t", " ", 1), msg)
		pos = in.Pos
	}
	if v.e != nil {
		msg = fmt.Sprintf("entry %s: %s", v.e.Name, msg)
	}
	if pos != "" {
		msg = pos + ": " + msg
	}
	v.errs = append(v.errs, fmt.Errorf("%s", msg))
}

func (v *verifier) entry(e *Entry) {
	v.e = e
	defer func() { v.e = nil }()
	t := v.m.Target
	if e.MaxNTID.set() && e.ReqNTID.set() {
		v.errorf("", nil, ".maxntid and .reqntid exclude each other")
	}
	if e.MinNCTAPerSM != 0 && !e.MaxNTID.set() && !e.ReqNTID.set() {
		v.errorf("", nil, ".minnctapersm needs .maxntid or .reqntid")
	}
	for _, d := range e.clusterDirectives() {
		if !t.Has(FeatCluster) {
			v.errorf("", nil, "%s needs %v; target %s lacks it", d, FeatCluster, t.Name)
		}
	}
	params := map[string]bool{}
	for _, p := range e.Params {
		v.checkName(p.Name, "parameter", params)
		for _, x := range v.m.Vars {
			if x.Name == p.Name { // the text would name the parameter, not the variable
				v.errorf("", nil, "parameter %s has the name of a module variable", p.Name)
			}
		}
	}

	// Labels, and which registers are written anywhere.
	labels := map[string]bool{}
	written := map[[2]int]bool{}
	for _, s := range e.Body {
		switch s := s.(type) {
		case LabelStmt:
			if labels[s.Label.Name] {
				v.errorf("", nil, "label %s placed twice", s.Label.Name)
			}
			labels[s.Label.Name] = true
		case *Inst:
			for _, w := range s.Writes() {
				written[regKey(w)] = true
			}
		}
	}

	for _, s := range e.Body {
		in, ok := s.(*Inst)
		if !ok {
			continue
		}
		sig, err := in.Sig()
		if err != nil {
			v.errorf("", in, "%v", err)
			continue
		}
		if !t.Has(sig.Feature) {
			v.errorf("", in, "needs %v; target %s lacks it", sig.Feature, t.Name)
		}
		if in.Guard != nil {
			v.reg(in, *in.Guard, written)
		}
		for i, a := range in.Args {
			v.arg(in, sig, sig.Args[i], a, labels, written)
		}
	}
}

func regKey(o Operand) [2]int {
	switch o := o.(type) {
	case Reg:
		return [2]int{int(classOf(o.T)), o.N}
	case Pred:
		return [2]int{int(classPred), o.N}
	}
	return [2]int{-1, -1}
}

// reg checks that a register belongs to this entry and, when read, is
// written somewhere.
func (v *verifier) reg(in *Inst, o Operand, written map[[2]int]bool) {
	var id uint32
	var n int
	var c regClass
	switch o := o.(type) {
	case Reg:
		id, n, c = o.entry, o.N, classOf(o.T)
		if o.T == TypeInvalid {
			v.errorf("", in, "zero Reg (not allocated with Entry.Reg)")
			return
		}
	case Pred:
		id, n, c = o.entry, o.N, classPred
	}
	switch {
	case id != v.e.id || n >= v.e.nregs[c]:
		v.errorf("", in, "register %s is not defined in this entry", describe(o))
	case written != nil && !written[regKey(o)]:
		v.errorf("", in, "register %s is read but never written", describe(o))
	}
}

func describe(o Operand) string {
	switch o := o.(type) {
	case Reg:
		return fmt.Sprintf("%s (%v #%d)", formatOperand(o), o.T, o.N)
	case Pred:
		return formatOperand(o)
	}
	return fmt.Sprintf("%T", o)
}

func (v *verifier) arg(in *Inst, sig Sig, spec ArgSpec, a Operand, labels map[string]bool, written map[[2]int]bool) {
	want := spec.T
	switch spec.Role {
	case RoleLabel:
		l, ok := a.(Label)
		if !ok {
			v.errorf("", in, "branch target is %T, not a Label", a)
		} else if !labels[l.Name] {
			v.errorf("", in, "unknown label %s", l.Name)
		}
		return
	case RoleAddr:
		v.addr(in, sig, spec, a, written)
		return
	case RoleSink:
		if _, ok := a.(Sink); !ok {
			v.errorf("", in, "operand %s must be the sink _ here", formatOperand(a))
		}
		return
	}
	switch a := a.(type) {
	case Sink:
		if spec.Role != RoleWriteOrSink {
			v.errorf("", in, "the sink _ is not allowed here")
		}
	case Reg:
		if spec.Role == RoleRead {
			v.reg(in, a, written)
		} else {
			v.reg(in, a, nil)
		}
		if !compatible(want, a.T) {
			v.errorf("", in, "operand %s has type %v, instruction wants %v", formatOperand(a), a.T, want)
		}
	case Pred:
		if want != TypePred {
			v.errorf("", in, "predicate %s where %v is wanted", formatOperand(a), want)
		}
		if spec.Role == RoleRead {
			v.reg(in, a, written)
		} else {
			v.reg(in, a, nil)
		}
		if a.Neg && (spec.Role != RoleRead || in.Op != "vote") {
			v.errorf("", in, "negated predicate %s is allowed only as a guard or a vote source", formatOperand(a))
		}
	case Vec:
		if spec.Role == RoleRead && sig.Vec == 0 || len(a) != sig.Vec {
			v.errorf("", in, "vector of %d where the instruction takes .v%d", len(a), sig.Vec)
		}
		for _, r := range a {
			v.arg(in, Sig{}, spec, r, labels, written)
		}
		return
	case Imm:
		if spec.Role != RoleRead {
			v.errorf("", in, "cannot write an immediate")
		} else if !want.IsInt() {
			v.errorf("", in, "integer immediate %d where %v is wanted (use ptx.Float for floats)", int64(a), want)
		}
	case FloatImm:
		if spec.Role != RoleRead {
			v.errorf("", in, "cannot write an immediate")
		} else if a.T != want && !(want.Kind() == KindBits && want.Bits() == a.T.Bits()) {
			v.errorf("", in, "%v immediate where %v is wanted", a.T, want)
		}
	case Special:
		if in.Op != "mov" || spec.Role != RoleRead {
			v.errorf("", in, "special register %s can only be read by mov", formatOperand(a))
		} else if !compatible(want, a.Type()) {
			v.errorf("", in, "special register %s is %v, instruction wants %v", formatOperand(a), a.Type(), want)
		} else if f, _ := a.Requires(); !v.m.Target.Has(f) {
			v.errorf("", in, "special register %s needs %v; target %s lacks it", formatOperand(a), f, v.m.Target.Name)
		}
	case *Var, *Param:
		// mapa.shared::cluster maps a shared variable's address itself.
		mapa := in.Op == "mapa" && sig.Space == SpaceSharedCluster && len(in.Args) == 3 && in.Args[1] == a
		if x, ok := a.(*Var); mapa && (!ok || x.Space != SpaceShared) {
			v.errorf("", in, "mapa.shared::cluster maps a .shared variable, not %s", formatOperand(a))
		} else if !mapa && (in.Op != "mov" || spec.Role != RoleRead || (want.Bits() != 32 && want.Bits() != 64) || want.IsFloat()) {
			v.errorf("", in, "a symbol's address can only be taken by mov into a 32- or 64-bit integer")
		}
	default:
		v.errorf("", in, "operand of kind %T not allowed here", a)
	}
}

func (v *verifier) addr(in *Inst, sig Sig, spec ArgSpec, a Operand, written map[[2]int]bool) {
	ad, ok := a.(Addr)
	if !ok {
		v.errorf("", in, "memory operand is %T, not an Addr", a)
		return
	}
	sp := spec.Space
	if sp == SpaceNone {
		sp = sig.Space
	}
	switch b := ad.Base.(type) {
	case Reg:
		v.reg(in, b, written)
		if sp == SpaceParam {
			v.errorf("", in, "ld.param takes a parameter, not a register address")
		}
		if b.T.Bits() != 64 && !(b.T.Bits() == 32 && sp.isShared()) {
			v.errorf("", in, "address register %s is %v: 64 bits needed (32 allowed for shared)", formatOperand(b), b.T)
		}
	case *Param:
		if sp != SpaceParam {
			v.errorf("", in, "parameter %s addressed outside the .param space", b.Name)
		}
		if !v.hasParam(b) {
			v.errorf("", in, "parameter %s does not belong to this entry", b.Name)
		}
	case *Var:
		if !sp.holds(b.Space) {
			v.errorf("", in, "variable %s is in .%s, instruction accesses .%s", b.Name, b.Space, sp)
		}
	default:
		v.errorf("", in, "address base of kind %T", ad.Base)
	}
}

func (v *verifier) hasParam(p *Param) bool {
	for _, q := range v.e.Params {
		if q == p {
			return true
		}
	}
	return false
}
