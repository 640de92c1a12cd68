//! The cell's count of SETs written three ways, for the cost of atomicity: one at a time
//! ([`Op::TransactionPlain`]), in MULTI … EXEC ([`Op::TransactionMulti`]), and pipelined without
//! a transaction ([`Op::TransactionPipeline`]).

use anyhow::{Result as AnyResult, bail};
use kvbench_core::{AsyncClient, Client, Operation, Result};

use super::{Facts, ItemNames, words};
use crate::baselines::{PrepareKey, RedisBenchmarkCommands};
use crate::drivers::{Args, Workload};
use crate::matrix::{Cell, Op};
use crate::verify::{Checked, Verification, expect_values};

pub(super) struct Transaction;

impl Facts for Transaction {
    fn id_size(cell: &Cell) -> String {
        cell.pipeline.to_string()
    }

    /// The plain and the pipelined way go through methods every client has (`set`, `set_many`).
    fn contract(op: Op) -> Option<Operation> {
        (op == Op::TransactionMulti).then_some(Operation::Transaction)
    }

    /// Every write is of the items; the key only names the cell's keys.
    fn key_and_value(_cell: &Cell) -> (Vec<u8>, Vec<u8>) {
        (b"txn".to_vec(), Vec::new())
    }

    fn item_names(cell: &Cell) -> Option<ItemNames> {
        Some(ItemNames {
            stem: "txn".to_string(),
            count: cell.pipeline,
            are_keys: true,
        })
    }

    fn run_sync(client: &mut dyn Client, w: &Workload, args: &Args) -> Result<()> {
        match w.cell.op {
            Op::TransactionMulti => client.transaction(&args.items),
            Op::TransactionPipeline => client.set_many(&args.items),
            _ => (args.items.iter()).try_for_each(|(key, value)| client.set(key, value)),
        }
    }

    async fn run_async(client: &mut dyn AsyncClient, w: &Workload, args: &Args<'_>) -> Result<()> {
        match w.cell.op {
            Op::TransactionMulti => client.transaction(&args.items).await,
            Op::TransactionPipeline => client.set_many(&args.items).await,
            _ => {
                for (key, value) in &args.items {
                    client.set(key, value).await?;
                }
                Ok(())
            }
        }
    }

    /// From absent keys: the cell's way of writing its SETs once, then every key read back
    /// through the reference.
    fn verify(v: &mut Verification<'_>) -> Checked {
        let w = v.w;
        v.reference.delete_many(&w.names).map_err(Err)?;
        let args = w.args();
        v.timed(|client| Self::run_sync(client, w, &args))
            .map_err(Ok)?;
        let held = v.reference.get_many(&w.names).map_err(Err)?;
        expect_values(
            &held,
            &w.values,
            &format!("reference MGET after {}", w.cell.op),
        )
        .map_err(Err)
    }

    fn redis_benchmark(
        w: &Workload,
        _prepare: &mut PrepareKey<'_>,
    ) -> AnyResult<RedisBenchmarkCommands> {
        let size = w.cell.value_size.to_string();
        let depth = w.cell.pipeline.to_string();
        Ok(match w.cell.op {
            Op::TransactionPlain => RedisBenchmarkCommands::one(
                words(&["-t", "set", "-d", &size]),
                "SETs one at a time, as the plain way sends them",
            ),
            Op::TransactionPipeline => {
                RedisBenchmarkCommands::one(words(&["-t", "set", "-d", &size, "-P", &depth]), "")
            }
            op => bail!("{}", Self::redis_benchmark_cannot(op).unwrap_or_default()),
        })
    }

    fn redis_benchmark_cannot(op: Op) -> Option<&'static str> {
        (op == Op::TransactionMulti).then_some(
            "not run: redis-benchmark repeats one command (or -P copies of it); it cannot send \
             MULTI, the SETs and EXEC as one transaction",
        )
    }
}
