//go:build !cuda

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "gvrbench: built without CUDA support. Build it with the cuda tag on a machine with CUDA 11.x/12.x driver headers:\n"+
		"  make gpu-test   (writes gpubin/gvrbench, to run on a GPU machine)\n"+
		"  make bench      (builds and runs it here, on a GPU machine)")
	os.Exit(2)
}
