package emu

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/gvr-go/gvr/ptx"
)

// Program is a loaded PTX module, its kernels compiled for the interpreter.
type Program struct {
	Module  *ptx.Module // the parsed text
	kernels map[string]*kernel
}

// Load parses PTX text, as the driver would receive it, and compiles every
// kernel. It fails on text the parser rejects and on instructions that PTX
// forbids (a cvt without its mandatory rounding, say). Instructions the
// interpreter does not implement yet compile to a fault raised when a
// thread executes them.
func Load(text string) (*Program, error) {
	m, err := ptx.Parse(text)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(text, "\n")
	p := &Program{Module: m, kernels: map[string]*kernel{}}
	var errs []error
	for _, e := range m.Entries {
		k, err := compile(m, e, lines)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.kernels[e.Name] = k
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// LoadModule is Load(ptx.Text(m)): the interpreter always runs the printed
// text, so a printer bug cannot hide.
func LoadModule(m *ptx.Module) (*Program, error) { return Load(ptx.Text(m)) }

// Kernels lists the kernels' names in module order.
func (p *Program) Kernels() []string {
	var names []string
	for _, e := range p.Module.Entries {
		names = append(names, e.Name)
	}
	return names
}

// Launch is the shape and the arguments of a kernel launch.
type Launch struct {
	Grid, Block   [3]int   // CTAs and threads per CTA; a zero y or z counts as 1
	DynamicShared int      // bytes of dynamic (.extern) shared memory
	Params        []uint64 // one per kernel parameter, in order; the low bytes are used for narrower parameters, f32 as its bits
	MaxSteps      int64    // warp instructions per CTA before a FaultSteps; 0: DefaultMaxSteps
	RaceCheck     bool     // report shared-memory races (slower)
}

// DefaultMaxSteps is the per-CTA step budget when Launch.MaxSteps is 0: far
// more than any gvr kernel needs, small enough that a kernel stuck in a loop
// faults within seconds.
const DefaultMaxSteps = 1 << 26

// Limits a driver would enforce.
const (
	maxThreadsPerCTA = 1024
	maxStaticShared  = 48 << 10
	maxShared        = 227 << 10 // per CTA, with opt-in (H100, B200)
)

// Stats counts what a launch executed.
type Stats struct {
	Instructions     int64 // thread-instructions: for each warp instruction, the lanes that executed it (guard true)
	WarpInstructions int64 // warp instructions issued (steps)
	CTAs             int
	Barriers         int64 // completed CTA barriers
}

// Run executes kernel on the grid, with global memory mem. CTAs run one
// after another in grid order, so results are deterministic. The error is a
// *Fault for a fault of the kernel, or a plain error for a bad launch.
func (p *Program) Run(kernel string, mem *Memory, l Launch) (st Stats, err error) {
	k := p.kernels[kernel]
	if k == nil {
		return st, fmt.Errorf("emu: no kernel %q (have %s)", kernel, strings.Join(p.Kernels(), ", "))
	}
	ls, err := k.prepare(mem, l)
	if err != nil {
		return st, err
	}
	defer func() {
		if r := recover(); r != nil {
			err = &Fault{Kind: FaultInternal, Kernel: kernel,
				Msg: fmt.Sprintf("interpreter bug, please report: %v\n%s", r, debug.Stack())}
		}
	}()
	for z := 0; z < ls.grid[2]; z++ {
		for y := 0; y < ls.grid[1]; y++ {
			for x := 0; x < ls.grid[0]; x++ {
				c := ls.newCTA([3]int{x, y, z})
				f := runCluster([]*cta{c})
				st.Instructions += c.threadInstr
				st.WarpInstructions += c.steps
				st.Barriers += c.barriers
				st.CTAs++
				if f != nil {
					return st, f
				}
			}
		}
	}
	return st, nil
}

// kernel is one compiled entry.
type kernel struct {
	name  string
	entry *ptx.Entry
	code  []inst // the body's instructions, then an implicit exit

	nregs    int         // value registers, special-register slots included
	npreds   int         // predicate registers
	specials []specialAt // special registers read, each in a register slot

	paramOff  map[*ptx.Param]int // offsets in the parameter buffer
	paramSize int

	sharedAddr   map[*ptx.Var]uint64 // shared-window address of each variable
	staticShared int                 // bytes of static shared memory
	dynamicOff   int                 // offset of the .extern region
}

type specialAt struct {
	s ptx.Special
	r int32
}

// launchState is what every CTA of one launch shares.
type launchState struct {
	k        *kernel
	mem      *Memory
	params   []byte
	grid     [3]int
	block    [3]int
	nthreads int
	smemSize int
	maxSteps int64
	race     bool
	pool     []*warp // warps reused from CTA to CTA
}

func dim3(d [3]int) [3]int {
	for i := 1; i < 3; i++ {
		if d[i] == 0 {
			d[i] = 1
		}
	}
	return d
}

// prepare checks a launch as the driver would and lays out its parameters.
func (k *kernel) prepare(mem *Memory, l Launch) (*launchState, error) {
	ls := &launchState{k: k, mem: mem, grid: dim3(l.Grid), block: dim3(l.Block), race: l.RaceCheck, maxSteps: l.MaxSteps}
	if ls.maxSteps <= 0 {
		ls.maxSteps = DefaultMaxSteps
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("emu: launch of %s: %s", k.name, fmt.Sprintf(format, args...))
	}
	if mem == nil {
		return nil, bad("no Memory")
	}
	for i := 0; i < 3; i++ {
		if ls.grid[i] < 1 || ls.block[i] < 1 {
			return nil, bad("grid %v and block %v must be positive", l.Grid, l.Block)
		}
	}
	ls.nthreads = ls.block[0] * ls.block[1] * ls.block[2]
	if ls.nthreads > maxThreadsPerCTA {
		return nil, bad("%d threads per CTA, at most %d", ls.nthreads, maxThreadsPerCTA)
	}
	e := k.entry
	if r := e.ReqNTID; r[0] != 0 && dim3(r) != ls.block {
		return nil, bad("block %v differs from .reqntid %v", ls.block, dim3(r))
	}
	if r := e.MaxNTID; r[0] != 0 {
		if r := dim3(r); ls.nthreads > r[0]*r[1]*r[2] {
			return nil, bad("%d threads exceed .maxntid %v", ls.nthreads, r)
		}
	}
	if c := e.ReqNCTAPerCluster; c[0] != 0 && dim3(c) != [3]int{1, 1, 1} {
		return nil, bad("clusters of %v CTAs: clusters are not supported yet", dim3(c))
	}
	if e.ExplicitCluster && e.ReqNCTAPerCluster[0] == 0 {
		return nil, bad(".explicitcluster without .reqnctapercluster: launches with cluster dimensions are not supported yet")
	}
	if k.staticShared > maxStaticShared {
		return nil, bad("%d bytes of static shared memory, at most %d", k.staticShared, maxStaticShared)
	}
	if l.DynamicShared < 0 || k.dynamicOff+l.DynamicShared > maxShared {
		return nil, bad("%d bytes of shared memory (%d static), at most %d", k.dynamicOff+l.DynamicShared, k.staticShared, maxShared)
	}
	ls.smemSize = k.dynamicOff + l.DynamicShared
	if len(l.Params) != len(e.Params) {
		return nil, bad("%d parameters given, the kernel takes %d", len(l.Params), len(e.Params))
	}
	ls.params = make([]byte, k.paramSize)
	for i, p := range e.Params {
		off, n := k.paramOff[p], p.T.Bytes()
		for j := 0; j < n; j++ {
			ls.params[off+j] = byte(l.Params[i] >> (8 * j))
		}
	}
	return ls, nil
}

// layout assigns parameter offsets and shared-memory addresses.
func (k *kernel) layout(m *ptx.Module) {
	k.paramOff = map[*ptx.Param]int{}
	off := 0
	for _, p := range k.entry.Params {
		n := max(p.T.Bytes(), 1)
		off = (off + n - 1) / n * n
		k.paramOff[p] = off
		off += n
	}
	k.paramSize = off

	// Static variables the kernel uses, in declaration order, then the
	// dynamic region, as ptxas lays them out.
	used := map[*ptx.Var]bool{}
	for _, s := range k.entry.Body {
		if in, ok := s.(*ptx.Inst); ok {
			for _, a := range in.Args {
				if ad, ok := a.(ptx.Addr); ok {
					a = ad.Base
				}
				if v, ok := a.(*ptx.Var); ok {
					used[v] = true
				}
			}
		}
	}
	k.sharedAddr = map[*ptx.Var]uint64{}
	off = 0
	externAlign := 16
	for _, v := range m.Vars {
		if v.Space != ptx.SpaceShared || !used[v] {
			continue
		}
		if v.Extern {
			externAlign = max(externAlign, v.Align)
			continue
		}
		a := max(v.Align, 1)
		off = (off + a - 1) / a * a
		k.sharedAddr[v] = sharedWindow + uint64(off)
		off += v.Len * v.Elem.Bytes()
	}
	k.staticShared = off
	k.dynamicOff = (off + externAlign - 1) / externAlign * externAlign
	for _, v := range m.Vars {
		if v.Space == ptx.SpaceShared && v.Extern {
			k.sharedAddr[v] = sharedWindow + uint64(k.dynamicOff) // every extern array starts there
		}
	}
}

// lineOf reads the line number the parser put in Inst.Pos.
func lineOf(in *ptx.Inst) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(in.Pos, "line "))
	return n
}
