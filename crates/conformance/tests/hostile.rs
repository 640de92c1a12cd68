//! Hostile servers: every client against a scripted fake server that answers a `get` with bytes
//! no honest server sends — a reply cut short, a wrong type byte, an absurd or negative length, a
//! missing CRLF, a connection closed mid-value, a reply dripped a byte at a time, arrays nested
//! a hundred thousand deep, a memcached `VALUE` whose byte count disagrees with its data. A
//! hand-written memcached client meets the cases of the dialect it speaks (text or meta, found by
//! the command it sends, not by its name); the meta cases include quiet `set_many` batches, among
//! them one answered with a single failure in the middle, which the client must report with that
//! item's key, leaving nothing unread for the next call.
//!
//! A client that implements an optional operation also meets the cases of its replies: an
//! `MGET` answered with an array of the wrong length or of an absurd one, an `EXEC` answered with
//! nil, `-EXECABORT`, an array of the wrong length or after a missing `QUEUED`, an `INCR`
//! answered with a bulk string; a memcached `incr` answered with a value, a `get k1 k2` with a
//! value for a key not asked, quiet meta gets with a hit for an opaque not asked.
//!
//! **Hand-written clients are judged.** Each case is a test named `client/transport/case`. The
//! client must return the expected typed error (`Protocol`, `Timeout` or `Io`) within its read
//! timeout plus a margin (a hang guard, not a performance claim), must not panic, must not
//! allocate more than the case allows (a per-thread peak from a counting allocator), and must
//! treat the connection as broken afterwards: the next call fails *and the fake server receives
//! no byte after its answer* (counted on the server side). An error reply that leaves the stream
//! in step (`Server`: a failed batch item, an aborted transaction) must leave the connection
//! usable instead: the next call reads its own reply. A transaction is answered command by
//! command; where the script leaves a `QUEUED` out, a client that waits for each reply times out
//! before its `EXEC`, one that sends them all reads `EXEC`'s reply in the wrong place.
//!
//! **Library clients are held to what they do.** The same cases run against every library spec
//! (redis-rs, redis-rs/async, fred, fred/pool and the memcache variants; binary-protocol variants
//! get binary-protocol cases), each in a child process: a library may abort the process (an
//! allocation it cannot make, a stack overflow). The child runs the call on a thread with an 8 MiB
//! stack and with its address space limited to [`CHILD_ADDRESS_SPACE`], so that what a hostile
//! length does to a library is the same on every machine. Each trial asserts the first call's
//! outcome — a value, a typed error, a panic or the death of the process — against what that
//! library at its pinned version is known to do, as its spec declares: `hostile_outcomes` for
//! ordinary outcomes, `known_defects` for the library's faults. A change in a library's behaviour
//! fails its trial. What each library did is printed as a table at the end.

mod fake;
mod peak_alloc;

use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use fake::{Answer, Behaviour, Dialect, FakeServer, Report, binary_response};
use kvbench_core::{Backend, ClientSpec, Error, Kind, KnownDefect, Operation, Options, Transport};
use libtest_mimic::{Arguments, Failed, Trial};

#[global_allocator]
static ALLOCATOR: peak_alloc::PeakAlloc = peak_alloc::PeakAlloc;

/// Every timeout the clients get. Short, so that the whole file runs in seconds.
const TIMEOUT: Duration = Duration::from_millis(300);

/// How far past its timeout a call may return before it counts as hung. Generous: two cores
/// shared with other test binaries can stall a thread for a while.
const MARGIN: Duration = Duration::from_millis(1500);

/// How often the drip case sends its next byte: more often than the read timeout, so only a
/// client that bounds the whole reply (not each read) stops it in time.
const DRIP_EVERY: Duration = Duration::from_millis(100);

/// Allocation a hand-written client may make during one hostile call when the case claims
/// nothing large: the replies here are at most a few hundred KiB.
const SMALL_ALLOC_LIMIT: usize = 1 << 20;

/// A library case that has not finished by then has hung.
const LIBRARY_DEADLINE: Duration = Duration::from_secs(30);

/// A hand-written case that has not finished by then has hung (its own checks are tighter).
const CASE_DEADLINE: Duration = Duration::from_secs(30);

/// How many cases run at once by default.
const PARALLEL_CASES: usize = 8;

/// Address space a library child may use: room for the largest value the hand-written memcached
/// client accepts (1 GiB, which a library may reserve too), not for the 4 GiB a 32-bit length
/// can claim. Without a limit, whether reserving that much succeeds depends on the machine.
const CHILD_ADDRESS_SPACE: u64 = 3 << 30;

/// Stack of the thread a library child calls on, whatever `ulimit -s` or `RUST_MIN_STACK` say:
/// how deep a recursive parser can go before it overflows must not depend on the machine.
const CHILD_STACK: usize = 8 << 20;

/// Set in a child process: run this one library case and print its row.
const CHILD_VAR: &str = "KVBENCH_HOSTILE_CHILD";

/// The key every case asks for; memcached fakes echo it in their `VALUE` lines.
const KEY: &[u8] = b"k";

/// The keys of a quiet-batch case, in order: the fake names item `i` by its opaque `O<i>`.
const BATCH_KEYS: [&str; 5] = ["item-0", "item-1", "item-2", "item-3", "item-4"];

/// The keys a multi-key case reads, and a transaction case stores (two SETs).
const MULTI_KEYS: [&[u8]; 2] = [KEY, b"k2"];

/// The error a hand-written client must return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Protocol,
    Timeout,
    Io,
    /// `Protocol` or `Timeout`: a client may see the fault at once (a length it can check) or
    /// wait for bytes that never come; either way the connection is broken.
    ProtocolOrTimeout,
    /// `Server`; the connection stays usable.
    Server,
    /// `Server`, naming this batch key and no other; the connection stays usable.
    ServerErrorFor(&'static str),
}

