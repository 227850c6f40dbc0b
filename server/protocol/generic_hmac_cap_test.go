package protocol

import (
	"strings"
	"testing"
)

// TestGenericHMACToleranceCapRefusalSaysHowToGoOn: an endpoint stored with a tolerance option
// over 7 days before the cap keeps it, and every update made from a read of it (endpoint
// update --disabled, to stop one in an incident) sends it back and is refused by the cap. The
// refusal must say that a stored endpoint is already held to the cap and that the update
// goes through with the options given again, the tolerance at most the cap; it named only the
// value, which the operator of such an update never gave.
func TestGenericHMACToleranceCapRefusalSaysHowToGoOn(t *testing.T) {
	t.Parallel()
	err := GenericHMAC().ValidateOptions(map[string]string{
		"template": "{timestamp}.{body}", "timestamp_header": "X-Timestamp", "tolerance": "720h"})
	if err == nil {
		t.Fatal("tolerance 720h accepted")
	}
	for _, want := range []string{`"720h"`, "168h0m0s", "stored", "already held to", "options given again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
}
