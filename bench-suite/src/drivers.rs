//! How a client is driven through a cell: the workload (the cell's keys and bytes, as
//! [`crate::ops`] gives them for its operation), the connected client, and the loops that run
//! the timed operation. Clients whose spec has an async face (`ClientSpec::connect_async`) run
//! natively on a runtime of their own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kvbench_core::{AsyncClient, Backend, Client, ClientSpec, Endpoint, Error, Options, Result};
use tokio::runtime::Runtime;

use crate::matrix::Cell;
use crate::ops;

/// The keys and bytes of one cell, prepared once before anything is timed.
#[derive(Clone)]
pub struct Workload {
    /// The cell.
    pub cell: Cell,
    /// The key every operation uses (with the run prefix on an external server): the counter
    /// of INCR, the hash of the hash cell.
    pub key: Vec<u8>,
    /// The value a GET expects or a SET writes; the counter's start (`0`).
    pub value: Vec<u8>,
    /// The items of a cell of many distinct items, one per item of a call: the keys of
    /// `get_many` and the transactions (with the run prefix), the fields of the hash. Empty
    /// elsewhere.
    pub names: Vec<Vec<u8>>,
    /// Whether `names` are keys on the server; a hash's fields are not.
    pub names_are_keys: bool,
    /// Their values, each of the cell's size and different from the others, so that a value
    /// read back under the wrong key is caught.
    pub values: Vec<Vec<u8>>,
}

impl Workload {
    /// The workload of `cell` ([`crate::ops`] knows each operation's keys and values); keys are
    /// built with `key` (the servers' run prefix).
    pub fn new(cell: Cell, key: impl Fn(&[u8]) -> Vec<u8>) -> Workload {
        let (name, value) = ops::key_and_value(&cell);
        let items = ops::item_names(&cell);
        let names: Vec<Vec<u8>> = match &items {
            Some(items) => (0..items.count)
                .map(|i| format!("{}:{i}", items.stem).into_bytes())
                .map(|name| if items.are_keys { key(&name) } else { name })
                .collect(),
            None => Vec::new(),
        };
        let values = (0..names.len())
            .map(|i| ops::item_value(cell.value_size, i))
            .collect();
        Workload {
            cell,
            key: key(&name),
            value,
            names_are_keys: items.is_none_or(|items| items.are_keys),
            names,
            values,
        }
    }

    /// The arguments of one call, borrowed from the workload once, so that the timed loop
    /// builds nothing.
    pub fn args(&self) -> Args<'_> {
        Args {
            items: ops::call_items(self),
            keys: self.names.iter().map(Vec::as_slice).collect(),
            turn: AtomicUsize::new(0),
        }
    }

    /// Every key the cell writes or reads on the server: its key and its items' (not a hash's
    /// fields, which are inside its key).
    pub fn server_keys(&self) -> Vec<Vec<u8>> {
        let mut keys = vec![self.key.clone()];
        if self.names_are_keys {
            keys.extend(self.names.iter().cloned());
        }
        keys
    }
}

/// One call's arguments: (key or field, value) pairs for `set_many`, the transactions and
/// `hset_many`; keys for `get_many`. Empty for single operations.
#[derive(Default)]
pub struct Args<'a> {
    /// The items written.
    pub items: Vec<(&'a [u8], &'a [u8])>,
    /// The keys read.
    pub keys: Vec<&'a [u8]>,
    /// Calls made so far of a GET over several keys: which key the next one reads.
    turn: AtomicUsize,
}

impl<'a> Args<'a> {
    /// The first `n` items only (a client without pipelining in a deep pipeline's block), or all
    /// of them for `usize::MAX`.
    pub fn first(&self, n: usize) -> Args<'a> {
        Args {
            items: self.items[..n.min(self.items.len())].to_vec(),
            keys: self.keys[..n.min(self.keys.len())].to_vec(),
            turn: AtomicUsize::new(0),
        }
    }

    /// The key a GET reads: the cell's one key, or (a cluster's GET) the next of its keys, in
    /// turn, so that every node serves some of the calls.
    pub(crate) fn get_key<'k>(&'k self, w: &'k Workload) -> &'k [u8] {
        match self.keys.len() {
            0 => &w.key,
            keys => self.keys[self.turn.fetch_add(1, Ordering::Relaxed) % keys],
        }
    }
}

/// An async client with the runtime it runs on: a current-thread runtime, so every task of
/// the library runs on the benchmark's own (pinned) thread and obeys the placement setting.
pub struct AsyncDriver {
    /// The runtime; criterion's `to_async` blocks on it.
    pub runtime: Runtime,
    /// The client's natively async face.
    pub inner: Box<dyn AsyncClient>,
}

// Every operation, the optional ones included: the client's own refuse as they would.
kvbench_core::impl_client_by_blocking_on!(
    AsyncDriver;
    get_many_pipelined, incr, get_many, hash, transaction
);

