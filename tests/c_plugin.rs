//! The ABI is language-neutral: a strategy written in C against `ctxlab_plugin.h` is compiled
//! with `cc`, discovered, loaded and asked for decisions like any Rust plugin; and every struct of
//! the header has the size and field offsets of its Rust twin in `ctxlab_plugin_api::abi`.

use ctxlab::plugin_host::{Origin, Registry, SearchDir};
use ctxlab::Error;
use ctxlab_plugin_api::abi::*;
use ctxlab_plugin_api::sdk::{EventKind, OpKind, Scope};
use ctxlab_plugin_api::testing::{TestCall, TestMsg};
use serde_json::json;
use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn include_dir() -> PathBuf {
    Path::new(ROOT).join("plugins/api/include")
}

/// Runs `cc` with these arguments; a missing compiler or a compile error fails the test.
fn cc(args: &[&std::ffi::OsStr]) {
    let out = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(include_dir())
        .args(args)
        .output()
        .expect("a C compiler `cc` is needed (scripts/setup.sh installs gcc)");
    assert!(
        out.status.success(),
        "cc {:?} failed:\n{}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles plugins/example-c into `dir` under a name discovery picks up.
fn build_c_plugin(dir: &Path) -> PathBuf {
    let lib = dir.join(format!(
        "{}ctxlab_plugin_c_example{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let src = Path::new(ROOT).join("plugins/example-c/truncate_long.c");
    cc(&[
        "-shared".as_ref(),
        "-fPIC".as_ref(),
        "-o".as_ref(),
        lib.as_os_str(),
        src.as_os_str(),
    ]);
    lib
}

#[test]
fn a_c_plugin_is_discovered_loaded_and_decides() {
    let dir = tempfile::tempdir().unwrap();
    let lib = build_c_plugin(dir.path());
    let reg = Registry::discover_in(&[SearchDir {
        path: dir.path().to_path_buf(),
        origin: Origin::EnvVar,
    }]);
    assert!(reg.refused().is_empty(), "{:?}", reg.refused());
    let s = reg
        .find("c-example.truncate-long")
        .expect("C strategy listed");
    assert_eq!(s.meta.path, lib);
    assert_eq!(
        (s.meta.plugin.as_str(), s.meta.plugin_version.as_str()),
        ("c-example", "0.1.0")
    );
    assert_eq!(s.meta.system, "example");
    assert_eq!(s.meta.export_formats, vec!["c-example-ini"]);
    let p = &s.meta.params[0];
    assert_eq!(
        (p.name.as_str(), &p.default, p.min),
        ("max_chars", &json!(2000), Some(100.0))
    );

    // Parameter errors come back through the host's error buffer.
    let e = s.create(&json!({ "max_chars": 5 })).err().expect("refused");
    assert!(
        matches!(&e, Error::Plugin { plugin, .. } if plugin.contains("c-example")),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("max_chars: 5 is below the minimum 100"),
        "{e}"
    );
    let e = s.create(&json!({ "max": 500 })).err().expect("refused");
    assert!(e.to_string().contains("unknown parameter max"), "{e}");

    let mut inst = s.create(&json!({ "max_chars": 200 })).unwrap();
    let long = "x".repeat(1000);
    let mut msgs = vec![
        TestMsg::system(&long).pinned(),
        TestMsg::user("short question"),
        TestMsg::tool_call("a", "read", "{}"),
        TestMsg::tool_result("a", "read", &long),
        TestMsg::assistant(&"y".repeat(300)),
        TestMsg::user("thanks"),
    ];
    let d = TestCall::new(msgs.clone())
        .with_view(|v| inst.decide(v))
        .unwrap();
    assert!(d.malformed.is_empty(), "{:?}", d.malformed);
    // The pinned system prompt is left alone; the two adjacent long messages share one op.
    assert_eq!(d.ops.len(), 1, "{:?}", d.ops);
    let op = &d.ops[0];
    assert_eq!((op.start, op.end, op.scope), (3, 5, Scope::Persistent));
    assert_eq!(
        op.kind,
        OpKind::Truncate {
            head: 100,
            tail: 100,
            marker: "\n[... truncated ...]\n".into()
        }
    );
    assert_eq!(d.events.len(), 1);
    assert_eq!(d.events[0].kind, EventKind::Truncation);
    assert_eq!(d.events[0].code, "truncate_long");
    assert_eq!(
        d.events[0].message,
        "truncated 2 messages longer than 200 characters"
    );

    // Next call: only the new message is looked at (the old long ones would match again).
    msgs.push(TestMsg::tool_result("a", "read", &long));
    let mut next = TestCall::new(msgs);
    next.new_messages = 1;
    let d = next.with_view(|v| inst.decide(v)).unwrap();
    assert_eq!(
        d.ops.iter().map(|o| (o.start, o.end)).collect::<Vec<_>>(),
        vec![(6, 7)]
    );

    let text = inst.export("c-example-ini").unwrap();
    assert_eq!(text, "[truncate_long]\nmax_chars = 200\n");
    assert_eq!(
        s.import("c-example-ini", &text).unwrap(),
        json!({ "max_chars": 200 })
    );
    assert!(inst.export("yaml").is_err());
    assert!(inst.thresholds().is_empty());
}

/// One line of the layout check: a name, the C expression that measures it, the Rust value.
struct Probe {
    name: String,
    c: String,
    rust: usize,
}

macro_rules! layout {
    ($probes:ident, $rust:ty => $c:literal { $($rf:ident => $cf:ident),* $(,)? }) => {
        $probes.push(Probe {
            name: format!("sizeof {}", stringify!($rust)),
            c: format!("sizeof({})", $c),
            rust: size_of::<$rust>(),
        });
        $probes.push(Probe {
            name: format!("alignof {}", stringify!($rust)),
            c: format!("_Alignof({})", $c),
            rust: std::mem::align_of::<$rust>(),
        });
        $(
            $probes.push(Probe {
                name: format!("{}.{}", stringify!($rust), stringify!($rf)),
                c: format!("offsetof({}, {})", $c, stringify!($cf)),
                rust: offset_of!($rust, $rf),
            });
        )*
    };
}

macro_rules! constant {
    ($probes:ident, $($rust:ident => $c:ident),* $(,)?) => {
        $(
            $probes.push(Probe {
                name: stringify!($rust).to_string(),
                c: format!("(size_t)({})", stringify!($c)),
                rust: $rust as usize,
            });
        )*
    };
}

#[test]
fn the_header_matches_the_rust_abi_field_by_field() {
    let mut p: Vec<Probe> = Vec::new();
    layout!(p, StrRef => "ctxlab_str" { ptr => ptr, len => len });
    layout!(p, HostWriter => "ctxlab_writer" { ctx => ctx, write => write });
    layout!(p, ToolView => "ctxlab_tool" {
        id => id, name => name, body => body, is_result => is_result, is_error => is_error,
    });
    layout!(p, MessageView => "ctxlab_message" {
        id => id, role => role, flags => flags, agent => agent, tokens => tokens, chars => chars,
        text => text, tools => tools, tools_len => tools_len, images => images,
        content_ascii => content_ascii, image_bytes => image_bytes, request => request,
        content_other => content_other, timestamp_ms => timestamp_ms,
    });
    layout!(p, BudgetView => "ctxlab_budget" {
        context_window => context_window, max_output => max_output, reserve => reserve,
    });
    layout!(p, CallView => "ctxlab_call" {
        agent => agent, call_index => call_index, agent_call_index => agent_call_index,
        timestamp_ms => timestamp_ms, budget => budget, overhead_tokens => overhead_tokens,
        context_tokens => context_tokens, prev_input_tokens => prev_input_tokens,
        prev_recorded_input_tokens => prev_recorded_input_tokens,
        prev_raw_tokens => prev_raw_tokens, cumulative_input_tokens => cumulative_input_tokens,
        new_messages => new_messages, new_request => new_request,
        assistant_turns => assistant_turns, messages => messages, messages_len => messages_len,
        message_parts => message_parts,
    });
    layout!(p, PartView => "ctxlab_part" { kind => kind, reserved => reserved, bytes => bytes });
    layout!(p, PartList => "ctxlab_part_list" { parts => parts, len => len });
    layout!(p, EditOp => "ctxlab_op" {
        kind => kind, scope => scope, start => start, end => end, head_chars => head_chars,
        tail_chars => tail_chars, summary_max_tokens => summary_max_tokens,
        summarizer_input_tokens => summarizer_input_tokens, role => role, text => text,
    });
    layout!(p, EventView => "ctxlab_event" {
        kind => kind, code => code, message => message, tokens_before => tokens_before,
        tokens_after => tokens_after,
    });
    layout!(p, ThresholdView => "ctxlab_threshold" {
        kind => kind, line => line, tokens => tokens, label => label,
    });
    layout!(p, Sink => "ctxlab_sink" {
        ctx => ctx, push_op => push_op, push_event => push_event, push_gauge => push_gauge,
        push_threshold => push_threshold, count_text => count_text, count_cut => count_cut,
    });
    layout!(p, StrategyDesc => "ctxlab_strategy_desc" {
        id => id, title => title, system => system, description => description,
        params_schema => params_schema, export_formats => export_formats,
    });
    layout!(p, PluginTable => "ctxlab_plugin_table" {
        abi_major => abi_major, abi_minor => abi_minor, size => size, name => name,
        version => version, strategies => strategies, strategies_len => strategies_len,
        create => create, decide => decide, thresholds => thresholds,
        export => export_params, import => import_params, destroy => destroy,
    });
    constant!(p,
        ABI_MAJOR => CTXLAB_ABI_MAJOR, ABI_MINOR => CTXLAB_ABI_MINOR,
        ROLE_SYSTEM => CTXLAB_ROLE_SYSTEM, ROLE_USER => CTXLAB_ROLE_USER,
        ROLE_ASSISTANT => CTXLAB_ROLE_ASSISTANT, ROLE_TOOL => CTXLAB_ROLE_TOOL,
        FLAG_PINNED => CTXLAB_FLAG_PINNED, FLAG_SUMMARY => CTXLAB_FLAG_SUMMARY,
        FLAG_INJECTED => CTXLAB_FLAG_INJECTED, FLAG_TOOL_CALL => CTXLAB_FLAG_TOOL_CALL,
        FLAG_TOOL_RESULT => CTXLAB_FLAG_TOOL_RESULT, FLAG_ERROR => CTXLAB_FLAG_ERROR,
        FLAG_EDITED => CTXLAB_FLAG_EDITED, FLAG_IMAGE => CTXLAB_FLAG_IMAGE,
        FLAG_REQUEST => CTXLAB_FLAG_REQUEST, FLAG_CONTENT => CTXLAB_FLAG_CONTENT,
        FLAG_PARTS => CTXLAB_FLAG_PARTS, FLAG_CUT => CTXLAB_FLAG_CUT, PART_TEXT => CTXLAB_PART_TEXT,
        PART_THINKING => CTXLAB_PART_THINKING, PART_TOOL_CALL => CTXLAB_PART_TOOL_CALL,
        PART_TOOL_RESULT => CTXLAB_PART_TOOL_RESULT,
        OP_DROP => CTXLAB_OP_DROP, OP_SUMMARIZE => CTXLAB_OP_SUMMARIZE,
        OP_TRUNCATE => CTXLAB_OP_TRUNCATE, OP_MASK => CTXLAB_OP_MASK,
        OP_OFFLOAD => CTXLAB_OP_OFFLOAD, OP_PIN => CTXLAB_OP_PIN, OP_UNPIN => CTXLAB_OP_UNPIN,
        OP_ALLOW_SPLIT => CTXLAB_OP_ALLOW_SPLIT, OP_DROP_RESULTS => CTXLAB_OP_DROP_RESULTS,
        OP_REPEAT => CTXLAB_OP_REPEAT, OP_CUT => CTXLAB_OP_CUT,
        SCOPE_PERSISTENT => CTXLAB_SCOPE_PERSISTENT, SCOPE_THIS_CALL => CTXLAB_SCOPE_THIS_CALL,
        EVENT_NOTE => CTXLAB_EVENT_NOTE, EVENT_WARN => CTXLAB_EVENT_WARN,
        EVENT_CUTOVER => CTXLAB_EVENT_CUTOVER, EVENT_FAILURE => CTXLAB_EVENT_FAILURE,
        EVENT_SUPPRESSED => CTXLAB_EVENT_SUPPRESSED, EVENT_COMPACTION => CTXLAB_EVENT_COMPACTION,
        EVENT_TRUNCATION => CTXLAB_EVENT_TRUNCATION, EVENT_STOP => CTXLAB_EVENT_STOP,
        THRESHOLD_WARN => CTXLAB_THRESHOLD_WARN, THRESHOLD_CUTOVER => CTXLAB_THRESHOLD_CUTOVER,
        THRESHOLD_TRIGGER => CTXLAB_THRESHOLD_TRIGGER, LINE_OCCUPANCY => CTXLAB_LINE_OCCUPANCY,
        LINE_CUMULATIVE_SINCE_COMPACTION => CTXLAB_LINE_CUMULATIVE_SINCE_COMPACTION,
        LINE_CUMULATIVE => CTXLAB_LINE_CUMULATIVE,
        STATUS_OK => CTXLAB_STATUS_OK, STATUS_ERROR => CTXLAB_STATUS_ERROR,
        STATUS_PANIC => CTXLAB_STATUS_PANIC,
    );

    let mut src = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include \"ctxlab_plugin.h\"\nint main(void) {\n",
    );
    for probe in &p {
        src.push_str(&format!("    printf(\"%zu\\n\", (size_t)({}));\n", probe.c));
    }
    src.push_str("    printf(\"%s\\n\", CTXLAB_ENTRY_SYMBOL);\n    return 0;\n}\n");
    let dir = tempfile::tempdir().unwrap();
    let (c, exe) = (dir.path().join("layout.c"), dir.path().join("layout"));
    std::fs::write(&c, src).unwrap();
    cc(&["-o".as_ref(), exe.as_os_str(), c.as_os_str()]);
    let out = Command::new(&exe).output().expect("run the layout probe");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), p.len() + 1);
    let mismatches: Vec<String> = p
        .iter()
        .zip(&lines)
        .filter(|(probe, line)| line.parse::<usize>().ok() != Some(probe.rust))
        .map(|(probe, line)| {
            format!(
                "{}: C {} = {line}, Rust {}",
                probe.name, probe.c, probe.rust
            )
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "header and abi.rs disagree:\n{}",
        mismatches.join("\n")
    );
    assert_eq!(lines[p.len()], ENTRY_SYMBOL);
}
