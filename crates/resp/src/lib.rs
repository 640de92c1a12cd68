//! `kvbench-resp`: RESP2 parsing kept apart from I/O — bytes in, replies out; commands in, bytes
//! out — so every wire form, every malformed length and every reply cut at every byte is tested
//! on byte literals, with no server. It gives up RESP3, and saved state between calls (a reply is
//! rescanned from its start as bytes arrive). [`blocking`] is its I/O half: the one blocking
//! connection the blocking hand-written Redis clients are built on (GET, SET, DEL, INCR, MGET,
//! HSET/HGETALL, MULTI … EXEC), and the readers of each command's reply. Read it before `raw-tcp`, the
//! first client; compare it with `kvbench-memcached-reply`, the same idea for memcached's text
//! replies.
//!
//! The hand-written Redis clients (`kvbench-raw-tcp`, `kvbench-raw-unix`, `kvbench-buffered`,
//! `kvbench-inline`, and `kvbench-multiplexed` for its codec) share this crate, so they differ
//! only in how they move bytes — which is what the benchmark compares. The codec never touches a
//! socket: the caller owns the buffer, appends what it read, and asks whether a complete reply is
//! at its start (the shape of hiredis's reader and of `csv-core`). That makes every wire form
//! testable with byte literals.
//!
//! Decoding comes in three sizes:
//! - [`parse_header`] reads one header line (`$5\r\n`). A client that wants to read a bulk payload
//!   straight into its own buffer stops here.
//! - [`check`] answers "is there a complete reply, and how long is it?" with a scan and no
//!   allocation.
//! - [`decode`] checks, then builds a [`Reply`] (mini-redis's `Frame::check` then `Frame::parse`).
//!
//! "Need more bytes" is `Ok(None)`, a normal outcome. Malformed bytes are a [`DecodeError`] that
//! names what was wrong and where; after one, the stream is out of step and the connection must
//! be dropped, which is what its conversion to [`kvbench_core::Error::Protocol`] says.
//!
//! ```
//! use kvbench_resp::{Reply, decode, encode_command};
//!
//! let mut out = Vec::new();
//! encode_command(&mut out, &[b"GET", b"greeting"]);
//! assert_eq!(out, b"*2\r\n$3\r\nGET\r\n$8\r\ngreeting\r\n");
//!
//! // The reply arrives in two reads; the first is not enough.
//! let mut buf = b"$5\r\nhel".to_vec();
//! assert_eq!(decode(&buf)?, None);
//! buf.extend_from_slice(b"lo\r\n");
//! let (reply, used) = decode(&buf)?.expect("a complete reply");
//! assert_eq!(reply, Reply::Bulk(Some(b"hello".to_vec())));
//! assert_eq!(used, buf.len());
//! # Ok::<(), kvbench_resp::DecodeError>(())
//! ```
//!
//! # Wire forms (RESP2)
//!
//! ```text
//! +<text>\r\n            simple string   +OK\r\n
//! -<text>\r\n            error           -ERR unknown command 'FOO'\r\n
//! :<i64>\r\n             integer         :1\r\n
//! $<len>\r\n<data>\r\n   bulk string     $5\r\nhello\r\n   (data may hold any byte, \r\n too)
//! $-1\r\n                nil bulk        what GET answers for a missing key
//! *<n>\r\n<n replies>    array           *2\r\n:1\r\n$-1\r\n
//! *-1\r\n                nil array
//! ```
//!
//! Every length the peer claims is checked against a named limit ([`MAX_BULK_LEN`],
//! [`MAX_ARRAY_LEN`], [`MAX_LINE_LEN`], [`MAX_DEPTH`]) before it is trusted, and no allocation is
//! sized by a claim alone: `*4294967295\r\n` is 13 bytes and must not reserve room for four
//! billion replies ([`array_capacity`] sizes an array by the bytes present instead).
//!
//! # What it gives up
//!
//! - RESP3 (`_`, `,`, `#`, `%`, `~`, `>`, ...) is rejected as an unknown type byte: the clients
//!   never send `HELLO 3`, so a RESP3 reply means something is wrong.
//! - Numbers are read the way Redis writes them and nothing else: an optional `-`, digits, no
//!   leading zero, no `+`, no spaces. Leniency here would only hide a stream that is out of step.
//! - [`decode`] copies every string into a `Vec` of its own. Borrowing from the buffer would save
//!   the copy but tie the reply to the buffer's lifetime; [`parse_header`] is the zero-copy path.
//! - There is no saved state between calls: a reply arriving over many reads is rescanned from its
//!   start each time. That costs one header line for a bulk (the payload is skipped by its length,
//!   never scanned), but grows with the element count for a large array. hiredis keeps a stack of
//!   partial replies to avoid it. The blocking readers ([`blocking`]) do not need either: they
//!   read the arrays the suite meets (MGET's, HGETALL's, EXEC's) one element at a time, each
//!   consumed as it completes, so nothing is rescanned and no array need fit in the buffer.
//!
//! Compare with `kvbench-lib-redis`, whose library (redis-rs) parses the same bytes with parser
//! combinators and partial-parse state.
#![deny(missing_docs)]

