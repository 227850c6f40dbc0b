package client_test

import (
	"bytes"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hookverify/hookverify/client"
)

// FuzzHopByHopHeaders parses the Connection header of an untrusted request: whatever it holds,
// the forwarded headers keep Host first, never hold a hop-by-hop field, and hold a field that
// is no hop-by-hop one unless a comma-separated token of Connection names it (any ASCII case,
// surrounding white space ignored), with every value in order.
func FuzzHopByHopHeaders(f *testing.F) {
	f.Add("keep-alive, X-Sig", "X-Sig")
	f.Add(" x-sig\t,,", "X-Sig")
	f.Add("close", "Stripe-Signature")
	f.Add("host, Stripe-Signature ", "Stripe-Signature")
	f.Add("X-Sigx", "X-Sig")
	conn, err := client.Dial("127.0.0.1:1")
	if err != nil {
		f.Fatal(err)
	}
	defer conn.Close()
	hop := []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}
	f.Fuzz(func(t *testing.T, connection, name string) {
		if !utf8.ValidString(connection) || !isToken(name) {
			t.Skip()
		}
		name = textproto.CanonicalMIMEHeaderKey(name)
		if name == "Host" {
			t.Skip()
		}
		header := http.Header{"Connection": {connection}, "Keep-Alive": {"timeout=5"}, "Proxy-Authorization": {"Basic dTpw"}}
		header[name] = append(header[name], "one", "two")
		r := &http.Request{Method: "POST", Host: "h.example", RequestURI: "/hooks/e", URL: &url.URL{Path: "/hooks/e"},
			Header: header, Body: io.NopCloser(bytes.NewReader(nil))}
		req, err := conn.BuildRequest("e", r)
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		fields := req.GetHeaders()
		if len(fields) == 0 || fields[0].GetName() != "Host" || fields[0].GetValue() != "h.example" {
			t.Fatalf("Host not first: %v", fields)
		}
		named := slices.Contains(hop, name)
		for tok := range strings.SplitSeq(connection, ",") {
			named = named || strings.EqualFold(strings.Trim(tok, " \t\r\n"), name)
		}
		var values []string
		for _, hf := range fields[1:] {
			if slices.Contains(hop, hf.GetName()) {
				t.Fatalf("hop-by-hop %s forwarded", hf.GetName())
			}
			if hf.GetName() == name {
				values = append(values, hf.GetValue())
			}
		}
		if want := []string{"one", "two"}; named && len(values) != 0 || !named && !slices.Equal(values, want) {
			t.Fatalf("Connection %q, field %s: forwarded values %q", connection, name, values)
		}
	})
}

// isToken reports whether s is a non-empty RFC 9110 token, as a header name is.
func isToken(s string) bool {
	return s != "" && strings.Trim(s, "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
}
