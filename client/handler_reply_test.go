package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestHandlerSendsTheReplysHeadersOnly: the handler answers with the server's HttpReply, its
// headers as they are, as the Node edge does. For a reply with a body and no Content-Type,
// net/http sniffed one and added it ("text/plain; charset=utf-8" for a bare challenge):
// the provider got a header the server never sent, and the two edges answered differently.
func TestHandlerSendsTheReplysHeadersOnly(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	f.respond = func(context.Context, *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
		return &hookverifyv1.VerifyResponse{
			Verdict: hookverifyv1.Verdict_VERDICT_HANDSHAKE,
			Reply:   &hookverifyv1.HttpReply{Status: 200, Body: []byte("<html>challenge-123")},
		}, nil
	}
	mux := http.NewServeMux()
	mux.Handle("/hooks/{endpoint}", client.Handler(dial(t, f.start(t))))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/hooks/ep?challenge=challenge-123")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "<html>challenge-123" {
		t.Fatalf("answer %d %q", resp.StatusCode, body)
	}
	if ct, ok := resp.Header["Content-Type"]; ok {
		t.Errorf("Content-Type %q sent, which the reply has not", strings.Join(ct, ", "))
	}
}
