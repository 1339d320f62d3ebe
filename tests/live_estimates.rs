//! Token estimates of a followed log (`tokens::LiveCounts`): a log written into a temporary file
//! in pieces (some ending mid-line), polled after each piece, must end with the per-call counts,
//! calibration and estimates that counting the finished file gives (`replay::recorded_raw_tokens`
//! and `calibrate`), while each poll tokenizes only the messages it brought (or changed).

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use ctxlab::formats::{self, Follower};
use ctxlab::tokens::{self, calibrate, LiveCounts, TokenCounter};

mod real_logs;
use real_logs::real;

fn sample(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Writes `src` into a new file in about `pieces` pieces, following it; returns the counts kept
/// along the way and the finished file's path.
fn follow_in_pieces(
    src: &Path,
    pieces: usize,
    counter: &dyn TokenCounter,
    dir: &Path,
) -> (LiveCounts, PathBuf, Follower) {
    let data = fs::read(src).expect("read the log");
    let path = dir.join(src.file_name().expect("a file name"));
    // The first piece ends mid-line, a few lines in: the follower opens a log being written.
    let step = (data.len() / pieces).max(1);
    let first = (step / 2).max(1).min(data.len());
    fs::write(&path, &data[..first]).expect("write the first piece");
    let mut follower = Follower::open(&path).expect("follow the log");
    let mut live = LiveCounts::new(follower.session(), counter);
    let mut at = first;
    while at < data.len() {
        // Odd sizes, so pieces end inside lines as well as between them.
        let end = (at + step + (at % 7919)).min(data.len());
        OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open for appending")
            .write_all(&data[at..end])
            .expect("append a piece");
        at = end;
        if let Some(u) = follower.poll().expect("poll") {
            let before = live.messages();
            if u.reloaded.is_some() {
                live = LiveCounts::new(follower.session(), counter);
            } else {
                live.update(follower.session(), counter, &u.changed_messages);
                let new = follower.session().messages.len() - before;
                assert_eq!(
                    live.counted_last(),
                    new + u.changed_messages.len(),
                    "a poll tokenizes only the messages it brought or changed"
                );
            }
            assert_eq!(live.raw().len(), follower.session().calls.len());
        }
    }
    (live, path, follower)
}

fn check(src: &Path, pieces: usize) {
    let counter = tokens::counter("heuristic").expect("heuristic counter");
    let dir = tempfile::tempdir().expect("temp dir");
    let (live, path, follower) = follow_in_pieces(src, pieces, counter.as_ref(), dir.path());

    let finished = formats::load_file(&path).expect("load the finished file");
    assert_eq!(follower.session().calls.len(), finished.calls.len());
    assert!(!finished.calls.is_empty(), "{} has calls", src.display());
    let raw = ctxlab::replay::recorded_raw_tokens(&finished, counter.as_ref());
    assert!(
        raw.iter().any(|r| r.is_some_and(|t| t > 0)),
        "contexts counted"
    );
    assert_eq!(
        live.raw(),
        &raw[..],
        "per-call contexts of {}",
        src.display()
    );
    // Calibration fits the counted part of each context; the known part is added as recorded.
    let contexts = ctxlab::replay::recorded_contexts(&finished, counter.as_ref());
    assert_eq!(live.contexts(), &contexts[..], "per-call contexts, split");
    let cal = calibrate(&tokens::calibrate::samples(&finished, &contexts));
    assert_eq!(live.calibration(), cal.as_ref(), "calibration");
    let expected: Vec<Option<u64>> = contexts
        .iter()
        .zip(&finished.calls)
        .map(|(r, c)| {
            r.map(|t| {
                cal.as_ref()
                    .map_or(t.total(), |k| k.predict_context(c.agent, t))
            })
        })
        .collect();
    assert_eq!(live.estimates(follower.session()), expected, "estimates");
}

#[test]
fn a_claude_code_log_with_compactions_followed_in_pieces_ends_with_the_finished_files_estimates() {
    check(
        &real("claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl"),
        23,
    );
}

#[test]
fn a_codex_log_followed_in_pieces_ends_with_the_finished_files_estimates() {
    check(
        &sample(
            "samples/codex/rollout-2026-03-14T09-12-44-019c1754-a43c-7709-85e2-fa8bb43a4f52.jsonl",
        ),
        17,
    );
}

#[test]
fn a_log_opened_whole_counts_as_the_engine_does() {
    let counter = tokens::counter("heuristic").expect("heuristic counter");
    let p = real("claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl");
    let s = formats::load_file(&p).expect("load");
    let live = LiveCounts::new(&s, counter.as_ref());
    assert_eq!(
        live.raw(),
        &ctxlab::replay::recorded_raw_tokens(&s, counter.as_ref())[..]
    );
    assert_eq!(live.counted_last(), s.messages.len());
}
