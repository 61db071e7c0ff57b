package emu

import (
	"math"
	"testing"

	"github.com/gvr-go/gvr/ptx"
)

// refShfl is PTX's shfl.sync pseudocode, for a full mask.
func refShfl(mode string, vals []uint32, lane, b, c int) uint32 {
	bval, cval, seg := b&31, c&31, c>>8&31
	maxLane := lane&seg | cval&^seg
	minLane := lane & seg
	var j int
	var ok bool
	switch mode {
	case "up":
		j = lane - bval
		ok = j >= maxLane
	case "down":
		j = lane + bval
		ok = j <= maxLane
	case "bfly":
		j = lane ^ bval
		ok = j <= maxLane
	case "idx":
		j = minLane | bval&^seg
		ok = j <= maxLane
	}
	if !ok {
		j = lane
	}
	return vals[j]
}

func TestShfl(t *testing.T) {
	for _, mode := range []ptx.ShflMode{ptx.ShflUp, ptx.ShflDown, ptx.ShflBfly, ptx.ShflIdx} {
		for _, bc := range [][2]int{{1, 0}, {1, 31}, {3, 31}, {16, 31}, {5, 0x1F}, {2, 0x181F}, {1, 0x1C00}, {7, 0x0F07}, {9, 0x1807}} {
			b, c := bc[0], bc[1]
			if mode == ptx.ShflUp && c&31 == 31 {
				c &^= 31 // up clamps at the segment start
			}
			p := threadKernel(t, ptx.SM90, func(e *ptx.Entry, tid, res ptx.Reg) {
				v := e.Reg(ptx.U32)
				e.Mul(v, tid, ptx.Imm(1000))
				e.Add(v, v, ptx.Imm(7))
				// b as a register for idx (per lane), else an immediate.
				var bo ptx.Operand = ptx.Imm(b)
				if mode == ptx.ShflIdx {
					r := e.Reg(ptx.U32)
					e.Add(r, tid, ptx.Imm(b))
					bo = r
				}
				e.Shfl(mode, res, v, bo, ptx.Imm(c), ptx.Imm(-1))
			})
			got := mustRunThreads(t, p, 64)
			for w := 0; w < 2; w++ {
				vals := make([]uint32, 32)
				for l := range vals {
					vals[l] = uint32(32*w+l)*1000 + 7
				}
				for l := 0; l < 32; l++ {
					bl := b
					if mode == ptx.ShflIdx {
						bl = 32*w + l + b
					}
					if want := refShfl(string(mode), vals, l, bl, c); got[32*w+l] != want {
						t.Errorf("shfl.%s b=%d c=%#x lane %d: %d, want %d", mode, b, c, 32*w+l, got[32*w+l], want)
					}
				}
			}
		}
	}
}

// Lanes in a divergent branch shuffle among themselves with a partial
// mask; a source lane outside the mask gives the poison value.
func TestShflPartialMask(t *testing.T) {
	p := threadKernel(t, ptx.SM90, func(e *ptx.Entry, tid, res ptx.Reg) {
		lane, v := e.Reg(ptx.U32), e.Reg(ptx.U32)
		e.And(lane, tid, ptx.Imm(31))
		e.Add(v, tid, ptx.Imm(100))
		lo := e.Pred()
		e.Setp(lo, ptx.LT, lane, ptx.Imm(16))
		e.IfElse(lo, func() {
			e.Shfl(ptx.ShflDown, res, v, ptx.Imm(4), ptx.Imm(31), ptx.Imm(0xFFFF))
		}, func() {
			e.Shfl(ptx.ShflBfly, res, v, ptx.Imm(1), ptx.Imm(31), ptx.Imm(-65536))
		})
	})
	got := mustRunThreads(t, p, 32)
	for l := range 32 {
		var want uint32
		switch {
		case l < 12:
			want = uint32(l + 4 + 100)
		case l < 16:
			want = poison // lanes 16-19 are not in the mask
		default:
			want = uint32(l ^ 1 + 100)
		}
		if got[l] != want {
			t.Errorf("lane %d: %#x, want %#x", l, got[l], want)
		}
	}
}

// One instruction, two member masks: each half of the warp is its own
// collective, as PTX allows.
func TestCollectiveSplitMasks(t *testing.T) {
	p := threadKernel(t, ptx.SM90, func(e *ptx.Entry, tid, res ptx.Reg) {
		hi, mk := e.Pred(), e.Reg(ptx.U32)
		e.Setp(hi, ptx.GE, tid, ptx.Imm(16))
		e.Selp(mk, ptx.Imm(-65536), ptx.Imm(0xFFFF), hi)
		e.Redux("add", res, tid, mk)
	})
	got := mustRunThreads(t, p, 32)
	for l, v := range got {
		want := uint32(120) // 0+...+15
		if l >= 16 {
			want = 120 + 256
		}
		if v != want {
			t.Errorf("lane %d: %d, want %d", l, v, want)
		}
	}
}

