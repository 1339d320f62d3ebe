//! Issue #25, "a hostile world", the readers' side (findings 12, 13, 14, 21, 22): inputs built
//! from the project's own samples that were silently lost, miscounted or badly reported. Each
//! test failed before its fix.

use std::path::{Path, PathBuf};

use ctxlab::formats;
use ctxlab::model::Session;

mod real_logs;
use real_logs::real;

fn sample(rel: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/samples")).join(rel)
}

/// 1-based line of byte `at`.
fn line_of(bytes: &[u8], at: usize) -> u32 {
    1 + bytes[..at].iter().filter(|&&b| b == b'\n').count() as u32
}

/// The first space between two ASCII letters past the middle of `bytes` (inside some text: JSON
/// keys and syntax never hold one; else the first one), replaced by an invalid byte. Returns its offset.
fn break_utf8(bytes: &mut [u8]) -> usize {
    let ok = |i: usize| {
        bytes[i] == b' ' && bytes[i - 1].is_ascii_alphabetic() && bytes[i + 1].is_ascii_alphabetic()
    };
    let at = (bytes.len() / 2..bytes.len() - 1)
        .find(|&i| ok(i))
        .or_else(|| (1..bytes.len() - 1).find(|&i| ok(i)))
        .expect("a space between two letters");
    bytes[at] = 0xFF;
    at
}

fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir(&dest).unwrap();
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

fn counts(s: &Session) -> (usize, usize) {
    (s.messages.len(), s.calls.len())
}

