package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSecretRetireWarnsWhenNoSecretIsLeft: retiring the last secret in force leaves the
// endpoint answering every delivery UNAVAILABLE until one is added; the command said nothing
// of it. It now warns on standard error, and only then: retiring the old secret of a rotation
// is silent.
func TestSecretRetireWarnsWhenNoSecretIsLeft(t *testing.T) {
	remote, must := startTestServer(t)
	must("", "endpoint", "create", "--id", "gh", "--provider", "github")
	secretID := func(out string) string {
		var added struct {
			Secret struct {
				ID string `json:"id"`
			} `json:"secret"`
		}
		if err := json.Unmarshal([]byte(out), &added); err != nil || added.Secret.ID == "" {
			t.Fatalf("secret add printed %s (%v)", out, err)
		}
		return added.Secret.ID
	}
	old := secretID(must("first-secret", "secret", "add", "--endpoint", "gh"))
	current := secretID(must("second-secret", "secret", "add", "--endpoint", "gh"))
	retire := func(id string) string {
		t.Helper()
		code, _, errOut := run(t, "", append([]string{"secret", "retire", "--endpoint", "gh", "--id", id}, remote...)...)
		if code != 0 {
			t.Fatalf("secret retire exited %d: %s", code, errOut)
		}
		return errOut
	}
	if errOut := retire(old); strings.Contains(errOut, "warning") {
		t.Errorf("retiring one of two secrets warned: %q", errOut)
	}
	if errOut := retire(current); !strings.Contains(errOut, "no secret in force") || !strings.Contains(errOut, "UNAVAILABLE") {
		t.Errorf("retiring the last secret in force said %q; want a warning that deliveries are answered UNAVAILABLE", errOut)
	}
}
