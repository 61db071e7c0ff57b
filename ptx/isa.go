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
	RoleRead        Role = iota // a value read
	RoleWrite                   // a register written
	RoleAddr                    // a memory address [..] (read for its base register)
	RoleLabel                   // a branch target
	RoleSink                    // the sink _: a result the instruction cannot return here
	RoleWriteOrSink             // a register written, or the sink _ to drop the result
)

// ArgSpec describes one operand of an instruction.
type ArgSpec struct {
	Role Role
	T    Type // expected type; TypeInvalid when any type fits
	// Space is the state space a RoleAddr operand addresses when it is not
	// the instruction's (Sig.Space): cp.async.bulk reads .global and
	// writes .shared::cluster.
	Space Space
}

// Sig is what the ISA table knows about one instruction.
type Sig struct {
	Args    []ArgSpec
	Type    Type    // the instruction's main type (last type qualifier)
	Space   Space   // for memory instructions
	Vec     int     // 2 or 4 for .v2/.v4 memory instructions, else 0
	Feature Feature // what the target must offer
	PTX     Version // the oldest PTX ISA that has the instruction in this form
	// Pair: the first two operands are one, written d|p (elect.sync).
	Pair bool
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
		if i < len(sig.Args) && (sig.Args[i].Role == RoleWrite || sig.Args[i].Role == RoleWriteOrSink) {
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

// Requires reports the target feature and PTX version inst needs: its
// own, or those of a special register it reads.
func (in *Inst) Requires() (Feature, Version) {
	sig, err := in.Sig()
	if err != nil {
		return FeatNone, Version{}
	}
	f, v := sig.Feature, sig.PTX
	for _, a := range in.Args {
		if s, ok := a.(Special); ok {
			if sf, sv := s.Requires(); sf != FeatNone {
				f, v = sf, maxVersion(v, sv)
			}
		}
	}
	return f, v
}

// Requires reports the target feature and PTX version special register s
// needs: the cluster registers are PTX 7.8, sm_90.
func (s Special) Requires() (Feature, Version) {
	if s >= ClusterCtaRank && s <= IsExplicitCluster {
		return FeatCluster, v78
	}
	return FeatNone, v10
}

// clusterDirectives lists the directives of e that need clusters (PTX 7.8,
// sm_90), in the order the printer writes them.
func (e *Entry) clusterDirectives() []string {
	var out []string
	if e.ExplicitCluster {
		out = append(out, ".explicitcluster")
	}
	if e.ReqNCTAPerCluster.set() {
		out = append(out, ".reqnctapercluster")
	}
	return out
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
	v71 = Version{7, 1}
	v78 = Version{7, 8}
	v80 = Version{8, 0}
	v81 = Version{8, 1}
	v86 = Version{8, 6}
)

func rw(w Type, rs ...Type) []ArgSpec {
	out := []ArgSpec{{Role: RoleWrite, T: w}}
	for _, r := range rs {
		out = append(out, ArgSpec{Role: RoleRead, T: r})
	}
	return out
}

// read is a read operand of type t.
func read(t Type) ArgSpec { return ArgSpec{Role: RoleRead, T: t} }

// addrIn is a memory operand in space sp (SpaceNone: the instruction's).
func addrIn(sp Space) ArgSpec { return ArgSpec{Role: RoleAddr, Space: sp} }

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
			s.Args, s.PTX = []ArgSpec{read(U32)}, v60
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
		s.Args = []ArgSpec{{Role: RoleLabel}}
	case "ret", "exit":
		m.take("uni")
	case "membar":
		if _, ok := m.take("cta", "gl", "sys"); !ok {
			return s, fmt.Errorf("membar needs a level")
		}
	case "prefetch":
		// prefetch{.global}.L1|L2 [a] (PTX 2.0): a hint, never a fault.
		s.Space = SpaceNone
		if sp, ok := m.take("global", "local"); ok {
			s.Space = spaceByName(sp)
		}
		if _, ok := m.take("L1", "L2"); !ok {
			return s, fmt.Errorf("prefetch needs a level, .L1 or .L2")
		}
		s.Args, s.PTX = []ArgSpec{addrIn(SpaceNone)}, v20
	case "fence":
		if _, ok := m.take("mbarrier_init"); ok {
			// fence.mbarrier_init.release.cluster: the one form PTX has.
			if _, ok := m.take("release"); !ok {
				return s, fmt.Errorf("fence.mbarrier_init needs .release")
			}
			if _, ok := m.take("cluster"); !ok {
				return s, fmt.Errorf("fence.mbarrier_init.release needs .cluster")
			}
			s.Feature, s.PTX = FeatCluster, v80
			return s, nil
		}
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
		// mapa{.shared::cluster}.{u32,u64} d, a, rank: a is a register or,
		// with .shared::cluster, a shared variable.
		if _, ok := m.take("shared::cluster"); ok {
			s.Space = SpaceSharedCluster
		}
		s.Type, err = m.typ()
		if err == nil && s.Type != U32 && s.Type != U64 {
			err = fmt.Errorf("mapa needs .u32 or .u64, not .%s", s.Type.Name())
		}
		s.Args = rw(s.Type, s.Type, U32)
		s.Feature, s.PTX = FeatCluster, v78
	case "mbarrier":
		return mbarrierSig(m, nargs)
	case "cp":
		return cpSig(m)
	case "griddepcontrol":
		// griddepcontrol.wait: until the grids this launch depends on
		// (programmatic dependent launch) have completed and their
		// memory is visible; griddepcontrol.launch_dependents: the grids
		// that depend on this one may be scheduled. Without such a
		// launch, neither does anything.
		if _, ok := m.take("wait", "launch_dependents"); !ok {
			return s, fmt.Errorf("griddepcontrol needs .wait or .launch_dependents")
		}
		s.Feature, s.PTX = FeatGridDep, v78
	case "elect":
		// elect.sync d|p, membermask: p holds in one lane of membermask, d
		// (or the sink) gets that lane's id.
		if _, ok := m.take("sync"); !ok {
			return s, fmt.Errorf("elect needs .sync")
		}
		s.Args = []ArgSpec{{Role: RoleWriteOrSink, T: B32}, {Role: RoleWrite, T: TypePred}, read(U32)}
		s.Pair, s.Feature, s.PTX = true, FeatElect, v80
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
		return []ArgSpec{read(U32), read(U32)}
	}
	return []ArgSpec{read(U32)}
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
	if _, ok := m.take("async"); ok && op == "st" {
		return stAsyncSig(m)
	} else if ok {
		return s, fmt.Errorf("ld has no .async form")
	}
	// A strong access: ld{.relaxed,.acquire}.scope, st{.relaxed,.release}.scope.
	strong, clusterScope := false, false
	sems := []string{"relaxed", "acquire"}
	if op == "st" {
		sems = []string{"relaxed", "release"}
	}
	if sem, ok := m.take(sems...); ok {
		scope, ok := m.take("cta", "cluster", "gpu", "sys")
		if !ok {
			return s, fmt.Errorf("%s.%s needs a scope (.cta, .cluster, .gpu or .sys)", op, sem)
		}
		strong = true
		clusterScope = scope == "cluster"
	}
	if sp, ok := m.take("global", "shared", "shared::cta", "shared::cluster", "param", "local", "const"); ok {
		s.Space = spaceByName(sp)
	}
	s.Feature, s.PTX = sharedSpaceNeeds(s.Space)
	if strong {
		s.needs(FeatNone, v60)
	}
	if clusterScope {
		s.needs(FeatCluster, v78)
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
		s.Args = []ArgSpec{{Role: RoleWrite, T: s.Type}, addrIn(SpaceNone)}
	} else {
		s.Args = []ArgSpec{addrIn(SpaceNone), read(s.Type)}
	}
	return s, err
}

