//go:build cuda

package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
)

// Device is one GPU and its primary context. Open returns the same Device
// for the same ordinal for the life of the process, and there is no Close:
// the context stays retained, and the kernels of its module cache loaded,
// until the process exits. Every method is safe for concurrent use.
type Device struct {
	info Info
	dev  cu.Device
	ctx  cu.CUContext

	mu        sync.Mutex
	kernels   map[kernelKey]*cacheEntry
	loads     int // modules JIT-loaded, for tests
	generated int // of them, kernels gen.Generate built (not embedded), for tests
}

var devices struct {
	sync.Mutex
	open map[int]*Device
}

// DeviceCount is the number of CUDA devices.
func DeviceCount() (int, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return 0, driverErr("cuDeviceGetCount", err)
	}
	return n, nil
}

// Open returns device ordinal with its primary context retained, and
// chooses the PTX target from its compute capability (TargetFor).
func Open(ordinal int) (*Device, error) {
	devices.Lock()
	defer devices.Unlock()
	if d := devices.open[ordinal]; d != nil {
		return d, nil
	}
	n, err := DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("gvr/runtime: %w", err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("gvr/runtime: no device %d: %d CUDA devices", ordinal, n)
	}
	d := &Device{kernels: make(map[kernelKey]*cacheEntry)}
	if d.dev, err = cu.GetDevice(ordinal); err != nil {
		return nil, fmt.Errorf("gvr/runtime: device %d: %w", ordinal, driverErr("cuDeviceGet", err))
	}
	if err := d.describe(ordinal); err != nil {
		return nil, err
	}
	if d.ctx, err = d.dev.RetainPrimaryCtx(); err != nil {
		return nil, fmt.Errorf("gvr/runtime: %s: %w", d.info.Name, driverErr("cuDevicePrimaryCtxRetain", err))
	}
	if devices.open == nil {
		devices.open = make(map[int]*Device)
	}
	devices.open[ordinal] = d
	return d, nil
}

// describe fills d.info from the device's attributes.
func (d *Device) describe(ordinal int) error {
	i := &d.info
	i.Ordinal = ordinal
	var err error
	fail := func(what string, e error) error {
		return fmt.Errorf("gvr/runtime: device %d: %s: %w", ordinal, what, e)
	}
	if i.Name, err = d.dev.Name(); err != nil {
		return fail("name", driverErr("cuDeviceGetName", err))
	}
	attrs := []struct {
		a cu.DeviceAttribute
		v *int
	}{
		{cu.ComputeCapabilityMajor, &i.Major},
		{cu.ComputeCapabilityMinor, &i.Minor},
		{cu.MultiprocessorCount, &i.SMs},
		{cu.ClockRate, &i.ClockKHz},
		{cu.L2CacheSize, &i.L2Bytes},
		{attrSharedOptin, &i.SharedOptin},
	}
	for _, a := range attrs {
		if *a.v, err = d.dev.Attribute(a.a); err != nil {
			return fail(fmt.Sprintf("attribute %d", a.a), driverErr("cuDeviceGetAttribute", err))
		}
	}
	if i.TotalMem, err = d.dev.TotalMem(); err != nil {
		return fail("memory size", driverErr("cuDeviceTotalMem", err))
	}
	i.Driver = cu.Version()
	if i.Target, i.TargetNote, err = TargetFor(i.Major, i.Minor); err != nil {
		return fmt.Errorf("%w (device %d: %s)", err, ordinal, i.Name)
	}
	return nil
}

// attrSharedOptin is CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
// which gorgonia.org/cu does not name.
const attrSharedOptin cu.DeviceAttribute = 97

// Info describes the device.
func (d *Device) Info() Info { return d.info }

func (d *Device) String() string { return fmt.Sprintf("device %d (%s)", d.info.Ordinal, d.info.Name) }

// bind makes d's primary context current on the calling goroutine's OS
// thread and keeps the goroutine on that thread until unbind: the driver
// API's current context belongs to the thread, and a goroutine may move
// between threads between two calls. Nested bind/unbind pairs are fine.
func (d *Device) bind() error {
	goruntime.LockOSThread()
	if isCurrent(d.ctx) {
		return nil
	}
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		goruntime.UnlockOSThread()
		return fmt.Errorf("gvr/runtime: %v: %w", d, driverErr("cuCtxSetCurrent", err))
	}
	return nil
}

func (d *Device) unbind() { goruntime.UnlockOSThread() }

