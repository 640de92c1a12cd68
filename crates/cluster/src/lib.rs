//! `cluster`: one client, many servers — the client computes where each key lives (CRC16 of the
//! key, mod 16,384, is its *slot*; a map says which node serves each slot) and sends the command
//! straight there, over one connection per node. It gives up what cannot be answered by one node:
//! `MGET` and `MULTI` across slots (Redis refuses them with `CROSSSLOT`, so `get_many` and
//! `transaction` are not offered), and it pays for a map that can go stale. Compare it with
//! `raw-tcp`, whose connection each node's is, and with `buffered`, whose pipeline `set_many`
//! splits here by node.
//!
//! **What it teaches.** A Redis Cluster has no proxy: every node serves some of the 16,384 slots,
//! and a client that asks the wrong node is told where to go instead of being served. So the
//! client keeps the map itself ([`ClusterClient::refresh`], from `CLUSTER SLOTS`) and follows the
//! two redirections a node may answer ([`Redirect`]):
//! - `MOVED <slot> <host:port>`: the slot lives elsewhere now. The map is stale: read it again,
//!   then retry there.
//! - `ASK <slot> <host:port>`: the slot is being migrated and this key has already left. Ask
//!   there once, after `ASKING` (which lets a node answer for a slot it is importing), and leave
//!   the map alone: the other keys of the slot are still here.
//!
//! The slot is [`key_slot`]: the CRC16 of the key, or of its *hash tag* (the text between the
//! first `{` and the next `}`, if not empty), so `{user1000}.following` and
//! `{user1000}.followers` share a node. The CRC is a standard one (CRC-16/XMODEM), looked up 16
//! bytes per step in the `crc` crate's tables; a key's first block is padded with zeros in front,
//! which leave a CRC from 0 unchanged, so a short key takes one step too, not one per byte as in
//! Redis's own `crc16.c`. The same step checks all 16 bytes for a `{` at once: only a key with
//! one is searched for its tag. A pipeline pays the slot once per item: on the bench's keys
//! (`spread:<n>`, 8 to 12 bytes) about 80 instructions each, where a search and then one table
//! lookup per byte took 165.
//!
//! **Pipelining across nodes.** [`Client::set_many`] and [`Client::get_many_pipelined`] group
//! the items by node and go in rounds: each round writes up to [`CHUNK_LEN`] of commands to
//! *every* node before reading any reply, then reads each node's replies, so the nodes work in
//! parallel while the client writes. Bounding each round is what keeps a million items from
//! deadlocking: a chunk's replies always fit in the socket buffers, so no write waits on a
//! reply nobody reads (`buffered` reads on a second thread instead; here that would be a thread
//! per node). Replies to SETs are taken in runs of `+OK\r\n`, five bytes compared each (about
//! fifteen instructions a reply, where reading each on its own took over a hundred); any other
//! reply is read on its own, so that an error reply is known to be its item's. Results come back
//! in the caller's order. An item a node redirected is retried on its own afterwards, following
//! its redirections, once the map has been read again if any node said `MOVED`.
//!
//! **What it gives up.** Replicas (no reads from them, no failover: a node that is gone fails
//! the calls for its slots, with its address in the error, while the other nodes' keys work);
//! retries on a broken connection (the call fails; the next one to that node reconnects); the
//! Unix transport (a cluster announces its nodes by host:port); per-item errors in a batch (the
//! first error reply, or a node that fails, fails the batch and closes every node's connection,
//! so that no reply the batch leaves unread can reach a later call).
//!
//! **Timeouts.** Each node's connection follows [core's timeout
//! rules](kvbench_core::Options#timeouts). A call follows at most [`MAX_REDIRECTS`] redirections,
//! so its time is bounded by a few timeouts even while slots move.
#![deny(missing_docs)]

use std::io::Write;
use std::net::TcpStream;

use crc::{CRC_16_XMODEM, Crc, Table};
use kvbench_core::{
    Backend, Client, ClientSpec, Endpoint, Error, Operation, Options, Pipelining, ReadBuffer,
    Result, Transport,
};
use kvbench_resp::blocking::{self, Connection, MultiBulk};
use kvbench_resp::{encode_command, encode_get, encode_set};

