//! `multiplexed`: one connection serves every caller. Callers queue their commands in one write
//! buffer and take turns reading the replies, which come back in order. The system calls are
//! shared out among the callers — the more callers, the more commands per `write` and replies per
//! `read` — and the server holds one connection, not one per caller. What it gives up:
//! head-of-line blocking (replies come back in order, so one large or slow reply delays every
//! caller queued behind it), and, under many callers, a wake-up of the writer task and a hand-off
//! of each reply. A lone caller pays for neither: on an idle connection it writes its own command
//! and reads its own reply. Compare it with `raw-tcp` (a connection per caller, one `write` and
//! one `read` per call) and with the multiplexers inside the libraries (redis-rs's
//! `MultiplexedConnection`, fred), which hop through tasks of their own on every call.
//!
//! # How it works
//!
//! 1. **A caller queues** its command (`Multiplexed::send`): under one lock it encodes it
//!    straight into the shared write buffer and pushes its slot (its command, and where it
//!    waits), so the slots are in the order of the bytes.
//! 2. **Writing.** On an idle connection (no slot waiting, nothing unwritten) the caller writes its command
//!    itself, at once: there is nothing to share a `write` with. Behind commands in flight it
//!    wakes the writer task instead (`write_batches`), which sends whatever has been queued by the
//!    time it runs with one `write`. No timer and no batch size: a batch is whatever was queued
//!    meanwhile, hundreds of commands under hundreds of callers.
//! 3. **Reading, by turns.** The connection's read side (the socket's read half and its
//!    buffer) belongs to one caller at a time (`Reader`). A caller that finds it free takes it;
//!    the others wait on a oneshot receiver. The reader decodes each reply as the answer to the
//!    oldest slot's command and sends it to that slot's caller, until its own answer is in; then
//!    it answers every reply already received behind it and hands the read side to the oldest
//!    caller still waiting (`Shared::hand_over`), or leaves it for the next call. So at one caller
//!    a call is a `write`, a `read` and no task hop; under many, one `read` answers a batch. The
//!    decoding is the [`Protocol`]'s, sans-I/O: [`Resp`] (the `kvbench-resp` codec) or
//!    memcached's [`Text`] (`kvbench-memcached-reply`); everything else is the same for both.
//!    Beyond GET, SET and DELETE both carry INCR and a multi-key GET (`MGET`, `get k1 … kN`:
//!    memcached answers only the hits, each placed by the key it names); RESP also hashes and
//!    transactions.
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
//! drops what it waited on. Its slot stays queued, so its reply is still read and then thrown
//! away, and the next reply goes to the next caller. If it was the reader, dropping its turn
//! hands the read side on, a half-read reply and all; a turn handed to a caller that has given
//! up goes on to the next. Its command, once queued, is sent anyway: it is part of a byte stream
//! that cannot be taken back. A call's future that is neither polled nor dropped while it holds
//! the turn holds up the callers behind it (their replies are behind its own anyway, and tokio
//! polls a woken task promptly): the price of reading without a task of its own.
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
//! a call waits for its reply [`Options::read_timeout`] from the moment it is queued (noticed
//! within a quarter of it more); a later reply fails the connection, as a read timeout does in
//! every hand-written client: replies come in order, so every caller behind the late one is
//! stuck too. That order also means one timer is enough: the oldest slot's reply is always the
//! first one due, so the reader watches that one alone. The timer ticks every quarter of the
//! timeout and a slot notes the tick it was queued in (`read_more`): a call pays for neither a
//! clock reading nor a timer set and cleared. The timer travels with the read side, so
//! whichever caller reads watches it. Each batch's `write` gets at most [`Options::write_timeout`], with a
//! timer armed only when the write has to wait. A reply is taken only for a command written
//! whole: a peer that answers before it has read (no server does) is waited out until the
//! writer has written, its write timeout bounding the wait. The connection is opened as every hand-written
//! client opens it (`kvbench-core`'s blocking connect within [`Options::connect_timeout`],
//! `TCP_NODELAY` on); its socket's own timeouts are set as theirs are, but a non-blocking socket
//! never waits on them: the timers above do the bounding.
//!
//! # Cost model and faces
//!
//! Per call at one caller: a lock to queue, the `write`, the `read`, and a lock to take the
//! answer and give the read side back; a GET hit allocates its value (memcached:
//! its echoed key too). Under many callers, per call: a oneshot (one allocation), its wake-up,
//! and a share of the writer's wake-up, its `write`, a reader's `read` and a hand-over of the
//! read side. A reply of many parts (`MGET`'s array, a multi-key get's blocks, a transaction's
//! replies) is decoded again from its start each time more of it arrives, and answered once it
//! is whole. `set_many` goes through the same queue with at most [`SET_MANY_WINDOW`] commands
//! ([`SET_MANY_WINDOW_BYTES`]) awaiting replies, so its memory does not grow with the batch.
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
use std::task::{Context, Poll, Waker, ready};
use std::time::Duration;

