//! Logs and traces of the `motor` binary: `tracing` to stderr, as text or,
//! with `MOTOR_LOG_FORMAT=json`, one JSON object per line (the fields of
//! the event and of every span it is in: event_id, delivery_id, …). Built
//! with the `otlp` feature and given `OTEL_EXPORTER_OTLP_ENDPOINT`, the
//! spans are also exported as OpenTelemetry traces over OTLP/HTTP.

use tracing_subscriber::{
    filter::EnvFilter, layer::SubscriberExt, registry::Registry, util::SubscriberInitExt, Layer,
};

type Filtered = tracing_subscriber::layer::Layered<EnvFilter, Registry>;
type BoxedLayer = Box<dyn Layer<Filtered> + Send + Sync>;

/// What must live until exit (the OTLP exporter flushes when dropped).
#[must_use]
pub struct Guard {
    #[cfg(feature = "otlp")]
    otlp: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        #[cfg(feature = "otlp")]
        if let Some(provider) = self.otlp.take() {
            if let Err(e) = provider.shutdown() {
                eprintln!("motor: flushing OTLP traces: {e}");
            }
        }
    }
}

/// Whether `MOTOR_LOG_FORMAT` asks for JSON.
pub fn json_requested() -> bool {
    std::env::var("MOTOR_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"))
}

/// Installs the global subscriber.
pub fn init() -> Guard {
    #[cfg_attr(not(feature = "otlp"), allow(unused_mut))]
    let mut filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let fmt: BoxedLayer = if json_requested() {
        tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_writer(std::io::stderr)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .boxed()
    };
    #[allow(unused_mut)]
    let mut layers: Vec<BoxedLayer> = vec![fmt];
    #[cfg(feature = "otlp")]
    let otlp = match otlp::layer() {
        Ok(Some((layer, provider))) => {
            layers.push(layer);
            // Exported traces hold every attempt's span, whatever
            // `RUST_LOG` says of debug (the span is debug, off otherwise).
            filter = filter.add_directive(otlp::attempt_spans());
            Some(provider)
        }
        Ok(None) => None,
        Err(e) => {
            eprintln!("motor: OTLP export not started: {e}");
            None
        }
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(layers)
        .init();
    Guard {
        #[cfg(feature = "otlp")]
        otlp,
    }
}

#[cfg(feature = "otlp")]
mod otlp {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::{trace::SdkTracerProvider, Resource};
    use tracing_subscriber::Layer;

    use super::BoxedLayer;

    /// The directive that turns the attempts' spans on.
    pub fn attempt_spans() -> tracing_subscriber::filter::Directive {
        format!("{}=debug", motor_engine::ATTEMPT_SPAN_TARGET)
            .parse()
            .expect("a valid directive")
    }

    /// The OTLP layer when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the
    /// exporter reads it, and the other `OTEL_EXPORTER_OTLP_*` variables,
    /// itself; traces go to `<endpoint>/v1/traces`).
    pub fn layer() -> Result<Option<(BoxedLayer, SdkTracerProvider)>, Box<dyn std::error::Error>> {
        if std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_none() {
            return Ok(None);
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name("motor").build())
            .build();
        let tracer = provider.tracer("motor");
        let layer = tracing_opentelemetry::layer().with_tracer(tracer).boxed();
        Ok(Some((layer, provider)))
    }
}