mod map;

pub use map::Redirect;
use map::slot_ranges;

/// Hash slots in a Redis Cluster.
pub const SLOTS: u16 = 16384;

/// Redirections one call follows before it fails: a slot moving twice while we chase it is
/// already unusual.
pub const MAX_REDIRECTS: usize = 5;

/// How many bytes of commands a batch writes to each node per round (whole commands, so one
/// large value makes a larger chunk); as in `buffered`.
pub const CHUNK_LEN: usize = 64 * 1024;

/// CRC-16/XMODEM (polynomial 0x1021, initial value 0, no reflection): Redis Cluster's key hash.
/// Only its sixteen 256-entry tables are used (built at compile time): table `k` holds each
/// byte's CRC with `k` zero bytes after it, so that [`crc16`] looks up 16 bytes per step.
// ANCHOR: crc16
static CRC16: Crc<u16, Table<16>> = Crc::<u16, Table<16>>::new(&CRC_16_XMODEM);
// ANCHOR_END: crc16

/// The slot of `key`: the CRC16 of its hash tag — the bytes between its first `{` and the first
/// `}` after it, if there are any — or else of the whole key, mod 16,384.
// ANCHOR: key_slot
pub fn key_slot(key: &[u8]) -> u16 {
    // Most keys have no `{`: each block is checked for one as it is hashed, its 16 bytes
    // compared at once (a search, stopping at the first, takes a few instructions a byte), and
    // only a key that has one is searched for its tag.
    let mut has_brace = false;
    let crc = blocks(key).fold(0, |crc, block| {
        has_brace |= block.iter().fold(false, |found, &b| found | (b == b'{'));
        crc16_step(crc, block)
    });
    let tag = if has_brace { hash_tag(key) } else { None };
    tag.map_or(crc, crc16) % SLOTS
}

/// The bytes between the first `{` of `key` and the first `}` after it, if not empty.
fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let rest = &key[open + 1..];
    let close = rest.iter().position(|&b| b == b'}')?;
    (close > 0).then(|| &rest[..close])
}
// ANCHOR_END: key_slot

/// The CRC16 of `bytes`.
fn crc16(bytes: &[u8]) -> u16 {
    blocks(bytes).fold(0, crc16_step)
}

/// `bytes` in blocks of 16, the first one padded with zeros in front. A CRC that starts at 0
/// stays 0 through zero bytes, so the padding changes nothing, and a key of up to 16 bytes is
/// hashed in one step instead of one per byte.
fn blocks(bytes: &[u8]) -> impl Iterator<Item = [u8; 16]> {
    let (head, blocks) = bytes.as_rchunks::<16>();
    let mut first = [0; 16];
    first[16 - head.len()..].copy_from_slice(head);
    std::iter::once(first).chain(blocks.iter().copied())
}

/// The CRC after `crc` and then `block`. A CRC is linear: it is the XOR of each byte's entry in
/// the table of the bytes that follow it, with the CRC so far as two more bytes XORed into the
/// block's first two.
fn crc16_step(crc: u16, block: [u8; 16]) -> u16 {
    let tables = CRC16.table();
    let [high, low] = crc.to_be_bytes();
    let carried = tables[15][usize::from(high)] ^ tables[14][usize::from(low)];
    let bytes = block.iter().zip(tables.iter().rev());
    bytes.fold(carried, |crc, (&b, table)| crc ^ table[usize::from(b)])
}

/// One node's connection: `raw-tcp`'s.
type Conn = Connection<TcpStream, MultiBulk>;

/// A node as the map names it, and its connection once opened.
struct Node {
    addr: String,
    conn: Option<Conn>,
}

/// A Redis Cluster client: the slot map and one connection per node.
pub struct ClusterClient {
    options: Options,
    /// Every node met so far (the seed first); indexes stay valid as the map changes.
    nodes: Vec<Node>,
    /// Slot → index in `nodes`; `None` for a slot no node serves. Four bytes a slot, 64 KiB in
    /// all, so that the map stays in the CPU's cache while a batch routes its keys.
    owners: Vec<Option<u16>>,
}

