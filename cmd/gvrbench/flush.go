//go:build cuda

package main

import (
	"errors"
	"fmt"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/runtime"
	"github.com/gvr-go/gvr/topk"
)

// flushRowLen is the length, in floats, of the rows a flushReader reads
// the flush buffer in: one CTA a row.
const flushRowLen = 1 << 16

// flushReader flushes L2 by reading the flush buffer (-flush-by read):
// count_ge over it as rows of flushRowLen floats, which leaves the L2 full of
// clean lines. Writing the buffer (the default) leaves dirty ones, and the
// timed kernel's misses then write them back to HBM beside its own reads.
type flushReader struct {
	k                         *runtime.Kernel
	args                      *ptx.Args
	rows                      int
	lengths, thresholds, cnts *runtime.Buffer
}

// newFlushReader loads count_ge for the device's target and sets it up
// over buf, whose size must be a whole number of rows.
func newFlushReader(dev *runtime.Device, base gen.Config, buf *runtime.Buffer) (*flushReader, error) {
	row := 4 * flushRowLen
	if buf.Bytes()%row != 0 {
		return nil, fmt.Errorf("a flush buffer of %d bytes is no whole number of %d-byte rows", buf.Bytes(), row)
	}
	cfg := gen.DefaultConfig()
	cfg.Target, cfg.BlockSize = base.Target, base.BlockSize
	k, err := topk.Kernel(dev, "count_ge", cfg)
	if err != nil {
		return nil, err
	}
	f := &flushReader{k: k, rows: buf.Bytes() / row}
	for _, b := range []**runtime.Buffer{&f.lengths, &f.thresholds, &f.cnts} {
		if *b, err = dev.Alloc(4 * f.rows); err != nil {
			f.free()
			return nil, err
		}
	}
	// Every row whole, counted against 0.0 (its bits are 0); the buffer
	// zeroed once, so that the reads see defined values.
	if err := errors.Join(f.lengths.Memset32(nil, flushRowLen), f.thresholds.Memset32(nil, 0), buf.Memset32(nil, 0)); err != nil {
		f.free()
		return nil, err
	}
	f.args = k.Args().Set("scores", buf.Ptr()).Set("row_stride", uint64(flushRowLen)).
		Set("lengths", f.lengths.Ptr()).Set("thresholds", f.thresholds.Ptr()).Set("counts", f.cnts.Ptr())
	return f, nil
}

// launch queues the flush on s.
func (f *flushReader) launch(s *runtime.Stream) error { return f.k.Launch(s, f.rows, f.args) }

// free releases the reader's buffers.
func (f *flushReader) free() {
	for _, b := range []*runtime.Buffer{f.lengths, f.thresholds, f.cnts} {
		if b != nil {
			b.Free()
		}
	}
}
