//go:build !cuda

package runtime

import (
	"errors"
	"testing"

	"github.com/gvr-go/gvr/gen"
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
	if _, err := d.Kernel("gvr_topk", gen.DefaultConfig()); err != ErrNoCUDA {
		t.Errorf("Kernel: %v", err)
	}
	if err := Upload(&Buffer{}, []float32{1}); !errors.Is(err, ErrNoCUDA) {
		t.Errorf("Upload: %v", err)
	}
	if _, err := (&Stream{}).Capture(func() error { return nil }); err != ErrNoCUDA {
		t.Errorf("Capture: %v", err)
	}
	// The typed launchers (zlaunch.go) build without the tag, and refuse.
	k := &Kernel{Name: "gvr_topk", Params: launcherParams["gvr_topk"], NumParams: 8}
	if _, err := NewGVRTopK(k); err != ErrNoCUDA {
		t.Errorf("NewGVRTopK: %v", err)
	}
	if _, err := NewTopKFallback(nil); err != ErrNoCUDA {
		t.Errorf("NewTopKFallback: %v", err)
	}
}
