//go:build cuda

package topk

// GPU tests: every kernel against Reference on adversarial rows, the
// selector's feedback loop, graphs, determinism, and its errors. Without a
// GPU they skip, unless GVR_REQUIRE_GPU is set (scripts/gpu-run.sh sets it),
// which makes a missing GPU a failure. -gvr.suite=quick shrinks the
// adversarial suite.

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/runtime"
)

var (
	suiteSize = flag.String("gvr.suite", "full", "adversarial suite size: full (up to 64 rows of 262144) or quick")
	detRuns   = flag.Int("gvr.runs", 100, "TestDeterminism's runs of each kernel (fewer under compute-sanitizer)")
)

var testGPU struct {
	once sync.Once
	d    *runtime.Device
	err  error
}

func gpu(t testing.TB) *runtime.Device {
	t.Helper()
	testGPU.once.Do(func() {
		n, err := runtime.DeviceCount()
		if err == nil && n == 0 {
			err = errors.New("no CUDA device")
		}
		if err == nil {
			testGPU.d, err = runtime.Open(0)
		}
		testGPU.err = err
	})
	if testGPU.err != nil {
		if os.Getenv("GVR_REQUIRE_GPU") != "" {
			t.Fatalf("GVR_REQUIRE_GPU is set but there is no usable GPU: %v", testGPU.err)
		}
		t.Skipf("no GPU: %v", testGPU.err)
	}
	return testGPU.d
}

// readResult reads a step's indices and values.
func readResult(t testing.TB, res Result) ([]int32, []float32) {
	t.Helper()
	idx, err := res.ReadIndices()
	must(t, err)
	vals, err := res.ReadValues()
	must(t, err)
	return idx, vals
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// alloc allocates bytes on d, freed when the test ends.
func alloc(t testing.TB, d *runtime.Device, bytes int) *runtime.Buffer {
	t.Helper()
	b, err := d.Alloc(bytes)
	must(t, err)
	t.Cleanup(func() { b.Free() })
	return b
}

// checkRow compares one row's output with the reference want: the index
// set (Compare), and each value bit for bit when vals is not nil.
func checkRow(x []float32, want, idx []int32, vals []float32, sorted bool) error {
	if err := Compare(idx, want, sorted); err != nil {
		return err
	}
	for j, i := range idx {
		if vals == nil {
			break
		}
		w := PadValue
		if i >= 0 {
			w = x[i]
		}
		if math.Float32bits(vals[j]) != math.Float32bits(w) {
			return fmt.Errorf("slot %d (index %d): value bits %#08x, want %#08x", j, i, math.Float32bits(vals[j]), math.Float32bits(w))
		}
	}
	return nil
}

// A generator makes a row of n values.
type generator struct {
	name string
	gen  func(n, k, maxCand int, rng *rand.Rand) []float32
}

func normal(n int, rng *rand.Rand) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// bf16 rounds x to bfloat16 (nearest, ties to even): few distinct values,
// so many ties.
func bf16(x float32) float32 {
	b := math.Float32bits(x)
	b += 0x7FFF + (b>>16)&1
	return math.Float32frombits(b & 0xFFFF0000)
}

// nan returns a NaN of either sign with a random payload.
func nan(rng *rand.Rand) float32 {
	b := uint32(0x7F800000) | (1 + rng.Uint32N(0x7FFFFF))
	if rng.IntN(2) == 0 {
		b |= 0x80000000
	}
	return math.Float32frombits(b)
}

// spread sets m distinct random positions of x to v().
func spread(x []float32, m int, rng *rand.Rand, v func() float32) {
	for _, i := range rng.Perm(len(x))[:min(m, len(x))] {
		x[i] = v()
	}
}

var generators = []generator{
	{"random", func(n, k, c int, rng *rand.Rand) []float32 { return normal(n, rng) }},
	{"bf16", func(n, k, c int, rng *rand.Rand) []float32 {
		x := normal(n, rng)
		for i := range x {
			x[i] = bf16(x[i])
		}
		return x
	}},
	{"equal", func(n, k, c int, rng *rand.Rand) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = 0.5
		}
		return x
	}},
	{"signed-zeros", func(n, k, c int, rng *rand.Rand) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(math.Copysign(0, float64(rng.IntN(2)*2-1)))
		}
		return x
	}},
	// Ties at the K-th value wider than the candidate buffer: K/2 values
	// above, then 2*MaxCandidates+K equal ones.
	{"wide-ties", func(n, k, c int, rng *rand.Rand) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = rng.Float32() / 2
		}
		spread(x, 2*c+k, rng, func() float32 { return 1 })
		spread(x, k/2, rng, func() float32 { return 2 })
		return x
	}},
	{"nan-inf", func(n, k, c int, rng *rand.Rand) []float32 {
		x := normal(n, rng)
		for i := range x {
			switch u := rng.Float64(); {
			case u < 0.02:
				x[i] = nan(rng)
			case u < 0.03:
				x[i] = float32(math.Inf(1))
			case u < 0.04:
				x[i] = float32(math.Inf(-1))
			case u < 0.05:
				x[i] = float32(math.Copysign(0, float64(rng.IntN(2)*2-1)))
			}
		}
		return x
	}},
	// More NaNs (the largest key) than K and than the candidate buffer.
	{"many-nan", func(n, k, c int, rng *rand.Rand) []float32 {
		x := normal(n, rng)
		spread(x, max(4*k, c+1)+7, rng, func() float32 { return nan(rng) })
		return x
	}},
	// A DSA-style mask: a third of the row, then -Inf.
	{"masked-tail", func(n, k, c int, rng *rand.Rand) []float32 {
		x := normal(n, rng)
		for i := max(1, n/3); i < n; i++ {
			x[i] = float32(math.Inf(-1))
		}
		return x
	}},
	{"ascending", func(n, k, c int, rng *rand.Rand) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i) / 1024
		}
		return x
	}},
	{"descending", func(n, k, c int, rng *rand.Rand) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = -float32(i) / 1024
		}
		return x
	}},
	{"synthetic", func(n, k, c int, rng *rand.Rand) []float32 { return syntheticRow(n, rng.Uint64()) }},
	// One value far above the rest, where the row sample most likely does
	// not look: Phase 4's span, guessed from the sample's largest value,
	// misses it, and the select must start over with the exact span.
	{"far-outlier", func(n, k, c int, rng *rand.Rand) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = 1 + rng.Float32()
		}
		if n > 0 {
			x[rng.IntN(n)] = 1e30
		}
		return x
	}},
}