// stAsyncSig reads st.async, a store into another CTA's shared memory
// that completes its bytes on an mbarrier of that CTA:
//
//	st.async.shared::cluster.mbarrier::complete_tx::bytes{.v2,.v4}.T [a], b, [bar]
//
// (PTX 8.1, sm_90; T 32 or 64 bits wide, .v4 only for 32-bit T).
func stAsyncSig(m *mods) (Sig, error) {
	var s Sig
	if _, ok := m.take("shared::cluster"); !ok {
		return s, fmt.Errorf("st.async needs the .shared::cluster space")
	}
	if _, ok := m.take("mbarrier::complete_tx::bytes"); !ok {
		return s, fmt.Errorf("st.async needs .mbarrier::complete_tx::bytes")
	}
	if v, ok := m.take("v2", "v4"); ok {
		s.Vec = int(v[1] - '0')
	}
	var err error
	if s.Type, err = m.typ(); err != nil {
		return s, err
	}
	if b := s.Type.Bits(); b != 32 && b != 64 || s.Vec == 4 && b != 32 {
		return s, fmt.Errorf("st.async stores 32- or 64-bit values (.v4 only 32-bit), not .%s", s.Type.Name())
	}
	s.Space, s.Feature, s.PTX = SpaceSharedCluster, FeatSharedCluster, v81
	s.Args = []ArgSpec{addrIn(SpaceNone), read(s.Type), addrIn(SpaceSharedCluster)}
	return s, nil
}

