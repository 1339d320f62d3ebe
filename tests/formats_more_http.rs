//! HTTP captures (../shared/real-logs/llm-trace-proxy_wang0618 and samples/http-capture): the
//! reconstructed context of every call is exactly the messages its request carried.

use std::path::PathBuf;
use std::sync::Arc;

use ctxlab::formats;
use ctxlab::model::{Part, Role, Session};
use ctxlab::replay::{self, Budget, ReplayOptions, StrategySpec};
use ctxlab::tokens;
use serde_json::Value;

fn real(rel: &str) -> PathBuf {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/real-logs")).join(rel);
    assert!(
        p.exists(),
        "real log {} is missing: the tests need ../shared/real-logs beside the checkout",
        p.display()
    );
    p
}

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

/// For every call: the messages its recorded context holds are, one for one, the request's.
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
        let mut opts = ReplayOptions::new(counter.clone());
        opts.budget = Some(Budget {
            context_window: 100_000_000,
            max_output: 0,
            reserve: 0,
        });
        opts.stop_at_call = Some(ci);
        let run = replay::run(s, StrategySpec::Recorded, &opts).unwrap();
        let kept: Vec<usize> = run
            .kept
            .iter()
            .map(|k| k.message.expect("a log message"))
            .collect();
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
            let ours = part_texts(&m.parts);
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
    eprintln!("{n} calls checked");
}

#[test]
fn nanobot_capture_contexts_are_the_requests() {
    let p = real("llm-trace-proxy_wang0618/nanobot.jsonl");
    let s = formats::load_file(&p).unwrap();
    describe(&s);
    let n = assert_contexts_equal_requests(&p, &s);
    eprintln!("{n} calls checked");
}

#[test]
fn adk_capture_contexts_are_the_requests() {
    let p = real("llm-trace-proxy_wang0618/adk-deepresearch.jsonl");
    let s = formats::load_file(&p).unwrap();
    describe(&s);
    let n = assert_contexts_equal_requests(&p, &s);
    eprintln!("{n} calls checked");
}
