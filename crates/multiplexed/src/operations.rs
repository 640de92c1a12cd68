//! The contract's optional operations over the multiplexer: each is one [`Command`] (or, for
//! `get_many_pipelined`, N of them queued under one lock) through the same queue, writer and
//! reader as GET and SET. What they ask of matching by order is in the crate docs
//! ("Transactions").

use kvbench_core::Result;
use kvbench_memcached_reply::place_hit;

use crate::{Answer, Command, Multiplexed, Protocol};

impl<P: Protocol> Multiplexed<P> {
    /// Adds 1 to the counter at `key`; its new value.
    pub async fn incr(&self, key: &[u8]) -> Result<i64> {
        match self.call(Command::Incr, &[key]).await? {
            Answer::Integer(value) => Ok(value),
            _ => Err(self.out_of_step("a counter that is no number")),
        }
    }

    // ANCHOR: mux_get_many
    /// Reads `keys` with one command, in order, `None` for each miss: RESP's `MGET` answers a
    /// value per key; memcached's `get k1 … kN` answers only the hits, each placed by the key it
    /// names (see `kvbench_memcached_reply::place_hit`). No key, no command.
    pub async fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        match self.call(Command::GetMany(keys.len()), keys).await? {
            Answer::Values(values) => Ok(values),
            Answer::Pairs(hits) => {
                let (mut values, mut next) = (vec![None; keys.len()], 0);
                for (key, value) in hits {
                    let place = place_hit(keys, next, &key);
                    let place = place.ok_or_else(|| self.out_of_step("a VALUE not asked for"))?;
                    (values[place], next) = (Some(value), place + 1);
                }
                Ok(values)
            }
            _ => Err(self.out_of_step("no values")),
        }
    }
    // ANCHOR_END: mux_get_many

    // ANCHOR: mux_get_many_pipelined
    /// A GET per key, all queued at once (one write, unless the writer is already busy), then
    /// each answer awaited in order.
    pub async fn get_many_pipelined(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let gets = keys
            .iter()
            .map(|key| (Command::Get, std::slice::from_ref(key)));
        let mut values = Vec::with_capacity(keys.len());
        for (call, key) in self.send_all(gets)?.into_iter().zip(keys) {
            values.push(self.value(self.receive(call).await?, key)?);
        }
        Ok(values)
    }
    // ANCHOR_END: mux_get_many_pipelined

    /// `HSET key f1 v1 …` (Redis).
    pub async fn hset_many(&self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
        let pairs = fields.iter().flat_map(|&(field, value)| [field, value]);
        let args: Vec<&[u8]> = std::iter::once(key).chain(pairs).collect();
        self.call(Command::HSet, &args).await.map(drop)
    }

    /// `HGETALL key` (Redis): every field and value; none for a missing key.
    pub async fn hgetall(&self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        match self.call(Command::HGetAll, &[key]).await? {
            Answer::Pairs(pairs) => Ok(pairs),
            _ => Err(self.out_of_step("no fields")),
        }
    }

    // ANCHOR: mux_transaction
    /// `MULTI`, a SET per item, `EXEC` (Redis), queued as one command with one slot: see
    /// "Transactions" in the crate docs.
    pub async fn transaction(&self, items: &[(&[u8], &[u8])]) -> Result<()> {
        let args: Vec<&[u8]> = items
            .iter()
            .flat_map(|&(key, value)| [key, value])
            .collect();
        let transaction = Command::Transaction(items.len());
        self.call(transaction, &args).await.map(drop)
    }
    // ANCHOR_END: mux_transaction
}
