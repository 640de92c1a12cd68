//! The multiplexer against private servers, over both protocols and both transports: the
//! contract's round trips through the blocking face, handles sharing one connection, many
//! callers' commands in fewer writes than commands, a call dropped in flight, and a connection
//! the server closes. (The conformance kit runs its cases over both specs as well, the
//! shared-client ones included.)

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use kvbench_core::{Backend, ClientSpec, Endpoint, Error, Options, Transport};
use kvbench_multiplexed::{Multiplexed, Protocol, Resp, SPEC, SPEC_MEMCACHED, Text};
use kvbench_servers::{Servers, StartOptions, script};
use tokio::io::AsyncWrite;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
}

fn start() -> Servers {
    Servers::start_private(&StartOptions::default()).expect("start private servers")
}

#[test]
fn the_contract_through_the_blocking_face() {
    let servers = start();
    for spec in [SPEC, SPEC_MEMCACHED] {
        for &transport in Transport::ALL {
            let endpoint = servers.endpoint(spec.backend, transport).unwrap();
            let mut client = script::connect(&spec, &endpoint);
            let key = |name: &str| format!("{transport}:{name}").into_bytes();
            script::round_trips(&mut *client, key);
            let (keys, values) = script::numbered(key, 10_000);
            client.set_many(&script::items(&keys, &values)).unwrap();
            for (key, value) in keys.iter().zip(&values).step_by(997) {
                assert_eq!(
                    client.get(key).unwrap().as_ref(),
                    Some(value),
                    "{}",
                    spec.name
                );
            }
            if spec.backend == Backend::Redis {
                let list = key("list");
                redis::Client::open(endpoint.redis_url())
                    .and_then(|client| client.get_connection())
                    .and_then(|mut con| redis::cmd("RPUSH").arg(&list).arg("x").exec(&mut con))
                    .unwrap();
                script::a_wrongtype_reply_keeps_the_connection(&mut *client, &list);
            }
        }
    }
}

/// A stream that counts its `write`s (each a `write` system call on a socket) and passes
/// everything through.
struct CountedWrites<W> {
    inner: W,
    writes: Arc<AtomicUsize>,
}

impl<W: AsyncWrite + Unpin> AsyncWrite for CountedWrites<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if polled.is_ready() {
            self.writes.fetch_add(1, Ordering::SeqCst);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A multiplexed connection over a Unix socket whose writes are counted.
async fn counted<P: Protocol>(endpoint: &Endpoint) -> (Multiplexed<P>, Arc<AtomicUsize>) {
    let Endpoint::Unix(path) = endpoint else {
        panic!("want a Unix endpoint, got {endpoint}");
    };
    let stream = tokio::net::UnixStream::connect(path).await.unwrap();
    let (read_half, write_half) = stream.into_split();
    let writes = Arc::new(AtomicUsize::new(0));
    let write_half = CountedWrites {
        inner: write_half,
        writes: Arc::clone(&writes),
    };
    let client = Multiplexed::over(read_half, write_half, &Options::default());
    (client, writes)
}

/// Callers that queue their commands while the writer waits for its turn are sent together:
/// the batch grows with the number of callers, with no timer and no setting.
fn callers_share_writes<P: Protocol>(backend: Backend) {
    const CALLERS: usize = 64;
    let servers = start();
    let endpoint = servers.endpoint(backend, Transport::Unix).unwrap();
    let runtime = runtime();
    let local = tokio::task::LocalSet::new();
    let writes = local.block_on(&runtime, async {
        let (client, writes) = counted::<P>(&endpoint).await;
        let callers: Vec<_> = (0..CALLERS)
            .map(|id| {
                let client = client.clone();
                tokio::task::spawn_local(async move {
                    let key = format!("share:{id}").into_bytes();
                    client.set(&key, key.as_slice()).await.unwrap();
                    assert_eq!(client.get(&key).await.unwrap(), Some(key));
                })
            })
            .collect();
        for caller in callers {
            caller.await.unwrap();
        }
        writes.load(Ordering::SeqCst)
    });
    // Each caller's SET, then each caller's GET, queued while the writer waited its turn.
    assert!(
        writes < CALLERS,
        "{backend}: {} commands from {CALLERS} callers took {writes} writes",
        2 * CALLERS
    );
}

#[test]
fn callers_share_writes_over_resp() {
    callers_share_writes::<Resp>(Backend::Redis);
}

#[test]
fn callers_share_writes_over_memcached_text() {
    callers_share_writes::<Text>(Backend::Memcached);
}

/// Polls a call once, which queues it, and drops it.
fn queue_and_drop<T>(call: impl Future<Output = T>) {
    let polled = Box::pin(call)
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()));
    assert!(
        polled.is_pending(),
        "a first poll queues a call, it cannot answer it"
    );
}

