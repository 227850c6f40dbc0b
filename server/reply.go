package server

import (
	"encoding/json"
	"net/http"
	"strings"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
)

// rejectReason maps a protocol rejection to the API enum.
func rejectReason(r protocol.Reason) hookverifyv1.RejectReason {
	switch r {
	case protocol.ReasonMissingSignature:
		return hookverifyv1.RejectReason_REJECT_REASON_MISSING_SIGNATURE
	case protocol.ReasonMalformedSignature:
		return hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_SIGNATURE
	case protocol.ReasonSignatureMismatch:
		return hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH
	case protocol.ReasonMissingTimestamp:
		return hookverifyv1.RejectReason_REJECT_REASON_MISSING_TIMESTAMP
	case protocol.ReasonTimestampOutOfTolerance:
		return hookverifyv1.RejectReason_REJECT_REASON_TIMESTAMP_OUT_OF_TOLERANCE
	case protocol.ReasonMissingEventID:
		return hookverifyv1.RejectReason_REJECT_REASON_MISSING_EVENT_ID
	case protocol.ReasonMalformedPayload:
		return hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_PAYLOAD
	}
	return hookverifyv1.RejectReason_REJECT_REASON_UNSPECIFIED
}

// rejectStatus is the HTTP status the edge answers a rejected delivery with. All are 4xx, so
// providers record a failure; none is one that makes a provider give up on the endpoint for
// good (410 for Standard Webhooks, Calendly and Trello, 406 for Mailgun, 404 and 410 for
// Typeform), since a rejection may be a configuration mistake an operator fixes, after which
// the provider's retries must still arrive. So an unknown endpoint is 400, not 404: a URL
// registered at the provider before its endpoint was created here (or within --cache-ttl of
// it, on another instance) must not get the webhook disabled.
func rejectStatus(r hookverifyv1.RejectReason) int32 {
	switch r {
	case hookverifyv1.RejectReason_REJECT_REASON_UNKNOWN_ENDPOINT:
		return http.StatusBadRequest
	case hookverifyv1.RejectReason_REJECT_REASON_ENDPOINT_DISABLED:
		return http.StatusForbidden
	case hookverifyv1.RejectReason_REJECT_REASON_BODY_TOO_LARGE:
		return http.StatusRequestEntityTooLarge
	case hookverifyv1.RejectReason_REJECT_REASON_MISSING_SIGNATURE,
		hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_SIGNATURE,
		hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH,
		hookverifyv1.RejectReason_REJECT_REASON_MISSING_TIMESTAMP,
		hookverifyv1.RejectReason_REJECT_REASON_TIMESTAMP_OUT_OF_TOLERANCE:
		return http.StatusUnauthorized
	}
	return http.StatusBadRequest
}

// replyBody is the small JSON document sent back to the provider.
type replyBody struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

func jsonReply(code int32, body replyBody) *hookverifyv1.HttpReply {
	data, _ := json.Marshal(body) // cannot fail for this type
	return &hookverifyv1.HttpReply{
		Status:  code,
		Headers: []*hookverifyv1.HeaderField{{Name: "Content-Type", Value: "application/json"}},
		Body:    data,
	}
}

// successReply answers accepted and duplicate alike with 200: either way the provider must stop
// retrying. A reply the delivery (override) or its protocol asks for comes first.
func successReply(p *protocol.Protocol, override *protocol.Reply, v hookverifyv1.Verdict) *hookverifyv1.HttpReply {
	if override == nil && p != nil {
		override = p.SuccessReply
	}
	if override != nil {
		reply := &hookverifyv1.HttpReply{Status: int32(override.Status), Body: override.Body}
		for _, h := range override.Headers {
			reply.Headers = append(reply.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
		}
		return reply
	}
	body := acceptedBody
	if v == hookverifyv1.Verdict_VERDICT_DUPLICATE {
		body = duplicateBody
	}
	return &hookverifyv1.HttpReply{
		Status:  http.StatusOK,
		Headers: []*hookverifyv1.HeaderField{{Name: "Content-Type", Value: "application/json"}},
		Body:    body,
	}
}

// The bodies of the default success replies, encoded once; never modified.
var (
	acceptedBody, _  = json.Marshal(replyBody{Status: "accepted"})
	duplicateBody, _ = json.Marshal(replyBody{Status: "duplicate"})
)

// rejectedBy is rejected for a delivery to an endpoint of protocol p: a protocol may want its
// rejections bare (Protocol.BareRejections).
func rejectedBy(p *protocol.Protocol, reason hookverifyv1.RejectReason, detail string) *hookverifyv1.VerifyResponse {
	resp := rejected(reason, detail)
	if p.BareRejections {
		resp.Reply = &hookverifyv1.HttpReply{Status: resp.GetReply().GetStatus()}
	}
	return resp
}

// rejected builds a REJECTED response with its reply.
func rejected(reason hookverifyv1.RejectReason, detail string) *hookverifyv1.VerifyResponse {
	code := strings.ToLower(strings.TrimPrefix(reason.String(), "REJECT_REASON_"))
	return &hookverifyv1.VerifyResponse{
		Verdict:      hookverifyv1.Verdict_VERDICT_REJECTED,
		RejectReason: reason,
		Detail:       detail,
		Reply:        jsonReply(rejectStatus(reason), replyBody{Status: "rejected", Reason: code}),
	}
}
