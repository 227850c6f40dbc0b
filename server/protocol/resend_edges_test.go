package protocol

import "testing"

// Resend is registered and configured under the name "resend".
func TestResendProtocolName(t *testing.T) {
	t.Parallel()
	if got := Resend().Name; got != "resend" {
		t.Fatalf("Name = %q, want resend", got)
	}
}
