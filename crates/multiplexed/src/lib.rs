//! `multiplexed`: one connection serves every caller. Callers queue their commands; a writer task
//! sends whatever is queued with one `write`, and a reader task hands the replies back in order.
//! The system calls are shared out among the callers — the more callers, the more commands per
//! `write` and replies per `read` — and the server holds one connection, not one per caller. What
//! it gives up: head-of-line blocking (replies come back in order, so one large or slow reply
//! delays every caller queued behind it), and a hop through two tasks on every call. Compare it
//! with `raw-tcp` (a connection per caller, one `write` and one `read` per call) and with the
//! multiplexers inside the libraries (redis-rs's `MultiplexedConnection`, fred).
//!
//! # How it works
//!
//! 1. **A caller queues** its command: under one lock it encodes it straight into the shared write
//!    buffer and pushes its reply slot (the sending half of a oneshot) onto the queue, so that the
//!    slots are in the order of the bytes (`Multiplexed::send`).
//! 2. **The writer** wakes, takes the whole write buffer (swapping in an empty one) and moves the
//!    queued slots to the in-flight queue, under the same lock, then writes the batch. There is no
//!    timer and no batch size to tune: a batch is whatever was queued while the previous `write`
//!    went on, one command when one caller is busy, hundreds under hundreds of callers.
//! 3. **The reader** waits until a command is in flight, decodes the next reply with the
//!    protocol's sans-I/O codec and completes the oldest slot.
//!
//! The protocol is a type parameter, a [`Protocol`]: encode a command, decode one reply. Redis
//! ([`Resp`], the `kvbench-resp` codec) and memcached's text protocol ([`Text`],
//! `kvbench-memcached-reply`) run through the same queue and tasks.
//!
//! # Why matching by order is enough
//!
//! Redis and memcached both execute a connection's commands one at a time, in the order they
//! arrive, and every command this client sends gets exactly one reply. So the n-th reply answers
//! the n-th command written, and the reader needs no request ids: the oldest slot in flight is
//! the one. Anything with zero or several replies per command would break that: memcached's
//! `noreply` (silent on success, and on some failures) and the binary protocol's quiet commands
//! (`getq`, `setq`); Redis's pub/sub (a subscribed connection receives messages it never asked
//! for), `MONITOR`, `CLIENT REPLY OFF|SKIP` and RESP3 push messages. This client sends none of
//! them, and the reader checks each reply's kind against its command (`Expects`): a status
//! where a GET expects a value means the order is lost, and the connection fails.
//!
//! # Cancellation
//!
//! A caller that stops waiting — its future dropped, or a timeout of its own around the call —
//! only drops its receiver. Its slot stays in the queue, so its reply is still read and then
//! thrown away, and the next reply goes to the next caller. Its command, once queued, is sent
//! anyway: it is already part of a byte stream that cannot be taken back.
//!
//! # Failures
//!
//! An error reply (`-WRONGTYPE`, `SERVER_ERROR`) goes to the caller whose command caused it;
//! the others carry on. An error that may leave the stream out of step — the server closing, a
//! malformed reply, a reply of the wrong kind, a write that fails, a timeout — fails the
//! connection (`Shared::fail`): every caller queued or in flight gets that error at once, and
//! every later call fails with [`Broken`]'s error without touching the socket. There is no
//! reconnect.
//!
//! # Timeouts
//!
//! A call waits for its reply at most [`Options::read_timeout`] from the moment it is queued. A
//! reply that late fails the connection, as a read timeout does in every hand-written client:
//! replies come in order, so every caller behind the late one is stuck too, and failing them
//! all now beats letting each wait out a timer of its own. [`Options::write_timeout`] bounds
//! each batch's `write`. The connection is opened the way every hand-written client opens it
//! (the blocking connect of `kvbench-core`, within [`Options::connect_timeout`], `TCP_NODELAY`
//! on), once, before any caller; the socket's own read and write timeouts are set as theirs
//! are, but a non-blocking socket never waits on them: the timers above do the bounding.
//!
//! # Cost model
//!
//! Per call: a oneshot (one allocation), a lock to queue, a wake-up of the writer, a timer, and
//! the hop through the reader; a GET hit allocates its value (memcached: its echoed key too).
//! Per batch: one `write`; per `read`: as many replies as have arrived. So one caller pays about
//! what `raw-tcp` pays plus the task hops, and C callers share the system calls. `set_many`
//! goes through the same queue, keeping at most [`SET_MANY_WINDOW`] commands (or
//! [`SET_MANY_WINDOW_BYTES`]) waiting for replies, so its memory does not grow with the batch.
//!
//! # Faces
//!
//! [`Multiplexed`] is the handle: clone it for each caller (the specs' `connect_shared` hands out
//! clones as [`Handle::Async`]). Its methods are the contract's, natively async, on the tokio
//! runtime it was connected on (a current-thread one is enough; the futures need not be
//! `Send`). [`Blocking`] is one caller behind the blocking [`Client`] contract, on a runtime of
//! its own.
#![deny(missing_docs)]