// memo caches the RoPE tables and static predictions, by length, that many
// rows of one length share.
var memo struct {
	sync.Mutex
	ropes map[int]ropes
	prior map[[2]int][]int32
}

// syntheticRow is a row of Synthetic{N: n, Seed: seed}.
func syntheticRow(n int, seed uint64) []float32 {
	memo.Lock()
	rp, ok := memo.ropes[n]
	if !ok {
		if memo.ropes == nil {
			memo.ropes = make(map[int]ropes)
		}
		rp = newRopes(max(n, 1), YaRNInvFreq(DefaultDRope))
		memo.ropes[n] = rp
	}
	memo.Unlock()
	x := make([]float32, n)
	Synthetic{N: n, Seed: seed}.withDefaults().row(x, rp, 0)
	return x
}

// staticPrior is StaticPrediction(n, k, DefaultDRope).
func staticPrior(n, k int) []int32 {
	memo.Lock()
	defer memo.Unlock()
	p, ok := memo.prior[[2]int{n, k}]
	if !ok {
		if memo.prior == nil {
			memo.prior = make(map[[2]int][]int32)
		}
		p = StaticPrediction(n, k, DefaultDRope)
		memo.prior[[2]int{n, k}] = p
	}
	return p
}

// A shape is a batch layout: row lengths, the stride, and an offset (in
// elements) of row 0 from the allocation, so that rows start unaligned.
type shape struct {
	name    string
	lengths []int
	stride  int
	offset  int
}

func shapes(k, c int, big int) []shape {
	edge := []int{0, 1, 2, 3, k - 1, k, k + 1, k + 3, 2*k + 1, c - 1, c, c + 1, 3*c + 5, 4099, 8193}
	edge = slices.Compact(slices.Sorted(slices.Values(slices.DeleteFunc(edge, func(n int) bool { return n < 0 }))))
	mid := []int{8191, 16385, 32767, 65536, 70690, 65537, 131071, 100003}
	if *suiteSize == "quick" {
		mid = mid[:4]
	}
	bigRows := make([]int, big)
	for i := range bigRows {
		bigRows[i] = 262144
	}
	odd := func(n int) int { return n | 1 }
	return []shape{
		{"edge", edge, odd(slices.Max(edge) + 3), 1},
		{"mid", mid, 131075, 3},
		{"big", bigRows, 262144, 0},
	}
}

// prediction modes for gvr_topk: fill writes row r's prediction into p
// (pred_stride slots) and returns pred_count.
type predMode struct {
	name string
	fill func(p []int32, want []int32, n, k int, rng *rand.Rand) int
}

func randIdx(n int, rng *rand.Rand) int32 {
	if n == 0 {
		return -1
	}
	return int32(rng.IntN(n))
}

var predModes = []predMode{
	{"perfect", func(p, want []int32, n, k int, rng *rand.Rand) int { copy(p, want); return k }},
	{"partial", func(p, want []int32, n, k int, rng *rand.Rand) int {
		copy(p, want[:k/2])
		for j := k / 2; j < k; j++ {
			p[j] = randIdx(n, rng)
		}
		return k
	}},
	{"random", func(p, want []int32, n, k int, rng *rand.Rand) int {
		for j := range k {
			p[j] = randIdx(n, rng)
		}
		return k
	}},
	{"garbage", func(p, want []int32, n, k int, rng *rand.Rand) int {
		junk := []int32{-1, math.MinInt32, int32(n), int32(n + 100), math.MaxInt32, 0, 0, randIdx(n, rng)}
		for j := range k {
			p[j] = junk[j%len(junk)]
		}
		return k
	}},
	{"empty", func(p, want []int32, n, k int, rng *rand.Rand) int { return 0 }},
	{"short", func(p, want []int32, n, k int, rng *rand.Rand) int {
		copy(p, want)
		for j := max(1, k/4); j < len(p); j++ {
			p[j] = -7 // past pred_count: never read
		}
		return max(1, k/4)
	}},
	{"none-valid", func(p, want []int32, n, k int, rng *rand.Rand) int {
		for j := range k {
			p[j] = -1
		}
		return k
	}},
}

