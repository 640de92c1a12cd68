//! The network floor against real servers. No remote host is reachable from the tests, so the
//! remote path is forced: the measurement is called directly against the private servers, and a
//! whole run is pointed at servers on this machine by URL with `KVBENCH_TREAT_AS_REMOTE=1`.
//! Either way the same code measures the same round trips a remote host would get.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use kvbench_bench_suite::matrix::Mode;
use kvbench_bench_suite::network_floor::{self, Budget, NETWORK_FLOOR};
use kvbench_core::{Backend, Endpoint, Error, Options, Transport};
use kvbench_results::{Kind, LOOPBACK_FLOOR, Status};
use kvbench_servers::{Servers, StartOptions};

use common::run_matrix;

#[test]
fn each_private_server_has_a_floor_measured_call_by_call() {
    let servers = Servers::start_private(&StartOptions::default()).expect("private servers");
    let budget = Budget {
        warm_up: 20,
        calls: 500,
        time: Duration::from_secs(1),
    };
    for backend in [Backend::Redis, Backend::Memcached] {
        for transport in [Transport::Tcp, Transport::Unix] {
            let endpoint = servers.endpoint(backend, transport).unwrap();
            let what = format!("{backend} over {transport}");
            let floor = network_floor::measure(backend, &endpoint, budget, &Options::default())
                .unwrap_or_else(|err| panic!("{what}: {err}"));
            assert!(floor.median_ns > 0, "{what}: {floor:?}");
            assert!(floor.p99_ns >= floor.median_ns, "{what}: {floor:?}");
            assert!(
                (Budget::MIN_CALLS..=500).contains(&floor.calls),
                "{what}: {floor:?}"
            );
            assert_eq!(floor.warm_up, 20);
            let command = match backend {
                Backend::Redis => "PING",
                Backend::Memcached => "version",
                Backend::RedisCluster => unreachable!("the loop is over the single servers"),
            };
            assert_eq!(floor.command, command);
            assert!(!floor.address.is_empty());
        }
    }
}

/// A host that accepts and never answers fails the measurement with a timeout, in about the
/// timeout: the run goes on instead of hanging.
#[test]
fn a_silent_host_times_out_instead_of_hanging() {
    let servers = Servers::start_private(&StartOptions::default()).expect("private servers");
    let silent = kvbench_servers::silent::silent_endpoints(servers.dir().unwrap()).unwrap();
    let options = Options::with_timeout(Duration::from_millis(300));
    for endpoint in &silent {
        for backend in [Backend::Redis, Backend::Memcached] {
            let started = Instant::now();
            let err = network_floor::measure(backend, endpoint, Budget::row(Mode::Test), &options)
                .expect_err("a silent host has no floor");
            assert!(
                matches!(err, Error::Timeout(_)),
                "{backend} {endpoint}: {err}"
            );
            assert!(started.elapsed() < kvbench_servers::silent::HANG_GUARD);
        }
    }
    // Nobody listening: a connect error, not a panic.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = Endpoint::Tcp(closed.local_addr().unwrap().to_string());
    drop(closed);
    let err = network_floor::measure(Backend::Redis, &endpoint, Budget::row(Mode::Test), &options)
        .expect_err("nothing listens");
    assert!(matches!(err, Error::Connect { .. }), "{err}");
}

/// A server that answers something else than the smallest command's reply is a protocol error.
#[test]
fn a_wrong_answer_is_a_protocol_error() {
    for (backend, reply) in [
        (Backend::Redis, &b"+OK\r\n"[..]),
        (Backend::Memcached, &b"STORED\r\n"[..]),
        (Backend::Memcached, &b"VERSION\n"[..]),
    ] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = Endpoint::Tcp(listener.local_addr().unwrap().to_string());
        std::thread::spawn(move || {
            if let Ok((mut stream, _)) = listener.accept() {
                let mut buf = [0u8; 64];
                while matches!(stream.read(&mut buf), Ok(n) if n > 0) {
                    let _ = stream.write_all(reply);
                }
            }
        });
        let options = Options::with_timeout(Duration::from_secs(2));
        let err = network_floor::measure(backend, &endpoint, Budget::row(Mode::Test), &options)
            .expect_err("a wrong reply");
        assert!(
            matches!(err, Error::Protocol(_)),
            "{backend} answered {}: {err}",
            reply.escape_ascii()
        );
    }
}

