package gen_test

// Differential fuzzing: the interpreter runs the generated PTX of the three
// Top-K kernels, with its shared-memory race detector on, and must match
// the CPU reference exactly (topk.Check), on rows and configurations a
// fuzzer builds.
//
//   - FuzzTopKRows: rows decoded from raw bytes (fuzzcase.RowFromBytes: as
//     float32, as bfloat16, or as a byte palette of NaN, Inf, signed zeros,
//     denormals and small integers), at a few fixed edge configurations,
//     through all three kernels; the prediction is decoded from bytes too
//     (fuzzcase.PredFromBytes: int16 indices, often negative or past n).
//   - FuzzTopKConfig: a kernel, a configuration (K, MaxCandidates,
//     BlockSize, Bins, Unroll, target, Sorted; a cluster kernel's size, 1
//     to 16, MaxN, rounds and keep) and a row recipe (length,
//     base values, special values, prediction mode, seed), decoded by
//     fuzzcase.Params.Case into the valid space. The row runs after 0-3
//     empty rows, an odd stride apart, so it starts at any alignment, and
//     the empty rows must come out empty. topk's TestFuzzGPU (tag cuda)
//     draws cases from the same decoder.
//
// Corpus. testdata/fuzz/<FuzzName>/ holds the seed corpus (files named
// seed-*), which plain `go test ./gen` runs as subtests (`go test ./gen
// -run FuzzTopK -v` lists them: FuzzTopKConfig/seed-radix-k1-sm75-n0...).
// Seeds are in Go's `go test fuzz v1` format; fuzzcase.Params.Corpus
// writes one for FuzzTopKConfig.
//
// Fixed bugs (avo's tests/fixedbugs). Every failure a fuzzer finds stays as
// a regression test. They live beside the seeds, in testdata/fuzz, not in
// a directory of their own: there `go test` replays them with no code of
// ours, and the fuzzer mutates them too.
//
//  1. `go test -fuzz` writes the failing input to
//     testdata/fuzz/<FuzzName>/<hash> and prints its path;
//     `go test ./gen -run '<FuzzName>/<hash>'` replays it.
//  2. Rename the file to fixedbug-<what> (a short description: the kernel,
//     the config edge, the row), in the same directory, and add an entry
//     to fixedBugs below that says what it found.
//  3. Fix the kernel. If the fix cannot come with the finding, add the
//     input to knownFailures, keyed as the failure message prints it, with
//     the bug: the fuzz function skips exactly that input, naming the bug,
//     and the rest of the corpus keeps running.
//
// TestFuzzCorpus keeps that bookkeeping honest: every corpus file parses,
// every fixedbug-* file is listed in fixedBugs and every entry has its
// file, and the seeds cover each kernel, target and edge configuration.
//
// `make fuzz` runs each target for a fixed number of executions, about 30 s
// each (FUZZTIME overrides; the Makefile says why a count, not a duration).

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/internal/fuzzcase"
	"github.com/gvr-go/gvr/ptx"
	"github.com/gvr-go/gvr/topk"
)

// fixedBugs are the fixedbug-* corpus entries, by file name
// (<FuzzName>/<file>), and what each found.
var fixedBugs = map[string]string{
	"FuzzTopKConfig/fixedbug-cgvr-keep-bins2": "gvr_topk_cluster with KeepOver and Bins = 2 (C = 2, 32 threads): " +
		"generation panicked (\"Phase 4's histograms are not contiguous\": two 8-byte histograms 16-byte aligned) " +
		"before finding that they hold no slot a thread, where the keep is off",
	"FuzzTopKConfig/fixedbug-cfallback-c16-groups5-lead3-memory": "topk_fallback_cluster with 5 clusters of 16 a row (256 threads, " +
		"Unroll 16), after 3 empty rows: the interpreter made every one of the kernel's 10188 registers for each of the " +
		"co-resident launch's 2560 warps, 6.6 GB (1.2% of them used), and the fuzzing process died (exit status 2); " +
		"registers are now made at their first use (emu's regs: 0.4 GB, 15.8 -> 0.9 s)",
}

// knownFailures are fuzz inputs that fail today, keyed by inputKey, each
// with the bug: the fuzz functions skip them, so the rest of the corpus
// runs. Empty when every bug is fixed.
var knownFailures = map[string]string{}

