package runtime

import (
	"errors"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

func TestTargetFor(t *testing.T) {
	for _, tc := range []struct {
		major, minor int
		want         string
		note         bool
	}{
		{8, 0, "sm_80", false},
		{8, 6, "sm_86", false},
		{8, 7, "sm_86", true}, // Orin: no sm_87 target known
		{8, 9, "sm_89", false},
		{9, 0, "sm_90", false}, // H100, H200: plain sm_90, not sm_90a
		{10, 0, "sm_100", false},
		{10, 3, "sm_100", true},
		{12, 0, "sm_120", false},
		{12, 1, "sm_120", true},
		{15, 0, "sm_120", true},
	} {
		got, note, err := TargetFor(tc.major, tc.minor)
		if err != nil || got.Name != tc.want || (note != "") != tc.note {
			t.Errorf("TargetFor(%d, %d) = %s, %q, %v; want %s (note: %v)", tc.major, tc.minor, got.Name, note, err, tc.want, tc.note)
		}
	}
	if _, _, err := TargetFor(7, 5); err == nil || !strings.Contains(err.Error(), "7.5 is not supported") {
		t.Errorf("TargetFor(7, 5): %v", err)
	}
}

func TestErrors(t *testing.T) {
	drv := &DriverError{Op: "cuModuleLoadDataEx", Code: 218, Name: "CUDA_ERROR_INVALID_PTX", Msg: "a PTX JIT compilation failed"}
	if got, want := drv.Error(), "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (218): a PTX JIT compilation failed"; got != want {
		t.Errorf("DriverError: %q, want %q", got, want)
	}
	j := &JITError{Kernel: "gvr_topk", Target: "sm_90", Device: "device 0 (H100)", Err: drv,
		Log: "ptxas application ptx input, line 7; error   : Unknown symbol 'x'\n"}
	msg := j.Error()
	for _, want := range []string{"gvr_topk", "sm_90", "device 0 (H100)", "CUDA_ERROR_INVALID_PTX", "Unknown symbol 'x'"} {
		if !strings.Contains(msg, want) {
			t.Errorf("JITError message lacks %q:\n%s", want, msg)
		}
	}
	var d *DriverError
	if !errors.As(j, &d) || d.Code != 218 {
		t.Error("JITError does not unwrap to its DriverError")
	}
}

// TestResident: a cooperative grid is resident when it needs at most
// MaxActiveClusters of the kernel's clusters.
func TestResident(t *testing.T) {
	k := &Kernel{Contract: ptx.Launch{Cluster: 16}, MaxActiveClusters: 7}
	for grid, want := range map[int]bool{16: true, 7 * 16: true, 8 * 16: false} {
		if got := k.Resident(grid); got != want {
			t.Errorf("%d CTAs in clusters of 16, 7 resident: Resident %v, want %v", grid, got, want)
		}
	}
}
