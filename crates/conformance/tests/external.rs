//! Pointed at someone else's servers, the suite touches nothing it did not write and leaves
//! nothing behind.
//!
//! A private Redis and memcached play the user's servers: they are seeded with foreign keys —
//! including the very names the kit would use without a run prefix — and then handed to the kit
//! as external servers (`External`, as `REDIS_URL` / `MEMCACHED_URL` would). After every case of
//! a hand-written and a library client per backend has run, every foreign key must hold its
//! value and the servers must hold nothing else.

use std::sync::Arc;

use kvbench_core::{Backend, ClientSpec, Kind, Transport};
use kvbench_servers::{External, Servers, StartOptions};

/// Keys a careless suite would collide with: the benchmark's seed key, redis-benchmark's key,
/// and the kit's own key names for `clients` without a run prefix.
fn foreign_keys(clients: &[(ClientSpec, Transport)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let kit_keys = clients.iter().flat_map(|(spec, transport)| {
        [
            format!("kit:{}/{transport}/hit:by-client", spec.name),
            format!("kit:{}/{transport}/set_many:item:0", spec.name),
        ]
    });
    let mut keys: Vec<(Vec<u8>, Vec<u8>)> = ["foo", "key:__rand_int__", "kvbench:precious"]
        .into_iter()
        .map(String::from)
        .chain(kit_keys)
        .map(|key| {
            let value = format!("user data under {key}");
            (key.into_bytes(), value.into_bytes())
        })
        .collect();
    keys.extend((0..50).map(|i| {
        (
            format!("user:{i}").into_bytes(),
            format!("profile {i}").into_bytes(),
        )
    }));
    keys
}

fn redis_dbsize(servers: &Servers) -> i64 {
    let endpoint = servers
        .endpoint(Backend::Redis, Transport::Tcp)
        .expect("redis tcp");
    let url = format!(
        "redis://{}/",
        endpoint.to_string().trim_start_matches("tcp://")
    );
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
    redis::cmd("DBSIZE").query(&mut con).unwrap()
}

fn memcached_items(servers: &Servers) -> u64 {
    let endpoint = servers
        .endpoint(Backend::Memcached, Transport::Tcp)
        .expect("memcached tcp");
    let url = format!(
        "memcache://{}",
        endpoint.to_string().trim_start_matches("tcp://")
    );
    let client = memcache::connect(url).unwrap();
    let stats = client.stats().unwrap();
    stats[0].1["curr_items"].parse().unwrap()
}

/// For each backend (reached over the given transport), the first hand-written and the first
/// library client of the suite's list that can reach it, and the first client many callers
/// share if neither is one: what the test needs is one of each, whichever they are.
fn one_client_per_backend_and_kind(
    reached: &[(Backend, Transport)],
) -> Vec<(ClientSpec, Transport)> {
    let all = kvbench_clients::all();
    let mut chosen = Vec::new();
    for &(backend, transport) in reached {
        for kind in [Kind::HandWritten, Kind::Library] {
            let first = all.iter().find(|spec| {
                spec.backend == backend
                    && spec.kind == kind
                    && spec.supports(transport)
                    && spec.slow_round_trip.is_none()
            });
            chosen.extend(first.map(|spec| (*spec, transport)));
        }
        let shared = |spec: &ClientSpec| spec.concurrency.connect_shared().is_some();
        if !chosen
            .iter()
            .any(|(spec, _)| spec.backend == backend && shared(spec))
        {
            let first = all
                .iter()
                .find(|spec| spec.backend == backend && spec.supports(transport) && shared(spec));
            chosen.extend(first.map(|spec| (*spec, transport)));
        }
    }
    chosen
}

/// The cases the kit runs for `specs` on external servers: every behaviour, and for a shared
/// client every shared one but `server_close` (which needs private servers of its own).
fn expected_cases(specs: &[ClientSpec]) -> usize {
    let shared = kvbench_conformance::SHARED_BEHAVIOURS
        .iter()
        .filter(|behaviour| behaviour.name != kvbench_conformance::SERVER_CLOSE)
        .count();
    specs
        .iter()
        .map(|spec| match spec.concurrency.connect_shared() {
            Some(_) => kvbench_conformance::BEHAVIOURS.len() + shared,
            None => kvbench_conformance::BEHAVIOURS.len(),
        })
        .sum()
}

#[test]
fn kit_on_external_servers_leaves_foreign_data_untouched() {
    let owner = Servers::start_private(&StartOptions::default()).expect("start the user's servers");
    // Redis through its Unix socket, memcached through TCP: both URL forms get exercised.
    let redis_endpoint = owner.endpoint(Backend::Redis, Transport::Unix).unwrap();
    let memcached_endpoint = owner.endpoint(Backend::Memcached, Transport::Tcp).unwrap();
    let clients = one_client_per_backend_and_kind(&[
        (Backend::Redis, Transport::Unix),
        (Backend::Memcached, Transport::Tcp),
    ]);
    assert!(
        (4..=6).contains(&clients.len()),
        "a hand-written and a library client per backend, and a shared one: {clients:?}"
    );

    let foreign = foreign_keys(&clients);
    for (backend, endpoint) in [
        (Backend::Redis, &redis_endpoint),
        (Backend::Memcached, &memcached_endpoint),
    ] {
        let mut reference = kvbench_conformance::Reference::connect(backend, endpoint).unwrap();
        for (key, value) in &foreign {
            reference.set(key, value).unwrap();
        }
    }
    assert_eq!(redis_dbsize(&owner), foreign.len() as i64);
    assert_eq!(memcached_items(&owner), foreign.len() as u64);

    let guest = Arc::new(
        Servers::start_with(
            Some(External::new(redis_endpoint.clone())),
            Some(External::new(memcached_endpoint.clone())),
            &StartOptions::default(),
        )
        .expect("use them as external servers"),
    );
    assert!(guest.key_prefix(Backend::Redis).starts_with("kvbench:"));
    let specs: Vec<ClientSpec> = clients.iter().map(|(spec, _)| *spec).collect();
    let cases: Vec<_> = kvbench_conformance::cases(&guest, &specs)
        .into_iter()
        .filter(|case| case.unavailable.is_none())
        .collect();
    assert_eq!(cases.len(), expected_cases(&specs));
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| case.run().err().map(|err| format!("{}: {err}", case.name)))
        .collect();
    assert!(
        failures.is_empty(),
        "kit cases failed on external servers:\n{}",
        failures.join("\n")
    );
    drop(guest);

    for (backend, endpoint) in [
        (Backend::Redis, &redis_endpoint),
        (Backend::Memcached, &memcached_endpoint),
    ] {
        let mut reference = kvbench_conformance::Reference::connect(backend, endpoint).unwrap();
        for (key, value) in &foreign {
            let held = reference.get(key).unwrap();
            assert_eq!(
                held.as_deref(),
                Some(&value[..]),
                "{backend} foreign key {}",
                key.escape_ascii()
            );
        }
    }
    assert_eq!(
        redis_dbsize(&owner),
        foreign.len() as i64,
        "redis holds only the foreign keys"
    );
    assert_eq!(
        memcached_items(&owner),
        foreign.len() as u64,
        "memcached holds only the foreign keys"
    );
}
