//! The wire shapes of commands: a send's and another kind's request, the
//! command as answered, the page, and the OpenAPI schemas of the domain's
//! kinds, statuses and stages (the domain crate knows no OpenAPI). Field
//! names are the seed's ("Comandos asíncronos y eventos"); field order is
//! the order on the wire.

use motor_domain::{
    command::{RawOptions, Stage},
    time,
};
use motor_store::commands::Command;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// A send: `POST /v1/instances/{id}/messages` (no other field: an unknown
/// one is a 422).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NuevoMensaje)]
pub struct SendMessage {
    /// The destination, as the executor understands it: 1–200 characters,
    /// kept as written.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\u0000-\\u001f\\u007f-\\u009f \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000-\\u001f\\u007f-\\u009f]*$"
    )]
    pub chat: String,
    /// Handed to the executor as is: a JSON object of at most 64 KiB
    /// (larger is a 413 naming `body.contenido`).
    #[schema(value_type = Object)]
    pub contenido: Value,
    /// If no executor took it by then, it ends `fallido` with
    /// `error_code` `comando_vencido`. RFC 3339, in the future (the
    /// pattern is a safe subset: days up to 28).
    #[schema(
        format = DateTime,
        pattern = "^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
    )]
    pub expires_at: Option<String>,
    /// The app's own reference, 1–200 characters; in `command.accepted`.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\u0000-\\u001f\\u007f-\\u009f \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000-\\u001f\\u007f-\\u009f]*$"
    )]
    pub correlation_id: Option<String>,
    /// Refused with 409 when the instance's `generation` is another (it
    /// was relinked), so a send never leaves through a new number.
    #[schema(minimum = 1)]
    pub generacion_esperada: Option<i64>,
}

/// Any other command: `POST /v1/instances/{id}/commands`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NuevoComando)]
pub struct SubmitCommand {
    /// The kind: a remote operation (which operation of the family goes
    /// in `parametros`) or instance control. A send is `POST …/messages`.
    #[schema(value_type = OperationKindOut)]
    pub tipo: String,
    /// Handed to the executor as is: a JSON object of at most 64 KiB;
    /// `{}` when absent.
    #[schema(value_type = Option<Object>)]
    pub parametros: Option<Value>,
    /// If no executor took it by then, it ends `fallido` with
    /// `error_code` `comando_vencido`. RFC 3339, in the future (the
    /// pattern is a safe subset: days up to 28).
    #[schema(
        format = DateTime,
        pattern = "^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
    )]
    pub expires_at: Option<String>,
    /// The app's own reference, 1–200 characters; in `command.accepted`.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\u0000-\\u001f\\u007f-\\u009f \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000-\\u001f\\u007f-\\u009f]*$"
    )]
    pub correlation_id: Option<String>,
    /// Refused with 409 when the instance's `generation` is another (it
    /// was relinked), so a send never leaves through a new number.
    #[schema(minimum = 1)]
    pub generacion_esperada: Option<i64>,
}

/// The optional fields both requests share, as the domain reads them.
macro_rules! options_of {
    ($t:ty) => {
        impl $t {
            pub fn raw_options(&self) -> RawOptions<'_> {
                RawOptions {
                    expires_at: self.expires_at.as_deref(),
                    correlation_id: self.correlation_id.as_deref(),
                    expected_generation: self.generacion_esperada,
                }
            }
        }
    };
}

options_of!(SendMessage);
options_of!(SubmitCommand);

/// A command as stored. Field order is the order on the wire.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Comando)]
pub struct CommandView {
    #[schema(format = Uuid)]
    pub id: String,
    #[schema(format = Uuid)]
    pub instance_id: String,
    /// `mensaje` for a send.
    #[schema(value_type = CommandKindOut)]
    pub tipo: &'static str,
    #[schema(value_type = CommandStatusOut)]
    pub status: &'static str,
    /// When it is due to go out (`en_cola`); `null` otherwise.
    #[schema(format = DateTime)]
    pub next_try: Option<String>,
    /// Why it failed or was left in doubt (`comando_vencido`, the
    /// executor's code); `null` otherwise.
    pub error_code: Option<String>,
    /// Where it failed or was left in doubt.
    #[schema(value_type = Option<StageOut>)]
    pub stage: Option<&'static str>,
    /// The provider's code, with stage `servidor`.
    pub server_code: Option<String>,
    /// The provider's id of a sent message.
    pub provider_message_id: Option<String>,
    /// When the provider's server accepted a send (`enviado`).
    #[schema(format = DateTime)]
    pub aceptado_en: Option<String>,
    /// A send's destination; `null` for other kinds.
    pub chat: Option<String>,
    /// A send's content; `null` for other kinds.
    #[schema(value_type = Option<Object>)]
    pub contenido: Option<Value>,
    /// Another kind's parameters; `null` for a send.
    #[schema(value_type = Option<Object>)]
    pub parametros: Option<Value>,
    #[schema(format = DateTime)]
    pub expires_at: Option<String>,
    pub correlation_id: Option<String>,
    pub generacion_esperada: Option<i64>,
    /// The instance's generation when the command was accepted.
    pub generation: i64,
    #[schema(format = DateTime)]
    pub creado_en: String,
    #[schema(format = DateTime)]
    pub actualizado_en: String,
}

