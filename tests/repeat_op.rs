//! ABI 1.7's `Repeat` op through the real replay engine: a strategy that sends the same view
//! edits call after call (LibreChat masks every consumed tool result it keeps, at every call)
//! sends the changed ones and a `Repeat` over the rest, and the call is measured exactly as if
//! it had sent every edit again. What the host repeats is the agent's previous decision's
//! this-call content edits, message by message; anything else in the range is sent as it is.

mod in_process_support;

use ctxlab::model::Session;
use ctxlab::replay;
use ctxlab_plugin_api::*;
use in_process_support::{replay_in_process, tool_rounds, OpsPerCall};
use serde_json::json;

static SCRIPTED: OpsPerCall = OpsPerCall {
    id: "test.repeat",
    hook: None,
};

export_plugin!(name: "repeat", version: "0", strategies: [&SCRIPTED]);

/// A user request, then three rounds of (call, long result, answer, next request); a model
/// call before each answer: with 3, 7 and 11 messages.
fn session() -> Session {
    session_of(3)
}

/// [`session`] with `rounds` rounds: the result of round k is at 2 + 4k, its call sees
/// messages up to 3 + 4k.
fn session_of(rounds: usize) -> Session {
    tool_rounds("repeat", rounds, |k| format!("result {k} ").repeat(40))
}

fn op(kind: OpKind, scope: Scope, start: usize, end: usize) -> Op {
    Op {
        kind,
        scope,
        start,
        end,
    }
}

fn mask(t: &str, start: usize) -> Op {
    op(
        OpKind::Mask {
            placeholder: t.into(),
        },
        Scope::ThisCall,
        start,
        start + 1,
    )
}

fn repeat(start: usize, end: usize) -> Op {
    op(OpKind::Repeat, Scope::ThisCall, start, end)
}

fn replay(calls: &[Vec<Op>]) -> ctxlab::Result<replay::Run> {
    replay_on(&session(), calls)
}

fn replay_on(session: &Session, calls: &[Vec<Op>]) -> ctxlab::Result<replay::Run> {
    let params = json!({ "ops": serde_json::to_string(calls).unwrap() });
    replay_in_process(
        plugin_table(),
        "repeat",
        "test.repeat",
        params,
        session,
        true,
    )
}

/// What a run measured and decided, call by call (not its strategy's parameters).
fn outcome(run: &replay::Run) -> String {
    serde_json::to_string(&(&run.samples, &run.decisions, &run.metrics)).unwrap()
}

#[test]
fn a_repeat_measures_as_the_edits_sent_again() {
    let (m2, m6) = (mask("[masked 2]", 2), mask("[masked 6]", 6));
    let again = replay(&[
        vec![m2.clone()],
        vec![m2.clone(), m6.clone()],
        vec![m2.clone(), m6.clone()],
    ])
    .unwrap();
    let repeated = replay(&[
        vec![m2.clone()],
        vec![repeat(0, 6), m6.clone()],
        vec![repeat(0, 11)],
    ])
    .unwrap();
    assert_eq!(outcome(&again), outcome(&repeated));
    // The edits are really there: the masked call sends fewer tokens than none.
    let none = replay(&[]).unwrap();
    assert!(repeated.samples[2].input_tokens < none.samples[2].input_tokens);
    // A changed edit between repeats: the same as the new edit sent alone.
    let x = mask("[x]", 2);
    let sent = replay(&[vec![m2.clone()], vec![x.clone()]]).unwrap();
    let mixed = replay(&[vec![m2.clone()], vec![repeat(0, 2), x, repeat(3, 7)]]).unwrap();
    assert_eq!(outcome(&sent), outcome(&mixed));
}

#[test]
fn a_repeat_repeats_only_the_previous_decision() {
    let first = vec![mask("[masked]", 2)];
    // Nothing edited at call 1: the repeat at call 2 has nothing to repeat.
    let gap = replay(&[first.clone(), vec![], vec![repeat(0, 11)]]).unwrap();
    let none_after = replay(&[first.clone(), vec![], vec![]]).unwrap();
    assert_eq!(outcome(&gap), outcome(&none_after));
    // Outside the repeat's range the previous edit is gone.
    let outside = replay(&[first.clone(), vec![repeat(3, 7)]]).unwrap();
    let dropped_edit = replay(&[first.clone(), vec![]]).unwrap();
    assert_eq!(outcome(&outside), outcome(&dropped_edit));
    // A repeated edit is itself repeated at the next call.
    let chain = replay(&[first.clone(), vec![repeat(0, 7)], vec![repeat(0, 11)]]).unwrap();
    let sent = replay(&[first.clone(), first.clone(), first.clone()]).unwrap();
    assert_eq!(outcome(&chain), outcome(&sent));
}

