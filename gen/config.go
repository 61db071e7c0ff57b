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
	// Unroll is how many float4 loads each thread keeps in flight in a pass
	// over a row; 0 means the default (8: on an H200 a single CTA's pass is
	// latency-bound, and 8 beat 2 and 4 by 10-40% at N >= 64K, while 16
	// gained little more for more registers).
	Unroll int
	// Instrument adds phase timestamps and counters written to a stats
	// buffer. Off by default, and then free: no code is emitted for it.
	Instrument bool
	// Sorted writes each row's Top-K in rank order (key descending, then
	// index ascending) instead of as a set in no particular order. It
	// costs a bitonic sort of K elements per row: about 11.6 us for
	// K = 2048 on an H200 (see docs/perf-notes.md).
	Sorted bool
}

// DefaultConfig is the configuration of the GVR paper: K = 2048,
// MAX_CANDIDATES = 6144, 512 threads, 2048 bins, for sm_100.
func DefaultConfig() Config {
	return Config{K: 2048, MaxCandidates: 6144, BlockSize: 512, Bins: 2048, Target: ptx.SM100}
}

func (c Config) unroll() int {
	if c.Unroll == 0 {
		return 8
	}
	return c.Unroll
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
	if c.Unroll < 0 || c.Unroll > 16 {
		bad("Unroll = %d: must be between 0 (default) and 16", c.Unroll)
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
