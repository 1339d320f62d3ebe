//! The readers of the agent tools of the second batch of real logs (issue 22): Gemini CLI, OpenCode,
//! GitHub Copilot CLI, Cline/Roo/Kilo task folders, and Entire checkpoints around them. Each real
//! file loads with every API call that has usage; each reader rule has a test on a sample the
//! project wrote or on a few lines written here.
//! Needs ../shared/real-logs beside the checkout; fails loudly when it is missing.

use std::path::{Path, PathBuf};

use ctxlab::formats;
use ctxlab::model::*;
use serde_json::Value;

mod real_logs;
use real_logs::real;

fn sample(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/samples")).join(rel)
}

fn only_file(dir: &Path, ext: &str) -> PathBuf {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    assert_eq!(v.len(), 1, "{}: {v:?}", dir.display());
    v.remove(0)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Every tool call of the session is answered by a tool result after it (and nothing answers a
/// call that was never made).
fn assert_tool_pairs(s: &Session) {
    let mut open: Vec<&str> = Vec::new();
    for m in &s.messages {
        for id in m.tool_result_ids() {
            assert!(
                open.contains(&id),
                "result {id} answers no earlier call (message {:?})",
                m.source
            );
            open.retain(|x| *x != id);
        }
        open.extend(m.tool_call_ids());
    }
    assert!(open.is_empty(), "calls without a result: {open:?}");
}

/// What must survive `ctxlab convert`: everything but where it came from.
fn comparable(mut s: Session) -> Session {
    s.source = Default::default();
    for m in &mut s.messages {
        m.source = Default::default();
    }
    for c in &mut s.calls {
        c.source = Default::default();
    }
    for c in &mut s.compactions {
        c.source = Default::default();
    }
    s
}

fn convert_round_trip(src: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .arg("convert")
        .arg(src)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "{}", src.display());
    let original = formats::load(src).unwrap().remove(0);
    let back = formats::load_file(&out).unwrap();
    assert_eq!(back.source.format, "native");
    assert_eq!(comparable(back), comparable(original), "{}", src.display());
}

// ------------------------------------------------------------------------------------------
// Gemini CLI

const GEMINI_REAL: &str = "gemini-cli_entire-cli/ab/2b9748b105/0/full.jsonl";

#[test]
fn gemini_real_chat_every_response_with_usage_is_a_call_with_that_usage() {
    let p = real(GEMINI_REAL);
    assert_eq!(formats::detect(&p).unwrap(), "gemini-cli");
    let s = formats::load_file(&p).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    // The file's own figures, read here independently of the reader.
    let doc: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    let with_tokens: Vec<&Value> = doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["type"] == "gemini" && m["tokens"]["total"].as_u64().unwrap_or(0) > 0)
        .collect();
    assert_eq!(with_tokens.len(), 10);
    assert_eq!(
        s.calls.len(),
        10,
        "the all-zero record continues a response"
    );
    assert!(s.calls.iter().all(|c| c.usage.is_some()));
    for (c, m) in s.calls.iter().zip(&with_tokens) {
        let t = &m["tokens"];
        let u = c.usage.unwrap();
        assert_eq!(
            u.context_tokens(),
            t["input"].as_u64().unwrap(),
            "input includes cached"
        );
        assert_eq!(u.cache_read, t["cached"].as_u64().unwrap());
        assert_eq!(
            u.output,
            t["output"].as_u64().unwrap() + t["thoughts"].as_u64().unwrap()
        );
        assert_eq!(c.request_id.as_deref(), m["id"].as_str());
    }
    let max = s
        .calls
        .iter()
        .map(|c| c.usage.unwrap().context_tokens())
        .max();
    assert_eq!(max, Some(14_200));
    assert_eq!(s.id, "f7633853-6663-4dbb-bbf4-6159afa29df8");
    assert_eq!(s.agents[0].model.as_deref(), Some("gemini-2.5-flash"));
    // 9 tool calls, each answered in the next request.
    let calls: usize = s.messages.iter().map(|m| m.tool_call_ids().count()).sum();
    assert_eq!(calls, 9);
    assert_tool_pairs(&s);
    // The update notice is shown to the user, not sent to the model.
    let info: Vec<&Message> = s.messages.iter().filter(|m| m.flags.meta).collect();
    assert_eq!(info.len(), 1);
    assert!(matches!(&info[0].parts[0], Part::Text { text } if text.contains("update available")));
    // The `rm docs/blue.md` call recorded after the notice belongs to the reply before it.
    let rm = s
        .messages
        .iter()
        .position(|m| {
            m.parts.iter().any(
                |p| matches!(p, Part::ToolCall { args, .. } if args.contains("rm docs/blue.md")),
            )
        })
        .unwrap();
    assert!(s.calls.iter().any(|c| c.reply == Some(rm)));
    assert!(
        matches!(&s.messages[rm].parts[..], [.., Part::Text { text }, Part::ToolCall { .. }] if text.contains("I'll remove"))
    );
    // Thoughts are kept as thinking.
    assert!(s.messages[s.calls[0].reply.unwrap()]
        .parts
        .iter()
        .any(|p| matches!(p, Part::Thinking { text } if text.contains("Color Documentation"))));
    convert_round_trip(&p);
}

