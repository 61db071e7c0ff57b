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
	// Units: rows shared by 3 clusters of 16 (cooperative groups of 48
	// CTAs), or a cluster each.
	coop := &Kernel{Contract: ptx.Launch{Cluster: 16, Cooperative: 48}, MaxActiveClusters: 7}
	for units, want := range map[int]bool{1: true, 2: true, 3: false} {
		if got := coop.ResidentUnits(units); got != want {
			t.Errorf("%d groups of 3 clusters of 16, 7 resident: ResidentUnits %v, want %v", units, got, want)
		}
	}
	if !k.ResidentUnits(7) || k.ResidentUnits(8) {
		t.Errorf("clusters of 16, 7 resident: ResidentUnits(7) %v, ResidentUnits(8) %v", k.ResidentUnits(7), k.ResidentUnits(8))
	}
}

// sameContract refuses a contract that departs from what the text
// declares, the cooperative group included (the printer writes it as a
// comment the parser reads back).
func TestSameContract(t *testing.T) {
	m := ptx.NewModule(ptx.SM90)
	e := m.NewEntry("k")
	e.ReqNTID = ptx.Dim3{128}
	e.ReqNCTAPerCluster = ptx.Dim3{4}
	e.Cooperative = 8
	e.Param("x", ptx.U64).PtrAlign = 16
	e.Ret()
	if err := m.Build(); err != nil {
		t.Fatal(err)
	}
	pm, err := ptx.Parse(ptx.Text(m))
	if err != nil {
		t.Fatal(err)
	}
	declared, err := ptx.LaunchOf(pm, "k", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameContract(declared, declared); err != nil {
		t.Errorf("the declared contract: %v", err)
	}
	for _, tc := range []struct {
		change func(l *ptx.Launch)
		want   string
	}{
		{func(l *ptx.Launch) { l.Cooperative = 0 }, "cooperative groups of 0 CTAs; the PTX declares 8"},
		{func(l *ptx.Launch) { l.Cooperative = 16 }, "cooperative groups of 16 CTAs; the PTX declares 8"},
		{func(l *ptx.Launch) { l.Cluster = 2 }, "clusters of 2 CTAs; the PTX declares 4"},
		{func(l *ptx.Launch) { l.Block = 64 }, "a block of 64 threads; the PTX fixes 128"},
		{func(l *ptx.Launch) { l.WaitsFirst = true }, "waits first"},
		{func(l *ptx.Launch) { l.Params = nil }, "0 parameters, the PTX declares 1"},
	} {
		l := declared
		l.Params = append([]ptx.Param(nil), declared.Params...)
		tc.change(&l)
		if err := sameContract(declared, l); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
}
