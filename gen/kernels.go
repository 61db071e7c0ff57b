package gen

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gvr-go/gvr/ptx"
)

// Kernel is one generated kernel: its built module and how to launch it.
type Kernel struct {
	Name   string      // the .entry name
	Doc    string      // one line: what it does and its parameters
	Config Config      // the configuration it was generated for
	Module *ptx.Module // built and verified
	Launch ptx.Launch  // how to launch it: block, cluster, shared memory, named parameters
}

// PTX is the kernel's module as text.
func (k *Kernel) PTX() string { return ptx.Text(k.Module) }

type generator struct {
	doc     string
	gen     func(Config) (*Kernel, error)
	cluster bool // one row per thread-block cluster of Config.Cluster CTAs
	topk    bool // a Top-K kernel (its shared memory: newTopKShared)
	// predicted: a Top-K kernel with a prediction (gvr_topk's parameters),
	// whose shared memory has no sample histogram.
	predicted bool
}

var generators = map[string]generator{
	"count_ge":      {doc: "block-wide count of elements >= a threshold per row (float4 loads, unaligned rows)", gen: genCountGE},
	"warp_reduce":   {doc: "warp add/min/max of u32 values (redux.sync, or shuffles where the target lacks it)", gen: genWarpReduce},
	"block_scan":    {doc: "block-wide exclusive prefix sum of u32 values per row", gen: genBlockScan},
	"gvr_topk":      {doc: "GVR Top-K per row, guided by the previous step's Top-K indices", gen: genGVR, topk: true, predicted: true},
	"topk_fallback": {doc: "Top-K per row without a prediction: GVR with a guess from a strided sample", gen: genFallback, topk: true},
	"topk_radix":    {doc: "Top-K per row by exact radix select over the row", gen: genRadix, topk: true},
	"gvr_topk_cluster": {doc: "gvr_topk with one row per cluster of Cluster CTAs: the row read into shared memory once, counts combined over DSMEM (sm_90+)",
		gen: genGVRCluster, cluster: true, topk: true, predicted: true},
	"topk_fallback_cluster": {doc: "topk_fallback with one row per cluster of Cluster CTAs: the row read into shared memory once (sm_90+)",
		gen: genFallbackCluster, cluster: true, topk: true},
	"cluster_count_ge": {doc: "count_ge with one row per cluster of Cluster CTAs: slices bulk-copied into shared memory, counts combined over DSMEM (sm_90+)",
		gen: genClusterCountGE, cluster: true},
	"cluster_read": {doc: "a cluster's CTAs bulk-copy their slices of a row into shared memory, nothing else: the floor of a cluster kernel (sm_90+)",
		gen: genClusterRead, cluster: true},
	"hold": {doc: "every thread spins until %globaltimer has gone ns nanoseconds past its start, touching no memory: a stream held busy on the GPU", gen: genHold},
}

// ErrSharedMemory is in the error of a kernel that needs more shared
// memory per CTA than its target has (errors.Is).
var ErrSharedMemory = errors.New("not enough shared memory")

