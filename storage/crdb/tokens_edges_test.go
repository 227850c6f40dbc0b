package crdb

import (
	"errors"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// TestRevokeTokenRefusesTheZeroTime: a revocation at the zero time would read back as "not
// revoked" (and, stored, would block every later revocation), so it is refused with
// ErrInvalid, records nothing, and leaves the token revocable at a real time.
func TestRevokeTokenRefusesTheZeroTime(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.Shared(t).NewDatabase(t))
	ctx := t.Context()
	created := time.Date(2025, time.March, 14, 15, 9, 26, 0, time.UTC)
	if err := s.CreateToken(ctx, storage.Token{ID: "tok-1", Name: "edge", Hash: []byte("hash-1"), CreatedAt: created}); err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	ev := storage.AuditEvent{ID: "a1", At: created, Actor: "token:tok_admin", Action: "token.revoke"}
	if _, err := s.RevokeToken(storage.WithAuditEvent(ctx, ev), "tok-1", time.Time{}); !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("RevokeToken at the zero time: %v, want ErrInvalid", err)
	}
	if got, err := s.ListAuditEvents(ctx, storage.AuditFilter{Limit: 10}); err != nil || len(got) != 0 {
		t.Fatalf("audit events after a refused revocation: %+v, %v", got, err)
	}
	revokedAt := created.Add(time.Hour)
	got, err := s.RevokeToken(ctx, "tok-1", revokedAt)
	if err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	if !got.RevokedAt.Equal(revokedAt) {
		t.Fatalf("RevokedAt after revoking = %v, want %v", got.RevokedAt, revokedAt)
	}
}
