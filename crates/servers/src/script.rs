//! [`Script`]: a server played from bytes in memory, for the clients' unit tests and fuzz targets.
//!
//! Every hand-written client is generic over its stream, so a test can hand it a [`Script`]
//! instead of a socket and decide exactly how the replies arrive: whole, or cut into reads of a
//! few bytes at every offset. [`after_a_break_nothing_is_sent`] is the property every client's
//! fuzz target checks with it.
//!
//! The rest is what the clients' own tests share: the round trips every client makes
//! ([`round_trips`]), and for a client many callers share, that each caller gets its own values
//! back ([`callers_get_their_own_values`]) over as many connections as its model promises
//! ([`connections_a_shared_client_opens`]).
//!
//! [`DelayedServer`] scripts replies in time rather than in bytes: a fixed delay, and a stall on
//! demand, for the load generator's tests.

use std::future::Future;
use std::io::{self, Read, Write};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use kvbench_core::{
    Backend, Client, ClientSpec, Endpoint, Error, Handle, Options, SharedClient, Transport,
};

use crate::{AcceptedConnections, Servers, StartOptions};

/// Replays `replies` at most `step` bytes per `read` (then end of stream), and counts the reads,
/// the writes and the bytes written.
#[derive(Debug, Clone)]
pub struct Script<'a> {
    /// What the "server" has still to send.
    pub replies: &'a [u8],
    /// Most bytes one `read` returns (1 = trickle).
    pub step: usize,
    /// `read` calls so far.
    pub reads: usize,
    /// `write` calls so far.
    pub writes: usize,
    /// Bytes written so far.
    pub written: usize,
}

impl<'a> Script<'a> {
    /// A script that hands out `replies` `step` bytes at a time (`step` 0 counts as 1).
    pub fn new(replies: &'a [u8], step: usize) -> Self {
        Script {
            replies,
            step: step.max(1),
            reads: 0,
            writes: 0,
            written: 0,
        }
    }
}

impl Read for Script<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reads += 1;
        let n = self.step.min(buf.len()).min(self.replies.len());
        buf[..n].copy_from_slice(&self.replies[..n]);
        self.replies = &self.replies[n..];
        Ok(n)
    }
}

impl Write for Script<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writes += 1;
        self.written += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Calls every method of `client` in turn (`get`, `set`, `set_many`, `delete`, `set_ex`), each
/// of which must return; once one has broken the connection, checks that every later call fails
/// without writing a byte (`written` reads the client's byte count). Panics otherwise.
pub fn after_a_break_nothing_is_sent<C: Client>(client: &mut C, written: impl Fn(&mut C) -> usize) {
    let items: [(&[u8], &[u8]); 3] = [(b"a", b"1"), (b"k", b"22"), (b"c", b"")];
    let mut broken_at = None;
    for round in 0..5 {
        let result = match round {
            0 => client.get(b"k").map(drop),
            1 => client.set(b"k", b"v"),
            2 => client.set_many(&items),
            3 => client.delete(b"k").map(drop),
            _ => client.set_ex(b"k", b"v", 10),
        };
        if let Some(before) = broken_at {
            assert!(result.is_err(), "a broken connection answered {result:?}");
            assert_eq!(written(client), before, "a broken connection wrote");
        } else if let Err(err) = result
            && err.breaks_connection()
        {
            broken_at = Some(written(client));
        }
    }
}

