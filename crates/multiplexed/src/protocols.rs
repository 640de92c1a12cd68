//! The two protocols the multiplexer carries. A [`Protocol`] does two things, both without I/O:
//! it appends a [`Command`] to the write buffer, and it decodes one reply into an [`Answer`] —
//! with the workspace's own codecs, `kvbench-resp` and `kvbench-memcached-reply`. Everything
//! else (the queue, the two tasks, the matching of replies to callers) is the same for both.

use std::ops::Range;

use kvbench_core::{Error, Result};
use kvbench_memcached_reply::{self as reply, Reply as TextReply};
use kvbench_memcached_text::{check_key, check_value, encode_line, encode_set, exptime};
use kvbench_resp::{Reply as RespReply, encode_command};

/// A command of the client contract.
#[derive(Debug, Clone, Copy)]
pub enum Command<'a> {
    /// Read a key.
    Get(&'a [u8]),
    /// Store a value (key, value), expiring after so many seconds or (`None`) never.
    Set(&'a [u8], &'a [u8], Option<u32>),
    /// Remove a key.
    Delete(&'a [u8]),
}

/// A reply, in the contract's terms, whichever protocol it came in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A GET hit: the value, and the key a memcached `VALUE` line echoes (RESP echoes none).
    Value {
        /// The value.
        data: Vec<u8>,
        /// The key the reply names, for the caller to check against its own.
        echoed_key: Option<Vec<u8>>,
    },
    /// A GET miss.
    Miss,
    /// A SET done (`+OK`, `STORED`).
    Stored,
    /// A delete, and whether the key existed.
    Deleted(bool),
    /// An error reply after which the stream is still in step (`-WRONGTYPE ...`,
    /// `SERVER_ERROR object too large for cache`, `NOT_STORED`): it is its own caller's error.
    Error(String),
}

/// The kind of reply a command must get (an error reply aside). The reader checks every reply
/// against its command before it hands it over: a reply of another kind means that replies and
/// commands no longer line up, and the connection fails before a later reply can go astray.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Expects {
    Value,
    Stored,
    Deleted,
}

impl Command<'_> {
    pub(crate) fn expects(&self) -> Expects {
        match self {
            Command::Get(_) => Expects::Value,
            Command::Set(..) => Expects::Stored,
            Command::Delete(_) => Expects::Deleted,
        }
    }
}

impl Expects {
    pub(crate) fn fits(self, answer: &Answer) -> bool {
        matches!(
            (self, answer),
            (_, Answer::Error(_))
                | (Expects::Value, Answer::Value { .. } | Answer::Miss)
                | (Expects::Stored, Answer::Stored)
                | (Expects::Deleted, Answer::Deleted(_))
        )
    }
}

/// How a protocol writes commands and reads replies. Both methods are sans-I/O.
pub trait Protocol: Clone + Send + Sync + 'static {
    /// Appends `command` to `write_buf`, or refuses it with [`Error::InvalidInput`] having
    /// appended nothing.
    fn encode(write_buf: &mut Vec<u8>, command: &Command) -> Result<()>;

    /// Decodes the reply at the start of `buf`: `Ok(Some((answer, length)))`, `Ok(None)` while
    /// it is incomplete, or an error if the bytes cannot answer any command this client sends
    /// (the stream is out of step).
    fn decode(buf: &[u8]) -> Result<Option<(Answer, usize)>>;
}

/// Redis's RESP2, through `kvbench-resp`.
#[derive(Debug, Clone)]
pub struct Resp;

impl Protocol for Resp {
    /// RESP announces the length of every argument, so there is nothing to refuse.
    fn encode(write_buf: &mut Vec<u8>, command: &Command) -> Result<()> {
        let mut ttl = itoa::Buffer::new();
        match *command {
            Command::Get(key) => encode_command(write_buf, &[b"GET", key]),
            Command::Set(key, value, None) => encode_command(write_buf, &[b"SET", key, value]),
            Command::Set(key, value, Some(secs)) => {
                let ttl = ttl.format(secs).as_bytes();
                encode_command(write_buf, &[b"SET", key, value, b"EX", ttl]);
            }
            Command::Delete(key) => encode_command(write_buf, &[b"DEL", key]),
        }
        Ok(())
    }

    fn decode(buf: &[u8]) -> Result<Option<(Answer, usize)>> {
        let Some((reply, len)) = kvbench_resp::decode(buf)? else {
            return Ok(None);
        };
        let answer = match reply {
            RespReply::Bulk(Some(data)) => Answer::Value {
                data,
                echoed_key: None,
            },
            RespReply::Bulk(None) => Answer::Miss,
            RespReply::Simple(_) => Answer::Stored,
            RespReply::Integer(removed) => Answer::Deleted(removed > 0),
            RespReply::Error(message) => Answer::Error(String::from_utf8_lossy(&message).into()),
            RespReply::Array(_) => {
                return Err(Error::Protocol(
                    "an array answers none of our commands".into(),
                ));
            }
        };
        Ok(Some((answer, len)))
    }
}

/// memcached's text protocol, through `kvbench-memcached-reply` (and `memcached-text`'s checks:
/// a key is a field of a command line, so it cannot hold a space or a control byte).
#[derive(Debug, Clone)]
pub struct Text;

impl Protocol for Text {
    fn encode(write_buf: &mut Vec<u8>, command: &Command) -> Result<()> {
        match *command {
            Command::Get(key) => {
                check_key(key)?;
                encode_line(write_buf, &[b"get ", key, b"\r\n"]);
            }
            Command::Set(key, value, ttl_secs) => {
                check_key(key)?;
                check_value(value)?;
                let exptime = ttl_secs.map_or(Ok(0), exptime)?;
                encode_set(write_buf, key, value, exptime);
            }
            Command::Delete(key) => {
                check_key(key)?;
                encode_line(write_buf, &[b"delete ", key, b"\r\n"]);
            }
        }
        Ok(())
    }

    fn decode(buf: &[u8]) -> Result<Option<(Answer, usize)>> {
        let Some((reply, len)) = reply::decode(buf)? else {
            return Ok(None);
        };
        let text = |range: Range<usize>| buf[range].escape_ascii().to_string();
        let answer = match reply {
            TextReply::Value { key, data, .. } => Answer::Value {
                data: buf[data].to_vec(),
                echoed_key: Some(buf[key].to_vec()),
            },
            TextReply::End => Answer::Miss,
            TextReply::Stored => Answer::Stored,
            TextReply::Deleted => Answer::Deleted(true),
            TextReply::NotFound => Answer::Deleted(false),
            TextReply::NotStored => Answer::Error("NOT_STORED".into()),
            TextReply::ServerError(message) => Answer::Error(text(message)),
            // The server could not parse a command line; after a `set` it then reads the data
            // block as commands of its own, so the replies no longer line up (as in
            // `memcached-text`, whose checks this client shares, this should never happen).
            TextReply::Error => return Err(Error::Protocol("ERROR: unknown command".into())),
            TextReply::ClientError(message) => {
                return Err(Error::Protocol(format!("CLIENT_ERROR {}", text(message))));
            }
        };
        Ok(Some((answer, len)))
    }
}
