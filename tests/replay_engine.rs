//! The replay engine through its public API: baselines, faults of real plugin libraries caught
//! with the plugin's name, the call index and the reason, the cost/cache model and recall.
//! Plugin `.so` files come from `cargo build --workspace` (`make test` runs it first).

use ctxlab::model::*;
use ctxlab::plugin_host::{checkout_dir, Registry, StrategyEntry};
use ctxlab::replay::{self, Budget, CompactionKind, KeptState, ReplayOptions, StrategySpec};
use ctxlab::tokens::{self, TokenCounter};
use ctxlab::Error;
use serde_json::json;
use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn built(lib: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = checkout_dir(&exe).expect("test binary inside a cargo target folder");
    let p = dir.join(format!("{DLL_PREFIX}{lib}{DLL_SUFFIX}"));
    assert!(
        p.is_file(),
        "{} is missing: run `cargo build --workspace` first (`make test` does it)",
        p.display()
    );
    p
}

fn fixture(lib: &str, id: &str) -> StrategyEntry {
    let mut reg = Registry::new();
    reg.load_path(&built(lib))
        .unwrap_or_else(|r| panic!("{lib} refused: {r}"));
    reg.find(id)
        .unwrap_or_else(|| panic!("{lib} has no strategy {id}"))
        .clone()
}

fn counter() -> Arc<dyn TokenCounter> {
    tokens::counter("chars4").unwrap()
}

fn opts<'a>() -> ReplayOptions<'a> {
    ReplayOptions::new(counter())
}

struct Builder(Session);

impl Builder {
    fn new(model: &str) -> Builder {
        let mut s = Session {
            id: "built".into(),
            ..Session::default()
        };
        let a = s.agent_index("main");
        s.agents[a].model = Some(model.into());
        Builder(s)
    }
    fn push(&mut self, role: Role, parts: Vec<Part>) -> MsgIdx {
        self.0.messages.push(Message {
            agent: 0,
            role,
            parts,
            timestamp: None,
            flags: MessageFlags::default(),
            source: SourcePos::default(),
        });
        self.0.messages.len() - 1
    }
    fn text(&mut self, role: Role, t: &str) -> MsgIdx {
        self.push(role, vec![Part::Text { text: t.into() }])
    }
    /// One call whose reply is the next message (added by the caller).
    fn call(&mut self, ts: Option<i64>) -> usize {
        let end = self.0.messages.len();
        self.0.calls.push(Call {
            agent: 0,
            context_end: end,
            reply: Some(end),
            usage: None,
            model: None,
            timestamp: ts,
            request_id: None,
            source: SourcePos::default(),
        });
        self.0.calls.len() - 1
    }
    /// A turn: user asks, the assistant calls a tool, gets the result, answers.
    fn turn(&mut self, i: usize, pad: usize) {
        let file = format!("src/module_{i}.rs");
        self.text(Role::User, "Another thing before we start.");
        self.text(
            Role::User,
            &format!("Please look at {file} {}", "x".repeat(pad)),
        );
        self.call(Some(i as i64 * 60_000));
        let id = format!("toolu_{i}");
        self.push(
            Role::Assistant,
            vec![Part::ToolCall {
                id: id.clone(),
                name: "read".into(),
                args: format!("{{\"path\": \"{file}\"}}"),
            }],
        );
        self.push(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: id,
                content: format!("fn handler_{i}() {{ {} }}", "y".repeat(pad)),
                is_error: false,
            }],
        );
        self.call(Some(i as i64 * 60_000 + 1_000));
        // The answer uses facts from this turn, and every tenth one also from the first turn.
        let old = if i % 10 == 9 {
            " calls handler_0 from src/module_0.rs"
        } else {
            ""
        };
        self.text(Role::Assistant, &format!("handler_{i} in {file}{old}"));
    }
    fn session(turns: usize, pad: usize) -> Session {
        let mut b = Builder::new("claude-sonnet-4-5-20250929");
        b.text(Role::System, "You are a coding agent working on ctxlab.");
        for i in 0..turns {
            b.turn(i, pad);
        }
        b.0
    }
}

