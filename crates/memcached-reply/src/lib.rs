//! `kvbench-memcached-reply`: the sans-I/O reader of memcached text replies — bytes in, a reply
//! or "need more" out — kept apart from the client so that it can be tested on byte literals and
//! fuzzed without a server. It gives up nothing at run time and leaves every `read` to
//! `memcached-text` (which re-exports it as `kvbench_memcached_text::reply`) and, for the meta
//! protocol's replies ([`meta`]), to `memcached-meta`. Compare it with `kvbench-resp`, the same
//! idea for RESP.
//!
//! [`decode`] is given the bytes received so far and answers one of three things: a complete reply
//! of `n` bytes (`Ok(Some((reply, n)))`), "need more bytes" (`Ok(None)`, a normal outcome, not an
//! error), or a [`ReplyError`] when the bytes cannot be a reply to `get`, `set`, `delete` or
//! `incr`. It never touches a socket and never allocates on success, so every wire form is tested
//! on byte literals. Like csv-core, the caller owns the buffer: the ranges in a [`Reply`] index the
//! slice that was decoded. The client uses [`decode`]'s two halves: [`parse_line`] for each reply
//! line, then, after a value's data (read by its count), [`trailer_complete`].
//!
//! A multi-key get (`get k1 … kN`) is answered by a `VALUE` block for each hit, in the order of
//! the keys (a key asked twice gets two), then one `END`: [`decode_get_many_part`] reads it a
//! block at a time, each value's data followed by its CRLF alone ([`data_end_complete`], for a
//! client reading the data itself), and [`place_hit`] says which key a block answers.
//!
//! Every length the peer claims is checked before the caller can allocate for it: a line is at
//! most [`MAX_LINE_LEN`] bytes, a value at most [`MAX_VALUE_LEN`].
#![deny(missing_docs)]

pub mod meta;

use std::ops::Range;

/// Longest reply line accepted, CRLF included.
///
/// The longest line memcached sends in answer to `get`, `set` or `delete` is a VALUE header:
/// `VALUE ` + a 250-byte key + flags (10 digits) + byte count (10 digits), even with a 20-digit
/// CAS field under 320 bytes; error lines are shorter. 1 KiB leaves room for longer error texts,
/// and a peer streaming bytes without a newline is caught after 1 KiB instead of never.
pub const MAX_LINE_LEN: usize = 1024;

/// Largest value a VALUE header may announce: 1 GiB, the ceiling of memcached's item size (`-I`
/// accepts at most `1024m`), so no real server announces more. A header claiming 10^18 bytes is
/// an error here, not an allocation attempt later.
pub const MAX_VALUE_LEN: usize = 1 << 30;

/// What follows a value's data: the data's own CRLF, then the `END` line closing the `get` reply.
pub const VALUE_TRAILER: &[u8] = b"\r\nEND\r\n";

/// What follows a value's data where another block or line may come next (a multi-key get, a
/// meta reply): only the data's own CRLF.
pub const DATA_TRAILER: &[u8] = b"\r\n";

/// One complete reply. Ranges index the slice given to [`decode`] or [`parse_line`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n`: a `get` hit.
    Value {
        /// Where the key echoed by the server is.
        key: Range<usize>,
        /// The opaque 32-bit flags stored with the item (this client always stores 0).
        flags: u32,
        /// Where the data is (from [`parse_line`]: where it will be once received).
        data: Range<usize>,
    },
    /// `END\r\n` with no VALUE before it: a `get` miss.
    End,
    /// `STORED\r\n`: a `set` succeeded.
    Stored,
    /// `NOT_STORED\r\n`: a conditional store (`add`, `replace`) was not done.
    NotStored,
    /// `DELETED\r\n`: a `delete` removed the key.
    Deleted,
    /// `NOT_FOUND\r\n`: a `delete` found no such key.
    NotFound,
    /// `<digits>\r\n`: the new value of a counter, in answer to `incr` (memcached's counters are
    /// unsigned 64-bit).
    Number(u64),
    /// `ERROR\r\n`: the server read a command name it does not know.
    Error,
    /// `CLIENT_ERROR <msg>\r\n`: the server could not parse the command; the range is `<msg>`.
    ClientError(Range<usize>),
    /// `SERVER_ERROR <msg>\r\n`: the server parsed the command but could not do it; the range is
    /// `<msg>`, for example `object too large for cache`.
    ServerError(Range<usize>),
}

