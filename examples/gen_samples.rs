//! Writes `samples/`: session logs in every format ctxlab reads, authored here (not copied from any
//! real log). Deterministic: the same build writes the same bytes.
//!
//!     cargo run --example gen_samples            # rewrites samples/
//!
//! The sessions simulate coding agents working on a fictional Rust project, "tidewater" (tide
//! prediction from NOAA harmonic constituents): real-looking tool calls, file paths, compiler errors
//! and numbers that later turns refer back to, so that needed-fact recall and charts have something
//! to find. Token usage follows how prompt caching grows a context call by call.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use ctxlab::formats::time::format_ms;
use serde_json::{json, Value};

/// SplitMix64: tiny, deterministic, good enough to vary text.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
    fn hex(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from_digit(self.below(16) as u32, 16).unwrap())
            .collect()
    }
    fn b58(&mut self, n: usize) -> String {
        const A: &[u8] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
        (0..n)
            .map(|_| A[self.below(A.len() as u64) as usize] as char)
            .collect()
    }
    fn uuid(&mut self) -> String {
        format!(
            "{}-{}-4{}-a{}-{}",
            self.hex(8),
            self.hex(4),
            self.hex(3),
            self.hex(3),
            self.hex(12)
        )
    }
}

/// Rough tokens of a text (what the simulated provider "counts").
fn toks(s: &str) -> u64 {
    (s.len() as u64 * 10 / 37).max(1)
}

const ROOT: &str = "/home/maren/src/tidewater";

const FILES: &[&str] = &[
    "src/main.rs",
    "src/cli.rs",
    "src/harmonics.rs",
    "src/station.rs",
    "src/noaa/parser.rs",
    "src/noaa/client.rs",
    "src/predict.rs",
    "src/export/csv.rs",
    "src/config.rs",
    "tests/fit.rs",
    "Cargo.toml",
    "README.md",
];

const IDENTS: &[&str] = &[
    "amplitude",
    "phase_lag",
    "speed_deg_per_hr",
    "constituent",
    "station_id",
    "epoch",
    "datum",
    "mllw_offset",
    "samples",
    "residual",
    "node_factor",
    "equilibrium_arg",
    "interval_min",
    "harmonic_set",
    "prediction",
    "high_water",
    "low_water",
    "tz_offset",
];

const TYPES: &[&str] = &[
    "f64",
    "u32",
    "Vec<Constituent>",
    "Station",
    "&str",
    "Duration",
    "Prediction",
];

/// A plausible line of Rust for a file listing.
fn code_line(r: &mut Rng, depth: usize) -> String {
    let ind = "    ".repeat(depth);
    let a = r.pick(IDENTS);
    let b = r.pick(IDENTS);
    let t = r.pick(TYPES);
    match r.below(9) {
        0 => format!("{ind}let {a} = {b}.iter().map(|c| c.{a} * 0.5).sum::<f64>();"),
        1 => format!("{ind}pub fn {a}(&self, {b}: {t}) -> Result<{t}, TideError> {{"),
        2 => format!(
            "{ind}// {} the {a} before fitting ({}).",
            r.pick(&["Normalise", "Clamp", "Validate", "Convert"]),
            r.pick(&[
                "NOAA CO-OPS uses GMT",
                "degrees, not radians",
                "see issue #41",
                "per IHO S-44"
            ])
        ),
        3 => format!(
            "{ind}if {a} > {}.0 {{ return Err(TideError::OutOfRange(\"{a}\")); }}",
            r.range(2, 400)
        ),
        4 => format!("{ind}{a}: {t},"),
        5 => format!(
            "{ind}let {a} = ({b} + {}.{:03}) % 360.0;",
            r.range(0, 359),
            r.below(1000)
        ),
        6 => format!("{ind}self.{a}.push({b}.clone());"),
        7 => format!("{ind}}}"),
        _ => format!(
            "{ind}assert!(({a} - {}.{:04}).abs() < 1e-3, \"{a} off\");",
            r.range(0, 3),
            r.below(10000)
        ),
    }
}

/// `cat -n` style listing, as Claude Code's Read tool returns it.
fn listing(r: &mut Rng, path: &str, lines: usize, start: usize) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for i in 0..lines {
        let l = if i == 0 {
            format!(
                "//! {}",
                r.pick(&[
                    "Harmonic constituents and their fit.",
                    "Station metadata loaded from NOAA CO-OPS.",
                    "Command-line interface.",
                    "CSV export of predictions.",
                    "Parser for the NOAA harmonic constituent table."
                ])
            )
        } else if path.ends_with("config.rs") && i == 7 {
            "pub const MAX_HARMONICS: usize = 37;".to_string()
        } else if path.ends_with("station.rs") && i == 12 {
            "pub const DEFAULT_STATION: &str = \"9414290\"; // San Francisco, CA".to_string()
        } else {
            code_line(r, depth)
        };
        if l.ends_with('{') {
            depth = (depth + 1).min(3);
        } else if l.trim() == "}" {
            depth = depth.saturating_sub(1);
        }
        out.push_str(&format!("{:>6}\u{2192}{}\n", start + i, l));
    }
    out
}

fn cargo_test(r: &mut Rng, failing: Option<(&str, &str, u32)>) -> (String, bool) {
    let n = r.range(38, 64);
    let mut out = format!(
        "   Compiling tidewater v0.4.{} ({ROOT})\n    Finished `test` profile [unoptimized + debuginfo] target(s) in {}.{:02}s\n     Running unittests src/main.rs (target/debug/deps/tidewater-{})\n\nrunning {n} tests\n",
        r.below(9), r.range(2, 19), r.below(100), r.hex(16)
    );
    for _ in 0..r.range(6, 14) {
        out.push_str(&format!(
            "test {}::tests::{}_{} ... ok\n",
            r.pick(&[
                "harmonics",
                "station",
                "noaa::parser",
                "predict",
                "export::csv"
            ]),
            r.pick(IDENTS),
            r.pick(&["roundtrip", "matches_noaa", "edge", "empty", "leap_year"])
        ));
    }
    match failing {
        Some((test, file, line)) => {
            let want = format!("{}.{:04}", r.range(0, 2), r.below(10000));
            let got = format!("{}.{:04}", r.range(0, 2), r.below(10000));
            out.push_str(&format!("test {test} ... FAILED\n\nfailures:\n\n---- {test} stdout ----\n\nthread '{test}' panicked at {file}:{line}:9:\nassertion `left == right` failed: M2 amplitude at station 9414290\n  left: {got}\n right: {want}\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\nfailures:\n    {test}\n\ntest result: FAILED. {} passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.{:02}s\n\nerror: test failed, to rerun pass `--bin tidewater`", n - 1, r.below(100)));
            (out, true)
        }
        None => {
            out.push_str(&format!("\ntest result: ok. {n} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.{:02}s", r.below(100)));
            (out, false)
        }
    }
}

fn compile_error(r: &mut Rng) -> String {
    let line = r.range(40, 180);
    format!(
        "   Compiling tidewater v0.4.2 ({ROOT})\nerror[E0308]: mismatched types\n  --> src/station.rs:{line}:17\n   |\n{line} |         station_id: raw.id,\n   |                     ^^^^^^ expected `u32`, found `String`\n   |\nhelp: you can convert a `String` to a `u32` and panic if the converted value doesn't fit\n   |\n{line} |         station_id: raw.id.parse().unwrap(),\n   |                           ++++++++++++++++++\n\nFor more information about this error, try `rustc --explain E0308`.\nerror: could not compile `tidewater` (bin \"tidewater\") due to 1 previous error"
    )
}

fn grep_result(r: &mut Rng, pat: &str) -> String {
    let mut out = String::new();
    for _ in 0..r.range(2, 9) {
        let f = r.pick(FILES);
        out.push_str(&format!(
            "{ROOT}/{f}:{}:{}\n",
            r.range(3, 260),
            code_line(r, 1).replace(r.pick(IDENTS), pat)
        ));
    }
    out
}

