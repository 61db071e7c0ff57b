// Package gen writes gvr's kernels: it turns a Config into a built and
// verified *ptx.Module. It knows Top-K; package ptx below it does not.
//
// Config holds everything baked into a kernel's PTX: K, the capacity of the
// shared-memory candidate buffer (MaxCandidates), the threads per CTA
// (BlockSize), the histogram bins of the refine phase (Bins), the target
// architecture, the 16-byte loads each thread keeps in flight (Unroll),
// whether to emit instrumentation, the element type of the score rows
// (Scores: float32, float16 or bfloat16, widened to float32 exactly on
// load, scores.go) and, for the cluster kernels, the cluster size, the
// longest row a cluster holds (MaxN) and how its rounds signal
// (MbarrierRounds). DefaultConfig is the GVR paper's: K =
// 2048, MAX_CANDIDATES = 6144, 512 threads, 2048 bins, sm_100. Validate
// reports every reason a configuration cannot be generated, all at once.
//
// The registry maps kernel names to generators: Names lists them, Describe
// gives each a one-line description, and Generate(name, cfg) validates cfg,
// builds the kernel and returns a Kernel: its module, its PTX text, and how
// to launch it (threads per CTA, bytes of dynamic shared memory). It holds
// the Top-K kernels and the building-block kernels that exist to test one
// block each; cmd/ptxgen prints any of them and golden/ keeps their text.
//
// Kernels run one CTA per row, or one thread-block cluster per row (the
// cluster kernels, sm_90+, cluster.go and cluster_topk.go; a row longer than the cluster's
// shared memory holds is exact too, the part of each slice that does not
// fit read from global memory, prefetched into L2 behind the slice's copy,
// and with Config.KeepOver the vectors of it that hold high elements
// marked by Phase 2's first pass for the later walks: overflow.go), and are written
// from building blocks: Go functions that emit code into the CTA under
// construction (cta.go), such as
// warp and block reductions, a block-wide exclusive scan, a walk over a row
// with 16-byte vector loads that copes with unaligned rows and any length,
// a count of elements at or above a threshold, the float-to-key mapping of
// the Top-K order, and an exact radix select with a shared-memory
// histogram. Each block is short and says why it is correct; a kernel reads
// like the paper's phases. The "combine across the CTA" steps are kept
// separate, and the cluster Top-K kernels run the same phases over their
// slices with those steps combining across the cluster instead; where
// several clusters share a row (Config.Groups, groups.go), across every
// CTA of them, through a workspace in global memory.
//
// The Top-K kernels (gvr.go, and a file per phase: phase1_stats.go,
// phase2_search.go, phase3_collect.go, phase4_refine.go) follow the GVR
// paper's four phases, with changes that measurements on an H200 paid for
// (docs/perf-notes.md):
//
//   - Phase 1 (pre-indexed statistics) reduces the predicted scores'
//     minimum and count on order-preserving keys (redux.sync where the
//     target has it); in a cluster each CTA gathers 1/C of them and the
//     partial results are combined across the cluster. The paper starts
//     from the mean; a good prediction's mean lies above the K-th value, so
//     the first pass counts at the minimum. A prediction can be weak (a
//     decode's early layers overlap their previous step by 1.5%), so the
//     other point the first pass counts is a row sample's estimate, as in
//     the fallback, its loads overlapping the prediction's, aimed nearer K
//     where the sample is dense: two rounds of four points counted over
//     the sample. The fallback, with no predicted minimum to count, takes
//     its points from the sample's histogram of 64 bins instead, each
//     interpolated between the two bin edges that bracket its count.
//   - Phase 2 (threshold search) counts two thresholds in its first pass and
//     keeps the one in [K, MaxCandidates] with the fewest candidates; later
//     passes follow a log-count secant (tail counts fall exponentially, which
//     a linear secant follows badly), damped while one anchor is an
//     estimate, with key-space bisection as the fallback.
//   - Phase 3 (collection) is the paper's ballot-free pass: each thread's
//     count from Phase 2 gives, by its prefix sum over the CTA (taken in
//     Phase 2 with the counts' sums), where its candidates go. With
//     Config.SureSet the first pass also counts a threshold the sample puts
//     at about 0.85K elements; where fewer than K are at or above it, they
//     are all in the Top-K, and Phase 3 puts them after the other
//     candidates (by the prefixes of both counts), whence Phase 4 writes
//     them to the first output slots as they are and selects among the
//     others. In a cluster each CTA writes its own sure ones to those
//     slots, with their page-table output, and hands the leader only the
//     others (not with sorted output). Where clusters share the row, a CTA
//     of a part of at most 16K elements walks for its candidates at the
//     first pass's first point while the pass's round through global
//     memory waits, and Phase 3 walks only where the verdict is another
//     threshold (earlyCollect).
//   - Phase 4 (refine) is an exact radix select in shared memory on the
//     candidates' key offsets within the span of their keys (Bins-bin
//     histogram), guessed without a walk from the threshold and the
//     sample's largest value (the first pass finds a candidate outside it,
//     and the select then takes the exact span and starts over; 16-bit
//     scores walk): after the first digit the K-th candidate's bin usually
//     holds at most 32 (128 with 16-bit scores, whose ties make fuller
//     bins), which are ranked against each other and written after the
//     candidates above that bin (those take the first slots in walk order,
//     from one block scan), so the K-th element itself is never needed
//     (the first histogram is cleared before Phase 1, off its path);
//     otherwise the other digits
//     follow and, if only some of the elements equal to the K-th key fit, a
//     select on their inverted indices, so ties go to the lowest indices.
//
// A row of at most 2K elements (K < n <= Config.HeldMax()) skips Phases 1-3
// in one CTA per row (held.go: heldSelect, PathHeld): it is loaded into the
// candidate buffer once, and Phase 4's select runs over the keys at or above
// a bound on the K-th one (the least of every thread's ceil(K/B)-th largest
// key: at least K keys reach it; the keys are stored beside the values once),
// faster than the four phases up to 4K at K = 2048 on an H100, slower from
// 5K, where the select's walks over all of the row cost more than Phases 1-3
// save (perf notes 58-61, 144). Where K > Bins no row is held: the select's
// K results no longer fit its staging buffer (perf notes 147).
//
// Without a prediction (topk_fallback, or gvr_topk with an empty or garbage
// one) the first guess comes from a strided row sample held in registers.
// When no threshold can bracket the K-th key (ties wider than
// MaxCandidates, NaN mass), the exact path is a radix select over the row in
// global memory, as in topk_radix (which alone also finishes a small K-th
// bin in one warp there: measured faster in topk_radix, slower on the GVR
// kernels' exact path).
// Its passes are one PTX loop over the digits, so the long row walk is
// emitted once rather than once per digit; Phase 4's passes over the short
// candidate walk stay inlined.
// The output is written in walk order from block prefix sums, or in rank
// order with Sorted: bit-identical run to run. The serving contracts are
// parameters of every Top-K kernel: lengths (null for a dense batch, every
// row row_stride long), next_n (speculative-decoding rows),
// row_starts and abs_idx (windows), out_count, and the page-table output (pages.go);
// 16-bit scores are a Config.Scores of every Top-K kernel. With
// Config.DependentLaunch a kernel starts with griddepcontrol.wait, and may
// be launched programmatically dependent on the kernel before it
// (runtime.Kernel.LaunchDependent); a GVR kernel issues
// griddepcontrol.launch_dependents at Phase 4's start.
//
// Every kernel parameter is 64 bits wide (the kernel ABI), shared memory is
// the module's one dynamic (.extern) array, and the generated PTX carries
// the kernel, its config and its launch shape in its header comment.
package gen