pub mod blocking;

// ---------------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------------

/// Longest bulk string accepted, in bytes: Redis's default `proto-max-bulk-len` (512 MiB). A
/// server with default settings cannot hold a longer string, so a longer claim means the stream
/// is out of step (or the peer is not a Redis server).
pub const MAX_BULK_LEN: usize = 512 * 1024 * 1024;

/// Most elements accepted in one array: hiredis's default `REDIS_READER_MAX_ARRAY_ELEMENTS`
/// (2^32 - 1).
///
/// The count is only a claim. Memory is bounded separately, by the bytes actually present: each
/// element takes at least 3 bytes (`+\r\n`), so [`decode`] (and the blocking readers, through
/// [`array_capacity`]) never reserves more than a third of the bytes present in elements. This
/// limit just turns an absurd count into an error instead
/// of a wait for bytes that will never come.
pub const MAX_ARRAY_LEN: usize = u32::MAX as usize;

/// Deepest nesting of arrays accepted.
///
/// Redis's own replies nest a few levels at most (`COMMAND DOCS` is among the deepest); redis-rs
/// allows 100 (`MAX_RECURSE_DEPTH`), hiredis's reader started with a stack of 9. 32 is far more
/// than any reply this suite reads and keeps the recursion in [`check`] and [`decode`] shallow, so
/// a peer cannot overflow the stack with `*1\r\n*1\r\n*1\r\n...`.
pub const MAX_DEPTH: usize = 32;

/// Longest header or simple-string line, in bytes, counting its type byte and CRLF: Redis's
/// `PROTO_INLINE_MAX_SIZE` (64 KiB).
///
/// Without it, a peer that never sends `\r\n` would make the client buffer (and rescan) bytes
/// forever while waiting for a line end.
pub const MAX_LINE_LEN: usize = 64 * 1024;

/// The fewest bytes one reply can take (`+\r\n`). Used to bound allocation by the bytes present.
const MIN_REPLY_LEN: usize = 3;

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// What was wrong with the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeErrorKind {
    /// The first byte of a reply is not one of `+ - : $ *` (RESP3 types included).
    #[error("unknown reply type byte {0:#04x}")]
    BadTypeByte(u8),
    /// An integer reply (`:<i64>\r\n`) is not a decimal number that fits an `i64`.
    #[error("integer reply is not a decimal i64")]
    BadInteger,
    /// A bulk or array length is not a decimal number: empty, `+5`, ` 5`, `05`, `5x`, `-0`, or
    /// outside the `i64` range.
    #[error("length is not a decimal number")]
    BadLength,
    /// A length below -1 (-1 alone means nil).
    #[error("negative length {0} (only -1, meaning nil, is allowed)")]
    NegativeLength(i64),
    /// A length above the limit for its type ([`MAX_BULK_LEN`] or [`MAX_ARRAY_LEN`]).
    #[error("length {claimed} exceeds the limit of {max}")]
    LengthTooLarge {
        /// The length the peer wrote.
        claimed: i64,
        /// The limit it broke.
        max: usize,
    },
    /// A line or a bulk payload is not followed by `\r\n`, or a line holds a lone `\r` or `\n`.
    #[error("expected \\r\\n")]
    MissingCrlf,
    /// No `\r\n` within [`MAX_LINE_LEN`] bytes of a line's start.
    #[error("line longer than {} bytes", MAX_LINE_LEN)]
    LineTooLong,
    /// Arrays nested deeper than [`MAX_DEPTH`].
    #[error("arrays nested deeper than {}", MAX_DEPTH)]
    TooDeep,
}

