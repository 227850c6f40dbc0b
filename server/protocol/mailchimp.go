package protocol

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/hookverify/hookverify/internal/ascii"
)

// mailchimpDefaultParam is the query parameter that carries the shared secret unless the
// endpoint's "query_param" option names another.
const mailchimpDefaultParam = "secret"

// Mailchimp verifies Mailchimp Marketing audience webhooks. Mailchimp signs nothing: no HMAC, no
// signature header. Its own guide secures the endpoint with an unguessable secret in the
// webhook URL's query string, compared here in constant time on every POST, over HTTPS. When a
// webhook is saved Mailchimp sends a GET to check that the URL answers; that GET is answered 200
// as a handshake, stores nothing, and does not need the secret. The body (form-encoded
// type/fired_at/data[...]) is not authenticated, so the identity is a hash of it.
func Mailchimp() *Protocol {
	return &Protocol{
		Name:             "mailchimp",
		DisplayName:      "Mailchimp (Marketing)",
		SignatureScheme:  `shared secret in the URL query (option query_param, default "secret"); Mailchimp signs nothing; GET URL check answered 200`,
		StaticCredential: true,
		NeedsURL:         true,
		IdentitySource:   `"body-sha256:" + hex SHA-256 of the raw form body (Mailchimp sends no event id; type, fired_at and data identify the event)`,
		DocsURL:          "https://mailchimp.com/developer/marketing/guides/sync-audience-data-webhooks/",
		Retries: "Mailchimp retries a failed POST (no answer within 10 s, or an error status) and may disable the " +
			"webhook after repeated failures. A retry resends the same form body to the same URL, so the " +
			"body hash makes it a duplicate; nothing is timed, so no tolerance applies.",
		ParseSecret:        parseMailchimpSecret,
		ValidateOptions:    validateMailchimpOptions,
		Verify:             verifyMailchimp,
		CredentialLocation: func(options map[string]string) (string, string) { return "", mailchimpParam(options) },
		Sign: func(SignInput, []string) (Headers, error) {
			return Headers{{Name: "Content-Type", Value: "application/x-www-form-urlencoded"}}, nil
		},
		SignURL:       signMailchimpURL,
		ExampleSecret: sharedExample(""),
		ExampleBody: func(eventID string) []byte {
			return []byte(url.Values{"type": {"subscribe"}, "fired_at": {"2026-12-02 10:00:00"}, "data[id]": {eventID}, "data[email]": {"ada@example.com"}}.Encode())
		},
	}
}

func parseMailchimpSecret(secret string) ([]byte, error) {
	if len(secret) < 16 {
		return nil, invalidSecret("the Mailchimp URL secret must be at least 16 characters, so it cannot be guessed")
	}
	if url.QueryEscape(secret) != secret {
		return nil, invalidSecret("the Mailchimp URL secret must be URL-safe (letters, digits, - _ . ~)")
	}
	return []byte(secret), nil
}

func mailchimpParam(options map[string]string) string {
	if p := options["query_param"]; p != "" {
		return p
	}
	return mailchimpDefaultParam
}

func validateMailchimpOptions(options map[string]string) error {
	for k, v := range options {
		if k != "query_param" {
			return fmt.Errorf("unknown option %q (mailchimp takes query_param)", k)
		}
		if v == "" || url.QueryEscape(v) != v {
			return fmt.Errorf("option query_param must be a non-empty URL-safe name")
		}
	}
	return nil
}

func verifyMailchimp(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	if ascii.EqualFold(req.Method, http.MethodGet) || ascii.EqualFold(req.Method, http.MethodHead) {
		return Result{Handshake: &Reply{Status: http.StatusOK}}, nil
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return Result{}, Reject(ReasonMalformedSignature, "the URL cannot be parsed")
	}
	values := u.Query()[mailchimpParam(p.Options)]
	if len(values) == 0 {
		return Result{}, Reject(ReasonMissingSignature, "no %q query parameter in the URL", mailchimpParam(p.Options))
	}
	if len(values) > 1 {
		return Result{}, Reject(ReasonMalformedSignature, "the %q query parameter is repeated", mailchimpParam(p.Options))
	}
	id, ok := genericMatchCredential(keys, []byte(values[0]))
	if !ok {
		return Result{}, Reject(ReasonSignatureMismatch, "the URL secret matches no valid secret")
	}
	return Result{KeyID: id, EventID: bodySHA256ID(req.Body), CredentialParam: mailchimpParam(p.Options)}, nil
}

func signMailchimpURL(in SignInput, secrets []string) (string, error) {
	if len(secrets) == 0 {
		return "", fmt.Errorf("mailchimp: no secret to put in the URL")
	}
	u, err := url.Parse(in.URL)
	if err != nil {
		return "", fmt.Errorf("mailchimp: parsing the URL: %w", err)
	}
	q := u.Query()
	q.Set(mailchimpParam(in.Options), secrets[0])
	u.RawQuery = q.Encode()
	return u.String(), nil
}
