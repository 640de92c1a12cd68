//! Redis's RESP2 under the multiplexer: commands encoded and replies decoded with `kvbench-resp`;
//! the replies with parts (`MGET`'s, `HGETALL`'s, a transaction's) judged by the blocking clients'
//! own readers in `kvbench_resp::blocking`.

use kvbench_core::{Error, ReadBuffer, Result};
use kvbench_resp::blocking::{read_pairs, read_transaction, read_values};
use kvbench_resp::{Header, Reply as RespReply, encode_command, encode_get, encode_set};

use crate::protocol::{answer, out_of_step};
use crate::{Answer, Command, Protocol};

/// Redis's RESP2, through `kvbench-resp`.
#[derive(Debug, Clone)]
pub struct Resp;

impl Protocol for Resp {
    /// RESP announces the length of every argument, so there is nothing to refuse but arguments
    /// that do not fit the command. GET and SET allocate nothing here.
    fn encode(write_buf: &mut Vec<u8>, command: Command, args: &[&[u8]]) -> Result<()> {
        let mut ttl = itoa::Buffer::new();
        match (command, args) {
            (Command::Get, [key]) => encode_get(write_buf, key),
            (Command::Set(None), [key, value]) => encode_set(write_buf, key, value),
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
        if let Command::Get = command {
            return decode_get(read_buf);
        }
        // Replies with parts are judged by the blocking clients' readers, once all are in.
        match command {
            Command::GetMany(keys) => {
                return judged(read_buf, 1, |replies, bytes| {
                    read_values(replies, bytes, keys).map(Answer::Values)
                });
            }
            Command::HGetAll => {
                return judged(read_buf, 1, |r, b| read_pairs(r, b).map(Answer::Pairs));
            }
            Command::Transaction(sets) => {
                return judged(read_buf, sets + 2, |replies, bytes| {
                    read_transaction(replies, bytes, sets).map(|()| Answer::Stored)
                });
            }
            _ => {}
        }
        let Some((reply, len)) = kvbench_resp::decode(read_buf)? else {
            return Ok(None);
        };
        let answer = match (command, reply) {
            (_, RespReply::Error(error)) => Answer::Error(String::from_utf8_lossy(&error).into()),
            (Command::Set(_), RespReply::Simple(ok)) if ok == b"OK" => Answer::Stored,
            (Command::Delete | Command::Incr | Command::HSet, RespReply::Integer(n)) => {
                Answer::Integer(n)
            }
            _ => return Err(out_of_step(command)),
        };
        Ok(Some((answer, len)))
    }
}

/// A GET's reply, the call made most, read straight off its header and data, with no
/// [`RespReply`] built in between: a bulk string, nil, or an error.
fn decode_get(read_buf: &[u8]) -> Result<Option<(Answer, usize)>> {
    let Some((header, start)) = kvbench_resp::parse_header(read_buf)? else {
        return Ok(None);
    };
    let answer = match header {
        Header::Bulk(Some(len)) => {
            let Some((value, end)) = kvbench_resp::bulk_at(read_buf, start, len)? else {
                return Ok(None);
            };
            return Ok(Some((Answer::Value(Some(value.to_vec()), None), end)));
        }
        Header::Bulk(None) => Answer::Value(None, None),
        Header::Error(error) => Answer::Error(String::from_utf8_lossy(error).into()),
        _ => return Err(out_of_step(Command::Get)),
    };
    Ok(Some((answer, start)))
}

// ANCHOR: mux_judged
/// The `count` replies at the start of `read_buf` (a transaction's N + 2, or one array), once all
/// are in (`None` before), judged by `read`: one of `kvbench_resp::blocking`'s readers, over the
/// bytes in hand, so that these replies obey the same rules as in the blocking clients (a SET
/// refused while queued, EXEC's `-EXECABORT` or nil, an array of the wrong length, a nil among a
/// hash's fields). The price is a copy of those bytes into the reader's buffer.
fn judged(
    read_buf: &[u8],
    count: usize,
    read: impl FnOnce(&mut ReadBuffer, &mut &[u8]) -> Result<Answer>,
) -> Result<Option<(Answer, usize)>> {
    let mut len = 0;
    for _ in 0..count {
        let Some(reply_len) = kvbench_resp::check(&read_buf[len..])? else {
            return Ok(None);
        };
        len += reply_len;
    }
    let mut replies = ReadBuffer::new(len);
    Ok(Some((
        answer(read(&mut replies, &mut &read_buf[..len]))?,
        len,
    )))
}
// ANCHOR_END: mux_judged