/// A connected client of either kind.
pub enum Driver {
    /// Through the synchronous contract.
    Sync(Box<dyn Client>),
    /// Natively async.
    Async(AsyncDriver),
}

impl Driver {
    /// Connects `spec` to `endpoint`: natively async where the spec has an async face.
    pub fn connect(spec: &ClientSpec, endpoint: &Endpoint, options: &Options) -> Result<Driver> {
        let Some(connect_async) = spec.connect_async else {
            return Ok(Driver::Sync((spec.connect)(endpoint, options)?));
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::Io)?;
        let client = runtime.block_on(connect_async(endpoint, options))?;
        Ok(Driver::Async(AsyncDriver {
            runtime,
            inner: client,
        }))
    }

    /// The driver through the synchronous contract (for verification).
    pub fn client(&mut self) -> &mut dyn Client {
        match self {
            Driver::Sync(client) => client.as_mut(),
            Driver::Async(driver) => driver,
        }
    }

    /// Runs the timed operation `n` times, natively, reading no clock: the counted loop of
    /// [`crate::count`], whose every instruction should be the client's.
    pub fn repeat(&mut self, w: &Workload, args: &Args, n: u64) -> Result<()> {
        match self {
            Driver::Sync(client) => {
                (0..n).try_for_each(|_| ops::run_sync(client.as_mut(), w, args))
            }
            Driver::Async(AsyncDriver {
                runtime,
                inner: client,
            }) => runtime.block_on(async {
                for _ in 0..n {
                    ops::run_async(&mut **client, w, args).await?;
                }
                Ok(())
            }),
        }
    }

    /// Runs the timed operation `n` times, natively (async clients inside one `block_on`),
    /// calling `each` with the duration of every operation.
    pub fn run_n(
        &mut self,
        w: &Workload,
        args: &Args,
        n: u64,
        each: &mut dyn FnMut(Duration),
    ) -> Result<()> {
        match self {
            Driver::Sync(client) => {
                for _ in 0..n {
                    let start = Instant::now();
                    ops::run_sync(client.as_mut(), w, args)?;
                    each(start.elapsed());
                }
                Ok(())
            }
            Driver::Async(AsyncDriver {
                runtime,
                inner: client,
            }) => runtime.block_on(async {
                for _ in 0..n {
                    let start = Instant::now();
                    ops::run_async(&mut **client, w, args).await?;
                    each(start.elapsed());
                }
                Ok(())
            }),
        }
    }
}

/// Which backend a cell's clients must speak.
pub fn serves(spec: &ClientSpec, cell: &Cell) -> bool {
    spec.backend == cell.backend && spec.supports(cell.transport)
}

/// True for memcached cells (they have no TTL command to verify SET EX with).
pub fn is_memcached(cell: &Cell) -> bool {
    cell.backend == Backend::Memcached
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{BATCH, full_matrix};

    fn workload(id: &str) -> Workload {
        let cell = full_matrix(&[])
            .into_iter()
            .find(|cell| cell.id() == id)
            .unwrap();
        Workload::new(cell, |key| [b"run:", key].concat())
    }

    #[test]
    fn a_cell_of_many_items_has_distinct_prefixed_keys_and_values_of_its_size() {
        let w = workload("memcached/get_many/100/2KiB/tcp");
        let args = w.args();
        assert_eq!((args.keys.len(), args.items.len()), (BATCH, BATCH));
        let distinct =
            |list: &[Vec<u8>]| list.iter().collect::<std::collections::HashSet<_>>().len();
        assert_eq!(distinct(&w.names), BATCH);
        assert_eq!(distinct(&w.values), BATCH);
        assert!(w.names.iter().all(|key| key.starts_with(b"run:many:2048:")));
        assert!(w.values.iter().all(|value| value.len() == 2048));
        assert_eq!(w.server_keys().len(), BATCH + 1);

        let w = workload("redis/transaction_multi/100/tcp");
        assert_eq!(&w.values[7], b"007");
        assert!(w.names[7].starts_with(b"run:txn:"));
        // A hash's fields are inside its prefixed key: only the key is the server's.
        let w = workload("redis/hash/100/unix");
        assert_eq!(&w.names[0], b"field:0");
        assert_eq!(w.server_keys(), [b"run:hash".to_vec()]);
        assert_eq!(w.args().first(10).items.len(), 10);
    }

    #[test]
    fn a_single_operation_has_no_items() {
        let w = workload("redis/incr/counter/tcp");
        assert_eq!(
            (w.key.as_slice(), w.value.as_slice()),
            (&b"run:counter"[..], &b"0"[..])
        );
        assert!(w.args().items.is_empty() && w.args().keys.is_empty());
        assert_eq!(
            workload("redis/pipeline_set/1000/tcp").args().items.len(),
            1000
        );
    }
}