use kvbench_core::{Broken, Endpoint, Error, Options, Result};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep, sleep, timeout};

/// Room made for each `read`; the read buffer grows beyond it only for a larger reply.
pub const READ_CHUNK: usize = 64 * 1024;

/// How many times the read timer ticks in one read timeout: a late reply is noticed at most
/// this fraction of the timeout after it fell due.
pub const TICKS_PER_TIMEOUT: u32 = 4;

/// Most `set_many` commands waiting for their replies at once.
pub const SET_MANY_WINDOW: usize = 4096;

/// Most bytes of keys and values of `set_many` commands waiting for their replies at once (one
/// larger item waits alone).
pub const SET_MANY_WINDOW_BYTES: usize = 1 << 20;

/// What a waiting caller is sent: its answer, or its turn to read (the read side, handed on).
enum Delivery {
    Answer(Result<Answer>),
    Turn(Reader),
}

/// A command queued or in flight: its place in the stream, the reply it must get, the read
/// timer's tick it was queued in (its reply is due a read timeout of ticks later), and where
/// its caller waits (none while its caller reads for itself).
struct Slot {
    id: u64,
    command: Command,
    /// Where its bytes end in the stream: written whole once `Queue::written` reaches it.
    end: u64,
    tick: u64,
    reply: Option<oneshot::Sender<Delivery>>,
}

/// How a caller will get the answer to a command it queued.
struct Call {
    id: u64,
    waiting: Waiting,
}

enum Waiting {
    /// No caller was reading: this one reads for itself.
    Turn(Reader),
    /// Another caller reads, and sends the answer, or the turn to read, here.
    Receiver(oneshot::Receiver<Delivery>),
}

/// The connection's read half, with what its reader keeps between turns.
struct ReadSide {
    stream: Box<dyn AsyncRead + Unpin + Send>,
    /// Bytes received and not yet decoded: `buf[start..]`.
    buf: Vec<u8>,
    start: usize,
    /// The connection's one read timer, ticking every [`TICKS_PER_TIMEOUT`]th of `limit`
    /// while a caller reads (see `read_more`).
    timer: Pin<Box<Sleep>>,
    /// The task the timer wakes: the one that polled it last.
    timer_waker: Option<Waker>,
    limit: Duration,
}

/// What callers and the writer share, behind one lock.
struct Queue {
    /// Commands queued and not yet written, back to back.
    write_buf: Vec<u8>,
    /// Bytes written since the connection opened.
    written: u64,
    write_side: Box<dyn AsyncWrite + Unpin + Send>,
    /// A slot for each command queued or in flight, in the order of the bytes: the order of the
    /// replies, and of their deadlines.
    slots: VecDeque<Slot>,
    next_id: u64,
    /// Ticks of the read timer so far.
    ticks: u64,
    /// The read half while no caller is reading (boxed, as it moves from caller to caller).
    read_side: Option<Box<ReadSide>>,
    /// Set by the first error that leaves the stream out of step (kept as it was for a reader
    /// whose slot it took).
    broken: Broken,
}

