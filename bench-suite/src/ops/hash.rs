//! HSET of the cell's count of fields into one hash, then HGETALL of it ([`Op::Hash`]; Redis
//! only).

use std::hint::black_box;

use anyhow::Result as AnyResult;
use kvbench_conformance::Reference;
use kvbench_core::{AsyncClient, Client, Error, Operation, Result};

use super::{Facts, ItemNames, text};
use crate::baselines::{PrepareKey, RedisBenchmarkCommands};
use crate::drivers::{Args, Workload};
use crate::matrix::{Cell, Op};
use crate::verify::{Checked, Verification};

pub(super) struct Hash;

/// A hash's (field, value) pairs.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

impl Facts for Hash {
    fn id_size(cell: &Cell) -> String {
        cell.pipeline.to_string()
    }

    fn contract(_op: Op) -> Option<Operation> {
        Some(Operation::Hash)
    }

    fn key_and_value(_cell: &Cell) -> (Vec<u8>, Vec<u8>) {
        (b"hash".to_vec(), Vec::new())
    }

    /// The fields live inside the hash's (prefixed) key and need no prefix of their own.
    fn item_names(cell: &Cell) -> Option<ItemNames> {
        Some(ItemNames {
            stem: "field".to_string(),
            count: cell.pipeline,
            are_keys: false,
        })
    }

    fn run_sync(client: &mut dyn Client, w: &Workload, args: &Args) -> Result<()> {
        client.hset_many(&w.key, &args.items)?;
        check_fields(client.hgetall(&w.key)?, args.items.len())
    }

    async fn run_async(client: &mut dyn AsyncClient, w: &Workload, args: &Args<'_>) -> Result<()> {
        client.hset_many(&w.key, &args.items).await?;
        check_fields(client.hgetall(&w.key).await?, args.items.len())
    }

    /// From an absent hash: HSET of the cell's fields, read back through the reference, then
    /// the client's HGETALL must return the same fields and values (in any order).
    fn verify(v: &mut Verification<'_>) -> Checked {
        let w = v.w;
        (v.reference)
            .delete_many(std::slice::from_ref(&w.key))
            .map_err(Err)?;
        let mut want: Fields = (w.names.iter().cloned())
            .zip(w.values.iter().cloned())
            .collect();
        want.sort();
        let items = Self::call_items(w);
        let mut got = v
            .timed(|client| {
                client.hset_many(&w.key, &items)?;
                client.hgetall(&w.key)
            })
            .map_err(Ok)?;
        let fields = want.len();
        if reference_hash(v.reference, &w.key).map_err(Err)? != want {
            return Err(Err(format!(
                "after hset_many of {fields} fields the server's hash holds other fields or \
                 values"
            )));
        }
        got.sort();
        if got != want {
            return Err(Err(format!(
                "hgetall returned {} fields, not the {fields} fields and values written",
                got.len()
            )));
        }
        Ok(())
    }

    fn redis_benchmark(
        w: &Workload,
        _prepare: &mut PrepareKey<'_>,
    ) -> AnyResult<RedisBenchmarkCommands> {
        let mut hset = vec!["HSET".to_string(), text(&w.key)];
        for (field, value) in w.names.iter().zip(&w.values) {
            hset.extend([text(field), text(value)]);
        }
        Ok(RedisBenchmarkCommands {
            commands: vec![hset, vec!["HGETALL".into(), text(&w.key)]],
            items_per_request: w.cell.pipeline as u64,
            note: "two runs, as the cell's call makes two commands: time per field is \
                   (time per HSET + time per HGETALL) / fields",
        })
    }
}

/// Every field and value of the hash at `key`, through the reference connection's redis-rs
/// (the kit's reference has no hash command of its own), sorted.
fn reference_hash(reference: &mut Reference, key: &[u8]) -> std::result::Result<Fields, String> {
    let Reference::Redis(con) = reference else {
        return Err("memcached has no hashes".into());
    };
    let mut fields: Fields = redis::cmd("HGETALL")
        .arg(key)
        .query(con)
        .map_err(|err| format!("reference HGETALL: {err}"))?;
    fields.sort();
    Ok(fields)
}

/// HGETALL of the hash just written must return every field.
fn check_fields(got: Fields, fields: usize) -> Result<()> {
    if got.len() != fields {
        return Err(Error::Protocol(format!(
            "HGETALL after HSET of {fields} fields returned {}",
            got.len()
        )));
    }
    black_box(got);
    Ok(())
}
