package ptx_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// This file tests the cluster, mbarrier, bulk-copy and elect.sync
// vocabulary: the text each builder method prints, the .version each form
// raises a module to, and what the verify pass refuses below sm_90.

// clusterEntry starts an sm_90 entry with a shared mbarrier, a shared
// buffer, a global pointer in %rd0 and a 32-bit value in %r0.
func clusterEntry(t ptx.Target) (m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
	m = ptx.NewModule(t)
	bar = m.Shared("bar", ptx.B64, 1, 8)
	buf = m.Shared("buf", ptx.B8, 1024, 16)
	e = m.NewEntry("k")
	g = written(e, ptx.U64)
	r = written(e, ptx.U32)
	return
}

// Each builder method spells the instruction PTX wants.
func TestClusterHelpers(t *testing.T) {
	m, e, bar, buf, g, r := clusterEntry(ptx.SM90)
	want := []string{"\tmov.u64 \t%rd0, 0;", "\tmov.u32 \t%r0, 0;"}
	add := func(line string) { want = append(want, "\t"+line) }

	for _, s := range []struct {
		s    ptx.Special
		name string
	}{
		{ptx.ClusterCtaRank, "%cluster_ctarank"}, {ptx.ClusterNCtaRank, "%cluster_nctarank"},
		{ptx.ClusterIDX, "%clusterid.x"}, {ptx.ClusterIDY, "%clusterid.y"}, {ptx.ClusterIDZ, "%clusterid.z"},
		{ptx.NClusterIDX, "%nclusterid.x"}, {ptx.NClusterIDY, "%nclusterid.y"}, {ptx.NClusterIDZ, "%nclusterid.z"},
		{ptx.ClusterCtaIDX, "%cluster_ctaid.x"}, {ptx.ClusterCtaIDY, "%cluster_ctaid.y"}, {ptx.ClusterCtaIDZ, "%cluster_ctaid.z"},
		{ptx.ClusterNCtaIDX, "%cluster_nctaid.x"}, {ptx.ClusterNCtaIDY, "%cluster_nctaid.y"}, {ptx.ClusterNCtaIDZ, "%cluster_nctaid.z"},
	} {
		e.Mov(r, s.s)
		add("mov.u32 \t%r0, " + s.name + ";")
	}
	p := e.Pred()
	e.Mov(p, ptx.IsExplicitCluster)
	add("mov.pred \t%p0, %is_explicit_cluster;")

	e.BarrierClusterArrive(ptx.SemDefault)
	add("barrier.cluster.arrive.aligned;")
	e.BarrierClusterArrive(ptx.SemRelease)
	add("barrier.cluster.arrive.release.aligned;")
	e.BarrierClusterArrive(ptx.SemRelaxed)
	add("barrier.cluster.arrive.relaxed.aligned;")
	e.BarrierClusterWait(ptx.SemDefault)
	add("barrier.cluster.wait.aligned;")
	e.BarrierClusterWait(ptx.SemAcquire)
	add("barrier.cluster.wait.acquire.aligned;")
	e.BarrierClusterSync()
	add("barrier.cluster.arrive.aligned;")
	add("barrier.cluster.wait.aligned;")
	e.Fence(ptx.SemAcqRel, ptx.ScopeCluster)
	add("fence.acq_rel.cluster;")
	e.Fence(ptx.SemSC, ptx.ScopeGPU)
	add("fence.sc.gpu;")
	e.FenceMbarrierInit()
	add("fence.mbarrier_init.release.cluster;")

	rb := e.Reg(ptx.U32)
	e.Mapa(ptx.SpaceSharedCluster, rb, bar, ptx.Imm(1))
	add("mapa.shared::cluster.u32 \t%r1, bar, 1;")
	e.Mapa(ptx.SpaceSharedCluster, rb, r, r)
	add("mapa.shared::cluster.u32 \t%r1, %r0, %r0;")
	e.Mapa(ptx.SpaceNone, g, g, ptx.Imm(3))
	add("mapa.u64 \t%rd0, %rd0, 3;")

	e.Ld(ptx.SpaceSharedCTA, r, ptx.At(buf, 4))
	add("ld.shared::cta.u32 \t%r0, [buf+4];")
	e.St(ptx.SpaceSharedCTA, ptx.U32, ptx.At(rb, 0), r)
	add("st.shared::cta.u32 \t[%r1], %r0;")
	e.Atom(ptx.SpaceSharedCTA, "add", r, ptx.At(buf, 8), ptx.Imm(1))
	add("atom.shared::cta.add.u32 \t%r0, [buf+8], 1;")
	e.Red(ptx.SpaceSharedCTA, "or", ptx.B32, ptx.At(buf, 8), r)
	add("red.shared::cta.or.b32 \t[buf+8], %r0;")
	e.Ld(ptx.SpaceSharedCluster, r, ptx.At(rb, 4))
	add("ld.shared::cluster.u32 \t%r0, [%r1+4];")
	e.St(ptx.SpaceSharedCluster, ptx.U32, ptx.At(buf, 0), r)
	add("st.shared::cluster.u32 \t[buf], %r0;")
	e.Atom(ptx.SpaceSharedCluster, "max", r, ptx.At(rb, 0), r)
	add("atom.shared::cluster.max.u32 \t%r0, [%r1], %r0;")
	e.Red(ptx.SpaceSharedCluster, "add", ptx.U32, ptx.At(rb, 0), ptx.Imm(1))
	add("red.shared::cluster.add.u32 \t[%r1], 1;")

	st := e.Reg(ptx.B64)
	e.MbarrierInit(ptx.SpaceShared, ptx.At(bar, 0), ptx.Imm(1))
	add("mbarrier.init.shared.b64 \t[bar], 1;")
	e.MbarrierInit(ptx.SpaceSharedCTA, ptx.At(rb, 0), r)
	add("mbarrier.init.shared::cta.b64 \t[%r1], %r0;")
	e.MbarrierArrive(ptx.SpaceShared, ptx.ScopeDefault, st, ptx.At(bar, 0))
	add("mbarrier.arrive.shared.b64 \t%rd1, [bar];")
	e.MbarrierArrive(ptx.SpaceSharedCTA, ptx.ScopeCTA, st, ptx.At(bar, 0))
	add("mbarrier.arrive.release.cta.shared::cta.b64 \t%rd1, [bar];")
	e.MbarrierArrive(ptx.SpaceSharedCluster, ptx.ScopeCluster, ptx.Sink{}, ptx.At(rb, 0))
	add("mbarrier.arrive.release.cluster.shared::cluster.b64 \t_, [%r1];")
	e.MbarrierArriveExpectTx(ptx.SpaceShared, ptx.ScopeDefault, st, ptx.At(bar, 0), ptx.Imm(1024))
	add("mbarrier.arrive.expect_tx.shared.b64 \t%rd1, [bar], 1024;")
	e.MbarrierArriveExpectTx(ptx.SpaceSharedCluster, ptx.ScopeCluster, ptx.Sink{}, ptx.At(rb, 0), r)
	add("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 \t_, [%r1], %r0;")
	e.CpAsyncBulk(ptx.At(buf, 0), ptx.At(g, 0), ptx.Imm(1024), ptx.At(bar, 0))
	add("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes \t[buf], [%rd0], 1024, [bar];")
	e.CpAsyncBulk(ptx.At(rb, 16), ptx.At(g, 64), r, ptx.At(rb, 0))
	add("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes \t[%r1+16], [%rd0+64], %r0, [%r1];")
	e.CpAsyncBulkPrefetchL2(ptx.At(g, 32), r)
	add("cp.async.bulk.prefetch.L2.global \t[%rd0+32], %r0;")
	e.StAsync(ptx.B32, ptx.At(rb, 8), r, ptx.At(rb, 0))
	add("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 \t[%r1+8], %r0, [%r1];")
	e.StAsync(ptx.U32, ptx.At(rb, 16), ptx.Vec{r, r, r, r}, ptx.At(rb, 0))
	add("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.u32 \t[%r1+16], {%r0, %r0, %r0, %r0}, [%r1];")
	e.RedAsync("add", ptx.U32, ptx.At(rb, 8), r, ptx.At(rb, 0))
	add("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 \t[%r1+8], %r0, [%r1];")
	e.RedAsync("max", ptx.S32, ptx.At(rb, 12), ptx.Imm(-1), ptx.At(rb, 0))
	add("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.max.s32 \t[%r1+12], -1, [%r1];")
	e.MbarrierTryWaitParity(ptx.SpaceShared, ptx.ScopeDefault, p, ptx.At(bar, 0), ptx.Imm(0))
	add("mbarrier.try_wait.parity.shared.b64 \t%p0, [bar], 0;")
	e.MbarrierTryWaitParity(ptx.SpaceSharedCTA, ptx.ScopeCluster, p, ptx.At(bar, 0), r)
	add("mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 \t%p0, [bar], %r0;")
	e.MbarrierWait(ptx.SpaceShared, ptx.ScopeDefault, ptx.At(bar, 0), r)
	want = append(want, "$L1_do:")
	add("mbarrier.try_wait.parity.shared.b64 \t%p1, [bar], %r0;")
	add("@!%p1 bra \t$L1_do;")
	e.MbarrierInval(ptx.SpaceShared, ptx.At(bar, 0))
	add("mbarrier.inval.shared.b64 \t[bar];")

	e.ElectSync(r, p, ptx.Imm(0xFFFFFFFF))
	add("elect.sync \t%r0|%p0, 0xFFFFFFFF;")
	e.ElectSync(ptx.Sink{}, p, r)
	add("elect.sync \t_|%p0, %r0;")
	e.GridDepLaunchDependents()
	add("griddepcontrol.launch_dependents;")
	e.GridDepWait()
	add("griddepcontrol.wait;")
	e.Ret()
	add("ret;")

	got := bodyLines(t, m)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		for i := range max(len(got), len(want)) {
			if at(got, i) != at(want, i) {
				t.Errorf("line %d:\n got %q\nwant %q", i, at(got, i), at(want, i))
			}
		}
	}
	if err := ptx.RoundTrip(m); err != nil {
		t.Error(err)
	}
}

