//! Reconcile: the per-App pipeline (place, allowlist, diff, plan, decide, apply), Held plans
//! and their approval, sync windows. The pure stages are plain functions; I/O sits in
//! [`pipeline`].

pub mod decide;
pub mod drift;
pub mod error;
mod execute;
pub mod live;
pub mod metrics;
pub mod pass;
pub mod pipeline;
mod place;
pub mod plan;
pub mod promotion;
pub mod retry;
pub mod scheduler;
pub mod status;
pub mod upkeep;