impl Expect {
    /// True if the error leaves the connection usable: the next call gets its own reply.
    fn in_step(self) -> bool {
        matches!(self, Expect::Server | Expect::ServerErrorFor(_))
    }
}

/// The first call a case makes (the second is always a `get`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Get,
    /// `set_many` of [`BATCH_KEYS`]: a quiet batch, in the meta protocol.
    QuietBatch,
    /// `incr` of [`KEY`].
    Incr,
    /// `get_many` of [`MULTI_KEYS`].
    GetMany,
    /// `get_many_pipelined` of [`MULTI_KEYS`] (every client has it).
    GetManyPipelined,
    /// `transaction` storing `v` at each of [`MULTI_KEYS`].
    Transaction,
}

/// What a call that succeeded returned.
enum Returned {
    /// A `get`'s value; a batch that succeeds reads as `None`, having no value to return.
    Value(Option<Vec<u8>>),
    /// Any other call's result, as the outcome shows it: `Ok(42)`, `Ok([Some(1 byte), None])`.
    Shown(String),
}

impl Returned {
    fn values(values: Vec<Option<Vec<u8>>>) -> Returned {
        let values: Vec<String> = values.iter().map(Outcome::value).collect();
        Returned::Shown(format!("Ok([{}])", values.join(", ")))
    }
}

impl Call {
    /// The optional operation it calls: only clients that declare it meet the case.
    fn operation(self) -> Option<Operation> {
        match self {
            Call::Get | Call::QuietBatch | Call::GetManyPipelined => None,
            Call::Incr => Some(Operation::Incr),
            Call::GetMany => Some(Operation::GetMany),
            Call::Transaction => Some(Operation::Transaction),
        }
    }

    fn run(self, client: &mut dyn kvbench_core::Client) -> kvbench_core::Result<Returned> {
        match self {
            Call::Get => client.get(KEY).map(Returned::Value),
            Call::QuietBatch => {
                let items: Vec<(&[u8], &[u8])> = BATCH_KEYS
                    .iter()
                    .map(|key| (key.as_bytes(), &b"v"[..]))
                    .collect();
                client.set_many(&items).map(|()| Returned::Value(None))
            }
            Call::Incr => (client.incr(KEY)).map(|n| Returned::Shown(format!("Ok({n})"))),
            Call::GetMany => client.get_many(&MULTI_KEYS).map(Returned::values),
            Call::GetManyPipelined => client.get_many_pipelined(&MULTI_KEYS).map(Returned::values),
            Call::Transaction => {
                let items = MULTI_KEYS.map(|key| (key, &b"v"[..]));
                client
                    .transaction(&items)
                    .map(|()| Returned::Shown("Ok(())".into()))
            }
        }
    }
}

struct Case {
    name: &'static str,
    dialect: Dialect,
    answer: Answer,
    call: Call,
    /// `None` for cases only library clients meet (the binary protocol).
    expect: Option<Expect>,
    /// Most bytes a hand-written client may allocate during the call.
    alloc_limit: usize,
    /// The script leaves a request unanswered on the way to the one it answers: a client that
    /// waits for each reply before its next command times out there, and never sends the
    /// request the script answers.
    may_stop_short: bool,
}

fn case(name: &'static str, dialect: Dialect, expect: Expect, answer: Answer) -> Case {
    Case {
        name,
        dialect,
        answer,
        call: Call::Get,
        expect: Some(expect),
        alloc_limit: SMALL_ALLOC_LIMIT,
        may_stop_short: false,
    }
}

/// A case whose first call is `call`.
fn calling(
    call: Call,
    name: &'static str,
    dialect: Dialect,
    expect: Expect,
    answer: Answer,
) -> Case {
    Case {
        call,
        ..case(name, dialect, expect, answer)
    }
}

/// A transaction of [`MULTI_KEYS`] answered command by command: `MULTI` with `+OK`, each SET
/// with its entry of `queued` (empty: no reply), then `EXEC` with `exec`.
fn transaction_answer(queued: [&[u8]; 2], exec: Answer) -> Answer {
    let then = |reply: &[u8], next| Answer::Then {
        reply: reply.to_vec(),
        next: Box::new(next),
    };
    let sets = (queued.into_iter().rev()).fold(exec, |next, reply| then(reply, next));
    then(b"+OK\r\n", sets)
}

/// `exec` in answer to `EXEC`, then a miss in answer to the next call's GET: for a reply that
/// leaves the connection usable.
fn exec_then_miss(exec: &[u8]) -> Answer {
    let queued: &[u8] = b"+QUEUED\r\n";
    let exec = Answer::Then {
        reply: exec.to_vec(),
        next: Box::new(silence(b"$-1\r\n")),
    };
    transaction_answer([queued, queued], exec)
}

fn silence(bytes: impl AsRef<[u8]>) -> Answer {
    Answer::ThenSilence(bytes.as_ref().to_vec())
}

fn close(bytes: &[u8]) -> Answer {
    Answer::ThenClose(bytes.to_vec())
}

fn drip(bytes: &[u8]) -> Answer {
    Answer::Drip {
        bytes: bytes.to_vec(),
        every: DRIP_EVERY,
    }
}

