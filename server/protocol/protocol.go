// Package protocol holds one pure verification function per webhook provider protocol and the
// table that registers them. Nothing here does I/O or reads the clock: the request, the
// candidate secrets, the time and the tolerance are all inputs.
package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hookverify/hookverify/internal/ascii"
)

// Header is one HTTP header line as received.
type Header struct {
	Name  string
	Value string
}

// Headers is the ordered list of a request's headers, repeated names kept.
type Headers []Header

// Get returns the first value of the named header (case-insensitive) and whether it exists.
func (h Headers) Get(name string) (string, bool) {
	for _, f := range h {
		if ascii.EqualFold(f.Name, name) {
			return f.Value, true
		}
	}
	return "", false
}

// Values returns every value of the named header (case-insensitive), in order.
func (h Headers) Values(name string) []string {
	var out []string
	for _, f := range h {
		if ascii.EqualFold(f.Name, name) {
			out = append(out, f.Value)
		}
	}
	return out
}

// isHeaderName reports whether s is an RFC 9110 token, the syntax of a header name.
func isHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// Request is the provider's HTTP request exactly as received.
type Request struct {
	Method  string
	URL     string
	Headers Headers
	Body    []byte
}

// Key is one candidate signing key: its stored id and its decoded key bytes.
type Key struct {
	ID       string
	Material []byte
}

// Params are the verification settings that are not part of the request.
type Params struct {
	// Now is the verifier's clock reading.
	Now time.Time
	// Tolerance is how far a signed timestamp may be from Now in either direction.
	Tolerance time.Duration
	// Options are the endpoint's protocol options.
	Options map[string]string
}

// Result is what a successful verification establishes.
type Result struct {
	// KeyID is the id of the key whose signature matched. Empty only for a handshake the
	// provider does not sign.
	KeyID string
	// EventID is the provider's stable event identity. Unused for a handshake.
	EventID string
	// CredentialHeader and CredentialParam name where the request carried the secret itself
	// (a header, a query parameter of the URL), for protocols that authenticate with a fixed
	// credential rather than a signature. The server stores the delivery with those values
	// redacted: the inbox would otherwise keep, and hand to workers, the very secret the
	// server keeps encrypted, and with it anyone who can read the inbox could forge deliveries.
	CredentialHeader, CredentialParam string
	// Handshake, when set, means the request is the provider's endpoint-verification handshake
	// (Zoom url_validation, Slack url_verification, a GET challenge, ...): it is answered with
	// this reply and is neither claimed nor stored. A protocol whose provider signs its
	// handshake must authenticate it before returning one.
	Handshake *Reply
	// HandshakeSecret is the secret a provider hands the receiver in its handshake, to sign
	// its later deliveries with (Asana's X-Hook-Secret): unauthenticated by the provider's
	// design, so the server keeps it only for an endpoint that asked to be given one
	// (HandshakeSecretUntilOption) and has no secret in force.
	HandshakeSecret string
	// SuccessReply, when set, is the reply to this delivery once accepted or found a
	// duplicate, in place of Protocol.SuccessReply: for a provider whose kinds of delivery
	// ask for different acknowledgements (Discord: 204 for a Webhook Event).
	SuccessReply *Reply
}

// Reply is an HTTP response the edge sends back to the provider.
type Reply struct {
	Status  int
	Headers Headers
	Body    []byte
}

// SignInput is what Sign needs to produce a delivery the way the provider would.
type SignInput struct {
	Body      []byte
	EventID   string
	Timestamp time.Time
	Method    string
	URL       string
	// Options are the endpoint options the delivery is signed for (generic schemes need them).
	Options map[string]string
}