// .explicitcluster prints before .reqnctapercluster, reads back, and
// counts as a cluster directive: PTX 7.8 and sm_90.
func TestExplicitCluster(t *testing.T) {
	m, e := verifyEntry(ptx.SM90)
	e.ExplicitCluster = true
	e.ReqNCTAPerCluster = ptx.Dim3{4}
	e.Ret()
	if err := m.Build(); err != nil {
		t.Fatal(err)
	}
	text := ptx.Text(m)
	if !strings.Contains(text, "\n.visible .entry k()\n.explicitcluster\n.reqnctapercluster 4, 1, 1\n{\n") {
		t.Errorf("directives not printed as expected:\n%s", text)
	}
	p, err := ptx.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if pe := p.Entries[0]; !pe.ExplicitCluster || pe.ReqNCTAPerCluster != (ptx.Dim3{4, 1, 1}) {
		t.Errorf("parsed %+v", p.Entries[0])
	}
	if err := ptx.RoundTrip(m); err != nil {
		t.Error(err)
	}

	// Alone, it is printed and read back too.
	m, e = verifyEntry(ptx.SM90)
	e.ExplicitCluster = true
	e.Ret()
	if err := ptx.RoundTrip(m); err != nil {
		t.Error(err)
	}

	// A driver rejects it below PTX 7.8; Parse says so.
	m, e = verifyEntry(ptx.SM90)
	e.ExplicitCluster = true
	e.Ret()
	if err := m.Build(); err != nil {
		t.Fatal(err)
	}
	text = strings.Replace(ptx.Text(m), ".target sm_90", ".target sm_80", 1)
	_, err = ptx.Parse(strings.Replace(text, ".version 7.8", ".version 7.0", 1))
	if err == nil || !strings.Contains(err.Error(), "entry k: .explicitcluster needs PTX 7.8, module declares 7.0") {
		t.Errorf("Parse of .explicitcluster at PTX 7.0: %v", err)
	}
}

