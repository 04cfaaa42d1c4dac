// Generated from schemas/openapi.json by scripts/generate-types.mjs: do not edit.
// `npm run generate` rewrites it; the test suite fails while it is out of date.

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["get_healthz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["get_metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Ready when Postgres answers. */
        get: operations["get_readyz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/alerts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Alerts, newest first (at most 500). */
        get: operations["list_alerts"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/alerts/{id}/close": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Closes an alert. */
        post: operations["close_alert"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/apps": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["list_apps"];
        put?: never;
        post: operations["create_app"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/apps/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["get_app"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch: operations["update_app"];
        trace?: never;
    };
    "/v1/admin/apps/{id}/event-types": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The app's closed catalogue of event types (`null`: open). */
        get: operations["get_event_types"];
        /** Sets the app's closed catalogue; `{"tipos": null}` opens it again. */
        put: operations["set_event_types"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/apps/{id}/instances": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["list_instances"];
        put?: never;
        post: operations["create_instance"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/apps/{id}/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["list_keys"];
        put?: never;
        post: operations["create_key"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/apps/{id}/keys/{key_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        delete: operations["revoke_key"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/apps/{id}/subscriptions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Lists the app's subscriptions. */
        get: operations["list_app_subscriptions"];
        put?: never;
        /** Creates a subscription for the app; the secret is shown once. */
        post: operations["create_app_subscription"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/apps/{id}/subscriptions/{sid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Reads one of the app's subscriptions. */
        get: operations["get_app_subscription"];
        put?: never;
        post?: never;
        /** Deletes one of the app's subscriptions (state `eliminada`). */
        delete: operations["delete_app_subscription"];
        options?: never;
        head?: never;
        /** Changes, pauses or reactivates one of the app's subscriptions. */
        patch: operations["update_app_subscription"];
        trace?: never;
    };
    "/v1/admin/apps/{id}/subscriptions/{sid}/replays": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * The same replay, asked for by the operator for one of the app's
         *     subscriptions.
         */
        post: operations["request_app_replay"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/apps/{id}/subscriptions/{sid}/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Rotates the secret of one of the app's subscriptions. */
        post: operations["rotate_app_secret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/apps/{id}/subscriptions/{sid}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Sends a signed `webhook.test` for one of the app's subscriptions. */
        post: operations["send_app_test"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Every app's deliveries, newest first. */
        get: operations["list_all_deliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/deliveries/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One delivery of any app, with every attempt. */
        get: operations["get_any_delivery"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/dlq": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The DLQ by subscription and error code. */
        get: operations["get_dlq"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/dlq/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Sends failed deliveries again, as replays (new delivery ids, the same
         *     events), with the motivo audited.
         */
        post: operations["retry_dlq"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/reconciliacion": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** What is stuck now. */
        get: operations["get_report"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/settings": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The settings in force, defaults included. */
        get: operations["get_settings"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Changes any of the settings; every key is checked against its range
         *     before anything is stored.
         */
        patch: operations["update_settings"];
        trace?: never;
    };
    "/v1/admin/subscriptions/{id}/pause": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Pauses a subscription: its deliveries wait, `pendiente`, until it is
         *     reactivated.
         */
        post: operations["pause_subscription"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/subscriptions/{id}/reactivate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Reactivates a paused or suspended subscription: a suspended one's
         *     destination must pass the rules again (422 on `body.url` otherwise); its
         *     alerts close and what accumulated goes out, in lane order.
         */
        post: operations["reactivate_subscription"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/commands/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One command, as it is now. */
        get: operations["get_command"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/commands/{id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancels a command while `aceptado` or `en_cola` (appending
         *     `command.cancelled`); once an executor took it, or it ended, 409: it
         *     may have had an effect outside.
         */
        post: operations["cancel_command"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Lists the app's deliveries, newest first. */
        get: operations["list_deliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/deliveries/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One delivery with `intentos_detalle`, every attempt in order. */
        get: operations["get_delivery"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/deliveries/{id}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Sends a `fallida` delivery again as a new delivery of the same event, in
         *     its own lane; `replay_of` is the retried delivery.
         */
        post: operations["retry_delivery"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/executor/commands": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Long-polls an instance's claimable commands.
         * @description Answers the instance's commands that an executor may claim now
         *     (`aceptado`, or `en_cola` with `next_try` due; not expired), oldest
         *     first, as the `{prefix}.commands` records describe them. With none,
         *     waits up to `wait` seconds for one (woken when one is committed or
         *     falls due), then answers an empty list. Answering is not claiming.
         */
        get: operations["poll_commands"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/executor/commands/{id}/claim": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Claims a command: `aceptado`/`en_cola` → `ejecutando` with a lease.
         * @description A compare-and-set: of two claims, or a claim and a cancel, exactly one
         *     wins; the others get a 409. The answer carries the command's full
         *     content and the lease token (`reserva`) its report must present before
         *     `reservado_hasta`. A command whose `expires_at` passed is failed
         *     instead (`comando_vencido`) and one whose `generacion_esperada` is no
         *     longer the instance's generation too (`generacion_cambiada`): 409, and
         *     nobody runs it.
         */
        post: operations["claim_command"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/executor/commands/{id}/heartbeat": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Extends a claimed command's lease (a heartbeat).
         * @description An executor whose provider call takes long sends this before
         *     `reservado_hasta`, with the claim's `reserva`: the lease then ends one
         *     lease length (`MOTOR_EXECUTOR_LEASE_SECS`) from now, never sooner than
         *     before. The status does not change and nothing is appended. 409 once
         *     the lease is lost — another token, or the command is no longer
         *     `ejecutando` (reported, or the sweeper made it `ambiguo` when the
         *     lease ran out): the executor must not report then.
         */
        post: operations["heartbeat_command"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/executor/commands/{id}/report": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Reports a claimed command's outcome under its lease.
         * @description `enviado` appends `message.sent`, `fallido` `command.failed`,
         *     `ambiguo` `command.ambiguous`, in the transaction that records it;
         *     `completado` appends nothing; `en_cola` defers the command to
         *     `next_try` (it is claimable again then). The lease token travels in
         *     the body as `reserva`. 409 when the lease is not the command's
         *     current one or the command is no longer `ejecutando`.
         */
        post: operations["report_command"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/executor/instances/{id}/state": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Reports an instance's connection state.
         * @description A change appends `state.changed` (`estado`, `estado_anterior`,
         *     `revinculada`, `motivo`; `command_id` when a control command caused
         *     it). `revinculada: true` (with `conectada`) bumps the instance's
         *     `generation` in the same transaction: the event is the first of the
         *     new generation, earlier events keep theirs, and commands bound to the
         *     old one (`generacion_esperada`) are refused. The same state again
         *     without a relink appends nothing (`seq` is `null`).
         */
        post: operations["report_state"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/instances/{id}/commands": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Lists an instance's commands, newest first. */
        get: operations["list_commands"];
        put?: never;
        /**
         * Submits any other command (a remote operation or instance control),
         *     `aceptado`; a remote operation appends `command.accepted`, a control
         *     command nothing (its effect shows as `state.changed`).
         */
        post: operations["submit_command"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/instances/{id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Pages through an instance's ledger in `seq` order. */
        get: operations["list_events"];
        put?: never;
        /** Appends one event or a batch of up to 500, in one transaction. */
        post: operations["append_events"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/instances/{id}/events/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Follows an instance's events: Server-Sent Events by default, WebSocket
         *     with an upgrade.
         * @description **Server-Sent Events** (`text/event-stream`): the stream opens with
         *     `: motor stream cursor=N` and `id: N` (no data: it only sets the
         *     client's last event id to the start position). Then one message per
         *     event — `id: <seq>`, `event: <type>`, `data: <envelope>` (the ledger's
         *     bytes, one line) — and a `: ping` comment after 15 s without events.
         *     When the server ends the stream it sends a last comment
         *     `: fin motivo=<lento|apagado|error> cursor=N`: resume with
         *     `Last-Event-ID: N` (or `?desde=N`), on this process or another.
         *     `lento`: the client fell more than the buffer behind the live events.
         *
         *     **WebSocket** (`Upgrade: websocket`): one text frame per envelope, a
         *     ping every 15 s. The server ends with a close frame whose reason is
         *     `motivo=<…> cursor=N` (1001 at shutdown, 1013 for a slow reader, 1011
         *     on error); the client's close is answered.
         *
         *     **Browsers**: `EventSource` and `WebSocket` cannot send an
         *     `Authorization` header; open the stream with `?token=` and a stream
         *     token (`POST /v1/instances/{id}/stream-tokens`, 60 s, this instance
         *     only). Without an `Authorization` header the token is what
         *     authenticates; with one, the header does.
         *
         *     **Cursor**: the `seq` of the last event received. `desde=N` or
         *     `Last-Event-ID: N` (the header wins) resumes with the event after N;
         *     `desde=0` starts at the first event still resumable; neither starts
         *     with events committed after the request. Catch-up from the ledger then
         *     live, with no gap and no duplicate. A cursor whose next event is older
         *     than `streams.retencion_horas` is a 410 with `primer_cursor`.
         */
        get: operations["get_stream"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/instances/{id}/messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Sends a message: stores a `mensaje` command, `en_cola` and due at once,
         *     with its `command.accepted`; answered only once committed.
         */
        post: operations["send_message"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/instances/{id}/stream-tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Issues a token that opens this instance's event stream for up to 60 s,
         *     for a browser (`EventSource`, `WebSocket`) that cannot send an
         *     `Authorization` header: `GET /v1/instances/{id}/events/stream?token=…`.
         *     It reads that one instance's stream and nothing else — every other
         *     route, and other instances' streams, refuse it. It is checked when a
         *     stream opens: a stream already open goes on after it lapses, and a
         *     client that reconnects later asks for a new one. Sealed with the master
         *     key; when a stream opens with it, the issuing key must still be live:
         *     once that key is revoked or expired the token opens nothing (401), and
         *     a stream already open goes on.
         */
        post: operations["create_stream_token"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This document. */
        get: operations["serve_document"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/subscriptions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Lists the app's subscriptions (without secrets), oldest first. */
        get: operations["list_subscriptions"];
        put?: never;
        /** Creates a subscription; the secret is in this answer and never again. */
        post: operations["create_subscription"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/subscriptions/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Reads one subscription (any state, `eliminada` included). */
        get: operations["get_subscription"];
        put?: never;
        post?: never;
        /**
         * Deletes it: state `eliminada`, no new deliveries, pending ones not
         *     sent. The row stays for audit; no event is deleted.
         */
        delete: operations["delete_subscription"];
        options?: never;
        head?: never;
        /**
         * Changes fields, pauses or reactivates. A stale `version_esperada` is a
         *     409.
         */
        patch: operations["update_subscription"];
        trace?: never;
    };
    "/v1/subscriptions/{id}/check": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Grades the subscription's receiver against the contract: a battery of
         *     signed requests (a valid delivery, a retry, a replay, a lower seq, a
         *     stale and a future timestamp, a tampered body, a wrong signature, a
         *     second valid signature, a repeated signature header, a body at the
         *     size cap) and the answer times. The events are never in the ledger
         *     (type `webhook.check`, a fresh instance id) and each run uses new ids.
         *     The answer comes when the battery ends: up to twelve requests, each
         *     within the contract's attempt timeout (`webhooks.timeout_segundos`
         *     unless the contract fixes one). Rendered as the subscription's
         *     deliveries are: its `contrato`'s body, headers and signature.
         * @description Webhook subscriptions only: a broker subscription (`amqp://`,
         *     `nats://`) is a 409, as are a deleted one and one whose host the
         *     allowed destinations no longer admit (nothing is sent). A failing
         *     receiver is a 200 with `aprobado: false`.
         */
        post: operations["check_subscription"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/subscriptions/{id}/replays": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Sends events already in the ledger again: new delivery ids, the same
         *     envelope (event_id, occurred_at), in the replay's own lane, only what
         *     the subscription covers.
         */
        post: operations["request_replay"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/subscriptions/{id}/replays/{replay_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * How far a replay has gone: its deliveries delivered, failed and still
         *     pending. `motor replay` polls it for its progress bar; poll it to
         *     follow a replay from anywhere.
         */
        get: operations["get_replay"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/subscriptions/{id}/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Issues a new secret (shown once). The previous one keeps signing for
         *     `webhooks.ventana_rotacion_minutos`, then expires.
         */
        post: operations["rotate_secret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/subscriptions/{id}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Sends a signed `webhook.test` (not stored in the ledger) and answers how
         *     the receiver took it.
         */
        post: operations["send_test"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        Alert: {
            /** Format: uuid */
            id: string;
            /**
             * Format: uuid
             * @description `null` for an alert about the whole installation (reconciliation
             *     found the outbox behind).
             */
            app_id: string | null;
            suscripcion_id: null | components["schemas"]["SubscriptionId"];
            /**
             * @description What happened: a suspension `motivo` (`rechazo_401`, …), or
             *     `reconciliacion` (work that should be moving is not; closed by the
             *     engine once it moves again).
             */
            motivo: string;
            detalle: string;
            /** Format: date-time */
            abierta_en: string;
            /**
             * Format: date-time
             * @description `null` while the alert is open.
             */
            cerrada_en: string | null;
        };
        AlertList: {
            alerts: components["schemas"]["Alert"][];
        };
        /** @description An API key as listed: never its token. */
        ApiKeyInfo: {
            key_id: string;
            nombre: string;
            scopes: components["schemas"]["Scope"][];
            /** @description Empty: every instance of the app. */
            instancias: string[];
            /** Format: date-time */
            creada_en: string;
            /** Format: date-time */
            revocada_en?: string | null;
            /**
             * Format: date-time
             * @description When it stops working; absent: never.
             */
            vence_en?: string | null;
            /** @description The app's read scopes it holds; absent when none. */
            permisos_lectura?: string[];
        };
        /** @description An app (tenant). */
        App: {
            /** Format: uuid */
            id: string;
            nombre: string;
            /**
             * @description Hosts (any port) or host:port this app may deliver to, on top of
             *     the global list.
             */
            destinos_permitidos: string[];
            /**
             * @description `estandar` or `publica_https` (HTTPS on port 443 to public IPv4
             *     addresses only).
             * @example estandar
             */
            politica_destinos: string;
            contrato?: null | components["schemas"]["Contrato"];
            /** Format: date-time */
            creada_en: string;
        };
        AppList: {
            apps: components["schemas"]["App"][];
        };
        /** @description An ordered lane whose head has not moved. */
        CarrilDetenido: {
            /** Format: uuid */
            suscripcion_id: string;
            /** Format: uuid */
            app_id: string;
            /** Format: uuid */
            instancia_id: string;
            /** @description `live` or the replay's id. */
            carril: string;
            /**
             * Format: uuid
             * @description The head: the lowest open seq of the lane.
             */
            delivery_id: string;
            /** Format: int64 */
            seq: number;
            /** Format: int32 */
            intentos: number;
            ultimo_error?: string | null;
            /**
             * Format: date-time
             * @description Since when this delivery has been the lane's head (as reconciliation
             *     observed it).
             */
            cabeza_desde: string;
        };
        /** @description What the receiver answered. */
        CheckGot: {
            /**
             * Format: int32
             * @description The HTTP status, when it answered.
             */
            status?: number | null;
            /**
             * @description The sanitised transport code (`timeout`, `conexion_rechazada`, …)
             *     when it did not.
             */
            error?: string | null;
        };
        /** @description The graded battery. */
        CheckReport: {
            /** @description The subscription's URL, as checked. */
            url: string;
            /**
             * @description The profile graded: the subscription's `firma` (`mw-v1`, `t-v1`,
             *     `standard-webhooks`) under the `motor` contract, else its
             *     `contrato` (`visito`, `asixto`, `standard-webhooks`).
             */
            perfil: string;
            /** @description `true` when every check passed. */
            aprobado: boolean;
            comprobaciones: components["schemas"]["CheckRow"][];
            tiempos: components["schemas"]["CheckTimings"];
        };
        /** @description One graded check. */
        CheckRow: {
            /**
             * @description `entrega_valida`, `evento_repetido`, `reproduccion`, `seq_menor`,
             *     `timestamp_vencido`, `timestamp_futuro`, `cuerpo_alterado`,
             *     `firma_incorrecta`, `segunda_firma_valida` (not under `visito`,
             *     which signs with one key), `cabecera_repetida`, `cuerpo_grande`,
             *     `tiempos`.
             * @example timestamp_vencido
             */
            nombre: string;
            /**
             * @description What the contract requires: `2xx`, a status, `4xx (no 408/429)`,
             *     `no 2xx` (a refusal under `visito` or `asixto`, whose documents
             *     name no code), or `p99 < N ms`.
             * @example 408
             */
            esperado: string;
            obtenido: components["schemas"]["CheckGot"];
            veredicto: components["schemas"]["CheckVerdict"];
            /** @description Why it failed, in a few words; absent when it passed. */
            motivo?: string | null;
            /**
             * Format: int64
             * @description How long the receiver took to answer this check.
             */
            duracion_ms?: number | null;
        };
        /** @description The answer times of every request the battery sent. */
        CheckTimings: {
            muestras: number;
            /** Format: int64 */
            p50_ms: number;
            /** Format: int64 */
            p99_ms: number;
            /**
             * Format: int64
             * @description The attempt timeout (`webhooks.timeout_segundos`) the run used.
             */
            timeout_ms: number;
        };
        /** @enum {string} */
        CheckVerdict: "ok" | "falla";
        /** @description A signing key as the API shows it: never its value. */
        Clave: {
            key_id: components["schemas"]["SigningKeyId"];
            /** Format: date-time */
            creado_en: string;
            /**
             * Format: date-time
             * @description Set only while a rotation retires this key.
             */
            vence_en: string | null;
        };
        /** @description A command as stored. Field order is the order on the wire. */
        Comando: {
            /** Format: uuid */
            id: string;
            /** Format: uuid */
            instance_id: string;
            /** @description `mensaje` for a send. */
            tipo: components["schemas"]["CommandKind"];
            status: components["schemas"]["CommandStatus"];
            /**
             * Format: date-time
             * @description When it is due to go out (`en_cola`); `null` otherwise.
             */
            next_try?: string | null;
            /**
             * @description Why it failed or was left in doubt (`comando_vencido`, the
             *     executor's code); `null` otherwise.
             */
            error_code?: string | null;
            stage?: null | components["schemas"]["CommandStage"];
            /** @description The provider's code, with stage `servidor`. */
            server_code?: string | null;
            /** @description The provider's id of a sent message. */
            provider_message_id?: string | null;
            /**
             * Format: date-time
             * @description When the provider's server accepted a send (`enviado`).
             */
            aceptado_en?: string | null;
            /** @description A send's destination; `null` for other kinds. */
            chat?: string | null;
            /** @description A send's content; `null` for other kinds. */
            contenido?: Record<string, never> | null;
            /** @description Another kind's parameters; `null` for a send. */
            parametros?: Record<string, never> | null;
            /** Format: date-time */
            expires_at?: string | null;
            correlation_id?: string | null;
            /** Format: int64 */
            generacion_esperada?: number | null;
            /**
             * Format: int64
             * @description The instance's generation when the command was accepted.
             */
            generation: number;
            /** Format: date-time */
            creado_en: string;
            /** Format: date-time */
            actualizado_en: string;
        };
        /** @description A command with everything an executor needs to run it. */
        ComandoEjecutor: {
            /** Format: uuid */
            id: string;
            /** Format: uuid */
            instance_id: string;
            /** @description `mensaje` for a send; a remote operation's family; a control kind. */
            tipo: string;
            /**
             * @description `aceptado`, `en_cola`, `ejecutando`, `enviado`, `completado`,
             *     `fallido`, `ambiguo` or `cancelado`.
             */
            status: string;
            /** @description A send's destination; `null` for other kinds. */
            chat?: string | null;
            /** @description A send's content, as the producer gave it; `null` for other kinds. */
            contenido?: Record<string, never> | null;
            /** @description Another kind's parameters; `null` for a send. */
            parametros?: Record<string, never> | null;
            /** Format: date-time */
            next_try?: string | null;
            error_code?: string | null;
            /** @description `previa`, `servidor` or `frontera`. */
            stage?: string | null;
            server_code?: string | null;
            provider_message_id?: string | null;
            /** Format: date-time */
            aceptado_en?: string | null;
            /** Format: date-time */
            expires_at?: string | null;
            correlation_id?: string | null;
            /** Format: int64 */
            generacion_esperada?: number | null;
            /**
             * Format: int64
             * @description The instance's generation when the command was accepted.
             */
            generation: number;
            /**
             * Format: int32
             * @description How many times an executor claimed it.
             */
            reclamos: number;
            /**
             * Format: date-time
             * @description The current lease's end, while `ejecutando`.
             */
            reservado_hasta?: string | null;
            /** Format: date-time */
            creado_en: string;
            /** Format: date-time */
            actualizado_en: string;
        };
        /** @description A page of an instance's commands, newest first. */
        ComandoList: {
            commands: components["schemas"]["Comando"][];
            /** Format: int64 */
            pagina: number;
            /** Format: int64 */
            por_pagina: number;
            /** @description Whether a next page has commands. */
            hay_mas: boolean;
        };
        /**
         * @description A claimable command, as the `{prefix}.commands` record describes it:
         *     claim it for its content.
         */
        ComandoPendiente: {
            /** Format: uuid */
            command_id: string;
            /** Format: uuid */
            instance_id: string;
            tipo: string;
            /**
             * Format: date-time
             * @description When it became claimable; `null` for an `aceptado` command.
             */
            next_try?: string | null;
        };
        /** @description A claim's answer: the command, now `ejecutando`, and its lease. */
        ComandoReclamado: {
            /**
             * Format: uuid
             * @description The lease token: send it as `reserva` in the report.
             */
            reserva: string;
            /**
             * Format: date-time
             * @description Report before this, or the sweeper makes the command `ambiguo`
             *     (stage `frontera`, `error_code` `reserva_vencida`).
             */
            reservado_hasta: string;
            comando: components["schemas"]["ComandoEjecutor"];
        };
        /**
         * @description The long-poll's answer: the instance's claimable commands in
         *     acceptance order; empty when none appeared within `wait`.
         */
        ComandosPendientes: {
            commands: components["schemas"]["ComandoPendiente"][];
        };
        /**
         * @description A command's kind (`tipo`).
         * @enum {string}
         */
        CommandKind: "mensaje" | "grupos" | "canales" | "perfil" | "etiquetas" | "llamadas" | "historial" | "reconectar" | "desconectar" | "pausar" | "reanudar" | "desvincular" | "archivar";
        /**
         * @description `stage`: `previa` (it never went out), `servidor` (the provider
         *     refused it: `server_code`), `frontera` (it may have gone out:
         *     `ambiguo`).
         * @enum {string}
         */
        CommandStage: "previa" | "servidor" | "frontera";
        /**
         * @description A command's `status`, as the seed's table names them.
         * @enum {string}
         */
        CommandStatus: "aceptado" | "en_cola" | "ejecutando" | "enviado" | "completado" | "fallido" | "ambiguo" | "cancelado";
        /**
         * @description A product contract (`contrato`, docs/CONTRACTS.md): which product's
         *     webhook document a receiver is written from.
         * @enum {string}
         */
        Contrato: "motor" | "visito" | "asixto" | "standard-webhooks";
        CreateApp: {
            nombre: string;
            destinos_permitidos?: components["schemas"]["DestinationEntry"][];
            /**
             * @description `estandar` (default) or `publica_https`: HTTPS on port 443 to
             *     public IPv4 addresses only, checked at create and at connect.
             */
            politica_destinos?: string | null;
            contrato?: null | components["schemas"]["Contrato"];
        };
        CreateInstance: {
            nombre: string;
        };
        CreateKey: {
            nombre: string;
            scopes: components["schemas"]["Scope"][];
            /**
             * @description Instances of the app the key is restricted to (none: all of
             *     them); each must be the app's (422 otherwise).
             */
            instancias?: string[];
            /**
             * Format: date-time
             * @description When the key stops working (RFC 3339, in the future; absent:
             *     never). Past it the key is refused with 401 like a revoked one, and
             *     the subscriptions bound to it under a contract that cancels on
             *     deactivation (`visito`) are suspended (`clave_vencida`) with their
             *     pending deliveries `cancelada`.
             */
            vence_en?: string | null;
            /**
             * @description The app's own read scopes the key holds (`conversations:read`,
             *     1-100 of a-z 0-9 _ . - in parts joined by `:`): a subscription it
             *     creates or changes needs the read scope the app's catalogue maps
             *     to each type it selects (403 naming the type).
             */
            permisos_lectura?: string[];
        };
        CreateReplay: {
            /**
             * Format: uuid
             * @description With `desde_seq` and `hasta_seq`: the instance whose ledger to
             *     replay.
             */
            instancia_id?: string | null;
            /**
             * Format: int64
             * @description First seq of the range (at least 1).
             */
            desde_seq?: number | null;
            /**
             * Format: int64
             * @description Last seq of the range (inclusive): at least `desde_seq`; a range
             *     spans at most 10 000 seqs.
             */
            hasta_seq?: number | null;
            /** @description Or 1 to 500 event ids. */
            event_ids?: string[] | null;
            /** @description Why: 1–300 characters, kept for the audit. */
            motivo: string;
        } & ({
            instancia_id: string;
            desde_seq: number;
            hasta_seq: number;
            event_ids?: null;
        } | {
            event_ids: unknown[];
            instancia_id?: null;
            desde_seq?: null;
            hasta_seq?: null;
        });
        /** @description The optional body of a manual retry. */
        CreateRetry: {
            /**
             * @description Why: 1–300 characters, kept for the audit; default
             *     `reintento manual`.
             */
            motivo?: string | null;
        };
        /** @description The optional request body. */
        CreateStreamToken: {
            /**
             * Format: int64
             * @description How long the token opens streams, 1–60 s (default 60).
             */
            segundos?: number | null;
        };
        CreateSubscription: {
            /** @description 1–120 characters. */
            nombre: string;
            /**
             * @description `http://` or `https://` (a webhook), `amqp[s]://host[:port]/[vhost]?exchange=NAME[&routing_key=KEY]`
             *     (RabbitMQ) or `nats://` / `tls://host[:port]/SUBJECT` (NATS
             *     JetStream); routing keys and subjects may use `{type}` and
             *     `{instance_id}`. 8–2000 characters, no user info, no fragment; the
             *     host must be an allowed destination.
             */
            url: string;
            /** @description Up to 200 instance ids of the app; empty = all of them. */
            instancias?: string[];
            /** @description Up to 50 event types; empty = all. */
            tipos?: components["schemas"]["EventTypeName"][];
            /**
             * @description The older form of `orden`: `true` = `instancia`, `false` =
             *     `ninguno`. Both may be sent when they agree (`true` with `clave`);
             *     otherwise a 422 naming `ordenado`.
             */
            ordenado?: boolean | null;
            orden?: null | components["schemas"]["Orden"];
            firma?: null | components["schemas"]["SigningProfile"];
            contrato?: null | components["schemas"]["Contrato"];
            entorno?: null | components["schemas"]["Entorno"];
            credenciales?: null | components["schemas"]["Credenciales"];
            /**
             * Format: int64
             * @description At most this many attempts a second (1–10 000), across every lane
             *     and every Motor process; absent or `null` = no limit.
             */
            max_por_segundo?: number | null;
        };
        /** @description A new API key: the only time its token is shown. */
        CreatedKey: {
            key_id: string;
            token: string;
            scopes: components["schemas"]["Scope"][];
            instancias: string[];
            /**
             * Format: date-time
             * @description When it stops working; absent: never.
             */
            vence_en?: string | null;
            /** @description The app's read scopes it holds; absent when none. */
            permisos_lectura?: string[];
        };
        /**
         * @description A broker's login: `usuario` and `clave` (RabbitMQ, NATS) or `token`
         *     (NATS).
         */
        Credenciales: {
            usuario?: string | null;
            clave?: string | null;
            token?: string | null;
        };
        /** @description 410: the cursor is older than the resumption window. */
        CursorExpired: {
            /** @description `code` is `cursor_vencido`. */
            error: components["schemas"]["ErrorDetail"];
            /**
             * Format: int64
             * @description The first cursor that can be resumed (`?desde=` it, or restart
             *     with `desde=0`).
             */
            primer_cursor: number;
        };
        /**
         * @description The state of one (event, subscription) delivery.
         * @enum {string}
         */
        DeliveryState: "pendiente" | "entregada" | "fallida" | "cancelada";
        /** @description `host` or `host:port` (also `[ipv6]`, `[ipv6]:port`); no scheme, path or wildcard. */
        DestinationEntry: string;
        /** @description One group of the DLQ. */
        DlqGrupo: {
            /** Format: uuid */
            app_id: string;
            /** Format: uuid */
            suscripcion_id: string;
            suscripcion: string;
            /** @description The subscription's `estado` now. */
            estado_suscripcion: string;
            ultimo_error?: string | null;
            /** Format: int64 */
            fallidas: number;
            /**
             * Format: date-time
             * @description When the latest of them failed.
             */
            ultima_en: string;
        };
        DlqResumen: {
            /**
             * Format: int64
             * @description Failed deliveries in all the groups.
             */
            total: number;
            /** @description Largest groups first. */
            grupos: components["schemas"]["DlqGrupo"][];
        };
        /**
         * @description An environment (`entorno`, Asixto's `environment`): an event reaches
         *     only subscriptions of its own.
         * @enum {string}
         */
        Entorno: "live" | "test";
        /** @description One delivery as listed. Field order is the order on the wire. */
        Entrega: {
            /**
             * Format: uuid
             * @description `X-MW-Delivery-Id`: the same on every retry of this delivery.
             */
            delivery_id: string;
            /** Format: uuid */
            suscripcion_id: string;
            /** @description The subscription's `nombre`. */
            suscripcion: string;
            /** Format: uuid */
            instance_id: string;
            /** @description The instance's `nombre`. */
            instancia: string;
            /** Format: uuid */
            event_id: string;
            /** Format: int64 */
            seq: number;
            /** @description The event's type. */
            type: string;
            estado: components["schemas"]["DeliveryState"];
            /**
             * Format: int32
             * @description Attempts made so far.
             */
            intentos: number;
            /**
             * Format: date-time
             * @description When the next attempt is due; `null` once `entregada` or `fallida`.
             */
            proximo_intento_en?: string | null;
            /**
             * Format: int32
             * @description HTTP status of the last attempt; `null` before the first or when
             *     no answer came.
             */
            ultimo_status?: number | null;
            /** @description Sanitised code of the last failure (`http_503`, `timeout`, …). */
            ultimo_error?: string | null;
            /** Format: date-time */
            creada_en: string;
            /**
             * Format: uuid
             * @description The delivery a replay or a manual retry sends again (also in the
             *     `X-MW-Replay-Of` header); `null` for a live delivery, and for a
             *     replay of an event that had no live delivery to this subscription
             *     (or whose live delivery was purged).
             */
            replay_of?: string | null;
            motivo?: null | components["schemas"]["MotivoCancelacion"];
        };
        /** @description One delivery with its attempts. */
        EntregaDetalle: components["schemas"]["Entrega"] & {
            intentos_detalle: components["schemas"]["Intento"][];
        };
        /** @description A page of deliveries, newest first. */
        EntregaList: {
            entregas: components["schemas"]["Entrega"][];
            /** Format: int64 */
            pagina: number;
            /** Format: int64 */
            por_pagina: number;
            /** @description Whether a next page has deliveries. */
            hay_mas: boolean;
        };
        /** @description One delivery as the operator sees it (any app). */
        EntregaOperador: {
            /** Format: uuid */
            delivery_id: string;
            /** Format: uuid */
            app_id: string;
            /** Format: uuid */
            suscripcion_id: string;
            suscripcion: string;
            /** Format: uuid */
            instance_id: string;
            instancia: string;
            /** Format: uuid */
            event_id: string;
            /** Format: int64 */
            seq: number;
            type: string;
            /** @description `live` or the replay's id. */
            carril: string;
            /** @description `pendiente`, `entregada`, `fallida` or `cancelada`. */
            estado: string;
            /**
             * @description Why it ended `cancelada` (`suscripcion_pausada`, …); absent
             *     otherwise.
             */
            motivo?: string | null;
            /** Format: int32 */
            intentos: number;
            /** Format: date-time */
            proximo_intento_en?: string | null;
            /** Format: int32 */
            ultimo_status?: number | null;
            ultimo_error?: string | null;
            /** Format: date-time */
            creada_en: string;
            /** Format: date-time */
            entregada_en?: string | null;
        };
        /** @description One delivery with its attempts. */
        EntregaOperadorDetalle: components["schemas"]["EntregaOperador"] & {
            intentos_detalle: components["schemas"]["Intento"][];
        };
        /** @description A page of deliveries, newest first. */
        EntregaOperadorList: {
            entregas: components["schemas"]["EntregaOperador"][];
            /** @description Pass it as `cursor` for the next page; `null` on the last one. */
            siguiente_cursor?: string | null;
        };
        /** @description A due `pendiente` delivery nothing is working on. */
        EntregaSinTrabajo: {
            /** Format: uuid */
            delivery_id: string;
            /** Format: uuid */
            suscripcion_id: string;
            /** Format: uuid */
            app_id: string;
            /** Format: uuid */
            instancia_id: string;
            /** Format: int64 */
            seq: number;
            /**
             * Format: date-time
             * @description When it was due.
             */
            vencida_en: string;
        };
        /**
         * @description The envelope: the same bytes for webhooks, brokers, streams, Kafka and
         *     the ledger API. An event whose content passed retention keeps its place
         *     and seq with `data` = `{"motivo": "retencion", "redactado": true}`.
         */
        Envelope: {
            /**
             * Format: int32
             * @description Always 1.
             */
            schema_version: number;
            /** Format: uuid */
            event_id: string;
            /** Format: uuid */
            instance_id: string;
            /**
             * Format: int64
             * @description 1, 2, 3, … per instance, gapless; 0 only in a `webhook.test`,
             *     which is not in the ledger.
             */
            seq: number;
            type: string;
            /** Format: date-time */
            occurred_at: string;
            /** Format: date-time */
            received_at: string;
            /** Format: int64 */
            generation: number;
            origin: components["schemas"]["Origin"];
            /** @description Present only when the event has one. */
            command_id?: string | null;
            /** @description Any JSON value. */
            data: unknown;
        };
        /** @description Every error answer: `{"error": {"code", "message", "campo"?}}`. */
        ErrorBody: {
            error: components["schemas"]["ErrorDetail"];
        };
        ErrorDetail: {
            /**
             * @description `json_invalido` (400), `no_autenticado` (401), `sin_permiso` (403),
             *     `no_encontrado` (404), `conflicto` (409), `demasiado_grande` (413),
             *     `validacion` (422), `no_disponible` (503).
             * @example validacion
             */
            code: string;
            message: string;
            /**
             * @description The field at fault, such as `body.url` or `body.instancias[3]`.
             * @example body.url
             */
            campo?: string | null;
        };
        /** @description What a state report did. */
        EstadoInstancia: {
            /** Format: uuid */
            instance_id: string;
            estado: string;
            /** @description The state before; `null` when none had been reported. */
            estado_anterior?: string | null;
            /**
             * Format: int64
             * @description The instance's generation now.
             */
            generation: number;
            /**
             * Format: int64
             * @description The `state.changed` event's seq; `null` when nothing changed (the
             *     same state again without a relink appends nothing).
             */
            seq?: number | null;
        };
        EventBatch: components["schemas"]["NewEvent"][];
        /** @description An app's catalogue of event types: `null` = any type is accepted. */
        EventCatalogue: {
            /** @description Required: `null` opens the catalogue, a list closes it. */
            tipos: components["schemas"]["EventTypeName"][] | null;
            /**
             * @description The read scope an API key needs (in its `permisos_lectura`) to
             *     subscribe to each type, for the types that have one:
             *     `{"message.created": "conversations:read"}`. Each names a type of
             *     `tipos`; absent (or empty): no type needs one. Left out of answers
             *     when empty. Under `contrato: visito`, a `PUT` that asks a read scope
             *     the API key a subscription is bound to lacks, for a type it
             *     selects, suspends it (`clave_sin_permiso`) and cancels its pending
             *     deliveries.
             */
            permisos_lectura?: {
                [key: string]: string;
            };
        };
        /** @description 1–200 characters, no control characters, no surrounding white space. */
        EventTypeName: string;
        /** @description One event, or an array of 1–500. */
        EventsInput: components["schemas"]["NewEvent"] | components["schemas"]["EventBatch"];
        /** @description The stored envelope, or an array of them in request order. */
        EventsOutput: components["schemas"]["Envelope"] | components["schemas"]["Envelope"][];
        /** @description `host` or `host:port` (also `[ipv6]`, `[ipv6]:port`); no scheme, path or wildcard. */
        GlobalDestinationEntry: string;
        Health: {
            /** @description `ok`, or `no_disponible` when Postgres does not answer. */
            status: string;
            postgres?: string | null;
        };
        /** @description An instance: one ledger with its own gapless `seq`. */
        Instance: {
            /** Format: uuid */
            id: string;
            /** Format: uuid */
            app_id: string;
            nombre: string;
            /** Format: int64 */
            generation: number;
        };
        InstanceList: {
            instances: components["schemas"]["Instance"][];
        };
        /** @description One attempt of a delivery. */
        Intento: {
            /**
             * Format: int32
             * @description 1, 2, 3, …
             */
            numero: number;
            /** Format: date-time */
            iniciado_en: string;
            /** Format: int32 */
            duracion_ms: number;
            /**
             * Format: int32
             * @description `null` when no answer came (timeout, network error).
             */
            status?: number | null;
            /** @description Sanitised code; `null` when delivered. */
            error?: string | null;
            /**
             * @description The key ids that signed it, comma-separated, newest first (as in
             *     `X-MW-Key-Id`).
             * @example whk_5f0c6a4e9b1d2c3a4b5c6d7e
             */
            key_ids: string;
            /**
             * @description The answer (429 or 503 with `Retry-After`) held every lane of the
             *     subscription until the time it asked for.
             */
            throttled: boolean;
        };
        KeyList: {
            keys: components["schemas"]["ApiKeyInfo"][];
        };
        LastErrorCode: string;
        /**
         * @description An executor's heartbeat: still working on the command, under this
         *     lease.
         */
        LatidoComando: {
            /**
             * Format: uuid
             * @description The lease token the claim answered.
             */
            reserva?: string | null;
        };
        /** @description A page of the ledger. */
        LedgerPage: {
            events: components["schemas"]["Envelope"][];
            /** Format: int64 */
            next_after_seq: number;
            has_more: boolean;
        };
        /**
         * @description Why the engine suspended a subscription.
         * @enum {string}
         */
        Motivo: "rechazo_401" | "rechazo_403" | "destino_no_permitido" | "destino_bloqueado" | "sin_secreto" | "rechazo_credenciales" | "fallos_sostenidos" | "clave_revocada" | "clave_vencida" | "clave_sin_permiso";
        /**
         * @description Why a delivery ended `cancelada`.
         * @enum {string}
         */
        MotivoCancelacion: "suscripcion_pausada" | "suscripcion_suspendida" | "suscripcion_eliminada" | "clave_revocada" | "clave_vencida" | "clave_sin_permiso";
        /**
         * @description One event as a producer sends it (no other field: an unknown one is a
         *     422).
         */
        NewEvent: {
            /** @description 1–200 characters, no control characters, no surrounding white space. */
            type: string;
            /**
             * @description Any JSON value (not null). The envelope around it must fit in
             *     256 KiB (the body cap): when it would not and `data` is an object
             *     with a `metadata` key, that key is dropped and
             *     `"metadata_omitted": true` added; if it still would not, 413 naming
             *     `data`.
             */
            data: components["schemas"]["NotNull"];
            /**
             * Format: date-time
             * @description RFC 3339 (the pattern is a safe subset: days up to 28).
             */
            occurred_at?: string | null;
            origin?: null | components["schemas"]["Origin"];
            /** @description 1–200 characters, no NUL. */
            command_id?: string | null;
            /**
             * @description The provider's id of the event: a repeat per instance is not stored
             *     again. 1–200 characters, no NUL.
             */
            source_id?: string | null;
            entorno?: null | components["schemas"]["Entorno"];
            /**
             * @description The ordering key (a conversation, an order…): a subscription with
             *     `orden: clave` sends this instance's events one at a time per key,
             *     keys in parallel; an event without one goes in the instance's lane.
             *     Kept in the ledger (not in the envelope). 1–200 characters, no NUL.
             */
            orden_clave?: string | null;
        };
        NotNull: Record<string, never> | unknown[] | string | number | boolean;
        /** @description Any other command: `POST /v1/instances/{id}/commands`. */
        NuevoComando: {
            /**
             * @description The kind: a remote operation (which operation of the family goes
             *     in `parametros`) or instance control. A send is `POST …/messages`.
             */
            tipo: components["schemas"]["OperationKind"];
            /**
             * @description Handed to the executor as is: a JSON object of at most 64 KiB;
             *     `{}` when absent.
             */
            parametros?: Record<string, never> | null;
            /**
             * Format: date-time
             * @description If no executor took it by then, it ends `fallido` with
             *     `error_code` `comando_vencido`. RFC 3339, in the future (the
             *     pattern is a safe subset: days up to 28).
             */
            expires_at?: string | null;
            /** @description The app's own reference, 1–200 characters; in `command.accepted`. */
            correlation_id?: string | null;
            /**
             * Format: int64
             * @description Refused with 409 when the instance's `generation` is another (it
             *     was relinked), so a send never leaves through a new number.
             */
            generacion_esperada?: number | null;
        };
        /**
         * @description A send: `POST /v1/instances/{id}/messages` (no other field: an unknown
         *     one is a 422).
         */
        NuevoMensaje: {
            /**
             * @description The destination, as the executor understands it: 1–200 characters,
             *     kept as written.
             */
            chat: string;
            /**
             * @description Handed to the executor as is: a JSON object of at most 64 KiB
             *     (larger is a 413 naming `body.contenido`).
             */
            contenido: Record<string, never>;
            /**
             * Format: date-time
             * @description If no executor took it by then, it ends `fallido` with
             *     `error_code` `comando_vencido`. RFC 3339, in the future (the
             *     pattern is a safe subset: days up to 28).
             */
            expires_at?: string | null;
            /** @description The app's own reference, 1–200 characters; in `command.accepted`. */
            correlation_id?: string | null;
            /**
             * Format: int64
             * @description Refused with 409 when the instance's `generation` is another (it
             *     was relinked), so a send never leaves through a new number.
             */
            generacion_esperada?: number | null;
        };
        /**
         * @description The kinds `POST /v1/instances/{id}/commands` takes: remote operations
         *     (`grupos` … `historial`, appending `command.accepted`) and instance
         *     control (`reconectar` … `archivar`, appending nothing: their effect is
         *     a `state.changed`).
         * @enum {string}
         */
        OperationKind: "grupos" | "canales" | "perfil" | "etiquetas" | "llamadas" | "historial" | "reconectar" | "desconectar" | "pausar" | "reanudar" | "desvincular" | "archivar";
        /**
         * @description A subscription's ordering (`orden`, docs/CONTRACTS.md).
         * @enum {string}
         */
        Orden: "instancia" | "clave" | "ninguno";
        /** @enum {string} */
        Origin: "live" | "history" | "operator";
        /** @description The outbox is behind: rows older than the threshold. */
        OutboxAtrasado: {
            /**
             * Format: int64
             * @description Rows older than the threshold (counted up to 100 000).
             */
            filas: number;
            /** Format: double */
            antiguedad_segundos: number;
        };
        /** @description The answer: 202, also to a repeat with the same Idempotency-Key. */
        Replay: {
            /** Format: uuid */
            replay_id: string;
            /** Format: uuid */
            suscripcion_id: string;
            /**
             * Format: int64
             * @description How many new deliveries it created.
             */
            entregas: number;
            /** Format: date-time */
            creado_en: string;
        };
        /** @description How far a replay has gone: `GET /v1/subscriptions/{id}/replays/{replay_id}`. */
        ReplayStatus: {
            /** Format: uuid */
            replay_id: string;
            /** Format: uuid */
            suscripcion_id: string;
            /**
             * Format: int64
             * @description How many deliveries it created.
             */
            entregas: number;
            /**
             * Format: int64
             * @description Delivered: `entregas` less the pending and failed ones (delivered
             *     rows may have passed `retencion.dias_entregados`).
             */
            entregadas: number;
            /**
             * Format: int64
             * @description Ended `fallida` (in the DLQ).
             */
            fallidas: number;
            /**
             * Format: int64
             * @description Still `pendiente` (waiting, retrying, or held by a paused or
             *     suspended subscription).
             */
            pendientes: number;
            /** @description `true` when none is pending. */
            terminado: boolean;
            /** Format: date-time */
            creado_en: string;
        };
        /** @description One reconciliation pass. */
        Report: {
            /** @description `true` when nothing is stuck. */
            ok: boolean;
            umbrales: components["schemas"]["Umbrales"];
            pendientes_sin_trabajo: components["schemas"]["EntregaSinTrabajo"][];
            carriles_detenidos: components["schemas"]["CarrilDetenido"][];
            outbox_atrasado?: null | components["schemas"]["OutboxAtrasado"];
        };
        /**
         * @description An executor's report of a command's outcome. Every field is a string
         *     so that each is judged by the rules of the `status` it comes with: a
         *     field the status does not take is a 422 naming it.
         */
        ReporteComando: {
            /**
             * Format: uuid
             * @description The lease token the claim answered.
             */
            reserva?: string | null;
            /**
             * @description `enviado` (sends: `provider_message_id`, `chat`, `aceptado_en`),
             *     `completado` (every other kind), `fallido` (`error_code`, `stage`
             *     `previa`/`servidor`, `server_code` with `servidor`, optional
             *     `provider_message_id`), `ambiguo` (optional `error_code`, `stage`
             *     `frontera`), `en_cola` (a deferral: `next_try`).
             */
            status?: string | null;
            provider_message_id?: string | null;
            chat?: string | null;
            /** Format: date-time */
            aceptado_en?: string | null;
            error_code?: string | null;
            stage?: string | null;
            server_code?: string | null;
            /** Format: date-time */
            next_try?: string | null;
        };
        /** @description An instance's connection state, as its executor saw it change. */
        ReporteEstado: {
            /**
             * @description `vinculando`, `conectada`, `desconectada`, `pausada`,
             *     `desvinculada` or `archivada`.
             */
            estado?: string | null;
            /**
             * @description The instance was linked again (a new session, perhaps another
             *     number): bumps its `generation`. Only with `conectada`.
             */
            revinculada?: boolean | null;
            /** @description Why, in 1–300 characters. */
            motivo?: string | null;
            /**
             * Format: uuid
             * @description The control command whose effect this is (one of the instance's).
             */
            command_id?: string | null;
        };
        RetryDlq: {
            /** Format: uuid */
            suscripcion_id?: string | null;
            /** Format: uuid */
            app_id?: string | null;
            /** @description Only failures with these codes (`http_410`, `timeout_agotada`, …). */
            ultimo_error?: components["schemas"]["LastErrorCode"][] | null;
            /** @description 1 to 500 delivery ids of the DLQ. */
            delivery_ids?: string[] | null;
            /** @description Why: 1–300 characters, kept in each replay's audit. */
            motivo: string;
        } & ({
            suscripcion_id: string;
        } | {
            app_id: string;
        } | {
            delivery_ids: unknown[];
        });
        /** @description The answer: the replays made (one per subscription). */
        RetryDlqResult: {
            replays: components["schemas"]["Replay"][];
            /**
             * Format: int64
             * @description New deliveries in all of them.
             */
            entregas: number;
        };
        /** @enum {string} */
        Scope: "events:write" | "events:read" | "subscriptions:manage" | "deliveries:replay" | "commands:write" | "commands:read" | "commands:execute";
        /** @description A secret, shown once. */
        Secreto: {
            /** @example whk_5f0c6a4e9b1d2c3a4b5c6d7e */
            key_id: string;
            /**
             * @description Give it to the receiver exactly as shown. mw-v1 and t-v1 key the
             *     HMAC with the whole string, `whsec_` included; standard-webhooks
             *     with the base64 decoding of what follows `whsec_`, as that
             *     specification reads a `whsec_<base64>` secret (Motor's are 64 hex
             *     digits, which are base64 too).
             * @example whsec_…
             */
            valor: string;
        };
        Settings: {
            /**
             * @description Hosts (any port) or host:port every app may deliver to, on top of
             *     the app's own list.
             */
            "webhooks.destinos_permitidos": string[];
            /**
             * Format: int64
             * @description Timeout of one webhook attempt, 1–60 s.
             */
            "webhooks.timeout_segundos": number;
            /**
             * Format: int64
             * @description How long a rotated-out secret keeps signing, 5–1440 min.
             */
            "webhooks.ventana_rotacion_minutos": number;
            /**
             * Format: int64
             * @description Days an `entregada` delivery is kept, 1–3650.
             */
            "retencion.dias_entregados": number;
            /**
             * @description Whether a NATS destination whose subject no JetStream stream
             *     captures may fall back to core NATS (fire and forget: delivered once
             *     the server has the message, with no persistence). Default `false`:
             *     such a delivery fails with `sin_stream` and is retried.
             */
            "brokers.nats_sin_jetstream": boolean;
            /**
             * Format: int64
             * @description Hours a stream cursor stays resumable, 1–720: a cursor whose next
             *     event was received earlier than this is answered 410.
             */
            "streams.retencion_horas": number;
            /**
             * Format: int64
             * @description Days an event's `data` is kept, 1–3650; `null` (the default) keeps
             *     it forever. Older events keep their seq and envelope fields with
             *     `data` = `{"motivo":"retencion","redactado":true}`.
             */
            "retencion.dias_contenido"?: number | null;
            /**
             * Format: int64
             * @description A subscription whose attempts have all failed for this many hours,
             *     1–720 …
             */
            "webhooks.desactivar_tras_horas": number;
            /**
             * Format: int64
             * @description … and at least this many attempts in a row (1–100 000) is suspended
             *     with `fallos_sostenidos`.
             */
            "webhooks.desactivar_tras_fallos": number;
            /**
             * Format: int64
             * @description A `clave`-ordered subscription's keys with a request in flight at
             *     once, per Motor process, 1–1000 (default 32): with N processes
             *     dispatching, up to N × this; each key's lane still sends one
             *     delivery at a time, globally.
             */
            "webhooks.claves_en_vuelo": number;
        };
        /**
         * @description A settings change: any subset of the keys (documentation of the
         *     `PATCH` body; the handler checks every key and range itself).
         */
        SettingsPatch: {
            /** @description Replaces the global list: host (any port) or host:port entries. */
            "webhooks.destinos_permitidos"?: components["schemas"]["GlobalDestinationEntry"][];
            /** Format: int64 */
            "webhooks.timeout_segundos"?: number;
            /** Format: int64 */
            "webhooks.ventana_rotacion_minutos"?: number;
            /** Format: int64 */
            "retencion.dias_entregados"?: number;
            /**
             * @description Lets a NATS subject no JetStream stream captures fall back to core
             *     NATS (delivered once the server has it; no persistence).
             */
            "brokers.nats_sin_jetstream"?: boolean;
            /**
             * Format: int64
             * @description Hours a stream cursor stays resumable (`?desde=`, `Last-Event-ID`).
             */
            "streams.retencion_horas"?: number;
            /**
             * Format: int64
             * @description Days an event's `data` is kept; older events keep their seq and
             *     envelope fields with `data` = `{"motivo":"retencion","redactado":true}`.
             *     `null` (the default) keeps content forever.
             */
            "retencion.dias_contenido"?: number | null;
            /**
             * Format: int64
             * @description Disabling on sustained failure: hours every attempt must have
             *     failed (together with `webhooks.desactivar_tras_fallos`).
             */
            "webhooks.desactivar_tras_horas"?: number;
            /**
             * Format: int64
             * @description Disabling on sustained failure: failed attempts in a row (together
             *     with `webhooks.desactivar_tras_horas`).
             */
            "webhooks.desactivar_tras_fallos"?: number;
            /**
             * Format: int64
             * @description A `clave`-ordered subscription's keys with a request in flight at
             *     once, per Motor process (each key still one at a time): with N
             *     processes dispatching, up to N × this.
             */
            "webhooks.claves_en_vuelo"?: number;
        };
        /**
         * @description The public id of a signing secret, sent as `X-MW-Key-Id`.
         * @example whk_5f0c6a4e9b1d2c3a4b5c6d7e
         */
        SigningKeyId: string;
        /**
         * @description A subscription's signing profile (`firma`).
         * @enum {string}
         */
        SigningProfile: "mw-v1" | "t-v1" | "standard-webhooks";
        /**
         * @description One Server-Sent Events message as a client parses it (OpenAPI 3.1 has
         *     a `text/event-stream` schema describe each message): the opening `id: N`
         *     with no data and the comments are not messages.
         */
        SseMessage: {
            /** @description The event's `seq`: the cursor to resume after it. */
            id: string;
            /** @description The event's `type`. */
            event: string;
            /** @description The event's envelope, JSON on one line. */
            data: string;
        };
        /** @description A stream token: pass it as `?token=` on the instance's stream URL. */
        StreamToken: {
            /**
             * @description `mst_…`; opens `GET /v1/instances/{id}/events/stream?token=…`
             *     (Server-Sent Events or WebSocket) of this instance only.
             */
            token: string;
            /** Format: uuid */
            instancia_id: string;
            /**
             * Format: date-time
             * @description After this instant the token opens nothing (a stream already open
             *     goes on).
             */
            vence_en: string;
        };
        /** @description A subscription as the API shows it. Field order is the order on the wire. */
        Subscription: {
            id: components["schemas"]["SubscriptionId"];
            /**
             * Format: uuid
             * @description The app that owns it.
             */
            cliente_id: string;
            nombre: string;
            url: string;
            /**
             * @description Whether the subscription holds broker `credenciales` (sealed; never
             *     shown).
             */
            credenciales: boolean;
            /** @description Empty: every instance of the app. */
            instancias: string[];
            /** @description Empty: every event type. */
            tipos: string[];
            /**
             * @description Whether deliveries go out one at a time per lane: `true` for `orden`
             *     `instancia` and `clave`, `false` for `ninguno`.
             */
            ordenado: boolean;
            orden?: null | components["schemas"]["Orden"];
            /**
             * @description The signing profile of its deliveries: `mw-v1` (the default),
             *     `t-v1` or `standard-webhooks`.
             */
            firma: components["schemas"]["SigningProfile"];
            contrato?: null | components["schemas"]["Contrato"];
            entorno?: null | components["schemas"]["Entorno"];
            /**
             * Format: int64
             * @description At most this many attempts a second (1–10 000) across every lane
             *     and every Motor process; `null` = no limit.
             */
            max_por_segundo: number | null;
            estado: components["schemas"]["SubscriptionState"];
            motivo: null | components["schemas"]["Motivo"];
            /** Format: date-time */
            suspendida_en: string | null;
            /** Format: int64 */
            version: number;
            claves: components["schemas"]["Clave"][];
            /** Format: int64 */
            pendientes: number;
            /** Format: int64 */
            fallidas: number;
            /** Format: date-time */
            creada_en: string;
            /** Format: date-time */
            actualizada_en: string;
        };
        /**
         * Format: uuid
         * @description A subscription's id.
         */
        SubscriptionId: string;
        SubscriptionList: {
            suscripciones: components["schemas"]["Subscription"][];
        };
        /**
         * @description A subscription's state. Only the engine suspends; only `DELETE`
         *     eliminates; a `PATCH` moves between `activa` and `pausada` (and
         *     reactivates a suspended one).
         * @enum {string}
         */
        SubscriptionState: "activa" | "pausada" | "suspendida" | "eliminada";
        /** @description The answer to create and rotate. */
        SubscriptionWithSecret: {
            suscripcion: components["schemas"]["Subscription"];
            secreto: components["schemas"]["Secreto"];
        };
        /** @description The outcome of a test request. */
        TestResult: {
            /** @description `true` with a 2xx. */
            ok: boolean;
            /**
             * Format: int32
             * @description The receiver's HTTP status, when it answered. For a broker
             *     destination: 200 when the broker confirmed the message (RabbitMQ
             *     publisher-confirm `Ack`, JetStream publish ack), 202 when core NATS
             *     took it (`brokers.nats_sin_jetstream`), `null` otherwise.
             */
            status?: number | null;
            /** Format: int64 */
            duracion_ms: number;
            /**
             * @description A sanitised code (`http_500`, `timeout`, `conexion_rechazada`, …);
             *     `null` when `ok`.
             * @example http_503
             */
            error?: string | null;
        };
        /** @description Thresholds past which work counts as stuck. */
        Umbrales: {
            /**
             * Format: int64
             * @description A due `pendiente` delivery with no live job (no lease) for this long.
             */
            pendiente_segundos: number;
            /**
             * Format: int64
             * @description An ordered lane whose head has been the same delivery for this long.
             */
            carril_segundos: number;
            /**
             * Format: int64
             * @description An outbox row not published for this long.
             */
            outbox_segundos: number;
        };
        UpdateApp: {
            nombre?: string | null;
            destinos_permitidos?: components["schemas"]["DestinationEntry"][] | null;
            /**
             * @description `estandar` or `publica_https`. Existing subscriptions are held to
             *     it at their next connection (suspended with `destino_bloqueado`
             *     when their destination no longer passes).
             */
            politica_destinos?: string | null;
            contrato?: null | components["schemas"]["Contrato"];
        };
        UpdateSubscription: {
            nombre?: string | null;
            url?: string | null;
            instancias?: string[] | null;
            tipos?: components["schemas"]["EventTypeName"][] | null;
            /**
             * @description `true` keeps a `clave` subscription `clave` (it is ordered);
             *     otherwise as on create.
             */
            ordenado?: boolean | null;
            orden?: null | components["schemas"]["Orden"];
            firma?: null | components["schemas"]["SigningProfile"];
            contrato?: null | components["schemas"]["Contrato"];
            entorno?: null | components["schemas"]["Entorno"];
            /** @description `activa` or `pausada`. */
            estado?: string | null;
            /**
             * Format: int64
             * @description The `version` the change is based on; another one is a 409.
             */
            version_esperada?: number | null;
            credenciales?: null | components["schemas"]["Credenciales"];
            /**
             * Format: int64
             * @description 1–10 000 attempts a second; `null` removes the limit.
             */
            max_por_segundo?: number | null;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    get_healthz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
        };
    };
    get_metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Prometheus metrics, OpenMetrics text format */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/openmetrics-text": string;
                };
            };
        };
    };
    get_readyz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
        };
    };
    list_alerts: {
        parameters: {
            query?: {
                /** @description `abierta` or `cerrada`; both when absent. */
                estado?: string;
                /** @description Only this app's alerts. */
                app_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AlertList"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    close_alert: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Alert"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_apps: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AppList"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_app: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateApp"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["App"];
                };
            };
            /** @description The body is not JSON or not of the expected shape (`json_invalido`, `campo` `body`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_app: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description App id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["App"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    update_app: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description App id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateApp"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["App"];
                };
            };
            /** @description The body is not JSON or not of the expected shape (`json_invalido`, `campo` `body`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_event_types: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventCatalogue"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    set_event_types: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EventCatalogue"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventCatalogue"];
                };
            };
            /** @description The body is not JSON or not of the expected shape (`json_invalido`, `campo` `body`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_instances: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description App id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InstanceList"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_instance: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description App id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateInstance"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Instance"];
                };
            };
            /** @description The body is not JSON or not of the expected shape (`json_invalido`, `campo` `body`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_keys: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description App id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyList"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_key: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description App id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateKey"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedKey"];
                };
            };
            /** @description The body is not JSON or not of the expected shape (`json_invalido`, `campo` `body`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    revoke_key: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description App id */
                id: string;
                key_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_app_subscriptions: {
        parameters: {
            query?: {
                /** @description Comma list of states; default `activa,pausada,suspendida`. */
                estado?: string;
            };
            header?: never;
            path: {
                /** @description App id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubscriptionList"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_app_subscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description App id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateSubscription"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubscriptionWithSecret"];
                };
            };
            /** @description The body is not JSON or not of the expected shape (`json_invalido`, `campo` `body`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_app_subscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description App id */
                id: string;
                /** @description Subscription id */
                sid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Subscription"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_app_subscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description App id */
                id: string;
                /** @description Subscription id */
                sid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    update_app_subscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description App id */
                id: string;
                /** @description Subscription id */
                sid: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateSubscription"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Subscription"];
                };
            };
            /** @description The body is not JSON or not of the expected shape (`json_invalido`, `campo` `body`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    request_app_replay: {
        parameters: {
            query?: never;
            header: {
                /** @description Required, 1–200 characters */
                "Idempotency-Key": string;
            };
            path: {
                /** @description App id */
                id: string;
                /** @description Subscription id */
                sid: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateReplay"];
            };
        };
        responses: {
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Replay"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    rotate_app_secret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description App id */
                id: string;
                /** @description Subscription id */
                sid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubscriptionWithSecret"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    send_app_test: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description App id */
                id: string;
                /** @description Subscription id */
                sid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TestResult"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_all_deliveries: {
        parameters: {
            query?: {
                /** @description Comma list of pendiente, entregada, fallida, cancelada */
                estado?: string;
                app_id?: string;
                suscripcion_id?: string;
                instancia_id?: string;
                /** @description Comma list of error codes (http_503, timeout_agotada, …) */
                ultimo_error?: string;
                /** @description Created at or after */
                desde?: string;
                /** @description Created before */
                hasta?: string;
                /** @description siguiente_cursor of the previous page */
                cursor?: string;
                /** @description 1–200, default 50 */
                limite?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntregaOperadorList"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_any_delivery: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntregaOperadorDetalle"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_dlq: {
        parameters: {
            query?: {
                /** @description Only this app's DLQ. */
                app_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DlqResumen"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    retry_dlq: {
        parameters: {
            query?: never;
            header: {
                /** @description Required, 1–200 characters; a repeat answers the same replays */
                "Idempotency-Key": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RetryDlq"];
            };
        };
        responses: {
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RetryDlqResult"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_report: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Report"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_settings: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Settings"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    update_settings: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SettingsPatch"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Settings"];
                };
            };
            /** @description The body is not JSON or not of the expected shape (`json_invalido`, `campo` `body`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    pause_subscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Subscription"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    reactivate_subscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Subscription"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_command: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Command id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Comando"];
                };
            };
            /** @description No key or token, or not a valid one (`no_autenticado`) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    cancel_command: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Command id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Now `cancelado` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Comando"];
                };
            };
            /** @description No key or token, or not a valid one (`no_autenticado`) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The command is `ejecutando` or ended */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_deliveries: {
        parameters: {
            query?: {
                /** @description Comma list of pendiente, entregada, fallida, cancelada */
                estado?: string;
                suscripcion_id?: string;
                instancia_id?: string;
                /** @description From 1, default 1 */
                pagina?: number;
                /** @description 1–200, default 50 */
                por_pagina?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntregaList"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_delivery: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Delivery id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntregaDetalle"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    retry_delivery: {
        parameters: {
            query?: never;
            header: {
                /** @description Required, 1–200 characters; the same key with another request is a 409, with the same one the first answer */
                "Idempotency-Key": string;
            };
            path: {
                /** @description The `fallida` delivery */
                id: string;
            };
            cookie?: never;
        };
        /** @description Optional: no body is the default `motivo` */
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateRetry"];
            };
        };
        responses: {
            /** @description The new delivery */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Entrega"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The delivery is not `fallida`, its subscription was deleted, or the key was used with another request */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    poll_commands: {
        parameters: {
            query: {
                /** @description The instance whose commands to wait for */
                instance: string;
                /** @description Seconds to wait for a command, 0–30 (default 0) */
                wait?: number;
                /** @description 1–100, default 10 */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ComandosPendientes"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    claim_command: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Command id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Claimed: now `ejecutando` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ComandoReclamado"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not claimable: claimed, finished, cancelled, not due yet, expired or for another generation */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    heartbeat_command: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Command id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["LatidoComando"];
            };
        };
        responses: {
            /** @description Extended: the command, `reservado_hasta` its lease's new end */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ComandoEjecutor"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Lease lost: another token, or the command is no longer `ejecutando` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    report_command: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Command id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ReporteComando"];
            };
        };
        responses: {
            /** @description Recorded: the command as it is now */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ComandoEjecutor"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Lease lost, or the command is no longer `ejecutando` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    report_state: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Instance id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ReporteEstado"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EstadoInstancia"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_commands: {
        parameters: {
            query?: {
                /** @description Comma list of statuses */
                status?: string;
                /** @description From 1, default 1 */
                pagina?: number;
                /** @description 1–200, default 50 */
                por_pagina?: number;
            };
            header?: never;
            path: {
                /** @description Instance id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ComandoList"];
                };
            };
            /** @description No key or token, or not a valid one (`no_autenticado`) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    submit_command: {
        parameters: {
            query?: never;
            header?: {
                /** @description Optional, 1–200 characters, per app and instance: a repeat answers the stored command; the same key with another request is a 409 */
                "Idempotency-Key"?: string | null;
            };
            path: {
                /** @description Instance id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NuevoComando"];
            };
        };
        responses: {
            /** @description Stored (or, for a repeated Idempotency-Key, stored before): the command as it is now */
            202: {
                headers: {
                    /** @description `/v1/commands/{id}` */
                    Location?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Comando"];
                };
            };
            /** @description The body is not JSON or not of the expected shape (`json_invalido`, `campo` `body`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No key or token, or not a valid one (`no_autenticado`) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The Idempotency-Key was used for another request, or `generacion_esperada` is not the instance's generation */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_events: {
        parameters: {
            query?: {
                /** @description Events after this seq (default 0) */
                after_seq?: number;
                /** @description 1–500, default 100 */
                limit?: number;
                /** @description Comma list of up to 20 event types */
                types?: string;
            };
            header?: never;
            path: {
                /** @description Instance id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LedgerPage"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    append_events: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1–200 characters; the same key with another body is a 409 */
                "Idempotency-Key"?: string | null;
            };
            path: {
                /** @description Instance id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EventsInput"];
            };
        };
        responses: {
            /** @description Nothing new: every source_id was already stored */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventsOutput"];
                };
            };
            /** @description Stored (object in, object out; array in, array out) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventsOutput"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy; retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_stream: {
        parameters: {
            query?: {
                /** @description Resume after this cursor (the seq of the last event received); 0 = from the first resumable event */
                desde?: number;
                /** @description A stream token (`mst_…`, from `POST /v1/instances/{id}/stream-tokens`) instead of the Authorization header, for browsers; it opens this instance's stream only */
                token?: string;
                /** @description Comma list of up to 20 event types */
                types?: string;
            };
            header?: {
                /** @description As `desde`, and wins over it (what EventSource sends on reconnect) */
                "Last-Event-ID"?: number | null;
            };
            path: {
                /** @description Instance id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description WebSocket: one text frame per envelope; pings every 15 s; close reason `motivo=… cursor=N` */
            101: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Server-Sent Events: `id: <seq>`, `event: <type>`, `data: <envelope>` per event; `: ping` heartbeats; a last `: fin motivo=… cursor=N` comment */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["SseMessage"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The cursor is older than the resumption window (`cursor_vencido`) */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CursorExpired"];
                };
            };
            /** @description Bad cursor (`campo` `query.desde` or `header.Last-Event-ID`) or types */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Every stream slot of this process is taken; see `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    send_message: {
        parameters: {
            query?: never;
            header: {
                /** @description Required, 1–200 characters, per app and instance: a repeat answers the stored command (also after a relink); the same key with another request is a 409 */
                "Idempotency-Key": string;
            };
            path: {
                /** @description Instance id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NuevoMensaje"];
            };
        };
        responses: {
            /** @description Stored (or, for a repeated Idempotency-Key, stored before): the command as it is now */
            202: {
                headers: {
                    /** @description `/v1/commands/{id}` */
                    Location?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Comando"];
                };
            };
            /** @description The body is not JSON or not of the expected shape (`json_invalido`, `campo` `body`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No key or token, or not a valid one (`no_autenticado`) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The Idempotency-Key was used for another request, or `generacion_esperada` is not the instance's generation */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_stream_token: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Instance id */
                id: string;
            };
            cookie?: never;
        };
        /** @description Optional; `{}` or no body gives 60 s */
        requestBody?: {
            content: {
                "application/json": null | components["schemas"]["CreateStreamToken"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StreamToken"];
                };
            };
            /** @description The body is not JSON or not of the expected shape (`json_invalido`, `campo` `body`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    serve_document: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The OpenAPI 3.1 document */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": unknown;
                };
            };
        };
    };
    list_subscriptions: {
        parameters: {
            query?: {
                /** @description Comma list of states; default `activa,pausada,suspendida`. */
                estado?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubscriptionList"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_subscription: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateSubscription"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubscriptionWithSecret"];
                };
            };
            /** @description The body is not JSON or not of the expected shape (`json_invalido`, `campo` `body`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_subscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Subscription"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_subscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    update_subscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateSubscription"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Subscription"];
                };
            };
            /** @description The body is not JSON or not of the expected shape (`json_invalido`, `campo` `body`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    check_subscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckReport"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not a webhook subscription, deleted, its host no longer allowed, or no live key */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    request_replay: {
        parameters: {
            query?: never;
            header: {
                /** @description Required, 1–200 characters; the same key with another request is a 409, with the same one the first answer */
                "Idempotency-Key": string;
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateReplay"];
            };
        };
        responses: {
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Replay"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is larger than the route accepts (`demasiado_grande`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_replay: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                replay_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReplayStatus"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    rotate_secret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubscriptionWithSecret"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    send_test: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TestResult"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
}
