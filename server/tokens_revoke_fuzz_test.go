package server_test

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// tokenIDForm is the form of the ids the server gives tokens.
var tokenIDForm = regexp.MustCompile(`^tok_[0-9a-f]{16}$`)

// FuzzRevokeTokenID: RevokeToken's id comes from an admin caller, who may paste a token id, the
// token itself (what a secret scanner reports after a leak), part of either, or anything.
// Properties, on a SQLite server:
//   - any id gets the revoked token, NOT_FOUND, or INVALID_ARGUMENT for an empty one; never
//     another error, never a panic;
//   - the token itself, or its id, revokes exactly that token; any other text derived from
//     them (a byte changed, cut short) revokes nothing of it;
//   - neither the answer nor the log ever holds the token, nor the text given unless it is an
//     id (tok_ and 16 hex digits): a token pasted short or mangled must not be repeated.
func FuzzRevokeTokenID(f *testing.F) {
	ctx := context.Background()
	fs := newFuzzServer(f)
	srv, st, logs := fs.srv, fs.store, fs.logs

	for mode := range uint8(6) {
		f.Add(mode, "", uint16(5), byte('A'))
	}
	f.Add(uint8(0), "tok_0123456789abcdef", uint16(0), byte(0))
	f.Add(uint8(0), "hvt_", uint16(0), byte(0))
	f.Add(uint8(0), strings.Repeat("x", 40), uint16(0), byte(0))
	f.Add(uint8(0), "tok_\x00", uint16(0), byte(0))
	f.Add(uint8(2), "", uint16(3), byte('_'))
	f.Add(uint8(3), "", uint16(31), byte(0))
	f.Add(uint8(5), "", uint16(4), byte('A'))
	f.Fuzz(func(t *testing.T, mode uint8, text string, pos uint16, repl byte) {
		created, err := srv.CreateToken(ctx, &hookverifyv1.CreateTokenRequest{Name: "fuzz", Scopes: []string{"verify:*"}})
		if err != nil {
			t.Fatalf("CreateToken: %v", err)
		}
		token, tokenID := created.GetBearerToken(), created.GetToken().GetId()
		mutate := func(s string) string {
			b := []byte(s)
			b[int(pos)%len(b)] = repl
			return string(b)
		}
		var id string
		switch mode % 6 {
		case 0:
			id = text
		case 1:
			id = token
		case 2:
			id = mutate(token)
		case 3:
			id = token[:int(pos)%len(token)]
		case 4:
			id = tokenID
		case 5:
			id = mutate(tokenID)
		}
		logsBefore := len(logs.Bytes())
		resp, err := srv.RevokeToken(ctx, &hookverifyv1.RevokeTokenRequest{Id: id})
		var said []byte
		if err != nil {
			said = []byte(status.Convert(err).Message())
		} else {
			said = []byte(resp.String())
		}
		said = append(said, logs.Bytes()[logsBefore:]...)
		if bytes.Contains(said, []byte(token)) {
			t.Fatalf("RevokeToken(%q) repeated the token: %s", id, said)
		}
		if len(id) >= 8 && !tokenIDForm.MatchString(id) && bytes.Contains(said, []byte(id)) {
			t.Fatalf("RevokeToken(%q) repeated what it was given, which is no token id: %s", id, said)
		}

		exact := id == token || id == tokenID
		switch code := status.Code(err); {
		case id == "":
			if code != codes.InvalidArgument {
				t.Fatalf("RevokeToken(\"\"): %v, want INVALID_ARGUMENT", err)
			}
		case err == nil:
			if got := resp.GetToken().GetId(); got == tokenID && !exact {
				t.Fatalf("RevokeToken(%q) revoked token %s, given as %q", id, tokenID, token)
			}
		case code == codes.NotFound:
			if exact {
				t.Fatalf("RevokeToken(%q), the token or its id: %v", id, err)
			}
		default:
			t.Fatalf("RevokeToken(%q): %v, want the token or NOT_FOUND", id, err)
		}
		stored, err := st.TokenByHash(ctx, server.HashToken(token))
		if err != nil {
			t.Fatalf("TokenByHash: %v", err)
		}
		if revoked := !stored.RevokedAt.IsZero(); revoked != exact {
			t.Fatalf("RevokeToken(%q): token %s revoked = %v, given as %q", id, tokenID, revoked, token)
		}
	})
}
