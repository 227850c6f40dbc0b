package protocol

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"strings"
)

// Gitea (and Forgejo, and Gogs before them) signs the JSON payload with HMAC-SHA256 keyed with
// the webhook's secret and sends the bare hex digest in X-Gitea-Signature (and the same value
// in X-Gogs-Signature and, prefixed, X-Hub-Signature-256). For the JSON content type the
// payload is the body; for the form content type the body is payload=<urlencoded JSON> and the
// signature covers the decoded payload field, not the body. There is no timestamp;
// X-Gitea-Delivery is the delivery's UUID. Source: go-gitea/gitea services/webhook/deliver.go.
const (
	giteaName            = "gitea"
	giteaSignatureHeader = "X-Gitea-Signature"
	giteaDeliveryHeader  = "X-Gitea-Delivery"
)

// Gitea returns the protocol for Gitea and Forgejo webhooks (the "Gitea" webhook type).
//
// Verify rejects, in this order: no X-Gitea-Signature (missing signature); an empty value, which
// Gitea sends when the webhook has no secret, or one that is not 64 lowercase hex digits
// (malformed signature); a form-encoded body without exactly one payload field (malformed
// payload); no key matching (signature mismatch); no or empty X-Gitea-Delivery (missing event
// id). Deliveries configured as GET (payload in the query string) are not supported.
func Gitea() *Protocol {
	return &Protocol{
		Name:            giteaName,
		DisplayName:     "Gitea",
		SignatureScheme: "HMAC-SHA256 (hex) of the JSON payload, X-Gitea-Signature",
		IdentitySource:  "X-Gitea-Delivery header (the hook task's UUID)",
		DocsURL:         "https://docs.gitea.com/usage/webhooks",
		Retries: "Gitea delivers each hook task once, with no automatic retry; a failed delivery can " +
			"be replayed by hand from the webhook's settings, which copies the recorded payload into a " +
			"new hook task with a new UUID (go-gitea/gitea models/webhook/hooktask.go ReplayHookTask), " +
			"so a replayed delivery is a new event to hookverify: replay only deliveries that were not " +
			"accepted. No timestamp is signed, so there is no tolerance.",
		ParseSecret:   sharedSecretParser("Gitea webhook secret"),
		Verify:        verifyGitea,
		Sign:          signGitea,
		ExampleSecret: sharedExample(""),
		ExampleBody:   giteaExampleBody,
	}
}

func verifyGitea(req *Request, keys []Key, _ Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(giteaSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", giteaSignatureHeader)
	}
	if raw == "" {
		return Result{}, Reject(ReasonMalformedSignature, "%s is empty (the webhook has no secret)", giteaSignatureHeader)
	}
	sig, ok := decodeLowerHex(raw, sha256.Size)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s is not 64 lowercase hex digits", giteaSignatureHeader)
	}
	payload, err := giteaPayload(req)
	if err != nil {
		return Result{}, err
	}
	keyID, ok := matchKey(keys, [][]byte{sig}, sha256.New, macMessage(payload))
	if !ok {
		return Result{}, rejectNoMatch(giteaSignatureHeader, 0, keys)
	}
	id, err := headerIdentity(req.Headers, giteaDeliveryHeader)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// giteaPayload is what Gitea signed: the body, or for a form-encoded body its payload field.
func giteaPayload(req *Request) ([]byte, error) {
	ct, _ := req.Headers.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return req.Body, nil
	}
	form, err := url.ParseQuery(string(req.Body))
	if err != nil || len(form["payload"]) != 1 {
		return nil, Reject(ReasonMalformedPayload, "form body does not carry exactly one payload field")
	}
	return []byte(form["payload"][0]), nil
}

// signGitea produces the headers Gitea sends for a JSON webhook, with in.Body as the payload.
// A webhook has one secret, so only secrets[0] signs.
func signGitea(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("gitea: sign needs a secret")
	}
	if in.EventID == "" {
		return nil, fmt.Errorf("gitea: %w for X-Gitea-Delivery", ErrSignNeedsEventID)
	}
	key, err := sharedSecretParser("Gitea webhook secret")(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("gitea: %w", err)
	}
	sig := digestHex.encode(hmacSum(sha256.New, key, macMessage(in.Body)))
	return Headers{
		{Name: "Content-Type", Value: "application/json"},
		{Name: giteaDeliveryHeader, Value: in.EventID},
		{Name: "X-Gitea-Event", Value: "push"},
		{Name: giteaSignatureHeader, Value: sig},
		{Name: "X-Gogs-Delivery", Value: in.EventID},
		{Name: "X-Gogs-Signature", Value: sig},
		{Name: "X-Hub-Signature-256", Value: "sha256=" + sig},
	}, nil
}

// giteaExampleBody is a push payload, abridged.
func giteaExampleBody(eventID string) []byte {
	return []byte(`{"ref":"refs/heads/main","before":"28e1879d029cb852e4844d9c718537df08844e03","after":"bffeb74224043ba2feb48d137756c8a9331c449a","compare_url":"https://gitea.example.com/org/repo/compare/28e1879d...bffeb742","commits":[{"id":"bffeb74224043ba2feb48d137756c8a9331c449a","message":"` + jsonEscape(strings.ReplaceAll(eventID, "\n", " ")) + `","url":"https://gitea.example.com/org/repo/commit/bffeb742"}],"repository":{"id":140,"full_name":"org/repo"},"pusher":{"login":"gitea"}}`)
}
