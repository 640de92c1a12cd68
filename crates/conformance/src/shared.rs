//! The cases of clients that serve many callers at once: every client whose spec declares
//! [`kvbench_core::Concurrency::Multiplexed`] or [`kvbench_core::Concurrency::Pool`], selected by that declaration alone.
//!
//! A case opens the spec's shared client ([`kvbench_core::ConnectSharedFn`]) on a current-thread
//! tokio runtime, takes one [`Handle`] per caller and runs the callers at once: as tasks on that
//! runtime (a `LocalSet`, one thread) for [`Handle::Async`], as threads for
//! [`Handle::Blocking`]. Every value a caller writes names the caller and the round, so a reply
//! that reaches the wrong caller says whose it was.
//!
//! A behaviour of an optional operation the spec does not declare (`transactions_among_callers`
//! without [`Operation::Transaction`]) checks instead that a handle refuses the operation with
//! [`Error::Unsupported`] and still answers after.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use kvbench_core::{
    Backend, ConnectSharedFn, Endpoint, Error, Handle, KnownDefect, Operation, Options,
    SharedClient,
};
use kvbench_servers::{Servers, StartOptions};

use crate::{Failure, Outcome, Reference, patterned_value, preview};

/// The most callers a case runs at once (a pool is opened with its declared connections).
pub(crate) const MOST_CALLERS: usize = OWN_REPLIES_CALLERS;

/// The name of the shared behaviour in which the server closes every connection: a spec that
/// declares a [`KnownDefect`](kvbench_core::KnownDefect) of this input may meet it with timeouts.
pub const SERVER_CLOSE: &str = "server_close";

/// Why `server_close` runs on servers of its own.
pub(crate) const CLOSE_NEEDS: &str =
    "server_close closes every connection of its server, so it starts private servers of its own";

/// One behaviour of a shared client.
pub struct SharedBehaviour {
    /// Short name, used in case names.
    pub name: &'static str,
    /// What it checks.
    pub about: &'static str,
    /// The optional operation it exercises: a client whose spec does not declare it meets a
    /// refusal check instead.
    pub operation: Option<Operation>,
    run: fn(&mut SharedCase) -> Outcome,
}

/// Every shared-client behaviour, in the order cases are listed.
pub const SHARED_BEHAVIOURS: &[SharedBehaviour] = &[
    SharedBehaviour {
        name: "own_replies",
        about: "256 callers each write and read their own key 1,000 times (100 times where the \
                callers are threads): every caller gets exactly its own replies",
        operation: None,
        run: own_replies,
    },
    SharedBehaviour {
        name: "cancellation",
        about: "async handles: calls dropped after their first poll or abandoned by a timeout of \
                their own while in flight; every later call, the canceller's first, gets its own \
                reply (late replies are discarded, not shifted). Blocking handles cannot drop a \
                call: there a 1 ms read timeout makes calls for 1 MiB values time out mid-reply \
                (how often depends on the machine, so it is not asserted), and every call, also \
                on a fresh handle after a timeout, must return its own value or a typed error",
        operation: None,
        run: cancellation,
    },
    SharedBehaviour {
        name: "error_reply_to_one_caller",
        about: "one caller's command gets an error reply (Redis: GET of a list, WRONGTYPE; \
                memcached: a value over the item limit, SERVER_ERROR) while the other callers keep \
                getting their own values",
        operation: None,
        run: error_reply_to_one_caller,
    },
    SharedBehaviour {
        name: SERVER_CLOSE,
        about: "the server closes every connection while callers are in flight (Redis: CLIENT KILL \
                from the reference connection; memcached, which has no such command: its process \
                is stopped), on servers of the case's own: a caller's first error is a connection \
                error, not a timeout; on one shared connection every caller gets one (a pool may \
                serve some callers on connections opened after the close, so there at least one \
                caller must); no caller hangs or gets another's reply",
        operation: None,
        run: server_close,
    },
    SharedBehaviour {
        name: "transactions_among_callers",
        about: "16 callers, half of them storing 3 keys by a transaction 100 times, the others \
                SET and GET their own key meanwhile: every caller gets exactly its own replies (a \
                command of another caller inside MULTI … EXEC would be answered QUEUED), and every \
                transaction's keys hold its last values",
        operation: Some(Operation::Transaction),
        run: transactions_among_callers,
    },
];