// redAsyncSig reads red.async, a reduction into another CTA's shared
// memory that completes its bytes on an mbarrier of that CTA:
//
//	red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.op.T [a], b, [bar]
//
// (PTX 8.1, sm_90): .inc, .dec .u32; .min, .max .u32, .s32; .and, .or,
// .xor .b32; .add .u32, .s32, .u64.
func redAsyncSig(m *mods) (Sig, error) {
	var s Sig
	for _, q := range []string{"relaxed", "cluster", "shared::cluster", "mbarrier::complete_tx::bytes"} {
		if _, ok := m.take(q); !ok {
			return s, fmt.Errorf("red.async needs .%s", q)
		}
	}
	op, ok := m.take("add", "min", "max", "inc", "dec", "and", "or", "xor")
	if !ok {
		return s, fmt.Errorf("red.async needs an operation (add, min, max, inc, dec, and, or, xor)")
	}
	var err error
	if s.Type, err = m.typ(); err != nil {
		return s, err
	}
	types := map[string][]Type{
		"inc": {U32}, "dec": {U32}, "min": {U32, S32}, "max": {U32, S32},
		"and": {B32}, "or": {B32}, "xor": {B32}, "add": {U32, S32, U64},
	}[op]
	if !slices.Contains(types, s.Type) {
		names := make([]string, len(types))
		for i, t := range types {
			names[i] = "." + t.Name()
		}
		return s, fmt.Errorf("red.async.%s takes %s, not .%s", op, strings.Join(names, " or "), s.Type.Name())
	}
	s.Space, s.Feature, s.PTX = SpaceSharedCluster, FeatSharedCluster, v81
	s.Args = []ArgSpec{addrIn(SpaceNone), read(s.Type), addrIn(SpaceSharedCluster)}
	return s, nil
}

// sharedSpaceNeeds is what the sub-qualified shared spaces need: ::cta and
// ::cluster are PTX 7.8, and .shared::cluster needs sm_90.
func sharedSpaceNeeds(sp Space) (Feature, Version) {
	switch sp {
	case SpaceSharedCTA:
		return FeatNone, v78
	case SpaceSharedCluster:
		return FeatSharedCluster, v78
	}
	return FeatNone, Version{}
}

