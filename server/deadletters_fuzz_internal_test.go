package server

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hookverify/hookverify/storage"
)

// FuzzParseDeadLetterToken: ListDeadLetters page tokens come back from any admin caller, who
// may forge or alter them. Properties:
//   - any token gets a key or an INVALID_ARGUMENT error, never a panic;
//   - an accepted token names a key a stored dead delivery can have (time within the stores'
//     range, a non-empty UTF-8 inbox id without NUL), and the token this service would give for
//     that key names the same key (the parse is stable);
//   - a token given for one filter is refused for another filter, and accepted for the same
//     filter written in another order;
//   - the token deadLetterToken gives for a well-formed key parses back to exactly that key.
func FuzzParseDeadLetterToken(f *testing.F) {
	filter := storage.InboxFilter{EndpointIDs: []string{"ep-a", "ep-b"}, Scopes: []string{"s"}}
	good := deadLetterToken(storage.DeadLetterKey{VisibleAt: time.Unix(1_700_000_000, 123_000).UTC(), InboxID: "in_1"}, filter)
	f.Add(good, int64(1_700_000_000_000_123), "in_1", "ep-a")
	f.Add("", int64(0), "", "")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("d1:x:1:a")), int64(-62135596800000000), "a:b", "ep-b")
	f.Add(base64.StdEncoding.EncodeToString([]byte("d1::+5:\x00")), int64(253402300799999999), "\xff", "")
	f.Add(strings.Repeat("A", 1025), int64(-1), "in", "s")
	f.Fuzz(func(t *testing.T, token string, micros int64, inboxID, otherEndpoint string) {
		key, err := parseDeadLetterToken(token, filter)
		if err != nil {
			if !strings.Contains(err.Error(), "InvalidArgument") {
				t.Fatalf("parseDeadLetterToken(%q) error %v is not INVALID_ARGUMENT", token, err)
			}
		} else if token != "" {
			if key.VisibleAt.Before(minTokenTime) || key.VisibleAt.After(maxTokenTime) || key.InboxID == "" ||
				!utf8.ValidString(key.InboxID) || strings.IndexByte(key.InboxID, 0) >= 0 {
				t.Fatalf("parseDeadLetterToken(%q) accepted key %+v", token, key)
			}
			again, err := parseDeadLetterToken(deadLetterToken(key, filter), filter)
			if err != nil || !again.VisibleAt.Equal(key.VisibleAt) || again.InboxID != key.InboxID {
				t.Fatalf("key %+v from %q re-encodes to a token that parses as %+v, %v", key, token, again, err)
			}
			// The same filters in another order and repeated list the same deliveries.
			same := storage.InboxFilter{EndpointIDs: []string{"ep-b", "ep-a", "ep-b"}, Scopes: []string{"s", "s"}}
			if _, err := parseDeadLetterToken(token, same); err != nil {
				t.Fatalf("token accepted for %+v refused for the same filter %+v: %v", filter, same, err)
			}
			other := storage.InboxFilter{EndpointIDs: append([]string{otherEndpoint}, filter.EndpointIDs...), Scopes: filter.Scopes}
			if otherEndpoint != "ep-a" && otherEndpoint != "ep-b" {
				if _, err := parseDeadLetterToken(token, other); err == nil {
					t.Fatalf("token for %+v accepted for other filters %+v", filter, other)
				}
			}
		}

		// Round trip from a key.
		k := storage.DeadLetterKey{VisibleAt: time.UnixMicro(micros).UTC(), InboxID: inboxID}
		wellFormed := !k.VisibleAt.Before(minTokenTime) && !k.VisibleAt.After(maxTokenTime) && inboxID != "" &&
			utf8.ValidString(inboxID) && strings.IndexByte(inboxID, 0) < 0
		tok := deadLetterToken(k, filter)
		back, err := parseDeadLetterToken(tok, filter)
		if wellFormed && len(tok) <= maxPageToken {
			if err != nil || !back.VisibleAt.Equal(k.VisibleAt) || back.InboxID != k.InboxID {
				t.Fatalf("key %+v: token %q parses as %+v, %v", k, tok, back, err)
			}
		} else if !wellFormed && err == nil {
			t.Fatalf("key %+v no stored delivery can have: its token was accepted as %+v", k, back)
		}
	})
}