/// What a shared behaviour works with.
pub struct SharedCase {
    /// The backend.
    pub backend: Backend,
    /// Opens the client under test.
    pub connect: ConnectSharedFn,
    /// Connections the client is asked to open (1 for a multiplexed client).
    pub connections: usize,
    /// True for [`kvbench_core::Concurrency::Multiplexed`]: one connection carries every caller's calls.
    pub multiplexed: bool,
    /// Where the kit's server is.
    pub endpoint: Endpoint,
    /// An independent connection to it.
    pub reference: Reference,
    /// The client's known defects: one whose input names a case here is that case's accepted
    /// outcome.
    pub known_defects: &'static [KnownDefect],
    pub(crate) namespace: String,
    pub(crate) written: Vec<Vec<u8>>,
}

impl SharedCase {
    /// Runs the behaviour.
    pub(crate) fn run(&mut self, behaviour: &SharedBehaviour) -> Outcome {
        (behaviour.run)(self)
    }

    /// What a shared client that does not implement `operation` must do when a caller calls it
    /// anyway: fail with [`Error::Unsupported`], store nothing, and answer the caller's next
    /// command.
    pub(crate) fn refuses(&mut self, operation: Operation) -> Outcome {
        let key = Arc::new(self.key("refused"));
        let opened = self.open(&Options::default())?;
        let outcomes = opened.run_callers(1, |id, mut caller| {
            let key = Arc::clone(&key);
            async move {
                match caller.call(operation, &key).await {
                    Err(Error::Unsupported(_)) => {}
                    other => {
                        return Err(Failure::Check(format!(
                            "{}: the spec does not declare it, so want Error::Unsupported, got \
                             {other:?}",
                            operation.name()
                        )));
                    }
                }
                let want = value(id, 0);
                caller
                    .set(&key, &want)
                    .await
                    .map_err(failed(id, 0, "set"))?;
                let got = caller.get(&key).await.map_err(failed(id, 0, "get"))?;
                expect_own(id, 0, "get after the refusal", got, &want)
            }
        });
        every_caller(outcomes)
    }

    /// A key private to this case, recorded for clean-up on an external server.
    fn key(&mut self, name: &str) -> Vec<u8> {
        let key = format!("{}{name}", self.namespace).into_bytes();
        self.written.push(key.clone());
        key
    }

    /// One key per caller.
    fn keys(&mut self, name: &str, callers: usize) -> Arc<Vec<Vec<u8>>> {
        Arc::new(
            (0..callers)
                .map(|id| self.key(&format!("{name}:{id}")))
                .collect(),
        )
    }

    fn open(&self, options: &Options) -> Result<Opened, Failure> {
        Opened::open(self.connect, &self.endpoint, options, self.connections)
    }
}

/// A shared client, open on the runtime its async handles run on.
struct Opened {
    /// Declared first, so dropped first: the client's tasks stop on their own runtime.
    client: Arc<dyn SharedClient>,
    runtime: tokio::runtime::Runtime,
}

impl Opened {
    fn open(
        connect: ConnectSharedFn,
        endpoint: &Endpoint,
        options: &Options,
        connections: usize,
    ) -> Result<Opened, Failure> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|err| format!("a runtime for the callers: {err}"))?;
        let client = runtime.block_on(connect(endpoint, options, connections))?;
        Ok(Opened {
            client: Arc::from(client),
            runtime,
        })
    }

    /// True if the client hands out async handles.
    fn is_async(&self) -> bool {
        matches!(self.client.handle(), Handle::Async(_))
    }

    /// Runs `count` callers at once, each with a handle of its own, and returns their outcomes
    /// in caller order: tasks on the client's runtime for async handles, threads for blocking
    /// ones.
    fn run_callers<F, Fut>(&self, count: usize, caller: F) -> Vec<Outcome>
    where
        F: Fn(usize, Caller) -> Fut + Sync,
        Fut: Future<Output = Outcome> + 'static,
    {
        let handles: Vec<Caller> = (0..count).map(|_| Caller(self.client.handle())).collect();
        if self.is_async() {
            let local = tokio::task::LocalSet::new();
            return self.runtime.block_on(local.run_until(async {
                let tasks: Vec<_> = (handles.into_iter().enumerate())
                    .map(|(id, handle)| tokio::task::spawn_local(caller(id, handle)))
                    .collect();
                let mut outcomes = Vec::new();
                for task in tasks {
                    let panicked = |err| Failure::Check(format!("a caller panicked: {err}"));
                    outcomes.push(task.await.unwrap_or_else(|err| Err(panicked(err))));
                }
                outcomes
            }));
        }
        std::thread::scope(|scope| {
            let threads: Vec<_> = (handles.into_iter().enumerate())
                .map(|(id, handle)| {
                    let caller = &caller;
                    scope.spawn(move || on_this_thread(caller(id, handle)))
                })
                .collect();
            let panicked = |_| Err(Failure::Check("a caller thread panicked".into()));
            threads
                .into_iter()
                .map(|thread| thread.join().unwrap_or_else(panicked))
                .collect()
        })
    }
}

