//go:build !cuda

package topk

import (
	"errors"
	"testing"

	"github.com/gvr-go/gvr/runtime"
)

func TestNoCUDA(t *testing.T) {
	s, err := NewSelector(Config{MaxRows: 1})
	if s != nil || !errors.Is(err, runtime.ErrNoCUDA) {
		t.Fatalf("NewSelector = %v, %v; want nil, ErrNoCUDA", s, err)
	}
	if err.Error() != "topk: NewSelector: gvr/runtime: built without CUDA support (-tags cuda)" {
		t.Errorf("error text: %q", err)
	}
	if _, err := s.Select(0, Batch{}, nil); !errors.Is(err, runtime.ErrNoCUDA) {
		t.Errorf("Select: %v", err)
	}
	if _, _, err := s.SelectHost(0, []float32{1}, 1, nil); !errors.Is(err, runtime.ErrNoCUDA) {
		t.Errorf("SelectHost: %v", err)
	}
	if _, err := (Result{Rows: 1, K: 1}).ReadIndices(); !errors.Is(err, runtime.ErrNoCUDA) {
		t.Errorf("ReadIndices: %v", err)
	}
}
