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
//! 1. **A caller queues** its command (`Multiplexed::send`): under one lock it encodes it
//!    straight into the shared write buffer and pushes its reply slot (its command and the
//!    sending half of a oneshot), so the slots are in the order of the bytes.
//! 2. **The writer** (`write_batches`) wakes, swaps the write buffer for an empty one and writes
//!    what it took. No timer and no batch size: a batch is whatever was queued while the previous
//!    `write` went on, one command when one caller is busy, hundreds under hundreds of callers.
//! 3. **The reader** (`read_replies`), while any slot waits, decodes the next reply as the answer
//!    to the oldest slot's command and completes that slot. The decoding is the [`Protocol`]'s,
//!    sans-I/O: [`Resp`] (the `kvbench-resp` codec) or memcached's [`Text`]
//!    (`kvbench-memcached-reply`); everything else is the same for both. Beyond GET, SET and
//!    DELETE both carry INCR and a multi-key GET (`MGET`, `get k1 … kN`: memcached answers only
//!    the hits, each placed by the key it names); RESP also hashes and transactions.
//!
//! # Why matching by order is enough
//!
//! Redis and memcached both execute a connection's commands one at a time, in the order they
//! arrive, and every slot this client queues gets a reply of a shape it knows in advance: one
//! reply per command, a `VALUE` block per hit then `END` for memcached's multi-key get, and the
//! N + 2 replies of a transaction (below). So the n-th reply answers the n-th slot: the oldest
//! slot is the one, with no request ids. Anything with replies it cannot foresee would break
//! that: memcached's `noreply`, the binary protocol's quiet commands (`getq`, `setq`), Redis's
//! pub/sub, `MONITOR`, `CLIENT REPLY OFF|SKIP` and RESP3 pushes. This client sends none of them,
//! and a reply must be of a kind its [`Command`] can get: a status where a GET expects a value
//! means the order is lost, and the connection fails.
//!
//! # Transactions
//!
//! `MULTI`, the SETs and `EXEC` must reach the server with nothing between them: another caller's
//! GET inside would be queued by the server too, answered `+QUEUED` instead of its value, and its
//! real answer would come back inside EXEC's array. So a transaction of N SETs is one
//! [`Command::Transaction`]: its bytes go into the write buffer under the one lock, back to back,
//! with one slot, which the reader answers only once all N + 2 replies are in — `+OK`, a `+QUEUED`
//! per SET, then EXEC's array of one `+OK` per SET. They are judged as the blocking clients judge
//! them, by their own reader: an error reply among them (`-EXECABORT`) or a nil EXEC is the
//! caller's [`Error::Server`]; a refused `MULTI` (the SETs then ran on their own) or replies of
//! another shape fail the connection. `get_many_pipelined` queues its N GETs under one lock too, as
//! N slots, so that one refused key queues none of them.
//!
//! # Cancellation
//!
//! A caller that stops waiting (its future dropped, or a timeout of its own around the call) only
//! drops its receiver. Its slot stays queued, so its reply is still read and then thrown away,
//! and the next reply goes to the next caller. Its command, once queued, is sent anyway: it is
//! part of a byte stream that cannot be taken back.
//!
//! # Failures and timeouts
//!
//! An error reply (`-WRONGTYPE`, `SERVER_ERROR`) goes to the caller whose command caused it; the
//! others carry on. An error that may leave the stream out of step — the server closing, a
//! malformed reply, a reply of the wrong kind, a failed write, a timeout — fails the connection
//! (`Shared::fail`): every caller waiting gets that error at once, and every later call fails
//! without touching the socket. There is no reconnect.
//!
//! The [timeout rules](kvbench_core::Options#timeouts) every client follows hold here as timers:
//! a call waits for its reply at most [`Options::read_timeout`] from the moment it is queued; a
//! later reply fails the connection, as a read timeout does in every hand-written client:
//! replies come in order, so every caller behind the late one is stuck too. That order also
//! means one timer is enough: the oldest slot's reply is always the first one due, so the reader
//! watches that deadline alone, and a call pays for a clock reading, not for a timer set and
//! cleared (`read_more`). Each batch's `write` gets at most [`Options::write_timeout`], with a
//! timer armed only when the write has to wait. The connection is opened as every hand-written
//! client opens it (`kvbench-core`'s blocking connect within [`Options::connect_timeout`],
//! `TCP_NODELAY` on); its socket's own timeouts are set as theirs are, but a non-blocking socket
//! never waits on them: the timers above do the bounding.
//!
//! # Cost model and faces
//!
//! Per call: a oneshot (one allocation), a lock, a clock reading, a wake-up of the writer, the
//! hop through the reader; a GET hit allocates its value (memcached: its echoed key too). Per
//! batch: one `write`; per `read`: as many replies as have arrived. A reply of many parts
//! (`MGET`'s array, a multi-key get's blocks, a transaction's replies) is decoded again from its
//! start each time more of it arrives, and answered once it is whole. `set_many` goes through
//! the same queue with at most [`SET_MANY_WINDOW`] commands ([`SET_MANY_WINDOW_BYTES`])
//! awaiting replies, so its memory does not grow with the batch.
//!
//! [`Multiplexed`] is the handle, natively async on the tokio runtime it was connected on (a
//! current-thread one is enough): each caller gets a clone, as from the specs' `connect_shared`.
//! The specs' blocking `connect` puts one on a current-thread runtime of its own and blocks on it
//! for each call, as `lib-redis` drives redis-rs's multiplexer.
#![deny(missing_docs)]

