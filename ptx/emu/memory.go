package emu

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
)

// Memory is the device's global memory: allocations at nonzero addresses
// with unmapped gaps between them, so that any access outside an allocation
// is a fault. It is not safe for concurrent use.
type Memory struct {
	allocs []*allocation // sorted by base
	next   uint64        // where the next allocation may start
}

type allocation struct {
	base uint64
	data []byte
}

const (
	// globalStart is the first global address; allocations follow it
	// with globalGap unmapped bytes between them.
	globalStart = 0x1_0000_0000
	globalGap   = 4096
	// defaultAlign is cudaMalloc's alignment.
	defaultAlign = 256
)

// NewMemory returns an empty global memory.
func NewMemory() *Memory { return &Memory{next: globalStart} }

// Alloc reserves bytes of zeroed memory aligned to align bytes (0: 256, as
// cudaMalloc; otherwise rounded up to a power of two) and returns its device
// address.
func (m *Memory) Alloc(bytes int, align int) uint64 {
	if align <= 0 {
		align = defaultAlign
	}
	for align&(align-1) != 0 {
		align += align & -align
	}
	bytes = max(bytes, 0)
	base := (m.next + uint64(align) - 1) &^ (uint64(align) - 1)
	m.allocs = append(m.allocs, &allocation{base: base, data: make([]byte, bytes)})
	m.next = base + uint64(bytes) + globalGap
	return base
}

// find returns the allocation holding [addr, addr+n), or nil.
func (m *Memory) find(addr uint64, n int) *allocation {
	i := sort.Search(len(m.allocs), func(i int) bool { return m.allocs[i].base > addr }) - 1
	if i < 0 {
		return nil
	}
	a := m.allocs[i]
	if addr+uint64(n) < addr || addr+uint64(n) > a.base+uint64(len(a.data)) {
		return nil
	}
	return a
}

// bytes returns the n bytes at addr, or an error if they are not inside one
// allocation.
func (m *Memory) bytes(addr uint64, n int) ([]byte, error) {
	a := m.find(addr, n)
	if a == nil {
		return nil, fmt.Errorf("emu: %d bytes at %#x are not inside one allocation", n, addr)
	}
	off := addr - a.base
	return a.data[off : off+uint64(n)], nil
}

// Write copies b to addr.
func (m *Memory) Write(addr uint64, b []byte) error {
	d, err := m.bytes(addr, len(b))
	if err == nil {
		copy(d, b)
	}
	return err
}

// Read returns a copy of the n bytes at addr.
func (m *Memory) Read(addr uint64, n int) ([]byte, error) {
	d, err := m.bytes(addr, n)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), d...), nil
}

// WriteU32s writes v as little-endian 32-bit words at addr.
func (m *Memory) WriteU32s(addr uint64, v []uint32) error {
	d, err := m.bytes(addr, 4*len(v))
	if err != nil {
		return err
	}
	for i, x := range v {
		binary.LittleEndian.PutUint32(d[4*i:], x)
	}
	return nil
}

// ReadU32s reads n 32-bit words at addr.
func (m *Memory) ReadU32s(addr uint64, n int) ([]uint32, error) {
	d, err := m.bytes(addr, 4*n)
	if err != nil {
		return nil, err
	}
	v := make([]uint32, n)
	for i := range v {
		v[i] = binary.LittleEndian.Uint32(d[4*i:])
	}
	return v, nil
}

// WriteU64s writes v as little-endian 64-bit words at addr.
func (m *Memory) WriteU64s(addr uint64, v []uint64) error {
	d, err := m.bytes(addr, 8*len(v))
	if err != nil {
		return err
	}
	for i, x := range v {
		binary.LittleEndian.PutUint64(d[8*i:], x)
	}
	return nil
}

// ReadU64s reads n 64-bit words at addr.
func (m *Memory) ReadU64s(addr uint64, n int) ([]uint64, error) {
	d, err := m.bytes(addr, 8*n)
	if err != nil {
		return nil, err
	}
	v := make([]uint64, n)
	for i := range v {
		v[i] = binary.LittleEndian.Uint64(d[8*i:])
	}
	return v, nil
}

// WriteF32s writes v at addr, bit for bit.
func (m *Memory) WriteF32s(addr uint64, v []float32) error {
	u := make([]uint32, len(v))
	for i, x := range v {
		u[i] = math.Float32bits(x)
	}
	return m.WriteU32s(addr, u)
}

// ReadF32s reads n float32 values at addr.
func (m *Memory) ReadF32s(addr uint64, n int) ([]float32, error) {
	u, err := m.ReadU32s(addr, n)
	if err != nil {
		return nil, err
	}
	v := make([]float32, n)
	for i, x := range u {
		v[i] = math.Float32frombits(x)
	}
	return v, nil
}

// WriteI32s writes v at addr.
func (m *Memory) WriteI32s(addr uint64, v []int32) error {
	u := make([]uint32, len(v))
	for i, x := range v {
		u[i] = uint32(x)
	}
	return m.WriteU32s(addr, u)
}

// ReadI32s reads n int32 values at addr.
func (m *Memory) ReadI32s(addr uint64, n int) ([]int32, error) {
	u, err := m.ReadU32s(addr, n)
	if err != nil {
		return nil, err
	}
	v := make([]int32, n)
	for i, x := range u {
		v[i] = int32(x)
	}
	return v, nil
}

// AllocF32s allocates memory holding v and returns its address.
func (m *Memory) AllocF32s(v []float32) uint64 {
	a := m.Alloc(4*len(v), 0)
	m.WriteF32s(a, v) // cannot fail: the allocation fits
	return a
}

// AllocU16s allocates memory holding v (little-endian 16-bit words) and
// returns its address.
func (m *Memory) AllocU16s(v []uint16) uint64 {
	a := m.Alloc(2*len(v), 0)
	d, _ := m.bytes(a, 2*len(v)) // cannot fail: the allocation fits
	for i, x := range v {
		binary.LittleEndian.PutUint16(d[2*i:], x)
	}
	return a
}

// AllocU32s allocates memory holding v and returns its address.
func (m *Memory) AllocU32s(v []uint32) uint64 {
	a := m.Alloc(4*len(v), 0)
	m.WriteU32s(a, v)
	return a
}

// AllocI32s allocates memory holding v and returns its address.
func (m *Memory) AllocI32s(v []int32) uint64 {
	a := m.Alloc(4*len(v), 0)
	m.WriteI32s(a, v)
	return a
}
