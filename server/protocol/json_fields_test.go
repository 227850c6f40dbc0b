package protocol

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// jsonBodyStringByMaps is how jsonBodyString used to read the body, decoding every level into
// map[string]json.RawMessage: the oracle the scanning version must agree with on any input.
// Both decode the value they find with jsonIDString.
func jsonBodyStringByMaps(body []byte, path ...string) (string, error) {
	obj, err := jsonObject(body)
	if err != nil {
		return "", err
	}
	name := strings.Join(path, ".")
	for i, key := range path {
		raw, ok := obj[key]
		if !ok {
			return "", Reject(ReasonMissingEventID, "body has no %q field", name)
		}
		if i == len(path)-1 {
			return jsonIDString(raw, name) // the leaf is decoded alike; finding it is what differs
		}
		obj = nil
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return "", Reject(ReasonMissingEventID, "body field %q is not an object", strings.Join(path[:i+1], "."))
		}
	}
	return "", Reject(ReasonMissingEventID, "no identity path")
}

// jsonBodyStringCases are bodies where a shortcut could go wrong: repeated and escaped keys,
// nesting, values that look like keys, white space everywhere, documents that are not objects
// or not valid.
var jsonBodyStringCases = []string{
	`{"id":"evt_1"}`,
	` { "id" : "evt_1" } `,
	"\t{\n\"id\"\r:\n\"evt_1\"\t}\n",
	`{"id":"first","id":"last"}`,
	`{"\u0069d":"escaped key"}`,
	`{"i\"d":"not id","id":"id"}`,
	`{"x":{"id":"nested only"}}`,
	`{"x":"{\"id\":\"in a string\"}","id":"top"}`,
	`{"x":[{"id":1},"]}",{"y":"}"}],"id":"after an array"}`,
	`{"id":"caf\u00e9 \ud83d\ude00 \\ \" \/"}`,
	`{"id":"\ud800 lone surrogate"}`,
	"{\"id\":\"invalid \xff utf-8\"}",
	"{\"\xffid\":\"invalid key\"}",
	`{"id":""}`, `{"id":null}`, `{"id":1}`, `{"id":true}`, `{"id":{"a":1}}`, `{"id":["a"]}`,
	`{"id":-1.5e+10,"x":"y"}`,
	`{"event":{"id":"evt_nested"}}`, `{"event":{"id":"a"},"event":{"other":"b"}}`,
	`{"event":null}`, `{"event":"x"}`, `{"event":[]}`, `{"event":{}}`,
	`{}`, `[]`, `null`, `"id"`, `1`, ``, ` `, `{`, `{"id":"evt_1"`, `{"id":"evt_1"} x`,
	`{"id":"evt_1",}`, `{"id" "evt_1"}`, `{'id':'evt_1'}`, `{"id":"evt_1"}{"id":"two"}`,
	"{\"id\":\"evt_1\"}\x00", "\ufeff{\"id\":\"bom\"}",
}

var jsonBodyStringPaths = [][]string{{"id"}, {"event", "id"}, {"x", "id"}, {"event"}}

func sameAnswer(t *testing.T, body []byte, path []string) {
	t.Helper()
	got, gotErr := jsonBodyString(body, path...)
	want, wantErr := jsonBodyStringByMaps(body, path...)
	var gotRej, wantRej *Rejection
	errors.As(gotErr, &gotRej)
	errors.As(wantErr, &wantRej)
	if got != want || (gotErr == nil) != (wantErr == nil) ||
		gotErr != nil && (gotRej == nil || wantRej == nil || gotRej.Reason != wantRej.Reason || gotRej.Detail != wantRej.Detail) {
		t.Fatalf("jsonBodyString(%q, %q) = %q, %v; decoding into maps gives %q, %v", body, path, got, gotErr, want, wantErr)
	}
}

func TestJSONBodyStringAgreesWithMaps(t *testing.T) {
	for _, body := range jsonBodyStringCases {
		for _, path := range jsonBodyStringPaths {
			sameAnswer(t, []byte(body), path)
		}
	}
	if id, err := jsonBodyString([]byte(`{"id":"first","id":"last"}`), "id"); id != "last" || err != nil {
		t.Fatalf("repeated key: %q, %v; want the last one, as encoding/json", id, err)
	}
}

// FuzzJSONBodyString checks the scanning reader against decoding into maps on arbitrary
// bodies: event identities are read from authenticated but otherwise arbitrary bytes.
func FuzzJSONBodyString(f *testing.F) {
	for _, body := range jsonBodyStringCases {
		f.Add([]byte(body), uint8(0))
	}
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		sameAnswer(t, body, jsonBodyStringPaths[int(which)%len(jsonBodyStringPaths)])
	})
}
