package server

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// FuzzBearerToken: the authorization header comes from any caller on the network. The parser
// never panics, and what it accepts is exactly one "Bearer <token>" with a printable ASCII
// token, returned as sent.
func FuzzBearerToken(f *testing.F) {
	for _, seed := range []string{"Bearer hvt_abc", "bearer x", "Bearer ", "Bearer  two", "Basic dXNlcjpw",
		"Bearer tok\x00en", "Bearer t\xffk", "Bearer " + strings.Repeat("a", 4096), ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		token, err := bearerToken([]string{header})
		if err != nil {
			if token != "" {
				t.Fatalf("refused %q but returned a token", header)
			}
			return
		}
		if token == "" || header != header[:len(header)-len(token)]+token || !strings.EqualFold(header[:7], "Bearer ") {
			t.Fatalf("accepted %q as token %q", header, token)
		}
		for i := 0; i < len(token); i++ {
			if token[i] < 0x21 || token[i] > 0x7e {
				t.Fatalf("accepted a token with byte %#x", token[i])
			}
		}
		if _, err := bearerToken([]string{header, header}); err == nil {
			t.Fatal("accepted two authorization headers")
		}
	})
}

// FuzzParseScope: scopes come from admin callers. Parsing never panics, what parses prints back
// to the same text, and a parsed scope never covers an endpoint id with characters no endpoint
// id may have.
func FuzzParseScope(f *testing.F) {
	for _, seed := range []string{"admin", "verify:ep-1", "inbox:acme-*", "verify:*", "verify:", "verify:a*b",
		"inbox:acme-*-*", "VERIFY:x", "verify:ep\x00", "admin:x", ":x"} {
		f.Add(seed, "ep-1")
	}
	f.Fuzz(func(t *testing.T, text, endpointID string) {
		s, err := ParseScope(text)
		if err != nil {
			return
		}
		if s.String() != text {
			t.Fatalf("ParseScope(%q) prints back as %q", text, s.String())
		}
		if s.Kind != ScopeAdmin && s.covers(s.Kind, endpointID) && !validID(endpointID) &&
			!strings.HasSuffix(s.Endpoints, "*") {
			t.Fatalf("scope %q covers the impossible endpoint id %q", text, endpointID)
		}
	})
}

// FuzzUTF8ReportingCodec: every request body arrives through this codec from any caller on the
// network, before authentication. For any bytes: no panic; a message that decodes without the
// marker is what the proto codec itself decodes; a marked message is empty but for the marker
// and stands for bytes that do not decode as UTF-8-valid protobuf (or carried the marker field
// themselves); hasInvalidUTF8Marker never panics on any unknown-field bytes.
func FuzzUTF8ReportingCodec(f *testing.F) {
	valid, err := proto.Marshal(&hookverifyv1.VerifyRequest{EndpointId: "ep-1", Method: "POST", Url: "https://x/in?a=1",
		Headers: []*hookverifyv1.HeaderField{{Name: "Stripe-Signature", Value: "t=1,v1=ab"}}, Body: []byte(`{"id":"evt_1"}`)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add([]byte(strings.Replace(string(valid), "ep-1", "ep\xff1", 1)))
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Add([]byte{0xf8, 0xff, 0xff, 0xff, 0x0f, 0x01}) // the marker field itself
	codec := newUTF8ReportingCodec()
	f.Fuzz(func(t *testing.T, data []byte) {
		got := &hookverifyv1.VerifyRequest{}
		err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(append([]byte(nil), data...))}, got)
		want := &hookverifyv1.VerifyRequest{}
		wantErr := proto.Unmarshal(data, want)
		switch {
		case err != nil:
			if wantErr == nil {
				t.Fatalf("codec refused bytes protobuf decodes: %v", err)
			}
		case hasInvalidUTF8Marker(got):
			if wantErr == nil && !hasInvalidUTF8Marker(want) {
				t.Fatalf("valid UTF-8 request marked invalid: %v", want)
			}
			if wantErr != nil && (got.GetEndpointId() != "" || len(got.GetHeaders()) != 0 || len(got.GetBody()) != 0 || got.GetUrl() != "" || got.GetMethod() != "") {
				t.Fatalf("marked request kept fields: %v", got)
			}
		default:
			if wantErr != nil {
				t.Fatalf("codec decoded bytes protobuf refuses (%v)", wantErr)
			}
			if !proto.Equal(got, want) {
				t.Fatalf("codec decoded %v, protobuf %v", got, want)
			}
		}
		// The marker scan over arbitrary unknown bytes.
		m := &hookverifyv1.VerifyRequest{}
		m.ProtoReflect().SetUnknown(data)
		_ = hasInvalidUTF8Marker(m)
	})
}

// fuzzCertSigner signs every fuzzed certificate; ed25519 keeps an iteration cheap.
type fuzzCertSigner struct {
	pub  ed25519.PublicKey
	priv ed25519.PrivateKey
}

// FuzzClientCertSubject: the subject of a client certificate is chosen by whoever requested it
// (the CA signs what the CSR says, within its policy), and the subject's text decides the
// caller's scopes. For any subject x509 parses: no panic in the checks; when the certificate is
// not refused, every CN and serialNumber it was signed with is the one its subject text shows
// (so the text names the certificate unambiguously for those attributes), and the log text of
// the signed subject is produced.
func FuzzClientCertSubject(f *testing.F) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	signer := fuzzCertSigner{pub: pub, priv: priv}
	for _, subject := range []pkix.RDNSequence{
		{{{Type: oidCommonName, Value: "edge-1"}}, {{Type: asn1.ObjectIdentifier{2, 5, 4, 10}, Value: "Acme"}}},
		{{{Type: oidCommonName, Value: "intern"}}, {{Type: oidCommonName, Value: "ops-admin"}}},
		{{{Type: oidCommonName, Value: "a"}, {Type: oidSerialNumber, Value: "1"}}, {{Type: oidSerialNumber, Value: "2"}}},
		{{{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}, Value: "com"}}},
		{},
	} {
		raw, err := asn1.Marshal(subject)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	s := &Server{now: time.Now, auth: newAuthenticator(&AuthConfig{})}
	f.Fuzz(func(t *testing.T, rawSubject []byte) {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), RawSubject: rawSubject,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, signer.pub, signer.priv)
		if err != nil {
			return
		}
		leaf, err := x509.ParseCertificate(der)
		if err != nil {
			return // a certificate x509 cannot parse never reaches authenticateCert
		}
		attr := repeatedSingleAttribute(leaf.Subject)
		text := signedSubject(leaf)
		c, err := s.authenticateCert([][]*x509.Certificate{{leaf}})
		if attr != "" {
			if err == nil {
				t.Fatalf("subject %s repeats %s and was accepted", text, attr)
			}
			return
		}
		if err != nil {
			t.Fatalf("subject %s refused: %v", text, err)
		}
		if c.principal.Name != "cert:"+leaf.Subject.String() {
			t.Fatalf("principal %q for subject %q", c.principal.Name, leaf.Subject.String())
		}
		for _, atv := range leaf.Subject.Names {
			v, _ := atv.Value.(string)
			switch {
			case atv.Type.Equal(oidCommonName) && v != leaf.Subject.CommonName:
				t.Fatalf("signed CN %q, subject text keeps %q", v, leaf.Subject.CommonName)
			case atv.Type.Equal(oidSerialNumber) && v != leaf.Subject.SerialNumber:
				t.Fatalf("signed serialNumber %q, subject text keeps %q", v, leaf.Subject.SerialNumber)
			}
		}
	})
}
