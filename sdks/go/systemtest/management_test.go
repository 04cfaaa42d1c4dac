package systemtest

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	motor "github.com/motor-whatsapp/motor/sdks/go"
)

func TestSubscriptionLifecycle(t *testing.T) {
	c, instance := client(t), newInstance(t)
	rx := newSink(t, nil)
	ordered := false
	created, err := c.CreateSubscription(ctx(t), motor.CreateSubscription{
		Name: "go lifecycle", URL: rx.server.URL + "/hooks", Instances: []string{instance},
		Types: []string{"message.sent"}, Ordered: &ordered, Signing: motor.SigningTV1,
	})
	if err != nil {
		t.Fatal(err)
	}
	sub := created.Subscription
	if sub.State != motor.SubscriptionActive || sub.Ordered || sub.Signing != motor.SigningTV1 || sub.ClientID != env.appID ||
		len(sub.Keys) != 1 || sub.Keys[0].KeyID != created.Secret.KeyID || !strings.HasPrefix(created.Secret.Value, "whsec_") {
		t.Fatalf("created: %+v %+v", sub, created.Secret)
	}

	list, err := c.ListSubscriptions(ctx(t))
	if err != nil || !containsSubscription(list, sub.ID) {
		t.Fatalf("list: %v %d", err, len(list))
	}
	got, err := c.GetSubscription(ctx(t), sub.ID)
	if err != nil || got.Name != "go lifecycle" || got.Version != sub.Version {
		t.Fatalf("get: %v %+v", err, got)
	}

	name, paused := "go renamed", motor.SubscriptionPaused
	changed, err := c.UpdateSubscription(ctx(t), sub.ID, motor.UpdateSubscription{Name: &name, State: &paused, ExpectedVersion: &sub.Version})
	if err != nil || changed.Name != name || changed.State != paused || changed.Version <= sub.Version {
		t.Fatalf("patch: %v %+v", err, changed)
	}
	// The version the first change was based on is stale now.
	other := "go stale"
	_, err = c.UpdateSubscription(ctx(t), sub.ID, motor.UpdateSubscription{Name: &other, ExpectedVersion: &sub.Version})
	if e := apiError(t, err); e.Status != http.StatusConflict || e.Code != motor.CodeConflict {
		t.Fatalf("stale version: %+v", e)
	}
	limit := int64(50)
	withLimit, err := c.UpdateSubscription(ctx(t), sub.ID, motor.UpdateSubscription{MaxPerSecond: &limit})
	if err != nil || withLimit.MaxPerSecond == nil || *withLimit.MaxPerSecond != 50 {
		t.Fatalf("limit: %v %+v", err, withLimit)
	}
	active := motor.SubscriptionActive
	cleared, err := c.UpdateSubscription(ctx(t), sub.ID, motor.UpdateSubscription{RemoveMaxPerSecond: true, State: &active})
	if err != nil || cleared.MaxPerSecond != nil || cleared.State != active || cleared.Name != name {
		t.Fatalf("clear limit: %v %+v", err, cleared)
	}
	bad := "ftp://127.0.0.1/x"
	_, err = c.UpdateSubscription(ctx(t), sub.ID, motor.UpdateSubscription{URL: &bad})
	if e := apiError(t, err); e.Code != motor.CodeValidation || e.Field != "body.url" {
		t.Fatalf("bad url: %+v", e)
	}

	test, err := c.TestSubscription(ctx(t), sub.ID)
	if err != nil || !test.OK || test.Status == nil || *test.Status != http.StatusNoContent || test.Error != nil {
		t.Fatalf("test: %v %+v", err, test)
	}
	waitFor(t, "the webhook.test request", func() bool { return len(rx.requests()) == 1 })
	var e motor.Envelope
	if err := json.Unmarshal(rx.requests()[0].body, &e); err != nil || e.Type != "webhook.test" {
		t.Fatalf("test body: %v %+v", err, e)
	}

	rotated, err := c.RotateSecret(ctx(t), sub.ID)
	if err != nil || rotated.Secret.Value == created.Secret.Value || len(rotated.Subscription.Keys) != 2 {
		t.Fatalf("rotate: %v %+v", err, rotated)
	}
	for _, k := range rotated.Subscription.Keys {
		if (k.KeyID == created.Secret.KeyID) != (k.ExpiresAt != nil) {
			t.Fatalf("only the old key expires: %+v", rotated.Subscription.Keys)
		}
	}

	if err := c.DeleteSubscription(ctx(t), sub.ID); err != nil {
		t.Fatal(err)
	}
	list, err = c.ListSubscriptions(ctx(t))
	if err != nil || containsSubscription(list, sub.ID) {
		t.Fatalf("deleted yet listed by default: %v", err)
	}
	list, err = c.ListSubscriptions(ctx(t), motor.SubscriptionDeleted)
	if err != nil || !containsSubscription(list, sub.ID) {
		t.Fatalf("not listed as eliminada: %v", err)
	}
	_, err = c.GetSubscription(ctx(t), "00000000-0000-4000-8000-000000000000")
	if e := apiError(t, err); e.Status != http.StatusNotFound || e.Code != motor.CodeNotFound {
		t.Fatalf("unknown subscription: %+v", e)
	}
	_, err = c.CreateSubscription(ctx(t), motor.CreateSubscription{Name: "", URL: rx.server.URL})
	if e := apiError(t, err); e.Code != motor.CodeValidation || e.Field != "body.nombre" {
		t.Fatalf("empty name: %+v", e)
	}
}

