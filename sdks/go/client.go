package motor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxErrorBody bounds how much of an error answer is read: Motor's error
// bodies are a few hundred bytes, anything longer is not Motor's.
const maxErrorBody = 64 << 10

// Client calls one Motor's API with one API key. It is safe for
// concurrent use; make one and share it.
type Client struct {
	base      *url.URL
	token     string
	http      *http.Client
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests through h (timeouts,
// proxies, TLS). The default has no overall timeout, because a stream is
// one long request: bound plain calls with their context instead.
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) { c.http = h }
}

// WithUserAgent replaces the User-Agent header the client sends.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

// NewClient returns a client of the Motor at baseURL (such as
// "http://127.0.0.1:8080") that authenticates with token, an API key's
// token as `motor admin key create` printed it.
func NewClient(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("motor: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("motor: base URL %q is not http or https", baseURL)
	}
	if token == "" {
		return nil, errors.New("motor: the API token is empty")
	}
	c := &Client{base: u, token: token, http: &http.Client{}, userAgent: "motor-sdk-go/0.1"}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// call is one request: the path is joined to the base URL, body (when not
// nil) is sent as JSON, and a 2xx answer is decoded into out (when not
// nil). Any other answer is returned as an *APIError.
type call struct {
	method  string
	path    string
	query   url.Values
	headers map[string]string
	body    any
	out     any
}

// endpoint is the base URL, path (already escaped, see pathID) and query.
func (c *Client) endpoint(path string, query url.Values) string {
	u := c.base.String() + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return u
}

func (c *Client) newRequest(ctx context.Context, method, path string, query url.Values, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint(path, query), body)
	if err != nil {
		return nil, fmt.Errorf("motor: %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "application/json")
	return req, nil
}

// do sends one call and returns the answer's status.
func (c *Client) do(ctx context.Context, k call) (int, error) {
	var body io.Reader
	if k.body != nil {
		raw, err := json.Marshal(k.body)
		if err != nil {
			return 0, fmt.Errorf("motor: encoding the request: %w", err)
		}
		body = bytes.NewReader(raw)
	}
	req, err := c.newRequest(ctx, k.method, k.path, k.query, body)
	if err != nil {
		return 0, err
	}
	if k.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for name, value := range k.headers {
		req.Header.Set(name, value)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("motor: %s %s: %w", k.method, k.path, err)
	}
	defer res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return res.StatusCode, readError(res)
	}
	if k.out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxErrorBody))
		return res.StatusCode, nil
	}
	if err := json.NewDecoder(res.Body).Decode(k.out); err != nil {
		return res.StatusCode, fmt.Errorf("motor: %s %s: decoding the answer: %w", k.method, k.path, err)
	}
	return res.StatusCode, nil
}

// readError turns a non-2xx answer into an *APIError (or, for a 410 with
// `primer_cursor`, a *CursorExpiredError).
func readError(res *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	var parsed cursorExpiredBody
	apiErr := &APIError{Status: res.StatusCode, RetryAfter: res.Header.Get("Retry-After")}
	if json.Unmarshal(raw, &parsed) == nil && parsed.Error != nil {
		apiErr.Code = parsed.Error.Code
		apiErr.Message = parsed.Error.Message
		if parsed.Error.Field != nil {
			apiErr.Field = *parsed.Error.Field
		}
	} else {
		// Not Motor's error shape (a proxy's page, say): keep a short
		// excerpt so the caller can tell what answered.
		apiErr.Message = strings.TrimSpace(string(raw))
		if len(apiErr.Message) > 200 {
			apiErr.Message = apiErr.Message[:200]
		}
	}
	if res.StatusCode == http.StatusGone && parsed.FirstCursor != nil {
		return &CursorExpiredError{APIError: apiErr, FirstCursor: *parsed.FirstCursor}
	}
	return apiErr
}

// errorBody is every error answer's body.
type errorBody struct {
	Error *errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Field   *string `json:"campo"`
}

// cursorExpiredBody is the stream's 410, an error body with the first
// resumable cursor.
type cursorExpiredBody struct {
	errorBody
	FirstCursor *int64 `json:"primer_cursor"`
}

// pathID escapes one id for a path segment.
func pathID(id string) string {
	return url.PathEscape(id)
}
