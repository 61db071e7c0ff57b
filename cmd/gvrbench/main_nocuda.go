//go:build !cuda

package main

import (
	"flag"
	"fmt"
	"os"
)

// Without CUDA, gvrbench only draws saved reports: gvrbench -from
// report.json [-charts dir].
func main() {
	fs := flag.NewFlagSet("gvrbench", flag.ExitOnError)
	from := fs.String("from", "", "print the report saved in `file` (gvrbench -o) and, with -charts, draw it")
	charts := fs.String("charts", "", "write charts (SVG and PNG) into `dir`")
	compare := fs.String("compare", "", "print the -from report's medians against those of the report in `file`")
	tune := fs.String("tune", "", "write the kernel choice of the -from report (a -tune run's -o; several, comma-separated: each cell's median over them) to `file`")
	into := fs.String("into", "", intoUsage)
	fs.Parse(os.Args[1:])
	if *from != "" {
		if err := fromReport(*from, *charts, *compare, *tune, *into, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "gvrbench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	fmt.Fprintln(os.Stderr, "gvrbench: built without CUDA support, so it only draws saved reports (-from report.json -charts dir).\n"+
		"To measure, build it with the cuda tag on a machine with CUDA 11.x/12.x driver headers:\n"+
		"  make gpu-test   (writes gpubin/gvrbench, to run on a GPU machine)\n"+
		"  make bench      (builds and runs it here, on a GPU machine)")
	os.Exit(2)
}
