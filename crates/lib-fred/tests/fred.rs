//! fred against a private redis-server, over TCP and a Unix socket.
//!
//! A small stand-in for the conformance kit: hit, miss, binary and empty values, a 1 MiB value,
//! overwrite, `set_ex` (TTL seen by fred's own typed `ttl`, then expiry), delete, `set_many`
//! (1000 items read back on a second connection), an error reply that leaves the connection
//! usable, and a silent server that must time out rather than hang. Then the optional operations
//! (the redis-rs tests' `redis_operations`), and many callers: on one client they share its one
//! connection, on the pool its connections, each gets its own values back, and a transaction
//! among them is not broken into.

use std::time::Duration;

use fred::prelude::{ClientLike, KeysInterface, ListInterface};
use kvbench_core::{Backend, Client, Endpoint, Options, Transport};
use kvbench_lib_fred::{AsyncFred, POOL_CONNECTIONS, SPEC, SPEC_POOL};
use kvbench_servers::{Servers, StartOptions, script};

#[path = "../../lib-redis/tests/redis_operations/mod.rs"]
mod redis_operations;

fn start() -> Servers {
    Servers::start_private(&StartOptions::default()).expect("start private servers")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn connect(endpoint: &Endpoint) -> Box<dyn Client> {
    (SPEC.connect)(endpoint, &Options::default())
        .unwrap_or_else(|err| panic!("fred cannot connect to {endpoint}: {err}"))
}

/// A second fred connection, on its own runtime, to look at the server with.
struct Reference {
    runtime: tokio::runtime::Runtime,
    client: AsyncFred,
}

impl Reference {
    fn connect(endpoint: &Endpoint) -> Reference {
        let runtime = runtime();
        let client = runtime
            .block_on(<AsyncFred>::connect(endpoint, &Options::default()))
            .unwrap();
        Reference { runtime, client }
    }
}

fn exercise(transport: Transport) {
    let servers = start();
    let endpoint = servers
        .endpoint(Backend::Redis, transport)
        .expect("endpoint");
    let mut client = connect(&endpoint);
    let reference = Reference::connect(&endpoint);
    let fred = reference.client.client();
    let key = |name: &str| format!("fred:{transport}:{name}").into_bytes();

    kvbench_servers::script::round_trips(&mut *client, key);
    client.set(&key("k"), b"text").unwrap();
    assert_eq!(
        client.get(&key("k")).unwrap().as_deref(),
        Some(&b"text"[..]),
        "overwrite"
    );
    assert!(client.delete(&key("k")).unwrap());

    let pttl: i64 = reference
        .runtime
        .block_on(fred.pttl(&key("ttl-long")[..]))
        .unwrap();
    kvbench_servers::script::assert_long_ttl(pttl);

    let (keys, values) = kvbench_servers::script::numbered(key, 1000);
    let items = kvbench_servers::script::items(&keys, &values);
    client.set_many(&items).unwrap();
    for (k, v) in keys.iter().zip(&values) {
        let stored: Option<Vec<u8>> = reference.runtime.block_on(fred.get(&k[..])).unwrap();
        assert_eq!(
            stored.as_ref(),
            Some(v),
            "set_many stored {}",
            String::from_utf8_lossy(k)
        );
    }

    let _: i64 = reference
        .runtime
        .block_on(fred.lpush(&key("list")[..], "x"))
        .unwrap();
    kvbench_servers::script::expires_within(&mut *client, key, Duration::from_millis(2100));
    kvbench_servers::script::a_wrongtype_reply_keeps_the_connection(&mut *client, &key("list"));
}

#[test]
fn on_both_transports() {
    Transport::ALL.iter().copied().for_each(exercise);
}

#[test]
fn optional_operations_on_both_transports() {
    let set_maxmemory = |endpoint: &Endpoint, bytes: &str| {
        let reference = Reference::connect(endpoint);
        let args = vec!["SET", "maxmemory", bytes];
        let config = reference.client.client().custom(fred::cmd!("CONFIG"), args);
        reference.runtime.block_on(config).unwrap()
    };
    redis_operations::check_on_both_transports(&[SPEC, SPEC_POOL], set_maxmemory);
}

#[test]
fn a_transaction_among_other_callers_is_one_unbroken_unit() {
    let (_servers, endpoint) = script::private_endpoint(Backend::Redis, Transport::Unix);
    let runtime = runtime();
    for spec in [SPEC, SPEC_POOL] {
        let local = tokio::task::LocalSet::new();
        let shared = runtime.block_on(local.run_until(async {
            let connections = spec.concurrency.connections(64);
            let connect = spec.concurrency.connect_shared().unwrap();
            connect(&endpoint, &Options::default(), connections)
                .await
                .unwrap()
        }));
        let key = |caller: usize, name: &str| format!("{}:{caller}:{name}", spec.name).into_bytes();
        redis_operations::transactions_among_other_callers(&local, &*shared, 64, key);
        runtime.block_on(local);
        // Dropped inside the runtime, so that fred's QUIT is spawned there.
        runtime.block_on(async move { drop(shared) });
    }
}

#[test]
fn native_async_handle_works_in_any_runtime() {
    let servers = start();
    let endpoint = servers.endpoint(Backend::Redis, Transport::Unix).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = <AsyncFred>::connect(&endpoint, &Options::default())
            .await
            .unwrap();
        let clone = client.clone();
        kvbench_servers::async_handles_share_a_connection!(client, clone);
        client.quit().await.unwrap();
    });
}