#[test]
fn gemini_legacy_document_sample_merges_a_tool_call_written_after_a_notice() {
    let p = only_file(&sample("gemini-cli"), "json");
    assert_eq!(formats::detect(&p).unwrap(), "gemini-cli");
    let s = formats::load_file(&p).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let doc: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    let responses = doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["type"] == "gemini")
        .count();
    assert_eq!(
        s.calls.len(),
        responses - 1,
        "one record continues a response"
    );
    assert!(s.calls.iter().all(|c| c.usage.is_some()));
    assert_tool_pairs(&s);
    // The continuation's call sits in the reply of the call before the notice, and its result
    // comes after the notice, before the next request.
    let notice = s.messages.iter().position(|m| m.flags.meta).unwrap();
    let reply = s
        .calls
        .iter()
        .rev()
        .find(|c| c.context_end < notice)
        .unwrap();
    let r = &s.messages[reply.reply.unwrap()];
    assert!(r.tool_call_ids().count() >= 1);
    assert_eq!(s.messages[notice + 1].role, Role::Tool);
    let answered: Vec<&str> = s.messages[notice + 1].tool_result_ids().collect();
    assert!(r.tool_call_ids().all(|id| answered.contains(&id)));
    // Lines point at each record's first line in the document.
    let text = std::fs::read_to_string(&p).unwrap();
    let line = |n: u32| text.lines().nth(n as usize - 1).unwrap().trim();
    assert_eq!(line(s.messages[0].source.line), "{");
    assert!(text
        .lines()
        .nth(s.messages[0].source.line as usize)
        .unwrap()
        .contains("\"content\""));
    convert_round_trip(&p);
}

#[test]
fn gemini_json_lines_sample_updates_rewinds_and_compression() {
    let p = only_file(&sample("gemini-cli"), "jsonl");
    assert_eq!(formats::detect(&p).unwrap(), "gemini-cli");
    let s = formats::load_file(&p).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let lines: Vec<Value> = std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Records re-appended with their tokens count once; a rewound reply is not a call.
    let rewound = lines.iter().find_map(|l| l["$rewindTo"].as_str()).unwrap();
    let mut ids: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "gemini" && l["tokens"].is_object())
        .map(|l| l["id"].as_str().unwrap())
        .filter(|id| *id != rewound)
        .collect();
    ids.dedup();
    let got: Vec<&str> = s
        .calls
        .iter()
        .filter_map(|c| c.request_id.as_deref())
        .collect();
    assert_eq!(got, ids);
    assert!(s.calls.iter().all(|c| c.usage.is_some()));
    assert!(!s
        .messages
        .iter()
        .any(|m| m.source.line as usize
            == 1 + lines.iter().position(|l| l["id"] == rewound).unwrap()));
    // `$set.messages` replaced the history: one compaction whose summary is the snapshot, and
    // the acknowledgement Gemini CLI writes after it is a message, not a call.
    assert_eq!(s.compactions.len(), 1);
    let c = &s.compactions[0];
    let summary = c.summary.expect("summary");
    assert_eq!(summary, c.at_message);
    assert!(s.messages[summary].flags.is_summary);
    assert!(
        matches!(&s.messages[summary].parts[0], Part::Text { text } if text.starts_with("<state_snapshot>"))
    );
    assert_eq!(s.messages[summary + 1].role, Role::Assistant);
    assert!(s.calls.iter().all(|x| x.reply != Some(summary + 1)));
    let before = s
        .calls
        .iter()
        .rev()
        .find(|x| x.context_end <= c.at_message)
        .unwrap();
    assert_eq!(
        c.pre_tokens,
        before.usage.map(|u| u.context_tokens() + u.output)
    );
    // The first call after it sees a smaller context than the last before it.
    let after = s
        .calls
        .iter()
        .find(|x| x.context_end > c.at_message)
        .unwrap();
    assert!(after.usage.unwrap().context_tokens() < before.usage.unwrap().context_tokens());
    assert_tool_pairs(&s);
    assert_eq!(
        s.title.as_deref(),
        Some("Speed up predictions and fix phase lags")
    );
    convert_round_trip(&p);
}