mod protocols;

pub use protocols::{Answer, Command, Protocol, Resp, Text};

use std::collections::VecDeque;
use std::io;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use kvbench_core::{
    Backend, BoxFuture, Broken, Client, ClientSpec, Concurrency, Endpoint, Error, Handle, Kind,
    Options, Pipelining, Result, SharedClient, Transport,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, oneshot};
use tokio::task::AbortHandle;

use crate::protocols::Expects;

/// Room made for each `read`; the read buffer grows beyond it only for a larger reply.
pub const READ_CHUNK: usize = 64 * 1024;

/// Most `set_many` commands waiting for their replies at once.
pub const SET_MANY_WINDOW: usize = 4096;

/// Most bytes of keys and values of `set_many` commands waiting for their replies at once (one
/// larger item waits alone).
pub const SET_MANY_WINDOW_BYTES: usize = 1 << 20;

/// The Redis client.
pub const SPEC: ClientSpec = ClientSpec {
    name: "multiplexed",
    backend: Backend::Redis,
    summary: "hand-written multiplexer: one connection for every caller, a writer task sending \
              all that is queued in one write, a reader task answering callers in order",
    connect: connect_blocking::<Resp>,
    connect_async: Some(connect_async_resp),
    concurrency: Concurrency::Multiplexed(connect_shared::<Resp>),
    ..SPEC_MEMCACHED
};

/// The same client over memcached's text protocol.
pub const SPEC_MEMCACHED: ClientSpec = ClientSpec {
    name: "multiplexed/memcached",
    backend: Backend::Memcached,
    transports: Transport::ALL,
    kind: Kind::HandWritten,
    summary: "the hand-written multiplexer over memcached's text protocol",
    pipelining: Pipelining::Pipelined(
        "sets queued through the multiplexer, at most 4,096 (1 MiB) awaiting replies; the writer \
         sends whatever is queued in one write",
    ),
    limitations: &[],
    slow_round_trip: None,
    known_defects: &[],
    hostile_outcomes: &[],
    loopback_floor: false,
    connect: connect_blocking::<Text>,
    connect_async: Some(connect_async_text),
    concurrency: Concurrency::Multiplexed(connect_shared::<Text>),
};

/// Where a reply goes: the caller's oneshot, and the kind of reply its command must get.
struct Slot {
    expects: Expects,
    reply: oneshot::Sender<Result<Answer>>,
}

/// What callers, writer and reader share, behind one lock.
#[derive(Default)]
struct Queue {
    /// Commands queued and not yet taken by the writer, back to back.
    write_buf: Vec<u8>,
    /// Their reply slots, in the same order.
    queued: VecDeque<Slot>,
    /// Slots of the commands the writer has taken, oldest first: the order of their replies.
    in_flight: VecDeque<Slot>,
    /// Set by the first error that leaves the stream out of step.
    broken: Broken,
}

/// The queue, and the wake-ups of the two tasks.
#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    /// Commands are queued.
    wake_writer: Notify,
    /// Commands are in flight.
    wake_reader: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // The lock is never held across anything that can panic halfway through an update.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Fails the connection (the first failure is the one kept): every caller queued or in
    /// flight gets `error` now, every later call fails at once, and nothing more is written.
    // ANCHOR: mux_fail
    fn fail(&self, error: Error) -> Error {
        let mut queue = self.lock();
        let _ = queue.broken.note::<()>(Err(copy(&error)));
        queue.write_buf.clear();
        let queue = &mut *queue;
        for slot in queue.in_flight.drain(..).chain(queue.queued.drain(..)) {
            let _ = slot.reply.send(Err(copy(&error)));
        }
        error
    }
    // ANCHOR_END: mux_fail
}

