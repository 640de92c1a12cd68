//! The cell's count of distinct keys read in one call: one command ([`Op::GetMany`]: Redis
//! `MGET`, memcached's multi-key `get`), or one GET each, pipelined
//! ([`Op::GetManyPipelined`]).

use anyhow::Result as AnyResult;
use kvbench_conformance::Reference;
use kvbench_core::{AsyncClient, Client, Error, Operation, Result};

use super::get::check_hit;
use super::{Facts, ItemNames, MemaslapWork, text, words};
use crate::baselines::{PrepareKey, REDIS_BENCHMARK_KEY, RedisBenchmarkCommands};
use crate::drivers::{Args, Workload};
use crate::matrix::{Cell, Op, size_label};
use crate::verify::{Checked, Verification, expect_values};

pub(super) struct GetMany;

impl Facts for GetMany {
    fn id_size(cell: &Cell) -> String {
        format!("{}/{}", cell.pipeline, size_label(cell.value_size))
    }

    /// The pipelined GETs go through a method every client has (`get_many_pipelined`).
    fn contract(op: Op) -> Option<Operation> {
        (op == Op::GetMany).then_some(Operation::GetMany)
    }

    /// Every read is of the items; the key only names the cell's keys.
    fn key_and_value(cell: &Cell) -> (Vec<u8>, Vec<u8>) {
        (format!("many:{}", cell.value_size).into_bytes(), Vec::new())
    }

    fn item_names(cell: &Cell) -> Option<ItemNames> {
        Some(ItemNames {
            stem: format!("many:{}", cell.value_size),
            count: cell.pipeline,
            are_keys: true,
        })
    }

    fn prepare(reference: &mut Reference, w: &Workload) -> std::result::Result<(), String> {
        (w.names.iter().zip(&w.values)).try_for_each(|(key, value)| reference.set(key, value))
    }

    fn run_sync(client: &mut dyn Client, w: &Workload, args: &Args) -> Result<()> {
        let got = match w.cell.op {
            Op::GetMany => client.get_many(&args.keys)?,
            _ => client.get_many_pipelined(&args.keys)?,
        };
        check_hits(got, args.keys.len(), w.cell.value_size)
    }

    async fn run_async(client: &mut dyn AsyncClient, w: &Workload, args: &Args<'_>) -> Result<()> {
        let got = match w.cell.op {
            Op::GetMany => client.get_many(&args.keys).await?,
            _ => client.get_many_pipelined(&args.keys).await?,
        };
        check_hits(got, args.keys.len(), w.cell.value_size)
    }

    /// Every key must come back with its own value, in order.
    fn verify(v: &mut Verification<'_>) -> Checked {
        let w = v.w;
        let keys: Vec<&[u8]> = w.names.iter().map(Vec::as_slice).collect();
        let got = v
            .timed(|client| match w.cell.op {
                Op::GetMany => client.get_many(&keys),
                _ => client.get_many_pipelined(&keys),
            })
            .map_err(Ok)?;
        expect_values(&got, &w.values, w.cell.op.as_str()).map_err(Err)
    }

    fn redis_benchmark(
        w: &Workload,
        prepare: &mut PrepareKey<'_>,
    ) -> AnyResult<RedisBenchmarkCommands> {
        if w.cell.op == Op::GetMany {
            // The cell's keys, as the cell prepared them.
            let keys = w.names.iter().map(|key| text(key));
            return Ok(RedisBenchmarkCommands {
                commands: vec![std::iter::once("MGET".to_string()).chain(keys).collect()],
                items_per_request: w.cell.pipeline as u64,
                note: "one MGET of the cell's keys per request; ops/s counts keys",
            });
        }
        prepare(
            REDIS_BENCHMARK_KEY,
            Some("x".repeat(w.cell.value_size).as_bytes()),
        )?;
        let depth = w.cell.pipeline.to_string();
        Ok(RedisBenchmarkCommands::one(
            words(&["-t", "get", "-P", &depth]),
            "GETs of its one key, pipelined in batches as deep as the cell's",
        ))
    }

    /// A multi-get of the cell's count of keys (`--division`); it has no pipelined GETs.
    fn memaslap(cell: &Cell) -> Option<MemaslapWork> {
        (cell.op == Op::GetMany).then(|| MemaslapWork {
            gets: true,
            keys_per_request: cell.pipeline,
            described: format!(
                "multi-gets of {} keys it preloaded (`--division`), ops/s counts keys",
                cell.pipeline
            ),
        })
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
