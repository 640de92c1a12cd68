//! The one list of clients.
//!
//! Every test in the conformance kit and every benchmark cell runs over [`all`]. A new client is its
//! crate and its spec, then one line here (and the crate in `Cargo.toml`): the kit, the hostile
//! and timeout tests and the bench select clients by what their specs declare, not by name
//! (`CONTRIBUTING.md` lists the steps).
#![deny(missing_docs)]

use kvbench_core::ClientSpec;

/// Every client, hand-written first, then libraries.
pub fn all() -> Vec<ClientSpec> {
    vec![
        kvbench_raw_tcp::SPEC,
        kvbench_raw_tcp::SPEC_PER_TOKEN,
        kvbench_raw_tcp::SPEC_NAGLE,
        kvbench_raw_tcp::SPEC_PER_TOKEN_NAGLE,
        kvbench_raw_unix::SPEC,
        kvbench_buffered::SPEC,
        kvbench_inline::SPEC,
        kvbench_memcached_text::SPEC,
        kvbench_memcached_meta::SPEC,
        kvbench_multiplexed::SPEC,
        kvbench_multiplexed::SPEC_MEMCACHED,
        kvbench_lib_redis::SPEC_SYNC,
        kvbench_lib_redis::SPEC_ASYNC,
        kvbench_lib_fred::SPEC,
        kvbench_lib_fred::SPEC_POOL,
        kvbench_lib_memcache::SPEC_BINARY,
        kvbench_lib_memcache::SPEC_BINARY_NO_CHECK,
        kvbench_lib_memcache::SPEC_ASCII,
        kvbench_lib_memcache::SPEC_ASCII_NO_CHECK,
    ]
}

/// Every Redis Cluster client (backend `redis-cluster`), hand-written first: each connects to
/// one seed node and finds the others itself. Not in [`all`], whose hostile-server, timeout and
/// injection tests script single servers.
pub fn cluster() -> Vec<ClientSpec> {
    vec![
        kvbench_cluster::SPEC,
        kvbench_lib_redis::SPEC_CLUSTER_SYNC,
        kvbench_lib_redis::SPEC_CLUSTER_ASYNC,
        kvbench_lib_fred::SPEC_CLUSTER,
    ]
}

/// The client with this name, if any.
pub fn by_name(name: &str) -> Option<ClientSpec> {
    all().into_iter().find(|spec| spec.name == name)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    #[test]
    fn names_are_unique() {
        let mut seen = HashSet::new();
        for spec in super::all().into_iter().chain(super::cluster()) {
            assert!(
                seen.insert(spec.name),
                "duplicate client name {}",
                spec.name
            );
            assert!(
                !spec.transports.is_empty(),
                "{} has no transport",
                spec.name
            );
        }
    }

    #[test]
    fn each_backend_and_transport_has_one_loopback_floor_client() {
        use kvbench_core::{Backend, Transport};
        for backend in [Backend::Redis, Backend::Memcached] {
            for &transport in Transport::ALL {
                let floor: Vec<_> = super::all()
                    .into_iter()
                    .filter(|spec| {
                        spec.loopback_floor && spec.backend == backend && spec.supports(transport)
                    })
                    .map(|spec| spec.name)
                    .collect();
                assert_eq!(floor.len(), 1, "{backend}/{transport}: {floor:?}");
            }
        }
    }
}
