package ptx

import "fmt"

// Type is a PTX fundamental type. Registers, immediates and instructions are
// typed; the verify pass checks that they agree.
type Type uint8

// The fundamental types. TypePred is the type of predicate registers.
const (
	TypeInvalid Type = iota
	TypePred
	B8
	B16
	B32
	B64
	U8
	U16
	U32
	U64
	S8
	S16
	S32
	S64
	F32
	F64
	// F16 is IEEE half precision, for conversions (cvt.f32.f16) of values
	// held in 16-bit registers.
	F16
)

// Kind groups types by how their bits are read.
type Kind uint8

// The kinds of a Type.
const (
	KindInvalid Kind = iota
	KindPred
	KindBits
	KindUnsigned
	KindSigned
	KindFloat
)

var typeInfo = [...]struct {
	name string
	kind Kind
	bits int
}{
	TypeInvalid: {"invalid", KindInvalid, 0},
	TypePred:    {"pred", KindPred, 1},
	B8:          {"b8", KindBits, 8},
	B16:         {"b16", KindBits, 16},
	B32:         {"b32", KindBits, 32},
	B64:         {"b64", KindBits, 64},
	U8:          {"u8", KindUnsigned, 8},
	U16:         {"u16", KindUnsigned, 16},
	U32:         {"u32", KindUnsigned, 32},
	U64:         {"u64", KindUnsigned, 64},
	S8:          {"s8", KindSigned, 8},
	S16:         {"s16", KindSigned, 16},
	S32:         {"s32", KindSigned, 32},
	S64:         {"s64", KindSigned, 64},
	F32:         {"f32", KindFloat, 32},
	F64:         {"f64", KindFloat, 64},
	F16:         {"f16", KindFloat, 16},
}

// Name is the type's PTX name without the leading dot ("u32").
func (t Type) Name() string {
	if int(t) < len(typeInfo) {
		return typeInfo[t].name
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

func (t Type) String() string { return t.Name() }

// Kind reports whether t is a predicate, bit, unsigned, signed or float type.
func (t Type) Kind() Kind {
	if int(t) < len(typeInfo) {
		return typeInfo[t].kind
	}
	return KindInvalid
}

// Bits is the width of t in bits (1 for predicates).
func (t Type) Bits() int {
	if int(t) < len(typeInfo) {
		return typeInfo[t].bits
	}
	return 0
}

// Bytes is the width of t in bytes (0 for predicates).
func (t Type) Bytes() int { return t.Bits() / 8 }

// IsInt reports whether t is a bit, unsigned or signed type.
func (t Type) IsInt() bool {
	k := t.Kind()
	return k == KindBits || k == KindUnsigned || k == KindSigned
}

// IsFloat reports whether t is a float type.
func (t Type) IsFloat() bool { return t.Kind() == KindFloat }

// TypeByName returns the type named name ("u32"), or false.
func TypeByName(name string) (Type, bool) {
	for t, info := range typeInfo {
		if Type(t) != TypeInvalid && info.name == name {
			return Type(t), true
		}
	}
	return TypeInvalid, false
}

// compatible reports whether a register of type reg may stand where an
// instruction expects type want. PTX relaxes the rules for bit types (a .bN
// register fits any N-bit use and any N-bit register fits a .bN use) and
// between signed and unsigned integers of one width; floats never mix with
// integers, and widths never differ.
func compatible(want, reg Type) bool {
	if want == reg {
		return true
	}
	// 8-bit values live in 16-bit registers: the printer declares them .b16
	// and PTX lets ld, st and cvt of an 8-bit type use a 16-bit register.
	if want.Bits() == 8 && reg.Bits() == 16 && want.IsInt() && reg.IsInt() {
		return true
	}
	if want.Bits() != reg.Bits() || want == TypePred || reg == TypePred {
		return false
	}
	if want.Kind() == KindBits || reg.Kind() == KindBits {
		return true
	}
	return want.IsInt() && reg.IsInt()
}

// Space is a PTX state space.
type Space uint8

// The state spaces.
const (
	SpaceNone          Space = iota // generic addressing
	SpaceReg                        // registers (declarations only)
	SpaceParam                      // kernel parameters
	SpaceGlobal                     // device memory
	SpaceShared                     // the CTA's shared memory
	SpaceSharedCTA                  // the CTA's shared memory, spelled .shared::cta (PTX 7.8)
	SpaceSharedCluster              // shared memory of any CTA in the cluster
	SpaceLocal                      // per-thread local memory
	SpaceConst                      // constant bank
)

var spaceNames = [...]string{
	SpaceNone:          "",
	SpaceReg:           "reg",
	SpaceParam:         "param",
	SpaceGlobal:        "global",
	SpaceShared:        "shared",
	SpaceSharedCTA:     "shared::cta",
	SpaceSharedCluster: "shared::cluster",
	SpaceLocal:         "local",
	SpaceConst:         "const",
}

// Name is the space's PTX name without the leading dot ("" for generic).
func (s Space) Name() string {
	if int(s) < len(spaceNames) {
		return spaceNames[s]
	}
	return fmt.Sprintf("space(%d)", uint8(s))
}

// holds reports whether an access to space s may name a variable declared
// in space decl: the same space, or a .shared variable through .shared::cta
// or .shared::cluster (a CTA's own shared window lies inside the cluster's).
func (s Space) holds(decl Space) bool {
	return s == decl || decl == SpaceShared && (s == SpaceSharedCTA || s == SpaceSharedCluster)
}

// isShared reports whether s is a shared-memory space, where 32-bit
// addresses are allowed.
func (s Space) isShared() bool {
	return s == SpaceShared || s == SpaceSharedCTA || s == SpaceSharedCluster
}

func (s Space) String() string {
	if s == SpaceNone {
		return "generic"
	}
	return s.Name()
}