fn redis_cases() -> Vec<Case> {
    use Dialect::Resp;
    use Expect::*;
    // *1\r\n*1\r\n... a hundred thousand deep: a recursive parser without a limit overflows its stack.
    let nested = [b"*1\r\n".repeat(100_000), b":1\r\n".to_vec()].concat();
    let endless_line = [&b"+"[..], &vec![b'a'; 100 * 1024]].concat();
    let largest_bulk = format!("${}\r\nhello", kvbench_resp::MAX_BULK_LEN);
    let queued: [&[u8]; 2] = [b"+QUEUED\r\n", b"+QUEUED\r\n"];
    vec![
        case(
            "truncated_reply_then_silence",
            Resp,
            Timeout,
            silence(b"$5\r\nhel"),
        ),
        case(
            "wrong_type_byte",
            Resp,
            Protocol,
            silence(b"!5\r\nhello\r\n"),
        ),
        case(
            "reply_of_the_wrong_type",
            Resp,
            Protocol,
            silence(b":1\r\n"),
        ),
        case(
            "absurd_bulk_length",
            Resp,
            Protocol,
            silence(b"$99999999999\r\n"),
        ),
        case(
            "absurd_array_length",
            Resp,
            Protocol,
            silence(b"*4294967296\r\n"),
        ),
        case("negative_bulk_length", Resp, Protocol, silence(b"$-5\r\n")),
        case(
            "missing_crlf_after_bulk",
            Resp,
            Protocol,
            silence(b"$5\r\nhelloXY"),
        ),
        case(
            "bare_lf_in_header",
            Resp,
            Protocol,
            silence(b"$5\nhello\r\n"),
        ),
        case("line_without_end", Resp, Protocol, silence(endless_line)),
        case("closed_mid_bulk", Resp, Io, close(b"$10\r\nhello")),
        case(
            "dripped_past_the_timeout",
            Resp,
            Timeout,
            drip(b"$1\r\nx\r\n"),
        ),
        case("deeply_nested_arrays", Resp, Protocol, silence(nested)),
        // The largest length the decoder allows: the client may reserve that much (it is the
        // cap), but not more, and must still time out when the data never comes.
        Case {
            alloc_limit: 2 * kvbench_resp::MAX_BULK_LEN,
            ..case(
                "largest_allowed_bulk_then_silence",
                Resp,
                Timeout,
                silence(largest_bulk),
            )
        },
        calling(
            Call::Incr,
            "incr_answered_with_a_bulk",
            Resp,
            Protocol,
            silence(b"$2\r\n42\r\n"),
        ),
        calling(
            Call::GetMany,
            "mget_array_too_short",
            Resp,
            Protocol,
            silence(b"*1\r\n$1\r\nx\r\n"),
        ),
        calling(
            Call::GetMany,
            "mget_array_too_long",
            Resp,
            Protocol,
            silence(b"*3\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nz\r\n"),
        ),
        calling(
            Call::GetMany,
            "mget_absurd_array_length",
            Resp,
            Protocol,
            silence(b"*4294967296\r\n"),
        ),
        // The largest count the decoder allows: the client must not reserve room by it.
        calling(
            Call::GetMany,
            "mget_largest_allowed_array_then_silence",
            Resp,
            ProtocolOrTimeout,
            silence(format!("*{}\r\n$1\r\nx\r\n", kvbench_resp::MAX_ARRAY_LEN)),
        ),
        calling(
            Call::Transaction,
            "exec_nil",
            Resp,
            Server,
            exec_then_miss(b"*-1\r\n"),
        ),
        calling(
            Call::Transaction,
            "exec_execabort",
            Resp,
            Server,
            exec_then_miss(b"-EXECABORT Transaction discarded because of previous errors.\r\n"),
        ),
        calling(
            Call::Transaction,
            "exec_array_too_short",
            Resp,
            Protocol,
            transaction_answer(queued, silence(b"*1\r\n+OK\r\n")),
        ),
        calling(
            Call::Transaction,
            "exec_array_too_long",
            Resp,
            Protocol,
            transaction_answer(queued, silence(b"*3\r\n+OK\r\n+OK\r\n+OK\r\n")),
        ),
        // The second SET is not answered, and EXEC's reply comes where its QUEUED belongs.
        Case {
            may_stop_short: true,
            ..calling(
                Call::Transaction,
                "exec_after_a_missing_queued",
                Resp,
                ProtocolOrTimeout,
                transaction_answer([queued[0], b""], silence(b"*2\r\n+OK\r\n+OK\r\n")),
            )
        },
    ]
}

fn memcached_text_cases() -> Vec<Case> {
    use Dialect::MemcachedText as Text;
    use Expect::*;
    let endless_line = vec![b'a'; 4 * 1024];
    let largest_value = format!(
        "VALUE k 0 {}\r\nhello",
        kvbench_memcached_reply::MAX_VALUE_LEN
    );
    vec![
        case(
            "truncated_reply_then_silence",
            Text,
            Timeout,
            silence(b"VALUE k 0 5\r\nhel"),
        ),
        case(
            "unknown_status_line",
            Text,
            Protocol,
            silence(b"EXISTS_SOMEHOW\r\n"),
        ),
        case(
            "wrong_type_byte",
            Text,
            Protocol,
            silence(b"$5\r\nhello\r\n"),
        ),
        case(
            "absurd_value_length",
            Text,
            Protocol,
            silence(b"VALUE k 0 99999999999\r\n"),
        ),
        case(
            "negative_value_length",
            Text,
            Protocol,
            silence(b"VALUE k 0 -5\r\n"),
        ),
        case(
            "byte_count_below_the_data",
            Text,
            Protocol,
            silence(b"VALUE k 0 3\r\nhello\r\nEND\r\n"),
        ),
        case(
            "byte_count_above_the_data",
            Text,
            Protocol,
            silence(b"VALUE k 0 8\r\nhello\r\nEND\r\n"),
        ),
        case(
            "value_for_another_key",
            Text,
            Protocol,
            silence(b"VALUE other 0 5\r\nhello\r\nEND\r\n"),
        ),
        case("bare_lf_in_status", Text, Protocol, silence(b"END\n")),
        case("line_without_end", Text, Protocol, silence(endless_line)),
        case(
            "closed_mid_value",
            Text,
            Io,
            close(b"VALUE k 0 10\r\nhello"),
        ),
        case(
            "dripped_past_the_timeout",
            Text,
            Timeout,
            drip(b"VALUE k 0 1\r\nx\r\nEND\r\n"),
        ),
        Case {
            alloc_limit: 2 * kvbench_memcached_reply::MAX_VALUE_LEN,
            ..case(
                "largest_allowed_value_then_silence",
                Text,
                Timeout,
                silence(largest_value),
            )
        },
        calling(
            Call::Incr,
            "incr_answered_with_a_value",
            Text,
            Protocol,
            silence(b"VALUE k 0 2\r\n42\r\nEND\r\n"),
        ),
        calling(
            Call::GetMany,
            "get_many_value_for_a_key_not_asked",
            Text,
            Protocol,
            silence(b"VALUE k 0 1\r\nx\r\nVALUE other 0 1\r\ny\r\nEND\r\n"),
        ),
    ]
}

