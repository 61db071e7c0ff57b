package runtime

import (
	"slices"

	"github.com/gvr-go/gvr/gen"
)

// StandardKernel is a kernel whose PTX is embedded in the package (see
// generate.go): Device.Kernel loads it for exactly its Config without
// generating anything, which makes the first request faster.
type StandardKernel struct {
	Name        string     // the kernel (gen.Names)
	Config      gen.Config // exactly the configuration it was generated for
	File        string     // its file in the package directory: kernels/gvr_topk_k2048_sm_90.ptx
	PTX         string     // the text, as gen.Generate writes it
	Block       int        // threads per CTA
	SharedBytes int        // dynamic shared memory per CTA
	Params      []string   // its .param names, in order (each a .u64)
}

// StandardKernels lists the embedded kernels.
func StandardKernels() []StandardKernel {
	ks := slices.Clone(standardKernels)
	for i := range ks {
		ks[i].Params = slices.Clone(ks[i].Params)
	}
	return ks
}

type standardKey struct {
	name string
	cfg  gen.Config
}

var standardIndex = func() map[standardKey]*StandardKernel {
	m := make(map[standardKey]*StandardKernel, len(standardKernels))
	for i := range standardKernels {
		k := &standardKernels[i]
		m[standardKey{k.Name, k.Config}] = k
	}
	return m
}()

// LookupStandard returns the embedded kernel name for cfg, if cfg is
// exactly one of the standard configurations: the same K, buffer sizes,
// block size, bins and target, Unroll 0 (not an explicit 8, which would
// name another configuration in the PTX's header) and no instrumentation.
func LookupStandard(name string, cfg gen.Config) (StandardKernel, bool) {
	k, ok := standardIndex[standardKey{name, cfg}]
	if !ok {
		return StandardKernel{}, false
	}
	s := *k
	s.Params = slices.Clone(k.Params)
	return s, true
}
