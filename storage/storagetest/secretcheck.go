package storagetest

import (
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// errKeyForm is a SecretCheck's refusal, returned by the store as it is.
var errKeyForm = errors.New("the secret does not read as a key under these options")

// storeSecret is AddSecret or RotateSecret, so that a case covers both ways a secret is stored.
type storeSecret struct {
	name  string
	store func(s storage.Store, t *testing.T, sec storage.Secret, check storage.SecretCheck) error
}

var storeSecretWays = []storeSecret{
	{"add", func(s storage.Store, t *testing.T, sec storage.Secret, check storage.SecretCheck) error {
		return s.AddSecret(storage.WithAuditEvent(t.Context(), auditEvent("a-add", "secret.add", sec.EndpointID, sec.ID, sec.CreatedAt)), sec, check)
	}},
	{"rotate", func(s storage.Store, t *testing.T, sec storage.Secret, check storage.SecretCheck) error {
		_, err := s.RotateSecret(storage.WithAuditEvent(t.Context(), auditEvent("a-rotate", "secret.rotate", sec.EndpointID, sec.ID, sec.CreatedAt)), sec, sec.CreatedAt, check)
		return err
	}},
}

// withKeyForm is an endpoint whose "key" option says how its secrets read (generic-hmac's
// hex, base64 or whsec), as far as these cases need.
func withKeyForm(id, form string) storage.Endpoint {
	e := newEndpoint(id)
	e.Options = map[string]string{"key": form}
	return e
}

// hexEndpointOnTwoHandles opens two handles on one fresh store holding ep-1 with the hex key
// form: one to change the endpoint, one to store a secret, at the same time.
func hexEndpointOnTwoHandles(t *testing.T, h harness) (updater, adder storage.Store) {
	t.Helper()
	open := h.reopenable(t)
	updater, adder = open(t), open(t)
	createEndpoint(t, updater, withKeyForm("ep-1", "hex"))
	return updater, adder
}

// keyFormIs is a SecretCheck that takes a secret only under the key form given.
func keyFormIs(form string) storage.SecretCheck {
	return func(e storage.Endpoint) error {
		if e.Options["key"] != form {
			return errKeyForm
		}
		return nil
	}
}

// testSecretChecks: a secret stored and an endpoint changed at the same time are each judged
// against the other as stored (storage.ModifyEndpoint, storage.SecretCheck). Checked before
// their transactions instead, an update to generic-hmac's key form and a secret added in the
// old form could both pass, leaving a secret in force that never matches.
func testSecretChecks(t *testing.T, h harness) {
	t.Run("modify endpoint is given the endpoint's secrets as stored", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		createEndpoint(t, s, newEndpoint("ep-2"))
		first := newSecret("ep-1", "sec-1", at(0))
		retired := newSecret("ep-1", "sec-2", at(time.Second))
		retired.RetiredAt = at(time.Minute)
		addSecret(t, s, first)
		addSecret(t, s, retired)
		addSecret(t, s, newSecret("ep-2", "sec-3", at(0)))
		var given []storage.Secret
		_, err := s.ModifyEndpoint(t.Context(), "ep-1", func(current storage.Endpoint, secrets []storage.Secret) (storage.Endpoint, string, error) {
			given = secrets
			return increment(1)(current, secrets)
		})
		must(t, err, "ModifyEndpoint")
		wantSame(t, []storage.Secret{first, retired}, given, "secrets given to the change")
	})

	for _, way := range storeSecretWays {
		t.Run(way.name+": the check sees the endpoint as stored, and its refusal writes nothing", func(t *testing.T) {
			s := h.fresh(t)
			e := withKeyForm("ep-1", "hex")
			createEndpoint(t, s, e)
			earlier := newSecret("ep-1", "sec-old", at(0))
			addSecret(t, s, earlier)
			var seen []storage.Endpoint
			refuse := func(current storage.Endpoint) error {
				seen = append(seen, current)
				return errKeyForm
			}
			err := way.store(s, t, newSecret("ep-1", "sec-new", at(time.Hour)), refuse)
			if err != errKeyForm { // the refusal itself, unwrapped
				t.Fatalf("refused %s: got %v, want the check's own error", way.name, err)
			}
			if len(seen) == 0 {
				t.Fatal("the check was not run")
			}
			wantSame(t, e, seen[len(seen)-1], "endpoint given to the check")
			wantSame(t, []storage.Secret{earlier}, listSecrets(t, s, "ep-1"), "secrets after a refusal")
			if events := listAudit(t, s, storage.AuditFilter{EndpointID: "ep-1", Limit: 10}); len(events) != 0 {
				t.Errorf("a refused %s recorded %+v", way.name, events)
			}

			must(t, way.store(s, t, newSecret("ep-1", "sec-new", at(time.Hour)), keyFormIs("hex")), way.name+" taken by its check")
			if got := listSecrets(t, s, "ep-1"); len(got) != 2 {
				t.Errorf("secrets after a %s the check took: %+v", way.name, got)
			}
		})

		t.Run(way.name+": an unknown endpoint is not found and not checked", func(t *testing.T) {
			s := h.fresh(t)
			called := false
			err := way.store(s, t, newSecret("ep-1", "sec-1", at(0)), func(storage.Endpoint) error {
				called = true
				return nil
			})
			wantErr(t, err, storage.ErrNotFound, way.name+" for an unknown endpoint")
			if called {
				t.Error("the check ran for an endpoint that does not exist")
			}
		})

		// The update's transaction is held open inside its change while the secret is stored
		// from another handle: the secret's check must see the update's result, not what was
		// stored before it.
		t.Run(way.name+": a secret stored while an endpoint change is in progress is checked against its result", func(t *testing.T) {
			updater, adder := hexEndpointOnTwoHandles(t, h)
			inChange, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			updated := make(chan error, 1)
			go func() {
				_, err := updater.ModifyEndpoint(t.Context(), "ep-1", func(current storage.Endpoint, secrets []storage.Secret) (storage.Endpoint, string, error) {
					once.Do(func() {
						close(inChange)
						<-release
					})
					return toBase64(current, secrets)
				})
				updated <- err
			}()
			reached(t, inChange, updated, "the endpoint change")
			stored := make(chan error, 1)
			go func() { stored <- way.store(adder, t, newSecret("ep-1", "sec-hex", at(time.Hour)), keyFormIs("hex")) }()
			waitAWhile(stored)
			close(release)
			wantOneOrder(t, updater, way.name, <-stored, <-updated)
		})

		// The secret's transaction is held open inside its check while the endpoint changes
		// from another handle: the change must be given the secret.
		t.Run(way.name+": an endpoint change meeting a secret stored in progress is given the secret", func(t *testing.T) {
			updater, adder := hexEndpointOnTwoHandles(t, h)
			inCheck, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			stored := make(chan error, 1)
			go func() {
				stored <- way.store(adder, t, newSecret("ep-1", "sec-hex", at(time.Hour)), func(e storage.Endpoint) error {
					once.Do(func() {
						close(inCheck)
						<-release
					})
					return keyFormIs("hex")(e)
				})
			}()
			reached(t, inCheck, stored, "the "+way.name+" of the secret")
			updated := make(chan error, 1)
			go func() {
				_, err := updater.ModifyEndpoint(t.Context(), "ep-1", toBase64)
				updated <- err
			}()
			waitAWhile(updated)
			close(release)
			wantOneOrder(t, updater, way.name, <-stored, <-updated)
		})
	}
}

