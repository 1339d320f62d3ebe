//! Issue #25's fuzz loop, in `make test`: mutants of the project's samples and of the inputs that
//! once crashed a reader (its corpus, built here from the samples), plugin tables with broken
//! fields, and a plugin answering random edit ops. Nothing may panic, crash or hang; a reader's
//! error names its file, a refused table says why, a refused decision names the plugin and call.
//!
//! Deterministic: a fixed seed and bounded work (a few seconds in a debug build). A longer run
//! (docs/fuzzing.md):
//!
//!     CTXLAB_FUZZ_ITERS=20000 CTXLAB_FUZZ_SEED=7 cargo test --release --test fuzz_hostile -- --nocapture
//!
//! `CTXLAB_FUZZ_ITERS` scales every loop (reader mutants; tables and replays take a tenth of it),
//! `CTXLAB_FUZZ_SEED` picks another sequence. A failure prints the seed, the iteration and the
//! mutant's file, which is kept under `target/fuzz-failures/`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;

use ctxlab::formats;
use ctxlab::model::Session;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn iterations() -> u64 {
    env_u64("CTXLAB_FUZZ_ITERS", 600)
}

fn seed() -> u64 {
    env_u64("CTXLAB_FUZZ_SEED", 0x25_25_25)
}

/// xorshift64*.
struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sample(rel: &str) -> PathBuf {
    root().join("samples").join(rel)
}

/// Every single-file sample (with its reader), its first 400 lines.
fn sample_corpus() -> Vec<(String, &'static str, String, Vec<u8>)> {
    fn walk(p: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(p).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if !p.ends_with("subagents") && !p.ends_with("storage") {
                    walk(&p, out);
                }
            } else {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root().join("samples"), &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name == "task_metadata.json" || f.extension().is_some_and(|x| x == "db") {
            continue;
        }
        let format = formats::detect(&f).unwrap_or_else(|e| panic!("{e}"));
        let bytes = std::fs::read(&f).unwrap();
        let mut n = 0;
        let end = bytes
            .iter()
            .position(|&b| {
                n += usize::from(b == b'\n');
                n == 400
            })
            .map_or(bytes.len(), |i| i + 1);
        let what = f.strip_prefix(root()).unwrap().display().to_string();
        out.push((what, format, name, bytes[..end].to_vec()));
    }
    assert!(out.len() >= 15, "{}", out.len());
    out
}

/// The inputs of issue #25 that crashed a reader, hung it or lost data, rebuilt from the
/// samples (finding numbers in the names).
fn crash_corpus() -> Vec<(String, &'static str, String, Vec<u8>)> {
    let read = |rel: &str| std::fs::read_to_string(sample(rel)).unwrap();
    let name = |rel: &str| {
        Path::new(rel)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let mut out = Vec::new();
    let mut add = |what: String, format: &'static str, rel: &str, text: String| {
        out.push((what, format, name(rel), text.into_bytes()));
    };
    let pi = "pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl";
    for big in ["18446744073709551615", "1e20", "18446744073709551614"] {
        let t = read(pi).replace(
            "\"firstKeptEntryIndex\":89",
            &format!("\"firstKeptEntryIndex\":{big}"),
        );
        add(
            format!("finding 1: pi firstKeptEntryIndex {big}"),
            "pi",
            pi,
            t,
        );
    }
    let http = "http-capture/anthropic-claude-code.jsonl";
    for big in ["18446744073709551615", "1000000000", "100000000"] {
        let t = read(http).replace("\\\"index\\\": 1,", &format!("\\\"index\\\": {big},"));
        add(
            format!("finding 2: stream index {big}"),
            "http-capture",
            http,
            t,
        );
    }
    let openai = "http-capture/openai-chat.jsonl";
    let first = read(openai);
    let mut x: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    let tc = x["response"]["choices"][0]["message"]["tool_calls"][0].clone();
    for big in [u64::MAX, 1_000_000_000, 100_000_000] {
        let chunk = |delta: serde_json::Value| {
            format!(
                "data: {}",
                serde_json::json!({"model": "gpt-4.1", "choices": [{"index": 0, "delta": delta}]})
            )
        };
        x["response"] = serde_json::json!({"stream": true, "sse_lines": [
            chunk(serde_json::json!({"role": "assistant"})),
            chunk(serde_json::json!({"tool_calls": [{"index": big, "id": tc["id"],
                "function": {"name": tc["function"]["name"], "arguments": ""}}]})),
            "data: [DONE]",
        ]});
        add(
            format!("finding 2: OpenAI tool_calls index {big}"),
            "http-capture",
            openai,
            format!("{x}\n"),
        );
    }
    let claude = "claude-code/-home-maren-src-tidewater/9874603d-3fea-4774-a473-54ebb495ce20.jsonl";
    let head: String = read(claude)
        .lines()
        .take(300)
        .map(|l| format!("{l}\n"))
        .collect();
    for bad in ["18446744073709551615", "-5", "1.5", "1e300"] {
        let t = head.replacen(
            "\"input_tokens\":",
            &format!("\"input_tokens\":{bad},\"x\":"),
            40,
        );
        add(
            format!("findings 11, 12: usage {bad}"),
            "claude-code",
            claude,
            t,
        );
    }
    let mut same = String::new();
    for (i, piece) in head.split("\"id\":\"msg_").enumerate() {
        if i > 0 {
            same.push_str("\"id\":\"msg_same");
            same.push_str(&piece[piece.find('"').unwrap_or(0)..]);
        } else {
            same.push_str(piece);
        }
    }
    add(
        "finding 14: one message.id".into(),
        "claude-code",
        claude,
        same,
    );
    add(
        "finding 14: concatenated twice".into(),
        "claude-code",
        claude,
        format!("{head}{head}"),
    );
    out.extend(
        [
            "cline/task-1/ui_messages.json",
            "swe-agent/fix-off-by-one.traj",
            "mini-swe-agent/rename-flag.traj.json",
            "openai/tidewater-refactor.json",
            "otel/otlp-export.json",
            "aider/.aider.chat.history.md",
        ]
        .into_iter()
        .map(|rel| {
            let format = formats::detect(&sample(rel)).unwrap();
            let mut b = std::fs::read(sample(rel)).unwrap();
            let mid = b.len() / 2;
            let at = (mid..b.len()).find(|&i| b[i] == b' ').unwrap_or(mid);
            b[at] = 0xFF;
            (
                format!("finding 13: invalid UTF-8 in {rel}"),
                format,
                name(rel),
                b,
            )
        }),
    );
    out
}

