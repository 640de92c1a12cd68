//! Every operation of the matrix, with everything the suite knows about it in one place.
//!
//! Each module below holds one family of [`Op`]s: the keys and values its cell uses, its timed
//! call (synchronous and natively async), how one call is verified through the reference
//! connection, the request and reply of its loopback floor, and how redis-benchmark and
//! memaslap express it. The rest of the suite asks through the functions of this module, so
//! that `with_facts!` is the one place an [`Op`] is matched to its module: a new operation is
//! one new module and one new line there, and the compiler lists every fact it must give.

mod get;
mod get_many;
mod hash;
mod incr;
mod pipeline_set;
mod set;
mod transaction;

use anyhow::Result as AnyResult;
use kvbench_conformance::Reference;
use kvbench_core::{AsyncClient, Client, Operation, Result};

use crate::baselines::{PrepareKey, RedisBenchmarkCommands};
use crate::drivers::{Args, Workload};
use crate::matrix::{Cell, Op};
use crate::verify::{Checked, Verification};

/// The items of a call of a cell of many items, named `<stem>:0`, `<stem>:1`, …
pub struct ItemNames {
    /// What each name starts with.
    pub stem: String,
    /// How many there are.
    pub count: usize,
    /// Whether the names are keys on the server (and carry the run prefix), rather than the
    /// fields of a hash, which live inside its one key.
    pub are_keys: bool,
}

/// The request the loopback floor's client sends and the reply a real server would send.
pub struct Exchange {
    /// Bytes of one request.
    pub request_len: usize,
    /// One reply, as the server would write it.
    pub reply: Vec<u8>,
}

/// What memaslap does in a cell it can express: GETs (of one key or many at once) or SETs.
pub struct MemaslapWork {
    /// Reads (its `get` command) rather than writes.
    pub gets: bool,
    /// Keys one of its requests reads (`--division`): 1, or the cell's count for a multi-get.
    pub keys_per_request: usize,
    /// How its work reads in the row.
    pub described: String,
}

/// The facts of one family of operations. Each has a default only where most operations have
/// nothing to say (no items, nothing to prepare, no floor, no memaslap).
trait Facts {
    /// What follows the operation in a cell's id: `3B`, `100`, `100/2KiB`, `none`, `counter`.
    fn id_size(cell: &Cell) -> String;

    /// The optional operation of the contract a client must implement to serve the cell.
    fn contract(_op: Op) -> Option<Operation> {
        None
    }

    /// The cell's one key (before the run prefix) and its value: what a GET expects, what a SET
    /// writes, the counter's start.
    fn key_and_value(cell: &Cell) -> (Vec<u8>, Vec<u8>);

    /// The items of a call, where a call has several (or a cluster's GET reads several keys in
    /// turn).
    fn item_names(_cell: &Cell) -> Option<ItemNames> {
        None
    }

    /// The (key or field, value) pairs one call writes: the workload's items.
    fn call_items(w: &Workload) -> Vec<(&[u8], &[u8])> {
        named_items(w)
    }

    /// Puts the server in the state the cell reads, through the reference connection.
    fn prepare(_reference: &mut Reference, _w: &Workload) -> std::result::Result<(), String> {
        Ok(())
    }

    /// The timed call, through the synchronous contract.
    fn run_sync(client: &mut dyn Client, w: &Workload, args: &Args) -> Result<()>;

