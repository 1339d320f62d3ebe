// The Session chart's lines (#21 point 1): one line per agent over the session's calls (null at
// other agents' calls, so a line never zigzags between agents), subagents in a shade of their
// parent's colour, the calibrated estimate as a thin dotted line of the same colour, and the
// log's compactions on their agent.

import type { AgentLike } from "./colors";
import { agentDash, agentFamilies } from "./colors";

export interface AgentSeries {
  agent: number;
  name: string;
  color: string;
  depth: number;
  dash: number[] | undefined;
  /** The provider's count of each call's context (null at other agents' calls). */
  recorded: (number | null)[];
  /** The calibrated estimate of the same. */
  estimate: (number | null)[];
  calls: number;
}

export interface AgentInput extends AgentLike {
  name: string;
}

export function agentSeries(agents: readonly AgentInput[], callAgent: readonly number[], recorded: readonly (number | null)[], estimate: readonly (number | null)[]): AgentSeries[] {
  const fam = agentFamilies(agents);
  const n = callAgent.length;
  const out = new Map<number, AgentSeries>();
  // Rank within the family sets the line style: the top agent solid, subagents dashed.
  agents.forEach((a) => {
    const f = fam.get(a.index) ?? { color: "#888", family: 0, depth: 0 };
    out.set(a.index, { agent: a.index, name: a.name, color: f.color, depth: f.depth, dash: f.depth === 0 ? undefined : agentDash(f.depth), recorded: new Array(n).fill(null), estimate: new Array(n).fill(null), calls: 0 });
  });
  for (let i = 0; i < n; i++) {
    const s = out.get(callAgent[i]);
    if (!s) continue;
    s.recorded[i] = recorded[i] ?? null;
    s.estimate[i] = estimate[i] ?? null;
    s.calls++;
  }
  return [...out.values()].filter((s) => s.calls > 0);
}
