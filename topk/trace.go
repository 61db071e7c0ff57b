package topk

// Traces: decode steps of indexer scores in NumPy .npy files, captured from
// a model or saved from a synthetic trajectory, so that a run can be
// replayed.
//
// The .npy header is parsed by codeberg.org/sbinet/npyio; the data, plain
// little- or big-endian numbers after it, is read and written here in bulk.
// npyio's own Read and Write would do it too, but its Write discovers the
// shape element by element through reflection (about 0.3 us a score: 20 s
// for 64 steps of 8 rows of 128K), it cannot write float16 (it panics) or
// bfloat16, and its float16 conversion flushes subnormals to zero, so the
// conversions below are our own and exact.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"codeberg.org/sbinet/npyio/npy"

	"github.com/gvr-go/gvr/internal/half"
)

// Trace is a run of decode steps of indexer scores: each step has Rows rows
// of N scores, row-major in Steps[s] (Rows*N of them). Lengths, when not
// nil, holds each row's length, Lengths[s][r] in [0, N]: the scores of a
// row past its length are padding (DecodeTrace writes -Inf). A nil Lengths
// means every row has N scores.
type Trace struct {
	Rows, N int
	Steps   [][]float32
	Lengths [][]int32
}

// Len is the length of row r of step s.
func (t *Trace) Len(s, r int) int {
	if t.Lengths == nil {
		return t.N
	}
	return int(t.Lengths[s][r])
}

// Row is the scores of row r of step s, Len(s, r) of them (a view into
// Steps[s]).
func (t *Trace) Row(s, r int) []float32 {
	return t.Steps[s][r*t.N : r*t.N+t.Len(s, r)]
}

// DecodeTrace records steps steps of rows independent synthetic decode
// trajectories: row r is NewDecode(start, start+steps, 0, seed+r), so step
// s's rows have start+s scores, and N is the longest, start+steps-1.
func DecodeTrace(start, steps, rows int, seed uint64) *Trace {
	n := max(start+steps-1, 0)
	t := &Trace{Rows: rows, N: n, Steps: make([][]float32, steps), Lengths: make([][]int32, steps)}
	for s := range steps {
		t.Steps[s] = make([]float32, rows*n)
		t.Lengths[s] = make([]int32, rows)
	}
	negInf := float32(math.Inf(-1))
	parallel(rows, func(r int) {
		d := NewDecode(start, start+steps, 0, seed+uint64(r))
		for s := range steps {
			row := t.Steps[s][r*n : (r+1)*n]
			k := copy(row, d.Next())
			for i := k; i < n; i++ {
				row[i] = negInf
			}
			t.Lengths[s][r] = int32(k)
		}
	})
	return t
}

// scoreCodec reads scores of one .npy dtype.
type scoreCodec struct {
	size   int
	decode func(raw []byte) float32
}

// scoreDtypes are the score dtypes LoadTrace reads. ml_dtypes' bfloat16
// has no NumPy type code: np.save writes it as a 2-byte void, '<V2' (and
// np.load gives it back as '|V2'), in the machine's order, which is little
// endian on every machine that runs models.
var scoreDtypes = map[string]scoreCodec{
	"<f4": {4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }},
	">f4": {4, func(b []byte) float32 { return math.Float32frombits(binary.BigEndian.Uint32(b)) }},
	"<f2": {2, func(b []byte) float32 { return half.Float16ToFloat32(binary.LittleEndian.Uint16(b)) }},
	">f2": {2, func(b []byte) float32 { return half.Float16ToFloat32(binary.BigEndian.Uint16(b)) }},
	"<V2": {2, func(b []byte) float32 { return half.BFloat16ToFloat32(binary.LittleEndian.Uint16(b)) }},
	"|V2": {2, func(b []byte) float32 { return half.BFloat16ToFloat32(binary.LittleEndian.Uint16(b)) }},
}

const scoreDtypesWant = "float32 ('<f4'), float16 ('<f2') or bfloat16 ('<V2', as np.save writes ml_dtypes.bfloat16; " +
	"bfloat16 bits in another type: save x.view(ml_dtypes.bfloat16), or x.astype(np.float32))"