impl Queue {
    /// Appends a command's bytes and its slot, in the same order; the slot's id.
    fn push<P: Protocol>(&mut self, command: Command, args: &[&[u8]]) -> Result<u64> {
        self.broken.check()?;
        P::encode(&mut self.write_buf, command, args)?;
        let end = self.written + self.write_buf.len() as u64;
        let id = self.next_id;
        self.next_id += 1;
        self.slots.push_back(Slot {
            id,
            command,
            end,
            tick: self.ticks,
            reply: None,
        });
        Ok(id)
    }

    /// How the caller of the slot at `index` gets its answer: the read side, if no caller is
    /// reading, else a receiver.
    fn wait_for(&mut self, shared: &Arc<Shared>, index: usize) -> Call {
        let turn = self.read_side.take();
        let slot = &mut self.slots[index];
        let waiting = match turn {
            Some(side) => Waiting::Turn(Reader::new(shared, side)),
            None => {
                let (reply, receiver) = oneshot::channel();
                slot.reply = Some(reply);
                Waiting::Receiver(receiver)
            }
        };
        Call {
            id: slot.id,
            waiting,
        }
    }

    /// Writes what is queued, as far as the socket takes it without waiting.
    fn poll_write_queued(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.write_buf.is_empty() {
            let written = ready!(Pin::new(&mut self.write_side).poll_write(cx, &self.write_buf))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.write_buf.drain(..written);
            self.written += written as u64;
        }
        Poll::Ready(Ok(()))
    }

    /// The oldest slot's command, and whether its bytes have all been written.
    fn oldest(&self) -> Option<(Command, bool)> {
        let slot = self.slots.front()?;
        Some((slot.command, slot.end <= self.written))
    }
}

/// The queue, and the writer's wake-up.
struct Shared {
    queue: Mutex<Queue>,
    /// Commands are queued behind others in flight.
    wake_writer: Notify,
    /// The writer has written, or the connection failed.
    wrote: Notify,
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
            if let Some(reply) = slot.reply {
                let _ = reply.send(Delivery::Answer(Err(error.clone())));
            }
        }
        self.wrote.notify_one();
        error
    }
    // ANCHOR_END: mux_fail

    /// Hands the read side to the oldest caller still waiting, or, with none, leaves it for the
    /// next call. A caller that gave up has dropped its receiver: the send comes back, and the
    /// turn goes to the next.
    // ANCHOR: mux_hand_over
    fn hand_over(self: &Arc<Self>, mut side: Box<ReadSide>) {
        let mut queue = self.lock();
        for slot in queue.slots.iter_mut() {
            let Some(reply) = slot.reply.take() else {
                continue;
            };
            let turn = Delivery::Turn(Reader::new(self, side));
            let Err(Delivery::Turn(mut refused)) = reply.send(turn) else {
                return;
            };
            // Taken back, so that the refused turn's drop hands nothing over.
            let Some(back) = refused.side.take() else {
                return;
            };
            side = back;
        }
        queue.read_side = Some(side);
    }
    // ANCHOR_END: mux_hand_over
}

/// A caller's turn to read. Dropped, when done or cancelled, it hands the read side on.
struct Reader {
    shared: Arc<Shared>,
    side: Option<Box<ReadSide>>,
}

impl Drop for Reader {
    fn drop(&mut self) {
        if let Some(side) = self.side.take() {
            self.shared.hand_over(side);
        }
    }
}

impl Reader {
    fn new(shared: &Arc<Shared>, side: Box<ReadSide>) -> Reader {
        let shared = Arc::clone(shared);
        Reader {
            shared,
            side: Some(side),
        }
    }

