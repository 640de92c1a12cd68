//! `memcached-meta`: a hand-written client for memcached's meta protocol (memcached 1.6 and later),
//! and its lesson is **quiet mode**: the server answers only failures, so a pipelined SET of N
//! items reads almost nothing back. It is the memcached counterpart of a pipeline whose replies
//! are ignored, except that nothing is ignored: a failure still comes back, and names its item.
//! Batch reads are quiet too: a miss says nothing, and a hit is placed by the opaque it carries
//! back. It gives up reading while it writes a batch of sets, and (like `memcached-text`) keys
//! holding spaces or control bytes, CAS and client flags. Compare it with `memcached-text`, the
//! same client in the text protocol, which reads one `STORED` per item.
//!
//! # What it teaches
//!
//! - **Quiet mode, closed by a no-op.** [`MetaConnection::set_many`] sends each item as
//!   `ms <key> <bytes> q O<i>\r\n<data>\r\n`. The `q` flag tells the server to say nothing when
//!   the item is stored (`HD`); a failure (`NS` not stored, `EX`, `NF`) and every error line still
//!   come back. After the last item, one `mn\r\n` (the no-op) asks for `MN\r\n`, which the server
//!   sends only once everything before it is done: when it arrives, the batch is over. A batch of
//!   a million stored items reads back four bytes, where `memcached-text` reads a million
//!   `STORED\r\n` lines — the reads its pipeline spends its time on.
//! - **Opaque tokens name what failed.** Once successes are silent, a reply can no longer be
//!   matched to its command by counting. So each command carries `O<i>`, its index in the batch,
//!   and the server copies the token into the reply: `NS O17` is the reply to the 18th item, and
//!   the error names that item's key. An error line (`SERVER_ERROR ...`) carries no flags, so for
//!   it the client can say only that some item failed. A single command is a batch of one: `O0`,
//!   which its reply must echo, and `mg` also asks for the key back (`k`) and checks it.
//! - **Batch reads: quiet misses, hits placed by their opaque.**
//!   [`MetaConnection::get_many_pipelined`] sends `mg <key> v q O<i>` for each key. With `q` a miss
//!   (`EN`) is not sent at all, so the replies are the hits alone, `VA <bytes> O<i>`, and cannot
//!   be matched to the keys by counting: each is put in the place its opaque names, `i`, the
//!   key's index in the batch. That is what a batch read needs from the meta protocol: the key
//!   echoed back (`k`) would name the key, but a key asked twice would leave two places to choose
//!   from; the index names exactly one, in fewer bytes than most keys. Unlike stored
//!   items, hits answer, so the batch is not written whole before reading: every
//!   [`WRITE_CHUNK_LEN`] bytes of commands are closed by their own `mn`, and each chunk's hits are
//!   read, up to its `MN`, once the next chunk is written — at most two chunks unanswered, which
//!   the socket buffers hold even while the server, its replies unread, has stopped reading.
//! - **The same framing, shorter.** `mg <key> v k O0` is answered
//!   `VA <bytes> k<key> O0\r\n<data>\r\n` or `EN\r\n`: a value is still found by its count,
//!   never by scanning, so it may hold any byte. Replies are read by a sans-I/O decoder,
//!   [`meta::parse_line`] in `kvbench-memcached-reply`, with its limits
//!   ([`MAX_LINE_LEN`](kvbench_memcached_reply::MAX_LINE_LEN), [`MAX_VALUE_LEN`]). Keys are
//!   still fields on a command line, so `memcached-text`'s key and value checks ([`check_key`],
//!   [`check_value`]) and its expiry rule ([`exptime`]) are reused: what cannot be carried is
//!   refused with [`Error::InvalidInput`] before anything is written. (A batch tests each item
//!   against the same rules inline and calls the checks only for an item that fails, for their
//!   error.)
//!
//! # Cost model
//!
//! As `memcached-text`: a [`Wire`], so one reused write buffer (a command goes out in one `write`),
//! one reused read buffer, and one allocation per hit, the returned `Vec`. A `set_many` batch is
//! written in writes of about [`WRITE_CHUNK_LEN`] bytes and, when every item is stored, read with
//! one `read`: `MN\r\n`. A `get_many_pipelined` batch is one write per chunk, and reads that carry
//! only its hits and a `MN` per chunk.
//!
//! Per item of a `set_many` batch, the work is its checks (a pass over the key's bytes) and five
//! copies into the write buffer: `ms `, the key, the rest of the line, the data and its `\r\n`.
//! The rest of the line, ` <bytes> q O<i>\r\n`, is kept on the stack from item to item: the length
//! is written in, digit by digit, and the opaque counted up in place, never formatted from
//! scratch. That is about half the instructions `memcached-text` spends per pipelined item, which
//! formats its numbers and then reads, parses and checks a `STORED` line.
//!
//! # What it gives up
//!
//! - **Reading while writing.** A batch of sets is written whole before anything is read. A
//!   stored item answers nothing, so the server's replies cannot fill its socket buffer while this
//!   side still writes, unless a great many items fail: then the server stops reading, our write
//!   blocks, and the batch fails with [`Error::Timeout`] at the write timeout (connection broken)
//!   instead of hanging. `memcached-text` reads between chunks because every item answers; here
//!   that would cost a `read` per chunk for nothing in the common case.
//! - **Stopping at the first failure.** The server reports failures only after it has read the
//!   items behind them, so every item is sent; the first failure is returned (with how many items
//!   failed) once the `MN` shows the batch is over, and items after it may be stored.
//! - **Going on after an error line in a batch of gets.** It carries no opaque, so it cannot say
//!   which get it answers (memcached sends one when out of memory): the batch fails with
//!   [`Error::Protocol`] and the connection is given up rather than read on.
//! - No multi-key command (the meta protocol has none: `get_many_pipelined` is its batch read),
//!   CAS, client flags, base64 keys, server pools or reconnects; servers older than memcached 1.6
//!   answer `ERROR`. A connection that saw a malformed reply, an I/O error or a timeout is marked
//!   broken and every later call fails without touching the socket.
//!
//! # Timeouts
//!
//! [core's timeout rules](kvbench_core::Options#timeouts), each reply line bounded on its own
//! ([`MetaConnection::set_reply_timeout`]).
#![deny(missing_docs)]

