package protocol

import (
	"strings"
	"testing"
)

// TestMetaVerifyTokenOfExactlyTheLimitIsAccepted: the verify_token option may be up to 1024
// bytes, that length included; 1025 is refused.
func TestMetaVerifyTokenOfExactlyTheLimitIsAccepted(t *testing.T) {
	t.Parallel()
	validate := Meta().ValidateOptions
	if err := validate(map[string]string{"verify_token": strings.Repeat("t", 1024)}); err != nil {
		t.Fatalf("a 1024-byte verify_token was refused: %v", err)
	}
	if err := validate(map[string]string{"verify_token": strings.Repeat("t", 1025)}); err == nil {
		t.Fatal("a 1025-byte verify_token was accepted")
	}
}
