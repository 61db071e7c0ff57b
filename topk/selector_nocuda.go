//go:build !cuda

package topk

import (
	"fmt"

	"github.com/gvr-go/gvr/runtime"
)

// Selector is the GPU Top-K selector. This build has no CUDA support (build
// with -tags cuda): NewSelector returns runtime.ErrNoCUDA.
type Selector struct{}

// NewSelector returns runtime.ErrNoCUDA in a build without the cuda tag.
func NewSelector(cfg Config) (*Selector, error) {
	return nil, fmt.Errorf("topk: NewSelector: %w", runtime.ErrNoCUDA)
}

func (s *Selector) Config() Config                           { return Config{} }
func (s *Selector) Kernels() (gvr, fallback *runtime.Kernel) { return nil, nil }
func (s *Selector) Select(layer int, b Batch, st *runtime.Stream) (Result, error) {
	return Result{}, runtime.ErrNoCUDA
}
func (s *Selector) SelectHost(layer int, scores []float32, stride int, lengths []int32) (idx []int32, vals []float32, err error) {
	return nil, nil, runtime.ErrNoCUDA
}
func (s *Selector) SelectHost16(layer int, scores []uint16, stride int, lengths []int32) (idx []int32, vals []float32, err error) {
	return nil, nil, runtime.ErrNoCUDA
}
func (s *Selector) Reset() error { return runtime.ErrNoCUDA }
func (s *Selector) Close() error { return runtime.ErrNoCUDA }
