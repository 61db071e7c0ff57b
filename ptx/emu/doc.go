// Package emu is a CPU interpreter for the PTX that package ptx prints, so
// that every kernel's behaviour is tested without a GPU, exactly as a GPU
// would run it, and more strictly.
//
// It runs what the driver would receive: Load parses the printed text
// (ptx.Parse) and compiles each kernel; LoadModule(m) is Load(ptx.Text(m)),
// so a printer bug cannot hide.
//
// A launch takes the kernel's launch contract (a ptx.Launch: block,
// cluster, dynamic shared memory, named parameters), as its generator
// returns it (gen.Kernel.Launch), and the arguments set by name:
//
//	p, err := emu.LoadModule(k.Module)
//	mem := emu.NewMemory()
//	x := mem.AllocF32s(scores)
//	out := mem.Alloc(4*rows, 0)
//	args := k.Launch.Args().Set("scores", x).Set("row_stride", stride).
//		Set("lengths", lengths).Set("thresholds", thresholds).Set("counts", out)
//	st, err := p.Run(mem, emu.Launch{Grid: [3]int{rows}, Args: args, RaceCheck: true})
//	counts, _ := mem.ReadU32s(out, rows)
//
// For text that comes without a contract (a test's hand-written kernel),
// p.Contract(entry, block, sharedBytes) is the one the text declares.
//
// A kernel's fault is a *Fault, never a panic; a bad launch (arguments
// unset, unknown or misaligned, a contract that is not the loaded entry's
// or a block against its .reqntid, too much shared memory) is a plain
// error, before anything runs. A Program may run concurrently on different
// Memories.
//
// # Execution model
//
// Each instruction is compiled once into a Go closure that executes it for
// a whole warp: registers are per-warp arrays of 32 lanes ([32]uint64 per
// value register, one bit per lane for predicates), so the cost of dispatch
// is paid once per warp instruction, not per thread. The grid's clusters
// run one after another, in grid order (without clusters, a cluster is one
// CTA). A cluster's CTAs run together. Without interleaving (one CTA per
// cluster and no mbarriers or bulk copies) the warps run in order, each
// until it finishes or waits at a barrier: the fastest schedule. With
// clusters of several CTAs, or mbarriers or bulk copies, each round visits
// every warp of the cluster in a random order and gives it a turn of 1 to
// 32 warp instructions; both come from a generator seeded by Launch.Seed
// (0: a fixed default) and the cluster's position, so different seeds
// interleave the CTAs differently. Everything is deterministic: the same
// input and seed give the same results, faults and race reports on every
// run.
//
// A launch with Launch.CoResident runs every cluster of the grid at once,
// as a GPU does when the grid fits: each round visits every warp of every
// cluster in a random order, with turns of 1 to 32 warp instructions drawn
// from the seed, so a warp that spins on a word of global memory gives
// way to the cluster that will write it. Kernels whose clusters wait on
// each other need it; run one after another, they end in a FaultSteps.
// Each cluster keeps its cluster barrier, mbarriers, bulk copies (which
// land as they do alone: after their delay in the cluster's own warp
// instructions, or when none of the cluster's warps can run) and race
// detection. Global memory is sequentially consistent here (a store is
// seen by every later load, fences do nothing): a spin that a GPU's
// weaker model breaks (a plain ld.global polled without a fence) may
// still pass.
//
// Divergence: a warp's lanes are grouped by program counter, and the group
// with the least pc runs next (lanes waiting at a collective or a barrier
// aside). Lanes that branch forward wait until the lanes behind them catch
// up, so structured code (if/else, loops with per-lane trip counts, breaks,
// early exits) reconverges at its join points, where the groups merge.
//
// # Barriers and warp collectives
//
// bar.sync and barrier.sync, with or without a thread count, are strict:
// every thread of a warp must execute the barrier together (no guard that
// splits the warp, no lanes elsewhere), every thread of the CTA (or count
// threads) must reach the same barrier instruction, and a barrier reached
// after some threads exited is a fault, although hardware counts exited
// threads as arrived: gvr's kernels must not rely on it.
//
// shfl.sync, vote.sync, redux.sync and bar.warp.sync: every lane executing
// the instruction names its member mask and must belong to it; lanes of a
// mask must agree on it (one instruction may serve several disjoint masks);
// the lanes wait until all lanes of their mask execute the same instruction.
// A mask lane that exited, skips the instruction by its guard, or is blocked
// elsewhere with no way to arrive is a fault. shfl follows the PTX
// pseudocode (clamp in c[4:0], segment mask in c[12:8], an out-of-range
// source reads the lane's own value); reading a lane outside the member
// mask, undefined in PTX, gives 0xDEADBEEF. activemask is the set of lanes
// executing together (the current group).
//
// # Memory
//
// Global memory is Memory: allocations at nonzero addresses with unmapped
// gaps, so any access outside an allocation faults with the address and
// which allocation it missed. Global addresses are their own generic
// addresses; cvta.to.global is the identity and ld.global.nc reads like
// ld.global. Shared memory is per CTA: the static .shared variables a kernel
// uses, in declaration order and alignment, then the .extern region of
// the contract's SharedBytes. A CTA's shared window starts at 0x40000 in
// the .shared space (nonzero, so an offset mistaken for an address faults);
// generic shared addresses are 0x7000_0000_0000 plus that. A CTA's shared
// memory starts as garbage (every byte 0xA5), as on a GPU, where it holds
// what the SM's last CTA left: a kernel that reads a word it never wrote
// goes wrong here too. So do a CTA's registers (0xA5 in every byte) and
// predicates (true in the lanes of mask 0xA5A5A5A5), undefined in PTX
// until written. Every access must
// be naturally aligned to its whole size (16 bytes for .v4.f32). Parameters
// are packed by the .param list at natural alignment, from the launch's
// Args (the low bytes for narrower types, float32 as its bits).
// Atomics (atom, red: add, min, max, inc, dec, and, or, xor, exch, cas) are
// applied lane by lane in lane order; f32 atomic adds flush subnormals in
// global memory and keep them in shared memory, as CUDA documents.
//
// # Arithmetic
//
// Integers wrap; add.sat.s32 saturates; shifts by the width or more give 0
// (shl, shr.u) or the sign (shr.s); bfind gives 0xffffffff for no bit.
// Division by zero, undefined in PTX, gives all ones (the quotient) and the
// dividend (the remainder). Floats follow IEEE with PTX's rules: every
// rounding modifier (.rn .rz .rm .rp; the directed ones computed exactly
// with math/big), subnormals unless .ftz, a fused single rounding for
// fma/mad, NaN results canonical (0x7fffffff for f32, as CUDA documents;
// the f64 pattern 0x7fffffffffffffff is unconfirmed), abs and neg acting on
// the sign bit only. min/max ignore a NaN operand unless .NaN, and order -0
// below +0. setp's ordered comparisons are false on NaN, the unordered ones
// (equ, ltu...) true. cvt follows PTX: float-to-int rounds as asked and
// clamps, NaN gives 0 (1<<(n-1) from f64 or into 64 bits); .sat clamps
// integers to the destination range and floats to [0, 1] (NaN to +0).
// Load rejects what ptxas rejects or what a GPU does not determine: a cvt
// without its mandatory rounding modifier, and a float mul or mad without
// one (ptxas may contract it with an add into an fma). .approx and .full
// (div, rcp, sqrt, lg2, ex2) are computed as the exact function correctly
// rounded: within the documented error, but not the hardware's bits.
//
// Special registers: %tid, %ntid, %ctaid, %nctaid, %laneid, %warpid
// (tid/32), %nwarpid (warps in the CTA), %lanemask_*, %smid (0). Blocks
// are 1-D, as the contract's Block: %tid.y and .z are 0, %ntid.y and .z 1.
// %clock, %clock64 and %globaltimer count the CTA's warp instructions so
// far: deterministic. A launch with Launch.Profile also counts the warp
// instructions issued at each of the entry's instructions: where a kernel
// spends its PTX instructions (ptxas makes about as many machine
// instructions of them: it folds some, address arithmetic into loads,
// and expands others).
//
// # Race detector
//
// With Launch.RaceCheck, two threads touching the same 4-byte word of shared
// memory between two completed barriers, at least one writing, not both
// atomically, and not ordered by a bar.warp.sync of both, is a FaultRace
// naming both threads, both instructions and the address. Atomics never
// race with each other. Only barriers order threads: a completed barrier,
// even of a subset of threads (a thread count), starts a new epoch for the
// whole CTA (so races across named barriers may be missed, never invented),
// and bar.warp.sync orders the lanes of its mask after it. shfl, vote,
// redux, membar and fence do not order memory. Lanes of one warp are
// threads like any others (Volta's independent scheduling): a warp reading
// what its own lanes wrote needs a bar.warp.sync. 8- and 16-bit accesses
// count for their whole word.
//
// # Faults
//
// A Fault names its kind, the kernel, the instruction (text and line), the
// CTA and thread, and the address if any. Kinds: FaultMemory (outside every
// allocation, or outside shared memory), FaultAlign, FaultCollective
// (masks disagree, a lane outside its own mask, lanes that never arrive),
// FaultBarrier (a barrier that cannot complete, reached after exits, or
// used divergently), FaultSteps (Launch.MaxSteps warp instructions per CTA,
// by default DefaultMaxSteps: a stuck loop faults within seconds),
// FaultRace, FaultUnsupported, and FaultInternal for an interpreter bug
// (a recovered panic).
//
// # Clusters
//
// A launch runs clusters of the contract's Cluster CTAs, shaped as the
// entry's .reqnctapercluster (the grid must be a whole number of them in
// each dimension); .explicitcluster without .reqnctapercluster is refused,
// as a contract has no cluster shape of its own. Every cluster register
// reads as on hardware: %cluster_ctarank (x fastest), %cluster_nctarank,
// %clusterid, %nclusterid, %cluster_ctaid, %cluster_nctaid;
// %is_explicit_cluster is true when the entry declares .reqnctapercluster,
// false for the implicit 1x1x1 cluster of other kernels.
//
// Distributed shared memory: the shared memory of the CTA of rank r is
// also at .shared::cluster address (r+1)<<24 + its .shared address (and
// at genericShared plus that), which is what mapa returns; a CTA's own
// .shared addresses are valid .shared::cluster addresses of itself.
// ld/st/atom/red.shared::cluster and generic accesses reach any CTA of the
// cluster; .shared and .shared::cta only the CTA's own (a mapa address
// there is a FaultMemory), and so does an access to a CTA whose threads
// have all exited.
//
// barrier.cluster.arrive and .wait are split: .aligned, so a warp's live
// threads execute each together; a thread arrives once per phase and
// waits after arriving (otherwise a FaultBarrier), and may work between
// the two; wait returns once every thread of the cluster arrived, exited
// threads counting as arrived, as on hardware. fence.acq_rel.cluster and
// fence.mbarrier_init, like every fence, need no work.
//
// An mbarrier is an initialised 8-byte object in shared memory, possibly
// another CTA's (arrive through .shared::cluster); its state is kept beside
// the memory: arrivals per phase (1 to 2^20-1), arrivals pending, the
// transaction count, phases completed. A phase completes when no arrival
// is pending and the transaction count is zero. arrive (optionally with a
// count) returns the phase it arrived in as its state; arrive.expect_tx
// adds its bytes to the count first. try_wait never answers false: a warp
// whose phase has not completed waits at the instruction (as if its
// suspend time never ran out), so a loop on try_wait does not spin.
// test_wait answers at once, and when false ends the warp's turn. Using an
// mbarrier not initialised, or arriving more than the phase expects, is a
// FaultBarrier. cp.async.bulk.shared::cluster.global checks its operands
// when issued (size a positive multiple of 16, both addresses 16-byte
// aligned and in bounds, the mbarrier in the destination's CTA) and lands
// later, at a point drawn from the seed (up to 256 of the cluster's warp
// instructions later; earlier if nothing else can run; copies still in
// flight when every thread has exited land too): only then are its bytes
// in shared memory, read from global memory as they are then, and its
// bytes completed on the mbarrier. A thread that reads the destination
// before waiting sees stale data. cp.async.bulk.prefetch.L2.global is a
// hint and does nothing, but checks its operands as a bulk copy checks its
// source (size a positive multiple of 16, 16-byte aligned, in bounds), so
// a kernel that prefetches the wrong bytes faults. st.async.shared::cluster stores a
// register's (or a vector's) bytes, taken at the issue, into the shared
// memory of a CTA of the cluster the same way: aligned to its size, its
// mbarrier in the destination's CTA, landing at a drawn point. Its
// destination's transaction count may go below zero when bytes land before
// the arrive.expect_tx that expects them, as on hardware. The race detector
// checks an st.async at the issue against the destination's accesses not
// ordered before the issuing thread, and once landed takes it as an
// arrival of that thread in the phase it completed in. A landing (of a
// bulk copy, st.async or red.async) races with any access of its bytes
// made after its issue, before the landing or after it, even across a CTA
// or cluster barrier: only its mbarrier's phase orders it, and that
// completes after the landing unless an arrive.expect_tx counted too few
// bytes. (An st.async's issue is checked against the accesses of the
// destination's current epoch alone: a buffer's reuse is ordered by a
// chain of rounds through other CTAs' mbarriers, which the detector does
// not follow.)
// red.async...mbarrier::complete_tx::bytes is an st.async whose landing
// updates the destination word atomically (add, min, max, inc, dec, and,
// or, xor) with the register taken at the issue: it races with plain
// accesses as an st.async does, but with no atomic access, other
// red.async landings in the same word included.
//
// elect.sync is a collective of its member mask, like shfl: it elects the
// lowest lane of the mask (all of whose lanes execute it together).
//
// Deadlocks: when no warp of a cluster can run and no bulk copy is in
// flight, the launch ends with a FaultBarrier naming the kernel, the CTA
// and the instruction of the first warp waiting (at a cluster barrier,
// then at an mbarrier, then at a CTA barrier), the barrier's state (phase,
// arrivals, transaction count) and where every warp of the cluster is.
// A loop that never ends is a FaultSteps (MaxSteps is per CTA). In a
// co-resident launch, a cluster none of whose warps can run and with no
// bulk copy in flight is reported so at once, even while other clusters
// run: what it waits for is its own.
//
// # Speed
//
// Measured on this project's 2-core machine (Intel Xeon, Go 1.26, shared
// with other work: the ranges are the spread of runs),
// go test -run X -bench . ./ptx/emu:
//
//	count_ge (512 threads, rows of 65536 floats, v4 loads): 200-260M thread-instructions/s, about 1 ms per row
//	gvr_topk (K=2048, 512 threads, rows of 65536 floats):   180-290M thread-instructions/s, 4-6 ms per row
//
// (8-13M warp instructions/s), so hundreds of full-size rows take a second
// or two. The race detector costs 10-20%: it tracks shared memory only.
// Kernels with clusters, mbarriers or bulk copies pay for short turns in a
// shuffled order (a round of the cluster's warps every few instructions);
// their speed is not measured yet.
package emu
