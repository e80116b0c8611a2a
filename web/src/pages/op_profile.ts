/**
 * op_profile: XProf's op profile tree (device -> program -> category -> op). Each row
 * shows its share of the root as a bar coloured by FLOPS utilisation (color_hint), and
 * can be expanded; clicking a row selects it (details card) and toggles it, as in XProf.
 * The keyboard moves through the tree as in any tree view (`tree-keys`). A "(K more)" row
 * asks for the tool again with `top_n` large enough to show its K ops (the registry option
 * the options bar shows too); which rows are open is remembered per profile and device, so
 * the tree comes back as it was. "Exclude idle" switches between time_percent and
 * time_percent_with_idle: both are in the JSON, so no new request is made.
 */

import type { OpNode, OpProfile } from "../api";
import { opColor } from "../components/colors";
import { at, card, metric, metrics, note } from "../components/metric";
import { treeKey, type VisibleRow } from "../components/tree-keys";
import { el } from "../dom";
import { formatValue, rawAttr } from "../format";
import { hasFlops } from "./applies";
import { add, grid } from "./common";
import type { PageContext, ToolPage } from "./types";

export const PATH_SEPARATOR = " / ";

export function nodePath(names: string[]): string {
  return names.join(PATH_SEPARATOR);
}

/** The share a row shows under the current idle setting. */
export function shareOf(node: OpNode, excludeIdle: boolean): number {
  return excludeIdle ? node.time_percent : node.time_percent_with_idle;
}

/** The node at a path (names from the root down), or null. */
export function findNode(root: OpNode, path: string[]): OpNode | null {
  if (path.length === 0 || path[0] !== root.name) return null;
  let node: OpNode = root;
  for (const name of path.slice(1)) {
    const next = node.children.find((child) => child.name === name);
    if (!next) return null;
    node = next;
  }
  return node;
}

interface TreeState {
  expanded: Set<string>;
  selected: string[];
  excludeIdle: boolean;
}

/** Open rows and the selected one, per profile and device, kept while the page lives. */
const remembered = new Map<string, Pick<TreeState, "expanded" | "selected">>();

function treeKeyOf(context: PageContext, data: OpProfile): string {
  return [context.selection.run, context.selection.host, data.device].join("\u0000");
}

/** The `top_n` that shows every op a "(K more)" row stands for: its siblings are top_n + K. */
export function topNShowing(folded: OpNode, topN: number): number {
  return topN + folded.folded;
}

function detailsCard(node: OpNode, state: TreeState): HTMLElement {
  const items = [
    metric("name", at(node, "name"), "Name"),
    metric("kind", at(node, "kind"), "Kind"),
    metric("time_us", at(node, "time_us"), "Self time"),
    metric("time_percent", at(node, "time_percent"), "Share (idle excluded)"),
    metric("time_percent_with_idle", at(node, "time_percent_with_idle"), "Share (idle included)"),
    metric("occurrences", at(node, "occurrences"), "Occurrences"),
    metric("flops", at(node, "flops"), "FLOPs"),
    metric("bytes_accessed", at(node, "bytes_accessed"), "Bytes accessed"),
    metric("gflops_per_second", at(node, "gflops_per_second"), "GFLOP/s"),
    metric("flops_utilization", at(node, "flops_utilization"), "FLOPS utilisation"),
    metric("memory_bandwidth_gb_per_second", at(node, "memory_bandwidth_gb_per_second"), "Memory bandwidth (GB/s)"),
  ];
  if (node.folded > 0) items.push(metric("folded", at(node, "folded"), "Folded ops"));
  return el("div", { class: "op-details-body", "data-selected": nodePath(state.selected) }, [
    metrics(items),
    node.expression
      ? el("div", { class: "code-block" }, [el("div", { class: "metric-label" }, "Expression"), el("pre", { "data-metric": "expression", "data-value": node.expression }, node.expression)])
      : null,
    node.shape
      ? el("div", { class: "code-block" }, [el("div", { class: "metric-label" }, "Shape"), el("pre", { "data-metric": "shape", "data-value": node.shape }, node.shape)])
      : null,
  ]);
}

