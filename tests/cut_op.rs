//! ABI 1.8's `Cut` op through the real replay engine: a strategy that works out its own cut
//! points (LibreChat snaps them to newlines and measures in UTF-16 units) sends the bytes it
//! keeps of a message's head and tail and the marker between them, and the host makes the text.
//! The call is measured exactly as if the strategy had sent that text as a `Mask`; a cut that
//! does not fall on character boundaries, or keeps more than the text, is refused.

mod in_process_support;

use ctxlab::model::Session;
use ctxlab::replay;
use ctxlab_plugin_api::*;
use in_process_support::{replay_in_process, tool_rounds, OpsPerCall};
use serde_json::json;

/// Reports, for each cut it is to send, the host's count of it (`Call::count_cut`) and of its
/// text made whole (`Call::count_text`) as gauges.
fn gauge_cuts(call: &Call<'_>, ops: &[Op], out: &mut Decision) -> Result<(), String> {
    for op in ops {
        if let OpKind::Cut { head, tail, marker } = &op.kind {
            let i = op.start;
            let text = call.msg(i).text();
            // A cut the host refuses is sent as it is, without gauges.
            let pieces = (*head as usize)
                .checked_add(*tail as usize)
                .filter(|&ht| ht <= text.len())
                .and_then(|_| {
                    Some((
                        text.get(..*head as usize)?,
                        text.get(text.len() - *tail as usize..)?,
                    ))
                });
            let Some((h, t)) = pieces else {
                assert_eq!(call.count_cut(i, *head, marker, *tail), None);
                continue;
            };
            let whole = format!("{h}{marker}{t}");
            let by_cut = call
                .count_cut(i, *head, marker, *tail)
                .ok_or("no count_cut")?;
            let by_text = call.count_text(&whole).ok_or("no count_text")?;
            out.gauge(&format!("cut {i}"), by_cut as f64);
            out.gauge(&format!("text {i}"), by_text as f64);
        }
    }
    Ok(())
}

static SCRIPTED: OpsPerCall = OpsPerCall {
    id: "test.cut",
    hook: Some(gauge_cuts),
};

export_plugin!(name: "cut", version: "0", strategies: [&SCRIPTED]);

/// The content of round k's tool result: multi-byte text in lines.
fn result(k: usize) -> String {
    format!("résultat {k} → ligne\n").repeat(40)
}

/// A user request, then three rounds of (call, long result, answer, next request); a model
/// call before each answer. Round k's result is at 2 + 4k, its call sees messages up to 3 + 4k.
fn session() -> Session {
    tool_rounds("cut", 3, result)
}

fn op(kind: OpKind, scope: Scope, at: usize) -> Op {
    Op {
        kind,
        scope,
        start: at,
        end: at + 1,
    }
}

fn cut(head: u64, tail: u64, marker: &str, scope: Scope, at: usize) -> Op {
    let marker = marker.to_string();
    op(OpKind::Cut { head, tail, marker }, scope, at)
}

/// The text a cut of `original` makes: what the strategy would send whole as a `Mask`.
fn mask_of(original: &str, head: usize, tail: usize, marker: &str, scope: Scope, at: usize) -> Op {
    let placeholder = format!(
        "{}{marker}{}",
        &original[..head],
        &original[original.len() - tail..]
    );
    op(OpKind::Mask { placeholder }, scope, at)
}

fn replay(calls: &[Vec<Op>]) -> ctxlab::Result<replay::Run> {
    let params = json!({ "ops": serde_json::to_string(calls).unwrap() });
    replay_in_process(plugin_table(), "cut", "test.cut", params, &session(), true)
}

/// What a run measured and decided, call by call (not its strategy's parameters).
fn outcome(run: &replay::Run) -> String {
    serde_json::to_string(&(&run.samples, &run.decisions, &run.metrics)).unwrap()
}