// inputKey is a fuzz input as knownFailures keys it: the fuzz target's
// name and its arguments.
func inputKey(target string, args ...any) string { return fmt.Sprintf("%s%v", target, args) }

// skipKnown skips a known failure.
func skipKnown(t *testing.T, key string) {
	if bug, ok := knownFailures[key]; ok {
		t.Skipf("known failure: %s", bug)
	}
}

// rowsConfigs are FuzzTopKRows' configurations: the smallest K, no spare
// candidate room (MaxCandidates = K), one warp, two bins, sm_75 (no
// redux.sync), sorted output, no unrolling.
var rowsConfigs = []gen.Config{
	cfgK16,
	{K: 1, MaxCandidates: 4, BlockSize: 32, Bins: 32, Target: ptx.SM75},
	{K: 7, MaxCandidates: 7, BlockSize: 32, Bins: 2, Target: ptx.SM75, Sorted: true},
	{K: 100, MaxCandidates: 100, BlockSize: 128, Bins: 64, Target: ptx.SM80, Sorted: true},
	{K: 64, MaxCandidates: 256, BlockSize: 64, Bins: 64, Target: ptx.SM100, Unroll: 1},
}

// rowsMaxN is the longest row FuzzTopKRows builds.
const rowsMaxN = 4096

// FuzzTopKRows decodes a row from data (enc and length: see
// fuzzcase.RowFromBytes) and a prediction from pred, and runs the kernels
// at rowsConfigs[cfg % len] against the reference (the cluster kernels
// where the target has clusters, in clusters of 2 holding 512 elements,
// and topk_fallback_cluster with each row shared by two of them too).
func FuzzTopKRows(f *testing.F) {
	// The seeds are testdata/fuzz/FuzzTopKRows.
	f.Fuzz(func(t *testing.T, cfg, enc uint8, length uint16, data, pred []byte) {
		key := inputKey("FuzzTopKRows", cfg, enc, length, data, pred)
		skipKnown(t, key)
		c := rowsConfigs[int(cfg)%len(rowsConfigs)]
		x := fuzzcase.RowFromBytes(enc, length, data, rowsMaxN)
		cs := []testCase{{name: "fuzz", x: x, pred: fuzzcase.PredFromBytes(pred)}}
		for _, name := range fuzzcase.Kernels {
			c := c
			configs := []gen.Config{c}
			if gen.IsClusterKernel(name) {
				if !c.Target.Has(ptx.FeatCluster) {
					continue
				}
				c.Cluster, c.MaxN = 2, 512
				configs = []gen.Config{c}
				if name == "topk_fallback_cluster" {
					shared := c
					shared.Groups, shared.MbarrierRounds = 2, true
					configs = append(configs, shared)
				}
			}
			for _, c := range configs {
				l, err := fuzzcase.Load(name, c)
				if err != nil {
					t.Fatal(err)
				}
				idx, vals := launch(t, l.Program, l.Kernel, cs, true)
				if err := topk.Check(x, c.K, c.Sorted, idx[0], vals[0]); err != nil {
					t.Fatalf("%s (%v): n=%d, prediction %v: %v\nknownFailures key: %s", name, c, len(x), cs[0].pred, err, key)
				}
			}
		}
	})
}

// FuzzTopKConfig decodes a case (fuzzcase.Params: a kernel, a valid
// configuration, a row recipe) and runs it in the interpreter against the
// reference. Its arguments are the fields of fuzzcase.Params, in order.
func FuzzTopKConfig(f *testing.F) {
	// The seeds are testdata/fuzz/FuzzTopKConfig.
	f.Fuzz(func(t *testing.T, kernel, target uint8, k, cand uint16, block, bins, unroll, flags uint8,
		n uint32, fill, special, pred uint8, seed uint64) {
		p := fuzzcase.Params{Kernel: kernel, Target: target, K: k, Cand: cand, Block: block, Bins: bins,
			Unroll: unroll, Flags: flags, N: n, Fill: fill, Special: special, Pred: pred, Seed: seed}
		key := inputKey("FuzzTopKConfig", p.Args()...)
		skipKnown(t, key)
		c, err := p.Case(fuzzcase.InterpMaxN)
		if err != nil {
			t.Skip(err) // no valid configuration (rare: shared memory)
		}
		if err := runConfigCase(c, true); err != nil {
			t.Fatalf("%v\n%v\nknownFailures key: %s", c, err, key)
		}
	})
}