// suiteConfig is one kernel configuration of the adversarial suite.
type suiteConfig struct {
	name string
	cfg  gen.Config // Target filled from the device
	big  int        // rows of 262144 in the big shape
}

func suiteConfigs() []suiteConfig {
	d := gen.DefaultConfig()
	with := func(edit func(*gen.Config)) gen.Config { c := d; edit(&c); return c }
	big := 64
	if *suiteSize == "quick" {
		big = 8
	}
	return []suiteConfig{
		{"K2048-B512", d, big},
		{"K2048-B256", with(func(c *gen.Config) { c.BlockSize = 256 }), 4},
		{"K2048-B1024", with(func(c *gen.Config) { c.BlockSize = 1024 }), 4},
		{"K2048-unroll1", with(func(c *gen.Config) { c.Unroll = 1 }), 2},
		{"K256-B256", with(func(c *gen.Config) { c.K, c.MaxCandidates, c.BlockSize, c.Bins = 256, 1024, 256, 256 }), 4},
		{"K16-B128", with(func(c *gen.Config) { c.K, c.MaxCandidates, c.BlockSize, c.Bins = 16, 1024, 128, 256 }), 4},
		{"K2048-sorted", with(func(c *gen.Config) { c.Sorted = true }), 4},
		{"K100-sorted", with(func(c *gen.Config) { c.K, c.MaxCandidates, c.BlockSize, c.Bins, c.Sorted = 100, 1024, 128, 256, true }), 4},
		{"K2048-sure", with(func(c *gen.Config) { c.SureSet = true }), big},
		{"K16-sure-sorted", with(func(c *gen.Config) {
			c.K, c.MaxCandidates, c.BlockSize, c.Bins, c.SureSet, c.Sorted = 16, 1024, 128, 256, true, true
		}), 4},
	}
}

// TestAdversarial runs topk_radix, topk_fallback and gvr_topk (with every
// prediction mode) on every generator and shape, for several kernel
// configurations, and checks each row against Reference.
func TestAdversarial(t *testing.T) {
	d := gpu(t)
	start := time.Now()
	total := 0
	for _, sc := range suiteConfigs() {
		t.Run(sc.name, func(t *testing.T) {
			cfg := sc.cfg
			cfg.Target = d.Info().Target
			var ks [3]*runtime.Kernel
			for i, name := range []string{"topk_radix", "topk_fallback", "gvr_topk"} {
				var err error
				if ks[i], err = Kernel(d, name, cfg); err != nil {
					t.Fatal(err)
				}
			}
			rows := 0
			for _, sh := range shapes(cfg.K, cfg.MaxCandidates, sc.big) {
				for gi, g := range generators {
					rows += runCase(t, ks, cfg, sh, g, uint64(1000*gi+len(sh.lengths)))
				}
			}
			t.Logf("%v: %d rows checked, each by %d kernel runs", cfg, rows, 2+len(predModes))
			total += rows
		})
	}
	t.Logf("adversarial suite: %d rows, %v", total, time.Since(start).Round(time.Millisecond))
}