/// A GET and a SET, each queued and dropped: their replies are read and thrown away, and each
/// next call gets its own (a GET the status of a dropped SET, or its value, would show).
async fn dropped_call_leaves_the_next_reply_alone<P: Protocol>(client: Multiplexed<P>) {
    client.set(b"first", b"first value").await.unwrap();
    client.set(b"second", b"second value").await.unwrap();
    queue_and_drop(client.get(b"first"));
    let second = client.get(b"second").await.unwrap();
    assert_eq!(second.as_deref(), Some(&b"second value"[..]));
    queue_and_drop(client.set(b"third", b"third value"));
    let second = client.get(b"second").await.unwrap();
    assert_eq!(second.as_deref(), Some(&b"second value"[..]));
}

#[test]
fn a_dropped_call_leaves_the_next_reply_to_the_next_call() {
    let servers = start();
    let runtime = runtime();
    for &transport in Transport::ALL {
        let options = Options::default();
        let redis = servers.endpoint(Backend::Redis, transport).unwrap();
        let memcached = servers.endpoint(Backend::Memcached, transport).unwrap();
        runtime.block_on(async {
            let client = Multiplexed::<Resp>::connect(&redis, &options)
                .await
                .unwrap();
            dropped_call_leaves_the_next_reply_alone(client).await;
            let client = Multiplexed::<Text>::connect(&memcached, &options)
                .await
                .unwrap();
            dropped_call_leaves_the_next_reply_alone(client).await;
        });
    }
}

#[test]
fn native_async_handles_share_a_connection() {
    let servers = start();
    let runtime = runtime();
    for spec in [SPEC, SPEC_MEMCACHED] {
        let endpoint = servers.endpoint(spec.backend, Transport::Unix).unwrap();
        let connect = spec.connect_async.expect("an async face");
        runtime.block_on(async {
            let mut client = connect(&endpoint, &Options::default()).await.unwrap();
            let shared = (spec.concurrency.connect_shared().expect("a shared client"))(
                &endpoint,
                &Options::default(),
                1,
            )
            .await
            .unwrap();
            let kvbench_core::Handle::Async(mut clone) = shared.handle() else {
                panic!("{}: want an async handle", spec.name);
            };
            kvbench_servers::async_handles_share_a_connection!(client, clone);
        });
    }
}

/// After the server closes the connection, the call in flight fails with an I/O error, and
/// every later call fails at once, without touching the socket.
fn closed_by_the_server(spec: &ClientSpec, transport: Transport) {
    let mut servers = start();
    let endpoint = servers.endpoint(spec.backend, transport).unwrap();
    let mut client = script::connect(spec, &endpoint);
    client.set(b"k", b"v").unwrap();
    match spec.backend {
        Backend::Redis => redis::Client::open(endpoint.redis_url())
            .and_then(|client| client.get_connection())
            .and_then(|mut con| {
                let kill = ["KILL", "TYPE", "normal", "SKIPME", "yes"];
                redis::cmd("CLIENT").arg(&kill).exec(&mut con)
            })
            .unwrap(),
        Backend::Memcached => servers.stop(Backend::Memcached).unwrap(),
    }
    let first = client.get(b"k");
    assert!(
        matches!(&first, Err(Error::Io(_))),
        "{} on {transport}: the first call after the close: {first:?}",
        spec.name
    );
    for _ in 0..3 {
        match client.get(b"k") {
            Err(Error::Io(err)) if err.kind() == io::ErrorKind::NotConnected => {}
            other => panic!("{}: a later call should fail at once: {other:?}", spec.name),
        }
    }
}

#[test]
fn a_closed_connection_fails_every_call() {
    for spec in [SPEC, SPEC_MEMCACHED] {
        for &transport in Transport::ALL {
            closed_by_the_server(&spec, transport);
        }
    }
}
