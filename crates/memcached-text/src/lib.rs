//! `memcached-text`: a hand-written client for memcached's text protocol — binary values carried
//! in a line-based protocol by announcing their length, and every reply read (no `noreply`) so
//! that the stream stays in step and every failure is seen. It gives up keys holding spaces or
//! control bytes (refused before sending), CAS, flags and multi-key gets. Compare it with
//! `raw-tcp` (RESP length-prefixes keys too, so it refuses nothing) and with the `memcache`
//! library (`lib-memcache`).
//!
//! # What it teaches
//!
//! - **Length-prefixed values in a line-based protocol.** Commands and replies are CRLF-ended
//!   lines of space-separated fields, but a value travels as a raw block whose length is announced
//!   first: `set <key> 0 <exptime> <bytes>\r\n<data>\r\n`, answered `STORED\r\n`;
//!   `get <key>\r\n`, answered `VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n` or `END\r\n`.
//!   The reader finds the data by its count, never by scanning it, so values may hold any byte,
//!   `\r\nEND\r\n` included. The count comes from the peer, so it is capped
//!   ([`reply::MAX_VALUE_LEN`]) before anything is allocated; lines are capped too
//!   ([`reply::MAX_LINE_LEN`]). The reader is sans-I/O ([`reply::decode`], in its own crate,
//!   `kvbench-memcached-reply`, like RESP's): bytes in, "a reply of n bytes" or "need more" out,
//!   tested on byte literals. The client reads a reply line with
//!   [`reply::parse_line`], then a value's data by its count and the trailer after it.
//! - **Why keys are restricted.** A key is a field on a command line, so it cannot hold a space
//!   (it would become the next field; `get a b` is a two-key get) or a CR/LF (it would end the
//!   line and start another command: the key `a\r\nflush_all` would empty the cache). memcached
//!   also caps keys at 250 bytes. Such keys are refused with [`Error::InvalidInput`] before
//!   anything is written; the binary protocol (see the `memcache` crate) has no such limits.
//! - **`noreply` versus reading every reply.** Storage commands accept `noreply`, and a pipeline
//!   of `set ... noreply` would need no reads at all. But the server then stays silent on
//!   failure too (a too-large value is dropped without a word; checked on memcached 1.6.18), and
//!   a malformed line still gets an error reply that a noreply client never reads, leaving the
//!   stream out of sync. This client sends no `noreply` and checks every reply; its pipeline
//!   ([`TextClient::set_many`]) reads replies while it writes, so the server can never block on
//!   a full output buffer while this side is still writing.
//!
//! # Cost model
//!
//! One reused write buffer: each command is encoded into it and sent with one `write_all`. One
//! reused read buffer (a [`ReadBuffer`] from `kvbench-core`, the one the Redis clients use too): a
//! reply line is parsed in place, and a value's data is copied (or, what did not arrive with its
//! header, read straight from the socket) into a `Vec` of the announced size.
//! So a small `get` hit costs one write, one read and one allocation (the returned `Vec`); a miss
//! allocates nothing.
//!
//! # What it gives up
//!
//! No multi-key get, no CAS, no flags (always 0), no server pools or key hashing, no reconnect: a
//! connection that saw a malformed reply, an I/O error or a timeout is marked broken and every
//! later call fails without touching the socket. Unix sockets have no connect timeout in `std`
//! (a local connect completes or fails at once unless the listener's backlog is full).
//!
//! # Timeouts
//!
//! [`Options::connect_timeout`] bounds a TCP connect; a Unix connect has none (above).
//! [`Options::write_timeout`] bounds each `write`. [`Options::read_timeout`] bounds each `read`
//! and also each whole reply: the socket's own timeout only notices a server that goes silent,
//! so a server dripping a byte every 100 ms would otherwise hold a call for as long as it liked.
//! A reply (in a pipeline: each reply) still incomplete after the read timeout fails with
//! [`Error::Timeout`] at the next read. See [`TextClient::set_reply_timeout`].
//!
//! # Compare with
//!
//! The Redis `raw-tcp` client: the same cost model (one write, one read, one allocation per hit),
//! but RESP length-prefixes keys too, so any key is allowed and there is nothing to refuse. And the
//! `memcache` library crate behind `lib-memcache`: binary or text protocol, a pool that may check
//! the connection before each operation, a command written in several pieces, no pipelining.
#![deny(missing_docs)]