#[test]
fn a_persistent_edit_of_the_message_ends_its_repeat() {
    // Call 1 drops messages 0..4 for good (the masked result among them) and masks nothing; the
    // repeat at call 2 finds nothing to repeat.
    let drop = op(OpKind::Drop, Scope::Persistent, 0, 4);
    let a = replay(&[
        vec![mask("[masked]", 2)],
        vec![drop.clone()],
        vec![repeat(0, 7)],
    ])
    .unwrap();
    let b = replay(&[vec![mask("[masked]", 2)], vec![drop], vec![]]).unwrap();
    assert_eq!(outcome(&a), outcome(&b));
}

#[test]
fn a_repeat_is_a_this_call_op() {
    let persistent = op(OpKind::Repeat, Scope::Persistent, 0, 3);
    let err = replay(&[vec![mask("[masked]", 2)], vec![persistent]])
        .expect_err("a persistent repeat is refused")
        .to_string();
    assert!(err.contains("repeat is a this-call op"), "{err}");
    // Ranges still follow the rules of every op: sorted, not overlapping, in bounds.
    let err = replay(&[vec![mask("[m]", 2)], vec![repeat(0, 3), mask("[x]", 2)]])
        .expect_err("an overlap is refused")
        .to_string();
    assert!(err.contains("overlaps"), "{err}");
    let err = replay(&[vec![repeat(0, 99)]])
        .expect_err("out of bounds")
        .to_string();
    assert!(err.contains("past the context"), "{err}");
}

#[test]
fn a_repeated_edit_follows_its_message_after_a_persistent_drop_before_it() {
    // Call 1 masks the result at 6 for this call and drops messages 0..5 for good: the masked
    // result is at 1 from then on, and call 2's repeat makes its edit again there.
    let drop = op(OpKind::Drop, Scope::Persistent, 0, 5);
    let first = vec![drop, mask("[masked]", 6)];
    let a = replay(&[vec![], first.clone(), vec![repeat(0, 6)]]).unwrap();
    let b = replay(&[vec![], first.clone(), vec![mask("[masked]", 1)]]).unwrap();
    assert_eq!(outcome(&a), outcome(&b));
    // Against nothing repeated, the repeat really sends the edit.
    let c = replay(&[vec![], first, vec![]]).unwrap();
    assert!(a.samples[2].input_tokens < c.samples[2].input_tokens);
}

/// LibreChat's usual decision: the window of masked results slides by one each call, so the
/// repeat covers the last window less its first edit and one new edit follows it (the host
/// keeps the repeated stretch in place and leaves the dropped ones behind, dropping them when
/// they outnumber the rest); every seventh call one edit inside the window changes for that
/// call only, so the next call sends it again too (repeats around a sent edit, which the host
/// writes over its message's last entry). Measured call by call as the same masks sent whole
/// every time.
#[test]
fn a_sliding_window_of_repeats_measures_as_the_edits_sent_again() {
    const ROUNDS: usize = 120;
    const WINDOW: usize = 5;
    let at = |j: usize| 2 + 4 * j;
    let text = |j: usize, k: usize| {
        if k % 7 == 0 && j + 2 == k {
            format!("[changed {j} at {k}]")
        } else {
            format!("[masked {j}]")
        }
    };
    let mut sent = Vec::new();
    let mut repeated = Vec::new();
    for k in 0..ROUNDS {
        let first = (k + 1).saturating_sub(WINDOW);
        sent.push(
            (first..=k)
                .map(|j| mask(&text(j, k), at(j)))
                .collect::<Vec<_>>(),
        );
        // What differs from the last call's edits, inside the window kept from it.
        let changed: Vec<usize> = (first..k)
            .filter(|&j| k > 0 && text(j, k) != text(j, k - 1))
            .collect();
        let mut ops = Vec::new();
        let mut from = at(first);
        for &j in &changed {
            if from < at(j) {
                ops.push(repeat(from, at(j)));
            }
            ops.push(mask(&text(j, k), at(j)));
            from = at(j) + 1;
        }
        if k > 0 && from < at(k) {
            ops.push(repeat(from, at(k)));
        }
        ops.push(mask(&text(k, k), at(k)));
        repeated.push(ops);
    }
    let session = session_of(ROUNDS);
    let a = replay_on(&session, &sent).unwrap();
    let b = replay_on(&session, &repeated).unwrap();
    assert_eq!(outcome(&a), outcome(&b));
    let none = replay_on(&session, &[]).unwrap();
    assert!(b.samples[ROUNDS - 1].input_tokens < none.samples[ROUNDS - 1].input_tokens);
}