/// Runs a blocking caller's future (whose calls never wait on a runtime) on the calling thread.
fn on_this_thread(caller: impl Future<Output = Outcome>) -> Outcome {
    match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(runtime) => runtime.block_on(caller),
        Err(err) => Err(format!("a runtime for a caller thread: {err}").into()),
    }
}

/// One caller's handle, with the contract's calls whichever kind it is.
struct Caller(Handle);

impl Caller {
    async fn get(&mut self, key: &[u8]) -> kvbench_core::Result<Option<Vec<u8>>> {
        match &mut self.0 {
            Handle::Async(client) => client.get(key).await,
            Handle::Blocking(client) => client.get(key),
        }
    }

    async fn set(&mut self, key: &[u8], value: &[u8]) -> kvbench_core::Result<()> {
        match &mut self.0 {
            Handle::Async(client) => client.set(key, value).await,
            Handle::Blocking(client) => client.set(key, value),
        }
    }

    async fn transaction(&mut self, items: &[(&[u8], &[u8])]) -> kvbench_core::Result<()> {
        match &mut self.0 {
            Handle::Async(client) => client.transaction(items).await,
            Handle::Blocking(client) => client.transaction(items),
        }
    }

    /// Calls `operation` on `key` (with `v` for any value) for what it returns, not its value.
    async fn call(&mut self, operation: Operation, key: &[u8]) -> kvbench_core::Result<()> {
        let keys: &[&[u8]] = &[key];
        let items: &[(&[u8], &[u8])] = &[(key, b"v")];
        match (&mut self.0, operation) {
            (Handle::Async(client), Operation::Incr) => client.incr(key).await.map(drop),
            (Handle::Async(client), Operation::GetMany) => client.get_many(keys).await.map(drop),
            (Handle::Async(client), Operation::Hash) => client.hset_many(key, items).await,
            (Handle::Async(client), Operation::Transaction) => client.transaction(items).await,
            (Handle::Blocking(client), Operation::Incr) => client.incr(key).map(drop),
            (Handle::Blocking(client), Operation::GetMany) => client.get_many(keys).map(drop),
            (Handle::Blocking(client), Operation::Hash) => client.hset_many(key, items),
            (Handle::Blocking(client), Operation::Transaction) => client.transaction(items),
        }
    }
}

/// The value caller `id` writes in `round`: whoever reads it can tell whose it is.
fn value(id: usize, round: usize) -> Vec<u8> {
    format!("caller {id} round {round}").into_bytes()
}

/// The error of caller `id` in `round`, doing `what`.
fn failed(id: usize, round: usize, what: &str) -> impl FnOnce(Error) -> Failure {
    move |err| {
        Failure::Check(format!(
            "caller {id}, round {round}, {what}: {err} ({err:?})"
        ))
    }
}

/// Checks that caller `id` got its own value `want`; otherwise names what it got instead.
fn expect_own(id: usize, round: usize, what: &str, got: Option<Vec<u8>>, want: &[u8]) -> Outcome {
    match got {
        Some(got) if got == want => Ok(()),
        Some(got) => Err(Failure::Check(format!(
            "caller {id}, round {round}, {what}: got {} bytes {:?}, want its own {:?}",
            got.len(),
            preview(&got),
            preview(want)
        ))),
        None => Err(Failure::Check(format!(
            "caller {id}, round {round}, {what}: got a miss, want its own {:?}",
            preview(want)
        ))),
    }
}

/// Passes if every caller did; otherwise says how many failed, and how the first few did.
fn every_caller(outcomes: Vec<Outcome>) -> Outcome {
    let total = outcomes.len();
    let failures: Vec<String> = (outcomes.into_iter())
        .filter_map(|outcome| outcome.err().map(|failure| failure.to_string()))
        .collect();
    if failures.is_empty() {
        return Ok(());
    }
    let shown = failures[..failures.len().min(3)].join("\n  ");
    Err(Failure::Check(format!(
        "{} of {total} callers failed:\n  {shown}",
        failures.len()
    )))
}

