package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/secretbox"
)

// TestSecretsNeverLeak runs a whole secret lifecycle per protocol — create, add, verify
// accepted and rejected, rotate, retire, list, a refused secret, then a master-key rekey while
// serving and the audit trail — with a debug-level JSON
// log, then proves that no secret, in any encoding, is in the log, in any response or error the
// client received, or anywhere in the database (the SQLite files, every PostgreSQL row); and
// that no signature is in the log or the responses.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		var secrets, signatures, acceptedIDs []string
		for _, p := range providers {
			endpoint := "leak-" + p.name
			first, firstID := e.setup(t, p, endpoint)
			secrets = append(secrets, first)

			real := e.deliver(t, p, endpoint, eventID(p), first)
			for _, name := range p.sigHeaders {
				signatures = append(signatures, signatureValues(header(real, name))...)
			}
			acceptedIDs = append(acceptedIDs, e.accept(t, real).GetEventId())
			e.reject(t, withBody(real, append(bytes.Clone(real.GetBody()), ' ')), mismatch)
			forger := p.newSecret()
			secrets = append(secrets, forger)
			e.reject(t, e.deliver(t, p, endpoint, eventID(p), forger), mismatch)

			second := p.newSecret()
			secrets = append(secrets, second)
			if _, err := e.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{EndpointId: endpoint, Secret: second, Overlap: durationpb.New(time.Hour)}); err != nil {
				t.Fatalf("RotateSecret: %v", err)
			}
			e.accept(t, e.deliver(t, p, endpoint, eventID(p), first))
			e.accept(t, e.deliver(t, p, endpoint, eventID(p), second))
			scheduled := p.newSecret()
			secrets = append(secrets, scheduled)
			if _, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: endpoint, Secret: scheduled, NotBefore: timestamppb.New(e.clock.Now().Add(time.Hour))}); err != nil {
				t.Fatalf("AddSecret: %v", err)
			}
			if _, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: endpoint, SecretId: firstID}); err != nil {
				t.Fatalf("RetireSecret: %v", err)
			}
			e.reject(t, e.deliver(t, p, endpoint, eventID(p), first), mismatch)
			if _, err := e.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: endpoint}); err != nil {
				t.Fatalf("ListSecrets: %v", err)
			}
			if _, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: endpoint}); err != nil {
				t.Fatalf("GetEndpoint: %v", err)
			}
		}
		// Secrets the server refuses must not be echoed either.
		for _, bad := range []string{
			"whsec_" + randomAlnum(24) + "!*!" + randomAlnum(24),
			"whsk_" + base64.StdEncoding.EncodeToString(randomBytes(32)),
		} {
			secrets = append(secrets, bad)
			_, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "leak-standard-webhooks", Secret: bad})
			wantCode(t, err, codes.InvalidArgument)
			_, err = e.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{EndpointId: "leak-standard-webhooks", Secret: bad})
			wantCode(t, err, codes.InvalidArgument)
		}
		if _, err := e.admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{}); err != nil {
			t.Fatal(err)
		}
		// Master-key rotation while serving, then the audit trail: neither shows material, and
		// the master keys themselves appear nowhere either.
		oldKey, newKey := e.masterKey, mustKey(t)
		secrets = append(secrets, string(oldKey), string(newKey))
		var err error
		if e.keyring, err = secretbox.NewKeyring(newKey, oldKey); err != nil {
			t.Fatal(err)
		}
		rekeyed := e.start(t, e.store)
		if resp, err := rekeyed.admin.RekeySecrets(t.Context(), &hookverifyv1.RekeySecretsRequest{MaxSecrets: 1000}); err != nil || resp.GetResealed() == 0 || resp.GetRemaining() != 0 {
			t.Fatalf("RekeySecrets = %v, %v", resp, err)
		}
		for _, p := range providers {
			if _, err := rekeyed.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: "leak-" + p.name}); err != nil {
				t.Fatal(err)
			}
		}
		if resp, err := rekeyed.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{PageSize: 1000}); err != nil || len(resp.GetEvents()) == 0 {
			t.Fatalf("ListAuditEvents = %v, %v", resp, err)
		}
		// API tokens: shown once by CreateToken (so not searched in the responses), never in
		// the log or the database, where only their hash is kept.
		created, err := rekeyed.tokens.CreateToken(t.Context(), &hookverifyv1.CreateTokenRequest{Name: "leak-edge", Scopes: []string{"verify:leak-*"}})
		if err != nil || created.GetBearerToken() == "" {
			t.Fatalf("CreateToken = %v, %v", created, err)
		}
		if _, err := rekeyed.tokens.RevokeToken(t.Context(), &hookverifyv1.RevokeTokenRequest{Id: created.GetToken().GetId()}); err != nil {
			t.Fatalf("RevokeToken: %v", err)
		}
		bearer := created.GetBearerToken()
		if err := rekeyed.srv.FlushSecretUses(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := e.srv.FlushSecretUses(t.Context()); err != nil {
			t.Fatal(err)
		}

		places := map[string][]byte{
			"the log":        e.logs.Bytes(),
			"the responses":  e.transcript.Bytes(),
			"database files": databaseBytes(t, e),
		}
		// The places searched hold what they should, so a clean result means something.
		if !bytes.Contains(places["the log"], []byte(`"level":"DEBUG"`)) {
			t.Fatal("the log has no debug lines")
		}
		if !bytes.Contains(places["the responses"], []byte("secretId")) {
			t.Fatal("the responses hold no secret metadata")
		}
		// CreateToken's one showing proves the search finds a token where one is.
		if !bytes.Contains(places["the responses"], []byte(bearer)) {
			t.Fatal("the responses do not hold the token CreateToken returned")
		}
		for _, id := range acceptedIDs {
			if !bytes.Contains(places["database files"], []byte(id)) {
				t.Fatalf("the database read holds no trace of accepted event %s", id)
			}
		}
		for place, data := range places {
			for _, secret := range secrets {
				for form, needle := range secretForms(secret) {
					if bytes.Contains(data, needle) {
						t.Errorf("a secret (%s) is in %s", form, place)
					}
				}
			}
			if place != "the responses" {
				for form, needle := range secretForms(bearer) {
					if bytes.Contains(data, needle) {
						t.Errorf("an API token (%s) is in %s", form, place)
					}
				}
			}
			if place == "database files" {
				continue // the inbox keeps the headers, signatures included, by design
			}
			for _, sig := range signatures {
				if bytes.Contains(data, []byte(sig)) {
					t.Errorf("a signature is in %s", place)
				}
			}
		}
	})
}

