package topk

// The GPU selector's types, shared by the builds with and without the cuda
// tag: its configuration, a batch of rows, a result, and the per-row
// instrumentation record.

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/runtime"
)

// ErrClosed is returned by a Selector's methods after Close.
var ErrClosed = errors.New("topk: selector is closed")

// Config configures a Selector. Zero fields take the defaults noted.
type Config struct {
	K       int // elements selected per row; 0 means 2048
	MaxRows int // the most rows one Select takes (required)
	Layers  int // independent feedback buffers, one per attention layer; 0 means 1
	// Values makes Select write the selected values beside the indices.
	Values bool
	// Sorted makes each row's result come in rank order (value descending,
	// NaN first, ties by lowest index) instead of as a set in no order; it
	// costs a sort of K elements per row (about 4 us for K = 2048 on an
	// H100, on top of the selection, 4-7 us where bfloat16 scores tie by
	// the hundred; perf notes 148-150).
	Sorted bool
	// Counts makes Select write each row's number of valid outputs,
	// min(K, n), into Result.Counts (what a sparse-attention kernel reads
	// to know how many indices to gather).
	Counts bool
	// Instrument uses the instrumented kernels and keeps a Stats record
	// per row (costs a little time).
	Instrument bool
	// Scores is the element type of the batches' score rows: Float32 (the
	// zero value), Float16 or BFloat16. 16-bit scores are compared and
	// written (Values) as their exact float32 values (DType.Widen), with
	// the same order, ties and NaN rules; a row of them is half the bytes
	// to read.
	Scores DType
	// DependentLaunch makes Select launch its kernel as a programmatic
	// dependent launch (runtime.Kernel.LaunchDependent; compute capability
	// 9.0; gen.Config.DependentLaunch): the kernel may be scheduled while
	// the kernel before it on the stream still runs (one that allows it,
	// griddepcontrol.launch_dependents: an indexer's, or the previous
	// Select's), and waits for that one's end before it reads anything;
	// once it runs, the kernel after it may be scheduled likewise. The same
	// results, without the gap between the kernels, on a stream and in a
	// captured graph (perf notes 111).
	DependentLaunch bool
	// AlwaysPredict runs a GVR kernel on every step that has a prediction.
	// Without it, a predicted step runs the fallback kernel of the same
	// shape where the device's tuning measured that faster (Tuning.Fallback:
	// on the paper's synthetic rows and static prediction, the row sample's
	// estimate lands the first pass as well as the prediction, whose
	// gathers cost Phase 1 time; perf notes 116). Set it to measure the
	// prediction (gvrbench -replay), or where the rows' predictions are
	// much closer than that workload's (the fallback is exact either way).
	AlwaysPredict bool

	// Kernel tuning (gen.Config); 0 means the default: MaxCandidates
	// max(3K, 1024), BlockSize 512, Bins 2048, the generator's Unroll.
	MaxCandidates, BlockSize, Bins, Unroll int

	// Device is the GPU to use; nil means device 0.
	Device *runtime.Device
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.K == 0 {
		c.K = 2048
	}
	if c.Layers == 0 {
		c.Layers = 1
	}
	if c.MaxCandidates == 0 {
		c.MaxCandidates = max(3*c.K, 1024)
	}
	if c.BlockSize == 0 {
		c.BlockSize = 512
	}
	if c.Bins == 0 {
		c.Bins = 2048
	}
	return c
}

// KernelConfig is the generator configuration a Selector of c builds its
// kernels with for target t, c's defaults applied: one CTA per row
// (ChoiceConfig makes it a cluster choice's).
func (c Config) KernelConfig(t ptx.Target) gen.Config { return c.withDefaults().kernelConfig(t) }

// kernelConfig is the generator configuration of c (with defaults) for
// target t.
func (c Config) kernelConfig(t ptx.Target) gen.Config {
	return gen.Config{K: c.K, MaxCandidates: c.MaxCandidates, BlockSize: c.BlockSize, Bins: c.Bins,
		Target: t, Unroll: c.Unroll, Instrument: c.Instrument, Sorted: c.Sorted, Scores: c.Scores.ScoreType(),
		DependentLaunch: c.DependentLaunch}
}