/// The meta protocol's faults (`mg k v k O0` is answered `VA <size> kk O0\r\n<data>\r\n`), and
/// quiet batches: `ms item-<i> 1 q O<i>` for each of [`BATCH_KEYS`], then `mn`, answered as one.
fn memcached_meta_cases() -> Vec<Case> {
    use Dialect::MemcachedMeta as Meta;
    use Expect::*;
    // What the fake answers `mg k v k O0` with before it falls silent.
    let then_silence: [(&'static str, Expect, &[u8]); 13] = [
        (
            "truncated_reply_then_silence",
            Timeout,
            b"VA 5 kk O0\r\nhel",
        ),
        ("unknown_status_line", Protocol, b"XX O0\r\n"),
        ("wrong_type_byte", Protocol, b"$5\r\nhello\r\n"),
        (
            "text_protocol_reply",
            Protocol,
            b"VALUE k 0 5\r\nhello\r\nEND\r\n",
        ),
        ("absurd_value_length", Protocol, b"VA 99999999999 kk O0\r\n"),
        ("negative_value_length", Protocol, b"VA -5 kk O0\r\n"),
        (
            "byte_count_below_the_data",
            Protocol,
            b"VA 3 kk O0\r\nhello\r\n",
        ),
        (
            "byte_count_above_the_data",
            Protocol,
            b"VA 8 kk O0\r\nhello\r\nEN\r\n",
        ),
        (
            "value_for_another_key",
            Protocol,
            b"VA 5 kother O0\r\nhello\r\n",
        ),
        (
            "reply_for_another_opaque",
            Protocol,
            b"VA 5 kk O9\r\nhello\r\n",
        ),
        ("no_op_reply_to_a_get", Protocol, b"MN\r\n"),
        ("bare_lf_in_status", Protocol, b"EN\n"),
        ("line_without_end", Protocol, &[b'a'; 4 * 1024]),
    ];
    let mut cases: Vec<Case> = (then_silence.into_iter())
        .map(|(name, expect, answer)| case(name, Meta, expect, silence(answer)))
        .collect();
    let largest_value = format!(
        "VA {} kk O0\r\nhello",
        kvbench_memcached_reply::MAX_VALUE_LEN
    );
    cases.push(case(
        "closed_mid_value",
        Meta,
        Io,
        close(b"VA 10 kk O0\r\nhello"),
    ));
    cases.push(case(
        "dripped_past_the_timeout",
        Meta,
        Timeout,
        drip(b"VA 1 kk O0\r\nx\r\n"),
    ));
    cases.push(Case {
        alloc_limit: 2 * kvbench_memcached_reply::MAX_VALUE_LEN,
        ..case(
            "largest_allowed_value_then_silence",
            Meta,
            Timeout,
            silence(largest_value),
        )
    });
    // Quiet batches. The third item was not stored, and the next call, a get, is answered with
    // a miss, which the client reads as its own only if it read the batch's reply up to its MN.
    let failure_in_the_middle = Answer::Then {
        reply: b"NS O2\r\nMN\r\n".to_vec(),
        next: Box::new(silence(b"EN\r\n")),
    };
    let batches = [
        (
            "quiet_batch_failure_in_the_middle",
            ServerErrorFor("item-2"),
            failure_in_the_middle,
        ),
        (
            "quiet_batch_failure_for_no_item",
            Protocol,
            silence(b"NS O9\r\nMN\r\n"),
        ),
        (
            "quiet_batch_success_not_quiet",
            Protocol,
            silence(b"HD O0\r\nMN\r\n"),
        ),
        ("quiet_batch_never_closed", Timeout, silence(b"NS O2\r\n")),
    ];
    cases.extend(batches.into_iter().map(|(name, expect, answer)| Case {
        call: Call::QuietBatch,
        ..case(name, Meta, expect, answer)
    }));
    // Quiet gets (`mg <key> v q O<i>` per key, then `mn`): a hit carries the opaque of the key
    // it answers, here one no key was given.
    cases.push(calling(
        Call::GetManyPipelined,
        "quiet_get_hit_for_an_opaque_not_asked",
        Meta,
        Protocol,
        silence(b"VA 1 O9\r\nx\r\nMN\r\n"),
    ));
    cases
}

/// Binary-protocol faults, for the `memcache` crate's default protocol (no hand-written client
/// speaks it). A GET response: header, 4 bytes of flags (extras), then the value.
fn memcached_binary_cases() -> Vec<Case> {
    const GET: u8 = 0x00;
    let opaque = [0; 4];
    let flags_and_value = [&[0u8; 4][..], b"hello"].concat();
    let valid = binary_response(GET, 4, 0, 9, opaque, &flags_and_value);
    let mut bad_magic = valid.clone();
    bad_magic[0] = 0x00;
    let binary = |name, answer| Case {
        name,
        dialect: Dialect::MemcachedBinary,
        answer,
        call: Call::Get,
        expect: None,
        alloc_limit: 0,
        may_stop_short: false,
    };
    vec![
        binary("truncated_header_then_silence", silence(&valid[..10])),
        binary("bad_magic_byte", silence(&bad_magic)),
        binary(
            "absurd_body_length",
            silence(binary_response(
                GET,
                4,
                0,
                u32::MAX,
                opaque,
                &flags_and_value,
            )),
        ),
        // Four bytes of extras arrive, but the total body length claims none.
        binary(
            "body_shorter_than_its_extras",
            silence(binary_response(GET, 4, 0, 0, opaque, &[0; 4])),
        ),
        binary(
            "unknown_status",
            silence(binary_response(GET, 0, 0x7777, 0, opaque, &[])),
        ),
        binary(
            "closed_mid_body",
            close(&binary_response(GET, 4, 0, 14, opaque, &flags_and_value)),
        ),
        binary("dripped_past_the_timeout", drip(&valid)),
    ]
}

/// The cases a client meets, by the protocol it speaks and the optional operations it declares.
fn cases_for(spec: &ClientSpec) -> Vec<Case> {
    let mut cases = cases_of_protocol(spec);
    cases.retain(|case| case.call.operation().is_none_or(|op| spec.implements(op)));
    cases
}

fn cases_of_protocol(spec: &ClientSpec) -> Vec<Case> {
    match spec.backend {
        Backend::Redis => redis_cases(),
        // A memcached library speaks the binary or the text protocol: its spec says which by the
        // cases it declares outcomes for. A hand-written memcached client speaks text or meta:
        // the command it sends says which.
        Backend::Memcached
            if spec.kind == Kind::Library && declares(spec, &memcached_binary_cases()) =>
        {
            memcached_binary_cases()
        }
        Backend::Memcached if spec.kind == Kind::Library => memcached_text_cases(),
        Backend::Memcached => match fake::memcached_dialect(spec) {
            Dialect::MemcachedMeta => memcached_meta_cases(),
            _ => memcached_text_cases(),
        },
        Backend::RedisCluster => unreachable!("cluster clients are not in kvbench_clients::all()"),
    }
}

/// The spec's known defects met by a hostile-server case; the others name a many-callers case
/// of the conformance kit, which checks them.
fn hostile_defects(spec: &ClientSpec) -> impl Iterator<Item = &'static KnownDefect> {
    (spec.known_defects.iter()).filter(|defect| !is_shared_case(defect.input))
}

