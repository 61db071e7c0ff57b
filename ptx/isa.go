package ptx

import (
	"fmt"
	"slices"
	"strings"
)

// This file is the ISA table: for an instruction spelled Op+Mods it tells
// what each operand is (read, written, an address, a label) and of which
// type, and what the instruction needs of the target and of the PTX version.
// The builder, the verify pass, the parser and the interpreter all use it, so
// they cannot disagree about an instruction.

// Role says how an instruction uses an operand.
type Role uint8

// The operand roles.
const (
	RoleRead  Role = iota // a value read
	RoleWrite             // a register written
	RoleAddr              // a memory address [..] (read for its base register)
	RoleLabel             // a branch target
)

// ArgSpec describes one operand of an instruction.
type ArgSpec struct {
	Role Role
	T    Type // expected type; TypeInvalid when any type fits
}

// Sig is what the ISA table knows about one instruction.
type Sig struct {
	Args    []ArgSpec
	Type    Type    // the instruction's main type (last type qualifier)
	Space   Space   // for memory instructions
	Vec     int     // 2 or 4 for .v2/.v4 memory instructions, else 0
	Feature Feature // what the target must offer
	PTX     Version // the oldest PTX ISA that has the instruction in this form
}

// Reads lists the registers and predicates inst reads (guard included).
func (in *Inst) Reads() []Operand {
	sig, err := in.Sig()
	if err != nil {
		return nil
	}
	var out []Operand
	if in.Guard != nil {
		out = append(out, *in.Guard)
	}
	for i, a := range in.Args {
		if i >= len(sig.Args) {
			break
		}
		switch sig.Args[i].Role {
		case RoleRead:
			out = appendRegs(out, a)
		case RoleAddr:
			if ad, ok := a.(Addr); ok {
				out = appendRegs(out, ad.Base)
			}
		}
	}
	return out
}

// Writes lists the registers and predicates inst writes.
func (in *Inst) Writes() []Operand {
	sig, err := in.Sig()
	if err != nil {
		return nil
	}
	var out []Operand
	for i, a := range in.Args {
		if i < len(sig.Args) && sig.Args[i].Role == RoleWrite {
			out = appendRegs(out, a)
		}
	}
	return out
}

func appendRegs(out []Operand, a Operand) []Operand {
	switch a := a.(type) {
	case Reg, Pred:
		out = append(out, a)
	case Vec:
		for _, r := range a {
			out = append(out, r)
		}
	}
	return out
}

// Requires reports the target feature and PTX version inst needs.
func (in *Inst) Requires() (Feature, Version) {
	sig, err := in.Sig()
	if err != nil {
		return FeatNone, Version{}
	}
	return sig.Feature, sig.PTX
}

// mods is a cursor over an instruction's qualifiers.
type mods struct {
	list []string
	i    int
}

func (m *mods) peek() string {
	if m.i < len(m.list) {
		return m.list[m.i]
	}
	return ""
}

// take consumes the next qualifier if it is one of opts.
func (m *mods) take(opts ...string) (string, bool) {
	if s := m.peek(); s != "" && slices.Contains(opts, s) {
		m.i++
		return s, true
	}
	return "", false
}

func (m *mods) typ() (Type, error) {
	s := m.peek()
	t, ok := TypeByName(s)
	if !ok {
		return TypeInvalid, fmt.Errorf("expected a type qualifier, found %q", s)
	}
	m.i++
	return t, nil
}

func (m *mods) done() error {
	if m.i < len(m.list) {
		return fmt.Errorf("unexpected qualifier .%s", strings.Join(m.list[m.i:], "."))
	}
	return nil
}

var (
	v10 = Version{1, 0}
	v20 = Version{2, 0}
	v60 = Version{6, 0}
	v62 = Version{6, 2}
	v70 = Version{7, 0}
	v78 = Version{7, 8}
	v80 = Version{8, 0}
	v86 = Version{8, 6}
)

