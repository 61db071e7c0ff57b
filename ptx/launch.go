package ptx

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unsafe"
)

// Launch is a kernel's launch contract: what anyone who launches it (the
// interpreter, a driver, a library) must know and may check. A generator
// returns it with each kernel; LaunchOf reads what the module itself says.
type Launch struct {
	Entry string // the .entry name
	Block int    // threads per CTA (1-D)
	// Cluster is the CTAs per thread-block cluster (.reqnctapercluster);
	// 1 means no cluster. A launch's grid is a whole number of clusters.
	Cluster int
	// NonPortableCluster: Cluster is above the portable size 8, and the
	// driver must be told to allow it before the first launch.
	NonPortableCluster bool
	SharedBytes        int     // dynamic shared memory per CTA, bytes
	Params             []Param // the parameters, in .param order
	// WaitsFirst: the entry's code starts with griddepcontrol.wait, no
	// branch or memory access but its parameters' before it (waitsFirst),
	// so it may be launched programmatically dependent on the kernel
	// before it: it touches no memory before that kernel has ended.
	WaitsFirst bool
	// Cooperative is how many CTAs of the grid wait for each other
	// beyond their cluster (spinning on global memory another cluster
	// writes), a whole number of clusters; 0: none do. LaunchOf takes it
	// from the entry (Entry.Cooperative, which the text carries in a
	// comment line, CooperativeComment, as PTX has no directive for it). Such a
	// kernel's grid is a whole number of these groups, and it is launched
	// cooperatively, every CTA resident at once: launched plainly, the
	// CTAs resident first could spin for ones that cannot start until
	// they end.
	Cooperative int
}

// MaxPortableCluster is the largest cluster every sm_90+ device schedules
// without an opt-in (PTX-FACTS.md).
const MaxPortableCluster = 8

// LaunchOf is the contract entry's declarations give: its name, block
// (.reqntid, else .maxntid), cluster (.reqnctapercluster, else 1) and
// parameters. Dynamic shared memory is not in the text: sharedBytes
// supplies it.
func LaunchOf(m *Module, entry string, sharedBytes int) (Launch, error) {
	for _, e := range m.Entries {
		if e.Name != entry {
			continue
		}
		l := Launch{Entry: e.Name, Block: e.ReqNTID[0], Cluster: 1, SharedBytes: sharedBytes}
		if l.Block == 0 {
			l.Block = e.MaxNTID[0]
		}
		if c := e.ReqNCTAPerCluster; c.set() {
			l.Cluster = c[0] * max(c[1], 1) * max(c[2], 1)
		}
		l.NonPortableCluster = l.Cluster > MaxPortableCluster
		l.WaitsFirst = waitsFirst(e)
		l.Cooperative = e.Cooperative
		for _, p := range e.Params {
			l.Params = append(l.Params, *p)
		}
		return l, l.Check()
	}
	return Launch{}, fmt.Errorf("ptx: the module has no entry %q", entry)
}

// waitsFirst reports whether e's body starts with an unguarded
// griddepcontrol.wait that nothing but comments and instructions that
// touch no memory (or only .param) come before: no label, no branch.
func waitsFirst(e *Entry) bool {
	for _, s := range e.Body {
		switch s := s.(type) {
		case Comment:
			continue
		case *Inst:
			if s.Op == "griddepcontrol" && slices.Equal(s.Mods, []string{"wait"}) && s.Guard == nil {
				return true
			}
			if touchesMemory(s) || s.Op == "bra" || s.Op == "ret" || s.Op == "exit" {
				return false
			}
		default:
			return false
		}
	}
	return false
}

// touchesMemory reports whether in may read or write memory other than
// kernel parameters (a conservative answer: every memory-space
// instruction but ld.param, and every instruction not known to touch none).
func touchesMemory(in *Inst) bool {
	switch in.Op {
	case "ld":
		return !slices.Contains(in.Mods, "param")
	case "mov", "add", "sub", "mul", "mad", "cvt", "cvta", "and", "or", "xor", "not", "shl", "shr",
		"setp", "selp", "min", "max", "griddepcontrol":
		return false
	}
	return true
}

// Check reports what makes l unusable: no entry name, a block outside
// 1-1024, a cluster outside 1-16, negative shared memory, or parameters
// that are not named once each, of a parameter type, with a power-of-two
// pointer alignment.
func (l Launch) Check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if l.Entry == "" {
		bad("no entry name")
	}
	if l.Block < 1 || l.Block > 1024 {
		bad("block of %d threads: must be 1 to 1024", l.Block)
	}
	if l.Cluster < 1 || l.Cluster > 16 {
		bad("cluster of %d CTAs: must be 1 to 16", l.Cluster)
	}
	if l.NonPortableCluster != (l.Cluster > MaxPortableCluster) {
		bad("NonPortableCluster = %v for a cluster of %d", l.NonPortableCluster, l.Cluster)
	}
	if l.SharedBytes < 0 {
		bad("%d bytes of shared memory", l.SharedBytes)
	}
	if l.Cooperative < 0 || l.Cluster > 0 && l.Cooperative%l.Cluster != 0 {
		bad("cooperative groups of %d CTAs: must be a whole number of clusters of %d", l.Cooperative, l.Cluster)
	}
	seen := map[string]bool{}
	for _, p := range l.Params {
		switch {
		case p.Name == "":
			bad("a parameter without a name")
		case seen[p.Name]:
			bad("parameter %s declared twice", p.Name)
		case p.T.Bits() != 32 && p.T.Bits() != 64 || p.T == TypePred:
			bad("parameter %s: type %s: must be a 32- or 64-bit scalar", p.Name, p.T.Name())
		case p.PtrAlign != 0 && (p.T.Bits() != 64 || p.PtrAlign < 0 || p.PtrAlign&(p.PtrAlign-1) != 0):
			bad("parameter %s: pointer alignment %d of a %s", p.Name, p.PtrAlign, p.T.Name())
		}
		seen[p.Name] = true
	}
	if len(errs) > 0 {
		return fmt.Errorf("ptx: launch contract of %s: %w", l.Entry, errors.Join(errs...))
	}
	return nil
}

