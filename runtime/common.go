package runtime

// What both builds share: the errors, the device description, the element
// types of Upload and Download, and the choice of PTX target.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gvr-go/gvr/ptx"
)

// ErrNoCUDA is what every entry point returns in a build without the cuda
// tag.
var ErrNoCUDA = errors.New("gvr/runtime: built without CUDA support (-tags cuda)")

// Info describes a device.
type Info struct {
	Ordinal      int
	Name         string
	Major, Minor int // compute capability
	SMs          int // multiprocessors
	ClockKHz     int // SM clock (CU_DEVICE_ATTRIBUTE_CLOCK_RATE), to turn %clock64 cycles into time
	L2Bytes      int
	SharedOptin  int   // most dynamic shared memory one CTA may opt into, bytes
	TotalMem     int64 // bytes
	Driver       int   // CUDA driver version: 13000 is 13.0
	// Target is the PTX target gvr generates kernels for on this device, and
	// TargetNote says why it is not the device's own architecture, if it is
	// not (a device newer than every target gvr knows).
	Target     ptx.Target
	TargetNote string
}

func (i Info) String() string {
	s := fmt.Sprintf("device %d: %s, compute capability %d.%d, %d SMs, %d MB L2, driver %d.%d, target %s",
		i.Ordinal, i.Name, i.Major, i.Minor, i.SMs, i.L2Bytes>>20, i.Driver/1000, i.Driver%1000/10, i.Target.Name)
	if i.TargetNote != "" {
		s += " (" + i.TargetNote + ")"
	}
	return s
}

// TargetFor chooses the PTX target for a device of compute capability
// major.minor: the plain (not 'a' or 'f') target of that architecture, or,
// for an architecture newer than every target gvr knows, the newest older
// one, which the driver's JIT compiles forward (PTX is forward compatible);
// note then says so. Devices older than sm_80 are refused.
func TargetFor(major, minor int) (t ptx.Target, note string, err error) {
	sm := 10*major + minor
	var best ptx.Target
	for _, c := range ptx.Targets {
		if c.Suffix != 0 || c.SM > sm {
			continue
		}
		if c.SM == sm {
			return c, "", nil
		}
		if c.SM > best.SM {
			best = c
		}
	}
	if best.Name == "" {
		return ptx.Target{}, "", fmt.Errorf("gvr/runtime: compute capability %d.%d is not supported: gvr generates PTX for %s", major, minor, plainTargets())
	}
	return best, fmt.Sprintf("no %s target known: using %s PTX, which the driver JIT-compiles forward", smName(sm), best.Name), nil
}

func smName(sm int) string { return fmt.Sprintf("sm_%d", sm) }

func plainTargets() string {
	var names []string
	for _, t := range ptx.Targets {
		if t.Suffix == 0 {
			names = append(names, t.Name)
		}
	}
	return strings.Join(names, ", ")
}

// Elem is the element type of a host slice that Upload and Download copy.
type Elem interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// DriverError is a failed CUDA driver call.
type DriverError struct {
	Op   string // the driver call: "cuMemAlloc"
	Code int    // CUresult
	Name string // "CUDA_ERROR_OUT_OF_MEMORY"
	Msg  string // the driver's description
}

func (e *DriverError) Error() string {
	s := fmt.Sprintf("%s: %s (%d)", e.Op, e.Name, e.Code)
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// JITError is a module the driver's JIT compiler refused, with what the
// compiler (ptxas inside the driver) said.
type JITError struct {
	Kernel string // the entry
	Target string // the PTX target
	Device string
	Err    error  // the driver error
	Log    string // the JIT error log
	Info   string // the JIT info log
}

func (e *JITError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "gvr/runtime: JIT of kernel %s", e.Kernel)
	fmt.Fprintf(&b, " for %s on %s failed: %v", e.Target, e.Device, e.Err)
	if log := strings.TrimSpace(e.Log); log != "" {
		fmt.Fprintf(&b, "\nJIT error log:\n%s", log)
	} else {
		b.WriteString(" (the JIT error log is empty)")
	}
	if info := strings.TrimSpace(e.Info); info != "" {
		fmt.Fprintf(&b, "\nJIT info log:\n%s", info)
	}
	return b.String()
}

func (e *JITError) Unwrap() error { return e.Err }

// Resident reports whether grid CTAs of cluster kernel k can all be
// resident on its device at once (MaxActiveClusters of its clusters), as a
// cooperative launch of them needs (LaunchCooperative refuses any more).
func (k *Kernel) Resident(grid int) bool {
	return grid <= k.MaxActiveClusters*k.Contract.Cluster
}

// ResidentUnits reports whether units of k's work (LaunchUnits) can all
// be resident on its device at once, as LaunchUnits' cooperative launch
// of a kernel with cooperative groups needs.
func (k *Kernel) ResidentUnits(units int) bool { return k.Resident(units * k.unitCTAs()) }

// unitCTAs is the CTAs of a unit of k's work (LaunchUnits): a cooperative
// group where its contract declares one, else a cluster.
func (k *Kernel) unitCTAs() int {
	if c := k.Contract.Cooperative; c > 0 {
		return c
	}
	return k.Contract.Cluster
}

// launchKind names a launch with attributes (launchEx) by which it has:
// one of three constants, so that naming it allocates nothing.
func launchKind(dependent, cooperative bool, dep, coop, both string) string {
	switch {
	case dependent && cooperative:
		return both
	case cooperative:
		return coop
	}
	return dep
}

// sameContract reports how contract l departs from what the text declares.
func sameContract(declared, l ptx.Launch) error {
	if len(declared.Params) != len(l.Params) {
		return fmt.Errorf("%d parameters, the PTX declares %d", len(l.Params), len(declared.Params))
	}
	for i, p := range l.Params {
		if q := declared.Params[i]; p != q {
			return fmt.Errorf("parameter %d is %s .%s (align %d); the PTX declares %s .%s (align %d)",
				i, p.Name, p.T.Name(), p.PtrAlign, q.Name, q.T.Name(), q.PtrAlign)
		}
	}
	if declared.Block != 0 && declared.Block != l.Block {
		return fmt.Errorf("a block of %d threads; the PTX fixes %d", l.Block, declared.Block)
	}
	if declared.Cluster != l.Cluster {
		return fmt.Errorf("clusters of %d CTAs; the PTX declares %d", l.Cluster, declared.Cluster)
	}
	if declared.Cooperative != l.Cooperative {
		return fmt.Errorf("cooperative groups of %d CTAs; the PTX declares %d", l.Cooperative, declared.Cooperative)
	}
	if l.WaitsFirst && !declared.WaitsFirst {
		return fmt.Errorf("waits first for the kernel before it; the PTX does not start with griddepcontrol.wait")
	}
	return nil
}
