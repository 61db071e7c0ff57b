// Package runtime is gvr's CUDA driver layer: devices and their primary
// contexts, device buffers, streams, events and CUDA graphs, JIT-loading
// PTX by its launch contract (ptx.Launch) and launching it with arguments
// set by name (ptx.Args). It imports only package ptx: which kernels exist
// and which to run is package topk's business. TargetFor picks the PTX
// target for a device.
//
// It wraps gorgonia.org/cu v0.9.6 and needs the build tag cuda, cgo and the
// CUDA driver headers (11.x or 12.x; `make cuda` uses the pinned 11.8 ones,
// see the README). The few driver calls gorgonia.org/cu lacks (the dynamic
// shared memory opt-in above 48 KB, the non-portable cluster size opt-in,
// cluster occupancy, stream capture, graph instantiate and launch, event
// queries during a capture) are in shim.go. Without the tag the package
// builds with the same API, and every entry point returns ErrNoCUDA.
//
// A binary built with the tag links libcuda.so.1, the driver, so it only
// starts on a machine with an NVIDIA driver; and gorgonia.org/cu initialises
// the driver when the program starts and exits with status 1, printing
// "Error in initialization", if that fails (no GPU visible, say).
//
//	d, err := runtime.Open(0)               // the device, its primary context, its PTX target
//	k, err := d.Load(text, contract)        // JIT-compiled; the contract checked against the text
//	buf, err := d.Alloc(bytes)              // zeroed device memory
//	err = runtime.Upload(buf, hostSlice)
//	args := k.Args().Set("scores", buf.Ptr()).Set("row_stride", n) // ... every parameter, by name
//	err = k.Launch(stream, grid, args)      // refused before the driver if an argument is missing or misaligned
//	err = runtime.Download(hostSlice, buf)
//
// Files: device.go (devices, contexts, errors), buffer.go (memory and
// copies), stream.go (streams, events, graphs), kernel.go (loading and
// launching), shim.go (cgo).
//
// Clusters: a kernel whose PTX declares .reqnctapercluster C launches
// through the plain launch, with a grid of whole clusters (checked); a
// cluster of more than 8 CTAs is opted into at load, and the device is
// asked at load how many such clusters fit (Kernel.MaxActiveClusters): one
// it can never hold is an error, not a hang. A kernel whose clusters wait
// for each other declares cooperative groups in its contract and launches
// only cooperatively (LaunchCooperative); LaunchUnits launches any kernel
// by its units of work (a cooperative group, else a cluster), as a caller
// that launches kernels it did not build (the topk Selector, gvrbench)
// wants.
//
// Contexts: the driver API's current context belongs to an OS thread, so
// every call here locks its goroutine to its thread and makes the device's
// primary context current there first. The package is safe for concurrent
// use: several goroutines may load kernels, allocate, and launch on the
// same device. A Buffer, Stream or Graph must not be freed or closed while
// another goroutine uses it.
//
// Targets: Open chooses the PTX target from the device's compute
// capability (TargetFor): sm_80, sm_86, sm_89, sm_90 (H100, H200), sm_100
// (B200) or sm_120; a newer device gets the newest older target, which the
// driver JIT-compiles forward, and Info.TargetNote says so.
//
// Errors carry context: the kernel, its configuration and target, the
// device, the driver call and the driver's name and description of the
// error (DriverError); a module the JIT refuses gives a JITError holding
// the JIT's error and info logs, what its ptxas said.
package runtime
