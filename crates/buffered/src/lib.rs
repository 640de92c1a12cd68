//! `buffered`: pipelining — many commands on the wire before the first reply is read — done
//! without deadlock, by writing 64 KiB chunks on one thread while a second thread reads the
//! replies. It gives up per-item errors (one error reply fails the whole batch) and pays a thread
//! per batch larger than a chunk. Compare it with `raw-tcp` (the same connection, one round trip
//! per item) and with `memcached-text`'s pipeline (chunks interleaved with reads, no thread).
//!
//! **What it teaches.** A round trip costs about the same whether it carries one command or two
//! thousand, so the way to go fast is to stop paying one per command. [`Client::get`],
//! [`Client::set`], [`Client::set_ex`] and [`Client::delete`] work exactly like `raw-tcp` (one
//! `write`, one `read`, reused buffers), but [`Client::set_many`] is overridden: it encodes SETs
//! (with a SET-only encoder, tested against the codec's) into a reused buffer and writes them
//! 64 KiB ([`CHUNK_LEN`]) at a time, while a second thread reads the replies and counts them with
//! a five-byte compare per `+OK\r\n` ([`blocking::read_statuses`]). No allocation per command,
//! no system call per command. Compare it with `raw-tcp` (same codec, one round trip per item),
//! with the `redis-rs` library's `pipe()`, and with `redis-benchmark -P 1000`.
//!
//! **What it offers.** Every operation of the contract. Two more are pipelined:
//! [`Client::get_many_pipelined`] writes every GET in one `write`, then reads the replies; and
//! [`Client::transaction`] writes `MULTI`, the SETs and `EXEC` in one `write`, then reads `+OK`,
//! one `+QUEUED` per SET and EXEC's array ([`blocking::read_transaction`]): one round trip
//! where `raw-tcp` makes N + 2. The others — INCR, MGET, HSET and HGETALL, one command each —
//! are `raw-tcp`'s.
//!
//! **Why a thread.** A client that writes everything before it reads anything bets that the
//! server keeps reading while nobody drains its replies. Once the replies fill the socket
//! buffers, a server with back-pressure (memcached) stops reading, the client's write blocks on a
//! full buffer, and both wait for ever; Redis instead keeps reading and holds every unread reply
//! in its own memory (watch `omem` grow in `CLIENT LIST`). Something has to read while the
//! writer writes. The two choices:
//! - *a reader thread* (chosen): the calling thread writes, a scoped thread reads, both through
//!   shared references to one socket (`&TcpStream` is `Read + Write`, no `try_clone` needed).
//!   The server always has commands queued and the client never stops writing to read. Cost: a
//!   thread spawned per call (a `clone` and a stack mapping), so batches that fit in one chunk
//!   skip it: they are written in one `write` and read on the calling thread.
//! - *bounded chunks interleaved with reads*: write a chunk, read its replies, repeat. No thread,
//!   but each chunk stalls: the server idles while the client reads, the client idles while the
//!   server works.
//!
//! The pipelined GETs and the transaction take the bet instead, and write everything first:
//! their commands are small (a transaction's replies are too, a few bytes per SET), and a GET's
//! reply waits in Redis's memory, and Redis keeps reading (the test
//! `a_pipelined_get_of_half_a_million_keys_completes` writes and asks for far more than the
//! socket buffers hold). Against a server with back-pressure this would need the thread too.
//!
//! **What it gives up.** One error reply fails the whole batch (of SETs, or of pipelined GETs)
//! with [`Error::Server`], reported only after every reply has been drained (so the connection
//! stays in step); the items around it were stored (or read, and dropped). Which items failed is
//! not reported. A transaction is all or nothing: a SET refused while queued aborts it. A malformed reply, an I/O error or a
//! timeout on either thread marks the connection broken and shuts the socket down so the other
//! thread stops at once instead of waiting for its own timeout. No reconnect, no RESP3.
//!
//! **Timeouts.** [core's timeout rules](kvbench_core::Options#timeouts); in a pipeline, each reply
//! is bounded on its own.
#![deny(missing_docs)]

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use kvbench_core::{
    Backend, Client, ClientSpec, Endpoint, Error, Operation, Options, Pipelining, ReadBuffer,
    Result,
};
use kvbench_resp::blocking::{self, Connection, MultiBulk};
use kvbench_resp::encode_set;

/// [`Client::set_many`] writes commands in chunks of at least this many bytes (one `write` each;
/// a chunk holds whole commands, so one large value makes one large chunk). Big enough that the
/// write system call is amortised over ~2,000 small SETs, small enough to stay in cache.
// ANCHOR: chunk_len
pub const CHUNK_LEN: usize = 64 * 1024;
// ANCHOR_END: chunk_len

