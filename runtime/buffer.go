//go:build cuda

package runtime

import (
	"errors"
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// Buffer is device memory: an allocation, or a view of part of one.
type Buffer struct {
	dev   *Device
	ptr   cu.DevicePtr
	bytes int
	root  *Buffer // the allocation a view belongs to; nil for an allocation
	freed bool
}

// Alloc allocates bytes of device memory, zeroed.
func (d *Device) Alloc(bytes int) (*Buffer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("gvr/runtime: Alloc(%d): the size must be positive", bytes)
	}
	if err := d.bind(); err != nil {
		return nil, err
	}
	defer d.unbind()
	p, err := cu.MemAlloc(int64(bytes))
	if err != nil {
		return nil, fmt.Errorf("gvr/runtime: Alloc(%d) on %v: %w", bytes, d, driverErr("cuMemAlloc", err))
	}
	if err := cu.MemsetD8(p, 0, int64(bytes)); err != nil {
		cu.MemFree(p)
		return nil, fmt.Errorf("gvr/runtime: Alloc(%d) on %v: %w", bytes, d, driverErr("cuMemsetD8", err))
	}
	return &Buffer{dev: d, ptr: p, bytes: bytes}, nil
}

// Check reports why b cannot be used: nil, or freed.
func (b *Buffer) Check() error {
	switch {
	case b == nil:
		return errors.New("gvr/runtime: nil buffer")
	case b.freed || (b.root != nil && b.root.freed):
		return errors.New("gvr/runtime: buffer used after Free")
	}
	return nil
}

// Device is the device b lives on.
func (b *Buffer) Device() *Device { return b.dev }

// Bytes is b's size.
func (b *Buffer) Bytes() int { return b.bytes }

// Ptr is b's device address.
func (b *Buffer) Ptr() uint64 { return uint64(b.ptr) }

// View is the bytes of b from offset off, sharing its memory. A view needs
// no Free and must not be used after b is freed.
func (b *Buffer) View(off, bytes int) (*Buffer, error) {
	if err := b.Check(); err != nil {
		return nil, err
	}
	if off < 0 || bytes <= 0 || off > b.bytes-bytes {
		return nil, fmt.Errorf("gvr/runtime: View(%d, %d) of a %d-byte buffer: out of range", off, bytes, b.bytes)
	}
	root := b
	if b.root != nil {
		root = b.root
	}
	return &Buffer{dev: b.dev, ptr: b.ptr + cu.DevicePtr(off), bytes: bytes, root: root}, nil
}

// Free releases b's memory. Freeing a view, or a buffer twice, is an error.
func (b *Buffer) Free() error {
	if err := b.Check(); err != nil {
		return err
	}
	if b.root != nil {
		return errors.New("gvr/runtime: Free of a view: free the buffer it views")
	}
	if err := b.dev.bind(); err != nil {
		return err
	}
	defer b.dev.unbind()
	b.freed = true
	if err := cu.MemFree(b.ptr); err != nil {
		return fmt.Errorf("gvr/runtime: Free on %v: %w", b.dev, driverErr("cuMemFree", err))
	}
	return nil
}

// Memset32 sets every 32-bit word of b to v, in stream order on s (nil:
// the default stream).
func (b *Buffer) Memset32(s *Stream, v uint32) error {
	if err := b.Check(); err != nil {
		return err
	}
	if b.bytes%4 != 0 {
		return fmt.Errorf("gvr/runtime: Memset32 of %d bytes: not a whole number of words", b.bytes)
	}
	if err := s.check(b.dev); err != nil {
		return err
	}
	if err := b.dev.bind(); err != nil {
		return err
	}
	defer b.dev.unbind()
	if err := cu.MemsetD32Async(b.ptr, uint(v), int64(b.bytes/4), s.handle()); err != nil {
		return fmt.Errorf("gvr/runtime: Memset32 on %v: %w", b.dev, driverErr("cuMemsetD32Async", err))
	}
	return nil
}

// copyCheck validates a copy of n elements of size bytes between b and a
// host slice.
func copyCheck(b *Buffer, n, size int, op string) error {
	if err := b.Check(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if n*size > b.bytes {
		return fmt.Errorf("gvr/runtime: %s of %d elements (%d bytes): the buffer holds %d bytes", op, n, n*size, b.bytes)
	}
	return nil
}

// Upload copies src to the start of dst and returns when it is there.
func Upload[T Elem](dst *Buffer, src []T) error {
	size := int(unsafe.Sizeof(*new(T)))
	if err := copyCheck(dst, len(src), size, "Upload"); err != nil || len(src) == 0 {
		return err
	}
	if err := dst.dev.bind(); err != nil {
		return err
	}
	defer dst.dev.unbind()
	if err := cu.MemcpyHtoD(dst.ptr, unsafe.Pointer(&src[0]), int64(len(src)*size)); err != nil {
		return fmt.Errorf("gvr/runtime: Upload to %v: %w", dst.dev, driverErr("cuMemcpyHtoD", err))
	}
	return nil
}

// UploadAsync copies src to the start of dst in stream order on s (nil: the
// default stream). src may be reused when it returns: the driver stages
// pageable host memory before returning.
func UploadAsync[T Elem](s *Stream, dst *Buffer, src []T) error {
	size := int(unsafe.Sizeof(*new(T)))
	if err := copyCheck(dst, len(src), size, "UploadAsync"); err != nil || len(src) == 0 {
		return err
	}
	if err := s.check(dst.dev); err != nil {
		return err
	}
	if err := dst.dev.bind(); err != nil {
		return err
	}
	defer dst.dev.unbind()
	if err := cu.MemcpyHtoDAsync(dst.ptr, unsafe.Pointer(&src[0]), int64(len(src)*size), s.handle()); err != nil {
		return fmt.Errorf("gvr/runtime: UploadAsync to %v: %w", dst.dev, driverErr("cuMemcpyHtoDAsync", err))
	}
	return nil
}

// Download fills dst from the start of src, after the work already queued
// on the default stream and on every stream made by NewStream.
func Download[T Elem](dst []T, src *Buffer) error {
	size := int(unsafe.Sizeof(*new(T)))
	if err := copyCheck(src, len(dst), size, "Download"); err != nil || len(dst) == 0 {
		return err
	}
	if err := src.dev.bind(); err != nil {
		return err
	}
	defer src.dev.unbind()
	if err := cu.MemcpyDtoH(unsafe.Pointer(&dst[0]), src.ptr, int64(len(dst)*size)); err != nil {
		return fmt.Errorf("gvr/runtime: Download from %v: %w", src.dev, driverErr("cuMemcpyDtoH", err))
	}
	return nil
}
