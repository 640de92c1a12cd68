//! What the nodes say about where keys live: the slot map `CLUSTER SLOTS` answers
//! ([`slot_ranges`], checked as it is read) and the redirections of a node asked for a slot it
//! does not serve ([`Redirect`]).

use kvbench_core::{Error, Result};
use kvbench_resp::Reply;

use crate::SLOTS;

/// Where a node sends a command for a key it does not serve, parsed from its error reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    /// `MOVED <slot> <host:port>`: the slot is served there now; the map is stale.
    Moved(String),
    /// `ASK <slot> <host:port>`: the slot is migrating and the key is there; ask once, after
    /// `ASKING`.
    Ask(String),
}

impl Redirect {
    /// Parses an error reply's message, such as `MOVED 3999 127.0.0.1:6381`.
    pub fn parse(message: &str) -> Option<Redirect> {
        let mut words = message.split(' ');
        let (kind, slot, addr) = (words.next()?, words.next()?, words.next()?);
        slot.parse::<u16>().ok().filter(|&slot| slot < SLOTS)?;
        match kind {
            "MOVED" => Some(Redirect::Moved(addr.to_string())),
            "ASK" => Some(Redirect::Ask(addr.to_string())),
            _ => None,
        }
    }

    /// True for `MOVED`: the map is stale.
    pub fn is_moved(&self) -> bool {
        matches!(self, Redirect::Moved(_))
    }
}

/// `CLUSTER SLOTS` → `(first slot, last slot, host:port of its primary)`, each range checked.
// ANCHOR: slot_ranges
pub(crate) fn slot_ranges(reply: Reply) -> Result<Vec<(u16, u16, String)>> {
    let bad = || Error::Protocol("unexpected CLUSTER SLOTS reply".into());
    match reply {
        Reply::Array(Some(ranges)) => ranges
            .iter()
            .map(|r| slot_range(r).ok_or_else(bad))
            .collect(),
        Reply::Error(message) => Err(Error::Server(lossy(&message))),
        _ => Err(bad()),
    }
}

/// One element of the map: `[start, end, [ip, port, id, …], replicas…]`.
fn slot_range(range: &Reply) -> Option<(u16, u16, String)> {
    let Reply::Array(Some(fields)) = range else {
        return None;
    };
    let [
        Reply::Integer(start),
        Reply::Integer(end),
        Reply::Array(Some(primary)),
        ..,
    ] = &fields[..]
    else {
        return None;
    };
    let [Reply::Bulk(Some(ip)), Reply::Integer(port), ..] = &primary[..] else {
        return None;
    };
    let slot = |n: i64| u16::try_from(n).ok().filter(|&slot| slot < SLOTS);
    let (start, end) = (slot(*start)?, slot(*end)?);
    (start <= end).then(|| (start, end, format!("{}:{port}", lossy(ip))))
}
// ANCHOR_END: slot_ranges

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
