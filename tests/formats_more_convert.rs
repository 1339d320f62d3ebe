//! `ctxlab convert`: any loaded session written as ctxlab native reads back as the same session.

use std::process::Command;

use ctxlab::formats;
use ctxlab::model::Session;

mod real_logs;
use real_logs::real;

/// What must survive conversion: everything but where it came from.
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

#[test]
fn converting_then_loading_gives_the_same_session() {
    let dir = tempfile::tempdir().unwrap();
    for rel in [
        "llm-trace-proxy_wang0618/claude-code.jsonl",
        "otel-genai_ms-agent-framework/traces.jsonl",
        "cline_xray/ui_messages.json",
        "aider_afi-core/.aider.chat.history.md",
        "swe-agent/pydicom__pydicom-1458.traj",
        "anthropic-managed-agents_open-hai/transcript.jsonl",
        "claude-code-proxy-tokens_xray/session.jsonl",
        "pi-agent_pi-mono/session.jsonl",
    ] {
        let src = real(rel);
        let out = dir.path().join("out.jsonl");
        let status = Command::new(env!("CARGO_BIN_EXE_ctxlab"))
            .arg("convert")
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success(), "{rel}");
        assert_eq!(formats::detect(&out).unwrap(), "native");
        let original = formats::load_file(&src).unwrap();
        let back = formats::load_file(&out).unwrap();
        assert_eq!(back.source.format, "native");
        assert_eq!(comparable(back), comparable(original), "{rel}");
    }
}

#[test]
fn convert_names_the_problem_of_an_unreadable_log() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("notes.txt");
    std::fs::write(&bad, "just some notes\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .args(["convert"])
        .arg(&bad)
        .arg("-o")
        .arg(dir.path().join("x.jsonl"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("notes.txt") && err.contains("aider"), "{err}");
}
