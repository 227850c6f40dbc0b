package server

import "context"

// Principal is the authenticated caller of a request: who an audit record names and whose
// scopes authorize the call.
type Principal struct {
	// Name identifies the caller without revealing a credential: "token:<token id>",
	// "cert:<subject>", or "local" in the loopback-only development mode.
	Name string
	// Method says how the caller authenticated: "token", "mtls" or "none".
	Method string
}

// LocalPrincipal is the caller when no authentication is configured (loopback-only mode).
var LocalPrincipal = Principal{Name: "local", Method: "none"}

type principalKey struct{}

// WithPrincipal returns ctx carrying p; the authentication interceptor sets it.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the caller of the request, LocalPrincipal when none was set.
func PrincipalFrom(ctx context.Context) Principal {
	if p, ok := ctx.Value(principalKey{}).(Principal); ok {
		return p
	}
	return LocalPrincipal
}