// runCase runs one generator on one shape through every kernel and mode
// and returns the number of rows.
func runCase(t *testing.T, ks [3]*runtime.Kernel, cfg gen.Config, sh shape, g generator, seed uint64) int {
	d := ks[0].Device()
	k, rows := cfg.K, len(sh.lengths)
	rng := rand.New(rand.NewPCG(seed, 1))
	// Rows, with NaN (the largest key) in the stride's slack: a kernel that
	// reads past a row's length picks them up.
	host := make([]float32, sh.offset+rows*sh.stride)
	for i := range host {
		host[i] = float32(math.NaN())
	}
	x := make([][]float32, rows)
	seeds := make([]uint64, rows)
	for r := range seeds {
		seeds[r] = rng.Uint64()
	}
	parallel(rows, func(r int) {
		x[r] = g.gen(sh.lengths[r], k, cfg.MaxCandidates, rand.New(rand.NewPCG(seeds[r], 2)))
		copy(host[sh.offset+r*sh.stride:], x[r])
	})
	want := make([][]int32, rows)
	parallel(rows, func(r int) { want[r], _ = Reference(x[r], k, cfg.Sorted) })
	lengths := make([]int32, rows)
	for r, n := range sh.lengths {
		lengths[r] = int32(n)
	}

	scores := alloc(t, d, 4*len(host))
	must(t, runtime.Upload(scores, host))
	rowsBuf, err := scores.View(4*sh.offset, 4*rows*sh.stride)
	must(t, err)
	lenBuf := alloc(t, d, 4*rows)
	must(t, runtime.Upload(lenBuf, lengths))
	idxBuf, valBuf := alloc(t, d, 4*rows*k), alloc(t, d, 4*rows*k)
	predStride := k + 3
	predBuf := alloc(t, d, 4*rows*predStride)
	idx, vals := make([]int32, rows*k), make([]float32, rows*k)

	failures := 0
	// run launches kern with the rows, outVals as out_vals (0: no values)
	// and set for the kernel's own parameters, and checks every row.
	run := func(what string, kern *runtime.Kernel, outVals uint64, set func(*ptx.Args)) {
		withVals := outVals != 0
		if failures >= 5 {
			return
		}
		// Poison the outputs, so a slot the kernel does not write shows.
		must(t, idxBuf.Memset32(nil, 0x7EEEEEEE))
		must(t, valBuf.Memset32(nil, 0x7FBADBAD))
		args := kern.Args().Set("scores", rowsBuf.Ptr()).Set("row_stride", uint64(sh.stride)).
			Set("lengths", lenBuf.Ptr()).Set("out_idx", idxBuf.Ptr()).Set("out_vals", outVals).Set("next_n", 0).Set("row_starts", 0).Set("abs_idx", 0).Set("out_count", 0).Set("page_table", 0).Set("page_table_stride", 0).Set("page_size", 0).Set("out_pages", 0)
		if set != nil {
			set(args)
		}
		must(t, kern.LaunchUnits(nil, rows, args, false))
		must(t, d.Synchronize())
		must(t, runtime.Download(idx, idxBuf))
		v := vals
		if withVals {
			must(t, runtime.Download(vals, valBuf))
		} else {
			v = nil
		}
		for r := range rows {
			var rv []float32
			if v != nil {
				rv = v[r*k : (r+1)*k]
			}
			if err := checkRow(x[r], want[r], idx[r*k:(r+1)*k], rv, cfg.Sorted); err != nil {
				t.Errorf("%s, %s rows, %s: row %d (n=%d, stride %d): %v", what, g.name, sh.name, r, sh.lengths[r], sh.stride, err)
				if failures++; failures >= 5 {
					t.Errorf("%s, %s, %s: more failures not shown", what, g.name, sh.name)
					return
				}
			}
		}
	}

	run(ks[0].Contract.Entry, ks[0], valBuf.Ptr(), nil)
	run(ks[1].Contract.Entry, ks[1], valBuf.Ptr(), nil)
	modes := predModes
	if g.name == "synthetic" {
		modes = append(slices.Clone(modes), predMode{"static-prior", func(p, want []int32, n, k int, rng *rand.Rand) int {
			prior := staticPrior(n, k)
			copy(p, prior)
			for j := len(prior); j < k; j++ {
				p[j] = -1
			}
			return k
		}})
	}
	pred := make([]int32, rows*predStride)
	for _, m := range modes {
		count := 0 // pred_count is one for the batch; every row's mode gives the same
		for r := range rows {
			count = m.fill(pred[r*predStride:(r+1)*predStride], want[r], sh.lengths[r], k, rng)
		}
		must(t, runtime.Upload(predBuf, pred))
		vals := valBuf.Ptr()
		if m.name == "random" {
			vals = 0 // no value writes
		}
		run(ks[2].Contract.Entry+"/"+m.name, ks[2], vals, func(a *ptx.Args) {
			a.Set("pred", predBuf.Ptr()).Set("pred_stride", uint64(predStride)).Set("pred_count", uint64(count))
		})
	}
	return rows
}

// TestDeterminism runs each kernel 100 times (-gvr.runs) on rows full of ties and
// requires bit-identical output arrays.
func TestDeterminism(t *testing.T) {
	d := gpu(t)
	cfg := gen.DefaultConfig()
	cfg.Target = d.Info().Target
	const rows, n = 8, 131072
	runs := *detRuns
	if runs < 2 {
		t.Fatalf("-gvr.runs=%d: determinism needs at least 2 runs", runs)
	}
	k := cfg.K
	rng := rand.New(rand.NewPCG(5, 5))
	host := make([]float32, rows*n)
	for i := range host {
		host[i] = bf16(float32(rng.NormFloat64()))
	}
	scores := alloc(t, d, 4*len(host))
	must(t, runtime.Upload(scores, host))
	lengths := make([]int32, rows)
	for r := range lengths {
		lengths[r] = int32(n - 3*r)
	}
	lenBuf := alloc(t, d, 4*rows)
	must(t, runtime.Upload(lenBuf, lengths))
	pred := make([]int32, rows*k)
	for i := range pred {
		pred[i] = int32(rng.IntN(n))
	}
	predBuf := alloc(t, d, 4*len(pred))
	must(t, runtime.Upload(predBuf, pred))
	idxBuf, valBuf := alloc(t, d, 4*rows*k), alloc(t, d, 4*rows*k)
	for _, name := range []string{"topk_radix", "topk_fallback", "gvr_topk"} {
		kern, err := Kernel(d, name, cfg)
		must(t, err)
		args := kern.Args().Set("scores", scores.Ptr()).Set("row_stride", n).Set("lengths", lenBuf.Ptr()).
			Set("out_idx", idxBuf.Ptr()).Set("out_vals", valBuf.Ptr()).Set("next_n", 0).Set("row_starts", 0).Set("abs_idx", 0).Set("out_count", 0).Set("page_table", 0).Set("page_table_stride", 0).Set("page_size", 0).Set("out_pages", 0)
		if name == "gvr_topk" {
			args.Set("pred", predBuf.Ptr()).Set("pred_stride", uint64(k)).Set("pred_count", uint64(k))
		}
		var first []byte
		for run := range runs {
			must(t, idxBuf.Memset32(nil, 0))
			must(t, valBuf.Memset32(nil, 0))
			must(t, kern.Launch(nil, rows, args))
			got := make([]byte, 8*rows*k)
			must(t, runtime.Download(got[:4*rows*k], idxBuf))
			must(t, runtime.Download(got[4*rows*k:], valBuf))
			if first == nil {
				first = got
				idx := unsafe.Slice((*int32)(unsafe.Pointer(&got[0])), rows*k)
				for r := range rows {
					want, _ := Reference(host[r*n:r*n+int(lengths[r])], k, false)
					if err := Compare(idx[r*k:(r+1)*k], want, false); err != nil {
						t.Fatalf("%s: row %d: %v", name, r, err)
					}
				}
			} else if !slices.Equal(got, first) {
				t.Fatalf("%s: run %d differs from run 0", name, run)
			}
		}
		t.Logf("%s: %d runs bit-identical", name, runs)
	}
}