impl ClusterClient {
    /// Connects to `seed` (`host:port` of any node) and reads the slot map from it.
    pub fn connect(seed: &str, options: &Options) -> Result<ClusterClient> {
        let mut client = ClusterClient {
            options: options.clone(),
            nodes: Vec::new(),
            owners: vec![None; usize::from(SLOTS)],
        };
        client.node_index(seed);
        let endpoint = Endpoint::Tcp(seed.to_string());
        client
            .refresh()
            .map_err(|err| err.while_connecting(&endpoint))?;
        Ok(client)
    }

    /// The `host:port` of the node serving `slot`, as the map says.
    pub fn node_for_slot(&self, slot: u16) -> Option<&str> {
        let owner = (*self.owners.get(usize::from(slot))?)?;
        Some(&self.nodes[usize::from(owner)].addr)
    }

    /// Reads the slot map again (`CLUSTER SLOTS`) from the first node that answers, the seed
    /// first.
    pub fn refresh(&mut self) -> Result<()> {
        let mut last_error = None;
        for index in 0..self.nodes.len() {
            let cluster_slots = |buf: &mut Vec<u8>| encode_command(buf, &[b"CLUSTER", b"SLOTS"]);
            let reply = self.on(index, |conn| {
                conn.pipeline(cluster_slots, blocking::read_reply)
            });
            match reply.and_then(slot_ranges) {
                Ok(ranges) => {
                    self.owners.fill(None);
                    for (start, end, addr) in ranges {
                        let owner = u16::try_from(self.node_index(&addr))
                            .map_err(|_| Error::Protocol("more than 65,536 nodes named".into()))?;
                        self.owners[usize::from(start)..=usize::from(end)].fill(Some(owner));
                    }
                    return Ok(());
                }
                Err(err) => last_error = Some(err),
            }
        }
        Err(last_error.unwrap_or_else(|| Error::InvalidInput("no node to ask".into())))
    }

    /// The index of the node at `addr`, added if new.
    fn node_index(&mut self, addr: &str) -> usize {
        if let Some(index) = self.nodes.iter().position(|node| node.addr == addr) {
            return index;
        }
        let addr = addr.to_string();
        self.nodes.push(Node { addr, conn: None });
        self.nodes.len() - 1
    }

    /// The node serving `slot`: one look-up, inlined into a batch's loop over its keys; the map
    /// is read again, out of line, only if it names none.
    #[inline]
    fn owner(&mut self, slot: u16) -> Result<usize> {
        match self.owners[usize::from(slot)] {
            Some(owner) => Ok(usize::from(owner)),
            None => self.owner_after_refresh(slot),
        }
    }

    /// [`owner`](Self::owner) of a slot the map names no node for: read the map again, once.
    #[cold]
    #[inline(never)]
    fn owner_after_refresh(&mut self, slot: u16) -> Result<usize> {
        self.refresh()?;
        self.owners[usize::from(slot)]
            .map(usize::from)
            .ok_or_else(|| Error::Server(format!("CLUSTERDOWN no node serves slot {slot}")))
    }

    /// Runs `op` on node `index`'s connection, opened first if it has none or its last one
    /// broke; an error names the node.
    fn on<T>(&mut self, index: usize, op: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        let node = &mut self.nodes[index];
        let conn = match node.conn.take() {
            Some(conn) if !conn.is_broken() => conn,
            _ => blocking::connect_tcp(&node.addr, &self.options, true, MultiBulk)?,
        };
        op(node.conn.insert(conn)).map_err(|err| err.with_peer(&format!("node {}", node.addr)))
    }

