package cli

import (
	"bytes"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/ratelog"
	"github.com/hookverify/hookverify/internal/testpki"
)

// FuzzParseClientCAs: a --client-ca file decides which client certificates are trusted.
// Properties, on any content:
//   - an answer or an error, never a panic, and the same answer twice;
//   - accepted, the trust anchors are exactly the CERTIFICATE blocks of the file (each one
//     parsed), at least one; a file whose CERTIFICATE blocks do not all parse is refused,
//     rather than trusting fewer certificates than it names without a word.
func FuzzParseClientCAs(f *testing.F) {
	ca := testpki.NewCA(f, "fuzz-ca")
	path := filepath.Join(f.TempDir(), "ca.pem")
	ca.WriteCA(f, path)
	caPEM, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(caPEM)
	f.Add(append(append([]byte("junk\n-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), caPEM...), caPEM...))
	f.Add(bytes.Replace(caPEM, []byte("MII"), []byte("MIJ"), 1))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n\n-----END CERTIFICATE-----\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		pool, anchors, err := parseClientCAs(data)
		_, anchors2, err2 := parseClientCAs(data)
		if (err == nil) != (err2 == nil) || len(anchors) != len(anchors2) {
			t.Fatalf("parseClientCAs is not deterministic: %v then %v", err, err2)
		}
		// The reference: every CERTIFICATE block, in order.
		var blocks [][]byte
		for rest := data; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if b.Type == "CERTIFICATE" {
				blocks = append(blocks, b.Bytes)
			}
		}
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		if pool == nil || len(anchors) == 0 || len(blocks) == 0 {
			t.Fatalf("accepted %q with %d anchors from %d certificate blocks", data, len(anchors), len(blocks))
		}
		for _, der := range blocks {
			if !anchors[string(der)] {
				t.Fatalf("a CERTIFICATE block of the file is not among the anchors: %x", der)
			}
		}
		if len(anchors) > len(blocks) {
			t.Fatalf("%d anchors from %d certificate blocks", len(anchors), len(blocks))
		}
	})
}

// FuzzParseSignTime: `hookverify sign --timestamp` takes unix seconds or RFC 3339. Properties:
// an answer or a usage error, never a panic; an accepted time is at or after 1970, the same
// time twice, and as unix seconds it is the number given (below 10^11, the bound that tells
// seconds from milliseconds), as RFC 3339 the time time.Parse reads.
func FuzzParseSignTime(f *testing.F) {
	for _, s := range []string{"1700000000", "0", "-1", "99999999999", "100000000000", "1700000000000",
		"2026-12-05T08:00:00Z", "2026-12-05T08:00:00.123+01:00", "1969-12-31T23:59:59Z", "+1", "0x10", "1e9", "9223372036854775807", "-0", "-00", "+0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return // now
		}
		got, err := parseSignTime(s)
		again, err2 := parseSignTime(s)
		if (err == nil) != (err2 == nil) || !got.Equal(again) {
			t.Fatalf("parseSignTime(%q) = %v, %v then %v, %v", s, got, err, again, err2)
		}
		if err != nil {
			return
		}
		if got.Before(time.Unix(0, 0)) {
			t.Fatalf("parseSignTime(%q) = %v, before 1970", s, got)
		}
		if ref, perr := time.Parse(time.RFC3339Nano, s); perr == nil {
			if !got.Equal(ref) {
				t.Fatalf("parseSignTime(%q) = %v, RFC 3339 reads %v", s, got, ref)
			}
			return
		}
		// strconv.ParseInt takes a sign, so "-0" and "+1" are the seconds 0 and 1.
		secs, perr := strconv.ParseInt(s, 10, 64)
		if perr != nil || got.Unix() != secs || secs >= maxSignSeconds || got.Nanosecond() != 0 {
			t.Fatalf("parseSignTime(%q) = %v: neither RFC 3339 nor unix seconds below 10^11", s, got)
		}
	})
}

// FuzzEdgeErrorLog: the edge's net/http error log holds text from the network (a TLS client's
// bytes make its handshake error). Properties: any line is taken whole, without a panic or an
// error; a handshake ended by EOF or a reset is never logged; anything else is logged.
func FuzzEdgeErrorLog(f *testing.F) {
	f.Add("http: TLS handshake error from 203.0.113.7:5555: EOF\n")
	f.Add("http: TLS handshake error from 203.0.113.7:5555: tls: first record does not look like a TLS handshake\n")
	f.Add("http: TLS handshake error from [::1]:1: read tcp: connection reset by peer")
	f.Add("http: superfluous response.WriteHeader call\n")
	f.Add("http: TLS handshake error from ")
	f.Fuzz(func(t *testing.T, line string) {
		var out bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&out, nil))
		w := &edgeErrorLog{log: log, limit: ratelog.ForLog(log, time.Hour, "TLS handshakes failed")}
		n, err := w.Write([]byte(line))
		if n != len(line) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", line, n, err)
		}
		trimmed := strings.TrimSpace(line)
		rest, handshake := strings.CutPrefix(trimmed, "http: TLS handshake error from ")
		quiet := handshake && (strings.HasSuffix(rest, ": EOF") || strings.HasSuffix(rest, "connection reset by peer"))
		if quiet != (out.Len() == 0) {
			t.Fatalf("Write(%q) logged %q", line, out.String())
		}
	})
}

// FuzzIsCleanPath: the edge answers 404 itself to a request path http.ServeMux would redirect
// to its cleaned form (refuseUncleanPaths). Held to ServeMux itself, on any request target that
// net/http would parse: isCleanPath is false exactly when the mux answers a redirect.
func FuzzIsCleanPath(f *testing.F) {
	for _, p := range []string{"/hooks/ep", "/hooks//ep", "/hooks/./ep", "/hooks/a/../ep", "/hooks/ep/", "/hooks/ep/.", "//x", "/", "/hooks/%2E%2E", "/a/..?x=1", "*"} {
		f.Add(p)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || u.Path == "" && u.RawPath == "" && target != "*" {
			t.Skip()
		}
		r := &http.Request{Method: "POST", URL: u, RequestURI: target, Host: "h.example", Header: http.Header{}}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		redirected := w.Code == http.StatusTemporaryRedirect || w.Code == http.StatusMovedPermanently
		if clean := isCleanPath(u.EscapedPath()); clean == redirected && w.Code != http.StatusBadRequest {
			t.Fatalf("target %q (escaped path %q): isCleanPath %v, ServeMux answered %d", target, u.EscapedPath(), clean, w.Code)
		}
	})
}