// The lowest .version each form allows, on the targets that have it
// (PTX-FACTS sections 3 and 4; checked with ptxas 12.4).
func TestClusterVersions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target ptx.Target
		build  func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg)
		want   string
	}{
		{"mapa alone stays 7.8", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Mapa(ptx.SpaceSharedCluster, e.Reg(ptx.U32), bar, ptx.Imm(1))
		}, "7.8"},
		{"cluster special registers stay 7.8", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Mov(r, ptx.ClusterCtaIDY)
			e.Mov(r, ptx.NClusterIDZ)
			e.Mov(r, ptx.ClusterNCtaIDX)
			e.Mov(e.Pred(), ptx.IsExplicitCluster)
		}, "7.8"},
		{".explicitcluster stays 7.8", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.ExplicitCluster = true
		}, "7.8"},
		{"barrier.cluster and fence.acq_rel.cluster stay 7.8", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.BarrierClusterSync()
			e.Fence(ptx.SemAcqRel, ptx.ScopeCluster)
		}, "7.8"},
		{"barrier.cluster.arrive.relaxed raises to 8.0", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.BarrierClusterArrive(ptx.SemRelaxed)
		}, "8.0"},
		{"try_wait.parity stays 7.8", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierInit(ptx.SpaceShared, ptx.At(bar, 0), ptx.Imm(1))
			e.MbarrierWait(ptx.SpaceSharedCTA, ptx.ScopeDefault, ptx.At(bar, 0), ptx.Imm(0))
			e.MbarrierInval(ptx.SpaceSharedCTA, ptx.At(bar, 0))
		}, "7.8"},
		{"try_wait.parity.acquire.cluster raises to 8.0", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierTryWaitParity(ptx.SpaceShared, ptx.ScopeCluster, e.Pred(), ptx.At(bar, 0), ptx.Imm(0))
		}, "8.0"},
		{"arrive.release.cta raises to 8.0", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierArrive(ptx.SpaceShared, ptx.ScopeCTA, e.Reg(ptx.B64), ptx.At(bar, 0))
		}, "8.0"},
		{"arrive on another CTA's barrier raises to 8.0", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierArrive(ptx.SpaceSharedCluster, ptx.ScopeDefault, ptx.Sink{}, ptx.At(r, 0))
		}, "8.0"},
		{"arrive.expect_tx raises to 8.0", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierArriveExpectTx(ptx.SpaceShared, ptx.ScopeDefault, e.Reg(ptx.B64), ptx.At(bar, 0), ptx.Imm(16))
		}, "8.0"},
		{"fence.mbarrier_init raises to 8.0", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.FenceMbarrierInit()
		}, "8.0"},
		{"cp.async.bulk raises to 8.0", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.CpAsyncBulk(ptx.At(buf, 0), ptx.At(g, 0), ptx.Imm(16), ptx.At(bar, 0))
		}, "8.0"},
		{"cp.async.bulk.shared::cta raises to 8.6", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Emit("cp", []string{"async", "bulk", "shared::cta", "global", "mbarrier::complete_tx::bytes"},
				ptx.At(buf, 0), ptx.At(g, 0), ptx.Imm(16), ptx.At(bar, 0))
		}, "8.6"},
		{"st.async raises to 8.1", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.StAsync(ptx.B32, ptx.At(r, 0), r, ptx.At(r, 8))
		}, "8.1"},
		{"red.async raises to 8.1", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.RedAsync("add", ptx.U32, ptx.At(r, 0), r, ptx.At(r, 8))
		}, "8.1"},
		{"elect.sync raises to 8.0", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.ElectSync(ptx.Sink{}, e.Pred(), ptx.Imm(-1))
		}, "8.0"},
		{"griddepcontrol stays 7.8", ptx.SM90, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.GridDepLaunchDependents()
			e.GridDepWait()
		}, "7.8"},
		{"everything on sm_90a stays 8.0", ptx.SM90a, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.ElectSync(r, e.Pred(), ptx.Imm(-1))
			e.CpAsyncBulk(ptx.At(buf, 0), ptx.At(g, 0), ptx.Imm(16), ptx.At(bar, 0))
		}, "8.0"},
		{"mbarrier init/arrive/test_wait/inval on sm_80 stay 7.0", ptx.SM80, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			st := e.Reg(ptx.B64)
			e.MbarrierInit(ptx.SpaceShared, ptx.At(bar, 0), ptx.Imm(32))
			e.MbarrierArrive(ptx.SpaceShared, ptx.ScopeDefault, st, ptx.At(bar, 0))
			e.MbarrierArrive(ptx.SpaceNone, ptx.ScopeDefault, st, ptx.At(g, 0))
			e.Emit("mbarrier", []string{"test_wait", "shared", "b64"}, e.Pred(), ptx.At(bar, 0), st)
			e.MbarrierInval(ptx.SpaceShared, ptx.At(bar, 0))
		}, "7.0"},
		{"mbarrier.test_wait.parity on sm_80 raises to 7.1", ptx.SM80, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Emit("mbarrier", []string{"test_wait", "parity", "shared", "b64"}, e.Pred(), ptx.At(bar, 0), r)
		}, "7.1"},
		{"mbarrier.init.shared::cta on sm_80 raises to 7.8", ptx.SM80, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierInit(ptx.SpaceSharedCTA, ptx.At(bar, 0), ptx.Imm(1))
		}, "7.8"},
		{"ld.shared::cta on sm_80 raises to 7.8", ptx.SM80, func(e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Ld(ptx.SpaceSharedCTA, r, ptx.At(buf, 0))
		}, "7.8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, e, bar, buf, g, r := clusterEntry(tc.target)
			tc.build(e, bar, buf, g, r)
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
			if err := ptx.RoundTrip(m); err != nil {
				t.Error(err)
			}
		})
	}
}

