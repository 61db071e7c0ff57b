package ptx_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// verifyEntry starts a module for target t with one entry "k".
func verifyEntry(t ptx.Target) (*ptx.Module, *ptx.Entry) {
	m := ptx.NewModule(t)
	return m, m.NewEntry("k")
}

// written returns a new register of type ty holding a value, so that reading
// it is not an error.
func written(e *ptx.Entry, ty ptx.Type) ptx.Reg {
	r := e.Reg(ty)
	e.Mov(r, zeroOf(ty))
	return r
}

// buildErrors builds m and returns its errors, one per line.
func buildErrors(m *ptx.Module) []string {
	err := m.Build()
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

func TestVerifyRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target ptx.Target
		build  func(m *ptx.Module, e *ptx.Entry)
		want   string // a part of the one expected error
		noPos  bool   // the error is about a directive or a label: no file:line
	}{
		{"f32 register in add.u32", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			f := written(e, ptx.F32)
			e.Emit("add", []string{"u32"}, e.Reg(ptx.U32), f, ptx.Imm(1))
		}, "`add.u32 %r0, %f0, 1;`: operand %f0 has type f32, instruction wants u32", false},
		{"u64 register in add.u32", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Add(e.Reg(ptx.U32), written(e, ptx.U64), ptx.Imm(1))
		}, "operand %rd0 has type u64, instruction wants u32", false},
		{"integer immediate for f32", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			f := written(e, ptx.F32)
			e.Add(f, f, ptx.Imm(1))
		}, "integer immediate 1 where f32 is wanted", false},
		{"f32 immediate for u32", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Mov(e.Reg(ptx.U32), ptx.Float(1))
		}, "f32 immediate where u32 is wanted", false},
		{"register never written", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			a, b := e.Reg(ptx.U32), e.Reg(ptx.U32)
			e.Add(a, b, ptx.Imm(1))
		}, "register %r1 (u32 #1) is read but never written", false},
		{"predicate never written", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			r := written(e, ptx.U32)
			e.Guarded(e.Pred(), func() { e.Add(r, r, ptx.Imm(1)) })
		}, "register %p0 is read but never written", false},
		{"register of another entry", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			other := m.NewEntry("other")
			r := written(other, ptx.U32)
			e.Add(written(e, ptx.U32), r, ptx.Imm(1))
		}, "entry k: `add.u32 %r0, %r0, 1;`: register %r0 (u32 #0) is not defined in this entry", false},
		{"zero register", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("mov", []string{"u32"}, written(e, ptx.U32), ptx.Reg{T: ptx.U32, N: 0})
		}, "not defined in this entry", false},
		{"unknown label", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Bra(ptx.Label{Name: "nowhere"})
		}, "unknown label nowhere", false},
		{"duplicate label", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			l := e.NewLabel("x")
			e.Place(l)
			e.Place(l)
		}, "entry k: label $L1_x placed twice", true},
		{"unknown instruction", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("frob", nil)
		}, `unknown instruction "frob"`, false},
		{"unknown qualifier", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			r := written(e, ptx.U32)
			e.Emit("add", []string{"u32", "wrap"}, r, r, r)
		}, "unexpected qualifier .wrap", false},
		{"missing type", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			r := written(e, ptx.U32)
			e.Emit("add", nil, r, r, r)
		}, `expected a type qualifier, found ""`, false},
		{"setp without comparison", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			r := written(e, ptx.U32)
			e.Emit("setp", []string{"u32"}, e.Pred(), r, r)
		}, "setp needs a comparison", false},
		{"integer mul without .lo", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			r := written(e, ptx.U32)
			e.Emit("mul", []string{"u32"}, r, r, r)
		}, "integer mul needs .lo, .hi or .wide", false},
		{"operand count", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			r := written(e, ptx.U32)
			e.Emit("add", []string{"u32"}, r, r)
		}, "add takes 3 operands, has 2", false},
		{"and.u32", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			r := written(e, ptx.U32)
			e.Emit("and", []string{"u32"}, r, r, ptx.Imm(1))
		}, "`and.u32 %r0, %r0, 1;`: needs a .bN type, not .u32", false},
		{"popc.u64", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("popc", []string{"u64"}, e.Reg(ptx.U32), written(e, ptx.U64))
		}, "needs a .bN type, not .u64", false},
		{"write to an immediate", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("add", []string{"u32"}, ptx.Imm(1), written(e, ptx.U32), ptx.Imm(1))
		}, "cannot write an immediate", false},
		{"predicate where u32 is wanted", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			p := e.Pred()
			e.Setp(p, ptx.EQ, written(e, ptx.U32), ptx.Imm(0))
			e.Emit("add", []string{"u32"}, e.Reg(ptx.U32), p, ptx.Imm(1))
		}, "predicate %p0 where u32 is wanted", false},
		{"negated predicate written", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Setp(e.Pred().Not(), ptx.EQ, written(e, ptx.U32), ptx.Imm(0))
		}, "negated predicate !%p0 is allowed only as a guard or a vote source", false},
		{"special register outside mov", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Add(e.Reg(ptx.U32), ptx.TidX, ptx.Imm(1))
		}, "special register %tid.x can only be read by mov", false},
		{"u64 special into u32", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("mov", []string{"u32"}, e.Reg(ptx.U32), ptx.Clock64)
		}, "special register %clock64 is u64, instruction wants u32", false},
		{"vector of the wrong length", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			a := e.LdParam(e.Param("p", ptx.U64))
			e.Emit("ld", []string{"global", "v4", "f32"}, ptx.Vec{e.Reg(ptx.F32), e.Reg(ptx.F32)}, ptx.At(a, 0))
		}, "vector of 2 where the instruction takes .v4", false},
		{"32-bit global address", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Ld(ptx.SpaceGlobal, e.Reg(ptx.U32), ptx.At(written(e, ptx.U32), 0))
		}, "address register %r1 is u32: 64 bits needed (32 allowed for shared)", false},
		{"ld.shared of a global variable", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			g := &ptx.Var{Name: "g", Space: ptx.SpaceGlobal, Elem: ptx.U32, Len: 4, Align: 4}
			m.Vars = append(m.Vars, g)
			e.Ld(ptx.SpaceShared, e.Reg(ptx.U32), ptx.At(g, 0))
		}, "`ld.shared.u32 %r0, [g];`: variable g is in .global, instruction accesses .shared", false},
		{"ld.param of a register", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Ld(ptx.SpaceParam, e.Reg(ptx.U64), ptx.At(written(e, ptx.U64), 0))
		}, "ld.param takes a parameter, not a register address", false},
		{"ld.global of a parameter", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Ld(ptx.SpaceGlobal, e.Reg(ptx.U64), ptx.At(e.Param("p", ptx.U64), 0))
		}, "parameter p addressed outside the .param space", false},
		{"parameter of another entry", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			p := m.NewEntry("other").Param("p", ptx.U64)
			e.Ld(ptx.SpaceParam, e.Reg(ptx.U64), ptx.At(p, 0))
		}, "parameter p does not belong to this entry", false},
		{"symbol address into f32", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Mov(e.Reg(ptx.F32), m.Shared("s", ptx.U32, 4, 0))
		}, "a symbol's address can only be taken by mov into a 32- or 64-bit integer", false},
		{"branch to a register", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("bra", nil, written(e, ptx.U32))
		}, "branch target is ptx.Reg, not a Label", false},
		{".maxntid with .reqntid", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.MaxNTID, e.ReqNTID = ptx.Dim3{256}, ptx.Dim3{256}
		}, "entry k: .maxntid and .reqntid exclude each other", true},
		{".minnctapersm alone", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.MinNCTAPerSM = 2
		}, ".minnctapersm needs .maxntid or .reqntid", true},
		{"alignment not a power of two", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			m.Shared("s", ptx.U32, 4, 12)
		}, "variable s: alignment 12 is not a power of two", true},
		{"name not an identifier", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Param("a-b", ptx.U64)
		}, `parameter name "a-b" is not a PTX identifier`, true},
		{"duplicate entry", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			m.NewEntry("k")
		}, `duplicate entry name "k"`, true},
		{"module without target", ptx.Target{}, func(m *ptx.Module, e *ptx.Entry) {},
			"module has no target", true},

		// Target features.
		{"redux.sync.f32 on sm_90", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Redux("max", e.Reg(ptx.F32), written(e, ptx.F32), ptx.Imm(-1))
		}, "`redux.sync.max.f32 %f0, %f1, -1;`: needs f32 redux.sync (sm_100a only); target sm_90 lacks it", false},
		{"redux.sync.f32 on sm_100", ptx.SM100, func(m *ptx.Module, e *ptx.Entry) {
			e.Redux("max", e.Reg(ptx.F32), written(e, ptx.F32), ptx.Imm(-1))
		}, "needs f32 redux.sync (sm_100a only); target sm_100 lacks it", false},
		{"redux.sync.min.abs on sm_120", ptx.SM120, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("redux", []string{"sync", "min", "abs", "f32"}, e.Reg(ptx.F32), written(e, ptx.F32), ptx.Imm(-1))
		}, "needs f32 redux.sync (sm_100a only); target sm_120 lacks it", false},
		{".reqnctapercluster on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry) {
			e.ReqNCTAPerCluster = ptx.Dim3{2}
		}, ".reqnctapercluster needs thread-block clusters (sm_90+); target sm_80 lacks it", true},
		{"%cluster_ctarank on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry) {
			e.Mov(e.Reg(ptx.U32), ptx.ClusterCtaRank)
		}, "special register %cluster_ctarank needs thread-block clusters (sm_90+); target sm_80 lacks it", false},
		{"barrier.cluster.arrive on sm_89", ptx.SM89, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("barrier", []string{"cluster", "arrive"})
		}, "`barrier.cluster.arrive;`: needs thread-block clusters (sm_90+); target sm_89 lacks it", false},
		{"mapa on sm_86", ptx.SM86, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("mapa", []string{"shared::cluster", "u32"}, e.Reg(ptx.U32), written(e, ptx.U32), ptx.Imm(1))
		}, "needs thread-block clusters (sm_90+); target sm_86 lacks it", false},
		{"ld.shared::cluster on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry) {
			e.Ld(ptx.SpaceSharedCluster, e.Reg(ptx.U32), ptx.At(written(e, ptx.U32), 0))
		}, "needs .shared::cluster (sm_90+); target sm_80 lacks it", false},
		{"fence.acq_rel.cluster on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("fence", []string{"acq_rel", "cluster"})
		}, "needs thread-block clusters (sm_90+); target sm_80 lacks it", false},
		{"min.NaN on sm_75", ptx.SM75, func(m *ptx.Module, e *ptx.Entry) {
			f := written(e, ptx.F32)
			e.Emit("min", []string{"NaN", "f32"}, f, f, f)
		}, "needs min/max .NaN (sm_80+); target sm_75 lacks it", false},
		{"barrier.cluster.arrive.acquire", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("barrier", []string{"cluster", "arrive", "acquire"})
		}, "unexpected qualifier .acquire", false},
		{"barrier.cluster.wait.release", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.Emit("barrier", []string{"cluster", "wait", "release"})
		}, "unexpected qualifier .release", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, e := verifyEntry(tc.target)
			tc.build(m, e)
			errs := buildErrors(m)
			if len(errs) != 1 {
				t.Fatalf("want one error containing %q, got %d:\n%s", tc.want, len(errs), strings.Join(errs, "\n"))
			}
			if !strings.Contains(errs[0], tc.want) {
				t.Errorf("error %q\ndoes not contain %q", errs[0], tc.want)
			}
			if !tc.noPos && !strings.HasPrefix(errs[0], "ptx/verify_test.go:") {
				t.Errorf("error %q does not start with the test's file:line", errs[0])
			}
		})
	}
}

