//! The readers of the agent tools of the second batch of real logs (issue 22): Gemini CLI, OpenCode,
//! GitHub Copilot CLI, Cline/Roo/Kilo task folders, and Entire checkpoints around them. Each real
//! file loads with every API call that has usage; each reader rule has a test on a sample the
//! project wrote or on a few lines written here.
//! Needs ../shared/real-logs beside the checkout; fails loudly when it is missing.

use std::path::{Path, PathBuf};

use ctxlab::formats;
use ctxlab::model::*;
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