pub use kvbench_memcached_reply as reply;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::ops::Range;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kvbench_core::{
    Backend, Broken, Client, ClientSpec, Endpoint, Error, Kind, Options, Pipelining, ReadBuffer,
    Result, Transport,
};

use crate::reply::{MAX_LINE_LEN, MAX_VALUE_LEN, Reply, VALUE_TRAILER};

/// Longest key memcached accepts (`KEY_MAX_LENGTH` in its source).
pub const MAX_KEY_LEN: usize = 250;

/// Read buffer size. Reply lines are parsed in place; a value's data is copied out of it into its
/// own `Vec`, and what of a value has not arrived yet is read straight into that `Vec`. 64 KiB
/// also lets one read pick up ~8,000 `STORED` replies in a pipeline.
pub const READ_BUF_LEN: usize = 64 * 1024;
// A whole reply line must fit in the buffer, or `fill` could find it full and still need more.
const _: () = assert!(READ_BUF_LEN > MAX_LINE_LEN);

/// Most `set` commands in one pipeline chunk of `set_many`. See [`CHUNK_LEN`].
pub const CHUNK_ITEMS: usize = 256;

/// Most bytes of `set` commands in one `set_many` chunk (a single larger item makes a chunk of
/// its own). A chunk is sent when either limit is reached.
///
/// Each chunk is written with one `write_all`, then the replies to the *previous* chunk are read:
/// the server works on one chunk while we read the other's replies, and at most two chunks are in
/// flight. A deadlock needs both directions full at once: our write blocked because the server
/// stopped reading, because its replies to us sit unread. The reply side is what we bound: at
/// most 2 x [`CHUNK_ITEMS`] = 512 unread `STORED` replies, where memcached 1.6.18 stops reading
/// after ~1,400 unread replies on a Unix socket and ~350,000 on TCP (measured on the 2-vCPU dev
/// VM with default Linux socket buffers). So the server keeps reading and even a 1 MiB write
/// completes. Bounding bytes alone is not enough: with only a byte limit, 32 KiB of small sets
/// followed by a 1 MiB value, or 1M small sets in 128 KiB chunks, hit the write timeout on a Unix
/// socket. The byte limit keeps the command side small too: 64 KiB in flight fits the socket
/// buffers, so our writes rarely block at all.
///
/// Cost: one write and at least one read per 256 items, and the last chunk's replies are waited
/// for with nothing left to overlap.
pub const CHUNK_LEN: usize = 32 * 1024;

/// Largest expiry memcached treats as relative; above it, an exptime is an absolute Unix time.
const MAX_RELATIVE_EXPTIME: u32 = 60 * 60 * 24 * 30;

/// This client in the suite's list.
pub const SPEC: ClientSpec = ClientSpec {
    name: "memcached-text",
    backend: Backend::Memcached,
    transports: Transport::ALL,
    kind: Kind::HandWritten,
    summary: "hand-written text protocol: one write per command, reused buffers, sans-I/O reader",
    pipelining: Pipelining::Pipelined(
        "sets sent in chunks of 256 items or 32 KiB; a chunk's replies are read after the next \
         chunk is written",
    ),
    limitations: &[],
    slow_round_trip: None,
    known_defects: &[],
    hostile_outcomes: &[],
    // The only hand-written memcached client, and the fastest memcached client there is here.
    loopback_floor: true,
    connect,
    connect_async: None,
    concurrency: kvbench_core::Concurrency::Threads,
    operations: &[],
};

