package ptx

import (
	"strings"
	"testing"
)

func launchModule(t *testing.T) *Module {
	t.Helper()
	m := NewModule(SM90)
	e := m.NewEntry("k")
	e.ReqNTID = Dim3{256}
	e.ReqNCTAPerCluster = Dim3{4, 4}
	e.Cooperative = 32
	x := e.Param("x", U64)
	x.PtrAlign = 16
	e.Param("n", U32)
	e.Param("stride", U64)
	r := e.LdParam(x)
	_ = r
	e.Ret()
	if err := m.Build(); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLaunchOf(t *testing.T) {
	m := launchModule(t)
	l, err := LaunchOf(m, "k", 4096)
	if err != nil {
		t.Fatal(err)
	}
	if l.Entry != "k" || l.Block != 256 || l.Cluster != 16 || !l.NonPortableCluster || l.SharedBytes != 4096 || len(l.Params) != 3 || l.Cooperative != 32 {
		t.Fatalf("LaunchOf = %+v", l)
	}
	if p := l.Param("x"); p == nil || p.PtrAlign != 16 || p.T != U64 {
		t.Errorf("Param(x) = %+v", p)
	}
	if l.Param("y") != nil {
		t.Error("Param(y) of a kernel without y")
	}
	// The parsed text gives the same contract.
	pm, err := Parse(Text(m))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := LaunchOf(pm, "k", 4096)
	if err != nil || pl.String() != l.String() || pl.Cooperative != 32 {
		t.Errorf("from the text: %v, %v; from the module: %v", pl, err, l)
	}
	if _, err := LaunchOf(m, "nope", 0); err == nil || !strings.Contains(err.Error(), `no entry "nope"`) {
		t.Errorf("LaunchOf of a missing entry: %v", err)
	}
}

// WaitsFirst: a body that starts with griddepcontrol.wait, with only
// parameter loads and arithmetic before it, and the same read back from
// the text; not with a memory access, a branch or a guard before or on it.
func TestWaitsFirst(t *testing.T) {
	for _, tc := range []struct {
		name string
		body func(e *Entry, x Reg)
		want bool
	}{
		{"wait first", func(e *Entry, x Reg) { e.GridDepWait() }, true},
		{"after arithmetic", func(e *Entry, x Reg) {
			y := e.Reg(U64)
			e.Add(y, x, Imm(4))
			e.Comment("a comment")
			e.GridDepLaunchDependents()
			e.GridDepWait()
		}, true},
		{"no wait", func(e *Entry, x Reg) {}, false},
		{"a global load before", func(e *Entry, x Reg) {
			e.Ld(SpaceGlobal, e.Reg(U32), At(x, 0))
			e.GridDepWait()
		}, false},
		{"a shared store before", func(e *Entry, x Reg) {
			a := e.Reg(U32)
			e.Mov(a, Imm(0))
			e.St(SpaceShared, U32, At(a, 0), Imm(1))
			e.GridDepWait()
		}, false},
		{"a branch before", func(e *Entry, x Reg) {
			l := e.NewLabel("on")
			e.Bra(l)
			e.Place(l)
			e.GridDepWait()
		}, false},
		{"a guarded wait", func(e *Entry, x Reg) {
			p := e.Pred()
			e.Setp(p, EQ, x, Imm(0))
			e.Guarded(p, e.GridDepWait)
		}, false},
	} {
		m := NewModule(SM90)
		e := m.NewEntry("k")
		e.ReqNTID = Dim3{32}
		x := e.LdParam(e.Param("x", U64))
		tc.body(e, x)
		e.Ret()
		if err := m.Build(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		l, err := LaunchOf(m, "k", 0)
		if err != nil {
			t.Fatal(err)
		}
		pm, err := Parse(Text(m))
		if err != nil {
			t.Fatal(err)
		}
		pl, err := LaunchOf(pm, "k", 0)
		if err != nil {
			t.Fatal(err)
		}
		if l.WaitsFirst != tc.want || pl.WaitsFirst != tc.want {
			t.Errorf("%s: WaitsFirst %v (from the text %v), want %v", tc.name, l.WaitsFirst, pl.WaitsFirst, tc.want)
		}
		if strings.Contains(l.String(), "waits first") != tc.want {
			t.Errorf("%s: %s", tc.name, l)
		}
	}
}

func TestLaunchCheck(t *testing.T) {
	ok := Launch{Entry: "k", Block: 128, Cluster: 1, Params: []Param{{Name: "p", T: U64, PtrAlign: 4}}}
	if err := ok.Check(); err != nil {
		t.Fatalf("a good contract: %v", err)
	}
	coop := ok
	coop.Cluster, coop.Cooperative = 4, 12
	if err := coop.Check(); err != nil {
		t.Errorf("a cooperative contract, groups of 3 clusters: %v", err)
	}
	if s := coop.String(); !strings.Contains(s, "cooperative in groups of 12 CTAs") {
		t.Errorf("a cooperative contract reads %q: its groups are not said", s)
	}
	for _, c := range []struct {
		edit func(*Launch)
		want string
	}{
		{func(l *Launch) { l.Entry = "" }, "no entry name"},
		{func(l *Launch) { l.Block = 0 }, "block of 0"},
		{func(l *Launch) { l.Block = 1025 }, "block of 1025"},
		{func(l *Launch) { l.Cluster = 0 }, "cluster of 0"},
		{func(l *Launch) { l.Cluster = 17; l.NonPortableCluster = true }, "cluster of 17"},
		{func(l *Launch) { l.Cluster = 16 }, "NonPortableCluster = false"},
		{func(l *Launch) { l.SharedBytes = -1 }, "-1 bytes"},
		{func(l *Launch) { l.Cooperative = -4 }, "cooperative groups of -4"},
		{func(l *Launch) { l.Cluster = 4; l.Cooperative = 6 }, "cooperative groups of 6 CTAs: must be a whole number of clusters of 4"},
		{func(l *Launch) { l.Params = append(l.Params, Param{Name: "p", T: U32}) }, "declared twice"},
		{func(l *Launch) { l.Params = append(l.Params, Param{T: U32}) }, "without a name"},
		{func(l *Launch) { l.Params = append(l.Params, Param{Name: "q", T: U16}) }, "32- or 64-bit"},
		{func(l *Launch) { l.Params[0].PtrAlign = 3 }, "alignment 3"},
		{func(l *Launch) { l.Params[0].T = U32 }, "alignment 4 of a u32"},
	} {
		l := ok
		l.Params = append([]Param(nil), ok.Params...)
		c.edit(&l)
		if err := l.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want an error about %q", l, err, c.want)
		}
	}
}

func TestArgs(t *testing.T) {
	m := launchModule(t)
	l, err := LaunchOf(m, "k", 0)
	if err != nil {
		t.Fatal(err)
	}
	a := l.Args()
	if err := a.Check(); err == nil || !strings.Contains(err.Error(), "x is not set") {
		t.Errorf("no argument set: %v", err)
	}
	a.Set("stride", 7).Set("n", 5).Set("x", 0x1000)
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	if got := a.Values(); got[0] != 0x1000 || got[1] != 5 || got[2] != 7 {
		t.Errorf("Values() = %v, want in .param order [0x1000 5 7]", got)
	}
	if v, ok := a.Value("n"); !ok || v != 5 {
		t.Errorf("Value(n) = %d, %v; want 5, true", v, ok)
	}
	if _, ok := l.Args().Value("n"); ok {
		t.Error("Value of an argument never set: ok")
	}
	if p := a.Pointers(); *(*uint64)(p[2]) != 7 {
		t.Errorf("Pointers()[2] points at %d", *(*uint64)(p[2]))
	}
	a.Set("x", 0x1004)
	if err := a.Check(); err == nil || !strings.Contains(err.Error(), "x = 0x1004 is not 16-byte aligned") {
		t.Errorf("misaligned pointer: %v", err)
	}
	a.Set("x", 0) // null: an absent optional pointer
	if err := a.Check(); err != nil {
		t.Errorf("null pointer: %v", err)
	}
	if err := l.Args().Set("x", 16).Set("n", 1<<32).Set("stride", 1).Check(); err == nil || !strings.Contains(err.Error(), "does not fit its .u32") {
		t.Errorf("a u32 parameter given 2^32: %v", err)
	}
	if err := l.Args().Set("nope", 1).Set("x", 16).Set("n", 1).Set("stride", 1).Check(); err == nil || !strings.Contains(err.Error(), `no parameter "nope" (it has x, n, stride)`) {
		t.Errorf("unknown name: %v", err)
	}
	// Set does not allocate: a launch loop can set arguments every step.
	if n := testing.AllocsPerRun(100, func() { a.Set("x", 0x2000).Set("n", 9) }); n != 0 {
		t.Errorf("Set allocates %v times", n)
	}
}
