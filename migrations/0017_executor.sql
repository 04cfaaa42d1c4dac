-- Executors (issue 32): what the executor API reads and writes beyond the
-- commands table of 0015. Additive only.
--
-- instances.estado / estado_desde: the connection state its executor last
-- reported (motor_domain::instance_state; NULL until the first report)
-- and since when. A change appends `state.changed` in the same
-- transaction; a relink also bumps `generation`.
ALTER TABLE instances
    ADD COLUMN estado text,
    ADD COLUMN estado_desde timestamptz,
    ADD CONSTRAINT instances_estado CHECK (estado IN ('vinculando', 'conectada',
        'desconectada', 'pausada', 'desvinculada', 'archivada'));

-- GET /v1/executor/commands: an instance's commands still waiting for a
-- claim, oldest first. Only open rows are indexed, so the long-poll's
-- statement costs the same however many commands the instance finished.
CREATE INDEX commands_open ON commands (instance_id, creado_en, id)
    WHERE status IN ('aceptado', 'en_cola');