/// The same error again, for each caller it reaches (an [`Error`] may hold an `io::Error`,
/// which is not `Clone`).
fn copy(error: &Error) -> Error {
    match error {
        Error::Io(err) => Error::Io(io::Error::new(err.kind(), err.to_string())),
        Error::Timeout(message) => Error::Timeout(message.clone()),
        Error::Protocol(message) => Error::Protocol(message.clone()),
        // Not reached: no other error fails an open connection.
        other => Error::Protocol(other.to_string()),
    }
}

/// A handle on one multiplexed connection, speaking protocol `P`. Cloning it is cheap and
/// shares the connection: that is how each caller gets one.
#[derive(Clone)]
pub struct Multiplexed<P> {
    shared: Arc<Shared>,
    /// Stops the writer and the reader when the last clone is dropped.
    _tasks: Arc<Tasks>,
    read_timeout: Duration,
    protocol: PhantomData<fn() -> P>,
}

struct Tasks([AbortHandle; 2]);

impl Drop for Tasks {
    fn drop(&mut self) {
        self.0.iter().for_each(AbortHandle::abort);
    }
}

impl<P: Protocol> Multiplexed<P> {
    /// Connects over TCP or a Unix socket and starts the writer and reader tasks; must be
    /// awaited on the tokio runtime the callers will run on.
    pub async fn connect(endpoint: &Endpoint, options: &Options) -> Result<Self> {
        let fail = |source| Error::Connect {
            endpoint: endpoint.to_string(),
            source,
        };
        Ok(match endpoint {
            Endpoint::Tcp(addr) => {
                let stream = kvbench_core::connect_tcp_stream(addr, options, true)?;
                stream.set_nonblocking(true).map_err(fail)?;
                let stream = tokio::net::TcpStream::from_std(stream).map_err(fail)?;
                let (read_half, write_half) = stream.into_split();
                Self::over(read_half, write_half, options)
            }
            Endpoint::Unix(path) => {
                let stream = kvbench_core::connect_unix_stream(path, options)?;
                stream.set_nonblocking(true).map_err(fail)?;
                let stream = tokio::net::UnixStream::from_std(stream).map_err(fail)?;
                let (read_half, write_half) = stream.into_split();
                Self::over(read_half, write_half, options)
            }
        })
    }

    /// Starts the writer and reader tasks over the two halves of a connected stream (what
    /// [`connect`](Self::connect) does with a socket; a test can hand in a counted stream), with
    /// the options' read and write timeouts. Must be called on a tokio runtime.
    pub fn over(
        read_half: impl AsyncRead + Unpin + Send + 'static,
        write_half: impl AsyncWrite + Unpin + Send + 'static,
        options: &Options,
    ) -> Self {
        let shared = Arc::new(Shared::default());
        let reader = read_replies::<P>(Arc::clone(&shared), read_half);
        let writer = write_batches(Arc::clone(&shared), write_half, options.write_timeout);
        let tasks = [
            tokio::spawn(fail_on_error(Arc::clone(&shared), reader)).abort_handle(),
            tokio::spawn(fail_on_error(Arc::clone(&shared), writer)).abort_handle(),
        ];
        Multiplexed {
            shared,
            _tasks: Arc::new(Tasks(tasks)),
            read_timeout: options.read_timeout,
            protocol: PhantomData,
        }
    }

    /// Queues one command and returns the receiver its reply will arrive on. The bytes and the
    /// slot go in under one lock, so the slots are in the order of the bytes.
    // ANCHOR: mux_send
    fn send(&self, command: Command) -> Result<oneshot::Receiver<Result<Answer>>> {
        let (reply, receiver) = oneshot::channel();
        {
            let mut queue = self.shared.lock();
            queue.broken.check()?;
            P::encode(&mut queue.write_buf, &command)?;
            let expects = command.expects();
            queue.queued.push_back(Slot { expects, reply });
        }
        self.shared.wake_writer.notify_one();
        Ok(receiver)
    }
    // ANCHOR_END: mux_send

