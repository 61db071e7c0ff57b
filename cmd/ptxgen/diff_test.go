package main

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	for _, tc := range []struct {
		name, a, b, want string
	}{
		{"same", "x\ny\n", "x\ny\n", ""},
		{"one line changed", "a\nb\nc\nd\ne\nf\ng\nh\ni\n", "a\nb\nc\nd\nE\nf\ng\nh\ni\n", `--- A
+++ B
@@ -2,7 +2,7 @@
 b
 c
 d
-e
+E
 f
 g
 h
`},
		{"from nothing", "", "x\ny\n", `--- A
+++ B
@@ -0,0 +1,2 @@
+x
+y
`},
		{"to nothing", "x\n", "", `--- A
+++ B
@@ -1 +0,0 @@
-x
`},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n", `--- A
+++ B
@@ -1,3 +1,4 @@
+0
 1
 2
 3
@@ -9,4 +10,3 @@
 9
 10
 11
-12
`},
		{"close changes share a hunk", "1\n2\n3\n4\n5\n6\n7\n8\n", "1\nX\n3\n4\n5\n6\n7\nY\n", `--- A
+++ B
@@ -1,8 +1,8 @@
 1
-2
+X
 3
 4
 5
 6
 7
-8
+Y
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unifiedDiff("A", "B", tc.a, tc.b); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// lcs is the length of the longest common subsequence, by dynamic
// programming: a shortest edit script keeps exactly that many lines.
func lcs(a, b []string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// On random texts the edit script turns a into b, and it is shortest.
func TestLineEditsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := func() []string {
		s := make([]string, r.IntN(30))
		for i := range s {
			s[i] = string(rune('a' + r.IntN(4)))
		}
		return s
	}
	for range 2000 {
		a, b := text(), text()
		es := lineEdits(a, b)
		var ga, gb []string
		kept := 0
		for _, e := range es {
			if e.op != '+' {
				if e.ai != len(ga) {
					t.Fatalf("line number %d for a's line %d", e.ai, len(ga))
				}
				ga = append(ga, e.line)
			}
			if e.op != '-' {
				if e.bi != len(gb) {
					t.Fatalf("line number %d for b's line %d", e.bi, len(gb))
				}
				gb = append(gb, e.line)
			}
			if e.op == ' ' {
				kept++
			}
		}
		if strings.Join(ga, ",") != strings.Join(a, ",") || strings.Join(gb, ",") != strings.Join(b, ",") {
			t.Fatalf("the script does not give back a and b:\na %v\nb %v\nscript %v", a, b, es)
		}
		if want := lcs(a, b); kept != want {
			t.Fatalf("the script keeps %d lines, the longest common subsequence has %d:\na %v\nb %v", kept, want, a, b)
		}
	}
}

func TestDiffFlag(t *testing.T) {
	status, out, errs := ptxgen(t, "-kernel", "count_ge", "-arch", "sm_90", "-diff", "arch=sm_100")
	if status != 0 || errs != "" {
		t.Fatalf("status %d, stderr %q", status, errs)
	}
	wantLines(t, out,
		"--- count_ge (K=2048 MaxCandidates=6144 BlockSize=512 Bins=2048 Target=sm_90)",
		"+++ count_ge (K=2048 MaxCandidates=6144 BlockSize=512 Bins=2048 Target=sm_100)",
		"-.target sm_90", "+.target sm_100", "-.version 7.8", "+.version 8.6")

	// Several changes, a bool among them; the same config: no output.
	status, out, errs = ptxgen(t, "-kernel", "gvr_topk", "-k", "256", "-max-candidates", "1024", "-diff", " k=512 , max-candidates=2048,instrument")
	if status != 0 || errs != "" {
		t.Fatalf("status %d, stderr %q", status, errs)
	}
	wantLines(t, out, "+\t.param .u64 .ptr.global.align 8 stats")
	if status, out, _ := ptxgen(t, "-kernel", "count_ge", "-diff", "arch=sm_100,arch=sm_100", "-arch", "sm_100"); status != 0 || out != "" {
		t.Errorf("no difference: status %d, output %q", status, out)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"empty", []string{"-diff", ""}, "no change given"},
		{"not a config flag", []string{"-diff", "o=x"}, "flag provided but not defined: -o"},
		{"bad value", []string{"-diff", "k=many"}, `invalid value "many" for flag -k`},
		{"space, not comma", []string{"-diff", "k 512"}, "not defined: -k 512 (it takes kernel, k, max-candidates"},
		{"invalid config", []string{"-diff", "k=0"}, "-diff: kernel gvr_topk: invalid config"},
		{"unknown arch", []string{"-diff", "arch=sm_61"}, `unknown target "sm_61"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out, errs := ptxgen(t, tc.args...)
			if status != 2 || out != "" {
				t.Errorf("status %d, stdout %q", status, out)
			}
			checkOneLineError(t, errs, tc.want)
		})
	}
}
