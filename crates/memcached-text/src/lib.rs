//! `memcached-text`: a hand-written client for memcached's text protocol — binary values carried
//! in a line-based protocol by announcing their length, and every reply read (no `noreply`) so
//! that the stream stays in step and every failure is seen. It gives up keys holding spaces or
//! control bytes (refused before sending), CAS and flags. Compare it with
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
//!   stream out of step. This client sends no `noreply` and checks every reply; its pipeline
//!   ([`TextConnection::set_many`]) reads replies while it writes, so the server can never block on
//!   a full output buffer while this side is still writing.
//! - **Many keys, one command, silent misses.** `get k1 … kN` ([`Client::get_many`]) is answered
//!   by a VALUE block for each hit, in the order of the keys (a key asked twice is answered
//!   twice), then one `END`; a miss says nothing. So the replies cannot be matched to the keys by
//!   counting: each block names its key, and fills the first place after the previous block's
//!   that holds that key ([`reply::place_hit`]). A block for a key not asked, or out of
//!   order, means the replies no longer match: [`Error::Protocol`]. Inside the reply a value's
//!   data ends with its CRLF alone; only the last is followed by `END`.
//!   [`Client::get_many_pipelined`] sends a `get <key>` per key through `set_many`'s pipeline
//!   instead: N commands, N replies, matched by order.
//! - **Counters.** `incr <key> 1` ([`Client::incr`]) answers the new value as a bare decimal line.
//!   A missing key (`NOT_FOUND`) and a value that is not a number (`CLIENT_ERROR cannot increment
//!   or decrement non-numeric value`) are [`Error::Server`]: the command is one line with no data
//!   block, so even a `CLIENT_ERROR` leaves the stream in step. memcached's counters are unsigned
//!   64-bit (and wrap past `u64::MAX`); a value above `i64::MAX`, which the contract's `i64`
//!   cannot hold, is [`Error::Server`] naming it — the counter has been incremented all the same.
//!
//! # Cost model
//!
//! The connection is a [`Wire`] from `kvbench-core`, as the Redis clients' is. One reused write
//! buffer: each command is encoded into it and sent with one `write_all`. One reused read buffer (a
//! [`ReadBuffer`](kvbench_core::ReadBuffer)): a reply line is parsed in place, and a value's data
//! is copied (or, what did not arrive with its header, read straight from the socket) into a `Vec`
//! of the announced size.
//! So a small `get` hit costs one write, one read and one allocation (the returned `Vec`); a miss
//! allocates nothing. A `get_many` of N keys costs one write, as few reads as the reply needs,
//! and one allocation for the result plus one per hit.
//!
//! # What it gives up
//!
//! No CAS (`gets`, `cas`), no flags (always 0), no server pools or key hashing, no reconnect: a
//! connection that saw a malformed reply, an I/O error or a timeout is marked broken and every
//! later call fails without touching the socket. Unix sockets have no connect timeout in `std`
//! (a local connect completes or fails at once unless the listener's backlog is full).
//!
//! # Timeouts
//!
//! [core's timeout rules](kvbench_core::Options#timeouts); in a pipeline, each reply is bounded on
//! its own. See [`TextConnection::set_reply_timeout`].
//!
//! # Compare with
//!
//! The Redis `raw-tcp` client: the same cost model (one write, one read, one allocation per hit),
//! but RESP length-prefixes keys too, so any key is allowed and there is nothing to refuse. And the
//! `memcache` library crate behind `lib-memcache`: binary or text protocol, a pool that may check
//! the connection before each operation, a command written in several pieces, no pipelining.
#![deny(missing_docs)]

pub use kvbench_memcached_reply as reply;

mod checks;

pub use checks::{MAX_KEY_LEN, check_key, check_value, exptime};

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use kvbench_core::{
    Backend, Client, ClientSpec, Endpoint, Error, Operation, Options, Pipelining, Result, Wire,
};

use crate::reply::{DATA_TRAILER, MAX_LINE_LEN, Reply, VALUE_TRAILER};

/// Read buffer size. Reply lines are parsed in place; a value's data is copied out of it into its
/// own `Vec`, and what of a value has not arrived yet is read straight into that `Vec`. 64 KiB
/// also lets one read pick up ~8,000 `STORED` replies in a pipeline.
pub const READ_BUF_LEN: usize = 64 * 1024;
// A whole reply line must fit in the buffer, or `fill` could find it full and still need more.
const _: () = assert!(READ_BUF_LEN > MAX_LINE_LEN);

/// Most commands in one pipeline chunk of `set_many` or `get_many_pipelined`. See [`CHUNK_LEN`].
pub const CHUNK_ITEMS: usize = 256;

