//! How a client is driven through a cell: the workload, the timed operation, and the clients
//! whose spec has an async face (`ClientSpec::connect_async`) run natively on a runtime of their
//! own.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kvbench_core::{AsyncClient, Backend, Client, ClientSpec, Endpoint, Error, Options, Result};
use tokio::runtime::Runtime;

use crate::matrix::{CLUSTER_GET_KEYS, Cell, Op, SET_EX_TTL};

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
    /// Their values, each of the cell's size and different from the others, so that a value
    /// read back under the wrong key is caught.
    pub values: Vec<Vec<u8>>,
}

impl Workload {
    /// The workload of `cell`; keys are built with `key` (the servers' run prefix).
    pub fn new(cell: Cell, key: impl Fn(&[u8]) -> Vec<u8>) -> Workload {
        let size = cell.value_size;
        // Keys on the server carry the run prefix; a hash's fields live inside its (prefixed)
        // key and need none of their own.
        let cluster = cell.backend == Backend::RedisCluster;
        let items = match cell.op {
            // A cluster's keys are spread over its nodes: each call reads the next of several
            // keys, and the pipeline writes distinct keys, so that it is split by node. One
            // server's pipeline of distinct keys writes the same keys.
            Op::Get | Op::PipelineSet if cluster => Some(("spread".to_string(), true)),
            Op::PipelineSetDistinct => Some(("spread".to_string(), true)),
            Op::GetMany | Op::GetManyPipelined => Some((format!("many:{size}"), true)),
            Op::TransactionPlain | Op::TransactionMulti | Op::TransactionPipeline => {
                Some(("txn".to_string(), true))
            }
            Op::Hash => Some(("field".to_string(), false)),
            Op::Get | Op::GetMiss | Op::Set | Op::SetEx | Op::PipelineSet | Op::Incr => None,
        };
        let count = match cell.op {
            Op::Get => CLUSTER_GET_KEYS,
            _ => cell.pipeline,
        };
        let names: Vec<Vec<u8>> = match items {
            Some((item, prefixed)) => (0..count)
                .map(|i| format!("{item}:{i}").into_bytes())
                .map(|name| if prefixed { key(&name) } else { name })
                .collect(),
            None => Vec::new(),
        };
        let values: Vec<Vec<u8>> = (0..names.len()).map(|i| item_value(size, i)).collect();
        let (name, value) = match cell.op {
            // The seed of the original benchmarks: foo = bar.
            Op::Get if cell.value_size == 3 => (b"foo".to_vec(), b"bar".to_vec()),
            Op::Get => (
                format!("value:{}", cell.value_size).into_bytes(),
                value(cell.value_size),
            ),
            Op::GetMiss => (b"missing".to_vec(), Vec::new()),
            Op::Set => (
                format!("set:{}", cell.value_size).into_bytes(),
                value(cell.value_size),
            ),
            Op::SetEx => (
                format!("setex:{}", cell.value_size).into_bytes(),
                value(cell.value_size),
            ),
            Op::PipelineSet | Op::PipelineSetDistinct => (b"foo".to_vec(), b"bar".to_vec()),
            Op::Incr => (b"counter".to_vec(), b"0".to_vec()),
            Op::Hash => (b"hash".to_vec(), Vec::new()),
            // Every operation of these is on `names`.
            Op::GetMany | Op::GetManyPipelined => (format!("many:{size}").into_bytes(), Vec::new()),
            Op::TransactionPlain | Op::TransactionMulti | Op::TransactionPipeline => {
                (b"txn".to_vec(), Vec::new())
            }
        };
        Workload {
            cell,
            key: key(&name),
            value,
            names,
            values,
        }
    }

