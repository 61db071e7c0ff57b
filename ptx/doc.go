// Package ptx is a typed builder, verifier, printer and parser for NVIDIA
// PTX, in the spirit of avo: generators build an IR in Go, and the printer
// alone turns it into text. It knows nothing of Top-K.
//
// The IR (ir.go) is plain data: a Module holds a Target, module-scope
// variables (shared memory) and Entries; an Entry holds parameters,
// performance directives (.maxntid, .reqntid, .reqnctapercluster...) and a
// body of instructions, labels and comments. Registers are typed virtual
// registers (Reg), with predicates a distinct Go type (Pred), numbered per
// register class and declared in one .reg block per class; ptxas allocates.
//
// An instruction is an opcode, its qualifiers and its operands. The ISA table
// (isa.go, Inst.Sig) says for each spelling which operands are read or
// written and of which type, and which target feature and PTX version it
// needs. The builder (build.go), the verify pass (verify.go), the printer
// (printer.go), the parser (parse.go) and the interpreter (package emu) all
// read that one table.
//
// Building:
//
//	m := ptx.NewModule(ptx.SM90)
//	e := m.NewEntry("kernel")
//	n := e.LdParam(e.Param("n", ptx.U64))
//	...
//	if err := m.Build(); err != nil { ... } // verify; fixes .version
//	text := ptx.Text(m)
//
// Structured helpers (If, IfElse, For, While, DoWhile, Guarded) make unique
// labels. Errors are not panics: the builder and the verify pass collect
// them, each with the generator's file:line, and Build returns them joined.
//
// A builder method emits what it is named for, with one exception where
// ptxas would do worse than a compiler's front end: Div and Rem of an
// unsigned value by a power-of-two immediate emit a shift and a mask
// (ptxas turns div.u32 by any immediate into its generic division).
//
// Clusters and asynchronous copies (sm_90) have the same small vocabulary
// as CUTLASS's wrappers: .explicitcluster and .reqnctapercluster on Entry,
// the cluster special registers, Mapa and the .shared::cluster space,
// BarrierClusterArrive/Wait, Fence and FenceMbarrierInit, the mbarrier
// methods (MbarrierInit, MbarrierArrive, MbarrierArriveExpectTx,
// MbarrierTryWaitParity, MbarrierWait, MbarrierInval), CpAsyncBulk and
// ElectSync; programmatic dependent launch has GridDepWait and
// GridDepLaunchDependents. A result PTX lets a program drop is the operand
// Sink{} (_).
//
// A kernel's launch contract (launch.go) is a Launch: its entry, block,
// cluster shape, dynamic shared memory, whether it waits first for the
// kernel before it (WaitsFirst), whether its CTAs wait for each other
// beyond a cluster and so must be launched cooperatively (Cooperative,
// written as a comment line before the entry: PTX has no directive for
// it), and named, typed parameters, a
// pointer parameter with the alignment its accesses need (printed as
// .ptr.global.align N, so the text declares it too; LaunchOf reads a
// contract back from a module). Args holds one launch's arguments, set by
// name and checked (every one set, no unknown name, pointers aligned)
// before the interpreter or a driver launches anything.
//
// Targets (target.go) carry the minimum .version that knows them; the
// emitted .version is that minimum, raised only when an instruction in the
// module needs a newer ISA, so a module loads on the oldest driver that can
// run it.
package ptx