/// Numbers a hostile log writes where a count, an index or a size belongs.
const NUMBERS: &[&str] = &[
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775808",
    "-1",
    "-5",
    "1e20",
    "1e308",
    "-0",
    "1.5",
    "100000000",
    "4294967296",
    "0",
];

fn mutate(orig: &[u8], rng: &mut Rng) -> (String, Vec<u8>) {
    let mut b = orig.to_vec();
    let mut what = Vec::new();
    for _ in 0..1 + rng.below(3) {
        if b.is_empty() {
            break;
        }
        match rng.below(7) {
            0 | 1 => {
                // A number replaced by a hostile one.
                let start = rng.below(b.len());
                let Some(i) = (start..b.len()).find(|&i| b[i].is_ascii_digit()) else {
                    continue;
                };
                let j = (i..b.len())
                    .find(|&j| !b[j].is_ascii_digit())
                    .unwrap_or(b.len());
                let n = NUMBERS[rng.below(NUMBERS.len())];
                b.splice(i..j, n.bytes());
                what.push(format!("number at {i} -> {n}"));
            }
            2 => {
                let i = rng.below(b.len());
                b[i] = [0xFF, b'"', b'\n', b'{', b'}', b'[', b'\\', 0][rng.below(8)];
                what.push(format!("byte {i}"));
            }
            3 => {
                let cut = rng.below(b.len());
                b.truncate(cut);
                what.push(format!("truncated at {cut}"));
            }
            4 => {
                // A line repeated elsewhere.
                let lines: Vec<&[u8]> = b.split(|&c| c == b'\n').collect();
                let (i, j) = (rng.below(lines.len()), rng.below(lines.len()));
                let mut v: Vec<&[u8]> = lines.clone();
                v.insert(j, lines[i]);
                b = v.join(&b'\n');
                what.push(format!("line {i} again at {j}"));
            }
            5 => {
                // A string emptied or a key renamed: the text between two quotes dropped.
                let start = rng.below(b.len());
                if let Some(i) = (start..b.len()).find(|&i| b[i] == b'"') {
                    if let Some(j) = (i + 1..b.len().min(i + 64)).find(|&j| b[j] == b'"') {
                        b.drain(i + 1..j);
                        what.push(format!("string at {i} emptied"));
                    }
                }
            }
            _ => {
                let i = rng.below(b.len());
                let j = (i + rng.below(4096)).min(b.len());
                b.drain(i..j);
                what.push(format!("bytes {i}..{j} cut"));
            }
        }
    }
    (what.join(", "), b)
}

fn check_session(s: &Session, what: &str) {
    let n = s.messages.len();
    for m in &s.messages {
        assert!(m.agent < s.agents.len(), "{what}: message agent");
    }
    for c in &s.calls {
        assert!(
            c.agent < s.agents.len() && c.context_end <= n,
            "{what}: call"
        );
        assert!(c.reply.is_none_or(|r| r < n), "{what}: reply");
    }
    for c in &s.compactions {
        assert!(
            c.agent < s.agents.len() && c.at_message <= n,
            "{what}: compaction"
        );
        assert!(c.summary.is_none_or(|r| r < n), "{what}: summary");
    }
}

