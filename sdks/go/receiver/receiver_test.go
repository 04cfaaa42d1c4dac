package receiver

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The vectors below were computed outside this package, with Python's
// hmac module following each document's algorithm (the Asixto seed's own
// `verificar` for the t=…,v1=… header; the Standard Webhooks reference
// vector from its specification's libraries).

const (
	now     = 1792854493 // 2026-10-24T15:08:13Z
	secretA = "whsec_9c1f0e2d3b4a59687766554433221100ffeeddccbbaa99887766554433221100"
	secretB = "whsec_00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	wrong   = "whsec_0000000000000000000000000000000000000000000000000000000000000000"
	body    = `{"schema_version":1,"event_id":"e1f0c2d4-0000-4000-8000-000000001187","instance_id":"8a1d2c3e-0000-4000-8000-0000000000a1","seq":1187,"type":"webhook.test","occurred_at":"2026-10-24T15:08:12Z","received_at":"2026-10-24T15:08:13Z","generation":1,"origin":"operator","data":{"prueba":true}}`
	deliv   = "3c9a7e55-0000-4000-8000-0000000000e1"
	mwA     = "5aedd9fb1145740026f7bb0fc01cab60905877324dcadc64eca0e0fccc52de83"
	mwB     = "dec23a8417fa3b52011bd07d6aa49db22647edbd6b895d0b5090cdc472dcce72"
	tA      = "d2de11e7a5799fb5282ada2ea69b8b7b6aff38c337ac29f3b0215ec04ba04af8"
	tB      = "e6f8ecb4627139cf6f33040ff0f2a388b530dbaaf339604aa3ef8f167b1b971c"
	swA     = "bCbE4OPKM1ZZCeBey6Zh6hqys9hJsMzdJjv2A93ao6k="
)

func at(secs int64) time.Time { return time.Unix(secs, 0) }

func header(pairs ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(pairs); i += 2 {
		h.Add(pairs[i], pairs[i+1])
	}
	return h
}

func mwHeaders() http.Header {
	return header("X-MW-Timestamp", "1792854493", "X-MW-Delivery-Id", deliv,
		"X-MW-Key-Id", "whk_b,whk_a", "X-MW-Signature", "v1="+mwB+",v1="+mwA)
}

func kindOf(err error) Kind {
	var v *VerifyError
	if errors.As(err, &v) {
		return v.Kind
	}
	return 0
}

func TestMwV1AcceptsEitherSignatureOfARotation(t *testing.T) {
	cases := []struct {
		name    string
		secrets []Secret
		keyID   string
	}{
		{"new secret only", []Secret{{Value: secretB}}, "whk_b"},
		{"old secret only", []Secret{{Value: secretA}}, "whk_a"},
		{"old with its key id", []Secret{{KeyID: "whk_a", Value: secretA}}, "whk_a"},
		{"both, old first", []Secret{{Value: secretA}, {Value: secretB}}, "whk_b"},
	}
	for _, c := range cases {
		got, err := Verify(MwV1, mwHeaders(), []byte(body), c.secrets, at(now))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.KeyID != c.keyID || got.DeliveryID != deliv || got.Timestamp != now || got.Profile != MwV1 {
			t.Fatalf("%s: %+v", c.name, got)
		}
	}
	// A key id narrows the secret to the signature sent under that id.
	_, err := Verify(MwV1, mwHeaders(), []byte(body), []Secret{{KeyID: "whk_b", Value: secretA}}, at(now))
	if kindOf(err) != KindBadSignature {
		t.Fatalf("secret A under whk_b: %v", err)
	}
}

