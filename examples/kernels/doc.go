// Package kernels shows how a module of your own generates gvr kernels
// with go generate, avo-style: the //go:generate line below runs ptxgen,
// which writes the PTX (gvr_topk.ptx) and a Go file (gvr_topk.go) that
// embeds it and declares its launch contract (GVRTopK, a ptx.Launch).
// Commit both; rerun go generate when you change the flags or update gvr.
// The module then needs neither gen at run time nor a generation step on
// first use: it loads the text by its contract and sets the arguments by
// name (see the example).
//
// This configuration (K = 512, 1536 candidates, sm_90) is not one the
// topk package's defaults use: change the flags to what your model needs
// (go run github.com/gvr-go/gvr/cmd/ptxgen -h lists them).
package kernels

//go:generate go run github.com/gvr-go/gvr/cmd/ptxgen -kernel gvr_topk -arch sm_90 -k 512 -max-candidates 1536 -o gvr_topk.ptx -go gvr_topk.go -name GVRTopK
