// The errors every call may throw: the API's own (`{"error": {"code",
// "message", "campo"?}}`, kept as typed fields), the stream's 410, and a
// network failure. Webhook verification has its own, in webhooks/errors.ts.

/** Base class of every error this SDK throws for a call to Motor. */
export class MotorError extends Error {
  override name = 'MotorError';
}

/**
 * Motor answered with an error status. `code` is the API's stable code
 * (`validacion`, `conflicto`, `sin_permiso`, …; `http_<status>` when the
 * answer had no error body), `campo` the field at fault when Motor names
 * one in `campo` (`body.url`, `query.limit`, `header.Idempotency-Key`).
 */
export class MotorApiError extends MotorError {
  override name = 'MotorApiError';
  readonly status: number;
  readonly code: string;
  /** The body's `campo`: the field at fault, when Motor names one. */
  readonly field: string | undefined;
  /** Seconds to wait, from `Retry-After` (429 and 503 carry it). */
  readonly retryAfter: number | undefined;
  /** The parsed body as Motor sent it (or its text when not JSON). */
  readonly body: unknown;

  constructor(status: number, code: string, message: string, options: { field?: string | null; retryAfter?: number; body?: unknown } = {}) {
    super(`${status} ${code}: ${message}${options.field ? ` (${options.field})` : ''}`);
    this.status = status;
    this.code = code;
    this.field = options.field ?? undefined;
    this.retryAfter = options.retryAfter;
    this.body = options.body;
  }
}

/**
 * 410 `cursor_vencido`: the stream cursor is older than the resumption
 * window (`streams.retencion_horas`), so events after it can no longer be
 * streamed. Nothing restarts by itself: the events between `cursor` and
 * `firstCursor` are beyond the stream's reach (read them from the ledger
 * API if they still matter), then follow again with
 * `{ after: firstCursor }`.
 */
export class CursorExpiredError extends MotorApiError {
  override name = 'CursorExpiredError';
  /** The cursor that was refused. */
  readonly cursor: number | undefined;
  /** The body's `primer_cursor`: the first cursor that can be resumed. */
  readonly firstCursor: number;

  constructor(message: string, cursor: number | undefined, firstCursor: number, body: unknown) {
    super(410, 'cursor_vencido', message, { body });
    this.cursor = cursor;
    this.firstCursor = firstCursor;
  }
}

/** Motor could not be reached, or the answer was cut or timed out. */
export class MotorConnectionError extends MotorError {
  override name = 'MotorConnectionError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
