package emu

import (
	"fmt"
	"strings"
)

// FaultKind classifies a Fault.
type FaultKind uint8

// The fault classes. Each is an error of the kernel (or of the launch), never
// a Go panic; FaultInternal alone is an interpreter bug.
const (
	FaultMemory      FaultKind = iota + 1 // an access outside every allocation, or outside shared memory
	FaultAlign                            // an access not aligned to its size (a .v4.f32 access needs 16 bytes)
	FaultCollective                       // a warp collective whose lanes disagree on the mask, or never all arrive
	FaultBarrier                          // a bar.sync that cannot complete, or that is used divergently
	FaultSteps                            // the step budget (Launch.MaxSteps) is spent
	FaultRace                             // a shared-memory race (Launch.RaceCheck)
	FaultUnsupported                      // an instruction or feature the interpreter does not implement yet
	FaultInternal                         // an interpreter bug, recovered from a panic
)

var faultNames = [...]string{
	FaultMemory:      "memory fault",
	FaultAlign:       "misaligned access",
	FaultCollective:  "warp collective fault",
	FaultBarrier:     "barrier fault",
	FaultSteps:       "step budget exceeded",
	FaultRace:        "shared-memory race",
	FaultUnsupported: "unsupported",
	FaultInternal:    "interpreter bug",
}

func (k FaultKind) String() string {
	if int(k) < len(faultNames) && faultNames[k] != "" {
		return faultNames[k]
	}
	return fmt.Sprintf("fault(%d)", uint8(k))
}

// Fault is an error in a running kernel. It names the instruction (its PTX
// text and line), the thread, and the address when there is one.
type Fault struct {
	Kind    FaultKind
	Kernel  string
	PC      int    // index of the instruction in the kernel's body (its instructions only)
	Line    int    // line of the instruction in the PTX text (0: none)
	Inst    string // the instruction as written
	CTA     [3]int // %ctaid of the faulting thread
	Thread  [3]int // %tid of the faulting thread
	Warp    int    // warp index in the CTA
	Lane    int    // lane in the warp
	Addr    uint64 // the address, when HasAddr
	HasAddr bool
	Msg     string // what went wrong; for races and collectives it names the other threads
}

func (f *Fault) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "emu: %s: kernel %s", f.Kind, f.Kernel)
	fmt.Fprintf(&b, ", CTA (%d,%d,%d), thread (%d,%d,%d) [warp %d lane %d]",
		f.CTA[0], f.CTA[1], f.CTA[2], f.Thread[0], f.Thread[1], f.Thread[2], f.Warp, f.Lane)
	if f.Inst != "" {
		if f.Line > 0 {
			fmt.Fprintf(&b, ", line %d", f.Line)
		}
		fmt.Fprintf(&b, " `%s`", f.Inst)
	}
	if f.HasAddr {
		fmt.Fprintf(&b, ", address %#x", f.Addr)
	}
	b.WriteString(": ")
	b.WriteString(f.Msg)
	return b.String()
}