    /// Runs `op` on the connection of the node serving `key`, following redirections.
    // ANCHOR: route
    fn route<T>(&mut self, key: &[u8], mut op: impl FnMut(&mut Conn) -> Result<T>) -> Result<T> {
        let slot = key_slot(key);
        let mut target = self.owner(slot)?;
        let mut asking = false;
        for _ in 0..=MAX_REDIRECTS {
            let attempt = self.on(target, |conn| {
                if asking {
                    let asking = |write_buf: &mut Vec<u8>| encode_command(write_buf, &[b"ASKING"]);
                    conn.pipeline(asking, |buf, stream| {
                        blocking::read_status(buf, stream, "OK")
                    })?;
                }
                op(conn)
            });
            let redirect = match attempt {
                Err(Error::Server(msg)) => Redirect::parse(&msg).ok_or(Error::Server(msg))?,
                result => return result,
            };
            // MOVED: the map is stale. ASK: this key, this once.
            asking = !redirect.is_moved();
            if !asking {
                self.refresh()?;
            }
            let (Redirect::Moved(addr) | Redirect::Ask(addr)) = &redirect;
            target = self.node_index(addr);
        }
        Err(Error::Server(format!(
            "slot {slot} still redirected after {MAX_REDIRECTS} redirections"
        )))
    }
    // ANCHOR_END: route

    // ANCHOR: cluster_by_node
    /// Sends the command `encode` writes for each of `items` to the node serving its `key`, in
    /// rounds (see "Pipelining across nodes" in the crate docs), and reads the replies with
    /// `read`: given a node's items not yet answered (indexes, in order), it reads the replies
    /// to one or more of them and says how many (an error reply is the first item's). Returns
    /// the indexes of the items a node redirected, in the caller's order, for the caller to
    /// retry one at a time.
    fn scatter<I>(
        &mut self,
        items: &[I],
        key: impl Fn(&I) -> &[u8],
        encode: impl Fn(&mut Vec<u8>, &I),
        read: impl FnMut(&mut ReadBuffer, &mut TcpStream, &[usize]) -> Result<usize>,
    ) -> Result<Vec<usize>> {
        // Each node's items, by index.
        let mut queues: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        for (index, item) in items.iter().enumerate() {
            let node = self.owner(key_slot(key(item)))?;
            if node >= queues.len() {
                // The map was read again and named a node new to us.
                queues.resize_with(node + 1, Vec::new);
            }
            queues[node].push(index);
        }
        let mut redirected = Vec::new();
        let outcome = self.rounds(
            &queues,
            |buf, index| encode(buf, &items[index]),
            read,
            &mut redirected,
        );
        if outcome.is_err() {
            // Nodes may still owe replies to this batch, which a later call would take for its
            // own: close every connection (the next call to a node opens a new one).
            self.nodes.iter_mut().for_each(|node| node.conn = None);
        }
        if outcome? {
            self.refresh()?;
        }
        // Noted node by node: back to the caller's order.
        redirected.sort_unstable();
        Ok(redirected)
    }

    /// Writes the items of `queues` (one per node) in rounds and reads their replies, noting in
    /// `redirected` the items a node redirected; true if a node answered `MOVED`. An error leaves
    /// replies in flight.
    fn rounds(
        &mut self,
        queues: &[Vec<usize>],
        encode: impl Fn(&mut Vec<u8>, usize),
        mut read: impl FnMut(&mut ReadBuffer, &mut TcpStream, &[usize]) -> Result<usize>,
        redirected: &mut Vec<usize>,
    ) -> Result<bool> {
        let (mut sent, mut moved) = (vec![0; queues.len()], false);
        // ANCHOR: scatter_rounds
        while sent.iter().zip(queues).any(|(&n, queue)| n < queue.len()) {
            // Every node's chunk first, so that all of them work while we read.
            let mut round = Vec::new();
            for (node, queue) in queues.iter().enumerate() {
                let start = sent[node];
                if start == queue.len() {
                    continue;
                }
                // At least CHUNK_LEN bytes of whole commands, or all that is left.
                sent[node] += self.on(node, |conn| {
                    conn.exchange(|stream, write_buf, _| {
                        write_buf.clear();
                        let mut taken = 0;
                        for &item in &queue[start..] {
                            if write_buf.len() >= CHUNK_LEN {
                                break;
                            }
                            encode(write_buf, item);
                            taken += 1;
                        }
                        stream.write_all(write_buf)?;
                        Ok(taken)
                    })
                })?;
                round.push((node, &queue[start..sent[node]]));
            }
            for (node, items) in round {
                self.on(node, |conn| {
                    conn.exchange(|stream, _, read_buf| {
                        let mut unread = items;
                        while let [item, ..] = *unread {
                            read_buf.start_reply();
                            let replies = match read(read_buf, stream, unread) {
                                Ok(replies) => replies,
                                // Redirected: retried after the batch, one at a time.
                                Err(Error::Server(message)) => match Redirect::parse(&message) {
                                    Some(redirect) => {
                                        moved |= redirect.is_moved();
                                        redirected.push(item);
                                        1
                                    }
                                    None => return Err(Error::Server(message)),
                                },
                                Err(err) => return Err(err),
                            };
                            unread = &unread[replies..];
                        }
                        Ok(())
                    })
                })?;
            }
        }
        // ANCHOR_END: scatter_rounds
        Ok(moved)
    }
    // ANCHOR_END: cluster_by_node
}