    /// The arguments of one call, borrowed from the workload once, so that the timed loop
    /// builds nothing.
    pub fn args(&self) -> Args<'_> {
        let items = match self.cell.op {
            Op::PipelineSet if self.names.is_empty() => {
                vec![(&self.key[..], &self.value[..]); self.cell.pipeline]
            }
            _ => (self.names.iter())
                .zip(&self.values)
                .map(|(name, value)| (&name[..], &value[..]))
                .collect(),
        };
        Args {
            items,
            keys: self.names.iter().map(Vec::as_slice).collect(),
            turn: AtomicUsize::new(0),
        }
    }

    /// Every key the cell writes or reads on the server: its key and its items' (not the hash's
    /// fields, which are inside its key).
    pub fn server_keys(&self) -> Vec<Vec<u8>> {
        let mut keys = vec![self.key.clone()];
        if self.cell.op != Op::Hash {
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
    fn get_key<'k>(&'k self, w: &'k Workload) -> &'k [u8] {
        match self.keys.len() {
            0 => &w.key,
            keys => self.keys[self.turn.fetch_add(1, Ordering::Relaxed) % keys],
        }
    }
}

fn value(len: usize) -> Vec<u8> {
    if len == 3 {
        b"bar".to_vec()
    } else {
        kvbench_conformance::patterned_value(len)
    }
}

/// Item `i`'s value of `len` bytes (at least 3): the cell's value with `i` written over its
/// first bytes (`000`, `001`, …), so that no two items of a call hold the same value.
fn item_value(len: usize, i: usize) -> Vec<u8> {
    let mut value = value(len);
    let tag = format!("{i:03}");
    let end = tag.len().min(value.len());
    value[..end].copy_from_slice(&tag.as_bytes()[..end]);
    value
}

/// A GET that answers with the wrong length is a wrong client, even inside the timed loop.
fn check_hit(got: Option<Vec<u8>>, want: usize) -> Result<()> {
    match got {
        Some(value) if value.len() == want => {
            black_box(value);
            Ok(())
        }
        Some(value) => Err(Error::Protocol(format!(
            "GET returned {} bytes, want {want}",
            value.len()
        ))),
        None => Err(Error::Protocol(
            "GET returned a miss for a key that holds a value".into(),
        )),
    }
}

/// Every key of a `get_many` must come back with a value of the cell's size, in a list as long
/// as the keys.
fn check_hits(got: Vec<Option<Vec<u8>>>, keys: usize, want: usize) -> Result<()> {
    if got.len() != keys {
        return Err(Error::Protocol(format!(
            "get_many of {keys} keys returned {} values",
            got.len()
        )));
    }
    got.into_iter().try_for_each(|value| check_hit(value, want))
}

/// A counter that only ever grows from 0 is positive after an INCR.
fn check_counter(value: i64) -> Result<()> {
    match value {
        1.. => Ok(()),
        _ => Err(Error::Protocol(format!(
            "INCR of a counter that starts at 0 returned {value}"
        ))),
    }
}

/// HGETALL of the hash just written must return every field.
fn check_fields(got: Vec<(Vec<u8>, Vec<u8>)>, fields: usize) -> Result<()> {
    if got.len() != fields {
        return Err(Error::Protocol(format!(
            "HGETALL after HSET of {fields} fields returned {}",
            got.len()
        )));
    }
    black_box(got);
    Ok(())
}

fn miss(got: Option<Vec<u8>>) -> Result<()> {
    match got {
        None => Ok(()),
        Some(_) => Err(Error::Protocol(
            "GET of a missing key returned a value".into(),
        )),
    }
}

/// The timed operation, through the synchronous contract.
pub fn run_sync(client: &mut dyn Client, w: &Workload, args: &Args) -> Result<()> {
    let size = w.cell.value_size;
    match w.cell.op {
        Op::Get => check_hit(client.get(args.get_key(w))?, w.value.len()),
        Op::GetMiss => miss(client.get(&w.key)?),
        Op::Set => client.set(&w.key, &w.value),
        Op::SetEx => client.set_ex(&w.key, &w.value, SET_EX_TTL),
        Op::PipelineSet | Op::PipelineSetDistinct | Op::TransactionPipeline => {
            client.set_many(&args.items)
        }
        Op::Incr => check_counter(client.incr(&w.key)?),
        Op::GetMany => check_hits(client.get_many(&args.keys)?, args.keys.len(), size),
        Op::GetManyPipelined => check_hits(
            client.get_many_pipelined(&args.keys)?,
            args.keys.len(),
            size,
        ),
        Op::Hash => {
            client.hset_many(&w.key, &args.items)?;
            check_fields(client.hgetall(&w.key)?, args.items.len())
        }
        Op::TransactionPlain => {
            (args.items.iter()).try_for_each(|(key, value)| client.set(key, value))
        }
        Op::TransactionMulti => client.transaction(&args.items),
    }
}

/// The timed operation, natively async.
pub async fn run_async(client: &mut dyn AsyncClient, w: &Workload, args: &Args<'_>) -> Result<()> {
    let size = w.cell.value_size;
    match w.cell.op {
        Op::Get => check_hit(client.get(args.get_key(w)).await?, w.value.len()),
        Op::GetMiss => miss(client.get(&w.key).await?),
        Op::Set => client.set(&w.key, &w.value).await,
        Op::SetEx => client.set_ex(&w.key, &w.value, SET_EX_TTL).await,
        Op::PipelineSet | Op::PipelineSetDistinct | Op::TransactionPipeline => {
            client.set_many(&args.items).await
        }
        Op::Incr => check_counter(client.incr(&w.key).await?),
        Op::GetMany => check_hits(client.get_many(&args.keys).await?, args.keys.len(), size),
        Op::GetManyPipelined => check_hits(
            client.get_many_pipelined(&args.keys).await?,
            args.keys.len(),
            size,
        ),
        Op::Hash => {
            client.hset_many(&w.key, &args.items).await?;
            check_fields(client.hgetall(&w.key).await?, args.items.len())
        }
        Op::TransactionPlain => {
            for (key, value) in &args.items {
                client.set(key, value).await?;
            }
            Ok(())
        }
        Op::TransactionMulti => client.transaction(&args.items).await,
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
            Driver::Sync(client) => (0..n).try_for_each(|_| run_sync(client.as_mut(), w, args)),
            Driver::Async(AsyncDriver {
                runtime,
                inner: client,
            }) => runtime.block_on(async {
                for _ in 0..n {
                    run_async(&mut **client, w, args).await?;
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
                    run_sync(client.as_mut(), w, args)?;
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
                    run_async(&mut **client, w, args).await?;
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
