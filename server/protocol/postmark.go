package protocol

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Postmark does not sign webhooks. Its documented protection is HTTP Basic authentication put
// in the webhook URL (https://user:password@example.com/webhook) or set as the webhook's
// HttpAuth, which arrives as "Authorization: Basic base64(user:password)".
const postmarkName = "postmark"

// Postmark returns the protocol for Postmark webhooks (Delivery, Bounce, SpamComplaint, Open,
// Click, SubscriptionChange, and inbound messages). A secret is the "user:password" of the
// webhook URL; several may be active while it rotates.
//
// The identity is built from the body, per RecordType:
//   - Bounce and SpamComplaint: "<RecordType>:<ID>", the bounce record's id.
//   - Delivery: "Delivery:<MessageID>:<Recipient>" (one per recipient of a message).
//   - Open, Click, SubscriptionChange: "<RecordType>:<MessageID>:" and 32 hex digits of the
//     SHA-256 of Recipient and ReceivedAt (Click: and OriginalLink; SubscriptionChange:
//     ChangedAt), since one message can be opened, clicked or (un)subscribed many times, and a
//     suppression not tied to a message has the all-zero MessageID.
//   - no RecordType but a MessageID (an inbound message): "Inbound:<MessageID>".
//
// Anything else, or a record lacking those fields, falls back to "body-sha256:" and the hex
// SHA-256 of the raw body.
//
// Verify rejects, in this order: no Authorization header, or a scheme other than Basic (missing
// signature); credentials that are not base64 of user:password (malformed signature);
// credentials matching no secret (signature mismatch, constant time). The body is not
// authenticated.
func Postmark() *Protocol {
	return &Protocol{
		Name:             postmarkName,
		DisplayName:      "Postmark",
		SignatureScheme:  "no signature: HTTP Basic credentials from the webhook URL, Authorization: Basic",
		StaticCredential: true,
		IdentitySource: "body: Bounce/SpamComplaint ID; Delivery MessageID+Recipient; Open/Click/SubscriptionChange " +
			"MessageID + hash of recipient and event time (and link); inbound MessageID; else body-sha256 of the raw body",
		DocsURL: "https://postmarkapp.com/developer/webhooks/webhooks-overview#protecting-your-webhook",
		Retries: "Outbound webhooks (Delivery, Bounce, SpamComplaint, Open, Click, SubscriptionChange) are retried only after a " +
			"5xx, 408, 429 or a network timeout, up to 6 times over about 70 minutes (1, 5, 10, 10, 10, 15 minutes), each retry " +
			"carrying X-PM-Retries-Remaining; any other 4xx drops the event at once (ActiveCampaign/postmark-skills " +
			"postmark-webhooks/SKILL.md). Inbound webhooks are retried 10 times over about 10.5 hours (1, 5, 10, 10, 10, 15, " +
			"30 minutes, 1, 2, 6 hours) unless answered 403 (postmarkapp.com support article on inbound webhook retries). " +
			"Nothing is timed, so every retry is accepted and deduplicated by the identity above.",
		ParseSecret:        parsePostmarkSecret,
		Verify:             verifyPostmark,
		CredentialLocation: func(map[string]string) (string, string) { return basicAuthHeader, "" },
		Sign:               signPostmark,
		ExampleSecret:      examplePostmarkSecret,
		ExampleBody:        postmarkExampleBody,
	}
}

func parsePostmarkSecret(secret string) ([]byte, error) {
	b, err := parseBasicAuthSecret(secret)
	if err != nil {
		return nil, fmt.Errorf("postmark: %w", err)
	}
	return b, nil
}

func verifyPostmark(req *Request, keys []Key, _ Params) (Result, error) {
	keyID, err := checkBasicCredentials(req, keys)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: postmarkEventID(req.Body), CredentialHeader: basicAuthHeader}, nil
}

// postmarkEventID derives the identity described on Postmark.
func postmarkEventID(body []byte) string {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || top == nil {
		return bodySHA256ID(body)
	}
	field := func(name string) string {
		raw, ok := top[name]
		if !ok {
			return ""
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			return n.String()
		}
		return ""
	}
	// all returns the fields' values, or nil if one is missing.
	all := func(names ...string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			if out[i] = field(n); out[i] == "" {
				return nil
			}
		}
		return out
	}
	hashed := func(v []string) string {
		sum := sha256.Sum256([]byte(strings.Join(v, "\x00")))
		return hex.EncodeToString(sum[:16])
	}
	rt, msg := field("RecordType"), field("MessageID")
	var id string
	switch rt {
	case "Bounce", "SpamComplaint":
		if v := field("ID"); v != "" {
			id = rt + ":" + v
		}
	case "Delivery":
		if v := field("Recipient"); msg != "" && v != "" {
			id = rt + ":" + msg + ":" + v
		}
	case "Open":
		if v := all("Recipient", "ReceivedAt"); msg != "" && v != nil {
			id = rt + ":" + msg + ":" + hashed(v)
		}
	case "Click":
		if v := all("Recipient", "ReceivedAt", "OriginalLink"); msg != "" && v != nil {
			id = rt + ":" + msg + ":" + hashed(v)
		}
	case "SubscriptionChange":
		if v := all("Recipient", "ChangedAt"); msg != "" && v != nil {
			id = rt + ":" + msg + ":" + hashed(v)
		}
	case "":
		if msg != "" {
			id = "Inbound:" + msg
		}
	}
	if id == "" || len(id) > 400 {
		return bodySHA256ID(body)
	}
	return id
}

// signPostmark sends the first secret as Basic credentials, as Postmark does from the URL.
func signPostmark(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("postmark: sign needs the webhook's user:password")
	}
	if _, err := parsePostmarkSecret(secrets[0]); err != nil {
		return nil, err
	}
	return Headers{
		{Name: "Content-Type", Value: "application/json"},
		{Name: basicAuthHeader, Value: "Basic " + base64.StdEncoding.EncodeToString([]byte(secrets[0]))},
	}, nil
}

func examplePostmarkSecret() (string, string, error) {
	s, _, err := sharedExample("postmark:")()
	return s, s, err
}

// postmarkExampleBody is a Delivery record with MessageID set to the event id.
func postmarkExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"RecordType":"Delivery","ServerID":23,"MessageStream":"outbound","MessageID":` + string(id) +
		`,"Recipient":"john@example.com","Tag":"welcome-email","DeliveredAt":"2019-11-05T16:33:54.9070259Z","Details":"Test delivery webhook details","Metadata":{"a_key":"a_value"}}`)
}
