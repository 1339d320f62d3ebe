//! Generated agent sessions of any length for the replay benches (benches/replay.rs,
//! benches/plugins.rs): one agent working in requests of tool call / tool result pairs, a model
//! call before every assistant message.

use ctxlab::model::*;

/// How big and how tool-heavy the generated session is.
#[derive(Clone, Copy)]
pub enum Shape {
    /// Turns of four short messages (request, tool call, tool result, answer): what the engine
    /// costs per message, with nothing for a strategy to cut.
    Tiny,
    /// Requests with 1–4 tool round trips each; results of 120–2,500 chars in lines of code, one
    /// in 40 of 12,000 chars (one in 400 of 60,000), so truncation, masking and offloading fire;
    /// answers of a few hundred chars.
    ToolHeavy,
}

/// splitmix64 of `i`: deterministic variety without state.
fn mix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn code(seed: u64, chars: usize) -> String {
    let mut s = String::with_capacity(chars + 64);
    let mut line = 0u64;
    while s.len() < chars {
        line += 1;
        s.push_str(&format!(
            "{:>4}→    let v{} = handler_{}(ctx, {}).unwrap_or_default();\n",
            line,
            line,
            (seed + line) % 97,
            mix(seed ^ line) % 10_000
        ));
    }
    let mut end = chars;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

fn prose(seed: u64, chars: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "handler",
        "returns",
        "early",
        "when",
        "config",
        "is",
        "missing,",
        "so",
        "I'll",
        "patch",
        "src/mod.rs",
        "and",
        "rerun",
        "tests;",
        "error",
        "E0502",
        "comes",
        "from",
        "borrow",
        "across",
        "await.",
    ];
    let mut s = String::with_capacity(chars + 16);
    let mut k = seed;
    while s.len() < chars {
        k = mix(k);
        s.push_str(WORDS[(k % WORDS.len() as u64) as usize]);
        s.push(' ');
    }
    s.truncate(chars);
    s
}

/// `messages` messages of one agent in the given shape.
pub fn session_of(messages: usize, shape: Shape) -> Session {
    let mut s = Session {
        id: format!("bench-{messages}"),
        ..Session::default()
    };
    let a = s.agent_index("main");
    let msg = |role, parts| Message {
        agent: a,
        role,
        parts,
        timestamp: None,
        flags: MessageFlags::default(),
        source: SourcePos::default(),
    };
    let call = |end| Call {
        agent: a,
        context_end: end,
        reply: Some(end),
        usage: None,
        model: None,
        timestamp: None,
        request_id: None,
        source: SourcePos::default(),
    };
    s.messages.reserve(messages);
    let mut i: u64 = 0;
    while s.messages.len() < messages {
        let r = mix(i);
        let (request, rounds) = match shape {
            Shape::Tiny => (
                format!(
                    "Check src/mod_{}.rs, error E{:04} at line {}",
                    i % 97,
                    i % 9973,
                    i % 1000
                ),
                1,
            ),
            Shape::ToolHeavy => (
                format!(
                    "Fix error E{:04} in src/mod_{}.rs: {}",
                    i % 9973,
                    i % 97,
                    prose(r, 80 + (r % 200) as usize)
                ),
                1 + (r % 4),
            ),
        };
        s.messages
            .push(msg(Role::User, vec![Part::Text { text: request }]));
        for k in 0..rounds {
            let id = match shape {
                Shape::Tiny => format!("toolu_{i}"),
                Shape::ToolHeavy => format!("toolu_{i}_{k}"),
            };
            s.calls.push(call(s.messages.len()));
            let (tool, args, content) = match shape {
                Shape::Tiny => (
                    "read",
                    format!("{{\"path\":\"src/mod_{}.rs\"}}", i % 97),
                    format!("fn handler_{}() -> u32 {{ {} }}", i % 97, i),
                ),
                Shape::ToolHeavy => {
                    let t = mix(i * 8 + k);
                    let chars = if t % 400 == 0 {
                        60_000
                    } else if t % 40 == 0 {
                        12_000
                    } else {
                        120 + (t % 2_400) as usize
                    };
                    let tool = ["read", "grep", "bash", "edit"][(t % 4) as usize];
                    (
                        tool,
                        format!("{{\"path\":\"src/mod_{}.rs\"}}", (i + k) % 97),
                        code(t, chars),
                    )
                }
            };
            s.messages.push(msg(
                Role::Assistant,
                vec![Part::ToolCall {
                    id: id.clone(),
                    name: tool.into(),
                    args,
                }],
            ));
            s.messages.push(msg(
                Role::Tool,
                vec![Part::ToolResult {
                    call_id: id,
                    content,
                    is_error: false,
                }],
            ));
        }
        s.calls.push(call(s.messages.len()));
        let answer = match shape {
            Shape::Tiny => format!("handler_{} in src/mod_{}.rs returns {}.", i % 97, i % 97, i),
            Shape::ToolHeavy => prose(r ^ 0xA5A5, 150 + (r % 600) as usize),
        };
        s.messages
            .push(msg(Role::Assistant, vec![Part::Text { text: answer }]));
        i += 1;
    }
    s.messages.truncate(messages);
    // The last call's reply may be cut off by the length.
    s.calls.retain(|c| c.context_end < s.messages.len());
    s
}
