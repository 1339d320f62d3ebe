//! One small log per reconstruction rule of issue #15 (docs/tokens.md, "Recorded sizes"), written
//! here by the project: each test fails when its rule is removed.

use ctxlab::model::{Part, Role, Session};
use ctxlab::replay::{self, RawContext};
use ctxlab::tokens;
use std::io::Write;

/// Writes `lines` as a `.jsonl` file and loads it.
fn load(name: &str, lines: &[String]) -> Session {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    drop(f);
    let mut s = ctxlab::formats::load(&path).unwrap();
    assert_eq!(s.len(), 1);
    s.remove(0)
}

fn contexts(s: &Session) -> Vec<RawContext> {
    let c = tokens::counter("heuristic").unwrap();
    replay::recorded_contexts(s, c.as_ref())
        .into_iter()
        .map(|c| c.expect("counted"))
        .collect()
}

// ---------------------------------------------------------------- Claude Code

const SID: &str = "0c182e15-0000-4000-8000-000000000001";

fn cc_user(uuid: &str, text: &str) -> String {
    format!(
        r#"{{"type":"user","sessionId":"{SID}","uuid":"{uuid}","timestamp":"2026-04-26T22:00:00.000Z","message":{{"role":"user","content":{}}}}}"#,
        serde_json::to_string(text).unwrap()
    )
}

fn cc_tool_result(uuid: &str, id: &str, content: &str) -> String {
    format!(
        r#"{{"type":"user","sessionId":"{SID}","uuid":"{uuid}","timestamp":"2026-04-26T22:00:01.000Z","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{id}","content":{content}}}]}}}}"#
    )
}

/// One entry of an assistant response: `block` is one content block (JSON), `stop` the stop
/// reason (`null` for a streaming snapshot), `usage` the usage object.
fn cc_assistant(uuid: &str, model: &str, id: &str, block: &str, stop: &str, usage: &str) -> String {
    format!(
        r#"{{"type":"assistant","sessionId":"{SID}","uuid":"{uuid}","timestamp":"2026-04-26T22:00:02.000Z","message":{{"model":"{model}","id":"{id}","type":"message","role":"assistant","content":[{block}],"stop_reason":{stop},"usage":{usage}}}}}"#
    )
}

/// A `compact_boundary` entry (uuid `b1`, at 22:10); `meta` is its `compactMetadata` (JSON).
fn cc_boundary(meta: &str) -> String {
    format!(
        r#"{{"type":"system","subtype":"compact_boundary","sessionId":"{SID}","uuid":"b1","parentUuid":null,"timestamp":"2026-04-26T22:10:00.000Z","compactMetadata":{meta}}}"#
    )
}

/// The compaction summary (uuid `s1`) written at `ts`.
fn cc_summary(ts: &str, text: &str) -> String {
    format!(
        r#"{{"type":"user","sessionId":"{SID}","uuid":"s1","isCompactSummary":true,"timestamp":"{ts}","message":{{"role":"user","content":{}}}}}"#,
        serde_json::to_string(text).unwrap()
    )
}

/// An `attachment` entry; `body` is the attachment object (JSON).
fn cc_attachment(uuid: &str, body: &str) -> String {
    format!(
        r#"{{"type":"attachment","sessionId":"{SID}","uuid":"{uuid}","timestamp":"2026-04-26T22:00:03.000Z","attachment":{body}}}"#
    )
}

fn usage(input: u64, read: u64, write: u64, out: u64) -> String {
    format!(
        r#"{{"input_tokens":{input},"cache_read_input_tokens":{read},"cache_creation_input_tokens":{write},"output_tokens":{out}}}"#
    )
}

fn thinking(signature_chars: usize) -> String {
    format!(
        r#"{{"type":"thinking","thinking":"","signature":"{}"}}"#,
        "E".repeat(signature_chars)
    )
}

const TOOL_USE: &str =
    r#"{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls -la src"}}"#;