mod operations;
mod protocol;
mod resp;
mod spec;
mod text;

pub use protocol::{Answer, Command, Protocol};
pub use resp::Resp;
pub use spec::{SPEC, SPEC_MEMCACHED};
pub use text::Text;

use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::marker::PhantomData;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Poll;
use std::time::Duration;

use kvbench_core::{Broken, Endpoint, Error, Options, Result};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep, sleep, timeout};

/// Room made for each `read`; the read buffer grows beyond it only for a larger reply.
pub const READ_CHUNK: usize = 64 * 1024;

/// Most `set_many` commands waiting for their replies at once.
pub const SET_MANY_WINDOW: usize = 4096;

/// Most bytes of keys and values of `set_many` commands waiting for their replies at once (one
/// larger item waits alone).
pub const SET_MANY_WINDOW_BYTES: usize = 1 << 20;

/// Where a caller's reply arrives.
type Receiver = oneshot::Receiver<Result<Answer>>;

/// A command queued or in flight: the reply it must get, when it was queued (its reply is due
/// a read timeout later), and where its caller waits.
struct Slot {
    command: Command,
    queued_at: Instant,
    reply: oneshot::Sender<Result<Answer>>,
}

/// What callers, writer and reader share, behind one lock.
#[derive(Default)]
struct Queue {
    /// Commands queued and not yet taken by the writer, back to back.
    write_buf: Vec<u8>,
    /// A slot for each command queued or in flight, in the order of the bytes: the order of the
    /// replies, and of their deadlines.
    slots: VecDeque<Slot>,
    /// Set by the first error that leaves the stream out of step.
    broken: Broken,
}

impl Queue {
    /// Appends a command's bytes and its slot, in the same order; the receiver its reply will
    /// arrive on.
    fn push<P: Protocol>(&mut self, command: Command, args: &[&[u8]]) -> Result<Receiver> {
        self.broken.check()?;
        P::encode(&mut self.write_buf, command, args)?;
        let (reply, receiver) = oneshot::channel();
        // Read under the lock, so that the deadlines are in the order of the slots.
        let queued_at = Instant::now();
        self.slots.push_back(Slot {
            command,
            queued_at,
            reply,
        });
        Ok(receiver)
    }
}

