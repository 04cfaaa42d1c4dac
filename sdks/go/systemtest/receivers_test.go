package systemtest

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	motor "github.com/motor-whatsapp/motor/sdks/go"
	"github.com/motor-whatsapp/motor/sdks/go/receiver"
)

// signedReceiver is a real HTTP server that keeps every request as it
// arrived and answers through the SDK's Verifier.Handler with whatever
// verifier the test holds at the moment.
type signedReceiver struct {
	server   *httptest.Server
	verifier atomic.Pointer[receiver.Verifier]
	mu       sync.Mutex
	raw      []captured
	hooks    []*receiver.Webhook
}

func newSignedReceiver(t *testing.T) *signedReceiver {
	r := &signedReceiver{}
	r.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.raw = append(r.raw, captured{header: req.Header.Clone(), body: body})
		r.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(body))
		r.verifier.Load().Handler(func(w http.ResponseWriter, _ *http.Request, hook *receiver.Webhook) {
			r.mu.Lock()
			r.hooks = append(r.hooks, hook)
			r.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		}).ServeHTTP(w, req)
	}))
	t.Cleanup(r.server.Close)
	return r
}

// verified is the hook the handler accepted for eventID, if any.
func (r *signedReceiver) verified(eventID string) *receiver.Webhook {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.hooks {
		if h.Envelope != nil && h.Envelope.EventID == eventID {
			return h
		}
	}
	return nil
}

// request is the raw request that carried eventID.
func (r *signedReceiver) request(t *testing.T, eventID string) captured {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.raw {
		if strings.Contains(string(c.body), eventID) {
			return c
		}
	}
	t.Fatalf("no request carried %s", eventID)
	return captured{}
}