func TestVote(t *testing.T) {
	// Lane l votes p = l%3 == 0; lanes 8-15 vote under mask 0xFF00,
	// lanes 0-7 and 16-31 under the rest.
	p := threadKernel(t, ptx.SM90, func(e *ptx.Entry, tid, res ptx.Reg) {
		r, mk, b := e.Reg(ptx.U32), e.Reg(ptx.U32), e.Reg(ptx.U32)
		p, q, all, anyp, uni := e.Pred(), e.Pred(), e.Pred(), e.Pred(), e.Pred()
		e.Rem(r, tid, ptx.Imm(3))
		e.Setp(p, ptx.EQ, r, ptx.Imm(0))
		e.Shr(r, tid, ptx.Imm(3))
		e.Setp(q, ptx.EQ, r, ptx.Imm(1))
		e.Selp(mk, ptx.Imm(0xFF00), ptx.Imm(^0xFF00), q)
		e.VoteBallot(b, p, mk)
		e.VoteAll(all, p, mk)
		e.VoteAny(anyp, p, mk)
		e.Emit("vote", []string{"sync", "uni", "pred"}, uni, p.Not(), mk)
		e.Mov(res, b)
		for i, x := range []ptx.Pred{all, anyp, uni} {
			e.Guarded(x, func() { e.Or(res, res, ptx.Imm(1<<(29+i))) })
		}
	})
	got := mustRunThreads(t, p, 32)
	var votes uint32
	for l := range 32 {
		if l%3 == 0 {
			votes |= 1 << l
		}
	}
	for l := range 32 {
		m := ^uint32(0xFF00)
		if l/8 == 1 {
			m = 0xFF00
		}
		want := votes & m // ballot: bits 29-31 are 0 in both masks
		if votes&m == m {
			want |= 1 << 29
		}
		if votes&m != 0 {
			want |= 1 << 30
		}
		if votes&m == 0 || votes&m == m {
			want |= 1 << 31
		}
		if got[l] != want {
			t.Errorf("lane %d: %#x, want %#x", l, got[l], want)
		}
	}
}

func TestReduxInteger(t *testing.T) {
	vals := func(l int) uint32 { return uint32(l*2654435761) ^ uint32(l) }
	for _, c := range []struct {
		op  string
		t   ptx.Type
		ref func(a, b uint32) uint32
	}{
		{"add", ptx.U32, func(a, b uint32) uint32 { return a + b }},
		{"min", ptx.U32, func(a, b uint32) uint32 { return min(a, b) }},
		{"max", ptx.U32, func(a, b uint32) uint32 { return max(a, b) }},
		{"min", ptx.S32, func(a, b uint32) uint32 { return uint32(min(int32(a), int32(b))) }},
		{"max", ptx.S32, func(a, b uint32) uint32 { return uint32(max(int32(a), int32(b))) }},
		{"and", ptx.B32, func(a, b uint32) uint32 { return a & b }},
		{"or", ptx.B32, func(a, b uint32) uint32 { return a | b }},
		{"xor", ptx.B32, func(a, b uint32) uint32 { return a ^ b }},
	} {
		p := threadKernel(t, ptx.SM90, func(e *ptx.Entry, tid, res ptx.Reg) {
			v, d, x := e.Reg(c.t), e.Reg(c.t), e.Reg(ptx.U32)
			e.Mul(x, tid, ptx.Imm(2654435761))
			e.Xor(res, tid, x)
			e.Mov(v, res)
			e.Redux(c.op, d, v, ptx.Imm(-1))
			e.Mov(res, d)
		})
		got := mustRunThreads(t, p, 64)
		for w := range 2 {
			want := vals(32 * w)
			for l := 1; l < 32; l++ {
				want = c.ref(want, vals(32*w+l))
			}
			for l := range 32 {
				if got[32*w+l] != want {
					t.Errorf("redux.%s.%s lane %d: %#x, want %#x", c.op, c.t, 32*w+l, got[32*w+l], want)
					break
				}
			}
		}
	}
}