/// The queue, and the wake-ups of the two tasks.
#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    /// Commands are queued.
    wake_writer: Notify,
    /// Commands are being written.
    wake_reader: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // The lock is never held across anything that can panic halfway through an update.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Fails the connection (the first failure is the one kept): every caller waiting gets
    /// `error` now, every later call fails at once, and nothing more is written.
    // ANCHOR: mux_fail
    fn fail(&self, error: Error) -> Error {
        let mut queue = self.lock();
        let _ = queue.broken.note::<()>(Err(error.clone()));
        queue.write_buf.clear();
        for slot in queue.slots.drain(..) {
            let _ = slot.reply.send(Err(error.clone()));
        }
        error
    }
    // ANCHOR_END: mux_fail
}

/// A handle on one multiplexed connection, speaking protocol `P`. Cloning it is cheap and
/// shares the connection: that is how each caller gets one.
#[derive(Clone)]
pub struct Multiplexed<P> {
    shared: Arc<Shared>,
    /// The writer and the reader, aborted when the last clone is dropped.
    _tasks: Arc<JoinSet<()>>,
    protocol: PhantomData<fn() -> P>,
}

impl<P: Protocol> Multiplexed<P> {
    /// Connects over TCP or a Unix socket and starts the writer and reader tasks; must be
    /// awaited on the tokio runtime the callers will run on.
    pub async fn connect(endpoint: &Endpoint, options: &Options) -> Result<Self> {
        let fail = |source| Error::Io(source).while_connecting(endpoint);
        Ok(match endpoint {
            Endpoint::Tcp(addr) => {
                let stream = kvbench_core::connect_tcp_stream(addr, options, true)?;
                stream.set_nonblocking(true).map_err(fail)?;
                let (read_half, write_half) =
                    TcpStream::from_std(stream).map_err(fail)?.into_split();
                Self::over(read_half, write_half, options)
            }
            Endpoint::Unix(path) => {
                let stream = kvbench_core::connect_unix_stream(path, options)?;
                stream.set_nonblocking(true).map_err(fail)?;
                let (read_half, write_half) =
                    UnixStream::from_std(stream).map_err(fail)?.into_split();
                Self::over(read_half, write_half, options)
            }
        })
    }

    /// Starts the writer and reader tasks over the two halves of a connected stream (a test can
    /// hand in a counted stream), with the options' read and write timeouts. Must be called on a
    /// tokio runtime.
    pub fn over(
        read_half: impl AsyncRead + Unpin + Send + 'static,
        write_half: impl AsyncWrite + Unpin + Send + 'static,
        options: &Options,
    ) -> Self {
        let shared = Arc::new(Shared::default());
        let mut tasks = JoinSet::new();
        let reader = read_replies::<P>(Arc::clone(&shared), read_half, options.read_timeout);
        tasks.spawn(fail_on_error(Arc::clone(&shared), reader));
        let writer = write_batches(Arc::clone(&shared), write_half, options.write_timeout);
        tasks.spawn(fail_on_error(Arc::clone(&shared), writer));
        Multiplexed {
            shared,
            _tasks: Arc::new(tasks),
            protocol: PhantomData,
        }
    }

    /// Queues one command and returns the receiver its reply will arrive on. The bytes and the
    /// slot go in under one lock, so the slots are in the order of the bytes.
    // ANCHOR: mux_send
    fn send(&self, command: Command, args: &[&[u8]]) -> Result<Receiver> {
        let receiver = self.shared.lock().push::<P>(command, args)?;
        self.shared.wake_writer.notify_one();
        Ok(receiver)
    }
    // ANCHOR_END: mux_send

