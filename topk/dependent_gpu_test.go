//go:build cuda

package topk

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/runtime"
)

// slowCopy loads slowCopyModule's kernel on d.
func slowCopy(t *testing.T, d *runtime.Device, spin int64) *runtime.Kernel {
	t.Helper()
	m, err := slowCopyModule(d.Info().Target, spin)
	must(t, err)
	l, err := ptx.LaunchOf(m, "slow_copy", 0)
	must(t, err)
	k, err := d.Load(ptx.Text(m), l)
	must(t, err)
	return k
}

// TestDependentLaunch: a Selector with DependentLaunch selects from rows
// that the kernel before it on the stream writes ~10 us after letting it
// start, step after step of a decode loop (each step's output the next
// one's prediction), eagerly and replayed from a graph captured at the
// first predicted step: exact, and
// the same as a plain selector's. Without the kernels' wait they would
// read the previous step's rows. Two shapes: four rows of 70000, and one
// row of about 1M, which the H100's tuning shares between several
// clusters (a cooperative launch with the programmatic serialization).
func TestDependentLaunch(t *testing.T) {
	d := gpu(t)
	if d.Info().Major < 9 {
		t.Skipf("%v: programmatic dependent launch needs compute capability 9.0", d)
	}
	for _, c := range []struct{ rows, stride, start int }{{4, 70000, 30000}, {1, 1048573, 1048573 - 20}} {
		t.Run(fmt.Sprintf("%dx%d", c.rows, c.stride), func(t *testing.T) { dependentLaunch(t, d, c.rows, c.stride, c.start) })
	}
}

// dependentLaunch is TestDependentLaunch on rows rows of stride floats,
// whose lengths grow from start + 7001*row.
func dependentLaunch(t *testing.T, d *runtime.Device, rows, stride, start int) {
	const steps = 8
	cfg := Config{MaxRows: rows, Values: true, Device: d}
	plainSel, err := NewSelector(cfg)
	must(t, err)
	defer plainSel.Close()
	cfg.DependentLaunch = true
	var sels [2]*Selector // eager, graph
	for i := range sels {
		sels[i], err = NewSelector(cfg)
		must(t, err)
		defer sels[i].Close()
	}
	k := cfg.withDefaults().K
	copier := slowCopy(t, d, 20000)
	st, err := d.NewStream()
	must(t, err)
	defer st.Close()
	staging, lenBuf := alloc(t, d, 4*rows*stride), alloc(t, d, 4*rows)
	var scores [2]*runtime.Buffer
	for i := range scores {
		scores[i] = alloc(t, d, 4*rows*stride)
	}
	plainScores := alloc(t, d, 4*rows*stride)
	traj := make([]*Decode, rows)
	for r := range traj {
		first := start + 7001*r
		traj[r] = NewDecode(first, first+steps, 0, uint64(300+r))
	}
	// One step of sel on scores: the copy into them, then the selection.
	step := func(sel *Selector, dst *runtime.Buffer) (Result, error) {
		args := copier.Args().Set("dst", dst.Ptr()).Set("src", staging.Ptr()).Set("n", uint64(rows*stride))
		// Eight CTAs: the selection's CTAs start early only on SMs the copy
		// leaves free (with one on every SM, none did).
		if err := copier.Launch(st, 8, args); err != nil {
			return Result{}, err
		}
		return sel.Select(0, Batch{Scores: dst, Stride: stride, Rows: rows, DeviceLengths: lenBuf}, st)
	}
	var g stepGraph
	defer g.close()
	var graphRes Result
	for s := range steps {
		x, host, lengths := nextRows(traj, stride)
		must(t, runtime.UploadAsync(st, staging, host))
		must(t, runtime.UploadAsync(st, lenBuf, lengths))
		eager, err := step(sels[0], scores[0])
		must(t, err)
		g.run(t, st, s, func() error {
			var err error
			graphRes, err = step(sels[1], scores[1])
			return err
		})
		must(t, st.Synchronize())
		must(t, runtime.Upload(plainScores, host))
		plain, err := plainSel.Select(0, Batch{Scores: plainScores, Stride: stride, Rows: rows, DeviceLengths: lenBuf}, nil)
		must(t, err)
		pi, err := plain.ReadIndices()
		must(t, err)
		pv, err := plain.ReadValues()
		must(t, err)
		for name, res := range map[string]Result{"eager": eager, "graph": graphRes} {
			idx, err := res.ReadIndices()
			must(t, err)
			vals, err := res.ReadValues()
			must(t, err)
			for r := range rows {
				want, _ := Reference(x[r], k, false)
				if err := checkRow(x[r], want, idx[r*k:(r+1)*k], vals[r*k:(r+1)*k], false); err != nil {
					t.Fatalf("%s, step %d, row %d (%s): %v", name, s, r, res.Kernel, err)
				}
			}
			if !slices.Equal(idx, pi) || !slices.Equal(math32bits(vals), math32bits(pv)) {
				t.Fatalf("%s, step %d: dependent launches (%s) and plain ones (%s) differ", name, s, res.Kernel, plain.Kernel)
			}
		}
		if s == steps-1 {
			t.Logf("last step: %s, cluster %d, groups %d", eager.Kernel, eager.Cluster, eager.Groups)
		}
	}
}