// Synchronize waits for all work on the device; a kernel that failed
// asynchronously reports here.
func (d *Device) Synchronize() error {
	if err := d.bind(); err != nil {
		return err
	}
	defer d.unbind()
	if err := cu.Synchronize(); err != nil {
		return fmt.Errorf("gvr/runtime: %v: %w", d, driverErr("cuCtxSynchronize", err))
	}
	return nil
}

// sameDevice is the error for an object of device o used with device d.
func sameDevice(d, o *Device, what string) error {
	if o != d {
		return fmt.Errorf("gvr/runtime: %s is on %v, not %v", what, o, d)
	}
	return nil
}

// driverErr turns a gorgonia.org/cu error (a CUresult) into a DriverError
// with the driver's own name and description of the code.
func driverErr(op string, err error) error {
	if err == nil {
		return nil
	}
	v := reflect.ValueOf(err)
	if v.Kind() != reflect.Int {
		return fmt.Errorf("%s: %w", op, err)
	}
	code := int(v.Int())
	name, msg := errorStrings(code)
	return &DriverError{Op: op, Code: code, Name: name, Msg: msg}
}

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

// Stream is a CUDA stream. Streams are made blocking: work on the default
// stream waits for them, as Download does.
type Stream struct {
	dev    *Device
	s      cu.Stream
	closed bool
}

// NewStream makes a stream.
func (d *Device) NewStream() (*Stream, error) {
	if err := d.bind(); err != nil {
		return nil, err
	}
	defer d.unbind()
	s, err := cu.MakeStream(cu.DefaultStream)
	if err != nil {
		return nil, fmt.Errorf("gvr/runtime: NewStream on %v: %w", d, driverErr("cuStreamCreate", err))
	}
	return &Stream{dev: d, s: s}, nil
}

// Device is the device s belongs to.
func (s *Stream) Device() *Device { return s.dev }

// Closed reports whether Close was called on s (false for the default
// stream, nil).
func (s *Stream) Closed() bool { return s != nil && s.closed }

// check reports whether s can queue work for device d. A nil Stream is the
// default stream of d.
func (s *Stream) check(d *Device) error {
	switch {
	case s == nil:
		return nil
	case s.closed:
		return errors.New("gvr/runtime: stream used after Close")
	}
	return sameDevice(d, s.dev, "the stream")
}

func (s *Stream) handle() cu.Stream {
	if s == nil {
		return cu.NoStream
	}
	return s.s
}

// Synchronize waits for the work queued on s.
func (s *Stream) Synchronize() error {
	if err := s.check(s.dev); err != nil {
		return err
	}
	if err := s.dev.bind(); err != nil {
		return err
	}
	defer s.dev.unbind()
	if err := s.s.Synchronize(); err != nil {
		return fmt.Errorf("gvr/runtime: stream on %v: %w", s.dev, driverErr("cuStreamSynchronize", err))
	}
	return nil
}

// Close waits for the work queued on s, then destroys it. (Waiting first
// means that work on a closed stream is finished: nothing can still need
// ordering after it.)
func (s *Stream) Close() error {
	if err := s.check(s.dev); err != nil {
		return err
	}
	if err := s.dev.bind(); err != nil {
		return err
	}
	defer s.dev.unbind()
	s.closed = true
	if err := s.s.Synchronize(); err != nil {
		s.s.Destroy()
		return fmt.Errorf("gvr/runtime: closing a stream on %v: %w", s.dev, driverErr("cuStreamSynchronize", err))
	}
	if err := s.s.Destroy(); err != nil {
		return fmt.Errorf("gvr/runtime: stream on %v: %w", s.dev, driverErr("cuStreamDestroy", err))
	}
	return nil
}

// Event is a CUDA event, for timing and ordering stream work.
type Event struct {
	dev *Device
	e   cu.Event
}

// NewEvent makes an event that records time.
func (d *Device) NewEvent() (*Event, error) { return d.newEvent("NewEvent", cu.DefaultEvent) }

// NewSyncEvent makes an event for ordering work between streams
// (Stream.Wait) and for asking whether work is done (Event.Done). It records
// no time, which makes it cheaper to record and wait on; Elapsed refuses it.
func (d *Device) NewSyncEvent() (*Event, error) { return d.newEvent("NewSyncEvent", cu.DisableTiming) }

