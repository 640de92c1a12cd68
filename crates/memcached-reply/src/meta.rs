//! Replies of memcached's meta protocol (memcached 1.6 and later), sans-I/O like the rest of the
//! crate: bytes in, a reply or "need more" out.
//!
//! A meta reply is a line `<code> <flags>*\r\n`: a two-letter code, then the flags the command
//! asked to have returned, each a letter and a token (`O<opaque>`, `k<key>`, ...). Only a hit
//! carries data, counted like the text protocol's: `VA <size> <flags>*\r\n<data>\r\n`, with no
//! `END` after it. Error lines are the text protocol's (`ERROR`, `CLIENT_ERROR <msg>`,
//! `SERVER_ERROR <msg>`), and they carry no flags: an error cannot say which command it answers.
//!
//! Limits are the crate's: a line is at most [`MAX_LINE_LEN`](crate::MAX_LINE_LEN) bytes (a `VA`
//! line with a 250-byte key and a 32-byte opaque is under 300), a `VA` size at most
//! [`MAX_VALUE_LEN`], checked before the caller can allocate for it.

use std::ops::Range;

pub use crate::DATA_TRAILER;
use crate::{MAX_VALUE_LEN, ReplyError, decimal, message, unknown_line};

/// One meta reply. Ranges index the slice given to [`decode`] or [`parse_line`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaReply {
    /// What the server says happened.
    pub status: Status,
    /// The `O` flag's token: the opaque the command carried, copied back.
    pub opaque: Option<Range<usize>>,
    /// The `k` flag's token: the key the command named, copied back.
    pub key: Option<Range<usize>>,
}

/// The code of a meta reply line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// `VA <size> <flags>*`: an `mg` hit; the range is where the data is (from [`parse_line`]:
    /// where it will be once received).
    Value(Range<usize>),
    /// `HD <flags>*`: done (stored, deleted).
    Done,
    /// `EN`: an `mg` miss.
    Miss,
    /// `NS`, `EX` or `NF`: the command was understood but not carried out.
    Refused(Refusal),
    /// `MN`: the answer to `mn`, the no-op: every command sent before it has been answered.
    NoOp,
    /// `ERROR`: the server read a command name it does not know.
    Error,
    /// `CLIENT_ERROR <msg>`: the server could not parse the command; the range is `<msg>`.
    ClientError(Range<usize>),
    /// `SERVER_ERROR <msg>`: the server parsed the command but could not do it.
    ServerError(Range<usize>),
}

/// Why a command was not carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `NS`: not stored.
    NotStored,
    /// `EX`: exists (a compare-and-set found another CAS value).
    Exists,
    /// `NF`: not found.
    NotFound,
}

// ANCHOR: meta_parse_line
/// Reads one reply line (for `VA`, the header only). The `usize` is the line's length, CRLF
/// included; `Ok(None)` means its end has not arrived yet.
#[inline]
pub fn parse_line(buf: &[u8]) -> Result<Option<(MetaReply, usize)>, ReplyError> {
    let Some((line, line_len)) = crate::line(buf)? else {
        return Ok(None);
    };
    let bare = |status| MetaReply {
        status,
        opaque: None,
        key: None,
    };
    if line == b"ERROR" {
        return Ok(Some((bare(Status::Error), line_len)));
    }
    if let Some(msg) = message(line, b"CLIENT_ERROR") {
        return Ok(Some((bare(Status::ClientError(msg)), line_len)));
    }
    if let Some(msg) = message(line, b"SERVER_ERROR") {
        return Ok(Some((bare(Status::ServerError(msg)), line_len)));
    }
    // Each space-separated token as its range in the line.
    let mut start = 0;
    let mut tokens = line.split(|&byte| byte == b' ').map(|token| {
        let range = start..start + token.len();
        start = range.end + 1;
        range
    });
    let code = tokens.next().unwrap_or_default();
    let status = match &line[code] {
        b"VA" => {
            let size = tokens
                .next()
                .ok_or(ReplyError::BadMetaLine("VA without a size"))?;
            let size = decimal(&line[size]).ok_or(ReplyError::BadMetaLine("size not a number"))?;
            if size > MAX_VALUE_LEN as u64 {
                return Err(ReplyError::ValueTooLarge);
            }
            // line_len <= MAX_LINE_LEN and size <= MAX_VALUE_LEN: the sum cannot overflow.
            Status::Value(line_len..line_len + size as usize)
        }
        b"HD" => Status::Done,
        b"EN" => Status::Miss,
        b"NS" => Status::Refused(Refusal::NotStored),
        b"EX" => Status::Refused(Refusal::Exists),
        b"NF" => Status::Refused(Refusal::NotFound),
        b"MN" => Status::NoOp,
        _ => return Err(unknown_line(line)),
    };
    let mut reply = bare(status);
    for flag in tokens {
        // A flag is one letter and its token; letters this reader has no use for are skipped.
        let token = flag.start + 1..flag.end;
        match line.get(flag.clone()).and_then(<[u8]>::first) {
            None => return Err(ReplyError::BadMetaLine("empty flag")),
            Some(b'O') => reply.opaque = Some(token),
            Some(b'k') => reply.key = Some(token),
            Some(_) => {}
        }
    }
    Ok(Some((reply, line_len)))
}
// ANCHOR_END: meta_parse_line

/// Decodes one complete reply from the start of `buf`: `Ok(Some((reply, n)))` when its `n` bytes
/// are all there, `Ok(None)` when more bytes are needed.
pub fn decode(buf: &[u8]) -> Result<Option<(MetaReply, usize)>, ReplyError> {
    let Some((reply, line_len)) = parse_line(buf)? else {
        return Ok(None);
    };
    let data_end = match &reply.status {
        Status::Value(data) => Some(data.end),
        _ => None,
    };
    let wrong = ReplyError::MissingDataEnd;
    crate::with_data(buf, (reply, line_len), data_end, DATA_TRAILER, wrong)
}

/// Whether `after_data`, the bytes received after a value's data, begin with the whole
/// [`DATA_TRAILER`]; a wrong byte fails at once, so a wrong count is caught without waiting.
#[inline]
pub fn trailer_complete(after_data: &[u8]) -> Result<bool, ReplyError> {
    crate::data_end_complete(after_data)
}
