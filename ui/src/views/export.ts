// Export: a strategy's parameters in its system's own config format, previewed, checked by the
// plugin's importer, and saved to a file.

import { save } from "@tauri-apps/plugin-dialog";
import { api } from "../api";
import type { Selection } from "../store";
import { clear, empty, errorBox, h } from "../dom";
import { changed, store } from "../store";
import { paramForm, paramsOf } from "./compare";

let strategy = "";
let format = "";
let preview = "";
let written: string | null = null;
let error: { code: string; message: string } | null = null;
let savePath = "";
const values = new Map<string, Selection>();

async function doExport(path: string | null) {
  const info = store.strategies?.strategies.find((s) => s.id === strategy);
  const sel = values.get(strategy);
  if (!info || !sel) return;
  const { params, errors } = paramsOf(sel, info);
  if (Object.keys(errors).length) {
    error = { code: "invalid", message: Object.values(errors).join("; ") };
    changed();
    return;
  }
  error = null;
  try {
    const r = await api.exportConfig({ strategy, params, format, path });
    preview = r.text;
    written = r.written;
    store.status = written ? `Wrote ${written}` : "Preview ready";
  } catch (e) {
    error = e as { code: string; message: string };
    preview = "";
  }
  changed();
}

export function renderExport(root: HTMLElement) {
  const exportable = (store.strategies?.strategies ?? []).filter((s) => s.export_formats.length > 0);
  if (exportable.length === 0) {
    clear(root, empty("No strategy can export", "Strategy plugins export their parameters in their system's config format; none was found."));
    return;
  }
  if (!exportable.some((s) => s.id === strategy)) {
    // Start from the strategy picked for the comparison, with its parameters.
    const picked = store.picked.find((p) => exportable.some((s) => s.id === p.id));
    strategy = picked?.id ?? exportable[0].id;
    if (picked) values.set(strategy, picked);
  }
  const info = exportable.find((s) => s.id === strategy)!;
  if (!info.export_formats.includes(format)) format = info.export_formats[0];
  if (!values.has(strategy)) values.set(strategy, store.picked.find((p) => p.id === strategy) ?? { id: strategy, values: {} });
  const sel = values.get(strategy)!;
  const pathInput = h("input.path", { type: "text", value: savePath, placeholder: "file to write", testid: "export-path", spellcheck: false, oninput: (e: Event) => (savePath = (e.target as HTMLInputElement).value) });
  clear(
    root,
    h(
      "div.toolbar",
      {},
      h("label.opt", {}, "Strategy", h("select", { testid: "export-strategy", onchange: (e: Event) => ((strategy = (e.target as HTMLSelectElement).value), (preview = ""), changed()) }, exportable.map((s) => h("option", { value: s.id, selected: s.id === strategy }, `${s.title} (${s.id})`)))),
      h("label.opt", {}, "Format", h("select", { testid: "export-format", onchange: (e: Event) => ((format = (e.target as HTMLSelectElement).value), changed()) }, info.export_formats.map((f) => h("option", { value: f, selected: f === format }, f)))),
      h("button", { onclick: () => void doExport(null), testid: "export-preview" }, "Preview"),
    ),
    h("p.muted.small", {}, info.description),
    paramForm(info, sel),
    error ? errorBox(error.message, error.code) : null,
    preview ? h("pre.preview", { testid: "export-text" }, preview) : null,
    h(
      "div.toolbar",
      {},
      h(
        "button",
        {
          onclick: async () => {
            const p = await save({ title: "Save the config", defaultPath: `${strategy}-${format}` });
            if (p) {
              savePath = p;
              await doExport(p);
            }
          },
        },
        "Save as…",
      ),
      pathInput,
      h("button.primary", { onclick: () => savePath.trim() && void doExport(savePath.trim()), testid: "export-write" }, "Write"),
    ),
    written ? h("div.ok", { testid: "export-written" }, `Wrote ${written} (read back by the plugin's importer before writing).`) : null,
  );
}
