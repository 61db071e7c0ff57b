package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
)

// ptxgen runs the command with args and returns its status, stdout and
// stderr.
func ptxgen(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	status := run(args, &out, &errb)
	return status, out.String(), errb.String()
}

func wantLines(t *testing.T, text string, lines ...string) {
	t.Helper()
	have := strings.Split(text, "\n")
	for _, l := range lines {
		if !slices.Contains(have, l) {
			t.Errorf("output lacks the line %q", l)
		}
	}
}

func TestDefault(t *testing.T) {
	status, out, errs := ptxgen(t)
	if status != 0 {
		t.Fatalf("status %d, stderr %q", status, errs)
	}
	wantLines(t, out, ".version 8.6", ".target sm_100", ".address_size 64")
	if !strings.Contains(out, "\n.visible .entry ") {
		t.Errorf("no .visible .entry in the output:\n%s", out)
	}
	// The default configuration is the paper's.
	def := gen.DefaultConfig()
	if !strings.Contains(out, "config: "+def.String()+"\n") {
		t.Errorf("header does not name the default config %q", def.String())
	}
	// The default kernel is gvr_topk, printed without a note. (ptxgen
	// falls back to count_ge with a note when the registry lacks gvr_topk;
	// the registry has it, so that would be a failure here.)
	if !slices.Contains(gen.Names(), "gvr_topk") {
		t.Errorf("gvr_topk is not in the registry: %v", gen.Names())
	}
	if errs != "" {
		t.Errorf("stderr %q, want nothing", errs)
	}
	if !strings.Contains(out, "// kernel gvr_topk:") || !strings.Contains(out, "\n.visible .entry gvr_topk(") {
		t.Error("default kernel is not gvr_topk")
	}
}

func TestArch(t *testing.T) {
	for _, tc := range []struct{ arch, version string }{
		{"sm_80", "7.0"},
		{"sm_90", "7.8"},
		{"sm_100", "8.6"},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			status, out, errs := ptxgen(t, "-arch", tc.arch, "-kernel", "count_ge")
			if status != 0 || errs != "" {
				t.Fatalf("status %d, stderr %q", status, errs)
			}
			wantLines(t, out, ".version "+tc.version, ".target "+tc.arch)
		})
	}
}

func TestExplicitKernelNoNote(t *testing.T) {
	for _, name := range gen.Names() {
		status, out, errs := ptxgen(t, "-kernel", name)
		if status != 0 || errs != "" {
			t.Errorf("-kernel %s: status %d, stderr %q", name, status, errs)
			continue
		}
		if !strings.Contains(out, ".visible .entry "+name+"(") {
			t.Errorf("-kernel %s: entry not printed", name)
		}
	}
}

func TestFlagsReachConfig(t *testing.T) {
	status, out, errs := ptxgen(t, "-kernel", "count_ge", "-k", "256", "-max-candidates", "1024",
		"-block", "256", "-bins", "256", "-arch", "sm_90", "-unroll", "2")
	if status != 0 {
		t.Fatalf("status %d, stderr %q", status, errs)
	}
	want := gen.Config{K: 256, MaxCandidates: 1024, BlockSize: 256, Bins: 256, Target: ptx.SM90, Unroll: 2}
	if !strings.Contains(out, "config: "+want.String()+"\n") {
		t.Errorf("header does not name %q:\n%s", want.String(), out)
	}
	wantLines(t, out, ".reqntid 256, 1, 1")
}

func TestList(t *testing.T) {
	status, out, errs := ptxgen(t, "-list")
	if status != 0 || errs != "" {
		t.Fatalf("status %d, stderr %q", status, errs)
	}
	for _, name := range gen.Names() {
		found := false
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			if len(f) > 0 && f[0] == name && strings.Contains(l, gen.Describe(name)) {
				found = true
			}
		}
		if !found {
			t.Errorf("-list has no line for %s with its description:\n%s", name, out)
		}
	}
	for _, tg := range ptx.Targets {
		if !strings.Contains(out, tg.Name) {
			t.Errorf("-list does not name target %s", tg.Name)
		}
	}
	if !strings.Contains(out, "(default)") {
		t.Error("-list does not mark the default kernel")
	}
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		status, out, errs := ptxgen(t, arg)
		if status != 0 || errs != "" {
			t.Errorf("%s: status %d, stderr %q", arg, status, errs)
		}
		for _, s := range []string{"Usage:", "Examples:", "-kernel", "-max-candidates", "-arch", "-list", "-o file", "-summary", "-diff changes"} {
			if !strings.Contains(out, s) {
				t.Errorf("%s: usage lacks %q", arg, s)
			}
		}
	}
}

func TestOutputFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.ptx")
	status, out, _ := ptxgen(t, "-kernel", "count_ge", "-arch", "sm_90", "-o", path)
	if status != 0 {
		t.Fatalf("status %d", status)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing with -o", out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := ptxgen(t, "-kernel", "count_ge", "-arch", "sm_90")
	if string(data) != want {
		t.Error("-o wrote other text than stdout gets")
	}
}