fn is_shared_case(name: &str) -> bool {
    kvbench_conformance::SHARED_BEHAVIOURS
        .iter()
        .any(|behaviour| behaviour.name == name)
}

/// True if the spec declares an outcome (ordinary or a known defect) and every one it declares
/// is for one of `cases`.
fn declares(spec: &ClientSpec, cases: &[Case]) -> bool {
    let mut inputs = (spec.hostile_outcomes.iter().map(|ordinary| ordinary.input))
        .chain(hostile_defects(spec).map(|defect| defect.input))
        .peekable();
    inputs.peek().is_some() && inputs.all(|input| cases.iter().any(|case| case.name == input))
}

fn options() -> Options {
    Options {
        connect_timeout: TIMEOUT,
        read_timeout: TIMEOUT,
        write_timeout: TIMEOUT,
    }
}

// ---------------------------------------------------------------------------------------------
// Observing one client on one case
// ---------------------------------------------------------------------------------------------

/// What one call did.
#[derive(Debug)]
enum Outcome {
    Hit(usize),
    Miss,
    /// Another call's success, as shown: `Ok(42)`.
    Returned(String),
    Failed(Error),
    Panicked(String),
}

impl Outcome {
    fn of(result: std::thread::Result<kvbench_core::Result<Returned>>) -> Outcome {
        match result {
            Ok(Ok(Returned::Value(Some(value)))) => Outcome::Hit(value.len()),
            Ok(Ok(Returned::Value(None))) => Outcome::Miss,
            Ok(Ok(Returned::Shown(shown))) => Outcome::Returned(shown),
            Ok(Err(err)) => Outcome::Failed(err),
            Err(panic) => Outcome::Panicked(panic_message(&*panic)),
        }
    }

    /// `Some(5 bytes)`, `None`.
    fn value(value: &Option<Vec<u8>>) -> String {
        match value.as_ref().map(Vec::len) {
            Some(1) => "Some(1 byte)".into(),
            Some(len) => format!("Some({len} bytes)"),
            None => "None".into(),
        }
    }

    /// `Err(Protocol)`, `Ok(Some(5 bytes))`, `panicked: ...`.
    fn short(&self) -> String {
        match self {
            Outcome::Hit(1) => "Ok(Some(1 byte))".into(),
            Outcome::Hit(len) => format!("Ok(Some({len} bytes))"),
            Outcome::Miss => "Ok(None)".into(),
            Outcome::Returned(shown) => shown.clone(),
            Outcome::Failed(err) => format!("Err({})", variant(err)),
            Outcome::Panicked(msg) => format!("panicked: {msg}"),
        }
    }
}