// validate checks c (with defaults) and its kernel configuration for t.
func (c Config) validate(t ptx.Target) error {
	var errs []error
	if c.K < 1 {
		errs = append(errs, fmt.Errorf("K = %d: must be at least 1", c.K))
	}
	if c.MaxRows < 1 || c.MaxRows > 1<<31-1 {
		errs = append(errs, fmt.Errorf("MaxRows = %d: must be 1 to 2^31-1", c.MaxRows))
	}
	if c.Layers < 1 {
		errs = append(errs, fmt.Errorf("Layers = %d: must be at least 1", c.Layers))
	}
	if c.Scores != Float32 && c.Scores != Float16 && c.Scores != BFloat16 {
		errs = append(errs, fmt.Errorf("Scores = %v: must be Float32, Float16 or BFloat16", c.Scores))
	}
	if c.K >= 1 && c.MaxRows >= 1 && int64(c.K)*int64(c.MaxRows) > 1<<31-1 {
		errs = append(errs, fmt.Errorf("K*MaxRows = %d: the output would not be int32-addressable", int64(c.K)*int64(c.MaxRows)))
	}
	if len(errs) == 0 {
		if err := c.kernelConfig(t).Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("topk: bad selector config: %w", errors.Join(errs...))
	}
	return nil
}

// Batch is one Select call's rows. Row r's scores are the elements of
// Config.Scores (float32 unless set) at byte offset size*r*Stride of
// Scores; its length comes from Lengths (checked on the host, then copied
// to the device) or DeviceLengths (already on the device: not checked, the
// kernel clamps each to [0, Stride]). With neither, the batch is dense:
// every row is Stride long, and the kernel starts without loading a
// length (a memory round trip before everything else: about 0.2-0.5 us of
// a cold call at batch 1, perf notes 139). Set at most one; NextN needs
// one.
type Batch struct {
	Scores        *runtime.Buffer // Config.Scores [Rows, Stride]; may be a View at any offset that is a multiple of the score size
	Stride        int             // elements from one row's start to the next; at least K
	Rows          int             // 0 to MaxRows
	Lengths       []int32         // host: Rows lengths (Rows/NextN with NextN), each in [0, Stride]
	DeviceLengths *runtime.Buffer // device: int32 [Rows] (or [Rows/NextN] with NextN)
	// NextN > 1 is speculative decoding (MTP): each sequence has NextN
	// consecutive rows, one per new token, and the lengths are the
	// sequences' (seq_lens, Rows/NextN of them): row r's length is
	// lengths[r/NextN] - NextN + 1 + r%NextN, computed on the device, and
	// less than 0 counts as 0. Each row keeps its own prediction. 0 or 1:
	// one row per length.
	NextN int
	// Windows (prefill, ragged batches): with RowStarts (host) or
	// DeviceRowStarts (device, int32 [Rows]), row r selects among the
	// columns [start, end) of its row, end being its length (Lengths or
	// DeviceLengths); device starts are clamped to [0, end]. Indices
	// count from the window's start, or from the row's with
	// AbsoluteIndices (the prediction of the layer's next step is read in
	// the same space). Not with NextN.
	RowStarts       []int32
	DeviceRowStarts *runtime.Buffer
	AbsoluteIndices bool
	// NoPrediction runs the step without the layer's previous indices as
	// its prediction (a fallback kernel, as on a layer's first step): for
	// rows that do not follow the layer's last ones, such as a prefill's
	// chunks, whose stale prediction would cost a pass and gain nothing.
	// The step's indices still become the layer's next prediction.
	NoPrediction bool
	// Pages, if set, is a caller-owned int32 [Rows, K] buffer that gets
	// the fused page-table output: slot j of row r holds the selected
	// column c (in the row, whatever the index space) mapped through the page table of the row's batch b = r /
	// NextN (r without NextN), PageTable[b*PageTableStride + c/PageSize] *
	// PageSize + c%PageSize, or -1 where the index slot is -1; the
	// indices themselves (Result.Indices, the layer's feedback) are
	// written as always, slot beside slot. PageTable is int32 [batches,
	// PageTableStride], PageTableStride at least ceil(Stride/PageSize).
	Pages           *runtime.Buffer
	PageTable       *runtime.Buffer
	PageTableStride int
	PageSize        int
}

