package ptx_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// The minimum .version of each target, from PTX-FACTS.md §1 (the PTX ISA
// notes of the .target directive).
func TestTargetMinPTX(t *testing.T) {
	want := map[string]string{
		"sm_75":   "6.3",
		"sm_80":   "7.0",
		"sm_86":   "7.1",
		"sm_89":   "7.8",
		"sm_90":   "7.8",
		"sm_90a":  "8.0",
		"sm_100":  "8.6",
		"sm_100a": "8.6",
		"sm_120":  "8.7",
	}
	for _, tg := range append([]ptx.Target{ptx.SM75}, ptx.Targets...) {
		w, ok := want[tg.Name]
		if !ok {
			t.Errorf("target %s is not in the table of this test: add it from the PTX ISA notes", tg.Name)
			continue
		}
		if got := tg.MinPTX.String(); got != w {
			t.Errorf("%s: MinPTX %s, want %s", tg.Name, got, w)
		}
	}
	if len(ptx.Targets) != len(want)-1 {
		t.Errorf("ptx.Targets has %d targets, the table %d (sm_75 aside)", len(ptx.Targets), len(want)-1)
	}
}

func TestTargetsOrderAndNames(t *testing.T) {
	seen := map[string]bool{}
	for i, tg := range ptx.Targets {
		if seen[tg.Name] {
			t.Errorf("%s listed twice", tg.Name)
		}
		seen[tg.Name] = true
		if i > 0 && tg.SM < ptx.Targets[i-1].SM {
			t.Errorf("%s listed after %s: Targets must be oldest first", tg.Name, ptx.Targets[i-1].Name)
		}
		suffix := ""
		if tg.Suffix != 0 {
			suffix = string(tg.Suffix)
		}
		if name := "sm_" + strconv.Itoa(tg.SM) + suffix; name != tg.Name {
			t.Errorf("%s: SM %d and suffix %q spell %s", tg.Name, tg.SM, suffix, name)
		}
		if !strings.Contains(ptx.TargetNames(), tg.Name) {
			t.Errorf("TargetNames lacks %s", tg.Name)
		}
	}
}

func TestTargetByName(t *testing.T) {
	for _, tg := range append([]ptx.Target{ptx.SM75}, ptx.Targets...) {
		got, err := ptx.TargetByName(tg.Name)
		if err != nil || got != tg {
			t.Errorf("TargetByName(%q) = %v, %v", tg.Name, got, err)
		}
	}
	for _, bad := range []string{"", "sm_61", "SM_90", "sm90", "sm_90 ", "sm_100f", "compute_90"} {
		got, err := ptx.TargetByName(bad)
		if err == nil {
			t.Errorf("TargetByName(%q) = %v, want an error", bad, got)
			continue
		}
		if !strings.Contains(err.Error(), "unknown target") || !strings.Contains(err.Error(), "sm_90a") {
			t.Errorf("TargetByName(%q): %q should say unknown target and list the known ones", bad, err)
		}
	}
}

func TestTargetHas(t *testing.T) {
	// For each feature, the targets that have it.
	all := []string{"sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_120"}
	sm80up := all[1:]
	sm90up := []string{"sm_90", "sm_90a", "sm_100", "sm_100a", "sm_120"}
	want := map[ptx.Feature][]string{
		ptx.FeatNone:          all,
		ptx.FeatGlobalTimer:   all,
		ptx.FeatVote:          all,
		ptx.FeatReduxInt:      sm80up,
		ptx.FeatMinMaxNaN:     sm80up,
		ptx.FeatCpAsync:       sm80up,
		ptx.FeatReduxF32:      {"sm_100a"},
		ptx.FeatCluster:       sm90up,
		ptx.FeatSharedCluster: sm90up,
		ptx.FeatMatch:         all,
		ptx.FeatMbarrier:      sm80up,
		ptx.FeatMbarrierTx:    sm90up,
		ptx.FeatBulkCopy:      sm90up,
		ptx.FeatElect:         sm90up,
	}
	for f, have := range want {
		for _, name := range all {
			tg, err := ptx.TargetByName(name)
			if err != nil {
				t.Fatal(err)
			}
			if got, w := tg.Has(f), slices.Contains(have, name); got != w {
				t.Errorf("%s.Has(%v) = %v, want %v", name, f, got, w)
			}
		}
	}
	if ptx.SM100a.Has(ptx.Feature(200)) {
		t.Error("an unknown feature is had")
	}
}

