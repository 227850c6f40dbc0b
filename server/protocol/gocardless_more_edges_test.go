package protocol

import (
	"strings"
	"testing"
)

// TestGoCardlessJoinedIDsUpToTheLimitStayReadable: the identity is the joined event ids
// unless they are over 256 bytes; a batch joining to exactly 256 bytes keeps its readable ids
// (changing that would change the identity, and so the deduplication, of such a batch), one
// byte more is hashed.
func TestGoCardlessJoinedIDsUpToTheLimitStayReadable(t *testing.T) {
	t.Parallel()
	p := GoCardless()
	keys := keysFor(t, p, gocardlessSecret)
	idsOf := func(last string) string {
		return strings.Repeat("EV00BD05S5VM2T,", 16) + last
	}
	body := func(joined string) string {
		ids := strings.Split(joined, ",")
		return `{"events":[{"id":"` + strings.Join(ids, `"},{"id":"`) + `"}]}`
	}
	exact := idsOf("EV0000000000000X") // 16*15 + 16 = 256 bytes
	if len(exact) != 256 {
		t.Fatalf("fixture joins to %d bytes", len(exact))
	}
	if got := eventIDOf(t, p, keys, gocardlessSigned(t, body(exact), gocardlessSecret), fixedNow); got != exact {
		t.Fatalf("256-byte batch: EventID = %q, want the joined ids", got)
	}
	over := idsOf("EV0000000000000XY")
	if got := eventIDOf(t, p, keys, gocardlessSigned(t, body(over), gocardlessSecret), fixedNow); got != "events-sha256:"+gocardlessIDsHash(over) {
		t.Fatalf("257-byte batch: EventID = %q, want the hash", got)
	}
}