#[test]
fn a_cut_measures_as_the_mask_of_its_text() {
    let original = result(0);
    let marker = "\n… [truncated: 1000 chars exceeded 60 limit] …\n";
    // A head of two lines and a tail of one ("é" and "→" are two and three bytes).
    let line = "résultat 0 → ligne\n".len();
    let (h, t) = (2 * line, line);
    for scope in [Scope::ThisCall, Scope::Persistent] {
        let c = cut(h as u64, t as u64, marker, scope, 2);
        let m = mask_of(&original, h, t, marker, scope, 2);
        let by_cut = replay(&[vec![c.clone()], vec![], vec![]]).unwrap();
        let by_mask = replay(&[vec![m.clone()], vec![], vec![]]).unwrap();
        assert_eq!(outcome(&by_cut), outcome(&by_mask), "{scope:?}");
        // The cut really shortens the call it is made at.
        let none = replay(&[]).unwrap();
        assert!(by_cut.samples[0].input_tokens < none.samples[0].input_tokens);
    }
    // Cuts of two messages at one call, and a repeat of them at the next (ABI 1.7), as the
    // same masks sent again.
    let r1 = result(1);
    let cuts = vec![
        cut(h as u64, t as u64, marker, Scope::ThisCall, 2),
        cut(0, 7, "[cut]", Scope::ThisCall, 6),
    ];
    let masks = vec![
        mask_of(&original, h, t, marker, Scope::ThisCall, 2),
        mask_of(&r1, 0, 7, "[cut]", Scope::ThisCall, 6),
    ];
    let repeat = op(OpKind::Repeat, Scope::ThisCall, 0);
    let repeat = Op { end: 11, ..repeat };
    let by_cut = replay(&[vec![], cuts.clone(), vec![repeat]]).unwrap();
    let by_mask = replay(&[vec![], masks.clone(), masks]).unwrap();
    assert_eq!(outcome(&by_cut), outcome(&by_mask));
    // Keeping the whole text around an empty marker changes nothing.
    let whole = cut(original.len() as u64, 0, "", Scope::ThisCall, 2);
    let none = replay(&[]).unwrap();
    let kept = replay(&[vec![whole]]).unwrap();
    assert_eq!(kept.samples[0].input_tokens, none.samples[0].input_tokens);
}

/// ABI 1.8's `Sink::count_cut`: the host counts a cut of a message as the text it makes
/// (every counter: the heuristic and chars4 add up the pieces, the others count the text).
#[test]
fn the_host_counts_a_cut_as_its_text() {
    let line = "résultat 0 → ligne\n".len() as u64;
    let calls = vec![
        vec![cut(2 * line, line, "\n… [x] …\n", Scope::ThisCall, 2)],
        vec![cut(1, 5, "[中文]", Scope::ThisCall, 6)],
        vec![cut(0, 0, "", Scope::ThisCall, 10)],
    ];
    for counter in ["heuristic", "chars4", "o200k"] {
        let params = json!({ "ops": serde_json::to_string(&calls).unwrap() });
        let run = in_process_support::replay_in_process_counted(
            plugin_table(),
            "cut",
            "test.cut",
            params,
            &session(),
            false,
            counter,
        )
        .unwrap();
        for i in [2, 6, 10] {
            let by_cut = &run.gauges[&format!("cut {i}")];
            let by_text = &run.gauges[&format!("text {i}")];
            assert_eq!(by_cut.len(), 1, "{counter}");
            assert_eq!(by_cut[0].value, by_text[0].value, "{counter} at {i}");
        }
        // The empty cut counts nothing.
        assert_eq!(run.gauges["cut 10"][0].value, 0.0, "{counter}");
    }
}

#[test]
fn a_cut_off_character_boundaries_or_past_the_text_is_refused() {
    let original = result(0);
    let n = original.len() as u64;
    // Byte 2 is inside "é" (bytes 1..3); so is the tail's first byte at n - 18.
    let inside_e = original.find('é').unwrap() as u64 + 1;
    let tail_inside = n - (original.rfind('é').unwrap() as u64 + 1);
    for (head, tail) in [(inside_e, 0), (0, tail_inside), (n, 1), (u64::MAX, 1)] {
        let err = replay(&[vec![cut(head, tail, "[cut]", Scope::ThisCall, 2)]])
            .expect_err("refused")
            .to_string();
        assert!(err.contains("op 0 (cut 2..3)"), "{err}");
        assert!(
            err.contains(&format!("whose text is {n} bytes"))
                && err.contains("on character boundaries"),
            "{err}"
        );
    }
}