/// Final usage (an entry with a stop reason) sizes the reply; streaming snapshots never do.
#[test]
fn claude_code_final_usage_sizes_the_reply_snapshots_do_not() {
    let final_usage = load(
        "final.jsonl",
        &[
            cc_user("u1", "list the sources"),
            cc_assistant(
                "a1",
                "claude-opus-4-7",
                "msg_1",
                &thinking(1000),
                "null",
                &usage(3, 0, 5000, 9),
            ),
            cc_assistant(
                "a2",
                "claude-opus-4-7",
                "msg_1",
                TOOL_USE,
                r#""tool_use""#,
                &usage(3, 0, 5000, 812),
            ),
            cc_tool_result("u2", "toolu_1", r#""main.rs\nlib.rs""#),
            cc_assistant(
                "a3",
                "claude-opus-4-7",
                "msg_2",
                r#"{"type":"text","text":"Two files."}"#,
                r#""end_turn""#,
                &usage(3, 5000, 830, 5),
            ),
        ],
    );
    let reply = final_usage.calls[0].reply.unwrap();
    let f = final_usage.messages[reply].flags;
    assert_eq!(f.recorded_tokens, Some(812), "the final output_tokens");
    assert_eq!(final_usage.calls[0].usage.unwrap().output, 812);
    // Signature-only thinking: 1,000 signature chars × 0.28, inside the recorded size.
    assert_eq!(f.hidden_tokens, 280);
    assert!(!f.hidden_until_user, "Opus 4.7 keeps every turn's thinking");
    // The second call's context holds the reply at its recorded size, known, not counted.
    let c = contexts(&final_usage);
    assert_eq!(c[1].known, 812);

    // 2.1.3x: snapshots only (no stop reason): the call keeps the largest, the reply is counted.
    let snapshots = load(
        "snapshots.jsonl",
        &[
            cc_user("u1", "list the sources"),
            cc_assistant(
                "a1",
                "claude-opus-4-6",
                "msg_1",
                r#"{"type":"text","text":"Looking."}"#,
                "null",
                &usage(3, 0, 5000, 1),
            ),
            cc_assistant(
                "a2",
                "claude-opus-4-6",
                "msg_1",
                TOOL_USE,
                "null",
                &usage(3, 0, 5000, 25),
            ),
            cc_tool_result("u2", "toolu_1", r#""main.rs""#),
            cc_assistant(
                "a3",
                "claude-opus-4-6",
                "msg_2",
                r#"{"type":"text","text":"One."}"#,
                "null",
                &usage(3, 5000, 60, 4),
            ),
        ],
    );
    let reply = snapshots.calls[0].reply.unwrap();
    assert_eq!(snapshots.messages[reply].flags.recorded_tokens, None);
    assert_eq!(snapshots.calls[0].usage.unwrap().output, 25);
    assert_eq!(contexts(&snapshots)[1].known, 0);
}

/// `usage.iterations` is the usage when the top level is 0 (not the cache-creation breakdown).
#[test]
fn claude_code_usage_iterations_when_the_top_level_is_zero() {
    let u = r#"{"input_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":1200},"iterations":[{"input_tokens":2,"cache_read_input_tokens":40000,"cache_creation_input_tokens":1200,"output_tokens":300,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":1200},"type":"message"}]}"#;
    let s = load(
        "iterations.jsonl",
        &[
            cc_user("u1", "go"),
            cc_assistant(
                "a1",
                "claude-sonnet-4-6",
                "msg_1",
                r#"{"type":"text","text":"Done."}"#,
                r#""end_turn""#,
                u,
            ),
        ],
    );
    let usage = s.calls[0].usage.unwrap();
    assert_eq!(usage.context_tokens(), 41_202);
    assert_eq!(usage.output, 300);
}

/// Which earlier thinking stays depends on the model family (data/thinking.toml): a Haiku
/// reply's thinking leaves the context at the next human message; an Opus 4.7 reply's stays.
#[test]
fn claude_code_thinking_retention_per_model_family() {
    assert_eq!(
        ctxlab::formats::claude_code::thinking_retention("claude-haiku-4-5-20251001"),
        ctxlab::formats::claude_code::ThinkingRetention::Turn
    );
    assert_eq!(
        ctxlab::formats::claude_code::thinking_retention("claude-sonnet-4-6"),
        ctxlab::formats::claude_code::ThinkingRetention::All
    );
    assert_eq!(
        ctxlab::formats::claude_code::thinking_retention("claude-opus-5"),
        ctxlab::formats::claude_code::ThinkingRetention::All
    );
    let session = |model: &str| {
        load(
            "retention.jsonl",
            &[
                cc_user("u1", "first question"),
                cc_assistant(
                    "a1",
                    model,
                    "msg_1",
                    &thinking(2000),
                    "null",
                    &usage(3, 0, 5000, 700),
                ),
                cc_assistant(
                    "a2",
                    model,
                    "msg_1",
                    r#"{"type":"text","text":"First answer."}"#,
                    r#""end_turn""#,
                    &usage(3, 0, 5000, 700),
                ),
                cc_user("u2", "second question"),
                cc_assistant(
                    "a3",
                    model,
                    "msg_2",
                    r#"{"type":"text","text":"Second answer."}"#,
                    r#""end_turn""#,
                    &usage(3, 5000, 720, 9),
                ),
            ],
        )
    };
    let haiku = session("claude-haiku-4-5-20251001");
    let reply = haiku.calls[0].reply.unwrap();
    assert!(haiku.messages[reply].flags.hidden_until_user);
    // 2,000 signature chars × 0.28 = 560 of the 700 recorded tokens leave at "second question".
    assert_eq!(contexts(&haiku)[1].known, 700 - 560);
    let opus = session("claude-opus-4-7");
    assert_eq!(contexts(&opus)[1].known, 700);
}

/// `attachment` entries are injected user messages of the text they carry; a task reminder adds
/// its fixed text; attachments the model never sees add nothing.
#[test]
fn claude_code_attachments_are_injected_messages() {
    let s = load(
        "attachments.jsonl",
        &[
            cc_user("u1", "watch the build"),
            cc_assistant(
                "a1",
                "claude-opus-4-7",
                "msg_1",
                r#"{"type":"text","text":"Watching."}"#,
                r#""end_turn""#,
                &usage(3, 0, 5000, 5),
            ),
            cc_attachment(
                "t1",
                r#"{"type":"queued_command","prompt":"<task-notification>build finished: 3 warnings in src/lib.rs</task-notification>","commandMode":"task-notification"}"#,
            ),
            cc_attachment(
                "t2",
                r#"{"type":"task_reminder","content":[{"id":"6","subject":"Fix the warnings","status":"in_progress","description":"long text the reminder does not show"}],"itemCount":1}"#,
            ),
            cc_attachment(
                "t3",
                r#"{"type":"hook_system_message","content":"shown to the user only"}"#,
            ),
            cc_attachment("t4", r#"{"type":"command_permissions","allowedTools":[]}"#),
            cc_assistant(
                "a2",
                "claude-opus-4-7",
                "msg_2",
                r#"{"type":"text","text":"Fixing."}"#,
                r#""end_turn""#,
                &usage(3, 5000, 500, 4),
            ),
        ],
    );
    let injected: Vec<_> = s.messages.iter().filter(|m| m.flags.injected).collect();
    assert_eq!(injected.len(), 2, "the queued prompt and the task reminder");
    assert!(injected
        .iter()
        .all(|m| m.role == Role::User && !m.is_human_turn()));
    assert!(
        matches!(&injected[0].parts[0], Part::Text { text } if text.contains("build finished"))
    );
    assert!(
        matches!(&injected[1].parts[0], Part::Text { text } if text == "#6. [in_progress] Fix the warnings")
    );
    assert_eq!(
        injected[1].flags.hidden_tokens,
        ctxlab::formats::claude_code::TASK_REMINDER_TOKENS
    );
    // The queued notification costs its wrapper and framing beyond its text (measured on
    // claude-code_posthog-impact: ~100 per notification).
    assert_eq!(
        injected[0].flags.hidden_tokens,
        ctxlab::formats::claude_code::QUEUED_COMMAND_TOKENS
    );
    // Both reach the second call: it sees more than the first call's context plus the reply.
    let c = contexts(&s);
    assert!(c[1].counted > c[0].counted + 20, "{c:?}");
    // inspect tells per agent what is injected, hidden and known.
    let heuristic = tokens::counter("heuristic").unwrap();
    let r = ctxlab::inspect::summarize(&s, heuristic.as_ref());
    let st = &r.agents[0].stats;
    assert!(st.injected_tokens > ctxlab::formats::claude_code::TASK_REMINDER_TOKENS);
    assert_eq!(
        st.hidden_tokens,
        ctxlab::formats::claude_code::TASK_REMINDER_TOKENS
            + ctxlab::formats::claude_code::QUEUED_COMMAND_TOKENS
    );
    assert_eq!(
        st.known_tokens,
        5 + 4 + st.hidden_tokens,
        "two replies, the reminder and the notification's wrapper"
    );
    assert!(r.to_text().contains("context sources"));
}

/// A ToolSearch result's `tool_reference` blocks load tool schemas, which leave the context
/// with that result at a compaction: `preCompactDiscoveredTools` names them, but they are not sent
/// again (claude-code_posthog-impact's calls after its compaction, docs/tokens.md).
#[test]
fn claude_code_tool_schemas_loaded_on_demand() {
    let s = load(
        "toolsearch.jsonl",
        &[
            cc_user("u1", "track this"),
            cc_assistant(
                "a1",
                "claude-opus-4-7",
                "msg_1",
                r#"{"type":"tool_use","id":"toolu_1","name":"ToolSearch","input":{"query":"select:TaskCreate,TaskList"}}"#,
                r#""tool_use""#,
                &usage(3, 0, 5000, 40),
            ),
            cc_tool_result(
                "u2",
                "toolu_1",
                r#"[{"type":"tool_reference","tool_name":"TaskCreate"},{"type":"tool_reference","tool_name":"TaskList"}]"#,
            ),
            cc_assistant(
                "a2",
                "claude-opus-4-7",
                "msg_2",
                r#"{"type":"text","text":"Loaded."}"#,
                r#""end_turn""#,
                &usage(3, 5000, 2700, 4),
            ),
            cc_boundary(
                r#"{"trigger":"manual","preTokens":7700,"preCompactDiscoveredTools":["TaskCreate","TaskList"]}"#,
            ),
            cc_summary("2026-04-26T22:10:01.000Z", "Summary: tasks are tracked."),
            cc_user("u3", "next"),
            cc_assistant(
                "a3",
                "claude-opus-4-7",
                "msg_3",
                r#"{"type":"text","text":"Ok."}"#,
                r#""end_turn""#,
                &usage(3, 2700, 200, 2),
            ),
        ],
    );
    let c = contexts(&s);
    let per_tool = ctxlab::formats::claude_code::TOOL_SCHEMA_TOKENS;
    // Call 2: the reply (40) and the two schemas are known.
    assert_eq!(c[1].known, 40 + 2 * per_tool);
    // After the compaction only the summary and what follows: no schema is carried over.
    assert_eq!(c[2].known, 0);
    assert!(s
        .messages
        .iter()
        .all(|m| !m.flags.is_summary || m.flags.hidden_tokens == 0));
}

// ---------------------------------------------------------------- Codex

fn codex_line(kind: &str, payload: &str) -> String {
    format!(r#"{{"timestamp":"2026-05-01T10:00:00.000Z","type":"{kind}","payload":{payload}}}"#)
}

fn codex_tokens(input: u64, output: u64, reasoning: u64, total: u64) -> String {
    let u = format!(
        r#"{{"input_tokens":{input},"cached_input_tokens":0,"output_tokens":{output},"reasoning_output_tokens":{reasoning},"total_tokens":{total}}}"#
    );
    codex_line(
        "event_msg",
        &format!(
            r#"{{"type":"token_count","info":{{"total_token_usage":{u},"last_token_usage":{u},"model_context_window":258400}}}}"#
        ),
    )
}

fn codex_start() -> Vec<String> {
    vec![
        codex_line(
            "session_meta",
            r#"{"id":"019c0000-0000-7000-8000-000000000001","cwd":"/src","originator":"codex_cli_rs","cli_version":"0.130.0"}"#,
        ),
        codex_line("turn_context", r#"{"model":"gpt-5.4","cwd":"/src"}"#),
        codex_line(
            "response_item",
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"look up the release notes"}]}"#,
        ),
    ]
}

/// A response's reasoning stays in the context until the next user message.
#[test]
fn codex_reasoning_until_the_next_user_message() {
    let mut lines = codex_start();
    lines.extend([
        codex_line("response_item", r#"{"type":"reasoning","summary":[],"encrypted_content":"gAAAAA"}"#),
        codex_line("response_item", r#"{"type":"function_call","name":"shell","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}"#),
        codex_tokens(9000, 500, 400, 9500),
        codex_line("response_item", r#"{"type":"function_call_output","call_id":"c1","output":"a.txt"}"#),
        codex_line("response_item", r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"One file."}]}"#),
        codex_tokens(9520, 20, 0, 19040),
        codex_line("response_item", r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"thanks"}]}"#),
        codex_line("response_item", r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Welcome."}]}"#),
        codex_tokens(9150, 5, 0, 28195),
    ]);
    let s = load("rollout-reasoning.jsonl", &lines);
    let reply = s.calls[0].reply.unwrap();
    let f = s.messages[reply].flags;
    assert_eq!(
        (f.recorded_tokens, f.hidden_tokens, f.hidden_until_user),
        (Some(500), 400, true)
    );
    let c = contexts(&s);
    assert_eq!(c[1].known, 500, "the whole response, reasoning included");
    assert_eq!(
        c[2].known,
        100 + 20,
        "after the user's message, without the reasoning"
    );
}

/// Web searches, whose results the rollout does not write, are estimated in the call that ran
/// them and those after it, until the next user message.
#[test]
fn codex_web_search_results_until_the_next_user_message() {
    let mut lines = codex_start();
    lines.extend([
        codex_line("response_item", r#"{"type":"web_search_call","status":"completed","action":{"type":"search","query":"release notes"}}"#),
        codex_line("response_item", r#"{"type":"web_search_call","status":"completed","action":{"type":"open_page"}}"#),
        codex_line("response_item", r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Found them."}]}"#),
        codex_tokens(15000, 30, 0, 15030),
        codex_line("response_item", r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"summarize"}]}"#),
        codex_line("response_item", r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Summary."}]}"#),
        codex_tokens(8500, 10, 0, 23540),
    ]);
    let s = load("rollout-search.jsonl", &lines);
    let search = ctxlab::formats::codex::WEB_SEARCH_TOKENS;
    let c = contexts(&s);
    assert_eq!(c[0].known, 2 * search, "in the call that ran them");
    assert_eq!(c[1].known, 30, "gone after the next user message");
}

/// `input_image` items of a tool output are images in the context.
#[test]
fn codex_images_in_tool_output() {
    let mut lines = codex_start();
    let png = "iVBORw0KGgo".repeat(100);
    lines.extend([
        codex_line("response_item", r#"{"type":"function_call","name":"view_image","arguments":"{\"path\":\"a.png\"}","call_id":"c1"}"#),
        codex_tokens(9000, 20, 0, 9020),
        codex_line("response_item", &format!(r#"{{"type":"function_call_output","call_id":"c1","output":[{{"type":"input_text","text":"a.png"}},{{"type":"input_image","image_url":"data:image/png;base64,{png}"}}]}}"#)),
        codex_line("response_item", r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"A chart."}]}"#),
        codex_tokens(9800, 5, 0, 18825),
    ]);
    let s = load("rollout-image.jsonl", &lines);
    let tool = s.messages.iter().find(|m| m.role == Role::Tool).unwrap();
    assert!(
        tool.parts
            .iter()
            .any(|p| matches!(p, Part::Image { bytes, .. } if *bytes > 0)),
        "{:?}",
        tool.parts
    );
}

/// A file Claude Code re-attaches after a compaction (or an @-mentioned file) is sent as a Read
/// call and its result, the lines numbered as the Read tool numbers them; a file too large to
/// re-attach is only named.
#[test]
fn claude_code_file_attachments_are_sent_as_read_results() {
    let s = load(
        "file-attachments.jsonl",
        &[
            cc_user("u1", "go on"),
            cc_attachment(
                "f1",
                r#"{"type":"file","filename":"/w/app.py","content":{"type":"text","file":{"filePath":"/w/app.py","content":"import os\nprint(os.getcwd())\n","numLines":2,"startLine":7,"totalLines":8}},"displayPath":"app.py"}"#,
            ),
            cc_attachment(
                "f2",
                r#"{"type":"compact_file_reference","filename":"/w/big.py","displayPath":"big.py"}"#,
            ),
            cc_assistant(
                "a1",
                "claude-opus-4-7",
                "msg_1",
                r#"{"type":"text","text":"Done."}"#,
                r#""end_turn""#,
                &usage(3, 0, 5000, 5),
            ),
        ],
    );
    let texts: Vec<&str> = s
        .messages
        .iter()
        .filter(|m| m.flags.injected)
        .map(|m| match &m.parts[0] {
            Part::Text { text } => text.as_str(),
            p => panic!("{p:?}"),
        })
        .collect();
    assert_eq!(texts.len(), 2);
    assert!(
        texts[0].contains(
            r#"Called the Read tool with the following input: {"file_path":"/w/app.py"}"#
        ),
        "{}",
        texts[0]
    );
    assert!(
        texts[0].contains("Result of calling the Read tool:\n7\timport os\n8\tprint(os.getcwd())"),
        "{}",
        texts[0]
    );
    assert!(texts[0].starts_with("<system-reminder>\n"));
    assert!(
        texts[1].contains("Note: /w/big.py was read before the last conversation was summarized"),
        "{}",
        texts[1]
    );
}

// ---------------------------------------------------------------- HTTP captures (Gemini)

/// One captured Gemini exchange: the request's contents and the response's parts and usage.
fn gemini_exchange(contents: &str, reply: &str, prompt: u64, thoughts: u64) -> String {
    format!(
        r#"{{"request":{{"model":"gemini-3-pro-preview","systemInstruction":{{"parts":[{{"text":"You plan research."}}]}},"contents":[{contents}]}},"response":{{"candidates":[{{"content":{{"role":"model","parts":[{reply}]}}}}],"usageMetadata":{{"promptTokenCount":{prompt},"candidatesTokenCount":20,"thoughtsTokenCount":{thoughts}}}}}}}"#
    )
}

/// A signed Gemini reply's thoughts stay in the context until the next user message (the
/// capture's promptTokenCount drops by them there): sized at the response's thoughtsTokenCount.
#[test]
fn gemini_signed_thoughts_until_the_next_user_message() {
    let user = r#"{"role":"user","parts":[{"text":"LLM news of the month"}]}"#;
    let signed_part = r#"{"functionCall":{"name":"plan","args":{"q":"LLM news"}},"thoughtSignature":"EpwDCpkDAb4"}"#;
    let call = format!(r#"{{"role":"model","parts":[{signed_part}]}}"#);
    let call = call.as_str();
    let result = r#"{"role":"user","parts":[{"functionResponse":{"name":"plan","response":{"result":"a plan"}}}]}"#;
    let answer = r#"{"role":"model","parts":[{"text":"Here is the plan."}]}"#;
    let next = r#"{"role":"user","parts":[{"text":"Looks good"}]}"#;
    let s = load(
        "gemini.jsonl",
        &[
            gemini_exchange(user, signed_part, 600, 87),
            gemini_exchange(
                &[user, call, result].join(","),
                r#"{"text":"Here is the plan."}"#,
                700,
                0,
            ),
            gemini_exchange(
                &[user, call, result, answer, next].join(","),
                r#"{"text":"Starting."}"#,
                650,
                0,
            ),
        ],
    );
    assert_eq!(s.calls.len(), 3);
    let signed = &s.messages[s.calls[0].reply.unwrap()];
    assert_eq!(signed.flags.hidden_tokens, 87);
    assert!(signed.flags.hidden_until_user);
    let unsigned = &s.messages[s.calls[1].reply.unwrap()];
    assert_eq!(unsigned.flags.hidden_tokens, 0);
    let c = contexts(&s);
    assert_eq!(c[1].known, 87, "the turn's thoughts are in the second call");
    assert_eq!(c[2].known, 0, "a user message ends the turn");
}

// ---------------------------------------------------------------- OpenCode

fn oc_step(output: u64, read: u64, write: u64) -> String {
    format!(
        r#"{{"type":"step-finish","reason":"stop","tokens":{{"total":{},"input":2,"output":{output},"reasoning":0,"cache":{{"read":{read},"write":{write}}}}},"cost":0.01}}"#,
        2 + read + write + output
    )
}

/// An OpenCode step's reply weighs what its step-finish recorded (final usage), not the
/// export's text: a sonnet reply whose thinking the export shows only summarised.
#[test]
fn opencode_step_output_sizes_the_reply() {
    let doc = format!(
        r#"{{"info":{{"id":"ses_rule1","title":"t","projectID":"p"}},"messages":[
{{"info":{{"id":"msg_1","role":"user","time":{{"created":1}}}},"parts":[{{"type":"text","text":"Explain the plan."}}]}},
{{"info":{{"id":"msg_2","role":"assistant","providerID":"anthropic","modelID":"claude-sonnet-5","time":{{"created":2}}}},"parts":[
 {{"type":"step-start"}},
 {{"type":"reasoning","text":"short summary","metadata":{{"anthropic":{{"signature":"{sig}"}}}}}},
 {{"type":"text","text":"Done."}},
 {}]}},
{{"info":{{"id":"msg_3","role":"user","time":{{"created":3}}}},"parts":[{{"type":"text","text":"Go on."}}]}},
{{"info":{{"id":"msg_4","role":"assistant","providerID":"anthropic","modelID":"claude-sonnet-5","time":{{"created":4}}}},"parts":[
 {{"type":"step-start"}},{{"type":"text","text":"Ok."}},{}]}}]}}"#,
        oc_step(4000, 0, 9000),
        oc_step(5, 9000, 4010),
        sig = "s".repeat(400),
    );
    // Pretty-printed over several lines, as `opencode export` writes it.
    let s = load("opencode-session.json", &[doc]);
    assert_eq!(s.calls.len(), 2);
    let f = s.messages[s.calls[0].reply.unwrap()].flags;
    // sonnet-5 keeps every turn's thinking: sized, nothing leaves at the next message.
    assert_eq!(f.recorded_tokens, Some(4000));
    assert!(f.hidden_tokens > 0 && !f.hidden_until_user, "{f:?}");
    let c = contexts(&s);
    assert_eq!(c[1].known, 4000, "the whole reply, thinking included");
}

// ---------------------------------------------------------------- Cline

fn cline_req(ts: u64, index: i64, range: Option<(u64, u64)>, request: &str, tokens: u64) -> String {
    let text = serde_json::json!({"request": request, "tokensIn": 10, "tokensOut": 50,
        "cacheWrites": 0, "cacheReads": tokens, "cost": 0.01})
    .to_string();
    let mut e = serde_json::json!({"ts": ts, "type": "say", "say": "api_req_started",
        "text": text, "conversationHistoryIndex": index});
    if let Some((a, b)) = range {
        e["conversationHistoryDeletedRange"] = serde_json::json!([a, b]);
    }
    e.to_string()
}

fn cline_say(ts: u64, index: i64, range: Option<(u64, u64)>, text: &str) -> String {
    let mut e = serde_json::json!({"ts": ts, "type": "say", "say": "text", "text": text,
        "conversationHistoryIndex": index});
    if let Some((a, b)) = range {
        e["conversationHistoryDeletedRange"] = serde_json::json!([a, b]);
    }
    e.to_string()
}

/// A Cline task with only its UI log: the deleted range stamped on the events written while a
/// request ran is the truncation that request was sent with (the history loses messages 2..=5).
#[test]
fn cline_ui_log_deleted_range_is_a_truncation() {
    let big = "x".repeat(4000);
    let r = Some((2, 5));
    let events = [
        cline_say(1, -1, None, "task"),
        cline_req(2, -1, None, "<task>do it</task>", 1000),
        cline_say(3, 0, None, "first reply"),
        cline_req(4, 1, None, &big, 2000),
        cline_say(5, 2, None, "second reply"),
        cline_req(6, 3, None, &big, 3000),
        cline_say(7, 4, None, "third reply"),
        cline_req(8, 5, None, "small", 4000),
        cline_say(9, 6, r, "fourth reply, truncated history"),
        cline_req(10, 7, r, "small again", 2000),
        cline_say(11, 8, r, "fifth reply"),
    ];
    let doc = format!("[{}]", events.join(","));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ui_messages.json");
    std::fs::write(&path, doc).unwrap();
    let s = ctxlab::formats::load(&path).unwrap().remove(0);
    assert_eq!(s.calls.len(), 5);
    assert_eq!(s.compactions.len(), 1, "{:?}", s.compactions);
    assert_eq!(s.compactions[0].trigger, "truncation");
    let c = contexts(&s);
    // Call 3 sent the task, its reply (now Cline's truncation notice, ~80 tokens) and its own
    // request: both big requests (1,000 tokens each) are gone.
    assert!(c[3].counted < c[2].counted / 3, "{c:?}");
    assert!(c[3].counted < 200, "{c:?}");
    // The next call keeps the truncated history and adds to it.
    assert!(c[4].counted > c[3].counted, "{c:?}");
    assert!(c[4].counted < 200, "{c:?}");
}

/// Cline's first truncation sets the first assistant message's block 0 to its truncation notice
/// (cline/cline `src/core/context/context-management/ContextManager.ts`,
/// `applyStandardContextTruncationNoticeChange`), which `applyContextHistoryUpdates` applies only
/// where that block is text: a first reply opening with its thinking is sent unchanged.
#[test]
fn cline_first_truncation_puts_its_notice_in_the_first_reply() {
    let big = "x".repeat(4000);
    let r = Some((2, 5));
    let load = |first_reply: &[String]| {
        let mut events = vec![
            cline_say(1, -1, None, "task"),
            cline_req(2, -1, None, "<task>do it</task>", 1000),
        ];
        events.extend_from_slice(first_reply);
        events.extend([
            cline_req(4, 1, None, &big, 2000),
            cline_say(5, 2, None, "second reply"),
            cline_req(6, 3, None, &big, 3000),
            cline_say(7, 4, None, "third reply"),
            cline_req(8, 5, None, "small", 4000),
            cline_say(9, 6, r, "fourth reply, truncated history"),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ui_messages.json");
        std::fs::write(&path, format!("[{}]", events.join(","))).unwrap();
        ctxlab::formats::load(&path).unwrap().remove(0)
    };
    let first_of = |s: &Session| {
        assert_eq!(s.compactions.len(), 1, "{:?}", s.compactions);
        // After the boundary the kept messages are copied in order: the task, then its reply.
        let m = &s.messages[s.compactions[0].at_message + 1];
        assert_eq!(m.role, Role::Assistant);
        m.clone()
    };
    let long = "a first reply of some length ".repeat(40);
    let s = load(&[cline_say(3, 0, None, &long)]);
    let m = first_of(&s);
    match &m.parts[0] {
        Part::Text { text } => assert!(
            text.starts_with(
                "[NOTE] Some previous conversation history with the user has been removed"
            ),
            "{text}"
        ),
        p => panic!("{p:?}"),
    }
    assert_eq!(
        m.flags.recorded_tokens, None,
        "no longer the reply Cline received"
    );
    let c = contexts(&s);
    assert!(c[3].counted < 150, "the long first reply is gone: {c:?}");
    // The same reply opening with its reasoning keeps its text and its recorded size.
    let reasoning = serde_json::json!({"ts": 3, "type": "say", "say": "reasoning",
        "text": "thinking first", "conversationHistoryIndex": 0})
    .to_string();
    let s = load(&[reasoning, cline_say(3, 0, None, &long)]);
    let m = first_of(&s);
    assert!(
        matches!(&m.parts[0], Part::Thinking { .. }),
        "{:?}",
        m.parts
    );
    assert!(matches!(&m.parts[1], Part::Text { text } if *text == long));
    assert_eq!(m.flags.recorded_tokens, Some(50));
}

/// A request whose stream broke off (`cancelReason` on its `api_req_started`): its `tokensOut` is
/// only what had arrived, and Cline keeps the text streamed so far, without its thinking, then its
/// interruption note (cline/cline `src/core/task/index.ts`, `Task.abortStream`).
#[test]
fn cline_broken_off_stream_keeps_its_text_and_note() {
    let mut broken: serde_json::Value =
        serde_json::from_str(&cline_req(4, 1, None, "next", 2000)).unwrap();
    let mut info: serde_json::Value =
        serde_json::from_str(broken["text"].as_str().unwrap()).unwrap();
    info["tokensOut"] = 1.into();
    info["cancelReason"] = "streaming_failed".into();
    broken["text"] = info.to_string().into();
    let reasoning = serde_json::json!({"ts": 5, "type": "say", "say": "reasoning",
        "text": "some thinking", "conversationHistoryIndex": 2})
    .to_string();
    let events = [
        cline_req(2, -1, None, "<task>do it</task>", 1000),
        cline_say(3, 0, None, "first reply"),
        broken.to_string(),
        reasoning,
        cline_say(6, 2, None, "Now add the panel:"),
        cline_req(7, 3, None, "[TASK RESUMPTION] go on", 3000),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ui_messages.json");
    std::fs::write(&path, format!("[{}]", events.join(","))).unwrap();
    let s = ctxlab::formats::load(&path).unwrap().remove(0);
    let r = &s.messages[s.calls[1].reply.unwrap()];
    assert_eq!(r.flags.recorded_tokens, None, "1 token is not its size");
    let texts: Vec<&str> = r
        .parts
        .iter()
        .map(|p| match p {
            Part::Text { text } => text.as_str(),
            p => panic!("only text stays: {p:?}"),
        })
        .collect();
    assert_eq!(
        texts,
        ["Now add the panel:", "[Response interrupted by API Error]"]
    );
    // The other replies still weigh their recorded output.
    assert_eq!(
        s.messages[s.calls[0].reply.unwrap()].flags.recorded_tokens,
        Some(50)
    );
}

/// Each Cline request's `tokensOut` is its reply's size (hidden thinking and tool-call markup
/// included), from the conversation history or from the UI log alone.
#[test]
fn cline_reply_weighs_its_recorded_output() {
    let events = [
        cline_say(1, -1, None, "task"),
        cline_req(2, -1, None, "<task>do it</task>", 1000),
        cline_say(3, 0, None, "first reply"),
        cline_req(4, 1, None, "next", 2000),
        cline_say(5, 2, None, "second reply"),
        cline_req(6, 3, None, "again", 3000),
    ];
    let dir = tempfile::tempdir().unwrap();
    let ui = dir.path().join("ui_messages.json");
    std::fs::write(&ui, format!("[{}]", events.join(","))).unwrap();
    let s = ctxlab::formats::load(&ui).unwrap().remove(0);
    let c = contexts(&s);
    assert_eq!(c.len(), 3);
    assert_eq!((c[0].known, c[1].known, c[2].known), (0, 50, 100), "{c:?}");
    // With the history beside it, the history's replies weigh the same.
    let msg = |role: &str, text: &str| serde_json::json!({"role": role, "content": [{"type": "text", "text": text}]});
    let history = serde_json::json!([
        msg("user", "<task>do it</task>"),
        msg(
            "assistant",
            "first reply, with a long <write_to_file> the output counted"
        ),
        msg("user", "next"),
        msg("assistant", "second reply"),
        msg("user", "again"),
        msg("assistant", "third reply"),
    ]);
    std::fs::write(
        dir.path().join("api_conversation_history.json"),
        history.to_string(),
    )
    .unwrap();
    let s = ctxlab::formats::load(dir.path()).unwrap().remove(0);
    let c = contexts(&s);
    assert_eq!(c.len(), 3);
    assert_eq!((c[0].known, c[1].known, c[2].known), (0, 50, 100), "{c:?}");
}

// ---------------------------------------------------------------- Anthropic managed agents

fn ma_event(raw: serde_json::Value) -> String {
    serde_json::json!({"role": "agent", "kind": "x", "time": "2026-08-16T09:36:11Z", "raw": raw})
        .to_string()
}

fn ma_request_start(id: &str) -> String {
    ma_event(serde_json::json!({"type": "span.model_request_start", "id": id}))
}

/// The end of model request `start` with its usage.
fn ma_request_end(start: &str, input: u64, write: u64, read: u64, output: u64) -> String {
    ma_event(
        serde_json::json!({"type": "span.model_request_end", "model_request_start_id": start,
        "model_usage": {"input_tokens": input, "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read, "output_tokens": output}}),
    )
}

/// A managed-agent web search returns nested `search_result` blocks (title, source, text
/// blocks): all of it is read. A reply whose thinking shows as an empty event weighs its
/// recorded output.
#[test]
fn managed_agents_search_results_and_reply_sizes() {
    let snippet = "offset correction study results ".repeat(40);
    let lines = vec![
        ma_event(
            serde_json::json!({"type": "user.message", "content": [{"type": "text", "text": "find the paper"}]}),
        ),
        ma_request_start("s1"),
        ma_event(serde_json::json!({"type": "agent.thinking"})),
        ma_event(
            serde_json::json!({"type": "agent.tool_use", "id": "t1", "name": "web_search", "input": {"query": "paper"}}),
        ),
        ma_request_end("s1", 2, 5000, 0, 700),
        ma_event(
            serde_json::json!({"type": "agent.tool_result", "tool_use_id": "t1", "content": [
            {"type": "search_result", "title": "The paper", "source": "https://example.org/p",
             "content": [{"type": "text", "text": snippet}]}]}),
        ),
        ma_request_start("s2"),
        ma_event(
            serde_json::json!({"type": "agent.message", "content": [{"type": "text", "text": "found"}]}),
        ),
        ma_request_end("s2", 2, 1200, 5000, 5),
    ];
    let s = load("transcript.jsonl", &lines);
    assert_eq!(s.calls.len(), 2);
    let Part::ToolResult { content, .. } = &s.messages[2].parts[0] else {
        panic!("{:?}", s.messages[2])
    };
    assert!(
        content.contains("The paper") && content.contains(snippet.trim()),
        "{content}"
    );
    let c = contexts(&s);
    assert_eq!(c[1].known, 700, "the first reply, thinking included");
    assert!(c[1].counted > 300, "the search results are counted: {c:?}");
}

/// A managed agent is given its outcome's rubric with the description, the grader's explanation
/// before its next call, and the images its tools return.
#[test]
fn managed_agents_rubric_grader_feedback_and_images() {
    let rubric = "Grade each criterion independently. ".repeat(30);
    let feedback = "An independent grader found one gap: the boundary section. ".repeat(10);
    let png = "iVBORw0KGgo".repeat(400);
    let lines = vec![
        ma_event(
            serde_json::json!({"type": "user.define_outcome", "description": "audit the paper",
            "rubric": {"type": "text", "content": rubric}}),
        ),
        ma_request_start("s1"),
        ma_event(
            serde_json::json!({"type": "agent.tool_use", "id": "t1", "name": "read",
            "input": {"file_path": "/w/fig.png"}}),
        ),
        ma_request_end("s1", 2, 5000, 0, 60),
        ma_event(
            serde_json::json!({"type": "agent.tool_result", "tool_use_id": "t1", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}]}),
        ),
        ma_request_start("s2"),
        ma_event(
            serde_json::json!({"type": "agent.message", "content": [{"type": "text", "text": "done"}]}),
        ),
        ma_request_end("s2", 2, 1300, 5000, 5),
        ma_event(serde_json::json!({"type": "span.outcome_evaluation_start", "iteration": 0})),
        ma_event(
            serde_json::json!({"type": "span.outcome_evaluation_end", "iteration": 0,
            "result": "satisfied", "explanation": feedback}),
        ),
        ma_request_start("s3"),
        ma_event(
            serde_json::json!({"type": "agent.message", "content": [{"type": "text", "text": "fixing"}]}),
        ),
        ma_request_end("s3", 2, 200, 6300, 5),
    ];
    let s = load("transcript.jsonl", &lines);
    assert_eq!(s.calls.len(), 3);
    let Part::Text { text } = &s.messages[0].parts[0] else {
        panic!("{:?}", s.messages[0])
    };
    assert!(
        text.starts_with("audit the paper") && text.contains(rubric.trim()),
        "{text}"
    );
    let result = &s.messages[2];
    assert!(
        matches!(result.parts[1], Part::Image { bytes, .. } if bytes == 3300),
        "{:?}",
        result.parts
    );
    let grader = s
        .messages
        .iter()
        .find(|m| m.flags.injected)
        .expect("the grader's explanation");
    assert!(matches!(&grader.parts[0], Part::Text { text } if text == &feedback));
    let c = contexts(&s);
    // The rubric is most of the first call; the image and the explanation reach the next ones.
    assert!(c[0].counted > 250, "{c:?}");
    assert!(c[1].counted > c[0].counted + 700, "the image: {c:?}");
    assert!(c[2].counted > c[1].counted + 120, "the explanation: {c:?}");
}

/// At a request Cline optimizes (the previous total reached its limit, known from the lowest
/// total that preceded a new deleted range), every earlier read of a file is replaced by Cline's
/// notice, the last read kept, even without a truncation.
#[test]
fn cline_ui_log_deduplicates_file_reads() {
    let file = "fn main() {}\n".repeat(300);
    let read = format!("[read_file for 'src/main.rs'] Result:\n{file}\n\n<environment_details>\nx\n</environment_details>");
    let r = Some((2, 3));
    let events = [
        cline_req(1, -1, None, "<task>do it</task>", 1000),
        cline_say(2, 0, None, "reply"),
        cline_req(3, 1, None, "small", 1200),
        cline_say(4, 2, None, "reply"),
        cline_req(5, 3, None, &read, 50_000),
        cline_say(6, 4, None, "reply"),
        // 50,060 reached the limit: truncation of 2..=3, which the range shows.
        cline_req(7, 5, r, "ok", 40_000),
        cline_say(8, 6, r, "reply"),
        cline_req(9, 7, r, &read, 60_000),
        cline_say(10, 8, r, "reply"),
        // 60,060 ≥ 50,060 again, the range unchanged: the first read is deduplicated.
        cline_req(11, 9, r, "next", 45_000),
        cline_say(12, 10, r, "reply"),
    ];
    let doc = format!("[{}]", events.join(","));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ui_messages.json");
    std::fs::write(&path, doc).unwrap();
    let s = ctxlab::formats::load(&path).unwrap().remove(0);
    let triggers: Vec<&str> = s.compactions.iter().map(|c| c.trigger.as_str()).collect();
    assert_eq!(
        triggers,
        ["truncation", "file-read dedup"],
        "{:?}",
        s.compactions
    );
    let c = contexts(&s);
    // Call 5 holds both reads; call 6 only the second in full.
    let one_read = c[4].counted - c[3].counted;
    assert!(c[5].counted + one_read / 2 < c[4].counted + 20, "{c:?}");
    assert!(c[5].counted > one_read, "the last read stays: {c:?}");
}

// ---------------------------------------------------------------- pi

/// pi records each reply's usage once the response is complete: the reply weighs its output.
#[test]
fn pi_reply_weighs_its_recorded_output() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/pi");
    let file = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("the pi sample");
    let s = ctxlab::formats::load(&file).unwrap().remove(0);
    let mut sized = 0;
    for c in &s.calls {
        if let (Some(r), Some(u)) = (c.reply, c.usage) {
            assert_eq!(s.messages[r].flags.recorded_tokens, Some(u.output));
            sized += 1;
        }
    }
    assert!(sized > 0);
}

/// Claude Code 2.1.3x re-attaches the files it touched last after a compaction without writing
/// them to the log: a file read whole (or written whole) and edited since is rebuilt by applying
/// the logged edits in order and sent as a Read result numbered as the log's own; one over 5k
/// tokens is only named; plan files are not among them; a file the log shows only in part is
/// left out. A log that writes the attachments (2.1.1xx) gets no rebuilt copy.
#[test]
fn claude_code_rebuilds_the_files_a_compaction_re_attached() {
    let tool = |uuid: &str, id: &str, name: &str, input: &str| {
        cc_assistant(
            uuid,
            "claude-opus-4-6",
            &format!("msg_{uuid}"),
            &format!(r#"{{"type":"tool_use","id":"{id}","name":"{name}","input":{input}}}"#),
            "null",
            &usage(3, 1000, 100, 10),
        )
    };
    let big = "x".repeat(24_000);
    let lines = |tail: &[String]| -> Vec<String> {
        let mut v = vec![
            cc_user("u1", "fix it"),
            tool("a1", "t1", "Read", r#"{"file_path":"/w/a.js"}"#),
            cc_tool_result(
                "r1",
                "t1",
                r#""     1→let a = 1;\n     2→let b = 2;\n\n<system-reminder>\nmalware note\n</system-reminder>""#,
            ),
            tool(
                "a2",
                "t2",
                "Edit",
                r#"{"file_path":"/w/a.js","old_string":"let b = 2;","new_string":"let b = 3;"}"#,
            ),
            cc_tool_result("r2", "t2", r#""The file /w/a.js has been updated.""#),
            tool(
                "a3",
                "t3",
                "Read",
                r#"{"file_path":"/w/b.js","offset":5,"limit":1}"#,
            ),
            cc_tool_result("r3", "t3", r#""     5→partial""#),
            tool(
                "a4",
                "t4",
                "Write",
                &format!(r#"{{"file_path":"/w/c.js","content":"{big}"}}"#),
            ),
            cc_tool_result("r4", "t4", r#""File created""#),
            tool(
                "a5",
                "t5",
                "Read",
                r#"{"file_path":"/h/.claude/plans/p.md"}"#,
            ),
            cc_tool_result("r5", "t5", r#""     1→# Plan""#),
            cc_boundary(r#"{"trigger":"auto","preTokens":9000}"#),
            cc_summary("2026-04-26T22:10:01.000Z", "Summary."),
        ];
        v.extend_from_slice(tail);
        v.push(cc_assistant(
            "a6",
            "claude-opus-4-6",
            "msg_6",
            r#"{"type":"text","text":"Ok."}"#,
            "null",
            &usage(3, 1000, 400, 2),
        ));
        v
    };
    let injected = |s: &Session| -> Vec<String> {
        s.messages
            .iter()
            .filter(|m| m.flags.injected)
            .map(|m| match &m.parts[0] {
                Part::Text { text } => text.clone(),
                p => panic!("{p:?}"),
            })
            .collect()
    };
    let s = load("restore.jsonl", &lines(&[]));
    let texts = injected(&s);
    assert_eq!(texts.len(), 2, "{texts:?}");
    // The most recent first: c.js (too large: named), then a.js as edited.
    assert!(
        texts[0].contains("Note: /w/c.js was read before the last conversation was summarized"),
        "{}",
        texts[0]
    );
    assert!(
        texts[1]
            .contains(r#"Called the Read tool with the following input: {"file_path":"/w/a.js"}"#),
        "{}",
        texts[1]
    );
    assert!(
        texts[1].ends_with("Result of calling the Read tool:\n     1→let a = 1;\n     2→let b = 3;\n</system-reminder>"),
        "{}",
        texts[1]
    );
    assert!(!texts.iter().any(|t| t.contains("p.md")));
    // b.js, shown only in part, is left out (and not warned about).
    assert!(!texts.iter().any(|t| t.contains("/w/b.js")));
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    // They are in the first call after the compaction, placed before its reply.
    let c = contexts(&s);
    let last = c.last().unwrap();
    let reply = s.calls.last().unwrap().reply.unwrap();
    assert!(s.messages[reply - 2..reply]
        .iter()
        .all(|m| m.flags.injected));
    assert!(last.counted > 60, "{}", last.counted);
    // A log that writes the re-attached files: those alone.
    let written = format!(
        r#"{{"type":"attachment","sessionId":"{SID}","uuid":"f1","timestamp":"2026-04-26T22:10:02.000Z","attachment":{{"type":"file","filename":"/w/a.js","content":{{"type":"text","file":{{"filePath":"/w/a.js","content":"let a = 1;","numLines":1,"startLine":1,"totalLines":1}}}},"displayPath":"a.js"}}}}"#
    );
    let s = load("written.jsonl", &lines(&[written]));
    let texts = injected(&s);
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(texts[0].contains("1\tlet a = 1;"));
}

/// Claude Code 2.1.3x also sends the session's plan file after a compaction when it exists
/// (`plan_file_reference`: `plans/<slug>.md`, the entries' `slug`), without writing it to the
/// log: its text is the plan as the log last showed it whole (a Read, a Write, the edits after
/// them, or the `plan` an `ExitPlanMode` call carries, which Claude Code fills from the file on
/// disk). An `ExitPlanMode` in the first reply after the compaction shows the file as the
/// compaction sent it and wins over an older Read. A session that used plan mode without the log
/// showing the plan gets a placeholder outside the context; a log without a slug (before plan
/// files) none; a log that writes the attachment (2.1.1xx) is read as it is.
#[test]
fn claude_code_rebuilds_the_plan_a_compaction_sent() {
    const SLUG: &str = "brisk-plan";
    let with_slug = |l: String| {
        l.replacen(
            &format!(r#""sessionId":"{SID}""#),
            &format!(r#""sessionId":"{SID}","slug":"{SLUG}""#),
            1,
        )
    };
    let tool = |uuid: &str, id: &str, name: &str, input: &str| {
        cc_assistant(
            uuid,
            "claude-opus-4-6",
            &format!("msg_{uuid}"),
            &format!(r#"{{"type":"tool_use","id":"{id}","name":"{name}","input":{input}}}"#),
            "null",
            &usage(3, 1000, 100, 10),
        )
    };
    let plan_path = format!("/h/.claude/plans/{SLUG}.md");
    let compaction = [
        format!(
            r#"{{"type":"system","subtype":"compact_boundary","sessionId":"{SID}","uuid":"b1","parentUuid":null,"timestamp":"2026-04-26T22:10:00.000Z","compactMetadata":{{"trigger":"auto","preTokens":9000}}}}"#
        ),
        format!(
            r#"{{"type":"user","sessionId":"{SID}","uuid":"s1","isCompactSummary":true,"timestamp":"2026-04-26T22:10:01.000Z","message":{{"role":"user","content":"Summary."}}}}"#
        ),
    ];
    let text_reply = cc_assistant(
        "a9",
        "claude-opus-4-6",
        "msg_9",
        r#"{"type":"text","text":"Presenting the plan."}"#,
        "null",
        &usage(3, 1000, 400, 2),
    );
    // The second entry of the same response: its ExitPlanMode carries the plan from disk.
    let exit_plan = cc_assistant(
        "a9b",
        "claude-opus-4-6",
        "msg_9",
        r##"{"type":"tool_use","id":"t9","name":"ExitPlanMode","input":{"plan":"# Plan B\n\nShip the water."}}"##,
        "null",
        &usage(3, 1000, 400, 2),
    );
    let read_plan = [
        cc_user("u1", "plan the water"),
        tool("a1", "t0", "EnterPlanMode", "{}"),
        cc_tool_result("r0", "t0", r#""Entered plan mode.""#),
        // A Write Claude Code refused leaves the file as it was.
        tool(
            "a2",
            "t1",
            "Write",
            &format!(r##"{{"file_path":"{plan_path}","content":"# Refused"}}"##),
        ),
        cc_tool_result(
            "r1",
            "t1",
            r#""<tool_use_error>File has not been read yet.</tool_use_error>""#,
        )
        .replacen(
            r#""tool_use_id":"t1","#,
            r#""tool_use_id":"t1","is_error":true,"#,
            1,
        ),
        tool(
            "a3",
            "t2",
            "Read",
            &format!(r#"{{"file_path":"{plan_path}"}}"#),
        ),
        cc_tool_result(
            "r2",
            "t2",
            r#""     1→# Plan A\n     2→\n     3→Plant the trees.""#,
        ),
    ];
    let build = |head: &[String], tail: &[String], slug: bool| -> Session {
        let lines: Vec<String> = head
            .iter()
            .chain(compaction.iter())
            .chain(tail.iter())
            .cloned()
            .map(|l| if slug { with_slug(l) } else { l })
            .collect();
        load("plan.jsonl", &lines)
    };
    let plans = |s: &Session| -> Vec<(String, bool, u64)> {
        s.messages
            .iter()
            .filter(|m| m.flags.injected)
            .map(|m| {
                let text = match m.parts.first() {
                    Some(Part::Text { text }) => text.clone(),
                    _ => String::new(),
                };
                (text, m.flags.meta, m.flags.hidden_tokens)
            })
            .collect()
    };
    let fixed = ctxlab::formats::claude_code::PLAN_REFERENCE_TOKENS;

    // The plan as the log last showed it: the Read, not the refused Write.
    let s = build(&read_plan, &[text_reply.clone()], true);
    let p = plans(&s);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].0.contains(&plan_path) && p[0].0.contains("# Plan A\n\nPlant the trees."),
        "{p:?}"
    );
    assert!(!p[0].0.contains("Refused"));
    assert_eq!((p[0].1, p[0].2), (false, fixed));
    // It is in the first call after the compaction, before its reply.
    let reply = s.calls.last().unwrap().reply.unwrap();
    assert!(s.messages[reply - 1].flags.injected);
    let with_plan = contexts(&s).last().unwrap().clone();

    // The reply's ExitPlanMode shows the file the compaction sent: it wins.
    let s = build(&read_plan, &[text_reply.clone(), exit_plan.clone()], true);
    let p = plans(&s);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].0.contains("# Plan B\n\nShip the water.") && !p[0].0.contains("Plan A"),
        "{p:?}"
    );
    assert!(p[0].0.contains(&plan_path));

    // Plan mode, but the log never shows the plan: a placeholder outside the context, filled
    // by the reply's ExitPlanMode (its path beside the plans the log names, else the default).
    let entered = &read_plan[..3];
    let s = build(entered, &[text_reply.clone()], true);
    let p = plans(&s);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].1 && p[0].0.is_empty(), "{p:?}");
    let without_plan = contexts(&s).last().unwrap().clone();
    assert!(
        with_plan.counted > without_plan.counted,
        "{with_plan:?} {without_plan:?}"
    );
    assert_eq!(with_plan.known, without_plan.known + fixed);
    let s = build(entered, &[text_reply.clone(), exit_plan.clone()], true);
    let p = plans(&s);
    assert!(!p[0].1 && p[0].0.contains("# Plan B"), "{p:?}");
    assert!(
        p[0].0.contains(&format!("~/.claude/plans/{SLUG}.md")),
        "{p:?}"
    );

    // No slug (a version without plan files): no plan.
    let s = build(&read_plan, &[text_reply.clone(), exit_plan.clone()], false);
    assert!(plans(&s).is_empty(), "{:?}", plans(&s));

    // The log's last word on the plan before the compaction is an ExitPlanMode: its text.
    let mut second = read_plan.to_vec();
    second.push(tool(
        "a4",
        "t4",
        "ExitPlanMode",
        r##"{"plan":"# Plan C\n\nDig the pond."}"##,
    ));
    let s = build(&second, &[text_reply.clone()], true);
    let p = plans(&s);
    assert!(
        p[0].0.contains("# Plan C") && !p[0].0.contains("Plan A"),
        "{p:?}"
    );

    // 2.1.1xx writes the attachment: read as it is, with the same fixed text.
    let s = load(
        "plan_written.jsonl",
        &[
            cc_user("u1", "go on"),
            format!(
                r##"{{"type":"attachment","sessionId":"{SID}","uuid":"p1","timestamp":"2026-04-26T22:00:03.000Z","attachment":{{"type":"plan_file_reference","planFilePath":"{plan_path}","planContent":"# Plan D"}}}}"##
            ),
            text_reply,
        ],
    );
    let p = plans(&s);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].0.contains("# Plan D") && p[0].0.contains(&plan_path),
        "{p:?}"
    );
    assert_eq!(p[0].2, fixed);
}

/// A precomputed compaction: Claude Code writes the boundary and summary, then the entries of a
/// call that ran before the compaction took effect (their uuids in `preservedMessages`, their
/// timestamps before the boundary's). That call was sent with the pre-compaction context; the
/// calls after it see the summary and the kept entries.
#[test]
fn claude_code_precomputed_compaction_sends_the_kept_call_uncompacted() {
    let long = "word ".repeat(200);
    let at = |uuid: &str, ts: &str, body: String| {
        body.replacen(
            &format!(r#""uuid":"{uuid}","timestamp":"2026-04-26T22:00:02.000Z""#),
            &format!(r#""uuid":"{uuid}","timestamp":"{ts}""#),
            1,
        )
    };
    let s = load(
        "precomputed.jsonl",
        &[
            cc_user("u1", &long),
            cc_assistant(
                "a1",
                "claude-sonnet-4-6",
                "msg_1",
                TOOL_USE,
                r#""tool_use""#,
                &usage(3, 0, 400, 20),
            ),
            cc_tool_result("r1", "toolu_1", r#""src/main.rs""#),
            cc_boundary(
                r#"{"trigger":"auto","preTokens":9000,"preservedSegment":{"headUuid":"a2","anchorUuid":"s1","tailUuid":"a2"},"preservedMessages":{"anchorUuid":"s1","uuids":["a2"],"allUuids":["a2"]}}"#,
            ),
            cc_summary("2026-04-26T22:10:00.500Z", "Summary."),
            // Sent at 22:09, before the boundary: the pre-compaction context.
            at(
                "a2",
                "2026-04-26T22:09:00.000Z",
                cc_assistant(
                    "a2",
                    "claude-sonnet-4-6",
                    "msg_2",
                    r#"{"type":"text","text":"Listed."}"#,
                    r#""end_turn""#,
                    &usage(3, 400, 30, 3),
                ),
            ),
            at("u3", "2026-04-26T22:11:00.000Z", cc_user("u3", "next")),
            at(
                "a3",
                "2026-04-26T22:11:01.000Z",
                cc_assistant(
                    "a3",
                    "claude-sonnet-4-6",
                    "msg_3",
                    r#"{"type":"text","text":"Ok."}"#,
                    r#""end_turn""#,
                    &usage(3, 0, 60, 2),
                ),
            ),
        ],
    );
    assert_eq!(s.calls.len(), 3);
    let c = &s.compactions[0];
    let summary = c.summary.unwrap();
    assert_eq!(c.at_message, summary);
    // The kept call's reply comes before the summary and is the compaction's kept tail.
    let kept_reply = s.calls[1].reply.unwrap();
    assert!(kept_reply < summary, "{kept_reply} {summary}");
    assert_eq!(c.kept_from, Some(kept_reply));
    let ctx = contexts(&s);
    // Call 1 still holds the long first message (~250 tokens); call 2 only the summary, the
    // kept reply and "next".
    assert!(ctx[1].counted > 240, "{:?}", ctx[1]);
    assert!(ctx[2].counted < 40, "{:?}", ctx[2]);
}

/// A tool result is counted from `message.content`, never from the entry's top-level
/// `toolUseResult` (Claude Code's own record of the tool's output, which the provider does not
/// see: measured on the real logs, docs/tokens.md).
#[test]
fn claude_code_counts_message_content_not_tool_use_result() {
    let big = "x".repeat(40_000);
    let result = format!(
        r#"{{"type":"user","sessionId":"{SID}","uuid":"r1","timestamp":"2026-04-26T22:00:01.000Z","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_1","content":"3 files"}}]}},"toolUseResult":{{"stdout":"{big}","stderr":"","interrupted":false}}}}"#
    );
    let s = load(
        "tool-use-result.jsonl",
        &[
            cc_user("u1", "list"),
            cc_assistant(
                "a1",
                "claude-sonnet-4-6",
                "msg_1",
                TOOL_USE,
                r#""tool_use""#,
                &usage(3, 0, 400, 20),
            ),
            result,
            cc_assistant(
                "a2",
                "claude-sonnet-4-6",
                "msg_2",
                r#"{"type":"text","text":"Three."}"#,
                r#""end_turn""#,
                &usage(3, 400, 30, 3),
            ),
        ],
    );
    let c = contexts(&s);
    // "list", the tool call and "3 files": a few dozen tokens, not the 10,000 of toolUseResult.
    assert!(c[1].counted < 100, "{:?}", c[1]);
    assert!(s.messages.iter().all(|m| m.parts.iter().all(|p| match p {
        Part::ToolResult { content, .. } => content == "3 files",
        _ => true,
    })));
}