#[test]
fn gemini_bad_lines_are_warnings_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "session-x.jsonl",
        concat!(
            r#"{"sessionId":"s1","projectHash":"h","startTime":"2026-01-01T00:00:00Z","lastUpdated":"2026-01-01T00:00:00Z"}"#,
            "\n",
            r#"{"id":"u1","timestamp":"2026-01-01T00:00:01Z","type":"user","content":[{"text":"hi"}]}"#,
            "\n",
            "{not json\n",
            r#"{"id":"g1","timestamp":"2026-01-01T00:00:02Z","type":"gemini","content":"hello","model":"gemini-2.5-pro","tokens":{"input":100,"output":5,"cached":40,"thoughts":3,"tool":0,"total":108}}"#,
            "\n",
            r#"{"type":"gemini"}"#,
            "\n",
        ),
    );
    let s = formats::load_file(&p).unwrap();
    assert_eq!(s.calls.len(), 1);
    assert_eq!(
        s.calls[0].usage,
        Some(Usage {
            input: 60,
            output: 8,
            cache_read: 40,
            ..Usage::default()
        })
    );
    let w: Vec<(u32, bool)> = s
        .warnings
        .iter()
        .map(|w| (w.line, w.file.ends_with("session-x.jsonl")))
        .collect();
    assert_eq!(w, vec![(3, true), (5, true)], "{:?}", s.warnings);
    assert!(s.warnings[1].message.contains("Gemini CLI record"));

    // A legacy document cut short keeps the records before the break.
    let doc = std::fs::read_to_string(real(GEMINI_REAL)).unwrap();
    let cut = write(dir.path(), "session-cut.json", &doc[..doc.len() / 2]);
    let s = formats::load_file(&cut).unwrap();
    assert!(!s.calls.is_empty());
    assert_eq!(s.warnings.len(), 1);
    assert!(s.warnings[0].line > 100 && s.warnings[0].message.contains("breaks off"));
}

// ------------------------------------------------------------------------------------------
// Entire checkpoints

#[test]
fn entire_metadata_is_never_a_log_and_its_totals_are_checked() {
    // On its own, the metadata is refused with the reason.
    let meta = real("gemini-cli_entire-cli/ab/2b9748b105/0/metadata.json");
    let e = formats::detect(&meta).unwrap_err();
    assert!(e.to_string().contains("Entire checkpoint"), "{e}");
    // A folder holding a checkpoint loads its transcript only, without a failure for the metadata.
    let loaded = formats::load_all(&real("gemini-cli_entire-cli")).unwrap();
    assert_eq!(loaded.sessions.len(), 1);
    assert!(loaded.failed.is_empty(), "{:?}", loaded.failed);
    // Totals that disagree with the transcript's usage are a warning naming each figure. The
    // Codex checkpoint's totals cover fewer calls than the transcript holds (Entire counts from
    // the checkpoint's start).
    let s = formats::load_file(&real("codex-cli_agentv/00/34f597b72d/1/full.jsonl")).unwrap();
    let w = s
        .warnings
        .iter()
        .find(|w| w.file.ends_with("metadata.json"))
        .expect("a warning about the totals");
    assert!(
        w.message.contains("API calls 169 (log: 180)"),
        "{}",
        w.message
    );
    // Totals that agree give none.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(real(GEMINI_REAL), dir.path().join("full.jsonl")).unwrap();
    let s = formats::load_file(&dir.path().join("full.jsonl")).unwrap();
    let total = |f: fn(&Usage) -> u64| {
        s.calls
            .iter()
            .filter_map(|c| c.usage)
            .map(|u| f(&u))
            .sum::<u64>()
    };
    let agree = serde_json::json!({"checkpoint_id": "x", "session_id": "y", "token_usage": {
        "input_tokens": total(|u| u.input), "cache_creation_tokens": 0,
        "cache_read_tokens": total(|u| u.cache_read), "output_tokens": total(|u| u.output),
        "api_call_count": s.calls.len()}});
    write(dir.path(), "metadata.json", &agree.to_string());
    let s = formats::load_file(&dir.path().join("full.jsonl")).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let mut off = agree.clone();
    off["token_usage"]["output_tokens"] = (total(|u| u.output) + 1).into();
    write(dir.path(), "metadata.json", &off.to_string());
    let s = formats::load_file(&dir.path().join("full.jsonl")).unwrap();
    assert_eq!(s.warnings.len(), 1);
    assert!(s.warnings[0].message.contains("output"));
    assert!(!s.warnings[0].message.contains("API calls"));
}

// ------------------------------------------------------------------------------------------
// Cline / Roo Code / Kilo Code task folders

const CLINE_TASK: &str = "cline_online-card-architecture/exported_task_1769064454592";

/// Every result answers a call made before it, and every call is answered, except those of the
/// last reply (the task ended on it). Messages a truncation kept are repeated after it, so a call
/// may be answered more than once.
fn assert_tool_pairs_but_last(s: &Session) {
    let last = s.calls.last().and_then(|c| c.reply).unwrap();
    let mut made: Vec<&str> = Vec::new();
    let mut answered: Vec<&str> = Vec::new();
    for (i, m) in s.messages.iter().enumerate() {
        for id in m.tool_result_ids() {
            assert!(made.contains(&id), "result {id} answers no call");
            answered.push(id);
        }
        if i != last {
            made.extend(m.tool_call_ids());
        }
    }
    let open: Vec<&&str> = made.iter().filter(|id| !answered.contains(id)).collect();
    assert!(open.is_empty(), "calls without a result: {open:?}");
}