    /// The timed call, natively async.
    async fn run_async(client: &mut dyn AsyncClient, w: &Workload, args: &Args<'_>) -> Result<()>;

    /// The cell's work once through `client`, its outcome checked through the reference;
    /// `took` is set to the client's own time (checks excluded).
    fn verify(v: &mut Verification<'_>) -> Checked;

    /// Whether the loopback floor knows this operation's exchange ([`Facts::floor_exchange`]).
    const HAS_FLOOR: bool = false;

    /// The loopback floor's exchange for the cell (single servers only).
    fn floor_exchange(w: &Workload) -> AnyResult<Exchange> {
        anyhow::bail!("the loopback floor has no {} exchange", w.cell.op)
    }

    /// redis-benchmark's commands for the cell; `prepare` sets or deletes its own key first
    /// where the cell reads it.
    fn redis_benchmark(
        w: &Workload,
        prepare: &mut PrepareKey<'_>,
    ) -> AnyResult<RedisBenchmarkCommands>;

    /// Why redis-benchmark cannot express the operation, if it cannot.
    fn redis_benchmark_cannot(_op: Op) -> Option<&'static str> {
        None
    }

    /// memaslap's work for the cell, where memaslap can express the operation.
    fn memaslap(_cell: &Cell) -> Option<MemaslapWork> {
        None
    }
}

/// Runs `$body` with `$facts` naming the type that holds the facts of `$op`'s family.
macro_rules! with_facts {
    ($op:expr, $facts:ident => $body:expr) => {
        match $op {
            Op::Get | Op::GetMiss => {
                type $facts = get::Get;
                $body
            }
            Op::Set | Op::SetEx => {
                type $facts = set::Set;
                $body
            }
            Op::PipelineSet | Op::PipelineSetDistinct => {
                type $facts = pipeline_set::PipelineSet;
                $body
            }
            Op::Incr => {
                type $facts = incr::Incr;
                $body
            }
            Op::GetMany | Op::GetManyPipelined => {
                type $facts = get_many::GetMany;
                $body
            }
            Op::Hash => {
                type $facts = hash::Hash;
                $body
            }
            Op::TransactionPlain | Op::TransactionMulti | Op::TransactionPipeline => {
                type $facts = transaction::Transaction;
                $body
            }
        }
    };
}

/// What follows the operation in `cell`'s id.
pub fn id_size(cell: &Cell) -> String {
    with_facts!(cell.op, F => F::id_size(cell))
}

/// The optional operation of the contract a client must implement to serve `op`; `None` when
/// every client can.
pub fn contract(op: Op) -> Option<Operation> {
    with_facts!(op, F => F::contract(op))
}

/// The cell's one key (before the run prefix) and its value.
pub fn key_and_value(cell: &Cell) -> (Vec<u8>, Vec<u8>) {
    with_facts!(cell.op, F => F::key_and_value(cell))
}

/// The items of a call of `cell`, if it has several.
pub fn item_names(cell: &Cell) -> Option<ItemNames> {
    with_facts!(cell.op, F => F::item_names(cell))
}

/// The (key or field, value) pairs one call of `w` writes.
pub fn call_items(w: &Workload) -> Vec<(&[u8], &[u8])> {
    with_facts!(w.cell.op, F => F::call_items(w))
}

/// Puts the server in the state `w`'s cell reads: the GET key holds the value, the miss key is
/// absent, the counter is stored (at 0), each `get_many` key holds its value.
pub fn prepare(reference: &mut Reference, w: &Workload) -> std::result::Result<(), String> {
    with_facts!(w.cell.op, F => F::prepare(reference, w))
}

/// The timed operation, through the synchronous contract.
pub fn run_sync(client: &mut dyn Client, w: &Workload, args: &Args) -> Result<()> {
    with_facts!(w.cell.op, F => F::run_sync(client, w, args))
}

/// The timed operation, natively async.
pub async fn run_async(client: &mut dyn AsyncClient, w: &Workload, args: &Args<'_>) -> Result<()> {
    with_facts!(w.cell.op, F => F::run_async(client, w, args).await)
}

/// The cell's work once through the client, checked through the reference ([`crate::verify`]).
pub(crate) fn verify(v: &mut Verification<'_>) -> Checked {
    with_facts!(v.w.cell.op, F => F::verify(v))
}

/// Whether the loopback floor knows `op`'s exchange.
pub fn has_floor(op: Op) -> bool {
    with_facts!(op, F => F::HAS_FLOOR)
}

/// The loopback floor's exchange for `w`'s cell.
pub fn floor_exchange(w: &Workload) -> AnyResult<Exchange> {
    with_facts!(w.cell.op, F => F::floor_exchange(w))
}

/// redis-benchmark's commands for `w`'s cell, its key prepared first where the cell reads it.
pub fn redis_benchmark(
    w: &Workload,
    prepare: &mut PrepareKey<'_>,
) -> AnyResult<RedisBenchmarkCommands> {
    with_facts!(w.cell.op, F => F::redis_benchmark(w, prepare))
}

/// Why redis-benchmark cannot express `op`, if it cannot.
pub fn redis_benchmark_cannot(op: Op) -> Option<&'static str> {
    with_facts!(op, F => F::redis_benchmark_cannot(op))
}

/// memaslap's work for `cell`, where memaslap can express its operation.
pub fn memaslap(cell: &Cell) -> Option<MemaslapWork> {
    with_facts!(cell.op, F => F::memaslap(cell))
}

/// A value of `len` bytes: `bar` for 3 (the classic benchmarks' value), the conformance kit's
/// patterned bytes otherwise.
pub(crate) fn value_of_size(len: usize) -> Vec<u8> {
    if len == 3 {
        b"bar".to_vec()
    } else {
        kvbench_conformance::patterned_value(len)
    }
}

/// Item `i`'s value of `len` bytes (at least 3): the cell's value with `i` written over its
/// first bytes (`000`, `001`, …), so that no two items of a call hold the same value and a value
/// read back under the wrong key is caught.
pub(crate) fn item_value(len: usize, i: usize) -> Vec<u8> {
    let mut value = value_of_size(len);
    let tag = format!("{i:03}");
    let end = tag.len().min(value.len());
    value[..end].copy_from_slice(&tag.as_bytes()[..end]);
    value
}

/// The workload's items as (name, value) pairs.
fn named_items(w: &Workload) -> Vec<(&[u8], &[u8])> {
    (w.names.iter().zip(&w.values))
        .map(|(name, value)| (&name[..], &value[..]))
        .collect()
}

/// Bytes as a command-line argument.
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The words of a command line, from string slices.
fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|word| word.to_string()).collect()
}
