//! The benchmark matrix as a plain binary: the same run as `cargo bench --bench matrix`, for
//! the tests that drive a whole run from outside (faults, external servers) and for anyone who
//! wants the matrix without cargo. Takes criterion's arguments (`--test`, `--noplot`, filters).

use kvbench_bench_suite::costs::CountingAllocator;

/// Counts allocations for the cost pass; passes everything to the system allocator.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn main() -> std::process::ExitCode {
    kvbench_bench_suite::runner::main()
}
