package motor

import (
	"errors"
	"fmt"
)

// The `code` values of Motor's error bodies.
const (
	CodeInvalidJSON     = "json_invalido"    // 400
	CodeUnauthenticated = "no_autenticado"   // 401
	CodeForbidden       = "sin_permiso"      // 403
	CodeNotFound        = "no_encontrado"    // 404
	CodeConflict        = "conflicto"        // 409
	CodeCursorExpired   = "cursor_vencido"   // 410
	CodeTooLarge        = "demasiado_grande" // 413
	CodeValidation      = "validacion"       // 422
	CodeUnavailable     = "no_disponible"    // 503
)

// APIError is an answer of Motor's API that is not a 2xx: its status and
// the body's `{"error": {"code", "message", "campo"}}`.
type APIError struct {
	// Status is the HTTP status (401, 403, 404, 409, 413, 422, 503, …).
	Status int
	// Code is Motor's stable error code (the Code* constants); empty when
	// the answer was not Motor's error shape.
	Code string
	// Message is for people; do not match on it.
	Message string
	// Field names the field at fault (the body's `campo`), such as
	// "body.url" or "header.Idempotency-Key"; empty when none.
	Field string
	// RetryAfter is the Retry-After header of a 429 or 503, as sent.
	RetryAfter string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("motor: %d %s", e.Status, e.Code)
	if e.Field != "" {
		msg += " (" + e.Field + ")"
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// CursorExpiredError is the stream's 410 `cursor_vencido`: the cursor is
// older than the resumption window (`streams.retencion_horas`). Motor
// cannot hand out the events between the cursor and FirstCursor from the
// stream; the caller decides whether to restart at FirstCursor (and
// accept the gap, or read it from the ledger API first) or to give up.
type CursorExpiredError struct {
	*APIError
	// FirstCursor is `primer_cursor`: the first cursor that can be resumed.
	FirstCursor int64
}

func (e *CursorExpiredError) Error() string {
	return fmt.Sprintf("%s; primer_cursor %d", e.APIError.Error(), e.FirstCursor)
}

// Unwrap lets errors.As find the *APIError inside.
func (e *CursorExpiredError) Unwrap() error { return e.APIError }

// ErrorCode is the Motor error code of err (an *APIError anywhere in its
// chain), or "" when err is not an answer of the API.
func ErrorCode(err error) string {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code
	}
	return ""
}
