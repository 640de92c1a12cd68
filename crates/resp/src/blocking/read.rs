//! The blocking readers of RESP2 replies, each reading one kind of reply from a [`ReadBuffer`]
//! and the stream behind it, as it streams in: never whole in the buffer (but for
//! [`read_reply`]), a header line parsed in place ([`read_header`]) and a bulk's data read by its
//! length ([`read_bulk`]). [`read_status`] and [`read_statuses`] check status texts,
//! [`read_value`] reads a bulk or nil, [`read_each`] a run of replies or array elements, and
//! [`read_transaction`] the replies of a whole transaction sent at once. The connection
//! (`super`) reads with them; those public are for clients that read on their own
//! (`buffered`'s and `cluster`'s pipelines, `multiplexed`'s transactions).

use std::io::Read;

use kvbench_core::{Error, ReadBuffer, Result};

use super::READ_BUF_LEN;
use crate::Header;

// ANCHOR: resp_blocking_read_header
/// Reads until one reply header line is complete, and consumes it once `map` has taken what it
/// needs of it (the header borrows the read buffer).
pub(super) fn read_header<T>(
    read_buf: &mut ReadBuffer,
    stream: &mut impl Read,
    map: impl FnOnce(Header<'_>) -> T,
) -> Result<T> {
    loop {
        if let Some((header, used)) = crate::parse_header(read_buf.pending())? {
            let mapped = map(header);
            read_buf.consume(used);
            return Ok(mapped);
        }
        read_buf.fill(stream)?;
    }
}
// ANCHOR_END: resp_blocking_read_header

fn lossy(text: &[u8]) -> String {
    String::from_utf8_lossy(text).into_owned()
}

/// The error for a reply other than the one `wanted`: an error reply is [`Error::Server`] (the
/// connection stays in step); anything else is a reply we did not ask for, and we no longer know
/// where the next one starts, so [`Error::Protocol`].
fn unexpected(header: Header<'_>, wanted: &str) -> Error {
    match header {
        Header::Error(msg) => Error::Server(lossy(msg)),
        _ => Error::Protocol(format!("unexpected reply type, wanted {wanted}")),
    }
}

/// Reads an integer reply: what DEL, INCR and HSET answer.
pub(super) fn read_integer(read_buf: &mut ReadBuffer, stream: &mut impl Read) -> Result<i64> {
    read_header(read_buf, stream, |header| match header {
        Header::Integer(n) => Ok(n),
        other => Err(unexpected(other, "an integer reply")),
    })?
}

// ANCHOR: resp_blocking_read_bulk
/// Reads the body of a bulk reply whose header announced `len` bytes.
pub(super) fn read_bulk(
    read_buf: &mut ReadBuffer,
    stream: &mut impl Read,
    len: usize,
) -> Result<Vec<u8>> {
    // <data>\r\n — the one allocation of a GET hit is the value, of the announced size (already
    // capped by the decoder at MAX_BULK_LEN). Replies are read by their length, whatever the
    // value holds; what did not arrive with the header goes straight from the socket into it.
    let value = read_buf.take_value(stream, len)?;
    while read_buf.pending().len() < 2 {
        read_buf.fill(stream)?;
    }
    if &read_buf.pending()[..2] != b"\r\n" {
        return Err(Error::Protocol("bulk data not followed by CRLF".into()));
    }
    read_buf.consume(2);
    Ok(value)
}
// ANCHOR_END: resp_blocking_read_bulk

/// Reads a status reply that must say `want` (`+OK`, `+QUEUED`): [`read_statuses`] of one.
pub fn read_status(read_buf: &mut ReadBuffer, stream: &mut impl Read, want: &str) -> Result<()> {
    read_statuses(read_buf, stream, 1, want)
}

/// Reads `count` status replies that must each say `want`: the replies to a pipeline of SETs
/// (`+OK`), or to the commands queued in a transaction (`+QUEUED`). A run of them is compared
/// byte for byte (five bytes per `+OK\r\n`), nothing parsed, nothing allocated. An error reply
/// is kept and the rest still read, so that the connection stays in step: the batch fails with
/// [`Error::Server`] once every reply is in. Any other reply is [`Error::Protocol`].
///
/// The whole-reply clock times one reply at a time: it restarts once a reply has come in since
/// the last read (one check per read, not per reply), so a long batch is not one long reply.
// ANCHOR: read_statuses
pub fn read_statuses(
    read_buf: &mut ReadBuffer,
    stream: &mut impl Read,
    count: usize,
    want: &str,
) -> Result<()> {
    let (mut left, mut errors, mut first_error) = (count, 0, None);
    let mut unread_before_fill = left;
    read_buf.start_reply();
    while left > 0 {
        // Fast path: a run of `+<want>\r\n`, compared as bytes.
        let pending = read_buf.pending();
        let mut pos = 0;
        while left > 0 && is_status(&pending[pos..], want) {
            pos += want.len() + 3;
            left -= 1;
        }
        read_buf.consume(pos);
        if left == 0 {
            break;
        }
        // Anything else (or a reply cut by the end of a read) goes through the decoder.
        let Some((header, used)) = crate::parse_header(read_buf.pending())? else {
            if left < unread_before_fill {
                read_buf.start_reply();
            }
            unread_before_fill = left;
            read_buf.fill(stream)?;
            continue;
        };
        match header {
            Header::Simple(text) if text == want.as_bytes() => {}
            Header::Error(msg) => {
                errors += 1;
                first_error.get_or_insert_with(|| lossy(msg));
            }
            _ => return Err(Error::Protocol(format!("unexpected reply, wanted +{want}"))),
        }
        read_buf.consume(used);
        left -= 1;
    }
    first_error.map_or(Ok(()), |first| Err(failed(errors, count, first)))
}
// ANCHOR_END: read_statuses

/// True if `bytes` starts with the status line `+<want>\r\n`.
fn is_status(bytes: &[u8], want: &str) -> bool {
    (bytes
        .strip_prefix(b"+")
        .and_then(|rest| rest.strip_prefix(want.as_bytes())))
    .is_some_and(|rest| rest.starts_with(b"\r\n"))
}

/// The [`Error::Server`] of a batch of `count` replies of which `errors` were error replies.
fn failed(errors: usize, count: usize, first: String) -> Error {
    Error::Server(match errors {
        1 => first,
        _ => format!("{errors} of {count} commands failed; the first: {first}"),
    })
}

/// Reads a bulk reply, `None` for nil: what GET answers, and each element of MGET's array. An
/// error reply is [`Error::Server`], read whole; any other reply is [`Error::Protocol`].
pub fn read_value(read_buf: &mut ReadBuffer, stream: &mut impl Read) -> Result<Option<Vec<u8>>> {
    let len = read_header(read_buf, stream, |header| match header {
        Header::Bulk(len) => Ok(len),
        other => Err(unexpected(other, "a bulk reply")),
    })??;
    len.map(|len| read_bulk(read_buf, stream, len)).transpose()
}

/// Reads one whole reply of any type with the codec's [`decode`](crate::decode), such as
/// `CLUSTER SLOTS`'s nested arrays; it must fit in the read buffer ([`READ_BUF_LEN`]).
pub fn read_reply(read_buf: &mut ReadBuffer, stream: &mut impl Read) -> Result<crate::Reply> {
    loop {
        if let Some((reply, used)) = crate::decode(read_buf.pending())? {
            read_buf.consume(used);
            return Ok(reply);
        }
        if read_buf.pending().len() == READ_BUF_LEN {
            let limit = READ_BUF_LEN;
            return Err(Error::Protocol(format!(
                "a reply longer than {limit} bytes"
            )));
        }
        read_buf.fill(stream)?;
    }
}

// ANCHOR: resp_blocking_read_each
/// Reads `count` replies in a row — the elements of an array, or the replies to a pipeline —
/// each with `read_one`, which reports an error reply it has read whole as [`Error::Server`].
/// Such an error is kept and the rest still read, so that the connection stays in step; the
/// first one is returned once all are read. Any other error ends the reading at once.
///
/// `count` may be a peer's claim: room is reserved only for the elements whose bytes can have
/// arrived already ([`array_capacity`](crate::array_capacity)), and the `Vec` grows as more do.
pub fn read_each<S: Read, T>(
    read_buf: &mut ReadBuffer,
    stream: &mut S,
    count: usize,
    mut read_one: impl FnMut(&mut ReadBuffer, &mut S) -> Result<T>,
) -> Result<Vec<T>> {
    let mut items = Vec::with_capacity(crate::array_capacity(count, read_buf.pending().len()));
    let (mut errors, mut first_error) = (0, None);
    for _ in 0..count {
        match read_one(read_buf, stream) {
            Ok(item) => items.push(item),
            Err(Error::Server(msg)) => {
                errors += 1;
                first_error.get_or_insert(msg);
            }
            Err(err) => return Err(err),
        }
    }
    first_error.map_or(Ok(items), |first| Err(failed(errors, count, first)))
}
// ANCHOR_END: resp_blocking_read_each

/// Reads MGET's reply to `count` keys: an array of exactly `count` bulks or nils, in the keys'
/// order. Another count is [`Error::Protocol`], before anything is allocated.
pub fn read_values(
    read_buf: &mut ReadBuffer,
    stream: &mut impl Read,
    count: usize,
) -> Result<Vec<Option<Vec<u8>>>> {
    read_header(read_buf, stream, |header| match header {
        Header::Array(Some(n)) if n == count => Ok(()),
        other => Err(unexpected(other, &format!("an array of {count} values"))),
    })??;
    read_each(read_buf, stream, count, read_value)
}

/// Reads HGETALL's reply: an array of fields and values, alternating (empty for a missing key).
/// An odd count, or a nil where a field or value should be, is [`Error::Protocol`]; an error
/// reply (`WRONGTYPE`) is [`Error::Server`].
pub fn read_pairs(
    read_buf: &mut ReadBuffer,
    stream: &mut impl Read,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let count = read_header(read_buf, stream, |header| match header {
        Header::Array(Some(n)) if n % 2 == 0 => Ok(n),
        other => Err(unexpected(other, "an array of fields and values")),
    })??;
    let flat = read_each(read_buf, stream, count, |read_buf, stream| {
        read_value(read_buf, stream)?
            .ok_or_else(|| Error::Protocol("nil among a hash's fields and values".into()))
    })?;
    let mut flat = flat.into_iter();
    let mut pairs = Vec::with_capacity(count / 2);
    while let (Some(field), Some(value)) = (flat.next(), flat.next()) {
        pairs.push((field, value));
    }
    Ok(pairs)
}

/// Reads EXEC's reply to a transaction of `count` SETs: an array of `count` `+OK`s. A nil array
/// (the transaction was aborted) and an error reply (`-EXECABORT`: a command was refused while
/// queued) are [`Error::Server`]; an array of another length is [`Error::Protocol`].
pub(super) fn read_exec(
    read_buf: &mut ReadBuffer,
    stream: &mut impl Read,
    count: usize,
) -> Result<()> {
    read_header(read_buf, stream, |header| match header {
        Header::Array(Some(n)) if n == count => Ok(()),
        Header::Array(None) => Err(Error::Server(
            "EXEC answered nil: the transaction was aborted".into(),
        )),
        other => Err(unexpected(other, &format!("an array of {count} replies"))),
    })??;
    read_statuses(read_buf, stream, count, "OK")
}

// ANCHOR: resp_blocking_read_transaction
/// Reads the replies to `MULTI`, `count` SETs and `EXEC` sent together: `+OK`, `count`
/// `+QUEUED`, then `read_exec`'s array. A SET refused while queued is reported (as
/// [`Error::Server`]) once EXEC's reply, `-EXECABORT`, has been read too, so the connection stays
/// in step. A refused MULTI is [`Error::Protocol`]: the SETs then ran on their own, and what
/// follows is not what was asked for.
pub fn read_transaction(
    read_buf: &mut ReadBuffer,
    stream: &mut impl Read,
    count: usize,
) -> Result<()> {
    read_status(read_buf, stream, "OK").map_err(|err| match err {
        Error::Server(msg) => Error::Protocol(format!("MULTI refused: {msg}")),
        other => other,
    })?;
    let queued = read_statuses(read_buf, stream, count, "QUEUED");
    if let Err(err) = &queued
        && err.breaks_connection()
    {
        return queued;
    }
    let exec = read_exec(read_buf, stream, count);
    match (queued, exec) {
        (_, Err(err)) if err.breaks_connection() => Err(err),
        (Err(refused), _) => Err(refused),
        (Ok(()), exec) => exec,
    }
}
// ANCHOR_END: resp_blocking_read_transaction
