package ptx

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// kitchenSink builds a module that uses every operand kind, directive and
// structured helper, and most instruction forms.
func kitchenSink(t *testing.T) *Module {
	t.Helper()
	m := NewModule(SM90)
	m.Comment("kernel kitchen_sink: every construct the printer knows")
	m.Comment("") // an empty header line prints as "// "
	tile := m.Shared("tile", F32, 256, 16)
	counts := m.Shared("counts", U32, 32, 0)
	dyn := m.ExternShared("dyn", 16)

	e := m.NewEntry("kitchen_sink")
	e.ReqNTID = Dim3{256}
	e.Cooperative = 8
	e.MinNCTAPerSM = 2
	e.MaxNReg = 64
	in := e.Param("in", U64)
	in.PtrAlign = 16
	out := e.Param("out", U64)
	n := e.Param("n", U64)

	e.Comment("load parameters")
	pin := e.LdParam(in)
	pout := e.LdParam(out)
	pn := e.LdParam(n)
	g := e.Reg(U64)
	e.CvtaToGlobal(g, pin)
	tid := e.Reg(U32)
	e.Mov(tid, TidX)
	for _, s := range []Special{NTidX, CtaIDX, NCtaIDX, LaneID, WarpID, NWarpID, LaneMaskLt, LaneMaskLe, LaneMaskGt, LaneMaskEq, Clock, SMID} {
		r := e.Reg(U32)
		e.Mov(r, s)
	}
	c64 := e.Reg(U64)
	e.Mov(c64, Clock64)
	e.Mov(c64, GlobalTimer)
	sa := e.Reg(U32)
	e.Mov(sa, tile)
	sa64 := e.Reg(U64)
	e.Mov(sa64, dyn)
	pa := e.Reg(U64)
	e.Mov(pa, out)

	// Arithmetic with immediates of every spelling.
	x := e.Reg(U32)
	e.Add(x, tid, Imm(70000)) // prints as hex
	e.Sub(x, x, Imm(-5))
	e.Mul(x, x, Imm(3))
	e.MulHi(x, x, tid)
	w := e.Reg(U64)
	e.MulWide(w, x, Imm(4))
	e.Mad(x, x, Imm(2), tid)
	e.Div(x, x, Imm(7))
	e.Rem(x, x, Imm(7))
	e.Min(x, x, tid)
	e.Max(x, x, tid)
	e.And(x, x, Imm(0xFF))
	e.Or(x, x, Imm(1))
	e.Xor(x, x, Imm(-1))
	e.Not(x, x)
	e.Shl(x, x, Imm(2))
	e.Shr(x, x, Imm(1))
	s := e.Reg(S32)
	e.Mov(s, Imm(-1))
	e.Shr(s, s, Imm(3))
	e.Neg(s, s)
	e.Abs(s, s)
	e.Popc(x, x)
	e.Clz(x, x)
	e.Brev(x, x)
	e.Bfind(x, x)
	e.Emit("add", []string{"sat", "s32"}, s, s, Imm(1))
	h := e.Reg(U16)
	e.Cvt(h, x)

	f := e.Reg(F32)
	e.Cvt(f, x)
	e.Add(f, f, Float(1.5))
	e.Mul(f, f, FloatBits(0x7FC00000))
	e.Mad(f, f, f, Float(float32(math.Copysign(0, -1))))
	e.Div(f, f, Float(3))
	e.Min(f, f, Float(2))
	e.Emit("max", []string{"NaN", "f32"}, f, f, Float(1))
	e.Emit("sqrt", []string{"rn", "f32"}, f, f)
	e.Emit("rcp", []string{"rn", "f32"}, f, f)
	e.Emit("fma", []string{"rz", "f32"}, f, f, f, f)
	d := e.Reg(F64)
	e.Cvt(d, f)
	e.Add(d, d, Double(0.25))
	e.Cvt(f, d)
	e.CvtRound(x, f, "rni")
	e.CvtRound(f, f, "rmi")

	p, q := e.Pred(), e.Pred()
	n32 := e.Reg(U32)
	e.Cvt(n32, pn)
	e.Setp(p, LT, x, n32)
	e.SetpT(U32, q, NE, x, Imm(0))
	e.Setp(q, NAN, f, f)
	e.AndPred(p, p, q)
	e.OrPred(p, p, q)
	e.Selp(x, x, Imm(9), p)

	// Memory: scalars, vectors, offsets, every space.
	v := Vec{e.Reg(F32), e.Reg(F32), e.Reg(F32), e.Reg(F32)}
	e.LdNC(v, At(g, 16))
	e.Ld(SpaceGlobal, Vec{v[0], v[1]}, At(g, -8))
	e.Ld(SpaceShared, f, At(tile, 12))
	e.Ld(SpaceShared, x, At(sa, 0))
	e.Ld(SpaceShared, x, At(counts, 4))
	e.St(SpaceShared, F32, At(sa, 4), f)
	e.St(SpaceShared, U32, At(sa, 4), Imm(0))
	e.St(SpaceGlobal, F32, At(pout, 0), v[0])
	e.St(SpaceGlobal, F32, At(pout, 0), Vec(v))
	e.St(SpaceNone, U64, At(sa64, 8), w)
	e.Atom(SpaceShared, "add", x, At(sa, 0), Imm(1))
	e.Atom(SpaceGlobal, "max", x, At(g, 0), tid)
	e.Emit("atom", []string{"shared", "cas", "b32"}, x, At(sa, 0), x, Imm(3))
	e.Red(SpaceGlobal, "add", F32, At(g, 0), f)

	// Warp collectives and barriers.
	e.Shfl(ShflBfly, x, x, Imm(16), Imm(31), Imm(-1))
	e.Shfl(ShflIdx, x, x, tid, Imm(31), Imm(0xFFFFFFFF))
	e.VoteBallot(x, p.Not(), Imm(-1))
	e.VoteAny(q, p, Imm(-1))
	e.VoteAll(q, p, x)
	e.Redux("add", x, x, Imm(-1))
	e.Activemask(x)
	e.BarWarpSync(Imm(-1))
	e.BarSync(0)
	e.Emit("bar", []string{"sync"}, Imm(1), Imm(64))
	e.Emit("barrier", []string{"sync", "aligned"}, Imm(0))
	e.Emit("membar", []string{"cta"})
	e.Emit("fence", []string{"acq_rel", "cta"})

	// Structured control flow.
	e.If(p, func() { e.Add(x, x, Imm(1)) })
	e.IfElse(q, func() { e.Sub(x, x, Imm(1)) }, func() { e.Add(x, x, Imm(2)) })
	i := e.Reg(U32)
	e.For(i, Imm(0), Imm(10), Imm(1), func() {
		e.Guarded(p, func() { e.Add(x, x, i) })
		e.Guarded(p.Not(), func() { e.Exit() })
	})
	e.DoWhile(func() { e.Sub(i, i, Imm(1)) }, func() Pred {
		r := e.Pred()
		e.Setp(r, GT, i, Imm(0))
		return r
	})
	l := e.NewLabel("done")
	e.BraUni(l)
	e.Place(l)
	e.Ret()

	// A second entry with other directives and no parameters.
	e2 := m.NewEntry("second")
	e2.MaxNTID = Dim3{128, 2, 1}
	r := e2.Reg(U32)
	e2.Mov(r, TidY)
	e2.Exit()

	if err := m.Build(); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseRoundTrip(t *testing.T) {
	m := kitchenSink(t)
	if err := RoundTrip(m); err != nil {
		t.Fatal(err)
	}
}

func TestParseStructure(t *testing.T) {
	m := kitchenSink(t)
	p, err := Parse(Text(m))
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != m.Version || p.Target.Name != m.Target.Name {
		t.Errorf("version/target %v %v, want %v %v", p.Version, p.Target, m.Version, m.Target)
	}
	if len(p.Header) != 2 || p.Header[0] != m.Header[0] || p.Header[1] != "" {
		t.Errorf("header %q, want %q", p.Header, m.Header)
	}
	if len(p.Entries) != 2 || len(p.Vars) != 3 {
		t.Fatalf("%d entries, %d vars", len(p.Entries), len(p.Vars))
	}
	e, e0 := p.Entries[0], m.Entries[0]
	if e.nregs != e0.nregs {
		t.Errorf("register counts %v, want %v", e.nregs, e0.nregs)
	}
	if e.ReqNTID != (Dim3{256, 1, 1}) || e.MinNCTAPerSM != 2 || e.MaxNReg != 64 {
		t.Errorf("directives %v %d %d", e.ReqNTID, e.MinNCTAPerSM, e.MaxNReg)
	}
	// The cooperative group, in a comment before its entry only.
	if e.Cooperative != 8 || p.Entries[1].Cooperative != 0 {
		t.Errorf("cooperative groups %d and %d, want 8 and 0", e.Cooperative, p.Entries[1].Cooperative)
	}
	if len(e.Params) != 3 || e.Params[0].PtrAlign != 16 || e.Params[0].T != U64 {
		t.Errorf("params %+v", e.Params[0])
	}
	if p.Entries[1].MaxNTID != (Dim3{128, 2, 1}) || p.Entries[1].id != 2 {
		t.Errorf("second entry %+v", p.Entries[1])
	}
	if len(e.Body) != len(e0.Body) {
		t.Fatalf("body has %d statements, want %d", len(e.Body), len(e0.Body))
	}
	// Symbols resolve to the parsed module's own objects; registers carry
	// their class type and entry.
	vars := map[*Var]bool{}
	for _, v := range p.Vars {
		vars[v] = true
	}
	params := map[*Param]bool{}
	for _, prm := range e.Params {
		params[prm] = true
	}
	seen := map[string]int{} // operand kinds checked below
	for _, s := range e.Body {
		in, ok := s.(*Inst)
		if !ok {
			continue
		}
		seen["instruction"]++
		if !strings.HasPrefix(in.Pos, "line ") {
			t.Errorf("Pos %q", in.Pos)
		}
		for _, a := range in.Args {
			if ad, ok := a.(Addr); ok {
				a = ad.Base
			}
			switch a := a.(type) {
			case *Var:
				seen["variable"]++
				if !vars[a] {
					t.Errorf("%s: variable %s is not the module's", in.Pos, a.Name)
				}
			case *Param:
				seen["parameter"]++
				if !params[a] {
					t.Errorf("%s: parameter %s is not the entry's", in.Pos, a.Name)
				}
			case Reg:
				seen["register"]++
				if a.entry != e.id || a.T != classType[classOf(a.T)] {
					t.Errorf("%s: register %+v", in.Pos, a)
				}
			}
		}
	}
	// The kitchen sink uses each kind: the loop above checked something.
	for _, kind := range []string{"instruction", "variable", "parameter", "register"} {
		if seen[kind] == 0 {
			t.Errorf("no %s operand checked", kind)
		}
	}
}

// The golden files are what the driver receives: each must parse and
// reprint to itself.
func TestParseGolden(t *testing.T) {
	files, err := filepath.Glob("../golden/*.ptx")
	if err != nil {
		t.Fatal(err)
	}
	// golden/ holds every kernel on sm_90 and warp_reduce on sm_75: a
	// missing directory must fail, not pass with nothing parsed.
	if len(files) < 7 {
		t.Fatalf("%d golden files in ../golden, want at least 7 (regenerate with: go test ./golden -update)", len(files))
	}
	for _, want := range []string{"gvr_topk_sm_90.ptx", "topk_fallback_sm_90.ptx", "topk_radix_sm_90.ptx", "warp_reduce_sm_75.ptx"} {
		if !slices.Contains(files, "../golden/"+want) {
			t.Errorf("../golden lacks %s", want)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Parse(string(b))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if got := Text(m); got != string(b) {
			t.Errorf("%s does not reprint to itself", f)
		}
	}
}

func TestParseErrors(t *testing.T) {
	good := Text(kitchenSink(t))
	lines := strings.Split(good, "\n")
	find := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return i
			}
		}
		t.Fatalf("no line starts with %q", prefix)
		return -1
	}
	replace := func(i int, s string) string {
		c := append([]string(nil), lines...)
		c[i] = s
		return strings.Join(c, "\n")
	}
	add := find("add.u32")
	for _, tc := range []struct {
		name, text, want string
	}{
		{"unknown op", replace(add, "\tfrob.u32 \t%r1, %r1;"), "unknown instruction"},
		{"undeclared reg", replace(add, "\tadd.u32 \t%r999, %r1, 1;"), "not declared"},
		{"bad operand", replace(add, "\tadd.u32 \t%r1, %r1, #;"), "cannot read operand"},
		{"operand count", replace(add, "\tadd.u32 \t%r1, %r1;"), "takes 3 operands"},
		{"no semicolon", replace(add, "\tadd.u32 \t%r1, %r1, 1"), "does not end"},
		{"unknown symbol", replace(add, "\tmov.u32 \t%r1, nosuch;"), "unknown symbol"},
		{"bad target", replace(find(".target"), ".target sm_42"), "unknown target"},
		{"type error", replace(add, "\tadd.u32 \t%r1, %f1, 1;"), "has type f32"},
		{"unknown label", replace(find("bra.uni"), "\tbra.uni \t$nowhere;"), "unknown label"},
		{"old version", replace(find(".version"), ".version 7.0"), "older than target"},
		{"bad directive", replace(find(".maxnreg"), ".maxnreg x"), "cannot read directive"},
		{"bad address", replace(add, "\tld.global.u32 \t%r1, [%rd1+x];"), "bad address offset"},
		{"bad cooperative group", replace(find(CooperativeComment), CooperativeComment+" x"), "cannot read the cooperative group"},
		{"no cooperative group", replace(find(CooperativeComment), CooperativeComment+" 0"), "cannot read the cooperative group"},
		{"cooperative before a variable", replace(find(".shared"), CooperativeComment+" 4"), "is not before an entry"},
	} {
		_, err := Parse(tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
			continue
		}
		// Every error names a line.
		if !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: error %q names no line", tc.name, err)
		}
	}
}

