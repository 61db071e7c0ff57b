// Package topk is gvr's public Top-K API: the CPU reference that defines the
// Top-K contract, checks of a kernel's output against it, the GPU selector,
// and workloads to run it on.
//
// The contract (DESIGN.md): for a row x[0..n) of float32 and K >= 1, order
// the elements by Key descending, then index ascending, and return the first
// min(K, n) positions of that order as int32 indices (and the float32 values
// when asked); slots past n hold index -1 (and value -Inf, PadValue). Key is
// torch.topk's order-preserving uint32 of the float bits, with every NaN
// mapped to the largest key, so NaN ranks above +Inf, +0 above -0, and -Inf
// lowest; only equal keys tie, and ties go to the lowest index. The result is
// a set unless the caller asks for rank order, and it is exact and
// deterministic for every input. Rows of float16 or bfloat16 scores (DType)
// follow it over their exact float32 values (DType.Widen).
//
// Reference computes it on the CPU; Compare, SameSet and Check test a
// kernel's output against it, as a set unless the output is sorted.
//
// Selector runs the GVR kernels on a GPU through package runtime, keeping
// each layer's Top-K on the device as the next step's prediction, and picks
// per step one CTA or a thread-block cluster per row from a table measured
// on the GPU model (Tuning, Choice), and whether a predicted step runs the
// GVR kernel or its fallback, where the table measured the fallback faster
// (Tuning.Fallback; Config.AlwaysPredict overrides it). A Batch can carry the serving engines'
// contracts: NextN rows per sequence, windows, the fused page-table output;
// Config.Counts adds the valid outputs per row, Config.Scores takes 16-bit
// score rows. It needs the cuda build
// tag; without it NewSelector returns runtime.ErrNoCUDA.
// Synthetic and Decode generate the GVR paper's synthetic indexer scores and
// decode trajectories; NewTrajectory generates decode trajectories whose
// score distributions and step-to-step Top-K overlap follow the paper's
// measurements per layer (Profile), and measures that overlap (Overlap).
// LoadTrace and Trace.Save read and write decode steps of scores, captured or
// synthetic (DecodeTrace), in NumPy .npy files, so runs can be replayed.
package topk
