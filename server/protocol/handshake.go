package protocol

import "net/url"

// Pieces of the GET handshakes (Dropbox, Meta) that answer a challenge instead of a delivery.
// jsonReply and textReply answer the POST handshakes (Discord, Okta, Zoom; Slack, Twitch).

// requestQuery returns the query parameters of a request URL (absolute or a path). A query
// that does not parse is a malformed request.
func requestQuery(rawURL string) (url.Values, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, Reject(ReasonMalformedPayload, "the request URL does not parse")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, Reject(ReasonMalformedPayload, "the request query does not parse")
	}
	return q, nil
}

// echoReply is a 200 text/plain reply echoing s, with nosniff so that a browser never
// renders the echoed, attacker-choosable text as anything but text.
func echoReply(s string) *Reply {
	return &Reply{
		Status: 200,
		Headers: Headers{
			{Name: "Content-Type", Value: "text/plain; charset=utf-8"},
			{Name: "X-Content-Type-Options", Value: "nosniff"},
		},
		Body: []byte(s),
	}
}

// jsonReply is a 200 application/json reply with body.
func jsonReply(body []byte) *Reply {
	return &Reply{Status: 200, Headers: Headers{{Name: "Content-Type", Value: "application/json"}}, Body: body}
}