    /// Waits for the reply on `receiver`, at most the read timeout (see the crate docs).
    async fn receive(&self, receiver: oneshot::Receiver<Result<Answer>>) -> Result<Answer> {
        let limit = self.read_timeout;
        match tokio::time::timeout(limit, receiver).await {
            Ok(Ok(answer)) => answer,
            // Dropped without an answer: only when the runtime the tasks ran on shuts down.
            Ok(Err(_)) => Err(Error::Io(io::ErrorKind::BrokenPipe.into())),
            Err(_) => Err(self.shared.fail(Error::Timeout(format!(
                "no reply within the {limit:?} read timeout"
            )))),
        }
    }

    async fn call(&self, command: Command<'_>) -> Result<Answer> {
        let receiver = self.send(command)?;
        self.receive(receiver).await
    }

    /// `GET key`: `Some(bytes)` on a hit.
    pub async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.call(Command::Get(key)).await? {
            // A memcached VALUE line names its key: another key means the replies are out of step.
            Answer::Value { data, echoed_key }
                if echoed_key.as_deref().is_none_or(|echoed| echoed == key) =>
            {
                Ok(Some(data))
            }
            Answer::Miss => Ok(None),
            other => Err(self.unexpected(other)),
        }
    }

    /// `SET key value`.
    pub async fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let answer = self.call(Command::Set(key, value, None)).await?;
        self.stored(answer)
    }

    /// `SET key value` expiring after `ttl_secs` seconds.
    pub async fn set_ex(&self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()> {
        let answer = self.call(Command::Set(key, value, Some(ttl_secs))).await?;
        self.stored(answer)
    }

    /// Removes a key; whether it existed.
    pub async fn delete(&self, key: &[u8]) -> Result<bool> {
        match self.call(Command::Delete(key)).await? {
            Answer::Deleted(existed) => Ok(existed),
            other => Err(self.unexpected(other)),
        }
    }

    fn stored(&self, answer: Answer) -> Result<()> {
        match answer {
            Answer::Stored => Ok(()),
            other => Err(self.unexpected(other)),
        }
    }

    /// An error reply is its caller's [`Error::Server`]; any other reply a command cannot use
    /// means that replies and commands no longer line up, and fails the connection.
    fn unexpected(&self, answer: Answer) -> Error {
        match answer {
            Answer::Error(message) => Error::Server(message),
            _ => (self.shared).fail(Error::Protocol(
                "a reply that answers another command".into(),
            )),
        }
    }

    /// Every SET queued through the multiplexer, the oldest reply awaited whenever more than
    /// [`SET_MANY_WINDOW`] commands or [`SET_MANY_WINDOW_BYTES`] are waiting. On the first error
    /// it returns: the replies still owed are read and dropped like a cancelled caller's, and
    /// the commands already queued are carried out.
    // ANCHOR: mux_set_many
    pub async fn set_many(&self, items: &[(&[u8], &[u8])]) -> Result<()> {
        let mut waiting = VecDeque::new();
        let mut waiting_bytes = 0;
        for &(key, value) in items {
            let receiver = self.send(Command::Set(key, value, None))?;
            waiting.push_back((receiver, key.len() + value.len()));
            waiting_bytes += key.len() + value.len();
            while waiting.len() > SET_MANY_WINDOW || waiting_bytes > SET_MANY_WINDOW_BYTES {
                let Some((receiver, len)) = waiting.pop_front() else {
                    break;
                };
                waiting_bytes -= len;
                self.stored(self.receive(receiver).await?)?;
            }
        }
        for (receiver, _) in waiting {
            self.stored(self.receive(receiver).await?)?;
        }
        Ok(())
    }
    // ANCHOR_END: mux_set_many
}

/// Runs one of the connection's tasks; its error fails the connection.
async fn fail_on_error(shared: Arc<Shared>, task: impl Future<Output = Result<()>>) {
    if let Err(error) = task.await {
        shared.fail(error);
    }
}