func TestVersionOrder(t *testing.T) {
	v := func(a, b int) ptx.Version { return ptx.Version{Major: a, Minor: b} }
	for _, tc := range []struct {
		a, b ptx.Version
		less bool
	}{
		{v(7, 0), v(7, 8), true},
		{v(7, 8), v(8, 0), true},
		{v(8, 6), v(8, 6), false},
		{v(9, 0), v(8, 8), false},
		{v(7, 10), v(8, 0), true},
	} {
		if got := tc.a.Less(tc.b); got != tc.less {
			t.Errorf("%v.Less(%v) = %v", tc.a, tc.b, got)
		}
	}
	if s := v(8, 6).String(); s != "8.6" {
		t.Errorf("String = %q", s)
	}
}

// Build emits the target's minimum .version and raises it only when an
// instruction or directive needs a newer ISA.
func TestBuildVersion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target ptx.Target
		build  func(m *ptx.Module, e *ptx.Entry)
		want   string
	}{
		{"empty sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry) {}, "7.0"},
		{"empty sm_90a", ptx.SM90a, func(m *ptx.Module, e *ptx.Entry) {}, "8.0"},
		{"integer redux on sm_80 stays", ptx.SM80, func(m *ptx.Module, e *ptx.Entry) {
			e.Redux("add", e.Reg(ptx.U32), written(e, ptx.U32), ptx.Imm(-1))
		}, "7.0"},
		{"activemask (6.2) on sm_75 stays", ptx.SM75, func(m *ptx.Module, e *ptx.Entry) {
			e.Activemask(e.Reg(ptx.B32))
		}, "6.3"},
		{"redux.f32 on sm_100a stays", ptx.SM100a, func(m *ptx.Module, e *ptx.Entry) {
			e.Redux("max", e.Reg(ptx.F32), written(e, ptx.F32), ptx.Imm(-1))
		}, "8.6"},
		{"barrier.cluster.arrive on sm_90 stays", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("barrier", []string{"cluster", "arrive", "aligned"})
			e.Emit("barrier", []string{"cluster", "wait", "aligned"})
		}, "7.8"},
		{".reqnctapercluster on sm_90 stays", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.ReqNCTAPerCluster = ptx.Dim3{8}
		}, "7.8"},
		{"barrier.cluster.arrive.release on sm_90 raises", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("barrier", []string{"cluster", "arrive", "release", "aligned"})
		}, "8.0"},
		{"barrier.cluster.wait.acquire on sm_90 raises", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("barrier", []string{"cluster", "wait", "acquire"})
		}, "8.0"},
		{"mapa and fence.acq_rel.cluster (7.8) on sm_90 stay", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("mapa", []string{"shared::cluster", "u32"}, e.Reg(ptx.U32), written(e, ptx.U32), ptx.Imm(1))
			e.Emit("fence", []string{"acq_rel", "cluster"})
		}, "7.8"},
		{"min.NaN (7.0) on sm_80 stays", ptx.SM80, func(m *ptx.Module, e *ptx.Entry) {
			f := written(e, ptx.F32)
			e.Emit("min", []string{"NaN", "f32"}, f, f, f)
		}, "7.0"},
		{"a raise in a second entry counts", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			m.NewEntry("second").Emit("barrier", []string{"cluster", "arrive", "relaxed"})
		}, "8.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, e := verifyEntry(tc.target)
			tc.build(m, e)
			e.Ret()
			if err := m.Build(); err != nil {
				t.Fatal(err)
			}
			if got := m.Version.String(); got != tc.want {
				t.Errorf("Version %s, want %s", got, tc.want)
			}
			if !strings.Contains(ptx.Text(m), "\n.version "+tc.want+"\n") {
				t.Errorf("printed text lacks .version %s", tc.want)
			}
		})
	}
}
