package gen

import (
	"errors"
	"fmt"

	"github.com/gvr-go/gvr/ptx"
)

// Config specialises a kernel. Every field is baked into the generated PTX.
type Config struct {
	K             int        // how many elements to select
	MaxCandidates int        // capacity of the shared-memory candidate buffer
	BlockSize     int        // threads per CTA
	Bins          int        // histogram bins of the refine phase
	Target        ptx.Target // the architecture to write PTX for
	// Unroll is how many 16-byte loads each thread keeps in flight in a
	// pass over a row; 0 means the default: 8 for float32 rows (on an H200
	// a single CTA's pass is latency-bound, and 8 beat 2 and 4 by 10-40% at
	// N >= 64K, while 16 gained little more for more registers), 6 for
	// 16-bit rows (48 scores in flight a thread, more than float32's 32;
	// at 8 their widening makes ptxas 12.4 spill about 110 bytes, at 6
	// none). A cluster kernel's Phase 3 walks the part of its slice that
	// did not fit at most 16 scores a step (collectOverElems): it carries
	// their indices too.
	Unroll int
	// Instrument adds phase timestamps and counters written to a stats
	// buffer. Off by default, and then free: no code is emitted for it.
	Instrument bool
	// Sorted writes each row's Top-K in rank order (key descending, then
	// index ascending) instead of as a set in no particular order. It
	// costs a sort of K elements per row in shared memory (a counting
	// sort by bins of the keys, and of the indices where keys tie):
	// about 4 us for K = 2048 on an H100, 4-7 us where bfloat16 scores
	// tie by the hundred (perf notes 148-150).
	Sorted bool
	// Cluster is how many CTAs of a thread-block cluster share one row,
	// for the cluster kernels (sm_90+); 0 means 1. Up to 8 is portable;
	// 16 launches only after the non-portable opt-in, which the launch
	// contract asks for.
	Cluster int
	// MaxN is the longest row a cluster kernel keeps in its cluster's
	// shared memory: each CTA holds MaxN/Cluster elements (rounded up to
	// 4), so it sizes the dynamic shared memory; 0 means as many as the
	// target's shared memory holds. Elements of a longer row past that
	// are read from global memory instead.
	MaxN int
	// Scores is the element type of the score rows (Top-K kernels only):
	// float32 (the zero value), float16 or bfloat16. Every element is
	// widened to float32 exactly on load, so the order, the ties and the
	// values written are those of the 16-bit numbers; a 16-bit row is half
	// the bytes to read (and a cluster holds rows twice as long).
	Scores ScoreType
	// MbarrierRounds makes the cluster Top-K kernels combine each round's
	// counts across the cluster through mbarriers, every CTA waiting on its
	// own, instead of a barrier.cluster of the whole cluster: the counts
	// go out as st.async stores that complete their bytes on the
	// receiver's mbarrier, and the candidates reach the leader the same
	// way, the other CTAs ending without waiting for it. The Selector's
	// cluster kernels use it (topk.ChoiceConfig; perf notes 29, 36, 42).
	MbarrierRounds bool
	// KeepOver makes the cluster Top-K kernels keep, in Phase 2's first
	// pass over a row longer than MaxN, the indices of the vectors outside
	// the cluster's shared memory that hold an element at or above the
	// lowest point it counts: a few a thread, in Phase 4's histograms
	// (unused until then), so that later passes and Phase 3 load those
	// vectors again instead of walking that part of the row in global
	// memory. It pays wherever rows are longer than the cluster holds
	// (batch 1 at 1M: 23.6 -> 19.6 us on an H100) and costs 1-3% in rows
	// that fit (the code), so the Selector takes it only where its table
	// says (topk.Tuning.Keep; perf notes 79, 83, 84).
	KeepOver bool
	// SureSet makes the GVR kernels' Phase 2 first pass also count a
	// threshold the sample puts at about 0.85K elements: where fewer than K
	// are at or above it, each of them is in the Top-K, so Phase 3 sets
	// them apart and Phase 4 selects among the others only. Phase 4 is
	// then ~0.5 us shorter, but the first pass and Phase 3 do more per
	// element, so it pays where a CTA walks few elements: the Selector
	// takes it for rows of at most SureSetMaxRow elements in one CTA, and
	// in a cluster where a CTA's part of the row is at most
	// SureSetMaxShare, SureSetMaxShareSmall in small clusters (perf notes
	// 91, 101, 212).
	SureSet bool
	// DependentLaunch makes a kernel fit for a programmatic dependent
	// launch (runtime.Kernel.LaunchDependent; sm_90+): its first
	// instruction waits for the kernel before it on the stream to end and
	// its memory to be visible (griddepcontrol.wait: the launch contract's
	// WaitsFirst), and a GVR kernel lets the kernel after it be scheduled
	// at Phase 4's start (griddepcontrol.launch_dependents), to wait
	// likewise while this one ends (perf notes 111).
	DependentLaunch bool
	// Groups is how many clusters share one row in topk_fallback_cluster
	// (0 or 1: one cluster a row): cluster g of the row's Groups holds
	// its g-th part in shared memory (up to MaxN elements), and every
	// count the kernel combines is combined across the clusters too,
	// through a workspace in global memory (GroupWorkspaceBytes a row)
	// that each cluster polls until the others' counts are there; the
	// row's first cluster gathers the candidates and selects. Every
	// cluster of a launch must be resident at once, or the launch never
	// ends: the caller launches it cooperatively
	// (runtime.Kernel.LaunchCooperative) with rows*Cluster*Groups CTAs
	// (any other grid never ends either; perf notes 138, 164). Its launch
	// contract says so (ptx.Launch.Cooperative = Cluster*Groups), and
	// runtime and the interpreter refuse any other launch.
	Groups int
}

