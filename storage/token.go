package storage

import (
	"context"
	"time"
)

// TokenStore keeps callers' API tokens, hashed: the store never sees a token itself, only the
// SHA-256 of one, so a copy of the database does not let anyone call the server.
type TokenStore interface {
	// CreateToken stores a new token. It returns ErrAlreadyExists if the id or the hash is
	// taken (a hash that was ever stored, revoked included, cannot be stored again) and
	// ErrInvalid if the id, the name or the hash is empty.
	CreateToken(ctx context.Context, t Token) error
	// TokenByHash returns the token with the hash, revoked or not, or ErrNotFound.
	TokenByHash(ctx context.Context, hash []byte) (Token, error)
	// ListTokens returns every token, revoked ones included, ordered by CreatedAt then ID.
	ListTokens(ctx context.Context) ([]Token, error)
	// RevokeToken marks the token revoked at the given time, if it is not revoked already,
	// and returns it as stored. ErrNotFound if no token has the id.
	RevokeToken(ctx context.Context, id string, at time.Time) (Token, error)
	// TouchToken records a use of the token: LastUsedAt becomes at unless it is already at or
	// after it. ErrNotFound if no token has the id. Callers write it at most about once a
	// minute per token, not per request.
	TouchToken(ctx context.Context, id string, at time.Time) error
}

// Token is a caller's API token as stored: its SHA-256 hash, never the token.
type Token struct {
	ID   string
	Name string
	// Hash is the SHA-256 of the token the caller sends.
	Hash []byte
	// Scopes are what the token allows (see the server's scope syntax); the store keeps them
	// as opaque strings, in order.
	Scopes    []string
	CreatedAt time.Time
	// Zero LastUsedAt means never used; zero RevokedAt means not revoked.
	LastUsedAt time.Time
	RevokedAt  time.Time
}
