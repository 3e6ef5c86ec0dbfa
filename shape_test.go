package rounds_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Limits on hand-written code (not tests, not templ's output): a function
// one reads in a sitting, a file one can hold in mind.
const (
	maxFuncLines = 100
	maxFileLines = 600
)

// TestShape: no hand-written Go file is over maxFileLines lines and no
// function in one is over maxFuncLines, but those longFuncs names.
func TestShape(t *testing.T) {
	// The functions allowed past maxFuncLines, by file and name, with why.
	longFuncs := map[string]string{
		"handlers/routes.go:Routes": "all routes in one function, so they read as one map",
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "_templ.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		path = filepath.ToSlash(path)
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("%s has %d lines, more than %d: split it where its jobs part", path, n, maxFileLines)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if _, allowed := longFuncs[path+":"+fn.Name.Name]; n > maxFuncLines && !allowed {
				t.Errorf("%s: %s has %d lines, more than %d: split it into named steps", path, fn.Name.Name, n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