/// Finding 13: one invalid byte failed a whole Cline, SWE-agent or mini-swe-agent file, cut an
/// OpenAI JSON document short, stopped OTel reading and gave no warning in Aider. Every reader
/// now keeps every entry, with U+FFFD and one warning at the line of the byte.
#[test]
fn invalid_utf8_is_replaced_and_warned_in_every_reader() {
    let cases = [
        "claude-code/-home-maren-src-tidewater/9874603d-3fea-4774-a473-54ebb495ce20.jsonl",
        "aider/.aider.chat.history.md",
        "gemini-cli/session-2026-03-03T09-26-5ae1ec23.json",
        "gemini-cli/session-2026-03-04T09-30-c1971d3f.jsonl",
        "codex/rollout-2026-03-14T09-12-44-019c1754-a43c-7709-85e2-fa8bb43a4f52.jsonl",
        "mini-swe-agent/rename-flag.traj.json",
        "otel/otlp-export.json",
        "copilot-cli/be1c1ebd-d288-468d-aca1-4618fd136e8e/events.jsonl",
        "swe-agent/fix-off-by-one.traj",
        "pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl",
        "cline/task-1/ui_messages.json",
        "cline/task-1/api_conversation_history.json",
        "http-capture/openai-chat.jsonl",
        "http-capture/gemini-adk.jsonl",
        "http-capture/anthropic-claude-code.jsonl",
        "managed-agents/events.jsonl",
        "native/helpdesk-two-agents.ctxlab.jsonl",
        "opencode/ses_ed3HBxav6JWJ6otZozRK5m8JEB.json",
        "openai/tidewater-refactor.json",
        "openai/helpdesk-two-agents.json",
    ];
    let mut failures = Vec::new();
    for rel in cases {
        let orig_path = sample(rel);
        let d = tempfile::tempdir().unwrap();
        // The file keeps its name (and a Cline task its folder) so the same reader reads it.
        let dir = d.path().join("t");
        std::fs::create_dir(&dir).unwrap();
        copy_dir(orig_path.parent().unwrap(), &dir);
        let path = dir.join(orig_path.file_name().unwrap());
        let mut bytes = std::fs::read(&path).unwrap();
        let at = break_utf8(&mut bytes);
        let line = line_of(&bytes, at);
        std::fs::write(&path, &bytes).unwrap();
        // A Cline task is read from its ui_messages.json.
        let load_path = if rel.starts_with("cline/") {
            dir.join("ui_messages.json")
        } else {
            path.clone()
        };
        let want = formats::load_file(&if rel.starts_with("cline/") {
            orig_path.with_file_name("ui_messages.json")
        } else {
            orig_path.clone()
        })
        .unwrap();
        let s = match formats::load_file(&load_path) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{rel}: {e}"));
                continue;
            }
        };
        // An HTTP capture's requests repeat the history: a changed message is a new one.
        let same = if rel.starts_with("http-capture/") {
            s.calls.len() == want.calls.len()
        } else {
            counts(&s) == counts(&want)
        };
        if !same {
            failures.push(format!(
                "{rel}: {:?} (messages, calls) instead of {:?}",
                counts(&s),
                counts(&want)
            ));
        }
        let file = path.display().to_string();
        if !s
            .warnings
            .iter()
            .any(|w| w.line == line && w.file == file && w.message.contains("UTF-8"))
        {
            failures.push(format!(
                "{rel}: no UTF-8 warning at {file}:{line}: {:?}",
                s.warnings
            ));
        }
        let text = serde_json::to_string(&s.messages).unwrap();
        // Where the byte lands outside any message: OTel's span attributes, Aider's "Applied
        // edit" note, Copilot's `detailedContent`, Cline's `api_req_started` request echo.
        let outside = ["otel/", "aider/", "copilot-cli/", "cline/task-1/ui"];
        if !text.contains('\u{FFFD}') && !outside.iter().any(|o| rel.starts_with(o)) {
            failures.push(format!("{rel}: no U+FFFD in the messages"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Copies the sample `rel` (with its folder: a Cline task, subagent files) into a temporary
/// folder, edits the file with `edit`, and loads it. Returns the session and the folder.
fn load_edited(
    rel: &str,
    edit: impl FnOnce(&mut Vec<u8>),
) -> (ctxlab::Result<Session>, PathBuf, tempfile::TempDir) {
    let orig = sample(rel);
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t");
    std::fs::create_dir(&dir).unwrap();
    copy_dir(orig.parent().unwrap(), &dir);
    let path = dir.join(orig.file_name().unwrap());
    let mut bytes = std::fs::read(&path).unwrap();
    edit(&mut bytes);
    std::fs::write(&path, &bytes).unwrap();
    (formats::load_file(&path), path, d)
}

fn with_usage(s: &Session) -> usize {
    s.calls.iter().filter(|c| c.usage.is_some()).count()
}

/// Finding 12: a negative, fractional or out-of-range usage figure read as 0 without a word
/// (Claude Code `input_tokens: -5` gave a calibration error of 164 %; pi and Codex the same). In
/// every reader that reads usage, the call now stays, without recorded usage, and a warning
/// names the line and the figure.
#[test]
fn usage_that_is_not_a_token_count_is_warned_and_not_recorded() {
    // (sample, text just before the figure; the first after `after` when given)
    let cases: &[(&str, &str)] = &[
        (
            "claude-code/-home-maren-src-tidewater/9874603d-3fea-4774-a473-54ebb495ce20.jsonl",
            "\"input_tokens\":",
        ),
        (
            "codex/rollout-2026-03-14T09-12-44-019c1754-a43c-7709-85e2-fa8bb43a4f52.jsonl",
            "\"input_tokens\":",
        ),
        (
            "pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl",
            "\"cacheWrite\":",
        ),
        ("openai/tidewater-refactor.json", "\"prompt_tokens\": "),
        ("gemini-cli/session-2026-03-03T09-26-5ae1ec23.json", "\"input\": "),
        ("gemini-cli/session-2026-03-04T09-30-c1971d3f.jsonl", "\"input\":"),
        ("http-capture/anthropic-claude-code.jsonl", "\\\"input_tokens\\\": "),
        ("http-capture/gemini-adk.jsonl", "\"promptTokenCount\": "),
        ("http-capture/openai-chat.jsonl", "\"prompt_tokens\": "),
        ("managed-agents/events.jsonl", "\"input_tokens\": "),
        ("fuseraft/ctx_snapshots_a3f9c2d1e8b7.jsonl", "\"turn_input_tokens\":"),
        ("mini-swe-agent/rename-flag.traj.json", "\"prompt_tokens\": "),
        (
            // The chat span's (the invoke_agent span before it is no call).
            "otel/otlp-export.json",
            "\n               {\"key\": \"gen_ai.usage.input_tokens\", \"value\": {\"intValue\": \"",
        ),
        (
            "copilot-cli/be1c1ebd-d288-468d-aca1-4618fd136e8e/events.jsonl",
            "\"outputTokens\":",
        ),
        ("cline/task-1/ui_messages.json", "\\\"tokensIn\\\":"),
        // A step's (a message's own tokens are not its calls' when it has steps).
        (
            "opencode/ses_ed3HBxav6JWJ6otZozRK5m8JEB.json",
            "\"reason\": \"tool-calls\",\n          \"sessionID\": \"ses_ed3HBxav6JWJ6otZozRK5m8JEB\",\n          \"snapshot\": \"aca9cb3a5d215f90a279a261149713cb917ab002\",\n          \"tokens\": {\n            \"cache\": {\n              \"read\": 0,\n              \"write\": 10410\n            },\n            \"input\": ",
        ),
        ("native/helpdesk-two-agents.ctxlab.jsonl", "\"usage\":"),
    ];
    let mut failures = Vec::new();
    for &(rel, before) in cases {
        let load = |p: &Path| {
            formats::load_file(&if rel.starts_with("cline/") {
                p.with_file_name("ui_messages.json")
            } else {
                p.to_path_buf()
            })
        };
        let good = load(&sample(rel)).unwrap();
        for bad in ["-5", "1.5", "1e30"] {
            let mut line = 0;
            let (s, path, _d) = load_edited(rel, |b| {
                let text = String::from_utf8(b.clone()).unwrap();
                let at = text
                    .find(before)
                    .unwrap_or_else(|| panic!("{rel}: {before}"));
                let from = at + before.len();
                let len = text[from..]
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(0);
                let value = if rel.starts_with("native/") {
                    // The sample's calls have no usage: one is given a usage to break.
                    assert!(text[from..].starts_with("null"));
                    format!("{{\"input\":{bad},\"output\":7}}")
                } else {
                    bad.to_string()
                };
                let len = if rel.starts_with("native/") { 4 } else { len };
                line = 1 + text[..at].matches('\n').count() as u32;
                *b = format!("{}{value}{}", &text[..from], &text[from + len..]).into_bytes();
            });
            let s = match rel.starts_with("cline/") {
                true => formats::load_file(&path.with_file_name("ui_messages.json")),
                false => s,
            };
            let s = match s {
                Ok(s) => s,
                Err(e) => {
                    failures.push(format!("{rel} ({bad}): {e}"));
                    continue;
                }
            };
            let warned = s
                .warnings
                .iter()
                .find(|w| w.message.contains("not a token count"));
            match warned {
                None => failures.push(format!("{rel} ({bad}): no warning: {:?}", s.warnings)),
                Some(w) => {
                    if !w.message.contains(bad.trim_start_matches('+')) {
                        failures.push(format!("{rel} ({bad}): the figure is not named: {w}"));
                    }
                    // JSONL names the entry's line; a document the line where the element
                    // holding the figure starts (a message, a span); an OTLP export is one
                    // object whose spans are placed at its last line.
                    let otel = rel.starts_with("otel/");
                    if w.line == 0 || (w.line > line && !otel) {
                        failures.push(format!("{rel} ({bad}): at line {}, not {line}", w.line));
                    }
                }
            }
            let native = rel.starts_with("native/");
            if s.calls.len() != good.calls.len() {
                failures.push(format!(
                    "{rel} ({bad}): {} calls instead of {}",
                    s.calls.len(),
                    good.calls.len()
                ));
            }
            let want = if native {
                with_usage(&good)
            } else {
                with_usage(&good) - 1
            };
            if with_usage(&s) != want {
                failures.push(format!(
                    "{rel} ({bad}): {} calls with usage, expected {want}",
                    with_usage(&s)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Finding 14: a tool result whose call is missing (an orphan) loaded without a word. It is now
/// kept, with a warning at its line.
#[test]
fn orphan_tool_results_are_warned() {
    let rel = "claude-code/-home-maren-src-tidewater/9874603d-3fea-4774-a473-54ebb495ce20.jsonl";
    let mut dropped = String::new();
    let (s, _path, _d) = load_edited(rel, |b| {
        let text = String::from_utf8(b.clone()).unwrap();
        let lines: Vec<&str> = text.split('\n').collect();
        let i = lines
            .iter()
            .position(|l| l.contains("\"type\":\"assistant\"") && l.contains("\"tool_use\""))
            .unwrap();
        let id = lines[i].split("\"id\":\"toolu_").nth(1).unwrap();
        dropped = format!("toolu_{}", &id[..id.find('"').unwrap()]);
        let mut kept = lines.clone();
        kept.remove(i);
        *b = kept.join("\n").into_bytes();
    });
    let s = s.unwrap();
    assert!(
        s.warnings.iter().any(|w| w.line > 0
            && w.message.contains(&dropped)
            && w.message.contains("answers no earlier")),
        "{dropped}: {:?}",
        s.warnings
    );
}

/// Tool-pair warnings (finding 14's words), one string per warning.
fn pair_warnings(s: &Session) -> Vec<String> {
    s.warnings
        .iter()
        .filter(|w| {
            ["repeats", "answers no earlier", "never answered"]
                .iter()
                .any(|k| w.message.contains(k))
        })
        .map(|w| w.to_string())
        .collect()
}

const CLAUDE: &str =
    "claude-code/-home-maren-src-tidewater/9874603d-3fea-4774-a473-54ebb495ce20.jsonl";

/// Finding 14: a tool call the agent went on without answering (its result line lost) loaded
/// without a word. It is said at the line of the response that made it.
#[test]
fn a_call_never_answered_is_warned_at_its_line() {
    let mut id = String::new();
    let (s, _path, _d) = load_edited(CLAUDE, |b| {
        let text = String::from_utf8(b.clone()).unwrap();
        let lines: Vec<&str> = text.split('\n').collect();
        let i = lines
            .iter()
            .position(|l| l.contains("\"type\":\"user\"") && l.contains("\"tool_result\""))
            .unwrap();
        let after = lines[i].split("\"tool_use_id\":\"").nth(1).unwrap();
        id = after[..after.find('"').unwrap()].to_string();
        let mut kept = lines.clone();
        kept.remove(i);
        *b = kept.join("\n").into_bytes();
    });
    let s = s.unwrap();
    let call_line = s
        .messages
        .iter()
        .find(|m| m.tool_call_ids().any(|c| c == id))
        .unwrap()
        .source
        .line;
    assert!(
        s.warnings
            .iter()
            .any(|w| w.line == call_line && w.message.contains("never answered")),
        "{id} at line {call_line}: {:?}",
        pair_warnings(&s)
    );
}

/// Finding 14: the sample concatenated twice gave 243 messages where the log has 157 and said
/// nothing, and its repeated tool ids then failed fuseraft and FIM One replays ("separates a
/// tool call from its result"). Each response's `message.id` and each tool id met again is now
/// said at its line in the second copy, every response is its own call, and the replays run.
#[test]
fn a_log_concatenated_twice_is_said_and_still_replays() {
    let once = formats::load_file(&sample(CLAUDE)).unwrap();
    assert!(
        pair_warnings(&once).is_empty(),
        "{:?}",
        pair_warnings(&once)
    );
    let lines = std::fs::read_to_string(sample(CLAUDE))
        .unwrap()
        .lines()
        .count() as u32;
    let (s, path, _d) = load_edited(CLAUDE, |b| {
        let copy = b.clone();
        if b.last() != Some(&b'\n') {
            b.push(b'\n');
        }
        b.extend(copy);
    });
    let s = s.unwrap();
    let main = |s: &Session| s.calls.iter().filter(|c| c.agent == 0).count();
    assert_eq!(main(&s), 2 * main(&once), "each response its own call");
    let said = |k: &str| {
        s.warnings
            .iter()
            .filter(|w| w.line > lines && w.message.contains(k))
            .count()
    };
    assert!(said("message.id") >= 20, "{:?}", s.warnings);
    assert!(said("tool call id") >= 20, "{:?}", s.warnings);
    for (strategy, window) in [
        ("fuseraft.compaction", "60000"),
        ("fim-one.context-guard", "30000"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
            .args(["replay", "-s", strategy, "--window", window])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{strategy}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Finding 14: one `message.id` on every response merged the sample's 314 calls into 1. A
/// response's id again after another response is a new call, said at its line.
#[test]
fn one_message_id_on_every_response_is_said_not_merged() {
    let once = formats::load_file(&sample(CLAUDE)).unwrap();
    let (s, _path, _d) = load_edited(CLAUDE, |b| {
        let text = String::from_utf8(b.clone()).unwrap();
        let mut out = String::new();
        for piece in text.split("\"id\":\"msg_").enumerate() {
            match piece {
                (0, p) => out.push_str(p),
                (_, p) => {
                    out.push_str("\"id\":\"msg_same");
                    out.push_str(&p[p.find('"').unwrap()..]);
                }
            }
        }
        *b = out.into_bytes();
    });
    let s = s.unwrap();
    assert_eq!(s.calls.len(), once.calls.len());
    let said: Vec<_> = s
        .warnings
        .iter()
        .filter(|w| w.message.contains("message.id msg_same repeats"))
        .collect();
    assert_eq!(said.len(), 20, "listed up to 20 per agent, then counted");
    assert!(said.iter().all(|w| w.line > 1));
    assert!(s.warnings.iter().any(|w| w.message.contains("not listed")));
}

/// Finding 14, the other side: a history a reader rebuilds from what the log sends again is no
/// repeat. Cline re-sends its history after a truncation (the kept messages, one result without
/// its call), Gemini CLI after a compression (the kept tail), an HTTP capture or OTel trace with
/// each request; none of them is a duplicate or an orphan of the log.
#[test]
fn histories_sent_again_are_not_repeats() {
    let mut truncations = 0;
    for p in [
        sample("cline/1772700000000"),
        sample("gemini-cli/session-2026-03-04T09-30-c1971d3f.jsonl"),
        sample("gemini-cli/session-2026-03-03T09-26-5ae1ec23.json"),
        sample("http-capture"),
        sample("otel"),
        real("cline_online-card-architecture"),
        real("cline_xray"),
        real("otel-genai_ms-agent-framework"),
        real("llm-trace-proxy_wang0618/claude-code.jsonl"),
        real("llm-trace-proxy_wang0618/adk-deepresearch.jsonl"),
    ] {
        for s in formats::load(&p).unwrap() {
            // A re-send: a truncation (no summary), or a capture's restart (whose summary is
            // the system prompt and tools it sent again).
            truncations += s
                .compactions
                .iter()
                .filter(|c| c.summary.is_none() || c.trigger == "restart")
                .count();
            assert!(
                pair_warnings(&s).is_empty(),
                "{}: {:?}",
                p.display(),
                pair_warnings(&s)
            );
        }
    }
    assert!(
        truncations >= 10,
        "the inputs re-send histories: {truncations}"
    );
}

/// Finding 22: `watch` exited when the log it followed was truncated to nothing and refilled a
/// moment later (a log rotated): reading the empty file again failed. Following now waits for
/// the file's first line and then reads it anew, and the same for a log replaced by an empty file
/// (rotated by renaming it and creating a new one).
#[test]
fn a_followed_log_truncated_or_removed_and_refilled_is_read_again() {
    let src =
        sample("codex/rollout-2026-03-14T09-12-44-019c1754-a43c-7709-85e2-fa8bb43a4f52.jsonl");
    let bytes = std::fs::read(&src).unwrap();
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(src.file_name().unwrap());
    let half = bytes.len() / 2
        + bytes[bytes.len() / 2..]
            .iter()
            .position(|&b| b == b'\n')
            .unwrap()
        + 1;
    std::fs::write(&p, &bytes[..half]).unwrap();
    let mut f = formats::Follower::open(&p).unwrap();
    let before = f.session().calls.len();
    assert!(before > 0);
    for rotate in ["truncate", "replace"] {
        match rotate {
            "truncate" => std::fs::write(&p, b"").unwrap(),
            _ => {
                std::fs::rename(&p, d.path().join("old.jsonl")).unwrap();
                std::fs::write(&p, b"").unwrap();
            }
        }
        for _ in 0..3 {
            assert!(f.poll().unwrap().is_none(), "{rotate}: nothing to read yet");
        }
        std::fs::write(&p, &bytes).unwrap();
        let u = f.poll().unwrap().expect("read again");
        assert!(u.reloaded.is_some(), "{rotate}: {u:?}");
        assert_eq!(f.session(), &formats::load_file(&p).unwrap(), "{rotate}");
        assert!(f.session().calls.len() > before);
    }
}

/// Finding 22: loading a folder skipped SWE-agent `.traj` files and Aider's
/// `.aider.chat.history.md` without a word (the folder "held no log"). Both are logs.
#[test]
fn a_folder_loads_swe_agent_trajectories_and_aider_histories() {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(
        sample("swe-agent/fix-off-by-one.traj"),
        d.path().join("fix-off-by-one.traj"),
    )
    .unwrap();
    let sub = d.path().join("repo");
    std::fs::create_dir(&sub).unwrap();
    std::fs::copy(
        sample("aider/.aider.chat.history.md"),
        sub.join(".aider.chat.history.md"),
    )
    .unwrap();
    let mut formats: Vec<String> = formats::load(d.path())
        .unwrap()
        .into_iter()
        .map(|s| s.source.format)
        .collect();
    formats.sort();
    assert_eq!(formats, ["aider", "swe-agent"]);
}

/// Finding 22: one unreadable subfolder aborted the load of a whole folder (an unreadable file
/// was already a warning). The folder's other logs load and the subfolder is named. Run as a
/// child without the capabilities that let root read any folder, so that mode 000 holds.
#[test]
fn an_unreadable_subfolder_is_named_not_the_end_of_a_folder() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("logs");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(sample(CLAUDE), dir.join("a.jsonl")).unwrap();
    let locked = dir.join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::copy(
        sample("pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl"),
        locked.join("b.jsonl"),
    )
    .unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"));
    cmd.args(["inspect", "--json"]).arg(&dir);
    unsafe {
        cmd.pre_exec(|| {
            // CAP_DAC_OVERRIDE (1), CAP_DAC_READ_SEARCH (2): root reads mode-000 folders with
            // them. Dropped from the bounding set, the executed ctxlab has neither. Without
            // root the call fails harmlessly and the mode holds anyway.
            for cap in [1, 2] {
                libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("claude-code"), "{stdout}");
    assert!(
        !stdout.contains("\"pi\""),
        "the locked log was read: the test does not test"
    );
    assert!(
        stdout.contains(&locked.display().to_string())
            || stderr.contains(&locked.display().to_string()),
        "the unreadable folder is named: {stdout}\n{stderr}"
    );
}

/// Finding 21: warnings printed Rust's own notation for a missing value (`Some(6)`, `None`)
/// where a user needs words. A Cline message whose role is not a string says so.
#[test]
fn warnings_say_missing_values_in_words() {
    let (s, _p, _d) = load_edited("cline/task-1/api_conversation_history.json", |b| {
        let t = String::from_utf8(b.clone()).unwrap();
        *b = t
            .replacen("\"role\": \"assistant\"", "\"role\": 6", 1)
            .into_bytes();
        assert_ne!(*b, t.into_bytes());
    });
    let s = s.unwrap();
    let w: Vec<String> = s.warnings.iter().map(|w| w.to_string()).collect();
    assert!(
        w.iter().any(|w| w.contains("role missing or not a string")),
        "{w:?}"
    );
    assert!(
        !w.iter().any(|w| w.contains("Some(") || w.contains("None")),
        "{w:?}"
    );
}
