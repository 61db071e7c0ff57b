package fuzzcase

import (
	"fmt"
	"math"
	"sync"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/ptx/emu"
)

// Batch is a case laid out for a launch: Lead empty rows, then the row, one
// CTA each, Stride floats apart. The stride is odd, so rows start at
// different alignments, and the slack past each row's length holds NaN, the
// largest key: a kernel that reads past a length picks it up. A dense
// case's batch is its row alone, Stride = N, launched with a null lengths
// pointer (Lengths still says N).
type Batch struct {
	Scores     []float32 // Rows() rows of Stride (float32 scores)
	Scores16   []uint16  // or of 16-bit scores (Config.Scores)
	Stride     int
	Lengths    []int32
	Dense      bool    // launch with a null lengths pointer
	Pred       []int32 // Rows() rows of PredStride; every row gets the prediction
	PredStride int
	PredCount  int // 0: no prediction
	K          int
	Values     bool // whether out_vals is given
}

// Rows is the number of rows (CTAs) of the launch.
func (b Batch) Rows() int { return len(b.Lengths) }

// Batch lays out c with row x and prediction pred.
func (c Case) Batch(x []float32, pred []int32) Batch {
	rows := c.Lead + 1
	b := Batch{Stride: len(x) | 1, Lengths: make([]int32, rows), Dense: c.Dense, PredStride: max(1, len(pred)) + 2,
		PredCount: len(pred), K: c.Config.K, Values: c.Values}
	if c.Dense {
		b.Stride = len(x)
	}
	b.Scores = make([]float32, rows*b.Stride)
	for i := range b.Scores {
		b.Scores[i] = float32(math.NaN())
	}
	copy(b.Scores[c.Lead*b.Stride:], x)
	if s := c.Config.Scores; s != gen.Float32 {
		b.Scores16 = Narrow(s, b.Scores) // NaN slack, the row: exact
		copy(b.Scores16[c.Lead*b.Stride:], c.Row16())
		b.Scores = nil
	}
	b.Lengths[c.Lead] = int32(len(x))
	b.Pred = make([]int32, rows*b.PredStride)
	for r := range rows {
		row := b.Pred[r*b.PredStride : (r+1)*b.PredStride]
		copy(row, pred)
		for j := len(pred); j < len(row); j++ {
			row[j] = -7 // past pred_count: never read
		}
	}
	return b
}

// Poison fills the output buffers before a launch, so that a slot the
// kernel does not write shows.
const (
	PoisonIdx = 0x7EEEEEEE
	PoisonVal = 0x7FBADBAD
)

// Set sets a's arguments for b (a kernel's launch contract's, by name),
// given the addresses of its buffers (vals is passed only when b.Values;
// the prediction only to a kernel that takes one; lengths not in a dense
// batch, which passes the null pointer) and returns a.
func (b Batch) Set(a *ptx.Args, scores, lengths, pred, idx, vals uint64) *ptx.Args {
	if b.Dense {
		lengths = 0
	}
	a.Set("scores", scores).Set("row_stride", uint64(b.Stride)).Set("lengths", lengths).Set("out_idx", idx)
	if a.Launch().Param("pred") != nil {
		a.Set("pred", pred).Set("pred_stride", uint64(b.PredStride)).Set("pred_count", uint64(b.PredCount))
	}
	if !b.Values {
		vals = 0
	}
	return a.Set("out_vals", vals).Set("next_n", 0).Set("row_starts", 0).Set("abs_idx", 0).Set("out_count", 0).Set("page_table", 0).Set("page_table_stride", 0).Set("page_size", 0).Set("out_pages", 0)
}

// Output is what a launch wrote: Rows()*K indices and values (poison
// where it wrote nothing; the values stay poison without b.Values).
type Output struct {
	Idx  []int32
	Vals []float32
}

// Row is row r's slots.
func (o Output) Row(r, K int) ([]int32, []float32) {
	return o.Idx[r*K : (r+1)*K], o.Vals[r*K : (r+1)*K]
}

// RunEmu runs k over b in the interpreter. The error is an *emu.Fault when
// the kernel faults.
func RunEmu(p *emu.Program, k *gen.Kernel, b Batch, race bool) (Output, error) {
	mem := emu.NewMemory()
	n := b.Rows() * b.K
	idx := make([]uint32, n)
	vals := make([]uint32, n)
	for i := range idx {
		idx[i], vals[i] = PoisonIdx, PoisonVal
	}
	outIdx, outVals := mem.AllocU32s(idx), mem.AllocU32s(vals)
	scores := mem.AllocF32s(b.Scores)
	if b.Scores16 != nil {
		scores = mem.AllocU16s(b.Scores16)
	}
	args := b.Set(k.Launch.Args(), scores, mem.AllocI32s(b.Lengths), mem.AllocI32s(b.Pred), outIdx, outVals)
	l := emu.Launch{Grid: [3]int{b.Rows() * k.Launch.Cluster}, Args: args, RaceCheck: race}
	if g := k.Launch.Cooperative; g > 0 { // a row shared by clusters, which wait for each other
		args.Set("workspace", mem.Alloc(b.Rows()*gen.GroupWorkspaceBytes(k.Config), 128))
		l.Grid[0], l.CoResident = b.Rows()*g, true
	}
	_, err := p.Run(mem, l)
	if err != nil {
		return Output{}, err
	}
	var o Output
	if o.Idx, err = mem.ReadI32s(outIdx, n); err != nil {
		return Output{}, err
	}
	if o.Vals, err = mem.ReadF32s(outVals, n); err != nil {
		return Output{}, err
	}
	return o, nil
}

// Loaded is a generated kernel and the interpreter's program of it.
type Loaded struct {
	Kernel  *gen.Kernel
	Program *emu.Program
}

var cache struct {
	sync.Mutex
	m map[string]Loaded
}

// maxCached bounds the cache: a long fuzz run meets many configurations.
const maxCached = 64

// Load generates kernel name for cfg and loads it in the interpreter, once
// per process for each (name, cfg): generating costs tens of
// milliseconds, more than a short row takes to run.
func Load(name string, cfg gen.Config) (Loaded, error) {
	key := name + " " + cfg.String()
	cache.Lock()
	l, ok := cache.m[key]
	cache.Unlock()
	if ok {
		return l, nil
	}
	k, err := gen.Generate(name, cfg)
	if err != nil {
		return Loaded{}, err
	}
	p, err := emu.LoadModule(k.Module)
	if err != nil {
		return Loaded{}, fmt.Errorf("fuzzcase: loading %s (%v) in the interpreter: %w", name, cfg, err)
	}
	l = Loaded{k, p}
	cache.Lock()
	if len(cache.m) >= maxCached {
		clear(cache.m) // simplest bound; the next configs refill it
	}
	if cache.m == nil {
		cache.m = make(map[string]Loaded)
	}
	cache.m[key] = l
	cache.Unlock()
	return l, nil
}