// ---------------------------------------------------------------------------------------------
// own_replies
// ---------------------------------------------------------------------------------------------

const OWN_REPLIES_CALLERS: usize = 256;
/// Rounds of each caller that is a task: tasks on one connection interleave only as far as
/// the rounds give them time to.
const OWN_REPLIES_ROUNDS: usize = 1000;
/// Rounds of each caller that is a thread (a pool's blocking handles). 256 threads taking turns
/// at a pool of 4, with a checkout round trip per call, interleave from the first round; a
/// thousand rounds each took minutes on a busy machine and proved nothing more.
const OWN_REPLIES_THREAD_ROUNDS: usize = 100;

fn own_replies(c: &mut SharedCase) -> Outcome {
    let keys = c.keys("own", OWN_REPLIES_CALLERS);
    let opened = c.open(&Options::default())?;
    let rounds = match opened.is_async() {
        true => OWN_REPLIES_ROUNDS,
        false => OWN_REPLIES_THREAD_ROUNDS,
    };
    let outcomes = opened.run_callers(OWN_REPLIES_CALLERS, |id, mut caller| {
        let keys = Arc::clone(&keys);
        async move {
            let key = &keys[id];
            for round in 0..rounds {
                let want = value(id, round);
                let set = caller.set(key, &want).await;
                set.map_err(failed(id, round, "set"))?;
                let got = caller.get(key).await.map_err(failed(id, round, "get"))?;
                expect_own(id, round, "get of its own key", got, &want)?;
            }
            Ok(())
        }
    });
    every_caller(outcomes)
}

// ---------------------------------------------------------------------------------------------
// cancellation
// ---------------------------------------------------------------------------------------------

const CANCEL_CALLERS: usize = 32;
const CANCEL_ROUNDS: usize = 400;

/// Blocking handles: callers, rounds, and the value each caller reads under a 1 ms timeout.
const TIMEOUT_CALLERS: usize = 8;
const TIMEOUT_ROUNDS: usize = 20;
const TIMEOUT_VALUE_LEN: usize = 1024 * 1024;

fn cancellation(c: &mut SharedCase) -> Outcome {
    let probe = c.open(&Options::default())?;
    if probe.is_async() {
        let keys = Arc::new([
            c.keys("main", CANCEL_CALLERS),
            c.keys("other", CANCEL_CALLERS),
        ]);
        let dropped = c.keys("dropped", CANCEL_CALLERS);
        let outcomes = probe.run_callers(CANCEL_CALLERS, |id, caller| {
            let (keys, dropped) = (Arc::clone(&keys), Arc::clone(&dropped));
            async move {
                let Handle::Async(mut client) = caller.0 else {
                    return Err(
                        "a client that handed out an async handle gave a blocking one"
                            .to_string()
                            .into(),
                    );
                };
                let (main, other, dropped) = (&keys[0][id], &keys[1][id], &dropped[id]);
                cancelling_caller(id, &mut *client, main, other, dropped).await
            }
        });
        return every_caller(outcomes);
    }
    drop(probe);
    let large = c.keys("large", TIMEOUT_CALLERS);
    let values: Arc<Vec<Vec<u8>>> = Arc::new(
        (0..TIMEOUT_CALLERS)
            .map(|id| [value(id, 0), patterned_value(TIMEOUT_VALUE_LEN)].concat())
            .collect(),
    );
    for (key, value) in large.iter().zip(values.iter()) {
        c.reference.set(key, value)?;
    }
    let short = Options {
        read_timeout: Duration::from_millis(1),
        ..Options::default()
    };
    let opened = c.open(&short)?;
    let client = Arc::clone(&opened.client);
    let outcomes = opened.run_callers(TIMEOUT_CALLERS, |id, mut caller| {
        let (large, values, client) =
            (Arc::clone(&large), Arc::clone(&values), Arc::clone(&client));
        async move {
            for round in 0..TIMEOUT_ROUNDS {
                match caller.get(&large[id]).await {
                    Ok(got) => expect_own(id, round, "get of its large value", got, &values[id])?,
                    Err(err) if err.breaks_connection() => caller = Caller(client.handle()),
                    Err(err) => return Err(failed(id, round, "get")(err)),
                }
            }
            Ok(())
        }
    });
    every_caller(outcomes)
}

