package motor

import (
	"context"
	"net/url"
	"strings"
)

// The subscription calls need scope subscriptions:manage.

// subscriptionList is the list's answer.
type subscriptionList struct {
	Subscriptions []Subscription `json:"suscripciones"`
}

// CreateSubscription creates a subscription and returns it with its
// signing secret, shown this once.
func (c *Client) CreateSubscription(ctx context.Context, req CreateSubscription) (*SubscriptionWithSecret, error) {
	var out SubscriptionWithSecret
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/subscriptions", body: req, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSubscriptions lists the app's subscriptions in the given states
// (the Subscription* constants); none = activa, pausada and suspendida.
func (c *Client) ListSubscriptions(ctx context.Context, states ...string) ([]Subscription, error) {
	var q url.Values
	if len(states) > 0 {
		q = url.Values{"estado": {strings.Join(states, ",")}}
	}
	var out subscriptionList
	if _, err := c.do(ctx, call{method: "GET", path: "/v1/subscriptions", query: q, out: &out}); err != nil {
		return nil, err
	}
	return out.Subscriptions, nil
}

// GetSubscription reads one subscription.
func (c *Client) GetSubscription(ctx context.Context, id string) (*Subscription, error) {
	var out Subscription
	if _, err := c.do(ctx, call{method: "GET", path: "/v1/subscriptions/" + pathID(id), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateSubscription changes the fields set in change. With
// change.ExpectedVersion set, a subscription changed meanwhile is left as
// it is and the error is a 409 `conflicto`.
func (c *Client) UpdateSubscription(ctx context.Context, id string, change UpdateSubscription) (*Subscription, error) {
	var out Subscription
	if _, err := c.do(ctx, call{method: "PATCH", path: "/v1/subscriptions/" + pathID(id), body: change, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteSubscription eliminates a subscription: it creates no more
// deliveries and sends none of its pending ones.
func (c *Client) DeleteSubscription(ctx context.Context, id string) error {
	_, err := c.do(ctx, call{method: "DELETE", path: "/v1/subscriptions/" + pathID(id)})
	return err
}

// RotateSecret makes a new signing secret. The old one keeps signing
// beside it for the rotation window (webhooks.ventana_rotacion_minutos):
// give the receiver the new one, then drop the old.
func (c *Client) RotateSecret(ctx context.Context, id string) (*SubscriptionWithSecret, error) {
	var out SubscriptionWithSecret
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/subscriptions/" + pathID(id) + "/rotate", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// TestSubscription sends a signed `webhook.test` (not in the ledger) to
// the subscription's destination and reports how it went.
func (c *Client) TestSubscription(ctx context.Context, id string) (*TestResult, error) {
	var out TestResult
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/subscriptions/" + pathID(id) + "/test", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
