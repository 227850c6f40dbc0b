package protocol

import (
	"strings"
	"testing"
)

// TestHelloSignMultipartOtherPartsFirst: the json field is found after other form parts (the
// callback's multipart form may carry more fields than json).
func TestHelloSignMultipartOtherPartsFirst(t *testing.T) {
	t.Parallel()
	p := HelloSign()
	body := "--b\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nnot json\r\n" +
		"--b\r\nContent-Disposition: form-data; name=\"json\"\r\n\r\n" + hellosignVectorJSON + "\r\n--b--\r\n"
	req := &Request{Method: "POST", Headers: Headers{{Name: "Content-Type", Value: "multipart/form-data; boundary=b"}}, Body: []byte(body)}
	res, err := p.Verify(req, keysFor(t, p, hellosignVectorKey), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
}

// TestHelloSignRepeatedJSONFieldRefused: a urlencoded form with two json fields is refused
// rather than verifying one and storing an ambiguous event.
func TestHelloSignRepeatedJSONFieldRefused(t *testing.T) {
	t.Parallel()
	p := HelloSign()
	req := hellosignForm(hellosignVectorJSON)
	req.Body = append(req.Body, []byte("&"+string(hellosignForm(hellosignVectorJSON).Body))...)
	res, err := p.Verify(req, keysFor(t, p, hellosignVectorKey), Params{})
	checkOutcome(t, res, err, ReasonMissingSignature, "", req)
}

// TestHelloSignJSONFieldSizeLimit: a multipart json field of exactly 1 MiB is read; one byte
// more is refused as malformed.
func TestHelloSignJSONFieldSizeLimit(t *testing.T) {
	t.Parallel()
	p := HelloSign()
	keys := keysFor(t, p, hellosignVectorKey)
	field := hellosignVectorJSON + strings.Repeat(" ", hellosignMaxJSON-len(hellosignVectorJSON))
	req := hellosignMultipart(t, field)
	res, err := p.Verify(req, keys, Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	req = hellosignMultipart(t, field+" ")
	res, err = p.Verify(req, keys, Params{})
	checkOutcome(t, res, err, ReasonMalformedSignature, "", req)
}