    /// Reads replies until slot `id`'s is in, handing each of the others to its caller; then
    /// hands out the replies already received behind it, so that one `read` answers every
    /// caller it can. Its error may leave the stream out of step: the caller fails the
    /// connection with it.
    // ANCHOR: mux_fifo
    async fn answer_slots<P: Protocol>(&mut self, id: u64) -> Result<Answer> {
        let Reader { shared, side: turn } = self;
        let side = turn.as_mut().ok_or_else(gone)?;
        let mut own = None;
        // Each reply answers the oldest slot (none left: the connection failed meanwhile).
        let mut oldest = shared.lock().oldest();
        while let Some((command, sent)) = oldest {
            if !sent && own.is_none() {
                // Its command is not all written yet (the writer has the rest): no server
                // answers that, but one that answers without reading would be taken at its
                // word. Wait for the writer, whose write timeout bounds the wait.
                shared.wrote.notified().await;
                oldest = shared.lock().oldest();
                continue;
            }
            let Some((answer, len)) = P::decode(&side.buf[side.start..], command)? else {
                if own.is_some() {
                    break; // The rest is for the next reader.
                }
                side.read_more(shared).await?;
                continue;
            };
            side.start += len;
            let mut queue = shared.lock();
            let slot = queue.slots.pop_front();
            oldest = queue.oldest();
            let Some(slot) = slot else {
                break;
            };
            if slot.id == id && oldest.is_none() {
                // Nothing else in flight, so no one to hand the read side to: it goes back
                // now, under this lock, rather than under one more when `self` drops.
                queue.read_side = turn.take();
                return Ok(answer);
            }
            drop(queue);
            if slot.id == id {
                own = Some(answer);
            } else if let Some(reply) = slot.reply {
                // A caller that gave up has dropped its receiver: its reply is dropped here.
                let _ = reply.send(Delivery::Answer(Ok(answer)));
            }
        }
        own.ok_or_else(|| shared.lock().broken.error().cloned().unwrap_or_else(gone))
    }
    // ANCHOR_END: mux_fifo
}

/// The error of a call whose slot went unanswered without a recorded failure: never expected.
fn gone() -> Error {
    Error::Io(io::ErrorKind::BrokenPipe.into())
}

impl ReadSide {
    /// Reads more bytes, unless the oldest slot's reply is overdue first: `limit` after it was
    /// queued, the connection fails with [`Error::Timeout`]. Replies come in order, so only the
    /// oldest slot's deadline can be the first to pass, and one timer watches it. The timer
    /// ticks every [`TICKS_PER_TIMEOUT`]th of `limit` while a caller reads, and a slot
    /// remembers the tick it was queued in: once a whole `limit` of ticks has gone by since,
    /// the reply is late. A tick is counted when it is seen and the next is set from then, so
    /// no tick comes early and no reply is called late before its `limit`; one is noticed at
    /// most a tick after. A call pays for no clock reading and no timer of its own: at one
    /// caller, the timer is reset a few times per `limit`, where a deadline per call would be
    /// set and cleared on every call.
    // ANCHOR: mux_deadline
    async fn read_more(&mut self, shared: &Shared) -> Result<()> {
        // What is left is the start of one reply, moved to the front once. The buffer grows
        // only with bytes that arrived, never with a length the server merely claims.
        if self.start == self.buf.len() {
            self.buf.clear();
        } else {
            self.buf.drain(..self.start);
        }
        self.start = 0;
        self.buf.reserve(READ_CHUNK);
        let ReadSide {
            stream,
            buf,
            timer,
            timer_waker,
            limit,
            ..
        } = self;
        let mut read = pin!(stream.read_buf(buf));
        let read = poll_fn(|cx| {
            if let Poll::Ready(read) = read.as_mut().poll(cx) {
                return Poll::Ready(read.map_err(Error::from));
            }
            // The timer is polled only when it has fired or another task reads: polling it
            // again for the same task would only register the same waker again.
            let same_task = timer_waker
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()));
            if same_task && !timer.is_elapsed() {
                return Poll::Pending;
            }
            while timer.as_mut().poll(cx).is_ready() {
                let mut queue = shared.lock();
                // No slot: the connection failed while this caller read for itself.
                let Some(queued) = queue.slots.front().map(|oldest| oldest.tick) else {
                    return Poll::Ready(Err(queue.broken.error().cloned().unwrap_or_else(gone)));
                };
                queue.ticks += 1;
                // Whole ticks since the first after it was queued: `limit` of them, it is late.
                if queue.ticks - queued > u64::from(TICKS_PER_TIMEOUT) {
                    let late = Error::Timeout(format!("no reply within {limit:?}"));
                    return Poll::Ready(Err(late));
                }
                timer
                    .as_mut()
                    .reset(Instant::now() + *limit / TICKS_PER_TIMEOUT);
            }
            if !same_task {
                *timer_waker = Some(cx.waker().clone());
            }
            Poll::Pending
        });
        match read.await? {
            0 => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed").into()),
            _ => Ok(()),
        }
    }
    // ANCHOR_END: mux_deadline
}

