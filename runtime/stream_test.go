//go:build cuda

package runtime

import (
	"testing"
)

// TestStreamOrdering: Stream.Wait orders one stream's work after an event
// of another, Event.Done tells finished work from running work, and
// Stream.Close waits for the stream's work.
func TestStreamOrdering(t *testing.T) {
	d := device(t)
	k := genKernel(t, d, "count_ge", small)
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