impl Client for ClusterClient {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.route(key, |conn| conn.get(key))
    }

    fn set(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.route(key, |conn| conn.set(key, value))
    }

    fn set_ex(&mut self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()> {
        self.route(key, |conn| conn.set_ex(key, value, ttl_secs))
    }

    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        self.route(key, |conn| conn.delete(key))
    }

    /// Pipelined by node: see the crate documentation.
    // ANCHOR: cluster_set_many
    fn set_many(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        let redirected = self.scatter(
            items,
            |&(key, _)| key,
            |write_buf, &(key, value)| encode_set(write_buf, key, value),
            |read_buf, stream, unread| {
                // A run of `+OK\r\n` at once, five bytes compared each (as `buffered` counts
                // them); any other reply, or one cut by the end of a read, on its own.
                let oks = (read_buf.pending().chunks_exact(5).take(unread.len()))
                    .take_while(|&reply| reply == b"+OK\r\n")
                    .count();
                read_buf.consume(5 * oks);
                match oks {
                    0 => blocking::read_status(read_buf, stream, "OK").map(|()| 1),
                    _ => Ok(oks),
                }
            },
        )?;
        // The items a node redirected: one at a time, each following its redirections.
        for index in redirected {
            let (key, value) = items[index];
            self.set(key, value)?;
        }
        Ok(())
    }
    // ANCHOR_END: cluster_set_many

    /// Pipelined by node, like `set_many`; the values come back in the keys' order.
    fn get_many_pipelined(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let mut values = vec![None; keys.len()];
        let redirected = self.scatter(
            keys,
            |&key| key,
            |write_buf, key| encode_get(write_buf, key),
            |read_buf, stream, unread| {
                values[unread[0]] = blocking::read_value(read_buf, stream)?;
                Ok(1)
            },
        )?;
        for index in redirected {
            values[index] = self.get(keys[index])?;
        }
        Ok(values)
    }

    fn incr(&mut self, key: &[u8]) -> Result<i64> {
        self.route(key, |conn| conn.incr(key))
    }

    fn hset_many(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
        self.route(key, |conn| conn.hset_many(key, fields))
    }

    fn hgetall(&mut self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.route(key, |conn| conn.hgetall(key))
    }
}

/// The client as the suite lists it (in `kvbench_clients::cluster()`): `connect` gets one seed
/// node and finds the others.
pub const SPEC: ClientSpec = ClientSpec {
    name: "cluster",
    backend: Backend::RedisCluster,
    transports: &[Transport::Tcp],
    summary: "Redis Cluster: CRC16 key slots, a slot map from CLUSTER SLOTS, one raw-tcp \
              connection per node, MOVED and ASK followed",
    pipelining: Pipelining::Pipelined(
        "SETs grouped by node, in rounds: every node's 64 KiB chunk written before any reply \
         is read",
    ),
    connect: |endpoint, options| match endpoint {
        Endpoint::Tcp(seed) => Ok(Box::new(ClusterClient::connect(seed, options)?)),
        Endpoint::Unix(_) => Err(Error::Unsupported(
            "a cluster announces its nodes by host:port: connect to a node over TCP".into(),
        )),
    },
    // MGET and MULTI span slots, which a cluster refuses (CROSSSLOT).
    operations: &[Operation::Incr, Operation::Hash],
    ..ClientSpec::HAND_WRITTEN
};

