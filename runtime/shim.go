//go:build cuda

package runtime

// The driver calls gorgonia.org/cu v0.9.6 lacks: the dynamic shared memory
// opt-in, stream capture and graph instantiate/launch, and the driver's
// names for error codes. Written against the CUDA 11.8 cuda.h, whose
// symbols (cuStreamBeginCapture_v2, cuGraphInstantiateWithFlags) CUDA 12
// and 13 drivers still export.

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
#include <string.h>

static CUresult gvrSetMaxDynamicShared(CUfunction f, int bytes) {
	return cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}

// A launch configuration of a 1-D grid of 1-D blocks, no attributes.
static CUlaunchConfig gvrLaunchConfig(unsigned grid, unsigned block, unsigned smem, CUstream s) {
	CUlaunchConfig cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.gridDimX = grid;
	cfg.gridDimY = 1;
	cfg.gridDimZ = 1;
	cfg.blockDimX = block;
	cfg.blockDimY = 1;
	cfg.blockDimZ = 1;
	cfg.sharedMemBytes = smem;
	cfg.hStream = s;
	return cfg;
}

// How many clusters of f (its compile-time cluster shape, .reqnctapercluster)
// of block threads and smem bytes of dynamic shared memory per CTA can be
// resident at once: 0 when the device can never schedule one.
static CUresult gvrMaxActiveClusters(CUfunction f, unsigned cluster, unsigned block, unsigned smem, int *n) {
	CUlaunchConfig cfg = gvrLaunchConfig(cluster, block, smem, NULL);
	return cuOccupancyMaxActiveClusters(n, f, &cfg);
}

// Clusters above 8 CTAs launch only once the function allows them.
static CUresult gvrAllowNonPortableCluster(CUfunction f) {
	return cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
}

// A launch of f (1-D grid and block) with attributes: with dependent, as
// a programmatic dependent launch: its CTAs may start while the kernel
// before it on s runs, once that one lets them
// (griddepcontrol.launch_dependents); f waits for its end itself
// (griddepcontrol.wait). With cooperative, every CTA of the grid is
// resident at once, or the launch fails. params holds the arguments'
// addresses, as cuLaunchKernel's kernelParams.
static CUresult gvrLaunchEx(CUfunction f, unsigned grid, unsigned block, unsigned smem, CUstream s, void **params, int dependent, int cooperative) {
	CUlaunchAttribute attrs[2];
	memset(attrs, 0, sizeof attrs);
	unsigned n = 0;
	if (dependent) {
		attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
		attrs[n].value.programmaticStreamSerializationAllowed = 1;
		n++;
	}
	if (cooperative) {
		attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
		attrs[n].value.cooperative = 1;
		n++;
	}
	CUlaunchConfig cfg = gvrLaunchConfig(grid, block, smem, s);
	cfg.attrs = attrs;
	cfg.numAttrs = n;
	return cuLaunchKernelEx(&cfg, f, params, NULL);
}

// Thread-local mode: on this thread, calls that are unsafe during capture
// fail instead of silently running; other threads are not disturbed.
static CUresult gvrBeginCapture(CUstream s) {
	return cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
}

// cuEventQuery with the calling thread's capture mode relaxed for the
// call: in thread-local mode a query fails while the thread captures,
// though asking about work outside the capture is safe.
static CUresult gvrEventQueryRelaxed(CUevent e) {
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	CUresult r = cuThreadExchangeStreamCaptureMode(&mode);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	CUresult q = cuEventQuery(e);
	r = cuThreadExchangeStreamCaptureMode(&mode);
	return q != CUDA_SUCCESS ? q : r;
}

// The current context of this thread, returned by value (a pointer from the
// Go side would move its variable to the heap).
static CUcontext gvrCurrentContext(void) {
	CUcontext c = NULL;
	return cuCtxGetCurrent(&c) == CUDA_SUCCESS ? c : NULL;
}

// The capture status, or -1 with *err set: one int back, so that the Go side
// passes no pointer (which would move its variable to the heap).
static int gvrCaptureStatus(CUstream s) {
	CUstreamCaptureStatus st;
	CUresult r = cuStreamIsCapturing(s, &st);
	return r == CUDA_SUCCESS ? (int)st : -(int)r;
}

// cuGraphInstantiateWithFlags has the same signature in CUDA 11.4 to 13,
// unlike cuGraphInstantiate.
static CUresult gvrInstantiate(CUgraphExec *exec, CUgraph g) {
	return cuGraphInstantiateWithFlags(exec, g, 0);
}
*/
import "C"

import (
	"unsafe"

	"gorgonia.org/cu"
)

type (
	graphHandle     = C.CUgraph
	graphExecHandle = C.CUgraphExec
)

// gorgonia.org/cu keeps the driver handles of Function, CUContext and
// Event unexported: each is a struct of one handle, which cfunction,
// ccontext and cevent read (pinned to v0.9.6; the array lengths below fail to compile if the
// structs change size). Stream.C gives the CUstream.
var (
	_ [unsafe.Sizeof(cu.Function{})]struct{}  = [unsafe.Sizeof(C.CUfunction(nil))]struct{}{}
	_ [unsafe.Sizeof(cu.CUContext{})]struct{} = [unsafe.Sizeof(C.CUcontext(nil))]struct{}{}
	_ [unsafe.Sizeof(cu.Event{})]struct{}     = [unsafe.Sizeof(C.CUevent(nil))]struct{}{}
)

