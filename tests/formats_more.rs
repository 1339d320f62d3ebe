//! Readers of issue 11 against their real logs (../shared/real-logs, see SOURCES.md) and the
//! hand-written samples in samples/. Expectations are computed from the files here, or pinned
//! from SOURCES.md.

use std::collections::HashSet;
use std::path::PathBuf;

use ctxlab::formats;
use ctxlab::model::{Part, Role, Session};
use serde_json::Value;

mod real_logs;
use real_logs::real;

fn sample(rel: &str) -> PathBuf {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/samples")).join(rel);
    assert!(p.exists(), "sample {} is missing", p.display());
    p
}

fn load(p: &PathBuf, format: &str) -> Session {
    assert_eq!(formats::detect(p).unwrap(), format, "{}", p.display());
    formats::load_file(p).unwrap()
}

fn json_lines(p: &PathBuf) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Invariants every session keeps (model.rs).
fn check_invariants(s: &Session) {
    let mut last_end = vec![0; s.agents.len()];
    for c in &s.calls {
        assert!(c.agent < s.agents.len());
        assert!(c.context_end <= s.messages.len());
        assert!(c.context_end >= last_end[c.agent], "context_end went back");
        last_end[c.agent] = c.context_end;
        if let Some(r) = c.reply {
            assert_eq!(s.messages[r].role, Role::Assistant);
            assert_eq!(s.messages[r].agent, c.agent);
        }
    }
}

fn total(s: &Session, f: impl Fn(&ctxlab::model::Usage) -> u64) -> u64 {
    s.calls.iter().filter_map(|c| c.usage.as_ref()).map(f).sum()
}

#[test]
fn usage_counter_proxy_log() {
    let p = real("claude-code-proxy-tokens_xray/session.jsonl");
    let s = load(&p, "usage-counter");
    check_invariants(&s);
    let rows = json_lines(&p);
    assert!(s.usage_only);
    assert_eq!(s.calls.len(), rows.len());
    let tokens: u64 = rows.iter().map(|r| r["tokens"].as_u64().unwrap()).sum();
    assert_eq!(total(&s, |u| u.context_tokens()), tokens);
    let peak = s
        .calls
        .iter()
        .map(|c| c.usage.unwrap().input)
        .max()
        .unwrap();
    assert_eq!(peak, 618_955);
    // Every inferred compaction is a real drop that the agent's next calls stay below.
    assert!(!s.compactions.is_empty());
    for c in &s.compactions {
        assert!(c.inferred && c.trigger == "inferred");
        let pre = c.pre_tokens.unwrap();
        let after = s
            .calls
            .iter()
            .find(|k| k.agent == c.agent && k.context_end >= c.at_message)
            .unwrap()
            .usage
            .unwrap()
            .input;
        assert!((after as f64) < pre as f64 * 0.5, "{after} after {pre}");
    }
    let sessions: HashSet<&str> = rows
        .iter()
        .map(|r| r["sessionId"].as_str().unwrap_or("session"))
        .collect();
    for a in &s.agents {
        assert!(
            sessions.contains(a.id.split('/').next().unwrap()),
            "{}",
            a.id
        );
    }
    eprintln!(
        "proxy counter: {} calls, {} agents, {} inferred compactions",
        s.calls.len(),
        s.agents.len(),
        s.compactions.len()
    );
}