// st.async and red.async need PTX 8.1 on sm_90: text that declares 8.0 is
// what the driver rejects; Parse says so.
func TestAsyncStoreVersionTooOld(t *testing.T) {
	for _, tc := range []struct {
		build func(e *ptx.Entry, r ptx.Reg)
		want  string
	}{
		{func(e *ptx.Entry, r ptx.Reg) { e.StAsync(ptx.B32, ptx.At(r, 0), r, ptx.At(r, 8)) },
			"`st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 \t[%r0], %r0, [%r0+8];` needs PTX 8.1, module declares 8.0"},
		{func(e *ptx.Entry, r ptx.Reg) { e.RedAsync("add", ptx.U32, ptx.At(r, 0), r, ptx.At(r, 8)) },
			"`red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 \t[%r0], %r0, [%r0+8];` needs PTX 8.1, module declares 8.0"},
	} {
		m, e, _, _, _, r := clusterEntry(ptx.SM90)
		tc.build(e, r)
		e.Ret()
		if err := m.Build(); err != nil {
			t.Fatal(err)
		}
		_, err := ptx.Parse(strings.Replace(ptx.Text(m), ".version 8.1", ".version 8.0", 1))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse at PTX 8.0: %v, want an error containing %q", err, tc.want)
		}
	}
}

// Every operation and type red.async has prints, verifies and reads back.
func TestRedAsyncForms(t *testing.T) {
	m, e, _, _, g, r := clusterEntry(ptx.SM90)
	for _, f := range []struct {
		op string
		t  ptx.Type
	}{
		{"add", ptx.U32}, {"add", ptx.S32}, {"add", ptx.U64}, {"inc", ptx.U32}, {"dec", ptx.U32},
		{"min", ptx.U32}, {"min", ptx.S32}, {"max", ptx.U32}, {"max", ptx.S32},
		{"and", ptx.B32}, {"or", ptx.B32}, {"xor", ptx.B32},
	} {
		var v ptx.Operand = r
		if f.t.Bits() == 64 {
			v = g
		}
		e.RedAsync(f.op, f.t, ptx.At(r, 8), v, ptx.At(r, 0))
	}
	e.Ret()
	if err := m.Build(); err != nil {
		t.Fatal(err)
	}
	if err := ptx.RoundTrip(m); err != nil {
		t.Error(err)
	}
}

