//! memcached's text protocol under the multiplexer: replies decoded with
//! `kvbench-memcached-reply`, keys and values checked, `set` encoded and error lines judged as
//! `memcached-text` does.

use kvbench_core::{Error, Result};
use kvbench_memcached_reply::{self as reply, Reply as TextReply};
use kvbench_memcached_text::{
    check_key, check_value, counter_of, encode_line, encode_set, error_of, exptime,
};

use crate::protocol::answer;
use crate::{Answer, Command, Protocol};

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
        let answer = match (command, reply) {
            (Command::Get, TextReply::Value { key, data, .. }) => {
                Answer::Value(Some(read_buf[data].to_vec()), Some(read_buf[key].to_vec()))
            }
            (Command::Get, TextReply::End) => Answer::Value(None, None),
            (Command::Set(_), TextReply::Stored) => Answer::Stored,
            (Command::Delete, TextReply::Deleted) => Answer::Integer(1),
            (Command::Delete, TextReply::NotFound) => Answer::Integer(0),
            // A counter, and any other reply, as `memcached-text` judges it: an error line whose
            // command was read whole (`SERVER_ERROR`, `NOT_STORED`) is the caller's, the rest is
            // out of step.
            (Command::Incr, reply) => answer(counter_of(reply, read_buf).map(Answer::Integer))?,
            (_, other) => answer(Err(error_of(other, read_buf, &format!("{command:?}"))))?,
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
