package protocol

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"sort"
	"strconv"
	"strings"
)

// Adyen's standard webhooks (payments) carry one HMAC per NotificationRequestItem, in
// additionalData.hmacSignature: base64 HMAC-SHA256, keyed with the hex-DECODED HMAC key, of the
// colon-join of pspReference, originalReference, merchantAccountCode, merchantReference,
// amount.value, amount.currency, eventCode and success (absent fields as empty strings, except
// an absent amount.value, which Adyen's libraries sign as "" or "0": both are accepted, see
// adyenSignedForms; no escaping of ':' or '\' in the values, as Adyen's libraries and their
// colon/backslash test webhooks show). Only those eight fields are signed.
const (
	adyenName          = "adyen"
	adyenMaxPlainID    = 256
	adyenSignatureKey  = "hmacSignature"
	adyenItemsKey      = "notificationItems"
	adyenItemWrapper   = "NotificationRequestItem"
	adyenMinKeyBytes   = 16
	adyenExampleKeyLen = 32
)

// Adyen returns the protocol for Adyen standard (payment) webhooks in JSON. The Banking and
// Management webhooks, signed over the raw body in an HmacSignature header, are not covered.
//
// A notification may batch several items; every one must carry a signature that verifies, and
// all under the same key (Adyen signs a notification with the webhook's one HMAC key). Because
// the rest of the body (additionalData, eventDate, reason, ...) is not signed, the protocol is
// marked StaticCredential (body not authenticated), and the identity is derived from the signed
// fields alone.
//
// Adyen expects the reply body "[accepted]" (without it the Customer Area shows the
// deliveries as failed and Adyen retries them), so SuccessReply sends exactly that.
//
// Verify rejects, in this order: a body that is not a JSON object with a non-empty
// notificationItems array of {"NotificationRequestItem":{...}} objects (malformed payload); an
// item without additionalData.hmacSignature (missing signature); a signature that is not the
// base64 of 32 bytes, or signed fields of the wrong JSON type (malformed signature); no key that
// verifies every item (signature mismatch); an item without pspReference or eventCode (missing
// event id).
func Adyen() *Protocol {
	return &Protocol{
		Name:            adyenName,
		SuccessReply:    &Reply{Status: 200, Headers: Headers{{Name: "Content-Type", Value: "text/plain"}}, Body: []byte("[accepted]")},
		DisplayName:     "Adyen",
		SignatureScheme: "HMAC-SHA256 (base64, hex-decoded key) of the 8 colon-joined fields of each NotificationRequestItem, in additionalData.hmacSignature",
		SignsTimestamp:  false,
		IdentitySource: "the signed fields of each item (pspReference:originalReference:merchantAccountCode:merchantReference:" +
			"value:currency:eventCode:success, which contains Adyen's pspReference+eventCode+success duplicate key); several " +
			"items are one identity \"items-sha256:<hex>\" of their sorted signed strings; an absent amount.value is signed as " +
			"\"\" by Adyen's Java/Node/PHP/Ruby libraries and as \"0\" by its Go library, so both are accepted and the identity " +
			"is the string that verified",
		StaticCredential: true,
		DocsURL:          "https://docs.adyen.com/development-resources/webhooks/secure-webhooks/verify-hmac-signatures",
		Retries: "Adyen retries a notification that is not acknowledged (it expects HTTP 2xx with body \"[accepted]\") three " +
			"times right away, then with growing intervals for up to 30 days, the same signed items each time; nothing is " +
			"timed, so there is no tolerance.",
		ParseSecret:   parseAdyenSecret,
		Verify:        verifyAdyen,
		Sign:          signAdyen,
		SignBody:      signAdyenBody,
		ExampleSecret: exampleAdyenSecret,
		ExampleBody:   exampleAdyenBody,
	}
}

// parseAdyenSecret hex-decodes the HMAC key as Adyen's libraries do (upper- or lowercase).
func parseAdyenSecret(secret string) ([]byte, error) {
	if secret == "" {
		return nil, invalidSecret("the Adyen HMAC key is empty")
	}
	key, err := hex.DecodeString(secret)
	if err != nil {
		return nil, invalidSecret("the Adyen HMAC key is not hexadecimal")
	}
	if len(key) < adyenMinKeyBytes {
		return nil, invalidSecret("the Adyen HMAC key is shorter than 32 hex digits")
	}
	return key, nil
}

// exampleAdyenSecret is an HMAC key as the Customer Area shows one: 64 uppercase hex digits.
func exampleAdyenSecret() (string, string, error) {
	b, err := randomBytes(adyenExampleKeyLen)
	if err != nil {
		return "", "", err
	}
	s := strings.ToUpper(hex.EncodeToString(b))
	return s, s, nil
}

