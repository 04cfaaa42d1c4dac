package systemtest

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	motor "github.com/motor-whatsapp/motor/sdks/go"
)

func TestSubscriptionContract(t *testing.T) {
	c, instance := client(t), newInstance(t)
	plain := subscribe(t, "http://127.0.0.1:9/plain", instance, "").Subscription
	if plain.Contract != "" {
		t.Fatalf("a motor subscription's answer leaves contrato out: %+v", plain)
	}
	created, err := c.CreateSubscription(ctx(t), motor.CreateSubscription{
		Name: "go visito", URL: "http://127.0.0.1:9/visito", Instances: []string{instance}, Contract: motor.ContractVisito,
	})
	if err != nil {
		t.Fatal(err)
	}
	sub := created.Subscription
	t.Cleanup(func() { _ = c.DeleteSubscription(ctx(t), sub.ID) })
	if sub.Contract != motor.ContractVisito {
		t.Fatalf("%+v", sub)
	}
	asixto := motor.ContractAsixto
	changed, err := c.UpdateSubscription(ctx(t), sub.ID, motor.UpdateSubscription{Contract: &asixto})
	if err != nil || changed.Contract != motor.ContractAsixto {
		t.Fatalf("%v %+v", err, changed)
	}
	back := motor.ContractMotor
	changed, err = c.UpdateSubscription(ctx(t), sub.ID, motor.UpdateSubscription{Contract: &back})
	if err != nil || changed.Contract != "" {
		t.Fatalf("back to motor: %v %+v", err, changed)
	}
	unknown := "otro"
	_, err = c.UpdateSubscription(ctx(t), sub.ID, motor.UpdateSubscription{Contract: &unknown})
	if e := apiError(t, err); e.Status != http.StatusUnprocessableEntity && e.Status != http.StatusBadRequest {
		t.Fatalf("an unknown contract: %v", err)
	}
}

// A receiver that accepts everything fails the check: it takes a wrong
// signature, a stale timestamp and an altered body.
func TestCheckSubscriptionGradesTheReceiver(t *testing.T) {
	c, instance := client(t), newInstance(t)
	rx := newSink(t, nil)
	sub := subscribe(t, rx.server.URL+"/check", instance, motor.SigningMwV1).Subscription
	report, err := c.CheckSubscription(ctx(t), sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if report.URL != sub.URL || report.Profile != motor.SigningMwV1 || report.Passed || report.Timings.Samples == 0 {
		t.Fatalf("%+v", report)
	}
	verdicts := map[string]string{}
	for _, row := range report.Checks {
		verdicts[row.Name] = row.Verdict
		if row.Verdict == "falla" && row.Reason == nil {
			t.Errorf("%s failed without a reason", row.Name)
		}
	}
	if verdicts["entrega_valida"] != "ok" || verdicts["firma_incorrecta"] != "falla" || verdicts["cuerpo_alterado"] != "falla" {
		t.Fatalf("verdicts: %v", verdicts)
	}
	if len(rx.requests()) < len(report.Checks)-1 {
		t.Fatalf("the receiver saw %d requests for %d checks", len(rx.requests()), len(report.Checks))
	}
}

func TestStreamTokenOpensOneInstancesStream(t *testing.T) {
	c, instance := client(t), newInstance(t)
	token, err := c.CreateStreamToken(ctx(t), instance, 30)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token.Token, "mst_") || token.InstanceID != instance ||
		token.ExpiresAt.After(time.Now().Add(31*time.Second)) || !token.ExpiresAt.After(time.Now()) {
		t.Fatalf("%+v", token)
	}
	open := func(instanceID string) int {
		req, err := http.NewRequestWithContext(ctx(t), "GET",
			env.url+"/v1/instances/"+instanceID+"/events/stream?token="+url.QueryEscape(token.Token), nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode == http.StatusOK && !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("content type %q", res.Header.Get("Content-Type"))
		}
		return res.StatusCode
	}
	if got := open(instance); got != http.StatusOK {
		t.Fatalf("its own instance's stream: %d", got)
	}
	if got := open(newInstance(t)); got != http.StatusForbidden {
		t.Fatalf("another instance's stream: %d", got)
	}
	_, err = c.CreateStreamToken(ctx(t), instance, 61)
	if e := apiError(t, err); e.Status != http.StatusUnprocessableEntity || e.Field != "body.segundos" {
		t.Fatalf("61 seconds: %v", err)
	}
}