// TestDecodeLoop runs a multi-layer decode: each step's prediction is the
// previous step's indices, kept on the device by the selector.
func TestDecodeLoop(t *testing.T) {
	d := gpu(t)
	const layers, rows, steps, stride = 3, 4, 16, 60000
	// AlwaysPredict: the predicted steps run a GVR kernel, whatever the
	// device's tuning measured on its own rows.
	sel, err := NewSelector(Config{MaxRows: rows, Layers: layers, Values: true, Instrument: true, AlwaysPredict: true, Device: d})
	must(t, err)
	defer sel.Close()
	k := sel.Config().K
	traj := make([][]*Decode, layers)
	for l := range traj {
		traj[l] = make([]*Decode, rows)
		for r := range traj[l] {
			start := 30000 + 4999*r + 1000*l + l%2 // not a multiple of 4
			traj[l][r] = NewDecode(start, start+steps, 0, uint64(10*l+r))
		}
	}
	scores := make([]*runtime.Buffer, layers)
	for l := range scores {
		scores[l] = alloc(t, d, 4*rows*stride)
	}
	type acc struct {
		rows, passes, valid int
		paths               [4]int
		cycles              [4]uint64
	}
	var fallback, predicted acc
	for step := range steps {
		if step == steps/2 {
			must(t, sel.Reset())
		}
		for l := range layers {
			host := make([]float32, rows*stride)
			lengths := make([]int32, rows)
			x := make([][]float32, rows)
			for r := range rows {
				x[r] = traj[l][r].Next()
				copy(host[r*stride:], x[r])
				lengths[r] = int32(len(x[r]))
			}
			must(t, runtime.Upload(scores[l], host))
			res, err := sel.Select(l, Batch{Scores: scores[l], Stride: stride, Rows: rows, Lengths: lengths}, nil)
			must(t, err)
			if wantPred := step != 0 && step != steps/2; res.Predicted != wantPred {
				t.Errorf("step %d layer %d: Predicted = %v, want %v", step, l, res.Predicted, wantPred)
			}
			idx, vals := readResult(t, res)
			st, err := res.ReadStats()
			must(t, err)
			a := &fallback
			if res.Predicted {
				a = &predicted
			}
			for r := range rows {
				want, _ := Reference(x[r], k, false)
				if err := checkRow(x[r], want, idx[r*k:(r+1)*k], vals[r*k:(r+1)*k], false); err != nil {
					t.Fatalf("step %d layer %d row %d (n=%d): %v", step, l, r, len(x[r]), err)
				}
				s := st[r]
				a.rows++
				a.passes += int(s.Phase2Passes)
				a.valid += int(s.ValidPred)
				if int(s.Path) < len(a.paths) {
					a.paths[s.Path]++
				}
				for i, c := range s.PhaseCycles() {
					a.cycles[i] += c
				}
				if res.Predicted && s.ValidPred == 0 {
					t.Errorf("step %d layer %d row %d: predicted step saw no valid predicted index", step, l, r)
				}
			}
		}
	}
	for _, c := range []struct {
		name string
		a    acc
	}{{"fallback steps", fallback}, {"predicted steps", predicted}} {
		a := c.a
		n := max(a.rows, 1)
		t.Logf("%s: %d rows, paths copy/gvr/exact/held %v, %.2f Phase-2 passes per row, %.0f valid predicted indices, cycles per phase %v",
			c.name, a.rows, a.paths, float64(a.passes)/float64(n), float64(a.valid)/float64(n),
			[4]uint64{a.cycles[0] / uint64(n), a.cycles[1] / uint64(n), a.cycles[2] / uint64(n), a.cycles[3] / uint64(n)})
	}
}

// TestGraphReplay captures one decode step in a CUDA graph and replays it
// step after step with new scores, against a selector run step by step.
// nextRows is the next step of each trajectory, a row each: the rows, and
// laid out for the device, the rows stride elements apart and their lengths.
func nextRows(traj []*Decode, stride int) (x [][]float32, host []float32, lengths []int32) {
	x, host, lengths = make([][]float32, len(traj)), make([]float32, len(traj)*stride), make([]int32, len(traj))
	for r, d := range traj {
		x[r] = d.Next()
		copy(host[r*stride:], x[r])
		lengths[r] = int32(len(x[r]))
	}
	return x, host, lengths
}

// stepGraph runs a decode loop's steps as a serving engine would, from a
// CUDA graph: step 0 (a layer's unpredicted step, the fallback kernel)
// eagerly, step 1 captured on the stream and replayed, every later step
// replayed.
type stepGraph struct{ g *runtime.Graph }

