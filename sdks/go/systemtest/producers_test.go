package systemtest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	motor "github.com/motor-whatsapp/motor/sdks/go"
)

func TestAppendOneAndABatch(t *testing.T) {
	c, instance := client(t), newInstance(t)
	one, err := c.Append(ctx(t), instance, motor.NewEvent{Type: "message.sent", Data: map[string]string{"texto": "hola"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if one.Seq != 1 || one.InstanceID != instance || one.Type != "message.sent" || one.Origin != motor.OriginLive || one.SchemaVersion != 1 {
		t.Fatalf("%+v", one)
	}
	if string(one.Data) != `{"texto":"hola"}` {
		t.Fatalf("data %s", one.Data)
	}
	batch, err := c.AppendBatch(ctx(t), instance, []motor.NewEvent{
		{Type: "a", Data: 1}, {Type: "b", Data: json.RawMessage(`[true]`), Origin: motor.OriginHistory}, {Type: "c", Data: "x"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(batch) != 3 {
		t.Fatalf("%d envelopes", len(batch))
	}
	for i, e := range batch {
		if e.Seq != int64(i+2) || e.Type != []string{"a", "b", "c"}[i] {
			t.Fatalf("envelope %d: %+v", i, e)
		}
	}
	if batch[1].Origin != motor.OriginHistory || string(batch[1].Data) != `[true]` {
		t.Fatalf("%+v", batch[1])
	}
}

func TestIdempotencyKeyAndSourceID(t *testing.T) {
	c, instance := client(t), newInstance(t)
	key := &motor.AppendOptions{IdempotencyKey: "go-order-42"}
	event := motor.NewEvent{Type: "order.paid", Data: map[string]int{"total": 42}}
	first, err := c.Append(ctx(t), instance, event, key)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Append(ctx(t), instance, event, key)
	if err != nil {
		t.Fatal(err)
	}
	if again.EventID != first.EventID || again.Seq != first.Seq {
		t.Fatalf("a repeat stored another event: %+v vs %+v", again, first)
	}
	_, err = c.Append(ctx(t), instance, motor.NewEvent{Type: "order.paid", Data: map[string]int{"total": 43}}, key)
	if e := apiError(t, err); e.Status != http.StatusConflict || e.Code != motor.CodeConflict {
		t.Fatalf("same key, other body: %v", err)
	}
	// A source id already stored returns the stored envelope.
	withSource := motor.NewEvent{Type: "message.received", Data: 1, SourceID: "wamid.go.1"}
	stored, err := c.Append(ctx(t), instance, withSource, nil)
	if err != nil {
		t.Fatal(err)
	}
	repeat, err := c.Append(ctx(t), instance, withSource, nil)
	if err != nil {
		t.Fatal(err)
	}
	if repeat.EventID != stored.EventID || repeat.Seq != stored.Seq {
		t.Fatalf("source id stored twice: %+v vs %+v", repeat, stored)
	}
	page, err := c.ListEvents(ctx(t), instance, motor.ListEventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 2 {
		t.Fatalf("the ledger holds %d events, want 2", len(page.Events))
	}
}

func TestErrorsAreTypedWithCodeAndField(t *testing.T) {
	c, instance := client(t), newInstance(t)

	_, err := c.Append(ctx(t), instance, motor.NewEvent{Type: "", Data: 1}, nil)
	e := apiError(t, err)
	if e.Status != http.StatusUnprocessableEntity || e.Code != motor.CodeValidation || e.Field != "body.type" || e.Message == "" {
		t.Fatalf("empty type: %+v", e)
	}
	_, err = c.AppendBatch(ctx(t), instance, []motor.NewEvent{{Type: "ok", Data: 1}, {Type: "no data"}}, nil)
	if e := apiError(t, err); e.Code != motor.CodeValidation || e.Field != "body[1].data" {
		t.Fatalf("batch without data: %+v", e)
	}
	_, err = c.Append(ctx(t), instance, motor.NewEvent{Type: "x", Data: 1}, &motor.AppendOptions{IdempotencyKey: strings.Repeat("k", 201)})
	if e := apiError(t, err); e.Status/100 != 4 || e.Field == "" {
		t.Fatalf("long idempotency key: %+v", e)
	}
	_, err = c.Append(ctx(t), "00000000-0000-4000-8000-000000000000", motor.NewEvent{Type: "x", Data: 1}, nil)
	if e := apiError(t, err); e.Status != http.StatusNotFound || e.Code != motor.CodeNotFound {
		t.Fatalf("unknown instance: %+v", e)
	}
	_, err = clientWith(t, "mk_not_a_key").Append(ctx(t), instance, motor.NewEvent{Type: "x", Data: 1}, nil)
	if e := apiError(t, err); e.Status != http.StatusUnauthorized || e.Code != motor.CodeUnauthenticated {
		t.Fatalf("bad token: %+v", e)
	}
	reader := clientWith(t, newKey(t, "events:read"))
	_, err = reader.Append(ctx(t), instance, motor.NewEvent{Type: "x", Data: 1}, nil)
	if e := apiError(t, err); e.Status != http.StatusForbidden || e.Code != motor.CodeForbidden || motor.ErrorCode(err) != motor.CodeForbidden {
		t.Fatalf("read-only key appends: %+v", e)
	}
	if _, err := reader.ListSubscriptions(ctx(t)); motor.ErrorCode(err) != motor.CodeForbidden {
		t.Fatalf("read-only key lists subscriptions: %v", err)
	}
	if _, err := c.AppendBatch(ctx(t), instance, nil, nil); err == nil {
		t.Fatal("an empty batch was sent")
	}
}
