//! What the multiplexer asks of a protocol. A [`Protocol`] appends a command to the write buffer
//! and decodes the reply to a command into an [`Answer`], both without I/O, with the workspace's
//! own codecs: [`Resp`](crate::Resp) (`kvbench-resp`) and [`Text`](crate::Text)
//! (`kvbench-memcached-reply`). The queue, the writer, the turns to read and the matching of replies to callers
//! are the same for both.

use kvbench_core::{Error, Result};

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
pub(crate) fn out_of_step(command: Command) -> Error {
    Error::Protocol(format!("a reply that cannot answer a {command:?} command"))
}

/// A verdict of the codec crates' own readers as an [`Answer`]: their [`Error::Server`] is the
/// caller's own error, with the stream still in step; any other error means it is not.
pub(crate) fn answer(verdict: Result<Answer>) -> Result<Answer> {
    match verdict {
        Err(Error::Server(message)) => Ok(Answer::Error(message)),
        other => other,
    }
}