fn variant(err: &Error) -> &'static str {
    match err {
        Error::Connect { .. } => "Connect",
        Error::Io(_) => "Io",
        Error::Timeout(_) => "Timeout",
        Error::Protocol(_) => "Protocol",
        Error::Server(_) => "Server",
        Error::InvalidInput(_) => "InvalidInput",
        Error::Unsupported(_) => "Unsupported",
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}

struct Observation {
    first: Outcome,
    elapsed: Duration,
    /// Bytes this thread allocated on top of what was live before the call, at most.
    peak_growth: usize,
    second: Outcome,
    server: Report,
}

impl Observation {
    fn row(&self) -> String {
        let reuse = match (
            self.server.bytes_after_answer,
            self.server.connections_after_answer,
        ) {
            (0, 0) => "nothing sent after it".to_string(),
            (bytes, 0) => format!("{bytes} bytes sent after it on the same connection"),
            (bytes, reconnects) => format!("{bytes} bytes sent after it, {reconnects} reconnects"),
        };
        format!(
            "{} in {} ms (peak +{}); next call {}; {reuse}",
            self.first.short(),
            self.elapsed.as_millis(),
            peak_alloc::human(self.peak_growth),
            self.second.short(),
        )
    }
}

/// Connects `spec` to a fake that answers its first `get` with the case's answer, makes that
/// call and one more, closes the client and asks the fake what it received.
fn observe(spec: &ClientSpec, transport: Transport, case: &Case) -> Result<Observation, String> {
    let server = FakeServer::start(
        case.dialect,
        transport,
        Behaviour::Hostile(case.answer.clone()),
    );
    let mut client = match catch_unwind(AssertUnwindSafe(|| {
        (spec.connect)(server.endpoint(), &options())
    })) {
        Ok(Ok(client)) => client,
        Ok(Err(err)) => return Err(format!("connect to the fake server: {err}")),
        Err(panic) => return Err(format!("connect panicked: {}", panic_message(&*panic))),
    };
    let live_before = peak_alloc::reset_thread_peak();
    peak_alloc::reset_largest_request();
    let started = Instant::now();
    let first = Outcome::of(catch_unwind(AssertUnwindSafe(|| {
        case.call.run(&mut *client)
    })));
    let elapsed = started.elapsed();
    let peak_growth = peak_alloc::thread_peak().saturating_sub(live_before);
    let second = Outcome::of(catch_unwind(AssertUnwindSafe(|| {
        client.get(KEY).map(Returned::Value)
    })));
    // Closing first lets the fake read to end of stream, so it counts every byte sent.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(client)));
    let server = server.finish();
    if !server.answered && !case.may_stop_short {
        return Err("the fake server never received the request it answers".into());
    }
    Ok(Observation {
        first,
        elapsed,
        peak_growth,
        second,
        server,
    })
}

// ---------------------------------------------------------------------------------------------
// Hand-written clients: judged
// ---------------------------------------------------------------------------------------------

fn judge(spec: &ClientSpec, transport: Transport, case: &Case) -> Result<String, String> {
    let expect = case
        .expect
        .expect("hand-written clients meet only judged cases");
    let seen = observe(spec, transport, case)?;
    let row = seen.row();
    let fail = |what: String| Err(format!("{what}\n  observed: {row}"));
    // A client that waits for each reply timed out before the request the script answers.
    let stopped_short = !seen.server.answered;
    let got_expected = match (&seen.first, expect) {
        (Outcome::Failed(Error::Timeout(_)), _) if stopped_short => true,
        (Outcome::Failed(Error::Protocol(_)), Expect::Protocol)
        | (Outcome::Failed(Error::Timeout(_)), Expect::Timeout)
        | (Outcome::Failed(Error::Io(_)), Expect::Io)
        | (Outcome::Failed(Error::Server(_)), Expect::Server)
        | (Outcome::Failed(Error::Protocol(_) | Error::Timeout(_)), Expect::ProtocolOrTimeout) => {
            true
        }
        // The item's key and no other batch key: the failure is attributed to its item.
        (Outcome::Failed(Error::Server(msg)), Expect::ServerErrorFor(key)) => {
            BATCH_KEYS.iter().all(|k| msg.contains(k) == (*k == key))
        }
        (Outcome::Panicked(msg), _) => return fail(format!("the client panicked: {msg}")),
        _ => false,
    };
    if !got_expected {
        return fail(format!("want Err({expect:?}), got {:?}", seen.first));
    }
    if seen.elapsed > TIMEOUT + MARGIN {
        return fail(format!(
            "took {:?}, more than the {TIMEOUT:?} timeout + {MARGIN:?}",
            seen.elapsed
        ));
    }
    if seen.peak_growth > case.alloc_limit {
        return fail(format!(
            "allocated {} during the call, over the limit of {}",
            peak_alloc::human(seen.peak_growth),
            peak_alloc::human(case.alloc_limit)
        ));
    }
    // An item that failed leaves the stream in step: the next call reads its own reply, the
    // case's miss. Anything else leaves it out of step: the next call fails at once.
    let in_step = expect.in_step();
    match &seen.second {
        Outcome::Miss if in_step => {}
        Outcome::Failed(err) if err.breaks_connection() && !in_step => {}
        other if in_step => return fail(format!("the next call should miss, got {other:?}")),
        other => return fail(format!("the next call should fail at once, got {other:?}")),
    }
    if seen.server.bytes_after_answer != 0 || seen.server.connections != 1 {
        return fail(format!(
            "the connection was used again: the server saw {:?}",
            seen.server
        ));
    }
    // The script answers a transaction's EXEC: a request in its place is another command sent
    // into the transaction (or after the client gave up on it).
    let answered = seen.server.answered_request.as_deref();
    if case.call == Call::Transaction && !in_step && !stopped_short && answered != Some("EXEC") {
        return fail(format!(
            "the script answers EXEC, but it answered {answered:?}"
        ));
    }
    Ok(row)
}