// Param is the contract's parameter called name, or nil.
func (l *Launch) Param(name string) *Param {
	for i := range l.Params {
		if l.Params[i].Name == name {
			return &l.Params[i]
		}
	}
	return nil
}

func (l Launch) String() string {
	var ps []string
	for _, p := range l.Params {
		s := p.Name + " ." + p.T.Name()
		if p.PtrAlign != 0 {
			s += fmt.Sprintf(" (global pointer, %d-aligned)", p.PtrAlign)
		}
		ps = append(ps, s)
	}
	c := ""
	if l.Cluster > 1 {
		c = fmt.Sprintf(", clusters of %d CTAs", l.Cluster)
		if l.NonPortableCluster {
			c += " (non-portable)"
		}
	}
	w := ""
	if l.Cooperative > 0 {
		w = fmt.Sprintf(", cooperative in groups of %d CTAs", l.Cooperative)
	}
	if l.WaitsFirst {
		w += ", waits first for the kernel before it (griddepcontrol.wait)"
	}
	return fmt.Sprintf("%s(%s): %d threads per CTA%s, %d B dynamic shared memory%s",
		l.Entry, strings.Join(ps, ", "), l.Block, c, l.SharedBytes, w)
}

// Args are the arguments of one launch of a contract, set by parameter
// name. Make them once and set the values that change before each launch:
// Set does not allocate, so a launch loop does not either.
type Args struct {
	l    *Launch
	vals []uint64 // per parameter, in .param order: the value's bits in the low bytes
	set  []bool
	ptrs []unsafe.Pointer // &vals[i], for a driver launch
	err  error            // the first bad Set
}

// Args makes an argument set for l with no value set.
func (l *Launch) Args() *Args {
	a := &Args{l: l, vals: make([]uint64, len(l.Params)), set: make([]bool, len(l.Params)),
		ptrs: make([]unsafe.Pointer, len(l.Params))}
	for i := range a.vals {
		a.ptrs[i] = unsafe.Pointer(&a.vals[i])
	}
	return a
}

// Launch is the contract a was made for.
func (a *Args) Launch() *Launch { return a.l }

// Set sets parameter name to v (an integer, or a device address) and
// returns a. A name the kernel does not have, or a value that does not fit
// a 32-bit parameter, is kept as an error that Check (and every launch)
// reports.
func (a *Args) Set(name string, v uint64) *Args {
	for i := range a.l.Params {
		p := &a.l.Params[i]
		if p.Name != name {
			continue
		}
		if p.T.Bits() == 32 && v>>32 != 0 && a.err == nil {
			a.err = fmt.Errorf("%s = %d does not fit its .%s", name, v, p.T.Name())
		}
		a.vals[i], a.set[i] = v, true
		return a
	}
	if a.err == nil {
		a.err = fmt.Errorf("the kernel has no parameter %q (it has %s)", name, a.l.paramNames())
	}
	return a
}

// SetF32 sets an .f32 parameter (its bits).
func (a *Args) SetF32(name string, v float32) *Args {
	return a.Set(name, uint64(*(*uint32)(unsafe.Pointer(&v))))
}

func (l *Launch) paramNames() string {
	var s []string
	for _, p := range l.Params {
		s = append(s, p.Name)
	}
	return strings.Join(s, ", ")
}

// Check reports why a cannot be launched: a bad Set, a parameter not set,
// or a pointer that is not aligned as the kernel needs (a kernel that
// reads a misaligned address faults). A null pointer passes: kernels
// treat some (optional outputs) as absent.
func (a *Args) Check() error {
	if a.err != nil {
		return fmt.Errorf("ptx: arguments of %s: %w", a.l.Entry, a.err)
	}
	for i, p := range a.l.Params {
		if !a.set[i] {
			return fmt.Errorf("ptx: arguments of %s: %s is not set", a.l.Entry, p.Name)
		}
		if v := a.vals[i]; p.PtrAlign > 1 && v%uint64(p.PtrAlign) != 0 {
			return fmt.Errorf("ptx: arguments of %s: %s = %#x is not %d-byte aligned", a.l.Entry, p.Name, v, p.PtrAlign)
		}
	}
	return nil
}

// Value is the argument set for parameter name, if it is set.
func (a *Args) Value(name string) (uint64, bool) {
	for i := range a.l.Params {
		if a.l.Params[i].Name == name {
			return a.vals[i], a.set[i]
		}
	}
	return 0, false
}

// Values are the arguments in .param order.
func (a *Args) Values() []uint64 { return a.vals }

// Pointers are pointers to each argument in .param order, as a driver's
// launch takes them (cuLaunchKernel's kernelParams); they stay valid, and
// see later Sets, for the life of a.
func (a *Args) Pointers() []unsafe.Pointer { return a.ptrs }