fn plugin(entry: StrategyEntry, params: serde_json::Value) -> StrategySpec {
    StrategySpec::Plugin { entry, params }
}

fn replay_error(r: ctxlab::Result<replay::Run>) -> (String, usize, String) {
    match r {
        Err(Error::Replay {
            strategy,
            call,
            reason,
        }) => (strategy, call, reason),
        Err(e) => panic!("expected a replay error, got {e}"),
        Ok(_) => panic!("expected a replay error, the run succeeded"),
    }
}

#[test]
fn none_keeps_everything_and_counts_the_full_history() {
    let s = Builder::session(6, 200);
    let run = replay::run(&s, StrategySpec::None, &opts()).unwrap();
    let raw = replay::recorded_raw_tokens(&s, &*counter());
    assert_eq!(run.samples.len(), s.calls.len());
    for (sample, raw) in run.samples.iter().zip(&raw) {
        assert_eq!(Some(sample.raw_tokens), *raw);
        assert_eq!(
            sample.input_tokens, sample.raw_tokens,
            "identity calibration"
        );
    }
    let m = &run.metrics;
    assert_eq!(
        m.total_input_tokens,
        run.samples.iter().map(|s| s.input_tokens).sum::<u64>()
    );
    assert_eq!(m.peak_context, run.samples.last().unwrap().input_tokens);
    assert!(m.compactions.is_empty());
    assert_eq!(m.lost_tokens, 0);
    // Every fact a reply needs is still there: recall 1 both ways.
    assert!(m.recall.needed > 0);
    assert_eq!((m.recall.lower, m.recall.upper), (Some(1.0), Some(1.0)));
    // Budget from the model table by the log's model.
    assert_eq!(run.budget.context_window, 200_000);
    // Cumulative input is the running sum per agent.
    let last = run.samples.last().unwrap();
    assert_eq!(last.cumulative_input, m.total_input_tokens);
}

#[test]
fn cache_model_reads_the_unchanged_prefix_within_the_ttl() {
    let s = Builder::session(4, 100);
    let run = replay::run(&s, StrategySpec::None, &opts()).unwrap();
    let first = &run.samples[0];
    assert_eq!(
        (first.cache_read, first.cache_write),
        (0, first.input_tokens)
    );
    // Call 1 is one second after call 0: everything call 0 sent is read from the cache.
    let second = &run.samples[1];
    assert_eq!(second.cache_read, first.input_tokens);
    assert_eq!(second.cache_write, second.input_tokens - first.input_tokens);
    // Call 2 comes 59 s after call 1: still warm with the 5-minute TTL.
    assert!(run.samples[2].cache_read > 0);
    // With calls 10 minutes apart, the 5-minute cache is cold at every request.
    let mut cold = s.clone();
    for c in &mut cold.calls {
        c.timestamp = c.timestamp.map(|t| t * 10);
    }
    let run = replay::run(&cold, StrategySpec::None, &opts()).unwrap();
    assert_eq!(run.samples[2].cache_read, 0, "600 s gap > 5 min TTL");
    let mut o = opts();
    o.cache_ttl = replay::CacheTtl::OneHour;
    let run1h = replay::run(&cold, StrategySpec::None, &o).unwrap();
    assert!(run1h.samples[2].cache_read > 0, "600 s gap < 1 h TTL");
    // Priced with claude-sonnet-4-5: a cache read costs a tenth of input, so warm is cheaper.
    assert!(run1h.metrics.cost.cache_read_usd > 0.0);
    assert_eq!(run.metrics.cost.unpriced_calls, 0);
}

