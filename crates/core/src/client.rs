//! The contract: [`Client`], its optional [`Operation`]s, and the check a batch read's values
//! pass.

use crate::{Error, Result};

// ANCHOR: core_client
/// The synchronous interface every client implements.
///
/// Required: [`get`](Client::get), [`set`](Client::set), [`set_ex`](Client::set_ex),
/// [`delete`](Client::delete). Provided: [`set_many`](Client::set_many), which loops over `set`;
/// override it where you can be faster (pipelining).
///
/// Keys and values are bytes. A client whose protocol cannot carry some bytes refuses them with
/// [`Error::InvalidInput`] *before* writing anything.
pub trait Client: Send {
    /// Reads a key: `Some(bytes)` on a hit, `None` on a miss.
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Stores a value with no expiry.
    fn set(&mut self, key: &[u8], value: &[u8]) -> Result<()>;

    /// Stores a value that expires after `ttl_secs` seconds (at least 1).
    fn set_ex(&mut self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()>;

    /// Removes a key. Returns whether it existed.
    fn delete(&mut self, key: &[u8]) -> Result<bool>;

    /// Stores many values. The default sends one [`set`](Client::set) per item and waits for each
    /// reply; a pipelining client overrides it to send them without a round trip per item.
    ///
    /// On error, some items may have been stored and others not.
    // ANCHOR: default_set_many
    fn set_many(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        for (key, value) in items {
            self.set(key, value)?;
        }
        Ok(())
    }
    // ANCHOR_END: default_set_many

    // ANCHOR: core_get_many_pipelined
    /// Reads many keys, in order: `None` for each miss. The default sends one
    /// [`get`](Client::get) per key and waits for each reply; a pipelining client overrides it to
    /// send them all before reading any reply. Compare [`Client::get_many`], one command.
    fn get_many_pipelined(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|key| self.get(key)).collect()
    }
    // ANCHOR_END: core_get_many_pipelined

    /// The contract's optional operations. Each default refuses with [`Error::Unsupported`]
    /// before sending anything; a client that overrides one declares it in
    /// [`ClientSpec::operations`](crate::ClientSpec::operations), and the conformance kit holds both to it.
    ///
    /// Adds 1 to the counter stored at `key` and returns its new value. A missing key: Redis
    /// starts it from 0 (and returns 1); memcached has no counter there and answers
    /// [`Error::Server`] (`NOT_FOUND`). A value that is not a counter, or one that would pass
    /// `i64::MAX` (Redis refuses the increment; a memcached counter, unsigned 64-bit, may hold
    /// more than an `i64`), is [`Error::Server`]; the connection stays usable.
    fn incr(&mut self, key: &[u8]) -> Result<i64> {
        let _ = key;
        Err(Operation::Incr.unsupported())
    }

    /// Reads many keys with one command (Redis `MGET`, memcached `get k1 … kN`), in order:
    /// `None` for each miss.
    fn get_many(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let _ = keys;
        Err(Operation::GetMany.unsupported())
    }

    /// Stores the fields of the hash at `key` with one command (Redis `HSET key f1 v1 …`).
    fn hset_many(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
        let _ = (key, fields);
        Err(Operation::Hash.unsupported())
    }

    /// Reads every field of the hash at `key` (Redis `HGETALL`), in no promised order (a
    /// library may pass the reply through a map); empty for a missing key.
    fn hgetall(&mut self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let _ = key;
        Err(Operation::Hash.unsupported())
    }

    /// Stores every item atomically: the SETs inside `MULTI` … `EXEC` (Redis). Succeeds only
    /// if `EXEC` answered an `OK` for every SET; no other client sees some of the items stored
    /// and others not.
    fn transaction(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        let _ = items;
        Err(Operation::Transaction.unsupported())
    }
}
// ANCHOR_END: core_client

// ANCHOR: core_operation
/// The contract's optional operations: what a [`ClientSpec`](crate::ClientSpec) declares it implements beyond GET,
/// SET, SET with expiry, DELETE and `set_many`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// [`Client::incr`].
    Incr,
    /// [`Client::get_many`], one command for many keys.
    GetMany,
    /// [`Client::hset_many`] and [`Client::hgetall`] (Redis only).
    Hash,
    /// [`Client::transaction`] (Redis only).
    Transaction,
}
// ANCHOR_END: core_operation

impl Operation {
    /// Every optional operation.
    pub const ALL: &'static [Operation] = &[
        Operation::Incr,
        Operation::GetMany,
        Operation::Hash,
        Operation::Transaction,
    ];

    /// Its name in reports and errors.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Incr => "incr",
            Operation::GetMany => "get_many",
            Operation::Hash => "hash",
            Operation::Transaction => "transaction",
        }
    }

    /// The error of a client that does not implement it.
    pub fn unsupported(self) -> Error {
        Error::Unsupported(format!("this client does not implement {}", self.name()))
    }
}

/// The values of a batch read, checked to be one per key: a library converts an array of
/// another length without complaint, which would pair values with the wrong keys.
pub fn one_per_key(values: Vec<Option<Vec<u8>>>, keys: usize) -> Result<Vec<Option<Vec<u8>>>> {
    if values.len() != keys {
        return Err(Error::Protocol(format!(
            "{} values for {keys} keys",
            values.len()
        )));
    }
    Ok(values)
}