// ANCHOR: text_chunk_len
/// Most bytes of commands in one pipeline chunk (a single larger item makes a chunk of its own).
/// A chunk is sent when either limit is reached.
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
/// buffers, so our writes rarely block at all. That is what keeps `get_many_pipelined` safe too,
/// whose replies may be large values: its chunks are as small, so two of them fit the socket
/// buffers even while the server, its replies unread, has stopped reading.
///
/// Cost: one write and at least one read per 256 items, and the last chunk's replies are waited
/// for with nothing left to overlap.
pub const CHUNK_LEN: usize = 32 * 1024;
// ANCHOR_END: text_chunk_len

/// Connects to a memcached endpoint over TCP or a Unix socket, as [`SPEC`] does.
pub fn connect(endpoint: &Endpoint, options: &Options) -> Result<Box<dyn Client>> {
    Ok(match endpoint {
        Endpoint::Tcp(addr) => Box::new(connect_tcp(addr, options)?),
        Endpoint::Unix(path) => Box::new(connect_unix(path, options)?),
    })
}

/// Connects over TCP with `TCP_NODELAY` (a command is one write; nothing is gained by waiting).
pub fn connect_tcp(addr: &str, options: &Options) -> Result<TextConnection<TcpStream>> {
    let mut connection =
        TextConnection::new(kvbench_core::connect_tcp_stream(addr, options, true)?);
    connection.set_reply_timeout(Some(options.read_timeout));
    Ok(connection)
}

/// Connects over a Unix socket (no connect timeout: see the crate docs).
pub fn connect_unix(path: &Path, options: &Options) -> Result<TextConnection<UnixStream>> {
    let mut connection = TextConnection::new(kvbench_core::connect_unix_stream(path, options)?);
    connection.set_reply_timeout(Some(options.read_timeout));
    Ok(connection)
}

// ANCHOR: text_client
/// A connection speaking the memcached text protocol over any byte stream.
pub struct TextConnection<S> {
    /// The stream, a reused write buffer (a whole command, or pipeline chunk, goes out in one
    /// write), the read buffer replies are parsed in, and whether the stream is out of step.
    wire: Wire<S>,
}
// ANCHOR_END: text_client

/// Every exchange goes through [`Wire::exchange`], which needs the connection's [`Wire`].
impl<S> AsMut<Wire<S>> for TextConnection<S> {
    fn as_mut(&mut self) -> &mut Wire<S> {
        &mut self.wire
    }
}

impl<S: Read + Write> TextConnection<S> {
    /// Wraps a connected stream. Timeouts, if any, are the stream's own.
    pub fn new(stream: S) -> Self {
        TextConnection {
            wire: Wire::new(stream, 1024, READ_BUF_LEN),
        }
    }

    /// Fails a reply that takes longer than `limit` to arrive in full
    /// ([`Wire::set_reply_timeout`]); the connect functions set the [`Options::read_timeout`].
    pub fn set_reply_timeout(&mut self, limit: Option<Duration>) {
        self.wire.set_reply_timeout(limit);
    }

    /// The underlying stream, for socket options or for counting what the client did.
    pub fn stream_mut(&mut self) -> &mut S {
        &mut self.wire.stream
    }

    /// True once an error has left the connection out of step; every call then fails at once.
    pub fn is_broken(&self) -> bool {
        self.wire.is_broken()
    }

    // ANCHOR: text_read_line
    /// Reads one reply line and hands it to `judge` with the bytes its ranges index; the line is
    /// consumed whatever `judge` decides. A VALUE line's data is left for
    /// [`read_value`](Self::read_value).
    fn read_line<T>(&mut self, judge: impl FnOnce(Reply, &[u8]) -> Result<T>) -> Result<T> {
        self.wire.read_buf.start_reply();
        loop {
            let pending = self.wire.read_buf.pending();
            if let Some((reply, len)) = reply::parse_line(pending)? {
                let verdict = judge(reply, pending);
                self.wire.read_buf.consume(len);
                return verdict;
            }
            self.wire.fill()?;
        }
    }
    // ANCHOR_END: text_read_line

    /// The data after a VALUE line announcing `len` bytes (capped at
    /// [`MAX_VALUE_LEN`](reply::MAX_VALUE_LEN) by the decoder), found by its count and put in a `Vec` of exactly that size, then what follows
    /// it: `\r\nEND\r\n` after the `last` value of a reply, else its CRLF alone (inside a
    /// multi-key get, where another VALUE or the END comes next).
    fn read_value(&mut self, len: usize, last: bool) -> Result<Vec<u8>> {
        let value = self.wire.take_value(len)?;
        let (complete, trailer): (fn(&[u8]) -> _, _) = match last {
            true => (reply::trailer_complete, VALUE_TRAILER),
            false => (reply::data_end_complete, DATA_TRAILER),
        };
        while !complete(self.wire.read_buf.pending())? {
            self.wire.fill()?;
        }
        self.wire.read_buf.consume(trailer.len());
        Ok(value)
    }

