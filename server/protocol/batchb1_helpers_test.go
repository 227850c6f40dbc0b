package protocol

import "testing"

// b1CheckHeaderMutationRejected replaces byte pos of the named (signed) header of a delivery we
// signed and checks the result is rejected. Unlike checkMutation it allows rejections before
// the signature check, such as a timestamp that no longer parses.
func b1CheckHeaderMutationRejected(t *testing.T, p *Protocol, keys []Key, params Params, req *Request, name string, pos uint16, repl byte) {
	t.Helper()
	orig := header(req, name)
	if len(orig) == 0 {
		t.Fatalf("Sign produced no %s", name)
	}
	i := int(pos) % len(orig)
	if orig[i] == repl {
		return
	}
	mutated := []byte(orig)
	mutated[i] = repl
	res, err := p.Verify(withHeader(req, name, string(mutated)), keys, params)
	if err == nil {
		t.Fatalf("accepted with %s byte %d changed to %q: %+v", name, i, repl, res)
	}
	checkAnswer(t, err)
}
