package main

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
)

// sections on a hand-built body: instructions are counted between the
// comments, steps also towards their phase.
func TestSections(t *testing.T) {
	m := ptx.NewModule(ptx.SM90)
	e := m.NewEntry("k")
	r := e.Reg(ptx.U32)
	mov := func(n int) {
		for range n {
			e.Mov(r, ptx.Imm(1))
		}
	}
	mov(2)
	e.Comment("note before any phase")
	mov(1)
	e.Comment("Phase 1: first")
	mov(3)
	e.Comment("Phase 2: second")
	mov(1)
	e.Comment("radix select: a")
	mov(4)
	e.Comment("radix select: b")
	mov(5)
	e.Ret()
	if err := m.Build(); err != nil {
		t.Fatal(err)
	}
	got := sections(e, nil)
	want := []section{
		{name: "setup", insts: 3},
		{name: "note before any phase", step: true, insts: 1},
		{name: "Phase 1: first", insts: 3},
		{name: "Phase 2: second", insts: 1 + 4 + 6}, // ret is in the last step
		{name: "radix select: a", step: true, insts: 4},
		{name: "radix select: b", step: true, insts: 6},
	}
	if !slices.Equal(got, want) {
		t.Errorf("sections:\n got %+v\nwant %+v", got, want)
	}
}

func TestSummary(t *testing.T) {
	status, out, errs := ptxgen(t, "-summary", "-arch", "sm_90")
	if status != 0 || errs != "" {
		t.Fatalf("status %d, stderr %q", status, errs)
	}
	k, err := gen.Generate("gvr_topk", func() gen.Config { c := gen.DefaultConfig(); c.Target = ptx.SM90; return c }())
	if err != nil {
		t.Fatal(err)
	}
	e := k.Module.Entries[0]
	insts := 0
	for _, s := range e.Body {
		if _, ok := s.(*ptx.Inst); ok {
			insts++
		}
	}
	wantLines(t, out,
		"kernel gvr_topk: "+gen.Describe("gvr_topk"),
		"config: "+k.Config.String(),
		"target: sm_90, PTX ISA 7.8",
		"launch: 512 threads per CTA",
		"entry gvr_topk",
		"params (16):",
		"  scores             .u64",
		"  out_vals           .u64",
		"registers:",
		"instructions: "+strconv.Itoa(insts),
	)
	if !strings.Contains(out, "shared memory: "+strconv.Itoa(k.Launch.SharedBytes)+" bytes dynamic\n") {
		t.Errorf("no shared memory line with %d bytes:\n%s", k.Launch.SharedBytes, out)
	}
	// The register declarations are those of the printed PTX.
	decls := 0
	for _, l := range strings.Split(k.PTX(), "\n") {
		if f := strings.Fields(strings.TrimSuffix(l, ";")); len(f) == 3 && f[0] == ".reg" {
			decls++
			if !strings.Contains(out, "\n  "+strings.Join(f, " ")+"\n") {
				t.Errorf("summary lacks the declaration %q", l)
			}
		}
	}
	if decls < 3 { // gvr_topk uses predicates, 32- and 64-bit registers at least
		t.Errorf("found %d .reg declarations in gvr_topk's PTX, want at least 3", decls)
	}
	// The phases in order, then their instruction counts add up.
	var phases []string
	sum := 0
	row := regexp.MustCompile(`^  (\S.*?)\s+(\d+)$`)
	for _, l := range strings.Split(out, "\n") {
		if m := row.FindStringSubmatch(l); m != nil && !strings.HasPrefix(m[1], " ") && !strings.Contains(m[1], ".u64") {
			phases = append(phases, m[1])
			sum += atoi(t, m[2])
		}
	}
	want := []string{"setup", "Phase 1: pre-indexed statistics", "Phase 2: secant threshold search",
		"Phase 3: ballot-free candidate collection", "Phase 4: exact selection in shared memory",
		"Phase 4 (exact path): radix select over the row"}
	if !slices.Equal(phases, want) {
		t.Errorf("phases %q, want %q", phases, want)
	}
	if sum != insts {
		t.Errorf("the phases count %d instructions, the entry has %d", sum, insts)
	}
	if !strings.Contains(out, "\n    radix select: digit bits [21, 32) ") {
		t.Error("no radix select step under Phase 4")
	}

	// -summary -diff shows what changes in the summary.
	status, out, errs = ptxgen(t, "-summary", "-arch", "sm_90", "-diff", "k=1024,max-candidates=3072")
	if status != 0 || errs != "" {
		t.Fatalf("-summary -diff: status %d, stderr %q", status, errs)
	}
	c2 := k.Config
	c2.K, c2.MaxCandidates = 1024, 3072
	k2, err := gen.Generate("gvr_topk", c2)
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, out, "-config: "+k.Config.String(), "+config: "+c2.String(),
		"+shared memory: "+strconv.Itoa(k2.Launch.SharedBytes)+" bytes dynamic")
}