// MaxGroups is the most clusters Config.Groups shares a row among.
const MaxGroups = 8

// Where the Selector takes Config.SureSet: rows of at most SureSetMaxRow
// elements in one CTA (whose walks over global memory hide the extra
// work longer), and in a cluster, parts of at most SureSetMaxShare
// elements a CTA, or SureSetMaxShareSmall in clusters of fewer than
// SureSetSmallCluster CTAs (there the set paid at 16K-32K a CTA in both
// modes, in clusters of 8 it was a wash and of 16 it lost: perf notes
// 212).
const (
	SureSetMaxRow        = 32768
	SureSetMaxShare      = 16384
	SureSetMaxShareSmall = 32768
	SureSetSmallCluster  = 8
)

// ScoreType is the element type of the score rows.
type ScoreType uint8

// The score types.
const (
	Float32  ScoreType = iota // IEEE binary32, 4 bytes
	Float16                   // IEEE binary16, 2 bytes
	BFloat16                  // bfloat16 (the top half of a float32), 2 bytes
)

// Size is the bytes of one element.
func (s ScoreType) Size() int {
	if s == Float32 {
		return 4
	}
	return 2
}

func (s ScoreType) String() string {
	switch s {
	case Float32:
		return "f32"
	case BFloat16:
		return "bf16"
	case Float16:
		return "f16"
	}
	return fmt.Sprintf("ScoreType(%d)", uint8(s))
}

