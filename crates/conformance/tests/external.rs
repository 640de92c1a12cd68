//! Pointed at someone else's servers, the suite touches nothing it did not write and leaves
//! nothing behind.
//!
//! A private Redis and memcached play the user's servers: they are seeded with foreign keys —
//! including the very names the kit would use without a run prefix — and then handed to the kit
//! as external servers (`External`, as `REDIS_URL` / `MEMCACHED_URL` would). After every case of
//! a hand-written and a library client per backend has run, every foreign key must hold its
//! value and the servers must hold nothing else.

use std::sync::Arc;

use kvbench_core::{Backend, Transport};
use kvbench_servers::{External, Servers, StartOptions};

/// Keys a careless suite would collide with: the benchmark's seed key, redis-benchmark's key,
/// and the kit's own key names without a run prefix.
fn foreign_keys() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut keys: Vec<(Vec<u8>, Vec<u8>)> = [
        "foo",
        "key:__rand_int__",
        "kit:raw-unix/unix/hit:by-client",
        "kit:memcached-text/tcp/set_many:item:0",
        "kvbench:precious",
    ]
    .iter()
    .map(|key| {
        (
            key.as_bytes().to_vec(),
            format!("user data under {key}").into_bytes(),
        )
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

#[test]
fn kit_on_external_servers_leaves_foreign_data_untouched() {
    let owner = Servers::start_private(&StartOptions::default()).expect("start the user's servers");
    // Redis through its Unix socket, memcached through TCP: both URL forms get exercised.
    let redis_endpoint = owner.endpoint(Backend::Redis, Transport::Unix).unwrap();
    let memcached_endpoint = owner.endpoint(Backend::Memcached, Transport::Tcp).unwrap();

    let foreign = foreign_keys();
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
    let clients: Vec<_> = kvbench_clients::all()
        .into_iter()
        .filter(|spec| {
            [
                "raw-unix",
                "redis-rs",
                "memcached-text",
                "memcache/no-check",
            ]
            .contains(&spec.name)
        })
        .collect();
    assert_eq!(clients.len(), 4, "the clients this test names exist");

    let cases: Vec<_> = kvbench_conformance::cases(&guest, &clients)
        .into_iter()
        .filter(|case| case.unavailable.is_none())
        .collect();
    assert_eq!(cases.len(), 4 * kvbench_conformance::BEHAVIOURS.len());
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
