package motor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Reconnect pacing of a stream, and how long it may stay silent: Motor
// sends `: ping` every 15 s, so 45 s of nothing means a dead connection.
const (
	streamFirstBackoff = 100 * time.Millisecond
	streamMaxBackoff   = 5 * time.Second
	streamIdleTimeout  = 45 * time.Second
)

// StreamOptions say where a stream starts and what it carries.
type StreamOptions struct {
	// After resumes after this cursor (the seq of the last event
	// received); 0 starts at the first resumable event. nil: only events
	// committed after the stream opens.
	After *int64
	// Types: up to 20 event types; empty = all.
	Types []string
}

// Stream follows an instance's events over Server-Sent Events, in seq
// order, and resumes by itself after a cut connection, a server shutdown
// or a slow-client cut (`: fin …`), from the last cursor it saw, with no
// gap and no duplicate. Use it like bufio.Scanner:
//
//	s := client.Stream(ctx, instanceID, motor.StreamOptions{After: &saved})
//	defer s.Close()
//	for s.Next() {
//		handle(s.Event())
//	}
//	var expired *motor.CursorExpiredError
//	if errors.As(s.Err(), &expired) {
//		// The cursor is past the resumption window: decide, then
//		// s.RestartAt(expired.FirstCursor) and keep calling Next.
//	}
//
// Next ends (false) only when ctx ends or on an answer that retrying
// cannot fix: 410 `cursor_vencido` (a *CursorExpiredError), 401, 403,
// 404 or 422 (an *APIError). A Stream is not safe for concurrent use.
type Stream struct {
	ctx      context.Context
	client   *Client
	instance string
	types    []string

	cursor    int64
	hasCursor bool

	body   io.ReadCloser
	lines  *bufio.Reader
	idle   *time.Timer
	event  Envelope
	err    error
	closed bool
}

// Stream opens nothing yet: the first Next connects. ctx bounds the whole
// stream; cancel it (or call Close) to stop.
func (c *Client) Stream(ctx context.Context, instanceID string, opts StreamOptions) *Stream {
	s := &Stream{ctx: ctx, client: c, instance: instanceID, types: opts.Types}
	if opts.After != nil {
		s.cursor, s.hasCursor = *opts.After, true
	}
	return s
}

// Event is the event the last successful Next read.
func (s *Stream) Event() Envelope { return s.event }

// Cursor is the seq to resume after, and whether there is one yet (the
// stream's opening message gives one before any event arrives). Save it
// with what the events changed, and pass it back as StreamOptions.After.
func (s *Stream) Cursor() (int64, bool) { return s.cursor, s.hasCursor }

// Err is why Next returned false (nil after Close).
func (s *Stream) Err() error { return s.err }

// RestartAt clears an error such as a *CursorExpiredError and makes the
// next Next reconnect after cursor: the explicit restart after a 410.
func (s *Stream) RestartAt(cursor int64) {
	s.disconnect()
	s.err = nil
	s.cursor, s.hasCursor = cursor, true
}

// Close ends the stream and its connection. Like Next, call it from the
// stream's goroutine; to stop a Next that is waiting, cancel ctx.
func (s *Stream) Close() error {
	s.closed = true
	s.disconnect()
	return nil
}

// Next waits for the next event; see Stream.
func (s *Stream) Next() bool {
	backoff := streamFirstBackoff
	for {
		if s.err != nil || s.closed {
			return false
		}
		if err := s.ctx.Err(); err != nil {
			s.disconnect()
			s.err = err
			return false
		}
		if s.body == nil {
			retry, err := s.connect()
			if err != nil && !retry {
				s.err = err
				return false
			}
			if err != nil {
				if !s.sleep(backoff, err) {
					return false
				}
				backoff = nextBackoff(backoff)
				continue
			}
		}
		ok, err := s.readEvent()
		if ok {
			return true
		}
		if s.err != nil {
			// Not Motor's framing: reconnecting would read it again.
			s.disconnect()
			return false
		}
		// The connection ended (the server's `: fin`, a cut, a dead
		// peer): resume after the last cursor.
		s.disconnect()
		if !s.sleep(backoff, err) {
			return false
		}
		backoff = nextBackoff(backoff)
	}
}

func nextBackoff(d time.Duration) time.Duration {
	if d *= 2; d > streamMaxBackoff {
		return streamMaxBackoff
	}
	return d
}

// sleep waits d (or the server's Retry-After, when cause carries one and
// it is longer), false when ctx ended meanwhile.
func (s *Stream) sleep(d time.Duration, cause error) bool {
	var apiErr *APIError
	if errors.As(cause, &apiErr) {
		if secs, err := strconv.Atoi(apiErr.RetryAfter); err == nil && time.Duration(secs)*time.Second > d {
			d = time.Duration(secs) * time.Second
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		s.err = s.ctx.Err()
		return false
	}
}

// connect opens the stream after the cursor. retry tells whether a
// failure may pass by itself (network, 429, 5xx).
func (s *Stream) connect() (retry bool, err error) {
	q := url.Values{}
	if len(s.types) > 0 {
		q.Set("types", strings.Join(s.types, ","))
	}
	path := "/v1/instances/" + pathID(s.instance) + "/events/stream"
	req, err := s.client.newRequest(s.ctx, "GET", path, q, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if s.hasCursor {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(s.cursor, 10))
	}
	res, err := s.client.http.Do(req)
	if err != nil {
		return true, fmt.Errorf("motor: stream: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		err := readError(res)
		res.Body.Close()
		code := res.StatusCode
		return code == http.StatusTooManyRequests || code >= 500, err
	}
	s.body = res.Body
	s.lines = bufio.NewReaderSize(res.Body, 64<<10)
	s.idle = time.AfterFunc(streamIdleTimeout, func() { res.Body.Close() })
	return false, nil
}

func (s *Stream) disconnect() {
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	if s.body != nil {
		s.body.Close()
		s.body, s.lines = nil, nil
	}
}

// readEvent reads messages until one carries an event. An `id:` without
// data (the stream's opening) moves the cursor only. A read error ends the
// connection; a message that is not Motor's sets s.err.
func (s *Stream) readEvent() (bool, error) {
	var id, data string
	var hasID, hasData bool
	for {
		line, err := s.lines.ReadString('\n')
		if err != nil {
			return false, err
		}
		s.idle.Reset(streamIdleTimeout)
		line = strings.TrimRight(line, "\r\n")
		if line != "" {
			field, value := line, ""
			if i := strings.IndexByte(line, ':'); i >= 0 {
				field, value = line[:i], strings.TrimPrefix(line[i+1:], " ")
			}
			switch field {
			case "id":
				id, hasID = value, true
			case "data":
				if hasData {
					data += "\n"
				}
				data += value
				hasData = true
			}
			// Comments (`: ping`, `: fin …`) and `event:` need nothing:
			// the type is in the envelope, the end is the connection's.
			continue
		}
		// A blank line ends a message.
		if hasID {
			seq, err := strconv.ParseInt(id, 10, 64)
			if err != nil {
				s.err = fmt.Errorf("motor: stream: id %q is not a seq", id)
				return false, nil
			}
			if hasData {
				var e Envelope
				if err := json.Unmarshal([]byte(data), &e); err != nil {
					s.err = fmt.Errorf("motor: stream: event %d: %w", seq, err)
					return false, nil
				}
				s.event = e
			}
			s.cursor, s.hasCursor = seq, true
			if hasData {
				return true, nil
			}
		}
		id, data, hasID, hasData = "", "", false, false
	}
}