// ANCHOR: buffered_duplex
/// A socket that one thread can read while another writes, through shared references, and that
/// either thread can shut down to wake the other.
pub trait Duplex: Send + Sync {
    /// Shuts down both directions: a read blocked on another thread returns end-of-file, a
    /// blocked write fails.
    fn shutdown_both(&self) -> io::Result<()>;
}
// ANCHOR_END: buffered_duplex

impl Duplex for TcpStream {
    fn shutdown_both(&self) -> io::Result<()> {
        self.shutdown(Shutdown::Both)
    }
}

impl Duplex for UnixStream {
    fn shutdown_both(&self) -> io::Result<()> {
        self.shutdown(Shutdown::Both)
    }
}

/// The shared RESP connection (`get`, `set`, `set_ex`, `delete`, `incr`, `get_many` and the
/// hash are `raw-tcp`'s), plus a pipelined `set_many`, `get_many_pipelined` and `transaction`,
/// over any socket two threads can share.
pub struct BufferedConnection<S> {
    connection: Connection<S, MultiBulk>,
}

impl<S> BufferedConnection<S>
where
    S: Duplex + Read + Write,
    for<'a> &'a S: Read + Write,
{
    /// Wraps a connected socket (timeouts are the caller's to set on it).
    pub fn new(stream: S) -> Self {
        BufferedConnection {
            connection: Connection::new(stream, MultiBulk),
        }
    }

    /// The underlying socket.
    pub fn stream(&self) -> &S {
        self.connection.stream()
    }

    /// Fails a reply that takes longer than `limit` to arrive in full (see
    /// [`Connection::set_reply_timeout`]).
    pub fn set_reply_timeout(&mut self, limit: Option<Duration>) {
        self.connection.set_reply_timeout(limit);
    }
}

// ANCHOR: buffered_chunks
/// Encodes SETs for the leading items into `write_buf` (cleared first) until it holds at least
/// [`CHUNK_LEN`] bytes; returns how many items it took (at least one, if there is one).
fn encode_chunk(write_buf: &mut Vec<u8>, items: &[(&[u8], &[u8])]) -> usize {
    write_buf.clear();
    let mut taken = 0;
    for (key, value) in items {
        if write_buf.len() >= CHUNK_LEN {
            break;
        }
        encode_set(write_buf, key, value);
        taken += 1;
    }
    taken
}
// ANCHOR_END: buffered_chunks

/// Writes the chunk already in `write_buf` (holding `items[..done]`), then encodes and writes the
/// rest, one chunk per write.
fn write_chunks<W: Write>(
    mut stream: W,
    write_buf: &mut Vec<u8>,
    items: &[(&[u8], &[u8])],
    mut done: usize,
) -> Result<()> {
    loop {
        stream.write_all(write_buf)?;
        if done == items.len() {
            return Ok(());
        }
        done += encode_chunk(write_buf, &items[done..]);
    }
}

/// Writes every chunk on this thread while a scoped thread counts the replies
/// ([`blocking::read_statuses`]). An error reply fails the batch once every reply is in
/// ([`Error::Server`]); any other error on either side fails it at once.
// ANCHOR: pipeline
fn pipeline<S>(
    stream: &S,
    read_buf: &mut ReadBuffer,
    write_buf: &mut Vec<u8>,
    items: &[(&[u8], &[u8])],
    done: usize,
) -> Result<()>
where
    S: Duplex,
    for<'a> &'a S: Read + Write,
{
    // The first failure is the one reported. Shutting the socket down makes the other thread's
    // blocked read or write return now; its own (consequential) error is then dropped.
    let failure: Mutex<Option<Error>> = Mutex::new(None);
    let fail = |err: Error| {
        let mut slot = failure.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            // Already failing: a shutdown error would add nothing.
            let _ = stream.shutdown_both();
            *slot = Some(err);
        }
    };
    let replies = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut reading = stream;
            match blocking::read_statuses(read_buf, &mut reading, items.len(), "OK") {
                // An error reply leaves the stream in step: the batch's outcome, not a failure.
                Err(err) if err.breaks_connection() => {
                    fail(err);
                    Ok(())
                }
                replies => replies,
            }
        });
        if let Err(err) = write_chunks(stream, write_buf, items, done) {
            fail(err);
        }
        reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    });
    match failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(err) => Err(err),
        None => replies,
    }
}
// ANCHOR_END: pipeline