/// One async caller's rounds: a normal SET, a GET dropped after its first poll, a SET dropped
/// likewise, a GET under a timeout of its own; after each, a GET of its main key must return
/// exactly the last value it stored there. Abandoned GETs read another key of the caller's
/// (`other`), so that an abandoned reply delivered to the next call would show.
async fn cancelling_caller(
    id: usize,
    client: &mut dyn kvbench_core::AsyncClient,
    main: &[u8],
    other: &[u8],
    dropped: &[u8],
) -> Outcome {
    let other_value = [&b"other: "[..], &value(id, 0)].concat();
    client
        .set(other, &other_value)
        .await
        .map_err(failed(id, 0, "set"))?;
    let mut last = value(id, 0);
    client
        .set(main, &last)
        .await
        .map_err(failed(id, 0, "set"))?;
    for round in 1..=CANCEL_ROUNDS {
        // Before a call is dropped, the runtime gets 0, 1 or 2 turns to send it (and perhaps
        // to read its reply).
        let turns = round / 4 % 3;
        match round % 4 {
            0 => {
                last = value(id, round);
                client
                    .set(main, &last)
                    .await
                    .map_err(failed(id, round, "set"))?;
            }
            1 => {
                let mut call = client.get(other);
                if let Poll::Ready(got) = poll_once(&mut call) {
                    let got = got.map_err(failed(id, round, "get"))?;
                    expect_own(id, round, "get polled once", got, &other_value)?;
                }
                give_turns(turns).await;
            }
            2 => {
                let mut call = client.set(dropped, b"dropped after one poll");
                if let Poll::Ready(done) = poll_once(&mut call) {
                    done.map_err(failed(id, round, "set polled once"))?;
                }
                give_turns(turns).await;
            }
            _ => {
                let limit = Duration::from_micros(250 * (round as u64 % 8));
                if let Ok(got) = tokio::time::timeout(limit, client.get(other)).await {
                    let got = got.map_err(failed(id, round, "get under a timeout"))?;
                    expect_own(id, round, "get under a timeout", got, &other_value)?;
                }
            }
        }
        let got = client.get(main).await;
        let got = got.map_err(failed(id, round, "get after a cancellation"))?;
        expect_own(id, round, "get after a cancellation", got, &last)?;
    }
    Ok(())
}

/// Polls a call once, with a waker that does nothing (the call is about to be dropped).
fn poll_once<T>(call: &mut kvbench_core::BoxFuture<'_, T>) -> Poll<kvbench_core::Result<T>> {
    call.as_mut().poll(&mut Context::from_waker(Waker::noop()))
}

async fn give_turns(turns: usize) {
    for _ in 0..turns {
        tokio::task::yield_now().await;
    }
}

// ---------------------------------------------------------------------------------------------
// error_reply_to_one_caller
// ---------------------------------------------------------------------------------------------

const ERROR_CALLERS: usize = 16;
const ERROR_ROUNDS: usize = 200;
/// The failing caller's command, every this many rounds.
const ERROR_EVERY: usize = 10;

fn error_reply_to_one_caller(c: &mut SharedCase) -> Outcome {
    let keys = c.keys("own", ERROR_CALLERS);
    let failing = c.key("failing");
    let backend = c.backend;
    if backend.is_redis() {
        c.reference.make_list(&failing)?;
    }
    let failing = Arc::new(failing);
    let opened = c.open(&Options::default())?;
    let outcomes = opened.run_callers(ERROR_CALLERS, |id, mut caller| {
        let (keys, failing) = (Arc::clone(&keys), Arc::clone(&failing));
        async move {
            for round in 0..ERROR_ROUNDS {
                if id == 0 && round % ERROR_EVERY == 0 {
                    let result = match backend {
                        Backend::Redis | Backend::RedisCluster => {
                            caller.get(&failing).await.map(drop)
                        }
                        // Larger than the server's item limit (`-I 2m` on a private server).
                        Backend::Memcached => {
                            let too_large = patterned_value(2 * 1024 * 1024 + 1);
                            caller.set(&failing, &too_large).await
                        }
                    };
                    match result {
                        Err(Error::Server(message))
                            if backend == Backend::Memcached || message.contains("WRONGTYPE") => {}
                        other => {
                            return Err(Failure::Check(format!(
                                "caller {id}, round {round}: want its own error reply \
                                 (Error::Server), got {other:?}"
                            )));
                        }
                    }
                }
                let want = value(id, round);
                caller
                    .set(&keys[id], &want)
                    .await
                    .map_err(failed(id, round, "set"))?;
                let got = caller
                    .get(&keys[id])
                    .await
                    .map_err(failed(id, round, "get"))?;
                expect_own(id, round, "get of its own key", got, &want)?;
            }
            Ok(())
        }
    });
    every_caller(outcomes)
}