/// Why bytes cannot be a reply. After any of these the stream is out of step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// No LF within [`MAX_LINE_LEN`] bytes.
    #[error("no line end within the first {MAX_LINE_LEN} bytes of a reply")]
    LineTooLong,
    /// A line ended in LF without the CR before it.
    #[error("reply line ends in a bare LF")]
    BareLineFeed,
    /// A line starting with `VALUE ` that is not `VALUE <key> <flags> <bytes>`.
    #[error("malformed VALUE line: {0}")]
    BadValueLine(&'static str),
    /// A VALUE header announcing more than [`MAX_VALUE_LEN`] bytes.
    #[error("VALUE announces more than {MAX_VALUE_LEN} bytes")]
    ValueTooLarge,
    /// The announced number of data bytes is not followed by `\r\nEND\r\n`.
    #[error("value data not followed by \\r\\nEND\\r\\n (wrong byte count?)")]
    MissingEnd,
    /// A value's announced number of data bytes is not followed by the `\r\n` that ends it in a
    /// meta reply or inside a multi-key get.
    #[error("value data not followed by \\r\\n (wrong byte count?)")]
    MissingDataEnd,
    /// A meta reply line that is not `<code> <flags>*` (or `VA <size> <flags>*`).
    #[error("malformed meta reply line: {0}")]
    BadMetaLine(&'static str),
    /// A line that is none of the replies above.
    #[error("unknown reply line {0:?}")]
    UnknownLine(String),
}

// ANCHOR: memcached_reply_parse_line
/// Reads one reply line (and, for VALUE, the header only: the data is not needed yet).
///
/// For [`Reply::Value`], `data` says where the data will be; it may not have arrived yet. The
/// client uses this to read a value too large for its buffer straight into the value's `Vec`.
/// The `usize` is the length of the line, CRLF included.
#[inline]
pub fn parse_line(buf: &[u8]) -> Result<Option<(Reply, usize)>, ReplyError> {
    let Some((line, line_len)) = line(buf)? else {
        return Ok(None);
    };
    let reply = match line {
        b"END" => Reply::End,              // END\r\n
        b"STORED" => Reply::Stored,        // STORED\r\n
        b"NOT_STORED" => Reply::NotStored, // NOT_STORED\r\n
        b"DELETED" => Reply::Deleted,      // DELETED\r\n
        b"NOT_FOUND" => Reply::NotFound,   // NOT_FOUND\r\n
        b"ERROR" => Reply::Error,          // ERROR\r\n
        _ if line.starts_with(b"VALUE ") => value_header(line, line_len)?,
        _ => {
            if let Some(msg) = message(line, b"CLIENT_ERROR") {
                Reply::ClientError(msg) // CLIENT_ERROR <msg>\r\n
            } else if let Some(msg) = message(line, b"SERVER_ERROR") {
                Reply::ServerError(msg) // SERVER_ERROR <msg>\r\n
            } else if let Some(value) = number(line) {
                Reply::Number(value) // <digits>\r\n
            } else {
                return Err(unknown_line(line));
            }
        }
    };
    Ok(Some((reply, line_len)))
}
// ANCHOR_END: memcached_reply_parse_line

/// The first CRLF-ended line of `buf`, without its CRLF, and its length with it; `None` if its
/// end has not arrived yet. The end is looked for in the first [`MAX_LINE_LEN`] bytes only.
#[inline]
fn line(buf: &[u8]) -> Result<Option<(&[u8], usize)>, ReplyError> {
    let searched = &buf[..buf.len().min(MAX_LINE_LEN)];
    let Some(lf) = searched.iter().position(|&byte| byte == b'\n') else {
        return if buf.len() >= MAX_LINE_LEN {
            Err(ReplyError::LineTooLong)
        } else {
            Ok(None)
        };
    };
    match lf.checked_sub(1).filter(|&cr| buf[cr] == b'\r') {
        Some(cr) => Ok(Some((&buf[..cr], lf + 1))),
        None => Err(ReplyError::BareLineFeed),
    }
}

/// Decodes one complete reply from the start of `buf`: `Ok(Some((reply, n)))` when its `n` bytes
/// are all there, `Ok(None)` when more bytes are needed.
pub fn decode(buf: &[u8]) -> Result<Option<(Reply, usize)>, ReplyError> {
    decode_then(buf, VALUE_TRAILER, ReplyError::MissingEnd)
}

// ANCHOR: memcached_reply_decode_get_many_part
/// Decodes the next part of the reply to a multi-key get (`get k1 … kN`) from the start of `buf`:
/// a VALUE block, complete once its data and the CRLF after it are in (`n` counts both; no `END`
/// follows a block), or any other reply as [`decode`] reads it. `END` closes the reply; so does
/// an error line (memcached sends no `END` after `SERVER_ERROR out of memory writing get
/// response`).
pub fn decode_get_many_part(buf: &[u8]) -> Result<Option<(Reply, usize)>, ReplyError> {
    decode_then(buf, DATA_TRAILER, ReplyError::MissingDataEnd)
}
// ANCHOR_END: memcached_reply_decode_get_many_part

/// One reply line and, for a VALUE, its data and the `trailer` after it (a wrong byte there is
/// `wrong`).
fn decode_then(
    buf: &[u8],
    trailer: &[u8],
    wrong: ReplyError,
) -> Result<Option<(Reply, usize)>, ReplyError> {
    let Some((reply, line_len)) = parse_line(buf)? else {
        return Ok(None);
    };
    // VALUE <key> <flags> <bytes>\r\n<data>\r\n...: the data is found by its count, never by
    // scanning it, which is what makes values binary-safe in a line-based protocol.
    let data_end = match &reply {
        Reply::Value { data, .. } => Some(data.end),
        _ => None,
    };
    with_data(buf, (reply, line_len), data_end, trailer, wrong)
}

// ANCHOR: memcached_reply_place_hit
/// Which of `keys`, the keys of a multi-key get, the VALUE block naming `echoed` answers, when the
/// blocks before it answered keys before `next`: memcached answers the hits in the order of the
/// keys, so it is the first of `keys[next..]` equal to `echoed` (a key asked twice is answered
/// twice, each filling its own place). `None`: a key not asked, or not in order — the replies no
/// longer match the command.
pub fn place_hit(keys: &[&[u8]], next: usize, echoed: &[u8]) -> Option<usize> {
    let later = keys.get(next..)?;
    Some(next + later.iter().position(|key| *key == echoed)?)
}
// ANCHOR_END: memcached_reply_place_hit

/// A reply whose line is `line_len` bytes: complete as it is, or, for a value whose data ends at
/// `data_end`, once the data and the `trailer` after it are all in `buf` (a wrong trailer byte is
/// `wrong`, at once).
fn with_data<R>(
    buf: &[u8],
    (reply, line_len): (R, usize),
    data_end: Option<usize>,
    trailer: &[u8],
    wrong: ReplyError,
) -> Result<Option<(R, usize)>, ReplyError> {
    let Some(data_end) = data_end else {
        return Ok(Some((reply, line_len)));
    };
    let after_data = buf.get(data_end..).unwrap_or_default();
    let complete = starts_with_trailer(after_data, trailer, wrong)?;
    Ok(complete.then_some((reply, data_end + trailer.len())))
}

// ANCHOR: memcached_reply_trailer_complete
/// Whether `after_data`, the bytes received after a value's data, begin with the whole
/// [`VALUE_TRAILER`]. Trailer bytes already here are checked now, so a wrong count fails at once
/// rather than at a timeout.
#[inline]
pub fn trailer_complete(after_data: &[u8]) -> Result<bool, ReplyError> {
    starts_with_trailer(after_data, VALUE_TRAILER, ReplyError::MissingEnd)
}
// ANCHOR_END: memcached_reply_trailer_complete

/// The same for [`DATA_TRAILER`], the CRLF alone that ends a value inside a multi-key get or a
/// meta reply.
#[inline]
pub fn data_end_complete(after_data: &[u8]) -> Result<bool, ReplyError> {
    starts_with_trailer(after_data, DATA_TRAILER, ReplyError::MissingDataEnd)
}

/// Whether `after_data` begins with the whole `trailer`; `wrong` as soon as a byte differs.
fn starts_with_trailer(
    after_data: &[u8],
    trailer: &[u8],
    wrong: ReplyError,
) -> Result<bool, ReplyError> {
    let seen = after_data.len().min(trailer.len());
    if after_data[..seen] != trailer[..seen] {
        return Err(wrong);
    }
    Ok(seen == trailer.len())
}

// ANCHOR: memcached_reply_value_header
/// `VALUE <key> <flags> <bytes>`, given the whole line and its length with CRLF.
fn value_header(line: &[u8], line_len: usize) -> Result<Reply, ReplyError> {
    let mut fields = line.split(|&byte| byte == b' ');
    // Five slots for four fields: the fifth must be empty.
    let [Some(b"VALUE"), Some(key), Some(flags), Some(bytes), None] =
        std::array::from_fn::<_, 5, _>(|_| fields.next())
    else {
        return Err(ReplyError::BadValueLine("want VALUE <key> <flags> <bytes>"));
    };
    if key.is_empty() {
        return Err(ReplyError::BadValueLine("empty key"));
    }
    let flags = decimal(flags).ok_or(ReplyError::BadValueLine("flags not a number"))?;
    let flags = u32::try_from(flags).map_err(|_| ReplyError::BadValueLine("flags above 2^32"))?;
    let len = decimal(bytes).ok_or(ReplyError::BadValueLine("byte count not a number"))?;
    if len > MAX_VALUE_LEN as u64 {
        return Err(ReplyError::ValueTooLarge);
    }
    let len = len as usize; // <= MAX_VALUE_LEN: fits
    let key_start = b"VALUE ".len();
    let data_end = line_len.checked_add(len).ok_or(ReplyError::ValueTooLarge)?;
    Ok(Reply::Value {
        key: key_start..key_start + key.len(),
        flags,
        data: line_len..data_end,
    })
}
// ANCHOR_END: memcached_reply_value_header

/// ASCII decimal digits; `None` if empty or not all digits. Saturates instead of overflowing, so
/// a 40-digit count comes out as `u64::MAX` and fails the caller's limit check.
fn decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let push_digit = |acc: u64, digit: &u8| {
        acc.saturating_mul(10)
            .saturating_add(u64::from(digit - b'0'))
    };
    Some(digits.iter().fold(0, push_digit))
}

/// A counter's value: a line of decimal digits that fits a `u64` (a longer one is no reply).
fn number(line: &[u8]) -> Option<u64> {
    if line.is_empty() || !line.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(line).ok()?.parse().ok()
}

/// A line no reply starts with, shown (its first 64 bytes) in the error.
fn unknown_line(line: &[u8]) -> ReplyError {
    let shown = &line[..line.len().min(64)];
    ReplyError::UnknownLine(shown.escape_ascii().to_string())
}

/// For `<prefix> <msg>` (or a bare `<prefix>`), the range of `<msg>`.
fn message(line: &[u8], prefix: &[u8]) -> Option<Range<usize>> {
    match line.strip_prefix(prefix)? {
        [] => Some(line.len()..line.len()),
        [b' ', ..] => Some(prefix.len() + 1..line.len()),
        _ => None,
    }
}
/// A malformed reply is a protocol error to the client contract.
impl From<ReplyError> for kvbench_core::Error {
    fn from(err: ReplyError) -> kvbench_core::Error {
        kvbench_core::Error::Protocol(err.to_string())
    }
}
