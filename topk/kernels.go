package topk

import (
	"fmt"
	"sync"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/runtime"
)

// The Top-K kernels are generated on first use, for the device's target,
// and JIT-loaded once per device and configuration: nothing is embedded
// and nothing needs go generate. The first use costs a generation (tens
// of milliseconds) and a JIT (about a second for gvr_topk on an H100; the
// driver keeps what it compiled in its disk cache, keyed by the PTX text,
// so a later process gets it in milliseconds; see the README).

type kernelKey struct {
	dev  *runtime.Device
	name string
	cfg  gen.Config
}

// kernelEntry is a kernel being loaded or loaded: ready closes when k or
// err is set.
type kernelEntry struct {
	ready chan struct{}
	k     *runtime.Kernel
	err   error
}

var kernels struct {
	sync.Mutex
	m map[kernelKey]*kernelEntry
}

// Kernel returns generator kernel name (gen.Names) for cfg on dev,
// generating and JIT-loading it on first use and returning the same
// kernel after that. A zero cfg.Target means the device's (Info.Target);
// an explicit target must be one the device can run. Concurrent requests
// for one kernel load it once; a failed load is not kept.
func Kernel(dev *runtime.Device, name string, cfg gen.Config) (*runtime.Kernel, error) {
	if dev == nil {
		return nil, fmt.Errorf("topk: kernel %s: no device", name)
	}
	if cfg.Target.Name == "" {
		cfg.Target = dev.Info().Target
	}
	key := kernelKey{dev, name, cfg}
	kernels.Lock()
	if kernels.m == nil {
		kernels.m = make(map[kernelKey]*kernelEntry)
	}
	e, found := kernels.m[key]
	if !found {
		e = &kernelEntry{ready: make(chan struct{})}
		kernels.m[key] = e
	}
	kernels.Unlock()
	if found {
		<-e.ready
		return e.k, e.err
	}
	e.k, e.err = load(dev, name, cfg)
	if e.err != nil {
		kernels.Lock()
		delete(kernels.m, key)
		kernels.Unlock()
	}
	close(e.ready)
	return e.k, e.err
}

// load generates kernel name for cfg and JIT-loads it on dev.
func load(dev *runtime.Device, name string, cfg gen.Config) (*runtime.Kernel, error) {
	gk, err := gen.Generate(name, cfg)
	if err != nil {
		return nil, fmt.Errorf("topk: %w", err)
	}
	k, err := dev.Load(gk.PTX(), gk.Launch)
	if err != nil {
		return nil, fmt.Errorf("topk: kernel %s (%v): %w", name, cfg, err)
	}
	return k, nil
}