func TestMwV1Refusals(t *testing.T) {
	secrets := []Secret{{Value: secretA}}
	cases := []struct {
		name   string
		edit   func(h http.Header)
		body   string
		kind   Kind
		header string
	}{
		{"tampered body", nil, body + " ", KindBadSignature, ""},
		{"wrong delivery id", func(h http.Header) { h.Set("X-MW-Delivery-Id", "3c9a7e55-0000-4000-8000-0000000000e2") }, body, KindBadSignature, ""},
		{"repeated signature header", func(h http.Header) { h.Add("X-MW-Signature", "v1="+mwA) }, body, KindRepeatedHeader, HeaderMwSignature},
		{"repeated timestamp", func(h http.Header) { h.Add("x-mw-timestamp", "1792854493") }, body, KindRepeatedHeader, HeaderMwTimestamp},
		{"no timestamp", func(h http.Header) { h.Del("X-MW-Timestamp") }, body, KindMissing, HeaderMwTimestamp},
		{"no key id", func(h http.Header) { h.Del("X-MW-Key-Id") }, body, KindMissing, HeaderMwKeyID},
		{"key ids and signatures differ", func(h http.Header) { h.Set("X-MW-Key-Id", "whk_a") }, body, KindMalformed, HeaderMwKeyID},
		{"dot in delivery id", func(h http.Header) { h.Set("X-MW-Delivery-Id", "a.b") }, body, KindMalformed, HeaderMwDeliveryID},
		{"timestamp not digits", func(h http.Header) { h.Set("X-MW-Timestamp", "-1") }, body, KindMalformed, HeaderMwTimestamp},
		{"short v1", func(h http.Header) { h.Set("X-MW-Signature", "v1=abcd,v1="+mwA) }, body, KindMalformed, HeaderMwSignature},
		{"no v1", func(h http.Header) { h.Set("X-MW-Signature", "v2=ab,v2=cd") }, body, KindMalformed, HeaderMwSignature},
		{"empty item", func(h http.Header) { h.Set("X-MW-Signature", "v1="+mwA+",") }, body, KindMalformed, HeaderMwSignature},
	}
	for _, c := range cases {
		h := mwHeaders()
		if c.edit != nil {
			c.edit(h)
		}
		_, err := Verify(MwV1, h, []byte(c.body), secrets, at(now))
		var v *VerifyError
		if !errors.As(err, &v) || v.Kind != c.kind || v.Header != c.header {
			t.Fatalf("%s: got %#v", c.name, err)
		}
		if v.Status() != http.StatusUnauthorized {
			t.Fatalf("%s: status %d", c.name, v.Status())
		}
	}
}

func TestTheWindowIsSymmetricAndStaleAnswers408(t *testing.T) {
	secrets := []Secret{{Value: secretA}}
	for _, offset := range []int64{-300, 0, 300} {
		if _, err := Verify(MwV1, mwHeaders(), []byte(body), secrets, at(now+offset)); err != nil {
			t.Fatalf("offset %d: %v", offset, err)
		}
	}
	for _, offset := range []int64{-301, 301, 86400} {
		_, err := Verify(MwV1, mwHeaders(), []byte(body), secrets, at(now+offset))
		var v *VerifyError
		if !errors.As(err, &v) || !errors.Is(err, ErrStale) || v.Status() != http.StatusRequestTimeout {
			t.Fatalf("offset %d: %v", offset, err)
		}
	}
	// The window is checked before the signatures: a stale forgery is
	// stale (408), so the answer does not tell a forger whether it matched.
	_, err := Verify(MwV1, mwHeaders(), []byte(body), []Secret{{Value: wrong}}, at(now+301))
	if !errors.Is(err, ErrStale) {
		t.Fatalf("stale and wrong: %v", err)
	}
}