use std::io::{Read, Write};
use std::ops::Range;
use std::time::Duration;

use kvbench_core::{
    Backend, Client, ClientSpec, Endpoint, Error, Options, Pipelining, Result, Wire,
};
use kvbench_memcached_reply::MAX_VALUE_LEN;
pub use kvbench_memcached_reply::meta;
pub use kvbench_memcached_text::{MAX_KEY_LEN, check_key, check_value, encode_line, exptime};
use meta::{MetaReply, Refusal, Status};

/// Read buffer size: reply lines are parsed in place, a value's data is copied (or read) into its
/// own `Vec`. It must hold a whole line, or a full buffer could still need more.
pub const READ_BUF_LEN: usize = 64 * 1024;
const _: () = assert!(READ_BUF_LEN > kvbench_memcached_reply::MAX_LINE_LEN);

// ANCHOR: meta_write_chunk_len
/// A `set_many` batch is written whenever this many bytes of commands are waiting (a larger item
/// makes a write of its own): it bounds the write buffer, not what is in flight, since nothing is
/// read until the batch is over.
pub const WRITE_CHUNK_LEN: usize = 64 * 1024;
// ANCHOR_END: meta_write_chunk_len

/// The opaque of a single command: it is item 0 of a batch of one.
const SINGLE: &[u8] = b"0";

/// Connects to a memcached endpoint over TCP (with `TCP_NODELAY`: a command is one write) or a
/// Unix socket, with `options`' timeouts.
pub fn connect(endpoint: &Endpoint, options: &Options) -> Result<Box<dyn Client>> {
    fn timed<S: Read + Write>(stream: S, options: &Options) -> MetaConnection<S> {
        let mut connection = MetaConnection::new(stream);
        connection.set_reply_timeout(Some(options.read_timeout));
        connection
    }
    Ok(match endpoint {
        Endpoint::Tcp(addr) => {
            let stream = kvbench_core::connect_tcp_stream(addr, options, true)?;
            Box::new(timed(stream, options))
        }
        Endpoint::Unix(path) => {
            let stream = kvbench_core::connect_unix_stream(path, options)?;
            Box::new(timed(stream, options))
        }
    })
}