// An instruction newer than the module's .version is what the driver
// rejects; Parse says so.
func TestParseVersionTooOld(t *testing.T) {
	m := NewModule(SM100a)
	e := m.NewEntry("k")
	a, d := e.Reg(F32), e.Reg(F32)
	e.Mov(a, Float(1))
	e.Redux("max", d, a, Imm(-1)) // needs PTX 8.6, which sm_100a also needs
	e.Ret()
	if err := m.Build(); err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(Text(m), ".target sm_100a", ".target sm_90", 1)
	text = strings.Replace(text, ".version 8.6", ".version 7.8", 1)
	_, err := Parse(text)
	if err == nil || !strings.Contains(err.Error(), "needs PTX 8.6") {
		t.Errorf("error %v, want a PTX version error", err)
	}
}

// 8-bit values live in .b16 registers; the parsed text must verify.
func TestParseByteRegisters(t *testing.T) {
	m := NewModule(SM90)
	e := m.NewEntry("k")
	p := e.LdParam(e.Param("p", U64))
	b := e.Reg(U8)
	e.Ld(SpaceGlobal, b, At(p, 0))
	w := e.Reg(U32)
	e.Cvt(w, b)
	e.St(SpaceGlobal, U8, At(p, 1), b)
	e.Ret()
	if err := m.Build(); err != nil {
		t.Fatal(err)
	}
	if err := RoundTrip(m); err != nil {
		t.Fatal(err)
	}
}

// A parameter named like a module variable would make the printed name
// mean the parameter (PTX scoping): the verifier rejects it.
func TestParamShadowsVariable(t *testing.T) {
	m := NewModule(SM90)
	cell := m.Shared("cell", U32, 1, 4)
	e := m.NewEntry("k")
	e.Param("cell", U64)
	r := e.Reg(U32)
	e.Mov(r, cell)
	e.Ret()
	if err := m.Build(); err == nil || !strings.Contains(err.Error(), "parameter cell has the name of a module variable") {
		t.Errorf("Build: %v", err)
	}
}
