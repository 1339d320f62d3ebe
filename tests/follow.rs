//! Following a log while it is written: logs are copied into a temporary file in random-sized
//! pieces (splitting lines and UTF-8 sequences), the follower polling after each piece; at the end
//! its session must equal `load_file` of the finished file.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use ctxlab::formats::{self, Follower, Update};
use ctxlab::model::Session;

fn workspace(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

mod real_logs;
use real_logs::real;

const CLAUDE_SAMPLE: &str =
    "samples/claude-code/-home-maren-src-tidewater/9874603d-3fea-4774-a473-54ebb495ce20.jsonl";

/// xorshift: deterministic pieces without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Cut points for `data`: random piece sizes around `pieces` pieces, plus cuts inside a few
/// multi-byte UTF-8 sequences and right before a few newlines.
fn cuts(data: &[u8], pieces: u64, rng: &mut Rng) -> Vec<usize> {
    let avg = (data.len() as u64 / pieces).max(1);
    let mut cuts = Vec::new();
    let mut at = 0usize;
    while at < data.len() {
        at += 1 + rng.below(2 * avg) as usize;
        cuts.push(at.min(data.len()));
    }
    let inside_utf8: Vec<usize> = (1..data.len())
        .filter(|&i| data[i] & 0xC0 == 0x80 && data[i - 1] >= 0xC0)
        .collect();
    for _ in 0..5 {
        if !inside_utf8.is_empty() {
            cuts.push(inside_utf8[rng.below(inside_utf8.len() as u64) as usize]);
        }
    }
    let newlines: Vec<usize> = memchr_all(data, b'\n');
    for _ in 0..5 {
        if !newlines.is_empty() {
            cuts.push(newlines[rng.below(newlines.len() as u64) as usize]);
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

fn memchr_all(data: &[u8], b: u8) -> Vec<usize> {
    data.iter()
        .enumerate()
        .filter_map(|(i, &x)| (x == b).then_some(i))
        .collect()
}

fn append(path: &Path, bytes: &[u8]) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(bytes).unwrap();
}

type CallPrint = (Option<ctxlab::model::Usage>, Option<usize>, usize);

fn call_print(c: &ctxlab::model::Call) -> CallPrint {
    (c.usage, c.reply, c.context_end)
}

/// Everything the updates announced, to check them against the session they describe.
#[derive(Default)]
struct Seen {
    changed_calls: usize,
    messages: usize,
    calls: usize,
    compactions: usize,
    agents: usize,
    bytes: u64,
}

impl Seen {
    fn take(&mut self, u: &Update, s: &Session) {
        assert!(u.reloaded.is_none(), "unexpected reload: {:?}", u.reloaded);
        assert_eq!(u.messages.start, self.messages, "messages only grow");
        assert_eq!(u.compactions.start, self.compactions);
        assert_eq!(u.agents.start, self.agents);
        assert!(u.calls.windows(2).all(|w| w[0] < w[1]));
        assert!(u.calls.iter().all(|&i| i < s.calls.len()));
        assert!(u.changed_calls.iter().all(|&i| i < s.calls.len()));
        self.messages = u.messages.end;
        self.compactions = u.compactions.end;
        self.agents = u.agents.end;
        self.calls += u.calls.len();
        self.bytes += u.bytes;
        assert_eq!(self.messages, s.messages.len());
        assert_eq!(self.calls, s.calls.len(), "every call is announced once");
    }
}

/// Writes `src` into `dst` piece by piece, polling `f` after each piece. The follower is opened
/// once the first line is complete (a log with no complete line cannot be recognised yet).
fn write_following(
    f: &mut Option<Follower>,
    src: &[u8],
    dst: &Path,
    pieces: u64,
    rng: &mut Rng,
    seen: &mut Seen,
) {
    let mut from = 0;
    for cut in cuts(src, pieces, rng) {
        append(dst, &src[from..cut]);
        from = cut;
        match f {
            None => {
                if src[..cut].contains(&b'\n') {
                    let opened = Follower::open(dst).unwrap();
                    let s = opened.session();
                    seen.messages = s.messages.len();
                    seen.calls = s.calls.len();
                    seen.compactions = s.compactions.len();
                    seen.agents = s.agents.len();
                    seen.bytes = s.source.bytes;
                    *f = Some(opened);
                }
            }
            Some(f) => {
                let before = f.session().source.bytes;
                let calls_before: Vec<_> = f.session().calls.iter().map(call_print).collect();
                // A message changes when it gets parts or its recorded size (a Codex reply is
                // sized when its token_count arrives).
                let parts_before: Vec<_> = f
                    .session()
                    .messages
                    .iter()
                    .map(|m| (m.parts.len(), m.flags))
                    .collect();
                match f.poll().unwrap() {
                    Some(u) => {
                        // What the update calls changed is what changed.
                        if !u.calls_reordered {
                            let s = f.session();
                            let changed: Vec<usize> = (0..calls_before.len())
                                .filter(|&i| call_print(&s.calls[i]) != calls_before[i])
                                .collect();
                            assert_eq!(u.changed_calls, changed);
                            let changed: Vec<usize> = (0..parts_before.len())
                                .filter(|&i| {
                                    (s.messages[i].parts.len(), s.messages[i].flags)
                                        != parts_before[i]
                                })
                                .collect();
                            assert_eq!(u.changed_messages, changed);
                            seen.changed_calls += u.changed_calls.len();
                        }
                        assert!(u.reloaded.is_none(), "unexpected reload: {:?}", u.reloaded);
                        assert_eq!(u.bytes, f.session().source.bytes - before, "{u:?}");
                        seen.take(&u, f.session());
                    }
                    None => assert_eq!(f.session().source.bytes, before),
                }
            }
        }
    }
}

/// Follows `src` written into a temporary file of the same name and checks the result against
/// loading the finished file.
fn follow_equals_load(src: &Path, seed: u64, pieces: u64) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join(src.file_name().unwrap());
    let data = fs::read(src).unwrap();
    let mut rng = Rng(seed);
    let mut f = None;
    let mut seen = Seen::default();
    write_following(&mut f, &data, &dst, pieces, &mut rng, &mut seen);
    let f = f.expect("the log has a complete line");
    let loaded = formats::load_file(&dst).unwrap();
    assert!(
        !loaded.calls.is_empty() || !loaded.messages.is_empty(),
        "{}",
        src.display()
    );
    assert_sessions_equal(f.session(), &loaded, src);
    assert_eq!(
        seen.bytes,
        data.len() as u64,
        "every byte read exactly once"
    );
    seen.changed_calls
}

fn assert_sessions_equal(followed: &Session, loaded: &Session, what: &Path) {
    if followed != loaded {
        // Say where they part instead of dumping both sessions.
        let first = |a: usize, b: usize, eq: &dyn Fn(usize) -> bool| {
            (0..a.min(b)).find(|&i| !eq(i)).unwrap_or(a.min(b))
        };
        let m = first(followed.messages.len(), loaded.messages.len(), &|i| {
            followed.messages[i] == loaded.messages[i]
        });
        let c = first(followed.calls.len(), loaded.calls.len(), &|i| {
            followed.calls[i] == loaded.calls[i]
        });
        panic!(
            "{}: followed session differs from the loaded one: messages {} vs {} (first difference at {m}), calls {} vs {} (first difference at {c}), compactions equal {}, agents equal {}, warnings equal {}, source equal {}, id {:?} vs {:?}",
            what.display(),
            followed.messages.len(),
            loaded.messages.len(),
            followed.calls.len(),
            loaded.calls.len(),
            followed.compactions == loaded.compactions,
            followed.agents == loaded.agents,
            followed.warnings == loaded.warnings,
            followed.source == loaded.source,
            followed.id,
            loaded.id,
        );
    }
}

#[test]
fn every_followable_jsonl_sample_followed_in_pieces_equals_loading_it() {
    let samples = [
        CLAUDE_SAMPLE,
        "samples/codex/rollout-2026-03-14T09-12-44-019c1754-a43c-7709-85e2-fa8bb43a4f52.jsonl",
        "samples/pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl",
        "samples/fuseraft/ctx_snapshots_a3f9c2d1e8b7.jsonl",
        "samples/native/helpdesk-two-agents.ctxlab.jsonl",
        "samples/native/pi-negative-phase-with-compaction.ctxlab.jsonl",
    ];
    for (i, rel) in samples.iter().enumerate() {
        let p = workspace(rel);
        assert!(p.exists(), "sample {} is missing", p.display());
        for seed in 1..=3u64 {
            // Small pieces: most polls see a line split in two.
            follow_equals_load(&p, seed * 7919 + i as u64, 60);
        }
    }
}

#[test]
fn real_logs_followed_in_pieces_equal_loading_them() {
    for (i, rel) in [
        "claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl",
        "claude-code_fundwise/claude-session.jsonl",
        "codex-cli_gildore-arena/codex-session.jsonl",
        "pi-agent_pi-mono/session.jsonl",
    ]
    .iter()
    .enumerate()
    {
        let changed = follow_equals_load(&real(rel), 0x9E37_79B9 + i as u64, 150);
        if rel.starts_with("claude-code_vr-forest") {
            // Claude Code 2.1.37 writes growing usage snapshots of one response on several lines.
            assert!(changed > 0, "no call was reported changed in {rel}");
        }
    }
}

/// The Claude Code sample with its subagent folder, written main file first, then the subagent
/// files (as Claude Code does when a subagent runs after the Task call): exactly `load_file`.
#[test]
fn subagent_files_appearing_later_are_followed_too() {
    let src = workspace(CLAUDE_SAMPLE);
    let src_sub = src.with_extension("").join("subagents");
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join(src.file_name().unwrap());
    let dst_sub = dst.with_extension("").join("subagents");
    let mut rng = Rng(42);
    let mut f = None;
    let mut seen = Seen::default();
    write_following(
        &mut f,
        &fs::read(&src).unwrap(),
        &dst,
        30,
        &mut rng,
        &mut seen,
    );
    let missing = |s: &Session| {
        s.warnings
            .iter()
            .filter(|w| w.message.contains("has no file"))
            .count()
    };
    assert_eq!(
        missing(f.as_ref().unwrap().session()),
        1,
        "before its file exists, the subagent is reported missing"
    );
    let agents_before = f.as_ref().unwrap().session().agents.len();

    fs::create_dir_all(&dst_sub).unwrap();
    let mut subs: Vec<PathBuf> = fs::read_dir(&src_sub)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    subs.sort();
    let mut new_agents = Vec::new();
    let mut subagent_calls = 0;
    for sub in &subs {
        let data = fs::read(sub).unwrap();
        let target = dst_sub.join(sub.file_name().unwrap());
        // The file appears with its first line, then grows.
        let first = data.iter().position(|&b| b == b'\n').unwrap() + 1;
        append(&target, &data[..first]);
        let follower = f.as_mut().unwrap();
        if let Some(u) = follower.poll().unwrap() {
            new_agents.extend(u.agents.clone());
            seen.take(&u, follower.session());
        }
        let calls_before = seen.calls;
        write_following(&mut f, &data[first..], &target, 10, &mut rng, &mut seen);
        subagent_calls += seen.calls - calls_before;
    }
    let f = f.unwrap();
    let s = f.session();
    // agent-acompact-* is the summarizer's call, not an agent: one subagent.
    assert_eq!(new_agents, vec![agents_before]);
    assert!(subagent_calls > 0, "the subagent's calls were announced");
    assert_eq!(s.agents[agents_before].parent, Some(0));
    assert!(s.agents[agents_before].spawned_by.is_some());
    assert_eq!(missing(s), 0, "the warning goes once the file is there");
    assert_sessions_equal(s, &formats::load_file(&dst).unwrap(), &dst);
}

fn codex_sample() -> PathBuf {
    workspace(
        "samples/codex/rollout-2026-03-14T09-12-44-019c1754-a43c-7709-85e2-fa8bb43a4f52.jsonl",
    )
}

/// Byte offsets just past each line of `data`.
fn line_ends(data: &[u8]) -> Vec<usize> {
    memchr_all(data, b'\n').into_iter().map(|i| i + 1).collect()
}

#[test]
fn a_line_still_being_written_waits_for_its_newline() {
    let data = fs::read(codex_sample()).unwrap();
    let ends = line_ends(&data);
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("rollout.jsonl");
    fs::write(&dst, &data[..ends[5]]).unwrap();
    let mut f = Follower::open(&dst).unwrap();
    let bytes = f.session().source.bytes;
    assert_eq!(bytes, ends[5] as u64);
    // Half of line 7, cut inside a multi-byte character when the line has one.
    let line = &data[ends[5]..ends[6]];
    let cut = line
        .iter()
        .position(|&b| b >= 0xC0)
        .map_or(line.len() / 2, |i| i + 1);
    append(&dst, &line[..cut]);
    assert_eq!(f.poll().unwrap(), None, "half a line is not read");
    assert_eq!(f.session().source.bytes, bytes);
    append(&dst, &line[cut..]);
    let u = f.poll().unwrap().expect("the completed line is read");
    assert_eq!(u.bytes, line.len() as u64);
    assert!(
        f.session().warnings.is_empty(),
        "{:?}",
        f.session().warnings
    );
}

/// Codex writes a reply's items, then its token_count: the call shows at once without usage and
/// is reported changed when its usage arrives.
#[test]
fn a_call_whose_usage_arrives_later_is_reported_changed() {
    let data = fs::read(codex_sample()).unwrap();
    let ends = line_ends(&data);
    let lines: Vec<serde_json::Value> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let token_count = lines
        .iter()
        .position(|v| v["payload"]["type"] == "token_count" && v["payload"]["info"].is_object())
        .expect("the sample has a token_count");
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("rollout.jsonl");
    fs::write(&dst, &data[..ends[token_count - 1]]).unwrap();
    let mut f = Follower::open(&dst).unwrap();
    let n = f.session().calls.len();
    assert!(n > 0);
    assert_eq!(
        f.session().calls[n - 1].usage,
        None,
        "waiting for its token_count"
    );
    append(&dst, &data[ends[token_count - 1]..ends[token_count]]);
    let u = f.poll().unwrap().unwrap();
    assert_eq!(u.changed_calls, vec![n - 1]);
    assert!(u.calls.is_empty());
    let usage = f.session().calls[n - 1].usage.expect("usage now recorded");
    let last = &lines[token_count]["payload"]["info"]["last_token_usage"];
    assert_eq!(usage.output, last["output_tokens"].as_u64().unwrap());
}

#[test]
fn a_truncated_or_replaced_log_is_read_again_and_says_so() {
    let data = fs::read(codex_sample()).unwrap();
    let ends = line_ends(&data);
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("rollout.jsonl");
    fs::write(&dst, &data[..ends[40]]).unwrap();
    let mut f = Follower::open(&dst).unwrap();

    fs::write(&dst, &data[..ends[10]]).unwrap();
    let u = f.poll().unwrap().expect("a truncation is reported");
    let reason = u.reloaded.expect("read again");
    assert!(reason.contains("shrank"), "{reason}");
    assert_eq!(f.session(), &formats::load_file(&dst).unwrap());
    assert_eq!(u.calls.len(), f.session().calls.len(), "every call is new");

    // Another file moved over the log (same size or larger: only its identity tells).
    let other = dir.path().join("other.jsonl");
    fs::write(&other, &data[..ends[30]]).unwrap();
    fs::rename(&other, &dst).unwrap();
    let u = f.poll().unwrap().expect("a replacement is reported");
    assert!(u.reloaded.unwrap().contains("replaced"));
    assert_eq!(f.session(), &formats::load_file(&dst).unwrap());

    // Rewritten in place with other content: the last byte read no longer ends a line.
    let mut rewritten = data[..ends[30]].to_vec();
    rewritten.insert(ends[30] - 1, b' ');
    rewritten.truncate(ends[30]);
    fs::OpenOptions::new()
        .write(true)
        .open(&dst)
        .unwrap()
        .write_all(&rewritten)
        .unwrap();
    let u = f.poll().unwrap().expect("a rewrite is reported");
    assert!(u.reloaded.unwrap().contains("rewritten"));

    fs::remove_file(&dst).unwrap();
    let e = f.poll().unwrap_err();
    assert!(e.to_string().contains("rollout.jsonl"), "{e}");
}

#[test]
fn logs_that_are_not_appended_line_by_line_are_refused_with_the_reason() {
    for (rel, why) in [
        (
            "samples/openai/helpdesk-two-agents.json",
            "one JSON document",
        ),
        ("samples/cline/task-1/ui_messages.json", "one JSON document"),
        (
            "samples/usage-counter/proxy.jsonl",
            "does not keep its state",
        ),
    ] {
        let p = workspace(rel);
        let e = Follower::open(&p)
            .err()
            .unwrap_or_else(|| panic!("{rel} was followed"));
        let msg = e.to_string();
        assert!(
            msg.contains("following is not supported") && msg.contains(why),
            "{rel}: {msg}"
        );
        assert!(formats::load_file(&p).is_ok(), "{rel} still loads");
    }
}

/// HTTP captures (what `ctxlab capture` writes) are followed by reading the complete lines kept so
/// far again at each poll: written in pieces, the followed session ends equal to loading the
/// file; every update is either a plain addition or a reload that says why, and every byte is
/// read once.
#[test]
fn http_captures_followed_in_pieces_equal_loading_them() {
    let mut files: Vec<PathBuf> = [
        "samples/http-capture/anthropic-claude-code.jsonl",
        "samples/http-capture/gemini-adk.jsonl",
        "samples/http-capture/openai-chat.jsonl",
    ]
    .iter()
    .map(|r| workspace(r))
    .collect();
    files.push(real("llm-trace-proxy_wang0618/adk-deepresearch.jsonl"));
    let mut reloads = 0;
    let mut updates = 0;
    for (i, src) in files.iter().enumerate() {
        assert!(src.exists(), "{} is missing", src.display());
        let data = fs::read(src).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let dst = dir.path().join(src.file_name().unwrap());
        let mut rng = Rng(31 + i as u64);
        let mut f: Option<Follower> = None;
        let mut bytes = 0;
        let mut from = 0;
        for cut in cuts(&data, 25, &mut rng) {
            append(&dst, &data[from..cut]);
            from = cut;
            match &mut f {
                None if data[..cut].contains(&b'\n') => {
                    let opened = Follower::open(&dst).unwrap();
                    assert_eq!(opened.format(), "http-capture");
                    bytes = opened.session().source.bytes;
                    f = Some(opened);
                }
                None => {}
                Some(f) => {
                    if let Some(u) = f.poll().unwrap() {
                        updates += 1;
                        bytes += u.bytes;
                        let s = f.session();
                        if let Some(why) = &u.reloaded {
                            reloads += 1;
                            assert!(why.contains("shown anew"), "{why}");
                            assert_eq!(u.messages, 0..s.messages.len());
                            assert_eq!(u.calls.len(), s.calls.len());
                        } else {
                            assert_eq!(u.messages.end, s.messages.len());
                        }
                    }
                }
            }
        }
        let f = f.expect("the capture has a complete line");
        let loaded = formats::load_file(&dst).unwrap();
        assert!(!loaded.calls.is_empty(), "{}", src.display());
        assert_sessions_equal(f.session(), &loaded, src);
        assert_eq!(
            bytes,
            data.len() as u64,
            "{}: every byte read once",
            src.display()
        );
    }
    assert!(updates > 0);
    assert!(
        reloads < updates,
        "{reloads} of {updates} updates were reloads"
    );
}

/// `ctxlab watch --json --exit-after N` against a file another thread appends to.
#[test]
fn watch_prints_each_new_call_as_it_is_appended() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let src = real("pi-agent_pi-mono/session.jsonl");
    let data = fs::read(&src).unwrap();
    let ends = line_ends(&data);
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("session.jsonl");
    let head = ends[ends.len() / 2];
    fs::write(&dst, &data[..head]).unwrap();
    let before = formats::load_file(&dst).unwrap().calls.len();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .args(["watch", "--json", "--interval", "20", "--exit-after", "5"])
        .arg(&dst)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // Append only once the summary is out, so that it describes exactly the first half.
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let session: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(session["event"], "session");
    assert_eq!(
        session["report"]["totals"]["calls"].as_u64().unwrap() as usize,
        before
    );
    let lines = std::thread::spawn(move || {
        stdout
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(&l.unwrap()).unwrap())
            .collect::<Vec<_>>()
    });
    let writer = {
        let dst = dst.clone();
        std::thread::spawn(move || {
            let mut rng = Rng(5);
            let mut at = head;
            while at < data.len() {
                let next = (at + 1 + rng.below(3000) as usize).min(data.len());
                append(&dst, &data[at..next]);
                at = next;
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("ctxlab watch did not stop after 5 calls");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    writer.join().unwrap();
    assert!(status.success(), "{status}");
    let events = lines.join().unwrap();
    let calls: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event"] == "call")
        .map(|e| &e["call"])
        .collect();
    assert_eq!(calls.len(), 5);
    let full = formats::load_file(&dst).unwrap();
    for (k, c) in calls.iter().enumerate() {
        let i = c["index"].as_u64().unwrap() as usize;
        assert_eq!(i, before + k, "calls in order, none skipped");
        let u = full.calls[i].usage.expect("pi records usage");
        assert_eq!(c["usage"]["output"].as_u64().unwrap(), u.output);
        assert_eq!(c["context"].as_u64().unwrap(), u.context_tokens());
    }
}

/// A session in terms that do not depend on how the agents' lines interleave in the session's
/// vectors: per agent, its messages, calls and compactions with indices counted within the agent.
fn per_agent(s: &Session) -> serde_json::Value {
    use serde_json::json;
    let files = &s.source.files;
    let file = |f: u32| files[f as usize].clone();
    // Position of each message within its agent.
    let mut pos = Vec::with_capacity(s.messages.len());
    let mut count = vec![0usize; s.agents.len()];
    for m in &s.messages {
        pos.push(count[m.agent]);
        count[m.agent] += 1;
    }
    // Messages of `agent` before global index `end`.
    let before = |agent: usize, end: usize| {
        s.messages[..end]
            .iter()
            .filter(|m| m.agent == agent)
            .count()
    };
    let agent_id = |a: usize| s.agents[a].id.clone();
    let mut agents = BTreeMap::new();
    for (a, ag) in s.agents.iter().enumerate() {
        let messages: Vec<_> = s
            .messages
            .iter()
            .filter(|m| m.agent == a)
            .map(|m| {
                json!([
                    m.role,
                    m.parts,
                    m.timestamp,
                    m.flags,
                    file(m.source.file),
                    m.source.line
                ])
            })
            .collect();
        let calls: Vec<_> = s
            .calls
            .iter()
            .filter(|c| c.agent == a)
            .map(|c| {
                json!([
                    before(a, c.context_end),
                    c.reply.map(|r| pos[r]),
                    c.usage,
                    c.model,
                    c.timestamp,
                    c.request_id,
                    file(c.source.file),
                    c.source.line
                ])
            })
            .collect();
        let compactions: Vec<_> = s
            .compactions
            .iter()
            .filter(|c| c.agent == a)
            .map(|c| {
                json!([
                    before(a, c.at_message),
                    c.summary.map(|m| pos[m]),
                    c.kept_from.map(|m| before(a, m)),
                    c.trigger,
                    c.pre_tokens,
                    c.timestamp,
                    file(c.source.file),
                    c.source.line
                ])
            })
            .collect();
        agents.insert(
            ag.id.clone(),
            json!({
                "name": ag.name, "model": ag.model, "parent": ag.parent.map(agent_id),
                "spawned_by": ag.spawned_by, "messages": messages, "calls": calls,
                "compactions": compactions,
            }),
        );
    }
    let mut warnings: Vec<String> = s.warnings.iter().map(|w| w.to_string()).collect();
    warnings.sort();
    let mut sorted_files = files.clone();
    sorted_files.sort();
    json!({
        "id": s.id, "title": s.title, "format": s.source.format, "files": sorted_files,
        "bytes": s.source.bytes, "usage_only": s.usage_only, "thresholds": s.thresholds,
        "agents": agents, "warnings": warnings,
        // Which agent made each call, in the session's (time) order.
        "call_agents": s.calls.iter().map(|c| agent_id(c.agent)).collect::<Vec<_>>(),
    })
}

/// The main file and a subagent file growing at the same time (a subagent working while the main
/// file gets its progress entries): the same session as loading both finished files, up to how
/// the two agents' messages interleave in the session's vectors (appended as they arrive).
#[test]
fn main_and_subagent_files_growing_together_give_the_loaded_session() {
    let src = workspace(CLAUDE_SAMPLE);
    let src_sub = src.with_extension("").join("subagents");
    let sub_name = "agent-afd0ae1aa5bccd950.jsonl";
    let main = fs::read(&src).unwrap();
    let sub = fs::read(src_sub.join(sub_name)).unwrap();
    let main_ends = line_ends(&main);
    for seed in [3u64, 17, 99] {
        let mut rng = Rng(seed);
        let dir = tempfile::tempdir().unwrap();
        let dst = dir.path().join(src.file_name().unwrap());
        let dst_sub = dst.with_extension("").join("subagents");
        fs::create_dir_all(&dst_sub).unwrap();
        let dst_subfile = dst_sub.join(sub_name);
        // Half the main file first, then both grow in random turns.
        let mut m_at = main_ends[main_ends.len() / 2];
        fs::write(&dst, &main[..m_at]).unwrap();
        let mut f = Follower::open(&dst).unwrap();
        let mut s_at = 0;
        let mut seen_calls = f.session().calls.len();
        while m_at < main.len() || s_at < sub.len() {
            let main_turn = s_at == sub.len() || (m_at < main.len() && rng.below(2) == 0);
            let (data, at, path) = if main_turn {
                (&main, &mut m_at, &dst)
            } else {
                (&sub, &mut s_at, &dst_subfile)
            };
            let next = (*at + 1 + rng.below(20_000) as usize).min(data.len());
            append(path, &data[*at..next]);
            *at = next;
            if let Some(u) = f.poll().unwrap() {
                assert!(u.reloaded.is_none());
                seen_calls += u.calls.len();
                assert_eq!(seen_calls, f.session().calls.len());
            }
        }
        let loaded = formats::load_file(&dst).unwrap();
        assert_eq!(
            per_agent(f.session()),
            per_agent(&loaded),
            "seed {seed}: followed and loaded sessions differ"
        );
        assert_eq!(f.session().agents.len(), 2);
    }
}

/// The app polls from a background thread.
#[test]
fn a_follower_can_move_to_another_thread() {
    fn send<T: Send>() {}
    send::<Follower>();
    send::<Update>();
}
