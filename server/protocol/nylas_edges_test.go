package protocol

import (
	"strings"
	"testing"
)

// TestNylasChallengeOfExactlyTheLimitIsEchoed: the echo bound is inclusive, as Nylas's doc
// comment says (at most 1024 bytes): a 1024-byte challenge is answered, 1025 is refused
// (TestNylasChallenge).
func TestNylasChallengeOfExactlyTheLimitIsEchoed(t *testing.T) {
	t.Parallel()
	challenge := strings.Repeat("a", nylasMaxChallenge)
	res, err := Nylas().Verify(&Request{Method: "GET", URL: "https://hooks.example.com/nylas?challenge=" + challenge}, nil, Params{})
	if err != nil {
		t.Fatalf("a %d-byte challenge was refused: %v", len(challenge), err)
	}
	if res.Handshake == nil || res.Handshake.Status != 200 || string(res.Handshake.Body) != challenge {
		t.Fatalf("result %+v", res)
	}
}
