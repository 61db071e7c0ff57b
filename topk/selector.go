//go:build cuda

package topk

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/runtime"
)

// Selector selects the Top-K of batches of rows on a GPU, step after step,
// with one feedback buffer per layer: the indices a layer's step t selects
// stay on the device and are the prediction of its step t+1 (GVR). A
// layer's first step, and the first after Reset, runs the fallback kernel,
// which guesses from a sample of the row instead; so does every step where
// the device's tuning measured the fallback faster than the prediction
// (Tuning.Fallback), unless Config.AlwaysPredict.
//
// Its buffers are allocated once and keep their device addresses until
// Close, so a step can be captured in a CUDA graph (runtime.Stream.Capture)
// and replayed.
//
// A Selector is safe for concurrent use: calls are serialised, and
// SelectHost's copy in, step and copy out are one call. A layer's steps may
// be queued on different streams: a step on another stream than the
// layer's previous one is ordered after it (that stream waits for it on
// the device), since both use the layer's buffers. A step captured into a
// graph is ordered only by the stream it is captured on, and graph replays
// are the caller's to order; capturing a layer on another stream than its
// previous step's is refused while that step may still run. A Result's
// buffers are the layer's: the layer's next step overwrites them.
type Selector struct {
	mu     sync.Mutex
	cfg    Config // with defaults
	dev    *runtime.Device
	layers []layer
	closed bool

	// The kernels choose may pick, loaded by NewSelector, with their
	// arguments, made once and set by name before each launch.
	kernels map[choice]*loaded
	device  device

	host *runtime.Buffer // SelectHost's scores, grown as needed

	// groupRows is the most rows a step may run with rows shared by
	// several clusters (choice.groups), for which each layer keeps a
	// workspace of workBytes; 0: none.
	groupRows, workBytes int
}

// layer is one layer's feedback state.
type layer struct {
	idx     *runtime.Buffer // int32 [MaxRows, K]: output, and the next step's prediction
	vals    *runtime.Buffer // float32 [MaxRows, K], or nil
	stats   *runtime.Buffer // [MaxRows] records, or nil
	counts  *runtime.Buffer // int32 [MaxRows], or nil
	lengths *runtime.Buffer // int32 [MaxRows]: Batch.Lengths land here
	starts  *runtime.Buffer // int32 [MaxRows]: Batch.RowStarts land here
	primed  bool            // idx holds a previous step

	// work is the workspace of the kernels whose rows several clusters
	// share (gen.GroupWorkspaceBytes a row, zero when allocated), or nil:
	// each layer its own, as steps of different layers may run at once.
	work *runtime.Buffer

	// The stream of the layer's last step queued outside a graph capture
	// (nil: the default stream), if queued is set, and an event that
	// orders a step on another stream after it.
	stream *runtime.Stream
	queued bool
	done   *runtime.Event
}

// loaded is a kernel the selector launches, and its arguments.
type loaded struct {
	k    *runtime.Kernel
	args *ptx.Args
}

// NewSelector loads the kernels for cfg (Kernel: generated for the
// device's target and JIT-compiled on first use in the process): gvr_topk
// and topk_fallback, and the cluster kernels the device's tuning (choose)
// may pick for up to MaxRows rows; and it allocates the per-layer buffers.
func NewSelector(cfg Config) (*Selector, error) {
	cfg = cfg.withDefaults()
	dev := cfg.Device
	if dev == nil {
		var err error
		if dev, err = runtime.Open(0); err != nil {
			return nil, fmt.Errorf("topk: NewSelector: %w", err)
		}
	}
	t := dev.Info().Target
	if err := cfg.validate(t); err != nil {
		return nil, err
	}
	kcfg := cfg.kernelConfig(t)
	s := &Selector{cfg: cfg, dev: dev, kernels: make(map[choice]*loaded), device: deviceOf(dev.Info())}
	choices, groupRows := choicesFor(s.device, cfg.MaxRows, cfg.AlwaysPredict)
	if groupRows > 0 { // the same for every kernel: it depends on MaxCandidates alone
		s.groupRows, s.workBytes = groupRows, groupRows*gen.GroupWorkspaceBytes(kcfg)
	}
	for _, c := range choices {
		k, err := Kernel(dev, c.name, ChoiceConfig(kcfg, c.cluster, c.keep, c.sure, c.groups))
		if err != nil && c.cluster > 0 && errors.Is(err, gen.ErrSharedMemory) {
			continue // cfg leaves no room for a slice of the row: one CTA per row
		}
		if err != nil {
			return nil, fmt.Errorf("topk: NewSelector: %w", err)
		}
		s.kernels[c] = &loaded{k, k.Args()}
	}
	if err := s.allocate(); err != nil {
		s.free()
		return nil, fmt.Errorf("topk: NewSelector (%d layers of %d rows, K = %d): %w", cfg.Layers, cfg.MaxRows, cfg.K, err)
	}
	return s, nil
}