// runConfigCase runs case c in the interpreter and checks every row of the
// batch (the empty lead rows too) with topk.Check.
func runConfigCase(c fuzzcase.Case, race bool) error {
	l, err := fuzzcase.Load(c.Kernel, c.Config)
	if err != nil {
		return err
	}
	K := c.Config.K
	x := c.Row()
	var pred []int32
	if c.Predicted() {
		top, _ := topk.Reference(x, K, true)
		pred = c.Prediction(top)
	}
	b := c.Batch(x, pred)
	out, err := fuzzcase.RunEmu(l.Program, l.Kernel, b, race)
	if err != nil {
		return err
	}
	for r := range b.Rows() {
		var row []float32
		if r == c.Lead {
			row = x
		}
		idx, vals := out.Row(r, K)
		if !c.Values {
			vals = nil
		}
		if err := topk.Check(row, K, c.Config.Sorted, idx, vals); err != nil {
			return fmt.Errorf("row %d of %d (n=%d): %w", r, b.Rows(), len(row), err)
		}
	}
	return nil
}

// TestFuzzCorpus checks the committed corpus: every file parses and fits
// its target, fixed bugs are documented, and FuzzTopKConfig's seeds cover
// every kernel, target and edge the fuzzer should start from, each one
// decoding to a valid configuration (not a skip).
func TestFuzzCorpus(t *testing.T) {
	entries := map[string][][]any{}
	for _, name := range []string{"FuzzTopKRows", "FuzzTopKConfig"} {
		dir := filepath.Join("testdata", "fuzz", name)
		files, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("the seed corpus of %s: %v", name, err)
		}
		for _, fi := range files {
			key := name + "/" + fi.Name()
			vals, err := readCorpusFile(filepath.Join(dir, fi.Name()))
			if err != nil {
				t.Errorf("%s: %v", key, err)
				continue
			}
			entries[name] = append(entries[name], vals)
			if strings.HasPrefix(fi.Name(), "fixedbug-") && fixedBugs[key] == "" {
				t.Errorf("%s: a fixed bug with no entry in fixedBugs", key)
			}
		}
	}
	for key := range fixedBugs {
		if _, err := os.Stat(filepath.Join("testdata", "fuzz", key)); err != nil {
			t.Errorf("fixedBugs lists %s: %v", key, err)
		}
	}

	// FuzzTopKRows' seeds: every configuration and every element coding.
	rowsSeen := map[string]bool{}
	for _, vals := range entries["FuzzTopKRows"] {
		if len(vals) != 5 {
			t.Errorf("a FuzzTopKRows seed with %d values, want 5", len(vals))
			continue
		}
		cfg, _ := vals[0].(uint64)
		enc, _ := vals[1].(uint64)
		rowsSeen[fmt.Sprint("config ", cfg%uint64(len(rowsConfigs)))] = true
		rowsSeen[fmt.Sprint("coding ", enc%3)] = true
	}
	var rowsWant []string
	for i := range rowsConfigs {
		rowsWant = append(rowsWant, fmt.Sprint("config ", i))
	}
	for enc := range 3 {
		rowsWant = append(rowsWant, fmt.Sprint("coding ", enc))
	}
	for _, w := range rowsWant {
		if !rowsSeen[w] {
			t.Errorf("no FuzzTopKRows seed covers %s", w)
		}
	}

	seen := map[string]bool{}
	for _, vals := range entries["FuzzTopKConfig"] {
		p, err := paramsOf(vals)
		if err != nil {
			t.Error(err)
			continue
		}
		c, err := p.Case(fuzzcase.InterpMaxN)
		if err != nil {
			t.Errorf("a seed with no valid configuration: %v", err)
			continue
		}
		cfg, K, C := c.Config, c.Config.K, c.Config.MaxCandidates
		for what, ok := range map[string]bool{
			c.Kernel: true, cfg.Target.Name: true, "K=1": K == 1, "MaxCandidates=K": C == K,
			"BlockSize=32": cfg.BlockSize == 32, "BlockSize=1024": cfg.BlockSize == 1024,
			"Bins=2": cfg.Bins == 2, "Sorted": cfg.Sorted, "Unroll=1": cfg.Unroll == 1,
			"no values": !c.Values, "lead rows": c.Lead > 0,
			"n=0": c.N == 0, "n=1": c.N == 1, "n=K-1": c.N == K-1 && K > 1, "n=K": c.N == K,
			"n=K+1": c.N == K+1, "n=C+1": c.N == C+1, "fill " + c.Fill.Name: true,
			"scores " + cfg.Scores.String(): true,
			"Cluster=8":                     cfg.Cluster == 8, "Cluster=16": cfg.Cluster == 16,
			"MaxN<n": cfg.MaxN > 0 && cfg.MaxN < c.N, "MbarrierRounds": cfg.MbarrierRounds,
			"KeepOver, MaxN<n": cfg.KeepOver && cfg.MaxN > 0 && cfg.MaxN < c.N,
			"SureSet, n>C":     cfg.SureSet && c.N > C && c.Kernel != "topk_radix",
		} {
			seen[what] = seen[what] || ok
		}
		if c.Predicted() {
			seen["pred "+c.Pred.Name] = true
		}
		for b, name := range fuzzcase.Specials {
			seen["special "+name] = seen["special "+name] || p.Special&(1<<b) != 0
		}
	}
	want := []string{"K=1", "MaxCandidates=K", "BlockSize=32", "BlockSize=1024", "Bins=2", "Sorted", "Unroll=1",
		"no values", "lead rows", "n=0", "n=1", "n=K-1", "n=K", "n=K+1", "n=C+1", "Cluster=8", "Cluster=16", "MaxN<n", "MbarrierRounds",
		"KeepOver, MaxN<n", "SureSet, n>C"}
	want = append(want, fuzzcase.Kernels...)
	for _, tg := range fuzzcase.Targets {
		want = append(want, tg.Name)
	}
	for _, f := range fuzzcase.Fills {
		want = append(want, "fill "+f.Name)
	}
	for _, p := range fuzzcase.Preds {
		want = append(want, "pred "+p.Name)
	}
	for _, s := range fuzzcase.Specials {
		want = append(want, "special "+s)
	}
	for _, s := range fuzzcase.ScoreTypes {
		want = append(want, "scores "+s.String())
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("no FuzzTopKConfig seed covers %s", w)
		}
	}
}

