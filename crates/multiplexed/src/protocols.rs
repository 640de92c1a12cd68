//! The two protocols the multiplexer carries. A [`Protocol`] appends a command to the write
//! buffer and decodes the reply to a command into an [`Answer`], both without I/O, with the
//! workspace's own codecs (`kvbench-resp`, `kvbench-memcached-reply`). The queue, the two tasks
//! and the matching of replies to callers are the same for both.

use kvbench_core::{Error, Result};
use kvbench_memcached_reply::{self as reply, Reply as TextReply};
use kvbench_memcached_text::{check_key, check_value, encode_line, encode_set, exptime};
use kvbench_resp::{Reply as RespReply, encode_command};

/// A command of the client contract. Its keys and values travel beside it, as `args`: the key
/// (GET, DELETE, INCR, HGETALL), the key and value (SET), the keys (multi-key GET), the key then
/// each field and value (HSET), or each key and value (a transaction). Each caller's slot keeps
/// its command, so that the reader decodes the reply as an answer to that command.
#[derive(Debug, Clone, Copy)]
pub enum Command {
    /// Read a key.
    Get,
    /// Store a value, expiring after so many seconds or (`None`) never.
    Set(Option<u32>),
    /// Remove a key.
    Delete,
    /// Add 1 to a counter.
    Incr,
    /// Read this many keys with one command (`MGET`, `get k1 … kN`).
    GetMany(usize),
    /// Store fields of a hash (`HSET`; Redis only).
    HSet,
    /// Read a hash (`HGETALL`; Redis only).
    HGetAll,
    // ANCHOR: mux_command_transaction
    /// This many SETs inside `MULTI` … `EXEC` (Redis only): one command with N + 2 replies, so
    /// that the whole transaction is one slot and no other caller's command can come inside it.
    Transaction(usize),
    // ANCHOR_END: mux_command_transaction
}

/// A reply, in the contract's terms, whichever protocol it came in.
#[derive(Debug)]
pub enum Answer {
    /// A GET's value (`None`: a miss), and the key a memcached `VALUE` line names (RESP names
    /// none), for the caller to check against its own.
    Value(Option<Vec<u8>>, Option<Vec<u8>>),
    /// `MGET`'s values, one per key (`None`: a miss).
    Values(Vec<Option<Vec<u8>>>),
    /// `HGETALL`'s fields and values; memcached's multi-key get's hits, each with the key its
    /// `VALUE` line names, for the caller to place among its keys.
    Pairs(Vec<(Vec<u8>, Vec<u8>)>),
    /// A SET or a transaction done (`+OK`, `STORED`).
    Stored,
    /// A number: a counter's new value, the keys a DELETE removed or the fields an HSET added
    /// (`DELETED` is 1, `NOT_FOUND` 0).
    Integer(i64),
    /// An error reply after which the stream is still in step (`-WRONGTYPE ...`,
    /// `SERVER_ERROR object too large for cache`, `NOT_STORED`): its own caller's error.
    Error(String),
}

/// How a protocol writes commands and reads replies, without I/O.
pub trait Protocol: Clone + 'static {
    /// Appends `command` with its `args` to `write_buf`, or refuses it with
    /// [`Error::InvalidInput`] (or, for a command the protocol lacks, [`Error::Unsupported`])
    /// having appended nothing.
    fn encode(write_buf: &mut Vec<u8>, command: Command, args: &[&[u8]]) -> Result<()>;

    /// Decodes the reply to `command` at the start of `read_buf`: `Some((answer, length))`, or
    /// `None` while it is incomplete. Bytes that are no reply to `command` (malformed, or of
    /// another kind: a status where a GET expects a value) are an error: the stream is out of
    /// step.
    fn decode(read_buf: &[u8], command: Command) -> Result<Option<(Answer, usize)>>;
}

/// The error of a reply that cannot answer `command`.
fn out_of_step(command: Command) -> Error {
    Error::Protocol(format!("a reply that cannot answer a {command:?} command"))
}

/// Redis's RESP2, through `kvbench-resp`.
#[derive(Debug, Clone)]
pub struct Resp;

