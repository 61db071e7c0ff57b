//go:build cuda

package topk

// TestFuzzGPU is differential fuzzing on the GPU, wazero-style: random
// cases from the same decoder as gen's interpreter fuzz targets
// (internal/fuzzcase: a kernel, a valid configuration, a row and a
// prediction) run on the device and must match Reference exactly; those
// with rows short enough also run in the interpreter, and the two must
// agree: sorted outputs bit for bit, unsorted ones as sets of (index,
// value bits) per row, and a fault on one side is a fault on the other.
//
// Case i of seed S is fuzzcase.Random(PCG(S, i)) with the kernel and
// configuration of configuration i % P (-gvr.fuzz-configs; configuration
// j is Random(PCG(S, 1<<32+j)), its target lowered to one the device
// runs): each configuration costs a generation and a JIT (about a second),
// so a run draws P of them and many rows for each. The cases run in
// parallel. A failing case is rerun alone with
//
//	topk.test -test.run 'TestFuzzGPU/cases/^case=i$' -gvr.fuzz-seed=S -gvr.fuzz-configs=P
//
// and, when its row fits the interpreter, the failure message holds the
// corpus file that replays it in gen's FuzzTopKConfig.

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/internal/fuzzcase"
	"github.com/gvr-go/gvr/ptx/emu"
	"github.com/gvr-go/gvr/runtime"
)

var (
	fuzzCases   = flag.Int("gvr.fuzz-cases", 200, "TestFuzzGPU: how many random cases to run")
	fuzzSeed    = flag.Uint64("gvr.fuzz-seed", 1, "TestFuzzGPU: the seed of the random cases")
	fuzzConfigs = flag.Int("gvr.fuzz-configs", 24, "TestFuzzGPU: how many kernel configurations the cases share")
	fuzzMaxN    = flag.Int("gvr.fuzz-max-n", 1<<18, "TestFuzzGPU: the longest row")
	fuzzInterpN = flag.Int("gvr.fuzz-interp-n", fuzzcase.InterpMaxN, "TestFuzzGPU: cases with rows up to this long also run in the interpreter (0: none)")
)

func TestFuzzGPU(t *testing.T) {
	d := gpu(t)
	if *fuzzConfigs < 1 {
		t.Fatalf("-gvr.fuzz-configs=%d: at least 1", *fuzzConfigs)
	}
	start := time.Now()
	var ran, interp, failed atomic.Int64
	t.Run("cases", func(t *testing.T) {
		for i := range *fuzzCases {
			p := fuzzParams(*fuzzSeed, i, *fuzzConfigs)
			p = p.ForSM(d.Info().Major*10 + d.Info().Minor)
			c, err := p.Case(*fuzzMaxN)
			if err != nil {
				t.Logf("case %d: %v", i, err) // no valid configuration: nothing to run
				continue
			}
			t.Run(fmt.Sprintf("case=%d", i), func(t *testing.T) {
				t.Parallel()
				ran.Add(1)
				defer func() {
					if !t.Failed() {
						return
					}
					failed.Add(1)
					t.Logf("case %d of seed %d: %v\nrerun: -test.run 'TestFuzzGPU/cases/^case=%d$' -gvr.fuzz-seed=%d -gvr.fuzz-configs=%d",
						i, *fuzzSeed, c, i, *fuzzSeed, *fuzzConfigs)
					if ci, err := p.Case(fuzzcase.InterpMaxN); err == nil && ci.N == c.N {
						t.Logf("as gen/testdata/fuzz/FuzzTopKConfig/<name>:\n%s", p.Corpus())
					}
				}()
				var gpuFault bool
				if fuzzOneGPU(t, d, c, &gpuFault) {
					interp.Add(1)
				}
			})
		}
	})
	t.Logf("fuzz suite, seed %d: %d cases (%d configurations) on %v, %d of them also in the interpreter, %d failed, %v",
		*fuzzSeed, ran.Load(), *fuzzConfigs, d, interp.Load(), failed.Load(), time.Since(start).Round(time.Millisecond))
}