// lengthsName is the file that holds a trace's row lengths, beside it:
// x.lengths.npy for x.npy, lengths.npy inside a folder of steps.
func lengthsName(path string, dir bool) string {
	if dir {
		return filepath.Join(path, "lengths.npy")
	}
	return strings.TrimSuffix(path, ".npy") + ".lengths.npy"
}

// LoadTrace reads a trace from path: a .npy file of shape [steps, N] (one
// row a step) or [steps, rows, N], or a folder of .npy files, one a step,
// each [N] or [rows, N], in natural order of their names (step_2 before
// step_10). Scores may be float32, float16 or bfloat16 (scoreDtypes) and
// are converted to float32 exactly. The row lengths, if any, are the int32
// or int64 array [steps, rows] in x.lengths.npy beside x.npy, or in
// lengths.npy inside the folder; without it every row has N scores.
//
// A wrong dtype, rank or shape, a truncated or overlong file, an empty
// folder, or steps that disagree on rows or N is an error naming the file.
func LoadTrace(path string) (*Trace, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("topk: trace: %w", err)
	}
	var t *Trace
	if fi.IsDir() {
		t, err = loadDir(path)
	} else {
		t, err = loadFile(path)
	}
	if err != nil {
		return nil, err
	}
	lpath := lengthsName(path, fi.IsDir())
	if _, err := os.Stat(lpath); errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if t.Lengths, err = loadLengths(lpath, len(t.Steps), t.Rows, t.N); err != nil {
		return nil, err
	}
	return t, nil
}

func loadFile(path string) (*Trace, error) {
	shape, x, err := readScores(path)
	if err != nil {
		return nil, err
	}
	t := &Trace{Rows: 1}
	switch len(shape) {
	case 2:
		t.N = shape[1]
	case 3:
		t.Rows, t.N = shape[1], shape[2]
	default:
		return nil, fmt.Errorf("topk: trace %s: shape %v: want [steps, N] or [steps, rows, N]", path, shape)
	}
	if shape[0] == 0 {
		return nil, fmt.Errorf("topk: trace %s: shape %v: no steps", path, shape)
	}
	for s := range shape[0] {
		t.Steps = append(t.Steps, x[s*t.Rows*t.N:(s+1)*t.Rows*t.N:(s+1)*t.Rows*t.N])
	}
	return t, nil
}

func loadDir(dir string) (*Trace, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("topk: trace: %w", err)
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".npy") && n != "lengths.npy" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("topk: trace %s: no .npy files in the folder", dir)
	}
	slices.SortFunc(names, naturalCompare)
	t := &Trace{}
	for i, name := range names {
		path := filepath.Join(dir, name)
		shape, x, err := readScores(path)
		if err != nil {
			return nil, err
		}
		rows, n := 1, 0
		switch len(shape) {
		case 1:
			n = shape[0]
		case 2:
			rows, n = shape[0], shape[1]
		default:
			return nil, fmt.Errorf("topk: trace %s: shape %v: a step wants [N] or [rows, N]", path, shape)
		}
		if i == 0 {
			t.Rows, t.N = rows, n
		} else if rows != t.Rows || n != t.N {
			return nil, fmt.Errorf("topk: trace %s: shape %v: %s has [%d, %d] (rows, N); a folder's steps must agree",
				path, shape, names[0], t.Rows, t.N)
		}
		t.Steps = append(t.Steps, x)
	}
	return t, nil
}

func loadLengths(path string, steps, rows, n int) ([][]int32, error) {
	h, raw, err := readNpy(path, func(descr string) int {
		switch descr {
		case "<i4":
			return 4
		case "<i8":
			return 8
		}
		return 0
	}, "int32 ('<i4') or int64 ('<i8')")
	if err != nil {
		return nil, err
	}
	if want := []int{steps, rows}; !slices.Equal(h.Shape, want) {
		return nil, fmt.Errorf("topk: trace %s: shape %v: want [steps, rows] = %v", path, h.Shape, want)
	}
	size := 4
	if h.Type == "<i8" {
		size = 8
	}
	lengths := make([][]int32, steps)
	for s := range lengths {
		lengths[s] = make([]int32, rows)
		for r := range rows {
			b := raw[(s*rows+r)*size:]
			var l int64
			if size == 4 {
				l = int64(int32(binary.LittleEndian.Uint32(b)))
			} else {
				l = int64(binary.LittleEndian.Uint64(b))
			}
			if l < 0 || l > int64(n) {
				return nil, fmt.Errorf("topk: trace %s: step %d row %d: length %d outside [0, N = %d]", path, s, r, l, n)
			}
			lengths[s][r] = int32(l)
		}
	}
	return lengths, nil
}

