// Package storagetest is the conformance suite every storage backend runs.
package storagetest

import (
	"testing"

	"github.com/hookverify/hookverify/storage"
)

// Factory prepares a fresh, empty database for one test and returns a function that opens a
// migrated store on it. Each call of the returned function opens a new handle to the same
// database (so a test can close a store and reopen it). The factory registers its own cleanup.
type Factory func(t *testing.T) (open func(t *testing.T) storage.Store)

// Run runs the whole conformance suite against the backend the factory makes.
func Run(t *testing.T, newStore Factory) {
	t.Helper()
	// TODO(storagetest author): the suite.
}