// ANCHOR: meta_client
/// A connection speaking memcached's meta protocol over any byte stream.
pub struct MetaConnection<S> {
    /// The stream, a reused write buffer (a command, or a chunk of a batch, goes out in one
    /// write), the read buffer reply lines are parsed in, and whether the stream is out of step.
    wire: Wire<S>,
}
// ANCHOR_END: meta_client

/// Every exchange goes through [`Wire::exchange`], which needs the connection's [`Wire`].
impl<S> AsMut<Wire<S>> for MetaConnection<S> {
    fn as_mut(&mut self) -> &mut Wire<S> {
        &mut self.wire
    }
}

impl<S: Read + Write> MetaConnection<S> {
    /// Wraps a connected stream. Timeouts, if any, are the stream's own.
    pub fn new(stream: S) -> Self {
        MetaConnection {
            wire: Wire::new(stream, 1024, READ_BUF_LEN),
        }
    }

    /// Fails a reply line that takes longer than `limit` to arrive in full
    /// ([`Wire::set_reply_timeout`]); [`connect`] sets the [`Options::read_timeout`].
    pub fn set_reply_timeout(&mut self, limit: Option<Duration>) {
        self.wire.set_reply_timeout(limit);
    }

    /// True once an error has left the connection out of step; every call then fails at once.
    pub fn is_broken(&self) -> bool {
        self.wire.is_broken()
    }

    /// Reads the next reply line and hands it to `judge` with the bytes its ranges index; the line
    /// is consumed whatever `judge` decides.
    fn read_line<T>(&mut self, judge: impl FnOnce(&MetaReply, &[u8]) -> Result<T>) -> Result<T> {
        self.wire.read_buf.start_reply();
        loop {
            let pending = self.wire.read_buf.pending();
            if let Some((reply, len)) = meta::parse_line(pending)? {
                let verdict = judge(&reply, pending);
                self.wire.read_buf.consume(len);
                return verdict;
            }
            self.wire.fill()?;
        }
    }

    // ANCHOR: meta_read_line_for
    /// The reply line to the single command just sent about `key`, handed to `judge` like
    /// [`read_line`](Self::read_line)'s: an echoed opaque or key must be this command's, or
    /// replies and commands no longer line up.
    fn read_line_for<T>(
        &mut self,
        key: &[u8],
        judge: impl FnOnce(&Status, &[u8]) -> Result<T>,
    ) -> Result<T> {
        self.read_line(|reply, line| {
            // A flag the reply copies back, if it is not what the command sent.
            let mismatch = |token: &Option<Range<usize>>, sent: &[u8]| match token {
                Some(token) if line[token.clone()] != *sent => Some(text(line, token)),
                _ => None,
            };
            if let Some(opaque) = mismatch(&reply.opaque, SINGLE) {
                let msg = format!("a reply for opaque {opaque} answers the command with O0");
                return Err(Error::Protocol(msg));
            }
            if let Some(other) = mismatch(&reply.key, key) {
                let msg = format!(
                    "a reply for key {other} answers a command for {}",
                    show(key)
                );
                return Err(Error::Protocol(msg));
            }
            judge(&reply.status, line)
        })
    }
    // ANCHOR_END: meta_read_line_for

    /// `<data>\r\n` after a `VA` header announcing `len` bytes (capped at 1 GiB by the decoder):
    /// the data goes into a `Vec` of exactly that size, then its CRLF is checked.
    fn read_value(&mut self, len: usize) -> Result<Vec<u8>> {
        let value = self.wire.take_value(len)?;
        loop {
            if meta::trailer_complete(self.wire.read_buf.pending())? {
                self.wire.read_buf.consume(meta::DATA_TRAILER.len());
                return Ok(value);
            }
            self.wire.fill()?;
        }
    }

