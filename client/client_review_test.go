package client_test

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/client"
)

// TestDialRefusesWithTLSAndWithTLSFilesTogether: each replaced the other, the last one given
// winning in silence, so WithTLS(&tls.Config{ServerName: ...}) next to WithTLSFiles(ca, cert,
// key) dropped either the server name or the client certificate, and the failure showed only
// later, as a refused handshake. Dial says so at once instead.
func TestDialRefusesWithTLSAndWithTLSFilesTogether(t *testing.T) {
	t.Parallel()
	cfg := &tls.Config{ServerName: "verifier.internal", MinVersion: tls.VersionTLS12}
	for name, opts := range map[string][]client.Option{
		"WithTLS first":      {client.WithTLS(cfg), client.WithTLSFiles("", "", "")},
		"WithTLSFiles first": {client.WithTLSFiles("", "", ""), client.WithTLS(cfg)},
	} {
		conn, err := client.Dial("verifier.internal:7700", opts...)
		if err == nil {
			conn.Close()
			t.Errorf("%s: Dial accepted both", name)
			continue
		}
		if !strings.Contains(err.Error(), "WithTLS") {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, opt := range []client.Option{client.WithTLS(cfg), client.WithTLSFiles("", "", "")} {
		conn, err := client.Dial("verifier.internal:7700", opt)
		if err != nil {
			t.Fatalf("one TLS option: %v", err)
		}
		conn.Close()
	}
}
