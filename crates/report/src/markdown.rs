//! `summary.md`: the report's tables in Markdown, to paste into a README or a pull request.

use std::fmt::Write as _;
use std::path::Path;

use crate::format::{self, markdown as md};
use crate::html::run_id;
use crate::model::{BASELINE_CLIENT, Model, backend_title, transport_title};
use crate::results::{Kind, Mode, Results, Row};

/// Renders the summary.
pub fn summary(results: &Results, model: &Model, dir: &Path) -> String {
    let run = &results.run;
    let mut out = String::new();
    let _ = writeln!(out, "# kvbench run {}\n", md(&run_id(results, dir)));
    match run.mode {
        Mode::Test => out.push_str(
            "> **Test mode** (`criterion --test`): every pair ran once to check it works. \
             These numbers are not measurements.\n\n",
        ),
        Mode::Quick => out.push_str(
            "> **Quick run**: a subset of the matrix with short measurement times; expect wide \
             intervals.\n\n",
        ),
        Mode::Full => {}
    }

    out.push_str("## Environment\n\n| | |\n|---|---|\n");
    let mut env = |name: &str, value: String| {
        let _ = writeln!(out, "| {name} | {} |", md(&value));
    };
    env("mode", run.mode.to_string());
    env("started", run.started_at.clone());
    env("duration", format::run_duration(run.duration_s));
    env("git sha", run.git_sha.clone());
    env(
        "machine",
        format!("{}, {} logical CPUs", run.cpu_model, run.cores),
    );
    env("kernel", run.kernel.clone());
    env("rustc", run.rustc.clone());
    env("placement", run.placement.describe());
    env("run-to-run noise", crate::html::noise_text(results));
    for (name, server) in [
        ("Redis", &run.servers.redis),
        ("memcached", &run.servers.memcached),
    ] {
        env(
            name,
            format!(
                "{}{} — {}",
                server.version,
                if server.external { " (external)" } else { "" },
                server.config
            ),
        );
    }
    for note in &run.notes {
        env("note", note.clone());
    }
    for defect in &run.known_defects {
        env(
            "known defect",
            format!(
                "{} ({}): {} → {}",
                defect.client, defect.library, defect.input, defect.outcome
            ),
        );
    }
    out.push('\n');

    out.push_str(
        "## Headline\n\nThe fastest client of each cell; the best hand-written and library \
         clients as a multiple of redis-benchmark (the benchmark tool shipped with Redis) in the \
         same cell, with the ratio's range, and the best hand-written client's time per operation \
         as a multiple of the loopback floor's. Clients that cannot be told apart in this run are \
         named together.\n\n\
         | cell | fastest | ops/s | best hand-written | ops/s | × redis-benchmark | best library | \
         ops/s | × redis-benchmark | redis-benchmark ops/s | best hand-written time × floor |\n\
         |---|---|--:|---|--:|--:|---|--:|--:|--:|--:|\n",
    );
    for cell in model.cells() {
        let best = cell.best();
        let _ = write!(
            out,
            "| {} | {} | {} |",
            md(&cell.label),
            md(&crate::html::leader_names(&cell.leaders(None))),
            format::opt(best.and_then(Row::ops), format::grouped)
        );
        for kind in [Kind::HandWritten, Kind::Library] {
            let row = cell.best_of(kind);
            let _ = write!(
                out,
                " {} | {} | {} |",
                md(&crate::html::leader_names(&cell.leaders(Some(kind)))),
                format::opt(row.and_then(Row::ops), format::grouped),
                md(&crate::html::baseline_ratio_text(cell, row))
            );
        }
        let _ = writeln!(
            out,
            " {} | {} |",
            format::opt(cell.baseline, format::grouped),
            format::opt(
                cell.best_of(Kind::HandWritten)
                    .and_then(|r| cell.time_over_floor(r)),
                format::ratio
            )
        );
    }
    out.push('\n');

    for section in &model.sections {
        let _ = writeln!(
            out,
            "## {} ({})\n",
            md(&section.title),
            md(section.op.as_str())
        );
        for variant in &section.variants {
            for cell in &variant.cells {
                let _ = writeln!(
                    out,
                    "### {} · {} · {}\n",
                    md(&cell.label),
                    md(backend_title(cell.backend)),
                    md(transport_title(cell.transport))
                );
                let _ = writeln!(
                    out,
                    "| client | kind | ops/s | interval | measured | noise | × fastest | \
                     × {BASELINE_CLIENT} | time × floor | CPU/op | user/op | sys/op | syscalls/op | \
                     allocs/op | alloc bytes/op | p50 | p99 | p99.9 |\n\
                     |---|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
                );
                for row in cell.by_speed() {
                    if !row.is_ok() {
                        let _ = writeln!(
                            out,
                            "| {} | {} | {}: {} | | | | | | | | | | | | | | | |",
                            md(&row.client),
                            md(row.kind.as_str()),
                            md(crate::svg::status_word(row)),
                            md(&row.unmeasured_reason().unwrap_or_default())
                        );
                        continue;
                    }
                    let latency = row.latency_ns;
                    let flag = if row.flags.is_empty() { "" } else { " ⚑" };
                    let _ = writeln!(
                        out,
                        "| {}{flag} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                        md(&row.client),
                        md(row.kind.as_str()),
                        row.ops().map_or_else(
                            || crate::svg::status_word(row).to_string(),
                            format::grouped
                        ),
                        row.ops_interval()
                            .map_or("–".to_string(), |(low, high)| format!(
                                "{} – {}",
                                format::short(low),
                                format::short(high)
                            )),
                        md(&row.measured_text()),
                        format::opt(row.spread, kvbench_results::verdict::percent),
                        format::opt(cell.ratio_to_fastest(row), format::ratio),
                        md(&if row.client == BASELINE_CLIENT {
                            format::opt(cell.ratio_to_baseline(row), format::ratio)
                        } else {
                            crate::html::baseline_ratio_text(cell, Some(row))
                        }),
                        format::opt(cell.time_over_floor(row), format::ratio),
                        format::opt(row.cpu_ns_per_op, format::duration_ns),
                        format::opt(row.user_ns_per_op, format::duration_ns),
                        format::opt(row.sys_ns_per_op, format::duration_ns),
                        format::opt(row.syscalls_per_op, |v| format::significant(v, 3)),
                        format::opt(row.allocs_per_op, |v| format::significant(v, 3)),
                        format::opt(row.alloc_bytes_per_op, format::bytes),
                        format::opt(latency.map(|l| l.p50 as f64), format::duration_ns),
                        format::opt(latency.map(|l| l.p99 as f64), format::duration_ns),
                        format::opt(
                            latency.and_then(|l| l.p999).map(|v| v as f64),
                            format::duration_ns
                        ),
                    );
                }
                for row in cell.rows.iter().filter(|r| !r.flags.is_empty()) {
                    let _ = writeln!(
                        out,
                        "\n⚑ {}: {}",
                        md(&row.client),
                        md(&row.flags.join("; "))
                    );
                }
                out.push('\n');
            }
        }
    }

    if let Some(depth) = &model.depth {
        out.push_str("## Pipelined SET by depth (ops/s)\n\n| client | kind | backend/transport |");
        for d in &depth.depths {
            let _ = write!(out, " {} |", format::depth(*d));
        }
        out.push_str("\n|---|---|---|");
        for _ in &depth.depths {
            out.push_str("--:|");
        }
        out.push('\n');
        for client in &depth.clients {
            for series in &depth.series {
                if !depth
                    .depths
                    .iter()
                    .any(|d| client.rows.contains_key(&(series.clone(), *d)))
                {
                    continue;
                }
                let _ = write!(
                    out,
                    "| {} | {} | {} |",
                    md(&client.client),
                    md(client.kind.as_str()),
                    md(series)
                );
                for d in &depth.depths {
                    let text = match client.rows.get(&(series.clone(), *d)) {
                        Some(row) => match row.ops() {
                            Some(ops) => format::grouped(ops),
                            None => crate::svg::status_word(row).to_string(),
                        },
                        None => "–".to_string(),
                    };
                    let _ = write!(out, " {} |", md(&text));
                }
                out.push('\n');
            }
        }
        out.push('\n');
    }

    out.push_str("## Failed and unsupported pairs\n\n");
    if model.problems.is_empty() {
        out.push_str("Every (cell, client) pair was measured.\n");
    } else {
        out.push_str("| cell | client | kind | status | reason |\n|---|---|---|---|---|\n");
        for (row, why) in &model.problems {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                md(&row.cell),
                md(&row.client),
                md(row.kind.as_str()),
                md(crate::svg::status_word(row)),
                md(why)
            );
        }
    }
    out
}