func verifier(t *testing.T, profile receiver.Profile, secrets ...receiver.Secret) *receiver.Verifier {
	v, err := receiver.NewVerifier(profile, secrets...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// signatureHeader is the header that carries a profile's signatures, and
// how many signatures it holds.
func signatureCount(profile receiver.Profile, h http.Header) (string, int) {
	switch profile {
	case receiver.MwV1:
		return receiver.HeaderMwSignature, len(strings.Split(h.Get(receiver.HeaderMwSignature), ","))
	case receiver.TV1:
		return receiver.HeaderMwSignature, strings.Count(h.Get(receiver.HeaderMwSignature), "v1=")
	default:
		return receiver.HeaderWebhookSig, len(strings.Fields(h.Get(receiver.HeaderWebhookSig)))
	}
}

// TestSignatureInterop: the SDK verifies real deliveries of every profile
// before and across a rotation, and refuses tampered, stale and
// repeated-header copies of them.
func TestSignatureInterop(t *testing.T) {
	for _, profile := range []receiver.Profile{receiver.MwV1, receiver.TV1, receiver.StandardWebhooks} {
		profile := profile
		t.Run(string(profile), func(t *testing.T) {
			t.Parallel()
			c, instance := client(t), newInstance(t)
			rx := newSignedReceiver(t)
			created := subscribe(t, rx.server.URL+"/"+string(profile), instance, string(profile))
			old := receiver.Secret{KeyID: created.Secret.KeyID, Value: created.Secret.Value}
			rx.verifier.Store(verifier(t, profile, old))

			e1 := appendOne(t, instance, "message.sent", map[string]string{"texto": "hola"})
			waitFor(t, "event 1 verified", func() bool { return rx.verified(e1.EventID) != nil })
			hook := rx.verified(e1.EventID)
			if hook.Envelope.Seq != 1 || string(hook.Envelope.Data) != `{"texto":"hola"}` || hook.Verified.Profile != profile {
				t.Fatalf("event 1: %+v %+v", hook.Envelope, hook.Verified)
			}
			if profile != receiver.TV1 && hook.Verified.DeliveryID != rx.request(t, e1.EventID).header.Get("X-MW-Delivery-Id") {
				t.Fatalf("delivery id %q", hook.Verified.DeliveryID)
			}

			// Rotate: the receiver moves to the new secret alone, while
			// Motor signs with both for the rotation window.
			rotated, err := c.RotateSecret(ctx(t), created.Subscription.ID)
			if err != nil {
				t.Fatal(err)
			}
			fresh := receiver.Secret{KeyID: rotated.Secret.KeyID, Value: rotated.Secret.Value}
			rx.verifier.Store(verifier(t, profile, fresh))
			e2 := appendOne(t, instance, "message.sent", map[string]string{"texto": "adiós"})
			waitFor(t, "event 2 verified", func() bool { return rx.verified(e2.EventID) != nil })
			req := rx.request(t, e2.EventID)
			if name, n := signatureCount(profile, req.header); n != 2 {
				t.Fatalf("%s holds %d signatures during the rotation", name, n)
			}
			for _, secrets := range [][]receiver.Secret{{old}, {fresh}, {fresh, old}} {
				env, got, err := verifier(t, profile, secrets...).Receive(req.header, req.body)
				if err != nil {
					t.Fatalf("with %v: %v", secrets, err)
				}
				if env.EventID != e2.EventID || env.Seq != 2 || env.InstanceID != instance {
					t.Fatalf("envelope %+v", env)
				}
				if profile == receiver.MwV1 && got.KeyID != secrets[0].KeyID {
					t.Fatalf("key id %q, want %q", got.KeyID, secrets[0].KeyID)
				}
			}
			if profile == receiver.MwV1 && req.header.Get("X-MW-Key-Id") != fresh.KeyID+","+old.KeyID {
				t.Fatalf("X-MW-Key-Id %q: newest first", req.header.Get("X-MW-Key-Id"))
			}

			v := verifier(t, profile, fresh)
			// Tampered: one byte of the body changed.
			tampered := bytes.Replace(req.body, []byte("adi"), []byte("ADI"), 1)
			if _, err := v.Verify(req.header, tampered); !errors.Is(err, receiver.ErrBadSignature) {
				t.Fatalf("tampered: %v", err)
			}
			if status := serve(v, req.header, tampered); status != http.StatusUnauthorized {
				t.Fatalf("tampered answered %d", status)
			}
			// Another secret.
			other := receiver.Secret{Value: "whsec_" + strings.Repeat("ab", 32)}
			if _, err := verifier(t, profile, other).Verify(req.header, req.body); !errors.Is(err, receiver.ErrBadSignature) {
				t.Fatalf("other secret: %v", err)
			}
			// Stale: the same request more than 300 s after or before its
			// signed timestamp; at 300 s it still verifies.
			genuine, err := v.Verify(req.header, req.body)
			if err != nil {
				t.Fatal(err)
			}
			for _, shift := range []int64{-300, 300} {
				if _, err := v.VerifyAt(req.header, req.body, time.Unix(genuine.Timestamp+shift, 0)); err != nil {
					t.Fatalf("%d s away: %v", shift, err)
				}
			}
			for _, shift := range []int64{-301, 301} {
				_, err := v.VerifyAt(req.header, req.body, time.Unix(genuine.Timestamp+shift, 0))
				var verr *receiver.VerifyError
				if !errors.As(err, &verr) || verr.Kind != receiver.KindStale || verr.Status() != http.StatusRequestTimeout {
					t.Fatalf("%d s away: %v", shift, err)
				}
			}
			// Repeated signature header.
			name, _ := signatureCount(profile, req.header)
			repeated := req.header.Clone()
			repeated.Add(name, repeated.Get(name))
			if _, err := v.Verify(repeated, req.body); !errors.Is(err, receiver.ErrRepeatedHeader) {
				t.Fatalf("repeated %s: %v", name, err)
			}
			if status := serve(v, repeated, req.body); status != http.StatusUnauthorized {
				t.Fatalf("repeated header answered %d", status)
			}
			if status := serve(v, req.header, req.body); status != http.StatusNoContent {
				t.Fatalf("the genuine request answered %d", status)
			}

			// Motor saw 2xx for both: the deliveries are entregada.
			waitFor(t, "both deliveries entregada", func() bool {
				list, err := c.ListDeliveries(ctx(t), motor.ListDeliveriesOptions{SubscriptionID: created.Subscription.ID, States: []string{motor.DeliveryDelivered}})
				return err == nil && len(list.Deliveries) == 2
			})
		})
	}
}

// serve runs one request through Verifier.Handler and returns its status.
func serve(v *receiver.Verifier, h http.Header, body []byte) int {
	req := httptest.NewRequest("POST", "/hook", bytes.NewReader(body))
	req.Header = h.Clone()
	rec := httptest.NewRecorder()
	v.Handler(func(w http.ResponseWriter, _ *http.Request, _ *receiver.Webhook) {
		w.WriteHeader(http.StatusNoContent)
	}).ServeHTTP(rec, req)
	return rec.Code
}
