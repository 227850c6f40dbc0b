package storagetest

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// tokenHash stands in for the SHA-256 of a token; the store treats it as opaque bytes.
func tokenHash(seed string) []byte {
	h := sha256.Sum256([]byte("token:" + seed))
	return h[:]
}

func newToken(id, name string, created time.Time) storage.Token {
	return storage.Token{
		ID:        id,
		Name:      name,
		Hash:      tokenHash(id),
		Scopes:    []string{"verify:acme-*", "inbox:acme-orders", "admin"},
		CreatedAt: created,
	}
}

func createToken(t *testing.T, s storage.Store, tok storage.Token) {
	t.Helper()
	must(t, s.CreateToken(t.Context(), tok), "CreateToken "+tok.ID)
}

func tokenByHash(t *testing.T, s storage.Store, hash []byte) storage.Token {
	t.Helper()
	tok, err := s.TokenByHash(t.Context(), hash)
	must(t, err, "TokenByHash")
	return tok
}

func listTokens(t *testing.T, s storage.Store) []storage.Token {
	t.Helper()
	list, err := s.ListTokens(t.Context())
	must(t, err, "ListTokens")
	return list
}

func testTokens(t *testing.T, h harness) {
	t.Run("create then look up by hash returns every field", func(t *testing.T) {
		cases := map[string]func(tok *storage.Token){
			"typical":   func(*storage.Token) {},
			"no scopes": func(tok *storage.Token) { tok.Scopes = nil },
			"hash with every byte value": func(tok *storage.Token) {
				tok.Hash = allBytes()
			},
			"unicode name": func(tok *storage.Token) { tok.Name = "édge — 世界" },
			"already used and revoked": func(tok *storage.Token) {
				tok.LastUsedAt = at(time.Hour + 3*time.Microsecond)
				tok.RevokedAt = at(2 * time.Hour)
			},
		}
		for name, edit := range cases {
			t.Run(name, func(t *testing.T) {
				s := h.fresh(t)
				tok := newToken("tok-1", "edge", at(0))
				edit(&tok)
				createToken(t, s, tok)
				wantSame(t, tok, tokenByHash(t, s, tok.Hash), "stored token")
			})
		}
	})

	t.Run("unknown hash returns ErrNotFound", func(t *testing.T) {
		s := h.fresh(t)
		createToken(t, s, newToken("tok-1", "edge", at(0)))
		_, err := s.TokenByHash(t.Context(), tokenHash("other"))
		wantErr(t, err, storage.ErrNotFound, "TokenByHash of an unknown hash")
		_, err = s.TokenByHash(t.Context(), nil)
		wantErr(t, err, storage.ErrNotFound, "TokenByHash of an empty hash")
	})

	t.Run("a taken id or hash returns ErrAlreadyExists and keeps the first", func(t *testing.T) {
		s := h.fresh(t)
		first := newToken("tok-1", "edge", at(0))
		createToken(t, s, first)

		sameID := newToken("tok-1", "other", at(time.Hour))
		sameID.Hash = tokenHash("different")
		wantErr(t, s.CreateToken(t.Context(), sameID), storage.ErrAlreadyExists, "CreateToken with a taken id")

		sameHash := newToken("tok-2", "other", at(time.Hour))
		sameHash.Hash = first.Hash
		wantErr(t, s.CreateToken(t.Context(), sameHash), storage.ErrAlreadyExists, "CreateToken with a taken hash")

		wantSame(t, []storage.Token{first}, listTokens(t, s), "tokens")
	})

	t.Run("a revoked token's hash cannot be stored again", func(t *testing.T) {
		s := h.fresh(t)
		first := newToken("tok-1", "bootstrap", at(0))
		createToken(t, s, first)
		_, err := s.RevokeToken(t.Context(), "tok-1", at(time.Minute))
		must(t, err, "RevokeToken")
		again := newToken("tok-2", "bootstrap", at(time.Hour))
		again.Hash = first.Hash
		wantErr(t, s.CreateToken(t.Context(), again), storage.ErrAlreadyExists, "CreateToken with a revoked hash")
	})

	t.Run("missing id, name or hash returns ErrInvalid", func(t *testing.T) {
		s := h.fresh(t)
		for name, edit := range map[string]func(tok *storage.Token){
			"id":   func(tok *storage.Token) { tok.ID = "" },
			"name": func(tok *storage.Token) { tok.Name = "" },
			"hash": func(tok *storage.Token) { tok.Hash = nil },
		} {
			tok := newToken("tok-1", "edge", at(0))
			edit(&tok)
			wantErr(t, s.CreateToken(t.Context(), tok), storage.ErrInvalid, "CreateToken without "+name)
		}
		wantSame(t, []storage.Token(nil), listTokens(t, s), "tokens")
	})

	t.Run("list orders by creation time then id", func(t *testing.T) {
		s := h.fresh(t)
		c := newToken("tok-c", "c", at(time.Hour))
		b := newToken("tok-b", "b", at(0))
		a := newToken("tok-a", "a", at(0))
		for _, tok := range []storage.Token{c, b, a} {
			createToken(t, s, tok)
		}
		wantSame(t, []storage.Token{a, b, c}, listTokens(t, s), "tokens")
	})

	t.Run("revoke keeps the first revocation time", func(t *testing.T) {
		s := h.fresh(t)
		tok := newToken("tok-1", "edge", at(0))
		createToken(t, s, tok)
		got, err := s.RevokeToken(t.Context(), "tok-1", at(time.Minute))
		must(t, err, "RevokeToken")
		tok.RevokedAt = at(time.Minute)
		wantSame(t, tok, got, "revoked token")
		got, err = s.RevokeToken(t.Context(), "tok-1", at(time.Hour))
		must(t, err, "second RevokeToken")
		wantSame(t, tok, got, "token revoked twice")
		wantSame(t, tok, tokenByHash(t, s, tok.Hash), "stored token")
	})

	t.Run("revoke or touch unknown returns ErrNotFound", func(t *testing.T) {
		s := h.fresh(t)
		createToken(t, s, newToken("tok-1", "edge", at(0)))
		_, err := s.RevokeToken(t.Context(), "tok-2", at(time.Minute))
		wantErr(t, err, storage.ErrNotFound, "RevokeToken of an unknown id")
		wantErr(t, s.TouchToken(t.Context(), "tok-2", at(time.Minute)), storage.ErrNotFound, "TouchToken of an unknown id")
	})

	t.Run("touch only moves last use forward", func(t *testing.T) {
		s := h.fresh(t)
		tok := newToken("tok-1", "edge", at(0))
		createToken(t, s, tok)
		must(t, s.TouchToken(t.Context(), "tok-1", at(time.Hour)), "TouchToken")
		tok.LastUsedAt = at(time.Hour)
		wantSame(t, tok, tokenByHash(t, s, tok.Hash), "token after a use")
		must(t, s.TouchToken(t.Context(), "tok-1", at(time.Minute)), "TouchToken with an earlier time")
		wantSame(t, tok, tokenByHash(t, s, tok.Hash), "token after an earlier use")
		must(t, s.TouchToken(t.Context(), "tok-1", at(2*time.Hour)), "TouchToken with a later time")
		tok.LastUsedAt = at(2 * time.Hour)
		wantSame(t, tok, tokenByHash(t, s, tok.Hash), "token after a later use")
	})
}
