//go:build cuda

package topk_test

import (
	"errors"
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

// The serving contracts of the README, one step each (compiled with -tags
// cuda, not run).
func Example_serving() {
	const seqs, nextN, stride, pageSize = 4, 2, 65536, 64
	dev, err := runtime.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	// bfloat16 scores, counts of valid outputs, up to seqs*nextN rows.
	sel, err := topk.NewSelector(topk.Config{MaxRows: seqs * nextN, Scores: topk.BFloat16, Counts: true, Device: dev})
	if err != nil {
		log.Fatal(err)
	}
	defer sel.Close()
	rows := seqs * nextN
	scores, _ := dev.Alloc(2 * rows * stride) // bf16 [rows, stride], from the indexer
	seqLens, _ := dev.Alloc(4 * seqs)         // int32 [seqs]: the sequences' lengths
	table, _ := dev.Alloc(4 * seqs * stride / pageSize)
	pages, _ := dev.Alloc(4 * rows * 2048) // int32 [rows, K]: the attention kernel's gather slots
	for _, b := range []*runtime.Buffer{scores, seqLens, table, pages} {
		defer b.Free()
	}
	host := topk.BFloat16.Narrow(topk.Synthetic{N: stride, Seed: 1}.Rows(rows))
	blocks := make([]int32, seqs*stride/pageSize) // each sequence's KV-cache blocks
	for i := range blocks {
		blocks[i] = int32(len(blocks) - 1 - i)
	}
	if err := errors.Join(runtime.Upload(scores, host), runtime.Upload(seqLens, []int32{65536, 40000, 9000, 3000}),
		runtime.Upload(table, blocks)); err != nil {
		log.Fatal(err)
	}

	// Decode with MTP: NextN rows per sequence, row r's length computed on
	// the device from seq_lens; the output also mapped through the page
	// table (block size 64), the raw indices kept as the layer's feedback.
	res, err := sel.Select(0, topk.Batch{Scores: scores, Stride: stride, Rows: rows, DeviceLengths: seqLens, NextN: nextN,
		Pages: pages, PageTable: table, PageTableStride: stride / pageSize, PageSize: pageSize}, nil)
	if err != nil {
		log.Fatal(err)
	}
	counts, err := res.ReadCounts() // min(K, n) per row
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Kernel, counts)

	// Prefill: row r selects among columns [starts[r], lengths[r]) of its
	// row, indices counted from the row's start (AbsoluteIndices).
	starts := []int32{0, 100, 5000, 0, 0, 0, 0, 0}
	lengths := []int32{4096, 8192, 65536, 2048, 1, 0, 30000, 65536}
	if _, err := sel.Select(1, topk.Batch{Scores: scores, Stride: stride, Rows: rows, Lengths: lengths,
		RowStarts: starts, AbsoluteIndices: true}, nil); err != nil {
		log.Fatal(err)
	}
}
