package client

import (
	"net"
	"net/url"
	"strings"
	"testing"
)

// grpcEndpoint is where grpc-go would connect for target, by its documented parsing
// (https://github.com/grpc/grpc/blob/master/doc/naming.md, grpc-go's parseTarget): a URL
// whose scheme has a resolver (dns, passthrough, unix, unix-abstract, and this package's
// ipv4/ipv6) is taken as that, its endpoint the path (or opaque part) without its first "/";
// anything else is "dns:///" + target. ok is false when gRPC could not take it at all.
func grpcEndpoint(target string) (scheme, authority, endpoint string, ok bool) {
	parse := func(t string) (*url.URL, bool) {
		u, err := url.Parse(t)
		return u, err == nil
	}
	u, parsed := parse(target)
	if !parsed || !map[string]bool{"dns": true, "passthrough": true, "unix": true, "unix-abstract": true, "ipv4": true, "ipv6": true}[u.Scheme] {
		if u, parsed = parse("dns:///" + target); !parsed {
			return "", "", "", false
		}
	}
	endpoint = u.Path
	if endpoint == "" {
		endpoint = u.Opaque
	}
	return u.Scheme, u.Host, strings.TrimPrefix(endpoint, "/"), true
}

// FuzzIsLoopback: Dial sends an API token over a connection without TLS only to a target
// isLoopback accepts. Property: a target it accepts is one gRPC connects to on this host: a
// Unix socket, an address list of loopback addresses only, or a DNS or passthrough target
// without an authority (a DNS server of its choosing) whose host is localhost or a loopback IP.
func FuzzIsLoopback(f *testing.F) {
	for _, s := range []string{"localhost:7443", "127.0.0.1:1", "[::1]:7443", "dns:///localhost:1", "passthrough:///127.0.0.2:9",
		"unix:/run/hv.sock", "unix-abstract:hv", "ipv4:127.0.0.1:1,127.0.0.2:2", "ipv4:127.0.0.1,10.0.0.1", "dns://8.8.8.8/localhost:1",
		"DNS:///evil.example:1", "dns:///localhost:%2F%2Fevil", "localhost", "localhost.:1", "0:0:0:0:0:ffff:127.0.0.1", "[::ffff:7f00:1]:1",
		"passthrough:127.0.0.1:1", "dns:///127.0.0.1%3A443", "unix://evil.example/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if !isLoopback(target) {
			return
		}
		scheme, authority, endpoint, ok := grpcEndpoint(target)
		if !ok {
			return // gRPC refuses the target: nothing is sent
		}
		switch scheme {
		case "unix", "unix-abstract":
			return
		case "ipv4", "ipv6":
			list, err := parseAddressList(target)
			if err != nil || list == nil || !list.allLoopback() {
				t.Fatalf("isLoopback(%q) for an address list that is not all loopback: %v, %v", target, list, err)
			}
			return
		}
		if authority != "" {
			t.Fatalf("isLoopback(%q), but gRPC would ask the DNS server %q", target, authority)
		}
		host, port, err := net.SplitHostPort(endpoint)
		if err != nil {
			host = endpoint
		} else if _, err := net.LookupPort("tcp", port); err != nil {
			return // no port to connect to: nothing is sent
		}
		ip := net.ParseIP(host)
		if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
			t.Fatalf("isLoopback(%q), but gRPC would connect to %q (host %q)", target, endpoint, host)
		}
	})
}

// FuzzCheckPublicURLBase: with WithPublicURLBase the forwarded URL is the base followed by the
// request URI, and URL-signing providers sign that URL. Property: a base it accepts, followed
// by any request URI of a path (and a query), is an absolute http(s) URL of the base's host,
// without userinfo, whose path begins with the base's path and whose query is the request's.
func FuzzCheckPublicURLBase(f *testing.F) {
	for _, s := range []string{"https://hooks.example.com", "https://hooks.example.com/prefix", "http://[::1]:8080", "https://u:p@h",
		"https://h?x", "https://h#f", "https://h/ a", "https://h:bad", "https://", "ftp://h", "https://h/%zz", "https://h/p;x=1"} {
		f.Add(s, "/hooks/ep?a=1&b=%20")
	}
	f.Fuzz(func(t *testing.T, base, uri string) {
		if CheckPublicURLBase(base) != nil {
			return
		}
		b, err := url.Parse(base)
		if err != nil || (b.Scheme != "https" && b.Scheme != "http") || b.Host == "" || b.User != nil || b.RawQuery != "" || b.Fragment != "" {
			t.Fatalf("CheckPublicURLBase accepted %q: %+v, %v", base, b, err)
		}
		// A request URI as net/http gives it: a path of visible ASCII, then maybe a query.
		if !strings.HasPrefix(uri, "/") || strings.ContainsFunc(uri, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '#' }) {
			return
		}
		r, err := url.ParseRequestURI(uri)
		if err != nil {
			return
		}
		u, err := url.Parse(base + uri)
		if err != nil {
			t.Fatalf("base %q + request URI %q does not parse: %v", base, uri, err)
		}
		if u.Scheme != b.Scheme || u.Host != b.Host || u.User != nil || !strings.HasPrefix(u.Path, b.Path) || u.RawQuery != r.RawQuery {
			t.Fatalf("base %q + request URI %q is %+v", base, uri, u)
		}
	})
}
