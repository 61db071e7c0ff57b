//go:build cuda

package runtime

import (
	"fmt"
	"reflect"
	goruntime "runtime"
	"sync"

	"gorgonia.org/cu"
)

// Device is one GPU and its primary context. Open returns the same Device
// for the same ordinal for the life of the process, and there is no Close:
// the context stays retained, and the modules loaded on it stay loaded,
// until the process exits. Every method is safe for concurrent use.
type Device struct {
	info Info
	dev  cu.Device
	ctx  cu.CUContext
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
	d := &Device{}
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
