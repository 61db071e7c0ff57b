//go:build cuda

package runtime

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"gorgonia.org/cu"

	"github.com/gvr-go/gvr/ptx"
)

// Kernel is a kernel loaded on a device: a JIT-compiled module's entry
// and the launch contract it was loaded with.
type Kernel struct {
	Contract ptx.Launch // the contract: entry, block, cluster, shared memory, parameters
	Target   string     // the PTX's .target
	// What the JIT made of it.
	Regs       int // registers per thread
	LocalBytes int // local memory per thread (spills)
	MaxThreads int // most threads per CTA it can launch with
	// MaxActiveClusters is, for a cluster kernel, how many of its clusters
	// the device holds at once (cuOccupancyMaxActiveClusters, asked at
	// load); 0 for a kernel without clusters.
	MaxActiveClusters int
	InfoLog           string // the JIT's info log (ptxas -v)
	JITTime           time.Duration

	dev *Device
	mod cu.Module
	fn  cu.Function
}

// Load JIT-compiles PTX text for d and returns its entry l.Entry, launched
// by contract l (which a generator returns with its kernel). The contract
// is checked against the text's own declarations (ptx.LaunchOf): the same
// parameters, names, types and alignment, the same block and cluster where
// the text fixes them. A module the JIT refuses gives a *JITError holding
// the compiler's logs. Nothing is cached: each call compiles and loads a
// module (the driver keeps compiled PTX in its own disk cache, keyed by
// the text); callers keep the Kernel.
func (d *Device) Load(text string, l ptx.Launch) (*Kernel, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("gvr/runtime: kernel %s on %v: %s", l.Entry, d, fmt.Sprintf(format, args...))
	}
	if err := l.Check(); err != nil {
		return nil, fail("%v", err)
	}
	m, err := ptx.Parse(text)
	if err != nil {
		return nil, fail("reading the PTX: %v", err)
	}
	declared, err := ptx.LaunchOf(m, l.Entry, l.SharedBytes)
	if err != nil {
		return nil, fail("%v", err)
	}
	if err := sameContract(declared, l); err != nil {
		return nil, fail("the contract does not match the PTX: %v", err)
	}
	if err := d.canRun(m.Target); err != nil {
		return nil, fail("%v", err)
	}
	if l.SharedBytes > d.info.SharedOptin {
		return nil, fail("needs %d bytes of dynamic shared memory; the device allows %d per block", l.SharedBytes, d.info.SharedOptin)
	}
	if l.Cluster > 1 && d.info.Major < 9 {
		return nil, fail("clusters of %d CTAs need compute capability 9.0; the device has %d.%d", l.Cluster, d.info.Major, d.info.Minor)
	}
	if err := d.bind(); err != nil {
		return nil, err
	}
	defer d.unbind()

	errLog, infoLog := make([]byte, logBytes), make([]byte, logBytes)
	start := time.Now()
	mod, err := cu.LoadDataEx(text,
		&cu.JITErrorLogBuffer{Buffer: errLog},
		&cu.JITInfoLogBuffer{Buffer: infoLog},
		&cu.JITLogVerbose{Enabled: true})
	jit := time.Since(start)
	if err != nil {
		return nil, &JITError{Kernel: l.Entry, Target: m.Target.Name, Device: d.String(),
			Err: driverErr("cuModuleLoadDataEx", err), Log: cString(errLog), Info: cString(infoLog)}
	}
	k := &Kernel{Contract: l, Target: m.Target.Name, InfoLog: strings.TrimSpace(cString(infoLog)), JITTime: jit, dev: d, mod: mod}
	if err := k.setup(); err != nil {
		mod.Unload()
		return nil, fail("%v", err)
	}
	return k, nil
}

// LoadPTX is Load with the contract the text declares (ptx.LaunchOf):
// for PTX from elsewhere, whose entry fixes its block (.reqntid or
// .maxntid). Dynamic shared memory is not in the text: sharedBytes gives it.
func (d *Device) LoadPTX(text, entry string, sharedBytes int) (*Kernel, error) {
	m, err := ptx.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("gvr/runtime: kernel %s on %v: reading the PTX: %w", entry, d, err)
	}
	l, err := ptx.LaunchOf(m, entry, sharedBytes)
	if err != nil {
		return nil, fmt.Errorf("gvr/runtime: kernel %s on %v: %w", entry, d, err)
	}
	return d.Load(text, l)
}

// canRun reports whether PTX for t can be JIT-compiled for this device:
// a plain target of the same or an older architecture, or an 'a'/'f'
// target of exactly this one.
func (d *Device) canRun(t ptx.Target) error {
	sm := 10*d.info.Major + d.info.Minor
	if t.SM > sm || (t.Suffix != 0 && t.SM != sm) {
		return fmt.Errorf("%s PTX cannot run on %v (compute capability %d.%d, target %s)",
			t.Name, d, d.info.Major, d.info.Minor, d.info.Target.Name)
	}
	return nil
}

