//! Rows grouped the way the report shows them: operation → variant (size, depth) → cell
//! (backend × transport) → clients, plus the per-cell ratios every output shares.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use crate::check;
use crate::format;
use crate::paired;
use crate::results::{Backend, Kind, Op, Results, Row, Status, Transport};
use kvbench_results::verdict::{self, Judgement, Verdict};

/// The baseline every cell's ratio column refers to: redis-benchmark, the benchmark tool shipped
/// with Redis (C, its own event loop).
pub const BASELINE_CLIENT: &str = kvbench_results::REDIS_BENCHMARK;

/// Kinds in report order (also the legend's order).
pub const KINDS: &[Kind] = &[Kind::HandWritten, Kind::Library, Kind::Baseline];

/// The report's view of one results file.
pub struct Model<'a> {
    /// One section per operation, in the schema's order.
    pub sections: Vec<OpSection<'a>>,
    /// Pipelined-SET throughput by depth, per client.
    pub depth: Option<DepthChart<'a>>,
    /// Rows without a measurement and why, by cell.
    pub problems: Vec<(&'a Row, String)>,
    /// Operations and sizes measured with several callers in flight.
    pub callers: Vec<Callers<'a>>,
    /// The open-loop cells: their rows are curves over offered rates, kept out of the rest.
    pub open: Vec<OpenCell<'a>>,
}

/// An open-loop cell: each client's rows by offered rate.
pub struct OpenCell<'a> {
    /// Cell id (`redis/get/3B/tcp/c256/open`).
    pub label: String,
    /// Server.
    pub backend: Backend,
    /// Transport.
    pub transport: Transport,
    /// The offered rates of its rows, lowest first.
    pub rates: BTreeSet<u64>,
    /// Hand-written, then library clients; by name within a kind.
    pub lines: Vec<OpenLine<'a>>,
}

/// One client's rows of an open-loop cell, by offered rate; `index`, its place in the cell, is
/// its colour.
pub type OpenLine<'a> = CallersLine<'a, u64>;

/// The p99 an open-loop row must stay at or below to count as served: 1 ms.
pub const OPEN_P99_NS: u64 = 1_000_000;

impl OpenLine<'_> {
    /// The highest offered rate at which the client kept up with p99 at or below `p99_ns`.
    pub fn highest_within(&self, p99_ns: u64) -> Option<u64> {
        (self.rows.iter().rev())
            .find(|(_, row)| open_p99(row).is_some_and(|p99| p99 <= p99_ns))
            .map(|(rate, _)| *rate)
    }

    /// The highest offered rate the client kept up with (answered, not saturated), whatever its
    /// p99 there: the capacity a p99 threshold cannot show where the p99 hovers near it.
    pub fn highest_kept_up(&self) -> Option<u64> {
        (self.rows.iter().rev())
            .find(|(_, row)| open_p99(row).is_some())
            .map(|(rate, _)| *rate)
    }

    /// The lowest offered rate the client was saturated at, and what it achieved there.
    pub fn saturated_at(&self) -> Option<(u64, Option<f64>)> {
        (self.rows.iter())
            .find_map(|(rate, row)| Some((*rate, row.open_loop.filter(|o| o.saturated)?)))
            .map(|(rate, open)| (rate, open.achieved_rate))
    }
}

/// An open-loop row's p99, ns: none when it failed or was saturated.
pub fn open_p99(row: &Row) -> Option<u64> {
    Some(row.open_loop?.latency_ns?.p99).filter(|_| row.is_ok())
}

