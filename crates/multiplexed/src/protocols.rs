//! The two protocols the multiplexer carries. A [`Protocol`] appends a command to the write
//! buffer and decodes the reply to a command into an [`Answer`], both without I/O, with the
//! workspace's own codecs (`kvbench-resp`, `kvbench-memcached-reply`). The queue, the two tasks
//! and the matching of replies to callers are the same for both.

use std::ops::Range;

use kvbench_core::{Error, Result};
use kvbench_memcached_reply::{self as reply, Reply as TextReply};
use kvbench_memcached_text::{check_key, check_value, encode_line, encode_set, exptime};
use kvbench_resp::{Reply as RespReply, encode_command};

/// A command of the client contract; its key and value travel beside it. Each caller's slot
/// keeps its command, so that the reader decodes the reply as an answer to that command.
#[derive(Debug, Clone, Copy)]
pub enum Command {
    /// Read a key.
    Get,
    /// Store a value, expiring after so many seconds or (`None`) never.
    Set(Option<u32>),
    /// Remove a key.
    Delete,
}

/// A reply, in the contract's terms, whichever protocol it came in.
#[derive(Debug)]
pub enum Answer {
    /// A GET's value (`None`: a miss), and the key a memcached `VALUE` line names (RESP names
    /// none), for the caller to check against its own.
    Value(Option<Vec<u8>>, Option<Vec<u8>>),
    /// A SET done (`+OK`, `STORED`).
    Stored,
    /// A DELETE done, and whether the key existed.
    Deleted(bool),
    /// An error reply after which the stream is still in step (`-WRONGTYPE ...`,
    /// `SERVER_ERROR object too large for cache`, `NOT_STORED`): its own caller's error.
    Error(String),
}

/// How a protocol writes commands and reads replies, without I/O.
pub trait Protocol: Clone + 'static {
    /// Appends `command` on `key` (and, for a SET, `value`) to `write_buf`, or refuses it with
    /// [`Error::InvalidInput`] having appended nothing.
    fn encode(write_buf: &mut Vec<u8>, command: Command, key: &[u8], value: &[u8]) -> Result<()>;

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
    /// RESP announces the length of every argument, so there is nothing to refuse.
    fn encode(write_buf: &mut Vec<u8>, command: Command, key: &[u8], value: &[u8]) -> Result<()> {
        let mut ttl = itoa::Buffer::new();
        match command {
            Command::Get => encode_command(write_buf, &[b"GET", key]),
            Command::Set(None) => encode_command(write_buf, &[b"SET", key, value]),
            Command::Set(Some(secs)) => {
                let ttl = ttl.format(secs).as_bytes();
                encode_command(write_buf, &[b"SET", key, value, b"EX", ttl]);
            }
            Command::Delete => encode_command(write_buf, &[b"DEL", key]),
        }
        Ok(())
    }

    fn decode(read_buf: &[u8], command: Command) -> Result<Option<(Answer, usize)>> {
        let Some((reply, len)) = kvbench_resp::decode(read_buf)? else {
            return Ok(None);
        };
        let answer = match (command, reply) {
            (_, RespReply::Error(error)) => Answer::Error(String::from_utf8_lossy(&error).into()),
            (Command::Get, RespReply::Bulk(value)) => Answer::Value(value, None),
            (Command::Set(_), RespReply::Simple(_)) => Answer::Stored,
            (Command::Delete, RespReply::Integer(removed)) => Answer::Deleted(removed > 0),
            _ => return Err(out_of_step(command)),
        };
        Ok(Some((answer, len)))
    }
}

/// memcached's text protocol, through `kvbench-memcached-reply` (and `memcached-text`'s checks:
/// a key is a field of a command line, so it cannot hold a space or a control byte).
#[derive(Debug, Clone)]
pub struct Text;

impl Protocol for Text {
    fn encode(write_buf: &mut Vec<u8>, command: Command, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        match command {
            Command::Get => encode_line(write_buf, &[b"get ", key, b"\r\n"]),
            Command::Set(ttl_secs) => {
                check_value(value)?;
                encode_set(write_buf, key, value, ttl_secs.map_or(Ok(0), exptime)?);
            }
            Command::Delete => encode_line(write_buf, &[b"delete ", key, b"\r\n"]),
        }
        Ok(())
    }

    fn decode(read_buf: &[u8], command: Command) -> Result<Option<(Answer, usize)>> {
        let Some((reply, len)) = reply::decode(read_buf)? else {
            return Ok(None);
        };
        let text = |range: Range<usize>| read_buf[range].escape_ascii().to_string();
        let answer = match (command, reply) {
            (Command::Get, TextReply::Value { key, data, .. }) => {
                Answer::Value(Some(read_buf[data].to_vec()), Some(read_buf[key].to_vec()))
            }
            (Command::Get, TextReply::End) => Answer::Value(None, None),
            (Command::Set(_), TextReply::Stored) => Answer::Stored,
            (Command::Delete, TextReply::Deleted) => Answer::Deleted(true),
            (Command::Delete, TextReply::NotFound) => Answer::Deleted(false),
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
