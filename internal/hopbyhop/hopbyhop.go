// Package hopbyhop names the HTTP header fields that describe a connection rather than the
// message: the edges do not forward them, so the server never sees them. It also sets the one
// the edges answer with (CloseUnread).
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
// Connection header names (never Host). The result is only read. It is the fixed set itself
// unless Connection names a field the header holds that is not in it, so that the usual
// "Connection: keep-alive" or "close" costs no map.
func Of(header http.Header) map[string]bool {
	var drop map[string]bool
	for _, value := range header["Connection"] {
		for name := range strings.SplitSeq(value, ",") {
			name = textproto.CanonicalMIMEHeaderKey(textproto.TrimString(name))
			if name == "" || name == "Host" || fields[name] || header[name] == nil {
				continue // nothing to add: a connection option such as "close", or no such field
			}
			if drop == nil {
				drop = maps.Clone(fields)
			}
			drop[name] = true
		}
	}
	if drop == nil {
		return fields
	}
	return drop
}

// CloseUnread makes an answer written before the request's body was read to its end close the
// HTTP/1 connection: net/http would otherwise read up to 256 KiB of the body before sending
// it, so that the connection could serve another request, and a body that stalled held the
// answer until the read timeout, when it was most often lost (the Node edge answers at once
// too). HTTP/2 needs none of this: a stream's unread body holds no other.
func CloseUnread(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 && r.Body != nil && r.Body != http.NoBody {
		w.Header().Set("Connection", "close")
	}
}