// toBase64 changes the key form from hex to base64 unless a secret is stored, which would not
// read under it: as UpdateEndpoint refuses a change under which a secret stops reading.
func toBase64(current storage.Endpoint, secrets []storage.Secret) (storage.Endpoint, string, error) {
	if len(secrets) > 0 {
		return storage.Endpoint{}, "", errKeyForm
	}
	next := current
	next.Options = map[string]string{"key": "base64"}
	next.UpdatedAt = current.UpdatedAt.Add(time.Microsecond)
	return next, "key hex -> base64", nil
}

// wantOneOrder fails the test unless a hex secret stored (storeErr) and a change of ep-1's
// key form to base64 (toBase64, changeErr) made at the same time ended as one order of the
// two would: the secret stored and the change refused for it, or the change made and the
// secret refused by its check. Both made would leave a secret in force that never matches.
func wantOneOrder(t *testing.T, s storage.Store, way string, storeErr, changeErr error) {
	t.Helper()
	for what, err := range map[string]error{way: storeErr, "the change": changeErr} {
		if err != nil && !errors.Is(err, errKeyForm) {
			t.Fatalf("%s: %v", what, err)
		}
	}
	e, err := s.GetEndpoint(t.Context(), "ep-1")
	must(t, err, "GetEndpoint")
	secrets := listSecrets(t, s, "ep-1")
	switch {
	case storeErr == nil && changeErr == nil:
		t.Fatalf("the %s of a hex secret and a change of the key form to base64 both succeeded: options %v, secrets %+v", way, e.Options, secrets)
	case storeErr != nil && changeErr != nil:
		t.Fatalf("the %s of a hex secret and a change of the key form were both refused", way)
	case storeErr == nil && (len(secrets) != 1 || !maps.Equal(e.Options, map[string]string{"key": "hex"})):
		t.Errorf("the change refused after the %s: options %v, secrets %+v, want key hex and the secret", way, e.Options, secrets)
	case changeErr == nil && (len(secrets) != 0 || !maps.Equal(e.Options, map[string]string{"key": "base64"})):
		t.Errorf("the %s refused after the change: options %v, secrets %+v, want key base64 and no secret", way, e.Options, secrets)
	}
}

// reached waits for a call started on another handle to reach the point a case holds its
// transaction open at (at closed), and fails the case if the call ends first (done): a store
// that never runs the change or the check would otherwise leave the case waiting until go
// test's timeout, which reports no test's failure, only the stacks.
func reached(t *testing.T, at <-chan struct{}, done chan error, what string) {
	t.Helper()
	select {
	case <-at:
	case err := <-done:
		t.Fatalf("%s ended without running the function a case holds its transaction open in (error: %v)", what, err)
	}
}

// waitAWhile gives a call started on another handle time to reach, and if nothing stops it
// pass, the point a case holds a transaction open at, then leaves done as it was. The outcome
// a case checks must hold whether or not the call got that far meanwhile.
func waitAWhile(done chan error) {
	select {
	case err := <-done:
		done <- err
	case <-time.After(200 * time.Millisecond):
	}
}