// redux.sync.{min,max}{.abs}{.NaN}.f32 (sm_100a): NaNs are ignored unless
// .NaN; +0 > -0; .abs compares magnitudes.
func TestReduxFloat(t *testing.T) {
	f := func(x float32) uint32 { return math.Float32bits(x) }
	cases := []struct {
		name  string
		in    []uint32 // lane l gets in[l % len]
		mods  []string
		wants uint32
	}{
		{"max", []uint32{f(1), f(-5), f(3)}, []string{"max"}, f(3)},
		{"min", []uint32{f(1), f(-5), f(3)}, []string{"min"}, f(-5)},
		{"max zeros", []uint32{0x80000000, 0}, []string{"max"}, 0},
		{"min zeros", []uint32{0, 0x80000000}, []string{"min"}, 0x80000000},
		{"max ignores NaN", []uint32{0xFFC00000, f(2), f(-1)}, []string{"max"}, f(2)},
		{"all NaN", []uint32{0xFFC00000, 0x7F800001}, []string{"max"}, nan32},
		{"NaN", []uint32{0xFFC00000, f(2)}, []string{"max", "NaN"}, nan32},
		{"abs", []uint32{f(1), f(-5), f(3)}, []string{"max", "abs"}, f(5)},
		{"abs min", []uint32{f(-1), f(-5), f(3)}, []string{"min", "abs"}, f(1)},
	}
	for _, c := range cases {
		m := ptx.NewModule(ptx.SM100a)
		e := m.NewEntry("k")
		in := e.LdParam(e.Param("in", ptx.U64))
		out := e.LdParam(e.Param("out", ptx.U64))
		tid, a := e.Reg(ptx.U32), e.Reg(ptx.U64)
		v, d := e.Reg(ptx.F32), e.Reg(ptx.F32)
		e.Mov(tid, ptx.TidX)
		e.MulWide(a, tid, ptx.Imm(4))
		e.Add(a, a, in)
		e.Ld(ptx.SpaceGlobal, v, ptx.At(a, 0))
		e.Emit("redux", append(append([]string{"sync"}, c.mods...), "f32"), d, v, ptx.Imm(-1))
		e.Sub(a, a, in)
		e.Add(a, a, out)
		e.St(ptx.SpaceGlobal, ptx.F32, ptx.At(a, 0), d)
		e.Ret()
		p := mustLoad(t, m)
		mem := NewMemory()
		vals := make([]uint32, 32)
		for l := range vals {
			vals[l] = c.in[l%len(c.in)]
		}
		inA, outA := mem.AllocU32s(vals), mem.Alloc(128, 0)
		if _, err := p.Run(mem, Launch{Grid: [3]int{1}, Args: mustArgs(t, p, "k", 32, 0).Set("in", inA).Set("out", outA)}); err != nil {
			t.Fatal(err)
		}
		got := mustReadU32s(t, mem, outA, 32)
		if got[0] != c.wants || got[31] != c.wants {
			t.Errorf("%s: %#x, want %#x", c.name, got[0], c.wants)
		}
	}
}

// activemask names the lanes executing together; bar.warp.sync with the
// full mask is a meeting point of the whole warp.
func TestActivemaskAndWarpSync(t *testing.T) {
	p := threadKernel(t, ptx.SM90, func(e *ptx.Entry, tid, res ptx.Reg) {
		lane := e.Reg(ptx.U32)
		e.And(lane, tid, ptx.Imm(31))
		odd := e.Pred()
		e.Setp(odd, ptx.EQ, lane, ptx.Imm(5))
		e.IfElse(odd, func() { e.Activemask(res) }, func() { e.Activemask(res) })
		e.BarWarpSync(ptx.Imm(-1))
		all := e.Reg(ptx.U32)
		e.Activemask(all)
		e.Popc(all, all)
		e.Shl(all, all, ptx.Imm(0)) // keep all a b32
		e.Xor(res, res, all)
	})
	got := mustRunThreads(t, p, 32)
	for l, v := range got {
		want := uint32(0xFFFFFFDF) ^ 32
		if l == 5 {
			want = 0x20 ^ 32
		}
		if v != want {
			t.Errorf("lane %d: %#x, want %#x", l, v, want)
		}
	}
}

// TestMatchAny: each lane gets the mask of the lanes with its value, among
// the member lanes (here the active ones: lanes 0-23, inside a branch).
func TestMatchAny(t *testing.T) {
	p := threadKernel(t, ptx.SM90, func(e *ptx.Entry, tid, res ptx.Reg) {
		lane := e.Reg(ptx.U32)
		e.And(lane, tid, ptx.Imm(31))
		v := e.Reg(ptx.U32)
		e.Rem(v, lane, ptx.Imm(5)) // values 0..4
		e.Mov(res, ptx.Imm(0xFFFFFFFF))
		in := e.Pred()
		e.Setp(in, ptx.LT, lane, ptx.Imm(24))
		e.If(in, func() {
			m := e.Reg(ptx.U32)
			e.Activemask(m)
			e.MatchAny(res, v, m)
		})
	})
	got := mustRunThreads(t, p, 32)
	for l, g := range got {
		var want uint32 = 0xFFFFFFFF
		if l < 24 {
			want = 0
			for j := 0; j < 24; j++ {
				if j%5 == l%5 {
					want |= 1 << j
				}
			}
		}
		if g != want {
			t.Errorf("lane %d: %#x, want %#x", l, g, want)
		}
	}
}