// The "done when" of redux.sync: on a target without it the error names the
// instruction, the target and the generator line that emitted it.
func TestVerifyReduxSM75(t *testing.T) {
	m, e := verifyEntry(ptx.SM75)
	v := written(e, ptx.U32)
	d := e.Reg(ptx.U32)
	_, _, line, _ := runtime.Caller(0)
	e.Redux("add", d, v, ptx.Imm(-1)) // the line after runtime.Caller
	err := m.Build()
	want := fmt.Sprintf("ptx/verify_test.go:%d: entry k: `redux.sync.add.u32 %%r1, %%r0, -1;`: "+
		"needs integer redux.sync (sm_80+); target sm_75 lacks it", line+1)
	if err == nil || err.Error() != want {
		t.Errorf("Build error:\n%v\nwant:\n%s", err, want)
	}
	// The same instruction is fine on sm_80.
	m, e = verifyEntry(ptx.SM80)
	e.Redux("add", e.Reg(ptx.U32), written(e, ptx.U32), ptx.Imm(-1))
	if err := m.Build(); err != nil {
		t.Errorf("sm_80: %v", err)
	}
}

func TestVerifyAccepts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target ptx.Target
		build  func(m *ptx.Module, e *ptx.Entry)
	}{
		{"redux.sync.f32 on sm_100a", ptx.SM100a, func(m *ptx.Module, e *ptx.Entry) {
			e.Redux("max", e.Reg(ptx.F32), written(e, ptx.F32), ptx.Imm(-1))
			e.Emit("redux", []string{"sync", "min", "abs", "NaN", "f32"}, e.Reg(ptx.F32), written(e, ptx.F32), ptx.Imm(-1))
		}},
		{"clusters on sm_90", ptx.SM90, func(m *ptx.Module, e *ptx.Entry) {
			e.ReqNCTAPerCluster = ptx.Dim3{4}
			e.Mov(e.Reg(ptx.U32), ptx.ClusterCtaRank)
			e.Emit("barrier", []string{"cluster", "arrive", "release", "aligned"})
			e.Emit("barrier", []string{"cluster", "wait", "acquire", "aligned"})
			e.Emit("mapa", []string{"shared::cluster", "u32"}, e.Reg(ptx.U32), written(e, ptx.U32), ptx.Imm(1))
			e.Ld(ptx.SpaceSharedCluster, e.Reg(ptx.U32), ptx.At(written(e, ptx.U32), 4))
			e.Emit("fence", []string{"acq_rel", "cluster"})
		}},
		{"bit types stand for any type of their width", ptx.SM80, func(m *ptx.Module, e *ptx.Entry) {
			b := written(e, ptx.B32)
			e.Add(e.Reg(ptx.U32), b, ptx.Imm(1))
			e.And(e.Reg(ptx.S32), written(e, ptx.U32), b)
			e.Mov(e.Reg(ptx.B32), ptx.Float(1))
		}},
		{"signed and unsigned mix at one width", ptx.SM80, func(m *ptx.Module, e *ptx.Entry) {
			e.Add(e.Reg(ptx.S32), written(e, ptx.U32), ptx.Imm(-1))
		}},
		{"negated predicate as vote source and guard", ptx.SM80, func(m *ptx.Module, e *ptx.Entry) {
			p := e.Pred()
			e.Setp(p, ptx.EQ, written(e, ptx.U32), ptx.Imm(0))
			e.VoteBallot(e.Reg(ptx.U32), p.Not(), ptx.Imm(-1))
			e.Guarded(p.Not(), func() { e.Ret() })
		}},
		{"32-bit shared address", ptx.SM80, func(m *ptx.Module, e *ptx.Entry) {
			s := m.ExternShared("smem", 16)
			a := e.Reg(ptx.U32)
			e.Mov(a, s)
			e.Ld(ptx.SpaceShared, e.Reg(ptx.U32), ptx.At(a, 8))
			e.St(ptx.SpaceShared, ptx.U32, ptx.At(s, 4), ptx.Imm(1))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, e := verifyEntry(tc.target)
			tc.build(m, e)
			e.Ret()
			if err := m.Build(); err != nil {
				t.Error(err)
			}
		})
	}
}

// Every error is reported, not only the first.
func TestVerifyCollectsAll(t *testing.T) {
	m, e := verifyEntry(ptx.SM75)
	e.Redux("add", e.Reg(ptx.U32), written(e, ptx.U32), ptx.Imm(-1))
	e.Emit("frob", nil)
	e.Bra(ptx.Label{Name: "nowhere"})
	if errs := buildErrors(m); len(errs) != 3 {
		t.Errorf("got %d errors, want 3:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	if len(ptx.Verify(m)) != 3 {
		t.Error("Verify and Build disagree")
	}
}