/// How many cases a property test runs: `default` in `make test`, or `KVBENCH_FUZZ_CASES` when
/// set (`make fuzz` sets it; see `crates/resp/FUZZING.md`).
pub fn property_cases(default: u32) -> u32 {
    std::env::var("KVBENCH_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// `keys` and `values` paired into the items [`Client::set_many`] takes.
pub fn items<'a>(keys: &'a [Vec<u8>], values: &'a [Vec<u8>]) -> Vec<(&'a [u8], &'a [u8])> {
    keys.iter()
        .zip(values)
        .map(|(k, v)| (&k[..], &v[..]))
        .collect()
}

/// The round trips every client must get right, on the keys `key(name)` names: a miss, a
/// binary-safe hit, an empty value overwriting it, a 1 MiB value, a delete of an existing and of
/// a missing key, then `key("ttl")` stored for one second and read back before it expires.
/// Panics at the first wrong answer.
pub fn round_trips(client: &mut dyn Client, key: impl Fn(&str) -> Vec<u8>) {
    assert_eq!(client.get(&key("missing")).unwrap(), None, "miss");
    let binary: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    client.set(&key("k"), &binary).unwrap();
    let hit = client.get(&key("k")).unwrap();
    assert_eq!(hit, Some(binary), "binary-safe hit");
    client.set(&key("k"), b"").unwrap();
    let empty = client.get(&key("k")).unwrap();
    assert_eq!(empty, Some(Vec::new()), "empty value overwrites");
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
    // A one-second key for the expiry check at the end, and a 100-second key that is read back
    // and whose TTL is checked: it stays in range however slow the machine is, where a
    // one-second key may show a TTL of 1 or 0, or be gone already.
    client.set_ex(&key("ttl"), b"soon gone", 1).unwrap();
    client.set_ex(&key("ttl-long"), b"kept", 100).unwrap();
    let before_expiry = client.get(&key("ttl-long")).unwrap();
    assert_eq!(
        before_expiry.as_deref(),
        Some(&b"kept"[..]),
        "before its TTL"
    );
}

/// The TTL (ms) the server reports for [`round_trips`]' 100-second key: between 50 and 100 s,
/// whatever the machine's speed.
pub fn assert_long_ttl(pttl_ms: i64) {
    assert!(
        (50_000..=100_000).contains(&pttl_ms),
        "TTL as the server sees it: {pttl_ms} ms, want at most 100 s"
    );
}

/// `n` keys `key("many:<i>")` and values `value <i>`, for a `set_many` test.
pub fn numbered(key: impl Fn(&str) -> Vec<u8>, n: usize) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let keys = (0..n).map(|i| key(&format!("many:{i}"))).collect();
    let values = (0..n).map(|i| format!("value {i}").into_bytes()).collect();
    (keys, values)
}

/// For a Redis client: a GET on `list_key`, which must hold a list, is a `WRONGTYPE` error reply
/// ([`Error::Server`]), and the connection is still usable after it.
pub fn a_wrongtype_reply_keeps_the_connection(client: &mut dyn Client, list_key: &[u8]) {
    match client.get(list_key) {
        Err(Error::Server(message)) => assert!(message.contains("WRONGTYPE"), "{message}"),
        other => panic!("GET on a list should be a WRONGTYPE server error, got {other:?}"),
    }
    let after = client.get(b"kvbench:surely-missing").unwrap();
    assert_eq!(after, None, "usable after the error reply");
}

/// Waits `wait`, then checks that [`round_trips`]' one-second key is gone and its 100-second key
/// is not (at least `wait` has passed; a slow machine only adds to it).
pub fn expires_within(client: &mut dyn Client, key: impl Fn(&str) -> Vec<u8>, wait: Duration) {
    std::thread::sleep(wait);
    assert_eq!(
        client.get(&key("ttl")).unwrap(),
        None,
        "still there after {wait:?}"
    );
    assert_eq!(
        client.get(&key("ttl-long")).unwrap().as_deref(),
        Some(&b"kept"[..]),
        "the 100 s key outlives the 1 s key"
    );
}

/// For an async library client: a value set through `$client` is read back through `$clone`
/// (another handle on the same connection), and `set_many` and `delete` work through either. A
/// macro rather than a function because the async libraries share no trait; expand it inside an
/// `async` block.
#[macro_export]
macro_rules! async_handles_share_a_connection {
    ($client:expr, $clone:expr) => {{
        $client.set(b"native", b"async").await.unwrap();
        let read_back = $clone.get(b"native").await.unwrap();
        assert_eq!(read_back.as_deref(), Some(&b"async"[..]));
        let items: Vec<(&[u8], &[u8])> = vec![(b"a", b"1"), (b"b", b"2")];
        $clone.set_many(&items).await.unwrap();
        assert_eq!($client.get(b"b").await.unwrap().as_deref(), Some(&b"2"[..]));
        assert!($client.delete(b"a").await.unwrap());
    }};
}

/// Private servers (see [`Servers::start_private`](crate::Servers::start_private)) and the
/// endpoint of `backend` on `transport`, for a test that drives one client; keep the [`Servers`]
/// alive as long as the endpoint is used. Panics if either cannot be had.
pub fn private_endpoint(backend: Backend, transport: Transport) -> (Servers, Endpoint) {
    let servers = Servers::start_private(&StartOptions::default()).expect("start private servers");
    let endpoint = servers.endpoint(backend, transport).expect("endpoint");
    (servers, endpoint)
}