// Below sm_90 (sm_80 for the base mbarrier forms) the verify pass names
// the instruction, what it needs and the target.
func TestClusterVerifyRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target ptx.Target
		build  func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg)
		want   string
		noPos  bool
	}{
		// What the target lacks.
		{".explicitcluster on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.ExplicitCluster = true
		}, "entry k: .explicitcluster needs thread-block clusters (sm_90+); target sm_80 lacks it", true},
		{"%cluster_ctaid.y on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Mov(r, ptx.ClusterCtaIDY)
		}, "`mov.u32 %r0, %cluster_ctaid.y;`: special register %cluster_ctaid.y needs thread-block clusters (sm_90+); target sm_80 lacks it", false},
		{"%is_explicit_cluster on sm_89", ptx.SM89, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Mov(e.Pred(), ptx.IsExplicitCluster)
		}, "special register %is_explicit_cluster needs thread-block clusters (sm_90+); target sm_89 lacks it", false},
		{"%nclusterid.x on sm_86", ptx.SM86, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Mov(r, ptx.NClusterIDX)
		}, "special register %nclusterid.x needs thread-block clusters (sm_90+); target sm_86 lacks it", false},
		{"mbarrier.try_wait.parity on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierTryWaitParity(ptx.SpaceShared, ptx.ScopeDefault, e.Pred(), ptx.At(bar, 0), ptx.Imm(0))
		}, "`mbarrier.try_wait.parity.shared.b64 %p0, [bar], 0;`: needs mbarrier try_wait, transaction counts and orderings (sm_90+); target sm_80 lacks it", false},
		{"mbarrier.arrive.expect_tx on sm_89", ptx.SM89, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierArriveExpectTx(ptx.SpaceShared, ptx.ScopeDefault, e.Reg(ptx.B64), ptx.At(bar, 0), ptx.Imm(16))
		}, "`mbarrier.arrive.expect_tx.shared.b64 %rd1, [bar], 16;`: needs mbarrier try_wait, transaction counts and orderings (sm_90+); target sm_89 lacks it", false},
		{"mbarrier.arrive with a count on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Emit("mbarrier", []string{"arrive", "shared", "b64"}, e.Reg(ptx.B64), ptx.At(bar, 0), ptx.Imm(2))
		}, "needs mbarrier try_wait, transaction counts and orderings (sm_90+); target sm_80 lacks it", false},
		{"mbarrier.arrive.release.cta on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierArrive(ptx.SpaceShared, ptx.ScopeCTA, e.Reg(ptx.B64), ptx.At(bar, 0))
		}, "`mbarrier.arrive.release.cta.shared.b64 %rd1, [bar];`: needs mbarrier try_wait, transaction counts and orderings (sm_90+); target sm_80 lacks it", false},
		{"mbarrier.arrive.shared::cluster on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierArrive(ptx.SpaceSharedCluster, ptx.ScopeDefault, ptx.Sink{}, ptx.At(r, 0))
		}, "`mbarrier.arrive.shared::cluster.b64 _, [%r0];`: needs thread-block clusters (sm_90+); target sm_80 lacks it", false},
		{"mbarrier.init on sm_75", ptx.SM75, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierInit(ptx.SpaceShared, ptx.At(bar, 0), ptx.Imm(1))
		}, "`mbarrier.init.shared.b64 [bar], 1;`: needs mbarrier (sm_80+); target sm_75 lacks it", false},
		{"mbarrier.arrive on sm_75", ptx.SM75, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierArrive(ptx.SpaceShared, ptx.ScopeDefault, e.Reg(ptx.B64), ptx.At(bar, 0))
		}, "needs mbarrier (sm_80+); target sm_75 lacks it", false},
		{"mbarrier.inval on sm_75", ptx.SM75, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierInval(ptx.SpaceShared, ptx.At(bar, 0))
		}, "`mbarrier.inval.shared.b64 [bar];`: needs mbarrier (sm_80+); target sm_75 lacks it", false},
		{"fence.mbarrier_init on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.FenceMbarrierInit()
		}, "`fence.mbarrier_init.release.cluster;`: needs thread-block clusters (sm_90+); target sm_80 lacks it", false},
		{"st.async on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.StAsync(ptx.B32, ptx.At(r, 0), r, ptx.At(r, 8))
		}, "`st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%r0], %r0, [%r0+8];`: needs .shared::cluster (sm_90+); target sm_80 lacks it", false},
		{"red.async on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.RedAsync("add", ptx.U32, ptx.At(r, 0), r, ptx.At(r, 8))
		}, "`red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%r0], %r0, [%r0+8];`: needs .shared::cluster (sm_90+); target sm_80 lacks it", false},
		{"red.async.inc.s32", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.RedAsync("inc", ptx.S32, ptx.At(r, 0), r, ptx.At(r, 8))
		}, "red.async.inc takes .u32, not .s32", false},
		{"red.async.min.u64", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.RedAsync("min", ptx.U64, ptx.At(r, 0), g, ptx.At(r, 8))
		}, "red.async.min takes .u32 or .s32, not .u64", false},
		{"red.async.exch", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.RedAsync("exch", ptx.B32, ptx.At(r, 0), r, ptx.At(r, 8))
		}, "red.async needs an operation (add, min, max, inc, dec, and, or, xor)", false},
		{"cp.async.bulk on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.CpAsyncBulk(ptx.At(buf, 0), ptx.At(g, 0), ptx.Imm(16), ptx.At(bar, 0))
		}, "`cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [%rd0], 16, [bar];`: needs cp.async.bulk (sm_90+); target sm_80 lacks it", false},
		{"elect.sync on sm_89", ptx.SM89, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.ElectSync(ptx.Sink{}, e.Pred(), ptx.Imm(-1))
		}, "`elect.sync _|%p0, -1;`: needs elect.sync (sm_90+); target sm_89 lacks it", false},
		{"griddepcontrol.wait on sm_89", ptx.SM89, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.GridDepWait()
		}, "`griddepcontrol.wait;`: needs griddepcontrol (sm_90+); target sm_89 lacks it", false},
		{"griddepcontrol without an action", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Emit("griddepcontrol", nil)
		}, "griddepcontrol needs .wait or .launch_dependents", false},
		{"barrier.cluster.wait on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.BarrierClusterWait(ptx.SemAcquire)
		}, "`barrier.cluster.wait.acquire.aligned;`: needs thread-block clusters (sm_90+); target sm_80 lacks it", false},
		{"mapa on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Mapa(ptx.SpaceSharedCluster, r, bar, ptx.Imm(1))
		}, "`mapa.shared::cluster.u32 %r0, bar, 1;`: needs thread-block clusters (sm_90+); target sm_80 lacks it", false},
		{"atom.shared::cluster on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Atom(ptx.SpaceSharedCluster, "add", r, ptx.At(r, 0), ptx.Imm(1))
		}, "needs .shared::cluster (sm_90+); target sm_80 lacks it", false},

		// Forms PTX does not have.
		{"sink as a load's destination", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Emit("ld", []string{"shared", "u32"}, ptx.Sink{}, ptx.At(buf, 0))
		}, "`ld.shared.u32 _, [buf];`: the sink _ is not allowed here", false},
		{"state from another CTA's barrier", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierArrive(ptx.SpaceSharedCluster, ptx.ScopeDefault, e.Reg(ptx.B64), ptx.At(r, 0))
		}, "operand %rd1 must be the sink _ here", false},
		{"mbarrier state of 32 bits", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierArrive(ptx.SpaceShared, ptx.ScopeDefault, e.Reg(ptx.U32), ptx.At(bar, 0))
		}, "operand %r1 has type u32, instruction wants b64", false},
		{"mbarrier without .b64", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Emit("mbarrier", []string{"inval", "shared"}, ptx.At(bar, 0))
		}, "mbarrier.inval needs .b64", false},
		{"mbarrier.try_wait.release", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Emit("mbarrier", []string{"try_wait", "parity", "release", "shared", "b64"}, e.Pred(), ptx.At(bar, 0), r)
		}, "unexpected qualifier .release.shared.b64", false},
		{"mbarrier.init.shared::cluster", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.MbarrierInit(ptx.SpaceSharedCluster, ptx.At(r, 0), ptx.Imm(1))
		}, "unexpected qualifier .shared::cluster.b64", false},
		{"mbarrier of a global variable", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			v := &ptx.Var{Name: "gv", Space: ptx.SpaceGlobal, Elem: ptx.B64, Len: 1, Align: 8}
			m.Vars = append(m.Vars, v)
			e.MbarrierInit(ptx.SpaceShared, ptx.At(v, 0), ptx.Imm(1))
		}, "variable gv is in .global, instruction accesses .shared", false},
		{"fence.mbarrier_init.acquire", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Emit("fence", []string{"mbarrier_init", "acquire", "cluster"})
		}, "fence.mbarrier_init needs .release", false},
		{"cp.async.bulk from a 32-bit address", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.CpAsyncBulk(ptx.At(buf, 0), ptx.At(r, 0), ptx.Imm(16), ptx.At(bar, 0))
		}, "address register %r0 is u32: 64 bits needed (32 allowed for shared)", false},
		{"cp.async.bulk from shared memory", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.CpAsyncBulk(ptx.At(buf, 0), ptx.At(buf, 64), ptx.Imm(16), ptx.At(bar, 0))
		}, "variable buf is in .shared, instruction accesses .global", false},
		{"cp.async.bulk without the completion", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Emit("cp", []string{"async", "bulk", "shared::cluster", "global"}, ptx.At(buf, 0), ptx.At(g, 0), ptx.Imm(16), ptx.At(bar, 0))
		}, "cp.async.bulk needs .mbarrier::complete_tx::bytes", false},
		{"elect.sync into a 64-bit lane", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.ElectSync(g, e.Pred(), ptx.Imm(-1))
		}, "operand %rd0 has type u64, instruction wants b32", false},
		{"mapa.b32", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Emit("mapa", []string{"shared::cluster", "b32"}, r, r, ptx.Imm(1))
		}, "mapa needs .u32 or .u64, not .b32", false},
		{"generic mapa of a variable", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Mapa(ptx.SpaceNone, g, bar, ptx.Imm(1))
		}, "a symbol's address can only be taken by mov into a 32- or 64-bit integer", false},
		{"mapa of a global variable", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			v := &ptx.Var{Name: "gv", Space: ptx.SpaceGlobal, Elem: ptx.U32, Len: 1, Align: 4}
			m.Vars = append(m.Vars, v)
			e.Mapa(ptx.SpaceSharedCluster, r, v, ptx.Imm(1))
		}, "mapa.shared::cluster maps a .shared variable, not gv", false},
		// Memory orderings of global accesses, for spins on other CTAs' words.
		{"atom.or.u32", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Atom(ptx.SpaceGlobal, "or", r, ptx.At(g, 0), ptx.Imm(0)) // ptxas: .or requires .b32 or .b64
		}, "atom.or needs a bit type (.b32 or .b64), not .u32", false},
		{"ld.relaxed without a scope", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Emit("ld", []string{"relaxed", "global", "u32"}, r, ptx.At(g, 0))
		}, "ld.relaxed needs a scope (.cta, .cluster, .gpu or .sys)", false},
		{"st.acquire", ptx.SM90, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.Emit("st", []string{"acquire", "gpu", "global", "u32"}, ptx.At(g, 0), r)
		}, "expected a type qualifier, found \"acquire\"", false},
		{"ld.relaxed.cluster on sm_80", ptx.SM80, func(m *ptx.Module, e *ptx.Entry, bar, buf *ptx.Var, g, r ptx.Reg) {
			e.LdStrong(ptx.SpaceGlobal, ptx.SemRelaxed, ptx.ScopeCluster, r, ptx.At(g, 0))
		}, "`ld.relaxed.cluster.global.u32 %r0, [%rd0];`: needs thread-block clusters (sm_90+); target sm_80 lacks it", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, e, bar, buf, g, r := clusterEntry(tc.target)
			tc.build(m, e, bar, buf, g, r)
			errs := buildErrors(m)
			if len(errs) != 1 {
				t.Fatalf("want one error containing %q, got %d:\n%s", tc.want, len(errs), strings.Join(errs, "\n"))
			}
			if !strings.Contains(errs[0], tc.want) {
				t.Errorf("error %q\ndoes not contain %q", errs[0], tc.want)
			}
			if !tc.noPos && !strings.HasPrefix(errs[0], "ptx/cluster_test.go:") {
				t.Errorf("error %q does not start with the test's file:line", errs[0])
			}
		})
	}
}

