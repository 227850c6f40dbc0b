package protocol

import (
	"strings"
	"testing"
)

// Adyen's libraries disagree on what an item without amount.value signs as the value field:
// adyen-go-api-library writes strconv.Itoa of the zero Amount struct ("0"); the Java
// (null -> ""), Ruby (nil.to_s), PHP (isset -> "") and Node (undefined in join -> "", when the
// amount object is there) libraries write "". The vectors below were computed outside Go
// (openssl dgst -sha256 -mac HMAC -macopt hexkey:<adyenDocsKey>, and Node's crypto.createHmac
// re-implementing the Java and Go getDataToSign), for the item
// pspReference 8816178952380553, merchantAccountCode TestMerchant, merchantReference report-1,
// eventCode REPORT_AVAILABLE, success "true", no originalReference:
//
//	"8816178952380553::TestMerchant:report-1:0::REPORT_AVAILABLE:true"   OzGJGlume4TR1i94za3YxABy7OPKbdad0gnFDl8gM7U=
//	"8816178952380553::TestMerchant:report-1:::REPORT_AVAILABLE:true"    BjxhtC83TLBnSPbMUvnlr+cdXcLSvVZPC8EcRLiDKM8=
//	"8816178952380553::TestMerchant:report-1:0:EUR:REPORT_AVAILABLE:true" +N7TPNCEnuZOdtHRQ7+48KQiSdErbBYfAc9RtG5djY0=
//	"8816178952380553::TestMerchant:report-1::EUR:REPORT_AVAILABLE:true"  L0V/erEtqjl5R4uIO2q59I1nrdHFyQKMGSCFV8vOrTE=
const (
	adyenNoAmountZeroSig     = "OzGJGlume4TR1i94za3YxABy7OPKbdad0gnFDl8gM7U="
	adyenNoAmountEmptySig    = "BjxhtC83TLBnSPbMUvnlr+cdXcLSvVZPC8EcRLiDKM8="
	adyenNoValueEURZeroSig   = "+N7TPNCEnuZOdtHRQ7+48KQiSdErbBYfAc9RtG5djY0="
	adyenNoValueEUREmptySig  = "L0V/erEtqjl5R4uIO2q59I1nrdHFyQKMGSCFV8vOrTE="
	adyenNoAmountZeroString  = "8816178952380553::TestMerchant:report-1:0::REPORT_AVAILABLE:true"
	adyenNoAmountEmptyString = "8816178952380553::TestMerchant:report-1:::REPORT_AVAILABLE:true"
	adyenEURZeroString       = "8816178952380553::TestMerchant:report-1:0:EUR:REPORT_AVAILABLE:true"
	adyenEUREmptyString      = "8816178952380553::TestMerchant:report-1::EUR:REPORT_AVAILABLE:true"
)

// adyenReportItem is the item above with amountJSON (e.g. `"amount":{...},`, or "") and sig.
func adyenReportItem(amountJSON, sig string) string {
	return `{"additionalData":{"hmacSignature":"` + sig + `"},` + amountJSON +
		`"eventCode":"REPORT_AVAILABLE","merchantAccountCode":"TestMerchant","merchantReference":"report-1",` +
		`"pspReference":"8816178952380553","reason":"https://example.com/report.csv","success":"true"}`
}

