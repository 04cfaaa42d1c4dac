-- Endpoint health and recovery (issue 14). Expand only: new nullable
-- columns; nothing existing changes and running code that does not know
-- them keeps working.

-- replay_of: the delivery a replay or a manual retry sends again — the
--   retried delivery, or for a replay the live delivery of the same event to
--   the same subscription when there was one. NULL for live deliveries. No
--   foreign key: the original may be purged by retention (`entregada`
--   after `retencion.dias_entregados`) while its replay stays.
ALTER TABLE deliveries ADD COLUMN replay_of uuid;

-- politica_destinos: the app's destination policy. 'estandar' = the allowed
--   lists alone; 'publica_https' = also HTTPS on port 443 to public IPv4
--   addresses only (checked at create and at every connection).
ALTER TABLE apps ADD COLUMN politica_destinos text NOT NULL DEFAULT 'estandar'
    CHECK (politica_destinos IN ('estandar', 'publica_https'));

-- Content retention (`retencion.dias_contenido`): how far each instance's
-- ledger has been redacted. The job walks the ledger by its primary key
-- from hasta_seq, so nothing is added to the events table or the ingest
-- path.
CREATE TABLE redaction_marks (
    instance_id uuid PRIMARY KEY REFERENCES instances (id),
    hasta_seq   bigint NOT NULL DEFAULT 0
);