// The same instructions verify on every target from sm_90 on.
func TestClusterVerifyAccepts(t *testing.T) {
	for _, tg := range []ptx.Target{ptx.SM90, ptx.SM90a, ptx.SM100, ptx.SM100a, ptx.SM120} {
		m, e, bar, buf, g, r := clusterEntry(tg)
		e.ExplicitCluster = true
		e.ReqNCTAPerCluster = ptx.Dim3{2}
		e.Mov(r, ptx.ClusterCtaIDX)
		p := e.Pred()
		e.Mov(p, ptx.IsExplicitCluster)
		e.ElectSync(ptx.Sink{}, p, ptx.Imm(-1))
		e.MbarrierInit(ptx.SpaceShared, ptx.At(bar, 0), ptx.Imm(1))
		e.FenceMbarrierInit()
		e.BarrierClusterArrive(ptx.SemRelaxed)
		e.BarrierClusterWait(ptx.SemAcquire)
		e.MbarrierArriveExpectTx(ptx.SpaceShared, ptx.ScopeCTA, e.Reg(ptx.B64), ptx.At(bar, 0), ptx.Imm(1024))
		e.CpAsyncBulk(ptx.At(buf, 0), ptx.At(g, 0), ptx.Imm(1024), ptx.At(bar, 0))
		e.MbarrierWait(ptx.SpaceShared, ptx.ScopeCTA, ptx.At(bar, 0), ptx.Imm(0))
		rb := e.Reg(ptx.U32)
		e.Mapa(ptx.SpaceSharedCluster, rb, bar, ptx.Imm(1))
		e.MbarrierArrive(ptx.SpaceSharedCluster, ptx.ScopeCluster, ptx.Sink{}, ptx.At(rb, 0))
		e.LdStrong(ptx.SpaceGlobal, ptx.SemRelaxed, ptx.ScopeGPU, r, ptx.At(g, 0))
		e.LdStrong(ptx.SpaceGlobal, ptx.SemAcquire, ptx.ScopeCluster, ptx.Vec{r, rb}, ptx.At(g, 8))
		e.StStrong(ptx.SpaceGlobal, ptx.SemRelease, ptx.ScopeGPU, ptx.U32, ptx.At(g, 0), r)
		e.StStrong(ptx.SpaceGlobal, ptx.SemRelaxed, ptx.ScopeSys, ptx.U64, ptx.At(g, 8), g)
		e.Ret()
		if err := m.Build(); err != nil {
			t.Errorf("%s: %v", tg, err)
		}
		if err := ptx.RoundTrip(m); err != nil {
			t.Errorf("%s: %v", tg, err)
		}
	}
}