/// One tool use of a coding agent: (tool name, input, result text, is_error).
fn tool_step(
    r: &mut Rng,
    fail: &mut Option<(&'static str, &'static str, u32)>,
) -> (String, Value, String, bool) {
    let file = *r.pick(FILES);
    match r.below(10) {
        0..=2 => {
            let off = r.range(1, 120) as usize;
            let n = r.range(25, 70) as usize;
            let input = if off > 1 {
                json!({"file_path": format!("{ROOT}/{file}"), "offset": off, "limit": n})
            } else {
                json!({"file_path": format!("{ROOT}/{file}")})
            };
            ("Read".into(), input, listing(r, file, n, off), false)
        }
        3 => {
            let pat = *r.pick(IDENTS);
            (
                "Grep".into(),
                json!({"pattern": pat, "path": ROOT, "output_mode": "content", "-n": true}),
                grep_result(r, pat),
                false,
            )
        }
        4 | 5 => {
            let old = code_line(r, 1);
            let new = code_line(r, 1);
            if r.chance(12) {
                return (
                    "Edit".into(),
                    json!({"file_path": format!("{ROOT}/{file}"), "old_string": old, "new_string": new}),
                    "<tool_use_error>String to replace not found in file.\nString: ".to_string()
                        + &old
                        + "</tool_use_error>",
                    true,
                );
            }
            let res = format!("The file {ROOT}/{file} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n{}", { let at = r.range(10, 200) as usize; listing(r, file, 9, at) });
            (
                "Edit".into(),
                json!({"file_path": format!("{ROOT}/{file}"), "old_string": old, "new_string": new}),
                res,
                false,
            )
        }
        6 | 7 => {
            if r.chance(20) {
                return (
                    "Bash".into(),
                    json!({"command": "cargo build 2>&1 | tail -20", "description": "Build the crate"}),
                    compile_error(r),
                    true,
                );
            }
            let (out, failed) = cargo_test(r, fail.take());
            (
                "Bash".into(),
                json!({"command": "cargo test 2>&1 | tail -40", "description": "Run the test suite"}),
                out,
                failed,
            )
        }
        8 => {
            let n = r.range(3, 12);
            let out: Vec<String> = (0..n)
                .map(|_| format!("{ROOT}/{}", r.pick(FILES)))
                .collect();
            (
                "Glob".into(),
                json!({"pattern": "src/**/*.rs"}),
                out.join("\n"),
                false,
            )
        }
        _ => {
            let out = format!(
                "station,time_utc,height_m\n{}",
                (0..r.range(8, 20))
                    .map(|i| format!(
                        "9414290,2026-03-0{}T{:02}:{:02}Z,{}.{:03}",
                        1 + i % 7,
                        r.below(24),
                        r.below(60),
                        r.below(3),
                        r.below(1000)
                    ))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            (
                "Bash".into(),
                json!({"command": "cargo run --release -- predict --station 9414290 --days 2 --csv | head -20", "description": "Try the CLI"}),
                out,
                false,
            )
        }
    }
}

const REQUESTS: &[&str] = &[
    "The harmonic fit test started failing after I changed the NOAA parser. Can you find out why `harmonics::tests::fit_m2_amplitude` fails and fix it?",
    "Add a `--station <id>` flag to `predict` that defaults to DEFAULT_STATION. Find out first how stations are loaded today.",
    "Predictions near midnight come out an hour off for stations west of -120°. Check how tz_offset is applied in predict.rs.",
    "Export: add a `--csv` option that writes station,time_utc,height_m with heights in metres to 3 decimals.",
    "The parser chokes on constituents with a negative phase lag (e.g. station 8518750). Make it accept them and add a test.",
    "Can you speed up predict for 30-day ranges? It takes 4.8 s right now; profile it and fix the hot loop.",
    "Write README docs for the new flags and the CSV format, with an example for San Francisco.",
    "Run clippy with -D warnings and fix everything it reports.",
    "Earlier you found the failing assertion in fit_m2_amplitude — which line was it, and is that test now stable? Also bump MAX_HARMONICS if we need more than 37 constituents for Seattle (9447130).",
    "Last thing: make `cargo test` pass offline by moving the NOAA fixtures into tests/data/.",
];

const REPLIES: &[&str] = &[
    "Let me look at how the parser builds the constituent table first.",
    "I'll run the tests to see the current failure.",
    "Found it: the parser now returns phase lags in radians while `fit` expects degrees. I'll convert at the parse boundary.",
    "The edit didn't apply because the snippet changed; re-reading the file.",
    "Tests pass now. Next I'll check the CLI end to end.",
    "That compile error is the `station_id` type: NOAA ids are numeric strings, so I'll parse them into `u32` once in `Station::from_raw`.",
    "I'll grep for every use of tz_offset before changing it.",
    "The hot loop recomputes node factors per sample; hoisting them out of the loop should help a lot.",
];

// ---------------------------------------------------------------------------------------------
// Claude Code

struct Cc<'a> {
    r: &'a mut Rng,
    out: Vec<String>,
    session: String,
    agent_id: Option<String>,
    parent: Option<String>,
    t: i64,
    model: &'static str,
    /// Context tokens already in the provider cache (the previous call's whole context).
    cached: u64,
    /// Tokens of the conversation so far (without the fixed system prompt + tool schemas).
    convo: u64,
    base: u64,
    calls: usize,
    progress: Option<(String, String)>,
}

impl Cc<'_> {
    fn common(&mut self, kind: &str) -> serde_json::Map<String, Value> {
        let uuid = self.r.uuid();
        let mut m = serde_json::Map::new();
        m.insert(
            "parentUuid".into(),
            self.parent.clone().map_or(Value::Null, Value::String),
        );
        m.insert("isSidechain".into(), json!(self.agent_id.is_some()));
        m.insert("userType".into(), json!("external"));
        m.insert("cwd".into(), json!(ROOT));
        m.insert("sessionId".into(), json!(self.session));
        m.insert("version".into(), json!("2.1.34"));
        m.insert("gitBranch".into(), json!("feat/station-flag"));
        if let Some(a) = &self.agent_id {
            m.insert("agentId".into(), json!(a));
        }
        m.insert("type".into(), json!(kind));
        m.insert("uuid".into(), json!(uuid));
        self.parent = Some(uuid);
        m
    }

    fn tick(&mut self, lo: u64, hi: u64) -> String {
        self.t += self.r.range(lo, hi) as i64;
        format_ms(self.t)
    }

    fn emit(&mut self, mut m: serde_json::Map<String, Value>) {
        let ts = self.tick(300, 2500);
        m.insert("timestamp".into(), json!(ts));
        self.out.push(Value::Object(m).to_string());
    }

    fn user_text(&mut self, text: &str) {
        let mut m = self.common("user");
        m.insert("message".into(), json!({"role": "user", "content": text}));
        self.convo += toks(text) + 4;
        self.emit(m);
    }

    fn tool_results(&mut self, results: &[(String, String, bool)], agent_result: Option<Value>) {
        let blocks: Vec<Value> = results
            .iter()
            .map(|(id, text, err)| {
                self.convo += toks(text) + 8;
                if *err {
                    json!({"type": "tool_result", "content": text, "is_error": true, "tool_use_id": id})
                } else {
                    json!({"tool_use_id": id, "type": "tool_result", "content": text})
                }
            })
            .collect();
        let mut m = self.common("user");
        m.insert("message".into(), json!({"role": "user", "content": blocks}));
        if let Some(r) = agent_result {
            m.insert("toolUseResult".into(), r);
        } else if let Some((_, text, _)) = results.first() {
            m.insert("toolUseResult".into(), json!({"stdout": text.chars().take(200).collect::<String>(), "stderr": "", "interrupted": false}));
        }
        self.emit(m);
    }

    /// One API response, written as Claude Code 2.1.3x does: one entry per content block, each
    /// repeating the message id and a streaming snapshot of the usage (the last one is final).
    fn assistant(&mut self, blocks: Vec<Value>) {
        let id = format!("msg_01{}", self.r.b58(22));
        let req = format!("req_011C{}", self.r.b58(18));
        let context = self.base + self.convo;
        let input = self.r.range(1, 8);
        let cache_read = self.cached.min(context - input);
        let cache_write = context - input - cache_read;
        let out_final: u64 =
            blocks.iter().map(|b| toks(&b.to_string())).sum::<u64>() + self.r.range(5, 60);
        let n = blocks.len();
        for (i, b) in blocks.into_iter().enumerate() {
            let out = if i + 1 == n {
                out_final
            } else {
                self.r.range(1, 12)
            };
            let mut m = self.common("assistant");
            let msg = json!({
                "model": self.model, "id": id, "type": "message", "role": "assistant",
                "content": [b],
                "stop_reason": if i + 1 == n { json!("tool_use") } else { Value::Null },
                "stop_sequence": null,
                "usage": {
                    "input_tokens": input, "cache_creation_input_tokens": cache_write,
                    "cache_read_input_tokens": cache_read,
                    "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": cache_write},
                    "output_tokens": out, "service_tier": "standard"
                }
            });
            m.insert("message".into(), msg);
            m.insert("requestId".into(), json!(req));
            self.emit(m);
        }
        self.cached = context;
        self.convo += out_final;
        self.calls += 1;
    }

    fn misc(&mut self, tool_id: &str) {
        if let Some((task, agent)) = self.progress.clone() {
            let mut m = self.common("progress");
            m.insert("data".into(), json!({"message": {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "…"}]}}, "type": "agent_progress", "prompt": "", "agentId": agent}));
            m.insert("toolUseID".into(), json!(format!("agent_{tool_id}")));
            m.insert("parentToolUseID".into(), json!(task));
            self.emit(m);
        } else if self.r.chance(30) {
            let mut m = self.common("progress");
            m.insert("data".into(), json!({"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": "PostToolUse:Edit", "command": "callback"}));
            m.insert("toolUseID".into(), json!(tool_id));
            m.insert("parentToolUseID".into(), json!(tool_id));
            self.emit(m);
        }
    }

    /// A turn of tool use: a few calls, each with 1–3 tool uses and their results.
    fn work(
        &mut self,
        steps: usize,
        fail: &mut Option<(&'static str, &'static str, u32)>,
        compact_at: u64,
    ) {
        for s in 0..steps {
            if self.base + self.convo > compact_at {
                self.compact();
            }
            let mut blocks = Vec::new();
            if self.r.chance(35) {
                blocks.push(json!({"type": "thinking", "thinking": format!("{} {}", self.r.pick(REPLIES), "Check the assertion values against the NOAA published constants before editing."), "signature": self.r.b58(48)}));
            }
            if s == 0 || self.r.chance(40) {
                blocks.push(json!({"type": "text", "text": *self.r.pick(REPLIES)}));
            }
            let mut results = Vec::new();
            for _ in 0..self.r.range(1, 3) {
                let (name, input, result, err) = tool_step(self.r, fail);
                let id = format!("toolu_01{}", self.r.b58(22));
                blocks.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
                results.push((id, result, err));
            }
            self.assistant(blocks);
            let first = results[0].0.clone();
            self.misc(&first);
            self.tool_results(&results, None);
        }
    }

    fn finish_turn(&mut self, text: &str) {
        self.assistant(vec![json!({"type": "text", "text": text})]);
        if self.agent_id.is_none() {
            let mut m = self.common("system");
            m.insert("subtype".into(), json!("turn_duration"));
            m.insert("durationMs".into(), json!(self.r.range(20_000, 400_000)));
            m.insert("isMeta".into(), json!(false));
            self.emit(m);
        }
    }

    fn compact(&mut self) {
        let pre = self.base + self.convo;
        let logical = self.parent.clone();
        let mut m = self.common("system");
        m.insert("parentUuid".into(), Value::Null);
        m.insert(
            "logicalParentUuid".into(),
            logical.map_or(Value::Null, Value::String),
        );
        m.insert("subtype".into(), json!("compact_boundary"));
        m.insert("content".into(), json!("Conversation compacted"));
        m.insert("isMeta".into(), json!(false));
        m.insert("level".into(), json!("info"));
        m.insert(
            "compactMetadata".into(),
            json!({"trigger": "auto", "preTokens": pre}),
        );
        self.emit(m);
        let summary = format!(
            "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nAnalysis:\n1. The user asked to fix `harmonics::tests::fit_m2_amplitude` (src/harmonics.rs:214). Cause: the NOAA parser returned phase lags in radians; fixed by converting to degrees in src/noaa/parser.rs.\n2. Added `--station <id>` to `predict`, defaulting to DEFAULT_STATION = \"9414290\" (San Francisco). Station ids are parsed to u32 in `Station::from_raw` (E0308 fixed at src/station.rs).\n3. tz_offset was applied twice for stations west of -120°; removed the second application in predict.rs.\n4. CSV export (`--csv`): station,time_utc,height_m, heights to 3 decimals.\n\nKey facts:\n- MAX_HARMONICS = 37 (src/config.rs:8)\n- Test suite: {} tests, all passing at the time of compaction.\n\nPending tasks:\n- Negative phase lags (station 8518750)\n- Performance of 30-day predictions (4.8 s)\n\nCurrent work:\nWorking through the user's latest request.",
            self.r.range(50, 64)
        );
        let mut m = self.common("user");
        m.insert(
            "message".into(),
            json!({"role": "user", "content": summary}),
        );
        m.insert("isCompactSummary".into(), json!(true));
        m.insert("isVisibleInTranscriptOnly".into(), json!(true));
        self.emit(m);
        self.convo = toks(&summary) + 900;
        self.cached = 0;
    }
}