// Names lists the kernels Generate knows, sorted.
func Names() []string {
	names := make([]string, 0, len(generators))
	for n := range generators {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Describe is the one-line description of kernel name.
func Describe(name string) string { return generators[name].doc }

// Generate builds kernel name for cfg.
func Generate(name string, cfg Config) (*Kernel, error) {
	g, ok := generators[name]
	if !ok {
		return nil, fmt.Errorf("unknown kernel %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kernel %s: %w", name, err)
	}
	if g.cluster {
		if err := checkCluster(name, cfg); err != nil {
			return nil, fmt.Errorf("kernel %s (%v): %w", name, cfg, err)
		}
	} else if cfg.Cluster > 1 || cfg.MaxN != 0 {
		return nil, fmt.Errorf("kernel %s (%v): Cluster and MaxN are for the cluster kernels; %s runs one CTA per row", name, cfg, name)
	}
	if cfg.MbarrierRounds && !(g.cluster && g.topk) {
		return nil, fmt.Errorf("kernel %s (%v): MbarrierRounds is for the cluster Top-K kernels", name, cfg)
	}
	if cfg.Groups > 1 && name != "topk_fallback_cluster" {
		return nil, fmt.Errorf("kernel %s (%v): Groups is for topk_fallback_cluster", name, cfg)
	}
	if cfg.KeepOver && !(g.cluster && g.topk) {
		return nil, fmt.Errorf("kernel %s (%v): KeepOver is for the cluster Top-K kernels", name, cfg)
	}
	if cfg.SureSet && !g.topk {
		return nil, fmt.Errorf("kernel %s (%v): SureSet is for the Top-K kernels", name, cfg)
	}
	if cfg.Scores != Float32 && !g.topk {
		return nil, fmt.Errorf("kernel %s (%v): Scores = %v is for the Top-K kernels; %s reads float32", name, cfg, cfg.Scores, name)
	}
	k, err := g.gen(cfg)
	if err != nil {
		return nil, fmt.Errorf("kernel %s (%v): %w", name, cfg, err)
	}
	k.Doc = g.doc
	k.Module.Header = append([]string{
		fmt.Sprintf("kernel %s: %s", name, g.doc),
		fmt.Sprintf("config: %v", cfg),
		fmt.Sprintf("launch: %d threads per CTA, %d bytes of dynamic shared memory", k.Launch.Block, k.Launch.SharedBytes),
	}, k.Module.Header...)
	if limit := MaxSharedPerBlock(cfg.Target); k.Launch.SharedBytes > limit {
		return nil, fmt.Errorf("kernel %s (%v): %w: it needs %d bytes, %s allows %d per block",
			name, cfg, ErrSharedMemory, k.Launch.SharedBytes, cfg.Target.Name, limit)
	}
	return k, nil
}

// kernelModule starts a module holding one entry called name, with its
// dynamic shared array.
func kernelModule(name string, cfg Config) (*ptx.Module, *ptx.Entry, *ptx.Var) {
	m := ptx.NewModule(cfg.Target)
	// Aligned as the strictest region in it (a cluster's slice: sliceAlign),
	// so that a region's offset aligns its address.
	smemVar := m.ExternShared(name+"_smem", sliceAlign)
	e := m.NewEntry(name)
	if cfg.DependentLaunch {
		// Nothing touches memory before the kernel before this one has
		// ended. (The kernel after it may be scheduled from Phase 4 on:
		// body.)
		e.GridDepWait()
	}
	return m, e, smemVar
}

// finish builds the module and wraps it as a Kernel.
func finish(name string, cfg Config, m *ptx.Module, c *cta) (*Kernel, error) {
	c.e.Ret()
	if cfg.Groups > 1 {
		// A row's clusters wait for each other's counts and candidates
		// through the workspace (groups.go).
		c.e.Cooperative = cfg.Groups * cfg.Cluster
	}
	if err := m.Build(); err != nil {
		return nil, err
	}
	l, err := ptx.LaunchOf(m, name, c.smem.size)
	if err != nil {
		return nil, err
	}
	return &Kernel{Name: name, Config: cfg, Module: m, Launch: l}, nil
}

// pointerParam declares a .u64 parameter holding a global address aligned
// to align bytes (the elements the kernel reads or writes there); the
// launch contract carries the alignment, so a launcher can refuse a
// misaligned address instead of the kernel faulting on it.
func pointerParam(e *ptx.Entry, name string, align int) *ptx.Param {
	p := e.Param(name, ptx.U64)
	p.PtrAlign = align
	return p
}

// globalParam declares a pointer parameter to 4-byte elements, loads it
// and converts it to a global address. Every parameter is 64 bits wide
// (the kernel ABI).
func (c *cta) globalParam(name string) ptx.Reg {
	p := c.e.LdParam(pointerParam(c.e, name, 4))
	g := c.u64()
	c.e.CvtaToGlobal(g, p)
	return g
}

// elemAddr returns base + idx*size as a global address.
func (c *cta) elemAddr(base, idx ptx.Reg, size int) ptx.Addr {
	a := c.u64()
	c.e.MulWide(a, idx, ptx.Imm(int64(size)))
	c.e.Add(a, a, base)
	return ptx.At(a, 0)
}

// rowID is the row this CTA works on: %ctaid.x, one CTA per row, or in a
// cluster kernel %clusterid.x, one cluster per row (divided by the
// groups where several clusters share a row).
func (c *cta) rowID() ptx.Reg {
	r := c.u32()
	if c.cluster > 0 {
		c.e.Mov(r, ptx.ClusterIDX)
		if c.groups > 1 {
			c.e.Div(r, r, ptx.Imm(int64(c.groups)))
		}
	} else {
		c.e.Mov(r, ptx.CtaIDX)
	}
	return r
}

// genCountGE: count_ge(scores, row_stride, lengths, thresholds, counts).
// Row r is the lengths[r] floats at scores + 4*r*row_stride; counts[r] is
// the number of them >= thresholds[r] (or NaN).
func genCountGE(cfg Config) (*Kernel, error) {
	m, e, sv := kernelModule("count_ge", cfg)
	scores, strideP := pointerParam(e, "scores", 4), e.Param("row_stride", ptx.U64)
	_ = scores
	c := newCTA(e, cfg.Target, cfg.BlockSize, sv)
	x := c.u64()
	e.CvtaToGlobal(x, e.LdParam(scores))
	stride := e.LdParam(strideP)
	lengths, thresholds, counts := c.globalParam("lengths"), c.globalParam("thresholds"), c.globalParam("counts")
	scratch := c.smem.alloc("warp_totals", 4*c.warps(), 4)

	r := c.rowID()
	row := c.rowAddr(x, stride, r)
	n := c.u32()
	e.Ld(ptx.SpaceGlobal, n, c.elemAddr(lengths, r, 4))
	thr := c.f32()
	e.Ld(ptx.SpaceGlobal, thr, c.elemAddr(thresholds, r, 4))
	cnt := c.countGE(row, n, thr, cfg.unroll())
	total := c.blockReduce("add", cnt, scratch)
	e.If(c.setp(ptx.EQ, c.tid, ptx.Imm(0)), func() {
		e.St(ptx.SpaceGlobal, ptx.U32, c.elemAddr(counts, r, 4), total)
	})
	return finish("count_ge", cfg, m, c)
}

// rowAddr is base + 4*row*stride.
func (c *cta) rowAddr(base, stride, row ptx.Reg) ptx.Reg { return c.rowAddrOf(base, stride, row, 4) }

// rowAddrOf is rowAddr for elements of size bytes.
func (c *cta) rowAddrOf(base, stride, row ptx.Reg, size int) ptx.Reg {
	r64 := c.u64()
	c.e.Cvt(r64, row)
	a := c.u64()
	c.e.Mul(a, r64, stride)
	c.e.Mad(a, a, ptx.Imm(int64(size)), base)
	return a
}

// genWarpReduce: warp_reduce(in, out). Thread g = ctaid*BlockSize + tid
// reads in[g]; lane 0 of each warp w (global warp index) writes the warp's
// sum, min and max to out[3w], out[3w+1], out[3w+2].
func genWarpReduce(cfg Config) (*Kernel, error) {
	m, e, sv := kernelModule("warp_reduce", cfg)
	c := newCTA(e, cfg.Target, cfg.BlockSize, sv)
	in, out := c.globalParam("in"), c.globalParam("out")
	g := c.u32()
	e.Mad(g, c.rowID(), ptx.Imm(int64(cfg.BlockSize)), c.tid)
	v := c.u32()
	e.Ld(ptx.SpaceGlobal, v, c.elemAddr(in, g, 4))
	sum, lo, hi := c.warpReduce("add", v), c.warpReduce("min", v), c.warpReduce("max", v)
	e.If(c.setp(ptx.EQ, c.lane, ptx.Imm(0)), func() {
		w := c.u32()
		e.Shr(w, g, ptx.Imm(5))
		e.Mul(w, w, ptx.Imm(3))
		a := c.elemAddr(out, w, 4)
		e.St(ptx.SpaceGlobal, ptx.U32, a, sum)
		e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(a.Base, 4), lo)
		e.St(ptx.SpaceGlobal, ptx.U32, ptx.At(a.Base, 8), hi)
	})
	return finish("warp_reduce", cfg, m, c)
}

// genHold: hold(ns). Each thread reads %globaltimer and spins until it
// has advanced ns. A launch queued behind it reaches the GPU while the
// stream is still busy, as one behind other work does, so that events
// around it time the GPU and not the host's submission (gvrbench's timed
// launches).
func genHold(cfg Config) (*Kernel, error) {
	m, e, sv := kernelModule("hold", cfg)
	ns := e.Param("ns", ptx.U64)
	c := newCTA(e, cfg.Target, cfg.BlockSize, sv)
	end, now := c.u64(), c.u64()
	e.Mov(end, ptx.GlobalTimer)
	e.Add(end, end, e.LdParam(ns))
	e.DoWhile(func() { e.Mov(now, ptx.GlobalTimer) }, func() ptx.Pred { return c.setp(ptx.LT, now, end) })
	return finish("hold", cfg, m, c)
}

// genBlockScan: block_scan(in, out, totals). CTA r scans in[r*B .. r*B+B):
// out[r*B+t] is the sum of in[r*B .. r*B+t) and totals[r] the sum of all B.
func genBlockScan(cfg Config) (*Kernel, error) {
	m, e, sv := kernelModule("block_scan", cfg)
	c := newCTA(e, cfg.Target, cfg.BlockSize, sv)
	in, out, totals := c.globalParam("in"), c.globalParam("out"), c.globalParam("totals")
	scratch := c.smem.alloc("warp_totals", 4*c.warps(), 4)
	r := c.rowID()
	g := c.u32()
	e.Mad(g, r, ptx.Imm(int64(cfg.BlockSize)), c.tid)
	v := c.u32()
	e.Ld(ptx.SpaceGlobal, v, c.elemAddr(in, g, 4))
	excl, total := c.blockExclusiveScan(v, scratch)
	e.St(ptx.SpaceGlobal, ptx.U32, c.elemAddr(out, g, 4), excl)
	e.If(c.setp(ptx.EQ, c.tid, ptx.Imm(0)), func() {
		e.St(ptx.SpaceGlobal, ptx.U32, c.elemAddr(totals, r, 4), total)
	})
	return finish("block_scan", cfg, m, c)
}
