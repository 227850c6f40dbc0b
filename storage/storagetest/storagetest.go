// Package storagetest is the conformance suite every storage backend runs.
//
// A backend's test calls Run with a Factory; every test of the suite asks the factory for a
// fresh, empty database, so tests never see each other's rows and can run in any order. The
// suite uses times truncated to microseconds and expects every time a backend returns to be in
// UTC, and durations are whole milliseconds, which is the precision the schemas keep.
// Identifiers are valid UTF-8 text; only bodies, header values and sealed secrets carry
// arbitrary bytes. Identifiers holding NUL, which PostgreSQL's text cannot store, are never
// stored, but the inbox calls that only look them up must answer them as they answer any id
// that matches nothing (see testInboxHostileInput). Claim tests create the endpoints they
// deliver to, so a backend may, but need not, reference endpoints from its inbox.
package storagetest

import (
	"slices"
	"sync"
	"testing"

	"github.com/hookverify/hookverify/storage"
)

// Factory prepares a fresh, empty database for one test and returns a function that opens a
// migrated store on it. Each call of the returned function opens a new handle to the same
// database (so a test can close a store and reopen it). The factory registers its own cleanup.
type Factory func(t *testing.T) (open func(t *testing.T) storage.Store)

// Category names a group of tests that a backend may skip through Options.Skip.
type Category string

// The categories of the suite.
const (
	Endpoints   Category = "Endpoints"
	Secrets     Category = "Secrets"
	Claims      Category = "Claims"
	Concurrency Category = "Concurrency"
	Durability  Category = "Durability"
	Closed      Category = "Closed"
	Migrate     Category = "Migrate"
	Ping        Category = "Ping"
	Inbox       Category = "Inbox"
	Retention   Category = "Retention"
	Audit       Category = "Audit"
	Tokens      Category = "Tokens"
	// ErrorAnswers: refusals, answers to calls on settled leases, and calls whose caller has
	// gone, across the interfaces (see testErrorAnswers).
	ErrorAnswers Category = "ErrorAnswers"
)

// Options adjusts the suite for one backend. The zero value runs everything.
type Options struct {
	// Skip maps a category to the reason the backend cannot pass it. A reason is required so
	// that every gap in conformance is explained where it is declared.
	Skip map[Category]string
	// Parallel runs the categories, and the tests within them, in parallel. Set it only if
	// the factory may be called from several goroutines at once.
	Parallel bool
}

// Run runs the whole conformance suite against the backend the factory makes.
func Run(t *testing.T, newStore Factory) {
	t.Helper()
	RunWith(t, newStore, Options{})
}

// RunWith runs the conformance suite with options, skipping the categories opts.Skip names.
func RunWith(t *testing.T, newStore Factory, opts Options) {
	t.Helper()
	categories := []category{
		{Endpoints, testEndpoints},
		{Secrets, testSecrets},
		{Claims, testClaims},
		{Concurrency, testConcurrency},
		{Durability, testDurability},
		{Closed, testClosed},
		{Migrate, testMigrate},
		{Ping, testPing},
		{Inbox, testInbox},
		{Retention, testRetention},
		{Audit, testAudit},
		{Tokens, testTokens},
		{ErrorAnswers, testErrorAnswers},
	}
	for name, reason := range opts.Skip {
		known := slices.ContainsFunc(categories, func(c category) bool { return c.name == name })
		if !known {
			t.Fatalf("storagetest: Options.Skip names unknown category %q", name)
		}
		if reason == "" {
			t.Fatalf("storagetest: Options.Skip[%q] gives no reason", name)
		}
	}
	h := harness{newStore: newStore, parallel: opts.Parallel, started: new(sync.Map)}
	for _, c := range categories {
		t.Run(string(c.name), func(t *testing.T) {
			if reason, ok := opts.Skip[c.name]; ok {
				t.Skipf("skipped by the backend: %s", reason)
			}
			h.start(t)
			c.run(t, h)
		})
	}
}

type category struct {
	name Category
	run  func(t *testing.T, h harness)
}

// harness hands out fresh stores.
type harness struct {
	newStore Factory
	parallel bool
	// started holds the tests already marked parallel, since marking one twice panics.
	started *sync.Map
}

// start marks t parallel if the backend asked for it. Every test that takes a store calls
// it, through fresh or reopenable, before it makes one.
func (h harness) start(t *testing.T) {
	t.Helper()
	if !h.parallel {
		return
	}
	if _, again := h.started.LoadOrStore(t, true); !again {
		t.Parallel()
	}
}

// fresh returns an open store on a new, empty database. The store is closed when t ends.
func (h harness) fresh(t *testing.T) storage.Store {
	t.Helper()
	h.start(t)
	return openClosing(t, h.newStore(t))
}

// reopenable returns an opener for a new, empty database; each store it opens is closed when
// t ends (closing twice is harmless by contract).
func (h harness) reopenable(t *testing.T) func(t *testing.T) storage.Store {
	t.Helper()
	h.start(t)
	open := h.newStore(t)
	return func(t *testing.T) storage.Store {
		t.Helper()
		return openClosing(t, open)
	}
}

func openClosing(t *testing.T, open func(t *testing.T) storage.Store) storage.Store {
	t.Helper()
	s := open(t)
	if s == nil {
		t.Fatal("storagetest: the factory opened a nil store")
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// ClaimPathOnly returns an Options.Skip that skips every category but those that claim
// (Claims, Concurrency, Durability), for running the suite again in a mode that changes only
// the claim path, such as group commit turned off.
func ClaimPathOnly(reason string) map[Category]string {
	skip := make(map[Category]string)
	for _, c := range []Category{Endpoints, Secrets, Closed, Migrate, Ping, Inbox, Retention, Audit, Tokens, ErrorAnswers} {
		skip[c] = reason
	}
	return skip
}

// CommittingEachClaim wraps a factory so that every store it opens has group commit turned off
// (serve --commit-each-claim), for running the claim categories in that mode too.
func CommittingEachClaim(newStore Factory) Factory {
	return func(t *testing.T) func(t *testing.T) storage.Store {
		open := newStore(t)
		return func(t *testing.T) storage.Store {
			s := open(t)
			each, ok := s.(interface{ CommitEachClaim() })
			if !ok {
				t.Fatalf("storagetest: %T cannot turn group commit off", s)
			}
			each.CommitEachClaim()
			return s
		}
	}
}
