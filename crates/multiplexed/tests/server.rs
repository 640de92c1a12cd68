//! The multiplexer against private servers, over both protocols and both transports: the
//! contract's round trips through the blocking face, its optional operations, handles sharing one
//! connection, many callers' commands in fewer writes than commands, transactions that other
//! callers' commands never split, a call dropped in flight, and a connection the server closes. (The conformance kit runs its cases over both specs as well, the
//! shared-client ones included.)

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use kvbench_core::{Backend, Client, ClientSpec, Endpoint, Error, Operation, Options, Transport};
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
                redis_cmd(&endpoint, &["RPUSH", &String::from_utf8_lossy(&list), "x"]);
                script::a_wrongtype_reply_keeps_the_connection(&mut *client, &list);
            }
            optional_operations(&spec, &mut *client, key);
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
        Backend::Redis | Backend::RedisCluster => redis::Client::open(endpoint.redis_url())
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

/// `result` is a server error whose message holds `says`.
fn server_error<T: std::fmt::Debug>(result: kvbench_core::Result<T>, says: &str) {
    match result {
        Err(Error::Server(message)) => assert!(message.contains(says), "{message:?}: {says:?}"),
        other => panic!("want a server error saying {says:?}, got {other:?}"),
    }
}

/// A Redis connection of the test's own, beside the client under test.
fn redis_cmd(endpoint: &Endpoint, args: &[&str]) {
    redis::Client::open(endpoint.redis_url())
        .and_then(|client| client.get_connection())
        .and_then(|mut con| redis::cmd(args[0]).arg(&args[1..]).exec(&mut con))
        .unwrap();
}