// atomSig: atom{.space}.op.T d, [a], b{, c} and red{.space}.op.T [a], b.
func atomSig(op string, m *mods) (Sig, error) {
	var s Sig
	if _, ok := m.take("async"); ok && op == "red" {
		return redAsyncSig(m)
	} else if ok {
		return s, fmt.Errorf("atom has no .async form")
	}
	if sp, ok := m.take("global", "shared", "shared::cta", "shared::cluster"); ok {
		s.Space = spaceByName(sp)
	}
	s.Feature, s.PTX = sharedSpaceNeeds(s.Space)
	aop, ok := m.take("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")
	if !ok {
		return s, fmt.Errorf("%s needs an operation", op)
	}
	var err error
	s.Type, err = m.typ()
	t := s.Type
	if bitwise := aop == "and" || aop == "or" || aop == "xor" || aop == "exch" || aop == "cas"; bitwise && err == nil && t.Kind() != KindBits {
		return s, fmt.Errorf("%s.%s needs a bit type (.b32 or .b64), not .%s", op, aop, t.Name())
	}
	switch {
	case op == "red":
		s.Args = []ArgSpec{addrIn(SpaceNone), read(t)}
	case aop == "cas":
		s.Args = []ArgSpec{{Role: RoleWrite, T: t}, addrIn(SpaceNone), read(t), read(t)}
	default:
		s.Args = []ArgSpec{{Role: RoleWrite, T: t}, addrIn(SpaceNone), read(t)}
	}
	return s, err
}

// needs raises what s needs to at least PTX v, and to feature f when f is
// not FeatNone (the features an instruction's forms need only grow: a
// later one includes the earlier).
func (s *Sig) needs(f Feature, v Version) {
	if f != FeatNone {
		s.Feature = f
	}
	s.PTX = maxVersion(s.PTX, v)
}

// mbarrierSig reads the mbarrier instructions. The barrier is a .b64 object
// in shared memory, addressed in .shared, .shared::cta, generic space, or
// (for an arrive on another CTA's barrier) .shared::cluster:
//
//	mbarrier.init{.space}.b64 [bar], count
//	mbarrier.inval{.space}.b64 [bar]
//	mbarrier.arrive{.expect_tx}{.sem}{.scope}{.space}.b64 state|_, [bar]{, count|tx}
//	mbarrier.{try_wait,test_wait}{.parity}{.sem}{.scope}{.space}.b64 p, [bar], state|parity{, hint}
//
// The base forms are PTX 7.0 on sm_80; try_wait, expect_tx, an arrive
// count, .sem/.scope and .shared::cluster need sm_90.
func mbarrierSig(m *mods, nargs int) (Sig, error) {
	var s Sig
	op, ok := m.take("init", "inval", "arrive", "try_wait", "test_wait")
	if !ok {
		return s, fmt.Errorf("mbarrier needs an operation (init, inval, arrive, try_wait, test_wait)")
	}
	s.needs(FeatMbarrier, v70)
	var expectTx, parity bool
	switch op {
	case "arrive":
		if _, expectTx = m.take("expect_tx"); expectTx {
			s.needs(FeatMbarrierTx, v80)
		}
	case "try_wait", "test_wait":
		_, parity = m.take("parity")
		if parity {
			s.needs(FeatNone, v71)
		}
		if op == "try_wait" {
			s.needs(FeatMbarrierTx, v78)
		}
	}
	if op != "init" && op != "inval" {
		sems := []string{"acquire", "relaxed"}
		if op == "arrive" {
			sems = []string{"release", "relaxed"}
		}
		if sem, ok := m.take(sems...); ok {
			s.needs(FeatMbarrierTx, v80)
			if sem == "relaxed" {
				s.needs(FeatMbarrierTx, v86)
			}
		}
		if _, ok := m.take("cta", "cluster"); ok {
			s.needs(FeatMbarrierTx, v80)
		}
	}
	spaces := []string{"shared", "shared::cta"}
	if op == "arrive" {
		spaces = append(spaces, "shared::cluster")
	}
	if sp, ok := m.take(spaces...); ok {
		s.Space = spaceByName(sp)
	}
	switch s.Space {
	case SpaceSharedCTA:
		s.needs(FeatNone, v78)
	case SpaceSharedCluster:
		s.needs(FeatCluster, v80)
	}
	if _, ok := m.take("b64"); !ok {
		if m.peek() != "" {
			return s, m.done() // a qualifier out of place, or one this form lacks
		}
		return s, fmt.Errorf("mbarrier.%s needs .b64", op)
	}
	s.Type = B64
	bar := addrIn(SpaceNone)
	switch op {
	case "init":
		s.Args = []ArgSpec{bar, read(U32)}
	case "inval":
		s.Args = []ArgSpec{bar}
	case "arrive":
		state := ArgSpec{Role: RoleWrite, T: B64}
		if s.Space == SpaceSharedCluster { // another CTA's barrier: no state comes back
			state = ArgSpec{Role: RoleSink}
		}
		s.Args = []ArgSpec{state, bar}
		switch {
		case expectTx:
			s.Args = append(s.Args, read(U32))
		case nargs == 3:
			s.Args = append(s.Args, read(U32))
			s.needs(FeatMbarrierTx, v78) // an arrive count needs sm_90
		}
	default: // try_wait, test_wait
		last := read(B64) // the state an arrive returned
		if parity {
			last = read(U32)
		}
		s.Args = []ArgSpec{{Role: RoleWrite, T: TypePred}, bar, last}
		if op == "try_wait" && nargs == 4 {
			s.Args = append(s.Args, read(U32)) // suspend-time hint, ns
		}
	}
	return s, nil
}