impl Protocol for Resp {
    /// RESP announces the length of every argument, so there is nothing to refuse but arguments
    /// that do not fit the command. GET and SET allocate nothing here.
    fn encode(write_buf: &mut Vec<u8>, command: Command, args: &[&[u8]]) -> Result<()> {
        let mut ttl = itoa::Buffer::new();
        match (command, args) {
            (Command::Get, [key]) => encode_command(write_buf, &[b"GET", key]),
            (Command::Set(None), [key, value]) => encode_command(write_buf, &[b"SET", key, value]),
            (Command::Set(Some(secs)), [key, value]) => {
                let ttl = ttl.format(secs).as_bytes();
                encode_command(write_buf, &[b"SET", key, value, b"EX", ttl]);
            }
            (Command::Delete, [key]) => encode_command(write_buf, &[b"DEL", key]),
            (Command::Incr, [key]) => encode_command(write_buf, &[b"INCR", key]),
            (Command::HGetAll, [key]) => encode_command(write_buf, &[b"HGETALL", key]),
            (Command::GetMany(_), keys) => {
                encode_command(write_buf, &[&[&b"MGET"[..]], keys].concat());
            }
            (Command::HSet, args) => encode_command(write_buf, &[&[&b"HSET"[..]], args].concat()),
            // ANCHOR: mux_resp_encode_transaction
            (Command::Transaction(sets), items) if items.len() == 2 * sets => {
                encode_command(write_buf, &[b"MULTI"]);
                for item in items.chunks_exact(2) {
                    encode_command(write_buf, &[b"SET", item[0], item[1]]);
                }
                encode_command(write_buf, &[b"EXEC"]);
            }
            // ANCHOR_END: mux_resp_encode_transaction
            _ => return Err(Error::InvalidInput("arguments that do not fit".into())),
        }
        Ok(())
    }

    fn decode(read_buf: &[u8], command: Command) -> Result<Option<(Answer, usize)>> {
        if let Command::Transaction(sets) = command {
            return decode_transaction(read_buf, sets);
        }
        let Some((reply, len)) = kvbench_resp::decode(read_buf)? else {
            return Ok(None);
        };
        let answer = match (command, reply) {
            (_, RespReply::Error(error)) => Answer::Error(String::from_utf8_lossy(&error).into()),
            (Command::Get, RespReply::Bulk(value)) => Answer::Value(value, None),
            (Command::Set(_), RespReply::Simple(ok)) if ok == b"OK" => Answer::Stored,
            (Command::Delete | Command::Incr | Command::HSet, RespReply::Integer(n)) => {
                Answer::Integer(n)
            }
            (Command::GetMany(keys), RespReply::Array(Some(items))) if items.len() == keys => {
                let values: Option<_> = items.into_iter().map(bulk).collect();
                Answer::Values(values.ok_or_else(|| out_of_step(command))?)
            }
            (Command::HGetAll, RespReply::Array(Some(items))) if items.len() % 2 == 0 => {
                let fields: Option<Vec<_>> = items.into_iter().map(|item| bulk(item)?).collect();
                let mut fields = fields.ok_or_else(|| out_of_step(command))?.into_iter();
                Answer::Pairs(
                    std::iter::from_fn(|| Some((fields.next()?, fields.next()?))).collect(),
                )
            }
            _ => return Err(out_of_step(command)),
        };
        Ok(Some((answer, len)))
    }
}

/// A bulk string's bytes (`None` for a nil), or `None` for any other reply.
fn bulk(reply: RespReply) -> Option<Option<Vec<u8>>> {
    match reply {
        RespReply::Bulk(value) => Some(value),
        _ => None,
    }
}

// ANCHOR: mux_decode_transaction
/// The N + 2 replies to a transaction of N SETs, all of them or `None`: MULTI's `+OK`, a
/// `+QUEUED` per SET, then EXEC's array of one `+OK` per SET. An error reply among them (a
/// refused command, EXEC's `-EXECABORT`) or a nil EXEC (aborted) is the caller's error, the stream
/// still in step; any other reply means the stream is not.
fn decode_transaction(read_buf: &[u8], sets: usize) -> Result<Option<(Answer, usize)>> {
    let (mut replies, mut len) = (Vec::with_capacity(sets + 2), 0);
    while replies.len() < sets + 2 {
        let Some((reply, reply_len)) = kvbench_resp::decode(&read_buf[len..])? else {
            return Ok(None);
        };
        replies.push(reply);
        len += reply_len;
    }
    let simple =
        |reply: &RespReply, text: &[u8]| matches!(reply, RespReply::Simple(s) if s == text);
    let first_error = replies.iter().find_map(|reply| match reply {
        RespReply::Error(error) => Some(String::from_utf8_lossy(error).into_owned()),
        _ => None,
    });
    let answer = match (first_error, replies.pop()) {
        (Some(error), _) => Answer::Error(error),
        (None, Some(RespReply::Array(None))) => Answer::Error("EXEC: transaction aborted".into()),
        (None, Some(RespReply::Array(Some(results))))
            if simple(&replies[0], b"OK")
                && replies[1..].iter().all(|reply| simple(reply, b"QUEUED"))
                && results.len() == sets
                && results.iter().all(|reply| simple(reply, b"OK")) =>
        {
            Answer::Stored
        }
        _ => return Err(out_of_step(Command::Transaction(sets))),
    };
    Ok(Some((answer, len)))
}
// ANCHOR_END: mux_decode_transaction

