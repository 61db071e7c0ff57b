//go:build !cuda

package runtime

import (
	"errors"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

func TestNoCUDA(t *testing.T) {
	if _, err := DeviceCount(); err != ErrNoCUDA {
		t.Errorf("DeviceCount: %v", err)
	}
	d, err := Open(0)
	if err != ErrNoCUDA {
		t.Fatalf("Open: %v", err)
	}
	if err.Error() != "gvr/runtime: built without CUDA support (-tags cuda)" {
		t.Errorf("ErrNoCUDA text: %q", err)
	}
	if _, err := d.Load(".version 7.8\n", ptx.Launch{}); err != ErrNoCUDA {
		t.Errorf("Load: %v", err)
	}
	if err := Upload(&Buffer{}, []float32{1}); !errors.Is(err, ErrNoCUDA) {
		t.Errorf("Upload: %v", err)
	}
	if _, err := (&Stream{}).Capture(func() error { return nil }); err != ErrNoCUDA {
		t.Errorf("Capture: %v", err)
	}
}