impl<'a> OpenCell<'a> {
    /// Every open-loop cell of `results`, in the order they ran.
    pub fn new(results: &'a Results) -> Vec<OpenCell<'a>> {
        let mut cells: Vec<OpenCell> = Vec::new();
        for row in results.rows.iter() {
            let Some(rate) = row.offered_rate else {
                continue;
            };
            let at = match cells.iter().position(|c| c.label == row.cell) {
                Some(at) => at,
                None => {
                    cells.push(OpenCell {
                        label: row.cell.clone(),
                        backend: row.backend,
                        transport: row.transport,
                        rates: BTreeSet::new(),
                        lines: Vec::new(),
                    });
                    cells.len() - 1
                }
            };
            let cell = &mut cells[at];
            cell.rates.insert(rate);
            let line = match cell.lines.iter().position(|l| l.client == row.client) {
                Some(line) => line,
                None => {
                    cell.lines.push(OpenLine {
                        client: &row.client,
                        kind: row.kind,
                        index: 0,
                        rows: BTreeMap::new(),
                    });
                    cell.lines.len() - 1
                }
            };
            cell.lines[line].rows.entry(rate).or_insert(row);
        }
        for cell in &mut cells {
            cell.lines
                .sort_by(|a, b| (a.kind, a.client).cmp(&(b.kind, b.client)));
            for (index, line) in cell.lines.iter_mut().enumerate() {
                line.index = index;
            }
        }
        cells
    }
}

/// Every cell of one operation.
pub struct OpSection<'a> {
    /// Operation.
    pub op: Op,
    /// One variant per (value size, depth), smallest first.
    pub variants: Vec<Variant<'a>>,
}

/// An operation and size measured with several callers in flight (GET 3 B, SET 3 B, …).
pub struct Callers<'a> {
    /// Operation.
    pub op: Op,
    /// Value size, bytes.
    pub value_size: u64,
    /// The callers in flight of its rows, 1 (the plain cells) included.
    pub levels: BTreeSet<u32>,
    /// One per backend and transport, Redis before memcached, TCP before Unix.
    pub panels: Vec<CallersPanel<'a>>,
}

/// One backend and transport: a line per client that ran with several callers, from one caller
/// (its row in the plain cell) to the most.
pub struct CallersPanel<'a> {
    /// Server.
    pub backend: Backend,
    /// Transport.
    pub transport: Transport,
    /// Hand-written, library, then baseline tools; by client name within a kind.
    pub lines: Vec<CallersLine<'a>>,
}

/// One client's rows by callers in flight (or, [`OpenLine`], by offered rate).
pub struct CallersLine<'a, X = u32> {
    /// Client name.
    pub client: &'a str,
    /// Its kind.
    pub kind: Kind,
    /// Its place among the run's clients of its backend with many callers: its colour, the same
    /// in every panel.
    pub index: usize,
    /// Callers in flight (or offered rate) → row.
    pub rows: BTreeMap<X, &'a Row>,
}

/// Cells that differ only in backend and transport: drawn side by side on one scale.
pub struct Variant<'a> {
    /// For example `3 B` or `depth 100k · 3 B`.
    pub title: String,
    /// Redis before memcached, TCP before Unix.
    pub cells: Vec<Cell<'a>>,
    /// Largest throughput (interval included) over the cells: the shared axis.
    pub scale_max: f64,
}

/// One cell: one backend, transport, operation and size; one row per client.
pub struct Cell<'a> {
    /// Cell id, for example `redis/get/3B/unix` (empty for a cell without rows).
    pub label: String,
    /// The run's noise figure (median spread of its repeated rows), for verdicts on rows timed
    /// apart.
    pub noise: Option<f64>,
    /// Hand-written, then library, then baseline rows; by client name within a kind.
    pub rows: Vec<&'a Row>,
    /// The fastest client of the real server (floors excluded), by the paired rule.
    pub fastest: Option<&'a Row>,
    /// redis-benchmark's row in the cell, if it has a throughput.
    pub baseline: Option<&'a Row>,
    /// The cell's reference contender, the side of every `ratio_to_reference`, if it has a row.
    pub reference: Option<&'a Row>,
    /// The loopback floor's throughput in the cell (the fastest floor row, if several).
    pub floor: Option<f64>,
    /// Relative link to criterion's report of this group, only if the file is in the run folder.
    pub criterion_link: Option<String>,
    /// Judgements made so far, by the two rows' addresses: a paired one bootstraps its interval,
    /// and the headline, the tables and the lessons ask for the same pairs again.
    judged: RefCell<HashMap<(*const Row, *const Row), Judgement>>,
}

