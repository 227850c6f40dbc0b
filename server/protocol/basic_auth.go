package protocol

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// basic-auth: the sender puts fixed credentials in the URL or its settings and they arrive as
// "Authorization: Basic base64(user:password)" (RFC 7617). Nothing about the request is signed.
const (
	basicAuthName   = "basic-auth"
	basicAuthHeader = "Authorization"
)

// BasicAuth returns the protocol for senders that authenticate with HTTP Basic credentials.
// A secret is "user:password" (the user without ':', both parts non-empty); several secrets
// may be active while credentials rotate, and any of them authenticates.
//
// Options: id_header (a header carrying the event identity) or id_pointer (an RFC 6901 JSON
// pointer to a string or number in the body); with neither, the identity is "body-sha256:"
// and the hex SHA-256 of the raw body.
//
// Verify rejects, in this order: no Authorization header (missing signature); a scheme other
// than Basic (missing signature); credentials that are not padded standard base64 of
// "user:password" (malformed signature); credentials matching no secret (signature mismatch,
// compared in constant time); then a missing identity as the identity options say.
func BasicAuth() *Protocol {
	return &Protocol{
		Name:             basicAuthName,
		DisplayName:      "HTTP Basic authentication",
		SignatureScheme:  "static credentials, Authorization: Basic base64(user:password); the body is not signed",
		StaticCredential: true,
		IdentitySource:   genericIdentityStatic,
		DocsURL:          "https://www.rfc-editor.org/rfc/rfc7617",
		Retries: "Depends on the sender; every attempt carries the same credentials and nothing is timed, so a retry " +
			"is accepted at any delay and deduplicated by its identity (with the body-hash fallback, a retry with an identical body).",
		ParseSecret:        parseBasicAuthSecret,
		ValidateOptions:    genericValidateCredentialIdentityOptions(basicAuthHeader),
		Verify:             verifyBasicAuth,
		CredentialLocation: func(map[string]string) (string, string) { return basicAuthHeader, "" },
		Sign:               signBasicAuth,
		ExampleSecret:      exampleBasicAuthSecret,
	}
}

// parseBasicAuthSecret checks "user:password" and keeps its bytes, the decoded form of the
// credentials the sender sends.
func parseBasicAuthSecret(secret string) ([]byte, error) {
	user, password, ok := strings.Cut(secret, ":")
	switch {
	case !ok:
		return nil, invalidSecret("a basic-auth secret must be user:password")
	case user == "":
		return nil, invalidSecret("the basic-auth user is empty")
	case password == "":
		return nil, invalidSecret("the basic-auth password is empty")
	case strings.ContainsFunc(secret, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return nil, invalidSecret("the basic-auth secret contains control characters")
	}
	return []byte(secret), nil
}

func verifyBasicAuth(req *Request, keys []Key, p Params) (Result, error) {
	id, err := genericCredentialIdentity(p.Options, basicAuthHeader)
	if err != nil {
		return Result{}, fmt.Errorf("basic-auth: the endpoint's options are invalid: %w", err)
	}
	keyID, err := checkBasicCredentials(req, keys)
	if err != nil {
		return Result{}, err
	}
	eventID, err := id.eventID(req)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: eventID, CredentialHeader: basicAuthHeader}, nil
}

// checkBasicCredentials authenticates the Authorization: Basic header of req against keys
// holding "user:password" bytes and returns the matching key's id. Its errors are *Rejection.
func checkBasicCredentials(req *Request, keys []Key) (string, error) {
	if req == nil {
		return "", Reject(ReasonMissingSignature, "no request")
	}
	v, ok := req.Headers.Get(basicAuthHeader)
	if !ok {
		return "", Reject(ReasonMissingSignature, "no Authorization header")
	}
	creds, ok := genericAuthorization(v, "Basic")
	if !ok {
		return "", Reject(ReasonMissingSignature, "Authorization does not use the Basic scheme")
	}
	decoded, err := base64.StdEncoding.Strict().DecodeString(creds)
	if err != nil || strings.ContainsAny(creds, "\r\n") || !strings.Contains(string(decoded), ":") {
		return "", Reject(ReasonMalformedSignature, "Authorization Basic credentials are not base64 of user:password")
	}
	keyID, ok := genericMatchCredential(keys, decoded)
	if !ok {
		return "", genericRejectCredential("Basic credentials", keys)
	}
	return keyID, nil
}

// signBasicAuth sends the first secret as Basic credentials: a request carries one
// Authorization header, so other secrets are unused. With id_header set it also sends
// in.EventID in that header.
func signBasicAuth(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("basic-auth: sign needs a secret")
	}
	if _, err := parseBasicAuthSecret(secrets[0]); err != nil {
		return nil, fmt.Errorf("basic-auth: %w", err)
	}
	h, err := genericSignIdentity(basicAuthName, in.Options, in.EventID)
	if err != nil {
		return nil, err
	}
	return append(h, Header{Name: basicAuthHeader, Value: "Basic " + base64.StdEncoding.EncodeToString([]byte(secrets[0]))}), nil
}

// exampleBasicAuthSecret is "hookverify:" and 24 random bytes in hex.
func exampleBasicAuthSecret() (string, string, error) {
	s, _, err := sharedExample("hookverify:")()
	return s, s, err
}