// paramsOf rebuilds fuzzcase.Params from FuzzTopKConfig's arguments.
func paramsOf(vals []any) (fuzzcase.Params, error) {
	var p fuzzcase.Params
	fields := []any{&p.Kernel, &p.Target, &p.K, &p.Cand, &p.Block, &p.Bins, &p.Unroll, &p.Flags,
		&p.N, &p.Fill, &p.Special, &p.Pred, &p.Seed}
	if len(vals) != len(fields) {
		return p, fmt.Errorf("%d values, FuzzTopKConfig takes %d", len(vals), len(fields))
	}
	for i, v := range vals {
		n, ok := v.(uint64)
		if !ok {
			return p, fmt.Errorf("argument %d is %T, want a number", i, v)
		}
		switch f := fields[i].(type) {
		case *uint8:
			*f = uint8(n)
		case *uint16:
			*f = uint16(n)
		case *uint32:
			*f = uint32(n)
		case *uint64:
			*f = n
		}
	}
	return p, nil
}

// readCorpusFile parses a `go test fuzz v1` file, enough for these
// targets: unsigned integers (as uint64; uint8 also as byte('c')) and
// []byte strings. The testing package's own parser is internal.
func readCorpusFile(path string) ([]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	if lines[0] != "go test fuzz v1" {
		return nil, fmt.Errorf("first line %q, want go test fuzz v1", lines[0])
	}
	var vals []any
	for _, line := range lines[1:] {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		v, err := corpusValue(line)
		if err != nil {
			return nil, fmt.Errorf("line %q: %v", line, err)
		}
		vals = append(vals, v)
	}
	return vals, nil
}

func corpusValue(line string) (any, error) {
	e, err := parser.ParseExpr(line)
	if err != nil {
		return nil, err
	}
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return nil, fmt.Errorf("not a conversion T(v)")
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok {
		return nil, fmt.Errorf("not a literal")
	}
	switch lit.Kind {
	case token.INT:
		return strconv.ParseUint(lit.Value, 0, 64)
	case token.CHAR: // byte('\x80'): the value of the escape
		v, _, _, err := strconv.UnquoteChar(strings.Trim(lit.Value, "'"), '\'')
		return uint64(v), err
	case token.STRING:
		s, err := strconv.Unquote(lit.Value)
		return []byte(s), err
	}
	return nil, fmt.Errorf("unsupported literal %s", lit.Value)
}
