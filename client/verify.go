package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hookverify/hookverify/internal/ascii"
	"github.com/hookverify/hookverify/internal/hopbyhop"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// Errors from BuildRequest (and so Verify) for requests that cannot be forwarded.
var (
	// ErrBodyTooLarge means the body exceeds the limit set by WithMaxBodyBytes.
	ErrBodyTooLarge = errors.New("client: request body exceeds the limit")
	// ErrBodyRead means the body could not be read in full (the provider hung up, a read
	// timeout); the cause is wrapped.
	ErrBodyRead = errors.New("client: reading the request body")
	// ErrUnforwardable means a header name or value, or the URL, is not valid UTF-8 (protobuf
	// strings must be UTF-8, and altering the bytes would break the signature, so such a request
	// is refused rather than forwarded corrupted), or the method, headers or URL exceed the
	// server's limits (MaxMethodBytes, MaxHeaderCount, MaxHeaderBytes, MaxURLBytes), or the URL
	// would have no host or one that is not host[:port] (no Host header, a Host or HTTP/2
	// :authority such as "a b", "a:b:c" or "[x]", userinfo in an absolute request target), or
	// the request target is neither a path nor an http(s) URL ("ftp://host/hooks/ep").
	ErrUnforwardable = errors.New("client: request cannot be forwarded")
	// ErrBodyConsumed means the body is no longer the one received: code that ran before
	// (r.ParseForm or r.FormValue on a form-encoded delivery, a middleware that read the body)
	// read some or all of it without putting it back. Forwarded, what is left would fail its
	// signature check as a forgery; the fault is the edge's, not the provider's.
	ErrBodyConsumed = errors.New("client: the request body was read before it was forwarded")
)

// Verify forwards the provider's request r, addressed to the hookverify endpoint endpointID,
// to the server and returns its answer. See BuildRequest for what is forwarded and Dial for
// retries. Write resp.Reply back to the provider, or use Handler, which does.
func (c *Conn) Verify(ctx context.Context, endpointID string, r *http.Request) (*hookverifyv1.VerifyResponse, error) {
	req, err := c.BuildRequest(endpointID, r)
	if err != nil {
		return nil, err
	}
	return c.Verifier.Verify(ctx, req)
}

// BuildRequest reads r's body (up to the limit) and copies the request untouched into a
// VerifyRequest:
//
//   - the method;
//   - the absolute URL the provider called: the scheme (https when r.TLS is set, else the
//     X-Forwarded-Proto header if WithTrustForwardedProto, else http), r.Host and r.RequestURI
//     exactly as received (an absolute-form r.RequestURI, its scheme in any case, as it is),
//     or the WithPublicURLBase base followed by r.RequestURI (of an absolute-form one, its path
//     and query as received);
//   - every header with its values in received order, repeats kept, but for the hop-by-hop
//     fields (Connection and the fields it names, Keep-Alive, Proxy-Connection,
//     Proxy-Authenticate, Proxy-Authorization, TE, Trailer, Transfer-Encoding, Upgrade), which
//     describe a connection, not the delivery. Go's http.Header is a map,
//     so the order between different names and the names' original case are lost before the
//     edge sees them: names come canonicalised (Stripe-Signature), sorted, after a first Host
//     header (net/http moves Host to r.Host and removes Transfer-Encoding). Signatures do not
//     cover header order, so no supported provider depends on it;
//   - the body, byte for byte.
//
// It fails with ErrBodyTooLarge, ErrBodyRead, ErrBodyConsumed or ErrUnforwardable.
func (c *Conn) BuildRequest(endpointID string, r *http.Request) (*hookverifyv1.VerifyRequest, error) {
	if len(r.Method) > MaxMethodBytes {
		return nil, fmt.Errorf("%w: a method of %d bytes, more than the server's limit of %d", ErrUnforwardable, len(r.Method), MaxMethodBytes)
	}
	url, err := c.requestURL(r)
	if err != nil {
		return nil, err
	}
	headers, err := forwardHeaders(r)
	if err != nil {
		return nil, err
	}
	body, err := readBody(r, c.maxBodyBytes)
	if err != nil {
		return nil, err
	}
	return &hookverifyv1.VerifyRequest{EndpointId: endpointID, Body: body, Headers: headers, Method: r.Method, Url: url}, nil
}

func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, fmt.Errorf("%w: Content-Length %d is above %d bytes", ErrBodyTooLarge, r.ContentLength, limit)
	}
	// limit is at most MaxBodyCeiling (Dial checks), so limit+1 cannot overflow.
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, fmt.Errorf("%w: above %d bytes", ErrBodyTooLarge, tooLarge.Limit)
		}
		if errors.Is(err, http.ErrBodyReadAfterClose) {
			return nil, fmt.Errorf("%w: it was closed", ErrBodyConsumed)
		}
		return nil, fmt.Errorf("%w: %w", ErrBodyRead, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%w: above %d bytes", ErrBodyTooLarge, limit)
	}
	// net/http fails a read that ends before Content-Length (io.ErrUnexpectedEOF), so a body
	// that ends early without an error, or runs past it, was read or replaced by code before
	// this one.
	if r.ContentLength > 0 && int64(len(body)) != r.ContentLength {
		return nil, fmt.Errorf("%w: %d bytes left of a Content-Length of %d", ErrBodyConsumed, len(body), r.ContentLength)
	}
	return body, nil
}

