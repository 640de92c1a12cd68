//! Redis's RESP2 under the multiplexer: commands encoded and replies decoded with `kvbench-resp`,
//! a transaction's replies judged by `kvbench_resp::blocking::read_transaction`, as the blocking
//! clients judge them.

use kvbench_core::{Error, ReadBuffer, Result};
use kvbench_resp::{Reply as RespReply, encode_command};

use crate::protocol::out_of_step;
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
/// The N + 2 replies to a transaction of N SETs — MULTI's `+OK`, a `+QUEUED` per SET, then
/// EXEC's array of one `+OK` per SET — once all are in (`None` before), judged by
/// [`read_transaction`](kvbench_resp::blocking::read_transaction), the blocking clients' reader:
/// its [`Error::Server`] (a SET refused while queued, EXEC's `-EXECABORT`, a nil EXEC) is the
/// caller's error with the stream still in step; any other error means the stream is not.
fn decode_transaction(read_buf: &[u8], sets: usize) -> Result<Option<(Answer, usize)>> {
    let mut len = 0;
    for _ in 0..sets + 2 {
        let Some(reply_len) = kvbench_resp::check(&read_buf[len..])? else {
            return Ok(None);
        };
        len += reply_len;
    }
    let mut replies = ReadBuffer::new(len);
    let judged =
        kvbench_resp::blocking::read_transaction(&mut replies, &mut &read_buf[..len], sets);
    let answer = match judged {
        Ok(()) => Answer::Stored,
        Err(Error::Server(message)) => Answer::Error(message),
        Err(err) => return Err(err),
    };
    Ok(Some((answer, len)))
}
// ANCHOR_END: mux_decode_transaction
