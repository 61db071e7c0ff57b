package topk

// step is what the selector knows of a step when it picks the kernel.
type step struct {
	rows      int  // rows in the batch
	stride    int  // elements per row at most
	predicted bool // the layer's previous indices are there to guide it
}

// The kernels a Selector runs.
const (
	kernelGVR      = "gvr_topk"      // GVR, guided by the layer's previous step
	kernelFallback = "topk_fallback" // GVR guessing from a row sample: no prediction yet
)

// choose picks the kernel for a step. It is a pure function of the step,
// so the choice is unit-tested without a GPU; the grid follows from the
// kernel's contract (a CTA, or a cluster, per row). Today one rule: a
// layer's first step has no prediction and runs the fallback (measured
// 1.02-1.12x slower than gvr_topk with a prediction, docs/perf-notes.md).
// Kernels that split a row over a cluster will be chosen here by row
// length, rows and device.
func choose(s step) string {
	if s.predicted {
		return kernelGVR
	}
	return kernelFallback
}
