//! Scale-out: several replicas share the destination clusters of a fleet. Each replica holds
//! a Kubernetes Lease in the management cluster ([`membership`]); the clusters are divided
//! among the live replicas in balanced shares ([`balance`], built on [`rendezvous`] weights),
//! and a replica writes to a cluster only under an effective claim published in its Lease
//! ([`claims`]), so no two replicas write to one cluster even while their views differ. Before
//! each apply and prune a replica checks it still may ([`membership::Membership::fence`]).

pub mod balance;
pub mod claims;
pub mod membership;
pub mod observer;
pub mod rendezvous;

pub use membership::{Fenced, Membership, Replica, ShardConfig, ShardError, View};
