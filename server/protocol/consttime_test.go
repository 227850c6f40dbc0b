package protocol

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestComparisonsAreConstantTime backs README's "constant-time comparison" (and the style's
// "hmac.Equal, subtle.ConstantTimeCompare for every secret-derived value"), which no test of
// behaviour can see: a verifier that compared a computed MAC with the delivered one by
// bytes.Equal, or as strings, accepts and rejects exactly the same deliveries, and leaks how
// many leading bytes matched through its timing. So the protocol sources are read instead:
// no bytes.Equal or bytes.Compare, no == or != between two string(...) conversions or against
// a hex or base64 encoding. The exceptions compare no attacker input with a secret.
func TestComparisonsAreConstantTime(t *testing.T) {
	t.Parallel()
	allowed := map[string]bool{
		// The configured Ed25519 key's public half against the one its seed gives: a check of
		// the operator's secret when it is parsed, no delivery involved.
		"discord.go:discordSigningKey": true,
		// The signer (tests, `hookverify sign`) checks the bodySHA256 its caller put in the
		// URL: a hash of the body, no secret.
		"twilio.go:signTwilio": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			where := name + ":" + fn.Name.Name
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				var bad string
				switch n := n.(type) {
				case *ast.CallExpr:
					if pkg, fun := constTimeSelector(n.Fun); pkg == "bytes" && (fun == "Equal" || fun == "Compare") {
						bad = "bytes." + fun
					}
				case *ast.BinaryExpr:
					if n.Op != token.EQL && n.Op != token.NEQ {
						break
					}
					if constTimeIsStringConversion(n.X) && constTimeIsStringConversion(n.Y) {
						bad = "== between string conversions"
					} else if constTimeIsEncoding(n.X) || constTimeIsEncoding(n.Y) {
						bad = "== against an encoding"
					}
				}
				if bad != "" && !allowed[where] {
					t.Errorf("%s (%s): %s compares in variable time; use hmac.Equal or subtle.ConstantTimeCompare", fset.Position(n.Pos()), where, bad)
				}
				return true
			})
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d source files, want the package's protocols", checked)
	}
}

// constTimeSelector returns pkg and name of a call like pkg.Name(...).
func constTimeSelector(e ast.Expr) (pkg, name string) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", ""
	}
	return id.Name, sel.Sel.Name
}

// constTimeIsStringConversion reports whether e is string(x) of a non-literal x.
func constTimeIsStringConversion(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return false
	}
	id, ok := call.Fun.(*ast.Ident)
	if !ok || id.Name != "string" {
		return false
	}
	_, lit := call.Args[0].(*ast.BasicLit)
	return !lit
}

// constTimeIsEncoding reports whether e is hex.EncodeToString(...) or base64.<Encoding>.EncodeToString(...).
func constTimeIsEncoding(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "EncodeToString"
}
