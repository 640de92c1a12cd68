//! `set_many` of the cell's count of items in one pipeline: one key over and over on one server
//! ([`Op::PipelineSet`], the classic pipelined benchmark), distinct keys on a Redis Cluster, and
//! distinct keys on one server ([`Op::PipelineSetDistinct`], the cluster's work without the
//! cluster).

use anyhow::Result as AnyResult;
use kvbench_core::{AsyncClient, Backend, Client, Result};

use super::{Facts, ItemNames, named_items, words};
use crate::baselines::{PrepareKey, RedisBenchmarkCommands};
use crate::drivers::{Args, Workload};
use crate::matrix::{Cell, Op};
use crate::verify::{Checked, Verification, pipeline_depth};

pub(super) struct PipelineSet;

impl Facts for PipelineSet {
    fn id_size(cell: &Cell) -> String {
        cell.pipeline.to_string()
    }

    fn key_and_value(_cell: &Cell) -> (Vec<u8>, Vec<u8>) {
        (b"foo".to_vec(), b"bar".to_vec())
    }

    /// A cluster's pipeline writes distinct keys, so that it is split by node; one server's
    /// pipeline of distinct keys writes the same keys.
    fn item_names(cell: &Cell) -> Option<ItemNames> {
        let distinct = cell.op == Op::PipelineSetDistinct || cell.backend == Backend::RedisCluster;
        distinct.then(|| ItemNames {
            stem: "spread".to_string(),
            count: cell.pipeline,
            are_keys: true,
        })
    }

    /// One key over and over, unless the items are distinct keys.
    fn call_items(w: &Workload) -> Vec<(&[u8], &[u8])> {
        if w.names.is_empty() {
            vec![(&w.key[..], &w.value[..]); w.cell.pipeline]
        } else {
            named_items(w)
        }
    }

    fn run_sync(client: &mut dyn Client, _w: &Workload, args: &Args) -> Result<()> {
        client.set_many(&args.items)
    }

    async fn run_async(client: &mut dyn AsyncClient, _w: &Workload, args: &Args<'_>) -> Result<()> {
        client.set_many(&args.items).await
    }

    /// A pipeline of distinct keys, each with its own value, then every key read back through
    /// the reference: the count and every value must match. The keys are deleted afterwards.
    fn verify(v: &mut Verification<'_>) -> Checked {
        let w = v.w;
        let depth = pipeline_depth(v.spec, w, v.depth);
        let keys: Vec<Vec<u8>> = (0..depth)
            .map(|i| [&w.key[..], format!(":verify:{i}").as_bytes()].concat())
            .collect();
        let values: Vec<Vec<u8>> = (0..depth)
            .map(|i| format!("bar:{i}").into_bytes())
            .collect();
        let items: Vec<(&[u8], &[u8])> = keys
            .iter()
            .zip(&values)
            .map(|(key, value)| (&key[..], &value[..]))
            .collect();
        let written = v.timed(|client| client.set_many(&items));
        let reference = &mut *v.reference;
        if let Err(err) = written {
            reference.delete_many(&keys).map_err(Err)?;
            return Err(Ok(err));
        }
        let outcome = (|| {
            let mut found = 0usize;
            // 1,000 keys a read: MGET for Redis, one `gets` line for memcached.
            let chunk = 1_000;
            for (key_chunk, value_chunk) in keys.chunks(chunk).zip(values.chunks(chunk)) {
                for (got, want) in reference.get_many(key_chunk)?.into_iter().zip(value_chunk) {
                    if got.as_deref() == Some(&want[..]) {
                        found += 1;
                    }
                }
            }
            if found == depth {
                Ok(())
            } else {
                Err(format!(
                    "after set_many of {depth} items, {found} hold the value written"
                ))
            }
        })();
        reference.delete_many(&keys).map_err(Err)?;
        outcome.map_err(Err)
    }

    fn redis_benchmark(
        w: &Workload,
        _prepare: &mut PrepareKey<'_>,
    ) -> AnyResult<RedisBenchmarkCommands> {
        let depth = w.cell.pipeline.to_string();
        Ok(match w.cell.op {
            Op::PipelineSetDistinct => RedisBenchmarkCommands::one(
                words(&["-t", "set", "-d", "3", "-P", &depth, "-r", &depth]),
                "SETs of keys drawn at random among as many as the cell's (-r), not each key once",
            ),
            _ => RedisBenchmarkCommands::one(words(&["-t", "set", "-d", "3", "-P", &depth]), ""),
        })
    }
}
