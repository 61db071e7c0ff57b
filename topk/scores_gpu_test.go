//go:build cuda

package topk

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gvr-go/gvr/runtime"
)

// rows16 makes rows of 16-bit scores of type d, stride apart, row r of
// length lens[r] (the rest of its stride +Inf, never to be chosen): normal
// scores rounded to d, with kinds of rows that rounding never makes
// (subnormals, NaN payloads, a sample of every bit pattern) in turn. It
// returns the device layout and each row's exact float32 values.
func rows16(rng *rand.Rand, d DType, lens []int32, stride int) (host []uint16, x [][]float32) {
	inf := uint16(0x7C00)
	expShift := 10
	if d == BFloat16 {
		inf, expShift = 0x7F80, 7
	}
	host = make([]uint16, len(lens)*stride)
	for i := range host {
		host[i] = inf
	}
	for r, n := range lens {
		row := d.Narrow(normal(int(n), rng))
		pick := func(lo, hi int) {
			for j := range row {
				row[j] = uint16(lo+rng.IntN(hi-lo)) | uint16(rng.IntN(2))<<15
			}
		}
		switch r % 5 {
		case 1: // subnormals and zeros
			pick(0, 1<<expShift)
		case 2: // every pattern, NaN payloads included
			pick(0, 1<<15)
		case 3: // many ties: a narrow range
			for j := range row {
				row[j] = d.Narrow([]float32{float32(rng.NormFloat64()) * 0.01})[0]
			}
		}
		copy(host[r*stride:], row)
		x = append(x, d.Widen(row))
	}
	return host, x
}

// TestSelectScoreTypes: float16 and bfloat16 rows through a Selector, on
// the single-CTA and the cluster kernels' lengths, rows at 2-byte offsets
// (an odd stride, and a View 2 bytes in), three steps of a layer (fallback,
// then predicted from the last): indices exact, values the exact float32
// of each score, bit for bit; SelectHost16 the same; float32 calls to a
// 16-bit selector, and a misaligned buffer, refused.
func TestSelectScoreTypes(t *testing.T) {
	d := gpu(t)
	const stride = 262147
	lens := []int32{stride, 70001, 262144, 8191, 2047, 100000}
	hl := []int32{9001, 9001, 5000, 2048, 9001, 3, 9001, 0} // SelectHost16's rows
	rows := len(lens)
	for _, dt := range []DType{Float16, BFloat16} {
		t.Run(dt.String(), func(t *testing.T) {
			sel, err := NewSelector(Config{MaxRows: max(rows, len(hl)), Values: true, Scores: dt, Device: d})
			must(t, err)
			defer sel.Close()
			k := sel.Config().K
			rng := rand.New(rand.NewPCG(uint64(dt), 16))
			buf := alloc(t, d, 2*rows*stride+2)
			scores, err := buf.View(2, 2*rows*stride) // 2 bytes past a 16-byte boundary
			must(t, err)
			for step := range 3 {
				host, x := rows16(rng, dt, lens, stride)
				must(t, runtime.Upload(scores, host))
				res, err := sel.Select(0, Batch{Scores: scores, Stride: stride, Rows: rows, Lengths: lens}, nil)
				must(t, err)
				idx, vals := readResult(t, res)
				for r := range rows {
					want, _ := Reference(x[r], k, false)
					if err := checkRow(x[r], want, idx[r*k:(r+1)*k], vals[r*k:(r+1)*k], false); err != nil {
						t.Errorf("step %d (%s, cluster %d), row %d (n = %d): %v", step, res.Kernel, res.Cluster, r, lens[r], err)
					}
				}
				t.Logf("step %d: %s, cluster %d, predicted %v", step, res.Kernel, res.Cluster, res.Predicted)
			}

			// SelectHost16: 8 rows of 9001, layer 0 again (predicted).
			host, x := rows16(rng, dt, hl, 9001)
			idx, vals, err := sel.SelectHost16(0, host[:len(hl)*9001], 9001, hl)
			if err != nil {
				t.Fatalf("SelectHost16: %v", err)
			}
			for r := range hl {
				want, _ := Reference(x[r], k, false)
				if err := checkRow(x[r], want, idx[r*k:(r+1)*k], vals[r*k:(r+1)*k], false); err != nil {
					t.Errorf("SelectHost16 row %d (n = %d): %v", r, hl[r], err)
				}
			}

			odd, err := buf.View(1, 2*rows*stride)
			must(t, err)
			for _, bad := range []struct {
				name string
				err  error
				want string
			}{
				{"SelectHost", func() error { _, _, err := sel.SelectHost(0, make([]float32, 9001), 9001, nil); return err }(), "takes 4-byte scores"},
				{"odd address", func() error {
					_, err := sel.Select(0, Batch{Scores: odd, Stride: stride, Rows: rows, Lengths: lens}, nil)
					return err
				}(), "past a 2-byte boundary"},
				{"short buffer", func() error {
					_, err := sel.Select(0, Batch{Scores: scores, Stride: stride + 1, Rows: rows, Lengths: lens}, nil)
					return err
				}(), "needs"},
			} {
				if bad.err == nil || !strings.Contains(bad.err.Error(), bad.want) {
					t.Errorf("%s: %v, want an error with %q", bad.name, bad.err, bad.want)
				}
			}
		})
	}
	sel, err := NewSelector(Config{MaxRows: 1, Device: d})
	must(t, err)
	defer sel.Close()
	if _, _, err := sel.SelectHost16(0, make([]uint16, 4096), 4096, nil); err == nil || !strings.Contains(err.Error(), "takes 2-byte scores") {
		t.Errorf("SelectHost16 on a float32 selector: %v", err)
	}
	if _, err := NewSelector(Config{MaxRows: 1, Scores: 9, Device: d}); err == nil || !strings.Contains(err.Error(), "Scores = DType(9)") {
		t.Errorf("Scores = 9: %v", fmt.Sprint(err))
	}
}