/// Pipelined SET by depth: one small chart per client, one series per backend/transport.
pub struct DepthChart<'a> {
    /// Depths present in the run, ascending.
    pub depths: Vec<u64>,
    /// Series names (`redis/tcp`, …) present in the run, in report order.
    pub series: Vec<String>,
    /// Clients in kind order.
    pub clients: Vec<DepthClient<'a>>,
    /// Largest throughput (interval included): the shared axis.
    pub scale_max: f64,
}

/// One client's pipelined rows.
pub struct DepthClient<'a> {
    /// Client name.
    pub client: String,
    /// Its kind.
    pub kind: Kind,
    /// (series, depth) → row.
    pub rows: BTreeMap<(String, u64), &'a Row>,
}

impl<'a> Model<'a> {
    /// Groups `results`; `dir` is the run folder, used to keep only links whose target exists.
    pub fn new(results: &'a Results, dir: &Path) -> Model<'a> {
        type CellKey = (Backend, Transport, String);
        type VariantKey = (Op, u64, u64, u32);
        let mut by_variant: BTreeMap<VariantKey, BTreeMap<CellKey, Vec<&Row>>> = BTreeMap::new();
        for row in results.rows.iter().filter(|r| r.offered_rate.is_none()) {
            by_variant
                .entry((row.op, row.pipeline, row.value_size, row.concurrency))
                .or_default()
                .entry((row.backend, row.transport, row.cell.clone()))
                .or_default()
                .push(row);
        }
        let noise = results.noise().map(|noise| noise.median_spread);

        let mut sections: Vec<OpSection> = Vec::new();
        for ((op, pipeline, value_size, callers), cells) in by_variant {
            let cells: Vec<Cell> = cells
                .into_values()
                .map(|rows| {
                    let mut cell = Cell::new(rows, noise);
                    cell.criterion_link = (cell.rows.iter())
                        .filter_map(|r| r.criterion_report.as_deref())
                        .find(|rel| check::existing_inside(dir, rel))
                        .map(str::to_string);
                    cell
                })
                .collect();
            let variant = Variant {
                title: variant_title(op, pipeline, value_size, callers),
                scale_max: scale_max(cells.iter().flat_map(|c| &c.rows)),
                cells,
            };
            match sections.last_mut() {
                Some(section) if section.op == op => section.variants.push(variant),
                _ => sections.push(OpSection {
                    op,
                    variants: vec![variant],
                }),
            }
        }

        let mut problems: Vec<(&Row, String)> = (results.rows.iter())
            .filter(|row| !row.is_ok() && row.offered_rate.is_none())
            .filter_map(|row| Some((row, row.unmeasured_reason()?)))
            .collect();
        problems.sort_by_key(|(row, _)| (row.op, &row.cell, &row.client));

        Model {
            depth: DepthChart::new(results),
            callers: Callers::new(results),
            open: OpenCell::new(results),
            sections,
            problems,
        }
    }

    /// Every cell, in report order.
    pub fn cells(&self) -> impl Iterator<Item = &Cell<'a>> {
        (self.sections.iter()).flat_map(|s| s.variants.iter().flat_map(|v| v.cells.iter()))
    }
}