    fn store(&mut self, key: &[u8], value: &[u8], exptime: Option<u64>) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        let (mut len, mut ttl) = (itoa::Buffer::new(), itoa::Buffer::new());
        let len = len.format(value.len()).as_bytes();
        let ttl = exptime.map(|exptime| ttl.format(exptime).as_bytes());
        Wire::exchange(self, |c| {
            // `ms <key> <bytes> [T<exptime>] O0`: one command, its numbers formatted on the spot
            // (a `QuietLine` pays for itself over a batch).
            let buf = &mut c.wire.write_buf;
            encode_line(buf, &[b"ms ", key, b" ", len]);
            if let Some(ttl) = ttl {
                encode_line(buf, &[b" T", ttl]);
            }
            encode_line(buf, &[b" O", SINGLE, b"\r\n", value, b"\r\n"]);
            c.wire.flush()?;
            c.read_line_for(key, |status, line| match status {
                Status::Done => Ok(()),
                Status::Refused(Refusal::NotStored) => {
                    Err(Error::Server(format!("NotStored for key {}", show(key))))
                }
                other => Err(error_of(other, line, "ms")),
            })
        })
    }

    /// The quiet batch behind `set_many`: every item, then `mn`, then the replies up to `MN`.
    // ANCHOR: meta_quiet_batch
    fn quiet_batch(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        let mut line = QuietLine::new();
        for (key, value) in items {
            encode_ms(&mut self.wire.write_buf, key, value, &mut line);
            line.count_up();
            if self.wire.write_buf.len() >= WRITE_CHUNK_LEN {
                self.wire.flush()?;
            }
        }
        self.wire.write_buf.extend_from_slice(b"mn\r\n");
        self.wire.flush()?;
        // A stored item said nothing: what comes back is failures, then the MN.
        let (mut first_failure, mut failures) = (None, 0);
        while let Some(failure) = self.read_line(|reply, line| batch_reply(reply, line, items))? {
            failures += 1;
            first_failure.get_or_insert(failure);
        }
        match first_failure {
            None => Ok(()),
            Some(first) => Err(Error::Server(format!(
                "{first}; {failures} of {} items failed",
                items.len()
            ))),
        }
    }
    // ANCHOR_END: meta_quiet_batch

    /// The quiet gets behind `get_many_pipelined`: `mg <key> v q O<i>` for each key, closed by an
    /// `mn` every [`WRITE_CHUNK_LEN`] bytes and after the last; each chunk's hits are read, up to
    /// its `MN`, once the next chunk is written.
    // ANCHOR: meta_quiet_gets
    fn quiet_gets(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let (mut values, mut unanswered) = (vec![None; keys.len()], 0);
        let mut index = itoa::Buffer::new();
        for (n, key) in keys.iter().enumerate() {
            let i = index.format(n).as_bytes();
            encode_line(
                &mut self.wire.write_buf,
                &[b"mg ", key, b" v q O", i, b"\r\n"],
            );
            let last = n + 1 == keys.len();
            if self.wire.write_buf.len() < WRITE_CHUNK_LEN && !last {
                continue;
            }
            self.wire.write_buf.extend_from_slice(b"mn\r\n");
            self.wire.flush()?;
            unanswered += 1;
            // The chunk before this one; after the last, this one too.
            while unanswered > usize::from(!last) {
                let judge = |reply: &MetaReply, line: &[u8]| batch_hit(reply, line, keys.len());
                while let Some((i, len)) = self.read_line(judge)? {
                    values[i] = Some(self.read_value(len)?);
                }
                unanswered -= 1;
            }
        }
        Ok(values)
    }
    // ANCHOR_END: meta_quiet_gets
}

impl<S: Read + Write + Send> Client for MetaConnection<S> {
    // ANCHOR: meta_get
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        Wire::exchange(self, |c| {
            encode_line(
                &mut c.wire.write_buf,
                &[b"mg ", key, b" v k O", SINGLE, b"\r\n"],
            );
            c.wire.flush()?;
            let hit = c.read_line_for(key, |status, line| match status {
                Status::Value(data) => Ok(Some(data.len())),
                Status::Miss => Ok(None),
                other => Err(error_of(other, line, "mg")),
            })?;
            hit.map(|len| c.read_value(len)).transpose()
        })
    }
    // ANCHOR_END: meta_get

    fn set(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.store(key, value, None)
    }

    fn set_ex(&mut self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()> {
        self.store(key, value, Some(exptime(ttl_secs)?))
    }

    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        check_key(key)?;
        Wire::exchange(self, |c| {
            encode_line(
                &mut c.wire.write_buf,
                &[b"md ", key, b" O", SINGLE, b"\r\n"],
            );
            c.wire.flush()?;
            c.read_line_for(key, |status, line| match status {
                Status::Done => Ok(true),
                Status::Refused(Refusal::NotFound) => Ok(false),
                other => Err(error_of(other, line, "md")),
            })
        })
    }

    /// Quiet mode: see the crate docs. Every key and value is checked before anything is written,
    /// so one bad key refuses the whole batch with nothing sent.
    fn set_many(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        items
            .iter()
            .try_for_each(|(key, value)| check_item(key, value))?;
        Wire::exchange(self, |c| c.quiet_batch(items))
    }

    /// Quiet gets: see the crate docs. One bad key refuses the batch with nothing sent.
    fn get_many_pipelined(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().try_for_each(|key| check_key(key))?;
        Wire::exchange(self, |c| c.quiet_gets(keys))
    }
}