// readScores reads a .npy file of scores of any shape as float32.
func readScores(path string) ([]int, []float32, error) {
	h, raw, err := readNpy(path, func(descr string) int { return scoreDtypes[descr].size }, scoreDtypesWant)
	if err != nil {
		return nil, nil, err
	}
	c := scoreDtypes[h.Type]
	x := make([]float32, len(raw)/c.size)
	for i := range x {
		x[i] = c.decode(raw[i*c.size:])
	}
	return h.Shape, x, nil
}

// npyHeader is what LoadTrace needs of a .npy header.
type npyHeader struct {
	Type  string // the descriptor without quotes: '<f4'
	Shape []int
}

// readNpy reads a .npy file whose dtype's size sizeOf gives (0: a dtype
// not wanted), checking that its data is exactly as long as its header
// says.
func readNpy(path string, sizeOf func(descr string) int, want string) (npyHeader, []byte, error) {
	fail := func(format string, a ...any) (npyHeader, []byte, error) {
		return npyHeader{}, nil, fmt.Errorf("topk: trace %s: "+format, append([]any{path}, a...)...)
	}
	f, err := os.Open(path)
	if err != nil {
		return npyHeader{}, nil, fmt.Errorf("topk: trace: %w", err)
	}
	defer f.Close()
	r, err := newNpyReader(f)
	if err != nil {
		return fail("not a .npy file: %v", err)
	}
	h := npyHeader{Type: strings.Trim(r.Header.Descr.Type, `'"`), Shape: r.Header.Descr.Shape}
	size := sizeOf(h.Type)
	if size == 0 {
		return fail("dtype %s: want %s", r.Header.Descr.Type, want)
	}
	if r.Header.Descr.Fortran && len(h.Shape) > 1 {
		return fail("Fortran order: save np.ascontiguousarray(x)")
	}
	fi, err := f.Stat()
	if err != nil {
		return fail("%v", err)
	}
	start, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fail("%v", err)
	}
	have := fi.Size() - start
	need := int64(size)
	for _, d := range h.Shape {
		hi, lo := bits.Mul64(uint64(need), uint64(d))
		if d < 0 || hi != 0 || lo > math.MaxInt64 {
			return fail("shape %v of %s: not a size", h.Shape, h.Type)
		}
		need = int64(lo)
	}
	if need != have {
		what := "truncated"
		if need < have {
			what = "trailing bytes"
		}
		return fail("shape %v of %s: %s: %d bytes of data, the header wants %d", h.Shape, h.Type, what, have, need)
	}
	raw := make([]byte, need)
	if _, err := io.ReadFull(f, raw); err != nil {
		return fail("%v", err)
	}
	return h, raw, nil
}

// newNpyReader is npy.NewReader, which panics on a header cut short or
// without its closing newline: that is an error here.
func newNpyReader(f *os.File) (r *npy.Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, errors.New("truncated or malformed header")
		}
	}()
	r, err = npy.NewReader(f)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("truncated header")
	}
	return r, err
}