    /// The reply to one `get key`: its value, or `None` for `END`.
    fn read_get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.read_line(|reply, line| hit(reply, line, &[key], 0))? {
            Some((_, len)) => self.read_value(len, true).map(Some),
            None => Ok(None),
        }
    }

    /// The reply to one `set`: `Ok` for STORED, else the error it stands for.
    // ANCHOR: text_read_stored
    fn read_stored(&mut self) -> Result<()> {
        self.read_line(|reply, line| match reply {
            Reply::Stored => Ok(()),
            other => Err(error_of(other, line, "set")),
        })
    }
    // ANCHOR_END: text_read_stored

    fn store(&mut self, key: &[u8], value: &[u8], exptime: u64) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        Wire::exchange(self, |c| {
            encode_set(&mut c.wire.write_buf, key, value, exptime);
            c.wire.flush()?;
            c.read_stored()
        })
    }

    // ANCHOR: text_pipeline
    /// The pipeline behind `set_many` and `get_many_pipelined`: command `i` of `count` is
    /// appended by `encode`, its reply read by `read`. See [`CHUNK_LEN`] for the interleaving and
    /// why it cannot deadlock.
    ///
    /// After the first error reply, no further chunk is sent; the replies already owed are still
    /// read (so the connection stays in step) and then that first error is returned. Commands in
    /// chunks sent before the error may have been carried out. A malformed reply stops at once.
    fn pipeline<T>(
        &mut self,
        count: usize,
        encode: impl Fn(&mut Vec<u8>, usize),
        mut read: impl FnMut(&mut Self, usize) -> Result<T>,
    ) -> Result<Vec<T>> {
        let (mut replies, mut first_error) = (Vec::with_capacity(count), None);
        // Commands [unread..sent) are written but their replies not read.
        let (mut unread, mut sent) = (0, 0);
        loop {
            // The next chunk, unless all is sent or an error reply has stopped the sending.
            let chunk_start = sent;
            while first_error.is_none()
                && sent < count
                && self.wire.write_buf.len() < CHUNK_LEN
                && sent - chunk_start < CHUNK_ITEMS
            {
                encode(&mut self.wire.write_buf, sent);
                sent += 1;
            }
            if sent > chunk_start {
                self.wire.flush()?;
            }
            // ANCHOR: text_pipeline_drain
            // Then the replies to the chunk before it.
            for i in unread..chunk_start {
                match read(self, i) {
                    Ok(reply) => replies.push(reply),
                    Err(err) if !err.breaks_connection() => _ = first_error.get_or_insert(err),
                    Err(err) => return Err(err),
                }
            }
            // ANCHOR_END: text_pipeline_drain
            if chunk_start == sent {
                return first_error.map_or(Ok(replies), Err);
            }
            unread = chunk_start;
        }
    }
    // ANCHOR_END: text_pipeline
}

