package protocol

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hookverify/hookverify/internal/ascii"
)

// Helpers shared by the option-configured protocols (generic-hmac, basic-auth, bearer-token,
// shared-token) and by providers whose deliveries carry no event id. Names are prefixed
// "generic" to keep clear of other files in the package.

// Identity options of the option-configured protocols.
const (
	genericOptIDHeader  = "id_header"
	genericOptIDPointer = "id_pointer"
	// genericOptPublicURL is the server-level option (server.PublicURLOption). The server
	// strips it before ValidateOptions but passes it on in Params.Options, so protocols
	// accept and ignore it.
	genericOptPublicURL = "public_url"
)

// genericIdentity is where an option-configured protocol takes its event identity: the
// id_header header, else the id_pointer JSON pointer into the body, else the body hash.
type genericIdentity struct {
	header  string
	pointer string
	hasPtr  bool
}

// parseGenericIdentity reads id_header and id_pointer from options. Its errors name the option.
func parseGenericIdentity(options map[string]string) (genericIdentity, error) {
	var id genericIdentity
	h, hasHeader := options[genericOptIDHeader]
	ptr, hasPtr := options[genericOptIDPointer]
	if hasHeader && hasPtr {
		return id, fmt.Errorf("options %s and %s are mutually exclusive", genericOptIDHeader, genericOptIDPointer)
	}
	if hasHeader {
		if !isHeaderName(h) {
			return id, fmt.Errorf("option %s must be an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~)", genericOptIDHeader)
		}
		id.header = h
	}
	if hasPtr {
		if _, err := genericParsePointer(ptr); err != nil {
			return id, fmt.Errorf("option %s: %v", genericOptIDPointer, err)
		}
		id.pointer, id.hasPtr = ptr, true
	}
	return id, nil
}

// eventID extracts the identity of an authenticated request.
func (id genericIdentity) eventID(req *Request) (string, error) {
	switch {
	case id.header != "":
		v, _ := req.Headers.Get(id.header)
		if v == "" {
			return "", Reject(ReasonMissingEventID, "no %s header (option %s)", id.header, genericOptIDHeader)
		}
		return v, nil
	case id.hasPtr:
		return genericPointerID(req.Body, id.pointer)
	}
	return bodySHA256ID(req.Body), nil
}

// genericParsePointer splits an RFC 6901 JSON pointer into its unescaped reference tokens.
// "" is the whole document; otherwise the pointer starts with '/', and '~' appears only as
// "~0" (for '~') or "~1" (for '/'). The error never quotes the pointer.
func genericParsePointer(ptr string) ([]string, error) {
	if ptr == "" {
		return nil, nil
	}
	if ptr[0] != '/' {
		return nil, fmt.Errorf("a JSON pointer must be empty or start with '/' (RFC 6901)")
	}
	parts := strings.Split(ptr[1:], "/")
	for i, p := range parts {
		if !strings.Contains(p, "~") {
			continue
		}
		var b strings.Builder
		for j := 0; j < len(p); j++ {
			if p[j] != '~' {
				b.WriteByte(p[j])
				continue
			}
			if j+1 >= len(p) || (p[j+1] != '0' && p[j+1] != '1') {
				return nil, fmt.Errorf("'~' in a JSON pointer must be followed by 0 or 1 (RFC 6901)")
			}
			if p[j+1] == '0' {
				b.WriteByte('~')
			} else {
				b.WriteByte('/')
			}
			j++
		}
		parts[i] = b.String()
	}
	return parts, nil
}

// genericPointerLookup evaluates the RFC 6901 pointer against the JSON document body and
// returns the value found. found is false when some token names no member or element; err is
// set when body is not a single JSON value or the pointer is invalid. Array indexes are "0" or
// a decimal without leading zeros; "-" (past the end) never names a value.
func genericPointerLookup(body []byte, ptr string) (value any, found bool, err error) {
	tokens, err := genericParsePointer(ptr)
	if err != nil {
		return nil, false, err
	}
	// validJSON (json.Valid's answer) is what refuses trailing data: the decoder stops after the
	// first value, and a following dec.Token() errs alike on garbage ("}", "x") and at the end,
	// so checking it let {"id":"a"}x through as the value {"id":"a"}.
	if !validJSON(body) {
		return nil, false, fmt.Errorf("body is not a single JSON value")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, false, fmt.Errorf("body is not JSON")
	}
	cur := doc
	for _, tok := range tokens {
		switch node := cur.(type) {
		case map[string]any:
			next, ok := node[tok]
			if !ok {
				return nil, false, nil
			}
			cur = next
		case []any:
			idx, ok := genericArrayIndex(tok)
			if !ok || idx >= len(node) {
				return nil, false, nil
			}
			cur = node[idx]
		default:
			return nil, false, nil
		}
	}
	return cur, true, nil
}