impl<S> Client for BufferedConnection<S>
where
    S: Duplex + Read + Write,
    for<'a> &'a S: Read + Write,
{
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.connection.get(key)
    }

    fn set(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.connection.set(key, value)
    }

    fn set_ex(&mut self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()> {
        self.connection.set_ex(key, value, ttl_secs)
    }

    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        self.connection.delete(key)
    }

    /// Pipelined: see the crate documentation.
    // ANCHOR: buffered_set_many
    fn set_many(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        self.connection.exchange(|stream, write_buf, read_buf| {
            if items.is_empty() {
                return Ok(());
            }
            let done = encode_chunk(write_buf, items);
            if done < items.len() {
                return pipeline(&*stream, read_buf, write_buf, items, done);
            }
            // One chunk: no more bytes in flight than one large SET, which every client writes
            // before reading. No thread needed.
            stream.write_all(write_buf)?;
            blocking::read_statuses(read_buf, stream, items.len(), "OK")
        })
    }
    // ANCHOR_END: buffered_set_many

    /// Pipelined: every GET in one `write`, then the replies, each with a reply timeout of its
    /// own. Commands far smaller than their replies, written at once: this leans on Redis
    /// reading on while its replies wait (see the crate documentation).
    // ANCHOR: buffered_get_many_pipelined
    fn get_many_pipelined(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.connection.pipeline(
            |write_buf| {
                for key in keys {
                    kvbench_resp::encode_get(write_buf, key);
                }
            },
            |read_buf, stream| {
                blocking::read_each(read_buf, stream, keys.len(), |read_buf, stream| {
                    read_buf.start_reply();
                    blocking::read_value(read_buf, stream)
                })
            },
        )
    }
    // ANCHOR_END: buffered_get_many_pipelined

    fn incr(&mut self, key: &[u8]) -> Result<i64> {
        self.connection.incr(key)
    }

    fn get_many(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.connection.get_many(keys)
    }

    fn hset_many(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
        self.connection.hset_many(key, fields)
    }

    fn hgetall(&mut self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.connection.hgetall(key)
    }

    /// Pipelined: `MULTI`, the SETs and `EXEC` in one `write`, then their replies
    /// ([`blocking::read_transaction`]): one round trip, where `raw-tcp` makes one per command.
    // ANCHOR: buffered_transaction
    fn transaction(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        self.connection.pipeline(
            |write_buf| {
                kvbench_resp::encode_command(write_buf, &[b"MULTI"]);
                for (key, value) in items {
                    encode_set(write_buf, key, value);
                }
                kvbench_resp::encode_command(write_buf, &[b"EXEC"]);
            },
            |read_buf, stream| blocking::read_transaction(read_buf, stream, items.len()),
        )
    }
    // ANCHOR_END: buffered_transaction
}

/// Connects over TCP (`TCP_NODELAY` on) with the options' timeouts.
pub fn connect_tcp(addr: &str, options: &Options) -> Result<BufferedConnection<TcpStream>> {
    let connection = blocking::connect_tcp(addr, options, true, MultiBulk)?;
    Ok(BufferedConnection { connection })
}

/// Connects to a Unix socket with the options' read and write timeouts;
/// [`Options::connect_timeout`] is not applied (see "Timeouts" in the crate docs).
pub fn connect_unix(path: &Path, options: &Options) -> Result<BufferedConnection<UnixStream>> {
    let connection = blocking::connect_unix(path, options, MultiBulk)?;
    Ok(BufferedConnection { connection })
}

/// The client as the suite lists it.
pub const SPEC: ClientSpec = ClientSpec {
    name: "buffered",
    backend: Backend::Redis,
    summary: "raw-tcp's reads and writes, plus a pipelined set_many: 64 KiB writes, replies counted on a second thread",
    pipelining: Pipelining::Pipelined(
        "SETs written in 64 KiB chunks while a scoped reader thread counts replies (batches of \
         one chunk: one write, then read, no thread)",
    ),
    connect: |endpoint, options| match endpoint {
        Endpoint::Tcp(addr) => Ok(Box::new(connect_tcp(addr, options)?) as Box<dyn Client>),
        Endpoint::Unix(path) => Ok(Box::new(connect_unix(path, options)?)),
    },
    operations: Operation::ALL,
    ..ClientSpec::HAND_WRITTEN
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_hold_whole_commands_and_at_least_chunk_len() {
        let items: Vec<(&[u8], &[u8])> = vec![(b"foo", b"bar"); 5000];
        let mut write_buf = Vec::new();
        let taken = encode_chunk(&mut write_buf, &items);
        let one = b"*3\r\n$3\r\nSET\r\n$3\r\nfoo\r\n$3\r\nbar\r\n";
        assert_eq!(taken, CHUNK_LEN.div_ceil(one.len()));
        assert_eq!(write_buf.len(), taken * one.len());
        assert!(write_buf.chunks(one.len()).all(|command| command == one));
    }

    #[test]
    fn a_large_value_is_one_chunk_of_its_own() {
        let big = vec![b'x'; 2 * CHUNK_LEN];
        let items: Vec<(&[u8], &[u8])> = vec![(b"a", &big), (b"b", b"2")];
        let mut write_buf = Vec::new();
        assert_eq!(encode_chunk(&mut write_buf, &items), 1);
        assert!(write_buf.starts_with(b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$131072\r\nxxx"));
        assert_eq!(encode_chunk(&mut write_buf, &items[1..]), 1);
        assert_eq!(write_buf, b"*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$1\r\n2\r\n");
    }
}