func TestTV1(t *testing.T) {
	h := header("X-MW-Signature", "t=1792854493,v1="+tB+",v1="+tA, "X-MW-Delivery-Id", deliv)
	for _, s := range []string{secretA, secretB} {
		got, err := Verify(TV1, h, []byte(body), []Secret{{KeyID: "k", Value: s}}, at(now))
		if err != nil || got.DeliveryID != deliv || got.KeyID != "k" {
			t.Fatalf("%v %+v", err, got)
		}
	}
	// Order, spaces, upper-case hex and an unknown scheme do not matter.
	h2 := header("x-mw-signature", " v0=zz , v1="+strings.ToUpper(tA)+" , t=1792854493 ")
	if _, err := Verify(TV1, h2, []byte(body), []Secret{{Value: secretA}}, at(now)); err != nil {
		t.Fatal(err)
	}
	refusals := []struct {
		value string
		kind  Kind
	}{
		{"t=1792854493,v1=" + tA, KindBadSignature}, // with the wrong secret below
		{"t=1792854493,t=1792854493,v1=" + tA, KindMalformed},
		{"v1=" + tA, KindMalformed},
		{"t=1792854493", KindMalformed},
		{"t=1792854493,v1=" + tA[:10], KindMalformed},
		{"t=1792854493;v1=" + tA, KindMalformed},
		{"t=1792854192,v1=" + tA, KindStale},
	}
	for _, r := range refusals {
		_, err := Verify(TV1, header("X-MW-Signature", r.value), []byte(body), []Secret{{Value: wrong}}, at(now))
		if kindOf(err) != r.kind {
			t.Fatalf("%q: %v", r.value, err)
		}
	}
	repeated := header("X-MW-Signature", "t=1792854493,v1="+tA, "X-MW-Signature", "t=1792854493,v1="+tB)
	if _, err := Verify(TV1, repeated, []byte(body), []Secret{{Value: secretA}}, at(now)); !errors.Is(err, ErrRepeatedHeader) {
		t.Fatalf("repeated: %v", err)
	}
	if _, err := Verify(TV1, h, []byte(body+"x"), []Secret{{Value: secretA}}, at(now)); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("tampered: %v", err)
	}
}

func TestStandardWebhooks(t *testing.T) {
	// The reference vector of the Standard Webhooks libraries.
	ref := header("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp", "1614265330",
		"webhook-signature", "v1a,abc v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	refBody := []byte(`{"test": 2432232314}`)
	for _, s := range []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		if _, err := Verify(StandardWebhooks, ref, refBody, []Secret{{Value: s}}, at(1614265330)); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	// Motor's hex secrets are base64 too.
	h := header("webhook-id", deliv, "webhook-timestamp", "1792854493", "webhook-signature", "v1,"+swA)
	got, err := Verify(StandardWebhooks, h, []byte(body), []Secret{{Value: wrong}, {Value: secretA}}, at(now))
	if err != nil || got.DeliveryID != deliv {
		t.Fatalf("%v %+v", err, got)
	}
	if _, err := Verify(StandardWebhooks, h, []byte(body), []Secret{{Value: secretB}}, at(now)); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("other secret: %v", err)
	}
	if _, err := Verify(StandardWebhooks, h, []byte(body), []Secret{{Value: secretA}}, at(now-301)); !errors.Is(err, ErrStale) {
		t.Fatalf("stale: %v", err)
	}
	h.Add("Webhook-Signature", "v1,"+swA)
	if _, err := Verify(StandardWebhooks, h, []byte(body), []Secret{{Value: secretA}}, at(now)); !errors.Is(err, ErrRepeatedHeader) {
		t.Fatalf("repeated: %v", err)
	}
	bad := header("webhook-id", deliv, "webhook-timestamp", "1792854493", "webhook-signature", "v1,"+swA[:20])
	if _, err := Verify(StandardWebhooks, bad, []byte(body), []Secret{{Value: secretA}}, at(now)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short: %v", err)
	}
}

