// Package runtime JIT-loads gvr's PTX through the CUDA driver API and
// launches it: devices and their primary contexts, a module cache keyed by
// kernel, configuration and target, device buffers, streams, events and
// CUDA graphs. TargetFor picks the PTX target for a device.
//
// It wraps gorgonia.org/cu v0.9.6 and needs the build tag cuda, cgo and the
// CUDA driver headers (11.x or 12.x; `make cuda` uses the pinned 11.8 ones,
// see the README). The few driver calls gorgonia.org/cu lacks (the dynamic
// shared memory opt-in above 48 KB, stream capture, graph instantiate and
// launch) are in shim.go. Without the tag the package builds with the same
// API, and every entry point returns ErrNoCUDA.
//
// A binary built with the tag links libcuda.so.1, the driver, so it only
// starts on a machine with an NVIDIA driver; and gorgonia.org/cu initialises
// the driver when the program starts and exits with status 1, printing
// "Error in initialization", if that fails (no GPU visible, say).
//
//	d, err := runtime.Open(0)             // the device, its primary context, its PTX target
//	k, err := d.Kernel("gvr_topk", cfg)   // embedded or generated for d's target, JIT-loaded once
//	buf, err := d.Alloc(bytes)            // zeroed device memory
//	err = runtime.Upload(buf, hostSlice)
//	err = k.Launch(stream, rows, params)  // one pointer to a uint64 per kernel parameter
//	err = runtime.Download(hostSlice, buf)
//
// Standard kernels: the PTX of gvr_topk and topk_fallback for K = 512,
// 1024 and 2048 on sm_80, sm_90 and sm_100 (StandardKernels) is embedded
// in the package, written by go generate (generate.go: cmd/ptxgen
// -standard). Device.Kernel loads it for exactly those configurations
// (Kernel.Embedded) and generates any other. The same go generate writes a
// typed launcher per kernel from its .param list (NewGVRTopK,
// NewTopKFallback): a struct of named uint64 parameters and a pointer
// array prepared once, so that a launch does not allocate.
//
// Contexts: the driver API's current context belongs to an OS thread, so
// every call here locks its goroutine to its thread and makes the device's
// primary context current there first. The package is safe for concurrent
// use: several goroutines may load kernels (each is generated and
// JIT-loaded once), allocate, and launch on the same device. A Buffer,
// Stream or Graph must not be freed or closed while another goroutine uses
// it.
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
