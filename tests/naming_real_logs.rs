//! The name every view shows for a session (`ctxlab::naming::display_name`) on real logs of each
//! kind (../shared/real-logs): a log with a title entry is named by it; one without — Claude Code
//! 2.1.3x (no `ai-title`), Codex rollouts, pi — by its first user prompt and its project folder,
//! both read here straight from the JSON; an OpenAI export (samples/openai, written by this
//! project: no real one is stored) by its first prompt. No session of any real log is named by a
//! bare UUID.

use std::path::PathBuf;

use ctxlab::formats;
use ctxlab::model::Session;
use ctxlab::naming::{display_name, PROMPT_CHARS};
use serde_json::Value;

mod real_logs;
use real_logs::real;

fn lines(p: &PathBuf) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn one(p: &PathBuf) -> Session {
    let mut s = formats::load(p).unwrap();
    assert_eq!(s.len(), 1, "{}", p.display());
    s.remove(0)
}

fn collapse(t: &str) -> String {
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `name` is `prompt · folder`: the prompt shortened from `prompt` (a prefix of it, cut with `…`
/// when longer than the limit), the folder the last component of `cwd`.
fn assert_prompt_and_folder(name: &str, prompt: &str, cwd: &str) {
    let folder = cwd.trim_end_matches('/').rsplit('/').next().unwrap();
    let (shown, f) = name
        .rsplit_once(" · ")
        .unwrap_or_else(|| panic!("{name}: no folder"));
    assert_eq!(f, folder, "{name}");
    let prompt = collapse(prompt);
    if prompt.chars().count() <= PROMPT_CHARS {
        assert_eq!(shown, prompt);
    } else {
        let cut = shown
            .strip_suffix('…')
            .unwrap_or_else(|| panic!("{shown}: a cut prompt ends with …"));
        assert!(
            prompt.starts_with(cut),
            "{cut:?} is not the start of {prompt:?}"
        );
        assert!(shown.chars().count() <= PROMPT_CHARS, "{shown}");
        assert!(
            cut.chars().count() >= PROMPT_CHARS / 2,
            "{shown}: cut too short"
        );
    }
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && parts
            .iter()
            .all(|p| p.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[test]
fn claude_code_with_an_ai_title_is_named_by_it() {
    let p = real("claude-code_fundwise/claude-session.jsonl");
    let title = lines(&p)
        .iter()
        .filter(|e| e["type"] == "ai-title")
        .filter_map(|e| e["aiTitle"].as_str().map(String::from))
        .last()
        .expect("the log has an ai-title entry");
    assert_eq!(display_name(&one(&p)), title);
}

/// The first user entry whose text a person wrote (not a tool result, not an interruption
/// marker, not a meta entry), and the first `cwd` of the file.
fn claude_first_prompt(p: &PathBuf) -> (String, String) {
    let ls = lines(p);
    assert!(
        !ls.iter()
            .any(|e| e["type"] == "ai-title" || e["type"] == "custom-title"),
        "{} has a title entry: pick a log without",
        p.display()
    );
    let prompt = ls
        .iter()
        .filter(|e| e["type"] == "user" && e["isMeta"] != true && e["isSidechain"] != true)
        .filter_map(|e| e["message"]["content"].as_str())
        .find(|t| !t.starts_with('[') && !t.starts_with('<'))
        .expect("a user prompt")
        .to_string();
    let cwd = ls
        .iter()
        .find_map(|e| e["cwd"].as_str())
        .expect("a cwd")
        .to_string();
    (prompt, cwd)
}

#[test]
fn claude_code_without_a_title_by_first_prompt_and_folder() {
    for rel in [
        "claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl",
        "claude-code_posthog-impact/claude-session.jsonl",
    ] {
        let p = real(rel);
        let (prompt, cwd) = claude_first_prompt(&p);
        let s = one(&p);
        assert!(s.title.is_none(), "{rel}");
        assert_prompt_and_folder(&display_name(&s), &prompt, &cwd);
    }
}

#[test]
fn codex_rollouts_by_first_prompt_and_folder() {
    for rel in [
        "codex-cli_raze/codex-session.jsonl",
        "codex-cli_gildore-arena/codex-session.jsonl",
        "codex-cli_agentv/00/34f597b72d/1/full.jsonl",
    ] {
        let p = real(rel);
        let ls = lines(&p);
        let cwd = ls
            .iter()
            .find(|e| e["type"] == "session_meta")
            .and_then(|e| e["payload"]["cwd"].as_str())
            .expect("session_meta cwd");
        // Codex injects AGENTS.md and the environment as user messages before the prompt.
        let prompt = ls
            .iter()
            .filter(|e| e["type"] == "response_item" && e["payload"]["role"] == "user")
            .filter_map(|e| e["payload"]["content"][0]["text"].as_str())
            .find(|t| !t.starts_with("# AGENTS.md") && !t.starts_with("<environment_context>"))
            .expect("a user prompt");
        let s = one(&p);
        assert!(s.title.is_none(), "{rel}");
        assert_prompt_and_folder(&display_name(&s), prompt, cwd);
    }
}

#[test]
fn pi_by_first_prompt_and_folder() {
    let p = real("pi-agent_pi-mono/session.jsonl");
    let ls = lines(&p);
    let cwd = ls[0]["cwd"].as_str().expect("header cwd");
    let m = ls
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["role"] == "user")
        .expect("a user message");
    let c = &m["message"]["content"];
    let prompt = c
        .as_str()
        .or_else(|| c[0]["text"].as_str())
        .expect("prompt text");
    assert_prompt_and_folder(&display_name(&one(&p)), prompt, cwd);
}

#[test]
fn an_openai_export_without_a_title_by_its_first_prompt() {
    let p = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/openai/helpdesk-two-agents.json"
    ));
    // A bare array of chat messages: no id, no title.
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let prompt = doc
        .as_array()
        .expect("a bare message array")
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap();
    let name = display_name(&one(&p));
    let cut = name.strip_suffix('…').unwrap_or(&name);
    assert!(collapse(prompt).starts_with(cut), "{name} / {prompt}");
    assert!(cut.len() > 20, "{name}");
}

#[test]
fn no_real_log_is_named_by_a_bare_uuid() {
    let root = real("");
    let mut named = 0;
    for d in std::fs::read_dir(&root).unwrap() {
        let d = d.unwrap().path();
        if !d.is_dir() {
            continue;
        }
        for s in formats::load(&d).unwrap_or_default() {
            let name = display_name(&s);
            assert!(
                !is_uuid(&name) && !name.is_empty(),
                "{}: session {} is named {name:?}",
                d.display(),
                s.id
            );
            named += 1;
        }
    }
    assert!(named >= 20, "only {named} sessions read");
}

#[test]
fn the_library_lists_a_session_by_its_name() {
    use ctxlab::store::Library;
    let p = real("codex-cli_raze/codex-session.jsonl");
    let s = one(&p);
    let dir = tempfile::tempdir().unwrap();
    let mut lib = Library::open(&dir.path().join("l.sqlite")).unwrap();
    let (id, _) = lib.import(&s).unwrap();
    assert_eq!(
        lib.session(id).unwrap().title.as_deref(),
        Some(display_name(&s).as_str())
    );
    // A row written before names were derived (no title) gets its name at the next import,
    // though the log did not change.
    let conn = rusqlite::Connection::open(dir.path().join("l.sqlite")).unwrap();
    conn.execute("UPDATE sessions SET title = NULL", ())
        .unwrap();
    drop(conn);
    assert_eq!(lib.session(id).unwrap().title, None);
    lib.import(&s).unwrap();
    assert_eq!(
        lib.session(id).unwrap().title.as_deref(),
        Some(display_name(&s).as_str())
    );
}
