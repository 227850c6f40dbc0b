package protocol

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// Plaid signs each webhook with a JWT in Plaid-Verification: ES256 (ECDSA P-256 with SHA-256,
// the 64-byte r||s signature of RFC 7518), header {"alg":"ES256","kid":...}, claims iat (unix
// seconds) and request_body_sha256 (hex SHA-256 of the raw body). The kid names a JWK that
// receivers normally fetch from /webhook_verification_key/get; hookverify does no I/O, so an
// admin adds each JWK (as that endpoint returns it) as a secret.
const (
	plaidName             = "plaid"
	plaidHeader           = "Plaid-Verification"
	plaidAlg              = "ES256"
	plaidDefaultTolerance = 300 * time.Second
	plaidCoordLen         = 32
	// plaidMaxJWT bounds the header we parse; Plaid's tokens are a few hundred bytes.
	plaidMaxJWT = 8192
)

// Plaid returns the protocol for Plaid webhooks.
//
// The verifying secret is the public JWK JSON exactly as /webhook_verification_key/get returns
// it ({"alg":"ES256","crv":"P-256","kid":...,"kty":"EC","use":"sig","x":...,"y":...,
// "created_at":...,"expired_at":null}); several may be configured and the JWT's kid picks one.
// A key whose expired_at is set stops verifying from that time. The signing secret (for Sign
// and tests) is the private JWK: the same members plus "d", base64url of the 32-byte scalar.
//
// Verify rejects, in this order: no Plaid-Verification (missing signature); a value that is not
// three base64url parts with a JSON header, or an alg other than exactly ES256 (none, HS256,
// ES384 ... are refused), or no kid, or a signature that is not 64 bytes (malformed signature);
// no configured, unexpired key with that kid, or a signature that does not verify (signature
// mismatch); claims that are not a JSON object or lack a string request_body_sha256 (malformed
// signature); request_body_sha256 not equal to the body's SHA-256, compared in constant time
// (signature mismatch); no numeric iat (missing timestamp); iat more than the tolerance from
// Now either way (timestamp out of tolerance); a body that is not a JSON object (malformed
// payload).
func Plaid() *Protocol {
	return &Protocol{
		Name:             plaidName,
		DisplayName:      "Plaid",
		SignatureScheme:  "ES256 JWT in Plaid-Verification (kid selects the JWK), iat and request_body_sha256 = SHA-256 of the body",
		SignsTimestamp:   true,
		DefaultTolerance: plaidDefaultTolerance,
		IdentitySource: `"iat:<JWT iat>:body-sha256:<hex SHA-256 of the raw body>": Plaid webhooks carry no event id, and ` +
			`the body alone repeats across distinct events (every SYNC_UPDATES_AVAILABLE for an Item is byte-identical), so the ` +
			`signed issue time tells them apart. Each retry is signed afresh (Plaid refuses an iat over 5 minutes old and retries for about ` +
			`24 hours), so each retry is a new event: the worker must be idempotent on what the webhook names`,
		DocsURL: "https://plaid.com/docs/api/webhooks/webhook-verification/",
		Retries: "Plaid retries a webhook that gets no 200 within 10 seconds, with backoff over about 24 hours; each " +
			"attempt is a new request with a freshly issued JWT (Plaid tells receivers to reject an iat older than 5 " +
			"minutes) and the same body, so the 5-minute tolerance, applied both ways, does not reject genuine retries. " +
			"The identity includes the iat, so a retry Plaid re-signs is accepted again (Plaid asks receivers to be " +
			"idempotent); the same request forwarded twice is a duplicate.",
		ParseSecret:   parsePlaidSecret,
		Verify:        verifyPlaid,
		Sign:          signPlaid,
		ExampleSecret: examplePlaidSecret,
		ExampleBody:   examplePlaidBody,
	}
}