func TestAsixtoFromTheSeed(t *testing.T) {
	// Seed 003's envelope, signed with its algorithm: one v1 per active
	// secret in one Asixto-Signature header.
	asixto := `{"id":"9f1c3a70-4e0b-4f2a-9d5e-2b8c1a6f0d33","type":"job.succeeded","created":1787923200,"environment":"live","data":{}}`
	sig := "t=1787923200,v1=a7fd73bbc00f0f456a0897bfb9a16633ef4016b630a9fa0294ec64196f066f1d,v1=4c695ed3f948403e25f2bb20e3b4562544dc69e06f03fa8dfd7574944fc81b91"
	v, err := NewVerifier(Asixto, Secret{Value: secretB})
	if err != nil {
		t.Fatal(err)
	}
	var e AsixtoEvent
	got, err := verifyInto(v, header("Asixto-Signature", sig), asixto, 1787923200+299, &e)
	if err != nil || got.Profile != Asixto || e.ID != "9f1c3a70-4e0b-4f2a-9d5e-2b8c1a6f0d33" || e.Created != 1787923200 || e.Environment != "live" {
		t.Fatalf("%v %+v %+v", err, got, e)
	}
	// Symmetric: 301 s either side is stale.
	for _, offset := range []int64{-301, 301} {
		if _, err := verifyInto(v, header("Asixto-Signature", sig), asixto, 1787923200+offset, &e); !errors.Is(err, ErrStale) {
			t.Fatalf("offset %d: %v", offset, err)
		}
	}
	repeated := header("Asixto-Signature", sig, "asixto-signature", sig)
	if _, err := verifyInto(v, repeated, asixto, 1787923200, &e); !errors.Is(err, ErrRepeatedHeader) {
		t.Fatalf("repeated: %v", err)
	}
	if _, err := verifyInto(v, header("Asixto-Signature", sig), strings.Replace(asixto, "live", "test", 1), 1787923200, &e); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("tampered: %v", err)
	}
	// The t-v1 header name does not verify an Asixto delivery.
	if _, err := verifyInto(v, header("X-MW-Signature", sig), asixto, 1787923200, &e); !errors.Is(err, ErrMissing) {
		t.Fatalf("other header: %v", err)
	}
}

func TestVisitoFromTheSeed(t *testing.T) {
	visito := `{"eventId":"evt_01","type":"message.created","schemaVersion":"1.0","tenantId":"ten_1","occurredAt":"2026-10-24T15:08:12Z","data":{"direction":"inbound"}}`
	sig := "t=1792854493,v1=e9d23c12427ee7e2ac7b6307741da46fee075c4349953d63735469f24f622296"
	v, err := NewVerifier(Visito, Secret{Value: secretA})
	if err != nil {
		t.Fatal(err)
	}
	var e VisitoEvent
	h := header("X-Visito-Signature", sig, "X-Visito-Event-Id", "evt_01")
	if _, err := verifyInto(v, h, visito, now, &e); err != nil || e.EventID != "evt_01" || e.TenantID != "ten_1" || e.SchemaVersion != "1.0" {
		t.Fatalf("%v %+v", err, e)
	}
	if _, err := verifyInto(v, h, visito, now+301, &e); !errors.Is(err, ErrStale) {
		t.Fatalf("stale: %v", err)
	}
	if _, err := verifyInto(v, h, visito[1:], now, &e); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("tampered: %v", err)
	}
}

// verifyInto is ReceiveInto at a fixed clock.
func verifyInto(v *Verifier, h http.Header, b string, clock int64, dst any) (*Verified, error) {
	v.now = func() time.Time { return at(clock) }
	return v.ReceiveInto(h, []byte(b), dst)
}

func TestNewVerifierRefusesMisconfiguration(t *testing.T) {
	if _, err := NewVerifier(MwV1); err == nil {
		t.Fatal("no secrets accepted")
	}
	if _, err := NewVerifier(MwV1, Secret{}); err == nil {
		t.Fatal("empty secret accepted")
	}
	if _, err := NewVerifier(StandardWebhooks, Secret{Value: "whsec_!!!!"}); err == nil {
		t.Fatal("non-base64 secret accepted for standard-webhooks")
	}
	if _, err := NewVerifier("mw-v2", Secret{Value: secretA}); err == nil {
		t.Fatal("unknown profile accepted")
	}
	s := Secret{KeyID: "whk_1", Value: secretA}
	for _, printed := range []string{s.String(), s.GoString()} {
		if strings.Contains(printed, secretA[6:]) {
			t.Fatalf("secret printed: %s", printed)
		}
	}
}