func forwardHeaders(r *http.Request) ([]*hookverifyv1.HeaderField, error) {
	count := 0
	if r.Host != "" {
		count++
	}
	for _, values := range r.Header {
		count += len(values)
	}
	if count > MaxHeaderCount {
		// Counted before anything is copied: net/http takes some 37,000 tiny headers within
		// its byte limit, and a HeaderField for each only to refuse them doubled what such a
		// request costs.
		return nil, fmt.Errorf("%w: %d headers, more than the server's limit of %d", ErrUnforwardable, count, MaxHeaderCount)
	}
	names := make([]string, 0, len(r.Header))
	for name := range r.Header {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]*hookverifyv1.HeaderField, 0, count)
	if r.Host != "" {
		if !utf8.ValidString(r.Host) {
			return nil, fmt.Errorf("%w: the Host header is not valid UTF-8", ErrUnforwardable)
		}
		out = append(out, &hookverifyv1.HeaderField{Name: "Host", Value: r.Host})
	}
	// Not forwarded: no provider signs them, and forwarded, the same delivery was stored
	// differently depending on the hops it took, with a proxy's credentials among its headers.
	// They are still checked for UTF-8 and counted towards MaxHeaderCount (counted before
	// anything is copied), not towards MaxHeaderBytes.
	hop := hopbyhop.Of(r.Header)
	for _, name := range names {
		if !utf8.ValidString(name) {
			return nil, fmt.Errorf("%w: a header name is not valid UTF-8", ErrUnforwardable)
		}
		for _, value := range r.Header[name] {
			if !utf8.ValidString(value) {
				// The name only: values may be signatures or credentials.
				return nil, fmt.Errorf("%w: header %s has a value that is not valid UTF-8", ErrUnforwardable, name)
			}
			if !hop[name] {
				out = append(out, &hookverifyv1.HeaderField{Name: name, Value: value})
			}
		}
	}
	total := 0
	for _, h := range out {
		total += len(h.GetName()) + len(h.GetValue())
	}
	if total > MaxHeaderBytes {
		return nil, fmt.Errorf("%w: headers of %d bytes, more than the server's limit of %d", ErrUnforwardable, total, MaxHeaderBytes)
	}
	return out, nil
}

// requestURL rebuilds the absolute URL the provider called.
func (c *Conn) requestURL(r *http.Request) (string, error) {
	uri := r.RequestURI
	if uri == "" { // a request built in-process rather than received by net/http
		uri = r.URL.RequestURI()
	}
	// The absolute form ("POST https://host/path", RFC 9112 3.2.2), its scheme in any case
	// (RFC 3986 3.1): net/http takes it, and routes it on its path.
	authority, pathQuery, absolute := splitAbsolute(uri)
	if !absolute && !strings.HasPrefix(uri, "/") {
		// net/http takes an absolute target of any scheme ("ftp://host/hooks/ep") and routes
		// it on its path: forwarded after the Host, it made a URL nobody called, which the
		// server would store. Only an http(s) URL can be forwarded.
		return "", fmt.Errorf("%w: a request target that is neither a path nor an http(s) URL", ErrUnforwardable)
	}
	var url string
	switch {
	case c.publicURLBase != "":
		if absolute {
			// The path and query as received: r.URL.RequestURI() escapes again what it thinks
			// needs it, and URL-signing providers sign the bytes they sent.
			uri = pathQuery
			if !strings.HasPrefix(uri, "/") {
				uri = "/" + uri
			}
		}
		url = c.publicURLBase + uri
	case absolute: // absolute-form request target, as sent to a forward proxy
		if !validHost(authority) {
			// net/http takes "POST http:///hooks/ep" (Host then names the host), but an http
			// URL without a host is invalid (RFC 9110 4.2.1) and the server refuses it as the
			// edge's fault (INVALID_ARGUMENT, answered 500 and logged as a misconfiguration):
			// anyone could raise that alarm with one request line. It is the request's fault,
			// as is an authority that is no host[:port], userinfo included (RFC 9110 4.2.4).
			return "", fmt.Errorf("%w: an absolute request target without a valid host", ErrUnforwardable)
		}
		url = uri
	default:
		host := r.Host
		if host == "" {
			host = r.URL.Host
		}
		if host == "" {
			// HTTP/1.0 lets a request leave Host out; no provider does, and without it there is
			// no URL to forward (the server refuses a URL without a host).
			return "", fmt.Errorf("%w: no Host header, so no URL (WithPublicURLBase gives one)", ErrUnforwardable)
		}
		if !validHost(host) {
			// net/http's HTTP/1 server checks a Host's bytes only ("a:b:c", "[x]" and "%zz"
			// pass) and its HTTP/2 server takes almost any :authority ("/x", "a b"): "/x" made
			// a URL without a host, which the server refuses as the edge's fault (answered 500
			// and logged as a misconfiguration), "x/y" a path other than the one received, and
			// the rest URLs that the server's protocols cannot parse and the inbox stores. A
			// server must answer an invalid Host 400 (RFC 9110 7.2); no provider sends one.
			return "", fmt.Errorf("%w: a Host (HTTP/2 :authority) that is not a host[:port]", ErrUnforwardable)
		}
		url = c.scheme(r) + "://" + host + uri
	}
	if !utf8.ValidString(url) {
		return "", fmt.Errorf("%w: the URL is not valid UTF-8", ErrUnforwardable)
	}
	if len(url) > MaxURLBytes {
		return "", fmt.Errorf("%w: a URL of %d bytes, more than the server's limit of %d", ErrUnforwardable, len(url), MaxURLBytes)
	}
	return url, nil
}

