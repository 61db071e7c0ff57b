package gen

import (
	"fmt"

	"github.com/gvr-go/gvr/ptx"
)

// cta is the emission context of a kernel that runs one CTA per row: the
// entry being built, the target, the block size, and the registers every
// building block needs. Building blocks are Go functions that emit code into
// it, so a phase reads like the paper and a later cluster version can swap
// the "combine across the CTA" steps for "combine across the cluster".
type cta struct {
	e       *ptx.Entry
	target  ptx.Target
	threads int // block size, baked into the code

	tid  ptx.Reg // %tid.x
	lane ptx.Reg // tid % 32
	warp ptx.Reg // tid / 32

	smem *smem

	cluster int     // CTAs per cluster of a cluster kernel (perCluster); 0 otherwise
	groups  int     // clusters a row (perGroups; Config.Groups); 0 or 1: one
	group   ptx.Reg // u32 this cluster's part of its row (groupID), once worked out
	// clusterSynced: the wait half of the slice's cluster barrier is
	// emitted already (syncCluster), so awaitSlice leaves it out.
	clusterSynced bool

	scores ScoreType // the element type of the score rows it reads (scores.go)

	// onMark, where set, records an instrumentation mark (MarkP4Pass...)
	// at the points of a building block that a kernel wants timed.
	onMark func(int)
}

// markAt records mark i if a kernel asked for marks (onMark).
func (c *cta) markAt(i int) {
	if c.onMark != nil {
		c.onMark(i)
	}
}

// perCluster makes the kernel a cluster kernel: clusters of size CTAs
// (.reqnctapercluster), one row per cluster.
func (c *cta) perCluster(size int) {
	c.cluster = size
	c.e.ReqNCTAPerCluster = ptx.Dim3{size}
}

// perGroups makes a cluster kernel's rows shared by n clusters each:
// cluster r*n + g takes part g of row r.
func (c *cta) perGroups(n int) { c.groups = n }

// groupID is this cluster's part of its row (perGroups): %clusterid.x
// mod the groups, worked out at its first use.
func (c *cta) groupID() ptx.Reg {
	if c.group.T == ptx.TypeInvalid {
		c.group = c.u32()
		c.e.Mov(c.group, ptx.ClusterIDX)
		c.e.Rem(c.group, c.group, ptx.Imm(int64(c.groups)))
	}
	return c.group
}

const warpSize = 32

func (c *cta) warps() int { return c.threads / warpSize }

// newCTA starts a kernel body: reads %tid.x and lays out shared memory in the
// module's dynamic shared array smemVar.
func newCTA(e *ptx.Entry, target ptx.Target, threads int, smemVar *ptx.Var) *cta {
	c := &cta{e: e, target: target, threads: threads}
	e.ReqNTID = ptx.Dim3{threads}
	if threads <= 512 {
		// Two CTAs per SM: ptxas then keeps a 512-thread CTA within 64
		// registers. Left free, it gives the Top-K kernels 92 and one CTA
		// per SM, which an H100 run measured up to 22% slower at batch
		// 256-512 (docs/perf-notes.md, the radix loop). Not for 1024
		// threads: two such CTAs would leave 32 registers a thread.
		e.MinNCTAPerSM = 2
	}
	c.tid = c.u32()
	e.Mov(c.tid, ptx.TidX)
	c.lane = c.u32()
	e.And(c.lane, c.tid, ptx.Imm(warpSize-1))
	c.warp = c.u32()
	e.Shr(c.warp, c.tid, ptx.Imm(5))
	c.smem = newSmem(e, smemVar)
	return c
}

func (c *cta) u32() ptx.Reg   { return c.e.Reg(ptx.U32) }
func (c *cta) s32() ptx.Reg   { return c.e.Reg(ptx.S32) }
func (c *cta) u64() ptx.Reg   { return c.e.Reg(ptx.U64) }
func (c *cta) f32() ptx.Reg   { return c.e.Reg(ptx.F32) }
func (c *cta) pred() ptx.Pred { return c.e.Pred() }

// constU32 returns a new register holding v.
func (c *cta) constU32(v int64) ptx.Reg {
	r := c.u32()
	c.e.Mov(r, ptx.Imm(v))
	return r
}

// setp returns a new predicate a cmp b.
func (c *cta) setp(cmp ptx.Cmp, a, b ptx.Operand) ptx.Pred {
	p := c.pred()
	c.e.Setp(p, cmp, a, b)
	return p
}

// sync is the CTA-wide barrier (bar.sync 0).
func (c *cta) sync() { c.e.BarSync(0) }

// smem lays out one kernel's shared memory: regions carved out of the
// module's dynamic (.extern) shared array at compile-time offsets. Dynamic
// shared memory is used even for small kernels so that every kernel has the
// same launch contract: SharedBytes() at launch.
type smem struct {
	layout
	e    *ptx.Entry
	base ptx.Reg // u32 shared address of the array
}

// layout assigns compile-time offsets to shared-memory regions. It emits no
// code, so a Config can be checked against the target's limit before any
// kernel is built.
type layout struct{ size int }

// region is a named slice of shared memory.
type region struct {
	name  string
	off   int // bytes from the array's start
	bytes int
}

func newSmem(e *ptx.Entry, v *ptx.Var) *smem {
	s := &smem{e: e, base: e.Reg(ptx.U32)}
	e.Mov(s.base, v)
	return s
}

// alloc reserves bytes at the given alignment.
func (s *layout) alloc(name string, bytes, align int) region {
	s.size = (s.size + align - 1) / align * align
	r := region{name: name, off: s.size, bytes: bytes}
	s.size += bytes
	return r
}

// at is the address of byte offset off within region r.
func (s *smem) at(r region, off int) ptx.Addr {
	if off < 0 || off >= r.bytes {
		panic(fmt.Sprintf("gen: offset %d outside shared region %s (%d bytes)", off, r.name, r.bytes))
	}
	return ptx.At(s.base, int64(r.off+off))
}

// elem returns the address of element idx (a u32 register) of size bytes in r.
func (s *smem) elem(r region, idx ptx.Reg, size int) ptx.Addr {
	a := s.e.Reg(ptx.U32)
	s.e.Mad(a, idx, ptx.Imm(int64(size)), s.base)
	return ptx.At(a, int64(r.off))
}
