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

/// What the test knows a file to be, by where it sits (the test's knowledge, never the reader's).
enum Want {
    /// A log read by this reader.
    Reader(&'static str),
    /// Not a log ctxlab reads on its own: Entire's checkpoint `metadata.json`, a Cline task's
    /// `task_metadata.json`. Sniffing must refuse it and name the formats it tried.
    Refused,
    /// Read together with its session, never on its own (Claude Code subagent files, a Cline
    /// task's API history): not checked here.
    Companion,
}

fn expected(p: &Path) -> Want {
    use Want::*;
    let s = p.to_string_lossy();
    let name = p.file_name().unwrap_or_default().to_string_lossy();
    // Entire checkpoints keep `metadata.json` (totals) beside the transcript `full.jsonl`.
    if name == "metadata.json" && p.with_file_name("full.jsonl").exists() {
        return Refused;
    }
    if name == "task_metadata.json" {
        return Refused;
    }
    // OpenCode's storage keeps messages and parts in files read with their session.
    if s.contains("/storage/message/") || s.contains("/storage/part/") {
        return Companion;
    }
    Reader(if s.contains("gemini-cli") {
        "gemini-cli"
    } else if s.contains("opencode") {
        "opencode"
    } else if s.contains("copilot-cli") {
        "copilot-cli"
    } else if s.contains("llm-trace-proxy") || s.contains("/http-capture/") {
        "http-capture"
    } else if s.contains("claude-code-proxy-tokens") || s.contains("/usage-counter/") {
        "usage-counter"
    } else if s.contains("claude-code") {
        if s.contains("/subagents/") {
            return Companion;
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
            return Companion;
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
        panic!(
            "{}: the test does not know this file; place it",
            p.display()
        )
    })
}

#[test]
fn every_real_log_and_sample_is_sniffed_as_its_format() {
    let mut all = Vec::new();
    files(&root("../shared/real-logs"), &mut all);
    let real = all.len();
    files(&root("samples"), &mut all);
    assert!(real >= 15, "only {real} real logs found");
    let (mut checked, mut refused) = (0, 0);
    for p in &all {
        match expected(p) {
            Want::Reader(want) => {
                let got = formats::detect(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                assert_eq!(got, want, "{}", p.display());
                checked += 1;
            }
            Want::Refused => {
                // detect may pass a document to the reader that checks it closely (a `messages`
                // list of another tool): what counts is that loading it refuses it.
                let e = match formats::detect(p) {
                    Err(e) => e,
                    Ok(id) => formats::load_file(p).map(|_| ()).expect_err(&format!(
                        "{}: loaded as {id}, but it is not a log ctxlab reads",
                        p.display()
                    )),
                };
                assert_eq!(e.code(), "unknown_format", "{}: {e}", p.display());
                assert!(
                    e.to_string().contains("formats tried: claude-code, codex"),
                    "{e}"
                );
                refused += 1;
            }
            Want::Companion => eprintln!("read with its session: {}", p.display()),
        }
    }
    assert!(checked >= 20, "{checked} files checked");
    // Four Entire metadata files and two Cline tasks' metadata (real and sample).
    assert_eq!(refused, 6, "refused files");
}
