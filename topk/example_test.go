//go:build cuda

package topk_test

import (
	"fmt"
	"log"

	"github.com/gvr-go/gvr/runtime"
	"github.com/gvr-go/gvr/topk"
)

// The README's example (compiled with -tags cuda, not run: it needs a GPU).
func Example() {
	const layers, rows, n = 4, 8, 65536

	// One selector for the model: K = 2048, up to 8 rows a step, one feedback
	// buffer per layer. Its kernels are generated for the GPU and
	// JIT-compiled on first use in the process.
	sel, err := topk.NewSelector(topk.Config{K: 2048, MaxRows: rows, Layers: layers})
	if err != nil {
		log.Fatal(err) // built without -tags cuda: runtime.ErrNoCUDA
	}
	defer sel.Close()

	// The simplest call: rows of n scores in a host slice.
	scores := topk.Synthetic{N: n, Seed: 1}.Rows(rows)
	idx, _, err := sel.SelectHost(0, scores, n, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("row 0:", idx[:8], "...") // 2048 indices per row, a set in no order

	// A decode loop with the scores on the GPU: step t's indices stay on the
	// device as layer L's prediction for step t+1.
	dev, err := runtime.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	buf, err := dev.Alloc(4 * rows * n) // float32 [rows, n]: where your indexer writes
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()
	lengths := make([]int32, rows) // kv length of each row, at most n
	for step := 0; step < 16; step++ {
		for r := range lengths {
			lengths[r] = int32(n/2 + step)
		}
		for layer := 0; layer < layers; layer++ {
			if err := runtime.Upload(buf, topk.Synthetic{N: n, Seed: uint64(step)}.Rows(rows)); err != nil {
				log.Fatal(err)
			}
			res, err := sel.Select(layer, topk.Batch{Scores: buf, Stride: n, Rows: rows, Lengths: lengths}, nil)
			if err != nil {
				log.Fatal(err)
			}
			// res.Indices is int32 [MaxRows, K] on the device, ready for the
			// sparse attention kernel; or read it:
			if step == 15 && layer == 0 {
				top, err := res.ReadIndices()
				if err != nil {
					log.Fatal(err)
				}
				fmt.Println("predicted:", res.Predicted, "row 0:", top[:8], "...")
			}
		}
	}
	if err := sel.Reset(); err != nil { // a new sequence: the next step runs the fallback kernel
		log.Fatal(err)
	}
}