// run runs step s on st: do is the step's work, as the graph captures it.
func (sg *stepGraph) run(t *testing.T, st *runtime.Stream, s int, do func() error) {
	t.Helper()
	switch s {
	case 0:
		must(t, do())
	case 1:
		g, err := st.Capture(do)
		must(t, err)
		sg.g = g
		fallthrough
	default:
		must(t, sg.g.Launch(st))
	}
}

func (sg *stepGraph) close() {
	if sg.g != nil {
		sg.g.Close()
	}
}

func TestGraphReplay(t *testing.T) {
	d := gpu(t)
	const rows, steps, stride = 8, 12, 70000
	cfg := Config{MaxRows: rows, Values: true, Device: d}
	graphSel, err := NewSelector(cfg)
	must(t, err)
	defer graphSel.Close()
	eagerSel, err := NewSelector(cfg)
	must(t, err)
	defer eagerSel.Close()
	k := cfg.withDefaults().K
	st, err := d.NewStream()
	must(t, err)
	defer st.Close()

	traj := make([]*Decode, rows)
	for r := range traj {
		start := 40000 + 3001*r
		traj[r] = NewDecode(start, start+steps, 0, uint64(100+r))
	}
	scores, lenBuf := alloc(t, d, 4*rows*stride), alloc(t, d, 4*rows)
	// The eager steps' lengths on the device too: the same batch, so the
	// selector picks the same kernel (with host lengths it knows the
	// longest row, and may pick another, whose set comes in another
	// order: a sure set's kernel, say).
	eagerScores, eagerLen := alloc(t, d, 4*rows*stride), alloc(t, d, 4*rows)
	batch := Batch{Scores: scores, Stride: stride, Rows: rows, DeviceLengths: lenBuf}
	var g stepGraph
	defer g.close()
	var res Result // the graph's step's, from the capture
	for step := range steps {
		x, host, lengths := nextRows(traj, stride)
		must(t, runtime.UploadAsync(st, scores, host))
		must(t, runtime.UploadAsync(st, lenBuf, lengths))
		g.run(t, st, step, func() error {
			var err error
			res, err = graphSel.Select(0, batch, st)
			return err
		})
		must(t, st.Synchronize())
		gi, err := res.ReadIndices()
		must(t, err)
		gv, err := res.ReadValues()
		must(t, err)

		must(t, runtime.Upload(eagerScores, host))
		must(t, runtime.Upload(eagerLen, lengths))
		eres, err := eagerSel.Select(0, Batch{Scores: eagerScores, Stride: stride, Rows: rows, DeviceLengths: eagerLen}, nil)
		must(t, err)
		ei, err := eres.ReadIndices()
		must(t, err)
		ev, err := eres.ReadValues()
		must(t, err)
		if !slices.Equal(gi, ei) || !slices.Equal(math32bits(gv), math32bits(ev)) {
			t.Fatalf("step %d: graph replay and step-by-step selection differ", step)
		}
		for r := range rows {
			want, _ := Reference(x[r], k, false)
			if err := checkRow(x[r], want, gi[r*k:(r+1)*k], gv[r*k:(r+1)*k], false); err != nil {
				t.Fatalf("step %d row %d: %v", step, r, err)
			}
		}
	}
	t.Logf("%d graph replays exact and bit-identical to step-by-step selection", steps-1)

	// Host lengths cannot be captured; the error says what to use.
	_, err = st.Capture(func() error {
		_, err := graphSel.Select(0, Batch{Scores: scores, Stride: stride, Rows: rows, Lengths: make([]int32, rows)}, st)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "DeviceLengths") {
		t.Errorf("capturing a Select with host Lengths: %v", err)
	}
}

// TestDenseBatch: a batch with neither Lengths nor DeviceLengths is
// dense, every row Stride long: on every kind of kernel the selector picks
// (one CTA, a cluster, a cluster whose row streams), a decode loop's steps
// give exactly the output of the same loop with the rows' lengths on the
// device, bit for bit, the dense one replayed from a CUDA graph.
func TestDenseBatch(t *testing.T) {
	d := gpu(t)
	const rows, steps = 3, 4
	for _, n := range []int{8192, 65536, 1 << 20} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cfg := Config{MaxRows: rows, Values: true, Device: d}
			dense, err := NewSelector(cfg)
			must(t, err)
			defer dense.Close()
			withLengths, err := NewSelector(cfg)
			must(t, err)
			defer withLengths.Close()
			k := cfg.withDefaults().K
			st, err := d.NewStream()
			must(t, err)
			defer st.Close()
			scores, lenBuf := alloc(t, d, 4*rows*n), alloc(t, d, 4*rows)
			lengths := []int32{int32(n), int32(n), int32(n)}
			must(t, runtime.Upload(lenBuf, lengths))
			var g stepGraph
			defer g.close()
			var res Result
			for step := range steps {
				host := make([]float32, 0, rows*n)
				for r := range rows {
					host = append(host, syntheticRow(n, uint64(100*step+r))...)
				}
				must(t, runtime.UploadAsync(st, scores, host))
				g.run(t, st, step, func() error {
					var err error
					res, err = dense.Select(0, Batch{Scores: scores, Stride: n, Rows: rows}, st)
					return err
				})
				must(t, st.Synchronize())
				di, dv := readResult(t, res)
				lres, err := withLengths.Select(0, Batch{Scores: scores, Stride: n, Rows: rows, DeviceLengths: lenBuf}, nil)
				must(t, err)
				li, lv := readResult(t, lres)
				if res.Kernel != lres.Kernel || res.Cluster != lres.Cluster {
					t.Fatalf("step %d: the dense batch ran %s C%d, the one with lengths %s C%d", step, res.Kernel, res.Cluster, lres.Kernel, lres.Cluster)
				}
				if !slices.Equal(di, li) || !slices.Equal(math32bits(dv), math32bits(lv)) {
					t.Fatalf("step %d (%s C%d): the dense batch's output differs from the one with lengths", step, res.Kernel, res.Cluster)
				}
				for r := range rows {
					x := host[r*n : (r+1)*n]
					want, _ := Reference(x, k, false)
					if err := checkRow(x, want, di[r*k:(r+1)*k], dv[r*k:(r+1)*k], false); err != nil {
						t.Fatalf("step %d row %d: %v", step, r, err)
					}
				}
				t.Logf("step %d: %s C%d, exact and the same as with lengths", step, res.Kernel, res.Cluster)
			}
		})
	}
}