#[test]
fn cline_real_task_folder_is_one_session_with_every_request() {
    let dir = real(CLINE_TASK);
    let all = formats::load_all(&dir).unwrap();
    assert_eq!(
        all.sessions.len(),
        1,
        "the history is not a session of its own"
    );
    assert!(
        all.failed.is_empty(),
        "task_metadata.json is not tried: {:?}",
        all.failed
    );
    let s = &all.sessions[0];
    assert_eq!(s.source.format, "cline");
    assert_eq!(s.source.files.len(), 2);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    // Independently: the UI log's requests, and the history's messages.
    let ui: Vec<Value> =
        serde_json::from_slice(&std::fs::read(dir.join("ui_messages.json")).unwrap()).unwrap();
    let reqs: Vec<(i64, Value)> = ui
        .iter()
        .filter(|e| e["say"] == "api_req_started")
        .map(|e| {
            (
                e["conversationHistoryIndex"].as_i64().unwrap(),
                serde_json::from_str(e["text"].as_str().unwrap()).unwrap(),
            )
        })
        .collect();
    assert_eq!(reqs.len(), 36);
    assert_eq!(s.calls.len(), 36);
    let hist: Vec<Value> =
        serde_json::from_slice(&std::fs::read(dir.join("api_conversation_history.json")).unwrap())
            .unwrap();
    assert_eq!(s.messages.len(), hist.len());
    for (c, (ci, r)) in s.calls.iter().zip(&reqs) {
        let u = c.usage.unwrap();
        assert_eq!(u.input, r["tokensIn"].as_u64().unwrap());
        assert_eq!(u.output, r["tokensOut"].as_u64().unwrap());
        assert_eq!(u.cache_read, r["cacheReads"].as_u64().unwrap());
        assert_eq!(u.cache_write_5m, r["cacheWrites"].as_u64().unwrap());
        // The reply is the history message after the request's user message.
        assert_eq!(c.reply, Some((ci + 2) as usize));
        assert_eq!(hist[(ci + 2) as usize]["role"], "assistant");
        // Cline's own per-message metrics agree: cached = reads + writes.
        let m = &hist[(ci + 2) as usize]["metrics"]["tokens"];
        assert_eq!(
            u.cache_read + u.cache_write(),
            m["cached"].as_u64().unwrap()
        );
    }
    let max = s
        .calls
        .iter()
        .map(|c| c.usage.unwrap().context_tokens())
        .max();
    assert_eq!(max, Some(83_785));
    // Cline's recorded cost, per call, kept beside ctxlab's pricing.
    assert_eq!(s.recorded_costs.len(), 36);
    let want: f64 = reqs.iter().map(|(_, r)| r["cost"].as_f64().unwrap()).sum();
    let got: f64 = s.recorded_costs.iter().map(|c| c.usd).sum();
    assert!((want - got).abs() < 1e-9, "{want} vs {got}");
    // Text tool results are paired with their tool_use; refused extra calls are errors.
    let results: Vec<&Part> = s
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter(|p| matches!(p, Part::ToolResult { .. }))
        .collect();
    assert_eq!(results.len(), 37);
    let refused = results
        .iter()
        .filter(|p| matches!(p, Part::ToolResult { is_error: true, content, .. } if content.contains("was not executed")))
        .count();
    assert_eq!(refused, 3);
    assert_tool_pairs_but_last(s);
    // The history opened on its own reads the same task.
    let alone = formats::load_file(&dir.join("api_conversation_history.json")).unwrap();
    assert_eq!(alone.source.format, "cline");
    assert_eq!(comparable(alone), comparable(s.clone()));
    convert_round_trip(&dir);
}

#[test]
fn cline_sample_task_truncation_is_a_compaction_that_keeps_the_first_pair() {
    let dir = sample("cline/1772700000000");
    let s = formats::load(&dir).unwrap().remove(0);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let ui: Vec<Value> =
        serde_json::from_slice(&std::fs::read(dir.join("ui_messages.json")).unwrap()).unwrap();
    let hist: Vec<Value> =
        serde_json::from_slice(&std::fs::read(dir.join("api_conversation_history.json")).unwrap())
            .unwrap();
    let range = ui
        .iter()
        .find_map(|e| e["conversationHistoryDeletedRange"].as_array())
        .unwrap();
    let (start, end) = (
        range[0].as_u64().unwrap() as usize,
        range[1].as_u64().unwrap() as usize,
    );
    assert_eq!(s.compactions.len(), 1);
    let c = &s.compactions[0];
    assert_eq!(c.trigger, "truncation");
    // After the boundary: copies of the history minus the deleted range, then the reply.
    let first_after = s
        .calls
        .iter()
        .find(|x| x.context_end > c.at_message)
        .unwrap();
    let copies = &s.messages[c.at_message..first_after.context_end];
    let kept: Vec<usize> = (0..first_after.context_end - c.at_message + end - start + 1)
        .filter(|h| *h < start || *h > end)
        .collect();
    assert_eq!(copies.len(), kept.len());
    assert_eq!(copies[0].parts, s.messages[0].parts, "the task is kept");
    assert!(
        matches!(&copies[2].parts[0], Part::ToolResult { content, .. } | Part::Text { text: content } if hist[end + 1]["content"][0]["text"].as_str() == Some(content))
    );
    // The recorded context shrinks there, as the recorded usage does.
    let before = s
        .calls
        .iter()
        .rev()
        .find(|x| x.context_end <= c.at_message)
        .unwrap();
    assert!(first_after.usage.unwrap().context_tokens() < before.usage.unwrap().context_tokens());
    assert_eq!(
        c.pre_tokens,
        before.usage.map(|u| u.context_tokens() + u.output)
    );
    assert_tool_pairs_but_last(&s);
    assert_eq!(s.recorded_costs.len(), s.calls.len());
    convert_round_trip(&dir);
}