func containsSubscription(list []motor.Subscription, id string) bool {
	for _, s := range list {
		if s.ID == id {
			return true
		}
	}
	return false
}

func TestDeliveriesRetryAndReplay(t *testing.T) {
	c, instance := client(t), newInstance(t)
	// Refuses with 422 (Motor fails such a delivery at once) until told.
	var accept atomic.Bool
	rx := newSink(t, func(captured) int {
		if accept.Load() {
			return http.StatusNoContent
		}
		return http.StatusUnprocessableEntity
	})
	sub := subscribe(t, rx.server.URL+"/d", instance, motor.SigningMwV1).Subscription
	first := appendOne(t, instance, "order.paid", map[string]int{"n": 1})

	var failed motor.Delivery
	waitFor(t, "the delivery to fail", func() bool {
		list, err := c.ListDeliveries(ctx(t), motor.ListDeliveriesOptions{States: []string{motor.DeliveryFailed}, SubscriptionID: sub.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Deliveries) == 1 {
			failed = list.Deliveries[0]
		}
		return len(list.Deliveries) == 1
	})
	if failed.EventID != first.EventID || failed.Seq != 1 || failed.InstanceID != instance || failed.LastError == nil || *failed.LastError != "http_422" {
		t.Fatalf("failed delivery: %+v", failed)
	}
	detail, err := c.GetDelivery(ctx(t), failed.ID)
	if err != nil || len(detail.AttemptDetails) != 1 || detail.AttemptDetails[0].Status == nil || *detail.AttemptDetails[0].Status != 422 {
		t.Fatalf("detail: %v %+v", err, detail)
	}
	if got := rx.withEvent(first.EventID); len(got) != 1 || got[0].header.Get("X-MW-Delivery-Id") != failed.ID {
		t.Fatalf("the receiver saw %d requests", len(got))
	}

	accept.Store(true)
	again, err := c.RetryDelivery(ctx(t), failed.ID, "go-retry-1", "the receiver is fixed")
	if err != nil || again.ReplayOf == nil || *again.ReplayOf != failed.ID || again.ID == failed.ID || again.EventID != first.EventID {
		t.Fatalf("retry: %v %+v", err, again)
	}
	same, err := c.RetryDelivery(ctx(t), failed.ID, "go-retry-1", "the receiver is fixed")
	if err != nil || same.ID != again.ID {
		t.Fatalf("the same key made another retry: %v %+v", err, same)
	}
	waitFor(t, "the retry to be delivered", func() bool {
		d, err := c.GetDelivery(ctx(t), again.ID)
		return err == nil && d.State == motor.DeliveryDelivered
	})
	_, err = c.RetryDelivery(ctx(t), failed.ID, "", "")
	if e := apiError(t, err); e.Code != motor.CodeValidation || e.Field != "header.Idempotency-Key" {
		t.Fatalf("retry without a key: %+v", e)
	}

	appendOne(t, instance, "order.paid", map[string]int{"n": 2})
	waitFor(t, "event 2", func() bool { return len(rx.requests()) == 3 })
	replay, err := c.Replay(ctx(t), sub.ID, "go-replay-1", motor.ReplayRequest{InstanceID: instance, FromSeq: 1, ToSeq: 2, Reason: "go sdk test"})
	if err != nil || replay.Deliveries != 2 || replay.SubscriptionID != sub.ID {
		t.Fatalf("replay: %v %+v", err, replay)
	}
	repeat, err := c.Replay(ctx(t), sub.ID, "go-replay-1", motor.ReplayRequest{InstanceID: instance, FromSeq: 1, ToSeq: 2, Reason: "go sdk test"})
	if err != nil || repeat.ID != replay.ID {
		t.Fatalf("the same key made another replay: %v %+v", err, repeat)
	}
	_, err = c.Replay(ctx(t), sub.ID, "go-replay-1", motor.ReplayRequest{EventIDs: []string{first.EventID}, Reason: "other"})
	if e := apiError(t, err); e.Status != http.StatusConflict || e.Code != motor.CodeConflict {
		t.Fatalf("same key, other replay: %+v", e)
	}
	_, err = c.Replay(ctx(t), sub.ID, "go-replay-2", motor.ReplayRequest{InstanceID: instance, FromSeq: 1, ToSeq: 2})
	if e := apiError(t, err); e.Code != motor.CodeValidation || e.Field != "body.motivo" {
		t.Fatalf("replay without motivo: %+v", e)
	}
	byID, err := c.Replay(ctx(t), sub.ID, "go-replay-3", motor.ReplayRequest{EventIDs: []string{first.EventID}, Reason: "go sdk test, by id"})
	if err != nil || byID.Deliveries != 1 || byID.ID == replay.ID {
		t.Fatalf("replay by event id: %v %+v", err, byID)
	}
	// The replays send the same events under new delivery ids.
	waitFor(t, "the replayed events", func() bool { return len(rx.withEvent(first.EventID)) == 4 })
	ids := map[string]bool{}
	for _, r := range rx.withEvent(first.EventID) {
		ids[r.header.Get("X-MW-Delivery-Id")] = true
	}
	if len(ids) != 4 {
		t.Fatalf("delivery ids of event 1: %v", ids)
	}
	waitFor(t, "the replay to finish", func() bool {
		status, err := c.GetReplay(ctx(t), sub.ID, replay.ID)
		if err != nil {
			t.Fatal(err)
		}
		return status.Done
	})
	status, err := c.GetReplay(ctx(t), sub.ID, replay.ID)
	if err != nil || status.ID != replay.ID || status.SubscriptionID != sub.ID || status.Deliveries != 2 ||
		status.Delivered != 2 || status.Failed != 0 || status.Pending != 0 {
		t.Fatalf("the replay's progress: %v %+v", err, status)
	}
	_, err = c.GetReplay(ctx(t), sub.ID, first.EventID)
	if e := apiError(t, err); e.Status != http.StatusNotFound {
		t.Fatalf("an unknown replay: %v", err)
	}
	list, err := c.ListDeliveries(ctx(t), motor.ListDeliveriesOptions{InstanceID: instance, PerPage: 2})
	if err != nil || len(list.Deliveries) != 2 || !list.HasMore || list.PerPage != 2 || list.Page != 1 {
		t.Fatalf("paged list: %v %+v", err, list)
	}
}
