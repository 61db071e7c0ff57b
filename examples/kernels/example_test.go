package kernels_test

import (
	"fmt"
	"log"
	"testing"

	"github.com/gvr-go/gvr/examples/kernels"
	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/runtime"
)

// Load the generated kernel and select the Top-512 of 4 rows of 100000
// scores, with a previous step's indices as the prediction. (It needs a
// GPU and the build tag cuda; without them Open returns ErrNoCUDA.)
func Example() {
	d, err := runtime.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	k, err := d.Load(kernels.GVRTopKPTX, kernels.GVRTopK)
	if err != nil {
		log.Fatal(err)
	}
	const rows, n, K = 4, 100000, 512
	scores, _ := d.Alloc(4 * rows * n) // float32 [rows, n], filled by the model
	lengths, _ := d.Alloc(4 * rows)    // int32 [rows]
	pred, _ := d.Alloc(4 * rows * K)   // int32 [rows, K]: the previous step's indices
	out, _ := d.Alloc(4 * rows * K)    // int32 [rows, K]: this step's
	args := k.Args().Set("scores", scores.Ptr()).Set("row_stride", n).Set("lengths", lengths.Ptr()).
		Set("pred", pred.Ptr()).Set("pred_stride", K).Set("pred_count", K).
		Set("out_idx", out.Ptr()).Set("out_vals", 0).Set("out_count", 0).                         // 0: no values, no counts
		Set("page_table", 0).Set("page_table_stride", 0).Set("page_size", 0).Set("out_pages", 0). // no page-table output
		Set("next_n", 0).Set("row_starts", 0).Set("abs_idx", 0)                                   // one row per sequence, no windows
	if err := k.LaunchUnits(nil, rows, args, false); err != nil { // a row a cluster
		log.Fatal(err)
	}
	idx := make([]int32, rows*K)
	if err := runtime.Download(idx, out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(idx[:4])
}

// The committed files are what ptxgen writes for the //go:generate line's
// configuration, and the contract is the one the text declares.
func TestGenerated(t *testing.T) {
	cfg := gen.Config{K: 512, MaxCandidates: 1536, BlockSize: 512, Bins: 2048, Target: ptx.SM90}
	k, err := gen.Generate("gvr_topk", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if k.PTX() != kernels.GVRTopKPTX {
		t.Error("gvr_topk.ptx is not what gen writes now: run go generate ./examples/...")
	}
	if got, want := kernels.GVRTopK.String(), k.Launch.String(); got != want {
		t.Errorf("the contract in gvr_topk.go is\n%s\ngen's is\n%s\nrun go generate ./examples/...", got, want)
	}
	m, err := ptx.Parse(kernels.GVRTopKPTX)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ptx.LaunchOf(m, kernels.GVRTopK.Entry, kernels.GVRTopK.SharedBytes)
	if err != nil || l.String() != kernels.GVRTopK.String() {
		t.Errorf("the text declares %v (%v); the Go file says %v", l, err, kernels.GVRTopK)
	}
}
