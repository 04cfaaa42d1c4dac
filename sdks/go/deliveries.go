package motor

import (
	"context"
	"net/url"
	"strconv"
	"strings"
)

// ListDeliveriesOptions filter the deliveries list.
type ListDeliveriesOptions struct {
	// States: any of DeliveryPending, DeliveryDelivered, DeliveryFailed.
	States         []string
	SubscriptionID string
	InstanceID     string
	// Page counts from 1 (0 = the first); PerPage is 1–200 (0 = 50).
	Page    int
	PerPage int
}

func (o ListDeliveriesOptions) query() url.Values {
	q := url.Values{}
	if len(o.States) > 0 {
		q.Set("estado", strings.Join(o.States, ","))
	}
	if o.SubscriptionID != "" {
		q.Set("suscripcion_id", o.SubscriptionID)
	}
	if o.InstanceID != "" {
		q.Set("instancia_id", o.InstanceID)
	}
	if o.Page > 0 {
		q.Set("pagina", strconv.Itoa(o.Page))
	}
	if o.PerPage > 0 {
		q.Set("por_pagina", strconv.Itoa(o.PerPage))
	}
	return q
}

// ListDeliveries lists deliveries, newest first. Needs scope events:read.
func (c *Client) ListDeliveries(ctx context.Context, opts ListDeliveriesOptions) (*DeliveryList, error) {
	var out DeliveryList
	if _, err := c.do(ctx, call{method: "GET", path: "/v1/deliveries", query: opts.query(), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetDelivery reads one delivery with its attempts. Needs scope
// events:read.
func (c *Client) GetDelivery(ctx context.Context, id string) (*DeliveryDetail, error) {
	var out DeliveryDetail
	if _, err := c.do(ctx, call{method: "GET", path: "/v1/deliveries/" + pathID(id), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// RetryDelivery sends a `fallida` delivery again as a new delivery (whose
// ReplayOf names the original). idempotencyKey is required (1–200
// characters); reason may be empty (Motor's default `reintento manual`).
func (c *Client) RetryDelivery(ctx context.Context, id, idempotencyKey, reason string) (*Delivery, error) {
	var out Delivery
	_, err := c.do(ctx, call{
		method: "POST", path: "/v1/deliveries/" + pathID(id) + "/retry",
		headers: map[string]string{"Idempotency-Key": idempotencyKey},
		body:    retryRequest{Reason: reason}, out: &out,
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Replay sends events again to one subscription: new delivery ids, the
// same envelopes, in a lane of the replay's own. idempotencyKey is
// required (1–200 characters): the same key answers the first replay,
// with another request it is a 409. Needs scope deliveries:replay.
func (c *Client) Replay(ctx context.Context, subscriptionID, idempotencyKey string, req ReplayRequest) (*Replay, error) {
	var out Replay
	_, err := c.do(ctx, call{
		method: "POST", path: "/v1/subscriptions/" + pathID(subscriptionID) + "/replays",
		headers: map[string]string{"Idempotency-Key": idempotencyKey},
		body:    req, out: &out,
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}