// Protocol describes and implements one provider protocol.
type Protocol struct {
	// Name is the lowercase name endpoints refer to.
	Name        string
	DisplayName string
	// SignatureScheme describes the scheme in a short phrase for ListProviders.
	SignatureScheme string
	// SignsTimestamp says whether Verify checks a signed timestamp against the tolerance.
	SignsTimestamp bool
	// DefaultTolerance applies when the endpoint sets none (zero when SignsTimestamp is false).
	DefaultTolerance time.Duration
	// OptionTolerance, when set, says for a protocol whose options decide it (generic-hmac's
	// template) whether a delivery to an endpoint with these options has a signed timestamp
	// checked, and within what tolerance an option sets (zero: the endpoint's). It overrides
	// SignsTimestamp. Options the protocol would refuse check none.
	OptionTolerance func(options map[string]string) (tolerance time.Duration, signsTimestamp bool)
	// IdentitySource says where the event identity comes from.
	IdentitySource string
	// StaticCredential says the provider sends a fixed credential (a token, basic auth) instead
	// of a signature over the request, so the body is not authenticated.
	StaticCredential bool
	// EveryDeliveryNew says nothing the provider sends tells a retry from a new notification,
	// and notifications repeat byte for byte (Dropbox's), so each authenticated delivery is
	// its own event: a repeat is ACCEPTED again rather than merged with the first, which would
	// lose every later notification for the dedupe window.
	EveryDeliveryNew bool
	// NeedsURL says whether the signature covers the URL.
	NeedsURL bool
	DocsURL  string
	// Retries says how the provider retries (schedule, whether a retry is signed afresh) and so
	// how the default tolerance fits: a legitimate late retry must not look stale.
	Retries string

	// SuccessReply, when set, is the exact reply the provider requires for a delivery it may
	// stop retrying (Adyen wants the body "[accepted]", Dropbox Sign "Hello API Event
	// Received"); nil means a plain 200 with a small JSON body.
	SuccessReply *Reply
	// BareRejections says the provider wants even a rejection answered without a body or
	// headers, only its status: Xero's Intent to Receive counts on 401s to mis-signed
	// deliveries that follow its rules for every answer, one of which is no body.
	BareRejections bool
	// ParseSecret turns a secret as the provider displays it into key bytes. It is called when
	// a secret is added, so a malformed one is refused then, and again before verification.
	ParseSecret func(secret string) ([]byte, error)
	// CheckSecret, when set, reads a secret that ParseSecret took under the options of the
	// endpoint it is added to, for a protocol whose options say how a secret is read
	// (generic-hmac's key), and returns the key it reads as: one they cannot read would never
	// match, so it is refused when it is added rather than found out when deliveries start
	// failing, and an options update that would read a secret as another key is refused too.
	// Its errors never quote the secret.
	CheckSecret func(secret string, options map[string]string) ([]byte, error)
	// ValidateOptions checks an endpoint's options when it is created or updated. Nil means the
	// protocol takes no options, and any option given is refused.
	ValidateOptions func(options map[string]string) error
	// CredentialOptions names the options whose values are credentials the provider presents
	// (Meta's verify_token). The server stores them as digests (DigestCredentialOptions), and
	// Verify must accept a digest as their value.
	CredentialOptions []string
	// Verify authenticates req with any of keys and extracts the event identity. It returns a
	// *Rejection (see errors.go) when the delivery must be rejected.
	Verify func(req *Request, keys []Key, p Params) (Result, error)
	// CredentialLocation is set for a protocol whose deliveries carry the secret itself (see
	// Result.CredentialHeader): it names the header or query parameter that carries it for an
	// endpoint with these options, as Verify reports it. The server redacts stored deliveries
	// there when it hands them out, so that those stored by a release that did not redact them
	// at claim never reach workers with the secret.
	CredentialLocation func(options map[string]string) (header, param string)
	// Sign returns the headers the provider would send with in.Body, signed with each of the
	// secrets (as the provider displays them); used by `hookverify sign`, the demo and tests.
	Sign func(in SignInput, secrets []string) (Headers, error)
	// SignBody, for protocols that carry the signature inside the body (Mailgun, Adyen), returns
	// in.Body with the signature embedded. Nil means the body is sent as given. Callers use
	// SignDelivery, which applies SignBody and then Sign.
	SignBody func(in SignInput, secrets []string) ([]byte, error)
	// SignURL returns the URL the provider would call for in.URL: with its credential added,
	// for protocols whose credential travels in the URL (Mailchimp), or without the fragment
	// no HTTP client sends, for protocols that sign the request target as received
	// (Contentful). Nil means the URL is used as given.
	SignURL func(in SignInput, secrets []string) (string, error)
	// ExampleSecret returns a fresh random secret for tests and the demo: signing is what Sign
	// takes, verifying is what AddSecret takes (the same string for shared-secret schemes; the
	// private and the public key for signature schemes such as Ed25519 or ECDSA). Required.
	ExampleSecret func() (signing, verifying string, err error)
	// ExampleBody returns a realistic delivery body for the event id, for the demo and tests.
	// Nil means {"id":"<eventID>"}.
	ExampleBody func(eventID string) []byte
}

