package emu

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
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

// Contract is entry's launch contract as the text declares it
// (ptx.LaunchOf), for text that comes without one, such as a test's
// hand-written kernel. block is the threads per CTA where the text fixes
// none: it must equal a declared .reqntid, and is checked against a
// .maxntid when the kernel runs; 0 takes the text's .reqntid or .maxntid.
// sharedBytes is the dynamic shared memory, which text never declares.
func (p *Program) Contract(entry string, block, sharedBytes int) (ptx.Launch, error) {
	l, err := ptx.LaunchOf(p.Module, entry, sharedBytes)
	if l.Entry == "" { // no such entry
		return ptx.Launch{}, fmt.Errorf("emu: %w", err)
	}
	if block != 0 {
		if req := p.kernels[entry].entry.ReqNTID[0]; req != 0 && req != block {
			return ptx.Launch{}, fmt.Errorf("emu: contract of %s: a block of %d threads, but the text declares .reqntid %d", entry, block, req)
		}
		l.Block = block
	}
	if err := l.Check(); err != nil {
		return ptx.Launch{}, fmt.Errorf("emu: %w", err)
	}
	return l, nil
}

// Launch is one launch of a kernel: its grid and its arguments.
type Launch struct {
	// Grid is the CTAs; a zero y or z counts as 1. Grid[0] must be a whole
	// number of clusters (the contract's Cluster).
	Grid [3]int
	// Args are the arguments by name. Their contract (Args.Launch) names the
	// kernel and gives its block, cluster and dynamic shared memory.
	Args      *ptx.Args
	MaxSteps  int64 // warp instructions per CTA before a FaultSteps; 0: DefaultMaxSteps
	RaceCheck bool  // report shared-memory races (slower)
	// Seed picks the schedule of a cluster's warps and when each bulk
	// copy lands (see the package doc); 0 is a fixed default. Kernels
	// without clusters, mbarriers or bulk copies run the same for every
	// seed.
	Seed uint64
	// Profile, where set, receives the warp instructions issued at each
	// of the entry's instructions.
	Profile *Profile
	// CoResident runs every cluster of the grid at once, as a GPU does
	// when the whole grid fits on it, instead of one cluster after
	// another. A kernel whose clusters wait on each other (a CTA spinning
	// on a word of global memory that another cluster writes) needs it:
	// run one after another, the waiting cluster can never see the word
	// change, and ends in a FaultSteps. The warps of all clusters are
	// interleaved in one schedule, in short turns in a random order drawn
	// from Seed, so a warp spinning on global memory gives way to the
	// others; each cluster keeps its own cluster barrier, mbarriers, bulk
	// copies and race detection. It is slower than running clusters one
	// after another, and holds every CTA's shared memory, and the
	// registers its warps have used, at once. Without it, schedules are
	// those of earlier versions.
	CoResident bool
}

// Profile is what a profiled launch (Launch.Profile) counts.
type Profile struct {
	// Issued is the warp instructions issued at each of the entry's
	// instructions (its *ptx.Inst statements, in body order), summed over
	// the launch's CTAs: they add up to Stats.WarpInstructions, less the
	// warps that end by falling off the body's end.
	Issued []int64
}

// DefaultMaxSteps is the per-CTA step budget when Launch.MaxSteps is 0: far
// more than any gvr kernel needs, small enough that a kernel stuck in a loop
// faults within seconds.
const DefaultMaxSteps = 1 << 26

// Limits a driver would enforce.
const (
	maxStaticShared = 48 << 10
	maxShared       = 227 << 10 // per CTA, with opt-in (H100, B200)
)

// Stats counts what a launch executed.
type Stats struct {
	Instructions     int64 // thread-instructions: for each warp instruction, the lanes that executed it (guard true)
	WarpInstructions int64 // warp instructions issued (steps)
	CTAs             int
	Barriers         int64 // completed CTA barriers
}

