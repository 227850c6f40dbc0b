package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/storage"
)

// Token format: tokenPrefix and 32 random bytes in unpadded base64url. The prefix lets secret
// scanners recognise a leaked token.
const (
	tokenPrefix     = "hvt_"
	tokenRandBytes  = 32
	maxTokenName    = 200
	minBootstrapLen = 32
	// BootstrapTokenName names the admin token stored from the bootstrap environment variable.
	BootstrapTokenName = "bootstrap"
)

var _ hookverifyv1.TokenServiceServer = (*Server)(nil)

// isTokenID reports whether id has the form newToken gives token ids: "tok_" and 16 lowercase
// hex digits.
func isTokenID(id string) bool {
	digits, ok := strings.CutPrefix(id, "tok_")
	_, err := hex.DecodeString(digits)
	return ok && len(digits) == 16 && err == nil && digits == strings.ToLower(digits)
}

// newToken returns a fresh token and its id.
func newToken() (id, token string, err error) {
	var b [tokenRandBytes + 8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	return "tok_" + hex.EncodeToString(b[tokenRandBytes:]), tokenPrefix + base64.RawURLEncoding.EncodeToString(b[:tokenRandBytes]), nil
}

// HashToken is what the TokenStore keeps of a token: its SHA-256. A token carries 256 random
// bits, so a plain hash cannot be reversed by guessing.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// CreateToken issues a new token and returns it, the only time it is shown.
func (s *Server) CreateToken(ctx context.Context, req *hookverifyv1.CreateTokenRequest) (*hookverifyv1.CreateTokenResponse, error) {
	st, err := s.storage()
	if err != nil {
		return nil, err
	}
	name := req.GetName()
	// NUL too is refused: PostgreSQL cannot store it in text, and both stores must agree.
	if name == "" || len(name) > maxTokenName || !utf8.ValidString(name) || strings.ContainsRune(name, 0) {
		return nil, status.Errorf(codes.InvalidArgument, "name must be 1 to %d bytes of UTF-8 without NUL", maxTokenName)
	}
	scopes, err := ParseScopes(req.GetScopes())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	id, token, err := newToken()
	if err != nil {
		return nil, status.Error(codes.Internal, "cannot generate a token")
	}
	t := storage.Token{ID: id, Name: name, Hash: HashToken(token), Scopes: scopeStrings(scopes), CreatedAt: s.clock()}
	auditCtx, err := s.audited(ctx, "token.create", "", "", describeToken(t))
	if err != nil {
		return nil, err
	}
	if err := st.CreateToken(auditCtx, t); err != nil {
		return nil, s.storageStatus(ctx, "create token", err)
	}
	s.invalidateTokens()
	s.log.InfoContext(ctx, "token created", "token_id", id, "name", name, "scopes", t.Scopes, "principal", PrincipalFrom(ctx).Name)
	return &hookverifyv1.CreateTokenResponse{Token: tokenToProto(t), BearerToken: token}, nil
}

// ListTokens lists every token's metadata.
func (s *Server) ListTokens(ctx context.Context, _ *hookverifyv1.ListTokensRequest) (*hookverifyv1.ListTokensResponse, error) {
	st, err := s.storage()
	if err != nil {
		return nil, err
	}
	list, err := st.ListTokens(ctx)
	if err != nil {
		return nil, s.storageStatus(ctx, "list tokens", err)
	}
	resp := &hookverifyv1.ListTokensResponse{Tokens: make([]*hookverifyv1.Token, len(list))}
	for i, t := range list {
		resp.Tokens[i] = tokenToProto(t)
	}
	return resp, nil
}

// RevokeToken stops a token, named by its id or given itself (hvt_..., or the bootstrap
// token); this instance refuses it from now on, others within the token cache TTL.
func (s *Server) RevokeToken(ctx context.Context, req *hookverifyv1.RevokeTokenRequest) (*hookverifyv1.RevokeTokenResponse, error) {
	st, err := s.storage()
	if err != nil {
		return nil, err
	}
	id := req.GetId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "id is required")
	}
	if mayBeToken(id) {
		// The token itself: after a leak it is what a secret scanner reports, and nothing
		// else maps it to its id. Revoke the token it is; never repeat it (in the answer,
		// the log or the audit trail), whether or not it matches one.
		tok, err := st.TokenByHash(ctx, HashToken(id))
		if errors.Is(err, storage.ErrNotFound) {
			return nil, status.Error(codes.NotFound, "no token matches the token given")
		}
		if err != nil {
			return nil, s.storageStatus(ctx, "revoke token", err)
		}
		id = tok.ID
	}
	auditCtx, err := s.audited(ctx, "token.revoke", "", "", "token "+id)
	if err != nil {
		return nil, err
	}
	t, err := st.RevokeToken(auditCtx, id, s.clock())
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			if !isTokenID(id) {
				// Not an id: maybe part of a token pasted short, which must not be repeated.
				return nil, status.Error(codes.NotFound, "no token has this id (ids look like tok_ and 16 hex digits)")
			}
			return nil, status.Errorf(codes.NotFound, "no token %q", id)
		}
		// A revocation that failed may have committed all the same (a COMMIT whose answer was
		// lost, a deadline passed while it ran): the caller is told UNAVAILABLE while token
		// list shows the token revoked, so this instance refuses it at once, as after one that
		// succeeded, not once its cache entry expires (--token-cache-ttl).
		s.invalidateTokens()
		return nil, s.storageStatus(ctx, "revoke token", err)
	}
	s.invalidateTokens()
	s.log.InfoContext(ctx, "token revoked", "token_id", t.ID, "name", t.Name, "principal", PrincipalFrom(ctx).Name)
	return &hookverifyv1.RevokeTokenResponse{Token: tokenToProto(t)}, nil
}