// logBytes is the size of each JIT log buffer.
const logBytes = 1 << 16

// setup finds the entry, opts it into its dynamic shared memory (and a
// non-portable cluster size) and reads what the JIT made of it (with the
// context bound).
func (k *Kernel) setup() error {
	var err error
	if k.fn, err = k.mod.Function(k.Contract.Entry); err != nil {
		return fmt.Errorf("entry not found in the module: %w", driverErr("cuModuleGetFunction", err))
	}
	// Above 48 KB dynamic shared memory needs the opt-in; below, it is
	// harmless, so every kernel gets it.
	if k.Contract.SharedBytes > 0 {
		if err := setMaxDynamicShared(k.fn, k.Contract.SharedBytes); err != nil {
			return fmt.Errorf("opting into %d bytes of dynamic shared memory: %w", k.Contract.SharedBytes, err)
		}
	}
	if k.Contract.NonPortableCluster {
		if err := allowNonPortableCluster(k.fn); err != nil {
			return fmt.Errorf("allowing clusters of %d CTAs: %w", k.Contract.Cluster, err)
		}
	}
	for _, a := range []struct {
		a cu.FunctionAttribute
		v *int
	}{{cu.NumRegs, &k.Regs}, {cu.LocalSizeBytes, &k.LocalBytes}, {cu.FnMaxThreadsPerBlock, &k.MaxThreads}} {
		if *a.v, err = k.fn.Attribute(a.a); err != nil {
			return driverErr("cuFuncGetAttribute", err)
		}
	}
	if k.MaxThreads < k.Contract.Block {
		return fmt.Errorf("cannot launch %d threads per CTA: with %d registers per thread the device allows %d",
			k.Contract.Block, k.Regs, k.MaxThreads)
	}
	if c := k.Contract.Cluster; c > 1 {
		// A cluster the device can never hold would make a launch fail
		// late, or wait forever: ask once, here, before any launch.
		if k.MaxActiveClusters, err = maxActiveClusters(k.fn, c, k.Contract.Block, k.Contract.SharedBytes); err != nil {
			return fmt.Errorf("asking how many clusters of %d CTAs fit: %w", c, err)
		}
		if k.MaxActiveClusters < 1 {
			return fmt.Errorf("the device can never schedule a cluster of %d CTAs of %d threads, %d registers and %d B of shared memory each",
				c, k.Contract.Block, k.Regs, k.Contract.SharedBytes)
		}
	}
	return nil
}

// Device is the device k is loaded on.
func (k *Kernel) Device() *Device { return k.dev }

// Name is the kernel's entry name.
func (k *Kernel) Name() string { return k.Contract.Entry }

func (k *Kernel) String() string {
	return fmt.Sprintf("%s: %d threads, %d B shared, %d regs, %d B local, JIT %v",
		k.Contract.Entry, k.Contract.Block, k.Contract.SharedBytes, k.Regs, k.LocalBytes, k.JITTime.Round(time.Millisecond))
}

// Args makes an argument set for k's parameters, to set by name (see
// ptx.Args): make it once, and set what changes before each launch.
func (k *Kernel) Args() *ptx.Args { return k.Contract.Args() }

// Launch queues k on s (nil: the default stream) with grid CTAs (a whole
// number of clusters for a cluster kernel) and arguments a, whose values
// are copied when Launch is called. It checks before anything is queued
// that a is for k's parameters, every one set, and every pointer aligned
// as the kernel needs (a misaligned address would fault the kernel and
// end the process's CUDA context). Launch does not allocate.
func (k *Kernel) Launch(s *Stream, grid int, a *ptx.Args) error {
	return k.launch(s, grid, a, false, false)
}

// LaunchDependent is Launch as a programmatic dependent launch (sm_90+):
// k's CTAs may be scheduled while the kernel before it on s still runs,
// once that kernel lets them (griddepcontrol.launch_dependents, which
// gen's GVR kernels with Config.DependentLaunch issue in Phase 4), and
// they wait in their first instruction until it has ended and its memory
// is visible (griddepcontrol.wait: the contract's WaitsFirst). The
// results are Launch's; the gap between the two kernels, a launch's
// latency, is hidden. After anything but a kernel on s (a copy, an
// event), it is a plain launch. k's contract must have WaitsFirst (else k
// could read what the kernel before it has not yet written), and the
// device compute capability 9.0.
func (k *Kernel) LaunchDependent(s *Stream, grid int, a *ptx.Args) error {
	return k.launch(s, grid, a, true, false)
}

