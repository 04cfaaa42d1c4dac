//! Topic names (`{prefix}.events`, …) and their creation.

use std::time::Duration;

use rdkafka::{
    admin::{AdminClient, AdminOptions, NewTopic, TopicReplication},
    client::DefaultClientContext,
    config::ClientConfig,
    types::RDKafkaErrorCode,
};

use motor_domain::outbox::Topic;

use crate::{BusConfig, BusError};

/// Topic names under one prefix. The vocabulary itself — which topics
/// exist and their suffixes — is [`Topic`], in the domain.
#[derive(Debug, Clone)]
pub struct Topics {
    prefix: String,
}

impl Topics {
    pub fn new(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
        }
    }

    /// The full name of a topic, e.g. `motor.events`.
    pub fn name(&self, topic: Topic) -> String {
        topic.name(&self.prefix)
    }

    /// The full name of a stored suffix (an outbox record's topic column,
    /// written from a [`Topic`]).
    pub fn of_suffix(&self, suffix: &str) -> String {
        format!("{}.{suffix}", self.prefix)
    }

    pub fn all(&self) -> Vec<String> {
        Topic::ALL.iter().map(|t| self.name(*t)).collect()
    }
}

/// Creates every Motor topic that does not exist yet. Existing topics are
/// left as they are (their partition count is not changed).
pub async fn ensure_topics(config: &BusConfig) -> Result<(), BusError> {
    ensure_named(config, &Topics::new(&config.prefix).all()).await
}

/// Creates those of `names` that do not exist yet, through a client of its
/// own that lives only as long as the call.
pub async fn ensure_named(config: &BusConfig, names: &[String]) -> Result<(), BusError> {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &config.brokers)
        .create()?;
    let new: Vec<NewTopic<'_>> = names
        .iter()
        .map(|name| {
            NewTopic::new(
                name,
                config.partitions,
                TopicReplication::Fixed(config.replication),
            )
        })
        .collect();
    let options = AdminOptions::new()
        .operation_timeout(Some(Duration::from_secs(30)))
        .request_timeout(Some(Duration::from_secs(30)));
    for result in admin.create_topics(&new, &options).await? {
        match result {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((topic, code)) => {
                return Err(BusError::CreateTopic {
                    topic,
                    reason: code.to_string(),
                })
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_prefix() {
        let topics = Topics::new("motor");
        assert_eq!(topics.name(Topic::Events), "motor.events");
        assert_eq!(topics.of_suffix("dlq"), "motor.dlq");
        assert!(topics.all().contains(&"motor.retry.10m".to_owned()));
        assert_eq!(topics.all().len(), Topic::ALL.len());
    }
}
