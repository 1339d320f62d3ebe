//! Every sample in samples/ loads with the reader its content calls for, with the structure the
//! generator (examples/gen_samples.rs) wrote into it.

use std::path::{Path, PathBuf};

use ctxlab::formats;
use ctxlab::model::{Part, Role, Session};

fn samples() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/samples"))
}

fn only_file(dir: &str, ext: &str) -> PathBuf {
    let d = samples().join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.to_string_lossy().ends_with(ext))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no {ext} sample in {}", d.display());
    files.remove(0)
}

/// Invariants of the model every reader must keep (see src/model.rs).
pub fn check_invariants(s: &Session) {
    let n = s.messages.len();
    for m in &s.messages {
        assert!(m.agent < s.agents.len());
    }
    for a in &s.agents {
        assert!(a.parent.is_none_or(|p| p < s.agents.len()));
    }
    let mut last_end = vec![0usize; s.agents.len()];
    let mut last_ts = i64::MIN;
    for c in &s.calls {
        assert!(c.agent < s.agents.len());
        assert!(c.context_end <= n);
        assert!(
            c.context_end >= last_end[c.agent],
            "context_end decreases for agent {}",
            c.agent
        );
        last_end[c.agent] = c.context_end;
        if let Some(r) = c.reply {
            assert!(r < n);
            assert_eq!(s.messages[r].role, Role::Assistant);
            assert_eq!(s.messages[r].agent, c.agent);
        }
        if let Some(t) = c.timestamp {
            assert!(t >= last_ts, "calls in time order");
            last_ts = t;
        }
    }
    for c in &s.compactions {
        assert!(c.agent < s.agents.len());
        assert!(c.at_message <= n);
        if let Some(m) = c.summary {
            assert!(s.messages[m].flags.is_summary);
        }
        if let Some(k) = c.kept_from {
            assert!(k <= c.at_message);
        }
    }
}

#[test]
fn claude_code_project_folder_with_subagent_and_auto_compaction() {
    let project = samples().join("claude-code/-home-maren-src-tidewater");
    let all = formats::load(&project).unwrap();
    assert_eq!(
        all.len(),
        1,
        "the <session>/subagents folder belongs to its session"
    );
    let s = &all[0];
    check_invariants(s);
    assert_eq!(s.source.format, "claude-code");
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(
        s.source.files.len(),
        2,
        "main file + one subagent; the acompact file is not an agent"
    );
    // Two agents: main and the Explore subagent spawned by the Task call.
    assert_eq!(s.agents.len(), 2);
    let sub = &s.agents[1];
    assert_eq!(sub.parent, Some(0));
    assert_eq!(sub.name, "Explore: Map station loading");
    let task = sub.spawned_by.as_deref().unwrap();
    assert!(s.messages.iter().any(|m| m.agent == 0
        && m.parts.iter().any(
            |p| matches!(p, Part::ToolCall { id, name, .. } if id == task && name == "Task")
        )));
    let main_calls = s.calls_of(0).count();
    let sub_calls = s.calls_of(1).count();
    assert!(main_calls >= 300, "hundreds of calls: {main_calls}");
    assert!(sub_calls >= 30, "{sub_calls}");
    // Streaming snapshots: the final (largest) output_tokens of each message id is kept.
    assert!(s.calls.iter().all(|c| c.usage.unwrap().output > 12));
    // One auto compaction in the main agent, with its summary right after the boundary.
    assert_eq!(s.compactions.len(), 1);
    let c = &s.compactions[0];
    assert_eq!((c.agent, c.trigger.as_str()), (0, "auto"));
    assert!(c.pre_tokens.unwrap() > 158_000);
    assert_eq!(c.summary, Some(c.at_message));
    // The recorded context drops after the compaction.
    let before = s
        .calls_of(0)
        .filter(|(_, k)| k.context_end < c.at_message)
        .last()
        .unwrap()
        .1;
    let after = s
        .calls_of(0)
        .find(|(_, k)| k.context_end > c.at_message)
        .unwrap()
        .1;
    assert!(before.usage.unwrap().context_tokens() > 150_000);
    assert!(after.usage.unwrap().context_tokens() < 40_000);
    // Facts later turns need are in early tool results.
    assert!(s.messages.iter().any(|m| m.parts.iter().any(|p| matches!(p, Part::ToolResult { content, is_error: true, .. } if content.contains("fit_m2_amplitude")))));
    assert_eq!(
        s.title.as_deref(),
        Some("Fix harmonic fit and add --station flag")
    );
}

