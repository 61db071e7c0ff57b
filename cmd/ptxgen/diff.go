package main

import (
	"fmt"
	"strings"
)

// A line diff for -diff: Myers' O(ND) algorithm over lines, printed as a
// unified diff. Two kernels' PTX share most of their text (the same
// generator wrote both), so D, the number of changed lines, is small next
// to N; the trace keeps 2d+1 values per step, O(D²) in all.

// contextLines is how many unchanged lines a hunk shows around a change.
const contextLines = 3

// edit is one line of an edit script: kept (' '), deleted ('-') or
// inserted ('+'), with its 0-based line number in a and in b (the next one
// for an insertion or a deletion, where the line is not in that text).
type edit struct {
	op     byte
	ai, bi int
	line   string
}

// splitLines splits text into lines without their "\n"; a final newline
// does not make an empty last line.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// lineEdits is a shortest edit script from a to b.
func lineEdits(a, b []string) []edit {
	// The common prefix and suffix need no search.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var es []edit
	for i := range pre {
		es = append(es, edit{' ', i, i, a[i]})
	}
	for _, e := range myers(a[pre:len(a)-suf], b[pre:len(b)-suf]) {
		e.ai += pre
		e.bi += pre
		es = append(es, e)
	}
	for i := range suf {
		ai, bi := len(a)-suf+i, len(b)-suf+i
		es = append(es, edit{' ', ai, bi, a[ai]})
	}
	return es
}

// myers is Myers' greedy shortest edit script ("An O(ND) Difference
// Algorithm and Its Variations", 1986). v[k] is the furthest x reached on
// diagonal k = x-y; trace[d] keeps v[-d..d] after step d, to walk back.
func myers(a, b []string) []edit {
	n, m := len(a), len(b)
	if n+m == 0 {
		return nil
	}
	off := n + m + 1
	v := make([]int, 2*off+1)
	var trace [][]int
search:
	for d := 0; d <= n+m; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: insert b[y-1]
			} else {
				x = v[off+k-1] + 1 // right: delete a[x-1]
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
				break search
			}
		}
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
	}

	// Walk back from (n, m), collecting the script in reverse.
	var rev []edit
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1] // v[-(d-1)..d-1] after step d-1
		at := func(k int) int { return prev[k+d-1] }
		k := x - y
		pk := k - 1
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			x, y = x-1, y-1
			rev = append(rev, edit{' ', x, y, a[x]})
		}
		if pk == k+1 {
			y--
			rev = append(rev, edit{'+', x, y, b[y]})
		} else {
			x--
			rev = append(rev, edit{'-', x, y, a[x]})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, edit{' ', x, y, a[x]})
	}
	es := make([]edit, len(rev))
	for i, e := range rev {
		es[len(rev)-1-i] = e
	}
	return es
}

// unifiedDiff is the unified diff (diff -u, 3 lines of context) of texts
// a and b, headed by their names; "" when they are the same.
func unifiedDiff(aName, bName, a, b string) string {
	if a == b {
		return ""
	}
	es := lineEdits(splitLines(a), splitLines(b))
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	for i := 0; i < len(es); {
		if es[i].op == ' ' {
			i++
			continue
		}
		// A hunk: from contextLines before this change to contextLines
		// after the last change that is at most 2*contextLines kept lines
		// further on.
		start := max(0, i-contextLines)
		end := i
		for j := i; j < len(es); j++ {
			if es[j].op != ' ' {
				end = j + 1
			} else if j-end >= 2*contextLines {
				break
			}
		}
		end = min(len(es), end+contextLines)
		writeHunk(&out, es[start:end])
		i = end
	}
	return out.String()
}

// writeHunk writes one hunk: its "@@ -a,n +b,m @@" header and its lines.
func writeHunk(out *strings.Builder, es []edit) {
	na, nb := 0, 0
	for _, e := range es {
		if e.op != '+' {
			na++
		}
		if e.op != '-' {
			nb++
		}
	}
	// Lines count from 1; an empty range names the line before it.
	as, bs := es[0].ai+1, es[0].bi+1
	if na == 0 {
		as--
	}
	if nb == 0 {
		bs--
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(as, na), hunkRange(bs, nb))
	for _, e := range es {
		out.WriteByte(e.op)
		out.WriteString(e.line)
		out.WriteByte('\n')
	}
}

func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