// elect.sync writes its lane and its predicate; the sink is no register.
func TestElectReadsWrites(t *testing.T) {
	_, e := verifyEntry(ptx.SM90)
	lane, mask := e.Reg(ptx.U32), e.Reg(ptx.U32)
	p := e.Pred()
	in := e.Emit("elect", []string{"sync"}, lane, p, mask)
	if got, want := fmt.Sprint(in.Writes()), fmt.Sprint([]ptx.Operand{lane, p}); got != want {
		t.Errorf("Writes = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(in.Reads()), fmt.Sprint([]ptx.Operand{mask}); got != want {
		t.Errorf("Reads = %s, want %s", got, want)
	}
	in = e.Emit("elect", []string{"sync"}, ptx.Sink{}, p, mask)
	if got := in.Writes(); len(got) != 1 {
		t.Errorf("elect.sync _|p writes %v, want p alone", got)
	}
	// The parser gives the sink back as Sink.
	m, e2 := verifyEntry(ptx.SM90)
	e2.ElectSync(ptx.Sink{}, e2.Pred(), ptx.Imm(-1))
	e2.Ret()
	if err := m.Build(); err != nil {
		t.Fatal(err)
	}
	pm, err := ptx.Parse(ptx.Text(m))
	if err != nil {
		t.Fatal(err)
	}
	if el := pm.Entries[0].Body[0].(*ptx.Inst); el.Args[0] != (ptx.Sink{}) {
		t.Errorf("parsed elect.sync operands %v", el.Args)
	}

	bar := ptx.At(e.Reg(ptx.U32), 0)
	in = e.Emit("mbarrier", []string{"arrive", "shared::cluster", "b64"}, ptx.Sink{}, bar)
	if got := in.Writes(); len(got) != 0 {
		t.Errorf("a remote arrive writes %v", got)
	}
	if f, v := in.Requires(); f != ptx.FeatCluster || v.String() != "8.0" {
		t.Errorf("remote arrive requires %v, %v", f, v)
	}
	mov := e.Emit("mov", []string{"u32"}, e.Reg(ptx.U32), ptx.ClusterNCtaIDZ)
	if f, v := mov.Requires(); f != ptx.FeatCluster || v.String() != "7.8" {
		t.Errorf("mov of %%cluster_nctaid.z requires %v, %v", f, v)
	}
}

// The parser reads d|p and _ only where the ISA has them.
func TestClusterParseErrors(t *testing.T) {
	m, e := verifyEntry(ptx.SM90)
	r := written(e, ptx.U32)
	e.ElectSync(r, e.Pred(), ptx.Imm(-1))
	e.Ret()
	if err := m.Build(); err != nil {
		t.Fatal(err)
	}
	good := ptx.Text(m)
	for _, tc := range []struct{ from, to, want string }{
		{"elect.sync \t%r0|%p0, -1;", "elect.sync \t%r0, %p0, -1;", "elect writes its first two operands as d|p"},
		{"elect.sync \t%r0|%p0, -1;", "add.u32 \t%r0|%p0, %r0;", "add does not take a pair d|p"},
		{"elect.sync \t%r0|%p0, -1;", "add.u32 \t%r0, _, 1;", "the sink _ is not allowed here"},
		{"elect.sync \t%r0|%p0, -1;", "st.async.shared::cluster.mbarrier::complete_tx::bytes.u16 \t[%r0], %r0, [%r0];", "st.async stores 32- or 64-bit values"},
		{"elect.sync \t%r0|%p0, -1;", "st.async.shared::cta.mbarrier::complete_tx::bytes.b32 \t[%r0], %r0, [%r0];", "st.async needs the .shared::cluster space"},
		{"elect.sync \t%r0|%p0, -1;", "ld.async.shared::cluster.b32 \t%r0, [%r0];", "ld has no .async form"},
		{"elect.sync \t%r0|%p0, -1;", "red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.f32 \t[%r0], %r0, [%r0];", "red.async.add takes .u32 or .s32 or .u64, not .f32"},
		{"elect.sync \t%r0|%p0, -1;", "red.async.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 \t[%r0], %r0, [%r0];", "red.async needs .relaxed"},
		{"elect.sync \t%r0|%p0, -1;", "red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.exch.b32 \t[%r0], %r0, [%r0];", "red.async needs an operation"},
		{"elect.sync \t%r0|%p0, -1;", "atom.async.shared::cluster.add.u32 \t%r0, [%r0], 1;", "atom has no .async form"},
	} {
		text := strings.Replace(good, tc.from, tc.to, 1)
		if text == good {
			t.Fatalf("%q not in the text", tc.from)
		}
		_, err := ptx.Parse(text)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: error %v, want one naming a line and containing %q", tc.to, err, tc.want)
		}
	}
}