/// Connects to a memcached endpoint over TCP or a Unix socket, as [`SPEC`] does.
pub fn connect(endpoint: &Endpoint, options: &Options) -> Result<Box<dyn Client>> {
    Ok(match endpoint {
        Endpoint::Tcp(addr) => Box::new(connect_tcp(addr, options)?),
        Endpoint::Unix(path) => Box::new(connect_unix(path, options)?),
    })
}

/// Connects over TCP with `TCP_NODELAY` (a command is one write; nothing is gained by waiting).
pub fn connect_tcp(addr: &str, options: &Options) -> Result<TextClient<TcpStream>> {
    let mut client = TextClient::new(kvbench_core::connect_tcp_stream(addr, options, true)?);
    client.set_reply_timeout(Some(options.read_timeout));
    Ok(client)
}

/// Connects over a Unix socket (no connect timeout: see the crate docs).
pub fn connect_unix(path: &Path, options: &Options) -> Result<TextClient<UnixStream>> {
    let mut client = TextClient::new(kvbench_core::connect_unix_stream(path, options)?);
    client.set_reply_timeout(Some(options.read_timeout));
    Ok(client)
}

/// A connection speaking the memcached text protocol over any byte stream.
pub struct TextClient<S> {
    stream: S,
    /// Reused for every command; a whole command (or pipeline chunk) goes out in one write.
    write_buf: Vec<u8>,
    /// Received bytes not yet parsed; also bounds the time one whole reply may take to arrive.
    read_buf: ReadBuffer,
    /// Set by the first error that leaves the stream out of sync; the connection is not reused.
    broken: Broken,
}

impl<S: Read + Write> TextClient<S> {
    /// Wraps a connected stream. Timeouts, if any, are the stream's own.
    pub fn new(stream: S) -> Self {
        TextClient {
            stream,
            write_buf: Vec::with_capacity(1024),
            read_buf: ReadBuffer::new(READ_BUF_LEN),
            broken: Broken::default(),
        }
    }

    /// Fails a reply that takes longer than `limit` to arrive in full, however steadily its bytes
    /// trickle in. `None` (the default for [`new`](Self::new)) leaves only the stream's own
    /// per-read timeout; the connect functions set the [`Options::read_timeout`].
    pub fn set_reply_timeout(&mut self, limit: Option<Duration>) {
        self.read_buf.set_reply_timeout(limit);
    }

    /// The underlying stream, for socket options or for counting what the client did.
    pub fn stream_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// True once an error has left the connection out of sync; every call then fails at once.
    pub fn is_broken(&self) -> bool {
        self.broken.is_broken()
    }

    /// Runs one exchange; an error that leaves the stream out of sync marks the connection broken.
    fn exchange<T>(&mut self, op: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.broken.check()?;
        let result = op(self);
        self.broken.note(result)
    }

    /// Writes the encoded command(s) in one `write_all`, then empties the buffer for reuse.
    fn send(&mut self) -> Result<()> {
        self.stream.write_all(&self.write_buf)?;
        self.write_buf.clear();
        Ok(())
    }

    /// Sends a one-line command about `key` and reads the reply line.
    fn command(&mut self, key: &[u8], line: &[&[u8]]) -> Result<Reply> {
        encode_line(&mut self.write_buf, line);
        self.send()?;
        self.read_line(key)
    }