// ParseScoreType is the ScoreType called name (as String writes it).
func ParseScoreType(name string) (ScoreType, error) {
	for _, s := range []ScoreType{Float32, Float16, BFloat16} {
		if s.String() == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("score type %q: want f32, f16 or bf16", name)
}

// DefaultConfig is the configuration of the GVR paper: K = 2048,
// MAX_CANDIDATES = 6144, 512 threads, 2048 bins, for sm_100.
func DefaultConfig() Config {
	return Config{K: 2048, MaxCandidates: 6144, BlockSize: 512, Bins: 2048, Target: ptx.SM100}
}

func (c Config) cluster() int { return max(c.Cluster, 1) }

// groups is how many clusters share a row: Groups, at least 1.
func (c Config) groups() int { return max(c.Groups, 1) }

// HeldMax is the longest row one CTA holds and selects whole, without
// Phases 1-3 (PathHeld): 2K elements, or MaxCandidates if that is less;
// and none (K) where K > Bins. The held select walks every element of the
// row several times, the four phases only the ~1.25K candidates Phase 2
// aims for; on an H100 at K = 2048 they break even at 4096 elements and
// the four phases are 7-12% faster at 5120-6144 (perf notes 144). The
// held select stages its K results in Phase 4's histograms (outRow.
// buffered), which hold Bins of them: past that its stores go to global
// memory a line a lane, and at K = 3072 and 4096 (Bins 2048) every held
// row was slower than the four phases, 1-26% cold (perf notes 147).
func (c Config) HeldMax() int {
	if c.K > c.Bins {
		return c.K
	}
	return min(c.MaxCandidates, 2*c.K)
}

func (c Config) unroll() int {
	switch {
	case c.Unroll != 0:
		return c.Unroll
	case c.Scores != Float32:
		return 6
	}
	return 8
}

func (c Config) String() string {
	s := fmt.Sprintf("K=%d MaxCandidates=%d BlockSize=%d Bins=%d Target=%s", c.K, c.MaxCandidates, c.BlockSize, c.Bins, c.Target.Name)
	if c.Unroll != 0 {
		s += fmt.Sprintf(" Unroll=%d", c.Unroll)
	}
	if c.Instrument {
		s += " Instrument"
	}
	if c.Sorted {
		s += " Sorted"
	}
	if c.Cluster > 1 {
		s += fmt.Sprintf(" Cluster=%d", c.Cluster)
	}
	if c.MaxN != 0 {
		s += fmt.Sprintf(" MaxN=%d", c.MaxN)
	}
	if c.Scores != Float32 {
		s += " Scores=" + c.Scores.String()
	}
	if c.MbarrierRounds {
		s += " MbarrierRounds"
	}
	if c.Groups > 1 {
		s += fmt.Sprintf(" Groups=%d", c.Groups)
	}
	if c.SureSet {
		s += " SureSet"
	}
	if c.DependentLaunch {
		s += " DependentLaunch"
	}
	if c.KeepOver {
		s += " KeepOver"
	}
	return s
}

// Validate reports every reason the configuration cannot be generated.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.K < 1 {
		bad("K = %d: must be at least 1", c.K)
	}
	if c.MaxCandidates < c.K {
		bad("MaxCandidates = %d: must be at least K = %d", c.MaxCandidates, c.K)
	}
	if c.BlockSize < warpSize || c.BlockSize > 1024 || c.BlockSize%warpSize != 0 {
		bad("BlockSize = %d: must be a multiple of 32 between 32 and 1024", c.BlockSize)
	}
	if c.Bins < 2 || c.Bins&(c.Bins-1) != 0 {
		bad("Bins = %d: must be a power of two, at least 2", c.Bins)
	} else if c.BlockSize%warpSize == 0 && c.BlockSize > 0 && c.Bins%(c.BlockSize/warpSize) != 0 {
		bad("Bins = %d: must be a multiple of the warp count %d", c.Bins, c.BlockSize/warpSize)
	}
	if c.SureSet && c.MaxCandidates >= 1<<16 {
		bad("MaxCandidates = %d with SureSet: must be below 65536 (Phase 3 packs two counts of candidates in a word)", c.MaxCandidates)
	}
	if c.Unroll < 0 || c.Unroll > 16 {
		bad("Unroll = %d: must be between 0 (default) and 16", c.Unroll)
	}
	if c.Cluster < 0 || c.Cluster > 16 {
		bad("Cluster = %d: must be 0 or 1 (none) to 16", c.Cluster)
	} else if c.Cluster > 1 && c.Target.Name != "" && !c.Target.Has(ptx.FeatCluster) {
		bad("Cluster = %d: %s has no thread-block clusters (sm_90+)", c.Cluster, c.Target.Name)
	}
	if c.Scores > BFloat16 {
		bad("Scores = %v: must be Float32, Float16 or BFloat16", c.Scores)
	}
	if c.DependentLaunch && c.Target.Name != "" && !c.Target.Has(ptx.FeatGridDep) {
		bad("DependentLaunch: %s has no programmatic dependent launch (sm_90+)", c.Target.Name)
	}
	if c.Groups < 0 || c.Groups > MaxGroups {
		bad("Groups = %d: must be 0 or 1 (one cluster a row) to %d", c.Groups, MaxGroups)
	} else if c.Groups > 1 && (c.SureSet || c.KeepOver || c.cluster() < 2) {
		bad("Groups = %d: needs Cluster >= 2, and neither SureSet nor KeepOver", c.Groups)
	}
	if c.MaxN < 0 || c.MaxN > 1<<30 {
		bad("MaxN = %d: must be 0 to 2^30", c.MaxN)
	}
	if c.Target.Name == "" {
		bad("no target")
	} else if len(errs) == 0 {
		if need, limit := c.SharedBytes(), MaxSharedPerBlock(c.Target); need > limit {
			bad("needs %d bytes of shared memory (MaxCandidates %d, Bins %d), %s allows %d per block",
				need, c.MaxCandidates, c.Bins, c.Target.Name, limit)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid config (%v): %w", c, errors.Join(errs...))
	}
	return nil
}

// MaxSharedPerBlock is the most shared memory one CTA may use on t, in
// bytes, after opting in above 48 KB (CUDA programming guide, compute
// capability tables).
func MaxSharedPerBlock(t ptx.Target) int {
	switch {
	case t.SM == 80:
		return 163 * 1024
	case t.SM == 90 || t.SM == 100:
		return 227 * 1024
	default: // sm_86, sm_89, sm_120
		return 99 * 1024
	}
}
