//go:build cuda

package runtime

import (
	"strings"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// TestStreamOrdering: Stream.Wait orders one stream's work after an event
// of another, Event.Done tells finished work from running work, and
// Stream.Close waits for the stream's work.
func TestStreamOrdering(t *testing.T) {
	d := device(t)
	k := loadCountGE(t, d)
	// One CTA over a 16M-float row takes milliseconds: long enough for the
	// host to see it running.
	const n = 1 << 24
	scores, err := d.Alloc(4 * n)
	must(t, err)
	defer scores.Free()
	lens, err := d.Alloc(4)
	must(t, err)
	defer lens.Free()
	thr, err := d.Alloc(4)
	must(t, err)
	defer thr.Free()
	out, err := d.Alloc(4)
	must(t, err)
	defer out.Free()
	must(t, Upload(lens, []int32{n}))
	must(t, Upload(thr, []float32{-1})) // every zero counts: out = n
	params := k.Args().Set("scores", scores.Ptr()).Set("row_stride", n).Set("lengths", lens.Ptr()).
		Set("thresholds", thr.Ptr()).Set("counts", out.Ptr())

	a, err := d.NewStream()
	must(t, err)
	defer a.Close()
	b, err := d.NewStream()
	must(t, err)
	defer b.Close()
	ev, err := d.NewSyncEvent()
	must(t, err)
	defer ev.Close()
	if done, err := ev.Done(); err != nil || !done {
		t.Errorf("Done() of an event never recorded = %v, %v; want true", done, err)
	}

	for range 4 {
		must(t, k.Launch(a, 1, params))
	}
	must(t, ev.Record(a))
	if done, err := ev.Done(); err != nil || done {
		t.Errorf("Done() right after queueing milliseconds of work = %v, %v; want false", done, err)
	}
	// B's memset must come after A's counts: the last write wins.
	must(t, b.Wait(ev))
	must(t, out.Memset32(b, 7))
	must(t, b.Synchronize())
	got := []uint32{0}
	must(t, Download(got, out))
	if got[0] != 7 {
		t.Errorf("after B waited for A: out = %d, want B's 7 (A's count %d came last)", got[0], n)
	}
	if done, err := ev.Done(); err != nil || !done {
		t.Errorf("Done() after the work = %v, %v; want true", done, err)
	}
	// Done may be asked while the goroutine captures a graph.
	g, err := b.Capture(func() error {
		if _, err := ev.Done(); err != nil {
			return err
		}
		return out.Memset32(b, 1)
	})
	must(t, err)
	must(t, g.Close())
	if _, err := Elapsed(ev, ev); err == nil {
		t.Error("Elapsed of a sync event: no error")
	}

	// Close waits for the stream's work.
	c, err := d.NewStream()
	must(t, err)
	for range 4 {
		must(t, k.Launch(c, 1, params))
	}
	must(t, ev.Record(c))
	if c.Closed() {
		t.Error("Closed() before Close")
	}
	must(t, c.Close())
	if !c.Closed() {
		t.Error("Closed() after Close = false")
	}
	if done, err := ev.Done(); err != nil || !done {
		t.Errorf("Done() after the stream's Close = %v, %v; want true", done, err)
	}
	if err := c.Wait(ev); err == nil {
		t.Error("Wait on a closed stream: no error")
	}
	if (*Stream)(nil).Closed() {
		t.Error("the default stream reports Closed")
	}
}

// clusterKernel is a kernel of clusters of c CTAs of 64 threads with
// sharedBytes of dynamic shared memory each: thread 0 of each CTA writes
// its rank in the cluster and the cluster's size to out[2*ctaid].
func clusterKernel(t *testing.T, c, sharedBytes int) (string, ptx.Launch) {
	t.Helper()
	m := ptx.NewModule(ptx.SM90)
	e := m.NewEntry("cluster_ranks")
	e.ReqNTID = ptx.Dim3{64}
	e.ReqNCTAPerCluster = ptx.Dim3{c}
	outP := e.Param("out", ptx.U64)
	outP.PtrAlign = 4
	p := e.Reg(ptx.U64)
	e.CvtaToGlobal(p, e.LdParam(outP))
	tid, cta, rank, size := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
	e.Mov(tid, ptx.TidX)
	e.Mov(cta, ptx.CtaIDX)
	e.Mov(rank, ptx.ClusterCtaRank)
	e.Mov(size, ptx.ClusterNCtaRank)
	first := e.Pred()
	e.Setp(first, ptx.EQ, tid, ptx.Imm(0))
	e.If(first, func() {
		a := e.Reg(ptx.U64)
		e.MulWide(a, cta, ptx.Imm(8))
		e.Add(a, a, p)
		e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(a, 0), rank)
		e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(a, 4), size)
	})
	e.Ret()
	must(t, m.Build())
	l, err := ptx.LaunchOf(m, "cluster_ranks", sharedBytes)
	must(t, err)
	return ptx.Text(m), l
}

