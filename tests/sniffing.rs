//! Sniffing picks the right reader for every real log and every sample, from content alone.

use std::path::{Path, PathBuf};

use ctxlab::formats;

fn root(rel: &str) -> PathBuf {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"))).join(rel);
    assert!(
        p.exists(),
        "{} is missing: the tests need ../shared/real-logs beside the checkout",
        p.display()
    );
    p
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p
            .file_name()
            .is_some_and(|n| n != "SOURCES.md" && n != "README.md")
        {
            out.push(p);
        }
    }
}

/// The reader a file needs, by where it sits (the test's knowledge, never the reader's).
fn expected(p: &Path) -> Option<&'static str> {
    let s = p.to_string_lossy();
    let name = p.file_name()?.to_string_lossy();
    Some(
        if s.contains("llm-trace-proxy") || s.contains("/http-capture/") {
            "http-capture"
        } else if s.contains("claude-code-proxy-tokens") || s.contains("/usage-counter/") {
            "usage-counter"
        } else if s.contains("claude-code") {
            // Claude Code subagent files are read with their session, never on their own.
            if s.contains("/subagents/") {
                return None;
            }
            "claude-code"
        } else if s.contains("codex") {
            "codex"
        } else if s.contains("pi-agent") || s.contains("/pi/") {
            "pi"
        } else if s.contains("fuseraft") {
            "fuseraft-snapshots"
        } else if s.contains("otel") {
            "otel-genai"
        } else if s.contains("cline") {
            if name == "api_conversation_history.json" {
                return None;
            }
            "cline"
        } else if s.contains("aider") {
            "aider"
        } else if s.contains("swe-agent") {
            "swe-agent"
        } else if s.contains("managed-agents") {
            "anthropic-managed-agents"
        } else if s.contains("native") {
            "native"
        } else if s.contains("openai") {
            "openai-messages"
        } else {
            return None;
        },
    )
}

#[test]
fn every_real_log_and_sample_is_sniffed_as_its_format() {
    let mut all = Vec::new();
    files(&root("../shared/real-logs"), &mut all);
    let real = all.len();
    files(&root("samples"), &mut all);
    assert!(real >= 15, "only {real} real logs found");
    let mut checked = 0;
    let mut unknown = Vec::new();
    for p in &all {
        let Some(want) = expected(p) else {
            unknown.push(p.clone());
            continue;
        };
        let got = formats::detect(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(got, want, "{}", p.display());
        checked += 1;
    }
    for p in &unknown {
        // Files the test cannot place must still never be mistaken for a log silently: they are
        // either subagent/companion files or an unknown format with a clear error.
        eprintln!("not placed by the test: {}", p.display());
    }
    assert!(checked >= real, "{checked} files checked");
}
