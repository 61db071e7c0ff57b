package main

import (
	"fmt"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/internal/fuzzcase"
	"github.com/gvr-go/gvr/ptx/emu"
	"github.com/gvr-go/gvr/topk"
)

// -row: where a Top-K kernel spends its issue slots. issued runs k in the
// interpreter on one row of n of the paper's synthetic scores
// (topk.Synthetic, seed 1), with their static prediction where k takes
// one, and returns the warp instructions issued at each of its entry's
// instructions, summed over the row's CTAs (emu.Profile), those of every
// cluster that shares the row included. These are PTX
// instructions: ptxas makes about as many machine instructions of them
// (it folds some, address arithmetic into loads, and expands others:
// 1.07-1.14 times as many, counted statically in two Top-K kernels with
// ptxas 12.4), and an SM issues four a cycle, its latencies on top.
func issued(k *gen.Kernel, n int) ([]int64, error) {
	c := k.Launch
	if c.Param("scores") == nil || c.Param("out_idx") == nil {
		return nil, fmt.Errorf("-row runs a Top-K kernel on a row; %s is not one", k.Name)
	}
	if n < 1 {
		return nil, fmt.Errorf("-row %d: a row has at least one score", n)
	}
	p, err := emu.LoadModule(k.Module)
	if err != nil {
		return nil, err
	}
	syn := topk.Synthetic{N: n, K: k.Config.K, Seed: 1}
	pred := syn.Prediction()
	b := fuzzcase.Batch{Scores: syn.Rows(1), Stride: n, Lengths: []int32{int32(n)},
		Pred: pred, PredStride: max(1, len(pred)), PredCount: len(pred), K: k.Config.K}
	mem := emu.NewMemory()
	scores := mem.AllocF32s(b.Scores)
	if s := k.Config.Scores; s != gen.Float32 {
		scores = mem.AllocU16s(fuzzcase.Narrow(s, b.Scores))
	}
	args := b.Set(c.Args(), scores, mem.AllocI32s(b.Lengths), mem.AllocI32s(b.Pred),
		mem.Alloc(4*b.K, 0), mem.Alloc(4*b.K, 0))
	if c.Param("stats") != nil {
		args.Set("stats", mem.Alloc(gen.StatsBytes, 0))
	}
	l := emu.Launch{Grid: [3]int{max(1, c.Cluster)}, Args: args}
	if g := c.Cooperative; g > 0 {
		// A row shared by clusters (-groups), which wait for each other
		// through its workspace: all of them at once.
		args.Set("workspace", mem.Alloc(gen.GroupWorkspaceBytes(k.Config), 128))
		l.Grid[0], l.CoResident = g, true
	}
	var prof emu.Profile
	l.Profile = &prof
	if _, err := p.Run(mem, l); err != nil {
		return nil, fmt.Errorf("-row %d: %w", n, err)
	}
	return prof.Issued, nil
}