// Run executes the kernel that l.Args were made for (its contract's Entry)
// on the grid, with global memory mem. Clusters run one after another in
// grid order (all together with l.CoResident), the CTAs of each together,
// on a schedule drawn from l.Seed, so results are deterministic for a
// given seed. The error is a *Fault for
// a fault of the kernel, or a plain error for a bad launch: arguments that
// Args.Check refuses, or a contract that is not the loaded entry's
// (parameters, block, cluster).
func (p *Program) Run(mem *Memory, l Launch) (st Stats, err error) {
	if l.Args == nil {
		return st, errors.New("emu: a launch without arguments (Launch.Args)")
	}
	kernel := l.Args.Launch().Entry
	k := p.kernels[kernel]
	if k == nil {
		return st, fmt.Errorf("emu: no kernel %q (have %s)", kernel, strings.Join(p.Kernels(), ", "))
	}
	ls, err := k.prepare(mem, l)
	if err != nil {
		return st, err
	}
	if l.Profile != nil {
		ls.issued = make([]int64, len(k.code)) // the body's, then the implicit exit
		defer func() { l.Profile.Issued = ls.issued[:len(k.code)-1] }()
	}
	defer func() {
		if r := recover(); r != nil {
			err = &Fault{Kind: FaultInternal, Kernel: kernel,
				Msg: fmt.Sprintf("interpreter bug, please report: %v\n%s", r, debug.Stack())}
		}
	}()
	n := ls.nclusters()
	var ids [][3]int // the clusters, in grid order
	for z := 0; z < n[2]; z++ {
		for y := 0; y < n[1]; y++ {
			for x := 0; x < n[0]; x++ {
				ids = append(ids, [3]int{x, y, z})
			}
		}
	}
	if ls.coResident {
		var cls []*cluster
		for _, id := range ids {
			cls = append(cls, ls.newCluster(id))
		}
		f := ls.runTogether(cls)
		for _, cl := range cls {
			st.add(cl)
		}
		if f != nil {
			return st, f // a *Fault in an error only where there is one
		}
		return st, nil
	}
	// Clusters run one after another, in grid order; the CTAs of a
	// cluster run together.
	for _, id := range ids {
		cl := ls.newCluster(id)
		f := cl.run()
		st.add(cl)
		if f != nil {
			return st, f
		}
	}
	return st, nil
}

// add counts what the CTAs of cl executed.
func (st *Stats) add(cl *cluster) {
	for _, c := range cl.ctas {
		st.Instructions += c.threadInstr
		st.WarpInstructions += c.steps
		st.Barriers += c.barriers
		st.CTAs++
	}
}

// kernel is one compiled entry.
type kernel struct {
	name  string
	entry *ptx.Entry
	code  []inst // the body's instructions, then an implicit exit

	async    bool        // uses mbarriers or bulk copies: warps are interleaved
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
	k          *kernel
	mem        *Memory
	params     []byte
	grid       [3]int
	block      [3]int
	nthreads   int
	smemSize   int
	maxSteps   int64
	race       bool
	seed       uint64
	coResident bool    // Launch.CoResident: every cluster runs at once
	cshape     [3]int  // the cluster's CTAs in each dimension
	csize      int     // CTAs per cluster
	explicit   bool    // the entry declares its cluster shape
	async      bool    // the kernel uses mbarriers or bulk copies
	pool       []*warp // warps reused from cluster to cluster
	issued     []int64 // Launch.Profile: warp instructions issued at each instruction
}

func dim3(d [3]int) [3]int {
	for i := 1; i < 3; i++ {
		if d[i] == 0 {
			d[i] = 1
		}
	}
	return d
}

