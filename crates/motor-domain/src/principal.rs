//! Who is calling: an API key's app, scopes and instance restriction.

use crate::{
    ids::{AppId, InstanceId},
    scope::Scope,
};

#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    pub key_id: String,
    pub app_id: AppId,
    pub scopes: Vec<Scope>,
    /// Empty = every instance of the app.
    pub instances: Vec<InstanceId>,
    /// The app's own read scopes the key holds (`permisos_lectura`,
    /// [`crate::read_scope`]).
    pub read_scopes: Vec<String>,
}

impl Principal {
    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    pub fn is_restricted(&self) -> bool {
        !self.instances.is_empty()
    }

    /// Whether the key's restriction lets it touch this instance. Ownership
    /// by the app is checked separately, against the store.
    pub fn may_access(&self, instance: InstanceId) -> bool {
        !self.is_restricted() || self.instances.contains(&instance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restriction() {
        let a = InstanceId::new();
        let b = InstanceId::new();
        let mut p = Principal {
            key_id: "key_1".into(),
            app_id: AppId::new(),
            scopes: vec![Scope::EventsRead],
            instances: vec![],
            read_scopes: vec![],
        };
        assert!(p.may_access(a) && p.may_access(b));
        p.instances = vec![a];
        assert!(p.may_access(a) && !p.may_access(b));
        assert!(p.has(Scope::EventsRead) && !p.has(Scope::EventsWrite));
    }
}