// TestClusterLaunch: a kernel declaring .reqnctapercluster C launches
// through the plain launch for C = 2 to 16 (16 after the non-portable
// opt-in at load), each CTA in a cluster of C with its own rank; the
// occupancy is asked at load; a grid that is not whole clusters is refused.
func TestClusterLaunch(t *testing.T) {
	d := device(t)
	if d.Info().Major < 9 {
		t.Skipf("%v has no clusters", d)
	}
	const clusters = 6
	out, err := d.Alloc(8 * 16 * clusters)
	must(t, err)
	defer out.Free()
	for _, c := range []int{2, 4, 8, 16} {
		text, l := clusterKernel(t, c, 100<<10) // 100 KB: one CTA of a cluster per SM
		k, err := d.Load(text, l)
		if err != nil {
			t.Fatalf("cluster of %d: %v", c, err)
		}
		if k.MaxActiveClusters < 1 || l.NonPortableCluster != (c > 8) {
			t.Errorf("cluster of %d: MaxActiveClusters %d, NonPortableCluster %v", c, k.MaxActiveClusters, l.NonPortableCluster)
		}
		t.Logf("clusters of %d CTAs with 100 KB each: %d resident at once", c, k.MaxActiveClusters)
		must(t, out.Memset32(nil, 0xFFFFFFFF))
		args := k.Args().Set("out", out.Ptr())
		must(t, k.Launch(nil, clusters*c, args))
		must(t, d.Synchronize())
		got := make([]uint32, 2*clusters*c)
		must(t, Download(got, out))
		for cta := range clusters * c {
			if rank, size := got[2*cta], got[2*cta+1]; rank != uint32(cta%c) || size != uint32(c) {
				t.Errorf("cluster of %d: CTA %d has rank %d in a cluster of %d; want %d of %d", c, cta, rank, size, cta%c, c)
			}
		}
		if err := k.Launch(nil, clusters*c+1, args); err == nil || !strings.Contains(err.Error(), "not a whole number of clusters") {
			t.Errorf("cluster of %d, a grid of %d CTAs: %v", c, clusters*c+1, err)
		}
	}
}

// waitAllKernel is a kernel of clusters of c CTAs of 64 threads with
// 100 KB of dynamic shared memory each (one CTA an SM), whose CTAs wait
// for each other through global memory: thread 0 of each adds one to
// count[0], then polls it until every CTA of the grid has (grid CTAs),
// then writes 1 to out[ctaid]. Launched with CTAs not all resident, it
// would never end. Its contract declares cooperative groups of coop CTAs
// (0: none declared).
func waitAllKernel(t *testing.T, c, coop int) (string, ptx.Launch) {
	t.Helper()
	m := ptx.NewModule(ptx.SM90)
	e := m.NewEntry("wait_all")
	e.ReqNTID = ptx.Dim3{64}
	e.ReqNCTAPerCluster = ptx.Dim3{c}
	e.Cooperative = coop
	countP, outP := e.Param("count", ptx.U64), e.Param("out", ptx.U64)
	countP.PtrAlign, outP.PtrAlign = 4, 4
	count, out := e.Reg(ptx.U64), e.Reg(ptx.U64)
	e.CvtaToGlobal(count, e.LdParam(countP))
	e.CvtaToGlobal(out, e.LdParam(outP))
	tid, cta, grid := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
	e.Mov(tid, ptx.TidX)
	e.Mov(cta, ptx.CtaIDX)
	e.Mov(grid, ptx.NCtaIDX)
	first := e.Pred()
	e.Setp(first, ptx.EQ, tid, ptx.Imm(0))
	e.If(first, func() {
		e.Red(ptx.SpaceGlobal, "add", ptx.U32, ptx.At(count, 0), ptx.Imm(1))
		seen := e.Reg(ptx.U32)
		e.DoWhile(func() {
			e.LdStrong(ptx.SpaceGlobal, ptx.SemRelaxed, ptx.ScopeGPU, seen, ptx.At(count, 0))
		}, func() ptx.Pred {
			p := e.Pred()
			e.Setp(p, ptx.LT, seen, grid)
			return p
		})
		a := e.Reg(ptx.U64)
		e.MulWide(a, cta, ptx.Imm(4))
		e.Add(a, a, out)
		e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(a, 0), ptx.Imm(1))
	})
	e.Ret()
	must(t, m.Build())
	l, err := ptx.LaunchOf(m, "wait_all", 100<<10)
	must(t, err)
	return ptx.Text(m), l
}

