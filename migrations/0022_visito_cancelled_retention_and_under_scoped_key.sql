-- Issue 33, the last gaps of Visito's contract (docs/CONTRACTS.md). Expand
-- only: one more allowed value and one more index; running code that does
-- not know them keeps working.

-- motivo `clave_sin_permiso` on subscriptions: under a contract that
--   cancels on deactivation, a catalogue change (PUT event-types) that maps
--   a type the subscription selects to a read scope its bound API key
--   lacks suspends it (and cancels its pending deliveries, whose
--   deliveries.motivo is the same word).
ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_motivo_check;
ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_motivo_check
    CHECK (motivo IN ('rechazo_401', 'rechazo_403', 'destino_no_permitido',
                      'destino_bloqueado', 'sin_secreto', 'rechazo_credenciales',
                      'fallos_sostenidos', 'clave_revocada', 'clave_vencida',
                      'clave_sin_permiso'));

-- Visito keeps a cancelled delivery 30 days after cancelada_en, whatever
--   retencion.dias_entregados says (purge_contract_cancelled.sql): its
--   subscriptions' cancelled rows, oldest first, one subscription at a
--   time, reading no row that is not cancelled.
CREATE INDEX deliveries_cancelled_by_subscription
    ON deliveries (subscription_id, cancelada_en) WHERE estado = 'cancelada';