#[test]
fn cline_bad_history_entries_are_warnings_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "api_conversation_history.json",
        concat!(
            "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"<task>\\nfix it\\n</task>\"}]},\n",
            "42,\n",
            "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"read_file\",\"input\":{\"path\":\"a\"}}],",
            "\"metrics\":{\"tokens\":{\"prompt\":5,\"completion\":9,\"cached\":100}}},\n",
            "{\"role\":\"robot\",\"content\":\"?\"},\n",
            "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"[read_file for 'a'] Result:\\nhello\"}]}]\n",
        ),
    );
    let p = dir.path().join("api_conversation_history.json");
    assert_eq!(formats::detect(&p).unwrap(), "cline");
    let s = formats::load_file(&p).unwrap();
    // Without the UI log, Cline's per-message metrics are the usage.
    assert_eq!(s.calls.len(), 1);
    assert_eq!(
        s.calls[0].usage,
        Some(Usage {
            input: 5,
            output: 9,
            cache_read: 100,
            ..Usage::default()
        })
    );
    assert_tool_pairs(&s);
    assert_eq!(s.messages.last().unwrap().role, Role::Tool);
    let w: Vec<(u32, bool)> = s
        .warnings
        .iter()
        .map(|w| (w.line, w.file.ends_with("api_conversation_history.json")))
        .collect();
    assert_eq!(w, vec![(2, true), (4, true)], "{:?}", s.warnings);
}

// ------------------------------------------------------------------------------------------
// OpenCode

const OPENCODE_REAL: &str = "opencode_pfm-categorization/opencode-session.json";

#[test]
fn opencode_real_export_every_step_is_a_call_with_its_usage_and_cost() {
    let p = real(OPENCODE_REAL);
    assert_eq!(formats::detect(&p).unwrap(), "opencode");
    let s = formats::load_file(&p).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let doc: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    let finishes: Vec<&Value> = doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap())
        .filter(|p| p["type"] == "step-finish")
        .collect();
    assert_eq!(finishes.len(), 21);
    assert_eq!(s.calls.len(), 21);
    for (c, f) in s.calls.iter().zip(&finishes) {
        let t = &f["tokens"];
        let u = c.usage.expect("usage");
        assert_eq!(u.input, t["input"].as_u64().unwrap());
        assert_eq!(u.cache_read, t["cache"]["read"].as_u64().unwrap());
        assert_eq!(u.cache_write_5m, t["cache"]["write"].as_u64().unwrap());
        assert_eq!(
            u.output,
            t["output"].as_u64().unwrap() + t["reasoning"].as_u64().unwrap()
        );
    }
    // The session's own totals agree with the sum of its steps.
    let info = &doc["info"];
    let sum = |f: fn(&Usage) -> u64| s.calls.iter().map(|c| f(&c.usage.unwrap())).sum::<u64>();
    assert_eq!(sum(|u| u.input), info["tokens"]["input"].as_u64().unwrap());
    assert_eq!(
        sum(|u| u.output),
        info["tokens"]["output"].as_u64().unwrap()
    );
    assert_eq!(
        sum(|u| u.cache_read),
        info["tokens"]["cache"]["read"].as_u64().unwrap()
    );
    let max = s
        .calls
        .iter()
        .map(|c| c.usage.unwrap().context_tokens())
        .max();
    assert_eq!(max, Some(152_957));
    // OpenCode's own cost of every step, summing to the session's.
    assert_eq!(s.recorded_costs.len(), 21);
    let total: f64 = s.recorded_costs.iter().map(|c| c.usd).sum();
    assert!(
        (total - info["cost"].as_f64().unwrap()).abs() < 1e-6,
        "{total}"
    );
    // One response stopped at the output limit: 32,000 tokens.
    assert!(s.calls.iter().any(|c| c.usage.unwrap().output == 32_000));
    let tools: usize = s.messages.iter().map(|m| m.tool_call_ids().count()).sum();
    assert_eq!(tools, 25);
    assert_tool_pairs(&s);
    assert_eq!(s.id, "ses_0aaca5626ffe0Qik8RnPS5pLrz");
    assert_eq!(s.agents[0].model.as_deref(), Some("claude-sonnet-5"));
    // Reasoning parts are thinking.
    let thinking = s
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter(|p| matches!(p, Part::Thinking { .. }))
        .count();
    assert_eq!(thinking, 13);
    convert_round_trip(&p);
}