// -summary -row runs the kernel on a synthetic row in the interpreter:
// each section's issued count, the phases' adding up to the total, which
// is what the interpreter counts for the launch.
func TestSummaryRow(t *testing.T) {
	args := []string{"-summary", "-row", "3000", "-kernel", "topk_fallback", "-arch", "sm_90", "-k", "256", "-max-candidates", "1024", "-block", "256", "-bins", "256", "-sure-set"}
	status, out, errs := ptxgen(t, args...)
	if status != 0 || errs != "" {
		t.Fatalf("status %d, stderr %q", status, errs)
	}
	m := regexp.MustCompile(`\ninstructions: \d+; warp instructions issued on a synthetic row of 3000 \(all its CTAs\): (\d+)\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no issued total in:\n%s", out)
	}
	total := atoi(t, m[1])
	sum, phases := 0, 0
	row := regexp.MustCompile(`^  (\S.*?)\s+(\d+)\s+(\d+)$`)
	for _, l := range strings.Split(out, "\n") {
		if m := row.FindStringSubmatch(l); m != nil && !strings.HasPrefix(m[1], " ") {
			sum += atoi(t, m[3])
			if strings.HasPrefix(m[1], "Phase ") && atoi(t, m[3]) > 0 {
				phases++
			}
		}
	}
	if sum != total || total == 0 {
		t.Errorf("the sections issue %d warp instructions, the total is %d", sum, total)
	}
	if phases < 4 { // a row of 3000 at K = 256 takes the four phases
		t.Errorf("%d phases issued instructions, want 4:\n%s", phases, out)
	}
	// The interpreter's own count of the launch.
	k, err := gen.Generate("topk_fallback", gen.Config{K: 256, MaxCandidates: 1024, BlockSize: 256, Bins: 256, Target: ptx.SM90, SureSet: true})
	if err != nil {
		t.Fatal(err)
	}
	iss, err := issued(k, 3000)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, c := range iss {
		n += c
	}
	if int(n) != total {
		t.Errorf("issued() counts %d, the summary %d", n, total)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSummaryRowGroups: -row runs a kernel whose row several clusters
// share, every cluster at once on the row's workspace, and the rounds
// through it issue instructions (the launch was refused for want of a
// workspace before).
func TestSummaryRowGroups(t *testing.T) {
	status, out, errs := ptxgen(t, "-summary", "-row", "20000", "-kernel", "topk_fallback_cluster", "-arch", "sm_90",
		"-cluster", "2", "-groups", "3", "-k", "256", "-max-candidates", "1024", "-block", "128", "-bins", "256")
	if status != 0 || errs != "" {
		t.Fatalf("status %d, stderr %q", status, errs)
	}
	row := regexp.MustCompile(`^\s+(\S.*?)\s+(\d+)\s+(\d+)$`)
	issued := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			issued[m[1]] += atoi(t, m[3])
		}
	}
	for _, s := range []string{"combine across the row's clusters", "Phase 3: ballot-free candidate collection", "Phase 4: exact selection in shared memory"} {
		if issued[s] == 0 {
			t.Errorf("%q issued no instruction:\n%s", s, out)
		}
	}
}
