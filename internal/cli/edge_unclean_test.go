package cli

import (
	"net/http"
	"testing"
)

// TestEdgeAnswersUncleanPathsBeforeTheirBody: refuseUncleanPaths' own 404s (a path that is not
// clean, and under a --route ending in "/{$}" a path ServeMux would redirect to itself with a
// slash added) must, like mux's 404 and 405 that TestEdgeAnswersUnroutedRequestsBeforeTheirBody
// sends, go at once with Connection: close, not after net/http read (or waited
// --read-timeout for) the body.
func TestEdgeAnswersUncleanPathsBeforeTheirBody(t *testing.T) {
	v, addr := startStalledVerifier(t)
	v.finish()
	plain := startEdge(t, "--listen", "127.0.0.1:0", "--verifier", addr, "--read-timeout", "10s")
	slash := startEdge(t, "--listen", "127.0.0.1:0", "--verifier", addr, "--read-timeout", "10s", "--route", "POST /in/{endpoint}/{$}")
	plainAddr := logLine(t, plain.log, "edge listening")["addr"].(string)
	slashAddr := logLine(t, slash.log, "edge listening")["addr"].(string)
	for _, tc := range []struct{ addr, head string }{
		{plainAddr, "POST /hooks//ep HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n{}"},
		{plainAddr, "POST /hooks/./ep HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n{}"},
		{plainAddr, "POST /hooks/a/../ep HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n"},
		{slashAddr, "POST /in/ep HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n{}"},
	} {
		wantAnsweredBeforeTheBody(t, tc.addr, tc.head, http.StatusNotFound)
	}
}
