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
//! a five-byte compare per `+OK\r\n`. No allocation per command, no system call per command.
//! Compare it with `raw-tcp` (same codec, one round trip per item), with the `redis-rs` library's
//! `pipe()`, and with `redis-benchmark -P 1000`.
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
//! **What it gives up.** One error reply fails the whole batch with [`Error::Server`], reported
//! only after every reply has been drained (so the connection stays in sync); the items around
//! it were stored. Which items failed is not reported. A malformed reply, an I/O error or a
//! timeout on either thread marks the connection broken and shuts the socket down so the other
//! thread stops at once instead of waiting for its own timeout. No reconnect, no RESP3.
//!
//! **Timeouts.** [`Options::connect_timeout`] bounds a TCP connect (a Unix connect has none: `std`
//! offers no `UnixStream::connect_timeout`, and a local connect only waits while the server's
//! accept backlog is full). [`Options::write_timeout`] bounds each `write`.
//! [`Options::read_timeout`] bounds each `read` and also each whole reply, so a server dripping
//! a byte at a time cannot hold a call for ever: a reply (in a pipeline: the next reply) still
//! incomplete after the timeout fails with [`Error::Timeout`] at the next read.
#![deny(missing_docs)]

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use kvbench_core::{
    Backend, Client, ClientSpec, Endpoint, Error, Kind, Options, Pipelining, ReadBuffer, Result,
    Transport,
};
use kvbench_resp::Header;
use kvbench_resp::blocking::{self, Connection, MultiBulk};

/// [`Client::set_many`] writes commands in chunks of at least this many bytes (one `write` each;
/// a chunk holds whole commands, so one large value makes one large chunk). Big enough that the
/// write system call is amortised over ~2,000 small SETs, small enough to stay in cache.
// ANCHOR: chunk_len
pub const CHUNK_LEN: usize = 64 * 1024;
// ANCHOR_END: chunk_len

/// What SET answers: the reply the pipelined path counts without parsing.
const OK: &[u8] = b"+OK\r\n";

/// A socket that one thread can read while another writes, through shared references, and that
/// either thread can shut down to wake the other.
pub trait Duplex: Send + Sync {
    /// Shuts down both directions: a read blocked on another thread returns end-of-file, a
    /// blocked write fails.
    fn shutdown_both(&self) -> io::Result<()>;
}

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

/// Reads `count` replies to SET. Status replies succeed; error replies are counted and the
/// first one's message kept, so the batch fails only once every reply is drained. The pipelined
/// path lends `read_buf` to the reader thread.
fn count_statuses(
    read_buf: &mut ReadBuffer,
    stream: &mut impl Read,
    count: usize,
) -> Result<Option<String>> {
    let (mut left, mut errors, mut first_error) = (count, 0usize, None);
    let mut unread_before_fill = left;
    read_buf.start_reply();
    while left > 0 {
        // Fast path: a run of +OK\r\n, five bytes compared per reply, nothing parsed.
        let pending = read_buf.pending();
        let mut pos = 0;
        while left > 0 && pending[pos..].starts_with(OK) {
            pos += OK.len();
            left -= 1;
        }
        read_buf.consume(pos);
        if left == 0 {
            break;
        }
        // Anything else (or a reply cut by the end of a read) goes through the decoder.
        let Some((header, used)) = kvbench_resp::parse_header(read_buf.pending())? else {
            // The clock times one reply: it restarts once a reply has come in since the
            // last read (one check per read, not per reply).
            if left < unread_before_fill {
                read_buf.start_reply();
            }
            unread_before_fill = left;
            read_buf.fill(stream)?;
            continue;
        };
        match header {
            Header::Simple(_) => {}
            Header::Error(msg) => {
                errors += 1;
                first_error.get_or_insert_with(|| String::from_utf8_lossy(msg).into_owned());
            }
            _ => {
                return Err(Error::Protocol(
                    "unexpected reply type to SET, wanted a status".into(),
                ));
            }
        }
        read_buf.consume(used);
        left -= 1;
    }
    Ok(first_error.map(|msg| match errors {
        1 => msg,
        _ => format!("{errors} of {count} SETs failed; the first: {msg}"),
    }))
}

/// The shared RESP connection (`get`, `set`, `set_ex` and `delete` are `raw-tcp`'s), plus a
/// pipelined `set_many`, over any socket two threads can share.
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

/// Appends `SET key value` in multi-bulk form: the same bytes as
/// `kvbench_resp::encode_command(write_buf, &[b"SET", key, value])` (a test checks), with the constant
/// head written as one slice and two numbers formatted instead of four. This is the pipeline's
/// hot loop; the specialisation halves its cost.
// ANCHOR: encode_set
fn encode_set(write_buf: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    // *3\r\n$3\r\nSET\r\n$<len>\r\n<key>\r\n$<len>\r\n<value>\r\n
    let mut len = itoa::Buffer::new();
    write_buf.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$");
    write_buf.extend_from_slice(len.format(key.len()).as_bytes());
    write_buf.extend_from_slice(b"\r\n");
    write_buf.extend_from_slice(key);
    write_buf.extend_from_slice(b"\r\n$");
    write_buf.extend_from_slice(len.format(value.len()).as_bytes());
    write_buf.extend_from_slice(b"\r\n");
    write_buf.extend_from_slice(value);
    write_buf.extend_from_slice(b"\r\n");
}
// ANCHOR_END: encode_set

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