/// Connects `spec` to `endpoint` with default options; panics, naming both, if it cannot.
pub fn connect(spec: &ClientSpec, endpoint: &Endpoint) -> Box<dyn Client> {
    (spec.connect)(endpoint, &Options::default())
        .unwrap_or_else(|err| panic!("{} cannot connect to {endpoint}: {err}", spec.name))
}

/// Opens `spec`'s shared client on `endpoint` for `callers` callers (it must declare one), has
/// them [get their own values](callers_get_their_own_values) at once, and returns how many
/// connections the server accepted meanwhile, counted through a connection of its own. Await it
/// on the runtime the callers' tasks may run on; [`block_on`] will do for blocking handles.
pub async fn connections_a_shared_client_opens(
    spec: &ClientSpec,
    endpoint: &Endpoint,
    callers: usize,
) -> u64 {
    let connect = (spec.concurrency.connect_shared())
        .unwrap_or_else(|| panic!("{} declares no shared client", spec.name));
    let timeout = Options::DEFAULT_TIMEOUT;
    let mut accepted = AcceptedConnections::open(spec.backend, endpoint, timeout)
        .unwrap_or_else(|err| panic!("counting connection to {endpoint}: {err}"));
    let before = accepted.count().expect("accepted connections before");
    let connections = spec.concurrency.connections(callers);
    let shared = connect(endpoint, &Options::default(), connections)
        .await
        .unwrap_or_else(|err| panic!("{} cannot open its shared client: {err}", spec.name));
    let key = |caller: usize| format!("{}:caller:{caller}", spec.name).into_bytes();
    callers_get_their_own_values(&*shared, callers, key).await;
    accepted.count().expect("accepted connections after") - before
}

/// Rounds of set-then-get each caller makes in [`callers_get_their_own_values`].
const ROUNDS: usize = 5;

/// Takes `callers` handles on `shared`, and every caller at once sets `key(caller)` to a value
/// of its own (its length differs from its neighbours') and reads it back, round after round: a
/// reply handed to the wrong caller fails, naming the caller. Async handles run as futures
/// polled together in the task that awaits this (so on that task's runtime); blocking handles
/// each on a thread of their own.
pub async fn callers_get_their_own_values(
    shared: &dyn SharedClient,
    callers: usize,
    key: impl Fn(usize) -> Vec<u8>,
) {
    let value = |caller: usize, round: usize| {
        format!("caller {caller} round {round} ")
            .repeat(caller % 7 + 1)
            .into_bytes()
    };
    let check = |caller: usize, round: usize, got: Option<Vec<u8>>| {
        let want = value(caller, round);
        assert!(
            got.as_ref() == Some(&want),
            "caller {caller}, round {round}: got {:?}, want {:?}",
            got.map(|got| String::from_utf8_lossy(&got).into_owned()),
            String::from_utf8_lossy(&want)
        );
    };
    let mut tasks: Vec<Pin<Box<dyn Future<Output = ()> + '_>>> = Vec::new();
    thread::scope(|scope| {
        for caller in 0..callers {
            let key = key(caller);
            match shared.handle() {
                Handle::Blocking(mut client) => {
                    scope.spawn(move || {
                        for round in 0..ROUNDS {
                            client.set(&key, &value(caller, round)).expect("set");
                            check(caller, round, client.get(&key).expect("get"));
                        }
                    });
                }
                Handle::Async(mut client) => tasks.push(Box::pin(async move {
                    for round in 0..ROUNDS {
                        client.set(&key, &value(caller, round)).await.expect("set");
                        check(caller, round, client.get(&key).await.expect("get"));
                    }
                })),
            }
        }
    });
    join_all(tasks).await;
}

