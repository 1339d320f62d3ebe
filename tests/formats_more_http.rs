//! HTTP captures (../shared/real-logs/llm-trace-proxy_wang0618 and samples/http-capture): the
//! reconstructed context of every call is exactly the messages its request carried.

use std::path::PathBuf;
use std::sync::Arc;

use ctxlab::formats;
use ctxlab::model::{Part, Role, Session};
use ctxlab::replay::{self, Budget, ReplayOptions, StrategySpec};
use ctxlab::tokens;
use serde_json::Value;

mod real_logs;
use real_logs::real;

fn sample(rel: &str) -> PathBuf {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/samples")).join(rel);
    assert!(p.exists(), "sample {} is missing", p.display());
    p
}

fn lines(p: &PathBuf) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Text-like strings of a request message, straight from its JSON.
fn json_texts(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                match (k.as_str(), x) {
                    ("text" | "thinking" | "content" | "reasoning_content", Value::String(s)) => {
                        out.push(s.clone())
                    }
                    (
                        "signature" | "cache_control" | "thoughtSignature" | "input" | "args"
                        | "arguments",
                        _,
                    ) => {}
                    // Gemini function responses are kept as their JSON text.
                    ("response", r) if r.is_object() => out.push(r.to_string()),
                    _ => json_texts(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| json_texts(x, out)),
        _ => {}
    }
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

fn part_texts(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Text { text } | Part::Thinking { text } => squash(text),
            Part::ToolResult { content, .. } => squash(content),
            _ => String::new(),
        })
        .collect()
}

fn tool_names(v: &Value, out: &mut Vec<String>) {
    if let Some(o) = v.as_object() {
        let kind = o.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "tool_use" || o.contains_key("args") {
            out.push(o["name"].as_str().unwrap_or("").to_string());
        } else if let Some(f) = o.get("function").filter(|_| kind == "function") {
            out.push(f["name"].as_str().unwrap_or("").to_string());
        }
        o.values().for_each(|x| tool_names(x, out));
    } else if let Some(a) = v.as_array() {
        a.iter().for_each(|x| tool_names(x, out));
    }
}

fn role_matches(json_role: &str, role: Role, parts: &[Part]) -> bool {
    let only_results = parts
        .iter()
        .all(|p| matches!(p, Part::ToolResult { .. } | Part::Image { .. }))
        && parts.iter().any(|p| matches!(p, Part::ToolResult { .. }));
    match json_role {
        "assistant" | "model" => role == Role::Assistant,
        "system" | "developer" => role == Role::System,
        "tool" | "function" => role == Role::Tool,
        "user" => role == if only_results { Role::Tool } else { Role::User },
        _ => false,
    }
}

/// The request's fixed part: its system prompt where the API keeps it outside the messages
/// (Anthropic `system`, Gemini `systemInstruction`) as texts, and its declared tools.
fn fixed_of(req: &Value) -> (Vec<String>, Vec<Value>) {
    let mut system = Vec::new();
    for key in ["system", "systemInstruction", "system_instruction"] {
        match req.get(key) {
            Some(Value::String(t)) => system.push(t.clone()),
            Some(v) => json_texts(v, &mut system),
            None => {}
        }
    }
    let tools = req
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    (system, tools)
}

