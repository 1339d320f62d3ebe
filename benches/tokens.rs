//! Exact counting speed: ctxlab's o200k / cl100k counters (bpe-openai) against tiktoken-rs on
//! the same texts, one thread, release build; and the two estimators for scale.
//!
//! Texts: every text, thinking, tool-call and tool-result string of (a) the real Claude Code and
//! Codex logs in ../shared/real-logs and (b) a generated 20 MB Claude Code transcript, each
//! string counted on its own as ctxlab counts messages.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{best_of, machine, mb, target_dir, write_fragment};
use ctxlab::fmt::fmt_tokens;
use ctxlab::model::Part;
use ctxlab::tokens;

const REAL_LOGS: &[&str] = &[
    "claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl",
    "claude-code_fundwise/claude-session.jsonl",
    "codex-cli_gildore-arena/codex-session.jsonl",
];

fn texts_of(path: &Path) -> Vec<String> {
    let sessions = ctxlab::formats::load(path)
        .unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display()));
    let mut out = Vec::new();
    for m in sessions.iter().flat_map(|s| &s.messages) {
        for p in &m.parts {
            match p {
                Part::Text { text } | Part::Thinking { text } => out.push(text.clone()),
                Part::ToolCall { args, .. } => out.push(args.clone()),
                Part::ToolResult { content, .. } => out.push(content.clone()),
                Part::Image { .. } => {}
            }
        }
    }
    out
}

struct Row {
    corpus: String,
    vocabulary: &'static str,
    bytes: u64,
    ours: Duration,
    peer: Duration,
    tokens: u64,
    agree: bool,
    /// First use: decoding the vocabulary (only meaningful for the first corpus raced).
    ours_init: Duration,
    peer_init: Duration,
}

fn race(corpus: &str, texts: &[String]) -> Vec<Row> {
    let bytes: u64 = texts.iter().map(|t| t.len() as u64).sum();
    let cases: [(&str, fn() -> &'static tiktoken_rs::CoreBPE); 2] = [
        ("o200k", tiktoken_rs::o200k_base_singleton),
        ("cl100k", tiktoken_rs::cl100k_base_singleton),
    ];
    let mut rows = Vec::new();
    for (name, peer) in cases {
        // The first use decodes the vocabulary: timed once per process, outside the race.
        let start = Instant::now();
        let ours = tokens::counter(name).expect("built with the exact feature");
        ours.count_text("warm up");
        let ours_init = start.elapsed();
        let start = Instant::now();
        let peer = peer();
        peer.encode_ordinary("warm up");
        let peer_init = start.elapsed();
        let (ours_time, ours_tokens) =
            best_of(5, || texts.iter().map(|t| ours.count_text(t)).sum::<u64>());
        let (peer_time, peer_tokens) = best_of(5, || {
            texts
                .iter()
                .map(|t| peer.encode_ordinary(t).len() as u64)
                .sum::<u64>()
        });
        println!(
            "{corpus:>10} {name:>6}: ctxlab {:.0} MB/s, tiktoken-rs {:.0} MB/s, ratio {:.2}x; {} tokens{}",
            mb(bytes) / ours_time.as_secs_f64(),
            mb(bytes) / peer_time.as_secs_f64(),
            peer_time.as_secs_f64() / ours_time.as_secs_f64(),
            ours_tokens,
            if ours_tokens == peer_tokens { ", identical counts" } else { ", COUNTS DIFFER" }
        );
        rows.push(Row {
            corpus: corpus.to_string(),
            vocabulary: name,
            bytes,
            ours: ours_time,
            peer: peer_time,
            tokens: ours_tokens,
            agree: ours_tokens == peer_tokens,
            ours_init,
            peer_init,
        });
    }
    rows
}

/// The heuristic's speed on the same texts (chars4 reads only each text's length).
fn heuristic_speed(texts: &[String]) -> f64 {
    let bytes: u64 = texts.iter().map(|t| t.len() as u64).sum();
    let c = tokens::counter("heuristic").expect("built in");
    let (t, _) = best_of(5, || texts.iter().map(|t| c.count_text(t)).sum::<u64>());
    mb(bytes) / t.as_secs_f64()
}

fn main() {
    let real_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/real-logs");
    assert!(
        real_dir.is_dir(),
        "{} is missing: the bench counts the real logs there",
        real_dir.display()
    );
    let real: Vec<String> = REAL_LOGS
        .iter()
        .flat_map(|f| texts_of(&real_dir.join(f)))
        .collect();
    let corpus_dir = target_dir().join("bench-corpus/claude-20mb");
    let generated = texts_of(&common::corpus::ensure(&corpus_dir, 20_000_000).expect("corpus"));

    let mut rows = race("real logs", &real);
    rows.extend(race("generated", &generated));
    let heuristic = heuristic_speed(&generated);
    println!("        heuristic: {heuristic:.0} MB/s");

    let mut s = String::new();
    s.push_str("## Exact counting: o200k / cl100k against tiktoken-rs\n\n");
    s.push_str(&format!(
        "Each text, thinking, tool-call and tool-result string counted on its own, best of 5, one \
         thread, release build; {}. ctxlab's exact counters use the `bpe-openai` crate; the peer \
         is `tiktoken-rs` `encode_ordinary(text).len()`. *Real logs*: {}. *Generated*: the 20 MB \
         Claude Code corpus of benches/common/corpus.rs. Target (DESIGN.md §9): ≥ 1.5× tiktoken-rs.\n\n",
        machine(),
        REAL_LOGS.join(", ")
    ));
    s.push_str(
        "| texts | vocabulary | MB | ctxlab | tiktoken-rs | speed-up | tokens | same counts |\n",
    );
    s.push_str("|---|---|---:|---:|---:|---:|---:|---|\n");
    for r in &rows {
        s.push_str(&format!(
            "| {} | {} | {:.1} | {:.0} MB/s | {:.0} MB/s | **{:.2}×** | {} | {} |\n",
            r.corpus,
            r.vocabulary,
            mb(r.bytes),
            mb(r.bytes) / r.ours.as_secs_f64(),
            mb(r.bytes) / r.peer.as_secs_f64(),
            r.peer.as_secs_f64() / r.ours.as_secs_f64(),
            fmt_tokens(r.tokens),
            if r.agree { "yes" } else { "NO" }
        ));
    }
    for r in rows.iter().filter(|r| r.corpus == "real logs") {
        s.push_str(&format!(
            "\nVocabulary load on first use, {}: ctxlab {:.0} ms, tiktoken-rs {:.0} ms.",
            r.vocabulary,
            r.ours_init.as_secs_f64() * 1e3,
            r.peer_init.as_secs_f64() * 1e3
        ));
    }
    s.push('\n');
    s.push_str(&format!(
        "\nFor scale, the heuristic counts the generated texts at {heuristic:.0} MB/s; chars4 reads \
         only each text's length.\n"
    ));
    write_fragment("tokens", &s);
}