impl<S: Read + Write + Send> Client for TextConnection<S> {
    // ANCHOR: text_get
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        Wire::exchange(self, |c| {
            encode_line(&mut c.wire.write_buf, &[b"get ", key, b"\r\n"]);
            c.wire.flush()?;
            c.read_get(key)
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
        Wire::exchange(self, |c| {
            encode_line(&mut c.wire.write_buf, &[b"delete ", key, b"\r\n"]);
            c.wire.flush()?;
            c.read_line(|reply, line| match reply {
                Reply::Deleted => Ok(true),
                Reply::NotFound => Ok(false),
                other => Err(error_of(other, line, "delete")),
            })
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
        let encode = |buf: &mut Vec<u8>, i: usize| encode_set(buf, items[i].0, items[i].1, 0);
        Wire::exchange(self, |c| {
            c.pipeline(items.len(), encode, |c, _| c.read_stored())
        })?;
        Ok(())
    }
    // ANCHOR_END: text_set_many

    /// A `get <key>` per key through the same chunked pipeline as `set_many`.
    fn get_many_pipelined(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().try_for_each(|key| check_key(key))?;
        let encode = |buf: &mut Vec<u8>, i: usize| encode_line(buf, &[b"get ", keys[i], b"\r\n"]);
        Wire::exchange(self, |c| {
            c.pipeline(keys.len(), encode, |c, i| c.read_get(keys[i]))
        })
    }

    // ANCHOR: text_incr
    /// `incr <key> 1`: see "Counters" in the crate docs.
    fn incr(&mut self, key: &[u8]) -> Result<i64> {
        check_key(key)?;
        Wire::exchange(self, |c| {
            encode_line(&mut c.wire.write_buf, &[b"incr ", key, b" 1\r\n"]);
            c.wire.flush()?;
            c.read_line(counter_of)
        })
    }
    // ANCHOR_END: text_incr

    // ANCHOR: text_get_many
    /// One `get k1 … kN`: see "Many keys" in the crate docs. No key, no command (memcached
    /// answers a bare `get` with `ERROR`).
    fn get_many(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().try_for_each(|key| check_key(key))?;
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        Wire::exchange(self, |c| {
            c.wire.write_buf.extend_from_slice(b"get");
            keys.iter()
                .for_each(|key| encode_line(&mut c.wire.write_buf, &[b" ", key]));
            c.wire.write_buf.extend_from_slice(b"\r\n");
            c.wire.flush()?;
            let (mut values, mut next) = (vec![None; keys.len()], 0);
            while let Some((i, len)) = c.read_line(|reply, line| hit(reply, line, keys, next))? {
                values[i] = Some(c.read_value(len, false)?);
                next = i + 1;
            }
            Ok(values)
        })
    }
    // ANCHOR_END: text_get_many
}

/// Appends one command, part by part, to the write buffer.
#[inline]
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

// ANCHOR: text_hit
/// A reply line to a get of `keys`, the hits before it having answered keys before `next`: a
/// VALUE's place among the keys ([`reply::place_hit`]) and the length of its data, or `None` for
/// the `END` that closes the reply. A VALUE for a key not asked, or out of order, means replies
/// and commands no longer line up.
fn hit(reply: Reply, line: &[u8], keys: &[&[u8]], next: usize) -> Result<Option<(usize, usize)>> {
    match reply {
        Reply::Value { key, data, .. } => match reply::place_hit(keys, next, &line[key.clone()]) {
            Some(place) => Ok(Some((place, data.len()))),
            None => Err(Error::Protocol(format!(
                "VALUE {} answers no key of the get still unanswered",
                line[key].escape_ascii()
            ))),
        },
        Reply::End => Ok(None),
        other => Err(error_of(other, line, "get")),
    }
}
// ANCHOR_END: text_hit

/// The error a reply line stands for when it is not one its command expects. `SERVER_ERROR`
/// (and `NOT_STORED`) mean the server parsed the command and read its data block: the stream is
/// in step, so [`Error::Server`]. `ERROR` and `CLIENT_ERROR` mean it did not parse our command
/// line, and for a `set` it then reads the data block as a command (memcached 1.6 answers
/// `CLIENT_ERROR bad data chunk` *and* `ERROR`): out of step, so [`Error::Protocol`]. Since keys
/// and lengths are checked before sending, neither should happen. Any other reply belongs to
/// another command: replies and commands no longer line up.
pub fn error_of(reply: Reply, line: &[u8], command: &str) -> Error {
    match reply {
        Reply::ServerError(msg) => Error::Server(line[msg].escape_ascii().to_string()),
        Reply::NotStored => Error::Server("NOT_STORED".into()),
        Reply::ClientError(msg) => Error::Protocol(line[msg].escape_ascii().to_string()),
        other => Error::Protocol(format!("{other:?} answers {command}")),
    }
}

/// The counter `incr <key> 1` left, judged from its one reply line: see "Counters" in the crate
/// docs. `multiplexed` judges its own `incr` replies with it too.
pub fn counter_of(reply: Reply, line: &[u8]) -> Result<i64> {
    match reply {
        Reply::Number(n) => i64::try_from(n)
            .map_err(|_| Error::Server(format!("the counter is {n}, above i64::MAX"))),
        Reply::NotFound => Err(Error::Server("NOT_FOUND: no counter".into())),
        Reply::ClientError(msg) => Err(Error::Server(line[msg].escape_ascii().to_string())),
        other => Err(error_of(other, line, "incr")),
    }
}

/// This client in the suite's list.
pub const SPEC: ClientSpec = ClientSpec {
    name: "memcached-text",
    backend: Backend::Memcached,
    summary: "hand-written text protocol: one write per command, reused buffers, sans-I/O reader",
    pipelining: Pipelining::Pipelined(
        "sets sent in chunks of 256 items or 32 KiB; a chunk's replies are read after the next \
         chunk is written",
    ),
    // The only hand-written memcached client, and the fastest memcached client there is here.
    loopback_floor: true,
    connect,
    operations: &[Operation::Incr, Operation::GetMany],
    ..ClientSpec::HAND_WRITTEN
};