fn keep_failure(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = root().join("target/fuzz-failures");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Every reader, on the crash corpus as it is and on mutants of it and of every sample.
#[test]
fn readers_survive_mutants_of_the_samples_and_the_crash_corpus() {
    let mut corpus = crash_corpus();
    let crashers = corpus.len();
    corpus.extend(sample_corpus());
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(seed());
    let (mut loaded, mut refused) = (0, 0);
    let total = iterations() as usize + crashers;
    for it in 0..total {
        // The crash corpus first, unmutated; then mutants of any input.
        let (what, format, name, bytes) = if it < crashers {
            let (w, f, n, b) = &corpus[it];
            (w.clone(), *f, n.clone(), b.clone())
        } else {
            let (w, f, n, b) = &corpus[rng.below(corpus.len())];
            let (how, m) = mutate(b, &mut rng);
            (format!("{w}: {how}"), *f, n.clone(), m)
        };
        // A folder of its own: readers look beside a file (a Cline task's other file).
        let here = dir.path().join(it.to_string());
        std::fs::create_dir(&here).unwrap();
        let p = here.join(&name);
        std::fs::write(&p, &bytes).unwrap();
        let tag = format!("seed {:#x}, iteration {it}, {what}", seed());
        for r in [
            catch_unwind(AssertUnwindSafe(|| formats::load_as(&p, format))),
            catch_unwind(AssertUnwindSafe(|| formats::load_file(&p))),
        ] {
            match r {
                Err(_) => {
                    let kept = keep_failure(&format!("{it}-{name}"), &bytes);
                    panic!(
                        "{tag}: the reader panicked (input kept: {})",
                        kept.display()
                    );
                }
                Ok(Ok(s)) => {
                    loaded += 1;
                    check_session(&s, &tag);
                }
                Ok(Err(e)) => {
                    refused += 1;
                    let msg = e.to_string();
                    assert!(msg.contains(&name), "{tag}: the error names no file: {msg}");
                }
            }
        }
        std::fs::remove_dir_all(&here).unwrap();
    }
    eprintln!("{total} inputs: {loaded} loads, {refused} refusals");
    assert!(
        loaded > total / 2,
        "the mutants must reach the readers: {loaded}"
    );
}

fn built(lib: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = ctxlab::plugin_host::checkout_dir(&exe).expect("inside a cargo target folder");
    let p = dir.join(format!(
        "{}{lib}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(
        p.is_file(),
        "{} missing: run cargo build --workspace",
        p.display()
    );
    p
}

/// The example plugin's table with 1–3 fields broken (lengths, NULL entry points, versions,
/// strings that are not UTF-8, schemas with hostile numbers): loading it succeeds or is refused
/// with a reason, never a crash.
#[test]
fn plugin_tables_with_broken_fields_are_loaded_or_refused() {
    use ctxlab::plugin_host::LoadedPlugin;
    use ctxlab_plugin_api::abi::{EntryFn, PluginTable, StrRef, StrategyDesc, ENTRY_SYMBOL};
    let lib = unsafe { libloading::Library::new(built("ctxlab_plugin_example")) }.unwrap();
    let entry: EntryFn = unsafe { *lib.get::<EntryFn>(ENTRY_SYMBOL.as_bytes()).unwrap() };
    let good: &'static PluginTable = unsafe { &*entry() };
    std::mem::forget(lib);
    let schema = unsafe {
        let s = (*good.strategies).params_schema;
        std::str::from_utf8(std::slice::from_raw_parts(s.ptr, s.len))
            .unwrap()
            .to_string()
    };
    let leak = |b: Vec<u8>| {
        let b: &'static [u8] = Box::leak(b.into_boxed_slice());
        StrRef {
            ptr: b.as_ptr(),
            len: b.len(),
        }
    };
    let mut rng = Rng::new(seed() ^ 0x7AB1E);
    let (mut ok, mut refused) = (0, 0);
    for it in 0..(iterations() / 10).max(20) {
        let mut t: PluginTable = unsafe { std::ptr::read(good) };
        let mut d: StrategyDesc = unsafe { std::ptr::read(good.strategies) };
        let mut what = Vec::new();
        for _ in 0..1 + rng.below(3) {
            match rng.below(8) {
                0 => {
                    t.strategies_len = [0, 2, 1 << 40, usize::MAX][rng.below(4)];
                    what.push(format!("strategies_len {}", t.strategies_len));
                }
                1 => {
                    let field = rng.below(6);
                    let f = [
                        std::ptr::addr_of_mut!(t.create) as *mut usize,
                        std::ptr::addr_of_mut!(t.decide) as *mut usize,
                        std::ptr::addr_of_mut!(t.thresholds) as *mut usize,
                        std::ptr::addr_of_mut!(t.export) as *mut usize,
                        std::ptr::addr_of_mut!(t.import) as *mut usize,
                        std::ptr::addr_of_mut!(t.destroy) as *mut usize,
                    ][field];
                    unsafe { f.write(0) };
                    what.push(format!("entry point {field} NULL"));
                }
                2 => {
                    t.abi_major = rng.next() as u32 % 3;
                    t.abi_minor = rng.next() as u32 % 9;
                    what.push(format!("abi {}.{}", t.abi_major, t.abi_minor));
                }
                3 => {
                    t.size = [0, 8, t.size / 2, t.size + 8][rng.below(4)];
                    what.push(format!("size {}", t.size));
                }
                4 => {
                    let bytes: Vec<u8> = (0..rng.below(40)).map(|_| rng.next() as u8).collect();
                    d.id = leak(bytes);
                    what.push("id of random bytes".into());
                }
                5 => {
                    let bytes: Vec<u8> = (0..rng.below(40)).map(|_| rng.next() as u8).collect();
                    t.name = leak(bytes);
                    what.push("name of random bytes".into());
                }
                _ => {
                    let (how, m) = mutate(schema.as_bytes(), &mut rng);
                    d.params_schema = leak(m);
                    what.push(format!("schema: {how}"));
                }
            }
        }
        let descs: &'static StrategyDesc = Box::leak(Box::new(d));
        if t.strategies_len == 1 || t.strategies_len == 2 {
            // Two descriptions in a row, so that a length of 2 stays in bounds.
            let two: &'static [StrategyDesc; 2] =
                Box::leak(Box::new([unsafe { std::ptr::read(descs) }, unsafe {
                    std::ptr::read(descs)
                }]));
            t.strategies = two.as_ptr();
        } else {
            t.strategies = descs;
        }
        let t: &'static PluginTable = Box::leak(Box::new(t));
        let tag = format!("seed {:#x}, table {it}: {}", seed(), what.join(", "));
        let r = catch_unwind(|| unsafe { LoadedPlugin::from_table(t, Path::new("fuzz.so")) });
        match r {
            Err(_) => panic!("{tag}: the host panicked"),
            Ok(Ok(_)) => ok += 1,
            Ok(Err(e)) => {
                refused += 1;
                assert!(!e.is_empty(), "{tag}: refused without a reason");
            }
        }
    }
    eprintln!("tables: {ok} loaded, {refused} refused");
    assert!(refused > 0 && ok > 0, "{ok} loaded, {refused} refused");
}

/// A plugin deciding random edit ops (ranges past the end, reversed or near usize::MAX, huge
/// sizes, pinned and paired messages touched, many events) at random calls of three samples:
/// each run ends normally or with the plugin, the call and the reason, never a crash.
#[test]
fn random_edit_ops_are_applied_or_refused_by_name() {
    let plugin = built("ctxlab_fixture_bad_ops");
    let logs = [
        sample("pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl"),
        sample("native/helpdesk-two-agents.ctxlab.jsonl"),
        sample("codex/rollout-2026-03-14T09-12-44-019c1754-a43c-7709-85e2-fa8bb43a4f52.jsonl"),
    ];
    let mut rng = Rng::new(seed() ^ 0x0B5);
    let (mut ran, mut refused) = (0, 0);
    for it in 0..(iterations() / 25).max(12) {
        let log = &logs[rng.below(logs.len())];
        let (s, at) = (rng.next() % 1_000_000, rng.below(40));
        let out = Command::new(env!("CARGO_BIN_EXE_ctxlab"))
            .arg("replay")
            .arg(log)
            .args(["-s", "fixture.bad-ops", "--param", "fault=random"])
            .arg("--param")
            .arg(format!("seed={s}"))
            .arg("--param")
            .arg(format!("at_call={at}"))
            .args(["--window", "20000"])
            .env("CTXLAB_PLUGIN_PATH", &plugin)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tag = format!(
            "seed {:#x}, run {it}: {} seed={s} at_call={at}",
            seed(),
            log.display()
        );
        match out.status.code() {
            Some(0) => ran += 1,
            Some(1) => {
                refused += 1;
                assert!(
                    stderr.contains("fixture.bad-ops") && stderr.contains("call"),
                    "{tag}: {stderr}"
                );
            }
            other => panic!("{tag}: exit {other:?}: {stderr}"),
        }
    }
    eprintln!("replays: {ran} ran, {refused} refused a decision");
    assert!(refused > 0, "the random ops never reached the validation");
}