// TestSelectHost is the host-slice convenience call.
func TestSelectHost(t *testing.T) {
	d := gpu(t)
	sel, err := NewSelector(Config{K: 256, MaxRows: 3, Values: true, Device: d})
	must(t, err)
	defer sel.Close()
	const stride = 10001
	rng := rand.New(rand.NewPCG(9, 9))
	for step := range 3 {
		x := normal(3*stride, rng)
		lengths := []int32{stride, 0, 5000}
		if step == 0 {
			lengths = nil // every row whole
		}
		idx, vals, err := sel.SelectHost(0, x, stride, lengths)
		must(t, err)
		for r := range 3 {
			n := stride
			if lengths != nil {
				n = int(lengths[r])
			}
			row := x[r*stride : r*stride+n]
			want, _ := Reference(row, 256, false)
			if err := checkRow(row, want, idx[r*256:(r+1)*256], vals[r*256:(r+1)*256], false); err != nil {
				t.Fatalf("step %d row %d: %v", step, r, err)
			}
		}
	}
}

// TestSelectorErrors: bad input is a clear error, never a crash.
func TestSelectorErrors(t *testing.T) {
	d := gpu(t)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Device: d}, "MaxRows"},
		{Config{MaxRows: 1, BlockSize: 48, Device: d}, "BlockSize"},
		{Config{MaxRows: 1, K: 100000, Device: d}, "shared memory"},
	} {
		if _, err := NewSelector(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewSelector(%+v): %v; want an error about %s", c.cfg, err, c.want)
		}
	}

	sel, err := NewSelector(Config{K: 256, MaxRows: 4, Layers: 2, Device: d})
	must(t, err)
	const stride = 1000
	scores, lens := alloc(t, d, 4*4*stride), alloc(t, d, 16)
	freed, err := d.Alloc(4 * 4 * stride)
	must(t, err)
	must(t, freed.Free())
	small := alloc(t, d, 4*stride)
	ok := Batch{Scores: scores, Stride: stride, Rows: 4, Lengths: []int32{1, 2, 3, 4}}
	if _, err := sel.Select(0, ok, nil); err != nil {
		t.Fatalf("a good batch: %v", err)
	}
	with := func(edit func(*Batch)) Batch { b := ok; edit(&b); return b }
	for _, c := range []struct {
		name  string
		layer int
		b     Batch
		want  string
	}{
		{"negative layer", -1, ok, "layer -1"},
		{"layer past Layers", 2, ok, "layer 2"},
		{"too many rows", 0, with(func(b *Batch) { b.Rows, b.Lengths = 5, make([]int32, 5) }), "MaxRows"},
		{"negative rows", 0, with(func(b *Batch) { b.Rows = -1 }), "Rows = -1"},
		{"zero stride", 0, with(func(b *Batch) { b.Stride = 0 }), "Stride = 0"},
		{"K larger than the stride", 0, with(func(b *Batch) { b.Stride = 255 }), "larger than the row stride"},
		{"nil scores", 0, with(func(b *Batch) { b.Scores = nil }), "Scores is nil"},
		{"freed scores", 0, with(func(b *Batch) { b.Scores = freed }), "after Free"},
		{"scores too small", 0, with(func(b *Batch) { b.Scores = small }), "holds"},
		{"NextN without lengths", 0, with(func(b *Batch) { b.Lengths, b.NextN = nil, 2 }), "without lengths"},
		{"both lengths", 0, with(func(b *Batch) { b.DeviceLengths = lens }), "both"},
		{"lengths count", 0, with(func(b *Batch) { b.Lengths = []int32{1, 2} }), "2 Lengths for 4 rows"},
		{"negative length", 0, with(func(b *Batch) { b.Lengths = []int32{1, -1, 3, 4} }), "Lengths[1] = -1"},
		{"length past stride", 0, with(func(b *Batch) { b.Lengths = []int32{1, 2, stride + 1, 4} }), "Lengths[2] = 1001"},
		{"device lengths too small", 0, with(func(b *Batch) { b.Lengths, b.DeviceLengths = nil, alloc(t, d, 8) }), "DeviceLengths holds"},
		{"freed device lengths", 0, with(func(b *Batch) { b.Lengths, b.DeviceLengths = nil, freed }), "after Free"},
	} {
		_, err := sel.Select(c.layer, c.b, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error mentioning %q", c.name, err, c.want)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
	if _, _, err := sel.SelectHost(0, make([]float32, 1001), stride, nil); err == nil {
		t.Error("SelectHost with a partial row: no error")
	}

	// Another device's buffers and streams.
	if n, _ := runtime.DeviceCount(); n > 1 {
		d1, err := runtime.Open(1)
		must(t, err)
		other := alloc(t, d1, 4*4*stride)
		if _, err := sel.Select(0, with(func(b *Batch) { b.Scores = other }), nil); err == nil || !strings.Contains(err.Error(), "is on") {
			t.Errorf("scores on device 1: %v", err)
		}
		st1, err := d1.NewStream()
		must(t, err)
		defer st1.Close()
		if _, err := sel.Select(0, ok, st1); err == nil || !strings.Contains(err.Error(), "is on") {
			t.Errorf("a stream of device 1: %v", err)
		}
	} else {
		t.Log("one GPU: a buffer or stream of another device is tested in package runtime with a stand-in device")
	}

	must(t, sel.Close())
	if _, err := sel.Select(0, ok, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Select after Close: %v", err)
	}
	if _, _, err := sel.SelectHost(0, make([]float32, stride), stride, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("SelectHost after Close: %v", err)
	}
	if err := sel.Reset(); !errors.Is(err, ErrClosed) {
		t.Errorf("Reset after Close: %v", err)
	}
	if err := sel.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("Close twice: %v", err)
	}
}