// plaidJWK is the subset of a Plaid JWK that matters here.
type plaidJWK struct {
	Kty       string          `json:"kty"`
	Crv       string          `json:"crv"`
	Alg       string          `json:"alg,omitempty"`
	Use       string          `json:"use,omitempty"`
	Kid       string          `json:"kid"`
	X         string          `json:"x"`
	Y         string          `json:"y"`
	D         string          `json:"d,omitempty"`
	CreatedAt json.RawMessage `json:"created_at,omitempty"`
	ExpiredAt json.RawMessage `json:"expired_at,omitempty"`
}

// plaidKey is the parsed key material: Material holds its canonical JSON (kid, point, expiry).
type plaidKey struct {
	Kid       string `json:"kid"`
	Point     []byte `json:"point"`
	ExpiredAt int64  `json:"expired_at,omitempty"`
}

// plaidDecodeCoord decodes one base64url coordinate or scalar of exactly 32 bytes.
func plaidDecodeCoord(s string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != plaidCoordLen {
		return nil, false
	}
	return b, true
}

// plaidParseJWK checks a JWK's shape and returns it with its public point (0x04||x||y).
func plaidParseJWK(secret string) (plaidJWK, []byte, error) {
	var k plaidJWK
	// validJSON refuses anything after the object: dec.More() after Decode said no more for a
	// trailing "}" or "]", so a mangled paste passed as the key.
	dec := json.NewDecoder(strings.NewReader(secret))
	if !validJSON([]byte(secret)) || dec.Decode(&k) != nil {
		return k, nil, invalidSecret("the Plaid key is not a JWK JSON object")
	}
	if k.Kty != "EC" || k.Crv != "P-256" {
		return k, nil, invalidSecret(`the Plaid key is not an EC P-256 JWK (kty "EC", crv "P-256")`)
	}
	if k.Alg != "" && k.Alg != plaidAlg {
		return k, nil, invalidSecret("the Plaid key's alg is not ES256")
	}
	if k.Kid == "" {
		return k, nil, invalidSecret("the Plaid key has no kid")
	}
	x, okX := plaidDecodeCoord(k.X)
	y, okY := plaidDecodeCoord(k.Y)
	if !okX || !okY {
		return k, nil, invalidSecret("the Plaid key's x and y are not 32-byte base64url values")
	}
	point := append(append([]byte{4}, x...), y...)
	if _, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point); err != nil {
		return k, nil, invalidSecret("the Plaid key's point is not on the P-256 curve")
	}
	return k, point, nil
}

// parsePlaidSecret accepts the public JWK as Plaid returns it; a private JWK is refused so that
// private keys are never stored as verifying secrets.
func parsePlaidSecret(secret string) ([]byte, error) {
	k, point, err := plaidParseJWK(secret)
	if err != nil {
		return nil, err
	}
	if k.D != "" {
		return nil, invalidSecret("the Plaid key is a private JWK; add the public key (without \"d\")")
	}
	var expired int64
	if raw := bytes.TrimSpace(k.ExpiredAt); len(raw) > 0 && string(raw) != "null" {
		v, ok := parseUnixSeconds(string(raw))
		if !ok || v == 0 {
			return nil, invalidSecret("the Plaid key's expired_at is neither null nor unix seconds")
		}
		expired = v
	}
	return json.Marshal(plaidKey{Kid: k.Kid, Point: point, ExpiredAt: expired})
}

// examplePlaidSecret makes a P-256 key: signing is the private JWK, verifying the public JWK as
// /webhook_verification_key/get shows it.
func examplePlaidSecret() (string, string, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("protocol: generating a P-256 key: %w", err)
	}
	kidBytes, err := randomBytes(16)
	if err != nil {
		return "", "", err
	}
	kid := hex.EncodeToString(kidBytes)
	kid = kid[:8] + "-" + kid[8:12] + "-" + kid[12:16] + "-" + kid[16:20] + "-" + kid[20:]
	return plaidJWKs(priv, kid, time.Now().Unix())
}

