package client

import (
	"net/url"
	"strings"
	"testing"

	"google.golang.org/grpc/resolver"
)

// FuzzParseAddressList: the ipv4:/ipv6: parser never panics; it takes only targets of those
// schemes; what it accepts is a non-empty list of addresses of the scheme's family with a port,
// that gRPC parses as a target of the same scheme (so the connection uses the list's resolver),
// and that reads back the same when written out again.
func FuzzParseAddressList(f *testing.F) {
	for _, seed := range []string{
		"ipv4:127.0.0.1:7443,127.0.0.2:7444", "ipv4:///10.0.0.1", "IPV4:1.2.3.4:1", "ipv4:", "ipv4:a,", "ipv4://h/1.2.3.4",
		"ipv4:localhost:80", "ipv4:1.2.3.4:0", "ipv4:[1.2.3.4]:80", "ipv4:1.2.3.4%3A80", "ipv4:1.2.3.4:80?q#f",
		"ipv6:[::1]:7443,::2,[2001:db8::1]", "ipv6:[fe80::1%25eth0]:80", "ipv6:[fe80::1%eth0]:80", "ipv6:[::1]80",
		"ipv6:[fe80::1%25a%5Db]:1", "ipv6:1.2.3.4", "ipv6:[::ffff:1.2.3.4]:9", "dns:///x:1", "127.0.0.1:7443", "unix:/s",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, target string) {
		list, err := parseAddressList(target)
		scheme, _, _ := strings.Cut(target, ":")
		scheme = strings.ToLower(scheme)
		isList := strings.Contains(target, ":") && (scheme == "ipv4" || scheme == "ipv6")
		if !isList {
			if list != nil || err != nil {
				t.Fatalf("%q is no address list: %v, %v", target, list, err)
			}
			return
		}
		if (list == nil) == (err == nil) {
			t.Fatalf("%q: list %v and error %v", target, list, err)
		}
		if err != nil {
			return
		}
		if len(list.addrs) == 0 || list.scheme != scheme {
			t.Fatalf("%q: %+v", target, list)
		}
		u, err := url.Parse(target)
		if err != nil || u.Scheme != scheme {
			t.Fatalf("%q accepted, but gRPC would not take it for an %s target: %v", target, scheme, err)
		}
		var entries []string
		for _, ap := range list.addrs {
			if ap.Port() == 0 || (scheme == "ipv4") != ap.Addr().Is4() || (scheme == "ipv6") != ap.Addr().Is6() {
				t.Fatalf("%q: entry %v", target, ap)
			}
			entries = append(entries, strings.ReplaceAll(ap.String(), "%", "%25"))
		}
		again, err := parseAddressList(scheme + ":" + strings.Join(entries, ","))
		if err != nil || len(again.addrs) != len(list.addrs) {
			t.Fatalf("%q written out as %q: %v", target, entries, err)
		}
		for i := range again.addrs {
			if again.addrs[i] != list.addrs[i] {
				t.Fatalf("%q written out reads %v, was %v", target, again.addrs[i], list.addrs[i])
			}
		}
	})
}

// TestAddressListServerNames: each address is its own TLS server name, without the zone of a
// link-local address (crypto/x509 matches no certificate with it), and none at all when the
// TLS configuration names the server.
func TestAddressListServerNames(t *testing.T) {
	list, err := parseAddressList("ipv6:[fe80::1%25eth0]:7443,::1")
	if err != nil {
		t.Fatal(err)
	}
	var cc recordingConn
	list.builder(true).Build(resolver.Target{}, &cc, resolver.BuildOptions{})
	var names, addrs []string
	for _, e := range cc.state.Endpoints {
		names = append(names, e.Addresses[0].ServerName)
		addrs = append(addrs, e.Addresses[0].Addr)
	}
	if got, want := strings.Join(names, " "), "[fe80::1]:7443 [::1]:443"; got != want {
		t.Errorf("server names %q, want %q", got, want)
	}
	if got, want := strings.Join(addrs, " "), "[fe80::1%eth0]:7443 [::1]:443"; got != want {
		t.Errorf("addresses %q, want %q", got, want)
	}
	list.builder(false).Build(resolver.Target{}, &cc, resolver.BuildOptions{})
	for _, e := range cc.state.Endpoints {
		if e.Addresses[0].ServerName != "" {
			t.Errorf("a per-address server name beside the configured one: %q", e.Addresses[0].ServerName)
		}
	}
}

type recordingConn struct {
	resolver.ClientConn
	state resolver.State
}

func (c *recordingConn) UpdateState(s resolver.State) error { c.state = s; return nil }
