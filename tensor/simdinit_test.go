package tensor

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoVectorInstructionsAtInit: no package-level variable of the
// repository is initialized by an archsimd call other than the CPU
// feature queries (archsimd.X86.…). Such an initializer runs at program
// start, before any feature check, so a vector constant loaded there with
// AVX-512 instructions killed every forge binary built with
// GOEXPERIMENT=simd on CPUs without AVX-512 (SIGILL at start-up, found on
// an AVX2-only AMD EPYC host). Vector constants are loaded inside the
// kernels, after their feature check.
func TestNoVectorInstructionsAtInit(t *testing.T) {
	root := ".."
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "bin" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				for _, v := range spec.(*ast.ValueSpec).Values {
					ast.Inspect(v, func(n ast.Node) bool {
						if _, ok := n.(*ast.FuncLit); ok {
							return false // runs when called, not at init
						}
						if call, ok := n.(*ast.CallExpr); ok && vectorCall(call.Fun) {
							t.Errorf("%s: a package-level variable is initialized by an archsimd call", fset.Position(call.Pos()))
						}
						return true
					})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned %d Go files under %s: not the repository", files, root)
	}
}

// vectorCall reports whether fun is a call into archsimd other than a
// feature query: the innermost selector of fun is archsimd.Name with Name
// not X86.
func vectorCall(fun ast.Expr) bool {
	for {
		switch e := fun.(type) {
		case *ast.SelectorExpr:
			if id, ok := e.X.(*ast.Ident); ok && id.Name == "archsimd" {
				return e.Sel.Name != "X86"
			}
			fun = e.X
		case *ast.CallExpr:
			fun = e.Fun
		case *ast.IndexExpr:
			fun = e.X
		default:
			return false
		}
	}
}
