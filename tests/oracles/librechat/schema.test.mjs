// Every export of the librechat plugin is valid for LibreChat's own loader: librechat.yaml read
// with js-yaml, then `configSchema.strict().safeParse` (librechat-data-provider, pinned), as
// LibreChat's loadCustomConfig does; and the values arrive as they were tuned.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { CTXLAB } from './oracle.mjs';

const require = createRequire(import.meta.url);
const yaml = require('js-yaml');
const { configSchema } = require('librechat-data-provider');

const SETS = [
  {},
  { enabled: false },
  { enabled: false, reserveRatio: 0.1, 'contextPruning.enabled': true, 'contextPruning.keepLastAssistants': 5 },
  { 'trigger.type': 'token_ratio', 'trigger.value': 0.8, maxSummaryTokens: 1500 },
  { 'trigger.type': 'remaining_tokens', 'trigger.value': 5000 },
  { 'trigger.type': 'messages_to_refine', 'trigger.value': 12, reserveRatio: 0 },
  { reserveRatio: 1, 'contextPruning.softTrimRatio': 0.25, 'contextPruning.hardClearRatio': 0.75 },
  { provider: 'openAI', model: 'gpt-4o-mini', prompt: 'Summarize.', updatePrompt: 'Update the summary.' },
  { 'contextPruning.minPrunableToolChars': 0, 'contextPruning.keepLastAssistants': 0 },
];

function exportYaml(params, format, viaFile) {
  const args = ['export', '-s', 'librechat.agents', '--format', format];
  if (viaFile) {
    // The same parameters from a --params TOML file with dotted keys.
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ctxlab-lc-')), 'p.toml');
    fs.writeFileSync(
      file,
      Object.entries(params)
        .map(([k, v]) => `${k} = ${JSON.stringify(v)}`)
        .join('\n') + '\n',
    );
    args.push('--params', file);
  } else {
    for (const [k, v] of Object.entries(params)) args.push('--param', `${k}=${JSON.stringify(v)}`);
  }
  return execFileSync(CTXLAB, args).toString();
}

test('every export passes librechat-data-provider configSchema.strict()', () => {
  assert.ok(fs.existsSync(CTXLAB), `${CTXLAB} is missing: run cargo build --workspace first`);
  let checked = 0;
  for (const params of SETS) {
    for (const format of ['librechat-yaml', 'librechat-yaml-full']) {
      for (const viaFile of [false, true]) {
        const text = exportYaml(params, format, viaFile);
        const doc = { version: '1.3.4', ...yaml.load(text) };
        const r = configSchema.strict().safeParse(doc);
        assert.ok(r.success, `${format} ${JSON.stringify(params)}:\n${text}\n${JSON.stringify(r.error?.issues)}`);
        const s = r.data.summarization ?? {};
        for (const [k, v] of Object.entries(params)) {
          const got = k.split('.').reduce((o, p) => (o == null ? o : o[p]), s);
          // reserveRatio 1 and 0 are LibreChat's own "no reserve"; the default-valued keys are
          // only written by the full format.
          if (got !== undefined || format.endsWith('full')) assert.deepEqual(got, v, `${k} in ${format}:\n${text}`);
        }
        checked++;
      }
    }
  }
  assert.equal(checked, SETS.length * 4);
});