#[test]
fn unknown_model_without_a_budget_says_what_to_pass() {
    let mut s = Builder::session(1, 10);
    s.agents[0].model = Some("mystery-model-9".into());
    let e = replay::run(&s, StrategySpec::None, &opts())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mystery-model-9") && e.contains("--window"),
        "{e}"
    );
    let mut o = opts();
    o.budget = Some(Budget {
        context_window: 1000,
        max_output: 100,
        reserve: 0,
    });
    let run = replay::run(&s, StrategySpec::None, &o).unwrap();
    assert_eq!(run.metrics.cost.unpriced_calls, 2);
}

#[test]
fn recorded_applies_the_logs_compaction_and_reproduces_recorded_usage() {
    let mut b = Builder::new("claude-sonnet-4-5");
    b.text(Role::System, "system prompt");
    for i in 0..3 {
        b.turn(i, 400);
    }
    let kept = b.text(Role::User, "keep this message src/keep.rs");
    let boundary = b.0.messages.len();
    let summary = b.text(
        Role::User,
        "Summary: worked on src/module_0.rs and handler_0.",
    );
    b.0.messages[summary].flags.is_summary = true;
    b.0.compactions.push(RecordedCompaction {
        agent: 0,
        at_message: boundary,
        trigger: "auto".into(),
        pre_tokens: Some(5_000),
        summary: Some(summary),
        kept_from: Some(kept),
        timestamp: None,
        inferred: false,
        source: SourcePos::default(),
    });
    b.turn(3, 50);
    let mut s = b.0;
    // Recorded usage = 3,000 tokens of overhead + 1.1 × the counted context.
    let raw = replay::recorded_raw_tokens(&s, &*counter());
    for (c, r) in s.calls.iter_mut().zip(&raw) {
        let ctx = 3_000 + (r.unwrap() as f64 * 1.1).round() as u64;
        c.usage = Some(Usage {
            input: 10,
            output: 50,
            cache_read: ctx - 10,
            ..Usage::default()
        });
    }
    let cal = tokens::calibrate_session(&s, &*counter()).expect("usage recorded");
    let mut o = opts();
    o.calibration = Some(cal);
    let run = replay::run(&s, StrategySpec::Recorded, &o).unwrap();
    for sample in &run.samples {
        let rec = sample.recorded.unwrap().context_tokens();
        let err = (sample.input_tokens as f64 - rec as f64).abs() / rec as f64;
        assert!(
            err < 0.001,
            "call {}: {} vs recorded {rec}",
            sample.call,
            sample.input_tokens
        );
    }
    let r = run.recorded.as_ref().unwrap();
    assert!(r.input_mean_ape < 0.1, "{}", r.input_mean_ape);
    assert_eq!(run.metrics.total_output_tokens, 50 * s.calls.len() as u64);
    assert_eq!(run.metrics.compactions[&CompactionKind::Recorded].count, 1);
    let comp = &run.compactions[0];
    assert_eq!(
        comp.context_before, 5_000,
        "the log's own pre-compaction tokens"
    );
    assert!(comp.context_after < comp.context_before);
    // The context shrinks at the boundary and `none` (uncompacted history, no summary) does not.
    let at = comp.call;
    assert!(run.samples[at].input_tokens < run.samples[at - 1].input_tokens);
    let none = replay::run(&s, StrategySpec::None, &o).unwrap();
    assert!(none.samples[at].input_tokens > run.samples[at].input_tokens);
    // The compaction split no tool pair and touched nothing pinned.
    assert_eq!(
        (run.metrics.split_tool_pairs, run.metrics.pinned_violations),
        (0, 0)
    );
    // Cumulative since compaction restarts at the compaction call, plain cumulative does not.
    let s_at = &run.samples[at];
    assert_eq!(s_at.cumulative_since_compaction, s_at.input_tokens);
    assert!(s_at.cumulative_input > s_at.input_tokens);
}