// ---------------------------------------------------------------------------------------------
// server_close
// ---------------------------------------------------------------------------------------------

const CLOSE_CALLERS: usize = 32;
/// Rounds every caller completes (on average) before the server closes the connections.
const ROUNDS_BEFORE_CLOSE: usize = 10;
/// Rounds a caller may begin after the close without an error: a client that opens a new
/// connection (a pool replacing a closed one) goes on answering.
const ROUNDS_AFTER_CLOSE: usize = 20;
/// A hang guard: if the callers have not made their rounds by then, the server closes anyway.
const CLOSE_AT_THE_LATEST: Duration = Duration::from_secs(60);

fn server_close(c: &mut SharedCase) -> Outcome {
    // Servers of its own: a close that reached every client of the kit's servers would fail the
    // cases running beside this one.
    let mut servers = Servers::start_private(&StartOptions::default())
        .map_err(|err| format!("private servers for this case: {err}"))?;
    if c.backend == Backend::RedisCluster {
        (servers.start_cluster(&StartOptions::default()))
            .map_err(|err| format!("a private cluster for this case: {err}"))?;
    }
    let endpoint = (servers.endpoint(c.backend, c.endpoint.transport()))
        .ok_or_else(|| "no private endpoint on this transport".to_string())?;
    let mut reference = Reference::connect(c.backend, &endpoint)?;
    let key = |id| format!("close:{id}").into_bytes();
    let opened = Opened::open(c.connect, &endpoint, &Options::default(), c.connections)?;
    let rounds = Arc::new(AtomicUsize::new(0));
    // Set before the server is asked to close the connections, and once it has.
    let closing = Arc::new(AtomicBool::new(false));
    let closed = Arc::new(AtomicBool::new(false));
    // Callers that are done (early, if they failed before the close), and those the close
    // stopped with an error.
    let finished = Arc::new(AtomicUsize::new(0));
    let stopped = Arc::new(AtomicUsize::new(0));
    let (backend, multiplexed) = (c.backend, c.multiplexed);
    let timeout_is_known = c
        .known_defects
        .iter()
        .any(|defect| defect.input == SERVER_CLOSE);
    std::thread::scope(|scope| {
        let closer = scope.spawn(|| {
            let started = Instant::now();
            while rounds.load(Ordering::SeqCst) < CLOSE_CALLERS * ROUNDS_BEFORE_CLOSE
                && finished.load(Ordering::SeqCst) < CLOSE_CALLERS
                && started.elapsed() < CLOSE_AT_THE_LATEST
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            closing.store(true, Ordering::SeqCst);
            let result = match backend {
                Backend::Redis | Backend::RedisCluster => reference.kill_other_clients(),
                // Returns once the process is gone, and its sockets with it.
                Backend::Memcached => (servers.stop(Backend::Memcached))
                    .map_err(|err| format!("stopping the private memcached: {err}")),
            };
            closed.store(true, Ordering::SeqCst);
            result
        });
        let outcomes = opened.run_callers(CLOSE_CALLERS, |id, mut caller| {
            let (rounds, closing, key) = (Arc::clone(&rounds), Arc::clone(&closing), key(id));
            let (closed, finished) = (Arc::clone(&closed), Arc::clone(&finished));
            let stopped = Arc::clone(&stopped);
            let calls = async move {
                let mut after_the_close = 0;
                for round in 0.. {
                    if closed.load(Ordering::SeqCst) {
                        after_the_close += 1;
                        if after_the_close > ROUNDS_AFTER_CLOSE {
                            return Ok(());
                        }
                    }
                    let want = value(id, round);
                    let result = match caller.set(&key, &want).await {
                        Ok(()) => caller.get(&key).await,
                        Err(err) => Err(err),
                    };
                    match result {
                        Ok(got) => expect_own(id, round, "get of its own key", got, &want)?,
                        Err(err) => {
                            stopped_by_the_close(id, round, &closing, timeout_is_known, err)?;
                            stopped.fetch_add(1, Ordering::SeqCst);
                            return Ok(());
                        }
                    }
                    rounds.fetch_add(1, Ordering::SeqCst);
                }
                Ok(())
            };
            async move {
                let outcome = calls.await;
                finished.fetch_add(1, Ordering::SeqCst);
                outcome
            }
        });
        let closed = closer
            .join()
            .unwrap_or_else(|_| Err("the closing thread panicked".into()));
        closed?;
        every_caller(outcomes)?;
        // One connection (a multiplexer) carried every caller's calls: each must have failed.
        // In a pool, some callers may only ever have used connections opened after the close.
        // A cluster client replaces a lost node connection (finding nodes anew is its job
        // anyway) and may send the calls in flight again: no caller need see the close, and
        // each still got its own replies (checked above).
        let stopped = stopped.load(Ordering::SeqCst);
        let want = match (backend, multiplexed) {
            (Backend::RedisCluster, _) => 0,
            (_, true) => CLOSE_CALLERS,
            (_, false) => 1,
        };
        if stopped < want {
            return Err(Failure::Check(format!(
                "{stopped} of {CLOSE_CALLERS} callers saw the close, want at least {want}"
            )));
        }
        Ok(())
    })
}