// fuzzParams is case i of seed seed: its own row, prediction and lengths,
// with the kernel and configuration of configuration i % configs.
func fuzzParams(seed uint64, i, configs int) fuzzcase.Params {
	p := fuzzcase.Random(rand.New(rand.NewPCG(seed, uint64(i))))
	c := fuzzcase.Random(rand.New(rand.NewPCG(seed, 1<<32+uint64(i%configs))))
	p.Kernel, p.Target, p.K, p.Cand, p.Block, p.Bins, p.Unroll = c.Kernel, c.Target, c.K, c.Cand, c.Block, c.Bins, c.Unroll
	p.Flags = p.Flags&^1 | c.Flags&1 // Sorted is the configuration's
	return p
}

// fuzzOneGPU runs case c on the GPU and checks it against Reference, then,
// if its row is short enough, in the interpreter, and compares the two. It
// reports whether the interpreter ran, and sets *gpuFault when the GPU
// faulted.
func fuzzOneGPU(t *testing.T, d *runtime.Device, c fuzzcase.Case, gpuFault *bool) bool {
	c = fitResident(t, d, c)
	K, sorted := c.Config.K, c.Config.Sorted
	x := c.Row()
	var pred []int32
	if c.Predicted() {
		top, _ := Reference(x, K, true)
		pred = c.Prediction(top)
	}
	b := c.Batch(x, pred)

	gpuOut, gpuErr := runGPU(t, d, c, b)
	var emuOut fuzzcase.Output
	var emuErr error
	withInterp := c.N <= *fuzzInterpN
	if withInterp {
		l, err := fuzzcase.Load(c.Kernel, c.Config)
		must(t, err)
		emuOut, emuErr = fuzzcase.RunEmu(l.Program, l.Kernel, b, false)
		var fault *emu.Fault
		if emuErr != nil && !errors.As(emuErr, &fault) {
			t.Fatalf("interpreter: %v", emuErr) // a bad launch, not the kernel's fault
		}
	}
	*gpuFault = gpuErr != nil
	switch {
	case gpuErr != nil && withInterp && emuErr == nil:
		// A GPU fault poisons the context: nothing after it can run.
		t.Fatalf("the GPU faults and the interpreter does not: %v", gpuErr)
	case gpuErr != nil && withInterp:
		t.Fatalf("both fault (they agree, but no input may make a kernel fault): GPU %v; interpreter %v", gpuErr, emuErr)
	case gpuErr != nil:
		t.Fatalf("the GPU faults: %v", gpuErr)
	case emuErr != nil:
		t.Fatalf("the interpreter faults and the GPU does not: %v", emuErr)
	}

	for r := range b.Rows() {
		var row []float32
		if r == c.Lead {
			row = x
		}
		want, _ := Reference(row, K, sorted)
		idx, vals := gpuOut.Row(r, K)
		if !c.Values {
			vals = nil
		}
		if err := checkRow(row, want, idx, vals, sorted); err != nil {
			t.Errorf("GPU: row %d of %d (n=%d): %v", r, b.Rows(), len(row), err)
		}
	}
	if withInterp {
		if err := sameOutput(gpuOut, emuOut, b.Rows(), K, sorted); err != nil {
			t.Errorf("the GPU and the interpreter differ: %v", err)
		}
	}
	return withInterp
}

// fitResident returns case c made to fit d where its rows are shared by
// clusters (Config.Groups) that d cannot hold all at once, as a
// cooperative launch needs: fewer of the empty rows launched before the
// row (Lead), and if the row's own clusters still do not fit, fewer
// clusters sharing it, down to one cluster a row. Otherwise a random case
// could not run on d. It logs what it changed; the interpreter
// runs the changed case too.
func fitResident(t *testing.T, d *runtime.Device, c fuzzcase.Case) fuzzcase.Case {
	for c.Config.Groups > 1 {
		kern, err := Kernel(d, c.Kernel, c.Config)
		must(t, err)
		for lead := c.Lead; lead >= 0; lead-- {
			if kern.ResidentUnits(lead + 1) {
				if lead < c.Lead {
					t.Logf("%d empty rows before the row instead of %d: %d clusters of %d a row, %d resident here", lead, c.Lead, c.Config.Groups, c.Config.Cluster, kern.MaxActiveClusters)
					c.Lead = lead
				}
				return c
			}
		}
		t.Logf("%d clusters of %d a row instead of %d: %d resident here", c.Config.Groups-1, c.Config.Cluster, c.Config.Groups, kern.MaxActiveClusters)
		c.Config.Groups--
	}
	if c.Config.Groups == 1 {
		c.Config.Groups = 0 // one cluster a row
	}
	return c
}

