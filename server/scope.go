package server

import (
	"fmt"
	"regexp"
	"strings"
)

// Scope kinds. admin covers every other scope: an admin can create itself any token anyway.
const (
	ScopeAdmin  = "admin"
	ScopeVerify = "verify"
	ScopeInbox  = "inbox"
)

// Scope is one thing a caller may do: "admin", or "verify:<endpoints>" / "inbox:<endpoints>"
// where <endpoints> is one endpoint id, a prefix of ids ending in "*" (a tenant, such as
// "acme-*"), or "*" for every endpoint.
type Scope struct {
	// Kind is ScopeAdmin, ScopeVerify or ScopeInbox.
	Kind string
	// Endpoints is the endpoint id, prefix* or * the scope covers; empty for admin.
	Endpoints string
}

// scopePrefixPattern is an endpoint id prefix: what ids may contain, possibly empty.
var scopePrefixPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{0,127}$`)

// ParseScope parses the text form of a scope. The error quotes the scope, which is no secret.
func ParseScope(text string) (Scope, error) {
	kind, endpoints, hasEndpoints := strings.Cut(text, ":")
	switch kind {
	case ScopeAdmin:
		if hasEndpoints {
			return Scope{}, fmt.Errorf("scope %q: admin covers every endpoint and takes none", text)
		}
		return Scope{Kind: ScopeAdmin}, nil
	case ScopeVerify, ScopeInbox:
		if !hasEndpoints {
			return Scope{}, fmt.Errorf("scope %q: want %s:<endpoint id>, %s:<prefix>* or %s:*", text, kind, kind, kind)
		}
		prefix, isPrefix := strings.CutSuffix(endpoints, "*")
		if isPrefix && !scopePrefixPattern.MatchString(prefix) || !isPrefix && !validID(endpoints) {
			return Scope{}, fmt.Errorf("scope %q: the endpoint must be an endpoint id, a prefix ending in * or *", text)
		}
		return Scope{Kind: kind, Endpoints: endpoints}, nil
	default:
		return Scope{}, fmt.Errorf("scope %q: want admin, verify:<endpoints> or inbox:<endpoints>", text)
	}
}

// ParseScopes parses a list of scopes; an empty list is an error, since the token could do
// nothing.
func ParseScopes(texts []string) ([]Scope, error) {
	if len(texts) == 0 {
		return nil, fmt.Errorf("at least one scope is required")
	}
	scopes := make([]Scope, len(texts))
	for i, text := range texts {
		var err error
		if scopes[i], err = ParseScope(text); err != nil {
			return nil, err
		}
	}
	return scopes, nil
}

// checkCertScopes refuses a scope that ParseScope would not give: built in Go rather than
// read from text, Scope{Kind: ScopeAdmin, Endpoints: "acme-*"} would read as a tenant's scope
// and grant every endpoint, and an unknown kind would grant nothing without a word.
func checkCertScopes(certScopes map[string][]Scope) error {
	for subject, scopes := range certScopes {
		for _, sc := range scopes {
			if parsed, err := ParseScope(sc.String()); err != nil || parsed != sc {
				return fmt.Errorf("server: AuthConfig.CertScopes[%q]: %+v is not a scope ParseScope gives (write it as text and parse it)", subject, sc)
			}
		}
	}
	return nil
}

// String returns the text form ParseScope reads.
func (s Scope) String() string {
	if s.Kind == ScopeAdmin {
		return ScopeAdmin
	}
	return s.Kind + ":" + s.Endpoints
}

// covers reports whether the scope allows kind on the endpoint.
func (s Scope) covers(kind, endpointID string) bool {
	if s.Kind == ScopeAdmin {
		return true
	}
	if s.Kind != kind {
		return false
	}
	if prefix, ok := strings.CutSuffix(s.Endpoints, "*"); ok {
		return strings.HasPrefix(endpointID, prefix)
	}
	return s.Endpoints == endpointID
}

// coversAll reports whether the scope allows kind on every endpoint, present and future.
func (s Scope) coversAll(kind string) bool {
	return s.Kind == ScopeAdmin || s.Kind == kind && s.Endpoints == "*"
}

// scopeSet is a caller's scopes.
type scopeSet []Scope

func (ss scopeSet) allows(kind, endpointID string) bool {
	for _, s := range ss {
		if s.covers(kind, endpointID) {
			return true
		}
	}
	return false
}

func (ss scopeSet) allowsAll(kind string) bool {
	for _, s := range ss {
		if s.coversAll(kind) {
			return true
		}
	}
	return false
}

func (ss scopeSet) allowsAny(kind string) bool {
	for _, s := range ss {
		if s.Kind == ScopeAdmin || s.Kind == kind {
			return true
		}
	}
	return false
}