func TestAdyenAbsentAmountValue(t *testing.T) {
	t.Parallel()
	p := Adyen()
	tests := []struct {
		name       string
		body       []byte
		wantReason Reason
		wantEvent  string
	}{
		// Forms the Go library signs ("0" for an absent value): rejected before the fix.
		{name: "no amount, Go library form", body: adyenBody(adyenReportItem("", adyenNoAmountZeroSig)), wantEvent: adyenNoAmountZeroString},
		{name: "amount null, Go library form", body: adyenBody(adyenReportItem(`"amount":null,`, adyenNoAmountZeroSig)), wantEvent: adyenNoAmountZeroString},
		{name: "amount without value, Go library form", body: adyenBody(adyenReportItem(`"amount":{"currency":"EUR"},`, adyenNoValueEURZeroSig)), wantEvent: adyenEURZeroString},
		{name: "amount value null, Go library form", body: adyenBody(adyenReportItem(`"amount":{"currency":"EUR","value":null},`, adyenNoValueEURZeroSig)), wantEvent: adyenEURZeroString},
		// value null is absent for Java, Node, Ruby and PHP too: rejected as malformed before the fix.
		{name: "amount value null, Java/Ruby/PHP form", body: adyenBody(adyenReportItem(`"amount":{"currency":"EUR","value":null},`, adyenNoValueEUREmptySig)), wantEvent: adyenEUREmptyString},
		// Forms the other libraries sign ("" for an absent value): accepted before and after.
		{name: "no amount, Java/Ruby/PHP form", body: adyenBody(adyenReportItem("", adyenNoAmountEmptySig)), wantEvent: adyenNoAmountEmptyString},
		{name: "amount without value, Java/Ruby/PHP/Node form", body: adyenBody(adyenReportItem(`"amount":{"currency":"EUR"},`, adyenNoValueEUREmptySig)), wantEvent: adyenEUREmptyString},
		{name: "a value of 0 signs 0", body: adyenBody(adyenReportItem(`"amount":{"currency":"EUR","value":0},`, adyenNoValueEURZeroSig)), wantEvent: adyenEURZeroString},
		{name: "both forms in one notification", body: adyenBody(adyenReportItem("", adyenNoAmountZeroSig), adyenReportItem(`"amount":{"currency":"EUR"},`, adyenNoValueEUREmptySig)), wantEvent: "items-sha256:"},
		// The alternative applies only to an absent value: a present value signs exactly.
		{name: "value 0 with the empty-value signature", body: adyenBody(adyenReportItem(`"amount":{"currency":"EUR","value":0},`, adyenNoValueEUREmptySig)), wantReason: ReasonSignatureMismatch},
		{name: "value 5 with either signature", body: adyenBody(adyenReportItem(`"amount":{"currency":"EUR","value":5},`, adyenNoValueEURZeroSig)), wantReason: ReasonSignatureMismatch},
		{name: "currency changed, Go form", body: adyenBody(adyenReportItem(`"amount":{"currency":"USD"},`, adyenNoValueEURZeroSig)), wantReason: ReasonSignatureMismatch},
		{name: "currency dropped, Go form", body: adyenBody(adyenReportItem("", adyenNoValueEURZeroSig)), wantReason: ReasonSignatureMismatch},
		{name: "value a string", body: adyenBody(adyenReportItem(`"amount":{"currency":"EUR","value":"0"},`, adyenNoValueEURZeroSig)), wantReason: ReasonMalformedSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := &Request{Method: "POST", Body: tc.body}
			res, err := p.Verify(req, keysFor(t, p, adyenDocsKey), Params{Now: fixedNow})
			wantKey := ""
			if tc.wantReason == 0 {
				wantKey = "k0"
			}
			checkOutcome(t, res, err, tc.wantReason, wantKey, req)
			if tc.wantReason == 0 && !strings.HasPrefix(res.EventID, tc.wantEvent) {
				t.Fatalf("EventID = %q, want %q", res.EventID, tc.wantEvent)
			}
		})
	}
}

// A genuine item with value 0 whose value is then dropped still verifies (under the Go form), and
// must keep the identity of the genuine item: otherwise the edited replay would be stored again.
func TestAdyenDroppedZeroValueIsDuplicate(t *testing.T) {
	t.Parallel()
	p := Adyen()
	keys := keysFor(t, p, adyenDocsKey)
	genuine, err := p.Verify(&Request{Body: adyenBody(adyenReportItem(`"amount":{"currency":"EUR","value":0},`, adyenNoValueEURZeroSig))}, keys, Params{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	edited, err := p.Verify(&Request{Body: adyenBody(adyenReportItem(`"amount":{"currency":"EUR"},`, adyenNoValueEURZeroSig))}, keys, Params{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if genuine.EventID != edited.EventID {
		t.Fatalf("EventID %q for the genuine item, %q after dropping value 0", genuine.EventID, edited.EventID)
	}
}

// originalReference "" and absent sign the same; success "false" signs as such; the docs vector
// with originalReference present as "" still verifies.
func TestAdyenEmptyOriginalReferenceAndSuccess(t *testing.T) {
	t.Parallel()
	p := Adyen()
	keys := keysFor(t, p, adyenDocsKey)
	withEmpty := strings.Replace(adyenDocsItem, `"paymentMethod"`, `"originalReference":"","paymentMethod"`, 1)
	res, err := p.Verify(&Request{Body: adyenBody(withEmpty)}, keys, Params{Now: fixedNow})
	if err != nil || res.EventID != adyenDocsID {
		t.Fatalf("originalReference \"\": %+v, %v", res, err)
	}
	withNull := strings.Replace(adyenDocsItem, `"paymentMethod"`, `"originalReference":null,"paymentMethod"`, 1)
	if res, err := p.Verify(&Request{Body: adyenBody(withNull)}, keys, Params{Now: fixedNow}); err != nil || res.EventID != adyenDocsID {
		t.Fatalf("originalReference null: %+v, %v", res, err)
	}
	failed := adyenSignItem(t, strings.Replace(adyenDocsItem, `"success":"true"`, `"success":"false"`, 1), adyenDocsKey)
	res, err = p.Verify(&Request{Body: adyenBody(failed)}, keys, Params{Now: fixedNow})
	if err != nil || res.EventID != strings.TrimSuffix(adyenDocsID, "true")+"false" {
		t.Fatalf("success false: %+v, %v", res, err)
	}
}