function render(root: HTMLElement, context: PageContext): void {
  const data = context.data as OpProfile;
  const layout = grid(root);
  if (data.root.children.length === 0) {
    // Only what applies: no ops, no tree; one line instead of an empty tree and zeros.
    add(layout, card("Op profile", note("No ops in this profile: it holds no PyTorch, TensorFlow or XLA op events, so there is no tree to show.", "note", { id: "no-ops" }), { id: "op-profile-summary" }, true));
    return;
  }
  const flops = hasFlops(data.root);
  const rootPath = nodePath([data.root.name]);
  const key = treeKeyOf(context, data);
  const kept = remembered.get(key);
  const state: TreeState = {
    expanded: kept?.expanded ?? new Set([rootPath]),
    selected: kept && findNode(data.root, kept.selected) ? kept.selected : [data.root.name],
    excludeIdle: data.exclude_idle !== false,
  };
  remembered.set(key, state);
  /** The rows drawn last, in order: what the arrow keys move through. */
  let visible: VisibleRow[] = [];
  const namesOf = new Map<string, string[]>();

  add(
    layout,
    card(
      "Op profile",
      metrics([
        metric("device", data.device, "Device"),
        metric("side", data.side, "Side"),
        metric("root_time_us", at(data.root, "time_us"), "Op time"),
        metric("idle_time_us", at(data, "idle_time_us"), "Idle time"),
        ...(data.peak_teraflops_per_second === null ? [] : [metric("peak_teraflops_per_second", at(data, "peak_teraflops_per_second"), "Device peak TFLOP/s")]),
      ]),
      { id: "op-profile-summary" },
      true,
    ),
  );

  const tree = el("div", { class: "op-tree", role: "tree", "aria-label": "Op profile" });
  const details = card("Selected node", null, { id: "op-details" });
  const checkbox = el("input", { type: "checkbox", id: "exclude-idle", checked: state.excludeIdle });
  checkbox.addEventListener("change", () => {
    state.excludeIdle = checkbox.checked;
    draw();
  });

  function select(path: string[]): void {
    state.selected = path;
    const node = findNode(data.root, path) ?? data.root;
    details.replaceChildren(el("h2", {}, "Selected node"), detailsCard(node, state));
  }

  function row(node: OpNode, names: string[], depth: number, parent: string | null): HTMLElement[] {
    const path = nodePath(names);
    const expandable = node.children.length > 0;
    const expanded = expandable && state.expanded.has(path);
    const more = node.folded > 0 && context.setOptions !== undefined;
    visible.push({ path, parent, expandable, expanded });
    namesOf.set(path, names);
    const share = shareOf(node, state.excludeIdle);
    const shareKey = state.excludeIdle ? "time_percent" : "time_percent_with_idle";
    const selected = nodePath(state.selected) === path;
    const line = el(
      "div",
      {
        class: `op-row kind-${node.kind}${selected ? " selected" : ""}${more ? " more" : ""}`,
        role: "treeitem",
        tabindex: 0,
        "data-node": path,
        "data-kind": node.kind,
        "aria-level": depth + 1,
        "aria-expanded": expandable ? String(expanded) : null,
        "aria-selected": String(selected),
        title: more ? `Show these ${node.folded} ops (top_n ${topNShowing(node, data.top_n)})` : null,
        onclick: () => (more ? showMore(node) : activate(names, expandable)),
        onkeydown: (event: Event) => {
          const pressed = (event as KeyboardEvent).key;
          if (pressed === "Enter" || pressed === " ") {
            event.preventDefault();
            if (more) showMore(node);
            else activate(names, expandable);
            return;
          }
          const action = treeKey(visible, path, pressed);
          if (action === null) return;
          event.preventDefault();
          if (action.kind !== "focus") toggle(action.path);
          moveTo(action.path);
        },
      },
      [
        el("span", { class: "op-share", "data-key": shareKey, "data-value": rawAttr(share, node, shareKey) }, formatValue("time_percent", share)),
        el(
          "span",
          { class: "op-bar-track" },
          el("span", {
            class: "op-bar",
            "data-color-hint": rawAttr(node.color_hint, node, "color_hint"),
            style: `width: ${Math.max(0, Math.min(100, share)).toFixed(2)}%; background: ${opColor(node.color_hint)}`,
          }),
        ),
        // Only the name is indented, so bars and numbers stay in aligned columns.
        el("span", { class: "op-name-cell", style: `padding-left: ${depth * 18}px` }, [
          el("span", { class: "caret", "aria-hidden": "true" }, expandable ? (expanded ? "▾" : "▸") : ""),
          el("span", { class: "op-name", title: node.name }, node.name),
        ]),
        el("span", { class: "op-occurrences num", "data-key": "occurrences", "data-value": rawAttr(node.occurrences, node, "occurrences") }, formatValue("occurrences", node.occurrences)),
        el("span", { class: "op-util num", "data-key": "flops_utilization", "data-value": rawAttr(node.flops_utilization, node, "flops_utilization") }, formatValue("flops_utilization", node.flops_utilization)),
      ],
    );
    const rows: HTMLElement[] = [line];
    if (expanded) {
      for (const child of node.children) rows.push(...row(child, [...names, child.name], depth + 1, path));
    }
    return rows;
  }

  function toggle(path: string): void {
    if (state.expanded.has(path)) state.expanded.delete(path);
    else state.expanded.add(path);
  }

  /** Selects the row at `path` and redraws with the keyboard focus on it. */
  function moveTo(path: string): void {
    select(namesOf.get(path) ?? [data.root.name]);
    draw();
    // Redrawing replaces the rows; keep keyboard focus where it was.
    tree.querySelector<HTMLElement>(`[data-node="${CSS.escape(path)}"]`)?.focus();
  }

  function activate(names: string[], expandable: boolean): void {
    const path = nodePath(names);
    if (expandable) toggle(path);
    moveTo(path);
  }

  function showMore(node: OpNode): void {
    context.setOptions?.({ ...context.selection.options, top_n: String(topNShowing(node, data.top_n)) });
  }

  function draw(): void {
    visible = [];
    tree.replaceChildren(
      el("div", { class: "op-row op-header", "aria-hidden": "true" }, [
        el("span", { class: "op-share" }, "Time"),
        el("span", { class: "op-bar-track plain" }, state.excludeIdle ? "share (idle excluded)" : "share (idle included)"),
        el("span", { class: "op-name-cell" }, "Name"),
        el("span", { class: "op-occurrences num" }, "Occurrences"),
        el("span", { class: "op-util num" }, "FLOPS util."),
      ]),
      ...row(data.root, [data.root.name], 0, null),
    );
  }

  draw();
  select(state.selected);
  const treeCard = card(
      "Ops",
      [
        el("div", { class: "tree-toolbar" }, [
          el("label", { class: "toggle" }, [checkbox, " Exclude idle"]),
          flops
            ? el("span", { class: "legend" }, [
                el("span", { class: "swatch", style: `background: ${opColor(0)}` }),
                " poor FLOPS utilisation ",
                el("span", { class: "swatch", style: `background: ${opColor(1)}` }),
                " good ",
                el("span", { class: "swatch", style: `background: ${opColor(null)}` }),
                " unknown",
              ])
            : null,
        ]),
        flops ? null : note("No FLOP counts in this profile, so no FLOPS utilisation: the bars show time only.", "note", { id: "no-flops" }),
        tree,
      ],
      { id: "op-tree-card" },
    );
  // Tree and details side by side, so the details stay in view while browsing the tree.
  add(layout, el("div", { class: "op-layout" }, [treeCard, details]));
}

export const opProfilePage: ToolPage = { tables: false, render };
