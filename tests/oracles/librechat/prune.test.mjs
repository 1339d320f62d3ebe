// Differential test: the librechat plugin against @librechat/agents 3.1.63 itself
// (createPruneMessages in src/messages/prune.ts, shouldTriggerSummarization in
// src/summarization/index.ts), on every real log in ../shared/real-logs that loads and every
// sample, at several windows and parameter sets, with the same token counts (ctxlab's
// heuristic counter on both sides). Needs `cargo build --workspace` first (the CLI and the
// plugin) and ../shared beside the checkout.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, CTXLAB, replay, compare, files } from './oracle.mjs';

const REAL = path.resolve(ROOT, '../shared/real-logs');
const WINDOWS = [8000, 32000, 128000];
const PARAMS = [
  {},
  { enabled: false },
  {
    enabled: false,
    'contextPruning.enabled': true,
    'contextPruning.minPrunableToolChars': 2000,
    'contextPruning.keepLastAssistants': 1,
  },
  { 'trigger.type': 'token_ratio', 'trigger.value': 0.85 },
  { 'trigger.type': 'remaining_tokens', 'trigger.value': 4000, reserveRatio: 0.2 },
  { 'trigger.type': 'messages_to_refine', 'trigger.value': 5 },
];

test('the plugin prunes as @librechat/agents 3.1.63 does', () => {
  assert.ok(fs.existsSync(CTXLAB), `${CTXLAB} is missing: run cargo build --workspace first`);
  assert.ok(fs.existsSync(REAL), `${REAL} is missing: the real logs live in ../shared beside the checkout`);
  const logs = [...files(REAL), ...files(path.join(ROOT, 'samples'))].filter(
    (f) => !/\.(md|json)$/.test(f) || /traj\.json$|conversation_history\.json$|ui_messages\.json$|session\.json$/.test(f),
  );
  const t = { runs: 0, calls: 0, kept: 0, edited: 0, lengths: 0, fired: 0, firedBoth: 0, firedEither: 0, pruned: 0, edits: 0 };
  const loaded = [];
  const misses = [];
  for (const log of logs) {
    let ok = false;
    for (const window of WINDOWS) {
      for (const params of PARAMS) {
        const runs = replay(log, window, params);
        if (runs.error) break;
        ok = true;
        for (const run of runs) {
          t.runs++;
          for (const d of run.decisions) {
            if (d.context.some((m) => m.state === 'dropped')) t.pruned++;
            if (d.context.some((m) => m.state === 'edited')) t.edits++;
          }
          for (const c of compare(run, params)) {
            t.calls++;
            t.kept += c.kept;
            t.edited += c.edited;
            t.lengths += c.lengths;
            t.fired += c.fired === c.pluginFired;
            t.firedBoth += c.fired && c.pluginFired;
            t.firedEither += c.fired || c.pluginFired;
            if (!(c.kept && c.edited && c.lengths && c.fired === c.pluginFired)) {
              misses.push({
                key: `${path.relative(ROOT, log)} window ${window} ${JSON.stringify(params)} call ${c.call}`,
                why: `summary LibreChat ${c.fired} ctxlab ${c.pluginFired}; ${c.detail}`,
              });
            }
          }
        }
      }
      if (!ok) break;
    }
    if (ok) loaded.push(path.relative(ROOT, log));
  }
  const pct = (x) => ((100 * x) / t.calls).toFixed(2);
  console.log(`logs replayed: ${loaded.length} (${loaded.join(', ')})`);
  console.log(
    `${t.runs} runs, ${t.calls} calls (${t.pruned} with pruning, ${t.edits} with edits): kept set identical ${pct(t.kept)} %, ` +
      `edited set ${pct(t.edited)} %, edited lengths within 1 % ${pct(t.lengths)} %, ` +
      `summarization on the same calls ${pct(t.fired)} % (${t.firedBoth} fired in both, ${t.firedEither} in either)`,
  );
  for (const m of misses.slice(0, 20)) console.log('  differs:', `${m.key}: ${m.why}`);
  assert.ok(loaded.length >= 10, `only ${loaded.length} logs replayed`);
  assert.ok(t.pruned > 100 && t.edits > 100, 'the matrix must exercise pruning and edits');
  // Issue #17 asks for 99 % on each; every call now agrees (docs/strategies/librechat.md, "Last
  // differential run", names the causes found). The calls that may differ are named here, with
  // why; none is left, so any difference fails, and so would a named one that went away.
  const KNOWN = new Map([]);
  const found = new Set(misses.map((m) => m.key));
  const unexpected = misses.filter((m) => !KNOWN.has(m.key)).map((m) => `${m.key}: ${m.why}`);
  const gone = [...KNOWN.keys()].filter((k) => !found.has(k));
  assert.ok(
    unexpected.length === 0,
    `${unexpected.length} calls differ that are not named as known (first 20):\n${unexpected.slice(0, 20).join('\n')}`,
  );
  assert.deepEqual(gone, [], 'known differences that no longer occur: remove them from KNOWN and the docs');
});
