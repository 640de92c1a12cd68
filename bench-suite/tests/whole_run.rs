//! Pointed at someone else's servers (`REDIS_URL` / `MEMCACHED_URL`), the quick matrix, run
//! through the `kvbench-matrix` binary (the same code as `cargo bench --bench matrix`), leaves every
//! foreign key and value as it was, and no key of its own behind.

mod common;

use common::{assert_every_pair_listed, run_matrix};
use kvbench_bench_suite::results::{Row, Status};
use kvbench_conformance::Reference;
use kvbench_core::{Backend, Endpoint, Transport};
use kvbench_results::Kind;
use kvbench_servers::{Servers, StartOptions};

/// Keys a careless suite would collide with: the cells' own key names without a run prefix,
/// redis-benchmark's key, and plain user data.
fn foreign_keys() -> Vec<(Vec<u8>, Vec<u8>)> {
    let named = [
        "foo",
        "missing",
        "value:1048576",
        "setex:102400",
        "key:__rand_int__",
    ];
    named
        .iter()
        .map(|key| key.to_string())
        .chain((0..50).map(|i| format!("user:{i}")))
        .map(|key| {
            let value = format!("user data under {key}");
            (key.into_bytes(), value.into_bytes())
        })
        .collect()
}

/// Every key the Redis server holds (the test's server holds a few dozen).
fn redis_keys(endpoint: &Endpoint) -> Vec<Vec<u8>> {
    let Endpoint::Tcp(addr) = endpoint else {
        panic!("the test reaches redis over TCP")
    };
    let client = redis::Client::open(format!("redis://{addr}/")).unwrap();
    let mut con = client.get_connection().unwrap();
    let mut keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
    keys.sort();
    keys
}

fn memcached_items(endpoint: &Endpoint) -> u64 {
    let Endpoint::Unix(path) = endpoint else {
        panic!("the test reaches memcached over its Unix socket")
    };
    let client = memcache::connect(format!("memcache://{}", path.display())).unwrap();
    let stats = client.stats().unwrap();
    stats[0].1["curr_items"].parse().unwrap()
}

#[test]
fn the_quick_matrix_on_external_servers_leaves_foreign_data_untouched() {
    // These play the user's servers: the run is told about them only through URLs.
    // A cell connects every contender at once (about 2,000 connections at 256 callers): these
    // users allow that many, as Redis does by default (memcached's default is 1,024).
    let options = StartOptions {
        max_connections: 4096,
        ..StartOptions::default()
    };
    let owner = Servers::start_private(&options).expect("start the user's servers");
    let redis_endpoint = owner.endpoint(Backend::Redis, Transport::Tcp).unwrap();
    let memcached_endpoint = owner.endpoint(Backend::Memcached, Transport::Unix).unwrap();
    let foreign = foreign_keys();
    for (backend, endpoint) in [
        (Backend::Redis, &redis_endpoint),
        (Backend::Memcached, &memcached_endpoint),
    ] {
        let mut reference = Reference::connect(backend, endpoint).unwrap();
        for (key, value) in &foreign {
            reference.set(key, value).unwrap();
        }
    }
    assert_eq!(redis_keys(&redis_endpoint).len(), foreign.len());
    assert_eq!(memcached_items(&memcached_endpoint), foreign.len() as u64);

    let Endpoint::Tcp(redis_addr) = &redis_endpoint else {
        unreachable!()
    };
    let Endpoint::Unix(memcached_path) = &memcached_endpoint else {
        unreachable!()
    };
    let run = run_matrix(
        "external",
        &[
            ("MODE", "quick".to_string()),
            ("REDIS_URL", format!("redis://{redis_addr}/")),
            (
                "MEMCACHED_URL",
                format!("unix://{}", memcached_path.display()),
            ),
        ],
    );
    let results = &run.results;
    assert!(
        run.status.success(),
        "the run passes; stderr:\n{}",
        run.stderr
    );
    assert_every_pair_listed(&run);
    assert!(results.run.servers.redis.external && results.run.servers.memcached.external);

    // Every quick cell the URLs reach ran, with every client; the others say why not.
    let served: Vec<&Row> = results
        .rows
        .iter()
        .filter(|row| row.status == Status::Ok)
        .collect();
    for cell in [
        "redis/get/3B/tcp",
        "redis/pipeline_set/100000/tcp",
        "memcached/get/3B/unix",
    ] {
        assert!(
            served
                .iter()
                .any(|row| row.cell == cell && row.kind == Kind::HandWritten),
            "{cell} ran"
        );
    }
    for row in &results.rows {
        match row.status.as_str() {
            "ok" => {}
            "unsupported" => assert!(row.error.is_some(), "{} {}", row.cell, row.client),
            other => panic!("{} {}: {other}: {:?}", row.cell, row.client, row.error),
        }
    }
    let unreachable = results
        .rows
        .iter()
        .find(|row| row.cell == "redis/get/3B/unix")
        .expect("the Unix Redis cell is listed");
    assert!(
        unreachable
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("not reachable over unix")
    );

    for (backend, endpoint) in [
        (Backend::Redis, &redis_endpoint),
        (Backend::Memcached, &memcached_endpoint),
    ] {
        let mut reference = Reference::connect(backend, endpoint).unwrap();
        for (key, value) in &foreign {
            assert_eq!(
                reference.get(key).unwrap().as_deref(),
                Some(&value[..]),
                "{backend} foreign key {}",
                key.escape_ascii()
            );
        }
    }
    let mut foreign_names: Vec<Vec<u8>> = foreign.iter().map(|(key, _)| key.clone()).collect();
    foreign_names.sort();
    let left: Vec<String> = (redis_keys(&redis_endpoint).into_iter())
        .filter(|key| !foreign_names.contains(key))
        .map(|key| key.escape_ascii().to_string())
        .collect();
    assert!(
        left.is_empty(),
        "redis holds the foreign keys and nothing else; left behind: {left:?}"
    );
    assert_eq!(
        memcached_items(&memcached_endpoint),
        foreign.len() as u64,
        "memcached holds the foreign keys and nothing else"
    );
}