/// memcached's text protocol, through `kvbench-memcached-reply` (and `memcached-text`'s checks:
/// a key is a field of a command line, so it cannot hold a space or a control byte).
#[derive(Debug, Clone)]
pub struct Text;

impl Protocol for Text {
    fn encode(write_buf: &mut Vec<u8>, command: Command, args: &[&[u8]]) -> Result<()> {
        match (command, args) {
            (Command::Set(ttl_secs), [key, value]) => {
                check_key(key)?;
                check_value(value)?;
                encode_set(write_buf, key, value, ttl_secs.map_or(Ok(0), exptime)?);
            }
            (Command::Get | Command::Delete | Command::Incr | Command::GetMany(_), keys) => {
                keys.iter().try_for_each(|key| check_key(key))?;
                let (name, tail): (&[u8], &[u8]) = match command {
                    Command::Delete => (b"delete", b"\r\n"),
                    Command::Incr => (b"incr", b" 1\r\n"),
                    _ => (b"get", b"\r\n"),
                };
                write_buf.extend_from_slice(name);
                keys.iter()
                    .for_each(|key| encode_line(write_buf, &[b" ", key]));
                write_buf.extend_from_slice(tail);
            }
            _ => return Err(Error::Unsupported(format!("{command:?} over memcached"))),
        }
        Ok(())
    }

    fn decode(read_buf: &[u8], command: Command) -> Result<Option<(Answer, usize)>> {
        if let Command::GetMany(_) = command {
            return decode_hits(read_buf);
        }
        let Some((reply, len)) = reply::decode(read_buf)? else {
            return Ok(None);
        };
        let text = |range: std::ops::Range<usize>| read_buf[range].escape_ascii().to_string();
        let answer = match (command, reply) {
            (Command::Get, TextReply::Value { key, data, .. }) => {
                Answer::Value(Some(read_buf[data].to_vec()), Some(read_buf[key].to_vec()))
            }
            (Command::Get, TextReply::End) => Answer::Value(None, None),
            (Command::Set(_), TextReply::Stored) => Answer::Stored,
            (Command::Delete, TextReply::Deleted) => Answer::Integer(1),
            (Command::Delete, TextReply::NotFound) => Answer::Integer(0),
            (Command::Incr, TextReply::Number(value)) => match i64::try_from(value) {
                Ok(value) => Answer::Integer(value),
                Err(_) => Answer::Error(format!("the counter is {value}, above i64::MAX")),
            },
            (Command::Incr, TextReply::NotFound) => Answer::Error("NOT_FOUND: no counter".into()),
            // A counter command is one line with no data block: even this error (a value that is
            // not a number) leaves the stream in step.
            (Command::Incr, TextReply::ClientError(message)) => Answer::Error(text(message)),
            (_, TextReply::NotStored) => Answer::Error("NOT_STORED".into()),
            (_, TextReply::ServerError(message)) => Answer::Error(text(message)),
            // The server could not parse a command line; after a `set` it then reads the data
            // block as commands of its own, so the replies no longer line up (as in
            // `memcached-text`, whose checks this client shares, this should never happen).
            (_, TextReply::Error) => return Err(Error::Protocol("ERROR: unknown command".into())),
            (_, TextReply::ClientError(message)) => {
                return Err(Error::Protocol(format!("CLIENT_ERROR {}", text(message))));
            }
            _ => return Err(out_of_step(command)),
        };
        Ok(Some((answer, len)))
    }
}

/// memcached's reply to a multi-key get: a `VALUE` block per hit, in the order of the keys, then
/// `END` (or an error line). The hits are copied out only once the whole reply is in.
fn decode_hits(read_buf: &[u8]) -> Result<Option<(Answer, usize)>> {
    let (mut hits, mut len) = (Vec::new(), 0);
    loop {
        let Some((part, part_len)) = reply::decode_get_many_part(&read_buf[len..])? else {
            return Ok(None);
        };
        match part {
            TextReply::Value { key, data, .. } => hits.push((len, key, data)),
            TextReply::End => break,
            // An error line ends the reply, and means what it means after any command.
            _ => {
                return Ok(Text::decode(&read_buf[len..], Command::Get)?.map(|(a, n)| (a, len + n)));
            }
        }
        len += part_len;
    }
    let copy = |start: usize, range: std::ops::Range<usize>| read_buf[start..][range].to_vec();
    let hits = hits
        .into_iter()
        .map(|(at, key, data)| (copy(at, key), copy(at, data)));
    Ok(Some((
        Answer::Pairs(hits.collect()),
        len + b"END\r\n".len(),
    )))
}