// plaidJWKs renders priv as the private and the public JWK JSON.
func plaidJWKs(priv *ecdsa.PrivateKey, kid string, created int64) (string, string, error) {
	point, err := priv.PublicKey.Bytes()
	if err != nil {
		return "", "", err
	}
	d, err := priv.Bytes()
	if err != nil {
		return "", "", err
	}
	enc := base64.RawURLEncoding.EncodeToString
	pub := plaidJWK{Alg: plaidAlg, CreatedAt: json.RawMessage(strconv.FormatInt(created, 10)), Crv: "P-256",
		ExpiredAt: json.RawMessage("null"), Kid: kid, Kty: "EC", Use: "sig", X: enc(point[1:33]), Y: enc(point[33:])}
	pubJSON, err := json.Marshal(pub)
	if err != nil {
		return "", "", err
	}
	pub.D = enc(d)
	privJSON, err := json.Marshal(pub)
	if err != nil {
		return "", "", err
	}
	return string(privJSON), string(pubJSON), nil
}

// examplePlaidBody is a TRANSACTIONS SYNC_UPDATES_AVAILABLE webhook for the item eventID.
func examplePlaidBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"environment":"sandbox","historical_update_complete":true,"initial_update_complete":true,"item_id":` +
		string(id) + `,"webhook_code":"SYNC_UPDATES_AVAILABLE","webhook_type":"TRANSACTIONS"}`)
}

// plaidToken is a parsed, not yet verified, JWT.
type plaidToken struct {
	kid           string
	signingInput  string
	signature     []byte
	payloadBase64 string
}

// parsePlaidJWT splits and checks the JWT's shape and header. Its errors are *Rejection.
func parsePlaidJWT(v string) (plaidToken, error) {
	var t plaidToken
	if v == "" || len(v) > plaidMaxJWT {
		return t, Reject(ReasonMalformedSignature, "%s is empty or too long", plaidHeader)
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return t, Reject(ReasonMalformedSignature, "%s is not a JWT (three dot-separated parts)", plaidHeader)
	}
	rawHeader, err := base64.RawURLEncoding.Strict().DecodeString(parts[0])
	if err != nil {
		return t, Reject(ReasonMalformedSignature, "%s has a header that is not base64url", plaidHeader)
	}
	var h struct {
		Alg *string `json:"alg"`
		Kid *string `json:"kid"`
	}
	if err := json.Unmarshal(rawHeader, &h); err != nil {
		return t, Reject(ReasonMalformedSignature, "%s has a header that is not a JSON object", plaidHeader)
	}
	if h.Alg == nil || *h.Alg != plaidAlg {
		return t, Reject(ReasonMalformedSignature, "%s is not signed with ES256 (other algorithms, none included, are refused)", plaidHeader)
	}
	if h.Kid == nil || *h.Kid == "" {
		return t, Reject(ReasonMalformedSignature, "%s has no kid", plaidHeader)
	}
	sig, err := base64.RawURLEncoding.Strict().DecodeString(parts[2])
	if err != nil || len(sig) != 2*plaidCoordLen {
		return t, Reject(ReasonMalformedSignature, "%s does not end in a 64-byte base64url ES256 signature", plaidHeader)
	}
	return plaidToken{kid: *h.Kid, signingInput: parts[0] + "." + parts[1], signature: sig, payloadBase64: parts[1]}, nil
}

// plaidVerifySig checks an ES256 signature (r||s) with the public point.
func plaidVerifySig(point []byte, signingInput string, sig []byte) bool {
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
	if err != nil {
		return false
	}
	digest := sha256.Sum256([]byte(signingInput))
	r := new(big.Int).SetBytes(sig[:plaidCoordLen])
	s := new(big.Int).SetBytes(sig[plaidCoordLen:])
	return ecdsa.Verify(pub, digest[:], r, s)
}

func verifyPlaid(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(plaidHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", plaidHeader)
	}
	tok, err := parsePlaidJWT(raw)
	if err != nil {
		return Result{}, err
	}
	keyID, kidKnown := "", false
	for _, k := range keys {
		var pk plaidKey
		if len(k.Material) == 0 || json.Unmarshal(k.Material, &pk) != nil || pk.Kid != tok.kid {
			continue
		}
		if pk.ExpiredAt != 0 && !p.Now.IsZero() && p.Now.Unix() >= pk.ExpiredAt {
			continue
		}
		kidKnown = true
		if plaidVerifySig(pk.Point, tok.signingInput, tok.signature) {
			keyID = k.ID
			break
		}
	}
	if keyID == "" {
		if !kidKnown {
			return Result{}, Reject(ReasonSignatureMismatch, "no configured, unexpired Plaid key has the JWT's kid")
		}
		return Result{}, Reject(ReasonSignatureMismatch, "the %s signature does not verify with the key its kid names", plaidHeader)
	}
	rawClaims, err := base64.RawURLEncoding.Strict().DecodeString(tok.payloadBase64)
	var claims struct {
		Iat      *json.Number `json:"iat"`
		BodyHash *string      `json:"request_body_sha256"`
	}
	if err != nil || json.Unmarshal(rawClaims, &claims) != nil || claims.BodyHash == nil {
		return Result{}, Reject(ReasonMalformedSignature, "the %s claims are not a JSON object with a string request_body_sha256", plaidHeader)
	}
	sum := sha256.Sum256(req.Body)
	want := hex.EncodeToString(sum[:])
	if subtle.ConstantTimeCompare([]byte(want), []byte(*claims.BodyHash)) != 1 {
		return Result{}, Reject(ReasonSignatureMismatch, "the body does not match the JWT's request_body_sha256")
	}
	if claims.Iat == nil {
		return Result{}, Reject(ReasonMissingTimestamp, "the %s claims have no iat", plaidHeader)
	}
	iat, ok := parseUnixSeconds(claims.Iat.String())
	if !ok {
		return Result{}, Reject(ReasonMissingTimestamp, "the %s iat is not whole unix seconds", plaidHeader)
	}
	if err := checkTimestamp(iat, p.Now, effectiveTolerance(p, plaidDefaultTolerance)); err != nil {
		return Result{}, err
	}
	if _, err := jsonObject(req.Body); err != nil {
		return Result{}, err
	}
	// The body alone is no identity: a notification such as SYNC_UPDATES_AVAILABLE repeats the
	// same bytes for every change to an Item, and keying on it would answer every later one
	// DUPLICATE for the whole dedupe window. The signed iat separates them; it is the only
	// signed value that does (the signature is randomized ECDSA and must not be an identity).
	return Result{KeyID: keyID, EventID: "iat:" + strconv.FormatInt(iat, 10) + ":" + bodySHA256ID(req.Body)}, nil
}

// signPlaid produces the Plaid-Verification JWT Plaid would send, signed with the private JWK
// secrets[0] (Plaid signs each webhook with one current key), iat = in.Timestamp.
func signPlaid(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("plaid: sign needs the private JWK")
	}
	if in.Timestamp.IsZero() || in.Timestamp.Unix() < 0 {
		return nil, errors.New("plaid: sign needs a timestamp at or after 1970")
	}
	k, _, err := plaidParseJWK(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("plaid: %w", err)
	}
	d, ok := plaidDecodeCoord(k.D)
	if !ok {
		return nil, errors.New("plaid: sign needs the private JWK (a 32-byte base64url \"d\")")
	}
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		return nil, fmt.Errorf("plaid: the private key is invalid: %w", err)
	}
	header, err := json.Marshal(map[string]string{"alg": plaidAlg, "kid": k.Kid, "typ": "JWT"})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(in.Body)
	claims, err := json.Marshal(map[string]any{"iat": in.Timestamp.Unix(), "request_body_sha256": hex.EncodeToString(sum[:])})
	if err != nil {
		return nil, err
	}
	enc := base64.RawURLEncoding.EncodeToString
	signingInput := enc(header) + "." + enc(claims)
	digest := sha256.Sum256([]byte(signingInput))
	r, s, err := ecdsa.Sign(rand.Reader, priv, digest[:])
	if err != nil {
		return nil, fmt.Errorf("plaid: signing: %w", err)
	}
	sig := make([]byte, 2*plaidCoordLen)
	r.FillBytes(sig[:plaidCoordLen])
	s.FillBytes(sig[plaidCoordLen:])
	return Headers{{Name: plaidHeader, Value: signingInput + "." + enc(sig)}}, nil
}
