//! Reconstruction rules of issue #15 for aider histories and mini-swe-agent trajectories, each on
//! a small log written here by the project: each test fails when its rule is removed
//! (docs/formats.md, "Aider"; docs/tokens.md, "Fidelity on real logs").

use ctxlab::model::{Part, Role, Session};
use ctxlab::replay;
use ctxlab::tokens;

/// Writes `text` under `name` and loads it.
fn load(name: &str, text: &str) -> Session {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    let mut s = ctxlab::formats::load(&path).unwrap();
    assert_eq!(s.len(), 1);
    s.remove(0)
}

fn text(m: &ctxlab::model::Message) -> String {
    m.parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The texts of call `i`'s context: its agent's messages since its last recorded compaction
/// (these logs' compactions keep nothing), less those a later one replaced. Checked against
/// what the replay engine counts.
fn context(s: &Session, i: usize) -> Vec<String> {
    let c = &s.calls[i];
    let from = s
        .compactions
        .iter()
        .filter(|x| x.agent == c.agent && x.at_message < c.context_end)
        .map(|x| {
            assert!(x.kept_from.is_none() && x.summary.is_none());
            x.at_message
        })
        .max()
        .unwrap_or(0);
    let counter = tokens::counter("heuristic").unwrap();
    let mine: Vec<_> = (from..c.context_end)
        .filter(|&m| s.messages[m].agent == c.agent)
        .collect();
    let replaced: Vec<_> = mine
        .iter()
        .filter_map(|&m| s.messages[m].flags.replaces)
        .collect();
    let msgs: Vec<_> = mine.into_iter().filter(|m| !replaced.contains(m)).collect();
    let want: u64 = msgs
        .iter()
        .map(|&m| counter.count_message(&s.messages[m]))
        .sum();
    let got = replay::recorded_contexts(s, counter.as_ref())[i].unwrap();
    assert_eq!(got.counted + got.known, want, "call {i}");
    msgs.iter().map(|&m| text(&s.messages[m])).collect()
}

fn holds(ctx: &[String], needle: &str) -> usize {
    ctx.iter().filter(|t| t.contains(needle)).count()
}

// ---------------------------------------------------------------- aider

const HISTORY: &str = ".aider.chat.history.md";

/// aider ends its own lines (`####` input, `>` output) with a markdown line break.
fn aider(lines: &[&str]) -> String {
    let mut out = String::from("\n# aider chat started at 2025-08-06 12:06:30\n\n");
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// Commands are aider's own (`/ls`, `/add`, `/clear`): none is sent; `/clear` empties the
/// history; `/ask <question>` sends the question alone.
#[test]
fn aider_commands_are_not_sent_and_clear_empties_the_history() {
    let s = load(
        HISTORY,
        &aider(&[
            "> Aider v0.85.2  ",
            "> Main model: gpt-4o with diff edit format  ",
            "",
            "#### explain the build  ",
            "",
            "It runs make, then the tests.",
            "",
            "> Tokens: 1.2k sent, 10 received.  ",
            "",
            "#### /ls  ",
            "#### /add Makefile  ",
            "> Added Makefile to the chat  ",
            "",
            "#### /clear  ",
            "> All chat history cleared.  ",
            "",
            "#### /ask why does it run twice?  ",
            "",
            "Because of the cache.",
            "",
            "> Tokens: 1.1k sent, 8 received.  ",
        ]),
    );
    assert_eq!(s.calls.len(), 2);
    assert!(
        !s.messages.iter().any(|m| text(m).starts_with('/')),
        "commands are not messages"
    );
    let c = s.compactions.iter().find(|c| c.trigger == "clear").unwrap();
    assert!(!c.inferred);
    assert_eq!(context(&s, 1), vec!["why does it run twice?".to_string()]);
}

/// aider sends the chat files' current content with every call. Whole-file edits aider applied
/// give that content; a file joins the chat by a confirmed mention (and aider asks again,
/// saying so), `/add` or `Added … to the chat.`; the editor of `--architect` is sent the
/// architect's files; a rewritten file replaces its old content.
#[test]
fn aider_chat_files_carry_their_applied_whole_file_content() {
    let s = load(
        HISTORY,
        &aider(&[
            "> Model: openrouter/x with architect edit format  ",
            "> Editor model: openrouter/x with editor-whole edit format  ",
            "",
            "#### make hello.py  ",
            "",
            "Create hello.py printing a greeting.",
            "",
            "> Tokens: 1.0k sent, 10 received.  ",
            "",
            "#### Create hello.py printing a greeting.  ",
            "",
            "hello.py",
            "```",
            "print(\"hello, world\")",
            "```",
            "",
            "> Tokens: 1.5k sent, 20 received.  ",
            "> hello.py  ",
            "> Create new file? (Y)es/(N)o [Yes]: y  ",
            "> Applied edit to hello.py  ",
            "",
            "#### document hello.py  ",
            "",
            "Add a docstring to hello.py.",
            "",
            "> Tokens: 1.2k sent, 10 received.  ",
            "> hello.py  ",
            "> Add file to the chat? (Y)es/(N)o/(D)on't ask again [Yes]: y  ",
            "",
            "Put a module docstring at the top of hello.py.",
            "",
            "> Tokens: 2.0k sent, 10 received.  ",
            "",
            "#### Put a module docstring at the top of hello.py.  ",
            "",
            "hello.py",
            "<source>",
            "\"\"\"Greets the world.\"\"\"",
            "print(\"hello, world\")",
            "</source>",
            "",
            "> Tokens: 2.2k sent, 20 received.  ",
            "> Applied edit to hello.py  ",
            "",
            "#### thanks  ",
            "",
            "You are welcome.",
            "",
            "> Tokens: 2.3k sent, 5 received.  ",
        ]),
    );
    assert_eq!(s.calls.len(), 6);
    let old = "print(\"hello, world\")";
    let new = "\"\"\"Greets the world.\"\"\"";
    // The editor's first call: no file in the chat yet, the plan only.
    assert_eq!(
        context(&s, 1),
        vec!["Create hello.py printing a greeting.".to_string()]
    );
    // The architect before the mention: the file is not in its chat.
    assert_eq!(holds(&context(&s, 2), old), 0);
    // After the mention: the file's content, and aider's note that it added it.
    let c3 = context(&s, 3);
    assert_eq!(holds(&c3, old), 1);
    assert_eq!(holds(&c3, "I added these files to the chat: hello.py"), 1);
    // The editor is made from the architect: its files, as they were, with the plan.
    let c4 = context(&s, 4);
    assert_eq!(c4.len(), 2, "files + plan: {c4:?}");
    assert_eq!((holds(&c4, old), holds(&c4, new)), (1, 0));
    // After the rewrite the architect's chat holds the new content, once, and not the old.
    let c5 = context(&s, 5);
    assert_eq!(holds(&c5, new), 1, "{c5:?}");
    assert_eq!(
        c5.iter()
            .filter(|t| t.contains("hello.py\n```\n") && t.contains(old))
            .count(),
        1
    );
    // The new text takes the old one's place: no compaction, nothing copied.
    let files: Vec<usize> = (0..s.messages.len())
        .filter(|&i| text(&s.messages[i]).starts_with("\nhello.py\n```"))
        .collect();
    assert_eq!(
        files.len(),
        3,
        "the architect's two versions and the editor's"
    );
    assert_eq!(s.messages[files[2]].flags.replaces, Some(files[0]));
    // aider writes them (and its notes) itself: injected, not the human's requests.
    assert!(files.iter().all(|&i| s.messages[i].flags.injected));
    assert!(s
        .messages
        .iter()
        .filter(|m| text(m).starts_with("I added these files")
            || text(m) == "I made those changes to the files.")
        .all(|m| m.flags.injected && !m.is_human_turn()));
    assert!(s.compactions.iter().all(|c| c.agent != s.calls[5].agent));
    // Every run sees it so: with no strategy at all, the old content has left.
    let o = replay::ReplayOptions::new(tokens::counter("heuristic").unwrap());
    let none = replay::run(&s, replay::StrategySpec::None, &o).unwrap();
    let recorded = replay::run(&s, replay::StrategySpec::Recorded, &o).unwrap();
    assert_eq!(
        none.samples[5].raw_tokens, recorded.samples[5].raw_tokens,
        "the architect's last call"
    );
    // A file whose content the log never shows is named in a warning.
    let s = load(
        HISTORY,
        &aider(&[
            "> Main model: gpt-4o with diff edit format  ",
            "",
            "#### /add secret.py  ",
            "",
            "#### what does it do?  ",
            "",
            "It prints.",
            "",
            "> Tokens: 3.0k sent, 5 received.  ",
        ]),
    );
    assert!(
        s.warnings
            .iter()
            .any(|w| w.message.contains("not in the log") && w.message.contains("secret.py")),
        "{:?}",
        s.warnings
    );
}

/// aider quotes only the first line of output of several lines: the rest, up to the line that
/// ends with its line break, is not the reply. An edit it could not apply is sent back to the
/// model as a user message; `>>>>>>> REPLACE` lines are the reply's own.
#[test]
fn aider_multi_line_output_and_edit_errors() {
    let s = load(
        HISTORY,
        &aider(&[
            "> Main model: gpt-4o with diff edit format  ",
            "",
            "#### read https://example.com/api  ",
            "> Scraping https://example.com/api...  ",
            "> For the best web scraping, install Playwright:",
            "",
            "python -m playwright install --with-deps chromium",
            "",
            "See the docs for more info.  ",
            "> Failed to retrieve content from https://example.com/api  ",
            "",
            "app.py",
            "```python",
            "<<<<<<< SEARCH",
            "old = 1",
            "=======",
            "new = 2",
            ">>>>>>> REPLACE",
            "```",
            "",
            "> Tokens: 4.0k sent, 30 received.  ",
            "> The LLM did not conform to the edit format.  ",
            "> https://aider.chat/docs/troubleshooting/edit-errors.html  ",
            "> # 1 SEARCH/REPLACE block failed to match!",
            "",
            "## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in app.py",
            "Just reply with fixed versions of the block above that failed to match.  ",
            "",
            "Here is the fixed block.",
            "",
            "> Tokens: 4.2k sent, 20 received.  ",
        ]),
    );
    assert_eq!(s.calls.len(), 2);
    let reply = text(&s.messages[s.calls[0].reply.unwrap()]);
    assert!(!reply.contains("playwright"), "{reply}");
    assert!(reply.ends_with(">>>>>>> REPLACE\n```"), "{reply}");
    let c1 = context(&s, 1);
    let error = c1
        .iter()
        .position(|t| t.starts_with("# 1 SEARCH/REPLACE block failed to match!"))
        .expect("the error is sent back");
    assert!(c1[error].contains("SearchReplaceNoExactMatch"));
    let m = s
        .messages
        .iter()
        .find(|m| text(m).starts_with("# 1 SEARCH/REPLACE"))
        .unwrap();
    assert_eq!(m.role, Role::User);
    assert!(m.flags.injected);
    assert_eq!(c1.len(), 3, "question, reply, error: {c1:?}");
}

// ---------------------------------------------------------------- mini-swe-agent

/// A mini-swe-agent trajectory of `model` with one call.
fn mini_swe(model: &str) -> String {
    serde_json::json!({
        "info": {"mini_version": "1.14.4", "config": {"model": {"model_name": model}}},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "drwxrwxr-x  2 user user    4096 Oct 11 04:10 artifacts"},
            {"role": "assistant", "content": "THOUGHT: list.\n\n```bash\nls\n```",
             "extra": {"response": {"model": model, "usage": {"prompt_tokens": 40, "completion_tokens": 9}}}}
        ],
        "trajectory_format": "mini-swe-agent-1"
    })
    .to_string()
}

/// A Grok model's log is counted with o200k by default: the heuristic reads an `ls -la`
/// listing at 4 characters a token where Grok's tokenizer (and o200k) takes about 2.3.
#[test]
fn grok_logs_default_to_the_o200k_counter() {
    let grok = load("run.traj.json", &mini_swe("x-ai/grok-4-fast"));
    // One line, as a writer without indentation leaves it: still a trajectory, with its usage.
    assert_eq!(grok.source.format, "swe-agent");
    assert_eq!(grok.calls[0].usage.unwrap().context_tokens(), 40);
    let other = load("run.traj.json", &mini_swe("anthropic/claude-sonnet-4"));
    if tokens::COUNTERS.contains(&"o200k") {
        assert_eq!(tokens::default_counter_for(&grok), "o200k");
    }
    assert_eq!(tokens::default_counter_for(&other), "heuristic");
    assert!(tokens::is_grok_model("grok-code-fast-1"));
    assert!(!tokens::is_grok_model("gpt-4o"));
}
