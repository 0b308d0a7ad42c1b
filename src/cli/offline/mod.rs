//! The offline commands' engine (`wardn clusters validate`, `wardn generate rbac`): Apps
//! rendered from their sources without a cluster, and what they need of each destination.

pub mod targets;
pub mod validate;
