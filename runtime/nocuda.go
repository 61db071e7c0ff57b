//go:build !cuda

package runtime

// The API without the cuda tag: the same names, and every entry point
// returns ErrNoCUDA. Build with -tags cuda (see the README) for a GPU.

import (
	"time"

	"github.com/gvr-go/gvr/ptx"
)

// Device is a GPU; without CUDA support there is none.
type Device struct{}

// DeviceCount returns ErrNoCUDA.
func DeviceCount() (int, error) { return 0, ErrNoCUDA }

// Open returns ErrNoCUDA.
func Open(ordinal int) (*Device, error) { return nil, ErrNoCUDA }

func (d *Device) Info() Info                                      { return Info{} }
func (d *Device) String() string                                  { return "no device (built without CUDA support)" }
func (d *Device) Synchronize() error                              { return ErrNoCUDA }
func (d *Device) Alloc(bytes int) (*Buffer, error)                { return nil, ErrNoCUDA }
func (d *Device) NewStream() (*Stream, error)                     { return nil, ErrNoCUDA }
func (d *Device) NewEvent() (*Event, error)                       { return nil, ErrNoCUDA }
func (d *Device) NewSyncEvent() (*Event, error)                   { return nil, ErrNoCUDA }
func (d *Device) Load(text string, l ptx.Launch) (*Kernel, error) { return nil, ErrNoCUDA }
func (d *Device) LoadPTX(text, entry string, sharedBytes int) (*Kernel, error) {
	return nil, ErrNoCUDA
}

// Buffer is device memory; without CUDA support there is none.
type Buffer struct{}

func (b *Buffer) Check() error                         { return ErrNoCUDA }
func (b *Buffer) Device() *Device                      { return nil }
func (b *Buffer) Bytes() int                           { return 0 }
func (b *Buffer) Ptr() uint64                          { return 0 }
func (b *Buffer) View(off, bytes int) (*Buffer, error) { return nil, ErrNoCUDA }
func (b *Buffer) Free() error                          { return ErrNoCUDA }
func (b *Buffer) Memset32(s *Stream, v uint32) error   { return ErrNoCUDA }

// Upload returns ErrNoCUDA.
func Upload[T Elem](dst *Buffer, src []T) error { return ErrNoCUDA }

// UploadAsync returns ErrNoCUDA.
func UploadAsync[T Elem](s *Stream, dst *Buffer, src []T) error { return ErrNoCUDA }

// Download returns ErrNoCUDA.
func Download[T Elem](dst []T, src *Buffer) error { return ErrNoCUDA }

// Stream is a CUDA stream; without CUDA support there is none.
type Stream struct{}

func (s *Stream) Device() *Device                             { return nil }
func (s *Stream) Synchronize() error                          { return ErrNoCUDA }
func (s *Stream) Close() error                                { return ErrNoCUDA }
func (s *Stream) Capture(record func() error) (*Graph, error) { return nil, ErrNoCUDA }
func (s *Stream) Capturing() (bool, error)                    { return false, ErrNoCUDA }
func (s *Stream) Wait(e *Event) error                         { return ErrNoCUDA }
func (s *Stream) Closed() bool                                { return false }

// Event is a CUDA event; without CUDA support there is none.
type Event struct{}

func (e *Event) Record(s *Stream) error { return ErrNoCUDA }
func (e *Event) Synchronize() error     { return ErrNoCUDA }
func (e *Event) Done() (bool, error)    { return false, ErrNoCUDA }
func (e *Event) Close() error           { return ErrNoCUDA }

// Elapsed returns ErrNoCUDA.
func Elapsed(start, end *Event) (time.Duration, error) { return 0, ErrNoCUDA }

// Kernel is a loaded kernel; without CUDA support there is none.
type Kernel struct {
	Contract   ptx.Launch
	Target     string
	Regs       int
	LocalBytes int
	MaxThreads int
	// MaxActiveClusters: see the cuda build.
	MaxActiveClusters int
	InfoLog           string
	JITTime           time.Duration
}

func (k *Kernel) Device() *Device                                        { return nil }
func (k *Kernel) Name() string                                           { return k.Contract.Entry }
func (k *Kernel) String() string                                         { return k.Contract.Entry + " (built without CUDA support)" }
func (k *Kernel) Args() *ptx.Args                                        { return k.Contract.Args() }
func (k *Kernel) Launch(s *Stream, grid int, a *ptx.Args) error          { return ErrNoCUDA }
func (k *Kernel) LaunchDependent(s *Stream, grid int, a *ptx.Args) error { return ErrNoCUDA }

// LaunchCooperative: see the cuda build.
func (k *Kernel) LaunchCooperative(s *Stream, grid int, a *ptx.Args, dependent bool) error {
	return ErrNoCUDA
}

// LaunchUnits: see the cuda build.
func (k *Kernel) LaunchUnits(s *Stream, units int, a *ptx.Args, dependent bool) error {
	return ErrNoCUDA
}

// Graph is a CUDA graph; without CUDA support there is none.
type Graph struct{}

func (g *Graph) Launch(s *Stream) error { return ErrNoCUDA }
func (g *Graph) Close() error           { return ErrNoCUDA }
