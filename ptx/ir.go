package ptx

// This file holds the IR: plain data, no printing and no ISA knowledge.

// Operand is anything an instruction can name: a register, a predicate, an
// immediate, a special register, a symbol, an address, a vector, a label or
// the sink.
type Operand interface{ operand() }

// Reg is a typed virtual register. Registers are numbered per class within
// their entry; ptxas does the allocation.
type Reg struct {
	T     Type
	N     int    // index within the register class of T
	entry uint32 // which entry made it (0: none, an error to use)
}

// Pred is a predicate register. It is a distinct Go type so that a value
// register can never be passed where a predicate is expected. Neg marks a
// negated use (@!p, or !p where an instruction accepts it).
type Pred struct {
	N     int
	Neg   bool
	entry uint32
}

// Not returns p negated.
func (p Pred) Not() Pred { p.Neg = !p.Neg; return p }

// Imm is an integer immediate; its type comes from the instruction.
type Imm int64

// FloatImm is a float immediate, kept as exact bits so that output is
// deterministic: T is F32 (Bits holds the float32 bits) or F64.
type FloatImm struct {
	T    Type
	Bits uint64
}

// Special is a special (read-only) register such as %tid.x.
type Special uint8

// The special registers gvr's kernels read.
const (
	SpecialInvalid Special = iota
	TidX
	TidY
	TidZ
	NTidX
	NTidY
	NTidZ
	CtaIDX
	CtaIDY
	CtaIDZ
	NCtaIDX
	NCtaIDY
	NCtaIDZ
	LaneID
	WarpID
	NWarpID
	LaneMaskLt
	LaneMaskLe
	LaneMaskGt
	LaneMaskEq
	Clock
	Clock64
	GlobalTimer
	ClusterCtaRank    // %cluster_ctarank: the CTA's rank in its cluster
	ClusterNCtaRank   // %cluster_nctarank: CTAs per cluster
	ClusterIDX        // %clusterid.x: the cluster's position in the grid
	ClusterIDY        // %clusterid.y
	ClusterIDZ        // %clusterid.z
	NClusterIDX       // %nclusterid.x: clusters in the grid
	NClusterIDY       // %nclusterid.y
	NClusterIDZ       // %nclusterid.z
	ClusterCtaIDX     // %cluster_ctaid.x: the CTA's position in its cluster
	ClusterCtaIDY     // %cluster_ctaid.y
	ClusterCtaIDZ     // %cluster_ctaid.z
	ClusterNCtaIDX    // %cluster_nctaid.x: the cluster's shape
	ClusterNCtaIDY    // %cluster_nctaid.y
	ClusterNCtaIDZ    // %cluster_nctaid.z
	IsExplicitCluster // %is_explicit_cluster (.pred): launched with cluster dimensions
	SMID
	numSpecials
)

// Sink is the sink symbol _, which stands for a result an instruction
// produces and the program discards (mbarrier.arrive on another CTA's
// barrier, elect.sync without the lane).
type Sink struct{}

// Var is a variable in a state space (shared memory for gvr). Used as an
// operand it stands for its address.
type Var struct {
	Name   string
	Space  Space
	Elem   Type // element type as declared
	Len    int  // elements; 0 for an extern (dynamically sized) array
	Align  int  // bytes
	Extern bool // .extern: dynamically sized shared memory
}

// Param is a kernel parameter. Used as an operand it stands for its address
// in the .param space (ld.param reads it).
type Param struct {
	Name string
	T    Type
	// PtrAlign, when nonzero, marks a pointer parameter to global memory
	// aligned to PtrAlign bytes (.ptr.global.align N).
	PtrAlign int
}

// Addr is a memory address operand: [Base+Off]. Base is a Reg, a *Var or a
// *Param.
type Addr struct {
	Base Operand
	Off  int64
}

// Vec is a vector operand {a, b, c, d} for .v2/.v4 loads and stores.
type Vec []Reg

// Label is a branch target within an entry.
type Label struct {
	Name string
}

func (Reg) operand()      {}
func (Pred) operand()     {}
func (Imm) operand()      {}
func (FloatImm) operand() {}
func (Special) operand()  {}
func (*Var) operand()     {}
func (*Param) operand()   {}
func (Addr) operand()     {}
func (Vec) operand()      {}
func (Label) operand()    {}
func (Sink) operand()     {}

// Stmt is an element of an entry's body: an instruction, a label placement
// or a comment.
type Stmt interface{ stmt() }

// Inst is one PTX instruction. Op and Mods spell it ("ld" with Mods
// "global", "nc", "v4", "f32" is ld.global.nc.v4.f32); Args are its operands
// in PTX order. What each operand means (read or written, which type) and
// what the instruction needs of the target comes from the ISA table
// (Inst.Sig), so the IR stays plain data.
type Inst struct {
	Op    string
	Mods  []string
	Guard *Pred // @p or @!p; nil when unconditional
	Args  []Operand
	Pos   string // generator source position (file:line), for errors
}

// LabelStmt places a label.
type LabelStmt struct{ Label Label }

// Comment is a line comment in the body.
type Comment struct{ Text string }

func (*Inst) stmt()     {}
func (LabelStmt) stmt() {}
func (Comment) stmt()   {}

// Dim3 is an x, y, z triple for launch-shape directives; zero means unset.
type Dim3 [3]int

func (d Dim3) set() bool { return d[0] != 0 }

// Entry is a kernel (.entry) with its parameters, performance directives and
// body.
type Entry struct {
	Name   string
	Params []*Param
	Body   []Stmt

	MaxNTID           Dim3 // .maxntid
	ReqNTID           Dim3 // .reqntid
	ReqNCTAPerCluster Dim3 // .reqnctapercluster
	// ExplicitCluster (.explicitcluster): the kernel must be launched
	// with cluster dimensions, given at launch or by .reqnctapercluster.
	ExplicitCluster bool
	MinNCTAPerSM    int // .minnctapersm
	MaxNReg         int // .maxnreg
	// Cooperative is how many CTAs of the grid wait for each other
	// beyond a cluster (0: none; Launch.Cooperative). PTX has no
	// directive for it: the printer writes it as a comment line before
	// the entry (CooperativeComment) and the parser reads it back, so
	// that a kernel loaded from its text alone is launched as it must be.
	Cooperative int

	id     uint32
	nregs  [numRegClasses]int
	labels int
	guard  *Pred // applied to instructions emitted inside Guarded
	m      *Module
}

// Module is a PTX module: a target, module-scope variables and entries.
// Build it with NewModule, add entries, then call Build.
type Module struct {
	Target  Target
	Version Version // set by Build: the target's minimum, raised if an instruction needs more
	Header  []string
	Vars    []*Var
	Entries []*Entry

	errs  []error
	built bool
}

// regClass groups registers that share a declaration (and a name prefix).
type regClass uint8

const (
	classPred regClass = iota
	classB16
	classB32
	classB64
	classF32
	classF64
	numRegClasses
)

func classOf(t Type) regClass {
	switch {
	case t == TypePred:
		return classPred
	case t == F32:
		return classF32
	case t == F64:
		return classF64
	case t.Bits() == 64:
		return classB64
	case t.Bits() == 32:
		return classB32
	default:
		return classB16
	}
}
