package protocol

import (
	"testing"
	"time"
)

// Dropbox sends the same bytes for every change to an account, and a burst of changes can
// bring two notifications within one second: they are told apart by the verification time to
// the nanosecond, so the second is not dropped as a duplicate of the first.
func TestDropboxNotificationsWithinOneSecondAreNotMerged(t *testing.T) {
	t.Parallel()
	p := Dropbox()
	req := signed(t, p, SignInput{Body: []byte(dropboxBody)}, dropboxSecret)
	keys := keysFor(t, p, dropboxSecret)
	seen := map[string]time.Duration{}
	for _, d := range []time.Duration{0, time.Nanosecond, time.Millisecond, 999 * time.Millisecond} {
		id := eventIDOf(t, p, keys, req, fixedNow.Add(d))
		if prev, ok := seen[id]; ok {
			t.Fatalf("notifications verified %v and %v after one another share the identity %q", prev, d, id)
		}
		seen[id] = d
	}
}

// The identity's time is the verification time in UTC (IdentitySource), whatever the zone of
// the verifier's clock reading: the same instant names the same notification.
func TestDropboxNotificationTimeIsUTC(t *testing.T) {
	t.Parallel()
	p := Dropbox()
	req := signed(t, p, SignInput{Body: []byte(dropboxBody)}, dropboxSecret)
	keys := keysFor(t, p, dropboxSecret)
	utc := eventIDOf(t, p, keys, req, fixedNow.UTC())
	zoned := eventIDOf(t, p, keys, req, fixedNow.In(time.FixedZone("UTC+5:30", 5*3600+1800)))
	if utc != zoned || utc[len(utc)-len("20231114T221320.000000000Z"):] != "20231114T221320.000000000Z" {
		t.Fatalf("EventID at one instant: UTC %q, +05:30 %q; want both to end in the UTC time 20231114T221320.000000000Z", utc, zoned)
	}
}
