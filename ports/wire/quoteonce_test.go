package wire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNothingIsEscapedTwice: no format string in the module quotes (%q)
// a word Safe has already escaped: %q escapes it again, so a far side's
// "\x1b" would print as "\\x1b". Quote the raw (clipped) word once, or
// print Safe's with %s.
func TestNothingIsEscapedTwice(t *testing.T) {
	var bad []string
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			for i, a := range call.Args {
				lit, ok := a.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				format, err := strconv.Unquote(lit.Value)
				if err != nil {
					break
				}
				for k, verb := range verbs(format) {
					j := i + 1 + k
					if verb == 'q' && j < len(call.Args) && callsSafe(call.Args[j]) {
						bad = append(bad, fset.Position(call.Args[j].Pos()).String())
					}
				}
				break // the first string literal is the format
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, bad, "%%q of a word Safe already escaped")
}

// verbs gives the verbs of a Printf format in order ('%%' is none).
func verbs(format string) []byte {
	var out []byte
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0123456789.*[]", format[i]) >= 0 {
			i++
		}
		if i < len(format) && format[i] != '%' {
			out = append(out, format[i])
		}
	}
	return out
}

// callsSafe reports whether e is a call of Safe (wire.Safe).
func callsSafe(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		return fn.Name == "Safe"
	case *ast.SelectorExpr:
		return fn.Sel.Name == "Safe"
	}
	return false
}
