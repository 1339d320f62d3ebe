//! Which reader a file needs, from its first entries (never from its name).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use serde_json::{Map, Value};

use super::lines::{LineReader, Next};
use super::*;

/// How many non-empty lines to look at before giving up.
const SNIFF_LINES: usize = 16;

/// The reader id for this file.
pub fn detect(path: &Path) -> Result<&'static str> {
    let unknown = |reason: String| Error::UnknownFormat {
        path: path.to_path_buf(),
        reason,
        tried: FORMATS.join(", "),
    };
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut head = Vec::with_capacity(4096);
    f.take(4096)
        .read_to_end(&mut head)
        .map_err(|e| Error::io(path, e))?;
    let Some(first) = head.iter().position(|b| !b.is_ascii_whitespace()) else {
        return Err(unknown(if head.is_empty() {
            "the file is empty".into()
        } else {
            "the file holds only whitespace".into()
        }));
    };
    if head[first..].starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Err(unknown(
            "the file starts with a UTF-8 byte-order mark, which JSON logs never carry".into(),
        ));
    }
    if opencode::sniff_sqlite(&head) {
        return if opencode::is_db(path) {
            Ok(opencode::ID)
        } else {
            Err(unknown(
                "a SQLite database without OpenCode's session, message and part tables".into(),
            ))
        };
    }
    if aider::sniff_text(&head[first..]) {
        return Ok(aider::ID);
    }
    if !matches!(head[first], b'{' | b'[') {
        let binary = head.contains(&0);
        return Err(unknown(if binary {
            "binary data, not JSON".into()
        } else {
            format!(
                "the first character is {:?}, not the `{{` or `[` that starts a JSON log",
                char::from(head[first])
            )
        }));
    }

    if cline::sniff_head(&String::from_utf8_lossy(&head[first..])) {
        return Ok(cline::ID);
    }
    if cline::sniff_history_head(&String::from_utf8_lossy(&head[first..])) {
        return Ok(cline::ID);
    }
    if head[first] == b'[' {
        return openai_array(&head, &unknown);
    }

    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = blake3::Hasher::new();
    let mut lines = LineReader::new(BufReader::new(f), &mut hasher);
    let mut seen = 0;
    let mut parsed_any = false;
    let mut last_err = String::new();
    // A first line that is an unfinished JSON value: the file is one multi-line JSON document.
    let mut document = false;
    while seen < SNIFF_LINES {
        match lines.next_line().map_err(|e| Error::io(path, e))? {
            Next::Eof => break,
            Next::TooLong(_) => seen += 1,
            Next::Line => {
                let line = lines.line();
                if line.iter().all(|b| b.is_ascii_whitespace()) {
                    continue;
                }
                seen += 1;
                // A line with two objects run together still tells its format by the first one.
                let mut stream = serde_json::Deserializer::from_slice(line).into_iter::<Value>();
                match stream.next() {
                    Some(Ok(Value::Object(o))) => {
                        parsed_any = true;
                        if let Some(id) = classify(&o) {
                            return Ok(id);
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => {
                        if seen == 1 && e.is_eof() {
                            document = true;
                            break;
                        }
                        last_err = format!("line {}: {e}", lines.line_no());
                    }
                    None => {}
                }
            }
        }
    }
    if document {
        let text = String::from_utf8_lossy(&head);
        if entire::sniff_head(&text) {
            return Err(unknown(
                "an Entire checkpoint's metadata.json (totals only, no transcript): open the full.jsonl beside it".into(),
            ));
        }
        if gemini::sniff_head(&text) {
            return Ok(gemini::ID);
        }
        if opencode::sniff_head(&text) {
            return Ok(opencode::ID);
        }
        if swe_agent::sniff_head(&text) {
            return Ok(swe_agent::ID);
        }
        if otel::sniff_head(&text) {
            return Ok(otel::ID);
        }
        // One pretty-printed JSON object: the chat-messages form `{"messages": [...]}`.
        if String::from_utf8_lossy(&head).contains("\"messages\"") {
            return Ok(openai::ID);
        }
        return Err(unknown(
            "one multi-line JSON object without a `messages` list near its start".into(),
        ));
    }
    if !parsed_any {
        return Err(unknown(format!("not JSON lines ({last_err})")));
    }
    Err(unknown(format!(
        "no entry in the first {SNIFF_LINES} lines matches a known log"
    )))
}

/// A JSON array is a list of chat messages when its first element has a `role`.
fn openai_array(head: &[u8], unknown: &dyn Fn(String) -> Error) -> Result<&'static str> {
    let text = String::from_utf8_lossy(head);
    let empty = text
        .trim_start()
        .trim_start_matches('[')
        .trim_start()
        .starts_with(']');
    if empty || text.contains("\"role\"") {
        Ok(openai::ID)
    } else {
        Err(unknown(
            "a JSON array whose first element is not a chat message (no \"role\")".into(),
        ))
    }
}

/// The format one parsed entry belongs to, when it is decisive.
fn classify(o: &Map<String, Value>) -> Option<&'static str> {
    if native::sniff(o) {
        return Some(native::ID);
    }
    if codex::sniff(o) {
        return Some(codex::ID);
    }
    if pi::sniff(o) {
        return Some(pi::ID);
    }
    if fuseraft::sniff(o) {
        return Some(fuseraft::ID);
    }
    if http_capture::sniff(o) {
        return Some(http_capture::ID);
    }
    if otel::sniff(o) {
        return Some(otel::ID);
    }
    if managed_agents::sniff(o) {
        return Some(managed_agents::ID);
    }
    if usage_counter::sniff(o) {
        return Some(usage_counter::ID);
    }
    if gemini::sniff(o) {
        return Some(gemini::ID);
    }
    if copilot::sniff(o) {
        return Some(copilot::ID);
    }
    if claude_code::sniff(o) {
        return Some(claude_code::ID);
    }
    if swe_agent::sniff(o) {
        return Some(swe_agent::ID);
    }
    if openai::sniff(o) {
        return Some(openai::ID);
    }
    None
}