// ANCHOR: meta_batch_hit
/// A reply line inside a chunk of quiet gets of `keys` keys: a hit (the place its opaque names,
/// the length of its data), or `None` for the `MN` that closes the chunk. Anything else is
/// `Err`, out of step: a hit naming no place in the batch, and an error line too (it cannot say
/// which get it answers, and the rest of the batch is not read after it).
fn batch_hit(reply: &MetaReply, line: &[u8], keys: usize) -> Result<Option<(usize, usize)>> {
    match &reply.status {
        Status::NoOp => Ok(None),
        Status::Value(data) => match batch_index(reply, line).filter(|&i| i < keys) {
            Some(i) => Ok(Some((i, data.len()))),
            None => Err(Error::Protocol("a hit names no key of the batch".into())),
        },
        // Even `SERVER_ERROR`: it cannot say which get it answers.
        status => Err(Error::Protocol(format!("{status:?} answers a quiet mg"))),
    }
}
// ANCHOR_END: meta_batch_hit

/// The index in its batch that a reply's opaque names, if it is a number.
fn batch_index(reply: &MetaReply, line: &[u8]) -> Option<usize> {
    let digits = std::str::from_utf8(&line[reply.opaque.clone()?]).ok()?;
    digits.parse().ok()
}

// ANCHOR: meta_batch_reply
/// One reply line inside a quiet batch: `Ok(None)` for the closing `MN`, `Ok(Some(why))` for an
/// item that failed (named by its opaque, else unnamed), `Err` for anything that leaves the stream
/// out of step — including a failure whose opaque names no item of the batch.
fn batch_reply(reply: &MetaReply, line: &[u8], items: &[(&[u8], &[u8])]) -> Result<Option<String>> {
    let refusal = match &reply.status {
        Status::NoOp => return Ok(None),
        Status::Refused(refusal) => refusal,
        status => {
            return match error_of(status, line, "a quiet ms") {
                // The server read the item's data and skipped it: still in step.
                Error::Server(msg) => Ok(Some(format!("{msg} for an item of the batch"))),
                err => Err(err),
            };
        }
    };
    match batch_index(reply, line).and_then(|i| items.get(i)) {
        Some((key, _)) => Ok(Some(format!("{refusal:?} for key {}", show(key)))),
        None => Err(Error::Protocol(format!(
            "{refusal:?} with opaque {:?} names no item of a batch of {}",
            reply.opaque.as_ref().map(|token| text(line, token)),
            items.len()
        ))),
    }
}
// ANCHOR_END: meta_batch_reply

/// [`check_key`] and [`check_value`] for an item of a batch, without a call to each per item
/// (for a short key, the calls cost more than the test): a plain key (printable bytes, 1 to
/// [`MAX_KEY_LEN`] of them) and a value within [`MAX_VALUE_LEN`] pass here at once; anything else
/// goes to them, for their verdict and error.
fn check_item(key: &[u8], value: &[u8]) -> Result<()> {
    let printable = |&byte: &u8| byte > b' ' && byte != 0x7f;
    let key_ok = (1..=MAX_KEY_LEN).contains(&key.len()) && key.iter().all(printable);
    if key_ok && value.len() <= MAX_VALUE_LEN {
        return Ok(());
    }
    check_key(key)?;
    check_value(value)
}

