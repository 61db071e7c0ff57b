// Package golden holds the golden PTX files, the generated code a reviewer
// reads in a diff: every kernel of the registry (gen.Names) on sm_90 with
// the default configuration (the cluster kernels in clusters of 8), and
// warp_reduce on sm_75 (its shuffle path,
// where a target lacks redux.sync). On every other device target (sm_80,
// sm_86, sm_89, sm_100, sm_120) a kernel's PTX differs from its sm_90 file
// only in the header, which a test checks line by line, with the .version
// each target needs. The test compares freshly generated text with the
// files line by line and shows the diff; it also checks that generation is
// deterministic.
//
// File names are <kernel>_<arch>.ptx, e.g. count_ge_sm_90.ptx;
// scripts/ptxas-check.sh reads the arch from the name.
//
// After a change to the generator, rewrite the files and review the diff:
//
//	go test ./golden -update   # or: make golden-update
//
// -update also removes .ptx files the generator no longer produces. New
// kernels in the registry get golden files with no change here. make
// golden-check fails when the committed files are out of date, make
// ptxas-check assembles them, and every kernel generated for sm_80, with
// the pinned ptxas 11.8 (which skips files of PTX 8.0 and newer), and make
// ptxas12-check assembles the sm_90 and sm_90a ones, and every kernel
// generated for both, with the pinned ptxas 12.4.
//
// spills_sm_90.txt is what that ptxas 12.4 spills in the kernels the
// Selector runs on sm_90 (make spill-check compares, in make ci;
// scripts/spill-check.sh -update rewrites it): spilling is what a kernel
// change can do to a kernel's speed that no CPU test sees otherwise.
//
// The package has no Go API; it exists for its files and its test.
package golden
