package ptx

import (
	"fmt"
	"strings"
)

// Version is a PTX ISA version, such as 8.6.
type Version struct{ Major, Minor int }

// Less reports whether v is older than w.
func (v Version) Less(w Version) bool {
	return v.Major < w.Major || (v.Major == w.Major && v.Minor < w.Minor)
}

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

func maxVersion(a, b Version) Version {
	if a.Less(b) {
		return b
	}
	return a
}

// Target is a GPU architecture that PTX is written for.
type Target struct {
	Name   string  // as in .target: "sm_90a"
	SM     int     // compute capability times ten: 90
	Suffix byte    // 0, 'a' (architecture-specific) or 'f' (family)
	MinPTX Version // the oldest PTX ISA that knows this target
}

// The targets gvr knows. MinPTX is the first PTX ISA version that accepts the
// target (PTX ISA notes of the .target directive); modules are emitted with
// that version so they load on the oldest driver that knows the target.
var (
	SM80   = Target{"sm_80", 80, 0, Version{7, 0}}
	SM86   = Target{"sm_86", 86, 0, Version{7, 1}}
	SM89   = Target{"sm_89", 89, 0, Version{7, 8}}
	SM90   = Target{"sm_90", 90, 0, Version{7, 8}}
	SM90a  = Target{"sm_90a", 90, 'a', Version{8, 0}}
	SM100  = Target{"sm_100", 100, 0, Version{8, 6}}
	SM100a = Target{"sm_100a", 100, 'a', Version{8, 6}}
	SM120  = Target{"sm_120", 120, 0, Version{8, 7}}
)

// Targets lists every known target, oldest first.
var Targets = []Target{SM80, SM86, SM89, SM90, SM90a, SM100, SM100a, SM120}

// SM75 (Turing) is older than every target gvr generates kernels for. It is
// known so that tests and tools can show what an older target lacks: the
// verify pass rejects, for example, redux.sync on it.
var SM75 = Target{"sm_75", 75, 0, Version{6, 3}}

// TargetByName returns the target called name ("sm_90"): one of Targets, or
// SM75.
func TargetByName(name string) (Target, error) {
	for _, t := range append(Targets, SM75) {
		if t.Name == name {
			return t, nil
		}
	}
	return Target{}, fmt.Errorf("unknown target %q (known: %s)", name, TargetNames())
}

// TargetNames lists the known targets, comma separated.
func TargetNames() string {
	names := make([]string, len(Targets))
	for i, t := range Targets {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

func (t Target) String() string { return t.Name }

// Feature is a capability that some instructions need and some targets have.
type Feature uint8

// The features instructions may require.
const (
	FeatNone          Feature = iota
	FeatReduxInt              // redux.sync on .u32/.s32/.b32: sm_80
	FeatReduxF32              // redux.sync on .f32: sm_100a only
	FeatMinMaxNaN             // min/max .NaN: sm_80
	FeatCluster               // clusters, mapa, ::cluster, barrier.cluster: sm_90
	FeatGlobalTimer           // %globaltimer: sm_30 (every target here)
	FeatCpAsync               // cp.async: sm_80
	FeatVote                  // vote.sync / shfl.sync / activemask: sm_30
	FeatSharedCluster         // the .shared::cluster state space: sm_90
	FeatMatch                 // match.any.sync: sm_70
	FeatMbarrier              // mbarrier init/arrive/test_wait/inval: sm_80
	FeatMbarrierTx            // mbarrier try_wait, expect_tx, arrive counts, .sem/.scope: sm_90
	FeatBulkCopy              // cp.async.bulk: sm_90
	FeatElect                 // elect.sync: sm_90
	FeatGridDep               // griddepcontrol (programmatic dependent launch): sm_90
)

var featureNames = [...]string{
	FeatNone:          "none",
	FeatReduxInt:      "integer redux.sync (sm_80+)",
	FeatReduxF32:      "f32 redux.sync (sm_100a only)",
	FeatMinMaxNaN:     "min/max .NaN (sm_80+)",
	FeatCluster:       "thread-block clusters (sm_90+)",
	FeatGlobalTimer:   "%globaltimer",
	FeatCpAsync:       "cp.async (sm_80+)",
	FeatVote:          "warp-synchronous vote/shfl (sm_30+)",
	FeatSharedCluster: ".shared::cluster (sm_90+)",
	FeatMatch:         "match.sync (sm_70+)",
	FeatMbarrier:      "mbarrier (sm_80+)",
	FeatMbarrierTx:    "mbarrier try_wait, transaction counts and orderings (sm_90+)",
	FeatBulkCopy:      "cp.async.bulk (sm_90+)",
	FeatElect:         "elect.sync (sm_90+)",
	FeatGridDep:       "griddepcontrol (sm_90+)",
}

func (f Feature) String() string {
	if int(f) < len(featureNames) {
		return featureNames[f]
	}
	return fmt.Sprintf("feature(%d)", uint8(f))
}

// Has reports whether target t offers feature f.
func (t Target) Has(f Feature) bool {
	switch f {
	case FeatNone, FeatGlobalTimer, FeatVote:
		return t.SM >= 30
	case FeatMatch:
		return t.SM >= 70
	case FeatReduxInt, FeatMinMaxNaN, FeatCpAsync, FeatMbarrier:
		return t.SM >= 80
	case FeatReduxF32:
		// PTX ISA: .f32 redux.sync needs sm_100a (or the sm_100f family,
		// which gvr does not target).
		return t.SM == 100 && t.Suffix == 'a'
	case FeatCluster, FeatSharedCluster, FeatMbarrierTx, FeatBulkCopy, FeatElect, FeatGridDep:
		return t.SM >= 90
	}
	return false
}