// genericArrayIndex parses an RFC 6901 array index.
func genericArrayIndex(tok string) (int, bool) {
	if tok == "" || len(tok) > 9 || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(tok)
	return n, err == nil
}

// genericPointerID returns the event identity at the pointer: a non-empty JSON string, or a
// JSON number in the form it was sent. Its errors are *Rejection.
func genericPointerID(body []byte, ptr string) (string, error) {
	v, found, err := genericPointerLookup(body, ptr)
	if err != nil {
		return "", Reject(ReasonMalformedPayload, "cannot read the event id: %v", err)
	}
	if !found {
		return "", Reject(ReasonMissingEventID, "the body has no value at the %s pointer", genericOptIDPointer)
	}
	switch id := v.(type) {
	case string:
		if id == "" {
			return "", Reject(ReasonMissingEventID, "the event id at the %s pointer is empty", genericOptIDPointer)
		}
		return id, nil
	case json.Number:
		return id.String(), nil
	}
	return "", Reject(ReasonMissingEventID, "the value at the %s pointer is not a string or a number", genericOptIDPointer)
}

// genericUnknownOption returns an error for the first option not in known (public_url, the
// server's own option, is always allowed), naming it and listing the known ones.
func genericUnknownOption(options map[string]string, known ...string) error {
	names := make([]string, 0, len(options))
	for k := range options {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if k == genericOptPublicURL {
			continue
		}
		ok := false
		for _, n := range known {
			if k == n {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("unknown option %q (known: %s)", k, strings.Join(known, ", "))
		}
	}
	return nil
}

// genericMatchCredential returns the id of the first key whose material equals presented. The
// comparison is of SHA-256 digests with hmac.Equal, so it takes the same time whatever the
// lengths and contents; keys without material never match.
func genericMatchCredential(keys []Key, presented []byte) (string, bool) {
	want := sha256.Sum256(presented)
	for _, k := range keys {
		if len(k.Material) == 0 {
			continue
		}
		got := sha256.Sum256(k.Material)
		if hmac.Equal(got[:], want[:]) {
			return k.ID, true
		}
	}
	return "", false
}

// genericRejectCredential is the rejection when a presented credential matches no key.
func genericRejectCredential(what string, keys []Key) error {
	for _, k := range keys {
		if len(k.Material) > 0 {
			return Reject(ReasonSignatureMismatch, "the %s matches no configured credential", what)
		}
	}
	return Reject(ReasonSignatureMismatch, "no credential is configured, so the %s cannot match", what)
}

// genericIdentityStatic documents the identity of the static-credential protocols.
const genericIdentityStatic = `option id_header (a header) or id_pointer (RFC 6901 JSON pointer into the body); else "body-sha256:" + hex SHA-256 of the raw body`

// genericSignIdentity returns the id_header header Sign adds, if the options name one.
func genericSignIdentity(name string, options map[string]string, eventID string) (Headers, error) {
	id, err := parseGenericIdentity(options)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if id.header == "" {
		return nil, nil
	}
	if eventID == "" {
		return nil, fmt.Errorf("%s: %w for the %s header", name, ErrSignNeedsEventID, id.header)
	}
	return Headers{{Name: id.header, Value: eventID}}, nil
}

// genericCredentialIdentity is parseGenericIdentity for a static-credential protocol whose
// credential travels in the header credential: an id_header naming that header is refused.
// Its value is the secret itself, so the identity would put the secret in plain text in the
// claim and in every answer naming the event (the delivery's copy is redacted, the identity
// is not), and it is the same on every delivery, so all but the first would be DUPLICATE.
func genericCredentialIdentity(options map[string]string, credential string) (genericIdentity, error) {
	id, err := parseGenericIdentity(options)
	if err != nil {
		return id, err
	}
	if id.header != "" && ascii.EqualFold(id.header, credential) {
		return id, fmt.Errorf("option %s names %s, which carries the credential: the identity would be the secret", genericOptIDHeader, credential)
	}
	return id, nil
}

// genericValidateCredentialIdentityOptions returns the ValidateOptions of a protocol whose
// only options are the identity ones and whose credential travels in the header credential.
func genericValidateCredentialIdentityOptions(credential string) func(map[string]string) error {
	return func(options map[string]string) error {
		if err := genericUnknownOption(options, genericOptIDHeader, genericOptIDPointer); err != nil {
			return err
		}
		_, err := genericCredentialIdentity(options, credential)
		return err
	}
}

// genericAuthorization splits an Authorization value into its scheme (compared
// case-insensitively, RFC 9110 section 11.1) and credentials after one or more spaces. ok is
// false when the scheme differs.
func genericAuthorization(v, scheme string) (credentials string, ok bool) {
	s, rest, found := strings.Cut(v, " ")
	if !found || !ascii.EqualFold(s, scheme) {
		return "", false
	}
	return strings.TrimLeft(rest, " "), true
}
