//! Shared by the differential tests: ctxlab's replay of a real log through the built CodeTether
//! plugin (its decisions recorded call by call), and codetether-agent 4.7.4's own derivation
//! (`src/session/context/derive.rs` `derive_context`) of the very histories the plugin was given.
#![allow(dead_code)]

use anyhow::Result;
use codetether_agent::provider::{
    CompletionRequest, CompletionResponse, ContentPart, Message, ModelInfo, Provider, Role,
    StreamChunk,
};
use codetether_agent::session::{derive_context, Session, SessionEvent};
use ctxlab::model;
use ctxlab::plugin_host::Registry;
use ctxlab::replay::{self, Budget, CallDecision, Run, StrategySpec};
use std::collections::HashMap;
use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The window every test replays at (CodeTether's own for a model its table does not know:
/// `provider/limits.rs` `context_window_for_model("unknown-model")` is 128,000).
pub const WINDOW: u64 = 128_000;
pub const MODEL: &str = "unknown-model";
/// The run's output reserve; CodeTether reserves its own `CODETETHER_SESSION_MAX_TOKENS` (8,192).
pub const MAX_OUTPUT: u64 = 8_192;

/// The three real logs of issue #19's measurement.
pub const LOGS: &[&str] = &[
    "claude-code_fundwise/claude-session.jsonl",
    "codex-cli_gildore-arena/codex-session.jsonl",
    "claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl",
];

/// The ctxlab checkout this package sits in.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

pub fn real_log(rel: &str) -> PathBuf {
    let p = repo().join("../shared/real-logs").join(rel);
    assert!(
        p.is_file(),
        "missing real log {}: ../shared/real-logs must sit beside the checkout",
        p.display()
    );
    p
}

/// The CodeTether plugin as `cargo build --workspace` built it in the checkout's target folder
/// (`CTXLAB_PLUGIN_DIR` overrides the folder).
pub fn registry() -> Registry {
    let dir = std::env::var_os("CTXLAB_PLUGIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/debug"));
    let p = dir.join(format!("{DLL_PREFIX}ctxlab_plugin_codetether{DLL_SUFFIX}"));
    assert!(
        p.is_file(),
        "{} is missing: run `cargo build --workspace` in the checkout first",
        p.display()
    );
    let mut reg = Registry::new();
    reg.load_path(&p)
        .unwrap_or_else(|r| panic!("{} refused: {r}", p.display()));
    reg
}

pub fn session(rel: &str) -> model::Session {
    ctxlab::formats::load_file(&real_log(rel)).unwrap()
}

/// The plugin's replay of `s` at [`WINDOW`] with `params`, every call's decision recorded.
pub fn plugin_run(s: &model::Session, params: serde_json::Value) -> Run {
    let reg = registry();
    let mut o = ctxlab::compare::Settings::default().options(s).unwrap();
    o.budget = Some(Budget {
        context_window: WINDOW,
        max_output: MAX_OUTPUT,
        reserve: 0,
    });
    o.record_decisions = true;
    let entry = reg.require("codetether.compression").unwrap().clone();
    replay::run(s, StrategySpec::Plugin { entry, params }, &o).unwrap()
}

/// One model message as CodeTether holds it (`provider/types.rs` `Message`): its parts one for
/// one; a message of tool results only is a `Role::Tool` message, as CodeTether appends them.
pub fn real_message(m: &model::Message) -> Message {
    let content: Vec<ContentPart> = m
        .parts
        .iter()
        .map(|p| match p {
            model::Part::Text { text } => ContentPart::Text { text: text.clone() },
            model::Part::Thinking { text } => ContentPart::Thinking {
                text: text.clone(),
                signature: None,
            },
            model::Part::ToolCall { id, name, args } => ContentPart::ToolCall {
                id: id.clone(),
                name: name.clone(),
                arguments: args.clone(),
                thought_signature: None,
            },
            model::Part::ToolResult {
                call_id, content, ..
            } => ContentPart::ToolResult {
                tool_call_id: call_id.clone(),
                content: content.clone(),
            },
            model::Part::Image { media_type, .. } => ContentPart::Image {
                url: String::new(),
                mime_type: Some(media_type.clone()),
            },
        })
        .collect();
    let results_only = !content.is_empty()
        && content
            .iter()
            .all(|p| matches!(p, ContentPart::ToolResult { .. }));
    let role = match m.role {
        _ if results_only => Role::Tool,
        model::Role::System => Role::System,
        model::Role::Assistant => Role::Assistant,
        model::Role::Tool => Role::Tool,
        model::Role::User => Role::User,
    };
    Message { role, content }
}

/// The history CodeTether would hold at a call: the messages the plugin was given, in order,
/// as the session has them (CodeTether never edits its history; the plugin's persistent dedup
/// markers are CodeTether's own per-step pass, which `derive_context` re-applies). A summary the
/// log recorded is a user message of its text.
pub fn history(
    s: &model::Session,
    d: &CallDecision,
    texts: &mut HashMap<u64, String>,
) -> Vec<Message> {
    d.context
        .iter()
        .map(|m| {
            if let Some(t) = &m.text {
                texts.entry(m.id).or_insert_with(|| t.clone());
            }
            match m.message {
                Some(i) => real_message(&s.messages[i]),
                None => Message {
                    role: Role::User,
                    content: vec![ContentPart::Text {
                        text: texts.get(&m.id).cloned().unwrap_or_default(),
                    }],
                },
            }
        })
        .collect()
}

