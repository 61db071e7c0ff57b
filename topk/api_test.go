package topk

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{MaxRows: 4}.withDefaults()
	if c.K != 2048 || c.Layers != 1 || c.MaxCandidates != 6144 || c.BlockSize != 512 || c.Bins != 2048 {
		t.Errorf("defaults: %+v", c)
	}
	if err := c.validate(ptx.SM90); err != nil {
		t.Errorf("default config: %v", err)
	}
	if c := (Config{K: 16, MaxRows: 1}).withDefaults(); c.MaxCandidates != 1024 {
		t.Errorf("K=16: MaxCandidates = %d, want 1024", c.MaxCandidates)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "MaxRows = 0"},
		{Config{MaxRows: 1, K: -1}, "K = -1"},
		{Config{MaxRows: 1, Layers: -2}, "Layers = -2"},
		{Config{MaxRows: 1 << 30}, "int32-addressable"},
		{Config{MaxRows: 1, BlockSize: 100}, "BlockSize = 100"},
		{Config{MaxRows: 1, K: 4096, MaxCandidates: 100}, "MaxCandidates = 100"},
	} {
		err := tc.cfg.withDefaults().validate(ptx.SM90)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", tc.cfg, err, tc.want)
		}
	}
}

func TestParseStats(t *testing.T) {
	raw := make([]byte, 2*StatsBytes)
	le := binary.LittleEndian
	for j := range 5 {
		le.PutUint64(raw[StatsBytes+8*j:], uint64(100*(j+1)*(j+1)))
	}
	for off, v := range map[int]uint32{40: 3, 44: 4, 48: 5000, 52: 1, 56: 2048, 196: 1700} {
		le.PutUint32(raw[StatsBytes+off:], v)
	}
	st, err := ParseStats(raw)
	if err != nil {
		t.Fatal(err)
	}
	s := st[1]
	want := Stats{Stamps: [5]uint64{100, 400, 900, 1600, 2500}, Phase2Passes: 3, RadixPasses: 4, Candidates: 5000, Path: PathGVR, ValidPred: 2048, Sure: 1700}
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
	if c := s.PhaseCycles(); c != [4]uint64{300, 500, 700, 900} {
		t.Errorf("PhaseCycles = %v", c)
	}
	if st[0] != (Stats{}) {
		t.Errorf("zero record parsed as %+v", st[0])
	}
	for _, tc := range []struct {
		name  string
		marks []uint64 // gen.Mark* order
		c     [len(Steps)]uint64
		ok    [len(Steps)]bool
	}{
		// Phase 1 of a row with a prediction, Phase 4 without its first
		// pass mark (a step whose end is not marked does not count).
		{"one CTA", []uint64{130, 350, 200, 380, 1700, 0, 2000, 2300, 110, 120, 0, 0},
			[len(Steps)]uint64{10, 0, 0, 10, 10, 150, 70, 20, 100, 0, 0, 300, 200},
			[len(Steps)]bool{true, false, false, true, true, true, true, true, true, false, false, true, true}},
		// A cluster kernel's: the slice set up once the predicted indices
		// are in, the values gathered with the sample before its estimate.
		{"cluster, slice in Phase 1", []uint64{150, 250, 330, 350, 1700, 0, 2000, 2300, 110, 120, 180, 190},
			[len(Steps)]uint64{10, 30, 10, 10, 30, 60, 80, 50, 100, 0, 0, 300, 200},
			[len(Steps)]bool{true, true, true, true, true, true, true, true, true, false, false, true, true}},
		// A cluster kernel without a prediction: the slice set up once
		// the sample's loads are out, the sample gathered, then estimated.
		{"cluster, no prediction", []uint64{0, 300, 360, 380, 1700, 0, 2000, 2300, 110, 120, 180, 190},
			[len(Steps)]uint64{10, 60, 10, 10, 0, 110, 60, 20, 100, 0, 0, 300, 200},
			[len(Steps)]bool{true, true, true, true, false, true, true, true, true, false, false, true, true}},
	} {
		for j, v := range tc.marks {
			le.PutUint64(raw[StatsBytes+gen.StatsMarks+8*j:], v)
		}
		st, _ = ParseStats(raw)
		if c, ok := st[1].StepCycles(); c != tc.c || ok != tc.ok {
			t.Errorf("StepCycles (%s) = %v %v, want %v %v", tc.name, c, ok, tc.c, tc.ok)
		}
	}
	if _, err := ParseStats(raw[:70]); err == nil {
		t.Error("ParseStats of 70 bytes: no error")
	}
	if PathExact.String() != "exact" || PathHeld.String() != "held" || Path(9).String() != "path(9)" {
		t.Error("Path.String")
	}
}

// KernelConfig is the Selector's configuration with its defaults, the one
// gvrbench times; a bad value is the generator's error.
func TestKernelConfig(t *testing.T) {
	got := Config{K: 16}.KernelConfig(ptx.SM90)
	want := gen.Config{K: 16, MaxCandidates: 1024, BlockSize: 512, Bins: 2048, Target: ptx.SM90}
	if got != want {
		t.Errorf("Config{K: 16}.KernelConfig = %v, want %v", got, want)
	}
	if got := (Config{K: 2048, Bins: 1024, Scores: BFloat16}).KernelConfig(ptx.SM90); got.MaxCandidates != 6144 || got.Bins != 1024 || got.Scores != gen.BFloat16 {
		t.Errorf("KernelConfig with Bins 1024, bfloat16: %v", got)
	}
	if err := (Config{K: 2048, Bins: 3}).KernelConfig(ptx.SM90).Validate(); err == nil {
		t.Error("Bins 3: no error")
	}
}