fn opencode_sample_export() -> PathBuf {
    let dir = sample("opencode");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(v.len(), 1);
    v.remove(0)
}

#[test]
fn opencode_sample_steps_compaction_pruning_and_errors() {
    let p = opencode_sample_export();
    let s = formats::load_file(&p).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let doc: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    let msgs = doc["messages"].as_array().unwrap();
    // Multi-step messages: one call per step-finish, each with its own reply message.
    let steps: usize = msgs
        .iter()
        .map(|m| {
            m["parts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["type"] == "step-finish")
                .count()
        })
        .sum();
    assert!(msgs.iter().any(|m| m["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "step-finish")
        .count()
        == 3));
    assert_eq!(s.calls.len(), steps);
    let mut replies: Vec<usize> = s.calls.iter().map(|c| c.reply.unwrap()).collect();
    replies.dedup();
    assert_eq!(replies.len(), steps);
    // A step's tool results come right after its reply, before the next step's call.
    for c in &s.calls {
        let r = &s.messages[c.reply.unwrap()];
        if r.tool_call_ids().count() > 0 {
            let next = &s.messages[c.reply.unwrap() + 1];
            assert_eq!(next.role, Role::Tool);
            assert!(r
                .tool_call_ids()
                .all(|id| next.tool_result_ids().any(|x| x == id)));
        }
    }
    assert_tool_pairs(&s);
    // The compaction: automatic, its summary the `summary: true` message, keeping the tail from
    // `tail_start_id`; the summarizer's own call saw the whole history.
    assert_eq!(s.compactions.len(), 1);
    let c = &s.compactions[0];
    assert_eq!(c.trigger, "auto");
    let summary = c.summary.unwrap();
    assert!(s.messages[summary].flags.is_summary);
    assert!(
        matches!(&s.messages[summary].parts[0], Part::Text { text } if text.starts_with("## Goal"))
    );
    let summarizer = s.calls.iter().find(|x| x.reply == Some(summary)).unwrap();
    assert!(summarizer.context_end < c.at_message);
    let request = summary - 1;
    assert!(
        matches!(&s.messages[request].parts[0], Part::Text { text } if text == "What did we do so far?")
    );
    assert!(c.kept_from.unwrap() <= request);
    let after = s
        .calls
        .iter()
        .find(|x| x.context_end > c.at_message)
        .unwrap();
    assert!(after.usage.unwrap().context_tokens() < summarizer.usage.unwrap().context_tokens());
    // A pruned output is what OpenCode sends instead of it; a failed call is an error.
    let results: Vec<&Part> = s
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter(|p| matches!(p, Part::ToolResult { .. }))
        .collect();
    assert!(results.iter().any(|p| matches!(p, Part::ToolResult { content, .. } if content == "[Old tool result content cleared]")));
    let errors = msgs
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap())
        .filter(|p| p["state"]["status"] == "error")
        .count();
    assert_eq!(
        results
            .iter()
            .filter(|p| matches!(p, Part::ToolResult { is_error: true, .. }))
            .count(),
        errors
    );
    // Costs: every step's.
    assert_eq!(s.recorded_costs.len(), steps);
    convert_round_trip(&p);
}

#[test]
fn opencode_database_and_storage_read_the_same_sessions_with_the_subagent() {
    let db = sample("opencode/opencode.db");
    assert_eq!(formats::detect(&db).unwrap(), "opencode");
    // The database holds one root session (its child is read with it).
    let all = formats::load_all(&db).unwrap();
    assert_eq!(all.sessions.len(), 1);
    let s = formats::load_file(&db).unwrap();
    assert_eq!(comparable(s.clone()), comparable(all.sessions[0].clone()));
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.agents.len(), 2);
    let child = &s.agents[1];
    assert_eq!(child.parent, Some(0));
    let task = s
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .find_map(|p| match p {
            Part::ToolCall { id, name, .. } if name == "task" => Some(id.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(child.spawned_by.as_deref(), Some(task.as_str()));
    assert!(child.name.contains("tz_offset"));
    // Calls in time order across the two agents, costs following their calls.
    let ts: Vec<i64> = s.calls.iter().map(|c| c.timestamp.unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    let child_call = s.calls.iter().position(|c| c.agent == 1).unwrap();
    let cost = s
        .recorded_costs
        .iter()
        .find(|c| c.call == child_call)
        .unwrap();
    assert!((cost.usd - 0.0397).abs() < 1e-12);
    // The main agent holds the same conversation as the export.
    let export = formats::load_file(&opencode_sample_export()).unwrap();
    let main: Vec<&Message> = s.messages.iter().filter(|m| m.agent == 0).collect();
    assert_eq!(main.len(), export.messages.len());
    for (a, b) in main.iter().zip(&export.messages) {
        assert_eq!((a.role, &a.parts, a.flags), (b.role, &b.parts, b.flags));
    }
    assert_eq!(s.compactions.len(), 1);
    // The JSON-file storage: the same session, the folder giving its root session only.
    let storage = formats::load_all(&sample("opencode/storage")).unwrap();
    assert_eq!(storage.sessions.len(), 1);
    assert!(storage.failed.is_empty(), "{:?}", storage.failed);
    let st = storage.sessions[0].clone();
    let strip = |mut x: Session| {
        x = comparable(x);
        x.source = Default::default();
        x
    };
    assert_eq!(strip(st), strip(s.clone()));
    convert_round_trip(&db);
}

#[test]
fn opencode_bad_entries_are_warnings_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "export.json",
        concat!(
            "{\n  \"info\": {\"id\": \"ses_x\", \"title\": \"t\"},\n  \"messages\": [\n",
            "    {\"info\": {\"id\": \"msg_1\", \"role\": \"user\", \"time\": {\"created\": 1}}, \"parts\": [{\"type\": \"text\", \"text\": \"hi\"}]},\n",
            "    {\"parts\": []},\n",
            "    {\"info\": {\"id\": \"msg_2\", \"role\": \"assistant\", \"modelID\": \"m\", \"time\": {\"created\": 2}}, \"parts\": [\n",
            "      {\"type\": \"step-start\"}, {\"type\": \"text\", \"text\": \"hello\"},\n",
            "      {\"type\": \"step-finish\", \"cost\": 0.5, \"tokens\": {\"input\": 10, \"output\": 3, \"reasoning\": 2, \"cache\": {\"read\": 100, \"write\": 7}}}]},\n",
            "    {\"info\": {\"id\": \"msg_3\", \"role\": \"system\"}, \"parts\": []}\n",
            "  ]\n}\n",
        ),
    );
    assert_eq!(formats::detect(&p).unwrap(), "opencode");
    let s = formats::load_file(&p).unwrap();
    assert_eq!(s.calls.len(), 1);
    // Without `total`, output = output + reasoning.
    assert_eq!(
        s.calls[0].usage,
        Some(Usage {
            input: 10,
            output: 5,
            cache_read: 100,
            cache_write_5m: 7,
            cache_write_1h: 0,
        })
    );
    assert_eq!(s.recorded_costs, vec![RecordedCost { call: 0, usd: 0.5 }]);
    let w: Vec<(u32, bool)> = s
        .warnings
        .iter()
        .map(|w| (w.line, w.file.ends_with("export.json")))
        .collect();
    assert_eq!(w, vec![(5, true), (9, true)], "{:?}", s.warnings);
}

// ------------------------------------------------------------------------------------------
// GitHub Copilot CLI

const COPILOT_REAL: &str = "copilot-cli_agentv/26/9e1b9e5502/0/full.jsonl";

#[test]
fn copilot_real_events_one_call_per_api_call_output_only() {
    let p = real(COPILOT_REAL);
    assert_eq!(formats::detect(&p).unwrap(), "copilot-cli");
    let s = formats::load_file(&p).unwrap();
    let events: Vec<Value> = std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let replies: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "assistant.message")
        .collect();
    assert_eq!(replies.len(), 54);
    assert_eq!(s.calls.len(), 54);
    assert!(s.estimate_only, "output-only usage");
    for (c, e) in s.calls.iter().zip(&replies) {
        assert_eq!(c.request_id.as_deref(), e["data"]["apiCallId"].as_str());
        let u = c.usage.unwrap();
        assert_eq!(u.output, e["data"]["outputTokens"].as_u64().unwrap());
        assert_eq!(u.context_tokens(), 0, "no input is recorded");
        assert_eq!(c.model.as_deref(), Some("claude-sonnet-4.6"));
    }
    // The system prompt is the first message; 68 tool calls, each answered.
    assert_eq!(s.messages[0].role, Role::System);
    let calls: usize = s.messages.iter().map(|m| m.tool_call_ids().count()).sum();
    assert_eq!(calls, 68);
    assert_tool_pairs(&s);
    // Entire's totals count 53 calls and 19,004 output tokens: a warning says so.
    let w = s
        .warnings
        .iter()
        .find(|w| w.file.ends_with("metadata.json"))
        .expect("Entire totals warning");
    assert!(
        w.message.contains("API calls 53 (log: 54)"),
        "{}",
        w.message
    );
    assert!(
        w.message.contains("output 19004 (log: 19254)"),
        "{}",
        w.message
    );
    // No calibration is possible, and the views say why.
    let counter = ctxlab::tokens::counter("heuristic").unwrap();
    assert!(ctxlab::tokens::calibrate_session(&s, counter.as_ref()).is_none());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .args([
            "replay",
            "--strategy",
            "recorded",
            "--window",
            "200000",
            "--max-output",
            "32000",
        ])
        .arg(&p)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("fidelity: estimate-only"), "{text}");
    assert!(!text.contains("replayed vs recorded input"), "{text}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .arg("inspect")
        .arg(&p)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("calibration: none (estimate-only"), "{text}");
    convert_round_trip(&p);
}