impl<'a> Cell<'a> {
    /// The cell of these rows (all of one cell), judged with the run's `noise`.
    pub fn new(mut rows: Vec<&'a Row>, noise: Option<f64>) -> Cell<'a> {
        rows.sort_by(|a, b| (a.kind, &a.client).cmp(&(b.kind, &b.client)));
        let floor = (rows.iter().filter(|r| r.is_floor()))
            .filter_map(|r| r.ops())
            .reduce(f64::max);
        let reference = (rows.iter().find_map(|r| r.reference.as_deref()))
            .and_then(|name| rows.iter().copied().find(|r| r.client == name));
        let mut cell = Cell {
            label: rows.first().map_or(String::new(), |r| r.cell.clone()),
            noise,
            fastest: None,
            floor,
            baseline: (rows.iter().copied()).find(|r| r.is_baseline_tool() && r.ops().is_some()),
            reference,
            criterion_link: None,
            judged: RefCell::default(),
            rows,
        };
        cell.fastest = cell.best(None);
        cell
    }

    /// Rows with a throughput, fastest first (the tables' default order), then the others.
    pub fn by_speed(&self) -> Vec<&'a Row> {
        let mut rows = self.rows.clone();
        rows.sort_by(|a, b| b.ops().unwrap_or(-1.0).total_cmp(&a.ops().unwrap_or(-1.0)));
        rows
    }

    /// `first` against `second` by the one rule: paired when both ran in the cell's rounds.
    pub fn judge(&self, first: &Row, second: &Row) -> Judgement {
        let key = (first as *const Row, second as *const Row);
        if let Some(judged) = self.judged.borrow().get(&key) {
            return judged.clone();
        }
        let judged = verdict::judge(first, self.noise, second, self.noise);
        self.judged.borrow_mut().insert(key, judged.clone());
        judged
    }