// LaunchCooperative is Launch, or with dependent LaunchDependent, as a
// cooperative launch: every CTA of the grid is resident on the device at
// once, or the launch fails (the driver's error, before anything runs).
// A kernel whose CTAs or clusters wait for each other through global
// memory needs it: launched plainly, the ones resident first could spin
// for others that wait for them to end, whenever other work holds part of
// the device. Such a kernel says so in its contract (ptx.Launch's
// Cooperative), and Launch and LaunchDependent refuse it.
func (k *Kernel) LaunchCooperative(s *Stream, grid int, a *ptx.Args, dependent bool) error {
	return k.launch(s, grid, a, dependent, true)
}

// LaunchUnits queues units of k's work on s: a unit is the CTAs that work
// on one item together, a cooperative group of Contract.Cooperative CTAs
// where the contract declares one (launched with LaunchCooperative, every
// group resident at once), else a cluster of Contract.Cluster (one CTA
// for a kernel without clusters), launched with Launch, or with
// LaunchDependent where dependent is set. It is the launch a caller
// whose grid is so many items (rows, say) of a kernel it did not build
// itself needs, without knowing how the kernel's CTAs wait for each other.
func (k *Kernel) LaunchUnits(s *Stream, units int, a *ptx.Args, dependent bool) error {
	per := k.unitCTAs()
	if units < 1 || units > (1<<31-1)/per {
		return fmt.Errorf("gvr/runtime: launch of %s: %d units of %d CTAs: must be 1 to (2^31-1)/%d", k.Contract.Entry, units, per, per)
	}
	return k.launch(s, units*per, a, dependent, k.Contract.Cooperative > 0)
}

func (k *Kernel) launch(s *Stream, grid int, a *ptx.Args, dependent, cooperative bool) error {
	l := &k.Contract
	if dependent && !l.WaitsFirst {
		return fmt.Errorf("gvr/runtime: dependent launch of %s: the kernel does not start with griddepcontrol.wait", l.Entry)
	}
	if dependent && k.dev.info.Major < 9 {
		return fmt.Errorf("gvr/runtime: dependent launch of %s: needs compute capability 9.0; %v has %d.%d",
			l.Entry, k.dev, k.dev.info.Major, k.dev.info.Minor)
	}
	if a == nil {
		return fmt.Errorf("gvr/runtime: launch of %s: no arguments", l.Entry)
	}
	if a.Launch() != l {
		if err := sameContract(*l, *a.Launch()); err != nil || a.Launch().Entry != l.Entry {
			return fmt.Errorf("gvr/runtime: launch of %s: the arguments are for %s: %v", l.Entry, a.Launch().Entry, err)
		}
	}
	if err := a.Check(); err != nil {
		return fmt.Errorf("gvr/runtime: launch of %s: %w", l.Entry, err)
	}
	if grid < 1 || grid > 1<<31-1 {
		return fmt.Errorf("gvr/runtime: launch of %s: %d CTAs: must be 1 to 2^31-1", l.Entry, grid)
	}
	if grid%l.Cluster != 0 {
		return fmt.Errorf("gvr/runtime: launch of %s: %d CTAs are not a whole number of clusters of %d", l.Entry, grid, l.Cluster)
	}
	if c := l.Cooperative; c > 0 {
		// Launched plainly, or with a group cut short, its first CTAs would
		// spin for ones that never come: the stream would never drain.
		if !cooperative {
			return fmt.Errorf("gvr/runtime: launch of %s: its CTAs wait for each other in groups of %d: launch it with LaunchCooperative or LaunchUnits", l.Entry, c)
		}
		if grid%c != 0 {
			return fmt.Errorf("gvr/runtime: launch of %s: %d CTAs are not a whole number of cooperative groups of %d", l.Entry, grid, c)
		}
	}
	if err := s.check(k.dev); err != nil {
		return err
	}
	if err := k.dev.bind(); err != nil {
		return err
	}
	defer k.dev.unbind()
	if dependent || cooperative {
		if err := launchEx(k.fn, grid, l.Block, l.SharedBytes, s.handle(), a.Pointers(), dependent, cooperative); err != nil {
			return fmt.Errorf("gvr/runtime: %s launch of %s (%d CTAs of %d threads, %d B shared) on %v: %w",
				launchKind(dependent, cooperative, "dependent", "cooperative", "cooperative dependent"),
				l.Entry, grid, l.Block, l.SharedBytes, k.dev, err)
		}
		return nil
	}
	if err := k.fn.Launch(grid, 1, 1, l.Block, 1, 1, l.SharedBytes, s.handle(), a.Pointers()); err != nil {
		return fmt.Errorf("gvr/runtime: launch of %s (%d CTAs of %d threads, %d B shared) on %v: %w",
			l.Entry, grid, l.Block, l.SharedBytes, k.dev, driverErr("cuLaunchKernel", err))
	}
	return nil
}

// cString is the text before the first NUL of a buffer the driver filled.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