#[test]
fn codex_sample() {
    let p = only_file("codex", ".jsonl");
    assert_eq!(formats::detect(&p).unwrap(), "codex");
    let s = formats::load_file(&p).unwrap();
    check_invariants(&s);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert!(s.calls.len() >= 40);
    assert!(s
        .calls
        .iter()
        .all(|c| c.usage.is_some() && c.reply.is_some()));
    assert_eq!(
        s.compactions.len(),
        1,
        "compacted + context_compacted are one event"
    );
    let c = &s.compactions[0];
    let sum = c.summary.unwrap();
    assert!(sum >= c.at_message);
    assert!(s.messages[c.at_message..=sum]
        .iter()
        .all(|m| m.role == Role::User));
    assert!(c.pre_tokens.unwrap() > 30_000);
}

#[test]
fn pi_sample() {
    let p = only_file("pi", ".jsonl");
    assert_eq!(formats::detect(&p).unwrap(), "pi");
    let s = formats::load_file(&p).unwrap();
    check_invariants(&s);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert!(s.calls.len() >= 50);
    let c = &s.compactions[0];
    let kept = c.kept_from.unwrap();
    assert!(kept < c.at_message);
    assert_eq!(
        s.messages[kept].role,
        Role::User,
        "kept from the last user request"
    );
    assert!(s
        .messages
        .last()
        .unwrap()
        .parts
        .iter()
        .any(|p| matches!(p, Part::Text { text } if text.contains("git status"))));
}

#[test]
fn openai_samples() {
    let p = samples().join("openai/tidewater-refactor.json");
    assert_eq!(formats::detect(&p).unwrap(), "openai-messages");
    let s = formats::load_file(&p).unwrap();
    check_invariants(&s);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.id, "tidewater-refactor");
    let requests = s.messages.iter().filter(|m| m.role == Role::User).count();
    assert!(requests >= 8, "several user requests: {requests}");
    let tool_results = s.messages.iter().filter(|m| m.role == Role::Tool).count();
    assert!(tool_results > 60);
    assert!(s
        .calls
        .iter()
        .all(|c| c.usage.is_some() && c.model.as_deref() == Some("gpt-4.1-2025-04-14")));
    // Line numbers point into the pretty-printed file.
    let text = std::fs::read_to_string(&p).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for m in &s.messages {
        assert!(
            lines[m.source.line as usize - 1]
                .trim_start()
                .starts_with('{'),
            "{:?}",
            m.source
        );
    }

    let p = samples().join("openai/helpdesk-two-agents.json");
    let s = formats::load_file(&p).unwrap();
    check_invariants(&s);
    let names: Vec<&str> = s.agents.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["main", "triage", "stations"]);
    // The tool result belongs to the agent that made the call.
    let tool = s.messages.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(s.agents[tool.agent].name, "triage");
    assert!(s.messages[5]
        .parts
        .iter()
        .any(|p| matches!(p, Part::Image { bytes, .. } if *bytes == 70)));
}