    /// Reads one reply line. A VALUE line is consumed but its data is left for
    /// [`read_value`](Self::read_value); it must echo `key`, the command's key, or replies and
    /// commands no longer line up.
    ///
    /// Error replies become errors here, whatever the command. `SERVER_ERROR` (and `NOT_STORED`)
    /// mean the server parsed the command and read its data block: the stream is in sync, so
    /// [`Error::Server`]. `ERROR` and `CLIENT_ERROR` mean it did not parse our command line, and
    /// for a `set` it then reads the data block as a command (memcached 1.6 answers
    /// `CLIENT_ERROR bad data chunk` *and* `ERROR`): out of sync, so [`Error::Protocol`]. Since
    /// keys and lengths are checked before sending, neither should happen.
    fn read_line(&mut self, key: &[u8]) -> Result<Reply> {
        self.read_buf.start_reply();
        loop {
            let pending = self.read_buf.pending();
            if let Some((reply, len)) = reply::parse_line(pending)? {
                let text = |msg: Range<usize>| pending[msg].escape_ascii().to_string();
                let result = match reply {
                    Reply::ServerError(msg) => Err(Error::Server(text(msg))),
                    Reply::NotStored => Err(Error::Server("NOT_STORED".into())),
                    Reply::ClientError(msg) => Err(Error::Protocol(text(msg))),
                    Reply::Value { key: echoed, .. } if pending[echoed.clone()] != *key => {
                        let (echoed, key) = (text(echoed), key.escape_ascii());
                        let msg = format!("VALUE {echoed} answers a command for {key}");
                        Err(Error::Protocol(msg))
                    }
                    other => Ok(other),
                };
                self.read_buf.consume(len);
                return result;
            }
            self.read_buf.fill(&mut self.stream)?;
        }
    }

    /// `<data>\r\nEND\r\n` after a VALUE line announcing `len` bytes (capped at [`MAX_VALUE_LEN`]
    /// by the decoder): the data is found by its count and goes into a `Vec` of exactly that size.
    fn read_value(&mut self, len: usize) -> Result<Vec<u8>> {
        let value = self.read_buf.take_value(&mut self.stream, len)?;
        while !reply::trailer_complete(self.read_buf.pending())? {
            self.read_buf.fill(&mut self.stream)?;
        }
        self.read_buf.consume(VALUE_TRAILER.len());
        Ok(value)
    }

    /// The reply to one `set`: `Ok` for STORED, else the error it stands for.
    fn read_stored(&mut self, key: &[u8]) -> Result<()> {
        match self.read_line(key)? {
            Reply::Stored => Ok(()),
            other => Err(unexpected(&other, "set")),
        }
    }

    fn store(&mut self, key: &[u8], value: &[u8], exptime: u64) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        self.exchange(|c| {
            encode_set(&mut c.write_buf, key, value, exptime);
            c.send()?;
            c.read_stored(key)
        })
    }

    /// The pipeline behind `set_many`; see [`CHUNK_LEN`] for the interleaving and why it cannot
    /// deadlock.
    ///
    /// After the first reply other than STORED, no further chunk is sent; the replies already owed
    /// are still read (so the connection stays in sync) and then that first error is returned.
    /// Items in chunks sent before the error may be stored. A malformed reply stops at once.
    fn pipeline(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        let mut first_error = None;
        // Items [unread..sent) are written but their replies not read; [sent..=i] are encoded.
        let (mut unread, mut sent) = (0, 0);
        for (i, (key, value)) in items.iter().enumerate() {
            encode_set(&mut self.write_buf, key, value, 0);
            let chunk_full = self.write_buf.len() >= CHUNK_LEN || i + 1 - sent >= CHUNK_ITEMS;
            if !chunk_full && i + 1 < items.len() {
                continue;
            }
            self.send()?;
            self.drain(&items[unread..sent], &mut first_error)?;
            (unread, sent) = (sent, i + 1);
            if first_error.is_some() {
                break;
            }
        }
        self.drain(&items[unread..sent], &mut first_error)?;
        first_error.map_or(Ok(()), Err)
    }

    /// Reads the `set` replies owed for `items`, keeping the first in-sync error for later;
    /// an out-of-sync one returns at once.
    fn drain(&mut self, items: &[(&[u8], &[u8])], first_error: &mut Option<Error>) -> Result<()> {
        for (key, _) in items {
            match self.read_stored(key) {
                Err(err) if !err.breaks_connection() => _ = first_error.get_or_insert(err),
                other => other?,
            }
        }
        Ok(())
    }
}