// exampleAdyenBody is an unsigned AUTHORISATION notification whose pspReference is the event id.
func exampleAdyenBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"authCode":"039404"},` +
		`"amount":{"currency":"EUR","value":1130},"eventCode":"AUTHORISATION","eventDate":"2026-01-01T00:00:00+01:00",` +
		`"merchantAccountCode":"TestMerchant","merchantReference":"order-1","paymentMethod":"visa","pspReference":` + string(id) +
		`,"reason":"039404:1111:03/2030","success":"true"}}]}`)
}

// adyenItem is one parsed NotificationRequestItem.
type adyenItem struct {
	// forms are the strings the signature may cover (adyenSignedForms); pspReference and
	// eventCode are needed for the identity.
	forms                   []string
	pspReference, eventCode string
	// signature is the decoded hmacSignature.
	signature []byte
}

// adyenItems parses the notification's items. Its errors are *Rejection.
func adyenItems(body []byte) ([]map[string]json.RawMessage, error) {
	top, err := jsonObject(body)
	if err != nil {
		return nil, err
	}
	var wrappers []map[string]json.RawMessage
	if raw, ok := top[adyenItemsKey]; !ok || json.Unmarshal(raw, &wrappers) != nil || len(wrappers) == 0 {
		return nil, Reject(ReasonMalformedPayload, `body has no non-empty "notificationItems" array of objects`)
	}
	items := make([]map[string]json.RawMessage, len(wrappers))
	for i, w := range wrappers {
		items[i] = jsonObjectField(w, adyenItemWrapper)
		if items[i] == nil {
			return nil, Reject(ReasonMalformedPayload, `notificationItems[%d] has no "NotificationRequestItem" object`, i)
		}
	}
	return items, nil
}

// adyenField renders a signed field: a JSON string's value, or "" when absent or null. ok is
// false for any other type.
func adyenField(obj map[string]json.RawMessage, key string) (string, bool) {
	raw, present := obj[key]
	if !present || string(bytes.TrimSpace(raw)) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// adyenSigned builds an item's signed string. ok is false when a field has the wrong type.
// amount.value must be an integer (minor units), written in canonical decimal as Adyen's
// libraries do; an absent or null amount or amount.value signs as an empty value (see
// adyenSignedForms for the other form), an absent currency as empty. success may be the string
// "true"/"false" (what Adyen sends) or a JSON boolean.
func adyenSigned(item map[string]json.RawMessage) (string, bool) {
	forms, ok := adyenSignedForms(item)
	return forms[0], ok
}

// adyenSignedForms returns the strings an item's signature may cover, the canonical one first.
// Adyen's libraries disagree on an absent amount.value: the Java, Ruby, PHP and Node libraries
// sign it as "" (null/nil/undefined joined), adyen-go-api-library as "0" (the zero value of its
// Amount struct). Both are written only by the HMAC key's holder; the "0" form of an item is
// exactly the string of the same item with value 0, so accepting it lets no one change what a
// signature says beyond dropping a value of 0, and the identity is the form that verified.
func adyenSignedForms(item map[string]json.RawMessage) ([]string, bool) {
	var fields [8]string
	ok := true
	for i, k := range []string{"pspReference", "originalReference", "merchantAccountCode", "merchantReference"} {
		var fine bool
		fields[i], fine = adyenField(item, k)
		ok = ok && fine
	}
	valueAbsent := true
	if amount := jsonObjectField(item, "amount"); amount != nil {
		if raw, has := amount["value"]; has && string(bytes.TrimSpace(raw)) != "null" {
			v, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
			if err != nil {
				return []string{""}, false
			}
			fields[4] = strconv.FormatInt(v, 10)
			valueAbsent = false
		}
		var fine bool
		fields[5], fine = adyenField(amount, "currency")
		ok = ok && fine
	} else if raw, has := item["amount"]; has && string(bytes.TrimSpace(raw)) != "null" {
		return []string{""}, false
	}
	var fine bool
	fields[6], fine = adyenField(item, "eventCode")
	ok = ok && fine
	if raw := bytes.TrimSpace(item["success"]); string(raw) == "true" || string(raw) == "false" {
		fields[7] = string(raw)
	} else {
		fields[7], fine = adyenField(item, "success")
		ok = ok && fine
	}
	forms := []string{strings.Join(fields[:], ":")}
	if valueAbsent {
		fields[4] = "0"
		forms = append(forms, strings.Join(fields[:], ":"))
	}
	return forms, ok
}

// adyenMessage writes the signed string.
func adyenMessage(data string) func(hash.Hash) {
	return func(mac hash.Hash) { mac.Write([]byte(data)) }
}

func verifyAdyen(req *Request, keys []Key, _ Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, err := adyenItems(req.Body)
	if err != nil {
		return Result{}, err
	}
	items := make([]adyenItem, len(raw))
	for i, it := range raw {
		forms, ok := adyenSignedForms(it)
		add := jsonObjectField(it, "additionalData")
		sigText, present, isString := jsonString(add, adyenSignatureKey)
		if !present {
			return Result{}, Reject(ReasonMissingSignature, "notification item %d has no additionalData.hmacSignature", i)
		}
		sig, decoded := decodeStdBase64(sigText, sha256.Size)
		if !ok || !isString || !decoded {
			return Result{}, Reject(ReasonMalformedSignature,
				"notification item %d has a malformed hmacSignature or signed fields of the wrong type", i)
		}
		psp, _ := adyenField(it, "pspReference")
		code, _ := adyenField(it, "eventCode")
		items[i] = adyenItem{forms: forms, pspReference: psp, eventCode: code, signature: sig}
	}
	keyID := ""
	signedStrings := make([]string, len(items))
	for _, k := range keys {
		if len(k.Material) == 0 {
			continue
		}
		all := true
		for i, it := range items {
			signedStrings[i] = ""
			for _, form := range it.forms {
				if _, ok := matchKey([]Key{k}, [][]byte{it.signature}, sha256.New, adyenMessage(form)); ok {
					signedStrings[i] = form
					break
				}
			}
			if signedStrings[i] == "" {
				all = false
				break
			}
		}
		if all {
			keyID = k.ID
			break
		}
	}
	if keyID == "" {
		return Result{}, rejectNoMatch("additionalData.hmacSignature", 0, keys)
	}
	for i, it := range items {
		if it.pspReference == "" || it.eventCode == "" {
			return Result{}, Reject(ReasonMissingEventID, "notification item %d has no pspReference or eventCode", i)
		}
	}
	if len(signedStrings) == 1 && len(signedStrings[0]) <= adyenMaxPlainID {
		return Result{KeyID: keyID, EventID: signedStrings[0]}, nil
	}
	sort.Strings(signedStrings)
	sum := sha256.Sum256([]byte(strings.Join(signedStrings, "\n")))
	return Result{KeyID: keyID, EventID: "items-sha256:" + hex.EncodeToString(sum[:])}, nil
}

// signAdyenBody sets additionalData.hmacSignature on every item of in.Body, signed with
// secrets[0] (a webhook has one HMAC key). The body is re-encoded with object keys sorted and
// numbers kept as written.
func signAdyenBody(in SignInput, secrets []string) ([]byte, error) {
	if len(secrets) == 0 {
		return nil, errors.New("adyen: sign needs the HMAC key")
	}
	key, err := parseAdyenSecret(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("adyen: %w", err)
	}
	var top map[string]any
	dec := json.NewDecoder(bytes.NewReader(in.Body))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil || top == nil {
		return nil, errors.New("adyen: the body is not a JSON object")
	}
	wrappers, _ := top[adyenItemsKey].([]any)
	if len(wrappers) == 0 {
		return nil, errors.New("adyen: the body has no notificationItems")
	}
	for i, w := range wrappers {
		wrapper, _ := w.(map[string]any)
		item, _ := wrapper[adyenItemWrapper].(map[string]any)
		if item == nil {
			return nil, fmt.Errorf("adyen: notificationItems[%d] has no NotificationRequestItem", i)
		}
		rawItem, err := json.Marshal(item)
		if err != nil {
			return nil, err
		}
		var parsed map[string]json.RawMessage
		if err := json.Unmarshal(rawItem, &parsed); err != nil {
			return nil, err
		}
		data, ok := adyenSigned(parsed)
		if !ok {
			return nil, fmt.Errorf("adyen: notificationItems[%d] has signed fields of the wrong type", i)
		}
		add, _ := item["additionalData"].(map[string]any)
		if add == nil {
			add = map[string]any{}
			item["additionalData"] = add
		}
		add[adyenSignatureKey] = base64.StdEncoding.EncodeToString(hmacSum(sha256.New, key, adyenMessage(data)))
	}
	return json.Marshal(top)
}

// signAdyen returns the headers Adyen sends beside a signed body: only its Content-Type, since
// the signatures are in the body (see SignBody).
func signAdyen(_ SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("adyen: sign needs the HMAC key")
	}
	if _, err := parseAdyenSecret(secrets[0]); err != nil {
		return nil, fmt.Errorf("adyen: %w", err)
	}
	return Headers{{Name: "Content-Type", Value: "application/json"}}, nil
}