/// For every call: the messages its recorded context holds are, one for one, the request's,
/// after one system message holding the request's fixed part (system prompt and tool schemas,
/// `MessageFlags::tool_schemas`), which OpenAI chat's own leading system message holds instead.
fn assert_contexts_equal_requests(path: &PathBuf, s: &Session) -> usize {
    let raw = lines(path);
    let counter: Arc<dyn tokens::TokenCounter> = tokens::counter("heuristic").unwrap();
    let mut checked = 0;
    for (ci, call) in s.calls.iter().enumerate() {
        let line = &raw[call.source.line as usize - 1];
        let req = &line["request"];
        let msgs = req
            .get("messages")
            .or_else(|| req.get("contents"))
            .and_then(Value::as_array)
            .expect("request messages");
        let (system, tools) = fixed_of(req);
        let openai_system = system.is_empty()
            && msgs
                .first()
                .is_some_and(|m| matches!(m["role"].as_str(), Some("system" | "developer")));
        let separate = !openai_system && (!system.is_empty() || !tools.is_empty());
        let mut opts = ReplayOptions::new(counter.clone());
        opts.budget = Some(Budget {
            context_window: 100_000_000,
            max_output: 0,
            reserve: 0,
        });
        opts.stop_at_call = Some(ci);
        let run = replay::run(s, StrategySpec::Recorded, &opts).unwrap();
        let mut kept: Vec<usize> = run
            .kept
            .iter()
            .map(|k| k.message.expect("a log message"))
            .collect();
        let first = kept.first().map(|&m| &s.messages[m]);
        if let Some(m) = first.filter(|_| separate || openai_system) {
            let n = m.flags.tool_schemas as usize;
            assert_eq!(m.role, Role::System, "call {ci}: the fixed part leads");
            assert_eq!(n, tools.len(), "call {ci}: every declared tool");
            let ours: Vec<Value> = m.parts[m.parts.len() - n..]
                .iter()
                .map(|p| match p {
                    Part::Text { text } => serde_json::from_str(text).expect("a tool's JSON"),
                    other => panic!("call {ci}: a tool schema as {other:?}"),
                })
                .collect();
            assert_eq!(ours, tools, "call {ci}: the tool schemas as sent");
            if separate {
                // An agent's context keeps its first request's system prompt: a later one may
                // differ in a per-request stamp (Claude Code's billing header `cch=`), not more.
                let theirs: String = system.iter().map(|t| squash(t)).collect();
                let ours = part_texts(&m.parts[..m.parts.len() - n]);
                let differ = ours.chars().zip(theirs.chars()).filter(|(a, b)| a != b);
                assert!(
                    ours.len() == theirs.len() && differ.count() <= 8,
                    "call {ci}: the system prompt as sent:\n ours {ours:.300}\n req  {theirs:.300}"
                );
            }
        }
        if separate {
            kept.remove(0);
        }
        assert_eq!(
            kept.len(),
            msgs.len(),
            "call {ci} (line {}): context has {} messages, the request {}",
            call.source.line,
            kept.len(),
            msgs.len()
        );
        for (k, (&mi, jm)) in kept.iter().zip(msgs).enumerate() {
            let m = &s.messages[mi];
            assert_eq!(
                m.agent, call.agent,
                "call {ci} message {k}: another agent's message"
            );
            let jrole = jm["role"].as_str().unwrap_or("user");
            assert!(
                role_matches(jrole, m.role, &m.parts),
                "call {ci} line {} message {k}: role {jrole} vs {:?}",
                call.source.line,
                m.role
            );
            let mut texts = Vec::new();
            json_texts(jm, &mut texts);
            let ours = part_texts(&m.parts[..m.parts.len() - m.flags.tool_schemas as usize]);
            let theirs: String = texts.iter().map(|t| squash(t)).collect();
            assert_eq!(
                ours.len(),
                theirs.len(),
                "call {ci} line {} message {k}: text differs:\n ours {ours:.300}\n req  {theirs:.300}",
                call.source.line
            );
            for t in &texts {
                assert!(
                    ours.contains(&squash(t)),
                    "call {ci} message {k}: {t:.200} missing"
                );
            }
            let mut names = Vec::new();
            tool_names(jm, &mut names);
            let ours: Vec<String> = m
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolCall { name, .. } => Some(name.clone()),
                    _ => None,
                })
                .collect();
            assert_eq!(ours, names, "call {ci} message {k}: tool calls");
        }
        checked += 1;
    }
    checked
}

fn describe(s: &Session) {
    for (a, ag) in s.agents.iter().enumerate() {
        let calls = s.calls_of(a).count();
        let restarts = s.compactions.iter().filter(|c| c.agent == a).count();
        eprintln!(
            "agent {a} {} [{}] calls {calls} restarts {restarts} parent {:?}",
            ag.id, ag.name, ag.parent
        );
    }
    for w in &s.warnings {
        eprintln!("warning {w}");
    }
}

#[test]
fn claude_code_capture_contexts_are_the_requests() {
    let p = real("llm-trace-proxy_wang0618/claude-code.jsonl");
    let s = formats::load_file(&p).unwrap();
    describe(&s);
    let n = assert_contexts_equal_requests(&p, &s);
    // 50 exchanges, one a token count; Claude Code's main agent was restarted twice (a history
    // rewritten after a date change, and a resumed conversation).
    assert_eq!(n, 49);
    let main = s.agents.iter().position(|a| a.id == "main").unwrap();
    assert_eq!(s.compactions.iter().filter(|c| c.agent == main).count(), 2);
    assert_eq!(s.agents.len(), 8);
}

#[test]
fn nanobot_capture_contexts_are_the_requests() {
    let p = real("llm-trace-proxy_wang0618/nanobot.jsonl");
    let s = formats::load_file(&p).unwrap();
    describe(&s);
    assert_eq!(assert_contexts_equal_requests(&p, &s), 25);
    // The main agent and the subagent it spawned.
    assert_eq!(s.agents.len(), 2);
}

#[test]
fn adk_capture_contexts_are_the_requests() {
    let p = real("llm-trace-proxy_wang0618/adk-deepresearch.jsonl");
    let s = formats::load_file(&p).unwrap();
    describe(&s);
    assert_eq!(assert_contexts_equal_requests(&p, &s), 11);
    // One agent per distinct system instruction of the ADK pipeline.
    assert_eq!(s.agents.len(), 7);
}