func (c *Conn) scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	// A request built in-process (http.NewRequest, as a test or a program replaying a
	// delivery builds one) has no RequestURI or TLS state; its URL says the scheme.
	if r.RequestURI == "" && r.URL != nil && (r.URL.Scheme == "https" || r.URL.Scheme == "http") {
		return r.URL.Scheme
	}
	if c.trustForwardedProto {
		// The first proxy's value comes first; only the two meaningful values are believed.
		first, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
		if p := strings.ToLower(strings.TrimSpace(first)); p == "https" || p == "http" {
			return p
		}
	}
	return "http"
}

// splitAbsolute splits an absolute-form request target of the http or https scheme, in any
// case, into its authority and what follows it (path and query as received); absolute is false
// for any other target.
func splitAbsolute(uri string) (authority, pathQuery string, absolute bool) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || !ascii.EqualFold(scheme, "http") && !ascii.EqualFold(scheme, "https") {
		return "", "", false
	}
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		return rest[:end], rest[end:], true
	}
	return rest, "", true
}

// validHost reports whether hostport is a Host header value (RFC 9110 7.2: uri-host [ ":" port ])
// naming a host: an IP-literal (an IPv6 address without a zone, or IPvFuture) or a reg-name
// (which IPv4 addresses are too) of RFC 3986 3.2.2, not empty (RFC 9110 4.2.1), then an
// optional port of digits (RFC 3986 3.2.3: "host:" is allowed, and means the default port).
func validHost(hostport string) bool {
	var port string
	if literal, ok := strings.CutPrefix(hostport, "["); ok {
		end := strings.IndexByte(literal, ']')
		if end < 0 || !validIPLiteral(literal[:end]) {
			return false
		}
		port = literal[end+1:]
	} else {
		host, _, _ := strings.Cut(hostport, ":")
		if host == "" || !validRegName(host) {
			return false
		}
		port = hostport[len(host):]
	}
	if port == "" {
		return true
	}
	if port[0] != ':' {
		return false
	}
	return strings.Trim(port[1:], "0123456789") == ""
}

// validIPLiteral reports whether s, the text between "[" and "]", is an IPv6 address or
// IPvFuture ("v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )). A zone ("%25eth0", RFC
// 6874) names an interface of the sender's host, never one a provider calls.
func validIPLiteral(s string) bool {
	if s != "" && (s[0] == 'v' || s[0] == 'V') {
		version, rest, ok := strings.Cut(s[1:], ".")
		if !ok || version == "" || strings.Trim(version, "0123456789abcdefABCDEF") != "" || rest == "" {
			return false
		}
		for i := 0; i < len(rest); i++ {
			if !isUnreservedOrSubDelim(rest[i]) && rest[i] != ':' {
				return false
			}
		}
		return true
	}
	addr, err := netip.ParseAddr(s)
	return err == nil && addr.Is6() && addr.Zone() == ""
}

// validRegName reports whether s is made of RFC 3986 reg-name characters: unreserved and
// sub-delims. RFC 3986 lets a reg-name hold percent-encodings too, but no provider sends one:
// the host names the edge as the provider's HTTP client resolved it, a DNS name (an IDN as its
// xn-- form) or an IP address, and clients decode or refuse an escape in a host. Forwarded
// ("Host: a%41b"), it made a URL that Go's url.Parse refuses, which the server stored and its
// URL-reading protocols (handshakes, Braintree, Nylas, Mailchimp) rejected as malformed.
func validRegName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isUnreservedOrSubDelim(s[i]) {
			return false
		}
	}
	return true
}

func isUnreservedOrSubDelim(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~!$&'()*+,;=", c) >= 0
}