#[test]
fn callers_share_the_client_or_the_pool() {
    let runtime = runtime();
    for (spec, connections) in [(SPEC, 1), (SPEC_POOL, POOL_CONNECTIONS as u64)] {
        for &transport in Transport::ALL {
            let (_servers, endpoint) = script::private_endpoint(Backend::Redis, transport);
            let shared = script::connections_a_shared_client_opens(&spec, &endpoint, 64);
            let opened = runtime.block_on(shared);
            assert_eq!(opened, connections, "{} over {transport}", spec.name);
        }
    }
}

#[test]
fn silent_server_times_out_instead_of_hanging() {
    // fred's handshake (`PING`) waits for a reply under `internal_command_timeout`, on every
    // connection of the pool.
    kvbench_servers::silent::connecting_times_out(&[SPEC, SPEC_POOL]);
}

/// fred 10.1 without a reconnect policy does not notice that the server closed an idle
/// connection: the client still says it is connected, and every later command waits out the
/// command timeout instead of failing with an I/O error. The single client and the pool alike;
/// the conformance kit's `server_close` meets it with either (the crate's known defect). If
/// this changes, update the defect.
#[test]
fn a_closed_idle_connection_fails_later_commands_only_by_their_timeout() {
    let (_servers, endpoint) = script::private_endpoint(Backend::Redis, Transport::Tcp);
    let runtime = runtime();
    runtime.block_on(async {
        let timeout = Duration::from_millis(300);
        let options = Options::with_timeout(timeout);
        let pool = <AsyncFred<fred::clients::Pool>>::open(&endpoint, &options, POOL_CONNECTIONS)
            .await
            .unwrap();
        let single = <AsyncFred>::connect(&endpoint, &options).await.unwrap();
        let closer = <AsyncFred>::connect(&endpoint, &options).await.unwrap();
        pool.set(b"k", b"v").await.unwrap();
        single.set(b"k", b"v").await.unwrap();
        let closed: i64 = (closer.client())
            .custom(
                fred::cmd!("CLIENT"),
                vec!["KILL", "TYPE", "normal", "SKIPME", "yes"],
            )
            .await
            .unwrap();
        assert_eq!(closed, POOL_CONNECTIONS as i64 + 1, "connections closed");
        // Time enough for the runtime to run fred's reader tasks.
        tokio::time::sleep(Duration::from_millis(200)).await;
        for (name, client) in [
            ("pool", &pool.client().clients()[0]),
            ("single", single.client()),
        ] {
            assert!(client.is_connected(), "{name}: fred says connected");
        }
        for name in ["pool", "single"] {
            for _ in 0..2 {
                let started = std::time::Instant::now();
                let got = match name {
                    "pool" => pool.get(b"k").await,
                    _ => single.get(b"k").await,
                };
                assert!(
                    matches!(got, Err(kvbench_core::Error::Timeout(_))),
                    "{name}: GET after the close gave {got:?}"
                );
                assert!(
                    started.elapsed() >= timeout,
                    "{name}: only after the timeout"
                );
            }
        }
    });
}