// Result is where a Select left its output, on the device. It is valid once
// the stream the Select ran on reaches it, until the layer's next Select.
type Result struct {
	Layer, Rows, K int
	// Indices is the layer's feedback buffer, int32 [MaxRows, K]: row r's
	// min(K, n) selected indices (a set in no order; in rank order with
	// Config.Sorted) are in its first K
	// slots, then -1 for the slots past n. The set's order is the same
	// for the same input and kernel choice, run after run; another choice
	// may order it otherwise (a sure set's kernel writes the sure ones
	// first: Result.SureSet). The next Select of the layer
	// reads it as its prediction, so leave it as it is.
	Indices *runtime.Buffer
	Values  *runtime.Buffer // float32 [MaxRows, K], the selected values (-Inf past n); nil unless Config.Values
	Stats   *runtime.Buffer // StatsBytes per row; nil unless Config.Instrument
	Counts  *runtime.Buffer // int32 [MaxRows]: min(K, n) per row; nil unless Config.Counts
	Pages   *runtime.Buffer // the batch's Pages (the fused page-table output), or nil
	// Predicted says the kernel had the layer's previous indices as its
	// prediction; false where the fallback kernel ran: on a layer's first
	// step, with Batch.NoPrediction, and where the device's tuning runs it
	// on predicted steps too (Tuning.Fallback; not with
	// Config.AlwaysPredict).
	Predicted bool
	// Kernel is the kernel that ran (gvr_topk, topk_fallback,
	// gvr_topk_cluster or topk_fallback_cluster), and Cluster, for the
	// cluster kernels, how many CTAs took each row (0 otherwise), and
	// KeepOver whether it kept which vectors of a long row's excess hold
	// high elements, to load only those again
	// (gen.Config.KeepOver), and SureSet whether it set apart the
	// candidates its first pass showed to be in the Top-K
	// (gen.Config.SureSet), and Groups how many clusters shared each row
	// (gen.Config.Groups; 0: one).
	Kernel   string
	Cluster  int
	KeepOver bool
	SureSet  bool
	Groups   int
}

// ReadIndices copies the Rows*K indices to the host, after the work queued
// on the default stream and every stream made by runtime.NewStream.
func (r Result) ReadIndices() ([]int32, error) {
	idx := make([]int32, r.Rows*r.K)
	if err := runtime.Download(idx, r.Indices); err != nil {
		return nil, fmt.Errorf("topk: reading the indices: %w", err)
	}
	return idx, nil
}

// ReadValues copies the Rows*K values to the host, like ReadIndices.
func (r Result) ReadValues() ([]float32, error) {
	if r.Values == nil {
		return nil, errors.New("topk: no values: the selector was made without Config.Values")
	}
	vals := make([]float32, r.Rows*r.K)
	if err := runtime.Download(vals, r.Values); err != nil {
		return nil, fmt.Errorf("topk: reading the values: %w", err)
	}
	return vals, nil
}

// ReadCounts copies the Rows valid-output counts to the host, like
// ReadIndices.
func (r Result) ReadCounts() ([]int32, error) {
	if r.Counts == nil {
		return nil, errors.New("topk: no counts: the selector was made without Config.Counts")
	}
	c := make([]int32, r.Rows)
	if err := runtime.Download(c, r.Counts); err != nil {
		return nil, fmt.Errorf("topk: reading the counts: %w", err)
	}
	return c, nil
}

