//! Both redis-rs clients against a private redis-server, over TCP and a Unix socket.
//!
//! A small stand-in for the conformance kit: hit, miss, binary and empty values, a 1 MiB value,
//! overwrite, `set_ex` (TTL seen by an independent connection, then expiry), delete, `set_many`
//! (1000 items read back on a second connection), an error reply that leaves the connection
//! usable, and a silent server that must time out rather than hang. Then the optional operations
//! (`redis_operations`), and many callers on the multiplexed connection: each gets its own values
//! back, over one connection, and a transaction among them is not broken into.

use std::time::Duration;

use kvbench_core::{Backend, ClientSpec, Endpoint, Options, Transport};
use kvbench_lib_redis::{AsyncRedis, SPEC_ASYNC, SPEC_SYNC, url};
use kvbench_servers::{Servers, StartOptions, script};

mod redis_operations;

/// Callers sharing one client at once.
const CALLERS: usize = 64;

fn start() -> Servers {
    Servers::start_private(&StartOptions::default()).expect("start private servers")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// An independent redis-rs connection to look at the server with.
fn reference(endpoint: &Endpoint) -> redis::Connection {
    redis::Client::open(url(endpoint))
        .and_then(|client| client.get_connection())
        .expect("reference connection")
}

fn exercise(spec: &ClientSpec, transport: Transport) {
    let (_servers, endpoint) = script::private_endpoint(Backend::Redis, transport);
    let mut client = script::connect(spec, &endpoint);
    let mut reference = reference(&endpoint);
    let key = |name: &str| format!("{}:{transport}:{name}", spec.name).into_bytes();

    script::round_trips(&mut *client, key);

    let pttl: i64 = redis::cmd("PTTL")
        .arg(key("ttl-long"))
        .query(&mut reference)
        .unwrap();
    script::assert_long_ttl(pttl);

    let (keys, values) = script::numbered(key, 1000);
    let items = script::items(&keys, &values);
    client.set_many(&items).unwrap();
    let stored: Vec<Option<Vec<u8>>> = redis::cmd("MGET").arg(&keys).query(&mut reference).unwrap();
    let expected: Vec<Option<Vec<u8>>> = values.into_iter().map(Some).collect();
    assert!(stored == expected, "set_many stored every item");

    let _: () = redis::cmd("LPUSH")
        .arg(key("list"))
        .arg("x")
        .query(&mut reference)
        .unwrap();
    script::a_wrongtype_reply_keeps_the_connection(&mut *client, &key("list"));

    let wait = Duration::from_millis(2100);
    script::expires_within(&mut *client, key, wait);
}

#[test]
fn sync_on_both_transports() {
    for transport in Transport::ALL {
        exercise(&SPEC_SYNC, *transport);
    }
}

#[test]
fn async_on_both_transports() {
    for transport in Transport::ALL {
        exercise(&SPEC_ASYNC, *transport);
    }
}

#[test]
fn optional_operations_on_both_transports() {
    let set_maxmemory = |endpoint: &Endpoint, bytes: &str| {
        let config = redis::cmd("CONFIG")
            .arg(&["SET", "maxmemory", bytes])
            .clone();
        config.exec(&mut reference(endpoint)).unwrap();
    };
    redis_operations::check_on_both_transports(&[SPEC_SYNC, SPEC_ASYNC], set_maxmemory);
}

#[test]
fn a_transaction_on_the_multiplexed_connection_is_one_unbroken_unit() {
    let (_servers, endpoint) = script::private_endpoint(Backend::Redis, Transport::Unix);
    let runtime = runtime();
    let local = tokio::task::LocalSet::new();
    let shared = runtime.block_on(local.run_until(async {
        let connect = SPEC_ASYNC.concurrency.connect_shared().unwrap();
        connect(&endpoint, &Options::default(), 1).await.unwrap()
    }));
    let key = |caller: usize, name: &str| format!("caller:{caller}:{name}").into_bytes();
    redis_operations::transactions_among_other_callers(&local, &*shared, CALLERS, key);
    runtime.block_on(local);
}

#[test]
fn silent_server_times_out_instead_of_hanging() {
    // redis-rs talks during the handshake (`CLIENT SETINFO`), so connecting already has to wait
    // for a reply.
    kvbench_servers::silent::connecting_times_out(&[SPEC_SYNC, SPEC_ASYNC]);
}

#[test]
fn native_async_handle_works_in_any_runtime() {
    let servers = start();
    let endpoint = servers.endpoint(Backend::Redis, Transport::Unix).unwrap();
    runtime().block_on(async {
        let mut client = <AsyncRedis>::connect(&endpoint, &Options::default())
            .await
            .unwrap();
        let mut clone = client.clone();
        kvbench_servers::async_handles_share_a_connection!(client, clone);
    });
}

#[test]
fn callers_of_the_async_client_share_one_connection() {
    for &transport in Transport::ALL {
        let (_servers, endpoint) = script::private_endpoint(Backend::Redis, transport);
        let opened = runtime().block_on(script::connections_a_shared_client_opens(
            &SPEC_ASYNC,
            &endpoint,
            CALLERS,
        ));
        assert_eq!(opened, 1, "{CALLERS} callers over {transport}");
    }
}
