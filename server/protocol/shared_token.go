package protocol

import (
	"errors"
	"fmt"
	"strings"
)

// shared-token: a fixed secret sent verbatim in a header of the endpoint's choosing, as
// GitLab's X-Gitlab-Token. Nothing about the request is signed.
const (
	sharedTokenName          = "shared-token"
	sharedTokenOptHeader     = "header"
	sharedTokenDefaultHeader = "X-Webhook-Token"
)

// SharedToken returns the protocol for senders that put a fixed token in a header.
//
// Options: header (the header carrying the token, default X-Webhook-Token); id_header or
// id_pointer, as for basic-auth; with neither, the identity is "body-sha256:" and the hex
// SHA-256 of the raw body.
//
// Verify rejects, in this order: no token header (missing signature); an empty token
// (malformed signature); a token matching no secret (signature mismatch, compared in constant
// time); then a missing identity. The header value is compared exactly: no trimming.
func SharedToken() *Protocol {
	return &Protocol{
		Name:             sharedTokenName,
		DisplayName:      "Shared token header",
		SignatureScheme:  "static token in a header (option header, default X-Webhook-Token); the body is not signed",
		StaticCredential: true,
		IdentitySource:   genericIdentityStatic,
		DocsURL:          "https://docs.gitlab.com/user/project/integrations/webhooks/#validate-requests-with-a-secret-token",
		Retries: "Depends on the sender; every attempt carries the same token and nothing is timed, so a retry " +
			"is accepted at any delay and deduplicated by its identity (with the body-hash fallback, a retry with an identical body).",
		ParseSecret:     parseSharedToken,
		ValidateOptions: validateSharedTokenOptions,
		Verify:          verifySharedToken,
		CredentialLocation: func(options map[string]string) (string, string) {
			name, _ := sharedTokenHeader(options) // "" for options Verify refuses
			return name, ""
		},
		Sign:          signSharedToken,
		ExampleSecret: sharedExample(""),
	}
}

func parseSharedToken(secret string) ([]byte, error) {
	switch {
	case secret == "":
		return nil, invalidSecret("the shared token is empty")
	case strings.TrimSpace(secret) != secret:
		return nil, invalidSecret("the shared token has leading or trailing whitespace")
	case strings.ContainsFunc(secret, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return nil, invalidSecret("the shared token contains control characters, which a header cannot carry")
	}
	return []byte(secret), nil
}

// sharedTokenHeader returns the header option, or an error naming it.
func sharedTokenHeader(options map[string]string) (string, error) {
	h, ok := options[sharedTokenOptHeader]
	if !ok {
		return sharedTokenDefaultHeader, nil
	}
	if !isHeaderName(h) {
		return "", fmt.Errorf("option %s must be an HTTP header name", sharedTokenOptHeader)
	}
	return h, nil
}

func validateSharedTokenOptions(options map[string]string) error {
	if err := genericUnknownOption(options, sharedTokenOptHeader, genericOptIDHeader, genericOptIDPointer); err != nil {
		return err
	}
	name, err := sharedTokenHeader(options)
	if err != nil {
		return err
	}
	_, err = genericCredentialIdentity(options, name)
	return err
}

func verifySharedToken(req *Request, keys []Key, p Params) (Result, error) {
	if err := validateSharedTokenOptions(p.Options); err != nil {
		return Result{}, fmt.Errorf("shared-token: the endpoint's options are invalid: %w", err)
	}
	name, _ := sharedTokenHeader(p.Options)
	id, _ := parseGenericIdentity(p.Options)
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	token, ok := req.Headers.Get(name)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", name)
	}
	if token == "" {
		return Result{}, Reject(ReasonMalformedSignature, "%s is empty", name)
	}
	keyID, ok := genericMatchCredential(keys, []byte(token))
	if !ok {
		return Result{}, genericRejectCredential(name+" token", keys)
	}
	eventID, err := id.eventID(req)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: eventID, CredentialHeader: name}, nil
}

// signSharedToken sends the first secret in the token header (one token per request), and
// in.EventID in the id_header header when that option is set.
func signSharedToken(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("shared-token: sign needs a secret")
	}
	if err := validateSharedTokenOptions(in.Options); err != nil {
		return nil, fmt.Errorf("shared-token: %w", err)
	}
	if _, err := parseSharedToken(secrets[0]); err != nil {
		return nil, fmt.Errorf("shared-token: %w", err)
	}
	name, _ := sharedTokenHeader(in.Options)
	h, err := genericSignIdentity(sharedTokenName, in.Options, in.EventID)
	if err != nil {
		return nil, err
	}
	return append(h, Header{Name: name, Value: secrets[0]}), nil
}