/// Bytes that are not a valid RESP2 reply. The stream they came from is out of step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at byte {offset}")]
pub struct DecodeError {
    kind: DecodeErrorKind,
    offset: usize,
}

impl DecodeError {
    fn new(kind: DecodeErrorKind, offset: usize) -> Self {
        DecodeError { kind, offset }
    }

    /// What was wrong.
    pub fn kind(&self) -> DecodeErrorKind {
        self.kind
    }

    /// Where, counted from the start of the buffer given to [`parse_header`], [`check`] or
    /// [`decode`]: the start of the offending line, the stray byte, or the place where `\r\n`
    /// was expected.
    pub fn offset(&self) -> usize {
        self.offset
    }
}

impl From<DecodeError> for kvbench_core::Error {
    /// Malformed bytes break the connection: it is out of step and must not be reused.
    fn from(err: DecodeError) -> Self {
        kvbench_core::Error::Protocol(err.to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// Header lines
// ---------------------------------------------------------------------------------------------

/// One header line of a reply: the type byte and what follows it up to `\r\n`.
///
/// For [`Header::Bulk`] and [`Header::Array`] the payload is not part of the header: after
/// `$5\r\n` come 5 bytes of data and `\r\n`; after `*2\r\n` come two replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header<'a> {
    /// `+<text>\r\n`: the text, without type byte or CRLF.
    Simple(&'a [u8]),
    /// `-<text>\r\n`: the text, without type byte or CRLF.
    Error(&'a [u8]),
    /// `:<i64>\r\n`
    Integer(i64),
    /// `$<len>\r\n` is `Some(len)`: `len` data bytes and `\r\n` follow. `$-1\r\n` is `None` (nil):
    /// nothing follows.
    Bulk(Option<usize>),
    /// `*<n>\r\n` is `Some(n)`: `n` replies follow. `*-1\r\n` is `None` (nil).
    Array(Option<usize>),
}

/// Parses the header line at the start of `buf`.
///
/// `Ok(None)`: the line is not complete yet. `Ok(Some((header, consumed)))`: `consumed` counts the
/// type byte, the text and the CRLF — for a bulk, the payload starts at `buf[consumed]`.
pub fn parse_header(buf: &[u8]) -> Result<Option<(Header<'_>, usize)>, DecodeError> {
    header_at(buf, 0)
}

// ANCHOR: resp_header_at
/// Parses the header line that starts at `buf[start]`; returns it and the index just past its
/// CRLF.
fn header_at(buf: &[u8], start: usize) -> Result<Option<(Header<'_>, usize)>, DecodeError> {
    let Some(&type_byte) = buf.get(start) else {
        return Ok(None);
    };
    // An unknown type byte is an error at once: no byte that arrives later can make it valid.
    if !matches!(type_byte, b'+' | b'-' | b':' | b'$' | b'*') {
        let kind = DecodeErrorKind::BadTypeByte(type_byte);
        return Err(DecodeError::new(kind, start));
    }
    // A one-digit length or integer (`$3\r\n`, `:1\r\n`), the commonest header, is read without
    // looking for its CRLF: the same header as the general path below gives.
    let one_digit = buf.get(start + 1..start + 4);
    if let (b'$' | b'*' | b':', Some(&[digit @ b'0'..=b'9', b'\r', b'\n'])) = (type_byte, one_digit)
    {
        let n = digit - b'0';
        let header = match type_byte {
            b'$' => Header::Bulk(Some(n.into())),
            b'*' => Header::Array(Some(n.into())),
            _ => Header::Integer(n.into()),
        };
        return Ok(Some((header, start + 4)));
    }
    let Some((text, end)) = line_at(buf, start)? else {
        return Ok(None);
    };
    let header = match type_byte {
        // +<text>\r\n
        b'+' => Header::Simple(text),
        // -<text>\r\n
        b'-' => Header::Error(text),
        // :<i64>\r\n
        b':' => match parse_decimal(text) {
            Some(n) => Header::Integer(n),
            None => return Err(DecodeError::new(DecodeErrorKind::BadInteger, start)),
        },
        // $<len>\r\n (then <data>\r\n) or $-1\r\n
        b'$' => Header::Bulk(parse_length(text, MAX_BULK_LEN, start)?),
        // *<n>\r\n (then n replies) or *-1\r\n
        _ => Header::Array(parse_length(text, MAX_ARRAY_LEN, start)?),
    };
    Ok(Some((header, end)))
}
// ANCHOR_END: resp_header_at

// ANCHOR: resp_line_at
/// Finds the line whose type byte is `buf[start]` and which ends at the first `\r\n`. Returns the
/// text between the type byte and the CRLF, and the index just past the CRLF.
fn line_at(buf: &[u8], start: usize) -> Result<Option<(&[u8], usize)>, DecodeError> {
    let text_start = start + 1;
    let rest = buf.get(text_start..).unwrap_or_default();
    // A line is type byte + text + CRLF, at most MAX_LINE_LEN bytes, so its CR is within the
    // first MAX_LINE_LEN - 2 bytes after the type byte: no need to look further.
    let window = rest.get(..MAX_LINE_LEN - 2).unwrap_or(rest);
    for (i, &byte) in window.iter().enumerate() {
        match byte {
            b'\r' => {
                return match rest.get(i + 1).copied() {
                    Some(b'\n') => Ok(Some((&rest[..i], text_start + i + 2))),
                    // The LF has not arrived yet.
                    None => Ok(None),
                    Some(_) => Err(DecodeError::new(
                        DecodeErrorKind::MissingCrlf,
                        text_start + i,
                    )),
                };
            }
            // Redis never puts a bare LF in a line (it even rewrites newlines in error messages),
            // so one here means we are not where we think we are in the stream.
            b'\n' => {
                return Err(DecodeError::new(
                    DecodeErrorKind::MissingCrlf,
                    text_start + i,
                ));
            }
            _ => {}
        }
    }
    if window.len() == MAX_LINE_LEN - 2 {
        Err(DecodeError::new(DecodeErrorKind::LineTooLong, start))
    } else {
        Ok(None)
    }
}
// ANCHOR_END: resp_line_at

/// Reads a decimal integer the way Redis writes one: an optional `-`, then digits, with no leading
/// zero (`0` itself aside), no `+`, no spaces, no `-0`. `None` if it is not one or does not fit
/// an `i64`.
fn parse_decimal(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix(b"-") {
        Some(digits) => (true, digits),
        None => (false, text),
    };
    let canonical = match digits {
        [] => false,
        [b'0'] => !negative,
        [b'0', ..] => false,
        _ => true,
    };
    if !canonical {
        return None;
    }
    let mut value: i64 = 0;
    for &byte in digits {
        if !byte.is_ascii_digit() {
            return None;
        }
        let digit = i64::from(byte - b'0');
        // Accumulate towards the sign, so that i64::MIN (one larger in magnitude than i64::MAX)
        // fits; checked arithmetic turns overflow into "not a number we accept".
        value = value.checked_mul(10)?;
        value = if negative {
            value.checked_sub(digit)?
        } else {
            value.checked_add(digit)?
        };
    }
    Some(value)
}

// ANCHOR: resp_parse_length
/// Reads the length of a `$` or `*` header: -1 means nil, anything else must be in `0..=max`.
fn parse_length(text: &[u8], max: usize, start: usize) -> Result<Option<usize>, DecodeError> {
    let error = |kind| DecodeError::new(kind, start);
    let claimed = parse_decimal(text).ok_or(error(DecodeErrorKind::BadLength))?;
    match claimed {
        -1 => Ok(None),
        i64::MIN..=-2 => Err(error(DecodeErrorKind::NegativeLength(claimed))),
        _ => match usize::try_from(claimed) {
            Ok(len) if len <= max => Ok(Some(len)),
            _ => Err(error(DecodeErrorKind::LengthTooLarge { claimed, max })),
        },
    }
}
// ANCHOR_END: resp_parse_length

/// The payload of a bulk string whose `$<len>\r\n` header ended at `data_start`: exactly `len`
/// bytes, then `\r\n`. Returns the data and the index just past the CRLF; `Ok(None)` while
/// they are still arriving.
pub fn bulk_at(
    buf: &[u8],
    data_start: usize,
    len: usize,
) -> Result<Option<(&[u8], usize)>, DecodeError> {
    // <data>\r\n — the CRLF is looked for where the length puts it, never searched for: the data
    // may itself contain \r\n.
    let rest = buf.get(data_start..).unwrap_or_default();
    let Some(data) = rest.get(..len) else {
        return Ok(None);
    };
    match (rest.get(len).copied(), rest.get(len + 1).copied()) {
        (Some(b'\r'), Some(b'\n')) => Ok(Some((data, data_start + len + 2))),
        (None, _) | (Some(b'\r'), None) => Ok(None),
        _ => Err(DecodeError::new(
            DecodeErrorKind::MissingCrlf,
            data_start + len,
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// Whole replies
// ---------------------------------------------------------------------------------------------

/// Is there a complete reply at the start of `buf`? `Ok(Some(n))`: yes, and it is `n` bytes long.
/// `Ok(None)`: not yet. Allocates nothing.
pub fn check(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    Ok(walk(buf, 0, 0, false)?.map(|(_, end)| end))
}

/// A complete reply.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Reply {
    /// `+<text>\r\n`, for example `+OK`.
    Simple(Vec<u8>),
    /// `-<text>\r\n`, for example `-ERR unknown command`.
    Error(Vec<u8>),
    /// `:<i64>\r\n`
    Integer(i64),
    /// `$<len>\r\n<data>\r\n`, or `None` for `$-1\r\n`.
    Bulk(Option<Vec<u8>>),
    /// `*<n>\r\n` and `n` replies, or `None` for `*-1\r\n`.
    Array(Option<Vec<Reply>>),
}

/// Decodes the reply at the start of `buf`. `Ok(Some((reply, n)))`: the reply took `n` bytes;
/// whatever follows is left alone. `Ok(None)`: the reply is not complete yet.
pub fn decode(buf: &[u8]) -> Result<Option<(Reply, usize)>, DecodeError> {
    // An array is checked whole first: while one is still arriving, each call costs a scan, not
    // allocations that would be thrown away. Any other reply allocates only once it is whole, so
    // it is walked once (for a GET's bulk reply, a third of the decoding's instructions).
    if buf.first() == Some(&b'*') && check(buf)?.is_none() {
        return Ok(None);
    }
    Ok(walk(buf, 0, 0, true)?.and_then(|(reply, end)| Some((reply?, end))))
}

/// Walks the reply at `buf[start]`, nested in `depth` arrays, and returns the index just past it;
/// with `build`, also the reply ([`decode`]), and without, nothing is allocated ([`check`]).
/// Correct on its own either way: it reports need-more and errors itself.
fn walk(
    buf: &[u8],
    start: usize,
    depth: usize,
    build: bool,
) -> Result<Option<(Option<Reply>, usize)>, DecodeError> {
    let Some((header, mut pos)) = header_at(buf, start)? else {
        return Ok(None);
    };
    let reply = match header {
        Header::Simple(text) => build.then(|| Reply::Simple(text.to_vec())),
        Header::Error(text) => build.then(|| Reply::Error(text.to_vec())),
        Header::Integer(n) => build.then_some(Reply::Integer(n)),
        Header::Bulk(None) => build.then_some(Reply::Bulk(None)),
        Header::Array(None) => build.then_some(Reply::Array(None)),
        // $<len>\r\n<data>\r\n: the data skipped (or copied) by its length.
        Header::Bulk(Some(len)) => {
            let Some((data, end)) = bulk_at(buf, pos, len)? else {
                return Ok(None);
            };
            pos = end;
            build.then(|| Reply::Bulk(Some(data.to_vec())))
        }
        // *<n>\r\n<n replies>: each element takes at least MIN_REPLY_LEN bytes, so this loop
        // ends after at most buf.len() / 3 rounds whatever count the peer claimed, and the Vec
        // is sized by the bytes present, never by the claim alone.
        Header::Array(Some(count)) => {
            if depth >= MAX_DEPTH {
                return Err(DecodeError::new(DecodeErrorKind::TooDeep, start));
            }
            let present = if build {
                buf.len().saturating_sub(pos)
            } else {
                0
            };
            let mut items = Vec::with_capacity(array_capacity(count, present));
            for _ in 0..count {
                let Some((item, next)) = walk(buf, pos, depth + 1, build)? else {
                    return Ok(None);
                };
                items.extend(item);
                pos = next;
            }
            build.then_some(Reply::Array(Some(items)))
        }
    };
    Ok(Some((reply, pos)))
}

/// How many elements to reserve room for, for an array whose header claims `count` when
/// `present` bytes of its elements have arrived: each element takes at least 3 bytes (`+\r\n`),
/// so no more than `present / 3` can be there yet. A `Vec` sized by this grows as more arrive;
/// one sized by the claim alone would let 13 bytes (`*4294967295\r\n`) reserve gigabytes.
pub fn array_capacity(count: usize, present: usize) -> usize {
    count.min(present / MIN_REPLY_LEN)
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

/// Appends a command in multi-bulk form, the form Redis expects from clients: `*<n>\r\n`, then
/// `$<len>\r\n<arg>\r\n` for each argument. Any bytes may be in an argument.
///
/// Nothing is checked: Redis itself refuses an argument longer than its `proto-max-bulk-len`.
// ANCHOR: encode_command
pub fn encode_command(write_buf: &mut Vec<u8>, args: &[&[u8]]) {
    // *<n>\r\n
    put_length_line(write_buf, b'*', args.len());
    for arg in args {
        // $<len>\r\n<arg>\r\n
        put_bulk(write_buf, arg);
    }
}
// ANCHOR_END: encode_command

/// Appends `SET key value` in multi-bulk form: the same bytes as
/// [`encode_command`]`(write_buf, &[b"SET", key, value])` (a test checks), with the constant head
/// written as one slice and two numbers formatted instead of four. It is the hot loop of every
/// pipeline of SETs (`buffered`'s, `cluster`'s); the specialisation halves its cost.
// ANCHOR: encode_set
pub fn encode_set(write_buf: &mut Vec<u8>, key: &[u8], value: &[u8]) {
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

/// Appends `GET key` in multi-bulk form: the same bytes as
/// [`encode_command`]`(write_buf, &[b"GET", key])` (a test checks), with the constant head
/// written as one slice: the call made most, in the clients that make one call at a time.
pub fn encode_get(write_buf: &mut Vec<u8>, key: &[u8]) {
    // *2\r\n$3\r\nGET\r\n$<len>\r\n<key>\r\n
    write_buf.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
    put_bulk(write_buf, key);
}

/// Appends a reply, as a server would write it. For fake servers in tests and for round-trip
/// tests of [`decode`].
///
/// Simple strings and errors are written as given: one holding `\r` or `\n` produces bytes that do
/// not decode to the same reply (a real server replaces them before replying).
pub fn encode_reply(write_buf: &mut Vec<u8>, reply: &Reply) {
    match reply {
        // +<text>\r\n
        Reply::Simple(text) => put_text_line(write_buf, b'+', text),
        // -<text>\r\n
        Reply::Error(text) => put_text_line(write_buf, b'-', text),
        // :<i64>\r\n
        Reply::Integer(n) => put_number_line(write_buf, b':', *n),
        // $<len>\r\n<data>\r\n
        Reply::Bulk(Some(data)) => put_bulk(write_buf, data),
        // $-1\r\n
        Reply::Bulk(None) => write_buf.extend_from_slice(b"$-1\r\n"),
        // *<n>\r\n<n replies>
        Reply::Array(Some(items)) => {
            put_number_line(write_buf, b'*', items.len());
            for item in items {
                encode_reply(write_buf, item);
            }
        }
        // *-1\r\n
        Reply::Array(None) => write_buf.extend_from_slice(b"*-1\r\n"),
    }
}

/// `<type byte><decimal>\r\n`, the number formatted by `itoa` on the stack (no `format!`, no
/// allocation).
fn put_number_line(write_buf: &mut Vec<u8>, type_byte: u8, n: impl itoa::Integer) {
    write_buf.push(type_byte);
    write_buf.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    write_buf.extend_from_slice(b"\r\n");
}

/// `<type byte><text>\r\n`
fn put_text_line(write_buf: &mut Vec<u8>, type_byte: u8, text: &[u8]) {
    write_buf.push(type_byte);
    write_buf.extend_from_slice(text);
    write_buf.extend_from_slice(b"\r\n");
}

/// `<type byte><len>\r\n`: a length under 10 (a command's count of arguments, its name's length,
/// many a key's) as four bytes at once, the others through [`put_number_line`].
fn put_length_line(write_buf: &mut Vec<u8>, type_byte: u8, len: usize) {
    match u8::try_from(len) {
        Ok(digit @ 0..=9) => write_buf.extend_from_slice(&[type_byte, b'0' + digit, b'\r', b'\n']),
        _ => put_number_line(write_buf, type_byte, len),
    }
}

/// `$<len>\r\n<data>\r\n`
fn put_bulk(write_buf: &mut Vec<u8>, data: &[u8]) {
    put_length_line(write_buf, b'$', data.len());
    write_buf.extend_from_slice(data);
    write_buf.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests;