/// The error a reply line stands for when it is not one its command expects. `SERVER_ERROR`
/// means the server parsed the command and skipped its data: still in step, so
/// [`Error::Server`]. `ERROR` and `CLIENT_ERROR` mean it could not parse our command, and may
/// read its data as commands: out of step, so [`Error::Protocol`] (keys and lengths are checked
/// before sending, so neither should happen). Any other reply belongs to another command:
/// replies and commands no longer line up.
fn error_of(status: &Status, line: &[u8], command: &str) -> Error {
    match status {
        Status::ServerError(msg) => Error::Server(format!("SERVER_ERROR {}", text(line, msg))),
        Status::ClientError(msg) => Error::Protocol(format!("CLIENT_ERROR {}", text(line, msg))),
        Status::Error => Error::Protocol("ERROR: unknown command".into()),
        other => Error::Protocol(format!("{other:?} answers {command}")),
    }
}

fn text(line: &[u8], range: &Range<usize>) -> String {
    show(&line[range.clone()])
}

fn show(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

// ANCHOR: meta_encode_ms
/// Appends `ms <key> <bytes> q O<i>\r\n<data>\r\n` for item `i` of a quiet batch, the line after
/// the key from `line`: five copies into the write buffer, the key and the data each in one.
// Inlined into the batch's loop, like `QuietLine::count_up`: a call per item would cost about 3%
// of the item.
#[inline(always)]
fn encode_ms(write_buf: &mut Vec<u8>, key: &[u8], value: &[u8], line: &mut QuietLine) {
    for part in [b"ms ", key, line.with_len(value.len()), value, b"\r\n"] {
        write_buf.extend_from_slice(part);
    }
}

/// Where a [`QuietLine`]'s ` <bytes>` ends and ` q O` begins: room for the digits of any `usize`.
const LEN_END: usize = 21;
/// Where its opaque's digits begin.
const OPAQUE: usize = LEN_END + 4;

/// A quiet item's command line after the key, ` <bytes> q O<i>\r\n`, kept on the stack from item
/// to item so that no number is formatted from scratch: each item's length is written in,
/// right-aligned against ` q O`, and the opaque (the item's index in the batch) is counted up in
/// place, mostly by changing its last digit.
struct QuietLine {
    /// The line is `text[..end]` from the space before the length: 47 bytes at most, with
    /// 20-digit numbers.
    text: [u8; 48],
    end: usize,
}

impl QuietLine {
    /// The line of item 0.
    fn new() -> Self {
        let mut text = [b' '; 48];
        let end = OPAQUE + 3;
        text[LEN_END..end].copy_from_slice(b" q O0\r\n");
        QuietLine { text, end }
    }

    /// The whole line for data of `len` bytes, its digits written right to left.
    fn with_len(&mut self, mut len: usize) -> &[u8] {
        let mut start = LEN_END;
        // At least one digit: 0 is `0`.
        while start == LEN_END || len > 0 {
            start -= 1;
            self.text[start] = b'0' + (len % 10) as u8;
            len /= 10;
        }
        self.text[start - 1] = b' ';
        &self.text[start - 1..self.end]
    }

    /// On to the next item: the opaque plus one, carried from its last digit.
    #[inline]
    fn count_up(&mut self) {
        let digits = OPAQUE..self.end - 2;
        for digit in self.text[digits.clone()].iter_mut().rev() {
            if *digit < b'9' {
                *digit += 1;
                return;
            }
            *digit = b'0';
        }
        // 9…9 became 0…0: a leading 1, and one digit more before the CRLF.
        self.text[OPAQUE] = b'1';
        self.text[digits.end..][..3].copy_from_slice(b"0\r\n");
        self.end += 1;
    }
}
// ANCHOR_END: meta_encode_ms

/// This client in the suite's list.
pub const SPEC: ClientSpec = ClientSpec {
    name: "memcached-meta",
    backend: Backend::Memcached,
    summary: "hand-written meta protocol: quiet-mode pipeline (only failures are answered), \
              opaque tokens, sans-I/O reader",
    pipelining: Pipelining::Pipelined(
        "quiet `ms ... q O<i>` commands written in 64 KiB writes, then one `mn`: only failures \
         and the closing MN are read",
    ),
    connect,
    ..ClientSpec::HAND_WRITTEN
};