/// A whole run against external servers it is told to treat as remote: each server's floor is
/// in the environment, its one-caller request/response cells have a network floor row and no
/// loopback floor row, and the servers' placement reads unknown.
#[test]
fn a_run_against_remote_servers_reports_their_network_floor() {
    let owner = Servers::start_private(&StartOptions::default()).expect("the user's servers");
    let tcp = |backend| match owner.endpoint(backend, Transport::Tcp) {
        Some(Endpoint::Tcp(addr)) => addr,
        other => panic!("{backend} over TCP: {other:?}"),
    };
    let run = run_matrix(
        "remote",
        &[
            ("REDIS_URL", format!("redis://{}/", tcp(Backend::Redis))),
            (
                "MEMCACHED_URL",
                format!("memcache://{}", tcp(Backend::Memcached)),
            ),
            (network_floor::TREAT_AS_REMOTE_VAR, "1".to_string()),
            ("CELLS", "get_miss".to_string()),
            ("CLIENTS", "raw-tcp,memcached-text".to_string()),
        ],
    );
    assert!(run.status.success(), "stderr:\n{}", run.stderr);
    common::assert_every_pair_listed(&run);
    let results = &run.results;
    for (backend, server) in [
        ("redis", &results.run.servers.redis),
        ("memcached", &results.run.servers.memcached),
    ] {
        assert!(server.external && server.remote, "{backend}: {server:?}");
        let floor = server
            .network_floor
            .as_ref()
            .expect("the environment's floor");
        assert!(floor.median_ns > 0, "{backend}: {floor:?}");
        assert!(floor.p99_ns >= floor.median_ns, "{backend}: {floor:?}");
        assert!(floor.calls >= Budget::MIN_CALLS, "{backend}: {floor:?}");
    }
    let placement = results.run.describe_placement();
    assert!(
        placement.contains("redis: unknown") && placement.contains("memcached: unknown"),
        "{placement}"
    );
    assert!(
        !results.rows.iter().any(|row| row.client == LOOPBACK_FLOOR),
        "no loopback floor for remote servers"
    );
    for cell in ["redis/get_miss/none/tcp", "memcached/get_miss/none/tcp"] {
        let floor = results
            .rows
            .iter()
            .find(|row| row.cell == cell && row.client == NETWORK_FLOOR)
            .unwrap_or_else(|| panic!("{cell} has a network floor row"));
        assert_eq!((floor.status, floor.kind), (Status::Ok, Kind::Baseline));
        // A contender of the paired rounds like any other, with a cost pass.
        assert!(!floor.round_ops_per_sec.is_empty() && floor.ratio_to_reference.is_some());
        assert!(
            floor
                .timing
                .as_deref()
                .unwrap_or_default()
                .contains("paired")
        );
        assert!(floor.cpu_ns_per_op.is_some() && floor.allocs_per_op.is_some());
        let latency = floor.latency_ns.expect("percentiles");
        assert!(
            latency.p50 > 0 && latency.p99 >= latency.p50,
            "{cell}: {latency:?}"
        );
    }
}

/// Without the hook, servers on this machine given by URL keep the loopback floor.
#[test]
fn a_run_against_servers_on_this_machine_keeps_the_loopback_floor() {
    let owner = Servers::start_private(&StartOptions::default()).expect("the user's servers");
    let Some(Endpoint::Tcp(addr)) = owner.endpoint(Backend::Redis, Transport::Tcp) else {
        panic!("redis over TCP");
    };
    let run = run_matrix(
        "loopback-url",
        &[
            ("REDIS_URL", format!("redis://{addr}/")),
            ("CELLS", "redis/get_miss/none/tcp".to_string()),
            ("CLIENTS", "raw-tcp".to_string()),
        ],
    );
    assert!(run.status.success(), "stderr:\n{}", run.stderr);
    let redis = &run.results.run.servers.redis;
    assert!(redis.external && !redis.remote && redis.network_floor.is_none());
    let clients: Vec<&str> = (run.results.rows.iter())
        .map(|row| row.client.as_str())
        .collect();
    assert!(clients.contains(&LOOPBACK_FLOOR), "{clients:?}");
    assert!(!clients.contains(&NETWORK_FLOOR), "{clients:?}");
}