// ReadStats copies the Rows instrumentation records to the host, like
// ReadIndices.
func (r Result) ReadStats() ([]Stats, error) {
	if r.Stats == nil {
		return nil, errors.New("topk: no stats: the selector was made without Config.Instrument")
	}
	raw := make([]byte, r.Rows*StatsBytes)
	if err := runtime.Download(raw, r.Stats); err != nil {
		return nil, fmt.Errorf("topk: reading the stats: %w", err)
	}
	return ParseStats(raw)
}

// StatsBytes is the size of one row's instrumentation record (gen/gvr.go).
const StatsBytes = gen.StatsBytes

// Path is how a kernel selected a row.
type Path uint32

// The paths of the instrumentation record.
const (
	PathCopy  Path = gen.PathCopy  // n <= K: every element
	PathGVR   Path = gen.PathGVR   // threshold bracketed, candidates refined in shared memory
	PathExact Path = gen.PathExact // radix select over the row
	PathHeld  Path = gen.PathHeld  // a short row (K < n <= gen.Config.HeldMax(), 2K where K <= Bins) selected in shared memory, without Phases 1-3
)

func (p Path) String() string {
	switch p {
	case PathCopy:
		return "copy"
	case PathGVR:
		return "gvr"
	case PathExact:
		return "exact"
	case PathHeld:
		return "held"
	}
	return fmt.Sprintf("path(%d)", uint32(p))
}

// Stats is one row's instrumentation record: %clock64 (SM cycles) at the
// start and at the end of each of the four phases, and counters.
type Stats struct {
	Stamps       [5]uint64
	Marks        [gen.NumMarks]uint64 // %clock64 at points inside Phases 1-4 (gen.MarkP1Indices...), 0 where not passed
	Phase2Passes uint32               // counting passes of the threshold search
	RadixPasses  uint32               // radix select passes (Phase 4 or the exact path)
	Candidates   uint32               // candidates collected in Phase 3
	Path         Path
	ValidPred    uint32 // predicted indices that were in range and finite
	Sure         uint32 // of the candidates, those set apart as sure to be in the Top-K (gen.Config.SureSet; 0 where none)
}

// PhaseCycles is the SM cycles each phase took; a phase the row skipped
// took none.
func (s Stats) PhaseCycles() [4]uint64 {
	var c [4]uint64
	for i := range c {
		c[i] = s.Stamps[i+1] - s.Stamps[i]
	}
	return c
}

// Steps name the intervals the marks split Phases 1-4 into
// (StepCycles).
var Steps = [...]string{"length", "slice issue", "slice sync", "p1 start", "p1 indices", "p1 values", "p1 sample", "p1 slice wait", "p4 span", "p4 pass", "p4 k-th", "p4 write", "p4 finish", "p2 count", "p2 combine", "p2 rest", "p3 place", "p3 walk", "p3 gather"}

