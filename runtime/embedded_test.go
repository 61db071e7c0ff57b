//go:build cuda

package runtime

import (
	"testing"
	"time"

	"github.com/gvr-go/gvr/ptx"
)

// counts are the device's load counters.
func counts(d *Device) (loads, generated int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.loads, d.generated
}

// TestEmbeddedKernels: Device.Kernel serves a standard configuration from
// the PTX embedded in the package, generating nothing, and generates any
// other configuration. It skips (a failure under scripts/gpu-run.sh) on a
// device whose target has no embedded kernels: there the embedded path is
// never taken.
func TestEmbeddedKernels(t *testing.T) {
	d := device(t)
	target := d.Info().Target
	var std []StandardKernel
	for _, s := range StandardKernels() {
		if s.Config.Target == target {
			std = append(std, s)
		}
	}
	if len(std) == 0 {
		t.Skipf("no embedded kernels for %s (%v): every kernel is generated on this device", target.Name, d)
	}
	for _, s := range std {
		cfg := s.Config
		cfg.Target = ptx.Target{} // the device's target
		_, genBefore := counts(d)
		start := time.Now()
		k, err := d.Kernel(s.Name, cfg)
		first := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if _, genAfter := counts(d); genAfter != genBefore {
			t.Errorf("%s %v: generated (%d kernels) instead of loading %s", s.Name, s.Config, genAfter-genBefore, s.File)
		}
		if !k.Embedded || k.Config != s.Config || k.NumParams != len(s.Params) || k.Block != s.Block || k.SharedBytes != s.SharedBytes {
			t.Errorf("%s %v: Embedded %v, config %v, %d params, %d threads, %d B shared; want %s's",
				s.Name, s.Config, k.Embedded, k.Config, k.NumParams, k.Block, k.SharedBytes, s.File)
		}
		t.Logf("%s: embedded: %d regs, %d B local, first Kernel call %v (JIT %v)",
			s.File, k.Regs, k.LocalBytes, first.Round(time.Millisecond), k.JITTime.Round(time.Millisecond))
	}

	// Not a standard configuration: generated, then JIT-loaded.
	cfg := std[0].Config
	cfg.K, cfg.MaxCandidates = 768, 2304
	loadsBefore, genBefore := counts(d)
	start := time.Now()
	k, err := d.Kernel(std[0].Name, cfg)
	first := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	loads, generated := counts(d)
	if k.Embedded || generated != genBefore+1 || loads != loadsBefore+1 {
		t.Errorf("%s %v: Embedded %v, %d generated, %d loaded; want generated and loaded once", std[0].Name, cfg,
			k.Embedded, generated-genBefore, loads-loadsBefore)
	}
	if _, ok := LookupStandard(std[0].Name, cfg); ok {
		t.Errorf("%v is standard", cfg)
	}
	t.Logf("%s K=768 %s: generated: %d regs, first Kernel call %v (JIT %v)",
		k.Name, target.Name, k.Regs, first.Round(time.Millisecond), k.JITTime.Round(time.Millisecond))

	// Instrumented kernels are never embedded.
	cfg = std[0].Config
	cfg.Instrument = true
	if k, err := d.Kernel(std[0].Name, cfg); err != nil || k.Embedded {
		t.Errorf("instrumented %s: Embedded %v, %v", std[0].Name, k != nil && k.Embedded, err)
	}
}