fn run_with_deadline(
    deadline: Duration,
    work: impl FnOnce() -> Result<String, String> + Send + 'static,
) -> Result<String, String> {
    let (done, outcome) = mpsc::channel();
    // Detached on purpose: a hung case is abandoned and reported, not waited for.
    thread::spawn(move || done.send(work()));
    match outcome.recv_timeout(deadline) {
        Ok(result) => result,
        Err(RecvTimeoutError::Timeout) => Err(format!("hung: no result after {deadline:?}")),
        Err(RecvTimeoutError::Disconnected) => Err("the case panicked".into()),
    }
}

// ---------------------------------------------------------------------------------------------
// Library clients: held to their known outcomes, each case in a child process
// ---------------------------------------------------------------------------------------------

/// The outcome a library's first call must have on a case: its known defect for that case, or
/// its ordinary outcome — exactly one of them.
fn expected_library_outcome(spec: &ClientSpec, case: &str) -> Result<&'static str, String> {
    let defect = hostile_defects(spec).find(|defect| defect.input == case);
    let ordinary = spec
        .hostile_outcomes
        .iter()
        .find(|ordinary| ordinary.input == case)
        .map(|ordinary| ordinary.outcome);
    match (defect, ordinary) {
        (Some(defect), None) => Ok(defect.outcome),
        (None, Some(outcome)) => Ok(outcome),
        (Some(_), Some(_)) => Err(format!(
            "{} on {case}: listed both as a known defect and as an ordinary outcome",
            spec.name
        )),
        (None, None) => Err(format!(
            "{} on {case}: no expected outcome recorded (run the case, see what the library \
             does, and record it in its spec: hostile_outcomes, or known_defects for a fault)",
            spec.name
        )),
    }
}

/// True if the outcome is a panic from Rust's overflow checks, which builds without debug
/// assertions (`--release`) turn off: there the library does something else, not pinned here.
fn needs_overflow_checks(outcome: &str) -> bool {
    outcome.starts_with("panicked: attempt to") && outcome.ends_with("with overflow")
}

/// Runs a library case in a child process and checks its first call against the expected
/// outcome. Returns the row for the table.
fn judge_library(spec: &ClientSpec, transport: Transport, case: &Case) -> Result<String, String> {
    let expected = expected_library_outcome(spec, case.name);
    let (outcome, row) = record_library(spec, transport, case)?;
    // With nothing recorded yet, say what to record.
    let expected = expected.map_err(|err| format!("{err}\n  observed: {outcome}: {row}"))?;
    if outcome != expected {
        return Err(format!(
            "want {expected}, got {outcome}\n  observed: {row}\n  (if the library changed, \
             update its expected outcome or its known defects)"
        ));
    }
    Ok(row)
}

/// Every known defect names a case its library meets and the version `Cargo.lock` holds, every
/// declared outcome names a case, and hand-written clients declare neither.
fn check_known_defects() -> Result<(), Failed> {
    let lock_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock");
    let lock = std::fs::read_to_string(lock_path).map_err(|err| format!("{lock_path}: {err}"))?;
    let mut problems = Vec::new();
    let mut listed = 0;
    for spec in kvbench_clients::all() {
        if spec.kind == Kind::HandWritten && !spec.known_defects.is_empty() {
            problems.push(format!(
                "{}: a hand-written client's faults fail the tests",
                spec.name
            ));
        }
        if spec.kind == Kind::HandWritten && !spec.hostile_outcomes.is_empty() {
            problems.push(format!(
                "{}: a hand-written client is held to typed errors, not to declared outcomes",
                spec.name
            ));
        }
        let cases = cases_for(&spec);
        for ordinary in spec.hostile_outcomes {
            if !cases.iter().any(|case| case.name == ordinary.input) {
                problems.push(format!(
                    "{}: no hostile case {:?} for this client",
                    spec.name, ordinary.input
                ));
            }
        }
        for defect in spec.known_defects {
            listed += 1;
            let shared =
                spec.concurrency.connect_shared().is_some() && is_shared_case(defect.input);
            if !shared && !cases.iter().any(|case| case.name == defect.input) {
                problems.push(format!(
                    "{}: no hostile case {:?} for this client",
                    spec.name, defect.input
                ));
            }
            let locked = format!(
                "name = \"{}\"\nversion = \"{}\"\n",
                defect.library, defect.version
            );
            if !lock.contains(&locked) {
                problems.push(format!(
                    "{}: {} {} is not the version in Cargo.lock: check the defect again",
                    spec.name, defect.library, defect.version
                ));
            }
        }
    }
    if listed == 0 {
        problems.push("no known defect is listed at all".into());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n").into())
    }
}

/// Lowers this process's address-space limit to [`CHILD_ADDRESS_SPACE`] (or keeps a lower one).
fn limit_address_space() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read or write only the struct passed, and change nothing
    // but this (child) process's own limit.
    let rc = unsafe {
        if libc::getrlimit(libc::RLIMIT_AS, &mut limit) != 0 {
            -1
        } else {
            limit.rlim_max = limit.rlim_max.min(CHILD_ADDRESS_SPACE);
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_AS, &limit)
        }
    };
    assert_eq!(
        rc,
        0,
        "limit the address space: {}",
        std::io::Error::last_os_error()
    );
}

