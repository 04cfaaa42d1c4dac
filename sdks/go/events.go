package motor

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// AppendOptions are the optional headers of an append.
type AppendOptions struct {
	// IdempotencyKey (1–200 characters): a repeat with the same key and the
	// same body answers what the first did, with another body it is a 409.
	IdempotencyKey string
}

func (o *AppendOptions) headers() map[string]string {
	if o == nil || o.IdempotencyKey == "" {
		return nil
	}
	return map[string]string{"Idempotency-Key": o.IdempotencyKey}
}

// Append stores one event in the instance's ledger and returns its
// envelope (with its seq). An event whose SourceID the instance already
// has returns the stored envelope instead. Needs scope events:write.
func (c *Client) Append(ctx context.Context, instanceID string, event NewEvent, opts *AppendOptions) (*Envelope, error) {
	var out Envelope
	_, err := c.do(ctx, call{
		method: "POST", path: "/v1/instances/" + pathID(instanceID) + "/events",
		headers: opts.headers(), body: event, out: &out,
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// AppendBatch stores 1–500 events in one transaction: all or none. The
// envelopes come back in the order of events.
func (c *Client) AppendBatch(ctx context.Context, instanceID string, events []NewEvent, opts *AppendOptions) ([]Envelope, error) {
	if len(events) == 0 {
		// An empty array is refused by Motor too; say so without a round trip.
		return nil, errors.New("motor: AppendBatch needs at least one event")
	}
	var out []Envelope
	_, err := c.do(ctx, call{
		method: "POST", path: "/v1/instances/" + pathID(instanceID) + "/events",
		headers: opts.headers(), body: events, out: &out,
	})
	return out, err
}

// ListEventsOptions select a page of the ledger.
type ListEventsOptions struct {
	// AfterSeq: the events after this seq (0 = from the first).
	AfterSeq int64
	// Limit: 1–500; 0 means Motor's default (100).
	Limit int
	// Types: up to 20 event types; empty = all.
	Types []string
}

func (o ListEventsOptions) query() url.Values {
	q := url.Values{}
	q.Set("after_seq", strconv.FormatInt(o.AfterSeq, 10))
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if len(o.Types) > 0 {
		q.Set("types", strings.Join(o.Types, ","))
	}
	return q
}

// ListEvents reads one page of the instance's ledger, in seq order. Needs
// scope events:read.
func (c *Client) ListEvents(ctx context.Context, instanceID string, opts ListEventsOptions) (*LedgerPage, error) {
	var out LedgerPage
	_, err := c.do(ctx, call{
		method: "GET", path: "/v1/instances/" + pathID(instanceID) + "/events",
		query: opts.query(), out: &out,
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// WalkEvents pages the ledger from opts.AfterSeq to its end (after_seq ->
// next_after_seq until has_more is false) and calls fn with every event in
// seq order. It returns the cursor to resume from next time: the
// next_after_seq of the last page read, also when fn or a page fails
// (then it is the seq of the last event fn accepted).
func (c *Client) WalkEvents(ctx context.Context, instanceID string, opts ListEventsOptions, fn func(Envelope) error) (int64, error) {
	cursor := opts.AfterSeq
	for {
		opts.AfterSeq = cursor
		page, err := c.ListEvents(ctx, instanceID, opts)
		if err != nil {
			return cursor, err
		}
		for _, e := range page.Events {
			if err := fn(e); err != nil {
				return cursor, err
			}
			cursor = e.Seq
		}
		cursor = page.NextAfterSeq
		if !page.HasMore {
			return cursor, nil
		}
	}
}