fn claude_code(root: &Path) -> std::io::Result<()> {
    let mut r = Rng(0x7EDE_5A11);
    let session = r.uuid();
    let project = root.join("claude-code").join("-home-maren-src-tidewater");
    let sub_dir = project.join(&session).join("subagents");
    fs::create_dir_all(&sub_dir)?;
    let start = 1_772_442_847_000; // 2026-03-02T09:14:07Z
    let mut cc = Cc {
        r: &mut r,
        out: Vec::new(),
        session: session.clone(),
        agent_id: None,
        parent: None,
        t: start,
        model: "claude-opus-4-6",
        cached: 0,
        convo: 0,
        base: 18_420,
        calls: 0,
        progress: None,
    };
    let mut sub_lines = Vec::new();
    let mut acompact_lines = Vec::new();
    let mut fail = Some((
        "harmonics::tests::fit_m2_amplitude",
        "src/harmonics.rs",
        214,
    ));
    for (i, req) in REQUESTS.iter().enumerate() {
        let snap = cc.r.uuid();
        cc.out.push(json!({"type": "file-history-snapshot", "messageId": snap, "snapshot": {"messageId": snap, "trackedFileBackups": {}, "timestamp": format_ms(cc.t)}, "isSnapshotUpdate": false}).to_string());
        cc.user_text(req);
        if i == 1 {
            // The Task call: an Explore subagent maps how stations are loaded.
            let task_id = format!("toolu_01{}", cc.r.b58(22));
            let agent_id = format!("a{}", cc.r.hex(16));
            let prompt = "Find how stations are loaded in tidewater: where Station is constructed from NOAA data, how station ids are typed, and every caller that would need a --station flag. Report file paths and line numbers.";
            cc.assistant(vec![
                json!({"type": "text", "text": "I'll have an explore agent map the station loading code first."}),
                json!({"type": "tool_use", "id": task_id, "name": "Task", "input": {"description": "Map station loading", "subagent_type": "Explore", "prompt": prompt}}),
            ]);
            let t0 = cc.t;
            let mut sub = Cc {
                r: &mut Rng(0x5AB_A6E7),
                out: Vec::new(),
                session: session.clone(),
                agent_id: Some(agent_id.clone()),
                parent: None,
                t: t0,
                model: "claude-haiku-4-5-20251001",
                cached: 0,
                convo: 0,
                base: 9_800,
                calls: 0,
                progress: None,
            };
            sub.user_text(prompt);
            let mut no_fail = None;
            sub.work(34, &mut no_fail, u64::MAX);
            let report = "Station loading:\n- `Station::from_raw` (src/station.rs:88) builds a Station from the NOAA JSON; `station_id` is a String there but `u32` in `Station` — that is the E0308 you will hit.\n- DEFAULT_STATION = \"9414290\" (src/station.rs:13).\n- Callers: src/cli.rs:42 (`predict`), src/predict.rs:17, src/export/csv.rs:9.\n- `noaa::client::fetch_station` caches responses under ~/.cache/tidewater/.";
            sub.finish_turn(report);
            let (sub_calls, sub_t, sub_ctx) = (sub.calls, sub.t, sub.base + sub.convo);
            sub_lines = std::mem::take(&mut sub.out);
            cc.progress = Some((task_id.clone(), agent_id.clone()));
            cc.misc("agent_msg_01");
            cc.misc("agent_msg_02");
            cc.progress = None;
            cc.t = sub_t;
            let result = json!({"status": "completed", "prompt": prompt, "agentId": agent_id, "content": [{"type": "text", "text": report}], "totalDurationMs": sub_t - t0, "totalTokens": sub_ctx, "totalToolUseCount": sub_calls});
            cc.tool_results(&[(task_id, report.to_string(), false)], Some(result));
        }
        let steps = cc.r.range(22, 36) as usize;
        cc.work(steps, &mut fail, 158_000);
        let done = *cc.r.pick(&[
            "Done. All tests pass and the change is in place.",
            "Finished — summary of the change is above; `cargo test` is green (56 passed).",
            "That's fixed; I also added a regression test.",
        ]);
        cc.finish_turn(done);
        if i == 4 {
            cc.out.push(json!({"type": "queue-operation", "operation": "enqueue", "timestamp": format_ms(cc.t), "sessionId": session, "content": "also check 8518750 after that"}).to_string());
            let mut m = cc.common("system");
            m.insert("subtype".into(), json!("api_error"));
            m.insert("level".into(), json!("error"));
            m.insert("error".into(), json!({"status": 529, "error": {"type": "overloaded_error", "message": "Overloaded"}}));
            m.insert("retryInMs".into(), json!(1200));
            m.insert("retryAttempt".into(), json!(1));
            m.insert("maxRetries".into(), json!(10));
            cc.emit(m);
        }
        if i == 7 && acompact_lines.is_empty() {
            // The summarizer's own call is written as a pseudo-agent file; ctxlab must skip it.
            acompact_lines.push(json!({"parentUuid": null, "isSidechain": true, "agentId": "acompact-3e9f1c", "sessionId": session, "type": "assistant", "message": {"model": "claude-opus-4-6", "id": "msg_01Compact", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "Summary of the conversation so far…"}], "usage": {"input_tokens": 150000, "output_tokens": 1800}}, "uuid": "c0", "timestamp": format_ms(cc.t)}).to_string());
        }
    }
    cc.out.push(json!({"type": "ai-title", "aiTitle": "Fix harmonic fit and add --station flag", "sessionId": session}).to_string());
    let calls = cc.calls;
    write_lines(&project.join(format!("{session}.jsonl")), &cc.out)?;
    write_lines(
        &sub_dir.join(format!("agent-{}.jsonl", sub_lines_agent(&sub_lines))),
        &sub_lines,
    )?;
    write_lines(
        &sub_dir.join("agent-acompact-3e9f1c.jsonl"),
        &acompact_lines,
    )?;
    println!("claude-code: {calls} main calls, session {session}");
    Ok(())
}

fn sub_lines_agent(lines: &[String]) -> String {
    let v: Value = serde_json::from_str(&lines[0]).expect("generated JSON");
    v["agentId"].as_str().expect("agentId").to_string()
}

fn write_lines(path: &Path, lines: &[String]) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(fs::File::create(path)?);
    for l in lines {
        f.write_all(l.as_bytes())?;
        f.write_all(b"\n")?;
    }
    f.flush()
}

// ---------------------------------------------------------------------------------------------
// Codex

/// One rollout line; time moves on with the size of what was written (a crude but steady clock).
fn emit(out: &mut Vec<String>, t: &mut i64, kind: &str, payload: Value) {
    *t += 400 + (payload.to_string().len() as i64 % 3_000);
    out.push(json!({"timestamp": format_ms(*t), "type": kind, "payload": payload}).to_string());
}