// signatureValues extracts the signature digests of a signature header value.
func signatureValues(v string) []string {
	var out []string
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
		if _, digest, ok := strings.Cut(part, "="); ok && len(digest) >= 32 {
			out = append(out, digest)
		} else if len(part) >= 32 {
			out = append(out, part)
		}
	}
	return out
}

// secretForms returns the encodings in which a secret could appear: as given, its key part,
// the decoded key of a whsec_ base64 secret, and hex and base64 of each.
func secretForms(secret string) map[string][]byte {
	forms := map[string][]byte{}
	add := func(name string, b []byte) {
		if len(b) < 12 {
			return // too short to search for without false alarms; never the case here
		}
		forms[name] = b
		forms[name+" as hex"] = []byte(hex.EncodeToString(b))
		forms[name+" as base64"] = []byte(base64.StdEncoding.EncodeToString(b))
		forms[name+" as base64url"] = []byte(base64.RawURLEncoding.EncodeToString(b))
	}
	add("the secret", []byte(secret))
	for _, prefix := range []string{"whsec_", "whsk_"} {
		if rest, ok := strings.CutPrefix(secret, prefix); ok {
			add("the secret without its prefix", []byte(rest))
			if key, err := base64.StdEncoding.DecodeString(rest); err == nil {
				add("the decoded key", key)
			}
		}
	}
	return forms
}

// databaseBytes returns everything the env's database holds: for SQLite the bytes of the
// database file and its -wal and -shm files, before and after closing the store (which
// checkpoints the log into the file); for PostgreSQL the text form of every row of every table.
func databaseBytes(t *testing.T, e *env) []byte {
	t.Helper()
	var out bytes.Buffer
	switch e.backend.name {
	case "sqlite":
		read := func() {
			for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
				data, err := os.ReadFile(e.dsn + suffix)
				if errors.Is(err, fs.ErrNotExist) && suffix != "" {
					continue
				}
				if err != nil {
					t.Fatalf("read the database: %v", err)
				}
				out.Write(data)
			}
		}
		read()
		if err := e.store.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		read()
	case "postgres":
		conn, err := pgx.Connect(t.Context(), e.dsn)
		if err != nil {
			t.Fatalf("connect to the test database: %v", err)
		}
		defer conn.Close(t.Context())
		rows, err := conn.Query(t.Context(), `SELECT quote_ident(schemaname) || '.' || quote_ident(tablename)
			FROM pg_catalog.pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`)
		if err != nil {
			t.Fatal(err)
		}
		tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if len(tables) == 0 {
			t.Fatal("the test database has no tables")
		}
		for _, table := range tables {
			rows, err := conn.Query(t.Context(), "SELECT r::text FROM "+table+" AS r")
			if err != nil {
				t.Fatalf("read %s: %v", table, err)
			}
			texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatalf("read %s: %v", table, err)
			}
			for _, text := range texts {
				out.WriteString(text)
				out.WriteByte('\n')
			}
		}
	default:
		t.Fatalf("no way to read the %s database", e.backend.name)
	}
	return out.Bytes()
}
