package server

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParseListingTokens: ListEndpoints and ListAuditEvents page tokens come back from any
// admin caller, who may forge or alter them. Properties:
//   - any token gets a place or an INVALID_ARGUMENT error, never a panic;
//   - an accepted endpoint token names an id an endpoint can be listed after (non-empty UTF-8
//     without NUL), and the token this service gives for that id names it again;
//   - an accepted audit token names a time within the stores' range and such an id, and
//     re-encodes to a token naming the same place;
//   - an endpoint token is never an audit token, nor the reverse (their versions differ).
func FuzzParseListingTokens(f *testing.F) {
	hash := setsHash([]string{"ep-a"}, []string{"2026-12-05T00:00:00Z"}, nil)
	f.Add(endpointPages.token(setsHash(), "ep-a"))
	f.Add(auditPages.token(hash, timedPlace(time.Unix(1_700_000_000, 123_000), "aud_1")))
	f.Add("")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("e1::\x00")))
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("a1:" + hash + ":-62135596800000001:x")))
	f.Add(strings.Repeat("A", maxPageToken+1))
	f.Fuzz(func(t *testing.T, token string) {
		if id, err := parseEndpointToken(token); err != nil {
			if !strings.Contains(err.Error(), "InvalidArgument") {
				t.Fatalf("parseEndpointToken(%q) error %v is not INVALID_ARGUMENT", token, err)
			}
		} else if token != "" {
			if !validPlaceID(id) {
				t.Fatalf("parseEndpointToken(%q) accepted id %q", token, id)
			}
			if again, err := parseEndpointToken(endpointPages.token(setsHash(), id)); err != nil || again != id {
				t.Fatalf("id %q from %q re-encodes to a token that parses as %q, %v", id, token, again, err)
			}
			if _, err := auditPages.parse(token, setsHash()); err == nil {
				t.Fatalf("endpoint token %q is taken as an audit token", token)
			}
		}
		place, err := auditPages.parse(token, hash)
		if err != nil {
			if !strings.Contains(err.Error(), "InvalidArgument") {
				t.Fatalf("auditPages.parse(%q) error %v is not INVALID_ARGUMENT", token, err)
			}
			return
		}
		at, id, ok := parseTimedPlace(place)
		if !ok {
			return
		}
		if at.Before(minTokenTime) || at.After(maxTokenTime) || id == "" || !utf8.ValidString(id) || strings.IndexByte(id, 0) >= 0 {
			t.Fatalf("audit token %q accepted the place %v %q", token, at, id)
		}
		again, err := auditPages.parse(auditPages.token(hash, timedPlace(at, id)), hash)
		if err != nil {
			t.Fatalf("audit place %v %q re-encodes to a token refused: %v", at, id, err)
		}
		if at2, id2, ok := parseTimedPlace(again); !ok || !at2.Equal(at) || id2 != id {
			t.Fatalf("audit place %v %q re-encodes to %v %q", at, id, at2, id2)
		}
		if _, err := parseEndpointToken(token); err == nil {
			t.Fatalf("audit token %q is taken as an endpoint token", token)
		}
	})
}
