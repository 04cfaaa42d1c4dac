use super::*;

#[test]
fn renders_counters_and_gauges_with_their_types() {
    let m = Metrics::default();
    m.events_stored.inc_by(3);
    m.relay_shards_owned.set(16);
    let text = m.render();
    assert!(
        text.contains("# TYPE motor_events_stored counter\n"),
        "{text}"
    );
    assert!(text.contains("motor_events_stored_total 3\n"), "{text}");
    assert!(text.contains("motor_delivery_attempts_total 0\n"), "{text}");
    assert!(
        text.contains("# TYPE motor_relay_shards_owned gauge\n"),
        "{text}"
    );
    assert!(text.contains("motor_relay_shards_owned 16\n"), "{text}");
    assert!(text.ends_with("# EOF\n"), "{text}");
}

#[test]
fn pipeline_families_carry_their_labels() {
    let m = Metrics::default();
    let p = &m.pipeline;
    p.accepted("a1".into(), 2, 1);
    p.attempt("5xx", 0.2);
    p.attempt("2xx", 0.01);
    p.delivered(0.5);
    p.failed("http_410".into());
    p.retry("1s".into());
    p.sampled.outbox_oldest_seconds.set(1.5);
    p.sampled
        .oldest_pending_seconds
        .get_or_create(&SubscriptionLabel {
            subscription_id: "s1".into(),
        })
        .set(42.0);
    let text = m.render();
    for line in [
        "motor_app_events_accepted_total{app_id=\"a1\"} 2\n",
        "motor_app_events_duplicate_total{app_id=\"a1\"} 1\n",
        "motor_attempts_total{clase=\"5xx\"} 1\n",
        "motor_attempts_total{clase=\"2xx\"} 1\n",
        "motor_attempt_duration_seconds_count 2\n",
        "motor_delivery_latency_seconds_count 1\n",
        "motor_deliveries_finished_total{estado=\"entregada\"} 1\n",
        "motor_deliveries_finished_total{estado=\"fallida\"} 1\n",
        "motor_deliveries_failed_total{ultimo_error=\"http_410\"} 1\n",
        "motor_retries_total{tier=\"1s\"} 1\n",
        "motor_outbox_oldest_age_seconds 1.5\n",
        "motor_oldest_pending_age_seconds{subscription_id=\"s1\"} 42.0\n",
        "motor_streams_open 0\n",
        "# TYPE motor_attempt_duration_seconds histogram\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn build_info_and_the_breakdown_render_with_their_labels() {
    let m = Metrics::new(1, 1);
    let b = &m.breakdown;
    b.accepted("i1", "pedido.creado");
    b.accepted("i2", "pedido.pagado");
    b.delivered("i1", "pedido.creado", 0.2);
    b.failed("i2", "pedido.pagado");
    let text = m.render();
    for line in [
        &format!(
            "motor_build_info{{version=\"{}\"}} 1\n",
            env!("CARGO_PKG_VERSION")
        ),
        "motor_instance_events_accepted_total{instance=\"i1\"} 1\n",
        "motor_instance_events_accepted_total{instance=\"other\"} 1\n",
        "motor_type_events_accepted_total{event_type=\"pedido.creado\"} 1\n",
        "motor_type_events_accepted_total{event_type=\"other\"} 1\n",
        "motor_instance_deliveries_delivered_total{instance=\"i1\"} 1\n",
        "motor_instance_deliveries_failed_total{instance=\"other\"} 1\n",
        "motor_type_delivery_latency_seconds_count{event_type=\"pedido.creado\"} 1\n",
        "# TYPE motor_instance_delivery_latency_seconds histogram\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn the_commands_families_render_with_their_labels() {
    let m = Metrics::default();
    let c = &m.commands;
    c.accepted("envio");
    c.accepted("envio");
    c.accepted("control");
    c.claims.inc();
    c.reported("enviado");
    c.reported("en_cola");
    c.heartbeats.inc_by(2);
    c.swept(1, 3);
    let waiting = c.waiting();
    let other = c.waiting();
    drop(other);
    let text = m.render();
    for line in [
        "motor_commands_accepted_total{clase=\"envio\"} 2\n",
        "motor_commands_accepted_total{clase=\"control\"} 1\n",
        // Known series exist at zero before their first count.
        "motor_commands_accepted_total{clase=\"remota\"} 0\n",
        "motor_command_claims_total 1\n",
        "motor_command_reports_total{estado=\"enviado\"} 1\n",
        "motor_command_reports_total{estado=\"en_cola\"} 1\n",
        "motor_command_heartbeats_total 2\n",
        "motor_command_sweeps_total{tipo=\"vencido\"} 1\n",
        "motor_command_sweeps_total{tipo=\"reserva_vencida\"} 3\n",
        "motor_command_poll_waiters 1\n",
        "# TYPE motor_command_poll_waiters gauge\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    drop(waiting);
    assert!(m.render().contains("motor_command_poll_waiters 0\n"));
}
