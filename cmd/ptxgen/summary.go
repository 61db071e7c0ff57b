package main

import (
	"fmt"
	"strings"

	"github.com/gvr-go/gvr/gen"
	"github.com/gvr-go/gvr/ptx"
)

// -summary: what a person inspecting a kernel looks at first. The phases
// come from the comments the generators put in the body, so they follow
// the generator without a list kept here: a comment that starts with
// phaseMarker ("Phase 2: secant threshold search") starts a phase, and any
// other comment ("radix select: digit bits [21, 32)") a step within it.
const phaseMarker = "Phase "

// section is a stretch of an entry's body between two markers.
type section struct {
	name   string
	step   bool // a step within the phase before it
	insts  int
	issued int64 // warp instructions issued there on -row's row
}

// label is the section's line in the summary: a step is indented below
// its phase.
func (s section) label() string {
	if s.step {
		return "    " + s.name
	}
	return "  " + s.name
}

// sections counts e's instructions between its comments, and the warp
// instructions issued at them (issued, one count an instruction, or nil);
// the instructions before the first are "setup". A phase's count includes
// its steps; steps before the first phase belong to setup.
func sections(e *ptx.Entry, issued []int64) []section {
	secs := []section{{name: "setup"}}
	phase := 0 // index in secs of the current phase
	i := 0     // instructions so far
	for _, s := range e.Body {
		switch s := s.(type) {
		case *ptx.Inst:
			var n int64
			if issued != nil {
				n = issued[i]
			}
			i++
			secs[len(secs)-1].insts++
			secs[len(secs)-1].issued += n
			if secs[len(secs)-1].step {
				secs[phase].insts++
				secs[phase].issued += n
			}
		case ptx.Comment:
			if strings.HasPrefix(s.Text, phaseMarker) {
				phase = len(secs)
				secs = append(secs, section{name: s.Text})
			} else {
				secs = append(secs, section{name: s.Text, step: true})
			}
		}
	}
	return secs
}

// regDecls are the .reg declarations of entry name in the module's text,
// as printed ("%r<3090>" is 3090 registers of the b32 class).
func regDecls(text, name string) []string {
	_, body, ok := strings.Cut(text, "\n.visible .entry "+name+"(")
	if !ok {
		return nil
	}
	if _, body, ok = strings.Cut(body, "\n{\n"); !ok {
		return nil
	}
	var decls []string
	for _, l := range strings.Split(body, "\n") {
		f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(l), ";"))
		if len(f) == 0 || f[0] != ".reg" {
			break
		}
		decls = append(decls, strings.Join(f, " "))
	}
	return decls
}

// summarize describes k: name, configuration, target, launch shape and
// shared memory, then per entry its parameters, register declarations and
// instruction counts per phase; where issued is given (-row), the warp
// instructions issued in each phase on a row of n too.
func summarize(k *gen.Kernel, issued []int64, n int) string {
	var b strings.Builder
	m := k.Module
	fmt.Fprintf(&b, "kernel %s: %s\n", k.Name, k.Doc)
	fmt.Fprintf(&b, "config: %v\n", k.Config)
	fmt.Fprintf(&b, "target: %s, PTX ISA %v\n", m.Target.Name, m.Version)
	fmt.Fprintf(&b, "launch: %d threads per CTA", k.Launch.Block)
	if c := k.Launch.Cooperative; c > 0 {
		fmt.Fprintf(&b, ", launched cooperatively (its groups of %d CTAs wait for each other)", c)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "shared memory: %d bytes dynamic", k.Launch.SharedBytes)
	static := 0
	for _, v := range m.Vars {
		if v.Space == ptx.SpaceShared && !v.Extern {
			static += v.Len * v.Elem.Bytes()
		}
	}
	if static > 0 {
		fmt.Fprintf(&b, ", %d bytes static", static)
	}
	b.WriteString("\n")
	text := ptx.Text(m)
	for _, e := range m.Entries {
		fmt.Fprintf(&b, "\nentry %s\n", e.Name)
		fmt.Fprintf(&b, "params (%d):\n", len(e.Params))
		width := 0
		for _, p := range e.Params {
			width = max(width, len(p.Name))
		}
		for _, p := range e.Params {
			fmt.Fprintf(&b, "  %-*s  .%s\n", width, p.Name, p.T.Name())
		}
		b.WriteString("registers:\n")
		for _, d := range regDecls(text, e.Name) {
			fmt.Fprintf(&b, "  %s\n", d)
		}
		iss := issued
		if e.Name != k.Launch.Entry {
			iss = nil // the profile is of the launch's entry
		}
		secs := sections(e, iss)
		total, width, all := 0, 0, int64(0)
		for _, s := range secs {
			if !s.step {
				total += s.insts
				all += s.issued
			}
			width = max(width, len(s.label()))
		}
		if iss == nil {
			fmt.Fprintf(&b, "instructions: %d\n", total)
			for _, s := range secs {
				fmt.Fprintf(&b, "%-*s %6d\n", width, s.label(), s.insts)
			}
			continue
		}
		fmt.Fprintf(&b, "instructions: %d; warp instructions issued on a synthetic row of %d (all its CTAs): %d\n", total, n, all)
		for _, s := range secs {
			fmt.Fprintf(&b, "%-*s %6d %10d\n", width, s.label(), s.insts, s.issued)
		}
	}
	return b.String()
}