#[test]
fn compact_fixture_summarizes_through_the_real_plugin_path() {
    let s = Builder::session(40, 300);
    let entry = fixture("ctxlab_fixture_compact", "fixture.compact");
    let mut o = opts();
    o.budget = Some(Budget {
        context_window: 4_000,
        max_output: 500,
        reserve: 0,
    });
    let run = replay::run(
        &s,
        plugin(entry, json!({"trigger": 0.8, "summary_tokens": 200})),
        &o,
    )
    .unwrap();
    let m = &run.metrics;
    let st = &m.compactions[&CompactionKind::Summarize];
    assert!(st.count >= 2, "{st:?}");
    assert!(st.tokens_after < st.tokens_before);
    assert!(
        m.compaction_overhead_tokens >= st.tokens_before,
        "summarizer reads what it replaces"
    );
    assert!(m.cost.summarizer_usd > 0.0);
    assert_eq!(m.lost_tokens, 0, "summaries lose nothing silently");
    assert!(m.peak_context < 4_000 + 1_000);
    // Summaries keep facts only in the upper bound.
    let (lo, hi) = (m.recall.lower.unwrap(), m.recall.upper.unwrap());
    assert!(lo < hi && hi <= 1.0, "lower {lo}, upper {hi}");
    // The plugin's events reach the run with their messages.
    assert!(run
        .events
        .iter()
        .any(|e| e.code == "compact" && e.message.contains("of window 4,000")));
    // A compaction invalidates the cached prefix: the call after it writes the cache again.
    let c = &run.compactions[0];
    let after = &run.samples[c.call];
    assert!(after.cache_read < run.samples[c.call - 1].input_tokens);
    // None with the same budget overflows the window; compact does not.
    let none = replay::run(&s, StrategySpec::None, &o).unwrap();
    assert!(none.metrics.calls_over_window > 0);
    assert!(m.calls_over_window < none.metrics.calls_over_window);
}

/// A session prepared once gives every strategy the run a fresh preparation gives, and is refused
/// for another session or another counter (its tokens would be wrong).
#[test]
fn a_prepared_session_is_shared_by_runs_and_refused_elsewhere() {
    let s = Builder::session(40, 300);
    let entry = fixture("ctxlab_fixture_compact", "fixture.compact");
    let mut o = opts();
    o.budget = Some(Budget {
        context_window: 4_000,
        max_output: 500,
        reserve: 0,
    });
    let prepared = replay::Prepared::new(&s, &*counter());
    for spec in [
        StrategySpec::None,
        StrategySpec::Recorded,
        plugin(entry, json!({"trigger": 0.8, "summary_tokens": 200})),
    ] {
        let fresh = replay::run(&s, spec.clone(), &o).unwrap();
        let shared = replay::run_prepared(&s, &prepared, spec.clone(), &o).unwrap();
        assert_eq!(fresh, shared, "{}", spec.id());
        let again = replay::run_prepared(&s, &prepared, spec, &o).unwrap();
        assert_eq!(fresh, again);
    }
    let other = Builder::session(41, 300);
    let e = replay::run_prepared(&other, &prepared, StrategySpec::None, &o).unwrap_err();
    assert!(e.to_string().contains("prepared session"), "{e}");
    let mut h = opts();
    h.counter = tokens::counter("heuristic").unwrap();
    h.budget = o.budget;
    let e = replay::run_prepared(&s, &prepared, StrategySpec::None, &h).unwrap_err();
    assert!(e.to_string().contains("chars4"), "{e}");
    // Counting only (no facts) is enough for the recorded contexts, not for a run.
    let counts = replay::Prepared::counts(&s, &*counter());
    assert_eq!(
        replay::recorded_raw_tokens_prepared(&s, &counts, &*counter()).unwrap(),
        replay::recorded_raw_tokens(&s, &*counter())
    );
    assert_eq!(
        replay::recorded_raw_tokens_prepared(&s, &prepared, &*counter()).unwrap(),
        replay::recorded_raw_tokens(&s, &*counter())
    );
    let e = replay::run_prepared(&s, &counts, StrategySpec::None, &o).unwrap_err();
    assert!(e.to_string().contains("counting only"), "{e}");
}