    /// The fastest client of `kind`, or of any kind when `None`; never a floor. The highest
    /// throughput, unless the paired rule says another row is faster than it: a row's ops/s is
    /// the median of its own blocks, the paired ratio the median of the rounds' ratios, and the
    /// verdict stands on the second.
    pub fn best(&self, kind: Option<Kind>) -> Option<&'a Row> {
        let candidates: Vec<&'a Row> = (self.by_speed().into_iter())
            .filter(|r| r.ops().is_some() && is_leader_kind(r, kind))
            .collect();
        let mut best = *candidates.first()?;
        // Each step moves to a row the rule calls faster; a cycle cannot last longer than the
        // rows, and stops on the last one reached.
        for _ in 0..candidates.len() {
            let Some(faster) = (candidates.iter().copied())
                .filter(|row| !std::ptr::eq(*row, best))
                .find(|row| self.judge(row, best).verdict == Verdict::FirstFaster)
            else {
                break;
            };
            best = faster;
        }
        Some(best)
    }

    /// The row of a client, if the cell has one.
    pub fn client(&self, name: &str) -> Option<&'a Row> {
        self.rows.iter().copied().find(|r| r.client == name)
    }

    /// The row against the fastest client of the cell: paired ratio and verdict where both ran in
    /// the cell's rounds.
    pub fn against_fastest(&self, row: &Row) -> Option<Judgement> {
        Some(self.judge(row, self.fastest?))
    }

    /// The row against the baseline tool in the same cell (redis-benchmark or memaslap).
    pub fn against_baseline(&self, row: &Row) -> Option<Judgement> {
        Some(self.judge(row, self.baseline?))
    }

    /// The rows a "fastest" sentence must name: the fastest client of `kind` (any kind when
    /// `None`; floors excluded) and every other that cannot be told apart from it in this run.
    pub fn leaders(&self, kind: Option<Kind>) -> Vec<&'a Row> {
        let Some(best) = self.best(kind) else {
            return Vec::new();
        };
        let mut leaders = vec![best];
        leaders.extend(self.by_speed().into_iter().filter(|row| {
            is_leader_kind(row, kind)
                && !std::ptr::eq(*row, best)
                && row.ops().is_some()
                // This direction is the one "× fastest" quotes: judged once for both.
                && !self.judge(row, best).is_decided()
        }));
        leaders
    }

    /// Time per operation as a multiple of the loopback floor's (`floor ops / ops`).
    pub fn time_over_floor(&self, row: &Row) -> Option<f64> {
        Some(self.floor? / row.ops()?)
    }

    /// The cell's A/A figure, for people: `A/A 0.4 %`, `A/A not measured: prior 1 %`, or that
    /// the cell had no paired rounds.
    pub fn aa_text(&self) -> String {
        match self.reference {
            Some(reference) => paired::aa_text(reference),
            None => "no paired rounds".to_string(),
        }
    }

    /// The cell's A/A ratio with its interval and what it means, for a note under its table.
    pub fn aa_note(&self) -> String {
        let Some(reference) = self.reference else {
            return "No paired rounds in this cell: its rows were timed apart, and are compared \
                    by the older rule (disjoint intervals beyond the run-to-run spread)."
                .to_string();
        };
        let rounds = reference.round_ops_per_sec.len();
        let aa = match reference.aa_ratio {
            Some(aa) => format!(
                "A/A: {} timed twice in the same rounds, {} ({}); a difference inside it is not \
                 called a difference",
                reference.client,
                paired::paired_text(&aa),
                paired::aa_text(reference)
            ),
            None => format!(
                "{}: no A/A check in this cell, so a difference must exceed the prior A/A \
                 deviation",
                paired::aa_text(reference)
            ),
        };
        format!(
            "Paired over {rounds} rounds; × {} is each row's throughput over the reference's, the \
             median of the rounds' ratios with its 95 % bootstrap interval. {aa}.",
            reference.client
        )
    }

    /// A row's paired ratio to the cell's reference: `0.94× (0.92–0.96×)`, `reference` on the
    /// reference's own row, `–` for a row outside the rounds.
    pub fn reference_ratio_text(&self, row: &Row) -> String {
        match (row.ratio_to_reference, self.reference) {
            (Some(paired), _) => paired::paired_text(&paired),
            (None, Some(reference)) if std::ptr::eq(row, reference) => "reference".to_string(),
            _ => "–".to_string(),
        }
    }

    /// What the paired rule says of a row against the reference: `faster`, `slower`, `within A/A`
    /// (or its interval includes 1), `–` outside the rounds.
    pub fn reference_verdict(&self, row: &Row) -> String {
        let (Some(paired), Some(reference)) = (row.ratio_to_reference, self.reference) else {
            return "–".to_string();
        };
        let (threshold, measured) = verdict::cell_threshold(reference);
        match verdict::decide(&paired, threshold, measured) {
            Verdict::FirstFaster => "faster".to_string(),
            Verdict::SecondFaster => "slower".to_string(),
            Verdict::Indistinguishable(_) => "not separated".to_string(),
            Verdict::Unknown(_) => "unknown".to_string(),
        }
    }

    /// A row's throughput over the baseline tool's in this cell, with the ratio's interval:
    /// `1.32× (1.26–1.37×)` paired, `… timed apart)` when the tool was not in the rounds; the
    /// tool's own row (or a cell without it) gets the bare ratio.
    pub fn baseline_ratio_text(&self, row: Option<&Row>) -> String {
        let Some(row) = row else {
            return "–".to_string();
        };
        match self.baseline {
            Some(baseline) if std::ptr::eq(row, baseline) => paired::ratio(1.0),
            Some(_) => {
                (self.against_baseline(row)).map_or("–".to_string(), |j| paired::quote(&j))
            }
            None => "–".to_string(),
        }
    }

    /// The row's throughput over the fastest client's, quoted as [`Cell::baseline_ratio_text`].
    pub fn fastest_ratio_text(&self, row: &Row) -> String {
        match self.fastest {
            Some(fastest) if std::ptr::eq(row, fastest) => paired::ratio(1.0),
            Some(_) => (self.against_fastest(row)).map_or("–".to_string(), |j| paired::quote(&j)),
            None => "–".to_string(),
        }
    }
}

/// Whether `row` may be named fastest among clients of `kind` (any when `None`): floors never are.
fn is_leader_kind(row: &Row, kind: Option<Kind>) -> bool {
    !row.is_floor() && kind.is_none_or(|k| row.kind == k)
}

