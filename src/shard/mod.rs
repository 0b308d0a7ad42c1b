//! Scale-out: several replicas share the destination clusters of a fleet. Each replica holds
//! a Kubernetes Lease in the management cluster ([`membership`]); the clusters are assigned to
//! the live replicas by rendezvous hashing ([`rendezvous`]), so a replica joining or leaving
//! moves only its share. Before each apply and prune a replica checks that it still holds its
//! Lease and owns the cluster ([`membership::Membership::fence`]).

pub mod membership;
pub mod rendezvous;

pub use membership::{Fenced, Membership, Replica, ShardConfig, ShardError, View};
