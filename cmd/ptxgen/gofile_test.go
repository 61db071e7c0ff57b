package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoFile: -go writes a generated Go file that embeds the -o PTX file
// and declares its contract with every parameter, as gen gives them.
func TestGoFile(t *testing.T) {
	dir := t.TempDir()
	ptxFile, goOut := filepath.Join(dir, "radix.ptx"), filepath.Join(dir, "radix.go")
	status, _, errs := ptxgen(t, "-kernel", "topk_radix", "-arch", "sm_90", "-k", "256", "-o", ptxFile, "-go", goOut, "-package", "mykernels", "-name", "Radix")
	if status != 0 {
		t.Fatalf("status %d: %s", status, errs)
	}
	src, err := os.ReadFile(goOut)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), goOut, src, parser.ParseComments)
	if err != nil {
		t.Fatalf("the Go file does not parse: %v\n%s", err, src)
	}
	if !ast.IsGenerated(f) || f.Name.Name != "mykernels" {
		t.Errorf("generated %v, package %s; want a generated file of package mykernels", ast.IsGenerated(f), f.Name.Name)
	}
	for _, want := range []string{"\n//go:embed radix.ptx\nvar RadixPTX string\n", "var Radix = ptx.Launch{",
		`Entry:              "topk_radix"`, "SharedBytes:", `Name:     "scores",`, `Name: "row_stride",`, `Name:     "out_vals",`, "PtrAlign: 4,"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("the Go file lacks %q:\n%s", want, src)
		}
	}
	if _, err := os.Stat(ptxFile); err != nil {
		t.Errorf("the PTX file: %v", err)
	}
	if strings.Contains(string(src), "WaitsFirst") || strings.Contains(string(src), "Cooperative") {
		t.Errorf("the radix kernel's contract says WaitsFirst or Cooperative:\n%s", src)
	}

	// A contract's launch kind: a kernel that waits first for the one
	// before it, and one whose clusters wait for each other.
	grouped := filepath.Join(dir, "grouped.go")
	if status, _, errs := ptxgen(t, "-kernel", "topk_fallback_cluster", "-arch", "sm_90", "-k", "256", "-cluster", "2", "-groups", "3",
		"-dependent-launch", "-o", filepath.Join(dir, "grouped.ptx"), "-go", grouped, "-package", "k", "-name", "Grouped"); status != 0 {
		t.Fatalf("grouped: status %d: %s", status, errs)
	}
	src, _ = os.ReadFile(grouped)
	words := strings.Join(strings.Fields(string(src)), " ") // gofmt aligns the values
	for _, want := range []string{"WaitsFirst: true,", "Cooperative: 6,"} {
		if !strings.Contains(words, want) {
			t.Errorf("the grouped kernel's Go file lacks %q:\n%s", want, src)
		}
	}

	// The default package is the directory's, the default name the kernel's.
	sub := filepath.Join(dir, "topk")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if status, _, errs := ptxgen(t, "-kernel", "topk_radix", "-o", filepath.Join(sub, "k.ptx"), "-go", filepath.Join(sub, "k.go")); status != 0 {
		t.Fatalf("defaults: status %d: %s", status, errs)
	}
	src, _ = os.ReadFile(filepath.Join(sub, "k.go"))
	if !strings.Contains(string(src), "package topk\n") || !strings.Contains(string(src), "var TopkRadix = ptx.Launch{") {
		t.Errorf("defaults: want package topk and TopkRadix:\n%s", src)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-go", goOut}, "give -o"},
		{[]string{"-o", ptxFile, "-go", goOut, "-summary"}, "give -o, and neither -summary"},
		{[]string{"-o", ptxFile, "-go", filepath.Join(sub, "x.go")}, "must be in one directory"},
		{[]string{"-o", ptxFile, "-go", goOut, "-package", "p", "-name", "radix"}, "not an exported Go identifier"},
		{[]string{"-o", ptxFile, "-go", goOut, "-package", "my-kernels"}, "not a Go identifier"},
	} {
		status, _, errs := ptxgen(t, c.args...)
		if status != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("ptxgen %v: status %d, %q; want status %d and %q", c.args, status, errs, exitUsage, c.want)
		}
	}
}