// codeNotReady (runtime.go) is the header's CUDA_ERROR_NOT_READY.
var (
	_ [codeNotReady - C.CUDA_ERROR_NOT_READY]struct{}
	_ [C.CUDA_ERROR_NOT_READY - codeNotReady]struct{}
)

func cfunction(fn cu.Function) C.CUfunction { return *(*C.CUfunction)(unsafe.Pointer(&fn)) }

func ccontext(c cu.CUContext) C.CUcontext { return *(*C.CUcontext)(unsafe.Pointer(&c)) }

func cevent(e cu.Event) C.CUevent { return *(*C.CUevent)(unsafe.Pointer(&e)) }

// isCurrent reports whether c is the calling thread's current context.
func isCurrent(c cu.CUContext) bool { return C.gvrCurrentContext() == ccontext(c) }

func cstream(s cu.Stream) C.CUstream { return C.CUstream(unsafe.Pointer(s.C())) }

// check turns a CUresult into a *DriverError for call op.
func check(op string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	name, msg := errorStrings(int(r))
	return &DriverError{Op: op, Code: int(r), Name: name, Msg: msg}
}

// errorStrings is the driver's name and description of a CUresult.
func errorStrings(code int) (name, msg string) {
	var s *C.char
	name = "CUDA_ERROR_UNKNOWN_CODE"
	if C.cuGetErrorName(C.CUresult(code), &s) == C.CUDA_SUCCESS && s != nil {
		name = C.GoString(s)
	}
	if C.cuGetErrorString(C.CUresult(code), &s) == C.CUDA_SUCCESS && s != nil {
		msg = C.GoString(s)
	}
	return name, msg
}

func setMaxDynamicShared(fn cu.Function, bytes int) error {
	return check("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", C.gvrSetMaxDynamicShared(cfunction(fn), C.int(bytes)))
}

// eventQuery is cuEventQuery, allowed while the thread captures a graph.
func eventQuery(e cu.Event) error {
	return check("cuEventQuery", C.gvrEventQueryRelaxed(cevent(e)))
}

func allowNonPortableCluster(fn cu.Function) error {
	return check("cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)", C.gvrAllowNonPortableCluster(cfunction(fn)))
}

// maxActiveClusters asks the driver how many clusters of fn, cluster CTAs
// of block threads and smem bytes each, fit on the device at once.
func maxActiveClusters(fn cu.Function, cluster, block, smem int) (int, error) {
	var n C.int
	err := check("cuOccupancyMaxActiveClusters", C.gvrMaxActiveClusters(cfunction(fn), C.uint(cluster), C.uint(block), C.uint(smem), &n))
	return int(n), err
}

// launchEx launches fn as gvrLaunchEx does. Every argument is 64 bits (the
// kernel ABI); their values are copied to C memory, which cgo requires of
// what the driver reads through pointers.
func launchEx(fn cu.Function, grid, block, smem int, s cu.Stream, args []unsafe.Pointer, dependent, cooperative bool) error {
	n := max(1, len(args))
	vals := (*[1 << 20]uint64)(C.malloc(C.size_t(8 * n)))[:n:n]
	ptrs := (*[1 << 20]unsafe.Pointer)(C.malloc(C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)) * uintptr(n))))[:n:n]
	defer C.free(unsafe.Pointer(&vals[0]))
	defer C.free(unsafe.Pointer(&ptrs[0]))
	for i, a := range args {
		vals[i] = *(*uint64)(a)
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	what := launchKind(dependent, cooperative, "cuLaunchKernelEx(PROGRAMMATIC_STREAM_SERIALIZATION)",
		"cuLaunchKernelEx(COOPERATIVE)", "cuLaunchKernelEx(PROGRAMMATIC_STREAM_SERIALIZATION, COOPERATIVE)")
	return check(what, C.gvrLaunchEx(cfunction(fn), C.uint(grid), C.uint(block), C.uint(smem), cstream(s),
		(*unsafe.Pointer)(unsafe.Pointer(&ptrs[0])), C.int(cbool(dependent)), C.int(cbool(cooperative))))
}

func beginCapture(s cu.Stream) error {
	return check("cuStreamBeginCapture", C.gvrBeginCapture(cstream(s)))
}

// endCapture ends the capture; the graph may be non-nil with an error (an
// invalidated capture), and then must be destroyed.
func endCapture(s cu.Stream) (graphHandle, error) {
	var g C.CUgraph
	err := check("cuStreamEndCapture", C.cuStreamEndCapture(cstream(s), &g))
	return g, err
}

// capturing reports whether s is capturing a graph.
func capturing(s cu.Stream) (bool, error) {
	st := C.gvrCaptureStatus(cstream(s))
	if st < 0 {
		return false, check("cuStreamIsCapturing", C.CUresult(-st))
	}
	return st != C.CU_STREAM_CAPTURE_STATUS_NONE, nil
}

func instantiate(g graphHandle) (graphExecHandle, error) {
	var e C.CUgraphExec
	if err := check("cuGraphInstantiateWithFlags", C.gvrInstantiate(&e, g)); err != nil {
		return nil, err
	}
	return e, nil
}

func launchGraph(e graphExecHandle, s cu.Stream) error {
	return check("cuGraphLaunch", C.cuGraphLaunch(e, cstream(s)))
}

func destroyGraphExec(e graphExecHandle) error {
	return check("cuGraphExecDestroy", C.cuGraphExecDestroy(e))
}

func destroyGraph(g graphHandle) error {
	return check("cuGraphDestroy", C.cuGraphDestroy(g))
}

// cbool is 1 for true, 0 for false.
func cbool(b bool) int {
	if b {
		return 1
	}
	return 0
}