// prepare checks a launch as the driver would, and its contract against
// the entry, and lays out its parameters.
func (k *kernel) prepare(mem *Memory, l Launch) (*launchState, error) {
	c := l.Args.Launch()
	ls := &launchState{k: k, mem: mem, grid: dim3(l.Grid), block: [3]int{c.Block, 1, 1}, race: l.RaceCheck, maxSteps: l.MaxSteps,
		seed: l.Seed, coResident: l.CoResident, cshape: [3]int{1, 1, 1}, async: k.async}
	if ls.maxSteps <= 0 {
		ls.maxSteps = DefaultMaxSteps
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("emu: launch of %s: %s", k.name, fmt.Sprintf(format, args...))
	}
	if err := c.Check(); err != nil {
		return nil, fmt.Errorf("emu: %w", err) // names the kernel
	}
	if err := k.matches(c); err != nil {
		return nil, fmt.Errorf("emu: launch of %s: the contract is not the loaded kernel's: %w", k.name, err)
	}
	if err := l.Args.Check(); err != nil {
		return nil, fmt.Errorf("emu: %w", err)
	}
	if mem == nil {
		return nil, bad("no Memory")
	}
	for i := 0; i < 3; i++ {
		if ls.grid[i] < 1 {
			return nil, bad("grid %v must be positive", l.Grid)
		}
	}
	if r := k.entry.ReqNCTAPerCluster; r[0] != 0 {
		ls.cshape, ls.explicit = dim3(r), true
	}
	ls.csize = ls.cshape[0] * ls.cshape[1] * ls.cshape[2]
	for i := 0; i < 3; i++ {
		if ls.grid[i]%ls.cshape[i] != 0 {
			return nil, bad("grid %v is not a whole number of clusters of %d CTAs (%v)", ls.grid, c.Cluster, ls.cshape)
		}
	}
	if n := c.Cooperative; n > 0 {
		// As a driver refuses such a kernel a grid that cannot be resident:
		// run one cluster after another, it would spin until FaultSteps.
		if !l.CoResident {
			return nil, bad("its CTAs wait for each other in groups of %d (the contract's Cooperative): run it CoResident", n)
		}
		if ctas := ls.grid[0] * ls.grid[1] * ls.grid[2]; ctas%n != 0 {
			return nil, bad("grid %v is not a whole number of cooperative groups of %d CTAs", ls.grid, n)
		}
	}
	if e := k.entry; e.ExplicitCluster && e.ReqNCTAPerCluster[0] == 0 {
		return nil, bad(".explicitcluster without .reqnctapercluster: a launch contract has no cluster dimensions of its own")
	}
	ls.nthreads = c.Block
	if k.staticShared > maxStaticShared {
		return nil, bad("%d bytes of static shared memory, at most %d", k.staticShared, maxStaticShared)
	}
	if k.dynamicOff+c.SharedBytes > maxShared {
		return nil, bad("%d bytes of shared memory (%d static), at most %d", k.dynamicOff+c.SharedBytes, k.staticShared, maxShared)
	}
	ls.smemSize = k.dynamicOff + c.SharedBytes
	ls.params = make([]byte, k.paramSize)
	for i, v := range l.Args.Values() {
		p := k.entry.Params[i]
		off, n := k.paramOff[p], p.T.Bytes()
		for j := 0; j < n; j++ {
			ls.params[off+j] = byte(v >> (8 * j))
		}
	}
	return ls, nil
}

// matches reports how contract c differs from the entry: other parameters
// (names, types, pointer alignments, order), a block the entry's .reqntid
// or .maxntid forbids, or another cluster size.
func (k *kernel) matches(c *ptx.Launch) error {
	e := k.entry
	if !slices.EqualFunc(c.Params, e.Params, func(a ptx.Param, b *ptx.Param) bool { return a == *b }) {
		var entry []ptx.Param
		for _, p := range e.Params {
			entry = append(entry, *p)
		}
		return fmt.Errorf("parameters (%s), the entry's are (%s)", paramList(c.Params), paramList(entry))
	}
	if r := e.ReqNTID; r[0] != 0 && dim3(r) != [3]int{c.Block, 1, 1} {
		return fmt.Errorf("a block of %d threads, the entry's .reqntid is %v", c.Block, dim3(r))
	}
	if r := e.MaxNTID; r[0] != 0 {
		if r := dim3(r); c.Block > r[0]*r[1]*r[2] {
			return fmt.Errorf("a block of %d threads, above the entry's .maxntid %v", c.Block, r)
		}
	}
	cluster := 1
	if r := e.ReqNCTAPerCluster; r[0] != 0 {
		r := dim3(r)
		cluster = r[0] * r[1] * r[2]
	}
	if c.Cluster != cluster {
		return fmt.Errorf("clusters of %d CTAs, the entry's .reqnctapercluster makes %d", c.Cluster, cluster)
	}
	if c.Cooperative != e.Cooperative {
		return fmt.Errorf("cooperative groups of %d CTAs, the entry's are of %d", c.Cooperative, e.Cooperative)
	}
	return nil
}

// paramList is "name .type, ..." with each pointer's alignment.
func paramList(ps []ptx.Param) string {
	var s []string
	for _, p := range ps {
		t := p.Name + " ." + p.T.Name()
		if p.PtrAlign != 0 {
			t += fmt.Sprintf(" .ptr.global.align %d", p.PtrAlign)
		}
		s = append(s, t)
	}
	return strings.Join(s, ", ")
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
