package storagetest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

var timeType = reflect.TypeFor[time.Time]()

// diff lists how got differs from want, one line per field. Times compare as instants and
// must come back in UTC; nil and empty maps and slices are equal, since the contract does not
// promise to tell them apart.
func diff(want, got any) string {
	var lines []string
	diffValue("", reflect.ValueOf(want), reflect.ValueOf(got), &lines)
	return strings.Join(lines, "\n")
}

func diffValue(path string, want, got reflect.Value, lines *[]string) {
	add := func(format string, args ...any) {
		*lines = append(*lines, strings.TrimPrefix(path, ".")+": "+fmt.Sprintf(format, args...))
	}
	if want.Type() == timeType {
		w, g := want.Interface().(time.Time), got.Interface().(time.Time)
		switch {
		case !w.Equal(g):
			add("got %s, want %s", fmtTime(g), fmtTime(w))
		case !g.IsZero() && g.Location() != time.UTC:
			add("got %s in location %q, want UTC", fmtTime(g), g.Location())
		}
		return
	}
	switch want.Kind() {
	case reflect.Struct:
		for i := range want.NumField() {
			diffValue(path+"."+want.Type().Field(i).Name, want.Field(i), got.Field(i), lines)
		}
	case reflect.Slice:
		if want.Type().Elem().Kind() == reflect.Uint8 {
			if !bytes.Equal(want.Bytes(), got.Bytes()) {
				add("got bytes %q, want %q", got.Bytes(), want.Bytes())
			}
			return
		}
		if want.Len() != got.Len() {
			add("got %d elements, want %d: got %+v, want %+v", got.Len(), want.Len(), got, want)
			return
		}
		for i := range want.Len() {
			diffValue(fmt.Sprintf("%s[%d]", path, i), want.Index(i), got.Index(i), lines)
		}
	case reflect.Map:
		if want.Len() != got.Len() {
			add("got %d entries %v, want %d %v", got.Len(), got, want.Len(), want)
			return
		}
		for _, k := range want.MapKeys() {
			g := got.MapIndex(k)
			if !g.IsValid() {
				add("missing key %q", k)
				continue
			}
			diffValue(fmt.Sprintf("%s[%q]", path, k), want.MapIndex(k), g, lines)
		}
	default:
		if !want.Equal(got) {
			add("got %#v, want %#v", got, want)
		}
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "zero time"
	}
	return t.Format(time.RFC3339Nano)
}

// must fails the test if err is not nil.
func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", what, err)
	}
}

// wantErr fails the test unless err wraps target.
func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want one wrapping %v", what, err, target)
	}
}

// wantSame fails the test with a field-by-field report if got differs from want.
func wantSame(t *testing.T, want, got any, what string) {
	t.Helper()
	if d := diff(want, got); d != "" {
		t.Fatalf("%s differs:\n%s", what, d)
	}
}

// base is the reference instant of the suite: UTC, with a microsecond fraction so that a
// backend that drops precision below the second or the millisecond is caught.
var base = time.Date(2025, time.March, 14, 15, 9, 26, 535897000, time.UTC)

// at returns base plus d, truncated to microseconds as every time in the suite is.
func at(d time.Duration) time.Time {
	return base.Add(d).Truncate(time.Microsecond)
}

func newEndpoint(id string) storage.Endpoint {
	return storage.Endpoint{
		ID:                 id,
		Provider:           "stripe",
		TimestampTolerance: 5 * time.Minute,
		MaxBodyBytes:       1 << 20,
		DedupeScope:        id,
		Options:            map[string]string{"region": "eu"},
		CreatedAt:          at(0),
		UpdatedAt:          at(0),
	}
}

func newSecret(endpointID, id string, created time.Time) storage.Secret {
	return storage.Secret{
		ID:         id,
		EndpointID: endpointID,
		KeyID:      "master-1",
		Sealed:     []byte("sealed:" + id),
		CreatedAt:  created,
		// Fingerprints are opaque text to the store.
		Fingerprint: "fp_" + id,
	}
}

func newDelivery(endpointID, scope, eventID, inboxID string) storage.Delivery {
	return storage.Delivery{
		InboxID:      inboxID,
		Scope:        scope,
		EventID:      eventID,
		EndpointID:   endpointID,
		OperationKey: "op-" + inboxID,
		SecretID:     "sec-1",
		Method:       "POST",
		URL:          "https://hooks.example.com/in/" + endpointID,
		Headers: []storage.Header{
			{Name: "Content-Type", Value: "application/json"},
			{Name: "Webhook-Id", Value: eventID},
		},
		Body:       []byte(`{"id":"` + eventID + `"}`),
		ReceivedAt: at(time.Second),
	}
}

// acceptedBy is the result a claim made by d must report.
func acceptedBy(d storage.Delivery) storage.ClaimResult {
	return storage.ClaimResult{
		Accepted:        true,
		InboxID:         d.InboxID,
		OperationKey:    d.OperationKey,
		FirstReceivedAt: d.ReceivedAt,
	}
}

// rejectedFor is the result a duplicate of the claim made by first must report.
func rejectedFor(first storage.Delivery) storage.ClaimResult {
	r := acceptedBy(first)
	r.Accepted = false
	return r
}

func createEndpoint(t *testing.T, s storage.Store, e storage.Endpoint) {
	t.Helper()
	must(t, s.CreateEndpoint(t.Context(), e), "CreateEndpoint "+e.ID)
}

func addSecret(t *testing.T, s storage.Store, sec storage.Secret) {
	t.Helper()
	must(t, s.AddSecret(t.Context(), sec, nil), "AddSecret "+sec.ID)
}

func claim(t *testing.T, s storage.Store, d storage.Delivery) storage.ClaimResult {
	t.Helper()
	r, err := s.Claim(t.Context(), d)
	must(t, err, "Claim "+d.InboxID)
	return r
}

func wantCount(t *testing.T, s storage.Store, scope string, want int64) {
	t.Helper()
	n, err := s.CountDeliveries(t.Context(), scope)
	must(t, err, fmt.Sprintf("CountDeliveries(%q)", scope))
	if n != want {
		t.Fatalf("CountDeliveries(%q) = %d, want %d", scope, n, want)
	}
}
