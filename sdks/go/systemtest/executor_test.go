package systemtest

import (
	"net/http"
	"testing"
	"time"

	motor "github.com/motor-whatsapp/motor/sdks/go"
)

// An executor's loop, as a user of the seed product writes it: a producer
// sends a message and submits an operation; the executor polls, claims
// each one, and reports it (enviado, completado); the producer sees the
// outcome with GetCommand.
func TestExecutorPollsClaimsAndReports(t *testing.T) {
	c, instance := client(t), newInstance(t)
	msg := motor.Message{Chat: "5491122334455@s.whatsapp.net", Content: map[string]string{"texto": "hola"}}
	sent, err := c.SendMessage(ctx(t), instance, "go-exec-1", msg)
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.SubmitCommand(ctx(t), instance, "", motor.Operation{Kind: "grupos", Parameters: map[string]string{"operacion": "unirse"}})
	if err != nil {
		t.Fatal(err)
	}

	pending, err := c.PollCommands(ctx(t), instance, motor.PollOptions{Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 2 || pending[0].CommandID != sent.ID || pending[0].Kind != "mensaje" || pending[0].InstanceID != instance ||
		pending[1].CommandID != op.ID || pending[1].Kind != "grupos" || pending[1].NextTry != nil {
		t.Fatalf("the poll, in acceptance order: %+v", pending)
	}
	one, err := c.PollCommands(ctx(t), instance, motor.PollOptions{Limit: 1})
	if err != nil || len(one) != 1 || one[0].CommandID != sent.ID {
		t.Fatalf("limit 1: %v %+v", err, one)
	}

	claimed, err := c.ClaimCommand(ctx(t), sent.ID)
	if err != nil {
		t.Fatal(err)
	}
	cmd := claimed.Command
	if claimed.Lease == "" || !claimed.LeaseUntil.After(time.Now()) || cmd.ID != sent.ID ||
		cmd.Status != motor.CommandExecuting || cmd.Claims != 1 || cmd.LeaseUntil == nil ||
		cmd.Chat == nil || *cmd.Chat != msg.Chat || string(cmd.Content) != `{"texto":"hola"}` {
		t.Fatalf("the claim: %+v", claimed)
	}
	_, err = c.ClaimCommand(ctx(t), sent.ID)
	if e := apiError(t, err); e.Status != http.StatusConflict {
		t.Fatalf("a second claim: %v", err)
	}
	acceptedAt := time.Now().UTC().Truncate(time.Second)
	// A field the status does not take is refused, naming it.
	_, err = c.ReportCommand(ctx(t), sent.ID, motor.Report{
		Lease: claimed.Lease, Status: motor.CommandSent,
		ProviderMessageID: "wamid.go-1", Chat: msg.Chat, AcceptedAt: acceptedAt, NextTry: time.Now().Add(time.Minute),
	})
	if e := apiError(t, err); e.Status != http.StatusUnprocessableEntity || e.Field != "body.next_try" {
		t.Fatalf("next_try with enviado: %v", err)
	}
	reported, err := c.ReportCommand(ctx(t), sent.ID, motor.Report{
		Lease: claimed.Lease, Status: motor.CommandSent,
		ProviderMessageID: "wamid.go-1", Chat: msg.Chat, AcceptedAt: acceptedAt,
	})
	if err != nil {
		t.Fatal(err)
	}
	if reported.Status != motor.CommandSent || reported.ProviderMessageID == nil || *reported.ProviderMessageID != "wamid.go-1" {
		t.Fatalf("the report's answer: %+v", reported)
	}
	got, err := c.GetCommand(ctx(t), sent.ID)
	if err != nil || got.Status != motor.CommandSent || got.ProviderMessageID == nil || *got.ProviderMessageID != "wamid.go-1" ||
		got.AcceptedAt == nil || !got.AcceptedAt.Equal(acceptedAt) {
		t.Fatalf("the producer's view: %v %+v", err, got)
	}
	// The lease is spent: a second report is a conflict.
	_, err = c.ReportCommand(ctx(t), sent.ID, motor.Report{
		Lease: claimed.Lease, Status: motor.CommandSent,
		ProviderMessageID: "wamid.go-2", Chat: msg.Chat, AcceptedAt: acceptedAt,
	})
	if e := apiError(t, err); e.Status != http.StatusConflict {
		t.Fatalf("a report after the outcome: %v", err)
	}

	claimedOp, err := c.ClaimCommand(ctx(t), op.ID)
	if err != nil || string(claimedOp.Command.Parameters) != `{"operacion":"unirse"}` {
		t.Fatalf("%v %+v", err, claimedOp)
	}
	if _, err := c.ReportCommand(ctx(t), op.ID, motor.Report{Lease: claimedOp.Lease, Status: motor.CommandCompleted}); err != nil {
		t.Fatal(err)
	}
	got, err = c.GetCommand(ctx(t), op.ID)
	if err != nil || got.Status != motor.CommandCompleted {
		t.Fatalf("%v %+v", err, got)
	}
	left, err := c.PollCommands(ctx(t), instance, motor.PollOptions{})
	if err != nil || len(left) != 0 {
		t.Fatalf("nothing left to claim: %v %+v", err, left)
	}
	// enviado appends message.sent (completado appends nothing).
	page, err := c.ListEvents(ctx(t), instance, motor.ListEventsOptions{Types: []string{"message.sent"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 1 || page.Events[0].CommandID == nil || *page.Events[0].CommandID != sent.ID {
		t.Fatalf("the send's event: %+v", page.Events)
	}
}

func TestExecutorReportsTheInstancesState(t *testing.T) {
	c, instance := client(t), newInstance(t)
	first, err := c.ReportState(ctx(t), instance, motor.StateReport{State: "conectada", Reason: "go sdk"})
	if err != nil {
		t.Fatal(err)
	}
	if first.InstanceID != instance || first.State != "conectada" || first.Seq == nil {
		t.Fatalf("%+v", first)
	}
	same, err := c.ReportState(ctx(t), instance, motor.StateReport{State: "conectada"})
	if err != nil || same.Seq != nil || same.PreviousState == nil || *same.PreviousState != "conectada" {
		t.Fatalf("the same state again appends nothing: %v %+v", err, same)
	}
	relinked, err := c.ReportState(ctx(t), instance, motor.StateReport{State: "conectada", Relinked: true})
	if err != nil || relinked.Generation != first.Generation+1 || relinked.Seq == nil {
		t.Fatalf("a relink bumps the generation: %v %+v", err, relinked)
	}
	_, err = c.ReportState(ctx(t), instance, motor.StateReport{State: "dormida"})
	if e := apiError(t, err); e.Status != http.StatusUnprocessableEntity || e.Field != "body.estado" {
		t.Fatalf("an unknown state: %v", err)
	}
}

// A long provider call keeps its lease with heartbeats; once the command
// is reported the lease is gone and a heartbeat is a 409.
func TestExecutorHeartbeatExtendsTheLeaseUntilItIsLost(t *testing.T) {
	c, instance := client(t), newInstance(t)
	msg := motor.Message{Chat: "5491122334455@s.whatsapp.net", Content: map[string]string{"texto": "largo"}}
	sent, err := c.SendMessage(ctx(t), instance, "go-exec-heartbeat", msg)
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := c.ClaimCommand(ctx(t), sent.ID)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	beat, err := c.HeartbeatCommand(ctx(t), sent.ID, claimed.Lease)
	if err != nil {
		t.Fatal(err)
	}
	if beat.Status != motor.CommandExecuting || beat.LeaseUntil == nil || !beat.LeaseUntil.After(claimed.LeaseUntil) {
		t.Fatalf("the lease is extended: claim %v, heartbeat %+v", claimed.LeaseUntil, beat)
	}
	_, err = c.HeartbeatCommand(ctx(t), sent.ID, "00000000-0000-0000-0000-000000000000")
	if e := apiError(t, err); e.Status != http.StatusConflict {
		t.Fatalf("another lease: %v", err)
	}
	_, err = c.HeartbeatCommand(ctx(t), sent.ID, "")
	if e := apiError(t, err); e.Status != http.StatusUnprocessableEntity || e.Field != "body.reserva" {
		t.Fatalf("no lease: %v", err)
	}
	if _, err := c.ReportCommand(ctx(t), sent.ID, motor.Report{Lease: claimed.Lease, Status: motor.CommandAmbiguous}); err != nil {
		t.Fatal(err)
	}
	_, err = c.HeartbeatCommand(ctx(t), sent.ID, claimed.Lease)
	if e := apiError(t, err); e.Status != http.StatusConflict {
		t.Fatalf("a heartbeat after the report: %v", err)
	}
}
