//! Leader election on a `coordination.k8s.io/v1` Lease: the pure
//! decisions ([`lease`]) and the loop that calls the API ([`elector`]).

pub mod elector;
pub mod lease;
