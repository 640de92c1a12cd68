//! Both redis-rs clients against a private redis-server, over TCP and a Unix socket.
//!
//! A small stand-in for the conformance kit: hit, miss, binary and empty values, a 1 MiB value,
//! overwrite, `set_ex` (TTL seen by an independent connection, then expiry), delete, `set_many`
//! (1000 items read back on a second connection), an error reply that leaves the connection
//! usable, and a silent server that must time out rather than hang.

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::thread;
use std::time::{Duration, Instant};

use kvbench_core::{Backend, Client, ClientSpec, Endpoint, Error, Options, Transport};
use kvbench_lib_redis::{AsyncRedis, SPEC_ASYNC, SPEC_SYNC, url};
use kvbench_servers::{Servers, StartOptions};

fn start() -> Servers {
    Servers::start_private(&StartOptions::default()).expect("start private servers")
}

fn connect(spec: &ClientSpec, endpoint: &Endpoint) -> Box<dyn Client> {
    (spec.connect)(endpoint, &Options::default())
        .unwrap_or_else(|err| panic!("{} cannot connect to {endpoint}: {err}", spec.name))
}

/// An independent redis-rs connection to look at the server with.
fn reference(endpoint: &Endpoint) -> redis::Connection {
    redis::Client::open(url(endpoint))
        .and_then(|client| client.get_connection())
        .expect("reference connection")
}

fn exercise(spec: &ClientSpec, transport: Transport) {
    let servers = start();
    let endpoint = servers
        .endpoint(Backend::Redis, transport)
        .expect("endpoint");
    let mut client = connect(spec, &endpoint);
    let mut reference = reference(&endpoint);
    let key = |name: &str| format!("{}:{transport}:{name}", spec.name).into_bytes();

    assert_eq!(client.get(&key("missing")).unwrap(), None, "miss");

    let binary: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    client.set(&key("k"), &binary).unwrap();
    assert_eq!(
        client.get(&key("k")).unwrap(),
        Some(binary),
        "binary-safe hit"
    );
    client.set(&key("k"), b"").unwrap();
    assert_eq!(
        client.get(&key("k")).unwrap(),
        Some(Vec::new()),
        "empty value overwrites"
    );
    let large = vec![b'x'; 1 << 20];
    client.set(&key("large"), &large).unwrap();
    assert_eq!(
        client.get(&key("large")).unwrap(),
        Some(large),
        "1 MiB value"
    );

    assert!(client.delete(&key("k")).unwrap(), "delete existing");
    assert!(!client.delete(&key("k")).unwrap(), "delete missing");
    assert_eq!(client.get(&key("k")).unwrap(), None, "gone after delete");

    client.set_ex(&key("ttl"), b"soon gone", 1).unwrap();
    let ttl: i64 = redis::cmd("TTL")
        .arg(key("ttl"))
        .query(&mut reference)
        .unwrap();
    assert_eq!(ttl, 1, "TTL as the server sees it");
    assert_eq!(
        client.get(&key("ttl")).unwrap().as_deref(),
        Some(&b"soon gone"[..])
    );

    let keys: Vec<Vec<u8>> = (0..1000).map(|i| key(&format!("many:{i}"))).collect();
    let values: Vec<Vec<u8>> = (0..1000)
        .map(|i| format!("value {i}").into_bytes())
        .collect();
    let items = kvbench_core::script::items(&keys, &values);
    client.set_many(&items).unwrap();
    let stored: Vec<Option<Vec<u8>>> = redis::cmd("MGET").arg(&keys).query(&mut reference).unwrap();
    let expected: Vec<Option<Vec<u8>>> = values.into_iter().map(Some).collect();
    assert!(stored == expected, "set_many stored every item");

    let _: () = redis::cmd("LPUSH")
        .arg(key("list"))
        .arg("x")
        .query(&mut reference)
        .unwrap();
    match client.get(&key("list")) {
        Err(Error::Server(message)) => assert!(message.contains("WRONGTYPE"), "{message}"),
        other => panic!("GET on a list should be a WRONGTYPE server error, got {other:?}"),
    }
    assert_eq!(
        client.get(&key("missing")).unwrap(),
        None,
        "usable after the error reply"
    );
    client.set(&key("after"), b"ok").unwrap();

    thread::sleep(Duration::from_millis(2100));
    assert_eq!(client.get(&key("ttl")).unwrap(), None, "expired");
}

#[test]
fn sync_over_tcp() {
    exercise(&SPEC_SYNC, Transport::Tcp);
}

#[test]
fn sync_over_unix() {
    exercise(&SPEC_SYNC, Transport::Unix);
}

#[test]
fn async_over_tcp() {
    exercise(&SPEC_ASYNC, Transport::Tcp);
}

#[test]
fn async_over_unix() {
    exercise(&SPEC_ASYNC, Transport::Unix);
}

/// A server that accepts connections and never answers.
fn silent_endpoints(dir: &tempfile::TempDir) -> Vec<Endpoint> {
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp_addr = tcp.local_addr().unwrap().to_string();
    let path = dir.path().join("silent.sock");
    let unix = UnixListener::bind(&path).unwrap();
    // Hold every accepted socket open and read (discard) what the client sends.
    thread::spawn(move || {
        for mut stream in tcp.incoming().flatten() {
            thread::spawn(move || stream.read_to_end(&mut Vec::new()));
        }
    });
    thread::spawn(move || {
        for mut stream in unix.incoming().flatten() {
            thread::spawn(move || stream.read_to_end(&mut Vec::new()));
        }
    });
    vec![Endpoint::Tcp(tcp_addr), Endpoint::Unix(path)]
}

#[test]
fn silent_server_times_out_instead_of_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let short = Duration::from_millis(300);
    let options = Options {
        connect_timeout: short,
        read_timeout: short,
        write_timeout: short,
    };
    for endpoint in silent_endpoints(&dir) {
        for spec in [SPEC_SYNC, SPEC_ASYNC] {
            let started = Instant::now();
            // redis-rs talks during the handshake (`CLIENT SETINFO`), so connecting already
            // has to wait for a reply.
            let err = (spec.connect)(&endpoint, &options).err();
            let elapsed = started.elapsed();
            assert!(
                matches!(&err, Some(Error::Connect { source, .. }) if source.kind() == std::io::ErrorKind::TimedOut),
                "{} on {endpoint}: {err:?}",
                spec.name
            );
            assert!(
                elapsed < Duration::from_secs(3),
                "{} took {elapsed:?}",
                spec.name
            );
        }
    }
}

#[test]
fn native_async_handle_works_in_any_runtime() {
    let servers = start();
    let endpoint = servers.endpoint(Backend::Redis, Transport::Unix).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = AsyncRedis::connect(&endpoint, &Options::default())
            .await
            .unwrap();
        let mut clone = client.clone();
        client.set(b"native", b"async").await.unwrap();
        assert_eq!(
            clone.get(b"native").await.unwrap().as_deref(),
            Some(&b"async"[..])
        );
        let items: Vec<(&[u8], &[u8])> = vec![(b"a", b"1"), (b"b", b"2")];
        clone.set_many(&items).await.unwrap();
        assert_eq!(client.get(b"b").await.unwrap().as_deref(), Some(&b"2"[..]));
        assert!(client.delete(b"a").await.unwrap());
    });
}