func TestOutputFileUnwritable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "k.ptx")
	status, _, errs := ptxgen(t, "-kernel", "count_ge", "-o", path)
	if status != 1 {
		t.Errorf("status %d, want 1", status)
	}
	checkOneLineError(t, errs, "no such file")
}

// checkOneLineError requires stderr to be exactly one line "ptxgen: ...",
// containing want.
func checkOneLineError(t *testing.T, errs, want string) {
	t.Helper()
	if !strings.HasPrefix(errs, "ptxgen: ") || !strings.HasSuffix(errs, "\n") || strings.Count(errs, "\n") != 1 {
		t.Errorf("stderr is not one line \"ptxgen: ...\": %q", errs)
	}
	if !strings.Contains(errs, want) {
		t.Errorf("stderr %q does not mention %q", errs, want)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // a part of the message
	}{
		{"bad flag", []string{"-nope"}, "flag provided but not defined: -nope"},
		{"bad number", []string{"-k", "many"}, `invalid value "many" for flag -k`},
		{"extra argument", []string{"count_ge"}, `unexpected argument "count_ge"`},
		{"unknown kernel", []string{"-kernel", "nope"}, `unknown kernel "nope"`},
		{"unknown arch", []string{"-arch", "sm_61"}, `unknown target "sm_61"`},
		{"K=0", []string{"-k", "0"}, "K = 0: must be at least 1"},
		{"block 100", []string{"-block", "100"}, "BlockSize = 100"},
		{"bins 3", []string{"-bins", "3"}, "Bins = 3: must be a power of two"},
		{"max-candidates < K", []string{"-k", "512", "-max-candidates", "100"}, "MaxCandidates = 100: must be at least K = 512"},
		{"unroll", []string{"-unroll", "99"}, "Unroll = 99"},
		{"several at once", []string{"-k", "0", "-block", "100", "-bins", "3"}, "K = 0: must be at least 1; BlockSize = 100"},
		{"row without summary", []string{"-row", "100"}, "-row adds to -summary"},
		{"row of no Top-K kernel", []string{"-summary", "-row", "100", "-kernel", "count_ge", "-k", "16", "-max-candidates", "64", "-block", "64", "-bins", "64"}, "count_ge is not one"},
		{"empty row", []string{"-summary", "-row", "0", "-kernel", "topk_radix"}, "-row 0: a row has at least one score"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out, errs := ptxgen(t, tc.args...)
			if status != 2 {
				t.Errorf("status %d, want 2", status)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			checkOneLineError(t, errs, tc.want)
		})
	}
}

// Every kernel at the edges of the valid configurations prints its entry,
// and just past them fails with status 2 and a one-line error: the command
// never panics, and the edges stay where Config.Validate puts them.
func TestEdgeConfigsNoPanic(t *testing.T) {
	if testing.Short() {
		t.Skip("generates many kernels")
	}
	configs := []struct {
		args  []string
		valid bool
	}{
		{[]string{"-k", "1", "-max-candidates", "1", "-block", "32", "-bins", "2"}, true},
		{[]string{"-k", "1", "-max-candidates", "1", "-block", "32", "-bins", "1"}, false},
		{[]string{"-k", "1", "-max-candidates", "32", "-block", "1024", "-bins", "32"}, true},
		{[]string{"-k", "4096", "-max-candidates", "16384", "-block", "1024", "-bins", "4096"}, true},
		{[]string{"-block", "96", "-bins", "3"}, false},
		{[]string{"-unroll", "1"}, true},
		{[]string{"-unroll", "16"}, true},
		{[]string{"-instrument"}, true},
	}
	printed := 0
	for _, name := range gen.Names() {
		for _, arch := range []string{"sm_80", "sm_100a"} {
			for _, c := range configs {
				args := append([]string{"-kernel", name, "-arch", arch}, c.args...)
				status, out, errs := ptxgen(t, args...)
				valid := c.valid && (arch != "sm_80" || !gen.IsClusterKernel(name)) // clusters need sm_90+
				switch {
				case valid && status == 0:
					if !strings.Contains(out, ".visible .entry "+name+"(") {
						t.Errorf("%v: no entry %s printed", args, name)
					}
					printed++
				case !valid && status == 2:
					checkOneLineError(t, errs, name)
				default:
					t.Errorf("%v: status %d (valid config: %v), stderr %q", args, status, valid, errs)
				}
			}
		}
	}
	clusters := 0
	for _, name := range gen.Names() {
		if gen.IsClusterKernel(name) {
			clusters++
		}
	}
	if want := 6*2*len(gen.Names()) - 6*clusters; printed != want {
		t.Errorf("%d kernels printed, want %d", printed, want)
	}
}
