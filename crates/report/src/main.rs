//! `kvbench-report`: render a run's report, compare two runs, check a rendered report, or
//! regenerate the lessons from a run.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

/// Reports for kvbench runs (reads `<run-dir>/results.json`).
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write <run-dir>/index.html and <run-dir>/summary.md.
    Render {
        /// Run folder, for example reports/latest.
        run_dir: PathBuf,
    },
    /// Print per-row throughput ratios B/A and write them as HTML.
    Compare {
        /// Run folder A (the reference).
        a: PathBuf,
        /// Run folder B.
        b: PathBuf,
        /// Where to write the HTML page (default: <B>/compare-<A-id>.html).
        #[arg(long)]
        html: Option<PathBuf>,
    },
    /// Print each paired row's ratio to its cell's reference in every run, and max/min across
    /// them (`make reproduce`).
    Spread {
        /// Run folders of the same cells, at least two.
        #[arg(num_args = 2.., required = true)]
        runs: Vec<PathBuf>,
    },
    /// Rewrite the tour's code links (docs/tour.md) from the `// ANCHOR:` markers (`make tour`).
    Tour {
        /// Repository root (default: found around the current folder).
        #[arg(long)]
        root: Option<PathBuf>,
    },
    /// Check a rendered report: a chart per cell, no dead link, well-formed HTML.
    Check {
        /// Run folder, for example reports/latest.
        run_dir: PathBuf,
    },
    /// Regenerate the lessons from a run (`make lessons`): the generated blocks of
    /// docs/lessons.md, of each client crate's README and of README.md, <run-dir>/lessons.md,
    /// and <run-dir>/index.html.
    Lessons {
        /// Run folder, for example reports/reference.
        run_dir: PathBuf,
        /// Split-placement run folder for lesson 9 (default: <run-dir>/split, if it exists).
        #[arg(long)]
        split: Option<PathBuf>,
        /// Repository root (default: found around <run-dir>).
        #[arg(long)]
        root: Option<PathBuf>,
    },
}

fn main() -> Result<ExitCode> {
    match Cli::parse().command {
        Command::Render { run_dir } => {
            kvbench_report::render_run(&run_dir)
                .with_context(|| format!("rendering {}", run_dir.display()))?;
            println!(
                "wrote {} and {}",
                run_dir.join(kvbench_report::INDEX_FILE).display(),
                run_dir.join(kvbench_report::SUMMARY_FILE).display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Compare { a, b, html } => {
            let comparison = kvbench_report::compare_runs(&a, &b)
                .with_context(|| format!("comparing {} and {}", a.display(), b.display()))?;
            print!("{}", comparison.text());
            let path = html.unwrap_or_else(|| comparison.default_html_path(&b));
            fs::write(&path, comparison.html())
                .with_context(|| format!("writing {}", path.display()))?;
            println!("wrote {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Spread { runs } => {
            let dirs: Vec<&Path> = runs.iter().map(PathBuf::as_path).collect();
            let spread = kvbench_report::spread::spread_runs(&dirs)
                .context("reading the runs' paired ratios")?;
            print!("{}", spread.text());
            Ok(ExitCode::SUCCESS)
        }
        Command::Lessons {
            run_dir,
            split,
            root,
        } => {
            let written =
                kvbench_report::lessons::generate(&run_dir, split.as_deref(), root.as_deref())
                    .with_context(|| {
                        format!("generating the lessons from {}", run_dir.display())
                    })?;
            for path in &written {
                println!("wrote {}", path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Tour { root } => {
            let root = match root {
                Some(root) => root,
                None => kvbench_report::lessons::source::find_root(Path::new("."))
                    .context("no kvbench source tree around the current folder: pass --root")?,
            };
            let written = kvbench_report::lessons::tour::generate(&root)
                .with_context(|| format!("rendering the tour's links under {}", root.display()))?;
            println!("wrote {}", written.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { run_dir } => {
            let report = kvbench_report::check::check_run_dir(&run_dir)
                .with_context(|| format!("checking {}", run_dir.display()))?;
            for problem in &report.problems {
                eprintln!("check: {problem}");
            }
            println!(
                "check {}: {} charts, {} pages, {} local links resolved, {} network links in \
                 criterion's pages (tolerated), {} problems",
                run_dir.display(),
                report.charts,
                report.pages,
                report.links,
                report.external_links_in_criterion_pages,
                report.problems.len()
            );
            Ok(if report.is_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}