#[cfg(test)]
mod tests {
    use kvbench_resp::Reply;

    use super::*;

    #[test]
    fn crc16_is_xmodem() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(crc16(b""), 0);
        // Every length around the 16-byte steps, against the `crc` crate's own checksum.
        let bytes: Vec<u8> = (0..50u8).map(|i| i.wrapping_mul(97) ^ 0xA5).collect();
        for len in 0..=bytes.len() {
            assert_eq!(crc16(&bytes[..len]), CRC16.checksum(&bytes[..len]), "{len}");
        }
    }

    #[test]
    fn slots_follow_the_cluster_spec() {
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"123456789"), 0x31C3 % SLOTS);
        assert_eq!(
            key_slot(b"{user1000}.following"),
            key_slot(b"{user1000}.followers")
        );
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        // Only the first `{`, and the first `}` after it, count.
        assert_eq!(key_slot(b"foo{bar}{zap}"), key_slot(b"bar"));
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
        // An empty tag, or none closed, hashes the whole key.
        assert_eq!(
            key_slot(b"foo{}{bar}"),
            CRC16.checksum(b"foo{}{bar}") % SLOTS
        );
        assert_eq!(key_slot(b"foo{bar"), CRC16.checksum(b"foo{bar") % SLOTS);
        // A `{` beyond the first 16-byte block, or a tag longer than one.
        let long = b"0123456789abcdefghijklm{tag}";
        assert_eq!(key_slot(long), key_slot(b"tag"));
        let long_tag = b"{0123456789abcdefghijklm}";
        assert_eq!(key_slot(long_tag), key_slot(b"0123456789abcdefghijklm"));
    }

    #[test]
    fn redirections_are_parsed_from_error_replies() {
        let moved = Redirect::parse("MOVED 3999 127.0.0.1:6381");
        assert_eq!(moved, Some(Redirect::Moved("127.0.0.1:6381".into())));
        let ask = Redirect::parse("ASK 3999 127.0.0.1:6381");
        assert_eq!(ask, Some(Redirect::Ask("127.0.0.1:6381".into())));
        for other in [
            "ERR wrong",
            "MOVED",
            "MOVED x a:1",
            "MOVED 16384 a:1",
            "ASK 1",
        ] {
            assert_eq!(Redirect::parse(other), None, "{other}");
        }
    }

    #[test]
    fn slot_maps_are_read_and_checked() {
        let bulk = |text: &str| Reply::Bulk(Some(text.as_bytes().to_vec()));
        let node = |ip, port| Reply::Array(Some(vec![bulk(ip), Reply::Integer(port), bulk("id")]));
        let range = |start, end, primary| {
            Reply::Array(Some(vec![
                Reply::Integer(start),
                Reply::Integer(end),
                primary,
            ]))
        };
        let map = Reply::Array(Some(vec![
            range(0, 5460, node("127.0.0.1", 7000)),
            range(5461, 16383, node("10.0.0.2", 7001)),
        ]));
        let ranges = slot_ranges(map).unwrap();
        assert_eq!(ranges[1], (5461, 16383, "10.0.0.2:7001".to_string()));
        for bad in [
            range(0, 16384, node("a", 1)),
            range(10, 9, node("a", 1)),
            range(-1, 9, node("a", 1)),
            range(0, 1, Reply::Integer(1)),
        ] {
            let err = slot_ranges(Reply::Array(Some(vec![bad]))).unwrap_err();
            assert!(matches!(err, Error::Protocol(_)), "{err}");
        }
        let refused = slot_ranges(Reply::Error(b"ERR cluster support disabled".to_vec()));
        assert!(matches!(refused, Err(Error::Server(_))), "{refused:?}");
    }
}
