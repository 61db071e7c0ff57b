package runtime

// The standard kernels, embedded: ptxgen writes the PTX of gvr_topk and
// topk_fallback for K = 512, 1024, 2048 on sm_80, sm_90 and sm_100 into
// kernels/, the table of them into zkernels.go (StandardKernels) and a
// typed launcher per kernel into zlaunch.go (NewGVRTopK, NewTopKFallback).
// After changing a generator, run go generate ./... and commit what
// changed; make generate-check (part of make ci) fails while the committed
// files differ from what ptxgen writes.

//go:generate go run github.com/gvr-go/gvr/cmd/ptxgen -standard .