#[test]
fn stop_at_call_reports_what_the_context_kept() {
    let s = Builder::session(40, 300);
    let entry = fixture("ctxlab_fixture_compact", "fixture.compact");
    let mut o = opts();
    o.budget = Some(Budget {
        context_window: 4_000,
        max_output: 500,
        reserve: 0,
    });
    o.stop_at_call = Some(60);
    let run = replay::run(&s, plugin(entry, json!({})), &o).unwrap();
    assert_eq!(run.stopped_at, Some(60));
    assert_eq!(run.samples.len(), 61);
    assert!(run.kept.iter().any(|k| k.state == KeptState::Summary));
    let sent: u64 = run
        .kept
        .iter()
        .filter(|k| k.state != KeptState::Dropped)
        .map(|k| k.tokens)
        .sum();
    assert_eq!(sent, run.samples[60].raw_tokens);
}

#[test]
fn cancel_and_progress() {
    let s = Builder::session(3, 10);
    let flag = AtomicBool::new(true);
    let mut o = opts();
    o.cancel = Some(&flag);
    assert!(matches!(
        replay::run(&s, StrategySpec::None, &o),
        Err(Error::Cancelled)
    ));
    let seen = std::sync::Mutex::new(Vec::new());
    let progress = |done: usize, total: usize| seen.lock().unwrap().push((done, total));
    let mut o = opts();
    o.progress = Some(&progress);
    replay::run(&s, StrategySpec::None, &o).unwrap();
    assert_eq!(seen.lock().unwrap().last(), Some(&(6, 6)));
}

#[test]
fn a_panicking_plugin_fails_the_run_with_its_name_and_call() {
    let s = Builder::session(4, 10);
    let entry = fixture("ctxlab_fixture_panics", "fixture.panics");
    let (strategy, call, reason) = replay_error(replay::run(
        &s,
        plugin(entry.clone(), json!({"at_call": 3})),
        &opts(),
    ));
    assert!(
        strategy.contains("fixture.panics") && strategy.contains("fixture-panics"),
        "{strategy}"
    );
    assert_eq!(call, 3);
    assert!(reason.contains("panic"), "{reason}");
    // The process is alive and the same plugin replays again.
    let run = replay::run(&s, plugin(entry, json!({"at_call": 1000})), &opts()).unwrap();
    assert_eq!(run.samples.len(), 8);
}

#[test]
fn every_bad_op_fault_is_rejected_with_plugin_call_and_reason() {
    let s = Builder::session(6, 10);
    let entry = fixture("ctxlab_fixture_bad_ops", "fixture.bad-ops");
    let cases = [
        ("out_of_range", "past the context"),
        ("overlapping", "overlaps"),
        ("unsorted", "sorted"),
        ("touches_pinned", "pinned"),
        ("oversized_summary", "larger than"),
        // The host stops copying at the cap (ops past it are never read) and says so.
        (
            "too_many_ops",
            &*format!("more than {} ops", replay::MAX_OPS),
        ),
    ];
    for (fault, words) in cases {
        let (strategy, call, reason) = replay_error(replay::run(
            &s,
            plugin(entry.clone(), json!({"fault": fault, "at_call": 2})),
            &opts(),
        ));
        assert!(strategy.contains("fixture.bad-ops"), "{fault}: {strategy}");
        assert!(call >= 2 && call < s.calls.len(), "{fault}: call {call}");
        assert!(reason.contains(words), "{fault}: {reason}");
    }
}

#[test]
fn splitting_a_tool_pair_is_rejected() {
    let s = Builder::session(4, 10);
    let entry = fixture("ctxlab_fixture_split_pair", "fixture.split-pair");
    let (strategy, call, reason) = replay_error(replay::run(&s, plugin(entry, json!({})), &opts()));
    assert!(strategy.contains("fixture.split-pair"), "{strategy}");
    assert!(call < s.calls.len());
    assert!(
        reason.contains("separates a tool call from its result"),
        "{reason}"
    );
}