fn codex(root: &Path) -> std::io::Result<()> {
    let mut r = Rng(0xC0DE_C0DE);
    let dir = root.join("codex");
    fs::create_dir_all(&dir)?;
    let id = format!(
        "019c{}-{}-7{}-8{}-{}",
        r.hex(4),
        r.hex(4),
        r.hex(3),
        r.hex(3),
        r.hex(12)
    );
    let mut t: i64 = 1_773_479_564_000; // 2026-03-14T09:12:44Z
    let mut out = Vec::new();
    let started = format_ms(t);
    emit(
        &mut out,
        &mut t,
        "session_meta",
        json!({"id": id, "timestamp": started, "cwd": ROOT, "originator": "codex_cli_rs", "cli_version": "0.118.0", "source": "cli", "model_provider": "openai", "base_instructions": {"text": "You are Codex, a coding agent based on GPT-5. You and the user share the same workspace and collaborate to achieve the user's goals.\n\n# General\n- Prefer `rg` for searching.\n- Use apply_patch to edit files.\n- Keep changes minimal and run the tests."}}),
    );
    let (mut total_in, mut total_cached, mut total_out) = (0u64, 0u64, 0u64);
    let mut context = 9_200u64;
    let mut last_summary_calls = 0;
    for (turn, req) in REQUESTS[2..7].iter().enumerate() {
        emit(
            &mut out,
            &mut t,
            "event_msg",
            json!({"type": "task_started", "turn_id": r.uuid(), "model_context_window": 258_400}),
        );
        emit(
            &mut out,
            &mut t,
            "turn_context",
            json!({"turn_id": r.uuid(), "cwd": ROOT, "approval_policy": "on-request", "sandbox_policy": {"type": "workspace-write"}, "model": "gpt-5.3-codex", "effort": "medium", "summary": "auto"}),
        );
        emit(
            &mut out,
            &mut t,
            "response_item",
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": req}]}),
        );
        emit(
            &mut out,
            &mut t,
            "event_msg",
            json!({"type": "user_message", "message": req, "images": []}),
        );
        context += toks(req);
        // Codex repeats the previous token_count at the start of a turn.
        if total_in > 0 {
            emit(
                &mut out,
                &mut t,
                "event_msg",
                json!({"type": "token_count", "info": {"total_token_usage": {"input_tokens": total_in, "cached_input_tokens": total_cached, "output_tokens": total_out, "reasoning_output_tokens": 0, "total_tokens": total_in + total_out}, "last_token_usage": {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0, "total_tokens": 0}, "model_context_window": 258_400}}),
            );
        } else {
            emit(
                &mut out,
                &mut t,
                "event_msg",
                json!({"type": "token_count", "info": null, "rate_limits": {"primary": {"used_percent": 3.0, "window_minutes": 300}}}),
            );
        }
        let steps = r.range(6, 10);
        for s in 0..=steps {
            let mut out_toks = 0;
            emit(
                &mut out,
                &mut t,
                "response_item",
                json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": format!("**Planning the change**\n\n{}", r.pick(REPLIES))}], "content": null, "encrypted_content": format!("gAAAAB{}", r.b58(120))}),
            );
            let mut outputs = Vec::new();
            if s < steps {
                for _ in 0..r.range(1, 3) {
                    let (_, input, result, _) = tool_step(&mut r, &mut None);
                    let cmd = match input.get("command") {
                        Some(c) => c.as_str().unwrap_or("ls").to_string(),
                        None => format!(
                            "sed -n '1,80p' {}",
                            input["file_path"]
                                .as_str()
                                .unwrap_or("src/main.rs")
                                .trim_start_matches(ROOT)
                                .trim_start_matches('/')
                        ),
                    };
                    let call_id = format!("call_{}", r.b58(24));
                    let args =
                        json!({"cmd": cmd, "workdir": ROOT, "max_output_tokens": 4000}).to_string();
                    out_toks += toks(&args);
                    emit(
                        &mut out,
                        &mut t,
                        "response_item",
                        json!({"type": "function_call", "name": "exec_command", "arguments": args, "call_id": call_id}),
                    );
                    outputs.push((call_id, format!("Chunk ID: {}\nWall time: 0.{:04} seconds\nProcess exited with code 0\nOutput:\n{}", r.hex(6), r.below(9999), result)));
                }
            } else {
                let text = format!(
                    "Done: {}. Tests: `cargo test` passes ({} tests).",
                    req.split('.').next().unwrap_or(req).to_lowercase(),
                    r.range(50, 64)
                );
                out_toks += toks(&text);
                emit(
                    &mut out,
                    &mut t,
                    "event_msg",
                    json!({"type": "agent_message", "message": text}),
                );
                emit(
                    &mut out,
                    &mut t,
                    "response_item",
                    json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}),
                );
            }
            let out_n = out_toks + r.range(40, 400);
            let cached = context * 9 / 10;
            total_in += context;
            total_cached += cached;
            total_out += out_n;
            emit(
                &mut out,
                &mut t,
                "event_msg",
                json!({"type": "token_count", "info": {"total_token_usage": {"input_tokens": total_in, "cached_input_tokens": total_cached, "output_tokens": total_out, "reasoning_output_tokens": total_out / 3, "total_tokens": total_in + total_out}, "last_token_usage": {"input_tokens": context, "cached_input_tokens": cached, "output_tokens": out_n, "reasoning_output_tokens": out_n / 3, "total_tokens": context + out_n}, "model_context_window": 258_400}}),
            );
            context += out_n;
            for (call_id, o) in outputs {
                context += toks(&o);
                emit(
                    &mut out,
                    &mut t,
                    "response_item",
                    json!({"type": "function_call_output", "call_id": call_id, "output": o}),
                );
            }
        }
        emit(
            &mut out,
            &mut t,
            "event_msg",
            json!({"type": "task_complete", "turn_id": r.uuid(), "last_agent_message": "Done."}),
        );
        if turn == 2 && last_summary_calls == 0 {
            last_summary_calls = 1;
            let summary = "Summary of the work so far: tz_offset double application removed in src/predict.rs; `--csv` export writes station,time_utc,height_m (3 decimals); station ids are u32 parsed in Station::from_raw. Next: negative phase lags for station 8518750.";
            emit(
                &mut out,
                &mut t,
                "compacted",
                json!({"message": summary, "replacement_history": [
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": REQUESTS[2]}]},
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": REQUESTS[3]}]},
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": REQUESTS[4]}]},
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": format!("Another language model started to solve this problem and produced a summary of its thinking process.\n\n{summary}")}]}
                ]}),
            );
            emit(
                &mut out,
                &mut t,
                "event_msg",
                json!({"type": "context_compacted"}),
            );
            context = 9_200 + toks(summary) + 3 * 60;
        }
    }
    write_lines(
        &dir.join(format!("rollout-2026-03-14T09-12-44-{id}.jsonl")),
        &out,
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// pi

fn pi(root: &Path) -> std::io::Result<()> {
    let mut r = Rng(0x0031_4159);
    let dir = root.join("pi");
    fs::create_dir_all(&dir)?;
    let id = r.uuid();
    let mut t: i64 = 1_772_446_500_000;
    let mut out = Vec::new();
    out.push(json!({"type": "session", "id": id, "timestamp": format_ms(t), "cwd": ROOT, "provider": "anthropic", "modelId": "claude-sonnet-4-5", "thinkingLevel": "off"}).to_string());
    let mut context = 7_400u64;
    let mut cached = 0u64;
    let mut compacted = false;
    for req in &REQUESTS[4..9] {
        t += r.range(20_000, 90_000) as i64;
        out.push(json!({"type": "message", "timestamp": format_ms(t), "message": {"role": "user", "content": [{"type": "text", "text": req}], "timestamp": t}}).to_string());
        context += toks(req);
        if req.starts_with("Write README") {
            out.push(json!({"type": "thinking_level_change", "timestamp": format_ms(t), "thinkingLevel": "medium"}).to_string());
        }
        let steps = r.range(8, 14);
        for s in 0..=steps {
            if context > 34_000 && !compacted {
                compacted = true;
                // Keep the last user request and what followed it; entry 0 is the session header.
                let kept = out
                    .iter()
                    .rposition(|l| l.contains("\"role\":\"user\""))
                    .unwrap_or(1);
                let summary = "## Goal\nMake the NOAA parser accept negative phase lags and speed up 30-day predictions.\n\n## Progress\n- Negative phase lags: parser fixed, test `parser::tests::negative_phase_8518750` added.\n- Profiling: node factors recomputed per sample in src/predict.rs (hot loop).\n\n## Key facts\n- 30-day prediction took 4.8 s before the change.\n- MAX_HARMONICS = 37.";
                t += 9_000;
                out.push(json!({"type": "compaction", "timestamp": format_ms(t), "summary": summary, "firstKeptEntryIndex": kept, "tokensBefore": context}).to_string());
                context = 7_400 + toks(summary) + 6_000;
                cached = 0;
            }
            t += r.range(2_000, 20_000) as i64;
            let mut content = Vec::new();
            if r.chance(50) {
                content.push(json!({"type": "thinking", "thinking": r.pick(REPLIES).to_string(), "thinkingSignature": r.b58(40)}));
            }
            let mut results = Vec::new();
            if s < steps {
                if r.chance(40) {
                    content.push(json!({"type": "text", "text": r.pick(REPLIES).to_string()}));
                }
                for _ in 0..r.range(1, 2) {
                    let (name, input, result, err) = tool_step(&mut r, &mut None);
                    let id = format!("toolu_01{}", r.b58(22));
                    let (pname, args) = match name.as_str() {
                        "Read" => ("read", json!({"path": input["file_path"]})),
                        "Edit" => (
                            "edit",
                            json!({"path": input["file_path"], "oldText": input["old_string"], "newText": input["new_string"]}),
                        ),
                        _ => (
                            "bash",
                            json!({"command": input.get("command").cloned().unwrap_or(json!(format!("rg -n {} src", input["pattern"].as_str().unwrap_or("tz_offset"))))}),
                        ),
                    };
                    content.push(
                        json!({"type": "toolCall", "id": id, "name": pname, "arguments": args}),
                    );
                    results.push((id, pname, result, err));
                }
            } else {
                content.push(
                    json!({"type": "text", "text": "Done — the change is in and the tests pass."}),
                );
            }
            let output: u64 =
                content.iter().map(|c| toks(&c.to_string())).sum::<u64>() + r.range(10, 80);
            let input = r.range(2, 9);
            let cache_read = cached.min(context - input);
            let cache_write = context - input - cache_read;
            let total = context + output;
            out.push(json!({"type": "message", "timestamp": format_ms(t), "message": {"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": {"input": input, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write, "totalTokens": total, "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}}, "stopReason": if results.is_empty() { "stop" } else { "toolUse" }, "timestamp": t}}).to_string());
            cached = context;
            context += output;
            for (id, name, result, err) in results {
                t += r.range(50, 3000) as i64;
                context += toks(&result);
                out.push(json!({"type": "message", "timestamp": format_ms(t), "message": {"role": "toolResult", "toolCallId": id, "toolName": name, "content": [{"type": "text", "text": result}], "isError": err, "timestamp": t}}).to_string());
            }
        }
    }
    // A user `!command` run in pi's editor, shown to the model as a user message.
    t += 30_000;
    out.push(json!({"type": "message", "timestamp": format_ms(t), "message": {"role": "bashExecution", "command": "git status --short", "output": " M src/noaa/parser.rs\n M src/predict.rs\n?? tests/data/\n", "exitCode": 0, "cancelled": false, "truncated": false, "timestamp": t}}).to_string());
    write_lines(
        &dir.join(format!("2026-03-02T10-15-00-000Z_{id}.jsonl")),
        &out,
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// OpenAI chat messages

fn openai(root: &Path) -> std::io::Result<()> {
    let dir = root.join("openai");
    fs::create_dir_all(&dir)?;
    let mut r = Rng(0x0A1_0A1);
    // A tool-heavy, multi-request session with per-message usage, as an object with `messages`.
    let mut msgs = vec![
        json!({"role": "system", "content": "You are a careful coding assistant working in the tidewater repository. Use the tools to read, search, edit and run commands; keep diffs small; run the tests after every change."}),
    ];
    let mut context = 1_900u64;
    for req in REQUESTS {
        msgs.push(json!({"role": "user", "content": req}));
        context += toks(req) + 4;
        let steps = r.range(5, 9);
        for s in 0..=steps {
            let mut m = serde_json::Map::new();
            m.insert("role".into(), json!("assistant"));
            let mut results = Vec::new();
            if s < steps {
                m.insert(
                    "content".into(),
                    if r.chance(50) {
                        json!(r.pick(REPLIES).to_string())
                    } else {
                        Value::Null
                    },
                );
                let mut calls = Vec::new();
                for _ in 0..r.range(1, 3) {
                    let (name, input, result, _) = tool_step(&mut r, &mut None);
                    let id = format!("call_{}", r.b58(24));
                    let fname = match name.as_str() {
                        "Read" => "read_file",
                        "Edit" => "edit_file",
                        "Grep" => "search",
                        "Glob" => "list_files",
                        _ => "run_command",
                    };
                    calls.push(json!({"id": id, "type": "function", "function": {"name": fname, "arguments": input.to_string()}}));
                    results.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
                }
                m.insert("tool_calls".into(), json!(calls));
            } else {
                m.insert(
                    "content".into(),
                    json!(format!(
                        "Done. {}",
                        r.pick(&[
                            "All 57 tests pass.",
                            "`cargo clippy -- -D warnings` is clean.",
                            "The README now documents --station and --csv."
                        ])
                    )),
                );
            }
            let out = toks(&Value::Object(m.clone()).to_string());
            let cached = context.saturating_sub(r.range(200, 2_000)) / 128 * 128;
            m.insert("usage".into(), json!({"prompt_tokens": context, "completion_tokens": out, "total_tokens": context + out, "prompt_tokens_details": {"cached_tokens": cached}}));
            context += out;
            msgs.push(Value::Object(m));
            for res in results {
                context += toks(res["content"].as_str().unwrap_or("")) + 4;
                msgs.push(res);
            }
        }
    }
    let doc = json!({"id": "tidewater-refactor", "model": "gpt-4.1-2025-04-14", "title": "tidewater: fixes, --station, --csv, docs", "messages": msgs});
    fs::write(
        dir.join("tidewater-refactor.json"),
        serde_json::to_string_pretty(&doc).expect("json") + "\n",
    )?;

    // A short support chat with two named agents, as a bare array without usage.
    let chat = json!([
        {"role": "system", "content": "You are the triage agent of the tidewater help desk. Hand station questions to the stations agent."},
        {"role": "user", "content": "Why does my prediction for Seattle (9447130) differ from the NOAA tables by 6 cm at high water?"},
        {"role": "assistant", "name": "triage", "content": "Let me look up the station's datum first.", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "station_info", "arguments": "{\"station\":\"9447130\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"id\":\"9447130\",\"name\":\"Seattle, WA\",\"datum\":\"MLLW\",\"mllw_offset_m\":0.000,\"constituents\":37}"},
        {"role": "assistant", "name": "stations", "content": "Seattle uses 37 constituents — exactly MAX_HARMONICS — so the long-period ones (Sa, Ssa) are being dropped. Raising MAX_HARMONICS to 40 should close most of the 6 cm gap."},
        {"role": "user", "content": [{"type": "text", "text": "Here is the plot I get:"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="}}]},
        {"role": "assistant", "name": "stations", "content": "The plot shows the phase is right and the amplitude is low at spring tides, consistent with the missing long-period constituents."}
    ]);
    fs::write(
        dir.join("helpdesk-two-agents.json"),
        serde_json::to_string_pretty(&chat).expect("json") + "\n",
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// fuseraft ctx_snapshots

fn fuseraft(root: &Path) -> std::io::Result<()> {
    let mut r = Rng(0x0F05_EAF7);
    let dir = root.join("fuseraft");
    fs::create_dir_all(&dir)?;
    let session = "a3f9c2d1e8b7";
    let agents = [
        ("Planner", 3_100u64),
        ("Developer", 7_800),
        ("Reviewer", 4_200),
    ];
    let mut cumulative = [0u64; 3];
    let mut context = [0u64; 3];
    let mut t: i64 = 1_773_046_800_000;
    let mut out = Vec::new();
    let mut turn = 0;
    let mut assistant_turns = 0;
    for round in 0..52 {
        for (i, (name, base)) in agents.iter().enumerate() {
            // The Developer works several turns per round; the others one.
            let n = if i == 1 {
                r.range(1, 3)
            } else {
                u64::from(round % 2 == 0)
            };
            for _ in 0..n {
                turn += 1;
                assistant_turns += 1;
                t += r.range(8_000, 60_000) as i64;
                context[i] = (context[i] + r.range(600, 5_200)).max(*base);
                let input = context[i];
                cumulative[i] += input;
                let mut line = json!({"ts": format_ms(t), "session": session, "agent": name, "turn": turn, "turn_input_tokens": input, "turn_output_tokens": r.range(80, 1_900), "cumulative_input_tokens": cumulative[i], "warn_at": 250_000, "cutover_at": 400_000});
                if i == 2 {
                    line.as_object_mut().expect("object").remove("warn_at");
                }
                out.push(line.to_string());
            }
        }
        if cumulative.iter().any(|&c| c >= 400_000) {
            t += 4_000;
            out.push(json!({"ts": format_ms(t), "agent": "system", "turn": assistant_turns, "turn_input_tokens": 0, "turn_output_tokens": 0, "cumulative_input_tokens": 0, "compaction_occurred": true}).to_string());
            cumulative = [0; 3];
            for (c, (_, base)) in context.iter_mut().zip(agents) {
                *c = base + 2_400;
            }
        }
    }
    write_lines(&dir.join(format!("ctx_snapshots_{session}.jsonl")), &out)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// ctxlab native: written by the library's own writer from another sample.

// ---------------------------------------------------------------------------------------------
// Gemini CLI (chat files: the legacy pretty-printed document and the newer JSON lines)

/// A Gemini CLI tool call from one of `tool_step`'s Claude-named steps.
fn gemini_tool(r: &mut Rng, t: i64) -> (Value, u64) {
    let (name, input, result, err) = tool_step(r, &mut None);
    let (gname, args) = match name.as_str() {
        "Read" => ("read_file", json!({"file_path": input["file_path"]})),
        "Edit" => (
            "replace",
            json!({"file_path": input["file_path"], "old_string": input["old_string"], "new_string": input["new_string"]}),
        ),
        "Grep" => ("search_file_content", json!({"pattern": input["pattern"]})),
        "Glob" => ("glob", json!({"pattern": input["pattern"]})),
        _ => (
            "run_shell_command",
            json!({"command": input.get("command").cloned().unwrap_or(json!("cargo run -- predict")), "description": "Run it"}),
        ),
    };
    let id = format!("{gname}-{t}-{}", r.hex(14));
    let response = if err {
        json!({"error": result})
    } else {
        json!({"output": result})
    };
    let tc = json!({"id": id, "name": gname, "args": args,
        "result": [{"functionResponse": {"id": id, "name": gname, "response": response}}],
        "status": if err { "error" } else { "success" }, "timestamp": format_ms(t + 900),
        "displayName": gname, "description": "", "renderOutputAsMarkdown": false});
    (tc, toks(&result))
}

/// One `gemini` record and the context it leaves (prompt + its output + tool results).
fn gemini_turn(
    r: &mut Rng,
    t: &mut i64,
    context: &mut u64,
    cached: &mut u64,
    tools: bool,
) -> Value {
    *t += r.range(2_000, 15_000) as i64;
    let text = if tools && r.chance(50) {
        ""
    } else {
        *r.pick(REPLIES)
    };
    let thoughts: Vec<Value> = (0..r.range(0, 2))
        .map(|_| json!({"subject": "Planning the next step", "description": r.pick(REPLIES).to_string(), "timestamp": format_ms(*t - 500)}))
        .collect();
    let mut calls = Vec::new();
    let mut results = 0;
    if tools {
        for _ in 0..r.range(1, 2) {
            let (tc, n) = gemini_tool(r, *t);
            calls.push(tc);
            results += n;
        }
    }
    let output = toks(text)
        + calls
            .iter()
            .map(|c| toks(&c["args"].to_string()))
            .sum::<u64>()
        + 8;
    let thought_toks = if thoughts.is_empty() {
        0
    } else {
        r.range(40, 300)
    };
    let input = *context;
    let cache = (*cached).min(input);
    let tokens = json!({"input": input, "output": output, "cached": cache, "thoughts": thought_toks, "tool": 0, "total": input + output + thought_toks});
    *cached = input;
    *context += output + results + 20;
    let mut m = json!({"id": r.uuid(), "timestamp": format_ms(*t), "type": "gemini", "content": text,
        "thoughts": thoughts, "tokens": tokens, "model": "gemini-2.5-pro"});
    if !calls.is_empty() {
        m["toolCalls"] = Value::Array(calls);
    }
    m
}

fn gemini(root: &Path) -> std::io::Result<()> {
    let dir = root.join("gemini-cli");
    fs::create_dir_all(&dir)?;
    let hash = "3f1c0d2b9a8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a";

    // Legacy document (0.2x): two requests; an update notice arrives while the model's last tool
    // call of the first request waits for approval, so that call is written as a record of its own.
    let mut r = Rng(0x6E31_1A1);
    let id = r.uuid();
    let mut t: i64 = 1_772_530_000_000;
    let start = t;
    let mut context = 9_800u64;
    let mut cached = 0u64;
    let mut msgs = Vec::new();
    for (k, req) in REQUESTS[2..4].iter().enumerate() {
        t += 40_000;
        msgs.push(
            json!({"id": r.uuid(), "timestamp": format_ms(t), "type": "user", "content": req}),
        );
        context += toks(req);
        let steps = r.range(4, 6);
        for s in 0..=steps {
            msgs.push(gemini_turn(
                &mut r,
                &mut t,
                &mut context,
                &mut cached,
                s < steps,
            ));
            if k == 0 && s == 1 {
                t += 3_000;
                msgs.push(json!({"id": r.uuid(), "timestamp": format_ms(t), "type": "info", "content": "Gemini CLI update available! 0.24.0 → 0.25.0"}));
                t += 2_000;
                let (tc, n) = gemini_tool(&mut r, t);
                context += n;
                msgs.push(json!({"id": r.uuid(), "timestamp": format_ms(t), "type": "gemini", "content": "", "toolCalls": [tc], "thoughts": [], "model": "gemini-2.5-pro", "tokens": {"input": 0, "output": 0, "cached": 0, "thoughts": 0, "tool": 0, "total": 0}}));
            }
        }
    }
    // Written in Gemini CLI's key order (serde_json would sort the keys).
    let messages = serde_json::to_string_pretty(&msgs)
        .unwrap()
        .replace('\n', "\n  ");
    let doc = format!(
        "{{\n  \"sessionId\": {},\n  \"projectHash\": {},\n  \"startTime\": {},\n  \"lastUpdated\": {},\n  \"messages\": {messages}\n}}",
        json!(id),
        json!(hash),
        json!(format_ms(start)),
        json!(format_ms(t))
    );
    fs::write(
        dir.join(format!("session-2026-03-03T09-26-{}.json", &id[..8])),
        doc,
    )?;

    // JSON lines (newer): records appended and re-appended as they fill in, a rewind, and a
    // compression that replaces the history with a summary, an acknowledgement and the kept tail.
    let mut r = Rng(0x6E31_1B2);
    let id = r.uuid();
    let mut t: i64 = 1_772_617_000_000;
    let mut out = vec![json!({"sessionId": id, "projectHash": hash, "startTime": format_ms(t), "lastUpdated": format_ms(t), "kind": "main"}).to_string()];
    let mut context = 9_800u64;
    let mut cached = 0u64;
    let mut history: Vec<Value> = Vec::new();
    let append = |out: &mut Vec<String>, history: &mut Vec<Value>, m: Value| {
        // A reply is written first without tokens, then again once they are known.
        if m["type"] == "gemini" && m.get("tokens").is_some() {
            let mut early = m.clone();
            early["tokens"] = Value::Null;
            out.push(early.to_string());
        }
        out.push(m.to_string());
        history.push(m);
    };
    for req in &REQUESTS[5..8] {
        t += 60_000;
        let u = json!({"id": r.uuid(), "timestamp": format_ms(t), "type": "user", "content": [{"text": req}]});
        append(&mut out, &mut history, u);
        context += toks(req);
        let steps = r.range(3, 5);
        for s in 0..=steps {
            let m = gemini_turn(&mut r, &mut t, &mut context, &mut cached, s < steps);
            append(&mut out, &mut history, m);
        }
        if *req == REQUESTS[5] {
            // The user rewinds the first request's last answer and asks again.
            let last = history.pop().unwrap();
            out.push(json!({"$rewindTo": last["id"]}).to_string());
            let m = gemini_turn(&mut r, &mut t, &mut context, &mut cached, false);
            append(&mut out, &mut history, m);
        }
        if history.len() > 10 && !out.iter().any(|l| l.contains("state_snapshot")) {
            // /compress: the history is replaced.
            let keep = history.split_off(history.len() - 4);
            let summary = "<state_snapshot>\n  <overall_goal>Speed up 30-day predictions and fix negative phase lags.</overall_goal>\n  <key_knowledge>MAX_HARMONICS = 37; node factors were recomputed per sample.</key_knowledge>\n</state_snapshot>";
            t += 8_000;
            let mut new = vec![
                json!({"id": r.uuid(), "timestamp": format_ms(t), "type": "user", "content": [{"text": summary}]}),
                json!({"id": r.uuid(), "timestamp": format_ms(t), "type": "gemini", "content": [{"text": "Got it. Thanks for the additional context!"}]}),
            ];
            new.extend(keep);
            out.push(json!({"$set": {"messages": new, "lastUpdated": format_ms(t)}}).to_string());
            history = new;
            context = 9_800
                + toks(summary)
                + history
                    .iter()
                    .map(|m| toks(&m.to_string()) / 2)
                    .sum::<u64>();
            cached = 0;
        }
    }
    out.push(json!({"$set": {"summary": "Speed up predictions and fix phase lags"}}).to_string());
    write_lines(
        &dir.join(format!("session-2026-03-04T09-30-{}.jsonl", &id[..8])),
        &out,
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Cline task folder (api_conversation_history.json + ui_messages.json + task_metadata.json)

fn cline_task(root: &Path) -> std::io::Result<()> {
    let mut r = Rng(0xC11E_7A5C);
    let task_id = "1772700000000";
    let dir = root.join("cline").join(task_id);
    fs::create_dir_all(&dir)?;
    let model = json!({"providerId": "anthropic", "modelId": "claude-sonnet-4-5", "mode": "act"});
    let mut t: i64 = 1_772_700_000_000;
    let env = |t: i64| {
        format!("<environment_details>\n# VSCode Visible Files\nsrc/predict.rs\n\n# Current Time\n{}\n</environment_details>", format_ms(t))
    };
    let mut history: Vec<Value> = Vec::new();
    let mut ui: Vec<Value> = Vec::new();
    let task = REQUESTS[1];
    ui.push(json!({"ts": t, "type": "say", "say": "task", "text": task, "conversationHistoryIndex": -1}));
    history.push(json!({"role": "user", "content": [
        {"type": "text", "text": format!("<task>\n{task}\n</task>")},
        {"type": "text", "text": env(t)}]}));
    let mut context = 11_200u64 + toks(task);
    let mut cached = 0u64;
    let mut deleted: Option<Value> = None;
    let steps = 14;
    for step in 0..steps {
        // Request: the history holds everything up to the last user message.
        let ci = history.len() as i64 - 2;
        t += r.range(1_000, 4_000) as i64;
        let req_at = ui.len();
        // Cline truncates once the context passes 20k: half of the messages after the first
        // pair go, the range stamped on what follows this request's start.
        let mut sent = context;
        if context > 20_000 && deleted.is_none() {
            let end = ((history.len() - 2) / 2) * 2 - 1;
            deleted = Some(json!([2, end]));
            let dropped: u64 = history[2..=end].iter().map(|m| toks(&m.to_string())).sum();
            sent = context.saturating_sub(dropped);
            cached = 0;
        }
        let last = step == steps - 1;
        let mut content = vec![
            json!({"type": "thinking", "thinking": r.pick(REPLIES).to_string(), "signature": r.b58(32)}),
        ];
        content.push(json!({"type": "text", "text": r.pick(REPLIES).to_string()}));
        let mut uses = Vec::new();
        if last {
            content.push(json!({"type": "tool_use", "id": format!("toolu_01{}", r.b58(22)), "name": "attempt_completion", "input": {"result": "The --station flag is in; it defaults to DEFAULT_STATION."}}));
        } else {
            let n = if step == 0 { 3 } else { 1 };
            for _ in 0..n {
                let file = *r.pick(FILES);
                let (name, input) = if r.chance(70) {
                    ("read_file", json!({"path": file}))
                } else {
                    (
                        "replace_in_file",
                        json!({"path": file, "diff": format!("------- SEARCH\n{}\n=======\n{}\n+++++++ REPLACE", code_line(&mut r, 1), code_line(&mut r, 1))}),
                    )
                };
                let id = format!("toolu_01{}", r.b58(22));
                content.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
                uses.push((name, file));
            }
        }
        let output: u64 = content.iter().map(|c| toks(&c.to_string())).sum::<u64>() + 12;
        let input = r.range(3, 12);
        let cache_read = cached.min(sent - input);
        let cache_write = sent - input - cache_read;
        let cost = (input as f64 * 3.0
            + cache_write as f64 * 3.75
            + cache_read as f64 * 0.3
            + output as f64 * 15.0)
            / 1e6;
        let request = history.last().unwrap()["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string();
        ui.push(json!({"ts": t, "type": "say", "say": "api_req_started",
            "text": json!({"request": request, "tokensIn": input, "tokensOut": output, "cacheWrites": cache_write, "cacheReads": cache_read, "cost": cost}).to_string(),
            "modelInfo": model, "conversationHistoryIndex": ci}));
        // The range in force is stamped on every message; the request that decided a truncation
        // started under the old one.
        if let Some(d) = &deleted {
            if ui
                .iter()
                .any(|e| e.get("conversationHistoryDeletedRange").is_some())
            {
                ui[req_at]["conversationHistoryDeletedRange"] = d.clone();
            }
        }
        t += r.range(3_000, 12_000) as i64;
        let mut say = |kind: &str, text: String, t: i64| {
            let mut e = json!({"ts": t, "type": "say", "say": kind, "text": text, "conversationHistoryIndex": ci + 1});
            if let Some(d) = &deleted {
                e["conversationHistoryDeletedRange"] = d.clone();
            }
            ui.push(e);
        };
        say(
            "reasoning",
            content[0]["thinking"].as_str().unwrap().into(),
            t,
        );
        say("text", content[1]["text"].as_str().unwrap().into(), t + 10);
        history.push(json!({"role": "assistant", "content": content, "modelInfo": model,
            "metrics": {"tokens": {"prompt": input, "completion": output, "cached": cache_read + cache_write}}}));
        cached = sent;
        context = sent + output;
        if last {
            say(
                "completion_result",
                "The --station flag is in; it defaults to DEFAULT_STATION.".into(),
                t + 20,
            );
            break;
        }
        // Cline runs one tool per message and refuses the rest.
        let mut results = Vec::new();
        for (k, (name, file)) in uses.iter().enumerate() {
            let text = if k == 0 {
                let body = if *name == "read_file" {
                    let n = r.range(20, 60) as usize;
                    listing(&mut r, file, n, 1)
                } else {
                    format!("The content was successfully saved to {file}.")
                };
                say("tool", json!({"tool": if *name == "read_file" { "readFile" } else { "editedExistingFile" }, "path": file}).to_string(), t + 30);
                format!("[{name} for '{file}'] Result:\n{body}")
            } else {
                format!("Tool [{name}] was not executed because a tool has already been used in this message. Only one tool may be used per message. You must assess the first tool's result before proceeding to use the next tool.")
            };
            context += toks(&text);
            results.push(json!({"type": "text", "text": text}));
        }
        t += r.range(500, 3_000) as i64;
        results.push(json!({"type": "text", "text": env(t)}));
        context += 60;
        history.push(json!({"role": "user", "content": results}));
    }
    let compact = |v: &Vec<Value>| serde_json::to_string(v).unwrap();
    fs::write(dir.join("api_conversation_history.json"), compact(&history))?;
    fs::write(dir.join("ui_messages.json"), compact(&ui))?;
    let meta = json!({"files_in_context": [{"path": "src/predict.rs", "record_state": "active", "record_source": "read_tool", "cline_read_date": t}],
        "model_usage": [{"ts": t, "model_id": "claude-sonnet-4-5", "model_provider_id": "anthropic", "mode": "act"}],
        "environment_history": []});
    fs::write(
        dir.join("task_metadata.json"),
        serde_json::to_string_pretty(&meta).unwrap(),
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// OpenCode (export JSON, JSON-file storage, SQLite store)

struct OcSession {
    info: Value,
    /// (message info, parts)
    messages: Vec<(Value, Vec<Value>)>,
}

/// One OpenCode session: steps of several calls per assistant message, a tool error, a pruned
/// tool output, a `task` call whose child session is returned too, and an automatic compaction
/// that keeps a tail.
fn opencode_sessions() -> Vec<OcSession> {
    let mut r = Rng(0x0C0D_E5E5);
    let mut t: i64 = 1_772_800_000_000;
    let ses = format!("ses_{}", r.b58(26));
    let child = format!("ses_{}", r.b58(26));
    let mut n = 0u32;
    let mut id = |prefix: &str, t: i64| {
        n += 1;
        format!("{prefix}_{:012x}{:03}{}", t, n, "a")
    };
    let model = json!({"providerID": "anthropic", "modelID": "claude-sonnet-4-5"});
    let mut messages = Vec::new();
    let mut context = 10_400u64;
    let mut cached = 0u64;
    let mut cost_total = 0.0;
    let mut tail_start = String::new();
    for (turn, req) in REQUESTS[7..10].iter().enumerate() {
        t += 60_000;
        let uid = id("msg", t);
        if turn == 2 {
            tail_start = uid.clone();
        }
        messages.push((
            json!({"id": uid, "sessionID": ses, "role": "user", "time": {"created": t}, "agent": "build", "model": model, "summary": {"diffs": []}}),
            vec![json!({"id": id("prt", t), "sessionID": ses, "messageID": uid, "type": "text", "text": req})],
        ));
        context += toks(req);
        // Two assistant messages per request, the first with several steps.
        for (k, steps) in [3u64, 1].into_iter().enumerate() {
            t += 1_000;
            let aid = id("msg", t);
            let mut parts = Vec::new();
            let (mut m_in, mut m_out, mut m_read, mut m_write, mut m_cost) = (0, 0, 0, 0, 0.0);
            for step in 0..steps {
                let last = k == 1 && step == steps - 1;
                t += r.range(2_000, 9_000) as i64;
                parts.push(json!({"id": id("prt", t), "sessionID": ses, "messageID": aid, "type": "step-start", "snapshot": r.hex(40)}));
                let mut out_text = 0;
                if r.chance(60) {
                    let text = r.pick(REPLIES).to_string();
                    out_text += toks(&text);
                    parts.push(json!({"id": id("prt", t), "sessionID": ses, "messageID": aid, "type": "reasoning", "text": text, "time": {"start": t, "end": t + 900}, "metadata": {"anthropic": {"signature": r.b58(120)}}}));
                }
                let reasoning = if out_text > 0 {
                    out_text + r.range(20, 200)
                } else {
                    0
                };
                let text = r.pick(REPLIES).to_string();
                parts.push(json!({"id": id("prt", t), "sessionID": ses, "messageID": aid, "type": "text", "text": text, "time": {"start": t, "end": t + 400}}));
                let mut results = 0;
                if !last {
                    let (name, input, result, err) = tool_step(&mut r, &mut None);
                    let tool = match name.as_str() {
                        "Read" => "read",
                        "Edit" => "edit",
                        "Grep" => "grep",
                        "Glob" => "glob",
                        _ => "bash",
                    };
                    let call = format!("toolu_01{}", r.b58(22));
                    let state = if turn == 0 && step == 0 && k == 0 {
                        // Pruned later by OpenCode: the model sees a placeholder.
                        json!({"status": "completed", "input": input, "output": result, "title": tool, "metadata": {}, "time": {"start": t, "end": t + 300, "compacted": t + 400_000}})
                    } else if err {
                        json!({"status": "error", "input": input, "error": result, "time": {"start": t, "end": t + 300}})
                    } else {
                        json!({"status": "completed", "input": input, "output": result, "title": tool, "metadata": {}, "time": {"start": t, "end": t + 300}})
                    };
                    results += toks(&result);
                    parts.push(json!({"id": id("prt", t), "sessionID": ses, "messageID": aid, "type": "tool", "callID": call, "tool": tool, "state": state}));
                }
                if turn == 1 && k == 1 {
                    // A subagent: the task tool starts a child session.
                    let call = format!("toolu_01{}", r.b58(22));
                    parts.push(json!({"id": id("prt", t), "sessionID": ses, "messageID": aid, "type": "tool", "callID": call, "tool": "task",
                        "state": {"status": "completed", "input": {"description": "Find every tz_offset use", "prompt": "List every place tz_offset is read or written.", "subagent_type": "general"},
                        "output": "tz_offset is read in src/predict.rs:88 and src/station.rs:41.", "title": "Find every tz_offset use", "metadata": {"sessionId": child}, "time": {"start": t, "end": t + 20_000}}}));
                }
                let output = toks(&text) + 30 + out_text;
                let input = r.range(2, 9);
                let cache_read = cached.min(context - input);
                let cache_write = context - input - cache_read;
                let cost = (input as f64 * 3.0
                    + cache_write as f64 * 3.75
                    + cache_read as f64 * 0.3
                    + (output + reasoning) as f64 * 15.0)
                    / 1e6;
                t += 500;
                parts.push(json!({"id": id("prt", t), "sessionID": ses, "messageID": aid, "type": "step-finish", "reason": if last { "stop" } else { "tool-calls" }, "snapshot": r.hex(40), "cost": cost,
                    "tokens": {"total": context + output + reasoning, "input": input, "output": output, "reasoning": reasoning, "cache": {"read": cache_read, "write": cache_write}}}));
                m_in += input;
                m_out += output;
                m_read += cache_read;
                m_write += cache_write;
                m_cost += cost;
                cost_total += cost;
                cached = context;
                context += output + reasoning + results + 30;
            }
            messages.push((
                json!({"id": aid, "sessionID": ses, "role": "assistant", "parentID": messages.last().map(|(i, _): &(Value, Vec<Value>)| i["id"].clone()), "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build", "agent": "build",
                    "path": {"cwd": ROOT, "root": ROOT}, "cost": m_cost, "tokens": {"input": m_in, "output": m_out, "reasoning": 0, "cache": {"read": m_read, "write": m_write}},
                    "time": {"created": t - 10_000, "completed": t}, "finish": if k == 1 { "stop" } else { "tool-calls" }}),
                parts,
            ));
        }
        if turn == 1 {
            // An automatic compaction: the request, then the summary, keeping the next turn.
            t += 5_000;
            let cid = id("msg", t);
            messages.push((
                json!({"id": cid, "sessionID": ses, "role": "user", "time": {"created": t}, "agent": "build", "model": model}),
                vec![json!({"id": id("prt", t), "sessionID": ses, "messageID": cid, "type": "compaction", "auto": true})],
            ));
            t += 8_000;
            let sid = id("msg", t);
            let summary = "## Goal\nSpeed up 30-day predictions; fix tz handling west of -120°.\n\n## Done\n- node factors cached per day in src/predict.rs\n- tz_offset applied once, in station local time\n\n## Next\n- CSV export of predictions";
            let input = r.range(2, 9);
            let cost = (input as f64 * 3.0
                + (context - input) as f64 * 3.75
                + toks(summary) as f64 * 15.0)
                / 1e6;
            cost_total += cost;
            messages.push((
                json!({"id": sid, "sessionID": ses, "role": "assistant", "parentID": cid, "summary": true, "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "compaction", "agent": "compaction",
                    "path": {"cwd": ROOT, "root": ROOT}, "cost": cost, "tokens": {"input": input, "output": toks(summary), "reasoning": 0, "cache": {"read": 0, "write": context - input}},
                    "time": {"created": t, "completed": t + 6_000}, "finish": "stop"}),
                vec![
                    json!({"id": id("prt", t), "sessionID": ses, "messageID": sid, "type": "step-start"}),
                    json!({"id": id("prt", t), "sessionID": ses, "messageID": sid, "type": "text", "text": summary}),
                    json!({"id": id("prt", t), "sessionID": ses, "messageID": sid, "type": "step-finish", "reason": "stop", "cost": cost,
                        "tokens": {"total": context + toks(summary), "input": input, "output": toks(summary), "reasoning": 0, "cache": {"read": 0, "write": context - input}}}),
                ],
            ));
            context = 10_400 + toks(summary) + 40;
            cached = 0;
        }
    }
    // The compaction kept the tail from the last request on: it is the request after it here, so
    // mark the compaction part with the first message that follows.
    for (_, parts) in &mut messages {
        for p in parts.iter_mut() {
            if p["type"] == "compaction" {
                p["tail_start_id"] = json!(tail_start);
            }
        }
    }
    let root_info = json!({"id": ses, "slug": "brave-otter", "projectID": "4f1d2c9a8b7e6d5c4b3a29180716253443526170", "directory": ROOT, "title": "Station flag and tz fix",
        "version": "1.2.27", "time": {"created": 1_772_800_000_000i64, "updated": t}, "cost": cost_total});
    // The child session the task call started.
    let mut ct = 1_772_800_000_000i64 + 200_000;
    let cu = format!("msg_{:012x}900a", ct);
    let ca = format!("msg_{:012x}901a", ct + 1);
    let child_msgs = vec![
        (
            json!({"id": cu, "sessionID": child, "role": "user", "time": {"created": ct}, "agent": "general", "model": model}),
            vec![
                json!({"id": format!("prt_{:012x}902a", ct), "sessionID": child, "messageID": cu, "type": "text", "text": "List every place tz_offset is read or written."}),
            ],
        ),
        (
            json!({"id": ca, "sessionID": child, "role": "assistant", "parentID": cu, "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "general", "agent": "general",
            "path": {"cwd": ROOT, "root": ROOT}, "cost": 0.0397, "tokens": {"input": 4, "output": 41, "reasoning": 0, "cache": {"read": 0, "write": 10_418}}, "time": {"created": ct + 1, "completed": ct + 9_000}, "finish": "stop"}),
            vec![
                json!({"id": format!("prt_{:012x}903a", ct), "sessionID": child, "messageID": ca, "type": "step-start"}),
                json!({"id": format!("prt_{:012x}904a", ct), "sessionID": child, "messageID": ca, "type": "text", "text": "tz_offset is read in src/predict.rs:88 and src/station.rs:41."}),
                json!({"id": format!("prt_{:012x}905a", ct), "sessionID": child, "messageID": ca, "type": "step-finish", "reason": "stop", "cost": 0.0397,
                "tokens": {"total": 10_463, "input": 4, "output": 41, "reasoning": 0, "cache": {"read": 0, "write": 10_418}}}),
            ],
        ),
    ];
    ct += 9_000;
    let child_info = json!({"id": child, "slug": "quiet-heron", "projectID": "4f1d2c9a8b7e6d5c4b3a29180716253443526170", "directory": ROOT, "parentID": ses,
        "title": "Find every tz_offset use (@general subagent)", "version": "1.2.27", "time": {"created": 1_772_800_200_000i64, "updated": ct}});
    vec![
        OcSession {
            info: root_info,
            messages,
        },
        OcSession {
            info: child_info,
            messages: child_msgs,
        },
    ]
}

fn opencode(root: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let dir = root.join("opencode");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    let sessions = opencode_sessions();
    // `opencode export <root session>`
    let s = &sessions[0];
    let export = json!({"info": s.info, "messages": s.messages.iter().map(|(i, p)| json!({"info": i, "parts": p})).collect::<Vec<_>>()});
    // Keys as OpenCode writes them: `info` first, `id` first in it (serde_json sorts them).
    let info = serde_json::to_string_pretty(&export["info"])?;
    let info = reorder_id_first(&info);
    fs::write(
        dir.join(format!("{}.json", s.info["id"].as_str().unwrap())),
        format!(
            "{{\n  \"info\": {},\n  \"messages\": {}\n}}\n",
            info.replace('\n', "\n  "),
            serde_json::to_string_pretty(&export["messages"])?.replace('\n', "\n  ")
        ),
    )?;
    // The JSON-file storage.
    let st = dir.join("storage");
    for s in &sessions {
        let ses = s.info["id"].as_str().unwrap();
        let proj = st
            .join("session")
            .join(s.info["projectID"].as_str().unwrap());
        fs::create_dir_all(&proj)?;
        fs::write(
            proj.join(format!("{ses}.json")),
            reorder_id_first(&serde_json::to_string_pretty(&s.info)?),
        )?;
        for (m, parts) in &s.messages {
            let mid = m["id"].as_str().unwrap();
            let md = st.join("message").join(ses);
            fs::create_dir_all(&md)?;
            fs::write(
                md.join(format!("{mid}.json")),
                serde_json::to_string_pretty(m)?,
            )?;
            let pd = st.join("part").join(mid);
            fs::create_dir_all(&pd)?;
            for p in parts {
                fs::write(
                    pd.join(format!("{}.json", p["id"].as_str().unwrap())),
                    serde_json::to_string_pretty(p)?,
                )?;
            }
        }
    }
    // The SQLite store (`session`, `message`, `part`; each object in `data` without its ids).
    let db = dir.join("opencode.db");
    let c = rusqlite::Connection::open(&db)?;
    c.execute_batch(
        "PRAGMA journal_mode = DELETE;
         CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
         CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);",
    )?;
    let strip = |v: &Value, keys: &[&str]| {
        let mut v = v.clone();
        for k in keys {
            v.as_object_mut().unwrap().remove(*k);
        }
        v.to_string()
    };
    for s in &sessions {
        let i = &s.info;
        c.execute(
            "INSERT INTO session VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            rusqlite::params![
                i["id"].as_str(),
                i["projectID"].as_str(),
                i["parentID"].as_str(),
                i["slug"].as_str(),
                i["directory"].as_str(),
                i["title"].as_str(),
                i["version"].as_str(),
                i["time"]["created"].as_i64(),
                i["time"]["updated"].as_i64()
            ],
        )?;
        for (m, parts) in &s.messages {
            let tm = m["time"]["created"].as_i64();
            c.execute(
                "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
                rusqlite::params![
                    m["id"].as_str(),
                    m["sessionID"].as_str(),
                    tm,
                    strip(m, &["id", "sessionID"])
                ],
            )?;
            for p in parts {
                c.execute(
                    "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                    rusqlite::params![
                        p["id"].as_str(),
                        p["messageID"].as_str(),
                        p["sessionID"].as_str(),
                        tm,
                        strip(p, &["id", "sessionID", "messageID"])
                    ],
                )?;
            }
        }
    }
    drop(c);
    Ok(())
}

/// serde_json writes keys sorted; OpenCode writes `id` first (and the sniffing looks for it).
fn reorder_id_first(pretty: &str) -> String {
    let v: Value = serde_json::from_str(pretty).unwrap();
    let id = v["id"].clone();
    let mut rest = v.clone();
    rest.as_object_mut().unwrap().remove("id");
    let body = serde_json::to_string_pretty(&rest).unwrap();
    format!("{{\n  \"id\": {},{}", id, &body[1..])
}

// ---------------------------------------------------------------------------------------------
// GitHub Copilot CLI (session-state/<id>/events.jsonl)

fn copilot(root: &Path) -> std::io::Result<()> {
    let mut r = Rng(0xC0_B1_07);
    let sid = r.uuid();
    let dir = root.join("copilot-cli").join(&sid);
    fs::create_dir_all(&dir)?;
    let mut t: i64 = 1_772_900_000_000;
    let mut out = Vec::new();
    let mut parent = Value::Null;
    let mut ev = |out: &mut Vec<String>, r: &mut Rng, t: i64, kind: &str, data: Value| {
        let id = r.uuid();
        out.push(json!({"type": kind, "data": data, "id": id, "timestamp": format_ms(t), "parentId": parent}).to_string());
        parent = json!(id);
    };
    ev(
        &mut out,
        &mut r,
        t,
        "session.start",
        json!({"sessionId": sid, "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.70", "startTime": format_ms(t), "context": {"cwd": ROOT, "gitRoot": ROOT, "branch": "main"}}),
    );
    ev(
        &mut out,
        &mut r,
        t + 900,
        "session.model_change",
        json!({"newModel": "claude-sonnet-4.5"}),
    );
    ev(
        &mut out,
        &mut r,
        t + 1_000,
        "system.message",
        json!({"role": "system", "content": "You are the GitHub Copilot CLI, a terminal assistant. Be concise.\n\n# Tools\nUse bash to run commands, view to read files, edit to change them."}),
    );
    let mut api = 0;
    for (turn, req) in REQUESTS[3..5].iter().enumerate() {
        t += 30_000;
        ev(
            &mut out,
            &mut r,
            t,
            "user.message",
            json!({"content": req, "transformedContent": format!("<current_datetime>{}</current_datetime>\n\n{req}", format_ms(t)), "attachments": []}),
        );
        ev(
            &mut out,
            &mut r,
            t + 10,
            "assistant.turn_start",
            json!({"turnId": turn.to_string()}),
        );
        let steps = r.range(3, 5);
        for step in 0..=steps {
            t += r.range(2_000, 8_000) as i64;
            let last = step == steps;
            let mut requests = Vec::new();
            let mut results = Vec::new();
            if !last {
                for _ in 0..r.range(1, 2) {
                    let (name, input, result, err) = tool_step(&mut r, &mut None);
                    let (tool, args) = match name.as_str() {
                        "Read" => ("view", json!({"path": input["file_path"]})),
                        "Edit" => (
                            "edit",
                            json!({"path": input["file_path"], "old_str": input["old_string"], "new_str": input["new_string"]}),
                        ),
                        _ => (
                            "bash",
                            json!({"command": input.get("command").cloned().unwrap_or(json!("rg -n tz_offset src")), "description": "Run it"}),
                        ),
                    };
                    let id = format!("toolu_bdrk_01{}", r.b58(22));
                    requests.push(json!({"toolCallId": id, "name": tool, "arguments": args, "type": "function"}));
                    results.push((id, tool, args, result, err));
                }
            }
            let content = if last {
                "Done: predictions west of -120° now use the station's tz_offset once."
            } else if r.chance(50) {
                ""
            } else {
                *r.pick(REPLIES)
            };
            let reasoning = r.pick(REPLIES).to_string();
            api += 1;
            let (message_id, opaque, api_id) = (
                r.uuid(),
                r.b58(64),
                format!("msg_bdrk_{api:02}{}", r.b58(20)),
            );
            let output = toks(content)
                + toks(&reasoning)
                + requests.iter().map(|q| toks(&q.to_string())).sum::<u64>();
            ev(
                &mut out,
                &mut r,
                t,
                "assistant.message",
                json!({"messageId": message_id, "model": "claude-sonnet-4.5", "content": content, "toolRequests": requests,
                "reasoningText": reasoning, "reasoningOpaque": opaque, "outputTokens": output, "apiCallId": api_id, "turnId": turn.to_string()}),
            );
            for (id, tool, args, result, err) in results {
                ev(
                    &mut out,
                    &mut r,
                    t + 100,
                    "tool.execution_start",
                    json!({"toolCallId": id, "toolName": tool, "arguments": args}),
                );
                let data = if err {
                    json!({"toolCallId": id, "success": false, "error": {"message": result, "code": "failure"}})
                } else {
                    json!({"toolCallId": id, "success": true, "result": {"content": result, "detailedContent": result}})
                };
                ev(&mut out, &mut r, t + 900, "tool.execution_complete", data);
            }
            if turn == 0 && step == 1 {
                ev(
                    &mut out,
                    &mut r,
                    t + 1_000,
                    "system.notification",
                    json!({"content": "<system_notification>\nShell command \"cargo test\" (shellId: 3) has completed successfully.\n</system_notification>", "kind": {"type": "shell_completed", "shellId": "3", "exitCode": 0}}),
                );
            }
        }
        ev(
            &mut out,
            &mut r,
            t + 50,
            "assistant.turn_end",
            json!({"turnId": turn.to_string()}),
        );
        if turn == 0 {
            // Copilot CLI compacted the history between the two requests.
            t += 5_000;
            ev(&mut out, &mut r, t, "session.compaction_start", json!({}));
            ev(
                &mut out,
                &mut r,
                t + 7_000,
                "session.compaction_complete",
                json!({"success": true, "preCompactionTokens": 41_200, "postCompactionTokens": 6_100,
                "summaryContent": "<summary>\nThe user asked why predictions near midnight are an hour off west of -120°. tz_offset was applied twice (station.rs and predict.rs); predict.rs now leaves it to station.rs.\n</summary>"}),
            );
        }
    }
    write_lines(&dir.join("events.jsonl"), &out)
}

fn native(root: &Path) -> ctxlab::Result<()> {
    let dir = root.join("native");
    fs::create_dir_all(&dir).map_err(|e| ctxlab::Error::io(&dir, e))?;
    for (src, name) in [
        (
            root.join("openai").join("helpdesk-two-agents.json"),
            "helpdesk-two-agents",
        ),
        (
            only_file(&root.join("pi"))?,
            "pi-negative-phase-with-compaction",
        ),
    ] {
        let s = ctxlab::formats::load_file(&src)?;
        let path = dir.join(format!("{name}.ctxlab.jsonl"));
        let f = fs::File::create(&path).map_err(|e| ctxlab::Error::io(&path, e))?;
        ctxlab::formats::native::write(&s, f).map_err(|e| ctxlab::Error::io(&path, e))?;
    }
    Ok(())
}

fn only_file(dir: &Path) -> ctxlab::Result<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| ctxlab::Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    files
        .into_iter()
        .next()
        .ok_or_else(|| ctxlab::Error::Invalid(format!("{}: empty", dir.display())))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root: PathBuf = std::env::args().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples"),
        PathBuf::from,
    );
    claude_code(&root)?;
    codex(&root)?;
    pi(&root)?;
    openai(&root)?;
    fuseraft(&root)?;
    gemini(&root)?;
    cline_task(&root)?;
    opencode(&root)?;
    copilot(&root)?;
    native(&root)?;
    println!("samples written to {}", root.display());
    Ok(())
}