// Save writes the trace to path as a .npy file [steps, rows, N] of dtype
// d, and, when Lengths is not nil, the lengths as int32 [steps, rows] in
// x.lengths.npy beside x.npy (a stale one is removed when Lengths is nil).
// LoadTrace reads back exactly what was saved: the same trace for Float32,
// the scores rounded to nearest even for Float16 and BFloat16.
func (t *Trace) Save(path string, d DType) error {
	if err := t.check(); err != nil {
		return err
	}
	shape := []int{len(t.Steps), t.Rows, t.N}
	if err := writeNpy(path, d.descr(), shape, func(w io.Writer) error {
		for _, x := range t.Steps {
			if err := writeScores(w, d, x); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return t.saveLengths(lengthsName(path, false))
}

// SaveDir writes the trace to the folder dir (made if needed) as one .npy
// file [rows, N] of dtype d a step, step_000000.npy and on, and the
// lengths, when not nil, as lengths.npy: a folder LoadTrace reads back.
func (t *Trace) SaveDir(dir string, d DType) error {
	if err := t.check(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("topk: trace: %w", err)
	}
	for s, x := range t.Steps {
		path := filepath.Join(dir, fmt.Sprintf("step_%06d.npy", s))
		if err := writeNpy(path, d.descr(), []int{t.Rows, t.N}, func(w io.Writer) error {
			return writeScores(w, d, x)
		}); err != nil {
			return err
		}
	}
	return t.saveLengths(lengthsName(dir, true))
}

func (t *Trace) check() error {
	if len(t.Steps) == 0 {
		return errors.New("topk: trace: no steps")
	}
	for s, x := range t.Steps {
		if len(x) != t.Rows*t.N {
			return fmt.Errorf("topk: trace: step %d has %d scores, want Rows*N = %d*%d", s, len(x), t.Rows, t.N)
		}
	}
	if t.Lengths != nil {
		if len(t.Lengths) != len(t.Steps) {
			return fmt.Errorf("topk: trace: lengths of %d steps, want %d", len(t.Lengths), len(t.Steps))
		}
		for s, l := range t.Lengths {
			if len(l) != t.Rows {
				return fmt.Errorf("topk: trace: step %d has %d lengths, want Rows = %d", s, len(l), t.Rows)
			}
			for r, n := range l {
				if n < 0 || int(n) > t.N {
					return fmt.Errorf("topk: trace: step %d row %d: length %d outside [0, N = %d]", s, r, n, t.N)
				}
			}
		}
	}
	return nil
}

func (t *Trace) saveLengths(path string) error {
	if t.Lengths == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("topk: trace: %w", err)
		}
		return nil
	}
	return writeNpy(path, "<i4", []int{len(t.Steps), t.Rows}, func(w io.Writer) error {
		var b []byte
		for _, l := range t.Lengths {
			for _, n := range l {
				b = binary.LittleEndian.AppendUint32(b, uint32(n))
			}
		}
		_, err := w.Write(b)
		return err
	})
}

func writeScores(w io.Writer, d DType, x []float32) error {
	var b []byte
	for _, v := range x {
		switch d {
		case Float16:
			b = binary.LittleEndian.AppendUint16(b, half.Float32ToFloat16(v))
		case BFloat16:
			b = binary.LittleEndian.AppendUint16(b, half.Float32ToBFloat16(v))
		default:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	_, err := w.Write(b)
	return err
}

// writeNpy writes a .npy file, format 1.0 as np.save writes it: the magic,
// the version, the header's length, then the header, a Python dict padded
// with spaces and a newline so the data starts at a multiple of 64 bytes.
func writeNpy(path, descr string, shape []int, data func(io.Writer) error) (err error) {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	tuple := "(" + strings.Join(dims, ", ") + ")"
	if len(shape) == 1 {
		tuple = "(" + dims[0] + ",)"
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, tuple)
	const pre = len(npy.Magic) + 4 // magic, version, header length
	pad := 63 - (pre+len(dict))%64
	hdr := dict + strings.Repeat(" ", pad) + "\n"

	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("topk: trace: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("topk: trace %s: %w", path, cerr)
		}
	}()
	w := bufio.NewWriter(f)
	w.Write(npy.Magic[:])
	w.Write([]byte{1, 0})
	binary.Write(w, binary.LittleEndian, uint16(len(hdr)))
	w.WriteString(hdr)
	if err := data(w); err != nil {
		return fmt.Errorf("topk: trace %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("topk: trace %s: %w", path, err)
	}
	return nil
}

// naturalCompare orders names with their digit runs compared as numbers:
// step_2 before step_10.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := len(na) - len(nb); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	if c := len(a) - len(b); c != 0 {
		return c
	}
	return 0
}

func digits(s string) int {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}