func rw(w Type, rs ...Type) []ArgSpec {
	out := []ArgSpec{{RoleWrite, w}}
	for _, r := range rs {
		out = append(out, ArgSpec{RoleRead, r})
	}
	return out
}

var rounding = []string{"rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi"}

// Sig looks inst up in the ISA table.
func (in *Inst) Sig() (Sig, error) {
	m := &mods{list: in.Mods}
	sig, err := lookup(in.Op, m, len(in.Args))
	if err == nil {
		err = m.done()
	}
	if err == nil && len(in.Args) != len(sig.Args) {
		err = fmt.Errorf("%s takes %d operands, has %d", in.Op, len(sig.Args), len(in.Args))
	}
	if sig.PTX == (Version{}) {
		sig.PTX = v10
	}
	return sig, err
}

func lookup(op string, m *mods, nargs int) (Sig, error) {
	var s Sig
	var err error
	switch op {
	case "mov":
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type)
	case "add", "sub":
		m.take("rn", "rz", "rm", "rp")
		m.take("sat")
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type, s.Type)
	case "min", "max":
		if _, ok := m.take("NaN"); ok {
			s.Feature, s.PTX = FeatMinMaxNaN, v70
		}
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type, s.Type)
	case "mul", "mad":
		mode, _ := m.take("lo", "hi", "wide", "rn", "rz", "rm", "rp")
		s.Type, err = m.typ()
		d := s.Type
		if mode == "wide" {
			d = widen(s.Type)
		}
		if op == "mul" {
			s.Args = rw(d, s.Type, s.Type)
		} else {
			s.Args = rw(d, s.Type, s.Type, d)
		}
		if err == nil && s.Type.IsInt() && mode == "" {
			err = fmt.Errorf("integer %s needs .lo, .hi or .wide", op)
		}
	case "fma":
		if _, ok := m.take("rn", "rz", "rm", "rp"); !ok {
			return s, fmt.Errorf("fma needs a rounding qualifier")
		}
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type, s.Type, s.Type)
	case "div":
		m.take("rn", "rz", "rm", "rp", "approx", "full")
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type, s.Type)
	case "rem":
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type, s.Type)
	case "abs", "neg":
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type)
	case "not":
		s.Type, err = bitsOrPred(m)
		s.Args = rw(s.Type, s.Type)
	case "lg2", "ex2":
		if _, ok := m.take("approx"); !ok {
			return s, fmt.Errorf("%s needs .approx", op)
		}
		m.take("ftz")
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type)
	case "rcp", "sqrt":
		m.take("rn", "rz", "rm", "rp", "approx")
		m.take("ftz")
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type)
	case "and", "or", "xor":
		s.Type, err = bitsOrPred(m)
		s.Args = rw(s.Type, s.Type, s.Type)
	case "shl":
		s.Type, err = bits(m)
		s.Args = rw(s.Type, s.Type, U32)
	case "shr":
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type, U32)
	case "popc", "clz":
		s.Type, err = bits(m)
		s.Args, s.PTX = rw(U32, s.Type), v20
	case "brev":
		s.Type, err = bits(m)
		s.Args, s.PTX = rw(s.Type, s.Type), v20
	case "bfind":
		m.take("shiftamt")
		s.Type, err = m.typ()
		s.Args, s.PTX = rw(U32, s.Type), v20
	case "cvt":
		m.take(rounding...)
		m.take("ftz")
		m.take("sat")
		var src Type
		s.Type, err = m.typ()
		if err == nil {
			src, err = m.typ()
		}
		s.Args = rw(s.Type, src)
	case "cvta":
		m.take("to")
		sp, ok := m.take("global", "shared", "local", "param")
		if !ok {
			return s, fmt.Errorf("cvta needs a state space")
		}
		s.Space = spaceByName(sp)
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type)
	case "setp":
		if _, ok := m.take("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
			"equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"); !ok {
			return s, fmt.Errorf("setp needs a comparison")
		}
		s.Type, err = m.typ()
		s.Args = rw(TypePred, s.Type, s.Type)
	case "selp":
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type, s.Type, TypePred)
	case "ld", "st":
		return memSig(op, m)
	case "atom", "red":
		return atomSig(op, m)
	case "bar":
		if _, ok := m.take("warp"); ok {
			if _, ok := m.take("sync"); !ok {
				return s, fmt.Errorf("bar.warp needs .sync")
			}
			s.Args, s.PTX = []ArgSpec{{RoleRead, U32}}, v60
			return s, nil
		}
		if _, ok := m.take("sync"); !ok {
			return s, fmt.Errorf("bar needs .sync")
		}
		s.Args = barrierArgs(nargs)
	case "shfl":
		if _, ok := m.take("sync"); !ok {
			return s, fmt.Errorf("shfl needs .sync")
		}
		if _, ok := m.take("up", "down", "bfly", "idx"); !ok {
			return s, fmt.Errorf("shfl.sync needs a mode")
		}
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type, U32, U32, U32)
		s.Feature, s.PTX = FeatVote, v60
	case "vote":
		if _, ok := m.take("sync"); !ok {
			return s, fmt.Errorf("vote needs .sync")
		}
		mode, ok := m.take("all", "any", "uni", "ballot")
		if !ok {
			return s, fmt.Errorf("vote.sync needs a mode")
		}
		s.Type, err = m.typ()
		if mode == "ballot" {
			s.Args = rw(B32, TypePred, U32)
		} else {
			s.Args = rw(TypePred, TypePred, U32)
		}
		s.Feature, s.PTX = FeatVote, v60
	case "redux":
		if _, ok := m.take("sync"); !ok {
			return s, fmt.Errorf("redux needs .sync")
		}
		if _, ok := m.take("add", "min", "max", "and", "or", "xor"); !ok {
			return s, fmt.Errorf("redux.sync needs an operation")
		}
		_, abs := m.take("abs")
		_, nan := m.take("NaN")
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type, U32)
		s.Feature, s.PTX = FeatReduxInt, v70
		if s.Type == F32 || abs || nan {
			s.Feature, s.PTX = FeatReduxF32, v86
		}
	case "match":
		if _, ok := m.take("any"); !ok {
			return s, fmt.Errorf("match needs .any (match.all is not supported)")
		}
		if _, ok := m.take("sync"); !ok {
			return s, fmt.Errorf("match.any needs .sync")
		}
		s.Type, err = bits(m)
		s.Args, s.Feature, s.PTX = rw(B32, s.Type, U32), FeatMatch, v60
	case "activemask":
		s.Type, err = m.typ()
		s.Args, s.Feature, s.PTX = rw(B32), FeatVote, v62
	case "bra":
		m.take("uni")
		s.Args = []ArgSpec{{RoleLabel, TypeInvalid}}
	case "ret", "exit":
		m.take("uni")
	case "membar":
		if _, ok := m.take("cta", "gl", "sys"); !ok {
			return s, fmt.Errorf("membar needs a level")
		}
	case "fence":
		if _, ok := m.take("sc", "acq_rel"); !ok {
			return s, fmt.Errorf("fence needs .sc or .acq_rel")
		}
		scope, ok := m.take("cta", "cluster", "gpu", "sys")
		if !ok {
			return s, fmt.Errorf("fence needs a scope")
		}
		s.PTX = v60
		if scope == "cluster" {
			s.Feature, s.PTX = FeatCluster, v78
		}
	case "mapa":
		m.take("shared::cluster")
		s.Type, err = m.typ()
		s.Args = rw(s.Type, s.Type, U32)
		s.Feature, s.PTX = FeatCluster, v78
	case "barrier":
		if _, ok := m.take("cluster"); ok {
			half, ok := m.take("arrive", "wait")
			if !ok {
				return s, fmt.Errorf("barrier.cluster needs .arrive or .wait")
			}
			s.Feature, s.PTX = FeatCluster, v78
			// arrive{.release|.relaxed}, wait{.acquire}: the orderings need PTX 8.0.
			sems := []string{"release", "relaxed"}
			if half == "wait" {
				sems = []string{"acquire"}
			}
			if _, ok := m.take(sems...); ok {
				s.PTX = v80
			}
			m.take("aligned")
			return s, nil
		}
		if _, ok := m.take("sync"); !ok {
			return s, fmt.Errorf("barrier needs .sync or .cluster")
		}
		m.take("aligned")
		s.Args, s.PTX = barrierArgs(nargs), v60
	default:
		return s, fmt.Errorf("unknown instruction %q", op)
	}
	return s, err
}

