package protocol

import (
	"errors"
	"fmt"
)

// bearer-token: "Authorization: Bearer <token>" (RFC 6750 section 2.1), a fixed token the
// sender is configured with. Nothing about the request is signed.
const bearerTokenName = "bearer-token"

// BearerToken returns the protocol for senders that authenticate with a fixed bearer token.
// A secret is the token, in RFC 6750's b64token syntax (letters, digits, "-._~+/", then
// optional '='); several may be active while tokens rotate.
//
// Options: id_header or id_pointer, as for basic-auth; with neither, the identity is
// "body-sha256:" and the hex SHA-256 of the raw body.
//
// Verify rejects, in this order: no Authorization header or a scheme other than Bearer
// (missing signature); an empty or ill-formed token (malformed signature); a token matching no
// secret (signature mismatch, compared in constant time); then a missing identity.
func BearerToken() *Protocol {
	return &Protocol{
		Name:             bearerTokenName,
		DisplayName:      "Bearer token",
		SignatureScheme:  "static token, Authorization: Bearer <token>; the body is not signed",
		StaticCredential: true,
		IdentitySource:   genericIdentityStatic,
		DocsURL:          "https://www.rfc-editor.org/rfc/rfc6750#section-2.1",
		Retries: "Depends on the sender; every attempt carries the same token and nothing is timed, so a retry " +
			"is accepted at any delay and deduplicated by its identity (with the body-hash fallback, a retry with an identical body).",
		ParseSecret:        parseBearerToken,
		ValidateOptions:    genericValidateCredentialIdentityOptions("Authorization"),
		Verify:             verifyBearerToken,
		CredentialLocation: func(map[string]string) (string, string) { return "Authorization", "" },
		Sign:               signBearerToken,
		ExampleSecret:      sharedExample("tok_"),
	}
}

// validB64Token reports whether s matches RFC 6750's b64token: 1*( ALPHA / DIGIT /
// "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func validB64Token(s string) bool {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' {
			i++
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

func parseBearerToken(secret string) ([]byte, error) {
	if secret == "" {
		return nil, invalidSecret("the bearer token is empty")
	}
	if !validB64Token(secret) {
		return nil, invalidSecret("a bearer token is letters, digits and -._~+/ followed by optional '=' (RFC 6750)")
	}
	return []byte(secret), nil
}

func verifyBearerToken(req *Request, keys []Key, p Params) (Result, error) {
	id, err := genericCredentialIdentity(p.Options, "Authorization")
	if err != nil {
		return Result{}, fmt.Errorf("bearer-token: the endpoint's options are invalid: %w", err)
	}
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	v, ok := req.Headers.Get("Authorization")
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no Authorization header")
	}
	token, ok := genericAuthorization(v, "Bearer")
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "Authorization does not use the Bearer scheme")
	}
	if !validB64Token(token) {
		return Result{}, Reject(ReasonMalformedSignature, "the Bearer token is empty or not an RFC 6750 token")
	}
	keyID, ok := genericMatchCredential(keys, []byte(token))
	if !ok {
		return Result{}, genericRejectCredential("Bearer token", keys)
	}
	eventID, err := id.eventID(req)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: eventID, CredentialHeader: "Authorization"}, nil
}

// signBearerToken sends the first secret as the token (one Authorization header per request),
// and in.EventID in the id_header header when that option is set.
func signBearerToken(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("bearer-token: sign needs a secret")
	}
	if _, err := parseBearerToken(secrets[0]); err != nil {
		return nil, fmt.Errorf("bearer-token: %w", err)
	}
	h, err := genericSignIdentity(bearerTokenName, in.Options, in.EventID)
	if err != nil {
		return nil, err
	}
	return append(h, Header{Name: "Authorization", Value: "Bearer " + secrets[0]}), nil
}
