package ptx_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gvr-go/gvr/ptx"
)

// bodyLines builds m and returns the printed body of its first entry: the
// lines between the register declarations and the closing brace.
func bodyLines(t *testing.T, m *ptx.Module) []string {
	t.Helper()
	if err := m.Build(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(ptx.Text(m), "\n")
	start := -1
	for i, l := range lines {
		if l == "{" {
			start = i + 1
			break
		}
	}
	for start < len(lines) && strings.HasPrefix(lines[start], "\t.reg ") {
		start++
	}
	start++ // the blank line after the declarations
	end := start
	for end < len(lines) && lines[end] != "}" {
		end++
	}
	return lines[start:end]
}

func checkBody(t *testing.T, m *ptx.Module, want ...string) {
	t.Helper()
	got := bodyLines(t, m)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("body:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// loopEntry starts an entry with n in %r0 and a predicate source.
func loopEntry() (*ptx.Module, *ptx.Entry, ptx.Reg) {
	m, e := verifyEntry(ptx.SM80)
	n := written(e, ptx.U32)
	return m, e, n
}

func TestIf(t *testing.T) {
	m, e, n := loopEntry()
	p := e.Pred()
	e.Setp(p, ptx.EQ, n, ptx.Imm(0))
	e.If(p, func() { e.Add(n, n, ptx.Imm(1)) })
	e.If(p.Not(), func() { e.Add(n, n, ptx.Imm(2)) })
	e.Ret()
	checkBody(t, m,
		"\tmov.u32 \t%r0, 0;",
		"\tsetp.eq.u32 \t%p0, %r0, 0;",
		"\t@!%p0 bra \t$L1_endif;",
		"\tadd.u32 \t%r0, %r0, 1;",
		"$L1_endif:",
		"\t@%p0 bra \t$L2_endif;",
		"\tadd.u32 \t%r0, %r0, 2;",
		"$L2_endif:",
		"\tret;",
	)
}

func TestIfElse(t *testing.T) {
	m, e, n := loopEntry()
	p := e.Pred()
	e.Setp(p, ptx.EQ, n, ptx.Imm(0))
	e.IfElse(p, func() { e.Add(n, n, ptx.Imm(1)) }, func() { e.Sub(n, n, ptx.Imm(1)) })
	e.Ret()
	checkBody(t, m,
		"\tmov.u32 \t%r0, 0;",
		"\tsetp.eq.u32 \t%p0, %r0, 0;",
		"\t@!%p0 bra \t$L1_else;",
		"\tadd.u32 \t%r0, %r0, 1;",
		"\tbra \t$L2_endif;",
		"$L1_else:",
		"\tsub.u32 \t%r0, %r0, 1;",
		"$L2_endif:",
		"\tret;",
	)
}

func TestFor(t *testing.T) {
	m, e, n := loopEntry()
	i := e.Reg(ptx.S32)
	e.For(i, ptx.Imm(-4), n, ptx.Imm(2), func() { e.Comment("body") })
	e.Ret()
	// The comparison is signed: i's type.
	checkBody(t, m,
		"\tmov.u32 \t%r0, 0;",
		"\tmov.s32 \t%r1, -4;",
		"$L1_loop:",
		"\tsetp.lt.s32 \t%p0, %r1, %r0;",
		"\t@!%p0 bra \t$L2_endloop;",
		"\t// body",
		"\tadd.s32 \t%r1, %r1, 2;",
		"\tbra \t$L1_loop;",
		"$L2_endloop:",
		"\tret;",
	)
}

func TestWhile(t *testing.T) {
	m, e, n := loopEntry()
	e.While(func() ptx.Pred {
		p := e.Pred()
		e.Setp(p, ptx.NE, n, ptx.Imm(0))
		return p
	}, func() { e.Sub(n, n, ptx.Imm(1)) })
	e.Ret()
	checkBody(t, m,
		"\tmov.u32 \t%r0, 0;",
		"$L1_loop:",
		"\tsetp.ne.u32 \t%p0, %r0, 0;",
		"\t@!%p0 bra \t$L2_endloop;",
		"\tsub.u32 \t%r0, %r0, 1;",
		"\tbra \t$L1_loop;",
		"$L2_endloop:",
		"\tret;",
	)
}

func TestDoWhile(t *testing.T) {
	m, e, n := loopEntry()
	e.DoWhile(func() { e.Add(n, n, ptx.Imm(1)) }, func() ptx.Pred {
		p := e.Pred()
		e.Setp(p, ptx.LT, n, ptx.Imm(10))
		return p
	})
	e.Ret()
	checkBody(t, m,
		"\tmov.u32 \t%r0, 0;",
		"$L1_do:",
		"\tadd.u32 \t%r0, %r0, 1;",
		"\tsetp.lt.u32 \t%p0, %r0, 10;",
		"\t@%p0 bra \t$L1_do;",
		"\tret;",
	)
}

// Nested and repeated structured helpers never reuse a label, and every
// branch lands on a placed label (Build checks that).
func TestLabelsUnique(t *testing.T) {
	m, e, n := loopEntry()
	p := e.Pred()
	e.Setp(p, ptx.EQ, n, ptx.Imm(0))
	for range 3 {
		i := e.Reg(ptx.U32)
		e.For(i, ptx.Imm(0), n, ptx.Imm(1), func() {
			e.IfElse(p, func() {
				e.If(p, func() { e.Add(n, n, ptx.Imm(1)) })
			}, func() {
				e.DoWhile(func() { e.Sub(n, n, ptx.Imm(1)) }, func() ptx.Pred { return p })
			})
		})
	}
	e.Ret()
	seen := map[string]bool{}
	for _, l := range bodyLines(t, m) {
		if name, ok := strings.CutSuffix(l, ":"); ok {
			if seen[name] {
				t.Errorf("label %s placed twice", name)
			}
			seen[name] = true
		}
	}
	if len(seen) != 3*(2+2+1+1) {
		t.Errorf("%d labels, want %d", len(seen), 3*6)
	}
	// Labels are numbered per entry: a second entry starts again at 1.
	if l := m.NewEntry("second").NewLabel("x"); l.Name != "$L1_x" {
		t.Errorf("second entry's first label is %s", l.Name)
	}
}

func TestGuarded(t *testing.T) {
	m, e, n := loopEntry()
	p := e.Pred()
	e.Setp(p, ptx.EQ, n, ptx.Imm(0))
	e.Guarded(p.Not(), func() {
		e.Add(n, n, ptx.Imm(1))
		e.St(ptx.SpaceShared, ptx.U32, ptx.At(n, 0), n)
	})
	e.Add(n, n, ptx.Imm(2))
	e.Ret()
	checkBody(t, m,
		"\tmov.u32 \t%r0, 0;",
		"\tsetp.eq.u32 \t%p0, %r0, 0;",
		"\t@!%p0 add.u32 \t%r0, %r0, 1;",
		"\t@!%p0 st.shared.u32 \t[%r0], %r0;",
		"\tadd.u32 \t%r0, %r0, 2;",
		"\tret;",
	)
}

// nextLine returns "ptx/file.go:N" for the line after its caller's: a test
// calls it just before the call an error should blame.
func nextLine() string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("ptx/%s:%d", file[strings.LastIndex(file, "/")+1:], line+1)
}

func TestBuilderErrorsCarryPosition(t *testing.T) {
	m, e, n := loopEntry()
	pos1 := nextLine()
	m.Errorf("boom %d", 7)
	pos2 := nextLine()
	e.Reg(ptx.TypePred)
	p := e.Pred()
	e.Setp(p, ptx.EQ, n, ptx.Imm(0))
	var pos3 string
	e.Guarded(p, func() {
		pos3 = nextLine()
		e.Guarded(p, func() {})
	})
	pos4 := nextLine()
	e.Setp(p, ptx.EQ, ptx.Imm(1), ptx.Imm(2))
	e.Ret()
	err := m.Build()
	if err == nil {
		t.Fatal("Build succeeded")
	}
	errs := strings.Split(err.Error(), "\n")
	want := []string{
		pos1 + ": boom 7",
		pos2 + ": entry k: Reg(pred): use Pred for predicates",
		pos3 + ": entry k: Guarded inside Guarded",
		pos4 + ": entry k: setp with two immediates has no type",
		// The verify pass then reports the same setp again, as the
		// instruction the builder emitted without a type.
		pos4 + ": entry k: `setp.eq.invalid %p0, 1, 2;`: expected a type qualifier, found \"invalid\"",
	}
	for i, w := range want {
		if i >= len(errs) || errs[i] != w {
			t.Errorf("error %d:\n got %q\nwant %q", i, at(errs, i), w)
		}
	}
	if len(errs) != len(want) {
		t.Errorf("%d errors, want %d:\n%s", len(errs), len(want), err)
	}
}

// Positions are resolved once per return address (callerPos caches
// them): one helper inside package ptx reached from two lines, and one
// line reached twice, each still name the line of the call.
func TestInstPositions(t *testing.T) {
	_, e, n := loopEntry()
	var want []string
	for range 2 {
		want = append(want, nextLine())
		e.Add(n, n, ptx.Imm(1))
	}
	want = append(want, nextLine())
	e.If(e.Pred(), func() {}) // a setp-free If: its bra comes from package ptx
	want = append(want, nextLine())
	e.Mov(n, ptx.Imm(3))
	var got []string
	for _, s := range e.Body {
		if in, ok := s.(*ptx.Inst); ok {
			got = append(got, in.Pos)
		}
	}
	// The If emits its branch; the written register's set-up comes first.
	got = got[len(got)-len(want):]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("instruction positions (-want +got):\n%s", diff)
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<none>"
}

// The typed helpers spell the instruction PTX wants for each type.
func TestTypedHelpers(t *testing.T) {
	m, e := verifyEntry(ptx.SM80)
	u, s, u64, f, d, b := written(e, ptx.U32), written(e, ptx.S32), written(e, ptx.U64),
		written(e, ptx.F32), written(e, ptx.F64), written(e, ptx.B32)
	var want []string
	add := func(line string) { want = append(want, "\t"+line) }
	for _, r := range []ptx.Reg{u, s, u64, f, d, b} {
		want = append(want, "\tmov."+r.T.Name()+" \t"+bodyReg(r)+", "+zeroText(r.T)+";")
	}
	e.Mul(u, u, ptx.Imm(3))
	add("mul.lo.u32 \t%r0, %r0, 3;")
	e.Mul(f, f, f)
	add("mul.rn.f32 \t%f0, %f0, %f0;")
	e.MulHi(u, u, u)
	add("mul.hi.u32 \t%r0, %r0, %r0;")
	e.MulWide(u64, u, ptx.Imm(4))
	add("mul.wide.u32 \t%rd0, %r0, 4;")
	e.Mad(u, u, u, ptx.Imm(1))
	add("mad.lo.u32 \t%r0, %r0, %r0, 1;")
	e.Mad(f, f, f, ptx.Float(0.5))
	add("fma.rn.f32 \t%f0, %f0, %f0, 0f3F000000;")
	e.Div(s, s, ptx.Imm(2))
	add("div.s32 \t%r1, %r1, 2;")
	e.Div(d, d, d)
	add("div.rn.f64 \t%fd0, %fd0, %fd0;")
	e.Rem(u, u, ptx.Imm(7))
	add("rem.u32 \t%r0, %r0, 7;")
	// Unsigned, by a power of two: a shift and a mask (ptxas would emit
	// its generic division); signed or by a register, as written.
	e.Div(u, u, ptx.Imm(64))
	add("shr.u32 \t%r0, %r0, 6;")
	e.Div(u64, u64, ptx.Imm(1))
	add("shr.u64 \t%rd0, %rd0, 0;")
	e.Rem(u, u, ptx.Imm(2048))
	add("and.b32 \t%r0, %r0, 2047;")
	e.Rem(u64, u64, ptx.Imm(1<<40))
	add("and.b64 \t%rd0, %rd0, 0xFFFFFFFFFF;")
	e.Div(s, s, ptx.Imm(4))
	add("div.s32 \t%r1, %r1, 4;")
	e.Div(u, u, u)
	add("div.u32 \t%r0, %r0, %r0;")
	e.And(u, u, ptx.Imm(15))
	add("and.b32 \t%r0, %r0, 15;")
	e.Or(u64, u64, ptx.Imm(1))
	add("or.b64 \t%rd0, %rd0, 1;")
	e.Xor(s, s, s)
	add("xor.b32 \t%r1, %r1, %r1;")
	e.Not(u, u)
	add("not.b32 \t%r0, %r0;")
	e.Shl(u64, u64, ptx.Imm(2))
	add("shl.b64 \t%rd0, %rd0, 2;")
	e.Shr(s, s, ptx.Imm(1))
	add("shr.s32 \t%r1, %r1, 1;")
	e.Shr(u, u, ptx.Imm(1))
	add("shr.u32 \t%r0, %r0, 1;")
	e.Popc(u, u64)
	add("popc.b64 \t%r0, %rd0;")
	e.Clz(u, b)
	add("clz.b32 \t%r0, %r2;")
	e.Bfind(u, u)
	add("bfind.u32 \t%r0, %r0;")
	e.Brev(u, u)
	add("brev.b32 \t%r0, %r0;")
	e.Cvt(u64, u)
	add("cvt.u64.u32 \t%rd0, %r0;")
	e.Cvt(f, u)
	add("cvt.rn.f32.u32 \t%f0, %r0;")
	e.Cvt(s, f)
	add("cvt.rzi.s32.f32 \t%r1, %f0;")
	e.Cvt(f, d)
	add("cvt.rn.f32.f64 \t%f0, %fd0;")
	e.Cvt(d, f)
	add("cvt.f64.f32 \t%fd0, %f0;")
	e.CvtRound(s, f, "rmi")
	add("cvt.rmi.s32.f32 \t%r1, %f0;")
	e.Min(f, f, f)
	add("min.f32 \t%f0, %f0, %f0;")
	e.Max(s, s, ptx.Imm(-1))
	add("max.s32 \t%r1, %r1, -1;")
	e.Neg(f, f)
	add("neg.f32 \t%f0, %f0;")
	e.Abs(s, s)
	add("abs.s32 \t%r1, %r1;")
	p := e.Pred()
	e.SetpT(ptx.U32, p, ptx.GE, b, ptx.Imm(1))
	add("setp.ge.u32 \t%p0, %r2, 1;")
	e.Setp(p, ptx.GEU, ptx.Float(1), f)
	add("setp.geu.f32 \t%p0, 0f3F800000, %f0;")
	e.Selp(u, u, ptx.Imm(0), p)
	add("selp.u32 \t%r0, %r0, 0, %p0;")
	e.AndPred(p, p, p)
	add("and.pred \t%p0, %p0, %p0;")
	e.Atom(ptx.SpaceShared, "add", u, ptx.At(u, 0), ptx.Imm(1))
	add("atom.shared.add.u32 \t%r0, [%r0], 1;")
	e.Red(ptx.SpaceGlobal, "add", ptx.U32, ptx.At(u64, 0), u)
	add("red.global.add.u32 \t[%rd0], %r0;")
	e.BarSync(0)
	add("bar.sync \t0;")
	e.BarWarpSync(ptx.Imm(-1))
	add("bar.warp.sync \t-1;")
	e.Shfl(ptx.ShflDown, u, u, ptx.Imm(16), ptx.Imm(31), ptx.Imm(-1))
	add("shfl.sync.down.b32 \t%r0, %r0, 16, 31, -1;")
	e.VoteBallot(u, p, ptx.Imm(-1))
	add("vote.sync.ballot.b32 \t%r0, %p0, -1;")
	e.VoteAll(p, p, ptx.Imm(-1))
	add("vote.sync.all.pred \t%p0, %p0, -1;")
	e.Activemask(b)
	add("activemask.b32 \t%r2;")
	e.Exit()
	add("exit;")
	got := bodyLines(t, m)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		for i := range max(len(got), len(want)) {
			if at(got, i) != at(want, i) {
				t.Errorf("line %d:\n got %q\nwant %q", i, at(got, i), at(want, i))
			}
		}
	}
}

func bodyReg(r ptx.Reg) string {
	prefix := map[ptx.Type]string{ptx.U32: "%r", ptx.S32: "%r", ptx.B32: "%r", ptx.U64: "%rd", ptx.F32: "%f", ptx.F64: "%fd"}
	return fmt.Sprintf("%s%d", prefix[r.T], r.N)
}

func zeroText(t ptx.Type) string {
	switch t {
	case ptx.F32:
		return "0f00000000"
	case ptx.F64:
		return "0d0000000000000000"
	}
	return "0"
}

// Reads and Writes name the registers an instruction uses, guard included.
func TestReadsWrites(t *testing.T) {
	_, e := verifyEntry(ptx.SM80)
	a, b := e.Reg(ptx.U64), e.Reg(ptx.U32)
	p := e.Pred()
	var in *ptx.Inst
	e.Guarded(p, func() { in = e.Emit("atom", []string{"global", "add", "u32"}, b, ptx.At(a, 0), b) })
	reads, writes := in.Reads(), in.Writes()
	if want := []ptx.Operand{p, a, b}; fmt.Sprint(reads) != fmt.Sprint(want) {
		t.Errorf("Reads = %v, want %v", reads, want)
	}
	if want := []ptx.Operand{b}; fmt.Sprint(writes) != fmt.Sprint(want) {
		t.Errorf("Writes = %v, want %v", writes, want)
	}
	v := ptx.Vec{e.Reg(ptx.F32), e.Reg(ptx.F32)}
	ld := e.Emit("ld", []string{"global", "v2", "f32"}, v, ptx.At(a, 8))
	if got := ld.Writes(); len(got) != 2 {
		t.Errorf("ld.v2 writes %v, want both vector elements", got)
	}
	if f, ver := ld.Requires(); f != ptx.FeatNone || ver.String() != "1.0" {
		t.Errorf("ld.global.v2 requires %v, %v", f, ver)
	}
}

// redux.sync's bitwise operations are typed .b32 (PTX has no
// redux.sync.and.u32), whatever the registers' type; the arithmetic ones
// keep theirs.
func TestReduxTypes(t *testing.T) {
	m := ptx.NewModule(ptx.SM90)
	e := m.NewEntry("k")
	x, d := e.Reg(ptx.U32), e.Reg(ptx.U32)
	e.Mov(x, ptx.TidX)
	for _, op := range []string{"and", "or", "xor", "min", "add"} {
		e.Redux(op, d, x, ptx.Imm(-1))
	}
	e.Ret()
	text := strings.Join(bodyLines(t, m), "\n")
	for _, want := range []string{"redux.sync.and.b32", "redux.sync.or.b32", "redux.sync.xor.b32", "redux.sync.min.u32", "redux.sync.add.u32"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s in\n%s", want, text)
		}
	}
}
