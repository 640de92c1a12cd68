//! INCR of a counter the cell stores first ([`Op::Incr`]; memcached: `incr <key> 1`).

use anyhow::Result as AnyResult;
use kvbench_conformance::Reference;
use kvbench_core::{AsyncClient, Client, Error, Operation, Result};

use super::{Facts, words};
use crate::baselines::{PrepareKey, RedisBenchmarkCommands};
use crate::drivers::{Args, Workload};
use crate::matrix::{Cell, Op};
use crate::verify::{Checked, Verification, expect};

pub(super) struct Incr;

impl Facts for Incr {
    fn id_size(_cell: &Cell) -> String {
        "counter".to_string()
    }

    fn contract(_op: Op) -> Option<Operation> {
        Some(Operation::Incr)
    }

    fn key_and_value(_cell: &Cell) -> (Vec<u8>, Vec<u8>) {
        (b"counter".to_vec(), b"0".to_vec())
    }

    fn prepare(reference: &mut Reference, w: &Workload) -> std::result::Result<(), String> {
        reference.set(&w.key, &w.value)
    }

    fn run_sync(client: &mut dyn Client, w: &Workload, _args: &Args) -> Result<()> {
        check_counter(client.incr(&w.key)?)
    }

    async fn run_async(client: &mut dyn AsyncClient, w: &Workload, _args: &Args<'_>) -> Result<()> {
        check_counter(client.incr(&w.key).await?)
    }

    /// The counter set to a known value through the reference, then one INCR: the client must
    /// return the next value, and the server must hold it.
    fn verify(v: &mut Verification<'_>) -> Checked {
        const START: i64 = 41;
        let w = v.w;
        (v.reference)
            .set(&w.key, START.to_string().as_bytes())
            .map_err(Err)?;
        let got = v.timed(|client| client.incr(&w.key)).map_err(Ok)?;
        if got != START + 1 {
            return Err(Err(format!("INCR of {START} returned {got}")));
        }
        let held = (START + 1).to_string();
        expect(
            v.reference.get(&w.key).map_err(Err)?,
            Some(held.as_bytes()),
            "reference GET after INCR",
        )
        .map_err(Err)
    }

    fn redis_benchmark(
        _w: &Workload,
        _prepare: &mut PrepareKey<'_>,
    ) -> AnyResult<RedisBenchmarkCommands> {
        Ok(RedisBenchmarkCommands::one(words(&["-t", "incr"]), ""))
    }
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
