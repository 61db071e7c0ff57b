package golden

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
)

var update = flag.Bool("update", false, "rewrite the golden files from the generator and remove stale ones")

// targets are the architectures every kernel gets a golden file for.
var targets = []ptx.Target{ptx.SM80, ptx.SM90, ptx.SM100}

// extras are further configurations, each for the named kernels that the
// registry knows (the others are skipped until they land).
var extras = []struct {
	tag     string
	kernels []string
	edit    func(*gen.Config)
}{
	{
		// Small K: other buffer sizes, loop bounds and bin counts.
		tag:     "k256",
		kernels: []string{"gvr_topk", "topk_fallback"},
		edit: func(c *gen.Config) {
			c.K, c.MaxCandidates, c.BlockSize, c.Bins = 256, 1024, 256, 256
		},
	},
}

// goldenCase is one golden file: the kernel and configuration it holds.
type goldenCase struct {
	file   string // base name in this directory
	kernel string
	cfg    gen.Config
}

// cases lists every golden file the generator should produce, sorted by
// file name.
func cases() []goldenCase {
	var cs []goldenCase
	names := gen.Names()
	for _, name := range names {
		for _, t := range targets {
			cfg := gen.DefaultConfig()
			cfg.Target = t
			cs = append(cs, goldenCase{name + "_" + t.Name + ".ptx", name, cfg})
		}
	}
	for _, x := range extras {
		for _, name := range x.kernels {
			if !slices.Contains(names, name) {
				continue
			}
			for _, t := range targets {
				cfg := gen.DefaultConfig()
				x.edit(&cfg)
				cfg.Target = t
				cs = append(cs, goldenCase{name + "_" + x.tag + "_" + t.Name + ".ptx", name, cfg})
			}
		}
	}
	slices.SortFunc(cs, func(a, b goldenCase) int { return strings.Compare(a.file, b.file) })
	return cs
}

func generate(t *testing.T, c goldenCase) (*gen.Kernel, string) {
	t.Helper()
	k, err := gen.Generate(c.kernel, c.cfg)
	if err != nil {
		t.Fatalf("%s: %v", c.file, err)
	}
	return k, k.PTX()
}

func TestGolden(t *testing.T) {
	cs := cases()
	want := map[string]bool{}
	for _, c := range cs {
		if want[c.file] {
			t.Fatalf("two golden cases write %s", c.file)
		}
		want[c.file] = true
		t.Run(strings.TrimSuffix(c.file, ".ptx"), func(t *testing.T) {
			_, got := generate(t, c)
			old, err := os.ReadFile(c.file)
			if *update {
				if err != nil || string(old) != got {
					if err := os.WriteFile(c.file, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					t.Logf("wrote %s", c.file)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v (run go test ./golden -update)", err)
			}
			if d := cmp.Diff(strings.Split(string(old), "\n"), strings.Split(got, "\n")); d != "" {
				t.Errorf("%s differs from the generator (-file +generated); if the change is intended, run go test ./golden -update and review the diff:\n%s", c.file, d)
			}
		})
	}

	// Stale files: golden PTX for kernels or configurations no longer made.
	files, err := filepath.Glob("*.ptx")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if want[f] {
			continue
		}
		if *update {
			if err := os.Remove(f); err != nil {
				t.Error(err)
			}
			t.Logf("removed stale %s", f)
		} else {
			t.Errorf("%s is not produced by the generator any more: run go test ./golden -update", f)
		}
	}
}

// The file name ends in _<arch>.ptx, the way scripts/ptxas-check.sh reads it.
func TestFileNamesNameTheArch(t *testing.T) {
	re := regexp.MustCompile(`_(sm_[0-9]+[a-z]?)\.ptx$`)
	for _, c := range cases() {
		m := re.FindStringSubmatch(c.file)
		if m == nil || m[1] != c.cfg.Target.Name {
			t.Errorf("%s: ptxas-check would not read arch %s from the name", c.file, c.cfg.Target.Name)
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, c := range cases() {
		_, a := generate(t, c)
		_, b := generate(t, c)
		if a != b {
			t.Errorf("%s: two generations differ:\n%s", c.file,
				cmp.Diff(strings.Split(a, "\n"), strings.Split(b, "\n")))
		}
	}
}

var versionRE = regexp.MustCompile(`(?m)^\.version (\d+)\.(\d+)$`)

// The printed .version is the target's minimum, so the module loads on the
// oldest driver that knows the target, unless an instruction in it needs a
// newer ISA; then it is exactly what the most demanding instruction needs.
func TestVersionIsMinimal(t *testing.T) {
	for _, c := range cases() {
		if c.cfg.Target != ptx.SM80 && c.cfg.Target != ptx.SM90 {
			continue
		}
		k, text := generate(t, c)
		m := versionRE.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("%s: no .version line", c.file)
			continue
		}
		printed := m[1] + "." + m[2]
		needed := c.cfg.Target.MinPTX
		for _, e := range k.Module.Entries {
			if e.ReqNCTAPerCluster != (ptx.Dim3{}) && needed.Less(ptx.Version{Major: 7, Minor: 8}) {
				needed = ptx.Version{Major: 7, Minor: 8}
			}
			for _, s := range e.Body {
				if in, ok := s.(*ptx.Inst); ok {
					if _, v := in.Requires(); needed.Less(v) {
						needed = v
					}
				}
			}
		}
		if printed != needed.String() {
			t.Errorf("%s: .version %s, want %s (target %s minimum %s)", c.file, printed, needed,
				c.cfg.Target.Name, c.cfg.Target.MinPTX)
		}
		if printed != c.cfg.Target.MinPTX.String() {
			t.Logf("%s: .version %s raised above the %s minimum %s by its instructions", c.file, printed,
				c.cfg.Target.Name, c.cfg.Target.MinPTX)
		}
	}
}