/// A handle on one multiplexed connection, speaking protocol `P`. Cloning it is cheap and
/// shares the connection: that is how each caller gets one.
#[derive(Clone)]
pub struct Multiplexed<P> {
    shared: Arc<Shared>,
    /// The writer, aborted when the last clone is dropped.
    _writer: Arc<JoinSet<()>>,
    protocol: PhantomData<fn() -> P>,
}

impl<P: Protocol> Multiplexed<P> {
    /// Connects over TCP or a Unix socket and starts the writer task; must be awaited on the
    /// tokio runtime the callers will run on.
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

    /// Shares the two halves of a connected stream (a test can hand in a counted stream), with
    /// the options' read and write timeouts, and starts the writer task. Must be called on a
    /// tokio runtime.
    pub fn over(
        read_half: impl AsyncRead + Unpin + Send + 'static,
        write_half: impl AsyncWrite + Unpin + Send + 'static,
        options: &Options,
    ) -> Self {
        let read_side = Box::new(ReadSide {
            stream: Box::new(read_half),
            buf: Vec::new(),
            start: 0,
            timer: Box::pin(sleep(options.read_timeout / TICKS_PER_TIMEOUT)),
            timer_waker: None,
            limit: options.read_timeout,
        });
        let queue = Queue {
            write_buf: Vec::new(),
            written: 0,
            write_side: Box::new(write_half),
            slots: VecDeque::new(),
            next_id: 0,
            ticks: 0,
            read_side: Some(read_side),
            broken: Broken::default(),
        };
        let shared = Arc::new(Shared {
            queue: Mutex::new(queue),
            wake_writer: Notify::new(),
            wrote: Notify::new(),
        });
        let mut writer = JoinSet::new();
        writer.spawn(write_batches(Arc::clone(&shared), options.write_timeout));
        Multiplexed {
            shared,
            _writer: Arc::new(writer),
            protocol: PhantomData,
        }
    }

    /// Queues one command; how its caller will get the answer.
    // ANCHOR: mux_send
    fn send(&self, command: Command, args: &[&[u8]]) -> Result<Call> {
        let mut queue = self.shared.lock();
        let idle = queue.slots.is_empty() && queue.write_buf.is_empty();
        queue.push::<P>(command, args)?;
        let newest = queue.slots.len() - 1;
        let call = queue.wait_for(&self.shared, newest);
        self.write(queue, idle);
        Ok(call)
    }

    /// Sends what is queued. On an idle connection the caller writes it at once, as the
    /// socket takes it without waiting: nothing else is in flight to share a write with.
    /// Behind commands in flight, or for what the socket did not take, the writer is woken,
    /// and sends whatever has been queued by the time it runs.
    fn write(&self, mut queue: MutexGuard<'_, Queue>, idle: bool) {
        let mut now = Context::from_waker(Waker::noop());
        let written = idle && matches!(queue.poll_write_queued(&mut now), Poll::Ready(Ok(())));
        drop(queue);
        if !written {
            self.shared.wake_writer.notify_one();
        }
    }
    // ANCHOR_END: mux_send