#[test]
fn copilot_sample_compaction_notifications_errors_and_a_torn_last_line() {
    let dir = sample("copilot-cli");
    let s = formats::load(&dir).unwrap().remove(0);
    assert!(s.estimate_only);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let p = PathBuf::from(&s.source.files[0]);
    let text = std::fs::read_to_string(&p).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let replies = lines
        .iter()
        .filter(|l| l.contains("\"type\":\"assistant.message\""))
        .count();
    assert_eq!(s.calls.len(), replies);
    // A last line cut while being written, and a line of another log: warnings with their
    // line, the rest loads.
    let tmp = tempfile::tempdir().unwrap();
    let torn = write(
        tmp.path(),
        "events.jsonl",
        &format!("{text}{{\"a\":1}}\n{{\"type\":\"assistant.message\",\"data\":"),
    );
    let t = formats::load_file(&torn).unwrap();
    assert_eq!(t.calls.len(), s.calls.len());
    let w: Vec<(usize, bool)> = t
        .warnings
        .iter()
        .map(|w| (w.line as usize, w.message.contains("truncated")))
        .collect();
    assert_eq!(
        w,
        vec![(lines.len() + 1, false), (lines.len() + 2, true)],
        "{:?}",
        t.warnings
    );
    assert!(s
        .calls
        .iter()
        .all(|c| c.usage.is_some_and(|u| u.input == 0 && u.output > 0)));
    // Copilot's compaction: its summary, and the tokens before it as Copilot counted them.
    assert_eq!(s.compactions.len(), 1);
    let c = &s.compactions[0];
    assert_eq!(c.pre_tokens, Some(41_200));
    let summary = c.summary.unwrap();
    assert_eq!(summary, c.at_message);
    assert!(s.messages[summary].flags.is_summary);
    assert!(s.calls.iter().any(|x| x.context_end > c.at_message));
    // A background shell's notification reaches the model as an injected message.
    assert!(s.messages.iter().any(|m| m.flags.injected
        && matches!(&m.parts[0], Part::Text { text } if text.contains("system_notification"))));
    // The user message is what the model got (transformedContent), the reasoning is thinking.
    assert!(s.messages.iter().any(|m| m.role == Role::User
        && matches!(&m.parts[0], Part::Text { text } if text.starts_with("<current_datetime>"))));
    let failed = lines
        .iter()
        .filter(|l| l.contains("\"success\":false"))
        .count();
    let errors = s
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter(|p| matches!(p, Part::ToolResult { is_error: true, .. }))
        .count();
    assert_eq!(errors, failed);
    assert_tool_pairs(&s);
    convert_round_trip(&p);
}