// mayBeToken reports whether RevokeToken's id may be a token rather than an id: an issued
// token (hvt_...) or anything as long as the shortest bootstrap token, which the operator
// chose and which has no prefix. An id (tok_ and 16 hex digits) is neither.
func mayBeToken(id string) bool {
	return strings.HasPrefix(id, tokenPrefix) || len(id) >= minBootstrapLen
}

// describeToken names a token for the audit trail: id, name and scopes, never the token.
func describeToken(t storage.Token) string {
	return fmt.Sprintf("token %s name=%q scopes=%s", t.ID, t.Name, strings.Join(t.Scopes, ","))
}

func (s *Server) invalidateTokens() {
	if s.auth != nil {
		s.auth.tokens.invalidateAll()
	}
}

// EnsureBootstrapToken stores token as an admin token named BootstrapTokenName if no token with
// the admin scope was ever stored (revoked ones count, so that revoking the bootstrap token
// sticks across restarts) and this token was never stored. It reports whether it stored it.
// Several instances starting at once store it once: the hash is unique. The token must be at
// least 32 printable ASCII characters; errors never quote it.
func EnsureBootstrapToken(ctx context.Context, st storage.TokenStore, token string, now func() time.Time) (bool, error) {
	if err := CheckBootstrapToken(token); err != nil {
		return false, err
	}
	list, err := st.ListTokens(ctx)
	if err != nil {
		return false, fmt.Errorf("bootstrap token: %w", err)
	}
	for _, t := range list {
		for _, sc := range t.Scopes {
			if sc == ScopeAdmin {
				return false, nil
			}
		}
	}
	id, _, err := newToken()
	if err != nil {
		return false, fmt.Errorf("bootstrap token: %w", err)
	}
	t := storage.Token{ID: id, Name: BootstrapTokenName, Hash: HashToken(token), Scopes: []string{ScopeAdmin},
		CreatedAt: now().UTC().Truncate(time.Microsecond)}
	auditID, err := newAuditID()
	if err != nil {
		return false, fmt.Errorf("bootstrap token: %w", err)
	}
	ctx = storage.WithAuditEvent(ctx, storage.AuditEvent{ID: auditID, At: t.CreatedAt, Actor: "bootstrap",
		Action: "token.create", Detail: describeToken(t) + " from $HOOKVERIFY_BOOTSTRAP_TOKEN"})
	if err := st.CreateToken(ctx, t); err != nil {
		if errors.Is(err, storage.ErrAlreadyExists) {
			return false, nil
		}
		return false, fmt.Errorf("bootstrap token: %w", err)
	}
	return true, nil
}

// CheckBootstrapToken reports whether token may serve as the bootstrap admin token: at least 32
// printable ASCII characters without spaces. The error does not quote it.
func CheckBootstrapToken(token string) error {
	if len(token) < minBootstrapLen {
		return fmt.Errorf("bootstrap token: want at least %d characters (generate one with: openssl rand -base64 32)", minBootstrapLen)
	}
	if _, err := bearerToken([]string{"Bearer " + token}); err != nil {
		return errors.New("bootstrap token: want printable ASCII without spaces")
	}
	return nil
}

func scopeStrings(scopes []Scope) []string {
	out := make([]string, len(scopes))
	for i, sc := range scopes {
		out[i] = sc.String()
	}
	return out
}

func tokenToProto(t storage.Token) *hookverifyv1.Token {
	out := &hookverifyv1.Token{Id: t.ID, Name: t.Name, Scopes: t.Scopes, CreatedAt: timestamppb.New(t.CreatedAt)}
	if !t.LastUsedAt.IsZero() {
		out.LastUsedAt = timestamppb.New(t.LastUsedAt)
	}
	if !t.RevokedAt.IsZero() {
		out.RevokedAt = timestamppb.New(t.RevokedAt)
	}
	return out
}