func (d *Device) newEvent(op string, flags cu.EventFlags) (*Event, error) {
	if err := d.bind(); err != nil {
		return nil, err
	}
	defer d.unbind()
	e, err := cu.MakeEvent(flags)
	if err != nil {
		return nil, fmt.Errorf("gvr/runtime: %s on %v: %w", op, d, driverErr("cuEventCreate", err))
	}
	return &Event{dev: d, e: e}, nil
}

// Record records e in stream order on s (nil: the default stream).
func (e *Event) Record(s *Stream) error {
	if err := s.check(e.dev); err != nil {
		return err
	}
	if err := e.dev.bind(); err != nil {
		return err
	}
	defer e.dev.unbind()
	if err := e.e.Record(s.handle()); err != nil {
		return fmt.Errorf("gvr/runtime: event on %v: %w", e.dev, driverErr("cuEventRecord", err))
	}
	return nil
}

// Done reports whether the work e recorded has finished (true for an event
// never recorded). It does not wait, and it may be called while the
// calling goroutine captures a graph (Stream.Capture).
func (e *Event) Done() (bool, error) {
	if err := e.dev.bind(); err != nil {
		return false, err
	}
	defer e.dev.unbind()
	err := eventQuery(e.e)
	if err == nil {
		return true, nil
	}
	if de, ok := err.(*DriverError); ok && de.Code == codeNotReady {
		return false, nil
	}
	return false, fmt.Errorf("gvr/runtime: event on %v: %w", e.dev, err)
}

// codeNotReady is CUDA_ERROR_NOT_READY: the work queried has not finished.
const codeNotReady = 600

// Wait makes the work queued on s (nil: the default stream) from now on
// wait for the work e recorded; the host does not wait. e may belong to
// another device.
func (s *Stream) Wait(e *Event) error {
	dev := e.dev
	if s != nil {
		dev = s.dev
	}
	if err := s.check(dev); err != nil {
		return err
	}
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	if err := s.handle().Wait(e.e, 0); err != nil {
		return fmt.Errorf("gvr/runtime: stream on %v waiting for an event of %v: %w", dev, e.dev, driverErr("cuStreamWaitEvent", err))
	}
	return nil
}

// Synchronize waits until e has happened.
func (e *Event) Synchronize() error {
	if err := e.dev.bind(); err != nil {
		return err
	}
	defer e.dev.unbind()
	if err := e.e.Synchronize(); err != nil {
		return fmt.Errorf("gvr/runtime: event on %v: %w", e.dev, driverErr("cuEventSynchronize", err))
	}
	return nil
}

// Close destroys e.
func (e *Event) Close() error {
	if err := e.dev.bind(); err != nil {
		return err
	}
	defer e.dev.unbind()
	if err := cu.DestroyEvent(&e.e); err != nil {
		return fmt.Errorf("gvr/runtime: event on %v: %w", e.dev, driverErr("cuEventDestroy", err))
	}
	return nil
}