/// Awaits every future, polling them together in one task: a join that needs no runtime of its
/// own. Any wake-up polls every future still pending.
async fn join_all(mut futures: Vec<Pin<Box<dyn Future<Output = ()> + '_>>>) {
    std::future::poll_fn(|cx| {
        futures.retain_mut(|future| future.as_mut().poll(cx).is_pending());
        if futures.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Runs `future` to completion on this thread, parking it while the future waits: for futures
/// that need no runtime (a blocking client's shared connect, and callers that are threads).
pub fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
}

/// A Redis-speaking server on a loopback TCP port whose replies are scripted in time: every
/// command is answered `delay` after it arrived (a GET with `$3\r\nbar\r\n`, anything else with
/// `+OK\r\n`), and a [stall](DelayedServer::stall) holds every reply due inside a window until
/// the window ends. What a real server cannot be made to do on demand, and what a load
/// generator's latency is checked against: the delay is known, so any more is the generator's.
///
/// One thread per connection. Each sleeps until [`DelayedServer::SPIN`] before a reply is due
/// (with a timer slack of 1 ns, not the kernel's default 50 us), then yields the CPU in a loop
/// until it is: on a VM, a CPU left idle through a whole sleep wakes 100-200 us late, which
/// would make a 1 ms delay 1.2 ms. The last stretch of a delay keeps its CPU busy.
pub struct DelayedServer {
    addr: String,
    stall: Arc<Stall>,
}

impl DelayedServer {
    /// Starts listening; the threads live as long as the process.
    pub fn start(delay: Duration) -> io::Result<DelayedServer> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?.to_string();
        let stall = Arc::new(Mutex::new(None));
        let shared = Arc::clone(&stall);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let stall = Arc::clone(&shared);
                thread::spawn(move || serve_delayed(stream, delay, &stall));
            }
        });
        Ok(DelayedServer { addr, stall })
    }

    /// The endpoint to connect to.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint::Tcp(self.addr.clone())
    }

    /// From `at`, for `length`, no reply is sent: every reply due in that window goes out when
    /// it ends (replaces an earlier stall).
    pub fn stall(&self, at: Instant, length: Duration) {
        *self.stall.lock().unwrap_or_else(|e| e.into_inner()) = Some((at, length));
    }
}

/// A [`DelayedServer`]'s stall: from when, for how long.
type Stall = Mutex<Option<(Instant, Duration)>>;

/// One connection of a [`DelayedServer`]: reads commands, answers each at its time.
fn serve_delayed(mut stream: std::net::TcpStream, delay: Duration, stall: &Stall) {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer and affects this thread only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let arrived = Instant::now();
        buf.extend_from_slice(&chunk[..n]);
        let mut replies = Vec::new();
        while let Some((len, is_get)) = command_len(&buf) {
            buf.drain(..len);
            replies.extend_from_slice(if is_get { b"$3\r\nbar\r\n" } else { b"+OK\r\n" });
        }
        if replies.is_empty() {
            continue;
        }
        let mut due = arrived + delay;
        if let Some((at, length)) = *stall.lock().unwrap_or_else(|e| e.into_inner())
            && due >= at
            && due < at + length
        {
            due = at + length;
        }
        wait_until(due);
        if stream.write_all(&replies).is_err() {
            return;
        }
    }
}

impl DelayedServer {
    /// How long before a reply is due its thread stops sleeping and starts yielding.
    pub const SPIN: Duration = Duration::from_micros(300);
}

/// Sleeps until [`DelayedServer::SPIN`] before `due`, then yields until `due`.
fn wait_until(due: Instant) {
    let now = Instant::now();
    if due > now + DelayedServer::SPIN {
        thread::sleep(due - now - DelayedServer::SPIN);
    }
    while Instant::now() < due {
        thread::yield_now();
    }
}

/// The length of the first complete RESP command in `buf` (`*<n>\r\n` then n times
/// `$<len>\r\n<bytes>\r\n`), and whether it is a GET; `None` until it is complete.
fn command_len(buf: &[u8]) -> Option<(usize, bool)> {
    fn line(buf: &[u8], at: usize, tag: u8) -> Option<(usize, usize)> {
        let end = at + buf.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        if buf[at] != tag {
            return None;
        }
        let n = std::str::from_utf8(&buf[at + 1..end]).ok()?.parse().ok()?;
        Some((n, end + 2))
    }
    let (args, mut at) = line(buf, 0, b'*')?;
    let mut is_get = false;
    for i in 0..args {
        let (len, data) = line(buf, at, b'$')?;
        if buf.len() < data + len + 2 {
            return None;
        }
        if i == 0 {
            is_get = buf[data..data + len].eq_ignore_ascii_case(b"GET");
        }
        at = data + len + 2;
    }
    Some((at, is_get))
}
