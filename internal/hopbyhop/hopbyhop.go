// Package hopbyhop names the HTTP header fields that describe a connection rather than the
// message: the edges do not forward them, so the server never sees them.
package hopbyhop

import (
	"maps"
	"net/http"
	"net/textproto"
	"strings"
)

// fields are the hop-by-hop fields of RFC 9110 7.6.1 and the proxy credentials of RFC 9110
// 11.7 (httputil.ReverseProxy's list), canonical. net/http removes Transfer-Encoding and
// Trailer from a request itself; a proxy in front, or HTTP/2, removes the rest.
var fields = map[string]bool{"Connection": true, "Proxy-Connection": true, "Keep-Alive": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true}

// Is reports whether name (any ASCII case) is a hop-by-hop field whatever the message.
func Is(name string) bool { return fields[textproto.CanonicalMIMEHeaderKey(name)] }

// Of returns the canonical names of header's hop-by-hop fields: the fixed ones and those its
// Connection header names (never Host). The result is only read: without a Connection header
// (HTTP/2 has none) it is the fixed set itself, so that a request costs no map.
func Of(header http.Header) map[string]bool {
	connection := header["Connection"]
	if len(connection) == 0 {
		return fields
	}
	drop := maps.Clone(fields)
	for _, value := range connection {
		for name := range strings.SplitSeq(value, ",") {
			if name = textproto.CanonicalMIMEHeaderKey(textproto.TrimString(name)); name != "" && name != "Host" {
				drop[name] = true
			}
		}
	}
	return drop
}