// Elapsed is the time between two recorded events (resolution about half
// a microsecond).
func Elapsed(start, end *Event) (time.Duration, error) {
	if err := sameDevice(start.dev, end.dev, "the end event"); err != nil {
		return 0, err
	}
	if err := start.dev.bind(); err != nil {
		return 0, err
	}
	defer start.dev.unbind()
	ms, err := start.e.Elapsed(end.e)
	if err != nil {
		return 0, fmt.Errorf("gvr/runtime: events on %v: %w", start.dev, driverErr("cuEventElapsedTime", err))
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// Kernel is a kernel loaded on a device, ready to launch with one CTA per
// row.
type Kernel struct {
	Name        string
	Config      gen.Config // zero for LoadPTX
	Block       int        // threads per CTA
	SharedBytes int        // dynamic shared memory per CTA
	NumParams   int        // .u64 parameters
	Params      []string   // their names, in order (for LoadPTX, read from the text)
	// Embedded is set when Device.Kernel loaded the PTX embedded in the
	// package for a standard configuration (StandardKernels) instead of
	// generating it.
	Embedded bool
	// What the JIT made of it.
	Regs       int    // registers per thread
	LocalBytes int    // local memory per thread (spills)
	MaxThreads int    // most threads per CTA it can launch with
	InfoLog    string // the JIT's info log (ptxas -v)
	JITTime    time.Duration

	dev *Device
	mod cu.Module
	fn  cu.Function
}

type kernelKey struct {
	name string
	cfg  gen.Config
}

// cacheEntry is a kernel being loaded or loaded: ready closes when k or
// err is set.
type cacheEntry struct {
	ready chan struct{}
	k     *Kernel
	err   error
}

// Kernel returns generator kernel name (gen.Names) for cfg, loading it on
// first use and returning the same *Kernel after that. A standard
// configuration (LookupStandard) loads the PTX embedded in the package,
// with nothing generated at run time; any other is generated by gen and
// JIT-loaded. A zero cfg.Target means the device's (Info.Target); an
// explicit target must be one the device can run. Concurrent requests for
// the same kernel load it once; a failed load is not cached.
func (d *Device) Kernel(name string, cfg gen.Config) (*Kernel, error) {
	if cfg.Target.Name == "" {
		cfg.Target = d.info.Target
	}
	key := kernelKey{name, cfg}
	d.mu.Lock()
	e, loaded := d.kernels[key]
	if !loaded {
		e = &cacheEntry{ready: make(chan struct{})}
		d.kernels[key] = e
	}
	d.mu.Unlock()
	if loaded {
		<-e.ready
		return e.k, e.err
	}
	e.k, e.err = d.loadKernel(name, cfg)
	if e.err != nil {
		d.mu.Lock()
		delete(d.kernels, key)
		d.mu.Unlock()
	}
	close(e.ready)
	return e.k, e.err
}

// loadKernel loads kernel name for cfg: the embedded PTX of a standard
// configuration, or what gen generates for any other.
func (d *Device) loadKernel(name string, cfg gen.Config) (*Kernel, error) {
	if err := d.canRun(cfg.Target); err != nil {
		return nil, fmt.Errorf("gvr/runtime: kernel %s (%v): %w", name, cfg, err)
	}
	if s, ok := LookupStandard(name, cfg); ok {
		k, err := d.load(s.Name, s.PTX, cfg.Target, cfg.String(), s.Block, s.SharedBytes, len(s.Params))
		if err != nil {
			return nil, err
		}
		k.Config, k.Params, k.Embedded = cfg, s.Params, true
		return k, nil
	}
	gk, err := gen.Generate(name, cfg)
	if err != nil {
		return nil, fmt.Errorf("gvr/runtime: %w", err)
	}
	var params []string
	found := false
	for _, e := range gk.Module.Entries {
		if e.Name == gk.Name {
			found = true
			for _, p := range e.Params {
				params = append(params, p.Name)
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("gvr/runtime: kernel %s (%v): the generated module has no entry %q", name, cfg, gk.Name)
	}
	k, err := d.load(gk.Name, gk.PTX(), cfg.Target, cfg.String(), gk.Block, gk.SharedBytes, len(params))
	if err != nil {
		return nil, err
	}
	k.Config, k.Params = cfg, params
	d.mu.Lock()
	d.generated++
	d.mu.Unlock()
	return k, nil
}

// canRun reports whether PTX for t can be JIT-compiled for this device:
// a plain target of the same or an older architecture, or an 'a'/'f'
// target of exactly this one.
func (d *Device) canRun(t ptx.Target) error {
	sm := 10*d.info.Major + d.info.Minor
	if t.SM > sm || (t.Suffix != 0 && t.SM != sm) {
		return fmt.Errorf("%s PTX cannot run on %v (compute capability %d.%d, target %s)",
			t.Name, d, d.info.Major, d.info.Minor, d.info.Target.Name)
	}
	return nil
}

// LoadPTX JIT-loads a module of PTX text and returns its entry name, to
// launch with block threads and sharedBytes of dynamic shared memory per
// CTA and numParams .u64 parameters. It is not cached. Kernel.Params are
// the entry's .param names when the text declares numParams of them. A
// module the JIT refuses gives a *JITError holding the compiler's log.
func (d *Device) LoadPTX(name, text string, block, sharedBytes, numParams int) (*Kernel, error) {
	t := ptx.Target{Name: "an unknown target"}
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == ".target" {
			t.Name = f[1]
			break
		}
	}
	k, err := d.load(name, text, t, "", block, sharedBytes, numParams)
	if err != nil {
		return nil, err
	}
	if params := paramNames(text, name); len(params) == numParams {
		k.Params = params
	}
	return k, nil
}

// logBytes is the size of each JIT log buffer.
const logBytes = 1 << 16

func (d *Device) load(name, text string, t ptx.Target, cfg string, block, sharedBytes, numParams int) (*Kernel, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("gvr/runtime: kernel %s on %v: %s", name, d, fmt.Sprintf(format, args...))
	}
	switch {
	case block < 1 || block > 1024:
		return nil, fail("block of %d threads: must be 1 to 1024", block)
	case sharedBytes < 0 || sharedBytes > d.info.SharedOptin:
		return nil, fail("needs %d bytes of dynamic shared memory; the device allows %d per block", sharedBytes, d.info.SharedOptin)
	case numParams < 0:
		return nil, fail("%d parameters", numParams)
	}
	if err := d.bind(); err != nil {
		return nil, err
	}
	defer d.unbind()

	errLog, infoLog := make([]byte, logBytes), make([]byte, logBytes)
	start := time.Now()
	mod, err := cu.LoadDataEx(text,
		&cu.JITErrorLogBuffer{Buffer: errLog},
		&cu.JITInfoLogBuffer{Buffer: infoLog},
		&cu.JITLogVerbose{Enabled: true})
	jit := time.Since(start)
	if err != nil {
		return nil, &JITError{Kernel: name, Config: cfg, Target: t.Name, Device: d.String(),
			Err: driverErr("cuModuleLoadDataEx", err), Log: cString(errLog), Info: cString(infoLog)}
	}
	k := &Kernel{Name: name, Block: block, SharedBytes: sharedBytes, NumParams: numParams,
		InfoLog: strings.TrimSpace(cString(infoLog)), JITTime: jit, dev: d, mod: mod}
	if err := k.setup(); err != nil {
		mod.Unload()
		return nil, fail("%v", err)
	}
	d.mu.Lock()
	d.loads++
	d.mu.Unlock()
	return k, nil
}

// setup finds the entry, opts it into its dynamic shared memory and reads
// what the JIT made of it (with the context bound).
func (k *Kernel) setup() error {
	var err error
	if k.fn, err = k.mod.Function(k.Name); err != nil {
		return fmt.Errorf("entry not found in the module: %w", driverErr("cuModuleGetFunction", err))
	}
	// Above 48 KB dynamic shared memory needs the opt-in; below, it is
	// harmless, so every kernel gets it.
	if k.SharedBytes > 0 {
		if err := setMaxDynamicShared(k.fn, k.SharedBytes); err != nil {
			return fmt.Errorf("opting into %d bytes of dynamic shared memory: %w", k.SharedBytes, err)
		}
	}
	for _, a := range []struct {
		a cu.FunctionAttribute
		v *int
	}{{cu.NumRegs, &k.Regs}, {cu.LocalSizeBytes, &k.LocalBytes}, {cu.FnMaxThreadsPerBlock, &k.MaxThreads}} {
		if *a.v, err = k.fn.Attribute(a.a); err != nil {
			return driverErr("cuFuncGetAttribute", err)
		}
	}
	if k.MaxThreads < k.Block {
		return fmt.Errorf("cannot launch %d threads per CTA: with %d registers per thread the device allows %d",
			k.Block, k.Regs, k.MaxThreads)
	}
	return nil
}

// Device is the device k is loaded on.
func (k *Kernel) Device() *Device { return k.dev }

func (k *Kernel) String() string {
	return fmt.Sprintf("%s: %d threads, %d B shared, %d regs, %d B local, JIT %v",
		k.Name, k.Block, k.SharedBytes, k.Regs, k.LocalBytes, k.JITTime.Round(time.Millisecond))
}

// Launch queues k on s (nil: the default stream) with grid CTAs, one per
// row. params holds one pointer per kernel parameter, each to a uint64
// (device addresses and integers alike: the kernel ABI); the values are
// copied when Launch is called, so the caller may prepare the slice once
// and change the values between launches. Launch does not allocate.
func (k *Kernel) Launch(s *Stream, grid int, params []unsafe.Pointer) error {
	if len(params) != k.NumParams {
		return fmt.Errorf("gvr/runtime: launch of %s: %d parameters, the kernel takes %d", k.Name, len(params), k.NumParams)
	}
	if grid < 1 || grid > 1<<31-1 {
		return fmt.Errorf("gvr/runtime: launch of %s: %d CTAs: must be 1 to 2^31-1", k.Name, grid)
	}
	for i, p := range params {
		if p == nil {
			return fmt.Errorf("gvr/runtime: launch of %s: parameter %d is a nil pointer", k.Name, i)
		}
	}
	if err := s.check(k.dev); err != nil {
		return err
	}
	if err := k.dev.bind(); err != nil {
		return err
	}
	defer k.dev.unbind()
	if err := k.fn.Launch(grid, 1, 1, k.Block, 1, 1, k.SharedBytes, s.handle(), params); err != nil {
		return fmt.Errorf("gvr/runtime: launch of %s (%d CTAs of %d threads, %d B shared) on %v: %w",
			k.Name, grid, k.Block, k.SharedBytes, k.dev, driverErr("cuLaunchKernel", err))
	}
	return nil
}

// launcherCheck reports why a typed launcher of kernel name (zlaunch.go)
// cannot launch k: k must be that kernel with the .param list the
// launcher was generated for.
func (k *Kernel) launcherCheck(name string) error {
	want := launcherParams[name]
	switch {
	case k == nil:
		return fmt.Errorf("gvr/runtime: %s launcher: nil kernel", name)
	case k.Name != name:
		return fmt.Errorf("gvr/runtime: %s launcher: the kernel is %s", name, k.Name)
	case !slices.Equal(k.Params, want):
		return fmt.Errorf("gvr/runtime: %s launcher: the kernel (%v) has the parameters (%s); the launcher was generated for (%s)",
			name, k.Config, strings.Join(k.Params, ", "), strings.Join(want, ", "))
	}
	return nil
}

// Capturing reports whether s is capturing a graph (Capture). The default
// stream (nil) never is.
func (s *Stream) Capturing() (bool, error) {
	if s == nil {
		return false, nil
	}
	if err := s.check(s.dev); err != nil {
		return false, err
	}
	if err := s.dev.bind(); err != nil {
		return false, err
	}
	defer s.dev.unbind()
	c, err := capturing(s.s)
	if err != nil {
		return false, fmt.Errorf("gvr/runtime: stream on %v: %w", s.dev, err)
	}
	return c, nil
}

// Graph is a captured, instantiated CUDA graph.
type Graph struct {
	dev   *Device
	graph graphHandle
	exec  graphExecHandle
}

// Capture records the work that record queues on s into a graph instead
// of running it, and instantiates the graph. Work the graph replays uses
// the device addresses and parameter values of the capture, so the
// buffers must stay where they are. s must be a stream made by NewStream.
// record runs on the calling goroutine, which stays on one OS thread
// throughout (the capture belongs to the thread); calls that cannot be
// captured (synchronous copies, allocation) fail inside it.
func (s *Stream) Capture(record func() error) (*Graph, error) {
	if s == nil {
		return nil, errors.New("gvr/runtime: Capture needs a stream made by NewStream, not the default stream")
	}
	if err := s.check(s.dev); err != nil {
		return nil, err
	}
	if err := s.dev.bind(); err != nil {
		return nil, err
	}
	defer s.dev.unbind()
	if err := beginCapture(s.s); err != nil {
		return nil, fmt.Errorf("gvr/runtime: Capture on %v: %w", s.dev, err)
	}
	rerr := record()
	g, err := endCapture(s.s)
	if rerr != nil || err != nil {
		if g != nil {
			destroyGraph(g)
		}
		return nil, fmt.Errorf("gvr/runtime: Capture on %v: %w", s.dev, errors.Join(rerr, err))
	}
	exec, err := instantiate(g)
	if err != nil {
		destroyGraph(g)
		return nil, fmt.Errorf("gvr/runtime: Capture on %v: %w", s.dev, err)
	}
	return &Graph{dev: s.dev, graph: g, exec: exec}, nil
}

// Launch replays g on s.
func (g *Graph) Launch(s *Stream) error {
	if g.exec == nil {
		return errors.New("gvr/runtime: graph used after Close")
	}
	if err := s.check(g.dev); err != nil {
		return err
	}
	if err := g.dev.bind(); err != nil {
		return err
	}
	defer g.dev.unbind()
	if err := launchGraph(g.exec, s.handle()); err != nil {
		return fmt.Errorf("gvr/runtime: graph launch on %v: %w", g.dev, err)
	}
	return nil
}

// Close destroys g.
func (g *Graph) Close() error {
	if g.exec == nil {
		return errors.New("gvr/runtime: graph closed twice")
	}
	if err := g.dev.bind(); err != nil {
		return err
	}
	defer g.dev.unbind()
	err := errors.Join(destroyGraphExec(g.exec), destroyGraph(g.graph))
	g.exec, g.graph = nil, nil
	if err != nil {
		return fmt.Errorf("gvr/runtime: graph on %v: %w", g.dev, err)
	}
	return nil
}

// cString is the text before the first NUL of a buffer the driver filled.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
