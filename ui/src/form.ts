// Parameter forms generated from a strategy's schema (ParamView): which input each type gets,
// the text a default shows as, and parsing the user's text back to JSON with the schema's checks.

import type { ParamView } from "./bindings/ParamView";
import type { JsonValue } from "./bindings/serde_json/JsonValue";
import { fmtInt } from "./format";

export type InputKind = "number" | "checkbox" | "select" | "text";

export interface Field {
  name: string;
  input: InputKind;
  /** The default, as the input shows it. */
  initial: string | boolean;
  step?: string;
  min?: number;
  max?: number;
  choices: string[];
  /** One line under the input: the description, the range and where the value lives. */
  help: string;
  /** Placeholder for list and map inputs. */
  placeholder?: string;
}

export type Parsed = { ok: true; value: JsonValue } | { ok: false; error: string };

function fmtBound(p: ParamView, x: number): string {
  return p.kind === "int" ? fmtInt(x) : String(x);
}

export function rangeText(p: ParamView): string {
  const lo = p.min ?? null;
  const hi = p.max ?? null;
  if (lo !== null && hi !== null) return `${fmtBound(p, lo)} – ${fmtBound(p, hi)}`;
  if (lo !== null) return `≥ ${fmtBound(p, lo)}`;
  if (hi !== null) return `≤ ${fmtBound(p, hi)}`;
  return "";
}

export function defaultText(p: ParamView): string | boolean {
  const d = p.default as unknown;
  switch (p.kind) {
    case "bool":
      return d === true;
    case "string_list":
    case "int_list":
      return Array.isArray(d) ? d.join(", ") : "";
    case "int_map":
      return d && typeof d === "object"
        ? Object.entries(d as Record<string, unknown>)
            .map(([k, v]) => `${k}=${v}`)
            .join(", ")
        : "";
    default:
      return d === null || d === undefined ? "" : String(d);
  }
}

export function fieldOf(p: ParamView): Field {
  const help = [p.description, rangeText(p) && `range ${rangeText(p)}`, p.key && `config: ${p.key}`]
    .filter(Boolean)
    .join(" · ");
  const base = { name: p.name, initial: defaultText(p), choices: [] as string[], help };
  switch (p.kind) {
    case "int":
      return { ...base, input: "number", step: "1", min: p.min ?? undefined, max: p.max ?? undefined };
    case "float":
      return { ...base, input: "number", step: "any", min: p.min ?? undefined, max: p.max ?? undefined };
    case "bool":
      return { ...base, input: "checkbox" };
    case "enum":
      return { ...base, input: "select", choices: p.choices };
    case "string_list":
      return { ...base, input: "text", placeholder: "a, b, c" };
    case "int_list":
      return { ...base, input: "text", placeholder: "1, 2, 3" };
    case "int_map":
      return { ...base, input: "text", placeholder: "name=1000, other=2000" };
    default:
      return { ...base, input: "text" };
  }
}

function inRange(p: ParamView, x: number): string | null {
  if (p.min !== null && p.min !== undefined && x < p.min) return `${p.name} must be at least ${fmtBound(p, p.min)}`;
  if (p.max !== null && p.max !== undefined && x > p.max) return `${p.name} must be at most ${fmtBound(p, p.max)}`;
  return null;
}

function parseInt10(p: ParamView, t: string): Parsed {
  const s = t.replace(/[,_\s]/g, "");
  if (!/^-?\d+$/.test(s)) return { ok: false, error: `${p.name} must be a whole number, not "${t}"` };
  const x = Number(s);
  const e = inRange(p, x);
  return e ? { ok: false, error: e } : { ok: true, value: x };
}

function items(t: string): string[] {
  return t
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** The user's input for `p` as the JSON value the strategy receives. */
export function parseValue(p: ParamView, raw: string | boolean): Parsed {
  if (p.kind === "bool") return { ok: true, value: raw === true || raw === "true" };
  const t = String(raw).trim();
  switch (p.kind) {
    case "int":
      return parseInt10(p, t);
    case "float": {
      const x = Number(t);
      if (t === "" || !Number.isFinite(x)) return { ok: false, error: `${p.name} must be a number, not "${t}"` };
      const e = inRange(p, x);
      return e ? { ok: false, error: e } : { ok: true, value: x };
    }
    case "enum":
      return p.choices.includes(t)
        ? { ok: true, value: t }
        : { ok: false, error: `${p.name} must be one of ${p.choices.join(", ")}` };
    case "string_list":
      return { ok: true, value: items(t) };
    case "int_list": {
      const out: number[] = [];
      for (const it of items(t)) {
        const r = parseInt10(p, it);
        if (!r.ok) return r;
        out.push(r.value as number);
      }
      return { ok: true, value: out };
    }
    case "int_map": {
      const out: Record<string, number> = {};
      for (const it of items(t)) {
        const [k, v] = it.split("=").map((s) => s.trim());
        if (!k || v === undefined) return { ok: false, error: `${p.name}: expected name=number, not "${it}"` };
        const r = parseInt10(p, v);
        if (!r.ok) return r;
        out[k] = r.value as number;
      }
      return { ok: true, value: out };
    }
    default:
      return { ok: true, value: t };
  }
}

/**
 * The parameters to send: only those that differ from their default (the plugin fills the rest,
 * so an exported config stays minimal), and an error per parameter that does not parse.
 */
export function collectParams(
  specs: ParamView[],
  values: Record<string, string | boolean>,
): { params: { [key: string]: JsonValue }; errors: Record<string, string> } {
  const params: { [key: string]: JsonValue } = {};
  const errors: Record<string, string> = {};
  for (const p of specs) {
    if (!(p.name in values)) continue;
    const r = parseValue(p, values[p.name]);
    if (!r.ok) {
      errors[p.name] = r.error;
      continue;
    }
    if (JSON.stringify(r.value) !== JSON.stringify(p.default)) params[p.name] = r.value;
  }
  return { params, errors };
}
