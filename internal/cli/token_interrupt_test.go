package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// interruptingWriter is a standard output whose write is interrupted (Ctrl-C as the token is
// printed to a stuck terminal or pipe) and then fails.
type interruptingWriter struct{ cancel context.CancelFunc }

func (w interruptingWriter) Write([]byte) (int, error) {
	w.cancel()
	return 0, errors.New("write interrupted")
}

// TestTokenCreateRevokesAfterAnInterrupt: revokeUnseen runs "even after an interrupt, since
// the token exists either way". TestTokenCreateRevokesATokenItCouldNotPrint fails the write
// with the command's context live; here the interrupt has ended it by then, and the revoke
// must still happen, not fail with the cancelled context and leave a live token nobody saw.
func TestTokenCreateRevokesAfterAnInterrupt(t *testing.T) {
	addr, _, _ := serverWithToken(t, "first", "verify:acme-*")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var errOut strings.Builder
	err := tokenCreate(ctx, env{stdin: strings.NewReader(""), stdout: interruptingWriter{cancel}, stderr: &errOut},
		[]string{"--name", "interrupted", "--scope", "verify:acme-*", "--server", addr})
	if err == nil || !strings.Contains(err.Error(), "was revoked") {
		t.Errorf("token create interrupted while printing: %v; want it to say the token was revoked", err)
	}
	interrupted := tokensNamed(t, addr, "interrupted")
	if len(interrupted) == 0 {
		t.Fatal("token list has no token named interrupted")
	}
	for _, tok := range interrupted {
		if tok.RevokedAt == "" {
			t.Errorf("token %s, interrupted while printed, is live and nobody saw its secret", tok.ID)
		}
	}
}