impl From<Command> for CommandView {
    fn from(c: Command) -> Self {
        Self {
            id: c.id.to_string(),
            instance_id: c.instance_id.to_string(),
            tipo: c.kind.as_str(),
            status: c.status.as_str(),
            next_try: c.next_try.as_ref().map(time::format),
            error_code: c.error_code,
            stage: c.stage.map(Stage::as_str),
            server_code: c.server_code,
            provider_message_id: c.provider_message_id,
            aceptado_en: c.accepted_at.as_ref().map(time::format),
            chat: c.chat,
            contenido: c.content,
            parametros: c.parameters,
            expires_at: c.expires_at.as_ref().map(time::format),
            correlation_id: c.correlation_id,
            generacion_esperada: c.expected_generation,
            generation: c.generation,
            creado_en: time::format(&c.created_at),
            actualizado_en: time::format(&c.updated_at),
        }
    }
}

/// A page of an instance's commands, newest first.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ComandoList)]
pub struct CommandList {
    pub commands: Vec<CommandView>,
    pub pagina: i64,
    pub por_pagina: i64,
    /// Whether a next page has commands.
    pub hay_mas: bool,
}

/// A command's kind (`tipo`).
#[derive(Serialize, ToSchema)]
#[schema(as = CommandKind)]
#[serde(rename_all = "lowercase")]
pub enum CommandKindOut {
    Mensaje,
    Grupos,
    Canales,
    Perfil,
    Etiquetas,
    Llamadas,
    Historial,
    Reconectar,
    Desconectar,
    Pausar,
    Reanudar,
    Desvincular,
    Archivar,
}

/// The kinds `POST /v1/instances/{id}/commands` takes: remote operations
/// (`grupos` … `historial`, appending `command.accepted`) and instance
/// control (`reconectar` … `archivar`, appending nothing: their effect is
/// a `state.changed`).
#[derive(Serialize, ToSchema)]
#[schema(as = OperationKind)]
#[serde(rename_all = "lowercase")]
pub enum OperationKindOut {
    Grupos,
    Canales,
    Perfil,
    Etiquetas,
    Llamadas,
    Historial,
    Reconectar,
    Desconectar,
    Pausar,
    Reanudar,
    Desvincular,
    Archivar,
}

/// A command's `status`, as the seed's table names them.
#[derive(Serialize, ToSchema)]
#[schema(as = CommandStatus)]
#[serde(rename_all = "snake_case")]
pub enum CommandStatusOut {
    Aceptado,
    EnCola,
    Ejecutando,
    Enviado,
    Completado,
    Fallido,
    Ambiguo,
    Cancelado,
}

/// `stage`: `previa` (it never went out), `servidor` (the provider
/// refused it: `server_code`), `frontera` (it may have gone out:
/// `ambiguo`).
#[derive(Serialize, ToSchema)]
#[schema(as = CommandStage)]
#[serde(rename_all = "lowercase")]
pub enum StageOut {
    Previa,
    Servidor,
    Frontera,
}

#[cfg(test)]
mod tests {
    use motor_domain::command::{CommandKind, CommandStatus};

    use super::*;

    /// The schemas' enums spell exactly the domain's values.
    #[test]
    fn the_schema_enums_are_the_domains_spellings() {
        let names = |schema: utoipa::openapi::RefOr<utoipa::openapi::Schema>| -> Vec<String> {
            let json = serde_json::to_value(schema).unwrap();
            json["enum"]
                .as_array()
                .unwrap_or_else(|| panic!("{json}"))
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        };
        use utoipa::PartialSchema;
        let kinds: Vec<String> = CommandKind::ALL.iter().map(|k| k.to_string()).collect();
        assert_eq!(names(CommandKindOut::schema()), kinds);
        assert_eq!(names(OperationKindOut::schema()), kinds[1..]);
        let statuses: Vec<String> = CommandStatus::ALL.iter().map(|s| s.to_string()).collect();
        assert_eq!(names(CommandStatusOut::schema()), statuses);
        let stages: Vec<String> = Stage::ALL.iter().map(|s| s.to_string()).collect();
        assert_eq!(names(StageOut::schema()), stages);
    }
}