func (s *Selector) allocate() error {
	c := s.cfg
	out := c.MaxRows * c.K * 4
	var err error
	s.layers = make([]layer, c.Layers)
	for i := range s.layers {
		l := &s.layers[i]
		if l.idx, err = s.dev.Alloc(out); err != nil {
			return err
		}
		if l.lengths, err = s.dev.Alloc(c.MaxRows * 4); err != nil {
			return err
		}
		if l.starts, err = s.dev.Alloc(c.MaxRows * 4); err != nil {
			return err
		}
		if l.done, err = s.dev.NewSyncEvent(); err != nil {
			return err
		}
		if c.Values {
			if l.vals, err = s.dev.Alloc(out); err != nil {
				return err
			}
		}
		if c.Instrument {
			if l.stats, err = s.dev.Alloc(c.MaxRows * StatsBytes); err != nil {
				return err
			}
		}
		if c.Counts {
			if l.counts, err = s.dev.Alloc(c.MaxRows * 4); err != nil {
				return err
			}
		}
		if s.workBytes > 0 {
			if l.work, err = s.dev.Alloc(s.workBytes); err != nil {
				return err
			}
			if err = l.work.Memset32(nil, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// free releases every buffer allocated so far.
func (s *Selector) free() error {
	var errs []error
	release := func(b **runtime.Buffer) {
		if *b != nil {
			errs = append(errs, (*b).Free())
			*b = nil
		}
	}
	release(&s.host)
	for i := range s.layers {
		l := &s.layers[i]
		release(&l.idx)
		release(&l.lengths)
		release(&l.starts)
		release(&l.vals)
		release(&l.stats)
		release(&l.counts)
		release(&l.work)
		if l.done != nil {
			errs = append(errs, l.done.Close())
			l.done = nil
		}
	}
	return errors.Join(errs...)
}

// Config is the selector's configuration, defaults filled in.
func (s *Selector) Config() Config { return s.cfg }

// Kernels are the single-CTA kernels the selector launches for rows
// longer than a sure set pays in (gen.SureSetMaxRow): GVR with a
// prediction, and the fallback for a layer's first step.
func (s *Selector) Kernels() (gvr, fallback *runtime.Kernel) {
	return s.kernels[choice{kernelGVR, 0, false, false, 0}].k, s.kernels[choice{kernelFallback, 0, false, false, 0}].k
}

// Select queues the Top-K of batch b's rows on stream st (nil: the default
// stream) with layer's feedback buffer: its previous step's indices are the
// prediction, and this step's indices replace them. The returned Result
// says where the output is; it is ready when st gets there. Select does
// not wait for the GPU, and with DeviceLengths it makes no copies and no
// allocations, so it can be captured in a graph.
func (s *Selector) Select(layer int, b Batch, st *runtime.Stream) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.selectLocked(layer, b, st)
}

// selectLocked is Select, with s.mu held.
func (s *Selector) selectLocked(layer int, b Batch, st *runtime.Stream) (Result, error) {
	if s.closed {
		return Result{}, ErrClosed
	}
	if layer < 0 || layer >= len(s.layers) {
		return Result{}, fmt.Errorf("topk: Select: layer %d: the selector has layers 0 to %d", layer, len(s.layers)-1)
	}
	if err := s.check(b, st); err != nil {
		return Result{}, fmt.Errorf("topk: Select (layer %d): %w", layer, err)
	}
	l := &s.layers[layer]
	capturing, err := st.Capturing()
	if err != nil {
		return Result{}, fmt.Errorf("topk: Select (layer %d): %w", layer, err)
	}
	if b.Lengths != nil && capturing {
		// A graph would keep the address of the caller's slice.
		return Result{}, fmt.Errorf("topk: Select (layer %d): host Lengths cannot be captured in a graph: use DeviceLengths", layer)
	}
	if err := s.after(l, st, capturing); err != nil {
		return Result{}, fmt.Errorf("topk: Select (layer %d): %w", layer, err)
	}
	starts := b.DeviceRowStarts
	if b.RowStarts != nil {
		if err := runtime.UploadAsync(st, l.starts, b.RowStarts); err != nil {
			return Result{}, fmt.Errorf("topk: Select (layer %d): copying the row starts: %w", layer, err)
		}
		starts = l.starts
	}
	var startsPtr, abs uint64 // null: no windows
	if starts != nil {
		startsPtr = starts.Ptr()
	}
	if b.AbsoluteIndices {
		abs = 1
	}
	var lengths uint64 // null: a dense batch
	if b.DeviceLengths != nil {
		lengths = b.DeviceLengths.Ptr()
	}
	if b.Lengths != nil {
		if err := runtime.UploadAsync(st, l.lengths, b.Lengths); err != nil {
			return Result{}, fmt.Errorf("topk: Select (layer %d): copying the lengths: %w", layer, err)
		}
		lengths = l.lengths.Ptr()
	}
	n := b.Stride // the longest row
	if b.Lengths != nil {
		n = 0
		for _, m := range b.Lengths {
			n = max(n, int(m)) // with NextN, a sequence's length is its longest row's
		}
	}
	sp := step{rows: b.Rows, n: n, predicted: l.primed && !b.NoPrediction, alwaysPredict: s.cfg.AlwaysPredict, device: s.device}
	c := choose(sp)
	kern := s.kernels[c]
	if kern != nil && c.groups > 1 && (b.Rows > s.groupRows || !kern.k.ResidentUnits(b.Rows)) {
		// Rows shared by clusters that would not all be resident at
		// once: one cluster a row.
		sp.oneCluster = true
		c = choose(sp)
		kern = s.kernels[c]
	}
	if kern == nil { // a cluster kernel that cfg leaves no room for: one CTA per row
		sp.device = device{}
		c = choose(sp)
		kern = s.kernels[c]
	}
	predicted := c.name == kernelGVR || c.name == kernelGVRCluster // the kernel reads the prediction
	res := Result{Layer: layer, Rows: b.Rows, K: s.cfg.K, Indices: l.idx, Values: l.vals, Stats: l.stats, Counts: l.counts,
		Pages: b.Pages, Predicted: predicted, Kernel: c.name, Cluster: c.cluster, KeepOver: c.keep, SureSet: c.sure, Groups: c.groups}
	if b.Rows == 0 {
		return res, nil
	}
	var vals uint64 // null: the kernel writes no values
	if l.vals != nil {
		vals = l.vals.Ptr()
	}
	k, args := kern.k, kern.args
	if predicted {
		// In place: gvr_topk reads row r's prediction before it writes any
		// of row r's output, and each CTA touches only its own row (in
		// gvr_topk_cluster, every CTA of row r's cluster reads the
		// prediction before the cluster barriers that precede the
		// leader's first write).
		args.Set("pred", l.idx.Ptr()).Set("pred_stride", uint64(s.cfg.K)).Set("pred_count", uint64(s.cfg.K))
	}
	var counts uint64 // null: no counts
	if l.counts != nil {
		counts = l.counts.Ptr()
	}
	var pages, table uint64 // null: no page-table output
	if b.Pages != nil {
		pages, table = b.Pages.Ptr(), b.PageTable.Ptr()
	}
	args.Set("scores", b.Scores.Ptr()).Set("row_stride", uint64(b.Stride)).Set("lengths", lengths).
		Set("next_n", uint64(b.NextN)).Set("row_starts", startsPtr).Set("abs_idx", abs).Set("out_idx", l.idx.Ptr()).Set("out_vals", vals).Set("out_count", counts).
		Set("page_table", table).Set("page_table_stride", uint64(b.PageTableStride)).Set("page_size", uint64(b.PageSize)).
		Set("out_pages", pages)
	if l.stats != nil {
		args.Set("stats", l.stats.Ptr())
	}
	if k.Contract.Cooperative > 0 {
		// Rows shared by clusters, which wait for each other: LaunchUnits
		// launches them all resident at once, cooperatively (which fails
		// rather than queue some of them behind the others).
		args.Set("workspace", l.work.Ptr())
	}
	if err := k.LaunchUnits(st, b.Rows, args, s.cfg.DependentLaunch); err != nil {
		return Result{}, fmt.Errorf("topk: Select (layer %d): %w", layer, err)
	}
	l.primed = true
	if !capturing {
		l.stream, l.queued = st, true
	}
	return res, nil
}

// after orders a step of layer l queued on st after the layer's previous
// step: both write the layer's buffers (indices, lengths), and the new one
// reads the old one's indices as its prediction. On the same stream,
// stream order does it. Every stream of package runtime is a blocking
// one, so the default stream and the others are ordered with each other
// by the driver, and a closed stream's work is finished (Stream.Close
// waits for it). Between two other streams, st waits for an event
// recorded on the previous one. A graph cannot wait for work outside it,
// so a capture on another stream is refused until that work is done.
func (s *Selector) after(l *layer, st *runtime.Stream, capturing bool) error {
	prev := l.stream
	if !l.queued || prev == st || prev == nil || st == nil || prev.Closed() {
		return nil
	}
	if err := l.done.Record(prev); err != nil {
		return fmt.Errorf("ordering after the layer's previous step: %w", err)
	}
	if !capturing {
		if err := st.Wait(l.done); err != nil {
			return fmt.Errorf("ordering after the layer's previous step: %w", err)
		}
		return nil
	}
	done, err := l.done.Done()
	if err != nil {
		return fmt.Errorf("ordering after the layer's previous step: %w", err)
	}
	if !done {
		return errors.New("the layer's previous step, queued on another stream, may still be running, " +
			"and a graph cannot wait for it: synchronize that stream before capturing the layer on this one")
	}
	l.queued = false
	return nil
}

// check validates a batch and a stream before any work is queued.
func (s *Selector) check(b Batch, st *runtime.Stream) error {
	c := s.cfg
	aligned := func(what string, buf *runtime.Buffer, need, align int) error {
		if err := buf.Check(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if d := buf.Device(); d != s.dev {
			return fmt.Errorf("%s is on %v; the selector is on %v", what, d, s.dev)
		}
		// The kernels read whole elements: a misaligned one faults, and a
		// fault ends the process's CUDA context.
		if a := buf.Ptr() % uint64(align); a != 0 {
			return fmt.Errorf("%s is at device address %#x, %d bytes past a %d-byte boundary (a View at an offset that is not a multiple of %d?)", what, buf.Ptr(), a, align, align)
		}
		if buf.Bytes() < need {
			return fmt.Errorf("%s holds %d bytes; the batch of %d rows needs %d", what, buf.Bytes(), b.Rows, need)
		}
		return nil
	}
	onDevice := func(what string, buf *runtime.Buffer, need int) error { return aligned(what, buf, need, 4) }
	switch {
	case b.Rows < 0 || b.Rows > c.MaxRows:
		return fmt.Errorf("Rows = %d: must be 0 to MaxRows = %d", b.Rows, c.MaxRows)
	case b.Stride < 1 || b.Stride > 1<<31-1:
		return fmt.Errorf("Stride = %d: must be 1 to 2^31-1", b.Stride)
	case c.K > b.Stride:
		return fmt.Errorf("K = %d is larger than the row stride %d", c.K, b.Stride)
	case b.Scores == nil:
		return errors.New("Batch.Scores is nil")
	case b.Lengths == nil && b.DeviceLengths == nil && b.NextN > 1:
		return fmt.Errorf("NextN = %d without lengths: a sequence's rows need its length (Lengths or DeviceLengths)", b.NextN)
	case b.Lengths != nil && b.DeviceLengths != nil:
		return errors.New("the batch has both Lengths and DeviceLengths: set one")
	case b.NextN < 0:
		return fmt.Errorf("NextN = %d: must be 0 or 1 (one row per length) or the rows per sequence", b.NextN)
	case b.NextN > 1 && b.Rows%b.NextN != 0:
		return fmt.Errorf("Rows = %d is not a whole number of sequences of NextN = %d rows", b.Rows, b.NextN)
	}
	lens := b.Rows // how many lengths the batch has
	if b.NextN > 1 {
		lens = b.Rows / b.NextN
	}
	if st != nil && st.Device() != s.dev {
		return fmt.Errorf("the stream is on %v; the selector is on %v", st.Device(), s.dev)
	}
	// The labels are made only for an error: Select allocates nothing
	// (TestSelectNoAllocs).
	size := c.Scores.Size()
	if err := aligned("Scores", b.Scores, size*b.Rows*b.Stride, size); err != nil {
		return fmt.Errorf("%w (scores of %v)", err, c.Scores)
	}
	if err := s.checkPages(b, lens, onDevice); err != nil {
		return err
	}
	if err := checkWindows(b, onDevice); err != nil {
		return err
	}
	if b.DeviceLengths != nil {
		return onDevice("DeviceLengths", b.DeviceLengths, 4*lens)
	}
	if b.Lengths == nil {
		return nil // a dense batch
	}
	if len(b.Lengths) != lens {
		if b.NextN > 1 {
			return fmt.Errorf("%d Lengths for %d sequences of NextN = %d rows", len(b.Lengths), lens, b.NextN)
		}
		return fmt.Errorf("%d Lengths for %d rows", len(b.Lengths), lens)
	}
	for r, n := range b.Lengths {
		if n < 0 || int(n) > b.Stride {
			return fmt.Errorf("Lengths[%d] = %d: outside [0, Stride = %d]", r, n, b.Stride)
		}
	}
	return nil
}

// checkWindows checks a batch's windows: host starts within their rows'
// ends (what device starts cannot be, the kernel clamps), one per row.
func checkWindows(b Batch, onDevice func(string, *runtime.Buffer, int) error) error {
	switch {
	case b.RowStarts == nil && b.DeviceRowStarts == nil:
		if b.AbsoluteIndices {
			return errors.New("AbsoluteIndices without windows (RowStarts or DeviceRowStarts)")
		}
		return nil
	case b.RowStarts != nil && b.DeviceRowStarts != nil:
		return errors.New("the batch has both RowStarts and DeviceRowStarts: set one")
	case b.NextN > 1:
		return fmt.Errorf("windows (row starts) with NextN = %d: a row is either a window or one of a sequence's NextN rows", b.NextN)
	case b.DeviceRowStarts != nil:
		return onDevice("DeviceRowStarts", b.DeviceRowStarts, 4*b.Rows)
	case len(b.RowStarts) != b.Rows:
		return fmt.Errorf("%d RowStarts for %d rows", len(b.RowStarts), b.Rows)
	}
	for r, start := range b.RowStarts {
		end := int32(b.Stride)
		if b.Lengths != nil {
			end = b.Lengths[r]
		}
		if start < 0 || start > end {
			return fmt.Errorf("RowStarts[%d] = %d: the window [%d, %d) starts outside [0, its end]", r, start, start, end)
		}
	}
	return nil
}

// checkPages checks a batch's fused page-table output: a page table with
// a page per PageSize columns of the stride for each of its batches
// (lens: sequences with NextN, else rows), and room for Rows*K entries.
func (s *Selector) checkPages(b Batch, batches int, onDevice func(string, *runtime.Buffer, int) error) error {
	switch {
	case b.Pages == nil && (b.PageTable != nil || b.PageSize != 0 || b.PageTableStride != 0):
		return errors.New("PageTable, PageSize or PageTableStride without Pages: set Pages, the buffer the page-table output goes to")
	case b.Pages == nil:
		return nil
	case b.PageTable == nil:
		return errors.New("Pages without a PageTable")
	case b.PageSize < 1 || b.PageSize > 1<<30:
		return fmt.Errorf("PageSize = %d: must be 1 to 2^30", b.PageSize)
	}
	if need := (b.Stride + b.PageSize - 1) / b.PageSize; b.PageTableStride < need {
		return fmt.Errorf("PageTableStride = %d: rows of Stride = %d in pages of %d need %d entries per batch", b.PageTableStride, b.Stride, b.PageSize, need)
	}
	if err := onDevice("PageTable", b.PageTable, 4*batches*b.PageTableStride); err != nil {
		return err
	}
	return onDevice("Pages", b.Pages, 4*b.Rows*s.cfg.K)
}

// SelectHost is Select for scores in host memory, for callers who just
// have a []float32: len(scores)/stride rows of stride elements, each of
// length stride or lengths[r]. It copies the scores to the device, runs
// the step on the default stream, waits, and returns the indices (Rows*K,
// each row a set, or in rank order with Config.Sorted, padded with -1)
// and, with Config.Values, the values. The selector's Config.Scores must
// be Float32 (SelectHost16 takes 16-bit scores).
func (s *Selector) SelectHost(layer int, scores []float32, stride int, lengths []int32) (idx []int32, vals []float32, err error) {
	return selectHost(s, "SelectHost", layer, scores, stride, lengths)
}

// SelectHost16 is SelectHost for 16-bit scores (the bits of Float16 or
// BFloat16 numbers, as Config.Scores says).
func (s *Selector) SelectHost16(layer int, scores []uint16, stride int, lengths []int32) (idx []int32, vals []float32, err error) {
	return selectHost(s, "SelectHost16", layer, scores, stride, lengths)
}

func selectHost[T float32 | uint16](s *Selector, name string, layer int, scores []T, stride int, lengths []int32) (idx []int32, vals []float32, err error) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if size != s.cfg.Scores.Size() {
		return nil, nil, fmt.Errorf("topk: %s takes %d-byte scores; the selector's are %v (SelectHost: float32, SelectHost16: float16, bfloat16)", name, size, s.cfg.Scores)
	}
	if stride < 1 || len(scores)%stride != 0 {
		return nil, nil, fmt.Errorf("topk: %s: %d scores are not whole rows of stride %d", name, len(scores), stride)
	}
	rows := len(scores) / stride
	// One critical section from the copy in to the copy out: the scores
	// buffer and the layer's output are shared by every call.
	s.mu.Lock()
	defer s.mu.Unlock()
	scoresBuf, err := s.hostScores(len(scores) * size)
	if err != nil {
		return nil, nil, err
	}
	if err := runtime.Upload(scoresBuf, scores); err != nil {
		return nil, nil, fmt.Errorf("topk: %s: %w", name, err)
	}
	// Without lengths, a dense batch: every row whole.
	res, err := s.selectLocked(layer, Batch{Scores: scoresBuf, Stride: stride, Rows: rows, Lengths: lengths}, nil)
	if err != nil {
		return nil, nil, err
	}
	if idx, err = res.ReadIndices(); err != nil {
		return nil, nil, err
	}
	if res.Values != nil {
		if vals, err = res.ReadValues(); err != nil {
			return nil, nil, err
		}
	}
	return idx, vals, nil
}

// hostScores is SelectHost's device buffer for scores, of at least bytes
// (with s.mu held).
func (s *Selector) hostScores(bytes int) (*runtime.Buffer, error) {
	if s.closed {
		return nil, ErrClosed
	}
	if s.host != nil && s.host.Bytes() >= bytes {
		return s.host, nil
	}
	if s.host != nil {
		// Idle: every SelectHost waits for its step before it returns.
		if err := s.host.Free(); err != nil {
			return nil, fmt.Errorf("topk: SelectHost: %w", err)
		}
		s.host = nil
	}
	b, err := s.dev.Alloc(max(bytes, 4))
	if err != nil {
		return nil, fmt.Errorf("topk: SelectHost: %w", err)
	}
	s.host = b
	return b, nil
}

// Reset starts a new sequence: every layer's next Select runs the fallback
// kernel, as on its first step.
func (s *Selector) Reset() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	for i := range s.layers {
		s.layers[i].primed = false
	}
	return nil
}

// Close frees the selector's device memory; its Results become invalid.
// It waits for the device first, so no queued step still uses the buffers.
// The kernels stay loaded in the device's cache.
func (s *Selector) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	err := s.dev.Synchronize()
	if ferr := s.free(); ferr != nil {
		err = errors.Join(err, ferr)
	}
	if err != nil {
		return fmt.Errorf("topk: Close: %w", err)
	}
	return nil
}
