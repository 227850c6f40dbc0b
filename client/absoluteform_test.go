package client_test

import (
	"bufio"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/client"
)

// readRequest parses raw as net/http's server does, so r.RequestURI, r.Host and r.URL are
// those a handler gets.
func readRequest(t *testing.T, raw string) *http.Request {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatalf("net/http refuses %q: %v", raw, err)
	}
	return r
}

// TestBuildRequestAbsoluteFormSchemeInAnyCase: a URI's scheme is case-insensitive (RFC 3986
// 3.1), and net/http takes "POST HTTP://host/hooks/ep" as the absolute form (routing it on
// /hooks/ep), but BuildRequest recognised the absolute form only in lower case and took the
// target for a path: it forwarded "http://b.exampleHTTP://b.example/hooks/ep?x=1", which the
// server takes (it checks only the front) and stores as the delivery's URL, and with a
// public URL base "https://pub.example/pfxHTTP://b.example/...". The URL forwarded must be
// the one called.
func TestBuildRequestAbsoluteFormSchemeInAnyCase(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ target, pathQuery string }{
		{"HTTP://b.example/hooks/ep?x=1", "/hooks/ep?x=1"},
		{"Https://b.example:8443/hooks/ep", "/hooks/ep"},
	} {
		raw := "POST " + c.target + " HTTP/1.1\r\nHost: a.example\r\nContent-Length: 2\r\n\r\n{}"
		req, err := newConn(t).BuildRequest("ep", readRequest(t, raw))
		if err != nil || req.GetUrl() != c.target {
			t.Errorf("BuildRequest(%s) = url %q, %v; want %q", c.target, req.GetUrl(), err, c.target)
		}
		req, err = newConn(t, client.WithPublicURLBase("https://pub.example/pfx")).BuildRequest("ep", readRequest(t, raw))
		if want := "https://pub.example/pfx" + c.pathQuery; err != nil || req.GetUrl() != want {
			t.Errorf("with a public URL base, BuildRequest(%s) = url %q, %v; want %q", c.target, req.GetUrl(), err, want)
		}
	}
}

// TestBuildRequestRefusesAnAbsoluteTargetOfAnotherScheme: net/http takes "POST
// ftp://b.example/hooks/ep" too, and routes it on its path; BuildRequest forwarded
// "http://b.exampleftp://b.example/hooks/ep", a URL nobody called, which the server stores.
// Only http(s) URLs can be forwarded (the server's VerifyRequest.url): the request is the
// sender's fault, 400, as for every target that cannot be forwarded.
func TestBuildRequestRefusesAnAbsoluteTargetOfAnotherScheme(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"ftp://b.example/hooks/ep", "ws://b.example/hooks/ep?x=1"} {
		raw := "POST " + target + " HTTP/1.1\r\nHost: a.example\r\nContent-Length: 2\r\n\r\n{}"
		req, err := newConn(t).BuildRequest("ep", readRequest(t, raw))
		if !errors.Is(err, client.ErrUnforwardable) {
			t.Errorf("BuildRequest(%s) = url %q, %v; want ErrUnforwardable", target, req.GetUrl(), err)
		}
	}
}

// TestBuildRequestPublicURLBaseKeepsAnAbsoluteTargetsBytes: with a public URL base, the path
// and query of an absolute-form target were taken from the parsed URL (r.URL.RequestURI()),
// which escapes again what it thinks needs it ("|" became "%7C"): the forwarded URL was not
// the one the provider called and signed. They are taken as received.
func TestBuildRequestPublicURLBaseKeepsAnAbsoluteTargetsBytes(t *testing.T) {
	t.Parallel()
	raw := "POST http://b.example/hooks/ep/a|b{c}?q=%7c HTTP/1.1\r\nHost: a.example\r\nContent-Length: 2\r\n\r\n{}"
	req, err := newConn(t, client.WithPublicURLBase("https://pub.example")).BuildRequest("ep", readRequest(t, raw))
	if want := "https://pub.example/hooks/ep/a|b{c}?q=%7c"; err != nil || req.GetUrl() != want {
		t.Errorf("BuildRequest = url %q, %v; want %q", req.GetUrl(), err, want)
	}
}