// StepCycles is the SM cycles of each of Steps, and whether the row passed
// through it (both its ends marked): the row's length arriving (the
// kernel's first load); a cluster kernel's slice set-up (thread 0's
// mbarrier initialisation and bulk copy issue, then the other mbarriers,
// the CTA barrier and the cluster arrival; in kernels that set it up in
// Phase 1, once the predicted indices are in, the steps between those
// and the sample's step); what is left before Phase 1
// (the short-row test, a slice's end elements' loads issued); Phase 1's
// predicted indices, their values (one CTA: what is left of their wait
// after the sample's estimate; a cluster, whose values come before the
// estimate: their wait and the round that gathers them with the sample;
// without a prediction, the sample's wait and its reduction or gathering
// round), the sample's estimate, a cluster kernel's wait for its slice;
// Phase 4's key span, first radix pass, the rest of finding the K-th
// candidate, writing the selection, and what follows (sorting,
// page-table output, counts); Phase 2's first pass over this thread's
// share, its counts combined over the CTA or the cluster (in thread 0,
// which waits for the others there), and the rest of Phase 2 (the
// choice, and any later passes); Phase 3's placing of this thread's
// candidates (their slots, from Phase 2's prefixes), its walk writing
// them (to the barrier after it),
// and what follows: in a cluster's leader, the wait for the others'
// candidates.
func (s Stats) StepCycles() (c [len(Steps)]uint64, ok [len(Steps)]bool) {
	m := s.Marks
	p1 := m[gen.MarkP1Indices] // where the sample's step starts: once the prediction's values are on their way, if any
	if p1 == 0 {
		p1 = m[gen.MarkP1Start]
	}
	start := m[gen.MarkSliceSynced] // where the step before Phase 1 starts: past a cluster's slice set-up, if any
	if start == 0 {
		start = m[gen.MarkLength]
	}
	issue := m[gen.MarkLength] // where the slice's set-up starts
	if i := p1; i != 0 && m[gen.MarkSliceIssued] > i {
		// The slice set up in Phase 1, once its loads were out (perf notes
		// 65): between the indices (without a prediction, Phase 1's start)
		// and the sample's step.
		start, issue, p1 = m[gen.MarkLength], i, m[gen.MarkSliceSynced]
	}
	values := [2]uint64{m[gen.MarkP1Sample], m[gen.MarkP1Values]}
	sample := [2]uint64{p1, m[gen.MarkP1Sample]}
	if v := m[gen.MarkP1Values]; v != 0 && v < m[gen.MarkP1Sample] { // a cluster's order
		values, sample = [2]uint64{p1, v}, [2]uint64{v, m[gen.MarkP1Sample]}
	}
	ends := [len(Steps)][2]uint64{
		{s.Stamps[0], m[gen.MarkLength]}, {issue, m[gen.MarkSliceIssued]}, {m[gen.MarkSliceIssued], m[gen.MarkSliceSynced]},
		{start, m[gen.MarkP1Start]}, {m[gen.MarkP1Start], m[gen.MarkP1Indices]}, values, sample,
		{m[gen.MarkP1Done], s.Stamps[1]}, {s.Stamps[3], m[gen.MarkP4Span]}, {m[gen.MarkP4Span], m[gen.MarkP4Pass]},
		{m[gen.MarkP4Pass], m[gen.MarkP4Kth]}, {m[gen.MarkP4Kth], m[gen.MarkP4Written]}, {m[gen.MarkP4Written], s.Stamps[4]},
		{s.Stamps[1], m[gen.MarkP2Counted]}, {m[gen.MarkP2Counted], m[gen.MarkP2Combined]}, {m[gen.MarkP2Combined], s.Stamps[2]},
		{s.Stamps[2], m[gen.MarkP3Placed]}, {m[gen.MarkP3Placed], m[gen.MarkP3Walked]}, {m[gen.MarkP3Walked], s.Stamps[3]},
	}
	for i, e := range ends {
		if e[0] != 0 && e[1] != 0 && e[1] >= e[0] {
			c[i], ok[i] = e[1]-e[0], true
		}
	}
	return c, ok
}

// ParseStats decodes instrumentation records (little-endian, StatsBytes
// each; the layout is gen/gvr.go's).
func ParseStats(raw []byte) ([]Stats, error) {
	if len(raw)%StatsBytes != 0 {
		return nil, fmt.Errorf("topk: %d bytes of stats: not a whole number of %d-byte records", len(raw), StatsBytes)
	}
	out := make([]Stats, len(raw)/StatsBytes)
	le := binary.LittleEndian
	for i := range out {
		r := raw[i*StatsBytes : (i+1)*StatsBytes]
		s := &out[i]
		for j := range s.Stamps {
			s.Stamps[j] = le.Uint64(r[8*j:])
		}
		for j := range s.Marks {
			s.Marks[j] = le.Uint64(r[gen.StatsMarks+8*j:])
		}
		s.Phase2Passes = le.Uint32(r[gen.StatsPhase2Passes:])
		s.RadixPasses = le.Uint32(r[gen.StatsRadixPasses:])
		s.Candidates = le.Uint32(r[gen.StatsCandidates:])
		s.Path = Path(le.Uint32(r[gen.StatsPath:]))
		s.ValidPred = le.Uint32(r[gen.StatsValidPred:])
		s.Sure = le.Uint32(r[gen.StatsSure:])
	}
	return out, nil
}