/// Writes every chunk on this thread while a scoped thread counts the replies. Returns the
/// batch's server error, if any; `Err` if either side failed.
// ANCHOR: pipeline
fn pipeline<S>(
    stream: &S,
    read_buf: &mut ReadBuffer,
    write_buf: &mut Vec<u8>,
    items: &[(&[u8], &[u8])],
    done: usize,
) -> Result<Option<String>>
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
    let server_error = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut reading = stream;
            count_statuses(read_buf, &mut reading, items.len()).unwrap_or_else(|err| {
                fail(err);
                None
            })
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
        None => Ok(server_error),
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
        let outcome = self.connection.exchange(|stream, write_buf, read_buf| {
            if items.is_empty() {
                return Ok(None);
            }
            let done = encode_chunk(write_buf, items);
            if done < items.len() {
                return pipeline(&*stream, read_buf, write_buf, items, done);
            }
            // One chunk: no more bytes in flight than one large SET, which every client writes
            // before reading. No thread needed.
            stream.write_all(write_buf)?;
            count_statuses(read_buf, stream, items.len())
        })?;
        match outcome {
            None => Ok(()),
            Some(msg) => Err(Error::Server(msg)),
        }
    }
    // ANCHOR_END: buffered_set_many
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
    transports: Transport::ALL,
    kind: Kind::HandWritten,
    summary: "raw-tcp's reads and writes, plus a pipelined set_many: 64 KiB writes, replies counted on a second thread",
    pipelining: Pipelining::Pipelined(
        "SETs written in 64 KiB chunks while a scoped reader thread counts replies (batches of \
         one chunk: one write, then read, no thread)",
    ),
    limitations: &[],
    slow_round_trip: None,
    known_defects: &[],
    hostile_outcomes: &[],
    loopback_floor: false,
    connect: |endpoint, options| match endpoint {
        Endpoint::Tcp(addr) => Ok(Box::new(connect_tcp(addr, options)?) as Box<dyn Client>),
        Endpoint::Unix(path) => Ok(Box::new(connect_unix(path, options)?)),
    },
    connect_async: None,
    concurrency: kvbench_core::Concurrency::Threads,
    operations: &[],
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_set_writes_what_the_codec_writes() {
        let long = vec![b'\n'; 12345];
        for (key, value) in [(&b"foo"[..], &b"bar"[..]), (b"", b""), (b"k\r\n", &long)] {
            let (mut fast, mut codec) = (Vec::new(), Vec::new());
            encode_set(&mut fast, key, value);
            kvbench_resp::encode_command(&mut codec, &[b"SET", key, value]);
            assert_eq!(fast, codec);
        }
    }

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

    /// Feeds `bytes` one read at a time in pieces of `step` bytes.
    fn drip(bytes: &[u8], step: usize) -> kvbench_servers::script::Script<'_> {
        kvbench_servers::script::Script::new(bytes, step)
    }

    #[test]
    fn counts_replies_split_at_every_offset() {
        let replies = b"+OK\r\n+OK\r\n-ERR one\r\n+QUEUED\r\n-ERR two\r\n+OK\r\n";
        for step in 1..=replies.len() {
            let mut read_buf = ReadBuffer::new(blocking::READ_BUF_LEN);
            let mut script = drip(replies, step);
            let outcome = count_statuses(&mut read_buf, &mut script, 6).unwrap();
            assert_eq!(
                outcome.as_deref(),
                Some("2 of 6 SETs failed; the first: ERR one")
            );
            assert_eq!(read_buf.pending(), b"", "step {step} left bytes unread");
        }
    }

    #[test]
    fn one_error_is_reported_as_is() {
        let mut read_buf = ReadBuffer::new(blocking::READ_BUF_LEN);
        let mut script = drip(b"+OK\r\n-OOM no memory\r\n", 64);
        assert_eq!(
            count_statuses(&mut read_buf, &mut script, 2)
                .unwrap()
                .as_deref(),
            Some("OOM no memory")
        );
    }

    #[test]
    fn a_non_status_reply_to_set_is_a_protocol_error() {
        for bad in [":1", "$-1", "!oops"] {
            let replies = format!("+OK\r\n{bad}\r\n");
            let mut read_buf = ReadBuffer::new(blocking::READ_BUF_LEN);
            let err = count_statuses(&mut read_buf, &mut drip(replies.as_bytes(), 64), 2);
            assert!(matches!(err, Err(Error::Protocol(_))), "{bad} gave {err:?}");
        }
    }

    #[test]
    fn missing_replies_are_an_eof_error() {
        let mut read_buf = ReadBuffer::new(blocking::READ_BUF_LEN);
        let err = count_statuses(&mut read_buf, &mut drip(b"+OK\r\n+OK", 64), 3).unwrap_err();
        assert!(
            matches!(err, Error::Io(ref e) if e.kind() == io::ErrorKind::UnexpectedEof),
            "{err:?}"
        );
    }
}
