// Package golden holds the golden PTX files: what the generator writes for
// every kernel of the registry (gen.Names) on sm_80, sm_90 and sm_100 with
// the default configuration, plus a few extra configurations of the Top-K
// kernels. The test compares freshly generated text with the files line by
// line and shows the diff; it also checks that generation is deterministic
// and that each file's .version is its target's minimum unless an
// instruction needs more.
//
// File names are <kernel>[_<configtag>]_<arch>.ptx, e.g. count_ge_sm_90.ptx
// for the default configuration and gvr_topk_k256_sm_90.ptx for an extra
// one. scripts/ptxas-check.sh reads the arch from the name.
//
// After a change to the generator, rewrite the files and review the diff:
//
//	go test ./golden -update   # or: make golden-update
//
// -update also removes .ptx files the generator no longer produces. New
// kernels in the registry get golden files with no change here. make
// golden-check fails when the committed files are out of date, and make
// ptxas-check assembles every sm_80/sm_90 file with the pinned ptxas 11.8.
//
// The package has no Go API; it exists for its files and its test.
package golden
