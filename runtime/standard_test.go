package runtime

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
)

// inPackageDir is whether the tests run in the package's directory, as go
// test runs them, where kernels/ is. A test binary built with go test -c
// and run elsewhere (scripts/gpu-run.sh runs it from the repository root)
// checks the embedded text, not the files.
var inPackageDir = func() bool {
	_, err := os.Stat("generate.go")
	return err == nil
}()

// The embedded kernels must be what the generators write now: this test
// catches a stale kernels/ directory before CI's generate-check does (run
// go generate ./... to fix it).
func TestStandardKernelsUpToDate(t *testing.T) {
	for _, s := range StandardKernels() {
		t.Run(strings.TrimSuffix(path.Base(s.File), ".ptx"), func(t *testing.T) {
			t.Parallel()
			k, err := gen.Generate(s.Name, s.Config)
			if err != nil {
				t.Fatal(err)
			}
			if s.PTX != k.PTX() {
				t.Errorf("%s is not what gen.Generate(%q, %v) writes now: run go generate ./...", s.File, s.Name, s.Config)
			}
			if s.Block != k.Block || s.SharedBytes != k.SharedBytes {
				t.Errorf("%s: table says %d threads and %d B shared, the generator %d and %d: run go generate ./...",
					s.File, s.Block, s.SharedBytes, k.Block, k.SharedBytes)
			}
			var params []string
			for _, p := range k.Module.Entries[0].Params {
				params = append(params, p.Name)
			}
			if !slices.Equal(s.Params, params) {
				t.Errorf("%s: table says parameters %v, the generator %v: run go generate ./...", s.File, s.Params, params)
			}
			// The file and the embedded text are the same (go:embed of the
			// file named in the table).
			if !inPackageDir {
				return
			}
			data, err := os.ReadFile(filepath.FromSlash(s.File))
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != s.PTX {
				t.Errorf("%s differs from the embedded text", s.File)
			}
		})
	}
}

// The standard set: both Top-K kernels for K = 512, 1024, 2048 on sm_80,
// sm_90 and sm_100, in the configuration topk.Selector asks for by
// default, each file named after its kernel, K and target.
func TestStandardSet(t *testing.T) {
	ks := StandardKernels()
	if len(ks) != 18 {
		t.Errorf("%d standard kernels, want 18", len(ks))
	}
	if !inPackageDir {
		t.Log("not run in runtime/: the files in kernels/ are not checked")
	} else {
		files, err := filepath.Glob("kernels/*.ptx")
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != len(ks) {
			t.Errorf("kernels/ holds %d .ptx files, the table %d: run go generate ./...", len(files), len(ks))
		}
	}
	for _, name := range []string{"gvr_topk", "topk_fallback"} {
		for _, k := range []int{512, 1024, 2048} {
			for _, tg := range []ptx.Target{ptx.SM80, ptx.SM90, ptx.SM100} {
				cfg := gen.DefaultConfig()
				cfg.K, cfg.MaxCandidates, cfg.Target = k, 3*k, tg
				s, ok := LookupStandard(name, cfg)
				if !ok {
					t.Errorf("%s %v: not standard", name, cfg)
					continue
				}
				if want := fmt.Sprintf("kernels/%s_k%d_%s.ptx", name, k, tg.Name); s.File != want {
					t.Errorf("%s %v: file %s, want %s", name, cfg, s.File, want)
				}
				if s.Name != name || s.Config != cfg {
					t.Errorf("LookupStandard(%s, %v) = %s %v", name, cfg, s.Name, s.Config)
				}
			}
		}
	}
}

// Only an exact configuration is standard: anything else is generated.
func TestLookupStandardExact(t *testing.T) {
	std := gen.DefaultConfig()
	std.Target = ptx.SM90
	if _, ok := LookupStandard("gvr_topk", std); !ok {
		t.Fatalf("gvr_topk %v is not standard", std)
	}
	for name, edit := range map[string]func(c *gen.Config){
		"K=256":              func(c *gen.Config) { c.K, c.MaxCandidates = 256, 768 },
		"MaxCandidates":      func(c *gen.Config) { c.MaxCandidates++ },
		"BlockSize":          func(c *gen.Config) { c.BlockSize = 256 },
		"Bins":               func(c *gen.Config) { c.Bins = 1024 },
		"Unroll=8 (default)": func(c *gen.Config) { c.Unroll = 8 },
		"Instrument":         func(c *gen.Config) { c.Instrument = true },
		"sm_90a":             func(c *gen.Config) { c.Target = ptx.SM90a },
		"sm_120":             func(c *gen.Config) { c.Target = ptx.SM120 },
		"no target":          func(c *gen.Config) { c.Target = ptx.Target{} },
	} {
		c := std
		edit(&c)
		if _, ok := LookupStandard("gvr_topk", c); ok {
			t.Errorf("%s: %v is standard", name, c)
		}
	}
	if _, ok := LookupStandard("topk_radix", std); ok {
		t.Error("topk_radix is standard")
	}
	// The lookup hands out copies.
	s, _ := LookupStandard("gvr_topk", std)
	s.Params[0] = "changed"
	if s2, _ := LookupStandard("gvr_topk", std); s2.Params[0] != "scores" {
		t.Error("LookupStandard shares its Params with the caller")
	}
}

// Each typed launcher's parameters are those of its kernel, for every
// standard configuration.
func TestLauncherParams(t *testing.T) {
	if len(launcherParams) != 2 {
		t.Errorf("launchers for %d kernels, want gvr_topk and topk_fallback", len(launcherParams))
	}
	for _, s := range StandardKernels() {
		if want, ok := launcherParams[s.Name]; !ok || !slices.Equal(s.Params, want) {
			t.Errorf("%s: launcher parameters %v, the kernel's %v", s.File, want, s.Params)
		}
	}
}
