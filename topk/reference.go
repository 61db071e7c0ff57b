package topk

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Key is the order-preserving uint32 of x that torch.topk compares: the
// float bits with negative values inverted (^bits) and non-negative ones
// given the top bit (bits|0x80000000), and every NaN, of either sign and any
// payload, mapped to 0xFFFFFFFF. So NaN > +Inf > ... > +0 > -0 > ... > -Inf.
func Key(x float32) uint32 {
	if x != x {
		return 0xFFFFFFFF
	}
	b := math.Float32bits(x)
	if b&0x80000000 != 0 {
		return ^b
	}
	return b | 0x80000000
}

// PadValue is the value Reference writes in the slots past n, where the index
// is -1.
var PadValue = float32(math.Inf(-1))

// Reference is the CPU Top-K that every kernel must match: the first
// min(k, len(x)) positions of x in the order key descending (Key), then index
// ascending, as indices, with their values. It returns exactly k slots: slots
// past len(x) hold index -1 and value -Inf (PadValue).
//
// Unless sorted, the result is a set and Reference gives it in ascending
// index order; sorted gives rank order. Values are x's own elements, bit for
// bit (NaN payloads included). k < 0 or len(x) > math.MaxInt32 panic.
func Reference(x []float32, k int, sorted bool) (idx []int32, vals []float32) {
	if k < 0 {
		panic(fmt.Sprintf("topk: k = %d is negative", k))
	}
	if len(x) > math.MaxInt32 {
		panic(fmt.Sprintf("topk: row of %d elements does not fit int32 indices", len(x)))
	}
	ranks := make([]uint64, len(x))
	for i, v := range x {
		ranks[i] = rank(Key(v), i)
	}
	m := min(k, len(x))
	selectTop(ranks, m)
	top := ranks[:m]
	if sorted {
		slices.SortFunc(top, func(a, b uint64) int { return cmp.Compare(b, a) })
	} else {
		slices.SortFunc(top, func(a, b uint64) int { return cmp.Compare(rankIndex(a), rankIndex(b)) })
	}
	idx = make([]int32, k)
	vals = make([]float32, k)
	for j := range idx {
		if j < m {
			i := rankIndex(top[j])
			idx[j], vals[j] = i, x[i]
		} else {
			idx[j], vals[j] = -1, PadValue
		}
	}
	return idx, vals
}

// rank packs a key and an index into one uint64 that orders like the Top-K
// contract, larger first: key descending, then index ascending (^i). Every
// rank of a row is distinct, so selection has no ties to break.
func rank(key uint32, i int) uint64 { return uint64(key)<<32 | uint64(^uint32(i)) }

func rankIndex(r uint64) int32 { return int32(^uint32(r)) }

// selectTop reorders r so that r[:m] holds its m largest values, in no
// particular order (nth_element): quickselect with a median-of-three pivot,
// falling back to a sort when partitions keep coming out lopsided, so the
// worst case stays O(n log n).
func selectTop(r []uint64, m int) {
	lo, hi := 0, len(r)
	if m <= 0 || m >= hi {
		return
	}
	budget := 2 * bits.Len(uint(hi))
	for hi-lo > 16 {
		if budget == 0 {
			break
		}
		budget--
		p := lo + partition(r[lo:hi])
		switch {
		case p == m || p == m-1:
			return
		case p < m:
			lo = p + 1
		default:
			hi = p
		}
	}
	// r[:lo] > r[lo:hi] > r[hi:]: ordering the middle puts the boundary at m.
	slices.SortFunc(r[lo:hi], func(a, b uint64) int { return cmp.Compare(b, a) })
}

// partition places a median-of-three pivot at its final position p in a,
// with a[:p] > pivot > a[p+1:], and returns p. The values are distinct.
func partition(a []uint64) int {
	n := len(a)
	mid, last := n/2, n-1
	// Order a[0], a[mid], a[last] so the median lands in a[mid]; use it.
	if a[mid] > a[0] {
		a[mid], a[0] = a[0], a[mid]
	}
	if a[last] > a[0] {
		a[last], a[0] = a[0], a[last]
	}
	if a[last] > a[mid] {
		a[last], a[mid] = a[mid], a[last]
	}
	a[mid], a[last] = a[last], a[mid]
	pivot, i := a[last], 0
	for j := range last {
		if a[j] > pivot {
			a[i], a[j] = a[j], a[i]
			i++
		}
	}
	a[i], a[last] = a[last], a[i]
	return i
}

// SameSet reports whether a and b hold the same indices, each as often,
// in any order. Padding (-1) counts like any index, so outputs that pad a
// different number of slots differ.
func SameSet(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	sa, sb := slices.Clone(a), slices.Clone(b)
	slices.Sort(sa)
	slices.Sort(sb)
	return slices.Equal(sa, sb)
}

// Compare checks a kernel's index output got against the reference want
// (from Reference with the same k and sorted). Both have k slots; the slots
// want pads with -1 must be -1 in got too. When sorted, every slot must match;
// otherwise the valid slots must hold want's indices as a set, each once. The
// error names the first difference.
func Compare(got, want []int32, sorted bool) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %d slots, want %d", len(got), len(want))
	}
	m := len(want)
	for m > 0 && want[m-1] == -1 {
		m--
	}
	for j := m; j < len(got); j++ {
		if got[j] != -1 {
			return fmt.Errorf("slot %d: got index %d, want -1 padding (only %d valid slots)", j, got[j], m)
		}
	}
	if sorted {
		for j := range m {
			if got[j] != want[j] {
				return fmt.Errorf("slot %d (rank order): got index %d, want %d", j, got[j], want[j])
			}
		}
		return nil
	}
	g, w := slices.Clone(got[:m]), slices.Clone(want[:m])
	slices.Sort(g)
	slices.Sort(w)
	for j := range m {
		if j > 0 && g[j] == g[j-1] {
			return fmt.Errorf("index %d appears more than once", g[j])
		}
	}
	var missing, extra []int32
	for i, j := 0, 0; i < m || j < m; {
		switch {
		case j == m || (i < m && w[i] < g[j]):
			missing = append(missing, w[i])
			i++
		case i == m || g[j] < w[i]:
			extra = append(extra, g[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		return fmt.Errorf("not the Top-K set: %d indices missing (first %d), %d unexpected (first %d)",
			len(missing), first(missing), len(extra), first(extra))
	}
	return nil
}

func first(s []int32) int32 {
	if len(s) == 0 {
		return -1
	}
	return s[0]
}

// Check compares a kernel's output for row x with Reference(x, k, sorted):
// the indices with Compare and, when vals is not nil, each value bit for bit
// with x at its index (PadValue in padded slots).
func Check(x []float32, k int, sorted bool, idx []int32, vals []float32) error {
	want, _ := Reference(x, k, sorted)
	if err := Compare(idx, want, sorted); err != nil {
		return err
	}
	if vals == nil {
		return nil
	}
	if len(vals) != len(idx) {
		return fmt.Errorf("got %d values for %d indices", len(vals), len(idx))
	}
	for j, i := range idx {
		w := PadValue
		if i >= 0 {
			w = x[i]
		}
		if math.Float32bits(vals[j]) != math.Float32bits(w) {
			return fmt.Errorf("slot %d (index %d): value %v (bits %#08x), want %v (bits %#08x)",
				j, i, vals[j], math.Float32bits(vals[j]), w, math.Float32bits(w))
		}
	}
	return nil
}