/// `3 B`, `3 B · 256 callers`, `depth 1k · 3 B`, `100 keys · 2 KiB`, `counter`.
fn variant_title(op: Op, pipeline: u64, value_size: u64, callers: u32) -> String {
    let size = match op {
        Op::Incr => "counter".to_string(),
        _ => format::size(value_size),
    };
    let items = match op {
        Op::GetMany | Op::GetManyPipelined => "keys",
        Op::Hash => "fields",
        Op::TransactionPlain | Op::TransactionMulti | Op::TransactionPipeline => "SETs",
        Op::Get | Op::GetMiss | Op::Set | Op::SetEx | Op::Incr => "",
        Op::PipelineSet | Op::PipelineSetDistinct => "",
    };
    match (pipeline, callers) {
        (1, 1) => size,
        (1, c) => format!("{size} · {c} callers"),
        _ if items.is_empty() => format!("depth {} · {size}", format::depth(pipeline)),
        _ => format!("{pipeline} {items} · {size}"),
    }
}

/// The top of the highest bar or error bar among `rows`: a shared axis.
fn scale_max<'r>(rows: impl IntoIterator<Item = &'r &'r Row>) -> f64 {
    (rows.into_iter())
        .filter_map(|row| match row.ops_interval() {
            Some((_, high)) => Some(high.max(row.ops()?)),
            None => row.ops(),
        })
        .fold(0.0, f64::max)
}

