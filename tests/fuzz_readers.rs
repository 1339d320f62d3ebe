//! Every reader fed damaged versions of the samples (truncated, lines shuffled, bytes flipped,
//! lines duplicated) must never panic; what it reports carries a line number.

use std::path::{Path, PathBuf};

use ctxlab::formats;
use ctxlab::model::Session;

/// xorshift64*: deterministic damage, reproducible from the seed printed on failure.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn samples() -> Vec<(PathBuf, &'static str)> {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/samples"));
    let mut out = Vec::new();
    fn walk(p: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(p).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if !p.ends_with("subagents") {
                    walk(&p, out);
                }
            } else {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    for f in files {
        // A Cline task's metadata sits beside its logs but is not one; OpenCode's storage keeps
        // messages and parts in files read with their session; a SQLite store is not text (its
        // pages are SQLite's to check).
        let s = f.to_string_lossy();
        if f.file_name().is_some_and(|n| n == "task_metadata.json")
            || s.contains("/storage/message/")
            || s.contains("/storage/part/")
            || f.extension().is_some_and(|x| x == "db")
        {
            continue;
        }
        let fmt = formats::detect(&f).unwrap();
        out.push((f, fmt));
    }
    assert!(out.len() >= 8, "{out:?}");
    out
}

/// At most this many lines of a sample: enough for every entry type, quick in a debug build.
const MAX_LINES: usize = 400;

fn head(bytes: &[u8]) -> Vec<u8> {
    let mut n = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            n += 1;
            if n == MAX_LINES {
                return bytes[..=i].to_vec();
            }
        }
    }
    bytes.to_vec()
}

fn variants(orig: &[u8], rng: &mut Rng) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    for _ in 0..4 {
        let cut = rng.below(orig.len());
        v.push((format!("truncated at byte {cut}"), orig[..cut].to_vec()));
    }
    let mut lines: Vec<&[u8]> = orig.split(|&b| b == b'\n').collect();
    for i in (1..lines.len()).rev() {
        let j = rng.below(i + 1);
        lines.swap(i, j);
    }
    v.push(("lines shuffled".into(), lines.join(&b'\n')));
    for round in 0..6 {
        let mut b = orig.to_vec();
        let flips = 1 + rng.below(if round < 3 { 4 } else { 200 });
        for _ in 0..flips {
            let i = rng.below(b.len());
            b[i] = match rng.below(6) {
                0 => 0xFF,
                1 => b'"',
                2 => b'\n',
                3 => b'{',
                4 => b'9',
                _ => rng.next() as u8,
            };
        }
        v.push((format!("{flips} bytes flipped"), b));
    }
    let mut lines: Vec<&[u8]> = orig.split(|&b| b == b'\n').collect();
    if lines.len() > 2 {
        let i = rng.below(lines.len() - 1);
        lines.insert(i, lines[i]);
        let j = rng.below(lines.len());
        lines.remove(j);
    }
    v.push((
        "a line duplicated and one dropped".into(),
        lines.join(&b'\n'),
    ));
    v.push(("empty".into(), Vec::new()));
    v.push((
        "binary".into(),
        (0..4096).map(|_| rng.next() as u8).collect(),
    ));
    v
}

/// Readers whose every warning is about a line (other readers may add file-level notes, line 0).
const LINE_WARNINGS: &[&str] = &[
    "claude-code",
    "codex",
    "pi",
    "openai-messages",
    "fuseraft-snapshots",
    "native",
];

fn check(s: &Session, what: &str, lines: usize) {
    for w in s
        .warnings
        .iter()
        .filter(|_| LINE_WARNINGS.contains(&s.source.format.as_str()))
    {
        assert!(
            w.line >= 1 && w.line as usize <= lines + 1,
            "{what}: warning without a line: {w}"
        );
        assert!(!w.file.is_empty(), "{what}: {w}");
    }
    let n = s.messages.len();
    for m in &s.messages {
        assert!(m.agent < s.agents.len(), "{what}");
    }
    for c in &s.calls {
        assert!(c.agent < s.agents.len() && c.context_end <= n, "{what}");
        assert!(c.reply.is_none_or(|r| r < n), "{what}");
    }
    for c in &s.compactions {
        assert!(c.agent < s.agents.len() && c.at_message <= n, "{what}");
        assert!(c.summary.is_none_or(|r| r < n), "{what}");
        assert!(c.kept_from.is_none_or(|k| k <= c.at_message), "{what}");
    }
}

#[test]
fn damaged_samples_never_panic_and_report_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x00C0_FFEE_D00D);
    let mut loaded = 0;
    let mut warned = 0;
    for (path, format) in samples() {
        let orig = head(&std::fs::read(&path).unwrap());
        let ext = path.extension().unwrap().to_str().unwrap();
        for (i, (what, bytes)) in variants(&orig, &mut rng).into_iter().enumerate() {
            let what = format!("{} ({format}), {what}", path.display());
            let p = dir.path().join(format!("v{i}.{ext}"));
            std::fs::write(&p, &bytes).unwrap();
            let lines = bytes.iter().filter(|&&b| b == b'\n').count();
            // Through detection, and straight into the sample's own reader.
            let by_detect = std::panic::catch_unwind(|| formats::load_file(&p));
            let direct = std::panic::catch_unwind(|| formats::load_as(&p, format));
            for r in [by_detect, direct] {
                match r {
                    Err(_) => panic!("{what}: reader panicked"),
                    Ok(Ok(s)) => {
                        loaded += 1;
                        warned += usize::from(!s.warnings.is_empty());
                        check(&s, &what, lines);
                    }
                    Ok(Err(e)) => {
                        let msg = e.to_string();
                        assert!(
                            msg.contains(&p.display().to_string()),
                            "{what}: error names no file: {msg}"
                        );
                        match e {
                            ctxlab::Error::Parse { line, .. } => {
                                assert!(line >= 1, "{what}: {msg}")
                            }
                            ctxlab::Error::UnknownFormat { tried, .. } => {
                                assert!(tried.contains("claude-code"), "{what}")
                            }
                            other => panic!("{what}: unexpected error kind {other:?}"),
                        }
                    }
                }
            }
        }
    }
    // The damage must actually reach the readers' recovery paths, not just fail detection.
    assert!(loaded > 50, "{loaded}");
    assert!(warned > 30, "{warned}");
}

#[test]
fn a_line_over_ten_megabytes_loads() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.jsonl");
    let big = "x".repeat(12 << 20);
    let text = format!(
        "{{\"type\":\"user\",\"sessionId\":\"s\",\"message\":{{\"role\":\"user\",\"content\":\"hi\"}}}}\n{{\"type\":\"user\",\"sessionId\":\"s\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"{big}\"}}]}}}}\n{{\"type\":\"assistant\",\"sessionId\":\"s\",\"message\":{{\"id\":\"m1\",\"model\":\"claude\",\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"ok\"}}],\"usage\":{{\"input_tokens\":5,\"output_tokens\":1}}}}}}"
    );
    std::fs::write(&p, text).unwrap();
    let s = formats::load_file(&p).unwrap();
    assert_eq!(s.messages.len(), 3);
    assert_eq!(
        s.calls.len(),
        1,
        "the last line has no newline and still counts"
    );
    // Only that its tool result answers no call the log holds (formats::pairs).
    assert!(
        s.warnings
            .iter()
            .all(|w| w.message.contains("tool result for t answers no earlier")),
        "{:?}",
        s.warnings
    );
}
