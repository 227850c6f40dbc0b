package sqlite_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// TestTokenWithoutAHashIsRefused: a token needs the hash of what its caller sends. One
// stored with an empty hash would be what TokenByHash finds for an empty hash, a credential
// nobody was given; it is refused as invalid and nothing is stored.
func TestTokenWithoutAHashIsRefused(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	ctx := t.Context()
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, hash := range [][]byte{nil, {}} {
		err := s.CreateToken(ctx, storage.Token{ID: "tok-1", Name: "edge", Hash: hash, CreatedAt: created})
		if !errors.Is(err, storage.ErrInvalid) {
			t.Fatalf("CreateToken with hash %#v = %v, want ErrInvalid", hash, err)
		}
	}
	if list, err := s.ListTokens(ctx); err != nil || len(list) != 0 {
		t.Fatalf("ListTokens after refused creations = %+v, %v; want none", list, err)
	}
	if _, err := s.TokenByHash(ctx, nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("TokenByHash(empty) = %v, want ErrNotFound", err)
	}
}

// TestTokensListedByCreationThenID: ListTokens orders by CreatedAt first, and by ID only
// between tokens created at the same instant; the ids here sort the other way round.
func TestTokensListedByCreationThenID(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	ctx := t.Context()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tok := range []struct {
		id      string
		created time.Time
	}{{"tok-a", base.Add(2 * time.Hour)}, {"tok-c", base}, {"tok-b", base.Add(time.Hour)}, {"tok-d", base}} {
		if err := s.CreateToken(ctx, storage.Token{ID: tok.id, Name: tok.id, Hash: []byte(tok.id), CreatedAt: tok.created}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tok := range list {
		ids = append(ids, tok.ID)
	}
	if want := []string{"tok-c", "tok-d", "tok-b", "tok-a"}; !slices.Equal(ids, want) {
		t.Fatalf("ListTokens order = %v, want %v (by CreatedAt, then ID)", ids, want)
	}
}

// TestRevokeAtTheZeroTimeIsInvalid: the zero time reads back as "not revoked", so a
// revocation stored at it would leave the token working while its record counts as revoked,
// and every later revocation would find nothing left to revoke. It is refused, and the token
// can still be revoked.
func TestRevokeAtTheZeroTimeIsInvalid(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	ctx := t.Context()
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.CreateToken(ctx, storage.Token{ID: "tok-1", Name: "edge", Hash: []byte("h"), CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeToken(ctx, "tok-1", time.Time{}); !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("RevokeToken at the zero time = %v, want ErrInvalid", err)
	}
	revokedAt := created.Add(time.Hour)
	tok, err := s.RevokeToken(ctx, "tok-1", revokedAt)
	if err != nil || !tok.RevokedAt.Equal(revokedAt) {
		t.Fatalf("RevokeToken after the refused one = %+v, %v; want revoked at %v", tok, err, revokedAt)
	}
	if tok, err := s.TokenByHash(ctx, []byte("h")); err != nil || !tok.RevokedAt.Equal(revokedAt) {
		t.Fatalf("TokenByHash = %+v, %v; want revoked at %v", tok, err, revokedAt)
	}
}