// TestLaunchCooperative: a cluster kernel whose CTAs wait for each other
// through global memory runs to its end when launched cooperatively with
// every cluster the device holds at once, on a stream and from a graph;
// one cluster more is refused at the launch, before anything runs.
func TestLaunchCooperative(t *testing.T) {
	d := device(t)
	if d.Info().Major < 9 {
		t.Skipf("%v has no clusters", d)
	}
	const c = 8
	text, l := waitAllKernel(t, c, 0)
	k, err := d.Load(text, l)
	must(t, err)
	grid := k.MaxActiveClusters * c
	count, err := d.Alloc(4)
	must(t, err)
	defer count.Free()
	out, err := d.Alloc(4 * (grid + c))
	must(t, err)
	defer out.Free()
	check := func(what string) {
		t.Helper()
		got := make([]uint32, grid+c)
		must(t, Download(got, out))
		for i, v := range got {
			if want := uint32(min(1, max(0, grid-i))); v != want {
				t.Fatalf("%s: out[%d] = %d, want %d", what, i, v, want)
			}
		}
	}
	args := k.Args().Set("count", count.Ptr()).Set("out", out.Ptr())
	must(t, count.Memset32(nil, 0))
	must(t, out.Memset32(nil, 0))
	must(t, k.LaunchCooperative(nil, grid, args, false))
	must(t, d.Synchronize())
	check("a stream")

	s, err := d.NewStream()
	must(t, err)
	defer s.Close()
	must(t, count.Memset32(nil, 0))
	must(t, out.Memset32(nil, 0))
	g, err := s.Capture(func() error { return k.LaunchCooperative(s, grid, args, false) })
	must(t, err)
	defer g.Close()
	must(t, g.Launch(s))
	must(t, s.Synchronize())
	check("a graph")

	err = k.LaunchCooperative(nil, grid+c, args, false)
	if err == nil || !strings.Contains(err.Error(), "COOPERATIVE") {
		t.Errorf("a cooperative launch of %d clusters, %d resident at once: error %v, want the driver's refusal", grid/c+1, grid/c, err)
	}
	must(t, d.Synchronize())
	t.Logf("clusters of %d: %d resident at once, all launched cooperatively", c, grid/c)
}

// TestLaunchUnits: LaunchUnits launches a kernel's units of work whatever
// they are: clusters of a cluster kernel (each CTA with its rank, as
// Launch over units*C CTAs), and cooperative groups of a kernel whose
// contract declares them (every CTA resident at once, or the wait_all
// kernel would never end); it passes a dependent launch on, and refuses
// no units.
func TestLaunchUnits(t *testing.T) {
	d := device(t)
	if d.Info().Major < 9 {
		t.Skipf("%v has no clusters", d)
	}
	const c, units = 4, 5
	text, l := clusterKernel(t, c, 100<<10)
	k, err := d.Load(text, l)
	must(t, err)
	out, err := d.Alloc(8 * c * units)
	must(t, err)
	defer out.Free()
	must(t, out.Memset32(nil, 0xFFFFFFFF))
	args := k.Args().Set("out", out.Ptr())
	must(t, k.LaunchUnits(nil, units, args, false))
	must(t, d.Synchronize())
	got := make([]uint32, 2*c*units)
	must(t, Download(got, out))
	for cta := range c * units {
		if rank, size := got[2*cta], got[2*cta+1]; rank != uint32(cta%c) || size != c {
			t.Errorf("units of a cluster of %d: CTA %d has rank %d in a cluster of %d", c, cta, rank, size)
		}
	}
	if err := k.LaunchUnits(nil, 0, args, false); err == nil || !strings.Contains(err.Error(), "0 units of 4 CTAs") {
		t.Errorf("no units: %v", err)
	}
	if err := k.LaunchUnits(nil, units, args, true); err == nil || !strings.Contains(err.Error(), "griddepcontrol.wait") {
		t.Errorf("a dependent launch of a kernel that does not wait first: %v", err)
	}

	// Groups of two clusters, as many as the device holds at once.
	text, l = waitAllKernel(t, c, 2*c)
	wk, err := d.Load(text, l)
	must(t, err)
	groups := wk.MaxActiveClusters / 2
	count, err := d.Alloc(4)
	must(t, err)
	defer count.Free()
	done, err := d.Alloc(4 * groups * 2 * c)
	must(t, err)
	defer done.Free()
	must(t, count.Memset32(nil, 0))
	must(t, done.Memset32(nil, 0))
	wargs := wk.Args().Set("count", count.Ptr()).Set("out", done.Ptr())
	if err := wk.Launch(nil, groups*2*c, wargs); err == nil || !strings.Contains(err.Error(), "LaunchUnits") {
		t.Errorf("a plain launch of cooperative groups: %v", err)
	}
	must(t, wk.LaunchUnits(nil, groups, wargs, false))
	must(t, d.Synchronize())
	ran := make([]uint32, groups*2*c)
	must(t, Download(ran, done))
	for i, v := range ran {
		if v != 1 {
			t.Fatalf("%d cooperative groups of %d CTAs: CTA %d did not end (out %d)", groups, 2*c, i, v)
		}
	}
	t.Logf("%d cooperative groups of %d CTAs launched as units", groups, 2*c)
}