#[test]
fn anthropic_sample_side_call_count_request_and_restart() {
    let p = sample("http-capture/anthropic-claude-code.jsonl");
    let s = formats::load_file(&p).unwrap();
    describe(&s);
    // 7 exchanges, one of them a token count: 6 calls, each context exactly its request.
    assert_eq!(assert_contexts_equal_requests(&p, &s), 6);
    let main = s.agents.iter().position(|a| a.id == "main").unwrap();
    assert_eq!(s.calls_of(main).count(), 4);
    // The title call and the suggestion fork are not the main agent; the fork is its side agent.
    let side = s
        .agents
        .iter()
        .position(|a| a.parent == Some(main))
        .unwrap();
    assert_eq!(s.calls_of(side).count(), 1);
    // The resumed conversation rewrote the first message: a restart of main, with the context
    // the previous call recorded.
    assert_eq!(s.compactions.len(), 1);
    let c = &s.compactions[0];
    assert_eq!((c.agent, c.trigger.as_str()), (main, "restart"));
    assert_eq!(c.pre_tokens, Some(6 + 1510 + 25));
    // SSE usage: message_start's input fields and message_delta's output.
    let u = s
        .calls
        .iter()
        .find(|c| c.request_id.as_deref() == Some("m2"))
        .unwrap()
        .usage
        .unwrap();
    assert_eq!((u.input, u.cache_write_5m, u.output), (3, 1450, 41));
}

#[test]
fn openai_and_gemini_samples() {
    let p = sample("http-capture/openai-chat.jsonl");
    let s = formats::load_file(&p).unwrap();
    assert_eq!(assert_contexts_equal_requests(&p, &s), 3);
    assert_eq!(
        s.agents.len(),
        1,
        "a time stamp in the system prompt does not make a new agent"
    );
    assert_eq!(
        s.compactions.len(),
        1,
        "the rewritten history restarts the agent"
    );
    assert_eq!(s.calls[1].usage.unwrap().cache_read, 256);
    let p = sample("http-capture/gemini-adk.jsonl");
    let s = formats::load_file(&p).unwrap();
    assert_eq!(assert_contexts_equal_requests(&p, &s), 3);
    assert_eq!(
        s.agents.len(),
        2,
        "planner and executor have their own instructions"
    );
    let u = s.calls[2].usage.unwrap();
    assert_eq!((u.input, u.cache_read, u.output), (82, 128, 21));
    // A function response pairs with its call though neither has an id.
    let ids: Vec<_> = s
        .messages
        .iter()
        .flat_map(|m| m.tool_result_ids())
        .collect();
    assert_eq!(ids, vec!["search#1"]);
}

/// Heuristic and exact counts of each call's reconstructed context, beside the recorded usage.
#[test]
fn counts_are_reported_against_recorded_usage() {
    for rel in [
        "llm-trace-proxy_wang0618/claude-code.jsonl",
        "llm-trace-proxy_wang0618/nanobot.jsonl",
        "llm-trace-proxy_wang0618/adk-deepresearch.jsonl",
    ] {
        let s = formats::load_file(&real(rel)).unwrap();
        let heur = replay::recorded_raw_tokens(&s, tokens::counter("heuristic").unwrap().as_ref());
        let exact = replay::recorded_raw_tokens(&s, tokens::counter("o200k").unwrap().as_ref());
        eprintln!("{rel}\n  call  agent      recorded  heuristic      o200k");
        let mut ratios = Vec::new();
        for (i, c) in s.calls.iter().enumerate() {
            let Some(u) = c.usage else { continue };
            let (h, x) = (heur[i].unwrap(), exact[i].unwrap());
            eprintln!(
                "  {i:>4}  {:<8} {:>9} {:>10} {:>10}",
                s.agents[c.agent].id,
                u.context_tokens(),
                h,
                x
            );
            assert!(h > 0 && x > 0, "call {i}: the context was counted");
            ratios.push(u.context_tokens() as f64 / x as f64);
        }
        // The recorded count includes the system prompt and tools that are not messages: it is
        // never far below the messages' own exact count.
        let min = ratios.iter().cloned().fold(f64::MAX, f64::min);
        assert!(
            min > 0.5,
            "{rel}: recorded usage far below the counted context ({min:.2})"
        );
        let cal =
            tokens::calibrate_session(&s, tokens::counter("heuristic").unwrap().as_ref()).unwrap();
        eprintln!(
            "  calibrated heuristic: mean error {:.1}%, p95 {:.1}%",
            cal.mean_ape, cal.p95_ape
        );
        assert!(cal.mean_ape.is_finite());
    }
}