    // ANCHOR: mux_send_all
    /// Queues `commands` back to back under one lock, so that no other caller's command comes
    /// between them; if one is refused, none is queued.
    fn send_all<'a>(
        &self,
        commands: impl Iterator<Item = (Command, &'a [&'a [u8]])>,
    ) -> Result<Vec<Receiver>> {
        let mut queue = self.shared.lock();
        let (bytes, slots) = (queue.write_buf.len(), queue.slots.len());
        let queued: Result<Vec<_>> = commands.map(|(c, args)| queue.push::<P>(c, args)).collect();
        if queued.is_err() {
            queue.write_buf.truncate(bytes);
            queue.slots.truncate(slots);
        }
        drop(queue);
        self.shared.wake_writer.notify_one();
        queued
    }
    // ANCHOR_END: mux_send_all

    /// Waits for the reply on `receiver`: no timer of its own, as the reader fails the
    /// connection, and with it this call, once the oldest reply is overdue (see the crate docs).
    /// An error reply is this caller's [`Error::Server`].
    async fn receive(&self, receiver: Receiver) -> Result<Answer> {
        match receiver.await {
            Ok(Ok(Answer::Error(message))) => Err(Error::Server(message)),
            Ok(answer) => answer,
            // The slot dropped unanswered: never, as the reader and `fail` answer each they take.
            Err(_) => Err(io::Error::from(io::ErrorKind::BrokenPipe).into()),
        }
    }

    /// Queues one command and waits for its answer.
    async fn call(&self, command: Command, args: &[&[u8]]) -> Result<Answer> {
        self.receive(self.send(command, args)?).await
    }

    /// An answer that does not fit the call it answers (a VALUE for another key): the replies
    /// are out of step, and the connection fails.
    fn out_of_step(&self, what: &str) -> Error {
        self.shared
            .fail(Error::Protocol(format!("out of step: {what}")))
    }

    /// A GET's answer for `key`. A memcached `VALUE` line names its key: another means the
    /// replies are out of step.
    fn value(&self, answer: Answer, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match answer {
            Answer::Value(value, named) if named.iter().all(|named| named == key) => Ok(value),
            _ => Err(self.out_of_step("a VALUE for another key")),
        }
    }

    /// `GET key`: `Some(bytes)` on a hit.
    pub async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.value(self.call(Command::Get, &[key]).await?, key)
    }

    /// `SET key value`.
    pub async fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.call(Command::Set(None), &[key, value]).await.map(drop)
    }

    /// `SET key value` expiring after `ttl_secs` seconds.
    pub async fn set_ex(&self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()> {
        let set_ex = Command::Set(Some(ttl_secs));
        self.call(set_ex, &[key, value]).await.map(drop)
    }

    /// Removes a key; whether it existed.
    pub async fn delete(&self, key: &[u8]) -> Result<bool> {
        let answer = self.call(Command::Delete, &[key]).await?;
        Ok(matches!(answer, Answer::Integer(removed) if removed > 0))
    }

    /// Every SET queued through the multiplexer, the oldest reply awaited whenever more than
    /// [`SET_MANY_WINDOW`] commands or [`SET_MANY_WINDOW_BYTES`] are waiting. On the first error
    /// it returns: the replies still owed are read and dropped like a cancelled caller's, and
    /// the commands already queued are carried out.
    // ANCHOR: mux_set_many
    pub async fn set_many(&self, items: &[(&[u8], &[u8])]) -> Result<()> {
        let (mut waiting, mut waiting_bytes) = (VecDeque::new(), 0);
        for &(key, value) in items {
            let receiver = self.send(Command::Set(None), &[key, value])?;
            waiting.push_back((receiver, key.len() + value.len()));
            waiting_bytes += key.len() + value.len();
            while waiting.len() > SET_MANY_WINDOW || waiting_bytes > SET_MANY_WINDOW_BYTES {
                let Some((receiver, len)) = waiting.pop_front() else {
                    break;
                };
                waiting_bytes -= len;
                self.receive(receiver).await?;
            }
        }
        for (receiver, _) in waiting {
            self.receive(receiver).await?;
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
    limit: Duration,
) -> Result<()> {
    let mut batch = Vec::new();
    loop {
        shared.wake_writer.notified().await;
        std::mem::swap(&mut shared.lock().write_buf, &mut batch);
        if batch.is_empty() {
            continue; // Woken for commands an earlier batch took, or after a failure.
        }
        // The reader starts now: replies can arrive before the write returns.
        shared.wake_reader.notify_one();
        // Almost every write finishes at once, into the socket's buffer: a timer is armed only
        // for one that has to wait, so that the common case pays for none.
        {
            let mut write = pin!(stream.write_all(&batch));
            match poll_fn(|cx| Poll::Ready(write.as_mut().poll(cx))).await {
                Poll::Ready(written) => written?,
                Poll::Pending => timeout(limit, write)
                    .await
                    .map_err(|_| Error::Timeout(format!("a write incomplete after {limit:?}")))??,
            }
        }
        batch.clear();
    }
}
// ANCHOR_END: mux_batch

/// The reader task: one reply for each slot, oldest first, each within `limit` of its queueing.
// ANCHOR: mux_fifo
async fn read_replies<P: Protocol>(
    shared: Arc<Shared>,
    mut stream: impl AsyncRead + Unpin,
    limit: Duration,
) -> Result<()> {
    // Bytes received and not yet decoded: `read_buf[start..]`.
    let (mut read_buf, mut start) = (Vec::new(), 0);
    // One timer for the connection, not one per call: see `read_more`.
    let mut deadline = pin!(sleep(limit));
    loop {
        // Nothing is read while no caller waits: bytes no command asked for are never buffered.
        let command = loop {
            if let Some(slot) = shared.lock().slots.front() {
                break slot.command;
            }
            shared.wake_reader.notified().await;
        };
        let answer = loop {
            if let Some((answer, len)) = P::decode(&read_buf[start..], command)? {
                start += len;
                break answer;
            }
            // What is left is the start of one reply, moved to the front once. The buffer grows
            // only with bytes that arrived, never with a length the server merely claims.
            read_buf.drain(..start);
            start = 0;
            read_buf.reserve(READ_CHUNK);
            let read = stream.read_buf(&mut read_buf);
            if read_more(read, deadline.as_mut(), &shared, limit).await? == 0 {
                let closed = io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed");
                return Err(Error::Io(closed));
            }
        };
        // A cancelled caller has dropped its receiver: its reply is dropped here. (No slot left
        // means the connection failed meanwhile.)
        if let Some(slot) = shared.lock().slots.pop_front() {
            let _ = slot.reply.send(Ok(answer));
        }
    }
}
// ANCHOR_END: mux_fifo

/// Waits for `read`, unless the oldest slot's reply is overdue first: `limit` after it was
/// queued, the connection fails with [`Error::Timeout`]. Replies come in order, so only the
/// oldest slot's deadline can be the first to pass: one timer, `deadline`, watches it. The timer
/// is never set later than that deadline, only earlier: when it fires early (the slot it was set
/// for has been answered since), it is moved to the oldest slot's deadline. At one caller that is
/// once per `limit`, where a timer per call would be set and cleared on every call.
// ANCHOR: mux_deadline
async fn read_more(
    read: impl Future<Output = io::Result<usize>>,
    mut deadline: Pin<&mut Sleep>,
    shared: &Shared,
    limit: Duration,
) -> Result<usize> {
    let mut read = pin!(read);
    poll_fn(|cx| {
        if let Poll::Ready(read) = read.as_mut().poll(cx) {
            return Poll::Ready(read.map_err(Error::from));
        }
        while deadline.as_mut().poll(cx).is_ready() {
            let oldest = shared.lock().slots.front().map(|slot| slot.queued_at);
            let due = oldest.unwrap_or_else(Instant::now) + limit;
            if due <= Instant::now() {
                let late = Error::Timeout(format!("no reply within {limit:?}"));
                return Poll::Ready(Err(late));
            }
            deadline.as_mut().reset(due);
        }
        Poll::Pending
    })
    .await
}
// ANCHOR_END: mux_deadline