/// A caller's first error must be the close: after it began, not a timeout (a client that only
/// notices a closed connection when a timer fires has hung until then), and one that says the
/// connection is gone.
/// `timeout_is_known`: the client's known defect is to notice a close only by a timeout.
fn stopped_by_the_close(
    id: usize,
    round: usize,
    closing: &AtomicBool,
    timeout_is_known: bool,
    err: Error,
) -> Outcome {
    let fail = |why: &str| {
        Err(Failure::Check(format!(
            "caller {id}, round {round}: {why}: {err:?}"
        )))
    };
    if !closing.load(Ordering::SeqCst) {
        fail("an error before the server closed the connection")
    } else if matches!(err, Error::Timeout(_)) && !timeout_is_known {
        fail("the close was noticed only by a timeout")
    } else if !err.breaks_connection() {
        fail("the close surfaced as an error that does not break the connection")
    } else {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// transactions_among_callers
// ---------------------------------------------------------------------------------------------

/// Callers of `transactions_among_callers`: the even ones run transactions.
const TRANSACTION_CALLERS: usize = 16;
const TRANSACTION_ROUNDS: usize = 100;
const ITEMS_PER_TRANSACTION: usize = 3;

fn transactions_among_callers(c: &mut SharedCase) -> Outcome {
    let keys: Arc<Vec<Vec<Vec<u8>>>> = Arc::new(
        (0..TRANSACTION_CALLERS)
            .map(|id| {
                (0..ITEMS_PER_TRANSACTION)
                    .map(|item| c.key(&format!("tx:{id}:{item}")))
                    .collect()
            })
            .collect(),
    );
    let opened = c.open(&Options::default())?;
    let outcomes = opened.run_callers(TRANSACTION_CALLERS, |id, mut caller| {
        let keys = Arc::clone(&keys);
        async move {
            let keys = &keys[id];
            for round in 0..TRANSACTION_ROUNDS {
                let want = value(id, round);
                let read = if id % 2 == 0 {
                    let items: Vec<(&[u8], &[u8])> =
                        keys.iter().map(|key| (&key[..], &want[..])).collect();
                    let stored = caller.transaction(&items).await;
                    stored.map_err(failed(id, round, "transaction"))?;
                    &keys[round % ITEMS_PER_TRANSACTION]
                } else {
                    let stored = caller.set(&keys[0], &want).await;
                    stored.map_err(failed(id, round, "set"))?;
                    &keys[0]
                };
                let got = caller.get(read).await.map_err(failed(id, round, "get"))?;
                expect_own(id, round, "get of a key it just stored", got, &want)?;
            }
            Ok(())
        }
    });
    every_caller(outcomes)?;
    for id in (0..TRANSACTION_CALLERS).step_by(2) {
        let last = value(id, TRANSACTION_ROUNDS - 1);
        for key in &keys[id] {
            let held = c.reference.get(key)?;
            expect_own(id, TRANSACTION_ROUNDS - 1, "reference get", held, &last)?;
        }
    }
    Ok(())
}