/// ABI 1.2: a strategy modelling a system that keeps orphan tool results (FIM One) announces the
/// split with an AllowSplit op; the host applies it and counts the separated pair.
#[test]
fn an_allowed_split_is_applied_and_counted() {
    let s = Builder::session(4, 10);
    let entry = fixture("ctxlab_fixture_split_pair", "fixture.split-pair");
    let run = replay::run(&s, plugin(entry, json!({"allow": true})), &opts()).unwrap();
    assert_eq!(run.samples.len(), s.calls.len());
    assert!(
        run.metrics.split_tool_pairs >= 1,
        "{:?}",
        run.metrics.split_tool_pairs
    );
    let none = replay::run(&s, StrategySpec::None, &opts()).unwrap();
    assert_eq!(none.metrics.split_tool_pairs, 0);
}

#[test]
fn usage_only_sessions_are_refused_with_a_reason() {
    let mut s = Builder::session(1, 10);
    s.usage_only = true;
    let e = replay::run(&s, StrategySpec::None, &opts())
        .unwrap_err()
        .to_string();
    assert!(e.contains("usage-only"), "{e}");
}

#[test]
fn runs_serialize_for_the_app_and_the_library() {
    let s = Builder::session(2, 10);
    let run = replay::run(&s, StrategySpec::None, &opts()).unwrap();
    let json = serde_json::to_string(&run).unwrap();
    let back: replay::Run = serde_json::from_str(&json).unwrap();
    // Floats may differ in the last bit after a round trip; everything else is exact.
    assert_eq!(back.samples.len(), run.samples.len());
    assert_eq!(
        back.metrics.total_input_tokens,
        run.metrics.total_input_tokens
    );
    assert_eq!(back.budget, run.budget);
}

/// `--decisions` calls a message edited when its text changed, even when the edit keeps its
/// length and its count: LibreChat wraps a tool input it truncates in `{ _truncated,
/// _originalChars }`, whose escapes can make it exactly as long as the input was (seen on
/// claude-code_posthog-impact and pi-agent_pi-mono at 8K); the record called those verbatim.
/// Here the example plugin masks a result whose text is as long as its placeholder.
#[test]
fn an_edit_that_keeps_length_and_count_is_recorded_as_edited() {
    let placeholder = "[tool result masked: only the last 1 are kept]";
    let mut b = Builder::new("claude-sonnet-4-5-20250929");
    b.text(Role::System, "You are a coding agent.");
    for i in 0..3 {
        b.text(Role::User, &format!("Read file {i}."));
        b.call(None);
        let id = format!("toolu_{i}");
        b.push(
            Role::Assistant,
            vec![Part::ToolCall {
                id: id.clone(),
                name: "read".into(),
                args: format!("{{\"path\": \"f{i}\"}}"),
            }],
        );
        // As long as the placeholder, so the masked message keeps its chars and tokens.
        let content = format!("{i}{}", "r".repeat(placeholder.len() - 1));
        b.push(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: id,
                content,
                is_error: false,
            }],
        );
        b.call(None);
        b.text(Role::Assistant, &format!("File {i} read."));
    }
    let entry = fixture("ctxlab_plugin_example", "example.keep-last-results");
    let mut o = opts();
    o.budget = Some(Budget {
        context_window: 100_000,
        max_output: 1_000,
        reserve: 0,
    });
    o.record_decisions = true;
    let run = replay::run(&b.0, plugin(entry, json!({ "keep_last": 1 })), &o).unwrap();
    let masked: Vec<_> = run
        .decisions
        .iter()
        .flat_map(|d| d.context.iter().map(move |m| (d.call, m)))
        .filter(|(_, m)| m.state == KeptState::Edited)
        .collect();
    // Each result but the last is masked once, at the call after the next result arrives.
    assert_eq!(masked.len(), 2, "{masked:#?}");
    for (_, m) in masked {
        assert_eq!((m.sent_chars, m.sent_tokens), (m.chars, m.tokens));
    }
}