// Signed is a delivery as the provider would send it.
type Signed struct {
	Headers Headers
	Body    []byte
	// URL is the URL the provider would call: SignInput.URL, unless SignURL changed it.
	URL string
}

// SignDelivery produces the delivery the provider would send for in, signed with secrets.
func SignDelivery(p *Protocol, in SignInput, secrets []string) (Signed, error) {
	if p.SignBody != nil {
		body, err := p.SignBody(in, secrets)
		if err != nil {
			return Signed{}, err
		}
		in.Body = body
	}
	if p.SignURL != nil {
		u, err := p.SignURL(in, secrets)
		if err != nil {
			return Signed{}, err
		}
		in.URL = u
	}
	headers, err := p.Sign(in, secrets)
	if err != nil {
		return Signed{}, err
	}
	return Signed{Headers: headers, Body: in.Body, URL: in.URL}, nil
}

// ExampleBody returns p's example body for the event id.
func ExampleBody(p *Protocol, eventID string) []byte {
	if p.ExampleBody != nil {
		return p.ExampleBody(eventID)
	}
	id, _ := json.Marshal(eventID)
	return []byte(`{"id":` + string(id) + `}`)
}

// Registry maps provider names to protocols.
type Registry struct {
	byName map[string]*Protocol
}

// NewRegistry builds a registry from protocols; names must be unique and lowercase.
func NewRegistry(protocols ...*Protocol) (*Registry, error) {
	r := &Registry{byName: make(map[string]*Protocol, len(protocols))}
	for _, p := range protocols {
		if p.Name == "" || p.Name != strings.ToLower(p.Name) {
			return nil, fmt.Errorf("protocol name %q must be non-empty lowercase", p.Name)
		}
		if _, dup := r.byName[p.Name]; dup {
			return nil, fmt.Errorf("protocol %q registered twice", p.Name)
		}
		if p.ParseSecret == nil || p.Verify == nil || p.Sign == nil || p.ExampleSecret == nil {
			return nil, fmt.Errorf("protocol %q lacks ParseSecret, Verify, Sign or ExampleSecret", p.Name)
		}
		r.byName[p.Name] = p
	}
	return r, nil
}

// Lookup returns the protocol with the name.
func (r *Registry) Lookup(name string) (*Protocol, bool) {
	p, ok := r.byName[name]
	return p, ok
}

// All returns every protocol ordered by name.
func (r *Registry) All() []*Protocol {
	out := make([]*Protocol, 0, len(r.byName))
	for _, p := range r.byName {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ErrUnknownProvider is returned for a provider name no protocol has.
var ErrUnknownProvider = errors.New("unknown provider")

// ErrSignNeedsEventID is what Sign returns, wrapped with the header it would fill, when the
// protocol sends its event id in a header and SignInput.EventID is empty.
var ErrSignNeedsEventID = errors.New("sign needs an EventID")