// bits reads a .bN type qualifier: logical instructions are typed by width.
func bits(m *mods) (Type, error) {
	t, err := m.typ()
	if err == nil && t.Kind() != KindBits {
		err = fmt.Errorf("needs a .bN type, not .%s", t.Name())
	}
	return t, err
}

// bitsOrPred is bits, or .pred.
func bitsOrPred(m *mods) (Type, error) {
	if _, ok := m.take("pred"); ok {
		return TypePred, nil
	}
	return bits(m)
}

// barrierArgs: a barrier takes its id and, optionally, a thread count.
func barrierArgs(nargs int) []ArgSpec {
	if nargs == 2 {
		return []ArgSpec{{RoleRead, U32}, {RoleRead, U32}}
	}
	return []ArgSpec{{RoleRead, U32}}
}

func widen(t Type) Type {
	switch t {
	case U16:
		return U32
	case U32:
		return U64
	case S16:
		return S32
	case S32:
		return S64
	case B16:
		return B32
	case B32:
		return B64
	}
	return TypeInvalid
}

func spaceByName(name string) Space {
	for s, n := range spaceNames {
		if n == name && Space(s) != SpaceReg {
			return Space(s)
		}
	}
	return SpaceNone
}

// memSig: ld{.space}{.nc}{.vN}.T d, [a] and st{.space}{.vN}.T [a], b.
func memSig(op string, m *mods) (Sig, error) {
	var s Sig
	if sp, ok := m.take("global", "shared", "shared::cluster", "param", "local", "const"); ok {
		s.Space = spaceByName(sp)
	}
	if s.Space == SpaceSharedCluster {
		s.Feature, s.PTX = FeatSharedCluster, v78
	}
	if op == "ld" {
		if _, ok := m.take("nc"); ok && s.Space != SpaceGlobal {
			return s, fmt.Errorf("ld.nc needs the .global space")
		}
	}
	if v, ok := m.take("v2", "v4"); ok {
		s.Vec = int(v[1] - '0')
	}
	var err error
	s.Type, err = m.typ()
	if op == "ld" {
		s.Args = []ArgSpec{{RoleWrite, s.Type}, {RoleAddr, TypeInvalid}}
	} else {
		s.Args = []ArgSpec{{RoleAddr, TypeInvalid}, {RoleRead, s.Type}}
	}
	return s, err
}

// atomSig: atom{.space}.op.T d, [a], b{, c} and red{.space}.op.T [a], b.
func atomSig(op string, m *mods) (Sig, error) {
	var s Sig
	if sp, ok := m.take("global", "shared", "shared::cluster"); ok {
		s.Space = spaceByName(sp)
	}
	if s.Space == SpaceSharedCluster {
		s.Feature, s.PTX = FeatSharedCluster, v78
	}
	aop, ok := m.take("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")
	if !ok {
		return s, fmt.Errorf("%s needs an operation", op)
	}
	var err error
	s.Type, err = m.typ()
	t := s.Type
	switch {
	case op == "red":
		s.Args = []ArgSpec{{RoleAddr, TypeInvalid}, {RoleRead, t}}
	case aop == "cas":
		s.Args = []ArgSpec{{RoleWrite, t}, {RoleAddr, TypeInvalid}, {RoleRead, t}, {RoleRead, t}}
	default:
		s.Args = []ArgSpec{{RoleWrite, t}, {RoleAddr, TypeInvalid}, {RoleRead, t}}
	}
	return s, err
}