/// A provider that never answers. CodeTether's foreground derivation never calls it; its
/// background RLM summaries (`helper/rlm_background`, cached by the rendered prefix) do: the
/// first job waits for it forever and holds the only job slot (`gate.rs`,
/// `CODETETHER_RLM_BG_MAX` 1), so every later job is refused and no background summary ever
/// becomes ready. Every summary is then the chunker fallback (`helper/compression_defer.rs`),
/// as the plugin's `rlm_background_cache: false` says. A provider that *fails* would not do:
/// codetether-rlm then writes its offline fallback (`router/fallback_context.rs`
/// `session_context_fallback`) as the job's summary, later steps that compress the same prefix
/// use it, and what the real side does would depend on the jobs' timing.
pub struct Unanswered;

#[async_trait::async_trait]
impl Provider for Unanswered {
    fn name(&self) -> &str {
        "unanswered"
    }
    async fn list_models(&self) -> Result<Vec<ModelInfo>> {
        Ok(Vec::new())
    }
    async fn complete(&self, _: CompletionRequest) -> Result<CompletionResponse> {
        futures::future::pending().await
    }
    async fn complete_stream(
        &self,
        _: CompletionRequest,
    ) -> Result<futures::stream::BoxStream<'static, StreamChunk>> {
        futures::future::pending().await
    }
}

/// The background summaries' disk cache (`rlm_background/disk.rs`, under the system temp folder
/// unless `CODETETHER_RLM_BG_CACHE_DIR` says): a folder of this process's own, empty, so that no
/// summary an earlier run wrote is read back.
fn fresh_rlm_cache() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let dir = std::env::temp_dir().join(format!(
            "codetether-differential-rlm-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::env::set_var("CODETETHER_RLM_BG_CACHE_DIR", &dir);
    });
}

/// What codetether-agent's own derivation did at one call.
#[derive(Debug, Clone, PartialEq)]
pub struct RealStep {
    /// Its compaction events, in order: `CompactionStarted`, `CompactionCompleted`,
    /// `ContextTruncated`, `CompactionFailed` (`session/events/types.rs` `SessionEvent`).
    pub codes: Vec<&'static str>,
    /// The estimate `check_budget` compared (`CompactionStarted.before_tokens`; below the budget,
    /// `estimate_request_tokens` after `experimental::apply_all`, as `derive_context` runs them).
    pub estimate: usize,
    /// `CompactionCompleted.kept_messages`.
    pub kept: Option<usize>,
    /// `CompactionCompleted.after_tokens`: the estimate of the list the cascade ended with.
    pub after: Option<usize>,
    /// Messages of the derived context.
    pub derived: usize,
}

/// A system prompt CodeTether estimates at exactly `tokens` tokens: 4 bytes, one of them a space
/// (a 25 % whitespace share: 4.0 bytes a token, codetether-rlm `chunker/estimate.rs`).
pub fn system_prompt(tokens: u64) -> String {
    "abc ".repeat(tokens as usize)
}

/// codetether-agent 4.7.4 `derive_context` on `history`, with a system prompt of `overhead`
/// tokens and no tools (the plugin takes the host's calibrated overhead for both).
pub async fn real_step(history: Vec<Message>, overhead: u64) -> Result<RealStep> {
    fresh_rlm_cache();
    let provider: Arc<dyn Provider> = Arc::new(Unanswered);
    let mut session = Session::new().await?;
    session.messages = history;
    let system = system_prompt(overhead);
    let (tx, mut rx) = tokio::sync::mpsc::channel(4096);
    let derived = derive_context(&session, provider, MODEL, &system, &[], Some(&tx), None).await?;
    drop(tx);
    let mut step = RealStep {
        codes: Vec::new(),
        estimate: 0,
        kept: None,
        after: None,
        derived: derived.messages.len(),
    };
    let mut started = None;
    while let Some(ev) = rx.recv().await {
        match ev {
            SessionEvent::CompactionStarted(s) => {
                started = Some(s.before_tokens);
                step.codes.push("CompactionStarted");
            }
            SessionEvent::CompactionCompleted(c) => {
                step.kept = Some(c.kept_messages);
                step.after = Some(c.after_tokens);
                step.codes.push("CompactionCompleted");
            }
            SessionEvent::ContextTruncated(_) => step.codes.push("ContextTruncated"),
            SessionEvent::CompactionFailed(_) => step.codes.push("CompactionFailed"),
            _ => {}
        }
    }
    step.estimate = match started {
        Some(t) => t,
        None => {
            let mut passed = session.messages.clone();
            codetether_agent::session::helper::experimental::apply_all(&mut passed);
            codetether_agent::session::helper::token::estimate_request_tokens(&system, &passed, &[])
        }
    };
    Ok(step)
}

/// The plugin's step at one call, from its run: its compaction event codes in order and its
/// estimate (the `codetether_estimate` gauge).
#[derive(Debug, Clone, PartialEq)]
pub struct PluginStep {
    pub codes: Vec<String>,
    pub estimate: Option<u64>,
}

pub fn plugin_steps(run: &Run) -> HashMap<usize, PluginStep> {
    let mut out: HashMap<usize, PluginStep> = HashMap::new();
    for g in run.gauges.get("codetether_estimate").into_iter().flatten() {
        out.entry(g.call)
            .or_insert(PluginStep {
                codes: Vec::new(),
                estimate: None,
            })
            .estimate = Some(g.value as u64);
    }
    for e in &run.events {
        if [
            "CompactionStarted",
            "CompactionCompleted",
            "ContextTruncated",
            "CompactionFailed",
        ]
        .contains(&e.code.as_str())
        {
            out.entry(e.call)
                .or_insert(PluginStep {
                    codes: Vec::new(),
                    estimate: None,
                })
                .codes
                .push(e.code.clone());
        }
    }
    out
}
