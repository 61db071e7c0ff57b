package main

// The table's columns: a kernel, and how it is timed. Untagged, so that it
// is tested without a GPU.

import (
	"strconv"
	"strings"

	"github.com/gvr-go/gvr/topk"
)

// clusterKernels are the kernels timed per -cluster size, by column
// prefix: floor8 is cluster_read with clusters of 8 CTAs. Each is loaded
// per N, for clusters that hold a row of N (Config.MaxN).
var clusterKernels = map[string]string{"floor": "cluster_read", "cgvr": "gvr_topk_cluster", "cfallback": "topk_fallback_cluster", "gfallback": "topk_fallback_cluster"}

// clusterOf splits a cluster kernel's column name (cgvr16, gfallback16x4)
// into its prefix (cgvr) and cluster size (16); c is 0 for another kernel.
func clusterOf(name string) (prefix string, c int) {
	i := strings.IndexAny(name, "0123456789")
	if i < 0 || clusterKernels[name[:i]] == "" {
		return "", 0
	}
	size, _, _ := strings.Cut(name[i:], "x")
	c, err := strconv.Atoi(size)
	if err != nil {
		return "", 0
	}
	return name[:i], c
}

// groupsOf is how many clusters share a row in a gfallback column
// (gfallback16x4: 4), 0 for another kernel.
func groupsOf(name string) int {
	if p, _ := clusterOf(name); p != "gfallback" {
		return 0
	}
	_, g, _ := strings.Cut(name, "x")
	n, _ := strconv.Atoi(g)
	return n
}

// isFloor reports whether column name is a floor kernel's (cluster_read).
func isFloor(name string) bool {
	p, _ := clusterOf(name)
	return p == "floor"
}

// A column is a kernel timed one way: its name is the kernel's (gvr,
// cgvr16, auto), then ".bf16" or ".f16" for rows of 16-bit scores (-scores)
// and ".bf16/f32" for the same values stored as float32 (the fair float32
// side: rounding makes ties, which cost time of their own),
// "+pages" for the fused page-table output (-pages), "+mbar" for a
// cluster Top-K kernel whose rounds signal with mbarriers
// (-mbarrier-rounds: gen.Config.MbarrierRounds), then "+keep" for one
// that keeps a long row's excess's high vectors (-keep-over:
// gen.Config.KeepOver), or "+sure" for a GVR kernel that sets apart the
// candidates sure to be in the Top-K (-sure-set: gen.Config.SureSet).
type column struct {
	kernel string     // gvr, cgvr16, auto...
	scores topk.DType // the rows' score type
	wide   bool       // the 16-bit rows' values stored as float32
	pages  bool       // the kernel also writes the page-table output
	mbar   bool       // MbarrierRounds
	keep   bool       // KeepOver
	sure   bool       // SureSet
}

func parseColumn(name string) column {
	c := column{kernel: name}
	if k, ok := strings.CutSuffix(name, "+sure"); ok {
		c.kernel, c.sure = k, true
	}
	if k, ok := strings.CutSuffix(c.kernel, "+keep"); ok {
		c.kernel, c.keep = k, true
	}
	if k, ok := strings.CutSuffix(c.kernel, "+pages"); ok {
		c.kernel, c.pages = k, true
	}
	if k, ok := strings.CutSuffix(c.kernel, "+mbar"); ok {
		c.kernel, c.mbar = k, true
	}
	if k, ok := strings.CutSuffix(c.kernel, "/f32"); ok {
		c.kernel, c.wide = k, true
	}
	for _, d := range []topk.DType{topk.Float16, topk.BFloat16} {
		if k, ok := strings.CutSuffix(c.kernel, "."+d.ScoreType().String()); ok {
			c.kernel, c.scores = k, d
		}
	}
	return c
}

// kernelScores is the score type the column's kernel reads.
func (c column) kernelScores() topk.DType {
	if c.wide {
		return topk.Float32
	}
	return c.scores
}

// columns expands the kernels into the table's columns: each kernel on
// float32 rows, on rows of each 16-bit type, with the page-table output,
// a cluster Top-K kernel with mbarrier rounds and with the keep (each of
// its plain and +mbar columns), and a GVR kernel with the sure set (each
// of its plain and +mbar columns); the floor kernels only as they are.
func columns(kernels []string, scores []topk.DType, pages, mbar, keep, sure bool) []string {
	var out []string
	gvr := func(k string) bool {
		p, _ := clusterOf(k)
		return p == "cgvr" || p == "cfallback" || p == "gfallback" || k == "gvr" || k == "fallback"
	}
	for _, k := range kernels {
		out = append(out, k)
		if isFloor(k) {
			continue
		}
		if sure && gvr(k) {
			out = append(out, k+"+sure")
		}
		if p, _ := clusterOf(k); p != "" {
			if keep {
				out = append(out, k+"+keep")
			}
			if mbar {
				out = append(out, k+"+mbar")
			}
			if mbar && keep {
				out = append(out, k+"+mbar+keep")
			}
			if mbar && sure {
				out = append(out, k+"+mbar+sure")
			}
		}
		for _, d := range scores {
			if d != topk.Float32 {
				out = append(out, k+"."+d.ScoreType().String(), k+"."+d.ScoreType().String()+"/f32")
			}
		}
		if pages {
			out = append(out, k+"+pages")
		}
	}
	return out
}