/// In the child: runs one library case and prints its first call's outcome and its row
/// (exit 0), or why it could not run (exit 2). A panic inside the library is caught and
/// recorded, not printed by the hook.
fn child_main(id: &str) -> ExitCode {
    std::panic::set_hook(Box::new(|_| {}));
    limit_address_space();
    let found = id.split_once('\t').and_then(|(client, rest)| {
        let (transport, case) = rest.split_once('\t')?;
        let spec = kvbench_clients::by_name(client)?;
        let transport = *Transport::ALL.iter().find(|t| t.as_str() == transport)?;
        let case = cases_for(&spec).into_iter().find(|c| c.name == case)?;
        Some((spec, transport, case))
    });
    let Some((spec, transport, case)) = found else {
        eprintln!("no such library case: {id:?}");
        return ExitCode::from(2);
    };
    let seen = thread::Builder::new()
        .name("hostile-call".into())
        .stack_size(CHILD_STACK)
        .spawn(move || observe(&spec, transport, &case))
        .map_err(|err| format!("spawn the calling thread: {err}"))
        .and_then(|call| {
            call.join()
                .unwrap_or_else(|panic| Err(format!("panicked: {}", panic_message(&*panic))))
        });
    match seen {
        Ok(seen) => {
            println!("OUTCOME {}", seen.first.short());
            println!(
                "ROW {}; largest allocation request {}",
                seen.row(),
                peak_alloc::human(peak_alloc::largest_request())
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{err}");
            ExitCode::from(2)
        }
    }
}

fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGKILL => "SIGKILL".into(),
        other => format!("signal {other}"),
    }
}

/// In the parent: runs a library case in a child process and returns the first call's outcome
/// and the row. A child killed by a signal (an abort on a failed allocation, a stack overflow)
/// has the outcome `process killed by SIGABRT: <the runtime's last words>`; a child that
/// outlives [`LIBRARY_DEADLINE`] has hung, which is an error.
fn record_library(
    spec: &ClientSpec,
    transport: Transport,
    case: &Case,
) -> Result<(String, String), String> {
    let exe = std::env::current_exe().map_err(|err| format!("current_exe: {err}"))?;
    let id = format!("{}\t{transport}\t{}", spec.name, case.name);
    let mut child = Command::new(exe)
        .env(CHILD_VAR, &id)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("spawn child: {err}"))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|err| format!("wait: {err}"))? {
            break status;
        }
        if started.elapsed() > LIBRARY_DEADLINE {
            // Our own child, killed by its handle.
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("hung: no result after {LIBRARY_DEADLINE:?}"));
        }
        thread::sleep(Duration::from_millis(10));
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut stdout);
    }
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    let line = |prefix: &str| stdout.lines().find_map(|line| line.strip_prefix(prefix));
    if let (Some(outcome), Some(row)) = (line("OUTCOME "), line("ROW ")) {
        return Ok((outcome.to_string(), row.to_string()));
    }
    // The runtime's own words on why it stopped, not the backtrace hint after them.
    let last_words = stderr
        .lines()
        .find(|line| {
            line.contains("memory allocation")
                || line.contains("fatal")
                || line.contains("panicked")
        })
        .or_else(|| stderr.lines().next())
        .unwrap_or("")
        .trim()
        .to_string();
    match std::os::unix::process::ExitStatusExt::signal(&status) {
        Some(signal) => {
            let outcome = format!("process killed by {}: {last_words}", signal_name(signal));
            let row = format!("{outcome} (after {} ms)", started.elapsed().as_millis());
            Ok((outcome, row))
        }
        None => Err(format!("child failed ({status}): {stderr}")),
    }
}

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

static ROWS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

fn main() -> ExitCode {
    if let Ok(id) = std::env::var(CHILD_VAR) {
        return child_main(&id);
    }
    let mut args = Arguments::from_args();
    // The cases spend their time waiting for timeouts and drips, not computing: run more of them
    // at once than there are cores (unless told otherwise).
    args.test_threads.get_or_insert(PARALLEL_CASES);
    let mut trials = Vec::new();
    for spec in kvbench_clients::all() {
        // Libraries are recorded over TCP only: the parsing under test does not depend on the
        // transport, and each case costs a process.
        let transports: Vec<Transport> = match spec.kind {
            Kind::HandWritten => spec.transports.to_vec(),
            Kind::Library => vec![Transport::Tcp],
        };
        for transport in transports {
            for case in cases_for(&spec) {
                let name = format!("{}/{transport}/{}", spec.name, case.name);
                // A panic that only overflow checks cause cannot happen without them.
                let ignored = !cfg!(debug_assertions)
                    && expected_library_outcome(&spec, case.name).is_ok_and(needs_overflow_checks);
                let label = name.clone();
                let trial = Trial::test(name, move || {
                    let row = match spec.kind {
                        Kind::HandWritten => {
                            run_with_deadline(CASE_DEADLINE, move || judge(&spec, transport, &case))
                        }
                        Kind::Library => judge_library(&spec, transport, &case),
                    }
                    .map_err(Failed::from)?;
                    ROWS.lock().unwrap().push((label, row));
                    Ok(())
                });
                trials.push(match spec.kind {
                    Kind::HandWritten => trial,
                    Kind::Library => trial.with_kind("library").with_ignored_flag(ignored),
                });
            }
        }
    }
    trials.push(Trial::test(
        "known_defects/name_hostile_cases_and_locked_versions",
        check_known_defects,
    ));
    let conclusion = libtest_mimic::run(&args, trials);
    let mut rows = std::mem::take(&mut *ROWS.lock().unwrap());
    if !rows.is_empty() {
        rows.sort();
        println!("\nHow each client met each hostile server (timeouts {TIMEOUT:?}):");
        for (name, row) in rows {
            println!("  {name}: {row}");
        }
    }
    conclusion.exit_code()
}