    // ANCHOR: mux_send_all
    /// Queues `commands` back to back under one lock, so that no other caller's command comes
    /// between them; if one is refused, none is queued.
    fn send_all<'a>(
        &self,
        commands: impl Iterator<Item = (Command, &'a [&'a [u8]])>,
    ) -> Result<Vec<Call>> {
        let mut queue = self.shared.lock();
        let (idle, bytes, first) = (
            queue.slots.is_empty() && queue.write_buf.is_empty(),
            queue.write_buf.len(),
            queue.slots.len(),
        );
        for (command, args) in commands {
            if let Err(error) = queue.push::<P>(command, args) {
                queue.write_buf.truncate(bytes);
                queue.slots.truncate(first);
                return Err(error);
            }
        }
        let calls = (first..queue.slots.len())
            .map(|index| queue.wait_for(&self.shared, index))
            .collect();
        self.write(queue, idle);
        Ok(calls)
    }
    // ANCHOR_END: mux_send_all

    /// Waits for a call's answer: sent by the caller reading, or read by this one when its turn
    /// comes. No timer of its own: the reader fails the connection, and with it this call, once
    /// the oldest reply is overdue (see the crate docs). An error reply is this caller's
    /// [`Error::Server`].
    async fn receive(&self, call: Call) -> Result<Answer> {
        let mut reader = match call.waiting {
            Waiting::Turn(reader) => reader,
            Waiting::Receiver(receiver) => match receiver.await {
                Ok(Delivery::Answer(answer)) => return judged(answer),
                Ok(Delivery::Turn(reader)) => reader,
                // The slot dropped unanswered: never, as readers and `fail` answer each they take.
                Err(_) => return Err(gone()),
            },
        };
        let answer = reader.answer_slots::<P>(call.id).await;
        judged(answer.map_err(|error| self.shared.fail(error)))
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
            let call = self.send(Command::Set(None), &[key, value])?;
            waiting.push_back((call, key.len() + value.len()));
            waiting_bytes += key.len() + value.len();
            while waiting.len() > SET_MANY_WINDOW || waiting_bytes > SET_MANY_WINDOW_BYTES {
                let Some((call, len)) = waiting.pop_front() else {
                    break;
                };
                waiting_bytes -= len;
                self.receive(call).await?;
            }
        }
        for (call, _) in waiting {
            self.receive(call).await?;
        }
        Ok(())
    }
    // ANCHOR_END: mux_set_many
}

/// A caller's answer: an error reply is its [`Error::Server`].
fn judged(answer: Result<Answer>) -> Result<Answer> {
    match answer {
        Ok(Answer::Error(message)) => Err(Error::Server(message)),
        answer => answer,
    }
}

/// The writer task. Each time it is woken it sends everything queued, by however many callers,
/// with one `write`; its error fails the connection.
// ANCHOR: mux_batch
async fn write_batches(shared: Arc<Shared>, limit: Duration) {
    loop {
        shared.wake_writer.notified().await;
        // Almost every write finishes at once, into the socket's buffer: a timer is armed only
        // for one that has to wait, so that the common case pays for none.
        let mut write = pin!(poll_fn(|cx| {
            let mut queue = shared.lock();
            let written = queue.written;
            let polled = queue.poll_write_queued(cx);
            if queue.written > written {
                // A reader may wait for these bytes: every step counts, as the server may stop
                // reading until the replies to the first of them are read.
                shared.wrote.notify_one();
            }
            polled
        }));
        let written = match poll_fn(|cx| Poll::Ready(write.as_mut().poll(cx))).await {
            Poll::Ready(written) => written.map_err(Error::from),
            Poll::Pending => match timeout(limit, write).await {
                Ok(written) => written.map_err(Error::from),
                Err(_) => Err(Error::Timeout(format!(
                    "a write incomplete after {limit:?}"
                ))),
            },
        };
        if let Err(error) = written {
            shared.fail(error);
            return;
        }
    }
}
// ANCHOR_END: mux_batch