impl<S: Read + Write + Send> Client for TextClient<S> {
    // ANCHOR: text_get
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        self.exchange(|c| match c.command(key, &[b"get ", key, b"\r\n"])? {
            Reply::Value { data, .. } => c.read_value(data.len()).map(Some),
            Reply::End => Ok(None),
            other => Err(unexpected(&other, "get")),
        })
    }
    // ANCHOR_END: text_get

    fn set(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.store(key, value, 0)
    }

    fn set_ex(&mut self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()> {
        self.store(key, value, exptime(ttl_secs)?)
    }

    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        check_key(key)?;
        self.exchange(|c| match c.command(key, &[b"delete ", key, b"\r\n"])? {
            Reply::Deleted => Ok(true),
            Reply::NotFound => Ok(false),
            other => Err(unexpected(&other, "delete")),
        })
    }

    /// Pipelined in chunks: see [`CHUNK_LEN`]. Every key and value is checked before anything is
    /// written, so one bad key refuses the whole batch with nothing sent.
    // ANCHOR: text_set_many
    fn set_many(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        for (key, value) in items {
            check_key(key)?;
            check_value(value)?;
        }
        self.exchange(|c| c.pipeline(items))
    }
    // ANCHOR_END: text_set_many
}

/// Appends one command, part by part, to the write buffer.
pub fn encode_line(write_buf: &mut Vec<u8>, parts: &[&[u8]]) {
    for part in parts {
        write_buf.extend_from_slice(part);
    }
}

/// Appends `set <key> 0 <exptime> <bytes>\r\n<data>\r\n`.
pub fn encode_set(write_buf: &mut Vec<u8>, key: &[u8], value: &[u8], exptime: u64) {
    let (mut exptime_text, mut len_text) = (itoa::Buffer::new(), itoa::Buffer::new());
    let exptime = exptime_text.format(exptime).as_bytes();
    let len = len_text.format(value.len()).as_bytes();
    encode_line(
        write_buf,
        &[
            b"set ", key, b" 0 ", exptime, b" ", len, b"\r\n", value, b"\r\n",
        ],
    );
}

/// A well-formed reply that belongs to another command: replies and commands no longer line up.
fn unexpected(reply: &Reply, command: &str) -> Error {
    Error::Protocol(format!("{reply:?} answers {command}"))
}

/// Refuses keys the text protocol cannot carry: see "Why keys are restricted" in the crate docs.
pub fn check_key(key: &[u8]) -> Result<()> {
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        let msg = format!("key of {} bytes, not 1..={MAX_KEY_LEN}", key.len());
        return Err(Error::InvalidInput(msg));
    }
    match key.iter().find(|&&byte| byte <= b' ' || byte == 0x7f) {
        Some(byte) => Err(Error::InvalidInput(format!(
            "key holds space/control byte {byte:#04x}"
        ))),
        None => Ok(()),
    }
}

/// Refuses values above [`MAX_VALUE_LEN`]: memcached answers a count above `INT_MAX - 2` with
/// `CLIENT_ERROR` and then reads the data as commands. Smaller values over the server's item limit
/// get `SERVER_ERROR object too large for cache`, the data is skipped, and the stream stays in sync.
pub fn check_value(value: &[u8]) -> Result<()> {
    match value.len() {
        0..=MAX_VALUE_LEN => Ok(()),
        len => Err(Error::InvalidInput(format!(
            "value of {len} bytes, over {MAX_VALUE_LEN}"
        ))),
    }
}

/// memcached's exptime for a TTL. 0 would mean "never expires", so it is refused; above 30 days
/// memcached reads the number as an absolute Unix time, so such a TTL is sent as now + TTL (which
/// assumes client and server clocks agree).
pub fn exptime(ttl_secs: u32) -> Result<u64> {
    match ttl_secs {
        0 => Err(Error::InvalidInput("ttl 0 would mean: never expire".into())),
        1..=MAX_RELATIVE_EXPTIME => Ok(u64::from(ttl_secs)),
        _ => {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            Ok(now.as_secs() + u64::from(ttl_secs))
        }
    }
}