// runGPU launches c's kernel over batch b on the device, outputs poisoned
// first (fuzzcase.PoisonIdx, PoisonVal) as in the interpreter; a kernel
// whose rows several clusters share cooperatively, on a zeroed workspace.
// The error is the launch's or the synchronisation's: a kernel fault.
func runGPU(t *testing.T, d *runtime.Device, c fuzzcase.Case, b fuzzcase.Batch) (fuzzcase.Output, error) {
	kern, err := Kernel(d, c.Kernel, c.Config)
	must(t, err)
	n := b.Rows() * b.K
	scores, lengths := alloc(t, d, max(4*len(b.Scores), 2*len(b.Scores16))), alloc(t, d, 4*len(b.Lengths))
	pred, idx, vals := alloc(t, d, 4*len(b.Pred)), alloc(t, d, 4*n), alloc(t, d, 4*n)
	if b.Scores16 != nil {
		must(t, runtime.Upload(scores, b.Scores16))
	} else {
		must(t, runtime.Upload(scores, b.Scores))
	}
	must(t, runtime.Upload(lengths, b.Lengths))
	must(t, runtime.Upload(pred, b.Pred))
	must(t, idx.Memset32(nil, fuzzcase.PoisonIdx))
	must(t, vals.Memset32(nil, fuzzcase.PoisonVal))
	args := b.Set(kern.Args(), scores.Ptr(), lengths.Ptr(), pred.Ptr(), idx.Ptr(), vals.Ptr())
	if g := kern.Contract.Cooperative; g > 0 {
		if !kern.ResidentUnits(b.Rows()) {
			t.Fatalf("%d rows of %d CTAs are not all resident here: fitResident fits every case", b.Rows(), g)
		}
		work := alloc(t, d, b.Rows()*gen.GroupWorkspaceBytes(c.Config))
		must(t, work.Memset32(nil, 0))
		args.Set("workspace", work.Ptr())
	}
	if err := kern.LaunchUnits(nil, b.Rows(), args, false); err != nil {
		return fuzzcase.Output{}, err
	}
	if err := d.Synchronize(); err != nil {
		return fuzzcase.Output{}, err
	}
	o := fuzzcase.Output{Idx: make([]int32, n), Vals: make([]float32, n)}
	must(t, runtime.Download(o.Idx, idx))
	must(t, runtime.Download(o.Vals, vals))
	return o, nil
}

// sameOutput compares two runs' outputs of a batch: bit for bit when
// sorted (the order is then the contract's), else row by row as sets of
// (index, value bits): the order of an unsorted output follows the
// threshold the kernel settles on, which an approximate instruction may
// place differently on the GPU.
func sameOutput(g, e fuzzcase.Output, rows, K int, sorted bool) error {
	for r := range rows {
		gi, gv := g.Row(r, K)
		ei, ev := e.Row(r, K)
		gp, ep := pairs(gi, gv), pairs(ei, ev)
		if !sorted {
			slices.SortFunc(gp, cmpPair)
			slices.SortFunc(ep, cmpPair)
		}
		for j := range gp {
			if gp[j] != ep[j] {
				return fmt.Errorf("row %d, slot %d (of the %s output): GPU index %d value bits %#08x, interpreter index %d value bits %#08x",
					r, j, map[bool]string{true: "sorted", false: "set-sorted"}[sorted], int32(gp[j][0]), gp[j][1], int32(ep[j][0]), ep[j][1])
			}
		}
	}
	return nil
}

// pairs are a row's slots as (index, value bits).
func pairs(idx []int32, vals []float32) [][2]uint32 {
	p := make([][2]uint32, len(idx))
	for j := range idx {
		p[j] = [2]uint32{uint32(idx[j]), math.Float32bits(vals[j])}
	}
	return p
}

func cmpPair(a, b [2]uint32) int {
	return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
}
