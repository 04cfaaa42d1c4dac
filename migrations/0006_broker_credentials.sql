-- Broker destinations (RabbitMQ, NATS): their optional credentials, sealed
-- (AEAD under MOTOR_MASTER_KEY, bound to the subscription), and the
-- suspension they can cause. Additive: a new nullable column and one more
-- allowed motivo; nothing existing changes meaning.

-- credenciales: the sealed JSON {"usuario","clave"} or {"token"}; NULL when
-- the subscription has none (every webhook). Never returned by the API.
ALTER TABLE subscriptions ADD COLUMN credenciales bytea;

ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_motivo_check;
ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_motivo_check
    CHECK (motivo IN ('rechazo_401', 'rechazo_403', 'destino_no_permitido',
                      'destino_bloqueado', 'sin_secreto', 'rechazo_credenciales'));