#[test]
fn managed_agent_event_stream() {
    let p = real("anthropic-managed-agents_open-hai/transcript.jsonl");
    let s = load(&p, "anthropic-managed-agents");
    check_invariants(&s);
    let ends: Vec<Value> = json_lines(&p)
        .into_iter()
        .filter(|e| e["raw"]["type"] == "span.model_request_end")
        .collect();
    assert_eq!(s.calls.len(), 95);
    assert_eq!(ends.len(), 95);
    let out: u64 = ends
        .iter()
        .map(|e| e["raw"]["model_usage"]["output_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(total(&s, |u| u.output), out);
    let peak = s
        .calls
        .iter()
        .map(|c| c.usage.unwrap().context_tokens())
        .max()
        .unwrap();
    assert_eq!(peak, 213_888);
    assert_eq!(s.agents[0].name, "repro-auditor");
    // Every tool result answers a tool call made earlier.
    let mut called = HashSet::new();
    for m in &s.messages {
        for id in m.tool_call_ids() {
            called.insert(id.to_string());
        }
        for id in m.tool_result_ids() {
            assert!(called.contains(id), "result for unknown call {id}");
        }
    }
}

#[test]
fn cline_ui_messages() {
    let p = real("cline_xray/ui_messages.json");
    let s = load(&p, "cline");
    check_invariants(&s);
    let ui: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let reqs: Vec<Value> = ui
        .iter()
        .filter(|e| e["say"] == "api_req_started")
        .map(|e| serde_json::from_str(e["text"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(s.calls.len(), 53);
    assert_eq!(reqs.len(), 53);
    let sum = |k: &str| reqs.iter().map(|r| r[k].as_u64().unwrap_or(0)).sum::<u64>();
    assert_eq!(total(&s, |u| u.input), sum("tokensIn"));
    assert_eq!(total(&s, |u| u.output), sum("tokensOut"));
    assert_eq!(total(&s, |u| u.cache_read), sum("cacheReads"));
    assert_eq!(total(&s, |u| u.cache_write()), sum("cacheWrites"));
    assert!(s.calls.iter().all(|c| c.reply.is_some()));
}

#[test]
fn cline_sample_with_conversation_history() {
    let p = sample("cline/task-1/ui_messages.json");
    let s = load(&p, "cline");
    check_invariants(&s);
    assert_eq!(s.source.files.len(), 2, "the history beside it is read");
    assert_eq!(s.calls.len(), 3);
    assert_eq!(
        s.messages.iter().filter(|m| m.role == Role::Tool).count(),
        2
    );
    let first = &s.calls[0];
    assert_eq!(first.usage.unwrap().cache_write_5m, 4210);
    assert_eq!(
        s.messages[first.reply.unwrap()].tool_call_ids().next(),
        Some("toolu_s1")
    );
}

#[test]
fn aider_histories() {
    for (rel, lines, runs) in [
        (
            "aider_pocketflow-text2sql-gui/.aider.chat.history.md",
            62,
            None,
        ),
        ("aider_afi-core/.aider.chat.history.md", 39, Some(9)),
    ] {
        let p = real(rel);
        let s = load(&p, "aider");
        check_invariants(&s);
        let text = std::fs::read_to_string(&p).unwrap();
        let token_lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("> Tokens:"))
            .collect();
        assert_eq!(token_lines.len(), lines);
        assert_eq!(s.calls.len(), lines, "{rel}");
        let started = text
            .lines()
            .filter(|l| l.starts_with("# aider chat started at"))
            .count();
        // One agent per run, and one editor agent per architect-mode run (`--architect`).
        let roots = s.agents.iter().filter(|a| a.parent.is_none()).count();
        assert_eq!(roots, started);
        let editors: Vec<usize> = (0..s.agents.len())
            .filter(|&a| s.agents[a].parent.is_some())
            .collect();
        let architect = text.contains("with architect edit format");
        assert_eq!(editors.len(), usize::from(architect), "{rel}");
        for &e in &editors {
            // The editor is sent the architect's reply, after the chat files it is made with
            // (aider `ArchitectCoder.reply_completed` empties its history).
            let ctx = ctxlab::replay::recorded_contexts(
                &s,
                ctxlab::tokens::counter("heuristic").unwrap().as_ref(),
            );
            let calls: Vec<usize> = s.calls_of(e).map(|(i, _)| i).collect();
            // 26: a plan after aider's output of several lines (a failed scrape) is one too.
            assert_eq!(calls.len(), 26, "{rel}: editor calls");
            for i in calls {
                let reply = s.calls[i].reply.unwrap();
                let asked = &s.messages[reply - 1];
                assert_eq!((asked.agent, asked.role), (e, ctxlab::model::Role::User));
                let c = ctx[i].unwrap();
                let counter = ctxlab::tokens::counter("heuristic").unwrap();
                let mut want = counter.count_message(asked);
                let files = &s.messages[reply - 2];
                if files.agent == e {
                    assert_eq!(files.role, ctxlab::model::Role::User);
                    want += counter.count_message(files);
                }
                assert_eq!(c.counted, want, "{rel}: call {i} sees its files and plan");
            }
        }
        if let Some(r) = runs {
            assert_eq!(started, r);
        }
        // The first call's figures, read from its line independently.
        let first = token_lines[0];
        let sent = first.split_whitespace().nth(2).unwrap();
        let want = if let Some(k) = sent.strip_suffix('k') {
            (k.parse::<f64>().unwrap() * 1000.0).round() as u64
        } else {
            sent.parse().unwrap()
        };
        assert_eq!(s.calls[0].usage.unwrap().context_tokens(), want);
        assert!(
            s.calls.iter().all(|c| c.model.is_some()),
            "{rel}: model from `Main model:`"
        );
    }
}

#[test]
fn aider_sample() {
    let s = load(&sample("aider/.aider.chat.history.md"), "aider");
    check_invariants(&s);
    assert_eq!(s.agents.len(), 2);
    assert_eq!(s.calls.len(), 3);
    let u = s.calls[0].usage.unwrap();
    assert_eq!((u.input, u.output), (2_400, 312));
    assert_eq!(s.calls[2].usage.unwrap().cache_read, 1_900);
    assert_eq!(s.agents[1].model.as_deref(), Some("claude-3-5-sonnet"));
    let users = s.messages.iter().filter(|m| m.role == Role::User).count();
    assert_eq!(users, 3);
}

#[test]
fn swe_agent_trajectory() {
    let p = real("swe-agent/pydicom__pydicom-1458.traj");
    let s = load(&p, "swe-agent");
    check_invariants(&s);
    assert_eq!(s.messages.len(), 26);
    assert_eq!(s.calls.len(), 12);
    assert!(s.calls.iter().all(|c| c.usage.is_none()));
    assert!(
        s.warnings[0].message.contains("122612 tokens sent"),
        "{:?}",
        s.warnings
    );
}

#[test]
fn mini_swe_agent_trajectory() {
    let p = real("mini-swe-agent_yudai/last_mini_run.traj.json");
    let s = load(&p, "swe-agent");
    check_invariants(&s);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let msgs = doc["messages"].as_array().unwrap();
    assert_eq!(s.messages.len(), 36);
    assert_eq!(msgs.len(), 36);
    assert_eq!(s.calls.len(), 17);
    let prompt: u64 = msgs
        .iter()
        .filter_map(|m| m["extra"]["response"]["usage"]["prompt_tokens"].as_u64())
        .sum();
    assert_eq!(total(&s, |u| u.context_tokens()), prompt);
    assert_eq!(s.calls[0].model.as_deref(), Some("x-ai/grok-4-fast"));
}

#[test]
fn swe_agent_samples() {
    let s = load(&sample("swe-agent/fix-off-by-one.traj"), "swe-agent");
    check_invariants(&s);
    assert_eq!(s.calls.len(), 2);
    assert_eq!(s.messages.len(), 5);
    let s = load(&sample("mini-swe-agent/rename-flag.traj.json"), "swe-agent");
    check_invariants(&s);
    assert_eq!(s.calls.len(), 2);
    let u = s.calls[1].usage.unwrap();
    assert_eq!((u.input, u.cache_read, u.output), (180, 1024, 64));
}

#[test]
fn otel_console_dump() {
    let p = real("otel-genai_ms-agent-framework/traces.jsonl");
    let s = load(&p, "otel-genai");
    check_invariants(&s);
    assert!(s.usage_only);
    // Independently: distinct chat span ids, their usage taken once.
    let text = std::fs::read_to_string(&p).unwrap();
    let mut seen = std::collections::HashMap::new();
    for v in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
        let v = v.unwrap();
        if v["attributes"]["gen_ai.operation.name"] == "chat" {
            seen.insert(v["context"]["span_id"].as_str().unwrap().to_string(), v);
        }
    }
    assert_eq!(s.calls.len(), seen.len());
    let input: u64 = seen
        .values()
        .map(|v| {
            v["attributes"]["gen_ai.usage.input_tokens"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(total(&s, |u| u.input), input);
    let names: HashSet<&str> = s.agents.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(
        names,
        HashSet::from(["Weather agent", "Structured output agent"])
    );
}

#[test]
fn otel_otlp_sample_with_messages() {
    let s = load(&sample("otel/otlp-export.json"), "otel-genai");
    check_invariants(&s);
    assert!(!s.usage_only);
    assert_eq!(s.calls.len(), 2);
    assert_eq!(s.agents.len(), 1);
    assert_eq!(s.agents[0].id, "triage");
    // The second call's input extends the first call's input and reply: appended, no restart.
    assert!(s.compactions.is_empty());
    let second = &s.calls[1];
    let ctx: Vec<_> = s.messages[..second.context_end]
        .iter()
        .filter(|m| !m.flags.meta)
        .collect();
    assert_eq!(ctx.len(), 4);
    assert!(matches!(ctx[3].parts[0], Part::ToolResult { .. }));
    assert_eq!(second.usage.unwrap().input, 212);
}

#[test]
fn managed_agents_and_counter_samples() {
    let s = load(
        &sample("managed-agents/events.jsonl"),
        "anthropic-managed-agents",
    );
    check_invariants(&s);
    assert_eq!(s.calls.len(), 2);
    assert_eq!(s.calls[1].usage.unwrap().cache_read, 2_950);
    let s = load(&sample("usage-counter/proxy.jsonl"), "usage-counter");
    check_invariants(&s);
    assert_eq!(s.calls.len(), 8);
    assert_eq!(s.compactions.len(), 1, "one drop that stays low");
    assert_eq!(s.compactions[0].pre_tokens, Some(91_400));
    assert!(
        s.agents.iter().any(|a| a.id.ends_with(" side")),
        "one dip is a side call"
    );
}
