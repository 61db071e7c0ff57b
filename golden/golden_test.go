package golden

import (
	"flag"
	"fmt"
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

// goldenTarget is the target every kernel has a golden file for. The
// other device targets' PTX differs from it only in its header
// (TestOtherTargetsDifferOnlyInHeader), so one file per kernel shows a
// reviewer every change.
var goldenTarget = ptx.SM90

// shuffleTarget has redux.sync on none of its paths: warp_reduce's golden
// file for it shows the shuffle fallback the other kernels use there too.
var shuffleTarget = ptx.SM75

// deviceTargets are the targets runtime.TargetFor picks for a device.
var deviceTargets = []ptx.Target{ptx.SM80, ptx.SM86, ptx.SM89, ptx.SM90, ptx.SM100, ptx.SM120}

// goldenCase is one golden file: the kernel and configuration it holds.
type goldenCase struct {
	file   string // base name in this directory
	kernel string
	cfg    gen.Config
}

// configFor is the default configuration on target t.
func configFor(t ptx.Target) gen.Config {
	cfg := gen.DefaultConfig()
	cfg.Target = t
	return cfg
}

// cases lists every golden file the generator should produce, sorted by
// file name: each kernel of the registry on goldenTarget, and warp_reduce
// on shuffleTarget.
func cases() []goldenCase {
	var cs []goldenCase
	for _, name := range gen.Names() {
		cfg := configFor(goldenTarget)
		if gen.IsClusterKernel(name) {
			cfg.Cluster = 8 // what the selector runs most: the code of a cluster, not of a lone CTA
		}
		cs = append(cs, goldenCase{name + "_" + goldenTarget.Name + ".ptx", name, cfg})
	}
	cs = append(cs, goldenCase{"warp_reduce_" + shuffleTarget.Name + ".ptx", "warp_reduce", configFor(shuffleTarget)})
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

// minPTX is the lowest .version of each golden target, written out from
// ../shared/PTX-FACTS.md §1 (the PTX ISA notes of .target), not read from
// package ptx: the test compares the printer with the facts.
var minPTX = map[string]string{
	"sm_75":  "6.3",
	"sm_80":  "7.0",
	"sm_86":  "7.1",
	"sm_89":  "7.8",
	"sm_90":  "7.8",
	"sm_100": "8.6",
	"sm_120": "8.7",
}

// raises are instructions and directives whose minimum ISA is above some
// golden target's, from PTX-FACTS.md §2-5: a line of a kernel matching re
// needs at least version. The golden kernels use none of them today; if one
// does, the printed .version must rise to it, and no further.
var raises = []struct {
	re      *regexp.Regexp
	version string
}{
	{regexp.MustCompile(`^\.reqnctapercluster `), "7.8"},
	{regexp.MustCompile(`\bbarrier\.cluster\.`), "7.8"},
	{regexp.MustCompile(`\bbarrier\.cluster\.(arrive\.(release|relaxed)|wait\.acquire)\b`), "8.0"},
	{regexp.MustCompile(`\bmapa\b`), "7.8"},
	{regexp.MustCompile(`\bfence\.[a-z_]+\.cluster\b`), "7.8"},
	{regexp.MustCompile(`::cluster\b`), "7.8"},
	{regexp.MustCompile(`\bgriddepcontrol\.`), "7.8"},
	{regexp.MustCompile(`\bmbarrier\.try_wait\b`), "7.8"},
	{regexp.MustCompile(`\bmbarrier\.arrive\.expect_tx\b`), "8.0"},
	{regexp.MustCompile(`\bcp\.async\.bulk\b`), "8.0"},
	{regexp.MustCompile(`\bredux\.sync\.[a-zN.]*(\.abs|\.NaN|\.f32)\b`), "8.6"},
	{regexp.MustCompile(`\.v8\.f32\b`), "8.8"},
}

// versionLess compares "major.minor" strings as versions (7.10 > 7.8).
func versionLess(t *testing.T, a, b string) bool {
	t.Helper()
	var am, an, bm, bn int
	if _, err := fmt.Sscanf(a+" "+b, "%d.%d %d.%d", &am, &an, &bm, &bn); err != nil {
		t.Fatalf("versions %q, %q: %v", a, b, err)
	}
	return am < bm || am == bm && an < bn
}

func printedVersion(t *testing.T, file, text string) string {
	t.Helper()
	m := versionRE.FindAllStringSubmatch(text, -1)
	if len(m) != 1 {
		t.Fatalf("%s: %d .version lines, want 1", file, len(m))
	}
	return m[0][1] + "." + m[0][2]
}

// The printed .version is the target's minimum from PTX-FACTS.md, so the
// module loads on the oldest driver that knows the target, unless a line
// of the kernel needs a newer ISA; then it is exactly the most demanding
// line's minimum.
func TestVersionIsMinimal(t *testing.T) {
	checked := 0
	for _, tg := range append([]ptx.Target{shuffleTarget}, deviceTargets...) {
		want0, ok := minPTX[tg.Name]
		if !ok {
			t.Errorf("target %s is not in minPTX: add its minimum .version from PTX-FACTS.md", tg.Name)
			continue
		}
		for _, name := range kernelsWithGoldens {
			k, err := gen.Generate(name, configFor(tg))
			if err != nil {
				t.Fatalf("%s on %s: %v", name, tg.Name, err)
			}
			text := k.PTX()
			want, why := want0, "the "+tg.Name+" minimum"
			for _, l := range strings.Split(text, "\n") {
				l = strings.TrimSpace(l)
				for _, r := range raises {
					if r.re.MatchString(l) && versionLess(t, want, r.version) {
						want, why = r.version, fmt.Sprintf("%q needs it", l)
					}
				}
			}
			if got := printedVersion(t, name+" on "+tg.Name, text); got != want {
				t.Errorf("%s on %s: .version %s, want %s (%s)", name, tg.Name, got, want, why)
			}
			checked++
		}
	}
	if want := (1 + len(deviceTargets)) * len(kernelsWithGoldens); checked != want {
		t.Errorf("checked %d kernels and targets, want %d", checked, want)
	}
}

// The golden file of each kernel is its PTX on every device target, but for
// the header: the configuration comment, .version and .target. A change
// that makes some target's body differ fails here; that target then needs
// golden files of its own (add it to cases).
func TestOtherTargetsDifferOnlyInHeader(t *testing.T) {
	for _, name := range kernelsWithGoldens {
		file := name + "_" + goldenTarget.Name + ".ptx"
		golden, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (regenerate golden/ with: go test ./golden -update)", err)
		}
		gl := strings.Split(string(golden), "\n")
		for _, tg := range deviceTargets {
			if tg == goldenTarget {
				continue
			}
			k, err := gen.Generate(name, configFor(tg))
			if err != nil {
				t.Fatal(err)
			}
			kl := strings.Split(k.PTX(), "\n")
			if len(kl) != len(gl) {
				t.Errorf("%s on %s: %d lines, %s has %d: the body differs by target (give %s golden files)", name, tg.Name, len(kl), file, len(gl), tg.Name)
				continue
			}
			var diff []string
			for i := range kl {
				if kl[i] != gl[i] {
					diff = append(diff, kl[i])
				}
			}
			want := []string{"// config: " + configFor(tg).String()}
			if minPTX[tg.Name] != minPTX[goldenTarget.Name] {
				want = append(want, ".version "+minPTX[tg.Name])
			}
			want = append(want, ".target "+tg.Name)
			if !slices.Equal(diff, want) {
				t.Errorf("%s on %s differs from %s in the lines\n%s\nwant only the header lines\n%s",
					name, tg.Name, file, strings.Join(diff, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}

// An instruction newer than the target's minimum, added to a real kernel,
// raises the printed .version exactly to the instruction's minimum
// (PTX-FACTS.md §3: barrier.cluster's .release and .acquire need PTX 8.0);
// on a target whose minimum is already higher it changes nothing.
func TestVersionRaisedByInstruction(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target ptx.Target
		add    func(e *ptx.Entry)
		want   string
	}{
		{"nothing", ptx.SM90, func(e *ptx.Entry) {}, "7.8"},
		{".reqnctapercluster (7.8)", ptx.SM90, func(e *ptx.Entry) { e.ReqNCTAPerCluster = ptx.Dim3{2, 1, 1} }, "7.8"},
		{"barrier.cluster.arrive (7.8)", ptx.SM90, func(e *ptx.Entry) { e.Emit("barrier", []string{"cluster", "arrive", "aligned"}) }, "7.8"},
		{"barrier.cluster.arrive.release (8.0)", ptx.SM90, func(e *ptx.Entry) {
			e.Emit("barrier", []string{"cluster", "arrive", "release", "aligned"})
		}, "8.0"},
		{"barrier.cluster.wait.acquire (8.0)", ptx.SM90, func(e *ptx.Entry) {
			e.Emit("barrier", []string{"cluster", "wait", "acquire", "aligned"})
		}, "8.0"},
		{"barrier.cluster.arrive.release (8.0)", ptx.SM100, func(e *ptx.Entry) {
			e.Emit("barrier", []string{"cluster", "arrive", "release", "aligned"})
		}, "8.6"},
	} {
		cfg := gen.DefaultConfig()
		cfg.Target = tc.target
		k, err := gen.Generate("gvr_topk", cfg)
		if err != nil {
			t.Fatal(err)
		}
		e := k.Module.Entries[0]
		n := len(e.Body)
		tc.add(e)
		if len(e.Body) > n { // put the instruction first, before the body's ret
			e.Body = append(e.Body[n:], e.Body[:n]...)
		}
		if err := k.Module.Build(); err != nil {
			t.Fatalf("gvr_topk on %s with %s: %v", tc.target.Name, tc.name, err)
		}
		if got := printedVersion(t, "gvr_topk", ptx.Text(k.Module)); got != tc.want {
			t.Errorf("gvr_topk on %s with %s: .version %s, want %s", tc.target.Name, tc.name, got, tc.want)
		}
	}
}

// kernelsWithGoldens are the kernels the README promises golden PTX for,
// written out: a kernel that drops out of the registry would otherwise take
// its golden files with it (go test ./golden -update removes them) and
// leave every test green.
var kernelsWithGoldens = []string{"block_scan", "count_ge", "gvr_topk", "topk_fallback", "topk_radix", "warp_reduce"}

// The golden files on disk are exactly those the generator should produce:
// none missing, none stray, and every promised kernel among them.
func TestGoldenFileSet(t *testing.T) {
	names := gen.Names()
	for _, k := range kernelsWithGoldens {
		if !slices.Contains(names, k) {
			t.Errorf("kernel %s is not in the registry (gen.Names() = %v)", k, names)
		}
	}
	want := map[string]bool{}
	for _, c := range cases() {
		want[c.file] = true
	}
	if n := len(names) + 1; len(want) != n {
		t.Errorf("%d golden files, want %d (every kernel on %s, and warp_reduce on %s): two cases share a file",
			len(want), n, goldenTarget.Name, shuffleTarget.Name)
	}
	files, err := filepath.Glob("*.ptx")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range files {
		have[f] = true
		if !want[f] {
			t.Errorf("stray golden file %s: the generator makes no such kernel (go test ./golden -update removes it)", f)
		}
	}
	for f := range want {
		if !have[f] {
			t.Errorf("missing golden file %s (go test ./golden -update writes it)", f)
		}
	}
}