/// The writer task. Each time it is woken it takes everything queued, by however many callers,
/// and sends it with one `write`.
// ANCHOR: mux_batch
async fn write_batches(
    shared: Arc<Shared>,
    mut stream: impl AsyncWrite + Unpin,
    write_timeout: Duration,
) -> Result<()> {
    let mut batch = Vec::new();
    loop {
        shared.wake_writer.notified().await;
        {
            let mut queue = shared.lock();
            queue.broken.check()?;
            std::mem::swap(&mut queue.write_buf, &mut batch);
            let queue = &mut *queue;
            queue.in_flight.extend(queue.queued.drain(..));
        }
        if batch.is_empty() {
            continue;
        }
        // Replies can arrive before the write returns: the reader already knows whose they are.
        shared.wake_reader.notify_one();
        match tokio::time::timeout(write_timeout, stream.write_all(&batch)).await {
            Ok(written) => written?,
            Err(_) => {
                let message = format!("a write still incomplete after {write_timeout:?}");
                return Err(Error::Timeout(message));
            }
        }
        batch.clear();
    }
}
// ANCHOR_END: mux_batch

/// The reader task: one reply for each command in flight, oldest first.
// ANCHOR: mux_fifo
async fn read_replies<P: Protocol>(
    shared: Arc<Shared>,
    mut stream: impl AsyncRead + Unpin,
) -> Result<()> {
    // Bytes received and not yet decoded: `read_buf[start..]`.
    let (mut read_buf, mut start) = (Vec::new(), 0);
    loop {
        // Nothing is read while nothing is asked: bytes no command asked for are never buffered.
        while shared.lock().in_flight.is_empty() {
            shared.wake_reader.notified().await;
        }
        let answer = loop {
            if let Some((answer, len)) = P::decode(&read_buf[start..])? {
                start += len;
                break answer;
            }
            // What is left is the start of one reply, moved to the front once. The buffer grows
            // only with bytes that arrived, never with a length the server merely claims.
            read_buf.drain(..start);
            start = 0;
            read_buf.reserve(READ_CHUNK);
            if stream.read_buf(&mut read_buf).await? == 0 {
                let closed = io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed");
                return Err(Error::Io(closed));
            }
        };
        let Some(slot) = shared.lock().in_flight.pop_front() else {
            return Ok(()); // The connection failed meanwhile.
        };
        if !slot.expects.fits(&answer) {
            let message = format!("a reply that cannot answer a {:?} command", slot.expects);
            let _ = slot.reply.send(Err(Error::Protocol(message.clone())));
            return Err(Error::Protocol(message));
        }
        // A cancelled caller has dropped its receiver: its reply is dropped here, and the next
        // reply still goes to the next caller.
        let _ = slot.reply.send(Ok(answer));
    }
}
// ANCHOR_END: mux_fifo

impl<P: Protocol> SharedClient for Multiplexed<P>
where
    Self: kvbench_core::AsyncClient,
{
    fn handle(&self) -> Handle {
        Handle::Async(Box::new(self.clone()))
    }
}

kvbench_core::impl_async_client_by_boxing!(Multiplexed<Resp>, connect_async_resp);
kvbench_core::impl_async_client_by_boxing!(Multiplexed<Text>, connect_async_text);

/// The specs' `connect_shared`: one connection, whatever number of connections is asked for.
fn connect_shared<'a, P: Protocol>(
    endpoint: &'a Endpoint,
    options: &'a Options,
    _connections: usize,
) -> BoxFuture<'a, Box<dyn SharedClient>>
where
    Multiplexed<P>: SharedClient,
{
    Box::pin(async move {
        let client = Multiplexed::<P>::connect(endpoint, options).await?;
        Ok(Box::new(client) as Box<dyn SharedClient>)
    })
}

/// One caller behind the blocking [`Client`] contract: a [`Multiplexed`] connection on a
/// current-thread runtime of its own, blocked on for each call; the reader and writer run while
/// a call waits (as `lib-redis` drives redis-rs's multiplexer).
pub struct Blocking<P> {
    inner: Multiplexed<P>,
    runtime: tokio::runtime::Runtime,
}

impl<P: Protocol> Blocking<P> {
    /// Builds the runtime and connects on it.
    pub fn connect(endpoint: &Endpoint, options: &Options) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::Io)?;
        let inner = runtime.block_on(Multiplexed::connect(endpoint, options))?;
        Ok(Blocking { inner, runtime })
    }
}

kvbench_core::impl_client_by_blocking_on!(Blocking<Resp>);
kvbench_core::impl_client_by_blocking_on!(Blocking<Text>);

fn connect_blocking<P: Protocol>(endpoint: &Endpoint, options: &Options) -> Result<Box<dyn Client>>
where
    Blocking<P>: Client,
{
    Ok(Box::new(Blocking::<P>::connect(endpoint, options)?))
}
