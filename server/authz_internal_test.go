package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/internal/testpki"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/server/secretbox"
)

// TestEveryRegisteredMethodHasARule keeps the authorization table complete: every unary
// method of every service but health and reflection has a rule, every rule names a registered
// method, and no hookverify method streams (the stream interceptor refuses all streams).
func TestEveryRegisteredMethodHasARule(t *testing.T) {
	kr := testpki.Keyring(t)
	s, err := New(Options{Keyring: kr, Protocols: protocol.Default(), Auth: &AuthConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	g := s.NewGRPCServer()
	registered := map[string]bool{}
	for service, info := range g.GetServiceInfo() {
		for _, m := range info.Methods {
			full := "/" + service + "/" + m.Name
			if isOpenMethod(full) {
				continue
			}
			registered[full] = true
			if m.IsClientStream || m.IsServerStream {
				t.Errorf("%s streams: the stream interceptor would refuse it; give streams an authorization rule first", full)
			}
			if r, ok := methodRules[full]; !ok || r.check == nil {
				t.Errorf("%s has no authorization rule in methodRules: it is refused to everyone", full)
			}
		}
	}
	for full := range methodRules {
		if !registered[full] {
			t.Errorf("methodRules names %s, which no registered service has", full)
		}
	}
	for _, service := range []string{"hookverify.v1.VerifierService", "hookverify.v1.AdminService", "hookverify.v1.InboxService", "hookverify.v1.TokenService"} {
		if _, ok := g.GetServiceInfo()[service]; !ok {
			t.Errorf("%s is not registered", service)
		}
	}
}

// TestOpenMethodsAreNamedOneByOne: a method a later gRPC release adds to the health or
// reflection service is not open by its service's name alone; it needs a caller until it is
// listed in openMethods (and TestEveryRegisteredMethodHasARule then fails, asking for that
// review).
func TestOpenMethodsAreNamedOneByOne(t *testing.T) {
	s, err := New(Options{Keyring: testpki.Keyring(t), Protocols: protocol.Default(), Auth: &AuthConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{
		"/grpc.health.v1.Health/SetServingStatus",
		"/grpc.health.v1.Health/",
		"/grpc.reflection.v1.ServerReflection/Other",
		"/grpc.reflection.v1alpha.ServerReflection/",
		"/grpc.health.v1.Health/Check/",
	} {
		if isOpenMethod(method) {
			t.Errorf("%s is open without a caller", method)
		}
		_, err := s.authInterceptor(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: method},
			func(context.Context, any) (any, error) { return "ran", nil })
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s without a caller = %v, want UNAUTHENTICATED", method, err)
		}
	}
}

func TestMethodWithoutRuleIsDenied(t *testing.T) {
	s := &Server{}
	admin := caller{principal: Principal{Name: "token:tok_1", Method: "token"}, scopes: scopeSet{{Kind: ScopeAdmin}}}
	for _, method := range []string{"/hookverify.v1.AdminService/DropEverything", "/hookverify.v1.NewService/Anything", ""} {
		err := s.authorize(context.Background(), admin, method, nil)
		var f *authFailure
		if !errors.As(err, &f) || f.code != codes.PermissionDenied {
			t.Errorf("authorize(%q) by an admin = %v, want PERMISSION_DENIED", method, err)
		}
	}
}

func TestParseScope(t *testing.T) {
	valid := map[string]Scope{
		"admin":             {Kind: ScopeAdmin},
		"verify:acme-1":     {Kind: ScopeVerify, Endpoints: "acme-1"},
		"verify:acme-*":     {Kind: ScopeVerify, Endpoints: "acme-*"},
		"verify:*":          {Kind: ScopeVerify, Endpoints: "*"},
		"inbox:a.b_c-D":     {Kind: ScopeInbox, Endpoints: "a.b_c-D"},
		"inbox:tenant.eu-*": {Kind: ScopeInbox, Endpoints: "tenant.eu-*"},
	}
	for text, want := range valid {
		got, err := ParseScope(text)
		if err != nil || got != want {
			t.Errorf("ParseScope(%q) = %+v, %v; want %+v", text, got, err, want)
		}
		if got.String() != text {
			t.Errorf("ParseScope(%q).String() = %q", text, got.String())
		}
	}
	for _, text := range []string{"", "admin:x", "verify", "verify:", "inbox:a*b", "inbox:**", "verify:a b", "verify:a/b",
		"Admin", "read:x", "verify:" + strings.Repeat("a", 129)} {
		if got, err := ParseScope(text); err == nil {
			t.Errorf("ParseScope(%q) = %+v, want an error", text, got)
		}
	}
	if _, err := ParseScopes(nil); err == nil {
		t.Error("ParseScopes(nil): want an error")
	}
}

func TestScopeCovers(t *testing.T) {
	cases := []struct {
		scope, kind, endpoint string
		want                  bool
	}{
		{"verify:acme-orders", ScopeVerify, "acme-orders", true},
		{"verify:acme-orders", ScopeVerify, "acme-orders2", false},
		{"verify:acme-orders", ScopeInbox, "acme-orders", false},
		{"verify:acme-*", ScopeVerify, "acme-orders", true},
		{"verify:acme-*", ScopeVerify, "acme-", true},
		{"verify:acme-*", ScopeVerify, "acme", false},
		{"verify:acme-*", ScopeVerify, "globex-acme-x", false},
		{"verify:*", ScopeVerify, "anything", true},
		{"inbox:*", ScopeVerify, "anything", false},
		{"admin", ScopeVerify, "anything", true},
		{"admin", ScopeInbox, "anything", true},
	}
	for _, c := range cases {
		sc, err := ParseScope(c.scope)
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.covers(c.kind, c.endpoint); got != c.want {
			t.Errorf("%s covers %s on %q = %v, want %v", c.scope, c.kind, c.endpoint, got, c.want)
		}
	}
}

// TestNewRefusesCertScopesParseScopeWouldNotGive: AuthConfig.CertScopes built in Go, not
// parsed, took Scope{Kind: "admin", Endpoints: "acme-*"} (meant for one tenant, granting every
// endpoint) and a scope of an unknown kind (granting nothing) without a word.
func TestNewRefusesCertScopesParseScopeWouldNotGive(t *testing.T) {
	keyring, err := secretbox.NewKeyring(make([]byte, secretbox.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range []Scope{{Kind: ScopeAdmin, Endpoints: "acme-*"}, {Kind: "verfy", Endpoints: "*"}, {Kind: ScopeVerify}, {Kind: ScopeInbox, Endpoints: "a b"}} {
		_, err := New(Options{Keyring: keyring, Protocols: protocol.Default(), Auth: &AuthConfig{CertScopes: map[string][]Scope{"CN=edge-1": {sc}}}})
		if err == nil || !strings.Contains(err.Error(), "CN=edge-1") {
			t.Errorf("CertScopes with %+v: %v; want refused, naming the subject", sc, err)
		}
	}
	for _, text := range []string{"admin", "verify:acme-*", "inbox:shop-1", "verify:*"} {
		sc, err := ParseScope(text)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(Options{Keyring: keyring, Protocols: protocol.Default(), Auth: &AuthConfig{CertScopes: map[string][]Scope{"CN=edge-1": {sc}}}}); err != nil {
			t.Errorf("CertScopes with %s: %v", text, err)
		}
	}
}