// cpSig reads cp.async.bulk from global memory into shared memory, with an
// mbarrier counting the bytes:
//
//	cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size, [bar]
//
// (PTX 8.0, sm_90; a .shared::cta destination needs PTX 8.6). The other
// cp.async forms are not in the table.
func cpSig(m *mods) (Sig, error) {
	var s Sig
	if _, ok := m.take("async"); !ok {
		return s, fmt.Errorf("cp needs .async")
	}
	if _, ok := m.take("bulk"); !ok {
		return s, fmt.Errorf("cp.async: only cp.async.bulk is supported")
	}
	if _, ok := m.take("prefetch"); ok {
		// cp.async.bulk.prefetch.L2.global [src], size: a hint.
		if _, ok := m.take("L2"); !ok {
			return s, fmt.Errorf("cp.async.bulk.prefetch needs .L2")
		}
		if _, ok := m.take("global"); !ok {
			return s, fmt.Errorf("cp.async.bulk.prefetch: only a .global source is supported")
		}
		s.Feature, s.PTX = FeatBulkCopy, v80
		s.Args = []ArgSpec{addrIn(SpaceGlobal), read(U32)}
		return s, nil
	}
	dst, ok := m.take("shared::cluster", "shared::cta")
	if !ok {
		return s, fmt.Errorf("cp.async.bulk needs a .shared::cluster or .shared::cta destination")
	}
	if _, ok := m.take("global"); !ok {
		return s, fmt.Errorf("cp.async.bulk: only a .global source is supported")
	}
	if _, ok := m.take("mbarrier::complete_tx::bytes"); !ok {
		return s, fmt.Errorf("cp.async.bulk needs .mbarrier::complete_tx::bytes")
	}
	s.Space = spaceByName(dst)
	s.Feature, s.PTX = FeatBulkCopy, v80
	if s.Space == SpaceSharedCTA {
		s.PTX = v86
	}
	// The barrier lives in the destination's CTA.
	s.Args = []ArgSpec{addrIn(s.Space), addrIn(SpaceGlobal), read(U32), addrIn(s.Space)}
	return s, nil
}
