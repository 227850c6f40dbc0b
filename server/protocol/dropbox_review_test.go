package protocol

import (
	"testing"
	"time"
)

// TestDropboxRepeatedNotificationsAreNotMerged: Dropbox sends the same body, byte for byte,
// for every change to an account ({"list_folder":{"accounts":[id]},...}), and only says
// "something changed, sync with your cursor". Two notifications minutes apart are two
// changes; merging them by the body hash would answer every later one DUPLICATE for the
// whole dedupe window, so the app would never hear of those changes. Each authenticated
// notification must get an identity of its own, stable for one verification.
func TestDropboxRepeatedNotificationsAreNotMerged(t *testing.T) {
	t.Parallel()
	p := Dropbox()
	req := signed(t, p, SignInput{Body: []byte(dropboxBody)}, dropboxSecret)
	keys := keysFor(t, p, dropboxSecret)
	first, err := p.Verify(req, keys, Params{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.Verify(req, keys, Params{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if first.EventID == "" || first.EventID != again.EventID {
		t.Fatalf("one verification must name one event: %q then %q", first.EventID, again.EventID)
	}
	later, err := p.Verify(req, keys, Params{Now: fixedNow.Add(3 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if later.EventID == first.EventID {
		t.Fatalf("a notification three minutes later got the same identity %q: it would be dropped as a duplicate", later.EventID)
	}
}