/// The contract's optional operations, each as the spec's backend has it.
fn optional_operations(spec: &ClientSpec, client: &mut dyn Client, key: impl Fn(&str) -> Vec<u8>) {
    let (counter, text, big) = (key("counter"), key("text"), key("big"));
    // incr: Redis starts a missing counter from 0; memcached has none there.
    match spec.backend {
        Backend::Redis | Backend::RedisCluster => assert_eq!(client.incr(&counter).unwrap(), 1),
        Backend::Memcached => server_error(client.incr(&counter), "NOT_FOUND"),
    }
    client.set(&counter, b"41").unwrap();
    assert_eq!(client.incr(&counter).unwrap(), 42);
    client.set(&text, b"forty-two").unwrap();
    server_error(client.incr(&text), "");
    client.set(&big, i64::MAX.to_string().as_bytes()).unwrap();
    match spec.backend {
        Backend::Redis | Backend::RedisCluster => server_error(client.incr(&big), "overflow"),
        Backend::Memcached => server_error(client.incr(&big), "9223372036854775808"),
    }
    // get_many and get_many_pipelined: in the order of the keys, misses and repeats.
    let (one, miss) = (key("one"), key("miss"));
    let keys: [&[u8]; 5] = [&one, &miss, &counter, &one, &miss];
    let want = [Some(&b"1"[..]), None, Some(b"42"), Some(b"1"), None];
    client.set(&one, b"1").unwrap();
    let want: Vec<Option<Vec<u8>>> = want.iter().map(|v| v.map(<[u8]>::to_vec)).collect();
    assert_eq!(client.get_many(&keys).unwrap(), want, "{}", spec.name);
    assert_eq!(client.get_many_pipelined(&keys).unwrap(), want);
    assert!(client.get_many(&[]).unwrap().is_empty());
    assert!(client.get_many_pipelined(&[]).unwrap().is_empty());
    // Hashes and transactions: Redis's.
    let hash = key("hash");
    let fields: [(&[u8], &[u8]); 2] = [(b"f1", b"v1"), (b"f2", b"")];
    let items: [(&[u8], &[u8]); 3] = [(&one, b"one"), (&miss, b"two"), (&one, b"three")];
    if spec.backend == Backend::Redis {
        client.hset_many(&hash, &fields).unwrap();
        let mut all = client.hgetall(&hash).unwrap();
        all.sort();
        let want: Vec<(Vec<u8>, Vec<u8>)> = fields
            .iter()
            .map(|(f, v)| (f.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(all, want);
        assert!(client.hgetall(&key("no-hash")).unwrap().is_empty());
        server_error(client.hgetall(&one), "WRONGTYPE");
        client.transaction(&items).unwrap();
        assert_eq!(client.get(&one).unwrap().as_deref(), Some(&b"three"[..]));
        assert_eq!(client.get(&miss).unwrap().as_deref(), Some(&b"two"[..]));
        client.transaction(&[]).unwrap();
    } else {
        let refused = client.hset_many(&hash, &fields);
        assert!(matches!(refused, Err(Error::Unsupported(_))), "{refused:?}");
        let refused = client.transaction(&items);
        assert!(matches!(refused, Err(Error::Unsupported(_))), "{refused:?}");
    }
    assert_eq!(client.incr(&counter).unwrap(), 43, "{}: in step", spec.name);
}

#[test]
fn specs_declare_what_each_protocol_has() {
    assert_eq!(SPEC.operations, Operation::ALL);
    assert_eq!(
        SPEC_MEMCACHED.operations,
        [Operation::Incr, Operation::GetMany]
    );
}

/// Transactions from some callers and GETs from others, all on one connection: each MULTI …
/// EXEC goes out as one unit, so no GET is ever answered `+QUEUED` (the connection would fail:
/// a status is no answer to a GET) and every caller gets its own reply.
#[test]
fn transactions_on_a_shared_connection_are_never_split_by_other_callers() {
    const CALLERS: usize = 32;
    const ROUNDS: usize = 50;
    let servers = start();
    let runtime = runtime();
    for &transport in Transport::ALL {
        let endpoint = servers.endpoint(Backend::Redis, transport).unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async {
            let client = Multiplexed::<Resp>::connect(&endpoint, &Options::default())
                .await
                .unwrap();
            let callers: Vec<_> = (0..2 * CALLERS)
                .map(|id| {
                    let client = client.clone();
                    tokio::task::spawn_local(async move {
                        let (a, b) = (format!("tx:{id}:a"), format!("tx:{id}:b"));
                        let own = format!("get:{id}");
                        client.set(own.as_bytes(), own.as_bytes()).await.unwrap();
                        for round in 0..ROUNDS {
                            if id % 2 == 0 {
                                let value = format!("{id}:{round}");
                                let items = [(a.as_bytes(), value.as_bytes()); 2];
                                let items = [items[0], (b.as_bytes(), value.as_bytes())];
                                client.transaction(&items).await.unwrap();
                            } else {
                                let got = client.get(own.as_bytes()).await.unwrap();
                                assert_eq!(got.as_deref(), Some(own.as_bytes()));
                            }
                            tokio::task::yield_now().await;
                        }
                    })
                })
                .collect();
            for caller in callers {
                caller.await.unwrap();
            }
            for id in (0..2 * CALLERS).step_by(2) {
                let last = format!("{id}:{}", ROUNDS - 1).into_bytes();
                for half in ["a", "b"] {
                    let value = client.get(format!("tx:{id}:{half}").as_bytes()).await;
                    assert_eq!(value.unwrap(), Some(last.clone()));
                }
            }
        });
    }
}

#[test]
fn a_transaction_the_server_aborts_is_a_server_error_and_the_connection_survives() {
    let servers = start();
    let endpoint = servers.endpoint(Backend::Redis, Transport::Unix).unwrap();
    let mut client = script::connect(&SPEC, &endpoint);
    client.set(b"before", b"1").unwrap();
    // With no memory to spare, Redis refuses each SET as it is queued (-OOM) and EXEC answers
    // -EXECABORT: nothing is stored.
    redis_cmd(&endpoint, &["CONFIG", "SET", "maxmemory", "1"]);
    let items: [(&[u8], &[u8]); 2] = [(b"tx:a", b"1"), (b"tx:b", b"2")];
    server_error(client.transaction(&items), "OOM");
    redis_cmd(&endpoint, &["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(client.get(b"tx:a").unwrap(), None);
    assert_eq!(client.get(b"before").unwrap().as_deref(), Some(&b"1"[..]));
    client.transaction(&items).unwrap();
    assert_eq!(client.get(b"tx:b").unwrap().as_deref(), Some(&b"2"[..]));
}

/// Replies a real server does not give, from a scripted peer on an in-memory stream.
async fn scripted_transaction(replies: &[u8]) -> (kvbench_core::Result<()>, Multiplexed<Resp>) {
    use tokio::io::AsyncWriteExt;
    let (client_side, mut server_side) = tokio::io::duplex(1 << 16);
    let (read_half, write_half) = tokio::io::split(client_side);
    let client = Multiplexed::<Resp>::over(read_half, write_half, &Options::default());
    server_side.write_all(replies).await.unwrap();
    let items: [(&[u8], &[u8]); 2] = [(b"a", b"1"), (b"b", b"2")];
    let result = client.transaction(&items).await;
    drop(server_side);
    (result, client)
}

#[test]
fn an_exec_reply_that_does_not_match_the_transaction_breaks_the_connection() {
    let runtime = runtime();
    runtime.block_on(async {
        let queued = "+OK\r\n+QUEUED\r\n+QUEUED\r\n";
        // Aborted (a WATCHed key changed): nil; refused: -EXECABORT. Both in step.
        for (exec, says) in [("*-1\r\n", "aborted"), ("-EXECABORT x\r\n", "EXECABORT")] {
            let (result, client) = scripted_transaction(format!("{queued}{exec}").as_bytes()).await;
            server_error(result, says);
            drop(client);
        }
        for replies in [
            format!("{queued}*1\r\n+OK\r\n"),       // one OK short
            format!("{queued}*2\r\n+OK\r\n:1\r\n"), // not an OK
            "+OK\r\n+OK\r\n+QUEUED\r\n*2\r\n+OK\r\n+OK\r\n".into(), // a SET not queued
            "+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n+OK\r\n".into(),
            // MULTI refused: the SETs ran on their own, and EXEC has no transaction.
            "-ERR MULTI calls can not be nested\r\n+OK\r\n+OK\r\n-ERR EXEC without MULTI\r\n"
                .into(),
        ] {
            let (result, client) = scripted_transaction(replies.as_bytes()).await;
            assert!(
                matches!(result, Err(Error::Protocol(_))),
                "{replies:?}: {result:?}"
            );
            let later = client.get(b"a").await;
            assert!(matches!(later, Err(Error::Io(_))), "{replies:?}: {later:?}");
        }
    });
}

/// The reader's one timer bounds each call from its own queueing: not from when the connection
/// was opened (a call after a long idle is not failed at once), and not from a slot answered
/// earlier (calls answered in time go on succeeding across many timeouts' worth of time and
/// many ticks of the timer, one answered just inside its limit too); a call that gets no reply
/// fails with a timeout, after its own limit and within a tick or so after it. A scripted peer
/// answers each GET after `step`, the last after nine tenths of the limit.
#[test]
fn one_timer_bounds_each_call_from_its_own_queueing() {
    use std::time::{Duration, Instant};
    use tokio::io::AsyncWriteExt;
    let limit = Duration::from_millis(200);
    let step = Duration::from_millis(60);
    let runtime = runtime();
    runtime.block_on(async {
        let (client_side, mut server_side) = tokio::io::duplex(1 << 16);
        let (read_half, write_half) = tokio::io::split(client_side);
        let options = Options {
            read_timeout: limit,
            ..Options::default()
        };
        let client = Multiplexed::<Resp>::over(read_half, write_half, &options);
        // Idle past the timer's first deadline.
        tokio::time::sleep(limit + limit / 2).await;
        let mut steps = vec![step; 8]; // 8 x 60 ms: more than twice the limit.
        steps.push(limit - limit / 10);
        let answered = steps.len();
        let peer = tokio::spawn(async move {
            for step in steps {
                tokio::time::sleep(step).await;
                server_side.write_all(b"$1\r\nx\r\n").await.unwrap();
            }
            server_side // kept open: the last call's reply never comes, and no EOF either
        });
        for call in 0..answered {
            let got = client.get(b"k").await;
            assert_eq!(got.unwrap().as_deref(), Some(&b"x"[..]), "call {call}");
        }
        let server_side = peer.await.unwrap();
        let started = Instant::now();
        let late = client.get(b"k").await;
        let waited = started.elapsed();
        assert!(matches!(late, Err(Error::Timeout(_))), "{late:?}");
        assert!(
            waited >= limit && waited < limit + limit / 2,
            "timed out after {waited:?}"
        );
        drop(server_side);
    });
}

/// The caller reading for the others is cancelled halfway through a reply: the turn to read goes
/// to the oldest caller still waiting, with the half-read reply kept; a turn handed to a caller
/// that then gives up goes on to the next. Every reply still reaches its own caller, and the
/// replies of the callers that gave up are read and thrown away. A scripted peer answers.
#[test]
fn the_turn_to_read_passes_on_when_the_reader_gives_up() {
    use tokio::io::AsyncWriteExt;
    let runtime = runtime();
    runtime.block_on(async {
        let (client_side, mut server_side) = tokio::io::duplex(1 << 16);
        let (read_half, write_half) = tokio::io::split(client_side);
        let client = Multiplexed::<Resp>::over(read_half, write_half, &Options::default());
        let mut now = Context::from_waker(Waker::noop());
        // `a`, queued on an idle connection, reads for itself; the others wait behind it.
        let mut a = Box::pin(client.get(b"a"));
        let mut b = Box::pin(client.get(b"b"));
        let mut c = Box::pin(client.get(b"c"));
        let mut d = Box::pin(client.get(b"d"));
        for call in [&mut a, &mut b, &mut c, &mut d] {
            assert!(call.as_mut().poll(&mut now).is_pending());
        }
        server_side.write_all(b"$1\r\n").await.unwrap();
        assert!(
            a.as_mut().poll(&mut now).is_pending(),
            "half a reply is no answer"
        );
        drop(a); // The turn goes to `b`, which gives up before it runs: on to `c`.
        drop(b);
        server_side
            .write_all(b"a\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n")
            .await
            .unwrap();
        assert_eq!(answered(c).await.as_deref(), Some(&b"c"[..]));
        assert_eq!(answered(d).await.as_deref(), Some(&b"d"[..]));
        // No caller reads now: the next call takes the turn.
        server_side.write_all(b"$1\r\ne\r\n").await.unwrap();
        assert_eq!(answered(client.get(b"e")).await.as_deref(), Some(&b"e"[..]));
    });
}

/// A GET's value. A lost turn to read would leave the call waiting for ever: bounded here, so
/// that it fails rather than hangs.
async fn answered(
    get: impl Future<Output = kvbench_core::Result<Option<Vec<u8>>>>,
) -> Option<Vec<u8>> {
    let within = tokio::time::timeout(std::time::Duration::from_secs(5), get).await;
    within.expect("no answer: a lost turn to read").unwrap()
}