// TestSelectNoAllocs: a step allocates nothing on the Go heap.
func TestSelectNoAllocs(t *testing.T) {
	d := gpu(t)
	sel, err := NewSelector(Config{MaxRows: 8, Device: d})
	must(t, err)
	defer sel.Close()
	const stride = 16384
	scores, lens := alloc(t, d, 4*8*stride), alloc(t, d, 32)
	lengths := []int32{stride, stride, 100, 2048, 2049, 0, 1, 9999}
	must(t, runtime.Upload(lens, lengths))
	st, err := d.NewStream()
	must(t, err)
	defer st.Close()
	for _, c := range []struct {
		name string
		b    Batch
	}{
		{"DeviceLengths", Batch{Scores: scores, Stride: stride, Rows: 8, DeviceLengths: lens}},
		{"host Lengths", Batch{Scores: scores, Stride: stride, Rows: 8, Lengths: lengths}},
		{"no lengths (dense)", Batch{Scores: scores, Stride: stride, Rows: 8}},
	} {
		var serr error
		allocs := testing.AllocsPerRun(50, func() {
			if _, err := sel.Select(0, c.b, st); err != nil {
				serr = err
			}
		})
		must(t, serr)
		must(t, st.Synchronize())
		if allocs != 0 {
			t.Errorf("Select with %s: %v allocations per call, want 0", c.name, allocs)
		}
	}
}

// TestConcurrentSelectors runs selectors on several goroutines and streams
// at once, sharing the device and its kernel cache.
func TestConcurrentSelectors(t *testing.T) {
	d := gpu(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := concurrentSelector(d, g); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

func concurrentSelector(d *runtime.Device, g int) error {
	sel, err := NewSelector(Config{MaxRows: 2, Device: d})
	if err != nil {
		return err
	}
	defer sel.Close()
	st, err := d.NewStream()
	if err != nil {
		return err
	}
	defer st.Close()
	const stride = 50000
	scores, err := d.Alloc(4 * 2 * stride)
	if err != nil {
		return err
	}
	defer scores.Free()
	rng := rand.New(rand.NewPCG(uint64(g), 77))
	for step := range 10 {
		rows := [][]float32{normal(stride, rng), normal(stride-g, rng)}
		if err := streamStep(sel, 0, st, scores, stride, rows); err != nil {
			return fmt.Errorf("goroutine %d step %d: %v", g, step, err)
		}
	}
	return nil
}

// streamStep runs one step of sel's layer on st and checks it: rows, each
// at most stride long, are copied into scores, selected, read back and
// compared with Reference (values too, with Config.Values).
func streamStep(sel *Selector, layer int, st *runtime.Stream, scores *runtime.Buffer, stride int, rows [][]float32) error {
	host := make([]float32, len(rows)*stride)
	lengths := make([]int32, len(rows))
	for r, x := range rows {
		copy(host[r*stride:], x)
		lengths[r] = int32(len(x))
	}
	if err := runtime.UploadAsync(st, scores, host); err != nil {
		return err
	}
	res, err := sel.Select(layer, Batch{Scores: scores, Stride: stride, Rows: len(rows), Lengths: lengths}, st)
	if err != nil {
		return err
	}
	if err := st.Synchronize(); err != nil {
		return err
	}
	idx, err := res.ReadIndices()
	if err != nil {
		return err
	}
	var vals []float32
	if res.Values != nil {
		if vals, err = res.ReadValues(); err != nil {
			return err
		}
	}
	k := res.K
	for r, x := range rows {
		want, _ := Reference(x, k, false)
		var v []float32
		if vals != nil {
			v = vals[r*k : (r+1)*k]
		}
		if err := checkRow(x, want, idx[r*k:(r+1)*k], v, false); err != nil {
			return fmt.Errorf("row %d (n = %d): %v", r, len(x), err)
		}
	}
	return nil
}