#[test]
fn fuseraft_sample_is_usage_only_with_thresholds() {
    let p = only_file("fuseraft", ".jsonl");
    assert_eq!(formats::detect(&p).unwrap(), "fuseraft-snapshots");
    let s = formats::load_file(&p).unwrap();
    check_invariants(&s);
    assert!(s.usage_only);
    assert_eq!(s.agents.len(), 3);
    assert!(s.calls.len() > 100);
    assert!(s
        .messages
        .iter()
        .all(|m| m.parts.is_empty() && m.flags.meta));
    assert!(
        !s.compactions.is_empty() && s.compactions.len().is_multiple_of(3),
        "one per agent each time"
    );
    let mut t: Vec<(String, &str, u64)> = s
        .thresholds
        .iter()
        .map(|t| {
            (
                s.agents[t.agent.unwrap()].name.clone(),
                t.kind.as_str(),
                t.tokens,
            )
        })
        .collect();
    t.sort();
    assert_eq!(
        t,
        [
            ("Developer".to_string(), "cutover", 400_000),
            ("Developer".to_string(), "warn", 250_000),
            ("Planner".to_string(), "cutover", 400_000),
            ("Planner".to_string(), "warn", 250_000),
            ("Reviewer".to_string(), "cutover", 400_000),
        ]
    );
}

/// Reading a native file gives back exactly the session that was written, except where it came
/// from (the native file itself) and source positions (its own lines).
fn same_content(a: &Session, b: &Session) {
    let strip = |s: &Session| {
        let mut s = s.clone();
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
    };
    assert_eq!(strip(a), strip(b));
}

#[test]
fn native_round_trip_of_every_sample() {
    let mut paths = vec![samples().join("claude-code/-home-maren-src-tidewater")];
    for d in ["codex", "pi", "openai", "fuseraft", "native"] {
        for e in std::fs::read_dir(samples().join(d)).unwrap() {
            paths.push(e.unwrap().path());
        }
    }
    let dir = tempfile::tempdir().unwrap();
    for p in paths {
        for s in formats::load(&p).unwrap() {
            let out = dir.path().join("s.ctxlab.jsonl");
            formats::native::write(&s, std::fs::File::create(&out).unwrap()).unwrap();
            assert_eq!(formats::detect(&out).unwrap(), "native");
            let back = formats::load_file(&out).unwrap();
            assert!(
                back.warnings.len() == s.warnings.len(),
                "{:?}",
                back.warnings
            );
            same_content(&s, &back);
            check_invariants(&back);
        }
    }
}

#[test]
fn native_samples_match_their_sources() {
    let a = formats::load_file(&samples().join("openai/helpdesk-two-agents.json")).unwrap();
    let b = formats::load_file(&samples().join("native/helpdesk-two-agents.ctxlab.jsonl")).unwrap();
    same_content(&a, &b);
    let a = formats::load_file(&only_file("pi", ".jsonl")).unwrap();
    let b = formats::load_file(
        &samples().join("native/pi-negative-phase-with-compaction.ctxlab.jsonl"),
    )
    .unwrap();
    same_content(&a, &b);
}

#[test]
fn the_samples_folder_loads_as_a_whole() {
    let all = formats::load(&samples()).unwrap();
    let formats: Vec<&str> = all.iter().map(|s| s.source.format.as_str()).collect();
    for f in [
        "claude-code",
        "codex",
        "fuseraft-snapshots",
        "native",
        "openai-messages",
        "pi",
        "swe-agent",
        "aider",
    ] {
        assert!(formats.contains(&f), "no {f} sample: {formats:?}");
    }
    for s in &all {
        // A SWE-agent trajectory records only session totals, which its reader says.
        let totals_only = |w: &ctxlab::model::Warning| {
            s.source.format == "swe-agent" && w.message.starts_with("only totals recorded")
        };
        assert!(
            s.warnings.iter().all(totals_only),
            "{}: {:?}",
            s.source.files[0],
            s.warnings
        );
    }
}

#[test]
fn samples_stay_small() {
    fn walk(p: &Path) {
        for e in std::fs::read_dir(p).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p);
            } else {
                assert!(
                    std::fs::metadata(&p).unwrap().len() < 2_000_000,
                    "{}",
                    p.display()
                );
            }
        }
    }
    walk(&samples());
}