impl<'a> DepthChart<'a> {
    fn new(results: &'a Results) -> Option<DepthChart<'a>> {
        let rows: Vec<&Row> = (results.rows.iter())
            .filter(|r| r.op == Op::PipelineSet)
            .collect();
        if rows.is_empty() {
            return None;
        }
        let depths: BTreeSet<u64> = rows.iter().map(|r| r.pipeline).collect();
        let series: BTreeSet<(Backend, Transport, String)> = (rows.iter())
            .map(|r| (r.backend, r.transport, series_name(r)))
            .collect();
        let mut clients: BTreeMap<(Kind, String), DepthClient> = BTreeMap::new();
        for row in &rows {
            let client =
                (clients.entry((row.kind, row.client.clone()))).or_insert_with(|| DepthClient {
                    client: row.client.clone(),
                    kind: row.kind,
                    rows: BTreeMap::new(),
                });
            client.rows.insert((series_name(row), row.pipeline), row);
        }
        Some(DepthChart {
            depths: depths.into_iter().collect(),
            series: series.into_iter().map(|(_, _, name)| name).collect(),
            clients: clients.into_values().collect(),
            scale_max: scale_max(&rows),
        })
    }
}

impl<'a> Callers<'a> {
    /// Every operation and size with cells of several callers: per backend and transport, the
    /// clients measured with several callers (floors have no many-caller form), with their rows
    /// at every C, one caller included.
    fn new(results: &'a Results) -> Vec<Callers<'a>> {
        let rows = || {
            (results.rows.iter())
                .filter(|r| r.pipeline == 1 && !r.is_floor() && r.offered_rate.is_none())
        };
        let line = |r: &'a Row| (r.op, r.value_size, r.backend, r.transport, &*r.client);
        let many: BTreeSet<_> = (rows().filter(|r| r.concurrency > 1 && r.ops().is_some()))
            .map(line)
            .collect();
        let names: BTreeSet<(Backend, &str)> = many.iter().map(|l| (l.2, l.4)).collect();
        let place = |b, client| names.range(..(b, client)).filter(|n| n.0 == b).count();
        type Lines<'a> = BTreeMap<(Kind, &'a str), BTreeMap<u32, &'a Row>>;
        let mut blocks: BTreeMap<(Op, u64), BTreeMap<(Backend, Transport), Lines>> =
            BTreeMap::new();
        for row in rows().filter(|r| many.contains(&line(r))) {
            let block = blocks.entry((row.op, row.value_size)).or_default();
            let lines = block.entry((row.backend, row.transport)).or_default();
            // A row listed twice: its first occurrence counts, as in comparisons.
            let by_callers = lines.entry((row.kind, &row.client)).or_default();
            by_callers.entry(row.concurrency).or_insert(row);
        }
        (blocks.into_iter())
            .map(|((op, value_size), panels)| Callers {
                op,
                value_size,
                levels: (panels.values().flat_map(|lines| lines.values()))
                    .flat_map(|rows| rows.keys().copied())
                    .collect(),
                panels: (panels.into_iter())
                    .map(|((backend, transport), lines)| CallersPanel {
                        backend,
                        transport,
                        lines: (lines.into_iter())
                            .map(|((kind, client), rows)| CallersLine {
                                client,
                                kind,
                                index: place(backend, client),
                                rows,
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect()
    }
}

/// `backend/transport`, the depth chart's series name.
pub fn series_name(row: &Row) -> String {
    format!("{}/{}", row.backend, row.transport)
}

/// The run id: from results.json, else the folder's name.
pub fn run_id(results: &Results, dir: &Path) -> String {
    if !results.run.id.is_empty() {
        return results.run.id.clone();
    }
    dir.file_name()
        .map_or_else(|| "run".to_string(), |n| n.to_string_lossy().into_owned())
}

/// The run-level noise figure, for people: what rows timed apart are read against.
pub fn noise_text(results: &Results) -> String {
    match results.noise() {
        Some(noise) => format!(
            "median spread {} over {} rows measured in {} runs (largest {}, {}); rows timed \
             apart (different cells) are called different only beyond it",
            verdict::percent(noise.median_spread),
            noise.rows,
            results.run.repeat,
            verdict::percent(noise.max_spread),
            noise.largest_at
        ),
        None => "not measured (REPEAT=1): rows timed apart (different cells) are not ranked; \
                 rows of one cell are judged by their paired rounds"
            .to_string(),
    }
}

/// Several leaders: `inline, raw-tcp (indistinguishable in this run)`; one: its name.
pub fn leader_names(leaders: &[&Row]) -> String {
    let names: Vec<&str> = leaders.iter().map(|r| r.client.as_str()).collect();
    match names.as_slice() {
        [] => "–".to_string(),
        [one] => one.to_string(),
        _ => format!("{} (indistinguishable in this run)", names.join(", ")),
    }
}

/// `failed`, `unsupported`, or `not timed` (an ok row without a throughput).
pub fn status_word(row: &Row) -> &str {
    match row.status {
        Status::Ok => "not timed",
        status => status.as_str(),
    }
}

/// The style class of a row without a throughput: `failed` or `unsupported` (which also stands
/// for "not timed": nothing went wrong).
pub fn status_class(row: &Row) -> &'static str {
    match row.status {
        Status::Unsupported | Status::Ok => "unsupported",
        Status::Failed => "failed",
    }
}

/// The run's settings and machine, a (name, value) pair a line; empty values included.
pub fn environment(results: &Results) -> Vec<(&'static str, String)> {
    let run = &results.run;
    let mut rows = vec![
        ("run id", run.id.clone()),
        ("mode", run.mode.to_string()),
        ("started", run.started_at.clone()),
        ("finished", run.finished_at.clone().unwrap_or_default()),
        ("duration", format::run_duration(run.duration_s)),
        ("git sha", run.git_sha.clone()),
        (
            "machine",
            format!("{}, {} logical CPUs", run.cpu_model, run.cores),
        ),
        ("kernel", run.kernel.clone()),
        ("TCP congestion control", run.describe_congestion_control()),
        ("rustc", run.rustc.clone()),
        ("placement", run.describe_placement()),
        ("method", run.method.clone()),
        (
            "instructions counted by",
            run.valgrind.clone().unwrap_or_else(|| {
                "nothing: instructions per operation not counted in this run (the notes say why)"
                    .to_string()
            }),
        ),
        ("A/A check", paired::aa_summary_text(results)),
        ("filters", run.filters.clone()),
        (
            "repeated runs",
            format!(
                "REPEAT={} (each repeated cell ran that many times, interleaved, against freshly \
                 started servers); clients in a shuffled order per cell, seed {}",
                run.repeat, run.order_seed
            ),
        ),
        ("run-to-run noise", noise_text(results)),
    ];
    for (backend, server) in [
        ("redis", &run.servers.redis),
        ("memcached", &run.servers.memcached),
    ] {
        if let Some(floor) = &server.network_floor {
            rows.push(("network floor", network_floor_text(backend, floor)));
        }
    }
    rows.extend(run.notes.iter().map(|note| ("note", note.clone())));
    rows
}

/// `redis at 192.0.2.7:6379: PING round trip median 412 µs, p99 1.2 ms (10,000 calls after 200
/// untimed)`.
fn network_floor_text(backend: &str, floor: &kvbench_results::NetworkFloor) -> String {
    format!(
        "{backend} at {}: {} round trip median {}, p99 {} ({} calls after {} untimed)",
        floor.address,
        floor.command,
        format::duration_ns(floor.median_ns as f64),
        format::duration_ns(floor.p99_ns as f64),
        format::grouped(floor.calls as f64),
        floor.warm_up
    )
}

/// What the network floor is, for a run with a server on another host (empty otherwise): the
/// headline's floor column and each cell's `time × floor` of that server read against it.
pub fn network_floor_words(results: &Results) -> String {
    let servers = &results.run.servers;
    let remote: Vec<&str> = [("Redis", &servers.redis), ("memcached", &servers.memcached)]
        .into_iter()
        .filter(|(_, server)| server.remote)
        .map(|(name, _)| name)
        .collect();
    if remote.is_empty() {
        return String::new();
    }
    format!(
        "{} on another host: in {} cells the floor is the network floor (row {}) instead, the \
         round trip of the server's smallest command (Redis PING, memcached version) over a raw \
         connection to that host, timed call by call; no client can answer faster than the \
         network between, so time × floor there reads against the network, not loopback.",
        match remote.as_slice() {
            [one] => format!("{one} is"),
            _ => "Both servers are".to_string(),
        },
        match remote.as_slice() {
            [_] => "its",
            _ => "their",
        },
        kvbench_results::NETWORK_FLOOR
    )
}

/// Why a measured row has no counted instructions, for a tooltip or a sentence: a baseline tool
/// or floor is not a client of the contract, a pipeline deeper than 100,000 is not counted, and
/// otherwise the run did not count it (its notes say why).
pub fn not_counted_reason(row: &Row) -> &'static str {
    if row.kind == Kind::Baseline {
        "not counted: a baseline tool or floor is not a client of the contract; only clients run \
         under valgrind"
    } else if row.pipeline > 100_000 {
        "not counted: pipelines deeper than 100,000 are not run under valgrind"
    } else {
        "not counted in this run (the run's notes say why)"
    }
}

/// A counted row's split by owner, for a tooltip: `N calls per caller in each phase; ours 925,
/// libc 192, …`.
pub fn instructions_title(counted: &kvbench_results::Instructions) -> String {
    let owners: Vec<String> = (counted.owners.iter())
        .map(|share| format!("{} {}", share.name, format::grouped(share.per_op)))
        .collect();
    let mut title = format!(
        "user-space instructions per operation under valgrind, {} calls per caller in each phase",
        format::grouped(counted.calls as f64)
    );
    if !owners.is_empty() {
        title += &format!("; by owner: {}", owners.join(", "));
    }
    title
}

/// What a floor row is, in words, for a note under its cell's table (empty for other rows; the
/// loopback floor is explained with the headline).
pub fn floor_note(row: &Row) -> &'static str {
    if row.is_floor() && row.client == kvbench_results::NETWORK_FLOOR {
        "the network floor: the round trip of the server's smallest command (PING, version) over a \
         raw connection to the remote host, doing no work of the cell; the least a request to \
         that host can take"
    } else {
        ""
    }
}
