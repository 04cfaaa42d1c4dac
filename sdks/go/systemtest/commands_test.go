package systemtest

import (
	"net/http"
	"testing"
	"time"

	motor "github.com/motor-whatsapp/motor/sdks/go"
)

func TestSendMessageOncePerKeyWithCommandAccepted(t *testing.T) {
	c, instance := client(t), newInstance(t)
	msg := motor.Message{Chat: "5491122334455@s.whatsapp.net", Content: map[string]string{"texto": "hola"}}
	sent, err := c.SendMessage(ctx(t), instance, "go-pedido-1", msg)
	if err != nil {
		t.Fatal(err)
	}
	if sent.Kind != "mensaje" || sent.Status != motor.CommandQueued || sent.InstanceID != instance ||
		sent.Chat == nil || *sent.Chat != msg.Chat || string(sent.Content) != `{"texto":"hola"}` ||
		sent.NextTry == nil || sent.Generation != 1 {
		t.Fatalf("%+v", sent)
	}
	again, err := c.SendMessage(ctx(t), instance, "go-pedido-1", msg)
	if err != nil || again.ID != sent.ID {
		t.Fatalf("a repeat: %v %+v", err, again)
	}
	_, err = c.SendMessage(ctx(t), instance, "go-pedido-1", motor.Message{Chat: msg.Chat, Content: map[string]string{"texto": "otro"}})
	if e := apiError(t, err); e.Status != http.StatusConflict || e.Code != motor.CodeConflict {
		t.Fatalf("same key, other content: %v", err)
	}
	got, err := c.GetCommand(ctx(t), sent.ID)
	if err != nil || got.ID != sent.ID || got.Status != motor.CommandQueued {
		t.Fatalf("%v %+v", err, got)
	}
	page, err := c.ListEvents(ctx(t), instance, motor.ListEventsOptions{Types: []string{"command.accepted"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 1 || page.Events[0].CommandID == nil || *page.Events[0].CommandID != sent.ID {
		t.Fatalf("%+v", page.Events)
	}
}

func TestSubmitListAndCancelCommands(t *testing.T) {
	c, instance := client(t), newInstance(t)
	op, err := c.SubmitCommand(ctx(t), instance, "", motor.Operation{
		Kind: "grupos", Parameters: map[string]string{"operacion": "unirse"},
		CommandOptions: motor.CommandOptions{CorrelationID: "c-1", ExpiresAt: time.Now().Add(time.Hour), ExpectedGeneration: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if op.Kind != "grupos" || op.Status != motor.CommandAccepted || string(op.Parameters) != `{"operacion":"unirse"}` ||
		op.CorrelationID == nil || *op.CorrelationID != "c-1" || op.ExpiresAt == nil || op.ExpectedGeneration == nil {
		t.Fatalf("%+v", op)
	}
	control, err := c.SubmitCommand(ctx(t), instance, "go-pausar", motor.Operation{Kind: "pausar"})
	if err != nil || string(control.Parameters) != `{}` {
		t.Fatalf("%v %+v", err, control)
	}
	cancelled, err := c.CancelCommand(ctx(t), control.ID)
	if err != nil || cancelled.Status != motor.CommandCancelled {
		t.Fatalf("%v %+v", err, cancelled)
	}
	_, err = c.CancelCommand(ctx(t), control.ID)
	if e := apiError(t, err); e.Status != http.StatusConflict {
		t.Fatalf("a second cancel: %v", err)
	}
	newest, err := c.ListCommands(ctx(t), instance, motor.ListCommandsOptions{PerPage: 1})
	if err != nil || len(newest.Commands) != 1 || newest.Commands[0].ID != control.ID || !newest.HasMore {
		t.Fatalf("%v %+v", err, newest)
	}
	open, err := c.ListCommands(ctx(t), instance, motor.ListCommandsOptions{Statuses: []string{motor.CommandAccepted, motor.CommandQueued}})
	if err != nil || len(open.Commands) != 1 || open.Commands[0].ID != op.ID || open.HasMore {
		t.Fatalf("%v %+v", err, open)
	}
}

func TestCommandRefusalsNameTheirField(t *testing.T) {
	c, instance := client(t), newInstance(t)
	for _, tc := range []struct {
		call  func() error
		field string
	}{
		{func() error {
			_, err := c.SubmitCommand(ctx(t), instance, "", motor.Operation{Kind: "enviar"})
			return err
		}, "body.tipo"},
		{func() error {
			_, err := c.SendMessage(ctx(t), instance, "k", motor.Message{Chat: "", Content: map[string]any{}})
			return err
		}, "body.chat"},
		{func() error {
			_, err := c.SendMessage(ctx(t), instance, "", motor.Message{Chat: "549", Content: map[string]any{}})
			return err
		}, "header.Idempotency-Key"},
		{func() error {
			_, err := c.SendMessage(ctx(t), instance, "k", motor.Message{Chat: "549", Content: "hola"})
			return err
		}, "body.contenido"},
		{func() error {
			_, err := c.SendMessage(ctx(t), instance, "k", motor.Message{Chat: "549", Content: map[string]any{},
				CommandOptions: motor.CommandOptions{ExpiresAt: time.Now().Add(-time.Hour)}})
			return err
		}, "body.expires_at"},
	} {
		e := apiError(t, tc.call())
		if e.Status != http.StatusUnprocessableEntity || e.Code != motor.CodeValidation || e.Field != tc.field {
			t.Errorf("want 422 on %s: %+v", tc.field, e)
		}
	}
	_, err := c.GetCommand(ctx(t), "01a23bc7-0000-7000-8000-000000000000")
	if e := apiError(t, err); e.Status != http.StatusNotFound {
		t.Fatalf("unknown: %v", err)
	}
	reader := clientWith(t, newKey(t, "commands:read"))
	_, err = reader.SubmitCommand(ctx(t), instance, "", motor.Operation{Kind: "pausar"})
	if e := apiError(t, err); e.Status != http.StatusForbidden || e.Code != motor.CodeForbidden {
		t.Fatalf("read-only key: %v", err)
	}
}
