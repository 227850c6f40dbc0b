package protocol

import (
	"errors"
	"fmt"
)

// Reason classifies a rejection. The values mirror hookverify.v1.RejectReason.
type Reason int

// Rejection reasons a protocol can return.
const (
	ReasonMissingSignature Reason = iota + 1
	ReasonMalformedSignature
	ReasonSignatureMismatch
	ReasonMissingTimestamp
	ReasonTimestampOutOfTolerance
	ReasonMissingEventID
	ReasonMalformedPayload
)

// String returns the reason's name.
func (r Reason) String() string {
	switch r {
	case ReasonMissingSignature:
		return "missing signature"
	case ReasonMalformedSignature:
		return "malformed signature"
	case ReasonSignatureMismatch:
		return "signature mismatch"
	case ReasonMissingTimestamp:
		return "missing timestamp"
	case ReasonTimestampOutOfTolerance:
		return "timestamp out of tolerance"
	case ReasonMissingEventID:
		return "missing event id"
	case ReasonMalformedPayload:
		return "malformed payload"
	}
	return fmt.Sprintf("reason(%d)", int(r))
}

// Rejection is the error Verify returns for a delivery that must be rejected. Detail is safe to
// show to callers: it never contains secrets, signatures or body bytes.
type Rejection struct {
	Reason Reason
	Detail string
	// WithoutKeys says the check that failed did not involve the endpoint's secrets (Meta's
	// verify_token is an endpoint option): an endpoint that has no secret valid now, or one
	// this server cannot open, would have failed it all the same, so that is not why.
	WithoutKeys bool
}

func (r *Rejection) Error() string {
	if r.Detail == "" {
		return r.Reason.String()
	}
	return r.Reason.String() + ": " + r.Detail
}

// Is makes errors.Is(err, &Rejection{Reason: X}) match any rejection with reason X.
func (r *Rejection) Is(target error) bool {
	t, ok := target.(*Rejection)
	return ok && t.Reason == r.Reason && (t.Detail == "" || t.Detail == r.Detail)
}

// Reject builds a *Rejection with a formatted detail.
func Reject(reason Reason, format string, args ...any) error {
	return &Rejection{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// rejectWithoutKeys is Reject for a check that does not involve the endpoint's secrets.
func rejectWithoutKeys(reason Reason, detail string) error {
	return &Rejection{Reason: reason, Detail: detail, WithoutKeys: true}
}

// ReasonOf returns the rejection reason of err, or 0 if err is not a rejection.
func ReasonOf(err error) Reason {
	var r *Rejection
	if errors.As(err, &r) {
		return r.Reason
	}
	return 0
}