// ------------------------------------------------------------------------------------------
// Discovery

#[test]
fn library_discover_lists_the_new_tools_default_folders() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let put = |rel: &str, from: &Path| {
        let p = h.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(from, &p).unwrap();
        p
    };
    let gemini = put(
        ".gemini/tmp/7e89/chats/session-2026-01-15T20-51-f7633853.json",
        &real(GEMINI_REAL),
    );
    let copilot = put(
        ".copilot/session-state/10fb4666/events.jsonl",
        &real(COPILOT_REAL),
    );
    let db = put(
        ".local/share/opencode/opencode.db",
        &sample("opencode/opencode.db"),
    );
    let task = ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1769064454592";
    let ui = put(
        &format!("{task}/ui_messages.json"),
        &real(CLINE_TASK).join("ui_messages.json"),
    );
    put(
        &format!("{task}/api_conversation_history.json"),
        &real(CLINE_TASK).join("api_conversation_history.json"),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .args(["library", "discover", "--json"])
        .env("HOME", h)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut got: Vec<(String, String)> = v["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["tool"].as_str().unwrap().into(),
                l["path"].as_str().unwrap().into(),
            )
        })
        .collect();
    got.sort();
    let want = |tool: &str, p: &Path| (tool.to_string(), p.display().to_string());
    assert_eq!(
        got,
        vec![
            want("cline", &ui),
            want("copilot-cli", &copilot),
            want("gemini-cli", &gemini),
            want("opencode", &db),
        ]
    );
    // Every path found opens with the reader of its tool.
    for (tool, path) in &got {
        let s = formats::load(Path::new(path)).unwrap();
        let format = &s[0].source.format;
        assert_eq!(
            format,
            if tool == "cline" { "cline" } else { tool },
            "{path}"
        );
    }
}
