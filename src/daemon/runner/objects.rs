//! The live health of each object an App manages (its inventory), read from the destination
//! cluster when asked: what the web UI's object tree shows beside each object.

use serde::Serialize;

use super::Runner;
use super::operations::OperationError;
use crate::apply::health::{self, Health};
use crate::object::ObjectRef;
use crate::object::kinds::Resolver;
use crate::reconcile::error::ReconcileError;

/// One managed object and its health now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectHealth {
    /// Which object.
    pub object: ObjectRef,
    /// `Healthy`, `Progressing`, `Degraded`, or `Missing` when the cluster does not have it.
    pub health: &'static str,
    /// What is missing or failed, when not healthy.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl ObjectHealth {
    fn new(object: ObjectRef, health: Option<Health>) -> ObjectHealth {
        let (health, message) = match health {
            Some(Health::Healthy) => ("Healthy", String::new()),
            Some(Health::Progressing(why)) => ("Progressing", why),
            Some(Health::Degraded(why)) => ("Degraded", why),
            None => ("Missing", "not found on the cluster".to_string()),
        };
        ObjectHealth {
            object,
            health,
            message,
        }
    }
}

impl Runner {
    /// The health of each object App `key` manages, read from its cluster now (one GET per
    /// object; nothing is changed or recorded).
    pub async fn object_health(&self, key: &str) -> Result<Vec<ObjectHealth>, OperationError> {
        let app = self
            .app(key)
            .ok_or_else(|| OperationError::NotFound(key.to_string()))?;
        let (target, _, _) = self
            .target(&app)
            .await
            .map_err(OperationError::Destination)?;
        let objects = self.inventory(key).await?;
        let mut resolver = Resolver::shared(target.client, target.kinds);
        let found = health::current(&mut resolver, &objects)
            .await
            .map_err(|e| OperationError::Reconcile(ReconcileError::from(e)))?;
        Ok(objects
            .into_iter()
            .zip(found)
            .map(|(object, health)| ObjectHealth::new(object, health))
            .collect())
    }
}
